//! Delivery of server-originated messages: list_changed notifications to every stream of a
//! tenant (or client), and the [`Inbox`] the session backplane hands routed messages to.
//!
//! Never waits: a stream whose queue is full has its connection closed instead (the client
//! reconnects; a resumable stream keeps the message for the resume), so nothing waits in
//! memory for a reader that may never come. The notifications are written by
//! `mcp/subscriptions.rs`; this file only chooses the streams.

use std::sync::Arc;

use bytes::Bytes;
use smallvec::SmallVec;

use super::state::{Frame, Stream};
use super::{StreamKind, StreamRegistry};
use crate::mcp::subscriptions::list_changed_notification;
use crate::mcp::ListChanged;
use crate::session::{Inbox, SessionId};

/// `notifications/tools/list_changed`: for a session stream when `subscription_id` is `None`,
/// else for a listen stream, naming the subscription in `_meta`.
pub fn list_changed_message(subscription_id: Option<&[u8]>) -> Bytes {
    list_changed_notification(ListChanged::Tools, subscription_id)
}

impl StreamRegistry {
    /// Pushes one list-changed message to every session of `tenant` (and `client`, when given)
    /// holding a live stream here — on its `Get` stream if live, else its `Legacy` stream, else
    /// its most recent `Post` stream still connected — and to every live `Listen` stream of
    /// that owner that asked for tool list changes. `make(None)` builds the session message,
    /// `make(Some(subscription_id))` a listen stream's. A session without a live stream gets it
    /// in the ring of its most recent retained `Post` stream, so resuming that stream replays
    /// it. Never waits: a stream whose queue is full has its connection closed (the client
    /// reconnects; a resumable stream keeps the message for the resume). Returns how many
    /// streams got it live.
    pub fn deliver_list_changed(
        &self,
        tenant: &str,
        client: Option<&str>,
        which: ListChanged,
        make: impl Fn(Option<&[u8]>) -> Bytes,
    ) -> usize {
        let mut n_delivered = 0;
        let mut session_message: Option<Bytes> = None;
        for sessions in self.inner.sessions.shards() {
            let candidates: SmallVec<[(Arc<Stream>, bool); 16]> = {
                sessions
                    .values()
                    .filter(|entry| {
                        entry
                            .any()
                            .is_some_and(|stream| stream.owner.is_within(tenant, client))
                    })
                    .filter_map(|entry| {
                        let preferred = entry.get.iter().chain(entry.legacy.iter());
                        let live = preferred.chain(entry.posts.iter().rev()).find(|stream| {
                            let mut state = stream.lock();
                            !state.ended && stream.is_live(&mut state)
                        });
                        match live {
                            Some(stream) => Some((stream.clone(), true)),
                            None => entry.posts.last().map(|post| (post.clone(), false)),
                        }
                    })
                    .collect()
            };
            for (stream, is_live) in candidates {
                let message = session_message.get_or_insert_with(|| make(None));
                if !is_live {
                    stream.keep_for_resume(&self.inner, message);
                } else if stream.emit_or_close(&self.inner, Frame::Message(message)) {
                    n_delivered += 1;
                }
            }
        }
        for shard in self.inner.streams.shards() {
            let listeners: SmallVec<[Arc<Stream>; 16]> = shard
                .values()
                .filter(|stream| {
                    matches!(&stream.kind, StreamKind::Listen { filter, .. } if filter.wants(which))
                        && stream.owner.is_within(tenant, client)
                })
                .cloned()
                .collect();
            for stream in listeners {
                if let StreamKind::Listen {
                    subscription_id, ..
                } = &stream.kind
                {
                    let message = make(Some(subscription_id));
                    if stream.emit_or_close(&self.inner, Frame::Message(&message)) {
                        n_delivered += 1;
                    }
                }
            }
        }
        n_delivered
    }
}

impl Inbox for StreamRegistry {
    /// Writes at once when the stream's queue has room. A full queue (a client that does not
    /// read) closes the connection instead, so the client reconnects: nothing waits in memory
    /// for a reader that may never come.
    fn deliver(&self, session: &SessionId, message: &[u8]) -> bool {
        let Some(writer) = self.standalone(session) else {
            return false;
        };
        writer
            .stream
            .emit_or_close(&self.inner, Frame::Message(message))
    }

    fn invalidate(&self, tenant: &str) -> usize {
        self.deliver_list_changed(tenant, None, ListChanged::Tools, list_changed_message)
    }

    fn close(&self, session: &SessionId) {
        self.close_session(session);
    }
}
