//! Request failures and **the one function** ([`Error::into_response`]) that maps every one of
//! them to an HTTP status and a JSON-RPC error body.
//!
//! Later layers (transport, auth, REST, invoke) convert their own errors into these variants
//! rather than building error responses themselves, so the status ↔ code table lives here only.
//! Must not know MCP methods: the codes here are JSON-RPC's and the generic server-error range.

use std::borrow::Cow;

use bytes::BytesMut;
use http::header::{HeaderValue, ALLOW, CONTENT_TYPE, WWW_AUTHENTICATE};
use http::{Response, StatusCode};

use super::response::{Body, APPLICATION_JSON};
use crate::jsonrpc::{self, ErrorCode, OwnedId};

/// JSON-RPC "server error" code used for failures that are HTTP-level rather than about the
/// message (bad Origin or Host, wrong media type, unknown path, downstream failures).
pub const SERVER_ERROR: ErrorCode = ErrorCode(-32000);

/// Why a request was refused or failed. Variants that can happen after the body was parsed
/// carry the JSON-RPC id (echoed verbatim in the error body); the rest answer with `"id": null`.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No route for this path (also: a path segment that fails validation).
    #[error("not found")]
    NotFound,
    /// The path exists but not for this method; `allow` lists the methods that do.
    #[error("method not allowed")]
    MethodNotAllowed {
        /// The `Allow` header value, e.g. `"POST"`.
        allow: &'static str,
    },
    /// The route exists but its surface is not built yet.
    #[error("{0} is not implemented yet")]
    NotImplemented(&'static str),
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
    /// A malformed request at the HTTP level (bad header value, unsupported protocol version).
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
    /// Authenticated but not allowed, or a disallowed `Origin`.
    #[error("forbidden: {0}")]
    Forbidden(Cow<'static, str>),
    /// A `Host` this server does not answer for (DNS-rebinding protection): 421, with the same
    /// server-error code as the 403 `Origin` refusal.
    #[error("misdirected request: {0}")]
    MisdirectedRequest(Cow<'static, str>),
    /// A JSON-RPC-level failure: the given code and message on the given HTTP status, e.g.
    /// -32700/-32600 on 400, or -32601 on 200 in the handshake era.
    #[error("{message}")]
    JsonRpc {
        /// HTTP status to answer with.
        status: StatusCode,
        /// JSON-RPC error code.
        code: ErrorCode,
        /// Human-readable message.
        message: Cow<'static, str>,
        /// The request id when it could be read.
        id: Option<OwnedId>,
    },
    /// Like [`Error::JsonRpc`], with a `data` member (raw JSON), e.g. -32022's
    /// `{"supported":[…],"requested":"…"}`.
    #[error("{message}")]
    JsonRpcWithData {
        /// HTTP status to answer with.
        status: StatusCode,
        /// JSON-RPC error code.
        code: ErrorCode,
        /// Human-readable message.
        message: Cow<'static, str>,
        /// The request id when it could be read.
        id: Option<OwnedId>,
        /// The `data` member: one JSON value.
        data: bytes::Bytes,
    },
    /// The request's params are invalid (-32602 on 200: handshake-era rule).
    #[error("invalid params: {message}")]
    InvalidParams {
        /// What is wrong.
        message: Cow<'static, str>,
        /// The request id.
        id: Option<OwnedId>,
    },
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
}

impl Error {
    /// The HTTP status this error is answered with.
    pub fn status(&self) -> StatusCode {
        match self {
            Error::NotFound => StatusCode::NOT_FOUND,
            Error::MethodNotAllowed { .. } => StatusCode::METHOD_NOT_ALLOWED,
            Error::NotImplemented(_) => StatusCode::NOT_IMPLEMENTED,
            Error::NotAcceptable(_) => StatusCode::NOT_ACCEPTABLE,
            Error::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Error::PayloadTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            Error::BodyTimeout { .. } => StatusCode::REQUEST_TIMEOUT,
            Error::BodyRead(_) | Error::BadRequest(_) => StatusCode::BAD_REQUEST,
            Error::Unauthorized { .. } => StatusCode::UNAUTHORIZED,
            Error::Forbidden(_) | Error::InsufficientScope { .. } => StatusCode::FORBIDDEN,
            Error::TooManyRequests(_) => StatusCode::TOO_MANY_REQUESTS,
            Error::MisdirectedRequest(_) => StatusCode::MISDIRECTED_REQUEST,
            Error::JsonRpc { status, .. } | Error::JsonRpcWithData { status, .. } => *status,
            Error::InvalidParams { .. } => StatusCode::OK,
            Error::Conflict(_) => StatusCode::CONFLICT,
            Error::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            Error::BadGateway { .. } => StatusCode::BAD_GATEWAY,
            Error::GatewayTimeout { .. } => StatusCode::GATEWAY_TIMEOUT,
            Error::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The JSON-RPC error code in the body.
    pub fn code(&self) -> ErrorCode {
        match self {
            Error::JsonRpc { code, .. } | Error::JsonRpcWithData { code, .. } => *code,
            Error::InvalidParams { .. } => ErrorCode::INVALID_PARAMS,
            Error::Internal => ErrorCode::INTERNAL_ERROR,
            _ => SERVER_ERROR,
        }
    }

    /// The JSON-RPC id echoed in the body, when known.
    pub fn id(&self) -> Option<&OwnedId> {
        match self {
            Error::JsonRpc { id, .. }
            | Error::JsonRpcWithData { id, .. }
            | Error::InvalidParams { id, .. }
            | Error::BadGateway { id, .. }
            | Error::GatewayTimeout { id, .. } => id.as_ref(),
            _ => None,
        }
    }

    /// The one mapping from a request failure to a response: status, `Content-Type:
    /// application/json`, `{"jsonrpc":"2.0","id":null|id,"error":{"code":…,"message":…}}`, plus
    /// `Allow` on 405 and `WWW-Authenticate` on 401.
    pub fn into_response(self) -> Response<Body> {
        let status = self.status();
        let message = match &self {
            Error::JsonRpc { message, .. } | Error::JsonRpcWithData { message, .. } => {
                message.clone()
            }
            other => Cow::Owned(other.to_string()),
        };
        let mut buf = BytesMut::with_capacity(64 + message.len());
        match &self {
            Error::JsonRpcWithData { data, .. } => {
                write_error_raw_data(&mut buf, self.id(), self.code(), &message, data);
            }
            Error::Unauthorized { .. } => {
                let data = br#"{"oauth_error":"invalid_token"}"#;
                write_error_raw_data(&mut buf, None, self.code(), &message, data);
            }
            Error::InsufficientScope { .. } => {
                let data = br#"{"oauth_error":"insufficient_scope"}"#;
                write_error_raw_data(&mut buf, None, self.code(), &message, data);
            }
            _ => jsonrpc::write_error(&mut buf, self.id(), self.code(), &message),
        }

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
            _ => {}
        }
        response
    }
}

/// Writes an error whose `data` is already JSON text; falls back to no `data` when it is not
/// one valid JSON value (a bug upstream must not produce an invalid body).
fn write_error_raw_data(
    buf: &mut BytesMut,
    id: Option<&OwnedId>,
    code: ErrorCode,
    message: &str,
    data: &[u8],
) {
    let raw = std::str::from_utf8(data)
        .ok()
        .and_then(|text| serde_json::value::RawValue::from_string(text.to_owned()).ok());
    let written = match &raw {
        Some(raw) => jsonrpc::write_error_with_data(buf, id, code, message, raw).is_ok(),
        None => false,
    };
    if !written {
        jsonrpc::write_error(buf, id, code, message);
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
            Error::JsonRpc {
                status: StatusCode::BAD_REQUEST,
                code: ErrorCode::PARSE_ERROR,
                message: "Parse error".into(),
                id: None,
            },
            400,
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#,
        );
        check(
            Error::JsonRpc {
                status: StatusCode::OK,
                code: ErrorCode::METHOD_NOT_FOUND,
                message: "Method not found".into(),
                id: string("0"),
            },
            200,
            r#"{"jsonrpc":"2.0","id":"0","error":{"code":-32601,"message":"Method not found"}}"#,
        );
        check(
            Error::JsonRpcWithData {
                status: StatusCode::BAD_REQUEST,
                code: ErrorCode(-32022),
                message: "Unsupported protocol version".into(),
                id: num(3),
                data: bytes::Bytes::from_static(br#"{"supported":["2026-07-28"],"requested":"x"}"#),
            },
            400,
            r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32022,"message":"Unsupported protocol version","data":{"supported":["2026-07-28"],"requested":"x"}}}"#,
        );
        check(
            Error::InvalidParams {
                message: "bad".into(),
                id: num(0),
            },
            200,
            r#"{"jsonrpc":"2.0","id":0,"error":{"code":-32602,"message":"invalid params: bad"}}"#,
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
            (Error::NotImplemented("REST"), 501),
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
            (Error::TooManyRequests("x".into()), 429),
            (Error::Forbidden("x".into()), 403),
            (Error::Conflict("x".into()), 409),
            (Error::Unavailable("x".into()), 503),
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
