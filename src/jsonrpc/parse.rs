//! Classifying one JSON-RPC 2.0 message: simd-json builds a tape of the body in place, then one
//! pass over the top-level members checks the envelope and picks out `method`, `id` and the
//! payload (`params`, `result` or `error.data`).
//!
//! Every rejection is a [`ParseError`]: -32700 when the body is not JSON, -32600 when it is JSON
//! but not a usable message, with the id whenever it could be read. This file must not know MCP
//! methods or HTTP; it neither allocates per member nor copies the body.
//!
//! The tape itself (building it with cached buffers, walking members, the repeated-name rule)
//! is `parse/check.rs`; the unit tests are `parse/tests.rs`.

mod check;
#[cfg(test)]
mod tests;

use simd_json::{Node, StaticNode, Tape};

use super::id::{Id, OwnedId};
use super::payload::{Payload, Slot};
use super::ErrorCode;
use check::{build_tape, members, repeated_name};

pub(crate) use check::has_repeated_name;

/// Default maximum nesting depth of a body (arrays and objects, the message object counting as
/// one). A deeper body is answered with -32700, before any handler sees it; this also bounds the
/// recursion of everything that later walks the payload (writers, serde). `[server]
/// max_json_depth` sets it (see [`Limits`]).
pub(crate) const DEFAULT_MAX_DEPTH: usize = 128;

/// Limits applied while parsing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Maximum nesting depth; see [`DEFAULT_MAX_DEPTH`].
    pub max_depth: usize,
}

impl Limits {
    /// The defaults: [`DEFAULT_MAX_DEPTH`].
    pub const DEFAULT: Self = Self {
        max_depth: DEFAULT_MAX_DEPTH,
    };
}

impl Default for Limits {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// One parsed message, borrowing from the request body.
#[derive(Debug, PartialEq)]
pub enum Message<'a> {
    /// A call expecting a response.
    Request {
        id: Id<'a>,
        method: &'a str,
        /// An object or an array, when present.
        params: Option<Payload<'a>>,
    },
    /// A call without an id; never answered.
    Notification {
        method: &'a str,
        /// An object or an array, when present.
        params: Option<Payload<'a>>,
    },
    /// A successful response from the peer.
    Response { id: Id<'a>, result: Payload<'a> },
    /// An error response from the peer; `id` is `None` when the peer sent `"id": null`.
    ErrorResponse {
        id: Option<Id<'a>>,
        code: i64,
        message: &'a str,
        data: Option<Payload<'a>>,
    },
}

impl<'a> Message<'a> {
    /// The message's id (requests and responses).
    pub fn id(&self) -> Option<Id<'a>> {
        match self {
            Message::Request { id, .. } | Message::Response { id, .. } => Some(*id),
            Message::ErrorResponse { id, .. } => *id,
            Message::Notification { .. } => None,
        }
    }

    /// The method (requests and notifications).
    pub fn method(&self) -> Option<&'a str> {
        match self {
            Message::Request { method, .. } | Message::Notification { method, .. } => Some(method),
            Message::Response { .. } | Message::ErrorResponse { .. } => None,
        }
    }
}

/// Why a body is not a usable JSON-RPC message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ParseError {
    /// -32700 or -32600.
    pub code: ErrorCode,
    /// Human-readable reason.
    pub message: &'static str,
    /// The id, when it could be read.
    pub id: Option<OwnedId>,
}

impl ParseError {
    fn not_json() -> Self {
        Self {
            code: ErrorCode::PARSE_ERROR,
            message: "Parse error: the body is not valid JSON",
            id: None,
        }
    }

    fn invalid(message: &'static str, id: Option<Id<'_>>) -> Self {
        Self {
            code: ErrorCode::INVALID_REQUEST,
            message,
            id: id.map(|id| id.to_owned_id()),
        }
    }
}

/// Parses one message in place (simd-json mutates the buffer) with [`Limits::DEFAULT`].
pub fn parse(body: &mut [u8]) -> Result<Message<'_>, ParseError> {
    parse_with(body, &Limits::DEFAULT)
}

/// Parses one message in place with the given limits.
pub(crate) fn parse_with<'a>(
    body: &'a mut [u8],
    limits: &Limits,
) -> Result<Message<'a>, ParseError> {
    // JSON-RPC 2.0 §5.1: "-32700 Parse error: Invalid JSON was received by the server."
    // RFC 8259 §2 allows only space, tab, LF and CR between tokens, and §7 says control
    // characters (U+0000 through U+001F) "MUST be escaped" inside strings: a NUL byte is never
    // part of a JSON text. A parser that took it for the end of the input (C-string style, or
    // as padding) would ignore whatever follows it, so it is refused here, without relying on
    // how simd-json treats it. (simd-json rejects invalid UTF-8, any other trailing
    // non-whitespace, an empty body and nesting beyond `limits.max_depth`.)
    if memchr::memchr(0, body).is_some() {
        return Err(ParseError::not_json());
    }
    let tape = build_tape(body, limits).map_err(|_| ParseError::not_json())?;
    classify(tape)
}

/// Reads an id node: a string or an integer; anything else is `None`.
fn read_id<'a>(node: Option<&Node<'a>>) -> Option<Id<'a>> {
    match node? {
        Node::String(s) => Some(Id::Str(s)),
        Node::Static(StaticNode::I64(n)) => Some(Id::from_i64(*n)),
        Node::Static(StaticNode::U64(n)) => Some(Id::from_u64(*n)),
        _ => None,
    }
}

/// Indexes of the top-level members we look at.
#[derive(Default)]
struct Envelope {
    jsonrpc: Option<usize>,
    id: Option<usize>,
    method: Option<usize>,
    params: Option<usize>,
    result: Option<usize>,
    error: Option<usize>,
}

fn classify<'a>(tape: Tape<'a>) -> Result<Message<'a>, ParseError> {
    let nodes = &tape.0;
    match nodes.first() {
        Some(Node::Object { .. }) => {}
        // MCP (2025-06-18 onwards): "Remove support for JSON-RPC batching"; a POST body
        // "MUST be a single JSON-RPC request, notification, or response".
        Some(Node::Array { .. }) => {
            return Err(ParseError::invalid("batches are not supported", None));
        }
        // JSON-RPC 2.0 §4: "A rpc call is represented by sending a Request object to a
        // Server." A string, number, bool or null is not an object.
        _ => {
            return Err(ParseError::invalid(
                "the message must be a JSON object",
                None,
            ));
        }
    }

    let mut env = Envelope::default();
    for (name, value_idx) in members(nodes, 0) {
        let slot = match name {
            "jsonrpc" => &mut env.jsonrpc,
            "id" => &mut env.id,
            "method" => &mut env.method,
            "params" => &mut env.params,
            "result" => &mut env.result,
            "error" => &mut env.error,
            _ => continue,
        };
        *slot = Some(value_idx);
    }

    // RFC 8259 §4: "The names within an object SHOULD be unique." "When the names within an
    // object are not unique, the behavior of software that receives such an object is
    // unpredictable": two `id`s, two tool `name`s or two `amount`s in the arguments would be
    // read differently by this runtime (first wins), a downstream and an audit reader, so a
    // message with a repeated name in any object, at any depth, is refused. A repeated
    // top-level member may be the id itself, so that refusal carries no id.
    match repeated_name(nodes) {
        Some(0) => return Err(ParseError::invalid("a message member is repeated", None)),
        Some(_) => {
            let id = env.id.and_then(|idx| read_id(nodes.get(idx)));
            return Err(ParseError::invalid(
                "a member name is repeated inside the message",
                id,
            ));
        }
        None => {}
    }

    // The id is carried in every -32600 below whenever it is a usable id.
    let id = env.id.and_then(|idx| read_id(nodes.get(idx)));

    // JSON-RPC 2.0 §4: "jsonrpc: A String specifying the version of the JSON-RPC protocol.
    // MUST be exactly "2.0"."
    match env.jsonrpc.and_then(|idx| nodes.get(idx)) {
        Some(Node::String("2.0")) => {}
        Some(_) => {
            return Err(ParseError::invalid(
                "\"jsonrpc\" must be exactly \"2.0\"",
                id,
            ))
        }
        None => return Err(ParseError::invalid("\"jsonrpc\": \"2.0\" is missing", id)),
    }

    if let Some(method_idx) = env.method {
        // JSON-RPC 2.0 §4 lists the members of a Request object (jsonrpc, method, params, id);
        // `result` and `error` belong to a Response (§5), so a message with both is neither.
        if env.result.is_some() || env.error.is_some() {
            return Err(ParseError::invalid(
                "a message cannot have both \"method\" and \"result\"/\"error\"",
                id,
            ));
        }
        // JSON-RPC 2.0 §4: "method: A String containing the name of the method to be invoked."
        let Some(Node::String(method)) = nodes.get(method_idx) else {
            return Err(ParseError::invalid("\"method\" must be a string", id));
        };
        // JSON-RPC 2.0 §4.2: "If present, parameters for the rpc call MUST be provided as a
        // Structured value. Either by-position through an Array or by-name through an Object."
        if let Some(params_idx) = env.params {
            if !matches!(
                nodes.get(params_idx),
                Some(Node::Object { .. } | Node::Array { .. })
            ) {
                return Err(ParseError::invalid(
                    "\"params\" must be an object or an array",
                    id,
                ));
            }
        }
        let method: &'a str = method;
        let Some(id_idx) = env.id else {
            // JSON-RPC 2.0 §4.1: "A Notification is a Request object without an "id" member."
            let params = env.params.map(|_| Payload::new(tape, Slot::Params));
            return Ok(Message::Notification { method, params });
        };
        // MCP basic §Requests: "Requests MUST include a string or integer ID. Unlike base
        // JSON-RPC, the ID MUST NOT be null." JSON-RPC 2.0 §4: "Numbers SHOULD NOT contain
        // fractional parts."
        let Some(id) = read_id(nodes.get(id_idx)) else {
            return Err(ParseError::invalid(
                "\"id\" must be a string or an integer",
                None,
            ));
        };
        let params = env.params.map(|_| Payload::new(tape, Slot::Params));
        return Ok(Message::Request { id, method, params });
    }

    match (env.result, env.error) {
        // JSON-RPC 2.0 §4: "method ... REQUIRED" for a Request; without `result`/`error` the
        // message is not a Response either.
        (None, None) => Err(ParseError::invalid("\"method\" is missing", id)),
        // JSON-RPC 2.0 §5: "Either the result member or error member MUST be included, but
        // both members MUST NOT be included."
        (Some(_), Some(_)) => Err(ParseError::invalid(
            "a response must have exactly one of \"result\" and \"error\"",
            id,
        )),
        (Some(_), None) => {
            // JSON-RPC 2.0 §5: "id: This member is REQUIRED. It MUST be the same as the value
            // of the id member in the Request Object." A request id is never null (MCP).
            let Some(id) = id else {
                return Err(ParseError::invalid(
                    "a response must have a string or integer \"id\"",
                    None,
                ));
            };
            Ok(Message::Response {
                id,
                result: Payload::new(tape, Slot::Result),
            })
        }
        (None, Some(error_idx)) => {
            // JSON-RPC 2.0 §5: "If there was an error in detecting the id in the Request
            // object (e.g. Parse error/Invalid Request), it MUST be Null."
            let id = match env.id.and_then(|idx| nodes.get(idx)) {
                Some(Node::Static(StaticNode::Null)) => None,
                Some(_) if id.is_some() => id,
                _ => {
                    return Err(ParseError::invalid(
                        "an error response must have a string, integer or null \"id\"",
                        None,
                    ));
                }
            };
            classify_error_object(tape, error_idx, id)
        }
    }
}

/// Checks an error response's `error` member (JSON-RPC 2.0 §5.1).
fn classify_error_object<'a>(
    tape: Tape<'a>,
    error_idx: usize,
    id: Option<Id<'a>>,
) -> Result<Message<'a>, ParseError> {
    let nodes = &tape.0;
    // JSON-RPC 2.0 §5.1: "When a rpc call encounters an error, the Response Object MUST contain
    // the error member with a value that is a Object".
    if !matches!(nodes.get(error_idx), Some(Node::Object { .. })) {
        return Err(ParseError::invalid("\"error\" must be an object", id));
    }
    // No name repeats here: `classify` refused any repeated name already.
    let (mut code, mut message, mut data) = (None, None, None);
    for (name, value_idx) in members(nodes, error_idx) {
        let slot = match name {
            "code" => &mut code,
            "message" => &mut message,
            "data" => &mut data,
            _ => continue,
        };
        *slot = Some(value_idx);
    }
    // JSON-RPC 2.0 §5.1: "code: A Number that indicates the error type that occurred. This
    // MUST be an integer."
    let code = match code.and_then(|idx| nodes.get(idx)) {
        Some(Node::Static(StaticNode::I64(n))) => *n,
        Some(Node::Static(StaticNode::U64(n))) => match i64::try_from(*n) {
            Ok(n) => n,
            Err(_) => return Err(ParseError::invalid("\"error.code\" is out of range", id)),
        },
        _ => return Err(ParseError::invalid("\"error.code\" must be an integer", id)),
    };
    // JSON-RPC 2.0 §5.1: "message: A String providing a short description of the error."
    let Some(Node::String(message)) = message.and_then(|idx| nodes.get(idx)) else {
        return Err(ParseError::invalid(
            "\"error.message\" must be a string",
            id,
        ));
    };
    let message: &'a str = message;
    // JSON-RPC 2.0 §5.1: "data: A Primitive or Structured value that contains additional
    // information about the error. This may be omitted."
    let data = data.map(|_| Payload::new(tape, Slot::ErrorData));
    Ok(Message::ErrorResponse {
        id,
        code,
        message,
        data,
    })
}
