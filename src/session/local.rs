//! The process-local session store: sharded maps in memory (the embedded, single-instance mode).
//!
//! Owns session records of this process, idle and init-timeout expiry, and the per-tenant and
//! per-caller caps.
//! Must not hold sockets or know about streams: the sweeper (in `transport::stream`) asks
//! [`LocalStore::expire`] for expired ids and closes their streams itself.
//!
//! Concurrency: records live in [`SESSION_SHARDS`] maps ([`crate::shard::Sharded`]), picked
//! by the id's random bits, so requests of different sessions rarely contend. The per-tenant and
//! per-caller counts live behind one more mutex, taken only by create, delete and expiry (never
//! by validation), so both caps are checked and counted in one step. No lock is held across an `.await` and no two locks are held at once.

use std::collections::HashMap;
use std::future::{ready, Future};

use parking_lot::{Mutex, MutexGuard};
use tokio::time::Instant;

use super::id::IdHashBuilder;
use super::{
    Handshake, NewSession, Owner, OwnerKey, SessionConfig, SessionError, SessionId, SessionInfo,
    SessionRecord, SessionStore,
};
use crate::shard::{shrink_if_sparse, Sharded};

/// Number of independently locked maps sessions are spread over.
pub(crate) const SESSION_SHARDS: usize = 32;

type Shard = HashMap<SessionId, SessionRecord, IdHashBuilder>;

/// Sessions of this process.
#[derive(Debug)]
pub struct LocalStore {
    /// Records, spread by [`SessionId::shard64`].
    shards: Sharded<SessionId, SessionRecord, IdHashBuilder>,
    /// Live sessions per tenant and per caller.
    counts: Mutex<Counts>,
    config: SessionConfig,
    /// Told the lifetime of every session that ends by DELETE or expiry (metrics).
    lifetimes: std::sync::OnceLock<LifetimeSink>,
}

/// Where ended sessions' lifetimes go.
#[derive(Clone)]
pub(crate) struct LifetimeSink(
    pub(crate) std::sync::Arc<dyn Fn(std::time::Duration) + Send + Sync>,
);

impl std::fmt::Debug for LifetimeSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LifetimeSink")
    }
}

impl LocalStore {
    /// An empty store.
    pub fn new(config: SessionConfig) -> Self {
        Self {
            shards: Sharded::with_hasher(SESSION_SHARDS, IdHashBuilder),
            counts: Mutex::new(Counts::default()),
            config,
            lifetimes: std::sync::OnceLock::new(),
        }
    }

    /// Tells `sink` the lifetime of every session that ends from now on (set once).
    pub(crate) fn observe_lifetimes(&self, sink: LifetimeSink) {
        let _ = self.lifetimes.set(sink);
    }

    /// The configuration in force.
    pub fn config(&self) -> &SessionConfig {
        &self.config
    }

    /// See [`SessionStore::create`].
    pub fn create(&self, new: NewSession<'_>) -> Result<SessionId, SessionError> {
        self.reserve_slot(new.owner)?;
        let now = Instant::now();
        let mut shard_id;
        loop {
            // 128 random bits never collide in practice; the loop makes it a certainty.
            let id = SessionId::random();
            shard_id = id;
            let mut shard = self.shard(&id);
            if let std::collections::hash_map::Entry::Vacant(slot) = shard.entry(id) {
                slot.insert(SessionRecord::new(new, now));
                break;
            }
        }
        Ok(shard_id)
    }

    /// See [`SessionStore::validate`].
    pub fn validate(&self, id: &SessionId, owner: Owner<'_>) -> Result<SessionInfo, SessionError> {
        self.with_live(id, owner, |record| record.info())
    }

    /// See [`SessionStore::mark_initialized`].
    pub fn mark_initialized(&self, id: &SessionId, owner: Owner<'_>) -> Result<(), SessionError> {
        self.with_live(id, owner, |record| record.initialized = true)
    }

    /// See [`SessionStore::set_handshake`].
    pub fn set_handshake(
        &self,
        id: &SessionId,
        owner: Owner<'_>,
        handshake: Handshake<'_>,
    ) -> Result<(), SessionError> {
        self.with_live(id, owner, |record| {
            record.version = handshake.version;
            record.client_info = bytes::Bytes::copy_from_slice(handshake.client_info);
            record.capabilities = bytes::Bytes::copy_from_slice(handshake.capabilities);
        })
    }

    /// See [`SessionStore::delete`].
    pub fn delete(&self, id: &SessionId, owner: Owner<'_>) -> Result<(), SessionError> {
        let removed = {
            let mut shard = self.shard(id);
            match shard.get(id) {
                Some(record) if record.owner.is(owner) => shard.remove(id),
                Some(_) => return Err(SessionError::Foreign),
                None => None,
            }
        };
        let Some(record) = removed else {
            return Err(SessionError::NotFound);
        };
        let expired = record.is_expired(Instant::now(), self.config.idle, self.config.init_timeout);
        self.release_slot(&record.owner);
        // An expired session was already gone as far as clients can tell.
        if expired {
            Err(SessionError::NotFound)
        } else {
            if let Some(sink) = self.lifetimes.get() {
                (sink.0)(record.created.elapsed());
            }
            Ok(())
        }
    }

    /// Live sessions per tenant (what the per-tenant cap counts).
    pub fn counts(&self) -> Vec<(String, i64)> {
        self.counts
            .lock()
            .tenants
            .iter()
            .map(|(tenant, n)| (tenant.to_string(), i64::try_from(*n).unwrap_or(i64::MAX)))
            .collect()
    }

    /// See [`SessionStore::count`].
    pub fn count(&self, tenant: &str) -> usize {
        self.counts.lock().tenants.get(tenant).copied().unwrap_or(0)
    }

    /// Sessions held, all tenants (metrics and tests).
    pub fn len(&self) -> usize {
        self.shards.len()
    }

    /// True when no session is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// See [`SessionStore::expire`]. Also shrinks maps that a burst left mostly empty.
    pub fn expire(&self) -> Vec<SessionId> {
        let now = Instant::now();
        let mut expired_ids = Vec::new();
        let mut released: HashMap<OwnerKey, usize> = HashMap::new();
        for mut shard in self.shards.shards() {
            let before = expired_ids.len();
            shard.retain(|id, record| {
                let expired = record.is_expired(now, self.config.idle, self.config.init_timeout);
                if expired {
                    expired_ids.push(*id);
                    *released.entry(record.owner.clone()).or_default() += 1;
                    if let Some(sink) = self.lifetimes.get() {
                        (sink.0)(now.saturating_duration_since(record.created));
                    }
                }
                !expired
            });
            if expired_ids.len() > before {
                shrink_if_sparse(&mut shard);
            }
        }
        if !released.is_empty() {
            let mut counts = self.counts.lock();
            for (owner, n_released) in released {
                counts.release(&owner, n_released);
            }
            shrink_if_sparse(&mut counts.tenants);
            shrink_if_sparse(&mut counts.callers);
        }
        expired_ids
    }

    // === internals ===

    fn shard(&self, id: &SessionId) -> MutexGuard<'_, Shard> {
        // The bits are random, and independent of the ones `IdHashBuilder` buckets by.
        self.shards.shard(id.shard64())
    }

    /// Runs `apply` on the record if it is live and owned by `owner`, refreshing last-seen.
    /// An expired record found here is removed on the spot.
    fn with_live<T>(
        &self,
        id: &SessionId,
        owner: Owner<'_>,
        apply: impl FnOnce(&mut SessionRecord) -> T,
    ) -> Result<T, SessionError> {
        let now = Instant::now();
        let mut shard = self.shard(id);
        let Some(record) = shard.get_mut(id) else {
            return Err(SessionError::NotFound);
        };
        if !record.owner.is(owner) {
            return Err(SessionError::Foreign);
        }
        if record.is_expired(now, self.config.idle, self.config.init_timeout) {
            let removed = shard.remove(id);
            drop(shard);
            if let Some(record) = removed {
                self.release_slot(&record.owner);
            }
            return Err(SessionError::NotFound);
        }
        record.last_seen = now;
        Ok(apply(record))
    }

    /// Counts one more session for `owner`'s tenant and caller, or refuses when either cap is
    /// reached (the tenant's first). The checks and the increments happen under one lock, so
    /// concurrent creates never exceed either cap.
    fn reserve_slot(&self, owner: Owner<'_>) -> Result<(), SessionError> {
        let SessionConfig {
            max_per_tenant,
            max_per_caller,
            ..
        } = self.config;
        let key = OwnerKey::new(owner);
        let mut counts = self.counts.lock();
        let tenant_count = counts.tenants.get(owner.tenant).copied().unwrap_or(0);
        if tenant_count >= max_per_tenant {
            return Err(SessionError::TenantCapReached {
                cap: max_per_tenant,
            });
        }
        let caller_count = counts.callers.get(&key).copied().unwrap_or(0);
        if caller_count >= max_per_caller {
            return Err(SessionError::CallerCapReached {
                cap: max_per_caller,
            });
        }
        match counts.tenants.get_mut(owner.tenant) {
            Some(count) => *count += 1,
            None => {
                counts.tenants.insert(owner.tenant.into(), 1);
            }
        }
        *counts.callers.entry(key).or_default() += 1;
        Ok(())
    }

    fn release_slot(&self, owner: &OwnerKey) {
        self.counts.lock().release(owner, 1);
    }
}

/// Live sessions per tenant and per caller; an entry is removed when its count drops to zero.
#[derive(Debug, Default)]
struct Counts {
    tenants: HashMap<Box<str>, usize>,
    callers: HashMap<OwnerKey, usize>,
}

impl Counts {
    /// Uncounts `n` sessions of `owner`.
    fn release(&mut self, owner: &OwnerKey, n: usize) {
        let tenant = owner.get().tenant;
        if let Some(count) = self.tenants.get_mut(tenant) {
            *count = count.saturating_sub(n);
            if *count == 0 {
                self.tenants.remove(tenant);
            }
        }
        if let Some(count) = self.callers.get_mut(owner) {
            *count = count.saturating_sub(n);
            if *count == 0 {
                self.callers.remove(owner);
            }
        }
    }
}

// === impl SessionStore ===

impl SessionStore for LocalStore {
    fn create(
        &self,
        new: NewSession<'_>,
    ) -> impl Future<Output = Result<SessionId, SessionError>> + Send {
        ready(LocalStore::create(self, new))
    }

    fn validate(
        &self,
        id: &SessionId,
        owner: Owner<'_>,
    ) -> impl Future<Output = Result<SessionInfo, SessionError>> + Send {
        ready(LocalStore::validate(self, id, owner))
    }

    fn mark_initialized(
        &self,
        id: &SessionId,
        owner: Owner<'_>,
    ) -> impl Future<Output = Result<(), SessionError>> + Send {
        ready(LocalStore::mark_initialized(self, id, owner))
    }

    fn set_handshake(
        &self,
        id: &SessionId,
        owner: Owner<'_>,
        handshake: Handshake<'_>,
    ) -> impl Future<Output = Result<(), SessionError>> + Send {
        ready(LocalStore::set_handshake(self, id, owner, handshake))
    }

    fn delete(
        &self,
        id: &SessionId,
        owner: Owner<'_>,
    ) -> impl Future<Output = Result<(), SessionError>> + Send {
        ready(LocalStore::delete(self, id, owner))
    }

    fn count(&self, tenant: &str) -> impl Future<Output = Result<usize, SessionError>> + Send {
        ready(Ok(LocalStore::count(self, tenant)))
    }

    fn expire(&self) -> impl Future<Output = Result<Vec<SessionId>, SessionError>> + Send {
        ready(Ok(LocalStore::expire(self)))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    const A: Owner<'static> = Owner::new("t", "c", "anonymous");

    fn store(max_per_tenant: usize) -> LocalStore {
        LocalStore::new(SessionConfig {
            idle: Duration::from_secs(100),
            init_timeout: Duration::from_secs(10),
            max_per_tenant,
            max_per_caller: max_per_tenant,
        })
    }

    fn new(owner: Owner<'static>) -> NewSession<'static> {
        NewSession {
            owner,
            version: crate::protocol::ProtocolVersion::V2025_11_25,
            client_info: br#"{"name":"x","version":"1"}"#,
            capabilities: b"{}",
        }
    }

    /// Validation by `owner` of a session opened by `A`.
    fn check(owner: Owner<'_>, expected: Result<(), SessionError>) {
        let store = store(10);
        let id = store.create(new(A)).unwrap();
        assert_eq!(
            store.validate(&id, owner).map(|_| ()),
            expected,
            "{owner:?}"
        );
    }

    #[test]
    fn ownership() {
        check(A, Ok(()));
        check(
            Owner::new("t2", "c", "anonymous"),
            Err(SessionError::Foreign),
        );
        check(
            Owner::new("t", "c2", "anonymous"),
            Err(SessionError::Foreign),
        );
        check(Owner::new("t", "c", "mallory"), Err(SessionError::Foreign));
        check(
            Owner::new("tc", "", "anonymous"),
            Err(SessionError::Foreign),
        );
    }

    #[test]
    fn mismatched_delete_leaves_the_session() {
        let store = store(10);
        let id = store.create(new(A)).unwrap();
        let other = Owner::new("t", "c", "mallory");
        assert_eq!(store.delete(&id, other), Err(SessionError::Foreign));
        assert!(store.validate(&id, A).is_ok());
        assert_eq!(store.delete(&id, A), Ok(()));
        assert_eq!(store.delete(&id, A), Err(SessionError::NotFound));
        assert_eq!(store.count("t"), 0);
    }

    #[test]
    fn the_caller_cap_is_per_caller_and_the_tenant_cap_comes_first() {
        let store = LocalStore::new(SessionConfig {
            max_per_tenant: 3,
            max_per_caller: 2,
            ..SessionConfig::default()
        });
        let bob = Owner::new("t", "c", "bob");
        let first = store.create(new(A)).unwrap();
        store.create(new(A)).unwrap();
        assert_eq!(
            store.create(new(A)),
            Err(SessionError::CallerCapReached { cap: 2 })
        );
        // Same caller id under another client is another caller.
        let other_client = Owner::new("t", "c2", "anonymous");
        store.create(new(other_client)).unwrap();
        // The tenant is full now: that is what everyone is told.
        assert_eq!(
            store.create(new(bob)),
            Err(SessionError::TenantCapReached { cap: 3 })
        );
        assert_eq!(
            store.create(new(A)),
            Err(SessionError::TenantCapReached { cap: 3 })
        );
        // A freed slot is the caller's again; nothing else leaked.
        store.delete(&first, A).unwrap();
        store.create(new(A)).unwrap();
        assert_eq!(store.count("t"), 3);
        assert_eq!(store.counts.lock().callers.len(), 2);
    }

    #[test]
    fn cap_zero_refuses() {
        let store = store(0);
        assert_eq!(
            store.create(new(A)),
            Err(SessionError::TenantCapReached { cap: 0 })
        );
    }
}
