//! Sessions and routing shared by every instance of a deployment, through Redis.
//!
//! Owns [`RedisConfig`] (where Redis is, the namespace, the command timeout, the holder TTL)
//! and how a connection to Redis is made. Must not hold sockets of clients or know about
//! streams, SSE or JSON-RPC: what crosses Redis is records and bytes.
//!
//! - `store.rs`: [`RedisStore`], session records and both caps, one Lua round trip per
//!   operation; `cache.rs`, its short local cache of validated sessions, emptied over the
//!   backplane's broadcast channel when a session is deleted on any instance.
//! - `backplane.rs`: [`RedisBackplane`], the stream-holder registry and pub/sub routing to the
//!   instance holding a stream; `subscriber.rs`, what its subscription does with each push.
//! - `frame.rs`: the wire form of what the backplane publishes (`encode_deliver`,
//!   `decode_routed`, `encode_invalidate`, `decode_invalidate`).
//! - `wire.rs`: what the store and the backplane share: escaping key components, bounding a
//!   command by the timeout, reading replies, milliseconds, locks.
//! - `tests.rs` (+ `tests/`): both against a real Redis.
//!
//! Every key and channel name starts with `sluice:{prefix}:` (`RedisConfig::namespace`), so
//! several deployments (or tests) share one Redis without seeing each other.

use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::RedisResult;

mod backplane;
mod cache;
mod frame;
mod scripts;
mod store;
mod subscriber;
#[cfg(test)]
pub(crate) mod tests;
pub(crate) mod wire;

pub use backplane::RedisBackplane;
pub use store::RedisStore;

/// Default bound on one Redis command (connect included); past it the operation fails with
/// [`SessionError::Unavailable`](super::SessionError::Unavailable) and the request gets a 503
/// instead of hanging.
pub(crate) const DEFAULT_REDIS_COMMAND_TIMEOUT: Duration = Duration::from_millis(500);

/// Default lifetime of a stream-holder registration that its holder stops refreshing (the
/// holder died): after it, messages for that stream are no longer routed anywhere.
pub(crate) const DEFAULT_HOLDER_TTL: Duration = Duration::from_secs(30);

/// Default share of the idle timeout within which a validation does not write the session's
/// refreshed expiry back to Redis (`[cluster] session_refresh_after_percent`): a session last
/// refreshed less than 25% of `session_idle_secs` ago is only read. An idle session then expires
/// between 75% and 100% of the idle timeout after its last request.
pub(crate) const DEFAULT_SESSION_REFRESH_AFTER_PERCENT: u32 = 25;

/// Default longest time an instance answers for a session from its local cache without asking
/// Redis (`[cluster] session_cache_ms`); the bound on how long a DELETE on another instance
/// whose invalidation was lost can go unseen.
pub(crate) const DEFAULT_SESSION_CACHE: Duration = Duration::from_secs(1);

/// Default namespace of a deployment's keys and channels.
pub(crate) const DEFAULT_REDIS_PREFIX: &str = "default";

/// Reconnection attempts a command waits for before failing (see [`RedisConfig::manager`]).
const COMMAND_RECONNECT_RETRIES: usize = 1;

/// Where Redis is and how sluice uses it (`[cluster]` in the configuration).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedisConfig {
    /// `redis://[user:password@]host:port[/db]` (or `rediss://` when the client is built
    /// with TLS).
    pub url: String,
    /// Namespace of every key and channel, so several deployments (or tests) share one Redis.
    pub prefix: String,
    /// Bound on each command, connection attempts included.
    pub command_timeout: Duration,
    /// Lifetime of a stream-holder registration not refreshed by its holder.
    pub holder_ttl: Duration,
    /// A validation writes the refreshed expiry only when the session's last refresh is at
    /// least this percent of the idle timeout old (0: on every validation).
    pub refresh_after_percent: u32,
    /// Longest time a validated session is answered from the local cache (zero: no cache).
    pub session_cache: Duration,
}

impl RedisConfig {
    /// `url` with the default prefix and timeouts.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            prefix: DEFAULT_REDIS_PREFIX.to_owned(),
            command_timeout: DEFAULT_REDIS_COMMAND_TIMEOUT,
            holder_ttl: DEFAULT_HOLDER_TTL,
            refresh_after_percent: DEFAULT_SESSION_REFRESH_AFTER_PERCENT,
            session_cache: DEFAULT_SESSION_CACHE,
        }
    }

    /// The same with `prefix` as namespace.
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// `sluice:{prefix}:` with the prefix escaped like any other component.
    fn namespace(&self) -> String {
        format!("sluice:{}:", wire::component(&self.prefix))
    }

    /// A connection manager of its own for `url` and the namespace, for another module that
    /// keeps its records in the same Redis under the same prefix (the A2A task store).
    pub(crate) fn shared(&self) -> RedisResult<(ConnectionManager, String)> {
        let client = redis::Client::open(self.url.as_str())?;
        Ok((self.manager(|c| c, client)?, self.namespace()))
    }

    /// A connection manager for `url`: lazy (never blocks here), reconnecting by itself,
    /// every command and connect attempt bounded by the command timeout.
    fn manager(
        &self,
        configure: impl FnOnce(ConnectionManagerConfig) -> ConnectionManagerConfig,
        client: redis::Client,
    ) -> RedisResult<ConnectionManager> {
        let config = ConnectionManagerConfig::new()
            .set_response_timeout(Some(self.command_timeout))
            .set_connection_timeout(Some(self.command_timeout))
            // A failed reconnect is retried once, then the waiting commands fail at once
            // (`Unavailable`, a 503) instead of each waiting out its timeout while Redis is
            // down; the next command starts a new attempt, so service resumes by itself.
            .set_min_delay(Duration::from_millis(50))
            .set_max_delay(Duration::from_secs(2))
            .set_number_of_retries(COMMAND_RECONNECT_RETRIES);
        ConnectionManager::new_lazy_with_config(client, configure(config))
    }
}
