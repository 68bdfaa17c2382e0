//! Integration tests: the BOS platform endpoint (`/mcp/apps/bos/platform`) over real sockets —
//! API-key authentication that finds the tenant, per-caller contexts with signed handles, the three
//! platform tools, and `bos_execute` of a federated read streaming with the public context and
//! ending with the identity envelope (the published `bos/source-results/v1` contract §2, §5), in
//! both protocol eras.

use std::net::SocketAddr;
use std::ops::Deref;

use bytes::BytesMut;
use http::{Method, StatusCode};
use serde_json::{json, Value};
use sluice::auth::apikey::{self, GeneratedKey};
use sluice::sse::Decoder;

use crate::support::{
    full, request_to_host, rsa1, send, stateless_meta, Answer as Route, Downstream, TestServer,
};

const PLATFORM: &str = "/mcp/apps/bos/platform";
const PEPPER: &[u8] = b"bos-pepper";

/// A provider answering one page of two people, and `/echo` answering `{"echoed":true}`
/// (neither with a `Content-Type`).
async fn provider() -> SocketAddr {
    let people = || {
        let record = |id: &str, name: &str, mail: &str| {
            json!({"source_identity": "crm", "external_id": id,
                   "record_type": "person", "observed_at": "2026-11-30T10:00:00Z",
                   "fields": {"name": name, "mail": mail}})
        };
        json!({"records": [record("1", "Ada", "ada@example.com"),
                           record("2", "Alan", "alan@example.com")],
               "next_cursor": null})
    };
    Downstream::new()
        .route(
            "/echo",
            Route::with(|_| async { full(200, json!({"echoed": true}).to_string()) }),
        )
        .fallback(Route::with(move |_| {
            let body = people().to_string();
            async move { full(200, body) }
        }))
        .start()
        .await
        .addr
}

struct Sluice {
    server: TestServer,
    alice: GeneratedKey,
    bob: GeneratedKey,
}

impl Deref for Sluice {
    type Target = TestServer;
    fn deref(&self) -> &TestServer {
        &self.server
    }
}

const ISSUER: &str = "https://login.example.com/acme";

async fn start() -> Sluice {
    let provider = provider().await;
    let alice = apikey::generate(PEPPER);
    let bob = apikey::generate(PEPPER);
    let mut jwk =
        jsonwebtoken::jwk::Jwk::from_encoding_key(&rsa1(), jsonwebtoken::Algorithm::RS256)
            .expect("jwk");
    jwk.common.key_id = Some("k1".to_owned());
    let jwks = std::env::temp_dir().join(format!(
        "sluice-it-bos-{}-{}.json",
        std::process::id(),
        alice.id
    ));
    std::fs::write(&jwks, json!({ "keys": [jwk] }).to_string()).expect("jwks");
    let text = format!(
        r#"
[server]
api_key_pepper = "bos-pepper"
bos_handle_secret = "a-handle-secret-of-at-least-32-bytes!"

[[tenant]]
id = "acme"

[tenant.auth.jwt]
issuer = "{ISSUER}"
jwks_file = "{jwks}"
algorithms = ["RS256"]
client_claim = "azp"

[[tenant.bos_context]]
id = "carol-sales"
caller = "jwt:{ISSUER}|carol"
client = "agent"
application_name = "CRM"
installation_name = "US"
role_label = "Analyst"

[[tenant.client]]
id = "agent"
[[tenant.client.api_key]]
id = "{alice_id}"
hash = "{alice_hash}"
principal = "alice"

[[tenant.client]]
id = "desk"
[[tenant.client.api_key]]
id = "{bob_id}"
hash = "{bob_hash}"
principal = "bob"

[[tenant.bos_context]]
id = "sales"
caller = "apikey:alice"
client = "agent"
application_name = "CRM"
installation_name = "EU"
role_label = "Sales"
is_default = true

[[tenant.bos_context]]
id = "support"
caller = "apikey:bob"
client = "desk"
application_name = "Helpdesk"
installation_name = "EU"
role_label = "Support"

[[tenant.toolset]]
id = "people"

[[tenant.toolset.tool]]
name = "find_people"
description = "Federated people search."
[tenant.toolset.tool.downstream]
kind = "federated"
record_type = "person"
[[tenant.toolset.tool.downstream.source]]
source_type = "crm"
source_identity = "crm"
url = "http://{provider}/people"
[tenant.toolset.tool.downstream.source.fields]
display_name = "name"
email = "mail"

[[tenant.toolset.tool]]
name = "echo"
description = "Echo."
downstream = {{ kind = "rest", method = "GET", url = "http://{provider}/echo" }}

[[tenant.toolset.tool]]
name = "delete_person"
description = "A write: not a platform read tool."
downstream = {{ kind = "rest", method = "DELETE", url = "http://{provider}/echo" }}

[[tenant.assignment]]
client = "agent"
toolset = "people"
"#,
        alice_id = alice.id,
        alice_hash = alice.hash_hex,
        bob_id = bob.id,
        bob_hash = bob.hash_hex,
        jwks = jwks.display(),
    );
    let server = TestServer::toml(&text).start().await;
    Sluice { server, alice, bob }
}

struct Answer {
    status: StatusCode,
    headers: http::HeaderMap,
    /// JSON messages: the body, or each SSE event's data.
    messages: Vec<Value>,
}

async fn post(addr: SocketAddr, key: Option<&str>, body: &Value, stateless: bool) -> Answer {
    let mut headers = vec![
        ("accept", "application/json, text/event-stream"),
        ("content-type", "application/json"),
    ];
    let bearer = key.map(|key| format!("Bearer {key}"));
    if let Some(bearer) = &bearer {
        headers.push(("authorization", bearer));
    }
    if stateless {
        headers.push(("mcp-protocol-version", "2026-07-28"));
        headers.push(("mcp-method", body["method"].as_str().unwrap_or("")));
        headers.push(("mcp-name", body["params"]["name"].as_str().unwrap_or("")));
    }
    let req = request_to_host(
        "localhost",
        Method::POST,
        PLATFORM,
        &headers,
        &body.to_string(),
    );
    let reply = send(addr, req).await;
    let raw = &reply.body;
    let is_sse = reply.content_type().starts_with("text/event-stream");
    let mut messages = Vec::new();
    if is_sse {
        let mut decoder = Decoder::new();
        let mut buf = BytesMut::from(&raw[..]);
        while let Ok(Some(event)) = decoder.decode(&mut buf) {
            if !event.data.is_empty() {
                messages.push(serde_json::from_slice(&event.data).expect("event JSON"));
            }
        }
    } else if !raw.is_empty() {
        messages.push(serde_json::from_slice(raw).expect("JSON body"));
    }
    Answer {
        status: reply.status,
        headers: reply.headers,
        messages,
    }
}

fn call(name: &str, arguments: Value, opt_in: bool, stateless: bool) -> Value {
    let mut meta = serde_json::Map::new();
    if opt_in || stateless {
        let capabilities = if opt_in {
            json!({"experimental": {"bos/source-results/v1": {}}})
        } else {
            json!({})
        };
        meta.insert(
            "io.modelcontextprotocol/clientCapabilities".into(),
            capabilities,
        );
    }
    if stateless {
        stateless_meta(&mut meta);
    }
    json!({"jsonrpc":"2.0","id":"search-1","method":"tools/call",
           "params":{"name": name, "arguments": arguments, "_meta": meta}})
}

/// The structured result of a single-message tool answer.
fn result(answer: &Answer) -> Value {
    assert_eq!(answer.status, StatusCode::OK);
    answer.messages.last().expect("a message")["result"].clone()
}

async fn handle_of(s: &Sluice, key: &str) -> String {
    let answer = post(
        s.addr,
        Some(key),
        &call("bos_list_contexts", json!({}), false, false),
        false,
    )
    .await;
    let contexts = result(&answer)["structuredContent"]["contexts"].clone();
    contexts[0]["context_handle"]
        .as_str()
        .expect("a handle")
        .to_owned()
}

#[tokio::test]
async fn the_platform_needs_an_api_key_and_publishes_its_metadata() {
    let s = start().await;
    let answer = post(
        s.addr,
        None,
        &call("bos_list_contexts", json!({}), false, false),
        false,
    )
    .await;
    assert_eq!(answer.status, StatusCode::UNAUTHORIZED);
    let challenge = answer.headers["www-authenticate"].to_str().expect("ascii");
    assert!(challenge.contains(&format!(
        "/.well-known/oauth-protected-resource{PLATFORM}\""
    )));
    let answer = post(
        s.addr,
        Some("rtk_aaaaaaaaaaaa_wrong"),
        &call("bos_list_contexts", json!({}), false, false),
        false,
    )
    .await;
    assert_eq!(answer.status, StatusCode::UNAUTHORIZED);

    let path = format!("/.well-known/oauth-protected-resource{PLATFORM}");
    let reply = send(
        s.addr,
        request_to_host("localhost", Method::GET, &path, &[], ""),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);
    let doc: Value = serde_json::from_slice(&reply.body).expect("JSON");
    assert_eq!(doc["resource"], format!("http://{}{PLATFORM}", s.addr));
}

#[tokio::test]
async fn tools_and_contexts_are_per_caller() {
    let s = start().await;
    let list = json!({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}});
    let answer = post(s.addr, Some(&s.alice.token), &list, false).await;
    let names: Vec<String> = result(&answer)["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().unwrap_or("").to_owned())
        .collect();
    assert_eq!(
        names,
        ["bos_execute", "bos_list_contexts", "bos_list_tools"]
    );

    let answer = post(
        s.addr,
        Some(&s.alice.token),
        &call("bos_list_contexts", json!({}), false, false),
        false,
    )
    .await;
    let contexts = result(&answer)["structuredContent"]["contexts"].clone();
    assert_eq!(contexts.as_array().map(Vec::len), Some(1));
    assert_eq!(contexts[0]["organization_name"], "acme");
    assert_eq!(contexts[0]["role_label"], "Sales");
    let alice_handle = contexts[0]["context_handle"]
        .as_str()
        .expect("handle")
        .to_owned();

    let answer = post(
        s.addr,
        Some(&s.alice.token),
        &call(
            "bos_list_tools",
            json!({"context_handle": alice_handle}),
            false,
            false,
        ),
        false,
    )
    .await;
    let structured = result(&answer)["structuredContent"].clone();
    let tools: Vec<&str> = structured["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(tools, ["echo", "find_people"]);
    assert_eq!(
        structured["context"]["context_handle"],
        alice_handle.as_str()
    );

    // Bob cannot use Alice's handle: the same answer as a forged one.
    let answer = post(
        s.addr,
        Some(&s.bob.token),
        &call(
            "bos_list_tools",
            json!({"context_handle": alice_handle}),
            false,
            false,
        ),
        false,
    )
    .await;
    let refused = result(&answer);
    assert_eq!(refused["isError"], true);
    assert_eq!(refused["content"][0]["text"], "unknown context");
    let answer = post(
        s.addr,
        Some(&s.alice.token),
        &call(
            "bos_list_tools",
            json!({"context_handle": "bch_forged.x"}),
            false,
            false,
        ),
        false,
    )
    .await;
    assert_eq!(result(&answer)["content"][0]["text"], "unknown context");
}

#[tokio::test]
async fn bos_execute_streams_with_the_context_and_ends_with_the_identity_envelope() {
    let s = start().await;
    let handle = handle_of(&s, &s.alice.token).await;
    let arguments = json!({"context_handle": handle, "tool_name": "find_people", "arguments": {}});
    let answer = post(
        s.addr,
        Some(&s.alice.token),
        &call("bos_execute", arguments.clone(), true, false),
        false,
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK);
    assert!(answer.messages.len() >= 3, "page, complete, final");
    let (last, notes) = answer.messages.split_last().expect("messages");
    for note in notes {
        assert_eq!(note["method"], "notifications/bos/source_result");
        assert_eq!(note["params"]["requestId"], "search-1");
        assert_eq!(note["params"]["context"]["context_handle"], handle.as_str());
        assert_eq!(note["params"]["context"]["organization_name"], "acme");
    }
    let result = &last["result"];
    let structured = &result["structuredContent"];
    assert_eq!(structured["contract_version"], "bos-identity-mcp/v2");
    assert_eq!(structured["context"]["context_handle"], handle.as_str());
    assert_eq!(result["_meta"]["bos/context"], structured["context"]);
    assert_eq!(
        structured["result"]["result"].as_array().map(Vec::len),
        Some(2)
    );
    assert_eq!(structured["result"]["metadata"]["completeness"], "complete");
    assert_eq!(result["isError"], false);
    let text: Value =
        serde_json::from_str(result["content"][0]["text"].as_str().expect("text")).expect("JSON");
    assert_eq!(&text, structured);

    // The stateless era: resultType, and serverInfo beside bos/context in the one _meta.
    let answer = post(
        s.addr,
        Some(&s.alice.token),
        &call("bos_execute", arguments, true, true),
        true,
    )
    .await;
    let last = answer.messages.last().expect("final");
    assert_eq!(last["result"]["resultType"], "complete");
    assert!(last["result"]["_meta"]["bos/context"].is_object());
    assert!(last["result"]["_meta"]["io.modelcontextprotocol/serverInfo"].is_object());

    // A direct (REST) tool in the same context: its result inside the envelope.
    let echo = json!({"context_handle": handle, "tool_name": "echo", "arguments": {}});
    let answer = post(
        s.addr,
        Some(&s.alice.token),
        &call("bos_execute", echo, false, false),
        false,
    )
    .await;
    let echoed = result_of(&answer);
    assert_eq!(
        echoed["structuredContent"]["result"],
        json!({"echoed": true})
    );
    assert_eq!(
        echoed["structuredContent"]["contract_version"],
        "bos-identity-mcp/v2"
    );

    // A tool outside the context's client application, or a write: refused as tool errors.
    for tool_name in ["nope", "delete_person"] {
        let outside = json!({"context_handle": handle, "tool_name": tool_name, "arguments": {}});
        let answer = post(
            s.addr,
            Some(&s.alice.token),
            &call("bos_execute", outside, false, false),
            false,
        )
        .await;
        assert_eq!(result_of(&answer)["isError"], true, "{tool_name}");
    }
}

fn result_of(answer: &Answer) -> Value {
    result(answer)
}

#[tokio::test]
async fn a_jwt_names_its_tenant_and_client_on_the_platform() {
    let s = start().await;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs();
    let claims = |aud: String, azp: &str| {
        json!({"iss": ISSUER, "sub": "carol", "aud": aud, "azp": azp,
               "exp": now + 600, "iat": now})
    };
    let sign = |claims: &Value| {
        let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256);
        header.kid = Some("k1".to_owned());
        jsonwebtoken::encode(&header, claims, &rsa1()).expect("sign")
    };
    let platform = format!("http://{}{PLATFORM}", s.addr);
    let token = sign(&claims(platform.clone(), "agent"));
    let answer = post(
        s.addr,
        Some(&token),
        &call("bos_list_contexts", json!({}), false, false),
        false,
    )
    .await;
    let contexts = result(&answer)["structuredContent"]["contexts"].clone();
    assert_eq!(contexts.as_array().map(Vec::len), Some(1), "{contexts}");
    assert_eq!(contexts[0]["role_label"], "Analyst");

    // A token for another resource, or naming a client application that does not exist: 401.
    let wrong_audience = sign(&claims(
        format!("http://{}/runtime/acme/agent/mcp", s.addr),
        "agent",
    ));
    let answer = post(
        s.addr,
        Some(&wrong_audience),
        &call("bos_list_contexts", json!({}), false, false),
        false,
    )
    .await;
    assert_eq!(answer.status, StatusCode::UNAUTHORIZED);
    let no_client = sign(&claims(platform, "nobody"));
    let answer = post(
        s.addr,
        Some(&no_client),
        &call("bos_list_contexts", json!({}), false, false),
        false,
    )
    .await;
    assert_eq!(answer.status, StatusCode::UNAUTHORIZED);
}
