//! The bundled demo: sample downstream APIs served on loopback and a configuration that exposes
//! them as tools, so `sluice demo` works end to end with no outside service.
//!
//! Must not be used outside `sluice demo` and tests: nothing here is production code.

mod api;

pub use api::serve_api;

/// The demo configuration; `{api}` is replaced by the demo API's base URL at start.
pub const CONFIG_TEMPLATE: &str = include_str!("sluice.demo.toml");

/// The demo configuration with the demo API's base URL filled in.
pub fn config_text(api_base: &str) -> String {
    CONFIG_TEMPLATE.replace("{api}", api_base)
}

/// What `sluice demo` prints once it listens on `addr`: where to point an MCP client and a
/// copy-pasteable session.
pub fn banner(addr: std::net::SocketAddr) -> String {
    let base = format!("http://{addr}/runtime/demo/agent");
    format!(
        "sluice demo is listening on http://{addr}\n\
         \n\
         MCP endpoint (Streamable HTTP):  {base}/mcp\n\
         REST tools:                      {base}/tools\n\
         \n\
         Try it:\n\
         curl -s {base}/tools\n\
         curl -s -X POST {base}/tools/get_customer -H 'content-type: application/json' -d '{{\"id\":\"c-100\"}}'\n\
         curl -s -X POST {base}/tools/find_customers -H 'content-type: application/json' -d '{{\"city\":\"London\"}}'\n\
         curl -s -X POST {base}/tools/discover_tool_schema -H 'content-type: application/json' -d '{{\"tool_id\":\"place_order\"}}'\n\
         curl -s -X POST {base}/tools/place_order -H 'content-type: application/json' -H 'X-Correlation-Id: demo-42' -i \\\n  \
         -d '{{\"customer_id\":\"c-100\",\"items\":[{{\"product\":\"SKU-1\",\"quantity\":2}}]}}'\n\
         curl -s -X POST {base}/mcp -H 'content-type: application/json' \\\n  \
         -H 'accept: application/json, text/event-stream' -d '{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}}'\n\
         \n\
         Ctrl-C drains and stops."
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn demo_config_parses_with_the_model() {
        let text = super::config_text("http://127.0.0.1:1");
        let config: crate::catalog::model::Config =
            toml::from_str(&text).expect("demo config parses");
        assert_eq!(config.tenants.len(), 1);
        assert_eq!(config.tenants[0].toolsets[0].tools.len(), 3);
        assert!(!text.contains("{api}"));
    }
}
