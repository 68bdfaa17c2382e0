//! Downstream calls: request building, exposed↔source field translation, correlation.
//!
//! Must not know MCP framing.
