//! What `serve` is given: [`ServeConfig`], built from the catalog's `[server]` settings
//! ([`ServeConfig::from_catalog`]) and the file's `[cluster]` section
//! ([`ServeConfig::with_cluster`]), and the [`TestHooks`] behind the test-only routes.
//!
//! Owns the translation of file settings into the settings of each part (limits, invoker,
//! dispatcher, sessions, streams, Redis). Must not start anything or read the environment: the
//! configuration arrives with its overrides applied (`crate::config`'s `env.rs`).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

use crate::catalog::Catalog;
use crate::config::{
    A2aSettings, AuditSettings, AuthFailureSettings, ClusterSettings, Config, PostFraming,
    ServerSettings, TelemetrySettings, TlsSettings,
};
use crate::http::Limits;
use crate::invoke::InvokerConfig;
use crate::jsonrpc;
use crate::mcp::{DispatcherConfig, SourceResultsAdvert};
use crate::session::{RedisConfig, SessionConfig};
use crate::transport;
use crate::transport::stream::StreamConfig;

/// Everything `serve` needs besides the listener.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// Connection and request limits (each documents what happens when it is hit).
    pub limits: Limits,
    /// Limits of JSON-RPC message parsing (`[server] max_json_depth`; deeper → 400, -32700).
    pub json_limits: jsonrpc::Limits,
    /// Interval between `: keepalive` comments on idle SSE streams
    /// ([`transport::DEFAULT_SSE_KEEPALIVE`]).
    pub sse_keepalive: Duration,
    /// Browser origins allowed besides the server's own; any other `Origin` → 403.
    pub allowed_origins: Vec<String>,
    /// `Host` values served; any other → 421 (see [`crate::http::guard::Guard::new`]: empty is the default, `*`
    /// turns the check off).
    pub allowed_hosts: Vec<String>,
    /// How handshake-era POST requests are answered (`[server] post_framing`, SSE by default).
    pub post_framing: PostFraming,
    /// The live catalog the surfaces read (an empty one by default).
    pub catalog: Arc<Catalog>,
    /// The bearer token `POST /admin/reload` requires; the endpoint answers 404 when unset.
    pub admin_token: Option<String>,
    /// Downstream client settings.
    pub invoker: InvokerConfig,
    /// Server identity and listing settings of the MCP dispatcher.
    pub dispatcher: DispatcherConfig,
    /// Mint sessions on `initialize` (`[server] sessions_enabled`).
    pub sessions_enabled: bool,
    /// Refuse handshake-era requests without `Mcp-Session-Id` (400).
    pub require_session: bool,
    /// Serve the standalone GET stream and the legacy `/sse` transport (405 otherwise).
    pub sse_enabled: bool,
    /// Session limits: idle expiry, init timeout, per-tenant cap.
    pub sessions: SessionConfig,
    /// Stream registry settings: instance id, retention; its `keepalive` is taken from
    /// [`ServeConfig::sse_keepalive`].
    pub streams: StreamConfig,
    /// The public base URL (`scheme://host[:port]`) challenges and resource metadata name;
    /// `http://{bound address}` when unset.
    pub public_url: Option<String>,
    /// The HMAC key API key hashes are computed with.
    pub api_key_pepper: Option<Vec<u8>>,
    /// TLS termination (`[server.tls]`); plain HTTP when `None`. The files are read at start
    /// (unreadable → [`super::serve`] fails) and again after every catalog reload.
    pub tls: Option<TlsSettings>,
    /// OpenTelemetry traces (`[telemetry]`, read once at start like `[cluster]`); off by default.
    pub telemetry: TelemetrySettings,
    /// Failed authentication attempts allowed per address and key id (`[server.auth_failures]`).
    pub auth_failures: AuthFailureSettings,
    /// Most process-local rate limit buckets (`[server] rate_limit_max_buckets`).
    pub rate_limit_max_buckets: usize,
    /// The audit trail.
    pub audit: AuditSettings,
    /// The A2A agent surface (`[server.a2a]`).
    pub a2a: A2aSettings,
    /// Redis for sessions and stream routing shared by several instances (`[cluster]`);
    /// `None`: process-local. Unreachable at start → [`super::serve`] fails.
    pub cluster: Option<RedisConfig>,
    /// `[cluster] expected_instances`: more than one without `cluster` logs a warning.
    pub expected_instances: u32,
    /// Test-only routes under `/__test/` (see [`TestHooks`]); `None` in production.
    #[doc(hidden)]
    pub test_hooks: Option<Arc<TestHooks>>,
}

impl Default for ServeConfig {
    fn default() -> Self {
        Self {
            limits: Limits::default(),
            json_limits: jsonrpc::Limits::DEFAULT,
            sse_keepalive: transport::DEFAULT_SSE_KEEPALIVE,
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            post_framing: PostFraming::Sse,
            catalog: Arc::new(empty_catalog()),
            admin_token: None,
            invoker: InvokerConfig::default(),
            dispatcher: DispatcherConfig::default(),
            sessions_enabled: true,
            require_session: false,
            sse_enabled: true,
            sessions: SessionConfig::default(),
            streams: StreamConfig::default(),
            public_url: None,
            api_key_pepper: None,
            tls: None,
            telemetry: TelemetrySettings::default(),
            auth_failures: AuthFailureSettings::default(),
            rate_limit_max_buckets: crate::ratelimit::DEFAULT_MAX_BUCKETS,
            audit: AuditSettings::default(),
            a2a: A2aSettings::default(),
            cluster: None,
            expected_instances: 1,
            test_hooks: None,
        }
    }
}

impl ServeConfig {
    /// The configuration the `[server]` settings of the catalog's file describe (with the
    /// environment's overrides, which [`crate::config::load`] applied: the API key pepper and
    /// the BOS handle secret).
    pub fn from_catalog(catalog: Arc<Catalog>) -> Self {
        let snapshot = catalog.current();
        let settings: &ServerSettings = snapshot.settings();
        Self {
            limits: Limits {
                max_connections: settings.max_connections,
                max_body_bytes: settings.max_body_bytes,
                drain_grace: Duration::from_secs(settings.drain_secs),
                header_read_timeout: Duration::from_secs(settings.header_read_timeout_secs),
                idle_timeout: Duration::from_secs(settings.idle_connection_secs),
                body_read_timeout: Duration::from_secs(settings.body_read_timeout_secs),
                h2_max_concurrent_streams: settings.h2_max_concurrent_streams,
            },
            json_limits: jsonrpc::Limits {
                max_depth: settings.max_json_depth,
            },
            sse_keepalive: Duration::from_secs(settings.keepalive_secs),
            allowed_origins: settings.allowed_origins.clone(),
            allowed_hosts: settings.allowed_hosts.clone(),
            post_framing: settings.post_framing,
            admin_token: settings.admin_token.clone(),
            invoker: InvokerConfig::from_server_settings(settings),
            dispatcher: DispatcherConfig {
                source_results: settings
                    .source_results
                    .enabled
                    .then(|| SourceResultsAdvert {
                        page_size: settings.source_results.page_size.max(1),
                        max_concurrent_sources: settings
                            .source_results
                            .max_concurrent_sources
                            .max(1),
                        contract_uri: settings.source_results.contract_uri.clone(),
                    }),
                bos_handle_secret: settings.bos_handle_secret.clone(),
                federated_max_pages: settings.federated_max_pages as usize,
                federated_max_records: settings.federated_max_records as usize,
                ..DispatcherConfig::default()
            },
            sessions_enabled: settings.sessions_enabled,
            require_session: settings.require_session,
            sse_enabled: settings.sse_enabled,
            sessions: SessionConfig {
                idle: Duration::from_secs(settings.session_idle_secs),
                init_timeout: Duration::from_secs(settings.session_init_timeout_secs),
                max_per_tenant: settings.max_sessions_per_tenant,
                max_per_caller: settings.max_sessions_per_caller.unwrap_or(
                    crate::session::DEFAULT_MAX_SESSIONS_PER_CALLER
                        .min(settings.max_sessions_per_tenant),
                ),
            },
            streams: StreamConfig {
                instance: settings.instance_id.clone(),
                retain: Duration::from_secs(settings.retain_secs),
                retain_events: settings.retain_events,
                max_per_session: settings.max_streams_per_session,
                queue_messages: settings.stream_queue_messages.max(1),
                queue_bytes: settings.stream_queue_bytes.max(1),
                ..StreamConfig::default()
            },
            public_url: settings.public_url.clone(),
            api_key_pepper: settings.api_key_pepper.clone().map(String::into_bytes),
            tls: settings.tls.clone(),
            telemetry: TelemetrySettings::default(),
            auth_failures: settings.auth_failures.clone(),
            rate_limit_max_buckets: settings.rate_limit_max_buckets.max(1),
            audit: settings.audit.clone(),
            a2a: settings.a2a.clone(),
            catalog,
            cluster: None,
            expected_instances: 1,
            test_hooks: None,
        }
    }

    /// The same with the file's `[cluster]` section applied (the catalog snapshot does not
    /// carry it: it is read once, at start; [`crate::config::load`] has applied
    /// `SLUICE_REDIS_URL` to it).
    pub fn with_cluster(mut self, cluster: &ClusterSettings) -> Self {
        self.cluster = cluster.redis_url.clone().map(|url| RedisConfig {
            command_timeout: Duration::from_millis(cluster.command_timeout_ms.max(1)),
            holder_ttl: Duration::from_secs(cluster.holder_ttl_secs.max(3)),
            refresh_after_percent: cluster.session_refresh_after_percent,
            session_cache: Duration::from_millis(cluster.session_cache_ms),
            ..RedisConfig::new(url).with_prefix(cluster.key_prefix.clone())
        });
        self.expected_instances = cluster.expected_instances;
        self
    }

    /// The same with the file's `[telemetry]` section (read once, at start).
    pub fn with_telemetry(mut self, telemetry: &TelemetrySettings) -> Self {
        self.telemetry = telemetry.clone();
        self
    }
}

/// A catalog with no tenants: every tenant-scoped route answers 404.
fn empty_catalog() -> Catalog {
    match Catalog::from_config(&Config::default()) {
        Ok(catalog) => catalog,
        // An empty configuration has nothing to be wrong with.
        Err(report) => unreachable!("the empty configuration is invalid: {report}"),
    }
}

/// Hooks behind the test-only routes, so integration tests can hold a request in flight
/// without sleeping:
/// - `POST /__test/hold`: notifies `entered`, waits for `release`, then answers 200 `released`.
/// - `GET /__test/stream`: an SSE stream that sends one frame and then stays open until the
///   server drains.
#[doc(hidden)]
#[derive(Debug, Default)]
pub struct TestHooks {
    /// Notified when a `/__test/hold` request has arrived.
    pub entered: Notify,
    /// Notify to let a held request answer.
    pub release: Notify,
}
