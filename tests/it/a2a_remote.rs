//! Integration tests of the A2A concentrator over real sockets: a real upstream agent (a second
//! sluice serving its own A2A agent over a small downstream, started here) registered behind an
//! edge sluice with its own callers. Card synthesis, the agents list, the proxy (caller ids,
//! ownership, `ListTasks` from the ledger), the streaming relay, cancel, the push relay end to
//! end, and the three transport failures.

use std::net::SocketAddr;
use std::time::Duration;

use http::Method;
use serde_json::{json, Value};
use sluice::auth::apikey::{self, GeneratedKey};

use crate::support::{self, Answer, Downstream, SseReader, TestServer, GUARD};

const PEPPER: &[u8] = b"remote-pepper";
pub(crate) const UP_CARD: &str = "/runtime/up/agent/a2a/.well-known/agent-card.json";
const UP_A2A: &str = "/runtime/up/agent/a2a";
const AGENT: &str = "/runtime/edge/app/a2a/agents/up";
const AGENT_CARD: &str = "/runtime/edge/app/a2a/agents/up/.well-known/agent-card.json";

fn request(id: Value, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

fn tool_message(tool: &str) -> Value {
    json!({
        "messageId": format!("m-{tool}"),
        "role": "ROLE_USER",
        "parts": [{"data": {"tool": tool, "arguments": {}}}],
    })
}

async fn post(addr: SocketAddr, path: &str, key: &str, body: &str) -> support::Reply {
    let headers = [
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("a2a-version", "1.0"),
        ("x-api-key", key),
    ];
    support::send(
        addr,
        support::request(addr, Method::POST, path, &headers, body),
    )
    .await
}

async fn get(addr: SocketAddr, path: &str, headers: &[(&str, &str)]) -> support::Reply {
    support::send(addr, support::request(addr, Method::GET, path, headers, "")).await
}

fn result(reply: &support::Reply) -> Value {
    assert_eq!(reply.status, 200, "{}", reply.text());
    let body = reply.json();
    assert!(body.get("error").is_none(), "{body}");
    body["result"].clone()
}

fn error(reply: &support::Reply) -> Value {
    assert_eq!(reply.status, 200, "{}", reply.text());
    let body = reply.json();
    assert!(body.get("result").is_none(), "{body}");
    body["error"].clone()
}

/// The `reason` of a 1.0 error's first ErrorInfo.
fn reason(error: &Value) -> &str {
    error["data"][0]["reason"].as_str().unwrap_or_default()
}

/// The upstream agent: tenant `up`, client `agent`, tools `echo` (answers at once), `slow`
/// (never answers) and `held` (answers when the test releases it), push to plain-http
/// loopback webhooks allowed.
pub(crate) struct Upstream {
    pub(crate) server: TestServer,
    key: GeneratedKey,
    _echo: Downstream,
    _slow: Downstream,
    pub(crate) held: Downstream,
}

pub(crate) async fn upstream() -> Upstream {
    let echo = Downstream::new()
        .fallback(Answer::Json(r#"{"message":"hello"}"#))
        .start()
        .await;
    let slow = Downstream::new().fallback(Answer::Stall).start().await;
    let held = Downstream::new()
        .fallback(Answer::Hold(r#"{"message":"released"}"#))
        .start()
        .await;
    let key = apikey::generate(PEPPER);
    let text = format!(
        r#"
[server]
api_key_pepper = "remote-pepper"
[server.a2a]
allow_http_push = true
push_backoff_ms = 10

[[tenant]]
id = "up"
[tenant.a2a]
push_allowed_hosts = ["127.0.0.1"]

[[tenant.client]]
id = "agent"
[[tenant.client.api_key]]
id = "{id}"
hash = "{hash}"
principal = "edge-runtime"

[[tenant.toolset]]
id = "t"
[[tenant.toolset.tool]]
name = "echo"
description = "Echo a greeting."
downstream = {{ kind = "rest", method = "GET", url = "http://{echo}/echo" }}
[[tenant.toolset.tool.output]]
source = "message"
exposed = "message"
[[tenant.toolset.tool]]
name = "slow"
description = "Never answers."
downstream = {{ kind = "rest", method = "GET", url = "http://{slow}/slow", timeout_ms = 60000 }}
[[tenant.toolset.tool]]
name = "held"
description = "Answers when released."
downstream = {{ kind = "rest", method = "GET", url = "http://{held}/held", timeout_ms = 60000 }}
[[tenant.toolset.tool.output]]
source = "message"
exposed = "message"

[[tenant.assignment]]
client = "agent"
toolset = "t"
"#,
        id = key.id,
        hash = key.hash_hex,
        echo = echo.addr,
        slow = slow.addr,
        held = held.addr,
    );
    Upstream {
        server: TestServer::toml(&text).start().await,
        key,
        _echo: echo,
        _slow: slow,
        held,
    }
}

/// The edge: tenant `edge`, clients `app` (alice, bob) and `other` (carol); agent `up` behind
/// it with the upstream's key as its bearer secret (from a file), agent `broken` with a wrong
/// one, both assigned to `app`.
pub(crate) struct Edge {
    pub(crate) server: TestServer,
    pub(crate) up: Upstream,
    pub(crate) alice: GeneratedKey,
    bob: GeneratedKey,
    carol: GeneratedKey,
    _secrets: Secrets,
}

/// A directory of secret files, removed when dropped.
struct Secrets(std::path::PathBuf);

impl Secrets {
    fn new() -> Secrets {
        let dir = std::env::temp_dir().join(format!(
            "sluice-remote-{}-{}",
            std::process::id(),
            rand_suffix()
        ));
        std::fs::create_dir_all(&dir).expect("secrets dir");
        Secrets(dir)
    }

    fn path(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for Secrets {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn rand_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

async fn edge(agent_extra: &str) -> Edge {
    let up = upstream().await;
    let card_url = format!("http://{}{UP_CARD}", up.server.addr);
    edge_for(up, &card_url, agent_extra).await
}

/// The edge in front of `up`, whose card it reads at `card_url`.
pub(crate) async fn edge_for(up: Upstream, card_url: &str, agent_extra: &str) -> Edge {
    let secrets = Secrets::new();
    let good = secrets.path().join("good");
    let bad = secrets.path().join("bad");
    std::fs::write(&good, format!("{}\n", up.key.token)).expect("secret");
    std::fs::write(
        &bad,
        "rtk_wrongwrong1_not-the-secret-0123456789abcdefghijklmnop",
    )
    .expect("secret");
    let (alice, bob, carol) = (
        apikey::generate(PEPPER),
        apikey::generate(PEPPER),
        apikey::generate(PEPPER),
    );
    let text = format!(
        r#"
[server]
api_key_pepper = "remote-pepper"
[server.a2a]
allow_http_push = true
push_backoff_ms = 10

[[tenant]]
id = "edge"
[tenant.a2a]
push_allowed_hosts = ["127.0.0.1"]

[[tenant.client]]
id = "app"
[[tenant.client.api_key]]
id = "{a_id}"
hash = "{a_hash}"
principal = "alice"
[[tenant.client.api_key]]
id = "{b_id}"
hash = "{b_hash}"
principal = "bob"

[[tenant.client]]
id = "other"
[[tenant.client.api_key]]
id = "{c_id}"
hash = "{c_hash}"
principal = "carol"

[[tenant.a2a_agent]]
id = "up"
card_url = "{card_url}"
clients = ["app"]
{agent_extra}
[tenant.a2a_agent.upstream_auth]
kind = "bearer"
secret_file = "{good}"

[[tenant.a2a_agent]]
id = "broken"
card_url = "{card_url}"
clients = ["app"]
[tenant.a2a_agent.upstream_auth]
kind = "bearer"
secret_file = "{bad}"
"#,
        a_id = alice.id,
        a_hash = alice.hash_hex,
        b_id = bob.id,
        b_hash = bob.hash_hex,
        c_id = carol.id,
        c_hash = carol.hash_hex,
        good = good.display(),
        bad = bad.display(),
    );
    Edge {
        server: TestServer::toml(&text).start().await,
        up,
        alice,
        bob,
        carol,
        _secrets: secrets,
    }
}

impl Edge {
    async fn call(&self, key: &GeneratedKey, method: &str, params: Value) -> support::Reply {
        post(
            self.server.addr,
            AGENT,
            &key.token,
            &request(json!(1), method, params),
        )
        .await
    }

    /// A `slow` task of alice's, running upstream.
    async fn slow_task(&self) -> String {
        let task = result(
            &self
                .call(
                    &self.alice,
                    "SendMessage",
                    json!({"message": tool_message("slow"),
                           "configuration": {"returnImmediately": true}}),
                )
                .await,
        );
        task["task"]["id"].as_str().expect("task id").to_owned()
    }
}

#[tokio::test]
async fn the_synthesized_card_names_the_runtime_and_only_assigned_clients_see_it() {
    let edge = edge("").await;
    let reply = get(edge.server.addr, AGENT_CARD, &[("a2a-version", "1.0")]).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let card = reply.json();
    let own_url = format!("http://{}{AGENT}", edge.server.addr);
    assert_eq!(
        card["supportedInterfaces"][0]["url"],
        own_url.as_str(),
        "{card}"
    );
    assert!(card.get("signatures").is_none());
    // `provider` is the upstream's own organization and stays; nothing else may name it.
    let mut without_provider = card.clone();
    without_provider
        .as_object_mut()
        .expect("object")
        .remove("provider");
    let text = without_provider.to_string();
    assert!(
        !text.contains(&edge.up.server.addr.to_string()),
        "the upstream address leaked: {text}"
    );
    assert!(card["securitySchemes"]["apiKey"].is_object(), "{card}");
    // The skills are the upstream's (its tools).
    let skills: Vec<&str> = card["skills"]
        .as_array()
        .expect("skills")
        .iter()
        .filter_map(|s| s["id"].as_str())
        .collect();
    assert!(
        skills.contains(&"echo") && skills.contains(&"slow"),
        "{skills:?}"
    );
    let etag = reply.headers["etag"].to_str().expect("etag").to_owned();
    let again = get(
        edge.server.addr,
        AGENT_CARD,
        &[("a2a-version", "1.0"), ("if-none-match", &etag)],
    )
    .await;
    assert_eq!(again.status, 304);

    let other = get(
        edge.server.addr,
        "/runtime/edge/other/a2a/agents/up/.well-known/agent-card.json",
        &[],
    )
    .await;
    assert_eq!(other.status, 404);
    let unknown = get(
        edge.server.addr,
        "/runtime/edge/app/a2a/agents/nope/.well-known/agent-card.json",
        &[],
    )
    .await;
    assert_eq!(unknown.status, 404);

    let list = get(
        edge.server.addr,
        "/runtime/edge/app/a2a/agents",
        &[("x-api-key", &edge.alice.token)],
    )
    .await;
    assert_eq!(list.status, 200, "{}", list.text());
    let ids: Vec<String> = list
        .json()
        .as_array()
        .expect("list")
        .iter()
        .map(|a| a["agentId"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(ids, ["broken", "up"]);
    let anonymous = get(edge.server.addr, "/runtime/edge/app/a2a/agents", &[]).await;
    assert_eq!(anonymous.status, 401);
    let carol = get(
        edge.server.addr,
        "/runtime/edge/other/a2a/agents",
        &[("x-api-key", &edge.carol.token)],
    )
    .await;
    assert_eq!(carol.json(), json!([]));
}

#[tokio::test]
async fn sends_are_proxied_with_the_callers_id_and_tasks_stay_with_their_owner() {
    let edge = edge("").await;
    let reply = post(
        edge.server.addr,
        AGENT,
        &edge.alice.token,
        &request(
            json!("abc-1"),
            "SendMessage",
            json!({"message": tool_message("echo")}),
        ),
    )
    .await;
    assert_eq!(reply.json()["id"], "abc-1");
    let task = result(&reply)["task"].clone();
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{task}");
    let id = task["id"].as_str().expect("id");
    let context = task["contextId"].as_str().expect("context");

    let got = result(&edge.call(&edge.alice, "GetTask", json!({"id": id})).await);
    assert_eq!(got["id"], id);
    // Bob shares the upstream identity but not alice's tasks.
    let foreign = error(&edge.call(&edge.bob, "GetTask", json!({"id": id})).await);
    assert_eq!(foreign["code"], -32001, "{foreign}");
    let follow = error(
        &edge
            .call(
                &edge.bob,
                "SendMessage",
                json!({"message": {"messageId": "x", "role": "ROLE_USER", "contextId": context,
                                   "parts": [{"text": "hi"}]}}),
            )
            .await,
    );
    assert_eq!(follow["code"], -32602, "{follow}");
    let cancel = error(&edge.call(&edge.bob, "CancelTask", json!({"id": id})).await);
    assert_eq!(cancel["code"], -32001);

    let mine = result(&edge.call(&edge.alice, "ListTasks", json!({})).await);
    let listed: Vec<&str> = mine["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .filter_map(|t| t["id"].as_str())
        .collect();
    assert_eq!(listed, [id]);
    assert_eq!(mine["tasks"][0]["status"]["state"], "TASK_STATE_COMPLETED");
    let with_artifacts = result(
        &edge
            .call(&edge.alice, "ListTasks", json!({"includeArtifacts": true}))
            .await,
    );
    assert!(
        with_artifacts["tasks"][0]["artifacts"].is_array(),
        "{with_artifacts}"
    );
    let bobs = result(&edge.call(&edge.bob, "ListTasks", json!({})).await);
    assert_eq!(bobs["totalSize"], 0, "{bobs}");

    // Methods the runtime answers itself.
    let card = error(
        &edge
            .call(&edge.alice, "GetExtendedAgentCard", json!({}))
            .await,
    );
    assert_eq!(card["code"], -32007);
    let unknown = error(&edge.call(&edge.alice, "tasks/nothing", json!({})).await);
    assert_eq!(unknown["code"], -32601);
    // Carol's client is not assigned the agent.
    let carol = post(
        edge.server.addr,
        "/runtime/edge/other/a2a/agents/up",
        &edge.carol.token,
        &request(json!(1), "GetTask", json!({"id": id})),
    )
    .await;
    assert_eq!(carol.status, 404);
}

#[tokio::test]
async fn a_streamed_send_is_relayed_event_by_event_and_cancel_passes_through() {
    let edge = edge("").await;
    let headers = [
        ("content-type", "application/json"),
        ("a2a-version", "1.0"),
        ("x-api-key", edge.alice.token.as_str()),
    ];
    let body = request(
        json!(7),
        "SendStreamingMessage",
        json!({"message": tool_message("echo")}),
    );
    let mut stream = SseReader::open(
        edge.server.addr,
        support::request(edge.server.addr, Method::POST, AGENT, &headers, &body),
    )
    .await;
    assert_eq!(stream.status, 200);
    assert_eq!(stream.headers["x-accel-buffering"], "no");
    let mut states = Vec::new();
    let mut task_id = String::new();
    loop {
        let Some(event) = stream.next().await else {
            break;
        };
        if event.data.is_empty() {
            continue;
        }
        let message: Value = serde_json::from_slice(&event.data).expect("JSON");
        assert_eq!(message["id"], 7, "{message}");
        let result = &message["result"];
        if let Some(id) = result["task"]["id"].as_str() {
            task_id = id.to_owned();
            states.push(result["task"]["status"]["state"].clone());
        }
        if let Some(state) = result["statusUpdate"]["status"]["state"].as_str() {
            states.push(state.into());
        }
    }
    assert!(!task_id.is_empty());
    assert_eq!(
        states.last(),
        Some(&Value::from("TASK_STATE_COMPLETED")),
        "{states:?}"
    );
    // The relay recorded the task for alice.
    let got = result(
        &edge
            .call(&edge.alice, "GetTask", json!({"id": task_id}))
            .await,
    );
    assert_eq!(got["status"]["state"], "TASK_STATE_COMPLETED");

    // A running task: subscribe, then cancel from another request.
    let slow = edge.slow_task().await;
    let body = request(json!(8), "SubscribeToTask", json!({"id": slow}));
    let mut follow = SseReader::open(
        edge.server.addr,
        support::request(edge.server.addr, Method::POST, AGENT, &headers, &body),
    )
    .await;
    let first = follow.next_message().await;
    assert_eq!(first["id"], 8);
    assert_eq!(first["result"]["task"]["id"], slow.as_str(), "{first}");
    let canceled = result(
        &edge
            .call(&edge.alice, "CancelTask", json!({"id": slow}))
            .await,
    );
    assert_eq!(canceled["status"]["state"], "TASK_STATE_CANCELED");
    let last = follow.next_message().await;
    assert_eq!(
        last["result"]["statusUpdate"]["status"]["state"], "TASK_STATE_CANCELED",
        "{last}"
    );
    assert!(follow.ends().await);
    let bob = error(
        &edge
            .call(&edge.bob, "SubscribeToTask", json!({"id": slow}))
            .await,
    );
    assert_eq!(bob["code"], -32001);
}

#[tokio::test]
async fn the_push_relay_delivers_upstream_notifications_to_the_callers_webhook() {
    let edge = edge("").await;
    let hook = Downstream::new()
        .fallback(Answer::Plain(200, ""))
        .start()
        .await;
    let url = format!("http://127.0.0.1:{}/hook", hook.addr.port());
    let slow = edge.slow_task().await;
    let created = result(
        &edge
            .call(
                &edge.alice,
                "CreateTaskPushNotificationConfig",
                json!({"taskId": slow, "id": "mine", "url": url, "token": "alice-token",
                       "authentication": {"scheme": "Bearer", "credentials": "alice-cred"}}),
            )
            .await,
    );
    assert_eq!(created["url"], url.as_str());
    // The upstream holds only the relay's configuration, pointing at the edge.
    let upstream_list = result(
        &post(
            edge.up.server.addr,
            UP_A2A,
            &edge.up.key.token,
            &request(
                json!(1),
                "ListTaskPushNotificationConfigs",
                json!({"taskId": slow}),
            ),
        )
        .await,
    );
    let configs = upstream_list["configs"].as_array().expect("configs");
    assert_eq!(configs.len(), 1, "{upstream_list}");
    let relay_url = configs[0]["url"].as_str().expect("url").to_owned();
    assert!(
        relay_url.starts_with(&format!("http://{}/runtime/a2a/push/rl_", edge.server.addr)),
        "{relay_url}"
    );
    assert!(!upstream_list.to_string().contains("alice-"));

    // A forged notification: 401, nothing delivered.
    let path = relay_url
        .split_once(&edge.server.addr.to_string())
        .expect("path")
        .1
        .to_owned();
    let forged = support::send(
        edge.server.addr,
        support::request(
            edge.server.addr,
            Method::POST,
            &path,
            &[
                ("content-type", "application/json"),
                ("authorization", "Bearer guess"),
            ],
            r#"{"statusUpdate":{"taskId":"x","status":{"state":"TASK_STATE_COMPLETED"}}}"#,
        ),
    )
    .await;
    assert_eq!(forged.status, 401);

    // Cancelling makes the upstream notify the relay, which delivers to alice's webhook.
    result(
        &edge
            .call(&edge.alice, "CancelTask", json!({"id": slow}))
            .await,
    );
    let deadline = tokio::time::Instant::now() + GUARD;
    while !hook
        .requests()
        .iter()
        .any(|r| String::from_utf8_lossy(&r.body).contains("TASK_STATE_CANCELED"))
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{} pushes",
            hook.hits()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    for push in hook.requests() {
        assert_eq!(push.headers["authorization"], "Bearer alice-cred");
        assert_eq!(push.headers["x-a2a-notification-token"], "alice-token");
    }

    let listed = result(
        &edge
            .call(
                &edge.alice,
                "ListTaskPushNotificationConfigs",
                json!({"taskId": slow}),
            )
            .await,
    );
    assert_eq!(
        listed["configs"].as_array().map(Vec::len),
        Some(1),
        "{listed}"
    );
    let bob = error(
        &edge
            .call(
                &edge.bob,
                "GetTaskPushNotificationConfig",
                json!({"taskId": slow, "id": "mine"}),
            )
            .await,
    );
    assert_eq!(bob["code"], -32001);
}

#[tokio::test]
async fn transport_failures_are_named_and_never_the_callers_fault() {
    let edge = edge("request_ms = 400").await;
    // The wrong credential: the upstream says 401, the caller hears UPSTREAM_AUTH_FAILED.
    let broken = error(
        &post(
            edge.server.addr,
            "/runtime/edge/app/a2a/agents/broken",
            &edge.alice.token,
            &request(
                json!(1),
                "SendMessage",
                json!({"message": tool_message("echo")}),
            ),
        )
        .await,
    );
    assert_eq!(broken["code"], -32603, "{broken}");
    assert_eq!(reason(&broken), "UPSTREAM_AUTH_FAILED", "{broken}");
    // A blocking send on a task that never ends outlasts request_ms.
    let slow = error(
        &edge
            .call(
                &edge.alice,
                "SendMessage",
                json!({"message": tool_message("slow")}),
            )
            .await,
    );
    assert_eq!(reason(&slow), "UPSTREAM_TIMEOUT", "{slow}");
    // The upstream goes away.
    let Edge {
        server, up, alice, ..
    } = edge;
    drop(up);
    let gone = error(
        &post(
            server.addr,
            AGENT,
            &alice.token,
            &request(
                json!(1),
                "SendMessage",
                json!({"message": tool_message("echo")}),
            ),
        )
        .await,
    );
    assert_eq!(reason(&gone), "UPSTREAM_UNAVAILABLE", "{gone}");
    assert!(!gone.to_string().contains("127.0.0.1"), "{gone}");
}

#[tokio::test]
async fn sluice_check_reports_bad_agent_registrations() {
    let text = r#"
[server]
api_key_pepper = "p"
[[tenant]]
id = "t"
[tenant.auth]
anonymous = true
[[tenant.client]]
id = "app"
[[tenant.a2a_agent]]
id = "Bad_Id"
card_url = "ftp://x"
clients = ["ghost"]
card_refresh_secs = 1
expose_as_tool = true
[tenant.a2a_agent.upstream_auth]
kind = "api_key"
header = "Authorization"
secret_env = "SLUICE_TEST_SURELY_UNSET_SECRET"
[[tenant.a2a_agent]]
id = "Bad_Id"
card_url = "http://x/"
[[tenant.a2a_agent]]
id = "helper"
card_url = "http://x/"
expose_as_tool = true
[[tenant.toolset]]
id = "s"
[[tenant.toolset.tool]]
name = "ask_helper"
description = "Named like the agent's tool."
downstream = { kind = "rest", method = "GET", url = "http://x/y" }
"#;
    let config = sluice::config::parse(text, "t.toml").expect("parses");
    let report = sluice::catalog::Catalog::from_config(&config).expect_err("problems");
    let text = report.to_string();
    for expected in [
        "agent id must match",
        "duplicate a2a_agent id",
        "card_url must be an absolute http(s) URL",
        "unknown client \"ghost\"",
        "card_refresh_secs must be at least 10",
        "a tool of this tenant is already named \"ask_helper\"",
        "header may not be Authorization",
        "SLUICE_TEST_SURELY_UNSET_SECRET is not set",
    ] {
        assert!(
            text.contains(expected),
            "{expected:?} missing from:\n{text}"
        );
    }
}

/// A stateless-era (2026-07-28) MCP request to the edge's `app` endpoint as `key`.
async fn mcp(edge: &Edge, key: &GeneratedKey, method: &str, params: Value) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "it", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let name = params["name"].as_str().unwrap_or("").to_owned();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
    let mut headers = vec![
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", method),
        ("x-api-key", key.token.as_str()),
    ];
    if !name.is_empty() {
        headers.push(("mcp-name", name.as_str()));
    }
    let reply = support::send(
        edge.server.addr,
        support::request(
            edge.server.addr,
            Method::POST,
            "/runtime/edge/app/mcp",
            &headers,
            &body,
        ),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    reply.json()
}

#[tokio::test]
async fn an_exposed_agent_is_an_mcp_tool_that_answers_the_tasks_final_state() {
    let edge = edge("expose_as_tool = true").await;
    let listed = mcp(&edge, &edge.alice, "tools/list", json!({})).await;
    let tools = listed["result"]["tools"].as_array().expect("tools").clone();
    let ask = tools
        .iter()
        .find(|t| t["name"] == "ask_up")
        .unwrap_or_else(|| panic!("no ask_up in {tools:?}"));
    assert_eq!(ask["inputSchema"]["required"], json!(["message"]));
    // `broken` is not exposed.
    assert!(tools.iter().all(|t| t["name"] != "ask_broken"), "{tools:?}");

    // The message is the upstream agent's text form of a tool call.
    let call = json!({"tool": "echo", "arguments": {}}).to_string();
    let answered = mcp(
        &edge,
        &edge.alice,
        "tools/call",
        json!({"name": "ask_up", "arguments": {"message": call}}),
    )
    .await;
    let answer = &answered["result"];
    assert_eq!(answer["isError"], false, "{answered}");
    let out = &answer["structuredContent"];
    assert_eq!(out["state"], "TASK_STATE_COMPLETED", "{out}");
    assert!(out["artifacts"].to_string().contains("hello"), "{out}");
    let task_id = out["task_id"].as_str().expect("task id").to_owned();
    let context_id = out["context_id"].as_str().expect("context id").to_owned();

    // The task is alice's in the ledger: she reads it over A2A; bob can neither read it nor
    // continue it through his own ask tool.
    let got = result(
        &edge
            .call(&edge.alice, "GetTask", json!({"id": task_id}))
            .await,
    );
    assert_eq!(got["id"], task_id.as_str());
    let refused = mcp(
        &edge,
        &edge.bob,
        "tools/call",
        json!({"name": "ask_up", "arguments": {"message": call, "task_id": task_id}}),
    )
    .await;
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    let text = refused["result"]["content"][0]["text"].to_string();
    assert!(text.to_lowercase().contains("not found"), "{refused}");
    let joined = mcp(
        &edge,
        &edge.bob,
        "tools/call",
        json!({"name": "ask_up", "arguments": {"message": call, "context_id": context_id}}),
    )
    .await;
    assert_eq!(joined["result"]["isError"], true, "{joined}");
    let text = joined["result"]["content"][0]["text"].to_string();
    assert!(text.contains("contextId"), "{joined}");

    // Bad arguments are tool execution errors, nothing is sent.
    for arguments in [
        json!({}),
        json!({"message": ""}),
        json!({"message": 7}),
        json!({"message": "x", "extra": 1}),
    ] {
        let bad = mcp(
            &edge,
            &edge.alice,
            "tools/call",
            json!({"name": "ask_up", "arguments": arguments}),
        )
        .await;
        assert_eq!(bad["result"]["isError"], true, "{arguments}: {bad}");
        assert!(
            bad["result"]["content"][0]["text"]
                .as_str()
                .unwrap_or("")
                .contains("Input validation"),
            "{bad}"
        );
    }
    // A failing upstream task is a tool execution error naming the state.
    let failing = json!({"tool": "nope", "arguments": {}}).to_string();
    let failed = mcp(
        &edge,
        &edge.alice,
        "tools/call",
        json!({"name": "ask_up", "arguments": {"message": failing}}),
    )
    .await;
    assert_eq!(failed["result"]["isError"], true, "{failed}");
    let text = failed["result"]["content"][0]["text"].to_string();
    assert!(text.contains("ended in TASK_STATE_"), "{failed}");
}
