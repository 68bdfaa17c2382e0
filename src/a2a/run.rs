//! The task runner: one spawned job per task, turning the message's tool call into task events
//! (how a message reaches a tool: `tool.rs`).
//!
//! `WORKING` is recorded before the send is answered; then the job runs the call through
//! `tool.rs` (the MCP `tools/call` path) and records the result artifact and the final state:
//! `COMPLETED`, `FAILED` (a tool error) or `REJECTED` (no call, unknown tool, invalid
//! arguments, with an agent message naming the skills). A federated read streams: each source
//! page is an artifact update (`append: true`) on that source's artifact, each source's end a
//! status message, the merged result the final `result` artifact with `completeness` and
//! `source_errors` in its metadata. A follow-up message on the running task queues its call
//! after the current one; the final state is the last call's. A cancel (on any path that
//! reaches the store) drops the running call, which cancels its downstream or source reads.
//!
//! Must not answer requests or touch HTTP: it only records events through `Agent::record`.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::BytesMut;
use futures_util::future::BoxFuture;
use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot};

use super::agent::{Agent, Call};
use super::methods::{new_id, Fail};
use super::model::{
    Artifact, Message, Part, Role, StreamResponse, Task, TaskArtifactUpdateEvent, TaskState,
    TaskStatus, TaskStatusUpdateEvent,
};
use super::store::{Appended, Owner};
use super::tool::{self, Outcome};
use super::A2aError;
use crate::audit::Surface;
use crate::auth::Caller;
use crate::catalog::{ClientView, Snapshot};
use crate::federation::{EventSink, SinkClosed, SourceEvent, SourceStatus};
use crate::invoke::correlation::ExternalCorrelationId;
use crate::invoke::CallContext;
use crate::mcp::Scope;
use crate::protocol::{Era, ProtocolVersion};

/// Follow-up messages queued on one running task.
const FOLLOW_UPS: usize = 8;

/// The tasks running on this instance and the queue of each one's follow-up messages.
#[derive(Debug, Default)]
pub(crate) struct Runners {
    queues: parking_lot::Mutex<HashMap<String, mpsc::Sender<Message>>>,
}

fn key(owner: &Owner, task_id: &str) -> String {
    format!("{}/{task_id}", owner.tenant)
}

/// Records `WORKING` and spawns the task's job for `message`; the receiver resolves when the
/// job is done (the task ended, or its runner went).
pub(crate) async fn start(
    call: &Call<'_>,
    task: Task,
    message: Message,
) -> Result<Option<oneshot::Receiver<()>>, Fail> {
    let agent = Arc::clone(call.agent);
    let working = status_event(&task.id, &task.context_id, TaskState::Working, None);
    agent.record(&call.owner, &task.id, &working).await?;
    let (tx, rx) = mpsc::channel(FOLLOW_UPS);
    agent
        .runners
        .queues
        .lock()
        .insert(key(&call.owner, &task.id), tx);
    let (done, finished) = oneshot::channel();
    let job = Job {
        done: Some(done),
        agent,
        owner: call.owner.clone(),
        task_id: task.id,
        context_id: task.context_id,
        snapshot: Arc::clone(&call.admitted.snapshot),
        view: Arc::clone(&call.admitted.view),
        caller: call.admitted.caller.clone(),
        external: call.admitted.external.clone(),
        trace: call.trace.clone(),
    };
    tokio::spawn(job.run(message, rx));
    Ok(Some(finished))
}

/// Queues a follow-up `message` on the running task `task_id`.
pub(crate) fn follow_up(
    agent: &Agent,
    owner: &Owner,
    task_id: &str,
    message: Message,
) -> Result<(), A2aError> {
    let queues = agent.runners.queues.lock();
    let Some(queue) = queues.get(&key(owner, task_id)) else {
        return Err(A2aError::UnsupportedOperation(
            "the task is not running on this instance; follow-up messages go to the instance \
             that runs it"
                .into(),
        ));
    };
    queue.try_send(message).map_err(|_| {
        A2aError::UnsupportedOperation("too many messages are waiting for this task".into())
    })
}

/// A status update event.
fn status_event(
    task_id: &str,
    context_id: &str,
    state: TaskState,
    message: Option<Message>,
) -> StreamResponse {
    StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
        task_id: task_id.to_owned(),
        context_id: context_id.to_owned(),
        status: TaskStatus {
            state,
            message,
            timestamp: Some(super::model::now_timestamp()),
            extra: Default::default(),
        },
        metadata: None,
        extra: Default::default(),
    })
}

/// How one call ended: the state it leaves the task in and the agent's words about it.
struct Ending {
    state: TaskState,
    text: Option<String>,
}

/// One task's job.
struct Job {
    /// Told when the job is done (a blocking send waits on it).
    done: Option<oneshot::Sender<()>>,
    agent: Arc<Agent>,
    owner: Owner,
    task_id: String,
    context_id: String,
    snapshot: Arc<Snapshot>,
    view: Arc<ClientView>,
    caller: Caller,
    external: Option<ExternalCorrelationId>,
    /// The trace of the request that started the task.
    trace: Option<Arc<crate::telemetry::RequestTrace>>,
}

impl Job {
    async fn run(mut self, first: Message, mut queue: mpsc::Receiver<Message>) {
        let done = self.done.take();
        let cancelled = self.agent.store.cancelled(&self.owner, &self.task_id);
        let work = async {
            let mut message = first;
            let mut n = 1usize;
            loop {
                let ending = self.one(&message, n).await;
                // Taken under the lock `follow_up` sends under, so no message is lost between
                // the last call and the final state.
                let next = {
                    let mut queues = self.agent.runners.queues.lock();
                    match queue.try_recv() {
                        Ok(next) => Some(next),
                        Err(_) => {
                            queues.remove(&key(&self.owner, &self.task_id));
                            None
                        }
                    }
                };
                match next {
                    Some(next) => {
                        if let Some(text) = ending.text {
                            let event = self.status(TaskState::Working, Some(text));
                            if self.record(&event).await.is_err() {
                                return;
                            }
                        }
                        message = next;
                        n += 1;
                    }
                    None => {
                        let event = self.status(ending.state, ending.text);
                        let _ = self.record(&event).await;
                        return;
                    }
                }
            }
        };
        tokio::select! {
            () = work => {}
            // Canceled: the store recorded CANCELED; dropping `work` drops the running call.
            () = cancelled.wait() => {
                self.agent.runners.queues.lock().remove(&key(&self.owner, &self.task_id));
            }
        }
        if let Some(done) = done {
            let _ = done.send(());
        }
    }

    /// Records `event`; `Err` once the task is terminal or gone (canceled meanwhile).
    async fn record(&self, event: &StreamResponse) -> Result<(), SinkClosed> {
        match self.agent.record(&self.owner, &self.task_id, event).await {
            Ok(Appended::Applied(_)) => Ok(()),
            _ => Err(SinkClosed),
        }
    }

    fn status(&self, state: TaskState, text: Option<String>) -> StreamResponse {
        let message = text.map(|text| self.agent_message(text));
        status_event(&self.task_id, &self.context_id, state, message)
    }

    fn agent_message(&self, text: String) -> Message {
        Message {
            message_id: new_id(),
            role: Role::Agent,
            parts: vec![Part::text(text)],
            context_id: Some(self.context_id.clone()),
            task_id: Some(self.task_id.clone()),
            metadata: None,
            extensions: Vec::new(),
            reference_task_ids: Vec::new(),
            extra: Default::default(),
        }
    }

    fn artifact_event(&self, artifact: Artifact, append: bool) -> StreamResponse {
        StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
            task_id: self.task_id.clone(),
            context_id: self.context_id.clone(),
            artifact,
            append,
            last_chunk: false,
            metadata: None,
            extra: Default::default(),
        })
    }

    /// Runs the call `message` names (the `n`th of the task).
    async fn one(&self, message: &Message, n: usize) -> Ending {
        let call = match tool::read_call(message) {
            Ok(call) => call,
            Err(problem) => {
                let problem = match problem {
                    tool::NoCall::Missing => "The message names no tool call.",
                    tool::NoCall::Malformed(why) => why,
                };
                return Ending {
                    state: TaskState::Rejected,
                    text: Some(tool::refusal_text(&self.view, problem)),
                };
            }
        };
        let context = CallContext::new(self.external.clone()).traced(self.trace.clone());
        let scope = Scope::new(
            &self.owner.tenant,
            &self.owner.client,
            &self.snapshot,
            Some(&self.view),
            (Era::Handshake, ProtocolVersion::V2025_11_25),
            &context,
            &self.caller,
        )
        .with_surface(Surface::A2a)
        .with_stream_sources(true);
        let artifact_id = if n == 1 {
            "result".to_owned()
        } else {
            format!("result-{n}")
        };
        match tool::run(&self.agent.dispatcher, &scope, &call).await {
            Outcome::Completed { structured, text } => {
                let mut parts = Vec::with_capacity(2);
                if let Some(structured) = structured {
                    parts.push(Part::raw_data(structured));
                }
                parts.push(Part::raw_text(text));
                let artifact = Artifact {
                    artifact_id,
                    name: Some(call.name.clone()),
                    description: None,
                    parts,
                    metadata: None,
                    extensions: Vec::new(),
                    extra: Default::default(),
                };
                let _ = self.record(&self.artifact_event(artifact, false)).await;
                Ending {
                    state: TaskState::Completed,
                    text: None,
                }
            }
            Outcome::Failed(text) => Ending {
                state: TaskState::Failed,
                text: Some(text),
            },
            Outcome::Rejected(text) => Ending {
                state: TaskState::Rejected,
                text: Some(tool::refusal_text(&self.view, &text)),
            },
            Outcome::Federated(federated) => {
                let mut sink = Sink { job: self };
                let result = self
                    .agent
                    .dispatcher
                    .run_federated(&federated, &mut sink)
                    .await;
                self.federated_result(&result, artifact_id, &call.name)
                    .await
            }
        }
    }

    /// The merged result of a federated read as the final artifact.
    async fn federated_result(&self, result: &[u8], artifact_id: String, tool: &str) -> Ending {
        let result: Value = serde_json::from_slice(result).unwrap_or(Value::Null);
        let Some(structured) = result.get("structuredContent").cloned() else {
            let text = result
                .pointer("/content/0/text")
                .and_then(Value::as_str)
                .unwrap_or("internal error")
                .to_owned();
            return Ending {
                state: TaskState::Failed,
                text: Some(text),
            };
        };
        let metadata = json!({
            "completeness": structured.pointer("/metadata/completeness").cloned().unwrap_or(Value::Null),
            "source_errors": structured.pointer("/metadata/source_errors").cloned().unwrap_or_else(|| json!([])),
        });
        let text = result
            .pointer("/content/0/text")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let artifact = Artifact {
            artifact_id,
            name: Some(tool.to_owned()),
            description: Some("The merged, authoritative result of every source.".to_owned()),
            parts: vec![Part::data(structured), Part::text(text)],
            metadata: Some(metadata),
            extensions: Vec::new(),
            extra: Default::default(),
        };
        let _ = self.record(&self.artifact_event(artifact, false)).await;
        Ending {
            state: TaskState::Completed,
            text: None,
        }
    }
}

/// Source events of a federated read as task events.
struct Sink<'a> {
    job: &'a Job,
}

impl EventSink for Sink<'_> {
    fn emit(&mut self, event: SourceEvent) -> BoxFuture<'_, Result<(), SinkClosed>> {
        let job = self.job;
        let source = json!({
            "source_type": &*event.source.source_type,
            "source_identity": &*event.source.source_identity,
        });
        let update = match event.status {
            SourceStatus::Page => {
                let mut records = BytesMut::with_capacity(256);
                crate::federation::write_records(&mut records, &event.records);
                let records: Value = serde_json::from_slice(&records).unwrap_or(Value::Null);
                let artifact = Artifact {
                    artifact_id: format!(
                        "source:{}:{}",
                        event.source.source_type, event.source.source_identity
                    ),
                    name: Some(format!(
                        "{} / {}",
                        event.source.source_type, event.source.source_identity
                    )),
                    description: None,
                    parts: vec![Part::data(json!({
                        "records": records,
                        "pageIndex": event.page_index,
                        "sequence": event.sequence,
                    }))],
                    metadata: Some(json!({"source": source, "pageIndex": event.page_index})),
                    extensions: Vec::new(),
                    extra: Default::default(),
                };
                job.artifact_event(artifact, true)
            }
            SourceStatus::Complete | SourceStatus::Error => {
                let text = match event.error {
                    None => format!(
                        "Source {} / {} complete after {} page(s).",
                        event.source.source_type, event.source.source_identity, event.page_index
                    ),
                    Some(code) => format!(
                        "Source {} / {} failed: {}.",
                        event.source.source_type,
                        event.source.source_identity,
                        code.as_str()
                    ),
                };
                let mut message = job.agent_message(text);
                message.metadata = Some(json!({
                    "source": source,
                    "status": event.status.as_str(),
                    "error": event.error.map(|code| code.as_str()),
                }));
                status_event(
                    &job.task_id,
                    &job.context_id,
                    TaskState::Working,
                    Some(message),
                )
            }
        };
        Box::pin(async move { job.record(&update).await })
    }
}
