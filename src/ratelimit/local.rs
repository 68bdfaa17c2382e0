//! The process-local bucket store: TATs in sharded maps, bounded in size.
//!
//! Keys are bytes built by the caller on the stack; a lookup allocates nothing, only a bucket
//! seen for the first time copies its key. A shard at its cap first forgets the buckets whose
//! TAT has passed (they are the same as fresh ones, so forgetting them changes no decision);
//! a shard still full tracks no new bucket, and the call it was for passes (counted as
//! `untracked`). Must not know rules or callers.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::MutexGuard;
use smallvec::SmallVec;

use super::gcra::{Decision, Shape};
use crate::shard::{FastHash, FastMap, Sharded};

type Map = FastMap<Box<[u8]>, u64>;

const SHARDS: usize = 16;

/// Buckets by key. One per process for tool-call limits (without `[cluster]`) and one for
/// failed authentication attempts.
#[derive(Debug)]
pub(crate) struct LocalStore {
    shards: Sharded<Box<[u8]>, u64, FastHash>,
    /// Most buckets per shard.
    cap: usize,
    epoch: Instant,
    /// Calls that passed because their bucket could not be tracked (every shard full).
    pub(crate) untracked: Arc<AtomicU64>,
}

impl LocalStore {
    /// A store holding at most about `max_keys` buckets.
    pub(crate) fn new(max_keys: usize) -> Self {
        Self {
            shards: Sharded::with_hasher(SHARDS, FastHash::default()),
            cap: (max_keys / SHARDS).max(1),
            epoch: Instant::now(),
            untracked: Arc::default(),
        }
    }

    /// Microseconds since the store was made: the clock of every TAT in it.
    pub(crate) fn now_us(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_micros()).unwrap_or(u64::MAX)
    }

    /// The bits that pick a key's shard: a hash with a fixed seed of its own, independent of
    /// the maps' (random) bucket hash.
    fn bits(key: &[u8]) -> u64 {
        use std::hash::BuildHasher;
        foldhash::fast::FixedState::with_seed(0x5eed_1e55).hash_one(key)
    }

    /// Takes one call from every bucket of `items` at once, or from none: `Err((i, retry))`
    /// names the first bucket that refuses and how many microseconds until it would not.
    pub(crate) fn take_all(&self, items: &[(&[u8], Shape)]) -> Result<(), (usize, u64)> {
        let now = self.now_us();
        // Shards locked in ascending order (no two calls can wait on each other), each once.
        let mut order: SmallVec<[usize; 4]> = items
            .iter()
            .map(|(k, _)| self.shards.index(Self::bits(k)))
            .collect();
        order.sort_unstable();
        order.dedup();
        let mut guards: SmallVec<[(usize, MutexGuard<'_, Map>); 4]> = order
            .iter()
            .map(|&i| (i, self.shards.shard(i as u64)))
            .collect();
        let mut next: SmallVec<[u64; 4]> = SmallVec::with_capacity(items.len());
        for (i, (key, shape)) in items.iter().enumerate() {
            let map = guard_for(&mut guards, self.shards.index(Self::bits(key)));
            match shape.decide(map.get(*key).copied(), now) {
                Decision::Allow { tat } => next.push(tat),
                Decision::Deny { retry_after_us } => return Err((i, retry_after_us)),
            }
        }
        for ((key, _), tat) in items.iter().zip(next) {
            let map = guard_for(&mut guards, self.shards.index(Self::bits(key)));
            if let Some(stored) = map.get_mut(*key) {
                *stored = tat;
                continue;
            }
            if map.len() >= self.cap {
                map.retain(|_, stored| *stored > now);
            }
            if map.len() >= self.cap {
                self.untracked.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            map.insert(Box::from(*key), tat);
        }
        Ok(())
    }

    /// Whether the bucket `key` would refuse a call now: the microseconds until it would not.
    /// Takes nothing.
    pub(crate) fn refuses(&self, key: &[u8], shape: Shape) -> Option<u64> {
        let now = self.now_us();
        let map = self.shards.shard(Self::bits(key));
        match shape.decide(map.get(key).copied(), now) {
            Decision::Allow { .. } => None,
            Decision::Deny { retry_after_us } => Some(retry_after_us),
        }
    }

    /// Buckets tracked now (tests).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.shards.len()
    }
}

fn guard_for<'g, 'm>(guards: &'g mut [(usize, MutexGuard<'m, Map>)], shard: usize) -> &'g mut Map {
    let position = guards
        .iter()
        .position(|(i, _)| *i == shard)
        .unwrap_or_default();
    &mut guards[position].1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn several_buckets_are_taken_from_together_or_not_at_all() {
        let store = LocalStore::new(1_000);
        let roomy = Shape::new(100, 3_600_000_000, 100);
        let tight = Shape::new(1, 60_000_000, 1);
        assert!(store.take_all(&[(b"a", roomy), (b"b", tight)]).is_ok());
        let refused = store.take_all(&[(b"a", roomy), (b"b", tight)]);
        assert!(
            matches!(refused, Err((1, retry)) if retry > 59_000_000),
            "{refused:?}"
        );
        // The refused call took nothing from `a`: 99 more fit in its burst of 100, not 98.
        for _ in 0..99 {
            assert!(store.take_all(&[(b"a", roomy)]).is_ok());
        }
        assert!(store.take_all(&[(b"a", roomy)]).is_err());
        assert!(store.refuses(b"b", tight).is_some());
        assert!(store.refuses(b"c", tight).is_none());
    }

    #[test]
    fn a_full_store_forgets_passed_buckets_and_stays_bounded() {
        let store = LocalStore::new(SHARDS * 4);
        // Buckets that are passed at once (a 1 µs interval).
        let quick = Shape::new(1_000_000, 1_000_000, 1);
        for i in 0u32..10_000 {
            let _ = store.take_all(&[(&i.to_be_bytes(), quick)]);
        }
        assert!(store.len() <= SHARDS * 4, "{}", store.len());
        // Long-lived buckets: the store stops tracking new ones instead of growing.
        let slow = Shape::new(1, 3_600_000_000, 1);
        for i in 0u32..10_000 {
            let _ = store.take_all(&[(&(i + 1_000_000).to_be_bytes(), slow)]);
        }
        assert!(store.len() <= SHARDS * 4, "{}", store.len());
        assert!(store.untracked.load(Ordering::Relaxed) > 0);
    }
}
