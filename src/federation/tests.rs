//! Run-loop tests against real hyper providers on 127.0.0.1:0, plus the merge property test.
//!
//! Each provider is a small hyper server whose answer is a function of the request (path and
//! query); it counts requests in flight (and the most at once) and notices when a request is
//! dropped before its answer was produced. Time-dependent cases (per-source timeout, operation
//! deadline) wait until the fast parts are observed, then `tokio::time::pause()` so the slow
//! timers fire at once instead of sleeping.
//!
//! This file holds the providers and fixtures; the cases are in `tests/paging.rs`,
//! `tests/errors.rs`, `tests/timeouts.rs`, `tests/concurrency.rs` and `tests/merge_props.rs`.

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

mod concurrency;
mod errors;
mod merge_props;
mod paging;
mod timeouts;

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
    let outcome = federation.run(tool, query, &mut sink, None).await;
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
