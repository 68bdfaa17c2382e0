//! Integration tests: what `[telemetry]` and the MCP histograms do inside one process — the
//! `mcp.server.*.duration` histograms in `/metrics` (sessions in the process and in Redis), a
//! downstream receiving the `traceparent` of the request's trace, nothing injected while
//! telemetry is off, and a collector that is down never failing a request. The spans themselves are checked against a real OTLP receiver
//! by `tests/interop/test_otlp.py`.

use std::net::SocketAddr;

use http::Method;
use serde_json::json;
use sluice::config::TelemetrySettings;

use crate::support::{self, Answer, Downstream, TestServer};

fn config(api: SocketAddr) -> String {
    format!(
        r#"
[server]
post_framing = "json"

[[tenant]]
id = "acme"
auth = {{ anonymous = true }}

[[tenant.client]]
id = "app"

[[tenant.toolset]]
id = "t"
{echo}
[[tenant.assignment]]
client = "app"
toolset = "t"
"#,
        echo = support::echo_tool(api)
    )
}

async fn scrape(addr: SocketAddr) -> String {
    support::send(
        addr,
        support::request(addr, Method::GET, "/metrics", &[], ""),
    )
    .await
    .text()
    .to_owned()
}

async fn call(addr: SocketAddr, session: &str, traceparent: Option<&str>) -> support::Reply {
    let mut headers = vec![
        ("mcp-session-id", session),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    if let Some(tp) = traceparent {
        headers.push(("traceparent", tp));
    }
    support::post(
        addr,
        support::MCP,
        &headers,
        &support::call_body(1, "echo", json!({})),
    )
    .await
}

#[tokio::test]
async fn operation_and_session_durations_are_prometheus_histograms() {
    let api = Downstream::new()
        .fallback(Answer::Json(r#"{"message":"hello"}"#))
        .start()
        .await;
    let server = TestServer::toml(&config(api.addr)).start().await;
    three_calls_and_a_delete_are_counted(server.addr).await;
}

#[tokio::test]
async fn a_session_deleted_through_a_redis_backed_instance_is_counted() {
    let Some((url, prefix)) = crate::cluster::redis_or_skip("telemetry_redis_sessions").await
    else {
        return;
    };
    let api = Downstream::new()
        .fallback(Answer::Json(r#"{"message":"hello"}"#))
        .start()
        .await;
    let redis = sluice::session::RedisConfig::new(url.clone()).with_prefix(prefix.clone());
    let server = TestServer::toml(&config(api.addr))
        .with(move |config| config.cluster = Some(redis))
        .start()
        .await;
    three_calls_and_a_delete_are_counted(server.addr).await;
    drop(server);
    crate::cluster::cleanup(&url, &prefix).await;
}

/// Opens a session on `addr`, makes three calls, deletes it, and reads both histograms.
async fn three_calls_and_a_delete_are_counted(addr: SocketAddr) {
    let session = support::session(addr, support::MCP, "2025-11-25").await;
    for _ in 0..3 {
        assert_eq!(call(addr, &session, None).await.status, 200);
    }
    let deleted = support::send(
        addr,
        support::request(
            addr,
            Method::DELETE,
            support::MCP,
            &[
                ("mcp-session-id", &session),
                ("mcp-protocol-version", "2025-11-25"),
            ],
            "",
        ),
    )
    .await;
    assert!(deleted.status.is_success(), "{}", deleted.status);
    let text = scrape(addr).await;
    let metrics = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_owned())))
        .expect("the exposition parses");
    let count = |name: &str, method: Option<&str>| -> f64 {
        metrics
            .samples
            .iter()
            .find(|s| {
                s.metric == name
                    && method.is_none_or(|m| s.labels.get("mcp_method_name") == Some(m))
            })
            .and_then(|s| match &s.value {
                prometheus_parse::Value::Histogram(buckets) => buckets.last().map(|b| b.count),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no {name} {method:?}:\n{text}"))
    };
    assert_eq!(
        count("mcp_server_operation_duration_seconds", Some("tools/call")),
        3.0
    );
    assert_eq!(
        count("mcp_server_operation_duration_seconds", Some("initialize")),
        1.0
    );
    assert_eq!(count("mcp_server_session_duration_seconds", None), 1.0);
    assert!(text.contains(
        "mcp_server_operation_duration_seconds_bucket{mcp_method_name=\"tools/call\",le=\"0.01\"}"
    ));
}

#[tokio::test]
async fn the_downstream_gets_the_traces_context_only_while_telemetry_is_on() {
    let api = Downstream::new()
        .fallback(Answer::Json(r#"{"message":"hello"}"#))
        .start()
        .await;
    let parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

    // Off: the client's traceparent is not forwarded (sluice does not trace, so it must not
    // claim a hop it did not record).
    let off = TestServer::toml(&config(api.addr)).start().await;
    let session = support::session(off.addr, support::MCP, "2025-11-25").await;
    assert_eq!(call(off.addr, &session, Some(parent)).await.status, 200);
    assert!(api.headers().iter().all(|h| !h.contains_key("traceparent")));

    // On (a collector nobody listens at: export fails in the background, calls do not).
    let dead = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let endpoint = format!("http://{}/v1/traces", dead.local_addr().expect("addr"));
    drop(dead);
    let on = TestServer::toml(&config(api.addr))
        .with(move |config| {
            config.telemetry = TelemetrySettings {
                enabled: true,
                endpoint,
                ..TelemetrySettings::default()
            };
        })
        .start()
        .await;
    let session = support::session(on.addr, support::MCP, "2025-11-25").await;
    let reply = call(on.addr, &session, Some(parent)).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.json()["result"]["isError"], false);
    let sent = api.headers();
    let traceparent = sent
        .last()
        .and_then(|h| h.get("traceparent"))
        .and_then(|v| v.to_str().ok())
        .expect("a traceparent went downstream")
        .to_owned();
    let parts: Vec<&str> = traceparent.split('-').collect();
    assert_eq!(parts.len(), 4, "{traceparent}");
    assert_eq!(parts[1], "0af7651916cd43dd8448eb211c80319c", "same trace");
    assert_ne!(parts[2], "b7ad6b7169203331", "a span of ours as the parent");
    assert_eq!(parts[3], "01", "sampled");
}
