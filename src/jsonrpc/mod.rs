//! JSON-RPC 2.0: messages parsed in place with simd-json, ids, error codes, response writers.
//!
//! STUB API (signatures are the contract other modules code against; the jsonrpc work replaces
//! the bodies and may add to the API, keeping these names).

use bytes::BytesMut;

/// JSON-RPC error codes used on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrorCode(pub i32);

impl ErrorCode {
    /// Invalid JSON was received.
    pub const PARSE_ERROR: Self = Self(-32700);
    /// The JSON sent is not a valid Request object.
    pub const INVALID_REQUEST: Self = Self(-32600);
    /// The method does not exist / is not available.
    pub const METHOD_NOT_FOUND: Self = Self(-32601);
    /// Invalid method parameter(s).
    pub const INVALID_PARAMS: Self = Self(-32602);
    /// Internal JSON-RPC error.
    pub const INTERNAL_ERROR: Self = Self(-32603);
}

/// A request id as its JSON text (`0`, `"0"`, `"a\"b"`), echoed back verbatim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Id<'a>(pub &'a [u8]);

/// An id that outlives the request body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedId(pub bytes::Bytes);

/// One parsed message, borrowing from the request body.
#[derive(Debug)]
pub enum Message<'a> {
    /// A call expecting a response.
    Request { id: Id<'a>, method: &'a str },
    /// A call without an id; never answered.
    Notification { method: &'a str },
    /// A response (result or error) from the peer.
    Response { id: Id<'a> },
}

/// Why a body is not a usable JSON-RPC message.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct ParseError {
    /// -32700 or -32600.
    pub code: ErrorCode,
    /// Human-readable reason.
    pub message: &'static str,
    /// The id, when it could be read.
    pub id: Option<OwnedId>,
}

/// Parses one message in place (simd-json mutates the buffer).
pub fn parse(_body: &mut [u8]) -> Result<Message<'_>, ParseError> {
    todo!("jsonrpc parse")
}

/// Writes `{"jsonrpc":"2.0","id":…,"result":…}`.
pub fn write_result<T: serde::Serialize + ?Sized>(
    _buf: &mut BytesMut,
    _id: &[u8],
    _result: &T,
) -> Result<(), serde_json::Error> {
    todo!("jsonrpc write_result")
}

/// Writes `{"jsonrpc":"2.0","id":…|null,"error":{"code":…,"message":…}}`.
pub fn write_error(_buf: &mut BytesMut, _id: Option<&[u8]>, _code: ErrorCode, _message: &str) {
    todo!("jsonrpc write_error")
}
