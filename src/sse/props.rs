//! Properties of the SSE codec, shared by the fuzz targets, the property tests and the corpus
//! replay in `tests/it/sse.rs`.
//!
//! Owns nothing used in production. Each function takes arbitrary bytes, derives its inputs from
//! them, and panics when a property fails; it must not panic for any other reason.

use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use bytes::{Bytes, BytesMut};
use futures_core::Stream;

use super::decode::{DecodeError, Decoder, Event, DEFAULT_MAX_FRAME};
use super::encode::Encoder;
use super::naive;
use super::stream::{EventStream, StreamError};

/// What decoding a stream produced: the events, then the error that stopped it, if any.
pub type Outcome = (Vec<Event>, Option<DecodeError>);

/// Reads the fuzzer's bytes front to back; runs dry gracefully.
struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    fn byte(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&first, rest)) => {
                self.0 = rest;
                first
            }
            None => 0,
        }
    }

    fn bytes(&mut self, n: usize) -> &'a [u8] {
        let (head, rest) = self.0.split_at(n.min(self.0.len()));
        self.0 = rest;
        head
    }
}

/// Splits `data` into a decoder configuration, chunk lengths and a stream: byte 0 picks the
/// maximum frame size (high bit set: 3 to 130 bytes, else the default), byte 1 the number of
/// cuts (0–15), then one byte per chunk length; the rest is the stream.
pub fn split_input(data: &[u8]) -> (usize, Vec<usize>, &[u8]) {
    let mut cursor = Cursor(data);
    let max_byte = cursor.byte();
    let max_frame = if max_byte & 0x80 != 0 {
        3 + usize::from(max_byte & 0x7f)
    } else {
        DEFAULT_MAX_FRAME
    };
    let n_cuts = cursor.byte() % 16;
    let lengths = (0..n_cuts).map(|_| usize::from(cursor.byte())).collect();
    (max_frame, lengths, cursor.0)
}

/// Cuts `stream` into chunks of the given lengths, the rest forming the last chunk.
pub fn chunks<'a>(stream: &'a [u8], lengths: &[usize]) -> Vec<&'a [u8]> {
    let mut rest = stream;
    let mut out = Vec::with_capacity(lengths.len() + 1);
    for &length in lengths {
        let (head, tail) = rest.split_at(length.min(rest.len()));
        out.push(head);
        rest = tail;
    }
    out.push(rest);
    out
}

/// Decodes the chunks through [`Decoder::decode`] on one growing `BytesMut`.
pub fn decode_buffered(chunks: &[&[u8]], max_frame: usize) -> Outcome {
    let mut decoder = Decoder::with_max_frame(max_frame);
    let mut buf = BytesMut::new();
    let mut events = Vec::new();
    for chunk in chunks {
        buf.extend_from_slice(chunk);
        loop {
            match decoder.decode(&mut buf) {
                Ok(Some(event)) => events.push(event),
                Ok(None) => break,
                Err(error) => return (events, Some(error)),
            }
        }
    }
    (events, None)
}

/// Decodes the chunks through the borrowed API, [`Decoder::decode_with`] on one growing
/// `BytesMut`, copying each [`EventRef`](super::decode::EventRef) out.
pub(crate) fn decode_borrowed(chunks: &[&[u8]], max_frame: usize) -> Outcome {
    let mut decoder = Decoder::with_max_frame(max_frame);
    let mut buf = BytesMut::new();
    let mut events = Vec::new();
    for chunk in chunks {
        buf.extend_from_slice(chunk);
        if let Err(error) = decoder.decode_with(&mut buf, |event| events.push(event.to_event())) {
            return (events, Some(error));
        }
    }
    (events, None)
}

/// Decodes the chunks through [`Decoder::decode_slice`], keeping what it did not consume in a
/// `Vec` of its own.
pub(crate) fn decode_borrowed_slices(chunks: &[&[u8]], max_frame: usize) -> Outcome {
    let mut decoder = Decoder::with_max_frame(max_frame);
    let mut pending: Vec<u8> = Vec::new();
    let mut events = Vec::new();
    for chunk in chunks {
        pending.extend_from_slice(chunk);
        match decoder.decode_slice(&pending, |event| events.push(event.to_event())) {
            Ok(consumed) => {
                assert!(consumed <= pending.len(), "consumed more than the input");
                pending.drain(..consumed);
            }
            Err(error) => return (events, Some(error)),
        }
    }
    (events, None)
}

/// Decodes the chunks through [`EventStream`] over a stream of `Bytes`.
pub(crate) fn decode_stream(chunks: &[&[u8]], max_frame: usize) -> Outcome {
    let items: Vec<Result<Bytes, ()>> = chunks
        .iter()
        .map(|chunk| Ok(Bytes::copy_from_slice(chunk)))
        .collect();
    let inner = futures_util::stream::iter(items);
    let mut stream = EventStream::with_decoder(inner, Decoder::with_max_frame(max_frame));
    let mut cx = Context::from_waker(Waker::noop());
    let mut events = Vec::new();
    loop {
        match Pin::new(&mut stream).poll_next(&mut cx) {
            Poll::Ready(Some(Ok(event))) => events.push(event),
            Poll::Ready(Some(Err(StreamError::Decode(error)))) => return (events, Some(error)),
            Poll::Ready(Some(Err(StreamError::Transport(())))) | Poll::Pending => {
                panic!("an in-memory stream neither fails nor waits")
            }
            Poll::Ready(None) => return (events, None),
        }
    }
}

/// The decoder gives the same events and error whatever the chunking, through every entry
/// point (owned buffered, owned stream, borrowed), and agrees with the naive reference decoder;
/// so the owned and borrowed APIs agree with each other.
pub fn decode_chunked(data: &[u8]) {
    let (max_frame, lengths, stream) = split_input(data);
    check_stream(stream, &lengths, max_frame);
}

/// [`decode_chunked`] with its inputs given directly.
pub fn check_stream(stream: &[u8], lengths: &[usize], max_frame: usize) {
    let reference = naive::decode_all(stream, max_frame);
    let whole = decode_buffered(&[stream], max_frame);
    assert_eq!(whole, reference, "one piece vs reference");
    let pieces = chunks(stream, lengths);
    assert_eq!(
        decode_buffered(&pieces, max_frame),
        reference,
        "chunked vs reference"
    );
    assert_eq!(
        decode_stream(&pieces, max_frame),
        reference,
        "stream vs reference"
    );
    assert_eq!(
        decode_borrowed(&[stream], max_frame),
        reference,
        "borrowed, one piece vs reference"
    );
    assert_eq!(
        decode_borrowed(&pieces, max_frame),
        reference,
        "borrowed, chunked vs reference"
    );
    assert_eq!(
        decode_borrowed_slices(&pieces, max_frame),
        reference,
        "borrowed slices, chunked vs reference"
    );
    let bytes: Vec<&[u8]> = stream.chunks(1).collect();
    if stream.len() <= 4096 {
        assert_eq!(
            decode_buffered(&bytes, max_frame),
            reference,
            "byte by byte"
        );
        assert_eq!(
            decode_borrowed(&bytes, max_frame),
            reference,
            "borrowed, byte by byte"
        );
        assert_eq!(
            decode_stream(&bytes, max_frame),
            reference,
            "stream, byte by byte"
        );
    }
}

/// Line breaks as a decoder returns them: CRLF and CR become LF.
pub fn normalize_line_breaks(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len());
    let mut iter = data.iter().peekable();
    while let Some(&byte) = iter.next() {
        if byte == b'\r' {
            if iter.peek() == Some(&&b'\n') {
                iter.next();
            }
            out.push(b'\n');
        } else {
            out.push(byte);
        }
    }
    out
}

fn without(bytes: &[u8], banned: &[u8]) -> Vec<u8> {
    bytes
        .iter()
        .copied()
        .filter(|b| !banned.contains(b))
        .collect()
}

/// Frames encoded from structured events derived from `data` decode back to those events.
pub fn roundtrip(data: &[u8]) {
    let mut cursor = Cursor(data);
    let mut encoder = Encoder::new();
    let mut frames: Vec<Bytes> = Vec::new();
    let mut expected: Vec<Event> = Vec::new();
    let mut last_id: Option<Bytes> = None;
    let mut retry: Option<u64> = None;
    while !cursor.0.is_empty() {
        let kind = cursor.byte();
        let flags = cursor.byte();
        let id_len = usize::from(cursor.byte() % 24);
        let id = without(cursor.bytes(id_len), b"\r\n\0");
        let id = (flags & 1 != 0).then_some(id);
        // Comments carry no id; priming frames set theirs below.
        if let (Some(id), 0 | 1 | 4 | 5) = (&id, kind % 6) {
            last_id = (!id.is_empty()).then(|| Bytes::copy_from_slice(id));
        }
        let data_len = usize::from(cursor.byte());
        let payload = cursor.bytes(data_len);
        let event_name: &[u8];
        let mut event_data = normalize_line_breaks(payload);
        let frame = match kind % 6 {
            0 => {
                event_name = b"message";
                encoder.message(id.as_deref(), payload)
            }
            1 => {
                let name_len = usize::from(flags >> 4);
                let name = without(cursor.bytes(name_len), b"\r\n");
                let frame = encoder.named(&name, id.as_deref(), payload);
                expected.push(Event {
                    event: Bytes::from(name),
                    data: Bytes::from(event_data),
                    id: last_id.clone(),
                    retry,
                });
                frames.push(frame);
                continue;
            }
            2 => {
                let ms = (flags & 2 != 0).then(|| u64::from(flags) * 1000 + data_len as u64);
                let id = id.unwrap_or_default();
                last_id = (!id.is_empty()).then(|| Bytes::copy_from_slice(&id));
                retry = ms.or(retry);
                event_name = b"";
                event_data.clear();
                encoder.priming(&id, ms)
            }
            3 => {
                frames.push(encoder.comment(payload));
                continue;
            }
            4 => {
                event_name = b"message";
                encoder.message_with(id.as_deref(), |buf| buf.extend_from_slice(payload))
            }
            _ => {
                event_name = b"message";
                let text = String::from_utf8_lossy(payload);
                event_data = serde_json::to_vec(&text).unwrap_or_default();
                match encoder.message_json(id.as_deref(), &text) {
                    Ok(frame) => frame,
                    Err(error) => panic!("a string always serializes: {error}"),
                }
            }
        };
        frames.push(frame);
        expected.push(Event {
            event: Bytes::from_static(event_name),
            data: Bytes::from(event_data),
            id: last_id.clone(),
            retry,
        });
    }
    let stream: Vec<u8> = frames
        .iter()
        .flat_map(|frame| frame.iter().copied())
        .collect();
    let expected: Outcome = (expected, None);
    let frame_chunks: Vec<&[u8]> = frames.iter().map(|frame| &frame[..]).collect();
    assert_eq!(
        decode_buffered(&[&stream], DEFAULT_MAX_FRAME),
        expected,
        "one piece"
    );
    assert_eq!(
        decode_stream(&frame_chunks, DEFAULT_MAX_FRAME),
        expected,
        "frame by frame"
    );
    assert_eq!(
        naive::decode_all(&stream, DEFAULT_MAX_FRAME),
        expected,
        "reference"
    );
    assert_eq!(
        decode_borrowed(&frame_chunks, DEFAULT_MAX_FRAME),
        expected,
        "borrowed, frame by frame"
    );
}
