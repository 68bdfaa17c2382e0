//! The janitor: one background task per registry that sweeps expired sessions and dropped
//! streams, and writes keep-alives.
//!
//! `Body::stream` takes a bare receiver, so rather than one timer (or pump task) per stream,
//! [`StreamRegistry::keepalive_tick`] runs every `keepalive / KEEPALIVE_TICKS` and writes
//! `: keepalive` into each live stream idle for at least `keepalive`.
//! [`StreamRegistry::sweep`] drops what retention no longer keeps. The task holds the registry
//! weakly and ends once it is dropped. Must not write messages: only the keep-alive comment.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use smallvec::SmallVec;
use tokio::time::Instant;

use super::shard::shrink_if_sparse;
use super::state::{State, Stream};
use super::{Inner, StreamKind, StreamRegistry, KEEPALIVE_TICKS};
use crate::session::{SessionId, Sessions};

/// The keep-alive comment frame (static: costs no allocation).
const KEEPALIVE_FRAME: &[u8] = b": keepalive\n\n";

/// Starts the background task that sweeps expired sessions (closing their streams) and
/// dropped streams every `sweep_every`, and writes keep-alives every
/// `keepalive / KEEPALIVE_TICKS`. The task ends on its own once the registry is dropped.
pub fn spawn_janitor(
    registry: &StreamRegistry,
    sessions: Sessions,
    sweep_every: Duration,
) -> tokio::task::JoinHandle<()> {
    let weak = registry.downgrade();
    let keepalive_every =
        (registry.config().keepalive / KEEPALIVE_TICKS).max(Duration::from_millis(10));
    let sweep_every = sweep_every.max(Duration::from_millis(10));
    tokio::spawn(async move {
        let mut sweep = tokio::time::interval(sweep_every);
        let mut keepalive = tokio::time::interval(keepalive_every);
        sweep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        keepalive.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let is_sweep = tokio::select! {
                _ = sweep.tick() => true,
                _ = keepalive.tick() => false,
            };
            let Some(inner) = weak.upgrade() else { return };
            let registry = StreamRegistry { inner };
            if is_sweep {
                if let Ok(expired) = sessions.expire().await {
                    for session in &expired {
                        registry.close_session(session);
                    }
                }
                registry.sweep();
            } else {
                registry.keepalive_tick();
            }
        }
    })
}

impl StreamRegistry {
    /// Writes `: keepalive` into every live stream idle for at least `keepalive`, and notices
    /// connections that went away. Called by the janitor every `keepalive / KEEPALIVE_TICKS`.
    /// Returns how many keep-alives went out.
    pub fn keepalive_tick(&self) -> usize {
        let now = Instant::now();
        let keepalive = self.inner.config.keepalive;
        let mut n_sent = 0;
        for shard in self.inner.streams.shards() {
            let streams: SmallVec<[Arc<Stream>; 32]> = shard.values().cloned().collect();
            for stream in streams {
                let mut state = stream.lock();
                if state.closed || !stream.is_live(&mut state) {
                    continue;
                }
                if now.saturating_duration_since(state.last_frame) < keepalive {
                    continue;
                }
                let sent = state.live.as_ref().is_some_and(|live| {
                    if !live.backlog.has_room(self.inner.config.queue_bytes) {
                        return false;
                    }
                    live.backlog.add(KEEPALIVE_FRAME.len());
                    let sent = live
                        .tx
                        .try_send(Bytes::from_static(KEEPALIVE_FRAME))
                        .is_ok();
                    if !sent {
                        live.backlog.sub(KEEPALIVE_FRAME.len());
                    }
                    sent
                });
                if sent {
                    state.last_frame = now;
                    n_sent += 1;
                }
            }
        }
        n_sent
    }

    /// Drops streams whose time is up: finished `Post` and disconnected `Get` streams retained
    /// longer than `retain`, and `Listen`/`Legacy` streams whose connection is gone. Returns
    /// how many were dropped.
    pub fn sweep(&self) -> usize {
        let now = Instant::now();
        let mut dropped: Vec<(Option<SessionId>, u64)> = Vec::new();
        for mut streams in self.inner.streams.shards() {
            streams.retain(|_, stream| {
                let mut state = stream.lock();
                let keep = !state.closed && self.inner.keeps(stream, &mut state, now);
                if !keep {
                    self.inner.close_locked(stream, &mut state);
                    dropped.push((stream.session, stream.id));
                }
                keep
            });
            shrink_if_sparse(&mut streams);
        }
        for (session, stream_id) in &dropped {
            let Some(session) = session else { continue };
            let mut sessions = self.inner.session_shard(session);
            if let Some(entry) = sessions.get_mut(session) {
                entry.forget(*stream_id);
                if entry.is_empty() {
                    sessions.remove(session);
                }
            }
        }
        if !dropped.is_empty() {
            for mut sessions in self.inner.sessions.shards() {
                shrink_if_sparse(&mut sessions);
            }
        }
        dropped.len()
    }
}

impl Inner {
    /// Whether the sweep keeps `stream` at `now`.
    fn keeps(&self, stream: &Stream, state: &mut State, now: Instant) -> bool {
        if stream.is_live(state) && !state.ended {
            return true;
        }
        match stream.kind {
            StreamKind::Listen { .. } | StreamKind::Legacy => false,
            StreamKind::Get | StreamKind::Post => {
                self.is_live_post_writer(stream, state)
                    || state.idle_since.is_some_and(|since| {
                        now.saturating_duration_since(since) < self.config.retain
                    })
            }
        }
    }
}
