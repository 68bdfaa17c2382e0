//! The subscriber side of the Redis backplane: what the pub/sub connection's pushes do.
//!
//! Owns [`Receiver`]: the map of streams this instance holds (which owner, how many streams),
//! whether both channels are subscribed now, and the handling of each push, inline on the
//! connection's push task (no queue, so nothing grows without bound; [`Inbox::deliver`] never
//! blocks). A routed message is delivered only to a stream registered here for exactly its
//! owner. A session-gone notice on the broadcast channel empties the Redis store's cache entry
//! of that session (`cache.rs`), and the cache is used only while both channels are subscribed.
//! Must not send commands: `backplane.rs` does, and keeps the registry in Redis.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;
use redis::{PushInfo, PushKind, Value};

use super::cache::SessionCache;
use super::frame::{
    decode_invalidate, decode_reload, decode_routed, decode_session_gone, KIND_CLOSE, KIND_RELOAD,
    KIND_SESSION_GONE,
};
use crate::log_limit::{warn_limited, Kind};
use crate::session::{Inbox, Owner, OwnerKey, SessionId};

/// Streams this instance holds: session → (owner, number of its live streams here).
pub(super) type Held = HashMap<SessionId, (OwnerKey, usize)>;

/// Bit of [`Receiver::subscribed`]: this instance's channel is subscribed.
const SUBSCRIBED_INSTANCE: u8 = 1;

/// Bit of [`Receiver::subscribed`]: the broadcast channel is subscribed.
const SUBSCRIBED_BROADCAST: u8 = 2;

/// What the subscription closure shares with the backplane.
pub(super) struct Receiver {
    pub(super) inbox: Arc<dyn Inbox>,
    pub(super) held: Mutex<Held>,
    /// Which of this instance's channels the subscriber connection has subscribed now
    /// (`SUBSCRIBED_*` bits): set by the server's confirmations, cleared by a disconnect.
    pub(super) subscribed: AtomicU8,
    /// This instance's id (escaped): notices it sent itself are ignored.
    pub(super) instance_id: Vec<u8>,
    /// This instance's channel name, as bytes (compared with each push's channel).
    pub(super) instance_channel: Vec<u8>,
    pub(super) broadcast_channel: Vec<u8>,
    /// The session cache of this instance's Redis store, once attached
    /// ([`RedisBackplane::serve_cache`](super::RedisBackplane::serve_cache)).
    pub(super) cache: OnceLock<Arc<SessionCache>>,
}

impl Receiver {
    /// Handles one push from the subscription connection. Anything unexpected is dropped:
    /// pushes come from Redis, but the payload was published by some client.
    pub(super) fn on_push(&self, push: PushInfo) {
        match push.kind {
            PushKind::Message => {}
            PushKind::Disconnection => {
                self.subscribed.store(0, Ordering::Release);
                if let Some(cache) = self.cache.get() {
                    cache.stop();
                }
                return;
            }
            PushKind::Subscribe | PushKind::Unsubscribe => {
                let Some(Value::BulkString(channel)) = push.data.first() else {
                    return;
                };
                let bit = if *channel == self.instance_channel {
                    SUBSCRIBED_INSTANCE
                } else if *channel == self.broadcast_channel {
                    SUBSCRIBED_BROADCAST
                } else {
                    return;
                };
                if push.kind == PushKind::Subscribe {
                    self.subscribed.fetch_or(bit, Ordering::AcqRel);
                    if let (true, Some(cache)) = (self.is_subscribed(), self.cache.get()) {
                        cache.listen();
                    }
                } else {
                    self.subscribed.fetch_and(!bit, Ordering::AcqRel);
                    if let Some(cache) = self.cache.get() {
                        cache.stop();
                    }
                }
                return;
            }
            _ => return,
        }
        let (Some(channel), Some(payload)) = (push.data.first(), push.data.get(1)) else {
            return;
        };
        let (Value::BulkString(channel), Value::BulkString(payload)) = (channel, payload) else {
            return;
        };
        if *channel == self.instance_channel {
            match decode_routed(payload) {
                Ok((kind, routed)) if self.holds(&routed.session, routed.owner) => {
                    if kind == KIND_CLOSE {
                        self.inbox.close(&routed.session);
                    } else {
                        self.inbox.deliver(&routed.session, routed.message);
                    }
                }
                Ok(_) => tracing::debug!("backplane message for a stream not held here"),
                Err(error) => warn_limited!(
                    "",
                    Kind::MalformedBackplane,
                    %error,
                    "malformed backplane message dropped"
                ),
            }
        } else if *channel == self.broadcast_channel {
            if payload.first() == Some(&KIND_SESSION_GONE) {
                match decode_session_gone(payload) {
                    Ok(session) => {
                        if let Some(cache) = self.cache.get() {
                            cache.invalidate(&session);
                        }
                    }
                    Err(error) => warn_limited!(
                        "",
                        Kind::MalformedBackplane,
                        %error,
                        "malformed session notice"
                    ),
                }
                return;
            }
            if payload.first() == Some(&KIND_RELOAD) {
                match decode_reload(payload) {
                    Ok((origin, _)) if origin == self.instance_id.as_slice() => {}
                    Ok((_, version)) => self.inbox.config_changed(version),
                    Err(error) => warn_limited!(
                        "",
                        Kind::MalformedBackplane,
                        %error,
                        "malformed configuration notice"
                    ),
                }
                return;
            }
            match decode_invalidate(payload) {
                Ok(tenant) => {
                    self.inbox.invalidate(tenant);
                }
                Err(error) => warn_limited!(
                    "",
                    Kind::MalformedBackplane,
                    %error,
                    "malformed backplane broadcast dropped"
                ),
            }
        }
    }

    pub(super) fn is_subscribed(&self) -> bool {
        self.subscribed.load(Ordering::Acquire) == SUBSCRIBED_INSTANCE | SUBSCRIBED_BROADCAST
    }

    pub(super) fn holds(&self, session: &SessionId, owner: Owner<'_>) -> bool {
        self.held
            .lock()
            .get(session)
            .is_some_and(|(key, _)| key.is(owner))
    }
}
