//! `hyper-limit`: the minimal hyper server the e2e benchmark calls the limit. Every POST has its
//! body read in full (as any handler must) and is answered as `benches/e2e_loopback.rs`'s `hyper`
//! baseline answers: 200, `content-type: text/event-stream`, `cache-control: no-cache`,
//! `x-accel-buffering: no`, and one `event: message` frame holding sluice's `ping` answer as a
//! body of unknown length (chunked on HTTP/1.1, the framing sluice uses for SSE answers).
//!
//! One difference from that baseline: the answer echoes the request's JSON-RPC id (found by a
//! byte search, copied into one small buffer), so the bytes are exactly sluice's `ping` answer for
//! that request, and `sluice bench`, which counts an answer only when its id matches, can drive
//! it. For the same reason a JSON-RPC notification (`"method":"notifications/`) is answered 202
//! with no body, as MCP requires; everything else (an `initialize` included) gets the ping frame,
//! with no `Mcp-Session-Id` unless `--session-id ID` is given, so the bench's handshake-era client
//! runs sessionless against it. No JSON is parsed.
//!
//! A GET that accepts `text/event-stream` gets a bare SSE response held open forever (one `: open`
//! comment, then nothing, never an end): the per-connection memory floor `memory.sh` compares
//! sluice's idle GET streams with. Anything else: 405.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use clap::Parser;
use http::header::{ACCEPT, CACHE_CONTROL, CONTENT_TYPE};
use http::{HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::{Frame, Incoming};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The answer to every request is sluice's `ping` answer in one SSE frame:
/// `FRAME_HEAD`, the request's id, `FRAME_TAIL`.
const FRAME_HEAD: &[u8] = b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":";
const FRAME_TAIL: &[u8] = b",\"result\":{}}\n\n";
/// The id answered when the request's cannot be found.
const NULL_ID: &[u8] = b"null";
/// Longest id echoed; a longer one is answered as `null`.
const MAX_ID: usize = 256;
/// The first and only bytes of a held-open GET stream.
const OPEN_COMMENT: &[u8] = b": open\n\n";

/// The minimal hyper server (the limit) for sluice's e2e benchmark.
#[derive(Debug, Parser)]
#[command(name = "hyper-limit")]
struct Cli {
    #[command(flatten)]
    common: sluice_e2e_peers::Common,
    /// Send `Mcp-Session-Id: ID` on answers to `initialize`, so a handshake-era client gets a
    /// session (the server keeps no state; every id is accepted).
    #[arg(long)]
    session_id: Option<String>,
}

/// A body that sends at most one data frame and then either ends or stays open forever. Neither
/// reports a length, so HTTP/1.1 frames both as chunked.
enum LimitBody {
    /// One frame, then the end.
    Once(Option<Bytes>),
    /// One frame, then pending forever (the connection is closed by the client).
    HoldOpen(Option<Bytes>),
    /// No body (202, 405).
    Empty,
}

impl hyper::body::Body for LimitBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            LimitBody::Once(frame) => Poll::Ready(frame.take().map(|b| Ok(Frame::data(b)))),
            // Never woken again: nothing will ever be sent; hyper notices the client leaving
            // through the connection's read side.
            LimitBody::HoldOpen(frame) => match frame.take() {
                Some(b) => Poll::Ready(Some(Ok(Frame::data(b)))),
                None => Poll::Pending,
            },
            LimitBody::Empty => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, LimitBody::Empty)
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        match self {
            LimitBody::Empty => hyper::body::SizeHint::with_exact(0),
            _ => hyper::body::SizeHint::default(),
        }
    }
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let session_id = match cli.session_id.as_deref().map(HeaderValue::from_str) {
        Some(Ok(value)) => Some(value),
        Some(Err(_)) => anyhow::bail!("--session-id is not a valid header value"),
        None => None,
    };
    let runtime = sluice_e2e_peers::runtime(cli.common.workers)?;
    runtime.block_on(async move {
        let listener = sluice_e2e_peers::bind(cli.common.listen).await?;
        let stop = sluice_e2e_peers::shutdown_signal()?;
        sluice_e2e_peers::serve(listener, move |req| answer(req, session_id.clone()), stop).await;
        Ok(())
    })
}

async fn answer(
    req: Request<Incoming>,
    session_id: Option<HeaderValue>,
) -> Result<Response<LimitBody>, Infallible> {
    if req.method() == Method::GET {
        let wants_sse = req
            .headers()
            .get(ACCEPT)
            .is_some_and(|v| memchr::memmem::find(v.as_bytes(), b"text/event-stream").is_some());
        if !wants_sse {
            return Ok(status(StatusCode::METHOD_NOT_ALLOWED));
        }
        return Ok(sse(LimitBody::HoldOpen(Some(Bytes::from_static(
            OPEN_COMMENT,
        )))));
    }
    if req.method() != Method::POST {
        return Ok(status(StatusCode::METHOD_NOT_ALLOWED));
    }
    // Read the whole body, as a real handler would; only the two handshake cases look at it.
    let body = match req.into_body().collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => return Ok(status(StatusCode::BAD_REQUEST)),
    };
    if memchr::memmem::find(&body, b"\"method\":\"notifications/").is_some() {
        return Ok(status(StatusCode::ACCEPTED));
    }
    let id = request_id(&body).unwrap_or(NULL_ID);
    let mut frame = bytes::BytesMut::with_capacity(FRAME_HEAD.len() + id.len() + FRAME_TAIL.len());
    frame.extend_from_slice(FRAME_HEAD);
    frame.extend_from_slice(id);
    frame.extend_from_slice(FRAME_TAIL);
    let mut response = sse(LimitBody::Once(Some(frame.freeze())));
    if let Some(id) = session_id {
        if memchr::memmem::find(&body, b"\"method\":\"initialize\"").is_some() {
            response.headers_mut().insert("mcp-session-id", id);
        }
    }
    Ok(response)
}

/// The raw JSON of the request's id: the value after the first `"id":` (a string with its quotes,
/// or the bytes up to `,` or `}`). MCP clients put the id before `params`, which is where a
/// nested `"id":` could otherwise be found first.
fn request_id(body: &[u8]) -> Option<&[u8]> {
    let at = memchr::memmem::find(body, b"\"id\":")? + 5;
    let rest = body.get(at..)?.trim_ascii_start();
    let len = if rest.first() == Some(&b'"') {
        // A string id: up to the closing quote (ids with escaped quotes are not supported).
        memchr::memchr(b'"', rest.get(1..)?)? + 2
    } else {
        memchr::memchr2(b',', b'}', rest)?
    };
    let id = rest.get(..len)?.trim_ascii_end();
    (!id.is_empty() && id.len() <= MAX_ID).then_some(id)
}

/// A 200 SSE response with sluice's three SSE headers.
fn sse(body: LimitBody) -> Response<LimitBody> {
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

fn status(code: StatusCode) -> Response<LimitBody> {
    let mut response = Response::new(LimitBody::Empty);
    *response.status_mut() = code;
    response
}

#[cfg(test)]
mod tests {
    use super::request_id;

    #[test]
    fn the_id_is_echoed_as_written() {
        let id = |body: &str| {
            request_id(body.as_bytes()).map(|b| String::from_utf8_lossy(b).into_owned())
        };
        assert_eq!(
            id(r#"{"jsonrpc":"2.0","id":42,"method":"ping"}"#).as_deref(),
            Some("42")
        );
        assert_eq!(
            id(r#"{"jsonrpc":"2.0","id": "a-1","method":"ping"}"#).as_deref(),
            Some("\"a-1\"")
        );
        assert_eq!(
            id(r#"{"jsonrpc":"2.0","method":"ping","id":7 }"#).as_deref(),
            Some("7")
        );
        assert_eq!(id(r#"{"jsonrpc":"2.0","method":"ping"}"#), None);
        assert_eq!(id(r#"{"id":"#), None);
        assert_eq!(id(r#"{"id":"unterminated}"#), None);
        let long = format!(r#"{{"id":{},"method":"ping"}}"#, "9".repeat(300));
        assert_eq!(id(&long), None);
    }
}
