//! The concentrator's traces (telemetry on): a SERVER span `A2A {method}` per proxied call and
//! a CLIENT span `A2A {method}` per upstream request under it, whose context replaces the
//! caller's `traceparent` — in the headers and, for a message send, in the request's
//! `metadata` (`traceparent`, `tracestate`): A2A's counterpart of MCP's `params._meta`, which
//! agents that do not read HTTP headers still see.
//!
//! Owns naming and describing these spans; the span machinery is `crate::telemetry`. Must not
//! change anything else of a call.

use http::HeaderMap;
use serde_json::Value;

use super::proxy::{error_code, ProxyCall, Reply};
use crate::a2a::error::A2aError;
use crate::a2a::methods;
use crate::telemetry::{Attribute, ClientSpan, ServerSpan};

/// Opens the SERVER span of `call` (`None`: telemetry off, or nothing would be recorded).
pub(crate) fn server(call: &ProxyCall<'_>, method: &'static str) -> Option<ServerSpan> {
    let trace = call.trace.as_ref().filter(|trace| trace.records())?;
    let mut attributes = vec![
        Attribute::new("rpc.system", "jsonrpc"),
        Attribute::new("rpc.method", method),
        Attribute::new("sluice.a2a.agent", call.key.agent.to_string()),
        Attribute::new(
            "jsonrpc.request.id",
            String::from_utf8_lossy(&call.id)
                .trim_matches('"')
                .to_owned(),
        ),
        // The call's audit record carries the same ids.
        Attribute::new("sluice.execution_id", call.execution_id.as_str().to_owned()),
    ];
    if let Some(external) = call.external {
        attributes.push(Attribute::new(
            "sluice.external_correlation_id",
            external.as_str().to_owned(),
        ));
    }
    Some(trace.server_span(format!("A2A {method}"), attributes))
}

/// Ends the SERVER span with the call's outcome (`error.type` = the JSON-RPC code of an
/// error answer).
pub(crate) fn close(span: Option<ServerSpan>, outcome: &Result<Reply, A2aError>) {
    let Some(span) = span else {
        return;
    };
    match outcome {
        Ok(Reply::Error(error)) => span.fail(error_code(error).to_string()),
        Err(err) => span.fail(err.code().0.to_string()),
        Ok(_) => {}
    }
}

impl ProxyCall<'_> {
    /// The headers of one upstream request of `method` (`wire_method` as the upstream's
    /// interface names it) and, with telemetry on, its CLIENT span, whose context is written
    /// into the headers and into a message send's `wire_params.metadata`.
    pub(crate) fn upstream_headers(
        &self,
        method: &'static str,
        wire_method: &'static str,
        wire_params: &mut Value,
    ) -> (HeaderMap, Option<ClientSpan>) {
        let mut headers = self.headers();
        let Some(trace) = self.trace.as_ref().filter(|trace| trace.records()) else {
            return (headers, None);
        };
        let mut attributes = vec![
            Attribute::new("rpc.system", "jsonrpc"),
            Attribute::new("rpc.method", wire_method),
            Attribute::new("sluice.a2a.agent", self.key.agent.to_string()),
        ];
        crate::telemetry::push_target(&mut attributes, &self.fetched.card.interface.url);
        let span = trace.client_span(format!("A2A {wire_method}"), attributes, &mut headers);
        if method == methods::SEND_MESSAGE || method == methods::SEND_STREAMING_MESSAGE {
            write_metadata(&headers, wire_params);
        }
        (headers, Some(span))
    }
}

/// Copies the injected `traceparent` and `tracestate` into `params.metadata` (made when
/// absent; a `metadata` that is not an object is left alone).
fn write_metadata(headers: &HeaderMap, params: &mut Value) {
    let Some(params) = params.as_object_mut() else {
        return;
    };
    let metadata = params
        .entry("metadata")
        .or_insert_with(|| Value::Object(serde_json::Map::new()));
    let Some(metadata) = metadata.as_object_mut() else {
        return;
    };
    for key in ["traceparent", "tracestate"] {
        if let Some(value) = headers.get(key).and_then(|v| v.to_str().ok()) {
            metadata.insert(key.to_owned(), Value::from(value));
        }
    }
}
