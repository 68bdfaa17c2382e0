//! The concentrator's side of the `ask_{agentId}` MCP tools (`expose_as_tool = true`): one
//! question from an MCP caller becomes a `SendMessage` to the registered agent, through the
//! same proxy call as an A2A caller's (`proxy.rs`: ownership of `task_id`/`context_id`, the
//! ledger, the upstream credential, correlation, audit and metrics), owned by the MCP caller.
//!
//! The send is blocking; an agent that answers before the task settles (still submitted or
//! working) is followed with `GetTask` until the task completes, fails, is canceled or
//! rejected, or asks for input or authentication, or until its state has not changed for the
//! agent's `stream_idle_ms`. The answer is the tool's structured result: the task's state,
//! status message, artifacts (as the agent wrote them, plus their text joined), `task_id` and
//! `context_id`, so the model can continue the conversation or answer a question with
//! `task_id`. A task that fails, is rejected or canceled, and every transport failure, is a
//! tool execution error. A caller that goes away stops the following; the task goes on
//! upstream, as with A2A callers.
//!
//! A call that asked for progress (a `progressToken`) reports the task's steps as they
//! happen: an agent that streams is asked with `SendStreamingMessage` and its relayed events
//! are read (`ask/watch.rs`); one that does not is sent the message with `returnImmediately`
//! and polled from the start as above, each change of state or status text one step.
//!
//! Must not know MCP framing: `mcp/agents.rs` reads the arguments and writes the result.

use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::future::BoxFuture;
use http::HeaderMap;
use serde_json::{json, Value};

use super::proxy::{self, ProxyCall, Reach, Reply, Who};
use crate::a2a::agent::Agent;
use crate::a2a::methods;
use crate::a2a::model::TaskState;
use crate::a2a::v03::Version;
use crate::a2a::A2aError;
use crate::mcp::agents::{Answered, Ask, AskAgent};
use crate::mcp::progress::Progress;

mod watch;

/// The first wait between two `GetTask` calls while a task settles; doubled up to
/// [`MAX_POLL`].
const FIRST_POLL: Duration = Duration::from_millis(100);
const MAX_POLL: Duration = Duration::from_secs(1);

/// Asks the registered agents of a running A2A surface (held weakly: the surface owns the
/// MCP dispatcher that holds this).
pub(crate) struct AgentAsker(Weak<Agent>);

impl AgentAsker {
    pub(crate) fn new(agent: &Arc<Agent>) -> Arc<Self> {
        Arc::new(Self(Arc::downgrade(agent)))
    }
}

impl AskAgent for AgentAsker {
    fn ask<'a>(&'a self, ask: Ask<'a>) -> BoxFuture<'a, Answered> {
        Box::pin(async move {
            match self.0.upgrade() {
                Some(agent) => ask_agent(&agent, ask).await,
                None => Answered::Failed("The remote agent is unavailable".to_owned()),
            }
        })
    }
}

async fn ask_agent(agent: &Arc<Agent>, ask: Ask<'_>) -> Answered {
    let started = Instant::now();
    let caller = ask.caller;
    let Some(remote) = agent
        .remote
        .remotes
        .get(&caller.tenant, &caller.client, ask.agent)
        .filter(|remote| remote.config.expose_as_tool)
    else {
        return Answered::Failed(format!("Unknown agent: {}", ask.agent));
    };
    let (upstream, fetched) = match remote.ready() {
        Ok(ready) => ready,
        Err(err) => {
            proxy::count_refused(agent, &remote, methods::SEND_MESSAGE, &err);
            return Answered::Failed(err.to_string());
        }
    };
    let mut progress = ask.progress;
    // Progress from an agent that streams comes from its events; otherwise from polling.
    let streams = progress.is_some() && fetched.card.streaming;
    let method = if streams {
        methods::SEND_STREAMING_MESSAGE
    } else {
        methods::SEND_MESSAGE
    };
    let call = ProxyCall::new(
        Reach {
            agent,
            remote: &remote,
            upstream,
            fetched,
        },
        Who {
            caller,
            view: ask.view,
            external: ask.external,
        },
        (Version::V1, Bytes::from_static(b"\"mcp-ask\"")),
        HeaderMap::new(),
        method,
    )
    .traced(ask.trace.cloned());
    let mut message = json!({
        "messageId": message_id(),
        "role": "ROLE_USER",
        "parts": [{"text": ask.message}],
    });
    if let Some(context_id) = ask.context_id {
        message["contextId"] = Value::from(context_id);
    }
    if let Some(task_id) = ask.task_id {
        message["taskId"] = Value::from(task_id);
    }
    let mut params = json!({"message": message});
    if progress.is_some() && !streams {
        // The task's steps are seen by polling it from the start, not after a blocking send.
        params["configuration"] = json!({"returnImmediately": true});
    }
    let outcome = match progress.as_mut() {
        Some(progress) if streams => watch::stream(&call, params, progress).await,
        _ => {
            let mut outcome = call.dispatch(method, params).await;
            if let Ok(Reply::Result(json)) = &outcome {
                let idle_ms = remote.config.stream_idle_ms;
                if let Some(settled) = follow(&call, json, idle_ms, progress.as_mut()).await {
                    outcome = settled;
                }
            }
            outcome
        }
    };
    call.account(started, &outcome).await;
    answer(ask.agent, outcome)
}

/// Follows a task the send answered before it settled, reporting each change of its state or
/// status text to `progress`; `None` when it had settled (or the answer was a Message).
async fn follow(
    call: &ProxyCall<'_>,
    json: &Bytes,
    idle_ms: u64,
    mut progress: Option<&mut Progress<'_>>,
) -> Option<Result<Reply, A2aError>> {
    let (task_id, mut state, mut text) = task_state(json)?;
    if settled(state) {
        return None;
    }
    if let Some(progress) = progress.as_mut() {
        progress.report(&watch::describe(state, &text)).await;
    }
    let idle = Duration::from_millis(idle_ms.max(1));
    let mut quiet_since = Instant::now();
    let mut wait = FIRST_POLL;
    loop {
        tokio::time::sleep(wait).await;
        wait = (wait * 2).min(MAX_POLL);
        let reply = call
            .dispatch(methods::GET_TASK, json!({"id": task_id}))
            .await;
        let Ok(Reply::Result(json)) = &reply else {
            return Some(reply);
        };
        let (now, now_text) = task_state(json).map_or(
            (TaskState::Unspecified, String::new()),
            |(_, state, text)| (state, text),
        );
        let changed = now != state || now_text != text;
        if changed {
            if let Some(progress) = progress.as_mut() {
                progress.report(&watch::describe(now, &now_text)).await;
            }
        }
        if settled(now) {
            return Some(reply);
        }
        if changed {
            (state, text) = (now, now_text);
            quiet_since = Instant::now();
            wait = FIRST_POLL;
        } else if quiet_since.elapsed() >= idle {
            // Still running but quiet too long: the answer says so (its state is not final,
            // and its task_id lets the caller ask again later).
            return Some(reply);
        }
    }
}

/// Whether the caller has an answer: a terminal state, or the agent waits for the caller.
fn settled(state: TaskState) -> bool {
    state.is_terminal() || state.is_interrupted()
}

/// The task id, state and status text of a `SendMessage` result (`{"task": …}`) or a
/// `GetTask` one (the Task itself).
fn task_state(json: &[u8]) -> Option<(String, TaskState, String)> {
    let value: Value = serde_json::from_slice(json).ok()?;
    let task = value.get("task").unwrap_or(&value);
    let id = task.get("id")?.as_str()?.to_owned();
    let state = task
        .pointer("/status/state")
        .and_then(Value::as_str)
        .map_or(TaskState::Unspecified, TaskState::parse);
    Some((id, state, texts(task.pointer("/status/message/parts"))))
}

/// The tool's answer for `outcome`.
fn answer(agent_id: &str, outcome: Result<Reply, A2aError>) -> Answered {
    let json = match outcome {
        Ok(Reply::Result(json)) => json,
        Ok(Reply::Error(error)) => {
            let error: Value = serde_json::from_slice(&error).unwrap_or_default();
            let message = error.get("message").and_then(Value::as_str).unwrap_or("");
            return Answered::Failed(format!(
                "The agent answered error {}: {message}",
                error.get("code").and_then(Value::as_i64).unwrap_or(0)
            ));
        }
        Ok(Reply::Stream(_)) => return Answered::Failed("Unexpected stream".to_owned()),
        Err(err) => return Answered::Failed(err.to_string()),
    };
    let value: Value = serde_json::from_slice(&json).unwrap_or_default();
    if let Some(message) = value.get("message") {
        let out = json!({
            "agent": agent_id,
            "context_id": message.get("contextId"),
            "text": texts(message.get("parts")),
            "message": message,
        });
        return Answered::Result(serde_json::to_vec(&out).unwrap_or_default());
    }
    let task = value.get("task").unwrap_or(&value);
    let state_text = task
        .pointer("/status/state")
        .and_then(Value::as_str)
        .unwrap_or("TASK_STATE_UNSPECIFIED");
    let status_message = texts(task.pointer("/status/message/parts"));
    let task_id = task.get("id").and_then(Value::as_str).unwrap_or("");
    if matches!(
        TaskState::parse(state_text),
        TaskState::Failed | TaskState::Rejected | TaskState::Canceled
    ) {
        let why = if status_message.is_empty() {
            String::new()
        } else {
            format!(": {status_message}")
        };
        return Answered::Failed(format!(
            "The agent's task {task_id} ended in {state_text}{why}"
        ));
    }
    let artifacts = task.get("artifacts").cloned().unwrap_or_else(|| json!([]));
    let text = artifacts
        .as_array()
        .map(|all| {
            all.iter()
                .map(|artifact| texts(artifact.get("parts")))
                .filter(|text| !text.is_empty())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default();
    let out = json!({
        "agent": agent_id,
        "task_id": task_id,
        "context_id": task.get("contextId"),
        "state": state_text,
        "status_message": status_message,
        "text": text,
        "artifacts": artifacts,
    });
    Answered::Result(serde_json::to_vec(&out).unwrap_or_default())
}

/// The text parts of `parts`, joined by newlines.
fn texts(parts: Option<&Value>) -> String {
    parts
        .and_then(Value::as_array)
        .map(|parts| {
            parts
                .iter()
                .filter_map(|part| part.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// A fresh message id (128 random bits, hex).
fn message_id() -> String {
    let bits: u128 = rand::random();
    format!("mcp-{bits:032x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_carry_state_artifacts_and_ids() {
        let json = Bytes::from_static(
            br#"{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_COMPLETED"},"artifacts":[{"name":"a","parts":[{"text":"hello"},{"data":{"x":1}}]}]}}"#,
        );
        let Answered::Result(out) = answer("up", Ok(Reply::Result(json))) else {
            panic!("not a result");
        };
        let out: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(out["task_id"], "t1");
        assert_eq!(out["context_id"], "c1");
        assert_eq!(out["state"], "TASK_STATE_COMPLETED");
        assert_eq!(out["text"], "hello");
        assert_eq!(out["artifacts"][0]["parts"][1]["data"]["x"], 1);

        let failed = Bytes::from_static(
            br#"{"task":{"id":"t2","status":{"state":"TASK_STATE_FAILED","message":{"parts":[{"text":"it failed"}]}}}}"#,
        );
        match answer("up", Ok(Reply::Result(failed))) {
            Answered::Failed(text) => {
                assert_eq!(
                    text,
                    "The agent's task t2 ended in TASK_STATE_FAILED: it failed"
                );
            }
            other => panic!("{other:?}"),
        }
        let error = Bytes::from_static(br#"{"code":-32001,"message":"Task not found"}"#);
        match answer("up", Ok(Reply::Error(error))) {
            Answered::Failed(text) => {
                assert_eq!(text, "The agent answered error -32001: Task not found")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn settled_means_terminal_or_waiting_for_the_caller() {
        assert!(settled(TaskState::Completed));
        assert!(settled(TaskState::InputRequired));
        assert!(!settled(TaskState::Working));
        assert_eq!(
            task_state(br#"{"task":{"id":"t","status":{"state":"TASK_STATE_WORKING"}}}"#),
            Some(("t".to_owned(), TaskState::Working, String::new()))
        );
        assert_eq!(
            task_state(
                br#"{"id":"t","status":{"state":"TASK_STATE_INPUT_REQUIRED","message":{"parts":[{"text":"which?"}]}}}"#
            ),
            Some(("t".to_owned(), TaskState::InputRequired, "which?".to_owned()))
        );
    }
}
