//! The `CallToolResult` writers every `tools/call` path answers with: a tool's success, a tool
//! execution error (`isError: true`), a SOAP fault, a federated read's final result, and the `bos_execute`
//! identity envelope.
//!
//! One place for them, so `tools.rs`, `federated.rs`, `platform.rs` and `agents.rs` import
//! this file and never each other's writers. Each writes straight into a `BytesMut` and closes
//! it with the era's suffix (`resultType`, `serverInfo` in the stateless era). Must not call
//! anything: the callers have the outcome; this file only writes it.

use bytes::{BufMut, Bytes, BytesMut};

use super::era::Cache;
use super::names::META_SERVER_INFO;
use super::{json, Dispatcher, Era, Scope};
use crate::bos::{self, Extras};
use crate::federation::FederatedOutcome;

/// `{"content":[{"type":"text","text":"<result JSON>"}][,"structuredContent":<result>],
/// "isError":false}`; `structuredContent` only when the result is an object.
pub(super) fn success(d: &Dispatcher, scope: &Scope<'_>, result: &[u8], is_object: bool) -> Bytes {
    let shapes = &d.prepared.shapes;
    let mut out = BytesMut::with_capacity(2 * result.len() + 96 + shapes.max_suffix_len());
    out.put_slice(b"{\"content\":[{\"type\":\"text\",\"text\":");
    json::put_json_text_as_str(&mut out, result);
    out.put_slice(b"}]");
    if is_object {
        out.put_slice(b",\"structuredContent\":");
        out.put_slice(result);
    }
    out.put_slice(b",\"isError\":false");
    shapes.close(&mut out, scope.era, Cache::No);
    out.freeze()
}

/// [`success`] of a result cut to its tool's `max_result_bytes` (`crate::invoke::cap`): the
/// text and `structuredContent` are the cut result, and `_meta` says what was cut under
/// [`META_TRUNCATED`].
pub(super) fn success_cut(
    d: &Dispatcher,
    scope: &Scope<'_>,
    result: &[u8],
    is_object: bool,
    cut: &[u8],
) -> Bytes {
    let shapes = &d.prepared.shapes;
    let mut out =
        BytesMut::with_capacity(2 * result.len() + cut.len() + 128 + shapes.max_suffix_len());
    out.put_slice(b"{\"content\":[{\"type\":\"text\",\"text\":");
    json::put_json_text_as_str(&mut out, result);
    out.put_slice(b"}]");
    if is_object {
        out.put_slice(b",\"structuredContent\":");
        out.put_slice(result);
    }
    out.put_slice(b",\"isError\":false");
    let mut member = BytesMut::with_capacity(cut.len() + 32);
    json::put_str(&mut member, META_TRUNCATED);
    member.put_u8(b':');
    member.put_slice(cut);
    shapes.close_with_meta(&mut out, scope.era, &member);
    out.freeze()
}

/// The `_meta` key of a cut result's description: `{"limitBytes":…,"originalBytes":…,
/// "resultBytes":…,"cut":[{"path":<JSON Pointer>,"kept":…,"of":…}]}`.
pub(crate) const META_TRUNCATED: &str = "io.sluice/truncated";

/// `{"content":[{"type":"text","text":"<text>"}],"structuredContent":<fault>,"isError":true}`:
/// a SOAP fault, the service's own message with its structured code and detail.
pub(super) fn fault(d: &Dispatcher, scope: &Scope<'_>, text: &str, fault: &[u8]) -> Bytes {
    let shapes = &d.prepared.shapes;
    let mut out = BytesMut::with_capacity(text.len() + fault.len() + 96 + shapes.max_suffix_len());
    out.put_slice(b"{\"content\":[{\"type\":\"text\",\"text\":");
    json::put_str(&mut out, text);
    out.put_slice(b"}],\"structuredContent\":");
    out.put_slice(fault);
    out.put_slice(b",\"isError\":true");
    shapes.close(&mut out, scope.era, Cache::No);
    out.freeze()
}

/// `{"content":[{"type":"text","text":"<message>"}],"isError":true}`.
pub(super) fn failure(d: &Dispatcher, scope: &Scope<'_>, message: &str) -> Bytes {
    let shapes = &d.prepared.shapes;
    let mut out = BytesMut::with_capacity(message.len() + 80 + shapes.max_suffix_len());
    out.put_slice(b"{\"content\":[{\"type\":\"text\",\"text\":");
    json::put_str(&mut out, message);
    out.put_slice(b"}],\"isError\":true");
    shapes.close(&mut out, scope.era, Cache::No);
    out.freeze()
}

/// `{"content":[{"type":"text","text":"<operation result>"}],"structuredContent":
/// {"result":[…],"metadata":{…}},"isError":<partial>}` (+ the era's suffix): the final result
/// of a federated read; `None` (not a federated tool) is an internal-error result.
pub(super) fn federated(d: &Dispatcher, era: Era, outcome: Option<&FederatedOutcome>) -> Bytes {
    let shapes = &d.prepared.shapes;
    let Some(outcome) = outcome else {
        let mut out = BytesMut::with_capacity(96 + shapes.max_suffix_len());
        out.put_slice(br#"{"content":[{"type":"text","text":"internal error"}],"isError":true"#);
        shapes.close(&mut out, era, Cache::No);
        return out.freeze();
    };
    let operation = outcome.operation_result_json();
    let mut out = BytesMut::with_capacity(2 * operation.len() + 96 + shapes.max_suffix_len());
    out.put_slice(b"{\"content\":[{\"type\":\"text\",\"text\":");
    json::put_json_text_as_str(&mut out, &operation);
    out.put_slice(b"}],\"structuredContent\":");
    out.put_slice(&operation);
    out.put_slice(if outcome.is_partial() {
        b",\"isError\":true"
    } else {
        b",\"isError\":false"
    });
    shapes.close(&mut out, era, Cache::No);
    out.freeze()
}

/// The `bos_execute` result: the identity envelope around `operation`, with the era's extras
/// (`resultType` and `serverInfo` inside the one `_meta` in the stateless era).
pub(super) fn envelope(
    d: &Dispatcher,
    era: Era,
    context_json: &[u8],
    operation: &[u8],
    is_error: bool,
) -> Bytes {
    match era {
        Era::Handshake => bos::execute_result(context_json, operation, is_error, Extras::default()),
        Era::Stateless => {
            let mut meta = BytesMut::with_capacity(96);
            meta.put_u8(b',');
            json::put_str(&mut meta, META_SERVER_INFO);
            meta.put_u8(b':');
            meta.put_slice(d.prepared.shapes.server_info());
            bos::execute_result(
                context_json,
                operation,
                is_error,
                Extras {
                    top_level: b",\"resultType\":\"complete\"",
                    meta: &meta,
                },
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::catalog::Snapshot;
    use crate::invoke::{CallContext, Invoker, InvokerConfig};
    use crate::mcp::{DispatcherConfig, Era};

    /// Checks the result `write` builds in `era`, as text.
    fn check(era: Era, write: impl Fn(&Dispatcher, &Scope<'_>) -> Bytes, expected: &str) {
        let d = Dispatcher::new(
            DispatcherConfig {
                server_version: "1".to_owned(),
                ..DispatcherConfig::default()
            },
            Arc::new(Invoker::new(InvokerConfig::default())),
        );
        let config = crate::config::parse("", "t").unwrap();
        let snapshot = Snapshot::build(&config, 1, None).unwrap();
        let ctx = CallContext::new(None);
        let caller = crate::auth::Caller::anonymous("t".into(), "c".into());
        let scope = Scope::new(
            "t",
            "c",
            &snapshot,
            snapshot.client("t", "c"),
            (era, crate::protocol::ProtocolVersion::V2025_11_25),
            &ctx,
            &caller,
        );
        let got = write(&d, &scope);
        assert_eq!(std::str::from_utf8(&got).unwrap(), expected);
    }

    #[test]
    fn result_shapes() {
        check(
            Era::Handshake,
            |d, s| success(d, s, br#"{"a":"x"}"#, true),
            r#"{"content":[{"type":"text","text":"{\"a\":\"x\"}"}],"structuredContent":{"a":"x"},"isError":false}"#,
        );
        check(
            Era::Handshake,
            |d, s| success(d, s, b"[1]", false),
            r#"{"content":[{"type":"text","text":"[1]"}],"isError":false}"#,
        );
        check(
            Era::Handshake,
            |d, s| failure(d, s, "It \"failed\"."),
            r#"{"content":[{"type":"text","text":"It \"failed\"."}],"isError":true}"#,
        );
        check(
            Era::Stateless,
            |d, s| failure(d, s, "x"),
            r#"{"content":[{"type":"text","text":"x"}],"isError":true,"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"sluice","version":"1"}}}"#,
        );
    }
}
