//! Session ids: 128 random bits, written as 22 characters of unpadded base64url.
//!
//! Owns minting, parsing and printing of `Mcp-Session-Id` values. Must not know where sessions
//! are stored. Parsing is strict (exactly 22 characters of the base64url alphabet, canonical
//! trailing bits): anything else is simply not a session id, which the transport answers as an
//! unknown session (404), never as a panic.

use std::fmt;
use std::hash::{BuildHasher, Hash, Hasher};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use rand::RngCore as _;

/// Bytes of randomness in a session id.
pub(crate) const SESSION_ID_BYTES: usize = 16;

/// Length of a session id's text form (unpadded base64url of 16 bytes).
pub(crate) const SESSION_ID_LEN: usize = 22;

/// A session id: 128 bits from the thread's cryptographically secure generator.
///
/// Stored as raw bytes (16 B, `Copy`); printed as 22 visible ASCII characters
/// (`[A-Za-z0-9_-]`), which satisfies the `Mcp-Session-Id` charset rule (0x21–0x7E).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct SessionId([u8; SESSION_ID_BYTES]);

impl SessionId {
    /// A new random id. `rand::rng()` is a ChaCha-based CSPRNG seeded from the OS.
    pub fn random() -> Self {
        let mut bytes = [0u8; SESSION_ID_BYTES];
        rand::rng().fill_bytes(&mut bytes);
        Self(bytes)
    }

    /// Parses the text form; `None` for anything that is not exactly a canonical id.
    pub fn parse(text: &[u8]) -> Option<Self> {
        if text.len() != SESSION_ID_LEN {
            return None;
        }
        // Room for the decoder's conservative length estimate (22 chars → at most 18 bytes).
        let mut out = [0u8; SESSION_ID_BYTES + 2];
        // The engine rejects characters outside the alphabet and non-zero trailing bits, so
        // each id has exactly one text form.
        let n = URL_SAFE_NO_PAD.decode_slice(text, &mut out).ok()?;
        if n != SESSION_ID_BYTES {
            return None;
        }
        let mut bytes = [0u8; SESSION_ID_BYTES];
        bytes.copy_from_slice(out.get(..SESSION_ID_BYTES)?);
        Some(Self(bytes))
    }

    /// The id from raw bytes (tests, and stores that keep the binary form).
    pub const fn from_bytes(bytes: [u8; SESSION_ID_BYTES]) -> Self {
        Self(bytes)
    }

    /// The raw bytes.
    pub const fn as_bytes(&self) -> &[u8; SESSION_ID_BYTES] {
        &self.0
    }

    /// The text form, on the stack.
    pub fn encode(&self) -> EncodedSessionId {
        let mut text = [0u8; SESSION_ID_LEN];
        // 16 bytes always encode to exactly 22 characters.
        let _ = URL_SAFE_NO_PAD.encode_slice(self.0, &mut text);
        EncodedSessionId(text)
    }

    /// The text form as a header value (always valid: visible ASCII only).
    #[allow(clippy::wrong_self_convention)] // a `HeaderValue` is built from the encoding
    pub(crate) fn to_header_value(&self) -> http::HeaderValue {
        let encoded = self.encode();
        match http::HeaderValue::from_str(encoded.as_str()) {
            Ok(value) => value,
            // The base64url alphabet is visible ASCII.
            Err(_) => unreachable!("base64url is a valid header value"),
        }
    }
}

impl SessionId {
    /// A well-mixed 64-bit value of the id (its first 8 random bytes).
    #[inline]
    pub(crate) fn hash64(&self) -> u64 {
        let [a, b, c, d, e, f, g, h, ..] = self.0;
        u64::from_le_bytes([a, b, c, d, e, f, g, h])
    }

    /// Another independent 64-bit value of the id (its last 8 bytes), for picking a shard.
    #[inline]
    pub(crate) fn shard64(&self) -> u64 {
        let [.., a, b, c, d, e, f, g, h] = self.0;
        u64::from_le_bytes([a, b, c, d, e, f, g, h])
    }
}

impl Hash for SessionId {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash64());
    }
}

/// A `BuildHasher` for maps keyed by [`SessionId`]: the id is already uniformly random, so its
/// first 8 bytes are the hash. Safe against flooding because ids are only ever minted by the
/// server (a lookup of a chosen id costs one probe; nobody can insert chosen ids).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct IdHashBuilder;

/// The hasher behind [`IdHashBuilder`]: keeps the last `u64` written.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only reached by keys other than `SessionId`; fold the bytes so it stays correct.
        for &byte in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(byte);
        }
    }

    fn write_u64(&mut self, value: u64) {
        self.0 = value;
    }
}

impl BuildHasher for IdHashBuilder {
    type Hasher = IdHasher;

    fn build_hasher(&self) -> IdHasher {
        IdHasher(0)
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.encode().as_str())
    }
}

impl fmt::Debug for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Ids are bearer capabilities: debug output shows only a prefix.
        let encoded = self.encode();
        let prefix = encoded.as_str().get(..6).unwrap_or_default();
        write!(f, "SessionId({prefix}…)")
    }
}

/// The 22-character text form of a [`SessionId`], without allocating.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct EncodedSessionId([u8; SESSION_ID_LEN]);

impl EncodedSessionId {
    /// The text.
    pub fn as_str(&self) -> &str {
        // The encoder writes only base64url characters (ASCII).
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

impl AsRef<[u8]> for EncodedSessionId {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(input: &str, valid: bool) {
        let parsed = SessionId::parse(input.as_bytes());
        assert_eq!(parsed.is_some(), valid, "{input:?}");
        if let Some(id) = parsed {
            assert_eq!(id.to_string(), input, "canonical round trip");
        }
    }

    #[test]
    fn parse_cases() {
        check("AAAAAAAAAAAAAAAAAAAAAA", true);
        check("_-_-_-_-_-_-_-_-_-_-_w", true);
        check("abcdefghijklmnopqrstuQ", true);
        check("", false);
        check("AAAAAAAAAAAAAAAAAAAAA", false); // 21
        check("AAAAAAAAAAAAAAAAAAAAAAA", false); // 23
        check("AAAAAAAAAAAAAAAAAAAAA=", false); // padding
        check("AAAAAAAAAAAAAAAAAAAAA+", false); // standard alphabet
        check("AAAAAAAAAAAAAAAAAAAAA/", false);
        check("AAAAAAAAAAAAAAAAAAAAA.", false);
        check("AAAAAAAAAAAAAAAAAAAAA ", false);
        check("AAAAAAAAAAAAAAAAAAAAAB", false); // non-zero trailing bits
        check("ééééééééééé", false); // 22 bytes, not ASCII
    }

    #[test]
    fn random_ids_round_trip_and_differ() {
        let a = SessionId::random();
        let b = SessionId::random();
        assert_ne!(a, b);
        for id in [a, b] {
            let text = id.encode();
            assert_eq!(text.as_str().len(), SESSION_ID_LEN);
            assert!(text.as_str().bytes().all(|c| (0x21..=0x7e).contains(&c)));
            assert_eq!(SessionId::parse(text.as_ref()), Some(id));
            assert_eq!(id.to_header_value().as_bytes(), text.as_ref());
        }
    }

    #[test]
    fn debug_hides_most_of_the_id() {
        let id = SessionId::from_bytes([7; 16]);
        let shown = format!("{id:?}");
        assert!(!shown.contains(id.encode().as_str()));
    }
}
