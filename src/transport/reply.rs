//! Writing a dispatcher outcome as a JSON-RPC response, and answering it inline as one JSON body
//! or a few known SSE frames.
//!
//! No task and no channel here: the frames of an inline SSE answer are all known when the response
//! is built (`docs/hot-path.md`). Must not know MCP methods: it sees a result's bytes or an error's
//! code, message and data.

use bytes::{Bytes, BytesMut};
use http::{Response, StatusCode};
use smallvec::SmallVec;

use crate::http::response::{self, Body, INLINE_FRAMES};
use crate::jsonrpc::{self, IdRef};
use crate::mcp::{McpError, Reply};
use crate::sse;

/// Room reserved for a response envelope around its result.
const ENVELOPE: usize = 64;

/// Appends the JSON-RPC response for `outcome` to `out`.
pub(crate) fn write_outcome<'i>(
    out: &mut BytesMut,
    id: impl Into<IdRef<'i>>,
    outcome: &Result<Reply, McpError>,
) {
    match outcome {
        Ok(reply) => write_result(out, id, result_bytes(reply)),
        Err(err) => write_mcp_error(out, id, err),
    }
}

/// Appends `{"jsonrpc":"2.0","id":…,"result":<result>}`.
pub(crate) fn write_result<'i>(out: &mut BytesMut, id: impl Into<IdRef<'i>>, result: &[u8]) {
    jsonrpc::write_result_raw(out, id, result);
}

/// The `result` object of a reply. A `Listen` reply has no immediate result (the transport
/// opens a stream for it); `{}` stands in should one reach an inline writer.
pub(crate) fn result_bytes(reply: &Reply) -> &[u8] {
    match reply {
        Reply::Result(result) => result,
        Reply::Initialized { result, .. } => result,
        Reply::Listen(_) | Reply::Federated(_) => b"{}",
    }
}

/// Appends the in-band JSON-RPC error response of `err` (with its `data` when it has one): its
/// code from the one table, written by the one error writer ([`crate::rescue`]).
pub(crate) fn write_mcp_error<'i>(out: &mut BytesMut, id: impl Into<IdRef<'i>>, err: &McpError) {
    let data = err.data();
    crate::rescue::write_error(out, id, err.code(), &err.to_string(), data.as_deref());
}

/// How an inline answer is framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    /// `Content-Type: application/json`, the message as the whole body.
    Json,
    /// `Content-Type: text/event-stream`: optional leading frames, then the message as one
    /// `event: message` frame, then the stream ends.
    Sse,
}

/// Builds the inline answer: one JSON body, or the SSE frames `lead` followed by one message
/// frame (with event id `event_id`) carrying what `write` appends.
pub(crate) fn inline(
    status: StatusCode,
    framing: Framing,
    lead: SmallVec<[Bytes; INLINE_FRAMES]>,
    event_id: Option<&[u8]>,
    size_hint: usize,
    write: impl FnOnce(&mut BytesMut),
) -> Response<Body> {
    match framing {
        Framing::Json => {
            let mut out = BytesMut::with_capacity(size_hint + ENVELOPE);
            write(&mut out);
            response::json(status, out.freeze())
        }
        Framing::Sse => {
            let mut frames = lead;
            let mut encoder = sse::Encoder::new();
            frames.push(encoder.message_with(event_id, write));
            let mut answer = response::event_stream(Body::frames(frames));
            *answer.status_mut() = status;
            answer
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc::Id;

    fn check(outcome: Result<Reply, McpError>, expected: &str) {
        let mut out = BytesMut::new();
        write_outcome(&mut out, Id::Int(3), &outcome);
        assert_eq!(std::str::from_utf8(&out), Ok(expected));
    }

    #[test]
    fn outcomes() {
        check(
            Ok(Reply::Result(Bytes::from_static(b"{}"))),
            r#"{"jsonrpc":"2.0","id":3,"result":{}}"#,
        );
        check(
            Err(McpError::MethodNotFound("x".into())),
            r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"method not found: x"}}"#,
        );
        check(
            Err(McpError::Internal),
            r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"internal error"}}"#,
        );
    }
}
