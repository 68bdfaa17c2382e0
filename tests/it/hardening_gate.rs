//! Integration tests: the edge gate's DNS-rebinding protection (the `Host` allowlist, the
//! server's own origin taken from configuration only) and ambiguous credentials, over real
//! sockets on 127.0.0.1 with a real downstream that counts the orders it receives.
//!
//! Tenant `open` serves anonymous callers (as a local development server would: the case DNS
//! rebinding attacks); tenant `secure` takes API keys, which the BOS platform endpoint needs.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use http::{Method, StatusCode};
use http_body_util::Full;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use sluice::auth::apikey::{self, GeneratedKey};
use sluice::catalog::Catalog;
use sluice::ServeConfig;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

use crate::support::{request, send, Reply, GUARD};

const PEPPER: &[u8] = b"gate-pepper";
const PUBLIC: &str = "https://mcp.example.com";
const OPEN_MCP: &str = "/runtime/open/app/mcp";
const OPEN_SSE: &str = "/runtime/open/app/sse";
const ORDER: &str = "/runtime/open/app/tools/place_order";
const SECURE_MCP: &str = "/runtime/secure/app/mcp";
const PLATFORM: &str = "/mcp/apps/bos/platform";
const BOTH: &str = "application/json, text/event-stream";
const PING: &str = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
const ORDER_BODY: &str = r#"{"customer_id":"c-1"}"#;

// === support ===

/// sluice on 127.0.0.1:0 and the downstream it places orders with; shuts down when dropped.
struct Gate {
    addr: SocketAddr,
    orders: Arc<AtomicUsize>,
    key: GeneratedKey,
    other_key: GeneratedKey,
    stop: Option<oneshot::Sender<()>>,
}

impl Drop for Gate {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

impl Gate {
    /// Starts with `[server] public_url = PUBLIC` and `settings` added to `[server]`.
    async fn start(settings: &str) -> Gate {
        let orders = Arc::new(AtomicUsize::new(0));
        let downstream = downstream(Arc::clone(&orders)).await;
        let key = apikey::generate(PEPPER);
        let other_key = apikey::generate(PEPPER);
        let pepper = std::str::from_utf8(PEPPER).expect("ascii pepper");
        let text = format!(
            r#"
[server]
public_url = "{PUBLIC}"
api_key_pepper = "{pepper}"
{settings}

[[tenant]]
id = "open"
auth = {{ anonymous = true }}
[[tenant.client]]
id = "app"
[[tenant.toolset]]
id = "shop"
[[tenant.toolset.tool]]
name = "place_order"
description = "Place an order."
downstream = {{ kind = "rest", method = "POST", url = "http://{downstream}/orders" }}
[[tenant.toolset.tool.input]]
source = "customer"
exposed = "customer_id"
required = true
[[tenant.assignment]]
client = "app"
toolset = "shop"

[[tenant]]
id = "secure"
[tenant.auth]
authorization_servers = ["https://login.example.com/secure"]
[[tenant.client]]
id = "app"
[[tenant.client.api_key]]
id = "{key_id}"
hash = "{key_hash}"
[[tenant.client.api_key]]
id = "{other_id}"
hash = "{other_hash}"
[[tenant.toolset]]
id = "shop"
[[tenant.toolset.tool]]
name = "place_order"
description = "Place an order."
downstream = {{ kind = "rest", method = "POST", url = "http://{downstream}/orders" }}
[[tenant.assignment]]
client = "app"
toolset = "shop"
"#,
            key_id = key.id,
            key_hash = key.hash_hex,
            other_id = other_key.id,
            other_hash = other_key.hash_hex,
        );
        let config = sluice::catalog::load::parse(&text, "gate").expect("config");
        let catalog = Arc::new(Catalog::from_config(&config).expect("catalog"));
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(sluice::serve(
            listener,
            ServeConfig::from_catalog(catalog),
            async move {
                let _ = stopped.await;
            },
        ));
        Gate {
            addr,
            orders,
            key,
            other_key,
            stop: Some(stop),
        }
    }

    /// Sends `body` to `path` with `Host: {host}` (plus `headers`) on a fresh connection.
    async fn send(
        &self,
        method: Method,
        path: &str,
        host: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> Reply {
        let mut req = request(self.addr, method, path, headers, body);
        req.headers_mut().insert(
            http::header::HOST,
            http::HeaderValue::from_str(host).expect("host value"),
        );
        send(self.addr, req).await
    }

    /// A JSON POST accepting JSON and SSE, with `Host: {host}`.
    async fn post(&self, path: &str, host: &str, headers: &[(&str, &str)], body: &str) -> Reply {
        let mut all = vec![("content-type", "application/json"), ("accept", BOTH)];
        all.extend_from_slice(headers);
        self.send(Method::POST, path, host, &all, body).await
    }

    /// `127.0.0.1:{port}`: what a client of the loopback address sends.
    fn own_host(&self) -> String {
        self.addr.to_string()
    }

    fn orders(&self) -> usize {
        self.orders.load(Ordering::SeqCst)
    }
}

/// A downstream that counts the requests it gets and answers each with an order number.
async fn downstream(orders: Arc<AtomicUsize>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let orders = Arc::clone(&orders);
            tokio::spawn(async move {
                let service = service_fn(move |_req| {
                    orders.fetch_add(1, Ordering::SeqCst);
                    async move {
                        let mut response = http::Response::new(Full::new(Bytes::from_static(
                            br#"{"order_no":"o-1"}"#,
                        )));
                        response.headers_mut().insert(
                            http::header::CONTENT_TYPE,
                            http::HeaderValue::from_static("application/json"),
                        );
                        Ok::<_, Infallible>(response)
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    addr
}

impl Reply {
    /// Asserts a refusal: `status` with a JSON-RPC error body (`id` null, code -32000, the
    /// same code as every transport-level refusal).
    fn assert_refused(&self, status: u16, what: &str) {
        assert_eq!(
            self.status.as_u16(),
            status,
            "{what}: {:?}",
            String::from_utf8_lossy(&self.body)
        );
        assert_eq!(self.header("content-type"), "application/json", "{what}");
        let body = self.json();
        assert_eq!(body["jsonrpc"], "2.0", "{what}: {body}");
        assert_eq!(body["id"], Value::Null, "{what}: {body}");
        assert_eq!(body["error"]["code"], -32000, "{what}: {body}");
    }
}

/// Writes `raw` on a fresh connection and returns the status code of the answer.
async fn raw_status(addr: SocketAddr, raw: &str) -> u16 {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    stream.write_all(raw.as_bytes()).await.expect("write");
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = tokio::time::timeout(GUARD, stream.read(&mut buf))
            .await
            .expect("answer in time")
            .expect("read");
        answer.extend_from_slice(&buf[..n]);
        if n == 0 || answer.windows(4).any(|w| w == b"\r\n\r\n") {
            break;
        }
    }
    let text = String::from_utf8_lossy(&answer);
    let status = text.split(' ').nth(1).and_then(|code| code.parse().ok());
    status.unwrap_or_else(|| panic!("no status line in {text:?}"))
}

fn initialize() -> String {
    json!({
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "gate-test", "version": "1"}
        }
    })
    .to_string()
}

// === DNS rebinding: Host ===

#[tokio::test]
async fn rebinding_host_is_refused_with_421_on_every_surface() {
    let gate = Gate::start("").await;
    let host = format!("attacker.test:{}", gate.addr.port());
    let origin = format!("http://{host}");
    let key = format!("Bearer {}", gate.key.token);
    for with_origin in [true, false] {
        let pair: &[(&str, &str)] = if with_origin {
            &[("origin", &origin)]
        } else {
            &[]
        };
        let what = |surface: &str| format!("{surface} (Origin sent: {with_origin})");
        let reply = gate.post(OPEN_MCP, &host, pair, &initialize()).await;
        reply.assert_refused(421, &what("MCP POST"));
        let mut sse = vec![("accept", "text/event-stream")];
        sse.extend_from_slice(pair);
        let reply = gate.send(Method::GET, OPEN_SSE, &host, &sse, "").await;
        reply.assert_refused(421, &what("legacy /sse"));
        let reply = gate.post(ORDER, &host, pair, ORDER_BODY).await;
        reply.assert_refused(421, &what("REST tool call"));
        let mut bos = vec![("authorization", key.as_str())];
        bos.extend_from_slice(pair);
        let reply = gate.post(PLATFORM, &host, &bos, PING).await;
        reply.assert_refused(421, &what("BOS platform"));
    }
    assert_eq!(gate.orders(), 0, "no order went through");
}

#[tokio::test]
async fn allowed_hosts_are_served_by_default() {
    let gate = Gate::start("").await;
    // The loopback address with its port, the loopback names, and the host of public_url.
    let own = gate.own_host();
    let localhost = format!("localhost:{}", gate.addr.port());
    for host in [own.as_str(), localhost.as_str(), "mcp.example.com"] {
        let reply = gate.post(OPEN_MCP, host, &[], PING).await;
        assert_eq!(reply.status, StatusCode::OK, "Host {host}");
    }
    let reply = gate.post(ORDER, &own, &[], ORDER_BODY).await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    assert_eq!(gate.orders(), 1);
    let key = format!("Bearer {}", gate.key.token);
    let reply = gate
        .post(PLATFORM, &own, &[("authorization", &key)], PING)
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
}

#[tokio::test]
async fn configured_allowed_hosts_replace_the_default() {
    let gate = Gate::start(r#"allowed_hosts = ["mcp.internal:8443"]"#).await;
    let reply = gate.post(OPEN_MCP, "mcp.internal:8443", &[], PING).await;
    assert_eq!(reply.status, StatusCode::OK);
    let reply = gate.post(OPEN_MCP, "mcp.internal:9", &[], PING).await;
    reply.assert_refused(421, "another port");
    let reply = gate.post(OPEN_MCP, &gate.own_host(), &[], PING).await;
    reply.assert_refused(421, "loopback, not listed");
}

#[tokio::test]
async fn star_allowed_hosts_disables_the_host_check() {
    let gate = Gate::start(r#"allowed_hosts = ["*"]"#).await;
    let host = format!("attacker.test:{}", gate.addr.port());
    let reply = gate.post(OPEN_MCP, &host, &[], PING).await;
    assert_eq!(reply.status, StatusCode::OK);
}

#[tokio::test]
async fn public_documents_stay_open_to_any_host() {
    let gate = Gate::start("").await;
    let prm = format!("/.well-known/oauth-protected-resource{OPEN_MCP}");
    for path in ["/healthz", "/readyz", "/metrics", prm.as_str()] {
        let reply = gate.send(Method::GET, path, "attacker.test", &[], "").await;
        assert_eq!(reply.status, StatusCode::OK, "{path}");
    }
}

#[tokio::test]
async fn request_without_host_is_400() {
    let gate = Gate::start("").await;
    let raw = format!(
        "POST {OPEN_MCP} HTTP/1.1\r\ncontent-type: application/json\r\naccept: {BOTH}\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n{PING}",
        PING.len()
    );
    assert_eq!(raw_status(gate.addr, &raw).await, 400);
    // The same request with its Host is served: the 400 is the missing header.
    let with_host = raw.replacen("\r\n", &format!("\r\nhost: {}\r\n", gate.addr), 1);
    assert_eq!(raw_status(gate.addr, &with_host).await, 200);
}

#[tokio::test]
async fn two_host_headers_are_400() {
    // Even with the Host check off: which of the two names the server is ambiguous.
    for settings in ["", r#"allowed_hosts = ["*"]"#] {
        let gate = Gate::start(settings).await;
        let raw = format!(
            "POST {ORDER} HTTP/1.1\r\nhost: {own}\r\nhost: {own}\r\ncontent-type: application/json\r\n\
             content-length: {}\r\nconnection: close\r\n\r\n{ORDER_BODY}",
            ORDER_BODY.len(),
            own = gate.addr,
        );
        assert_eq!(raw_status(gate.addr, &raw).await, 400, "{settings}");
        assert_eq!(gate.orders(), 0);
    }
}

// === DNS rebinding: Origin ===

#[tokio::test]
async fn origin_naming_the_attacker_host_is_refused_even_with_any_host() {
    let gate = Gate::start(r#"allowed_hosts = ["*"]"#).await;
    let host = format!("attacker.test:{}", gate.addr.port());
    let origin = format!("http://{host}");
    let reply = gate
        .post(ORDER, &host, &[("origin", &origin)], ORDER_BODY)
        .await;
    reply.assert_refused(403, "REST with the rebinding pair");
    let reply = gate
        .post(OPEN_MCP, &host, &[("origin", &origin)], &initialize())
        .await;
    reply.assert_refused(403, "MCP with the rebinding pair");
    assert_eq!(gate.orders(), 0);
}

#[tokio::test]
async fn loopback_origin_with_the_bound_port_is_accepted() {
    let gate = Gate::start("").await;
    let port = gate.addr.port();
    for origin in [
        format!("http://localhost:{port}"),
        format!("http://127.0.0.1:{port}"),
        format!("http://[::1]:{port}"),
    ] {
        let reply = gate
            .post(OPEN_MCP, &gate.own_host(), &[("origin", &origin)], PING)
            .await;
        assert_eq!(reply.status, StatusCode::OK, "{origin}");
    }
    let other_port = format!("http://localhost:{}", port.wrapping_add(1));
    let reply = gate
        .post(OPEN_MCP, &gate.own_host(), &[("origin", &other_port)], PING)
        .await;
    reply.assert_refused(403, "another loopback port");
}

#[tokio::test]
async fn origin_from_public_url_is_accepted() {
    let gate = Gate::start("").await;
    for origin in [PUBLIC, "https://mcp.example.com:443"] {
        let reply = gate
            .post(OPEN_MCP, "mcp.example.com", &[("origin", origin)], PING)
            .await;
        assert_eq!(reply.status, StatusCode::OK, "{origin}");
    }
    let reply = gate
        .post(
            OPEN_MCP,
            "mcp.example.com",
            &[("origin", "http://mcp.example.com")],
            PING,
        )
        .await;
    reply.assert_refused(403, "the public host on another scheme");
}

// === ambiguous credentials ===

#[tokio::test]
async fn differing_authorization_and_x_api_key_are_400() {
    let gate = Gate::start("").await;
    let own = gate.own_host();
    let bearer = format!("Bearer {}", gate.key.token);
    let differing: [(&str, &str); 2] = [
        ("authorization", &bearer),
        ("x-api-key", &gate.other_key.token),
    ];
    for path in [SECURE_MCP, PLATFORM] {
        let reply = gate.post(path, &own, &differing, PING).await;
        reply.assert_refused(400, path);
        assert_eq!(reply.header("www-authenticate"), "", "{path}");
    }
    // A valid key in one header and anything else in the other is no better.
    let garbage = [
        ("authorization", bearer.as_str()),
        ("x-api-key", "nonsense"),
    ];
    let reply = gate.post(SECURE_MCP, &own, &garbage, PING).await;
    reply.assert_refused(400, "key and garbage");
    // On a tenant that serves anonymous callers too.
    let reply = gate.post(OPEN_MCP, &own, &differing, PING).await;
    reply.assert_refused(400, "anonymous tenant");
}

#[tokio::test]
async fn the_same_key_in_both_headers_is_served() {
    let gate = Gate::start("").await;
    let own = gate.own_host();
    let bearer = format!("Bearer {}", gate.key.token);
    let same: [(&str, &str); 2] = [("authorization", &bearer), ("x-api-key", &gate.key.token)];
    for path in [SECURE_MCP, PLATFORM] {
        let reply = gate.post(path, &own, &same, PING).await;
        assert_eq!(reply.status, StatusCode::OK, "{path}: {:?}", reply.body);
    }
}
