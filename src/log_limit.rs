//! Rate limiting of repeated warnings: a peer that makes every call fail (a dead downstream, a
//! stolen session id, an unreachable Redis) must not be able to turn each request into a log
//! line.
//!
//! Owns the [`LogLimiter`], its process-wide instance ([`limiter`]) and the [`warn_limited!`]
//! macro the request paths log through. A warning is keyed by (tenant, [`Kind`]): at most one
//! line per key per interval ([`DEFAULT_REPEAT_INTERVAL`], `[server.log] repeat_interval_ms`)
//! is printed, and it carries `suppressed = N`, the number of lines of that key dropped since
//! the previous printed one. Must not know what the warnings are about beyond their kind.
//!
//! Bounded and cheap: keys live in a fixed table of [`LOG_LIMIT_SLOTS`] slots picked by a hash
//! of the key (nothing is allocated, ever, after start), each slot behind its own `parking_lot` mutex
//! held for a few instructions, so different tenants and kinds rarely touch the same lock. Two
//! keys that land on the same slot take it from each other: the newcomer's line is printed and
//! the count of the one it displaced is lost (a collision can only let more lines through,
//! never hide a first one).

use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// Default interval between two printed lines of one (tenant, kind): lines in between are
/// counted, not printed, and the next printed line says how many (`suppressed`).
pub(crate) const DEFAULT_REPEAT_INTERVAL: Duration = Duration::from_secs(1);

/// Slots of the limiter's table: the most (tenant, kind) keys tracked at once. A key beyond
/// it shares a slot with another (see the module doc).
pub(crate) const LOG_LIMIT_SLOTS: usize = 1024;

/// What a repeated warning is about (one budget per tenant and kind; each kind is one message,
/// so a line's `suppressed` counts lines like it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Kind {
    /// A REST call's downstream failed (connection, status, body).
    DownstreamFailure,
    /// A REST call's downstream timed out.
    DownstreamTimeout,
    /// An MCP `tools/call`'s downstream failed or timed out.
    ToolCallFailed,
    /// A request named a live session of another caller.
    ForeignSession,
    /// `/readyz` found the shared session store or the backplane not answering.
    NotReady,
    /// `/readyz` found the backplane subscriptions not (yet) re-established.
    NotSubscribed,
    /// A legacy response could not be routed to the instance holding its stream.
    Unrouted,
    /// A stream-holder registration or a remote close did not reach Redis.
    Backplane,
    /// Something published a malformed message on a backplane channel.
    MalformedBackplane,
    /// The shared rate limit store (Redis) did not answer.
    RateLimitStore,
}

/// One key's budget.
#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    /// Hash of the key holding the slot (0: empty).
    key: u64,
    /// When its last line was printed.
    printed: Option<Instant>,
    /// Lines dropped since.
    suppressed: u64,
}

/// At most one line per (tenant, kind) per interval, in bounded memory.
#[derive(Debug)]
pub struct LogLimiter {
    slots: Box<[Mutex<Slot>]>,
    /// The interval in milliseconds (0: every line is printed).
    interval_ms: AtomicU64,
    hasher: std::collections::hash_map::RandomState,
}

impl LogLimiter {
    /// An empty limiter printing at most one line per key per `interval`.
    pub fn new(interval: Duration) -> Self {
        Self {
            slots: (0..LOG_LIMIT_SLOTS)
                .map(|_| Mutex::new(Slot::default()))
                .collect(),
            interval_ms: AtomicU64::new(millis(interval)),
            hasher: std::collections::hash_map::RandomState::new(),
        }
    }

    /// Changes the interval (`[server.log] repeat_interval_ms`, applied at start).
    pub fn set_interval(&self, interval: Duration) {
        self.interval_ms.store(millis(interval), Ordering::Relaxed);
    }

    /// Whether a line of (`tenant`, `kind`) should be printed now: `Some(suppressed)` (print
    /// it, with that count) or `None` (counted, not printed).
    pub(crate) fn admit(&self, tenant: &str, kind: Kind) -> Option<u64> {
        self.admit_at(tenant, kind, Instant::now())
    }

    /// [`LogLimiter::admit`] at `now` (tests inject the clock here).
    pub(crate) fn admit_at(&self, tenant: &str, kind: Kind, now: Instant) -> Option<u64> {
        let interval = Duration::from_millis(self.interval_ms.load(Ordering::Relaxed));
        if interval.is_zero() {
            return Some(0);
        }
        // Never 0, which marks an empty slot.
        let key = self.hasher.hash_one((tenant, kind)) | 1;
        let index = usize::try_from(key % LOG_LIMIT_SLOTS as u64).unwrap_or(0);
        let Some(slot) = self.slots.get(index) else {
            return Some(0);
        };
        let mut slot = slot.lock();
        if slot.key != key {
            *slot = Slot {
                key,
                printed: Some(now),
                suppressed: 0,
            };
            return Some(0);
        }
        match slot.printed {
            Some(printed) if now.saturating_duration_since(printed) < interval => {
                slot.suppressed = slot.suppressed.saturating_add(1);
                None
            }
            _ => {
                slot.printed = Some(now);
                Some(std::mem::take(&mut slot.suppressed))
            }
        }
    }
}

/// The process-wide limiter the request paths log through.
pub fn limiter() -> &'static LogLimiter {
    static LIMITER: OnceLock<LogLimiter> = OnceLock::new();
    LIMITER.get_or_init(|| LogLimiter::new(DEFAULT_REPEAT_INTERVAL))
}

/// `tracing::warn!` through the process-wide [`limiter`]: `warn_limited!(tenant, kind, fields…,
/// "message")` prints at most one line per (tenant, kind) per interval, with `tenant` and
/// `suppressed` added to the fields.
macro_rules! warn_limited {
    ($tenant:expr, $kind:expr, $($rest:tt)+) => {{
        let tenant: &str = $tenant;
        if let Some(suppressed) = $crate::log_limit::limiter().admit(tenant, $kind) {
            ::tracing::warn!(tenant, suppressed, $($rest)+);
        }
    }};
}
pub(crate) use warn_limited;

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Duration = Duration::from_secs(1);

    #[test]
    fn one_line_per_interval_with_the_count_of_the_rest() {
        let limiter = LogLimiter::new(SECOND);
        let start = Instant::now();
        let at = |ms: u64| start + Duration::from_millis(ms);
        assert_eq!(
            limiter.admit_at("t", Kind::DownstreamFailure, at(0)),
            Some(0)
        );
        for ms in 1..50 {
            assert_eq!(limiter.admit_at("t", Kind::DownstreamFailure, at(ms)), None);
        }
        assert_eq!(
            limiter.admit_at("t", Kind::DownstreamFailure, at(999)),
            None
        );
        // The next line after the interval says how many were dropped.
        assert_eq!(
            limiter.admit_at("t", Kind::DownstreamFailure, at(1000)),
            Some(50)
        );
        assert_eq!(
            limiter.admit_at("t", Kind::DownstreamFailure, at(1500)),
            None
        );
        assert_eq!(
            limiter.admit_at("t", Kind::DownstreamFailure, at(5000)),
            Some(1)
        );
        assert_eq!(
            limiter.admit_at("t", Kind::DownstreamFailure, at(6000)),
            Some(0)
        );
    }

    #[test]
    fn tenants_and_kinds_have_their_own_budget() {
        let limiter = LogLimiter::new(SECOND);
        let now = Instant::now();
        assert_eq!(limiter.admit_at("a", Kind::DownstreamFailure, now), Some(0));
        assert_eq!(limiter.admit_at("a", Kind::DownstreamFailure, now), None);
        assert_eq!(limiter.admit_at("b", Kind::DownstreamFailure, now), Some(0));
        assert_eq!(limiter.admit_at("a", Kind::DownstreamTimeout, now), Some(0));
        assert_eq!(limiter.admit_at("a", Kind::ForeignSession, now), Some(0));
        assert_eq!(limiter.admit_at("a", Kind::DownstreamTimeout, now), None);
    }

    #[test]
    fn a_zero_interval_prints_everything() {
        let limiter = LogLimiter::new(Duration::ZERO);
        let now = Instant::now();
        for _ in 0..3 {
            assert_eq!(limiter.admit_at("t", Kind::NotReady, now), Some(0));
        }
        limiter.set_interval(SECOND);
        assert_eq!(limiter.admit_at("t", Kind::NotReady, now), Some(0));
        assert_eq!(limiter.admit_at("t", Kind::NotReady, now), None);
    }

    #[test]
    fn many_keys_stay_in_the_fixed_table() {
        let limiter = LogLimiter::new(SECOND);
        let now = Instant::now();
        // Far more keys than slots: every first line of a key is printed, memory is the table.
        let mut printed = 0;
        for n in 0..(4 * LOG_LIMIT_SLOTS) {
            let tenant = format!("tenant-{n}");
            if limiter.admit_at(&tenant, Kind::Unrouted, now).is_some() {
                printed += 1;
            }
        }
        assert_eq!(printed, 4 * LOG_LIMIT_SLOTS);
        assert_eq!(limiter.slots.len(), LOG_LIMIT_SLOTS);
    }
}
