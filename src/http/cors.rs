//! CORS for browser-based MCP clients: preflight answers and the headers added to actual
//! responses.
//!
//! Two policies. **Protected** routes (the MCP, legacy and REST endpoints) answer only origins the
//! [`super::guard`] accepts (the server's own or a configured one), echo that origin (never `*`),
//! never send `Access-Control-Allow-Credentials` (bearer tokens are not ambient credentials), and
//! expose the headers a client must read (`Mcp-Session-Id`, `WWW-Authenticate`,
//! `X-External-Correlation-Id`). **Public** routes (protected-resource metadata) are open to any
//! origin with `*` (the document is public, so browser clients can read it). Must not decide who
//! may call what: that is `auth`.

use http::header::{
    HeaderMap, HeaderValue, ACCESS_CONTROL_ALLOW_HEADERS, ACCESS_CONTROL_ALLOW_METHODS,
    ACCESS_CONTROL_ALLOW_ORIGIN, ACCESS_CONTROL_EXPOSE_HEADERS, ACCESS_CONTROL_MAX_AGE,
    ACCESS_CONTROL_REQUEST_HEADERS, ORIGIN, VARY,
};
use http::{Response, StatusCode};

use super::guard::Guard;
use super::response::{self, Body};
use super::Error;

/// Request headers a browser client of the MCP endpoints may send: the fixed ones, plus any
/// `Mcp-Param-*` routing header of the stateless era (matched by prefix).
pub(crate) const ALLOWED_REQUEST_HEADERS: [&str; 9] = [
    "authorization",
    "x-api-key",
    "content-type",
    "accept",
    "mcp-protocol-version",
    "mcp-session-id",
    "last-event-id",
    "mcp-method",
    "mcp-name",
];

/// The prefix of the stateless era's per-parameter routing headers.
pub(crate) const PARAM_HEADER_PREFIX: &str = "mcp-param-";

/// Response headers a browser client may read.
pub(crate) const EXPOSED_HEADERS: &str =
    "Mcp-Session-Id, WWW-Authenticate, X-External-Correlation-Id, X-Execution-Id";

/// How long a browser may cache a preflight answer, in seconds.
pub(crate) const PREFLIGHT_MAX_AGE_SECS: &str = "600";

/// Which CORS policy a route has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Policy {
    /// Allowed origins only, echoed.
    Protected,
    /// Any origin, `*`.
    Public,
}

/// Answers an `OPTIONS` preflight for a route whose methods are `allow`.
///
/// Protected routes: an origin the guard refuses → 403 (no CORS headers, so the browser blocks
/// the request); a missing `Origin` → 204 with `Allow` only (not a CORS request). The `Host`
/// check is the caller's (it runs before this, on protected routes only). Requested headers
/// are echoed when each one is allowed; otherwise only the allowed list is returned and the
/// browser refuses the actual request.
pub(crate) fn preflight(
    headers: &HeaderMap,
    guard: &Guard,
    policy: Policy,
    allow: &'static str,
) -> Result<Response<Body>, Error> {
    let mut answer = response::empty(StatusCode::NO_CONTENT);
    let out = answer.headers_mut();
    out.insert(http::header::ALLOW, HeaderValue::from_static(allow));
    let Some(origin) = headers.get(ORIGIN) else {
        return Ok(answer);
    };
    match policy {
        Policy::Public => {
            out.insert(ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
        }
        Policy::Protected => {
            guard.check_origin(headers)?;
            out.insert(ACCESS_CONTROL_ALLOW_ORIGIN, origin.clone());
            out.insert(VARY, HeaderValue::from_static("Origin"));
        }
    }
    out.insert(
        ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static(allow),
    );
    out.insert(
        ACCESS_CONTROL_ALLOW_HEADERS,
        allowed_headers(headers.get(ACCESS_CONTROL_REQUEST_HEADERS)),
    );
    out.insert(
        ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from_static(PREFLIGHT_MAX_AGE_SECS),
    );
    Ok(answer)
}

/// Adds the CORS headers of an actual (non-preflight) response. `origin` is the request's
/// `Origin` when it was accepted (the guard runs before any handler, so a refused origin never
/// gets here); `None` adds nothing.
pub(crate) fn decorate(response: &mut Response<Body>, origin: Option<HeaderValue>, policy: Policy) {
    let Some(origin) = origin else {
        return;
    };
    let headers = response.headers_mut();
    match policy {
        Policy::Public => {
            headers.insert(ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
        }
        Policy::Protected => {
            headers.insert(ACCESS_CONTROL_ALLOW_ORIGIN, origin);
            headers.append(VARY, HeaderValue::from_static("Origin"));
        }
    }
    headers.insert(
        ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static(EXPOSED_HEADERS),
    );
}

/// The `Access-Control-Allow-Headers` value: the requested list echoed when every name in it is
/// allowed (so `Mcp-Param-*` names work without a wildcard, which would not cover
/// `Authorization`), else the fixed list.
fn allowed_headers(requested: Option<&HeaderValue>) -> HeaderValue {
    const FIXED: &str = "Authorization, X-API-Key, Content-Type, Accept, MCP-Protocol-Version, \
                         Mcp-Session-Id, Last-Event-ID, Mcp-Method, Mcp-Name";
    let Some(requested) = requested.and_then(|v| v.to_str().ok()) else {
        return HeaderValue::from_static(FIXED);
    };
    let all_allowed = requested
        .split(',')
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .all(is_allowed_request_header);
    if all_allowed && !requested.trim().is_empty() {
        HeaderValue::from_str(requested).unwrap_or(HeaderValue::from_static(FIXED))
    } else {
        HeaderValue::from_static(FIXED)
    }
}

/// Whether a browser may send request header `name` (case-insensitive).
pub(crate) fn is_allowed_request_header(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    ALLOWED_REQUEST_HEADERS.contains(&lower.as_str())
        || (lower.len() > PARAM_HEADER_PREFIX.len() && lower.starts_with(PARAM_HEADER_PREFIX))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(origin: Option<&'static str>, requested: Option<&'static str>) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(http::header::HOST, HeaderValue::from_static("rt.example"));
        if let Some(origin) = origin {
            headers.insert(ORIGIN, HeaderValue::from_static(origin));
        }
        if let Some(requested) = requested {
            headers.insert(
                ACCESS_CONTROL_REQUEST_HEADERS,
                HeaderValue::from_static(requested),
            );
        }
        headers
    }

    fn guard(allowed_origins: &[&str]) -> Guard {
        let guard = Guard::new(
            "https://rt.example",
            ([127, 0, 0, 1], 8080).into(),
            allowed_origins.iter().map(|s| s.to_string()).collect(),
            &[],
        );
        guard.expect("guard")
    }

    #[test]
    fn protected_preflight_echoes_allowed_origins_only() {
        let ok = preflight(
            &request(
                Some("https://app.example"),
                Some("authorization, mcp-session-id, Mcp-Param-Region"),
            ),
            &guard(&["https://app.example"]),
            Policy::Protected,
            "POST, GET, DELETE",
        );
        let Ok(ok) = ok else { panic!("refused") };
        assert_eq!(ok.status(), StatusCode::NO_CONTENT);
        let h = ok.headers();
        assert_eq!(h[ACCESS_CONTROL_ALLOW_ORIGIN], "https://app.example");
        assert_eq!(
            h[ACCESS_CONTROL_ALLOW_HEADERS],
            "authorization, mcp-session-id, Mcp-Param-Region"
        );
        assert_eq!(h[ACCESS_CONTROL_ALLOW_METHODS], "POST, GET, DELETE");
        assert!(h
            .get(http::header::ACCESS_CONTROL_ALLOW_CREDENTIALS)
            .is_none());

        let refused = preflight(
            &request(Some("https://evil.example"), None),
            &guard(&["https://app.example"]),
            Policy::Protected,
            "POST, GET, DELETE",
        );
        assert!(matches!(refused, Err(Error::Forbidden(_))));
    }

    #[test]
    fn unknown_requested_header_gets_the_fixed_list() {
        let value = allowed_headers(Some(&HeaderValue::from_static("authorization, x-evil")));
        assert!(value
            .to_str()
            .is_ok_and(|v| v.starts_with("Authorization,")));
        assert!(!is_allowed_request_header("mcp-param-"));
        assert!(is_allowed_request_header("Last-Event-ID"));
    }

    #[test]
    fn public_preflight_is_open() {
        let ok = preflight(
            &request(Some("https://anyone.example"), None),
            &guard(&[]),
            Policy::Public,
            "GET",
        );
        let Ok(ok) = ok else { panic!("refused") };
        assert_eq!(ok.headers()[ACCESS_CONTROL_ALLOW_ORIGIN], "*");
    }

    #[test]
    fn decorate_exposes_session_and_challenge_headers() {
        let mut answer = response::empty(StatusCode::OK);
        decorate(
            &mut answer,
            Some(HeaderValue::from_static("https://app.example")),
            Policy::Protected,
        );
        assert_eq!(
            answer.headers()[ACCESS_CONTROL_ALLOW_ORIGIN],
            "https://app.example"
        );
        assert!(answer.headers()[ACCESS_CONTROL_EXPOSE_HEADERS]
            .to_str()
            .is_ok_and(|v| v.contains("Mcp-Session-Id") && v.contains("WWW-Authenticate")));
        let mut plain = response::empty(StatusCode::OK);
        decorate(&mut plain, None, Policy::Protected);
        assert!(plain.headers().get(ACCESS_CONTROL_ALLOW_ORIGIN).is_none());
    }
}
