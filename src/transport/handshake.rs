//! The handshake era (2024-11-05 … 2025-11-25) on `/runtime/{tenant}/{client}/mcp`: POST with
//! sessions, the standalone GET stream with resumption, and DELETE.
//!
//! Must not implement MCP methods.

use http::request::Parts;
use http::{Response, StatusCode};
use smallvec::SmallVec;

use super::reply::{self};
use super::stateless::framing;
use super::{Transport, MCP_PROTOCOL_VERSION};
use crate::catalog::Snapshot;
use crate::http::negotiate::Accept;
use crate::http::response::{self, Body};
use crate::http::{Error, Target};
use crate::invoke::CallContext;
use crate::jsonrpc::Message;
use crate::mcp::{Era, Scope, DEFAULT_HANDSHAKE_VERSION, HANDSHAKE_VERSIONS};

/// Handles one handshake-era POST.
pub async fn post(
    transport: &Transport,
    parts: &Parts,
    accept: &Accept,
    message: Message<'_>,
    target: &Target<'_>,
    snapshot: &Snapshot,
) -> Result<Response<Body>, Error> {
    let is_initialize = message.method() == Some("initialize");
    let header_version = header_version(parts, is_initialize)?;
    let version = header_version.unwrap_or(DEFAULT_HANDSHAKE_VERSION);
    let call = CallContext::from_headers(&parts.headers);
    let scope = Scope {
        tenant: &target.tenant,
        client: &target.client,
        snapshot,
        era: Era::Handshake,
        version,
        call: &call,
    };
    match message {
        Message::Request { id, method, params } => {
            let outcome = transport
                .dispatcher
                .request(&scope, method, params.as_ref())
                .await;
            let framing = framing(accept, transport.settings.prefer_sse);
            let size = outcome.as_ref().map_or(0, |r| reply::result_bytes(r).len());
            Ok(reply::inline(
                StatusCode::OK,
                framing,
                SmallVec::new(),
                None,
                size,
                |out| reply::write_outcome(out, id, &outcome),
            ))
        }
        Message::Notification { method, params } => {
            let _effect = transport
                .dispatcher
                .notification(&scope, method, params.as_ref());
            Ok(response::empty(StatusCode::ACCEPTED))
        }
        // "If the input is a JSON-RPC response or notification: if the server accepts the
        // input, the server MUST return HTTP status code 202 Accepted with no body."
        Message::Response { .. } | Message::ErrorResponse { .. } => {
            Ok(response::empty(StatusCode::ACCEPTED))
        }
    }
}

/// The `MCP-Protocol-Version` header, checked: "If the server receives a request with an invalid
/// or unsupported MCP-Protocol-Version, it MUST respond with 400 Bad Request." A missing header
/// is not an error (§4.6), and `initialize` negotiates in its body whatever the header says.
fn header_version(parts: &Parts, is_initialize: bool) -> Result<Option<&'static str>, Error> {
    let Some(value) = parts.headers.get(MCP_PROTOCOL_VERSION) else {
        return Ok(None);
    };
    let known = HANDSHAKE_VERSIONS
        .iter()
        .copied()
        .find(|v| v.as_bytes() == value.as_bytes());
    match known {
        Some(version) => Ok(Some(version)),
        None if is_initialize => Ok(None),
        None => Err(Error::BadRequest("unsupported MCP-Protocol-Version".into())),
    }
}

/// `GET …/mcp`: the standalone stream.
pub async fn get(
    _transport: &Transport,
    _parts: &Parts,
    _target: &Target<'_>,
) -> Result<Response<Body>, Error> {
    Err(Error::MethodNotAllowed { allow: "POST" })
}

/// `DELETE …/mcp`: ends the session.
pub async fn delete(
    _transport: &Transport,
    _parts: &Parts,
    _target: &Target<'_>,
) -> Result<Response<Body>, Error> {
    Err(Error::MethodNotAllowed { allow: "POST" })
}
