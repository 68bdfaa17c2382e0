//! Small JSON writers into a `BytesMut`: string literals, raw tape values, JSON text as a
//! string. Nothing here allocates besides growing the buffer.
//!
//! Must not build value trees: the dispatcher writes results directly.

use bytes::{BufMut, BytesMut};
use simd_json::prelude::Writable;
use simd_json::tape::Value;

/// Appends `s` as a JSON string literal (escaping `"`, `\` and control characters).
pub(crate) fn put_str(out: &mut BytesMut, s: &str) {
    // Serializing a str into a BytesMut cannot fail.
    let _ = serde_json::to_writer(out.writer(), s);
}

/// Appends JSON text `text` (valid UTF-8 JSON) as a JSON string literal, e.g. for the text
/// content block that repeats a structured result. Invalid UTF-8 is replaced, never passed on.
pub(crate) fn put_json_text_as_str(out: &mut BytesMut, text: &[u8]) {
    out.reserve(text.len() + text.len() / 8 + 2);
    match std::str::from_utf8(text) {
        Ok(s) => put_str(out, s),
        Err(_) => put_str(out, &String::from_utf8_lossy(text)),
    }
}

/// Appends a tape value (a part of the request body) as compact JSON.
pub(crate) fn put_value(out: &mut BytesMut, value: Value<'_, '_>) {
    // Writing into a BytesMut cannot fail.
    let _ = value.write(&mut out.writer());
}

/// Appends an unsigned integer.
pub(crate) fn put_u64(out: &mut BytesMut, n: u64) {
    let _ = serde_json::to_writer(out.writer(), &n);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &[u8], expected: &str) {
        let mut out = BytesMut::new();
        put_json_text_as_str(&mut out, text);
        assert_eq!(std::str::from_utf8(&out).unwrap(), expected);
        let back: String = serde_json::from_slice(&out).unwrap();
        assert_eq!(back.as_bytes(), String::from_utf8_lossy(text).as_bytes());
    }

    #[test]
    fn json_text_becomes_a_string_literal() {
        check(br#"{"a":1}"#, r#""{\"a\":1}""#);
        check(b"[\"x\\\\y\"]", r#""[\"x\\\\y\"]""#);
        check(b"{\n \"a\": \"\t\"}", r#""{\n \"a\": \"\t\"}""#);
        check(b"null", r#""null""#);
        check("\"é\u{1}\"".as_bytes(), r#""\"é\u0001\"""#);
        check(b"\xff", "\"\u{fffd}\"");
    }
}
