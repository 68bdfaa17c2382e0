//! MCP over HTTP. For now only the `ping` path through the whole stack.
//!
//! Must not implement MCP methods beyond what the transport needs.
