//! SSE frame encoder.
//!
//! Owns the bytes of every frame sluice sends on an event stream: message frames
//! (`event: message`, optional `id:`, `data:`), named events (`event: endpoint`), priming frames
//! (optional `retry:`, `id:`, empty `data:`) and comments (`: keepalive`). Frames are written into
//! a buffer from the per-thread [`BufPool`] and cut off with `split().freeze()`, so in steady state
//! encoding allocates nothing (see `pool.rs` for how capacity comes back). Must not know MCP:
//! payloads are bytes or any `serde::Serialize` value, serialized straight into the frame.
//!
//! Payload bytes CR, LF and CRLF each end a `data:` line, so any payload survives the trip
//! through a standard decoder, with its line breaks normalized to LF.

use std::io;

use bytes::{Bytes, BytesMut};

use super::pool::{BufPool, DEFAULT_BUF_CAPACITY, MAX_POOLED_CAPACITY};

/// Errors from encoding a frame.
#[derive(Debug, thiserror::Error)]
pub enum EncodeError {
    /// The value could not be serialized as JSON.
    #[error("payload serialization failed: {0}")]
    Serialize(#[from] serde_json::Error),
}

/// Room reserved for a JSON payload before its size is known, when no earlier payload gave a
/// better estimate.
const JSON_SIZE_GUESS: usize = 1024;

/// What replaces each line break inside a payload.
const DATA_LINE_BREAK: &[u8] = b"\ndata: ";

/// Writes SSE frames into pooled buffers and hands each frame out as `Bytes`.
///
/// One encoder per stream; it returns its buffer to the thread's pool when dropped.
#[derive(Debug)]
pub struct Encoder {
    buf: BytesMut,
    /// Size of the last JSON payload: the room reserved for the next one.
    json_hint: usize,
    /// The buffer grew beyond what the pool keeps (one huge frame).
    oversized: bool,
}

impl Default for Encoder {
    fn default() -> Self {
        Encoder {
            buf: BufPool.take(DEFAULT_BUF_CAPACITY),
            json_hint: JSON_SIZE_GUESS,
            oversized: false,
        }
    }
}

impl Drop for Encoder {
    fn drop(&mut self) {
        if !self.oversized {
            BufPool.put(std::mem::take(&mut self.buf));
        }
    }
}

impl Encoder {
    /// A new encoder taking its buffers from the thread's pool.
    pub fn new() -> Self {
        Self::default()
    }

    /// `event: message` + optional `id:` + `data:` lines (CR/LF in `data` become extra lines).
    pub fn message(&mut self, id: Option<&[u8]>, data: &[u8]) -> Bytes {
        self.named(b"message", id, data)
    }

    /// Like [`Encoder::message`], serializing `value` as compact JSON straight into the frame.
    ///
    /// Compact JSON has no raw line breaks, except inside a `serde_json::value::RawValue`
    /// passed through verbatim; the payload is checked and split like any other.
    pub fn message_json<T: serde::Serialize + ?Sized>(
        &mut self,
        id: Option<&[u8]>,
        value: &T,
    ) -> Result<Bytes, EncodeError> {
        self.reserve(header_len(b"message", id) + self.json_hint + 2);
        self.put_header(b"message", id);
        let start = self.buf.len();
        if let Err(error) = serde_json::to_writer(FrameWriter(&mut self.buf), value) {
            // Discard the partial frame so the next one starts clean.
            self.buf.clear();
            return Err(EncodeError::Serialize(error));
        }
        self.json_hint = self.buf.len() - start;
        split_data_lines(&mut self.buf, start);
        Ok(self.finish(b"\n\n"))
    }

    /// A message frame whose payload is written by `write` directly into the frame buffer.
    ///
    /// `write` must only append; any CR or LF it writes becomes a `data:` line break.
    pub fn message_with(&mut self, id: Option<&[u8]>, write: impl FnOnce(&mut BytesMut)) -> Bytes {
        self.reserve(header_len(b"message", id) + self.json_hint + 2);
        self.put_header(b"message", id);
        let start = self.buf.len();
        write(&mut self.buf);
        // A writer that cleared or truncated the buffer leaves an empty payload, never a panic.
        let start = start.min(self.buf.len());
        self.json_hint = self.buf.len() - start;
        split_data_lines(&mut self.buf, start);
        self.finish(b"\n\n")
    }

    /// A frame with a custom event name (`event: endpoint` for the legacy transport).
    ///
    /// The name and id end at their first CR, LF (or, for the id, NUL): a line break there
    /// would corrupt the stream, and an id with NUL would be ignored by the client.
    pub fn named(&mut self, event: &[u8], id: Option<&[u8]>, data: &[u8]) -> Bytes {
        self.reserve(header_len(event, id) + data.len() + 2);
        self.put_header(event, id);
        let start = self.buf.len();
        self.buf.extend_from_slice(data);
        split_data_lines(&mut self.buf, start);
        self.finish(b"\n\n")
    }

    /// A priming frame: `id:` and an empty `data:`, optionally preceded by `retry:` (ms).
    pub fn priming(&mut self, id: &[u8], retry_ms: Option<u64>) -> Bytes {
        let id = field_value(id, true);
        self.reserve(id.len() + 40);
        if let Some(ms) = retry_ms {
            self.buf.extend_from_slice(b"retry: ");
            put_u64(&mut self.buf, ms);
            self.buf.extend_from_slice(b"\n");
        }
        self.buf.extend_from_slice(b"id: ");
        self.buf.extend_from_slice(id);
        self.finish(b"\ndata: \n\n")
    }

    /// A comment frame, `: {text}` (for example `: keepalive`). CR or LF in `text` start
    /// further comment lines.
    pub fn comment(&mut self, text: &[u8]) -> Bytes {
        self.reserve(text.len() + 6);
        self.buf.extend_from_slice(b": ");
        let start = self.buf.len();
        self.buf.extend_from_slice(text);
        split_lines(&mut self.buf, start, b"\n: ");
        self.finish(b"\n\n")
    }

    // === internals ===

    /// Makes room for `additional` bytes without allocating when possible: in place when the
    /// buffer's earlier frames are gone, else by swapping for a reclaimable pooled buffer.
    #[inline]
    fn reserve(&mut self, additional: usize) {
        if self.buf.capacity() - self.buf.len() >= additional {
            return;
        }
        self.reserve_slow(additional);
    }

    #[cold]
    fn reserve_slow(&mut self, additional: usize) {
        if self.buf.try_reclaim(additional) {
            return;
        }
        // Frames cut from this buffer are still in flight: park it in the pool (it becomes
        // reusable once they are dropped) and continue in one that is free now.
        let fresh = BufPool.take(additional);
        let busy = std::mem::replace(&mut self.buf, fresh);
        if !self.oversized {
            BufPool.put(busy);
        }
        self.oversized = self.buf.capacity() > MAX_POOLED_CAPACITY;
    }

    #[inline]
    fn put_header(&mut self, event: &[u8], id: Option<&[u8]>) {
        if event == b"message" {
            self.buf.extend_from_slice(b"event: message");
        } else {
            self.buf.extend_from_slice(b"event: ");
            self.buf.extend_from_slice(field_value(event, false));
        }
        if let Some(id) = id {
            self.buf.extend_from_slice(b"\nid: ");
            self.buf.extend_from_slice(field_value(id, true));
        }
        self.buf.extend_from_slice(b"\ndata: ");
    }

    /// Appends `tail` and cuts the frame off the buffer.
    #[inline]
    fn finish(&mut self, tail: &[u8]) -> Bytes {
        self.buf.extend_from_slice(tail);
        if self.buf.capacity() > MAX_POOLED_CAPACITY {
            self.oversized = true;
        }
        self.buf.split().freeze()
    }
}

/// Upper bound of the header of a message frame.
fn header_len(event: &[u8], id: Option<&[u8]>) -> usize {
    "event: \nid: \ndata: ".len() + event.len() + id.map_or(0, <[u8]>::len)
}

/// The part of a field value that can be sent: up to the first CR or LF (and NUL for ids).
/// Names and ids are short: a plain loop beats a vectorized search's setup.
#[inline]
fn field_value(value: &[u8], is_id: bool) -> &[u8] {
    let end = value
        .iter()
        .position(|&byte| byte == b'\r' || byte == b'\n' || (is_id && byte == 0));
    value.get(..end.unwrap_or(value.len())).unwrap_or_default()
}

/// Rewrites every CR, LF or CRLF in `buf[start..]` as a new `data:` line.
#[inline]
fn split_data_lines(buf: &mut BytesMut, start: usize) {
    split_lines(buf, start, DATA_LINE_BREAK);
}

/// Rewrites every CR, LF or CRLF in `buf[start..]` as `replacement`, in place (the buffer grows
/// at its end; earlier bytes move back), so a payload needs no second buffer.
fn split_lines(buf: &mut BytesMut, start: usize, replacement: &[u8]) {
    let Some(payload) = buf.get(start..) else {
        return;
    };
    if memchr::memchr2(b'\r', b'\n', payload).is_none() {
        return;
    }
    // First pass: how much the payload grows.
    let mut growth = 0;
    for index in memchr::memchr2_iter(b'\r', b'\n', payload) {
        let is_crlf_lf = payload.get(index) == Some(&b'\n')
            && index > 0
            && payload.get(index - 1) == Some(&b'\r');
        if is_crlf_lf {
            // The CR before it already counted the replacement; the pair shrinks by one more.
            growth -= 1;
        } else {
            growth += replacement.len() - 1;
        }
    }
    let old_end = buf.len();
    buf.resize(old_end + growth, 0);
    // Second pass, from the back: move each segment to its final place, then write the break.
    let mut write = buf.len();
    let mut read_end = old_end;
    while read_end > start {
        let Some(found) = buf
            .get(start..read_end)
            .and_then(|segment| memchr::memrchr2(b'\r', b'\n', segment))
        else {
            break;
        };
        let mut break_start = start + found;
        let break_end = break_start + 1;
        if buf.get(break_start) == Some(&b'\n')
            && break_start > start
            && buf.get(break_start - 1) == Some(&b'\r')
        {
            break_start -= 1;
        }
        let tail_len = read_end - break_end;
        buf.copy_within(break_end..read_end, write - tail_len);
        write -= tail_len;
        if let Some(slot) = buf.get_mut(write - replacement.len()..write) {
            slot.copy_from_slice(replacement);
        }
        write -= replacement.len();
        read_end = break_start;
    }
    debug_assert_eq!(write, read_end, "payload rewrite lost its place");
}

/// Writes the decimal digits of `value` (no allocation, unlike `format!`).
fn put_u64(buf: &mut BytesMut, mut value: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        if let Some(digit) = digits.get_mut(at) {
            *digit = b'0' + (value % 10) as u8;
        }
        value /= 10;
        if value == 0 || at == 0 {
            break;
        }
    }
    buf.extend_from_slice(digits.get(at..).unwrap_or_default());
}

/// `io::Write` straight into the frame buffer, for `serde_json::to_writer`.
struct FrameWriter<'a>(&'a mut BytesMut);

impl io::Write for FrameWriter<'_> {
    #[inline]
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    #[inline]
    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.0.extend_from_slice(bytes);
        Ok(())
    }

    #[inline]
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(frame: Bytes, expected: &str) {
        assert_eq!(String::from_utf8_lossy(&frame), expected);
    }

    #[test]
    fn message_frames() {
        let mut enc = Encoder::new();
        check(enc.message(None, b"{}"), "event: message\ndata: {}\n\n");
        check(
            enc.message(Some(b"a.1.2"), b"x"),
            "event: message\nid: a.1.2\ndata: x\n\n",
        );
        check(enc.message(None, b""), "event: message\ndata: \n\n");
    }

    #[test]
    fn line_breaks_become_data_lines() {
        let mut enc = Encoder::new();
        check(
            enc.message(None, b"a\nb"),
            "event: message\ndata: a\ndata: b\n\n",
        );
        check(
            enc.message(None, b"a\r\nb"),
            "event: message\ndata: a\ndata: b\n\n",
        );
        check(
            enc.message(None, b"a\rb"),
            "event: message\ndata: a\ndata: b\n\n",
        );
        check(
            enc.message(None, b"\n"),
            "event: message\ndata: \ndata: \n\n",
        );
        check(
            enc.message(None, b"\r\r\n\n"),
            "event: message\ndata: \ndata: \ndata: \ndata: \n\n",
        );
        check(
            enc.message(None, b"\n\r"),
            "event: message\ndata: \ndata: \ndata: \n\n",
        );
        check(
            enc.message(None, b"x\r"),
            "event: message\ndata: x\ndata: \n\n",
        );
    }

    #[test]
    fn json_serialized_into_frame() {
        let mut enc = Encoder::new();
        let value = serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": {}});
        check(
            enc.message_json(Some(b"7"), &value).unwrap(),
            "event: message\nid: 7\ndata: {\"id\":1,\"jsonrpc\":\"2.0\",\"result\":{}}\n\n",
        );
        // A string with a newline is escaped by serde_json, so it stays on one line.
        check(
            enc.message_json(None, "a\nb").unwrap(),
            "event: message\ndata: \"a\\nb\"\n\n",
        );
    }

    #[test]
    fn raw_json_with_line_breaks_is_split() {
        let mut enc = Encoder::new();
        let raw = serde_json::value::RawValue::from_string("{\n  \"a\": 1\n}".to_owned()).unwrap();
        check(
            enc.message_json(None, &raw).unwrap(),
            "event: message\ndata: {\ndata:   \"a\": 1\ndata: }\n\n",
        );
    }

    #[test]
    fn json_error_leaves_encoder_usable() {
        struct Fails;
        impl serde::Serialize for Fails {
            fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
                Err(serde::ser::Error::custom("no"))
            }
        }
        let mut enc = Encoder::new();
        assert!(enc.message_json(None, &Fails).is_err());
        check(enc.message(None, b"ok"), "event: message\ndata: ok\n\n");
    }

    #[test]
    fn message_with_splits_what_the_writer_wrote() {
        let mut enc = Encoder::new();
        check(
            enc.message_with(Some(b"1"), |buf| buf.extend_from_slice(b"a\r\nb\rc")),
            "event: message\nid: 1\ndata: a\ndata: b\ndata: c\n\n",
        );
        check(
            enc.message_with(None, |buf| buf.extend_from_slice(b"{}")),
            "event: message\ndata: {}\n\n",
        );
    }

    #[test]
    fn named_events() {
        let mut enc = Encoder::new();
        check(
            enc.named(b"endpoint", None, b"/messages?sessionId=abc"),
            "event: endpoint\ndata: /messages?sessionId=abc\n\n",
        );
    }

    #[test]
    fn field_values_cut_at_line_breaks() {
        let mut enc = Encoder::new();
        check(
            enc.named(b"a\nevil: 1", Some(b"1\r2"), b"x"),
            "event: a\nid: 1\ndata: x\n\n",
        );
        check(enc.priming(b"1\x002", None), "id: 1\ndata: \n\n");
    }

    #[test]
    fn priming_frames() {
        let mut enc = Encoder::new();
        check(enc.priming(b"i.s.0", None), "id: i.s.0\ndata: \n\n");
        check(
            enc.priming(b"i.s.0", Some(3000)),
            "retry: 3000\nid: i.s.0\ndata: \n\n",
        );
        check(enc.priming(b"x", Some(0)), "retry: 0\nid: x\ndata: \n\n");
        check(
            enc.priming(b"x", Some(u64::MAX)),
            "retry: 18446744073709551615\nid: x\ndata: \n\n",
        );
    }

    #[test]
    fn comment_frames() {
        let mut enc = Encoder::new();
        check(enc.comment(b"keepalive"), ": keepalive\n\n");
        check(
            enc.comment(b"bos/source-results/v1"),
            ": bos/source-results/v1\n\n",
        );
        check(enc.comment(b"a\nb"), ": a\n: b\n\n");
    }

    #[test]
    fn frames_larger_than_the_buffer() {
        let mut enc = Encoder::new();
        let big = vec![b'x'; DEFAULT_BUF_CAPACITY * 3];
        let frame = enc.message(None, &big);
        assert_eq!(frame.len(), "event: message\ndata: \n\n".len() + big.len());
        check(
            enc.message(None, b"after"),
            "event: message\ndata: after\n\n",
        );
    }

    #[test]
    fn frames_in_flight_are_not_overwritten() {
        let mut enc = Encoder::new();
        let frames: Vec<Bytes> = (0..1000u32)
            .map(|n| enc.message(None, n.to_string().repeat(20).as_bytes()))
            .collect();
        for (n, frame) in frames.iter().enumerate() {
            let expected = format!("event: message\ndata: {}\n\n", n.to_string().repeat(20));
            assert_eq!(frame, expected.as_bytes());
        }
    }
}
