//! Integration tests: connections that go quiet are closed (before the first request, between
//! requests, mid-head, mid-body) without touching requests in progress, the drain's grace end
//! answers 503, and the binary raises its open-file limit and exits at a second signal.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Method, StatusCode};
use http_body_util::BodyExt;
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::Value;
use sluice::ServeConfig;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::task::JoinHandle;

use crate::support::{
    open, read_until_closed, request, send, session, Binary, TestServer, GUARD, MCP,
};

/// The HTTP/2 connection preface (RFC 9113 §3.4).
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// sluice with tenant `acme`, client `app` (anonymous), `ServeConfig::default()` and the test
/// hooks.
async fn server(configure: impl FnOnce(&mut ServeConfig) + 'static) -> TestServer {
    TestServer::acme().with(configure).start().await
}

/// [`server`] with every timeout one second, so tests wait for them in seconds.
async fn quick(configure: impl FnOnce(&mut ServeConfig) + 'static) -> TestServer {
    server(|config| {
        config.limits.header_read_timeout = Duration::from_secs(1);
        config.limits.idle_timeout = Duration::from_secs(1);
        config.limits.body_read_timeout = Duration::from_secs(1);
        configure(config);
    })
    .await
}

/// A POST whose head promises 100 bytes of body and whose body stops after a few.
fn stalled_post(addr: SocketAddr) -> String {
    format!(
        "POST {MCP} HTTP/1.1\r\nHost: {addr}\r\naccept: application/json, text/event-stream\r\n\
         content-type: application/json\r\ncontent-length: 100\r\n\r\n{{\"jsonrpc\":"
    )
}

/// Asserts an HTTP/1 answer is 408 with a JSON-RPC error and `id: null`.
fn assert_408(answer: &[u8]) {
    let text = String::from_utf8_lossy(answer);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    let body = text.split("\r\n\r\n").nth(1).unwrap_or_default();
    let error: Value = serde_json::from_str(body).unwrap_or_else(|err| panic!("{err}: {text}"));
    assert_eq!(error["jsonrpc"], "2.0", "{text}");
    assert_eq!(error["id"], Value::Null, "{text}");
    assert_eq!(error["error"]["code"], -32000, "{text}");
}

async fn healthz(addr: SocketAddr) -> StatusCode {
    send(addr, request(addr, Method::GET, "/healthz", &[], ""))
        .await
        .status
}

// === quiet connections ===

#[tokio::test]
async fn silent_sockets_and_stalled_bodies_at_the_connection_limit_are_closed_and_healthz_answers()
{
    const LIMIT: usize = 8;
    let server = quick(|c| c.limits.max_connections = LIMIT).await;
    let addr = server.addr;

    let mut silent = Vec::new();
    for _ in 0..LIMIT {
        silent.push(TcpStream::connect(addr).await.expect("connect"));
    }
    // These wait in the backlog until the silent ones are closed, then stall mid-body.
    let mut stalled = Vec::new();
    for _ in 0..LIMIT {
        let mut stream = TcpStream::connect(addr).await.expect("connect");
        stream
            .write_all(stalled_post(addr).as_bytes())
            .await
            .expect("write");
        stalled.push(stream);
    }

    for stream in &mut silent {
        let answer = read_until_closed(stream).await;
        assert!(answer.is_empty(), "{}", String::from_utf8_lossy(&answer));
    }
    for stream in &mut stalled {
        assert_408(&read_until_closed(stream).await);
    }
    let status = tokio::time::timeout(Duration::from_secs(1), healthz(addr))
        .await
        .expect("/healthz answers within 1 s once the quiet connections are gone");
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn a_stalled_body_is_answered_408_with_a_json_rpc_error_and_the_connection_closes() {
    let server = quick(|_| {}).await;
    let mut stream = TcpStream::connect(server.addr).await.expect("connect");
    stream
        .write_all(stalled_post(server.addr).as_bytes())
        .await
        .expect("write");
    let started = Instant::now();
    assert_408(&read_until_closed(&mut stream).await);
    assert!(started.elapsed() >= Duration::from_millis(900));
}

#[tokio::test]
async fn a_partial_h2_preface_is_closed() {
    let server = quick(|_| {}).await;
    let mut stream = TcpStream::connect(server.addr).await.expect("connect");
    stream.write_all(&PREFACE[..10]).await.expect("write");
    let answer = read_until_closed(&mut stream).await;
    assert!(answer.is_empty(), "{answer:?}");
}

/// The frame types of a run of HTTP/2 frames (RFC 9113 §4.1).
fn frame_types(mut bytes: &[u8]) -> Vec<u8> {
    let mut types = Vec::new();
    while bytes.len() >= 9 {
        let len = usize::from(bytes[0]) << 16 | usize::from(bytes[1]) << 8 | usize::from(bytes[2]);
        types.push(bytes[3]);
        bytes = &bytes[(9 + len).min(bytes.len())..];
    }
    types
}

#[tokio::test]
async fn an_h2_preface_and_settings_without_a_stream_is_closed_with_a_goaway() {
    let server = quick(|c| c.limits.idle_timeout = Duration::from_secs(2)).await;
    let mut stream = TcpStream::connect(server.addr).await.expect("connect");
    let started = Instant::now();
    stream.write_all(PREFACE).await.expect("write");
    // An empty SETTINGS frame.
    stream
        .write_all(&[0, 0, 0, 4, 0, 0, 0, 0, 0])
        .await
        .expect("write");
    let answer = read_until_closed(&mut stream).await;
    // Idle, not the header timeout: HTTP/2 may open its first stream later.
    assert!(started.elapsed() >= Duration::from_millis(1_900));
    const GOAWAY: u8 = 7;
    assert!(frame_types(&answer).contains(&GOAWAY), "{answer:?}");
}

#[tokio::test]
async fn an_idle_http1_keep_alive_connection_is_closed_after_idle_connection_secs() {
    // Longer than the header timeout: the idle timeout decides between requests.
    let server = quick(|c| c.limits.idle_timeout = Duration::from_secs(3)).await;
    let mut stream = TcpStream::connect(server.addr).await.expect("connect");
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .expect("write");
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).await.expect("answer");
    assert_eq!(&head, b"HTTP/1.1 200");
    let answered = Instant::now();
    read_until_closed(&mut stream).await;
    assert!(answered.elapsed() >= Duration::from_millis(2_900));
}

#[tokio::test]
async fn a_later_head_is_due_within_the_header_timeout_of_its_first_byte() {
    let server = quick(|c| c.limits.idle_timeout = Duration::from_secs(60)).await;
    let mut stream = TcpStream::connect(server.addr).await.expect("connect");
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .expect("write");
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).await.expect("answer");
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    // Half a head, long after the last answer but well within the idle timeout.
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\n")
        .await
        .expect("write");
    let started = Instant::now();
    let rest = read_until_closed(&mut stream).await;
    assert!(!String::from_utf8_lossy(&rest).contains("HTTP/1.1 200 OK\r\n\r\n"));
    assert!(started.elapsed() >= Duration::from_millis(900));
}

#[tokio::test]
async fn an_open_sse_stream_with_keep_alives_is_not_closed_by_the_idle_timeout() {
    let server = quick(|c| c.sse_keepalive = Duration::from_millis(300)).await;
    let id = session(server.addr, MCP, "2025-06-18").await;
    let headers = [("accept", "text/event-stream"), ("mcp-session-id", &id)];
    let response = open(
        server.addr,
        request(server.addr, Method::GET, MCP, &headers, ""),
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    let mut body = response.into_body();
    // Four idle timeouts' worth of keep-alives, on a stream that stays open.
    let until = Instant::now() + Duration::from_secs(4);
    let mut keepalives = 0;
    while Instant::now() < until {
        let frame = tokio::time::timeout(GUARD, body.frame())
            .await
            .expect("a frame in time")
            .expect("the stream is still open")
            .expect("frame");
        if frame
            .data_ref()
            .is_some_and(|data| data.starts_with(b": keepalive"))
        {
            keepalives += 1;
        }
    }
    assert!(keepalives >= 5, "{keepalives} keep-alives");
}

type H2Sender = hyper::client::conn::http2::SendRequest<http_body_util::Full<Bytes>>;

async fn h2_connect(addr: SocketAddr) -> (H2Sender, JoinHandle<hyper::Result<()>>) {
    let stream = TcpStream::connect(addr).await.expect("connect");
    let (sender, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
            .await
            .expect("h2 handshake");
    (sender, tokio::spawn(conn))
}

#[tokio::test]
async fn an_h2_request_in_progress_keeps_its_connection_which_closes_once_idle() {
    let server = quick(|_| {}).await;
    let addr = server.addr;
    let (mut sender, conn) = h2_connect(addr).await;
    let held =
        tokio::spawn(sender.send_request(request(addr, Method::POST, "/__test/hold", &[], "")));
    server.hooks().entered.notified().await;
    // Several idle timeouts while the request is in progress.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(!conn.is_finished(), "closed under a request in progress");
    // Multiplexed alongside it.
    let health = sender
        .send_request(request(addr, Method::GET, "/healthz", &[], ""))
        .await
        .expect("healthz");
    assert_eq!(health.status(), StatusCode::OK);
    server.hooks().release.notify_one();
    let held = tokio::time::timeout(GUARD, held)
        .await
        .expect("in time")
        .expect("task")
        .expect("answer");
    assert_eq!(held.status(), StatusCode::OK);
    let answered = Instant::now();
    // The sender stays: without it the client would close the connection itself.
    tokio::time::timeout(GUARD, conn)
        .await
        .expect("closed once idle")
        .expect("task")
        .expect("closed cleanly");
    assert!(answered.elapsed() >= Duration::from_millis(900));
    drop(sender);
}

// === drain ===

#[tokio::test]
async fn requests_unanswered_when_the_grace_period_ends_get_503_with_a_json_rpc_error() {
    let mut server = server(|c| c.limits.drain_grace = Duration::from_millis(300)).await;
    let addr = server.addr;
    let held_h1 = tokio::spawn(send(
        addr,
        request(addr, Method::POST, "/__test/hold", &[], ""),
    ));
    server.hooks().entered.notified().await;
    let (mut h2, _conn) = h2_connect(addr).await;
    let held_h2 =
        tokio::spawn(h2.send_request(request(addr, Method::POST, "/__test/hold", &[], "")));
    server.hooks().entered.notified().await;

    server.shut_down().await;
    let reply = held_h1.await.expect("h1 task");
    assert_eq!(reply.status, StatusCode::SERVICE_UNAVAILABLE);
    let error = reply.json();
    assert_eq!(
        (error["id"].clone(), error["error"]["code"].clone()),
        (Value::Null, Value::from(-32000))
    );

    let response = tokio::time::timeout(GUARD, held_h2)
        .await
        .expect("in time")
        .expect("h2 task")
        .expect("h2 answer");
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    let body = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    let error: Value = serde_json::from_slice(&body).expect("JSON");
    assert_eq!(error["error"]["code"], -32000);
}

// === the binary ===

/// A `sluice serve` process logging JSON lines with tenant `acme`, client `app` and these
/// `[server]` settings, started through `sh -c` so a test can set limits first.
fn process(name: &str, server_settings: &str, shell_prefix: &str) -> Binary {
    let config = format!(
        "[server]\nlisten = \"127.0.0.1:0\"\n{server_settings}\n[server.log]\nformat = \"json\"\n\
         [[tenant]]\nid = \"acme\"\nauth = {{ anonymous = true }}\n[[tenant.client]]\nid = \"app\"\n"
    );
    Binary::start_in_shell(name, &config, Some(shell_prefix))
}

/// A connection holding a request in progress (its body stalls) on the process at `addr`.
fn stalled_request(addr: &str) -> std::net::TcpStream {
    use std::io::Write;
    let mut stream = std::net::TcpStream::connect(addr).expect("connect");
    let addr: SocketAddr = addr.parse().expect("addr");
    stream
        .write_all(stalled_post(addr).as_bytes())
        .expect("write");
    stream
}

#[test]
fn the_open_file_limit_is_raised_to_the_hard_limit_and_a_short_one_is_warned_about() {
    let process = process("nofile", "", "ulimit -Sn 256 && ulimit -Hn 4096 &&");
    let raised = process.next("open file limit");
    assert_eq!(raised["level"], "INFO");
    assert_eq!(raised["fields"]["limit"], 4096);
    let short = process.next("the open file limit is below what max_connections needs");
    assert_eq!(short["level"], "WARN");
    assert_eq!(short["fields"]["max_connections"], 10_000);
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", process.child.id()))
        .expect("/proc limits");
    let line = limits
        .lines()
        .find(|line| line.starts_with("Max open files"))
        .expect("Max open files line");
    let numbers: Vec<&str> = line.split_whitespace().skip(3).take(2).collect();
    assert_eq!(numbers, ["4096", "4096"], "{line}");
}

#[test]
fn the_drain_log_counts_the_connections_left_and_their_requests_get_503() {
    use std::io::{Read, Write};
    let mut process = process("drain", "drain_secs = 1\nbody_read_timeout_secs = 60", "");
    let addr = process.addr();
    let mut held = stalled_request(&addr);
    // An idle keep-alive connection, which the drain closes at once.
    let mut idle = std::net::TcpStream::connect(&addr).expect("connect");
    idle.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .expect("write");
    let mut head = [0u8; 12];
    idle.read_exact(&mut head).expect("answer");

    process.signal("TERM");
    assert_eq!(process.next("draining")["fields"]["connections"], 2);
    let over = process.next("drain grace period over");
    assert_eq!(over["level"], "WARN");
    assert_eq!(over["fields"]["remaining"], 1);
    let mut answer = String::new();
    held.read_to_string(&mut answer).expect("read");
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    process.next("drained; exiting");
    assert!(process.wait(GUARD).success());
}

#[test]
fn a_second_signal_during_the_drain_exits_at_once() {
    let mut process = process(
        "second-signal",
        "drain_secs = 600\nbody_read_timeout_secs = 600",
        "",
    );
    let addr = process.addr();
    let _held = stalled_request(&addr);
    // The request is in progress once the server has read its head.
    std::thread::sleep(Duration::from_millis(300));
    process.signal("TERM");
    assert_eq!(process.next("draining")["fields"]["connections"], 1);
    process.signal("INT");
    let exit = process.wait(Duration::from_secs(10));
    assert_eq!(exit.code(), Some(130), "{exit:?}");
}
