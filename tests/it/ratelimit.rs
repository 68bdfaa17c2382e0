//! Integration tests: `[[tenant.rate_limit]]` on MCP `tools/call`, REST tool calls and A2A
//! messages alike (429, `Retry-After`, `data.retry_after_ms`, counted in `/metrics`, audited),
//! buckets per caller vs shared, the limit held in total across three instances sharing the
//! real Redis, `on_store_error` when Redis is unreachable, and `[server.auth_failures]`
//! throttling a source address that keeps presenting wrong API keys.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use http::Method;
use serde_json::{json, Value};
use sluice::auth::apikey::{self, GeneratedKey};
use sluice::catalog::Catalog;
use sluice::session::RedisConfig;

use crate::cluster::{cleanup, own_redis_or_skip, redis_or_skip};
use crate::support::{self, echo_tool, Answer, Downstream, Reply, TempDir, TestServer};

const PEPPER: &str = "ratelimit-pepper";

struct Keys {
    alice: GeneratedKey,
    bob: GeneratedKey,
}

impl Keys {
    fn new() -> Keys {
        Keys {
            alice: apikey::generate(PEPPER.as_bytes()),
            bob: apikey::generate(PEPPER.as_bytes()),
        }
    }
}

/// Tenant `acme`, client `app` (API keys of alice and bob, principals named so), tool `echo`,
/// the audit trail in `audit`, and `rules` as its `[[tenant.rate_limit]]` tables.
fn config_text(downstream: SocketAddr, keys: &Keys, audit: &str, rules: &str) -> String {
    format!(
        r#"
[server]
api_key_pepper = "{PEPPER}"
post_framing = "json"

[server.auth_failures]
per_address = 5
per_key = 100
window_secs = 60

[server.audit]
sink = "file"
path = {audit:?}

[[tenant]]
id = "acme"

[[tenant.client]]
id = "app"
[[tenant.client.api_key]]
id = "{alice_id}"
hash = "{alice_hash}"
principal = "alice"
[[tenant.client.api_key]]
id = "{bob_id}"
hash = "{bob_hash}"
principal = "bob"

{rules}

[[tenant.toolset]]
id = "base"
{echo}
[[tenant.assignment]]
client = "app"
toolset = "base"
"#,
        echo = echo_tool(downstream),
        alice_id = keys.alice.id,
        alice_hash = keys.alice.hash_hex,
        bob_id = keys.bob.id,
        bob_hash = keys.bob.hash_hex,
    )
}

/// A stateless-era `tools/call` of `echo` by the caller holding `key`.
async fn mcp_call(addr: SocketAddr, key: &GeneratedKey, id: u64) -> Reply {
    let mut meta = serde_json::Map::new();
    support::stateless_meta(&mut meta);
    meta.insert(
        "io.modelcontextprotocol/clientCapabilities".into(),
        json!({}),
    );
    let body = json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
        "params":{"name":"echo","arguments":{},"_meta":meta}})
    .to_string();
    let bearer = format!("Bearer {}", key.token);
    support::post(
        addr,
        support::MCP,
        &[
            ("authorization", &bearer),
            ("mcp-protocol-version", support::MODERN),
            ("mcp-method", "tools/call"),
            ("mcp-name", "echo"),
        ],
        &body,
    )
    .await
}

/// A REST call of `echo` by the caller holding `key`.
async fn rest_call(addr: SocketAddr, key: &GeneratedKey) -> Reply {
    let bearer = format!("Bearer {}", key.token);
    support::send(
        addr,
        support::request(
            addr,
            Method::POST,
            "/runtime/acme/app/tools/echo",
            &[
                ("authorization", &bearer),
                ("content-type", "application/json"),
            ],
            "{}",
        ),
    )
    .await
}

/// An A2A `SendMessage` running `echo` by the caller holding `key`.
async fn a2a_call(addr: SocketAddr, key: &GeneratedKey, n: u64) -> Reply {
    let bearer = format!("Bearer {}", key.token);
    let body = json!({"jsonrpc":"2.0","id":n,"method":"SendMessage","params":{"message":{
        "messageId": format!("m-{n}"), "role": "ROLE_USER",
        "parts": [{"data": {"tool": "echo", "arguments": {}}}]}}})
    .to_string();
    support::send(
        addr,
        support::request(
            addr,
            Method::POST,
            "/runtime/acme/app/a2a",
            &[
                ("authorization", &bearer),
                ("content-type", "application/json"),
                ("accept", "application/json"),
                ("a2a-version", "1.0"),
            ],
            &body,
        ),
    )
    .await
}

/// Asserts `reply` is a rate limit refusal by rule `rule`, with a `Retry-After` (at most
/// `max_secs`) and the data.
fn assert_limited(reply: &Reply, rule: &str, max_secs: u64) {
    assert_eq!(reply.status, 429, "{}", reply.text());
    let retry: u64 = reply
        .header("retry-after")
        .parse()
        .expect("Retry-After seconds");
    assert!((1..=max_secs).contains(&retry), "Retry-After {retry}");
    let body = reply.json();
    assert_eq!(body["error"]["code"], -32000, "{body}");
    assert_eq!(body["error"]["data"]["rule"], rule, "{body}");
    let ms = body["error"]["data"]["retry_after_ms"]
        .as_u64()
        .expect("retry_after_ms");
    assert!(ms > 0 && ms.div_ceil(1000) == retry, "{ms} ms vs {retry} s");
}

/// Asserts that `/metrics` has the sample line `line`.
async fn assert_metric(addr: SocketAddr, line: &str) {
    let scrape = support::send(
        addr,
        support::request(addr, Method::GET, "/metrics", &[], ""),
    )
    .await;
    assert!(
        scrape.text().lines().any(|l| l == line),
        "no {line}:\n{}",
        scrape.text()
    );
}

fn audit_records(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

#[tokio::test]
async fn a_rule_per_caller_refuses_past_its_burst_on_mcp_rest_and_a2a_alike() {
    let api = Downstream::new()
        .fallback(Answer::Json(r#"{"message":"hello"}"#))
        .start()
        .await;
    let dir = TempDir::new("ratelimit-surfaces");
    let audit = dir.join("audit.jsonl");
    let keys = Keys::new();
    let rules = r#"
[[tenant.rate_limit]]
id = "echo-per-caller"
tool = "echo"
per = ["caller"]
rate = "3/min"
"#;
    let text = config_text(api.addr, &keys, &audit.display().to_string(), rules);
    let server = TestServer::toml(&text).start().await;

    // Alice's bucket: three calls (one per surface), then every surface refuses her.
    let reply = mcp_call(server.addr, &keys.alice, 1).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.json()["result"]["isError"], false);
    assert_eq!(rest_call(server.addr, &keys.alice).await.status, 200);
    let reply = a2a_call(server.addr, &keys.alice, 1).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert!(reply.json().get("error").is_none(), "{}", reply.text());

    let refused = mcp_call(server.addr, &keys.alice, 42).await;
    assert_limited(&refused, "echo-per-caller", 60);
    assert_eq!(
        refused.json()["id"],
        42,
        "the refusal echoes the request id"
    );
    assert_limited(
        &rest_call(server.addr, &keys.alice).await,
        "echo-per-caller",
        60,
    );
    assert_limited(
        &a2a_call(server.addr, &keys.alice, 2).await,
        "echo-per-caller",
        60,
    );

    // Bob has a bucket of his own.
    assert_eq!(mcp_call(server.addr, &keys.bob, 3).await.status, 200);

    // Counted and audited.
    assert_metric(server.addr, "sluice_rate_limited_total 3").await;
    let deadline = tokio::time::Instant::now() + support::GUARD;
    loop {
        let rejected: Vec<Value> = audit_records(&audit)
            .into_iter()
            .filter(|r| r["outcome"] == "rejected" && r["error_code"] == "429")
            .collect();
        if rejected.len() == 3 {
            let surfaces: Vec<&str> = rejected
                .iter()
                .filter_map(|r| r["surface"].as_str())
                .collect();
            assert_eq!(surfaces, ["mcp", "rest", "a2a"], "{rejected:?}");
            for record in &rejected {
                assert_eq!(record["caller"], "apikey:alice");
                assert_eq!(record["tool"], "echo");
                assert!(record["detail"]
                    .as_str()
                    .is_some_and(|d| d.contains("echo-per-caller")));
            }
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{:?}",
            audit_records(&audit)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn failed_api_keys_from_one_address_are_throttled_before_their_check() {
    let api = Downstream::new()
        .fallback(Answer::Json(r#"{"message":"hello"}"#))
        .start()
        .await;
    let dir = TempDir::new("ratelimit-auth");
    let keys = Keys::new();
    let text = config_text(
        api.addr,
        &keys,
        &dir.join("a.jsonl").display().to_string(),
        "",
    );
    let server = TestServer::toml(&text).start().await;
    let mut wrong = apikey::generate(PEPPER.as_bytes());
    // Alice's key id with another secret: a guess at her key.
    wrong.token = format!("rtk_{}_{}", keys.alice.id, "x".repeat(43));
    for attempt in 0..5 {
        let reply = mcp_call(server.addr, &wrong, attempt).await;
        assert_eq!(reply.status, 401, "attempt {attempt}: {}", reply.text());
    }
    // The sixth attempt from this address is refused before its key is looked at — and so is
    // the right key, from the same address, until the window lets one failure go.
    let refused = mcp_call(server.addr, &wrong, 6).await;
    assert_eq!(refused.status, 429, "{}", refused.text());
    let retry: u64 = refused.header("retry-after").parse().expect("Retry-After");
    assert!((1..=60).contains(&retry), "{retry}");
    assert!(refused.json()["error"]["data"]["retry_after_ms"].is_u64());
    assert_eq!(mcp_call(server.addr, &keys.alice, 7).await.status, 429);
    assert_metric(server.addr, "sluice_auth_throttled_total 2").await;
}

// === across instances ===

/// `n` instances over one configuration file, sharing Redis at `url` under `prefix`.
async fn instances(file: &Path, url: &str, prefix: &str, n: usize) -> Vec<TestServer> {
    let mut nodes = Vec::new();
    for _ in 0..n {
        let catalog = Arc::new(Catalog::load(file).expect("valid configuration"));
        let redis = RedisConfig {
            command_timeout: Duration::from_millis(300),
            ..RedisConfig::new(url.to_owned()).with_prefix(prefix.to_owned())
        };
        nodes.push(
            TestServer::catalog(catalog)
                .with(move |config| {
                    config.cluster = Some(redis);
                    config.expected_instances = 3;
                })
                .start()
                .await,
        );
    }
    nodes
}

#[tokio::test]
async fn a_shared_limit_holds_in_total_across_three_instances() {
    let Some((url, prefix)) = redis_or_skip("ratelimit_shared").await else {
        return;
    };
    let api = Downstream::new()
        .fallback(Answer::Json(r#"{"message":"hello"}"#))
        .start()
        .await;
    let dir = TempDir::new("ratelimit-shared");
    let keys = Keys::new();
    let rules = r#"
[[tenant.rate_limit]]
id = "echo-total"
tool = "echo"
rate = "10/h"
"#;
    let file = dir.join("sluice.toml");
    let text = config_text(
        api.addr,
        &keys,
        &dir.join("a.jsonl").display().to_string(),
        rules,
    );
    std::fs::write(&file, text).expect("config file");
    let nodes = instances(&file, &url, &prefix, 3).await;

    // 30 calls, round robin over the instances and both callers: 10 pass in total.
    let mut passed = 0;
    let mut refused = 0;
    for i in 0..30u64 {
        let node = &nodes[(i % 3) as usize];
        let key = if i % 2 == 0 { &keys.alice } else { &keys.bob };
        let reply = mcp_call(node.addr, key, i).await;
        match reply.status.as_u16() {
            200 => passed += 1,
            429 => {
                assert_limited(&reply, "echo-total", 3600);
                refused += 1;
            }
            other => panic!("call {i}: {other} {}", reply.text()),
        }
    }
    assert_eq!(
        (passed, refused),
        (10, 20),
        "the limit holds in total, not per instance"
    );
    drop(nodes);
    cleanup(&url, &prefix).await;
}

/// How many scripts (`EVAL` and `EVALSHA`) the Redis at `url` has run (`INFO commandstats`).
async fn script_calls(url: &str) -> u64 {
    let client = redis::Client::open(url).expect("url");
    let mut conn = client
        .get_multiplexed_async_connection()
        .await
        .expect("connect");
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(&mut conn)
        .await
        .expect("INFO");
    info.lines()
        .filter(|line| line.starts_with("cmdstat_evalsha:") || line.starts_with("cmdstat_eval:"))
        .filter_map(|line| {
            let calls = line.split_once("calls=")?.1;
            calls.split(',').next()?.parse::<u64>().ok()
        })
        .sum()
}

#[tokio::test]
async fn an_unreachable_store_fails_open_or_closed_as_each_rule_says() {
    let api = Downstream::new()
        .fallback(Answer::Json(r#"{"message":"hello"}"#))
        .start()
        .await;
    for (policy, want) in [("fail_open", 200), ("fail_closed", 503)] {
        // A Redis of the test's own, killed once the server is up.
        let Some(mut redis) = own_redis_or_skip("ratelimit_store_down").await else {
            return;
        };
        let dir = TempDir::new("ratelimit-store-down");
        let keys = Keys::new();
        let rules = format!(
            "[[tenant.rate_limit]]\nid = \"r\"\nrate = \"1/h\"\non_store_error = \"{policy}\"\n"
        );
        let file = dir.join("sluice.toml");
        let text = config_text(
            api.addr,
            &keys,
            &dir.join("a.jsonl").display().to_string(),
            &rules,
        );
        std::fs::write(&file, text).expect("config file");
        let server = instances(&file, &redis.url(), "store-down", 1)
            .await
            .remove(0);
        // Up: the one call an hour passes, the next ones are limited — each limited request
        // costs exactly one round trip (one EVALSHA of the GCRA script; the first call of a
        // fresh Redis also loads the script: EVALSHA, NOSCRIPT, EVAL).
        assert_eq!(mcp_call(server.addr, &keys.alice, 1).await.status, 200);
        let before = script_calls(&redis.url()).await;
        for id in [2, 20, 21] {
            assert_limited(&mcp_call(server.addr, &keys.alice, id).await, "r", 3600);
        }
        assert_eq!(
            script_calls(&redis.url()).await - before,
            3,
            "one script call per limited request"
        );
        redis.kill();
        for i in 3..6 {
            let reply = mcp_call(server.addr, &keys.alice, i).await;
            assert_eq!(reply.status, want, "{policy}: {}", reply.text());
        }
        assert_metric(server.addr, "sluice_rate_limit_store_errors_total 3").await;
    }
}
