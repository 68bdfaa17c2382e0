//! `tools/list` and `tools/call`, including the `discover_tool_schema` meta-tool and the
//! `ask_{agentId}` tools of registered remote agents (`agents.rs`).
//!
//! `tools/list` copies the snapshot's pre-serialized entries (the meta-tool already placed by
//! the catalog, in name order) page by page. `tools/call` resolves the tool in the snapshot and
//! calls it through the [`Invoker`](crate::invoke::Invoker) with the arguments read from the
//! request body (no copy of the JSON).
//!
//! Errors (MCP 2025-11-25, Tools § Error Handling, SEP-1303): protocol errors are JSON-RPC errors —
//! an unknown tool (-32602 "Unknown tool: x"), params that do not fit CallToolRequest (no `name`,
//! `arguments` not an object). Tool execution errors are results with `isError: true` — downstream
//! failures, timeouts, an answer the process-wide answer budget cannot hold ("Server busy: …", like
//! any downstream failure), and *input validation* failures ("Input validation errors … should be
//! reported as Tool Execution Errors rather than Protocol Errors, so the model can self-correct"):
//! an argument missing or of the wrong type, or the `_schema_discovery`-only call. One exception: a
//! path argument that is `.`, `..` or empty would change which downstream path is called, and is
//! refused with -32602 (nothing is sent). Their text is the invoker's `safe_message()` (no
//! downstream body, URL, host or transport detail) and they carry no `structuredContent`, so a
//! client that validates against `outputSchema` sees the real error (`docs/mcp-pitfalls.md` point
//! 10).
//!
//! Must not build JSON trees: results are written straight into a `BytesMut`.

use bytes::{BufMut, Bytes, BytesMut};
use simd_json::prelude::*;
use simd_json::tape::Value;
use simd_json::BorrowedValue;

use super::era::Cache;
use super::page::{self, ListKind};
use super::result::{self, failure, success};
use super::{agents, federated, json, params, Dispatcher, McpError, Reply, Scope};
use crate::catalog::schema::DISCOVER_TOOL_NAME;
use crate::catalog::CatalogTool;
use crate::catalog::{self, ClientView};
use crate::config::Downstream;
use crate::invoke::cap::{self, Capped};
use crate::invoke::{CorrelationPolicy, ErrorClass, InvokeOutput};
use crate::jsonrpc::{echo, Payload};
use crate::log_limit::{warn_limited, Kind};

// === tools/list ===

pub(crate) fn list(
    d: &Dispatcher,
    scope: &Scope<'_>,
    params: Option<&Payload<'_>>,
) -> Result<Reply, McpError> {
    let cursor = params::opt_str(params::root(params)?, "cursor")?;
    let view = scope.view;
    let (entries, tag) = match view {
        Some(view) => (view.list_entries(), view.fingerprint()),
        None => (&[][..], 0),
    };
    let page = page::page(
        ListKind::Tools,
        tag,
        entries.len(),
        d.config.page_size,
        cursor,
    )?;
    let entries = entries.get(page.start..page.end).unwrap_or_default();

    let shapes = &d.prepared.shapes;
    let listed: usize = entries.iter().map(Bytes::len).sum::<usize>() + entries.len();
    let mut out = BytesMut::with_capacity(listed + 64 + shapes.max_suffix_len());
    out.put_slice(b"{\"tools\":[");
    for (i, entry) in entries.iter().enumerate() {
        if i > 0 {
            out.put_u8(b',');
        }
        out.put_slice(entry);
    }
    out.put_u8(b']');
    if let Some(next) = &page.next {
        out.put_slice(b",\"nextCursor\":");
        json::put_str(&mut out, next);
    }
    shapes.close(&mut out, scope.era, Cache::Private);
    Ok(Reply::Result(out.freeze()))
}

// === tools/call ===

/// `tools/call` params: `{name, arguments?}` (other members, `_meta` included, are ignored).
struct CallParams<'p, 'a> {
    name: &'a str,
    /// The `arguments` object; `None` when absent or `null` (read as `{}`).
    arguments: Option<Value<'p, 'a>>,
}

impl<'p, 'a> CallParams<'p, 'a> {
    fn parse(params: Option<&'p Payload<'a>>) -> Result<Self, McpError> {
        let root = params::root(params)?;
        Ok(Self {
            name: params::req_str(root, "name")?,
            arguments: params::opt_object(root, "arguments")?,
        })
    }
}

pub(crate) async fn call(
    d: &Dispatcher,
    scope: &Scope<'_>,
    params: Option<&Payload<'_>>,
) -> Result<Reply, McpError> {
    let raw_params = params;
    let params = CallParams::parse(params)?;
    let view = scope.view;
    let tool = view.and_then(|view| view.tool(params.name));
    let Some(tool) = tool else {
        if let Some(view) = view {
            if params.name == DISCOVER_TOOL_NAME && view.needs_discovery() {
                return Ok(discover_tool_schema(d, scope, view, params.arguments));
            }
            if let Some(agent) = view.agent_tool(params.name) {
                let progress = super::progress::Progress::of(scope.progress, raw_params);
                return Ok(agents::call(d, scope, view, agent, params.arguments, progress).await);
            }
        }
        return Err(McpError::InvalidParams(
            format!("Unknown tool: {}", echo(params.name)).into(),
        ));
    };

    // The arguments stay in the request body: the lazy value only builds the map index.
    let arguments = match params.arguments {
        Some(arguments) => simd_json::value::lazy::Value::from_tape(arguments).into_value(),
        None => BorrowedValue::object(),
    };
    let policy = CorrelationPolicy::of_tool(tool);
    if matches!(tool.def.downstream, Downstream::Federated(_)) {
        // The plan validates the arguments and turns them into the query every source gets.
        let query = match federated::source_query(d, tool, &policy, scope.call, &arguments) {
            Ok(query) => query,
            Err(message) => {
                if let Some(slot) = scope.tool_error {
                    slot.set(ErrorClass::InvalidArguments);
                }
                return Ok(Reply::Result(failure(d, scope, &message)));
            }
        };
        return Ok(federated::call(d, scope, raw_params, tool, query).await);
    }
    let result = d
        .invoker
        .call(scope.tenant, &tool.plan, &policy, scope.call, &arguments)
        .await;
    let reply = match result {
        Ok(output) => match &output.fault {
            // The downstream refused with its own message: a tool failure carrying it.
            Some(text) => {
                if let Some(slot) = scope.tool_error {
                    slot.set(ErrorClass::Downstream);
                }
                result::fault(d, scope, text, &output.body)
            }
            None => capped(d, scope, tool, &output),
        },
        // A path value that would change which downstream path is called is refused as a
        // protocol error: unlike a missing or mistyped argument (a tool execution error the
        // model can correct), it is a request the runtime will not make in any form.
        Err(err) if err.is_path_refusal() => {
            return Err(McpError::InvalidParams(err.safe_message()));
        }
        Err(err) => {
            if let Some(slot) = scope.tool_error {
                slot.set(err.class());
            }
            // Rate-limited per tenant and kind: a dead downstream fails every call.
            match err.class() {
                ErrorClass::InvalidArguments => {}
                ErrorClass::Timeout | ErrorClass::Downstream | ErrorClass::Busy => warn_limited!(
                    scope.tenant,
                    Kind::ToolCallFailed,
                    tool = %tool.name,
                    error = %err,
                    "tool call failed downstream"
                ),
            }
            failure(d, scope, &err.safe_message())
        }
    };
    Ok(Reply::Result(reply))
}

/// `discover_tool_schema {tool_id}`: the catalog's answer as a tool result.
fn discover_tool_schema(
    d: &Dispatcher,
    scope: &Scope<'_>,
    view: &ClientView,
    arguments: Option<Value<'_, '_>>,
) -> Reply {
    let tool_id = arguments.and_then(|args| args.get("tool_id"));
    let Some(tool_id) = tool_id.and_then(|v| v.into_string()) else {
        return Reply::Result(failure(
            d,
            scope,
            "Invalid argument 'tool_id': a tool name (string) is required.",
        ));
    };
    match view.tool(tool_id) {
        Some(tool) => {
            let answer = catalog::Discovery { tool }.to_json();
            Reply::Result(success(d, scope, &answer, true))
        }
        None => Reply::Result(failure(
            d,
            scope,
            "Invalid argument 'tool_id': no such tool is listed for this client.",
        )),
    }
}

/// A successful call's result under its tool's result size guard (`max_result_bytes`): as is,
/// cut (with `_meta` saying what was cut), or refused as a tool error.
fn capped(d: &Dispatcher, scope: &Scope<'_>, tool: &CatalogTool, output: &InvokeOutput) -> Bytes {
    let Some(limit) = tool.def.max_result_bytes else {
        return success(d, scope, &output.body, output.is_object);
    };
    match cap::apply(
        &output.body,
        limit,
        tool.def.on_oversize.unwrap_or_default(),
    ) {
        Capped::Fits => success(d, scope, &output.body, output.is_object),
        Capped::Cut(cut) => result::success_cut(d, scope, &cut.body, output.is_object, &cut.meta),
        Capped::Refused(text) => {
            if let Some(slot) = scope.tool_error {
                slot.set(ErrorClass::Downstream);
            }
            result::failure(d, scope, &text)
        }
    }
}
