//! Incremental WHATWG `text/event-stream` parser.
//!
//! Owns turning bytes into [`Event`]s: line splitting (CR, LF, CRLF, also across chunk ends), the
//! optional BOM, comments, field parsing, and the dispatch rules of the HTML standard, "9.2.6
//! Interpreting an event stream". Must not know JSON or MCP, and must not do IO: it is a pure
//! function over a buffer (`Ok(None)` = need more bytes); [`super::stream::EventStream`] wraps it
//! for a `Stream` of chunks.
//!
//! # Fast path
//! Line ends are found with `memchr2`; nothing is allocated per line. A data line is kept as a
//! range of the input until the frame is dispatched, so an event with a single `data` line comes
//! out as a [`Bytes`] slice of the input (zero copy). Only a second `data` line in the same frame
//! copies, into a reused scratch buffer. When a frame is cut by the end of the input, the lines
//! already parsed are frozen out of the input as `Bytes` (still no copy); only the incomplete last
//! line stays in the caller's buffer.
//!
//! # Limits
//! A frame (all its lines, each line end counted as one byte, the blank line that ends it not
//! counted) may not exceed the configured maximum ([`DEFAULT_MAX_FRAME`]); an incomplete line
//! that already makes the frame too long counts too, so a peer that never sends a line end
//! cannot grow the buffer without bound.

use bytes::{Buf, Bytes, BytesMut};

/// The default maximum size of one frame: 1 MiB. A larger frame makes [`Decoder::decode`] fail
/// with [`DecodeError::FrameTooLarge`]; change it with [`Decoder::with_max_frame`].
pub const DEFAULT_MAX_FRAME: usize = 1 << 20;

/// The UTF-8 byte order mark, stripped once at the start of the stream.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// One dispatched event.
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

/// Why decoding failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// A frame grew beyond the configured maximum size.
    #[error("SSE frame larger than the configured maximum")]
    FrameTooLarge,
}

// === Input ===

/// A buffer the decoder reads from and consumes: the caller's `BytesMut`, or a `Bytes` chunk in
/// the stream adapter.
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

// === Pieces of a frame ===

/// A field value: a range of the current input (only while one `decode` call runs), or bytes
/// already split off the input.
#[derive(Debug, Clone)]
enum Piece {
    Range(usize, usize),
    Bytes(Bytes),
}

impl Piece {
    fn as_slice<'a>(&'a self, input: &'a [u8]) -> &'a [u8] {
        match self {
            Piece::Range(start, end) => input.get(*start..*end).unwrap_or_default(),
            Piece::Bytes(bytes) => bytes,
        }
    }

    fn into_bytes(self) -> Bytes {
        match self {
            Piece::Bytes(bytes) => bytes,
            // Ranges are resolved before a piece leaves `decode`; an empty value is the safe
            // answer should that invariant ever break.
            Piece::Range(..) => Bytes::new(),
        }
    }
}

/// The data buffer of the frame being parsed.
#[derive(Debug, Default)]
enum Data {
    /// No `data` line yet: dispatch produces no event.
    #[default]
    Empty,
    /// Exactly one `data` line.
    One(Piece),
    /// Several `data` lines, joined with `\n` in `Decoder::scratch`.
    Joined,
}

// === Decoder ===

/// Incremental WHATWG event-stream parser.
///
/// Feed it one buffer that the caller keeps appending to: bytes it consumed are removed from the
/// front, an incomplete last line stays. After an error the decoder keeps returning that error.
#[derive(Debug)]
pub struct Decoder {
    /// Largest frame accepted, see [`DEFAULT_MAX_FRAME`].
    max_frame: usize,
    /// No byte of the stream has been examined yet (the BOM may still come).
    at_stream_start: bool,
    /// The last line ended with a CR that was the last byte of the input: an LF at the start of
    /// the next input belongs to it.
    skip_lf: bool,
    /// Bytes at the front of the input already known to hold no line end (the incomplete line
    /// left by the previous call), so a long line is not rescanned on every call.
    scanned: usize,
    /// Size of the current frame so far (each line end counts as one byte).
    frame_len: usize,
    /// Set once a frame was too large; every later call fails.
    failed: bool,
    data: Data,
    /// Holds joined data when a frame has several `data` lines; reused from frame to frame.
    scratch: BytesMut,
    /// The event type buffer; `None` is empty (the default type).
    event: Option<Piece>,
    /// An `id` field seen in the current frame: the new last event ID buffer.
    id_pending: Option<Piece>,
    /// The last event ID string (set at dispatch; empty = none). Kept as a copy so an event that
    /// sets its own id can take the zero-copy slice without sharing it with the decoder.
    last_event_id: Vec<u8>,
    /// `last_event_id` as `Bytes`, for events that inherit it; made on first need.
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
            scanned: 0,
            frame_len: 0,
            failed: false,
            data: Data::Empty,
            scratch: BytesMut::new(),
            event: None,
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

    /// Decodes the next event from `buf`; `Ok(None)` means more bytes are needed.
    ///
    /// Consumed bytes are removed from the front of `buf`; keep appending to the same buffer.
    pub fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Event>, DecodeError> {
        self.decode_input(buf)
    }

    /// Decodes from any [`Input`]: parses complete lines until a dispatch produces an event or
    /// only an incomplete line is left.
    pub(crate) fn decode_input<I: Input>(
        &mut self,
        input: &mut I,
    ) -> Result<Option<Event>, DecodeError> {
        if self.failed {
            return Err(DecodeError::FrameTooLarge);
        }
        // Bytes of the input parsed but not yet consumed; pieces are ranges below it.
        let mut pos = 0;
        if self.at_stream_start {
            let bytes = input.bytes();
            if bytes.is_empty() || (bytes.len() < BOM.len() && BOM.starts_with(bytes)) {
                return Ok(None);
            }
            // "The UTF-8 decode algorithm strips one leading UTF-8 Byte Order Mark (BOM), if any."
            if bytes.starts_with(BOM) {
                pos = BOM.len();
            }
            self.at_stream_start = false;
        }
        loop {
            let bytes = input.bytes();
            if self.skip_lf {
                match bytes.get(pos) {
                    None => break,
                    Some(&byte) => {
                        self.skip_lf = false;
                        if byte == b'\n' {
                            pos += 1;
                        }
                    }
                }
            }
            let rest = bytes.get(pos..).unwrap_or_default();
            // Between frames (no line of the next one parsed yet, nothing carried), try the
            // shape nearly every frame has: the whole frame in a few comparisons and one search
            // per line, split off the input without per-line bookkeeping.
            if self.frame_len == 0 && self.scanned == 0 && self.is_between_frames() {
                if let Some(frame) = fast_frame(rest).filter(|f| f.len <= self.max_frame) {
                    return Ok(Some(self.dispatch_fast(input, pos, &frame)));
                }
            }
            let scanned = std::mem::take(&mut self.scanned).min(rest.len());
            // "Lines must be separated by either a U+000D CARRIAGE RETURN U+000A LINE FEED (CRLF)
            // character pair, a single U+000A LINE FEED (LF) character, or a single U+000D
            // CARRIAGE RETURN (CR) character."
            // A blank line (the end of every frame) is found without a search call.
            let found = match rest.first() {
                Some(b'\n' | b'\r') => Some(0),
                _ => rest
                    .get(scanned..)
                    .and_then(|tail| memchr::memchr2(b'\n', b'\r', tail))
                    .map(|found| scanned + found),
            };
            let Some(found) = found else {
                break;
            };
            let line_start = pos;
            let line_end = pos + found;
            pos = line_end + 1;
            if bytes.get(line_end) == Some(&b'\r') {
                match bytes.get(pos) {
                    Some(b'\n') => pos += 1,
                    Some(_) => {}
                    None => self.skip_lf = true,
                }
            }
            if line_start == line_end {
                // "If the line is empty (a blank line): Dispatch the event."
                if let Some(event) = self.dispatch(input, pos) {
                    return Ok(Some(event));
                }
                pos = 0;
                continue;
            }
            self.frame_len = self.frame_len.saturating_add(line_end - line_start + 1);
            if self.frame_len > self.max_frame {
                return Err(self.fail());
            }
            self.process_line(bytes, line_start, line_end);
        }
        // Only an incomplete line (possibly empty) is left.
        let tail = input.bytes().len().saturating_sub(pos);
        if tail > 0 && self.frame_len.saturating_add(tail + 1) > self.max_frame {
            return Err(self.fail());
        }
        self.resolve(input, pos);
        self.scanned = tail;
        Ok(None)
    }

    /// Parses one complete, non-empty line `bytes[start..end]`.
    #[inline]
    fn process_line(&mut self, bytes: &[u8], start: usize, end: usize) {
        let line = bytes.get(start..end).unwrap_or_default();
        // "If the line starts with a U+003A COLON character (:): Ignore the line."
        if line.first() == Some(&b':') {
            return;
        }
        // "If the line contains a U+003A COLON character (:): Collect the characters on the line
        // before the first U+003A COLON character (:), and let field be that string. Collect the
        // characters on the line after the first U+003A COLON character (:), and let value be
        // that string. If value starts with a U+0020 SPACE character, remove it from value."
        // "Otherwise, the string is not empty but does not contain a U+003A COLON character (:):
        // Process the field using the whole line as the field name, and the empty string as the
        // field value."
        // The fields sluice's peers send are recognized by prefix, without a search call.
        let colon = if line.starts_with(b"data:") {
            Some(4)
        } else if line.starts_with(b"id:") {
            Some(2)
        } else if line.starts_with(b"event:") {
            Some(5)
        } else {
            memchr::memchr(b':', line)
        };
        let (name, value_start) = match colon {
            Some(colon) => {
                let after = colon + 1;
                let skip = usize::from(line.get(after) == Some(&b' '));
                (line.get(..colon).unwrap_or_default(), start + after + skip)
            }
            None => (line, end),
        };
        let value = Piece::Range(value_start, end);
        match name {
            // "If the field name is "data": Append the field value to the data buffer, then
            // append a single U+000A LINE FEED (LF) character to the data buffer."
            // (The final LF is removed at dispatch, so lines are kept joined without it.)
            b"data" => match std::mem::take(&mut self.data) {
                Data::Empty => self.data = Data::One(value),
                Data::One(first) => {
                    self.scratch.clear();
                    self.scratch.extend_from_slice(first.as_slice(bytes));
                    self.scratch.extend_from_slice(b"\n");
                    self.scratch.extend_from_slice(value.as_slice(bytes));
                    self.data = Data::Joined;
                }
                Data::Joined => {
                    self.scratch.extend_from_slice(b"\n");
                    self.scratch.extend_from_slice(value.as_slice(bytes));
                    self.data = Data::Joined;
                }
            },
            // "If the field name is "event": Set the event type buffer to field value."
            b"event" => {
                let value_bytes = value.as_slice(bytes);
                self.event = if value_bytes.is_empty() {
                    None
                } else if value_bytes == b"message" {
                    // The common name costs no reference count.
                    Some(Piece::Bytes(Bytes::from_static(b"message")))
                } else {
                    Some(value)
                };
            }
            // "If the field name is "id": If the field value does not contain U+0000 NULL, then
            // set the last event ID buffer to the field value. Otherwise, ignore the field."
            b"id" if memchr::memchr(0, value.as_slice(bytes)).is_none() => {
                self.id_pending = Some(value);
            }
            // "If the field name is "retry": If the field value consists of only ASCII digits,
            // then interpret the field value as an integer in base ten, and set the event
            // stream's reconnection time to that integer. Otherwise, ignore the field."
            // (An empty value or one that overflows `u64` is ignored as well.)
            b"retry" => {
                if let Some(ms) = parse_retry(value.as_slice(bytes)) {
                    self.retry = Some(ms);
                }
            }
            // "Otherwise: The field is ignored."
            _ => {}
        }
    }

    /// No field of a frame is pending (the state right after a dispatch).
    #[inline]
    fn is_between_frames(&self) -> bool {
        matches!(self.data, Data::Empty) && self.event.is_none() && self.id_pending.is_none()
    }

    /// Dispatches a frame recognized by [`fast_frame`] at `input[pos..]` and consumes it: the id
    /// and data are split off the input (one reference count each), nothing is copied but the
    /// id into `last_event_id`.
    #[inline]
    fn dispatch_fast<I: Input>(&mut self, input: &mut I, pos: usize, frame: &FastFrame) -> Event {
        let mut consumed = 0;
        let own_id = frame.id.map(|(start, stop)| {
            input.skip(pos + start);
            let id = input.take(stop - start);
            consumed = pos + stop;
            id
        });
        let (start, stop) = frame.data;
        input.skip(pos + start - consumed);
        let data = input.take(stop - start);
        input.skip(frame.end - stop);
        let id = self.event_id(own_id);
        Event {
            event: if frame.message {
                Bytes::from_static(b"message")
            } else {
                Bytes::new()
            },
            data,
            id,
            retry: self.retry,
        }
    }

    /// Applies a frame's own `id` (if it had one) to the last event ID and returns the id the
    /// dispatched event carries.
    #[inline]
    fn event_id(&mut self, own_id: Option<Bytes>) -> Option<Bytes> {
        match own_id {
            Some(id) => {
                self.last_event_id.clear();
                self.last_event_id.extend_from_slice(&id);
                self.shared_id = None;
                (!id.is_empty()).then_some(id)
            }
            None if self.last_event_id.is_empty() => None,
            None => Some(
                self.shared_id
                    .get_or_insert_with(|| Bytes::copy_from_slice(&self.last_event_id))
                    .clone(),
            ),
        }
    }

    /// Dispatches the frame that ends at `end` (just after its blank line) and consumes it.
    #[inline]
    fn dispatch<I: Input>(&mut self, input: &mut I, end: usize) -> Option<Event> {
        self.frame_len = 0;
        self.resolve(input, end);
        // "Set the last event ID string of the event source to the value of the last event ID
        // buffer. The buffer does not get reset, so the last event ID string of the event source
        // remains set to this value until the next time it is set by the server."
        let own_id = self.id_pending.take().map(|id| {
            let id = id.into_bytes();
            self.last_event_id.clear();
            self.last_event_id.extend_from_slice(&id);
            self.shared_id = None;
            id
        });
        let event = self.event.take();
        // "If the data buffer is an empty string, set the data buffer and the event type buffer
        // to the empty string and return."
        let data = match std::mem::take(&mut self.data) {
            Data::Empty => {
                self.shared_id = own_id.filter(|id| !id.is_empty());
                return None;
            }
            Data::One(piece) => piece.into_bytes(),
            Data::Joined => self.scratch.split().freeze(),
        };
        let id = match own_id {
            Some(id) => (!id.is_empty()).then_some(id),
            None if self.last_event_id.is_empty() => None,
            None => Some(
                self.shared_id
                    .get_or_insert_with(|| Bytes::copy_from_slice(&self.last_event_id))
                    .clone(),
            ),
        };
        Some(Event {
            event: event.map(Piece::into_bytes).unwrap_or_default(),
            data,
            id,
            retry: self.retry,
        })
    }

    /// Consumes the first `end` bytes of the input, first splitting every range piece off it
    /// as `Bytes` (in input order, so nothing is copied).
    fn resolve<I: Input>(&mut self, input: &mut I, end: usize) {
        // Fast path: the data line is the only range (no new id, no unusual event name).
        if let (Data::One(Piece::Range(start, stop)), None | Some(Piece::Bytes(_)), None) =
            (&self.data, &self.event, &self.id_pending)
        {
            let (start, stop) = (*start, (*stop).max(*start));
            input.skip(start);
            self.data = Data::One(Piece::Bytes(input.take(stop - start)));
            input.skip(end.saturating_sub(stop));
            return;
        }
        let mut ranges: [Option<&mut Piece>; 3] = [None, None, None];
        let mut n_ranges = 0;
        let candidates = [
            match &mut self.data {
                Data::One(piece) => Some(piece),
                _ => None,
            },
            self.event.as_mut(),
            self.id_pending.as_mut(),
        ];
        for piece in candidates.into_iter().flatten() {
            if let Piece::Range(..) = piece {
                if let Some(slot) = ranges.get_mut(n_ranges) {
                    *slot = Some(piece);
                    n_ranges += 1;
                }
            }
        }
        let ranges = ranges.get_mut(..n_ranges).unwrap_or_default();
        ranges.sort_unstable_by_key(|piece| match piece {
            Some(Piece::Range(start, _)) => *start,
            _ => 0,
        });
        let mut consumed = 0;
        for piece in ranges.iter_mut().flatten() {
            if let Piece::Range(start, stop) = **piece {
                let start = start.max(consumed);
                let stop = stop.max(start);
                input.skip(start - consumed);
                **piece = Piece::Bytes(input.take(stop - start));
                consumed = stop;
            }
        }
        input.skip(end.saturating_sub(consumed));
    }

    fn fail(&mut self) -> DecodeError {
        self.failed = true;
        self.data = Data::Empty;
        self.scratch = BytesMut::new();
        self.event = None;
        self.id_pending = None;
        DecodeError::FrameTooLarge
    }
}

/// A complete frame of the common shape, positions relative to where it starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FastFrame {
    /// It began with `event: message`.
    message: bool,
    /// The value of its `id: ` line.
    id: Option<(usize, usize)>,
    /// The value of its single `data: ` line.
    data: (usize, usize),
    /// Just after the blank line that ends it.
    end: usize,
    /// Its size as the frame limit counts it (the blank line not counted).
    len: usize,
}

/// Recognizes a whole frame of the shape sluice's peers send, with LF line ends only:
/// optional `event: message`, optional `id: <value>`, one `data: <value>`, blank line. Anything
/// else (CR anywhere in it, other fields, comments, several data lines, an incomplete frame)
/// answers `None` and goes through the line-by-line parser, which gives the same result.
#[inline]
fn fast_frame(rest: &[u8]) -> Option<FastFrame> {
    const EVENT: &[u8] = b"event: message\n";
    let message = rest.starts_with(EVENT);
    let mut at = if message { EVENT.len() } else { 0 };
    let mut id = None;
    if rest.get(at..)?.starts_with(b"id: ") {
        let start = at + 4;
        // Ids are short: a plain loop beats a vectorized search's setup. NUL (the field would
        // be ignored) and CR go to the slow path.
        let len = rest
            .get(start..)?
            .iter()
            .position(|&byte| byte == b'\n' || byte == b'\r' || byte == 0)?;
        let stop = start + len;
        if rest.get(stop) != Some(&b'\n') {
            return None;
        }
        id = Some((start, stop));
        at = stop + 1;
    }
    if !rest.get(at..)?.starts_with(b"data: ") {
        return None;
    }
    let start = at + 6;
    let stop = start + memchr::memchr2(b'\n', b'\r', rest.get(start..)?)?;
    if rest.get(stop..stop + 2)? != b"\n\n" {
        return None;
    }
    Some(FastFrame {
        message,
        id,
        data: (start, stop),
        end: stop + 2,
        len: stop + 1,
    })
}

/// Parses a `retry` value: ASCII digits only, at least one, fitting in a `u64`.
fn parse_retry(value: &[u8]) -> Option<u64> {
    if value.is_empty() {
        return None;
    }
    value.iter().try_fold(0u64, |acc, &byte| {
        if byte.is_ascii_digit() {
            acc.checked_mul(10)?.checked_add(u64::from(byte - b'0'))
        } else {
            None
        }
    })
}

#[cfg(test)]
mod tests;
