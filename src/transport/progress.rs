//! A stateless-era (2026-07-28) `tools/call` that asked for progress (`_meta.progressToken`)
//! from a client that accepts `text/event-stream`: its `notifications/progress` are written
//! on the POST's response stream before the response (MCP 2026-07-28, Streamable HTTP: the
//! server "MAY send JSON-RPC requests and notifications before sending the JSON-RPC
//! response"; Utilities § Progress).
//!
//! The call is polled once first: one that completes at once is answered inline (the
//! progress it reported, then the response, as known frames). One that has to wait gets an
//! event stream at once and goes on in a task of its own, each progress message framed the
//! moment it is reported, `: keepalive` comments while it is quiet, the response last. No
//! event ids and no priming event: stateless streams are not resumable. The client closing
//! the stream drops the call, which cancels its downstream work (in this era cancellation is
//! the connection). The server's drain does not cut the stream; its grace bounds it.
//!
//! Must not decide what reports progress (the dispatcher's methods do) nor how a session's
//! call streams (`handshake.rs`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use http::{Response, StatusCode};
use smallvec::SmallVec;
use tokio::sync::mpsc;

use super::owned::{self, OwnedCall};
use super::reply::{self, Framing};
use super::{source_results, Transport};
use crate::http::response::{self, Body, INLINE_FRAMES};
use crate::jsonrpc::Id;
use crate::mcp::{McpError, Reply};
use crate::protocol::Era;
use crate::sse::Encoder;

/// Frames buffered between the call and the connection.
const CHANNEL_FRAMES: usize = 16;

/// Answers `id` with the event stream of `call`; a request-level failure the error table
/// answers with a status other than 200 comes back as `Err` (nothing streamed yet).
pub(crate) async fn respond(
    transport: &Transport,
    id: Id<'_>,
    (call, mut progress): (OwnedCall, Option<mpsc::Receiver<Bytes>>),
) -> Result<Response<Body>, McpError> {
    let mut dispatch = call.run(Arc::clone(&transport.dispatcher));
    let first = std::future::poll_fn(|cx| Poll::Ready(dispatch.as_mut().poll(cx))).await;
    match first {
        Poll::Ready(Ok(Reply::Federated(call))) => Ok(source_results::respond(transport, id, call)),
        Poll::Ready(Err(err))
            if crate::rescue::classify(err.failure(Era::Stateless)).0 != StatusCode::OK =>
        {
            Err(err)
        }
        Poll::Ready(outcome) => {
            let mut encoder = Encoder::new();
            let mut lead: SmallVec<[Bytes; INLINE_FRAMES]> = SmallVec::new();
            if let Some(progress) = progress.as_mut() {
                while let Ok(note) = progress.try_recv() {
                    lead.push(encoder.message(None, &note));
                }
            }
            let size = outcome.as_ref().map_or(0, |r| reply::result_bytes(r).len());
            Ok(reply::inline(
                StatusCode::OK,
                Framing::Sse,
                lead,
                None,
                size,
                |out| reply::write_outcome(out, id, &outcome),
            ))
        }
        Poll::Pending => Ok(stream(transport, id, dispatch, progress)),
    }
}

/// The event stream of a call that has to wait.
fn stream(
    transport: &Transport,
    id: Id<'_>,
    dispatch: owned::OwnedDispatch,
    mut progress: Option<mpsc::Receiver<Bytes>>,
) -> Response<Body> {
    let (tx, rx) = mpsc::channel::<Bytes>(CHANNEL_FRAMES);
    let request_id = id.to_owned_id();
    let keepalive = transport.settings.keepalive.max(Duration::from_millis(10));
    let dispatcher = Arc::clone(&transport.dispatcher);
    tokio::spawn(async move {
        let started = Instant::now();
        let last_sent = AtomicU64::new(0);
        let write = |note: Bytes| {
            let (tx, last_sent) = (&tx, &last_sent);
            async move {
                let frame = Encoder::new().message(None, &note);
                last_sent.store(millis(started), Ordering::Relaxed);
                let _ = tx.send(frame).await;
            }
        };
        let run = owned::with_progress(dispatch, progress.as_mut(), write);
        tokio::pin!(run);
        let mut ticker = tokio::time::interval(keepalive);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ticker.reset();
        let outcome = loop {
            tokio::select! {
                outcome = &mut run => break outcome,
                // The client went away: dropping the call cancels its downstream work.
                () = tx.closed() => return,
                _ = ticker.tick() => {
                    let idle = millis(started).saturating_sub(last_sent.load(Ordering::Relaxed));
                    if idle >= keepalive.as_millis() as u64 {
                        let _ = tx.try_send(Bytes::from_static(b": keepalive\n\n"));
                    }
                }
            }
        };
        let outcome = owned::settle(&dispatcher, outcome).await;
        let mut message = BytesMut::new();
        reply::write_outcome(&mut message, &request_id, &outcome);
        let _ = tx.send(Encoder::new().message(None, &message)).await;
    });
    response::event_stream(Body::channel(rx))
}

fn millis(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX)
}
