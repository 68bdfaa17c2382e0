//! The deprecated HTTP+SSE transport (2024-11-05): `GET /runtime/{t}/{c}/sse` and
//! `POST /runtime/{t}/{c}/messages?sessionId=…` (MCP 2024-11-05, Transports § HTTP with SSE).
//!
//! GET mints a session and answers a long-lived stream carrying it in `Mcp-Session-Id`; the
//! first event is `event: endpoint` whose data is the relative POST URL (path segments
//! percent-encoded; "the Python client rejects an endpoint whose scheme or host differs", so it
//! stays relative). Each POST names the session in its query (missing → 400; unknown, expired
//! or another owner's → 404; a session without a live `/sse` stream, here or on another
//! instance, → 404 too, before anything runs) and is answered 202 with an empty body, or 503
//! with a JSON-RPC error (nothing runs) when the stream's bounded outbound queue has no room
//! for its answer; a request's response then
//! arrives as an `event: message` frame on the stream, notifications produce no frame, and
//! `notifications/cancelled` aborts the named request. The session lives exactly as long as the
//! stream: when the client closes it, the session is deleted. The stream is kept alive by the
//! registry's janitor (`: keepalive`). Requests run in a task each, so a POST does not wait for
//! a slow tool (this transport is not the hot path). With several instances, a POST may land on
//! an instance that does not hold the stream: the response is then routed over the backplane
//! to the holder, which writes it. Such a request is accepted (202) only when the holder can be
//! reached now (this instance's and the holder's backplane subscriptions are up): otherwise it
//! is refused with 503 before it runs, so a client is never told "accepted" for a response that
//! cannot arrive (e.g. in the seconds after a Redis restart while subscriptions are renewed);
//! once accepted, the response is published patiently (retried while the holder is renewing
//! its subscription). Must not implement MCP methods.

use std::sync::Arc;

use bytes::BytesMut;
use futures_util::future::Abortable;
use http::request::Parts;
use http::{Response, StatusCode};
use percent_encoding::{percent_decode_str, utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

use super::handshake::{self, owner, session_error};
use super::inflight::id_from_json;
use super::reply;
use super::stream::{StreamError, StreamKind};
use super::{streamable, Transport, MCP_SESSION_ID};
use crate::access::{Admitted, Endpoint};
use crate::auth::Caller;
use crate::http::negotiate::{is_json_content_type, Accept};
use crate::http::response::{self, Body};
use crate::http::{Error, Target};
use crate::jsonrpc::{self, Message};
use crate::log_limit::{warn_limited, Kind};
use crate::mcp::{NotificationEffect, Reply, Scope};
use crate::protocol::{Era, ProtocolVersion};
use crate::session::{Handshake, NewSession, Owner};

/// The version a legacy session holds until its `initialize` negotiates one.
pub(crate) const LEGACY_VERSION: ProtocolVersion = ProtocolVersion::V2024_11_05;

/// The query parameter naming the session on `…/messages`.
pub(crate) const SESSION_QUERY: &str = "sessionId";

/// What stays literal in a path segment of the endpoint URL (RFC 3986 unreserved).
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// `GET …/sse`: mints a session and opens its stream.
pub(crate) async fn open(
    transport: &Arc<Transport>,
    parts: &Parts,
    target: &Target<'_>,
    caller: &Caller,
) -> Result<Response<Body>, Error> {
    enabled(transport)?;
    let accept = Accept::from_headers(&parts.headers);
    if !accept.accepts_sse() {
        return Err(Error::NotAcceptable("Accept must allow text/event-stream"));
    }

    let owner = owner(target, caller);
    let new = NewSession {
        owner,
        version: LEGACY_VERSION,
        client_info: b"",
        capabilities: b"",
    };
    let id = transport
        .sessions
        .create(new)
        .await
        .map_err(session_error)?;
    let opened = match transport.streams.open(Some(id), owner, StreamKind::Legacy) {
        Ok(opened) => opened,
        Err(_) => {
            let _ = transport.sessions.delete(&id, owner).await;
            return Err(Error::Internal);
        }
    };
    let endpoint = endpoint_url(&target.tenant, &target.client, id.encode().as_str());
    // A fresh channel has room: this does not wait.
    if opened
        .writer
        .send_named(b"endpoint", endpoint.as_bytes())
        .await
        .is_err()
    {
        let _ = transport.sessions.delete(&id, owner).await;
        return Err(Error::Internal);
    }

    // With several instances, `POST …/messages` reaches this stream only through its holder
    // registration, and an instance that finds none answers 404: a stream that could not be
    // registered is refused (503, the client reconnects) rather than served unreachable.
    if transport.bus.is_shared() {
        if let Err(err) = transport.bus.register_holder(owner, &id).await {
            tracing::warn!(%err, "legacy stream holder not registered; the stream is refused");
            transport.streams.close_session(&id);
            let _ = transport.sessions.delete(&id, owner).await;
            return Err(Error::Unavailable("stream registry unavailable".into()));
        }
    }
    // "Closing the stream ends the session": one small task per legacy stream waits for the
    // connection to go, then deletes the session (the registry drops its streams).
    let writer = opened.writer;
    let watcher = Arc::clone(transport);
    let (tenant, client) = (target.tenant.to_string(), target.client.to_string());
    let caller_id = Arc::clone(&caller.caller_id);
    tokio::spawn(async move {
        writer.closed().await;
        let owner = Owner::new(&tenant, &client, &caller_id);
        let _ = watcher.sessions.delete(&id, owner).await;
        watcher.streams.close_session(&id);
    });

    let mut answer =
        response::event_stream(Body::stream(opened.rx, &transport.drain).counted(opened.backlog));
    answer
        .headers_mut()
        .insert(MCP_SESSION_ID, id.to_header_value());
    Ok(answer)
}

/// `POST …/messages?sessionId=…`: 202, the response follows on the session's stream.
pub(crate) async fn post<B>(
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
    enabled(transport)?;
    let Admitted {
        snapshot,
        view,
        caller,
        external,
        ..
    } = admitted;
    let session_text = session_query(parts.uri.query())
        .ok_or(Error::SessionRequired("the sessionId query parameter"))?;
    let owner = owner(target, &caller);
    let bound = handshake::validate(transport, session_text.as_bytes(), owner).await?;
    // This transport answers on the session's `/sse` stream; a session without one (a
    // Streamable HTTP session, or a legacy one whose stream is gone) has nowhere to be answered,
    // so it is unknown here and nothing runs. With several instances the stream may be held by
    // another one (its holder registration says so); the response is then routed there.
    if transport.streams.legacy(&bound.id).is_none()
        && !transport
            .bus
            .is_held_elsewhere(owner, &bound.id)
            .await
            .map_err(|_| Error::Unavailable("stream registry unavailable".into()))?
    {
        return Err(handshake::session_not_found());
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
    let buf = streamable::read_body(parts, body, &transport.settings).await?;
    // simd-json parses in place, so the task gets its own copy to parse again.
    let raw = buf.to_vec();
    let mut parsed = buf;
    let message = jsonrpc::parse_with(&mut parsed, &transport.settings.json_limits)
        .map_err(streamable::parse_error)?;
    streamable::admit_tool_call(transport, &view, &caller, Endpoint::LegacySse, &message).await?;
    let call = super::call_context(transport, parts, external, &message);

    if matches!(message, Message::Request { .. })
        && transport.bus.is_shared()
        && transport.streams.standalone(&bound.id).is_none()
    {
        // The response must travel to the instance holding the stream: accept the request
        // only if it can arrive.
        let reachable = transport.bus.reachable(owner, &bound.id).await;
        if !matches!(reachable, Ok(true)) {
            return Err(Error::Unavailable(
                "the instance holding this session's stream cannot be reached now; retry".into(),
            ));
        }
    }

    match message {
        Message::Request { id, .. } => {
            // Room for the response on the stream is reserved before anything runs: a client
            // that does not read its stream gets 503 here instead of growing the server's
            // memory with answers nobody takes. The reservation counts the request copy the
            // task holds until its answer is queued. No stream here (another instance holds
            // it, or it just closed): the answer is routed as before.
            let reserved = match transport.streams.reserve(&bound.id, raw.len()) {
                Ok(reserved) => Some(reserved),
                Err(StreamError::Full) => {
                    return Err(Error::StreamQueueFull {
                        id: Some(id.to_owned_id()),
                    });
                }
                Err(_) => None,
            };
            let transport = Arc::clone(transport);
            let (tenant, client) = (target.tenant.to_string(), target.client.to_string());
            tokio::spawn(async move {
                let mut raw = raw;
                let limits = &transport.settings.json_limits;
                let Ok(Message::Request { id, method, params }) =
                    jsonrpc::parse_with(&mut raw, limits)
                else {
                    return;
                };
                let owner = Owner::new(&tenant, &client, &caller.caller_id);
                let scope = Scope::new(
                    &tenant,
                    &client,
                    &snapshot,
                    Some(&view),
                    (Era::Handshake, bound.info.version),
                    &call,
                    &caller,
                )
                .with_session(Some(bound.id))
                .with_surface(crate::audit::Surface::LegacySse);
                let (_registration, abort) =
                    transport.inflight.register(bound.id, id.to_owned_id());
                let dispatch = transport
                    .dispatcher
                    .request(&scope, method, params.as_ref());
                // A cancelled request sends no response.
                let Ok(outcome) = Abortable::new(dispatch, abort).await else {
                    return;
                };
                if let Ok(Reply::Initialized {
                    version,
                    client_info,
                    client_capabilities,
                    ..
                }) = &outcome
                {
                    let handshake = Handshake {
                        version: *version,
                        client_info,
                        capabilities: client_capabilities,
                    };
                    let _ = transport
                        .sessions
                        .set_handshake(&bound.id, owner, handshake)
                        .await;
                }
                let mut out = BytesMut::new();
                reply::write_outcome(&mut out, id, &outcome);
                if let Some(reserved) = reserved {
                    // Never waits: the room is held already.
                    reserved.send(&out);
                } else if transport.bus.is_shared() {
                    // The stream is held by another instance: route the response there. No
                    // holder (the client left): the response has nowhere to go.
                    let routed = transport
                        .bus
                        .publish_patiently(owner, &bound.id, out.freeze())
                        .await;
                    if let Err(err) = routed {
                        warn_limited!(&tenant, Kind::Unrouted, %err, "legacy response not routed to its stream");
                    }
                }
            });
        }
        Message::Notification { method, params } => {
            let scope = Scope::new(
                &target.tenant,
                &target.client,
                &snapshot,
                Some(&view),
                (Era::Handshake, bound.info.version),
                &call,
                &caller,
            )
            .with_session(Some(bound.id))
            .with_surface(crate::audit::Surface::LegacySse);
            match transport
                .dispatcher
                .notification(&scope, method, params.as_ref())
            {
                NotificationEffect::Initialized => {
                    let _ = transport.sessions.mark_initialized(&bound.id, owner).await;
                }
                NotificationEffect::Cancel(request_id) => {
                    if let Some(request_id) = id_from_json(&request_id) {
                        transport.inflight.cancel(&bound.id, &request_id);
                    }
                }
                NotificationEffect::None => {}
            }
        }
        Message::Response { .. } | Message::ErrorResponse { .. } => {}
    }
    Ok(response::empty(StatusCode::ACCEPTED))
}

/// The legacy transport needs sessions and SSE; with either off the endpoints do not exist.
fn enabled(transport: &Transport) -> Result<(), Error> {
    if transport.settings.sse_enabled && transport.settings.sessions_enabled {
        Ok(())
    } else {
        Err(Error::NotFound)
    }
}

/// `/runtime/{tenant}/{client}/messages?sessionId={id}` with the segments percent-encoded.
pub(crate) fn endpoint_url(tenant: &str, client: &str, session: &str) -> String {
    format!(
        "/runtime/{}/{}/messages?{SESSION_QUERY}={}",
        utf8_percent_encode(tenant, SEGMENT),
        utf8_percent_encode(client, SEGMENT),
        utf8_percent_encode(session, SEGMENT),
    )
}

/// The `sessionId` query parameter, percent-decoded; `None` when absent or not UTF-8.
pub(crate) fn session_query(query: Option<&str>) -> Option<String> {
    query?.split('&').find_map(|pair| {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        if name != SESSION_QUERY || value.is_empty() {
            return None;
        }
        percent_decode_str(value)
            .decode_utf8()
            .ok()
            .map(|v| v.into_owned())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(query: Option<&str>, expected: Option<&str>) {
        assert_eq!(session_query(query).as_deref(), expected, "{query:?}");
    }

    #[test]
    fn session_queries() {
        check(None, None);
        check(Some(""), None);
        check(Some("sessionId="), None);
        check(Some("sessionId=abc"), Some("abc"));
        check(Some("x=1&sessionId=a%2Db"), Some("a-b"));
        check(Some("sessionid=abc"), None);
        check(Some("sessionId"), None);
        check(Some("sessionId=%FF"), None);
    }

    #[test]
    fn endpoint_urls() {
        assert_eq!(
            endpoint_url("acme", "a.b_c-D", "Zx_-9"),
            "/runtime/acme/a.b_c-D/messages?sessionId=Zx_-9"
        );
        assert_eq!(
            endpoint_url("a b", "c/d", "e"),
            "/runtime/a%20b/c%2Fd/messages?sessionId=e"
        );
    }
}
