//! The handshake era (2024-11-05 … 2025-11-25) on `/runtime/{tenant}/{client}/mcp`: POST with
//! sessions, the standalone GET stream with `Last-Event-ID` resumption, and DELETE.
//!
//! POST (MCP 2025-11-25, Transports § Streamable HTTP): `initialize` mints a session
//! (`Mcp-Session-Id`) unless sessions are off, and accepts a stale session id (it simply mints a
//! new one); any other message names its session: unknown, expired, deleted or another owner's →
//! 404 (`docs/mcp-pitfalls.md` point 1), missing when `require_session` → 400. The version in force
//! is the `MCP-Protocol-Version` header (unknown → 400), else the session's, else 2025-03-26
//! (Streamable HTTP § Protocol Version Header). Requests are answered as SSE unless `post_framing =
//! "json"` (or the client prefers JSON, or on the BOS platform endpoint), inline when the reply is
//! ready at once; a session's `tools/call` that has to wait primes its stream at once and goes on
//! in a task of its own (`streamed_call`). Within a session an SSE answer is registered with the
//! stream registry as a `Post` stream so it can be resumed, and opens with a priming event when the
//! session negotiated 2025-11-25 or later (`docs/mcp-pitfalls.md` point 3). JSON-RPC errors of a
//! valid request stay on HTTP 200. `notifications/cancelled` aborts the named in-flight request of
//! the session, which then sends no response (its SSE answer ends without one).
//!
//! GET → the standalone stream (406 without `text/event-stream` in Accept, 409 for a second one,
//! 405 when SSE or sessions are off, 400/404 for the session as above). DELETE → 204, then 404.
//! Must not implement MCP methods.

use std::future::Future;
use std::sync::Arc;
use std::task::Poll;

use bytes::{Bytes, BytesMut};
use futures_util::future::Abortable;
use http::request::Parts;
use http::{Response, StatusCode};
use smallvec::SmallVec;
use tokio::sync::mpsc;

use super::inflight::id_from_json;
use super::owned::{self, OwnedCall};
use super::reply::{self, Framing};
use super::source_results;
use super::stateless::framing;
use super::stream::{Resumed, StreamError, StreamKind};
use super::{PostFraming, Transport, LAST_EVENT_ID, MCP_PROTOCOL_VERSION, MCP_SESSION_ID};
use crate::access::Admitted;
use crate::auth::Caller;
use crate::http::negotiate::Accept;
use crate::http::response::{self, Body, INLINE_FRAMES};
use crate::http::{Error, Target};
use crate::jsonrpc::{Id, Message};
use crate::log_limit::{warn_limited, Kind};
use crate::mcp::{names, NotificationEffect, Reply, Scope};
use crate::protocol::{Era, ProtocolVersion};
use crate::rescue::SessionCap;
use crate::session::{NewSession, Owner, SessionError, SessionId, SessionInfo};

/// A request's validated session.
#[derive(Debug, Clone)]
pub(crate) struct Bound {
    /// The session id.
    pub id: SessionId,
    /// What the store knows about it.
    pub info: SessionInfo,
}

/// The owner a session of this target is bound to: tenant and client from the path, and the
/// authenticated caller. A request naming a session whose owner differs is answered exactly like
/// one naming an unknown session (404): MCP 2025-11-25, Security Best Practices § Session
/// Hijacking binds session ids to the authenticated user.
pub(crate) fn owner<'a>(target: &'a Target<'_>, caller: &'a Caller) -> Owner<'a> {
    Owner::new(&target.tenant, &target.client, &caller.caller_id)
}

/// Handles one handshake-era POST.
pub(crate) async fn post(
    transport: &Arc<Transport>,
    parts: &Parts,
    accept: &Accept,
    message: Message<'_>,
    target: &Target<'_>,
    admitted: &Admitted,
) -> Result<Response<Body>, Error> {
    let (snapshot, caller, platform) = (&*admitted.snapshot, &admitted.caller, admitted.platform);
    let is_initialize = matches!(
        message,
        Message::Request {
            method: names::INITIALIZE,
            ..
        }
    );
    let header_version = header_version(parts, is_initialize)?;
    let owner = owner(target, caller);
    let session = if is_initialize || !transport.settings.sessions_enabled {
        // "Accept a stale Mcp-Session-Id on initialize": it mints a new session anyway.
        None
    } else {
        session_from_header(transport, parts, owner).await?
    };
    if session.is_none()
        && !is_initialize
        && transport.settings.sessions_enabled
        && transport.settings.require_session
    {
        return Err(session_required());
    }
    let version = header_version
        .or(session.as_ref().map(|s| s.info.version))
        .unwrap_or(ProtocolVersion::DEFAULT_HANDSHAKE);
    let call = super::call_context(transport, parts, admitted.external.clone(), &message);
    let scope = Scope::new(
        &target.tenant,
        &target.client,
        snapshot,
        Some(&admitted.view),
        (Era::Handshake, version),
        &call,
        caller,
    )
    .with_session(session.as_ref().map(|bound| bound.id))
    .with_platform(platform)
    .with_stream_sources(accept.accepts_sse());

    match message {
        Message::Request { id, method, params } => {
            // SSE by default, except on the BOS platform endpoint (JSON unless the reply
            // streams, like the stateless era).
            let sse_default = transport.settings.post_framing == PostFraming::Sse && !platform;
            let framing = framing(accept, sse_default);
            if let (Some(bound), Framing::Sse, names::TOOLS_CALL) = (&session, framing, method) {
                let snapshot = Arc::clone(&admitted.snapshot);
                let limits = transport.settings.json_limits;
                let call = OwnedCall::new(&scope, snapshot, id, params.as_ref(), limits)
                    .with_progress(params.as_ref());
                return streamed_call(transport, owner, bound, id, call).await;
            }
            let dispatch = transport
                .dispatcher
                .request(&scope, method, params.as_ref());
            let Some(bound) = session else {
                let outcome = dispatch.await;
                if let Ok(Reply::Federated(call)) = outcome {
                    return Ok(source_results::respond(transport, id, call));
                }
                return initialized_or_plain(transport, owner, id, framing, outcome).await;
            };
            // One poll first: a dispatch that completes at once (`ping`, cached listings) can
            // never be cancelled, so it skips the in-flight map.
            let mut dispatch = std::pin::pin!(dispatch);
            let first = std::future::poll_fn(|cx| Poll::Ready(dispatch.as_mut().poll(cx))).await;
            let completed = match first {
                Poll::Ready(outcome) => Ok(outcome),
                Poll::Pending => {
                    // In flight until it completes: `notifications/cancelled` aborts it here.
                    let (_registration, abort) =
                        transport.inflight.register(bound.id, id.to_owned_id());
                    Abortable::new(dispatch, abort).await
                }
            };
            match completed {
                Ok(Ok(Reply::Federated(call))) => Ok(source_results::respond(transport, id, call)),
                Ok(outcome) => {
                    let size = outcome
                        .as_ref()
                        .map_or(0, |reply| reply::result_bytes(reply).len());
                    Ok(session_answer(
                        transport,
                        owner,
                        &bound,
                        framing,
                        size,
                        |out| reply::write_outcome(out, id, &outcome),
                    ))
                }
                // "The receiver SHOULD NOT reply": the answer ends without a response.
                Err(_aborted) => Ok(cancelled_answer(transport, owner, &bound)),
            }
        }
        Message::Notification { method, params } => {
            let effect = transport
                .dispatcher
                .notification(&scope, method, params.as_ref());
            if let Some(bound) = &session {
                match effect {
                    NotificationEffect::Initialized => {
                        // A session that vanished meanwhile answers 404 on its next request.
                        let _ = transport.sessions.mark_initialized(&bound.id, owner).await;
                    }
                    NotificationEffect::Cancel(request_id) => {
                        // Unknown or finished ids are ignored: races are normal.
                        if let Some(request_id) = id_from_json(&request_id) {
                            transport.inflight.cancel(&bound.id, &request_id);
                        }
                    }
                    NotificationEffect::None => {}
                }
            }
            Ok(response::empty(StatusCode::ACCEPTED))
        }
        // "If the input is a JSON-RPC response or notification: if the server accepts the
        // input, the server MUST return HTTP status code 202 Accepted with no body."
        Message::Response { .. } | Message::ErrorResponse { .. } => {
            Ok(response::empty(StatusCode::ACCEPTED))
        }
    }
}

/// The answer of a request outside any session: `initialize` mints one here.
async fn initialized_or_plain(
    transport: &Transport,
    owner: Owner<'_>,
    id: Id<'_>,
    framing: Framing,
    outcome: Result<Reply, crate::mcp::McpError>,
) -> Result<Response<Body>, Error> {
    let mut session_id = None;
    if let Ok(Reply::Initialized {
        version,
        client_info,
        client_capabilities,
        ..
    }) = &outcome
    {
        if transport.settings.sessions_enabled {
            let new = NewSession {
                owner,
                version: *version,
                client_info,
                capabilities: client_capabilities,
            };
            let minted = transport
                .sessions
                .create(new)
                .await
                .map_err(session_error)?;
            session_id = Some(minted);
        }
    }
    let size = outcome
        .as_ref()
        .map_or(0, |reply| reply::result_bytes(reply).len());
    let mut answer = reply::inline(
        StatusCode::OK,
        framing,
        SmallVec::new(),
        None,
        size,
        |out| reply::write_outcome(out, id, &outcome),
    );
    if let Some(session_id) = session_id {
        answer
            .headers_mut()
            .insert(MCP_SESSION_ID, session_id.to_header_value());
    }
    Ok(answer)
}

/// The inline answer of a request within a session. As SSE it is registered as a `Post` stream
/// (priming first when the session negotiated ≥ 2025-11-25), so a client that loses it can
/// resume with `Last-Event-ID`; the frames go out in the same response body, without a task.
fn session_answer(
    transport: &Transport,
    owner: Owner<'_>,
    bound: &Bound,
    framing: Framing,
    size_hint: usize,
    write: impl FnOnce(&mut BytesMut),
) -> Response<Body> {
    if framing == Framing::Json {
        return reply::inline(
            StatusCode::OK,
            framing,
            SmallVec::new(),
            None,
            size_hint,
            write,
        );
    }
    let mut message = BytesMut::with_capacity(size_hint + 64);
    write(&mut message);
    // Registered, retained for resumption and ended in one step: the answer is complete.
    let (priming, frame) = transport.streams.inline_answer(
        bound.id,
        owner,
        bound.info.version.has_priming(),
        &message,
    );
    let mut frames: SmallVec<[Bytes; INLINE_FRAMES]> = SmallVec::new();
    frames.extend(priming);
    frames.push(frame);
    response::event_stream(Body::frames(frames))
}

/// A `tools/call` of a session answered as SSE, owning its inputs so it can outlive the
/// handler: the one request that may wait on a downstream. Its `Post` stream is registered
/// before anything runs (`max_streams_per_session` refuses with 429 a call that would not get
/// one). A call that completes at its first poll is answered inline (priming and response as
/// known frames, no task); otherwise the priming event goes out at once, the call goes on in a
/// task of its own, the registry's janitor writes keep-alives while it runs, list_changed may
/// arrive on the stream, and the response ends it. A client that goes away does not cancel the
/// call (MCP 2025-11-25, Transports, "Resumability and Redelivery": a disconnect is not a
/// cancellation): the response waits in the
/// stream's ring for a resume; `notifications/cancelled` and DELETE do cancel it.
async fn streamed_call(
    transport: &Arc<Transport>,
    owner: Owner<'_>,
    bound: &Bound,
    id: Id<'_>,
    (call, mut progress): (OwnedCall, Option<mpsc::Receiver<Bytes>>),
) -> Result<Response<Body>, Error> {
    let writer = transport
        .streams
        .open_inline(bound.id, owner)
        .map_err(stream_error)?;
    let priming = bound.info.version.has_priming();
    let mut dispatch = call.run(Arc::clone(&transport.dispatcher));
    let first = std::future::poll_fn(|cx| Poll::Ready(dispatch.as_mut().poll(cx))).await;
    let outcome = match first {
        Poll::Ready(Ok(Reply::Federated(call))) => {
            // The federated read streams its own, non-resumable answer.
            writer.finish();
            return Ok(source_results::respond(transport, id, call));
        }
        Poll::Ready(outcome) => outcome,
        Poll::Pending => {
            let (rx, backlog) = writer.connect().map_err(stream_error)?;
            if priming {
                // The stream's first frame, into a fresh channel: this never waits.
                writer.prime(None).await.map_err(stream_error)?;
            }
            let transport = Arc::clone(transport);
            let (session, request_id) = (bound.id, id.to_owned_id());
            tokio::spawn(async move {
                let (_registration, abort) =
                    transport.inflight.register(session, request_id.clone());
                // Progress notifications go on the stream as they come (resumable like the
                // response), all of them before it.
                let run = Abortable::new(dispatch, abort);
                let write = |message: Bytes| {
                    let writer = &writer;
                    async move {
                        let _ = writer.send(&message).await;
                    }
                };
                let Ok(outcome) = owned::with_progress(run, progress.as_mut(), write).await else {
                    // "The receiver SHOULD NOT reply": the stream ends without a response.
                    writer.finish();
                    return;
                };
                let outcome = owned::settle(&transport.dispatcher, outcome).await;
                let mut message = BytesMut::new();
                reply::write_outcome(&mut message, &request_id, &outcome);
                // Waits for room; a client that left gets it from the ring on resume.
                let _ = writer.send(&message).await;
                writer.finish();
            });
            // Not cut by the server's drain: the response is what the client waits for.
            return Ok(response::event_stream(Body::channel(rx).counted(backlog)));
        }
    };
    let size = outcome
        .as_ref()
        .map_or(0, |reply| reply::result_bytes(reply).len());
    let mut message = BytesMut::with_capacity(size + 64);
    reply::write_outcome(&mut message, id, &outcome);
    let mut frames: SmallVec<[Bytes; INLINE_FRAMES]> = SmallVec::new();
    if priming {
        frames.extend(writer.push_priming(None).ok());
    }
    // Progress reported before the call completed at its first poll comes first.
    if let Some(progress) = progress.as_mut() {
        while let Ok(note) = progress.try_recv() {
            frames.extend(writer.push(note.as_ref()).ok());
        }
    }
    frames.extend(writer.push(&message).ok());
    writer.finish();
    Ok(response::event_stream(Body::frames(frames)))
}

/// A cancelled request's answer: an SSE body that ends without a response (just the priming
/// event when the session gets those, so a resume finds the stream and nothing after it).
fn cancelled_answer(transport: &Transport, owner: Owner<'_>, bound: &Bound) -> Response<Body> {
    let mut frames: SmallVec<[Bytes; INLINE_FRAMES]> = SmallVec::new();
    if let Ok(writer) = transport.streams.open_inline(bound.id, owner) {
        if bound.info.version.has_priming() {
            frames.extend(writer.push_priming(None).ok());
        }
        writer.finish();
    }
    response::event_stream(Body::frames(frames))
}

/// The `MCP-Protocol-Version` header, checked: "If the server receives a request with an invalid or
/// unsupported MCP-Protocol-Version, it MUST respond with 400 Bad Request." A missing header is not
/// an error (Streamable HTTP § Protocol Version Header), and `initialize` negotiates in its body
/// whatever the header says. The refusal carries no id, whatever the body: the runtime specification
/// answers an unsupported protocol version "with an HTTP error status whose body carries a JSON-RPC
/// error with no id".
fn header_version(parts: &Parts, is_initialize: bool) -> Result<Option<ProtocolVersion>, Error> {
    let Some(value) = parts.headers.get(MCP_PROTOCOL_VERSION) else {
        return Ok(None);
    };
    match ProtocolVersion::parse_in(Era::Handshake, value.as_bytes()) {
        Some(version) => Ok(Some(version)),
        None if is_initialize => Ok(None),
        None => Err(Error::UnsupportedVersionHeader),
    }
}

/// The session the `Mcp-Session-Id` header names, validated against the owner; `None` when
/// the header is absent. Malformed, unknown, expired, deleted or foreign ids → 404.
pub(crate) async fn session_from_header(
    transport: &Transport,
    parts: &Parts,
    owner: Owner<'_>,
) -> Result<Option<Bound>, Error> {
    let Some(value) = parts.headers.get(MCP_SESSION_ID) else {
        return Ok(None);
    };
    validate(transport, value.as_bytes(), owner).await.map(Some)
}

/// Validates a session id given as text.
pub(crate) async fn validate(
    transport: &Transport,
    text: &[u8],
    owner: Owner<'_>,
) -> Result<Bound, Error> {
    let id = SessionId::parse(text).ok_or_else(session_not_found)?;
    match transport.sessions.validate(&id, owner).await {
        Ok(info) => Ok(Bound { id, info }),
        Err(err) => Err(transport
            .session_failure(err, owner, &id, crate::audit::Surface::Mcp)
            .await),
    }
}

/// 404: "A session id the server does not recognise … is always answered with HTTP 404, which
/// tells the client to initialize afresh."
pub(crate) fn session_not_found() -> Error {
    Error::SessionNotFound
}

/// 400: a session is required and the request named none.
pub(crate) fn session_required() -> Error {
    Error::SessionRequired("the Mcp-Session-Id header")
}

/// A store failure as an HTTP error.
pub(crate) fn session_error(err: SessionError) -> Error {
    match err {
        SessionError::NotFound | SessionError::Foreign => session_not_found(),
        SessionError::TenantCapReached { cap } => Error::SessionCapReached {
            cap: SessionCap::Tenant,
            limit: cap,
        },
        SessionError::CallerCapReached { cap } => Error::SessionCapReached {
            cap: SessionCap::Caller,
            limit: cap,
        },
        SessionError::Unavailable(_) => Error::Unavailable("session store unavailable".into()),
    }
}

/// `GET …/mcp`: the standalone stream, or the resumption of a stream by `Last-Event-ID`.
pub(crate) async fn get(
    transport: &Transport,
    parts: &Parts,
    target: &Target<'_>,
    caller: &Caller,
) -> Result<Response<Body>, Error> {
    let settings = &transport.settings;
    if !settings.sessions_enabled {
        return Err(Error::MethodNotAllowed { allow: "POST" });
    }
    // "When the SSE transport is switched off the GET is answered with HTTP 405."
    if !settings.sse_enabled {
        return Err(Error::MethodNotAllowed {
            allow: "POST, DELETE",
        });
    }
    // "The client must list text/event-stream in Accept; anything else is answered with 406."
    let accept = Accept::from_headers(&parts.headers);
    if !(accept.is_present() && accept.accepts_sse()) {
        return Err(Error::NotAcceptable("Accept must allow text/event-stream"));
    }
    header_version(parts, false)?;
    let owner = owner(target, caller);
    // A standalone stream belongs to a session.
    let bound = session_from_header(transport, parts, owner)
        .await?
        .ok_or_else(session_required)?;

    if let Some(last_event_id) = parts.headers.get(LAST_EVENT_ID) {
        match transport
            .streams
            .resume(last_event_id.as_bytes(), &bound.id, owner)
        {
            Ok(Resumed::Replay { rx, backlog, .. }) => {
                register_holder(transport, owner, &bound.id).await;
                return Ok(response::event_stream(
                    Body::stream(rx, &transport.drain).counted(backlog),
                ));
            }
            // Nothing to resume: a fresh stream, nothing replayed.
            Ok(Resumed::Fresh) => {}
            Err(err) => return Err(stream_error(err)),
        }
    }

    let opened = transport
        .streams
        .open(Some(bound.id), owner, StreamKind::Get)
        .map_err(stream_error)?;
    if bound.info.version.has_priming() {
        // A fresh channel has room: this does not wait.
        opened.writer.prime(None).await.map_err(stream_error)?;
    }
    // The stream lives while its connection does; the writer handle is not needed for that.
    drop(opened.writer);
    register_holder(transport, owner, &bound.id).await;
    Ok(response::event_stream(
        Body::stream(opened.rx, &transport.drain).counted(opened.backlog),
    ))
}

/// Records this instance as the holder of `session`'s live stream on a shared backplane, so
/// messages posted to other instances reach it at once (nothing to do on a single instance).
/// A failure only delays routing until the next registry-wide refresh: the stream is served.
pub(crate) async fn register_holder(transport: &Transport, owner: Owner<'_>, session: &SessionId) {
    if !transport.bus.is_shared() {
        return;
    }
    if let Err(err) = transport.bus.register_holder(owner, session).await {
        warn_limited!(
            owner.tenant,
            Kind::Backplane,
            %err,
            "stream holder not registered; the next refresh retries"
        );
    }
}

/// A registry failure as an HTTP error.
fn stream_error(err: StreamError) -> Error {
    match err {
        StreamError::Conflict => Error::Conflict("the session already has a live stream".into()),
        StreamError::Closed => session_not_found(),
        StreamError::TooMany { max } => {
            Error::TooManyRequests(format!("the session holds {max} open streams already").into())
        }
        _ => Error::Internal,
    }
}

/// `DELETE …/mcp`: ends the session, closes its streams and cancels its in-flight requests
/// (their downstream calls are dropped; nothing more is sent for them); 204, then 404 for that
/// id.
pub(crate) async fn delete(
    transport: &Transport,
    parts: &Parts,
    target: &Target<'_>,
    caller: &Caller,
) -> Result<Response<Body>, Error> {
    if !transport.settings.sessions_enabled {
        return Err(Error::MethodNotAllowed { allow: "POST" });
    }
    let owner = owner(target, caller);
    let Some(value) = parts.headers.get(MCP_SESSION_ID) else {
        return Err(session_required());
    };
    let id = SessionId::parse(value.as_bytes()).ok_or_else(session_not_found)?;
    if let Err(err) = transport.sessions.delete(&id, owner).await {
        return Err(transport
            .session_failure(err, owner, &id, crate::audit::Surface::Mcp)
            .await);
    }
    transport.streams.close_session(&id);
    transport.inflight.cancel_all(&id);
    if transport.bus.is_shared() {
        // Streams of the session held by another instance end there.
        if let Err(err) = transport.bus.close_elsewhere(owner, &id).await {
            warn_limited!(
                owner.tenant,
                Kind::Backplane,
                %err,
                "deleted session's remote streams not closed"
            );
        }
    }
    Ok(response::empty(StatusCode::NO_CONTENT))
}
