//! Request ids: borrowed from the body ([`Id`]), kept after it ([`OwnedId`]), or handed to a
//! writer ([`IdRef`]).
//!
//! An id echoes back with its JSON type: `0` stays a number, `"0"` stays a string. Strings are
//! re-escaped canonically (the same JSON value, not necessarily the same bytes: simd-json
//! unescapes them in place, so the original text is gone). Integers are kept exactly as 64-bit
//! integers, so `9007199254740993` (beyond f64 precision) round-trips. This file does no parsing.

use std::fmt;

use bytes::{BufMut, BytesMut};
use smallvec::SmallVec;

use crate::json_text::put_str;

/// A request id as parsed, borrowing strings from the request body.
///
/// Build numbers with [`Id::from_i64`] / [`Id::from_u64`] so that equal values compare equal
/// (`UInt` only holds values above `i64::MAX`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Id<'a> {
    /// An integer id in `i64` range.
    Int(i64),
    /// An integer id above `i64::MAX`.
    UInt(u64),
    /// A string id, unescaped.
    Str(&'a str),
}

impl<'a> Id<'a> {
    /// A numeric id from a signed integer.
    pub(crate) fn from_i64(n: i64) -> Self {
        Id::Int(n)
    }

    /// A numeric id from an unsigned integer (normalized to `Int` when it fits).
    pub(crate) fn from_u64(n: u64) -> Self {
        match i64::try_from(n) {
            Ok(n) => Id::Int(n),
            Err(_) => Id::UInt(n),
        }
    }

    /// Appends the id's JSON text (`0`, `"a\"b"`) to `buf`.
    pub fn write_json(&self, buf: &mut BytesMut) {
        match *self {
            Id::Int(n) => write_json_int(buf, n),
            Id::UInt(n) => write_json_int(buf, n),
            Id::Str(s) => put_str(buf, s),
        }
    }

    /// The id kept beyond the body's lifetime.
    pub fn to_owned_id(&self) -> OwnedId {
        let mut text: SmallVec<[u8; OWNED_ID_INLINE]> = SmallVec::new();
        match *self {
            // Integers need at most 20 bytes, so they always stay inline.
            Id::Int(n) => push_int(&mut text, n),
            Id::UInt(n) => push_int(&mut text, n),
            Id::Str(s) => {
                let mut buf = BytesMut::with_capacity(s.len() + 2);
                put_str(&mut buf, s);
                text.extend_from_slice(&buf);
            }
        }
        OwnedId { text }
    }
}

impl fmt::Display for Id<'_> {
    /// Writes the id's JSON text.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.to_owned_id(), f)
    }
}

/// Inline capacity of [`OwnedId`]: ids up to this many bytes of JSON text do not allocate.
const OWNED_ID_INLINE: usize = 24;

/// An id that outlives the request body: its canonical JSON text, inline when short.
///
/// Equality and hashing are on the JSON text, which is canonical (built only from a parsed
/// [`Id`] or the constructors here), so equal ids compare equal.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct OwnedId {
    text: SmallVec<[u8; OWNED_ID_INLINE]>,
}

impl OwnedId {
    /// A string id.
    #[cfg(test)]
    pub(crate) fn from_str_id(s: &str) -> Self {
        Id::Str(s).to_owned_id()
    }

    /// A numeric id.
    #[cfg(test)]
    pub(crate) fn from_i64(n: i64) -> Self {
        Id::Int(n).to_owned_id()
    }

    /// The id's JSON text, e.g. `7` or `"search-1"`.
    pub fn as_json(&self) -> &[u8] {
        &self.text
    }

    /// Whether the id is a JSON string (as opposed to a number).
    pub fn is_string(&self) -> bool {
        self.text.first() == Some(&b'"')
    }
}

impl fmt::Debug for OwnedId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "OwnedId({self})")
    }
}

impl fmt::Display for OwnedId {
    /// Writes the id's JSON text.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The text is built from `&str` and ASCII digits, so it is UTF-8.
        f.write_str(std::str::from_utf8(&self.text).unwrap_or("?"))
    }
}

impl From<Id<'_>> for OwnedId {
    fn from(id: Id<'_>) -> Self {
        id.to_owned_id()
    }
}

/// The id a writer puts in a message: a parsed id, an owned id, trusted JSON text, or `null`.
///
/// Writers take `impl Into<IdRef>`, so `Id`, `&Id`, `&OwnedId`, `&[u8]` (JSON text),
/// and `Option` of any of them (`None` → `null`) all work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IdRef<'a> {
    /// `"id": null` — the id could not be read.
    Null,
    /// A parsed id.
    Parsed(Id<'a>),
    /// JSON text written as is; the caller vouches that it is a valid JSON string or integer.
    Json(&'a [u8]),
}

impl IdRef<'_> {
    /// Appends the id's JSON text to `buf`.
    pub(crate) fn write_json(&self, buf: &mut BytesMut) {
        match self {
            IdRef::Null => buf.put_slice(b"null"),
            IdRef::Parsed(id) => id.write_json(buf),
            IdRef::Json(text) => buf.put_slice(text),
        }
    }
}

impl<'a> From<Id<'a>> for IdRef<'a> {
    fn from(id: Id<'a>) -> Self {
        IdRef::Parsed(id)
    }
}

impl<'a> From<&Id<'a>> for IdRef<'a> {
    fn from(id: &Id<'a>) -> Self {
        IdRef::Parsed(*id)
    }
}

impl<'a> From<&'a OwnedId> for IdRef<'a> {
    fn from(id: &'a OwnedId) -> Self {
        IdRef::Json(id.as_json())
    }
}

impl<'a> From<&'a [u8]> for IdRef<'a> {
    fn from(text: &'a [u8]) -> Self {
        IdRef::Json(text)
    }
}

impl<'a, const N: usize> From<&'a [u8; N]> for IdRef<'a> {
    fn from(text: &'a [u8; N]) -> Self {
        IdRef::Json(text)
    }
}

impl<'a, T: Into<IdRef<'a>>> From<Option<T>> for IdRef<'a> {
    fn from(id: Option<T>) -> Self {
        id.map_or(IdRef::Null, Into::into)
    }
}

/// Appends an integer's decimal text to a small vector, through a stack buffer.
fn push_int<N: fmt::Display>(text: &mut SmallVec<[u8; OWNED_ID_INLINE]>, n: N) {
    // The longest 64-bit integer, i64::MIN, has 20 characters.
    let mut digits = [0u8; 20];
    let mut cursor = &mut digits[..];
    let _ = std::io::Write::write_fmt(&mut cursor, format_args!("{n}"));
    let n_free = cursor.len();
    text.extend_from_slice(digits.get(..20 - n_free).unwrap_or_default());
}

/// Appends an integer's decimal text.
pub(crate) fn write_json_int<N: serde::Serialize>(buf: &mut BytesMut, n: N) {
    // Serializing an integer into a BytesMut cannot fail.
    let _ = serde_json::to_writer(buf.writer(), &n);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(id: Id<'_>, expected_json: &str) {
        let mut buf = BytesMut::new();
        id.write_json(&mut buf);
        assert_eq!(std::str::from_utf8(&buf).unwrap(), expected_json);
        assert_eq!(id.to_owned_id().as_json(), expected_json.as_bytes());
        assert_eq!(id.to_string(), expected_json);
    }

    #[test]
    fn ids_write_their_json_text() {
        check(Id::Int(0), "0");
        check(Id::Int(-1), "-1");
        check(Id::from_u64(9_007_199_254_740_993), "9007199254740993");
        check(Id::from_u64(u64::MAX), "18446744073709551615");
        check(Id::Int(i64::MIN), "-9223372036854775808");
        check(Id::Str("0"), "\"0\"");
        check(Id::Str("a\"b\\é"), "\"a\\\"b\\\\é\"");
        check(Id::Str("\n\u{1}"), "\"\\n\\u0001\"");
        check(Id::Str(""), "\"\"");
    }

    #[test]
    fn numbers_normalize() {
        assert_eq!(Id::from_u64(5), Id::Int(5));
        assert_eq!(Id::from_u64(u64::MAX), Id::UInt(u64::MAX));
        assert!(OwnedId::from_str_id("x").is_string());
        assert!(!OwnedId::from_i64(3).is_string());
    }

    #[test]
    fn id_ref_conversions() {
        let owned = OwnedId::from_str_id("s");
        let mut buf = BytesMut::new();
        IdRef::from(&owned).write_json(&mut buf);
        IdRef::from(None::<&OwnedId>).write_json(&mut buf);
        IdRef::from(Some(&b"7"[..])).write_json(&mut buf);
        IdRef::from(Id::Int(3)).write_json(&mut buf);
        assert_eq!(&buf[..], b"\"s\"null73");
    }
}
