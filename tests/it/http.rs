//! Integration tests: http. Every status of the MCP POST pipeline, routing, HTTP/2, the
//! connection limit, graceful drain and the header timeout, over real sockets on 127.0.0.1.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::{json, Value};
use sluice::ServeConfig;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::{post, raw, request, send, Reply, ServerBuilder, TestServer, BOTH, MCP};

const PING: &str = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;

// === test server ===

/// sluice over tenant `acme`, client `app` (no tools), with the test hooks and a 10 s drain,
/// answering handshake-era requests as JSON (`post_framing = "json"`): these tests check the
/// HTTP plumbing on JSON bodies.
async fn start() -> TestServer {
    start_with(|_| {}).await
}

/// [`start`] with SSE answers (the default configuration but for the test hooks).
async fn start_sse() -> TestServer {
    base().start().await
}

async fn start_with(configure: impl FnOnce(&mut ServeConfig) + 'static) -> TestServer {
    base().json_posts().with(configure).start().await
}

fn base() -> ServerBuilder {
    TestServer::acme().with(|config| config.limits.drain_grace = Duration::from_secs(10))
}

/// A POST to the MCP endpoint with the usual headers plus `extra`.
async fn post_mcp(addr: SocketAddr, extra: &[(&str, &str)], body: &str) -> Reply {
    post(addr, MCP, extra, body).await
}

/// The SSE events of a body, through a peer decoder.
async fn sse_events(body: &Bytes) -> Vec<eventsource_stream::Event> {
    use eventsource_stream::Eventsource;
    let chunks = futures::stream::iter([Ok::<_, std::convert::Infallible>(body.clone())]);
    chunks
        .eventsource()
        .map(|event| event.expect("valid SSE"))
        .collect()
        .await
}

// === the MCP POST pipeline ===

#[tokio::test]
async fn ping_answers_json() {
    let server = start().await;
    let reply = post_mcp(server.addr, &[], PING).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.content_type(), "application/json");
    assert_eq!(reply.json(), json!({"jsonrpc":"2.0","id":1,"result":{}}));
}

#[tokio::test]
async fn ping_answers_sse_when_the_client_prefers_it() {
    let server = start().await;
    let accept = "application/json;q=0.5, text/event-stream";
    let reply = post_mcp(server.addr, &[("accept", accept)], PING).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.content_type(), "text/event-stream");
    assert_eq!(reply.headers["cache-control"], "no-cache");
    assert_eq!(reply.headers["x-accel-buffering"], "no");
    let events = sse_events(&reply.body).await;
    assert_eq!(events.len(), 1, "{:?}", reply.body);
    assert_eq!(events[0].event, "message");
    let data: Value = serde_json::from_str(&events[0].data).expect("JSON data");
    assert_eq!(data, json!({"jsonrpc":"2.0","id":1,"result":{}}));
    assert!(reply.body.ends_with(b"\n\n"));
}

#[tokio::test]
async fn ping_answers_sse_by_default_and_json_when_configured() {
    let json = start().await;
    let reply = post_mcp(json.addr, &[], PING).await;
    assert_eq!(reply.content_type(), "application/json");

    let server = start_sse().await;
    let reply = post_mcp(
        server.addr,
        &[],
        r#"{"jsonrpc":"2.0","id":"p","method":"ping"}"#,
    )
    .await;
    assert_eq!(reply.content_type(), "text/event-stream");
    let events = sse_events(&reply.body).await;
    assert_eq!(events.len(), 1);
    let data: Value = serde_json::from_str(&events[0].data).expect("JSON data");
    assert_eq!(data, json!({"jsonrpc":"2.0","id":"p","result":{}}));

    // A client preferring JSON still gets JSON.
    let accept = "application/json, text/event-stream;q=0.9";
    let reply = post_mcp(server.addr, &[("accept", accept)], PING).await;
    assert_eq!(reply.content_type(), "application/json");
}

#[tokio::test]
async fn ids_echo_verbatim() {
    let server = start().await;
    for (id, expected) in [
        ("0", json!(0)),
        (r#""0""#, json!("0")),
        (r#""search-1""#, json!("search-1")),
        ("-7", json!(-7)),
    ] {
        let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
        let reply = post_mcp(server.addr, &[], &body).await;
        assert_eq!(reply.status, StatusCode::OK);
        assert_eq!(reply.json()["id"], expected, "id {id}");
        let text = String::from_utf8_lossy(&reply.body).into_owned();
        assert!(
            text.contains(&format!(r#""id":{id}"#)),
            "id {id} not verbatim in {text}"
        );
    }
}

#[tokio::test]
async fn notifications_and_responses_get_202_empty() {
    let server = start().await;
    for body in [
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":3,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":4,"error":{"code":-1,"message":"no"}}"#,
    ] {
        let reply = post_mcp(server.addr, &[], body).await;
        assert_eq!(reply.status, StatusCode::ACCEPTED, "{body}");
        assert!(reply.body.is_empty(), "{body}");
    }
}

#[tokio::test]
async fn unknown_method_is_32601_on_200() {
    let server = start().await;
    let reply = post_mcp(
        server.addr,
        &[],
        r#"{"jsonrpc":"2.0","id":"0","method":"nope"}"#,
    )
    .await;
    reply.assert_error(200, -32601, json!("0"));
}

#[tokio::test]
async fn malformed_bodies_are_400() {
    let server = start().await;
    let reply = post_mcp(server.addr, &[], "{").await;
    reply.assert_error(400, -32700, Value::Null);
    let reply = post_mcp(server.addr, &[], "").await;
    reply.assert_error(400, -32700, Value::Null);
    let reply = post_mcp(server.addr, &[], "[]").await;
    reply.assert_error(400, -32600, Value::Null);
    let reply = post_mcp(server.addr, &[], "42").await;
    reply.assert_error(400, -32600, Value::Null);
    let reply = post_mcp(server.addr, &[], &format!("[{PING}]")).await;
    reply.assert_error(400, -32600, Value::Null);
}

#[tokio::test]
async fn invalid_request_echoes_a_readable_id() {
    let server = start().await;
    let reply = post_mcp(server.addr, &[], r#"{"jsonrpc":"2.0","id":0,"method":5}"#).await;
    reply.assert_error(400, -32600, json!(0));
}

#[tokio::test]
async fn origin_guard() {
    let server = start_with(|c| c.allowed_origins = vec!["https://app.example.com".into()]).await;
    let reply = post_mcp(server.addr, &[("origin", "http://evil.example.com")], PING).await;
    reply.assert_error(403, -32000, Value::Null);
    let reply = post_mcp(server.addr, &[("origin", "null")], PING).await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN);

    let own = format!("http://{}", server.addr);
    let reply = post_mcp(server.addr, &[("origin", &own)], PING).await;
    assert_eq!(reply.status, StatusCode::OK);
    let reply = post_mcp(server.addr, &[("origin", "https://app.example.com")], PING).await;
    assert_eq!(reply.status, StatusCode::OK);
}

#[tokio::test]
async fn protocol_version_header() {
    let server = start().await;
    for version in ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"] {
        let reply = post_mcp(server.addr, &[("mcp-protocol-version", version)], PING).await;
        assert_eq!(reply.status, StatusCode::OK, "{version}");
    }
    // A header naming a stateless-era version routes the request to that era, whose first rung
    // wants the `_meta` envelope this ping lacks: -32602 on 400, with the id
    // (tests/it/mcp_http.rs has the whole ladder).
    let reply = post_mcp(server.addr, &[("mcp-protocol-version", "2026-07-28")], PING).await;
    reply.assert_error(400, -32602, json!(1));
    // Any other version is unsupported in the handshake era: 400 with no id.
    for version in ["2025-01-01", "", "latest"] {
        let reply = post_mcp(server.addr, &[("mcp-protocol-version", version)], PING).await;
        reply.assert_error(400, -32000, Value::Null);
    }
}

#[tokio::test]
async fn accept_negotiation() {
    let server = start().await;
    for accept in [
        "application/json",
        "text/event-stream",
        "text/html",
        "*/*;q=0",
        "application/json, text/*;q=0",
    ] {
        let reply = post_mcp(server.addr, &[("accept", accept)], PING).await;
        reply.assert_error(406, -32000, Value::Null);
    }
    for accept in [
        "*/*",
        "application/*, text/*",
        "text/event-stream, application/*;q=0.1",
        "APPLICATION/JSON;charset=utf-8, Text/Event-Stream",
    ] {
        let reply = post_mcp(server.addr, &[("accept", accept)], PING).await;
        assert_eq!(reply.status, StatusCode::OK, "{accept}");
    }
    // No Accept header at all means every type is acceptable (RFC 9110 §12.5.1).
    let headers = [("content-type", "application/json")];
    let reply = send(
        server.addr,
        request(server.addr, Method::POST, MCP, &headers, PING),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);
    // An empty one accepts nothing.
    let reply = post_mcp(server.addr, &[("accept", "")], PING).await;
    reply.assert_error(406, -32000, Value::Null);
    // Several Accept headers are one list.
    let headers = [
        ("content-type", "application/json"),
        ("accept", "application/json"),
        ("accept", "text/event-stream"),
    ];
    let reply = send(
        server.addr,
        request(server.addr, Method::POST, MCP, &headers, PING),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);
}

#[tokio::test]
async fn content_type() {
    let server = start().await;
    for content_type in [
        "text/plain",
        "application/jsonx",
        "application/x-www-form-urlencoded",
    ] {
        let reply = post_mcp(server.addr, &[("content-type", content_type)], PING).await;
        reply.assert_error(415, -32000, Value::Null);
    }
    let reply = send(
        server.addr,
        request(server.addr, Method::POST, MCP, &[("accept", BOTH)], PING),
    )
    .await;
    reply.assert_error(415, -32000, Value::Null);
    for content_type in [
        "Application/JSON; charset=utf-8",
        "application/json;charset=UTF-8",
        "APPLICATION/JSON",
    ] {
        let reply = post_mcp(server.addr, &[("content-type", content_type)], PING).await;
        assert_eq!(reply.status, StatusCode::OK, "{content_type}");
    }
}

#[tokio::test]
async fn body_limit_by_content_length() {
    let server = start_with(|c| c.limits.max_body_bytes = 64).await;
    // The head alone: the server must refuse before any body byte arrives.
    let head = format!(
        "POST {MCP} HTTP/1.1\r\nHost: {}\r\nAccept: {BOTH}\r\nContent-Type: application/json\r\nContent-Length: 65\r\n\r\n",
        server.addr
    );
    let text = raw(server.addr, head.as_bytes()).await;
    assert!(text.starts_with("HTTP/1.1 413"), "{text}");
    assert!(text.contains("\"code\":-32000"), "{text}");

    // At the limit exactly it is served.
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"ping","pad":"{}"}}"#,
        "x".repeat(64 - 49)
    );
    assert_eq!(body.len(), 64);
    let reply = post_mcp(server.addr, &[], &body).await;
    assert_eq!(reply.status, StatusCode::OK);
}

#[tokio::test]
async fn body_limit_while_streaming() {
    let server = start_with(|c| c.limits.max_body_bytes = 64).await;
    // One 65-byte chunk and no terminating chunk: only the streaming check can answer.
    let request = format!(
        "POST {MCP} HTTP/1.1\r\nHost: {}\r\nAccept: {BOTH}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n41\r\n{}",
        server.addr,
        "x".repeat(65)
    );
    let text = raw(server.addr, request.as_bytes()).await;
    assert!(text.starts_with("HTTP/1.1 413"), "{text}");
}

// === routing ===

#[tokio::test]
async fn routing_statuses() {
    let server = start().await;
    let addr = server.addr;
    let get = |path: &str| send(addr, request(addr, Method::GET, path, &[], ""));

    let reply = get("/healthz").await;
    assert_eq!(
        (reply.status, &reply.body[..]),
        (StatusCode::OK, &b"ok"[..])
    );
    assert_eq!(get("/readyz").await.status, StatusCode::OK);

    get("/nope").await.assert_error(404, -32000, Value::Null);
    get("/runtime/acme/app/nope")
        .await
        .assert_error(404, -32000, Value::Null);
    let reply = post_mcp_path(addr, "/runtime/ac%20me/app/mcp").await;
    reply.assert_error(404, -32000, Value::Null);
    let reply = post_mcp_path(addr, "/runtime/ac%6De/app/mcp").await;
    assert_eq!(reply.status, StatusCode::OK);

    // GET and DELETE belong to sessions (tests/it/mcp_http.rs has the rest): a GET that does
    // not accept an event stream is 406, a DELETE without a session id is 400.
    get(MCP).await.assert_error(406, -32000, Value::Null);
    send(addr, request(addr, Method::DELETE, MCP, &[], ""))
        .await
        .assert_error(400, -32000, Value::Null);
    let reply = send(addr, request(addr, Method::PUT, MCP, &[], "")).await;
    assert_eq!(
        (reply.status.as_u16(), reply.header("allow")),
        (405, "POST, GET, DELETE")
    );
    let reply = get("/admin/reload").await;
    assert_eq!(
        (reply.status.as_u16(), reply.header("allow")),
        (405, "POST")
    );

    // The REST surface resolves the tenant: an unknown one is 404 (tests/it/rest.rs has the rest).
    get("/runtime/acme/other/tools")
        .await
        .assert_error(404, -32000, Value::Null);
    // So does the MCP endpoint.
    post_mcp_path(addr, "/runtime/acme/other/mcp")
        .await
        .assert_error(404, -32000, Value::Null);
    post_mcp_path(addr, "/runtime/other/app/mcp")
        .await
        .assert_error(404, -32000, Value::Null);
    let metrics = get("/metrics").await;
    assert_eq!(metrics.status, StatusCode::OK);
    assert!(metrics
        .content_type()
        .starts_with("text/plain; version=0.0.4"));
}

async fn post_mcp_path(addr: SocketAddr, path: &str) -> Reply {
    post(addr, path, &[], PING).await
}

// === HTTP/2 ===

#[tokio::test]
async fn http2_prior_knowledge() {
    let server = start().await;
    let stream = TcpStream::connect(server.addr).await.expect("connect");
    let (mut sender, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
            .await
            .expect("h2 handshake");
    tokio::spawn(conn);
    for (accept, content_type) in [
        (BOTH, "application/json"),
        (
            "application/json;q=0.1, text/event-stream",
            "text/event-stream",
        ),
    ] {
        let req = Request::builder()
            .method(Method::POST)
            .uri(format!("http://{}{MCP}", server.addr))
            .header("accept", accept)
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from_static(PING.as_bytes())))
            .expect("request");
        let response = sender.send_request(req).await.expect("response");
        assert_eq!(response.version(), http::Version::HTTP_2);
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(response.headers()["content-type"], content_type);
        let body = response
            .into_body()
            .collect()
            .await
            .expect("body")
            .to_bytes();
        assert!(String::from_utf8_lossy(&body).contains(r#""result":{}"#));
    }
}

// === connection limit, drain, timeouts ===

#[tokio::test]
async fn connection_limit_holds_until_one_closes() {
    let server = start_with(|c| c.limits.max_connections = 1).await;
    let addr = server.addr;

    let stream = TcpStream::connect(addr).await.expect("connect");
    let (mut first, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .expect("handshake");
    let first_conn = tokio::spawn(conn);
    let health = || request(addr, Method::GET, "/healthz", &[], "");
    assert_eq!(
        first.send_request(health()).await.expect("first").status(),
        StatusCode::OK
    );

    // The kernel completes the second handshake, but the server must not accept it.
    let mut second = TcpStream::connect(addr).await.expect("connect");
    second
        .write_all(
            format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        )
        .await
        .expect("write");

    // The first connection is still served while the second waits.
    assert_eq!(
        first.send_request(health()).await.expect("again").status(),
        StatusCode::OK
    );
    let mut byte = [0u8; 1];
    let early = tokio::time::timeout(Duration::from_millis(300), second.read(&mut byte)).await;
    assert!(early.is_err(), "a connection past the limit was served");

    // Closing the first connection frees the slot.
    drop(first);
    first_conn
        .await
        .expect("conn task")
        .expect("conn closed cleanly");
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), second.read_to_end(&mut out))
        .await
        .expect("served once a slot is free")
        .expect("read");
    assert!(
        out.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&out)
    );
}

/// Retries connecting until the listener is gone.
async fn wait_until_refused(addr: SocketAddr) {
    for _ in 0..1000 {
        match TcpStream::connect(addr).await {
            Err(err) if err.kind() == std::io::ErrorKind::ConnectionRefused => return,
            // Accepted before the listener closed, or reset while it closed: try again.
            Ok(_) | Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
    panic!("the listener still accepts after shutdown");
}

#[tokio::test]
async fn drain_finishes_in_flight_requests_and_refuses_new_connections() {
    let mut server = start().await;
    let addr = server.addr;
    let held = tokio::spawn(send(
        addr,
        request(addr, Method::POST, "/__test/hold", &[], ""),
    ));
    server.hooks().entered.notified().await;

    server.shutdown();
    wait_until_refused(addr).await;

    server.hooks().release.notify_one();
    let reply = held.await.expect("held request task");
    assert_eq!(
        (reply.status, &reply.body[..]),
        (StatusCode::OK, &b"released"[..])
    );
    server.finished().await.expect("serve");
}

#[tokio::test]
async fn drain_ends_streams_at_a_frame_boundary() {
    let mut server = start().await;
    let addr = server.addr;
    let stream = TcpStream::connect(addr).await.expect("connect");
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .expect("handshake");
    tokio::spawn(conn);
    let response = sender
        .send_request(request(addr, Method::GET, "/__test/stream", &[], ""))
        .await
        .expect("response");
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut body = response.into_body();
    let first = body
        .frame()
        .await
        .expect("a frame")
        .expect("ok")
        .into_data()
        .expect("data");
    assert_eq!(&first[..], b"event: message\ndata: first\n\n");

    server.shutdown();
    let rest = body
        .collect()
        .await
        .expect("the stream ends cleanly")
        .to_bytes();
    assert!(rest.is_empty() || rest.ends_with(b"\n\n"));
    server.finished().await.expect("serve");
}

#[tokio::test]
async fn slow_request_heads_are_cut_off() {
    let server = start_with(|c| c.limits.header_read_timeout = Duration::from_millis(200)).await;
    let text = raw(server.addr, b"GET /healthz HTTP/1.1\r\nHost: x\r\n").await;
    assert!(!text.contains("200 OK"), "{text}");
}

// === Accept parser corpus ===

#[test]
fn accept_header_corpus_replays() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/accept_header");
    let mut n_files = 0;
    for entry in std::fs::read_dir(&dir).expect("corpus dir") {
        let path = entry.expect("entry").path();
        let data = std::fs::read(&path).expect("read corpus file");
        sluice::http::negotiate::props::accept_header(&data);
        n_files += 1;
    }
    assert!(n_files >= 5, "corpus has only {n_files} files");
}
