//! A task's event stream over SSE (`SendStreamingMessage`, `SubscribeToTask`): `data:` frames
//! holding one JSON-RPC response each around the request id (no `event:` name, no `id:`; A2A
//! has no `Last-Event-ID` resumption), the Task snapshot first, then every event in order,
//! `: keepalive` comments while idle, closed after the event that ends the task's stream
//! (terminal or interrupted). 0.3 events are translated on the way out, the last status event
//! carrying `final: true`.
//!
//! A subscriber that falls too far behind the task's live feed is caught up with a fresh Task
//! snapshot instead of being cut. Closing the stream never cancels the task.
//!
//! Must not run or change tasks.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::Response;
use serde_json::Value;
use tokio::sync::mpsc;

use super::agent::{Agent, Call};
use super::methods::TaskStream;
use super::model::StreamResponse;
use super::rpc;
use super::v03::{self, Version};
use crate::http::response::{self, Body};

/// Frames buffered between the task and the connection.
const CHANNEL_FRAMES: usize = 32;

/// Times a lagging subscriber is caught up with a snapshot before its stream is ended.
const CATCH_UPS: usize = 3;

/// Answers with the event stream of `stream`, fed by a spawned task.
pub(crate) fn respond(
    agent: &Arc<Agent>,
    call: &Call<'_>,
    stream: Box<TaskStream>,
) -> Response<Body> {
    let (tx, rx) = mpsc::channel::<Bytes>(CHANNEL_FRAMES);
    let agent = Arc::clone(agent);
    let owner = call.owner.clone();
    let id = call.id.clone();
    let version = call.version;
    let keepalive = agent.keepalive.max(Duration::from_millis(10));
    tokio::spawn(async move {
        let TaskStream {
            first,
            mut subscription,
        } = *stream;
        let task_id = match &first {
            StreamResponse::Task(task) => task.id.clone(),
            _ => String::new(),
        };
        let ended = first.ends_stream();
        if tx.send(frame(&id, version, &first)).await.is_err() || ended {
            return;
        }
        let mut catch_ups = 0;
        loop {
            let Some(live) = subscription.as_mut() else {
                return;
            };
            let next = tokio::select! {
                next = live.next() => next,
                () = tx.closed() => return,
                () = tokio::time::sleep(keepalive) => {
                    if tx.send(Bytes::from_static(b": keepalive\n\n")).await.is_err() {
                        return;
                    }
                    continue;
                }
            };
            match next {
                Some(event) => {
                    let ended = event.ends_stream();
                    if tx.send(frame(&id, version, &event)).await.is_err() || ended {
                        return;
                    }
                }
                // Fell behind (or the task went): catch up from the current snapshot.
                None if catch_ups < CATCH_UPS => {
                    catch_ups += 1;
                    subscription = agent.store.subscribe(&owner, &task_id).await.ok().flatten();
                    let Some(fresh) = &subscription else { return };
                    let event = StreamResponse::Task(fresh.snapshot.clone());
                    let ended = event.ends_stream();
                    if tx.send(frame(&id, version, &event)).await.is_err() || ended {
                        return;
                    }
                }
                None => return,
            }
        }
    });
    response::event_stream(Body::channel(rx))
}

/// One `data:` frame holding the response to `id` with `event` as its result.
fn frame(id: &[u8], version: Version, event: &StreamResponse) -> Bytes {
    let value = serde_json::to_value(event).unwrap_or(Value::Null);
    let value = if version.is_v1() {
        value
    } else {
        v03::event_to_v03(&value, event.ends_stream())
    };
    rpc::sse_event(&rpc::result(id, &value))
}
