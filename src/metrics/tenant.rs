//! Per-tenant gauges (active sessions, active streams) and the [`GaugeGuard`] that a stream body
//! holds so the gauge goes down when the body is dropped, however the stream ends.
//!
//! Owns the tenant map; must not decide which tenants exist (configuration does, through the
//! names callers pass and [`TenantMap::prune`] on reload) and must not format text.
//!
//! Concurrency: the map is a `RwLock<HashMap<Arc<str>, Arc<TenantGauges>>>`. Opening and
//! closing take the read lock for one lookup; only the first sight of a tenant takes the write
//! lock (and allocates its entry). A guard holds the `Arc<TenantGauges>`, so its drop is one
//! atomic decrement with no lookup and no lock. The gauges are `AtomicI64` so a stray close
//! shows as `-1` instead of wrapping to 2^64.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;

/// Most tenants with their own series. Tenants are a bounded set from configuration; should a
/// caller pass more distinct names than this (a bug, or a misconfiguration), the excess are
/// counted together under [`OVERFLOW_TENANT`] so the scrape size stays bounded.
pub(crate) const MAX_TENANT_SERIES: usize = 4096;

/// The tenant label value that collects tenants beyond [`MAX_TENANT_SERIES`].
pub(crate) const OVERFLOW_TENANT: &str = "_overflow";

/// The live gauges of one tenant.
#[derive(Debug, Default)]
pub(crate) struct TenantGauges {
    /// Sessions opened minus sessions closed.
    pub(crate) sessions: AtomicI64,
    /// Streams opened minus streams closed (including by dropping a [`GaugeGuard`]).
    pub(crate) streams: AtomicI64,
}

/// Which gauge of a tenant a guard or a call moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Gauge {
    Sessions,
    Streams,
}

impl TenantGauges {
    fn gauge(&self, gauge: Gauge) -> &AtomicI64 {
        match gauge {
            Gauge::Sessions => &self.sessions,
            Gauge::Streams => &self.streams,
        }
    }
}

/// Tenant name → gauges.
#[derive(Debug, Default)]
pub(crate) struct TenantMap {
    tenants: RwLock<HashMap<Arc<str>, Arc<TenantGauges>>>,
}

impl TenantMap {
    /// The gauges of `tenant`, created on first sight (or the overflow entry once the map is
    /// full).
    pub(crate) fn get(&self, tenant: &str) -> Arc<TenantGauges> {
        {
            let tenants = self.tenants.read();
            if let Some(gauges) = tenants.get(tenant) {
                return Arc::clone(gauges);
            }
        }
        let mut tenants = self.tenants.write();
        // Another thread may have inserted it between the two locks.
        if let Some(gauges) = tenants.get(tenant) {
            return Arc::clone(gauges);
        }
        let name = if tenants.len() < MAX_TENANT_SERIES {
            tenant
        } else {
            OVERFLOW_TENANT
        };
        Arc::clone(tenants.entry(Arc::from(name)).or_default())
    }

    /// Moves `gauge` of `tenant` by `delta`.
    pub(crate) fn add(&self, tenant: &str, gauge: Gauge, delta: i64) {
        self.get(tenant)
            .gauge(gauge)
            .fetch_add(delta, Ordering::Relaxed);
    }

    /// Sets `gauge` of every tenant from `values` (tenant, value); tenants not listed read 0.
    /// For gauges whose source of truth is counted elsewhere and read at scrape time.
    pub(crate) fn set_all(&self, gauge: Gauge, values: &[(String, i64)]) {
        {
            let tenants = self.tenants.read();
            for gauges in tenants.values() {
                gauges.gauge(gauge).store(0, Ordering::Relaxed);
            }
        }
        for (tenant, value) in values {
            self.get(tenant)
                .gauge(gauge)
                .store(*value, Ordering::Relaxed);
        }
    }

    /// Opens `gauge` of `tenant` and returns the guard that closes it.
    pub(crate) fn guard(&self, tenant: &str, gauge: Gauge) -> GaugeGuard {
        let gauges = self.get(tenant);
        gauges.gauge(gauge).fetch_add(1, Ordering::Relaxed);
        GaugeGuard { gauges, gauge }
    }

    /// Forgets tenants that `keep` rejects and that have nothing open, so tenants removed by a
    /// reload leave the scrape once their last session and stream are gone. Tenants still
    /// holding something stay (their closes must land somewhere) until a later prune.
    #[cfg(test)]
    pub(crate) fn prune(&self, keep: impl Fn(&str) -> bool) {
        let mut tenants = self.tenants.write();
        tenants.retain(|name, gauges| {
            keep(name)
                || gauges.sessions.load(Ordering::Relaxed) != 0
                || gauges.streams.load(Ordering::Relaxed) != 0
        });
    }

    /// `(tenant, sessions, streams)` for every tenant, sorted by name.
    pub(crate) fn snapshot(&self) -> Vec<(Arc<str>, i64, i64)> {
        let tenants = self.tenants.read();
        let mut rows: Vec<_> = tenants
            .iter()
            .map(|(name, gauges)| {
                (
                    Arc::clone(name),
                    gauges.sessions.load(Ordering::Relaxed),
                    gauges.streams.load(Ordering::Relaxed),
                )
            })
            .collect();
        drop(tenants);
        rows.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        rows
    }
}

/// Holds one unit of a tenant gauge (an open stream, typically) and gives it back on drop.
///
/// Move it into the response body so the gauge follows the body's life: it falls when hyper
/// drops the body, whether the stream finished, the client went away or the server drained.
#[derive(Debug)]
#[must_use = "the gauge falls again as soon as the guard is dropped"]
pub struct GaugeGuard {
    gauges: Arc<TenantGauges>,
    gauge: Gauge,
}

impl Drop for GaugeGuard {
    fn drop(&mut self) {
        self.gauges
            .gauge(self.gauge)
            .fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gauges_of(map: &TenantMap, tenant: &str) -> (i64, i64) {
        map.snapshot()
            .into_iter()
            .find(|(name, _, _)| &**name == tenant)
            .map(|(_, sessions, streams)| (sessions, streams))
            .expect("tenant present")
    }

    #[test]
    fn add_moves_only_the_named_gauge_of_the_named_tenant() {
        let map = TenantMap::default();
        map.add("a", Gauge::Sessions, 1);
        map.add("a", Gauge::Sessions, 1);
        map.add("a", Gauge::Streams, 1);
        map.add("b", Gauge::Sessions, 1);
        map.add("a", Gauge::Sessions, -1);
        assert_eq!(gauges_of(&map, "a"), (1, 1));
        assert_eq!(gauges_of(&map, "b"), (1, 0));
    }

    #[test]
    fn guard_survives_a_prune_of_its_tenant_and_still_decrements() {
        let map = TenantMap::default();
        let guard = map.guard("gone", Gauge::Streams);
        map.prune(|_| false);
        // Still open, so still listed.
        assert_eq!(gauges_of(&map, "gone"), (0, 1));
        drop(guard);
        assert_eq!(gauges_of(&map, "gone"), (0, 0));
        map.prune(|_| false);
        assert!(map.snapshot().is_empty());
    }

    #[test]
    fn prune_keeps_configured_tenants_even_when_idle() {
        let map = TenantMap::default();
        map.add("kept", Gauge::Sessions, 0);
        map.add("dropped", Gauge::Sessions, 0);
        map.prune(|name| name == "kept");
        let names: Vec<_> = map.snapshot().into_iter().map(|row| row.0).collect();
        assert_eq!(names, vec![Arc::<str>::from("kept")]);
    }

    #[test]
    fn tenants_beyond_the_cap_share_the_overflow_series() {
        let map = TenantMap::default();
        for i in 0..MAX_TENANT_SERIES {
            map.add(&format!("t{i}"), Gauge::Sessions, 0);
        }
        map.add("one_more", Gauge::Sessions, 1);
        map.add("and_another", Gauge::Sessions, 1);
        let rows = map.snapshot();
        assert_eq!(rows.len(), MAX_TENANT_SERIES + 1);
        assert_eq!(gauges_of(&map, OVERFLOW_TENANT), (2, 0));
        assert!(!rows.iter().any(|row| &*row.0 == "one_more"));
    }
}
