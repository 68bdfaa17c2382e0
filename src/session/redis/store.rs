//! The Redis session store: session records shared by every instance of a deployment.
//!
//! Owns the Redis layout of session records and per-tenant and per-caller caps, and the Lua
//! scripts that read and change them atomically. Must not hold sockets or know about streams
//! (the backplane in `backplane.rs` routes messages to the instance holding a stream), and
//! must never block a request past [`RedisConfig::command_timeout`].
//!
//! Layout (`{p}` is [`RedisConfig::prefix`], `{t}` a tenant id with `:` and `%` escaped):
//! - `sluice:{p}:session:{id}`: a hash per session (`tenant`, `client`, `caller`, `version`,
//!   `client_info`, `capabilities`, `initialized`, `created`, `last_seen`, `expires`, times in
//!   Redis server milliseconds). Its key TTL is the session's expiry, so a session nobody names
//!   disappears by itself, on every instance at once.
//! - `sluice:{p}:tenant:{t}:sessions`: a sorted set of the tenant's session ids scored by their
//!   expiry. The cap counts its members scored after now; every script that moves a session's
//!   expiry moves its score in the same step, so the count is exact.
//! - `sluice:{p}:tenant:{t}:sessions:{c}:{s}`: the same for one caller (`{c}` the client, `{s}`
//!   the caller id, escaped), what the per-caller cap counts. Every script that moves a score in
//!   the tenant's set moves it in the caller's too; its name extends the tenant set's, so both
//!   are built in one buffer.
//! - `sluice:{p}:tenants`: the set of tenants that may hold sessions (for [`RedisStore::counts`]).
//! - `sluice:{p}:ledger` and `sluice:{p}:ledger:created`: every session's expiry (a sorted set)
//!   and creation time (a hash), kept past the record's key TTL so that a session Redis expires
//!   by itself is still measured (`mcp.server.session.duration`): whichever instance's sweep
//!   claims the entry first ([`RedisStore::expire`]) reports its lifetime, so every session is
//!   counted once across the deployment. A DELETE removes the entry and reports the lifetime
//!   itself. Both keys expire [`LEDGER_GRACE_MS`] after the last expiry they hold, so an
//!   abandoned namespace cleans itself.
//!
//! Every read and write of a session is at most one round trip: a script that checks the owner,
//! applies the change, moves the expiry (key TTL and score) and returns what the caller needs.
//! A validation moves the expiry only when the last refresh is at least
//! [`RedisConfig::refresh_after_percent`] of the idle timeout old (otherwise the script only
//! reads), and a session validated a moment ago is answered from the local [`SessionCache`]
//! (`cache.rs`) with no round trip at all; the delete script publishes a session-gone notice
//! on the backplane's broadcast channel in the same step, which empties that cache on every
//! instance.
//! All times come from the Redis server clock (`TIME`), never from an instance's clock, so
//! instances with skewed clocks agree on expiry.
//!
//! Concurrency: one [`ConnectionManager`] multiplexes every command of the process over one
//! connection and reconnects by itself; it is cloned per call (cheap, `Arc` inside). The local
//! `seen` map (a `crate::shard::Sharded`, never held across an `.await`) remembers sessions this
//! instance has served, so [`RedisStore::expire`] can report which of them have gone.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use parking_lot::MutexGuard;
use redis::aio::ConnectionManager;
use redis::Value;
use tokio::time::Instant;

use super::cache::{Lookup, SessionCache, DEFAULT_SESSION_CACHE_CAPACITY};
use super::frame::encode_session_gone;
use super::scripts::Scripts;
use super::wire::{as_bytes, bounded, component, escaped, millis, unavailable};
use super::RedisConfig;
use crate::session::{
    Handshake, IdHashBuilder, NewSession, Owner, SessionConfig, SessionError, SessionId,
    SessionInfo, SessionStore,
};
use crate::shard::Sharded;

/// Shards of the local `seen` map (same spreading as `LocalStore`).
const SEEN_SHARDS: usize = 32;

/// At most this many sessions are checked per round trip by [`RedisStore::expire`].
const EXPIRE_BATCH: usize = 512;

/// At most this many ended sessions are claimed per round trip from the ledger, and at most
/// [`LEDGER_BATCHES`] round trips per sweep (the rest waits for the next sweep).
const LEDGER_BATCH: usize = 512;
const LEDGER_BATCHES: usize = 8;

/// How long the ledger outlives the last expiry it holds when no instance sweeps it.
const LEDGER_GRACE_MS: u64 = 3_600_000;

/// Attempts at minting an id that is not taken (128 random bits: the second never runs).
const CREATE_ATTEMPTS: usize = 3;

/// What `TOUCH` does besides the ownership check and the refresh.
#[derive(Debug, Clone, Copy)]
enum Touch<'a> {
    Validate,
    Initialize,
    Handshake(Handshake<'a>),
}

// === impl RedisStore ===

/// Sessions in Redis, shared by every instance configured with the same URL and prefix.
pub struct RedisStore {
    /// Multiplexed, self-reconnecting connection; cloned per command.
    connection: ConnectionManager,
    scripts: Scripts,
    /// `sluice:{prefix}:`.
    namespace: String,
    /// Key of the tenants set.
    tenants_key: String,
    /// Keys of the ledger (ended-session expiries) and of its creation times.
    ledger_key: String,
    created_key: String,
    /// The backplane's broadcast channel (`sluice:{p}:broadcast`), where the scripts publish
    /// session-gone notices.
    broadcast_channel: String,
    /// Idle-timeout share, in milliseconds, within which a validation only reads.
    refresh_after_ms: u64,
    /// Validated sessions answered without Redis; kept honest by the backplane
    /// ([`RedisBackplane::serve_cache`](super::RedisBackplane::serve_cache)).
    cache: Arc<SessionCache>,
    config: SessionConfig,
    command_timeout: Duration,
    /// Sessions this instance served, with when it last heard they expire; what
    /// [`RedisStore::expire`] checks. Spread by [`SessionId::shard64`].
    seen: Sharded<SessionId, Instant, IdHashBuilder>,
    /// Told the lifetime of every session deleted through this instance, and of every expired
    /// session this instance's sweep claims from the ledger (metrics).
    lifetimes: std::sync::OnceLock<crate::session::LifetimeSink>,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("namespace", &self.namespace)
            .field("config", &self.config)
            .field("command_timeout", &self.command_timeout)
            .finish_non_exhaustive()
    }
}

impl RedisStore {
    /// A store on `redis`, without connecting (the first command connects). Fails only when
    /// the URL is malformed.
    pub fn new(redis: &RedisConfig, config: SessionConfig) -> Result<Self, SessionError> {
        let client = redis::Client::open(redis.url.as_str()).map_err(|e| unavailable(&e))?;
        let connection = redis.manager(|c| c, client).map_err(|e| unavailable(&e))?;
        let namespace = redis.namespace();
        Ok(Self {
            connection,
            scripts: Scripts::new(),
            tenants_key: format!("{namespace}tenants"),
            ledger_key: format!("{namespace}ledger"),
            created_key: format!("{namespace}ledger:created"),
            broadcast_channel: format!("{namespace}broadcast"),
            refresh_after_ms: millis(config.idle)
                .saturating_mul(u64::from(redis.refresh_after_percent.min(100)))
                / 100,
            cache: Arc::new(SessionCache::new(
                redis.session_cache,
                DEFAULT_SESSION_CACHE_CAPACITY,
            )),
            namespace,
            config,
            command_timeout: redis.command_timeout,
            seen: Sharded::with_hasher(SEEN_SHARDS, IdHashBuilder),
            lifetimes: std::sync::OnceLock::new(),
        })
    }

    /// A store on `redis` that has answered a `PING`: what a runtime configured with Redis
    /// starts with, so that an unreachable Redis refuses the start with a clear error.
    pub async fn connect(redis: &RedisConfig, config: SessionConfig) -> Result<Self, SessionError> {
        let store = Self::new(redis, config)?;
        store.ping().await?;
        Ok(store)
    }

    /// One `PING` (readiness probes).
    pub(crate) async fn ping(&self) -> Result<(), SessionError> {
        let mut connection = self.connection.clone();
        bounded(
            self.command_timeout,
            redis::cmd("PING").query_async::<()>(&mut connection),
        )
        .await
        .map_err(SessionError::from)
    }

    /// The server-side id of the command connection (tests kill it to check reconnection).
    #[cfg(test)]
    pub(super) async fn client_id(&self) -> Result<i64, SessionError> {
        let mut connection = self.connection.clone();
        bounded(
            self.command_timeout,
            redis::cmd("CLIENT").arg("ID").query_async(&mut connection),
        )
        .await
        .map_err(SessionError::from)
    }

    /// The local cache of validated sessions (the backplane keeps it honest).
    pub(crate) fn cache(&self) -> &Arc<SessionCache> {
        &self.cache
    }

    /// Tells `sink` the lifetime of every session deleted through this instance or claimed by
    /// its sweep from the ledger (set once).
    pub(crate) fn observe_lifetimes(&self, sink: crate::session::LifetimeSink) {
        let _ = self.lifetimes.set(sink);
    }

    /// The configuration in force.
    pub fn config(&self) -> &SessionConfig {
        &self.config
    }

    /// See [`SessionStore::create`]. Both cap checks, the insert and the counts happen in one
    /// script, so creates from any number of instances never exceed either cap.
    pub async fn create(&self, new: NewSession<'_>) -> Result<SessionId, SessionError> {
        let keys = self.owner_keys(new.owner);
        for _ in 0..CREATE_ATTEMPTS {
            let id = SessionId::random();
            let encoded = id.encode();
            let mut invocation = self.scripts.create.key(self.session_key(&id));
            invocation
                .key(keys.tenant())
                .key(&self.tenants_key)
                .key(keys.caller())
                .key(&self.ledger_key)
                .key(&self.created_key)
                .arg(self.config.max_per_tenant)
                .arg(millis(self.config.idle))
                .arg(millis(self.config.init_timeout))
                .arg(new.owner.tenant)
                .arg(new.owner.client)
                .arg(new.owner.caller)
                .arg(new.version.as_str())
                .arg(new.client_info)
                .arg(new.capabilities)
                .arg(encoded.as_str())
                .arg(self.config.max_per_caller)
                .arg(LEDGER_GRACE_MS);
            let mut connection = self.connection.clone();
            let outcome: i64 = bounded(
                self.command_timeout,
                invocation.invoke_async(&mut connection),
            )
            .await?;
            match outcome {
                0 => {
                    let first_expiry = self.config.idle.min(self.config.init_timeout);
                    self.remember(id, first_expiry);
                    return Ok(id);
                }
                1 => {
                    return Err(SessionError::TenantCapReached {
                        cap: self.config.max_per_tenant,
                    })
                }
                3 => {
                    return Err(SessionError::CallerCapReached {
                        cap: self.config.max_per_caller,
                    })
                }
                _ => continue,
            }
        }
        Err(SessionError::Unavailable(
            "could not mint a free session id".to_owned(),
        ))
    }

    /// See [`SessionStore::validate`]: from the local cache when this instance validated the
    /// session a moment ago (`cache.rs` bounds how long), otherwise one round trip that checks
    /// the owner, refreshes the expiry when due and returns the record.
    pub async fn validate(
        &self,
        id: &SessionId,
        owner: Owner<'_>,
    ) -> Result<SessionInfo, SessionError> {
        let generation = match self.cache.lookup(id, owner) {
            Lookup::Hit(info) => return Ok(info),
            Lookup::Miss(generation) => generation,
        };
        let reply = self.touch(id, owner, Touch::Validate).await?;
        let initialized = matches!(reply.get(2), Some(Value::Int(1)));
        let version = reply
            .get(3)
            .and_then(as_bytes)
            .and_then(static_version)
            // A version this build does not implement (a record written by a newer instance
            // during a rolling upgrade) cannot be served: the client initializes afresh.
            .ok_or(SessionError::NotFound)?;
        let field = |index: usize| {
            reply
                .get(index)
                .and_then(as_bytes)
                .map(Bytes::copy_from_slice)
                .unwrap_or_default()
        };
        let info = SessionInfo {
            version,
            initialized,
            client_info: field(4),
            capabilities: field(5),
        };
        // Only initialized sessions are cached: `initialized` never goes back, so the entry
        // cannot hide a change another instance makes (a handshake publishes a notice).
        if initialized {
            let ms = |index: usize| match reply.get(index) {
                Some(Value::Int(ms)) => u64::try_from(*ms).unwrap_or(0),
                _ => 0,
            };
            let fresh_for = Duration::from_millis(ms(1).min(ms(6)));
            self.cache.insert(*id, owner, &info, fresh_for, generation);
        }
        Ok(info)
    }

    /// See [`SessionStore::mark_initialized`].
    pub async fn mark_initialized(
        &self,
        id: &SessionId,
        owner: Owner<'_>,
    ) -> Result<(), SessionError> {
        let touched = self.touch(id, owner, Touch::Initialize).await.map(drop);
        self.cache.invalidate(id);
        touched
    }

    /// See [`SessionStore::set_handshake`].
    pub async fn set_handshake(
        &self,
        id: &SessionId,
        owner: Owner<'_>,
        handshake: Handshake<'_>,
    ) -> Result<(), SessionError> {
        let touched = self
            .touch(id, owner, Touch::Handshake(handshake))
            .await
            .map(drop);
        self.cache.invalidate(id);
        touched
    }

    /// See [`SessionStore::delete`]. Works from any instance; the script tells every instance
    /// (session-gone notice) so none answers for it from its cache.
    pub async fn delete(&self, id: &SessionId, owner: Owner<'_>) -> Result<(), SessionError> {
        let keys = self.owner_keys(owner);
        let gone = encode_session_gone(id);
        let mut invocation = self.scripts.delete.key(self.session_key(id));
        invocation
            .key(keys.tenant())
            .key(keys.caller())
            .key(&self.ledger_key)
            .key(&self.created_key)
            .arg(owner.tenant)
            .arg(owner.client)
            .arg(owner.caller)
            .arg(id.encode().as_str())
            .arg(&self.broadcast_channel)
            .arg(&gone[..]);
        let mut connection = self.connection.clone();
        let outcome = bounded(
            self.command_timeout,
            invocation.invoke_async::<Vec<i64>>(&mut connection),
        )
        .await;
        // Whatever the outcome, this instance stops answering for it from the cache.
        self.cache.invalidate(id);
        match outcome?.as_slice() {
            [0, lived_ms, ..] => {
                self.forget(id);
                if let Some(sink) = self.lifetimes.get() {
                    (sink.0)(Duration::from_millis(u64::try_from(*lived_ms).unwrap_or(0)));
                }
                Ok(())
            }
            [2, ..] => Err(SessionError::Foreign),
            _ => {
                self.forget(id);
                Err(SessionError::NotFound)
            }
        }
    }

    /// See [`SessionStore::count`]: sessions of `tenant` live now, across all instances.
    pub async fn count(&self, tenant: &str) -> Result<usize, SessionError> {
        let counts = self.count_tenants(&[tenant.to_owned()]).await?;
        Ok(counts
            .first()
            .map_or(0, |(_, n)| usize::try_from(*n).unwrap_or(0)))
    }

    /// Live sessions per tenant, across all instances (two round trips: the tenant list, then
    /// the counts). Tenants with none left are dropped from the list.
    pub async fn counts(&self) -> Result<Vec<(String, i64)>, SessionError> {
        let mut connection = self.connection.clone();
        let tenants: Vec<String> = bounded(
            self.command_timeout,
            redis::cmd("SMEMBERS")
                .arg(&self.tenants_key)
                .query_async(&mut connection),
        )
        .await?;
        let counts = self.count_tenants(&tenants).await?;
        Ok(counts.into_iter().filter(|(_, n)| *n > 0).collect())
    }

    /// See [`SessionStore::expire`].
    ///
    /// Redis expires records by itself, on every instance at once; what an instance needs
    /// from a sweep is the ids whose streams it must close. It can only know sessions it has
    /// served, so it returns those of them that are gone now (expired, or deleted through
    /// another instance), at most one round trip per [`EXPIRE_BATCH`] sessions due. A session
    /// refreshed elsewhere in the meantime is kept, with its new expiry.
    pub async fn expire(&self) -> Result<Vec<SessionId>, SessionError> {
        let now = Instant::now();
        let due: Vec<SessionId> = self
            .seen
            .shards()
            .flat_map(|shard| {
                shard
                    .iter()
                    .filter(|(_, expires)| **expires <= now)
                    .map(|(id, _)| *id)
                    .collect::<Vec<_>>()
            })
            .collect();
        let mut expired = Vec::new();
        for batch in due.chunks(EXPIRE_BATCH) {
            let mut pipeline = redis::pipe();
            for id in batch {
                pipeline.cmd("PTTL").arg(self.session_key(id));
            }
            let mut connection = self.connection.clone();
            let ttls: Vec<i64> =
                bounded(self.command_timeout, pipeline.query_async(&mut connection)).await?;
            for (id, ttl) in batch.iter().zip(ttls) {
                // -2: no such key. -1 (no TTL) cannot happen for a record; treat it as gone.
                match u64::try_from(ttl) {
                    Ok(ms_left) if ttl > 0 => self.remember(*id, Duration::from_millis(ms_left)),
                    _ => {
                        self.forget(id);
                        expired.push(*id);
                    }
                }
            }
        }
        // The ledger is a deployment-wide concern: its failure does not hide the streams to close.
        if let Err(err) = self.claim_ended().await {
            tracing::warn!(%err, "ended sessions not claimed from the ledger; retried next sweep");
        }
        Ok(expired)
    }

    /// Claims the sessions whose ledger expiry has passed and reports their lifetimes to the
    /// sink: one round trip when nothing has ended (the usual sweep), two per
    /// [`LEDGER_BATCH`] otherwise. Every instance sweeps; the claim script makes each session's
    /// report happen on exactly one of them.
    async fn claim_ended(&self) -> Result<(), SessionError> {
        for _ in 0..LEDGER_BATCHES {
            let mut connection = self.connection.clone();
            let due: Vec<String> = bounded(
                self.command_timeout,
                self.scripts
                    .due
                    .key(&self.ledger_key)
                    .arg(LEDGER_BATCH)
                    .invoke_async(&mut connection),
            )
            .await?;
            if due.is_empty() {
                return Ok(());
            }
            let mut invocation = self.scripts.claim.key(&self.ledger_key);
            invocation.key(&self.created_key);
            for id in &due {
                invocation.key(format!("{}session:{id}", self.namespace));
            }
            for id in &due {
                invocation.arg(id);
            }
            let lived: Vec<i64> = bounded(
                self.command_timeout,
                invocation.invoke_async(&mut connection),
            )
            .await?;
            if let Some(sink) = self.lifetimes.get() {
                for ms in &lived {
                    (sink.0)(Duration::from_millis(u64::try_from(*ms).unwrap_or(0)));
                }
            }
            if due.len() < LEDGER_BATCH {
                return Ok(());
            }
        }
        Ok(())
    }

    // === internals ===

    fn session_key(&self, id: &SessionId) -> String {
        format!("{}session:{}", self.namespace, id.encode().as_str())
    }

    fn tenant_key(&self, tenant: &str) -> String {
        format!("{}tenant:{}:sessions", self.namespace, component(tenant))
    }

    /// The tenant set's and the caller set's keys of `owner`, in one allocation (the caller's
    /// extends the tenant's), escaped in place.
    fn owner_keys(&self, owner: Owner<'_>) -> OwnerKeys {
        use std::fmt::Write as _;
        let parts = owner.tenant.len() + owner.client.len() + owner.caller.len();
        // Room for every part escaped at three bytes a byte: never reallocates.
        let mut text = String::with_capacity(self.namespace.len() + 24 + 3 * parts);
        // Writing to a `String` cannot fail.
        let _ = write!(
            text,
            "{}tenant:{}:sessions",
            self.namespace,
            escaped(owner.tenant)
        );
        let tenant_end = text.len();
        let _ = write!(text, ":{}:{}", escaped(owner.client), escaped(owner.caller));
        OwnerKeys { text, tenant_end }
    }

    /// Runs `TOUCH`; `Ok` carries the reply array, whose first element was 0.
    async fn touch(
        &self,
        id: &SessionId,
        owner: Owner<'_>,
        touch: Touch<'_>,
    ) -> Result<Vec<Value>, SessionError> {
        let keys = self.owner_keys(owner);
        let mut invocation = self.scripts.touch.key(self.session_key(id));
        invocation
            .key(keys.tenant())
            .key(keys.caller())
            .key(&self.ledger_key)
            .key(&self.created_key)
            .arg(owner.tenant)
            .arg(owner.client)
            .arg(owner.caller)
            .arg(millis(self.config.idle))
            .arg(millis(self.config.init_timeout))
            .arg(id.encode().as_str());
        let gone = encode_session_gone(id);
        let op = match touch {
            Touch::Validate => "v",
            Touch::Initialize => "i",
            Touch::Handshake(_) => "h",
        };
        invocation
            .arg(op)
            .arg(self.refresh_after_ms)
            .arg(&self.broadcast_channel)
            .arg(&gone[..])
            .arg(LEDGER_GRACE_MS);
        if let Touch::Handshake(handshake) = touch {
            invocation
                .arg(handshake.version.as_str())
                .arg(handshake.client_info)
                .arg(handshake.capabilities);
        }
        let mut connection = self.connection.clone();
        let reply: Vec<Value> = bounded(
            self.command_timeout,
            invocation.invoke_async(&mut connection),
        )
        .await?;
        match reply.first() {
            Some(Value::Int(0)) => {
                let ms_left = match reply.get(1) {
                    Some(Value::Int(ms)) => u64::try_from(*ms).unwrap_or(0),
                    _ => 0,
                };
                self.remember(*id, Duration::from_millis(ms_left));
                Ok(reply)
            }
            Some(Value::Int(2)) => Err(SessionError::Foreign),
            Some(Value::Int(1)) => {
                self.forget(id);
                Err(SessionError::NotFound)
            }
            _ => Err(SessionError::Unavailable(
                "unexpected reply from the session script".to_owned(),
            )),
        }
    }

    /// Counts live sessions of each of `tenants` in one script.
    async fn count_tenants(&self, tenants: &[String]) -> Result<Vec<(String, i64)>, SessionError> {
        if tenants.is_empty() {
            return Ok(Vec::new());
        }
        let mut invocation = self.scripts.counts.key(&self.tenants_key);
        for tenant in tenants {
            invocation.key(self.tenant_key(tenant)).arg(tenant);
        }
        let mut connection = self.connection.clone();
        let counts: Vec<i64> = bounded(
            self.command_timeout,
            invocation.invoke_async(&mut connection),
        )
        .await?;
        Ok(tenants.iter().cloned().zip(counts).collect())
    }

    fn seen_shard(
        &self,
        id: &SessionId,
    ) -> MutexGuard<'_, HashMap<SessionId, Instant, IdHashBuilder>> {
        self.seen.shard(id.shard64())
    }

    /// Notes that `id` is live and expires in `ms_left` (unless refreshed).
    fn remember(&self, id: SessionId, ms_left: Duration) {
        self.seen_shard(&id).insert(id, Instant::now() + ms_left);
    }

    fn forget(&self, id: &SessionId) {
        self.seen_shard(id).remove(id);
    }
}

/// The keys of one owner's session sets (see [`RedisStore::owner_keys`]).
struct OwnerKeys {
    text: String,
    tenant_end: usize,
}

impl OwnerKeys {
    /// `sluice:{p}:tenant:{t}:sessions`.
    fn tenant(&self) -> &str {
        self.text.get(..self.tenant_end).unwrap_or_default()
    }

    /// `sluice:{p}:tenant:{t}:sessions:{c}:{s}`.
    fn caller(&self) -> &str {
        &self.text
    }
}

/// The version a record names (stored as its wire text), if this build implements it.
fn static_version(stored: &[u8]) -> Option<crate::protocol::ProtocolVersion> {
    crate::protocol::ProtocolVersion::parse(stored)
}

// === impl SessionStore ===

impl SessionStore for RedisStore {
    fn create(
        &self,
        new: NewSession<'_>,
    ) -> impl Future<Output = Result<SessionId, SessionError>> + Send {
        RedisStore::create(self, new)
    }

    fn validate(
        &self,
        id: &SessionId,
        owner: Owner<'_>,
    ) -> impl Future<Output = Result<SessionInfo, SessionError>> + Send {
        RedisStore::validate(self, id, owner)
    }

    fn mark_initialized(
        &self,
        id: &SessionId,
        owner: Owner<'_>,
    ) -> impl Future<Output = Result<(), SessionError>> + Send {
        RedisStore::mark_initialized(self, id, owner)
    }

    fn set_handshake(
        &self,
        id: &SessionId,
        owner: Owner<'_>,
        handshake: Handshake<'_>,
    ) -> impl Future<Output = Result<(), SessionError>> + Send {
        RedisStore::set_handshake(self, id, owner, handshake)
    }

    fn delete(
        &self,
        id: &SessionId,
        owner: Owner<'_>,
    ) -> impl Future<Output = Result<(), SessionError>> + Send {
        RedisStore::delete(self, id, owner)
    }

    fn count(&self, tenant: &str) -> impl Future<Output = Result<usize, SessionError>> + Send {
        RedisStore::count(self, tenant)
    }

    fn expire(&self) -> impl Future<Output = Result<Vec<SessionId>, SessionError>> + Send {
        RedisStore::expire(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_map_back_to_static_strings() {
        use crate::protocol::ProtocolVersion;
        assert_eq!(
            static_version(b"2025-11-25"),
            Some(ProtocolVersion::V2025_11_25)
        );
        assert_eq!(
            static_version(b"2024-11-05"),
            Some(ProtocolVersion::V2024_11_05)
        );
        assert_eq!(static_version(b"1999-01-01"), None);
        assert_eq!(static_version(b""), None);
    }

    #[tokio::test]
    async fn caller_keys_extend_the_tenant_key_and_never_collide() {
        let store = RedisStore::new(
            &RedisConfig::new("redis://127.0.0.1:6379").with_prefix("p"),
            SessionConfig::default(),
        )
        .unwrap();
        let keys = store.owner_keys(Owner::new("t:1", "c", "apikey:k é"));
        assert_eq!(keys.tenant(), store.tenant_key("t:1"));
        assert_eq!(keys.tenant(), "sluice:p:tenant:t%3A1:sessions");
        assert_eq!(
            keys.caller(),
            "sluice:p:tenant:t%3A1:sessions:c:apikey%3Ak%20%C3%A9"
        );
        let a = store.owner_keys(Owner::new("t", "a:b", "c"));
        let b = store.owner_keys(Owner::new("t", "a", "b:c"));
        assert_ne!(a.caller(), b.caller());
    }
}
