//! Integration tests: input hardening (issue 13). Path arguments that would change the
//! downstream path, bytes after the message, repeated member names at any depth (MCP and REST
//! bodies), the bounded echo of names in errors, `/messages` with a session that has no
//! legacy stream, and the id of refusals in each era. Over real sockets on 127.0.0.1, against a downstream hyper server
//! that records every request it receives (so "nothing ran" is observed, not assumed).

use std::net::SocketAddr;

use http::Method;
use serde_json::{json, Value};

use crate::support::{
    call_body as call, modern_meta, open, Answer, Downstream, DownstreamBuilder, Fixture,
    ServerBuilder, Stack, Tools, MCP, MODERN,
};

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

// === sluice ===

fn config_text(downstream: SocketAddr) -> String {
    format!(
        r#"
[[tenant]]
id = "acme"
auth = {{ anonymous = true }}

[[tenant.client]]
id = "app"

[[tenant.toolset]]
id = "shop"
description = "Shop tools"
system_prompt = "Be brief."

[[tenant.toolset.tool]]
name = "get_item"
description = "One item's detail."
downstream = {{ kind = "rest", method = "GET", url = "http://{downstream}/items/{{id}}/detail" }}

[[tenant.toolset.tool.input]]
source = "id"
exposed = "id"
location = "path"
required = true

[[tenant.toolset.tool]]
name = "get_customer"
description = "One customer."
downstream = {{ kind = "rest", method = "GET", url = "http://{downstream}/customer" }}

[[tenant.toolset.tool]]
name = "place_order"
description = "Places an order."
downstream = {{ kind = "rest", method = "POST", url = "http://{downstream}/orders" }}

[[tenant.toolset.tool.input]]
source = "amount"
exposed = "amount"
type = "integer"

[[tenant.assignment]]
client = "app"
toolset = "shop"
"#
    )
}

/// The catalog of [`config_text`] over a downstream that records every request and answers
/// `{"ok":true}`, answering JSON when the client accepts both media types.
struct Shop;

impl Fixture for Shop {
    fn new() -> Self {
        Shop
    }

    fn downstream() -> DownstreamBuilder {
        Downstream::new().fallback(Answer::Json(r#"{"ok":true}"#))
    }

    fn text(&self, downstream: SocketAddr, _: Tools) -> String {
        config_text(downstream)
    }

    fn server(builder: ServerBuilder) -> ServerBuilder {
        builder.json_posts()
    }
}

/// sluice on 127.0.0.1:0 over a fresh downstream; shuts down when dropped.
type Sluice = Stack<Shop>;

impl Sluice {
    /// A fresh Streamable HTTP session (handshake era; `initialize` only).
    async fn session(&self) -> String {
        let reply = self.post(MCP, &[], INITIALIZE).await;
        assert_eq!(reply.status.as_u16(), 200, "{:?}", reply.body);
        let id = reply.header("mcp-session-id").to_owned();
        assert!(!id.is_empty(), "initialize minted no session");
        id
    }
}

// === point 3: path arguments ===

#[tokio::test]
async fn dot_and_empty_path_arguments_are_invalid_params_and_reach_no_downstream() {
    let sluice = Sluice::start().await;
    for (n, value) in ["..", ".", ""].into_iter().enumerate() {
        let id = n as u64 + 1;
        let reply = sluice
            .post(MCP, &[], &call(id, "get_item", json!({ "id": value })))
            .await;
        let body = reply.assert_error(200, -32602, json!(id));
        let message = body["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("'id'"), "the argument is named: {body}");
    }
    assert_eq!(sluice.downstream.seen(), Vec::<String>::new());

    // Everything else reaches the downstream as one encoded segment of the same path.
    for (value, expected) in [
        ("7", "/items/7/detail"),
        ("a/b?c#d%e", "/items/a%2Fb%3Fc%23d%25e/detail"),
        ("...", "/items/.../detail"),
        ("%2E%2E", "/items/%252E%252E/detail"),
        ("../x", "/items/..%2Fx/detail"),
    ] {
        let reply = sluice
            .post(MCP, &[], &call(9, "get_item", json!({ "id": value })))
            .await;
        assert_eq!(reply.status.as_u16(), 200);
        assert_eq!(reply.json()["result"]["isError"], false, "{value}");
        let seen = sluice.downstream.seen();
        assert_eq!(seen.last().map(String::as_str), Some(expected), "{value}");
    }
}

#[tokio::test]
async fn dot_and_empty_path_arguments_are_400_on_rest_and_reach_no_downstream() {
    let sluice = Sluice::start().await;
    let path = "/runtime/acme/app/tools/get_item";
    for value in ["..", ".", ""] {
        let body = json!({ "id": value }).to_string();
        let reply = sluice.post(path, &[], &body).await;
        let body = reply.assert_error(400, -32602, Value::Null);
        let message = body["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("'id'"), "the argument is named: {body}");
    }
    assert_eq!(sluice.downstream.seen(), Vec::<String>::new());
    let reply = sluice.post(path, &[], r#"{"id":"a b"}"#).await;
    assert_eq!(reply.status.as_u16(), 200);
    assert_eq!(sluice.downstream.seen(), vec!["/items/a%20b/detail"]);
}

// === point 4: JSON strictness ===

#[tokio::test]
async fn bytes_after_the_message_are_a_parse_error_even_after_a_nul() {
    let sluice = Sluice::start().await;
    let message = call(1, "get_customer", json!({}));
    for tail in [
        "\u{0}{\"zzz\":",
        "\u{0}",
        " \u{0} ",
        "\n{}",
        "x",
        "\u{0}\u{0}\u{0}",
    ] {
        let body = format!("{message}{tail}");
        let reply = sluice.post(MCP, &[], &body).await;
        reply.assert_error(400, -32700, Value::Null);
    }
    assert_eq!(sluice.downstream.seen(), Vec::<String>::new());
    // Trailing whitespace is fine.
    let reply = sluice.post(MCP, &[], &format!("{message} \r\n\t")).await;
    assert_eq!(reply.status.as_u16(), 200);
    assert_eq!(sluice.downstream.seen(), vec!["/customer"]);
}

#[tokio::test]
async fn repeated_names_inside_params_or_arguments_are_invalid_requests_and_run_nothing() {
    let sluice = Sluice::start().await;
    let in_params = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_customer","name":"place_order"}}"#;
    sluice
        .post(MCP, &[], in_params)
        .await
        .assert_error(400, -32600, json!(1));
    let in_arguments = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"place_order","arguments":{"amount":1,"amount":1000}}}"#;
    sluice
        .post(MCP, &[], in_arguments)
        .await
        .assert_error(400, -32600, json!(2));
    let escaped = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"place_order","arguments":{"amount":1,"\u0061mount":1000}}}"#;
    sluice
        .post(MCP, &[], escaped)
        .await
        .assert_error(400, -32600, json!(3));
    let top_level = r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"get_customer"},"x":1,"x":2}"#;
    sluice
        .post(MCP, &[], top_level)
        .await
        .assert_error(400, -32600, Value::Null);
    // The stateless era refuses them the same way.
    let modern = format!(
        r#"{{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{{"_meta":{},"name":"place_order","arguments":{{"amount":1,"amount":2}}}}}}"#,
        modern_meta()
    );
    let headers = [
        ("mcp-protocol-version", MODERN),
        ("mcp-method", "tools/call"),
        ("mcp-name", "place_order"),
    ];
    sluice
        .post(MCP, &headers, &modern)
        .await
        .assert_error(400, -32600, json!(5));
    assert_eq!(sluice.downstream.seen(), Vec::<String>::new());
}

#[tokio::test]
async fn rest_bodies_follow_the_same_strictness_and_run_nothing() {
    let sluice = Sluice::start().await;
    let path = "/runtime/acme/app/tools/place_order";
    for body in [
        r#"{"amount":1,"amount":1000}"#,
        r#"{"amount":1,"x":{"k":1,"k":2}}"#,
        "{\"amount\":1}\u{0}{\"amount\":1000}",
        "{\"amount\":1}\u{0}",
    ] {
        sluice
            .post(path, &[], body)
            .await
            .assert_error(400, -32602, Value::Null);
    }
    assert_eq!(sluice.downstream.seen(), Vec::<String>::new());
    let reply = sluice.post(path, &[], r#"{"amount":1}"#).await;
    assert_eq!(reply.status.as_u16(), 200);
    assert_eq!(sluice.downstream.seen(), vec!["/orders"]);
}

#[tokio::test]
async fn huge_names_are_echoed_cut_to_a_small_error() {
    let sluice = Sluice::start().await;
    let huge = "m".repeat(4_000_000);
    let limit = 1024;

    let body = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{huge}"}}"#);
    let reply = sluice.post(MCP, &[], &body).await;
    let error = reply.assert_error(200, -32601, json!(1));
    assert!(reply.body.len() < limit, "{} bytes", reply.body.len());
    let message = error["error"]["message"].as_str().unwrap_or_default();
    assert!(message.ends_with('…'), "{message}");

    for (method, params) in [
        ("tools/call", json!({ "name": huge })),
        ("prompts/get", json!({ "name": huge })),
        ("resources/read", json!({ "uri": huge })),
    ] {
        let body = json!({"jsonrpc":"2.0","id":2,"method":method,"params":params}).to_string();
        let reply = sluice.post(MCP, &[], &body).await;
        assert_eq!(reply.status.as_u16(), 200, "{method}");
        assert!(reply.json()["error"]["code"].is_i64(), "{method}");
        assert!(
            reply.body.len() < limit,
            "{method}: {} bytes",
            reply.body.len()
        );
    }
}

// === point 5: /messages with a Streamable HTTP session ===

#[tokio::test]
async fn messages_with_a_streamable_session_is_404_and_runs_nothing() {
    let sluice = Sluice::start().await;
    let session = sluice.session().await;
    let path = format!("/runtime/acme/app/messages?sessionId={session}");
    let body = call(3, "get_customer", json!({}));
    sluice
        .post(&path, &[], &body)
        .await
        .assert_error(404, -32000, Value::Null);

    // Holding a GET stream of its own does not make it a legacy session either.
    let get = sluice.request(
        Method::GET,
        MCP,
        &[
            ("accept", "text/event-stream"),
            ("mcp-session-id", &session),
        ],
        "",
    );
    let stream = open(sluice.addr, get).await;
    assert_eq!(stream.status().as_u16(), 200);
    sluice
        .post(&path, &[], &body)
        .await
        .assert_error(404, -32000, Value::Null);
    drop(stream);

    // The session itself is untouched, and nothing ran downstream.
    let reply = sluice
        .post(MCP, &[("mcp-session-id", &session)], &body)
        .await;
    assert_eq!(reply.status.as_u16(), 200);
    assert_eq!(sluice.downstream.seen(), vec!["/customer"]);
}

// === point 13: no id on unacceptable input in the handshake era ===

#[tokio::test]
async fn unsupported_protocol_version_has_no_id_in_the_handshake_era_and_keeps_it_stateless() {
    let sluice = Sluice::start().await;
    let ping = r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#;
    for version in ["2025-01-01", "1999-01-01", "", "latest"] {
        sluice
            .post(MCP, &[("mcp-protocol-version", version)], ping)
            .await
            .assert_error(400, -32000, Value::Null);
    }
    // Inside a session too.
    let session = sluice.session().await;
    sluice
        .post(
            MCP,
            &[
                ("mcp-session-id", &session),
                ("mcp-protocol-version", "2025-01-01"),
            ],
            ping,
        )
        .await
        .assert_error(400, -32000, Value::Null);

    // The stateless era keeps the id: an envelope naming an unsupported version (-32022),
    // and a stateless-era header without the envelope (-32602).
    let future = json!({"jsonrpc":"2.0","id":8,"method":"tools/list","params":{"_meta":{
        "io.modelcontextprotocol/protocolVersion": "2099-01-01",
        "io.modelcontextprotocol/clientCapabilities": {}}}})
    .to_string();
    sluice
        .post(
            MCP,
            &[
                ("mcp-protocol-version", "2099-01-01"),
                ("mcp-method", "tools/list"),
            ],
            &future,
        )
        .await
        .assert_error(400, -32022, json!(8));
    sluice
        .post(MCP, &[("mcp-protocol-version", MODERN)], ping)
        .await
        .assert_error(400, -32602, json!(7));
}

#[tokio::test]
async fn malformed_json_and_a_disallowed_origin_carry_no_id() {
    let sluice = Sluice::with(|config| {
        config.allowed_origins = vec!["https://app.example.com".into()];
    })
    .await;
    sluice
        .post(MCP, &[], r#"{"jsonrpc":"2.0","id":7,"method":"ping""#)
        .await
        .assert_error(400, -32700, Value::Null);
    sluice
        .post(
            MCP,
            &[("origin", "https://evil.example.com")],
            r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#,
        )
        .await
        .assert_error(403, -32000, Value::Null);
}
