//! Integration tests of the A2A surface over real sockets: the agent card, the JSON-RPC
//! endpoint behind the gate, tasks run through the catalog's tools (the demo CRM and small
//! downstreams started here), streams, cancel, subscribe, isolation between callers, push
//! configs, and 0.3 on the same endpoint.

use std::net::SocketAddr;
use std::time::Duration;

use http::Method;
use serde_json::{json, Value};
use sluice::auth::apikey::{self, GeneratedKey};

use crate::support::{self, demo, Answer, Downstream, SseReader, TestServer, GUARD};

const A2A: &str = "/runtime/demo/agent/a2a";
const CARD: &str = "/runtime/demo/agent/a2a/.well-known/agent-card.json";
const ACME_A2A: &str = "/runtime/acme/app/a2a";

// === support ===

/// A 1.0 request body.
fn request(id: u64, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

/// A message running `tool` with `arguments`.
fn tool_message(tool: &str, arguments: Value) -> Value {
    json!({
        "messageId": format!("m-{tool}"),
        "role": "ROLE_USER",
        "parts": [{"data": {"tool": tool, "arguments": arguments}}],
    })
}

/// POSTs a 1.0 call (with `A2A-Version: 1.0` and `extra` headers).
async fn call(addr: SocketAddr, path: &str, extra: &[(&str, &str)], body: &str) -> support::Reply {
    let mut headers = vec![
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("a2a-version", "1.0"),
    ];
    for (name, value) in extra {
        headers.retain(|(n, _)| n != name);
        headers.push((name, value));
    }
    support::send(
        addr,
        support::request(addr, Method::POST, path, &headers, body),
    )
    .await
}

/// The result of a JSON answer (panics on an error).
fn result(reply: &support::Reply) -> Value {
    assert_eq!(reply.status, 200, "{}", reply.text());
    let body = reply.json();
    assert!(body.get("error").is_none(), "{body}");
    body["result"].clone()
}

/// The error of a JSON answer (on 200).
fn error(reply: &support::Reply) -> Value {
    assert_eq!(reply.status, 200, "{}", reply.text());
    let body = reply.json();
    assert!(body.get("result").is_none(), "{body}");
    body["error"].clone()
}

/// `GetTask` until the task is terminal.
async fn until_terminal(addr: SocketAddr, path: &str, extra: &[(&str, &str)], id: &str) -> Value {
    let deadline = tokio::time::Instant::now() + GUARD;
    loop {
        let task =
            result(&call(addr, path, extra, &request(9, "GetTask", json!({"id": id}))).await);
        let state = task["status"]["state"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if [
            "TASK_STATE_COMPLETED",
            "TASK_STATE_FAILED",
            "TASK_STATE_REJECTED",
            "TASK_STATE_CANCELED",
        ]
        .contains(&state.as_str())
        {
            return task;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "task {id} never ended: {task}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

const PEPPER: &[u8] = b"a2a-pepper";

/// A server for tenant `acme`, client `app`, with two callers' keys, tool `echo` (answers at
/// once), tool `slow` (never answers) and tool `scoped` (needs scope `admin`).
struct Acme {
    server: TestServer,
    /// A second instance of the same configuration.
    twin: TestServer,
    alice: GeneratedKey,
    bob: GeneratedKey,
    slow: Downstream,
    _echo: Downstream,
}

impl Acme {
    async fn start(extra_server: &str) -> Acme {
        Self::start_with(extra_server, |_| {}).await
    }

    /// The same, with `configure` applied to the server's configuration.
    async fn start_with(
        extra_server: &str,
        configure: impl Fn(&mut sluice::ServeConfig) + Clone + 'static,
    ) -> Acme {
        let echo = Downstream::new()
            .fallback(Answer::Json(r#"{"message":"hello"}"#))
            .start()
            .await;
        let slow = Downstream::new().fallback(Answer::Stall).start().await;
        let alice = apikey::generate(PEPPER);
        let bob = apikey::generate(PEPPER);
        let text = format!(
            r#"
[server]
api_key_pepper = "a2a-pepper"
{extra_server}

[[tenant]]
id = "acme"

[tenant.a2a]
push_allowed_hosts = ["127.0.0.1"]

[[tenant.client]]
id = "app"
[[tenant.client.api_key]]
id = "{alice_id}"
hash = "{alice_hash}"
principal = "alice"
scopes = ["tools"]
[[tenant.client.api_key]]
id = "{bob_id}"
hash = "{bob_hash}"
principal = "bob"
scopes = ["tools"]

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
name = "scoped"
description = "Needs the admin scope."
scope = "admin"
downstream = {{ kind = "rest", method = "GET", url = "http://{echo}/echo" }}

[[tenant.assignment]]
client = "app"
toolset = "t"
"#,
            alice_id = alice.id,
            alice_hash = alice.hash_hex,
            bob_id = bob.id,
            bob_hash = bob.hash_hex,
            echo = echo.addr,
            slow = slow.addr,
        );
        let server = TestServer::toml(&text)
            .with(configure.clone())
            .start()
            .await;
        // A second instance over the same configuration (and, with [cluster], the same Redis).
        let twin = TestServer::toml(&text).with(configure).start().await;
        Acme {
            server,
            twin,
            alice,
            bob,
            slow,
            _echo: echo,
        }
    }

    fn alice(&self) -> [(&str, &str); 1] {
        [("x-api-key", self.alice.token.as_str())]
    }

    fn bob(&self) -> [(&str, &str); 1] {
        [("x-api-key", self.bob.token.as_str())]
    }

    async fn call(&self, key: &[(&str, &str)], method: &str, params: Value) -> support::Reply {
        call(self.server.addr, ACME_A2A, key, &request(1, method, params)).await
    }

    /// Starts a `slow` task for alice and returns its id (the call is held downstream).
    async fn slow_task(&self) -> (String, String) {
        let task = result(
            &self
                .call(
                    &self.alice(),
                    "SendMessage",
                    json!({"message": tool_message("slow", json!({})),
                           "configuration": {"returnImmediately": true}}),
                )
                .await,
        );
        let task = &task["task"];
        assert_eq!(task["status"]["state"], "TASK_STATE_WORKING", "{task}");
        self.slow.wait_entered().await;
        (
            task["id"].as_str().expect("id").to_owned(),
            task["contextId"].as_str().expect("contextId").to_owned(),
        )
    }
}

// === the card ===

#[tokio::test]
async fn the_card_describes_the_agent_from_the_catalog_and_revalidates() {
    let demo = demo().await;
    let reply = support::send(
        demo.addr,
        support::request(demo.addr, Method::GET, CARD, &[], ""),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let card = reply.json();
    let url = demo.url(A2A);
    assert_eq!(
        card["supportedInterfaces"][0]["url"],
        url.as_str(),
        "{card}"
    );
    assert_eq!(card["supportedInterfaces"][0]["protocolBinding"], "JSONRPC");
    assert_eq!(card["supportedInterfaces"][0]["protocolVersion"], "1.0");
    assert!(card["supportedInterfaces"]
        .as_array()
        .expect("interfaces")
        .iter()
        .any(|i| i["protocolVersion"] == "0.3" && i["url"] == url.as_str()));
    assert_eq!(card["capabilities"]["streaming"], true);
    assert_eq!(card["capabilities"]["pushNotifications"], true);
    assert_eq!(card["capabilities"]["extendedAgentCard"], true);
    let skills: Vec<&str> = card["skills"]
        .as_array()
        .expect("skills")
        .iter()
        .filter_map(|s| s["id"].as_str())
        .collect();
    assert!(skills.contains(&"get_customer"), "{card}");
    assert!(skills.contains(&"find_people"), "{card}");
    // The public card leaves the schemas out.
    assert!(!card.to_string().contains("inputSchema"), "{card}");
    let etag = reply.header("etag").to_owned();
    assert!(etag.starts_with("W/\""), "{etag}");
    assert!(reply.header("cache-control").contains("max-age"));
    let again = support::send(
        demo.addr,
        support::request(
            demo.addr,
            Method::GET,
            CARD,
            &[("if-none-match", &etag)],
            "",
        ),
    )
    .await;
    assert_eq!(again.status, 304);
    assert_eq!(again.header("etag"), etag);
    // A Host header never moves the URLs.
    let moved = support::send(
        demo.addr,
        support::request_to_host("evil.example", Method::GET, CARD, &[], ""),
    )
    .await;
    assert_eq!(moved.status, 200);
    assert!(!moved.text().contains("evil.example"));
    // Unknown client: 404.
    let missing = support::send(
        demo.addr,
        support::request(
            demo.addr,
            Method::GET,
            "/runtime/demo/nobody/a2a/.well-known/agent-card.json",
            &[],
            "",
        ),
    )
    .await;
    assert_eq!(missing.status, 404);
}

#[tokio::test]
async fn the_extended_card_adds_input_schemas() {
    let demo = demo().await;
    let card = result(
        &call(
            demo.addr,
            A2A,
            &[],
            &request(1, "GetExtendedAgentCard", json!({})),
        )
        .await,
    );
    assert!(card.to_string().contains("customer_id") || card.to_string().contains("\"id\""));
    assert!(card.to_string().contains("tool-schemas"), "{card}");
}

// === send, get, stream ===

#[tokio::test]
async fn a_blocking_send_runs_the_tool_and_completes_with_its_result() {
    let demo = demo().await;
    let reply = call(
        demo.addr,
        A2A,
        &[],
        &request(
            1,
            "SendMessage",
            json!({"message": tool_message("get_customer", json!({"id": "c-100"}))}),
        ),
    )
    .await;
    let task = result(&reply)["task"].clone();
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{task}");
    let artifact = &task["artifacts"][0];
    assert_eq!(artifact["name"], "get_customer");
    assert_eq!(artifact["parts"][0]["data"]["id"], "c-100", "{task}");
    assert!(artifact["parts"][1]["text"]
        .as_str()
        .is_some_and(|t| t.contains("c-100")));
    assert_eq!(task["history"][0]["role"], "ROLE_USER");
    // The same task is readable afterwards.
    let id = task["id"].as_str().expect("id");
    let again = result(
        &call(
            demo.addr,
            A2A,
            &[],
            &request(2, "GetTask", json!({"id": id})),
        )
        .await,
    );
    assert_eq!(again["status"]["state"], "TASK_STATE_COMPLETED");
    let none = result(
        &call(
            demo.addr,
            A2A,
            &[],
            &request(3, "GetTask", json!({"id": id, "historyLength": 0})),
        )
        .await,
    );
    assert!(none.get("history").is_none(), "{none}");
}

#[tokio::test]
async fn return_immediately_answers_a_working_task_that_get_task_follows() {
    let demo = demo().await;
    let task = result(
        &call(
            demo.addr,
            A2A,
            &[],
            &request(
                1,
                "SendMessage",
                json!({"message": tool_message("get_customer", json!({"id": "c-100"})),
                       "configuration": {"returnImmediately": true}}),
            ),
        )
        .await,
    )["task"]
        .clone();
    assert_eq!(task["status"]["state"], "TASK_STATE_WORKING", "{task}");
    let id = task["id"].as_str().expect("id");
    let done = until_terminal(demo.addr, A2A, &[], id).await;
    assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
}

#[tokio::test]
async fn messages_without_a_runnable_call_are_rejected_with_the_skills() {
    let demo = demo().await;
    for (message, hint) in [
        (
            json!({"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hello there"}]}),
            "names no tool call",
        ),
        (tool_message("no_such_tool", json!({})), "no_such_tool"),
        (tool_message("get_customer", json!({})), "id"),
    ] {
        let task = result(
            &call(
                demo.addr,
                A2A,
                &[],
                &request(1, "SendMessage", json!({"message": message})),
            )
            .await,
        )["task"]
            .clone();
        assert_eq!(task["status"]["state"], "TASK_STATE_REJECTED", "{task}");
        let text = task["status"]["message"]["parts"][0]["text"]
            .as_str()
            .expect("an agent message")
            .to_owned();
        assert_eq!(task["status"]["message"]["role"], "ROLE_AGENT");
        assert!(text.contains(hint), "{text}");
        assert!(text.contains("get_customer"), "names the skills: {text}");
    }
    // A text part holding the JSON call runs it.
    let message = json!({"messageId": "m2", "role": "ROLE_USER",
        "parts": [{"text": r#"{"tool": "get_customer", "arguments": {"id": "c-100"}}"#}]});
    let task = result(
        &call(
            demo.addr,
            A2A,
            &[],
            &request(1, "SendMessage", json!({"message": message})),
        )
        .await,
    )["task"]
        .clone();
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{task}");
}

#[tokio::test]
async fn a_federated_read_streams_source_pages_then_the_merged_result() {
    let demo = demo().await;
    let reply = call(
        demo.addr,
        A2A,
        &[],
        &request(
            7,
            "SendStreamingMessage",
            json!({"message": tool_message("find_people", json!({"query": "a"}))}),
        ),
    )
    .await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.content_type(), "text/event-stream");
    assert_eq!(reply.header("cache-control"), "no-cache");
    assert_eq!(reply.header("x-accel-buffering"), "no");
    let events = reply.messages();
    assert!(events.iter().all(|e| e["id"] == 7 && e["jsonrpc"] == "2.0"));
    let results: Vec<&Value> = events.iter().map(|e| &e["result"]).collect();
    assert_eq!(
        results[0]["task"]["status"]["state"], "TASK_STATE_SUBMITTED",
        "{results:?}"
    );
    assert_eq!(
        results[1]["statusUpdate"]["status"]["state"],
        "TASK_STATE_WORKING"
    );
    let pages: Vec<&Value> = results
        .iter()
        .filter_map(|r| r.get("artifactUpdate"))
        .filter(|u| {
            u["artifact"]["artifactId"]
                .as_str()
                .is_some_and(|id| id.starts_with("source:"))
        })
        .collect();
    assert!(!pages.is_empty(), "{results:?}");
    assert!(pages.iter().all(|p| p["append"] == true));
    let finals: Vec<&Value> = results
        .iter()
        .filter_map(|r| r.get("artifactUpdate"))
        .filter(|u| u["artifact"]["artifactId"] == "result")
        .collect();
    assert_eq!(finals.len(), 1, "{results:?}");
    let metadata = &finals[0]["artifact"]["metadata"];
    assert!(metadata["completeness"].is_string(), "{metadata}");
    assert!(metadata["source_errors"].is_array(), "{metadata}");
    // The first page came before the merged result, and a source's end is a status message.
    let first_page = results.iter().position(|r| {
        r["artifactUpdate"]["artifact"]["artifactId"]
            .as_str()
            .is_some_and(|id| id.starts_with("source:"))
    });
    let merged = results
        .iter()
        .position(|r| r["artifactUpdate"]["artifact"]["artifactId"] == "result");
    assert!(first_page < merged);
    assert!(results.iter().any(
        |r| r["statusUpdate"]["status"]["message"]["metadata"]["status"]
            .as_str()
            .is_some()
    ));
    let last = results.last().expect("a last event");
    assert_eq!(
        last["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{last}"
    );
}

// === the JSON-RPC envelope ===

#[tokio::test]
async fn protocol_errors_are_answered_on_200_with_the_a2a_codes() {
    let demo = demo().await;
    let addr = demo.addr;
    let parse = call(addr, A2A, &[], "{").await;
    assert_eq!(error(&parse)["code"], -32700);
    assert_eq!(parse.json()["id"], Value::Null);
    let unknown = error(&call(addr, A2A, &[], &request(1, "NoSuchMethod", json!({}))).await);
    assert_eq!(unknown["code"], -32601);
    let version = call(
        addr,
        A2A,
        &[("a2a-version", "2.0")],
        &request(1, "GetTask", json!({"id": "x"})),
    )
    .await;
    assert_eq!(error(&version)["code"], -32009);
    let missing = error(
        &call(
            addr,
            A2A,
            &[],
            &request(1, "GetTask", json!({"id": "nope"})),
        )
        .await,
    );
    assert_eq!(missing["code"], -32001);
    assert_eq!(missing["data"][0]["reason"], "TASK_NOT_FOUND", "{missing}");
    let bad = error(&call(addr, A2A, &[], &request(1, "GetTask", json!({"nope": 1}))).await);
    assert_eq!(bad["code"], -32602);
    let page = error(
        &call(
            addr,
            A2A,
            &[],
            &request(1, "ListTasks", json!({"pageSize": 0})),
        )
        .await,
    );
    assert_eq!(page["code"], -32602);
    let wrong_type = call(
        addr,
        A2A,
        &[("content-type", "text/plain")],
        &request(1, "GetTask", json!({})),
    )
    .await;
    assert_eq!(wrong_type.status, 415);
    let get = support::send(addr, support::request(addr, Method::GET, A2A, &[], "")).await;
    assert_eq!(get.status, 405);
}

#[tokio::test]
async fn list_tasks_pages_the_callers_tasks_newest_first() {
    let demo = demo().await;
    let mut ids = Vec::new();
    for n in 0..3 {
        let task = result(
            &call(
                demo.addr,
                A2A,
                &[],
                &request(
                    n,
                    "SendMessage",
                    json!({"message": tool_message("get_customer", json!({"id": "c-100"}))}),
                ),
            )
            .await,
        )["task"]
            .clone();
        ids.push(task["id"].as_str().expect("id").to_owned());
    }
    let page = result(
        &call(
            demo.addr,
            A2A,
            &[],
            &request(1, "ListTasks", json!({"pageSize": 2})),
        )
        .await,
    );
    assert_eq!(page["tasks"].as_array().map(Vec::len), Some(2), "{page}");
    assert_eq!(page["totalSize"], 3);
    assert!(
        page["tasks"][0].get("artifacts").is_none(),
        "no artifacts unless asked: {page}"
    );
    let token = page["nextPageToken"].as_str().expect("token").to_owned();
    assert!(!token.is_empty());
    let rest = result(
        &call(
            demo.addr,
            A2A,
            &[],
            &request(
                1,
                "ListTasks",
                json!({"pageSize": 2, "pageToken": token, "includeArtifacts": true}),
            ),
        )
        .await,
    );
    assert_eq!(rest["tasks"].as_array().map(Vec::len), Some(1), "{rest}");
    assert_eq!(rest["nextPageToken"], "");
    assert!(rest["tasks"][0]["artifacts"].is_array());
    let mut seen: Vec<String> = page["tasks"]
        .as_array()
        .into_iter()
        .flatten()
        .chain(rest["tasks"].as_array().into_iter().flatten())
        .filter_map(|t| t["id"].as_str().map(str::to_owned))
        .collect();
    seen.sort();
    ids.sort();
    assert_eq!(seen, ids);
}

// === cancel, subscribe, follow-ups, isolation, auth (own tenant) ===

#[tokio::test]
async fn cancel_ends_a_running_task_and_drops_its_downstream_call() {
    let acme = Acme::start("").await;
    let (id, _) = acme.slow_task().await;
    let canceled = result(
        &acme
            .call(&acme.alice(), "CancelTask", json!({"id": id}))
            .await,
    );
    assert_eq!(
        canceled["status"]["state"], "TASK_STATE_CANCELED",
        "{canceled}"
    );
    // The held downstream request is dropped.
    acme.slow.wait_dropped().await;
    let again = error(
        &acme
            .call(&acme.alice(), "CancelTask", json!({"id": id}))
            .await,
    );
    assert_eq!(again["code"], -32002);
    let subscribe = error(
        &acme
            .call(&acme.alice(), "SubscribeToTask", json!({"id": id}))
            .await,
    );
    assert_eq!(subscribe["code"], -32004);
    let follow = error(
        &acme
            .call(
                &acme.alice(),
                "SendMessage",
                json!({"message": {"messageId": "f", "role": "ROLE_USER", "taskId": id,
                                   "parts": [{"text": "more"}]}}),
            )
            .await,
    );
    assert_eq!(follow["code"], -32004, "{follow}");
    let task = result(&acme.call(&acme.alice(), "GetTask", json!({"id": id})).await);
    assert_eq!(task["status"]["state"], "TASK_STATE_CANCELED");
}

#[tokio::test]
async fn subscribe_starts_with_the_snapshot_and_follows_the_task_to_its_end() {
    let acme = Acme::start("").await;
    let (id, _) = acme.slow_task().await;
    let body = request(5, "SubscribeToTask", json!({"id": id}));
    let headers = [
        ("content-type", "application/json"),
        ("a2a-version", "1.0"),
        ("x-api-key", acme.alice.token.as_str()),
    ];
    let mut stream = SseReader::open(
        acme.server.addr,
        support::request(acme.server.addr, Method::POST, ACME_A2A, &headers, &body),
    )
    .await;
    let first = stream.next_message().await;
    assert_eq!(first["id"], 5);
    assert_eq!(first["result"]["task"]["id"], id.as_str(), "{first}");
    assert_eq!(
        first["result"]["task"]["status"]["state"],
        "TASK_STATE_WORKING"
    );
    // A cancel from another request reaches the subscriber, which then ends.
    result(
        &acme
            .call(&acme.alice(), "CancelTask", json!({"id": id}))
            .await,
    );
    let last = stream.next_message().await;
    assert_eq!(
        last["result"]["statusUpdate"]["status"]["state"], "TASK_STATE_CANCELED",
        "{last}"
    );
    assert!(stream.ends().await);
}

#[tokio::test]
async fn follow_ups_join_a_running_task_and_a_foreign_context_is_refused() {
    let acme = Acme::start("").await;
    let (id, context) = acme.slow_task().await;
    let mismatch = error(
        &acme
            .call(
                &acme.alice(),
                "SendMessage",
                json!({"message": {"messageId": "f1", "role": "ROLE_USER", "taskId": id,
                                   "contextId": "another", "parts": [{"text": "x"}]},
                       "configuration": {"returnImmediately": true}}),
            )
            .await,
    );
    assert_eq!(mismatch["code"], -32602, "{mismatch}");
    let accepted = result(
        &acme
            .call(
                &acme.alice(),
                "SendMessage",
                json!({"message": {"messageId": "f2", "role": "ROLE_USER", "taskId": id,
                                   "contextId": context,
                                   "parts": [{"data": {"tool": "echo", "arguments": {}}}]},
                       "configuration": {"returnImmediately": true}}),
            )
            .await,
    );
    assert_eq!(accepted["task"]["id"], id.as_str(), "{accepted}");
    assert_eq!(accepted["task"]["status"]["state"], "TASK_STATE_WORKING");
    let unknown = error(
        &acme
            .call(
                &acme.alice(),
                "SendMessage",
                json!({"message": {"messageId": "f3", "role": "ROLE_USER", "taskId": "nope",
                                   "parts": [{"text": "x"}]}}),
            )
            .await,
    );
    assert_eq!(unknown["code"], -32001);
    result(
        &acme
            .call(&acme.alice(), "CancelTask", json!({"id": id}))
            .await,
    );
}

#[tokio::test]
async fn another_callers_task_reads_exactly_like_a_missing_one() {
    let acme = Acme::start("").await;
    let (id, _) = acme.slow_task().await;
    for method in ["GetTask", "CancelTask", "SubscribeToTask"] {
        let refused = error(&acme.call(&acme.bob(), method, json!({"id": id})).await);
        assert_eq!(refused["code"], -32001, "{method}: {refused}");
    }
    let listed = result(&acme.call(&acme.bob(), "ListTasks", json!({})).await);
    assert_eq!(listed["tasks"], json!([]), "{listed}");
    assert_eq!(listed["totalSize"], 0);
    let push = error(
        &acme
            .call(
                &acme.bob(),
                "ListTaskPushNotificationConfigs",
                json!({"taskId": id}),
            )
            .await,
    );
    assert_eq!(push["code"], -32001);
    // Alice still has it, running.
    let task = result(&acme.call(&acme.alice(), "GetTask", json!({"id": id})).await);
    assert_eq!(task["status"]["state"], "TASK_STATE_WORKING");
    result(
        &acme
            .call(&acme.alice(), "CancelTask", json!({"id": id}))
            .await,
    );
}

#[tokio::test]
async fn the_gate_answers_401_without_a_credential_and_403_without_the_tools_scope() {
    let acme = Acme::start("").await;
    let none = acme.call(&[], "ListTasks", json!({})).await;
    assert_eq!(none.status, 401, "{}", none.text());
    assert!(
        none.header("www-authenticate").starts_with("Bearer"),
        "{:?}",
        none.headers
    );
    let scoped = acme
        .call(
            &acme.alice(),
            "SendMessage",
            json!({"message": tool_message("scoped", json!({}))}),
        )
        .await;
    assert_eq!(scoped.status, 403, "{}", scoped.text());
}

#[tokio::test]
async fn push_configs_are_validated_stored_and_owned() {
    let acme = Acme::start("").await;
    let (id, _) = acme.slow_task().await;
    // https only outside development.
    let http = error(
        &acme
            .call(
                &acme.alice(),
                "CreateTaskPushNotificationConfig",
                json!({"taskId": id, "url": "http://127.0.0.1:9/hook"}),
            )
            .await,
    );
    assert_eq!(http["code"], -32602, "{http}");
    let created = result(
        &acme
            .call(
                &acme.alice(),
                "CreateTaskPushNotificationConfig",
                json!({"taskId": id, "id": "c1", "url": "https://hooks.example.com/a2a", "token": "tok"}),
            )
            .await,
    );
    assert_eq!(created["id"], "c1");
    assert_eq!(created["taskId"], id.as_str());
    let got = result(
        &acme
            .call(
                &acme.alice(),
                "GetTaskPushNotificationConfig",
                json!({"taskId": id, "id": "c1"}),
            )
            .await,
    );
    assert_eq!(got["url"], "https://hooks.example.com/a2a");
    let listed = result(
        &acme
            .call(
                &acme.alice(),
                "ListTaskPushNotificationConfigs",
                json!({"taskId": id}),
            )
            .await,
    );
    assert_eq!(
        listed["configs"].as_array().map(Vec::len),
        Some(1),
        "{listed}"
    );
    for _ in 0..2 {
        let deleted = result(
            &acme
                .call(
                    &acme.alice(),
                    "DeleteTaskPushNotificationConfig",
                    json!({"taskId": id, "id": "c1"}),
                )
                .await,
        );
        assert_eq!(deleted, Value::Null);
    }
    result(
        &acme
            .call(&acme.alice(), "CancelTask", json!({"id": id}))
            .await,
    );
}

#[tokio::test]
async fn a2a_calls_are_counted_by_method_and_outcome() {
    let demo = demo().await;
    error(
        &call(
            demo.addr,
            A2A,
            &[],
            &request(1, "GetTask", json!({"id": "nope"})),
        )
        .await,
    );
    let metrics = support::send(
        demo.addr,
        support::request(demo.addr, Method::GET, "/metrics", &[], ""),
    )
    .await;
    let text = metrics.text();
    assert!(
        text.contains(r#"sluice_a2a_calls_total{method="GetTask",outcome="task_not_found"} 1"#),
        "{text}"
    );
    assert!(!text.contains("nope"));
}

// === 0.3 on the same endpoint ===

/// POSTs without `A2A-Version`: a 0.3 request.
async fn call_v03(addr: SocketAddr, body: &str) -> support::Reply {
    let headers = [
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
    ];
    support::send(
        addr,
        support::request(addr, Method::POST, A2A, &headers, body),
    )
    .await
}

#[tokio::test]
async fn a_request_without_a2a_version_speaks_0_3_through_the_translation() {
    let demo = demo().await;
    let message = json!({"kind": "message", "messageId": "m03", "role": "user",
        "parts": [{"kind": "data", "data": {"tool": "get_customer", "arguments": {"id": "c-100"}}}]});
    let task = result(
        &call_v03(
            demo.addr,
            &request(1, "message/send", json!({"message": message})),
        )
        .await,
    );
    assert_eq!(task["kind"], "task", "{task}");
    assert_eq!(task["status"]["state"], "completed", "{task}");
    assert_eq!(task["artifacts"][0]["parts"][0]["kind"], "data");
    assert_eq!(task["artifacts"][0]["parts"][0]["data"]["id"], "c-100");
    assert_eq!(task["history"][0]["role"], "user");
    let id = task["id"].as_str().expect("id");
    let got = result(&call_v03(demo.addr, &request(2, "tasks/get", json!({"id": id}))).await);
    assert_eq!(got["status"]["state"], "completed");
    // 0.3 errors carry no 1.0 ErrorInfo array.
    let missing =
        error(&call_v03(demo.addr, &request(3, "tasks/get", json!({"id": "nope"}))).await);
    assert_eq!(missing["code"], -32001);
    assert!(!missing["data"].is_array(), "{missing}");
    // The stream: kind discriminators, and final: true on the last status event only.
    let message = json!({"kind": "message", "messageId": "m04", "role": "user",
        "parts": [{"kind": "text", "text": r#"{"tool": "get_customer", "arguments": {"id": "c-100"}}"#}]});
    let reply = call_v03(
        demo.addr,
        &request(4, "message/stream", json!({"message": message})),
    )
    .await;
    let events: Vec<Value> = reply
        .messages()
        .into_iter()
        .map(|e| e["result"].clone())
        .collect();
    assert_eq!(events[0]["kind"], "task", "{events:?}");
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["kind"].as_str()).collect();
    assert!(kinds.contains(&"artifact-update"), "{kinds:?}");
    let last = events.last().expect("a last event");
    assert_eq!(last["kind"], "status-update");
    assert_eq!(last["final"], true);
    assert_eq!(last["status"]["state"], "completed");
    assert!(events[..events.len() - 1]
        .iter()
        .all(|e| e.get("final").is_none_or(|f| f == false)));
    // The card carries the 0.3 members too.
    let card = support::send(
        demo.addr,
        support::request(demo.addr, Method::GET, CARD, &[], ""),
    )
    .await
    .json();
    assert_eq!(card["protocolVersion"], "0.3.0", "{card}");
    assert_eq!(card["url"], demo.url(A2A).as_str());
}

#[tokio::test]
async fn a2a_calls_are_audited_with_their_call_type_and_a_foreign_task_read_is_recorded() {
    let dir = support::TempDir::new("a2a-audit");
    let path = dir.join("audit.jsonl");
    let acme = Acme::start(&format!(
        "[server.audit]\nsink = \"file\"\npath = \"{}\"\nwhen_full = \"block\"\n",
        path.display()
    ))
    .await;
    let (id, _) = acme.slow_task().await;
    error(&acme.call(&acme.bob(), "GetTask", json!({"id": id})).await);
    result(
        &acme
            .call(&acme.alice(), "CancelTask", json!({"id": id}))
            .await,
    );
    let deadline = tokio::time::Instant::now() + GUARD;
    let records = loop {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let records: Vec<Value> = text
            .lines()
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect();
        if records.iter().filter(|r| r["surface"] == "a2a").count() >= 4 {
            break records;
        }
        assert!(tokio::time::Instant::now() < deadline, "{text}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let send = records
        .iter()
        .find(|r| r["call_type"] == "a2a_message")
        .expect("the send's record");
    assert_eq!(send["tool"], "slow", "{send}");
    assert_eq!(send["caller"], "apikey:alice");
    let foreign = records
        .iter()
        .find(|r| r["call_type"] == "a2a_task" && r["caller"] == "apikey:bob")
        .expect("bob's refused read");
    assert_eq!(foreign["outcome"], "error", "{foreign}");
    assert_eq!(foreign["error_code"], "-32001");
    // The tool call itself is audited by the MCP path, on the A2A surface.
    assert!(
        records
            .iter()
            .any(|r| r["call_type"] == "tool_call" && r["surface"] == "a2a" && r["tool"] == "slow"),
        "{records:?}"
    );
}

// === push delivery ===

#[tokio::test]
async fn every_event_of_a_task_is_pushed_to_its_webhook_with_the_configured_headers() {
    let hook = Downstream::new()
        .fallback(Answer::Plain(200, ""))
        .start()
        .await;
    let acme = Acme::start("[server.a2a]\nallow_http_push = true\npush_backoff_ms = 10\n").await;
    let url = format!("http://127.0.0.1:{}/hook", hook.addr.port());
    let task = result(
        &acme
            .call(
                &acme.alice(),
                "SendMessage",
                json!({"message": tool_message("echo", json!({})),
                       "configuration": {"taskPushNotificationConfig": {
                           "url": url, "token": "tok-123",
                           "authentication": {"scheme": "Bearer", "credentials": "secret-xyz"}}}}),
            )
            .await,
    )["task"]
        .clone();
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{task}");
    // task (submitted), WORKING, the artifact, COMPLETED — in order.
    let deadline = tokio::time::Instant::now() + GUARD;
    while hook.hits() < 4 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{} pushes",
            hook.hits()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let pushes = hook.requests();
    let bodies: Vec<Value> = pushes
        .iter()
        .map(|r| serde_json::from_slice(&r.body).expect("a JSON StreamResponse"))
        .collect();
    assert_eq!(bodies[0]["task"]["id"], task["id"], "{bodies:?}");
    assert_eq!(
        bodies[1]["statusUpdate"]["status"]["state"],
        "TASK_STATE_WORKING"
    );
    assert_eq!(
        bodies[2]["artifactUpdate"]["artifact"]["artifactId"],
        "result"
    );
    assert_eq!(
        bodies[3]["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    for push in &pushes {
        assert_eq!(push.method, Method::POST);
        assert_eq!(push.uri, "/hook");
        assert_eq!(push.headers["authorization"], "Bearer secret-xyz");
        assert_eq!(push.headers["x-a2a-notification-token"], "tok-123");
        assert!(push.headers["content-type"]
            .to_str()
            .is_ok_and(|t| t.starts_with("application/")));
    }
    let id = task["id"].as_str().expect("id");
    let stored = result(
        &acme
            .call(
                &acme.alice(),
                "GetTaskPushNotificationConfig",
                json!({"taskId": id}),
            )
            .await,
    );
    assert_eq!(
        stored["url"],
        url.as_str(),
        "the inline config is stored under the task id"
    );
    let metrics = support::send(
        acme.server.addr,
        support::request(acme.server.addr, Method::GET, "/metrics", &[], ""),
    )
    .await
    .text();
    assert!(
        metrics.contains("sluice_a2a_push_delivered_total 4"),
        "{metrics}"
    );
}

#[tokio::test]
async fn webhooks_on_internal_addresses_and_header_injection_are_refused() {
    let acme = Acme::start("").await;
    let (id, _) = acme.slow_task().await;
    for (config, why) in [
        (json!({"url": "https://10.0.0.7/hook"}), "private"),
        (
            json!({"url": "https://169.254.169.254/latest"}),
            "link-local metadata",
        ),
        (
            json!({"url": "https://[::ffff:192.168.1.1]/hook"}),
            "IPv4-mapped private",
        ),
        (json!({"url": "https://localhost/hook"}), "loopback by name"),
        (
            json!({"url": "https://hooks.example.com/x", "token": "a\r\nX-Evil: 1"}),
            "CR/LF in the token",
        ),
        (
            json!({"url": "https://user:pw@hooks.example.com/x"}),
            "user information",
        ),
    ] {
        let mut params = config.clone();
        params["taskId"] = json!(id);
        let refused = error(
            &acme
                .call(&acme.alice(), "CreateTaskPushNotificationConfig", params)
                .await,
        );
        assert_eq!(refused["code"], -32602, "{why}: {refused}");
    }
    // The tenant allowlists 127.0.0.1 (still https only here).
    let allowed = acme
        .call(
            &acme.alice(),
            "CreateTaskPushNotificationConfig",
            json!({"taskId": id, "url": "https://127.0.0.1:9/hook"}),
        )
        .await;
    assert_eq!(result(&allowed)["url"], "https://127.0.0.1:9/hook");
    result(
        &acme
            .call(&acme.alice(), "CancelTask", json!({"id": id}))
            .await,
    );
}

#[tokio::test]
async fn push_can_be_turned_off() {
    let acme = Acme::start("[server.a2a]\npush_notifications = false\n").await;
    let (id, _) = acme.slow_task().await;
    let off = error(
        &acme
            .call(
                &acme.alice(),
                "CreateTaskPushNotificationConfig",
                json!({"taskId": id, "url": "https://hooks.example.com/x"}),
            )
            .await,
    );
    assert_eq!(off["code"], -32003);
    result(
        &acme
            .call(&acme.alice(), "CancelTask", json!({"id": id}))
            .await,
    );
}

#[tokio::test]
async fn a_client_that_accepts_none_of_the_agents_output_modes_gets_32005() {
    let demo = demo().await;
    let refused = error(
        &call(
            demo.addr,
            A2A,
            &[],
            &request(
                1,
                "SendMessage",
                json!({"message": tool_message("get_customer", json!({"id": "c-100"})),
                       "configuration": {"acceptedOutputModes": ["image/png"]}}),
            ),
        )
        .await,
    );
    assert_eq!(refused["code"], -32005, "{refused}");
    assert_eq!(refused["data"][0]["reason"], "CONTENT_TYPE_NOT_SUPPORTED");
}

// === several instances over Redis ===

#[tokio::test]
async fn with_redis_a_task_running_on_one_instance_is_followed_and_cancelled_on_another() {
    let Some((url, prefix)) = crate::cluster::redis_or_skip("a2a_two_instances").await else {
        return;
    };
    let redis = sluice::session::RedisConfig::new(url.clone()).with_prefix(prefix.clone());
    let acme = Acme::start_with("", move |config| config.cluster = Some(redis.clone())).await;
    // The task runs on A (its downstream call is held there).
    let (id, _) = acme.slow_task().await;
    let b = acme.twin.addr;
    let on_b = |method: &str, params: Value| {
        let body = request(3, method, params);
        let key = acme.alice.token.clone();
        async move { call(b, ACME_A2A, &[("x-api-key", key.as_str())], &body).await }
    };
    let task = result(&on_b("GetTask", json!({"id": id})).await);
    assert_eq!(task["status"]["state"], "TASK_STATE_WORKING", "{task}");
    let listed = result(&on_b("ListTasks", json!({})).await);
    assert_eq!(listed["tasks"][0]["id"], id.as_str(), "{listed}");
    // Bob sees nothing of it on B either.
    let foreign = error(
        &call(
            b,
            ACME_A2A,
            &acme.bob(),
            &request(4, "GetTask", json!({"id": id})),
        )
        .await,
    );
    assert_eq!(foreign["code"], -32001);
    // Subscribed on B: the snapshot, then the cancel made on B reaches A's runner, whose
    // downstream call is dropped, and the stream ends with CANCELED — once.
    let headers = [
        ("content-type", "application/json"),
        ("a2a-version", "1.0"),
        ("x-api-key", acme.alice.token.as_str()),
    ];
    let body = request(5, "SubscribeToTask", json!({"id": id}));
    let mut stream = SseReader::open(
        b,
        support::request(b, Method::POST, ACME_A2A, &headers, &body),
    )
    .await;
    let first = stream.next_message().await;
    assert_eq!(
        first["result"]["task"]["status"]["state"], "TASK_STATE_WORKING",
        "{first}"
    );
    let canceled = result(&on_b("CancelTask", json!({"id": id})).await);
    assert_eq!(canceled["status"]["state"], "TASK_STATE_CANCELED");
    let last = stream.next_message().await;
    assert_eq!(
        last["result"]["statusUpdate"]["status"]["state"], "TASK_STATE_CANCELED",
        "{last}"
    );
    assert!(stream.ends().await);
    acme.slow.wait_dropped().await;
    // A sees the cancel too.
    let on_a = result(&acme.call(&acme.alice(), "GetTask", json!({"id": id})).await);
    assert_eq!(on_a["status"]["state"], "TASK_STATE_CANCELED");
    drop(acme);
    tokio::time::sleep(Duration::from_millis(100)).await;
    crate::cluster::cleanup(&url, &prefix).await;
}

#[tokio::test]
async fn a_config_registered_over_0_3_gets_0_3_bodies() {
    let hook = Downstream::new()
        .fallback(Answer::Plain(200, ""))
        .start()
        .await;
    let acme = Acme::start("[server.a2a]\nallow_http_push = true\n").await;
    let url = format!("http://127.0.0.1:{}/hook03", hook.addr.port());
    let message = json!({"kind": "message", "messageId": "p03", "role": "user",
        "parts": [{"kind": "data", "data": {"tool": "echo", "arguments": {}}}]});
    let headers = [
        ("content-type", "application/json"),
        ("x-api-key", acme.alice.token.as_str()),
    ];
    let body = request(
        1,
        "message/send",
        json!({"message": message, "configuration": {"blocking": true,
            "pushNotificationConfig": {"url": url, "token": "t03",
                "authentication": {"schemes": ["Bearer"], "credentials": "c03"}}}}),
    );
    let addr = acme.server.addr;
    let task = result(
        &support::send(
            addr,
            support::request(addr, Method::POST, ACME_A2A, &headers, &body),
        )
        .await,
    );
    assert_eq!(task["status"]["state"], "completed", "{task}");
    let deadline = tokio::time::Instant::now() + GUARD;
    while hook.hits() < 4 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{} pushes",
            hook.hits()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let bodies: Vec<Value> = hook
        .requests()
        .iter()
        .map(|r| serde_json::from_slice(&r.body).expect("JSON"))
        .collect();
    assert_eq!(bodies[0]["kind"], "task", "{bodies:?}");
    assert_eq!(bodies[1]["kind"], "status-update");
    assert_eq!(bodies[1]["status"]["state"], "working");
    assert_eq!(bodies[3]["status"]["state"], "completed");
    assert_eq!(bodies[3]["final"], true);
    assert_eq!(hook.requests()[0].headers["authorization"], "Bearer c03");
    // The stored config shows nothing of the marker.
    let id = task["id"].as_str().expect("id");
    let got = result(
        &acme
            .call(
                &acme.alice(),
                "GetTaskPushNotificationConfig",
                json!({"taskId": id}),
            )
            .await,
    );
    assert!(!got.to_string().contains("x-sluice"), "{got}");
}

#[tokio::test]
async fn a_1_0_card_request_gets_the_pure_1_0_card() {
    let demo = demo().await;
    let reply = support::send(
        demo.addr,
        support::request(demo.addr, Method::GET, CARD, &[("a2a-version", "1.0")], ""),
    )
    .await;
    let card = reply.json();
    assert!(card.get("protocolVersion").is_none(), "{card}");
    assert!(card.get("url").is_none());
    assert!(
        card["securitySchemes"]
            .as_object()
            .is_some_and(|schemes| schemes.values().all(|s| s.get("type").is_none())),
        "{card}"
    );
    assert_eq!(reply.header("vary"), "A2A-Version");
    let mixed = support::send(
        demo.addr,
        support::request(demo.addr, Method::GET, CARD, &[], ""),
    )
    .await;
    assert_ne!(mixed.header("etag"), reply.header("etag"));
}

#[tokio::test]
async fn a_reload_changes_the_card_and_its_etag() {
    let text = |name: &str| {
        format!(
            "[[tenant]]\nid = \"acme\"\nauth = {{ anonymous = true }}\n[[tenant.client]]\nid = \"app\"\n\
             [tenant.client.agent]\nname = \"{name}\"\n"
        )
    };
    let server = TestServer::toml(&text("First")).start().await;
    let path = "/runtime/acme/app/a2a/.well-known/agent-card.json";
    let get = || {
        support::send(
            server.addr,
            support::request(server.addr, Method::GET, path, &[], ""),
        )
    };
    let first = get().await;
    assert_eq!(first.json()["name"], "First");
    // Served again from the card built once for this snapshot: the same bytes and ETag.
    let again = get().await;
    assert_eq!(again.body, first.body);
    assert_eq!(again.header("etag"), first.header("etag"));
    let config = sluice::config::parse(&text("Second"), "test").expect("parses");
    server.catalog.replace(&config).expect("reload");
    let second = get().await;
    assert_eq!(second.json()["name"], "Second", "{}", second.text());
    assert_ne!(second.header("etag"), first.header("etag"));
}
