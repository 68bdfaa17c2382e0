//! Source events and where they go.
//!
//! Owns `SourceEvent` (one `notifications/bos/source_result` of `bos/source-results/v1`), its
//! JSON-RPC notification writer, and the `EventSink` seam with its two stock sinks: `NullSink`
//! (not streaming: events carry no records) and `ChannelSink` (a bounded `tokio::sync::mpsc`
//! channel, so a slow consumer makes sources wait). Must not do IO itself or know SSE framing:
//! the integrator's sink frames the bytes.

use std::sync::Arc;

use bytes::{BufMut, BytesMut};
use futures_util::future::BoxFuture;
#[cfg(test)]
use tokio::sync::mpsc;

use super::record::{write_records, FederatedRecord};
use super::{LimitReason, SourceErrorCode};
use crate::json_text::put_str;

/// The JSON-RPC method of a source event.
pub const SOURCE_RESULT_METHOD: &str = "notifications/bos/source_result";

/// A source's pair of names, which identifies it in events and metadata.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SourceRef {
    /// The source's kind.
    pub source_type: Arc<str>,
    /// The source's identity.
    pub source_identity: Arc<str>,
}

impl SourceRef {
    /// Writes `{"source_type":…,"source_identity":…}`.
    pub fn write_json(&self, out: &mut BytesMut) {
        out.put_slice(b"{\"source_type\":");
        put_str(out, &self.source_type);
        out.put_slice(b",\"source_identity\":");
        put_str(out, &self.source_identity);
        out.put_u8(b'}');
    }
}

/// What an event says about its source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceStatus {
    /// A delivery page of at most `pageSize` records.
    Page,
    /// The source finished; no more events of it follow.
    Complete,
    /// The source failed; no more events of it follow.
    Error,
}

impl SourceStatus {
    /// The status on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Page => "page",
            Self::Complete => "complete",
            Self::Error => "error",
        }
    }

    /// Whether this is the source's last event.
    #[cfg(test)]
    pub(crate) fn is_terminal(self) -> bool {
        !matches!(self, Self::Page)
    }
}

/// One source event of an invocation.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceEvent {
    /// Global, from 1, strictly increasing over the invocation in emission order.
    pub sequence: u64,
    /// The source's page index: from 1 for pages; on a terminal, the source's last page index
    /// (0 when it delivered none).
    pub page_index: u64,
    /// The source.
    pub source: SourceRef,
    /// The page's records, federated within the page; empty on terminals (and on every event
    /// when the sink is not streaming).
    pub records: Vec<FederatedRecord>,
    /// Page or terminal.
    pub status: SourceStatus,
    /// The error code of an `error` terminal.
    pub error: Option<SourceErrorCode>,
    /// The server limit behind a `source_unavailable` terminal, when one cut the source
    /// (written as `error.reason`).
    pub reason: Option<LimitReason>,
}

impl SourceEvent {
    /// Writes the whole JSON-RPC notification:
    /// `{"jsonrpc":"2.0","method":"notifications/bos/source_result","params":{"requestId":…,
    /// "sequence":n,"pageIndex":n,"source":{…},"records":[…],"status":"…"[,"error":{"code":"…"
    /// [,"reason":"…"]}][,"context":{…}]}}`. `request_id_json` and `context_json` are written verbatim (they must
    /// be JSON text: the request id as received, the public context object).
    pub fn write_notification(
        &self,
        out: &mut BytesMut,
        request_id_json: &[u8],
        context_json: Option<&[u8]>,
    ) {
        out.put_slice(b"{\"jsonrpc\":\"2.0\",\"method\":\"");
        out.put_slice(SOURCE_RESULT_METHOD.as_bytes());
        out.put_slice(b"\",\"params\":{\"requestId\":");
        out.put_slice(request_id_json);
        out.put_slice(b",\"sequence\":");
        out.put_slice(itoa_u64(self.sequence).as_bytes());
        out.put_slice(b",\"pageIndex\":");
        out.put_slice(itoa_u64(self.page_index).as_bytes());
        out.put_slice(b",\"source\":");
        self.source.write_json(out);
        out.put_slice(b",\"records\":");
        write_records(out, &self.records);
        out.put_slice(b",\"status\":\"");
        out.put_slice(self.status.as_str().as_bytes());
        out.put_u8(b'"');
        if let Some(code) = self.error {
            out.put_slice(b",\"error\":{\"code\":\"");
            out.put_slice(code.as_str().as_bytes());
            out.put_u8(b'"');
            if let Some(reason) = self.reason {
                out.put_slice(b",\"reason\":\"");
                out.put_slice(reason.as_str().as_bytes());
                out.put_u8(b'"');
            }
            out.put_u8(b'}');
        }
        if let Some(context) = context_json {
            out.put_slice(b",\"context\":");
            out.put_slice(context);
        }
        out.put_slice(b"}}");
    }
}

fn itoa_u64(n: u64) -> String {
    n.to_string()
}

/// The consumer went away; the run stops and cancels what is outstanding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the event consumer is gone")]
pub struct SinkClosed;

/// Where a run's events go, one at a time in sequence order.
///
/// `emit` is awaited before the next event is produced: a slow sink holds the run (and so its
/// sources) back, which bounds memory. An `Err` stops the run: every outstanding source read is
/// cancelled and the outcome is marked cancelled.
pub trait EventSink: Send {
    /// Whether events are consumed with their records. When `false`, pages are delivered with
    /// empty `records` and no source-local federation is done for them (the final result is
    /// unchanged).
    fn is_streaming(&self) -> bool {
        true
    }

    /// Delivers one event.
    fn emit(&mut self, event: SourceEvent) -> BoxFuture<'_, Result<(), SinkClosed>>;
}

/// A sink for invocations that do not stream: events are dropped, records never materialized.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct NullSink;

impl EventSink for NullSink {
    fn is_streaming(&self) -> bool {
        false
    }

    fn emit(&mut self, _event: SourceEvent) -> BoxFuture<'_, Result<(), SinkClosed>> {
        Box::pin(std::future::ready(Ok(())))
    }
}

/// A sink that sends each event into a bounded channel; a full channel makes the run wait, a
/// closed one stops it. The federation tests' sink (the streaming transports write their own).
#[cfg(test)]
#[derive(Debug, Clone)]
pub(crate) struct ChannelSink {
    tx: mpsc::Sender<SourceEvent>,
}

#[cfg(test)]
impl ChannelSink {
    /// A sink sending into `tx`.
    pub(crate) fn new(tx: mpsc::Sender<SourceEvent>) -> Self {
        Self { tx }
    }
}

#[cfg(test)]
impl EventSink for ChannelSink {
    fn emit(&mut self, event: SourceEvent) -> BoxFuture<'_, Result<(), SinkClosed>> {
        Box::pin(async move { self.tx.send(event).await.map_err(|_| SinkClosed) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(status: SourceStatus, error: Option<SourceErrorCode>) -> SourceEvent {
        SourceEvent {
            sequence: 3,
            page_index: 0,
            source: SourceRef {
                source_type: "example".into(),
                source_identity: "other-demo-source".into(),
            },
            records: vec![],
            status,
            error,
            reason: None,
        }
    }

    #[test]
    fn writes_the_contract_notification() {
        let mut out = BytesMut::new();
        event(SourceStatus::Error, Some(SourceErrorCode::SourceTimeout)).write_notification(
            &mut out,
            br#""search-1""#,
            Some(br#"{"context_handle":"H","is_default":true}"#),
        );
        assert_eq!(
            std::str::from_utf8(&out).unwrap(),
            r#"{"jsonrpc":"2.0","method":"notifications/bos/source_result","params":{"requestId":"search-1","sequence":3,"pageIndex":0,"source":{"source_type":"example","source_identity":"other-demo-source"},"records":[],"status":"error","error":{"code":"source_timeout"},"context":{"context_handle":"H","is_default":true}}}"#
        );
        let mut out = BytesMut::new();
        let mut cut = event(
            SourceStatus::Error,
            Some(SourceErrorCode::SourceUnavailable),
        );
        cut.reason = Some(LimitReason::PageLimit);
        cut.write_notification(&mut out, b"7", None);
        assert_eq!(
            std::str::from_utf8(&out).unwrap(),
            r#"{"jsonrpc":"2.0","method":"notifications/bos/source_result","params":{"requestId":7,"sequence":3,"pageIndex":0,"source":{"source_type":"example","source_identity":"other-demo-source"},"records":[],"status":"error","error":{"code":"source_unavailable","reason":"page_limit"}}}"#
        );
        let mut out = BytesMut::new();
        event(SourceStatus::Complete, None).write_notification(&mut out, b"7", None);
        assert_eq!(
            std::str::from_utf8(&out).unwrap(),
            r#"{"jsonrpc":"2.0","method":"notifications/bos/source_result","params":{"requestId":7,"sequence":3,"pageIndex":0,"source":{"source_type":"example","source_identity":"other-demo-source"},"records":[],"status":"complete"}}"#
        );
    }
}
