//! MCP message bodies the tests send again and again (initialize, `tools/call`, the
//! stateless-era `_meta`) and the handshake-era session opening. Owns only building and
//! sending these messages; what the answers must be is asserted by the tests.

use std::net::SocketAddr;

use http::StatusCode;
use serde_json::{json, Value};

use super::post;

/// The first stateless-era protocol version (MCP 2026-07-28).
pub(crate) const MODERN: &str = "2026-07-28";

/// An `initialize` request (id 0) at `version`.
pub(crate) fn initialize_body(version: &str) -> String {
    json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name":"test","version":"1"}}})
    .to_string()
}

/// The `notifications/initialized` notification.
pub(crate) const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// A `tools/call` request.
pub(crate) fn call_body(id: u64, tool: &str, arguments: Value) -> String {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
           "params":{"name":tool,"arguments":arguments}})
    .to_string()
}

/// The `_meta` every stateless-era request carries: the version and no client capabilities.
pub(crate) fn modern_meta() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {}})
}

/// Adds to a request's `_meta` what a stateless-era client names besides its capabilities:
/// the protocol version ([`MODERN`]) and the client (`it` 1).
pub(crate) fn stateless_meta(meta: &mut serde_json::Map<String, Value>) {
    meta.insert(
        "io.modelcontextprotocol/protocolVersion".into(),
        json!(MODERN),
    );
    meta.insert(
        "io.modelcontextprotocol/clientInfo".into(),
        json!({"name": "it", "version": "1"}),
    );
}

/// Opens a handshake-era session at `path` (answers preferred as JSON): `initialize` at
/// `version`, then `notifications/initialized`; returns the session id.
pub(crate) async fn session(addr: SocketAddr, path: &str, version: &str) -> String {
    let reply = post(
        addr,
        path,
        &[("accept", "application/json, text/event-stream;q=0.5")],
        &initialize_body(version),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.json()["result"]["protocolVersion"], version);
    let id = reply.header("mcp-session-id").to_owned();
    assert_eq!(id.len(), 22, "{id}");
    let reply = post(
        addr,
        path,
        &[("mcp-session-id", &id), ("mcp-protocol-version", version)],
        INITIALIZED,
    )
    .await;
    assert_eq!(reply.status, StatusCode::ACCEPTED);
    id
}
