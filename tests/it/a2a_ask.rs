//! The `ask_{agentId}` MCP tools reporting a remote task's steps as `notifications/progress`
//! when the call carries a `progressToken`: over a session's SSE answer (handshake era), over
//! the stateless era's response stream, from an agent that streams (its relayed events) and
//! from one that does not (`GetTask` polling). A real upstream sluice agent whose `held` tool
//! answers when the test releases it, so the task is seen working, then completed.

use std::net::SocketAddr;

use bytes::Bytes;
use http::{Method, Request};
use http_body_util::Full;
use serde_json::{json, Value};

use crate::a2a_remote::{edge_for, upstream, Edge, UP_CARD};
use crate::support::{self, Answer, Downstream, SseReader};

const MCP: &str = "/runtime/edge/app/mcp";

/// The text form of a call of the upstream's `held` tool.
fn held_message() -> String {
    json!({"tool": "held", "arguments": {}}).to_string()
}

/// A POST of `body` to the edge's MCP endpoint as alice: JSON, her key, and `headers`.
fn alice_post(edge: &Edge, headers: &[(&str, &str)], body: &str) -> Request<Full<Bytes>> {
    let mut all = vec![
        ("content-type", "application/json"),
        ("x-api-key", edge.alice.token.as_str()),
    ];
    all.extend_from_slice(headers);
    support::request(edge.server.addr, Method::POST, MCP, &all, body)
}

/// The headers of a 2025-11-25 session's request that accepts SSE.
fn in_session(session: &str) -> [(&str, &str); 3] {
    [
        ("accept", "application/json, text/event-stream"),
        ("mcp-session-id", session),
        ("mcp-protocol-version", "2025-11-25"),
    ]
}

/// A handshake-era session of alice's at 2025-11-25; its id.
async fn session(edge: &Edge) -> String {
    let addr = edge.server.addr;
    let accept = [("accept", "application/json, text/event-stream;q=0.5")];
    let init = support::initialize_body("2025-11-25");
    let reply = support::send(addr, alice_post(edge, &accept, &init)).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let id = reply.header("mcp-session-id").to_owned();
    let headers = [
        ("mcp-session-id", id.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let reply = support::send(addr, alice_post(edge, &headers, support::INITIALIZED)).await;
    assert_eq!(reply.status, 202, "{}", reply.text());
    id
}

/// Reads `stream` to the response of request `id`: the progress notifications before it (all
/// naming `token`), then the response; releases the upstream's held call once the first
/// notification arrived.
async fn progress_then_response(
    edge: &Edge,
    stream: &mut SseReader,
    token: &Value,
    id: u64,
) -> (Vec<Value>, Value) {
    let mut notes = Vec::new();
    loop {
        let message = stream.next_message().await;
        if message["method"] == "notifications/progress" {
            assert_eq!(&message["params"]["progressToken"], token, "{message}");
            if notes.is_empty() {
                // The task runs upstream: let it finish.
                edge.up.held.wait_held(1).await;
                edge.up.held.release();
            }
            notes.push(message["params"].clone());
            continue;
        }
        assert_eq!(message["id"], id, "{message}");
        assert!(stream.ends().await, "nothing follows the response");
        return (notes, message);
    }
}

/// The steps' checks: `progress` counts up from 1, the task was seen working, the last step
/// is the completion, and the answer is the completed task with its artifact.
fn check(notes: &[Value], response: &Value) {
    assert!(notes.len() >= 2, "{notes:?}");
    for (n, note) in notes.iter().enumerate() {
        assert_eq!(note["progress"], n as u64 + 1, "{notes:?}");
    }
    let messages: Vec<&str> = notes
        .iter()
        .map(|note| note["message"].as_str().unwrap_or(""))
        .collect();
    assert!(
        messages
            .iter()
            .any(|m| m.starts_with("TASK_STATE_WORKING") || m.starts_with("TASK_STATE_SUBMITTED")),
        "{messages:?}"
    );
    assert!(
        messages
            .last()
            .is_some_and(|m| m.starts_with("TASK_STATE_COMPLETED")),
        "{messages:?}"
    );
    let result = &response["result"];
    assert_eq!(result["isError"], false, "{response}");
    let out = &result["structuredContent"];
    assert_eq!(out["state"], "TASK_STATE_COMPLETED", "{out}");
    assert!(out["text"].to_string().contains("released"), "{out}");
}

/// A session's `tools/call` of `ask_up` asking for progress with `token`, as SSE.
async fn ask_in_session(edge: &Edge, session: &str, token: &Value) -> SseReader {
    let addr = edge.server.addr;
    let body = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {
        "name": "ask_up",
        "arguments": {"message": held_message()},
        "_meta": {"progressToken": token},
    }})
    .to_string();
    let stream = SseReader::open(addr, alice_post(edge, &in_session(session), &body)).await;
    assert_eq!(stream.status, 200);
    stream
}

#[tokio::test]
async fn a_sessions_ask_call_streams_the_tasks_steps_as_progress_before_its_answer() {
    let edge = edge_at_own_card().await;
    let session = session(&edge).await;
    let token = json!("ask-1");
    let mut stream = ask_in_session(&edge, &session, &token).await;
    let (notes, response) = progress_then_response(&edge, &mut stream, &token, 5).await;
    check(&notes, &response);

    // Without a token the same call reports nothing: its answer is the response alone.
    let addr = edge.server.addr;
    let body = json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {
        "name": "ask_up",
        "arguments": {"message": json!({"tool": "echo", "arguments": {}}).to_string()},
    }})
    .to_string();
    let mut plain = SseReader::open(addr, alice_post(&edge, &in_session(&session), &body)).await;
    let message = plain.next_message().await;
    assert_eq!(message["id"], 6, "{message}");
    assert_eq!(
        message["result"]["structuredContent"]["state"],
        "TASK_STATE_COMPLETED"
    );
}

#[tokio::test]
async fn a_stateless_ask_call_streams_its_progress_on_the_response_stream() {
    let edge = edge_at_own_card().await;
    let token = json!(9);
    let mut meta = serde_json::Map::new();
    support::stateless_meta(&mut meta);
    meta.insert(
        "io.modelcontextprotocol/clientCapabilities".into(),
        json!({}),
    );
    meta.insert("progressToken".into(), token.clone());
    let body = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "ask_up",
        "arguments": {"message": held_message()},
        "_meta": meta,
    }})
    .to_string();
    let addr = edge.server.addr;
    let headers = [
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "ask_up"),
    ];
    let mut stream = SseReader::open(addr, alice_post(&edge, &headers, &body)).await;
    assert_eq!(stream.status, 200);
    assert_eq!(stream.header("content-type"), "text/event-stream");
    let (notes, response) = progress_then_response(&edge, &mut stream, &token, 3).await;
    check(&notes, &response);
    // Not resumable: no event carries an id.
    assert!(stream.last_event_id().is_none());
}

#[tokio::test]
async fn an_agent_that_does_not_stream_is_polled_and_each_change_is_one_step() {
    // The upstream's own card, saying it does not stream.
    let up = upstream().await;
    let card = card_without_streaming(up.server.addr).await;
    let stub = Downstream::new()
        .fallback(Answer::Json(Box::leak(card.into_boxed_str())))
        .start()
        .await;
    let edge = edge_for(
        up,
        &format!("http://{}/card", stub.addr),
        "expose_as_tool = true",
    )
    .await;
    let session = session(&edge).await;
    let token = json!("poll");
    let mut stream = ask_in_session(&edge, &session, &token).await;
    let (notes, response) = progress_then_response(&edge, &mut stream, &token, 5).await;
    check(&notes, &response);
    // Polled, never streamed: the upstream answered GetTask and no SendStreamingMessage.
    let addr = edge.up.server.addr;
    let metrics = support::send(
        addr,
        support::request(addr, Method::GET, "/metrics", &[], ""),
    )
    .await
    .text();
    assert!(
        !metrics.contains(r#"method="SendStreamingMessage""#),
        "{metrics}"
    );
    assert!(metrics.contains(r#"method="GetTask""#), "{metrics}");
}

/// The edge in front of a fresh upstream, its agent exposed as `ask_up`.
async fn edge_at_own_card() -> Edge {
    let up = upstream().await;
    let card_url = format!("http://{}{UP_CARD}", up.server.addr);
    edge_for(up, &card_url, "expose_as_tool = true").await
}

/// The upstream's 1.0 card with `capabilities.streaming` false.
async fn card_without_streaming(addr: SocketAddr) -> String {
    let reply = support::send(
        addr,
        support::request(addr, Method::GET, UP_CARD, &[("a2a-version", "1.0")], ""),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let mut card = reply.json();
    card["capabilities"]["streaming"] = json!(false);
    card.to_string()
}
