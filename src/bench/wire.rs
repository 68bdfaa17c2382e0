//! Bytes on the wire: the request body and headers of each era and method (built once per
//! virtual client, only the JSON-RPC id changes per request), the error kinds, and the answer
//! check: an allocation-free scan of a JSON-RPC message's top-level keys and an incremental
//! reader of JSON or SSE answers (SSE through [`crate::sse::decode::Decoder`]).
//!
//! Must not do IO and must not build JSON value trees on the per-request path.

use bytes::{BufMut, Bytes, BytesMut};
use http::header::{ACCEPT, CONTENT_TYPE, HOST};
use http::{HeaderMap, HeaderName, HeaderValue, Method as HttpMethod, Request, Uri};
use http_body_util::Full;

use super::settings::{Era, Method, Protocol, Settings};
use crate::sse::decode::Decoder;

/// The handshake-era protocol version requested in `initialize`.
pub(crate) const HANDSHAKE_VERSION: &str = "2025-11-25";
/// The stateless-era protocol version.
pub(crate) const STATELESS_VERSION: &str = "2026-07-28";
/// `Mcp-Session-Id`.
pub(crate) const SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
/// `MCP-Protocol-Version`.
pub(crate) const PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
/// `Mcp-Method` (stateless era).
pub(crate) const MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
/// `Mcp-Name` (stateless era, `tools/call`).
pub(crate) const MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");
/// The stateless-era `_meta` envelope every 2026-07-28 request carries.
const STATELESS_META: &str = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"sluice-bench","version":"1"}}"#;
/// The `initialize` params: no client capabilities (a request opts into extensions with
/// `--meta`).
const INITIALIZE_PARAMS: &str = r#"{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"sluice-bench","version":"1"}}"#;

/// Why one request did not count as OK.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ErrorKind {
    /// A status other than the expected one.
    Http(u16),
    /// A JSON-RPC error answer with this code.
    JsonRpc(i64),
    /// No complete answer within `--timeout`.
    Timeout,
    /// The TCP connection or HTTP handshake failed.
    Connect,
    /// The connection broke while sending or reading.
    Io,
    /// Bad framing, or the answer ended without the request's final message.
    Protocol,
    /// A `tools/call` result with `"isError": true` (the tool failed; JSON-RPC succeeded).
    Tool,
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ErrorKind::Http(status) => write!(f, "http:{status}"),
            ErrorKind::JsonRpc(code) => write!(f, "jsonrpc:{code}"),
            ErrorKind::Timeout => f.write_str("timeout"),
            ErrorKind::Connect => f.write_str("connect"),
            ErrorKind::Io => f.write_str("io"),
            ErrorKind::Protocol => f.write_str("protocol"),
            ErrorKind::Tool => f.write_str("tool"),
        }
    }
}

// === requests ===

/// One virtual client's request: body prefix and suffix around the id, and headers, all built
/// once; [`RequestTemplate::build`] writes the id into a reused buffer.
#[derive(Debug, Clone)]
pub(crate) struct RequestTemplate {
    uri: Uri,
    headers: HeaderMap,
    prefix: Bytes,
    suffix: Bytes,
}

impl RequestTemplate {
    /// The run's request; `session` is the handshake-era session id (when the server gave one)
    /// and the negotiated protocol version.
    pub(crate) fn new(settings: &Settings, session: Option<&Session>) -> Self {
        let method = settings.method;
        let mut params = String::new();
        if method == Method::ToolsCall {
            let name = serde_json::to_string(settings.tool.as_deref().unwrap_or_default())
                .unwrap_or_else(|_| "\"\"".to_owned());
            params.push_str(&format!(r#""name":{name},"arguments":{}"#, settings.args));
        }
        let meta = match (settings.era, &settings.meta) {
            (Era::Stateless, None) => Some(STATELESS_META.to_owned()),
            (Era::Stateless, Some(extra)) => {
                let mut envelope: serde_json::Map<String, serde_json::Value> =
                    serde_json::from_str(STATELESS_META).unwrap_or_default();
                envelope.extend(extra.iter().map(|(k, v)| (k.clone(), v.clone())));
                serde_json::to_string(&envelope).ok()
            }
            (Era::Handshake, Some(extra)) => serde_json::to_string(extra).ok(),
            (Era::Handshake, None) => None,
        };
        if let Some(meta) = meta {
            if !params.is_empty() {
                params.push(',');
            }
            params.push_str(r#""_meta":"#);
            params.push_str(&meta);
        }
        let suffix = if params.is_empty() {
            format!(r#","method":"{}"}}"#, method.name())
        } else {
            format!(r#","method":"{}","params":{{{params}}}}}"#, method.name())
        };
        let mut headers = base_headers(settings);
        match settings.era {
            Era::Handshake => {
                if let Some(session) = session {
                    if let Some(id) = &session.id {
                        headers.insert(SESSION_ID, id.clone());
                    }
                    headers.insert(PROTOCOL_VERSION, session.version.clone());
                }
            }
            Era::Stateless => {
                headers.insert(
                    PROTOCOL_VERSION,
                    HeaderValue::from_static(STATELESS_VERSION),
                );
                headers.insert(MCP_METHOD, HeaderValue::from_static(method.name()));
                if let Some(tool) = settings
                    .tool
                    .as_deref()
                    .and_then(|t| HeaderValue::from_str(t).ok())
                {
                    headers.insert(MCP_NAME, tool);
                }
            }
        }
        Self {
            uri: request_uri(settings),
            headers,
            prefix: Bytes::from_static(br#"{"jsonrpc":"2.0","id":"#),
            suffix: Bytes::from(suffix),
        }
    }

    /// The request with JSON-RPC id `id`; the body is written into `buf` (reused: its space comes
    /// back once the previous request's body is dropped).
    pub(crate) fn build(&self, id: u64, buf: &mut BytesMut) -> Request<Full<Bytes>> {
        buf.clear();
        buf.reserve(self.prefix.len() + 20 + self.suffix.len());
        buf.put_slice(&self.prefix);
        put_u64(buf, id);
        buf.put_slice(&self.suffix);
        let mut request = Request::new(Full::new(buf.split().freeze()));
        *request.method_mut() = HttpMethod::POST;
        *request.uri_mut() = self.uri.clone();
        *request.headers_mut() = self.headers.clone();
        request
    }
}

/// A handshake-era session as the server set it up.
#[derive(Debug, Clone)]
pub(crate) struct Session {
    /// `Mcp-Session-Id`, when the server issued one (a server may run without sessions).
    pub id: Option<HeaderValue>,
    /// The negotiated protocol version, sent as `MCP-Protocol-Version`.
    pub version: HeaderValue,
}

/// Headers every request of a run carries: `Host` (HTTP/1.1), content type, `Accept`, extras.
pub(crate) fn base_headers(settings: &Settings) -> HeaderMap {
    let mut headers = HeaderMap::new();
    if settings.protocol == Protocol::Http1 {
        if let Ok(host) = HeaderValue::from_str(&settings.target.authority) {
            headers.insert(HOST, host);
        }
    }
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(ACCEPT, HeaderValue::from_static(settings.accept.header()));
    for (name, value) in &settings.headers {
        headers.append(name.clone(), value.clone());
    }
    headers
}

/// Origin form for HTTP/1.1, absolute form for h2.
pub(crate) fn request_uri(settings: &Settings) -> Uri {
    match settings.protocol {
        Protocol::Http1 => settings.target.path.clone(),
        Protocol::H2 => settings.target.absolute.clone(),
    }
}

/// The `initialize` request body (id 0).
pub(crate) fn initialize_body() -> Bytes {
    Bytes::from(format!(
        r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{INITIALIZE_PARAMS}}}"#
    ))
}

/// The `notifications/initialized` body.
pub(crate) const INITIALIZED_BODY: &[u8] =
    br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// Decimal digits of `n` appended to `buf`.
fn put_u64(buf: &mut BytesMut, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    buf.put_slice(&digits[at..]);
}

/// Decimal digits of `n` in a stack buffer: what the answer's id must be.
#[derive(Debug, Clone, Copy)]
pub(crate) struct IdText {
    digits: [u8; 20],
    start: usize,
}

impl IdText {
    pub(crate) fn new(mut n: u64) -> Self {
        let mut digits = [0u8; 20];
        let mut start = digits.len();
        loop {
            start -= 1;
            digits[start] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        Self { digits, start }
    }

    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.digits[self.start..]
    }
}

// === answer scan ===

/// What the top level of one JSON-RPC message holds (raw bytes, not unescaped).
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Scan<'a> {
    /// The raw `id` value.
    pub id: Option<&'a [u8]>,
    /// The raw `result` value.
    pub result: Option<&'a [u8]>,
    /// The raw `error` value.
    pub error: Option<&'a [u8]>,
    /// A `method` member is present (a request or notification, not an answer).
    pub method: bool,
}

/// [`scan`]; without `need_result`, stops at a `result` member that follows the `id` (its
/// value, left empty, is not walked: a large result costs nothing to judge when the server
/// writes the id first, as servers do).
fn scan_with(text: &[u8], need_result: bool) -> Option<Scan<'_>> {
    let mut found = Scan::default();
    let mut at = skip_ws(text, 0);
    if text.get(at) != Some(&b'{') {
        return None;
    }
    at = skip_ws(text, at + 1);
    if text.get(at) == Some(&b'}') {
        return (skip_ws(text, at + 1) == text.len()).then_some(found);
    }
    loop {
        if text.get(at) != Some(&b'"') {
            return None;
        }
        let key_end = skip_string(text, at)?;
        let key = &text[at + 1..key_end - 1];
        at = skip_ws(text, key_end);
        if text.get(at) != Some(&b':') {
            return None;
        }
        let value_start = skip_ws(text, at + 1);
        if !need_result && key == b"result" && found.id.is_some() && !found.method {
            found.result = Some(&text[value_start..value_start]);
            return Some(found);
        }
        let value_end = skip_value(text, value_start)?;
        let value = &text[value_start..value_end];
        match key {
            b"id" => found.id = Some(value),
            b"result" => found.result = Some(value),
            b"error" => found.error = Some(value),
            b"method" => found.method = true,
            _ => {}
        }
        at = skip_ws(text, value_end);
        match text.get(at) {
            Some(b',') => at = skip_ws(text, at + 1),
            Some(b'}') => {
                return (skip_ws(text, at + 1) == text.len()).then_some(found);
            }
            _ => return None,
        }
    }
}

/// The `code` of a raw JSON-RPC error object.
pub(crate) fn error_code(error: &[u8]) -> Option<i64> {
    std::str::from_utf8(member(error, b"code")?)
        .ok()?
        .parse()
        .ok()
}

/// The raw value of the top-level member `name` of a raw JSON object (keys compared raw).
pub(crate) fn member<'a>(object: &'a [u8], name: &[u8]) -> Option<&'a [u8]> {
    let mut at = skip_ws(object, 0);
    if object.get(at) != Some(&b'{') {
        return None;
    }
    at = skip_ws(object, at + 1);
    while object.get(at) == Some(&b'"') {
        let key_end = skip_string(object, at)?;
        let key = &object[at + 1..key_end - 1];
        at = skip_ws(object, key_end);
        if object.get(at) != Some(&b':') {
            return None;
        }
        let value_start = skip_ws(object, at + 1);
        let value_end = skip_value(object, value_start)?;
        if key == name {
            return Some(&object[value_start..value_end]);
        }
        at = skip_ws(object, value_end);
        if object.get(at) == Some(&b',') {
            at = skip_ws(object, at + 1);
        }
    }
    None
}

fn skip_ws(text: &[u8], mut at: usize) -> usize {
    while let Some(b' ' | b'\n' | b'\r' | b'\t') = text.get(at) {
        at += 1;
    }
    at
}

/// End (one past the closing quote) of the string starting at `at`.
fn skip_string(text: &[u8], at: usize) -> Option<usize> {
    let mut pos = at + 1;
    loop {
        let found = pos + memchr::memchr2(b'"', b'\\', text.get(pos..)?)?;
        if text[found] == b'"' {
            return Some(found + 1);
        }
        pos = found + 2;
    }
}

/// End of the value starting at `at`.
fn skip_value(text: &[u8], at: usize) -> Option<usize> {
    match text.get(at)? {
        b'"' => skip_string(text, at),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut pos = at;
            while let Some(&byte) = text.get(pos) {
                match byte {
                    b'"' => {
                        pos = skip_string(text, pos)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(pos + 1);
                        }
                    }
                    _ => {}
                }
                pos += 1;
            }
            None
        }
        _ => {
            let end = text[at..]
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t'))
                .map_or(text.len(), |n| at + n);
            (end > at).then_some(end)
        }
    }
}

/// What one message says about the request with id `id`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Not the request's answer (a notification, a server request, another id).
    Other,
    /// The request's answer carries `result`.
    Ok,
    /// The request's answer is an error (or is malformed).
    Err(ErrorKind),
}

/// Judges one JSON-RPC message against the request's id; with `tool_call`, a result with
/// `"isError": true` is an error of kind [`ErrorKind::Tool`].
pub(crate) fn judge(message: &[u8], id: &[u8], tool_call: bool) -> Verdict {
    let Some(scan) = scan_with(message, tool_call) else {
        return Verdict::Err(ErrorKind::Protocol);
    };
    if scan.method || scan.id.is_none_or(|got| got != id) {
        return Verdict::Other;
    }
    match (scan.result, scan.error) {
        (Some(result), None) => {
            if tool_call && member(result, b"isError") == Some(&b"true"[..]) {
                Verdict::Err(ErrorKind::Tool)
            } else {
                Verdict::Ok
            }
        }
        (None, Some(error)) => match error_code(error) {
            Some(code) => Verdict::Err(ErrorKind::JsonRpc(code)),
            None => Verdict::Err(ErrorKind::Protocol),
        },
        _ => Verdict::Err(ErrorKind::Protocol),
    }
}

// === answers ===

/// How the answer body is framed, from its `Content-Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    Json,
    Sse,
}

impl Framing {
    /// `None` for a media type that is neither.
    pub(crate) fn from_content_type(value: Option<&HeaderValue>) -> Option<Self> {
        let value = value?.as_bytes();
        let essence = value
            .split(|&b| b == b';')
            .next()
            .unwrap_or_default()
            .trim_ascii();
        if essence.eq_ignore_ascii_case(b"application/json") {
            Some(Framing::Json)
        } else if essence.eq_ignore_ascii_case(b"text/event-stream") {
            Some(Framing::Sse)
        } else {
            None
        }
    }
}

/// Reads one answer body chunk by chunk: counts bytes and SSE events and finds the verdict.
/// Reused from request to request (its buffer keeps its capacity).
#[derive(Debug)]
pub(crate) struct AnswerReader {
    buf: BytesMut,
    decoder: Decoder,
    framing: Framing,
    id: IdText,
    /// Answers are `tools/call` results (`isError` is checked).
    tool_call: bool,
    verdict: Verdict,
    /// Keep the SSE message the verdict came from (set-up steps read it; the load loop does not,
    /// so the buffer's space comes back for the next answer).
    keep_final: bool,
    /// The SSE message the verdict came from, when kept (a copy: events borrow `buf`).
    last: Option<Vec<u8>>,
    /// Body bytes of the current answer.
    pub bytes: u64,
    /// SSE events of the current answer (0 for JSON).
    pub events: u64,
}

impl Default for AnswerReader {
    fn default() -> Self {
        Self {
            buf: BytesMut::with_capacity(8 * 1024),
            decoder: Decoder::new(),
            framing: Framing::Json,
            id: IdText::new(0),
            tool_call: false,
            verdict: Verdict::Other,
            keep_final: false,
            last: None,
            bytes: 0,
            events: 0,
        }
    }
}

impl AnswerReader {
    /// Sets whether answers are `tools/call` results (checked for `"isError": true`) and
    /// whether the final message is kept for [`AnswerReader::final_message`].
    pub(crate) fn set_mode(&mut self, tool_call: bool, keep_final: bool) {
        self.tool_call = tool_call;
        self.keep_final = keep_final;
    }

    /// Starts reading the answer to request `id`.
    pub(crate) fn start(&mut self, framing: Framing, id: u64) {
        self.buf.clear();
        if framing == Framing::Sse {
            self.decoder = Decoder::new();
        }
        self.framing = framing;
        self.id = IdText::new(id);
        self.verdict = Verdict::Other;
        if let Some(last) = &mut self.last {
            last.clear();
        }
        self.bytes = 0;
        self.events = 0;
    }

    /// Feeds one body chunk.
    pub(crate) fn feed(&mut self, chunk: &[u8]) {
        self.bytes += chunk.len() as u64;
        self.buf.extend_from_slice(chunk);
        if self.framing == Framing::Sse {
            self.drain_events();
        }
    }

    /// Reads every complete event in the buffer with the borrowed decoder: no reference count
    /// and no copy per event (only the kept final message is copied, in set-up steps).
    fn drain_events(&mut self) {
        let (verdict, last, events) = (&mut self.verdict, &mut self.last, &mut self.events);
        let (id, tool_call, keep_final) = (self.id.as_bytes(), self.tool_call, self.keep_final);
        let decoded = self.decoder.decode_with(&mut self.buf, |event| {
            *events += 1;
            // The first answer wins; events after it are still counted.
            if *verdict == Verdict::Other
                && !event.data.is_empty()
                && event.event_type() == b"message"
            {
                *verdict = judge(event.data, id, tool_call);
                if keep_final && *verdict != Verdict::Other {
                    let kept = last.get_or_insert_with(Vec::new);
                    kept.clear();
                    kept.extend_from_slice(event.data);
                }
            }
        });
        if decoded.is_err() {
            self.verdict = Verdict::Err(ErrorKind::Protocol);
            self.buf.clear();
        }
    }

    /// The body ended: the verdict on the whole answer.
    pub(crate) fn finish(&mut self) -> Result<(), ErrorKind> {
        let verdict = match self.framing {
            Framing::Json => judge(&self.buf, self.id.as_bytes(), self.tool_call),
            Framing::Sse => self.verdict,
        };
        match verdict {
            Verdict::Ok => Ok(()),
            Verdict::Err(kind) => Err(kind),
            Verdict::Other => Err(ErrorKind::Protocol),
        }
    }

    /// The answer's final message (after [`AnswerReader::finish`]; SSE answers only when kept,
    /// see [`AnswerReader::set_mode`]), for set-up steps that read a field of it.
    pub(crate) fn final_message(&self) -> Option<&[u8]> {
        match self.framing {
            Framing::Json => Some(&self.buf),
            Framing::Sse => self.last.as_deref().filter(|last| !last.is_empty()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(message: &str, want: Verdict) {
        assert_eq!(judge(message.as_bytes(), b"7", true), want, "{message}");
    }

    #[test]
    fn the_verdict_follows_the_answer_for_this_id() {
        check(r#"{"jsonrpc":"2.0","id":7,"result":{}}"#, Verdict::Ok);
        check(
            r#" { "result" : {"a":[1,"}",{"b":"\"x"}]} , "id" : 7 , "jsonrpc":"2.0"} "#,
            Verdict::Ok,
        );
        check(
            r#"{"jsonrpc":"2.0","id":7,"error":{"message":"no, \"tool\"","code":-32602}}"#,
            Verdict::Err(ErrorKind::JsonRpc(-32602)),
        );
        check(r#"{"jsonrpc":"2.0","id":8,"result":{}}"#, Verdict::Other);
        check(r#"{"jsonrpc":"2.0","id":"7","result":{}}"#, Verdict::Other);
        check(
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#,
            Verdict::Other,
        );
        check(
            r#"{"jsonrpc":"2.0","id":7,"method":"sampling/createMessage"}"#,
            Verdict::Other,
        );
        check(
            r#"{"jsonrpc":"2.0","id":7}"#,
            Verdict::Err(ErrorKind::Protocol),
        );
        check(
            r#"{"jsonrpc":"2.0","id":7,"result":{}"#,
            Verdict::Err(ErrorKind::Protocol),
        );
        check(
            r#"{"jsonrpc":"2.0","id":7,"result":{}}x"#,
            Verdict::Err(ErrorKind::Protocol),
        );
        check(r#"{"id":7,"result":"\"#, Verdict::Err(ErrorKind::Protocol));
        check("", Verdict::Err(ErrorKind::Protocol));
        check("[]", Verdict::Err(ErrorKind::Protocol));
        check(
            r#"{"id":7,"error":{"message":"x"}}"#,
            Verdict::Err(ErrorKind::Protocol),
        );
        check(
            r#"{"id":7,"result":{"content":[],"isError":true}}"#,
            Verdict::Err(ErrorKind::Tool),
        );
        check(r#"{"id":7,"result":{"isError":false}}"#, Verdict::Ok);
        check(
            r#"{"id":7,"result":{"content":[{"isError":true}]}}"#,
            Verdict::Ok,
        );
        assert_eq!(
            judge(br#"{"id":7,"result":{"isError":true}}"#, b"7", false),
            Verdict::Ok,
            "isError is only looked at for tools/call"
        );
        // Outside tools/call a result after the id is not walked; before the id it is.
        let fast = |m: &str| judge(m.as_bytes(), b"7", false);
        assert_eq!(
            fast(r#"{"jsonrpc":"2.0","id":7,"result":{"big":[1,2,"#),
            Verdict::Ok
        );
        assert_eq!(fast(r#"{"id":8,"result":{}}"#), Verdict::Other);
        assert_eq!(fast(r#"{"result":{},"id":7}"#), Verdict::Ok);
        assert_eq!(
            fast(r#"{"result":{"a":[},"id":7}"#),
            Verdict::Err(ErrorKind::Protocol)
        );
        assert_eq!(
            fast(r#"{"id":7,"error":{"code":-32000,"message":"m"}}"#),
            Verdict::Err(ErrorKind::JsonRpc(-32000))
        );
    }

    fn settings(era: &str, method: &str, h2: bool) -> Settings {
        let mut flags = super::super::settings::Flags {
            url: "http://127.0.0.1:9/mcp".into(),
            era: Some(era.into()),
            method: Some(method.into()),
            h2,
            ..Default::default()
        };
        if method == "tools/call" {
            flags.tool = Some("get_customer".into());
            flags.args = Some(r#"{"id":"c-100"}"#.into());
        }
        Settings::from_flags(flags).unwrap()
    }

    fn body(request: Request<Full<Bytes>>) -> (Request<()>, String) {
        use http_body_util::BodyExt;
        let (parts, body) = request.into_parts();
        let bytes = futures_util::FutureExt::now_or_never(body.collect())
            .unwrap()
            .unwrap()
            .to_bytes();
        (
            Request::from_parts(parts, ()),
            String::from_utf8(bytes.to_vec()).unwrap(),
        )
    }

    #[test]
    fn requests_carry_the_era_and_only_the_id_changes() {
        let session = Session {
            id: Some(HeaderValue::from_static("abc")),
            version: HeaderValue::from_static(HANDSHAKE_VERSION),
        };
        let template = RequestTemplate::new(&settings("handshake", "ping", false), Some(&session));
        let mut buf = BytesMut::new();
        let (head, text) = body(template.build(41, &mut buf));
        assert_eq!(text, r#"{"jsonrpc":"2.0","id":41,"method":"ping"}"#);
        assert_eq!(head.uri(), "/mcp");
        assert_eq!(head.headers()["host"], "127.0.0.1:9");
        assert_eq!(head.headers()["mcp-session-id"], "abc");
        assert_eq!(head.headers()["mcp-protocol-version"], "2025-11-25");
        let (_, text) = body(template.build(18446744073709551615, &mut buf));
        assert_eq!(
            text,
            r#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"ping"}"#
        );

        let mut stateless = settings("stateless", "tools/call", true);
        stateless.meta = serde_json::from_str(r#"{"x/y":{"z":1}}"#).unwrap();
        let template = RequestTemplate::new(&stateless, None);
        let (head, text) = body(template.build(0, &mut buf));
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["params"]["_meta"]["x/y"]["z"], 1);
        assert_eq!(value["id"], 0);
        assert_eq!(value["params"]["name"], "get_customer");
        assert_eq!(value["params"]["arguments"]["id"], "c-100");
        assert_eq!(
            value["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
            STATELESS_VERSION
        );
        assert_eq!(head.uri(), "http://127.0.0.1:9/mcp");
        assert!(head.headers().get("host").is_none());
        assert_eq!(head.headers()["mcp-method"], "tools/call");
        assert_eq!(head.headers()["mcp-name"], "get_customer");
        assert!(head.headers().get("mcp-session-id").is_none());
    }

    #[test]
    fn sse_answers_are_read_in_any_chunking() {
        let stream = b"id: p1\ndata: \n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"n\"}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\n\
data: \"result\":{}}\n\n";
        for split in 0..stream.len() {
            let mut reader = AnswerReader::default();
            reader.start(Framing::Sse, 3);
            reader.feed(&stream[..split]);
            reader.feed(&stream[split..]);
            assert_eq!(reader.finish(), Ok(()), "split at {split}");
            assert_eq!(reader.events, 3);
            assert_eq!(reader.bytes, stream.len() as u64);
        }
        let mut reader = AnswerReader::default();
        reader.start(Framing::Sse, 3);
        reader.feed(b"data: {\"jsonrpc\":\"2.0\",\"method\":\"n\"}\n\n");
        assert_eq!(
            reader.finish(),
            Err(ErrorKind::Protocol),
            "no final message"
        );
        reader.start(Framing::Json, 5);
        reader.feed(br#"{"jsonrpc":"2.0","id":5,"error":{"code":-32601,"message":"m"}}"#);
        assert_eq!(reader.finish(), Err(ErrorKind::JsonRpc(-32601)));
        assert_eq!(reader.events, 0);
    }

    #[test]
    fn content_types_pick_the_framing() {
        let f = |v: &'static str| Framing::from_content_type(Some(&HeaderValue::from_static(v)));
        assert_eq!(f("application/json"), Some(Framing::Json));
        assert_eq!(f("Application/JSON; charset=utf-8"), Some(Framing::Json));
        assert_eq!(f("text/event-stream"), Some(Framing::Sse));
        assert_eq!(f("text/html"), None);
        assert_eq!(Framing::from_content_type(None), None);
    }
}
