//! Sessions: records, the `SessionStore` and `Backplane` seams, and their process-local and Redis
//! implementations.
//!
//! - `id.rs`: [`SessionId`], 128 random bits as 22 characters of base64url.
//! - `record.rs`: [`SessionRecord`], the [`Owner`] a session is bound to, what validation returns.
//! - `store.rs`: the [`SessionStore`] contract (ownership, expiry, cap).
//! - `local.rs`: [`LocalStore`], sharded in-memory maps.
//! - `backplane.rs`: the [`Backplane`](backplane::Backplane) contract, [`LocalBackplane`] and the [`Bus`] front.
//! - `redis.rs` + `redis/`: [`RedisConfig`]; [`RedisStore`] (`store.rs`), sessions shared by
//!   every instance through Redis; [`RedisBackplane`] (`backplane.rs`, `subscriber.rs`,
//!   `frame.rs`), routing to the instance holding a stream over Redis pub/sub, and the
//!   stream-holder registry; `wire.rs`, what the two share.
//!
//! Callers use the [`Sessions`] front: an enum over the implementations with inherent async
//! methods, so the hot path (`validate` on every request) costs no boxed future.
//! Must not hold sockets: streams live in `transport::stream`, which closes a session's streams
//! when the sweeper reports it expired.

mod backplane;
mod id;
mod local;
pub(crate) use local::LifetimeSink;
mod record;
mod redis;
mod store;

use std::sync::Arc;
use std::time::Duration;

/// A fresh Redis namespace for a test, or a visible skip (the A2A task store's tests too).
#[cfg(test)]
pub(crate) use self::redis::tests::redis_or_skip;
/// Key escaping and bounded commands, shared with the A2A task store's Redis keys.
pub(crate) use self::redis::wire as redis_wire;
pub use self::redis::{RedisBackplane, RedisConfig, RedisStore};
pub use backplane::{BackplaneError, Bus, Inbox, LocalBackplane};
pub use id::{EncodedSessionId, SessionId};
pub(crate) use id::{IdHashBuilder, SESSION_ID_BYTES};
pub use local::LocalStore;
pub(crate) use record::SessionRecord;
pub use record::{Handshake, NewSession, Owner, OwnerKey, SessionInfo};
pub(crate) use store::SessionStore;

/// Default idle timeout: a session no request has named for this long expires (404 after).
pub(crate) const DEFAULT_SESSION_IDLE: Duration = Duration::from_secs(30 * 60);

/// Default init timeout: a session that has not sent `notifications/initialized` this long after
/// `initialize` expires, so abandoned handshakes do not hold a slot of the tenant's cap.
pub(crate) const DEFAULT_INIT_TIMEOUT: Duration = Duration::from_secs(60);

/// Default per-tenant cap on live sessions; a create beyond it fails with
/// [`SessionError::TenantCapReached`].
pub(crate) const DEFAULT_MAX_SESSIONS_PER_TENANT: usize = 10_000;

/// Default per-caller cap on live sessions (a caller is tenant, client and caller id): a create
/// beyond it fails with [`SessionError::CallerCapReached`], so one caller cannot take the whole
/// tenant cap. Never more than the tenant cap in force.
pub(crate) const DEFAULT_MAX_SESSIONS_PER_CALLER: usize = 100;

/// Session limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionConfig {
    /// `session_idle_secs`: idle time after which a session expires.
    pub idle: Duration,
    /// Time a session may stay uninitialized after creation.
    pub init_timeout: Duration,
    /// Live sessions allowed per tenant.
    pub max_per_tenant: usize,
    /// Live sessions allowed per caller (one tenant, client and caller id).
    pub max_per_caller: usize,
}

impl Default for SessionConfig {
    fn default() -> Self {
        Self {
            idle: DEFAULT_SESSION_IDLE,
            init_timeout: DEFAULT_INIT_TIMEOUT,
            max_per_tenant: DEFAULT_MAX_SESSIONS_PER_TENANT,
            max_per_caller: DEFAULT_MAX_SESSIONS_PER_CALLER,
        }
    }
}

/// Why a session operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SessionError {
    /// Unknown, expired, terminated, or owned by someone else (deliberately one case): the
    /// transport answers 404 so the client initializes afresh.
    #[error("session not found")]
    NotFound,
    /// The session exists but another tenant, client or caller opened it. Callers answer it
    /// exactly like [`SessionError::NotFound`]; it is separate only so the attempt is audited.
    #[error("session not found")]
    Foreign,
    /// The tenant already holds its maximum number of sessions.
    #[error("tenant session cap reached ({cap})")]
    TenantCapReached {
        /// The cap in force.
        cap: usize,
    },
    /// The caller (tenant, client, caller id) already holds its maximum number of sessions;
    /// checked after the tenant cap, so a full tenant reports [`SessionError::TenantCapReached`].
    #[error("caller session cap reached ({cap})")]
    CallerCapReached {
        /// The cap in force.
        cap: usize,
    },
    /// A shared store could not be reached.
    #[error("session store unavailable: {0}")]
    Unavailable(String),
}

/// The session store in use: a `match` front over the implementations (cheap to clone).
#[derive(Debug, Clone)]
pub enum Sessions {
    /// Process-local maps (the default).
    Local(Arc<LocalStore>),
    /// Redis, shared by every instance (`[cluster] redis_url`).
    Redis(Arc<RedisStore>),
}

impl Sessions {
    /// A process-local store.
    pub fn local(config: SessionConfig) -> Self {
        Self::Local(Arc::new(LocalStore::new(config)))
    }

    /// A Redis store that has answered a `PING` (an unreachable Redis fails the start).
    pub async fn redis(redis: &RedisConfig, config: SessionConfig) -> Result<Self, SessionError> {
        Ok(Self::Redis(Arc::new(
            RedisStore::connect(redis, config).await?,
        )))
    }

    /// Whether the store answers now (`/readyz`): always for the local store, a `PING` for
    /// Redis.
    pub(crate) async fn ping(&self) -> Result<(), SessionError> {
        match self {
            Self::Local(_) => Ok(()),
            Self::Redis(store) => store.ping().await,
        }
    }

    /// See [`SessionStore::create`].
    pub async fn create(&self, new: NewSession<'_>) -> Result<SessionId, SessionError> {
        match self {
            Self::Local(store) => SessionStore::create(&**store, new).await,
            Self::Redis(store) => SessionStore::create(&**store, new).await,
        }
    }

    /// See [`SessionStore::validate`].
    pub async fn validate(
        &self,
        id: &SessionId,
        owner: Owner<'_>,
    ) -> Result<SessionInfo, SessionError> {
        match self {
            Self::Local(store) => SessionStore::validate(&**store, id, owner).await,
            Self::Redis(store) => SessionStore::validate(&**store, id, owner).await,
        }
    }

    /// See [`SessionStore::mark_initialized`].
    pub async fn mark_initialized(
        &self,
        id: &SessionId,
        owner: Owner<'_>,
    ) -> Result<(), SessionError> {
        match self {
            Self::Local(store) => SessionStore::mark_initialized(&**store, id, owner).await,
            Self::Redis(store) => SessionStore::mark_initialized(&**store, id, owner).await,
        }
    }

    /// See [`SessionStore::set_handshake`].
    pub async fn set_handshake(
        &self,
        id: &SessionId,
        owner: Owner<'_>,
        handshake: Handshake<'_>,
    ) -> Result<(), SessionError> {
        match self {
            Self::Local(store) => SessionStore::set_handshake(&**store, id, owner, handshake).await,
            Self::Redis(store) => SessionStore::set_handshake(&**store, id, owner, handshake).await,
        }
    }

    /// See [`SessionStore::delete`].
    pub async fn delete(&self, id: &SessionId, owner: Owner<'_>) -> Result<(), SessionError> {
        match self {
            Self::Local(store) => SessionStore::delete(&**store, id, owner).await,
            Self::Redis(store) => SessionStore::delete(&**store, id, owner).await,
        }
    }

    /// See [`SessionStore::count`].
    pub async fn count(&self, tenant: &str) -> Result<usize, SessionError> {
        match self {
            Self::Local(store) => SessionStore::count(&**store, tenant).await,
            Self::Redis(store) => SessionStore::count(&**store, tenant).await,
        }
    }

    /// Live sessions per tenant (metrics).
    pub async fn counts(&self) -> Result<Vec<(String, i64)>, SessionError> {
        match self {
            Self::Local(store) => Ok(store.counts()),
            Self::Redis(store) => store.counts().await,
        }
    }

    /// Reports to `sink` the lifetime of every session that ends: by DELETE or expiry in the
    /// process-local store; with Redis, by DELETE through this instance or by expiry claimed by
    /// this instance's sweep (the ledger in `session/redis/store.rs`: each session once across
    /// the deployment).
    pub(crate) fn observe_lifetimes(&self, sink: LifetimeSink) {
        match self {
            Self::Local(store) => store.observe_lifetimes(sink),
            Self::Redis(store) => store.observe_lifetimes(sink),
        }
    }

    /// See [`SessionStore::expire`].
    pub async fn expire(&self) -> Result<Vec<SessionId>, SessionError> {
        match self {
            Self::Local(store) => SessionStore::expire(&**store).await,
            Self::Redis(store) => SessionStore::expire(&**store).await,
        }
    }
}
