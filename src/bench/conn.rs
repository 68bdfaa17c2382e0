//! Connections of the load generator: hyper client connections (HTTP/1.1 or prior-knowledge
//! h2c) over TCP with `TCP_NODELAY`, one request/answer exchange with its checks, the shared
//! connection [`Slot`] that reconnects after a break, and the handshake-era session steps
//! (`initialize`, `notifications/initialized`, `DELETE`).
//!
//! Must not decide what is counted or when a run stops (that is `run`), and must not parse
//! answers itself (that is `wire`).

use std::time::Duration;

use bytes::Bytes;
use http::header::ACCEPT;
use http::{HeaderValue, Method as HttpMethod, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpStream;

use super::settings::{Protocol, Settings, Target};
use super::wire::{self, AnswerReader, ErrorKind, Framing, Session};

/// One client connection.
#[derive(Debug)]
pub(super) enum Sender {
    H1(hyper::client::conn::http1::SendRequest<Full<Bytes>>),
    H2(hyper::client::conn::http2::SendRequest<Full<Bytes>>),
}

impl Sender {
    /// Whether the connection is gone (a new one is needed).
    pub(super) fn is_closed(&self) -> bool {
        match self {
            Sender::H1(sender) => sender.is_closed(),
            Sender::H2(sender) => sender.is_closed(),
        }
    }

    /// A handle for another request stream (h2 only; HTTP/1.1 connections are not shared
    /// concurrently).
    fn clone_h2(&self) -> Option<Sender> {
        match self {
            Sender::H1(_) => None,
            Sender::H2(sender) => Some(Sender::H2(sender.clone())),
        }
    }

    /// Sends `request` once the connection can take it.
    pub(super) async fn send(
        &mut self,
        request: Request<Full<Bytes>>,
    ) -> Result<hyper::Response<Incoming>, ErrorKind> {
        match self {
            Sender::H1(sender) => {
                sender.ready().await.map_err(|_| ErrorKind::Io)?;
                sender
                    .send_request(request)
                    .await
                    .map_err(|_| ErrorKind::Io)
            }
            Sender::H2(sender) => {
                sender.ready().await.map_err(|_| ErrorKind::Io)?;
                sender
                    .send_request(request)
                    .await
                    .map_err(|_| ErrorKind::Io)
            }
        }
    }
}

/// Opens a connection to `target`; the connection task runs on the current runtime.
pub(super) async fn connect(target: &Target, protocol: Protocol) -> Result<Sender, ErrorKind> {
    let stream = TcpStream::connect(&target.connect)
        .await
        .map_err(|_| ErrorKind::Connect)?;
    stream.set_nodelay(true).map_err(|_| ErrorKind::Connect)?;
    let io = TokioIo::new(stream);
    match protocol {
        Protocol::Http1 => {
            let (sender, conn) = hyper::client::conn::http1::handshake(io)
                .await
                .map_err(|_| ErrorKind::Connect)?;
            tokio::spawn(conn);
            Ok(Sender::H1(sender))
        }
        Protocol::H2 => {
            let (sender, conn) = hyper::client::conn::http2::Builder::new(TokioExecutor::new())
                .handshake(io)
                .await
                .map_err(|_| ErrorKind::Connect)?;
            tokio::spawn(conn);
            Ok(Sender::H2(sender))
        }
    }
}

/// A connection shared by the virtual clients assigned to it; reconnected on next use after it
/// broke. HTTP/1.1: a client holds the lock for its whole exchange (clients queue). h2: a client
/// holds it only to get a stream handle.
#[derive(Debug)]
pub(super) struct Slot {
    sender: tokio::sync::Mutex<Option<Sender>>,
}

impl Default for Slot {
    fn default() -> Self {
        Self {
            sender: tokio::sync::Mutex::new(None),
        }
    }
}

/// What one exchange produced.
#[derive(Debug)]
pub(super) struct Answer {
    pub status: StatusCode,
    pub headers: http::HeaderMap,
    pub framing: Option<Framing>,
}

/// A connection held for one exchange: the locked HTTP/1.1 connection, or an h2 stream handle.
enum Held<'a> {
    H1(tokio::sync::MutexGuard<'a, Option<Sender>>),
    H2(Sender),
}

impl Held<'_> {
    fn sender(&mut self) -> Option<&mut Sender> {
        match self {
            Held::H1(guard) => guard.as_mut(),
            Held::H2(sender) => Some(sender),
        }
    }
}

impl Slot {
    /// The connection for one exchange, connecting first when there is none or it broke.
    async fn acquire(&self, settings: &Settings) -> Result<Held<'_>, ErrorKind> {
        let mut guard = self.sender.lock().await;
        if guard.as_ref().is_none_or(Sender::is_closed) {
            let connecting = connect(&settings.target, settings.protocol);
            match tokio::time::timeout(settings.timeout, connecting).await {
                Ok(Ok(sender)) => *guard = Some(sender),
                Ok(Err(kind)) => return Err(kind),
                Err(_) => return Err(ErrorKind::Connect),
            }
        }
        match guard.as_ref().and_then(Sender::clone_h2) {
            Some(stream) => Ok(Held::H2(stream)),
            None => Ok(Held::H1(guard)),
        }
    }

    /// After a timeout or a break: an HTTP/1.1 connection is in an unknown state and is dropped;
    /// an h2 connection only when it is closed (a timed-out stream is simply reset).
    async fn after_failure(&self, held: Held<'_>) {
        match held {
            Held::H1(mut guard) => *guard = None,
            Held::H2(stream) => {
                if stream.is_closed() {
                    let mut guard = self.sender.lock().await;
                    if guard.as_ref().is_some_and(Sender::is_closed) {
                        *guard = None;
                    }
                }
            }
        }
    }

    /// Runs `request` on this slot's connection (connecting first if needed) within
    /// `settings.timeout`, reading the answer into `reader` for request `id`. The latency clock
    /// starts once the connection is this client's (after queueing for an HTTP/1.1
    /// connection). Returns the answer head and the latency.
    pub(super) async fn exchange(
        &self,
        settings: &Settings,
        request: Request<Full<Bytes>>,
        reader: &mut AnswerReader,
        id: u64,
    ) -> (Result<Answer, ErrorKind>, Duration) {
        let mut held = match self.acquire(settings).await {
            Ok(held) => held,
            Err(kind) => return (Err(kind), Duration::ZERO),
        };
        let Some(sender) = held.sender() else {
            return (Err(ErrorKind::Connect), Duration::ZERO);
        };
        let started = std::time::Instant::now();
        let outcome = timed(settings.timeout, sender, request, reader, id).await;
        let latency = started.elapsed();
        if matches!(outcome, Err(ErrorKind::Io | ErrorKind::Timeout)) {
            self.after_failure(held).await;
        }
        (outcome, latency)
    }

    /// Opens a handshake-era session on this slot's connection.
    pub(super) async fn open_session(
        &self,
        settings: &Settings,
        reader: &mut AnswerReader,
    ) -> Result<Session, ErrorKind> {
        let mut held = self.acquire(settings).await?;
        let sender = held.sender().ok_or(ErrorKind::Connect)?;
        let opening = open_session(sender, settings, reader);
        let outcome = tokio::time::timeout(settings.timeout, opening)
            .await
            .unwrap_or(Err(ErrorKind::Timeout));
        if matches!(outcome, Err(ErrorKind::Io | ErrorKind::Timeout)) {
            self.after_failure(held).await;
        }
        outcome
    }

    /// `DELETE`s a session on this slot's connection (best effort).
    pub(super) async fn close_session(
        &self,
        settings: &Settings,
        session: &Session,
    ) -> Result<(), ErrorKind> {
        let mut held = self.acquire(settings).await?;
        let sender = held.sender().ok_or(ErrorKind::Connect)?;
        let outcome = close_session(sender, settings, session).await;
        if matches!(outcome, Err(ErrorKind::Io | ErrorKind::Timeout)) {
            self.after_failure(held).await;
        }
        outcome
    }
}

async fn timed(
    timeout: Duration,
    sender: &mut Sender,
    request: Request<Full<Bytes>>,
    reader: &mut AnswerReader,
    id: u64,
) -> Result<Answer, ErrorKind> {
    match tokio::time::timeout(timeout, exchange(sender, request, reader, id)).await {
        Ok(outcome) => outcome,
        Err(_) => Err(ErrorKind::Timeout),
    }
}

/// Sends `request` and reads the whole answer: a 200 with a JSON or SSE body goes through
/// `reader`; any other body is read and dropped (so the connection stays usable).
pub(super) async fn exchange(
    sender: &mut Sender,
    request: Request<Full<Bytes>>,
    reader: &mut AnswerReader,
    id: u64,
) -> Result<Answer, ErrorKind> {
    let response = sender.send(request).await?;
    let (parts, mut body) = response.into_parts();
    let framing = Framing::from_content_type(parts.headers.get(http::header::CONTENT_TYPE));
    reader.start(framing.unwrap_or(Framing::Json), id);
    let read = parts.status == StatusCode::OK && framing.is_some();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|_| ErrorKind::Io)?;
        if let Ok(data) = frame.into_data() {
            if read {
                reader.feed(&data);
            } else {
                reader.bytes += data.len() as u64;
            }
        }
    }
    Ok(Answer {
        status: parts.status,
        headers: parts.headers,
        framing,
    })
}

/// The verdict on a request's answer: OK only for a 200 JSON or SSE body whose final message
/// for the id carries `result`.
pub(super) fn verdict(answer: &Answer, reader: &mut AnswerReader) -> Result<(), ErrorKind> {
    if answer.status != StatusCode::OK {
        return Err(ErrorKind::Http(answer.status.as_u16()));
    }
    if answer.framing.is_none() {
        return Err(ErrorKind::Protocol);
    }
    reader.finish()
}

// === sessions ===

/// `initialize` then `notifications/initialized` on `sender`; the session as the server set it
/// up (its id when it issued one, the negotiated version).
pub(super) async fn open_session(
    sender: &mut Sender,
    settings: &Settings,
    reader: &mut AnswerReader,
) -> Result<Session, ErrorKind> {
    let mut request = Request::new(Full::new(wire::initialize_body()));
    *request.method_mut() = HttpMethod::POST;
    *request.uri_mut() = wire::request_uri(settings);
    *request.headers_mut() = wire::base_headers(settings);
    reader.set_mode(false, true);
    let answer = exchange(sender, request, reader, 0).await?;
    verdict(&answer, reader)?;
    let version = reader
        .final_message()
        .and_then(negotiated_version)
        .unwrap_or_else(|| HeaderValue::from_static(wire::HANDSHAKE_VERSION));
    let session = Session {
        id: answer.headers.get(wire::SESSION_ID).cloned(),
        version,
    };
    let mut request = Request::new(Full::new(Bytes::from_static(wire::INITIALIZED_BODY)));
    *request.method_mut() = HttpMethod::POST;
    *request.uri_mut() = wire::request_uri(settings);
    *request.headers_mut() = session_headers(settings, &session);
    let answer = exchange(sender, request, reader, 0).await?;
    if !answer.status.is_success() {
        return Err(ErrorKind::Http(answer.status.as_u16()));
    }
    Ok(session)
}

/// The `protocolVersion` string of an `initialize` result.
fn negotiated_version(message: &[u8]) -> Option<HeaderValue> {
    const KEY: &[u8] = br#""protocolVersion":""#;
    let start = memchr::memmem::find(message, KEY)? + KEY.len();
    let len = memchr::memchr(b'"', &message[start..])?;
    HeaderValue::from_bytes(&message[start..start + len]).ok()
}

/// The run's headers plus the session's.
pub(super) fn session_headers(settings: &Settings, session: &Session) -> http::HeaderMap {
    let mut headers = wire::base_headers(settings);
    if let Some(id) = &session.id {
        headers.insert(wire::SESSION_ID, id.clone());
    }
    headers.insert(wire::PROTOCOL_VERSION, session.version.clone());
    headers
}

/// `DELETE` of the session (best effort: the outcome is only reported).
pub(super) async fn close_session(
    sender: &mut Sender,
    settings: &Settings,
    session: &Session,
) -> Result<(), ErrorKind> {
    if session.id.is_none() {
        return Ok(());
    }
    let mut request = Request::new(Full::new(Bytes::new()));
    *request.method_mut() = HttpMethod::DELETE;
    *request.uri_mut() = wire::request_uri(settings);
    *request.headers_mut() = session_headers(settings, session);
    let mut reader = AnswerReader::default();
    let answer = tokio::time::timeout(settings.timeout, exchange(sender, request, &mut reader, 0))
        .await
        .map_err(|_| ErrorKind::Timeout)??;
    if !answer.status.is_success() {
        return Err(ErrorKind::Http(answer.status.as_u16()));
    }
    Ok(())
}

/// Opens the session's GET stream on its own connection; returns the connection and the body to
/// drain (both must be kept while the stream is held).
pub(super) async fn open_stream(
    settings: &Settings,
    session: &Session,
) -> Result<(Sender, Incoming), ErrorKind> {
    let mut sender = connect(&settings.target, settings.protocol).await?;
    let mut request = Request::new(Full::new(Bytes::new()));
    *request.method_mut() = HttpMethod::GET;
    *request.uri_mut() = wire::request_uri(settings);
    let mut headers = session_headers(settings, session);
    headers.remove(http::header::CONTENT_TYPE);
    headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
    *request.headers_mut() = headers;
    let response = sender.send(request).await?;
    if response.status() != StatusCode::OK {
        return Err(ErrorKind::Http(response.status().as_u16()));
    }
    let framing = Framing::from_content_type(response.headers().get(http::header::CONTENT_TYPE));
    if framing != Some(Framing::Sse) {
        return Err(ErrorKind::Protocol);
    }
    Ok((sender, response.into_body()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_negotiated_version_is_read_from_the_result() {
        let v = super::negotiated_version(
            br#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{}}}"#,
        );
        assert_eq!(v.unwrap(), "2025-06-18");
        assert!(super::negotiated_version(b"{}").is_none());
    }
}
