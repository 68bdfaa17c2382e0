//! The sharded maps the registry keeps its streams in: every stream by id, and the streams of
//! each session.
//!
//! Owns the map types, the cheap hasher for server-minted stream ids, [`SessionStreams`] (the
//! `Get`, `Legacy` and `Post` streams one session holds), the shard lookups and giving memory
//! back after a burst. Lock order: a shard before a stream's state, never the reverse.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::MutexGuard;

use smallvec::SmallVec;

use super::state::Stream;
use super::Inner;
use crate::session::{IdHashBuilder, SessionId};

/// Independently locked maps the streams are spread over.
pub(super) const SHARDS: usize = 16;

pub(super) type StreamMap = HashMap<u64, Arc<Stream>, StreamIdHashBuilder>;

/// A `BuildHasher` for maps keyed by stream id: ids are server-minted counters (nobody can
/// choose them), so a multiply-and-fold mix is enough; SipHash would cost ~10× more.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct StreamIdHashBuilder;

/// The hasher behind [`StreamIdHashBuilder`].
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct StreamIdHasher(u64);

impl std::hash::Hasher for StreamIdHasher {
    fn finish(&self) -> u64 {
        // Ids within one shard differ by multiples of the shard count: mix the high bits of
        // the product down so the low (bucket) and high (tag) bits both vary.
        let mixed = self.0.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        mixed ^ (mixed >> 32)
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only reached by keys other than `u64`; fold the bytes so it stays correct.
        for &byte in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(byte);
        }
    }

    fn write_u64(&mut self, value: u64) {
        self.0 = value;
    }
}

impl std::hash::BuildHasher for StreamIdHashBuilder {
    type Hasher = StreamIdHasher;

    fn build_hasher(&self) -> StreamIdHasher {
        StreamIdHasher(0)
    }
}

pub(super) type SessionMap = HashMap<SessionId, SessionStreams, IdHashBuilder>;

/// The streams one session holds here.
#[derive(Default)]
pub(super) struct SessionStreams {
    pub(super) get: Option<Arc<Stream>>,
    pub(super) legacy: Option<Arc<Stream>>,
    /// Oldest first.
    pub(super) posts: SmallVec<[Arc<Stream>; 2]>,
}

impl SessionStreams {
    /// Streams of this session that are open now: a live standalone stream, and POST answers
    /// still running (finished ones are only retained for resumption).
    pub(super) fn open_streams(&self) -> usize {
        let get = self.get.as_ref().is_some_and(|get| {
            let mut state = get.lock();
            !state.ended && get.is_live(&mut state)
        });
        usize::from(get) + self.posts.iter().filter(|post| !post.lock().ended).count()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.get.is_none() && self.legacy.is_none() && self.posts.is_empty()
    }

    pub(super) fn any(&self) -> Option<&Arc<Stream>> {
        self.get
            .as_ref()
            .or(self.legacy.as_ref())
            .or_else(|| self.posts.first())
    }

    pub(super) fn forget(&mut self, stream_id: u64) {
        if self.get.as_ref().is_some_and(|s| s.id == stream_id) {
            self.get = None;
        }
        if self.legacy.as_ref().is_some_and(|s| s.id == stream_id) {
            self.legacy = None;
        }
        self.posts.retain(|s| s.id != stream_id);
    }
}

impl Inner {
    pub(super) fn stream_shard(&self, stream_id: u64) -> MutexGuard<'_, StreamMap> {
        self.streams.shard(stream_id)
    }

    pub(super) fn session_shard(&self, session: &SessionId) -> MutexGuard<'_, SessionMap> {
        self.sessions.shard(session.shard64())
    }

    pub(super) fn stream(&self, stream_id: u64) -> Option<Arc<Stream>> {
        self.stream_shard(stream_id).get(&stream_id).cloned()
    }
}

/// Gives back the memory of a map that a burst left mostly empty (abandoned streams release
/// everything).
pub(super) use crate::shard::shrink_if_sparse;
