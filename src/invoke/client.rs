//! The shared downstream client and the call pipeline around it.
//!
//! Owns `Invoker` (built once, shared behind an `Arc`): the connection pool (`pool.rs`: HTTP/1.1
//! keep-alive on hyper's connection API; HTTPS through hyper-rustls with webpki roots and the ring
//! provider, plain HTTP for loopback and test downstreams), the per-call timeout around the whole exchange,
//! the bounded response body, the process-wide answer budget (`budget.rs`) every body read
//! counts against, and response translation. Must not know MCP framing.

use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::header::CONTENT_LENGTH;
use http::Request;
use http_body_util::{BodyExt, Full};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use simd_json::BorrowedValue as Value;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::budget::{AnswerBudget, AnswerReservation, DEFAULT_ANSWER_BUDGET_BYTES};
use super::correlation::{CallContext, CorrelationPolicy};
use super::error::{ArgumentProblem, InvokeError, ResponseProblem};
use super::pool::{self, Pool, PoolConfig, PoolError};
use super::request::build_request;
use super::soap::{self, Answer};
use super::translate::{translate_response, UnknownFields};
use crate::catalog::plan::ToolPlan;
use crate::config::ServerSettings;
use crate::simd_scratch::with_buffers;

/// Largest downstream response body read, in bytes. A larger body (by `Content-Length` or as it
/// streams in) fails the call with `ResponseProblem::TooLarge` (502) and the rest is not read.
/// `[server] downstream_max_answer_bytes` sets it.
pub(crate) const DEFAULT_MAX_RESPONSE_BYTES: usize = 8 * 1024 * 1024;

/// Idle pooled connections kept per downstream host; more are closed when returned.
pub(crate) const DEFAULT_MAX_IDLE_PER_HOST: usize = 64;

/// How long an idle pooled connection is kept before it is closed.
pub(crate) const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(90);

/// How long establishing a connection may take before the call fails as a connect error.
pub(crate) const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// The timeout of a call whose tool sets none; when hit the call fails as a timeout (504).
pub(crate) const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// Settings of the shared downstream client.
#[derive(Debug, Clone)]
pub struct InvokerConfig {
    /// Idle pooled connections kept per host.
    pub max_idle_per_host: usize,
    /// How long an idle pooled connection lives.
    pub idle_timeout: Duration,
    /// Connect timeout.
    pub connect_timeout: Duration,
    /// Timeout of calls whose tool sets none.
    pub default_timeout: Duration,
    /// `downstream_max_answer_bytes`: largest response body read (federation provider pages
    /// are held to the same size, `Dispatcher::new` in `mcp.rs`).
    pub max_response_bytes: usize,
    /// What happens to argument members no rule names.
    pub unknown_fields: UnknownFields,
    /// `max_downstream_per_tenant`: downstream calls one tenant may have in flight. A call past
    /// it waits for a slot within its own timeout, then fails as a timeout (504), so one tenant's
    /// slow API cannot take every connection and task of the process.
    pub max_per_tenant: usize,
    /// `downstream_answer_budget_bytes`: downstream answer bytes the process holds at once
    /// (tool responses and federation provider pages); an answer past it fails at once
    /// ([`InvokeError::Busy`]); 0: unlimited.
    pub answer_budget_bytes: usize,
    /// `max_json_depth`: deepest nesting of a downstream answer (and of REST arguments) parsed;
    /// deeper fails as not JSON. The same limit as JSON-RPC bodies, so both share this
    /// thread's parse buffers (`simd_scratch.rs`).
    pub max_json_depth: usize,
}

impl Default for InvokerConfig {
    fn default() -> Self {
        Self {
            max_idle_per_host: DEFAULT_MAX_IDLE_PER_HOST,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            default_timeout: DEFAULT_CALL_TIMEOUT,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            unknown_fields: UnknownFields::Ignore,
            max_per_tenant: DEFAULT_MAX_PER_TENANT,
            answer_budget_bytes: DEFAULT_ANSWER_BUDGET_BYTES,
            max_json_depth: crate::jsonrpc::DEFAULT_MAX_DEPTH,
        }
    }
}

/// Default `max_downstream_per_tenant`.
pub(crate) const DEFAULT_MAX_PER_TENANT: usize = 512;

/// One semaphore per tenant, created on first use.
#[derive(Debug, Default)]
struct TenantLimiter {
    permits: usize,
    tenants: parking_lot::Mutex<crate::shard::FastMap<Box<str>, Arc<Semaphore>>>,
}

impl TenantLimiter {
    fn new(permits: usize) -> Self {
        Self {
            permits: permits.max(1),
            tenants: Default::default(),
        }
    }

    /// Waits for one of `tenant`'s slots; the slot is released when the permit drops.
    async fn acquire(&self, tenant: &str) -> Option<OwnedSemaphorePermit> {
        let semaphore = {
            let mut tenants = self.tenants.lock();
            match tenants.get(tenant) {
                Some(semaphore) => Arc::clone(semaphore),
                None => {
                    let semaphore = Arc::new(Semaphore::new(self.permits));
                    tenants.insert(tenant.into(), Arc::clone(&semaphore));
                    semaphore
                }
            }
        };
        // The semaphore is never closed, so this only fails if that changes.
        semaphore.acquire_owned().await.ok()
    }

    /// Calls of `tenant` in flight now.
    fn in_flight(&self, tenant: &str) -> usize {
        let tenants = self.tenants.lock();
        tenants
            .get(tenant)
            .map_or(0, |s| self.permits - s.available_permits())
    }
}

impl InvokerConfig {
    /// Takes the pool, connect and default timeout settings from the server configuration.
    pub(crate) fn from_server_settings(settings: &ServerSettings) -> Self {
        Self {
            max_idle_per_host: settings.downstream_pool_idle_per_host,
            connect_timeout: Duration::from_millis(settings.downstream_connect_timeout_ms),
            default_timeout: Duration::from_millis(settings.downstream_timeout_ms),
            max_response_bytes: settings.downstream_max_answer_bytes,
            max_per_tenant: settings.max_downstream_per_tenant,
            answer_budget_bytes: settings.downstream_answer_budget_bytes,
            max_json_depth: settings.max_json_depth,
            ..Self::default()
        }
    }
}

/// A successful call's result.
#[derive(Debug)]
pub struct InvokeOutput {
    /// The (translated) result as JSON.
    pub body: Bytes,
    /// Whether the result is a JSON object (MCP puts objects in `structuredContent`).
    pub is_object: bool,
    /// The answer's bytes counted against the process's answer budget, given back when the
    /// output is dropped (after the surface has built its response from `body`).
    pub held: Option<AnswerReservation>,
    /// A SOAP fault: the downstream refused the call with its own business message. `body`
    /// is then `{"faultcode":…,"faultstring":…,"detail":…}` and this the short text
    /// (`SOAP fault Client: customer not found`); the surfaces answer a tool failure.
    pub fault: Option<Box<str>>,
}

/// A pooled hyper-util client for `http` and `https` (rustls, webpki roots) URLs, on the same
/// connector as [`Pool`]: the federation's provider client. `idle` is both the TCP keep-alive and
/// the pool's idle timeout when set. Needs no runtime until the first request.
pub(crate) fn pooled_client<B>(
    connect_timeout: Duration,
    idle: Option<Duration>,
    max_idle_per_host: usize,
) -> Client<HttpsConnector<HttpConnector>, B>
where
    B: http_body::Body + Send + 'static,
    B::Data: Send,
{
    let connector = pool::connector(connect_timeout, idle);
    let mut builder = Client::builder(TokioExecutor::new());
    if let Some(idle) = idle {
        builder.pool_idle_timeout(idle);
    }
    builder
        .pool_max_idle_per_host(max_idle_per_host)
        .pool_timer(TokioTimer::new())
        .build(connector)
}

/// Executes tool calls against downstreams. Build one and share it (`Arc<Invoker>`): it holds
/// the connection pool.
pub struct Invoker {
    pool: Pool,
    config: InvokerConfig,
    limiter: Arc<TenantLimiter>,
    /// Answer bytes held at once, process-wide (shared with the federation's provider client).
    budget: Arc<AnswerBudget>,
    /// Downstream failures are counted here by code.
    metrics: Option<Arc<crate::metrics::Metrics>>,
}

impl std::fmt::Debug for Invoker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Invoker")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Invoker {
    /// Builds the client and its pool. Needs no runtime until the first call.
    pub fn new(config: InvokerConfig) -> Self {
        let pool = Pool::new(PoolConfig {
            connect_timeout: config.connect_timeout,
            idle_timeout: config.idle_timeout,
            max_idle_per_host: config.max_idle_per_host,
        });
        let limiter = Arc::new(TenantLimiter::new(config.max_per_tenant));
        let budget = AnswerBudget::new(config.answer_budget_bytes);
        Self {
            pool,
            config,
            limiter,
            budget,
            metrics: None,
        }
    }

    /// This invoker, counting downstream failures in `metrics`
    /// (`sluice_downstream_errors_total{code}`).
    pub(crate) fn with_metrics(mut self, metrics: Arc<crate::metrics::Metrics>) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// Downstream calls of `tenant` in flight now (bounded by `max_per_tenant`).
    pub fn in_flight(&self, tenant: &str) -> usize {
        self.limiter.in_flight(tenant)
    }

    /// The process-wide answer budget every downstream body read counts against.
    pub(crate) fn answer_budget(&self) -> &Arc<AnswerBudget> {
        &self.budget
    }

    /// The settings it was built with.
    pub fn config(&self) -> &InvokerConfig {
        &self.config
    }

    /// Validates and translates the arguments and builds the downstream request (no IO).
    pub fn prepare(
        &self,
        plan: &ToolPlan,
        policy: &CorrelationPolicy,
        ctx: &CallContext,
        args: &Value<'_>,
    ) -> Result<Request<Full<Bytes>>, InvokeError> {
        build_request(plan, policy, ctx, args, self.config.unknown_fields)
    }

    /// Calls the tool of `tenant` with arguments already parsed (from the REST body or MCP
    /// params).
    pub async fn call(
        &self,
        tenant: &str,
        plan: &ToolPlan,
        policy: &CorrelationPolicy,
        ctx: &CallContext,
        args: &Value<'_>,
    ) -> Result<InvokeOutput, InvokeError> {
        let request = self.prepare(plan, policy, ctx, args)?;
        self.exchange(tenant, plan, request, ctx).await
    }

    /// Sends a prepared request and translates the answer: JSON for REST tools; for SOAP
    /// tools the body is read on any status (a fault may come with 500, 400 or 200).
    async fn exchange(
        &self,
        tenant: &str,
        plan: &ToolPlan,
        request: Request<Full<Bytes>>,
        ctx: &CallContext,
    ) -> Result<InvokeOutput, InvokeError> {
        if plan.soap.is_none() {
            let (_, body) = self
                .send_in(tenant, plan, request, Some(ctx), false)
                .await?;
            return self.translate_response(plan, body);
        }
        let (status, body) = self.send_in(tenant, plan, request, Some(ctx), true).await?;
        let answer = self.read_soap(plan, status, body);
        if let (Err(err), Some(metrics)) = (&answer, &self.metrics) {
            metrics.downstream_error(err.metric_code());
        }
        answer
    }

    /// Reads a SOAP tool's answer (a body read on any status) into the exposed result or the
    /// fault (no IO): the envelope read into source JSON, then the same translation as REST.
    pub fn read_soap(
        &self,
        plan: &ToolPlan,
        status: http::StatusCode,
        body: ResponseBody,
    ) -> Result<InvokeOutput, InvokeError> {
        let ResponseBody { data, held } = body;
        let bytes = data.into_bytes();
        match soap::answer(plan, status, &bytes, self.config.max_json_depth)? {
            Answer::Fault(fault) => Ok(InvokeOutput {
                body: fault.json.freeze(),
                is_object: true,
                held,
                fault: Some(fault.text.into()),
            }),
            Answer::Result(source) => self.translate_response(
                plan,
                ResponseBody {
                    data: BodyData::Joined(source),
                    held,
                },
            ),
        }
    }

    /// Calls the tool of `tenant` with arguments as JSON bytes (copied once to parse in place).
    pub async fn call_bytes(
        &self,
        tenant: &str,
        plan: &ToolPlan,
        policy: &CorrelationPolicy,
        ctx: &CallContext,
        args: &[u8],
    ) -> Result<InvokeOutput, InvokeError> {
        let mut owned = args.to_vec();
        let request = with_buffers(owned.len(), self.config.max_json_depth, |buffers| {
            let value = simd_json::to_borrowed_value_with_buffers(&mut owned, buffers)
                .map_err(|_| InvokeError::argument("", ArgumentProblem::InvalidJson))?;
            self.prepare(plan, policy, ctx, &value)
        })?;
        self.exchange(tenant, plan, request, ctx).await
    }

    /// Sends a prepared request and reads the body, under the tool's timeout, which also bounds
    /// the wait for one of the tenant's call slots.
    pub async fn send(
        &self,
        tenant: &str,
        plan: &ToolPlan,
        request: Request<Full<Bytes>>,
    ) -> Result<ResponseBody, InvokeError> {
        let (_, body) = self.send_in(tenant, plan, request, None, false).await?;
        Ok(body)
    }

    /// [`Invoker::send`], noting the downstream's status in `ctx` as soon as it is known (an
    /// audit record of a call cancelled afterwards carries it). With `any_status` the body of
    /// a non-success answer is read too (under the same limits) and returned with its status.
    async fn send_in(
        &self,
        tenant: &str,
        plan: &ToolPlan,
        request: Request<Full<Bytes>>,
        ctx: Option<&CallContext>,
        any_status: bool,
    ) -> Result<(http::StatusCode, ResponseBody), InvokeError> {
        let timeout = plan.timeout.unwrap_or(self.config.default_timeout);
        let mut request = request;
        // With telemetry on: a CLIENT span under the request's span, its context sent on.
        let span = ctx
            .and_then(|ctx| ctx.trace.as_ref())
            .filter(|trace| trace.records())
            .map(|trace| trace.http_client_span(&mut request, Vec::new()));
        let exchange = async {
            let _slot = self.limiter.acquire(tenant).await;
            let (response, mut lease) = self.pool.send(request).await.map_err(|e| match e {
                PoolError::Connect(e) => InvokeError::Connect(e),
                PoolError::Transport(e) => InvokeError::Transport(Box::new(e)),
                PoolError::NotAbsolute => InvokeError::Request("the URL is not absolute".into()),
            })?;
            let status = response.status();
            if let Some(ctx) = ctx {
                ctx.downstream_status.set(status);
            }
            if !status.is_success() && !any_status {
                // The body is not read: it is never shown and the connection is not reused.
                return Err(InvokeError::Status(status));
            }
            let limit = self.config.max_response_bytes;
            let declared = response
                .headers()
                .get(CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<u64>().ok());
            if declared.is_some_and(|n| n > limit as u64) {
                return Err(InvokeError::InvalidResponse(ResponseProblem::TooLarge {
                    limit,
                }));
            }
            // Reserved before the first byte is read: over budget, the call fails now.
            let declared = declared.unwrap_or(0) as usize;
            let mut held = self.budget.reserve(declared).map_err(InvokeError::Busy)?;
            let body = read_body(response.into_body(), limit, declared, &mut held);
            let data = lease.drive(body).await?;
            // Read to its end: the connection can serve the next call.
            self.pool.release(lease);
            Ok((
                status,
                ResponseBody {
                    data,
                    held: Some(held),
                },
            ))
        };
        let result = match tokio::time::timeout(timeout, exchange).await {
            Ok(result) => result,
            Err(_) => Err(InvokeError::Timeout(timeout)),
        };
        if let (Err(err), Some(metrics)) = (&result, &self.metrics) {
            metrics.downstream_error(err.metric_code());
        }
        if let Some(span) = span {
            match &result {
                Ok((status, _)) => span.status(status.as_u16()),
                Err(InvokeError::Status(status)) => span.status(status.as_u16()),
                Err(err) => span.fail(err.metric_code()),
            }
        }
        result
    }

    /// Translates a downstream body into the exposed result (no IO).
    pub fn translate_response(
        &self,
        plan: &ToolPlan,
        body: ResponseBody,
    ) -> Result<InvokeOutput, InvokeError> {
        let ResponseBody { data, held } = body;
        let Some(output) = &plan.output else {
            let mut output = pass_through(data.into_bytes())?;
            output.held = held;
            return Ok(output);
        };
        if plan.output_is_identity {
            // The rules would write the same members back (in another order): check, pass on.
            let mut output = pass_through(data.into_bytes())?;
            if !output.is_object {
                return Err(InvokeError::InvalidResponse(ResponseProblem::NotAnObject));
            }
            output.held = held;
            return Ok(output);
        }
        let mut bytes = data.into_bytes_mut();
        if is_blank(&bytes) {
            return Err(InvokeError::InvalidResponse(ResponseProblem::NotAnObject));
        }
        let mut out = BytesMut::with_capacity(bytes.len());
        with_buffers(bytes.len(), self.config.max_json_depth, |buffers| {
            let value = simd_json::to_borrowed_value_with_buffers(&mut bytes, buffers)
                .map_err(|_| ResponseProblem::NotJson)?;
            translate_response(output, plan.keep_unmapped_output, &value, &mut out)
        })
        .map_err(InvokeError::InvalidResponse)?;
        Ok(InvokeOutput {
            body: out.freeze(),
            is_object: true,
            held,
            fault: None,
        })
    }
}

/// A downstream body as read, with its bytes counted against the answer budget until it is
/// dropped (or handed on to the [`InvokeOutput`]).
#[derive(Debug)]
pub struct ResponseBody {
    data: BodyData,
    held: Option<AnswerReservation>,
}

/// The bytes of a body: one chunk kept as it arrived, or several joined.
#[derive(Debug)]
enum BodyData {
    /// The body arrived in one frame (or none): no copy was made.
    Single(Bytes),
    /// The body arrived in several frames, joined.
    Joined(BytesMut),
}

impl ResponseBody {
    /// The body as immutable bytes (no copy); its reservation is given back.
    pub fn into_bytes(self) -> Bytes {
        self.data.into_bytes()
    }

    /// Wraps bytes (for tests and benches); counts against no budget.
    pub fn from_bytes(bytes: Bytes) -> Self {
        Self {
            data: BodyData::Single(bytes),
            held: None,
        }
    }
}

impl BodyData {
    fn into_bytes(self) -> Bytes {
        match self {
            Self::Single(b) => b,
            Self::Joined(b) => b.freeze(),
        }
    }

    /// The body as a mutable buffer (copies a shared single chunk).
    fn into_bytes_mut(self) -> BytesMut {
        match self {
            Self::Single(b) => BytesMut::from(b),
            Self::Joined(b) => b,
        }
    }
}

async fn read_body(
    mut body: hyper::body::Incoming,
    limit: usize,
    declared: usize,
    held: &mut AnswerReservation,
) -> Result<BodyData, InvokeError> {
    let mut first: Option<Bytes> = None;
    let mut joined: Option<BytesMut> = None;
    let mut total = 0usize;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| InvokeError::Transport(Box::new(e)))?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        total = total.saturating_add(data.len());
        if total > limit {
            return Err(InvokeError::InvalidResponse(ResponseProblem::TooLarge {
                limit,
            }));
        }
        // Within the reservation this is a comparison; past it, one atomic step.
        held.ensure(total, limit).map_err(InvokeError::Busy)?;
        match (&mut first, &mut joined) {
            (_, Some(buf)) => buf.extend_from_slice(&data),
            (None, None) => first = Some(data),
            (Some(head), None) => {
                let mut buf = BytesMut::with_capacity(declared.max(head.len() + data.len()));
                buf.extend_from_slice(head);
                buf.extend_from_slice(&data);
                joined = Some(buf);
            }
        }
    }
    Ok(match (first, joined) {
        (_, Some(buf)) => BodyData::Joined(buf),
        (Some(b), None) => BodyData::Single(b),
        (None, None) => BodyData::Single(Bytes::new()),
    })
}

fn is_blank(bytes: &[u8]) -> bool {
    bytes.iter().all(|b| b.is_ascii_whitespace())
}

/// A tool without output rules returns the downstream JSON as it is, after checking that it is
/// JSON (without building a value). An empty body becomes `null`.
fn pass_through(body: Bytes) -> Result<InvokeOutput, InvokeError> {
    if is_blank(&body) {
        return Ok(InvokeOutput {
            body: Bytes::from_static(b"null"),
            is_object: false,
            held: None,
            fault: None,
        });
    }
    serde_json::from_slice::<serde::de::IgnoredAny>(&body)
        .map_err(|_| InvokeError::InvalidResponse(ResponseProblem::NotJson))?;
    let is_object = body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
    Ok(InvokeOutput {
        body,
        is_object,
        held: None,
        fault: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(input: &str, expected: Result<(&str, bool), ResponseProblem>) {
        let got = pass_through(Bytes::copy_from_slice(input.as_bytes()));
        match (got, expected) {
            (Ok(out), Ok((body, is_object))) => {
                assert_eq!(
                    (&out.body[..], out.is_object),
                    (body.as_bytes(), is_object),
                    "{input}"
                )
            }
            (Err(InvokeError::InvalidResponse(p)), Err(e)) => assert_eq!(p, e, "{input}"),
            (g, e) => panic!("{input}: got {g:?}, expected {e:?}"),
        }
    }

    #[test]
    fn pass_through_checks_json_without_rewriting() {
        check(r#" {"a" : 1} "#, Ok((r#" {"a" : 1} "#, true)));
        check("[1,2]", Ok(("[1,2]", false)));
        check("\"s\"", Ok(("\"s\"", false)));
        check("", Ok(("null", false)));
        check("  \n", Ok(("null", false)));
        check("{\"a\":", Err(ResponseProblem::NotJson));
        check("<html>", Err(ResponseProblem::NotJson));
        check("{} x", Err(ResponseProblem::NotJson));
    }
}
