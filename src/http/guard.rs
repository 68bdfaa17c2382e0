//! Request guards that are HTTP-level and surface-independent: the `Origin` check.
//!
//! MCP's Streamable HTTP transport (2025-11-25 §"Security Warning"): "Servers MUST validate the
//! `Origin` header on all incoming connections to prevent DNS rebinding attacks … If the `Origin`
//! header is present and invalid, servers MUST respond with HTTP 403 Forbidden." Must not know MCP
//! methods.

use http::header::{HeaderMap, HOST, ORIGIN};
use http::Uri;

use super::Error;

/// Accepts a request whose `Origin` is absent, is the server's own origin (its authority equals
/// the request's `Host`, or `:authority` on h2, default ports normalised), or is listed in
/// `allowed` (compared case-insensitively, e.g. `https://app.example.com`). Anything else → 403.
pub fn check_origin(headers: &HeaderMap, uri: &Uri, allowed: &[String]) -> Result<(), Error> {
    let mut origins = headers.get_all(ORIGIN).iter();
    let Some(origin) = origins.next() else {
        return Ok(());
    };
    if origins.next().is_some() {
        return Err(Error::Forbidden("more than one Origin header".into()));
    }
    let origin = origin.as_bytes();
    if allowed
        .iter()
        .any(|allowed| allowed.as_bytes().eq_ignore_ascii_case(origin))
    {
        return Ok(());
    }
    let host = headers
        .get(HOST)
        .map(|h| h.as_bytes())
        .or_else(|| uri.authority().map(|a| a.as_str().as_bytes()));
    if let Some(host) = host {
        if is_same_origin(origin, host) {
            return Ok(());
        }
    }
    Err(Error::Forbidden("origin not allowed".into()))
}

/// Whether `origin` (`scheme://host[:port]`) names the authority `host` (`host[:port]`).
fn is_same_origin(origin: &[u8], host: &[u8]) -> bool {
    let (authority, default_port): (&[u8], &[u8]) =
        if let Some(rest) = strip_prefix_ignore_case(origin, b"http://") {
            (rest, b":80")
        } else if let Some(rest) = strip_prefix_ignore_case(origin, b"https://") {
            (rest, b":443")
        } else {
            return false;
        };
    let strip_default = |authority: &'_ [u8]| -> Vec<u8> {
        let lower = authority.to_ascii_lowercase();
        match lower.strip_suffix(default_port) {
            Some(without) => without.to_vec(),
            None => lower,
        }
    };
    !authority.is_empty() && strip_default(authority) == strip_default(host)
}

fn strip_prefix_ignore_case<'a>(bytes: &'a [u8], prefix: &[u8]) -> Option<&'a [u8]> {
    let head = bytes.get(..prefix.len())?;
    if head.eq_ignore_ascii_case(prefix) {
        bytes.get(prefix.len()..)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn check(origin: Option<&'static str>, host: Option<&'static str>, allowed: &[&str], ok: bool) {
        let mut headers = HeaderMap::new();
        if let Some(origin) = origin {
            headers.insert(ORIGIN, HeaderValue::from_static(origin));
        }
        if let Some(host) = host {
            headers.insert(HOST, HeaderValue::from_static(host));
        }
        let allowed: Vec<String> = allowed.iter().map(|s| s.to_string()).collect();
        let got = check_origin(&headers, &Uri::from_static("/x"), &allowed);
        assert_eq!(
            got.is_ok(),
            ok,
            "origin {origin:?} host {host:?} allowed {allowed:?}"
        );
        if let Err(err) = got {
            assert_eq!(err.status(), http::StatusCode::FORBIDDEN);
        }
    }

    #[test]
    fn table() {
        check(None, Some("localhost:8080"), &[], true);
        check(
            Some("http://localhost:8080"),
            Some("localhost:8080"),
            &[],
            true,
        );
        check(
            Some("HTTP://LocalHost:8080"),
            Some("localhost:8080"),
            &[],
            true,
        );
        check(
            Some("http://example.com"),
            Some("example.com:80"),
            &[],
            true,
        );
        check(
            Some("https://example.com:443"),
            Some("example.com"),
            &[],
            true,
        );
        check(
            Some("https://example.com"),
            Some("example.com:80"),
            &[],
            false,
        );
        check(Some("http://evil.com"), Some("localhost:8080"), &[], false);
        check(
            Some("http://localhost:8081"),
            Some("localhost:8080"),
            &[],
            false,
        );
        check(Some("null"), Some("localhost:8080"), &[], false);
        check(Some("http://"), Some(""), &[], false);
        check(Some("http://localhost:8080"), None, &[], false);
        check(
            Some("https://app.example.com"),
            Some("localhost"),
            &["https://app.example.com"],
            true,
        );
        check(
            Some("https://APP.example.com"),
            Some("localhost"),
            &["https://app.example.com"],
            true,
        );
        check(
            Some("https://other.example.com"),
            Some("localhost"),
            &["https://app.example.com"],
            false,
        );
        check(Some("null"), Some("localhost"), &["null"], true);
    }

    #[test]
    fn h2_authority_counts_as_host() {
        let mut headers = HeaderMap::new();
        headers.insert(ORIGIN, HeaderValue::from_static("http://127.0.0.1:9"));
        let uri = Uri::from_static("http://127.0.0.1:9/runtime/a/b/mcp");
        assert!(check_origin(&headers, &uri, &[]).is_ok());
    }

    #[test]
    fn two_origins_are_refused() {
        let mut headers = HeaderMap::new();
        headers.append(ORIGIN, HeaderValue::from_static("http://a"));
        headers.append(ORIGIN, HeaderValue::from_static("http://a"));
        headers.insert(HOST, HeaderValue::from_static("a"));
        assert!(check_origin(&headers, &Uri::from_static("/"), &[]).is_err());
    }
}
