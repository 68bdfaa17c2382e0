//! A bounded, per-thread pool of `BytesMut` buffers that SSE frames are written into.
//!
//! Owns buffer reuse for the encoder; must not know what is written into the buffers.
//!
//! # How capacity is reclaimed
//! An encoder writes a frame at the end of its buffer and cuts it off with
//! `split().freeze()`: the frame and the buffer then share one allocation. Once every frame
//! cut from it has been dropped (hyper drops a data frame after writing it), the buffer is the
//! allocation's only owner again, and `BytesMut::try_reclaim` moves its start back to the
//! beginning of the allocation without allocating. The encoder does that when its buffer runs
//! out of room; if frames are still in flight it swaps its buffer for a pooled one that can be
//! reclaimed, leaving the busy one in the pool. A buffer taken from the pool is therefore either
//! reclaimed in place or, when none can be, freshly allocated. The free list is bounded
//! ([`MAX_POOLED_BUFFERS`] per thread) and never keeps a buffer that grew beyond
//! [`MAX_POOLED_CAPACITY`], so an idle pool holds at most their product.

use std::cell::RefCell;

use bytes::BytesMut;

/// Capacity of a newly allocated frame buffer: room for a dozen ~600-byte frames.
pub(crate) const DEFAULT_BUF_CAPACITY: usize = 8 * 1024;

/// Most buffers one thread's free list holds; a buffer returned to a full list is freed.
pub(crate) const MAX_POOLED_BUFFERS: usize = 32;

/// A buffer that had to grow beyond this (one huge frame) is freed instead of pooled.
pub(crate) const MAX_POOLED_CAPACITY: usize = 256 * 1024;

thread_local! {
    static FREE: RefCell<Vec<BytesMut>> = const { RefCell::new(Vec::new()) };
}

/// A handle to the current thread's pool of reusable write buffers.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct BufPool;

impl BufPool {
    /// Takes an empty buffer with at least `min_capacity` bytes of spare room: a pooled one
    /// whose capacity can be reclaimed without allocating, or else a new one.
    pub(crate) fn take(&self, min_capacity: usize) -> BytesMut {
        let reused = FREE
            .try_with(|free| {
                let mut free = free.try_borrow_mut().ok()?;
                // Newest first: the most recently returned buffer is the likeliest in cache.
                let index = free.iter_mut().rposition(|buf| {
                    buf.clear();
                    buf.try_reclaim(min_capacity)
                })?;
                Some(free.swap_remove(index))
            })
            .ok()
            .flatten();
        reused.unwrap_or_else(|| BytesMut::with_capacity(min_capacity.max(DEFAULT_BUF_CAPACITY)))
    }

    /// Returns a buffer to the pool (its contents are discarded). Frames cut from it may still
    /// be alive; the pool only reuses it once they are gone.
    pub(crate) fn put(&self, mut buf: BytesMut) {
        if buf.capacity() > MAX_POOLED_CAPACITY {
            return;
        }
        buf.clear();
        // During thread teardown the list may be gone: then the buffer is simply freed.
        let _ = FREE.try_with(|free| {
            if let Ok(mut free) = free.try_borrow_mut() {
                if free.len() < MAX_POOLED_BUFFERS {
                    free.push(buf);
                }
            }
        });
    }

    /// How many buffers this thread's free list holds (for tests and metrics).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        FREE.try_with(|free| free.try_borrow().map_or(0, |free| free.len()))
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reuses_a_buffer_whose_frames_are_gone() {
        let pool = BufPool;
        let mut buf = pool.take(100);
        buf.extend_from_slice(b"frame");
        let frame = buf.split().freeze();
        let start = frame.as_ptr() as usize;
        drop(frame);
        pool.put(buf);
        let again = pool.take(100);
        let allocation = start..start + DEFAULT_BUF_CAPACITY;
        assert!(
            allocation.contains(&(again.as_ptr() as usize)),
            "the allocation was not reused"
        );
    }

    #[test]
    fn does_not_hand_out_a_buffer_still_shared() {
        let pool = BufPool;
        let mut buf = pool.take(DEFAULT_BUF_CAPACITY);
        buf.extend_from_slice(&[1; DEFAULT_BUF_CAPACITY]);
        let frame = buf.split().freeze();
        pool.put(buf);
        let other = pool.take(100);
        let frame_range = frame.as_ptr() as usize..frame.as_ptr() as usize + frame.len();
        assert!(!frame_range.contains(&(other.as_ptr() as usize)));
        assert_eq!(frame[0], 1);
        // The busy buffer stayed in the pool for later.
        assert_eq!(pool.len(), 1);
    }

    #[test]
    fn bounded() {
        let pool = BufPool;
        for _ in 0..MAX_POOLED_BUFFERS + 10 {
            pool.put(BytesMut::with_capacity(16));
        }
        assert_eq!(pool.len(), MAX_POOLED_BUFFERS);
        pool.put(BytesMut::with_capacity(MAX_POOLED_CAPACITY + 1));
        assert_eq!(pool.len(), MAX_POOLED_BUFFERS);
    }
}
