//! source_results: a federated read streamed as `bos/source-results/v1`, end to end over
//! loopback, against the same read answered as one JSON response in the same run.
//!
//! What runs: 8 provider sources (hyper servers, one listener, `/src/{s}` and `/slow/{s}`)
//! answering pre-serialized provider pages of 500 records (~250 B each: name, email, phone, city)
//! for 10,000 records per source; `sluice::serve` in-process with two federated tools over them —
//! `people_slow` (source 7 answers each page 20 ms late) and `people` (no delay); and a client
//! that POSTs `tools/call` and reads the answer incrementally with `sluice::sse::Decoder`,
//! parsing every notification's JSON with serde_json and counting records. Source `s` holds the
//! email indexes `[s·N/2, s·N/2 + N)`, so neighbouring sources share half their people (with the
//! email case and the phone punctuation differing between them) and the final merge has work to
//! do: `(S − 1)·N/2 + N` people (45,000 for 8 × 10,000).
//!
//! Every answer is checked before it counts (the contract's consumer checklist): status and
//! content type, the opening comment, `requestId`, global `sequence` strictly increasing from 1,
//! per-source page indexes advancing by one, at most `pageSize` records a page, exactly one
//! terminal per source and nothing after it, every source `complete`, the final response last
//! with the request id, `isError: false`, `completeness: "complete"`, `result_count` equal to the
//! expected people count and to the records in the result, and the final records' provenance
//! covering every delivered record. In the slow scenario the first page must arrive before the
//! slow source's terminal. A failed check panics, so the bench cannot measure the wrong thing.
//!
//! Shape (as `e2e_loopback`): runtimes are multi-thread with ONE worker, pinned with
//! `core_affinity`: sluice on core 0; the providers and the client on core 1. CPU time per
//! runtime comes from `/proc/self/task/*/schedstat`, the rest of the machine's load from
//! `/proc/stat`.
//!
//! The same two reads also run as A2A `SendStreamingMessage` tasks (`a2a_slow`, `a2a`): source
//! pages arrive as artifact updates, the merged result as the final artifact; their ratio
//! columns compare them with the MCP streams of the same read (instead of the JSON answer).
//!
//! Modes: `cargo bench --bench source_results` passes `--bench` and gets the full run (knobs
//! `SRB_ROUNDS`, `SRB_RECORDS`, `SRB_SOURCES`, `SRB_PROVIDER_PAGE`, `SRB_SLOW_MS`,
//! `SRB_VERBOSE=1`, see [`Settings::from_env`]); without `--bench` (`cargo test --all-targets`)
//! it runs a smoke version with 300 records per source, still checking everything.
//!
//! Owns only this bench: it must not change or reach into product code beyond the public API.

mod common;

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{runtime, CpuSample};

use bytes::{Bytes, BytesMut};
use http::header::{ACCEPT, CONTENT_TYPE, HOST};
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::{json, Value};
use sluice::catalog::Catalog;
use sluice::sse::Decoder;
use tokio::net::TcpListener;
use tokio::runtime::Runtime;
use tokio::sync::oneshot;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The bench tenant's MCP endpoint.
const MCP_PATH: &str = "/runtime/bench/agent/mcp";
/// The same client application's A2A endpoint.
const A2A_PATH: &str = "/runtime/bench/agent/a2a";
/// The extension's opt-in key.
const OPT_IN: &str = sluice::federation::EXTENSION;
/// The source notification method.
const NOTIFICATION: &str = sluice::federation::SOURCE_RESULT_METHOD;
/// The bound on records per delivery page (the advertised `pageSize`).
const PAGE_SIZE: usize = sluice::federation::DEFAULT_PAGE_SIZE;
/// The comment every negotiated stream opens with.
const OPENING_COMMENT: &[u8] = b": bos/source-results/v1\n\n";
/// The final frame holds every merged record twice (text and structured copies): tens of MB.
const MAX_FRAME: usize = 1 << 30;
/// How long one invocation may take before the bench calls it a hang and panics.
const HANG_LIMIT: Duration = Duration::from_secs(120);
/// Thread names (and `/proc/self/task/*/comm` values) of the three runtimes.
const SERVER_THREAD: &str = "srb-server";
const CLIENT_THREAD: &str = "srb-client";
const PROVIDER_THREAD: &str = "srb-provider";
/// The slow source's index in `people_slow`: the last one.
const fn slow_source(sources: usize) -> usize {
    sources - 1
}

// === settings ===

/// What one invocation measures.
#[derive(Debug, Clone)]
struct Settings {
    /// Measured rounds; every round runs every scenario once (`SRB_ROUNDS`, default 5, min 3).
    rounds: usize,
    /// Unmeasured rounds first, to warm the provider pool and the allocator (1; smoke: 0).
    warmup_rounds: usize,
    /// Provider sources (`SRB_SOURCES`, default 8).
    sources: usize,
    /// Records per source, even (`SRB_RECORDS`, default 10,000).
    records: usize,
    /// Records per provider page, the `page_limit` sluice asks for (`SRB_PROVIDER_PAGE`, 500).
    provider_page: usize,
    /// Delay before each page of the slow source (`SRB_SLOW_MS`, default 20).
    slow_page: Duration,
    /// Print per-run details (`SRB_VERBOSE=1`).
    verbose: bool,
}

impl Settings {
    /// The full run, with `SRB_*` overrides.
    fn from_env() -> Self {
        Self {
            rounds: env_parse("SRB_ROUNDS").unwrap_or(5).max(3),
            warmup_rounds: 1,
            sources: env_parse("SRB_SOURCES").unwrap_or(8).max(2),
            records: even(env_parse("SRB_RECORDS").unwrap_or(10_000)),
            provider_page: env_parse("SRB_PROVIDER_PAGE").unwrap_or(500).max(1),
            slow_page: Duration::from_millis(env_parse("SRB_SLOW_MS").unwrap_or(20)),
            verbose: std::env::var("SRB_VERBOSE").is_ok_and(|v| v == "1"),
        }
    }

    /// The test-mode run: the same shape, small, every check still made.
    fn smoke() -> Self {
        Self {
            rounds: 1,
            warmup_rounds: 0,
            sources: 8,
            records: 300,
            provider_page: 50,
            slow_page: Duration::from_millis(20),
            verbose: false,
        }
    }

    /// People in the merged result: the union of every source's email indexes.
    fn expected_people(&self) -> u64 {
        ((self.sources - 1) * self.records / 2 + self.records) as u64
    }

    /// Records the sources deliver in all.
    fn delivered_records(&self) -> u64 {
        (self.sources * self.records) as u64
    }
}

fn even(n: usize) -> usize {
    (n.max(2) + 1) & !1
}

fn env_parse<T: std::str::FromStr>(name: &str) -> Option<T> {
    std::env::var(name).ok()?.trim().parse().ok()
}

// === scenarios ===

/// One kind of invocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scenario {
    /// `people_slow`, streamed.
    StreamSlow,
    /// `people_slow`, no opt-in: one JSON response.
    JsonSlow,
    /// `people` (no slow source), streamed.
    Stream,
    /// `people`, no opt-in.
    Json,
    /// `people_slow` as an A2A `SendStreamingMessage`: source pages as artifact updates.
    A2aStreamSlow,
    /// `people` as an A2A `SendStreamingMessage`.
    A2aStream,
}

impl Scenario {
    const ALL: [Scenario; 6] = [
        Scenario::StreamSlow,
        Scenario::JsonSlow,
        Scenario::Stream,
        Scenario::Json,
        Scenario::A2aStreamSlow,
        Scenario::A2aStream,
    ];

    fn name(self) -> &'static str {
        match self {
            Scenario::StreamSlow => "stream_slow",
            Scenario::JsonSlow => "json_slow",
            Scenario::Stream => "stream",
            Scenario::Json => "json",
            Scenario::A2aStreamSlow => "a2a_slow",
            Scenario::A2aStream => "a2a",
        }
    }

    fn tool(self) -> &'static str {
        match self {
            Scenario::StreamSlow | Scenario::JsonSlow | Scenario::A2aStreamSlow => "people_slow",
            Scenario::Stream | Scenario::Json | Scenario::A2aStream => "people",
        }
    }

    fn is_streamed(self) -> bool {
        matches!(self, Scenario::StreamSlow | Scenario::Stream)
    }

    fn is_a2a(self) -> bool {
        matches!(self, Scenario::A2aStreamSlow | Scenario::A2aStream)
    }

    fn has_slow_source(self) -> bool {
        matches!(
            self,
            Scenario::StreamSlow | Scenario::JsonSlow | Scenario::A2aStreamSlow
        )
    }

    /// What a scenario's ratios compare against: the JSON answer for an MCP stream, the MCP
    /// stream for the same read over A2A.
    fn baseline(self) -> Option<Scenario> {
        match self {
            Scenario::StreamSlow => Some(Scenario::JsonSlow),
            Scenario::Stream => Some(Scenario::Json),
            Scenario::A2aStreamSlow => Some(Scenario::StreamSlow),
            Scenario::A2aStream => Some(Scenario::Stream),
            Scenario::JsonSlow | Scenario::Json => None,
        }
    }
}

// === provider data ===

const FIRST_NAMES: [&str; 8] = [
    "Ada",
    "Grace",
    "Katherine",
    "Margaret",
    "Barbara",
    "Frances",
    "Hedy",
    "Radia",
];
const LAST_NAMES: [&str; 8] = [
    "Lovelace", "Hopper", "Johnson", "Hamilton", "Liskov", "Allen", "Lamarr", "Perlman",
];
const CITIES: [&str; 8] = [
    "Springfield",
    "Rivertown",
    "Lakeside",
    "Oakridge",
    "Fairview",
    "Greenville",
    "Maplewood",
    "Brookfield",
];

/// One provider record of source `source`: person `person` (the email index), record `i`.
/// Odd sources write the same person's email in another case and the phone with other
/// punctuation, so only the normalized identities match.
fn provider_record(source: usize, i: usize, person: usize) -> Value {
    let first = FIRST_NAMES[person % FIRST_NAMES.len()];
    let last = LAST_NAMES[(person / FIRST_NAMES.len()) % LAST_NAMES.len()];
    let (email, phone) = if source.is_multiple_of(2) {
        (
            format!(
                "{}.{}.{person}@example.org",
                first.to_lowercase(),
                last.to_lowercase()
            ),
            format!("+1 555 {person:07}"),
        )
    } else {
        (
            format!("{first}.{last}.{person}@Example.ORG"),
            format!("+1-555-{person:07}"),
        )
    };
    json!({
        "source_identity": format!("s{source}"),
        "external_id": format!("s{source}-{i:06}"),
        "record_type": "person",
        "observed_at": "2026-10-08T12:00:00Z",
        "version": i,
        "fields": {
            "name": format!("{first} {last} {person}"),
            "email": email,
            "phone": phone,
            "city": CITIES[person % CITIES.len()],
        },
    })
}

/// Every provider page of every source, serialized once: `pages[source][cursor]`.
struct Dataset {
    pages: Vec<Vec<Bytes>>,
    /// Mean serialized size of one provider record.
    record_bytes: f64,
}

impl Dataset {
    fn new(settings: &Settings) -> Self {
        let (n, page) = (settings.records, settings.provider_page);
        let n_pages = n.div_ceil(page);
        let mut record_total = 0usize;
        let pages = (0..settings.sources)
            .map(|source| {
                (0..n_pages)
                    .map(|p| {
                        let end = ((p + 1) * page).min(n);
                        let records: Vec<Value> = (p * page..end)
                            .map(|i| provider_record(source, i, source * n / 2 + i))
                            .collect();
                        record_total += records.iter().map(|r| r.to_string().len()).sum::<usize>();
                        let next = (p + 1 < n_pages).then(|| (p + 1).to_string());
                        Bytes::from(json!({"records": records, "next_cursor": next}).to_string())
                    })
                    .collect()
            })
            .collect();
        Self {
            pages,
            record_bytes: record_total as f64 / settings.delivered_records() as f64,
        }
    }
}

// === providers ===

/// Serves `/src/{s}` (at once) and `/slow/{s}` (after `slow_page`) on `listener`:
/// `cursor=N` is page N; a `limit` other than the provider page size is refused (400), which the
/// source reports as `source_unavailable` and the bench's checks then reject.
async fn serve_providers(
    listener: TcpListener,
    data: Arc<Dataset>,
    provider_page: usize,
    slow_page: Duration,
) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            return;
        };
        let _ = stream.set_nodelay(true);
        let data = Arc::clone(&data);
        let service = service_fn(move |request: Request<Incoming>| {
            let data = Arc::clone(&data);
            async move {
                Ok::<_, Infallible>(
                    provider_answer(&data, &request, provider_page, slow_page).await,
                )
            }
        });
        tokio::spawn(async move {
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

async fn provider_answer(
    data: &Dataset,
    request: &Request<Incoming>,
    provider_page: usize,
    slow_page: Duration,
) -> Response<Full<Bytes>> {
    let path = request.uri().path();
    let (slow, source) = if let Some(s) = path.strip_prefix("/slow/") {
        (true, s)
    } else {
        (false, path.strip_prefix("/src/").unwrap_or(""))
    };
    let query = request.uri().query().unwrap_or("");
    let param = |key: &str| {
        query.split('&').find_map(|pair| {
            let (k, v) = pair.split_once('=')?;
            (k == key).then_some(v)
        })
    };
    let cursor: usize = param("cursor").and_then(|c| c.parse().ok()).unwrap_or(0);
    let limit: Option<usize> = param("limit").and_then(|l| l.parse().ok());
    let page = source
        .parse::<usize>()
        .ok()
        .and_then(|s| data.pages.get(s))
        .and_then(|pages| pages.get(cursor))
        .filter(|_| limit == Some(provider_page));
    let Some(page) = page.cloned() else {
        let mut response = Response::new(Full::new(Bytes::from_static(b"{}")));
        *response.status_mut() = StatusCode::BAD_REQUEST;
        return response;
    };
    if slow {
        tokio::time::sleep(slow_page).await;
    }
    let mut response = Response::new(Full::new(page));
    response.headers_mut().insert(
        CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}

// === sluice ===

fn source_config(settings: &Settings, providers: SocketAddr, source: usize, slow: bool) -> String {
    let prefix = if slow { "slow" } else { "src" };
    format!(
        r#"
[[tenant.toolset.tool.downstream.source]]
source_type = "crm"
source_identity = "s{source}"
url = "http://{providers}/{prefix}/{source}"
timeout_ms = 120000
page_limit = {page}
[tenant.toolset.tool.downstream.source.fields]
display_name = "name"
email = "email"
phone = "phone"
attributes = {{ city = "city" }}
"#,
        page = settings.provider_page
    )
}

fn tool_config(settings: &Settings, providers: SocketAddr, name: &str, slow: bool) -> String {
    let sources: String = (0..settings.sources)
        .map(|s| {
            source_config(
                settings,
                providers,
                s,
                slow && s == slow_source(settings.sources),
            )
        })
        .collect();
    format!(
        r#"
[[tenant.toolset.tool]]
name = "{name}"
description = "Federated people search."
[tenant.toolset.tool.downstream]
kind = "federated"
record_type = "person"
deadline_ms = 120000
{sources}
[[tenant.toolset.tool.input]]
source = "q"
exposed = "query"
"#
    )
}

/// Starts the providers on `provider_rt` and sluice on `server_rt`; dropping the returned
/// sender stops both. Returns sluice's address.
fn start_servers(
    settings: &Settings,
    data: Arc<Dataset>,
    server_rt: &Runtime,
    provider_rt: &Runtime,
) -> (SocketAddr, oneshot::Sender<()>) {
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let stop = futures::future::FutureExt::shared(async move {
        let _ = stop_rx.await;
    });

    let providers = provider_rt
        .block_on(TcpListener::bind("127.0.0.1:0"))
        .expect("binding the providers");
    let providers_addr = providers.local_addr().expect("providers addr");
    let stop_providers = stop.clone();
    let (page, slow) = (settings.provider_page, settings.slow_page);
    provider_rt.spawn(async move {
        tokio::select! {
            () = serve_providers(providers, data, page, slow) => {}
            () = stop_providers => {}
        }
    });

    let text = format!(
        "[[tenant]]\nid = \"bench\"\nauth = {{ anonymous = true }}\n[[tenant.client]]\nid = \"agent\"\n\
         [[tenant.toolset]]\nid = \"people\"\n{}{}\n[[tenant.assignment]]\nclient = \"agent\"\ntoolset = \"people\"\n",
        tool_config(settings, providers_addr, "people", false),
        tool_config(settings, providers_addr, "people_slow", true),
    );
    let config = sluice::config::parse(&text, "source_results").expect("bench config parses");
    let catalog = Arc::new(Catalog::from_config(&config).expect("bench config is valid"));
    let mut serve_config = sluice::ServeConfig::from_catalog(catalog);
    // The "json" scenarios compare against one JSON body (the framing the baseline measures).
    serve_config.post_framing = sluice::transport::PostFraming::Json;
    let listener = server_rt
        .block_on(TcpListener::bind("127.0.0.1:0"))
        .expect("binding sluice");
    let addr = listener.local_addr().expect("sluice addr");
    // Spawned, not `block_on`: the accept loop must run on the pinned worker thread.
    server_rt.spawn(async move {
        sluice::serve(listener, serve_config, stop)
            .await
            .expect("sluice serves");
    });
    (addr, stop_tx)
}

// === the client ===

/// One JSON-RPC message of the answer, as much of it as the checks need.
#[derive(Debug, Deserialize)]
struct Message {
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    params: Option<NotificationParams>,
    #[serde(default)]
    result: Option<FinalResult>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct NotificationParams {
    request_id: Value,
    sequence: u64,
    page_index: u64,
    source: SourceKey,
    records: Vec<Record>,
    status: String,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Debug, Deserialize, PartialEq, Eq, PartialOrd, Ord, Clone)]
struct SourceKey {
    source_type: String,
    source_identity: String,
}

/// A federated record: its ref and provenance count (the rest is parsed and skipped).
#[derive(Debug, Deserialize)]
struct Record {
    record_ref: String,
    sources: Vec<IgnoredAny>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct FinalResult {
    is_error: bool,
    structured_content: Structured,
}

#[derive(Debug, Deserialize)]
struct Structured {
    result: Vec<Record>,
    metadata: Metadata,
}

#[derive(Debug, Deserialize)]
struct Metadata {
    completeness: String,
    result_count: u64,
    #[serde(default)]
    source_errors: Vec<Value>,
}

/// What one invocation measured.
#[derive(Debug, Clone, Default)]
struct Run {
    /// Response headers arrived.
    headers: Duration,
    /// First `page` notification decoded (streamed only).
    first_page: Option<Duration>,
    /// Every source but the slow one had its terminal (streamed only).
    fast_done: Option<Duration>,
    /// The last source terminal (streamed only; the slow source's in the slow scenario).
    last_terminal: Option<Duration>,
    /// The slow source's terminal (slow scenario, streamed only).
    slow_terminal: Option<Duration>,
    /// The final response completely received (before the client parses it).
    total: Duration,
    /// SSE message events (notifications + final); 0 for JSON.
    events: u64,
    /// Records delivered: in pages when streamed, in the final result's provenance for JSON
    /// (the checks make both equal to sources × records).
    records: u64,
    /// Body bytes.
    bytes: u64,
    /// Bytes of the final response's JSON.
    final_bytes: u64,
    result_count: u64,
    /// CPU of sluice's thread during the run, ms.
    server_cpu_ms: f64,
    /// CPU of the client + provider thread during the run, ms.
    client_cpu_ms: f64,
    /// Busy cores of the rest of the machine during the run.
    others: f64,
}

fn call_body(id: u64, tool: &str, streamed: bool) -> String {
    let meta = if streamed {
        json!({"io.modelcontextprotocol/clientCapabilities": {"experimental": {OPT_IN: {}}}})
    } else {
        json!({})
    };
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": tool, "arguments": {"query": "bench"}, "_meta": meta}})
    .to_string()
}

macro_rules! ensure {
    ($cond:expr, $($why:tt)+) => {
        if !$cond {
            return Err(format!($($why)+));
        }
    };
}

/// Sends one `tools/call` for `scenario` and reads and checks the whole answer.
async fn invoke(
    addr: SocketAddr,
    scenario: Scenario,
    id: u64,
    settings: Arc<Settings>,
) -> Result<Run, String> {
    let mut sender = common::connect(addr).await?;
    let (path, body) = if scenario.is_a2a() {
        (A2A_PATH, a2a_body(id, scenario.tool()))
    } else {
        (
            MCP_PATH,
            call_body(id, scenario.tool(), scenario.is_streamed()),
        )
    };
    let request = Request::builder()
        .method(Method::POST)
        .uri(path)
        .header(HOST, "127.0.0.1")
        .header(CONTENT_TYPE, "application/json")
        .header(ACCEPT, "application/json, text/event-stream")
        .header("a2a-version", "1.0")
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| e.to_string())?;
    let started = Instant::now();
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| format!("send: {e}"))?;
    let mut run = Run {
        headers: started.elapsed(),
        ..Run::default()
    };
    ensure!(
        response.status() == StatusCode::OK,
        "status {}",
        response.status()
    );
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let body = response.into_body();
    if scenario.is_a2a() {
        ensure!(
            content_type.starts_with("text/event-stream"),
            "content type {content_type:?}"
        );
        read_a2a_stream(body, started, scenario, id, &settings, &mut run).await?;
    } else if scenario.is_streamed() {
        ensure!(
            content_type.starts_with("text/event-stream"),
            "content type {content_type:?}"
        );
        read_stream(body, started, scenario, id, &settings, &mut run).await?;
    } else {
        ensure!(
            content_type.starts_with("application/json"),
            "content type {content_type:?}"
        );
        let bytes = body
            .collect()
            .await
            .map_err(|e| format!("body: {e}"))?
            .to_bytes();
        run.total = started.elapsed();
        run.bytes = bytes.len() as u64;
        run.final_bytes = run.bytes;
        let message: Message =
            serde_json::from_slice(&bytes).map_err(|e| format!("JSON answer: {e}"))?;
        (run.result_count, run.records) = check_final(&message, id, &settings)?;
    }
    Ok(run)
}

/// Per-source progress while reading a stream.
#[derive(Default)]
struct SourceProgress {
    pages: u64,
    records: u64,
    terminal: Option<Duration>,
}

/// Reads a negotiated stream frame by frame, checking the consumer checklist (contract §4–§6).
async fn read_stream(
    mut body: Incoming,
    started: Instant,
    scenario: Scenario,
    id: u64,
    settings: &Settings,
    run: &mut Run,
) -> Result<(), String> {
    let request_id = json!(id);
    let slow_key = SourceKey {
        source_type: "crm".into(),
        source_identity: format!("s{}", slow_source(settings.sources)),
    };
    let mut decoder = Decoder::with_max_frame(MAX_FRAME);
    let mut pending = BytesMut::with_capacity(64 * 1024);
    let mut opened = false;
    let mut sequence = 0u64;
    let mut sources: BTreeMap<SourceKey, SourceProgress> = BTreeMap::new();
    let mut final_message: Option<Message> = None;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| format!("body: {e}"))?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        run.bytes += data.len() as u64;
        if !opened {
            pending.extend_from_slice(&data);
            if pending.len() < OPENING_COMMENT.len() {
                continue;
            }
            ensure!(
                pending.starts_with(OPENING_COMMENT),
                "the stream does not open with the extension comment"
            );
            opened = true;
        } else {
            pending.extend_from_slice(&data);
        }
        loop {
            let event = decoder
                .decode(&mut pending)
                .map_err(|e| format!("SSE: {e:?}"))?;
            let Some(event) = event else { break };
            if event.data.is_empty() {
                continue;
            }
            let at = started.elapsed();
            ensure!(final_message.is_none(), "an event after the final response");
            ensure!(event.id.is_none(), "source-results frames carry no id");
            run.events += 1;
            let message: Message =
                serde_json::from_slice(&event.data).map_err(|e| format!("event JSON: {e}"))?;
            if message.method.is_none() {
                run.total = at;
                run.final_bytes = event.data.len() as u64;
                final_message = Some(message);
                continue;
            }
            ensure!(
                message.method.as_deref() == Some(NOTIFICATION) && message.id.is_none(),
                "not a source notification: {:?}",
                message.method
            );
            let params = message.params.ok_or("a notification without params")?;
            ensure!(
                params.request_id == request_id,
                "requestId {}",
                params.request_id
            );
            ensure!(
                params.sequence == sequence + 1,
                "sequence {} after {sequence}",
                params.sequence
            );
            sequence = params.sequence;
            let progress = sources.entry(params.source.clone()).or_default();
            ensure!(
                progress.terminal.is_none(),
                "an event after {:?}'s terminal",
                params.source
            );
            match params.status.as_str() {
                "page" => {
                    ensure!(
                        params.page_index == progress.pages + 1,
                        "page index {} after {}",
                        params.page_index,
                        progress.pages
                    );
                    ensure!(
                        (1..=PAGE_SIZE).contains(&params.records.len()),
                        "page of {} records",
                        params.records.len()
                    );
                    ensure!(
                        params
                            .records
                            .iter()
                            .all(|r| !r.sources.is_empty() && !r.record_ref.is_empty()),
                        "a record without ref or provenance"
                    );
                    progress.pages = params.page_index;
                    progress.records += params.records.len() as u64;
                    run.records += params.records.len() as u64;
                    run.first_page.get_or_insert(at);
                }
                "complete" => {
                    ensure!(
                        params.page_index == progress.pages && params.records.is_empty(),
                        "complete with page index {} after {} pages",
                        params.page_index,
                        progress.pages
                    );
                    progress.terminal = Some(at);
                }
                other => {
                    return Err(format!(
                        "source {:?} ended {other}: {:?}",
                        params.source, params.error
                    ))
                }
            }
        }
    }
    let message = final_message.ok_or("EOF before the final response")?;
    ensure!(
        sources.len() == settings.sources,
        "{} sources reported",
        sources.len()
    );
    for (key, progress) in &sources {
        let terminal = progress
            .terminal
            .ok_or_else(|| format!("{key:?} has no terminal"))?;
        ensure!(
            progress.records == settings.records as u64,
            "{key:?} delivered {} records",
            progress.records
        );
        run.last_terminal = Some(run.last_terminal.map_or(terminal, |t| t.max(terminal)));
        if *key == slow_key && scenario.has_slow_source() {
            run.slow_terminal = Some(terminal);
        } else {
            run.fast_done = Some(run.fast_done.map_or(terminal, |t| t.max(terminal)));
        }
    }
    if scenario.has_slow_source() {
        let first = run.first_page.ok_or("no page")?;
        let slow = run.slow_terminal.ok_or("no slow terminal")?;
        ensure!(
            first < slow,
            "the first page ({first:?}) came after the slow source ended ({slow:?})"
        );
    }
    run.result_count = check_final(&message, id, settings)?.0;
    Ok(())
}

/// An A2A `SendStreamingMessage` running `tool`.
fn a2a_body(id: u64, tool: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "SendStreamingMessage", "params": {
        "message": {"messageId": format!("m{id}"), "role": "ROLE_USER",
                    "parts": [{"data": {"tool": tool, "arguments": {"query": "bench"}}}]}}})
    .to_string()
}

/// Reads an A2A task stream event by event: the Task first, then per-source artifact updates
/// (`append: true`, records in the data part), a status message at each source's end, the
/// merged `result` artifact (`completeness: "complete"`, every person), `COMPLETED` last.
async fn read_a2a_stream(
    mut body: Incoming,
    started: Instant,
    scenario: Scenario,
    id: u64,
    settings: &Settings,
    run: &mut Run,
) -> Result<(), String> {
    let slow_identity = format!("s{}", slow_source(settings.sources));
    let mut decoder = Decoder::with_max_frame(MAX_FRAME);
    let mut pending = BytesMut::with_capacity(64 * 1024);
    let mut first = true;
    let mut ended = false;
    let mut per_source: BTreeMap<String, (u64, Option<Duration>)> = BTreeMap::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| format!("body: {e}"))?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        run.bytes += data.len() as u64;
        pending.extend_from_slice(&data);
        while let Some(event) = decoder
            .decode(&mut pending)
            .map_err(|e| format!("SSE: {e:?}"))?
        {
            if event.data.is_empty() {
                continue;
            }
            let at = started.elapsed();
            ensure!(!ended, "an event after the terminal status");
            run.events += 1;
            let message: Value =
                serde_json::from_slice(&event.data).map_err(|e| format!("event JSON: {e}"))?;
            ensure!(message["id"] == json!(id), "event id {}", message["id"]);
            let result = &message["result"];
            if first {
                ensure!(
                    result.get("task").is_some(),
                    "the stream opens without the Task"
                );
                first = false;
                continue;
            }
            if let Some(update) = result.get("artifactUpdate") {
                let artifact = &update["artifact"];
                let artifact_id = artifact["artifactId"].as_str().unwrap_or_default();
                if let Some(source) = artifact_id.strip_prefix("source:") {
                    ensure!(update["append"] == true, "a source page without append");
                    let records = artifact["parts"][0]["data"]["records"]
                        .as_array()
                        .map_or(0, Vec::len) as u64;
                    ensure!(
                        (1..=PAGE_SIZE as u64).contains(&records),
                        "page of {records} records"
                    );
                    per_source.entry(source.to_owned()).or_default().0 += records;
                    run.records += records;
                    run.first_page.get_or_insert(at);
                } else if artifact_id == "result" {
                    run.total = at;
                    run.final_bytes = event.data.len() as u64;
                    let meta = &artifact["metadata"];
                    ensure!(
                        meta["completeness"] == "complete"
                            && meta["source_errors"].as_array().is_some_and(Vec::is_empty),
                        "merged result not complete: {meta}"
                    );
                    let count = artifact["parts"][0]["data"]["metadata"]["result_count"]
                        .as_u64()
                        .unwrap_or(0);
                    ensure!(
                        count == settings.expected_people(),
                        "result_count {count}, expected {}",
                        settings.expected_people()
                    );
                    run.result_count = count;
                }
            } else if let Some(update) = result.get("statusUpdate") {
                let status = &update["status"];
                match status["state"].as_str() {
                    Some("TASK_STATE_WORKING") => {
                        let meta = &status["message"]["metadata"];
                        if let Some(identity) = meta["source"]["source_identity"].as_str() {
                            ensure!(meta["status"] == "complete", "source ended {meta}");
                            let key = format!(
                                "{}:{identity}",
                                meta["source"]["source_type"].as_str().unwrap_or_default()
                            );
                            per_source.entry(key).or_default().1 = Some(at);
                            if identity == slow_identity && scenario.has_slow_source() {
                                run.slow_terminal = Some(at);
                            } else {
                                run.fast_done =
                                    Some(run.fast_done.map_or(at, |t: Duration| t.max(at)));
                            }
                            run.last_terminal = Some(at);
                        }
                    }
                    Some("TASK_STATE_COMPLETED") => ended = true,
                    other => return Err(format!("task state {other:?}: {status}")),
                }
            }
        }
    }
    ensure!(ended, "EOF before the terminal status");
    ensure!(
        per_source.len() == settings.sources,
        "{} sources reported",
        per_source.len()
    );
    for (key, (records, terminal)) in &per_source {
        ensure!(terminal.is_some(), "{key} has no end");
        ensure!(
            *records == settings.records as u64,
            "{key} delivered {records} records"
        );
    }
    if scenario.has_slow_source() {
        let first = run.first_page.ok_or("no page")?;
        let slow = run.slow_terminal.ok_or("no slow terminal")?;
        ensure!(
            first < slow,
            "the first artifact ({first:?}) came after the slow source ended ({slow:?})"
        );
    }
    Ok(())
}

/// Checks the final response (both deliveries); returns `result_count` and the provenance
/// entries of its records (the records it merged).
fn check_final(message: &Message, id: u64, settings: &Settings) -> Result<(u64, u64), String> {
    ensure!(
        message.id == Some(json!(id)),
        "final response id {:?}",
        message.id
    );
    ensure!(
        message.method.is_none() && message.error.is_none(),
        "final response is an error: {:?}",
        message.error
    );
    let result = message
        .result
        .as_ref()
        .ok_or("final response without result")?;
    let structured = &result.structured_content;
    let metadata = &structured.metadata;
    ensure!(
        !result.is_error
            && metadata.completeness == "complete"
            && metadata.source_errors.is_empty(),
        "final result not complete: isError {}, {}, {:?}",
        result.is_error,
        metadata.completeness,
        metadata.source_errors
    );
    let expected = settings.expected_people();
    ensure!(
        metadata.result_count == expected && structured.result.len() as u64 == expected,
        "result_count {} with {} records, expected {expected}",
        metadata.result_count,
        structured.result.len()
    );
    let provenance: u64 = structured
        .result
        .iter()
        .map(|r| r.sources.len() as u64)
        .sum();
    ensure!(
        provenance == settings.delivered_records(),
        "the final records carry {provenance} provenance entries, {} were delivered",
        settings.delivered_records()
    );
    Ok((metadata.result_count, provenance))
}

// === CPU accounting ===

/// (server ms, client + provider ms, other busy cores) between `before` and `after`.
fn usage(before: &CpuSample, after: &CpuSample) -> (f64, f64, f64) {
    (
        before.server_ns(after) as f64 / 1e6,
        before.client_ns(after) as f64 / 1e6,
        before.other_cores(after),
    )
}

/// A CPU sample of this bench's runtimes.
fn cpu_sample() -> CpuSample {
    CpuSample::take(&[SERVER_THREAD], &[CLIENT_THREAD, PROVIDER_THREAD])
}

// === report ===

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn opt_ms(d: Option<Duration>) -> f64 {
    d.map_or(f64::NAN, ms)
}

/// A number, or `-` when there is none.
fn num(value: f64, decimals: usize) -> String {
    if value.is_nan() {
        "-".to_owned()
    } else {
        format!("{value:.decimals$}")
    }
}

/// Rates of a run: (records/s, events/s, MB/s); no events/s for a JSON answer.
fn rates(run: &Run) -> (f64, f64, f64) {
    let secs = run.total.as_secs_f64().max(1e-9);
    let events = if run.events == 0 {
        f64::NAN
    } else {
        run.events as f64 / secs
    };
    (
        run.records as f64 / secs,
        events,
        run.bytes as f64 / 1e6 / secs,
    )
}

fn print_run(round: &str, scenario: Scenario, run: &Run) {
    let (rps, eps, mbps) = rates(run);
    println!(
        "round {round:>2} {:<11} first page {:>7} ms  fast done {:>7} ms  slow end {:>7} ms  \
         final {:>7.1} ms  {:>9.0} rec/s {:>6} ev/s {:>6.1} MB/s  body {:>5.1} MB  \
         result_count {}  cpu srv {:.0} ms cli+prov {:.0} ms  others {:.2}",
        scenario.name(),
        num(opt_ms(run.first_page), 1),
        num(opt_ms(run.fast_done), 1),
        num(opt_ms(run.slow_terminal), 1),
        ms(run.total),
        rps,
        num(eps, 0),
        mbps,
        run.bytes as f64 / 1e6,
        run.result_count,
        run.server_cpu_ms,
        run.client_cpu_ms,
        run.others,
    );
}

fn print_table(settings: &Settings, runs: &[(Scenario, Vec<Run>)]) {
    let of = |scenario: Scenario| {
        runs.iter()
            .find(|(s, _)| *s == scenario)
            .map(|(_, r)| r.as_slice())
            .unwrap_or(&[])
    };
    let med = |runs: &[Run], f: &dyn Fn(&Run) -> f64| median(runs.iter().map(f).collect());
    println!(
        "\nmedians of {} rounds; {} sources × {} records, provider pages of {}, slow source {} ms/page",
        settings.rounds,
        settings.sources,
        settings.records,
        settings.provider_page,
        settings.slow_page.as_millis()
    );
    println!(
        "{:<12} {:>8} {:>8} {:>8} {:>8} {:>7} {:>8} {:>6} {:>6} {:>7} {:>6} {:>7} {:>8} {:>7} {:>6}",
        "scenario",
        "first ms",
        "fast ms",
        "slow ms",
        "final ms",
        "× json",
        "rec/s",
        "ev/s",
        "MB/s",
        "body MB",
        "events",
        "srv ms",
        "srv×json",
        "cli ms",
        "others"
    );
    for (scenario, list) in runs {
        let total = med(list, &|r| ms(r.total));
        let server = med(list, &|r| r.server_cpu_ms);
        let baseline = scenario.baseline().map(of).unwrap_or(&[]);
        let ratio = total / med(baseline, &|r| ms(r.total));
        let server_ratio = server / med(baseline, &|r| r.server_cpu_ms);
        println!(
            "{:<12} {:>8} {:>8} {:>8} {:>8.1} {:>7} {:>8.0} {:>6} {:>6.1} {:>7.1} {:>6} {:>7.0} {:>8} {:>7.0} {:>6.2}",
            scenario.name(),
            num(med(list, &|r| opt_ms(r.first_page)), 1),
            num(med(list, &|r| opt_ms(r.fast_done)), 1),
            num(med(list, &|r| opt_ms(r.slow_terminal)), 1),
            total,
            num(ratio, 2),
            med(list, &|r| rates(r).0),
            num(med(list, &|r| rates(r).1), 0),
            med(list, &|r| rates(r).2),
            med(list, &|r| r.bytes as f64 / 1e6),
            num(
                med(list, &|r| if r.events == 0 {
                    f64::NAN
                } else {
                    r.events as f64
                }),
                0
            ),
            server,
            num(server_ratio, 2),
            med(list, &|r| r.client_cpu_ms),
            med(list, &|r| r.others),
        );
    }
    for (scenario, list) in runs {
        let counts: Vec<u64> = list.iter().map(|r| r.result_count).collect();
        println!(
            "{:<12} result_count {:?}, final response {:.1} MB, headers after {:.2} ms, \
             final − last terminal {} ms",
            scenario.name(),
            counts,
            med(list, &|r| r.final_bytes as f64 / 1e6),
            med(list, &|r| ms(r.headers)),
            num(med(list, &|r| ms(r.total) - opt_ms(r.last_terminal)), 1),
        );
    }
}

// === main ===

fn main() {
    let bench = std::env::args().any(|arg| arg == "--bench");
    let settings = Arc::new(if bench {
        Settings::from_env()
    } else {
        Settings::smoke()
    });

    let (server_core, client_core) = common::server_and_client_cores();
    let data = Arc::new(Dataset::new(&settings));
    if bench {
        match (server_core, client_core) {
            (Some(s), Some(c)) => println!(
                "source_results: sluice on core {}, providers and client on core {}",
                s.id, c.id
            ),
            _ => println!("source_results: fewer than 2 cores visible; threads are not pinned"),
        }
        println!(
            "provider records: {:.0} B mean, provider page {:.1} KB; expected result_count {}",
            data.record_bytes,
            data.pages
                .first()
                .and_then(|p| p.first())
                .map_or(0.0, |b| b.len() as f64 / 1e3),
            settings.expected_people()
        );
    }
    if let Some(core) = client_core {
        core_affinity::set_for_current(core);
    }
    let server_rt = runtime(SERVER_THREAD, server_core);
    let client_rt = runtime(CLIENT_THREAD, client_core);
    let provider_rt = runtime(PROVIDER_THREAD, client_core);
    let (addr, stop) = start_servers(&settings, data, &server_rt, &provider_rt);

    let mut runs: Vec<(Scenario, Vec<Run>)> =
        Scenario::ALL.iter().map(|&s| (s, Vec::new())).collect();
    let mut next_id = 1u64;
    for round in 0..settings.warmup_rounds + settings.rounds {
        let measured = round >= settings.warmup_rounds;
        for (scenario, list) in &mut runs {
            let before = cpu_sample();
            let call = invoke(addr, *scenario, next_id, Arc::clone(&settings));
            // Built inside the task: the timer needs the client runtime.
            let task = client_rt.spawn(async move { tokio::time::timeout(HANG_LIMIT, call).await });
            next_id += 1;
            let mut run = client_rt
                .block_on(task)
                .expect("the client task ran")
                .unwrap_or_else(|_| {
                    panic!("{}: no final response in {HANG_LIMIT:?}", scenario.name())
                })
                .unwrap_or_else(|why| panic!("{}: {why}", scenario.name()));
            let (server_ms, client_ms, others) = usage(&before, &cpu_sample());
            run.server_cpu_ms = server_ms;
            run.client_cpu_ms = client_ms;
            run.others = others;
            if bench && (measured || settings.verbose) {
                let label = if measured {
                    (round + 1 - settings.warmup_rounds).to_string()
                } else {
                    "w".to_owned()
                };
                print_run(&label, *scenario, &run);
            }
            if measured {
                list.push(run);
            }
        }
    }
    if bench {
        print_table(&settings, &runs);
    } else {
        println!(
            "source_results smoke: {} scenarios, {} sources × {} records, every answer checked",
            runs.len(),
            settings.sources,
            settings.records
        );
    }
    drop(stop);
    drop(client_rt);
    drop(provider_rt);
    drop(server_rt);
}
