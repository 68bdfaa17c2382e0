//! Integration tests: the `[server]` settings of limits that were constants before
//! (`max_json_depth`, `downstream_max_answer_bytes`). Each test runs one server with the
//! defaults and one with a small limit, over real sockets on 127.0.0.1, and checks that the
//! small limit refuses what the default accepts, with the answer the limit always gave.

use std::net::SocketAddr;

use serde_json::{json, Value};

use crate::support::{call_body, Answer, Downstream, TestServer, MCP};

/// Tenant `acme` (anonymous), client `app`, one tool `get_customer` over `downstream`, after
/// the `[server]` lines `server`.
fn config_text(server: &str, downstream: SocketAddr) -> String {
    format!(
        r#"
[server]
{server}

[[tenant]]
id = "acme"
auth = {{ anonymous = true }}

[[tenant.client]]
id = "app"

[[tenant.toolset]]
id = "shop"
description = "Shop tools"

[[tenant.toolset.tool]]
name = "get_customer"
description = "One customer."
downstream = {{ kind = "rest", method = "GET", url = "http://{downstream}/customer" }}

[[tenant.assignment]]
client = "app"
toolset = "shop"
"#
    )
}

#[tokio::test]
async fn max_json_depth_refuses_deeper_bodies_as_parse_errors() {
    let api = Downstream::new()
        .fallback(Answer::Json(r#"{"ok":true}"#))
        .start()
        .await;
    // Depth 4: the message, `params`, `_meta` and the object inside it.
    let deep = r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"a":{}}}}"#;
    let shallow = r#"{"jsonrpc":"2.0","id":2,"method":"ping","params":{}}"#;

    let default = TestServer::toml(&config_text("", api.addr))
        .json_posts()
        .start()
        .await;
    let reply = default.post(MCP, &[], deep).await;
    assert_eq!(reply.status.as_u16(), 200, "{:?}", reply.text());
    assert_eq!(reply.json()["id"], 1);

    let limited = TestServer::toml(&config_text("max_json_depth = 3", api.addr))
        .json_posts()
        .start()
        .await;
    limited
        .post(MCP, &[], deep)
        .await
        .assert_error(400, -32700, Value::Null);
    let reply = limited.post(MCP, &[], shallow).await;
    assert_eq!(reply.status.as_u16(), 200, "{:?}", reply.text());
    assert_eq!(reply.json()["id"], 2);
}

#[tokio::test]
async fn downstream_max_answer_bytes_fails_larger_answers() {
    let big: &'static str =
        Box::leak(format!("{{\"name\":\"{}\"}}", "x".repeat(4096)).into_boxed_str());
    let api = Downstream::new().fallback(Answer::Json(big)).start().await;
    let rest = "/runtime/acme/app/tools/get_customer";

    let default = TestServer::toml(&config_text("", api.addr))
        .json_posts()
        .start()
        .await;
    let reply = default.post(rest, &[], "{}").await;
    assert_eq!(reply.status.as_u16(), 200, "{:?}", reply.text());
    assert_eq!(reply.json()["name"].as_str().map(str::len), Some(4096));
    let reply = default
        .post(MCP, &[], &call_body(1, "get_customer", json!({})))
        .await;
    assert_eq!(reply.status.as_u16(), 200, "{:?}", reply.text());
    assert_eq!(reply.json()["result"]["isError"], false);

    let text = config_text("downstream_max_answer_bytes = 1024", api.addr);
    let limited = TestServer::toml(&text).json_posts().start().await;
    limited
        .post(rest, &[], "{}")
        .await
        .assert_error(502, -32000, Value::Null);
    let reply = limited
        .post(MCP, &[], &call_body(2, "get_customer", json!({})))
        .await;
    assert_eq!(reply.status.as_u16(), 200, "{:?}", reply.text());
    let last = reply.json();
    assert_eq!(last["id"], 2, "{last}");
    assert_eq!(last["result"]["isError"], true, "{last}");
    assert_eq!(
        last["result"]["content"][0]["text"],
        "The downstream service's response was too large."
    );
}
