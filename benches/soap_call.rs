//! soap_call: a SOAP `tools/call` against a REST `tools/call` returning the same data, end to end
//! over loopback sockets, same run.
//!
//! Both tools list ten customer records (~2 KB on the wire; the REST API answers them as JSON,
//! the SOAP stub as a SOAP 1.1 envelope with an attribute, a number and a boolean per record)
//! and map them to the same exposed result with the same eight output rules. What differs is
//! only the downstream codec: the JSON body and its translation vs the envelope written from
//! the arguments and the answer read by `invoke::soap`. Reported: the server's CPU time per call
//! (from `/proc/self/task/*/schedstat`, steadier than req/s on a shared machine) and req/s, as
//! medians over rounds, and the SOAP/REST ratio. Target (issue 18): SOAP ≤ 1.3× REST.
//!
//! Shape: sluice in a one-worker runtime pinned to core 0; the stub API and the client (hyper
//! HTTP/1.1 keep-alive connections issuing stateless-era `tools/call` back to back, every answer
//! checked) in one-worker runtimes on core 1. Modes: `cargo bench --bench soap_call` (`--bench`):
//! `SOAP_ROUNDS` rounds (default 5) of `SOAP_MS` ms (default 1500) per tool, with
//! `SOAP_CONNS` connections (default 4); without `--bench` (`cargo test --all-targets`) a smoke
//! run of a few calls per tool, still checking every answer.

mod common;

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::CpuSample;
use http::header::{ACCEPT, CONTENT_TYPE, HOST};
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use sluice::catalog::Catalog;
use tokio::net::TcpListener;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const SERVER_THREAD: &str = "soap-server";
const PEER_THREAD: &str = "soap-peer";
const META: &str = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"soap-bench","version":"1"}}"#;

/// The records both downstreams answer.
const N_RECORDS: usize = 10;

fn json_answer() -> String {
    let records: Vec<String> = (1..=N_RECORDS)
        .map(|i| {
            format!(
                r#"{{"id":{i},"name":"Customer {i} & Sons","email":"customer{i}@example.com","phone":"+351 21 000 00{i:02}","city":"Lisbon","segment":"retail","balance":{i}23.45,"active":{}}}"#,
                i % 2 == 0
            )
        })
        .collect();
    format!(r#"{{"records":[{}]}}"#, records.join(","))
}

/// (REST source, SOAP source, exposed, type) of the eight fields.
const FIELDS: &[(&str, &str, &str, &str)] = &[
    (
        "records[*].id",
        "ListCustomersResult/Customer[*]/@id",
        "customers[*].id",
        "integer",
    ),
    (
        "records[*].name",
        "ListCustomersResult/Customer[*]/Name",
        "customers[*].name",
        "string",
    ),
    (
        "records[*].email",
        "ListCustomersResult/Customer[*]/Email",
        "customers[*].email",
        "string",
    ),
    (
        "records[*].phone",
        "ListCustomersResult/Customer[*]/Phone",
        "customers[*].phone",
        "string",
    ),
    (
        "records[*].city",
        "ListCustomersResult/Customer[*]/City",
        "customers[*].city",
        "string",
    ),
    (
        "records[*].segment",
        "ListCustomersResult/Customer[*]/Segment",
        "customers[*].segment",
        "string",
    ),
    (
        "records[*].balance",
        "ListCustomersResult/Customer[*]/Balance",
        "customers[*].balance",
        "number",
    ),
    (
        "records[*].active",
        "ListCustomersResult/Customer[*]/Active",
        "customers[*].active",
        "boolean",
    ),
];

fn config_text(stub: std::net::SocketAddr) -> String {
    let mut text = format!(
        r#"
[[tenant]]
id = "bench"
auth = {{ anonymous = true }}
[[tenant.client]]
id = "app"
[[tenant.toolset]]
id = "crm"
[[tenant.toolset.tool]]
name = "list_rest"
downstream = {{ kind = "rest", method = "POST", url = "http://{stub}/rest" }}
[[tenant.toolset.tool.input]]
source = "segment"
exposed = "segment"
"#
    );
    for (rest, _, exposed, ty) in FIELDS {
        text.push_str(&format!(
            "[[tenant.toolset.tool.output]]\nsource = \"{rest}\"\nexposed = \"{exposed}\"\ntype = \"{ty}\"\n"
        ));
    }
    text.push_str(&format!(
        r#"
[[tenant.toolset.tool]]
name = "list_soap"
[tenant.toolset.tool.downstream]
kind = "soap"
url = "http://{stub}/soap"
action = "urn:crm#ListCustomers"
operation = "{{urn:crm}}ListCustomers"
[[tenant.toolset.tool.input]]
source = "Segment"
exposed = "segment"
"#
    ));
    for (_, soap, exposed, ty) in FIELDS {
        text.push_str(&format!(
            "[[tenant.toolset.tool.output]]\nsource = \"{soap}\"\nexposed = \"{exposed}\"\ntype = \"{ty}\"\n"
        ));
    }
    text.push_str("[[tenant.assignment]]\nclient = \"app\"\ntoolset = \"crm\"\n");
    text
}

async fn stub(listener: TcpListener) {
    let json = Bytes::from(json_answer());
    let soap = Bytes::from(common::soap::answer(N_RECORDS));
    let service = hyper::service::service_fn(move |req: Request<Incoming>| {
        let (json, soap) = (json.clone(), soap.clone());
        async move {
            let path = req.uri().path().to_owned();
            // Read the request to its end, as a real API does.
            let _ = req.into_body().collect().await;
            let (body, content_type) = if path == "/soap" {
                (soap, "text/xml; charset=utf-8")
            } else {
                (json, "application/json")
            };
            let mut response = Response::new(Full::new(body));
            response
                .headers_mut()
                .insert(CONTENT_TYPE, content_type.parse().expect("content type"));
            Ok::<_, Infallible>(response)
        }
    });
    common::serve_http1(listener, std::future::pending::<()>(), service).await;
}

/// One tools/call of `tool` on `sender`, checked.
async fn call(
    sender: &mut hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    tool: &str,
    id: u64,
) -> Result<(), String> {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{{"segment":"retail"}},"_meta":{META}}}}}"#
    );
    let request = Request::post("/runtime/bench/app/mcp")
        .header(HOST, "127.0.0.1")
        .header(CONTENT_TYPE, "application/json")
        .header(ACCEPT, "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", tool)
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| e.to_string())?;
    sender.ready().await.map_err(|e| e.to_string())?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| e.to_string())?;
    if response.status() != StatusCode::OK {
        return Err(format!("status {}", response.status()));
    }
    let bytes = response
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    let ok = memchr::memmem::find(&bytes, b"\"isError\":false").is_some()
        && memchr::memmem::find(&bytes, b"\"customer10@example.com\"").is_some();
    if !ok {
        return Err(format!("bad answer: {}", String::from_utf8_lossy(&bytes)));
    }
    Ok(())
}

/// `conns` connections calling `tool` for `window`: calls made and server CPU ns.
async fn window(
    addr: std::net::SocketAddr,
    tool: &'static str,
    conns: usize,
    window: Duration,
    max_calls: Option<u64>,
) -> (u64, u64, f64) {
    let mut tasks = Vec::new();
    let before = CpuSample::take(&[SERVER_THREAD], &[PEER_THREAD]);
    let deadline = Instant::now() + window;
    for c in 0..conns {
        tasks.push(tokio::spawn(async move {
            let mut sender = common::connect(addr).await.expect("connect");
            let mut n = 0u64;
            while Instant::now() < deadline && max_calls.is_none_or(|m| n < m) {
                call(&mut sender, tool, c as u64 * 1_000_000 + n)
                    .await
                    .unwrap_or_else(|e| panic!("{tool}: {e}"));
                n += 1;
            }
            n
        }));
    }
    let mut calls = 0;
    for task in tasks {
        calls += task.await.expect("client task");
    }
    let after = CpuSample::take(&[SERVER_THREAD], &[PEER_THREAD]);
    (calls, before.server_ns(&after), before.secs(&after))
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

    let text = config_text(stub_addr);
    let config = sluice::config::parse(&text, "soap_call").expect("config parses");
    let catalog = Arc::new(Catalog::from_config(&config).expect("config is valid"));
    let serve_config = sluice::ServeConfig::from_catalog(catalog);
    let listener = server_rt
        .block_on(TcpListener::bind("127.0.0.1:0"))
        .expect("bind sluice");
    let addr = listener.local_addr().expect("sluice addr");
    server_rt.spawn(async move {
        sluice::serve(listener, serve_config, std::future::pending::<()>())
            .await
            .expect("sluice serves");
    });

    let (rounds, ms, conns) = if full {
        (
            env("SOAP_ROUNDS", 5),
            env("SOAP_MS", 1500),
            env("SOAP_CONNS", 4),
        )
    } else {
        (1, 2_000, 2)
    };
    let limit = (!full).then_some(20);
    let mut cpu = [Vec::new(), Vec::new()];
    let mut rps = [Vec::new(), Vec::new()];
    let tools = ["list_rest", "list_soap"];
    peer_rt.block_on(async {
        for round in 0..rounds {
            for (i, tool) in tools.iter().enumerate() {
                // Warm-up (pools, caches), then the counted window.
                let _ = window(addr, tool, conns as usize, Duration::from_millis(200), limit).await;
                let (calls, ns, secs) =
                    window(addr, tool, conns as usize, Duration::from_millis(ms), limit).await;
                assert!(calls > 0, "{tool}: no call completed");
                cpu[i].push(ns as f64 / 1e3 / calls as f64);
                rps[i].push(calls as f64 / secs);
                if full {
                    println!(
                        "round {round} {tool}: {calls} calls, {:.1} µs server CPU/call, {:.0} req/s",
                        ns as f64 / 1e3 / calls as f64,
                        calls as f64 / secs
                    );
                }
            }
        }
    });
    let (rest_cpu, soap_cpu) = (
        common::median(cpu[0].clone()),
        common::median(cpu[1].clone()),
    );
    println!(
        "soap_call ({conns} connections, median of {rounds} rounds): REST {rest_cpu:.1} µs CPU/call \
         {:.0} req/s; SOAP {soap_cpu:.1} µs CPU/call {:.0} req/s; SOAP/REST CPU {:.2}× (target ≤ 1.3×)",
        common::median(rps[0].clone()),
        common::median(rps[1].clone()),
        soap_cpu / rest_cpu.max(1e-9)
    );
}
