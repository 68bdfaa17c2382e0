//! `[server]`: the settings of the process — listen address, limits, timeouts, transports,
//! sessions, streams, secrets, and the `[server.source_results]`, `[server.audit]` and
//! `[server.log]` tables (their shapes are in `audit.rs` and `logging.rs`).
//!
//! Owns the serde shapes and their defaults. Must not check meaning (that is
//! `validate/server.rs`) or read the environment (that is `env.rs`).

use serde::Deserialize;

use super::{AuditSettings, LogSettings};

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
    /// Deepest nesting of arrays and objects in a JSON-RPC message body, the message object
    /// counting as one; a deeper body is refused as not JSON (400, -32700) before any handler
    /// sees it. At most 1024.
    pub max_json_depth: usize,
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
    /// Largest downstream answer read, in bytes (a tool response, or one federation provider
    /// page); a larger one (by `Content-Length` or as it streams in) is not read further and
    /// fails the call (502 on REST, an `isError` result in MCP, `source_unavailable` for a
    /// federated source).
    pub downstream_max_answer_bytes: usize,
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
    /// The A2A agent surface.
    pub a2a: super::A2aSettings,
    /// TLS termination; plain HTTP when absent.
    pub tls: Option<super::TlsSettings>,
    /// Failed authentication attempts allowed per source address and per key id.
    pub auth_failures: super::AuthFailureSettings,
    /// Most rate limit buckets this process tracks without `[cluster]` (each distinct
    /// tenant, rule and `per` values is one; about 100 bytes each). Past it, buckets whose
    /// time has passed are forgotten first; a call whose bucket still finds no room passes.
    pub rate_limit_max_buckets: usize,
    /// The audit trail.
    pub audit: AuditSettings,
    /// Process logs.
    pub log: LogSettings,
}

impl Default for ServerSettings {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:8080".to_owned(),
            admin_token: None,
            max_body_bytes: 4 * 1024 * 1024,
            max_json_depth: crate::jsonrpc::DEFAULT_MAX_DEPTH,
            max_connections: 10_000,
            drain_secs: 10,
            downstream_pool_idle_per_host: 64,
            downstream_connect_timeout_ms: 2_000,
            downstream_timeout_ms: 30_000,
            downstream_max_answer_bytes: 8 * 1024 * 1024,
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
            a2a: super::A2aSettings::default(),
            tls: None,
            auth_failures: super::AuthFailureSettings::default(),
            rate_limit_max_buckets: 100_000,
            audit: AuditSettings::default(),
            log: LogSettings::default(),
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
