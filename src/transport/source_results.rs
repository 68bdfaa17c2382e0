//! The `bos/source-results/v1` event stream of a federated read that negotiated it.
//!
//! Wire (the published `bos/source-results/v1` contract §2–§5; `src/federation/contract.md`):
//! `Content-Type: text/event-stream`, `Cache-Control: no-cache`, `X-Accel-Buffering: no`; the body
//! opens with the comment `: bos/source-results/v1`, carries one `event: message` frame per source
//! event (`notifications/bos/source_result`) the moment the federation emits it, `: keepalive`
//! comments while idle, and ends with one final frame holding the JSON-RPC response (the original
//! id and the self-contained `CallToolResult`). No event ids and no priming event: these streams
//! are not resumable, so they are not registered with the stream registry. The client closing the
//! stream drops the run, which cancels every source read at once. A server drain does not cut the
//! stream (its final result is the point); the drain grace bounds it.
//!
//! Must not decide whether to stream (the dispatcher did) nor shape events (the federation does).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::future::BoxFuture;
use http::Response;
use tokio::sync::mpsc;

use super::Transport;
use crate::federation::{EventSink, SinkClosed, SourceEvent};
use crate::http::response::{self, Body};
use crate::jsonrpc::{self, Id};
use crate::mcp::federated::FederatedCall;
use crate::sse::Encoder;

/// The comment every source-results stream opens with.
pub(crate) const OPENING_COMMENT: &[u8] = b": bos/source-results/v1\n\n";

/// Frames buffered between the run and the connection; a slow client makes the run (and so its
/// sources) wait instead of growing memory.
const CHANNEL_FRAMES: usize = 32;

/// Answers `id` with the event stream of `call`, running it on its own task.
pub(crate) fn respond(
    transport: &Transport,
    id: Id<'_>,
    call: Box<FederatedCall>,
) -> Response<Body> {
    let (tx, rx) = mpsc::channel::<Bytes>(CHANNEL_FRAMES);
    // A fresh channel has room for the opening comment.
    let _ = tx.try_send(Bytes::from_static(OPENING_COMMENT));
    let owned_id = id.to_owned_id();
    let request_id = Bytes::copy_from_slice(owned_id.as_json());
    let dispatcher = Arc::clone(&transport.dispatcher);
    let keepalive = transport.settings.keepalive.max(Duration::from_millis(10));
    tokio::spawn(async move {
        let started = Instant::now();
        let last_sent = Arc::new(AtomicU64::new(0));
        let mut sink = SseSink {
            tx: tx.clone(),
            request_id: request_id.clone(),
            context: call.context.clone(),
            encoder: Encoder::new(),
            started,
            last_sent: Arc::clone(&last_sent),
        };
        let run = dispatcher.run_federated(&call, &mut sink);
        tokio::pin!(run);
        let mut ticker = tokio::time::interval(keepalive);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ticker.reset();
        let result = loop {
            tokio::select! {
                result = &mut run => break Some(result),
                // The client went away: dropping `run` cancels every source read now.
                () = tx.closed() => break None,
                _ = ticker.tick() => {
                    let idle_ms = millis(started).saturating_sub(last_sent.load(Ordering::Relaxed));
                    if idle_ms >= keepalive.as_millis() as u64 {
                        let _ = tx.try_send(Bytes::from_static(b": keepalive\n\n"));
                    }
                }
            }
        };
        let Some(result) = result else { return };
        let mut encoder = Encoder::new();
        let frame = encoder.message_with(None, |out| {
            jsonrpc::write_result_raw(out, &owned_id, &result);
        });
        let _ = tx.send(frame).await;
    });
    // Never cut by the server's drain: the final result is what the client waits for.
    response::event_stream(Body::channel(rx))
}

/// Writes each source event as a `notifications/bos/source_result` message frame.
struct SseSink {
    tx: mpsc::Sender<Bytes>,
    request_id: Bytes,
    /// The public BOS context every notification repeats (`bos_execute` only).
    context: Option<Bytes>,
    encoder: Encoder,
    started: Instant,
    last_sent: Arc<AtomicU64>,
}

impl EventSink for SseSink {
    fn emit(&mut self, event: SourceEvent) -> BoxFuture<'_, Result<(), SinkClosed>> {
        let request_id = &self.request_id;
        let context = self.context.as_deref();
        let frame = self.encoder.message_with(None, |out| {
            event.write_notification(out, request_id, context)
        });
        self.last_sent
            .store(millis(self.started), Ordering::Relaxed);
        Box::pin(async move { self.tx.send(frame).await.map_err(|_| SinkClosed) })
    }
}

fn millis(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX)
}
