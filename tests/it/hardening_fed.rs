//! Integration tests (issue 13, points 9 and 14): federated reads are bounded in pages and
//! records, the downstream answer bytes the process holds at once are bounded, and every call
//! writes exactly one audit record even when its client goes away. Real sockets on 127.0.0.1: a
//! sluice server, fake providers and a fake REST downstream started by each test, audit records
//! read back from a file in a temporary directory.

use std::net::SocketAddr;
use std::ops::Deref;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use serde_json::{json, Value};
use sluice::sse::Decoder;
use tokio::sync::{mpsc, watch};

use crate::support::{self, full, http_server, write_request, TempDir, TestServer, GUARD};

const MCP: &str = "/runtime/t/c/mcp";
const OPT_IN: &str = "bos/source-results/v1";
/// Records per provider page of the fake providers.
const PROVIDER_PAGE: usize = 10;

// === fake servers ===

fn query_param(req: &Request<Incoming>, key: &str) -> Option<String> {
    req.uri().query()?.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        (k == key).then(|| v.to_owned())
    })
}

/// Providers at `/src/{name}`: `endless*` answers every page (of `PROVIDER_PAGE` records, ids
/// from the cursor on) with a `next_cursor`; `once` answers its first page with a cursor and
/// never answers the next one.
async fn providers() -> SocketAddr {
    http_server(|req: Request<Incoming>| async move {
        let name = req.uri().path().trim_start_matches("/src/").to_owned();
        let start: usize = query_param(&req, "cursor")
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        if name == "once" && start > 0 {
            std::future::pending::<()>().await;
        }
        let records: Vec<Value> = (start..start + PROVIDER_PAGE)
            .map(|i| {
                json!({
                    "source_identity": name,
                    "external_id": format!("{name}-{i}"),
                    "record_type": "person",
                    "observed_at": "2026-11-30T10:00:00Z",
                    "fields": {"name": format!("{name} {i}"), "mail": format!("{name}-{i}@example.com")},
                })
            })
            .collect();
        full(
            200,
            json!({"records": records, "next_cursor": (start + PROVIDER_PAGE).to_string()})
                .to_string(),
        )
    })
    .await
}

/// A REST downstream whose every answer is a JSON object of exactly `size` bytes, declared in
/// `Content-Length`: it sends the head and the first bytes at once, reports the request on
/// `arrived`, and sends the rest only once `release` says `true`.
struct BigAnswer {
    addr: SocketAddr,
    arrived: tokio::sync::Mutex<mpsc::UnboundedReceiver<()>>,
    release: watch::Sender<bool>,
}

impl BigAnswer {
    async fn start(size: usize) -> BigAnswer {
        let (arrived_tx, arrived_rx) = mpsc::unbounded_channel();
        let (release, released) = watch::channel(false);
        let addr = http_server(move |_req: Request<Incoming>| {
            let arrived = arrived_tx.clone();
            let released = released.clone();
            async move {
                let head = Bytes::from_static(b"{\"pad\":\"");
                let rest = {
                    let mut rest = vec![b'x'; size - head.len() - 2];
                    rest.extend_from_slice(b"\"}");
                    Bytes::from(rest)
                };
                let frames = futures_util::stream::unfold(0u8, move |step| {
                    let (head, rest) = (head.clone(), rest.clone());
                    let arrived = arrived.clone();
                    let mut released = released.clone();
                    async move {
                        match step {
                            0 => Some((Ok(Frame::data(head)), 1)),
                            1 => {
                                let _ = arrived.send(());
                                let _ = released.wait_for(|go| *go).await;
                                Some((Ok(Frame::data(rest)), 2))
                            }
                            _ => None,
                        }
                    }
                });
                let mut answer = hyper::Response::new(BodyExt::boxed(StreamBody::new(frames)));
                answer
                    .headers_mut()
                    .insert(http::header::CONTENT_LENGTH, size.into());
                answer
            }
        })
        .await;
        BigAnswer {
            addr,
            arrived: tokio::sync::Mutex::new(arrived_rx),
            release,
        }
    }

    /// Waits until `n` more requests have been answered with their head.
    async fn wait_arrived(&self, n: usize) {
        let mut arrived = self.arrived.lock().await;
        for _ in 0..n {
            tokio::time::timeout(GUARD, arrived.recv())
                .await
                .expect("the downstream was called in time")
                .expect("downstream running");
        }
    }
}

// === sluice ===

/// A sluice server with an audit file, tenant `t`, client `c`, anonymous callers.
struct Sluice {
    server: TestServer,
    dir: TempDir,
}

impl Deref for Sluice {
    type Target = TestServer;
    fn deref(&self) -> &TestServer {
        &self.server
    }
}

impl Sluice {
    async fn start(server: &str, tools: &str) -> Sluice {
        let dir = TempDir::new("hardening-fed");
        let text = format!(
            "[server]\n{server}\n[server.audit]\nsink = \"file\"\npath = \"{audit}\"\n\
             when_full = \"block\"\n\
             [[tenant]]\nid = \"t\"\nauth = {{ anonymous = true }}\n[[tenant.client]]\nid = \"c\"\n\
             [[tenant.toolset]]\nid = \"s\"\n{tools}\n\
             [[tenant.assignment]]\nclient = \"c\"\ntoolset = \"s\"\n",
            audit = dir.join("audit.jsonl").display(),
        );
        let server = TestServer::toml(&text).start().await;
        Sluice { server, dir }
    }

    /// The audit records of tool `tool` written so far, once at least `at_least` are there (or
    /// the guard has passed).
    async fn audit(&self, tool: &str, at_least: usize) -> Vec<Value> {
        let deadline = tokio::time::Instant::now() + GUARD;
        loop {
            let records = self.audit_now(tool);
            if records.len() >= at_least || tokio::time::Instant::now() > deadline {
                return records;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// The audit records of tool `tool` written so far.
    fn audit_now(&self, tool: &str) -> Vec<Value> {
        let text = std::fs::read_to_string(self.dir.join("audit.jsonl")).unwrap_or_default();
        text.lines()
            .map(|line| serde_json::from_str::<Value>(line).expect("audit line is JSON"))
            .filter(|record| record["tool"] == tool)
            .collect()
    }
}

fn federated_source(name: &str, providers: SocketAddr, extra: &str) -> String {
    format!(
        r#"
[[tenant.toolset.tool.downstream.source]]
source_type = "test"
source_identity = "{name}"
url = "http://{providers}/src/{name}"
timeout_ms = 20000
{extra}
[tenant.toolset.tool.downstream.source.fields]
display_name = "name"
email = "mail"
"#
    )
}

fn federated_tool(name: &str, extra: &str, sources: &[String]) -> String {
    format!(
        r#"
[[tenant.toolset.tool]]
name = "{name}"
description = "Federated people search."
[tenant.toolset.tool.downstream]
kind = "federated"
record_type = "person"
deadline_ms = 20000
{extra}
{}
[[tenant.toolset.tool.input]]
source = "q"
exposed = "query"
"#,
        sources.concat()
    )
}

fn rest_tool(name: &str, downstream: SocketAddr) -> String {
    format!(
        "[[tenant.toolset.tool]]\nname = \"{name}\"\ndescription = \"A large answer.\"\n\
         downstream = {{ kind = \"rest\", method = \"GET\", url = \"http://{downstream}/big\", \
         timeout_ms = 20000 }}\n"
    )
}

// === clients ===

/// A stateless-era (2026-07-28) `tools/call` body and its headers; `stream` opts into
/// `bos/source-results/v1`.
fn stateless_call(tool: &str, stream: bool) -> (String, Vec<(&'static str, String)>) {
    let mut capabilities = json!({});
    if stream {
        capabilities = json!({"experimental": {OPT_IN: {}}});
    }
    let body = json!({"jsonrpc":"2.0","id":"call-1","method":"tools/call","params":{
    "name": tool, "arguments": {"query": "x"}, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "it", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    }}});
    let headers = vec![
        ("accept", "application/json, text/event-stream".to_owned()),
        ("content-type", "application/json".to_owned()),
        ("mcp-protocol-version", "2026-07-28".to_owned()),
        ("mcp-method", "tools/call".to_owned()),
        ("mcp-name", tool.to_owned()),
    ];
    (body.to_string(), headers)
}

fn mcp_request(addr: SocketAddr, tool: &str, stream: bool) -> Request<Full<Bytes>> {
    let (body, headers) = stateless_call(tool, stream);
    let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
    support::request(addr, Method::POST, MCP, &headers, &body)
}

fn rest_request(addr: SocketAddr, tool: &str) -> Request<Full<Bytes>> {
    support::request(
        addr,
        Method::POST,
        &format!("/runtime/t/c/tools/{tool}"),
        &[("content-type", "application/json")],
        "{}",
    )
}

/// The JSON of every SSE event of a whole stream, in order.
async fn read_events(response: hyper::Response<Incoming>) -> Vec<Value> {
    let content_type = response.headers()["content-type"]
        .to_str()
        .unwrap_or("")
        .to_owned();
    assert!(
        content_type.starts_with("text/event-stream"),
        "{content_type}"
    );
    let mut body = response.into_body();
    let (mut decoder, mut pending, mut events) = (Decoder::new(), BytesMut::new(), Vec::new());
    while let Some(frame) = tokio::time::timeout(GUARD, body.frame())
        .await
        .expect("stream in time")
    {
        let Ok(data) = frame.expect("frame").into_data() else {
            continue;
        };
        pending.extend_from_slice(&data);
        while let Ok(Some(event)) = decoder.decode(&mut pending) {
            if !event.data.is_empty() {
                events.push(serde_json::from_slice(&event.data).expect("event is JSON"));
            }
        }
    }
    events
}

/// The `error` terminal (`{"code","reason"}`) and page count of each source in a stream.
fn terminals(events: &[Value]) -> std::collections::BTreeMap<String, (Value, usize)> {
    let mut out = std::collections::BTreeMap::new();
    for event in events
        .iter()
        .filter(|e| e["method"] == "notifications/bos/source_result")
    {
        let p = &event["params"];
        let name = p["source"]["source_identity"]
            .as_str()
            .expect("identity")
            .to_owned();
        let entry = out.entry(name).or_insert((Value::Null, 0));
        match p["status"].as_str() {
            Some("page") => {
                assert_eq!(entry.0, Value::Null, "no page after a terminal");
                entry.1 += p["records"].as_array().map_or(0, Vec::len);
            }
            Some("error") => {
                assert_eq!(p["records"], json!([]));
                entry.0 = p["error"].clone();
            }
            other => panic!("unexpected status {other:?}: {p}"),
        }
    }
    out
}

/// `(source identity, error object)` of each entry of `metadata.source_errors`.
fn source_errors(metadata: &Value) -> Vec<(String, Value)> {
    metadata["source_errors"]
        .as_array()
        .expect("source_errors")
        .iter()
        .map(|e| {
            (
                e["source"]["source_identity"]
                    .as_str()
                    .unwrap_or("")
                    .to_owned(),
                e["error"].clone(),
            )
        })
        .collect()
}

// === point 9: bounded federated reads ===

#[tokio::test]
async fn a_provider_that_always_returns_a_cursor_ends_at_max_pages_with_a_partial_result() {
    let providers = providers().await;
    let s = Sluice::start(
        "",
        &federated_tool(
            "endless",
            "",
            &[federated_source("endless", providers, "max_pages = 3")],
        ),
    )
    .await;
    let page_limit = json!({"code": "source_unavailable", "reason": "page_limit"});

    // Streamed: three provider pages delivered, then the source's error terminal.
    let response = support::open(s.addr, mcp_request(s.addr, "endless", true)).await;
    let events = read_events(response).await;
    let cut = terminals(&events);
    assert_eq!(
        cut["endless"],
        (page_limit.clone(), 3 * PROVIDER_PAGE),
        "{events:?}"
    );
    let last = events.last().expect("the final response");
    assert_eq!(last["id"], "call-1");
    let result = &last["result"];
    let metadata = &result["structuredContent"]["metadata"];
    assert_eq!(metadata["completeness"], "partial");
    assert_eq!(metadata["result_count"], 3 * PROVIDER_PAGE);
    assert_eq!(result["isError"], true);
    assert_eq!(
        source_errors(metadata),
        [("endless".to_owned(), page_limit.clone())]
    );

    // JSON: the same bounded, partial result.
    let reply = support::send(s.addr, mcp_request(s.addr, "endless", false)).await;
    assert_eq!(reply.status, StatusCode::OK);
    let result = &reply.json()["result"];
    let metadata = &result["structuredContent"]["metadata"];
    assert_eq!(metadata["completeness"], "partial");
    assert_eq!(metadata["result_count"], 3 * PROVIDER_PAGE);
    assert_eq!(result["isError"], true);
    assert_eq!(
        source_errors(metadata),
        [("endless".to_owned(), page_limit)]
    );
}

#[tokio::test]
async fn the_default_page_limit_bounds_a_source_that_sets_none() {
    let providers = providers().await;
    let s = Sluice::start(
        "federated_max_pages = 4",
        &federated_tool("endless", "", &[federated_source("endless", providers, "")]),
    )
    .await;
    let reply = support::send(s.addr, mcp_request(s.addr, "endless", false)).await;
    let metadata = &reply.json()["result"]["structuredContent"]["metadata"];
    assert_eq!(metadata["result_count"], 4 * PROVIDER_PAGE);
    assert_eq!(
        source_errors(metadata),
        [(
            "endless".to_owned(),
            json!({"code": "source_unavailable", "reason": "page_limit"})
        )]
    );
}

#[tokio::test]
async fn max_records_stops_every_source_and_the_result_is_partial() {
    let providers = providers().await;
    let sources = [
        federated_source("endless-a", providers, "max_pages = 1000"),
        federated_source("endless-b", providers, "max_pages = 1000"),
    ];
    let s = Sluice::start("", &federated_tool("capped", "max_records = 45", &sources)).await;
    let record_limit = json!({"code": "source_unavailable", "reason": "record_limit"});

    let response = support::open(s.addr, mcp_request(s.addr, "capped", true)).await;
    let events = read_events(response).await;
    let cut = terminals(&events);
    assert_eq!(cut.len(), 2, "{cut:?}");
    let delivered: usize = cut.values().map(|(_, n)| n).sum();
    assert_eq!(delivered, 45, "exactly max_records are delivered");
    for (error, _) in cut.values() {
        assert_eq!(error, &record_limit);
    }
    let result = &events.last().expect("final")["result"];
    let metadata = &result["structuredContent"]["metadata"];
    assert_eq!(metadata["completeness"], "partial");
    assert_eq!(metadata["result_count"], 45);
    assert_eq!(result["isError"], true);
    assert_eq!(
        source_errors(metadata),
        [
            ("endless-a".to_owned(), record_limit.clone()),
            ("endless-b".to_owned(), record_limit.clone()),
        ]
    );

    let reply = support::send(s.addr, mcp_request(s.addr, "capped", false)).await;
    let result = &reply.json()["result"];
    let metadata = &result["structuredContent"]["metadata"];
    assert_eq!(metadata["completeness"], "partial");
    assert_eq!(metadata["result_count"], 45);
    assert_eq!(
        source_errors(metadata),
        [
            ("endless-a".to_owned(), record_limit.clone()),
            ("endless-b".to_owned(), record_limit),
        ]
    );
}

#[tokio::test]
async fn parallel_large_answers_past_the_budget_fail_fast_with_server_busy() {
    // Each answer is 1 MB; the process may hold 2.5 MB of answers at once.
    let downstream = BigAnswer::start(1_000_000).await;
    let s = Sluice::start(
        "downstream_answer_budget_bytes = 2500000",
        &rest_tool("big", downstream.addr),
    )
    .await;
    // Two calls hold their answers (the downstream sent the head, the rest waits).
    let held: Vec<_> = (0..2)
        .map(|_| tokio::spawn(support::send(s.addr, rest_request(s.addr, "big"))))
        .collect();
    downstream.wait_arrived(2).await;
    // Time for sluice to read both heads (and reserve both answers).
    tokio::time::sleep(Duration::from_millis(500)).await;
    // Further calls cannot hold a third answer: they fail at once, REST with 503 …
    for _ in 0..4 {
        let reply = support::send(s.addr, rest_request(s.addr, "big")).await;
        assert_eq!(reply.status, StatusCode::SERVICE_UNAVAILABLE);
        let message = reply.json()["error"]["message"]
            .as_str()
            .unwrap_or("")
            .to_owned();
        assert!(message.contains("Server busy"), "{message}");
    }
    // … and MCP with a tool error result.
    let reply = support::send(s.addr, mcp_request(s.addr, "big", false)).await;
    assert_eq!(reply.status, StatusCode::OK);
    let result = &reply.json()["result"];
    assert_eq!(result["isError"], true);
    assert!(
        result["content"][0]["text"]
            .as_str()
            .is_some_and(|text| text.starts_with("Server busy")),
        "{result}"
    );
    // The held answers complete; their bytes are given back, so calls succeed again.
    downstream.release.send_replace(true);
    for call in held {
        let reply = call.await.expect("task");
        assert_eq!(reply.status, StatusCode::OK);
        assert_eq!(reply.body.len(), 1_000_000);
    }
    let reply = support::send(s.addr, rest_request(s.addr, "big")).await;
    assert_eq!(reply.status, StatusCode::OK);
}

// === point 14: one audit record per call, cancelled when the client went away ===

/// Waits for the one record of `tool`, then lets the downstream finish (a call still running
/// would now write a second record) and checks that no second record comes.
async fn the_only_record(s: &Sluice, tool: &str, downstream: Option<&BigAnswer>) -> Value {
    let records = s.audit(tool, 1).await;
    assert_eq!(records.len(), 1, "{records:?}");
    if let Some(downstream) = downstream {
        downstream.release.send_replace(true);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let records = s.audit_now(tool);
    assert_eq!(records.len(), 1, "exactly one record: {records:?}");
    records[0].clone()
}

/// A call of `big` over `surface` (`"rest"` or `"mcp"`) whose client goes away once sluice has
/// read the downstream's head leaves exactly one `cancelled` record.
async fn check_disconnect_recorded_as_cancelled(surface: &str) {
    let downstream = BigAnswer::start(10_000).await;
    let s = Sluice::start("", &rest_tool("big", downstream.addr)).await;
    let request = match surface {
        "rest" => rest_request(s.addr, "big"),
        _ => mcp_request(s.addr, "big", false),
    };
    let client = write_request(s.addr, &request).await;
    downstream.wait_arrived(1).await;
    // Long enough for sluice to read the downstream's head; then the client goes away.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    drop(client);
    let record = the_only_record(&s, "big", Some(&downstream)).await;
    assert_eq!(record["surface"], surface);
    assert_eq!(record["call_type"], "tool_call");
    assert_eq!(record["outcome"], "cancelled");
    assert_eq!(
        record["detail"],
        "client disconnected; downstream answered 200"
    );
    assert!(record["duration_us"].as_u64().unwrap_or(0) >= 1_000_000);
}

#[tokio::test]
async fn a_rest_call_whose_client_disconnects_is_recorded_once_as_cancelled() {
    check_disconnect_recorded_as_cancelled("rest").await;
}

#[tokio::test]
async fn an_mcp_call_whose_client_disconnects_is_recorded_once_as_cancelled() {
    check_disconnect_recorded_as_cancelled("mcp").await;
}

#[tokio::test]
async fn a_federated_stream_cut_mid_way_is_recorded_once_as_cancelled() {
    let providers = providers().await;
    let s = Sluice::start(
        "",
        &federated_tool("people", "", &[federated_source("once", providers, "")]),
    )
    .await;
    let response = support::open(s.addr, mcp_request(s.addr, "people", true)).await;
    let mut body = response.into_body();
    // Read until the first page has arrived; the source's next page never comes.
    let mut seen = BytesMut::new();
    let page = b"\"status\":\"page\"";
    while !seen.windows(page.len()).any(|w| w == page) {
        let frame = tokio::time::timeout(GUARD, body.frame())
            .await
            .expect("a page in time")
            .expect("stream open")
            .expect("frame");
        if let Ok(data) = frame.into_data() {
            seen.extend_from_slice(&data);
        }
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    drop(body);
    let record = the_only_record(&s, "people", None).await;
    assert_eq!(record["call_type"], "source_result_stream");
    assert_eq!(record["outcome"], "cancelled");
    assert_eq!(record["detail"], "client disconnected");
    let duration = record["duration_us"].as_u64().unwrap_or(0);
    assert!(
        (500_000..20_000_000).contains(&duration),
        "a realistic duration: {duration} µs"
    );
}
