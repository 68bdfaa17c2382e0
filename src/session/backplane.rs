//! The `Backplane` seam: how a message reaches the instance holding a session's stream, and how
//! a catalog change reaches every instance.
//!
//! Owns the contract and the process-local implementation, which hands everything straight to
//! this process's stream registry through the [`Inbox`] trait (implemented by
//! `transport::stream::StreamRegistry`; this module cannot name it, being the lower stage).
//! Must not hold sockets or frame SSE.

use std::future::{ready, Future};
use std::sync::Arc;

use bytes::Bytes;

use super::{Owner, RedisBackplane, SessionId};

/// Errors from a backplane (only shared implementations fail; the local one never does).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BackplaneError {
    /// The shared bus could not be reached.
    #[error("backplane unavailable: {0}")]
    Unavailable(String),
}

/// Where messages for sessions land on this instance: the live stream registry.
pub trait Inbox: Send + Sync + 'static {
    /// Writes `message` (one JSON-RPC message) to the session's standalone stream (GET, or the
    /// 2024-11-05 `/sse` stream) when this instance holds it live; false otherwise.
    fn deliver(&self, session: &SessionId, message: &[u8]) -> bool;

    /// The catalog of `tenant` changed: push `notifications/tools/list_changed` to its clients'
    /// sessions and listen streams held live on this instance. Returns how many got it.
    fn invalidate(&self, tenant: &str) -> usize;

    /// The session ended on another instance (DELETE there): end its streams held here.
    fn close(&self, _session: &SessionId) {}

    /// Another instance published configuration version `version` (it reloaded): this
    /// instance should reload too. Must not block (the caller is the subscription's reader).
    fn config_changed(&self, _version: u64) {}
}

/// Routing between instances.
///
/// Contract: `publish` delivers to the one instance holding the session's live stream (at
/// most once; best effort, nothing is queued for a session with no live stream);
/// `broadcast_invalidation` reaches every instance, each of which notifies its own streams.
pub(crate) trait Backplane: Send + Sync {
    /// Sends `message` to the session's live standalone stream owned by `owner`, wherever it is
    /// held. `Ok(true)` when a live stream took it (for a shared bus: when an instance claimed
    /// it).
    fn publish(
        &self,
        owner: Owner<'_>,
        session: &SessionId,
        message: Bytes,
    ) -> impl Future<Output = Result<bool, BackplaneError>> + Send;

    /// Tells every instance that `tenant`'s catalog changed.
    fn broadcast_invalidation(
        &self,
        tenant: &str,
    ) -> impl Future<Output = Result<(), BackplaneError>> + Send;
}

/// The single-instance backplane: everything is local.
#[derive(Clone)]
pub struct LocalBackplane {
    inbox: Arc<dyn Inbox>,
}

impl LocalBackplane {
    /// A backplane delivering into `inbox` (the stream registry).
    pub fn new(inbox: Arc<dyn Inbox>) -> Self {
        Self { inbox }
    }
}

impl std::fmt::Debug for LocalBackplane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalBackplane").finish_non_exhaustive()
    }
}

impl Backplane for LocalBackplane {
    fn publish(
        &self,
        _owner: Owner<'_>,
        session: &SessionId,
        message: Bytes,
    ) -> impl Future<Output = Result<bool, BackplaneError>> + Send {
        ready(Ok(self.inbox.deliver(session, &message)))
    }

    fn broadcast_invalidation(
        &self,
        tenant: &str,
    ) -> impl Future<Output = Result<(), BackplaneError>> + Send {
        self.inbox.invalidate(tenant);
        ready(Ok(()))
    }
}

/// The backplane in use: a `match` front over the implementations, so calls need no boxing.
///
/// Besides the [`Backplane`] contract it carries what only a shared bus needs (holder
/// registration, remote close, configuration notices); on the local bus those are no-ops that
/// cost nothing, so the single-instance path does no extra work.
#[derive(Debug, Clone)]
pub enum Bus {
    /// Single instance (the default).
    Local(LocalBackplane),
    /// Several instances over Redis pub/sub (`[cluster] redis_url`).
    Redis(Arc<RedisBackplane>),
}

impl Bus {
    /// The process-local bus over `inbox`.
    pub fn local(inbox: Arc<dyn Inbox>) -> Self {
        Self::Local(LocalBackplane::new(inbox))
    }

    /// True when messages may have to cross instances.
    pub(crate) fn is_shared(&self) -> bool {
        matches!(self, Self::Redis(_))
    }

    /// See [`Backplane::publish`].
    pub async fn publish(
        &self,
        owner: Owner<'_>,
        session: &SessionId,
        message: Bytes,
    ) -> Result<bool, BackplaneError> {
        match self {
            Self::Local(local) => local.publish(owner, session, message).await,
            Self::Redis(redis) => redis.publish(owner, session, &message).await,
        }
    }

    /// Whether the bus answers now (`/readyz`): always locally, a `PING` on Redis.
    pub(crate) async fn ping(&self) -> Result<(), BackplaneError> {
        match self {
            Self::Local(_) => Ok(()),
            Self::Redis(redis) => redis.ping().await,
        }
    }

    /// Whether messages published to this instance are heard now (`/readyz`): always locally;
    /// on Redis, once the subscriptions are (re-)established after a (re)connect.
    pub(crate) fn is_ready(&self) -> bool {
        match self {
            Self::Local(_) => true,
            Self::Redis(redis) => redis.is_subscribed(),
        }
    }

    /// Whether a message for `session`'s stream, held by another instance, can be delivered
    /// now (see [`RedisBackplane::reachable`]); always locally (nothing travels).
    pub(crate) async fn reachable(
        &self,
        owner: Owner<'_>,
        session: &SessionId,
    ) -> Result<bool, BackplaneError> {
        match self {
            Self::Local(_) => Ok(true),
            Self::Redis(redis) => redis.reachable(owner, session).await,
        }
    }

    /// [`Bus::publish`] of a message a client was promised, retried while its holder is
    /// registered but not listening yet (see [`RedisBackplane::publish_patiently`]).
    pub(crate) async fn publish_patiently(
        &self,
        owner: Owner<'_>,
        session: &SessionId,
        message: Bytes,
    ) -> Result<bool, BackplaneError> {
        match self {
            Self::Local(local) => local.publish(owner, session, message).await,
            Self::Redis(redis) => redis.publish_patiently(owner, session, &message).await,
        }
    }

    /// See [`Backplane::broadcast_invalidation`].
    pub async fn broadcast_invalidation(&self, tenant: &str) -> Result<(), BackplaneError> {
        match self {
            Self::Local(local) => local.broadcast_invalidation(tenant).await,
            Self::Redis(redis) => redis.broadcast_invalidation(tenant).await,
        }
    }

    /// Records that this instance now holds a live stream of `session` (GET or legacy `/sse`
    /// opened), so messages posted to other instances are routed here at once. No-op locally.
    pub(crate) async fn register_holder(
        &self,
        owner: Owner<'_>,
        session: &SessionId,
    ) -> Result<(), BackplaneError> {
        match self {
            Self::Local(_) => Ok(()),
            Self::Redis(redis) => redis.register_holder(owner, session).await,
        }
    }

    /// Whether another instance holds a live stream of `session` for `owner` (its holder
    /// registration names an instance other than this one). Always `false` locally.
    pub(crate) async fn is_held_elsewhere(
        &self,
        owner: Owner<'_>,
        session: &SessionId,
    ) -> Result<bool, BackplaneError> {
        match self {
            Self::Local(_) => Ok(false),
            Self::Redis(redis) => Ok(redis
                .holder_of(owner, session)
                .await?
                .is_some_and(|holder| holder != redis.instance_id())),
        }
    }

    /// Asks the instance holding `session`'s streams, if it is another one, to end them (the
    /// session was deleted here). No-op locally: the caller closed the local streams already.
    pub(crate) async fn close_elsewhere(
        &self,
        owner: Owner<'_>,
        session: &SessionId,
    ) -> Result<(), BackplaneError> {
        match self {
            Self::Local(_) => Ok(()),
            Self::Redis(redis) => redis.publish_close(owner, session).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    #[derive(Default)]
    struct Recorder {
        delivered: Mutex<Vec<(SessionId, Vec<u8>)>>,
        invalidated: Mutex<Vec<String>>,
    }

    impl Inbox for Recorder {
        fn deliver(&self, session: &SessionId, message: &[u8]) -> bool {
            self.delivered
                .lock()
                .unwrap()
                .push((*session, message.to_vec()));
            true
        }

        fn invalidate(&self, tenant: &str) -> usize {
            self.invalidated.lock().unwrap().push(tenant.to_owned());
            1
        }
    }

    #[tokio::test]
    async fn local_bus_hands_everything_to_the_inbox() {
        let recorder = Arc::new(Recorder::default());
        let bus = Bus::local(recorder.clone());
        let id = SessionId::random();
        let owner = Owner::new("t", "c", "anonymous");
        assert_eq!(
            bus.publish(owner, &id, Bytes::from_static(b"{}")).await,
            Ok(true)
        );
        assert_eq!(bus.broadcast_invalidation("t").await, Ok(()));
        assert_eq!(
            *recorder.delivered.lock().unwrap(),
            vec![(id, b"{}".to_vec())]
        );
        assert_eq!(*recorder.invalidated.lock().unwrap(), vec!["t".to_owned()]);
    }
}
