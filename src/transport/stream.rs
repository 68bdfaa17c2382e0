//! The live stream registry: every SSE stream this instance serves, its event ids, its ring of
//! recent frames, resumption, retention, list-changed delivery and keep-alive.
//!
//! Owns stream identity and lifetime. Event ids are `{instance}.{stream}.{seq}` (DESIGN.md §4):
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

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use bytes::Bytes;
use smallvec::SmallVec;
use tokio::sync::{mpsc, Notify};
use tokio::time::Instant;

use crate::http::response::Backlog;

use crate::mcp::{ListChanged, SubscriptionFilter};
use crate::session::{IdHashBuilder, Inbox, Owner, OwnerKey, SessionId, Sessions};
use crate::sse::Encoder;

/// Default time a finished `Post` stream (or a disconnected `Get` stream) stays resumable.
pub const DEFAULT_RETAIN: Duration = Duration::from_secs(60);

/// Default number of recent frames each resumable stream keeps; a client whose last event id
/// is older than the ring gets a fresh stream with nothing replayed.
pub const DEFAULT_RETAIN_EVENTS: usize = 64;

/// Default `stream_queue_messages`: frames one stream may hold queued for its connection
/// (including those reserved by requests still running, on the legacy `/sse` stream). When it
/// is full a legacy POST is refused (503 with a JSON-RPC error, nothing runs) and a
/// server-originated notification closes the connection instead (the client reconnects, and
/// resumes where it can); a POST answer's own writer waits for room.
pub const DEFAULT_STREAM_QUEUE_MESSAGES: usize = 64;

/// Default `stream_queue_bytes`: bytes one stream may hold queued for its connection (and
/// reserved), and bytes one stream's retention ring keeps. A frame is queued while the queue
/// holds less, so it overshoots by at most one frame; when it is full the same refusals as for
/// [`DEFAULT_STREAM_QUEUE_MESSAGES`] apply, and the ring drops its oldest frames.
pub const DEFAULT_STREAM_QUEUE_BYTES: usize = 4 * 1024 * 1024;

/// Default interval of the janitor's sweep (expired sessions, dropped streams).
pub const DEFAULT_SWEEP_INTERVAL: Duration = Duration::from_secs(5);

/// The keep-alive scan runs this many times per keep-alive interval.
pub const KEEPALIVE_TICKS: u32 = 3;

/// Most `Post` streams one session keeps; opening one more drops the oldest finished one, so a
/// client firing many requests cannot grow retention without bound.
pub const MAX_POSTS_PER_SESSION: usize = 16;

/// Default `max_streams_per_session`.
pub const DEFAULT_MAX_STREAMS_PER_SESSION: usize = 8;

/// Length of a generated instance id (random base64url characters).
pub const INSTANCE_ID_LEN: usize = 6;

/// Longest configurable instance id (`[A-Za-z0-9_-]`); anything else is refused at start.
pub const MAX_INSTANCE_LEN: usize = 16;

/// Independently locked maps the streams are spread over.
const SHARDS: usize = 16;

/// The keep-alive comment frame (static: costs no allocation).
const KEEPALIVE_FRAME: &[u8] = b": keepalive\n\n";

/// Longest event id: instance, two dots, two `u64`s.
const MAX_EVENT_ID: usize = MAX_INSTANCE_LEN + 2 + 2 * 20;

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
    pub fn is_resumable(&self) -> bool {
        matches!(self, Self::Get | Self::Post)
    }
}

// === event ids ===

/// An event id, formatted on the stack.
#[derive(Clone, Copy)]
pub struct EventId {
    bytes: [u8; MAX_EVENT_ID],
    len: u8,
}

impl EventId {
    /// `{instance}.{stream}.{seq}`.
    pub fn new(instance: &str, stream: u64, seq: u64) -> Self {
        let mut id = Self {
            bytes: [0; MAX_EVENT_ID],
            len: 0,
        };
        id.push(
            instance
                .as_bytes()
                .get(..MAX_INSTANCE_LEN)
                .unwrap_or(instance.as_bytes()),
        );
        id.push(b".");
        id.push_u64(stream);
        id.push(b".");
        id.push_u64(seq);
        id
    }

    /// The id's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        self.bytes.get(..usize::from(self.len)).unwrap_or_default()
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        std::str::from_utf8(self.as_bytes()).unwrap_or_default()
    }

    fn push(&mut self, part: &[u8]) {
        let start = usize::from(self.len);
        if let Some(slot) = self.bytes.get_mut(start..start + part.len()) {
            slot.copy_from_slice(part);
            self.len += part.len() as u8;
        }
    }

    fn push_u64(&mut self, value: u64) {
        let mut digits = [0u8; 20];
        let mut at = digits.len();
        let mut rest = value;
        loop {
            at -= 1;
            if let Some(digit) = digits.get_mut(at) {
                *digit = b'0' + (rest % 10) as u8;
            }
            rest /= 10;
            if rest == 0 {
                break;
            }
        }
        self.push(digits.get(at..).unwrap_or_default());
    }
}

impl std::fmt::Debug for EventId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The parts of a well-formed event id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParsedEventId<'a> {
    /// The instance that issued it.
    pub instance: &'a [u8],
    /// The stream on that instance.
    pub stream: u64,
    /// The position on that stream.
    pub seq: u64,
}

/// Parses `{instance}.{stream}.{seq}`; `None` for anything else (a malformed `Last-Event-ID`
/// simply gets a fresh stream). Numbers are canonical decimal (no sign, no leading zero).
pub fn parse_event_id(text: &[u8]) -> Option<ParsedEventId<'_>> {
    let mut parts = text.split(|&byte| byte == b'.');
    let instance = parts.next()?;
    let stream = parse_u64(parts.next()?)?;
    let seq = parse_u64(parts.next()?)?;
    if parts.next().is_some() || !is_instance_id(instance) {
        return None;
    }
    Some(ParsedEventId {
        instance,
        stream,
        seq,
    })
}

fn parse_u64(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() || (digits.len() > 1 && digits.first() == Some(&b'0')) {
        return None;
    }
    digits.iter().try_fold(0u64, |value, &byte| {
        let digit = byte.checked_sub(b'0').filter(|digit| *digit <= 9)?;
        value.checked_mul(10)?.checked_add(u64::from(digit))
    })
}

fn is_instance_id(text: &[u8]) -> bool {
    (1..=MAX_INSTANCE_LEN).contains(&text.len())
        && text
            .iter()
            .all(|byte| byte.is_ascii_alphanumeric() || *byte == b'_' || *byte == b'-')
}

fn random_instance_id() -> String {
    use base64::Engine as _;
    use rand::RngCore as _;
    let mut bytes = [0u8; 6];
    rand::rng().fill_bytes(&mut bytes);
    let mut text = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
    text.truncate(INSTANCE_ID_LEN);
    text
}

// === streams ===

/// One stream's shared state.
struct Stream {
    id: u64,
    session: Option<SessionId>,
    owner: OwnerKey,
    kind: StreamKind,
    state: Mutex<State>,
    /// Woken whenever the live channel is detached, replaced or dropped (for `closed()`).
    changed: Notify,
}

struct State {
    log: Log,
    /// The attached connection, if any.
    live: Option<Live>,
    /// Bumped whenever a connection is attached: a reservation made on one connection is not
    /// sent into its successor's channel.
    attached: u64,
    /// When the last frame (keep-alives included) went to the connection.
    last_frame: Instant,
    /// When the stream stopped being live (detached or finished): the retention clock.
    idle_since: Option<Instant>,
    /// The writer finished: no more frames; resumption still replays.
    ended: bool,
    /// Removed (its session closed, or swept): nothing more, no resumption.
    closed: bool,
}

/// An attached connection: its channel and the byte count of what waits in it.
struct Live {
    tx: mpsc::Sender<Bytes>,
    /// Bytes queued in `tx` (and reserved for it); the connection's body subtracts what it takes.
    backlog: Arc<Backlog>,
}

impl Live {
    /// A connection with `capacity` frames of room, and its receiving side.
    fn channel(capacity: usize) -> (Self, mpsc::Receiver<Bytes>, Arc<Backlog>) {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        let backlog = Arc::new(Backlog::default());
        let live = Self {
            tx,
            backlog: Arc::clone(&backlog),
        };
        (live, rx, backlog)
    }

    /// Queues `bytes` through a permit of this channel, counting them.
    fn queue(&self, permit: mpsc::Permit<'_, Bytes>, bytes: Bytes) {
        self.backlog.add(bytes.len());
        permit.send(bytes);
    }
}

/// Why a frame did not reach the connection without waiting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Emitted {
    /// Queued for the connection.
    Sent,
    /// The queue is full (frames or bytes); nothing was queued.
    Full,
    /// No connection (or it went away, or the stream ended).
    Gone,
}

/// Sequence numbers and the ring of recent frames (resumable kinds only).
#[derive(Default)]
struct Log {
    /// The last `seq` assigned (0: none yet).
    seq: u64,
    /// Recent message frames with their `seq`, oldest first; allocated on first use.
    ring: VecDeque<(u64, Bytes)>,
    /// The highest `seq` dropped from the ring: a resume from before it has lost frames.
    evicted_through: u64,
    /// Bytes of the frames in `ring` (bounded by `stream_queue_bytes`).
    ring_bytes: usize,
}

/// What a frame carries.
#[derive(Clone, Copy)]
enum Frame<'a> {
    /// `event: message` with the next id (resumable kinds), retained.
    Message(&'a [u8]),
    /// `id:` (next seq) + empty `data:`, optional `retry:`; not retained.
    Priming(Option<u64>),
    /// `retry:` + the current id + empty `data:`: announces a polling close; not retained.
    Retry(u64),
    /// A named event without id (`event: endpoint`); not retained.
    Named(&'a [u8], &'a [u8]),
}

thread_local! {
    /// One encoder per thread: its pooled buffer serves every stream the thread writes.
    static ENCODER: RefCell<Encoder> = RefCell::new(Encoder::new());
}

fn with_encoder(write: impl FnOnce(&mut Encoder) -> Bytes) -> Bytes {
    let mut write = Some(write);
    let encoded = ENCODER
        .try_with(|encoder| {
            let mut encoder = encoder.try_borrow_mut().ok()?;
            write.take().map(|write| write(&mut encoder))
        })
        .ok()
        .flatten();
    match (encoded, write) {
        (Some(bytes), _) => bytes,
        // Thread teardown or re-entrancy: a one-off encoder.
        (None, Some(write)) => write(&mut Encoder::new()),
        (None, None) => Bytes::new(),
    }
}

impl Stream {
    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// Encodes `frame`, assigning its id and retaining it as its kind requires. `None` when the
    /// frame does not apply to this kind (priming or retry on a stream without ids).
    fn encode(&self, log: &mut Log, registry: &Inner, frame: Frame<'_>) -> Option<Bytes> {
        let resumable = self.kind.is_resumable();
        let bytes = match frame {
            Frame::Message(data) if resumable => {
                log.seq += 1;
                let seq = log.seq;
                let id = EventId::new(&registry.instance, self.id, seq);
                let bytes = with_encoder(|encoder| encoder.message(Some(id.as_bytes()), data));
                registry.retain(log, seq, bytes.clone());
                bytes
            }
            Frame::Message(data) => with_encoder(|encoder| encoder.message(None, data)),
            Frame::Priming(retry_ms) if resumable => {
                log.seq += 1;
                let id = EventId::new(&registry.instance, self.id, log.seq);
                with_encoder(|encoder| encoder.priming(id.as_bytes(), retry_ms))
            }
            Frame::Retry(retry_ms) if resumable && log.seq > 0 => {
                let id = EventId::new(&registry.instance, self.id, log.seq);
                with_encoder(|encoder| encoder.priming(id.as_bytes(), Some(retry_ms)))
            }
            Frame::Priming(_) | Frame::Retry(_) => return None,
            Frame::Named(event, data) => with_encoder(|encoder| encoder.named(event, None, data)),
        };
        Some(bytes)
    }

    /// Writes `frame` without waiting into the live channel, when it has room in frames and in
    /// bytes ([`Emitted::Sent`]). Nothing is written otherwise: [`Emitted::Full`] when the queue
    /// is full, [`Emitted::Gone`] when no open connection is attached.
    fn try_emit(&self, registry: &Inner, frame: Frame<'_>) -> Emitted {
        let mut state = self.lock();
        if state.closed || state.ended {
            return Emitted::Gone;
        }
        let emitted = {
            let State { log, live, .. } = &mut *state;
            let Some(live) = live.as_ref() else {
                return Emitted::Gone;
            };
            match live.tx.try_reserve() {
                Ok(_) if !live.backlog.has_room(registry.config.queue_bytes) => Emitted::Full,
                Ok(permit) => {
                    if let Some(bytes) = self.encode(log, registry, frame) {
                        live.queue(permit, bytes);
                    }
                    Emitted::Sent
                }
                Err(mpsc::error::TrySendError::Full(())) => Emitted::Full,
                Err(mpsc::error::TrySendError::Closed(())) => Emitted::Gone,
            }
        };
        match emitted {
            Emitted::Sent => state.last_frame = Instant::now(),
            Emitted::Gone => self.detach(&mut state),
            Emitted::Full => {}
        }
        emitted
    }

    /// Writes a server-originated message without waiting; when the connection's queue is full
    /// the connection is closed instead (its body ends after what is queued), so the client
    /// reconnects: on a resumable stream the message is kept in the ring first, so resuming
    /// from the last event the client saw replays it. Returns true when it was queued.
    fn emit_or_close(&self, registry: &Inner, frame: Frame<'_>) -> bool {
        match self.try_emit(registry, frame) {
            Emitted::Sent => true,
            Emitted::Gone => false,
            Emitted::Full => {
                let mut state = self.lock();
                if self.kind.is_resumable() && !state.closed && !state.ended {
                    self.encode(&mut state.log, registry, frame);
                }
                tracing::debug!(
                    stream = self.id,
                    "stream queue full: connection closed so the client reconnects"
                );
                self.detach(&mut state);
                false
            }
        }
    }

    /// Appends a message to the ring of a resumable stream that is not closed (finished ones
    /// included: a `Post` stream retained after its response), for a later resume to replay.
    fn keep_for_resume(&self, registry: &Inner, message: &[u8]) {
        let mut state = self.lock();
        if self.kind.is_resumable() && !state.closed {
            self.encode(&mut state.log, registry, Frame::Message(message));
        }
    }

    /// Drops the live channel (the connection's body ends once it drained what is queued).
    fn detach(&self, state: &mut State) {
        if state.live.take().is_some() {
            state.idle_since = Some(Instant::now());
            self.changed.notify_waiters();
        }
    }

    /// True when a connection is attached and still open.
    fn is_live(&self, state: &mut State) -> bool {
        match &state.live {
            Some(live) if !live.tx.is_closed() => true,
            Some(_) => {
                self.detach(state);
                false
            }
            None => false,
        }
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
    streams: Box<[Mutex<StreamMap>]>,
    /// The streams of each session (conflicts, delivery, close).
    sessions: Box<[Mutex<SessionMap>]>,
}

type StreamMap = HashMap<u64, Arc<Stream>, StreamIdHashBuilder>;

/// A `BuildHasher` for maps keyed by stream id: ids are server-minted counters (nobody can
/// choose them), so a multiply-and-fold mix is enough; SipHash would cost ~10× more.
#[derive(Clone, Copy, Debug, Default)]
struct StreamIdHashBuilder;

/// The hasher behind [`StreamIdHashBuilder`].
#[derive(Clone, Copy, Debug, Default)]
struct StreamIdHasher(u64);

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
type SessionMap = HashMap<SessionId, SessionStreams, IdHashBuilder>;

/// The streams one session holds here.
#[derive(Default)]
struct SessionStreams {
    get: Option<Arc<Stream>>,
    legacy: Option<Arc<Stream>>,
    /// Oldest first.
    posts: SmallVec<[Arc<Stream>; 2]>,
}

impl SessionStreams {
    /// Streams of this session that are open now: a live standalone stream, and POST answers
    /// still running (finished ones are only retained for resumption).
    fn open_streams(&self) -> usize {
        let get = self.get.as_ref().is_some_and(|get| {
            let mut state = get.lock();
            !state.ended && get.is_live(&mut state)
        });
        usize::from(get) + self.posts.iter().filter(|post| !post.lock().ended).count()
    }

    fn is_empty(&self) -> bool {
        self.get.is_none() && self.legacy.is_none() && self.posts.is_empty()
    }

    fn any(&self) -> Option<&Arc<Stream>> {
        self.get
            .as_ref()
            .or(self.legacy.as_ref())
            .or_else(|| self.posts.first())
    }

    fn forget(&mut self, stream_id: u64) {
        if self.get.as_ref().is_some_and(|s| s.id == stream_id) {
            self.get = None;
        }
        if self.legacy.as_ref().is_some_and(|s| s.id == stream_id) {
            self.legacy = None;
        }
        self.posts.retain(|s| s.id != stream_id);
    }
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
                streams: (0..SHARDS)
                    .map(|_| Mutex::new(StreamMap::default()))
                    .collect(),
                sessions: (0..SHARDS)
                    .map(|_| Mutex::new(HashMap::with_hasher(IdHashBuilder)))
                    .collect(),
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
    pub fn inline_answer(
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
    pub fn reserve(&self, session: &SessionId, bytes: usize) -> Result<Reservation, StreamError> {
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
        for shard in self.inner.sessions.iter() {
            let candidates: SmallVec<[(Arc<Stream>, bool); 16]> = {
                let sessions = lock(shard);
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
        for shard in self.inner.streams.iter() {
            let listeners: SmallVec<[Arc<Stream>; 16]> = lock(shard)
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

    /// Writes `: keepalive` into every live stream idle for at least `keepalive`, and notices
    /// connections that went away. Called by the janitor every `keepalive / KEEPALIVE_TICKS`.
    /// Returns how many keep-alives went out.
    pub fn keepalive_tick(&self) -> usize {
        let now = Instant::now();
        let keepalive = self.inner.config.keepalive;
        let mut n_sent = 0;
        for shard in self.inner.streams.iter() {
            let streams: SmallVec<[Arc<Stream>; 32]> = lock(shard).values().cloned().collect();
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
        for shard in self.inner.streams.iter() {
            let mut streams = lock(shard);
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
            for shard in self.inner.sessions.iter() {
                shrink_if_sparse(&mut lock(shard));
            }
        }
        dropped.len()
    }

    /// Streams registered (live or retained).
    pub fn len(&self) -> usize {
        self.inner
            .streams
            .iter()
            .map(|shard| lock(shard).len())
            .sum()
    }

    /// Streams with a live connection, per tenant (for the `sluice_active_streams` gauge).
    pub fn live_by_tenant(&self) -> Vec<(String, i64)> {
        let mut counts: HashMap<String, i64> = HashMap::new();
        for shard in self.inner.streams.iter() {
            let shard = lock(shard);
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
    pub fn held_sessions(&self) -> Vec<(SessionId, OwnerKey)> {
        let mut held = Vec::new();
        for shard in self.inner.sessions.iter() {
            let sessions = lock(shard);
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

impl Inner {
    fn stream_shard(&self, stream_id: u64) -> MutexGuard<'_, StreamMap> {
        let index = (stream_id as usize) % self.streams.len();
        match self.streams.get(index) {
            Some(shard) => lock(shard),
            None => unreachable!("index reduced modulo the shard count"),
        }
    }

    fn session_shard(&self, session: &SessionId) -> MutexGuard<'_, SessionMap> {
        let index = (session.shard64() as usize) % self.sessions.len();
        match self.sessions.get(index) {
            Some(shard) => lock(shard),
            None => unreachable!("index reduced modulo the shard count"),
        }
    }

    fn stream(&self, stream_id: u64) -> Option<Arc<Stream>> {
        self.stream_shard(stream_id).get(&stream_id).cloned()
    }

    /// Appends a frame to the ring, evicting the oldest beyond `retain_events` frames or
    /// `stream_queue_bytes` bytes (the newest frame is always kept).
    fn retain(&self, log: &mut Log, seq: u64, frame: Bytes) {
        let limit = self.config.retain_events;
        if limit == 0 {
            log.evicted_through = seq;
            return;
        }
        while log.ring.len() >= limit
            || (!log.ring.is_empty() && log.ring_bytes + frame.len() > self.config.queue_bytes)
        {
            let Some((old_seq, old)) = log.ring.pop_front() else {
                break;
            };
            log.evicted_through = old_seq;
            log.ring_bytes = log.ring_bytes.saturating_sub(old.len());
        }
        log.ring_bytes += frame.len();
        log.ring.push_back((seq, frame));
    }

    /// A `Post` stream whose handler is still writing stays resumable whatever the clock says.
    fn is_live_post_writer(&self, stream: &Stream, state: &State) -> bool {
        stream.kind == StreamKind::Post && !state.ended
    }

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

    fn close(&self, stream: &Stream) {
        let mut state = stream.lock();
        self.close_locked(stream, &mut state);
    }

    fn close_locked(&self, stream: &Stream, state: &mut State) {
        state.closed = true;
        state.ended = true;
        state.log.ring = VecDeque::new();
        state.log.ring_bytes = 0;
        stream.detach(state);
        stream.changed.notify_waiters();
    }
}

// === impl Inbox ===

/// `notifications/tools/list_changed` for a session stream.
pub const LIST_CHANGED: &[u8] = br#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#;

/// `notifications/tools/list_changed` for a listen stream: names the subscription in `_meta`.
pub fn list_changed_message(subscription_id: Option<&[u8]>) -> Bytes {
    match subscription_id {
        None => Bytes::from_static(LIST_CHANGED),
        Some(id) => {
            let head: &[u8] = br#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"#;
            let mut message = Vec::with_capacity(head.len() + id.len() + 3);
            message.extend_from_slice(head);
            message.extend_from_slice(id);
            message.extend_from_slice(b"}}}");
            Bytes::from(message)
        }
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

// === the writer ===

/// Writes frames to one stream.
///
/// Dropping the writer of a `Post` stream finishes it (the response is out or the handler
/// gave up); dropping any other writer leaves the stream to its connection.
pub struct StreamWriter {
    stream: Arc<Stream>,
    registry: Arc<Inner>,
    finish_on_drop: bool,
}

impl std::fmt::Debug for StreamWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamWriter")
            .field("stream", &self.stream.id)
            .field("kind", &self.stream.kind)
            .finish_non_exhaustive()
    }
}

impl StreamWriter {
    /// The stream's id on this instance.
    pub fn stream_id(&self) -> u64 {
        self.stream.id
    }

    /// The stream's kind.
    pub fn kind(&self) -> &StreamKind {
        &self.stream.kind
    }

    /// The id of the last event sent (`None` before the first, and on kinds without ids).
    pub fn last_event_id(&self) -> Option<EventId> {
        let seq = self.stream.lock().log.seq;
        (self.stream.kind.is_resumable() && seq > 0)
            .then(|| EventId::new(&self.registry.instance, self.stream.id, seq))
    }

    /// Sends one JSON-RPC message (`event: message`, with an id on resumable kinds). Waits
    /// while the connection's channel is full. A client that went away is not an error on a
    /// resumable stream (the frame is kept for resumption); on `Listen`/`Legacy` it is
    /// [`StreamError::Closed`], as is any write after the stream ended.
    pub async fn send(&self, message: &[u8]) -> Result<(), StreamError> {
        self.emit(Frame::Message(message)).await
    }

    /// Sends the priming event (`id:` + empty `data:`, with `retry:` when given). The transport
    /// decides when (sessions negotiated at 2025-11-25 or later). [`StreamError::NotResumable`]
    /// on kinds without ids.
    pub async fn prime(&self, retry_ms: Option<u64>) -> Result<(), StreamError> {
        if !self.stream.kind.is_resumable() {
            return Err(StreamError::NotResumable);
        }
        self.emit(Frame::Priming(retry_ms)).await
    }

    /// Sends a named event without id (the legacy transport's first `event: endpoint`).
    pub async fn send_named(&self, event: &[u8], data: &[u8]) -> Result<(), StreamError> {
        self.emit(Frame::Named(event, data)).await
    }

    /// Polling close (2025-11-25): sends `retry: {retry_ms}` with the current event id, then
    /// ends the connection while the stream lives on, so the client reconnects after
    /// `retry_ms` with `Last-Event-ID` and resumes. Needs an event with an id sent before
    /// (else [`StreamError::NotResumable`]); only offer it to sessions at 2025-11-25 or later.
    pub async fn close_connection(&self, retry_ms: u64) -> Result<(), StreamError> {
        if !self.stream.kind.is_resumable() || self.stream.lock().log.seq == 0 {
            return Err(StreamError::NotResumable);
        }
        self.emit(Frame::Retry(retry_ms)).await?;
        self.stream.detach(&mut self.stream.lock());
        Ok(())
    }

    /// Encodes one message, retains it, and returns the frame without sending it: for streams
    /// opened with [`StreamRegistry::open_inline`], whose frames go out in one inline body.
    pub fn push(&self, message: &[u8]) -> Result<Bytes, StreamError> {
        self.push_frame(Frame::Message(message))
    }

    /// Attaches a connection to a `Post` stream opened with [`StreamRegistry::open_inline`]
    /// whose answer turned out not to be ready at once: frames written from now on go to the
    /// returned receiver (hand it to `Body::counted` with the byte count), and the stream
    /// counts as live (keep-alives, list_changed).
    pub fn connect(&self) -> Result<(mpsc::Receiver<Bytes>, Arc<Backlog>), StreamError> {
        let mut state = self.stream.lock();
        if state.closed || state.ended {
            return Err(StreamError::Closed);
        }
        let (live, rx, backlog) = Live::channel(self.registry.config.queue_messages);
        self.stream.detach(&mut state);
        state.live = Some(live);
        state.attached += 1;
        state.idle_since = None;
        state.last_frame = Instant::now();
        Ok((rx, backlog))
    }

    /// Like [`StreamWriter::push`], for the priming event.
    pub fn push_priming(&self, retry_ms: Option<u64>) -> Result<Bytes, StreamError> {
        self.push_frame(Frame::Priming(retry_ms))
    }

    /// Ends the stream: the connection's body ends after what is queued; a resumable stream
    /// stays resumable for `retain`.
    pub fn finish(mut self) {
        self.finish_now();
        self.finish_on_drop = false;
    }

    /// Resolves when the connection has gone away (client disconnect, polling close, stream
    /// ended or session closed); at once when none is attached.
    pub async fn closed(&self) {
        loop {
            let notified = self.stream.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let tx = {
                let state = self.stream.lock();
                match &state.live {
                    Some(live) if !live.tx.is_closed() => live.tx.downgrade(),
                    _ => return,
                }
            };
            let Some(tx) = tx.upgrade() else { return };
            tokio::select! {
                () = tx.closed() => return,
                () = &mut notified => {}
            }
        }
    }

    // === internals ===

    fn push_frame(&self, frame: Frame<'_>) -> Result<Bytes, StreamError> {
        let mut state = self.stream.lock();
        if state.closed || state.ended {
            return Err(StreamError::Closed);
        }
        self.stream
            .encode(&mut state.log, &self.registry, frame)
            .ok_or(StreamError::NotResumable)
    }

    async fn emit(&self, frame: Frame<'_>) -> Result<(), StreamError> {
        let limit = self.registry.config.queue_bytes;
        let resumable = self.stream.kind.is_resumable();
        loop {
            let (tx, backlog) = {
                let mut state = self.stream.lock();
                if state.closed || state.ended {
                    return Err(StreamError::Closed);
                }
                match &state.live {
                    Some(live) => (live.tx.clone(), Arc::clone(&live.backlog)),
                    None if resumable => {
                        // Nobody connected: keep it for a resume.
                        self.stream.encode(&mut state.log, &self.registry, frame);
                        return Ok(());
                    }
                    None => return Err(StreamError::Closed),
                }
            };
            let reserved = tx.reserve().await;
            match reserved {
                Ok(permit) => {
                    let mut state = self.stream.lock();
                    if state.closed || state.ended {
                        return Err(StreamError::Closed);
                    }
                    if state
                        .live
                        .as_ref()
                        .is_some_and(|live| live.tx.same_channel(&tx))
                    {
                        if !backlog.has_room(limit) {
                            // Full in bytes: the connection closes so the client reconnects;
                            // a resumable stream keeps the frame for that resume.
                            drop(permit);
                            if resumable {
                                self.stream.encode(&mut state.log, &self.registry, frame);
                            }
                            self.stream.detach(&mut state);
                            return if resumable {
                                Ok(())
                            } else {
                                Err(StreamError::Full)
                            };
                        }
                        if let Some(bytes) =
                            self.stream.encode(&mut state.log, &self.registry, frame)
                        {
                            backlog.add(bytes.len());
                            permit.send(bytes);
                        }
                        state.last_frame = Instant::now();
                        return Ok(());
                    }
                    // The connection was replaced while waiting: go again with the new one.
                }
                Err(_) => {
                    let mut state = self.stream.lock();
                    if state
                        .live
                        .as_ref()
                        .is_some_and(|live| live.tx.same_channel(&tx))
                    {
                        self.stream.detach(&mut state);
                    }
                }
            }
        }
    }

    fn finish_now(&self) {
        let mut state = self.stream.lock();
        if state.ended {
            return;
        }
        state.ended = true;
        self.stream.detach(&mut state);
        // Retention runs from the end of the stream, even if the client left earlier.
        state.idle_since = Some(Instant::now());
    }
}

impl Drop for StreamWriter {
    fn drop(&mut self) {
        if self.finish_on_drop {
            self.finish_now();
        }
    }
}

// === reservations ===

/// Room held on a stream's queue for one message still being produced (a legacy request
/// running): a frame of the channel and some bytes of its budget. Dropping it unsent gives both
/// back.
pub struct Reservation {
    stream: Arc<Stream>,
    registry: Arc<Inner>,
    permit: Option<mpsc::OwnedPermit<Bytes>>,
    /// The byte count of the connection the reservation was made on.
    backlog: Arc<Backlog>,
    /// Which connection (`State::attached`) it was made on.
    attached: u64,
    /// Bytes held in `backlog` for the message until it is sent.
    reserved: usize,
}

impl std::fmt::Debug for Reservation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reservation")
            .field("stream", &self.stream.id)
            .field("reserved", &self.reserved)
            .finish_non_exhaustive()
    }
}

impl Reservation {
    /// Sends `message` (`event: message`) into the reserved room, never waiting. When the
    /// connection it was reserved on has gone, a resumable stream keeps the message in its
    /// ring (or hands it to the connection that replaced it, if that has room). Returns true
    /// when it was queued for a connection.
    pub fn send(mut self, message: &[u8]) -> bool {
        let Some(permit) = self.permit.take() else {
            return false;
        };
        let mut state = self.stream.lock();
        if state.closed || state.ended {
            return false;
        }
        if state.attached == self.attached && state.live.is_some() {
            if let Some(bytes) =
                self.stream
                    .encode(&mut state.log, &self.registry, Frame::Message(message))
            {
                self.backlog.add(bytes.len());
                permit.send(bytes);
            }
            state.last_frame = Instant::now();
            return true;
        }
        drop(permit);
        if state.live.is_none() {
            if self.stream.kind.is_resumable() {
                self.stream
                    .encode(&mut state.log, &self.registry, Frame::Message(message));
            }
            return false;
        }
        drop(state);
        self.stream
            .emit_or_close(&self.registry, Frame::Message(message))
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.backlog.sub(self.reserved);
    }
}

// === the janitor ===

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

/// Gives back the memory of a map that a burst left mostly empty (abandoned streams release
/// everything): shrinks when capacity is over four times the length, above a small floor.
fn shrink_if_sparse<K: Eq + std::hash::Hash, V, S: std::hash::BuildHasher>(
    map: &mut HashMap<K, V, S>,
) {
    if map.capacity() > 64 && map.capacity() > 4 * map.len() {
        map.shrink_to_fit();
    }
}

/// Locks `mutex`, recovering from poisoning: each critical section leaves the maps consistent.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests;
