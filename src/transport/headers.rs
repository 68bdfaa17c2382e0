//! The stateless-era routing headers (MCP 2026-07-28, Streamable HTTP § Request Metadata,
//! SEP-2243): reading `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name`, decoding the Base64
//! sentinel form `=?base64?…?=`, and comparing them with the body.
//!
//! Pure functions over a `HeaderMap`; every failure is a [`HeaderMismatch`] (answered -32020
//! with HTTP 400 by the transport). Must not know MCP methods beyond the header names.

use std::borrow::Cow;

use base64::Engine as _;
use http::{HeaderMap, HeaderName};

/// Prefix of a Base64-encoded header value.
const SENTINEL_PREFIX: &str = "=?base64?";
/// Suffix of a Base64-encoded header value.
const SENTINEL_SUFFIX: &str = "?=";

/// Why a routing header does not agree with the body (-32020 HeaderMismatch, HTTP 400): a
/// leaf type, so the error table can name it without knowing this module.
pub(crate) use crate::protocol::HeaderMismatch;

/// The (decoded) value of a single-valued header; `Ok(None)` when absent.
///
/// SEP-2243: "If a value is not plain visible ASCII … it is sent as `=?base64?<b64(utf8)>?=`.
/// The server MUST decode before comparing."
pub(crate) fn header_text<'h>(
    headers: &'h HeaderMap,
    name: &HeaderName,
    label: &'static str,
) -> Result<Option<Cow<'h, str>>, HeaderMismatch> {
    let mut values = headers.get_all(name).iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(HeaderMismatch::Duplicate(label));
    }
    // `to_str` accepts visible ASCII, space and tab only.
    let text = value
        .to_str()
        .map_err(|_| HeaderMismatch::Malformed(label))?;
    decode_sentinel(text)
        .map(Some)
        .ok_or(HeaderMismatch::Malformed(label))
}

/// Decodes `=?base64?…?=`; any other text is returned as is. `None` when the sentinel's payload
/// is not Base64 of UTF-8.
pub(crate) fn decode_sentinel(text: &str) -> Option<Cow<'_, str>> {
    let Some(inner) = text
        .strip_prefix(SENTINEL_PREFIX)
        .and_then(|rest| rest.strip_suffix(SENTINEL_SUFFIX))
    else {
        return Some(Cow::Borrowed(text));
    };
    let engine = base64::engine::general_purpose::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
    );
    let bytes = engine.decode(inner).ok()?;
    String::from_utf8(bytes).ok().map(Cow::Owned)
}

/// Checks that the header `name` is present once and (decoded) equals `expected`.
pub(crate) fn expect_header(
    headers: &HeaderMap,
    name: &HeaderName,
    label: &'static str,
    expected: &str,
) -> Result<(), HeaderMismatch> {
    match header_text(headers, name, label)? {
        None => Err(HeaderMismatch::Missing(label)),
        Some(value) if value == expected => Ok(()),
        Some(_) => Err(HeaderMismatch::Mismatch(label)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(values: &[&[u8]], expected: &str, want: Result<(), HeaderMismatch>) {
        let name = HeaderName::from_static("mcp-name");
        let mut headers = HeaderMap::new();
        for value in values {
            let Ok(value) = http::HeaderValue::from_bytes(value) else {
                panic!("bad test value")
            };
            headers.append(name.clone(), value);
        }
        assert_eq!(
            expect_header(&headers, &name, "Mcp-Name", expected),
            want,
            "{values:?}"
        );
    }

    const OK: Result<(), HeaderMismatch> = Ok(());
    const MISSING: Result<(), HeaderMismatch> = Err(HeaderMismatch::Missing("Mcp-Name"));
    const DUP: Result<(), HeaderMismatch> = Err(HeaderMismatch::Duplicate("Mcp-Name"));
    const BAD: Result<(), HeaderMismatch> = Err(HeaderMismatch::Malformed("Mcp-Name"));
    const DIFF: Result<(), HeaderMismatch> = Err(HeaderMismatch::Mismatch("Mcp-Name"));

    #[test]
    fn table() {
        check(&[b"echo"], "echo", OK);
        check(&[], "echo", MISSING);
        check(&[b"echo", b"echo"], "echo", DUP);
        check(&[b"Echo"], "echo", DIFF);
        check(&[b"echo "], "echo", DIFF);
        // "café" as the sentinel, with and without padding.
        check(&[b"=?base64?Y2Fmw6k=?="], "café", OK);
        check(&[b"=?base64?Y2Fmw6k?="], "café", OK);
        check(&[b"=?base64?Y2Fmw6k=?="], "cafe", DIFF);
        // A value that itself looks like the sentinel travels encoded.
        check(&[b"=?base64?PT9iYXNlNjQ/eD89?="], "=?base64?x?=", OK);
        check(&[b"=?base64?!!!?="], "x", BAD);
        // Base64 of bytes that are not UTF-8.
        check(&[b"=?base64?/w==?="], "x", BAD);
        // Raw non-ASCII bytes are not a legal plain value.
        check(&[b"caf\xc3\xa9"], "café", BAD);
        // Only the exact lowercase sentinel is decoded.
        check(&[b"=?BASE64?eA==?="], "x", DIFF);
        check(&[b"=?base64?eA==?="], "x", OK);
    }
}
