//! `WWW-Authenticate` challenges (RFC 6750 §3, RFC 9728 §5.1) for 401 and 403 answers.
//!
//! Owns the header value format (MCP 2025-11-25, Authorization § Error Handling and § Scope
//! Challenge Handling). Must not decide statuses or bodies, and never includes anything taken from
//! the presented credential: the description is the error's fixed, safe text.

use bytes::BytesMut;
use http::HeaderValue;

use super::AuthError;

/// The challenge for `err`. `resource_metadata_url` is the endpoint's protected-resource metadata
/// URL ([`super::prm::metadata_url`]); `scope` the scopes the request needs (for a 403 include
/// the already-granted ones still needed, so a step-up does not lose them; when empty, the
/// error's missing scopes are named).
///
/// - no credential: `Bearer resource_metadata="…", scope="…"`
/// - rejected token: `Bearer error="invalid_token", error_description="…", resource_metadata="…"`
/// - insufficient scope: `Bearer error="insufficient_scope", scope="…", resource_metadata="…",
///   error_description="…"`
pub(crate) fn www_authenticate(
    err: &AuthError,
    resource_metadata_url: &str,
    scope: &[String],
) -> HeaderValue {
    let mut out = BytesMut::with_capacity(128 + resource_metadata_url.len());
    out.extend_from_slice(b"Bearer ");
    let mut first = true;
    match err {
        AuthError::InsufficientScope { required } => {
            param(&mut out, &mut first, "error", "insufficient_scope");
            let named = if scope.is_empty() { required } else { scope };
            scope_param(&mut out, &mut first, named);
            param(
                &mut out,
                &mut first,
                "resource_metadata",
                resource_metadata_url,
            );
            param(
                &mut out,
                &mut first,
                "error_description",
                &err.description(),
            );
        }
        AuthError::Invalid { .. } | AuthError::Expired | AuthError::Ambiguous => {
            let code = err.oauth_error().unwrap_or("invalid_token");
            param(&mut out, &mut first, "error", code);
            param(
                &mut out,
                &mut first,
                "error_description",
                &err.description(),
            );
            param(
                &mut out,
                &mut first,
                "resource_metadata",
                resource_metadata_url,
            );
            scope_param(&mut out, &mut first, scope);
        }
        AuthError::Missing | AuthError::JwksUnavailable => {
            param(
                &mut out,
                &mut first,
                "resource_metadata",
                resource_metadata_url,
            );
            scope_param(&mut out, &mut first, scope);
        }
    }
    // Every byte written is visible ASCII or a space (see `quoted`), so this cannot fail; the
    // fallback keeps a bare challenge rather than a panic path.
    HeaderValue::from_maybe_shared(out.freeze()).unwrap_or(HeaderValue::from_static("Bearer"))
}

fn scope_param(out: &mut BytesMut, first: &mut bool, scope: &[String]) {
    if scope.is_empty() {
        return;
    }
    let joined = scope.join(" ");
    param(out, first, "scope", &joined);
}

fn param(out: &mut BytesMut, first: &mut bool, name: &str, value: &str) {
    if !*first {
        out.extend_from_slice(b", ");
    }
    *first = false;
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b"=\"");
    quoted(out, value);
    out.extend_from_slice(b"\"");
}

/// Writes `value` as the inside of an RFC 9110 quoted-string: `"` and `\` are escaped, and bytes
/// a header cannot carry (controls, non-ASCII) become `?`.
fn quoted(out: &mut BytesMut, value: &str) {
    for b in value.bytes() {
        match b {
            b'"' | b'\\' => out.extend_from_slice(&[b'\\', b]),
            b' ' | 0x21..=0x7e => out.extend_from_slice(&[b]),
            _ => out.extend_from_slice(b"?"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PRM: &str =
        "https://rt.example.com/.well-known/oauth-protected-resource/runtime/t1/c1/mcp";

    fn check(err: &AuthError, scope: &[&str], expected: &str) {
        let scope: Vec<String> = scope.iter().map(|s| (*s).to_owned()).collect();
        let got = www_authenticate(err, PRM, &scope);
        assert_eq!(got.to_str().unwrap(), expected);
    }

    #[test]
    fn missing_credential() {
        check(
            &AuthError::Missing,
            &["mcp:tools"],
            &format!(r#"Bearer resource_metadata="{PRM}", scope="mcp:tools""#),
        );
        check(
            &AuthError::Missing,
            &[],
            &format!(r#"Bearer resource_metadata="{PRM}""#),
        );
    }

    #[test]
    fn rejected_token() {
        check(
            &AuthError::invalid("bad signature"),
            &[],
            &format!(
                r#"Bearer error="invalid_token", error_description="bad signature", resource_metadata="{PRM}""#
            ),
        );
        check(
            &AuthError::Expired,
            &["mcp:tools"],
            &format!(
                r#"Bearer error="invalid_token", error_description="credential expired", resource_metadata="{PRM}", scope="mcp:tools""#
            ),
        );
    }

    #[test]
    fn insufficient_scope() {
        let err = AuthError::InsufficientScope {
            required: vec!["mcp:tools.write".to_owned()],
        };
        check(
            &err,
            &["mcp:tools", "mcp:tools.write"],
            &format!(
                r#"Bearer error="insufficient_scope", scope="mcp:tools mcp:tools.write", resource_metadata="{PRM}", error_description="requires scope mcp:tools.write""#
            ),
        );
        // Without an explicit list the missing scopes are named.
        check(
            &err,
            &[],
            &format!(
                r#"Bearer error="insufficient_scope", scope="mcp:tools.write", resource_metadata="{PRM}", error_description="requires scope mcp:tools.write""#
            ),
        );
    }

    #[test]
    fn values_are_escaped() {
        let got = www_authenticate(&AuthError::Missing, "https://x/\"a\\b\r\né", &[]);
        assert_eq!(
            got.to_str().unwrap(),
            r#"Bearer resource_metadata="https://x/\"a\\b????""#
        );
    }
}
