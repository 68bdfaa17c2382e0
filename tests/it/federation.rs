//! Integration tests: federated reads and the `bos/source-results/v1` event stream, over real
//! sockets, against real provider servers started by each test, read by a streaming client that
//! parses the SSE incrementally with `sluice::sse::Decoder` and checks the contract's consumer
//! checklist (shared/spec/000 §6) on every stream.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use sluice::catalog::Catalog;
use sluice::sse::Decoder;
use sluice::ServeConfig;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot};

const MCP: &str = "/runtime/t/c/mcp";
const GUARD: Duration = Duration::from_secs(20);
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
struct Providers {
    addr: SocketAddr,
    dropped: tokio::sync::Mutex<mpsc::UnboundedReceiver<String>>,
}

struct DropSignal(mpsc::UnboundedSender<String>, String);

impl Drop for DropSignal {
    fn drop(&mut self) {
        let _ = self.0.send(self.1.clone());
    }
}

impl Providers {
    async fn start(sources: HashMap<&'static str, Behaviour>) -> Arc<Providers> {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (dropped_tx, dropped_rx) = mpsc::unbounded_channel();
        let sources = Arc::new(sources);
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let sources = Arc::clone(&sources);
                let dropped_tx = dropped_tx.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |req: Request<Incoming>| {
                        let sources = Arc::clone(&sources);
                        let dropped_tx = dropped_tx.clone();
                        async move { Ok::<_, Infallible>(serve(&sources, req, dropped_tx).await) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Arc::new(Providers {
            addr,
            dropped: tokio::sync::Mutex::new(dropped_rx),
        })
    }

    async fn wait_dropped(&self) -> String {
        let mut rx = self.dropped.lock().await;
        tokio::time::timeout(GUARD, rx.recv())
            .await
            .expect("a provider request was dropped in time")
            .expect("channel open")
    }
}

async fn serve(
    sources: &HashMap<&'static str, Behaviour>,
    req: Request<Incoming>,
    dropped: mpsc::UnboundedSender<String>,
) -> hyper::Response<Full<Bytes>> {
    let path = req.uri().path().to_owned();
    let query = req.uri().query().unwrap_or("").to_owned();
    let name = path.trim_start_matches("/src/").to_owned();
    let param = |key: &str| {
        query.split('&').find_map(|pair| {
            let (k, v) = pair.split_once('=')?;
            (k == key).then(|| v.to_owned())
        })
    };
    let reply = |status: u16, body: Value| {
        let mut response = hyper::Response::new(Full::new(Bytes::from(body.to_string())));
        *response.status_mut() = StatusCode::from_u16(status).expect("status");
        response
    };
    match sources.get(name.as_str()) {
        None => reply(404, json!({})),
        Some(Behaviour::Status(status)) => {
            reply(*status, json!({"message": "provider secret detail"}))
        }
        Some(Behaviour::Hang) => {
            let _signal = DropSignal(dropped, name);
            std::future::pending::<()>().await;
            reply(200, json!({}))
        }
        Some(Behaviour::Records {
            n,
            page,
            delay,
            dup,
        }) => {
            tokio::time::sleep(*delay).await;
            let limit: usize = param("limit").and_then(|l| l.parse().ok()).unwrap_or(100);
            let start: usize = param("cursor").and_then(|c| c.parse().ok()).unwrap_or(0);
            let end = (start + limit.min(*page)).min(*n);
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
            let next = (end < *n).then(|| end.to_string());
            reply(200, json!({"records": records, "next_cursor": next}))
        }
    }
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
    addr: SocketAddr,
    providers: Arc<Providers>,
    _stop: oneshot::Sender<()>,
}

async fn start(
    sources: HashMap<&'static str, Behaviour>,
    tools: impl Fn(SocketAddr) -> String,
) -> Sluice {
    let providers = Providers::start(sources).await;
    // Plain (not source-results) answers as JSON, as these tests read them: the framing of
    // handshake-era answers is not what they test.
    let text = format!(
        "[server]\npost_framing = \"json\"\n[[tenant]]\nid = \"t\"\nauth = {{ anonymous = true }}\n[[tenant.client]]\nid = \"c\"\n\
         [[tenant.toolset]]\nid = \"s\"\n{}\n[[tenant.assignment]]\nclient = \"c\"\ntoolset = \"s\"\n",
        tools(providers.addr)
    );
    let config = sluice::catalog::load::parse(&text, "test").expect("parses");
    let catalog = Arc::new(Catalog::from_config(&config).expect("valid"));
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(sluice::serve(
        listener,
        ServeConfig::from_catalog(catalog),
        async move {
            let _ = stopped.await;
        },
    ));
    Sluice {
        addr,
        providers,
        _stop: stop,
    }
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
        meta.insert(
            "io.modelcontextprotocol/protocolVersion".into(),
            json!("2026-07-28"),
        );
        meta.insert(
            "io.modelcontextprotocol/clientInfo".into(),
            json!({"name": "it", "version": "1"}),
        );
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
    let stream = TcpStream::connect(addr).await.expect("connect");
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .expect("handshake");
    tokio::spawn(conn);
    let mut req = Request::builder()
        .method(Method::POST)
        .uri(MCP)
        .header("host", "localhost")
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json");
    if stateless {
        req = req
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", tool);
    }
    let req = req
        .body(Full::new(Bytes::from(body.to_string())))
        .expect("request");
    let response = tokio::time::timeout(GUARD, sender.send_request(req))
        .await
        .expect("answered in time")
        .expect("response");
    // The connection task owns the socket; keep the sender alive with the response.
    tokio::spawn(async move {
        let _sender = sender;
        tokio::time::sleep(GUARD).await;
    });
    response
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
    dropped.insert(s.providers.wait_dropped().await);
    dropped.insert(s.providers.wait_dropped().await);
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
    assert_eq!(s.providers.wait_dropped().await, "stuck");
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

    let stream = TcpStream::connect(s.addr).await.expect("connect");
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .expect("handshake");
    tokio::spawn(conn);
    let get = |path: &str| {
        Request::builder()
            .uri(path)
            .header("host", "localhost")
            .body(Full::new(Bytes::new()))
            .expect("request")
    };
    let page = sender
        .send_request(get("/contracts/bos-source-results-v1"))
        .await
        .expect("page");
    assert_eq!(page.status(), StatusCode::OK);
    assert!(page.headers()["content-type"]
        .to_str()
        .is_ok_and(|v| v.starts_with("text/markdown")));
    let text = page.into_body().collect().await.expect("body").to_bytes();
    assert!(String::from_utf8_lossy(&text).contains("notifications/bos/source_result"));

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
    let metrics = sender.send_request(get("/metrics")).await.expect("metrics");
    let text = metrics
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    let text = String::from_utf8_lossy(&text);
    assert!(
        text.contains("sluice_source_errors_total{code=\"source_timeout\"} 1"),
        "{text}"
    );
    assert!(text.contains("sluice_source_errors_total{code=\"source_unavailable\"} 1"));
}
