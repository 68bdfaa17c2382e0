//! Integration tests: the result size guard (`max_result_bytes`, `on_oversize`) on MCP
//! `tools/call` and REST, over a real downstream answering a large list: the result is cut
//! from the end of its array (text and `structuredContent` the same cut JSON, `_meta` saying
//! what was cut), the toolset's default applies to its tools, and `refuse` answers a tool error.

use std::net::SocketAddr;
use std::sync::OnceLock;

use http::Method;
use serde_json::{json, Value};

use crate::support::{self, Answer, Downstream, TestServer};

/// 200 customers, about 9 KB.
fn customers() -> &'static str {
    static BODY: OnceLock<String> = OnceLock::new();
    BODY.get_or_init(|| {
        let rows: Vec<Value> = (0..200)
            .map(|i| json!({"id": format!("c-{i}"), "name": format!("Customer number {i}")}))
            .collect();
        json!({"total": 200, "customers": rows}).to_string()
    })
}

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
id = "crm"
max_result_bytes = 1000

[[tenant.toolset.tool]]
name = "list_customers"
description = "Every customer."
downstream = {{ kind = "rest", method = "GET", url = "http://{api}/customers" }}

[[tenant.toolset.tool]]
name = "strict_list"
description = "Every customer, or nothing."
max_result_bytes = 500
on_oversize = "refuse"
downstream = {{ kind = "rest", method = "GET", url = "http://{api}/customers" }}

[[tenant.toolset.tool]]
name = "roomy_list"
description = "Every customer, whatever the size."
max_result_bytes = 100000
downstream = {{ kind = "rest", method = "GET", url = "http://{api}/customers" }}

[[tenant.assignment]]
client = "app"
toolset = "crm"
"#
    )
}

async fn start() -> (TestServer, Downstream) {
    let api = Downstream::new()
        .route("/customers", Answer::Json(customers()))
        .start()
        .await;
    let server = TestServer::toml(&config(api.addr)).start().await;
    (server, api)
}

async fn call(server: &TestServer, tool: &str) -> Value {
    let id = support::session(server.addr, support::MCP, "2025-11-25").await;
    let reply = support::post(
        server.addr,
        support::MCP,
        &[
            ("mcp-session-id", &id),
            ("mcp-protocol-version", "2025-11-25"),
        ],
        &support::call_body(1, tool, json!({})),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    reply.json()["result"].clone()
}

#[tokio::test]
async fn an_oversized_result_is_cut_from_the_end_of_its_array_with_meta_saying_so() {
    let (server, _api) = start().await;
    let result = call(&server, "list_customers").await;
    assert_eq!(result["isError"], false, "{result}");
    let text = result["content"][0]["text"].as_str().expect("text");
    assert!(text.len() <= 1000, "{} bytes", text.len());
    let from_text: Value = serde_json::from_str(text).expect("the text is JSON");
    assert_eq!(
        from_text, result["structuredContent"],
        "text and structuredContent agree"
    );
    let kept = from_text["customers"].as_array().expect("array").len();
    assert!(kept > 0 && kept < 200, "{kept}");
    assert_eq!(from_text["total"], 200);
    assert_eq!(from_text["customers"][0]["id"], "c-0");
    let original = customers().len();
    assert_eq!(
        result["_meta"]["io.sluice/truncated"],
        json!({"limitBytes": 1000, "originalBytes": original, "resultBytes": text.len(),
               "cut": [{"path": "/customers", "kept": kept, "of": 200}]})
    );

    // Under a roomy limit nothing is cut and no _meta is added.
    let whole = call(&server, "roomy_list").await;
    assert!(whole.get("_meta").is_none(), "{whole}");
    assert_eq!(
        whole["structuredContent"]["customers"]
            .as_array()
            .map(Vec::len),
        Some(200)
    );
}

#[tokio::test]
async fn a_refusing_tool_answers_a_tool_error_and_rest_cuts_the_same_way() {
    let (server, _api) = start().await;
    let refused = call(&server, "strict_list").await;
    assert_eq!(refused["isError"], true, "{refused}");
    let text = refused["content"][0]["text"].as_str().expect("text");
    assert!(text.contains("max_result_bytes (500)"), "{text}");

    let reply = support::send(
        server.addr,
        support::request(
            server.addr,
            Method::POST,
            "/runtime/acme/app/tools/list_customers",
            &[("content-type", "application/json")],
            "{}",
        ),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert!(reply.text().len() <= 1000);
    let body = reply.json();
    assert!(body["customers"].as_array().is_some_and(|c| c.len() < 200));
    let meta: Value =
        serde_json::from_str(reply.header("x-sluice-truncated")).expect("meta header");
    assert_eq!(meta["cut"][0]["path"], "/customers");
}
