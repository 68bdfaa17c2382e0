//! A naive event-stream decoder, "so simple it is unlikely to be wrong", that checks the real
//! [`Decoder`](super::Decoder) in property tests and fuzzing.
//!
//! Owns nothing used in production. It reads the whole stream at once, splits it into lines with
//! a byte loop, and follows the standard's steps literally with owned buffers. It must stay
//! simple: no fast paths, no incremental state.

use bytes::Bytes;

use super::decode::{DecodeError, Event};

/// Decodes a complete stream; returns the events dispatched and the error that ended decoding,
/// if any. The frame size limit is the real decoder's: each non-blank line of a frame counts its
/// length plus one, and an incomplete last line counts its length plus one.
pub(crate) fn decode_all(input: &[u8], max_frame: usize) -> (Vec<Event>, Option<DecodeError>) {
    let input = input.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(input);
    let (lines, tail) = split_lines(input);

    let mut events = Vec::new();
    let mut data: Option<Vec<u8>> = None;
    let mut event_type: Vec<u8> = Vec::new();
    let mut id_buffer: Vec<u8> = Vec::new();
    let mut last_event_id: Vec<u8> = Vec::new();
    let mut retry: Option<u64> = None;
    let mut frame_len = 0usize;

    for line in lines {
        if line.is_empty() {
            frame_len = 0;
            last_event_id = id_buffer.clone();
            if let Some(data) = data.take() {
                events.push(Event {
                    event: Bytes::from(event_type.clone()),
                    data: Bytes::from(data),
                    id: if last_event_id.is_empty() {
                        None
                    } else {
                        Some(Bytes::from(last_event_id.clone()))
                    },
                    retry,
                });
            }
            event_type.clear();
            continue;
        }
        frame_len += line.len() + 1;
        if frame_len > max_frame {
            return (events, Some(DecodeError::FrameTooLarge));
        }
        if line[0] == b':' {
            continue;
        }
        let (name, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let mut value = &line[colon + 1..];
                if value.first() == Some(&b' ') {
                    value = &value[1..];
                }
                (&line[..colon], value)
            }
            None => (line, &b""[..]),
        };
        match name {
            b"data" => match &mut data {
                None => data = Some(value.to_vec()),
                Some(buffer) => {
                    buffer.push(b'\n');
                    buffer.extend_from_slice(value);
                }
            },
            b"event" => event_type = value.to_vec(),
            b"id" if !value.contains(&0) => id_buffer = value.to_vec(),
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                if let Ok(ms) = std::str::from_utf8(value).unwrap_or("x").parse::<u64>() {
                    retry = Some(ms);
                }
            }
            _ => {}
        }
    }
    let _ = last_event_id;
    if !tail.is_empty() && frame_len + tail.len() + 1 > max_frame {
        return (events, Some(DecodeError::FrameTooLarge));
    }
    (events, None)
}

/// Splits at CRLF, LF or CR; returns the complete lines and the incomplete rest.
fn split_lines(input: &[u8]) -> (Vec<&[u8]>, &[u8]) {
    let mut lines = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < input.len() {
        if input[i] == b'\n' {
            lines.push(&input[start..i]);
            start = i + 1;
        } else if input[i] == b'\r' {
            lines.push(&input[start..i]);
            if input.get(i + 1) == Some(&b'\n') {
                i += 1;
            }
            start = i + 1;
        }
        i += 1;
    }
    (lines, &input[start..])
}
