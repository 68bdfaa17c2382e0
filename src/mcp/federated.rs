//! `tools/call` of a federated read tool: the query it fans out, the decision to stream its
//! source events (`bos/source-results/v1`), and the run that ends in the final
//! `CallToolResult` (written by `result.rs`).
//!
//! The extension is negotiated per request: the request-local opt-in *object* at
//! `params._meta["io.modelcontextprotocol/clientCapabilities"].experimental["bos/source-results/v1"]`
//! and a transport that can answer with an event stream (`Scope::stream_sources`: Accept allows
//! `text/event-stream`, the id is not null, the reply goes on this response). Negotiated → the
//! dispatcher returns [`Reply::Federated`] at once and the transport runs
//! [`Dispatcher::run_federated`] while streaming; otherwise the read runs here and the same
//! final result is answered as usual.
//!
//! Must not touch HTTP or SSE framing: events reach the transport through an
//! [`EventSink`].

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;

use super::{result, Dispatcher, Era, Reply, Scope, SOURCE_RESULTS_EXTENSION};
use crate::audit::{CallType, Outcome, Record};
use crate::catalog::CatalogTool;
use crate::config::Downstream;
use crate::federation::{EventSink, NullSink};
use crate::jsonrpc::Payload;
use crate::telemetry::Attribute;

/// A federated read the transport streams: everything [`Dispatcher::run_federated`] needs after
/// the request body is gone.
#[derive(Debug)]
pub struct FederatedCall {
    /// The tool (its downstream is `Federated`).
    pub tool: Arc<CatalogTool>,
    /// The validated, percent-encoded argument query every source receives.
    pub query: String,
    /// The request's era (the final result's shape).
    pub era: Era,
    /// The audit record to finish when the stream ends (`source_result_stream`), when auditing.
    pub audit: Option<Record>,
    /// The public BOS context (`bos_execute`): added to every notification, and the final
    /// result is the identity envelope around the operation result.
    pub context: Option<Bytes>,
    /// The request's trace (telemetry on): the read is an INTERNAL span `federated {tool}`, each
    /// provider request a CLIENT span under it.
    pub trace: Option<Arc<crate::telemetry::RequestTrace>>,
}

/// The query every source of `tool` receives: its plan validates and translates `arguments`
/// (the safe message of a validation failure otherwise, for an `isError` result).
pub(crate) fn source_query(
    d: &Dispatcher,
    tool: &CatalogTool,
    policy: &crate::invoke::CorrelationPolicy,
    call: &crate::invoke::CallContext,
    arguments: &simd_json::BorrowedValue<'_>,
) -> Result<String, std::borrow::Cow<'static, str>> {
    d.invoker
        .prepare(&tool.plan, policy, call, arguments)
        .map(|request| request.uri().query().unwrap_or("").to_owned())
        .map_err(|err| err.safe_message())
}

/// Whether the request opted into `bos/source-results/v1` (an object; `true` does not count).
pub(crate) fn opted_in(params: Option<&Payload<'_>>) -> bool {
    super::meta::experimental_opt_in(params, SOURCE_RESULTS_EXTENSION)
}

/// The federated branch of `tools/call`: `query` is the tool's validated argument query.
pub(crate) async fn call(
    d: &Dispatcher,
    scope: &Scope<'_>,
    params: Option<&Payload<'_>>,
    tool: &Arc<CatalogTool>,
    query: String,
) -> Reply {
    let call = FederatedCall {
        tool: Arc::clone(tool),
        query,
        era: scope.era,
        audit: None,
        context: None,
        trace: scope.call.trace.clone(),
    };
    stream_or_run(d, scope, params, call).await
}

/// Streams `call` (the transport runs it) when the request negotiated the extension, else runs
/// it now and answers its final result.
pub(crate) async fn stream_or_run(
    d: &Dispatcher,
    scope: &Scope<'_>,
    params: Option<&Payload<'_>>,
    call: FederatedCall,
) -> Reply {
    if scope.stream_sources && d.config.source_results.is_some() && opted_in(params) {
        let audit = d
            .audit
            .is_enabled()
            .then(|| stream_record(scope, &call.tool.name));
        return Reply::Federated(Box::new(FederatedCall { audit, ..call }));
    }
    Reply::Result(d.run_federated(&call, &mut NullSink).await)
}

impl Dispatcher {
    /// Runs a federated read, emitting its source events to `sink`, and returns the final
    /// `CallToolResult` (the `result` object). Dropping the future cancels every source read.
    pub(crate) async fn run_federated(
        &self,
        call: &FederatedCall,
        sink: &mut dyn EventSink,
    ) -> Bytes {
        let started = Instant::now();
        // Dropped mid-way (the client closed the stream): the closing record says `cancelled`.
        let guard = crate::audit::CancelGuard::new(&self.audit, || {
            call.audit.as_ref().map(|record| {
                record
                    .clone()
                    .with_duration(started.elapsed())
                    .with_detail(crate::audit::cancelled_detail(None))
            })
        });
        let Downstream::Federated(federated) = &call.tool.def.downstream else {
            // Only federated tools become a `FederatedCall`.
            guard.disarm();
            return result::federated(self, call.era, None);
        };
        let trace = call.trace.as_deref().filter(|trace| trace.records());
        let span = trace.map(|trace| {
            trace.internal_span(
                format!("federated {}", call.tool.name),
                vec![
                    Attribute::new("gen_ai.tool.name", call.tool.name.to_string()),
                    Attribute::new("sluice.federated.sources", federated.sources.len() as i64),
                ],
            )
        });
        let outcome = self
            .federation
            .run(federated, &call.query, sink, trace)
            .await;
        if let Some(span) = span {
            span.set(Attribute::new(
                "sluice.federated.source_errors",
                outcome.source_errors().len() as i64,
            ));
            if outcome.is_cancelled() {
                span.fail("cancelled".to_owned());
            } else if outcome.is_partial() {
                span.fail("partial".to_owned());
            }
        }
        if let Some(metrics) = &self.metrics {
            for failure in outcome.source_errors() {
                metrics.source_error(failure.code.as_str());
            }
        }
        let result = match &call.context {
            Some(context) => result::envelope(
                self,
                call.era,
                context,
                &outcome.operation_result_json(),
                outcome.is_partial(),
            ),
            None => result::federated(self, call.era, Some(&outcome)),
        };
        if let Some(record) = &call.audit {
            let mut record = record.clone().with_duration(started.elapsed());
            if outcome.is_cancelled() {
                // The sink closed: the client went away mid-stream.
                record = record
                    .with_outcome(Outcome::Cancelled, None)
                    .with_detail(crate::audit::cancelled_detail(None));
            } else if outcome.is_partial() {
                record = record.with_outcome(Outcome::Error, Some("partial".to_owned()));
            }
            if call.tool.def.log_payloads && !outcome.is_cancelled() {
                record.response = Some(result.clone());
            }
            self.audit.record(record).await;
        }
        guard.disarm();
        result
    }
}

/// The `source_result_stream` audit record of a streamed read, finished when it ends.
fn stream_record(scope: &Scope<'_>, tool: &str) -> Record {
    super::audit::scope_record(scope, CallType::SourceResultStream, Some(tool))
}
