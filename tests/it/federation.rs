//! Integration tests: federated reads and the `bos/source-results/v1` event stream, over real
//! sockets, against real provider servers started by each test, read by a streaming client that
//! parses the SSE incrementally with `sluice::sse::Decoder` and checks the contract's consumer
//! checklist (the published `bos/source-results/v1` contract §6) on every stream.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::SocketAddr;
use std::ops::Deref;
use std::time::Duration;

use bytes::BytesMut;
use http::{Method, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use serde_json::{json, Value};
use sluice::sse::Decoder;

use crate::support::{
    self, full, open, request_to_host, stateless_meta, Answer as Route, Answered, Downstream,
    Received, TestServer, GUARD,
};

const MCP: &str = "/runtime/t/c/mcp";
const OPT_IN: &str = "bos/source-results/v1";

// === providers ===

/// How one provider source behaves.
#[derive(Clone)]
enum Behaviour {
    /// `n` records (`{prefix}-{i}`, emails `p{i % dup}@example.com` so sources overlap), pages of
    /// at most `page` records (the provider's own cut), `delay` before each page.
    Records {
        n: usize,
        page: usize,
        delay: Duration,
        dup: usize,
    },
    /// Never answers; reports on `dropped` when the request is abandoned.
    Hang,
    /// Answers with this status.
    Status(u16),
}

/// Provider servers for every source of a test, on one listener: `/src/{name}`.
async fn providers(sources: HashMap<&'static str, Behaviour>) -> Downstream {
    let mut api = Downstream::new().fallback(Route::Plain(404, "{}"));
    for (name, behaviour) in sources {
        let answer = match behaviour {
            Behaviour::Status(status) => {
                Route::Plain(status, r#"{"message":"provider secret detail"}"#)
            }
            // The provider reports the request's path when it is abandoned.
            Behaviour::Hang => Route::Stall,
            Behaviour::Records {
                n,
                page,
                delay,
                dup,
            } => Route::with(move |req| records(name, req, n, page, delay, dup)),
        };
        api = api.route(&format!("/src/{name}"), answer);
    }
    api.start().await
}

/// The source whose request was abandoned next.
async fn wait_dropped(providers: &Downstream) -> String {
    let path = providers.wait_dropped().await;
    path.trim_start_matches("/src/").to_owned()
}

/// One page of source `name`'s `n` records from the request's `cursor`.
async fn records(
    name: &str,
    req: Received,
    n: usize,
    page: usize,
    delay: Duration,
    dup: usize,
) -> Answered {
    let query = req.uri.split_once('?').map_or("", |(_, q)| q).to_owned();
    let param = |key: &str| {
        query.split('&').find_map(|pair| {
            let (k, v) = pair.split_once('=')?;
            (k == key).then(|| v.to_owned())
        })
    };
    tokio::time::sleep(delay).await;
    let limit: usize = param("limit").and_then(|l| l.parse().ok()).unwrap_or(100);
    let start: usize = param("cursor").and_then(|c| c.parse().ok()).unwrap_or(0);
    let end = (start + limit.min(page)).min(n);
    let records: Vec<Value> = (start..end)
        .map(|i| {
            json!({
                "source_identity": name,
                "external_id": format!("{name}-{i}"),
                "record_type": "person",
                "observed_at": "2026-11-30T10:00:00Z",
                "version": i,
                "fields": {
                    "name": format!("Person {i}"),
                    "mail": format!("P{}@Example.com ", i % dup),
                    "q": param("q"),
                },
            })
        })
        .collect();
    let next = (end < n).then(|| end.to_string());
    full(
        200,
        json!({"records": records, "next_cursor": next}).to_string(),
    )
}

// === sluice ===

fn source(name: &str, providers: SocketAddr, timeout_ms: u64) -> String {
    format!(
        r#"
[[tenant.toolset.tool.downstream.source]]
source_type = "test"
source_identity = "{name}"
url = "http://{providers}/src/{name}"
timeout_ms = {timeout_ms}
[tenant.toolset.tool.downstream.source.fields]
display_name = "name"
email = "mail"
attributes = {{ q = "q" }}
"#
    )
}

fn tool(name: &str, deadline_ms: u64, sources: &[String]) -> String {
    format!(
        r#"
[[tenant.toolset.tool]]
name = "{name}"
description = "Federated people search."
[tenant.toolset.tool.downstream]
kind = "federated"
record_type = "person"
deadline_ms = {deadline_ms}
{}
[[tenant.toolset.tool.input]]
source = "q"
exposed = "query"
"#,
        sources.concat()
    )
}

struct Sluice {
    server: TestServer,
    providers: Downstream,
}

impl Deref for Sluice {
    type Target = TestServer;
    fn deref(&self) -> &TestServer {
        &self.server
    }
}

async fn start(
    sources: HashMap<&'static str, Behaviour>,
    tools: impl Fn(SocketAddr) -> String,
) -> Sluice {
    let providers = providers(sources).await;
    // Plain (not source-results) answers as JSON, as these tests read them: the framing of
    // handshake-era answers is not what they test.
    let text = format!(
        "[server]\npost_framing = \"json\"\n[[tenant]]\nid = \"t\"\nauth = {{ anonymous = true }}\n[[tenant.client]]\nid = \"c\"\n\
         [[tenant.toolset]]\nid = \"s\"\n{}\n[[tenant.assignment]]\nclient = \"c\"\ntoolset = \"s\"\n",
        tools(providers.addr)
    );
    let server = TestServer::toml(&text).start().await;
    Sluice { server, providers }
}

/// The standard set: `a` (25 records, provider pages of 10), `b` (140 records with distinct
/// emails in one provider page, split by sluice into 100 + 40; a's 25 emails are among them),
/// `empty`, `broken` (503), `slow` (times out).
async fn standard() -> Sluice {
    let ms = Duration::from_millis;
    let sources = HashMap::from([
        (
            "a",
            Behaviour::Records {
                n: 25,
                page: 10,
                delay: ms(5),
                dup: 30,
            },
        ),
        (
            "b",
            Behaviour::Records {
                n: 140,
                page: 500,
                delay: ms(20),
                dup: 1000,
            },
        ),
        (
            "empty",
            Behaviour::Records {
                n: 0,
                page: 10,
                delay: ms(1),
                dup: 1,
            },
        ),
        ("broken", Behaviour::Status(503)),
        (
            "slow",
            Behaviour::Records {
                n: 5,
                page: 5,
                delay: ms(30_000),
                dup: 5,
            },
        ),
    ]);
    start(sources, |p| {
        tool(
            "people",
            10_000,
            &[
                source("a", p, 5_000),
                source("b", p, 5_000),
                source("empty", p, 5_000),
                source("broken", p, 5_000),
                source("slow", p, 300),
            ],
        ) + &tool(
            "fine",
            10_000,
            &[source("a", p, 5_000), source("empty", p, 5_000)],
        )
    })
    .await
}

// === the streaming client ===

/// What one answer was: its headers and every SSE event's JSON (comments counted apart).
struct Answer {
    status: StatusCode,
    content_type: String,
    headers: http::HeaderMap,
    comments: Vec<String>,
    events: Vec<Value>,
    /// Whether any frame carried an `id:` field.
    had_ids: bool,
    /// The raw body, when the answer was plain JSON.
    json: Option<Value>,
}

fn call_body(id: Value, tool: &str, opt_in: Option<Value>, stateless: bool) -> Value {
    let mut meta = serde_json::Map::new();
    let mut capabilities = json!({});
    if let Some(opt_in) = opt_in {
        capabilities = json!({"experimental": {OPT_IN: opt_in}});
    }
    if stateless || capabilities != json!({}) {
        meta.insert(
            "io.modelcontextprotocol/clientCapabilities".into(),
            capabilities,
        );
    }
    if stateless {
        stateless_meta(&mut meta);
    }
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{
        "name": tool, "arguments": {"query": "x"}, "_meta": meta}})
}

async fn send(
    addr: SocketAddr,
    body: &Value,
    stateless: bool,
    tool: &str,
) -> hyper::Response<Incoming> {
    let mut headers = vec![
        ("accept", "application/json, text/event-stream"),
        ("content-type", "application/json"),
    ];
    if stateless {
        headers.push(("mcp-protocol-version", "2026-07-28"));
        headers.push(("mcp-method", "tools/call"));
        headers.push(("mcp-name", tool));
    }
    let req = request_to_host("localhost", Method::POST, MCP, &headers, &body.to_string());
    open(addr, req).await
}

/// Reads the whole answer incrementally (frame by frame, as a streaming client would).
async fn read(response: hyper::Response<Incoming>) -> Answer {
    let (parts, mut body) = response.into_parts();
    let content_type = parts
        .headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let mut answer = Answer {
        status: parts.status,
        content_type: content_type.clone(),
        headers: parts.headers,
        comments: Vec::new(),
        events: Vec::new(),
        had_ids: false,
        json: None,
    };
    let mut raw = BytesMut::new();
    let mut decoder = Decoder::new();
    let mut pending = BytesMut::new();
    loop {
        let frame = tokio::time::timeout(GUARD, body.frame())
            .await
            .expect("body in time");
        let Some(frame) = frame else { break };
        let Ok(data) = frame.expect("frame").into_data() else {
            continue;
        };
        raw.extend_from_slice(&data);
        if content_type.starts_with("text/event-stream") {
            for line in String::from_utf8_lossy(&data).lines() {
                if let Some(comment) = line.strip_prefix(':') {
                    answer.comments.push(comment.trim().to_owned());
                }
                if line.starts_with("id:") {
                    answer.had_ids = true;
                }
            }
            pending.extend_from_slice(&data);
            while let Ok(Some(event)) = decoder.decode(&mut pending) {
                if !event.data.is_empty() {
                    answer
                        .events
                        .push(serde_json::from_slice(&event.data).expect("event is JSON"));
                }
            }
        }
    }
    if !content_type.starts_with("text/event-stream") {
        answer.json = Some(serde_json::from_slice(&raw).expect("JSON body"));
    }
    answer
}

/// Checks every rule of the contract's §4–§6 on a negotiated stream and returns the final
/// response.
fn check_stream(answer: &Answer, request_id: &Value) -> Value {
    assert_eq!(answer.status, StatusCode::OK);
    assert!(answer.content_type.starts_with("text/event-stream"));
    assert_eq!(answer.headers["cache-control"], "no-cache");
    assert_eq!(answer.headers["x-accel-buffering"], "no");
    assert_eq!(
        answer.comments.first().map(String::as_str),
        Some("bos/source-results/v1")
    );
    assert!(!answer.had_ids, "source-results streams carry no event ids");
    let (last, notifications) = answer
        .events
        .split_last()
        .expect("at least the final response");
    assert_eq!(
        &last["id"], request_id,
        "the final frame answers the request"
    );
    assert!(last.get("method").is_none());
    let mut sequence = 0;
    let mut pages: BTreeMap<(String, String), u64> = BTreeMap::new();
    let mut terminal: BTreeSet<(String, String)> = BTreeSet::new();
    for note in notifications {
        assert_eq!(note["method"], "notifications/bos/source_result", "{note}");
        assert!(note.get("id").is_none());
        let p = &note["params"];
        assert_eq!(&p["requestId"], request_id);
        let seq = p["sequence"].as_u64().expect("sequence");
        assert_eq!(
            seq,
            sequence + 1,
            "global sequence strictly increasing from 1"
        );
        sequence = seq;
        let key = (
            p["source"]["source_type"]
                .as_str()
                .expect("type")
                .to_owned(),
            p["source"]["source_identity"]
                .as_str()
                .expect("identity")
                .to_owned(),
        );
        assert!(
            !terminal.contains(&key),
            "nothing after a source's terminal: {p}"
        );
        let page_index = p["pageIndex"].as_u64().expect("pageIndex");
        let delivered = pages.entry(key.clone()).or_insert(0);
        match p["status"].as_str() {
            Some("page") => {
                assert_eq!(page_index, *delivered + 1, "pages advance by one from 1");
                *delivered = page_index;
                let n = p["records"].as_array().expect("records").len();
                assert!((1..=100).contains(&n), "page size bound: {n}");
            }
            Some("complete") => {
                assert_eq!(
                    page_index, *delivered,
                    "complete carries the last page index"
                );
                assert_eq!(p["records"], json!([]));
                terminal.insert(key);
            }
            Some("error") => {
                assert_eq!(p["records"], json!([]));
                assert!(p["error"]["code"].is_string());
                terminal.insert(key);
            }
            other => panic!("status {other:?}"),
        }
    }
    assert_eq!(
        terminal.len(),
        pages.len(),
        "exactly one terminal per source before the final response"
    );
    last.clone()
}

/// Every provenance entry of the delivered pages, and of the final records.
fn provenance(records: &Value) -> BTreeSet<String> {
    records
        .as_array()
        .expect("records")
        .iter()
        .flat_map(|r| r["sources"].as_array().expect("sources").iter())
        .map(|s| format!("{}/{}", s["source_identity"], s["external_id"]))
        .collect()
}

fn delivered_provenance(answer: &Answer) -> BTreeSet<String> {
    answer
        .events
        .iter()
        .filter(|e| e["method"] == "notifications/bos/source_result")
        .flat_map(|e| provenance(&e["params"]["records"]))
        .collect()
}

// === tests ===

#[tokio::test]
async fn a_negotiated_read_streams_every_source_then_one_authoritative_result() {
    let s = standard().await;
    let id = json!("search-1");
    let answer = read(
        send(
            s.addr,
            &call_body(id.clone(), "people", Some(json!({})), false),
            false,
            "people",
        )
        .await,
    )
    .await;
    let last = check_stream(&answer, &id);
    let result = &last["result"];
    let structured = &result["structuredContent"];
    // The merge of everything delivered: no record lost or invented.
    assert_eq!(
        provenance(&structured["result"]),
        delivered_provenance(&answer)
    );
    assert_eq!(delivered_provenance(&answer).len(), 25 + 140);
    // a's people are b's people by normalized email: 140 distinct people.
    assert_eq!(structured["result"].as_array().map(Vec::len), Some(140));
    assert_eq!(structured["metadata"]["result_count"], 140);
    let merged = structured["result"]
        .as_array()
        .expect("records")
        .iter()
        .find(|r| r["sources"].as_array().is_some_and(|s| s.len() > 1))
        .expect("a merged record");
    assert!(merged["identity_match"]["rules"]
        .as_array()
        .is_some_and(|rules| rules.contains(&json!("email"))));
    // b's 140-record provider page was split 100 + 40.
    let b_pages: Vec<usize> = answer
        .events
        .iter()
        .filter(|e| {
            e["params"]["source"]["source_identity"] == "b" && e["params"]["status"] == "page"
        })
        .map(|e| e["params"]["records"].as_array().map_or(0, Vec::len))
        .collect();
    assert_eq!(b_pages, [100, 40]);
    // The empty source: one complete with pageIndex 0.
    let empty: Vec<&Value> = answer
        .events
        .iter()
        .filter(|e| e["params"]["source"]["source_identity"] == "empty")
        .collect();
    assert_eq!(empty.len(), 1);
    assert_eq!(empty[0]["params"]["status"], "complete");
    assert_eq!(empty[0]["params"]["pageIndex"], 0);
    // Any source error makes the result partial, with the errors listed.
    let metadata = &structured["metadata"];
    assert_eq!(metadata["completeness"], "partial");
    assert_eq!(result["isError"], true);
    let errors: BTreeMap<String, String> = metadata["source_errors"]
        .as_array()
        .expect("source_errors")
        .iter()
        .map(|e| {
            (
                e["source"]["source_identity"]
                    .as_str()
                    .unwrap_or("")
                    .to_owned(),
                e["error"]["code"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    assert_eq!(
        errors,
        BTreeMap::from([
            ("broken".to_owned(), "source_unavailable".to_owned()),
            ("slow".to_owned(), "source_timeout".to_owned()),
        ])
    );
    assert_eq!(metadata["retrieval_mode"], "live_provider");
    // The text copy is the same result; no provider detail leaks anywhere.
    let text: Value = serde_json::from_str(result["content"][0]["text"].as_str().expect("text"))
        .expect("JSON text");
    assert_eq!(&text, structured);
    let everything = serde_json::to_string(&answer.events).expect("events");
    assert!(!everything.contains("provider secret detail"));
    assert!(!everything.contains("/src/"));
    // The arguments reached the providers as the query.
    assert_eq!(structured["result"][0]["attributes"]["q"], "x");
}

#[tokio::test]
async fn without_both_signals_the_same_result_comes_as_json() {
    let s = standard().await;
    let streamed = read(
        send(
            s.addr,
            &call_body(json!(1), "fine", Some(json!({})), false),
            false,
            "fine",
        )
        .await,
    )
    .await;
    let final_streamed = check_stream(&streamed, &json!(1));
    // A Boolean opt-in does not negotiate; no opt-in neither.
    for opt_in in [Some(json!(true)), None] {
        let answer = read(
            send(
                s.addr,
                &call_body(json!(2), "fine", opt_in, false),
                false,
                "fine",
            )
            .await,
        )
        .await;
        assert!(
            answer.content_type.starts_with("application/json"),
            "{}",
            answer.content_type
        );
        let body = answer.json.expect("JSON");
        let mut a = body["result"]["structuredContent"].clone();
        let mut b = final_streamed["result"]["structuredContent"].clone();
        // Only the invocation time differs.
        a["metadata"]["observed_at"] = Value::Null;
        b["metadata"]["observed_at"] = Value::Null;
        for (x, y) in [(&mut a, &mut b)] {
            for p in x["metadata"]["provenance"]
                .as_array_mut()
                .into_iter()
                .flatten()
            {
                p["observed_at"] = Value::Null;
            }
            for p in y["metadata"]["provenance"]
                .as_array_mut()
                .into_iter()
                .flatten()
            {
                p["observed_at"] = Value::Null;
            }
        }
        assert_eq!(a, b);
        assert_eq!(body["result"]["isError"], false);
        assert_eq!(a["metadata"]["completeness"], "complete");
    }
}

#[tokio::test]
async fn the_stateless_era_streams_with_its_headers_and_result_type() {
    let s = standard().await;
    let body = call_body(json!(7), "fine", Some(json!({})), true);
    let answer = read(send(s.addr, &body, true, "fine").await).await;
    let last = check_stream(&answer, &json!(7));
    assert_eq!(last["result"]["resultType"], "complete");
    assert_eq!(last["result"]["isError"], false);
    // A header mismatch is refused before any source runs: normal HTTP/JSON-RPC shape.
    let mut wrong = body.clone();
    wrong["params"]["name"] = json!("people");
    let answer = read(send(s.addr, &wrong, true, "fine").await).await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    assert!(answer.content_type.starts_with("application/json"));
}

#[tokio::test]
async fn errors_before_source_execution_keep_their_shape() {
    let s = standard().await;
    let answer = read(
        send(
            s.addr,
            &call_body(json!(3), "nope", Some(json!({})), false),
            false,
            "nope",
        )
        .await,
    )
    .await;
    // Unknown tool: a JSON-RPC error, no notifications.
    let message = match &answer.json {
        Some(json) => json.clone(),
        None => answer.events.last().cloned().expect("one message"),
    };
    assert_eq!(message["error"]["code"], -32602);
    assert!(answer.comments.is_empty());
}

#[tokio::test]
async fn a_client_disconnect_cancels_every_source_read() {
    let sources = HashMap::from([("h1", Behaviour::Hang), ("h2", Behaviour::Hang)]);
    let s = start(sources, |p| {
        tool(
            "hanging",
            60_000,
            &[source("h1", p, 60_000), source("h2", p, 60_000)],
        )
    })
    .await;
    let response = send(
        s.addr,
        &call_body(json!(1), "hanging", Some(json!({})), false),
        false,
        "hanging",
    )
    .await;
    let (_, mut body) = response.into_parts();
    // The opening comment arrives: the stream is live and both providers are being read.
    let first = tokio::time::timeout(GUARD, body.frame())
        .await
        .expect("first frame");
    assert!(first.is_some());
    drop(body);
    let mut dropped = BTreeSet::new();
    dropped.insert(wait_dropped(&s.providers).await);
    dropped.insert(wait_dropped(&s.providers).await);
    assert_eq!(dropped, BTreeSet::from(["h1".to_owned(), "h2".to_owned()]));
}

#[tokio::test]
async fn the_operation_deadline_keeps_delivered_records() {
    let ms = Duration::from_millis;
    let sources = HashMap::from([
        (
            "quick",
            Behaviour::Records {
                n: 3,
                page: 10,
                delay: ms(1),
                dup: 10,
            },
        ),
        ("stuck", Behaviour::Hang),
    ]);
    let s = start(sources, |p| {
        tool(
            "deadline",
            400,
            &[source("quick", p, 60_000), source("stuck", p, 60_000)],
        )
    })
    .await;
    let answer = read(
        send(
            s.addr,
            &call_body(json!("d"), "deadline", Some(json!({})), false),
            false,
            "deadline",
        )
        .await,
    )
    .await;
    let last = check_stream(&answer, &json!("d"));
    let structured = &last["result"]["structuredContent"];
    assert_eq!(structured["metadata"]["result_count"], 3);
    assert_eq!(structured["metadata"]["completeness"], "partial");
    assert_eq!(
        structured["metadata"]["source_errors"][0]["error"]["code"],
        "source_timeout"
    );
    assert_eq!(wait_dropped(&s.providers).await, "stuck");
}

#[tokio::test]
async fn sources_interleave_and_pages_arrive_before_the_slowest_source_ends() {
    let ms = Duration::from_millis;
    let sources = HashMap::from([
        (
            "fast",
            Behaviour::Records {
                n: 40,
                page: 10,
                delay: ms(15),
                dup: 1000,
            },
        ),
        (
            "steady",
            Behaviour::Records {
                n: 40,
                page: 10,
                delay: ms(20),
                dup: 1000,
            },
        ),
    ]);
    let s = start(sources, |p| {
        tool(
            "mix",
            10_000,
            &[source("fast", p, 10_000), source("steady", p, 10_000)],
        )
    })
    .await;
    let answer = read(
        send(
            s.addr,
            &call_body(json!(5), "mix", Some(json!({})), false),
            false,
            "mix",
        )
        .await,
    )
    .await;
    check_stream(&answer, &json!(5));
    let order: Vec<String> = answer
        .events
        .iter()
        .filter(|e| e["params"]["status"] == "page")
        .map(|e| {
            e["params"]["source"]["source_identity"]
                .as_str()
                .unwrap_or("")
                .to_owned()
        })
        .collect();
    let switches = order.windows(2).filter(|w| w[0] != w[1]).count();
    assert!(switches >= 2, "sources interleave: {order:?}");
}

#[tokio::test]
async fn discovery_advertises_the_extension_and_serves_its_contract_page() {
    let s = standard().await;
    let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"it","version":"1"}}});
    let answer = read(send(s.addr, &init, false, "").await).await;
    let message = answer
        .json
        .clone()
        .or_else(|| answer.events.last().cloned())
        .expect("initialize answer");
    let advert = &message["result"]["capabilities"]["experimental"][OPT_IN];
    assert_eq!(advert["pageSize"], 100);
    assert_eq!(advert["maxConcurrentSources"], 8);
    let contract = advert["contractUri"].as_str().expect("contractUri");
    let expected = format!("http://{}/contracts/bos-source-results-v1", s.addr);
    assert_eq!(contract, expected);

    let get = |path: &str| request_to_host("localhost", Method::GET, path, &[], "");
    let page = support::send(s.addr, get("/contracts/bos-source-results-v1")).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.content_type().starts_with("text/markdown"));
    assert!(page.text().contains("notifications/bos/source_result"));

    // Source failures are counted by code.
    read(
        send(
            s.addr,
            &call_body(json!(9), "people", None, false),
            false,
            "people",
        )
        .await,
    )
    .await;
    let text = support::send(s.addr, get("/metrics")).await.text();
    assert!(
        text.contains("sluice_source_errors_total{code=\"source_timeout\"} 1"),
        "{text}"
    );
    assert!(text.contains("sluice_source_errors_total{code=\"source_unavailable\"} 1"));
}
