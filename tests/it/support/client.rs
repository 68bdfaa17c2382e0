//! The client side: requests, one exchange per fresh HTTP/1.1 connection ([`send`],
//! [`open`], [`post`]) and raw bytes on a socket for what a well-behaved client would never
//! send ([`raw`], [`raw_status`], [`write_request`], [`read_until_closed`]). Owns only the
//! wire; assertions stay in the tests.

use std::net::SocketAddr;

use bytes::Bytes;
use http::{Method, Request};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::{Reply, BOTH, GUARD};

/// A request to `addr` with a `Host` header, these headers and this body.
pub(crate) fn request(
    addr: SocketAddr,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Request<Full<Bytes>> {
    request_to_host(&addr.to_string(), method, path, headers, body)
}

/// A request with `Host: {host}` (a public name, say, where the socket is on 127.0.0.1), these
/// headers and this body.
pub(crate) fn request_to_host(
    host: &str,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Request<Full<Bytes>> {
    let mut builder = Request::builder()
        .method(method)
        .uri(path)
        .header("host", host);
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    builder
        .body(Full::new(Bytes::copy_from_slice(body.as_bytes())))
        .expect("request")
}

/// The headers of a JSON POST accepting JSON and SSE, with `extra` replacing a default of the
/// same name or added.
fn post_headers<'a>(extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut headers = vec![("accept", BOTH), ("content-type", "application/json")];
    for (name, value) in extra {
        headers.retain(|(n, _)| n != name);
        headers.push((name, value));
    }
    headers
}

/// A JSON POST of `body` to `path` accepting JSON and SSE, plus `extra` headers (see
/// [`post_headers`]), on a fresh connection.
pub(crate) async fn post(
    addr: SocketAddr,
    path: &str,
    extra: &[(&str, &str)],
    body: &str,
) -> Reply {
    let headers = post_headers(extra);
    send(addr, request(addr, Method::POST, path, &headers, body)).await
}

/// Sends on a fresh HTTP/1.1 connection and returns the head and the streaming body.
pub(crate) async fn open(addr: SocketAddr, req: Request<Full<Bytes>>) -> http::Response<Incoming> {
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
pub(crate) async fn send(addr: SocketAddr, req: Request<Full<Bytes>>) -> Reply {
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

/// Writes `bytes` on a fresh connection and reads until the server closes it.
pub(crate) async fn raw(addr: SocketAddr, bytes: &[u8]) -> String {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    stream.write_all(bytes).await.expect("write");
    let mut out = Vec::new();
    let read = tokio::time::timeout(GUARD, stream.read_to_end(&mut out)).await;
    read.expect("server closes the connection").expect("read");
    String::from_utf8_lossy(&out).into_owned()
}

/// Writes `raw` on a fresh connection and returns the status code of the answer (read up to
/// the end of its head).
pub(crate) async fn raw_status(addr: SocketAddr, raw: &str) -> u16 {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    stream.write_all(raw.as_bytes()).await.expect("write");
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = tokio::time::timeout(GUARD, stream.read(&mut buf))
            .await
            .expect("answer in time")
            .expect("read");
        answer.extend_from_slice(&buf[..n]);
        if n == 0 || answer.windows(4).any(|w| w == b"\r\n\r\n") {
            break;
        }
    }
    let text = String::from_utf8_lossy(&answer);
    let status = text.split(' ').nth(1).and_then(|code| code.parse().ok());
    status.unwrap_or_else(|| panic!("no status line in {text:?}"))
}

/// Writes `req` (with a `Content-Length`) on a raw connection and returns the socket, so the
/// test can drop it (the client going away) while the call runs.
pub(crate) async fn write_request(addr: SocketAddr, req: &Request<Full<Bytes>>) -> TcpStream {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    let body = req.body().clone().collect().await.expect("body").to_bytes();
    let mut head = format!("{} {} HTTP/1.1\r\n", req.method(), req.uri());
    for (name, value) in req.headers() {
        head += &format!("{name}: {}\r\n", value.to_str().expect("ASCII header"));
    }
    head += &format!("content-length: {}\r\n\r\n", body.len());
    stream.write_all(head.as_bytes()).await.expect("write");
    stream.write_all(&body).await.expect("write");
    stream
}

/// Everything the server sends until it closes the connection (a hang fails the test); a
/// reset after the answer still returns what arrived.
pub(crate) async fn read_until_closed(stream: &mut TcpStream) -> Vec<u8> {
    let mut out = Vec::new();
    let read = tokio::time::timeout(GUARD, stream.read_to_end(&mut out)).await;
    match read.expect("the server closes the connection") {
        Ok(_) => out,
        // Closing with the peer's bytes unread resets; what arrived before still counts.
        Err(err) if err.kind() == std::io::ErrorKind::ConnectionReset => out,
        Err(err) => panic!("read: {err}"),
    }
}
