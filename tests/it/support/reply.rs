//! [`Reply`]: a whole HTTP answer (status, headers, collected body) and the ways tests read
//! it: as JSON, as SSE events, as a JSON-RPC error. Owns only reading; sending is
//! `support::client`.

use bytes::{Bytes, BytesMut};
use http::{HeaderMap, StatusCode};
use serde_json::Value;

/// A whole answer: status, headers and the collected body.
pub(crate) struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Reply {
    /// The body as JSON; panics with the body when it is not. An SSE body (the default answer
    /// of a handshake-era request) stands for the data of its last `message` event, so tests
    /// that check the answer, not its framing, read both the same.
    pub(crate) fn json(&self) -> Value {
        let body = if self.header("content-type").starts_with("text/event-stream") {
            last_message(&self.body)
        } else {
            self.body.clone()
        };
        serde_json::from_slice(&body).unwrap_or_else(|err| {
            panic!(
                "not JSON ({err}): {:?}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    /// A header's value, or `""` when absent or not visible ASCII.
    pub(crate) fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    /// The `Content-Type`, or `""`.
    pub(crate) fn content_type(&self) -> &str {
        self.header("content-type")
    }

    /// The body as (lossy) UTF-8 text.
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// Asserts a JSON-RPC error answer with this status, code and id; returns the body.
    pub(crate) fn assert_error(&self, status: u16, code: i64, id: Value) -> Value {
        assert_eq!(self.status.as_u16(), status, "body {:?}", self.text());
        assert_eq!(self.content_type(), "application/json");
        let body = self.json();
        assert_eq!(body["jsonrpc"], "2.0");
        assert_eq!(body["error"]["code"], code, "{body}");
        assert!(body["error"]["message"].is_string(), "{body}");
        assert_eq!(body.get("id"), Some(&id), "{body}");
        body
    }

    /// Asserts a transport-level refusal: `status` with a JSON-RPC error body (`id` null,
    /// code -32000); `what` names the case in failures.
    pub(crate) fn assert_refused(&self, status: u16, what: &str) {
        assert_eq!(self.status.as_u16(), status, "{what}: {:?}", self.text());
        assert_eq!(self.content_type(), "application/json", "{what}");
        let body = self.json();
        assert_eq!(body["jsonrpc"], "2.0", "{what}: {body}");
        assert_eq!(body["id"], Value::Null, "{what}: {body}");
        assert_eq!(body["error"]["code"], -32000, "{what}: {body}");
    }

    /// The SSE events of the whole body (asserts an event-stream answer).
    pub(crate) fn events(&self) -> Vec<sluice::sse::Event> {
        assert_eq!(self.content_type(), "text/event-stream");
        let mut decoder = sluice::sse::Decoder::new();
        let mut buf = BytesMut::from(&self.body[..]);
        let mut events = Vec::new();
        while let Some(event) = decoder.decode(&mut buf).expect("valid SSE") {
            events.push(event);
        }
        events
    }

    /// The JSON messages of an SSE body (events with non-empty data).
    pub(crate) fn messages(&self) -> Vec<Value> {
        self.events()
            .iter()
            .filter(|e| !e.data.is_empty())
            .map(|e| serde_json::from_slice(&e.data).expect("JSON data"))
            .collect()
    }
}

/// The data of the last non-empty `message` event of an SSE body (empty when there is none).
fn last_message(body: &Bytes) -> Bytes {
    let mut decoder = sluice::sse::Decoder::new();
    let mut buf = BytesMut::from(&body[..]);
    let mut last = Bytes::new();
    while let Ok(Some(event)) = decoder.decode(&mut buf) {
        if event.event_type() == b"message" && !event.data.is_empty() {
            last = event.data;
        }
    }
    last
}
