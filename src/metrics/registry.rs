//! The open-ended parts of the registry, all off the hot path: counters by error code, and the
//! families other modules own and hand over ([`Metrics::register_counter`],
//! [`Metrics::register_gauge_fn`]).
//!
//! Owns their storage behind small locks (errors are rare; registration happens at startup, so
//! correctness beats speed here); must not format text and must not be called per request.
//!
//! [`Metrics::register_counter`]: super::Metrics::register_counter
//! [`Metrics::register_gauge_fn`]: super::Metrics::register_gauge_fn

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

/// A gauge computed on scrape.
#[cfg(test)]
pub(crate) type GaugeFn = Box<dyn Fn() -> i64 + Send + Sync>;

/// Counts per error code. Codes are `&'static str`, so the set is bounded by the program's text.
#[derive(Debug, Default)]
pub(crate) struct CodeCounters {
    /// `(code, count)` in first-seen order; a handful of entries, searched linearly.
    codes: Mutex<Vec<(&'static str, u64)>>,
}

impl CodeCounters {
    pub(crate) fn add(&self, code: &'static str) {
        let mut codes = self.codes.lock();
        match codes.iter_mut().find(|(known, _)| *known == code) {
            Some((_, count)) => *count += 1,
            None => codes.push((code, 1)),
        }
    }

    /// `(code, count)` sorted by code.
    pub(crate) fn snapshot(&self) -> Vec<(&'static str, u64)> {
        let mut codes = self.codes.lock().clone();
        codes.sort_unstable_by_key(|(code, _)| *code);
        codes
    }
}

/// Counters keyed by two static label values (A2A calls: method, outcome); a few dozen
/// entries at most, searched linearly under a small lock.
#[derive(Debug, Default)]
pub(crate) struct PairCounters {
    pairs: Mutex<Vec<((&'static str, &'static str), u64)>>,
}

impl PairCounters {
    pub(crate) fn add(&self, first: &'static str, second: &'static str) {
        let mut pairs = self.pairs.lock();
        match pairs
            .iter_mut()
            .find(|(known, _)| *known == (first, second))
        {
            Some((_, count)) => *count += 1,
            None => pairs.push(((first, second), 1)),
        }
    }

    /// `((first, second), count)` sorted by labels.
    pub(crate) fn snapshot(&self) -> Vec<((&'static str, &'static str), u64)> {
        let mut pairs = self.pairs.lock().clone();
        pairs.sort_unstable_by_key(|(labels, _)| *labels);
        pairs
    }
}

/// Where an externally owned family's value comes from.
pub(crate) enum Source {
    /// A counter another module increments.
    Counter(Arc<AtomicU64>),
    /// A gauge computed when scraped.
    #[cfg(test)]
    Gauge(GaugeFn),
}

/// A family handed over by another module.
pub(crate) struct External {
    pub(crate) name: &'static str,
    pub(crate) help: &'static str,
    pub(crate) source: Source,
}

impl fmt::Debug for External {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.source {
            Source::Counter(_) => "counter",
            #[cfg(test)]
            Source::Gauge(_) => "gauge",
        };
        f.debug_struct("External")
            .field("name", &self.name)
            .field("kind", &kind)
            .finish()
    }
}

/// The registered families, kept sorted by name so rendering order does not depend on the
/// order modules were wired in.
#[derive(Debug, Default)]
pub(crate) struct Externals {
    families: Mutex<Vec<External>>,
}

impl Externals {
    /// Adds a family; `false` if the name is taken.
    pub(crate) fn insert(&self, family: External) -> bool {
        let mut families = self.families.lock();
        match families.binary_search_by(|known| known.name.cmp(family.name)) {
            Ok(_) => false,
            Err(at) => {
                families.insert(at, family);
                true
            }
        }
    }

    /// Calls `each(name, help, value)` for every family in name order. Gauge functions run
    /// under the lock, so they must not register families themselves.
    pub(crate) fn for_each(&self, mut each: impl FnMut(&'static str, &'static str, Reading)) {
        let families = self.families.lock();
        for family in families.iter() {
            let reading = match &family.source {
                Source::Counter(counter) => Reading::Counter(counter.load(Ordering::Relaxed)),
                #[cfg(test)]
                Source::Gauge(compute) => Reading::Gauge(compute()),
            };
            each(family.name, family.help, reading);
        }
    }
}

/// The value of an external family at scrape time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reading {
    Counter(u64),
    #[cfg(test)]
    Gauge(i64),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_counters_count_each_code_and_list_them_sorted() {
        let codes = CodeCounters::default();
        for code in ["timeout", "connect", "timeout", "status_5xx", "timeout"] {
            codes.add(code);
        }
        assert_eq!(
            codes.snapshot(),
            vec![("connect", 1), ("status_5xx", 1), ("timeout", 3)]
        );
    }

    #[test]
    fn externals_refuse_a_taken_name_and_list_by_name() {
        let externals = Externals::default();
        let counter = Arc::new(AtomicU64::new(7));
        assert!(externals.insert(External {
            name: "z_total",
            help: "z",
            source: Source::Counter(Arc::clone(&counter)),
        }));
        assert!(externals.insert(External {
            name: "a_gauge",
            help: "a",
            source: Source::Gauge(Box::new(|| -3)),
        }));
        assert!(!externals.insert(External {
            name: "z_total",
            help: "again",
            source: Source::Gauge(Box::new(|| 0)),
        }));
        counter.fetch_add(1, Ordering::Relaxed);
        let mut seen = Vec::new();
        externals.for_each(|name, _, reading| seen.push((name, reading)));
        assert_eq!(
            seen,
            vec![
                ("a_gauge", Reading::Gauge(-3)),
                ("z_total", Reading::Counter(8))
            ]
        );
    }
}
