//! JSON-RPC 2.0: one message parsed in place with simd-json, ids, error codes, writers.
//!
//! Owns the wire shape of a JSON-RPC message and nothing else: it must not know MCP methods,
//! HTTP status codes or sockets. Callers hand it a complete body (`&mut [u8]`, mutated in place
//! by simd-json) and get back a [`Message`] borrowing from that body, or a [`ParseError`] carrying
//! the JSON-RPC code (-32700 / -32600) and the id when it could be read.
//!
//! - [`parse`] / [`parse_with`]: classify the envelope, expose `method` and `id` at once, and
//!   keep `params` (or `result`, or `error.data`) as a [`Payload`] the method handler can walk
//!   ([`Payload::value`]) or deserialize ([`Payload::deserialize`]) without re-parsing.
//! - [`Id`] (borrowed), [`OwnedId`] (what outlives the body: the id's JSON text inline),
//!   [`IdRef`] (what writers accept: either of them, raw JSON text, or `null`).
//! - Writers into a caller-provided (pooled) `BytesMut`: [`write_result`], [`write_result_raw`],
//!   [`write_error`], [`write_error_with_data`], [`write_request`], [`write_notification`],
//!   and [`Message::write_to`]. JSON is serialized straight into the buffer.
//!
//! - [`echo`]: the bounded form of peer-chosen text an error message quotes.
//!
//! Layout: `id.rs` (ids), `parse.rs` (classification), `payload.rs` (the params view),
//! `write.rs` (writers), `echo.rs` (bounded echoes).

mod echo;
mod id;
mod parse;
mod payload;
mod write;

pub(crate) use echo::echo;
pub(crate) use id::IdRef;
pub use id::{Id, OwnedId};
pub(crate) use parse::{has_repeated_name, parse_with, DEFAULT_MAX_DEPTH};
pub use parse::{parse, Limits, Message, ParseError};
pub(crate) use payload::Payload;
pub(crate) use write::{write_error, write_error_with_data, write_result_raw};

/// JSON-RPC error codes used on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ErrorCode(pub i32);

impl ErrorCode {
    /// Invalid JSON was received.
    pub(crate) const PARSE_ERROR: Self = Self(-32700);
    /// The JSON sent is not a valid Request object.
    pub(crate) const INVALID_REQUEST: Self = Self(-32600);
    /// The method does not exist / is not available.
    pub(crate) const METHOD_NOT_FOUND: Self = Self(-32601);
    /// Invalid method parameter(s).
    pub(crate) const INVALID_PARAMS: Self = Self(-32602);
    /// Internal JSON-RPC error.
    pub(crate) const INTERNAL_ERROR: Self = Self(-32603);
}

/// Property functions shared by the fuzz target and the integration tests.
#[doc(hidden)]
#[cfg(any(test, feature = "test-util"))]
pub mod props;
