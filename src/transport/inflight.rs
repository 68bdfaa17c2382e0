//! The in-flight request map of the handshake era: (session, request id) → abort handle, so a
//! `notifications/cancelled` can stop the request it names.
//!
//! A request registers itself before it is dispatched and is removed when it completes (the
//! [`Registration`] guard removes it on drop, whether the request finished, failed, was cancelled
//! or the connection went away). The request future runs inline in the connection's task, wrapped
//! in [`Abortable`](futures_util::future::Abortable); cancelling aborts it at its next poll, which
//! drops the dispatch future (and with it any downstream call). Unknown or finished ids are ignored
//! (races are normal: MCP 2025-11-25, Utilities § Cancellation). Must not know MCP methods or HTTP:
//! it sees keys, ids and abort handles.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash};
use std::sync::atomic::{AtomicU64, Ordering};

use futures_util::future::{AbortHandle, AbortRegistration};
use parking_lot::MutexGuard;

use crate::jsonrpc::{Id, OwnedId};
use crate::shard::{FastHash, Sharded};

/// One shard's map: (session, request id) → (registration token, abort handle).
type Entries<K> = HashMap<(K, OwnedId), (u64, AbortHandle), FastHash>;

/// Shards of the map: registrations of different sessions rarely contend on one lock.
const SHARDS: usize = 16;

/// The in-flight requests of every session, keyed by session `K` and request id.
#[derive(Debug)]
pub struct InFlight<K> {
    /// Entries spread by a hash of the session key alone, so `cancel_all` looks in one shard.
    shards: Sharded<(K, OwnedId), (u64, AbortHandle), FastHash>,
    /// Tells registrations apart when a client reuses an id while the first is still running:
    /// the first one's guard must not remove the second one's entry.
    next_token: AtomicU64,
    hasher: FastHash,
}

impl<K: Hash + Eq + Clone> Default for InFlight<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Hash + Eq + Clone> InFlight<K> {
    /// An empty map.
    pub fn new() -> Self {
        Self {
            shards: Sharded::with_hasher(SHARDS, FastHash::default()),
            next_token: AtomicU64::new(1),
            hasher: FastHash::default(),
        }
    }

    fn shard(&self, key: &K) -> MutexGuard<'_, Entries<K>> {
        self.shards.shard(self.hasher.hash_one(key))
    }

    /// Registers request `id` of session `key`; the returned registration is what
    /// `Abortable::new` needs, and the guard removes the entry when dropped.
    pub(crate) fn register(&self, key: K, id: OwnedId) -> (Registration<'_, K>, AbortRegistration) {
        let (handle, registration) = AbortHandle::new_pair();
        let token = self.next_token.fetch_add(1, Ordering::Relaxed);
        let mut shard = self.shard(&key);
        shard.insert((key.clone(), id.clone()), (token, handle));
        drop(shard);
        let guard = Registration {
            map: self,
            entry: Some((key, id)),
            token,
        };
        (guard, registration)
    }

    /// Cancels request `id` of session `key`, if it is in flight; `false` when unknown or done.
    pub(crate) fn cancel(&self, key: &K, id: &OwnedId) -> bool {
        let shard = self.shard(key);
        // Cancellations are rare: cloning the key for the lookup is fine.
        let found = shard
            .get(&(key.clone(), id.clone()))
            .map(|(_, handle)| handle.clone());
        drop(shard);
        match found {
            Some(handle) => {
                handle.abort();
                true
            }
            None => false,
        }
    }

    /// Cancels every in-flight request of session `key` (the session ended); how many.
    pub(crate) fn cancel_all(&self, key: &K) -> usize {
        let shard = self.shard(key);
        let handles: Vec<AbortHandle> = shard
            .iter()
            .filter(|((session, _), _)| session == key)
            .map(|(_, (_, handle))| handle.clone())
            .collect();
        drop(shard);
        for handle in &handles {
            handle.abort();
        }
        handles.len()
    }

    /// How many requests are in flight (tests and metrics).
    pub fn len(&self) -> usize {
        self.shards.len()
    }

    /// Whether no request is in flight.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn remove(&self, key: &(K, OwnedId), token: u64) {
        let mut shard = self.shard(&key.0);
        if shard.get(key).is_some_and(|(t, _)| *t == token) {
            shard.remove(key);
        }
    }
}

/// Removes its request from the map when dropped.
#[derive(Debug)]
pub(crate) struct Registration<'a, K: Hash + Eq + Clone> {
    map: &'a InFlight<K>,
    entry: Option<(K, OwnedId)>,
    token: u64,
}

impl<K: Hash + Eq + Clone> Drop for Registration<'_, K> {
    fn drop(&mut self) {
        if let Some(entry) = self.entry.take() {
            self.map.remove(&entry, self.token);
        }
    }
}

/// The canonical [`OwnedId`] of a `requestId` given as JSON text (`7`, `"a"`); `None` when the
/// text is not a string or an integer (such a cancellation names no request and is ignored).
pub(crate) fn id_from_json(text: &[u8]) -> Option<OwnedId> {
    match serde_json::from_slice::<serde_json::Value>(text).ok()? {
        serde_json::Value::String(s) => Some(Id::Str(&s).to_owned_id()),
        serde_json::Value::Number(n) => {
            if let Some(n) = n.as_i64() {
                Some(Id::from_i64(n).to_owned_id())
            } else {
                n.as_u64().map(|n| Id::from_u64(n).to_owned_id())
            }
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::future::Abortable;

    fn check(text: &str, expected: Option<&str>) {
        let got = id_from_json(text.as_bytes());
        let got = got
            .as_ref()
            .map(|id| std::str::from_utf8(id.as_json()).unwrap_or("?"));
        assert_eq!(got, expected, "{text}");
    }

    #[test]
    fn ids_from_json() {
        check("7", Some("7"));
        check("0", Some("0"));
        check("\"7\"", Some("\"7\""));
        check("\"a\\u0062\"", Some("\"ab\""));
        check("18446744073709551615", Some("18446744073709551615"));
        check("-3", Some("-3"));
        check("1.5", None);
        check("null", None);
        check("{}", None);
        check("", None);
    }

    #[tokio::test]
    async fn cancel_aborts_the_registered_future_and_guard_removes() {
        let map: InFlight<u32> = InFlight::new();
        let id = OwnedId::from_i64(1);
        let (guard, registration) = map.register(7, id.clone());
        assert_eq!(map.len(), 1);
        // Another session's request with the same id is untouched.
        assert!(!map.cancel(&8, &id));
        assert!(map.cancel(&7, &id));
        let result = Abortable::new(std::future::pending::<()>(), registration).await;
        assert!(result.is_err());
        drop(guard);
        assert!(map.is_empty());
        assert!(!map.cancel(&7, &id));
    }

    #[test]
    fn a_reused_id_is_not_removed_by_the_older_guard() {
        let map: InFlight<u32> = InFlight::new();
        let id = OwnedId::from_str_id("x");
        let (first, _r1) = map.register(1, id.clone());
        let (second, _r2) = map.register(1, id.clone());
        drop(first);
        assert_eq!(map.len(), 1);
        drop(second);
        assert!(map.is_empty());
    }
}
