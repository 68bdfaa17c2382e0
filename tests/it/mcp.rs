//! Integration tests: the MCP dispatcher driven directly (no HTTP in front of it), over a catalog
//! built from a TOML string and real downstream hyper servers on 127.0.0.1:0.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use serde_json::{json, Value};
use sluice::catalog::Snapshot;
use sluice::invoke::{CallContext, Invoker, InvokerConfig};
use sluice::jsonrpc::{self, Message};
use sluice::mcp::{
    stateless_meta, Dispatcher, DispatcherConfig, Era, NotificationEffect, Reply, Scope,
};

use crate::support::{Answer, Downstream};
use sluice::protocol::ProtocolVersion;

// === support ===

/// A downstream answering by path: `/echo` returns the request body, `/customer` a source-named
/// record, `/raw` an array, `/broken` a 500 with internals, `/garbage` HTML, `/slow` never.
async fn downstream() -> SocketAddr {
    Downstream::new()
        .route("/echo", Answer::Echo)
        .route(
            "/customer",
            Answer::Plain(
                200,
                r#"{"cust_name":"Ada","cust_age":36,"secret_internal":"x"}"#,
            ),
        )
        .route("/raw", Answer::Plain(200, "[1,2]"))
        .route(
            "/broken",
            Answer::Plain(500, r#"{"error":"db password hunter2 at 10.0.0.7"}"#),
        )
        .route(
            "/garbage",
            Answer::Plain(200, "<html>stack trace at 10.0.0.7"),
        )
        .fallback(Answer::Stall)
        .start()
        .await
        .addr
}

fn config_text(base: &str) -> String {
    format!(
        r#"
[[tenant]]
id = "t1"
auth = {{ anonymous = true }}
[[tenant.client]]
id = "c1"
system_prompt = "Answer in English."
[[tenant.client]]
id = "c2"

[[tenant.toolset]]
id = "crm"
description = "Customer records."
system_prompt = "You are a CRM assistant."
[[tenant.toolset.tool]]
name = "echo"
description = "Echo the query."
downstream = {{ kind = "rest", method = "POST", url = "{base}/echo" }}
[[tenant.toolset.tool.input]]
source = "q"
exposed = "query"
required = true
[[tenant.toolset.tool]]
name = "get_customer"
description = "One customer."
downstream = {{ kind = "rest", method = "GET", url = "{base}/customer" }}
[[tenant.toolset.tool.output]]
source = "cust_name"
exposed = "name"
[[tenant.toolset.tool.output]]
source = "cust_age"
exposed = "age"
type = "integer"
[[tenant.toolset.tool]]
name = "raw"
description = "An array."
downstream = {{ kind = "rest", method = "GET", url = "{base}/raw" }}
[[tenant.toolset.tool]]
name = "broken"
description = "Fails."
downstream = {{ kind = "rest", method = "GET", url = "{base}/broken" }}
[[tenant.toolset.tool]]
name = "garbage"
description = "Answers HTML."
downstream = {{ kind = "rest", method = "GET", url = "{base}/garbage" }}
[[tenant.toolset.tool]]
name = "slow"
description = "Never answers."
downstream = {{ kind = "rest", method = "GET", url = "{base}/slow", timeout_ms = 200 }}
[[tenant.toolset.tool]]
name = "lazy_order"
description = "Lazy schema."
schema_mode = "lazy"
downstream = {{ kind = "rest", method = "POST", url = "{base}/echo" }}
[[tenant.toolset.tool.input]]
source = "item"
exposed = "item"

[[tenant.toolset]]
id = "billing"
system_prompt = "Be exact with money."
[[tenant.toolset.tool]]
name = "invoice"
downstream = {{ kind = "rest", method = "POST", url = "{base}/echo" }}

[[tenant.toolset]]
id = "ops"
description = "Operations."
system_prompt = "Ops prompt."
[[tenant.toolset.tool]]
name = "restart"
downstream = {{ kind = "rest", method = "POST", url = "{base}/echo" }}

[[tenant.toolset]]
id = "no_prompt"
[[tenant.toolset.tool]]
name = "np_tool"
downstream = {{ kind = "rest", method = "POST", url = "{base}/echo" }}

[[tenant.toolset]]
id = "unpublished_only"
system_prompt = "Nobody sees this."
[[tenant.toolset.tool]]
name = "secret_tool"
published = false
downstream = {{ kind = "rest", method = "POST", url = "{base}/echo" }}

[[tenant.assignment]]
client = "c1"
toolset = "crm"
include_client_prompt = true
[[tenant.assignment]]
client = "c1"
toolset = "billing"
[[tenant.assignment]]
client = "c1"
toolset = "ops"
custom_prompt = "Only restart on request."
custom_prompt_mode = "override"
[[tenant.assignment]]
client = "c1"
toolset = "no_prompt"
[[tenant.assignment]]
client = "c1"
toolset = "unpublished_only"
"#
    )
}

struct Fixture {
    dispatcher: Dispatcher,
    snapshot: Snapshot,
}

async fn fixture(page_size: usize) -> Fixture {
    let addr = downstream().await;
    let config = sluice::config::parse(&config_text(&format!("http://{addr}")), "t").unwrap();
    let snapshot = Snapshot::build(&config, 1, None).unwrap();
    let dispatcher = Dispatcher::new(
        DispatcherConfig {
            page_size,
            ttl_ms: 1500,
            server_version: "9.9.9".to_owned(),
            instructions: Some("Use the CRM tools.".to_owned()),
            ..DispatcherConfig::default()
        },
        Arc::new(Invoker::new(InvokerConfig::default())),
    );
    Fixture {
        dispatcher,
        snapshot,
    }
}

/// A JSON-RPC error as the transport would write it: code, message, data.
#[derive(Debug)]
struct Failure {
    code: i32,
    message: String,
    data: Option<Value>,
}

const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

impl Fixture {
    /// Sends `method` with `params` (JSON text, or "" for none) as client `client` in `era`.
    async fn send_as(
        &self,
        client: &str,
        era: Era,
        method: &str,
        params: &str,
    ) -> Result<Reply, Failure> {
        let mut body = if params.is_empty() {
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}"}}"#)
        } else {
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{params}}}"#)
        }
        .into_bytes();
        let Ok(Message::Request { method, params, .. }) = jsonrpc::parse(&mut body) else {
            panic!("not a request");
        };
        let ctx = CallContext::new(None);
        let caller = sluice::auth::Caller::anonymous("t1".into(), "c1".into());
        let scope = Scope {
            tenant: "t1",
            client,
            snapshot: &self.snapshot,
            view: self.snapshot.client("t1", client),
            era,
            version: match era {
                Era::Handshake => ProtocolVersion::V2025_11_25,
                Era::Stateless => ProtocolVersion::V2026_07_28,
            },
            call: &ctx,
            caller: &caller,
            session: None,
            surface: sluice::audit::Surface::Mcp,
            stream_sources: false,
            platform: false,
            tool_error: None,
            progress: None,
        };
        self.dispatcher
            .request(&scope, method, params.as_ref())
            .await
            .map_err(|err| Failure {
                code: err.code().0,
                message: err.to_string(),
                data: err.data().map(|d| serde_json::from_slice(&d).unwrap()),
            })
    }

    /// A handshake-era request as client c1; the result as JSON.
    async fn result(&self, method: &str, params: &str) -> Value {
        self.result_in(Era::Handshake, method, params).await
    }

    async fn result_in(&self, era: Era, method: &str, params: &str) -> Value {
        match self.send_as("c1", era, method, params).await {
            Ok(Reply::Result(bytes)) => json_of(&bytes),
            Ok(Reply::Initialized { result, .. }) => json_of(&result),
            other => panic!("{method}: {other:?}"),
        }
    }

    async fn error_in(&self, era: Era, method: &str, params: &str) -> Failure {
        match self.send_as("c1", era, method, params).await {
            Err(failure) => failure,
            Ok(reply) => panic!("{method} {params}: expected an error, got {reply:?}"),
        }
    }

    async fn error(&self, method: &str, params: &str) -> Failure {
        self.error_in(Era::Handshake, method, params).await
    }

    /// Every page of a list, following `nextCursor`; returns the items and the page count.
    async fn all_pages(&self, era: Era, method: &str, key: &str) -> (Vec<Value>, usize) {
        let mut items = Vec::new();
        let mut cursor: Option<String> = None;
        let mut n_pages = 0;
        loop {
            let mut members = Vec::new();
            if let Some(cursor) = &cursor {
                members.push(format!(r#""cursor":{}"#, json!(cursor)));
            }
            if era == Era::Stateless {
                members.push(META.to_owned());
            }
            let page = self
                .result_in(era, method, &format!("{{{}}}", members.join(",")))
                .await;
            n_pages += 1;
            items.extend(page[key].as_array().unwrap().iter().cloned());
            match page.get("nextCursor") {
                Some(next) => cursor = Some(next.as_str().unwrap().to_owned()),
                None => break,
            }
        }
        (items, n_pages)
    }
}

fn json_of(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes)
        .unwrap_or_else(|err| panic!("not JSON ({err}): {}", String::from_utf8_lossy(bytes)))
}

fn names(items: &[Value], key: &str) -> Vec<String> {
    items
        .iter()
        .map(|item| item[key].as_str().unwrap().to_owned())
        .collect()
}

/// Whether `value` conforms to the (object) `schema` as the catalog generates it: declared
/// properties with their types, required members present, no undeclared members unless allowed.
fn conforms(value: &Value, schema: &Value) -> bool {
    let type_ok = match schema["type"].as_str() {
        Some("object") => value.is_object(),
        Some("string") => value.is_string(),
        Some("integer") => value.is_i64() || value.is_u64(),
        Some("number") => value.is_number(),
        Some("boolean") => value.is_boolean(),
        Some("array") => value.is_array(),
        _ => true,
    };
    if !type_ok {
        return false;
    }
    let Some(object) = value.as_object() else {
        return true;
    };
    let properties = schema["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let required_ok = schema["required"]
        .as_array()
        .map(|r| r.iter().all(|k| object.contains_key(k.as_str().unwrap())))
        .unwrap_or(true);
    required_ok
        && object.iter().all(|(k, v)| match properties.get(k) {
            Some(sub) => conforms(v, sub),
            None => schema["additionalProperties"] != json!(false),
        })
}

// === lifecycle ===

#[tokio::test]
async fn initialize_negotiates_versions() {
    let f = fixture(100).await;
    let table = [
        ("2025-11-25", "2025-11-25"),
        ("2025-06-18", "2025-06-18"),
        ("2025-03-26", "2025-03-26"),
        ("2024-11-05", "2024-11-05"),
        // Unknown, older-than-supported and newer-era versions get the latest handshake version.
        ("2024-10-07", "2025-11-25"),
        ("2023-01-01", "2025-11-25"),
        ("2026-07-28", "2025-11-25"),
        ("banana", "2025-11-25"),
    ];
    for (requested, expected) in table {
        let params = format!(
            r#"{{"protocolVersion":"{requested}","capabilities":{{"roots":{{}}}},"clientInfo":{{"name":"c","version":"1"}}}}"#
        );
        let Ok(Reply::Initialized {
            result,
            version,
            client_info,
            client_capabilities,
        }) = f.send_as("c1", Era::Handshake, "initialize", &params).await
        else {
            panic!("initialize {requested}");
        };
        assert_eq!(version, expected, "{requested}");
        assert!(ProtocolVersion::HANDSHAKE.contains(&version));
        let result = json_of(&result);
        assert_eq!(result["protocolVersion"], expected, "{requested}");
        assert_eq!(json_of(&client_info), json!({"name": "c", "version": "1"}));
        assert_eq!(json_of(&client_capabilities), json!({"roots": {}}));
        assert_eq!(
            result["serverInfo"],
            json!({"name": "sluice", "version": "9.9.9"})
        );
        assert_eq!(result["instructions"], "Use the CRM tools.");
        assert_eq!(result["capabilities"]["tools"]["listChanged"], true);
        assert_eq!(result["capabilities"]["resources"]["listChanged"], true);
        assert_eq!(result["capabilities"]["prompts"]["listChanged"], true);
        assert_eq!(
            result["capabilities"]["experimental"]["bos/source-results/v1"]["maxConcurrentSources"],
            8
        );
        // Handshake-era results carry none of the stateless members.
        assert!(result.get("resultType").is_none());
    }
    let err = f.error("initialize", r#"{"capabilities":{}}"#).await;
    assert_eq!(err.code, -32602);
}

#[tokio::test]
async fn era_gates_of_lifecycle_methods() {
    let f = fixture(100).await;
    assert_eq!(f.result("ping", "").await, json!({}));
    assert_eq!(f.result("ping", "{}").await, json!({}));
    assert_eq!(
        f.error_in(Era::Stateless, "ping", &format!("{{{META}}}"))
            .await
            .code,
        -32601
    );
    assert_eq!(
        f.error_in(
            Era::Stateless,
            "initialize",
            &format!(r#"{{"protocolVersion":"2025-11-25",{META}}}"#)
        )
        .await
        .code,
        -32601
    );
    assert_eq!(f.error("server/discover", "").await.code, -32601);
    assert_eq!(
        f.error("subscriptions/listen", r#"{"notifications":{}}"#)
            .await
            .code,
        -32601
    );
    assert_eq!(f.error("nope/nope", "").await.code, -32601);
    assert_eq!(
        f.error_in(Era::Stateless, "nope/nope", "").await.code,
        -32601
    );
}

#[tokio::test]
async fn server_discover_lists_both_eras_with_caching_hints() {
    let f = fixture(100).await;
    let result = f
        .result_in(Era::Stateless, "server/discover", &format!("{{{META}}}"))
        .await;
    assert_eq!(
        result["supportedVersions"],
        json!([
            "2026-07-28",
            "2025-11-25",
            "2025-06-18",
            "2025-03-26",
            "2024-11-05"
        ])
    );
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["ttlMs"], 1500);
    assert_eq!(result["cacheScope"], "private");
    assert_eq!(result["instructions"], "Use the CRM tools.");
    assert_eq!(result["capabilities"]["tools"]["listChanged"], true);
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"],
        json!({"name": "sluice", "version": "9.9.9"})
    );
}

// === tools ===

#[tokio::test]
async fn tools_list_pages_cover_the_listing_once_in_order() {
    let small = fixture(2).await;
    let big = fixture(100).await;
    let (all, n_pages) = big.all_pages(Era::Handshake, "tools/list", "tools").await;
    assert_eq!(n_pages, 1);
    assert_eq!(
        names(&all, "name"),
        [
            "broken",
            "discover_tool_schema",
            "echo",
            "garbage",
            "get_customer",
            "invoice",
            "lazy_order",
            "np_tool",
            "raw",
            "restart",
            "slow"
        ]
    );
    assert!(all.iter().all(|t| t["description"].is_string()), "{all:?}");
    assert!(all.iter().all(|t| t["inputSchema"]["type"] == "object"));
    for era in [Era::Handshake, Era::Stateless] {
        let (paged, n_pages) = small.all_pages(era, "tools/list", "tools").await;
        assert_eq!(n_pages, 6);
        assert_eq!(paged, all);
    }
    // Without a cursor, the first page; a page never exceeds the page size.
    let first = small.result("tools/list", "").await;
    assert_eq!(first["tools"].as_array().unwrap().len(), 2);
    assert!(first["nextCursor"].is_string());
}

#[tokio::test]
async fn bad_cursors_are_invalid_params() {
    let f = fixture(2).await;
    let tools_cursor = f.result("tools/list", "{}").await["nextCursor"].clone();
    let prompts_cursor = f.result("prompts/list", "{}").await["nextCursor"].clone();
    for (method, cursor) in [
        ("tools/list", json!("garbage!")),
        ("tools/list", json!("")),
        ("tools/list", json!(7)),
        ("tools/list", prompts_cursor.clone()),
        ("prompts/list", tools_cursor.clone()),
        ("resources/list", prompts_cursor),
    ] {
        let err = f.error(method, &format!(r#"{{"cursor":{cursor}}}"#)).await;
        assert_eq!(err.code, -32602, "{method} {cursor}");
    }
    // A cursor of another snapshot (another client's listing) is expired, not reused.
    let other = f
        .send_as(
            "c2",
            Era::Handshake,
            "tools/list",
            &format!(r#"{{"cursor":{tools_cursor}}}"#),
        )
        .await;
    assert!(matches!(other, Err(Failure { code: -32602, .. })));
}

#[tokio::test]
async fn tools_call_success_with_structured_content() {
    let f = fixture(100).await;
    let result = f
        .result(
            "tools/call",
            r#"{"name":"echo","arguments":{"query":"hello \"world\""}}"#,
        )
        .await;
    assert_eq!(result["isError"], false);
    assert_eq!(result["structuredContent"], json!({"q": "hello \"world\""}));
    let text = result["content"][0]["text"].as_str().unwrap();
    assert_eq!(result["content"][0]["type"], "text");
    assert_eq!(json_of(text.as_bytes()), result["structuredContent"]);

    // Translated output conforms to the listed outputSchema.
    let (tools, _) = f.all_pages(Era::Handshake, "tools/list", "tools").await;
    let schema =
        tools.iter().find(|t| t["name"] == "get_customer").unwrap()["outputSchema"].clone();
    let result = f.result("tools/call", r#"{"name":"get_customer"}"#).await;
    assert_eq!(result["isError"], false);
    assert_eq!(
        result["structuredContent"],
        json!({"name": "Ada", "age": 36})
    );
    assert!(conforms(&result["structuredContent"], &schema), "{schema}");

    // A non-object result has text content only.
    let result = f
        .result("tools/call", r#"{"name":"raw","arguments":null}"#)
        .await;
    assert_eq!(result["isError"], false);
    assert!(result.get("structuredContent").is_none());
    assert_eq!(
        json_of(result["content"][0]["text"].as_str().unwrap().as_bytes()),
        json!([1, 2])
    );
}

#[tokio::test]
async fn tools_call_failures_are_error_results_without_internals() {
    let f = fixture(100).await;
    let cases = [
        (r#"{"name":"broken"}"#, "status 500"),
        (r#"{"name":"garbage"}"#, "invalid response"),
        (r#"{"name":"slow"}"#, "did not answer within 200 ms"),
        (
            r#"{"name":"echo","arguments":{}}"#,
            "Invalid argument 'query'",
        ),
        (
            r#"{"name":"echo","arguments":{"query":5}}"#,
            "Invalid argument 'query'",
        ),
        (
            r#"{"name":"lazy_order","arguments":{"_schema_discovery":true}}"#,
            "discover_tool_schema",
        ),
    ];
    for (params, expected) in cases {
        let result = f.result("tools/call", params).await;
        assert_eq!(result["isError"], true, "{params}");
        assert!(result.get("structuredContent").is_none(), "{params}");
        let text = result["content"][0]["text"].as_str().unwrap();
        assert!(text.contains(expected), "{params}: {text}");
        let all = result.to_string();
        for secret in [
            "hunter2",
            "10.0.0.7",
            "127.0.0.1",
            "html",
            "secret_internal",
        ] {
            assert!(!all.contains(secret), "{params} leaks {secret}: {all}");
        }
    }
}

#[tokio::test]
async fn tools_call_protocol_errors() {
    let f = fixture(100).await;
    for (params, code) in [
        (r#"{"name":"nope"}"#, -32602),
        (r#"{"name":"secret_tool"}"#, -32602),
        (r#"{"arguments":{}}"#, -32602),
        (r#"{"name":"echo","arguments":[1]}"#, -32602),
        (r#"{"name":"echo","arguments":"q"}"#, -32602),
        (r#"[1]"#, -32602),
        ("", -32602),
    ] {
        let err = f.error("tools/call", params).await;
        assert_eq!(err.code, code, "{params}");
    }
    let err = f.error("tools/call", r#"{"name":"nope"}"#).await;
    assert_eq!(err.message, "Unknown tool: nope");
    // A client without assignments sees no tools at all.
    let other = f
        .send_as("c2", Era::Handshake, "tools/call", r#"{"name":"echo"}"#)
        .await;
    assert!(matches!(other, Err(Failure { code: -32602, .. })));
    let Ok(Reply::Result(list)) = f.send_as("c2", Era::Handshake, "tools/list", "").await else {
        panic!("tools/list for c2");
    };
    assert_eq!(json_of(&list), json!({"tools": []}));
}

#[tokio::test]
async fn discover_tool_schema_answers_from_the_catalog() {
    let f = fixture(100).await;
    let result = f
        .result(
            "tools/call",
            r#"{"name":"discover_tool_schema","arguments":{"tool_id":"lazy_order"}}"#,
        )
        .await;
    assert_eq!(result["isError"], false);
    let answer = &result["structuredContent"];
    assert_eq!(answer["tool_id"], "lazy_order");
    assert_eq!(
        answer["inputSchema"]["properties"]["item"]["type"],
        "string"
    );
    assert_eq!(answer["schemaHash"].as_str().unwrap().len(), 64);
    assert_eq!(
        json_of(result["content"][0]["text"].as_str().unwrap().as_bytes()),
        *answer
    );
    for arguments in [r#"{"tool_id":"nope"}"#, "{}", r#"{"tool_id":1}"#] {
        let result = f
            .result(
                "tools/call",
                &format!(r#"{{"name":"discover_tool_schema","arguments":{arguments}}}"#),
            )
            .await;
        assert_eq!(result["isError"], true, "{arguments}");
    }
}

// === resources and prompts ===

#[tokio::test]
async fn prompt_resources_follow_the_visibility_rules() {
    let f = fixture(100).await;
    let (resources, _) = f
        .all_pages(Era::Handshake, "resources/list", "resources")
        .await;
    // no_prompt (null prompt) and unpublished_only (no visible tool) are absent.
    assert_eq!(names(&resources, "name"), ["billing", "crm", "ops"]);
    assert_eq!(
        resources[1],
        json!({"uri": "sluice://prompts/crm", "name": "crm", "description": "Customer records.",
               "mimeType": "text/markdown"})
    );
    assert!(resources.iter().all(|r| r["description"].is_string()));

    let read = f
        .result("resources/read", r#"{"uri":"sluice://prompts/crm"}"#)
        .await;
    assert_eq!(
        read,
        json!({"contents": [{"uri": "sluice://prompts/crm", "mimeType": "text/markdown",
               "text": "You are a CRM assistant.\n\nAnswer in English."}]})
    );
    let read = f
        .result("resources/read", r#"{"uri":"sluice://prompts/%6Fps"}"#)
        .await;
    assert_eq!(read["contents"][0]["text"], "Only restart on request.");

    for uri in [
        "sluice://prompts/no_prompt",
        "sluice://prompts/unpublished_only",
        "sluice://prompts/x",
        "file:///etc/passwd",
        "sluice://prompts/%FF",
    ] {
        let err = f
            .error("resources/read", &format!(r#"{{"uri":"{uri}"}}"#))
            .await;
        assert_eq!(err.code, -32002, "{uri}");
        assert_eq!(err.data, Some(json!({"uri": uri})));
        let err = f
            .error_in(
                Era::Stateless,
                "resources/read",
                &format!(r#"{{"uri":"{uri}",{META}}}"#),
            )
            .await;
        assert_eq!(err.code, -32602, "{uri}");
        assert_eq!(err.data, Some(json!({"uri": uri})));
    }
    assert_eq!(f.error("resources/read", "{}").await.code, -32602);

    let Ok(Reply::Result(empty)) = f.send_as("c2", Era::Handshake, "resources/list", "").await
    else {
        panic!("resources/list for c2");
    };
    assert_eq!(json_of(&empty), json!({"resources": []}));
}

#[tokio::test]
async fn prompts_mirror_the_resources() {
    let f = fixture(2).await;
    let (prompts, n_pages) = f.all_pages(Era::Handshake, "prompts/list", "prompts").await;
    assert_eq!(n_pages, 2);
    assert_eq!(names(&prompts, "name"), ["billing", "crm", "ops"]);
    assert_eq!(
        prompts[0]["description"],
        "System prompt of the 'billing' toolset."
    );
    let (resources, n_pages) = f
        .all_pages(Era::Stateless, "resources/list", "resources")
        .await;
    assert_eq!(n_pages, 2);
    assert_eq!(names(&resources, "name"), names(&prompts, "name"));

    let got = f
        .result("prompts/get", r#"{"name":"crm","arguments":{"x":"y"}}"#)
        .await;
    assert_eq!(
        got,
        json!({"description": "Customer records.", "messages": [{"role": "user",
               "content": {"type": "text", "text": "You are a CRM assistant.\n\nAnswer in English."}}]})
    );
    for name in ["no_prompt", "unpublished_only", "nope"] {
        let err = f
            .error("prompts/get", &format!(r#"{{"name":"{name}"}}"#))
            .await;
        assert_eq!(err.code, -32602, "{name}");
        assert_eq!(err.message, format!("Unknown prompt: {name}"));
    }
}

// === stateless shaping ===

#[tokio::test]
async fn stateless_results_carry_result_type_server_info_and_cache_hints() {
    let f = fixture(100).await;
    let server_info = json!({"name": "sluice", "version": "9.9.9"});
    let cases = [
        ("tools/list", format!("{{{META}}}"), true),
        ("resources/list", format!("{{{META}}}"), true),
        ("prompts/list", format!("{{{META}}}"), true),
        (
            "resources/read",
            format!(r#"{{"uri":"sluice://prompts/crm",{META}}}"#),
            true,
        ),
        ("server/discover", format!("{{{META}}}"), true),
        ("prompts/get", format!(r#"{{"name":"crm",{META}}}"#), false),
        ("tools/call", format!(r#"{{"name":"raw",{META}}}"#), false),
        (
            "tools/call",
            format!(r#"{{"name":"broken",{META}}}"#),
            false,
        ),
    ];
    for (method, params, cacheable) in &cases {
        let result = f.result_in(Era::Stateless, method, params).await;
        assert_eq!(result["resultType"], "complete", "{method}");
        assert_eq!(
            result["_meta"]["io.modelcontextprotocol/serverInfo"], server_info,
            "{method}"
        );
        if *cacheable {
            assert_eq!(result["ttlMs"], 1500, "{method}");
            assert_eq!(result["cacheScope"], "private", "{method}");
        } else {
            assert!(result.get("ttlMs").is_none(), "{method}");
            assert!(result.get("cacheScope").is_none(), "{method}");
        }
    }
    // The same methods in the handshake era: none of those members.
    for (method, params, _) in &cases {
        if *method == "server/discover" {
            continue;
        }
        let result = f.result_in(Era::Handshake, method, params).await;
        for member in ["resultType", "_meta", "ttlMs", "cacheScope"] {
            assert!(result.get(member).is_none(), "{method} has {member}");
        }
    }
}

#[tokio::test]
async fn stateless_meta_validation_on_real_messages() {
    let cases = [
        (format!(r#"{{"name":"x",{META}}}"#), Ok(())),
        (r#"{"name":"x"}"#.to_owned(), Err(-32602)),
        (
            r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-06-18","io.modelcontextprotocol/clientCapabilities":{}}}"#.to_owned(),
            Err(-32022),
        ),
    ];
    for (params, expected) in cases {
        let mut body =
            format!(r#"{{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{params}}}"#)
                .into_bytes();
        let Ok(Message::Request {
            params: payload, ..
        }) = jsonrpc::parse(&mut body)
        else {
            panic!();
        };
        let got = stateless_meta(payload.as_ref())
            .map(|_| ())
            .map_err(|e| e.code().0);
        assert_eq!(got, expected, "{params}");
    }
}

// === subscriptions and notifications ===

#[tokio::test]
async fn listen_returns_the_filter_and_builds_its_messages() {
    let f = fixture(100).await;
    let params = format!(
        r#"{{"notifications":{{"toolsListChanged":true,"resourceSubscriptions":["sluice://prompts/crm"]}},{META}}}"#
    );
    let Ok(Reply::Listen(filter)) = f
        .send_as("c1", Era::Stateless, "subscriptions/listen", &params)
        .await
    else {
        panic!("listen");
    };
    assert!(filter.tools_list_changed && !filter.prompts_list_changed);
    let ack = json_of(&f.dispatcher.acknowledged_message(&filter, br#""L1""#));
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true})
    );
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "L1"
    );
    let changed = json_of(
        &f.dispatcher
            .list_changed_message(Era::Stateless, Some(b"\"L1\"")),
    );
    assert_eq!(changed["method"], "notifications/tools/list_changed");
    assert_eq!(
        changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "L1"
    );
    let plain = json_of(&f.dispatcher.list_changed_message(Era::Handshake, None));
    assert_eq!(
        plain,
        json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    );
    let end = json_of(&f.dispatcher.listen_result(b"\"L1\""));
    assert_eq!(end["resultType"], "complete");
    assert_eq!(end["_meta"]["io.modelcontextprotocol/subscriptionId"], "L1");

    let err = f
        .error_in(
            Era::Stateless,
            "subscriptions/listen",
            &format!("{{{META}}}"),
        )
        .await;
    assert_eq!(err.code, -32602);
}

#[tokio::test]
async fn cancellation_names_the_request_id_as_its_json_text() {
    let f = fixture(100).await;
    let ctx = CallContext::new(None);
    let caller = sluice::auth::Caller::anonymous("t1".into(), "c1".into());
    let scope = |era| Scope {
        tenant: "t1",
        client: "c1",
        snapshot: &f.snapshot,
        view: f.snapshot.client("t1", "c1"),
        era,
        version: ProtocolVersion::V2025_11_25,
        call: &ctx,
        caller: &caller,
        session: None,
        surface: sluice::audit::Surface::Mcp,
        stream_sources: false,
        platform: false,
        tool_error: None,
        progress: None,
    };
    // Each request id as the in-flight request would hold it (OwnedId::as_json).
    for id in [
        r#""abc""#,
        "0",
        "7",
        r#""0""#,
        r#""a\"b""#,
        "-3",
        "18446744073709551615",
    ] {
        let mut request = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#).into_bytes();
        let Ok(Message::Request { id: parsed, .. }) = jsonrpc::parse(&mut request) else {
            panic!("{id}");
        };
        let expected = parsed.to_owned_id();
        let mut note = format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{id},"reason":"x"}}}}"#
        )
        .into_bytes();
        let Ok(Message::Notification { method, params }) = jsonrpc::parse(&mut note) else {
            panic!("{id}");
        };
        let effect = f
            .dispatcher
            .notification(&scope(Era::Handshake), method, params.as_ref());
        assert_eq!(
            effect,
            NotificationEffect::Cancel(Bytes::copy_from_slice(expected.as_json())),
            "{id}"
        );
    }
    for params in ["", "{}", r#"{"requestId":null}"#, r#"{"requestId":1.5}"#] {
        let mut note = if params.is_empty() {
            br#"{"jsonrpc":"2.0","method":"notifications/cancelled"}"#.to_vec()
        } else {
            format!(r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{params}}}"#)
                .into_bytes()
        };
        let Ok(Message::Notification { method, params: p }) = jsonrpc::parse(&mut note) else {
            panic!();
        };
        assert_eq!(
            f.dispatcher
                .notification(&scope(Era::Handshake), method, p.as_ref()),
            NotificationEffect::None,
            "{params}"
        );
    }
    let initialized = |era| {
        f.dispatcher
            .notification(&scope(era), "notifications/initialized", None)
    };
    assert_eq!(initialized(Era::Handshake), NotificationEffect::Initialized);
    assert_eq!(initialized(Era::Stateless), NotificationEffect::None);
    assert_eq!(
        f.dispatcher
            .notification(&scope(Era::Handshake), "notifications/other", None),
        NotificationEffect::None
    );
}
