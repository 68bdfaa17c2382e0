//! This thread's simd-json scratch buffers, shared by every parse on the thread: JSON-RPC bodies
//! (`jsonrpc/parse/check.rs`) and downstream answers (`invoke/client.rs`).
//!
//! Owns [`with_buffers`] and the cache policy: buffers sized for bodies up to
//! [`KEEP_BUFFERS_UP_TO`] stay on the thread for the next parse (a parse then allocates no
//! scratch space); a larger body's buffers are freed after it, so one huge body does not pin
//! memory on every worker thread. A cache built for another depth limit is rebuilt. A leaf:
//! knows neither JSON-RPC nor downstreams.

use std::cell::RefCell;

use simd_json::Buffers;

/// Bodies up to this size leave their scratch buffers cached on the thread.
pub(crate) const KEEP_BUFFERS_UP_TO: usize = 1 << 20;

thread_local! {
    /// The cached buffers with the depth limit they were built for.
    static BUFFERS: RefCell<Option<(usize, Buffers)>> = const { RefCell::new(None) };
}

/// Runs `parse` with this thread's buffers for a body of `len` bytes nested at most
/// `max_depth` deep (fresh ones if the cache is in use, which nothing does today).
pub(crate) fn with_buffers<R>(
    len: usize,
    max_depth: usize,
    parse: impl FnOnce(&mut Buffers) -> R,
) -> R {
    BUFFERS.with(|cell| {
        let Ok(mut cached) = cell.try_borrow_mut() else {
            return parse(&mut Buffers::with_max_depth(len, max_depth));
        };
        let buffers = match &mut *cached {
            Some((depth, buffers)) if *depth == max_depth => buffers,
            slot => {
                &mut slot
                    .insert((max_depth, Buffers::with_max_depth(len, max_depth)))
                    .1
            }
        };
        let result = parse(buffers);
        if len > KEEP_BUFFERS_UP_TO {
            *cached = None;
        }
        result
    })
}

/// Whether this thread holds cached buffers now.
#[cfg(test)]
pub(crate) fn cached() -> bool {
    BUFFERS.with(|cell| cell.borrow().is_some())
}
