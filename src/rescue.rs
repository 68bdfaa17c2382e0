//! **The one table** from a failure to what it is answered with: [`classify`] maps every
//! [`Failure`] to an HTTP status and a JSON-RPC error code, per protocol era where the era
//! changes either. Also the MCP- and server-specific error codes (the JSON-RPC 2.0 ones are
//! [`ErrorCode`]'s own constants) and the one writer of an error object with optional `data`
//! ([`write_error`]), used by `http::Error::into_response` and by the in-band answers of
//! `transport/reply.rs` alike.
//!
//! Why a module of its own, below `http/` and `mcp/`: both need the table. `http::Error` (every
//! error response) names its [`Failure`] with `Error::failure`, and `mcp::McpError` (a method's
//! error, answered in-band or, in the stateless era, with a status) with `McpError::failure`;
//! neither picks a status or a code. The model is linkerd2-proxy's `rescue()`: classify in one
//! place, not in handlers. Imports only the leaves `jsonrpc` (codes, ids, writers) and
//! `protocol` (the era); must not know MCP methods, sockets or response bodies.

use bytes::{BufMut, Bytes, BytesMut};
use http::StatusCode;

use crate::json_text::put_str;
use crate::jsonrpc::{self, ErrorCode, IdRef};
use crate::protocol::{Era, ProtocolVersion};

// === codes ===

/// -32000, JSON-RPC's implementation-defined server error: failures that are HTTP-level rather
/// than about the message (bad Origin or Host, wrong media type, unknown path or session,
/// limits, downstream failures).
pub(crate) const SERVER_ERROR: ErrorCode = ErrorCode(-32000);
/// -32002, resource not found (handshake era; the stateless era answers -32602 with
/// `data.uri`).
pub(crate) const RESOURCE_NOT_FOUND: ErrorCode = ErrorCode(-32002);
/// -32020, HeaderMismatch (2026-07-28): a routing header disagrees with the body.
pub(crate) const HEADER_MISMATCH: ErrorCode = ErrorCode(-32020);
/// -32022, UnsupportedProtocolVersion (2026-07-28), with `data: {supported, requested}`.
pub(crate) const UNSUPPORTED_PROTOCOL_VERSION: ErrorCode = ErrorCode(-32022);

/// The A2A error codes (A2A 1.0 §5.4, the JSON-RPC binding's table): -32001 to -32010.
pub(crate) mod a2a_codes {
    use crate::jsonrpc::ErrorCode;
    /// -32001 TaskNotFoundError: unknown id, or another caller's task (never distinguished).
    pub(crate) const TASK_NOT_FOUND: ErrorCode = ErrorCode(-32001);
    /// -32002 TaskNotCancelableError: the task is already terminal.
    pub(crate) const TASK_NOT_CANCELABLE: ErrorCode = ErrorCode(-32002);
    /// -32003 PushNotificationNotSupportedError.
    pub(crate) const PUSH_NOT_SUPPORTED: ErrorCode = ErrorCode(-32003);
    /// -32004 UnsupportedOperationError (a terminal task's new message or subscription).
    pub(crate) const UNSUPPORTED_OPERATION: ErrorCode = ErrorCode(-32004);
    /// -32005 ContentTypeNotSupportedError.
    pub(crate) const CONTENT_TYPE_NOT_SUPPORTED: ErrorCode = ErrorCode(-32005);
    /// -32006 InvalidAgentResponseError.
    pub(crate) const INVALID_AGENT_RESPONSE: ErrorCode = ErrorCode(-32006);
    /// -32007 ExtendedAgentCardNotConfiguredError.
    pub(crate) const EXTENDED_CARD_NOT_CONFIGURED: ErrorCode = ErrorCode(-32007);
    /// -32008 ExtensionSupportRequiredError.
    pub(crate) const EXTENSION_SUPPORT_REQUIRED: ErrorCode = ErrorCode(-32008);
    /// -32009 VersionNotSupportedError: an `A2A-Version` this runtime does not speak.
    pub(crate) const VERSION_NOT_SUPPORTED: ErrorCode = ErrorCode(-32009);
    /// -32010 TaskGenerationMismatchError (A2A 1.1, reserved: never sent yet).
    pub(crate) const GENERATION_MISMATCH: ErrorCode = ErrorCode(-32010);
}

/// The A2A-specific failures, answered in-band on HTTP 200 like every A2A JSON-RPC error
/// (only the caller's own authentication is an HTTP status).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum A2aFailure {
    TaskNotFound,
    TaskNotCancelable,
    PushNotSupported,
    UnsupportedOperation,
    ContentTypeNotSupported,
    InvalidAgentResponse,
    ExtendedCardNotConfigured,
    ExtensionSupportRequired,
    VersionNotSupported,
    /// Reserved for A2A 1.1 (`ifGenerationMatch`); nothing sends it yet.
    #[allow(dead_code)]
    GenerationMismatch,
}

// === the table ===

/// Which session cap refused a new session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SessionCap {
    /// `sessions_per_tenant`: the tenant's limit (503: retry later).
    Tenant,
    /// `sessions_per_caller`: this caller's limit (429: end one of its sessions).
    Caller,
}

impl SessionCap {
    /// The setting's name, as `data.cap` says it.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            SessionCap::Tenant => "sessions_per_tenant",
            SessionCap::Caller => "sessions_per_caller",
        }
    }
}

/// What went wrong, as far as the status and the code are concerned: one value per
/// `http::Error` variant and per `mcp::McpError` variant, the era inside where it matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failure {
    /// No route for the path.
    NotFound,
    /// The path exists, not for this method.
    MethodNotAllowed,
    /// `Accept` excludes every answer type.
    NotAcceptable,
    /// `Content-Type` is missing or unreadable.
    UnsupportedMediaType,
    /// The body exceeds the limit.
    PayloadTooLarge,
    /// The body stopped arriving.
    BodyTimeout,
    /// Reading the body failed.
    BodyRead,
    /// A malformed request at the HTTP level.
    BadRequest,
    /// No usable credential.
    Unauthorized,
    /// A credential without a needed scope.
    InsufficientScope,
    /// Authenticated but not allowed, or a disallowed `Origin`.
    Forbidden,
    /// A per-caller or per-session limit (streams per session).
    TooManyRequests,
    /// A `Host` this server does not answer for.
    MisdirectedRequest,
    /// A state conflict (a second stream).
    Conflict,
    /// Draining, overloaded or a dependency down.
    Unavailable,
    /// A downstream answered with something unusable.
    BadGateway,
    /// A downstream did not answer in time.
    GatewayTimeout,
    /// A bug on our side, outside any method.
    Internal,
    /// No such tenant or client application.
    UnknownClient,
    /// No such tool (REST).
    UnknownTool,
    /// REST arguments that are not valid.
    InvalidArguments,
    /// Unknown, expired, deleted or another owner's session.
    SessionNotFound,
    /// A session is required and the request named none.
    SessionRequired,
    /// A session cap refused a new session.
    SessionCapReached(SessionCap),
    /// A legacy session's stream is not being read: no room for the answer.
    StreamQueueFull,
    /// `/admin/reload` found the new configuration invalid.
    ReloadRefused,
    /// The body is not JSON.
    ParseError,
    /// The body is JSON but not a valid request.
    InvalidRequest,
    /// A stateless-era routing header disagrees with the body.
    HeaderMismatch,
    /// The stateless `_meta` envelope is absent or malformed.
    InvalidMeta,
    /// A required stateless `_meta` key is missing.
    MissingMeta,
    /// A version this runtime does not implement: the handshake era's `MCP-Protocol-Version`
    /// header, or the stateless era's `_meta` version.
    UnsupportedVersion(Era),
    /// An unknown method (the stateless era answers it with 404).
    MethodNotFound(Era),
    /// A method's params are invalid (in-band).
    InvalidParams,
    /// An unknown resource (in-band; the code depends on the era).
    ResourceNotFound(Era),
    /// A method failed unexpectedly (in-band).
    MethodFailed,
    /// An A2A error (in-band, HTTP 200).
    A2a(A2aFailure),
}

/// The HTTP status and JSON-RPC code `failure` is answered with. A 200 means the error is
/// answered in-band: in the response of a request that itself succeeded at the HTTP level.
///
/// The era rows: the handshake era answers every method error in-band on 200 (MCP
/// 2025-11-25, Transports: a request's JSON-RPC error is its response); the stateless era
/// answers an unknown method with 404 and the rungs of its validation ladder (headers, `_meta`,
/// version: `transport/stateless.rs`) with 400.
pub(crate) fn classify(failure: Failure) -> (StatusCode, ErrorCode) {
    use Failure as F;
    match failure {
        F::NotFound | F::UnknownClient | F::UnknownTool | F::SessionNotFound => {
            (StatusCode::NOT_FOUND, SERVER_ERROR)
        }
        F::MethodNotAllowed => (StatusCode::METHOD_NOT_ALLOWED, SERVER_ERROR),
        F::NotAcceptable => (StatusCode::NOT_ACCEPTABLE, SERVER_ERROR),
        F::UnsupportedMediaType => (StatusCode::UNSUPPORTED_MEDIA_TYPE, SERVER_ERROR),
        F::PayloadTooLarge => (StatusCode::PAYLOAD_TOO_LARGE, SERVER_ERROR),
        F::BodyTimeout => (StatusCode::REQUEST_TIMEOUT, SERVER_ERROR),
        F::BodyRead | F::BadRequest | F::SessionRequired => (StatusCode::BAD_REQUEST, SERVER_ERROR),
        // "If the server receives a request with an invalid or unsupported
        // MCP-Protocol-Version, it MUST respond with 400 Bad Request" (no id, no data).
        F::UnsupportedVersion(Era::Handshake) => (StatusCode::BAD_REQUEST, SERVER_ERROR),
        F::Unauthorized => (StatusCode::UNAUTHORIZED, SERVER_ERROR),
        F::InsufficientScope | F::Forbidden => (StatusCode::FORBIDDEN, SERVER_ERROR),
        F::TooManyRequests | F::SessionCapReached(SessionCap::Caller) => {
            (StatusCode::TOO_MANY_REQUESTS, SERVER_ERROR)
        }
        F::MisdirectedRequest => (StatusCode::MISDIRECTED_REQUEST, SERVER_ERROR),
        F::Conflict => (StatusCode::CONFLICT, SERVER_ERROR),
        F::Unavailable | F::StreamQueueFull | F::SessionCapReached(SessionCap::Tenant) => {
            (StatusCode::SERVICE_UNAVAILABLE, SERVER_ERROR)
        }
        F::BadGateway => (StatusCode::BAD_GATEWAY, SERVER_ERROR),
        F::GatewayTimeout => (StatusCode::GATEWAY_TIMEOUT, SERVER_ERROR),
        F::ReloadRefused => (StatusCode::UNPROCESSABLE_ENTITY, SERVER_ERROR),
        F::Internal => (StatusCode::INTERNAL_SERVER_ERROR, ErrorCode::INTERNAL_ERROR),
        F::ParseError => (StatusCode::BAD_REQUEST, ErrorCode::PARSE_ERROR),
        F::InvalidRequest => (StatusCode::BAD_REQUEST, ErrorCode::INVALID_REQUEST),
        F::InvalidArguments | F::InvalidMeta | F::MissingMeta => {
            (StatusCode::BAD_REQUEST, ErrorCode::INVALID_PARAMS)
        }
        F::HeaderMismatch => (StatusCode::BAD_REQUEST, HEADER_MISMATCH),
        F::UnsupportedVersion(Era::Stateless) => {
            (StatusCode::BAD_REQUEST, UNSUPPORTED_PROTOCOL_VERSION)
        }
        F::MethodNotFound(Era::Handshake) => (StatusCode::OK, ErrorCode::METHOD_NOT_FOUND),
        F::MethodNotFound(Era::Stateless) => (StatusCode::NOT_FOUND, ErrorCode::METHOD_NOT_FOUND),
        F::InvalidParams => (StatusCode::OK, ErrorCode::INVALID_PARAMS),
        F::ResourceNotFound(Era::Handshake) => (StatusCode::OK, RESOURCE_NOT_FOUND),
        F::ResourceNotFound(Era::Stateless) => (StatusCode::OK, ErrorCode::INVALID_PARAMS),
        F::MethodFailed => (StatusCode::OK, ErrorCode::INTERNAL_ERROR),
        F::A2a(failure) => (StatusCode::OK, a2a_code(failure)),
    }
}

fn a2a_code(failure: A2aFailure) -> ErrorCode {
    use a2a_codes as C;
    use A2aFailure as A;
    match failure {
        A::TaskNotFound => C::TASK_NOT_FOUND,
        A::TaskNotCancelable => C::TASK_NOT_CANCELABLE,
        A::PushNotSupported => C::PUSH_NOT_SUPPORTED,
        A::UnsupportedOperation => C::UNSUPPORTED_OPERATION,
        A::ContentTypeNotSupported => C::CONTENT_TYPE_NOT_SUPPORTED,
        A::InvalidAgentResponse => C::INVALID_AGENT_RESPONSE,
        A::ExtendedCardNotConfigured => C::EXTENDED_CARD_NOT_CONFIGURED,
        A::ExtensionSupportRequired => C::EXTENSION_SUPPORT_REQUIRED,
        A::VersionNotSupported => C::VERSION_NOT_SUPPORTED,
        A::GenerationMismatch => C::GENERATION_MISMATCH,
    }
}

// === data and the writer ===

/// The `data` of an unsupported stateless-era version: `{"supported":[every version, newest
/// first, stateless era first],"requested":"…"}`.
pub(crate) fn unsupported_version_data(requested: &str) -> Bytes {
    let mut out = BytesMut::with_capacity(128 + requested.len());
    out.put_slice(b"{\"supported\":[");
    for (i, version) in ProtocolVersion::SUPPORTED.iter().enumerate() {
        if i > 0 {
            out.put_u8(b',');
        }
        put_str(&mut out, version.as_str());
    }
    out.put_slice(b"],\"requested\":");
    put_str(&mut out, requested);
    out.put_u8(b'}');
    out.freeze()
}

/// Appends `{"jsonrpc":"2.0","id":…|null,"error":{"code":…,"message":…[,"data":…]}}`. `data` is
/// JSON text written as is; when it is not one valid JSON value the error goes out without it
/// (a bug upstream must not produce an invalid body).
pub(crate) fn write_error<'i>(
    out: &mut BytesMut,
    id: impl Into<IdRef<'i>>,
    code: ErrorCode,
    message: &str,
    data: Option<&[u8]>,
) {
    let id = id.into();
    if let Some(data) = data {
        let raw = std::str::from_utf8(data)
            .ok()
            .and_then(|text| serde_json::value::RawValue::from_string(text.to_owned()).ok());
        if let Some(raw) = raw {
            if jsonrpc::write_error_with_data(out, id, code, message, &raw).is_ok() {
                return;
            }
        }
    }
    jsonrpc::write_error(out, id, code, message);
}

#[cfg(test)]
mod tests {
    use super::*;
    use Era::{Handshake, Stateless};
    use Failure as F;

    /// Every failure once (each era where it carries one), with its status and code.
    const TABLE: &[(Failure, u16, i32)] = &[
        (F::NotFound, 404, -32000),
        (F::MethodNotAllowed, 405, -32000),
        (F::NotAcceptable, 406, -32000),
        (F::UnsupportedMediaType, 415, -32000),
        (F::PayloadTooLarge, 413, -32000),
        (F::BodyTimeout, 408, -32000),
        (F::BodyRead, 400, -32000),
        (F::BadRequest, 400, -32000),
        (F::Unauthorized, 401, -32000),
        (F::InsufficientScope, 403, -32000),
        (F::Forbidden, 403, -32000),
        (F::TooManyRequests, 429, -32000),
        (F::MisdirectedRequest, 421, -32000),
        (F::Conflict, 409, -32000),
        (F::Unavailable, 503, -32000),
        (F::BadGateway, 502, -32000),
        (F::GatewayTimeout, 504, -32000),
        (F::Internal, 500, -32603),
        (F::UnknownClient, 404, -32000),
        (F::UnknownTool, 404, -32000),
        (F::InvalidArguments, 400, -32602),
        (F::SessionNotFound, 404, -32000),
        (F::SessionRequired, 400, -32000),
        (F::SessionCapReached(SessionCap::Tenant), 503, -32000),
        (F::SessionCapReached(SessionCap::Caller), 429, -32000),
        (F::StreamQueueFull, 503, -32000),
        (F::ReloadRefused, 422, -32000),
        (F::ParseError, 400, -32700),
        (F::InvalidRequest, 400, -32600),
        (F::HeaderMismatch, 400, -32020),
        (F::InvalidMeta, 400, -32602),
        (F::MissingMeta, 400, -32602),
        (F::UnsupportedVersion(Handshake), 400, -32000),
        (F::UnsupportedVersion(Stateless), 400, -32022),
        (F::MethodNotFound(Handshake), 200, -32601),
        (F::MethodNotFound(Stateless), 404, -32601),
        (F::InvalidParams, 200, -32602),
        (F::ResourceNotFound(Handshake), 200, -32002),
        (F::ResourceNotFound(Stateless), 200, -32602),
        (F::MethodFailed, 200, -32603),
        (F::A2a(A2aFailure::TaskNotFound), 200, -32001),
        (F::A2a(A2aFailure::TaskNotCancelable), 200, -32002),
        (F::A2a(A2aFailure::PushNotSupported), 200, -32003),
        (F::A2a(A2aFailure::UnsupportedOperation), 200, -32004),
        (F::A2a(A2aFailure::ContentTypeNotSupported), 200, -32005),
        (F::A2a(A2aFailure::InvalidAgentResponse), 200, -32006),
        (F::A2a(A2aFailure::ExtendedCardNotConfigured), 200, -32007),
        (F::A2a(A2aFailure::ExtensionSupportRequired), 200, -32008),
        (F::A2a(A2aFailure::VersionNotSupported), 200, -32009),
        (F::A2a(A2aFailure::GenerationMismatch), 200, -32010),
    ];

    #[test]
    fn table() {
        for &(failure, status, code) in TABLE {
            let (got_status, got_code) = classify(failure);
            assert_eq!(
                (got_status.as_u16(), got_code.0),
                (status, code),
                "{failure:?}"
            );
        }
    }

    fn written(data: Option<&[u8]>) -> String {
        let mut out = BytesMut::new();
        write_error(&mut out, IdRef::Null, SERVER_ERROR, "m", data);
        String::from_utf8(out.to_vec()).unwrap_or_default()
    }

    #[test]
    fn writer_keeps_valid_data_and_drops_invalid() {
        assert_eq!(
            written(None),
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"m"}}"#
        );
        assert_eq!(
            written(Some(br#"{"a":[1]}"#)),
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"m","data":{"a":[1]}}}"#
        );
        assert_eq!(
            written(Some(b"{")),
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"m"}}"#
        );
        assert_eq!(
            written(Some(b"\xff")),
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"m"}}"#
        );
    }

    #[test]
    fn unsupported_version_data_lists_every_version_newest_first() {
        assert_eq!(
            &unsupported_version_data("x\"y")[..],
            br#"{"supported":["2026-07-28","2025-11-25","2025-06-18","2025-03-26","2024-11-05"],"requested":"x\"y"}"#
        );
    }
}
