//! e2e_loopback: the MCP path end to end over real loopback sockets, against a minimal hyper
//! server in the same run (the practical limit) that reads the same request and answers the
//! same headers and one `event: message` frame holding sluice's `ping` response.
//!
//! Workloads ([`Workload`]): the baseline; `ping`, `tools/list` and `tools/call get_customer`
//! in a 2025-11-25 session (initialize and `notifications/initialized` once per connection,
//! then `Mcp-Session-Id` and `MCP-Protocol-Version` on every request, SSE answers); and the
//! stateless era (2026-07-28 `_meta` envelope and headers): `server/discover` (2026-07-28
//! removed `ping`; this is its lightest request) and `tools/list`; and A2A `SendMessage` running
//! `get_customer` (blocking, the completed task as JSON), whose server CPU per request against
//! `get_customer` over MCP is the A2A envelope's cost. Each cell (workload ×
//! connections) runs a warm-up and a counted window; rounds repeat every cell and the table
//! gives medians, the ratio of req/s to the baseline's at the same connection count, and the
//! server's CPU time per request (from `/proc/self/task/*/schedstat`) against the baseline's,
//! which is steadier than req/s on a shared machine.
//!
//! Shape: the servers (`sluice::serve` and the hyper baseline) run in one tokio runtime with ONE
//! worker thread pinned to core 0; the load generator runs in another one-worker runtime pinned
//! to core 1; the demo downstream API (`sluice::demo::serve_api`, for `tools/call`) runs in a
//! third one-worker runtime, also pinned to core 1, so core 0 does only the server's work.
//! Each connection is a hyper HTTP/1.1 keep-alive client issuing requests back to back; every
//! response is checked (status, content type, JSON-RPC id and result) and the bench panics on
//! the first bad one, so it cannot measure errors.
//!
//! Modes: `cargo bench --bench e2e_loopback` passes `--bench` and gets the full run (durations,
//! rounds, connection counts and workloads from `E2E_*` environment variables, see
//! [`Settings::from_env`]); without `--bench` (`cargo test --all-targets`) it runs a smoke
//! version: a few requests per workload, still checking every answer. Owns only this bench:
//! it must not change or reach into product code beyond the public API.

mod common;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{runtime, CpuSample};

use bytes::Bytes;
use http::header::{ACCEPT, CACHE_CONTROL, CONTENT_TYPE, HOST};
use http::{HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use sluice::catalog::Catalog;
use tokio::net::TcpListener;
use tokio::runtime::Runtime;
use tokio::sync::{oneshot, watch, Barrier};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The demo tenant's MCP endpoint.
const MCP_PATH: &str = "/runtime/demo/agent/mcp";
/// The handshake-era version the sessions negotiate (SSE answers open with a priming event).
const HANDSHAKE_VERSION: &str = "2025-11-25";
/// The stateless-era version.
const STATELESS_VERSION: &str = "2026-07-28";
/// Both media types (the handshake era requires both), SSE preferred so answers are SSE.
const ACCEPT_SSE: &str = "application/json;q=0.5, text/event-stream";
/// The baseline's answer: one `event: message` frame holding sluice's `ping` response.
const BASELINE_BODY: &[u8] =
    b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n";
/// The stateless-era `_meta` envelope every 2026-07-28 request carries.
const STATELESS_META: &str = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"e2e","version":"1"}}"#;
/// How long past its window a cell may take before the bench calls it a hang and panics.
const HANG_LIMIT: Duration = Duration::from_secs(10);
/// Thread names (and `/proc/self/task/*/comm` values) of the three runtimes.
const SERVER_THREAD: &str = "e2e-server";
const CLIENT_THREAD: &str = "e2e-client";
const API_THREAD: &str = "e2e-api";

// === settings ===

/// What one invocation measures.
#[derive(Debug, Clone)]
struct Settings {
    /// Time each cell runs before counting (`E2E_WARMUP_MS`, default 250).
    warmup: Duration,
    /// Time each cell counts (`E2E_DURATION_MS`, default 1250).
    duration: Duration,
    /// Rounds over every cell; medians are taken over rounds (`E2E_ROUNDS`, default 3).
    rounds: usize,
    /// Connection counts (`E2E_CONNS`, default `1,16,64`).
    conns: Vec<usize>,
    /// Workloads (`E2E_WORKLOADS`, default
    /// `hyper,hyper_cl,ping,tools_list,get_customer,sl_discover,sl_tools_list`; `sl_get_customer`
    /// too).
    workloads: Vec<Workload>,
    /// Stop each connection after this many requests (`E2E_REQUESTS`; the smoke run uses 5).
    /// Fixed counts make callgrind runs comparable.
    max_requests: Option<u64>,
    /// Print one sample answer per workload (`E2E_VERBOSE=1`).
    verbose: bool,
}

impl Settings {
    /// The full run, with `E2E_*` overrides.
    fn from_env() -> Self {
        let ms =
            |name: &str, default: u64| Duration::from_millis(env_parse(name).unwrap_or(default));
        Self {
            warmup: ms("E2E_WARMUP_MS", 250),
            duration: ms("E2E_DURATION_MS", 1250),
            rounds: env_parse("E2E_ROUNDS").unwrap_or(3).max(1),
            conns: env_list("E2E_CONNS", |s| s.parse().ok()).unwrap_or_else(|| vec![1, 16, 64]),
            workloads: env_list("E2E_WORKLOADS", Workload::from_name)
                .unwrap_or_else(|| Workload::DEFAULT.to_vec()),
            max_requests: env_parse("E2E_REQUESTS"),
            verbose: std::env::var("E2E_VERBOSE").is_ok_and(|v| v == "1"),
        }
    }

    /// The test-mode run: every workload, a few requests per connection, every answer checked.
    fn smoke() -> Self {
        Self {
            warmup: Duration::ZERO,
            duration: Duration::from_secs(30),
            rounds: 1,
            conns: vec![1, 4],
            workloads: Workload::ALL.to_vec(),
            max_requests: Some(5),
            verbose: false,
        }
    }
}

fn env_parse<T: std::str::FromStr>(name: &str) -> Option<T> {
    std::env::var(name).ok()?.trim().parse().ok()
}

fn env_list<T>(name: &str, item: impl Fn(&str) -> Option<T>) -> Option<Vec<T>> {
    let text = std::env::var(name).ok()?;
    let items: Vec<T> = text
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| item(s).unwrap_or_else(|| panic!("{name}: unknown item {s:?}")))
        .collect();
    (!items.is_empty()).then_some(items)
}

// === workloads ===

/// One kind of request, issued back to back on every connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Workload {
    /// The baseline: a minimal hyper server answering the `ping` SSE bytes.
    Hyper,
    /// The baseline answering with `Content-Length` instead of chunks: what sluice's choice to
    /// stream inline SSE answers (no length) costs.
    HyperCl,
    /// `ping` in a 2025-11-25 session, answered as SSE.
    Ping,
    /// `tools/list` of the demo catalog in a session, answered as SSE.
    ToolsList,
    /// `tools/call get_customer` through the demo API in a session, answered as SSE.
    GetCustomer,
    /// The stateless era's stand-in for `ping` (2026-07-28 removed `ping`): `server/discover`
    /// with the `_meta` envelope and the `MCP-Protocol-Version` + `Mcp-Method` headers.
    StatelessDiscover,
    /// `tools/list` in the stateless era, to compare with [`Workload::ToolsList`] in a session.
    StatelessToolsList,
    /// `tools/call get_customer` in the stateless era, with the full header trio (`Mcp-Name`
    /// too). Not in the default set.
    StatelessGetCustomer,
    /// A2A `SendMessage` running `get_customer` (blocking, answered as JSON with the completed
    /// task), to set the A2A envelope's cost against [`Workload::GetCustomer`].
    A2aGetCustomer,
    /// [`Workload::A2aGetCustomer`] through a second sluice that registers the first one's
    /// agent as a remote agent (`[[tenant.a2a_agent]]`): the concentrator's proxy cost.
    A2aProxy,
}

impl Workload {
    const ALL: [Workload; 10] = [
        Workload::Hyper,
        Workload::HyperCl,
        Workload::Ping,
        Workload::ToolsList,
        Workload::GetCustomer,
        Workload::StatelessDiscover,
        Workload::StatelessToolsList,
        Workload::StatelessGetCustomer,
        Workload::A2aGetCustomer,
        Workload::A2aProxy,
    ];
    /// What a run measures unless `E2E_WORKLOADS` says otherwise.
    const DEFAULT: [Workload; 9] = [
        Workload::Hyper,
        Workload::HyperCl,
        Workload::Ping,
        Workload::ToolsList,
        Workload::GetCustomer,
        Workload::StatelessDiscover,
        Workload::StatelessToolsList,
        Workload::A2aGetCustomer,
        Workload::A2aProxy,
    ];

    fn name(self) -> &'static str {
        match self {
            Workload::Hyper => "hyper",
            Workload::HyperCl => "hyper_cl",
            Workload::Ping => "ping",
            Workload::ToolsList => "tools_list",
            Workload::GetCustomer => "get_customer",
            Workload::StatelessDiscover => "sl_discover",
            Workload::StatelessToolsList => "sl_tools_list",
            Workload::StatelessGetCustomer => "sl_get_customer",
            Workload::A2aGetCustomer => "a2a_get_customer",
            Workload::A2aProxy => "a2a_proxy",
        }
    }

    fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|w| w.name() == name)
    }

    /// Whether the workload is served by the hyper baseline.
    fn is_baseline(self) -> bool {
        matches!(self, Workload::Hyper | Workload::HyperCl)
    }

    /// Whether the workload runs in a handshake-era session.
    fn in_session(self) -> bool {
        matches!(
            self,
            Workload::Ping | Workload::ToolsList | Workload::GetCustomer
        )
    }

    /// Whether the workload speaks the stateless era.
    fn is_stateless(self) -> bool {
        matches!(
            self,
            Workload::StatelessDiscover
                | Workload::StatelessToolsList
                | Workload::StatelessGetCustomer
        )
    }

    /// The JSON-RPC method.
    fn method(self) -> &'static str {
        match self {
            Workload::Hyper | Workload::HyperCl | Workload::Ping => "ping",
            Workload::ToolsList | Workload::StatelessToolsList => "tools/list",
            Workload::GetCustomer | Workload::StatelessGetCustomer => "tools/call",
            Workload::StatelessDiscover => "server/discover",
            Workload::A2aGetCustomer | Workload::A2aProxy => "SendMessage",
        }
    }

    /// The JSON-RPC request with id `id`.
    fn body(self, id: u64) -> String {
        match self {
            Workload::Hyper | Workload::HyperCl | Workload::Ping => {
                format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#)
            }
            Workload::ToolsList => {
                format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list"}}"#)
            }
            Workload::GetCustomer => format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"get_customer","arguments":{{"id":"c-100"}}}}}}"#
            ),
            Workload::StatelessDiscover | Workload::StatelessToolsList => format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"{}","params":{{"_meta":{STATELESS_META}}}}}"#,
                self.method()
            ),
            Workload::StatelessGetCustomer => format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"get_customer","arguments":{{"id":"c-100"}},"_meta":{STATELESS_META}}}}}"#
            ),
            Workload::A2aGetCustomer | Workload::A2aProxy => format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"SendMessage","params":{{"message":{{"messageId":"m{id}","role":"ROLE_USER","parts":[{{"data":{{"tool":"get_customer","arguments":{{"id":"c-100"}}}}}}]}}}}}}"#
            ),
        }
    }

    /// What every answer body must contain besides the SSE message frame and (for sluice) the
    /// echoed id.
    fn expected(self) -> &'static [&'static str] {
        match self {
            Workload::Hyper | Workload::HyperCl | Workload::Ping => &[r#""result":{}"#],
            Workload::ToolsList => &[
                r#""name":"get_customer""#,
                r#""name":"find_customers""#,
                r#""name":"place_order""#,
            ],
            Workload::GetCustomer => &[r#""name":"Ada Lovelace""#, r#""isError":false"#],
            Workload::StatelessDiscover => {
                &[r#""resultType":"complete""#, r#""supportedVersions""#]
            }
            Workload::StatelessToolsList => &[
                r#""resultType":"complete""#,
                r#""name":"get_customer""#,
                r#""name":"find_customers""#,
                r#""name":"place_order""#,
            ],
            Workload::StatelessGetCustomer => &[
                r#""resultType":"complete""#,
                r#""name":"Ada Lovelace""#,
                r#""isError":false"#,
            ],
            Workload::A2aGetCustomer | Workload::A2aProxy => {
                &[r#""TASK_STATE_COMPLETED""#, r#""name":"Ada Lovelace""#]
            }
        }
    }
}

/// Checks one answer; `Err` describes what is wrong with it. Byte searches with `memmem` (no
/// UTF-8 pass, no allocation unless the answer is wrong) keep the load generator's cost per
/// answer low, so it stays ahead of the server on large answers.
fn check_answer(
    workload: Workload,
    id: u64,
    status: StatusCode,
    content_type: Option<&HeaderValue>,
    body: &[u8],
) -> Result<(), String> {
    let fail = |why: &str| {
        let text = String::from_utf8_lossy(body);
        Err(format!("{}: {why}: {status} {text:?}", workload.name()))
    };
    let has = |needle: &[u8]| memchr::memmem::find(body, needle).is_some();
    if status != StatusCode::OK {
        return fail("status is not 200");
    }
    if matches!(workload, Workload::A2aGetCustomer | Workload::A2aProxy) {
        if content_type.is_none_or(|v| v.as_bytes() != b"application/json") {
            return fail("content type is not application/json");
        }
    } else {
        if content_type.is_none_or(|v| v.as_bytes() != b"text/event-stream") {
            return fail("content type is not text/event-stream");
        }
        if !has(b"event: message\n") || !body.ends_with(b"\n\n") {
            return fail("no complete `event: message` frame");
        }
    }
    if !workload.is_baseline() {
        let mut needle = [0u8; 48];
        let mut cursor = std::io::Cursor::new(&mut needle[..]);
        let _ = std::io::Write::write_fmt(&mut cursor, format_args!(r#""id":{id},"result":"#));
        let len = usize::try_from(cursor.position()).unwrap_or(0);
        if !has(&needle[..len]) {
            return fail("not a result for this request's id");
        }
    }
    if let Some(missing) = workload.expected().iter().find(|n| !has(n.as_bytes())) {
        return fail(&format!("missing {missing}"));
    }
    Ok(())
}

// === servers ===

/// What the servers listen on.
struct Addrs {
    sluice: SocketAddr,
    /// The concentrator in front of `sluice` ([`Workload::A2aProxy`]).
    edge: SocketAddr,
    hyper: SocketAddr,
    hyper_cl: SocketAddr,
}

/// Starts the demo API on `api_rt`, then sluice and the baseline on `server_rt`; dropping the
/// returned sender stops all three.
fn start_servers(server_rt: &Runtime, api_rt: &Runtime) -> (Addrs, oneshot::Sender<()>) {
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let stop = futures::future::FutureExt::shared(async move {
        let _ = stop_rx.await;
    });

    let api = api_rt
        .block_on(TcpListener::bind("127.0.0.1:0"))
        .expect("binding the demo API");
    let api_base = format!("http://{}", api.local_addr().expect("api addr"));
    api_rt.spawn(sluice::demo::serve_api(api, stop.clone()));

    let text = sluice::demo::config_text(&api_base);
    let config = sluice::config::parse(&text, "demo").expect("demo config parses");
    let catalog = Arc::new(Catalog::from_config(&config).expect("demo config is valid"));
    let mut serve_config = sluice::ServeConfig::from_catalog(catalog);
    // Every A2A request leaves a task behind: room for a whole run's, gone soon after.
    serve_config.a2a.max_tasks_per_tenant = 50_000_000;
    serve_config.a2a.task_retain_secs = 5;

    let (sluice_listener, edge_listener, hyper_listener, hyper_cl_listener) =
        server_rt.block_on(async {
            (
                TcpListener::bind("127.0.0.1:0").await.expect("bind sluice"),
                TcpListener::bind("127.0.0.1:0").await.expect("bind edge"),
                TcpListener::bind("127.0.0.1:0").await.expect("bind hyper"),
                TcpListener::bind("127.0.0.1:0")
                    .await
                    .expect("bind hyper_cl"),
            )
        });
    let addrs = Addrs {
        sluice: sluice_listener.local_addr().expect("sluice addr"),
        edge: edge_listener.local_addr().expect("edge addr"),
        hyper: hyper_listener.local_addr().expect("hyper addr"),
        hyper_cl: hyper_cl_listener.local_addr().expect("hyper_cl addr"),
    };
    // Spawned, not `block_on`: the accept loops must run on the pinned worker thread.
    let stop_sluice = stop.clone();
    server_rt.spawn(async move {
        sluice::serve(sluice_listener, serve_config, stop_sluice)
            .await
            .expect("sluice serves");
    });
    // The concentrator: one anonymous tenant whose client reaches the demo agent as a remote
    // agent (no upstream credential: the demo tenant is anonymous too).
    let edge_text = format!(
        r#"
[server.a2a]
remote_max_tasks_per_tenant = 50000000
remote_task_secs = 5
remote_terminal_secs = 5
[[tenant]]
id = "edge"
auth = {{ anonymous = true }}
[[tenant.client]]
id = "app"
[[tenant.a2a_agent]]
id = "demo"
card_url = "http://{}/runtime/demo/agent/a2a/.well-known/agent-card.json"
clients = ["app"]
"#,
        addrs.sluice
    );
    let edge_config = sluice::config::parse(&edge_text, "edge").expect("edge config parses");
    let edge_catalog = Arc::new(Catalog::from_config(&edge_config).expect("edge config is valid"));
    let edge_serve = sluice::ServeConfig::from_catalog(edge_catalog);
    let stop_edge = stop.clone();
    server_rt.spawn(async move {
        sluice::serve(edge_listener, edge_serve, stop_edge)
            .await
            .expect("the edge serves");
    });
    server_rt.spawn(serve_baseline(
        hyper_listener,
        Framing::Chunked,
        stop.clone(),
    ));
    server_rt.spawn(serve_baseline(hyper_cl_listener, Framing::Length, stop));
    (addrs, stop_tx)
}

/// How the baseline frames its answer on the wire.
#[derive(Debug, Clone, Copy)]
enum Framing {
    /// A body of unknown length, so `Transfer-Encoding: chunked`, as sluice sends SSE answers.
    Chunked,
    /// `Content-Length`.
    Length,
}

/// The baseline's body: one frame, with or without a known length (no allocation either way).
type BaselineBody = http_body_util::Either<
    Full<Bytes>,
    http_body_util::StreamBody<
        futures::stream::Once<std::future::Ready<Result<hyper::body::Frame<Bytes>, Infallible>>>,
    >,
>;

/// The practical limit: hyper's HTTP/1.1 connection with `TCP_NODELAY`, reading the request
/// body in full (as sluice must) and answering sluice's headers and one SSE frame.
async fn serve_baseline(
    listener: TcpListener,
    framing: Framing,
    stop: impl std::future::Future<Output = ()>,
) {
    let service = hyper::service::service_fn(move |req| baseline_answer(req, framing));
    common::serve_http1(listener, stop, service).await;
}

async fn baseline_answer(
    req: Request<Incoming>,
    framing: Framing,
) -> Result<Response<BaselineBody>, Infallible> {
    // Read the whole body, as a real handler would; its content is not looked at.
    let _ = req.into_body().collect().await;
    let bytes = Bytes::from_static(BASELINE_BODY);
    let body = match framing {
        Framing::Length => http_body_util::Either::Left(Full::new(bytes)),
        Framing::Chunked => http_body_util::Either::Right(http_body_util::StreamBody::new(
            futures::stream::once(std::future::ready(Ok(hyper::body::Frame::data(bytes)))),
        )),
    };
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    Ok(response)
}

// === load generator ===

type Sender = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

/// The counting window, published once every connection is ready.
#[derive(Debug, Clone, Copy)]
struct Window {
    start: Instant,
    end: Instant,
}

/// What one connection measured.
#[derive(Debug, Default)]
struct ConnResult {
    /// Latencies (ns) of requests completed inside the window.
    latencies: Vec<u64>,
    /// Requests completed in all (warm-up included).
    completed: u64,
}

/// What one cell (workload × connections, one round) measured.
#[derive(Debug, Clone, Copy)]
struct Cell {
    rps: f64,
    p50_us: f64,
    p99_us: f64,
    /// CPU time of the server thread(s) / wall time, in cores.
    server_cpu: f64,
    /// CPU time of the client thread(s) / wall time, in cores.
    client_cpu: f64,
    /// Busy cores of the whole machine minus this process: other engineers' load.
    other_cpu: f64,
}

fn base_request() -> http::request::Builder {
    Request::builder()
        .method(Method::POST)
        .uri(MCP_PATH)
        .header(HOST, "127.0.0.1")
        .header(CONTENT_TYPE, "application/json")
        .header(ACCEPT, ACCEPT_SSE)
}

async fn connect(addr: SocketAddr) -> Result<Sender, String> {
    common::connect(addr).await
}

/// Sends one request and reads the whole answer.
async fn exchange(
    sender: &mut Sender,
    request: Request<Full<Bytes>>,
) -> Result<(StatusCode, http::HeaderMap, Bytes), String> {
    sender.ready().await.map_err(|e| format!("ready: {e}"))?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| format!("send: {e}"))?;
    let (parts, body) = response.into_parts();
    let body = body
        .collect()
        .await
        .map_err(|e| format!("body: {e}"))?
        .to_bytes();
    Ok((parts.status, parts.headers, body))
}

/// `initialize` then `notifications/initialized`; returns the session id.
async fn open_session(sender: &mut Sender) -> Result<HeaderValue, String> {
    let init = format!(
        r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"{HANDSHAKE_VERSION}","capabilities":{{}},"clientInfo":{{"name":"e2e","version":"1"}}}}}}"#
    );
    let request = base_request()
        .body(Full::new(Bytes::from(init)))
        .map_err(|e| e.to_string())?;
    let (status, headers, body) = exchange(sender, request).await?;
    let session = headers
        .get("mcp-session-id")
        .cloned()
        .filter(|_| status == StatusCode::OK)
        .ok_or_else(|| format!("initialize: {status} {body:?}"))?;
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let request = base_request()
        .header("mcp-session-id", session.clone())
        .header("mcp-protocol-version", HANDSHAKE_VERSION)
        .body(Full::new(Bytes::from_static(initialized.as_bytes())))
        .map_err(|e| e.to_string())?;
    let (status, _, body) = exchange(sender, request).await?;
    if status != StatusCode::ACCEPTED {
        return Err(format!("notifications/initialized: {status} {body:?}"));
    }
    Ok(session)
}

/// `DELETE` of the session: 204 expected.
async fn close_session(sender: &mut Sender, session: HeaderValue) -> Result<(), String> {
    let request = Request::builder()
        .method(Method::DELETE)
        .uri(MCP_PATH)
        .header(HOST, "127.0.0.1")
        .header("mcp-session-id", session)
        .body(Full::new(Bytes::new()))
        .map_err(|e| e.to_string())?;
    let (status, _, body) = exchange(sender, request).await?;
    if status != StatusCode::NO_CONTENT {
        return Err(format!("DELETE: {status} {body:?}"));
    }
    Ok(())
}

fn workload_request(
    workload: Workload,
    session: Option<&HeaderValue>,
    id: u64,
) -> Result<Request<Full<Bytes>>, String> {
    let mut builder = base_request();
    // The baseline gets the same request headers as `ping` in a session (it ignores them).
    let baseline_session = HeaderValue::from_static("AAAAAAAAAAAAAAAAAAAAAA");
    let session = match workload {
        Workload::Hyper | Workload::HyperCl => Some(&baseline_session),
        _ => session,
    };
    if let Some(session) = session {
        builder = builder
            .header("mcp-session-id", session.clone())
            .header("mcp-protocol-version", HANDSHAKE_VERSION);
    }
    if workload.is_stateless() {
        builder = builder
            .header("mcp-protocol-version", STATELESS_VERSION)
            .header("mcp-method", workload.method());
        if workload == Workload::StatelessGetCustomer {
            builder = builder.header("mcp-name", "get_customer");
        }
    }
    if workload == Workload::A2aGetCustomer {
        builder = builder
            .uri("/runtime/demo/agent/a2a")
            .header("a2a-version", "1.0");
    }
    if workload == Workload::A2aProxy {
        builder = builder
            .uri("/runtime/edge/app/a2a/agents/demo")
            .header("a2a-version", "1.0");
    }
    builder
        .body(Full::new(Bytes::from(workload.body(id))))
        .map_err(|e| e.to_string())
}

/// One connection: set up (session if any), wait for the window, issue requests back to back
/// until it ends, check every answer, close the session.
async fn connection(
    addr: SocketAddr,
    workload: Workload,
    max_requests: Option<u64>,
    ready: Arc<Barrier>,
    mut window: watch::Receiver<Option<Window>>,
    sample: bool,
) -> Result<ConnResult, String> {
    let setup = async {
        let mut sender = connect(addr).await?;
        let session = match workload.in_session() {
            true => Some(open_session(&mut sender).await?),
            false => None,
        };
        Ok::<_, String>((sender, session))
    }
    .await;
    // Reach the barrier even on failure, so the others are not left waiting.
    ready.wait().await;
    let (mut sender, session) = setup?;
    let window = window
        .wait_for(Option::is_some)
        .await
        .map_err(|e| e.to_string())?
        .ok_or("no window")?;

    let mut result = ConnResult::default();
    let mut id = 1;
    loop {
        let started = Instant::now();
        if started >= window.end || max_requests.is_some_and(|max| result.completed >= max) {
            break;
        }
        let request = workload_request(workload, session.as_ref(), id)?;
        let (status, headers, body) = exchange(&mut sender, request).await?;
        let done = Instant::now();
        check_answer(workload, id, status, headers.get(CONTENT_TYPE), &body)?;
        if sample && id == 1 {
            println!(
                "--- {} answer:\n{}",
                workload.name(),
                String::from_utf8_lossy(&body)
            );
        }
        result.completed += 1;
        if done >= window.start && done < window.end {
            result
                .latencies
                .push(u64::try_from((done - started).as_nanos()).unwrap_or(u64::MAX));
        }
        id += 1;
    }
    if let Some(session) = session {
        close_session(&mut sender, session).await?;
    }
    Ok(result)
}

/// Runs one cell on the client runtime and returns what it measured.
fn run_cell(
    client_rt: &Runtime,
    addr: SocketAddr,
    workload: Workload,
    conns: usize,
    settings: &Settings,
    sample: bool,
) -> Cell {
    client_rt.block_on(async {
        let ready = Arc::new(Barrier::new(conns + 1));
        let (window_tx, window_rx) = watch::channel(None);
        let tasks: Vec<_> = (0..conns)
            .map(|conn_idx| {
                tokio::spawn(connection(
                    addr,
                    workload,
                    settings.max_requests,
                    Arc::clone(&ready),
                    window_rx.clone(),
                    sample && conn_idx == 0,
                ))
            })
            .collect();
        if tokio::time::timeout(HANG_LIMIT, ready.wait())
            .await
            .is_err()
        {
            panic!("{} × {conns}: connection set-up hangs", workload.name());
        }
        let now = Instant::now();
        let window = Window {
            start: now + settings.warmup,
            end: now + settings.warmup + settings.duration,
        };
        window_tx.send_replace(Some(window));

        tokio::time::sleep_until(window.start.into()).await;
        let before = cpu_sample();
        // Sample when the window ends, while the connections are still running (or when they
        // all stop earlier, in a run with a fixed request count).
        let joined = futures::future::join_all(tasks);
        tokio::pin!(joined);
        let (after, outcomes) = tokio::select! {
            () = tokio::time::sleep_until(window.end.into()) => {
                let after = cpu_sample();
                let outcomes = tokio::time::timeout(HANG_LIMIT, joined)
                    .await
                    .unwrap_or_else(|_| panic!("{} × {conns}: requests hang", workload.name()));
                (after, outcomes)
            }
            outcomes = &mut joined => (cpu_sample(), outcomes),
        };
        let mut results = Vec::with_capacity(conns);
        for outcome in outcomes {
            match outcome {
                Ok(Ok(result)) => results.push(result),
                Ok(Err(why)) => panic!("{} × {conns}: {why}", workload.name()),
                Err(join) => panic!("{} × {conns}: task failed: {join}", workload.name()),
            }
        }
        let measured = settings.duration.min(after.at - before.at);

        let mut latencies: Vec<u64> = results
            .iter()
            .flat_map(|r| r.latencies.iter().copied())
            .collect();
        let completed: u64 = results.iter().map(|r| r.completed).sum();
        assert!(
            completed > 0,
            "{} × {conns}: no request completed",
            workload.name()
        );
        latencies.sort_unstable();
        let (server_cpu, client_cpu, other_cpu) = usage(&before, &after);
        Cell {
            rps: latencies.len() as f64 / measured.as_secs_f64(),
            p50_us: percentile(&latencies, 0.50) / 1e3,
            p99_us: percentile(&latencies, 0.99) / 1e3,
            server_cpu,
            client_cpu,
            other_cpu,
        }
    })
}

/// The `q` quantile of sorted values (nearest rank); 0 when empty.
fn percentile(sorted: &[u64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((sorted.len() as f64) * q).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1] as f64
}

// === CPU accounting ===

/// (server, client core, others) busy cores between `before` and `after`. The client core also
/// runs the demo API.
fn usage(before: &CpuSample, after: &CpuSample) -> (f64, f64, f64) {
    let secs = before.secs(after);
    (
        before.server_ns(after) as f64 / 1e9 / secs,
        before.client_ns(after) as f64 / 1e9 / secs,
        before.other_cores(after),
    )
}

/// A CPU sample of this bench's runtimes.
fn cpu_sample() -> CpuSample {
    CpuSample::take(&[SERVER_THREAD], &[CLIENT_THREAD, API_THREAD])
}

// === report ===

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => 0.0,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

/// Server CPU time per request, in µs.
fn server_us(cell: &Cell) -> f64 {
    if cell.rps > 0.0 {
        cell.server_cpu / cell.rps * 1e6
    } else {
        0.0
    }
}

fn print_table(settings: &Settings, cells: &[(Workload, usize, Vec<Cell>)]) {
    println!(
        "\nmedians of {} round(s), {} ms each after {} ms warm-up; ratio = req/s over hyper's; \
         cpu ratio = hyper's server CPU per request over this one's",
        settings.rounds,
        settings.duration.as_millis(),
        settings.warmup.as_millis()
    );
    println!(
        "{:<15} {:>5} {:>9} {:>9} {:>9} {:>6} {:>8} {:>6} {:>7} {:>7} {:>7}",
        "workload",
        "conns",
        "req/s",
        "p50 µs",
        "p99 µs",
        "ratio",
        "srv µs/r",
        "cpu r.",
        "srv cpu",
        "cli cpu",
        "others"
    );
    for &conns in &settings.conns {
        let limit = cells
            .iter()
            .find(|(w, c, _)| *w == Workload::Hyper && *c == conns)
            .map(|(_, _, runs)| {
                (
                    median(runs.iter().map(|r| r.rps).collect()),
                    median(runs.iter().map(server_us).collect()),
                )
            });
        for (workload, _, runs) in cells.iter().filter(|(_, c, _)| *c == conns) {
            let m = |f: &dyn Fn(&Cell) -> f64| median(runs.iter().map(f).collect());
            let rps = m(&|c| c.rps);
            let us = m(&server_us);
            let ratio = limit.map_or("-".to_owned(), |(l, _)| format!("{:.0}%", 100.0 * rps / l));
            let cpu_ratio =
                limit.map_or("-".to_owned(), |(_, l)| format!("{:.0}%", 100.0 * l / us));
            println!(
                "{:<15} {:>5} {:>9.0} {:>9.1} {:>9.1} {:>6} {:>8.2} {:>6} {:>7.2} {:>7.2} {:>7.2}",
                workload.name(),
                conns,
                rps,
                m(&|c| c.p50_us),
                m(&|c| c.p99_us),
                ratio,
                us,
                cpu_ratio,
                m(&|c| c.server_cpu),
                m(&|c| c.client_cpu),
                m(&|c| c.other_cpu),
            );
        }
    }
}

// === main ===

fn main() {
    let bench = std::env::args().any(|arg| arg == "--bench");
    let settings = if bench {
        Settings::from_env()
    } else {
        Settings::smoke()
    };

    let (server_core, client_core) = common::server_and_client_cores();
    if bench {
        match (server_core, client_core) {
            (Some(s), Some(c)) => println!(
                "e2e_loopback: server on core {}, load generator and demo API on core {}",
                s.id, c.id
            ),
            _ => println!("e2e_loopback: fewer than 2 cores visible; threads are not pinned"),
        }
    }
    if let Some(core) = client_core {
        core_affinity::set_for_current(core);
    }
    let server_rt = runtime(SERVER_THREAD, server_core);
    let client_rt = runtime(CLIENT_THREAD, client_core);
    let api_rt = runtime(API_THREAD, client_core);
    let (addrs, stop) = start_servers(&server_rt, &api_rt);

    let mut cells: Vec<(Workload, usize, Vec<Cell>)> = Vec::new();
    for &conns in &settings.conns {
        for &workload in &settings.workloads {
            cells.push((workload, conns, Vec::new()));
        }
    }
    for round in 0..settings.rounds {
        for (workload, conns, runs) in &mut cells {
            let addr = match workload {
                Workload::Hyper => addrs.hyper,
                Workload::HyperCl => addrs.hyper_cl,
                Workload::A2aProxy => addrs.edge,
                _ => addrs.sluice,
            };
            let sample = settings.verbose && round == 0 && *conns == settings.conns[0];
            let cell = run_cell(&client_rt, addr, *workload, *conns, &settings, sample);
            if bench {
                println!(
                    "round {} {:<15} × {:>3}: {:>9.0} req/s  p50 {:>8.1} µs  p99 {:>8.1} µs  cpu srv {:.2} cli {:.2} others {:.2}",
                    round + 1,
                    workload.name(),
                    conns,
                    cell.rps,
                    cell.p50_us,
                    cell.p99_us,
                    cell.server_cpu,
                    cell.client_cpu,
                    cell.other_cpu
                );
            }
            runs.push(cell);
        }
    }
    if bench {
        print_table(&settings, &cells);
    } else {
        println!(
            "e2e_loopback smoke: {} workloads × {:?} connections, every answer checked",
            settings.workloads.len(),
            settings.conns
        );
    }
    drop(stop);
    drop(client_rt);
    drop(api_rt);
    server_rt.shutdown_timeout(Duration::from_secs(1));
}
