//! OpenTelemetry traces: the OTLP exporter (`[telemetry]`), the W3C trace context read from a
//! request (HTTP `traceparent`/`tracestate`/`baggage` and the same keys in an MCP request's
//! `params._meta`) and written into every downstream request, and the spans themselves.
//!
//! Off by default, and then free: nothing here runs — [`crate::access::Access::trace`] hands out
//! no [`RequestTrace`], so every `if let Some(trace)` on the request path is one branch. At
//! `sampling_ratio = 0.0` a request without a sampled parent (in its headers or its `_meta`)
//! gets none either. Otherwise each request gets a [`RequestTrace`] (its HTTP and `_meta`
//! parent contexts, its JSON-RPC id); the surface that knows what
//! the request is opens a [`ServerSpan`] (MCP in `mcp.rs`, REST in `rest.rs`, A2A in
//! `a2a/rpc.rs`), which becomes the parent of the CLIENT span of each downstream call
//! (`invoke/client.rs`). A `_meta` context is the server span's parent and the HTTP one a link
//! (the MCP semantic conventions: the message's context is the caller's intent, the HTTP one
//! the transport's). Spans are batched and exported off the request path; a full queue drops
//! spans, never blocks.
//!
//! Must not know MCP methods or HTTP routes: the surfaces name spans and set attributes.

use std::sync::Arc;
use std::time::Duration;

use http::HeaderMap;
use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::{
    Link, SpanKind, Status, TraceContextExt, Tracer as _, TracerProvider as _,
};
use opentelemetry::{Context, KeyValue};
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::propagation::{BaggagePropagator, TraceContextPropagator};
use opentelemetry_sdk::trace::{
    span_processor_with_async_runtime::BatchSpanProcessor, BatchConfigBuilder, Sampler, SdkTracer,
    SdkTracerProvider,
};
use parking_lot::Mutex;

use crate::config::{OtlpProtocol, TelemetrySettings};

pub use opentelemetry::KeyValue as Attribute;

/// Why telemetry could not start.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TelemetryError {
    /// The OTLP exporter could not be built (a bad endpoint).
    #[error("OTLP exporter: {0}")]
    Exporter(String),
}

/// The process's tracer and propagators. One per server.
pub(crate) struct Telemetry {
    provider: SdkTracerProvider,
    tracer: SdkTracer,
    trace_context: TraceContextPropagator,
    baggage: BaggagePropagator,
    /// `sampling_ratio = 0.0`: only a sampled parent records anything, so a request without
    /// one builds no span at all (not even an unsampled one).
    never_roots: bool,
}

impl std::fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Telemetry").finish_non_exhaustive()
    }
}

impl Telemetry {
    /// Starts the exporter `settings` describe, or nothing when they are off. Needs a tokio
    /// runtime (the batch exporter runs on it).
    pub(crate) fn start(
        settings: &TelemetrySettings,
    ) -> Result<Option<Arc<Telemetry>>, TelemetryError> {
        if !settings.enabled {
            return Ok(None);
        }
        let timeout = Duration::from_millis(settings.export_timeout_ms.max(1));
        let exporter = match settings.protocol {
            OtlpProtocol::HttpProtobuf => opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .with_protocol(Protocol::HttpBinary)
                .with_endpoint(settings.endpoint.clone())
                .with_timeout(timeout)
                .build(),
            OtlpProtocol::Grpc => opentelemetry_otlp::SpanExporter::builder()
                .with_tonic()
                .with_endpoint(settings.endpoint.clone())
                .with_timeout(timeout)
                .build(),
        }
        .map_err(|err| TelemetryError::Exporter(err.to_string()))?;
        let batch = BatchConfigBuilder::default()
            .with_max_queue_size(settings.max_queue_spans.max(1))
            .with_scheduled_delay(Duration::from_millis(500))
            .build();
        let processor = BatchSpanProcessor::builder(exporter, opentelemetry_sdk::runtime::Tokio)
            .with_batch_config(batch)
            .build();
        let ratio = settings.sampling_ratio.clamp(0.0, 1.0);
        let resource = opentelemetry_sdk::Resource::builder()
            .with_service_name(settings.service_name.clone())
            .build();
        let provider = SdkTracerProvider::builder()
            .with_span_processor(processor)
            .with_sampler(Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(
                ratio,
            ))))
            .with_resource(resource)
            .build();
        let tracer = provider.tracer("sluice");
        Ok(Some(Arc::new(Telemetry {
            provider,
            tracer,
            trace_context: TraceContextPropagator::new(),
            baggage: BaggagePropagator::new(),
            never_roots: ratio <= 0.0,
        })))
    }

    /// Exports what is queued and stops the exporter (at the end of the drain).
    pub(crate) fn shutdown(&self) {
        if let Err(err) = self.provider.shutdown() {
            tracing::warn!(%err, "telemetry shutdown");
        }
    }

    /// The trace state of one request: the context its HTTP headers carry. `None` when
    /// nothing it does could be recorded (`sampling_ratio = 0.0` and no sampled parent), so the
    /// request then costs what it costs with telemetry off.
    pub(crate) fn request(self: &Arc<Self>, headers: &HeaderMap) -> Option<Arc<RequestTrace>> {
        self.message(headers, None, None)
    }

    /// The trace state of one MCP message: the HTTP context, the `_meta` context (`meta`;
    /// when valid it is the server span's parent) and the JSON-RPC id (`jsonrpc.request.id`).
    /// `None` as for [`Telemetry::request`].
    pub(crate) fn message(
        self: &Arc<Self>,
        headers: &HeaderMap,
        meta: Option<MetaContext<'_>>,
        id: Option<&dyn std::fmt::Display>,
    ) -> Option<Arc<RequestTrace>> {
        // Most requests carry no context: then the propagators are not run. At 0.0 HTTP baggage
        // alone changes nothing (no span could be recorded under it).
        let carried = headers.contains_key(&TRACEPARENT)
            || (!self.never_roots && headers.contains_key(&BAGGAGE));
        let http = if carried {
            self.extract(&HeaderSource(headers))
        } else {
            Context::new()
        };
        let meta = meta
            .filter(|m| m.traceparent.is_some())
            .map(|m| self.extract(&MetaSource(m)))
            .filter(|cx| cx.span().span_context().is_valid());
        if self.never_roots && !sampled(&http) && !meta.as_ref().is_some_and(sampled) {
            return None;
        }
        let request_id = id.map(|id| {
            let text = id.to_string();
            match text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
                Some(inner) => inner.to_owned(),
                None => text,
            }
        });
        Some(Arc::new(RequestTrace {
            telemetry: Arc::clone(self),
            current: Mutex::new(http.clone()),
            http,
            meta,
            request_id,
        }))
    }

    fn extract(&self, source: &dyn Extractor) -> Context {
        let cx = self.trace_context.extract(source);
        self.baggage.extract_with_context(&cx, source)
    }
}

// === RequestTrace ===

/// One request's trace state, carried in its `CallContext`: the HTTP parent, the `_meta`
/// parent, and the context downstream calls hang under (the server span once one is open).
pub struct RequestTrace {
    telemetry: Arc<Telemetry>,
    http: Context,
    /// The valid `params._meta` context of an MCP message: the server span's parent.
    meta: Option<Context>,
    current: Mutex<Context>,
    /// The JSON-RPC id of the request, as its JSON text (a string id without its quotes).
    request_id: Option<String>,
}

impl std::fmt::Debug for RequestTrace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestTrace").finish_non_exhaustive()
    }
}

fn sampled(cx: &Context) -> bool {
    cx.span().span_context().is_sampled()
}

/// The W3C trace context members of an MCP request's `params._meta`.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct MetaContext<'a> {
    pub traceparent: Option<&'a str>,
    pub tracestate: Option<&'a str>,
    pub baggage: Option<&'a str>,
}

impl RequestTrace {
    /// Whether a span opened now could be recorded: false only at `sampling_ratio = 0.0`
    /// without a sampled parent, so the surfaces skip naming and describing a span that would
    /// be dropped.
    pub(crate) fn records(&self) -> bool {
        !self.telemetry.never_roots
            || sampled(&self.current.lock())
            || self.meta.as_ref().is_some_and(sampled)
    }

    /// The request's JSON-RPC id, when it is an MCP request.
    pub(crate) fn request_id(&self) -> Option<&str> {
        self.request_id.as_deref()
    }

    /// Opens the SERVER span `name` with `attributes`. Its parent is the `_meta` context when
    /// the message carried a valid one (the HTTP context then joins as a link), else the
    /// current context (the HTTP one, or an enclosing span). Downstream calls hang under it.
    pub(crate) fn server_span(
        self: &Arc<Self>,
        name: String,
        attributes: Vec<KeyValue>,
    ) -> ServerSpan {
        let http_span = self.http.span().span_context().clone();
        let (parent, links) = match &self.meta {
            Some(cx) => {
                let links = if http_span.is_valid() {
                    vec![Link::with_context(http_span)]
                } else {
                    Vec::new()
                };
                (cx.clone(), links)
            }
            // The current context: the HTTP one, or the span of an enclosing surface (an A2A
            // message's span over the tool call it runs).
            None => (self.current.lock().clone(), Vec::new()),
        };
        let cx = self.start(name, SpanKind::Server, attributes, links, parent);
        *self.current.lock() = cx.clone();
        ServerSpan { cx }
    }

    /// Opens the INTERNAL span `name` of a piece of work inside the request (a federated read
    /// over its sources) under the current context; downstream calls made meanwhile hang under
    /// it.
    pub(crate) fn internal_span(&self, name: String, attributes: Vec<KeyValue>) -> ServerSpan {
        let parent = self.current.lock().clone();
        let cx = self.start(name, SpanKind::Internal, attributes, Vec::new(), parent);
        *self.current.lock() = cx.clone();
        ServerSpan { cx }
    }

    /// Opens the CLIENT span `name` of a downstream call under the current context and writes
    /// its context into `headers` (`traceparent`, `tracestate`, `baggage`).
    pub(crate) fn client_span(
        &self,
        name: impl Into<std::borrow::Cow<'static, str>>,
        attributes: Vec<KeyValue>,
        headers: &mut HeaderMap,
    ) -> ClientSpan {
        let parent = self.current.lock().clone();
        let cx = self.start(name, SpanKind::Client, attributes, Vec::new(), parent);
        self.inject(&cx, headers);
        ClientSpan { cx }
    }

    /// Starts span `name` under `parent` and returns the context that holds it.
    fn start(
        &self,
        name: impl Into<std::borrow::Cow<'static, str>>,
        kind: SpanKind,
        attributes: Vec<KeyValue>,
        links: Vec<Link>,
        parent: Context,
    ) -> Context {
        let tracer = &self.telemetry.tracer;
        let span = tracer
            .span_builder(name)
            .with_kind(kind)
            .with_attributes(attributes)
            .with_links(links)
            .start_with_context(tracer, &parent);
        parent.with_span(span)
    }

    /// The CLIENT span of one downstream HTTP request (`{METHOD}`, `http.request.method`,
    /// `url.full` without its query, `server.address`, then `extra`), its context written into
    /// the request's headers.
    pub(crate) fn http_client_span<B>(
        &self,
        request: &mut http::Request<B>,
        extra: Vec<KeyValue>,
    ) -> ClientSpan {
        let method = static_method(request.method());
        let mut attributes = Vec::with_capacity(3 + extra.len());
        attributes.push(KeyValue::new("http.request.method", method.clone()));
        push_target(&mut attributes, request.uri());
        attributes.extend(extra);
        self.client_span(method, attributes, request.headers_mut())
    }

    /// Writes `cx`'s W3C trace context into `headers`: `traceparent` (written here, into a
    /// stack buffer: it is on every traced downstream request), `tracestate` when it has
    /// members, `baggage` (the SDK's propagator) when there is any.
    fn inject(&self, cx: &Context, headers: &mut HeaderMap) {
        let span = cx.span();
        let context = span.span_context();
        if context.is_valid() {
            let traceparent = traceparent(
                &context.trace_id().to_bytes(),
                &context.span_id().to_bytes(),
                context.trace_flags().is_sampled(),
            );
            if let Ok(value) = http::HeaderValue::from_bytes(&traceparent) {
                headers.insert(TRACEPARENT, value);
            }
            if *context.trace_state() != opentelemetry::trace::TraceState::NONE {
                if let Ok(value) = http::HeaderValue::from_str(&context.trace_state().header()) {
                    headers.insert(TRACESTATE, value);
                }
            }
        }
        use opentelemetry::baggage::BaggageExt as _;
        if !cx.baggage().is_empty() {
            self.telemetry
                .baggage
                .inject_context(cx, &mut HeaderSink(headers));
        }
    }
}

/// Pushes a downstream's `url.full` (without its query: it may carry arguments) and
/// `server.address`.
pub(crate) fn push_target(attributes: &mut Vec<KeyValue>, uri: &http::Uri) {
    let (scheme, authority, path) = (
        uri.scheme_str().unwrap_or("http"),
        uri.authority().map_or("", |a| a.as_str()),
        uri.path(),
    );
    let mut url = String::with_capacity(scheme.len() + 3 + authority.len() + path.len());
    for part in [scheme, "://", authority, path] {
        url.push_str(part);
    }
    attributes.push(KeyValue::new("url.full", url));
    if let Some(host) = uri.host() {
        attributes.push(KeyValue::new("server.address", host.to_owned()));
    }
}

/// `00-{trace id}-{span id}-{flags}`, lower-case hex (W3C Trace Context, version 00).
fn traceparent(trace_id: &[u8; 16], span_id: &[u8; 8], sampled: bool) -> [u8; 55] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = *b"00-00000000000000000000000000000000-0000000000000000-00";
    for (i, byte) in trace_id.iter().chain(span_id).enumerate() {
        // The span id starts after the trace id's 32 digits and one more dash.
        let at = 3 + 2 * i + usize::from(i >= 16);
        out[at] = HEX[usize::from(byte >> 4)];
        out[at + 1] = HEX[usize::from(byte & 0x0f)];
    }
    if sampled {
        out[54] = b'1';
    }
    out
}

/// The method's name, static for the standard methods (no allocation per span).
fn static_method(method: &http::Method) -> std::borrow::Cow<'static, str> {
    use http::Method;
    let name = match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::PATCH => "PATCH",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        _ => return std::borrow::Cow::Owned(method.as_str().to_owned()),
    };
    std::borrow::Cow::Borrowed(name)
}

/// An open SERVER (or INTERNAL) span; ends when dropped.
#[derive(Debug)]
pub(crate) struct ServerSpan {
    cx: Context,
}

impl ServerSpan {
    /// Adds an attribute.
    pub(crate) fn set(&self, attribute: KeyValue) {
        self.cx.span().set_attribute(attribute);
    }

    /// Marks the span failed with `error.type = kind`.
    pub(crate) fn fail(&self, kind: String) {
        let span = self.cx.span();
        span.set_status(Status::error(kind.clone()));
        span.set_attribute(KeyValue::new("error.type", kind));
    }
}

impl Drop for ServerSpan {
    fn drop(&mut self) {
        self.cx.span().end();
    }
}

/// An open CLIENT span; ends when dropped.
#[derive(Debug)]
pub(crate) struct ClientSpan {
    cx: Context,
}

impl ClientSpan {
    /// Records the downstream's status (`http.response.status_code`; 5xx marks the span
    /// failed).
    pub(crate) fn status(&self, status: u16) {
        let span = self.cx.span();
        span.set_attribute(KeyValue::new(
            "http.response.status_code",
            i64::from(status),
        ));
        if status >= 500 {
            span.set_status(Status::error(status.to_string()));
            span.set_attribute(KeyValue::new("error.type", status.to_string()));
        }
    }

    /// Marks the call failed before any status (`error.type = kind`).
    pub(crate) fn fail(&self, kind: &str) {
        let span = self.cx.span();
        span.set_status(Status::error(kind.to_owned()));
        span.set_attribute(KeyValue::new("error.type", kind.to_owned()));
    }
}

impl Drop for ClientSpan {
    fn drop(&mut self) {
        self.cx.span().end();
    }
}

// === carriers ===

const TRACEPARENT: http::HeaderName = http::HeaderName::from_static("traceparent");
const TRACESTATE: http::HeaderName = http::HeaderName::from_static("tracestate");
const BAGGAGE: http::HeaderName = http::HeaderName::from_static("baggage");

struct HeaderSource<'a>(&'a HeaderMap);

impl Extractor for HeaderSource<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        // The propagators ask for these three: looked up by their static names, not parsed.
        let value = match key {
            "traceparent" => self.0.get(&TRACEPARENT),
            "tracestate" => self.0.get(&TRACESTATE),
            "baggage" => self.0.get(&BAGGAGE),
            _ => self.0.get(key),
        };
        value.and_then(|value| value.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(http::HeaderName::as_str).collect()
    }
}

struct HeaderSink<'a>(&'a mut HeaderMap);

impl Injector for HeaderSink<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let (Ok(name), Ok(value)) = (
            http::HeaderName::from_bytes(key.as_bytes()),
            http::HeaderValue::from_str(&value),
        ) {
            self.0.insert(name, value);
        }
    }
}

struct MetaSource<'a>(MetaContext<'a>);

impl Extractor for MetaSource<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        match key {
            "traceparent" => self.0.traceparent,
            "tracestate" => self.0.tracestate,
            "baggage" => self.0.baggage,
            _ => None,
        }
    }

    fn keys(&self) -> Vec<&str> {
        vec!["traceparent", "tracestate", "baggage"]
    }
}

#[cfg(test)]
mod tests {
    use opentelemetry::propagation::TextMapPropagator as _;
    use opentelemetry::trace::{
        SpanContext, SpanId, TraceContextExt as _, TraceFlags, TraceId, TraceState,
    };

    /// Ours writes what the SDK's propagator writes.
    #[test]
    fn traceparent_matches_the_sdk_propagator() {
        let trace = TraceId::from_bytes(
            *b"\x4b\xf9\x2f\x35\x77\xb3\x4d\xa6\xa3\xce\x92\x9d\x0e\x0e\x47\x36",
        );
        let span = SpanId::from_bytes(*b"\x00\xf0\x67\xaa\x0b\xa9\x02\xb7");
        for flags in [TraceFlags::SAMPLED, TraceFlags::NOT_SAMPLED] {
            let cx = opentelemetry::Context::new().with_remote_span_context(SpanContext::new(
                trace,
                span,
                flags,
                true,
                TraceState::NONE,
            ));
            let mut sdk = std::collections::HashMap::new();
            opentelemetry_sdk::propagation::TraceContextPropagator::new()
                .inject_context(&cx, &mut sdk);
            let ours = super::traceparent(&trace.to_bytes(), &span.to_bytes(), flags.is_sampled());
            assert_eq!(
                std::str::from_utf8(&ours).ok(),
                sdk.get("traceparent").map(String::as_str)
            );
        }
    }
}
