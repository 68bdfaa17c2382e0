//! The one JSON string writer: a `&str` as a quoted JSON string literal (RFC 8259 §7).
//!
//! Owns [`put_str`] and [`put_json_text_as_str`]; every hand-written JSON body (`jsonrpc/`,
//! `rescue.rs`, `mcp/`, `bos/`, `federation/`, `invoke/translate.rs`, `audit/record.rs`) writes
//! its strings through them. The escaping is byte-identical to `serde_json`'s (`"` and `\`
//! escaped, `\b \f \n \r \t` short, other control characters as lowercase `\u00XX`,
//! everything else, DEL and U+2028 included, copied as is), which the tests check. A leaf:
//! imports nothing from the crate, allocates nothing beyond growing the buffer.

use bytes::BufMut;

/// Marks what each byte becomes: `0` copied, `b'u'` as `\u00XX`, otherwise the letter after
/// the backslash.
const ESCAPE: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut byte = 0;
    while byte < 0x20 {
        table[byte] = b'u';
        byte += 1;
    }
    table[0x08] = b'b';
    table[0x09] = b't';
    table[0x0A] = b'n';
    table[0x0C] = b'f';
    table[0x0D] = b'r';
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table
};

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Appends `s` as a JSON string literal.
#[inline]
pub(crate) fn put_str<B: BufMut + ?Sized>(out: &mut B, s: &str) {
    let bytes = s.as_bytes();
    out.put_u8(b'"');
    let mut start = 0;
    for (idx, &byte) in bytes.iter().enumerate() {
        let escape = ESCAPE[usize::from(byte)];
        if escape == 0 {
            continue;
        }
        if start < idx {
            out.put_slice(bytes.get(start..idx).unwrap_or_default());
        }
        if escape == b'u' {
            out.put_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(byte >> 4)],
                HEX[usize::from(byte & 0xF)],
            ]);
        } else {
            out.put_slice(&[b'\\', escape]);
        }
        start = idx + 1;
    }
    if start < bytes.len() {
        out.put_slice(bytes.get(start..).unwrap_or_default());
    }
    out.put_u8(b'"');
}

/// Appends JSON text `text` (valid UTF-8 JSON) as a JSON string literal, e.g. for the text
/// content block that repeats a structured result. Invalid UTF-8 is replaced, never passed on.
pub(crate) fn put_json_text_as_str(out: &mut bytes::BytesMut, text: &[u8]) {
    out.reserve(text.len() + text.len() / 8 + 2);
    match std::str::from_utf8(text) {
        Ok(s) => put_str(out, s),
        Err(_) => put_str(out, &String::from_utf8_lossy(text)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;
    use simd_json::prelude::Writable;

    /// Strings covering every escape class: quotes, backslash, each control character, DEL,
    /// multi-byte UTF-8, U+2028/U+2029, escapes at the start, the end and back to back.
    fn corpus() -> Vec<String> {
        let mut corpus: Vec<String> = [
            "",
            "plain",
            "\"",
            "\\",
            "a\"b\\c",
            "\"\"\\\\",
            "\u{7f}",
            "é",
            "日本語",
            "emoji 🦀 here",
            "\u{2028}\u{2029}",
            "line\nbreak\r\n\ttab",
            "\u{0}start",
            "end\u{1f}",
            "</script>",
            "{\"a\":[1,\"x\\\\y\"]}",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        corpus.push((0u8..0x20).map(char::from).collect());
        corpus.push((0u32..0x300).filter_map(char::from_u32).collect());
        corpus
    }

    #[test]
    fn escaping_is_byte_identical_to_serde_json() {
        for text in corpus() {
            let expected = serde_json::to_string(&text).unwrap();
            let mut bytes_mut = BytesMut::new();
            put_str(&mut bytes_mut, &text);
            assert_eq!(&bytes_mut[..], expected.as_bytes(), "{text:?}");
            let mut vec = Vec::new();
            put_str(&mut vec, &text);
            assert_eq!(vec, expected.as_bytes(), "{text:?}");
            // `invoke/translate.rs` wrote member names through simd-json before: same bytes.
            let simd = simd_json::BorrowedValue::String(text.as_str().into()).encode();
            assert_eq!(simd, expected, "{text:?}");
        }
    }

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
