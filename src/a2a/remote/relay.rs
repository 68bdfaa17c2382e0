//! The streaming relay: `SendStreamingMessage` and `SubscribeToTask` of a registered remote
//! agent, relayed event by event.
//!
//! The upstream's SSE body is read chunk by chunk through the crate's SSE decoder (`sse/`);
//! each event's JSON-RPC response gets the caller's id and is forwarded at once (one `data:`
//! frame per event, `X-Accel-Buffering: no`, `: keepalive` comments while the upstream is
//! quiet). The payload is written as the upstream sent it (`wire.rs`); a 0.3 upstream's events
//! are translated to 1.0, a 0.3 caller's back to 0.3. The ledger learns the task's id, context
//! and every state change from task and status events (an artifact event, or a status update
//! that repeats the state, touches nothing). Upstream EOF ends the north stream; an upstream
//! quiet for `stream_idle_ms` ends it with -32603 `UPSTREAM_TIMEOUT`; a caller that goes away
//! drops the upstream connection and never cancels the task. Nothing is buffered beyond the
//! event being decoded and the frames queued for the connection.
//!
//! Per event in steady state the relay allocates the north frame only: the decoder borrows
//! the chunk, the envelope and the ids are read in place, the buffers are reused.
//!
//! Must not know the upstream's credential or address beyond the client it was given.

use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::HeaderValue;
use serde_json::Value;
use smallvec::SmallVec;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::ledger::{AgentKey, Seen};
use super::proxy::{self, ProxyCall, Reply};
use super::upstream::UpstreamResponse;
use super::wire::{self, Answer, Peek};
use crate::a2a::agent::Agent;
use crate::a2a::error::UPSTREAM_TIMEOUT;
use crate::a2a::model::TaskState;
use crate::a2a::v03::{self, Version};
use crate::a2a::{rpc, A2aError};
use crate::audit::{Outcome, Record, RemoteCall};
use crate::http::response::{self, Body};
use crate::sse::Decoder;

/// Frames queued between the relay and the connection.
const CHANNEL_FRAMES: usize = 32;

/// The comment written while the upstream is quiet.
const KEEPALIVE: &[u8] = b": keepalive\n\n";

/// Opens the upstream stream for `method` and answers with the relayed event stream; an
/// upstream that answers with a JSON error instead is answered with that error.
pub(crate) async fn open(
    call: &ProxyCall<'_>,
    method: &'static str,
    params: &Value,
) -> Result<Reply, A2aError> {
    open_with_push(call, method, params, None).await
}

/// [`open`], registering `push` (a caller's inline push configuration) once the task's id
/// is known.
pub(crate) async fn open_with_push(
    call: &ProxyCall<'_>,
    method: &'static str,
    params: &Value,
    push: Option<super::push::Inline>,
) -> Result<Reply, A2aError> {
    let interface = &call.fetched.card.interface;
    let (wire_method, mut wire_params) = call.for_upstream(method, params)?;
    let (headers, span) = call.upstream_headers(method, wire_method, &mut wire_params);
    let upstream_id = call.remote.upstream_id();
    let body = wire::request_body(&upstream_id, wire_method, &wire_params);
    let response = call
        .upstream
        .post(&interface.url, interface.version, body, &headers)
        .await
        .map_err(|err| {
            if let Some(span) = &span {
                span.fail("upstream_error");
            }
            proxy::upstream_error(err)
        })?;
    if let Some(span) = &span {
        span.status(response.status().as_u16());
    }
    if !response.is_event_stream() {
        let bytes = response
            .collect(call.remote.config.max_response_bytes)
            .await
            .map_err(proxy::upstream_error)?;
        call.seen.lock().bytes += bytes.len() as u64;
        return match wire::read_answer(&bytes, &upstream_id)? {
            answer @ Answer::Error(_) => call.reply_of(method, &bytes, answer).map(Reply::from),
            Answer::Result(_) => Err(A2aError::InvalidAgentResponse),
        };
    }
    let (tx, rx) = mpsc::channel(CHANNEL_FRAMES);
    let seen = call.seen.lock().clone();
    let relay = Relay {
        agent: Arc::clone(call.agent),
        key: call.key.clone(),
        caller: Arc::clone(&call.caller),
        caller_id: call.id.clone(),
        upstream_id,
        caller_version: call.version,
        upstream_version: interface.version,
        keepalive: call.agent.keepalive.max(Duration::from_millis(10)),
        idle: Duration::from_millis(call.remote.config.stream_idle_ms.max(1)),
        max_frame: call.remote.config.max_response_bytes,
        tx,
        recorded_task: seen.task_id.is_some(),
        recorded_state: TaskState::Unspecified,
        push,
        _span: span,
        close: CloseRecord {
            base: call.record_base(method),
            remote: seen,
            started: Instant::now(),
        },
    };
    tokio::spawn(relay.run(response));
    let mut answer = response::event_stream(Body::channel(rx));
    answer
        .headers_mut()
        .insert("x-accel-buffering", HeaderValue::from_static("no"));
    Ok(Reply::Stream(Box::new(answer)))
}

/// The stream's close record, filled in as events pass.
struct CloseRecord {
    base: Record,
    remote: RemoteCall,
    started: Instant,
}

/// Why a relay ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// The upstream closed its stream.
    Eof,
    /// The caller went away (the task goes on upstream).
    CallerGone,
    /// The upstream failed or said something that is not A2A; the caller was told.
    Failed(i32),
}

/// One frame for the caller and what it showed the ledger.
struct Frame {
    bytes: Bytes,
    seen: Option<Seen>,
}

struct Relay {
    agent: Arc<Agent>,
    key: AgentKey,
    caller: Arc<str>,
    caller_id: Bytes,
    upstream_id: String,
    caller_version: Version,
    upstream_version: Version,
    keepalive: Duration,
    idle: Duration,
    max_frame: usize,
    tx: mpsc::Sender<Bytes>,
    /// Whether the ledger knows the task (its id was seen or named by the request).
    recorded_task: bool,
    /// The last state written to the ledger.
    recorded_state: TaskState,
    push: Option<super::push::Inline>,
    /// The upstream call's CLIENT span (telemetry on): it ends with the stream.
    _span: Option<crate::telemetry::ClientSpan>,
    close: CloseRecord,
}

impl Relay {
    async fn run(mut self, mut response: UpstreamResponse) {
        let mut buf = BytesMut::with_capacity(8 * 1024);
        let mut decoder = Decoder::with_max_frame(self.max_frame.max(1024));
        let mut frames: SmallVec<[Frame; 4]> = SmallVec::new();
        let mut last_data = Instant::now();
        let mut last_sent = Instant::now();
        // The select below borrows this sender, its handlers the relay.
        let closed = self.tx.clone();
        let end = 'relay: loop {
            let idle_at = last_data + self.idle;
            let keepalive_at = last_sent + self.keepalive;
            tokio::select! {
                biased;
                () = closed.closed() => break End::CallerGone,
                chunk = response.next_chunk(self.idle) => match chunk {
                    Ok(Some(chunk)) => {
                        last_data = Instant::now();
                        self.close.remote.bytes += chunk.len() as u64;
                        buf.extend_from_slice(&chunk);
                        let mut failed = None;
                        let decoded = decoder.decode_with(&mut buf, |event| {
                            if failed.is_none() {
                                match self.transform(event.data) {
                                    Ok(frame) => frames.push(frame),
                                    Err(err) => failed = Some(err),
                                }
                            }
                        });
                        if decoded.is_err() && failed.is_none() {
                            failed = Some(A2aError::InvalidAgentResponse);
                        }
                        for frame in frames.drain(..) {
                            if let Some(seen) = frame.seen {
                                self.remember(seen).await;
                            }
                            if self.tx.send(frame.bytes).await.is_err() {
                                break 'relay End::CallerGone;
                            }
                            last_sent = Instant::now();
                            *self.close.remote.events.get_or_insert(0) += 1;
                        }
                        if let Some(err) = failed {
                            break self.fail(&err).await;
                        }
                    }
                    Ok(None) => break End::Eof,
                    Err(err) => break self.fail(&proxy::upstream_error(err)).await,
                },
                () = tokio::time::sleep_until(idle_at.min(keepalive_at)) => {
                    if Instant::now() >= idle_at {
                        break self.fail(&A2aError::Upstream(UPSTREAM_TIMEOUT)).await;
                    }
                    if self.tx.send(Bytes::from_static(KEEPALIVE)).await.is_err() {
                        break End::CallerGone;
                    }
                    last_sent = Instant::now();
                }
            }
        };
        // Dropping the response here closes the upstream connection unless it was read to
        // its end (then it went back to the pool).
        drop(response);
        self.finish(end).await;
    }

    /// Tells the caller why its stream ends.
    async fn fail(&self, err: &A2aError) -> End {
        let answer = rpc::error(Some(&self.caller_id), err, self.caller_version.is_v1());
        let _ = self.tx.send(rpc::sse_event(&answer)).await;
        End::Failed(err.code().0)
    }

    /// One upstream event's data → the caller's frame.
    fn transform(&mut self, data: &[u8]) -> Result<Frame, A2aError> {
        match wire::read_event(data, &self.upstream_id)? {
            Answer::Error(raw) => {
                let error = if self.upstream_version.is_v1() {
                    Bytes::copy_from_slice(raw.as_bytes())
                } else {
                    let mut error: Value =
                        serde_json::from_str(raw).map_err(|_| A2aError::InvalidAgentResponse)?;
                    if let Some(data) = error.get_mut("data") {
                        *data = v03::error_data_to_v1(data.take());
                    }
                    Bytes::from(serde_json::to_vec(&error).map_err(|_| A2aError::Internal)?)
                };
                Ok(Frame {
                    bytes: wire::event(&self.caller_id, "error", &error),
                    seen: None,
                })
            }
            Answer::Result(raw) if self.upstream_version.is_v1() => {
                let peek = wire::peek_answer(raw);
                let seen = self.changed(&peek);
                let bytes = self.frame(raw.as_bytes(), &peek)?;
                Ok(Frame { bytes, seen })
            }
            Answer::Result(raw) => {
                let value: Value =
                    serde_json::from_str(raw).map_err(|_| A2aError::InvalidAgentResponse)?;
                let event = v03::event_to_v1(value)?;
                let json = serde_json::to_vec(&event).map_err(|_| A2aError::Internal)?;
                let text = std::str::from_utf8(&json).map_err(|_| A2aError::Internal)?;
                let peek = wire::peek_wrapped(text);
                let seen = self.changed(&peek);
                let bytes = self.frame(&json, &peek)?;
                Ok(Frame { bytes, seen })
            }
        }
    }

    /// The caller's frame for a 1.0 event (translated for a 0.3 caller).
    fn frame(&self, event: &[u8], peek: &Peek<'_>) -> Result<Bytes, A2aError> {
        if self.caller_version.is_v1() {
            return Ok(wire::event(&self.caller_id, "result", event));
        }
        let value: Value = serde_json::from_slice(event).map_err(|_| A2aError::Internal)?;
        let last = peek.carries_status && (peek.state.is_terminal() || peek.state.is_interrupted());
        let value = v03::event_to_v03(&value, last);
        Ok(rpc::sse_event(&rpc::result(&self.caller_id, &value)))
    }

    /// What the ledger must learn from `peek`: the task's first sighting or a new state.
    fn changed(&mut self, peek: &Peek<'_>) -> Option<Seen> {
        let new_task = !self.recorded_task && peek.task_id.is_some();
        let new_state = peek.carries_status && peek.state != self.recorded_state;
        if !new_task && !new_state {
            return None;
        }
        self.recorded_task |= peek.task_id.is_some();
        if peek.carries_status {
            self.recorded_state = peek.state;
        }
        Some(proxy::seen_of(peek))
    }

    async fn remember(&mut self, seen: Seen) {
        proxy::note_seen(&mut self.close.remote, &seen);
        proxy::record_seen(&self.agent, &self.key, &self.caller, &seen).await;
        if let (Some(task_id), Some(_)) = (&seen.task_id, &self.push) {
            if let Some(push) = self.push.take() {
                super::push::register_for(&self.agent, &self.key, &self.caller, task_id, push)
                    .await;
            }
        }
    }

    /// The stream's close record.
    async fn finish(self, end: End) {
        let agent = &self.agent;
        if !agent.audit.is_enabled() {
            return;
        }
        let CloseRecord {
            base,
            mut remote,
            started,
        } = self.close;
        remote.stream = Some("close");
        remote.events.get_or_insert(0);
        let record = base.with_duration(started.elapsed());
        let record = match end {
            End::Eof => record,
            End::CallerGone => record.with_outcome(Outcome::Cancelled, None),
            End::Failed(code) => record.with_outcome(Outcome::Error, Some(code.to_string())),
        };
        agent.audit.record(record.with_remote(remote)).await;
    }
}
