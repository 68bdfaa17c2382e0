//! What a proxied call sends upstream besides its body and the runtime's credential: the
//! caller's well-formed `traceparent`, the `A2A-Extensions` the agent's configuration allows,
//! and the correlation id the agent's `correlation` strategy names (in its
//! `correlation_header`). The same headers for unary calls and streams.
//!
//! With telemetry on, each upstream request is a CLIENT span `A2A {method}` under the
//! request's span, and its context replaces the caller's `traceparent`: in the headers and,
//! for a message send, in the request's `metadata` (`traceparent`, `tracestate`) — A2A's
//! equivalent of MCP's `params._meta`, which agents that do not read HTTP headers see.
//!
//! Must not forward anything else of the caller's request (its credential above all).

use http::request::Parts;
use http::{HeaderMap, HeaderName, HeaderValue};

use serde_json::Value;

use super::proxy::ProxyCall;
use crate::a2a::methods;
use crate::config::CorrelationStrategy;
use crate::invoke::correlation::CORRELATION_ID_HEADER;
use crate::telemetry::{Attribute, ClientSpan};

/// The request header naming the A2A extensions a client asks for.
const EXTENSIONS: HeaderName = HeaderName::from_static("a2a-extensions");
const TRACEPARENT: HeaderName = HeaderName::from_static("traceparent");

/// What the upstream receives besides the body and the credential: `traceparent` when the
/// caller sent a well-formed one, and the `A2A-Extensions` the agent's configuration allows.
/// Correlation (`X-Correlation-Id`) is added per call.
pub(crate) fn forwarded_headers(parts: &Parts, allowed_extensions: &[String]) -> HeaderMap {
    let mut headers = HeaderMap::new();
    if let Some(value) = parts.headers.get(&TRACEPARENT) {
        if is_traceparent(value.as_bytes()) {
            headers.insert(TRACEPARENT, value.clone());
        }
    }
    if !allowed_extensions.is_empty() {
        let wanted: Vec<&str> = parts
            .headers
            .get_all(&EXTENSIONS)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .filter(|uri| allowed_extensions.iter().any(|a| a == uri))
            .collect();
        if !wanted.is_empty() {
            if let Ok(value) = HeaderValue::from_str(&wanted.join(", ")) {
                headers.insert(EXTENSIONS, value);
            }
        }
    }
    headers
}

/// Copies the injected `traceparent` and `tracestate` into `params.metadata` (made when
/// absent; a `metadata` that is not an object is left alone).
fn meta_context(headers: &HeaderMap, params: &mut Value) {
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

/// W3C Trace Context `traceparent`: `vv-{32 hex}-{16 hex}-ff`, lower-case hex.
fn is_traceparent(value: &[u8]) -> bool {
    let hex = |b: &u8| b.is_ascii_digit() || (b'a'..=b'f').contains(b);
    value.len() == 55
        && value[2] == b'-'
        && value[35] == b'-'
        && value[52] == b'-'
        && value[..2].iter().all(hex)
        && value[3..35].iter().all(hex)
        && value[36..52].iter().all(hex)
        && value[53..].iter().all(hex)
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
        let Some(trace) = self.trace.as_ref().filter(|trace| trace.records(None)) else {
            return (headers, None);
        };
        let url = &self.fetched.card.interface.url;
        let mut attributes = vec![
            Attribute::new("rpc.system", "jsonrpc"),
            Attribute::new("rpc.method", wire_method),
            Attribute::new("sluice.a2a.agent", self.key.agent.to_string()),
            Attribute::new(
                "url.full",
                format!(
                    "{}://{}{}",
                    url.scheme_str().unwrap_or("http"),
                    url.authority().map_or("", |a| a.as_str()),
                    url.path()
                ),
            ),
        ];
        if let Some(host) = url.host() {
            attributes.push(Attribute::new("server.address", host.to_owned()));
        }
        let span = trace.client_span(format!("A2A {wire_method}"), attributes, &mut headers);
        if method == methods::SEND_MESSAGE || method == methods::SEND_STREAMING_MESSAGE {
            meta_context(&headers, wire_params);
        }
        (headers, Some(span))
    }

    /// The forwarded headers with this call's correlation id, as the agent's `correlation`
    /// strategy says, in its `correlation_header` (a name `sluice check` validated; an
    /// unusable one falls back to `X-Correlation-Id`).
    pub(crate) fn headers(&self) -> HeaderMap {
        let mut headers = self.forward.clone();
        let config = &self.remote.config;
        let value = match config.correlation {
            CorrelationStrategy::None => return headers,
            CorrelationStrategy::ExecutionId => self.execution_id.header_value(),
            CorrelationStrategy::ExternalOrExecutionId => match self.external {
                Some(external) => external.header_value().clone(),
                None => self.execution_id.header_value(),
            },
        };
        let name = HeaderName::from_bytes(config.correlation_header.as_bytes())
            .unwrap_or(CORRELATION_ID_HEADER);
        headers.insert(name, value);
        headers
    }
}
