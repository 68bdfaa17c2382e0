//! The SERVER span of one MCP request, named and described by the MCP semantic conventions:
//! `{mcp.method.name} {target}`, with `mcp.method.name`, `mcp.protocol.version`,
//! `mcp.session.id` (handshake era only: the stateless era has no session), `jsonrpc.request.id`,
//! `gen_ai.tool.name` and `gen_ai.operation.name = execute_tool` for `tools/call`,
//! `gen_ai.prompt.name` for `prompts/get`, `mcp.resource.uri` for `resources/read`, and, once
//! answered, `rpc.response.status_code` and `error.type` (the JSON-RPC code, or `tool_error`
//! when a tool result has `isError`). The execution id and the external correlation id ride
//! along (`sluice.execution_id`, `sluice.external_correlation_id`), so an audit record and its
//! trace find each other.
//!
//! Owns the naming only; the span machinery is `crate::telemetry`. Must not know HTTP.

use std::sync::Arc;

use bytes::Bytes;
use simd_json::prelude::*;

use super::names::{PROMPTS_GET, RESOURCES_READ, TOOLS_CALL};
use super::{meta, Era, McpError, Reply, Scope};
use crate::jsonrpc::Payload;
use crate::telemetry::{Attribute, MetaContext, RequestTrace, ServerSpan};

/// Opens the request's span (`None`: it would not be recorded).
pub(super) fn open(
    trace: &Arc<RequestTrace>,
    scope: &Scope<'_>,
    method: &str,
    params: Option<&Payload<'_>>,
) -> Option<ServerSpan> {
    if !trace.records() {
        return None;
    }
    let target = meta::routing_name(method, params);
    let name = match target {
        Some(target) => format!("{method} {target}"),
        None => method.to_owned(),
    };
    let mut attributes = vec![
        Attribute::new("mcp.method.name", method.to_owned()),
        Attribute::new("mcp.protocol.version", scope.version.as_str()),
    ];
    if scope.era == Era::Handshake {
        if let Some(session) = &scope.session {
            attributes.push(Attribute::new(
                "mcp.session.id",
                session.encode().as_str().to_owned(),
            ));
        }
    }
    if let Some(id) = trace.request_id() {
        attributes.push(Attribute::new("jsonrpc.request.id", id.to_owned()));
    }
    match (method, target) {
        (TOOLS_CALL, Some(tool)) => {
            attributes.push(Attribute::new("gen_ai.tool.name", tool.to_owned()));
            attributes.push(Attribute::new("gen_ai.operation.name", "execute_tool"));
        }
        (PROMPTS_GET, Some(prompt)) => {
            attributes.push(Attribute::new("gen_ai.prompt.name", prompt.to_owned()));
        }
        (RESOURCES_READ, Some(uri)) => {
            attributes.push(Attribute::new("mcp.resource.uri", uri.to_owned()));
        }
        _ => {}
    }
    if let Some(external) = &scope.call.external_correlation_id {
        attributes.push(Attribute::new(
            "sluice.external_correlation_id",
            external.as_str().to_owned(),
        ));
    }
    Some(trace.server_span(name, attributes))
}

/// Records the answer on the span and ends it.
pub(super) fn close(span: ServerSpan, scope: &Scope<'_>, outcome: &Result<Reply, McpError>) {
    if scope.call.execution_id.is_minted() {
        span.set(Attribute::new(
            "sluice.execution_id",
            scope.call.execution_id.as_str().to_owned(),
        ));
    }
    match outcome {
        Ok(Reply::Result(result)) if is_tool_error(result) => span.fail("tool_error".to_owned()),
        Ok(_) => {}
        Err(err) => {
            let code = err.code().0.to_string();
            span.set(Attribute::new("rpc.response.status_code", code.clone()));
            span.fail(code);
        }
    }
}

/// Whether a `tools/call` result is a tool execution error (every writer puts the flag as
/// `"isError":true`, `mcp/result.rs`).
fn is_tool_error(result: &Bytes) -> bool {
    memchr::memmem::find(result, br#""isError":true"#).is_some()
}

/// The W3C trace context members of `params._meta`, read in one pass over its members (by
/// the transport, when it makes the message's trace).
pub(crate) fn meta_context<'a>(params: Option<&Payload<'a>>) -> Option<MetaContext<'a>> {
    let meta = params?.value().get("_meta")?.as_object()?;
    let mut context = MetaContext::default();
    for (key, value) in &meta {
        let slot = match key {
            "traceparent" => &mut context.traceparent,
            "tracestate" => &mut context.tracestate,
            "baggage" => &mut context.baggage,
            _ => continue,
        };
        *slot = value.into_string();
    }
    context.traceparent.is_some().then_some(context)
}
