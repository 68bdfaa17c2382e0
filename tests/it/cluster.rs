//! Integration tests: several sluice instances sharing sessions and stream routing through a
//! real Redis (`[cluster]` in ARCHITECTURE.md), three instances in this process on their own
//! 127.0.0.1 ports.
//!
//! Redis is found at `SLUICE_TEST_REDIS_URL` (default `redis://127.0.0.1:6379`); when it is not
//! reachable each test prints a visible skip line and passes, unless `SLUICE_REQUIRE_REDIS=1`
//! (set by `.ci/run`), which makes it fail. Each test works under its own random key prefix and
//! deletes its keys at the end, so tests run in parallel and leave nothing behind. The restart
//! test starts its own `redis-server` on a free port and never touches the machine's Redis.
//!
//! Covers: a session walked across instances (initialize on A, call on B, stream on C, DELETE
//! on A), the per-tenant cap under concurrent initializes on all three, a legacy `/messages`
//! response routed to the instance holding the `/sse` stream, list_changed fan-out after a
//! reload on one instance, a holder shut down mid-stream, Redis restarted mid-test (and legacy
//! `/messages` POSTs right after the restart: delivered or refused, never accepted and lost),
//! cross-caller isolation on every path of every instance, and the refused start when Redis
//! does not answer.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, StatusCode};
use http_body_util::Full;
use serde_json::{json, Value};
use sluice::auth::apikey::{self, GeneratedKey};
use sluice::catalog::Catalog;
use sluice::session::{RedisConfig, SessionId};
use sluice::ServeConfig;
use tokio::net::{TcpListener, TcpStream};

use super::support::{
    added_tools, echo_tool, request, send, Answer, Downstream, Reply, SseReader, TestServer, Tools,
    BOTH, GUARD, INITIALIZED, MCP,
};

const PEPPER: &str = "cluster-pepper";
const ADMIN: &str = "cluster-admin-token";
const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"cluster-test","version":"1"}}}"#;
const CALL: &str =
    r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{}}}"#;

// === redis ===

fn redis_url() -> String {
    std::env::var("SLUICE_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned())
}

async fn answers_ping(url: &str) -> bool {
    let reachable = async {
        let client = redis::Client::open(url).ok()?;
        let mut connection = client.get_multiplexed_async_connection().await.ok()?;
        redis::cmd("PING")
            .query_async::<String>(&mut connection)
            .await
            .ok()
    };
    tokio::time::timeout(Duration::from_secs(2), reachable)
        .await
        .ok()
        .flatten()
        .is_some()
}

/// The test Redis and a fresh key prefix, or `None` (after a visible skip line) when Redis is
/// unreachable and not required.
pub(crate) async fn redis_or_skip(test: &str) -> Option<(String, String)> {
    let url = redis_url();
    if !answers_ping(&url).await {
        assert!(
            std::env::var("SLUICE_REQUIRE_REDIS").as_deref() != Ok("1"),
            "{test}: Redis at {url} is unreachable and SLUICE_REQUIRE_REDIS=1"
        );
        let line = format!(
            "SKIP {test}: Redis at {url} is unreachable (set SLUICE_REQUIRE_REDIS=1 to fail)\n"
        );
        let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
        return None;
    }
    let prefix = format!("it-{test}-{}", SessionId::random().encode().as_str());
    Some((url, prefix))
}

/// Deletes every key under `prefix`, and checks nothing re-created any.
pub(crate) async fn cleanup(url: &str, prefix: &str) {
    let client = redis::Client::open(url).expect("url");
    let mut connection = client
        .get_multiplexed_async_connection()
        .await
        .expect("connect");
    let pattern = format!("sluice:{prefix}:*");
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(&pattern)
        .query_async(&mut connection)
        .await
        .expect("keys");
    if !keys.is_empty() {
        redis::cmd("DEL")
            .arg(&keys)
            .query_async::<i64>(&mut connection)
            .await
            .expect("del");
    }
    let left: Vec<String> = redis::cmd("KEYS")
        .arg(&pattern)
        .query_async(&mut connection)
        .await
        .expect("keys");
    assert!(
        left.is_empty(),
        "stopped instances left keys behind: {left:?}"
    );
}

/// A `redis-server` of this test's own, on a free port, without persistence.
pub(crate) struct OwnRedis {
    port: u16,
    child: Option<std::process::Child>,
}

impl OwnRedis {
    async fn start() -> OwnRedis {
        let port = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("free port");
            listener.local_addr().expect("addr").port()
        };
        let mut redis = OwnRedis { port, child: None };
        redis.restart().await;
        redis
    }

    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    async fn restart(&mut self) {
        let child = std::process::Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("redis-server is installed");
        self.child = Some(child);
        let deadline = tokio::time::Instant::now() + GUARD;
        while !answers_ping(&self.url()).await {
            assert!(
                tokio::time::Instant::now() < deadline,
                "own redis-server did not start"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub(crate) fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The test's own `redis-server`, or `None` (after a visible skip line) when none is installed
/// and `SLUICE_REQUIRE_REDIS` is not set.
pub(crate) async fn own_redis_or_skip(test: &str) -> Option<OwnRedis> {
    if std::process::Command::new("redis-server")
        .arg("--version")
        .output()
        .is_err()
    {
        assert!(
            std::env::var("SLUICE_REQUIRE_REDIS").as_deref() != Ok("1"),
            "redis-server is not installed and SLUICE_REQUIRE_REDIS=1"
        );
        let line = format!("SKIP {test}: no redis-server\n");
        let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
        return None;
    }
    Some(OwnRedis::start().await)
}

impl Drop for OwnRedis {
    fn drop(&mut self) {
        self.kill();
    }
}

// === downstream ===

/// A downstream answering every request with `{"message":"hello"}`.
async fn downstream() -> SocketAddr {
    Downstream::new()
        .fallback(Answer::Json(r#"{"message":"hello"}"#))
        .start()
        .await
        .addr
}

// === the deployment ===

/// Two callers of `acme/app`.
struct Callers {
    alice: GeneratedKey,
    bob: GeneratedKey,
}

fn config_text(downstream: SocketAddr, callers: &Callers, cap: usize, tools: Tools) -> String {
    let extra = added_tools(downstream, tools);
    format!(
        r#"
[server]
admin_token = "{ADMIN}"
api_key_pepper = "{PEPPER}"
max_sessions_per_tenant = {cap}
keepalive_secs = 1

[[tenant]]
id = "acme"

[[tenant.client]]
id = "app"

[[tenant.client.api_key]]
id = "{alice_id}"
hash = "{alice_hash}"

[[tenant.client.api_key]]
id = "{bob_id}"
hash = "{bob_hash}"

[[tenant.toolset]]
id = "base"
description = "Base tools"
{echo}{extra}
[[tenant.assignment]]
client = "app"
toolset = "base"
"#,
        echo = echo_tool(downstream),
        alice_id = callers.alice.id,
        alice_hash = callers.alice.hash_hex,
        bob_id = callers.bob.id,
        bob_hash = callers.bob.hash_hex,
    )
}

/// Instances sharing one configuration file and one Redis namespace.
struct Cluster {
    nodes: Vec<TestServer>,
    callers: Callers,
    downstream: SocketAddr,
    file: PathBuf,
    cap: usize,
    url: String,
    prefix: String,
}

/// Whether the node at `addr` answers `GET /readyz` with 200.
async fn ready(addr: SocketAddr) -> bool {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Ok(mut stream) = TcpStream::connect(addr).await else {
        return false;
    };
    let request = b"GET /readyz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n";
    if stream.write_all(request).await.is_err() {
        return false;
    }
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(2), stream.read_to_end(&mut answer));
    matches!(read.await, Ok(Ok(_))) && answer.starts_with(b"HTTP/1.1 200")
}

impl Cluster {
    async fn start(n_nodes: usize, url: &str, prefix: &str, cap: usize) -> Cluster {
        let callers = Callers {
            alice: apikey::generate(PEPPER.as_bytes()),
            bob: apikey::generate(PEPPER.as_bytes()),
        };
        let downstream = downstream().await;
        let dir = std::env::temp_dir().join(format!("sluice-cluster-{prefix}"));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let file = dir.join("sluice.toml");
        std::fs::write(&file, config_text(downstream, &callers, cap, Tools::Base)).expect("write");
        let mut cluster = Cluster {
            nodes: Vec::new(),
            callers,
            downstream,
            file,
            cap,
            url: url.to_owned(),
            prefix: prefix.to_owned(),
        };
        for _ in 0..n_nodes {
            let node = cluster.start_node().await;
            cluster.nodes.push(node);
        }
        cluster
    }

    fn redis_config(&self) -> RedisConfig {
        RedisConfig {
            command_timeout: Duration::from_millis(300),
            holder_ttl: Duration::from_secs(3),
            // The longest cache age the configuration allows: a session seen after it was
            // deleted elsewhere would show, since only the delete notice empties the cache.
            session_cache: Duration::from_secs(10),
            ..RedisConfig::new(self.url.clone()).with_prefix(self.prefix.clone())
        }
    }

    async fn start_node(&self) -> TestServer {
        // A node whose first Redis round trip exceeds the 300 ms command timeout (a loaded CI
        // machine) refuses to start, as it should; it is started again, at most twice more.
        for _attempt in 0..3 {
            let catalog = Arc::new(Catalog::load(&self.file).expect("valid configuration"));
            let redis = self.redis_config();
            let node = TestServer::catalog(catalog)
                .with(move |config| {
                    config.cluster = Some(redis);
                    config.expected_instances = 3;
                })
                .start()
                .await;
            // Ready when `/readyz` answers 200 (a TCP connect proves nothing: the listener is
            // bound before `serve` runs, and dropped if it fails to start).
            let deadline = tokio::time::Instant::now() + GUARD;
            while !node.has_exited() {
                if ready(node.addr).await {
                    return node;
                }
                assert!(tokio::time::Instant::now() < deadline, "node did not start");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            let _ = std::io::Write::write_all(
                &mut std::io::stderr(),
                b"cluster node exited at start (Redis slow to answer?); starting it again\n",
            );
        }
        panic!("a cluster node failed to start three times");
    }

    fn addr(&self, index: usize) -> SocketAddr {
        self.nodes.get(index).expect("node").addr
    }

    fn alice(&self) -> String {
        format!("Bearer {}", self.callers.alice.token)
    }

    fn bob(&self) -> String {
        format!("Bearer {}", self.callers.bob.token)
    }

    /// Initializes a session on node `index` as `auth` (and sends `initialized` there too).
    async fn session(&self, index: usize, auth: &str) -> String {
        let reply = post(self.addr(index), auth, None, INIT).await;
        assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
        let id = reply.header("mcp-session-id").to_owned();
        assert!(!id.is_empty(), "initialize minted a session");
        let reply = post(self.addr(index), auth, Some(&id), INITIALIZED).await;
        assert_eq!(reply.status, StatusCode::ACCEPTED);
        id
    }

    /// Rewrites the shared configuration file with one more tool.
    fn add_tool(&self) {
        let text = config_text(self.downstream, &self.callers, self.cap, Tools::WithAdded);
        std::fs::write(&self.file, text).expect("rewrite");
    }

    /// Stops every instance, then deletes the test's keys (and checks none is left).
    async fn finish(mut self) {
        for node in &mut self.nodes {
            node.stop().await;
        }
        cleanup(&self.url, &self.prefix).await;
    }
}

impl Drop for Cluster {
    /// Also on a failed test: stop the instances and delete the test's keys and files, so a
    /// failure leaves nothing behind either (holder keys an instance refreshed meanwhile expire
    /// within the test's holder TTL).
    fn drop(&mut self) {
        self.nodes.clear();
        if let Ok(client) = redis::Client::open(self.url.as_str()) {
            if let Ok(mut connection) = client.get_connection_with_timeout(Duration::from_secs(2)) {
                let keys: Vec<String> = redis::cmd("KEYS")
                    .arg(format!("sluice:{}:*", self.prefix))
                    .query(&mut connection)
                    .unwrap_or_default();
                if !keys.is_empty() {
                    let _: redis::RedisResult<i64> =
                        redis::cmd("DEL").arg(&keys).query(&mut connection);
                }
            }
        }
        if let Some(dir) = self.file.parent() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

// === HTTP client ===

impl Reply {
    /// Asserts a 404 "unknown session" answer.
    fn assert_unknown_session(&self, what: &str) {
        assert_eq!(
            self.status,
            StatusCode::NOT_FOUND,
            "{what}: {:?}",
            self.body
        );
        assert!(
            self.json()["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("session")),
            "{what}: {:?}",
            self.body
        );
    }
}

async fn post(addr: SocketAddr, auth: &str, session: Option<&str>, body: &str) -> Reply {
    let mut headers = vec![
        ("accept", BOTH),
        ("content-type", "application/json"),
        ("authorization", auth),
    ];
    if let Some(session) = session {
        headers.push(("mcp-session-id", session));
    }
    send(addr, request(addr, Method::POST, MCP, &headers, body)).await
}

async fn delete(addr: SocketAddr, auth: &str, session: &str) -> Reply {
    let headers = [("authorization", auth), ("mcp-session-id", session)];
    send(addr, request(addr, Method::DELETE, MCP, &headers, "")).await
}

async fn get_path(addr: SocketAddr, path: &str) -> Reply {
    send(addr, request(addr, Method::GET, path, &[], "")).await
}

/// A legacy `/messages` POST.
async fn legacy_post(addr: SocketAddr, auth: &str, session: &str, body: &str) -> Reply {
    let path = format!("/runtime/acme/app/messages?sessionId={session}");
    let headers = [
        ("content-type", "application/json"),
        ("authorization", auth),
    ];
    send(addr, request(addr, Method::POST, &path, &headers, body)).await
}

/// Opens an SSE stream that ends (rather than failing) when its instance goes away.
async fn sse(addr: SocketAddr, req: Request<Full<Bytes>>) -> SseReader {
    SseReader::open(addr, req).await.tolerant()
}

/// The standalone GET stream of `session` on `addr`, resuming from `last_event_id`.
async fn get_stream(
    addr: SocketAddr,
    auth: &str,
    session: &str,
    last_event_id: Option<&str>,
) -> SseReader {
    let mut headers = vec![
        ("accept", "text/event-stream"),
        ("authorization", auth),
        ("mcp-session-id", session),
    ];
    if let Some(last) = last_event_id {
        headers.push(("last-event-id", last));
    }
    sse(addr, request(addr, Method::GET, MCP, &headers, "")).await
}

/// The legacy `/sse` stream on `addr`.
async fn legacy_stream(addr: SocketAddr, auth: &str) -> SseReader {
    let headers = [("accept", "text/event-stream"), ("authorization", auth)];
    sse(
        addr,
        request(addr, Method::GET, "/runtime/acme/app/sse", &headers, ""),
    )
    .await
}

/// Polls `check` until it holds (hang guard `GUARD`).
async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + GUARD;
    while !check().await {
        assert!(tokio::time::Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

// === tests ===

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_walks_across_three_instances() {
    let Some((url, prefix)) = redis_or_skip("walk").await else {
        return;
    };
    let cluster = Cluster::start(3, &url, &prefix, 100).await;
    let (a, b, c) = (cluster.addr(0), cluster.addr(1), cluster.addr(2));
    let alice = cluster.alice();

    // initialize on A, tools/call on B (twice: the second is answered from B's session cache).
    let session = cluster.session(0, &alice).await;
    for _ in 0..2 {
        let reply = post(b, &alice, Some(&session), CALL).await;
        assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
        let body = reply.json();
        assert_eq!(body["id"], 2);
        assert!(body["result"]["content"].is_array(), "{body}");
    }

    // The standalone stream on C.
    let mut stream = get_stream(c, &alice, &session, None).await;
    assert_eq!(stream.status, StatusCode::OK);
    assert_eq!(stream.header("content-type"), "text/event-stream");
    let priming = stream.next().await.expect("priming event");
    assert!(priming.data.is_empty());

    // DELETE on A: 204, C's stream ends, and the id is unknown on every instance at once (B's
    // cached validation was dropped by the delete notice, not by its 10 s age).
    let reply = delete(a, &alice, &session).await;
    assert_eq!(reply.status, StatusCode::NO_CONTENT);
    assert!(
        stream.ends().await,
        "the stream on C ended with its session"
    );
    for addr in [a, b, c] {
        post(addr, &alice, Some(&session), CALL)
            .await
            .assert_unknown_session("call after DELETE");
    }
    let reopened = get_stream(c, &alice, &session, None).await;
    assert_eq!(reopened.status, StatusCode::NOT_FOUND);
    delete(b, &alice, &session)
        .await
        .assert_unknown_session("second DELETE");
    cluster.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tenant_cap_holds_under_concurrent_initializes_on_three_instances() {
    let Some((url, prefix)) = redis_or_skip("cap").await else {
        return;
    };
    const CAP: usize = 5;
    let cluster = Cluster::start(3, &url, &prefix, CAP).await;
    let alice = cluster.alice();
    let mut attempts = Vec::new();
    for n in 0..18 {
        let addr = cluster.addr(n % 3);
        let auth = alice.clone();
        attempts.push(tokio::spawn(
            async move { post(addr, &auth, None, INIT).await },
        ));
    }
    let mut minted = Vec::new();
    let mut refused = 0;
    for attempt in attempts {
        let reply = attempt.await.expect("task");
        match reply.status {
            StatusCode::OK => minted.push(reply.header("mcp-session-id").to_owned()),
            StatusCode::SERVICE_UNAVAILABLE => {
                assert_eq!(reply.json()["jsonrpc"], "2.0", "a JSON-RPC error object");
                refused += 1;
            }
            other => panic!("unexpected {other}: {:?}", reply.body),
        }
    }
    assert_eq!(minted.len(), CAP, "exactly the cap, across instances");
    assert_eq!(refused, 18 - CAP);
    // Ending one session on any instance frees one slot for any other.
    let reply = delete(cluster.addr(2), &alice, &minted[0]).await;
    assert_eq!(reply.status, StatusCode::NO_CONTENT);
    let reply = post(cluster.addr(1), &alice, None, INIT).await;
    assert_eq!(reply.status, StatusCode::OK);
    let reply = post(cluster.addr(0), &alice, None, INIT).await;
    assert_eq!(reply.status, StatusCode::SERVICE_UNAVAILABLE);
    cluster.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_response_posted_to_another_instance_arrives_on_the_holders_stream() {
    let Some((url, prefix)) = redis_or_skip("legacy").await else {
        return;
    };
    let cluster = Cluster::start(3, &url, &prefix, 100).await;
    let alice = cluster.alice();
    let mut stream = legacy_stream(cluster.addr(0), &alice).await;
    assert_eq!(stream.status, StatusCode::OK);
    let endpoint = stream.next().await.expect("endpoint event");
    assert_eq!(endpoint.event_type(), b"endpoint");
    let session = stream.header("mcp-session-id").to_owned();

    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"old","version":"1"}}}"#;
    let reply = legacy_post(cluster.addr(1), &alice, &session, init).await;
    assert_eq!(reply.status, StatusCode::ACCEPTED);
    let message = stream.next_message().await;
    assert_eq!(message["id"], 1);
    assert_eq!(message["result"]["protocolVersion"], "2024-11-05");

    let reply = legacy_post(cluster.addr(2), &alice, &session, INITIALIZED).await;
    assert_eq!(reply.status, StatusCode::ACCEPTED);
    let reply = legacy_post(cluster.addr(2), &alice, &session, CALL).await;
    assert_eq!(reply.status, StatusCode::ACCEPTED);
    let message = stream.next_message().await;
    assert_eq!(message["id"], 2);
    assert!(message["result"]["content"].is_array(), "{message}");
    // A Streamable HTTP session has no `/sse` stream on any instance: 404, nothing runs.
    let streamable = cluster.session(0, &alice).await;
    for index in 0..3 {
        legacy_post(cluster.addr(index), &alice, &streamable, CALL)
            .await
            .assert_unknown_session("/messages with a Streamable HTTP session");
    }
    // Posted to the holder itself, it is written there as before.
    let ping = r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#;
    let reply = legacy_post(cluster.addr(0), &alice, &session, ping).await;
    assert_eq!(reply.status, StatusCode::ACCEPTED);
    assert_eq!(stream.next_message().await["id"], 3);

    // Closing the stream ends the session on every instance.
    drop(stream);
    eventually("the legacy session ends with its stream", || async {
        legacy_post(cluster.addr(1), &alice, &session, ping)
            .await
            .status
            == StatusCode::NOT_FOUND
    })
    .await;
    cluster.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_on_one_instance_reaches_live_streams_on_the_others() {
    let Some((url, prefix)) = redis_or_skip("fanout").await else {
        return;
    };
    let cluster = Cluster::start(3, &url, &prefix, 100).await;
    let alice = cluster.alice();
    // Sessions minted on A with their streams on B and C.
    let on_b = cluster.session(0, &alice).await;
    let on_c = cluster.session(0, &alice).await;
    let mut stream_b = get_stream(cluster.addr(1), &alice, &on_b, None).await;
    let mut stream_c = get_stream(cluster.addr(2), &alice, &on_c, None).await;
    assert_eq!(stream_b.status, StatusCode::OK);
    assert_eq!(stream_c.status, StatusCode::OK);
    let mut legacy_b = legacy_stream(cluster.addr(1), &alice).await;
    assert!(legacy_b.next().await.is_some(), "endpoint event");

    cluster.add_tool();
    let reload = request(
        cluster.addr(0),
        Method::POST,
        "/admin/reload",
        &[("authorization", &format!("Bearer {ADMIN}"))],
        "",
    );
    let reply = send(cluster.addr(0), reload).await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);

    for stream in [&mut stream_b, &mut stream_c, &mut legacy_b] {
        let message = stream.next_message().await;
        assert_eq!(message["method"], "notifications/tools/list_changed");
    }
    // The other instances serve the new catalog.
    for index in [1, 2] {
        let list = r#"{"jsonrpc":"2.0","id":5,"method":"tools/list"}"#;
        let session = if index == 1 { &on_b } else { &on_c };
        let reply = post(cluster.addr(index), &alice, Some(session), list).await;
        let tools = reply.json()["result"]["tools"].clone();
        assert!(
            tools
                .as_array()
                .is_some_and(|tools| tools.iter().any(|t| t["name"] == "added")),
            "{tools}"
        );
    }
    cluster.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_whose_holder_stopped_reconnects_elsewhere_and_keeps_its_session() {
    let Some((url, prefix)) = redis_or_skip("holder").await else {
        return;
    };
    let mut cluster = Cluster::start(3, &url, &prefix, 100).await;
    let alice = cluster.alice();
    let session = cluster.session(0, &alice).await;
    let mut stream = get_stream(cluster.addr(1), &alice, &session, None).await;
    let priming = stream.next().await.expect("priming event");
    let last_event_id = String::from_utf8(priming.id.expect("an event id").to_vec()).expect("id");

    // B stops: its stream ends.
    cluster.nodes.get_mut(1).expect("B").stop().await;
    assert!(stream.ends().await, "the stream ended with its instance");

    // Reconnecting on C with Last-Event-ID: a fresh stream (nothing of B's replayed).
    let mut resumed = get_stream(cluster.addr(2), &alice, &session, Some(&last_event_id)).await;
    assert_eq!(resumed.status, StatusCode::OK);
    let fresh = resumed.next().await.expect("priming of the fresh stream");
    assert!(fresh.data.is_empty());
    let fresh_id = String::from_utf8(fresh.id.expect("id").to_vec()).expect("id");
    assert_ne!(
        fresh_id.split('.').next(),
        last_event_id.split('.').next(),
        "served by another instance"
    );
    // The session survived: calls work on A and C without a new initialize.
    for index in [0, 2] {
        let reply = post(cluster.addr(index), &alice, Some(&session), CALL).await;
        assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    }
    cluster.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_recovers_by_itself_after_redis_restarts() {
    let Some(mut redis) =
        own_redis_or_skip("service_recovers_by_itself_after_redis_restarts").await
    else {
        return;
    };
    let prefix = format!("it-restart-{}", SessionId::random().encode().as_str());
    let cluster = Cluster::start(2, &redis.url(), &prefix, 100).await;
    let (a, b) = (cluster.addr(0), cluster.addr(1));
    let alice = cluster.alice();
    let session = cluster.session(0, &alice).await;
    let mut stream = get_stream(a, &alice, &session, None).await;
    assert!(stream.next().await.is_some(), "priming");
    assert_eq!(get_path(a, "/readyz").await.status, StatusCode::OK);

    redis.kill();
    // Not ready, and requests needing the store fail fast with a JSON-RPC error (the hang
    // guard is the only clock here).
    assert_eq!(
        get_path(a, "/readyz").await.status,
        StatusCode::SERVICE_UNAVAILABLE
    );
    for addr in [a, b] {
        let reply = post(addr, &alice, Some(&session), CALL).await;
        assert_eq!(reply.status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(reply.json()["jsonrpc"], "2.0");
        assert!(reply.json()["error"]["code"].is_i64());
        let reply = post(addr, &alice, None, INIT).await;
        assert_eq!(reply.status, StatusCode::SERVICE_UNAVAILABLE);
    }
    // The live stream keeps running: keep-alives still arrive.
    let mut kept_alive = false;
    for _ in 0..5 {
        let chunk = stream.next_chunk().await.expect("the stream is still open");
        if chunk.starts_with(b":") {
            kept_alive = true;
            break;
        }
    }
    assert!(
        kept_alive,
        "a keep-alive on the live stream while Redis is away"
    );

    redis.restart().await;
    for addr in [a, b] {
        eventually("ready again", || async {
            get_path(addr, "/readyz").await.status == StatusCode::OK
        })
        .await;
    }
    // Redis lost everything: the old session is unknown, a new one works across instances,
    // and routing between instances is back (the subscriptions were renewed).
    post(b, &alice, Some(&session), CALL)
        .await
        .assert_unknown_session("session of the lost Redis");
    let session = cluster.session(1, &alice).await;
    let reply = post(a, &alice, Some(&session), CALL).await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    // A legacy stream is refused (503) until A can register it as the holder again.
    let mut legacy = tokio::time::timeout(GUARD, async {
        loop {
            let legacy = legacy_stream(a, &alice).await;
            if legacy.status != StatusCode::SERVICE_UNAVAILABLE {
                return legacy;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("legacy streams recover");
    assert!(legacy.next().await.is_some(), "endpoint");
    let legacy_session = legacy.header("mcp-session-id").to_owned();
    let ping = r#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#;
    // Resubscription happens in the background: post until the holder writes it.
    let routed = tokio::time::timeout(GUARD, async {
        loop {
            let reply = legacy_post(b, &alice, &legacy_session, ping).await;
            // B looks the stream's holder up before running anything: while its own Redis
            // connection is still coming back that is a 503 the client retries.
            if reply.status == StatusCode::SERVICE_UNAVAILABLE {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
            assert_eq!(reply.status, StatusCode::ACCEPTED);
            if let Ok(message) =
                tokio::time::timeout(Duration::from_millis(500), legacy.next_message()).await
            {
                return message;
            }
        }
    })
    .await
    .expect("routing recovers");
    assert_eq!(routed["id"], 9);
    cluster.finish().await;
    drop(redis);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_posts_right_after_a_redis_restart_are_delivered_or_refused_never_lost() {
    let Some(mut redis) = own_redis_or_skip("legacy_posts_after_restart").await else {
        return;
    };
    let prefix = format!("it-relegacy-{}", SessionId::random().encode().as_str());
    let cluster = Cluster::start(2, &redis.url(), &prefix, 100).await;
    let (a, b) = (cluster.addr(0), cluster.addr(1));
    let alice = cluster.alice();
    let ready = |addr| async move { get_path(addr, "/readyz").await.status == StatusCode::OK };
    for addr in [a, b] {
        eventually("ready at start", || ready(addr)).await;
    }

    redis.kill();
    for addr in [a, b] {
        eventually(
            "unready without Redis",
            || async move { !ready(addr).await },
        )
        .await;
    }
    // Long enough for the subscribers' reconnect backoff to reach its longest pause.
    tokio::time::sleep(Duration::from_secs(4)).await;
    redis.restart().await;

    // The holder's `/sse` stream on A, as soon as sessions can be minted again (Redis lost
    // everything), then at once cross-instance POSTs on B, each checked against the stream.
    let deadline = tokio::time::Instant::now() + GUARD;
    let mut legacy = loop {
        let stream = legacy_stream(a, &alice).await;
        if stream.status == StatusCode::OK {
            break stream;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no /sse after the restart"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert!(legacy.next().await.is_some(), "endpoint");
    let session = legacy.header("mcp-session-id").to_owned();
    let (mut delivered, mut refused) = (0, 0);
    for n in 100.. {
        assert!(
            tokio::time::Instant::now() < deadline,
            "delivery never recovered ({refused} refused)"
        );
        let both_ready = ready(a).await && ready(b).await;
        let ping = format!(r#"{{"jsonrpc":"2.0","id":{n},"method":"ping"}}"#);
        let reply = legacy_post(b, &alice, &session, &ping).await;
        match reply.status {
            StatusCode::ACCEPTED => {
                let message = tokio::time::timeout(GUARD / 4, legacy.next_message())
                    .await
                    .unwrap_or_else(|_| {
                        panic!("POST {n} was accepted (202) but its response never arrived")
                    });
                assert_eq!(message["id"], n);
                delivered += 1;
                if delivered == 3 {
                    break;
                }
            }
            StatusCode::SERVICE_UNAVAILABLE => {
                assert!(
                    !both_ready,
                    "POST {n} refused although /readyz said 200 on both instances"
                );
                assert_eq!(reply.json()["jsonrpc"], "2.0", "a JSON-RPC error object");
                refused += 1;
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            other => panic!("POST {n}: unexpected {other}: {:?}", reply.body),
        }
    }
    for addr in [a, b] {
        assert!(ready(addr).await, "ready once delivery works");
    }
    drop(legacy);
    cluster.finish().await;
    drop(redis);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_callers_session_id_is_unknown_on_every_path_of_every_instance() {
    let Some((url, prefix)) = redis_or_skip("isolation").await else {
        return;
    };
    let cluster = Cluster::start(3, &url, &prefix, 100).await;
    let (alice, bob) = (cluster.alice(), cluster.bob());
    let session = cluster.session(0, &alice).await;
    let mut stream = get_stream(cluster.addr(1), &alice, &session, None).await;
    assert!(stream.next().await.is_some(), "priming");
    let mut legacy = legacy_stream(cluster.addr(2), &alice).await;
    assert!(legacy.next().await.is_some(), "endpoint");
    let legacy_session = legacy.header("mcp-session-id").to_owned();

    for index in 0..3 {
        let addr = cluster.addr(index);
        post(addr, &bob, Some(&session), CALL)
            .await
            .assert_unknown_session("POST");
        let reader = get_stream(addr, &bob, &session, None).await;
        assert_eq!(reader.status, StatusCode::NOT_FOUND, "GET on {index}");
        delete(addr, &bob, &session)
            .await
            .assert_unknown_session("DELETE");
        legacy_post(addr, &bob, &legacy_session, CALL)
            .await
            .assert_unknown_session("/messages");
        // Alice's own ids are not usable across her transports either.
        legacy_post(addr, &bob, &session, CALL)
            .await
            .assert_unknown_session("/messages with the MCP session");
    }
    // Nothing of Bob's reached Alice's streams, and her session is whole.
    let reply = post(cluster.addr(2), &alice, Some(&session), CALL).await;
    assert_eq!(reply.status, StatusCode::OK);
    let ping = r#"{"jsonrpc":"2.0","id":4,"method":"ping"}"#;
    let reply = legacy_post(cluster.addr(0), &alice, &legacy_session, ping).await;
    assert_eq!(reply.status, StatusCode::ACCEPTED);
    assert_eq!(
        legacy.next_message().await["id"],
        4,
        "only Alice's own message"
    );
    let reply = delete(cluster.addr(0), &alice, &session).await;
    assert_eq!(reply.status, StatusCode::NO_CONTENT);
    assert!(stream.ends().await);
    cluster.finish().await;
}

#[tokio::test]
async fn an_unreachable_redis_refuses_the_start_with_a_clear_error() {
    // A port nothing listens on (bound, then released).
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("free port");
        listener.local_addr().expect("addr").port()
    };
    let config = ServeConfig {
        cluster: Some(RedisConfig {
            command_timeout: Duration::from_millis(300),
            ..RedisConfig::new(format!("redis://127.0.0.1:{port}"))
        }),
        ..ServeConfig::default()
    };
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let outcome = tokio::time::timeout(
        GUARD,
        sluice::serve(listener, config, std::future::pending()),
    )
    .await
    .expect("serve gave up instead of waiting");
    let err = outcome.expect_err("no silent fallback to process-local sessions");
    let text = err.to_string();
    assert!(text.contains("redis_url"), "{text}");
    assert!(text.contains("refusing to start"), "{text}");
    // Nothing is served.
    assert!(TcpStream::connect(addr).await.is_err());
}

#[test]
fn json_is_what_tests_expect() {
    // Guards the constants above against typos (they are parsed by the server otherwise).
    for text in [INIT, INITIALIZED, CALL] {
        let value: Value = serde_json::from_str(text).expect("valid JSON");
        assert_eq!(value["jsonrpc"], json!("2.0"));
    }
}
