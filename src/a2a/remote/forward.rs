//! What a proxied call sends upstream besides its body and the runtime's credential: the
//! caller's well-formed `traceparent`, the `A2A-Extensions` the agent's configuration allows,
//! and the correlation id the agent's `correlation` strategy names (in its
//! `correlation_header`). The same headers for unary calls and streams.
//! With telemetry on, the trace context of the upstream request's span replaces the caller's
//! `traceparent` (`span.rs`).
//!
//! Must not forward anything else of the caller's request (its credential above all).

use http::request::Parts;
use http::{HeaderMap, HeaderName, HeaderValue};

use super::proxy::ProxyCall;
use crate::config::CorrelationStrategy;
use crate::invoke::correlation::CORRELATION_ID_HEADER;

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
