//! The composition root: builds every part from a [`ServeConfig`], wires the HTTP routes to the
//! surfaces and runs the listener. Read it first.
//!
//! [`serve`] builds the gate ([`Access`] over the [`Authenticator`]), the audit writer, the
//! metrics registry, the invoker, the MCP [`Dispatcher`], the stream registry, the session store
//! and bus, the janitor and the list_changed relay, then serves until shutdown and drains. The
//! parts around it are one file each: `server/config.rs` ([`ServeConfig`]: file settings into
//! part settings), `server/routes.rs` (every route of the table in `http/router.rs` and which
//! surface answers it, behind the gate), `server/relay.rs` (catalog change sets into
//! `list_changed` notifications on live streams) and, with `[cluster] redis_url`,
//! `server/cluster.rs` (the Redis session store and backplane, and the cluster task that keeps
//! this instance's stream-holder registrations fresh and relays configuration reloads between
//! instances). Must not implement any surface itself: it only connects [`crate::http`] to
//! [`crate::transport`] and friends.

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;

use http::Request;
use hyper::body::Incoming;

use crate::a2a::agent::{Agent, AgentParts};
use std::time::Duration;

use crate::a2a::remote::ledger::redis::RedisLedger;
use crate::a2a::remote::ledger::{Ledger, LedgerConfig};
use crate::a2a::remote::registry::Remotes;
use crate::a2a::remote::Concentrator;
use crate::a2a::store::{TaskStore, TaskStoreConfig};
use crate::access::Access;
use crate::audit::Audit;
use crate::auth::Authenticator;
use crate::catalog::Catalog;
use crate::http::guard::Guard;
use crate::http::server::{self, Peer};
use crate::http::tls::Tls;
use crate::http::Drain;
use crate::invoke::Invoker;
use crate::mcp::Dispatcher;
use crate::metrics::Metrics;
use crate::ratelimit::{AuthThrottle, Counters, Limiter};
use crate::rest::Rest;
use crate::session::{Bus, Sessions};
use crate::telemetry::Telemetry;
use crate::transport::stream::{
    spawn_janitor, StreamConfig, StreamRegistry, DEFAULT_SWEEP_INTERVAL,
};
use crate::transport::{self, Transport};

mod cluster;
mod config;
mod relay;
mod routes;

use cluster::{cluster_task, connect_cluster};
pub use config::{ServeConfig, TestHooks};

/// State shared by every request (read-only after start).
struct State {
    mcp: Arc<Transport>,
    a2a: Arc<Agent>,
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
    sse_seen: parking_lot::Mutex<(u64, u64)>,
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
        None => {
            let scheme = if config.tls.is_some() {
                "https"
            } else {
                "http"
            };
            format!("{scheme}://{}", listener.local_addr()?)
        }
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
    let (tls, tls_reloader) = match &config.tls {
        None => (None, None),
        Some(settings) => {
            let tls = Arc::new(
                Tls::load(settings)
                    .map_err(|err| std::io::Error::new(std::io::ErrorKind::InvalidInput, err))?,
            );
            register_tls_metrics(&metrics, &tls);
            let task = tls_reload_task(Arc::clone(&tls), Arc::clone(&config.catalog));
            (Some(tls), Some(task))
        }
    };
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
    // With [cluster], rate limit buckets live in Redis, so a limit holds across instances.
    let limiter = match &config.cluster {
        None => Limiter::local(config.rate_limit_max_buckets),
        Some(redis) => {
            let (connection, namespace) = redis
                .shared()
                .map_err(|err| std::io::Error::new(std::io::ErrorKind::InvalidInput, err))?;
            Limiter::shared(connection, namespace, redis.command_timeout)
        }
    };
    let throttle = AuthThrottle::new(&config.auth_failures, Arc::clone(&limiter.counters));
    register_rate_limit_metrics(&metrics, &limiter.counters);
    let telemetry = Telemetry::start(&config.telemetry)
        .map_err(|err| std::io::Error::new(std::io::ErrorKind::InvalidInput, err))?;
    let access = Arc::new(
        Access::new(
            Authenticator::new(config.api_key_pepper.clone()),
            &public_base,
            guard,
            audit.clone(),
            (limiter, throttle),
        )
        .with_telemetry(telemetry.clone()),
    );
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
            let sessions = Sessions::local(config.sessions);
            (sessions, bus, None)
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
    let lifetimes = Arc::clone(&metrics);
    sessions.observe_lifetimes(crate::session::LifetimeSink(Arc::new(move |lifetime| {
        lifetimes.mcp_session_ended(lifetime);
    })));
    // Subscribed before the first request, so no reload is missed.
    let list_changed = relay::list_changed_task(
        Arc::clone(&config.catalog),
        streams.clone(),
        Arc::clone(&dispatcher),
        drain.clone(),
    );
    let janitor = spawn_janitor(&streams, sessions.clone(), DEFAULT_SWEEP_INTERVAL);
    // With [cluster], tasks live in Redis so every instance reads, cancels and follows them.
    let task_config = TaskStoreConfig::from(&config.a2a);
    let task_store = match &config.cluster {
        Some(redis) => {
            let (connection, namespace) = redis
                .shared()
                .map_err(|err| std::io::Error::new(std::io::ErrorKind::InvalidInput, err))?;
            TaskStore::redis(connection, namespace, redis.command_timeout, task_config)
                .await
                .map_err(|err| std::io::Error::new(std::io::ErrorKind::ConnectionRefused, err))?
        }
        None => TaskStore::local(task_config),
    };
    // The registered remote agents (each with a connection pool of its own), the ledger beside
    // the task store (in Redis with [cluster], so any instance checks ownership).
    let remotes = Arc::new(Remotes::new());
    remotes
        .start(
            &config.catalog,
            Duration::from_millis(config.a2a.remote_start_wait_ms),
        )
        .await;
    let remote_refresher = remotes.spawn_refresher(Arc::clone(&config.catalog), drain.clone());
    let ledger_config = LedgerConfig::from(&config.a2a);
    let ledger = match &config.cluster {
        Some(redis) => {
            let (connection, namespace) = redis
                .shared()
                .map_err(|err| std::io::Error::new(std::io::ErrorKind::InvalidInput, err))?;
            Ledger::Redis(Arc::new(RedisLedger::new(
                connection,
                namespace,
                redis.command_timeout,
                ledger_config,
            )))
        }
        None => Ledger::local(ledger_config),
    };
    let a2a = Agent::new(AgentParts {
        remote: Concentrator { remotes, ledger },
        store: task_store,
        settings: config.a2a.clone(),
        catalog: Arc::clone(&config.catalog),
        dispatcher: Arc::clone(&dispatcher),
        access: Arc::clone(&access),
        audit: audit.clone(),
        metrics: Arc::clone(&metrics),
        public_base: public_base.as_str().into(),
        max_body_bytes: config.limits.max_body_bytes,
        body_read_timeout: config.limits.body_read_timeout,
        json_limits: config.json_limits,
        keepalive: config.sse_keepalive,
    });
    a2a.register_metrics();
    // The `ask_{agentId}` MCP tools of registered agents are answered by the concentrator.
    dispatcher.set_agents(crate::a2a::remote::ask::AgentAsker::new(&a2a));
    let a2a_janitor = Agent::spawn_janitor(&a2a, drain.clone());
    let state = Arc::new(State {
        a2a,
        mcp: Arc::new(Transport {
            settings: transport::Settings {
                allowed_origins: config.allowed_origins,
                post_framing: config.post_framing,
                max_body_bytes: config.limits.max_body_bytes,
                body_read_timeout: config.limits.body_read_timeout,
                json_limits: config.json_limits,
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
        sse_seen: parking_lot::Mutex::new((0, 0)),
        contract_path,
        drain: drain.clone(),
        test_hooks: config.test_hooks,
    });
    let make_service = move |peer: Peer| {
        let state = Arc::clone(&state);
        let peer = Arc::new(peer);
        hyper::service::service_fn(move |req: Request<Incoming>| {
            let state = Arc::clone(&state);
            let peer = Arc::clone(&peer);
            // Boxed: hyper keeps a connection's in-flight slot, sized for this future, for the
            // connection's whole life, so the ~7 KB `handle` state machine inline would be paid
            // by every idle connection, GET streams included (benches/e2e/memory.sh); the price
            // is one allocation per request.
            async move { Ok::<_, Infallible>(Box::pin(routes::handle(&state, &peer, req)).await) }
        })
    };
    let result = server::run(listener, &config.limits, tls, drain, make_service, shutdown).await;
    if let Some(task) = tls_reloader {
        task.abort();
    }
    list_changed.abort();
    janitor.abort();
    a2a_janitor.abort();
    remote_refresher.abort();
    if let Some(cluster) = cluster {
        cluster.abort();
    }
    // Everything recorded before the listener stopped reaches the sink (and the collector).
    audit_writer.shutdown().await;
    if let Some(telemetry) = telemetry {
        let _ = tokio::task::spawn_blocking(move || telemetry.shutdown()).await;
    }
    result
}

/// The rate limit counters, exported.
fn register_rate_limit_metrics(metrics: &Metrics, counters: &Counters) {
    let exported = [
        (
            "sluice_rate_limited_total",
            "Tool calls refused by a [[tenant.rate_limit]] rule (429).",
            &counters.limited,
        ),
        (
            "sluice_rate_limit_store_errors_total",
            "Tool calls whose rate limits could not be checked in the shared store (each then \
             followed its rule's on_store_error).",
            &counters.store_errors,
        ),
        (
            "sluice_auth_throttled_total",
            "Requests refused (429) because their source address or key id failed \
             authentication too often.",
            &counters.auth_throttled,
        ),
    ];
    for (name, help, counter) in exported {
        if let Err(err) = metrics.register_counter(name, help, Arc::clone(counter)) {
            tracing::warn!(%err, name, "rate limit counter not exported");
        }
    }
}

/// The TLS handshake counters, exported.
fn register_tls_metrics(metrics: &Metrics, tls: &Tls) {
    let counters = [
        (
            "sluice_tls_handshakes_total",
            "TLS handshakes completed.",
            &tls.handshakes,
        ),
        (
            "sluice_tls_handshake_failures_total",
            "TLS handshakes that failed or timed out (a missing required client certificate \
             included).",
            &tls.handshake_failures,
        ),
    ];
    for (name, help, counter) in counters {
        if let Err(err) = metrics.register_counter(name, help, Arc::clone(counter)) {
            tracing::warn!(%err, name, "TLS counter not exported");
        }
    }
}

/// Re-reads the certificate files after every configuration reload (SIGHUP, `POST
/// /admin/reload`, a reload relayed by another instance), from the paths the new snapshot's
/// `[server.tls]` names. Files that do not load keep the certificate in use, with a warning.
fn tls_reload_task(tls: Arc<Tls>, catalog: Arc<Catalog>) -> tokio::task::JoinHandle<()> {
    let mut changes = catalog.subscribe();
    tokio::spawn(async move {
        loop {
            match changes.recv().await {
                // A lagged receiver still reloads: the files are what matters, not the sets.
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            }
            let snapshot = catalog.current();
            let Some(settings) = snapshot.settings().tls.clone() else {
                tracing::warn!(
                    "the reloaded configuration has no [server.tls]: TLS stays on with the \
                     current certificate (restart to serve plain HTTP)"
                );
                continue;
            };
            let outcome = tokio::task::spawn_blocking({
                let tls = Arc::clone(&tls);
                move || tls.reload(&settings)
            })
            .await;
            match outcome {
                Ok(Ok(())) => tracing::info!("TLS certificate reloaded"),
                Ok(Err(err)) => tracing::warn!(
                    %err,
                    "TLS certificate not reloaded; keeping the one in use"
                ),
                Err(err) => tracing::error!(%err, "TLS reload task failed"),
            }
        }
    })
}
