//! Event ids: `{instance}.{stream}.{seq}`, formatted on the stack and parsed strictly, and the
//! instance id that starts each of them.
//!
//! `instance` is a short id of this process (configured, or [`INSTANCE_ID_LEN`] random
//! base64url characters), `stream` a per-instance counter, `seq` the position on the stream
//! from 1. A `Last-Event-ID` that does not parse is not an error: the client gets a fresh
//! stream. Pure functions: must not know streams, sessions or SSE framing.

use super::{INSTANCE_ID_LEN, MAX_INSTANCE_LEN};

/// Longest event id: instance, two dots, two `u64`s.
const MAX_EVENT_ID: usize = MAX_INSTANCE_LEN + 2 + 2 * 20;

/// An event id, formatted on the stack.
#[derive(Clone, Copy)]
pub struct EventId {
    bytes: [u8; MAX_EVENT_ID],
    len: u8,
}

impl EventId {
    /// `{instance}.{stream}.{seq}`.
    pub fn new(instance: &str, stream: u64, seq: u64) -> Self {
        let mut id = Self {
            bytes: [0; MAX_EVENT_ID],
            len: 0,
        };
        id.push(
            instance
                .as_bytes()
                .get(..MAX_INSTANCE_LEN)
                .unwrap_or(instance.as_bytes()),
        );
        id.push(b".");
        id.push_u64(stream);
        id.push(b".");
        id.push_u64(seq);
        id
    }

    /// The id's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        self.bytes.get(..usize::from(self.len)).unwrap_or_default()
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        std::str::from_utf8(self.as_bytes()).unwrap_or_default()
    }

    fn push(&mut self, part: &[u8]) {
        let start = usize::from(self.len);
        if let Some(slot) = self.bytes.get_mut(start..start + part.len()) {
            slot.copy_from_slice(part);
            self.len += part.len() as u8;
        }
    }

    fn push_u64(&mut self, value: u64) {
        let mut digits = [0u8; 20];
        let mut at = digits.len();
        let mut rest = value;
        loop {
            at -= 1;
            if let Some(digit) = digits.get_mut(at) {
                *digit = b'0' + (rest % 10) as u8;
            }
            rest /= 10;
            if rest == 0 {
                break;
            }
        }
        self.push(digits.get(at..).unwrap_or_default());
    }
}

impl std::fmt::Debug for EventId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The parts of a well-formed event id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParsedEventId<'a> {
    /// The instance that issued it.
    pub instance: &'a [u8],
    /// The stream on that instance.
    pub stream: u64,
    /// The position on that stream.
    pub seq: u64,
}

/// Parses `{instance}.{stream}.{seq}`; `None` for anything else (a malformed `Last-Event-ID`
/// simply gets a fresh stream). Numbers are canonical decimal (no sign, no leading zero).
pub fn parse_event_id(text: &[u8]) -> Option<ParsedEventId<'_>> {
    let mut parts = text.split(|&byte| byte == b'.');
    let instance = parts.next()?;
    let stream = parse_u64(parts.next()?)?;
    let seq = parse_u64(parts.next()?)?;
    if parts.next().is_some() || !is_instance_id(instance) {
        return None;
    }
    Some(ParsedEventId {
        instance,
        stream,
        seq,
    })
}

fn parse_u64(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() || (digits.len() > 1 && digits.first() == Some(&b'0')) {
        return None;
    }
    digits.iter().try_fold(0u64, |value, &byte| {
        let digit = byte.checked_sub(b'0').filter(|digit| *digit <= 9)?;
        value.checked_mul(10)?.checked_add(u64::from(digit))
    })
}

pub(super) fn is_instance_id(text: &[u8]) -> bool {
    (1..=MAX_INSTANCE_LEN).contains(&text.len())
        && text
            .iter()
            .all(|byte| byte.is_ascii_alphanumeric() || *byte == b'_' || *byte == b'-')
}

pub(super) fn random_instance_id() -> String {
    use base64::Engine as _;
    use rand::RngCore as _;
    let mut bytes = [0u8; 6];
    rand::rng().fill_bytes(&mut bytes);
    let mut text = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
    text.truncate(INSTANCE_ID_LEN);
    text
}
