//! The Redis store's short local cache of validated sessions, so that a request naming a session
//! this instance validated a moment ago costs no Redis round trip.
//!
//! Owns [`SessionCache`]: per session id, the owner the record names, what validation returns,
//! and until when the entry may answer instead of Redis. Must not do IO: `store.rs` fills it from
//! `TOUCH` replies, and the backplane's subscriber (`subscriber.rs`) empties entries when a
//! session is deleted or changed on any instance (a `KIND_SESSION_GONE` broadcast, `frame.rs`).
//!
//! Why a stale entry cannot keep a dead session alive for long: an entry answers only
//! - while the backplane's subscription is live ([`SessionCache::listen`]; a disconnect clears
//!   every entry and stops inserts until both channels are subscribed again), so a DELETE on any
//!   instance reaches it within the pub/sub delivery time;
//! - for at most `max_age` after Redis confirmed the session (`[cluster] session_cache_ms`,
//!   default 1 s): the bound for an invalidation that was missed anyway;
//! - never past the session's expiry as Redis reported it, nor past the moment its expiry is due
//!   for a refresh (then `TOUCH` runs and moves it);
//! - only for the exact owner the record names (anything else asks Redis).
//!
//! A `TOUCH` reply that raced with an invalidation must not re-insert what was just removed: a
//! lookup that misses returns its shard's generation, every invalidation bumps it, and
//! [`SessionCache::insert`] drops an entry whose generation is no longer current.
//!
//! Size: at most [`CACHE_SHARDS`] × `capacity / CACHE_SHARDS` entries; a full shard first drops
//! its stale entries, then refuses the insert (the request still went to Redis: correct, only
//! slower). Each shard is one `parking_lot` mutex, never held across an `.await`; a hit takes the
//! lock, compares, clones two `Bytes` (no allocation).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

use crate::session::{IdHashBuilder, Owner, OwnerKey, SessionId, SessionInfo};

/// Shards of the cache (a power of two; spread by [`SessionId::shard64`]).
pub(super) const CACHE_SHARDS: usize = 32;

/// Most sessions the cache holds per process; past it a validation still goes to Redis.
pub(crate) const DEFAULT_SESSION_CACHE_CAPACITY: usize = 65_536;

/// One cached validation.
struct Entry {
    owner: OwnerKey,
    info: SessionInfo,
    /// The entry answers until this instant (the earliest of the bounds in the module doc).
    fresh_until: Instant,
}

#[derive(Default)]
struct Shard {
    entries: HashMap<SessionId, Entry, IdHashBuilder>,
    /// Bumped by every invalidation of an id of this shard (see the module doc).
    generation: u64,
}

/// Validated sessions this instance may answer for without Redis (see the module doc).
pub(crate) struct SessionCache {
    shards: Box<[Mutex<Shard>]>,
    /// Set while the backplane's subscription hears both channels; entries are used and
    /// inserted only then.
    listening: AtomicBool,
    max_age: Duration,
    per_shard: usize,
}

impl std::fmt::Debug for SessionCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionCache")
            .field("listening", &self.listening.load(Ordering::Relaxed))
            .field("max_age", &self.max_age)
            .finish_non_exhaustive()
    }
}

/// What a lookup found.
pub(super) enum Lookup {
    /// A fresh entry for this exact owner.
    Hit(SessionInfo),
    /// Ask Redis; insert the answer with this generation.
    Miss(u64),
}

impl SessionCache {
    /// A cache answering for at most `max_age` per confirmation and holding about `capacity`
    /// sessions; `max_age` zero disables it. Unused until [`SessionCache::listen`].
    pub(super) fn new(max_age: Duration, capacity: usize) -> Self {
        Self {
            shards: (0..CACHE_SHARDS)
                .map(|_| Mutex::new(Shard::default()))
                .collect(),
            listening: AtomicBool::new(false),
            max_age,
            per_shard: capacity.div_ceil(CACHE_SHARDS),
        }
    }

    fn shard(&self, id: &SessionId) -> &Mutex<Shard> {
        // `CACHE_SHARDS` is a power of two; the index is always in range.
        &self.shards[(id.shard64() as usize) & (CACHE_SHARDS - 1)]
    }

    fn is_enabled(&self) -> bool {
        !self.max_age.is_zero() && self.listening.load(Ordering::Acquire)
    }

    /// The cached validation of `id` for `owner`, or the generation to insert Redis's answer
    /// with.
    pub(super) fn lookup(&self, id: &SessionId, owner: Owner<'_>) -> Lookup {
        let mut shard = self.shard(id).lock();
        if self.is_enabled() {
            if let Some(entry) = shard.entries.get(id) {
                if Instant::now() < entry.fresh_until && entry.owner.is(owner) {
                    return Lookup::Hit(entry.info.clone());
                }
            }
        }
        // Stale (or not ours to answer): gone, so a full shard does not keep it.
        shard.entries.remove(id);
        Lookup::Miss(shard.generation)
    }

    /// Remembers Redis's validation of `id` for `owner`, fresh for at most `fresh_for` (capped
    /// by `max_age`), unless an invalidation of the shard came in since `generation` was read.
    pub(super) fn insert(
        &self,
        id: SessionId,
        owner: Owner<'_>,
        info: &SessionInfo,
        fresh_for: Duration,
        generation: u64,
    ) {
        if !self.is_enabled() || fresh_for.is_zero() {
            return;
        }
        let now = Instant::now();
        let fresh_until = now + fresh_for.min(self.max_age);
        let mut shard = self.shard(&id).lock();
        if shard.generation != generation {
            return;
        }
        if shard.entries.len() >= self.per_shard && !shard.entries.contains_key(&id) {
            shard.entries.retain(|_, entry| entry.fresh_until > now);
            if shard.entries.len() >= self.per_shard {
                return;
            }
        }
        shard.entries.insert(
            id,
            Entry {
                owner: OwnerKey::new(owner),
                info: info.clone(),
                fresh_until,
            },
        );
    }

    /// Forgets `id` (deleted or changed on some instance) and blocks inserts racing with it.
    pub(crate) fn invalidate(&self, id: &SessionId) {
        let mut shard = self.shard(id).lock();
        shard.generation = shard.generation.wrapping_add(1);
        shard.entries.remove(id);
    }

    /// The subscription hears both channels: entries may be used and inserted.
    pub(crate) fn listen(&self) {
        self.listening.store(true, Ordering::Release);
    }

    /// The subscription is gone: invalidations may be missed, so nothing is answered from the
    /// cache, and everything in it is dropped, until [`SessionCache::listen`].
    pub(crate) fn stop(&self) {
        self.listening.store(false, Ordering::Release);
        for shard in self.shards.iter() {
            let mut shard = shard.lock();
            shard.generation = shard.generation.wrapping_add(1);
            shard.entries.clear();
        }
    }

    /// Entries held now (tests).
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().entries.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ProtocolVersion;
    use bytes::Bytes;

    const A: Owner<'static> = Owner {
        tenant: "t",
        client: "c",
        caller: "anonymous",
    };

    fn info() -> SessionInfo {
        SessionInfo {
            version: ProtocolVersion::V2025_11_25,
            initialized: true,
            client_info: Bytes::from_static(b"{}"),
            capabilities: Bytes::from_static(b"{}"),
        }
    }

    fn miss(cache: &SessionCache, id: &SessionId, owner: Owner<'_>) -> u64 {
        match cache.lookup(id, owner) {
            Lookup::Miss(generation) => generation,
            Lookup::Hit(_) => panic!("unexpected hit"),
        }
    }

    fn is_hit(cache: &SessionCache, id: &SessionId, owner: Owner<'_>) -> bool {
        matches!(cache.lookup(id, owner), Lookup::Hit(_))
    }

    #[tokio::test(start_paused = true)]
    async fn answers_only_while_listening_fresh_and_for_the_owner() {
        let cache = SessionCache::new(Duration::from_secs(1), 1024);
        let id = SessionId::random();
        let generation = miss(&cache, &id, A);
        cache.insert(id, A, &info(), Duration::from_secs(5), generation);
        assert_eq!(cache.len(), 0, "not listening: nothing is inserted");

        cache.listen();
        let generation = miss(&cache, &id, A);
        cache.insert(id, A, &info(), Duration::from_secs(5), generation);
        assert!(is_hit(&cache, &id, A));
        assert!(!is_hit(&cache, &id, Owner::new("t", "c", "mallory")));
        // The foreign lookup dropped the entry: the owner asks Redis again.
        let generation = miss(&cache, &id, A);
        cache.insert(id, A, &info(), Duration::from_secs(5), generation);
        tokio::time::advance(Duration::from_millis(999)).await;
        assert!(is_hit(&cache, &id, A));
        tokio::time::advance(Duration::from_millis(2)).await;
        assert!(!is_hit(&cache, &id, A), "max age bounds every entry");

        // A shorter freshness (refresh due, expiry) wins over the max age.
        let generation = miss(&cache, &id, A);
        cache.insert(id, A, &info(), Duration::from_millis(10), generation);
        tokio::time::advance(Duration::from_millis(11)).await;
        assert!(!is_hit(&cache, &id, A));

        let generation = miss(&cache, &id, A);
        cache.insert(id, A, &info(), Duration::from_secs(5), generation);
        cache.stop();
        assert!(
            !is_hit(&cache, &id, A),
            "a lost subscription empties the cache"
        );
        cache.listen();
        assert_eq!(cache.len(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn an_invalidation_racing_with_a_fill_wins() {
        let cache = SessionCache::new(Duration::from_secs(1), 1024);
        cache.listen();
        let id = SessionId::random();
        let generation = miss(&cache, &id, A);
        cache.invalidate(&id);
        cache.insert(id, A, &info(), Duration::from_secs(5), generation);
        assert!(!is_hit(&cache, &id, A));
        let generation = miss(&cache, &id, A);
        cache.insert(id, A, &info(), Duration::from_secs(5), generation);
        cache.invalidate(&id);
        assert!(!is_hit(&cache, &id, A));
    }

    #[tokio::test(start_paused = true)]
    async fn size_is_bounded_and_zero_age_disables() {
        let cache = SessionCache::new(Duration::from_secs(1), CACHE_SHARDS);
        cache.listen();
        for _ in 0..10 * CACHE_SHARDS {
            let id = SessionId::random();
            let generation = miss(&cache, &id, A);
            cache.insert(id, A, &info(), Duration::from_secs(5), generation);
        }
        assert!(cache.len() <= CACHE_SHARDS, "{}", cache.len());
        let off = SessionCache::new(Duration::ZERO, 1024);
        off.listen();
        let id = SessionId::random();
        let generation = miss(&off, &id, A);
        off.insert(id, A, &info(), Duration::from_secs(5), generation);
        assert_eq!(off.len(), 0);
    }
}
