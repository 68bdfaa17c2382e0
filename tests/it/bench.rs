//! Integration tests: `sluice bench` as a library call and as the real binary, against sluice
//! serving the demo on 127.0.0.1:0 (and a silent socket for timeouts): exact request counts,
//! answers checked in both eras over HTTP/1.1 and h2, JSON and SSE, events per answer, errors
//! by kind, the JSON results file, and `bench idle` holding sessions and streams.

use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use sluice::bench::{self, Flags, Report};

use crate::support::{demo, request, send, signal, TestServer};
use http::Method;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::TcpListener;

/// The demo tenant's MCP endpoint.
const MCP_PATH: &str = "/runtime/demo/agent/mcp";
/// `_meta` opting a request into `bos/source-results/v1`.
const SOURCE_RESULTS_META: &str = r#"{"io.modelcontextprotocol/clientCapabilities":{"experimental":{"bos/source-results/v1":{}}}}"#;

// === support ===

/// The demo's MCP endpoint URL.
fn url(demo: &TestServer) -> String {
    demo.url(MCP_PATH)
}

/// A gauge of `/metrics` for the demo tenant.
async fn gauge(demo: &TestServer, name: &str) -> f64 {
    let mut req = request(demo.addr, Method::GET, "/metrics", &[], "");
    req.headers_mut().insert(
        http::header::HOST,
        http::HeaderValue::from_static("127.0.0.1"),
    );
    let text = send(demo.addr, req).await.text();
    let prefix = format!("{name}{{tenant=\"demo\"}} ");
    text.lines()
        .find_map(|line| line.strip_prefix(&prefix))
        .map_or(0.0, |v| v.trim().parse().unwrap())
}

fn flags(url: &str, requests: u64) -> Flags {
    Flags {
        url: url.to_owned(),
        requests: Some(requests),
        clients: Some(4),
        connections: Some(2),
        quiet: true,
        timeout: Some("10s".into()),
        ..Flags::default()
    }
}

async fn run(flags: Flags) -> Report {
    let settings = bench::Settings::from_flags(flags).unwrap();
    tokio::time::timeout(Duration::from_secs(60), bench::run(settings))
        .await
        .expect("the bench never hangs")
        .unwrap()
}

fn sluice_bin() -> tokio::process::Command {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_sluice"));
    command.env("RUST_LOG", "error").kill_on_drop(true);
    command
}

// === load runs ===

/// Every method in both eras over both HTTP versions, answered as SSE and as JSON: the exact
/// request count, every answer OK, answers framed as asked, and events per SSE answer (a
/// session's SSE answer opens with a priming event).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_era_method_protocol_and_framing_counts_exactly() {
    let demo = demo().await;
    const N: u64 = 30;
    for era in ["handshake", "stateless"] {
        for h2 in [false, true] {
            for method in ["ping", "tools/list", "tools/call"] {
                // 2026-07-28 removed `ping`.
                if era == "stateless" && method == "ping" {
                    continue;
                }
                for accept in ["sse", "json"] {
                    let mut f = flags(&url(&demo), N);
                    f.era = Some(era.into());
                    f.h2 = h2;
                    f.method = Some(method.into());
                    f.accept = Some(accept.into());
                    if method == "tools/call" {
                        f.tool = Some("get_customer".into());
                        f.args = Some(r#"{"id":"c-100"}"#.into());
                    }
                    let case = format!("{era} h2={h2} {method} accept={accept}");
                    let report = run(f).await;
                    assert_eq!(report.requests, N, "{case}");
                    assert_eq!(report.ok, N, "{case}: {:?}", report.errors);
                    assert!(report.errors.is_empty(), "{case}: {:?}", report.errors);
                    assert_eq!(report.protocol, if h2 { "h2" } else { "http1" }, "{case}");
                    assert!(report.bytes > 0, "{case}");
                    assert!(report.latency_us.p50 > 0.0, "{case}");
                    let per_answer = match (accept, era) {
                        ("json", _) => 0,
                        (_, "handshake") => 2,
                        _ => 1,
                    };
                    assert_eq!(report.events, N * per_answer, "{case}");
                    assert_eq!(report.answers[accept], N, "{case}: {:?}", report.answers);
                }
            }
        }
    }
}

/// More clients than connections: HTTP/1.1 clients queue on their connection, h2 clients
/// multiplex; either way the count is exact and every answer is checked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_share_connections() {
    let demo = demo().await;
    for h2 in [false, true] {
        let mut f = flags(&url(&demo), 101);
        f.clients = Some(8);
        f.connections = Some(1);
        f.h2 = h2;
        f.method = Some("tools/list".into());
        let report = run(f).await;
        assert_eq!((report.requests, report.ok), (101, 101), "h2={h2}");
        assert_eq!((report.clients, report.connections), (8, 1));
    }
}

/// A source-results stream sends a notification per source page before the final answer; each
/// is an event (the demo's merged result is partial, so the tool reports `isError`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn source_results_streams_count_every_event() {
    let demo = demo().await;
    for era in ["handshake", "stateless"] {
        let mut f = flags(&url(&demo), 6);
        f.era = Some(era.into());
        f.method = Some("tools/call".into());
        f.tool = Some("find_people".into());
        f.args = Some(r#"{"query":"a"}"#.into());
        f.accept = Some("sse".into());
        f.meta = Some(SOURCE_RESULTS_META.into());
        let report = run(f.clone()).await;
        assert_eq!(report.requests, 6, "{era}");
        assert_eq!(
            report.errors.get("tool"),
            Some(&6),
            "{era}: {:?}",
            report.errors
        );
        assert!(report.events >= 6 * 5, "{era}: {} events", report.events);
        // Without the opt-in the same call is one answer event (plus priming in a session).
        f.meta = None;
        let plain = run(f).await;
        assert!(plain.events <= 6 * 2, "{era}: {} events", plain.events);
    }
}

/// Errors are counted by kind and the run still ends with the exact count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_are_counted_by_kind() {
    let demo = demo().await;
    let wrong_path = format!("http://{}/runtime/demo/agent/nope", demo.addr);
    for era in ["handshake", "stateless"] {
        let mut f = flags(&wrong_path, 12);
        f.era = Some(era.into());
        let report = run(f).await;
        assert_eq!(report.requests, 12, "{era}");
        assert_eq!(report.ok, 0, "{era}");
        assert_eq!(
            report.errors.get("http:404"),
            Some(&12),
            "{era}: {:?}",
            report.errors
        );
    }

    let mut f = flags(&url(&demo), 10);
    f.method = Some("tools/call".into());
    f.tool = Some("no_such_tool".into());
    let report = run(f.clone()).await;
    assert_eq!(
        report.errors.get("jsonrpc:-32602"),
        Some(&10),
        "{:?}",
        report.errors
    );

    f.tool = Some("get_customer".into());
    f.args = Some(r#"{"id":"c-nobody"}"#.into());
    let report = run(f).await;
    assert_eq!(report.errors.get("tool"), Some(&10), "{:?}", report.errors);
}

/// A server that accepts and never answers: every request times out, and the run ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_server_times_out_and_nothing_listening_is_refused() {
    let silent = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = silent.local_addr().unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = silent.accept().await {
            held.push(stream);
        }
    });
    let mut f = flags(&format!("http://{addr}/mcp"), 4);
    f.era = Some("stateless".into());
    f.timeout = Some("200ms".into());
    let report = run(f).await;
    assert_eq!(report.requests, 4);
    assert_eq!(
        report.errors.get("timeout"),
        Some(&4),
        "{:?}",
        report.errors
    );

    let closed = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", closed.local_addr().unwrap());
    drop(closed);
    let settings = bench::Settings::from_flags(flags(&url, 1)).unwrap();
    let err = bench::run(settings).await.unwrap_err();
    assert!(err.to_string().contains("cannot connect"), "{err}");
}

// === the binary ===

/// The binary: summary on stdout, the JSON results file with every documented field, progress
/// lines on stderr unless `--quiet`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_writes_json_results_and_progress() {
    let demo = demo().await;
    let dir = std::env::temp_dir().join(format!("sluice-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("results.json");
    let out = sluice_bin()
        .args([
            "bench",
            "--url",
            &url(&demo),
            "--era",
            "stateless",
            "--method",
        ])
        .args([
            "tools/call",
            "--tool",
            "get_customer",
            "--args",
            r#"{"id":"c-100"}"#,
        ])
        .args([
            "--clients",
            "3",
            "--requests",
            "25",
            "--h2",
            "--accept",
            "sse",
            "--quiet",
        ])
        .arg("--json")
        .arg(&json)
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("latency µs"), "{stdout}");
    assert!(
        out.stderr.is_empty(),
        "--quiet: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(results["url"], url(&demo));
    assert_eq!(results["era"], "stateless");
    assert_eq!(results["method"], "tools/call");
    assert_eq!(results["tool"], "get_customer");
    assert_eq!(results["clients"], 3);
    assert_eq!(results["connections"], 3);
    assert_eq!(results["protocol"], "h2");
    assert_eq!(results["accept"], "sse");
    assert_eq!(results["requests"], 25);
    assert_eq!(results["ok"], 25);
    assert_eq!(results["errors"], serde_json::json!({}));
    assert_eq!(results["events"], 25);
    for key in [
        "duration_s",
        "requests_per_s",
        "events_per_s",
        "bytes",
        "bytes_per_s",
    ] {
        assert!(results[key].as_f64().unwrap() > 0.0, "{key}: {results}");
    }
    let latency = &results["latency_us"];
    let at = |k: &str| latency[k].as_f64().unwrap();
    assert!(at("p50") > 0.0, "{latency}");
    assert!(
        at("p50") <= at("p90") && at("p90") <= at("p99"),
        "{latency}"
    );
    assert!(
        at("p99") <= at("p999") && at("p999") <= at("max"),
        "{latency}"
    );
    assert!(at("mean") > 0.0, "{latency}");

    // A timed run without --quiet: one progress line per second on stderr (not a terminal,
    // so plain lines), and `--json -` puts only the JSON on stdout.
    let out = sluice_bin()
        .args([
            "bench",
            "--url",
            &url(&demo),
            "--clients",
            "2",
            "--duration",
            "2500ms",
        ])
        .args(["--warmup", "0s", "--json", "-"])
        .output()
        .await
        .unwrap();
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    let progress = stderr.lines().filter(|l| l.contains("req/s")).count();
    assert!(progress >= 2, "{stderr}");
    let results: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(results["method"], "ping");
    assert!(results["requests"].as_u64().unwrap() > 0);
    assert_eq!(results["requests"], results["ok"]);
    let duration = results["duration_s"].as_f64().unwrap();
    assert!((2.5..5.0).contains(&duration), "{duration}");

    // Bad flags fail with the flag named.
    let out = sluice_bin()
        .args(["bench", "--url", &url(&demo), "--method", "tools/call"])
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--tool"));
}

/// Ctrl-C ends a long run early and still reports what was counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigint_ends_a_run_early_with_its_report() {
    let demo = demo().await;
    let child = sluice_bin()
        .args([
            "bench",
            "--url",
            &url(&demo),
            "--clients",
            "2",
            "--duration",
            "120s",
        ])
        .args(["--warmup", "0s", "--quiet", "--json", "-"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    signal(child.id().unwrap(), "INT");
    let out = tokio::time::timeout(Duration::from_secs(20), child.wait_with_output())
        .await
        .expect("exits soon after SIGINT")
        .unwrap();
    assert!(out.status.success(), "{}", out.status);
    let results: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(results["ok"].as_u64().unwrap() > 0, "{results}");
    assert!(results["duration_s"].as_f64().unwrap() < 60.0, "{results}");
}

/// `bench idle` opens the sessions and streams, says `ready` once they are all open (the server
/// counts them), holds them, and on SIGTERM deletes the sessions and exits 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_holds_sessions_and_streams_until_sigterm() {
    let demo = demo().await;
    let mut child = sluice_bin()
        .args([
            "bench",
            "idle",
            "--url",
            &url(&demo),
            "--sessions",
            "50",
            "--streams",
        ])
        .args(["--connections", "8", "--hold", "60s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let ready = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("ready in time")
        .unwrap();
    assert_eq!(ready.as_deref(), Some("ready sessions=50 streams=50"));
    assert_eq!(gauge(&demo, "sluice_active_sessions").await, 50.0);
    assert_eq!(gauge(&demo, "sluice_active_streams").await, 50.0);

    signal(child.id().unwrap(), "TERM");
    let status = tokio::time::timeout(Duration::from_secs(20), child.wait())
        .await
        .expect("exits after SIGTERM")
        .unwrap();
    assert!(status.success(), "{status}");
    assert_eq!(
        lines.next_line().await.unwrap(),
        None,
        "exactly one stdout line"
    );
    assert_eq!(
        gauge(&demo, "sluice_active_sessions").await,
        0.0,
        "sessions deleted"
    );
    let mut streams = gauge(&demo, "sluice_active_streams").await;
    for _ in 0..50 {
        if streams == 0.0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        streams = gauge(&demo, "sluice_active_streams").await;
    }
    assert_eq!(streams, 0.0, "streams closed");
}

/// `bench idle` fails clearly when sessions cannot be opened.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_fails_clearly_when_sessions_cannot_open() {
    let demo = demo().await;
    let url = format!("http://{}/runtime/demo/agent/nope", demo.addr);
    let out = sluice_bin()
        .args([
            "bench",
            "idle",
            "--url",
            &url,
            "--sessions",
            "3",
            "--hold",
            "1s",
        ])
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty(), "no ready line");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("opened 0 of 3 sessions"), "{stderr}");
    assert!(stderr.contains("http:404"), "{stderr}");
}
