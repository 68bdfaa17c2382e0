//! `POST /runtime/{t}/{c}/a2a/agents/{agentId}`: every A2A method of a registered remote agent,
//! proxied for a caller the gate admitted.
//!
//! The request is read as the own agent reads its own (`Agent::read_request`: Content-Type,
//! body limit, one strict JSON-RPC request, `A2A-Version`, a 0.3 request translated to 1.0).
//! Then, per method:
//! - `SendMessage` / `SendStreamingMessage`: `message.taskId` and every `referenceTaskIds`
//!   entry must be the caller's (else -32001), `message.contextId` too (else -32602); a new
//!   task needs room in the tenant's ledger; streaming is refused (-32004) when the card says
//!   the agent does not stream.
//! - `GetTask`, `CancelTask`, `SubscribeToTask`: the task must be the caller's (-32001).
//! - `ListTasks`: answered from the ledger (the upstream would list every caller's tasks);
//!   with `includeArtifacts` or a `historyLength` each listed task is read from the upstream.
//! - push configuration methods: the runtime's own relay (`push.rs`).
//! - `GetExtendedAgentCard`: -32007 (no extended card is republished).
//!
//! Forwarding: a fresh upstream id, the upstream interface's `A2A-Version` (0.3 through
//! `v03::upstream`), the runtime's credential for this agent (the caller's never leaves),
//! `traceparent`, the correlation id, allowlisted `A2A-Extensions` (`forward.rs`), the `tenant`
//! member removed. The `ask_{agentId}` MCP tools (`ask.rs`) make the same [`ProxyCall`]. The answer is relayed as the upstream wrote it with the caller's id restored
//! (`wire.rs`); upstream JSON-RPC errors pass through unchanged (-32001 also evicts the task
//! from the ledger); transport failures are -32603 with our reason; a non-conforming answer is
//! -32006. Streams are `relay.rs`'s.
//!
//! Must not run tools or touch the own agent's task store.

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use http::request::Parts;
use http::{HeaderMap, Response};
use parking_lot::Mutex;
use serde_json::{Map, Value};

use super::forward::forwarded_headers;
use super::ledger::{AgentKey, LedgerError, Seen};
use super::registry::{Fetched, RemoteAgent};
pub(crate) use super::rescue::{error_code, ledger_error, upstream_error};
use super::upstream::Upstream;
use super::wire::{self, Answer, Peek};
use super::{relay, Concentrator};
use crate::a2a::agent::{self, Agent, Incoming, Read};
use crate::a2a::methods;
use crate::a2a::model::TaskState;
use crate::a2a::store::ListQuery;
use crate::a2a::v03::{self, Version};
use crate::a2a::{rpc, A2aError};
use crate::access::Admitted;
use crate::audit::{Outcome, Record, RemoteCall, Surface};
use crate::auth::Caller;
use crate::catalog::ClientView;
use crate::http::response::Body;
use crate::http::Error;
use crate::invoke::correlation::{ExecutionId, ExternalCorrelationId};
use crate::telemetry::RequestTrace;

/// The status object kept per ledger entry is at most this long (a longer one is kept as
/// `{"state": …}` only).
const MAX_STATUS_BYTES: usize = 8 * 1024;

/// Upstream `GetTask` calls in flight at once while a `ListTasks` page is filled in.
const LIST_FETCHES: usize = 8;

/// What a proxied method answers.
pub(crate) enum Reply {
    /// A 1.0 result's JSON.
    Result(Bytes),
    /// The upstream's error object, passed through.
    Error(Bytes),
    /// An event stream, already answering.
    Stream(Box<Response<Body>>),
}

/// What the upstream answered one request with.
pub(crate) enum Unary {
    Result(Bytes),
    Error(Bytes),
}

impl From<Unary> for Reply {
    fn from(unary: Unary) -> Reply {
        match unary {
            Unary::Result(json) => Reply::Result(json),
            Unary::Error(error) => Reply::Error(error),
        }
    }
}

/// One proxied call.
pub(crate) struct ProxyCall<'a> {
    pub agent: &'a Arc<Agent>,
    pub remote: &'a Arc<RemoteAgent>,
    pub upstream: &'a Upstream,
    pub fetched: Arc<Fetched>,
    pub key: AgentKey,
    pub caller: Arc<str>,
    /// The version the caller speaks.
    pub version: Version,
    /// The caller's request id, JSON text.
    pub id: Bytes,
    /// Headers forwarded upstream besides the credential.
    pub forward: HeaderMap,
    pub execution_id: ExecutionId,
    /// What the caller's client application sees (push-config policy).
    pub view: &'a Arc<ClientView>,
    /// The caller's accepted `X-Correlation-Id`.
    pub external: Option<&'a ExternalCorrelationId>,
    /// What the upstream showed, for the audit record.
    pub seen: Mutex<RemoteCall>,
    /// The request's trace (telemetry on): each upstream request is a CLIENT span under it.
    pub trace: Option<Arc<RequestTrace>>,
}

impl Concentrator {
    /// `POST …/a2a/agents/{agentId}`, admitted by the gate.
    pub(crate) async fn rpc<B>(
        agent: &Arc<Agent>,
        agent_id: &str,
        parts: &Parts,
        body: B,
        admitted: Admitted,
    ) -> Result<Response<Body>, Error>
    where
        B: http_body::Body + Unpin,
        B::Error: std::fmt::Display,
    {
        let started = Instant::now();
        let caller = &admitted.caller;
        let Some(remote) = agent
            .remote
            .remotes
            .get(&caller.tenant, &caller.client, agent_id)
        else {
            crate::http::body::drain_refused(
                body,
                crate::http::body::content_length(&parts.headers),
            )
            .await;
            return Err(Error::NotFound);
        };
        let Incoming {
            version,
            method,
            request,
        } = match agent.read_request(parts, body).await? {
            Read::Call(incoming) => incoming,
            Read::Answered(answer) => return Ok(answer),
        };
        let ready = match method {
            None => Err(A2aError::MethodNotFound(request.method.clone())),
            Some(_) => remote.ready(),
        };
        let (upstream, fetched) = match ready {
            Ok(ready) => ready,
            Err(err) => {
                count_refused(agent, &remote, method.unwrap_or("unknown"), &err);
                return Ok(agent::json_answer(rpc::error(
                    Some(&request.id),
                    &err,
                    version.is_v1(),
                )));
            }
        };
        let method = method.unwrap_or_default();
        let forward = forwarded_headers(parts, &remote.config.allowed_extensions);
        let call = ProxyCall::new(
            Reach {
                agent,
                remote: &remote,
                upstream,
                fetched,
            },
            Who {
                caller,
                view: &admitted.view,
                external: admitted.external.as_ref(),
            },
            (version, request.id.clone()),
            forward,
            method,
        )
        .traced(agent.access.trace(&parts.headers));
        let span = super::span::server(&call, method);
        let outcome = match request.params.value() {
            Ok(params) => {
                let params = if version.is_v1() {
                    Ok(params)
                } else {
                    v03::params_to_v1(method, params)
                };
                match params {
                    Ok(params) => call.dispatch(method, strip_tenant(params)).await,
                    Err(err) => Err(err),
                }
            }
            Err(err) => Err(err),
        };
        super::span::close(span, &outcome);
        call.account(started, &outcome).await;
        Ok(match outcome {
            Ok(Reply::Result(json)) if version.is_v1() => {
                agent::json_answer(wire::response(&call.id, "result", &json))
            }
            Ok(Reply::Result(json)) => {
                let value = serde_json::from_slice(&json).unwrap_or(Value::Null);
                agent::json_answer(rpc::result(&call.id, &v03::result_to_v03(method, value)))
            }
            Ok(Reply::Error(error)) => {
                agent::json_answer(wire::response(&call.id, "error", &error))
            }
            Ok(Reply::Stream(stream)) => *stream,
            Err(err) => agent::json_answer(rpc::error(Some(&call.id), &err, version.is_v1())),
        })
    }
}

/// Writes what `seen` shows (the ids, and the state once known) into the call's audit record,
/// keeping what an earlier event showed where this one is silent.
pub(crate) fn note_seen(audit: &mut RemoteCall, seen: &Seen) {
    if seen.task_id.is_some() {
        audit.task_id.clone_from(&seen.task_id);
    }
    if seen.context_id.is_some() {
        audit.context_id.clone_from(&seen.context_id);
    }
    if seen.state != TaskState::Unspecified {
        audit.state = Some(seen.state.as_v1());
    }
}

/// Records `seen` in the agent's ownership ledger; a failure is logged, not returned (the
/// caller's answer does not wait on the ledger).
pub(crate) async fn record_seen(agent: &Agent, key: &AgentKey, caller: &str, seen: &Seen) {
    if let Err(err) = agent.remote.ledger.record(key, caller, seen).await {
        tracing::warn!(%err, agent = %key.agent, "remote task not recorded in the ledger");
    }
}

/// Where a call goes: the surface, the registered agent, its upstream client and card
/// ([`RemoteAgent::ready`]).
pub(crate) struct Reach<'a> {
    pub agent: &'a Arc<Agent>,
    pub remote: &'a Arc<RemoteAgent>,
    pub upstream: &'a Upstream,
    pub fetched: Arc<Fetched>,
}

/// Who calls: the caller, what its client application sees, its accepted correlation id.
pub(crate) struct Who<'a> {
    pub caller: &'a Caller,
    pub view: &'a Arc<ClientView>,
    pub external: Option<&'a ExternalCorrelationId>,
}

/// Counts a call refused before it reached the upstream (unknown method, agent not ready).
pub(crate) fn count_refused(
    agent: &Agent,
    remote: &RemoteAgent,
    method: &'static str,
    err: &A2aError,
) {
    let labels = (Arc::clone(&remote.tenant), Arc::clone(&remote.id));
    agent
        .metrics
        .a2a_remote_call(&labels, method, agent::outcome_label(err));
}

impl<'a> ProxyCall<'a> {
    /// A call of `method` by `who` through `reach`, in the caller's `version` with its request
    /// id, `forward` going upstream besides the credential.
    pub(crate) fn new(
        Reach {
            agent,
            remote,
            upstream,
            fetched,
        }: Reach<'a>,
        Who {
            caller,
            view,
            external,
        }: Who<'a>,
        (version, id): (Version, Bytes),
        forward: HeaderMap,
        method: &'static str,
    ) -> Self {
        ProxyCall {
            agent,
            remote,
            upstream,
            fetched,
            key: AgentKey {
                tenant: Arc::clone(&caller.tenant),
                client: Arc::clone(&caller.client),
                agent: Arc::clone(&remote.id),
            },
            caller: Arc::clone(&caller.caller_id),
            version,
            id,
            forward,
            execution_id: ExecutionId::generate(),
            view,
            external,
            seen: Mutex::new(RemoteCall {
                agent: Arc::clone(&remote.id),
                method,
                ..RemoteCall::default()
            }),
            trace: None,
        }
    }

    /// This call, traced under `trace` (telemetry on).
    pub(crate) fn traced(mut self, trace: Option<Arc<RequestTrace>>) -> Self {
        self.trace = trace;
        self
    }

    pub(crate) async fn dispatch(
        &self,
        method: &'static str,
        params: Value,
    ) -> Result<Reply, A2aError> {
        match method {
            methods::SEND_MESSAGE | methods::SEND_STREAMING_MESSAGE => {
                self.send(method, params).await
            }
            methods::GET_TASK | methods::CANCEL_TASK => {
                let task_id = self.owned_task(&params).await?;
                self.seen.lock().task_id = Some(task_id.clone());
                let reply = self.unary(method, &params).await?;
                self.after_task_answer(&reply, &task_id).await;
                Ok(reply.into())
            }
            methods::SUBSCRIBE_TO_TASK => {
                let task_id = self.owned_task(&params).await?;
                self.seen.lock().task_id = Some(task_id);
                if !self.fetched.card.streaming {
                    return Err(A2aError::UnsupportedOperation(
                        "this agent does not stream".into(),
                    ));
                }
                relay::open(self, method, &params).await
            }
            methods::LIST_TASKS => self.list(params).await,
            methods::GET_EXTENDED_CARD => Err(A2aError::ExtendedCardNotConfigured),
            _ => super::push::call(self, method, params).await,
        }
    }

    /// `SendMessage` / `SendStreamingMessage` after the ownership checks.
    async fn send(&self, method: &'static str, mut params: Value) -> Result<Reply, A2aError> {
        let message = params
            .get("message")
            .and_then(Value::as_object)
            .ok_or_else(|| A2aError::InvalidParams("message is required".into()))?;
        let task_id = non_empty(message.get("taskId"));
        let context_id = non_empty(message.get("contextId"));
        let references: Vec<String> = match message.get("referenceTaskIds") {
            Some(Value::Array(ids)) => ids
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            _ => Vec::new(),
        };
        let ledger = &self.agent.remote.ledger;
        if let Some(task_id) = &task_id {
            if !ledger
                .owns_task(&self.key, &self.caller, task_id)
                .await
                .map_err(ledger_error)?
            {
                return Err(A2aError::TaskNotFound);
            }
        }
        if let Some(context_id) = &context_id {
            if !ledger
                .owns_context(&self.key, &self.caller, context_id)
                .await
                .map_err(ledger_error)?
            {
                return Err(A2aError::InvalidParams("unknown contextId".into()));
            }
        }
        for reference in &references {
            if !ledger
                .owns_task(&self.key, &self.caller, reference)
                .await
                .map_err(ledger_error)?
            {
                return Err(A2aError::TaskNotFound);
            }
        }
        if task_id.is_none()
            && !ledger
                .has_room(&self.key.tenant)
                .await
                .map_err(ledger_error)?
        {
            return Err(ledger_error(LedgerError::Full));
        }
        {
            let mut seen = self.seen.lock();
            seen.task_id.clone_from(&task_id);
            seen.context_id.clone_from(&context_id);
        }
        let streaming = method == methods::SEND_STREAMING_MESSAGE;
        if streaming && !self.fetched.card.streaming {
            return Err(A2aError::UnsupportedOperation(
                "this agent does not stream".into(),
            ));
        }
        let inline = super::push::take_inline(self, &mut params).await?;
        if streaming {
            return relay::open_with_push(self, method, &params, inline).await;
        }
        let reply = self.unary(method, &params).await?;
        if let Unary::Result(json) = &reply {
            let peek = std::str::from_utf8(json)
                .map(wire::peek_wrapped)
                .unwrap_or_default();
            self.record(&peek).await;
            if let (Some(inline), Some(task)) = (inline, peek.task_id.as_deref()) {
                super::push::register_inline(self, task, inline).await;
            }
        } else if let (Unary::Error(error), Some(task_id)) = (&reply, &task_id) {
            self.evict_on_not_found(error, task_id).await;
        }
        Ok(reply.into())
    }

    /// The task id a `{id}` params object names, when the caller owns it.
    async fn owned_task(&self, params: &Value) -> Result<String, A2aError> {
        let task_id = non_empty(params.get("id"))
            .ok_or_else(|| A2aError::InvalidParams("id is required".into()))?;
        let owned = self
            .agent
            .remote
            .ledger
            .owns_task(&self.key, &self.caller, &task_id)
            .await
            .map_err(ledger_error)?;
        if owned {
            Ok(task_id)
        } else {
            Err(A2aError::TaskNotFound)
        }
    }

    /// Records a Task answer (or evicts the task when the upstream does not know it).
    async fn after_task_answer(&self, reply: &Unary, task_id: &str) {
        match reply {
            Unary::Result(json) => {
                let peek = std::str::from_utf8(json)
                    .map(wire::peek_task)
                    .unwrap_or_default();
                self.record(&peek).await;
            }
            Unary::Error(error) => self.evict_on_not_found(error, task_id).await,
        }
    }

    async fn evict_on_not_found(&self, error: &[u8], task_id: &str) {
        if error_code(error) == i64::from(crate::rescue::a2a_codes::TASK_NOT_FOUND.0) {
            if let Err(err) = self
                .agent
                .remote
                .ledger
                .evict_task(&self.key, task_id)
                .await
            {
                tracing::warn!(%err, "remote task not evicted from the ledger");
            }
        }
    }

    /// Records what `peek` shows in the ledger (and the audit record).
    pub(crate) async fn record(&self, peek: &Peek<'_>) {
        let seen = seen_of(peek);
        note_seen(&mut self.seen.lock(), &seen);
        record_seen(self.agent, &self.key, &self.caller, &seen).await;
    }

    /// Sends one request upstream and reads its whole answer.
    pub(crate) async fn unary(
        &self,
        method: &'static str,
        params: &Value,
    ) -> Result<Unary, A2aError> {
        let interface = &self.fetched.card.interface;
        let (wire_method, mut wire_params) = self.for_upstream(method, params)?;
        let (headers, span) = self.upstream_headers(method, wire_method, &mut wire_params);
        let upstream_id = self.remote.upstream_id();
        let body = wire::request_body(&upstream_id, wire_method, &wire_params);
        let response = self
            .upstream
            .post(&interface.url, interface.version, body, &headers)
            .await
            .map_err(|err| {
                if let Some(span) = &span {
                    span.fail("upstream_error");
                }
                upstream_error(err)
            })?;
        if let Some(span) = &span {
            span.status(response.status().as_u16());
        }
        let bytes = response
            .collect(self.remote.config.max_response_bytes)
            .await
            .map_err(upstream_error)?;
        self.seen.lock().bytes += bytes.len() as u64;
        let answer = match wire::read_answer(&bytes, &upstream_id) {
            Ok(answer) => answer,
            // A stream answer to a unary request: read its first event.
            Err(_) if bytes.starts_with(b"data:") || bytes.starts_with(b"event:") => {
                return Err(A2aError::InvalidAgentResponse)
            }
            Err(err) => return Err(err),
        };
        self.reply_of(method, &bytes, answer)
    }

    /// The upstream's answer as this call replies with it (1.0, the payload as written).
    pub(crate) fn reply_of(
        &self,
        method: &'static str,
        body: &Bytes,
        answer: Answer<'_>,
    ) -> Result<Unary, A2aError> {
        let v1 = self.fetched.card.interface.version.is_v1();
        match answer {
            Answer::Result(raw) if v1 => Ok(Unary::Result(body.slice_ref(raw.as_bytes()))),
            Answer::Result(raw) => {
                let value: Value =
                    serde_json::from_str(raw).map_err(|_| A2aError::InvalidAgentResponse)?;
                let value = v03::result_to_v1(method, value)?;
                Ok(Unary::Result(Bytes::from(
                    serde_json::to_vec(&value).map_err(|_| A2aError::Internal)?,
                )))
            }
            Answer::Error(raw) if v1 => Ok(Unary::Error(body.slice_ref(raw.as_bytes()))),
            Answer::Error(raw) => {
                let mut error: Value =
                    serde_json::from_str(raw).map_err(|_| A2aError::InvalidAgentResponse)?;
                if let Some(data) = error.get_mut("data") {
                    *data = v03::error_data_to_v1(data.take());
                }
                Ok(Unary::Error(Bytes::from(
                    serde_json::to_vec(&error).map_err(|_| A2aError::Internal)?,
                )))
            }
        }
    }

    /// The method name and params as the upstream's interface speaks them.
    pub(crate) fn for_upstream(
        &self,
        method: &'static str,
        params: &Value,
    ) -> Result<(&'static str, Value), A2aError> {
        match self.fetched.card.interface.version {
            Version::V1 => Ok((method, params.clone())),
            Version::V03 => {
                let name = v03::method_to_v03(method)
                    .ok_or_else(|| A2aError::MethodNotFound(method.to_owned()))?;
                Ok((name, v03::params_to_v03(method, params.clone())))
            }
        }
    }

    /// `ListTasks` from the ledger: the caller's tasks of this agent, each as the last status
    /// seen, or read from the upstream when artifacts or history are asked for.
    async fn list(&self, params: Value) -> Result<Reply, A2aError> {
        let settings = &self.agent.settings;
        let page_size = match params.get("pageSize").and_then(Value::as_u64) {
            Some(0) => {
                return Err(A2aError::InvalidParams(
                    "pageSize must be at least 1".into(),
                ))
            }
            Some(n) => usize::try_from(n)
                .unwrap_or(usize::MAX)
                .min(settings.list_max_page_size),
            None => settings.list_default_page_size,
        };
        let state = match params.get("status").and_then(Value::as_str) {
            None | Some("") => None,
            Some(text) => match TaskState::parse(text) {
                TaskState::Unspecified => {
                    return Err(A2aError::InvalidParams(
                        format!("unknown task state {:?}", crate::jsonrpc::echo(text)).into(),
                    ))
                }
                state => Some(state),
            },
        };
        let query = ListQuery {
            context_id: non_empty(params.get("contextId")),
            state,
            page_size,
            page_token: non_empty(params.get("pageToken")),
            status_after: non_empty(params.get("statusTimestampAfter")),
        };
        let page = self
            .agent
            .remote
            .ledger
            .list(&self.key, &self.caller, &query)
            .await
            .map_err(ledger_error)?;
        let include_artifacts = params
            .get("includeArtifacts")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let history = params.get("historyLength").and_then(Value::as_u64);
        let fetch = include_artifacts || history.is_some_and(|h| h > 0);
        let mut tasks: Vec<Value> = page
            .entries
            .iter()
            .map(|entry| {
                let status = entry
                    .status
                    .as_deref()
                    .and_then(|s| serde_json::from_slice::<Value>(s).ok())
                    .unwrap_or_else(|| serde_json::json!({"state": entry.state.as_v1()}));
                serde_json::json!({"id": entry.task_id, "contextId": entry.context_id, "status": status})
            })
            .collect();
        if fetch {
            let reads = self.read_tasks(&page.entries, history).await;
            for (slot, read) in tasks.iter_mut().zip(reads) {
                if let Some(mut task) = read {
                    if !include_artifacts {
                        if let Some(object) = task.as_object_mut() {
                            object.remove("artifacts");
                        }
                    }
                    *slot = task;
                }
            }
        }
        let result = serde_json::json!({
            "tasks": tasks,
            "nextPageToken": page.next_page_token,
            "pageSize": page.page_size,
            "totalSize": page.total_size,
        });
        Ok(Reply::Result(Bytes::from(
            serde_json::to_vec(&result).map_err(|_| A2aError::Internal)?,
        )))
    }

    /// Each entry's task read from the upstream (`None` where the read failed), at most
    /// [`LIST_FETCHES`] at a time.
    async fn read_tasks(
        &self,
        entries: &[super::ledger::Entry],
        history: Option<u64>,
    ) -> Vec<Option<Value>> {
        let mut reads = Vec::with_capacity(entries.len());
        for batch in entries.chunks(LIST_FETCHES) {
            let params: Vec<Value> = batch
                .iter()
                .map(|entry| {
                    let mut get = Map::new();
                    get.insert("id".into(), entry.task_id.clone().into());
                    if let Some(history) = history {
                        get.insert("historyLength".into(), history.into());
                    }
                    Value::Object(get)
                })
                .collect();
            let mut pending: Vec<_> = Vec::with_capacity(params.len());
            for get in &params {
                pending.push(Box::pin(self.unary(methods::GET_TASK, get)));
            }
            for read in futures_util::future::join_all(pending).await {
                reads.push(match read {
                    Ok(Unary::Result(json)) => serde_json::from_slice(&json).ok(),
                    _ => None,
                });
            }
        }
        reads
    }

    /// Counts the call's outcome (`sluice_a2a_remote_calls_total`) now and returns the write of
    /// its audit record (which does not hold `outcome`: a stream reply is not `Sync`).
    pub(crate) fn account(
        &self,
        started: Instant,
        outcome: &Result<Reply, A2aError>,
    ) -> impl std::future::Future<Output = ()> + Send + '_ {
        let (label, verdict) = match outcome {
            Ok(Reply::Error(error)) => ("upstream_error", Some(error_code(error).to_string())),
            Ok(_) => ("ok", None),
            Err(err) => (agent::outcome_label(err), Some(err.code().0.to_string())),
        };
        let labels = (Arc::clone(&self.remote.tenant), Arc::clone(&self.remote.id));
        let method = self.seen.lock().method;
        self.agent.metrics.a2a_remote_call(&labels, method, label);
        self.audit(started, verdict, matches!(outcome, Ok(Reply::Stream(_))))
    }

    /// The call's audit record (one per north call; a stream's close has its own).
    async fn audit(&self, started: Instant, error_code: Option<String>, stream: bool) {
        if !self.agent.audit.is_enabled() {
            return;
        }
        let mut remote = self.seen.lock().clone();
        if stream {
            remote.stream = Some("open");
        }
        let method = remote.method;
        let mut record = self.record_base(method).with_duration(started.elapsed());
        if let Some(code) = error_code {
            record = record.with_outcome(Outcome::Error, Some(code));
        }
        self.agent.audit.record(record.with_remote(remote)).await;
    }

    /// A record naming the call's caller, agent and correlation.
    pub(crate) fn record_base(&self, method: &'static str) -> Record {
        let mut record = Record::new(
            Surface::A2a,
            agent::call_type(method),
            Arc::clone(&self.key.tenant),
            Arc::clone(&self.key.client),
            Arc::clone(&self.caller),
        )
        .with_detail(format!("remote agent {}: {method}", self.key.agent))
        .with_execution_id(self.execution_id.as_str());
        if let Some(external) = self.external {
            record = record.with_external_correlation_id(external.as_str());
        }
        record
    }
}

/// The ledger entry of what `peek` shows.
pub(crate) fn seen_of(peek: &Peek<'_>) -> Seen {
    let status = peek.status.map(|status| {
        if status.len() <= MAX_STATUS_BYTES {
            Bytes::copy_from_slice(status.as_bytes())
        } else {
            Bytes::from(format!("{{\"state\":\"{}\"}}", peek.state.as_v1()))
        }
    });
    Seen {
        task_id: peek.task_id.as_deref().map(str::to_owned),
        context_id: peek.context_id.as_deref().map(str::to_owned),
        status: if peek.carries_status { status } else { None },
        state: if peek.carries_status {
            peek.state
        } else {
            TaskState::Unspecified
        },
        stamp: peek.stamp.as_deref().unwrap_or_default().to_owned(),
    }
}

/// A string member, when present and not empty.
fn non_empty(value: Option<&Value>) -> Option<String> {
    value
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// The params without the A2A `tenant` member (the path names the agent; the upstream's own
/// tenant, if it has one, is its business).
fn strip_tenant(mut params: Value) -> Value {
    if let Some(object) = params.as_object_mut() {
        object.remove("tenant");
    }
    params
}
