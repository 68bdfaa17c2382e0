//! The `ask_{agentId}` tools: a registered remote A2A agent with `expose_as_tool = true`,
//! published to the MCP clients of the client applications it is assigned to.
//!
//! A leaf of the catalog: the name, description, input schema and `tools/list` entry of one
//! such tool. `snapshot.rs` places the entries in a client's listing; the call itself is the
//! concentrator's (`a2a/remote/ask.rs`, reached from `mcp/agents.rs`). Must not talk to agents.

use bytes::Bytes;
use serde_json::Value;

use super::schema;
use crate::config::RemoteAgentConfig;

/// The tool-name prefix of an agent tool.
pub(crate) const PREFIX: &str = "ask_";

/// The MCP tool name of agent `id` (`ask_` + the id, its `-` as `_`).
pub(crate) fn name(id: &str) -> String {
    let mut name = String::with_capacity(PREFIX.len() + id.len());
    name.push_str(PREFIX);
    name.extend(id.chars().map(|c| if c == '-' { '_' } else { c }));
    name
}

/// The input schema: `message` (required), `context_id`, `task_id`.
pub(crate) fn input_schema() -> Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "message": {
                "type": "string",
                "minLength": 1,
                "description": "What to ask the agent, in plain text."
            },
            "context_id": {
                "type": "string",
                "description": "Continue this conversation (a context_id an earlier answer gave)."
            },
            "task_id": {
                "type": "string",
                "description": "Answer a task that asked for input (the task_id of an answer whose state is TASK_STATE_INPUT_REQUIRED)."
            }
        },
        "required": ["message"],
        "additionalProperties": false
    })
}

/// The `tools/list` entry of `agent`'s tool.
pub(crate) fn entry(agent: &RemoteAgentConfig) -> (String, Bytes) {
    let name = name(&agent.id);
    let description = format!(
        "Ask the remote A2A agent `{}`: sends `message` as a task and answers when the task \
         completes, fails or asks for input, with its state, status message, artifacts, \
         task_id and context_id.",
        agent.id
    );
    let input = schema::canonical_bytes(&input_schema());
    let entry = schema::list_entry(&name, &description, &input, None);
    (name, entry)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_mcp_tool_names() {
        assert_eq!(name("billing-bot"), "ask_billing_bot");
        assert_eq!(name("x1"), "ask_x1");
    }
}
