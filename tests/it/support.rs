//! What several test modules share: a request builder, a buffered HTTP reply and the
//! one-connection HTTP/1.1 client that produces it. Owns only client-side plumbing; assertions
//! about sluice's answers stay in the modules that test them (they add inherent methods to
//! [`Reply`] where they need them).

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::TcpStream;

/// The hang guard of every exchange: a test that waits longer has found a hang.
pub const GUARD: Duration = Duration::from_secs(20);

/// A whole answer: status, headers and the collected body.
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Reply {
    /// The body as JSON; panics with the body when it is not. An SSE body (the default answer
    /// of a handshake-era request) stands for the data of its last `message` event, so tests
    /// that check the answer, not its framing, read both the same.
    pub fn json(&self) -> Value {
        let body = if self.header("content-type").starts_with("text/event-stream") {
            last_message(&self.body)
        } else {
            self.body.clone()
        };
        serde_json::from_slice(&body).unwrap_or_else(|err| {
            panic!(
                "not JSON ({err}): {:?}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    /// A header's value, or `""` when absent or not visible ASCII.
    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }
}

/// The data of the last non-empty `message` event of an SSE body (empty when there is none).
fn last_message(body: &Bytes) -> Bytes {
    let mut decoder = sluice::sse::Decoder::new();
    let mut buf = bytes::BytesMut::from(&body[..]);
    let mut last = Bytes::new();
    while let Ok(Some(event)) = decoder.decode(&mut buf) {
        if event.event_type() == b"message" && !event.data.is_empty() {
            last = event.data;
        }
    }
    last
}

/// A request to `addr` with a `Host` header, these headers and this body.
pub fn request(
    addr: SocketAddr,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Request<Full<Bytes>> {
    let mut builder = Request::builder()
        .method(method)
        .uri(path)
        .header("host", addr.to_string());
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    builder
        .body(Full::new(Bytes::copy_from_slice(body.as_bytes())))
        .expect("request")
}

/// Sends on a fresh HTTP/1.1 connection and returns the head and the streaming body.
pub async fn open(addr: SocketAddr, req: Request<Full<Bytes>>) -> http::Response<Incoming> {
    let stream = TcpStream::connect(addr).await.expect("connect");
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .expect("handshake");
    tokio::spawn(conn);
    tokio::time::timeout(GUARD, sender.send_request(req))
        .await
        .expect("response in time")
        .expect("response")
}

/// Sends on a fresh connection and collects the whole answer.
pub async fn send(addr: SocketAddr, req: Request<Full<Bytes>>) -> Reply {
    let (parts, body) = open(addr, req).await.into_parts();
    let body = tokio::time::timeout(GUARD, body.collect())
        .await
        .expect("body in time")
        .expect("body")
        .to_bytes();
    Reply {
        status: parts.status,
        headers: parts.headers,
        body,
    }
}

/// sluice serving the bundled demo (`sluice demo`: the demo APIs and its configuration) on
/// 127.0.0.1:0; shuts down when dropped.
pub struct Demo {
    pub addr: SocketAddr,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl Demo {
    pub async fn start() -> Demo {
        let api = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let base = format!("http://{}", api.local_addr().expect("addr"));
        tokio::spawn(sluice::demo::serve_api(api, std::future::pending()));
        let config = sluice::catalog::load::parse(&sluice::demo::config_text(&base), "demo")
            .expect("the demo configuration parses");
        let catalog = std::sync::Arc::new(
            sluice::catalog::Catalog::from_config(&config)
                .expect("the demo configuration is valid"),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(sluice::serve(
            listener,
            sluice::ServeConfig::from_catalog(catalog),
            async move {
                let _ = stopped.await;
            },
        ));
        Demo { addr, _stop: stop }
    }
}
