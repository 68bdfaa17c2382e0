//! federation: what the identity merge costs at 10k and 100k records, and what a loopback
//! fan-out of 8 sources × 10,000 records costs end to end (time to first event and total).
//!
//! Owns only measurement. Groups:
//! - `federation_merge/{hashed,sorted}/{10000,100000}` (`Throughput::Elements`: records
//!   merged): 8 sources, about a fifth of the records sharing an email with a record of another
//!   source and a tenth sharing a phone, in arrival (not canonical) order. `hashed` is
//!   `merge_records`; `sorted` the algorithm before issue 15 (`merge_records_sorted`, a
//!   canonical sort of every record first), the baseline in the same run. The group count is
//!   asserted after the loop so the bench cannot measure the wrong thing; the merged output is
//!   dropped outside the timed part. Before the group, each algorithm's merge memory is printed:
//!   the peak of bytes allocated above the input while it runs, per record, counted by the
//!   bench's global allocator (`Counting`, over mimalloc). `FEDERATION_MERGE_SIZES=10000` (a
//!   comma list) runs only the merge group, at those sizes: what the callgrind instruction
//!   counts in PERFORMANCE.md use.
//! - `federation_fanout/first_event` (latency) and `federation_fanout/total`
//!   (`Throughput::Elements`: 80,000 records): 8 hyper providers on 127.0.0.1 answering pages of 500 from memory; the
//!   sink writes every notification into a buffer as the integrator's SSE sink would.

#![allow(unsafe_code)] // the counting `GlobalAlloc` wraps mimalloc

use std::alloc::{GlobalAlloc, Layout};
use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use futures_util::future::BoxFuture;
use http::{Request, Response};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use sluice::config::{FederatedDownstream, Source, SourceFields};
use sluice::federation::{
    merge_records, merge_records_sorted, EventSink, FederatedRecord, Federation, FederationConfig,
    Provenance, SinkClosed, SourceEvent,
};
use tokio::net::TcpListener;

// The production allocator (`main.rs` installs mimalloc too), counting live and peak bytes.
#[global_allocator]
static GLOBAL: Counting = Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

struct Counting;

impl Counting {
    fn grew(size: usize) {
        let live = LIVE.fetch_add(size, Ordering::Relaxed) + size;
        PEAK.fetch_max(live, Ordering::Relaxed);
    }
}

// SAFETY: every call is forwarded to mimalloc unchanged; the counters only observe sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        Self::grew(layout.size());
        unsafe { mimalloc::MiMalloc.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        Self::grew(layout.size());
        unsafe { mimalloc::MiMalloc.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size >= layout.size() {
            Self::grew(new_size - layout.size());
        } else {
            LIVE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
        }
        unsafe { mimalloc::MiMalloc.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        unsafe { mimalloc::MiMalloc.dealloc(ptr, layout) }
    }
}

/// Bytes per record the input holds, and the peak of bytes allocated above the input while
/// `merge` runs, per record.
fn merge_memory(n: usize, merge: fn(Vec<FederatedRecord>) -> Vec<FederatedRecord>) -> (f64, f64) {
    let before_input = LIVE.load(Ordering::Relaxed);
    let input = merge_input(n);
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let merged = merge(input);
    let peak = PEAK.load(Ordering::Relaxed);
    drop(merged);
    let per_record = |bytes: usize| bytes as f64 / n as f64;
    (per_record(base - before_input), per_record(peak - base))
}

const SOURCES: usize = 8;

fn email_of(i: usize) -> Value {
    // One record in five shares its email with the record 7 places later (another source).
    if i.is_multiple_of(5) {
        json!(format!("Shared{}@Example.org", i / 5))
    } else {
        json!(format!("user{i}@example.org"))
    }
}

fn phone_of(i: usize) -> Value {
    if i % 10 == 3 {
        json!(format!("+1 555 {:07}", i / 10))
    } else {
        Value::Null
    }
}

fn merge_input(n: usize) -> Vec<FederatedRecord> {
    (0..n)
        .map(|i| {
            let source = format!("s{}", i % SOURCES);
            // Pairs (i, i + 7) land in different sources and share a key.
            let key = if i % 14 < 7 { i } else { i - 7 };
            FederatedRecord {
                record_ref: FederatedRecord::single_source_ref("person", &source, &i.to_string()),
                display_name: json!(format!("Person {i}")),
                email: email_of(key),
                phone: phone_of(key),
                lifecycle: Value::Null,
                sources: vec![Provenance {
                    source_type: "crm".into(),
                    source_identity: source.as_str().into(),
                    external_id: i.to_string(),
                    record_type: "person".into(),
                    observed_at: "2026-10-08T12:00:00Z".into(),
                    capabilities: vec!["read".to_owned()].into(),
                    version: Value::Null,
                }],
                identity_match: None,
                attributes: vec![("tier".into(), json!(i % 3))],
            }
        })
        .collect()
}

/// The merge sizes: `FEDERATION_MERGE_SIZES` when set, else 10k and 100k.
fn merge_sizes() -> Vec<usize> {
    std::env::var("FEDERATION_MERGE_SIZES")
        .ok()
        .map(|v| v.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![10_000, 100_000])
}

fn bench_merge(c: &mut Criterion) {
    type Merge = fn(Vec<FederatedRecord>) -> Vec<FederatedRecord>;
    let algorithms: [(&str, Merge); 2] =
        [("hashed", merge_records), ("sorted", merge_records_sorted)];
    for &n in &merge_sizes() {
        for (name, merge) in algorithms {
            let (input, peak) = merge_memory(n, merge);
            println!(
                "federation_merge/{name}/{n}: input {input:.0} B/record, merge peak {peak:.0} \
                 B/record above the input"
            );
        }
    }
    let mut group = c.benchmark_group("federation_merge");
    group.sample_size(10);
    for n in merge_sizes() {
        let input = merge_input(n);
        let expected = merge_records(input.clone());
        assert!(
            expected.len() < n && expected.len() > n / 2,
            "{} groups of {n}",
            expected.len()
        );
        assert_eq!(
            merge_records_sorted(input.clone()),
            expected,
            "both algorithms give the same result"
        );
        let expected = expected.len();
        group.throughput(Throughput::Elements(n as u64));
        for (name, merge) in algorithms {
            group.bench_with_input(BenchmarkId::new(name, n), &input, |b, input| {
                let mut groups = 0;
                b.iter_batched(
                    || input.clone(),
                    |records| {
                        let merged = merge(records);
                        groups = merged.len();
                        merged
                    },
                    criterion::BatchSize::LargeInput,
                );
                assert_eq!(groups, expected);
            });
        }
    }
    group.finish();
}

// === loopback fan-out ===

const RECORDS_PER_SOURCE: usize = 10_000;
const PROVIDER_PAGE: usize = 500;

/// Starts a provider answering `cursor=N` with page N of 500 records.
async fn start_provider(identity: String) -> String {
    let pages: Vec<Bytes> = (0..RECORDS_PER_SOURCE / PROVIDER_PAGE)
        .map(|p| {
            let records: Vec<Value> = (p * PROVIDER_PAGE..(p + 1) * PROVIDER_PAGE)
                .map(|i| {
                    json!({"source_identity": identity, "external_id": i.to_string(),
                        "record_type": "person", "observed_at": "2026-10-08T12:00:00Z",
                        "version": i,
                        "fields": {"name": format!("Person {i}"), "email": email_of(i),
                            "phone": phone_of(i), "tier": i % 3}})
                })
                .collect();
            let next = (p + 1 < RECORDS_PER_SOURCE / PROVIDER_PAGE).then(|| (p + 1).to_string());
            Bytes::from(json!({"records": records, "next_cursor": next}).to_string())
        })
        .collect();
    let pages = Arc::new(pages);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/people", listener.local_addr().unwrap());
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let pages = Arc::clone(&pages);
            let service = service_fn(move |request: Request<Incoming>| {
                let page = request
                    .uri()
                    .query()
                    .and_then(|q| q.split('&').find_map(|kv| kv.strip_prefix("cursor=")))
                    .and_then(|c| c.parse::<usize>().ok())
                    .unwrap_or(0);
                let body = pages.get(page).cloned().unwrap_or_default();
                async move { Ok::<_, Infallible>(Response::new(Full::new(body))) }
            });
            tokio::spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    url
}

/// Writes each notification into a reused buffer (as an SSE sink would) and notes when the
/// first event came.
struct TimingSink {
    started: Instant,
    first_event: Option<Duration>,
    buffer: BytesMut,
    records: usize,
}

impl EventSink for TimingSink {
    fn emit(&mut self, event: SourceEvent) -> BoxFuture<'_, Result<(), SinkClosed>> {
        if self.first_event.is_none() {
            self.first_event = Some(self.started.elapsed());
        }
        self.records += event.records.len();
        self.buffer.clear();
        event.write_notification(&mut self.buffer, b"\"bench-1\"", None);
        Box::pin(std::future::ready(Ok(())))
    }
}

fn bench_fanout(c: &mut Criterion) {
    if std::env::var_os("FEDERATION_MERGE_SIZES").is_some() {
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let sources: Vec<Source> = runtime.block_on(async {
        let mut sources = Vec::new();
        for s in 0..SOURCES {
            let identity = format!("s{s}");
            let url = start_provider(identity.clone()).await;
            sources.push(Source {
                source_type: "crm".into(),
                source_identity: identity,
                url,
                timeout_ms: Some(60_000),
                credential: None,
                page_limit: Some(PROVIDER_PAGE as u32),
                max_pages: None,
                capabilities: vec!["read".into()],
                fields: SourceFields {
                    display_name: Some("name".into()),
                    email: Some("email".into()),
                    phone: Some("phone".into()),
                    lifecycle: None,
                    attributes: [("tier".to_owned(), "tier".to_owned())].into(),
                },
            });
        }
        sources
    });
    let tool = FederatedDownstream {
        record_type: "person".into(),
        deadline_ms: Some(120_000),
        // Every record is read: the bench measures the whole run, not the record limit.
        max_records: Some((SOURCES * RECORDS_PER_SOURCE) as u32),
        sources,
    };
    let federation = Federation::new(FederationConfig::default());
    let total_records = (SOURCES * RECORDS_PER_SOURCE) as u64;
    let run_once = |federation: &Federation, tool: &FederatedDownstream| {
        runtime.block_on(async {
            let mut sink = TimingSink {
                started: Instant::now(),
                first_event: None,
                buffer: BytesMut::with_capacity(64 * 1024),
                records: 0,
            };
            let outcome = federation.run(tool, "q=person", &mut sink, None).await;
            let total = sink.started.elapsed();
            assert!(!outcome.is_partial(), "{:?}", outcome.source_errors());
            assert!(sink.records > 0);
            let first = sink.first_event.unwrap_or(total);
            (first, total, outcome.records().len())
        })
    };
    // Warm the pool and check the shape once.
    let (_, _, merged) = run_once(&federation, &tool);
    assert!(merged > 0 && merged < total_records as usize);

    let mut group = c.benchmark_group("federation_fanout");
    group.sample_size(10);
    group.bench_function("first_event", |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| run_once(&federation, &tool).0)
                .sum::<Duration>()
        })
    });
    group.throughput(Throughput::Elements(total_records));
    group.bench_function("total", |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| run_once(&federation, &tool).1)
                .sum::<Duration>()
        })
    });
    group.finish();
}

criterion_group!(benches, bench_merge, bench_fanout);
criterion_main!(benches);
