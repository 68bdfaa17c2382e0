//! cluster: `tools/call` through an instance that does not hold the session, with the session
//! validated in Redis, against the same call on an instance with the process-local store, in
//! the same run.
//!
//! Five sluice instances run in one one-worker runtime pinned to core 0: `local` (process-local
//! sessions), `holder` and `peer` (sessions in Redis under a fresh key prefix, the defaults: the
//! session cache and refresh skipping on), and `holder0` and `peer0` (under another prefix, with
//! `session_cache_ms = 0` and `session_refresh_after_percent = 0`: every request runs the
//! validation script and writes the expiry, the behaviour before issue 15, as the baseline in the
//! same run). For a Redis workload every connection initializes its session on the holder and
//! then sends `tools/call get_customer` to the peer back to back, so each request is validated by
//! an instance that never saw the session before (its first request) and then from its cache or
//! Redis; for the local workload the connection initializes and calls on `local`. The demo downstream API and the
//! load generator run in one-worker runtimes pinned to core 1. Every answer is checked (status,
//! JSON-RPC id, result) and the bench panics on the first bad one, so it cannot measure errors.
//! Redis round trips per request are counted on the server (`INFO commandstats`) over each Redis
//! cell: `EVALSHA` calls per request (every request-path operation is one script, so this is the
//! round trips; the connections' `initialize` and `notifications/initialized` add a fraction) and
//! all commands per request (those a script runs count too: `TIME`, `HMGET`, `HSET`, ...).
//!
//! Modes: `cargo bench --bench cluster` runs the full measurement (environment:
//! `CLUSTER_DURATION_MS` per cell, default 2000; `CLUSTER_ROUNDS`, default 3, medians over
//! rounds; `CLUSTER_CONNS`, default `1,16`); without `--bench` (`cargo test --all-targets`) a
//! smoke run of a few requests per workload. Needs Redis at `SLUICE_TEST_REDIS_URL` (default
//! `redis://127.0.0.1:6379`): without it the bench prints a skip line, or fails when
//! `SLUICE_REQUIRE_REDIS=1`. Owns only this bench; uses the public API only.

mod common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::runtime;

use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_TYPE, HOST};
use http::{HeaderValue, Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use sluice::catalog::Catalog;
use sluice::session::{RedisConfig, SessionId};
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Runtime;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const MCP_PATH: &str = "/runtime/demo/agent/mcp";
const VERSION: &str = "2025-11-25";

type Sender = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

struct Settings {
    duration: Duration,
    rounds: usize,
    conns: Vec<usize>,
    /// Smoke mode: this many requests per connection instead of a timed window.
    smoke: Option<u64>,
}

impl Settings {
    fn from_env() -> Settings {
        let full = std::env::args().any(|arg| arg == "--bench");
        let number = |name: &str, default: u64| {
            std::env::var(name)
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(default)
        };
        let conns = std::env::var("CLUSTER_CONNS")
            .ok()
            .map(|v| v.split(',').filter_map(|n| n.trim().parse().ok()).collect())
            .unwrap_or_else(|| vec![1, 16]);
        Settings {
            duration: Duration::from_millis(number("CLUSTER_DURATION_MS", 2000)),
            rounds: if full {
                number("CLUSTER_ROUNDS", 3) as usize
            } else {
                1
            },
            conns: if full { conns } else { vec![1, 4] },
            smoke: (!full).then_some(20),
        }
    }
}

fn redis_url() -> String {
    std::env::var("SLUICE_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned())
}

async fn redis_connection(url: &str) -> Option<redis::aio::MultiplexedConnection> {
    let connect = async {
        let client = redis::Client::open(url).ok()?;
        client.get_multiplexed_async_connection().await.ok()
    };
    tokio::time::timeout(Duration::from_secs(2), connect)
        .await
        .ok()
        .flatten()
}

/// `EVALSHA` calls and all commands processed by the Redis server so far.
async fn commands_processed(connection: &mut redis::aio::MultiplexedConnection) -> (u64, u64) {
    let info: String = redis::cmd("INFO")
        .arg("all")
        .query_async(connection)
        .await
        .expect("INFO all");
    let total = info
        .lines()
        .find_map(|line| line.strip_prefix("total_commands_processed:"))
        .and_then(|n| n.trim().parse().ok())
        .expect("total_commands_processed");
    let evalsha = info
        .lines()
        .find_map(|line| line.strip_prefix("cmdstat_evalsha:calls="))
        .and_then(|rest| rest.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    (evalsha, total)
}

struct Addrs {
    local: SocketAddr,
    holder: SocketAddr,
    peer: SocketAddr,
    holder0: SocketAddr,
    peer0: SocketAddr,
}

fn start_servers(
    server_rt: &Runtime,
    api_rt: &Runtime,
    redis: &RedisConfig,
    uncached: &RedisConfig,
) -> Addrs {
    let api = api_rt
        .block_on(TcpListener::bind("127.0.0.1:0"))
        .expect("binding the demo API");
    let api_base = format!("http://{}", api.local_addr().expect("api addr"));
    api_rt.spawn(sluice::demo::serve_api(api, std::future::pending()));
    let text = sluice::demo::config_text(&api_base);
    let config = sluice::config::parse(&text, "demo").expect("demo config parses");
    let bind = |cluster: Option<RedisConfig>| {
        let catalog = Arc::new(Catalog::from_config(&config).expect("demo config is valid"));
        let mut serve_config = sluice::ServeConfig::from_catalog(catalog);
        serve_config.cluster = cluster;
        let listener = server_rt
            .block_on(TcpListener::bind("127.0.0.1:0"))
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        server_rt.spawn(async move {
            sluice::serve(listener, serve_config, std::future::pending())
                .await
                .expect("sluice serves");
        });
        addr
    };
    Addrs {
        local: bind(None),
        holder: bind(Some(redis.clone())),
        peer: bind(Some(redis.clone())),
        holder0: bind(Some(uncached.clone())),
        peer0: bind(Some(uncached.clone())),
    }
}

async fn connect(addr: SocketAddr) -> Sender {
    // The server may still be connecting to Redis: retry briefly.
    let deadline = Instant::now() + Duration::from_secs(10);
    let stream = loop {
        match TcpStream::connect(addr).await {
            Ok(stream) => break stream,
            Err(err) if Instant::now() > deadline => panic!("connect {addr}: {err}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    };
    let _ = stream.set_nodelay(true);
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .expect("handshake");
    tokio::spawn(conn);
    sender
}

fn post(session: Option<&HeaderValue>, body: String) -> Request<Full<Bytes>> {
    let mut builder = Request::builder()
        .method(Method::POST)
        .uri(MCP_PATH)
        .header(HOST, "127.0.0.1")
        .header(ACCEPT, "application/json, text/event-stream")
        .header(CONTENT_TYPE, "application/json");
    if let Some(session) = session {
        builder = builder
            .header("mcp-session-id", session.clone())
            .header("mcp-protocol-version", VERSION);
    }
    builder.body(Full::new(Bytes::from(body))).expect("request")
}

async fn exchange(
    sender: &mut Sender,
    request: Request<Full<Bytes>>,
) -> (StatusCode, HeaderValue, Bytes) {
    sender.ready().await.expect("connection ready");
    let response = sender.send_request(request).await.expect("response");
    let (parts, body) = response.into_parts();
    let body = body.collect().await.expect("body").to_bytes();
    let session = parts
        .headers
        .get("mcp-session-id")
        .cloned()
        .unwrap_or_else(|| HeaderValue::from_static(""));
    (parts.status, session, body)
}

/// Initializes a session on `addr` (on its own connection).
async fn open_session(addr: SocketAddr) -> HeaderValue {
    let mut sender = connect(addr).await;
    let init = format!(
        r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"{VERSION}","capabilities":{{}},"clientInfo":{{"name":"bench","version":"1"}}}}}}"#
    );
    let (status, session, body) = exchange(&mut sender, post(None, init)).await;
    assert_eq!(status, StatusCode::OK, "initialize: {body:?}");
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned();
    let (status, _, body) = exchange(&mut sender, post(Some(&session), initialized)).await;
    assert_eq!(status, StatusCode::ACCEPTED, "initialized: {body:?}");
    session
}

/// One connection's requests: `tools/call get_customer` on `call_on`, in a session opened on
/// `open_on`, until `until` (or `smoke` requests). Returns how many completed.
async fn connection(
    open_on: SocketAddr,
    call_on: SocketAddr,
    until: Instant,
    smoke: Option<u64>,
) -> u64 {
    let session = open_session(open_on).await;
    let mut sender = connect(call_on).await;
    let mut done = 0u64;
    loop {
        if smoke.map_or(Instant::now() >= until, |n| done >= n) {
            return done;
        }
        let id = done + 1;
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"get_customer","arguments":{{"id":"c-100"}}}}}}"#
        );
        let (status, _, answer) = exchange(&mut sender, post(Some(&session), body)).await;
        let expected_id = format!(r#""id":{id}"#);
        let ok = status == StatusCode::OK
            && answer
                .windows(expected_id.len())
                .any(|w| w == expected_id.as_bytes())
            && answer.windows(9).any(|w| w == br#""result":"#);
        assert!(ok, "bad answer {status}: {answer:?}");
        done += 1;
    }
}

/// Runs `conns` connections for the window; returns requests per second and the request count.
fn cell(
    client_rt: &Runtime,
    open_on: SocketAddr,
    call_on: SocketAddr,
    conns: usize,
    settings: &Settings,
) -> (f64, u64) {
    client_rt.block_on(async {
        let started = Instant::now();
        // Sessions are opened inside each task: the window starts after a short setup margin.
        let until = started + Duration::from_millis(100) + settings.duration;
        let tasks: Vec<_> = (0..conns)
            .map(|_| tokio::spawn(connection(open_on, call_on, until, settings.smoke)))
            .collect();
        let mut total = 0;
        for task in tasks {
            total += task.await.expect("connection task");
        }
        let elapsed = started.elapsed().as_secs_f64();
        (total as f64 / elapsed, total)
    })
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(|a, b| a.total_cmp(b));
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

fn main() {
    let settings = Settings::from_env();
    let cores = core_affinity::get_core_ids().unwrap_or_default();
    let (server_core, client_core) = (cores.first().copied(), cores.get(1).copied());
    let server_rt = runtime("cluster-server", server_core);
    let client_rt = runtime("cluster-client", client_core);
    let api_rt = runtime("cluster-api", client_core);

    let url = redis_url();
    let Some(mut probe) = client_rt.block_on(redis_connection(&url)) else {
        assert!(
            std::env::var("SLUICE_REQUIRE_REDIS").as_deref() != Ok("1"),
            "cluster bench: Redis at {url} is unreachable and SLUICE_REQUIRE_REDIS=1"
        );
        println!("SKIP cluster bench: Redis at {url} is unreachable");
        return;
    };
    let prefix = format!("bench-{}", SessionId::random().encode().as_str());
    let prefix0 = format!("bench0-{}", SessionId::random().encode().as_str());
    let redis = RedisConfig::new(url.clone()).with_prefix(prefix.clone());
    let uncached = RedisConfig {
        refresh_after_percent: 0,
        session_cache: Duration::ZERO,
        ..RedisConfig::new(url).with_prefix(prefix0.clone())
    };
    let addrs = start_servers(&server_rt, &api_rt, &redis, &uncached);

    println!("cluster bench: tools/call get_customer, JSON answers, one server core");
    println!(
        "redis = non-holder with the defaults (cache, refresh skipping); redis0 = non-holder, \
         no cache, refresh every request (before issue 15)"
    );
    println!(
        "conns  local req/s  redis req/s  ratio  EVALSHA/req  cmds/req  redis0 req/s  ratio0  \
         EVALSHA/req0  cmds/req0"
    );
    for &conns in &settings.conns {
        let mut local = Vec::new();
        let mut cached = Shared::default();
        let mut baseline = Shared::default();
        for _ in 0..settings.rounds {
            let (rate, _) = cell(&client_rt, addrs.local, addrs.local, conns, &settings);
            local.push(rate);
            cached.measure(
                &client_rt,
                &mut probe,
                addrs.holder,
                addrs.peer,
                conns,
                &settings,
            );
            baseline.measure(
                &client_rt,
                &mut probe,
                addrs.holder0,
                addrs.peer0,
                conns,
                &settings,
            );
        }
        let local = median(&mut local);
        let (rate, scripts, commands) = cached.medians();
        let (rate0, scripts0, commands0) = baseline.medians();
        println!(
            "{conns:>5}  {local:>11.0}  {rate:>11.0}  {:>5.2}  {scripts:>11.3}  {commands:>8.3}  \
             {rate0:>12.0}  {:>6.2}  {scripts0:>12.3}  {commands0:>9.3}",
            rate / local.max(1.0),
            rate0 / local.max(1.0),
        );
    }
    // Leave nothing behind in Redis.
    client_rt.block_on(async {
        for prefix in [prefix, prefix0] {
            let keys: Vec<String> = redis::cmd("KEYS")
                .arg(format!("sluice:{prefix}:*"))
                .query_async(&mut probe)
                .await
                .unwrap_or_default();
            if !keys.is_empty() {
                let _: Result<i64, _> = redis::cmd("DEL").arg(&keys).query_async(&mut probe).await;
            }
        }
    });
}

/// One Redis workload's figures per round: requests per second, `EVALSHA` calls per request,
/// all commands per request.
#[derive(Default)]
struct Shared {
    rates: Vec<f64>,
    scripts: Vec<f64>,
    commands: Vec<f64>,
}

impl Shared {
    fn measure(
        &mut self,
        client_rt: &Runtime,
        probe: &mut redis::aio::MultiplexedConnection,
        open_on: SocketAddr,
        call_on: SocketAddr,
        conns: usize,
        settings: &Settings,
    ) {
        let before = client_rt.block_on(commands_processed(probe));
        let (rate, requests) = cell(client_rt, open_on, call_on, conns, settings);
        let after = client_rt.block_on(commands_processed(probe));
        self.rates.push(rate);
        // Includes each connection's initialize and initialized (one script each).
        let requests = requests.max(1) as f64;
        self.scripts
            .push(after.0.saturating_sub(before.0) as f64 / requests);
        // Minus the INFO itself.
        let commands = after.1.saturating_sub(before.1).saturating_sub(1) as f64;
        self.commands.push(commands / requests);
    }

    fn medians(&mut self) -> (f64, f64, f64) {
        (
            median(&mut self.rates),
            median(&mut self.scripts),
            median(&mut self.commands),
        )
    }
}
