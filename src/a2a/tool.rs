//! How a message reaches a tool: the runtime's agent has no model, so a message runs a tool
//! when it carries a data part `{"tool": "<name>", "arguments": {…}}`, or a text part whose whole
//! text is that JSON object. The call goes through `mcp::Dispatcher` as an MCP `tools/call`
//! (the same catalog lookup, schema mode, validation, field translation, invoke, correlation
//! and audit as MCP and REST); its `CallToolResult` becomes what A2A says: a result, a tool
//! error (`FAILED`) or a refusal (`REJECTED`: unknown tool, invalid arguments).
//! Federated reads come back as a [`FederatedCall`] the runner streams source by source.
//! Must not touch the task store or HTTP.

use std::borrow::Cow;

use bytes::{BufMut, BytesMut};
use serde_json::value::RawValue;
use serde_json::{json, Value};

use super::model::Message;
use crate::catalog::ClientView;
use crate::jsonrpc::{self, Message as RpcMessage};
use crate::mcp::federated::FederatedCall;
use crate::mcp::{Dispatcher, McpError, Reply, Scope, ToolErrorSlot};

/// A tool call read from a message.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ToolCall {
    pub name: String,
    /// Always an object.
    pub arguments: Value,
}

/// Why a message names no runnable tool call (answered as a `REJECTED` task).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NoCall {
    /// No part holds a `{"tool", "arguments"}` object.
    Missing,
    /// A `tool` member that is not a non-empty string, or `arguments` that are not an object.
    Malformed(&'static str),
}

/// The tool call a message carries: the first data part (or whole-text part) that holds an
/// object with a `tool` member.
pub(crate) fn read_call(message: &Message) -> Result<ToolCall, NoCall> {
    for part in &message.parts {
        let candidate = match (&part.data, &part.text) {
            (Some(data), _) => data.tree(),
            (None, Some(text)) => text.tree().and_then(|text| {
                let text = text.trim();
                (text.starts_with('{') && text.ends_with('}'))
                    .then(|| serde_json::from_str::<Value>(text).ok())
                    .flatten()
                    .map(Cow::Owned)
            }),
            (None, None) => None,
        };
        let Some(Value::Object(object)) = candidate.as_deref() else {
            continue;
        };
        let Some(tool) = object.get("tool") else {
            continue;
        };
        let Some(name) = tool.as_str().filter(|name| !name.is_empty()) else {
            return Err(NoCall::Malformed("\"tool\" must be a tool name (a string)"));
        };
        let arguments = match object.get("arguments") {
            None | Some(Value::Null) => Value::Object(serde_json::Map::new()),
            Some(arguments @ Value::Object(_)) => arguments.clone(),
            Some(_) => return Err(NoCall::Malformed("\"arguments\" must be an object")),
        };
        return Ok(ToolCall {
            name: name.to_owned(),
            arguments,
        });
    }
    Err(NoCall::Missing)
}

/// The agent message of a refusal: what was wrong, the skills, the expected shape.
pub(crate) fn refusal_text(view: &ClientView, problem: &str) -> String {
    let skills: Vec<&str> = view.tools().iter().map(|tool| &*tool.name).collect();
    let example = view.tools().first().map_or_else(
        || r#"{"tool": "<skill id>", "arguments": {}}"#.to_owned(),
        |tool| {
            let schema = serde_json::from_slice(&tool.schemas.input_full).unwrap_or(Value::Null);
            json!({"tool": &*tool.name, "arguments": super::card::example_arguments(&schema)})
                .to_string()
        },
    );
    let problem = problem.trim_end();
    let stop = if problem.ends_with(['.', '!', '?']) {
        ""
    } else {
        "."
    };
    format!(
        "{problem}{stop} Send a message with a data part {{\"tool\": \"<skill id>\", \"arguments\": \
         {{…}}}}, for example {example}. Skills: {}.",
        if skills.is_empty() {
            "none".to_owned()
        } else {
            skills.join(", ")
        }
    )
}

/// How a tool call ended.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// The result as the `CallToolResult` wrote it: `structured` (its `structuredContent`)
    /// when the tool answered an object, `text` (its first text content, a JSON string) always.
    Completed {
        structured: Option<Box<RawValue>>,
        text: Box<RawValue>,
    },
    /// A tool execution error (downstream failure, timeout): `FAILED`.
    Failed(String),
    /// Unknown tool or invalid arguments: `REJECTED`.
    Rejected(String),
    /// A federated read to run source by source.
    Federated(Box<FederatedCall>),
}

/// The `_meta` opt-in that makes a federated read come back as a [`FederatedCall`].
const SOURCE_RESULTS_OPT_IN: &str = r#","_meta":{"io.modelcontextprotocol/clientCapabilities":{"experimental":{"bos/source-results/v1":{}}}}"#;

/// Runs `call` as the MCP `tools/call` it is. `scope` must carry `stream_sources` when a
/// federated read should be streamed.
pub(crate) async fn run(d: &Dispatcher, scope: &Scope<'_>, call: &ToolCall) -> Outcome {
    let mut body = BytesMut::with_capacity(96 + call.name.len());
    body.put_slice(br#"{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{"name":"#);
    crate::json_text::put_str(&mut body, &call.name);
    body.put_slice(br#","arguments":"#);
    // Writing a `Value` into memory cannot fail.
    let _ = serde_json::to_writer((&mut body).writer(), &call.arguments);
    if scope.stream_sources {
        body.put_slice(SOURCE_RESULTS_OPT_IN.as_bytes());
    }
    body.put_slice(b"}}");
    let mut body = body.to_vec();
    let Ok(RpcMessage::Request { params, .. }) = jsonrpc::parse(&mut body) else {
        return Outcome::Failed("internal error".to_owned());
    };
    let slot = ToolErrorSlot::default();
    let scope = scope.with_tool_error(&slot);
    match d
        .request(&scope, crate::mcp::names::TOOLS_CALL, params.as_ref())
        .await
    {
        Ok(Reply::Result(result)) => from_result(&result, slot.invalid_arguments()),
        Ok(Reply::Federated(call)) => Outcome::Federated(call),
        Ok(_) => Outcome::Failed("internal error".to_owned()),
        Err(McpError::InvalidParams(message)) => Outcome::Rejected(message.into_owned()),
        Err(err) => Outcome::Failed(err.to_string()),
    }
}

/// The members of a `CallToolResult` an outcome needs, borrowed as JSON text (the rest is
/// skipped unread).
#[derive(serde::Deserialize)]
struct CallToolResult<'a> {
    #[serde(default, borrow)]
    content: Vec<Content<'a>>,
    #[serde(default, borrow, rename = "structuredContent")]
    structured: Option<&'a RawValue>,
    #[serde(default, rename = "isError")]
    is_error: bool,
}

#[derive(serde::Deserialize)]
struct Content<'a> {
    #[serde(default, borrow)]
    text: Option<&'a RawValue>,
}

/// A `CallToolResult`'s bytes as an outcome.
pub(crate) fn from_result(result: &[u8], invalid_arguments: Option<bool>) -> Outcome {
    let Ok(result) = serde_json::from_slice::<CallToolResult<'_>>(result) else {
        return Outcome::Failed("internal error".to_owned());
    };
    // A text content is a JSON string; anything else reads as no text.
    let text = result
        .content
        .first()
        .and_then(|content| content.text)
        .filter(|text| text.get().starts_with('"'));
    if result.is_error {
        let text = text
            .and_then(|text| serde_json::from_str::<String>(text.get()).ok())
            .unwrap_or_default();
        return match invalid_arguments {
            Some(true) => Outcome::Rejected(text),
            _ => Outcome::Failed(text),
        };
    }
    let text = match text.map(RawValue::to_owned) {
        Some(text) => text,
        None => match serde_json::value::to_raw_value("") {
            Ok(empty) => empty,
            Err(_) => return Outcome::Failed("internal error".to_owned()),
        },
    };
    Outcome::Completed {
        structured: result
            .structured
            .filter(|raw| raw.get() != "null")
            .map(RawValue::to_owned),
        text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(parts: &str) -> Message {
        serde_json::from_str(&format!(
            r#"{{"messageId":"m","role":"ROLE_USER","parts":{parts}}}"#
        ))
        .expect("message")
    }

    fn check(parts: &str, expected: Result<(&str, Value), NoCall>) {
        let got = read_call(&message(parts));
        let expected = expected.map(|(name, arguments)| ToolCall {
            name: name.to_owned(),
            arguments,
        });
        assert_eq!(got, expected, "{parts}");
    }

    #[test]
    fn a_data_part_or_a_whole_json_text_names_the_tool() {
        check(
            r#"[{"data":{"tool":"get_customer","arguments":{"id":1}}}]"#,
            Ok(("get_customer", json!({"id": 1}))),
        );
        check(
            r#"[{"text":"hello"},{"text":" {\"tool\":\"find\"} "}]"#,
            Ok(("find", json!({}))),
        );
        check(
            r#"[{"data":{"tool":"t","arguments":null}}]"#,
            Ok(("t", json!({}))),
        );
        check(
            r#"[{"text":"run get_customer please"}]"#,
            Err(NoCall::Missing),
        );
        check(r#"[{"data":{"x":1}}]"#, Err(NoCall::Missing));
        check(r#"[]"#, Err(NoCall::Missing));
        check(
            r#"[{"data":{"tool":7}}]"#,
            Err(NoCall::Malformed("\"tool\" must be a tool name (a string)")),
        );
        check(
            r#"[{"data":{"tool":"t","arguments":[1]}}]"#,
            Err(NoCall::Malformed("\"arguments\" must be an object")),
        );
    }

    #[test]
    fn call_results_become_outcomes() {
        let ok = br#"{"content":[{"type":"text","text":"{\"a\":1}"}],"structuredContent":{"a":1},"isError":false}"#;
        assert!(matches!(
            from_result(ok, None),
            Outcome::Completed { structured: Some(s), text } if s.get() == r#"{"a":1}"# && text.get() == r#""{\"a\":1}""#
        ));
        let err = br#"{"content":[{"type":"text","text":"Invalid argument 'id': required."}],"isError":true}"#;
        assert!(matches!(from_result(err, Some(true)), Outcome::Rejected(t) if t.contains("'id'")));
        assert!(matches!(from_result(err, Some(false)), Outcome::Failed(_)));
        assert!(matches!(from_result(err, None), Outcome::Failed(_)));
        assert!(matches!(from_result(b"nope", None), Outcome::Failed(_)));
    }
}
