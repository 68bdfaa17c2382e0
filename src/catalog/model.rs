//! The configuration model: what `sluice.toml` says, deserialized and not yet validated.
//!
//! Owns the serde shapes of the file. Must not resolve references or compute anything: that is
//! `validate` (every problem with its location) and `snapshot` (the immutable, resolved view).

use std::collections::BTreeMap;

use serde::Deserialize;

/// The whole configuration file.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Server settings (listen address, limits, admin token).
    #[serde(default)]
    pub server: ServerSettings,
    /// Several instances sharing sessions and stream routing through Redis.
    #[serde(default)]
    pub cluster: ClusterSettings,
    /// Tenants, in file order.
    #[serde(default, rename = "tenant")]
    pub tenants: Vec<Tenant>,
}

/// Server-wide settings.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerSettings {
    /// Address to bind, e.g. `127.0.0.1:8080`.
    pub listen: String,
    /// Bearer token required by `POST /admin/reload`; the endpoint is off when unset.
    pub admin_token: Option<String>,
    /// Largest request body accepted, in bytes (413 past it).
    pub max_body_bytes: usize,
    /// Most connections served at once; further accepts wait.
    pub max_connections: usize,
    /// Grace period for in-flight requests on shutdown, in seconds.
    pub drain_secs: u64,
    /// Downstream HTTP client pool: idle connections kept per host.
    pub downstream_pool_idle_per_host: usize,
    /// Downstream HTTP client: connect timeout in milliseconds.
    pub downstream_connect_timeout_ms: u64,
    /// Default downstream request timeout in milliseconds, when a tool sets none.
    pub downstream_timeout_ms: u64,
    /// How long a client may take to send a request head, in seconds: from accept for the first
    /// request (a connection that sends nothing is closed), from its first byte for later HTTP/1
    /// heads.
    pub header_read_timeout_secs: u64,
    /// How long a connection with no request in progress stays open, in seconds (HTTP/1
    /// keep-alive, HTTP/2 with no open stream; an open SSE stream is a request in progress).
    pub idle_connection_secs: u64,
    /// Longest pause between two chunks of a request body, in seconds (408 past it).
    pub body_read_timeout_secs: u64,
    /// Concurrent streams allowed per HTTP/2 connection.
    pub h2_max_concurrent_streams: u32,
    /// Browser origins allowed besides the server's own; any other `Origin` is refused (403).
    pub allowed_origins: Vec<String>,
    /// `Host` values served (`host`, `host:port`, `host:*`); any other `Host` is refused (421) on
    /// the MCP, legacy, REST and BOS endpoints. Empty: the host of `public_url`, plus
    /// `localhost`, `127.0.0.1` and `[::1]` when listening on a loopback or unspecified address.
    /// `["*"]`: any `Host`.
    pub allowed_hosts: Vec<String>,
    /// How handshake-era requests on `/runtime/{tenant}/{client}/mcp` are answered when the
    /// client accepts both media types: `"sse"` (default: a retained, resumable stream, priming
    /// at once within a session) or `"json"` (one JSON body). The stateless era and the BOS
    /// platform endpoint answer JSON unless the reply streams, whatever this says.
    pub post_framing: PostFraming,
    /// Most frames one SSE stream may hold queued for its connection (legacy `/sse`, GET,
    /// POST answers); full → a legacy POST is refused with 503 before it runs, a notification
    /// closes the connection so the client reconnects.
    pub stream_queue_messages: usize,
    /// Most bytes one SSE stream may hold queued for its connection (and per retention ring);
    /// full → as for `stream_queue_messages`.
    pub stream_queue_bytes: usize,
    /// Interval between `: keepalive` comments on idle SSE streams, in seconds.
    pub keepalive_secs: u64,
    /// Mint an `Mcp-Session-Id` on `initialize` (handshake era). When off, no session is
    /// created, GET and DELETE on the MCP endpoint answer 405, the legacy transport (which
    /// needs sessions) answers 404, and every request stands alone.
    pub sessions_enabled: bool,
    /// Refuse handshake-era requests other than `initialize` that carry no `Mcp-Session-Id`
    /// (400).
    pub require_session: bool,
    /// Serve SSE streams that are not the answer of one POST: the standalone GET stream and the
    /// legacy HTTP+SSE transport. When off, GET on the MCP endpoint answers 405 and the legacy
    /// `/sse` and `/messages` endpoints 404.
    pub sse_enabled: bool,
    /// A session unused this long is reclaimed (its id then answers 404), in seconds.
    pub session_idle_secs: u64,
    /// A session that never sent `notifications/initialized` is reclaimed after this many
    /// seconds.
    pub session_init_timeout_secs: u64,
    /// Most live sessions per tenant; `initialize` past it is refused (503).
    pub max_sessions_per_tenant: usize,
    /// Most live sessions per caller (tenant, client and caller id; every anonymous caller of a
    /// client is one caller); `initialize` past it is refused (429). Unset: 100, or the tenant
    /// cap when that is lower.
    pub max_sessions_per_caller: Option<usize>,
    /// How long a finished POST stream stays resumable, in seconds.
    pub retain_secs: u64,
    /// Most frames a stream retains for `Last-Event-ID` replay; older frames age out.
    pub retain_events: usize,
    /// This instance's name in event ids (`{instance}.{stream}.{seq}`); random per process when
    /// unset.
    pub instance_id: Option<String>,
    /// The public base URL clients reach this server at (`scheme://host[:port]`, no path), e.g.
    /// `https://rt.example.com`. Resource URLs in protected-resource metadata, JWT audiences and
    /// `WWW-Authenticate` challenges are built from it, so they are right behind proxies. When
    /// unset, `http://{listen}` is used.
    pub public_url: Option<String>,
    /// The HMAC-SHA256 key ("pepper") API key hashes are computed with. The environment variable
    /// `SLUICE_API_KEY_PEPPER` overrides it; required when any client has an API key.
    pub api_key_pepper: Option<String>,
    /// Most live SSE streams (GET streams and streaming POST answers) one session may hold at
    /// once; one more is refused with 429.
    pub max_streams_per_session: usize,
    /// Most downstream calls one tenant may have in flight at once; a call past it waits up to
    /// its timeout for a slot, then fails as a timeout.
    pub max_downstream_per_tenant: usize,
    /// Downstream answer bytes (tool responses and federation provider pages) the whole process
    /// holds at once; an answer that would take it past this fails at once ("server busy": 503
    /// on REST, an `isError` result in MCP, `source_unavailable` for a federated source). 0
    /// disables the budget.
    pub downstream_answer_budget_bytes: usize,
    /// Most pages read from one federated source when the source sets no `max_pages`; a source
    /// still returning a cursor then ends with `source_unavailable` (reason `page_limit`) and the
    /// result is partial.
    pub federated_max_pages: u32,
    /// Most records one federated read delivers when the tool sets no `max_records`; past it
    /// every unfinished source ends with `source_unavailable` (reason `record_limit`) and the
    /// result is partial.
    pub federated_max_records: u32,
    /// The HMAC key BOS context handles are signed with; the same on every instance (handles
    /// are valid wherever they are presented). `SLUICE_BOS_HANDLE_SECRET` overrides it; required
    /// (at least 32 bytes) when a tenant has `bos_context`s.
    pub bos_handle_secret: Option<String>,
    /// The `bos/source-results/v1` extension: advertised limits and contract page.
    pub source_results: SourceResultsSettings,
    /// The audit trail.
    pub audit: AuditSettings,
    /// Process logs.
    pub log: LogSettings,
}

/// `[cluster]`: running several instances behind one ingress without sticky sessions.
///
/// With `redis_url` set, session state lives in Redis (any instance validates, refreshes, caps
/// and terminates a session), messages for a stream held by another instance are routed to it
/// over Redis pub/sub, and a configuration reload on one instance makes every instance re-read
/// its configuration file. Without it everything is process-local. This instance's name on the
/// backplane is `[server] instance_id` (random per process when unset; must be unique).
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct ClusterSettings {
    /// `redis://[user:password@]host:port[/db]`. `SLUICE_REDIS_URL` overrides it (keep
    /// passwords out of the file). Unreachable at start → the server refuses to start.
    pub redis_url: Option<String>,
    /// Namespace of every key and channel, so several deployments can share one Redis.
    pub key_prefix: String,
    /// How many instances the deployment runs. More than one without `redis_url` logs a
    /// warning at start: sessions and streams would not be shared.
    pub expected_instances: u32,
    /// Bound on each Redis command, connecting included, in milliseconds; past it the request
    /// that needed it is answered 503 instead of waiting.
    pub command_timeout_ms: u64,
    /// Lifetime of a stream-holder registration its instance stopped refreshing (it died), in
    /// seconds; the holder refreshes every registration every third of it.
    pub holder_ttl_secs: u64,
}

impl Default for ClusterSettings {
    fn default() -> Self {
        Self {
            redis_url: None,
            key_prefix: "default".to_owned(),
            expected_instances: 1,
            command_timeout_ms: 500,
            holder_ttl_secs: 30,
        }
    }
}

/// The `bos/source-results/v1` advertisement (`capabilities.experimental`) and its limits.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct SourceResultsSettings {
    /// Advertise the extension and stream federated reads that opt in (when off, they always
    /// answer with one JSON response).
    pub enabled: bool,
    /// Most records per streamed page.
    pub page_size: u32,
    /// Most source reads in flight per invocation.
    pub max_concurrent_sources: u32,
    /// The advertised `contractUri`. A path (starting with `/`) is served by this server (the
    /// contract page, at `/contracts/bos-source-results-v1`) and advertised under `public_url`;
    /// anything else is advertised as is.
    pub contract_uri: String,
}

impl Default for SourceResultsSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            page_size: 100,
            max_concurrent_sources: 8,
            contract_uri: "/contracts/bos-source-results-v1".to_owned(),
        }
    }
}

/// Where audit records go and what happens when the writer falls behind.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct AuditSettings {
    /// `stdout`, `file` (then `path` is required) or `off`.
    pub sink: AuditSink,
    /// The file records are appended to when `sink = "file"`.
    pub path: Option<String>,
    /// Records queued for the background writer at most.
    pub queue: usize,
    /// What a call does when the queue is full: wait for room (`block`) or drop the record and
    /// count it (`drop`, the `sluice_audit_dropped_total` metric).
    pub when_full: AuditWhenFull,
}

impl Default for AuditSettings {
    fn default() -> Self {
        Self {
            sink: AuditSink::Off,
            path: None,
            queue: 8192,
            when_full: AuditWhenFull::Drop,
        }
    }
}

/// Audit destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum AuditSink {
    /// No audit trail.
    #[default]
    Off,
    /// JSON lines on standard output.
    Stdout,
    /// JSON lines appended to `path`.
    File,
}

/// Full-queue policy of the audit writer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum AuditWhenFull {
    /// The call waits until the writer has room (no record is ever lost).
    Block,
    /// The record is dropped and counted.
    #[default]
    Drop,
}

/// Process log settings (`RUST_LOG` overrides `level`).
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct LogSettings {
    /// `text` (human-readable) or `json` (one object per line).
    pub format: LogFormat,
    /// A `tracing` filter, e.g. `info` or `sluice=debug,hyper=warn`.
    pub level: String,
    /// A warning a request can repeat (downstream failure, foreign session, store
    /// unreachable…) is printed at most once per tenant and kind in this many milliseconds; the
    /// next printed one carries `suppressed`, how many were dropped. 0 prints every one.
    pub repeat_interval_ms: u64,
}

impl Default for LogSettings {
    fn default() -> Self {
        Self {
            format: LogFormat::Text,
            level: "info".to_owned(),
            repeat_interval_ms: 1_000,
        }
    }
}

/// How handshake-era POST requests are framed (`[server] post_framing`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum PostFraming {
    /// An SSE stream (the runtime's documented answer), registered for resumption.
    #[default]
    Sse,
    /// One JSON body whenever the reply is ready (the client must accept JSON, as it must).
    Json,
}

/// Log line format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

impl Default for ServerSettings {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:8080".to_owned(),
            admin_token: None,
            max_body_bytes: 4 * 1024 * 1024,
            max_connections: 10_000,
            drain_secs: 10,
            downstream_pool_idle_per_host: 64,
            downstream_connect_timeout_ms: 2_000,
            downstream_timeout_ms: 30_000,
            header_read_timeout_secs: 10,
            idle_connection_secs: 60,
            body_read_timeout_secs: 30,
            h2_max_concurrent_streams: 256,
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            post_framing: PostFraming::Sse,
            stream_queue_messages: 64,
            stream_queue_bytes: 4 * 1024 * 1024,
            keepalive_secs: 15,
            sessions_enabled: true,
            require_session: false,
            sse_enabled: true,
            session_idle_secs: 30 * 60,
            session_init_timeout_secs: 60,
            max_sessions_per_tenant: 10_000,
            max_sessions_per_caller: None,
            retain_secs: 60,
            retain_events: 256,
            instance_id: None,
            public_url: None,
            api_key_pepper: None,
            bos_handle_secret: None,
            max_streams_per_session: 8,
            max_downstream_per_tenant: 512,
            downstream_answer_budget_bytes: 256 * 1024 * 1024,
            federated_max_pages: 100,
            federated_max_records: 10_000,
            source_results: SourceResultsSettings::default(),
            audit: AuditSettings::default(),
            log: LogSettings::default(),
        }
    }
}

/// A tenant: its client applications, toolsets and assignments.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tenant {
    /// Tenant id, a path segment: `[A-Za-z0-9._-]{1,64}`.
    pub id: String,
    /// Client applications of this tenant.
    #[serde(default, rename = "client")]
    pub clients: Vec<ClientApp>,
    /// Toolsets of this tenant.
    #[serde(default, rename = "toolset")]
    pub toolsets: Vec<Toolset>,
    /// Which toolsets each client application sees.
    #[serde(default, rename = "assignment")]
    pub assignments: Vec<Assignment>,
    /// How callers of this tenant authenticate.
    #[serde(default)]
    pub auth: TenantAuth,
    /// Contexts callers may act in on the BOS platform endpoint (`/mcp/apps/bos/platform`).
    #[serde(default, rename = "bos_context")]
    pub bos_contexts: Vec<crate::bos::BosContextConfig>,
}

/// A tenant's authentication settings. A tenant must either accept some credential (an API key
/// of one of its clients, or JWTs from `jwt`) or say `anonymous = true` explicitly.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct TenantAuth {
    /// Serve requests that carry no credential, as the caller `anonymous` (development only;
    /// a credential that is presented is still checked).
    pub anonymous: bool,
    /// Authorization server issuers published in protected-resource metadata
    /// (`authorization_servers`).
    pub authorization_servers: Vec<String>,
    /// Scopes published in protected-resource metadata (keep it minimal; privileged scopes are
    /// asked for through 403 challenges).
    pub scopes_supported: Vec<String>,
    /// Scopes every request to this tenant's endpoints needs (also named in 401 challenges).
    pub required_scopes: Vec<String>,
    /// JWT bearer tokens from an OAuth authorization server.
    pub jwt: Option<JwtSettings>,
}

/// How JWT bearer tokens are validated.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JwtSettings {
    /// The exact `iss` tokens must carry.
    pub issuer: String,
    /// Accepted `aud` values; empty (the default) means the exact public URLs of the endpoint
    /// the token is presented to (`…/runtime/{tenant}/{client}/mcp`, `…/sse`, `…/messages`,
    /// `…/tools`), so a token for one client application cannot be replayed on another's.
    #[serde(default)]
    pub audiences: Vec<String>,
    /// Accepted signature algorithms (`RS256`, `RS384`, `RS512`, `PS256`, `PS384`, `PS512`,
    /// `ES256`, `ES384`, `EdDSA`); `none` and `HS*` are refused at load.
    #[serde(default = "default_algorithms")]
    pub algorithms: Vec<String>,
    /// A JWKS file on disk.
    pub jwks_file: Option<String>,
    /// A JWKS URL (fetched at start, cached, refetched on an unknown `kid` at most once a
    /// minute; the last good set is kept when a fetch fails).
    pub jwks_url: Option<String>,
    /// Clock skew allowed on `exp` and `nbf`, in seconds.
    #[serde(default = "default_leeway")]
    pub leeway_secs: u64,
    /// When set, this claim must equal the client application id of the path (for issuers that
    /// cannot put the endpoint URL in `aud`), e.g. `azp` or `client_id`.
    pub client_claim: Option<String>,
}

fn default_algorithms() -> Vec<String> {
    ["RS256", "PS256", "ES256", "EdDSA"]
        .into_iter()
        .map(str::to_owned)
        .collect()
}

fn default_leeway() -> u64 {
    60
}

/// A client application (an AI client or agent registered with the tenant).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientApp {
    /// Client id, a path segment: `[A-Za-z0-9._-]{1,64}`.
    pub id: String,
    /// Static API keys of this client application (several for rotation).
    #[serde(default, rename = "api_key")]
    pub api_keys: Vec<ApiKey>,
    /// The client application's system prompt.
    pub system_prompt: Option<String>,
}

/// One static API key. Clients present `rtk_{id}_{secret}`; the configuration keeps only
/// `hash` = hex HMAC-SHA256(pepper, secret) (`sluice key new` prints both).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiKey {
    /// The public key id (12 characters of lowercase base32), unique within the tenant.
    pub id: String,
    /// Hex HMAC-SHA256 of the secret under the server's pepper (64 hex digits).
    pub hash: String,
    /// The caller name audit records and sessions show (`apikey:{id}` when unset).
    pub principal: Option<String>,
    /// Scopes this key grants; unset grants every scope.
    pub scopes: Option<Vec<String>>,
    /// When the key stops working (a TOML date-time, e.g. `2027-01-01T00:00:00Z`).
    pub expires_at: Option<toml::value::Datetime>,
}

/// A toolset: tools plus the prompt and correlation strategy they share.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Toolset {
    /// Toolset id, unique within the tenant.
    pub id: String,
    /// Human-readable description (used for the resource and prompt descriptions).
    pub description: Option<String>,
    /// The toolset's default system prompt.
    pub system_prompt: Option<String>,
    /// What correlation id reaches the downstream.
    #[serde(default)]
    pub correlation: Correlation,
    /// The tools.
    #[serde(default, rename = "tool")]
    pub tools: Vec<Tool>,
}

/// Correlation propagation settings of a toolset.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Correlation {
    /// The strategy.
    pub strategy: CorrelationStrategy,
    /// The header the downstream receives it in.
    pub header: String,
}

impl Default for Correlation {
    fn default() -> Self {
        Self {
            strategy: CorrelationStrategy::ExecutionId,
            header: "X-Correlation-Id".to_owned(),
        }
    }
}

/// What, if anything, is forwarded to the downstream as a correlation id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum CorrelationStrategy {
    /// Nothing is forwarded.
    None,
    /// The execution id the runtime generated for the call.
    #[default]
    ExecutionId,
    /// The accepted external id when the client sent one, else the execution id.
    ExternalOrExecutionId,
}

/// A toolset assigned to a client application.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Assignment {
    /// The client application id.
    pub client: String,
    /// The toolset id.
    pub toolset: String,
    /// Whether the client application's system prompt joins the effective prompt.
    #[serde(default)]
    pub include_client_prompt: bool,
    /// An assignment-specific prompt.
    pub custom_prompt: Option<String>,
    /// How the custom prompt combines with the default chain.
    #[serde(default)]
    pub custom_prompt_mode: PromptMode,
}

/// How an assignment's custom prompt combines with the default chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum PromptMode {
    /// After the default chain.
    #[default]
    Append,
    /// Instead of the default chain.
    Override,
}

/// A tool: one business API operation exposed to AI clients.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tool {
    /// Tool name: `[A-Za-z0-9_.-]{1,128}`, unique within the tenant's visible set.
    pub name: String,
    /// What the tool does (always present on the wire; empty string when unset).
    #[serde(default)]
    pub description: String,
    /// Unpublished tools are invisible.
    #[serde(default = "yes")]
    pub published: bool,
    /// How much of the input schema `tools/list` shows.
    #[serde(default)]
    pub schema_mode: SchemaMode,
    /// Whether requests and responses of this tool are logged for audit.
    #[serde(default)]
    pub log_payloads: bool,
    /// A scope callers need to call this tool (besides the tenant's `required_scopes`); a
    /// caller without it gets 403 `insufficient_scope`.
    pub scope: Option<String>,
    /// Whether downstream response fields without an output rule are kept (`true`) or dropped.
    #[serde(default)]
    pub keep_unmapped_output: bool,
    /// Where the call goes.
    pub downstream: Downstream,
    /// Input field rules (exposed argument → downstream request).
    #[serde(default, rename = "input")]
    pub inputs: Vec<FieldRule>,
    /// Output field rules (downstream response → exposed result).
    #[serde(default, rename = "output")]
    pub outputs: Vec<FieldRule>,
}

fn yes() -> bool {
    true
}

/// How much of a tool's input schema is published in listings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum SchemaMode {
    /// Descriptions, formats and enums included.
    #[default]
    Full,
    /// Structure only: names, nesting, items, additionalProperties, required.
    DataStructureOnly,
    /// Only the `_schema_discovery` placeholder; discovery required before use.
    Lazy,
}

/// The downstream a tool calls.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Downstream {
    /// An HTTP JSON API.
    Rest(RestDownstream),
    /// A federated read: the same query fanned out to several provider sources, their records
    /// streamed page by page (`bos/source-results/v1`) and merged by identity.
    Federated(FederatedDownstream),
}

/// A federated read over several sources. The tool's input rules name the query parameters
/// every source receives (`location` defaults to the query for these tools).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FederatedDownstream {
    /// The record type every source returns, e.g. `person`.
    pub record_type: String,
    /// The operation deadline in milliseconds: sources still running then are cancelled and
    /// reported `source_timeout`; delivered records are kept.
    pub deadline_ms: Option<u64>,
    /// Most records this read delivers, all sources together (default `[server]
    /// federated_max_records`); past it every unfinished source ends with `source_unavailable`
    /// (reason `record_limit`), delivered records are kept and the result is partial.
    pub max_records: Option<u32>,
    /// The sources, read concurrently (at most `maxConcurrentSources` at once).
    #[serde(default, rename = "source")]
    pub sources: Vec<Source>,
}

/// One provider source of a federated read.
///
/// Provider protocol: `GET {url}?{arguments as query}&cursor=…&limit=…` answers
/// `{"records":[…], "next_cursor": "…" | null}`; each record carries `source_identity`,
/// `external_id`, `record_type`, `observed_at`, optional `version`, and `fields`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Source {
    /// The kind of system, e.g. `crm`.
    pub source_type: String,
    /// This source's identity; every record it returns must name it.
    pub source_identity: String,
    /// The provider endpoint (`http` or `https`).
    pub url: String,
    /// Per-source timeout in milliseconds for the whole read (all its pages).
    pub timeout_ms: Option<u64>,
    /// A credential sent to this provider only (never the client's).
    pub credential: Option<SourceCredential>,
    /// `limit` asked of the provider per page (default: the extension's page size).
    pub page_limit: Option<u32>,
    /// Most provider pages read from this source (default `[server] federated_max_pages`); a
    /// source still returning a cursor then ends with `source_unavailable` (reason
    /// `page_limit`), its delivered pages kept and the result partial.
    pub max_pages: Option<u32>,
    /// Capabilities published in each record's provenance (default `["read"]`).
    #[serde(default = "read_capability")]
    pub capabilities: Vec<String>,
    /// How provider fields map to the federated record.
    #[serde(default)]
    pub fields: SourceFields,
}

fn read_capability() -> Vec<String> {
    vec!["read".to_owned()]
}

/// A header carrying this source's credential, e.g. `Authorization: Bearer …`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceCredential {
    /// The header name.
    pub header: String,
    /// The header value.
    pub value: String,
}

/// Provider field paths (dotted, inside the record's `fields`) of the federated record's
/// fields; an unset or absent field is `null`.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct SourceFields {
    /// → `display_name`.
    pub display_name: Option<String>,
    /// → `email` (identity: compared lowercased and trimmed).
    pub email: Option<String>,
    /// → `phone` (identity: compared as digits, with a leading `+` kept).
    pub phone: Option<String>,
    /// → `lifecycle`.
    pub lifecycle: Option<String>,
    /// `attributes` name → provider field path.
    #[serde(default)]
    pub attributes: BTreeMap<String, String>,
}

/// A REST downstream.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RestDownstream {
    /// HTTP method (`GET`, `POST`, …).
    pub method: String,
    /// URL template with `{name}` path parameters, e.g. `http://api/customers/{id}`.
    pub url: String,
    /// Static headers sent on every call.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Per-call timeout in milliseconds (server default when unset).
    pub timeout_ms: Option<u64>,
}

/// One field mapping between the exposed (MCP) contract and the downstream (source) contract.
///
/// Paths are dotted segments with `[*]` array positions: `customer.addresses[*].city`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FieldRule {
    /// Path in the downstream payload.
    pub source: String,
    /// Path in the exposed (MCP) payload.
    pub exposed: String,
    /// JSON type of the leaf.
    #[serde(rename = "type", default)]
    pub ty: FieldType,
    /// Item type when `ty` is `array` (default `string`).
    pub items: Option<FieldType>,
    /// Whether the field is required.
    #[serde(default)]
    pub required: bool,
    /// Description (Full schema mode only).
    pub description: Option<String>,
    /// Format hint, e.g. `date-time` (Full schema mode only).
    pub format: Option<String>,
    /// Allowed values (Full schema mode only).
    #[serde(rename = "enum")]
    pub enum_values: Option<Vec<toml::Value>>,
    /// A JSON Schema passed through unchanged as `additionalProperties` of an object field.
    pub additional_properties: Option<toml::Value>,
    /// Where an input field goes in the downstream request (ignored on output rules).
    #[serde(default)]
    pub location: Location,
}

/// JSON type of a field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum FieldType {
    /// A JSON string.
    #[default]
    String,
    /// A JSON integer.
    Integer,
    /// Any JSON number.
    Number,
    /// `true` or `false`.
    Boolean,
    /// A JSON object.
    Object,
    /// A JSON array.
    Array,
}

/// Where an input field is placed in the downstream request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Location {
    /// A `{name}` segment of the URL template (the source path is the parameter name).
    Path,
    /// A query parameter.
    Query,
    /// A request header.
    Header,
    /// The JSON body, at the source path.
    #[default]
    Body,
}
