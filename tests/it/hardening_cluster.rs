//! Integration tests of the issue-13 hardening in sessions and logging, over real sockets:
//! one caller cannot take its tenant's whole session cap (`max_sessions_per_caller`, and each
//! refusal names the cap it hit), and a downstream that fails every call does not produce one
//! warning line per call (the `sluice` binary's JSON log lines are counted).
//!
//! The cross-instance side (the caller cap atomic in Redis, and legacy `/messages` during a
//! Redis restart) is in `cluster.rs`, which has the multi-instance harness.

use std::net::SocketAddr;
use std::time::Duration;

use http::{Method, StatusCode};
use sluice::auth::apikey::{self, GeneratedKey};
use sluice::catalog::Catalog;

use super::support::{
    full, open, request, send, Answer, Binary, Downstream, Reply, TestServer, GUARD, MCP,
};

const PEPPER: &str = "hardening-pepper";
const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"hardening","version":"1"}}}"#;

// === per-caller session cap ===

/// A sluice instance of one tenant with API-key callers, and caps `per_tenant`/`per_caller`.
struct Capped {
    server: TestServer,
    keys: Vec<GeneratedKey>,
}

impl Capped {
    async fn start(n_callers: usize, per_tenant: usize, per_caller: usize) -> Capped {
        let keys: Vec<GeneratedKey> = (0..n_callers)
            .map(|_| apikey::generate(PEPPER.as_bytes()))
            .collect();
        let mut text = format!(
            "[server]\napi_key_pepper = \"{PEPPER}\"\nmax_sessions_per_tenant = {per_tenant}\n\
             max_sessions_per_caller = {per_caller}\n\
             [[tenant]]\nid = \"acme\"\n[[tenant.client]]\nid = \"app\"\n"
        );
        for key in &keys {
            text.push_str(&format!(
                "[[tenant.client.api_key]]\nid = \"{}\"\nhash = \"{}\"\n",
                key.id, key.hash_hex
            ));
        }
        let server = TestServer::toml(&text).start().await;
        Capped { server, keys }
    }

    fn auth(&self, caller: usize) -> String {
        format!("Bearer {}", self.keys[caller].token)
    }

    async fn initialize(&self, caller: usize) -> Reply {
        let auth = self.auth(caller);
        let headers = [
            ("accept", "application/json, text/event-stream"),
            ("content-type", "application/json"),
            ("authorization", auth.as_str()),
        ];
        send(
            self.server.addr,
            request(self.server.addr, Method::POST, MCP, &headers, INIT),
        )
        .await
    }

    /// Opens a legacy `/sse` stream (which mints a session); returns its status and the
    /// error body when refused.
    async fn legacy(&self, caller: usize) -> (StatusCode, Option<serde_json::Value>) {
        let auth = self.auth(caller);
        let headers = [
            ("accept", "text/event-stream"),
            ("authorization", auth.as_str()),
        ];
        let path = "/runtime/acme/app/sse";
        let response = open(
            self.server.addr,
            request(self.server.addr, Method::GET, path, &headers, ""),
        )
        .await;
        let status = response.status();
        if status == StatusCode::OK {
            return (status, None);
        }
        let body = tokio::time::timeout(
            GUARD,
            http_body_util::BodyExt::collect(response.into_body()),
        )
        .await
        .expect("body in time")
        .expect("body")
        .to_bytes();
        (status, serde_json::from_slice(&body).ok())
    }
}

fn assert_cap(reply: &Reply, status: StatusCode, cap: &str, limit: usize) {
    assert_eq!(reply.status, status, "{:?}", reply.body);
    let body = reply.json();
    assert_eq!(body["jsonrpc"], "2.0");
    assert_eq!(body["error"]["data"]["cap"], cap, "{body}");
    assert_eq!(body["error"]["data"]["limit"], limit, "{body}");
}

#[tokio::test]
async fn one_caller_cannot_fill_the_tenant_and_each_refusal_names_its_cap() {
    let sluice = Capped::start(3, 7, 3).await;
    // Alice takes her 3; the 4th is refused as hers (429), not the tenant's.
    for _ in 0..3 {
        let reply = sluice.initialize(0).await;
        assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
        assert!(!reply.header("mcp-session-id").is_empty());
    }
    let refused = sluice.initialize(0).await;
    assert_cap(
        &refused,
        StatusCode::TOO_MANY_REQUESTS,
        "sessions_per_caller",
        3,
    );
    assert!(
        refused.json()["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("caller")),
        "{:?}",
        refused.body
    );
    assert!(refused.header("mcp-session-id").is_empty());
    // The legacy transport mints sessions too, under the same cap.
    let (status, body) = sluice.legacy(0).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(
        body.expect("a JSON-RPC error")["error"]["data"]["cap"],
        "sessions_per_caller"
    );

    // Everyone else still gets in: Bob takes his 3, Carol one — the tenant's 7.
    for caller in [1, 1, 1, 2] {
        let reply = sluice.initialize(caller).await;
        assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    }
    // Now the tenant is full: that is the cap Carol is told about (503).
    let full = sluice.initialize(2).await;
    assert_cap(
        &full,
        StatusCode::SERVICE_UNAVAILABLE,
        "sessions_per_tenant",
        7,
    );
}

#[test]
fn a_caller_cap_above_the_tenant_cap_is_refused_at_load() {
    let text = "[server]\nmax_sessions_per_tenant = 5\nmax_sessions_per_caller = 6\n\
                [[tenant]]\nid = \"t\"\nauth = { anonymous = true }\n[[tenant.client]]\nid = \"c\"\n";
    let config = sluice::config::parse(text, "test").expect("parses");
    let Err(report) = Catalog::from_config(&config) else {
        panic!("a caller cap above the tenant cap was accepted");
    };
    assert!(
        report.to_string().contains("max_sessions_per_caller"),
        "{report}"
    );
}

// === rate-limited warnings ===

/// A downstream answering every request with 500 (and no `Content-Type`).
async fn failing_downstream() -> SocketAddr {
    Downstream::new()
        .fallback(Answer::with(|_| async { full(500, r#"{"error":"down"}"#) }))
        .start()
        .await
        .addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_downstream_failures_log_a_few_lines_that_count_the_rest() {
    let downstream = failing_downstream().await;
    let process = Binary::start(
        "loglimit",
        &format!(
            "[server]\nlisten = \"127.0.0.1:0\"\n[server.log]\nformat = \"json\"\n\
         [[tenant]]\nid = \"acme\"\nauth = {{ anonymous = true }}\n\
         [[tenant.client]]\nid = \"app\"\n\
         [[tenant.toolset]]\nid = \"base\"\n\
         [[tenant.toolset.tool]]\nname = \"broken\"\n\
         downstream = {{ kind = \"rest\", method = \"GET\", url = \"http://{downstream}/x\" }}\n\
         [[tenant.assignment]]\nclient = \"app\"\ntoolset = \"base\"\n"
        ),
    );
    let listening = process.until("listening");
    let addr: SocketAddr = listening["fields"]["addr"]
        .as_str()
        .expect("addr")
        .parse()
        .expect("socket address");

    const CALLS: usize = 50;
    let call = |path: &'static str, body: &'static str| {
        let headers = [
            ("accept", "application/json, text/event-stream"),
            ("content-type", "application/json"),
        ];
        request(addr, Method::POST, path, &headers, body)
    };
    let mcp_call = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"broken","arguments":{}}}"#;
    let started = std::time::Instant::now();
    for _ in 0..CALLS {
        let reply = send(addr, call("/runtime/acme/app/tools/broken", "{}")).await;
        assert_eq!(reply.status, StatusCode::BAD_GATEWAY, "{:?}", reply.body);
        let reply = send(addr, call(MCP, mcp_call)).await;
        assert_eq!(reply.status, StatusCode::OK);
        assert_eq!(reply.json()["result"]["isError"], true, "{:?}", reply.body);
    }
    let elapsed = started.elapsed();
    // One more of each after the interval: its line carries the count of the dropped ones.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let reply = send(addr, call("/runtime/acme/app/tools/broken", "{}")).await;
    assert_eq!(reply.status, StatusCode::BAD_GATEWAY);
    let reply = send(addr, call(MCP, mcp_call)).await;
    assert_eq!(reply.status, StatusCode::OK);

    let lines = process.drain(Duration::from_millis(500));
    // At most one line per second of calls, plus the first and the late one.
    let bound = usize::try_from(elapsed.as_secs()).unwrap_or(usize::MAX) + 2;
    for message in ["downstream failure", "tool call failed downstream"] {
        let logged: Vec<&serde_json::Value> = lines
            .iter()
            .filter(|line| line["fields"]["message"] == message)
            .collect();
        assert!(
            !logged.is_empty() && logged.len() <= bound,
            "{} {message:?} lines for {} failures in {elapsed:?}",
            logged.len(),
            CALLS + 1
        );
        for line in &logged {
            assert_eq!(line["level"], "WARN");
            assert_eq!(line["fields"]["tenant"], "acme", "{line}");
        }
        // Printed plus suppressed is every failure: nothing is lost from the count.
        let counted: u64 = logged
            .iter()
            .map(|line| 1 + line["fields"]["suppressed"].as_u64().expect("suppressed"))
            .sum();
        assert_eq!(counted, CALLS as u64 + 1, "{message:?}: {logged:?}");
    }
}
