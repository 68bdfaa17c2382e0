//! `resources/list` and `resources/read`: each toolset's effective system prompt as a resource.
//!
//! The runtime specification ("MCP Resources vs MCP Prompts"): "A toolset appears in both surfaces as long as it
//! has a non-null effective system prompt and at least one active authorized tool." The URI is
//! stable and names the toolset: `sluice://prompts/{toolset id}` (the id percent-encoded; ids
//! are `[A-Za-z0-9._-]`, so in practice it reads as is). `mimeType` is `text/markdown`, the
//! `name` is the toolset id and the `description` is the toolset's, or a generated sentence
//! when it has none. Unknown or invisible URIs are [`McpError::ResourceNotFound`] (-32002 in the
//! handshake era, -32602 with `data.uri` in 2026). Must not compose prompts: the snapshot did.

use bytes::{BufMut, BytesMut};
use percent_encoding::{percent_decode_str, utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

use super::era::Cache;
use super::page::{self, ListKind};
use super::{json, params, Dispatcher, McpError, Reply, Scope};
use crate::catalog::{ClientView, ToolsetView};
use crate::jsonrpc::{echo, Payload};

/// Every prompt resource URI starts with this.
pub(crate) const PROMPT_RESOURCE_PREFIX: &str = "sluice://prompts/";

/// The media type of prompt texts.
pub(crate) const PROMPT_MIME_TYPE: &str = "text/markdown";

/// Characters kept as is in a URI segment: RFC 3986 unreserved (`ALPHA DIGIT - . _ ~`).
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// The resource URI of a toolset's system prompt.
pub(crate) fn prompt_resource_uri(toolset: &str) -> String {
    format!(
        "{PROMPT_RESOURCE_PREFIX}{}",
        utf8_percent_encode(toolset, SEGMENT)
    )
}

/// The toolsets a client sees as prompt resources and prompts, in id order: a non-null
/// effective prompt and at least one visible tool.
pub(crate) fn visible(view: Option<&ClientView>) -> impl Iterator<Item = &ToolsetView> {
    view.into_iter()
        .flat_map(|view| view.toolsets())
        .filter(|toolset| toolset.prompt.is_some() && toolset.n_visible_tools > 0)
}

/// A visible toolset by id.
pub(crate) fn find<'v>(view: Option<&'v ClientView>, id: &str) -> Option<&'v ToolsetView> {
    visible(view).find(|toolset| &*toolset.id == id)
}

/// Appends the description of a toolset's prompt: the toolset's own, or a generated sentence.
pub(crate) fn put_description(out: &mut BytesMut, toolset: &ToolsetView) {
    match toolset
        .description
        .as_deref()
        .filter(|d| !d.trim().is_empty())
    {
        Some(description) => json::put_str(out, description),
        None => json::put_str(
            out,
            &format!("System prompt of the '{}' toolset.", toolset.id),
        ),
    }
}

// === resources/list ===

pub(crate) fn list(
    d: &Dispatcher,
    scope: &Scope<'_>,
    params: Option<&Payload<'_>>,
) -> Result<Reply, McpError> {
    list_toolsets(d, scope, params, ListKind::Resources, |out, toolset| {
        out.put_slice(b"{\"uri\":");
        json::put_str(out, &prompt_resource_uri(&toolset.id));
        out.put_slice(b",\"name\":");
        json::put_str(out, &toolset.id);
        out.put_slice(b",\"description\":");
        put_description(out, toolset);
        out.put_slice(b",\"mimeType\":");
        json::put_str(out, PROMPT_MIME_TYPE);
        out.put_u8(b'}');
    })
}

/// One page of the visible toolsets as `{"<resources|prompts>":[…],"nextCursor"?:…}` closed with
/// the era's shape: the listing both `resources/list` and `prompts/list` answer, each writing its
/// own entry with `write_entry`.
pub(crate) fn list_toolsets(
    d: &Dispatcher,
    scope: &Scope<'_>,
    params: Option<&Payload<'_>>,
    kind: ListKind,
    write_entry: impl Fn(&mut BytesMut, &ToolsetView),
) -> Result<Reply, McpError> {
    let cursor = params::opt_str(params::root(params)?, "cursor")?;
    let view = scope.view.map(|v| &**v);
    let n_visible = visible(view).count();
    let page = page::page(
        kind,
        scope.snapshot.version(),
        n_visible,
        d.config.page_size,
        cursor,
    )?;

    let mut out = BytesMut::with_capacity(256);
    out.put_slice(match kind {
        ListKind::Prompts => b"{\"prompts\":[",
        _ => b"{\"resources\":[",
    });
    for (i, toolset) in visible(view)
        .skip(page.start)
        .take(page.end - page.start)
        .enumerate()
    {
        if i > 0 {
            out.put_u8(b',');
        }
        write_entry(&mut out, toolset);
    }
    out.put_u8(b']');
    if let Some(next) = &page.next {
        out.put_slice(b",\"nextCursor\":");
        json::put_str(&mut out, next);
    }
    d.prepared.shapes.close(&mut out, scope.era, Cache::Private);
    Ok(Reply::Result(out.freeze()))
}

// === resources/read ===

pub(crate) fn read(
    d: &Dispatcher,
    scope: &Scope<'_>,
    params: Option<&Payload<'_>>,
) -> Result<Reply, McpError> {
    let uri = params::req_str(params::root(params)?, "uri")?;
    let view = scope
        .snapshot
        .client(scope.tenant, scope.client)
        .map(|v| &**v);
    let found = uri
        .strip_prefix(PROMPT_RESOURCE_PREFIX)
        .and_then(|segment| percent_decode_str(segment).decode_utf8().ok())
        .and_then(|id| find(view, &id));
    let (Some(toolset), Some(text)) = (found, found.and_then(|t| t.prompt.as_deref())) else {
        return Err(McpError::ResourceNotFound {
            uri: echo(uri).into_owned(),
            era: scope.era,
        });
    };

    let mut out = BytesMut::with_capacity(text.len() + uri.len() + 96);
    out.put_slice(b"{\"contents\":[{\"uri\":");
    json::put_str(&mut out, &prompt_resource_uri(&toolset.id));
    out.put_slice(b",\"mimeType\":");
    json::put_str(&mut out, PROMPT_MIME_TYPE);
    out.put_slice(b",\"text\":");
    json::put_str(&mut out, text);
    out.put_slice(b"}]");
    d.prepared.shapes.close(&mut out, scope.era, Cache::Private);
    Ok(Reply::Result(out.freeze()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(toolset: &str, expected: &str) {
        let uri = prompt_resource_uri(toolset);
        assert_eq!(uri, expected);
        let back = percent_decode_str(uri.strip_prefix(PROMPT_RESOURCE_PREFIX).unwrap())
            .decode_utf8()
            .unwrap();
        assert_eq!(back, toolset);
    }

    #[test]
    fn uris_are_stable_and_percent_encoded() {
        check("crm", "sluice://prompts/crm");
        check("a.b_c-d~", "sluice://prompts/a.b_c-d~");
        check("a b/c?", "sluice://prompts/a%20b%2Fc%3F");
        check("é", "sluice://prompts/%C3%A9");
    }
}
