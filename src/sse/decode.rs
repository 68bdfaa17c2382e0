//! Incremental WHATWG `text/event-stream` parser.
//!
//! Owns turning bytes into events: line splitting (CR, LF, CRLF, also across chunk ends), the
//! optional BOM, comments, field parsing, and the dispatch rules of the HTML standard, "9.2.6
//! Interpreting an event stream". Must not know JSON or MCP, and must not do IO: it is a pure
//! function over a buffer (`Ok(None)` = need more bytes); [`super::stream::EventStream`] wraps it
//! for a `Stream` of chunks.
//!
//! # Two ways out, one parser
//! `parse.rs` finds the next event in a byte slice and describes it as ranges of that slice
//! (`Raw`). The borrowed API ([`Decoder::decode_with`], [`Decoder::decode_slice`]) hands each
//! event to a closure as an [`EventRef`] borrowing the input: no reference count, no copy, no
//! atomic operation per event. The owned API ([`Decoder::decode`]) turns the same ranges into
//! [`Bytes`] split off the input (zero copy, one reference count per field). Both give the same
//! events for the same bytes (`props.rs` checks it).
//!
//! # State between calls
//! A frame cut by the end of the input is not consumed: its bytes stay at the front of the
//! caller's buffer and the parser remembers how far it got (ranges relative to the frame start),
//! so the next call resumes without rescanning. Only a second `data` line in a frame copies, into
//! a reused scratch buffer.
//!
//! # Limits
//! A frame (all its lines, each line end counted as one byte, the blank line that ends it not
//! counted) may not exceed the configured maximum ([`DEFAULT_MAX_FRAME`]); an incomplete line
//! that already makes the frame too long counts too, so a peer that never sends a line end
//! cannot grow the buffer without bound.

mod parse;

use bytes::{Buf, Bytes, BytesMut};

use self::parse::{DataRef, IdRef, NameRef, Raw, Step};

/// The default maximum size of one frame: 1 MiB. A larger frame makes [`Decoder::decode`] fail
/// with [`DecodeError::FrameTooLarge`]; change it with [`Decoder::with_max_frame`].
pub const DEFAULT_MAX_FRAME: usize = 1 << 20;

/// One dispatched event, owning its bytes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Event {
    /// The `event` field; empty means the default type, `message`.
    pub event: Bytes,
    /// The data lines joined with `\n`.
    pub data: Bytes,
    /// The last event id in force when this event was dispatched (`None` when it is empty).
    pub id: Option<Bytes>,
    /// The last valid `retry` value seen, in milliseconds.
    pub retry: Option<u64>,
}

impl Event {
    /// The event type: the `event` field, or `message` when it was absent or empty.
    pub fn event_type(&self) -> &[u8] {
        if self.event.is_empty() {
            b"message"
        } else {
            &self.event
        }
    }
}

/// One dispatched event borrowing the decoder's input (or its scratch buffer, for data joined
/// from several lines): what [`Decoder::decode_with`] hands out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventRef<'a> {
    /// The `event` field; empty means the default type, `message`.
    pub event: &'a [u8],
    /// The data lines joined with `\n`.
    pub data: &'a [u8],
    /// The last event id in force when this event was dispatched (`None` when it is empty).
    pub id: Option<&'a [u8]>,
    /// The last valid `retry` value seen, in milliseconds.
    pub retry: Option<u64>,
}

impl EventRef<'_> {
    /// The event type: the `event` field, or `message` when it was absent or empty.
    pub fn event_type(&self) -> &[u8] {
        if self.event.is_empty() {
            b"message"
        } else {
            self.event
        }
    }

    /// A copy that owns its bytes (for the reference oracles in `props.rs`).
    #[cfg(any(test, feature = "test-util"))]
    pub(crate) fn to_event(self) -> Event {
        Event {
            event: Bytes::copy_from_slice(self.event),
            data: Bytes::copy_from_slice(self.data),
            id: self.id.map(Bytes::copy_from_slice),
            retry: self.retry,
        }
    }
}

/// Why decoding failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// A frame grew beyond the configured maximum size.
    #[error("SSE frame larger than the configured maximum")]
    FrameTooLarge,
}

// === Input ===

/// A buffer the owned API reads from and consumes: the caller's `BytesMut`, or a `Bytes` chunk
/// in the stream adapter.
pub(crate) trait Input {
    fn bytes(&self) -> &[u8];
    /// Drops the first `n` bytes (`n` ≤ length).
    fn skip(&mut self, n: usize);
    /// Splits the first `n` bytes off as `Bytes` without copying (`n` ≤ length).
    fn take(&mut self, n: usize) -> Bytes;
}

impl Input for BytesMut {
    #[inline]
    fn bytes(&self) -> &[u8] {
        self
    }
    #[inline]
    fn skip(&mut self, n: usize) {
        self.advance(n.min(self.len()));
    }
    #[inline]
    fn take(&mut self, n: usize) -> Bytes {
        if n == 0 {
            return Bytes::new();
        }
        self.split_to(n.min(self.len())).freeze()
    }
}

impl Input for Bytes {
    #[inline]
    fn bytes(&self) -> &[u8] {
        self
    }
    #[inline]
    fn skip(&mut self, n: usize) {
        self.advance(n.min(self.len()));
    }
    #[inline]
    fn take(&mut self, n: usize) -> Bytes {
        if n == 0 {
            return Bytes::new();
        }
        self.split_to(n.min(self.len()))
    }
}

// === Decoder ===

/// The data buffer of the frame being parsed.
#[derive(Debug, Default, Clone, Copy)]
enum Data {
    /// No `data` line yet: dispatch produces no event.
    #[default]
    Empty,
    /// Exactly one `data` line: its range, relative to the start of the frame's input.
    One(usize, usize),
    /// Several `data` lines, joined with `\n` in `Decoder::scratch`.
    Joined,
}

/// Incremental WHATWG event-stream parser.
///
/// Feed it one buffer that the caller keeps appending to: bytes it is done with are removed from
/// the front; an incomplete frame stays (the decoder remembers how far it parsed it). After an
/// error the decoder keeps returning that error. Use one entry point per stream: the owned
/// ([`Decoder::decode`]) or the borrowed ([`Decoder::decode_with`], [`Decoder::decode_slice`]).
#[derive(Debug)]
pub struct Decoder {
    /// Largest frame accepted, see [`DEFAULT_MAX_FRAME`].
    max_frame: usize,
    /// No byte of the stream has been examined yet (the BOM may still come).
    at_stream_start: bool,
    /// The last line ended with a CR that was the last byte of the input: an LF at the start of
    /// the next input belongs to it.
    skip_lf: bool,
    /// Bytes of the incomplete frame at the front of the input already parsed (complete lines).
    resume: usize,
    /// Bytes after `resume` already known to hold no line end (the incomplete line left by the
    /// previous call), so a long line is not rescanned on every call.
    scanned: usize,
    /// Size of the current frame so far (each line end counts as one byte).
    frame_len: usize,
    /// Set once a frame was too large; every later call fails.
    failed: bool,
    data: Data,
    /// Holds joined data when a frame has several `data` lines; reused from frame to frame.
    scratch: BytesMut,
    /// The event type buffer of the current frame.
    event: NameRef,
    /// An `id` field seen in the current frame: the new last event ID buffer.
    id_pending: Option<(usize, usize)>,
    /// The last event ID string (set at dispatch; empty = none), a copy of the input.
    last_event_id: Vec<u8>,
    /// `last_event_id` as `Bytes`, for owned events that inherit it; made on first need.
    shared_id: Option<Bytes>,
    /// The reconnection time from the last valid `retry` field.
    retry: Option<u64>,
}

impl Default for Decoder {
    fn default() -> Self {
        Self::with_max_frame(DEFAULT_MAX_FRAME)
    }
}

impl Decoder {
    /// A decoder with the default maximum frame size.
    pub fn new() -> Self {
        Self::default()
    }

    /// A decoder that rejects frames larger than `max_frame` bytes.
    pub fn with_max_frame(max_frame: usize) -> Self {
        Decoder {
            max_frame,
            at_stream_start: true,
            skip_lf: false,
            resume: 0,
            scanned: 0,
            frame_len: 0,
            failed: false,
            data: Data::Empty,
            scratch: BytesMut::new(),
            event: NameRef::Empty,
            id_pending: None,
            last_event_id: Vec::new(),
            shared_id: None,
            retry: None,
        }
    }

    /// The last event ID string: what a reconnecting client sends as `Last-Event-ID`.
    pub fn last_event_id(&self) -> Option<&[u8]> {
        (!self.last_event_id.is_empty()).then_some(&self.last_event_id[..])
    }

    /// The reconnection time (ms) from the last valid `retry` field.
    pub fn retry(&self) -> Option<u64> {
        self.retry
    }

    // --- owned ---

    /// Decodes the next event from `buf`; `Ok(None)` means more bytes are needed.
    ///
    /// Consumed bytes are removed from the front of `buf`; keep appending to the same buffer.
    pub fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Event>, DecodeError> {
        self.decode_input(buf)
    }

    /// Decodes the next event from any [`Input`], consuming it.
    #[inline]
    pub(crate) fn decode_input<I: Input>(
        &mut self,
        input: &mut I,
    ) -> Result<Option<Event>, DecodeError> {
        match self.next_raw(input.bytes())? {
            Step::Event(raw) => Ok(Some(self.take_event(input, &raw))),
            Step::Need(consumed) => {
                input.skip(consumed);
                Ok(None)
            }
        }
    }

    /// Splits the ranges of `raw` off the input as `Bytes`, in input order (so nothing is
    /// copied), and consumes the frame.
    #[inline]
    fn take_event<I: Input>(&mut self, input: &mut I, raw: &Raw) -> Event {
        let [data, own_id, name] = match (raw.data, raw.id, raw.event) {
            // The common shapes: `[event: message] [id] data`, in that order.
            (
                DataRef::Range(start, stop),
                IdRef::Last | IdRef::None,
                NameRef::Empty | NameRef::Message,
            ) => {
                input.skip(start);
                let data = input.take(stop - start);
                input.skip(raw.end - stop);
                [data, Bytes::new(), Bytes::new()]
            }
            (
                DataRef::Range(data_start, data_stop),
                IdRef::Own(id_start, id_stop),
                NameRef::Empty | NameRef::Message,
            ) if id_stop <= data_start => {
                input.skip(id_start);
                let id = input.take(id_stop - id_start);
                input.skip(data_start - id_stop);
                let data = input.take(data_stop - data_start);
                input.skip(raw.end - data_stop);
                [data, id, Bytes::new()]
            }
            _ => take_sorted(input, raw),
        };
        let data = match raw.data {
            DataRef::Range(..) => data,
            DataRef::Scratch => self.scratch.split().freeze(),
        };
        let id = match raw.id {
            IdRef::Own(..) => Some(own_id),
            IdRef::None => None,
            IdRef::Last => Some(
                self.shared_id
                    .get_or_insert_with(|| Bytes::copy_from_slice(&self.last_event_id))
                    .clone(),
            ),
        };
        let event = match raw.event {
            NameRef::Empty => Bytes::new(),
            NameRef::Message => Bytes::from_static(b"message"),
            NameRef::Range(..) => name,
        };
        Event {
            event,
            data,
            id,
            retry: self.retry,
        }
    }

    // --- borrowed ---

    /// Decodes every complete event in `buf`, handing each to `each` as an [`EventRef`] that
    /// borrows `buf`, then removes the consumed bytes from its front (an incomplete frame stays;
    /// keep appending to the same buffer). No reference count and no copy per event.
    ///
    /// On error the events before it have been handed out.
    pub fn decode_with<F>(&mut self, buf: &mut BytesMut, each: F) -> Result<(), DecodeError>
    where
        F: FnMut(EventRef<'_>),
    {
        let (consumed, result) = self.decode_all(buf, each);
        buf.advance(consumed.min(buf.len()));
        result
    }

    /// Decodes every complete event in `input`, handing each to `each`; returns how many bytes
    /// at the front of `input` are done with. The rest (an incomplete frame) must be at the
    /// front of the next call's input, followed by the bytes that came after it.
    pub fn decode_slice<F>(&mut self, input: &[u8], each: F) -> Result<usize, DecodeError>
    where
        F: FnMut(EventRef<'_>),
    {
        let (consumed, result) = self.decode_all(input, each);
        result.map(|()| consumed)
    }

    #[inline]
    fn decode_all<F>(&mut self, input: &[u8], mut each: F) -> (usize, Result<(), DecodeError>)
    where
        F: FnMut(EventRef<'_>),
    {
        let mut offset = 0;
        loop {
            let rest = input.get(offset..).unwrap_or_default();
            match self.next_raw(rest) {
                Ok(Step::Event(raw)) => {
                    each(self.event_ref(rest, &raw));
                    offset += raw.end;
                }
                Ok(Step::Need(consumed)) => return (offset + consumed, Ok(())),
                Err(error) => return (offset, Err(error)),
            }
        }
    }

    /// The event `raw` describes, borrowing `input` and the decoder.
    #[inline]
    fn event_ref<'a>(&'a self, input: &'a [u8], raw: &Raw) -> EventRef<'a> {
        let slice = |start: usize, stop: usize| input.get(start..stop).unwrap_or_default();
        EventRef {
            event: match raw.event {
                NameRef::Empty => b"",
                NameRef::Message => b"message",
                NameRef::Range(start, stop) => slice(start, stop),
            },
            data: match raw.data {
                DataRef::Range(start, stop) => slice(start, stop),
                DataRef::Scratch => &self.scratch,
            },
            id: match raw.id {
                IdRef::Own(start, stop) => Some(slice(start, stop)),
                IdRef::Last => Some(&self.last_event_id),
                IdRef::None => None,
            },
            retry: self.retry,
        }
    }
}

/// Splits the data, own id and event name ranges of `raw` (whichever it has) off the input, in
/// input order, and consumes the frame; answers them in that order (empty when absent).
fn take_sorted<I: Input>(input: &mut I, raw: &Raw) -> [Bytes; 3] {
    let mut ranges = [
        match raw.data {
            DataRef::Range(start, stop) => Some((start, stop)),
            DataRef::Scratch => None,
        },
        match raw.id {
            IdRef::Own(start, stop) => Some((start, stop)),
            IdRef::Last | IdRef::None => None,
        },
        match raw.event {
            NameRef::Range(start, stop) => Some((start, stop)),
            NameRef::Empty | NameRef::Message => None,
        },
    ];
    let mut out: [Bytes; 3] = Default::default();
    let mut consumed = 0;
    // At most three ranges, on distinct lines: take the lowest remaining each round.
    while let Some((slot, (start, stop))) = ranges
        .iter()
        .enumerate()
        .filter_map(|(slot, range)| range.map(|range| (slot, range)))
        .min_by_key(|(_, (start, _))| *start)
    {
        if let Some(range) = ranges.get_mut(slot) {
            *range = None;
        }
        let start = start.max(consumed);
        let stop = stop.max(start);
        input.skip(start - consumed);
        if let Some(piece) = out.get_mut(slot) {
            *piece = input.take(stop - start);
        }
        consumed = stop;
    }
    input.skip(raw.end.saturating_sub(consumed));
    out
}

#[cfg(test)]
mod tests;
