//! Integration tests: MCP over HTTP in both eras and the legacy HTTP+SSE transport, over real
//! sockets on 127.0.0.1 against a real downstream hyper server started by each test.
//!
//! Covers every status and rule of the transport: sessions (mint, 404, 400), the version
//! header, inline JSON vs SSE, priming, 202s, the stateless validation ladder, listen streams
//! and list_changed, GET/DELETE, resumption, both cancellation paths, and the legacy transport.
//! SSE bodies are read with `sluice::sse::Decoder`.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, StatusCode};
use http_body_util::Full;
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use sluice::transport::PostFraming;
use tokio::net::TcpStream;

use crate::support::{
    self, added_tools, echo_tool, initialize_body, request, send, Answer, Downstream,
    DownstreamBuilder, Fixture, Reply, SseReader, Stack, Tools, BOTH, GUARD, MCP,
};

// === downstream ===

/// A downstream API: `GET /hold` announces itself, never answers, and reports when its request
/// future is dropped (the caller went away); every other path answers at once.
fn downstream() -> DownstreamBuilder {
    Downstream::new()
        .route("/hold", Answer::Stall)
        .fallback(Answer::Json(r#"{"message":"hello","n":7}"#))
}

// === sluice ===

fn config_text(downstream: SocketAddr, tools: Tools) -> String {
    let mut text = format!(
        r#"
[[tenant]]
id = "acme"
auth = {{ anonymous = true }}

[[tenant.client]]
id = "app"

[[tenant.client]]
id = "other"

[[tenant.toolset]]
id = "base"
description = "Base tools"
system_prompt = "Be brief."
{echo}
[[tenant.toolset.tool]]
name = "slow"
description = "Never answers."
downstream = {{ kind = "rest", method = "GET", url = "http://{downstream}/hold", timeout_ms = 60000 }}
"#,
        echo = echo_tool(downstream),
    );
    text.push_str(&added_tools(downstream, tools));
    text.push_str(
        r#"
[[tenant.assignment]]
client = "app"
toolset = "base"

[[tenant.assignment]]
client = "other"
toolset = "base"
"#,
    );
    text
}

/// The catalog of [`config_text`] over [`downstream`].
struct Transport;

impl Fixture for Transport {
    fn new() -> Self {
        Transport
    }

    fn downstream() -> DownstreamBuilder {
        downstream()
    }

    fn text(&self, downstream: SocketAddr, tools: Tools) -> String {
        config_text(downstream, tools)
    }
}

/// sluice on 127.0.0.1:0 over a fresh downstream; shuts down when dropped.
type Sluice = Stack<Transport>;

async fn post_to(addr: SocketAddr, path: &str, extra: &[(&str, &str)], body: &str) -> Reply {
    support::post(addr, path, extra, body).await
}

async fn post(addr: SocketAddr, extra: &[(&str, &str)], body: &str) -> Reply {
    post_to(addr, MCP, extra, body).await
}

/// The raw frames of an SSE text (sluice writes LF line ends), comments included.
fn raw_frames(body: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(body)
        .split("\n\n")
        .filter(|frame| !frame.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The `id:` of a raw frame.
fn frame_id(frame: &str) -> Option<&str> {
    frame.lines().find_map(|line| line.strip_prefix("id: "))
}

/// Whether a raw frame is a priming event: an id and an empty `data:`.
fn is_priming(frame: &str) -> bool {
    frame_id(frame).is_some()
        && frame
            .lines()
            .any(|line| line == "data: " || line == "data:")
        && !frame.contains("event: message")
}

// === handshake-era helpers ===

/// Initializes a session at `version` (and sends `notifications/initialized`); returns its id.
async fn session(addr: SocketAddr, version: &str) -> String {
    support::session(addr, MCP, version).await
}

const PREFER_JSON: &str = "application/json, text/event-stream;q=0.5";
const PREFER_SSE: &str = "application/json;q=0.5, text/event-stream";

// === stateless-era helpers ===

const MODERN: &str = "2026-07-28";

fn modern_body(id: Value, method: &str, mut params: Value) -> String {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name":"test","version":"1"}
    });
    json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}).to_string()
}

/// A stateless POST with the header trio (`name` → `Mcp-Name`), plus `extra` headers.
async fn modern(
    addr: SocketAddr,
    method: &str,
    name: Option<&str>,
    extra: &[(&str, &str)],
    body: &str,
) -> Reply {
    let mut headers = vec![("mcp-protocol-version", MODERN), ("mcp-method", method)];
    if let Some(name) = name {
        headers.push(("mcp-name", name));
    }
    for (n, v) in extra {
        headers.retain(|(h, _)| h != n);
        headers.push((n, v));
    }
    post(addr, &headers, body).await
}

// === tests: handshake era ===

#[tokio::test]
async fn initialize_answers_json_without_a_session_header_when_sessions_are_off() {
    let sluice = Sluice::with(|c| {
        c.sessions_enabled = false;
        c.post_framing = PostFraming::Json;
    })
    .await;
    let reply = post(sluice.addr, &[], &initialize_body("2025-06-18")).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.header("content-type"), "application/json");
    assert_eq!(reply.header("mcp-session-id"), "");
    let body = reply.json();
    assert_eq!(body["id"], 0);
    assert_eq!(body["result"]["protocolVersion"], "2025-06-18");
    assert!(body["result"].get("resultType").is_none(), "{body}");
}

#[tokio::test]
async fn notifications_and_responses_are_202_with_an_empty_body() {
    let sluice = Sluice::start().await;
    for body in [
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/whatever","params":{}}"#,
        r#"{"jsonrpc":"2.0","id":"s1","result":{}}"#,
        r#"{"jsonrpc":"2.0","id":"s1","error":{"code":-1,"message":"no"}}"#,
    ] {
        let reply = post(sluice.addr, &[], body).await;
        assert_eq!(reply.status, StatusCode::ACCEPTED, "{body}");
        assert!(reply.body.is_empty(), "{body}");
    }
    // Stateless notifications too.
    let body = r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
    let reply = post(sluice.addr, &[("mcp-protocol-version", MODERN)], body).await;
    assert_eq!((reply.status, reply.body.len()), (StatusCode::ACCEPTED, 0));
}

#[tokio::test]
async fn unknown_method_is_32601_on_200_in_the_handshake_era() {
    let sluice = Sluice::with(|c| c.post_framing = PostFraming::Json).await;
    let reply = post(
        sluice.addr,
        &[],
        r#"{"jsonrpc":"2.0","id":"x","method":"nope"}"#,
    )
    .await;
    reply.assert_error(200, -32601, json!("x"));
    // server/discover without the envelope is a handshake-era request: -32601 too.
    let reply = post(
        sluice.addr,
        &[],
        r#"{"jsonrpc":"2.0","id":1,"method":"server/discover"}"#,
    )
    .await;
    reply.assert_error(200, -32601, json!(1));
    // Errors of a valid request stay on 200: unknown tool, bad params.
    let body = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"nope"}}"#;
    post(sluice.addr, &[], body)
        .await
        .assert_error(200, -32602, json!(2));
}

#[tokio::test]
async fn unknown_tenant_or_client_is_404_with_a_json_rpc_body() {
    let sluice = Sluice::start().await;
    for path in ["/runtime/acme/nobody/mcp", "/runtime/nobody/app/mcp"] {
        let reply = post_to(sluice.addr, path, &[], &initialize_body("2025-11-25")).await;
        reply.assert_error(404, -32000, Value::Null);
    }
}

#[tokio::test]
async fn inline_json_or_sse_by_accept_preference() {
    let sluice = Sluice::with(|c| c.post_framing = PostFraming::Json).await;
    let ping = r#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#;
    let reply = post(sluice.addr, &[("accept", BOTH)], ping).await;
    assert_eq!(reply.header("content-type"), "application/json");
    assert_eq!(reply.json(), json!({"jsonrpc":"2.0","id":5,"result":{}}));
    let reply = post(sluice.addr, &[("accept", PREFER_SSE)], ping).await;
    assert_eq!(reply.header("cache-control"), "no-cache");
    assert_eq!(reply.header("x-accel-buffering"), "no");
    assert_eq!(
        reply.messages(),
        vec![json!({"jsonrpc":"2.0","id":5,"result":{}})]
    );
    let reply = post(sluice.addr, &[("accept", PREFER_JSON)], ping).await;
    assert_eq!(reply.header("content-type"), "application/json");

    // The default: SSE on a tie.
    let sluice = Sluice::start().await;
    let reply = post(sluice.addr, &[("accept", BOTH)], ping).await;
    assert_eq!(
        reply.messages(),
        vec![json!({"jsonrpc":"2.0","id":5,"result":{}})]
    );
    let reply = post(sluice.addr, &[("accept", PREFER_JSON)], ping).await;
    assert_eq!(reply.header("content-type"), "application/json");
}

#[tokio::test]
async fn tools_call_reaches_the_downstream() {
    let sluice = Sluice::start().await;
    let body = r#"{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"echo","arguments":{}}}"#;
    let reply = post(sluice.addr, &[], body).await;
    assert_eq!(reply.status, StatusCode::OK);
    let body = reply.json();
    assert_eq!(body["id"], "c");
    assert_eq!(
        body["result"]["structuredContent"],
        json!({"message":"hello"})
    );
    assert_eq!(body["result"]["isError"], false);
}

// === tests: stateless era ===

#[tokio::test]
async fn stateless_results_carry_result_type_and_cache_hints() {
    let sluice = Sluice::start().await;
    let reply = modern(
        sluice.addr,
        "tools/list",
        None,
        &[],
        &modern_body(json!(1), "tools/list", json!({})),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.header("mcp-session-id"), "");
    let body = reply.json();
    assert_eq!(body["id"], 1);
    assert_eq!(body["result"]["resultType"], "complete");
    assert_eq!(body["result"]["cacheScope"], "private");
    assert!(body["result"]["ttlMs"].is_u64(), "{body}");
    let names: Vec<&str> = body["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"echo"), "{names:?}");

    let body = modern_body(json!("d"), "server/discover", json!({}));
    let reply = modern(sluice.addr, "server/discover", None, &[], &body).await;
    let body = reply.json();
    assert_eq!(body["result"]["resultType"], "complete");
    assert!(body["result"]["supportedVersions"].is_array(), "{body}");

    let body = modern_body(
        json!(3),
        "tools/call",
        json!({"name":"echo","arguments":{}}),
    );
    let reply = modern(sluice.addr, "tools/call", Some("echo"), &[], &body).await;
    let body = reply.json();
    assert_eq!(body["result"]["resultType"], "complete", "{body}");
    assert_eq!(
        body["result"]["structuredContent"],
        json!({"message":"hello"})
    );
}

#[tokio::test]
async fn stateless_ladder_errors_carry_the_id() {
    let sluice = Sluice::start().await;
    let addr = sluice.addr;
    let call = modern_body(
        json!(9),
        "tools/call",
        json!({"name":"echo","arguments":{}}),
    );
    let list = modern_body(json!("L"), "tools/list", json!({}));

    // Header trio: missing, mismatching, duplicated → -32020/400.
    post(addr, &[("mcp-method", "tools/list")], &list)
        .await
        .assert_error(400, -32020, json!("L"));
    post(addr, &[("mcp-protocol-version", MODERN)], &list)
        .await
        .assert_error(400, -32020, json!("L"));
    modern(addr, "tools/call", None, &[], &list)
        .await
        .assert_error(400, -32020, json!("L"));
    modern(
        addr,
        "tools/list",
        None,
        &[("mcp-protocol-version", "2025-11-25")],
        &list,
    )
    .await
    .assert_error(400, -32020, json!("L"));
    modern(addr, "tools/call", None, &[], &call)
        .await
        .assert_error(400, -32020, json!(9));
    modern(addr, "tools/call", Some("other"), &[], &call)
        .await
        .assert_error(400, -32020, json!(9));
    modern(addr, "tools/call", Some("=?base64?!!?="), &[], &call)
        .await
        .assert_error(400, -32020, json!(9));
    // The Base64 sentinel form is decoded before comparing.
    let cafe = modern_body(
        json!(10),
        "tools/call",
        json!({"name":"café","arguments":{}}),
    );
    // A non-ASCII name passes the header check once decoded (and is then an unknown tool,
    // in-band on 200).
    let reply = modern(addr, "tools/call", Some("=?base64?Y2Fmw6k=?="), &[], &cafe).await;
    reply.assert_error(200, -32602, json!(10));
    let reply = modern(addr, "tools/call", Some("=?base64?ZWNobw==?="), &[], &call).await;
    assert_eq!(reply.json()["result"]["resultType"], "complete");
    let reply = modern(
        addr,
        "tools/call",
        Some("echo"),
        &[("mcp-method", "=?base64?dG9vbHMvY2FsbA==?=")],
        &call,
    )
    .await;
    assert_eq!(reply.json()["result"]["resultType"], "complete");

    // A modern header with no envelope → -32602/400.
    let bare = r#"{"jsonrpc":"2.0","id":4,"method":"tools/list"}"#;
    modern(addr, "tools/list", None, &[], bare)
        .await
        .assert_error(400, -32602, json!(4));
    // Required _meta keys → -32602/400.
    let no_caps = json!({"jsonrpc":"2.0","id":5,"method":"tools/list","params":{"_meta":{
        "io.modelcontextprotocol/protocolVersion": MODERN}}})
    .to_string();
    modern(addr, "tools/list", None, &[], &no_caps)
        .await
        .assert_error(400, -32602, json!(5));
    // Unsupported version → -32022/400 with data.
    let future = json!({"jsonrpc":"2.0","id":6,"method":"tools/list","params":{"_meta":{
        "io.modelcontextprotocol/protocolVersion": "2099-01-01",
        "io.modelcontextprotocol/clientCapabilities": {}}}})
    .to_string();
    let reply = modern(
        addr,
        "tools/list",
        None,
        &[("mcp-protocol-version", "2099-01-01")],
        &future,
    )
    .await;
    let body = reply.assert_error(400, -32022, json!(6));
    assert_eq!(body["error"]["data"]["requested"], "2099-01-01");
    assert!(body["error"]["data"]["supported"]
        .as_array()
        .is_some_and(|v| v.contains(&json!(MODERN))));
    // Unknown method → -32601/404; removed methods too.
    let nope = modern_body(json!(7), "nope", json!({}));
    modern(addr, "nope", None, &[], &nope)
        .await
        .assert_error(404, -32601, json!(7));
    let ping = modern_body(json!(8), "ping", json!({}));
    modern(addr, "ping", None, &[], &ping)
        .await
        .assert_error(404, -32601, json!(8));
    // Other handler errors stay in-band on 200.
    let unknown_tool = modern_body(json!(11), "tools/call", json!({"name":"nope"}));
    modern(addr, "tools/call", Some("nope"), &[], &unknown_tool)
        .await
        .assert_error(200, -32602, json!(11));
}

#[tokio::test]
async fn stateless_requests_never_mint_or_honour_sessions() {
    let sluice = Sluice::start().await;
    let body = modern_body(json!(1), "tools/list", json!({}));
    let reply = modern(
        sluice.addr,
        "tools/list",
        None,
        &[("mcp-session-id", "AAAAAAAAAAAAAAAAAAAAAA")],
        &body,
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.header("mcp-session-id"), "");
}

#[tokio::test]
async fn closing_a_stateless_response_stream_cancels_the_downstream_call() {
    let sluice = Sluice::start().await;
    let body = modern_body(
        json!(1),
        "tools/call",
        json!({"name":"slow","arguments":{}}),
    );
    let req = request(
        sluice.addr,
        Method::POST,
        MCP,
        &[
            ("accept", PREFER_SSE),
            ("content-type", "application/json"),
            ("mcp-protocol-version", MODERN),
            ("mcp-method", "tools/call"),
            ("mcp-name", "slow"),
        ],
        &body,
    );
    let stream = TcpStream::connect(sluice.addr).await.expect("connect");
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .expect("handshake");
    let conn = tokio::spawn(conn);
    let pending = tokio::spawn(async move { sender.send_request(req).await });
    sluice.downstream.wait_entered().await;
    // The client goes away: its connection closes.
    pending.abort();
    conn.abort();
    sluice.downstream.wait_dropped().await;
}

// === tests: sessions ===

fn get_request(addr: SocketAddr, headers: &[(&str, &str)]) -> Request<Full<Bytes>> {
    request(addr, Method::GET, MCP, headers, "")
}

async fn get(addr: SocketAddr, headers: &[(&str, &str)]) -> Reply {
    send(addr, get_request(addr, headers)).await
}

async fn get_stream(addr: SocketAddr, session: &str, extra: &[(&str, &str)]) -> SseReader {
    let mut headers = vec![("accept", "text/event-stream"), ("mcp-session-id", session)];
    headers.extend_from_slice(extra);
    let reader = SseReader::open(addr, get_request(addr, &headers)).await;
    assert_eq!(reader.status, StatusCode::OK);
    assert_eq!(reader.header("content-type"), "text/event-stream");
    assert_eq!(reader.header("cache-control"), "no-cache");
    assert_eq!(reader.header("x-accel-buffering"), "no");
    reader
}

async fn delete(addr: SocketAddr, session: &str) -> Reply {
    let headers = [("mcp-session-id", session)];
    send(addr, request(addr, Method::DELETE, MCP, &headers, "")).await
}

const PING: &str = r#"{"jsonrpc":"2.0","id":"p","method":"ping"}"#;

#[tokio::test]
async fn initialize_mints_a_session_id_of_22_visible_characters() {
    let sluice = Sluice::start().await;
    let first = session(sluice.addr, "2025-11-25").await;
    assert!(
        first
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
        "{first}"
    );
    // A stale id on initialize is accepted: a new session is minted.
    let reply = post(
        sluice.addr,
        &[("mcp-session-id", "stale-and-unknown")],
        &initialize_body("2025-06-18"),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);
    let second = reply.header("mcp-session-id");
    assert_eq!(second.len(), 22);
    assert_ne!(second, first);
    // An unsupported version is answered with the latest, never echoed.
    let reply = post(sluice.addr, &[], &initialize_body("1999-01-01")).await;
    assert_eq!(reply.json()["result"]["protocolVersion"], "2025-11-25");
    // A version header the runtime does not know does not block initialize
    // (`docs/mcp-pitfalls.md` point 11).
    let reply = post(
        sluice.addr,
        &[("mcp-protocol-version", "2030-01-01")],
        &initialize_body("2025-03-26"),
    )
    .await;
    assert_eq!(reply.json()["result"]["protocolVersion"], "2025-03-26");
}

#[tokio::test]
async fn unknown_malformed_foreign_and_deleted_sessions_are_404() {
    let sluice = Sluice::start().await;
    let addr = sluice.addr;
    let id = session(addr, "2025-11-25").await;
    let reply = post(addr, &[("mcp-session-id", &id)], PING).await;
    assert_eq!(reply.status, StatusCode::OK);

    for unknown in ["AAAAAAAAAAAAAAAAAAAAAA", "short", "not a valid id at all!!"] {
        post(addr, &[("mcp-session-id", unknown)], PING)
            .await
            .assert_error(404, -32000, Value::Null);
    }
    // A session opened on acme/app is unknown on acme/other.
    post_to(
        addr,
        "/runtime/acme/other/mcp",
        &[("mcp-session-id", &id)],
        PING,
    )
    .await
    .assert_error(404, -32000, Value::Null);

    let reply = delete(addr, &id).await;
    assert_eq!(
        (reply.status, reply.body.len()),
        (StatusCode::NO_CONTENT, 0)
    );
    post(addr, &[("mcp-session-id", &id)], PING)
        .await
        .assert_error(404, -32000, Value::Null);
    delete(addr, &id)
        .await
        .assert_error(404, -32000, Value::Null);
    // Notifications name their session too.
    let body = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    post(addr, &[("mcp-session-id", &id)], body)
        .await
        .assert_error(404, -32000, Value::Null);
}

#[tokio::test]
async fn a_missing_session_is_400_only_when_required() {
    let sluice = Sluice::start().await;
    assert_eq!(post(sluice.addr, &[], PING).await.status, StatusCode::OK);

    let sluice = Sluice::with(|c| c.require_session = true).await;
    post(sluice.addr, &[], PING)
        .await
        .assert_error(400, -32000, Value::Null);
    // initialize needs none, and the session it mints works.
    let id = session(sluice.addr, "2025-11-25").await;
    let reply = post(sluice.addr, &[("mcp-session-id", &id)], PING).await;
    assert_eq!(reply.status, StatusCode::OK);
    // DELETE and GET without one are 400 too.
    let reply = send(
        sluice.addr,
        request(sluice.addr, Method::DELETE, MCP, &[], ""),
    )
    .await;
    reply.assert_error(400, -32000, Value::Null);
    get(sluice.addr, &[("accept", "text/event-stream")])
        .await
        .assert_error(400, -32000, Value::Null);
}

#[tokio::test]
async fn protocol_version_header_table() {
    let sluice = Sluice::start().await;
    let id = session(sluice.addr, "2025-06-18").await;
    let addr = sluice.addr;
    let with = |version: &'static str| {
        let id = id.clone();
        async move {
            let mut headers = vec![("mcp-session-id", id.as_str())];
            if !version.is_empty() {
                headers.push(("mcp-protocol-version", version));
            }
            post(addr, &headers, PING).await
        }
    };
    // Absent: the session's version. Every released version is accepted.
    for version in ["", "2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"] {
        assert_eq!(with(version).await.status, StatusCode::OK, "{version:?}");
    }
    // Unknown → 400 (routed to the stateless ladder, which wants the `_meta` envelope).
    for version in ["2025-01-01", "latest"] {
        assert_eq!(
            with(version).await.status,
            StatusCode::BAD_REQUEST,
            "{version}"
        );
    }
}

#[tokio::test]
async fn sse_answers_within_a_session_open_with_priming_only_from_2025_11_25() {
    let sluice = Sluice::start().await;
    let recent = session(sluice.addr, "2025-11-25").await;
    let reply = post(
        sluice.addr,
        &[("mcp-session-id", &recent), ("accept", PREFER_SSE)],
        PING,
    )
    .await;
    let frames = raw_frames(&reply.body);
    assert_eq!(frames.len(), 2, "{frames:?}");
    assert!(is_priming(&frames[0]), "{frames:?}");
    assert!(frame_id(&frames[1]).is_some(), "{frames:?}");
    assert_ne!(frame_id(&frames[0]), frame_id(&frames[1]));
    assert_eq!(
        reply.messages(),
        vec![json!({"jsonrpc":"2.0","id":"p","result":{}})]
    );

    for older in ["2025-06-18", "2025-03-26", "2024-11-05"] {
        let id = session(sluice.addr, older).await;
        let reply = post(
            sluice.addr,
            &[("mcp-session-id", &id), ("accept", PREFER_SSE)],
            PING,
        )
        .await;
        let frames = raw_frames(&reply.body);
        assert_eq!(frames.len(), 1, "{older}: {frames:?}");
        assert!(!is_priming(&frames[0]), "{older}: {frames:?}");
        assert!(!String::from_utf8_lossy(&reply.body).contains("data: \n"));
    }
    // Outside a session: no priming, no ids.
    let reply = post(sluice.addr, &[("accept", PREFER_SSE)], PING).await;
    let frames = raw_frames(&reply.body);
    assert_eq!(frames.len(), 1, "{frames:?}");
    assert_eq!(frame_id(&frames[0]), None);
}

#[tokio::test]
async fn get_stream_statuses() {
    let sluice = Sluice::start().await;
    let addr = sluice.addr;
    let id = session(addr, "2025-11-25").await;
    // 406 without text/event-stream in Accept (a missing Accept lists nothing).
    get(
        addr,
        &[("accept", "application/json"), ("mcp-session-id", &id)],
    )
    .await
    .assert_error(406, -32000, Value::Null);
    get(addr, &[("mcp-session-id", &id)])
        .await
        .assert_error(406, -32000, Value::Null);
    get(
        addr,
        &[
            ("accept", "text/event-stream"),
            ("mcp-session-id", "AAAAAAAAAAAAAAAAAAAAAA"),
        ],
    )
    .await
    .assert_error(404, -32000, Value::Null);
    // The first is served (opening with priming at 2025-11-25), a second concurrent one is 409.
    let mut first = get_stream(addr, &id, &[]).await;
    let chunk = first.next_chunk().await.expect("priming");
    assert!(is_priming(&String::from_utf8_lossy(&chunk)), "{chunk:?}");
    get(
        addr,
        &[("accept", "text/event-stream"), ("mcp-session-id", &id)],
    )
    .await
    .assert_error(409, -32000, Value::Null);
    // DELETE closes it.
    assert_eq!(delete(addr, &id).await.status, StatusCode::NO_CONTENT);
    assert!(first.ends().await);

    let sluice = Sluice::with(|c| c.sse_enabled = false).await;
    let id = session(sluice.addr, "2025-11-25").await;
    let reply = get(
        sluice.addr,
        &[("accept", "text/event-stream"), ("mcp-session-id", &id)],
    )
    .await;
    reply.assert_error(405, -32000, Value::Null);
    assert_eq!(reply.header("allow"), "POST, DELETE");
}

#[tokio::test]
async fn resumption_replays_only_later_frames_of_the_same_stream() {
    let sluice = Sluice::start().await;
    let addr = sluice.addr;
    let id = session(addr, "2025-11-25").await;
    let reply = post(
        addr,
        &[("mcp-session-id", &id), ("accept", PREFER_SSE)],
        PING,
    )
    .await;
    let frames = raw_frames(&reply.body);
    let priming = frame_id(&frames[0]).expect("priming id").to_owned();
    let response = frame_id(&frames[1]).expect("response id").to_owned();

    // From the priming id: exactly the response, then the finished stream ends.
    let mut resumed = get_stream(addr, &id, &[("last-event-id", &priming)]).await;
    let message = resumed.next_message().await;
    assert_eq!(message, json!({"jsonrpc":"2.0","id":"p","result":{}}));
    assert_eq!(
        resumed.last_event_id().map(|b| b.to_vec()),
        Some(response.as_bytes().to_vec())
    );
    assert!(resumed.ends().await);

    // From the last id: nothing after it.
    let mut resumed = get_stream(addr, &id, &[("last-event-id", &response)]).await;
    assert!(resumed.ends().await);

    // Another session presenting this id gets a fresh stream with nothing replayed: its own
    // GET stream, opening with its own priming event.
    let other = session(addr, "2025-11-25").await;
    let mut fresh = get_stream(addr, &other, &[("last-event-id", &priming)]).await;
    let chunk = fresh.next_chunk().await.expect("priming");
    let text = String::from_utf8_lossy(&chunk).into_owned();
    assert!(is_priming(&text), "{text}");
    assert!(!text.contains("result"), "{text}");
    assert_ne!(frame_id(&text), Some(priming.as_str()));
    // A malformed or foreign-instance id is fresh too (the first GET is still live: 409 shows
    // the fresh path was taken rather than a resume).
    get(
        addr,
        &[
            ("accept", "text/event-stream"),
            ("mcp-session-id", &other),
            ("last-event-id", "elsewhere.1.1"),
        ],
    )
    .await
    .assert_error(409, -32000, Value::Null);
}

/// Calls `slow` (request id `id`) in `session` from a task: the reply is whatever the session
/// answers once the call ends.
fn call_slow(addr: SocketAddr, session: &str, id: u64) -> tokio::task::JoinHandle<Reply> {
    let call = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"slow","arguments":{{}}}}}}"#
    );
    let session = session.to_owned();
    tokio::spawn(async move {
        post(
            addr,
            &[
                ("mcp-session-id", &session),
                ("mcp-protocol-version", "2025-11-25"),
            ],
            &call,
        )
        .await
    })
}

#[tokio::test]
async fn notifications_cancelled_stops_the_request_and_no_response_is_sent() {
    let sluice = Sluice::start().await;
    let addr = sluice.addr;
    let id = session(addr, "2025-11-25").await;
    let pending = call_slow(addr, &id, 42);
    sluice.downstream.wait_entered().await;
    // Another session cannot cancel it.
    let intruder = session(addr, "2025-11-25").await;
    let cancel =
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":42}}"#;
    let reply = post(addr, &[("mcp-session-id", &intruder)], cancel).await;
    assert_eq!(reply.status, StatusCode::ACCEPTED);
    assert!(!pending.is_finished());
    let reply = post(addr, &[("mcp-session-id", &id)], cancel).await;
    assert_eq!(reply.status, StatusCode::ACCEPTED);
    sluice.downstream.wait_dropped().await;
    let reply = pending.await.expect("request task");
    assert_eq!(reply.status, StatusCode::OK);
    assert!(reply.messages().is_empty(), "{:?}", reply.body);
}

/// Opens a stateless `subscriptions/listen` stream with request id `id` asking for
/// `notifications` (the object of the listen params) and reads its acknowledgement (returned with the stream).
async fn open_listen(addr: SocketAddr, id: Value, notifications: Value) -> (SseReader, Value) {
    let listen = modern_body(id, "subscriptions/listen", notifications);
    let listen_req = request(
        addr,
        Method::POST,
        MCP,
        &[
            ("accept", BOTH),
            ("content-type", "application/json"),
            ("mcp-protocol-version", MODERN),
            ("mcp-method", "subscriptions/listen"),
        ],
        &listen,
    );
    let mut listener = SseReader::open(addr, listen_req).await;
    let ack = listener.next_message().await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    (listener, ack)
}

#[tokio::test]
async fn delete_cancels_the_sessions_in_flight_requests() {
    let sluice = Sluice::start().await;
    let addr = sluice.addr;
    let id = session(addr, "2025-11-25").await;
    let pending = call_slow(addr, &id, 7);
    sluice.downstream.wait_entered().await;
    let reply = send(
        addr,
        request(addr, Method::DELETE, MCP, &[("mcp-session-id", &id)], ""),
    )
    .await;
    assert_eq!(reply.status, StatusCode::NO_CONTENT);
    // The downstream call is dropped and no response is sent for the request.
    sluice.downstream.wait_dropped().await;
    let reply = pending.await.expect("request task");
    assert!(reply.messages().is_empty(), "{:?}", reply.body);
}

#[tokio::test]
async fn a_draining_server_ends_a_listen_stream_with_its_final_result() {
    let mut sluice = Sluice::start().await;
    let addr = sluice.addr;
    let (mut listener, _) = open_listen(
        addr,
        json!("sub-end"),
        json!({"notifications":{"toolsListChanged":true}}),
    )
    .await;
    sluice.shutdown();
    let last = listener.next_message().await;
    assert_eq!(last["id"], "sub-end", "{last}");
    assert_eq!(last["result"]["resultType"], "complete", "{last}");
    assert_eq!(
        last["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "sub-end",
        "{last}"
    );
    assert!(listener.ends().await);
}

#[tokio::test]
async fn a_prompt_change_pushes_prompts_and_resources_list_changed_only() {
    let sluice = Sluice::start().await;
    let addr = sluice.addr;
    let with_stream = session(addr, "2025-11-25").await;
    let mut stream = get_stream(addr, &with_stream, &[]).await;
    let (mut listener, _) = open_listen(
        addr,
        json!(7),
        json!({"notifications":{"toolsListChanged":true,"promptsListChanged":true}}),
    )
    .await;

    // Only the toolset prompt changes: the tool listing stays the same.
    let text =
        config_text(sluice.downstream.addr, Tools::Base).replace("Be brief.", "Be very brief.");
    let outcome = sluice.reload_text(&text);
    assert!(
        outcome.changed.is_empty(),
        "the tool listing did not change"
    );

    let first = stream.next_message().await;
    let second = stream.next_message().await;
    let mut methods = [first["method"].clone(), second["method"].clone()];
    methods.sort_by_key(|m| m.to_string());
    assert_eq!(
        methods,
        [
            json!("notifications/prompts/list_changed"),
            json!("notifications/resources/list_changed")
        ]
    );
    // The listen stream asked for prompts (not resources): it gets exactly that one.
    let message = listener.next_message().await;
    assert_eq!(message["method"], "notifications/prompts/list_changed");
    assert_eq!(
        message["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        7
    );
}

#[tokio::test]
async fn list_changed_reaches_live_streams_after_a_reload() {
    let sluice = Sluice::start().await;
    let addr = sluice.addr;
    let with_stream = session(addr, "2025-06-18").await;
    let mut stream = get_stream(addr, &with_stream, &[]).await;
    // A session of another client holds a stream too; a client that did not change would not.
    let (mut listener, ack) = open_listen(
        addr,
        json!("sub-1"),
        json!({"notifications":{"toolsListChanged":true}}),
    )
    .await;
    assert_eq!(listener.status, StatusCode::OK);
    assert_eq!(listener.header("mcp-session-id"), "");
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "sub-1",
        "{ack}"
    );

    sluice.add_tool();
    let message = stream.next_message().await;
    assert_eq!(message["method"], "notifications/tools/list_changed");
    assert!(message.get("id").is_none());
    let message = listener.next_message().await;
    assert_eq!(message["method"], "notifications/tools/list_changed");
    assert_eq!(
        message["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "sub-1",
        "{message}"
    );
}

#[tokio::test]
async fn listen_needs_event_stream_in_accept() {
    let sluice = Sluice::start().await;
    let listen = modern_body(
        json!(1),
        "subscriptions/listen",
        json!({"notifications":{"toolsListChanged":true}}),
    );
    let reply = modern(
        sluice.addr,
        "subscriptions/listen",
        None,
        &[("accept", "application/json")],
        &listen,
    )
    .await;
    reply.assert_error(406, -32000, Value::Null);
}

#[tokio::test]
async fn idle_streams_get_keepalive_comments() {
    let sluice = Sluice::with(|c| c.sse_keepalive = Duration::from_millis(50)).await;
    let id = session(sluice.addr, "2025-06-18").await;
    let mut stream = get_stream(sluice.addr, &id, &[]).await;
    let chunk = stream.next_chunk().await.expect("a keep-alive");
    assert_eq!(&chunk[..], b": keepalive\n\n");
}

// === tests: legacy HTTP+SSE ===

#[tokio::test]
async fn legacy_transport_end_to_end() {
    let sluice = Sluice::start().await;
    let addr = sluice.addr;
    let open_req = request(
        addr,
        Method::GET,
        "/runtime/acme/app/sse",
        &[("accept", "text/event-stream")],
        "",
    );
    let mut stream = SseReader::open(addr, open_req).await;
    assert_eq!(stream.status, StatusCode::OK);
    assert_eq!(stream.header("content-type"), "text/event-stream");
    let session_id = stream.header("mcp-session-id").to_owned();
    assert_eq!(session_id.len(), 22);
    let endpoint = stream.next().await.expect("endpoint event");
    assert_eq!(&endpoint.event[..], b"endpoint");
    let path = String::from_utf8(endpoint.data.to_vec()).expect("utf-8");
    assert_eq!(
        path,
        format!("/runtime/acme/app/messages?sessionId={session_id}")
    );
    let legacy_post = |path: String, body: &'static str| async move {
        let headers = [("content-type", "application/json")];
        send(addr, request(addr, Method::POST, &path, &headers, body)).await
    };

    let reply = legacy_post(path.clone(), r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"old","version":"1"}}}"#).await;
    assert_eq!((reply.status, reply.body.len()), (StatusCode::ACCEPTED, 0));
    let message = stream.next_message().await;
    assert_eq!(message["id"], 1);
    assert_eq!(message["result"]["protocolVersion"], "2024-11-05");

    // A notification produces no frame: the next frame is the tools/list response.
    let reply = legacy_post(
        path.clone(),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    )
    .await;
    assert_eq!(reply.status, StatusCode::ACCEPTED);
    let reply = legacy_post(
        path.clone(),
        r#"{"jsonrpc":"2.0","id":"t","method":"tools/list"}"#,
    )
    .await;
    assert_eq!(reply.status, StatusCode::ACCEPTED);
    let message = stream.next_message().await;
    assert_eq!(message["id"], "t");
    assert!(message["result"]["tools"].is_array(), "{message}");

    // Missing sessionId → 400; unknown or another owner's → 404.
    legacy_post(
        "/runtime/acme/app/messages".into(),
        r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#,
    )
    .await
    .assert_error(400, -32000, Value::Null);
    legacy_post(
        "/runtime/acme/app/messages?sessionId=AAAAAAAAAAAAAAAAAAAAAA".into(),
        r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#,
    )
    .await
    .assert_error(404, -32000, Value::Null);
    legacy_post(
        format!("/runtime/acme/other/messages?sessionId={session_id}"),
        r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#,
    )
    .await
    .assert_error(404, -32000, Value::Null);

    // Closing the stream ends the session (asynchronously: poll until it is gone).
    drop(stream);
    let gone = async {
        loop {
            let reply =
                legacy_post(path.clone(), r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#).await;
            if reply.status == StatusCode::NOT_FOUND {
                return;
            }
            assert_eq!(reply.status, StatusCode::ACCEPTED);
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(GUARD, gone)
        .await
        .expect("the session ends with its stream");
}

#[tokio::test]
async fn list_changed_is_not_queued_for_a_session_without_a_stream() {
    let sluice = Sluice::start().await;
    let addr = sluice.addr;
    let without = session(addr, "2025-06-18").await;
    // A witness session with a live stream shows when a reload has been delivered.
    let witness = session(addr, "2025-06-18").await;
    let mut witness_stream = get_stream(addr, &witness, &[]).await;
    // A reload while the session holds no stream…
    sluice.add_tool();
    let message = witness_stream.next_message().await;
    assert_eq!(message["method"], "notifications/tools/list_changed");
    // …leaves nothing for it: once it opens a stream, the next reload is the only message
    // before DELETE ends the stream.
    let mut stream = get_stream(addr, &without, &[]).await;
    assert!(!sluice.reload(Tools::Base).changed.is_empty());
    let message = stream.next_message().await;
    assert_eq!(message["method"], "notifications/tools/list_changed");
    assert_eq!(delete(addr, &without).await.status, StatusCode::NO_CONTENT);
    assert!(stream.ends().await);
}
