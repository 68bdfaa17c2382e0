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

#[cfg(test)]
mod tests {
    #[test]
    fn demo_config_parses_with_the_model() {
        let text = super::config_text("http://127.0.0.1:1");
        let config: crate::catalog::model::Config = toml::from_str(&text).expect("demo config parses");
        assert_eq!(config.tenants.len(), 1);
        assert_eq!(config.tenants[0].toolsets[0].tools.len(), 3);
        assert!(!text.contains("{api}"));
    }
}
