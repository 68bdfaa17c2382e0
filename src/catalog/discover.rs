//! `discover_tool_schema`: the catalog operation behind the meta-tool (its definition is
//! `meta_tool.rs`).
//!
//! The runtime specification: "When any visible tool uses Lazy or DataStructureOnly, the Runtime injects the
//! discover_tool_schema MCP meta-tool into tools/list. […] accepts a tool_id; returns the
//! authoritative full inputSchema; returns the full outputSchema when present; returns a schema
//! version and schema hash." Owns that lookup on a snapshot and the JSON of its answer. Must not
//! know about MCP framing (the dispatcher wraps the answer in a CallToolResult) or audit.

use bytes::Bytes;

use super::snapshot::{CatalogTool, Snapshot};

/// Why discovery found nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DiscoverError {
    /// The tenant or client application is unknown.
    #[error("unknown tenant '{tenant}' or client application '{client}'")]
    UnknownClient {
        /// Tenant id asked for.
        tenant: String,
        /// Client id asked for.
        client: String,
    },
    /// No tool of that name is visible to the client (unknown, unpublished or unassigned).
    #[error("unknown tool '{0}'")]
    UnknownTool(String),
}

/// The answer of `discover_tool_schema`: borrowed from the snapshot, nothing recomputed.
#[derive(Debug, Clone)]
pub struct Discovery<'a> {
    /// The tool.
    pub tool: &'a CatalogTool,
}

impl Discovery<'_> {
    /// The full input schema (canonical JSON bytes).
    pub fn input_schema(&self) -> &Bytes {
        &self.tool.schemas.input_full
    }

    /// The full output schema, when the tool has output rules.
    pub fn output_schema(&self) -> Option<&Bytes> {
        self.tool.schemas.output_full.as_ref()
    }

    /// The schema version.
    pub fn version(&self) -> u64 {
        self.tool.schema_version
    }

    /// Lower-case hex SHA-256 of the canonical full input schema.
    pub fn hash(&self) -> &str {
        &self.tool.schemas.hash
    }

    /// The answer as JSON:
    /// `{"tool_id","inputSchema"[,"outputSchema"],"schemaVersion","schemaHash"}`.
    pub fn to_json(&self) -> Vec<u8> {
        let input = self.input_schema();
        let mut out = Vec::with_capacity(input.len() + 160);
        out.extend_from_slice(b"{\"tool_id\":");
        // Serializing a string into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut out, &*self.tool.name);
        out.extend_from_slice(b",\"inputSchema\":");
        out.extend_from_slice(input);
        if let Some(output) = self.output_schema() {
            out.extend_from_slice(b",\"outputSchema\":");
            out.extend_from_slice(output);
        }
        out.extend_from_slice(b",\"schemaVersion\":");
        out.extend_from_slice(self.version().to_string().as_bytes());
        out.extend_from_slice(b",\"schemaHash\":\"");
        out.extend_from_slice(self.hash().as_bytes());
        out.extend_from_slice(b"\"}");
        out
    }
}

/// Looks up the full schemas of a tool visible to (tenant, client).
pub fn discover<'a>(
    snapshot: &'a Snapshot,
    tenant: &str,
    client: &str,
    tool_id: &str,
) -> Result<Discovery<'a>, DiscoverError> {
    let view = snapshot
        .client(tenant, client)
        .ok_or_else(|| DiscoverError::UnknownClient {
            tenant: tenant.to_owned(),
            client: client.to_owned(),
        })?;
    let tool = view
        .tool(tool_id)
        .ok_or_else(|| DiscoverError::UnknownTool(tool_id.to_owned()))?;
    Ok(Discovery { tool })
}
