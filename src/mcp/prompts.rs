//! `prompts/list` and `prompts/get`: each toolset's effective system prompt as a prompt.
//!
//! The same toolsets as the prompt resources (`resources.rs`: non-null effective prompt, at
//! least one visible tool), named by toolset id, without arguments. `prompts/get` answers one
//! user message holding the prompt text (one content block per message, not an array).
//! Unknown names are -32602 "Unknown prompt: x". Must not compose prompts: the snapshot did.

use bytes::{BufMut, BytesMut};

use super::era::Cache;
use super::page::{self, ListKind};
use super::resources::{find, put_description, visible};
use super::{json, params, Dispatcher, McpError, Reply, Scope};
use crate::jsonrpc::Payload;

// === prompts/list ===

pub(crate) fn list(
    d: &Dispatcher,
    scope: &Scope<'_>,
    params: Option<&Payload<'_>>,
) -> Result<Reply, McpError> {
    let cursor = params::opt_str(params::root(params)?, "cursor")?;
    let view = scope
        .snapshot
        .client(scope.tenant, scope.client)
        .map(|v| &**v);
    let n_visible = visible(view).count();
    let page = page::page(
        ListKind::Prompts,
        scope.snapshot.version(),
        n_visible,
        d.config.page_size,
        cursor,
    )?;

    let mut out = BytesMut::with_capacity(256);
    out.put_slice(b"{\"prompts\":[");
    for (i, toolset) in visible(view)
        .skip(page.start)
        .take(page.end - page.start)
        .enumerate()
    {
        if i > 0 {
            out.put_u8(b',');
        }
        out.put_slice(b"{\"name\":");
        json::put_str(&mut out, &toolset.id);
        out.put_slice(b",\"description\":");
        put_description(&mut out, toolset);
        out.put_u8(b'}');
    }
    out.put_u8(b']');
    if let Some(next) = &page.next {
        out.put_slice(b",\"nextCursor\":");
        json::put_str(&mut out, next);
    }
    d.prepared.shapes.close(&mut out, scope.era, Cache::Private);
    Ok(Reply::Result(out.freeze()))
}

// === prompts/get ===

pub(crate) fn get(
    d: &Dispatcher,
    scope: &Scope<'_>,
    params: Option<&Payload<'_>>,
) -> Result<Reply, McpError> {
    // `arguments` is accepted and ignored: these prompts declare none.
    let name = params::req_str(params::root(params)?, "name")?;
    let view = scope
        .snapshot
        .client(scope.tenant, scope.client)
        .map(|v| &**v);
    let found = find(view, name);
    let (Some(toolset), Some(text)) = (found, found.and_then(|t| t.prompt.as_deref())) else {
        return Err(McpError::InvalidParams(
            format!("Unknown prompt: {name}").into(),
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
