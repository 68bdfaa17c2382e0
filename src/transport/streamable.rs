//! Streamable HTTP, `POST /runtime/{tenant}/{client}/mcp`: the request pipeline from guards to
//! reply. For now the only method answered is `ping` (`{}`); the dispatcher comes later.
//!
//! Pipeline (protocol/mcp.md §4.2, §8): Origin (403) → `MCP-Protocol-Version` (400) → Accept
//! (406) → Content-Type (415) → body (413) → JSON-RPC parse (400 with -32700/-32600) → reply.
//! Notifications and responses → 202, empty. Requests → `200` JSON or a one-frame SSE stream,
//! answered inline (no task, no channel). Unknown methods → -32601 on HTTP 200 (handshake era).
//! Must not implement MCP methods beyond what the transport needs.

use bytes::BytesMut;
use http::request::Parts;
use http::{Method, Response, StatusCode};
use smallvec::smallvec;

use super::{MCP_PROTOCOL_VERSION, PROTOCOL_VERSIONS};
use crate::http::negotiate::{is_json_content_type, Accept, MediaKind};
use crate::http::response::{self, Body};
use crate::http::router::allow;
use crate::http::{body, guard, Error, Target};
use crate::jsonrpc::{self, ErrorCode, Id, Message};
use crate::sse;

/// What the MCP endpoint needs from the server configuration.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// Origins allowed besides the server's own (exact, case-insensitive).
    pub allowed_origins: Vec<String>,
    /// Answer requests with an SSE stream even when JSON would do (when the client accepts both
    /// equally).
    pub prefer_sse: bool,
    /// Largest request body; larger → 413.
    pub max_body_bytes: usize,
}

/// `ping`'s result: an empty object (`{}`, never `[]`: protocol/mcp.md §8 point 15).
#[derive(serde::Serialize)]
struct EmptyResult {}

/// Handles one request on the MCP endpoint.
pub async fn handle<B>(
    parts: &Parts,
    body: B,
    _target: &Target<'_>,
    settings: &Settings,
) -> Result<Response<Body>, Error>
where
    B: http_body::Body,
    B::Error: std::fmt::Display,
{
    // GET (the standalone stream) and DELETE (session end) arrive with sessions.
    if parts.method != Method::POST {
        return Err(Error::MethodNotAllowed { allow: allow::POST });
    }

    guard::check_origin(&parts.headers, &parts.uri, &settings.allowed_origins)?;

    // "If the server receives a request with an invalid or unsupported MCP-Protocol-Version, it
    // MUST respond with 400 Bad Request." A missing header is not an error (§4.6).
    if let Some(version) = parts.headers.get(MCP_PROTOCOL_VERSION) {
        let version = version.as_bytes();
        if !PROTOCOL_VERSIONS.iter().any(|v| v.as_bytes() == version) {
            return Err(Error::BadRequest("unsupported MCP-Protocol-Version".into()));
        }
    }

    // "The client MUST include an Accept header, listing both application/json and
    // text/event-stream as supported content types." Wildcards and parameters count.
    let accept = Accept::from_headers(&parts.headers);
    if !(accept.accepts_json() && accept.accepts_sse()) {
        return Err(Error::NotAcceptable(
            "Accept must allow both application/json and text/event-stream",
        ));
    }

    let is_json = parts
        .headers
        .get(http::header::CONTENT_TYPE)
        .is_some_and(|value| is_json_content_type(value.as_bytes()));
    if !is_json {
        return Err(Error::UnsupportedMediaType(
            "Content-Type must be application/json",
        ));
    }

    let declared = body::content_length(&parts.headers);
    let mut buf = body::collect_limited(body, declared, settings.max_body_bytes).await?;

    let message = jsonrpc::parse(&mut buf).map_err(|err| Error::JsonRpc {
        status: StatusCode::BAD_REQUEST,
        code: err.code,
        message: err.message.into(),
        id: err.id,
    })?;

    match message {
        Message::Request { id, method, .. } => {
            if method != "ping" {
                return Err(Error::JsonRpc {
                    status: StatusCode::OK,
                    code: ErrorCode::METHOD_NOT_FOUND,
                    message: "Method not found".into(),
                    id: Some(id.to_owned_id()),
                });
            }
            let sse = match accept.preferred() {
                Some(MediaKind::EventStream) => true,
                Some(MediaKind::Json) => false,
                None => settings.prefer_sse,
            };
            if sse {
                let mut encoder = sse::Encoder::new();
                let frame = encoder.message_with(None, |out| write_ping_result(out, id));
                Ok(response::event_stream(Body::frames(smallvec![frame])))
            } else {
                let mut out = BytesMut::with_capacity(64);
                write_ping_result(&mut out, id);
                Ok(response::json(StatusCode::OK, out.freeze()))
            }
        }
        // "If the input is a JSON-RPC response or notification: if the server accepts the
        // input, the server MUST return HTTP status code 202 Accepted with no body."
        Message::Notification { .. } | Message::Response { .. } | Message::ErrorResponse { .. } => {
            Ok(response::empty(StatusCode::ACCEPTED))
        }
    }
}

fn write_ping_result(out: &mut BytesMut, id: Id<'_>) {
    // Serializing an empty struct cannot fail.
    if let Err(err) = jsonrpc::write_result(out, id, &EmptyResult {}) {
        tracing::error!(error = %err, "writing the ping result failed");
    }
}
