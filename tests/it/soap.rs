//! Integration tests: SOAP tools (issue 18) over real sockets. sluice on 127.0.0.1:0 calls a
//! hyper SOAP stub started by the test; MCP `tools/call` and the REST surface answer what the
//! stub's envelopes say: results with arrays of one and of many and nil, faults of SOAP 1.1
//! and 1.2 on 500, 400 and 200, and the answers no real server sends on demand (malformed XML,
//! an empty body, a bare 503, a slow and a huge answer, a DTD entity bomb).

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::{
    call_body as call, full, Answer, Answered, Downstream, DownstreamBuilder, Fixture, Received,
    ServerBuilder, Stack, TempDir, Tools, MCP,
};

const SOAP11: &str = "http://schemas.xmlsoap.org/soap/envelope/";
const SOAP12: &str = "http://www.w3.org/2003/05/soap-envelope";

/// The stub's routes: each tool of the catalog posts to one.
const ROUTES: &[(&str, &str)] = &[
    ("get_order", "/orders"),
    ("get_order_12", "/orders12"),
    ("fault_500", "/fault500"),
    ("fault_200", "/fault200"),
    ("sender_400", "/sender400"),
    ("malformed", "/malformed"),
    ("empty", "/empty"),
    ("bare_503", "/bare503"),
    ("slow", "/slow"),
    ("huge", "/huge"),
    ("bomb", "/bomb"),
];

fn config_text(stub: SocketAddr) -> String {
    let mut text = String::from(
        r#"
[server]
downstream_max_answer_bytes = 65536

[[tenant]]
id = "acme"
auth = { anonymous = true }

[[tenant.client]]
id = "app"

[[tenant.toolset]]
id = "orders"
"#,
    );
    for (name, path) in ROUTES {
        let version = if name.ends_with("_12") || *name == "sender_400" {
            "1.2"
        } else {
            "1.1"
        };
        text.push_str(&format!(
            r#"
[[tenant.toolset.tool]]
name = "{name}"
description = "One order."
[tenant.toolset.tool.downstream]
kind = "soap"
url = "http://{stub}{path}"
version = "{version}"
action = "urn:orders#GetOrder"
operation = "o:GetOrder"
namespaces = {{ o = "urn:orders" }}
fault_details = ["o:OrderFault"]
timeout_ms = 500
[[tenant.toolset.tool.downstream.header]]
element = "o:Auth"
must_understand = true
[[tenant.toolset.tool.downstream.header.field]]
name = "Token"
value = "t0ken-value"
[[tenant.toolset.tool.input]]
source = "OrderId"
exposed = "order_id"
type = "integer"
required = true
[[tenant.toolset.tool.output]]
source = "Order/@id"
exposed = "id"
type = "integer"
[[tenant.toolset.tool.output]]
source = "Order/Total/#text"
exposed = "total"
type = "number"
[[tenant.toolset.tool.output]]
source = "Order/Total/@currency"
exposed = "currency"
[[tenant.toolset.tool.output]]
source = "Order/Note"
exposed = "note"
nillable = true
[[tenant.toolset.tool.output]]
source = "Order/Lines/Line[*]/Sku"
exposed = "lines[*].sku"
[[tenant.toolset.tool.output]]
source = "Order/Lines/Line[*]/Qty"
exposed = "lines[*].qty"
type = "integer"
"#
        ));
    }
    text.push_str(
        r#"
[[tenant.assignment]]
client = "app"
toolset = "orders"
"#,
    );
    text
}

fn envelope(ns: &str, body: &str) -> String {
    format!(
        r#"<?xml version="1.0" encoding="utf-8"?><e:Envelope xmlns:e="{ns}" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><e:Body>{body}</e:Body></e:Envelope>"#
    )
}

fn xml(status: u16, content_type: &str, body: String) -> Answered {
    let mut answer = full(status, body);
    if !content_type.is_empty() {
        answer.headers_mut().insert(
            http::header::CONTENT_TYPE,
            content_type.parse().expect("content type"),
        );
    }
    answer
}

/// The order the stub answers: one line for order 1, three for any other, a nil note.
fn order(request: &Received, ns: &str) -> String {
    let text = String::from_utf8_lossy(&request.body);
    let lines = if text.contains("<o:OrderId>1</o:OrderId>") {
        "<Line><Sku>A-1</Sku><Qty>2</Qty></Line>".to_owned()
    } else {
        (1..=3)
            .map(|n| format!("<Line><Sku>B-{n}</Sku><Qty>{n}</Qty></Line>"))
            .collect()
    };
    envelope(
        ns,
        &format!(
            r#"<o:GetOrderResponse xmlns:o="urn:orders"><o:Order id="7"><o:Total currency="EUR">12.50</o:Total><o:Note xsi:nil="true"/><o:Lines>{lines}</o:Lines></o:Order></o:GetOrderResponse>"#
        ),
    )
}

fn stub(request: Received) -> Answered {
    let fault11 = envelope(
        SOAP11,
        r#"<e:Fault><faultcode>e:Client</faultcode><faultstring>order 9 not found
	at com.example.Orders.find(Orders.java:42)</faultstring><detail><o:OrderFault xmlns:o="urn:orders"><o:Reason>missing</o:Reason></o:OrderFault><trace>java.lang.IllegalStateException</trace></detail></e:Fault>"#,
    );
    match request.uri.as_str() {
        "/orders" => xml(200, "text/xml; charset=utf-8", order(&request, SOAP11)),
        "/orders12" => xml(200, "application/soap+xml", order(&request, SOAP12)),
        "/fault500" => xml(500, "text/xml", fault11),
        "/fault200" => xml(200, "text/xml", fault11),
        "/sender400" => xml(
            400,
            "application/soap+xml",
            envelope(
                SOAP12,
                r#"<e:Fault><e:Code><e:Value>e:Sender</e:Value></e:Code><e:Reason><e:Text xml:lang="en">OrderId must be positive</e:Text></e:Reason></e:Fault>"#,
            ),
        ),
        "/malformed" => xml(200, "text/xml", "<e:Envelope><unclosed".to_owned()),
        "/empty" => xml(200, "text/xml", String::new()),
        "/bare503" => xml(503, "text/plain", "upstream down at 10.0.0.7".to_owned()),
        "/huge" => xml(
            200,
            "text/xml",
            envelope(SOAP11, &"<pad>xxxxxxxxxxxxxxxx</pad>".repeat(10_000)),
        ),
        "/bomb" => xml(
            200,
            "text/xml",
            r#"<?xml version="1.0"?><!DOCTYPE b [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]><e:Envelope xmlns:e="http://schemas.xmlsoap.org/soap/envelope/"><e:Body>&b;</e:Body></e:Envelope>"#.to_owned(),
        ),
        _ => full(404, ""),
    }
}

struct Orders;

impl Fixture for Orders {
    fn new() -> Self {
        Orders
    }

    fn downstream() -> DownstreamBuilder {
        Downstream::new()
            .route(
                "/slow",
                Answer::with(|_| async {
                    tokio::time::sleep(Duration::from_secs(5)).await;
                    full(200, "")
                }),
            )
            .fallback(Answer::with(|request| async move { stub(request) }))
    }

    fn text(&self, stub: SocketAddr, _: Tools) -> String {
        config_text(stub)
    }

    fn server(builder: ServerBuilder) -> ServerBuilder {
        builder.json_posts()
    }
}

type Sluice = Stack<Orders>;

impl Sluice {
    /// `tools/call` of `tool` with `order_id`: the result.
    async fn call(&self, tool: &str, order_id: i64) -> Value {
        let reply = self
            .post(MCP, &[], &call(1, tool, json!({ "order_id": order_id })))
            .await;
        assert_eq!(reply.status.as_u16(), 200, "{:?}", reply.body);
        reply.json()["result"].clone()
    }
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

#[tokio::test]
async fn a_soap_tool_lists_plain_json_schema_and_answers_structured_content() {
    let sluice = Sluice::start().await;
    let reply = sluice
        .post(
            MCP,
            &[],
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
        )
        .await;
    let tools = reply.json()["result"]["tools"].clone();
    let tool = tools
        .as_array()
        .and_then(|tools| tools.iter().find(|t| t["name"] == "get_order"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        tool["inputSchema"],
        json!({"type":"object","properties":{"order_id":{"type":"integer"}},"required":["order_id"]}),
        "the client sees no XML: {tool}"
    );

    for (tool, ns_version) in [("get_order", "1.1"), ("get_order_12", "1.2")] {
        let one = sluice.call(tool, 1).await;
        assert_eq!(one["isError"], false, "{one}");
        assert_eq!(
            one["structuredContent"],
            json!({"id":7,"total":12.5,"currency":"EUR","note":null,"lines":[{"sku":"A-1","qty":2}]}),
            "SOAP {ns_version}: an array of one is an array"
        );
        let text: Value = serde_json::from_str(text(&one)).expect("text is the JSON");
        assert_eq!(text, one["structuredContent"]);
        let many = sluice.call(tool, 2).await;
        assert_eq!(
            many["structuredContent"]["lines"],
            json!([{"sku":"B-1","qty":1},{"sku":"B-2","qty":2},{"sku":"B-3","qty":3}])
        );
    }

    // What went on the wire: the action per version, the configured header, the argument.
    let requests = sluice.downstream.requests();
    let first = requests
        .iter()
        .find(|r| r.uri == "/orders")
        .expect("a 1.1 call");
    assert_eq!(first.headers["soapaction"], "\"urn:orders#GetOrder\"");
    assert_eq!(first.headers["content-type"], "text/xml; charset=utf-8");
    let body = String::from_utf8_lossy(&first.body);
    assert!(
        body.contains(
            r#"<o:Auth soapenv:mustUnderstand="1"><o:Token>t0ken-value</o:Token></o:Auth>"#
        ),
        "{body}"
    );
    assert!(
        body.contains("<o:GetOrder><o:OrderId>1</o:OrderId></o:GetOrder>"),
        "{body}"
    );
    let v12 = requests
        .iter()
        .find(|r| r.uri == "/orders12")
        .expect("a 1.2 call");
    assert_eq!(
        v12.headers["content-type"],
        "application/soap+xml; charset=utf-8; action=\"urn:orders#GetOrder\""
    );
    assert!(v12.headers.get("soapaction").is_none());
}

#[tokio::test]
async fn faults_are_tool_errors_with_the_services_message_on_any_status() {
    let sluice = Sluice::start().await;
    for tool in ["fault_500", "fault_200"] {
        let result = sluice.call(tool, 9).await;
        assert_eq!(result["isError"], true, "{tool}: {result}");
        assert_eq!(
            text(&result),
            "SOAP fault Client: order 9 not found",
            "{tool}"
        );
        assert_eq!(
            result["structuredContent"],
            json!({"faultcode":"Client","faultstring":"order 9 not found",
                   "detail":{"OrderFault":{"Reason":"missing"}}}),
            "{tool}: the declared detail only, no stack trace"
        );
    }
    let result = sluice.call("sender_400", -1).await;
    assert_eq!(result["isError"], true);
    assert_eq!(
        result["structuredContent"],
        json!({"faultcode":"Sender","faultstring":"OrderId must be positive","detail":null})
    );

    // The REST surface: 502 with the fault as the error's data.
    let reply = sluice
        .post(
            "/runtime/acme/app/tools/fault_500",
            &[],
            r#"{"order_id":9}"#,
        )
        .await;
    assert_eq!(reply.status.as_u16(), 502, "{:?}", reply.body);
    let error = reply.json()["error"].clone();
    assert_eq!(error["data"]["faultstring"], "order 9 not found", "{error}");
}

#[tokio::test]
async fn broken_slow_huge_and_hostile_answers_are_the_errors_rest_downstreams_give() {
    let sluice = Sluice::start().await;
    for (tool, expected) in [
        (
            "malformed",
            "The downstream service returned an invalid response.",
        ),
        (
            "empty",
            "The downstream service returned an invalid response.",
        ),
        (
            "bare_503",
            "The downstream service answered with status 503.",
        ),
        (
            "slow",
            "The downstream service did not answer within 500 ms.",
        ),
        ("huge", "The downstream service's response was too large."),
        (
            "bomb",
            "The downstream service returned an invalid response.",
        ),
    ] {
        let result = sluice.call(tool, 1).await;
        assert_eq!(result["isError"], true, "{tool}: {result}");
        assert_eq!(text(&result), expected, "{tool}");
        assert!(
            result.get("structuredContent").is_none(),
            "{tool}: {result}"
        );
        let all = result.to_string();
        assert!(
            !all.contains("10.0.0.7") && !all.contains("127.0.0.1"),
            "{all}"
        );
    }
}

#[test]
fn sluice_check_validates_soap_tools_like_rest_ones() {
    let dir = TempDir::new("soap-check");
    let good = config_text("127.0.0.1:9".parse().expect("addr"));
    let path = dir.join("sluice.toml");
    std::fs::write(&path, &good).expect("write");
    let mut out = Vec::new();
    assert!(
        sluice::catalog::check(&path, &mut out),
        "{}",
        String::from_utf8_lossy(&out)
    );

    let bad = good.replacen("source = \"OrderId\"", "source = \"x:OrderId\"", 1);
    std::fs::write(&path, bad).expect("write");
    let mut out = Vec::new();
    assert!(!sluice::catalog::check(&path, &mut out));
    let text = String::from_utf8_lossy(&out);
    assert!(
        text.contains("tool 'get_order'")
            && text.contains(r#""x:OrderId": the prefix "x" is not declared"#),
        "{text}"
    );
}
