//! Following the task of an `ask_{agentId}` call that reports progress (the MCP call carried
//! a `progressToken`): every status update of the task becomes one progress step.
//!
//! An agent that streams is asked with `SendStreamingMessage` through the same relay as an A2A
//! caller's (`relay.rs`: the ledger learns the task from its events, the stream is audited),
//! and the relayed stream is read here event by event: a task or status event reports its
//! state and status text, an artifact event its name. The stream ends the watch when the task
//! settles (the agent's connection is dropped then; the task is done or waits for the caller),
//! when the upstream ends it, or when the relay gives up on a quiet agent; the answer is then
//! the task as `GetTask` reads it (its artifacts whole). A `Message` answer or an upstream
//! error before any task is the answer as it is. An agent that does not stream is followed by
//! `GetTask` polling (`ask.rs`), which reports each change it sees.
//!
//! Must not know MCP framing: progress goes through [`Progress`].

use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;
use serde_json::{json, Value};

use super::{settled, texts};
use crate::a2a::methods;
use crate::a2a::model::TaskState;
use crate::a2a::remote::proxy::{ProxyCall, Reply};
use crate::a2a::A2aError;
use crate::mcp::progress::Progress;
use crate::sse::Decoder;

/// What one relayed event says.
#[derive(Debug, PartialEq)]
pub(super) enum Seen {
    /// A task or status event: the task, its state and its status text.
    Status {
        task_id: String,
        state: TaskState,
        text: String,
    },
    /// An artifact event of the task: the artifact's name (or id).
    Artifact { task_id: String, name: String },
    /// A direct `Message` answer: the result object, the answer itself.
    Message(Bytes),
    /// A JSON-RPC error event (the upstream's, or the relay's own for a quiet agent).
    Error(Bytes),
    /// A keep-alive, or nothing this watch reads.
    Nothing,
}

/// Sends `params` with `SendStreamingMessage` and follows the relayed stream, reporting each
/// step to `progress`; the outcome is the settled (or last known) task, a message, or the
/// error that ended the call.
pub(super) async fn stream(
    call: &ProxyCall<'_>,
    params: Value,
    progress: &mut Progress<'_>,
) -> Result<Reply, A2aError> {
    let reply = call
        .dispatch(methods::SEND_STREAMING_MESSAGE, params)
        .await?;
    let Reply::Stream(response) = reply else {
        return Ok(reply);
    };
    let mut body = response.into_body();
    let mut decoder = Decoder::with_max_frame(call.remote.config.max_response_bytes);
    let mut buf = BytesMut::new();
    let mut events: Vec<Bytes> = Vec::new();
    let mut task: Option<String> = None;
    let mut last: Option<(TaskState, String)> = None;
    'read: while let Some(frame) = body.frame().await {
        // The relay's body never fails: it ends.
        let Ok(frame) = frame;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        buf.extend_from_slice(&data);
        decoder
            .decode_with(&mut buf, |event| {
                events.push(Bytes::copy_from_slice(event.data));
            })
            .map_err(|_| A2aError::InvalidAgentResponse)?;
        for event in events.drain(..) {
            match read_event(&event) {
                Seen::Status {
                    task_id,
                    state,
                    text,
                } => {
                    task.get_or_insert(task_id);
                    let step = (state, text);
                    if last.as_ref() != Some(&step) {
                        progress.report(&describe(step.0, &step.1)).await;
                    }
                    let done = settled(step.0);
                    last = Some(step);
                    if done {
                        break 'read;
                    }
                }
                Seen::Artifact { task_id, name } => {
                    task.get_or_insert(task_id);
                    progress.report(&format!("artifact {name}")).await;
                }
                Seen::Message(result) => return Ok(Reply::Result(result)),
                Seen::Error(error) => {
                    if task.is_none() {
                        return Ok(Reply::Error(error));
                    }
                    // The task exists: its state as it is now is the better answer.
                    break 'read;
                }
                Seen::Nothing => {}
            }
        }
    }
    // Dropping the stream drops the agent's connection; the task goes on (or is done).
    drop(body);
    match task {
        Some(task_id) => {
            call.dispatch(methods::GET_TASK, json!({"id": task_id}))
                .await
        }
        None => Err(A2aError::InvalidAgentResponse),
    }
}

/// The progress message of a step: the state, then the status text when there is one.
pub(super) fn describe(state: TaskState, text: &str) -> String {
    if text.is_empty() {
        state.as_v1().to_owned()
    } else {
        format!("{}: {text}", state.as_v1())
    }
}

/// What the relayed event `data` (a JSON-RPC response in the 1.0 shape) says.
pub(super) fn read_event(data: &[u8]) -> Seen {
    let Ok(envelope) = serde_json::from_slice::<Value>(data) else {
        return Seen::Nothing;
    };
    if let Some(error) = envelope.get("error") {
        return Seen::Error(Bytes::from(serde_json::to_vec(error).unwrap_or_default()));
    }
    let Some(result) = envelope.get("result") else {
        return Seen::Nothing;
    };
    if result.get("message").is_some() {
        return Seen::Message(Bytes::from(serde_json::to_vec(result).unwrap_or_default()));
    }
    let status_of = |task_id: Option<&Value>, status: Option<&Value>| {
        let task_id = task_id.and_then(Value::as_str)?.to_owned();
        let state = status
            .and_then(|status| status.get("state"))
            .and_then(Value::as_str)
            .map_or(TaskState::Unspecified, TaskState::parse);
        let text = texts(status.and_then(|status| status.pointer("/message/parts")));
        Some(Seen::Status {
            task_id,
            state,
            text,
        })
    };
    let seen = if let Some(task) = result.get("task") {
        status_of(task.get("id"), task.get("status"))
    } else if let Some(update) = result.get("statusUpdate") {
        status_of(update.get("taskId"), update.get("status"))
    } else if let Some(update) = result.get("artifactUpdate") {
        update
            .get("taskId")
            .and_then(Value::as_str)
            .map(|task_id| Seen::Artifact {
                task_id: task_id.to_owned(),
                name: update
                    .pointer("/artifact/name")
                    .or_else(|| update.pointer("/artifact/artifactId"))
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned(),
            })
    } else {
        None
    };
    seen.unwrap_or(Seen::Nothing)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_read_as_steps_answers_and_errors() {
        let status = |state: TaskState, text: &str| Seen::Status {
            task_id: "t".to_owned(),
            state,
            text: text.to_owned(),
        };
        assert_eq!(
            read_event(
                br#"{"jsonrpc":"2.0","id":1,"result":{"task":{"id":"t","status":{"state":"TASK_STATE_SUBMITTED"}}}}"#
            ),
            status(TaskState::Submitted, "")
        );
        assert_eq!(
            read_event(
                br#"{"jsonrpc":"2.0","id":1,"result":{"statusUpdate":{"taskId":"t","status":{"state":"TASK_STATE_WORKING","message":{"parts":[{"text":"step 2"}]}}}}}"#
            ),
            status(TaskState::Working, "step 2")
        );
        assert_eq!(
            read_event(
                br#"{"jsonrpc":"2.0","id":1,"result":{"artifactUpdate":{"taskId":"t","artifact":{"artifactId":"a1","parts":[]}}}}"#
            ),
            Seen::Artifact {
                task_id: "t".to_owned(),
                name: "a1".to_owned()
            }
        );
        assert_eq!(
            read_event(br#"{"jsonrpc":"2.0","id":1,"result":{"message":{"parts":[]}}}"#),
            Seen::Message(Bytes::from_static(br#"{"message":{"parts":[]}}"#))
        );
        assert_eq!(
            read_event(br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"x"}}"#),
            Seen::Error(Bytes::from_static(br#"{"code":-32603,"message":"x"}"#))
        );
        for nothing in [
            &b"not json"[..],
            br#"{"jsonrpc":"2.0","id":1,"result":{"other":{}}}"#,
            br#"{"jsonrpc":"2.0","id":1,"result":{"statusUpdate":{"status":{}}}}"#,
        ] {
            assert_eq!(read_event(nothing), Seen::Nothing);
        }
        assert_eq!(
            describe(TaskState::Working, "step 2"),
            "TASK_STATE_WORKING: step 2"
        );
        assert_eq!(describe(TaskState::Completed, ""), "TASK_STATE_COMPLETED");
    }
}
