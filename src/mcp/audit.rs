//! The audit record of one MCP call: which calls are audited, with which type, outcome and
//! payload dimensions.
//!
//! Audited calls: `tools/call` (`tool_call`, or `schema_discovery` for `discover_tool_schema`),
//! `tools/list` (`tools_list`, with the listing captured as the `tools_list` dimension when a
//! tool of the tenant logs payloads — "tools/list Response Logging"), `resources/read`
//! (`resource_read`) and `prompts/get` (`prompt_get`). A tool with `log_payloads` also gets its
//! arguments (`request`) and result (`response`) recorded. Lifecycle traffic (`initialize`,
//! `ping`, other listings) is not audited. A call whose client goes away before it finishes is
//! recorded once, `cancelled` ([`cancelled_record`], written by the dispatcher's drop guard); a
//! streamed federated read is recorded once, as `source_result_stream`, when its stream ends. Must not write anything itself: records go to the
//! [`Audit`] sink.

use std::time::Instant;

use bytes::{Bytes, BytesMut};

use super::{json, names, McpError, Reply, Scope};
use crate::audit::{Audit, CallType, Outcome, Record};
use crate::catalog::schema::DISCOVER_TOOL_NAME;
use crate::jsonrpc::Payload;

/// The audit call type of `method` (and tool `name`), or `None` when the method is not audited.
pub(super) fn call_type(method: &str, tool: Option<&str>) -> Option<CallType> {
    match method {
        names::TOOLS_CALL if tool == Some(DISCOVER_TOOL_NAME) => Some(CallType::SchemaDiscovery),
        names::TOOLS_CALL => Some(CallType::ToolCall),
        names::TOOLS_LIST => Some(CallType::ToolsList),
        names::RESOURCES_READ => Some(CallType::ResourceRead),
        names::PROMPTS_GET => Some(CallType::PromptGet),
        _ => None,
    }
}

/// Records one finished call, when the method is audited.
pub(super) async fn record(
    audit: &Audit,
    scope: &Scope<'_>,
    method: &str,
    params: Option<&Payload<'_>>,
    outcome: &Result<Reply, McpError>,
    started: Instant,
) {
    let name = super::meta::routing_name(method, params);
    let Some(call_type) = call_type(method, name) else {
        return;
    };
    let view = scope.view;
    let result = match outcome {
        Ok(Reply::Result(bytes)) | Ok(Reply::Initialized { result: bytes, .. }) => Some(bytes),
        _ => None,
    };
    let (outcome_label, error_code) = match outcome {
        Err(err) => (Outcome::Error, Some(err.code().0.to_string())),
        // A tool result with `isError: true` is a failed call answered in band.
        Ok(_) if result.is_some_and(|r| is_error_result(r)) => (Outcome::Error, None),
        Ok(_) => (Outcome::Ok, None),
    };
    let logs_payloads = call_type == CallType::ToolCall
        && name
            .and_then(|name| view.and_then(|v| v.tool(name)))
            .is_some_and(|tool| tool.def.log_payloads);
    let tools_list = (call_type == CallType::ToolsList
        && view.is_some_and(|v| v.log_list_payloads()))
    .then(|| result.cloned())
    .flatten();
    let request = logs_payloads.then(|| arguments(params)).flatten();
    let response = logs_payloads.then(|| result.cloned()).flatten();
    let mut record = scope_record(scope, call_type, name)
        .with_outcome(outcome_label, error_code)
        .with_duration(started.elapsed());
    record.request = request;
    record.response = response;
    record.tools_list = tools_list;
    audit.record(record).await;
}

/// The record of an audited call whose client went away before it finished: outcome
/// `cancelled`, its duration so far, and the downstream's status when it had answered.
pub(super) fn cancelled_record(
    scope: &Scope<'_>,
    method: &str,
    params: Option<&Payload<'_>>,
    started: Instant,
) -> Option<Record> {
    let name = super::meta::routing_name(method, params);
    let call_type = call_type(method, name)?;
    let record = scope_record(scope, call_type, name)
        .with_outcome(Outcome::Cancelled, None)
        .with_duration(started.elapsed())
        .with_detail(crate::audit::cancelled_detail(
            scope.call.downstream_status.get(),
        ));
    Some(record)
}

/// A record of `call_type` with the request's identity: tenant, client, caller, session, surface,
/// execution and external correlation ids, and the tool (or resource URI, prompt name) it named.
pub(crate) fn scope_record(scope: &Scope<'_>, call_type: CallType, tool: Option<&str>) -> Record {
    let mut record = Record::new(
        scope.surface,
        call_type,
        scope.tenant.into(),
        scope.client.into(),
        scope.caller.caller_id.clone(),
    )
    .with_execution_id(scope.call.execution_id.as_str());
    record.external_correlation_id = scope
        .call
        .external_correlation_id
        .as_ref()
        .map(|id| id.as_str().to_owned());
    record.session = scope.session.map(|id| id.encode().as_str().to_owned());
    record.tool = tool.map(str::to_owned);
    record
}

/// The call's `arguments` as JSON bytes.
fn arguments(params: Option<&Payload<'_>>) -> Option<Bytes> {
    let value = params?.value().get("arguments")?;
    let mut out = BytesMut::new();
    json::put_value(&mut out, value);
    Some(out.freeze())
}

/// Whether a `CallToolResult` says `"isError":true` (our own writer's spelling, no spaces).
fn is_error_result(result: &[u8]) -> bool {
    memchr::memmem::find(result, b"\"isError\":true").is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn audited_methods() {
        assert_eq!(
            call_type("tools/call", Some("get_customer")),
            Some(CallType::ToolCall)
        );
        assert_eq!(
            call_type("tools/call", Some(DISCOVER_TOOL_NAME)),
            Some(CallType::SchemaDiscovery)
        );
        assert_eq!(call_type("tools/list", None), Some(CallType::ToolsList));
        assert_eq!(
            call_type("resources/read", Some("x")),
            Some(CallType::ResourceRead)
        );
        assert_eq!(
            call_type("prompts/get", Some("p")),
            Some(CallType::PromptGet)
        );
        assert_eq!(call_type("ping", None), None);
        assert_eq!(call_type("initialize", None), None);
        assert!(is_error_result(br#"{"content":[],"isError":true}"#));
        assert!(!is_error_result(br#"{"content":[],"isError":false}"#));
    }
}
