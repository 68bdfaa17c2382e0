//! Small JSON writers into a `BytesMut`: raw tape values, integers, and the crate's string
//! writers (`json_text.rs`) re-exported for `mcp/`. Nothing here allocates besides growing the
//! buffer.
//!
//! Must not build value trees: the dispatcher writes results directly.

use bytes::{BufMut, BytesMut};
use simd_json::prelude::Writable;
use simd_json::tape::Value;

pub(crate) use crate::json_text::{put_json_text_as_str, put_str};

/// Appends a tape value (a part of the request body) as compact JSON.
pub(crate) fn put_value(out: &mut BytesMut, value: Value<'_, '_>) {
    // Writing into a BytesMut cannot fail.
    let _ = value.write(&mut out.writer());
}

/// Appends an unsigned integer.
pub(crate) fn put_u64(out: &mut BytesMut, n: u64) {
    let _ = serde_json::to_writer(out.writer(), &n);
}
