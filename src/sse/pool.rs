//! A bounded pool of `BytesMut` buffers that SSE frames are written into.
//!
//! STUB: to be replaced by the sse work.

use bytes::BytesMut;

/// A pool of reusable write buffers.
#[derive(Clone, Default)]
pub struct BufPool;

impl BufPool {
    /// Takes a buffer with at least `min_capacity` bytes of spare room.
    pub fn take(&self, min_capacity: usize) -> BytesMut {
        BytesMut::with_capacity(min_capacity)
    }
}
