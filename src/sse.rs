//! The Server-Sent Events codec: frames out ([`Encoder`]) and frames in ([`Decoder`]).
//!
//! Owns the wire format of `text/event-stream` and the pooled buffers frames are written into.
//! Must not know JSON-RPC or MCP: payloads are opaque bytes (or any `serde::Serialize` value
//! written straight into the frame).
//!
//! - `encode.rs`: [`Encoder`] writes message, named, priming and comment frames into buffers
//!   from `pool.rs` and hands each out as `Bytes`; steady state allocates nothing per frame.
//! - `decode.rs`: [`Decoder`], the incremental WHATWG parser over a `BytesMut`
//!   (`Ok(None)` = need more bytes); single-line data comes out zero-copy.
//! - `stream.rs`: [`EventStream`], the `Stream` adapter over chunks of `Bytes`.
//! - `naive.rs` and `props.rs` (hidden): the reference decoder and the properties that the
//!   property tests, the fuzz targets and the corpus replay check.

pub(crate) mod decode;
pub(crate) mod encode;
#[doc(hidden)]
#[cfg(any(test, feature = "test-util"))]
pub(crate) mod naive;
pub(crate) mod pool;
#[doc(hidden)]
#[cfg(any(test, feature = "test-util"))]
pub mod props;
pub mod stream;

pub use decode::{DecodeError, Decoder, Event, EventRef, DEFAULT_MAX_FRAME};
pub use encode::{EncodeError, Encoder};
pub use stream::{EventStream, StreamError};
