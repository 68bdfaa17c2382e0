//! Integration tests of issue 13's stream points, over real sockets on 127.0.0.1 against a
//! downstream each test starts: handshake-era requests answered as retained SSE streams by
//! default (priming at once, keep-alives, list_changed, resumption, `max_streams_per_session`,
//! `post_framing = "json"`, the stateless era staying JSON), and every per-stream outbound
//! queue bounded (an unread legacy `/sse` stream refuses POSTs with 503 before they run and
//! keeps the real binary's memory bounded; a full GET stream is closed).

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use serde_json::json;
use sluice::transport::stream::{Resumed, StreamConfig, StreamKind, StreamRegistry};
use sluice::transport::PostFraming;

use crate::support::{
    added_tools, call_body, echo_tool, initialize_body, open, request, send, Answer, Binary,
    Downstream, DownstreamBuilder, Fixture, Reply, SseReader, Stack, Tools, BOTH, GUARD,
    INITIALIZED, MCP,
};

const VERSION: &str = "2025-11-25";

// === downstream ===

/// A downstream API: `GET /echo` answers at once; `GET /hold` counts the call and answers only
/// once the test calls [`Downstream::release`]; `POST /big` answers `{"text": …}` with the
/// request's own `text` (a large answer for a large request).
fn downstream() -> DownstreamBuilder {
    Downstream::new()
        .route("/hold", Answer::Hold(r#"{"message":"released"}"#))
        .route("/big", Answer::Echo)
        .fallback(Answer::Json(r#"{"message":"hello"}"#))
}

/// How many calls reached `POST /big`.
fn big_calls(downstream: &Downstream) -> usize {
    downstream.seen().iter().filter(|p| *p == "/big").count()
}

// === sluice ===

fn config_text(downstream: SocketAddr, server: &str, tools: Tools) -> String {
    let mut text = format!(
        r#"
[server]
{server}

[[tenant]]
id = "acme"
auth = {{ anonymous = true }}

[[tenant.client]]
id = "app"

[[tenant.toolset]]
id = "base"
description = "Base tools"
{echo}
[[tenant.toolset.tool]]
name = "slow"
description = "Answers when the test says so."
downstream = {{ kind = "rest", method = "GET", url = "http://{downstream}/hold", timeout_ms = 60000 }}

[[tenant.toolset.tool.output]]
source = "message"
exposed = "message"

[[tenant.toolset.tool]]
name = "big"
description = "Answers with its argument."
downstream = {{ kind = "rest", method = "POST", url = "http://{downstream}/big" }}

[[tenant.toolset.tool.input]]
source = "text"
exposed = "text"
type = "string"
required = true

[[tenant.toolset.tool.output]]
source = "text"
exposed = "text"
"#,
        echo = echo_tool(downstream),
    );
    text.push_str(&added_tools(downstream, tools));
    text.push_str("\n[[tenant.assignment]]\nclient = \"app\"\ntoolset = \"base\"\n");
    text
}

/// The catalog of [`config_text`] (no `[server]` settings) over [`downstream`].
struct Streams;

impl Fixture for Streams {
    fn new() -> Self {
        Streams
    }

    fn downstream() -> DownstreamBuilder {
        downstream()
    }

    fn text(&self, downstream: SocketAddr, tools: Tools) -> String {
        config_text(downstream, "", tools)
    }
}

/// sluice on 127.0.0.1:0 over a fresh downstream; shuts down when dropped.
type Sluice = Stack<Streams>;

/// Handshake-era requests at [`VERSION`] on [`MCP`].
impl Sluice {
    async fn post(&self, session: Option<&str>, body: &str) -> Reply {
        let req = self.post_request(session, body);
        send(self.addr, req).await
    }

    fn post_request(&self, session: Option<&str>, body: &str) -> Request<Full<Bytes>> {
        let mut headers = vec![("accept", BOTH), ("content-type", "application/json")];
        if let Some(session) = session {
            headers.push(("mcp-session-id", session));
            headers.push(("mcp-protocol-version", VERSION));
        }
        request(self.addr, Method::POST, MCP, &headers, body)
    }

    /// Initializes a session at [`VERSION`] and sends `notifications/initialized`.
    async fn session(&self) -> String {
        let reply = self.post(None, &initialize_body(VERSION)).await;
        assert_eq!(reply.status, StatusCode::OK);
        assert_eq!(reply.json()["result"]["protocolVersion"], VERSION);
        let id = reply.header("mcp-session-id").to_owned();
        assert!(!id.is_empty());
        let reply = self.post(Some(&id), INITIALIZED).await;
        assert_eq!(reply.status, StatusCode::ACCEPTED);
        id
    }

    /// Opens an SSE response (POST answer or GET stream) and reads it event by event.
    async fn sse(&self, req: Request<Full<Bytes>>) -> SseReader {
        SseReader::open(self.addr, req).await
    }

    fn get_request(&self, session: &str, last_event_id: Option<&str>) -> Request<Full<Bytes>> {
        let mut headers = vec![
            ("accept", "text/event-stream"),
            ("mcp-session-id", session),
            ("mcp-protocol-version", VERSION),
        ];
        if let Some(id) = last_event_id {
            headers.push(("last-event-id", id));
        }
        request(self.addr, Method::GET, MCP, &headers, "")
    }
}

// === POST requests answered as SSE (point 12) ===

/// The raw resumption check with the default configuration: two pings answered as SSE, each
/// opening with its own priming event; a GET with A's priming id replays A's answer only.
#[tokio::test]
async fn resuming_a_post_stream_by_its_priming_id_replays_only_that_answer() {
    let sluice = Sluice::start().await;
    let session = sluice.session().await;
    let mut primings = Vec::new();
    for (id, name) in [(1, "A"), (2, "B")] {
        let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
        let mut answer = sluice.sse(sluice.post_request(Some(&session), &body)).await;
        assert_eq!(answer.status, StatusCode::OK);
        assert_eq!(
            answer.header("content-type"),
            "text/event-stream",
            "ping {name}"
        );
        let (priming, data) = answer.frame().await.expect("a priming event");
        assert!(data.is_empty(), "ping {name} opens with priming");
        let (_, message) = answer.message().await.expect("the answer");
        assert_eq!(message, json!({"jsonrpc":"2.0","id":id,"result":{}}));
        assert!(answer.frame().await.is_none(), "the stream ends after it");
        primings.push(priming.expect("the priming event has an id"));
    }
    assert_ne!(primings[0], primings[1]);

    let mut resumed = sluice
        .sse(sluice.get_request(&session, Some(&primings[0])))
        .await;
    assert_eq!(resumed.status, StatusCode::OK);
    assert_eq!(
        resumed.rest().await,
        vec![json!({"jsonrpc":"2.0","id":1,"result":{}})]
    );
}

/// A call that waits on its downstream sends the priming event before the downstream answers,
/// then the response, then the stream ends.
#[tokio::test]
async fn a_slow_call_sends_its_priming_event_at_once() {
    let sluice = Sluice::start().await;
    let session = sluice.session().await;
    let body = call_body(7, "slow", json!({}));
    let mut answer = sluice.sse(sluice.post_request(Some(&session), &body)).await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(answer.header("content-type"), "text/event-stream");
    let (priming, data) = answer.frame().await.expect("priming before the answer");
    assert!(data.is_empty());
    assert!(priming.is_some());
    sluice.downstream.wait_held(1).await;
    sluice.downstream.release();
    let (_, message) = answer.message().await.expect("the response");
    assert_eq!(message["id"], 7);
    assert_eq!(message["result"]["isError"], false, "{message}");
    assert!(answer.frame().await.is_none());
}

/// While a slow call runs its stream hears `: keepalive` every `keepalive_secs`.
#[tokio::test]
async fn a_slow_call_stream_gets_keepalives_while_it_runs() {
    let sluice = Sluice::with(|c| c.sse_keepalive = Duration::from_secs(1)).await;
    let session = sluice.session().await;
    let body = call_body(8, "slow", json!({}));
    let mut answer = sluice.sse(sluice.post_request(Some(&session), &body)).await;
    answer.frame().await.expect("priming");
    sluice.downstream.wait_held(1).await;
    while !String::from_utf8_lossy(&answer.raw).contains(": keepalive") {
        assert!(
            answer.read_chunk().await,
            "the stream ended without a keep-alive"
        );
    }
    sluice.downstream.release();
    let (_, message) = answer.message().await.expect("the response");
    assert_eq!(message["id"], 8);
}

/// list_changed reaches a POST stream still running (no GET stream open), before its
/// response; and a POST stream retained after its answer gets it in its ring, so resuming it
/// replays it.
#[tokio::test]
async fn list_changed_reaches_running_and_retained_post_streams() {
    let sluice = Sluice::start().await;
    let session = sluice.session().await;
    let body = call_body(9, "slow", json!({}));
    let mut answer = sluice.sse(sluice.post_request(Some(&session), &body)).await;
    answer.frame().await.expect("priming");
    sluice.downstream.wait_held(1).await;
    sluice.add_tool();
    let (_, notification) = answer.message().await.expect("list_changed");
    assert_eq!(notification["method"], "notifications/tools/list_changed");
    sluice.downstream.release();
    let (response_id, message) = answer.message().await.expect("the response");
    assert_eq!(message["id"], 9);
    assert!(answer.frame().await.is_none());

    // Retained: the next change is kept for a resume from the response's id.
    assert!(!sluice.reload(Tools::Base).changed.is_empty());
    let response_id = response_id.expect("the response has an id");
    let mut resumed = sluice
        .sse(sluice.get_request(&session, Some(&response_id)))
        .await;
    let replayed = resumed.rest().await;
    assert_eq!(replayed.len(), 1, "{replayed:?}");
    assert_eq!(replayed[0]["method"], "notifications/tools/list_changed");
}

/// `max_streams_per_session` counts slow calls' streams: one more is refused with 429 before
/// its downstream is called.
#[tokio::test]
async fn max_streams_per_session_refuses_one_more_slow_call() {
    let sluice = Sluice::with(|c| c.streams.max_per_session = 1).await;
    let session = sluice.session().await;
    let mut first = sluice
        .sse(sluice.post_request(Some(&session), &call_body(1, "slow", json!({}))))
        .await;
    first.frame().await.expect("priming");
    sluice.downstream.wait_held(1).await;
    let refused = sluice
        .post(Some(&session), &call_body(2, "slow", json!({})))
        .await;
    assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(sluice.downstream.held(), 1);
    sluice.downstream.release();
    let (_, message) = first.message().await.expect("the response");
    assert_eq!(message["id"], 1);
}

/// `post_framing = "json"` answers requests within a session as JSON, slow calls included.
#[tokio::test]
async fn post_framing_json_answers_json() {
    let sluice = Sluice::with(|c| c.post_framing = PostFraming::Json).await;
    let session = sluice.session().await;
    let reply = sluice
        .post(Some(&session), &call_body(3, "echo", json!({})))
        .await;
    assert_eq!(reply.header("content-type"), "application/json");
    assert_eq!(
        reply.json()["result"]["structuredContent"]["message"],
        "hello"
    );
    let ping = sluice
        .post(
            Some(&session),
            r#"{"jsonrpc":"2.0","id":4,"method":"ping"}"#,
        )
        .await;
    assert_eq!(ping.header("content-type"), "application/json");
}

/// The default configuration answers a handshake-era tool call within a session as SSE, but a
/// stateless-era request as JSON.
#[tokio::test]
async fn the_stateless_era_still_answers_json_by_default() {
    let sluice = Sluice::start().await;
    let session = sluice.session().await;
    let reply = sluice
        .post(Some(&session), &call_body(5, "echo", json!({})))
        .await;
    assert_eq!(reply.header("content-type"), "text/event-stream");
    assert_eq!(
        reply.json()["result"]["structuredContent"]["message"],
        "hello"
    );

    let body = json!({"jsonrpc":"2.0","id":6,"method":"tools/call","params":{
        "name":"echo","arguments":{},
        "_meta":{
            "io.modelcontextprotocol/protocolVersion":"2026-07-28",
            "io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},
            "io.modelcontextprotocol/clientCapabilities":{}}}})
    .to_string();
    let headers = [
        ("accept", BOTH),
        ("content-type", "application/json"),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "echo"),
    ];
    let reply = send(
        sluice.addr,
        request(sluice.addr, Method::POST, MCP, &headers, &body),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    assert_eq!(reply.header("content-type"), "application/json");
}

// === bounded stream queues (point 7) ===

/// Opens a legacy `/sse` stream and returns it (unread) with its POST URL.
async fn legacy_stream(addr: SocketAddr) -> (Incoming, String) {
    let req = request(
        addr,
        Method::GET,
        "/runtime/acme/app/sse",
        &[("accept", "text/event-stream")],
        "",
    );
    let (parts, mut body) = open(addr, req).await.into_parts();
    assert_eq!(parts.status, StatusCode::OK);
    // The endpoint event is the first frame.
    let mut first = Vec::new();
    while !first.ends_with(b"\n\n") {
        let frame = tokio::time::timeout(GUARD, body.frame())
            .await
            .expect("endpoint in time")
            .expect("endpoint frame")
            .expect("frame");
        if let Ok(data) = frame.into_data() {
            first.extend_from_slice(&data);
        }
    }
    let text = String::from_utf8_lossy(&first).into_owned();
    let url = text
        .lines()
        .find_map(|line| line.strip_prefix("data: "))
        .expect("endpoint data")
        .to_owned();
    (body, url)
}

async fn legacy_post(addr: SocketAddr, url: &str, body: &str) -> Reply {
    let headers = [("content-type", "application/json")];
    send(addr, request(addr, Method::POST, url, &headers, body)).await
}

/// Requests whose answers would queue on a legacy stream nobody reads are refused with 503 and
/// a JSON-RPC error once the stream's queue (frames reserved by calls still running) is full:
/// the refused call never reaches its downstream.
#[tokio::test]
async fn a_full_legacy_stream_refuses_posts_with_503_before_they_run() {
    let sluice = Sluice::with(|c| c.streams.queue_messages = 3).await;
    let (_stream, url) = legacy_stream(sluice.addr).await;
    for n in 1..=3 {
        let reply = legacy_post(sluice.addr, &url, &call_body(n, "slow", json!({}))).await;
        assert_eq!(reply.status, StatusCode::ACCEPTED);
    }
    sluice.downstream.wait_held(3).await;
    let refused = legacy_post(sluice.addr, &url, &call_body(4, "slow", json!({}))).await;
    assert_eq!(refused.status, StatusCode::SERVICE_UNAVAILABLE);
    let error = refused.json();
    assert_eq!(error["id"], 4, "{error}");
    assert!(error["error"]["code"].is_i64(), "{error}");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(sluice.downstream.held(), 3);
    sluice.downstream.release();
}

/// The byte bound: a large request's reservation fills a small `stream_queue_bytes`, and the
/// next request is refused before its downstream runs.
#[tokio::test]
async fn a_legacy_stream_full_in_bytes_refuses_posts_with_503() {
    let sluice = Sluice::with(|c| c.streams.queue_bytes = 1000).await;
    let (_stream, url) = legacy_stream(sluice.addr).await;
    // A 2000-byte request id: the request (held until its answer is queued) is larger than
    // the stream's whole byte budget.
    let big_id = "x".repeat(2000);
    let body = json!({"jsonrpc":"2.0","id":big_id,"method":"tools/call",
                      "params":{"name":"slow","arguments":{}}})
    .to_string();
    let reply = legacy_post(sluice.addr, &url, &body).await;
    assert_eq!(reply.status, StatusCode::ACCEPTED);
    sluice.downstream.wait_held(1).await;
    let refused = legacy_post(sluice.addr, &url, &call_body(2, "big", json!({"text":"a"}))).await;
    assert_eq!(refused.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(refused.json()["id"], 2);
    assert_eq!(big_calls(&sluice.downstream), 0);
    sluice.downstream.release();
}

/// A GET stream whose queue is full of server-originated notifications is closed (the client
/// reconnects) instead of queueing more; the notification that did not fit is kept for the
/// resume.
#[tokio::test]
async fn a_get_stream_full_of_notifications_is_closed_and_resumable() {
    let streams = StreamRegistry::new(StreamConfig {
        instance: Some("inst1".to_owned()),
        queue_messages: 2,
        ..StreamConfig::default()
    })
    .expect("registry");
    let session = sluice::session::SessionId::random();
    let owner = sluice::session::Owner::new("acme", "app", "anonymous");
    let mut opened = streams
        .open(Some(session), owner, StreamKind::Get)
        .expect("open");
    opened.writer.prime(None).await.expect("priming");
    let make = |_: Option<&[u8]>| Bytes::from_static(br#"{"n":1}"#);
    let tools = sluice::mcp::ListChanged::Tools;
    // The priming event and one notification fill the queue; the next closes the connection.
    assert_eq!(streams.deliver_list_changed("acme", None, tools, make), 1);
    assert_eq!(streams.deliver_list_changed("acme", None, tools, make), 0);
    let mut frames = Vec::new();
    while let Some(frame) = tokio::time::timeout(GUARD, opened.rx.recv())
        .await
        .expect("in time")
    {
        frames.push(frame);
    }
    assert_eq!(
        frames.len(),
        2,
        "the queued frames, then the end: {frames:?}"
    );
    // Resuming from the last frame the client got replays the notification that did not fit.
    let first_id = String::from_utf8_lossy(&frames[1])
        .lines()
        .find_map(|line| line.strip_prefix("id: ").map(str::to_owned))
        .expect("an id");
    match streams.resume(first_id.as_bytes(), &session, owner) {
        Ok(Resumed::Replay { replayed, .. }) => assert_eq!(replayed, 1),
        other => panic!("not resumed: {other:?}"),
    }
}

/// The regression of the report: 100 POSTs of 1 MB answered with 1 MB each, to a legacy
/// stream nobody reads, on the real binary. Before, every answer waited in memory (the process
/// grew by hundreds of MB); now the stream's queue is bounded and the POSTs past it get 503.
///
/// The RSS bound splits the two cases with room on either side. Unbounded, the 100 answers
/// (2 MiB each: the text content and `structuredContent`) stay queued: ≥ 200 MiB. Bounded, the
/// queue holds at most its 4 MiB and a few calls are accepted; those run at once, each peaking
/// near 6 MiB of heap (`tests/call_memory.rs` bounds that exactly), and the allocator may keep
/// their freed pages. That side measured 45–66 MB on a 2-core VM (the spread is allocator
/// retention and timing, which is why the bound is not tighter).
#[tokio::test]
async fn an_unread_legacy_stream_keeps_the_servers_memory_bounded() {
    let downstream = downstream().start().await;
    let server = "listen = \"127.0.0.1:0\"\nmax_body_bytes = 4194304\n\
                  [server.log]\nformat = \"json\"";
    let binary = Binary::start(
        "streams",
        &config_text(downstream.addr, server, Tools::Base),
    );
    let pid = binary.child.id();
    let addr: SocketAddr = binary.addr().parse().expect("addr");

    let rss = || -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmRSS")
    };
    let (_stream, url) = legacy_stream(addr).await;
    let before = rss();
    let text = "y".repeat(1024 * 1024);
    let body = call_body(1, "big", json!({ "text": text }));
    let mut refused = 0;
    for _ in 0..100 {
        let reply = legacy_post(addr, &url, &body).await;
        match reply.status {
            StatusCode::ACCEPTED => {}
            StatusCode::SERVICE_UNAVAILABLE => refused += 1,
            other => panic!("unexpected {other}"),
        }
    }
    // Let the accepted calls finish and queue their answers.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = rss();
    drop(binary);
    let grown_mb = after.saturating_sub(before) / 1024;
    assert!(
        refused > 0,
        "an unread stream must refuse POSTs at some point"
    );
    assert!(
        grown_mb < 120,
        "RSS grew by {grown_mb} MB ({before} kB → {after} kB) with {refused} refused"
    );
}
