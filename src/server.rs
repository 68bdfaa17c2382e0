//! The composition root: wires HTTP routes to the surfaces and runs the listener.
//!
//! Owns [`ServeConfig`] and [`serve`]; every route of DESIGN.md §4 is dispatched here, and routes
//! whose surface is not built yet answer a clear JSON error (501). Must not implement any
//! surface itself: it only connects [`crate::http`] to [`crate::transport`] and friends.
//!
//! With `[cluster] redis_url` it also wires the shared parts (DESIGN.md §5) through
//! `server/cluster.rs`: the Redis session store and backplane, and one cluster task per
//! instance that keeps this instance's stream-holder registrations fresh (one pipelined round
//! trip per refresh, for every stream) and relays configuration reloads between instances.

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderValue, Request, Response, StatusCode};
use hyper::body::Incoming;
use tokio::sync::{broadcast, mpsc, Notify};

use crate::access::{Access, Admitted, Endpoint};
use crate::admin;
use crate::audit::Audit;
use crate::auth::Authenticator;
use crate::config::{AuditSettings, ClusterSettings, Config, PostFraming, ServerSettings};
use crate::catalog::Catalog;
use crate::http::cors::{self, Policy};
use crate::http::guard::Guard;
use crate::http::response::{self, Body};
use crate::http::router::{self, Route};
use crate::http::{server, Drain, Error, Limits};
use crate::invoke::correlation::external_from_headers;
use crate::invoke::{Invoker, InvokerConfig, EXTERNAL_CORRELATION_ID_HEADER};
use crate::log_limit::{warn_limited, Kind};
use crate::mcp::{Dispatcher, DispatcherConfig, Era, ListChanged, SourceResultsAdvert};
use crate::metrics::{MethodLabel, Metrics, RouteLabel};
use crate::rest::Rest;
use crate::session::{Bus, RedisConfig, SessionConfig, Sessions};
use crate::transport::stream::{
    spawn_janitor, StreamConfig, StreamRegistry, DEFAULT_SWEEP_INTERVAL,
};
use crate::transport::{self, legacy_sse, streamable, Transport};

mod cluster;
use cluster::{cluster_task, connect_cluster};

/// Everything `serve` needs besides the listener.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// Connection and request limits (each documents what happens when it is hit).
    pub limits: Limits,
    /// Interval between `: keepalive` comments on idle SSE streams
    /// ([`transport::DEFAULT_SSE_KEEPALIVE`]).
    pub sse_keepalive: Duration,
    /// Browser origins allowed besides the server's own; any other `Origin` → 403.
    pub allowed_origins: Vec<String>,
    /// `Host` values served; any other → 421 (see [`Guard::new`]: empty is the default, `*`
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
    /// The audit trail.
    pub audit: AuditSettings,
    /// Redis for sessions and stream routing shared by several instances (`[cluster]`);
    /// `None`: process-local. Unreachable at start → [`serve`] fails.
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
            audit: AuditSettings::default(),
            cluster: None,
            expected_instances: 1,
            test_hooks: None,
        }
    }
}

impl ServeConfig {
    /// The configuration the `[server]` settings of the catalog's file describe.
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
                bos_handle_secret: std::env::var("SLUICE_BOS_HANDLE_SECRET")
                    .ok()
                    .or_else(|| settings.bos_handle_secret.clone()),
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
            api_key_pepper: std::env::var("SLUICE_API_KEY_PEPPER")
                .ok()
                .or_else(|| settings.api_key_pepper.clone())
                .map(String::into_bytes),
            audit: settings.audit.clone(),
            catalog,
            cluster: None,
            expected_instances: 1,
            test_hooks: None,
        }
    }

    /// The same with the file's `[cluster]` section applied (the catalog snapshot does not
    /// carry it: it is read once, at start). `SLUICE_REDIS_URL` overrides `redis_url`.
    pub fn with_cluster(mut self, cluster: &ClusterSettings) -> Self {
        let url = std::env::var("SLUICE_REDIS_URL")
            .ok()
            .filter(|url| !url.is_empty())
            .or_else(|| cluster.redis_url.clone());
        self.cluster = url.map(|url| RedisConfig {
            command_timeout: Duration::from_millis(cluster.command_timeout_ms.max(1)),
            holder_ttl: Duration::from_secs(cluster.holder_ttl_secs.max(3)),
            ..RedisConfig::new(url).with_prefix(cluster.key_prefix.clone())
        });
        self.expected_instances = cluster.expected_instances;
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

/// State shared by every request (read-only after start).
struct State {
    mcp: Arc<Transport>,
    rest: Rest,
    access: Arc<Access>,
    metrics: Arc<Metrics>,
    catalog: Arc<Catalog>,
    admin_token: Option<String>,
    drain: Drain,
    test_hooks: Option<Arc<TestHooks>>,
    /// The path the `bos/source-results/v1` contract page is served at, when it is local.
    contract_path: Option<String>,
    /// The SSE totals already added to `metrics` (see `refresh_gauges`).
    sse_seen: std::sync::Mutex<(u64, u64)>,
}

/// Serves on an already-bound listener until `shutdown` resolves, then drains: new connections
/// are refused, in-flight requests get `config.limits.drain_grace` to finish, streaming bodies
/// end at a frame boundary, and whatever remains after the grace period is dropped.
pub async fn serve(
    listener: tokio::net::TcpListener,
    config: ServeConfig,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let drain = Drain::new();
    let public_base = match &config.public_url {
        Some(url) => url.trim_end_matches('/').to_owned(),
        None => format!("http://{}", listener.local_addr()?),
    };
    // A local contract page is advertised under the public URL and served here.
    let mut dispatcher_config = config.dispatcher;
    let mut contract_path = None;
    if let Some(advert) = &mut dispatcher_config.source_results {
        if advert.contract_uri.starts_with('/') {
            contract_path = Some(advert.contract_uri.clone());
            advert.contract_uri = format!("{public_base}{}", advert.contract_uri);
        }
    }
    let (audit, audit_writer) = Audit::start(&config.audit)?;
    let metrics = Arc::new(Metrics::new());
    if let Err(err) = metrics.register_counter(
        "sluice_audit_dropped_total",
        "Audit records dropped because the audit queue was full (when_full = \"drop\").",
        audit.dropped_counter(),
    ) {
        tracing::warn!(%err, "audit drop counter not exported");
    }
    let bound = listener.local_addr()?;
    let guard = Guard::new(
        &public_base,
        bound,
        config.allowed_origins.clone(),
        &config.allowed_hosts,
    )
    .map_err(|err| std::io::Error::new(std::io::ErrorKind::InvalidInput, err))?;
    if bound.ip().is_unspecified() && config.public_url.is_none() && config.allowed_hosts.is_empty()
    {
        tracing::warn!(
            %bound,
            "listening on all addresses without [server] public_url or allowed_hosts: only the \
             loopback names are served as Host (others get 421)"
        );
    }
    let access = Arc::new(Access::new(
        Authenticator::new(config.api_key_pepper.clone()),
        &public_base,
        guard,
        audit.clone(),
    ));
    let invoker = Arc::new(Invoker::new(config.invoker).with_metrics(Arc::clone(&metrics)));
    let dispatcher = Arc::new(
        Dispatcher::new(dispatcher_config, Arc::clone(&invoker))
            .with_audit(audit.clone())
            .with_metrics(Arc::clone(&metrics)),
    );
    let streams = StreamRegistry::new(StreamConfig {
        keepalive: config.sse_keepalive,
        ..config.streams
    })
    .map_err(|err| std::io::Error::new(std::io::ErrorKind::InvalidInput, err))?;
    let (sessions, bus, cluster) = match &config.cluster {
        None => {
            if config.expected_instances > 1 {
                tracing::warn!(
                    expected_instances = config.expected_instances,
                    "several instances are expected but [cluster] redis_url is not set: \
                     sessions and streams are process-local, so each instance only knows its \
                     own (clients need sticky routing)"
                );
            }
            let bus = Bus::local(Arc::new(streams.clone()));
            (Sessions::local(config.sessions), bus, None)
        }
        Some(redis) => {
            let (sessions, backplane, notices) = connect_cluster(redis, config.sessions, &streams)
                .await
                .map_err(|err| std::io::Error::new(std::io::ErrorKind::ConnectionRefused, err))?;
            tracing::info!(
                instance = streams.instance(),
                prefix = redis.prefix,
                "sessions and stream routing shared through Redis"
            );
            // Subscribed before the first request, so no reload is missed.
            let task = cluster_task(
                Arc::clone(&backplane),
                streams.clone(),
                Arc::clone(&config.catalog),
                notices,
                drain.clone(),
                redis.holder_ttl / 3,
            );
            (sessions, Bus::Redis(backplane), Some(task))
        }
    };
    // Subscribed before the first request, so no reload is missed.
    let list_changed = list_changed_task(
        Arc::clone(&config.catalog),
        streams.clone(),
        Arc::clone(&dispatcher),
        drain.clone(),
    );
    let janitor = spawn_janitor(&streams, sessions.clone(), DEFAULT_SWEEP_INTERVAL);
    let state = Arc::new(State {
        mcp: Arc::new(Transport {
            settings: transport::Settings {
                allowed_origins: config.allowed_origins,
                post_framing: config.post_framing,
                max_body_bytes: config.limits.max_body_bytes,
                body_read_timeout: config.limits.body_read_timeout,
                sessions_enabled: config.sessions_enabled,
                require_session: config.require_session,
                sse_enabled: config.sse_enabled,
                keepalive: config.sse_keepalive,
            },
            catalog: Arc::clone(&config.catalog),
            dispatcher,
            drain: drain.clone(),
            sessions,
            streams,
            bus,
            inflight: Default::default(),
            access: Arc::clone(&access),
            audit: audit.clone(),
            metrics: Arc::clone(&metrics),
        }),
        rest: Rest {
            catalog: Arc::clone(&config.catalog),
            invoker,
            max_body_bytes: config.limits.max_body_bytes,
            body_read_timeout: config.limits.body_read_timeout,
            access: Arc::clone(&access),
            audit: audit.clone(),
        },
        access,
        metrics,
        catalog: config.catalog,
        admin_token: config.admin_token,
        sse_seen: std::sync::Mutex::new((0, 0)),
        contract_path,
        drain: drain.clone(),
        test_hooks: config.test_hooks,
    });
    let service = hyper::service::service_fn(move |req: Request<Incoming>| {
        let state = Arc::clone(&state);
        // Boxed: hyper keeps a connection's in-flight slot, sized for this future, for the
        // connection's whole life, so the ~7 KB `handle` state machine inline would be paid by
        // every idle connection, GET streams included (benches/e2e/memory.sh); the price is
        // one allocation per request.
        async move { Ok::<_, Infallible>(Box::pin(handle(&state, req)).await) }
    });
    let result = server::run(listener, &config.limits, drain, service, shutdown).await;
    list_changed.abort();
    janitor.abort();
    if let Some(cluster) = cluster {
        cluster.abort();
    }
    // Everything recorded before the listener stopped reaches the sink.
    audit_writer.shutdown().await;
    result
}

/// Pushes list-changed notifications to the live streams of every (tenant, client) a reload
/// affected: `notifications/tools/list_changed` where the tool listing changed, and
/// `notifications/prompts/list_changed` + `notifications/resources/list_changed` where the
/// exposed toolset prompts changed (both surfaces list the same prompts). Session streams get the
/// handshake-era message; listen streams get the stateless one tagged with their subscription id,
/// and only the kinds they subscribed to. A subscriber that fell behind (`Lagged`) notifies every
/// client of the current snapshot of every kind. Ends when the server drains.
fn list_changed_task(
    catalog: Arc<Catalog>,
    streams: StreamRegistry,
    dispatcher: Arc<Dispatcher>,
    drain: Drain,
) -> tokio::task::JoinHandle<()> {
    let mut changes = catalog.subscribe();
    tokio::spawn(async move {
        let deliver = |tenant: &str, client: &str, which: ListChanged| {
            streams.deliver_list_changed(tenant, Some(client), which, |subscription_id| {
                let era = match subscription_id {
                    Some(_) => Era::Stateless,
                    None => Era::Handshake,
                };
                dispatcher.list_changed_message_for(which, era, subscription_id)
            });
        };
        let drained = drain.signalled();
        tokio::pin!(drained);
        loop {
            let change = tokio::select! {
                () = &mut drained => return,
                change = changes.recv() => change,
            };
            match change {
                Ok(set) => {
                    for key in &set.changed {
                        deliver(&key.tenant, &key.client, ListChanged::Tools);
                    }
                    for key in &set.prompts_changed {
                        deliver(&key.tenant, &key.client, ListChanged::Prompts);
                        deliver(&key.tenant, &key.client, ListChanged::Resources);
                    }
                }
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    let snapshot = catalog.current();
                    for (view, _) in snapshot.fingerprints() {
                        for which in [
                            ListChanged::Tools,
                            ListChanged::Prompts,
                            ListChanged::Resources,
                        ] {
                            deliver(view.tenant(), view.client(), which);
                        }
                    }
                }
                Err(broadcast::error::RecvError::Closed) => return,
            }
        }
    })
}

async fn handle(state: &State, req: Request<Incoming>) -> Response<Body> {
    let started = Instant::now();
    let (parts, body) = req.into_parts();
    if let Some(hooks) = &state.test_hooks {
        if let Some(response) = test_route(hooks, state, parts.uri.path()).await {
            return response;
        }
    }
    let route = match router::route(&parts.method, parts.uri.path()) {
        Ok(route) => route,
        Err(_)
            if parts.method == http::Method::GET
                && state.contract_path.as_deref() == Some(parts.uri.path()) =>
        {
            let mut response = response::json(
                StatusCode::OK,
                Bytes::from_static(crate::federation::CONTRACT_PAGE.as_bytes()),
            );
            response.headers_mut().insert(
                http::header::CONTENT_TYPE,
                HeaderValue::from_static("text/markdown; charset=utf-8"),
            );
            observe(state, RouteLabel::Other, &parts, &response, started);
            return response;
        }
        Err(err) => {
            let response = Error::from(err).into_response();
            observe(state, RouteLabel::NotFound, &parts, &response, started);
            return response;
        }
    };
    let (label, cors_policy) = describe(&route);
    let result = match route {
        Route::Mcp(target) => match admit(state, &parts, &target, Endpoint::Mcp).await {
            Ok(admitted) => streamable::handle(&state.mcp, &parts, body, &target, admitted).await,
            Err(err) => Err(err),
        },
        Route::LegacySse(target) => {
            match admit(state, &parts, &target, Endpoint::LegacySse).await {
                Ok(admitted) => {
                    legacy_sse::open(&state.mcp, &parts, &target, &admitted.caller).await
                }
                Err(err) => Err(err),
            }
        }
        Route::LegacyMessages(target) => {
            match admit(state, &parts, &target, Endpoint::LegacySse).await {
                Ok(admitted) => legacy_sse::post(&state.mcp, &parts, body, &target, admitted).await,
                Err(err) => Err(err),
            }
        }
        Route::RestTools(target) => match admit(state, &parts, &target, Endpoint::Rest).await {
            Ok(admitted) => state.rest.list_tools(&parts, &target, &admitted).await,
            Err(err) => Err(err),
        },
        Route::RestCall(target, name) => {
            match admit(state, &parts, &target, Endpoint::Rest).await {
                Ok(admitted) => {
                    state
                        .rest
                        .call_tool(&parts, body, &target, &name, admitted)
                        .await
                }
                Err(err) => Err(err),
            }
        }
        Route::Healthz => Ok(response::text(StatusCode::OK, "ok")),
        Route::Readyz if state.drain.is_draining() => Err(Error::Unavailable("draining".into())),
        // A shared session store that does not answer makes this instance unready (nothing
        // to check for the process-local one).
        Route::Readyz => match state.mcp.sessions.ping().await {
            // The backplane has connections of its own: its commands must work too.
            Ok(()) if state.mcp.bus.ping().await.is_err() => {
                warn_limited!("", Kind::NotReady, "not ready: backplane unreachable");
                Err(Error::Unavailable("backplane unreachable".into()))
            }
            // Commands work again after a Redis restart before the subscriptions are renewed;
            // until they are, messages routed to this instance would be lost.
            Ok(()) if !state.mcp.bus.is_ready() => {
                warn_limited!(
                    "",
                    Kind::NotSubscribed,
                    "not ready: backplane subscriptions not established"
                );
                Err(Error::Unavailable(
                    "backplane subscriptions not established".into(),
                ))
            }
            Ok(()) => Ok(response::text(StatusCode::OK, "ready")),
            Err(err) => {
                // Probes come every few seconds from every balancer: one line per interval.
                warn_limited!("", Kind::NotReady, %err, "not ready: session store unreachable");
                Err(Error::Unavailable("session store unreachable".into()))
            }
        },
        Route::BosPlatform => {
            match state
                .access
                .admit_platform(&parts, state.catalog.current())
                .await
            {
                Ok((admitted, owner)) => {
                    let target = crate::http::Target {
                        tenant: std::borrow::Cow::Owned(owner.tenant.to_string()),
                        client: std::borrow::Cow::Owned(owner.client.to_string()),
                    };
                    streamable::handle(&state.mcp, &parts, body, &target, admitted).await
                }
                Err(err) => Err(err),
            }
        }
        Route::ProtectedResource(path) => state
            .access
            .protected_resource(&state.catalog.current(), path)
            .map(|document| {
                let mut answer = response::json(StatusCode::OK, document);
                answer.headers_mut().insert(
                    http::header::CACHE_CONTROL,
                    HeaderValue::from_static("public, max-age=300"),
                );
                answer
            }),
        Route::Metrics => {
            refresh_gauges(state).await;
            let mut answer = response::json(StatusCode::OK, Bytes::from(state.metrics.render()));
            answer.headers_mut().insert(
                http::header::CONTENT_TYPE,
                HeaderValue::from_static(crate::metrics::CONTENT_TYPE),
            );
            Ok(answer)
        }
        Route::AdminReload => {
            admin::reload(&state.rest.catalog, state.admin_token.as_deref(), &parts).await
        }
        Route::Preflight { allow, public } => {
            let policy = if public {
                Policy::Public
            } else {
                Policy::Protected
            };
            let guard = state.access.guard();
            let host = match policy {
                Policy::Protected => guard.check_host(&parts.headers, &parts.uri, parts.version),
                Policy::Public => Ok(()),
            };
            host.and_then(|()| cors::preflight(&parts.headers, guard, policy, allow))
        }
    };
    let mut response = result.unwrap_or_else(Error::into_response);
    if matches!(label, RouteLabel::Mcp | RouteLabel::LegacyMessages) {
        // "Echoes the accepted value back on X-External-Correlation-Id" (the REST surface does
        // the same in `rest`); a value that fails the acceptance rules is not echoed.
        if let Some(external) = external_from_headers(&parts.headers) {
            response.headers_mut().insert(
                EXTERNAL_CORRELATION_ID_HEADER,
                external.header_value().clone(),
            );
        }
    }
    if let Some(policy) = cors_policy {
        cors::decorate(
            &mut response,
            accepted_origin(state, &parts, policy),
            policy,
        );
    }
    observe(state, label, &parts, &response, started);
    response
}

/// Reads the values counted elsewhere into the registry before a scrape: live sessions per tenant
/// (the session store's counts), live streams per tenant (the stream registry), and the SSE
/// totals of finished bodies.
async fn refresh_gauges(state: &State) {
    use std::sync::atomic::Ordering::Relaxed;
    if let Ok(counts) = state.mcp.sessions.counts().await {
        state.metrics.set_sessions(&counts);
    }
    state
        .metrics
        .set_streams(&state.mcp.streams.live_by_tenant());
    let frames = response::SSE_FRAMES.load(Relaxed);
    let bytes = response::SSE_BYTES.load(Relaxed);
    let (seen_frames, seen_bytes) = {
        let mut seen = match state.sse_seen.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        std::mem::replace(&mut *seen, (frames, bytes))
    };
    state.metrics.add_sse(
        frames.saturating_sub(seen_frames),
        bytes.saturating_sub(seen_bytes),
    );
}

/// Runs the gate ([`Access::admit`]) on the current snapshot.
async fn admit(
    state: &State,
    parts: &http::request::Parts,
    target: &crate::http::Target<'_>,
    endpoint: Endpoint,
) -> Result<Admitted, Error> {
    state
        .access
        .admit(parts, target, endpoint, state.catalog.current())
        .await
}

/// The metrics label and CORS policy of a route.
fn describe(route: &Route<'_>) -> (RouteLabel, Option<Policy>) {
    match route {
        Route::Mcp(_) => (RouteLabel::Mcp, Some(Policy::Protected)),
        Route::LegacySse(_) => (RouteLabel::LegacySse, Some(Policy::Protected)),
        Route::LegacyMessages(_) => (RouteLabel::LegacyMessages, Some(Policy::Protected)),
        Route::RestTools(_) => (RouteLabel::RestTools, Some(Policy::Protected)),
        Route::RestCall(..) => (RouteLabel::RestCall, Some(Policy::Protected)),
        Route::BosPlatform => (RouteLabel::BosPlatform, Some(Policy::Protected)),
        Route::ProtectedResource(_) => (RouteLabel::ProtectedResource, Some(Policy::Public)),
        Route::Healthz => (RouteLabel::Healthz, None),
        Route::Readyz => (RouteLabel::Readyz, None),
        Route::Metrics => (RouteLabel::Metrics, None),
        Route::AdminReload => (RouteLabel::AdminReload, None),
        // The preflight answer sets its own CORS headers.
        Route::Preflight { .. } => (RouteLabel::Other, None),
    }
}

/// The request's `Origin` when CORS headers may echo it: any origin on public routes, an origin
/// the guard accepts on protected ones.
fn accepted_origin(
    state: &State,
    parts: &http::request::Parts,
    policy: Policy,
) -> Option<HeaderValue> {
    let origin = parts.headers.get(http::header::ORIGIN)?;
    match policy {
        Policy::Public => Some(origin.clone()),
        Policy::Protected => state
            .access
            .guard()
            .check_origin(&parts.headers)
            .ok()
            .map(|()| origin.clone()),
    }
}

fn observe(
    state: &State,
    label: RouteLabel,
    parts: &http::request::Parts,
    response: &Response<Body>,
    started: Instant,
) {
    state.metrics.observe_request(
        label,
        MethodLabel::from(&parts.method),
        response.status().as_u16(),
        started.elapsed(),
    );
}

async fn test_route(hooks: &TestHooks, state: &State, path: &str) -> Option<Response<Body>> {
    match path {
        "/__test/hold" => {
            hooks.entered.notify_one();
            hooks.release.notified().await;
            Some(response::text(StatusCode::OK, "released"))
        }
        "/__test/stream" => {
            let (tx, rx) = mpsc::channel(1);
            let first = Bytes::from_static(b"event: message\ndata: first\n\n");
            if tx.try_send(first).is_err() {
                return Some(Error::Internal.into_response());
            }
            // The producer stays alive until the body closes the channel (on drain).
            tokio::spawn(async move { tx.closed().await });
            Some(response::event_stream(Body::stream(rx, &state.drain)))
        }
        _ => None,
    }
}
