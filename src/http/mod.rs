//! HTTP plumbing: accept loop, connection limits, graceful drain, routing, media-type
//! negotiation, bounded body collection, response helpers and the one error→status mapping.
//!
//! Must not know MCP methods.
