//! HTTP request counters and the request-latency histogram: fixed arrays of `AtomicU64`
//! indexed by (route, method), written on every request with three relaxed `fetch_add`s.
//!
//! Owns the storage and the hot-path `observe`; must not take a lock or allocate on that path
//! (`docs/hot-path.md`), and must not format text (it hands `render.rs` plain numbers).
//!
//! Layout: one [`Row`] per (route, method), aligned to 128 bytes so two cores recording
//! different routes never write the same cache line (128 covers the adjacent-line prefetcher
//! on x86 and the line size on Apple silicon). A row holds the per-status counters, the
//! non-cumulative bucket counts and the latency sum; cumulative counts and `_count` are derived
//! when rendering, so an observation costs one increment per family instead of one per bucket.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::labels::{status_index, MethodLabel, RouteLabel, STATUS_SLOTS};

/// Upper bounds of the latency buckets in nanoseconds (the `+Inf` bucket is implicit).
pub(crate) const BUCKET_BOUNDS_NS: [u64; 14] = [
    500_000,
    1_000_000,
    2_500_000,
    5_000_000,
    10_000_000,
    25_000_000,
    50_000_000,
    100_000_000,
    250_000_000,
    500_000_000,
    1_000_000_000,
    2_500_000_000,
    5_000_000_000,
    10_000_000_000,
];

/// The `le` label value of each bucket, `+Inf` last, in the same order as the bucket slots.
pub(crate) const BUCKET_LABELS: [&str; BUCKETS] = [
    "0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1",
    "2.5", "5", "10", "+Inf",
];

/// Number of bucket slots, `+Inf` included.
pub(crate) const BUCKETS: usize = BUCKET_BOUNDS_NS.len() + 1;

/// The counters of one (route, method) pair. Every field is written with `Relaxed` ordering:
/// each is an independent monotonic counter and a scrape needs no ordering between them (a
/// scrape racing an observation may see the status counted before the bucket, never a loss).
#[repr(align(128))]
pub(crate) struct Row {
    /// Requests per status slot (`labels::status_index`).
    statuses: [AtomicU64; STATUS_SLOTS],
    /// Observations per bucket, *not* cumulative: slot `i` counts durations in
    /// `(bound[i-1], bound[i]]`, the last slot those above 10 s.
    buckets: [AtomicU64; BUCKETS],
    /// Sum of observed durations in nanoseconds. Wraps after 2^64 ns (584 years of summed
    /// latency, over 50 years at 100k req/s of 100 µs each), which Prometheus reads as a reset.
    sum_ns: AtomicU64,
}

impl Row {
    const fn new() -> Self {
        Self {
            statuses: [const { AtomicU64::new(0) }; STATUS_SLOTS],
            buckets: [const { AtomicU64::new(0) }; BUCKETS],
            sum_ns: AtomicU64::new(0),
        }
    }
}

/// A consistent-enough copy of one row taken at scrape time: each value is read once, so the
/// cumulative buckets, `_count` and `_sum` rendered from it agree with each other.
pub(crate) struct RowSnapshot {
    pub(crate) statuses: [u64; STATUS_SLOTS],
    pub(crate) buckets: [u64; BUCKETS],
    pub(crate) sum_ns: u64,
}

impl RowSnapshot {
    /// Observations in the histogram (the `+Inf` cumulative count and `_count`).
    pub(crate) fn count(&self) -> u64 {
        self.buckets
            .iter()
            .fold(0u64, |acc, n| acc.wrapping_add(*n))
    }
}

/// All request rows, `RouteLabel::COUNT * MethodLabel::COUNT` of them (about 25 KB).
pub(crate) struct HttpMetrics {
    rows: [Row; ROWS],
}

const ROWS: usize = RouteLabel::COUNT * MethodLabel::COUNT;

impl HttpMetrics {
    pub(crate) const fn new() -> Self {
        Self {
            rows: [const { Row::new() }; ROWS],
        }
    }

    /// Records one request. Three relaxed increments on one row; no lock, no allocation.
    #[inline]
    pub(crate) fn observe(
        &self,
        route: RouteLabel,
        method: MethodLabel,
        status: u16,
        elapsed: Duration,
    ) {
        let row = &self.rows[row_index(route, method)];
        // A duration beyond u64 nanoseconds (584 years) saturates; it lands in `+Inf` either way.
        let nanos = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        row.statuses[status_index(status)].fetch_add(1, Ordering::Relaxed);
        row.buckets[bucket_index(nanos)].fetch_add(1, Ordering::Relaxed);
        row.sum_ns.fetch_add(nanos, Ordering::Relaxed);
    }

    /// Reads one row for rendering.
    pub(crate) fn snapshot(&self, route: RouteLabel, method: MethodLabel) -> RowSnapshot {
        let row = &self.rows[row_index(route, method)];
        RowSnapshot {
            statuses: std::array::from_fn(|i| row.statuses[i].load(Ordering::Relaxed)),
            buckets: std::array::from_fn(|i| row.buckets[i].load(Ordering::Relaxed)),
            sum_ns: row.sum_ns.load(Ordering::Relaxed),
        }
    }
}

#[inline]
const fn row_index(route: RouteLabel, method: MethodLabel) -> usize {
    route.index() * MethodLabel::COUNT + method.index()
}

/// The bucket a duration falls in: the first whose upper bound is `>=` it (Prometheus buckets
/// are `le`, inclusive), or `+Inf`.
#[inline]
pub(crate) fn bucket_index(nanos: u64) -> usize {
    // 14 sorted bounds: a binary search is four compares, no allocation.
    BUCKET_BOUNDS_NS.partition_point(|bound| *bound < nanos)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_bounds_match_their_labels() {
        for (bound, label) in BUCKET_BOUNDS_NS.iter().zip(BUCKET_LABELS) {
            let seconds: f64 = label.parse().expect("numeric bound label");
            assert_eq!((seconds * 1e9).round() as u64, *bound, "{label}");
        }
        assert_eq!(BUCKET_LABELS[BUCKETS - 1], "+Inf");
        assert!(BUCKET_BOUNDS_NS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn durations_land_in_the_first_bucket_whose_bound_is_not_below_them() {
        let check = |nanos: u64, expected_le: &str| {
            assert_eq!(
                BUCKET_LABELS[bucket_index(nanos)],
                expected_le,
                "{nanos} ns"
            );
        };
        check(0, "0.0005");
        check(499_999, "0.0005");
        check(500_000, "0.0005"); // `le` is inclusive
        check(500_001, "0.001");
        check(1_000_000, "0.001");
        check(7_000_000, "0.01");
        check(999_999_999, "1");
        check(1_000_000_000, "1");
        check(10_000_000_000, "10");
        check(10_000_000_001, "+Inf");
        check(u64::MAX, "+Inf");
    }

    #[test]
    fn observe_counts_status_bucket_and_sum_on_its_own_row() {
        let metrics = HttpMetrics::new();
        metrics.observe(
            RouteLabel::Mcp,
            MethodLabel::Post,
            200,
            Duration::from_micros(300),
        );
        metrics.observe(
            RouteLabel::Mcp,
            MethodLabel::Post,
            418,
            Duration::from_millis(3),
        );
        metrics.observe(
            RouteLabel::Mcp,
            MethodLabel::Post,
            200,
            Duration::from_secs(3600),
        );

        let row = metrics.snapshot(RouteLabel::Mcp, MethodLabel::Post);
        assert_eq!(row.statuses[status_index(200)], 2);
        assert_eq!(row.statuses[status_index(418)], 1);
        assert_eq!(row.count(), 3);
        assert_eq!(row.buckets[0], 1);
        assert_eq!(row.buckets[3], 1); // 3 ms: (2.5 ms, 5 ms]
        assert_eq!(row.buckets[BUCKETS - 1], 1);
        assert_eq!(row.sum_ns, 300_000 + 3_000_000 + 3_600_000_000_000);

        let other = metrics.snapshot(RouteLabel::Mcp, MethodLabel::Get);
        assert_eq!(other.count(), 0);
        assert!(other.statuses.iter().all(|n| *n == 0));
    }

    #[test]
    fn a_duration_too_long_for_u64_nanoseconds_saturates() {
        let metrics = HttpMetrics::new();
        metrics.observe(RouteLabel::Other, MethodLabel::Other, 200, Duration::MAX);
        let row = metrics.snapshot(RouteLabel::Other, MethodLabel::Other);
        assert_eq!(row.sum_ns, u64::MAX);
        assert_eq!(row.buckets[BUCKETS - 1], 1);
    }

    #[test]
    fn rows_do_not_share_cache_lines() {
        assert_eq!(std::mem::align_of::<Row>(), 128);
        assert_eq!(std::mem::size_of::<Row>() % 128, 0);
    }
}
