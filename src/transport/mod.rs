//! MCP over HTTP. For now only the `ping` path through the whole stack ([`streamable`]).
//!
//! Must not implement MCP methods beyond what the transport needs.

pub mod stream;
pub mod streamable;

use std::time::Duration;

/// Default interval between `: keepalive` comments on an idle SSE stream; a stream idle this
/// long gets one so proxies and clients do not time it out.
pub const DEFAULT_SSE_KEEPALIVE: Duration = Duration::from_secs(15);

/// The `MCP-Protocol-Version` request header.
pub const MCP_PROTOCOL_VERSION: http::HeaderName =
    http::HeaderName::from_static("mcp-protocol-version");

/// Protocol versions this runtime speaks; an `MCP-Protocol-Version` header naming any other is
/// answered 400.
pub const PROTOCOL_VERSIONS: [&str; 5] = [
    "2024-11-05",
    "2025-03-26",
    "2025-06-18",
    "2025-11-25",
    "2026-07-28",
];
