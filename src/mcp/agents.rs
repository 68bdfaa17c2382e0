//! `tools/call` of an `ask_{agentId}` tool: a registered remote A2A agent exposed to MCP
//! clients (`expose_as_tool = true`, listed by the catalog's `agent_tool.rs`).
//!
//! This file reads and checks the arguments (`message`, optional `context_id` and `task_id`)
//! and writes the answer as a `CallToolResult`; the asking itself is behind [`AskAgent`], which
//! the concentrator implements (`a2a/remote/ask.rs`) and the server wires in, so `mcp` knows
//! nothing of A2A and A2A nothing of MCP. Invalid arguments and a task that fails are tool
//! execution errors (`isError: true`), like any tool's. A call with a `progressToken` hands the
//! asker a [`Progress`] (`progress.rs`): the task's status updates become progress
//! notifications.
//!
//! Must not touch HTTP, A2A payloads or the ledger.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use simd_json::prelude::*;
use simd_json::tape::Value;

use super::progress::Progress;
use super::result::{failure, success};
use super::{Dispatcher, Reply, Scope};
use crate::auth::Caller;
use crate::catalog::ClientView;
use crate::invoke::correlation::ExternalCorrelationId;
use crate::invoke::ErrorClass;

/// Longest `message`, in bytes.
const MAX_MESSAGE_BYTES: usize = 64 * 1024;
/// Longest `context_id` or `task_id`, in bytes.
const MAX_ID_BYTES: usize = 256;

/// One question for a registered agent, on behalf of an MCP caller.
pub(crate) struct Ask<'a> {
    /// The agent id (not the tool name).
    pub agent: &'a str,
    pub message: &'a str,
    pub context_id: Option<&'a str>,
    pub task_id: Option<&'a str>,
    pub view: &'a Arc<ClientView>,
    pub caller: &'a Caller,
    pub external: Option<&'a ExternalCorrelationId>,
    /// The request's trace (telemetry on): the upstream call is a CLIENT span under it.
    pub trace: Option<&'a Arc<crate::telemetry::RequestTrace>>,
    /// Where the task's status updates go as `notifications/progress`, when the call asked
    /// for them with a `progressToken` and its transport can deliver them.
    pub progress: Option<Progress<'a>>,
}

/// How an [`Ask`] ended.
#[derive(Debug)]
pub(crate) enum Answered {
    /// The answer as a JSON object (the tool's structured result).
    Result(Vec<u8>),
    /// The task failed or could not be sent: the text the model sees (never an upstream
    /// address or credential).
    Failed(String),
}

/// Asks registered agents (the concentrator).
pub(crate) trait AskAgent: Send + Sync {
    fn ask<'a>(&'a self, ask: Ask<'a>) -> BoxFuture<'a, Answered>;
}

/// The dispatcher's [`AskAgent`], set once the concentrator exists.
#[derive(Default)]
pub(crate) struct Asker(pub(crate) std::sync::OnceLock<Arc<dyn AskAgent>>);

impl std::fmt::Debug for Asker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.get().is_some() {
            "Asker(set)"
        } else {
            "Asker(unset)"
        })
    }
}

/// `tools/call` of the tool asking `agent`, with the call's `arguments`.
pub(crate) async fn call(
    d: &Dispatcher,
    scope: &Scope<'_>,
    view: &Arc<ClientView>,
    agent: &str,
    arguments: Option<Value<'_, '_>>,
    progress: Option<Progress<'_>>,
) -> Reply {
    let args = match read_arguments(arguments) {
        Ok(args) => args,
        Err(message) => {
            if let Some(slot) = scope.tool_error {
                slot.set(ErrorClass::InvalidArguments);
            }
            return Reply::Result(failure(d, scope, message));
        }
    };
    let Some(asker) = d.agents.0.get() else {
        return Reply::Result(failure(d, scope, "Agent tools are not available here"));
    };
    let answered = asker
        .ask(Ask {
            agent,
            message: args.message,
            context_id: args.context_id,
            task_id: args.task_id,
            view,
            caller: scope.caller,
            external: scope.call.external_correlation_id.as_ref(),
            trace: scope.call.trace.as_ref(),
            progress,
        })
        .await;
    Reply::Result(match answered {
        Answered::Result(json) => success(d, scope, &json, true),
        Answered::Failed(message) => {
            if let Some(slot) = scope.tool_error {
                slot.set(ErrorClass::Downstream);
            }
            failure(d, scope, &message)
        }
    })
}

struct Arguments<'a> {
    message: &'a str,
    context_id: Option<&'a str>,
    task_id: Option<&'a str>,
}

fn read_arguments<'a>(arguments: Option<Value<'_, 'a>>) -> Result<Arguments<'a>, &'static str> {
    const NO_MESSAGE: &str = "Input validation error: 'message' is required (a non-empty string)";
    let Some(arguments) = arguments else {
        return Err(NO_MESSAGE);
    };
    let Some(object) = arguments.as_object() else {
        return Err(NO_MESSAGE);
    };
    let mut args = Arguments {
        message: "",
        context_id: None,
        task_id: None,
    };
    for (key, value) in object.iter() {
        let key: &str = key;
        let text = value.into_string();
        match key {
            "message" => args.message = text.ok_or(NO_MESSAGE)?,
            "context_id" => {
                args.context_id =
                    Some(text.ok_or("Input validation error: 'context_id' must be a string")?);
            }
            "task_id" => {
                args.task_id =
                    Some(text.ok_or("Input validation error: 'task_id' must be a string")?);
            }
            _ => {
                return Err("Input validation error: only 'message', 'context_id' and \
                            'task_id' are accepted")
            }
        }
    }
    if args.message.trim().is_empty() {
        return Err(NO_MESSAGE);
    }
    if args.message.len() > MAX_MESSAGE_BYTES {
        return Err("Input validation error: 'message' is longer than 64 KiB");
    }
    let too_long = |id: Option<&str>| id.is_some_and(|id| id.is_empty() || id.len() > MAX_ID_BYTES);
    if too_long(args.context_id) || too_long(args.task_id) {
        return Err("Input validation error: 'context_id' and 'task_id' must be 1 to 256 bytes");
    }
    Ok(args)
}
