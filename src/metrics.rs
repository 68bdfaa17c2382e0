//! Process metrics in the Prometheus text exposition format 0.0.4: a fixed-shape registry that
//! the request path writes without locks or allocation, rendered on scrape.
//!
//! One [`Metrics`], shared as `Arc<Metrics>`, holds every family:
//!
//! | family | type | labels | written by |
//! |---|---|---|---|
//! | `sluice_build_info` | gauge | `version` | constant 1 |
//! | `sluice_uptime_seconds` | gauge | | computed on scrape |
//! | `sluice_http_requests_total` | counter | `route`, `method`, `status` | [`Metrics::observe_request`] |
//! | `sluice_http_request_duration_seconds` | histogram | `route`, `method` | [`Metrics::observe_request`] |
//! | `sluice_active_sessions` | gauge | `tenant` | [`Metrics::session_opened`] / [`Metrics::session_closed`] |
//! | `sluice_active_streams` | gauge | `tenant` | [`Metrics::stream_opened`] / [`Metrics::stream_closed`] / [`GaugeGuard`] |
//! | `sluice_sse_frames_total`, `sluice_sse_bytes_total` | counter | | [`Metrics::add_sse`] |
//! | `sluice_downstream_errors_total`, `sluice_source_errors_total` | counter | `code` | [`Metrics::downstream_error`], [`Metrics::source_error`] |
//! | `sluice_a2a_calls_total` | counter | `method`, `outcome` | [`Metrics::a2a_call`] |
//! | `sluice_a2a_tasks` | gauge | `tenant` | [`Metrics::set_a2a_tasks`] (the task store's counts, on scrape) |
//! | `sluice_a2a_remote_calls_total` | counter | `tenant`, `agent`, `method`, `outcome` | [`Metrics::a2a_remote_call`] |
//! | `sluice_a2a_remote_up` | gauge | `tenant`, `agent` | [`Metrics::set_a2a_remote_up`] (whether the last card fetch worked, on scrape) |
//! | anything registered | counter / gauge | | [`Metrics::register_counter`], [`Metrics::register_gauge_fn`] |
//!
//! - `labels.rs`: [`RouteLabel`], [`MethodLabel`], the counted status codes.
//! - `requests.rs`: request counters and the latency histogram (fixed `AtomicU64` arrays).
//! - `tenant.rs`: per-tenant gauges and [`GaugeGuard`].
//! - `registry.rs`: error-code counters and externally owned families (small locks).
//! - `render.rs`: the text format (escaping, headers, samples).
//!
//! Must not do IO or know routes, sessions or tenants beyond the labels callers pass: the HTTP
//! layer serves [`Metrics::render`] with [`CONTENT_TYPE`], and the modules that own a quantity
//! report it here. **Invariant:** [`Metrics::observe_request`] takes no lock and allocates
//! nothing (`benches/metrics.rs` counts allocations before it measures).
//!
//! Rendering is deterministic: families in the order of the table, series in label-index order
//! (tenants and codes by name, registered families by name). Request series that were never
//! observed are left out, so a scrape lists what happened rather than all 1,300 combinations.

mod labels;
mod mcp;
mod registry;
mod render;
mod requests;
mod tenant;

#[cfg(test)]
mod tests;

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

pub use labels::{MethodLabel, RouteLabel};
#[cfg(test)]
pub(crate) use registry::GaugeFn;
pub(crate) use tenant::GaugeGuard;

use registry::{CodeCounters, External, Externals, Reading, Source};
use render::{Kind, Value, Writer};
use requests::{HttpMetrics, BUCKET_LABELS};
use tenant::{Gauge, TenantMap};

/// The `Content-Type` of [`Metrics::render`]'s output.
pub(crate) const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The built-in family names, and the sample names a histogram family also occupies; a
/// registered family may not reuse any of them.
const BUILTIN_NAMES: [&str; 17] = [
    BUILD_INFO,
    UPTIME,
    REQUESTS,
    DURATION,
    "sluice_http_request_duration_seconds_bucket",
    "sluice_http_request_duration_seconds_sum",
    "sluice_http_request_duration_seconds_count",
    SESSIONS,
    STREAMS,
    SSE_FRAMES,
    SSE_BYTES,
    DOWNSTREAM_ERRORS,
    SOURCE_ERRORS,
    A2A_CALLS,
    A2A_TASKS,
    A2A_REMOTE_CALLS,
    A2A_REMOTE_UP,
];

const BUILD_INFO: &str = "sluice_build_info";
const UPTIME: &str = "sluice_uptime_seconds";
const REQUESTS: &str = "sluice_http_requests_total";
const DURATION: &str = "sluice_http_request_duration_seconds";
const SESSIONS: &str = "sluice_active_sessions";
const STREAMS: &str = "sluice_active_streams";
const SSE_FRAMES: &str = "sluice_sse_frames_total";
const SSE_BYTES: &str = "sluice_sse_bytes_total";
const DOWNSTREAM_ERRORS: &str = "sluice_downstream_errors_total";
const SOURCE_ERRORS: &str = "sluice_source_errors_total";
const A2A_CALLS: &str = "sluice_a2a_calls_total";
const A2A_TASKS: &str = "sluice_a2a_tasks";
const A2A_REMOTE_CALLS: &str = "sluice_a2a_remote_calls_total";
const A2A_REMOTE_UP: &str = "sluice_a2a_remote_up";

/// (tenant, agent) of a registered remote agent.
type AgentLabels = (std::sync::Arc<str>, std::sync::Arc<str>);

/// Why a family could not be registered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum MetricsError {
    /// The name does not match `[a-zA-Z_:][a-zA-Z0-9_:]*`.
    #[error("invalid metric name {0:?}")]
    InvalidName(&'static str),
    /// A built-in or already registered family has this name; two families of one name would
    /// make the whole scrape invalid.
    #[error("metric {0:?} is already registered")]
    DuplicateName(&'static str),
}

/// One `sluice_a2a_remote_calls_total` row: ((tenant, agent), method, outcome) and its count.
type RemoteCallRow = ((AgentLabels, &'static str, &'static str), u64);

/// The process's metrics. `Send + Sync`; share it as `Arc<Metrics>`.
pub struct Metrics {
    /// When the registry was created, for `sluice_uptime_seconds`. `tokio::time::Instant` so
    /// tests can drive it with a paused clock; outside a runtime it is `std::time::Instant`.
    started: Instant,
    /// Request counters and histogram: lock-free, fixed-size.
    http: HttpMetrics,
    /// Per-tenant session and stream gauges: read lock per open/close, none per guard drop.
    tenants: TenantMap,
    /// SSE frames written, added in batches by the stream writers.
    sse_frames: AtomicU64,
    /// SSE bytes written (frame bytes, not TCP bytes), added in batches.
    sse_bytes: AtomicU64,
    /// Downstream call failures by code (small lock: errors are rare).
    downstream_errors: CodeCounters,
    /// Source (upstream MCP/catalog source) failures by code.
    source_errors: CodeCounters,
    /// A2A calls by method and outcome.
    a2a_calls: registry::PairCounters,
    /// A2A tasks held per tenant, as the task store counted them at the last scrape.
    a2a_tasks: parking_lot::Mutex<Vec<(std::sync::Arc<str>, usize)>>,
    /// Proxied calls by (tenant, agent), method and outcome. Agents are few and named in the
    /// configuration, so the rows are bounded by it.
    a2a_remote_calls: parking_lot::Mutex<Vec<RemoteCallRow>>,
    /// Whether each agent's last card fetch worked, read before a scrape.
    a2a_remote_up: parking_lot::Mutex<Vec<(AgentLabels, bool)>>,
    /// Families other modules own.
    externals: Externals,
    /// The MCP semantic-convention histograms.
    mcp: mcp::McpHistograms,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for Metrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Metrics")
            .field("started", &self.started)
            .field("tenants", &self.tenants)
            .field("externals", &self.externals)
            .finish_non_exhaustive()
    }
}

impl Metrics {
    /// An empty registry; uptime counts from now.
    pub fn new() -> Self {
        Self {
            started: Instant::now(),
            http: HttpMetrics::new(),
            tenants: TenantMap::default(),
            sse_frames: AtomicU64::new(0),
            sse_bytes: AtomicU64::new(0),
            downstream_errors: CodeCounters::default(),
            source_errors: CodeCounters::default(),
            a2a_calls: registry::PairCounters::default(),
            a2a_tasks: parking_lot::Mutex::new(Vec::new()),
            a2a_remote_calls: parking_lot::Mutex::new(Vec::new()),
            a2a_remote_up: parking_lot::Mutex::new(Vec::new()),
            externals: Externals::default(),
            mcp: mcp::McpHistograms::default(),
        }
    }

    // === requests ===

    /// Records one HTTP request: `sluice_http_requests_total{route,method,status}` and
    /// `sluice_http_request_duration_seconds{route,method}`.
    ///
    /// `elapsed` runs from the request's arrival to its response *headers*: for a streamed
    /// response (SSE) that is the time to first byte, not the stream's lifetime, which the
    /// active-streams gauge and the SSE counters describe instead. Status codes outside
    /// [`COUNTED_STATUSES`](labels::COUNTED_STATUSES) count as `status="other"`.
    ///
    /// Three relaxed atomic increments on one cache-line-aligned row; no lock, no allocation.
    #[inline]
    pub fn observe_request(
        &self,
        route: RouteLabel,
        method: MethodLabel,
        status: u16,
        elapsed: Duration,
    ) {
        self.http.observe(route, method, status, elapsed);
    }

    /// One MCP request answered (`mcp.server.operation.duration`): relaxed atomics only.
    pub(crate) fn mcp_operation(&self, method: &str, elapsed: Duration) {
        self.mcp.operation(method, elapsed);
    }

    /// One handshake-era session ended after `lifetime` (`mcp.server.session.duration`).
    pub(crate) fn mcp_session_ended(&self, lifetime: Duration) {
        self.mcp.session(lifetime);
    }

    // === tenant gauges ===

    /// A session of `tenant` opened. Pass configured tenant names only (see
    /// [`MAX_TENANT_SERIES`]).
    pub fn session_opened(&self, tenant: &str) {
        self.tenants.add(tenant, Gauge::Sessions, 1);
    }

    /// Sets the live-session gauge of every tenant from the session store's own counts (read at
    /// scrape time; tenants not listed read 0).
    pub(crate) fn set_sessions(&self, counts: &[(String, i64)]) {
        self.tenants.set_all(Gauge::Sessions, counts);
    }

    /// Sets the live-stream gauge of every tenant from the stream registry (read at scrape time).
    pub(crate) fn set_streams(&self, counts: &[(String, i64)]) {
        self.tenants.set_all(Gauge::Streams, counts);
    }

    /// A session of `tenant` closed (deleted or expired).
    #[cfg(test)]
    pub(crate) fn session_closed(&self, tenant: &str) {
        self.tenants.add(tenant, Gauge::Sessions, -1);
    }

    /// A stream of `tenant` opened; pair with [`Metrics::stream_closed`], or use
    /// [`Metrics::stream_guard`] instead.
    pub fn stream_opened(&self, tenant: &str) {
        self.tenants.add(tenant, Gauge::Streams, 1);
    }

    /// A stream of `tenant` closed.
    #[cfg(test)]
    pub(crate) fn stream_closed(&self, tenant: &str) {
        self.tenants.add(tenant, Gauge::Streams, -1);
    }

    /// Counts a stream of `tenant` as open until the returned guard is dropped. The guard holds
    /// the tenant's gauges directly (not the registry), so its drop is one atomic decrement and
    /// it stays valid if the tenant is pruned meanwhile.
    pub fn stream_guard(&self, tenant: &str) -> GaugeGuard {
        self.tenants.guard(tenant, Gauge::Streams)
    }

    /// After a configuration reload: forgets the gauges of tenants `keep` rejects once nothing
    /// of theirs is open, so removed tenants leave the scrape. Tenants with open sessions or
    /// streams stay listed until a later prune finds them idle.
    #[cfg(test)]
    pub(crate) fn prune_tenants(&self, keep: impl Fn(&str) -> bool) {
        self.tenants.prune(keep);
    }

    // === SSE ===

    /// Adds a batch of written SSE frames and their bytes.
    pub(crate) fn add_sse(&self, frames: u64, bytes: u64) {
        self.sse_frames.fetch_add(frames, Ordering::Relaxed);
        self.sse_bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    // === errors ===

    /// A downstream call failed with `code` (`sluice_downstream_errors_total{code}`).
    pub(crate) fn downstream_error(&self, code: &'static str) {
        self.downstream_errors.add(code);
    }

    /// A source failed with `code` (`sluice_source_errors_total{code}`).
    pub(crate) fn source_error(&self, code: &'static str) {
        self.source_errors.add(code);
    }

    /// An A2A call ended (`sluice_a2a_calls_total{method,outcome}`); both are static names,
    /// never task ids.
    pub(crate) fn a2a_call(&self, method: &'static str, outcome: &'static str) {
        self.a2a_calls.add(method, outcome);
    }

    /// A call proxied to a registered remote agent ended
    /// (`sluice_a2a_remote_calls_total{tenant,agent,method,outcome}`).
    pub(crate) fn a2a_remote_call(
        &self,
        agent: &AgentLabels,
        method: &'static str,
        outcome: &'static str,
    ) {
        let mut rows = self.a2a_remote_calls.lock();
        match rows
            .iter_mut()
            .find(|((a, m, o), _)| a == agent && *m == method && *o == outcome)
        {
            Some((_, n)) => *n += 1,
            None => rows.push(((agent.clone(), method, outcome), 1)),
        }
    }

    /// Whether each registered agent's card is fresh (`sluice_a2a_remote_up{tenant,agent}`),
    /// read before a scrape.
    pub(crate) fn set_a2a_remote_up(&self, up: Vec<(AgentLabels, bool)>) {
        *self.a2a_remote_up.lock() = up;
    }

    /// The A2A tasks each tenant holds (`sluice_a2a_tasks{tenant}`), read before a scrape.
    pub(crate) fn set_a2a_tasks(&self, counts: &[(std::sync::Arc<str>, usize)]) {
        let mut counts = counts.to_vec();
        counts.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        *self.a2a_tasks.lock() = counts;
    }

    // === externally owned families ===

    /// Exposes a counter another module owns (e.g. `sluice_audit_dropped_total`) as an
    /// unlabelled counter family. The module keeps incrementing its `Arc<AtomicU64>`; the
    /// scrape reads it.
    pub(crate) fn register_counter(
        &self,
        name: &'static str,
        help: &'static str,
        value: Arc<AtomicU64>,
    ) -> Result<(), MetricsError> {
        self.register(name, help, Source::Counter(value))
    }

    /// Exposes an unlabelled gauge computed on each scrape (e.g. total live sessions). `f` runs
    /// under the registry's lock for external families: it must be quick and must not call
    /// back into [`Metrics::register_counter`] or [`Metrics::register_gauge_fn`].
    #[cfg(test)]
    pub(crate) fn register_gauge_fn(
        &self,
        name: &'static str,
        help: &'static str,
        f: GaugeFn,
    ) -> Result<(), MetricsError> {
        self.register(name, help, Source::Gauge(f))
    }

    fn register(
        &self,
        name: &'static str,
        help: &'static str,
        source: Source,
    ) -> Result<(), MetricsError> {
        if !render::is_valid_metric_name(name) {
            return Err(MetricsError::InvalidName(name));
        }
        if BUILTIN_NAMES.contains(&name) {
            return Err(MetricsError::DuplicateName(name));
        }
        if self.externals.insert(External { name, help, source }) {
            Ok(())
        } else {
            Err(MetricsError::DuplicateName(name))
        }
    }

    // === rendering ===

    /// The whole exposition, as served with [`CONTENT_TYPE`].
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(8 * 1024);
        self.render_into(&mut out);
        out
    }

    /// Appends the whole exposition to `out` (so a scraper can reuse one buffer).
    pub fn render_into(&self, out: &mut String) {
        let mut w = Writer::new(out);

        w.family(
            BUILD_INFO,
            "Build information; the value is always 1.",
            Kind::Gauge,
        );
        w.sample(
            BUILD_INFO,
            "",
            &[("version", env!("CARGO_PKG_VERSION"))],
            Value::Unsigned(1),
        );

        w.family(UPTIME, "Seconds since the process started.", Kind::Gauge);
        w.sample(
            UPTIME,
            "",
            &[],
            Value::Float(self.started.elapsed().as_secs_f64()),
        );

        self.render_requests(&mut w);
        self.mcp.render(&mut w);
        self.render_tenants(&mut w);

        w.family(SSE_FRAMES, "SSE frames written.", Kind::Counter);
        w.sample(
            SSE_FRAMES,
            "",
            &[],
            Value::Unsigned(self.sse_frames.load(Ordering::Relaxed)),
        );
        w.family(
            SSE_BYTES,
            "Bytes of SSE frames written (before TLS and HTTP framing).",
            Kind::Counter,
        );
        w.sample(
            SSE_BYTES,
            "",
            &[],
            Value::Unsigned(self.sse_bytes.load(Ordering::Relaxed)),
        );

        render_codes(
            &mut w,
            DOWNSTREAM_ERRORS,
            "Failed downstream API calls by error code.",
            &self.downstream_errors,
        );
        render_codes(
            &mut w,
            SOURCE_ERRORS,
            "Failed source operations by error code.",
            &self.source_errors,
        );
        w.family(
            A2A_TASKS,
            "A2A tasks held per tenant (live and retained terminal).",
            Kind::Gauge,
        );
        for (tenant, n) in self.a2a_tasks.lock().iter() {
            w.sample(
                A2A_TASKS,
                "",
                &[("tenant", tenant)],
                Value::Unsigned(*n as u64),
            );
        }
        w.family(A2A_CALLS, "A2A calls by method and outcome.", Kind::Counter);
        for ((method, outcome), n) in self.a2a_calls.snapshot() {
            w.sample(
                A2A_CALLS,
                "",
                &[("method", method), ("outcome", outcome)],
                Value::Unsigned(n),
            );
        }

        w.family(
            A2A_REMOTE_CALLS,
            "Calls proxied to registered remote A2A agents by agent, method and outcome.",
            Kind::Counter,
        );
        let mut rows = self.a2a_remote_calls.lock().clone();
        rows.sort_by(|a, b| a.0.cmp(&b.0));
        for (((tenant, agent), method, outcome), n) in &rows {
            w.sample(
                A2A_REMOTE_CALLS,
                "",
                &[
                    ("tenant", tenant),
                    ("agent", agent),
                    ("method", method),
                    ("outcome", outcome),
                ],
                Value::Unsigned(*n),
            );
        }
        w.family(
            A2A_REMOTE_UP,
            "Whether the last card fetch of each registered remote A2A agent worked (1) or not (0).",
            Kind::Gauge,
        );
        for ((tenant, agent), up) in self.a2a_remote_up.lock().iter() {
            w.sample(
                A2A_REMOTE_UP,
                "",
                &[("tenant", tenant), ("agent", agent)],
                Value::Unsigned(u64::from(*up)),
            );
        }

        self.externals
            .for_each(|name, help, reading| match reading {
                Reading::Counter(n) => {
                    w.family(name, help, Kind::Counter);
                    w.sample(name, "", &[], Value::Unsigned(n));
                }
                #[cfg(test)]
                Reading::Gauge(n) => {
                    w.family(name, help, Kind::Gauge);
                    w.sample(name, "", &[], Value::Signed(n));
                }
            });
    }

    fn render_requests(&self, w: &mut Writer<'_>) {
        // One read of each row serves both families, so `_count` agrees with the buckets.
        let rows: Vec<_> = RouteLabel::ALL
            .iter()
            .flat_map(|route| MethodLabel::ALL.iter().map(move |method| (*route, *method)))
            .map(|(route, method)| (route, method, self.http.snapshot(route, method)))
            .collect();

        w.family(
            REQUESTS,
            "HTTP requests by route family, method and status code.",
            Kind::Counter,
        );
        for (route, method, row) in &rows {
            for (slot, n) in row.statuses.iter().enumerate() {
                if *n == 0 {
                    continue;
                }
                w.sample(
                    REQUESTS,
                    "",
                    &[
                        ("route", route.as_str()),
                        ("method", method.as_str()),
                        ("status", labels::status_name(slot)),
                    ],
                    Value::Unsigned(*n),
                );
            }
        }

        w.family(
            DURATION,
            "Time from request arrival to response headers (for streams: to the first byte, \
             not the stream's lifetime).",
            Kind::Histogram,
        );
        for (route, method, row) in &rows {
            let count = row.count();
            if count == 0 {
                continue;
            }
            let (route, method) = (route.as_str(), method.as_str());
            let mut cumulative = 0u64;
            for (bucket, le) in BUCKET_LABELS.iter().enumerate() {
                cumulative = cumulative.wrapping_add(row.buckets[bucket]);
                w.sample(
                    DURATION,
                    "_bucket",
                    &[("route", route), ("method", method), ("le", le)],
                    Value::Unsigned(cumulative),
                );
            }
            let labels = [("route", route), ("method", method)];
            w.sample(
                DURATION,
                "_sum",
                &labels,
                Value::Float(Duration::from_nanos(row.sum_ns).as_secs_f64()),
            );
            w.sample(DURATION, "_count", &labels, Value::Unsigned(count));
        }
    }

    fn render_tenants(&self, w: &mut Writer<'_>) {
        let tenants = self.tenants.snapshot();
        w.family(SESSIONS, "Open MCP sessions by tenant.", Kind::Gauge);
        for (tenant, sessions, _) in &tenants {
            w.sample(
                SESSIONS,
                "",
                &[("tenant", tenant)],
                Value::Signed(*sessions),
            );
        }
        w.family(
            STREAMS,
            "Open response streams (SSE) by tenant.",
            Kind::Gauge,
        );
        for (tenant, _, streams) in &tenants {
            w.sample(STREAMS, "", &[("tenant", tenant)], Value::Signed(*streams));
        }
    }
}

fn render_codes(w: &mut Writer<'_>, name: &str, help: &str, codes: &CodeCounters) {
    w.family(name, help, Kind::Counter);
    for (code, n) in codes.snapshot() {
        w.sample(name, "", &[("code", code)], Value::Unsigned(n));
    }
}
