//! Writing to a stream: [`StreamWriter`] (what a handler holds while it answers) and
//! [`Reservation`] (room held on the legacy `/sse` stream for an answer still being produced).
//!
//! A slow client makes [`StreamWriter::send`] wait for a permit (bounded memory); a client
//! that went away detaches the channel and frames only go to the ring, so it can resume with
//! `Last-Event-ID` (a disconnect is not a cancellation). Must not look streams up: the
//! registry (`stream.rs`) hands writers out.

use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::id::EventId;
use super::state::{Frame, Live, Stream};
use super::{Inner, StreamError, StreamKind};
use crate::http::response::Backlog;

/// Writes frames to one stream.
///
/// Dropping the writer of a `Post` stream finishes it (the response is out or the handler
/// gave up); dropping any other writer leaves the stream to its connection.
pub struct StreamWriter {
    pub(super) stream: Arc<Stream>,
    pub(super) registry: Arc<Inner>,
    pub(super) finish_on_drop: bool,
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
    /// opened with [`StreamRegistry::open_inline`](super::StreamRegistry::open_inline), whose
    /// frames go out in one inline body.
    pub fn push(&self, message: &[u8]) -> Result<Bytes, StreamError> {
        self.push_frame(Frame::Message(message))
    }

    /// Attaches a connection to a `Post` stream opened with
    /// [`StreamRegistry::open_inline`](super::StreamRegistry::open_inline) whose answer turned out
    /// not to be ready at once: frames written from now on go to the returned receiver (hand it to
    /// `Body::counted` with the byte count), and the stream counts as live (keep-alives,
    /// list_changed).
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

// === impl Reservation ===

/// Room held on a stream's queue for one message still being produced (a legacy request
/// running): a frame of the channel and some bytes of its budget. Dropping it unsent gives both
/// back.
pub(crate) struct Reservation {
    pub(super) stream: Arc<Stream>,
    pub(super) registry: Arc<Inner>,
    pub(super) permit: Option<mpsc::OwnedPermit<Bytes>>,
    /// The byte count of the connection the reservation was made on.
    pub(super) backlog: Arc<Backlog>,
    /// Which connection (`State::attached`) it was made on.
    pub(super) attached: u64,
    /// Bytes held in `backlog` for the message until it is sent.
    pub(super) reserved: usize,
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
    pub(crate) fn send(mut self, message: &[u8]) -> bool {
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
