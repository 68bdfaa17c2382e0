//! The stateless era (2026-07-28) on `POST /runtime/{tenant}/{client}/mcp`: the validation
//! ladder, inline answers, and `subscriptions/listen` streams.
//!
//! Ladder (MCP 2026-07-28, Streamable HTTP § Server Validation; `docs/eras.md`), first failing rung
//! wins, every error carrying the request id: `_meta` version present (-32602/400) →
//! `MCP-Protocol-Version` equals it and `Mcp-Method` equals the method (-32020/400) → required
//! `_meta` keys (-32602/400) and a supported version (-32022/400 with `data`) → `Mcp-Name` equals
//! the routing name for `tools/call`, `prompts/get`, `resources/read` (-32020/400) → dispatch:
//! unknown method -32601/**404**, any other handler error in-band on 200. Header values are decoded
//! from the Base64 sentinel form first ([`super::headers`]). `Mcp-Session-Id` and `Last-Event-ID`
//! are never minted nor honoured. Notifications → 202.
//!
//! Cancellation is the connection: the dispatch future runs inline in the connection's task, so
//! a client that closes its response stream drops the future, and with it any downstream call.
//! Must not implement MCP methods.

use bytes::{Bytes, BytesMut};

use http::request::Parts;
use http::{Response, StatusCode};
use smallvec::SmallVec;

use std::sync::Arc;

use super::headers::{self, HeaderMismatch};
use super::owned::OwnedCall;
use super::reply::{self, Framing};
use super::source_results;
use super::stream::StreamKind;
use super::{Transport, MCP_METHOD, MCP_NAME, MCP_PROTOCOL_VERSION};
use crate::access::Admitted;
use crate::auth::Caller;
use crate::http::negotiate::{Accept, MediaKind};
use crate::http::response::{self, Body};
use crate::http::{Error, Target};
use crate::invoke::CallContext;
use crate::jsonrpc::{self, Id, Message, OwnedId, Payload};
use crate::mcp::subscriptions::SubscriptionFilter;
use crate::mcp::{self, McpError, Reply, Scope};
use crate::protocol::{Era, ProtocolVersion};
use crate::session::Owner;
use crate::sse;

/// Handles one stateless-era POST.
pub(crate) async fn post(
    transport: &Transport,
    parts: &Parts,
    accept: &Accept,
    message: Message<'_>,
    target: &Target<'_>,
    admitted: &Admitted,
) -> Result<Response<Body>, Error> {
    let (snapshot, caller, platform) = (&*admitted.snapshot, &admitted.caller, admitted.platform);
    let (id, method, params) = match message {
        Message::Request { id, method, params } => (id, method, params),
        // "Notification POSTs get 202"; clients never POST responses, and accepting one is
        // harmless.
        Message::Notification { .. } | Message::Response { .. } | Message::ErrorResponse { .. } => {
            return Ok(response::empty(StatusCode::ACCEPTED));
        }
    };
    let params = params.as_ref();
    let version = validate(parts, id, method, params)?;

    let meta = crate::mcp::trace_context(params);
    let call = CallContext::new(admitted.external.clone()).traced(transport.access.trace_message(
        &parts.headers,
        meta,
        Some(&id),
    ));
    let scope = Scope::new(
        &target.tenant,
        &target.client,
        snapshot,
        Some(&admitted.view),
        (Era::Stateless, version),
        &call,
        caller,
    )
    .with_platform(platform)
    .with_stream_sources(accept.accepts_sse());
    if method == mcp::names::TOOLS_CALL && accept.accepts_sse() && mcp::progress::requested(params)
    {
        // Its progress goes on the response stream, before the response.
        let limits = transport.settings.json_limits;
        let call = OwnedCall::new(&scope, Arc::clone(&admitted.snapshot), id, params, limits)
            .with_progress(params);
        return super::progress::respond(transport, id, call)
            .await
            .map_err(|err| rejection(&err, id));
    }
    let outcome = transport.dispatcher.request(&scope, method, params).await;
    match &outcome {
        // What the table answers with a status other than 200 (an unknown method: 404) is a
        // rejection; every other handler error is answered in-band.
        Err(err) if crate::rescue::classify(err.failure(Era::Stateless)).0 != StatusCode::OK => {
            return Err(rejection(err, id));
        }
        Err(_) => {}
        Ok(Reply::Listen(filter)) => return listen(transport, id, *filter, target, caller).await,
        Ok(_) => {}
    }
    if let Ok(Reply::Federated(call)) = outcome {
        return Ok(source_results::respond(transport, id, call));
    }
    // JSON unless the client prefers SSE or the reply streams (`post_framing` is for the
    // handshake era).
    let framing = framing(accept, false);
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

/// JSON or SSE for an inline answer: SSE when the client prefers it, or on a tie when so
/// configured.
pub(crate) fn framing(accept: &Accept, sse_by_default: bool) -> Framing {
    match accept.preferred() {
        Some(MediaKind::EventStream) => Framing::Sse,
        Some(MediaKind::Json) => Framing::Json,
        None if sse_by_default => Framing::Sse,
        None => Framing::Json,
    }
}

/// Runs the validation ladder up to dispatch; returns the request's protocol version (the
/// `_meta` text, checked against the headers first and then against the versions this runtime
/// implements).
fn validate<'a>(
    parts: &Parts,
    id: Id<'_>,
    method: &str,
    params: Option<&Payload<'a>>,
) -> Result<ProtocolVersion, Error> {
    // "A modern header with a missing envelope: -32602/400."
    let Some(version) = mcp::meta::meta_protocol_version(params) else {
        return Err(Error::InvalidMeta {
            message: "params._meta must carry io.modelcontextprotocol/protocolVersion".into(),
            id: Some(id.to_owned_id()),
        });
    };
    // "MCP-Protocol-Version: must equal _meta["io.modelcontextprotocol/protocolVersion"]";
    // "Mcp-Method: method" on every request.
    let headers = &parts.headers;
    headers::expect_header(
        headers,
        &MCP_PROTOCOL_VERSION,
        "MCP-Protocol-Version",
        version,
    )
    .and_then(|()| headers::expect_header(headers, &MCP_METHOD, "Mcp-Method", method))
    .map_err(|err| header_error(err, id))?;
    // Required `_meta` keys (-32602) and the version (-32022), as the MCP layer defines them.
    let version = mcp::meta::validate_stateless_meta(params).map_err(|err| rejection(&err, id))?;
    // "Mcp-Name: params.name (tools/call, prompts/get) or params.uri (resources/read)".
    if let Some(name) = mcp::meta::routing_name(method, params) {
        headers::expect_header(headers, &MCP_NAME, "Mcp-Name", name)
            .map_err(|err| header_error(err, id))?;
    }
    Ok(version)
}

/// -32020 on 400 with the request id.
fn header_error(mismatch: HeaderMismatch, id: Id<'_>) -> Error {
    Error::HeaderMismatch {
        mismatch,
        id: Some(id.to_owned_id()),
    }
}

/// An MCP error the stateless era rejects with an HTTP status, as that HTTP error (the status
/// and code are the table's). `InvalidParams` only reaches here from the ladder's `_meta`
/// check (a handler's invalid params are answered in-band), so it is the `_meta` envelope that
/// is invalid.
fn rejection(err: &McpError, id: Id<'_>) -> Error {
    let id: Option<OwnedId> = Some(id.to_owned_id());
    match err {
        McpError::MethodNotFound(method) => Error::MethodNotFound {
            method: method.clone(),
            era: Era::Stateless,
            id,
        },
        McpError::InvalidParams(message) => Error::InvalidMeta {
            message: message.clone(),
            id,
        },
        McpError::MissingMeta(key) => Error::MissingMeta { key, id },
        McpError::UnsupportedVersion { requested } => Error::UnsupportedVersion {
            requested: requested.clone(),
            id,
        },
        // Answered in-band by the table; never rejected.
        McpError::ResourceNotFound { .. } | McpError::Internal => Error::Internal,
    }
}

/// `subscriptions/listen`: a long-lived SSE stream for this tenant and client, opening with
/// `notifications/subscriptions/acknowledged`; the list_changed task then writes
/// `notifications/tools/list_changed` (tagged with the subscription id) into it, and the
/// registry's janitor writes keep-alives. The stream ends when the client closes it or the
/// server drains.
async fn listen(
    transport: &Transport,
    id: Id<'_>,
    filter: SubscriptionFilter,
    target: &Target<'_>,
    caller: &Caller,
) -> Result<Response<Body>, Error> {
    let subscription_id = Bytes::copy_from_slice(id.to_owned_id().as_json());
    let owner = Owner::new(&target.tenant, &target.client, &caller.caller_id);
    let kind = StreamKind::Listen {
        subscription_id: subscription_id.clone(),
        filter,
    };
    let opened = transport
        .streams
        .open(None, owner, kind)
        .map_err(|_| Error::Internal)?;
    let acknowledged = transport
        .dispatcher
        .acknowledged_message(&filter, &subscription_id);
    // A fresh channel has room: this does not wait.
    opened
        .writer
        .send(&acknowledged)
        .await
        .map_err(|_| Error::Internal)?;
    drop(opened.writer);
    // "A graceful server-side end sends the listen request's response": on drain the stream
    // closes with `{resultType: "complete", _meta: {subscriptionId}}`.
    let result = transport.dispatcher.listen_result(&subscription_id);
    let mut framed = BytesMut::with_capacity(result.len() + 64);
    jsonrpc::write_result_raw(&mut framed, id, &result);
    let epilogue = sse::Encoder::new().message(None, &framed);
    Ok(response::event_stream(
        Body::stream_with_epilogue(opened.rx, &transport.drain, epilogue).counted(opened.backlog),
    ))
}
