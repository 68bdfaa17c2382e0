//! Lifecycle methods: `initialize` with version negotiation and `ping` (handshake era),
//! `server/discover` (stateless era), and the JSON they share, computed once per dispatcher.
//!
//! Negotiation (MCP 2025-11-25, Lifecycle § Version Negotiation; `docs/mcp-pitfalls.md` point 12):
//! "If the server supports the requested protocol version, it MUST respond with the same version.
//! Otherwise, the server MUST respond with another protocol version it supports. This SHOULD be the
//! latest version supported by the server." An unknown version is never echoed and the oldest is
//! never the default. Must not touch sessions: the transport stores what [`Reply::Initialized`]
//! carries.

use bytes::{BufMut, Bytes, BytesMut};

use super::era::{Cache, Shapes};
use super::{json, names, params, Dispatcher, DispatcherConfig, Era, McpError, Reply, Scope};
use super::{ProtocolVersion, SOURCE_RESULTS_EXTENSION};
use crate::jsonrpc::Payload;

/// JSON derived from the configuration once, copied into results.
#[derive(Debug)]
pub(crate) struct Prepared {
    /// Era suffixes and serverInfo.
    pub(crate) shapes: Shapes,
    /// The `ServerCapabilities` object.
    pub(crate) capabilities: Bytes,
    /// `instructions` as a JSON string literal, when configured.
    pub(crate) instructions: Option<Bytes>,
    /// The whole `server/discover` result (stateless shape).
    pub(crate) discover: Bytes,
}

impl Prepared {
    pub(crate) fn new(config: &DispatcherConfig) -> Self {
        let shapes = Shapes::new(&config.server_name, &config.server_version, config.ttl_ms);
        let capabilities = capabilities(config);
        let instructions = config.instructions.as_deref().map(|text| {
            let mut out = BytesMut::with_capacity(text.len() + 2);
            json::put_str(&mut out, text);
            out.freeze()
        });

        let mut out = BytesMut::with_capacity(256 + capabilities.len());
        out.put_slice(b"{\"supportedVersions\":[");
        for (i, version) in ProtocolVersion::SUPPORTED.iter().enumerate() {
            if i > 0 {
                out.put_u8(b',');
            }
            json::put_str(&mut out, version.as_str());
        }
        out.put_slice(b"],\"capabilities\":");
        out.put_slice(&capabilities);
        if let Some(instructions) = &instructions {
            out.put_slice(b",\"instructions\":");
            out.put_slice(instructions);
        }
        shapes.close(&mut out, Era::Stateless, Cache::Private);

        Self {
            shapes,
            capabilities,
            instructions,
            discover: out.freeze(),
        }
    }
}

/// `{"tools":{"listChanged":true},"resources":{…},"prompts":{…}[,"experimental":{…}]}`.
fn capabilities(config: &DispatcherConfig) -> Bytes {
    let mut out = BytesMut::with_capacity(256);
    out.put_slice(
        b"{\"tools\":{\"listChanged\":true},\"resources\":{\"listChanged\":true},\
          \"prompts\":{\"listChanged\":true}",
    );
    if let Some(advert) = &config.source_results {
        out.put_slice(b",\"experimental\":{");
        json::put_str(&mut out, SOURCE_RESULTS_EXTENSION);
        out.put_slice(b":{\"pageSize\":");
        json::put_u64(&mut out, u64::from(advert.page_size));
        out.put_slice(b",\"maxConcurrentSources\":");
        json::put_u64(&mut out, u64::from(advert.max_concurrent_sources));
        out.put_slice(b",\"contractUri\":");
        json::put_str(&mut out, &advert.contract_uri);
        out.put_slice(b"}}");
    }
    out.put_u8(b'}');
    out.freeze()
}

/// The version to answer an `initialize` naming `requested`: the same when supported, else the
/// latest handshake-era version.
pub(super) fn negotiate(requested: &str) -> ProtocolVersion {
    ProtocolVersion::parse_in(Era::Handshake, requested.as_bytes())
        .or(ProtocolVersion::HANDSHAKE.first().copied())
        .unwrap_or(ProtocolVersion::DEFAULT_HANDSHAKE)
}

// === initialize ===

/// `initialize` params: `{protocolVersion, capabilities, clientInfo}`.
struct InitializeParams<'a> {
    protocol_version: &'a str,
    capabilities: Bytes,
    client_info: Bytes,
}

impl<'a> InitializeParams<'a> {
    fn parse(params: Option<&Payload<'a>>) -> Result<Self, McpError> {
        let root = params::root(params)?;
        let raw = |key: &str| -> Result<Bytes, McpError> {
            Ok(match params::opt_object(root, key)? {
                Some(value) => {
                    let mut out = BytesMut::new();
                    json::put_value(&mut out, value);
                    out.freeze()
                }
                // Required by the schema, but a missing one costs nothing to tolerate.
                None => Bytes::from_static(b"{}"),
            })
        };
        Ok(Self {
            protocol_version: params::req_str(root, "protocolVersion")?,
            capabilities: raw("capabilities")?,
            client_info: raw("clientInfo")?,
        })
    }
}

pub(crate) fn initialize(
    d: &Dispatcher,
    scope: &Scope<'_>,
    params: Option<&Payload<'_>>,
) -> Result<Reply, McpError> {
    // 2026-07-28 removed the handshake: a stateless request never initializes.
    if scope.era == Era::Stateless {
        return Err(McpError::MethodNotFound(names::INITIALIZE.to_owned()));
    }
    let params = InitializeParams::parse(params)?;
    let version = negotiate(params.protocol_version);
    let prepared = &d.prepared;
    let mut out = BytesMut::with_capacity(160 + prepared.capabilities.len());
    out.put_slice(b"{\"protocolVersion\":");
    json::put_str(&mut out, version.as_str());
    out.put_slice(b",\"capabilities\":");
    out.put_slice(&prepared.capabilities);
    out.put_slice(b",\"serverInfo\":");
    out.put_slice(prepared.shapes.server_info());
    if let Some(instructions) = &prepared.instructions {
        out.put_slice(b",\"instructions\":");
        out.put_slice(instructions);
    }
    out.put_u8(b'}');
    Ok(Reply::Initialized {
        result: out.freeze(),
        version,
        client_info: params.client_info,
        client_capabilities: params.capabilities,
    })
}

// === ping ===

pub(crate) fn ping(scope: &Scope<'_>) -> Result<Reply, McpError> {
    match scope.era {
        // "The receiver MUST respond promptly with an empty response": an object, never `[]`.
        Era::Handshake => Ok(Reply::Result(Bytes::from_static(b"{}"))),
        // Removed in 2026-07-28.
        Era::Stateless => Err(McpError::MethodNotFound(names::PING.to_owned())),
    }
}

// === server/discover ===

pub(super) fn discover(d: &Dispatcher, scope: &Scope<'_>) -> Result<Reply, McpError> {
    match scope.era {
        // A handshake-era caller must see a recognisable "not here" (`docs/eras.md`).
        Era::Handshake => Err(McpError::MethodNotFound(names::SERVER_DISCOVER.to_owned())),
        Era::Stateless => Ok(Reply::Result(d.prepared.discover.clone())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(requested: &str, expected: &str) {
        assert_eq!(negotiate(requested), expected, "{requested}");
    }

    #[test]
    fn negotiation_echoes_supported_versions_and_answers_the_latest_otherwise() {
        check("2025-11-25", "2025-11-25");
        check("2025-06-18", "2025-06-18");
        check("2025-03-26", "2025-03-26");
        check("2024-11-05", "2024-11-05");
        check("2024-10-07", "2025-11-25");
        check("2026-07-28", "2025-11-25");
        check("2099-01-01", "2025-11-25");
        check("", "2025-11-25");
    }

    #[test]
    fn capabilities_advertise_list_changed_and_the_source_results_extension() {
        let caps: serde_json::Value =
            serde_json::from_slice(&capabilities(&DispatcherConfig::default())).unwrap();
        assert_eq!(
            caps,
            serde_json::json!({
                "tools": {"listChanged": true},
                "resources": {"listChanged": true},
                "prompts": {"listChanged": true},
                "experimental": {"bos/source-results/v1": {
                    "pageSize": 100, "maxConcurrentSources": 8,
                    "contractUri": "/contracts/bos-source-results-v1"}}
            })
        );
        let config = DispatcherConfig {
            source_results: None,
            ..DispatcherConfig::default()
        };
        let caps: serde_json::Value = serde_json::from_slice(&capabilities(&config)).unwrap();
        assert!(caps.get("experimental").is_none());
    }
}
