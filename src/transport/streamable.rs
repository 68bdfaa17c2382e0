//! Streamable HTTP, `POST|GET|DELETE /runtime/{tenant}/{client}/mcp`: the shared front of both
//! protocol eras, and the per-request era classification (`docs/eras.md`).
//!
//! POST pipeline: [the gate](crate::access) (Origin 403, tenant and client 404, credential
//! 401/403) → Accept (406) → Content-Type (415) → body (413) → JSON-RPC parse (400; -32700
//! with `"id": null`, -32600 with the id when it could be read) → the called tool's own scope (403) → era:
//! - a body whose `params._meta` names a protocol version, or an `MCP-Protocol-Version` header
//!   naming a stateless-era version (except on `initialize`, which negotiates in the body
//!   whatever the header says: `docs/mcp-pitfalls.md` point 11) → [`stateless`];
//! - anything else → [`handshake`].
//!
//! GET (standalone stream) and DELETE (session end) belong to the handshake era only.
//! The snapshot is read once per request and travels in [`crate::mcp::Scope`]. Must not
//! implement MCP methods.

use std::sync::Arc;

use http::request::Parts;
use http::{Method, Response};

use super::{handshake, stateless, Transport, MCP_PROTOCOL_VERSION, META_PROTOCOL_VERSION};
use crate::access::{Admitted, Endpoint};
use crate::auth::Caller;
use crate::catalog::ClientView;
use crate::http::negotiate::{is_json_content_type, Accept};
use crate::http::response::Body;
use crate::http::router::allow;
use crate::http::{body, Error, Target};
use crate::jsonrpc::{self, ErrorCode, Message, Payload};
use crate::mcp::names;
use crate::protocol::{Era, ProtocolVersion};

/// Handles one request on the MCP endpoint, after the gate ([`crate::access`]) admitted it:
/// Origin, tenant and client, and the caller's credential are checked already.
pub(crate) async fn handle<B>(
    transport: &Arc<Transport>,
    parts: &Parts,
    body: B,
    target: &Target<'_>,
    admitted: Admitted,
) -> Result<Response<Body>, Error>
where
    B: http_body::Body,
    B::Error: std::fmt::Display,
{
    match parts.method {
        Method::POST => post(transport, parts, body, target, &admitted).await,
        Method::GET => handshake::get(transport, parts, target, &admitted.caller).await,
        Method::DELETE => handshake::delete(transport, parts, target, &admitted.caller).await,
        _ => Err(Error::MethodNotAllowed { allow: allow::MCP }),
    }
}

/// The gate of a `tools/call` (the tool's own scope, the tenant's rate limits:
/// [`crate::access::Access::admit_call`]; the tenant's baseline scopes were checked by the
/// request's gate). Runs before dispatch in both eras, so a refusal is an HTTP status the client
/// can act on (403, 429 with `Retry-After`), not an in-band result.
pub(crate) async fn admit_tool_call(
    transport: &Transport,
    view: &ClientView,
    caller: &Caller,
    endpoint: Endpoint,
    message: &Message<'_>,
) -> Result<(), Error> {
    let Message::Request {
        id,
        method: method @ names::TOOLS_CALL,
        params,
    } = message
    else {
        return Ok(());
    };
    let Some(name) = crate::mcp::meta::routing_name(method, params.as_ref()) else {
        return Ok(());
    };
    transport
        .access
        .admit_call(
            caller,
            view,
            endpoint,
            name,
            Some(crate::jsonrpc::OwnedId::from(*id)),
        )
        .await
}

/// Reads and parses a POST body after the media-type checks shared by every MCP POST.
///
/// "The client MUST include an Accept header, listing both application/json and text/event-stream
/// as supported content types." Wildcards and parameters count (`docs/mcp-pitfalls.md` point 5).
pub(crate) fn check_post_headers(parts: &Parts) -> Result<Accept, Error> {
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
    Ok(accept)
}

/// Collects the body within the configured size limit and read timeout.
pub(crate) async fn read_body<B>(
    parts: &Parts,
    body: B,
    settings: &super::Settings,
) -> Result<bytes::BytesMut, Error>
where
    B: http_body::Body,
    B::Error: std::fmt::Display,
{
    let declared = body::content_length(&parts.headers);
    body::collect_limited(
        body,
        declared,
        settings.max_body_bytes,
        settings.body_read_timeout,
    )
    .await
}

/// A body that is not a usable JSON-RPC message: not JSON (-32700), or not a valid request
/// (-32600, with the id when it could be read), as the parser classified it.
pub(crate) fn parse_error(err: jsonrpc::ParseError) -> Error {
    let jsonrpc::ParseError { code, message, id } = err;
    if code == ErrorCode::PARSE_ERROR {
        Error::ParseError { message, id }
    } else {
        Error::InvalidRequest { message, id }
    }
}

async fn post<B>(
    transport: &Arc<Transport>,
    parts: &Parts,
    body: B,
    target: &Target<'_>,
    admitted: &Admitted,
) -> Result<Response<Body>, Error>
where
    B: http_body::Body,
    B::Error: std::fmt::Display,
{
    let accept = check_post_headers(parts)?;
    let mut buf = read_body(parts, body, &transport.settings).await?;
    let message =
        jsonrpc::parse_with(&mut buf, &transport.settings.json_limits).map_err(parse_error)?;
    if !admitted.platform {
        // Platform tools check the executed tool's scope themselves (it is named in arguments).
        admit_tool_call(
            transport,
            &admitted.view,
            &admitted.caller,
            Endpoint::Mcp,
            &message,
        )
        .await?;
    }

    match classify(parts, &message) {
        Era::Stateless => {
            stateless::post(transport, parts, &accept, message, target, admitted).await
        }
        Era::Handshake => {
            handshake::post(transport, parts, &accept, message, target, admitted).await
        }
    }
}

/// The era of a POSTed message, body first (`docs/eras.md`).
pub(crate) fn classify(parts: &Parts, message: &Message<'_>) -> Era {
    let (method, params) = match message {
        Message::Request { method, params, .. } | Message::Notification { method, params } => {
            (*method, params.as_ref())
        }
        // Responses only exist in the handshake era (servers send no requests in 2026).
        Message::Response { .. } | Message::ErrorResponse { .. } => return Era::Handshake,
    };
    // A body whose `_meta` names a protocol version is a stateless-era request.
    if has_meta_version(params) {
        return Era::Stateless;
    }
    // `initialize` is never refused for its header, even one naming a newer version: it
    // negotiates in the body (`docs/mcp-pitfalls.md` point 11).
    if method == "initialize" {
        return Era::Handshake;
    }
    // Otherwise a header naming a stateless-era version makes it a stateless-era request. A
    // header naming no version this runtime knows, on a body without the modern envelope, is a
    // handshake-era request with an unsupported version, which that era refuses with 400 and no
    // id (the runtime specification: input the server cannot accept "is answered with an HTTP error
    // status whose body carries a JSON-RPC error with no id"; see `handshake::header_version`).
    match parts.headers.get(MCP_PROTOCOL_VERSION) {
        Some(version)
            if ProtocolVersion::parse_in(Era::Stateless, version.as_bytes()).is_some() =>
        {
            Era::Stateless
        }
        _ => Era::Handshake,
    }
}

/// Whether `params._meta` holds the stateless-era protocol version key (whatever its value).
pub(crate) fn has_meta_version(params: Option<&Payload<'_>>) -> bool {
    params.is_some_and(|params| {
        params
            .value()
            .get("_meta")
            .and_then(|meta| meta.get(META_PROTOCOL_VERSION))
            .is_some()
    })
}
