//! SSE frame encoder.
//!
//! STUB API (signatures are the contract other modules code against; bodies are naive).

use bytes::{BufMut, Bytes, BytesMut};

/// Errors from encoding a frame.
#[derive(Debug, thiserror::Error)]
pub enum EncodeError {
    /// The value could not be serialized as JSON.
    #[error("payload serialization failed: {0}")]
    Serialize(#[from] serde_json::Error),
}

/// Writes SSE frames into pooled buffers and hands each frame out as `Bytes`.
#[derive(Default)]
pub struct Encoder {
    buf: BytesMut,
}

impl Encoder {
    /// A new encoder taking its buffers from the thread's pool.
    pub fn new() -> Self {
        Self::default()
    }

    /// `event: message` + optional `id:` + `data:` lines (CR/LF in `data` become extra lines).
    pub fn message(&mut self, id: Option<&[u8]>, data: &[u8]) -> Bytes {
        self.named(b"message", id, data)
    }

    /// Like [`Encoder::message`], serializing `value` as compact JSON straight into the frame.
    pub fn message_json<T: serde::Serialize + ?Sized>(
        &mut self,
        id: Option<&[u8]>,
        value: &T,
    ) -> Result<Bytes, EncodeError> {
        let data = serde_json::to_vec(value)?;
        Ok(self.message(id, &data))
    }

    /// A message frame whose payload is written by `write` directly into the frame buffer.
    pub fn message_with(&mut self, id: Option<&[u8]>, write: impl FnOnce(&mut BytesMut)) -> Bytes {
        let mut data = BytesMut::new();
        write(&mut data);
        self.message(id, &data)
    }

    /// A frame with a custom event name (`event: endpoint` for the legacy transport).
    pub fn named(&mut self, event: &[u8], id: Option<&[u8]>, data: &[u8]) -> Bytes {
        self.buf.put_slice(b"event: ");
        self.buf.put_slice(event);
        self.buf.put_u8(b'\n');
        if let Some(id) = id {
            self.buf.put_slice(b"id: ");
            self.buf.put_slice(id);
            self.buf.put_u8(b'\n');
        }
        self.buf.put_slice(b"data: ");
        self.buf.put_slice(data);
        self.buf.put_slice(b"\n\n");
        self.buf.split().freeze()
    }

    /// A priming frame: `id:` and an empty `data:`, optionally preceded by `retry:` (ms).
    pub fn priming(&mut self, id: &[u8], retry_ms: Option<u64>) -> Bytes {
        if let Some(ms) = retry_ms {
            self.buf.put_slice(format!("retry: {ms}\n").as_bytes());
        }
        self.buf.put_slice(b"id: ");
        self.buf.put_slice(id);
        self.buf.put_slice(b"\ndata: \n\n");
        self.buf.split().freeze()
    }

    /// A comment frame, `: {text}` (for example `: keepalive`).
    pub fn comment(&mut self, text: &[u8]) -> Bytes {
        self.buf.put_slice(b": ");
        self.buf.put_slice(text);
        self.buf.put_slice(b"\n\n");
        self.buf.split().freeze()
    }
}
