//! The parser both APIs of `decode.rs` share: finds the next event in a byte slice and describes
//! it as ranges of that slice.
//!
//! Owns the rules of the HTML standard, "9.2.6 Interpreting an event stream" (each step quotes
//! it), the whole-frame fast path and the frame size limit. Must not make `Bytes` or hand out
//! events: that is the two APIs' job in `decode.rs`.
//!
//! # Fast path
//! Between frames it first tries the shape nearly every frame has (`fast_frame`): optional
//! `event: message`, optional `id: <v>`, one `data: <v>`, a blank line, LF line ends, all in the
//! input. Anything else goes through the line-by-line parser, which gives the same result (the
//! unit tests feed every split of such frames, so both paths run on the same bytes).

use super::{Data, DecodeError, Decoder};

/// The UTF-8 byte order mark, stripped once at the start of the stream.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// The event type buffer: empty, the common `message`, or a range of the input.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) enum NameRef {
    #[default]
    Empty,
    Message,
    Range(usize, usize),
}

/// Where a dispatched event's data is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum DataRef {
    Range(usize, usize),
    /// Joined from several lines in `Decoder::scratch`.
    Scratch,
}

/// A dispatched event's id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum IdRef {
    /// The frame's own (non-empty) `id` field: a range of the input.
    Own(usize, usize),
    /// Inherited: `Decoder::last_event_id` (non-empty).
    Last,
    None,
}

/// A dispatched event as ranges of the input the parser was given.
#[derive(Debug, Clone, Copy)]
pub(super) struct Raw {
    pub(super) event: NameRef,
    pub(super) data: DataRef,
    pub(super) id: IdRef,
    /// Bytes of the input this event (and any frame before it that dispatched nothing) used up.
    pub(super) end: usize,
}

/// What the parser found.
#[derive(Debug, Clone, Copy)]
pub(super) enum Step {
    Event(Raw),
    /// No complete event: the first `n` bytes are done with; the rest is an incomplete frame the
    /// parser has remembered its progress in, to be given again at the front of the next input.
    Need(usize),
}

impl Decoder {
    /// Parses `input` (which starts where the last call left off: at the incomplete frame it
    /// did not consume) until an event is dispatched or only an incomplete frame is left.
    #[inline]
    pub(super) fn next_raw(&mut self, input: &[u8]) -> Result<Step, DecodeError> {
        if self.failed {
            return Err(DecodeError::FrameTooLarge);
        }
        // Start of the current frame in `input`; positions below are relative to it.
        let mut base = 0;
        let mut pos = std::mem::take(&mut self.resume);
        if self.at_stream_start {
            if input.is_empty() || (input.len() < BOM.len() && BOM.starts_with(input)) {
                return Ok(Step::Need(0));
            }
            // "The UTF-8 decode algorithm strips one leading UTF-8 Byte Order Mark (BOM), if
            // any."
            if input.starts_with(BOM) {
                pos = BOM.len();
            }
            self.at_stream_start = false;
        }
        loop {
            let bytes = input.get(base..).unwrap_or_default();
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
            // shape nearly every frame has.
            if self.frame_len == 0 && self.scanned == 0 && self.is_between_frames() {
                if let Some(frame) = fast_frame(rest).filter(|f| f.len <= self.max_frame) {
                    return Ok(Step::Event(self.dispatch_fast(rest, base + pos, &frame)));
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
                if let Some(raw) = self.dispatch(bytes, base, base + pos) {
                    return Ok(Step::Event(raw));
                }
                base += pos;
                pos = 0;
                continue;
            }
            self.frame_len = self.frame_len.saturating_add(line_end - line_start + 1);
            if self.frame_len > self.max_frame {
                return Err(self.fail());
            }
            self.process_line(bytes, line_start, line_end);
        }
        // Only an incomplete frame (possibly empty) is left.
        let tail = input.len().saturating_sub(base + pos);
        if tail > 0 && self.frame_len.saturating_add(tail + 1) > self.max_frame {
            return Err(self.fail());
        }
        self.resume = pos;
        self.scanned = tail;
        Ok(Step::Need(base))
    }

    /// Parses one complete, non-empty line `bytes[start..end]` (`bytes` starts at the frame).
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
        let value = bytes.get(value_start..end).unwrap_or_default();
        match name {
            // "If the field name is "data": Append the field value to the data buffer, then
            // append a single U+000A LINE FEED (LF) character to the data buffer."
            // (The final LF is removed at dispatch, so lines are kept joined without it.)
            b"data" => match self.data {
                Data::Empty => self.data = Data::One(value_start, end),
                Data::One(first_start, first_end) => {
                    self.scratch.clear();
                    self.scratch
                        .extend_from_slice(bytes.get(first_start..first_end).unwrap_or_default());
                    self.scratch.extend_from_slice(b"\n");
                    self.scratch.extend_from_slice(value);
                    self.data = Data::Joined;
                }
                Data::Joined => {
                    self.scratch.extend_from_slice(b"\n");
                    self.scratch.extend_from_slice(value);
                }
            },
            // "If the field name is "event": Set the event type buffer to field value."
            b"event" => {
                self.event = if value.is_empty() {
                    NameRef::Empty
                } else if value == b"message" {
                    NameRef::Message
                } else {
                    NameRef::Range(value_start, end)
                };
            }
            // "If the field name is "id": If the field value does not contain U+0000 NULL, then
            // set the last event ID buffer to the field value. Otherwise, ignore the field."
            b"id" if memchr::memchr(0, value).is_none() => {
                self.id_pending = Some((value_start, end));
            }
            // "If the field name is "retry": If the field value consists of only ASCII digits,
            // then interpret the field value as an integer in base ten, and set the event
            // stream's reconnection time to that integer. Otherwise, ignore the field."
            // (An empty value or one that overflows `u64` is ignored as well.)
            b"retry" => {
                if let Some(ms) = parse_retry(value) {
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
        matches!(self.data, Data::Empty)
            && self.event == NameRef::Empty
            && self.id_pending.is_none()
    }

    /// Sets the last event ID string to `id` (the frame's own id field).
    #[inline]
    fn set_last_event_id(&mut self, id: &[u8]) {
        self.last_event_id.clear();
        self.last_event_id.extend_from_slice(id);
        self.shared_id = None;
    }

    /// The id an event carries when its frame had no `id` field.
    #[inline]
    fn inherited_id(&self) -> IdRef {
        if self.last_event_id.is_empty() {
            IdRef::None
        } else {
            IdRef::Last
        }
    }

    /// Dispatches a frame recognized by [`fast_frame`] at `rest`, which is `input[at..]`.
    #[inline]
    fn dispatch_fast(&mut self, rest: &[u8], at: usize, frame: &FastFrame) -> Raw {
        let id = match frame.id {
            Some((start, stop)) => {
                self.set_last_event_id(rest.get(start..stop).unwrap_or_default());
                if start < stop {
                    IdRef::Own(at + start, at + stop)
                } else {
                    IdRef::None
                }
            }
            None => self.inherited_id(),
        };
        Raw {
            event: if frame.message {
                NameRef::Message
            } else {
                NameRef::Empty
            },
            data: DataRef::Range(at + frame.data.0, at + frame.data.1),
            id,
            end: at + frame.end,
        }
    }

    /// Dispatches the frame `bytes[..end - base]` (ending just after its blank line), which is
    /// `input[base..end]`; `None` when it carries no data.
    #[inline]
    fn dispatch(&mut self, bytes: &[u8], base: usize, end: usize) -> Option<Raw> {
        self.frame_len = 0;
        // "Set the last event ID string of the event source to the value of the last event ID
        // buffer. The buffer does not get reset, so the last event ID string of the event source
        // remains set to this value until the next time it is set by the server."
        let own_id = self.id_pending.take().map(|(start, stop)| {
            self.set_last_event_id(bytes.get(start..stop).unwrap_or_default());
            (start, stop)
        });
        let event = std::mem::take(&mut self.event);
        // "If the data buffer is an empty string, set the data buffer and the event type buffer
        // to the empty string and return."
        let data = match std::mem::take(&mut self.data) {
            Data::Empty => return None,
            Data::One(start, stop) => DataRef::Range(base + start, base + stop),
            Data::Joined => DataRef::Scratch,
        };
        let id = match own_id {
            Some((start, stop)) if start < stop => IdRef::Own(base + start, base + stop),
            Some(_) => IdRef::None,
            None => self.inherited_id(),
        };
        Some(Raw {
            event: match event {
                NameRef::Range(start, stop) => NameRef::Range(base + start, base + stop),
                other => other,
            },
            data,
            id,
            end,
        })
    }

    fn fail(&mut self) -> DecodeError {
        self.failed = true;
        self.data = Data::Empty;
        self.scratch = bytes::BytesMut::new();
        self.event = NameRef::Empty;
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
pub(super) fn parse_retry(value: &[u8]) -> Option<u64> {
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
