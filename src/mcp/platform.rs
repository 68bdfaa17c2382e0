//! The BOS platform tools behind `/mcp/apps/bos/platform`: `bos_list_contexts`,
//! `bos_list_tools` and `bos_execute` (the published `bos/source-results/v1` contract §2 and §5).
//!
//! A platform request is authenticated by its client application's API key (the transport did
//! that) and names no tenant in its path; every context it may act in is one of its tenant's
//! `bos_context`s assigned to its caller id, reached through a signed, caller-bound handle.
//! `bos_execute` runs the named tool of the context's client application exactly as a direct
//! call would — a federated read streams its source events when the request opted in, with the
//! public context in every notification — and wraps the operation result in the identity
//! envelope. Handle and argument problems are tool errors (`isError`), never an oracle: every
//! refused handle reads "unknown context". Must not touch HTTP.

use bytes::{BufMut, BytesMut};

use super::era::Cache;
use super::federated::{self, FederatedCall};
use super::result::{envelope, failure};
use super::{params, Dispatcher, McpError, Reply, Scope};
use crate::bos::{self, ArgsError, BosCall};
use crate::config::Downstream;
use crate::invoke::CorrelationPolicy;
use crate::jsonrpc::{echo, Payload};

/// `tools/list` on the platform endpoint: the three platform tools.
pub(crate) fn list(d: &Dispatcher, scope: &Scope<'_>) -> Result<Reply, McpError> {
    let shapes = &d.prepared.shapes;
    let mut out = BytesMut::with_capacity(2048);
    out.put_slice(b"{\"tools\":[");
    for (i, definition) in bos::tools::definitions().iter().enumerate() {
        if i > 0 {
            out.put_u8(b',');
        }
        out.put_slice(definition.as_bytes());
    }
    out.put_u8(b']');
    shapes.close(&mut out, scope.era, Cache::Private);
    Ok(Reply::Result(out.freeze()))
}

/// `tools/call` on the platform endpoint.
pub(crate) async fn call(
    d: &Dispatcher,
    scope: &Scope<'_>,
    raw_params: Option<&Payload<'_>>,
) -> Result<Reply, McpError> {
    let root = params::root(raw_params)?;
    let name = params::req_str(root, "name")?;
    let arguments = params::opt_object(root, "arguments")?;
    let parsed = match bos::parse_call(name, arguments) {
        Ok(parsed) => parsed,
        Err(ArgsError::UnknownTool(_)) => {
            return Err(McpError::InvalidParams(
                format!("Unknown tool: {}", echo(name)).into(),
            ))
        }
        Err(err) => return Ok(Reply::Result(failure(d, scope, &err.to_string()))),
    };
    let (Some(key), Some(contexts)) = (&d.bos_key, scope.snapshot.bos_contexts(scope.tenant))
    else {
        return Ok(Reply::Result(failure(
            d,
            scope,
            "the BOS platform is not configured on this server",
        )));
    };
    let caller = &*scope.caller.caller_id;
    match parsed {
        BosCall::ListContexts => {
            let handles: Vec<_> = contexts
                .for_caller(caller)
                .map(|context| (context, context.issue_handle(key)))
                .collect();
            let mut out = BytesMut::with_capacity(512);
            bos::tools::write_list_contexts(
                &mut out,
                handles
                    .iter()
                    .map(|(context, handle)| (*context, handle.as_str())),
            );
            d.prepared.shapes.close(&mut out, scope.era, Cache::No);
            Ok(Reply::Result(out.freeze()))
        }
        BosCall::ListTools { context_handle } => {
            let Ok(context) = bos::resolve(key, contexts, context_handle, caller) else {
                return Ok(Reply::Result(failure(d, scope, "unknown context")));
            };
            let context_json = context.public_json(context_handle);
            let view = scope.snapshot.client(scope.tenant, &context.client);
            let entries = view
                .into_iter()
                .flat_map(|view| view.tools().iter())
                .filter(|tool| is_read_tool(tool))
                .map(|tool| &tool.list_entry[..]);
            let mut out = BytesMut::with_capacity(4096);
            bos::tools::write_list_tools_entries(&mut out, &context_json, entries);
            d.prepared.shapes.close(&mut out, scope.era, Cache::No);
            Ok(Reply::Result(out.freeze()))
        }
        BosCall::Execute {
            context_handle,
            tool_name,
            arguments,
        } => {
            let Ok(context) = bos::resolve(key, contexts, context_handle, caller) else {
                return Ok(Reply::Result(failure(d, scope, "unknown context")));
            };
            let context_json = context.public_json(context_handle);
            let tool = scope
                .snapshot
                .client(scope.tenant, &context.client)
                .and_then(|view| view.tool(tool_name))
                .filter(|tool| is_read_tool(tool));
            let Some(tool) = tool else {
                return Ok(Reply::Result(failure(
                    d,
                    scope,
                    &format!("Unknown read tool in this context: {}", echo(tool_name)),
                )));
            };
            // "This extension grants no additional access": the tool's own scope still applies.
            if let Some(needed) = &tool.def.scope {
                if !scope.caller.scopes.has(needed) {
                    return Ok(Reply::Result(failure(
                        d,
                        scope,
                        &format!("this operation needs scope {needed}"),
                    )));
                }
            }
            let arguments = simd_json::value::lazy::Value::from_tape(arguments).into_value();
            let policy = CorrelationPolicy::of_tool(tool);
            if matches!(tool.def.downstream, Downstream::Federated(_)) {
                let query = match federated::source_query(d, tool, &policy, scope.call, &arguments)
                {
                    Ok(query) => query,
                    Err(message) => return Ok(Reply::Result(failure(d, scope, &message))),
                };
                let call = FederatedCall {
                    tool: std::sync::Arc::clone(tool),
                    query,
                    era: scope.era,
                    audit: None,
                    context: Some(context_json),
                    trace: scope.call.trace.clone(),
                };
                return Ok(federated::stream_or_run(d, scope, raw_params, call).await);
            }
            let result = d
                .invoker
                .call(scope.tenant, &tool.plan, &policy, scope.call, &arguments)
                .await;
            Ok(Reply::Result(match result {
                Ok(output) => envelope(d, scope.era, &context_json, &output.body, false),
                Err(err) => failure(d, scope, &err.safe_message()),
            }))
        }
    }
}

/// Whether `tool` is a read the platform exposes: a federated read, or a REST call with `GET` or
/// `HEAD`; never a SOAP operation (the platform lists and executes read tools only; writes keep their own approval
/// flows on the tenant's endpoints).
fn is_read_tool(tool: &crate::catalog::CatalogTool) -> bool {
    match &tool.def.downstream {
        Downstream::Federated(_) => true,
        Downstream::Rest(rest) => {
            rest.method.eq_ignore_ascii_case("GET") || rest.method.eq_ignore_ascii_case("HEAD")
        }
        // Every SOAP call is a POST: nothing on the wire says it only reads.
        Downstream::Soap(_) => false,
    }
}
