//! The `bos_execute` identity envelope: an operation's result wrapped with the context it ran
//! in, as the contract's final frame (§5) shows it.
//!
//! ```text
//! {"content":[{"type":"text","text":"<envelope JSON as a string>"}],
//!  "structuredContent":{"contract_version":"bos-identity-mcp/v2","context":{…},"result":<op>},
//!  "isError":b<extra top-level members>,"_meta":{"bos/context":{…}<extra _meta members>}}
//! ```
//!
//! For a federated read `<op>` is `{"result":[…],"metadata":{…}}`, so records are at
//! `structuredContent.result.result` and metadata at `structuredContent.result.metadata`; any
//! other tool's result is placed as it is. The text copy is the same envelope, so a client that
//! reads only `content[0].text` gets the same data.
//!
//! Must not build JSON trees or re-parse the operation result: the context and result are
//! spliced as bytes, so they must be valid JSON text (the dispatcher's own output). Only the
//! text copy is escaped, with the crate's string writer (`json_text.rs`).

use bytes::{BufMut, Bytes, BytesMut};

use crate::json_text::{put_json_text_as_str, put_str};

/// `structuredContent.contract_version`.
pub(crate) const CONTRACT_VERSION: &str = "bos-identity-mcp/v2";

/// The `_meta` key that repeats the public context.
pub(crate) const META_CONTEXT_KEY: &str = "bos/context";

/// Members the dispatcher adds to the result, as JSON text.
///
/// Both are either empty or start with a comma: `top_level` is inserted after `isError` (e.g.
/// `,"resultType":"complete"` for the stateless era), `meta` after `"bos/context"` inside
/// `_meta` (e.g. `,"io.modelcontextprotocol/serverInfo":{…}`), so the result never has two
/// `_meta` members.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Extras<'a> {
    /// Members after `isError`, before `_meta`.
    pub top_level: &'a [u8],
    /// Members inside `_meta`, after `bos/context`.
    pub meta: &'a [u8],
}

/// The `bos_execute` CallToolResult for `operation_result` (JSON text) run in the context whose
/// public JSON is `context_json`.
pub(crate) fn execute_result(
    context_json: &[u8],
    operation_result: &[u8],
    is_error: bool,
    extras: Extras<'_>,
) -> Bytes {
    let mut envelope = BytesMut::with_capacity(64 + context_json.len() + operation_result.len());
    envelope.put_slice(b"{\"contract_version\":");
    put_str(&mut envelope, CONTRACT_VERSION);
    envelope.put_slice(b",\"context\":");
    envelope.put_slice(context_json);
    envelope.put_slice(b",\"result\":");
    envelope.put_slice(operation_result);
    envelope.put_u8(b'}');

    let mut out = BytesMut::with_capacity(
        2 * envelope.len()
            + envelope.len() / 8
            + context_json.len()
            + extras.top_level.len()
            + extras.meta.len()
            + 128,
    );
    out.put_slice(b"{\"content\":[{\"type\":\"text\",\"text\":");
    put_json_text_as_str(&mut out, &envelope);
    out.put_slice(b"}],\"structuredContent\":");
    out.put_slice(&envelope);
    out.put_slice(if is_error {
        b",\"isError\":true"
    } else {
        b",\"isError\":false"
    });
    out.put_slice(extras.top_level);
    out.put_slice(b",\"_meta\":{");
    put_str(&mut out, META_CONTEXT_KEY);
    out.put_u8(b':');
    out.put_slice(context_json);
    out.put_slice(extras.meta);
    out.put_slice(b"}}");
    out.freeze()
}
