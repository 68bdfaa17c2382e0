//! Request failures, each variant named by what went wrong, and [`Error::into_response`], the
//! one function that turns every one of them into a response.
//!
//! Later layers (access, transport, REST, admin) convert their own errors into these variants
//! rather than building error responses themselves. The status and the JSON-RPC code of each
//! variant come from the one table, [`crate::rescue::classify`] (through [`Error::failure`]);
//! the body is written by the one error writer, [`crate::rescue::write_error`]. The table lives
//! below `http/` because `mcp/` needs it too (an MCP method error is answered in-band with the
//! same codes); `http/` passes the era along as the leaf [`crate::protocol::Era`]. Must not know
//! MCP methods: a method name is data in a message here, never a branch.

use std::borrow::Cow;

use bytes::{Bytes, BytesMut};
use http::header::{HeaderValue, ALLOW, CONTENT_TYPE, RETRY_AFTER, WWW_AUTHENTICATE};
use http::Response;
#[cfg(test)]
use http::StatusCode;

use super::response::{Body, APPLICATION_JSON};
use crate::jsonrpc::OwnedId;
use crate::protocol::{Era, HeaderMismatch};
use crate::rescue::{self, Failure, SessionCap};

/// Why a request was refused or failed. Variants that can happen after the body was parsed
/// carry the JSON-RPC id (echoed verbatim in the error body); the rest answer with `"id": null`.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    /// No route for this path (also: a path segment that fails validation).
    #[error("not found")]
    NotFound,
    /// The path exists but not for this method; `allow` lists the methods that do.
    #[error("method not allowed")]
    MethodNotAllowed {
        /// The `Allow` header value, e.g. `"POST"`.
        allow: &'static str,
    },
    /// `Accept` excludes every type this endpoint can answer with.
    #[error("not acceptable: {0}")]
    NotAcceptable(&'static str),
    /// `Content-Type` is missing or not one this endpoint reads.
    #[error("unsupported media type: {0}")]
    UnsupportedMediaType(&'static str),
    /// The body is larger than the configured limit.
    #[error("request body exceeds {limit} bytes")]
    PayloadTooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// The request body stopped arriving: no chunk within the body read timeout (408). On
    /// HTTP/1 the connection closes after the answer (the rest of the body is never read).
    #[error("request body stalled: no data for {read_timeout:?}")]
    BodyTimeout {
        /// The body read timeout.
        read_timeout: std::time::Duration,
    },
    /// Reading the request body failed (the peer reset or sent a malformed chunk).
    #[error("failed to read request body: {0}")]
    BodyRead(String),
    /// A malformed request at the HTTP level (e.g. contradicting credentials).
    #[error("bad request: {0}")]
    BadRequest(Cow<'static, str>),
    /// No usable credential; `challenge` becomes `WWW-Authenticate`.
    #[error("unauthorized: {message}")]
    Unauthorized {
        /// The `WWW-Authenticate` header value, e.g. `Bearer resource_metadata="…"`.
        challenge: Option<HeaderValue>,
        /// Why, safe to show the client (never the credential itself).
        message: Cow<'static, str>,
    },
    /// A valid credential without a scope the operation needs: 403 with a `WWW-Authenticate:
    /// Bearer error="insufficient_scope", scope="…"` challenge so the client can step up, and
    /// `data: {"oauth_error":"insufficient_scope"}`.
    #[error("insufficient scope: {message}")]
    InsufficientScope {
        /// The `WWW-Authenticate` header value.
        challenge: HeaderValue,
        /// Which scope is missing, safe to show.
        message: Cow<'static, str>,
    },
    /// A per-caller or per-session limit is reached (e.g. streams per session): 429.
    #[error("too many requests: {0}")]
    TooManyRequests(Cow<'static, str>),
    /// A rate limit refused the call, or the source failed authentication too often: 429 with
    /// `Retry-After` (whole seconds, rounded up) and `data: {"retry_after_ms":…[,"rule":…]}`.
    #[error("rate limited: {message}")]
    RateLimited {
        /// Which limit, safe to show.
        message: Cow<'static, str>,
        /// How long until a call would pass.
        retry_after: std::time::Duration,
        /// The `[[tenant.rate_limit]]` id, when a rule refused.
        rule: Option<std::sync::Arc<str>>,
        /// The request id.
        id: Option<OwnedId>,
    },
    /// Authenticated but not allowed, or a disallowed `Origin`.
    #[error("forbidden: {0}")]
    Forbidden(Cow<'static, str>),
    /// A `Host` this server does not answer for (DNS-rebinding protection): 421, with the same
    /// server-error code as the 403 `Origin` refusal.
    #[error("misdirected request: {0}")]
    MisdirectedRequest(Cow<'static, str>),
    /// A state conflict (e.g. a second concurrent stream for a session).
    #[error("conflict: {0}")]
    Conflict(Cow<'static, str>),
    /// The server cannot serve this now (draining, overloaded, dependency down).
    #[error("unavailable: {0}")]
    Unavailable(Cow<'static, str>),
    /// A downstream answered with something unusable.
    #[error("bad gateway: {message}")]
    BadGateway {
        /// What went wrong, safe to show the client (no downstream details or credentials).
        message: Cow<'static, str>,
        /// The request id.
        id: Option<OwnedId>,
    },
    /// A SOAP downstream answered with a fault: 502 with the fault (`{faultcode,
    /// faultstring, detail}`) as the error's `data`.
    #[error("bad gateway: {message}")]
    DownstreamFault {
        /// The fault's short text (`SOAP fault Client: …`), the service's own message.
        message: String,
        /// The fault as JSON.
        fault: Bytes,
    },
    /// A downstream did not answer in time.
    #[error("gateway timeout: {message}")]
    GatewayTimeout {
        /// What timed out, safe to show the client.
        message: Cow<'static, str>,
        /// The request id.
        id: Option<OwnedId>,
    },
    /// A bug or unexpected failure on our side.
    #[error("internal error")]
    Internal,

    // === tenant-scoped surfaces ===
    /// The path names no configured tenant or client application (404).
    #[error("unknown tenant or client application")]
    UnknownClient,
    /// The REST path or body names no tool of the client's toolset (404).
    #[error("unknown tool")]
    UnknownTool,
    /// REST arguments that are not valid (-32602 on 400); the message says why.
    #[error("{0}")]
    InvalidArguments(Cow<'static, str>),
    /// `/admin/reload` refused the new configuration (422); the report lists every problem.
    #[error("reload refused, current catalog kept:\n{0}")]
    ReloadRefused(String),

    // === sessions ===
    /// "A session id the server does not recognise … is always answered with HTTP 404, which
    /// tells the client to initialize afresh": unknown, expired, deleted or another owner's.
    #[error("session not found")]
    SessionNotFound,
    /// A session is required and the request named none (400); says where the id was
    /// expected, e.g. `"the Mcp-Session-Id header"`.
    #[error("{0} is required")]
    SessionRequired(&'static str),
    /// A session cap refused a new session, with `data` naming the cap and its limit, e.g.
    /// `{"cap":"sessions_per_caller","limit":100}`, so a client can tell its own limit (429:
    /// end one of its sessions) from the tenant's (503: retry later).
    #[error("{}", cap_message(*cap))]
    SessionCapReached {
        /// Which cap.
        cap: SessionCap,
        /// Its configured limit.
        limit: usize,
    },
    /// A legacy session's stream is not being read: its bounded outbound queue has no room for
    /// the answer, so nothing runs (503).
    #[error("the session's stream is not being read: its outbound queue is full")]
    StreamQueueFull {
        /// The request id.
        id: Option<OwnedId>,
    },

    // === JSON-RPC messages ===
    /// The body is not JSON (-32700 on 400).
    #[error("{message}")]
    #[allow(clippy::enum_variant_names)] // the name the parser and its tests use
    ParseError {
        /// Why, from the parser.
        message: &'static str,
        /// Always `None`: no id can be read from a body that is not JSON.
        id: Option<OwnedId>,
    },
    /// The body is JSON but not a valid request (-32600 on 400).
    #[error("{message}")]
    InvalidRequest {
        /// Why, from the parser.
        message: &'static str,
        /// The request id when it could be read.
        id: Option<OwnedId>,
    },

    // === MCP protocol rules ===
    /// The handshake era's `MCP-Protocol-Version` header names a version this runtime does
    /// not implement: 400 with no id, whatever the body (MCP 2025-11-25, Transports, "Protocol
    /// Version Header": "the server MUST respond with 400 Bad Request").
    #[error("bad request: unsupported MCP-Protocol-Version")]
    UnsupportedVersionHeader,
    /// A stateless-era `_meta` version this runtime does not implement: -32022 on 400 with
    /// `data: {supported, requested}`.
    #[error("unsupported protocol version {requested}")]
    UnsupportedVersion {
        /// The version the request named (bounded, see `jsonrpc::echo`).
        requested: String,
        /// The request id.
        id: Option<OwnedId>,
    },
    /// A stateless-era routing header (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`)
    /// disagrees with the body: -32020 on 400.
    #[error("{mismatch}")]
    HeaderMismatch {
        /// Which header, and how.
        mismatch: HeaderMismatch,
        /// The request id.
        id: Option<OwnedId>,
    },
    /// The stateless-era `_meta` envelope is absent or malformed (-32602 on 400).
    #[error("{message}")]
    InvalidMeta {
        /// What is wrong.
        message: Cow<'static, str>,
        /// The request id.
        id: Option<OwnedId>,
    },
    /// A required stateless-era `_meta` key is missing (-32602 on 400).
    #[error("missing required _meta key {key}")]
    MissingMeta {
        /// The key.
        key: &'static str,
        /// The request id.
        id: Option<OwnedId>,
    },
    /// An unknown method (-32601): 404 in the stateless era, 200 in the handshake era.
    #[error("method not found: {method}")]
    MethodNotFound {
        /// The method the request named.
        method: String,
        /// The request's era (decides the status).
        era: Era,
        /// The request id.
        id: Option<OwnedId>,
    },
}

/// Milliseconds, rounded up (a refusal never says "retry in 0 ms" while the bucket is empty).
fn retry_after_ms(retry_after: std::time::Duration) -> u64 {
    u64::try_from(retry_after.as_micros().div_ceil(1000)).unwrap_or(u64::MAX)
}

/// The message of a session cap refusal.
fn cap_message(cap: SessionCap) -> &'static str {
    match cap {
        SessionCap::Tenant => "the tenant's session limit is reached",
        SessionCap::Caller => {
            "this caller's session limit is reached; end a session (DELETE) or let one expire"
        }
    }
}

impl Error {
    /// What went wrong, for the one table ([`rescue::classify`]).
    pub(crate) fn failure(&self) -> Failure {
        match self {
            Error::NotFound => Failure::NotFound,
            Error::MethodNotAllowed { .. } => Failure::MethodNotAllowed,
            Error::NotAcceptable(_) => Failure::NotAcceptable,
            Error::UnsupportedMediaType(_) => Failure::UnsupportedMediaType,
            Error::PayloadTooLarge { .. } => Failure::PayloadTooLarge,
            Error::BodyTimeout { .. } => Failure::BodyTimeout,
            Error::BodyRead(_) => Failure::BodyRead,
            Error::BadRequest(_) => Failure::BadRequest,
            Error::Unauthorized { .. } => Failure::Unauthorized,
            Error::InsufficientScope { .. } => Failure::InsufficientScope,
            Error::TooManyRequests(_) | Error::RateLimited { .. } => Failure::TooManyRequests,
            Error::Forbidden(_) => Failure::Forbidden,
            Error::MisdirectedRequest(_) => Failure::MisdirectedRequest,
            Error::Conflict(_) => Failure::Conflict,
            Error::Unavailable(_) => Failure::Unavailable,
            Error::BadGateway { .. } | Error::DownstreamFault { .. } => Failure::BadGateway,
            Error::GatewayTimeout { .. } => Failure::GatewayTimeout,
            Error::Internal => Failure::Internal,
            Error::UnknownClient => Failure::UnknownClient,
            Error::UnknownTool => Failure::UnknownTool,
            Error::InvalidArguments(_) => Failure::InvalidArguments,
            Error::ReloadRefused(_) => Failure::ReloadRefused,
            Error::SessionNotFound => Failure::SessionNotFound,
            Error::SessionRequired(_) => Failure::SessionRequired,
            Error::SessionCapReached { cap, .. } => Failure::SessionCapReached(*cap),
            Error::StreamQueueFull { .. } => Failure::StreamQueueFull,
            Error::ParseError { .. } => Failure::ParseError,
            Error::InvalidRequest { .. } => Failure::InvalidRequest,
            Error::UnsupportedVersionHeader => Failure::UnsupportedVersion(Era::Handshake),
            Error::UnsupportedVersion { .. } => Failure::UnsupportedVersion(Era::Stateless),
            Error::HeaderMismatch { .. } => Failure::HeaderMismatch,
            Error::InvalidMeta { .. } => Failure::InvalidMeta,
            Error::MissingMeta { .. } => Failure::MissingMeta,
            Error::MethodNotFound { era, .. } => Failure::MethodNotFound(*era),
        }
    }

    /// The HTTP status this error is answered with.
    #[cfg(test)]
    pub(crate) fn status(&self) -> StatusCode {
        rescue::classify(self.failure()).0
    }

    /// The JSON-RPC id echoed in the body, when known.
    pub(crate) fn id(&self) -> Option<&OwnedId> {
        match self {
            Error::BadGateway { id, .. }
            | Error::GatewayTimeout { id, .. }
            | Error::StreamQueueFull { id }
            | Error::RateLimited { id, .. }
            | Error::ParseError { id, .. }
            | Error::InvalidRequest { id, .. }
            | Error::UnsupportedVersion { id, .. }
            | Error::HeaderMismatch { id, .. }
            | Error::InvalidMeta { id, .. }
            | Error::MissingMeta { id, .. }
            | Error::MethodNotFound { id, .. } => id.as_ref(),
            _ => None,
        }
    }

    /// The `data` member as JSON text, when the error has one.
    pub(crate) fn data(&self) -> Option<Bytes> {
        match self {
            Error::Unauthorized { .. } => {
                Some(Bytes::from_static(br#"{"oauth_error":"invalid_token"}"#))
            }
            Error::InsufficientScope { .. } => Some(Bytes::from_static(
                br#"{"oauth_error":"insufficient_scope"}"#,
            )),
            Error::SessionCapReached { cap, limit } => Some(Bytes::from(format!(
                r#"{{"cap":"{}","limit":{limit}}}"#,
                cap.as_str()
            ))),
            Error::UnsupportedVersion { requested, .. } => {
                Some(rescue::unsupported_version_data(requested))
            }
            Error::DownstreamFault { fault, .. } => Some(fault.clone()),
            Error::RateLimited {
                retry_after, rule, ..
            } => {
                let mut data = format!(r#"{{"retry_after_ms":{}"#, retry_after_ms(*retry_after));
                if let Some(rule) = rule {
                    // Rule ids are path-segment safe (validation): nothing to escape.
                    data.push_str(&format!(r#","rule":"{rule}""#));
                }
                data.push('}');
                Some(Bytes::from(data))
            }
            _ => None,
        }
    }

    /// The one mapping from a request failure to a response: status and code from
    /// [`rescue::classify`], `Content-Type: application/json`,
    /// `{"jsonrpc":"2.0","id":null|id,"error":{"code":…,"message":…[,"data":…]}}`, plus `Allow`
    /// on 405 and `WWW-Authenticate` on 401 and on 403 `insufficient_scope`.
    pub(crate) fn into_response(self) -> Response<Body> {
        let (status, code) = rescue::classify(self.failure());
        let message = self.to_string();
        let data = self.data();
        let mut buf = BytesMut::with_capacity(64 + message.len());
        rescue::write_error(&mut buf, self.id(), code, &message, data.as_deref());

        let mut response = Response::new(Body::full(buf.freeze()));
        *response.status_mut() = status;
        let headers = response.headers_mut();
        headers.insert(CONTENT_TYPE, APPLICATION_JSON);
        match self {
            Error::MethodNotAllowed { allow } => {
                headers.insert(ALLOW, HeaderValue::from_static(allow));
            }
            Error::Unauthorized {
                challenge: Some(challenge),
                ..
            }
            | Error::InsufficientScope { challenge, .. } => {
                headers.insert(WWW_AUTHENTICATE, challenge);
            }
            Error::RateLimited { retry_after, .. } => {
                let secs = retry_after_ms(retry_after).div_ceil(1000).max(1);
                headers.insert(RETRY_AFTER, HeaderValue::from(secs));
            }
            _ => {}
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    fn check(err: Error, status: u16, body: &str) {
        let response = err.into_response();
        assert_eq!(response.status().as_u16(), status);
        assert_eq!(response.headers()[CONTENT_TYPE], "application/json");
        let rt = tokio::runtime::Builder::new_current_thread().build();
        let Ok(rt) = rt else { panic!("runtime") };
        let got = rt.block_on(response.into_body().collect());
        let Ok(got) = got;
        assert_eq!(std::str::from_utf8(&got.to_bytes()), Ok(body));
    }

    fn num(n: i64) -> Option<OwnedId> {
        Some(OwnedId::from_i64(n))
    }

    fn string(s: &str) -> Option<OwnedId> {
        Some(OwnedId::from_str_id(s))
    }

    #[test]
    fn a_rate_limit_refusal_says_when_to_retry_in_the_header_and_the_data() {
        let err = Error::RateLimited {
            message: "rule 'search' is over its limit".into(),
            retry_after: std::time::Duration::from_micros(1_200_001),
            rule: Some("search".into()),
            id: num(7),
        };
        let response = err.into_response();
        assert_eq!(response.headers()[RETRY_AFTER], "2");
        check(
            Error::RateLimited {
                message: "rule 'search' is over its limit".into(),
                retry_after: std::time::Duration::from_micros(1_200_001),
                rule: Some("search".into()),
                id: num(7),
            },
            429,
            r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32000,"message":"rate limited: rule 'search' is over its limit","data":{"retry_after_ms":1201,"rule":"search"}}}"#,
        );
    }

    #[test]
    fn mapping_table() {
        check(
            Error::NotFound,
            404,
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"not found"}}"#,
        );
        check(
            Error::NotAcceptable("x"),
            406,
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"not acceptable: x"}}"#,
        );
        check(
            Error::PayloadTooLarge { limit: 10 },
            413,
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"request body exceeds 10 bytes"}}"#,
        );
        check(
            Error::BodyTimeout {
                read_timeout: std::time::Duration::from_secs(30),
            },
            408,
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"request body stalled: no data for 30s"}}"#,
        );
        check(
            Error::ParseError {
                message: "Parse error",
                id: None,
            },
            400,
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#,
        );
        check(
            Error::MethodNotFound {
                method: "x".into(),
                era: Era::Handshake,
                id: string("0"),
            },
            200,
            r#"{"jsonrpc":"2.0","id":"0","error":{"code":-32601,"message":"method not found: x"}}"#,
        );
        check(
            Error::MethodNotFound {
                method: "x".into(),
                era: Era::Stateless,
                id: string("0"),
            },
            404,
            r#"{"jsonrpc":"2.0","id":"0","error":{"code":-32601,"message":"method not found: x"}}"#,
        );
        check(
            Error::UnsupportedVersion {
                requested: "x".into(),
                id: num(3),
            },
            400,
            r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32022,"message":"unsupported protocol version x","data":{"supported":["2026-07-28","2025-11-25","2025-06-18","2025-03-26","2024-11-05"],"requested":"x"}}}"#,
        );
        check(
            Error::SessionCapReached {
                cap: SessionCap::Caller,
                limit: 100,
            },
            429,
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"this caller's session limit is reached; end a session (DELETE) or let one expire","data":{"cap":"sessions_per_caller","limit":100}}}"#,
        );
        check(
            Error::HeaderMismatch {
                mismatch: HeaderMismatch::Missing("Mcp-Name"),
                id: num(9),
            },
            400,
            r#"{"jsonrpc":"2.0","id":9,"error":{"code":-32020,"message":"required header Mcp-Name is missing"}}"#,
        );
        check(
            Error::UnsupportedVersionHeader,
            400,
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"bad request: unsupported MCP-Protocol-Version"}}"#,
        );
        check(
            Error::BadGateway {
                message: "down".into(),
                id: num(7),
            },
            502,
            r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32000,"message":"bad gateway: down"}}"#,
        );
        check(
            Error::GatewayTimeout {
                message: "slow".into(),
                id: None,
            },
            504,
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"gateway timeout: slow"}}"#,
        );
        check(
            Error::MisdirectedRequest("wrong host".into()),
            421,
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"misdirected request: wrong host"}}"#,
        );
        check(
            Error::Internal,
            500,
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"internal error"}}"#,
        );
    }

    #[test]
    fn statuses() {
        let cases: &[(Error, u16)] = &[
            (Error::MethodNotAllowed { allow: "POST" }, 405),
            (Error::UnsupportedMediaType("x"), 415),
            (Error::BodyRead("x".into()), 400),
            (Error::BadRequest("x".into()), 400),
            (
                Error::Unauthorized {
                    challenge: None,
                    message: "x".into(),
                },
                401,
            ),
            (
                Error::InsufficientScope {
                    challenge: HeaderValue::from_static("Bearer"),
                    message: "x".into(),
                },
                403,
            ),
            (Error::TooManyRequests("x".into()), 429),
            (Error::Forbidden("x".into()), 403),
            (Error::Conflict("x".into()), 409),
            (Error::Unavailable("x".into()), 503),
            (Error::UnknownClient, 404),
            (Error::UnknownTool, 404),
            (Error::InvalidArguments("x".into()), 400),
            (Error::ReloadRefused("x".into()), 422),
            (Error::SessionNotFound, 404),
            (Error::SessionRequired("x"), 400),
            (
                Error::SessionCapReached {
                    cap: SessionCap::Tenant,
                    limit: 1,
                },
                503,
            ),
            (Error::StreamQueueFull { id: None }, 503),
            (
                Error::InvalidRequest {
                    message: "x",
                    id: None,
                },
                400,
            ),
            (
                Error::InvalidMeta {
                    message: "x".into(),
                    id: None,
                },
                400,
            ),
            (Error::MissingMeta { key: "x", id: None }, 400),
        ];
        for (err, status) in cases {
            assert_eq!(err.status().as_u16(), *status, "{err:?}");
        }
    }

    #[test]
    fn extra_headers() {
        let response = Error::MethodNotAllowed { allow: "POST" }.into_response();
        assert_eq!(response.headers()[ALLOW], "POST");
        let challenge = HeaderValue::from_static("Bearer resource_metadata=\"x\"");
        let response = Error::Unauthorized {
            challenge: Some(challenge),
            message: "missing credential".into(),
        }
        .into_response();
        assert_eq!(
            response.headers()[WWW_AUTHENTICATE],
            "Bearer resource_metadata=\"x\""
        );
    }
}
