//! MCP methods over JSON-RPC: the dispatcher, every method family, `_meta` parsing, version
//! negotiation, and the era rules for result shapes.
//!
//! The transport hands [`Dispatcher::request`] a method name, the request's `params` (a
//! [`Payload`] still borrowing the request body) and a [`Scope`]; it gets back the `result`
//! object as JSON bytes ([`Reply`]) or an [`McpError`] it maps to a JSON-RPC error and a status.
//! Every method has the same life cycle (mini-redis `cmd/`): parse its params (typed, borrowed
//! from the body), apply them to the catalog snapshot or the invoker, and write the result
//! straight into a `BytesMut` (listing bytes are copied from the snapshot, never re-serialized).
//!
//! Layout, one file per family:
//! - `dispatch.rs`: the method table and client notifications.
//! - `audit.rs`: the audit record of each audited call (the one place calls are recorded).
//! - `lifecycle.rs`: `initialize`, `ping`, `server/discover`, version negotiation.
//! - `tools.rs`: `tools/list`, `tools/call` (and `discover_tool_schema`).
//! - `resources.rs`, `prompts.rs`: the toolset system prompts as resources and prompts.
//! - `subscriptions.rs`: `subscriptions/listen` parameters and messages, `list_changed`.
//! - `meta.rs`: stateless-era `_meta` validation, `Mcp-Name` routing values, opt-ins.
//! - `era.rs`: result shaping per era (`resultType`, `ttlMs`, `cacheScope`, serverInfo).
//! - `page.rs`: opaque cursors and page slicing.
//! - `params.rs`: reading typed params from a [`Payload`]; `json.rs`: small JSON writers;
//!   `names.rs`: method names and `_meta` keys.
//!
//! Must not touch sockets or HTTP types: status codes are the transport's (`http/`) business.

pub(crate) mod agents;
mod audit;
mod dispatch;
mod era;
pub(crate) mod federated;
mod json;
mod lifecycle;
pub(crate) mod meta;
pub(crate) mod names;
mod page;
mod params;
mod platform;
pub(crate) mod progress;
mod prompts;
mod resources;
mod result;
pub(crate) mod subscriptions;
mod tools;
mod trace;

use std::borrow::Cow;
use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};

use crate::audit::{Audit, Surface};
use crate::auth::Caller;
use crate::catalog::{ClientView, Snapshot};
use crate::federation::{Federation, FederationConfig};
use crate::invoke::{CallContext, Invoker};
use crate::jsonrpc::{ErrorCode, Payload};
use crate::rescue::Failure;
use crate::session::SessionId;

pub use meta::{stateless_meta, MetaInfo};
pub use progress::ProgressSink;
pub use subscriptions::{ListChanged, SubscriptionFilter};
pub(crate) use trace::meta_context as trace_context;

/// The experimental capability key of the BOS source-results extension (valid under `experimental`,
/// not under MCP 2026-07-28's `extensions`, whose identifiers may not contain `/` in their name:
/// `docs/eras.md`).
pub(crate) const SOURCE_RESULTS_EXTENSION: &str = "bos/source-results/v1";

/// The protocol era and version types live in the leaf [`crate::protocol`]; re-exported so
/// `mcp::Era` keeps working.
pub use crate::protocol::{Era, ProtocolVersion};

/// Everything a method needs to know about the caller; built by the transport per request.
#[derive(Debug, Clone, Copy)]
pub struct Scope<'a> {
    /// Tenant id from the path.
    pub tenant: &'a str,
    /// Client application id from the path.
    pub client: &'a str,
    /// The catalog snapshot read at the start of the request.
    pub snapshot: &'a Snapshot,
    /// What the client sees in `snapshot` (`None` for an unknown client), looked up once by the
    /// gate ([`crate::access::Admitted::view`]) instead of by every method.
    pub view: Option<&'a Arc<ClientView>>,
    /// The request's era.
    pub era: Era,
    /// The protocol version in force: the session's negotiated one, the header's, or the
    /// stateless `_meta` version.
    pub version: ProtocolVersion,
    /// Correlation ids of this call.
    pub call: &'a CallContext,
    /// Who is calling (the authenticated caller, or `anonymous`).
    pub caller: &'a Caller,
    /// The session the request belongs to (handshake era), for audit records.
    pub session: Option<SessionId>,
    /// Which transport carried the request (`mcp`, `legacy_sse`), for audit records.
    pub surface: Surface,
    /// Whether the transport can stream this request's answer as an event stream with
    /// notifications before the result (Accept allows `text/event-stream` and the reply goes on
    /// this response): a federated read that opted in then streams its source events.
    pub stream_sources: bool,
    /// The request came through the BOS platform endpoint: `tools/list` and `tools/call` are
    /// the platform tools (`bos_list_contexts`, `bos_list_tools`, `bos_execute`).
    pub platform: bool,
    /// Where `tools/call` says why a call ended in a tool execution error (A2A tells invalid
    /// arguments, a rejected task, from a failed one); `None` for MCP and REST, which answer
    /// both the same way.
    pub tool_error: Option<&'a ToolErrorSlot>,
    /// Where `notifications/progress` go when the request asks for them
    /// (`params._meta.progressToken`) and the transport can write them before the response.
    pub progress: Option<&'a ProgressSink>,
}

/// The class of a `tools/call` that ended in an `isError` result, for a caller that must tell
/// them apart (`Scope::tool_error`).
#[derive(Debug, Default)]
pub struct ToolErrorSlot(std::sync::atomic::AtomicU8);

impl ToolErrorSlot {
    const NONE: u8 = 0;
    const INVALID_ARGUMENTS: u8 = 1;
    const FAILED: u8 = 2;

    fn set(&self, class: crate::invoke::ErrorClass) {
        let value = match class {
            crate::invoke::ErrorClass::InvalidArguments => Self::INVALID_ARGUMENTS,
            _ => Self::FAILED,
        };
        self.0.store(value, std::sync::atomic::Ordering::Relaxed);
    }

    /// `Some(true)` for invalid arguments, `Some(false)` for another tool error, `None` when
    /// the call ended without one.
    pub(crate) fn invalid_arguments(&self) -> Option<bool> {
        match self.0.load(std::sync::atomic::Ordering::Relaxed) {
            Self::NONE => None,
            value => Some(value == Self::INVALID_ARGUMENTS),
        }
    }
}

impl<'a> Scope<'a> {
    /// The scope of a request of `tenant`'s `client` on `snapshot`, in `era` at `version`:
    /// outside a session, on the `mcp` surface, no source streaming, not the platform
    /// endpoint (the `with_*` setters change those).
    pub fn new(
        tenant: &'a str,
        client: &'a str,
        snapshot: &'a Snapshot,
        view: Option<&'a Arc<ClientView>>,
        (era, version): (Era, ProtocolVersion),
        call: &'a CallContext,
        caller: &'a Caller,
    ) -> Self {
        Self {
            tenant,
            client,
            snapshot,
            view,
            era,
            version,
            call,
            caller,
            session: None,
            surface: Surface::Mcp,
            stream_sources: false,
            platform: false,
            tool_error: None,
            progress: None,
        }
    }

    /// The request belongs to `session`.
    pub(crate) fn with_session(mut self, session: Option<SessionId>) -> Self {
        self.session = session;
        self
    }

    /// The request came through the BOS platform endpoint when `platform` (its audit surface
    /// is then `bos`).
    pub(crate) fn with_platform(mut self, platform: bool) -> Self {
        self.platform = platform;
        if platform {
            self.surface = Surface::Bos;
        }
        self
    }

    /// The transport that carried the request.
    pub(crate) fn with_surface(mut self, surface: Surface) -> Self {
        self.surface = surface;
        self
    }

    /// Where a `tools/call` says why it ended in a tool execution error.
    pub(crate) fn with_tool_error(mut self, slot: &'a ToolErrorSlot) -> Self {
        self.tool_error = Some(slot);
        self
    }

    /// Where the request's progress notifications go (the transport writes them before the
    /// response).
    pub(crate) fn with_progress(mut self, progress: Option<&'a ProgressSink>) -> Self {
        self.progress = progress;
        self
    }

    /// Whether the answer may stream source events before the result.
    pub(crate) fn with_stream_sources(mut self, stream_sources: bool) -> Self {
        self.stream_sources = stream_sources;
        self
    }
}

/// What the server advertises for the `bos/source-results/v1` extension under
/// `capabilities.experimental` (`src/federation/contract.md`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceResultsAdvert {
    /// Most records per delivered page.
    pub page_size: u32,
    /// Most source reads in flight per invocation.
    pub max_concurrent_sources: u32,
    /// Where the extension's contract is described.
    pub contract_uri: String,
}

impl Default for SourceResultsAdvert {
    fn default() -> Self {
        Self {
            page_size: 100,
            max_concurrent_sources: 8,
            contract_uri: crate::federation::CONTRACT_PATH.to_owned(),
        }
    }
}

/// Server identity and advertised extras, from configuration.
#[derive(Debug, Clone)]
pub struct DispatcherConfig {
    /// `serverInfo.name`.
    pub server_name: String,
    /// `serverInfo.version`.
    pub server_version: String,
    /// `instructions` in `initialize` / `server/discover`, when set.
    pub instructions: Option<String>,
    /// Page size of `tools/list`, `resources/list`, `prompts/list` (cursor pagination). A list
    /// longer than this is cut into pages linked by `nextCursor`; 0 is read as 1.
    pub page_size: usize,
    /// `ttlMs` on cacheable stateless-era results.
    pub ttl_ms: u64,
    /// The `bos/source-results/v1` advert in `capabilities.experimental`; `None` advertises
    /// nothing. On by default, its contract page served locally (`federation::CONTRACT_PATH`).
    pub source_results: Option<SourceResultsAdvert>,
    /// The HMAC key of BOS context handles (the platform endpoint's tools need it).
    pub bos_handle_secret: Option<String>,
    /// Most pages read from a federated source that sets no `max_pages`.
    pub federated_max_pages: usize,
    /// Most records a federated read delivers when its tool sets no `max_records`.
    pub federated_max_records: usize,
}

impl Default for DispatcherConfig {
    fn default() -> Self {
        Self {
            server_name: "sluice".to_owned(),
            server_version: env!("CARGO_PKG_VERSION").to_owned(),
            instructions: None,
            page_size: 100,
            ttl_ms: 0,
            source_results: Some(SourceResultsAdvert::default()),
            bos_handle_secret: None,
            federated_max_pages: crate::federation::DEFAULT_MAX_PAGES_PER_SOURCE,
            federated_max_records: crate::federation::DEFAULT_MAX_RECORDS_PER_CALL,
        }
    }
}

/// What a successful request produced.
#[derive(Debug)]
pub enum Reply {
    /// The `result` object as JSON bytes (no JSON-RPC envelope; the transport adds it).
    Result(Bytes),
    /// `initialize` succeeded: the result plus what the transport stores in the new session.
    Initialized {
        /// The `result` object as JSON bytes.
        result: Bytes,
        /// The negotiated version (one of [`ProtocolVersion::HANDSHAKE`]).
        version: ProtocolVersion,
        /// The client's `clientInfo` as JSON bytes.
        client_info: Bytes,
        /// The client's `capabilities` as JSON bytes.
        client_capabilities: Bytes,
    },
    /// A federated read negotiated `bos/source-results/v1`: the transport answers with an event
    /// stream, runs [`Dispatcher::run_federated`] writing each source event as
    /// `notifications/bos/source_result`, then the final response.
    Federated(Box<federated::FederatedCall>),
    /// `subscriptions/listen` (stateless era): the transport opens the long-lived stream, sends
    /// [`Dispatcher::acknowledged_message`] first, then [`Dispatcher::list_changed_message`]s of
    /// the kinds the filter honours, and ends with [`Dispatcher::listen_result`].
    Listen(SubscriptionFilter),
}

/// What a client notification asks the transport to do.
#[derive(Debug, PartialEq, Eq)]
pub enum NotificationEffect {
    /// Nothing beyond the 202.
    None,
    /// `notifications/initialized`: mark the session initialized.
    Initialized,
    /// `notifications/cancelled`: stop the in-flight request with this id (its JSON text).
    Cancel(Bytes),
}

/// A request-level MCP failure. Its status and code come from the one table
/// ([`crate::rescue::classify`] of [`McpError::failure`]): the transport answers it in-band (the
/// JSON-RPC error with [`McpError::code`], the message and [`McpError::data`]) or, where the
/// table gives the era a status other than 200, as an HTTP error.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    /// -32601, unknown method (stateless era: HTTP 404; handshake era: HTTP 200).
    #[error("method not found: {0}")]
    MethodNotFound(String),
    /// -32602, invalid params (unknown tool, bad cursor, missing argument…).
    #[error("{0}")]
    InvalidParams(Cow<'static, str>),
    /// A required stateless-era `_meta` key is missing (-32602, HTTP 400).
    #[error("missing required _meta key {0}")]
    MissingMeta(&'static str),
    /// -32022, unsupported stateless-era version (HTTP 400), `data: {supported, requested}`.
    #[error("unsupported protocol version {requested}")]
    UnsupportedVersion {
        /// The version the request named.
        requested: String,
    },
    /// Resource not found: -32002 in the handshake era, -32602 with `data.uri` in 2026.
    #[error("resource not found: {uri}")]
    ResourceNotFound {
        /// The URI asked for.
        uri: String,
        /// The request's era (decides the code).
        era: Era,
    },
    /// -32603.
    #[error("internal error")]
    Internal,
}

impl McpError {
    /// What went wrong, for the one table, answered in `era`.
    pub(crate) fn failure(&self, era: Era) -> Failure {
        match self {
            McpError::MethodNotFound(_) => Failure::MethodNotFound(era),
            McpError::InvalidParams(_) => Failure::InvalidParams,
            McpError::MissingMeta(_) => Failure::MissingMeta,
            McpError::UnsupportedVersion { .. } => Failure::UnsupportedVersion(Era::Stateless),
            McpError::ResourceNotFound { era, .. } => Failure::ResourceNotFound(*era),
            McpError::Internal => Failure::MethodFailed,
        }
    }

    /// The JSON-RPC code, from the one table. The era of the answer changes only the status of
    /// an MCP error, never its code (`ResourceNotFound` carries the era its code depends on).
    pub fn code(&self) -> ErrorCode {
        crate::rescue::classify(self.failure(Era::Handshake)).1
    }

    /// The `data` member as JSON bytes, when the error has one:
    /// - `UnsupportedVersion`: `{"supported":[stateless versions…, handshake versions…],
    ///   "requested":"…"}` (modern first; the Python SDK's probe falls back to `initialize` when
    ///   it sees handshake versions there);
    /// - `ResourceNotFound`: `{"uri":"…"}` in both eras.
    pub fn data(&self) -> Option<Bytes> {
        match self {
            McpError::UnsupportedVersion { requested } => {
                Some(crate::rescue::unsupported_version_data(requested))
            }
            McpError::ResourceNotFound { uri, .. } => {
                let mut out = BytesMut::with_capacity(16 + uri.len());
                out.put_slice(b"{\"uri\":");
                json::put_str(&mut out, uri);
                out.put_u8(b'}');
                Some(out.freeze())
            }
            _ => None,
        }
    }
}

/// The method table: one instance per server, shared by every transport.
#[derive(Debug)]
pub struct Dispatcher {
    config: DispatcherConfig,
    invoker: Arc<Invoker>,
    /// Federated reads (`bos/source-results/v1`), sized by the advertised limits.
    federation: Arc<Federation>,
    /// Where call records go (disabled by default).
    audit: Audit,
    /// Source errors of federated reads are counted here.
    metrics: Option<Arc<crate::metrics::Metrics>>,
    /// Signs and verifies BOS context handles (`None`: the platform tools answer "not
    /// configured").
    bos_key: Option<crate::bos::HandleKey>,
    /// JSON computed once from `config`: capabilities, serverInfo, era suffixes, discover.
    prepared: lifecycle::Prepared,
    /// Who answers the `ask_{agentId}` tools (the concentrator, wired in once it exists).
    agents: agents::Asker,
}

impl Dispatcher {
    /// A dispatcher calling downstreams through `invoker`.
    pub fn new(config: DispatcherConfig, invoker: Arc<Invoker>) -> Self {
        let prepared = lifecycle::Prepared::new(&config);
        let advert = config.source_results.clone().unwrap_or_default();
        let bos_key = config
            .bos_handle_secret
            .as_deref()
            .map(|secret| crate::bos::HandleKey::new(secret.as_bytes()));
        // Provider pages count against the same answer budget as tool responses.
        let federation = Arc::new(
            Federation::new(FederationConfig {
                page_size: advert.page_size as usize,
                max_concurrent_sources: advert.max_concurrent_sources as usize,
                max_pages_per_source: config.federated_max_pages,
                max_records_per_call: config.federated_max_records,
                // `downstream_max_answer_bytes` bounds provider pages as it bounds tool answers.
                max_provider_body_bytes: invoker.config().max_response_bytes,
                ..FederationConfig::default()
            })
            .with_answer_budget(Arc::clone(invoker.answer_budget())),
        );
        Self {
            config,
            invoker,
            federation,
            audit: Audit::disabled(),
            metrics: None,
            bos_key,
            prepared,
            agents: agents::Asker::default(),
        }
    }

    /// Wires in who answers the `ask_{agentId}` tools (once; later calls are ignored).
    pub(crate) fn set_agents(&self, agents: Arc<dyn agents::AskAgent>) {
        let _ = self.agents.0.set(agents);
    }

    /// This dispatcher, counting federated source errors in `metrics`
    /// (`sluice_source_errors_total{code}`).
    pub(crate) fn with_metrics(mut self, metrics: Arc<crate::metrics::Metrics>) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// This dispatcher, recording every audited call to `audit`.
    pub(crate) fn with_audit(mut self, audit: Audit) -> Self {
        self.audit = audit;
        self
    }

    /// The configuration it was built with.
    pub fn config(&self) -> &DispatcherConfig {
        &self.config
    }

    /// Handles one request. `tools/call` awaits the downstream; dropping the future cancels it.
    pub async fn request(
        &self,
        scope: &Scope<'_>,
        method: &str,
        params: Option<&Payload<'_>>,
    ) -> Result<Reply, McpError> {
        let started = std::time::Instant::now();
        let outcome = match &scope.call.trace {
            None => self.audited(scope, method, params).await,
            Some(trace) => {
                let span = trace::open(trace, scope, method, params);
                let outcome = self.audited(scope, method, params).await;
                if let Some(span) = span {
                    trace::close(span, scope, &outcome);
                }
                outcome
            }
        };
        if let Some(metrics) = &self.metrics {
            metrics.mcp_operation(method, started.elapsed());
        }
        outcome
    }

    /// [`Dispatcher::request`] with its audit record.
    async fn audited(
        &self,
        scope: &Scope<'_>,
        method: &str,
        params: Option<&Payload<'_>>,
    ) -> Result<Reply, McpError> {
        if !self.audit.is_enabled() {
            return dispatch::request(self, scope, method, params).await;
        }
        let started = std::time::Instant::now();
        // Dropped before the record below is queued (the client went away): `cancelled`.
        let guard = crate::audit::CancelGuard::new(&self.audit, || {
            audit::cancelled_record(scope, method, params, started)
        });
        let outcome = dispatch::request(self, scope, method, params).await;
        // A streamed federated read records itself when its stream ends (`source_result_stream`).
        if !matches!(outcome, Ok(Reply::Federated(_))) {
            audit::record(&self.audit, scope, method, params, &outcome, started).await;
        }
        guard.disarm();
        outcome
    }

    /// Handles one client notification.
    pub fn notification(
        &self,
        scope: &Scope<'_>,
        method: &str,
        params: Option<&Payload<'_>>,
    ) -> NotificationEffect {
        dispatch::notification(scope, method, params)
    }

    /// The JSON of a server→client notification `notifications/tools/list_changed` (a whole
    /// JSON-RPC message), for the given era (stateless-era listen streams add the subscription
    /// id — the listen request id's JSON text — in `_meta`).
    pub fn list_changed_message(&self, era: Era, subscription_id: Option<&[u8]>) -> Bytes {
        subscriptions::list_changed(ListChanged::Tools, era, subscription_id)
    }

    /// `notifications/{tools,prompts,resources}/list_changed` for any of the three lists.
    pub(crate) fn list_changed_message_for(
        &self,
        kind: ListChanged,
        era: Era,
        subscription_id: Option<&[u8]>,
    ) -> Bytes {
        subscriptions::list_changed(kind, era, subscription_id)
    }

    /// The first message of a listen stream: `notifications/subscriptions/acknowledged` with the
    /// honoured subset of `filter`, tagged with the listen request id (its JSON text).
    pub fn acknowledged_message(
        &self,
        filter: &SubscriptionFilter,
        subscription_id: &[u8],
    ) -> Bytes {
        subscriptions::acknowledged(filter, subscription_id)
    }

    /// The `result` object that ends a listen stream gracefully:
    /// `{"resultType":"complete","_meta":{subscriptionId, serverInfo}}` (no envelope).
    pub fn listen_result(&self, subscription_id: &[u8]) -> Bytes {
        subscriptions::listen_result(&self.prepared, subscription_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Era::{Handshake, Stateless};

    /// `(error, era of the answer) -> (status, code)` from the one table.
    fn check(err: McpError, era: Era, status: u16, code: i32) {
        let (got_status, got_code) = crate::rescue::classify(err.failure(era));
        assert_eq!(
            (got_status.as_u16(), got_code.0),
            (status, code),
            "{err:?} {era:?}"
        );
        assert_eq!(err.code().0, code, "{err:?}");
    }

    #[test]
    fn every_error_in_both_eras() {
        let not_found = || McpError::MethodNotFound("x".into());
        check(not_found(), Handshake, 200, -32601);
        check(not_found(), Stateless, 404, -32601);
        for era in [Handshake, Stateless] {
            check(McpError::InvalidParams("x".into()), era, 200, -32602);
            check(McpError::MissingMeta("k"), era, 400, -32602);
            let requested = "x".to_owned();
            check(McpError::UnsupportedVersion { requested }, era, 400, -32022);
            check(McpError::Internal, era, 200, -32603);
            let uri = "u".to_owned();
            let (handshake, stateless) = (Handshake, Stateless);
            check(
                McpError::ResourceNotFound {
                    uri: uri.clone(),
                    era: handshake,
                },
                era,
                200,
                -32002,
            );
            check(
                McpError::ResourceNotFound {
                    uri,
                    era: stateless,
                },
                era,
                200,
                -32602,
            );
        }
    }
}
