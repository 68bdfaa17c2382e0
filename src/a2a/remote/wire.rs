//! The concentrator's wire work, without IO: the upstream request body, the upstream answer's
//! envelope read without re-serializing its payload, the ids and state peeked from a task,
//! message or stream event, and the north frames written around the caller's id.
//!
//! An upstream payload is kept as the bytes the upstream sent (`RawValue` slices of its body),
//! so members this runtime does not know (A2A 1.1 additions, extensions) reach the caller
//! untouched; only the JSON-RPC id is replaced. Peeking borrows the payload and allocates
//! nothing (strings with escapes aside).
//!
//! Must not know HTTP, the ledger or the upstream client.

use std::borrow::Cow;

use bytes::{BufMut, Bytes, BytesMut};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::a2a::model::TaskState;
use crate::a2a::A2aError;

/// The upstream's answer to one request, its payload as the upstream wrote it.
#[derive(Debug)]
pub(crate) enum Answer<'a> {
    Result(&'a RawValue),
    /// The error object (its integer `code` checked).
    Error(&'a RawValue),
}

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    result: Option<&'a RawValue>,
    #[serde(borrow)]
    error: Option<&'a RawValue>,
}

/// What an error object must hold: an integer `code` (only checked, never read).
#[derive(Deserialize)]
struct ErrorCode {
    #[serde(rename = "code")]
    _code: i64,
}

/// Reads a JSON-RPC response `body` answering `expected_id` (JSON text). Anything else — not
/// JSON, another id, neither or both of `result` and `error`, an error without an integer
/// `code` — is a non-conforming upstream (-32006).
pub(crate) fn read_answer<'a>(body: &'a [u8], expected_id: &str) -> Result<Answer<'a>, A2aError> {
    let envelope: Envelope<'a> =
        serde_json::from_slice(body).map_err(|_| A2aError::InvalidAgentResponse)?;
    if envelope.id.map(RawValue::get) != Some(expected_id) {
        return Err(A2aError::InvalidAgentResponse);
    }
    match (envelope.result, envelope.error) {
        (Some(result), None) => Ok(Answer::Result(result)),
        (None, Some(error)) => {
            serde_json::from_str::<ErrorCode>(error.get())
                .map_err(|_| A2aError::InvalidAgentResponse)?;
            Ok(Answer::Error(error))
        }
        _ => Err(A2aError::InvalidAgentResponse),
    }
}

/// The same for one stream event's data, whose id may also be absent or null (some servers
/// write events without it); a present id must be ours.
pub(crate) fn read_event<'a>(data: &'a [u8], expected_id: &str) -> Result<Answer<'a>, A2aError> {
    let envelope: Envelope<'a> =
        serde_json::from_slice(data).map_err(|_| A2aError::InvalidAgentResponse)?;
    match envelope.id.map(RawValue::get) {
        None | Some("null") => {}
        Some(id) if id == expected_id => {}
        Some(_) => return Err(A2aError::InvalidAgentResponse),
    }
    match (envelope.result, envelope.error) {
        (Some(result), None) => Ok(Answer::Result(result)),
        (None, Some(error)) => {
            serde_json::from_str::<ErrorCode>(error.get())
                .map_err(|_| A2aError::InvalidAgentResponse)?;
            Ok(Answer::Error(error))
        }
        _ => Err(A2aError::InvalidAgentResponse),
    }
}

/// `{"jsonrpc":"2.0","id":<id>,"method":<method>,"params":<params>}` for the upstream.
pub(crate) fn request_body(id: &str, method: &str, params: &serde_json::Value) -> Bytes {
    let params = serde_json::to_vec(params).unwrap_or_else(|_| b"{}".to_vec());
    let mut out = BytesMut::with_capacity(params.len() + method.len() + id.len() + 48);
    out.put_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    out.put_slice(id.as_bytes());
    out.put_slice(b",\"method\":");
    crate::json_text::put_str(&mut out, method);
    out.put_slice(b",\"params\":");
    out.put_slice(&params);
    out.put_slice(b"}");
    out.freeze()
}

/// Appends `{"jsonrpc":"2.0","id":<id>,"<member>":<payload>}` to `out`, the payload's raw line
/// breaks (insignificant whitespace in valid JSON) written as spaces so the response also fits
/// on one SSE `data:` line.
pub(crate) fn put_response(out: &mut BytesMut, id: &[u8], member: &str, payload: &[u8]) {
    out.reserve(response_len(id, member, payload));
    out.put_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    out.put_slice(id);
    out.put_slice(b",\"");
    out.put_slice(member.as_bytes());
    out.put_slice(b"\":");
    let from = out.len();
    out.put_slice(payload);
    if memchr::memchr2(b'\n', b'\r', payload).is_some() {
        for byte in &mut out[from..] {
            if matches!(*byte, b'\n' | b'\r') {
                *byte = b' ';
            }
        }
    }
    out.put_slice(b"}");
}

/// The exact length [`put_response`] writes: `{"jsonrpc":"2.0","id":` (22), the id, `,"` (2),
/// the member, `":` (2), the payload, `}` (1).
fn response_len(id: &[u8], member: &str, payload: &[u8]) -> usize {
    27 + id.len() + member.len() + payload.len()
}

/// A JSON answer: the response for `id` with `payload` as its `member` (`result`/`error`).
pub(crate) fn response(id: &[u8], member: &str, payload: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(response_len(id, member, payload));
    put_response(&mut out, id, member, payload);
    out.freeze()
}

/// One SSE event holding the response for `id` with `payload` as its `member`.
///
/// One allocation: the buffer is sized exactly (`data: ` and the blank line around the
/// response), so freezing it needs no shared header either (`Bytes::from(Vec)` allocates one
/// when the length falls short of the capacity).
pub(crate) fn event(id: &[u8], member: &str, payload: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(8 + response_len(id, member, payload));
    out.put_slice(b"data: ");
    put_response(&mut out, id, member, payload);
    out.put_slice(b"\n\n");
    out.freeze()
}

// === peeking ===

/// Ids and status of a Task, Message or update event, borrowed from its JSON.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Ids<'a> {
    #[serde(borrow, default, deserialize_with = "borrowed")]
    pub id: Option<Cow<'a, str>>,
    #[serde(borrow, default, rename = "taskId", deserialize_with = "borrowed")]
    pub task_id: Option<Cow<'a, str>>,
    #[serde(borrow, default, rename = "contextId", deserialize_with = "borrowed")]
    pub context_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub status: Option<&'a RawValue>,
}

#[derive(Debug, Default, Deserialize)]
struct StatusPeek<'a> {
    #[serde(borrow, default, deserialize_with = "borrowed")]
    state: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "borrowed")]
    timestamp: Option<Cow<'a, str>>,
}

/// An optional string borrowed from the input when it has no escapes (serde borrows a bare
/// `Cow<str>` field but copies one inside an `Option`: one allocation per id per event).
fn borrowed<'de, D>(deserializer: D) -> Result<Option<Cow<'de, str>>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    struct Text;
    impl<'de> serde::de::Visitor<'de> for Text {
        type Value = Option<Cow<'de, str>>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a string or null")
        }
        fn visit_borrowed_str<E: serde::de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
            Ok(Some(Cow::Borrowed(v)))
        }
        fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok(Some(Cow::Owned(v.to_owned())))
        }
        fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_str(self)
        }
    }
    deserializer.deserialize_option(Text)
}

/// A `SendMessage` result or a stream event (`StreamResponse`): which member it holds.
#[derive(Debug, Default, Deserialize)]
struct Wrapper<'a> {
    #[serde(borrow, default)]
    task: Option<Ids<'a>>,
    #[serde(borrow, default)]
    message: Option<Ids<'a>>,
    #[serde(borrow, default, rename = "statusUpdate")]
    status_update: Option<Ids<'a>>,
    #[serde(borrow, default, rename = "artifactUpdate")]
    artifact_update: Option<Ids<'a>>,
}

/// What one payload says about a task: its id, context and status.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Peek<'a> {
    pub task_id: Option<Cow<'a, str>>,
    pub context_id: Option<Cow<'a, str>>,
    pub state: TaskState,
    pub stamp: Option<Cow<'a, str>>,
    /// The status object's JSON as written.
    pub status: Option<&'a str>,
    /// Whether the payload was a Task or a status update (what the ledger records).
    pub carries_status: bool,
}

impl<'a> Peek<'a> {
    fn of_task(ids: Ids<'a>) -> Peek<'a> {
        Self::with_status(ids.id, ids.context_id, ids.status)
    }

    fn with_status(
        task_id: Option<Cow<'a, str>>,
        context_id: Option<Cow<'a, str>>,
        status: Option<&'a RawValue>,
    ) -> Peek<'a> {
        let peeked: StatusPeek<'a> = status
            .and_then(|raw| serde_json::from_str(raw.get()).ok())
            .unwrap_or_default();
        Peek {
            task_id,
            context_id,
            state: peeked
                .state
                .as_deref()
                .map_or(TaskState::Unspecified, TaskState::parse),
            stamp: peeked.timestamp,
            status: status.map(RawValue::get),
            carries_status: status.is_some(),
        }
    }
}

/// The ids of a Task (`GetTask`, `CancelTask`).
pub(crate) fn peek_task(json: &str) -> Peek<'_> {
    serde_json::from_str::<Ids<'_>>(json)
        .map(Peek::of_task)
        .unwrap_or_default()
}

/// The ids of a `SendMessage` result or a stream event (`{task}`, `{message}`,
/// `{statusUpdate}`, `{artifactUpdate}`).
pub(crate) fn peek_wrapped(json: &str) -> Peek<'_> {
    let Ok(wrapper) = serde_json::from_str::<Wrapper<'_>>(json) else {
        return Peek::default();
    };
    if let Some(task) = wrapper.task {
        return Peek::of_task(task);
    }
    if let Some(update) = wrapper.status_update {
        return Peek::with_status(update.task_id, update.context_id, update.status);
    }
    let ids = wrapper
        .message
        .or(wrapper.artifact_update)
        .unwrap_or_default();
    Peek {
        task_id: ids.task_id,
        context_id: ids.context_id,
        ..Peek::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_without_touching_the_payload() {
        let body = br#"{"jsonrpc":"2.0","id":"sl-1","result":{"task":{"id":"t","x11":[1, 2]}}}"#;
        match read_answer(body, "\"sl-1\"").unwrap() {
            Answer::Result(raw) => assert_eq!(raw.get(), r#"{"task":{"id":"t","x11":[1, 2]}}"#),
            other => panic!("{other:?}"),
        }
        let body =
            br#"{"jsonrpc":"2.0","id":"sl-1","error":{"code":-32001,"message":"no","data":[{}]}}"#;
        match read_answer(body, "\"sl-1\"").unwrap() {
            Answer::Error(raw) => {
                assert!(raw.get().contains("\"data\":[{}]"));
            }
            other => panic!("{other:?}"),
        }
        for bad in [
            &br#"{"jsonrpc":"2.0","id":"sl-2","result":{}}"#[..],
            br#"{"jsonrpc":"2.0","result":{}}"#,
            br#"{"jsonrpc":"2.0","id":"sl-1"}"#,
            br#"{"jsonrpc":"2.0","id":"sl-1","error":{"message":"no code"}}"#,
            br#"<html>"#,
        ] {
            assert_eq!(
                read_answer(bad, "\"sl-1\"").unwrap_err(),
                A2aError::InvalidAgentResponse
            );
        }
        // Stream events may omit the id.
        assert!(read_event(br#"{"jsonrpc":"2.0","result":{}}"#, "\"sl-1\"").is_ok());
        assert!(read_event(br#"{"id":"x","result":{}}"#, "\"sl-1\"").is_err());
    }

    #[test]
    fn frames_restore_the_callers_id_and_stay_on_one_line() {
        let frame = event(b"42", "result", b"{\n  \"task\": {\"id\": \"a\\nb\"}\n}");
        assert_eq!(
            &frame[..],
            &b"data: {\"jsonrpc\":\"2.0\",\"id\":42,\"result\":{   \"task\": {\"id\": \"a\\nb\"} }}\n\n"[..]
        );
        let answer = response(b"\"abc\"", "error", b"{\"code\":-32001}");
        let value: serde_json::Value = serde_json::from_slice(&answer).unwrap();
        assert_eq!(value["id"], "abc");
        assert_eq!(value["error"]["code"], -32001);
        let body = request_body("\"sl-9\"", "SendMessage", &serde_json::json!({"a": 1}));
        let value: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(value["id"], "sl-9");
        assert_eq!(value["method"], "SendMessage");
        assert_eq!(value["params"]["a"], 1);
    }

    #[test]
    fn peeks_find_ids_and_states() {
        let task = r#"{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING","timestamp":"2026-12-02T10:00:00Z"},"artifacts":[{"parts":[{"text":"x"}]}]}"#;
        let peek = peek_task(task);
        assert_eq!(peek.task_id.as_deref(), Some("t1"));
        assert_eq!(peek.context_id.as_deref(), Some("c1"));
        assert_eq!(peek.state, TaskState::Working);
        assert_eq!(peek.stamp.as_deref(), Some("2026-12-02T10:00:00Z"));
        assert!(peek.status.unwrap().starts_with("{\"state\""));

        let wrapped = format!("{{\"task\":{task}}}");
        assert_eq!(peek_wrapped(&wrapped).task_id.as_deref(), Some("t1"));
        let update = r#"{"statusUpdate":{"taskId":"t1","contextId":"c1","status":{"state":"TASK_STATE_COMPLETED"}}}"#;
        let peek = peek_wrapped(update);
        assert_eq!(peek.state, TaskState::Completed);
        assert!(peek.carries_status);
        let artifact = r#"{"artifactUpdate":{"taskId":"t1","contextId":"c1","artifact":{}}}"#;
        let peek = peek_wrapped(artifact);
        assert_eq!(peek.task_id.as_deref(), Some("t1"));
        assert!(!peek.carries_status);
        let message =
            r#"{"message":{"messageId":"m","contextId":"c9","role":"ROLE_AGENT","parts":[]}}"#;
        let peek = peek_wrapped(message);
        assert_eq!(peek.context_id.as_deref(), Some("c9"));
        assert_eq!(peek.task_id, None);
        assert_eq!(peek_wrapped("[1]"), Peek::default());
    }

    #[test]
    fn ids_are_borrowed_unless_escaped() {
        let json = r#"{"statusUpdate":{"taskId":"t1","contextId":"c\u0031","status":{"state":"TASK_STATE_WORKING","timestamp":null}}}"#;
        let peek = peek_wrapped(json);
        assert!(
            matches!(peek.task_id, Some(Cow::Borrowed("t1"))),
            "{peek:?}"
        );
        assert!(
            matches!(&peek.context_id, Some(Cow::Owned(c)) if c == "c1"),
            "{peek:?}"
        );
        assert_eq!(peek.state, TaskState::Working);
        assert_eq!(peek.stamp, None);
        // A wrong type is no peek at all, as before.
        assert_eq!(
            peek_wrapped(r#"{"statusUpdate":{"taskId":7}}"#),
            Peek::default()
        );
    }

    #[test]
    fn frames_are_sized_exactly() {
        let frame = event(b"\"x-1\"", "result", br#"{"task":{}}"#);
        assert_eq!(
            &frame[..],
            &b"data: {\"jsonrpc\":\"2.0\",\"id\":\"x-1\",\"result\":{\"task\":{}}}\n\n"[..]
        );
        let body = response(b"1", "error", b"{}");
        assert_eq!(body.len(), response_len(b"1", "error", b"{}"));
    }
}
