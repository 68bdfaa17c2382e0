//! Classifying one JSON-RPC 2.0 message: simd-json builds a tape of the body in place, then one
//! pass over the top-level members checks the envelope and picks out `method`, `id` and the
//! payload (`params`, `result` or `error.data`).
//!
//! Every rejection is a [`ParseError`]: -32700 when the body is not JSON, -32600 when it is JSON
//! but not a usable message, with the id whenever it could be read. This file must not know MCP
//! methods or HTTP; it neither allocates per member nor copies the body.

use std::cell::RefCell;
use std::collections::HashSet;

use simd_json::{Buffers, Node, StaticNode, Tape};

use super::id::{Id, OwnedId};
use super::payload::{Payload, Slot};
use super::ErrorCode;

/// Default maximum nesting depth of a body (arrays and objects, the message object counting as
/// one). A deeper body is answered with -32700, before any handler sees it; this also bounds the
/// recursion of everything that later walks the payload (writers, serde).
pub const DEFAULT_MAX_DEPTH: usize = 128;

/// Bodies up to this size leave their simd-json scratch buffers cached on the thread for the
/// next parse; a larger body's buffers are freed after its parse, so one huge body does not pin
/// memory on every worker thread.
const KEEP_BUFFERS_UP_TO: usize = 1 << 20;

/// Objects with at most this many members are checked for a repeated name pairwise, on the
/// stack; a larger object goes through a hash set (one allocation per parse that meets one).
const PAIRWISE_UP_TO: usize = 8;

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
pub fn parse_with<'a>(body: &'a mut [u8], limits: &Limits) -> Result<Message<'a>, ParseError> {
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

thread_local! {
    /// simd-json scratch buffers reused by every parse on this thread, with the depth they
    /// were built for. Touched only inside `build_tape`.
    static BUFFERS: RefCell<Option<(usize, Buffers)>> = const { RefCell::new(None) };
}

fn build_tape<'a>(body: &'a mut [u8], limits: &Limits) -> Result<Tape<'a>, simd_json::Error> {
    let body_len = body.len();
    let max_depth = limits.max_depth;
    BUFFERS.with(|cell| {
        let Ok(mut cached) = cell.try_borrow_mut() else {
            // Not reachable (nothing re-enters parse while it runs); stay correct anyway.
            return simd_json::to_tape_with_buffers(
                body,
                &mut Buffers::with_max_depth(body_len, max_depth),
            );
        };
        if cached.as_ref().is_none_or(|(depth, _)| *depth != max_depth) {
            *cached = Some((max_depth, Buffers::with_max_depth(body_len, max_depth)));
        }
        let result = match cached.as_mut() {
            Some((_, buffers)) => simd_json::to_tape_with_buffers(body, buffers),
            None => simd_json::to_tape_with_buffers(
                body,
                &mut Buffers::with_max_depth(body_len, max_depth),
            ),
        };
        if body_len > KEEP_BUFFERS_UP_TO {
            *cached = None;
        }
        result
    })
}

/// Number of tape nodes a value occupies, itself included.
fn node_span(node: &Node<'_>) -> usize {
    match node {
        Node::Object { count, .. } | Node::Array { count, .. } => count + 1,
        Node::String(_) | Node::Static(_) => 1,
    }
}

/// Iterates `(name, value index)` over the members of the object whose header is at `at`.
fn members<'t, 'a>(
    nodes: &'t [Node<'a>],
    at: usize,
) -> impl Iterator<Item = (&'a str, usize)> + 't {
    let n_members = match nodes.get(at) {
        Some(Node::Object { len, .. }) => *len,
        _ => 0,
    };
    let mut pos = at + 1;
    (0..n_members).map_while(move |_| {
        let Some(Node::String(name)) = nodes.get(pos) else {
            return None;
        };
        let value_idx = pos + 1;
        pos = value_idx + nodes.get(value_idx).map_or(1, node_span);
        Some((*name, value_idx))
    })
}

/// Whether any object of a JSON document repeats a member name: the rule [`parse`] applies to
/// messages, for other JSON bodies (the REST surface's arguments) so every surface reads the
/// same input the same way.
pub fn has_repeated_name(tape: &Tape<'_>) -> bool {
    repeated_name(&tape.0).is_some()
}

/// The tape index of the first object (in document order) in which a member name repeats.
///
/// One pass over the tape: each object's direct members are compared pairwise on the stack
/// when there are at most [`PAIRWISE_UP_TO`] of them (every message envelope, `ping`'s
/// included, so the common path allocates nothing), else through one hash set reused for
/// every large object of the message. Names are compared after unescaping (`"a"` and
/// `"\u0061"` are the same name).
fn repeated_name(nodes: &[Node<'_>]) -> Option<usize> {
    let mut large: Option<HashSet<&str>> = None;
    for (at, node) in nodes.iter().enumerate() {
        let Node::Object { len, .. } = node else {
            continue;
        };
        let n_members = *len;
        if n_members < 2 {
            continue;
        }
        let repeated = if n_members <= PAIRWISE_UP_TO {
            let mut names = [""; PAIRWISE_UP_TO];
            let mut n_seen = 0;
            let mut repeated = false;
            for (name, _) in members(nodes, at) {
                if names.get(..n_seen).is_some_and(|seen| seen.contains(&name)) {
                    repeated = true;
                    break;
                }
                if let Some(slot) = names.get_mut(n_seen) {
                    *slot = name;
                    n_seen += 1;
                }
            }
            repeated
        } else {
            let seen = large.get_or_insert_with(|| HashSet::with_capacity(n_members));
            seen.clear();
            !members(nodes, at).all(|(name, _)| seen.insert(name))
        };
        if repeated {
            return Some(at);
        }
    }
    None
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Parses `input`; `Ok` gives `(kind, method, id JSON text)`, `Err` gives `(code, id text)`.
    fn check(input: &str, expected: Result<(&str, &str, &str), (i32, &str)>) {
        let mut body = input.as_bytes().to_vec();
        let actual = match parse(&mut body) {
            Ok(message) => {
                let kind = match &message {
                    Message::Request { .. } => "request",
                    Message::Notification { .. } => "notification",
                    Message::Response { .. } => "response",
                    Message::ErrorResponse { .. } => "error",
                };
                let id = message.id().map_or("none".to_owned(), |id| id.to_string());
                Ok((kind, message.method().unwrap_or("").to_owned(), id))
            }
            Err(error) => Err((
                error.code.0,
                error.id.map_or("none".to_owned(), |id| id.to_string()),
            )),
        };
        let expected = expected
            .map(|(kind, method, id)| (kind, method.to_owned(), id.to_owned()))
            .map_err(|(code, id)| (code, id.to_owned()));
        assert_eq!(actual, expected, "input: {input}");
    }

    #[test]
    fn valid_messages() {
        check(
            r#"{"jsonrpc":"2.0","id":0,"method":"ping"}"#,
            Ok(("request", "ping", "0")),
        );
        check(
            r#"{"jsonrpc":"2.0","id":"0","method":"ping"}"#,
            Ok(("request", "ping", "\"0\"")),
        );
        check(
            r#"{"jsonrpc":"2.0","id":-1,"method":"m"}"#,
            Ok(("request", "m", "-1")),
        );
        check(
            r#"{"jsonrpc":"2.0","id":9007199254740993,"method":"m"}"#,
            Ok(("request", "m", "9007199254740993")),
        );
        check(
            r#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"m"}"#,
            Ok(("request", "m", "18446744073709551615")),
        );
        check(
            r#"{"jsonrpc":"2.0","id":"a\"b\\u00e9","method":"m"}"#,
            Ok(("request", "m", r#""a\"b\\u00e9""#)),
        );
        check(
            r#"{"jsonrpc":"2.0","id":"\u00e9\n","method":"m"}"#,
            Ok(("request", "m", "\"é\\n\"")),
        );
        check(
            r#" {"method":"tools/call","params":{"name":"x"},"jsonrpc":"2.0","id":7} "#,
            Ok(("request", "tools/call", "7")),
        );
        check(
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":[1,2]}"#,
            Ok(("request", "m", "1")),
        );
        check(
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            Ok(("notification", "notifications/initialized", "none")),
        );
        check(
            r#"{"jsonrpc":"2.0","method":"n","params":{},"x":1}"#,
            Ok(("notification", "n", "none")),
        );
        check(
            r#"{"jsonrpc":"2.0","id":3,"result":{}}"#,
            Ok(("response", "", "3")),
        );
        check(
            r#"{"jsonrpc":"2.0","id":3,"result":null}"#,
            Ok(("response", "", "3")),
        );
        check(
            r#"{"jsonrpc":"2.0","id":"r","error":{"code":-32601,"message":"no"}}"#,
            Ok(("error", "", "\"r\"")),
        );
        check(
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad","data":[1]}}"#,
            Ok(("error", "", "none")),
        );
        // A huge integer elsewhere in the body is valid JSON (read as a float, like serde_json).
        check(
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"n":123456789012345678901234567890}}"#,
            Ok(("request", "m", "1")),
        );
    }

    #[test]
    fn parse_errors() {
        check("", Err((-32700, "none")));
        check("   ", Err((-32700, "none")));
        check("{", Err((-32700, "none")));
        check(
            r#"{"jsonrpc":"2.0","id":1,"method":"m"} x"#,
            Err((-32700, "none")),
        );
        check(
            r#"{"jsonrpc":"2.0","id":1,"method":"m"}{}"#,
            Err((-32700, "none")),
        );
        check(
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\u{0}\"}",
            Err((-32700, "none")),
        );
        check(
            r#"{"jsonrpc":"2.0","id":1,"method":"m",}"#,
            Err((-32700, "none")),
        );
        check(r#"{'jsonrpc':'2.0'}"#, Err((-32700, "none")));
        // Anything but whitespace after the message, a NUL included, is not JSON.
        for tail in [
            "\u{0}",
            "\u{0}{\"zzz\":",
            " \u{0}",
            "\n\u{0}\u{0}",
            "\u{0} ",
            "\u{b}",
            "\u{c}",
        ] {
            check(
                &format!(r#"{{"jsonrpc":"2.0","id":1,"method":"m"}}{tail}"#),
                Err((-32700, "none")),
            );
        }
        check(
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"} \t\r\n",
            Ok(("request", "m", "1")),
        );
        check(
            &format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{}{}}}"#,
                "[".repeat(200),
                "]".repeat(200)
            ),
            Err((-32700, "none")),
        );
        let mut invalid_utf8 =
            br#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":"\xff"}}"#.to_vec();
        assert_eq!(
            parse(&mut invalid_utf8).map(|_| ()).map_err(|e| e.code),
            Err(ErrorCode::PARSE_ERROR)
        );
    }

    #[test]
    fn invalid_requests() {
        check(
            r#"[{"jsonrpc":"2.0","id":1,"method":"m"}]"#,
            Err((-32600, "none")),
        );
        check("[]", Err((-32600, "none")));
        check("1", Err((-32600, "none")));
        check(r#""x""#, Err((-32600, "none")));
        check("null", Err((-32600, "none")));
        check(r#"{"id":1,"method":"m"}"#, Err((-32600, "1")));
        check(
            r#"{"jsonrpc":"1.0","id":"a","method":"m"}"#,
            Err((-32600, "\"a\"")),
        );
        check(r#"{"jsonrpc":2.0,"id":1,"method":"m"}"#, Err((-32600, "1")));
        check(
            r#"{"jsonrpc":"2.0 ","id":1,"method":"m"}"#,
            Err((-32600, "1")),
        );
        check(r#"{"jsonrpc":"2.0","id":1}"#, Err((-32600, "1")));
        check(r#"{"jsonrpc":"2.0","id":1,"method":5}"#, Err((-32600, "1")));
        check(
            r#"{"jsonrpc":"2.0","id":1,"method":null}"#,
            Err((-32600, "1")),
        );
        check(
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":"x"}"#,
            Err((-32600, "1")),
        );
        check(
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":null}"#,
            Err((-32600, "1")),
        );
        check(
            r#"{"jsonrpc":"2.0","method":"m","params":3}"#,
            Err((-32600, "none")),
        );
        check(
            r#"{"jsonrpc":"2.0","id":null,"method":"m"}"#,
            Err((-32600, "none")),
        );
        check(
            r#"{"jsonrpc":"2.0","id":1.5,"method":"m"}"#,
            Err((-32600, "none")),
        );
        check(
            r#"{"jsonrpc":"2.0","id":1e3,"method":"m"}"#,
            Err((-32600, "none")),
        );
        check(
            r#"{"jsonrpc":"2.0","id":1.0,"method":"m"}"#,
            Err((-32600, "none")),
        );
        check(
            r#"{"jsonrpc":"2.0","id":true,"method":"m"}"#,
            Err((-32600, "none")),
        );
        check(
            r#"{"jsonrpc":"2.0","id":{},"method":"m"}"#,
            Err((-32600, "none")),
        );
        check(
            r#"{"jsonrpc":"2.0","id":[1],"method":"m"}"#,
            Err((-32600, "none")),
        );
        check(
            r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"m"}"#,
            Err((-32600, "none")),
        );
        check(
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"m"}"#,
            Err((-32600, "none")),
        );
        check(
            r#"{"jsonrpc":"2.0","id":1,"method":"m","method":"n"}"#,
            Err((-32600, "none")),
        );
        check(
            r#"{"jsonrpc":"2.0","id":1,"method":"m","result":{}}"#,
            Err((-32600, "1")),
        );
        check(
            r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}"#,
            Err((-32600, "1")),
        );
        check(r#"{"jsonrpc":"2.0","result":{}}"#, Err((-32600, "none")));
        check(
            r#"{"jsonrpc":"2.0","id":null,"result":{}}"#,
            Err((-32600, "none")),
        );
        check(
            r#"{"jsonrpc":"2.0","error":{"code":1,"message":"x"}}"#,
            Err((-32600, "none")),
        );
        check(
            r#"{"jsonrpc":"2.0","id":2,"error":"x"}"#,
            Err((-32600, "2")),
        );
        check(
            r#"{"jsonrpc":"2.0","id":2,"error":{"message":"x"}}"#,
            Err((-32600, "2")),
        );
        check(
            r#"{"jsonrpc":"2.0","id":2,"error":{"code":1.5,"message":"x"}}"#,
            Err((-32600, "2")),
        );
        check(
            r#"{"jsonrpc":"2.0","id":2,"error":{"code":1}}"#,
            Err((-32600, "2")),
        );
        check(
            r#"{"jsonrpc":"2.0","id":2,"error":{"code":1,"message":3}}"#,
            Err((-32600, "2")),
        );
        check(
            r#"{"jsonrpc":"2.0","id":2,"error":{"code":1,"code":2,"message":"x"}}"#,
            Err((-32600, "2")),
        );
        check(
            r#"{"jsonrpc":"2.0","id":2,"error":{"code":18446744073709551615,"message":"x"}}"#,
            Err((-32600, "2")),
        );
        check(r#"{"jsonrpc":"2.0"}"#, Err((-32600, "none")));
        check("{}", Err((-32600, "none")));
    }

    #[test]
    fn repeated_names_are_refused_at_any_depth() {
        // Top level, whatever the member: no id (it may be the repeated one).
        check(
            r#"{"jsonrpc":"2.0","id":1,"method":"m","x":1,"x":2}"#,
            Err((-32600, "none")),
        );
        // Inside params, arguments, arrays and error data: the id is readable, so it is carried.
        check(
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_customer","name":"place_order"}}"#,
            Err((-32600, "1")),
        );
        check(
            r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"t","arguments":{"amount":1,"amount":1000}}}"#,
            Err((-32600, "\"a\"")),
        );
        check(
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":[{"k":[{"z":1,"y":2,"z":3}]}]}"#,
            Err((-32600, "1")),
        );
        check(
            r#"{"jsonrpc":"2.0","method":"n","params":{"a":{},"a":{}}}"#,
            Err((-32600, "none")),
        );
        check(
            r#"{"jsonrpc":"2.0","id":2,"error":{"code":1,"message":"x","data":{"d":1,"d":1}}}"#,
            Err((-32600, "2")),
        );
        check(
            r#"{"jsonrpc":"2.0","id":3,"result":{"r":1,"r":2}}"#,
            Err((-32600, "3")),
        );
        // Names compare after unescaping.
        check(
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1,"\u0061":2}}"#,
            Err((-32600, "1")),
        );
        // Objects past the pairwise size go through the hash set; the repeat may come last.
        let members: Vec<String> = (0..40).map(|i| format!(r#""k{i}":{i}"#)).collect();
        let large = members.join(",");
        check(
            &format!(r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{{{large}}}}}"#),
            Ok(("request", "m", "1")),
        );
        check(
            &format!(r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{{{large},"k0":0}}}}"#),
            Err((-32600, "1")),
        );
        check(
            &format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{{"big":{{{large}}},"small":{{"a":1,"a":1}}}}}}"#
            ),
            Err((-32600, "1")),
        );
        // Exactly the pairwise size, the repeat in the last slot.
        check(
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"a":8}}"#,
            Err((-32600, "1")),
        );
        // The same name in different objects is no repeat.
        check(
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":{"a":1},"b":[{"a":2},{"a":3}]}}"#,
            Ok(("request", "m", "1")),
        );
    }

    #[test]
    fn depth_limit_is_configurable() {
        let nested = format!(
            r#"{{"jsonrpc":"2.0","method":"m","params":{}{}}}"#,
            "[".repeat(20),
            "]".repeat(20)
        );
        let mut body = nested.clone().into_bytes();
        assert!(parse(&mut body).is_ok());
        let mut body = nested.into_bytes();
        let err = parse_with(&mut body, &Limits { max_depth: 10 })
            .map(|_| ())
            .unwrap_err();
        assert_eq!(err.code, ErrorCode::PARSE_ERROR);
        // The cached buffers switch back to the default depth.
        let mut body =
            br#"{"jsonrpc":"2.0","method":"m","params":[[[[[[[[[[[[]]]]]]]]]]]]}"#.to_vec();
        assert!(parse(&mut body).is_ok());
    }

    #[test]
    fn a_body_above_the_cache_limit_parses_and_frees_its_buffers() {
        let big = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{{"s":"{}"}}}}"#,
            "x".repeat(KEEP_BUFFERS_UP_TO)
        );
        let mut body = big.into_bytes();
        assert!(matches!(
            parse(&mut body),
            Ok(Message::Request {
                params: Some(_),
                ..
            })
        ));
        assert!(BUFFERS.with(|cell| cell.borrow().is_none()));
        let mut body = br#"{"jsonrpc":"2.0","id":2,"method":"m"}"#.to_vec();
        assert_eq!(parse(&mut body).ok().and_then(|m| m.id()), Some(Id::Int(2)));
        assert!(BUFFERS.with(|cell| cell.borrow().is_some()));
    }

    #[test]
    fn params_are_reachable_without_reparsing() {
        use simd_json::prelude::*;

        #[derive(serde::Deserialize, Debug, PartialEq)]
        struct Call<'a> {
            name: &'a str,
            arguments: std::collections::BTreeMap<&'a str, i64>,
        }
        let mut body = br#"{"params":{"name":"search","arguments":{"q":1}},"jsonrpc":"2.0","id":"x","method":"tools/call"}"#.to_vec();
        let Ok(Message::Request {
            id,
            method,
            params: Some(params),
        }) = parse(&mut body)
        else {
            panic!("not a request with params");
        };
        assert_eq!((id, method), (Id::Str("x"), "tools/call"));
        assert_eq!(params.value().get_str("name"), Some("search"));
        assert_eq!(
            params.to_json_vec(),
            br#"{"name":"search","arguments":{"q":1}}"#
        );
        let call: Call<'_> = params.deserialize().unwrap();
        assert_eq!(call.name, "search");
        assert_eq!(call.arguments.get("q"), Some(&1));

        let mut body =
            br#"{"jsonrpc":"2.0","id":null,"error":{"data":{"k":[true]},"code":-1,"message":"m"}}"#
                .to_vec();
        let Ok(Message::ErrorResponse {
            data: Some(data),
            code: -1,
            ..
        }) = parse(&mut body)
        else {
            panic!("not an error response with data");
        };
        assert_eq!(data.to_json_vec(), br#"{"k":[true]}"#);
        let data: serde_json::Value = data.deserialize().unwrap();
        assert_eq!(data, serde_json::json!({"k": [true]}));
    }
}
