//! Incremental SSE decoder.
//!
//! STUB API (signatures are the contract other modules code against).

use bytes::{Bytes, BytesMut};

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Event {
    /// The `event` field; empty means the default type, `message`.
    pub event: Bytes,
    /// The data lines joined with `\n`.
    pub data: Bytes,
    /// The last event id in force when this event was dispatched.
    pub id: Option<Bytes>,
    /// The last valid `retry` value seen, in milliseconds.
    pub retry: Option<u64>,
}

/// Why decoding failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// A frame grew beyond the configured maximum size.
    #[error("SSE frame larger than the configured maximum")]
    FrameTooLarge,
}

/// Incremental WHATWG event-stream parser.
#[derive(Debug, Default)]
pub struct Decoder {}

impl Decoder {
    /// A decoder with the default maximum frame size.
    pub fn new() -> Self {
        Self::default()
    }

    /// Decodes the next event from `buf`; `Ok(None)` means more bytes are needed.
    pub fn decode(&mut self, _buf: &mut BytesMut) -> Result<Option<Event>, DecodeError> {
        todo!("sse decoder")
    }
}

/// Adapts any `Stream<Item = Result<Bytes, E>>` into a stream of events.
pub struct EventStream<S> {
    _inner: S,
}
