//! The Server-Sent Events codec: frames out ([`Encoder`]) and frames in ([`Decoder`]).
//!
//! Owns the wire format of `text/event-stream` and the pooled buffers frames are written into.
//! Must not know JSON-RPC or MCP: payloads are opaque bytes (or any `serde::Serialize` value
//! written straight into the frame).

pub mod decode;
pub mod encode;
pub mod pool;

pub use decode::{DecodeError, Decoder, Event, EventStream};
pub use encode::{EncodeError, Encoder};
pub use pool::BufPool;
