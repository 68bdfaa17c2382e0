//! The bundled demo: sample downstream APIs served on loopback and a configuration that exposes
//! them as tools, so `sluice demo` works end to end with no outside service.
//!
//! Must not be used outside `sluice demo` and tests: nothing here is production code.

mod api;
pub(crate) mod providers;

pub use api::serve_api;

/// The demo configuration; `{api}` is replaced by the demo API's base URL at start.
pub(crate) const CONFIG_TEMPLATE: &str = include_str!("demo/sluice.demo.toml");

/// The demo configuration with the demo API's base URL filled in.
pub fn config_text(api_base: &str) -> String {
    CONFIG_TEMPLATE.replace("{api}", api_base)
}

/// The demo client's API key (the demo tenant also allows anonymous callers).
pub const DEMO_API_KEY: &str = "rtk_demoagentkey_demo-secret-not-for-production-use-00000000";

/// The copy-pasteable MCP session of the banner; `{mcp}` is the MCP endpoint URL.
const MCP_SESSION: &str = r#"An MCP session with curl (Streamable HTTP, protocol 2025-11-25):
MCP={mcp}
H='-H content-type:application/json -H accept:application/json,text/event-stream'
curl -si $MCP $H -d '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}'
SID=...   # paste the Mcp-Session-Id header of the answer above
curl -si $MCP $H -H "mcp-session-id: $SID" -d '{"jsonrpc":"2.0","method":"notifications/initialized"}'
curl -s $MCP $H -H "mcp-session-id: $SID" -d '{"jsonrpc":"2.0","id":1,"method":"tools/list"}'
curl -s $MCP $H -H "mcp-session-id: $SID" -d '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_customer","arguments":{"id":"c-100"}}}'
curl -N $MCP -H accept:text/event-stream -H "mcp-session-id: $SID"    # the session's stream (Ctrl-C to leave)
curl -si -X DELETE $MCP -H "mcp-session-id: $SID"                       # 204; the id is 404 from now on"#;

/// The copy-pasteable BOS platform session of the banner (`{bos}`: the platform endpoint URL,
/// `{key}`: the demo API key): the caller's contexts, then `bos_execute` of the federated read
/// `find_people` in the demo context, streamed (`bos/source-results/v1`). Runs as it stands in
/// `sh`: the handle is cut out of the `bos_list_contexts` answer.
const BOS_SESSION: &str = r#"BOS={bos}
KEY={key}
H='-H content-type:application/json -H accept:application/json,text/event-stream'
curl -s $BOS $H -H "authorization: Bearer $KEY" -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"bos_list_contexts","arguments":{}}}'
HANDLE=$(curl -s $BOS $H -H "authorization: Bearer $KEY" -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"bos_list_contexts","arguments":{}}}' | grep -o '"context_handle":"[^"]*"' | head -1 | cut -d'"' -f4)
curl -s $BOS $H -H "authorization: Bearer $KEY" -d '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"bos_list_tools","arguments":{"context_handle":"'"$HANDLE"'"}}}'
curl -N $BOS $H -H "authorization: Bearer $KEY" -d '{"jsonrpc":"2.0","id":"search-1","method":"tools/call","params":{"name":"bos_execute","arguments":{"context_handle":"'"$HANDLE"'","tool_name":"find_people","arguments":{"query":"a"}},"_meta":{"io.modelcontextprotocol/clientCapabilities":{"experimental":{"bos/source-results/v1":{}}}}}}'"#;

/// The copy-pasteable A2A session of the banner (`{a2a}`: the agent's JSON-RPC endpoint): the
/// public agent card, a blocking `SendMessage` that runs `get_customer`, then a
/// `SendStreamingMessage` whose federated `find_people` streams each source's pages as artifact
/// updates before the merged result. Runs as it stands in `sh`.
const A2A_SESSION: &str = r#"A2A={a2a}
J='-H content-type:application/json -H a2a-version:1.0'
curl -s -w '\n' $A2A/.well-known/agent-card.json
curl -s -w '\n' $A2A $J -d '{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"data":{"tool":"get_customer","arguments":{"id":"c-100"}}}]}}}'
curl -N $A2A $J -H accept:text/event-stream -d '{"jsonrpc":"2.0","id":2,"method":"SendStreamingMessage","params":{"message":{"messageId":"m2","role":"ROLE_USER","parts":[{"data":{"tool":"find_people","arguments":{"query":"a"}}}]}}}'"#;

/// The A2A session of the banner for a demo listening on `addr`: shell lines that run as they
/// stand (the integration tests run them with `sh`).
pub fn a2a_session(addr: std::net::SocketAddr) -> String {
    A2A_SESSION.replace("{a2a}", &format!("http://{addr}/runtime/demo/agent/a2a"))
}

/// The BOS platform session of the banner for a demo listening on `addr`: shell lines that run
/// as they stand (the integration tests run them with `sh`).
pub fn bos_session(addr: std::net::SocketAddr) -> String {
    BOS_SESSION
        .replace("{bos}", &format!("http://{addr}/mcp/apps/bos/platform"))
        .replace("{key}", DEMO_API_KEY)
}

/// What `sluice demo` prints once it listens on `addr`: where to point an MCP client and a
/// copy-pasteable session.
pub fn banner(addr: std::net::SocketAddr) -> String {
    let base = format!("http://{addr}/runtime/demo/agent");
    let session = MCP_SESSION.replace("{mcp}", &format!("{base}/mcp"));
    let bos = bos_session(addr);
    let a2a = a2a_session(addr);
    format!(
        "sluice demo is listening on http://{addr}\n\
         \n\
         MCP endpoint (Streamable HTTP):  {base}/mcp\n\
         Legacy HTTP+SSE (2024-11-05):    {base}/sse\n\
         REST tools:                      {base}/tools\n\
         A2A agent (JSON-RPC, 1.0 + 0.3): {base}/a2a\n\
         \n\
         {session}\n\
         \n\
         The same tools over REST:\n\
         curl -s {base}/tools\n\
         curl -s -X POST {base}/tools/get_customer -H 'content-type: application/json' -d '{{\"id\":\"c-100\"}}'\n\
         curl -s -X POST {base}/tools/find_customers -H 'content-type: application/json' -d '{{\"city\":\"London\"}}'\n\
         curl -s -X POST {base}/tools/discover_tool_schema -H 'content-type: application/json' -d '{{\"tool_id\":\"place_order\"}}'\n\
         curl -s -X POST {base}/tools/place_order -H 'content-type: application/json' -H 'X-Correlation-Id: demo-42' -i \\\n  \
         -d '{{\"customer_id\":\"c-100\",\"items\":[{{\"product\":\"SKU-1\",\"quantity\":2}}]}}'\n\
         \n\
         A federated read streaming each source's pages (bos/source-results/v1), then one merged\n\
         result (the archive source is slower than its timeout, so the result is partial):\n\
         curl -N $MCP $H -d '{{\"jsonrpc\":\"2.0\",\"id\":\"s1\",\"method\":\"tools/call\",\"params\":{{\"name\":\"find_people\",\"arguments\":{{\"query\":\"a\"}},\"_meta\":{{\"io.modelcontextprotocol/clientCapabilities\":{{\"experimental\":{{\"bos/source-results/v1\":{{}}}}}}}}}}}}'\n\
         \n\
         The same read through the BOS platform endpoint: the demo key's contexts, the tools of\n\
         its context, then bos_execute streaming find_people inside the identity envelope:\n\
         {bos}\n\
         \n\
         The same client application as an A2A agent: its card, a task running get_customer, then\n\
         a streamed task whose federated find_people sends each source's pages as artifacts:\n\
         {a2a}\n\
         \n\
         Authentication: the demo tenant lets anonymous callers in (development only) and checks any\n\
         credential that is presented. With the demo API key, then a wrong one (401 + OAuth challenge):\n\
         curl -s {base}/tools -H 'authorization: Bearer {DEMO_API_KEY}'\n\
         curl -si {base}/tools -H 'authorization: Bearer rtk_demoagentkey_wrong'\n\
         curl -s http://{addr}/.well-known/oauth-protected-resource/runtime/demo/agent/mcp\n\
         Metrics: curl -s http://{addr}/metrics\n\
         \n\
         Ctrl-C drains and stops."
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn demo_config_parses_with_the_model() {
        let text = super::config_text("http://127.0.0.1:1");
        let config: crate::config::Config = toml::from_str(&text).expect("demo config parses");
        assert_eq!(config.tenants.len(), 1);
        assert_eq!(config.tenants[0].toolsets[0].tools.len(), 4);
        assert!(!text.contains("{api}"));
    }

    #[test]
    fn banner_has_a_whole_mcp_session() {
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], 8080));
        let banner = super::banner(addr);
        assert!(banner.contains("MCP=http://127.0.0.1:8080/runtime/demo/agent/mcp"));
        for needle in [
            "\"method\":\"initialize\"",
            "notifications/initialized",
            "tools/list",
            "tools/call",
            "curl -N $MCP",
            "-X DELETE $MCP",
            "curl -N $MCP $H",
            "bos/source-results/v1",
            "BOS=http://127.0.0.1:8080/mcp/apps/bos/platform",
            "bos_list_contexts",
            "bos_execute",
        ] {
            assert!(banner.contains(needle), "{needle}");
        }
        assert!(!banner.contains("{mcp}"));
    }
}
