//! The Redis backplane: routes a message to the instance holding a session's live stream, and a
//! catalog change to every instance, over Redis pub/sub.
//!
//! Owns the stream-holder registry, the per-instance and broadcast channels, and the two
//! connections; the wire form of what it publishes is `frame.rs`, and the subscriber that hands
//! what arrives to this instance's [`Inbox`] (the stream registry) is `subscriber.rs`. Must not
//! hold sockets, frame SSE or know JSON-RPC: messages are bytes.
//!
//! Layout (`{p}` the prefix; every component escaped so `:` only separates):
//! - `sluice:{p}:holder:{tenant}:{client}:{caller}:{session}` → id of the instance holding a live
//!   stream of that session, with a TTL ([`RedisConfig::holder_ttl`]) its holder refreshes. The
//!   key names the whole owner, so a lookup made for one caller can never find another caller's
//!   stream, even with the right session id.
//! - `sluice:{p}:instance:{instance}`: the channel each instance subscribes to.
//! - `sluice:{p}:broadcast`: the channel of catalog invalidations and configuration notices,
//!   which every instance hears.
//! - `sluice:{p}:config_version`: a counter bumped by every instance that reloaded its
//!   configuration; the notice on the broadcast channel carries the new value, and every
//!   [`RedisBackplane::sync`] reads it, so an instance that missed a notice (Redis was away)
//!   still catches up.
//!
//! Holder registrations are kept fresh by one registry-wide [`RedisBackplane::sync`] (one
//! pipelined round trip for every stream this instance holds), not by a timer per stream.
//!
//! A routed message carries its owner as well as its session, and the receiving instance
//! delivers it only to a stream it registered for exactly that owner (defence in depth: a
//! stale or forged registration cannot make it write into someone else's stream).
//!
//! Concurrency: commands go over one multiplexed [`ConnectionManager`]; the subscription has
//! its own RESP3 connection whose pushes are handled inline by a closure (no queue, so nothing
//! grows without bound; [`Inbox::deliver`] never blocks). Both reconnect by themselves, and the
//! subscription is renewed after a reconnect. The local holder map is behind one `parking_lot` mutex,
//! never held across an `.await`.
//!
//! Subscription state: the subscriber connection reconnects with a backoff of its own (up to
//! two seconds), so for a while after Redis comes back commands work but nothing published to
//! this instance is heard. [`RedisBackplane::is_subscribed`] says whether both channels are
//! subscribed now (set by the server's subscribe confirmations, cleared by a disconnect), and a
//! publish that reaches no subscriber is not a delivery: [`RedisBackplane::reachable`] checks
//! that the holder is listening before a request is accepted, and
//! [`RedisBackplane::publish_patiently`] retries until it is (within the holder TTL).

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::AtomicU8;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use redis::aio::ConnectionManager;
use redis::{IntoConnectionInfo, ProtocolVersion, PushInfo, Script, Value};

use super::frame::{encode_deliver, encode_invalidate, encode_routed, KIND_CLOSE, KIND_RELOAD};
use super::subscriber::{Held, Receiver};
use super::wire::{bounded, component, millis, unavailable};
use super::{RedisConfig, RedisStore};
use crate::session::{BackplaneError, Inbox, Owner, OwnerKey, SessionId};

/// Refresh: keep the registration when it is ours (or re-create it when Redis lost it);
/// leave it when another instance has taken the stream over. KEYS: holder. ARGV: instance,
/// ttl ms. Returns 1 (ours) or 0 (held elsewhere).
const REFRESH: &str = r"
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
";

/// Unregister only our own registration. KEYS: holder. ARGV: instance.
const UNREGISTER: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 0
";

/// Whether the holder listens, in one round trip. KEYS: holder. ARGV: this instance, channel
/// prefix. Returns -1 (nobody holds it), -2 (this instance holds it) or the holder channel's
/// subscriber count.
const PROBE: &str = r"
local holder = redis.call('GET', KEYS[1])
if not holder then return -1 end
if holder == ARGV[1] then return -2 end
local counts = redis.call('PUBSUB', 'NUMSUB', ARGV[2] .. holder)
return counts[2]
";

/// Route in one round trip. KEYS: holder. ARGV: this instance, channel prefix, frame.
/// Returns -1 (nobody holds it), -2 (this instance holds it) or the subscriber count.
const ROUTE: &str = r"
local holder = redis.call('GET', KEYS[1])
if not holder then return -1 end
if holder == ARGV[1] then return -2 end
return redis.call('PUBLISH', ARGV[2] .. holder, ARGV[3])
";

/// Bump the configuration version and announce it. KEYS: version counter. ARGV: broadcast
/// channel, notice head (kind byte, origin instance, `:`). Returns the new version.
const ANNOUNCE: &str = r"
local version = redis.call('INCR', KEYS[1])
redis.call('PUBLISH', ARGV[1], ARGV[2] .. version)
return version
";

// === impl RedisBackplane ===

/// What one [`RedisBackplane::sync`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Synced {
    /// Registrations that are still this instance's.
    pub ours: usize,
    /// Registrations dropped because this instance no longer holds any stream of them.
    pub released: usize,
    /// The deployment's configuration version (0 before any reload was announced).
    pub config_version: u64,
}

/// Pause between two attempts of [`RedisBackplane::publish_patiently`] (doubling from
/// [`PATIENT_RETRY_MIN`] up to this).
const PATIENT_RETRY_MAX: Duration = Duration::from_millis(500);

/// First pause of [`RedisBackplane::publish_patiently`].
const PATIENT_RETRY_MIN: Duration = Duration::from_millis(25);

/// What one routing attempt found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Routing {
    /// A live stream (here, or the holder's subscription) took it.
    Delivered,
    /// No instance holds a live stream of that session for that owner.
    NoHolder,
    /// An instance holds it but did not hear it (its subscription is being renewed).
    Unheard,
}

/// The scripts, hashed once.
struct Scripts {
    #[cfg(test)]
    refresh: Script,
    #[cfg(test)]
    unregister: Script,
    route: Script,
    probe: Script,
    announce: Script,
}

/// The backplane over Redis pub/sub, plus the registry of which instance holds which stream.
pub struct RedisBackplane {
    /// Commands (registry, publish); multiplexed, self-reconnecting.
    connection: ConnectionManager,
    /// The subscription (RESP3, pushes handled by [`Receiver::on_push`]). Kept so the
    /// connection lives as long as the backplane.
    _subscription: ConnectionManager,
    receiver: Arc<Receiver>,
    scripts: Scripts,
    instance_id: String,
    namespace: String,
    /// `sluice:{p}:instance:` (the holder's id is appended by the route script).
    channel_prefix: String,
    broadcast_channel: String,
    /// Key of the deployment's configuration version counter.
    config_version_key: String,
    command_timeout: Duration,
    holder_ttl: Duration,
}

impl std::fmt::Debug for RedisBackplane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisBackplane")
            .field("instance_id", &self.instance_id)
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}

impl RedisBackplane {
    /// Connects, subscribes this instance (`instance_id`, unique per running instance) to its
    /// channel and the broadcast channel, and hands what arrives to `inbox`. Fails when Redis
    /// does not answer within the command timeout.
    pub async fn connect(
        redis: &RedisConfig,
        instance_id: &str,
        inbox: Arc<dyn Inbox>,
    ) -> Result<Self, BackplaneError> {
        let namespace = redis.namespace();
        // The instance id is a component too: escaped, it can hold no `:`.
        let instance_id = component(instance_id);
        let channel_prefix = format!("{namespace}instance:");
        let instance_channel = format!("{channel_prefix}{instance_id}");
        let broadcast_channel = format!("{namespace}broadcast");
        let receiver = Arc::new(Receiver {
            inbox,
            held: Mutex::new(HashMap::new()),
            subscribed: AtomicU8::new(0),
            instance_id: instance_id.clone().into_bytes(),
            instance_channel: instance_channel.clone().into_bytes(),
            broadcast_channel: broadcast_channel.clone().into_bytes(),
            cache: std::sync::OnceLock::new(),
        });

        let client = redis::Client::open(redis.url.as_str()).map_err(|e| unavailable(&e))?;
        let connection = redis.manager(|c| c, client).map_err(|e| unavailable(&e))?;

        // Pushes need RESP3 on the subscription connection.
        let info = redis
            .url
            .as_str()
            .into_connection_info()
            .map_err(|e| unavailable(&e))?;
        let settings = info
            .redis_settings()
            .clone()
            .set_protocol(ProtocolVersion::RESP3);
        let client =
            redis::Client::open(info.set_redis_settings(settings)).map_err(|e| unavailable(&e))?;
        let on_push = receiver.clone();
        let mut subscription = redis
            .manager(
                move |config| {
                    config
                        .set_push_sender(move |push: PushInfo| {
                            on_push.on_push(push);
                            Ok::<(), std::convert::Infallible>(())
                        })
                        .set_automatic_resubscription()
                        // Nothing but a reconnect revives an idle subscription: keep trying.
                        .set_number_of_retries(usize::MAX)
                },
                client,
            )
            .map_err(|e| unavailable(&e))?;
        bounded(
            redis.command_timeout,
            subscription.subscribe(&[instance_channel.as_str(), broadcast_channel.as_str()]),
        )
        .await?;
        // The confirmations reach the receiver through the manager's push task, a moment after
        // the reply: wait for them (briefly) so a fresh instance is ready when it starts.
        let confirmed = async {
            while !receiver.is_subscribed() {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        };
        let _ = tokio::time::timeout(redis.command_timeout, confirmed).await;

        Ok(Self {
            connection,
            _subscription: subscription,
            receiver,
            scripts: Scripts {
                #[cfg(test)]
                refresh: Script::new(REFRESH),
                #[cfg(test)]
                unregister: Script::new(UNREGISTER),
                route: Script::new(ROUTE),
                probe: Script::new(PROBE),
                announce: Script::new(ANNOUNCE),
            },
            config_version_key: format!("{namespace}config_version"),
            instance_id,
            namespace,
            channel_prefix,
            broadcast_channel,
            command_timeout: redis.command_timeout,
            holder_ttl: redis.holder_ttl,
        })
    }

    /// Makes this subscription keep `store`'s session cache honest: session-gone notices on the
    /// broadcast channel empty its entries, and the cache is used only while both channels are
    /// subscribed (`cache.rs`). Call once, with the store of the same deployment (same URL and
    /// prefix); a second call is ignored.
    pub(crate) fn serve_cache(&self, store: &RedisStore) {
        let _ = self.receiver.cache.set(store.cache().clone());
        if self.receiver.is_subscribed() {
            store.cache().listen();
        }
    }

    /// The server-side id of the subscription connection (tests kill it to check that the
    /// subscription comes back).
    #[cfg(test)]
    pub(super) async fn subscription_client_id(&self) -> Result<i64, BackplaneError> {
        let mut subscription = self._subscription.clone();
        bounded(
            self.command_timeout,
            redis::cmd("CLIENT")
                .arg("ID")
                .query_async(&mut subscription),
        )
        .await
        .map_err(BackplaneError::from)
    }

    /// Whether this instance hears its channels now: false from a disconnect of the subscriber
    /// connection until Redis confirmed the renewed subscriptions (`/readyz` is 503 meanwhile).
    pub(crate) fn is_subscribed(&self) -> bool {
        self.receiver.is_subscribed()
    }

    /// Whether a message for `session`'s stream (owned by `owner`) held on another instance
    /// can be delivered now: this instance's subscriptions are up, an instance holds the
    /// stream, and its channel has a subscriber (one round trip). Checked before a request
    /// whose answer must travel is accepted, so it is refused rather than accepted and lost.
    pub(crate) async fn reachable(
        &self,
        owner: Owner<'_>,
        session: &SessionId,
    ) -> Result<bool, BackplaneError> {
        if !self.is_subscribed() {
            return Ok(false);
        }
        let mut invocation = self.scripts.probe.key(self.holder_key(owner, session));
        invocation.arg(&self.instance_id).arg(&self.channel_prefix);
        let invocation = &invocation;
        let listeners: i64 = twice(|| {
            let mut connection = self.connection.clone();
            async move {
                bounded(
                    self.command_timeout,
                    invocation.invoke_async(&mut connection),
                )
                .await
                .map_err(BackplaneError::from)
            }
        })
        .await?;
        Ok(listeners > 0)
    }

    /// One `PING` on the command connection (`/readyz`: the backplane's connection is not the
    /// store's, and must answer too).
    pub(crate) async fn ping(&self) -> Result<(), BackplaneError> {
        let mut connection = self.connection.clone();
        bounded(
            self.command_timeout,
            redis::cmd("PING").query_async::<()>(&mut connection),
        )
        .await
        .map_err(BackplaneError::from)
    }

    /// This instance's id as it appears in the registry (escaped).
    pub(crate) fn instance_id(&self) -> &str {
        &self.instance_id
    }

    /// Records that this instance holds a live stream of `session` for `owner` (call when a
    /// GET, retained POST or legacy `/sse` stream opens). Several streams of one session may
    /// be registered; the registration lasts until the last is unregistered.
    pub(crate) async fn register_holder(
        &self,
        owner: Owner<'_>,
        session: &SessionId,
    ) -> Result<(), BackplaneError> {
        {
            let mut held = self.receiver.held.lock();
            let entry = held
                .entry(*session)
                .or_insert_with(|| (OwnerKey::new(owner), 0));
            // A session belongs to one owner; a different one here would be a transport bug,
            // and the newest registration wins so routing follows the live stream.
            if !entry.0.is(owner) {
                *entry = (OwnerKey::new(owner), 0);
            }
            entry.1 += 1;
        }
        let key = self.holder_key(owner, session);
        let key = &key;
        twice(|| {
            let mut connection = self.connection.clone();
            async move {
                bounded(
                    self.command_timeout,
                    redis::cmd("SET")
                        .arg(key)
                        .arg(&self.instance_id)
                        .arg("PX")
                        .arg(millis(self.holder_ttl))
                        .query_async::<()>(&mut connection),
                )
                .await
                .map_err(BackplaneError::from)
            }
        })
        .await
    }

    /// Extends this instance's registration for `session` by the holder TTL (call well within
    /// it, e.g. from the stream's keep-alive). `Ok(false)` when another instance holds the
    /// stream now (the client reconnected elsewhere): this stream should end.
    #[cfg(test)]
    pub(crate) async fn refresh(
        &self,
        owner: Owner<'_>,
        session: &SessionId,
    ) -> Result<bool, BackplaneError> {
        let mut invocation = self.scripts.refresh.key(self.holder_key(owner, session));
        invocation
            .arg(&self.instance_id)
            .arg(millis(self.holder_ttl));
        let mut connection = self.connection.clone();
        let ours: i64 = bounded(
            self.command_timeout,
            invocation.invoke_async(&mut connection),
        )
        .await?;
        Ok(ours == 1)
    }

    /// Refreshes every registration this instance holds, in one round trip; returns how many
    /// are still ours.
    #[cfg(test)]
    pub(crate) async fn refresh_all(&self) -> Result<usize, BackplaneError> {
        let pipeline = self.refresh_pipeline();
        if pipeline.cmd_iter().next().is_none() {
            return Ok(0);
        }
        let mut connection = self.connection.clone();
        let ours: Vec<i64> =
            bounded(self.command_timeout, pipeline.query_async(&mut connection)).await?;
        Ok(ours.into_iter().filter(|ours| *ours == 1).count())
    }

    /// Drops one stream of `session` from this instance; the last one removes the
    /// registration (only if it is still ours).
    #[cfg(test)]
    pub(crate) async fn unregister(
        &self,
        owner: Owner<'_>,
        session: &SessionId,
    ) -> Result<(), BackplaneError> {
        let last = {
            let mut held = self.receiver.held.lock();
            match held.get_mut(session) {
                Some((key, n_streams)) if key.is(owner) => {
                    *n_streams = n_streams.saturating_sub(1);
                    if *n_streams == 0 {
                        held.remove(session);
                        true
                    } else {
                        false
                    }
                }
                // Not ours, or registered for another owner: nothing to release.
                _ => return Ok(()),
            }
        };
        if !last {
            return Ok(());
        }
        let mut invocation = self.scripts.unregister.key(self.holder_key(owner, session));
        invocation.arg(&self.instance_id);
        let mut connection = self.connection.clone();
        bounded(
            self.command_timeout,
            invocation.invoke_async::<i64>(&mut connection),
        )
        .await
        .map_err(BackplaneError::from)
        .map(drop)
    }

    /// The instance holding a live stream of `session` for `owner`, if any.
    pub(crate) async fn holder_of(
        &self,
        owner: Owner<'_>,
        session: &SessionId,
    ) -> Result<Option<String>, BackplaneError> {
        let mut connection = self.connection.clone();
        bounded(
            self.command_timeout,
            redis::cmd("GET")
                .arg(self.holder_key(owner, session))
                .query_async(&mut connection),
        )
        .await
        .map_err(BackplaneError::from)
    }

    /// Sends `message` to `session`'s live stream for `owner`, wherever it is held: straight
    /// to the inbox when held here, else one round trip that looks the holder up and publishes
    /// to its channel. `Ok(true)` when a stream here took it, or the holder's channel had a
    /// subscriber (the holder got it; at most once, nothing is queued); `Ok(false)` when no
    /// instance holds a live stream of that session for that owner.
    pub async fn publish(
        &self,
        owner: Owner<'_>,
        session: &SessionId,
        message: &[u8],
    ) -> Result<bool, BackplaneError> {
        self.route_once(owner, session, message)
            .await
            .map(|routing| routing == Routing::Delivered)
    }

    /// [`RedisBackplane::publish`] for a message a client was promised (its request was
    /// accepted): while the holder is registered but not listening (its subscription is being
    /// renewed after a Redis restart) or Redis does not answer, tries again, pausing up to
    /// [`PATIENT_RETRY_MAX`], for at most the holder TTL (a holder silent that long is gone:
    /// its registration expires). Gives up at once when no instance holds the stream.
    pub(crate) async fn publish_patiently(
        &self,
        owner: Owner<'_>,
        session: &SessionId,
        message: &[u8],
    ) -> Result<bool, BackplaneError> {
        let deadline = tokio::time::Instant::now() + self.holder_ttl;
        let mut pause = PATIENT_RETRY_MIN;
        loop {
            let outcome = self.route_once(owner, session, message).await;
            match outcome {
                Ok(Routing::Delivered) => return Ok(true),
                Ok(Routing::NoHolder) => return Ok(false),
                Ok(Routing::Unheard) | Err(_) => {}
            }
            if tokio::time::Instant::now() + pause >= deadline {
                return outcome.map(|_| false);
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(PATIENT_RETRY_MAX);
        }
    }

    /// One routing attempt (see [`RedisBackplane::publish`]).
    async fn route_once(
        &self,
        owner: Owner<'_>,
        session: &SessionId,
        message: &[u8],
    ) -> Result<Routing, BackplaneError> {
        // A stream registered here that no longer takes messages may have been replaced by
        // one on another instance (the client reconnected there): fall through to the route.
        if self.receiver.holds(session, owner) && self.receiver.inbox.deliver(session, message) {
            return Ok(Routing::Delivered);
        }
        let frame = encode_deliver(owner, session, message)
            .map_err(|error| BackplaneError::Unavailable(error.to_string()))?;
        let mut invocation = self.scripts.route.key(self.holder_key(owner, session));
        invocation
            .arg(&self.instance_id)
            .arg(&self.channel_prefix)
            .arg(frame.as_ref());
        let mut connection = self.connection.clone();
        let outcome: i64 = bounded(
            self.command_timeout,
            invocation.invoke_async(&mut connection),
        )
        .await?;
        match outcome {
            // Registered here in Redis but not in our map: a stale registration of a previous
            // life of this instance. Nothing live to take it.
            -2 | -1 => Ok(Routing::NoHolder),
            // PUBLISH counts the subscribers that got it: none means nobody heard it.
            0 => Ok(Routing::Unheard),
            _ => Ok(Routing::Delivered),
        }
    }

    /// Tells every instance (this one included, through its own subscription) that
    /// `tenant`'s catalog changed.
    pub async fn broadcast_invalidation(&self, tenant: &str) -> Result<(), BackplaneError> {
        let mut connection = self.connection.clone();
        bounded(
            self.command_timeout,
            redis::cmd("PUBLISH")
                .arg(&self.broadcast_channel)
                .arg(encode_invalidate(tenant).as_ref())
                .query_async::<i64>(&mut connection),
        )
        .await
        .map_err(BackplaneError::from)
        .map(drop)
    }

    /// Asks the instance holding a stream of `session` for `owner` (if another one) to end
    /// that session's streams: it was deleted here. Best effort, one round trip.
    pub(crate) async fn publish_close(
        &self,
        owner: Owner<'_>,
        session: &SessionId,
    ) -> Result<(), BackplaneError> {
        let frame = encode_routed(KIND_CLOSE, owner, session, b"")
            .map_err(|error| BackplaneError::Unavailable(error.to_string()))?;
        let mut invocation = self.scripts.route.key(self.holder_key(owner, session));
        invocation
            .arg(&self.instance_id)
            .arg(&self.channel_prefix)
            .arg(frame.as_ref());
        let mut connection = self.connection.clone();
        bounded(
            self.command_timeout,
            invocation.invoke_async::<i64>(&mut connection),
        )
        .await
        .map_err(BackplaneError::from)
        .map(drop)
    }

    /// Announces that this instance reloaded its configuration: bumps the deployment's
    /// configuration version and tells every other instance (one round trip). Returns the new
    /// version.
    pub(crate) async fn announce_reload(&self) -> Result<u64, BackplaneError> {
        let mut head = vec![KIND_RELOAD];
        head.extend_from_slice(self.instance_id.as_bytes());
        head.push(b':');
        let mut invocation = self.scripts.announce.key(&self.config_version_key);
        invocation.arg(&self.broadcast_channel).arg(head);
        let mut connection = self.connection.clone();
        let version: i64 = bounded(
            self.command_timeout,
            invocation.invoke_async(&mut connection),
        )
        .await?;
        Ok(u64::try_from(version).unwrap_or(0))
    }

    /// The deployment's configuration version (0 before any reload was announced).
    pub(crate) async fn config_version(&self) -> Result<u64, BackplaneError> {
        let mut connection = self.connection.clone();
        let version: Option<u64> = bounded(
            self.command_timeout,
            redis::cmd("GET")
                .arg(&self.config_version_key)
                .query_async(&mut connection),
        )
        .await?;
        Ok(version.unwrap_or(0))
    }

    /// Makes the registry match `live`, the sessions this instance holds streams of now (live
    /// or retained for resumption), in one pipelined round trip: every one of them is
    /// (re-)registered with a fresh TTL unless another instance holds it now, registrations of
    /// sessions no longer in `live` are released, and the configuration version is read. The
    /// holder calls it well within the holder TTL; nothing else keeps registrations alive.
    pub async fn sync(&self, live: Vec<(SessionId, OwnerKey)>) -> Result<Synced, BackplaneError> {
        let released: Vec<(SessionId, OwnerKey)> = {
            let mut held = self.receiver.held.lock();
            let mut next: Held = HashMap::with_capacity(live.len());
            for (session, owner) in live {
                let n_streams = held
                    .remove(&session)
                    .filter(|(key, _)| key.is(owner.get()))
                    .map_or(1, |(_, n)| n.max(1));
                next.insert(session, (owner, n_streams));
            }
            let released = held.drain().map(|(id, (owner, _))| (id, owner)).collect();
            *held = next;
            released
        };
        let mut pipeline = self.refresh_pipeline();
        for (session, owner) in &released {
            pipeline
                .cmd("EVAL")
                .arg(UNREGISTER)
                .arg(1)
                .arg(self.holder_key(owner.get(), session))
                .arg(&self.instance_id)
                .ignore();
        }
        pipeline.cmd("GET").arg(&self.config_version_key);
        let mut connection = self.connection.clone();
        let mut replies: Vec<Value> =
            bounded(self.command_timeout, pipeline.query_async(&mut connection)).await?;
        let version = match replies.pop() {
            Some(Value::BulkString(digits)) => std::str::from_utf8(&digits)
                .ok()
                .and_then(|digits| digits.parse().ok())
                .unwrap_or(0),
            Some(Value::Int(version)) => u64::try_from(version).unwrap_or(0),
            _ => 0,
        };
        let ours = replies
            .iter()
            .filter(|reply| matches!(reply, Value::Int(1)))
            .count();
        Ok(Synced {
            ours,
            released: released.len(),
            config_version: version,
        })
    }

    /// A pipeline re-registering every holder key of the streams held here, each with a fresh
    /// TTL unless another instance holds it now (one `1` reply per key still ours).
    fn refresh_pipeline(&self) -> redis::Pipeline {
        let mut pipeline = redis::pipe();
        for (session, (owner, _)) in self.receiver.held.lock().iter() {
            // EVAL (not EVALSHA) so a pipeline needs no script-load fallback.
            pipeline
                .cmd("EVAL")
                .arg(REFRESH)
                .arg(1)
                .arg(self.holder_key(owner.get(), session))
                .arg(&self.instance_id)
                .arg(millis(self.holder_ttl));
        }
        pipeline
    }

    /// Streams held here (sessions with at least one registered stream).
    pub fn held(&self) -> usize {
        self.receiver.held.lock().len()
    }

    fn holder_key(&self, owner: Owner<'_>, session: &SessionId) -> String {
        format!(
            "{}holder:{}:{}:{}:{}",
            self.namespace,
            component(owner.tenant),
            component(owner.client),
            component(owner.caller),
            session.encode().as_str()
        )
    }
}

/// Runs `attempt` again when it fails once: a command is what finds a connection that died
/// while idle (the manager then reconnects), so the first command after Redis came back may
/// fail where the second succeeds. For the few calls whose failure a client would see.
async fn twice<T, F, Fut>(mut attempt: F) -> Result<T, BackplaneError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, BackplaneError>>,
{
    match attempt().await {
        Ok(value) => Ok(value),
        Err(_) => attempt().await,
    }
}
