//! a2a_relay: the concentrator's streaming relay (`src/a2a/remote/relay.rs`) against the same
//! upstream stream read directly, in the same run.
//!
//! The upstream is a minimal hyper server in this process serving a 1.0 agent card and, for
//! any `SendStreamingMessage`, an SSE stream of small events: the Task, `n - 2` working status
//! updates (~150 bytes each), the completed status. Sluice (the edge) registers it as a remote
//! agent of an anonymous tenant. Three measurements, for the direct path, through a hyper
//! pass-through and through the edge:
//!
//! * **paced** (latency per event): the upstream writes event `i + 1` only once the client has
//!   read event `i` (an in-process signal), stamping each write; the latency of an event is its
//!   arrival at the client minus its write at the upstream. The median over the stream's events,
//!   through the edge minus directly, is the relay's added latency per event (target: ≤ 50 µs).
//! * **burst** (CPU per event): the upstream writes every event as fast as the connection takes
//!   it; the edge's CPU time over the stream (`/proc/self/task/*/schedstat` of its runtime's
//!   threads) divided by the events relayed.
//! * **allocations** (a counting allocator over mimalloc that counts only the edge runtime's
//!   threads): two burst streams of different lengths; the difference in allocations (and
//!   bytes) divided by the difference in events is the relay's steady-state cost per event,
//!   fixed per-stream costs cancelling out.
//!
//! Shape: the edge runs in a one-worker runtime pinned to core 0; the upstream and the client in
//! another pinned to core 1 (`RELAY_CORES=one`: the edge on core 1 too, so no hop wakes an idle
//! worker on another core). Modes: `cargo bench --bench a2a_relay` (`--bench`) runs
//! `RELAY_ROUNDS` rounds (default 5) of `RELAY_EVENTS` events (default 1,000) and prints medians;
//! without it (`cargo test --all-targets`) a smoke run of 200 events checks every stream's event
//! count and completion and asserts the allocation bound ([`MAX_ALLOCS_PER_EVENT`]: the north
//! frame, nothing else), so a per-event allocation added to the relay fails the test suite. A hyper pass-through (forwards the request, streams the upstream body back frame
//! by frame, reads nothing) runs beside it on the edge's runtime: the latency of the extra hop
//! itself, which any relay pays, so what the sluice relay adds over it is its own work. Owns
//! only this bench; reaches product code through its public API.

#![allow(unsafe_code)] // the counting `GlobalAlloc` wraps mimalloc

mod common;

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::CpuSample;
use futures::Stream;
use http::header::{CONTENT_TYPE, HOST};
use http::{HeaderValue, Method, Request, Response};
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use serde_json::Value;
use sluice::catalog::Catalog;
use tokio::net::TcpListener;
use tokio::runtime::Runtime;
use tokio::sync::mpsc;

// === the counting allocator: the edge's threads only ===

struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);
static ALLOC_BYTES: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// Set on the edge runtime's threads (`on_thread_start`).
    static COUNTED: Cell<bool> = const { Cell::new(false) };
}

fn count(size: usize) {
    if COUNTED.with(Cell::get) {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        ALLOC_BYTES.fetch_add(size as u64, Ordering::Relaxed);
    }
}

// SAFETY: every call forwards to mimalloc with the same arguments; the wrapper only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        unsafe { mimalloc::MiMalloc.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { mimalloc::MiMalloc.dealloc(ptr, layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        unsafe { mimalloc::MiMalloc.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size);
        unsafe { mimalloc::MiMalloc.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations() -> (u64, u64) {
    (
        ALLOCS.load(Ordering::Relaxed),
        ALLOC_BYTES.load(Ordering::Relaxed),
    )
}

const EDGE_THREAD: &str = "relay-edge";
const PEER_THREAD: &str = "relay-peer";
/// The edge's relay path for the registered upstream.
const RELAY_PATH: &str = "/runtime/edge/app/a2a/agents/up";
/// Allowed allocations per relayed event: the north frame (the event's own bytes, sized
/// exactly); the envelope is read and peeked by `src/a2a/remote/wire/scan.rs`, which allocates
/// nothing. The slack covers amortized growth (the channel's blocks, hyper's read buffer), which
/// depends on how the reads split the stream (a loaded CI machine once measured 0.06 over a
/// 180-event smoke run). Any second allocation per event fails it (≥ 2.0).
const MAX_ALLOCS_PER_EVENT: f64 = 1.25;

/// Marks the calling thread's allocations as counted (the edge runtime's `on_start`).
fn count_this_thread() {
    COUNTED.with(|c| c.set(true));
}

// === the upstream ===

/// What the client and the upstream share: the pacing signal of the next stream, and the
/// upstream's write times.
#[derive(Default)]
struct Control {
    go: Mutex<Option<mpsc::UnboundedReceiver<()>>>,
    written: Mutex<Vec<Instant>>,
    streams: AtomicU64,
}

type StubBody = StreamBody<Pin<Box<dyn Stream<Item = Result<Frame<Bytes>, Infallible>> + Send>>>;

fn card(addr: SocketAddr) -> Bytes {
    Bytes::from(
        serde_json::json!({
            "name": "relay-bench-upstream",
            "description": "Streams small events.",
            "version": "1.0.0",
            "supportedInterfaces": [
                {"url": format!("http://{addr}/"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
            ],
            "capabilities": {"streaming": true},
            "defaultInputModes": ["text/plain"],
            "defaultOutputModes": ["text/plain"],
            "skills": [{"id": "stream", "name": "stream", "description": "streams", "tags": []}]
        })
        .to_string(),
    )
}

/// Event `i` of `n` of task `task` for request `id` (an SSE frame).
fn event(id: &Value, task: &str, i: usize, n: usize) -> Bytes {
    let result = if i == 0 {
        serde_json::json!({"task": {"id": task, "contextId": "ctx-bench",
            "status": {"state": "TASK_STATE_SUBMITTED"}}})
    } else {
        let state = if i + 1 == n {
            "TASK_STATE_COMPLETED"
        } else {
            "TASK_STATE_WORKING"
        };
        serde_json::json!({"statusUpdate": {"taskId": task, "contextId": "ctx-bench",
            "status": {"state": state, "timestamp": "2026-12-03T12:00:00.000Z"}}})
    };
    let answer = serde_json::json!({"jsonrpc": "2.0", "id": id, "result": result});
    Bytes::from(format!("data: {answer}\n\n"))
}

async fn stub_answer(
    req: Request<Incoming>,
    addr: SocketAddr,
    control: Arc<Control>,
) -> Result<Response<StubBody>, Infallible> {
    let one = |bytes: Bytes, kind: &'static str| {
        let stream: Pin<Box<dyn Stream<Item = _> + Send>> =
            Box::pin(futures::stream::once(async move { Ok(Frame::data(bytes)) }));
        let mut response = Response::new(StreamBody::new(stream));
        response
            .headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static(kind));
        Ok(response)
    };
    if req.method() == Method::GET {
        return one(card(addr), "application/json");
    }
    let body = req.into_body().collect().await.map(|b| b.to_bytes());
    let request: Value = body
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    let id = request["id"].clone();
    // "paced:N" or "burst:N".
    let text = request["params"]["message"]["parts"][0]["text"]
        .as_str()
        .unwrap_or("burst:3")
        .to_owned();
    let (mode, n) = text.split_once(':').unwrap_or(("burst", "3"));
    let n: usize = n.parse().unwrap_or(3).max(2);
    let paced = mode == "paced";
    let task = format!(
        "task-{}",
        control.streams.fetch_add(1, Ordering::Relaxed) + 1
    );
    let go = if paced {
        control.go.lock().expect("go").take()
    } else {
        None
    };
    let (tx, rx) = mpsc::channel::<Bytes>(if paced { 1 } else { 64 });
    tokio::spawn(async move {
        let mut go = go;
        for i in 0..n {
            if i > 0 {
                if let Some(go) = go.as_mut() {
                    if go.recv().await.is_none() {
                        return;
                    }
                }
            }
            let frame = event(&id, &task, i, n);
            if paced {
                control
                    .written
                    .lock()
                    .expect("written")
                    .push(Instant::now());
            }
            if tx.send(frame).await.is_err() {
                return;
            }
        }
    });
    let stream: Pin<Box<dyn Stream<Item = _> + Send>> =
        Box::pin(futures::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|b| (Ok(Frame::data(b)), rx))
        }));
    let mut response = Response::new(StreamBody::new(stream));
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    Ok(response)
}

async fn serve_stub(listener: TcpListener, control: Arc<Control>) {
    let addr = listener.local_addr().expect("stub addr");
    let service =
        hyper::service::service_fn(move |req| stub_answer(req, addr, Arc::clone(&control)));
    common::serve_http1(listener, std::future::pending(), service).await;
}

// === the pass-through baseline ===

/// The practical limit of any relay here: a hyper server on the edge's runtime that forwards
/// the request to the upstream on a fresh connection and streams the upstream's body back frame
/// by frame, looking at nothing.
async fn serve_passthrough(listener: TcpListener, upstream: SocketAddr) {
    let service = hyper::service::service_fn(move |req| passthrough(req, upstream));
    common::serve_http1(listener, std::future::pending(), service).await;
}

async fn passthrough(
    req: Request<Incoming>,
    upstream: SocketAddr,
) -> Result<Response<Incoming>, String> {
    let (parts, body) = req.into_parts();
    let body = body.collect().await.map_err(|e| e.to_string())?.to_bytes();
    let mut sender = common::connect(upstream).await?;
    let mut request = Request::from_parts(parts, Full::new(body));
    *request.uri_mut() = "/".parse().map_err(|_| "uri")?;
    sender
        .send_request(request)
        .await
        .map_err(|e| e.to_string())
}

// === the edge ===

fn start_edge(edge_rt: &Runtime, stub: SocketAddr) -> SocketAddr {
    let text = format!(
        r#"
[server.a2a]
remote_max_tasks_per_tenant = 1000000
remote_task_secs = 30
remote_terminal_secs = 30
[[tenant]]
id = "edge"
auth = {{ anonymous = true }}
[[tenant.client]]
id = "app"
[[tenant.a2a_agent]]
id = "up"
card_url = "http://{stub}/.well-known/agent-card.json"
clients = ["app"]
"#
    );
    let config = sluice::config::parse(&text, "edge").expect("edge config parses");
    let catalog = Arc::new(Catalog::from_config(&config).expect("edge config is valid"));
    let serve = sluice::ServeConfig::from_catalog(catalog);
    let listener = edge_rt
        .block_on(TcpListener::bind("127.0.0.1:0"))
        .expect("bind edge");
    let addr = listener.local_addr().expect("edge addr");
    edge_rt.spawn(async move {
        sluice::serve(listener, serve, std::future::pending())
            .await
            .expect("the edge serves");
    });
    addr
}

// === the client ===

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Path {
    Direct,
    /// Through the hyper pass-through.
    Passthrough,
    Relayed,
}

/// One stream's outcome: the events' arrival times, and the edge's CPU and allocations over it.
struct Run {
    arrived: Vec<Instant>,
    edge_cpu_ns: u64,
    allocs: u64,
    alloc_bytes: u64,
}

async fn stream_once(
    target: SocketAddr,
    path: Path,
    mode: &str,
    n: usize,
    control: &Control,
) -> Result<Run, String> {
    let mut sender = common::connect(target).await?;
    let (go_tx, go_rx) = mpsc::unbounded_channel();
    if mode == "paced" {
        *control.go.lock().expect("go") = Some(go_rx);
        control.written.lock().expect("written").clear();
    }
    let body =
        serde_json::json!({"jsonrpc": "2.0", "id": "bench-1", "method": "SendStreamingMessage",
        "params": {"message": {"messageId": "m-1", "role": "ROLE_USER",
            "parts": [{"text": format!("{mode}:{n}")}]}}})
        .to_string();
    let uri = match path {
        Path::Direct | Path::Passthrough => "/",
        Path::Relayed => RELAY_PATH,
    };
    let request = Request::post(uri)
        .header(HOST, target.to_string())
        .header(CONTENT_TYPE, "application/json")
        .header("accept", "text/event-stream")
        .header("a2a-version", "1.0")
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| e.to_string())?;
    let cpu_before = CpuSample::take(&[EDGE_THREAD], &[PEER_THREAD]);
    let (allocs_before, bytes_before) = allocations();
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| e.to_string())?;
    if !response.status().is_success() {
        return Err(format!("status {}", response.status()));
    }
    let mut body = response.into_body();
    let mut arrived = Vec::with_capacity(n);
    let mut tail = Vec::new();
    let mut last = String::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| e.to_string())?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        let now = Instant::now();
        tail.extend_from_slice(&data);
        while let Some(end) = tail.windows(2).position(|w| w == b"\n\n") {
            let one: Vec<u8> = tail.drain(..end + 2).collect();
            if one.starts_with(b":") {
                continue; // a keep-alive comment
            }
            arrived.push(now);
            if arrived.len() == n {
                last = String::from_utf8_lossy(&one).into_owned();
            }
            let _ = go_tx.send(());
        }
    }
    let (allocs_after, bytes_after) = allocations();
    let cpu_after = CpuSample::take(&[EDGE_THREAD], &[PEER_THREAD]);
    if arrived.len() != n {
        return Err(format!("{} events of {n} arrived", arrived.len()));
    }
    if !last.contains("TASK_STATE_COMPLETED") || !last.contains("bench-1") {
        return Err(format!("the last event is not the completion: {last}"));
    }
    Ok(Run {
        arrived,
        edge_cpu_ns: cpu_after.server_ns.saturating_sub(cpu_before.server_ns),
        allocs: allocs_after - allocs_before,
        alloc_bytes: bytes_after - bytes_before,
    })
}

/// The median of per-event latencies of a paced run (the first events, still warming the
/// connection, skipped).
fn paced_latency(run: &Run, control: &Control) -> Duration {
    let written = control.written.lock().expect("written").clone();
    let mut latencies: Vec<Duration> = run
        .arrived
        .iter()
        .zip(written.iter())
        .skip(10.min(run.arrived.len() / 2))
        .map(|(arrived, written)| arrived.saturating_duration_since(*written))
        .collect();
    latencies.sort();
    latencies
        .get(latencies.len() / 2)
        .copied()
        .unwrap_or_default()
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let env = |name: &str, default: usize| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let (events, rounds) = if full {
        (
            env("RELAY_EVENTS", 1000).max(20),
            env("RELAY_ROUNDS", 5).max(1),
        )
    } else {
        (200, 1)
    };
    let (split_core, peer_core) = common::server_and_client_cores();
    // `RELAY_CORES=one` puts the edge on the peers' core: no cross-core wake-up per hop.
    let one_core = std::env::var("RELAY_CORES").is_ok_and(|v| v == "one");
    let edge_core = if one_core { peer_core } else { split_core };
    let edge_rt = common::runtime_with(EDGE_THREAD, edge_core, count_this_thread);
    let peer_rt = common::runtime(PEER_THREAD, peer_core);
    let control = Arc::new(Control::default());
    let stub_listener = peer_rt
        .block_on(TcpListener::bind("127.0.0.1:0"))
        .expect("bind stub");
    let stub = stub_listener.local_addr().expect("stub addr");
    peer_rt.spawn(serve_stub(stub_listener, Arc::clone(&control)));
    let edge = start_edge(&edge_rt, stub);
    let pass_listener = edge_rt
        .block_on(TcpListener::bind("127.0.0.1:0"))
        .expect("bind pass-through");
    let pass = pass_listener.local_addr().expect("pass-through addr");
    edge_rt.spawn(serve_passthrough(pass_listener, stub));

    peer_rt.block_on(async {
        // The edge fetches the card at start: retry until the agent answers.
        let mut tries = 0;
        while let Err(err) = stream_once(edge, Path::Relayed, "burst", 3, &control).await {
            tries += 1;
            assert!(tries < 100, "the edge never relayed a stream: {err}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let mut added_us = Vec::new();
        let mut direct_us = Vec::new();
        let mut pass_us = Vec::new();
        let mut over_pass_us = Vec::new();
        let mut relayed_us = Vec::new();
        let mut cpu_per_event_us = Vec::new();
        let mut burst_direct_us = Vec::new();
        let mut burst_relayed_us = Vec::new();
        let mut allocs_per_event = Vec::new();
        let mut bytes_per_event = Vec::new();
        for _ in 0..rounds {
            let run = |path, mode, n| {
                let control = Arc::clone(&control);
                async move {
                    let target = match path {
                        Path::Direct => stub,
                        Path::Passthrough => pass,
                        Path::Relayed => edge,
                    };
                    stream_once(target, path, mode, n, &control)
                        .await
                        .unwrap_or_else(|err| panic!("{path:?} {mode}:{n}: {err}"))
                }
            };
            let direct = run(Path::Direct, "paced", events).await;
            let d = paced_latency(&direct, &control);
            let through = run(Path::Passthrough, "paced", events).await;
            let p = paced_latency(&through, &control);
            let relayed = run(Path::Relayed, "paced", events).await;
            let r = paced_latency(&relayed, &control);
            pass_us.push(p.as_secs_f64() * 1e6);
            over_pass_us.push((r.as_secs_f64() - p.as_secs_f64()) * 1e6);
            direct_us.push(d.as_secs_f64() * 1e6);
            relayed_us.push(r.as_secs_f64() * 1e6);
            added_us.push((r.as_secs_f64() - d.as_secs_f64()) * 1e6);

            let span = |run: &Run| {
                let first = run.arrived.first().copied().unwrap_or_else(Instant::now);
                let last = run.arrived.last().copied().unwrap_or(first);
                last.duration_since(first).as_secs_f64() * 1e6 / run.arrived.len() as f64
            };
            let direct = run(Path::Direct, "burst", events).await;
            let long = run(Path::Relayed, "burst", events).await;
            let short = run(Path::Relayed, "burst", events / 10).await;
            burst_direct_us.push(span(&direct));
            burst_relayed_us.push(span(&long));
            cpu_per_event_us.push(long.edge_cpu_ns as f64 / 1e3 / events as f64);
            let extra = (events - events / 10) as f64;
            allocs_per_event.push((long.allocs as f64 - short.allocs as f64) / extra);
            bytes_per_event.push((long.alloc_bytes as f64 - short.alloc_bytes as f64) / extra);
        }
        let allocs = common::median(allocs_per_event.clone());
        if full {
            println!("a2a_relay: {events} events per stream, {rounds} rounds (medians)");
            println!(
                "  paced latency per event: direct {:.1} µs, hyper pass-through {:.1} µs, sluice relay {:.1} µs",
                common::median(direct_us),
                common::median(pass_us),
                common::median(relayed_us),
            );
            println!(
                "  added by the sluice relay: {:.1} µs vs direct (target ≤ 50), {:.1} µs vs the pass-through",
                common::median(added_us),
                common::median(over_pass_us)
            );
            println!(
                "  burst: {:.2} µs/event direct, {:.2} µs/event relayed; edge CPU {:.2} µs per relayed event",
                common::median(burst_direct_us),
                common::median(burst_relayed_us),
                common::median(cpu_per_event_us)
            );
            println!(
                "  edge allocations per relayed event: {allocs:.2} ({:.0} bytes; rounds: {allocs_per_event:.2?})",
                common::median(bytes_per_event)
            );
        }
        assert!(
            allocs <= MAX_ALLOCS_PER_EVENT,
            "the relay allocates {allocs:.2} times per event (bound {MAX_ALLOCS_PER_EVENT}); rounds {allocs_per_event:?}"
        );
    });
}
