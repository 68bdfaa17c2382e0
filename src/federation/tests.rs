//! Run-loop tests against real hyper providers on 127.0.0.1:0, plus the merge property test.
//!
//! Each provider is a small hyper server whose answer is a function of the request (path and
//! query); it counts requests in flight (and the most at once) and notices when a request is
//! dropped before its answer was produced. Time-dependent cases (per-source timeout, operation
//! deadline) wait until the fast parts are observed, then `tokio::time::pause()` so the slow
//! timers fire at once instead of sleeping.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures_util::future::BoxFuture;
use http::{Request, Response};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use proptest::prelude::*;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, Notify};
use tokio::task::JoinSet;

use super::*;
use crate::config::{Source, SourceCredential, SourceFields};

// === test providers ===

/// What a provider does with one request.
#[derive(Clone)]
enum Answer {
    Json(String),
    Status(u16, &'static str),
    /// Never answers.
    Hang,
    /// Answers after a real delay (only to make overlap observable).
    Delayed(Duration, String),
}

type Behavior = Arc<dyn Fn(&Seen) -> Answer + Send + Sync>;

/// A request as the provider saw it.
#[derive(Debug, Clone)]
struct Seen {
    path: String,
    query: HashMap<String, String>,
    raw_query: String,
    headers: http::HeaderMap,
}

#[derive(Default)]
struct Counters {
    arrived: AtomicUsize,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    dropped: AtomicUsize,
    seen: Mutex<Vec<Seen>>,
    changed: Notify,
}

/// Counts a request in flight; a guard dropped before `finish` is a cancelled request.
struct InFlight {
    counters: Arc<Counters>,
    finished: bool,
}

impl InFlight {
    fn new(counters: &Arc<Counters>) -> Self {
        let now = counters.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        counters.max_in_flight.fetch_max(now, Ordering::SeqCst);
        counters.arrived.fetch_add(1, Ordering::SeqCst);
        counters.changed.notify_waiters();
        Self {
            counters: Arc::clone(counters),
            finished: false,
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.counters.in_flight.fetch_sub(1, Ordering::SeqCst);
        if !self.finished {
            self.counters.dropped.fetch_add(1, Ordering::SeqCst);
        }
        self.counters.changed.notify_waiters();
    }
}

struct Provider {
    base: String,
    counters: Arc<Counters>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Provider {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Provider {
    async fn start(behavior: impl Fn(&Seen) -> Answer + Send + Sync + 'static) -> Self {
        let behavior: Behavior = Arc::new(behavior);
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let counters = Arc::new(Counters::default());
        let shared = Arc::clone(&counters);
        let task = tokio::spawn(async move {
            // Connections live in this set, so aborting the accept task closes them too.
            let mut connections = JoinSet::new();
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let (behavior, counters) = (Arc::clone(&behavior), Arc::clone(&shared));
                let service = service_fn(move |request: Request<Incoming>| {
                    let (behavior, counters) = (Arc::clone(&behavior), Arc::clone(&counters));
                    async move { Ok::<_, Infallible>(answer(&behavior, &counters, request).await) }
                });
                connections.spawn(async move {
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Self {
            base,
            counters,
            task,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn seen(&self) -> Vec<Seen> {
        self.counters.seen.lock().unwrap().clone()
    }

    /// Waits (bounded, real time) until `check` holds.
    async fn wait_for(&self, what: &str, check: impl Fn(&Counters) -> bool) {
        let wait = async {
            loop {
                let changed = self.counters.changed.notified();
                if check(&self.counters) {
                    return;
                }
                changed.await;
            }
        };
        if tokio::time::timeout(Duration::from_secs(10), wait)
            .await
            .is_err()
        {
            panic!("provider never saw: {what}");
        }
    }
}

async fn answer(
    behavior: &Behavior,
    counters: &Arc<Counters>,
    request: Request<Incoming>,
) -> Response<Full<Bytes>> {
    let raw_query = request.uri().query().unwrap_or("").to_owned();
    let query = raw_query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| {
            let v = percent_encoding::percent_decode_str(v).decode_utf8_lossy();
            (k.to_owned(), v.into_owned())
        })
        .collect();
    let seen = Seen {
        path: request.uri().path().to_owned(),
        query,
        raw_query,
        headers: request.headers().clone(),
    };
    counters.seen.lock().unwrap().push(seen.clone());
    let mut guard = InFlight::new(counters);
    let (status, body) = match behavior(&seen) {
        Answer::Json(body) => (200, body),
        Answer::Status(status, body) => (status, body.to_owned()),
        Answer::Hang => std::future::pending().await,
        Answer::Delayed(delay, body) => {
            tokio::time::sleep(delay).await;
            (200, body)
        }
    };
    guard.finished = true;
    drop(guard);
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body)))
        .unwrap()
}

// === fixtures ===

fn provider_record(identity: &str, id: &str, email: Value, phone: Value) -> Value {
    json!({
        "source_identity": identity,
        "external_id": id,
        "record_type": "person",
        "observed_at": "2026-10-08T12:00:00Z",
        "version": 1,
        "fields": {"name": format!("{identity} {id}"), "email": email, "phone": phone, "extra": {"k": id}}
    })
}

/// `n` distinct records of `identity` (no shared email or phone), ids from `start`.
fn distinct(identity: &str, start: usize, n: usize) -> Vec<Value> {
    (start..start + n)
        .map(|i| {
            provider_record(
                identity,
                &i.to_string(),
                json!(format!("{identity}-{i}@example.org")),
                Value::Null,
            )
        })
        .collect()
}

fn page(records: Vec<Value>, next: Option<&str>) -> String {
    json!({"records": records, "next_cursor": next}).to_string()
}

/// Pages keyed by cursor: page `i` is answered for cursor `p{i}` (page 0 without a cursor).
fn paged(pages: Vec<Vec<Value>>) -> impl Fn(&Seen) -> Answer + Send + Sync + 'static {
    let n = pages.len();
    let bodies: Vec<String> = pages
        .into_iter()
        .enumerate()
        .map(|(i, records)| {
            let next = (i + 1 < n).then(|| format!("p{}", i + 1));
            page(records, next.as_deref())
        })
        .collect();
    move |seen: &Seen| {
        let idx = match seen.query.get("cursor") {
            None => 0,
            Some(cursor) => cursor.trim_start_matches('p').parse().unwrap_or(usize::MAX),
        };
        match bodies.get(idx) {
            Some(body) => Answer::Json(body.clone()),
            None => Answer::Status(404, "no such cursor"),
        }
    }
}

fn source(identity: &str, url: String) -> Source {
    Source {
        source_type: "crm".into(),
        source_identity: identity.into(),
        url,
        timeout_ms: None,
        credential: None,
        page_limit: None,
        max_pages: None,
        capabilities: vec!["read".into()],
        fields: SourceFields {
            display_name: Some("name".into()),
            email: Some("email".into()),
            phone: Some("phone".into()),
            lifecycle: None,
            attributes: [("k".to_owned(), "extra.k".to_owned())].into(),
        },
    }
}

fn tool(sources: Vec<Source>) -> FederatedDownstream {
    FederatedDownstream {
        record_type: "person".into(),
        deadline_ms: None,
        max_records: None,
        sources,
    }
}

fn federation() -> Federation {
    Federation::new(FederationConfig::default())
}

/// Keeps every event.
#[derive(Default)]
struct VecSink(Vec<SourceEvent>);

impl EventSink for VecSink {
    fn emit(&mut self, event: SourceEvent) -> BoxFuture<'_, Result<(), SinkClosed>> {
        self.0.push(event);
        Box::pin(std::future::ready(Ok(())))
    }
}

async fn collect(
    federation: &Federation,
    tool: &FederatedDownstream,
    query: &str,
) -> (Vec<SourceEvent>, FederatedOutcome) {
    let mut sink = VecSink::default();
    let outcome = federation.run(tool, query, &mut sink).await;
    check_invariants(&sink.0, tool.sources.len());
    (sink.0, outcome)
}

/// The contract's sequencing rules: global `sequence` 1, 2, 3…; per source pages 1, 2, 3…
/// then exactly one terminal carrying the last page index, nothing after it; terminals carry
/// no records; no page is larger than the page size.
fn check_invariants(events: &[SourceEvent], n_sources: usize) {
    let mut pages: HashMap<SourceRef, u64> = HashMap::new();
    let mut ended: HashMap<SourceRef, bool> = HashMap::new();
    for (idx, event) in events.iter().enumerate() {
        assert_eq!(event.sequence, idx as u64 + 1, "sequence of {event:?}");
        assert!(
            !ended.get(&event.source).copied().unwrap_or(false),
            "event after terminal: {event:?}"
        );
        let count = pages.entry(event.source.clone()).or_insert(0);
        match event.status {
            SourceStatus::Page => {
                *count += 1;
                assert_eq!(event.page_index, *count);
                assert!(event.error.is_none());
                assert!(event.records.len() <= DEFAULT_PAGE_SIZE);
            }
            SourceStatus::Complete | SourceStatus::Error => {
                assert_eq!(event.page_index, *count, "terminal page index of {event:?}");
                assert!(event.records.is_empty());
                assert_eq!(event.error.is_some(), event.status == SourceStatus::Error);
                ended.insert(event.source.clone(), true);
            }
        }
    }
    assert_eq!(ended.len(), n_sources, "one terminal per source");
}

fn terminal<'e>(events: &'e [SourceEvent], identity: &str) -> &'e SourceEvent {
    events
        .iter()
        .find(|e| &*e.source.source_identity == identity && e.status.is_terminal())
        .unwrap_or_else(|| panic!("no terminal for {identity}"))
}

fn page_sizes(events: &[SourceEvent], identity: &str) -> Vec<usize> {
    events
        .iter()
        .filter(|e| &*e.source.source_identity == identity && e.status == SourceStatus::Page)
        .map(|e| e.records.len())
        .collect()
}

fn outcome_text(outcome: &FederatedOutcome) -> String {
    let mut out = BytesMut::new();
    outcome.write_call_tool_result(&mut out, b"");
    String::from_utf8(out.to_vec()).unwrap()
}

fn events_text(events: &[SourceEvent]) -> String {
    let mut out = BytesMut::new();
    for event in events {
        event.write_notification(&mut out, b"1", None);
        out.extend_from_slice(b"\n");
    }
    String::from_utf8(out.to_vec()).unwrap()
}

// === paging and delivery pages ===

#[tokio::test]
async fn follows_next_cursor_and_sends_query_and_limit() {
    let provider = Provider::start(paged(vec![
        distinct("a", 0, 3),
        distinct("a", 3, 2),
        distinct("a", 5, 1),
    ]))
    .await;
    let tool = tool(vec![source("a", provider.url("/people?tenant=t1"))]);
    let (events, outcome) = collect(&federation(), &tool, "q=ada%20l").await;

    let seen = provider.seen();
    let queries: Vec<&str> = seen.iter().map(|s| s.raw_query.as_str()).collect();
    assert_eq!(
        queries,
        vec![
            "tenant=t1&q=ada%20l&limit=100",
            "tenant=t1&q=ada%20l&cursor=p1&limit=100",
            "tenant=t1&q=ada%20l&cursor=p2&limit=100",
        ]
    );
    assert!(seen.iter().all(|s| s.path == "/people"));
    assert!(seen
        .iter()
        .all(|s| s.headers.get("accept").unwrap() == "application/json"));
    assert_eq!(page_sizes(&events, "a"), vec![3, 2, 1]);
    let done = terminal(&events, "a");
    assert_eq!((done.status, done.page_index), (SourceStatus::Complete, 3));
    assert_eq!(outcome.records().len(), 6);
    assert!(!outcome.is_partial());
    assert_eq!(outcome.provenance().len(), 1);
}

#[tokio::test]
async fn provider_page_larger_than_page_size_is_split_and_page_limit_is_sent() {
    let provider =
        Provider::start(paged(vec![distinct("a", 0, 250), distinct("a", 250, 30)])).await;
    let mut a = source("a", provider.url("/"));
    a.page_limit = Some(250);
    let (events, outcome) = collect(&federation(), &tool(vec![a]), "").await;
    assert_eq!(page_sizes(&events, "a"), vec![100, 100, 50, 30]);
    assert_eq!(terminal(&events, "a").page_index, 4);
    assert_eq!(provider.seen()[0].raw_query, "limit=250");
    assert_eq!(outcome.records().len(), 280);
    // The first page's records arrive in provider order, mapped.
    let first = &events[0].records;
    let refs: Vec<&str> = first.iter().map(|r| r.record_ref.as_str()).collect();
    assert!(refs.contains(&"bos:person:a:0"));
    assert_eq!(first[0].attributes[0].0.as_ref(), "k");
}

#[tokio::test]
async fn records_are_federated_within_each_chunk_and_across_everything_in_the_result() {
    // Chunk 1 (records 0..100) holds 0 and 1 sharing an email (case and spaces differ) and
    // 2 and 3 sharing a phone; record 150 (chunk 2) shares 0's email.
    let mut records = distinct("a", 0, 200);
    records[0] = provider_record("a", "0", json!("Ada@Example.org "), Value::Null);
    records[1] = provider_record("a", "1", json!("ada@example.org"), Value::Null);
    records[2] = provider_record("a", "2", Value::Null, json!("+44 20 7946 0000"));
    records[3] = provider_record("a", "3", Value::Null, json!("+44-20-7946-0000"));
    records[150] = provider_record("a", "150", json!("ADA@example.org"), Value::Null);
    let provider = Provider::start(paged(vec![records])).await;
    let (events, outcome) = collect(
        &federation(),
        &tool(vec![source("a", provider.url("/"))]),
        "",
    )
    .await;

    assert_eq!(page_sizes(&events, "a"), vec![98, 100]);
    let merged = events[0]
        .records
        .iter()
        .find(|r| r.record_ref == "bos:person:a:0")
        .unwrap();
    let matched = merged.identity_match.as_ref().unwrap();
    assert_eq!(matched.rules, vec![MatchRule::Email]);
    assert_eq!(
        matched.record_refs,
        vec!["bos:person:a:0", "bos:person:a:1"]
    );
    assert!(events[1]
        .records
        .iter()
        .any(|r| r.record_ref == "bos:person:a:150"));

    // The final result merges across chunks: 0, 1 and 150 are one record.
    assert_eq!(outcome.records().len(), 200 - 3);
    let merged = outcome
        .records()
        .iter()
        .find(|r| r.record_ref == "bos:person:a:0")
        .unwrap();
    assert_eq!(
        merged.identity_match.as_ref().unwrap().record_refs,
        vec!["bos:person:a:0", "bos:person:a:1", "bos:person:a:150"]
    );
    assert_eq!(merged.sources.len(), 3);
}

#[tokio::test]
async fn empty_source_completes_with_page_index_zero() {
    let provider = Provider::start(paged(vec![vec![]])).await;
    let other = Provider::start(paged(vec![vec![], distinct("b", 0, 1)])).await;
    let tool = tool(vec![
        source("a", provider.url("/")),
        source("b", other.url("/")),
    ]);
    let (events, outcome) = collect(&federation(), &tool, "").await;
    let done = terminal(&events, "a");
    assert_eq!((done.status, done.page_index), (SourceStatus::Complete, 0));
    // An empty provider page with a cursor is followed, not delivered.
    assert_eq!(page_sizes(&events, "b"), vec![1]);
    assert_eq!(terminal(&events, "b").page_index, 1);
    assert!(!outcome.is_partial());
    assert_eq!(outcome.records().len(), 1);
}

#[tokio::test]
async fn sources_merge_across_each_other_in_the_final_result() {
    let a = Provider::start(paged(vec![vec![provider_record(
        "a",
        "1",
        json!("x@example.org"),
        json!("+1 555 0100"),
    )]]))
    .await;
    let b = Provider::start(paged(vec![vec![
        provider_record("b", "7", Value::Null, json!("+15550100")),
        provider_record("b", "8", json!("solo@example.org"), Value::Null),
    ]]))
    .await;
    let tool = tool(vec![source("b", b.url("/")), source("a", a.url("/"))]);
    let (_, outcome) = collect(&federation(), &tool, "").await;
    let json: Value = serde_json::from_slice(&outcome.operation_result_json()).unwrap();
    assert_eq!(json["metadata"]["result_count"], 2);
    assert_eq!(json["metadata"]["completeness"], "complete");
    let first = &json["result"][0];
    assert_eq!(first["record_ref"], "bos:person:a:1");
    assert_eq!(first["display_name"], "a 1");
    assert_eq!(first["identity_match"]["rules"], json!(["phone"]));
    assert_eq!(
        first["identity_match"]["record_refs"],
        json!(["bos:person:a:1", "bos:person:b:7"])
    );
    assert_eq!(first["sources"][1]["source_identity"], "b");
    assert_eq!(first["sources"][0]["version"], 1);
    assert_eq!(json["result"][1]["identity_match"], Value::Null);
    let provenance: Vec<&str> = json["metadata"]["provenance"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["source_identity"].as_str().unwrap())
        .collect();
    assert_eq!(provenance, vec!["a", "b"]);
}

// === errors ===

#[tokio::test]
async fn every_error_code_is_mapped() {
    let provider = Provider::start(|seen: &Seen| match seen.path.as_str() {
        "/401" => Answer::Status(401, r#"{"error":"token expired"}"#),
        "/403" => Answer::Status(403, "forbidden"),
        "/429" => Answer::Status(429, "slow down"),
        "/500" => Answer::Status(500, "boom"),
        "/404" => Answer::Status(404, "nope"),
        "/html" => Answer::Json("<html>".into()),
        "/missing-key" => Answer::Json(
            r#"{"records":[{"source_identity":"missing-key","record_type":"person","observed_at":"t","fields":{}}],"next_cursor":null}"#.into(),
        ),
        "/big" => Answer::Json(page(distinct("big", 0, 50), None)),
        "/loop" => Answer::Json(page(vec![], Some("again"))),
        _ => Answer::Status(500, "unexpected"),
    })
    .await;
    // A port nothing listens on: bind, read the port, close.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let mut sources: Vec<Source> = [
        "401",
        "403",
        "429",
        "500",
        "404",
        "html",
        "missing-key",
        "big",
        "loop",
    ]
    .iter()
    .map(|name| source(name, provider.url(&format!("/{name}"))))
    .collect();
    sources.push(source("refused", format!("http://{closed}/")));
    let mut bad_header = source("bad-credential", provider.url("/500"));
    bad_header.credential = Some(SourceCredential {
        header: "bad header".into(),
        value: "x".into(),
    });
    sources.push(bad_header);
    let n_sources = sources.len();
    let federation = Federation::new(FederationConfig {
        max_provider_body_bytes: 2048,
        max_pages_per_source: 5,
        ..FederationConfig::default()
    });
    let (events, outcome) = collect(&federation, &tool(sources), "").await;

    let expect = [
        ("401", "provider_authorization_required"),
        ("403", "provider_authorization_required"),
        ("429", "rate_limited"),
        ("500", "source_unavailable"),
        ("404", "source_unavailable"),
        ("html", "source_unavailable"),
        ("missing-key", "source_unavailable"),
        ("big", "source_unavailable"),
        ("loop", "source_unavailable"),
        ("refused", "source_unavailable"),
        ("bad-credential", "source_unavailable"),
    ];
    for (identity, code) in expect {
        let event = terminal(&events, identity);
        assert_eq!(event.status, SourceStatus::Error, "{identity}");
        assert_eq!(
            event.error.map(SourceErrorCode::as_str),
            Some(code),
            "{identity}"
        );
        assert_eq!(event.page_index, 0, "{identity}");
    }
    assert_eq!(
        provider.seen().iter().filter(|s| s.path == "/loop").count(),
        5
    );
    assert!(outcome.is_partial());
    assert_eq!(outcome.records().len(), 0);
    assert_eq!(outcome.source_errors().len(), n_sources);
    let json: Value = serde_json::from_slice(&outcome.operation_result_json()).unwrap();
    assert_eq!(json["metadata"]["completeness"], "partial");
    assert_eq!(json["metadata"]["provenance"], json!([]));
    // Provider messages never travel.
    let text = format!("{}{}", events_text(&events), outcome_text(&outcome));
    for leaked in [
        "token expired",
        "forbidden",
        "slow down",
        "boom",
        "127.0.0.1",
        "<html>",
    ] {
        assert!(!text.contains(leaked), "{leaked} leaked");
    }
}

#[tokio::test]
async fn identity_mismatch_after_a_good_page_keeps_that_page() {
    let mut second = distinct("a", 10, 3);
    second.push(provider_record("not-a", "99", Value::Null, Value::Null));
    let provider = Provider::start(paged(vec![distinct("a", 0, 2), second])).await;
    let wrong_type = Provider::start(paged(vec![vec![json!({
        "source_identity": "t", "external_id": "1", "record_type": "company",
        "observed_at": "x", "fields": {}
    })]]))
    .await;
    let tool = tool(vec![
        source("a", provider.url("/")),
        source("t", wrong_type.url("/")),
    ]);
    let (events, outcome) = collect(&federation(), &tool, "").await;
    assert_eq!(page_sizes(&events, "a"), vec![2]);
    let done = terminal(&events, "a");
    assert_eq!(done.error, Some(SourceErrorCode::SourceIdentityMismatch));
    assert_eq!(done.page_index, 1);
    let done = terminal(&events, "t");
    assert_eq!(done.error, Some(SourceErrorCode::SourceIdentityMismatch));
    assert_eq!(done.page_index, 0);
    let refs: Vec<&str> = outcome
        .records()
        .iter()
        .map(|r| r.record_ref.as_str())
        .collect();
    assert_eq!(refs, vec!["bos:person:a:0", "bos:person:a:1"]);
    assert!(outcome.is_partial());
    // A source that delivered and then failed is in both provenance and source_errors.
    assert_eq!(outcome.provenance().len(), 1);
    assert!(!events_text(&events).contains("not-a"));
}

#[tokio::test]
async fn credential_is_sent_but_never_shown() {
    let provider = Provider::start(|seen: &Seen| {
        if seen
            .headers
            .get("authorization")
            .is_some_and(|v| v == "Bearer SECRET-TOKEN")
        {
            Answer::Status(500, "internal error near SECRET-TOKEN")
        } else {
            Answer::Status(401, "who are you")
        }
    })
    .await;
    let mut a = source("a", provider.url("/?api_key=SECRET-KEY"));
    a.credential = Some(SourceCredential {
        header: "Authorization".into(),
        value: "Bearer SECRET-TOKEN".into(),
    });
    let (events, outcome) = collect(&federation(), &tool(vec![a]), "").await;
    assert_eq!(
        terminal(&events, "a").error,
        Some(SourceErrorCode::SourceUnavailable)
    );
    let text = format!(
        "{}{}{:?}",
        events_text(&events),
        outcome_text(&outcome),
        outcome
    );
    assert!(!text.contains("SECRET"), "{text}");
}

// === time ===

#[tokio::test]
async fn source_timeout_keeps_delivered_pages() {
    let slow = Provider::start(|seen: &Seen| match seen.query.get("cursor") {
        None => Answer::Json(page(distinct("slow", 0, 2), Some("p1"))),
        Some(_) => Answer::Hang,
    })
    .await;
    let fast = Provider::start(paged(vec![distinct("fast", 0, 1)])).await;
    let mut slow_source = source("slow", slow.url("/"));
    slow_source.timeout_ms = Some(60_000);
    let tool = tool(vec![slow_source, source("fast", fast.url("/"))]);
    let federation = Arc::new(federation());
    let (tx, mut rx) = mpsc::channel(64);
    let run = tokio::spawn({
        let federation = Arc::clone(&federation);
        async move {
            let mut sink = ChannelSink::new(tx);
            federation.run(&tool, "", &mut sink).await
        }
    });
    let mut events = Vec::new();
    // Real time until both sources have shown what they will show…
    while events.len() < 3 {
        events.push(rx.recv().await.unwrap());
    }
    slow.wait_for("second page request", |c| {
        c.arrived.load(Ordering::SeqCst) == 2
    })
    .await;
    // …then the hung read's 60 s timer fires at once.
    tokio::time::pause();
    let outcome = run.await.unwrap();
    while let Some(event) = rx.recv().await {
        events.push(event);
    }
    check_invariants(&events, 2);
    let done = terminal(&events, "slow");
    assert_eq!(done.error, Some(SourceErrorCode::SourceTimeout));
    assert_eq!(done.page_index, 1);
    assert_eq!(terminal(&events, "fast").status, SourceStatus::Complete);
    assert_eq!(outcome.records().len(), 3);
    assert!(outcome.is_partial());
    assert_eq!(
        outcome.source_errors()[0].code,
        SourceErrorCode::SourceTimeout
    );
    // The timed-out request was cancelled at the provider.
    slow.wait_for("drop", |c| c.dropped.load(Ordering::SeqCst) == 1)
        .await;
}

#[tokio::test]
async fn operation_deadline_cancels_unfinished_sources_and_keeps_delivered_records() {
    let half = Provider::start(|seen: &Seen| match seen.query.get("cursor") {
        None => Answer::Json(page(distinct("half", 0, 5), Some("p1"))),
        Some(_) => Answer::Hang,
    })
    .await;
    let hung = Provider::start(|_: &Seen| Answer::Hang).await;
    let done = Provider::start(paged(vec![distinct("done", 0, 2)])).await;
    let mut sources = vec![
        source("half", half.url("/")),
        source("hung", hung.url("/")),
        source("done", done.url("/")),
    ];
    for source in &mut sources {
        source.timeout_ms = Some(3_600_000);
    }
    let mut tool = tool(sources);
    tool.deadline_ms = Some(120_000);
    let federation = Arc::new(federation());
    let (tx, mut rx) = mpsc::channel(64);
    let run = tokio::spawn({
        let federation = Arc::clone(&federation);
        async move {
            let mut sink = ChannelSink::new(tx);
            federation.run(&tool, "", &mut sink).await
        }
    });
    let mut events = Vec::new();
    while events.len() < 3 {
        events.push(rx.recv().await.unwrap());
    }
    half.wait_for("second page", |c| c.arrived.load(Ordering::SeqCst) == 2)
        .await;
    hung.wait_for("request", |c| c.arrived.load(Ordering::SeqCst) == 1)
        .await;
    tokio::time::pause();
    let outcome = run.await.unwrap();
    while let Some(event) = rx.recv().await {
        events.push(event);
    }
    check_invariants(&events, 3);
    for (identity, page_index) in [("half", 1), ("hung", 0)] {
        let event = terminal(&events, identity);
        assert_eq!(
            event.error,
            Some(SourceErrorCode::SourceTimeout),
            "{identity}"
        );
        assert_eq!(event.page_index, page_index, "{identity}");
    }
    assert_eq!(terminal(&events, "done").status, SourceStatus::Complete);
    assert_eq!(outcome.records().len(), 7);
    let codes: Vec<(&str, SourceErrorCode)> = outcome
        .source_errors()
        .iter()
        .map(|f| (&*f.source.source_identity, f.code))
        .collect();
    assert_eq!(
        codes,
        vec![
            ("half", SourceErrorCode::SourceTimeout),
            ("hung", SourceErrorCode::SourceTimeout)
        ]
    );
    half.wait_for("drop", |c| c.dropped.load(Ordering::SeqCst) == 1)
        .await;
    hung.wait_for("drop", |c| c.dropped.load(Ordering::SeqCst) == 1)
        .await;
}

// === concurrency, cancellation, backpressure ===

#[tokio::test]
async fn concurrency_limit_is_never_exceeded() {
    let provider = Provider::start(|seen: &Seen| {
        let identity = seen.path.trim_start_matches('/').to_owned();
        let next = if seen.query.contains_key("cursor") {
            None
        } else {
            Some("p1")
        };
        Answer::Delayed(
            Duration::from_millis(15),
            page(distinct(&identity, 0, 1), next),
        )
    })
    .await;
    let sources: Vec<Source> = (0..12)
        .map(|i| source(&format!("s{i}"), provider.url(&format!("/s{i}"))))
        .collect();
    let federation = Federation::new(FederationConfig {
        max_concurrent_sources: 3,
        ..FederationConfig::default()
    });
    let (events, outcome) = collect(&federation, &tool(sources), "").await;
    assert_eq!(events.len(), 12 * 3);
    assert_eq!(outcome.records().len(), 12);
    let max = provider.counters.max_in_flight.load(Ordering::SeqCst);
    assert!(max <= 3, "{max} reads in flight");
    assert!(max >= 2, "reads did not overlap ({max})");
}

#[tokio::test]
async fn dropping_the_run_future_drops_every_provider_request() {
    let provider = Provider::start(|_: &Seen| Answer::Hang).await;
    let sources: Vec<Source> = (0..4)
        .map(|i| source(&format!("s{i}"), provider.url(&format!("/s{i}"))))
        .collect();
    let tool = tool(sources);
    let federation = Arc::new(federation());
    let run = tokio::spawn({
        let federation = Arc::clone(&federation);
        async move { federation.run(&tool, "", &mut NullSink).await }
    });
    provider
        .wait_for("4 requests", |c| c.in_flight.load(Ordering::SeqCst) == 4)
        .await;
    run.abort();
    assert!(run.await.unwrap_err().is_cancelled());
    provider
        .wait_for("4 drops", |c| c.dropped.load(Ordering::SeqCst) == 4)
        .await;
    assert_eq!(provider.counters.in_flight.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn slow_sink_holds_sources_back_and_closed_sink_cancels() {
    let pages: Vec<Vec<Value>> = (0..40).map(|i| distinct("a", i, 1)).collect();
    let provider = Provider::start(paged(pages)).await;
    let federation = Arc::new(Federation::new(FederationConfig {
        max_concurrent_sources: 1,
        ..FederationConfig::default()
    }));
    let tool = tool(vec![source("a", provider.url("/"))]);
    let (tx, mut rx) = mpsc::channel(1);
    let run = tokio::spawn({
        let federation = Arc::clone(&federation);
        async move {
            let mut sink = ChannelSink::new(tx);
            federation.run(&tool, "", &mut sink).await
        }
    });
    // Nobody reads: the read stalls after a few pages instead of buffering all 40.
    provider
        .wait_for("a few pages", |c| c.arrived.load(Ordering::SeqCst) >= 2)
        .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let fetched = provider.counters.arrived.load(Ordering::SeqCst);
    assert!(fetched <= 5, "{fetched} pages fetched with nobody reading");
    // Take two events, then go away: the run stops and reports it was cancelled.
    let first = rx.recv().await.unwrap();
    assert_eq!(first.sequence, 1);
    rx.recv().await.unwrap();
    drop(rx);
    let outcome = run.await.unwrap();
    assert!(outcome.is_cancelled());
    assert!(outcome.is_partial());
    assert!(provider.counters.arrived.load(Ordering::SeqCst) < 40);
}

#[tokio::test]
async fn null_sink_gives_the_same_result_as_streaming() {
    let mut records = distinct("a", 0, 120);
    records[5] = provider_record("a", "5", json!("dup@example.org"), Value::Null);
    records[110] = provider_record("a", "110", json!("DUP@example.org"), Value::Null);
    let a = Provider::start(paged(vec![records])).await;
    let b = Provider::start(paged(vec![vec![provider_record(
        "b",
        "1",
        json!("dup@example.org"),
        Value::Null,
    )]]))
    .await;
    let tool = tool(vec![source("a", a.url("/")), source("b", b.url("/"))]);
    let federation = federation();
    let (_, streamed) = collect(&federation, &tool, "").await;
    let mut null = NullSink;
    let quiet = federation.run(&tool, "", &mut null).await;
    assert_eq!(streamed.records(), quiet.records());
    assert_eq!(quiet.records().len(), 120 - 1);
}

// === merge property ===

fn single(identity: &str, id: &str, email: Value, phone: Value) -> FederatedRecord {
    FederatedRecord {
        record_ref: FederatedRecord::single_source_ref("person", identity, id),
        display_name: Value::Null,
        email,
        phone,
        lifecycle: Value::Null,
        sources: vec![Provenance {
            source_type: "crm".into(),
            source_identity: identity.into(),
            external_id: id.into(),
            record_type: "person".into(),
            observed_at: String::new(),
            capabilities: vec!["read".to_owned()].into(),
            version: Value::Null,
        }],
        identity_match: None,
        attributes: vec![("k".into(), json!(id))],
    }
}

fn arbitrary_record() -> impl Strategy<Value = FederatedRecord> {
    (
        0..4usize,
        0..30usize,
        prop::option::of(0..6usize),
        prop::option::of(0..6usize),
        prop::option::of(0..3usize),
        0..3usize,
    )
        .prop_map(|(source, id, email, phone, name, observed)| {
            let identity = format!("s{source}");
            let mut record = single(
                &identity,
                &id.to_string(),
                email.map_or(Value::Null, |e| json!(format!(" User{e}@Example.org"))),
                phone.map_or(Value::Null, |p| json!(format!("+1 555 01{p}"))),
            );
            record.display_name = name.map_or(Value::Null, |n| json!(format!("name {n}")));
            record.sources[0].observed_at = format!("2026-10-0{}T00:00:00Z", observed + 1);
            record
        })
}

fn as_groups(records: &[FederatedRecord]) -> Vec<Vec<String>> {
    let mut groups: Vec<Vec<String>> = records
        .iter()
        .map(|r| match &r.identity_match {
            Some(m) => m.record_refs.clone(),
            None => vec![r.record_ref.clone()],
        })
        .collect();
    groups.sort();
    groups
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Whatever order pages and sources arrive in, the final result is the same records, and
    /// the groups are those of the naive reference.
    #[test]
    fn merge_is_independent_of_arrival_order(
        (records, shuffled) in prop::collection::vec(arbitrary_record(), 0..60)
            .prop_flat_map(|records| {
                let shuffled = Just(records.clone()).prop_shuffle();
                (Just(records), shuffled)
            })
    ) {
        let expected_groups = super::merge::naive_groups(&records);
        let merged = merge_records(records);
        let merged_again = merge_records(shuffled);
        prop_assert_eq!(&merged, &merged_again);
        prop_assert_eq!(as_groups(&merged), expected_groups);
        let refs: Vec<&str> = merged.iter().map(|r| r.record_ref.as_str()).collect();
        let mut sorted = refs.clone();
        sorted.sort_unstable();
        prop_assert_eq!(refs, sorted);
    }

    /// Each chunk's source-local federation (what event pages show) is order-independent too.
    #[test]
    fn chunk_federation_is_order_independent(
        records in prop::collection::vec(arbitrary_record(), 0..40),
        chunk in 1..10usize,
    ) {
        let chunks: Vec<Vec<FederatedRecord>> =
            records.chunks(chunk).map(|c| merge_records(c.to_vec())).collect();
        for (c, raw) in chunks.iter().zip(records.chunks(chunk)) {
            let mut reversed = raw.to_vec();
            reversed.reverse();
            prop_assert_eq!(c, &merge_records(reversed));
        }
    }
}
