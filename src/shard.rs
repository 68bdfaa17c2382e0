//! One sharded map: `N` independently locked `HashMap`s, picked by bits the caller supplies.
//!
//! Owns [`Sharded`] and [`shrink_if_sparse`]; the session stores (`session/local.rs`,
//! `session/redis/store.rs`), the stream registry (`transport/stream/shard.rs`) and the
//! in-flight map (`transport/inflight.rs`) keep their maps in it. The caller chooses both the
//! map's hasher (server-minted ids use a cheap one, see `session/id.rs`; SipHash would cost
//! several times more on the hot path) and the bits that pick the shard (they must be
//! independent of the bucket bits the hasher yields, or one shard's buckets cluster).
//! Must not know what it stores: no session, stream or MCP types here. Locks are
//! `parking_lot` mutexes (no poisoning), held only for the caller's critical section and never
//! across an `.await`.

use std::collections::HashMap;
use std::hash::BuildHasher;

/// The hasher of the maps every request looks into (sessions' in-flight requests, the
/// catalog's clients, tenants and tools): foldhash with a per-process random seed. SipHash,
/// std's default, cost ~250 instructions per lookup on these short keys, several times per
/// request; foldhash's seeded hash keeps keys that come from clients (request ids) from being
/// chosen to collide, which is what std's seed is for.
pub(crate) type FastHash = foldhash::fast::RandomState;

/// A `HashMap` with [`FastHash`].
pub(crate) type FastMap<K, V> = std::collections::HashMap<K, V, FastHash>;

use parking_lot::{Mutex, MutexGuard};

/// `HashMap<K, V, S>` split over a power-of-two number of mutexes.
#[derive(Debug)]
pub(crate) struct Sharded<K, V, S> {
    shards: Box<[Mutex<HashMap<K, V, S>>]>,
    /// `shards.len() - 1`: the shard of `bits` is `bits & mask`.
    mask: usize,
}

impl<K, V, S: BuildHasher + Clone> Sharded<K, V, S> {
    /// `count` empty maps (rounded up to a power of two, at least one), each with `hasher`.
    pub(crate) fn with_hasher(count: usize, hasher: S) -> Self {
        let count = count.max(1).next_power_of_two();
        Self {
            shards: (0..count)
                .map(|_| Mutex::new(HashMap::with_hasher(hasher.clone())))
                .collect(),
            mask: count - 1,
        }
    }
}

impl<K, V, S> Sharded<K, V, S> {
    /// The index of the shard `bits` picks: a caller locking several shards at once locks them
    /// in ascending index order, so two such callers never wait on each other.
    #[inline]
    pub(crate) fn index(&self, bits: u64) -> usize {
        (bits as usize) & self.mask
    }

    /// Locks the shard that `bits` picks (the low bits, so they must be well spread).
    #[inline]
    pub(crate) fn shard(&self, bits: u64) -> MutexGuard<'_, HashMap<K, V, S>> {
        // Truncating to `usize` keeps the low bits, which is all the mask looks at.
        let index = (bits as usize) & self.mask;
        match self.shards.get(index) {
            Some(shard) => shard.lock(),
            None => unreachable!("the index is masked to the shard count"),
        }
    }

    /// Every shard in turn, each locked only while the caller holds its guard (sweeps,
    /// counts): never two at once unless the caller keeps them.
    pub(crate) fn shards(&self) -> impl Iterator<Item = MutexGuard<'_, HashMap<K, V, S>>> {
        self.shards.iter().map(|shard| shard.lock())
    }

    /// Entries over all shards (each locked in turn, so a moving total).
    pub(crate) fn len(&self) -> usize {
        self.shards().map(|shard| shard.len()).sum()
    }
}

/// Gives back the memory of a map that a burst left mostly empty: shrinks when its capacity is
/// over four times its length, above a floor of 64 (smaller maps are not worth the rehash).
pub(crate) fn shrink_if_sparse<K: Eq + std::hash::Hash, V, S: BuildHasher>(
    map: &mut HashMap<K, V, S>,
) {
    if map.capacity() > 64 && map.capacity() > 4 * map.len() {
        map.shrink_to_fit();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::hash_map::RandomState;

    #[test]
    fn entries_land_in_the_shard_their_bits_pick() {
        let map: Sharded<u64, u64, RandomState> = Sharded::with_hasher(12, RandomState::new());
        assert_eq!(map.shards().count(), 16);
        for key in 0..100u64 {
            map.shard(key).insert(key, key * 2);
        }
        assert_eq!(map.len(), 100);
        assert_eq!(map.shard(17).get(&17), Some(&34));
        assert_eq!(map.shard(1).get(&17), Some(&34), "17 & 15 == 1");
        assert_eq!(map.shard(2).get(&17), None);
        for mut shard in map.shards() {
            shard.clear();
        }
        assert_eq!(map.len(), 0);
    }
}
