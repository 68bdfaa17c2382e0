//! The MCP semantic-convention histograms in Prometheus form: `mcp.server.operation.duration`
//! (`mcp_server_operation_duration_seconds{mcp_method_name}`, every request the dispatcher
//! answers) and `mcp.server.session.duration` (`mcp_server_session_duration_seconds`, every
//! handshake-era session that ends by DELETE or expiry — with Redis, those this instance
//! deleted or claimed from the session ledger, so instances sum to the deployment), with the
//! conventions' bucket bounds.
//!
//! Owns the storage and the hot-path observation (relaxed atomics on a fixed array: no lock,
//! no allocation). The method label set is fixed (the methods the dispatcher knows, then
//! `other`), so a client cannot grow the series. Must not format text beyond its families.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::render::{Kind, Value, Writer};

/// Bucket upper bounds in seconds, as the MCP semantic conventions advise (`+Inf` implicit).
const BOUNDS_S: [f64; 14] = [
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];
const LABELS: [&str; 15] = [
    "0.01", "0.02", "0.05", "0.1", "0.2", "0.5", "1", "2", "5", "10", "30", "60", "120", "300",
    "+Inf",
];

/// The methods with a series of their own, in render order; anything else is `other`.
const METHODS: [&str; 11] = [
    "initialize",
    "ping",
    "server/discover",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/read",
    "prompts/list",
    "prompts/get",
    "subscriptions/listen",
    "other",
];

const OPERATION: &str = "mcp_server_operation_duration_seconds";
const SESSION: &str = "mcp_server_session_duration_seconds";

/// One histogram: non-cumulative bucket counts and the sum in microseconds.
#[derive(Debug, Default)]
struct Histogram {
    buckets: [AtomicU64; 15],
    sum_us: AtomicU64,
}

impl Histogram {
    fn observe(&self, elapsed: Duration) {
        let secs = elapsed.as_secs_f64();
        let slot = BOUNDS_S
            .iter()
            .position(|&b| secs <= b)
            .unwrap_or(BOUNDS_S.len());
        self.buckets[slot].fetch_add(1, Ordering::Relaxed);
        let us = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
        self.sum_us.fetch_add(us, Ordering::Relaxed);
    }

    fn render(&self, w: &mut Writer<'_>, name: &str, labels: &[(&str, &str)]) {
        let counts: Vec<u64> = self
            .buckets
            .iter()
            .map(|b| b.load(Ordering::Relaxed))
            .collect();
        let count: u64 = counts.iter().sum();
        if count == 0 {
            return;
        }
        let mut cumulative = 0u64;
        let mut with_le: Vec<(&str, &str)> = labels.to_vec();
        with_le.push(("le", ""));
        for (n, le) in counts.iter().zip(LABELS) {
            cumulative += n;
            if let Some(last) = with_le.last_mut() {
                last.1 = le;
            }
            w.sample(name, "_bucket", &with_le, Value::Unsigned(cumulative));
        }
        let sum = self.sum_us.load(Ordering::Relaxed) as f64 / 1e6;
        w.sample(name, "_sum", labels, Value::Float(sum));
        w.sample(name, "_count", labels, Value::Unsigned(count));
    }
}

/// The two families.
#[derive(Debug, Default)]
pub(crate) struct McpHistograms {
    operations: [Histogram; METHODS.len()],
    sessions: Histogram,
}

impl McpHistograms {
    /// One request answered by the dispatcher.
    pub(crate) fn operation(&self, method: &str, elapsed: Duration) {
        let slot = METHODS[..METHODS.len() - 1]
            .iter()
            .position(|&m| m == method)
            .unwrap_or(METHODS.len() - 1);
        self.operations[slot].observe(elapsed);
    }

    /// One session ended after `lifetime`.
    pub(crate) fn session(&self, lifetime: Duration) {
        self.sessions.observe(lifetime);
    }

    pub(crate) fn render(&self, w: &mut Writer<'_>) {
        w.family(
            OPERATION,
            "MCP requests by method, from dispatch to the answer (mcp.server.operation.duration).",
            Kind::Histogram,
        );
        for (method, histogram) in METHODS.iter().zip(&self.operations) {
            histogram.render(w, OPERATION, &[("mcp_method_name", method)]);
        }
        w.family(
            SESSION,
            "Lifetime of handshake-era sessions that ended by DELETE or expiry \
             (mcp.server.session.duration).",
            Kind::Histogram,
        );
        self.sessions.render(w, SESSION, &[]);
    }
}
