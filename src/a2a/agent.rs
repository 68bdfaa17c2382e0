//! The A2A surface of one server: every client application's agent card and its JSON-RPC
//! endpoint, over the shared catalog, dispatcher, task store, gate and audit.
//!
//! `GET /runtime/{t}/{c}/a2a/.well-known/agent-card.json` answers the public card (1.0 members
//! plus the 0.3 ones, `ETag`, `Cache-Control`, 304 on `If-None-Match`); URLs come from the
//! public base URL, never from `Host`. `POST /runtime/{t}/{c}/a2a` has passed the gate
//! (`access.rs`: Host, Origin, tenant and client, credential) before it reaches [`Agent::rpc`]:
//! Content-Type (415) → body within the limit (413) → one JSON-RPC request (`rpc.rs`; an
//! unreadable one is answered on 200 with -32700/-32600) → `A2A-Version` (absent → 0.3; an
//! unknown major → -32009) → a 0.3 request through `v03.rs` → the method table
//! (`methods.rs`) → the answer, translated back for 0.3, as JSON or as an event stream
//! (`stream.rs`). Every call is counted in `/metrics` (method, outcome) and audited
//! (`a2a_message`, `a2a_task`, `a2a_push`).
//!
//! Must not run tools itself (that is `tool.rs` through `mcp::Dispatcher`, from `run.rs`) nor
//! shape tasks (the store and the model do).

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::request::Parts;
use http::{HeaderValue, Response, StatusCode};

use super::card::{self, CardContext};
use super::methods::{self, Answer, Fail};
use super::push::PushSender;
use super::rpc;
use super::run::Runners;
use super::store::{Owner, TaskStore};
use super::v03::{self, Version};
use super::A2aError;
use crate::access::{Access, Admitted};
use crate::audit::{Audit, CallType, Outcome, Record, Surface};
use crate::catalog::{Catalog, ClientView};
use crate::config::A2aSettings;
use crate::http::negotiate::is_json_content_type;
use crate::http::response::{self, Body};
use crate::http::{body, Error, Target};
use crate::jsonrpc;
use crate::mcp::Dispatcher;
use crate::metrics::Metrics;

/// The request header naming the A2A protocol version.
pub(crate) const A2A_VERSION: &str = "a2a-version";

/// What the surface is built from.
pub(crate) struct AgentParts {
    pub settings: A2aSettings,
    pub catalog: Arc<Catalog>,
    pub dispatcher: Arc<Dispatcher>,
    pub store: TaskStore,
    pub access: Arc<Access>,
    pub audit: Audit,
    pub metrics: Arc<Metrics>,
    /// `scheme://host[:port]` without a trailing slash.
    pub public_base: Arc<str>,
    pub max_body_bytes: usize,
    pub body_read_timeout: Duration,
    pub json_limits: jsonrpc::Limits,
    /// Idle time after which a task stream writes a `: keepalive` comment.
    pub keepalive: Duration,
    /// The registered remote agents and their ownership ledger.
    pub remote: super::remote::Concentrator,
}

/// The A2A surface. One per server, shared as `Arc<Agent>`.
pub(crate) struct Agent {
    pub(crate) settings: A2aSettings,
    pub(crate) catalog: Arc<Catalog>,
    pub(crate) dispatcher: Arc<Dispatcher>,
    pub(crate) store: TaskStore,
    pub(crate) access: Arc<Access>,
    pub(crate) audit: Audit,
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) public_base: Arc<str>,
    pub(crate) max_body_bytes: usize,
    pub(crate) body_read_timeout: Duration,
    pub(crate) json_limits: jsonrpc::Limits,
    pub(crate) keepalive: Duration,
    /// The tasks running on this instance, for follow-up messages.
    pub(crate) runners: Runners,
    /// Push delivery.
    pub(crate) push: PushSender,
    /// The public cards of the current snapshot, built once per client and variant.
    cards: CardCache,
    /// The registered remote agents and their ownership ledger.
    pub(crate) remote: super::remote::Concentrator,
}

/// Card bytes and `ETag` by (view address, 1.0-only variant).
type CardMap = crate::shard::FastMap<(usize, bool), (Bytes, HeaderValue)>;

/// The public card bytes and `ETag` of each (client, variant), for one snapshot version: a
/// card is built (and hashed) when first asked for after a reload, not on every request.
#[derive(Default)]
struct CardCache {
    /// (snapshot version, card by (the view's address in that snapshot, variant)): the map is
    /// emptied when the version changes, so an address always names a live view.
    cards: parking_lot::Mutex<(u64, CardMap)>,
}

impl CardCache {
    fn get(
        &self,
        snapshot: &crate::catalog::Snapshot,
        view: &Arc<ClientView>,
        v1_only: bool,
        build: impl FnOnce(&ClientView) -> Bytes,
    ) -> (Bytes, HeaderValue) {
        let key = (Arc::as_ptr(view) as usize, v1_only);
        {
            let cards = self.cards.lock();
            if cards.0 == snapshot.version() {
                if let Some(hit) = cards.1.get(&key) {
                    return hit.clone();
                }
            }
        }
        let bytes = build(view);
        let etag = HeaderValue::from_str(&card::etag(&bytes))
            .unwrap_or_else(|_| HeaderValue::from_static("W/\"0\""));
        let mut cards = self.cards.lock();
        if cards.0 != snapshot.version() {
            // A reload: the cards of the previous snapshot go (clients may have gone too).
            *cards = (snapshot.version(), Default::default());
        }
        cards.1.insert(key, (bytes.clone(), etag.clone()));
        (bytes, etag)
    }
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("enabled", &self.settings.enabled)
            .field("tasks", &self.store.len())
            .field("remote_tasks", &self.remote.ledger.len())
            .finish_non_exhaustive()
    }
}

/// A request read off a JSON-RPC endpoint.
pub(crate) struct Incoming {
    /// The version the caller speaks.
    pub version: Version,
    /// The 1.0 method name; `None` when the method is unknown.
    pub method: Option<&'static str>,
    /// The request (its params as sent: 0.3 params are translated by the caller).
    pub request: rpc::Request,
}

/// What [`Agent::read_request`] made of a request.
pub(crate) enum Read {
    Call(Incoming),
    /// Unreadable: the error answer is ready.
    Answered(Response<Body>),
}

/// One call on the JSON-RPC endpoint, as the method table sees it.
pub(crate) struct Call<'a> {
    pub agent: &'a Arc<Agent>,
    pub admitted: &'a Admitted,
    pub owner: Owner,
    pub version: Version,
    /// The request id's JSON text.
    pub id: Bytes,
    /// The tool a send names, for the call's audit record.
    pub tool: parking_lot::Mutex<Option<String>>,
    /// The request's trace (`[telemetry]` on): the task's tool call hangs under its span.
    pub trace: Option<Arc<crate::telemetry::RequestTrace>>,
}

impl Agent {
    /// The surface; starts the push workers on the current runtime.
    pub(crate) fn new(parts: AgentParts) -> Arc<Agent> {
        let push = PushSender::start(&parts.settings, parts.audit.clone());
        Arc::new(Agent {
            settings: parts.settings,
            catalog: parts.catalog,
            dispatcher: parts.dispatcher,
            store: parts.store,
            access: parts.access,
            audit: parts.audit,
            metrics: parts.metrics,
            public_base: parts.public_base,
            max_body_bytes: parts.max_body_bytes,
            body_read_timeout: parts.body_read_timeout,
            json_limits: parts.json_limits,
            keepalive: parts.keepalive,
            runners: Runners::default(),
            push,
            cards: CardCache::default(),
            remote: parts.remote,
        })
    }

    /// Whether the surface is served (`[server.a2a] enabled`).
    pub(crate) fn enabled(&self) -> bool {
        self.settings.enabled
    }

    /// What a card is built from besides the view.
    pub(crate) fn card_context(&self) -> CardContext<'_> {
        CardContext {
            public_base: &self.public_base,
            push: self.settings.push_enabled(),
        }
    }

    /// `GET …/a2a/.well-known/agent-card.json`: the public card, 1.0 and 0.3 members.
    pub(crate) fn card(&self, parts: &Parts, target: &Target<'_>) -> Result<Response<Body>, Error> {
        if !self.enabled() {
            return Err(Error::NotFound);
        }
        let snapshot = self.catalog.current();
        let Some(view) = snapshot.client(&target.tenant, &target.client) else {
            return Err(Error::NotFound);
        };
        // A 1.0 client says so on the card request too (`A2A-Version: 1.0`, as the JS SDK's
        // resolver does) and gets the pure 1.0 card: a resolver that sees 0.3 members reads
        // the card as a 0.3 one. Everyone else gets both sets of members.
        let v1_only = matches!(
            Version::from_header(parts.headers.get(A2A_VERSION)),
            Ok(Version::V1)
        );
        let (bytes, etag) = self.cards.get(&snapshot, view, v1_only, |view| {
            self.public_card_bytes(view, v1_only)
        });
        Ok(card::answer(&parts.headers, bytes, etag))
    }

    /// The public card's bytes: the 1.0 members, plus the 0.3 ones unless `v1_only`.
    fn public_card_bytes(&self, view: &ClientView, v1_only: bool) -> Bytes {
        let mut card = card::public_card(view, self.card_context());
        if !v1_only {
            v03::card_v03_members(&mut card);
        }
        Bytes::from(serde_json::to_vec(&card).unwrap_or_default())
    }

    /// Reads one request off a JSON-RPC endpoint (the own agent's or a remote agent's):
    /// Content-Type (415) → body within the limit (413) → one JSON-RPC request (an unreadable
    /// one is answered at once on 200) → the `A2A-Version` → the 1.0 method name.
    pub(crate) async fn read_request<B>(&self, parts: &Parts, body: B) -> Result<Read, Error>
    where
        B: http_body::Body + Unpin,
        B::Error: std::fmt::Display,
    {
        let is_json = parts
            .headers
            .get(http::header::CONTENT_TYPE)
            .is_some_and(|value| is_json_content_type(value.as_bytes()));
        if !is_json {
            body::drain_refused(body, body::content_length(&parts.headers)).await;
            return Err(Error::UnsupportedMediaType(
                "Content-Type must be application/json",
            ));
        }
        let mut buf = body::collect_limited(
            body,
            body::content_length(&parts.headers),
            self.max_body_bytes,
            self.body_read_timeout,
        )
        .await?;
        let header = parts.headers.get(A2A_VERSION);
        // The version decides the error shape, so it is read before the body.
        let version = Version::from_header(header);
        let request = match rpc::parse(&mut buf, &self.json_limits) {
            Ok(request) => request,
            Err(refused) => {
                let v1 = version.map_or(true, Version::is_v1);
                self.count("invalid", &refused.error);
                return Ok(Read::Answered(json_answer(rpc::error(
                    refused.id.as_deref(),
                    &refused.error,
                    v1,
                ))));
            }
        };
        let version = match version {
            Ok(version) => version,
            Err(err) => {
                self.count("invalid", &err);
                return Ok(Read::Answered(json_answer(rpc::error(
                    Some(&request.id),
                    &err,
                    true,
                ))));
            }
        };
        // A 0.3 request names 0.3 methods; a header-less request naming a 1.0 method is read as
        // 1.0 (the names never overlap, so nothing is ambiguous).
        let (version, method) = match version {
            Version::V1 => (Version::V1, methods::v1_name(&request.method)),
            Version::V03 => match v03::method_to_v1(&request.method) {
                Some(method) => (Version::V03, Some(method)),
                None => (Version::V1, methods::v1_name(&request.method)),
            },
        };
        Ok(Read::Call(Incoming {
            version,
            method,
            request,
        }))
    }

    /// `POST /runtime/{t}/{c}/a2a`, admitted by the gate.
    pub(crate) async fn rpc<B>(
        self: &Arc<Self>,
        parts: &Parts,
        body: B,
        admitted: Admitted,
    ) -> Result<Response<Body>, Error>
    where
        B: http_body::Body + Unpin,
        B::Error: std::fmt::Display,
    {
        let started = Instant::now();
        let Incoming {
            version,
            method,
            request,
        } = match self.read_request(parts, body).await? {
            Read::Call(incoming) => incoming,
            Read::Answered(answer) => return Ok(answer),
        };
        let owner = Owner {
            tenant: Arc::clone(&admitted.caller.tenant),
            client: Arc::clone(&admitted.caller.client),
            caller: Arc::clone(&admitted.caller.caller_id),
        };
        let call = Call {
            agent: self,
            admitted: &admitted,
            owner,
            version,
            id: request.id.clone(),
            tool: parking_lot::Mutex::new(None),
            trace: self.access.trace(&parts.headers),
        };
        let span = call.trace.as_ref().filter(|t| t.records()).map(|trace| {
            use crate::telemetry::Attribute;
            let name = method.unwrap_or("unknown");
            let mut attributes = vec![
                Attribute::new("rpc.system", "jsonrpc"),
                Attribute::new("rpc.method", name),
                Attribute::new(
                    "jsonrpc.request.id",
                    String::from_utf8_lossy(&call.id)
                        .trim_matches('"')
                        .to_owned(),
                ),
            ];
            if let Some(external) = &admitted.external {
                attributes.push(Attribute::new(
                    "sluice.external_correlation_id",
                    external.as_str().to_owned(),
                ));
            }
            trace.server_span(format!("A2A {name}"), attributes)
        });
        let Some(method) = method else {
            let err = A2aError::MethodNotFound(request.method.clone());
            self.finish(
                &call,
                "unknown",
                started,
                &Err(Fail::A2a(err.clone())),
                None,
            )
            .await;
            return Ok(json_answer(rpc::error(
                Some(&request.id),
                &err,
                version.is_v1(),
            )));
        };
        let params = if version.is_v1() {
            Ok(request.params)
        } else {
            request
                .params
                .value()
                .and_then(|value| v03::params_to_v1(method, value))
                .map(|value| rpc::Params::from_value(&value))
        };
        let outcome = match params {
            Ok(params) => methods::call(&call, method, params).await,
            Err(err) => Err(Fail::A2a(err)),
        };
        let tool = call.tool.lock().take();
        if let (Some(span), Err(_)) = (&span, &outcome) {
            span.fail("a2a_error".to_owned());
        }
        if let (Some(span), Some(tool)) = (&span, &tool) {
            span.set(crate::telemetry::Attribute::new(
                "gen_ai.tool.name",
                tool.clone(),
            ));
        }
        drop(span);
        self.finish(&call, method, started, &outcome, tool.as_deref())
            .await;
        match outcome {
            Ok(Answer::Value(value)) => {
                let value = if version.is_v1() {
                    value
                } else {
                    v03::result_to_v03(method, value)
                };
                Ok(json_answer(rpc::result(&request.id, &value)))
            }
            Ok(Answer::Raw(json)) if version.is_v1() => {
                Ok(json_answer(rpc::result_raw(&request.id, &json)))
            }
            Ok(Answer::Raw(json)) => {
                let value = serde_json::from_slice(&json).unwrap_or(serde_json::Value::Null);
                let value = v03::result_to_v03(method, value);
                Ok(json_answer(rpc::result(&request.id, &value)))
            }
            Ok(Answer::Stream(stream)) => Ok(super::stream::respond(self, &call, stream)),
            Err(Fail::A2a(err)) => Ok(json_answer(rpc::error(
                Some(&request.id),
                &err,
                version.is_v1(),
            ))),
            Err(Fail::Http(err)) => Err(err),
        }
    }

    /// Counts and audits one finished call.
    async fn finish(
        &self,
        call: &Call<'_>,
        method: &'static str,
        started: Instant,
        outcome: &Result<Answer, Fail>,
        tool: Option<&str>,
    ) {
        let (label, code) = match outcome {
            Ok(_) => ("ok", None),
            Err(Fail::A2a(err)) => (outcome_label(err), Some(err.code().0)),
            Err(Fail::Http(_)) => ("refused", None),
        };
        self.metrics.a2a_call(method, label);
        if !self.audit.is_enabled() {
            return;
        }
        let mut record = Record::new(
            Surface::A2a,
            call_type(method),
            Arc::clone(&call.owner.tenant),
            Arc::clone(&call.owner.client),
            Arc::clone(&call.owner.caller),
        )
        .with_duration(started.elapsed())
        .with_detail(method);
        if let Some(tool) = tool {
            record = record.with_tool(tool);
        }
        if let Some(external) = &call.admitted.external {
            record = record.with_external_correlation_id(external.as_str());
        }
        if let Some(code) = code {
            record = record.with_outcome(Outcome::Error, Some(code.to_string()));
        } else if label == "refused" {
            record = record.with_outcome(Outcome::Error, Some("forbidden".to_owned()));
        }
        // Awaited like every surface's record, so `when_full = "block"` holds the request.
        self.audit.record(record).await;
    }

    pub(crate) fn count(&self, method: &'static str, err: &A2aError) {
        self.metrics.a2a_call(method, outcome_label(err));
    }
}

/// The metrics outcome of a failed call.
pub(crate) fn outcome_label(err: &A2aError) -> &'static str {
    match err {
        A2aError::TaskNotFound => "task_not_found",
        A2aError::Internal => "internal",
        A2aError::Parse | A2aError::InvalidRequest(_) | A2aError::InvalidParams(_) => "invalid",
        A2aError::MethodNotFound(_) => "method_not_found",
        A2aError::VersionNotSupported(_) => "version_not_supported",
        _ => "error",
    }
}

/// The audit call type of a method.
pub(crate) fn call_type(method: &str) -> CallType {
    match method {
        methods::SEND_MESSAGE | methods::SEND_STREAMING_MESSAGE => CallType::A2aMessage,
        m if m.contains("PushNotificationConfig") => CallType::A2aPush,
        _ => CallType::A2aTask,
    }
}

/// A JSON-RPC answer on 200.
pub(crate) fn json_answer(bytes: Bytes) -> Response<Body> {
    response::json(StatusCode::OK, bytes)
}

impl From<&A2aSettings> for super::store::TaskStoreConfig {
    fn from(settings: &A2aSettings) -> Self {
        Self {
            max_tasks_per_tenant: settings.max_tasks_per_tenant,
            retain_terminal: Duration::from_secs(settings.task_retain_secs),
            active_ttl: Duration::from_secs(settings.task_active_secs),
            max_events_per_task: settings.max_events_per_task,
            max_push_configs_per_task: settings.max_push_configs_per_task,
        }
    }
}

/// How often the janitor sweeps expired tasks.
const SWEEP_INTERVAL: Duration = Duration::from_secs(15);

impl Agent {
    /// Exposes the push delivery counters in `/metrics`.
    pub(crate) fn register_metrics(&self) {
        let stats = self.push.stats();
        for (name, help, counter) in [
            (
                "sluice_a2a_push_delivered_total",
                "A2A push notifications delivered (a 2xx from the webhook).",
                &stats.delivered,
            ),
            (
                "sluice_a2a_push_failed_total",
                "A2A push notifications given up (attempts exhausted, a redirect or a 4xx).",
                &stats.failed,
            ),
            (
                "sluice_a2a_push_retried_total",
                "A2A push notification attempts retried.",
                &stats.retried,
            ),
            (
                "sluice_a2a_push_dropped_total",
                "A2A push notifications dropped because the delivery queue was full.",
                &stats.dropped,
            ),
            (
                "sluice_a2a_push_refused_total",
                "A2A push notifications refused at delivery (the webhook failed validation).",
                &stats.refused,
            ),
        ] {
            if let Err(err) = self
                .metrics
                .register_counter(name, help, Arc::clone(counter))
            {
                tracing::warn!(%err, "A2A push counter not exported");
            }
        }
    }

    /// Drops expired tasks every [`SWEEP_INTERVAL`] until the server drains.
    pub(crate) fn spawn_janitor(
        agent: &Arc<Agent>,
        drain: crate::http::Drain,
    ) -> tokio::task::JoinHandle<()> {
        let agent = Arc::clone(agent);
        tokio::spawn(async move {
            let mut ticker = tokio::time::interval(SWEEP_INTERVAL);
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = ticker.tick() => {
                        agent.store.sweep(tokio::time::Instant::now());
                        agent.remote.ledger.sweep();
                    }
                    () = drain.signalled() => return,
                }
            }
        })
    }
}
