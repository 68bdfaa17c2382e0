//! Integration tests: the REST surface and the admin reload, over real sockets, against the demo
//! CRM API and small hyper downstreams started by each test.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::Full;
use serde_json::{json, Value};
use sluice::catalog::Catalog;
use tokio::net::TcpListener;

use crate::support::{self, demo, Answer, Downstream, Reply, TestServer};

// === support ===

impl Reply {
    /// The JSON-RPC error object of an error answer.
    fn error(&self) -> Value {
        let body = self.json();
        assert_eq!(body["jsonrpc"], "2.0", "{body}");
        assert_eq!(body["id"], Value::Null, "{body}");
        body["error"].clone()
    }
}

/// Sends `req` (its URI absolute, `http://{addr}/…`) on a fresh connection, in origin form with
/// its `Host`, as an HTTP client library would.
async fn send(mut req: Request<Full<Bytes>>) -> Reply {
    let authority = req.uri().authority().expect("an absolute URI").to_string();
    let addr: SocketAddr = authority.parse().expect("an address");
    let origin = req
        .uri()
        .path_and_query()
        .expect("a path")
        .as_str()
        .to_owned();
    *req.uri_mut() = origin.parse().expect("origin form");
    req.headers_mut()
        .insert(http::header::HOST, authority.parse().expect("host"));
    support::send(addr, req).await
}

async fn get(url: &str) -> Reply {
    send(Request::get(url).body(Full::default()).unwrap()).await
}

async fn post(url: &str, headers: &[(&str, &str)], body: &str) -> Reply {
    let mut req = Request::post(url).header("content-type", "application/json");
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    send(req.body(Full::new(Bytes::from(body.to_owned()))).unwrap()).await
}

/// How the downstream of a test answers (none with a `Content-Type`).
#[derive(Clone, Copy)]
enum Respond {
    Json(&'static str),
    Status(u16),
    Garbage,
    Never,
}

/// A downstream that records the headers it received and answers with `respond`.
async fn downstream(respond: Respond) -> Downstream {
    let answer = match respond {
        Respond::Json(text) => Answer::Plain(200, text),
        Respond::Status(code) => Answer::Plain(code, r#"{"secret":"internal detail"}"#),
        Respond::Garbage => Answer::Plain(200, "<html>not json"),
        Respond::Never => Answer::Stall,
    };
    Downstream::new().fallback(answer).start().await
}

/// A one-tool configuration calling `url` with the given correlation strategy.
fn one_tool_config(url: &str, strategy: &str, timeout_ms: u64) -> String {
    format!(
        r#"
[server]
admin_token = "let-me-in"
max_body_bytes = 1024

[[tenant]]
id = "t1"
auth = {{ anonymous = true }}
[[tenant.client]]
id = "c1"
[[tenant.toolset]]
id = "ts"
correlation = {{ strategy = "{strategy}", header = "X-Request-Ref" }}
[[tenant.toolset.tool]]
name = "echo"
description = "Echo."
downstream = {{ kind = "rest", method = "POST", url = "{url}", timeout_ms = {timeout_ms} }}
[[tenant.toolset.tool.input]]
source = "q"
exposed = "query"
required = true
[[tenant.assignment]]
client = "c1"
toolset = "ts"
"#
    )
}

async fn one_tool(respond: Respond, strategy: &str) -> (TestServer, Downstream) {
    let down = downstream(respond).await;
    let text = one_tool_config(&format!("http://{}/echo", down.addr), strategy, 300);
    (TestServer::toml(&text).start().await, down)
}

/// A unique scratch file path for configuration files.
fn scratch_file(name: &str) -> PathBuf {
    let unique = format!(
        "sluice-test-{}-{}-{name}",
        std::process::id(),
        rand::random::<u64>()
    );
    std::env::temp_dir().join(unique)
}

// === listing ===

#[tokio::test]
async fn lists_visible_tools_with_their_published_schemas() {
    let sluice = demo().await;
    let reply = get(&sluice.url("/runtime/demo/agent/tools")).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.headers["content-type"], "application/json");
    let tools = reply.json()["tools"].as_array().unwrap().clone();
    let names: Vec<_> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "discover_tool_schema",
            "find_customers",
            "find_people",
            "get_customer",
            "place_order"
        ]
    );
    let by_name = |n: &str| tools.iter().find(|t| t["name"] == n).unwrap().clone();
    // Full mode: descriptions present.
    assert_eq!(
        by_name("get_customer")["inputSchema"]["properties"]["id"]["description"],
        "Customer id, e.g. c-100."
    );
    // DataStructureOnly: structure without descriptions.
    let city = &by_name("find_customers")["inputSchema"]["properties"]["city"];
    assert_eq!(city["type"], "string");
    assert!(city.get("description").is_none(), "{city}");
    // Lazy: only the placeholder.
    let lazy = &by_name("place_order")["inputSchema"];
    assert_eq!(lazy["required"], json!(["_schema_discovery"]));
    assert_eq!(lazy["properties"].as_object().unwrap().len(), 1);
}

#[tokio::test]
async fn unknown_tenant_client_or_tool_is_404() {
    let sluice = demo().await;
    for path in ["/runtime/nope/agent/tools", "/runtime/demo/nope/tools"] {
        let reply = get(&sluice.url(path)).await;
        assert_eq!(reply.status, StatusCode::NOT_FOUND, "{path}");
        assert!(reply.error()["message"]
            .as_str()
            .unwrap()
            .contains("unknown"));
    }
    let reply = post(&sluice.url("/runtime/demo/agent/tools/nope"), &[], "{}").await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
    assert_eq!(reply.error()["message"], "unknown tool");
}

// === invocation ===

#[tokio::test]
async fn call_translates_arguments_and_results() {
    let sluice = demo().await;
    let reply = post(
        &sluice.url("/runtime/demo/agent/tools/get_customer"),
        &[],
        r#"{"id":"c-102"}"#,
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);
    // Source names (full_name, contact.email_address, town, internal_score) never leak.
    assert_eq!(
        reply.json(),
        json!({
            "id": "c-102",
            "name": "Alan Turing",
            "email": "alan@example.com",
            "addresses": [{"street": "78 High Street", "city": "London"}]
        })
    );

    let reply = post(
        &sluice.url("/runtime/demo/agent/tools/find_customers"),
        &[],
        r#"{"city":"Austin"}"#,
    )
    .await;
    assert_eq!(
        reply.json(),
        json!({"total": 1, "customers": [{"id": "c-103", "name": "Edsger Dijkstra"}]})
    );
}

#[tokio::test]
async fn invalid_arguments_are_400_with_the_field_named() {
    let sluice = demo().await;
    let url = sluice.url("/runtime/demo/agent/tools/get_customer");
    for (body, needle) in [
        ("{}", "'id'"),
        (r#"{"id": 5}"#, "'id'"),
        ("[1,2]", "JSON object"),
        ("{not json", "not valid JSON"),
    ] {
        let reply = post(&url, &[], body).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{body}");
        let error = reply.error();
        assert_eq!(error["code"], -32602, "{body}");
        assert!(
            error["message"].as_str().unwrap().contains(needle),
            "{body}: {error}"
        );
    }
}

#[tokio::test]
async fn body_rules_415_and_413() {
    let (sluice, _down) = one_tool(Respond::Json("{}"), "none").await;
    let url = sluice.url("/runtime/t1/c1/tools/echo");
    let req = Request::post(&url)
        .header("content-type", "text/plain")
        .body(Full::new(Bytes::from_static(b"{}")))
        .unwrap();
    assert_eq!(send(req).await.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    // `[server] max_body_bytes = 1024` in this configuration.
    let big = format!(r#"{{"query":"{}"}}"#, "x".repeat(2000));
    assert_eq!(
        post(&url, &[], &big).await.status,
        StatusCode::PAYLOAD_TOO_LARGE
    );
}

#[tokio::test]
async fn schema_discovery_flow() {
    let sluice = demo().await;
    let url = sluice.url("/runtime/demo/agent/tools/place_order");
    let reply = post(&url, &[], r#"{"_schema_discovery": true}"#).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    assert!(reply.error()["message"]
        .as_str()
        .unwrap()
        .contains("discover_tool_schema"));

    let reply = post(
        &sluice.url("/runtime/demo/agent/tools/discover_tool_schema"),
        &[],
        r#"{"tool_id":"place_order"}"#,
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);
    let found = reply.json();
    assert_eq!(found["tool_id"], "place_order");
    assert_eq!(
        found["inputSchema"]["required"],
        json!(["customer_id", "items"])
    );
    assert_eq!(
        found["outputSchema"]["properties"]["order_id"]["type"],
        "string"
    );
    assert_eq!(found["schemaHash"].as_str().unwrap().len(), 64);

    // With real arguments the placeholder is stripped and the call goes through.
    let reply = post(
        &url,
        &[],
        r#"{"_schema_discovery":true,"customer_id":"c-100","items":[{"product":"A","quantity":1},{"product":"B","quantity":3}]}"#,
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    let order = reply.json();
    assert_eq!(order["lines"], 2);
    assert_eq!(order["status"], "ACCEPTED");
}

#[tokio::test]
async fn downstream_failures_are_502_and_504_without_internals() {
    for (respond, status) in [
        (Respond::Status(500), StatusCode::BAD_GATEWAY),
        (Respond::Status(404), StatusCode::BAD_GATEWAY),
        (Respond::Garbage, StatusCode::BAD_GATEWAY),
        (Respond::Never, StatusCode::GATEWAY_TIMEOUT),
    ] {
        let (sluice, down) = one_tool(respond, "none").await;
        let reply = post(
            &sluice.url("/runtime/t1/c1/tools/echo"),
            &[],
            r#"{"query":"x"}"#,
        )
        .await;
        assert_eq!(reply.status, status);
        let text = String::from_utf8_lossy(&reply.body).to_string();
        assert!(!text.contains("internal detail"), "{text}");
        assert!(!text.contains(&down.addr.to_string()), "{text}");
        assert!(!text.contains("127.0.0.1"), "{text}");
    }
}

#[tokio::test]
async fn connect_failure_is_502() {
    // A port that was bound and released: nothing listens there.
    let closed = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap();
    let text = one_tool_config(&format!("http://{closed}/echo"), "none", 1000);
    let sluice = TestServer::toml(&text).start().await;
    let reply = post(
        &sluice.url("/runtime/t1/c1/tools/echo"),
        &[],
        r#"{"query":"x"}"#,
    )
    .await;
    assert_eq!(reply.status, StatusCode::BAD_GATEWAY);
    assert_eq!(
        reply.error()["message"],
        "bad gateway: The downstream service could not be reached."
    );
}

// === correlation ===

#[tokio::test]
async fn correlation_is_echoed_and_forwarded_per_strategy() {
    let (sluice, down) =
        one_tool(Respond::Json(r#"{"ok":true}"#), "external-or-execution-id").await;
    let url = sluice.url("/runtime/t1/c1/tools/echo");

    let reply = post(
        &url,
        &[("x-correlation-id", "client-ref-7")],
        r#"{"query":"x"}"#,
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.headers["x-external-correlation-id"], "client-ref-7");
    let execution = reply.headers["x-execution-id"].to_str().unwrap().to_owned();
    assert_ne!(execution, "client-ref-7");
    assert_eq!(down.headers()[0]["x-request-ref"], "client-ref-7");

    // A value that fails the acceptance rules is neither echoed nor forwarded: the downstream
    // gets the execution id instead.
    let reply = post(
        &url,
        &[("x-correlation-id", "has space")],
        r#"{"query":"x"}"#,
    )
    .await;
    assert!(reply.headers.get("x-external-correlation-id").is_none());
    let execution = reply.headers["x-execution-id"].to_str().unwrap().to_owned();
    assert_eq!(down.headers()[1]["x-request-ref"], execution.as_str());

    // Strategy `none`: nothing reaches the downstream, the echo still happens.
    let (sluice, down) = one_tool(Respond::Json(r#"{"ok":true}"#), "none").await;
    let reply = post(
        &sluice.url("/runtime/t1/c1/tools/echo"),
        &[("x-correlation-id", "client-ref-8")],
        r#"{"query":"x"}"#,
    )
    .await;
    assert_eq!(reply.headers["x-external-correlation-id"], "client-ref-8");
    assert!(down.headers()[0].get("x-request-ref").is_none());
}

// === reload ===

#[tokio::test]
async fn admin_reload_swaps_the_catalog_and_refuses_invalid_files() {
    let down = downstream(Respond::Json(r#"{"ok":true}"#)).await;
    let url = format!("http://{}/echo", down.addr);
    let path = scratch_file("reload.toml");
    std::fs::write(&path, one_tool_config(&url, "none", 1000)).unwrap();
    let catalog = Arc::new(Catalog::load(&path).unwrap());
    let sluice = TestServer::catalog(Arc::clone(&catalog)).start().await;
    let reload = |token: &'static str| {
        let url = sluice.url("/admin/reload");
        async move {
            let req = Request::post(url)
                .header("authorization", format!("Bearer {token}"))
                .body(Full::default())
                .unwrap();
            send(req).await
        }
    };

    assert_eq!(reload("wrong").await.status, StatusCode::UNAUTHORIZED);

    // Rename the tool: the listing changes after the reload.
    std::fs::write(
        &path,
        one_tool_config(&url, "none", 1000).replace("name = \"echo\"", "name = \"echo2\""),
    )
    .unwrap();
    let reply = reload("let-me-in").await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(
        reply.json(),
        json!({"version": 2, "changed": [{"tenant": "t1", "client": "c1"}]})
    );
    let listing = get(&sluice.url("/runtime/t1/c1/tools")).await.json();
    assert_eq!(listing["tools"][0]["name"], "echo2");

    // An invalid file: 422 with the located problem, and the old catalog stays.
    std::fs::write(
        &path,
        one_tool_config(&url, "none", 1000).replace("toolset = \"ts\"", "toolset = \"missing\""),
    )
    .unwrap();
    let reply = reload("let-me-in").await;
    assert_eq!(reply.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(reply.error()["message"]
        .as_str()
        .unwrap()
        .contains("missing"));
    let listing = get(&sluice.url("/runtime/t1/c1/tools")).await.json();
    assert_eq!(listing["tools"][0]["name"], "echo2");
    assert_eq!(catalog.current().version(), 2);
    let _ = std::fs::remove_file(&path);
}

#[tokio::test]
async fn reload_is_off_without_an_admin_token() {
    let sluice = demo().await;
    let req = Request::post(sluice.url("/admin/reload"))
        .header("authorization", "Bearer anything")
        .body(Full::default())
        .unwrap();
    assert_eq!(send(req).await.status, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_during_reloads_see_a_whole_catalog() {
    let down = downstream(Respond::Json(r#"{"ok":true}"#)).await;
    let url = format!("http://{}/echo", down.addr);
    let old = one_tool_config(&url, "none", 1000);
    let new = old.replace("name = \"echo\"", "name = \"other\"");
    let old_config = sluice::config::parse(&old, "old").unwrap();
    let new_config = sluice::config::parse(&new, "new").unwrap();
    let catalog = Arc::new(Catalog::from_config(&old_config).unwrap());
    let sluice = Arc::new(TestServer::catalog(Arc::clone(&catalog)).start().await);

    let swapper = {
        let catalog = Arc::clone(&catalog);
        tokio::spawn(async move {
            for i in 0..200 {
                let config = if i % 2 == 0 { &new_config } else { &old_config };
                catalog.replace(config).unwrap();
                tokio::task::yield_now().await;
            }
        })
    };
    let mut readers = Vec::new();
    for _ in 0..4 {
        let sluice = Arc::clone(&sluice);
        readers.push(tokio::spawn(async move {
            let mut seen = [0usize; 2];
            for _ in 0..50 {
                let listing = get(&sluice.url("/runtime/t1/c1/tools")).await;
                assert_eq!(listing.status, StatusCode::OK);
                let tools = listing.json()["tools"].as_array().unwrap().clone();
                assert_eq!(tools.len(), 1, "{tools:?}");
                match tools[0]["name"].as_str().unwrap() {
                    "echo" => seen[0] += 1,
                    "other" => seen[1] += 1,
                    name => panic!("unexpected tool {name}"),
                }
                // A call by either name answers 200 (the tool exists) or 404 (it does not in the
                // snapshot the call read): never a torn state such as a 5xx.
                for name in ["echo", "other"] {
                    let reply = post(
                        &sluice.url(&format!("/runtime/t1/c1/tools/{name}")),
                        &[],
                        r#"{"query":"q"}"#,
                    )
                    .await;
                    assert!(
                        reply.status == StatusCode::OK || reply.status == StatusCode::NOT_FOUND,
                        "{name}: {}",
                        reply.status
                    );
                }
            }
            seen
        }));
    }
    swapper.await.unwrap();
    for reader in readers {
        let seen = reader.await.unwrap();
        assert_eq!(seen[0] + seen[1], 50);
    }
    assert_eq!(catalog.current().version(), 201);
}

#[tokio::test]
async fn the_demo_key_of_the_banner_works_and_a_wrong_one_is_challenged() {
    let sluice = demo().await;
    let url = sluice.url("/runtime/demo/agent/tools/get_customer");
    let key = format!("Bearer {}", sluice::demo::DEMO_API_KEY);
    let reply = post(&url, &[("authorization", &key)], r#"{"id":"c-100"}"#).await;
    assert_eq!(reply.status, StatusCode::OK);
    let reply = post(
        &url,
        &[("authorization", "Bearer rtk_demoagentkey_wrong")],
        r#"{"id":"c-100"}"#,
    )
    .await;
    assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
    assert!(reply.headers["www-authenticate"]
        .to_str()
        .is_ok_and(|v| v.contains("resource_metadata=")));
}
