//! The REST surface: `GET /runtime/{tenant}/{client}/tools` lists the visible tools with their
//! published schemas, `POST /runtime/{tenant}/{client}/tools/{name}` invokes one with a JSON
//! object body and answers the translated result.
//!
//! Owns only the REST shapes: listing bytes come precomputed from the catalog snapshot, calls go
//! through [`crate::invoke`], and every failure becomes an [`http::Error`](crate::http::Error)
//! (the one place that maps errors to statuses). Must not duplicate MCP logic: the same catalog
//! entries and the same invoker serve MCP `tools/list` and `tools/call`.
//!
//! Status codes: 200 with the result; 400 invalid JSON or arguments (JSON-RPC code -32602);
//! 404 unknown tenant, client or tool; 413/415 from the body rules; 502 downstream failure;
//! 503 when the process-wide downstream answer budget cannot hold the answer ("server busy");
//! 504 downstream timeout. Every answer carries `X-Execution-Id`, and `X-External-Correlation-Id`
//! when the client's `X-Correlation-Id` passed the acceptance rules.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Instant;

use bytes::BytesMut;
use http::header::CONTENT_TYPE;
use http::request::Parts;
use http::{Response, StatusCode};

use crate::access::{Access, Admitted, Endpoint};
use crate::audit::{cancelled_detail, Audit, CallType, CancelGuard, Outcome, Record, Surface};
use crate::catalog::{self, Catalog};
use crate::http::negotiate::is_json_content_type;
use crate::http::response::{self, Body};
use crate::http::{body, Error, Target};
use crate::invoke::cap::{self, Capped};
use crate::invoke::{
    CallContext, CorrelationPolicy, ErrorClass, InvokeError, Invoker,
    EXTERNAL_CORRELATION_ID_HEADER,
};
use crate::jsonrpc;
use crate::log_limit::{warn_limited, Kind};

/// Response header carrying the execution id the runtime generated for a call.
pub(crate) const EXECUTION_ID_HEADER: &str = "x-execution-id";

/// What the REST handlers share.
#[derive(Debug, Clone)]
pub(crate) struct Rest {
    /// The live catalog; each request reads the snapshot current when it starts.
    pub catalog: Arc<Catalog>,
    /// The shared downstream client.
    pub invoker: Arc<Invoker>,
    /// Largest request body accepted (413 past it).
    pub max_body_bytes: usize,
    /// Longest pause between two chunks of a request body (408 past it).
    pub body_read_timeout: std::time::Duration,
    /// The gate (per-tool scopes) and the audit trail.
    pub access: Arc<Access>,
    /// Where call records go.
    pub audit: Audit,
}

impl Rest {
    /// `GET …/tools`: `{"tools":[…]}` copied from the snapshot's precomputed listing bytes.
    pub(crate) async fn list_tools(
        &self,
        parts: &Parts,
        target: &Target<'_>,
        admitted: &Admitted,
    ) -> Result<Response<Body>, Error> {
        let started = Instant::now();
        let view = admitted
            .snapshot
            .client(&target.tenant, &target.client)
            .ok_or(Error::UnknownClient)?;
        let mut buf = BytesMut::with_capacity(view.tools_list_len() + 16);
        buf.extend_from_slice(b"{\"tools\":");
        view.write_tools_list(&mut buf);
        buf.extend_from_slice(b"}");
        let body = buf.freeze();
        if self.audit.is_enabled() {
            let ctx = CallContext::from_headers(&parts.headers);
            let mut record = record(
                &ctx,
                admitted,
                CallType::ToolsList,
                None,
                Outcome::Ok,
                started,
            );
            record.tools_list = view.log_list_payloads().then(|| body.clone());
            self.audit.record(record).await;
        }
        Ok(response::json(StatusCode::OK, body))
    }

    /// `POST …/tools/{name}`: validates and translates the JSON object body, calls the
    /// downstream, answers the translated result.
    pub(crate) async fn call_tool<B>(
        &self,
        parts: &Parts,
        body: B,
        target: &Target<'_>,
        name: &str,
        admitted: Admitted,
    ) -> Result<Response<Body>, Error>
    where
        B: http_body::Body,
        B::Error: std::fmt::Display,
    {
        let started = Instant::now();
        let ctx =
            CallContext::from_headers(&parts.headers).traced(self.access.trace(&parts.headers));
        let span = ctx.trace.as_ref().filter(|t| t.records()).map(|trace| {
            use crate::telemetry::Attribute;
            let mut attributes = vec![
                Attribute::new("http.request.method", "POST"),
                Attribute::new("http.route", REST_ROUTE),
                Attribute::new("gen_ai.tool.name", name.to_owned()),
                Attribute::new("gen_ai.operation.name", "execute_tool"),
            ];
            if let Some(external) = &ctx.external_correlation_id {
                attributes.push(Attribute::new(
                    "sluice.external_correlation_id",
                    external.as_str().to_owned(),
                ));
            }
            trace.server_span(format!("POST {REST_ROUTE}"), attributes)
        });
        let call_type = if name == catalog::schema::DISCOVER_TOOL_NAME {
            CallType::SchemaDiscovery
        } else {
            CallType::ToolCall
        };
        // Dropped before the record below is queued (the client went away): `cancelled`.
        let guard = CancelGuard::new(&self.audit, || {
            self.audit.is_enabled().then(|| {
                record(
                    &ctx,
                    &admitted,
                    call_type,
                    Some(name),
                    Outcome::Cancelled,
                    started,
                )
                .with_detail(cancelled_detail(ctx.downstream_status.get()))
            })
        });
        let (result, logged) = self
            .call_inner(parts, body, target, name, &ctx, &admitted)
            .await;
        let mut response = result.unwrap_or_else(Error::into_response);
        if let Some(span) = span {
            use crate::telemetry::Attribute;
            let status = response.status().as_u16();
            span.set(Attribute::new(
                "http.response.status_code",
                i64::from(status),
            ));
            if ctx.execution_id.is_minted() {
                span.set(Attribute::new(
                    "sluice.execution_id",
                    ctx.execution_id.as_str().to_owned(),
                ));
            }
            if status >= 400 {
                span.fail(status.to_string());
            }
        }
        if self.audit.is_enabled() {
            let status = response.status();
            let outcome = if status.is_success() {
                Outcome::Ok
            } else {
                Outcome::Error
            };
            let mut record = record(&ctx, &admitted, call_type, Some(name), outcome, started);
            if !status.is_success() {
                record.error_code = Some(status.as_u16().to_string());
            }
            record.request = logged.request;
            record.response = logged.response;
            self.audit.record(record).await;
        }
        guard.disarm();
        let headers = response.headers_mut();
        headers.insert(EXECUTION_ID_HEADER, ctx.execution_id.header_value());
        if let Some(external) = &ctx.external_correlation_id {
            headers.insert(
                EXTERNAL_CORRELATION_ID_HEADER,
                external.header_value().clone(),
            );
        }
        Ok(response)
    }

    async fn call_inner<B>(
        &self,
        parts: &Parts,
        body: B,
        target: &Target<'_>,
        name: &str,
        ctx: &CallContext,
        admitted: &Admitted,
    ) -> (Result<Response<Body>, Error>, Logged)
    where
        B: http_body::Body,
        B::Error: std::fmt::Display,
    {
        let call = Call {
            parts,
            target,
            name,
            ctx,
            admitted,
        };
        let mut logged = Logged::default();
        let result = self.call_logged(&call, body, &mut logged).await;
        (result, logged)
    }

    async fn call_logged<B>(
        &self,
        call: &Call<'_, '_>,
        body: B,
        logged: &mut Logged,
    ) -> Result<Response<Body>, Error>
    where
        B: http_body::Body,
        B::Error: std::fmt::Display,
    {
        let Call {
            parts,
            target,
            name,
            ctx,
            admitted,
        } = *call;
        // Resolve before reading the body: an unknown tool is 404 whatever was sent.
        let snapshot = &admitted.snapshot;
        let view = snapshot
            .client(&target.tenant, &target.client)
            .ok_or(Error::UnknownClient)?;
        let is_discovery = name == catalog::schema::DISCOVER_TOOL_NAME && view.needs_discovery();
        let tool = match view.tool(name) {
            Some(tool) => Some(tool),
            None if is_discovery => None,
            None => return Err(Error::UnknownTool),
        };
        self.access
            .admit_call(&admitted.caller, view, Endpoint::Rest, name, None)
            .await?;
        let log_payloads = self.audit.is_enabled() && tool.is_some_and(|t| t.def.log_payloads);

        // A body with a declared type must be JSON; a missing Content-Type is read as JSON, as
        // curl users expect.
        if let Some(content_type) = parts.headers.get(CONTENT_TYPE) {
            if !is_json_content_type(content_type.as_bytes()) {
                return Err(Error::UnsupportedMediaType("expected application/json"));
            }
        }
        let declared = body::content_length(&parts.headers);
        let mut buf =
            body::collect_limited(body, declared, self.max_body_bytes, self.body_read_timeout)
                .await?;
        if buf.iter().all(u8::is_ascii_whitespace) {
            buf.clear();
            buf.extend_from_slice(b"{}");
        }
        if log_payloads {
            logged.request = Some(bytes::Bytes::copy_from_slice(&buf));
        }
        // The strictness rules of JSON-RPC messages (`jsonrpc::parse`): a NUL byte is never
        // JSON, and a repeated member name would be read differently by different readers.
        let not_json = || invalid_arguments("the body is not valid JSON".into());
        if memchr::memchr(0, &buf).is_some() {
            return Err(not_json());
        }
        let tape = simd_json::to_tape(&mut buf).map_err(|_| not_json())?;
        if jsonrpc::has_repeated_name(&tape) {
            return Err(invalid_arguments(
                "the body repeats a member name in an object".into(),
            ));
        }
        let args = simd_json::value::lazy::Value::from_tape(tape.as_value()).into_value();
        if !matches!(args, simd_json::BorrowedValue::Object(_)) {
            return Err(invalid_arguments(
                "the body must be a JSON object of arguments".into(),
            ));
        }

        let Some(tool) = tool else {
            return discover(snapshot, target, &args);
        };
        let policy = CorrelationPolicy::of_tool(tool);
        let output = self
            .invoker
            .call(&target.tenant, &tool.plan, &policy, ctx, &args)
            .await
            .map_err(|err| invoke_error(&target.tenant, err))?;
        if log_payloads {
            logged.response = Some(output.body.clone());
        }
        if let Some(text) = output.fault {
            warn_limited!(&target.tenant, Kind::DownstreamFailure, tool = %tool.name, "SOAP fault");
            return Err(Error::DownstreamFault {
                message: text.into(),
                fault: output.body,
            });
        }
        let Some(limit) = tool.def.max_result_bytes else {
            return Ok(response::json(StatusCode::OK, output.body));
        };
        let policy = tool.def.on_oversize.unwrap_or_default();
        match cap::apply(&output.body, limit, policy) {
            Capped::Fits => Ok(response::json(StatusCode::OK, output.body)),
            Capped::Cut(cut) => {
                let mut answer = response::json(StatusCode::OK, cut.body);
                // What was cut, as MCP says it in `_meta` (the JSON escapes control bytes).
                if let Ok(value) = http::HeaderValue::from_maybe_shared(cut.meta) {
                    answer.headers_mut().insert(TRUNCATED_HEADER, value);
                }
                Ok(answer)
            }
            Capped::Refused(text) => Err(Error::BadGateway {
                message: text.into(),
                id: None,
            }),
        }
    }
}

/// The route template of a REST tool call (`http.route`).
const REST_ROUTE: &str = "/runtime/{tenant}/{client}/tools/{name}";

/// The header a REST answer cut to its tool's `max_result_bytes` carries: what was cut
/// (`{"limitBytes":…,"originalBytes":…,"resultBytes":…,"cut":[…]}`).
pub(crate) const TRUNCATED_HEADER: &str = "x-sluice-truncated";

/// What one REST tool call is about.
#[derive(Clone, Copy)]
struct Call<'a, 't> {
    parts: &'a Parts,
    target: &'a Target<'t>,
    name: &'a str,
    ctx: &'a CallContext,
    admitted: &'a Admitted,
}

/// Payloads captured for the audit record of a tool with `log_payloads`.
#[derive(Debug, Default)]
struct Logged {
    request: Option<bytes::Bytes>,
    response: Option<bytes::Bytes>,
}

/// The audit record of one REST call.
fn record(
    ctx: &CallContext,
    admitted: &Admitted,
    call_type: CallType,
    tool: Option<&str>,
    outcome: Outcome,
    started: Instant,
) -> Record {
    let mut record = Record::new(
        Surface::Rest,
        call_type,
        admitted.caller.tenant.clone(),
        admitted.caller.client.clone(),
        admitted.caller.caller_id.clone(),
    )
    .with_execution_id(ctx.execution_id.as_str())
    .with_outcome(outcome, None)
    .with_duration(started.elapsed());
    record.external_correlation_id = ctx
        .external_correlation_id
        .as_ref()
        .map(|id| id.as_str().to_owned());
    record.tool = tool.map(str::to_owned);
    record
}

/// `POST …/tools/discover_tool_schema` with `{"tool_id": "…"}`.
fn discover(
    snapshot: &catalog::Snapshot,
    target: &Target<'_>,
    args: &simd_json::BorrowedValue<'_>,
) -> Result<Response<Body>, Error> {
    use simd_json::prelude::*;
    let tool_id = args
        .get("tool_id")
        .and_then(|v| v.as_str())
        .ok_or_else(|| invalid_arguments("'tool_id' (a string) is required".into()))?;
    let found = catalog::discover(snapshot, &target.tenant, &target.client, tool_id)
        .map_err(|_| Error::UnknownTool)?;
    Ok(response::json(StatusCode::OK, found.to_json()))
}

/// How an invocation failure is answered on the REST surface.
/// The warning is rate-limited per tenant: a dead downstream fails every call.
fn invoke_error(tenant: &str, err: InvokeError) -> Error {
    let message = err.safe_message();
    match err.class() {
        ErrorClass::InvalidArguments => invalid_arguments(message),
        ErrorClass::Timeout => {
            warn_limited!(tenant, Kind::DownstreamTimeout, error = %err, "downstream timeout");
            Error::GatewayTimeout { message, id: None }
        }
        ErrorClass::Downstream => {
            warn_limited!(tenant, Kind::DownstreamFailure, error = %err, "downstream failure");
            Error::BadGateway { message, id: None }
        }
        ErrorClass::Busy => {
            warn_limited!(
                tenant,
                Kind::DownstreamFailure,
                error = %err,
                "downstream answer refused: answer budget exhausted"
            );
            Error::Unavailable(message)
        }
    }
}

fn invalid_arguments(message: Cow<'static, str>) -> Error {
    Error::InvalidArguments(message)
}
