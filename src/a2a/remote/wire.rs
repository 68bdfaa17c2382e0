//! The concentrator's wire work, without IO: the upstream request body, the upstream answer's
//! envelope read without re-serializing its payload, the ids and state peeked from a task,
//! message or stream event, and the north frames written around the caller's id.
//!
//! An upstream payload is kept as the bytes the upstream sent (slices of its body, checked by
//! `wire/scan.rs`), so members this runtime does not know (A2A 1.1 additions, extensions) reach
//! the caller untouched; only the JSON-RPC id is replaced. Reading an envelope and peeking
//! borrow the payload and allocate nothing (strings with escapes aside).
//!
//! Must not know HTTP, the ledger or the upstream client.

mod scan;

use std::borrow::Cow;

use bytes::{BufMut, Bytes, BytesMut};

use self::scan::Json;
use crate::a2a::model::TaskState;
use crate::a2a::A2aError;

/// The upstream's answer to one request, its payload's JSON text as the upstream wrote it (a
/// slice of the body).
#[derive(Debug)]
pub(crate) enum Answer<'a> {
    Result(&'a str),
    /// The error object (its integer `code` checked).
    Error(&'a str),
}

/// The members of a response envelope that matter (`null` reads as absent).
#[derive(Default)]
struct Envelope<'a> {
    id: Option<Json<'a>>,
    result: Option<Json<'a>>,
    error: Option<Json<'a>>,
}

impl<'a> Envelope<'a> {
    /// `body` checked as JSON and its members found; a repeated member is refused.
    fn read(body: &'a [u8]) -> Result<Envelope<'a>, A2aError> {
        let mut envelope = Envelope::default();
        let mut repeated = false;
        Json::parse_object(body, |name, value| {
            let slot = match name {
                "id" => &mut envelope.id,
                "result" => &mut envelope.result,
                "error" => &mut envelope.error,
                _ => return,
            };
            repeated |= slot.is_some();
            *slot = (!value.is_null()).then_some(value);
        })
        .map_err(|_| A2aError::InvalidAgentResponse)?;
        if repeated {
            return Err(A2aError::InvalidAgentResponse);
        }
        Ok(envelope)
    }

    /// Exactly one of `result` and `error`, the error with an integer `code`.
    fn answer(self) -> Result<Answer<'a>, A2aError> {
        match (self.result, self.error) {
            (Some(result), None) => Ok(Answer::Result(result.text())),
            (None, Some(error))
                if error
                    .get("code")
                    .is_some_and(|code| code.text().parse::<i64>().is_ok()) =>
            {
                Ok(Answer::Error(error.text()))
            }
            _ => Err(A2aError::InvalidAgentResponse),
        }
    }
}

/// Reads a JSON-RPC response `body` answering `expected_id` (JSON text). Anything else — not
/// JSON, another id, neither or both of `result` and `error`, an error without an integer
/// `code` — is a non-conforming upstream (-32006).
pub(crate) fn read_answer<'a>(body: &'a [u8], expected_id: &str) -> Result<Answer<'a>, A2aError> {
    let envelope = Envelope::read(body)?;
    if envelope.id.map(Json::text) != Some(expected_id) {
        return Err(A2aError::InvalidAgentResponse);
    }
    envelope.answer()
}

/// The same for one stream event's data, whose id may also be absent or null (some servers
/// write events without it); a present id must be ours.
pub(crate) fn read_event<'a>(data: &'a [u8], expected_id: &str) -> Result<Answer<'a>, A2aError> {
    let envelope = Envelope::read(data)?;
    match envelope.id.map(Json::text) {
        None => {}
        Some(id) if id == expected_id => {}
        Some(_) => return Err(A2aError::InvalidAgentResponse),
    }
    envelope.answer()
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
#[derive(Debug, Default)]
struct Ids<'a> {
    id: Option<Cow<'a, str>>,
    task_id: Option<Cow<'a, str>>,
    context_id: Option<Cow<'a, str>>,
    status: Option<Json<'a>>,
}

/// A string or null; `Err` for any other value.
fn text_value(value: Json<'_>) -> Result<Option<Cow<'_, str>>, ()> {
    if value.is_null() {
        return Ok(None);
    }
    value.as_str().map(Some).ok_or(())
}

impl<'a> Ids<'a> {
    /// The ids of `object` (one pass over its members); `Err` when it is not an object or an
    /// id is not a string. `null` reads as absent.
    fn of(object: Json<'a>) -> Result<Ids<'a>, ()> {
        if !object.is_object() {
            return Err(());
        }
        let mut ids = Ids::default();
        for (name, value) in object.members() {
            match name {
                "id" => ids.id = text_value(value)?,
                "taskId" => ids.task_id = text_value(value)?,
                "contextId" => ids.context_id = text_value(value)?,
                "status" => ids.status = (!value.is_null()).then_some(value),
                _ => {}
            }
        }
        Ok(ids)
    }

    /// [`Ids::of`] of a present, non-null member.
    fn of_member(value: Option<Json<'a>>) -> Result<Option<Ids<'a>>, ()> {
        match value {
            Some(value) if !value.is_null() => Ids::of(value).map(Some),
            _ => Ok(None),
        }
    }
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
        status: Option<Json<'a>>,
    ) -> Peek<'a> {
        // A status whose state or timestamp is not a string reads as neither.
        let (state, stamp) = status
            .filter(|status| status.is_object())
            .and_then(|status| {
                let (mut state, mut stamp) = (None, None);
                for (name, value) in status.members() {
                    match name {
                        "state" => state = text_value(value).ok()?,
                        "timestamp" => stamp = text_value(value).ok()?,
                        _ => {}
                    }
                }
                Some((state, stamp))
            })
            .unwrap_or_default();
        Peek {
            task_id,
            context_id,
            state: state
                .as_deref()
                .map_or(TaskState::Unspecified, TaskState::parse),
            stamp,
            status: status.map(Json::text),
            carries_status: status.is_some(),
        }
    }
}

/// The ids of a Task (`GetTask`, `CancelTask`).
pub(crate) fn peek_task(json: &str) -> Peek<'_> {
    Json::parse(json.as_bytes())
        .ok()
        .and_then(|task| Ids::of(task).ok())
        .map(Peek::of_task)
        .unwrap_or_default()
}

/// The ids of a `SendMessage` result or a stream event (`{task}`, `{message}`,
/// `{statusUpdate}`, `{artifactUpdate}`).
pub(crate) fn peek_wrapped(json: &str) -> Peek<'_> {
    Json::parse(json.as_bytes())
        .map(peek_of)
        .unwrap_or_default()
}

/// [`peek_wrapped`] of an [`Answer::Result`]'s text, which [`read_event`] or [`read_answer`]
/// checked already.
pub(crate) fn peek_answer(result: &str) -> Peek<'_> {
    peek_of(Json::checked(result))
}

fn peek_of(wrapper: Json<'_>) -> Peek<'_> {
    if !wrapper.is_object() {
        return Peek::default();
    }
    let [mut task, mut status_update, mut message, mut artifact_update] = [None; 4];
    for (name, value) in wrapper.members() {
        match name {
            "task" => task = Some(value),
            "statusUpdate" => status_update = Some(value),
            "message" => message = Some(value),
            "artifactUpdate" => artifact_update = Some(value),
            _ => {}
        }
    }
    let members = (|| {
        Ok::<_, ()>((
            Ids::of_member(task)?,
            Ids::of_member(status_update)?,
            Ids::of_member(message)?,
            Ids::of_member(artifact_update)?,
        ))
    })();
    let Ok((task, status_update, message, artifact_update)) = members else {
        return Peek::default();
    };
    if let Some(task) = task {
        return Peek::of_task(task);
    }
    if let Some(update) = status_update {
        return Peek::with_status(update.task_id, update.context_id, update.status);
    }
    let ids = message.or(artifact_update).unwrap_or_default();
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
            Answer::Result(raw) => assert_eq!(raw, r#"{"task":{"id":"t","x11":[1, 2]}}"#),
            other => panic!("{other:?}"),
        }
        let body =
            br#"{"jsonrpc":"2.0","id":"sl-1","error":{"code":-32001,"message":"no","data":[{}]}}"#;
        match read_answer(body, "\"sl-1\"").unwrap() {
            Answer::Error(raw) => {
                assert!(raw.contains("\"data\":[{}]"));
            }
            other => panic!("{other:?}"),
        }
        for bad in [
            &br#"{"jsonrpc":"2.0","id":"sl-2","result":{}}"#[..],
            br#"{"jsonrpc":"2.0","result":{}}"#,
            br#"{"jsonrpc":"2.0","id":"sl-1"}"#,
            br#"{"jsonrpc":"2.0","id":"sl-1","error":{"message":"no code"}}"#,
            br#"<html>"#,
            br#"{"jsonrpc":"2.0","id":"sl-1","result":{},"result":{}}"#,
            br#"{"jsonrpc":"2.0","id":"sl-1","result":{"task":{]}}"#,
            br#"{"jsonrpc":"2.0","id":"sl-1","error":{"code":1.5}}"#,
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
