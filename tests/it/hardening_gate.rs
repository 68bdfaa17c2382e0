//! Integration tests: the edge gate's DNS-rebinding protection (the `Host` allowlist, the
//! server's own origin taken from configuration only) and ambiguous credentials, over real
//! sockets on 127.0.0.1 with a real downstream that counts the orders it receives.
//!
//! Tenant `open` serves anonymous callers (as a local development server would: the case DNS
//! rebinding attacks); tenant `secure` takes API keys, which the BOS platform endpoint needs.

use http::{Method, StatusCode};
use serde_json::json;
use sluice::auth::apikey::{self, GeneratedKey};

use crate::support::{raw_status, request, send, Answer, Downstream, Reply, TestServer, BOTH};

const PEPPER: &[u8] = b"gate-pepper";
const PUBLIC: &str = "https://mcp.example.com";
const OPEN_MCP: &str = "/runtime/open/app/mcp";
const OPEN_SSE: &str = "/runtime/open/app/sse";
const ORDER: &str = "/runtime/open/app/tools/place_order";
const SECURE_MCP: &str = "/runtime/secure/app/mcp";
const PLATFORM: &str = "/mcp/apps/bos/platform";
const PING: &str = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
const ORDER_BODY: &str = r#"{"customer_id":"c-1"}"#;

// === support ===

/// sluice on 127.0.0.1:0 and the downstream it places orders with; shuts down when dropped.
struct Gate {
    server: TestServer,
    orders: Downstream,
    key: GeneratedKey,
    other_key: GeneratedKey,
}

impl Gate {
    /// Starts with `[server] public_url = PUBLIC` and `settings` added to `[server]`.
    async fn start(settings: &str) -> Gate {
        let orders = Downstream::new()
            .fallback(Answer::Json(r#"{"order_no":"o-1"}"#))
            .start()
            .await;
        let downstream = orders.addr;
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
        let server = TestServer::toml(&text).start().await;
        Gate {
            server,
            orders,
            key,
            other_key,
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
        let mut req = request(self.server.addr, method, path, headers, body);
        req.headers_mut().insert(
            http::header::HOST,
            http::HeaderValue::from_str(host).expect("host value"),
        );
        send(self.server.addr, req).await
    }

    /// A JSON POST accepting JSON and SSE, with `Host: {host}`.
    async fn post(&self, path: &str, host: &str, headers: &[(&str, &str)], body: &str) -> Reply {
        let mut all = vec![("content-type", "application/json"), ("accept", BOTH)];
        all.extend_from_slice(headers);
        self.send(Method::POST, path, host, &all, body).await
    }

    /// `127.0.0.1:{port}`: what a client of the loopback address sends.
    fn own_host(&self) -> String {
        self.server.addr.to_string()
    }

    fn orders(&self) -> usize {
        self.orders.hits()
    }
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
    let host = format!("attacker.test:{}", gate.server.addr.port());
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
    let localhost = format!("localhost:{}", gate.server.addr.port());
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
    let host = format!("attacker.test:{}", gate.server.addr.port());
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
    assert_eq!(raw_status(gate.server.addr, &raw).await, 400);
    // The same request with its Host is served: the 400 is the missing header.
    let with_host = raw.replacen("\r\n", &format!("\r\nhost: {}\r\n", gate.server.addr), 1);
    assert_eq!(raw_status(gate.server.addr, &with_host).await, 200);
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
            own = gate.server.addr,
        );
        assert_eq!(raw_status(gate.server.addr, &raw).await, 400, "{settings}");
        assert_eq!(gate.orders(), 0);
    }
}

// === DNS rebinding: Origin ===

#[tokio::test]
async fn origin_naming_the_attacker_host_is_refused_even_with_any_host() {
    let gate = Gate::start(r#"allowed_hosts = ["*"]"#).await;
    let host = format!("attacker.test:{}", gate.server.addr.port());
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
    let port = gate.server.addr.port();
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
