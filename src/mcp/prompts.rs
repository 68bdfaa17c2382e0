//! `prompts/list` and `prompts/get`: each toolset's effective system prompt as a prompt.
//!
//! The same toolsets as the prompt resources (`resources.rs`: non-null effective prompt, at
//! least one visible tool), named by toolset id, without arguments. `prompts/get` answers one
//! user message holding the prompt text (one content block per message, not an array).
//! Unknown names are -32602 "Unknown prompt: x". Must not compose prompts: the snapshot did.

use bytes::{BufMut, BytesMut};

use super::era::Cache;
use super::page::ListKind;
use super::resources::{find, list_toolsets, put_description};
use super::{json, params, Dispatcher, McpError, Reply, Scope};
use crate::jsonrpc::{echo, Payload};

// === prompts/list ===

pub(crate) fn list(
    d: &Dispatcher,
    scope: &Scope<'_>,
    params: Option<&Payload<'_>>,
) -> Result<Reply, McpError> {
    list_toolsets(d, scope, params, ListKind::Prompts, |out, toolset| {
        out.put_slice(b"{\"name\":");
        json::put_str(out, &toolset.id);
        out.put_slice(b",\"description\":");
        put_description(out, toolset);
        out.put_u8(b'}');
    })
}

// === prompts/get ===

pub(crate) fn get(
    d: &Dispatcher,
    scope: &Scope<'_>,
    params: Option<&Payload<'_>>,
) -> Result<Reply, McpError> {
    // `arguments` is accepted and ignored: these prompts declare none.
    let name = params::req_str(params::root(params)?, "name")?;
    let view = scope.view.map(|v| &**v);
    let found = find(view, name);
    let (Some(toolset), Some(text)) = (found, found.and_then(|t| t.prompt.as_deref())) else {
        return Err(McpError::InvalidParams(
            format!("Unknown prompt: {}", echo(name)).into(),
        ));
    };

    let mut out = BytesMut::with_capacity(text.len() + 160);
    out.put_slice(b"{\"description\":");
    put_description(&mut out, toolset);
    out.put_slice(b",\"messages\":[{\"role\":\"user\",\"content\":{\"type\":\"text\",\"text\":");
    json::put_str(&mut out, text);
    out.put_slice(b"}}]");
    d.prepared.shapes.close(&mut out, scope.era, Cache::No);
    Ok(Reply::Result(out.freeze()))
}
