//! `notifications/progress` for a request that asks for it (MCP 2025-11-25, Utilities §
//! Progress): the request carries `params._meta.progressToken` (a string or a number) and the
//! transport can write notifications before the response (it gave the scope a
//! [`ProgressSink`]). A method that reports progress gets a [`Progress`] and calls
//! [`Progress::report`] once per step; the notification names the request's token, a
//! `progress` that increases by one each time, and a short `message`.
//!
//! The sink is a bounded channel of whole JSON-RPC messages: a reporter waits for room, so a
//! slow client slows the reporting, never grows memory. The transport drains the channel
//! before it writes the response, so no notification follows the response ("progress
//! notifications MUST stop after completion"). A sink whose transport went away swallows what
//! it is given.
//!
//! Must not touch HTTP or SSE framing: the transport frames what the channel carries.

use bytes::{BufMut, Bytes, BytesMut};
use simd_json::prelude::*;
use tokio::sync::mpsc;

use crate::jsonrpc::Payload;

/// Longest `message` of one notification, in bytes (cut at a character boundary).
const MAX_MESSAGE_BYTES: usize = 1024;

/// Longest progress token echoed, in bytes of JSON: a longer one gets no notifications.
const MAX_TOKEN_BYTES: usize = 256;

/// Where a request's progress notifications go: the transport holds the receiving end.
#[derive(Debug, Clone)]
pub struct ProgressSink {
    tx: mpsc::Sender<Bytes>,
}

impl ProgressSink {
    /// A sink and the receiver the transport writes from, `frames` messages deep.
    pub fn channel(frames: usize) -> (Self, mpsc::Receiver<Bytes>) {
        let (tx, rx) = mpsc::channel(frames.max(1));
        (Self { tx }, rx)
    }
}

/// Whether `params` carry `_meta.progressToken` (a transport opens a sink only then).
pub(crate) fn requested(params: Option<&Payload<'_>>) -> bool {
    params.is_some_and(|params| {
        params
            .value()
            .get("_meta")
            .and_then(|meta| meta.get("progressToken"))
            .is_some_and(|token| !token.is_null())
    })
}

/// The progress of one request: its token and the count so far.
#[derive(Debug)]
pub(crate) struct Progress<'a> {
    sink: &'a ProgressSink,
    /// The token as JSON (a string or a number), echoed in every notification.
    token: Bytes,
    progress: u64,
}

impl<'a> Progress<'a> {
    /// The progress of a request whose `params._meta.progressToken` is a string or a number,
    /// when the transport gave it a sink; `None` otherwise (no token, another type, or no way
    /// to deliver: the call runs the same, silently).
    pub(crate) fn of(sink: Option<&'a ProgressSink>, params: Option<&Payload<'_>>) -> Option<Self> {
        let sink = sink?;
        let params = params?.value();
        let token = params.get("_meta")?.get("progressToken")?;
        let json = if let Some(text) = token.as_str() {
            serde_json::to_vec(text).ok()?
        } else if let Some(n) = token.as_i64() {
            n.to_string().into_bytes()
        } else if let Some(n) = token.as_u64() {
            n.to_string().into_bytes()
        } else {
            let n = serde_json::Number::from_f64(token.as_f64()?)?;
            n.to_string().into_bytes()
        };
        (json.len() <= MAX_TOKEN_BYTES).then(|| Self {
            sink,
            token: Bytes::from(json),
            progress: 0,
        })
    }

    /// Reports one step described by `message`: waits for room in the sink (a transport that
    /// went away drops it).
    pub(crate) async fn report(&mut self, message: &str) {
        self.progress += 1;
        let frame = notification(&self.token, self.progress, message);
        let _ = self.sink.tx.send(frame).await;
    }

    /// How many steps were reported.
    #[cfg(test)]
    pub(crate) fn reported(&self) -> u64 {
        self.progress
    }
}

/// `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":…,
/// "progress":n,"message":…}}`.
fn notification(token: &[u8], progress: u64, message: &str) -> Bytes {
    let message = cut(message, MAX_MESSAGE_BYTES);
    let mut out = BytesMut::with_capacity(96 + token.len() + message.len());
    out.put_slice(
        br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"#,
    );
    out.put_slice(token);
    out.put_slice(br#","progress":"#);
    out.put_slice(progress.to_string().as_bytes());
    if !message.is_empty() {
        out.put_slice(br#","message":"#);
        // A `&str` always serializes.
        let _ = serde_json::to_writer((&mut out).writer(), message);
    }
    out.put_slice(b"}}");
    out.freeze()
}

/// `text` cut to at most `max` bytes at a character boundary.
fn cut(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc::{parse, Message};
    use serde_json::{json, Value};

    fn with_params<T>(params: &str, f: impl FnOnce(Option<&Payload<'_>>) -> T) -> T {
        let mut body =
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{params}}}"#).into_bytes();
        let Ok(Message::Request { params, .. }) = parse(&mut body) else {
            panic!("not a request: {params}");
        };
        f(params.as_ref())
    }

    fn progress_of(sink: &ProgressSink, params: &str) -> Option<Bytes> {
        with_params(params, |p| Progress::of(Some(sink), p).map(|p| p.token))
    }

    #[test]
    fn a_string_or_number_token_is_echoed_and_anything_else_is_ignored() {
        let (sink, _rx) = ProgressSink::channel(4);
        let token = |params: &str| progress_of(&sink, params);
        assert_eq!(
            token(r#"{"_meta":{"progressToken":"a\"b"}}"#).as_deref(),
            Some(&br#""a\"b""#[..])
        );
        assert_eq!(
            token(r#"{"_meta":{"progressToken":42}}"#).as_deref(),
            Some(&b"42"[..])
        );
        assert_eq!(
            token(r#"{"_meta":{"progressToken":-7}}"#).as_deref(),
            Some(&b"-7"[..])
        );
        assert_eq!(
            token(r#"{"_meta":{"progressToken":1.5}}"#).as_deref(),
            Some(&b"1.5"[..])
        );
        for params in [
            r#"{}"#,
            r#"{"_meta":{}}"#,
            r#"{"_meta":{"progressToken":null}}"#,
            r#"{"_meta":{"progressToken":{"x":1}}}"#,
            r#"{"_meta":{"progressToken":[1]}}"#,
            r#"{"_meta":{"progressToken":true}}"#,
        ] {
            assert_eq!(token(params), None, "{params}");
        }
        let long = format!(r#"{{"_meta":{{"progressToken":"{}"}}}}"#, "x".repeat(300));
        assert_eq!(token(&long), None);
        // No sink: no progress, whatever the token.
        with_params(r#"{"_meta":{"progressToken":1}}"#, |p| {
            assert!(Progress::of(None, p).is_none());
        });
    }

    #[tokio::test]
    async fn reports_count_up_and_arrive_in_order_as_whole_messages() {
        let (sink, mut rx) = ProgressSink::channel(4);
        let mut body =
            br#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"progressToken":"t1"}}}"#
                .to_vec();
        let Ok(Message::Request { params, .. }) = parse(&mut body) else {
            panic!("not a request");
        };
        let mut progress = Progress::of(Some(&sink), params.as_ref()).expect("progress");
        progress.report("working: step \u{e9}").await;
        progress.report("").await;
        assert_eq!(progress.reported(), 2);
        let first: Value = serde_json::from_slice(&rx.recv().await.unwrap()).unwrap();
        assert_eq!(
            first,
            json!({"jsonrpc": "2.0", "method": "notifications/progress",
                   "params": {"progressToken": "t1", "progress": 1, "message": "working: step \u{e9}"}})
        );
        let second: Value = serde_json::from_slice(&rx.recv().await.unwrap()).unwrap();
        assert_eq!(
            second["params"],
            json!({"progressToken": "t1", "progress": 2})
        );
        // A gone transport swallows reports.
        drop(rx);
        progress.report("late").await;
    }

    #[test]
    fn long_messages_are_cut_at_a_character_boundary() {
        let text = "\u{e9}".repeat(MAX_MESSAGE_BYTES);
        let frame = notification(b"1", 1, &text);
        let value: Value = serde_json::from_slice(&frame).unwrap();
        let message = value["params"]["message"].as_str().unwrap();
        assert!(message.len() <= MAX_MESSAGE_BYTES && message.len() >= MAX_MESSAGE_BYTES - 1);
    }
}
