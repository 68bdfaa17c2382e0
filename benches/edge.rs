//! edge: what the edge operations of issue 19 cost the server, end to end over loopback, in one
//! run: `ping` over TLS 1.3 against plain HTTP (16 keep-alive connections), full TLS handshakes
//! per second, and `tools/call` with a rate limit rule on and with telemetry at sampling 0.0
//! and 1.0 (spans exported to a stub OTLP receiver), each against the same call without.
//!
//! Reported: the server's CPU time per request (from `/proc/self/task/*/schedstat`, steadier
//! than req/s on a shared machine) and req/s, as medians over rounds, and the ratios to the
//! plain cell. Targets (issue 19): TLS ping ≤ 1.3× plain; rate limiting ≤ 1.03×; telemetry at
//! 1.0 ≤ 1.10×, at 0.0 no measurable difference.
//!
//! Shape: five sluice servers (plain, TLS, rate limited, telemetry 0.0, telemetry 1.0) in one
//! one-worker runtime pinned to core 0 (built first: its worker is thread 2 for callgrind); the
//! stub API, the stub OTLP receiver and the clients in one-worker runtimes on core 1. Modes:
//! `cargo bench --bench edge` (`--bench`): `EDGE_ROUNDS` rounds (default 5) of `EDGE_MS` ms
//! (default 1500) per cell; `EDGE_REQUESTS=N EDGE_CELLS=call,tel0` runs exactly N requests of
//! the named cells on one connection (for `valgrind --tool=callgrind`); without `--bench` (`cargo
//! test --all-targets`) a smoke run of a few requests per cell, every answer checked.

mod common;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::CpuSample;
use http::header::{ACCEPT, CONTENT_TYPE, HOST};
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use rustls::pki_types::{CertificateDer, ServerName};
use sluice::catalog::Catalog;
use tokio::net::{TcpListener, TcpStream};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const SERVER_THREAD: &str = "edge-server";
const PEER_THREAD: &str = "edge-peer";
const META: &str = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"edge-bench","version":"1"}}"#;

/// The configuration of one server: `extra` goes into `[server]`, `rules` into the tenant.
fn config_text(stub: SocketAddr, extra: &str, rules: &str) -> String {
    format!(
        r#"
[server]
post_framing = "json"
sessions_enabled = false
{extra}

[[tenant]]
id = "bench"
auth = {{ anonymous = true }}
{rules}

[[tenant.client]]
id = "app"

[[tenant.toolset]]
id = "t"

[[tenant.toolset.tool]]
name = "echo"
description = "Echo a greeting."
downstream = {{ kind = "rest", method = "GET", url = "http://{stub}/echo" }}

[[tenant.toolset.tool.output]]
source = "message"
exposed = "message"

[[tenant.assignment]]
client = "app"
toolset = "t"
"#
    )
}

/// The stub API (`{"message":"hello"}`) and OTLP receiver (any POST: 200, empty protobuf).
async fn stub(listener: TcpListener) {
    let service = hyper::service::service_fn(move |req: Request<Incoming>| async move {
        let otlp = req.method() == http::Method::POST;
        let _ = req.into_body().collect().await;
        let (body, content_type) = if otlp {
            (Bytes::new(), "application/x-protobuf")
        } else {
            (
                Bytes::from_static(br#"{"message":"hello"}"#),
                "application/json",
            )
        };
        let mut response = Response::new(Full::new(body));
        response
            .headers_mut()
            .insert(CONTENT_TYPE, content_type.parse().expect("content type"));
        Ok::<_, Infallible>(response)
    });
    common::serve_http1(listener, std::future::pending::<()>(), service).await;
}

// === the TLS client ===

struct Pki {
    ca: CertificateDer<'static>,
    cert_pem: String,
    key_pem: String,
}

fn pki() -> Pki {
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("ca params");
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca_key = rcgen::KeyPair::generate().expect("ca key");
    let ca = ca_params.clone().self_signed(&ca_key).expect("ca");
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let params = rcgen::CertificateParams::new(vec!["localhost".to_owned()]).expect("params");
    let key = rcgen::KeyPair::generate().expect("key");
    let cert = params.signed_by(&key, &issuer).expect("cert");
    Pki {
        ca: ca.der().clone(),
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    }
}

fn tls_connector(ca: &CertificateDer<'static>, resume: bool) -> tokio_rustls::TlsConnector {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.clone()).expect("root");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .expect("TLS 1.3")
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    if !resume {
        config.resumption = rustls::client::Resumption::disabled();
    }
    tokio_rustls::TlsConnector::from(Arc::new(config))
}

type Sender = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

async fn connect(addr: SocketAddr, tls: Option<&tokio_rustls::TlsConnector>) -> Sender {
    let Some(tls) = tls else {
        return common::connect(addr).await.expect("connect");
    };
    let tcp = TcpStream::connect(addr).await.expect("connect");
    tcp.set_nodelay(true).expect("nodelay");
    let name = ServerName::try_from("localhost").expect("name");
    let stream = tls.connect(name, tcp).await.expect("TLS handshake");
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .expect("http handshake");
    tokio::spawn(conn);
    sender
}

// === the cells ===

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Ping,
    Call,
}

/// One request, its answer checked.
async fn request(sender: &mut Sender, kind: Kind, id: u64) {
    let (body, headers): (String, &[(&str, &str)]) = match kind {
        Kind::Ping => (
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#),
            &[("mcp-protocol-version", "2025-11-25")],
        ),
        Kind::Call => (
            format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{}},"_meta":{META}}}}}"#
            ),
            &[
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/call"),
                ("mcp-name", "echo"),
            ],
        ),
    };
    let mut builder = Request::post("/runtime/bench/app/mcp")
        .header(HOST, "localhost")
        .header(CONTENT_TYPE, "application/json")
        .header(ACCEPT, "application/json, text/event-stream");
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    let request = builder.body(Full::new(Bytes::from(body))).expect("request");
    sender.ready().await.expect("ready");
    let response = sender.send_request(request).await.expect("answer");
    assert_eq!(response.status(), StatusCode::OK);
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    let want: &[u8] = match kind {
        Kind::Ping => b"\"result\":{}",
        Kind::Call => b"\"isError\":false",
    };
    assert!(
        memchr::memmem::find(&bytes, want).is_some(),
        "{}",
        String::from_utf8_lossy(&bytes)
    );
}

/// A cell: which server, which request, over TLS or not.
struct Cell {
    name: &'static str,
    addr: SocketAddr,
    kind: Kind,
    tls: Option<tokio_rustls::TlsConnector>,
}

/// `conns` keep-alive connections issuing `cell`'s request for `window` (or `max` each):
/// requests made, server CPU ns, seconds.
async fn window(cell: &Cell, conns: usize, window: Duration, max: Option<u64>) -> (u64, u64, f64) {
    let mut senders = Vec::new();
    for _ in 0..conns {
        senders.push(connect(cell.addr, cell.tls.as_ref()).await);
    }
    let before = CpuSample::take(&[SERVER_THREAD], &[PEER_THREAD]);
    let deadline = Instant::now() + window;
    let kind = cell.kind;
    let tasks: Vec<_> = senders
        .into_iter()
        .enumerate()
        .map(|(c, mut sender)| {
            tokio::spawn(async move {
                let mut n = 0u64;
                while Instant::now() < deadline && max.is_none_or(|m| n < m) {
                    request(&mut sender, kind, c as u64 * 1_000_000 + n).await;
                    n += 1;
                }
                n
            })
        })
        .collect();
    let mut total = 0;
    for task in tasks {
        total += task.await.expect("client");
    }
    let after = CpuSample::take(&[SERVER_THREAD], &[PEER_THREAD]);
    (total, before.server_ns(&after), before.secs(&after))
}

/// Fresh TLS connections (no resumption), one ping each, `conns` at a time, for `window`:
/// handshakes, server CPU ns, seconds.
async fn handshakes(
    addr: SocketAddr,
    ca: &CertificateDer<'static>,
    conns: usize,
    window: Duration,
) -> (u64, u64, f64) {
    let tls = tls_connector(ca, false);
    let before = CpuSample::take(&[SERVER_THREAD], &[PEER_THREAD]);
    let deadline = Instant::now() + window;
    let tasks: Vec<_> = (0..conns)
        .map(|_| {
            let tls = tls.clone();
            tokio::spawn(async move {
                let mut n = 0u64;
                while Instant::now() < deadline {
                    let mut sender = connect(addr, Some(&tls)).await;
                    request(&mut sender, Kind::Ping, n).await;
                    n += 1;
                }
                n
            })
        })
        .collect();
    let mut total = 0;
    for task in tasks {
        total += task.await.expect("client");
    }
    let after = CpuSample::take(&[SERVER_THREAD], &[PEER_THREAD]);
    (total, before.server_ns(&after), before.secs(&after))
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let env = |name: &str, default: u64| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let (server_core, peer_core) = common::server_and_client_cores();
    let server_rt = common::runtime(SERVER_THREAD, server_core);
    let peer_rt = common::runtime(PEER_THREAD, peer_core);

    let stub_listener = peer_rt
        .block_on(TcpListener::bind("127.0.0.1:0"))
        .expect("bind stub");
    let stub_addr = stub_listener.local_addr().expect("stub addr");
    peer_rt.spawn(stub(stub_listener));

    let pki = pki();
    let dir = std::env::temp_dir().join(format!("sluice-edge-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let (cert, key) = (dir.join("server.crt"), dir.join("server.key"));
    std::fs::write(&cert, &pki.cert_pem).expect("cert");
    std::fs::write(&key, &pki.key_pem).expect("key");
    let otlp = format!("http://{stub_addr}/v1/traces");
    let servers = [
        ("plain", String::new(), String::new()),
        (
            "tls",
            format!("[server.tls]\ncert = {:?}\nkey = {:?}\n", cert.display().to_string(), key.display().to_string()),
            String::new(),
        ),
        (
            "ratelimit",
            String::new(),
            "[[tenant.rate_limit]]\nid = \"echo\"\ntool = \"echo\"\nper = [\"caller\"]\nrate = \"1000000/s\"\n".to_owned(),
        ),
        ("tel0", String::new(), String::new()),
        ("tel1", String::new(), String::new()),
    ];
    let mut addrs = std::collections::HashMap::new();
    for (name, extra, rules) in servers {
        let text = config_text(stub_addr, &extra, &rules);
        let config = sluice::config::parse(&text, name).expect("config parses");
        let catalog = Arc::new(Catalog::from_config(&config).expect("config is valid"));
        let mut serve_config = sluice::ServeConfig::from_catalog(catalog);
        if let Some(ratio) = match name {
            "tel0" => Some(0.0),
            "tel1" => Some(1.0),
            _ => None,
        } {
            serve_config.telemetry = sluice::config::TelemetrySettings {
                enabled: true,
                endpoint: otlp.clone(),
                sampling_ratio: ratio,
                ..Default::default()
            };
        }
        let listener = server_rt
            .block_on(TcpListener::bind("127.0.0.1:0"))
            .expect("bind sluice");
        addrs.insert(name, listener.local_addr().expect("addr"));
        server_rt.spawn(async move {
            sluice::serve(listener, serve_config, std::future::pending::<()>())
                .await
                .expect("sluice serves");
        });
    }
    let tls = || Some(tls_connector(&pki.ca, true));
    let cells = [
        Cell {
            name: "ping",
            addr: addrs["plain"],
            kind: Kind::Ping,
            tls: None,
        },
        Cell {
            name: "ping_tls",
            addr: addrs["tls"],
            kind: Kind::Ping,
            tls: tls(),
        },
        Cell {
            name: "call",
            addr: addrs["plain"],
            kind: Kind::Call,
            tls: None,
        },
        Cell {
            name: "call_ratelimit",
            addr: addrs["ratelimit"],
            kind: Kind::Call,
            tls: None,
        },
        Cell {
            name: "call_tel0",
            addr: addrs["tel0"],
            kind: Kind::Call,
            tls: None,
        },
        Cell {
            name: "call_tel1",
            addr: addrs["tel1"],
            kind: Kind::Call,
            tls: None,
        },
    ];

    // Callgrind mode: exactly N requests of the named cells on one connection.
    if let Ok(n) = std::env::var("EDGE_REQUESTS").map(|v| v.parse::<u64>().unwrap_or(100)) {
        let wanted = std::env::var("EDGE_CELLS").unwrap_or_default();
        peer_rt.block_on(async {
            for cell in cells
                .iter()
                .filter(|c| wanted.split(',').any(|w| w == c.name))
            {
                let (done, _, _) = window(cell, 1, Duration::from_secs(3600), Some(n)).await;
                println!("{}: {done} requests", cell.name);
            }
        });
        finish();
    }

    let (rounds, ms) = if full {
        (env("EDGE_ROUNDS", 5), env("EDGE_MS", 1500))
    } else {
        (1, 2_000)
    };
    let limit = (!full).then_some(10);
    let conns_for = |cell: &Cell| if cell.kind == Kind::Ping { 16 } else { 4 };
    let mut cpu: Vec<Vec<f64>> = vec![Vec::new(); cells.len()];
    let mut rps: Vec<Vec<f64>> = vec![Vec::new(); cells.len()];
    let mut hs_rate = Vec::new();
    let mut hs_cpu = Vec::new();
    peer_rt.block_on(async {
        for round in 0..rounds {
            for (i, cell) in cells.iter().enumerate() {
                let conns = conns_for(cell);
                let _ = window(cell, conns, Duration::from_millis(200), limit).await;
                let (n, ns, secs) = window(cell, conns, Duration::from_millis(ms), limit).await;
                assert!(n > 0, "{}: nothing answered", cell.name);
                cpu[i].push(ns as f64 / 1e3 / n as f64);
                rps[i].push(n as f64 / secs);
                if full {
                    println!(
                        "round {round} {}: {n} requests, {:.1} µs server CPU/request, {:.0} req/s",
                        cell.name,
                        ns as f64 / 1e3 / n as f64,
                        n as f64 / secs
                    );
                }
            }
            let hs_window = Duration::from_millis(if full { ms } else { 300 });
            let (n, ns, secs) = handshakes(addrs["tls"], &pki.ca, 4, hs_window).await;
            assert!(n > 0, "no handshake completed");
            hs_rate.push(n as f64 / secs);
            hs_cpu.push(ns as f64 / 1e3 / n as f64);
        }
    });
    let m = |i: usize| common::median(cpu[i].clone());
    let r = |i: usize| common::median(rps[i].clone());
    println!("edge (median of {rounds} rounds; ping over 16 connections, tools/call over 4):");
    for (i, cell) in cells.iter().enumerate() {
        println!(
            "  {:<15} {:>7.1} µs server CPU/request  {:>8.0} req/s",
            cell.name,
            m(i),
            r(i)
        );
    }
    println!(
        "  TLS 1.3 full handshakes (4 at a time, no resumption): {:.0}/s, {:.0} µs server CPU each",
        common::median(hs_rate),
        common::median(hs_cpu)
    );
    println!(
        "  ratios (server CPU): ping TLS/plain {:.2}× (≤ 1.3×); rate limit {:.3}× (≤ 1.03×); \
         telemetry 0.0 {:.3}× (≈ 1); telemetry 1.0 {:.3}× (≤ 1.10×)",
        m(1) / m(0).max(1e-9),
        m(3) / m(2).max(1e-9),
        m(4) / m(2).max(1e-9),
        m(5) / m(2).max(1e-9)
    );
    let _ = std::fs::remove_dir_all(&dir);
    finish();
}

/// Ends the process without tearing the server runtime down: the servers never drained, and the
/// telemetry provider's drop would wait for its exporter task on a runtime that is going away.
fn finish() -> ! {
    use std::io::Write as _;
    let _ = std::io::stdout().flush();
    std::process::exit(0)
}
