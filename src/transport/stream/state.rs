//! One stream's shared state: its lock, its sequence numbers and retention ring, the attached
//! connection, and how a frame is encoded, retained and queued.
//!
//! Everything about one stream happens under its mutex ([`Stream::lock`]): a writer assigns
//! the next `seq`, encodes the frame, appends it to the ring and pushes it into the live
//! channel with a permit already reserved, so the channel order is the `seq` order. The ring
//! keeps at most `retain_events` frames and `stream_queue_bytes` bytes (the newest always).
//! Must not look streams up or know sessions beyond the id it carries: the registry does
//! (`stream.rs`, `shard.rs`).

use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::{Mutex, MutexGuard};
use tokio::sync::{mpsc, Notify};
use tokio::time::Instant;

use super::id::EventId;
use super::{Inner, StreamKind};
use crate::http::response::Backlog;
use crate::session::{OwnerKey, SessionId};
use crate::sse::Encoder;

/// One stream's shared state.
pub(super) struct Stream {
    pub(super) id: u64,
    pub(super) session: Option<SessionId>,
    pub(super) owner: OwnerKey,
    pub(super) kind: StreamKind,
    pub(super) state: Mutex<State>,
    /// Woken whenever the live channel is detached, replaced or dropped (for `closed()`).
    pub(super) changed: Notify,
}

pub(super) struct State {
    pub(super) log: Log,
    /// The attached connection, if any.
    pub(super) live: Option<Live>,
    /// Bumped whenever a connection is attached: a reservation made on one connection is not
    /// sent into its successor's channel.
    pub(super) attached: u64,
    /// When the last frame (keep-alives included) went to the connection.
    pub(super) last_frame: Instant,
    /// When the stream stopped being live (detached or finished): the retention clock.
    pub(super) idle_since: Option<Instant>,
    /// The writer finished: no more frames; resumption still replays.
    pub(super) ended: bool,
    /// Removed (its session closed, or swept): nothing more, no resumption.
    pub(super) closed: bool,
}

/// An attached connection: its channel and the byte count of what waits in it.
pub(super) struct Live {
    pub(super) tx: mpsc::Sender<Bytes>,
    /// Bytes queued in `tx` (and reserved for it); the connection's body subtracts what it takes.
    pub(super) backlog: Arc<Backlog>,
}

impl Live {
    /// A connection with `capacity` frames of room, and its receiving side.
    pub(super) fn channel(capacity: usize) -> (Self, mpsc::Receiver<Bytes>, Arc<Backlog>) {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        let backlog = Arc::new(Backlog::default());
        let live = Self {
            tx,
            backlog: Arc::clone(&backlog),
        };
        (live, rx, backlog)
    }

    /// Queues `bytes` through a permit of this channel, counting them.
    pub(super) fn queue(&self, permit: mpsc::Permit<'_, Bytes>, bytes: Bytes) {
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
pub(super) struct Log {
    /// The last `seq` assigned (0: none yet).
    pub(super) seq: u64,
    /// Recent message frames with their `seq`, oldest first; allocated on first use.
    pub(super) ring: VecDeque<(u64, Bytes)>,
    /// The highest `seq` dropped from the ring: a resume from before it has lost frames.
    pub(super) evicted_through: u64,
    /// Bytes of the frames in `ring` (bounded by `stream_queue_bytes`).
    pub(super) ring_bytes: usize,
}

/// What a frame carries.
#[derive(Clone, Copy)]
pub(super) enum Frame<'a> {
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

pub(super) fn with_encoder(write: impl FnOnce(&mut Encoder) -> Bytes) -> Bytes {
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
    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock()
    }

    /// Encodes `frame`, assigning its id and retaining it as its kind requires. `None` when the
    /// frame does not apply to this kind (priming or retry on a stream without ids).
    pub(super) fn encode(
        &self,
        log: &mut Log,
        registry: &Inner,
        frame: Frame<'_>,
    ) -> Option<Bytes> {
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
    pub(super) fn emit_or_close(&self, registry: &Inner, frame: Frame<'_>) -> bool {
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
    pub(super) fn keep_for_resume(&self, registry: &Inner, message: &[u8]) {
        let mut state = self.lock();
        if self.kind.is_resumable() && !state.closed {
            self.encode(&mut state.log, registry, Frame::Message(message));
        }
    }

    /// Drops the live channel (the connection's body ends once it drained what is queued).
    pub(super) fn detach(&self, state: &mut State) {
        if state.live.take().is_some() {
            state.idle_since = Some(Instant::now());
            self.changed.notify_waiters();
        }
    }

    /// True when a connection is attached and still open.
    pub(super) fn is_live(&self, state: &mut State) -> bool {
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

// === impl Inner: retention and closing ===

impl Inner {
    /// Appends a frame to the ring, evicting the oldest beyond `retain_events` frames or
    /// `stream_queue_bytes` bytes (the newest frame is always kept).
    pub(super) fn retain(&self, log: &mut Log, seq: u64, frame: Bytes) {
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
    pub(super) fn is_live_post_writer(&self, stream: &Stream, state: &State) -> bool {
        stream.kind == StreamKind::Post && !state.ended
    }

    pub(super) fn close(&self, stream: &Stream) {
        let mut state = stream.lock();
        self.close_locked(stream, &mut state);
    }

    pub(super) fn close_locked(&self, stream: &Stream, state: &mut State) {
        state.closed = true;
        state.ended = true;
        state.log.ring = VecDeque::new();
        state.log.ring_bytes = 0;
        stream.detach(state);
        stream.changed.notify_waiters();
    }
}
