//! The live stream registry: every SSE stream this instance serves, its event ids, its ring of
//! recent frames, resumption, retention, list-changed delivery and keep-alive.
//!
//! Owns stream identity and lifetime. Event ids are `{instance}.{stream}.{seq}` (`id.rs`):
//! `instance` is a short id of this process, `stream` a per-instance counter, `seq` the position
//! from 1. Only session-bound streams (`Get`, `Post`) carry ids and keep a ring; `Listen`
//! (2026-07-28 `subscriptions/listen`) and `Legacy` (2024-11-05 `/sse`) streams are not
//! resumable and carry none. Must not implement MCP methods or know HTTP: it hands the
//! transport an `mpsc::Receiver<Bytes>` for `Body::stream` and frames with `sse::Encoder`.
//!
//! # How a frame travels
//! A writer assigns the next `seq`, encodes the frame, appends it to the ring and pushes it into
//! the live channel, all under the stream's mutex with a channel permit already reserved, so the
//! channel order is the `seq` order even with several writers (a POST's handler and a
//! list-changed push). A slow client makes the writer wait for a permit (bounded memory); a
//! gone client detaches the channel and the frames only go to the ring, so the client can
//! resume with `Last-Event-ID` (a disconnect is not a cancellation).
//!
//! # Lifetimes
//! - `Post`: ends when its writer finishes (or is dropped); then retained `retain` for
//!   resumption, and dropped by [`StreamRegistry::sweep`].
//! - `Get`: lives while connected; after the client goes it stays resumable for `retain`.
//!   At most one live `Get` per session ([`StreamError::Conflict`] for a second).
//! - `Listen` and `Legacy`: live exactly as long as their connection.
//! - [`StreamRegistry::close_session`] (DELETE, expiry) ends every stream of a session at once.
//!
//! # Keep-alive
//! `Body::stream` takes a bare receiver, so rather than one timer (or pump task) per stream,
//! [`StreamRegistry::keepalive_tick`] runs every `keepalive / KEEPALIVE_TICKS` from the janitor
//! task and writes `: keepalive` into each live stream idle for at least `keepalive` (real
//! frames reset the clock). An idle stream thus hears something every `keepalive` to
//! `keepalive × (1 + 1/KEEPALIVE_TICKS)`, at no per-stream timer cost.
//!
//! # Files
//! - `id.rs`: event ids and the instance id.
//! - `state.rs`: one stream's state, its ring, and how a frame is encoded and queued.
//! - `shard.rs`: the sharded maps of streams and of each session's streams.
//! - `writer.rs`: [`StreamWriter`] and [`Reservation`].
//! - `deliver.rs`: list_changed delivery and the backplane's [`Inbox`](crate::session::Inbox).
//! - `janitor.rs`: [`spawn_janitor`], keep-alives and the retention sweep.
//! - this file: settings, errors, kinds, and [`StreamRegistry`] (open, resume, close).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use bytes::Bytes;
use parking_lot::Mutex;
use smallvec::SmallVec;
use tokio::sync::{mpsc, Notify};
use tokio::time::Instant;

use crate::http::response::Backlog;
use crate::mcp::SubscriptionFilter;
use crate::session::{IdHashBuilder, Owner, OwnerKey, SessionId};
use crate::shard::Sharded;

mod deliver;
mod id;
mod janitor;
mod shard;
mod state;
#[cfg(test)]
mod tests;
mod writer;

pub use deliver::list_changed_message;
pub use id::{parse_event_id, EventId, ParsedEventId};
pub use janitor::spawn_janitor;
pub(crate) use writer::{Reservation, StreamWriter};

use id::{is_instance_id, random_instance_id};
use shard::{shrink_if_sparse, SessionStreams, StreamIdHashBuilder, SHARDS};
use state::{with_encoder, Live, Log, State, Stream};

/// Default time a finished `Post` stream (or a disconnected `Get` stream) stays resumable.
pub(crate) const DEFAULT_RETAIN: Duration = Duration::from_secs(60);

/// Default number of recent frames each resumable stream keeps; a client whose last event id
/// is older than the ring gets a fresh stream with nothing replayed.
pub(crate) const DEFAULT_RETAIN_EVENTS: usize = 64;

/// Default `stream_queue_messages`: frames one stream may hold queued for its connection
/// (including those reserved by requests still running, on the legacy `/sse` stream). When it
/// is full a legacy POST is refused (503 with a JSON-RPC error, nothing runs) and a
/// server-originated notification closes the connection instead (the client reconnects, and
/// resumes where it can); a POST answer's own writer waits for room.
pub(crate) const DEFAULT_STREAM_QUEUE_MESSAGES: usize = 64;

/// Default `stream_queue_bytes`: bytes one stream may hold queued for its connection (and
/// reserved), and bytes one stream's retention ring keeps. A frame is queued while the queue
/// holds less, so it overshoots by at most one frame; when it is full the same refusals as for
/// [`DEFAULT_STREAM_QUEUE_MESSAGES`] apply, and the ring drops its oldest frames.
pub const DEFAULT_STREAM_QUEUE_BYTES: usize = 4 * 1024 * 1024;

/// Default interval of the janitor's sweep (expired sessions, dropped streams).
pub(crate) const DEFAULT_SWEEP_INTERVAL: Duration = Duration::from_secs(5);

/// The keep-alive scan runs this many times per keep-alive interval.
pub(crate) const KEEPALIVE_TICKS: u32 = 3;

/// Most `Post` streams one session keeps; opening one more drops the oldest finished one, so a
/// client firing many requests cannot grow retention without bound.
pub(crate) const MAX_POSTS_PER_SESSION: usize = 16;

/// Default `max_streams_per_session`.
pub(crate) const DEFAULT_MAX_STREAMS_PER_SESSION: usize = 8;

/// Length of a generated instance id (random base64url characters).
pub(crate) const INSTANCE_ID_LEN: usize = 6;

/// Longest configurable instance id (`[A-Za-z0-9_-]`); anything else is refused at start.
pub(crate) const MAX_INSTANCE_LEN: usize = 16;

// === config and errors ===

/// Stream registry settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamConfig {
    /// This process's id in event ids; `None` → [`INSTANCE_ID_LEN`] random characters.
    pub instance: Option<String>,
    /// `retain_secs`: how long a finished `Post` / disconnected `Get` stream stays resumable.
    pub retain: Duration,
    /// `retain_events`: frames kept per resumable stream.
    pub retain_events: usize,
    /// `keepalive_secs`: idle time after which a live stream gets `: keepalive`.
    pub keepalive: Duration,
    /// `stream_queue_messages`: frames queued (or reserved) per stream connection; also the
    /// live channel's capacity ([`DEFAULT_STREAM_QUEUE_MESSAGES`]).
    pub queue_messages: usize,
    /// `stream_queue_bytes`: bytes queued (or reserved) per stream connection, and bytes kept
    /// per retention ring ([`DEFAULT_STREAM_QUEUE_BYTES`]).
    pub queue_bytes: usize,
    /// `max_streams_per_session`: open streams (a live GET plus POST answers still running) one
    /// session may hold; one more fails with [`StreamError::TooMany`] (HTTP 429).
    pub max_per_session: usize,
}

impl Default for StreamConfig {
    fn default() -> Self {
        Self {
            instance: None,
            retain: DEFAULT_RETAIN,
            retain_events: DEFAULT_RETAIN_EVENTS,
            keepalive: super::DEFAULT_SSE_KEEPALIVE,
            queue_messages: DEFAULT_STREAM_QUEUE_MESSAGES,
            queue_bytes: DEFAULT_STREAM_QUEUE_BYTES,
            max_per_session: DEFAULT_MAX_STREAMS_PER_SESSION,
        }
    }
}

/// Why a stream operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StreamError {
    /// The session already has a live standalone (`Get`) stream: HTTP 409.
    #[error("the session already has a live stream")]
    Conflict,
    /// The stream has ended (finished, its connection gone for a non-resumable kind, or its
    /// session closed); nothing more can be written to it.
    #[error("the stream has ended")]
    Closed,
    /// `Get`, `Post` and `Legacy` need a session; `Listen` must have none.
    #[error("this kind of stream {0}")]
    Session(&'static str),
    /// The stream carries no event ids, so it has no priming or polling frames.
    #[error("the stream is not resumable")]
    NotResumable,
    /// The session already holds `max_streams_per_session` open streams: HTTP 429.
    #[error("the session holds {max} open streams already")]
    TooMany {
        /// The limit in force.
        max: usize,
    },
    /// The stream's outbound queue is full (`stream_queue_messages` or `stream_queue_bytes`):
    /// HTTP 503 for the request that would have queued, nothing runs.
    #[error("the stream's outbound queue is full")]
    Full,
    /// The configured instance id is not 1–16 characters of `[A-Za-z0-9_-]`.
    #[error("invalid instance id {0:?}: use 1-16 characters of [A-Za-z0-9_-]")]
    InvalidInstance(String),
}

/// What a stream is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamKind {
    /// The standalone stream of a session (GET). Resumable; at most one live per session.
    Get,
    /// The SSE answer of one POST request. Resumable; retained after it finishes.
    Post,
    /// A 2026-07-28 `subscriptions/listen` stream: no session, keyed by owner.
    Listen {
        /// The listen request's JSON-RPC id, raw JSON (`9` or `"abc"`): every message on the
        /// stream names it in `_meta`.
        subscription_id: Bytes,
        /// The list-changed notifications the subscription asked for (and this server sends).
        filter: SubscriptionFilter,
    },
    /// The 2024-11-05 `/sse` stream: `event: message` frames without ids.
    Legacy,
}

impl StreamKind {
    /// True for kinds whose frames carry event ids and are kept for resumption.
    pub(crate) fn is_resumable(&self) -> bool {
        matches!(self, Self::Get | Self::Post)
    }
}

// === the registry ===

/// The registry of live and retained streams of this instance. Cheap to clone.
#[derive(Clone)]
pub struct StreamRegistry {
    inner: Arc<Inner>,
}

struct Inner {
    instance: Box<str>,
    config: StreamConfig,
    next_stream: AtomicU64,
    /// Every registered stream by id (resumption, sweeping, keep-alive, listen lookup).
    streams: Sharded<u64, Arc<Stream>, StreamIdHashBuilder>,
    /// The streams of each session (conflicts, delivery, close).
    sessions: Sharded<SessionId, SessionStreams, IdHashBuilder>,
}

/// A new stream: its writer and the receiver to hand to `Body::stream`.
#[derive(Debug)]
pub struct Opened {
    /// Writes to the stream.
    pub writer: StreamWriter,
    /// The connection side.
    pub rx: mpsc::Receiver<Bytes>,
    /// The bytes queued in `rx`: hand it to `Body::counted` with `rx`.
    pub backlog: Arc<Backlog>,
}

/// The outcome of [`StreamRegistry::resume`].
#[derive(Debug)]
pub enum Resumed {
    /// The stream was found: `rx` yields the frames that followed the last event id, then the
    /// stream's live frames if it is still running (else it ends after the replay).
    Replay {
        /// The connection side.
        rx: mpsc::Receiver<Bytes>,
        /// How many frames were replayed.
        replayed: usize,
        /// The resumed stream's id on this instance.
        stream: u64,
        /// The bytes queued in `rx`: hand it to `Body::counted` with `rx`.
        backlog: Arc<Backlog>,
    },
    /// Nothing to resume (another instance, unknown or foreign stream, aged out, malformed id):
    /// the caller opens a new stream; nothing is replayed.
    Fresh,
}

impl std::fmt::Debug for StreamRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamRegistry")
            .field("instance", &self.inner.instance)
            .finish_non_exhaustive()
    }
}

impl StreamRegistry {
    /// A registry; fails only on a malformed configured instance id.
    pub fn new(config: StreamConfig) -> Result<Self, StreamError> {
        let instance = match &config.instance {
            Some(instance) if is_instance_id(instance.as_bytes()) => instance.clone(),
            Some(instance) => return Err(StreamError::InvalidInstance(instance.clone())),
            None => random_instance_id(),
        };
        Ok(Self {
            inner: Arc::new(Inner {
                instance: instance.into_boxed_str(),
                config,
                next_stream: AtomicU64::new(1),
                streams: Sharded::with_hasher(SHARDS, StreamIdHashBuilder),
                sessions: Sharded::with_hasher(SHARDS, IdHashBuilder),
            }),
        })
    }

    /// This instance's id (the first part of every event id).
    pub fn instance(&self) -> &str {
        &self.inner.instance
    }

    /// The settings in force.
    pub fn config(&self) -> &StreamConfig {
        &self.inner.config
    }

    /// Registers a stream with a live connection.
    ///
    /// `session` must be `Some` for `Get`, `Post` and `Legacy`, and `None` for `Listen`. A
    /// second `Get` while the session's first is still connected fails with
    /// [`StreamError::Conflict`].
    pub fn open(
        &self,
        session: Option<SessionId>,
        owner: Owner<'_>,
        kind: StreamKind,
    ) -> Result<Opened, StreamError> {
        let (live, rx, backlog) = Live::channel(self.inner.config.queue_messages);
        let writer = self.register(session, owner, kind, Some(live))?;
        Ok(Opened {
            writer,
            rx,
            backlog,
        })
    }

    /// Registers a `Post` stream with no connection: for a reply whose frames are all known
    /// at once and go out inline (`Body::frames`); [`StreamWriter::push`] and
    /// [`StreamWriter::push_priming`] return each frame and retain it for resumption.
    pub fn open_inline(
        &self,
        session: SessionId,
        owner: Owner<'_>,
    ) -> Result<StreamWriter, StreamError> {
        self.register(Some(session), owner, StreamKind::Post, None)
    }

    /// Registers a complete `Post` answer in one step: the optional priming event and the
    /// message get their ids, the message is retained for resumption, and the stream is ended
    /// at once — the same state as [`StreamRegistry::open_inline`] followed by
    /// [`StreamWriter::push_priming`]`(None)`, [`StreamWriter::push`] and
    /// [`StreamWriter::finish`], without the writer's per-frame locking. Returns the priming
    /// frame (when asked for) and the message frame.
    pub(crate) fn inline_answer(
        &self,
        session: SessionId,
        owner: Owner<'_>,
        priming: bool,
        message: &[u8],
    ) -> (Option<Bytes>, Bytes) {
        let now = Instant::now();
        let id = self.inner.next_stream.fetch_add(1, Ordering::Relaxed);
        let instance = &self.inner.instance;
        let mut log = Log::default();
        let primed = priming.then(|| {
            log.seq += 1;
            let event = EventId::new(instance, id, log.seq);
            with_encoder(|encoder| encoder.priming(event.as_bytes(), None))
        });
        log.seq += 1;
        let seq = log.seq;
        let event = EventId::new(instance, id, seq);
        let frame = with_encoder(|encoder| encoder.message(Some(event.as_bytes()), message));
        self.inner.retain(&mut log, seq, frame.clone());
        let stream = Arc::new(Stream {
            id,
            session: Some(session),
            owner: OwnerKey::new(owner),
            kind: StreamKind::Post,
            state: Mutex::new(State {
                log,
                live: None,
                attached: 0,
                last_frame: now,
                idle_since: Some(now),
                ended: true,
                closed: false,
            }),
            changed: Notify::new(),
        });
        // A `Post` never conflicts.
        let _ = self.attach(session, &stream);
        self.inner.stream_shard(id).insert(id, stream);
        (primed, frame)
    }

    /// A handle on the session's standalone stream (`Get`, else `Legacy`) while it is live:
    /// how the transport sends server-to-client messages (the legacy transport's responses).
    /// Dropping the handle does not end the stream.
    pub fn standalone(&self, session: &SessionId) -> Option<StreamWriter> {
        let stream = {
            let sessions = self.inner.session_shard(session);
            let streams = sessions.get(session)?;
            let found = [&streams.get, &streams.legacy]
                .into_iter()
                .flatten()
                .find(|stream| stream.is_live(&mut stream.lock()))
                .cloned();
            found?
        };
        Some(StreamWriter {
            stream,
            registry: self.inner.clone(),
            finish_on_drop: false,
        })
    }

    /// A handle on the session's legacy `/sse` stream while it is live: only such a session
    /// takes messages on `POST …/messages`.
    pub fn legacy(&self, session: &SessionId) -> Option<StreamWriter> {
        let stream = {
            let sessions = self.inner.session_shard(session);
            let stream = sessions.get(session)?.legacy.as_ref()?;
            if !stream.is_live(&mut stream.lock()) {
                return None;
            }
            stream.clone()
        };
        Some(StreamWriter {
            stream,
            registry: self.inner.clone(),
            finish_on_drop: false,
        })
    }

    /// Reserves room for one message on the session's live legacy `/sse` stream (where
    /// `POST …/messages` answers go): one frame of the queue and `bytes` of its byte budget
    /// (what the caller holds until the message is ready), so a request whose answer goes there is refused *before* it
    /// runs when the queue is full ([`StreamError::Full`]) instead of waiting in memory for a
    /// reader. [`StreamError::Closed`] when no live legacy stream is held here.
    pub(crate) fn reserve(
        &self,
        session: &SessionId,
        bytes: usize,
    ) -> Result<Reservation, StreamError> {
        let stream = self
            .legacy(session)
            .map(|writer| Arc::clone(&writer.stream))
            .ok_or(StreamError::Closed)?;
        let state = stream.lock();
        let Some(live) = state.live.as_ref() else {
            return Err(StreamError::Closed);
        };
        if !live.backlog.has_room(self.inner.config.queue_bytes) {
            return Err(StreamError::Full);
        }
        let permit = live
            .tx
            .clone()
            .try_reserve_owned()
            .map_err(|err| match err {
                mpsc::error::TrySendError::Full(_) => StreamError::Full,
                mpsc::error::TrySendError::Closed(_) => StreamError::Closed,
            })?;
        live.backlog.add(bytes);
        let (backlog, attached) = (Arc::clone(&live.backlog), state.attached);
        drop(state);
        Ok(Reservation {
            stream,
            registry: Arc::clone(&self.inner),
            permit: Some(permit),
            backlog,
            attached,
            reserved: bytes,
        })
    }

    /// Resumes the stream named by `last_event_id` for `session`/`owner`.
    ///
    /// Replays only frames after that id on that same stream, and only when the stream belongs
    /// to this session and owner; reattaches the connection when the stream is still running.
    /// Anything else is [`Resumed::Fresh`]. A `Get` stream cannot be resumed while the
    /// session's current `Get` stream is connected ([`StreamError::Conflict`]).
    pub fn resume(
        &self,
        last_event_id: &[u8],
        session: &SessionId,
        owner: Owner<'_>,
    ) -> Result<Resumed, StreamError> {
        let Some(parsed) = parse_event_id(last_event_id) else {
            return Ok(Resumed::Fresh);
        };
        if parsed.instance != self.inner.instance.as_bytes() {
            return Ok(Resumed::Fresh);
        }
        let Some(stream) = self.inner.stream(parsed.stream) else {
            return Ok(Resumed::Fresh);
        };
        if stream.session != Some(*session)
            || !stream.owner.is(owner)
            || !stream.kind.is_resumable()
        {
            return Ok(Resumed::Fresh);
        }
        // Lock order: session shard, then stream state.
        let mut sessions = self.inner.session_shard(session);
        let Some(entry) = sessions.get_mut(session) else {
            return Ok(Resumed::Fresh);
        };
        if stream.kind == StreamKind::Get {
            if let Some(current) = entry.get.as_ref().filter(|current| current.id != stream.id) {
                if current.is_live(&mut current.lock()) {
                    return Err(StreamError::Conflict);
                }
            }
        }
        let now = Instant::now();
        let mut state = stream.lock();
        let retention_over = state
            .idle_since
            .is_some_and(|since| now.saturating_duration_since(since) >= self.inner.config.retain);
        let log = &state.log;
        if state.closed
            || parsed.seq > log.seq
            || parsed.seq < log.evicted_through
            || (retention_over && !self.inner.is_live_post_writer(&stream, &state))
        {
            return Ok(Resumed::Fresh);
        }
        let replay: SmallVec<[Bytes; 8]> = log
            .ring
            .iter()
            .filter(|(seq, _)| *seq > parsed.seq)
            .map(|(_, frame)| frame.clone())
            .collect();
        let replayed = replay.len();
        let (live, rx, backlog) = Live::channel(replayed + self.inner.config.queue_messages);
        for frame in replay {
            // The capacity covers every replayed frame; their bytes are the ring's, bounded.
            live.backlog.add(frame.len());
            let _ = live.tx.try_send(frame);
        }
        // A previous connection of this stream is replaced (its body ends).
        stream.detach(&mut state);
        if !state.ended {
            state.live = Some(live);
            state.attached += 1;
            state.idle_since = None;
            state.last_frame = now;
            if stream.kind == StreamKind::Get {
                entry.get = Some(stream.clone());
            }
        }
        Ok(Resumed::Replay {
            rx,
            replayed,
            stream: stream.id,
            backlog,
        })
    }

    /// Ends every stream of `session` (DELETE, expiry): connections close, nothing stays
    /// resumable, writers get [`StreamError::Closed`]. Returns how many streams ended.
    pub fn close_session(&self, session: &SessionId) -> usize {
        let removed = {
            let mut sessions = self.inner.session_shard(session);
            let removed = sessions.remove(session);
            shrink_if_sparse(&mut sessions);
            removed
        };
        let Some(entry) = removed else {
            return 0;
        };
        let all = entry.get.into_iter().chain(entry.legacy).chain(entry.posts);
        let mut n_closed = 0;
        for stream in all {
            self.inner.close(&stream);
            let mut streams = self.inner.stream_shard(stream.id);
            streams.remove(&stream.id);
            shrink_if_sparse(&mut streams);
            n_closed += 1;
        }
        n_closed
    }

    /// Streams registered (live or retained).
    pub fn len(&self) -> usize {
        self.inner.streams.len()
    }

    /// Streams with a live connection, per tenant (for the `sluice_active_streams` gauge).
    pub(crate) fn live_by_tenant(&self) -> Vec<(String, i64)> {
        let mut counts: HashMap<String, i64> = HashMap::new();
        for shard in self.inner.streams.shards() {
            for stream in shard.values() {
                let state = stream.lock();
                if state.live.is_some() && !state.closed {
                    *counts
                        .entry(stream.owner.get().tenant.to_owned())
                        .or_default() += 1;
                }
            }
        }
        counts.into_iter().collect()
    }

    /// True when no stream is registered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every session holding at least one stream here (live or retained for resumption), with
    /// its owner: what a shared backplane registers this instance as the holder of.
    pub(crate) fn held_sessions(&self) -> Vec<(SessionId, OwnerKey)> {
        let mut held = Vec::new();
        for sessions in self.inner.sessions.shards() {
            held.extend(sessions.iter().filter_map(|(session, entry)| {
                entry.any().map(|stream| (*session, stream.owner.clone()))
            }));
        }
        held
    }

    // === internals ===

    fn register(
        &self,
        session: Option<SessionId>,
        owner: Owner<'_>,
        kind: StreamKind,
        live: Option<Live>,
    ) -> Result<StreamWriter, StreamError> {
        match (&kind, session) {
            (StreamKind::Listen { .. }, Some(_)) => {
                return Err(StreamError::Session("must not have a session"))
            }
            (StreamKind::Get | StreamKind::Post | StreamKind::Legacy, None) => {
                return Err(StreamError::Session("needs a session"))
            }
            _ => {}
        }
        let now = Instant::now();
        let id = self.inner.next_stream.fetch_add(1, Ordering::Relaxed);
        let finish_on_drop = kind == StreamKind::Post;
        let is_attached = live.is_some();
        let stream = Arc::new(Stream {
            id,
            session,
            owner: OwnerKey::new(owner),
            kind,
            state: Mutex::new(State {
                log: Log::default(),
                live,
                attached: u64::from(is_attached),
                last_frame: now,
                idle_since: if is_attached { None } else { Some(now) },
                ended: false,
                closed: false,
            }),
            changed: Notify::new(),
        });
        if let Some(session) = session {
            self.attach(session, &stream)?;
        }
        self.inner.stream_shard(id).insert(id, stream.clone());
        Ok(StreamWriter {
            stream,
            registry: self.inner.clone(),
            finish_on_drop,
        })
    }

    /// Records `stream` among its session's streams, evicting the oldest `Post` streams beyond
    /// [`MAX_POSTS_PER_SESSION`]. A `Get` while the session's current one is live is a
    /// [`StreamError::Conflict`] (checked under the same lock); other kinds never fail.
    fn attach(&self, session: SessionId, stream: &Arc<Stream>) -> Result<(), StreamError> {
        let mut evicted: SmallVec<[Arc<Stream>; 2]> = SmallVec::new();
        {
            let mut sessions = self.inner.session_shard(&session);
            let entry = sessions.entry(session).or_default();
            if matches!(stream.kind, StreamKind::Get | StreamKind::Post) {
                let max = self.inner.config.max_per_session;
                if entry.open_streams() >= max {
                    return Err(StreamError::TooMany { max });
                }
            }
            match stream.kind {
                StreamKind::Get => {
                    if let Some(current) = &entry.get {
                        let mut state = current.lock();
                        if !state.ended && current.is_live(&mut state) {
                            return Err(StreamError::Conflict);
                        }
                    }
                    // The previous one stays resumable (in `streams`) until swept.
                    entry.get = Some(stream.clone());
                }
                StreamKind::Legacy => entry.legacy = Some(stream.clone()),
                StreamKind::Post => {
                    while entry.posts.len() >= MAX_POSTS_PER_SESSION {
                        let oldest_finished = entry.posts.iter().position(|post| post.lock().ended);
                        // All still running: the oldest goes anyway (it keeps writing to its
                        // connection, but is no longer resumable).
                        let index = oldest_finished.unwrap_or(0);
                        evicted.push(entry.posts.remove(index));
                    }
                    entry.posts.push(stream.clone());
                }
                StreamKind::Listen { .. } => {}
            }
        }
        for old in evicted {
            let mut state = old.lock();
            if state.ended {
                self.inner.close_locked(&old, &mut state);
            }
            drop(state);
            self.inner.stream_shard(old.id).remove(&old.id);
        }
        Ok(())
    }

    /// A weak handle for background tasks (they stop once the registry is gone).
    fn downgrade(&self) -> Weak<Inner> {
        Arc::downgrade(&self.inner)
    }
}
