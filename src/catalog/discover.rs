//! `discover_tool_schema`: the meta-tool's definition and the catalog operation behind it.
//!
//! Seed 003: "When any visible tool uses Lazy or DataStructureOnly, the Runtime injects the
//! discover_tool_schema MCP meta-tool into tools/list. […] accepts a tool_id; returns the
//! authoritative full inputSchema; returns the full outputSchema when present; returns a schema
//! version and schema hash." Owns that lookup on a snapshot and the JSON of its answer. Must not
//! know about MCP framing (the dispatcher wraps the answer in a CallToolResult) or audit.

use std::sync::OnceLock;

use bytes::Bytes;
use serde_json::Value;

use super::schema::{self, DISCOVER_TOOL_NAME};
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

/// The meta-tool's description.
pub const META_TOOL_DESCRIPTION: &str = "Returns the authoritative full input schema of a tool \
     (and its output schema when it has one), with a schema version and a SHA-256 schema hash. \
     Call it before the first use of a tool whose listed input schema has a _schema_discovery \
     placeholder or shows structure only.";

/// The meta-tool's input schema: `{"tool_id": string}`, required.
pub fn meta_tool_input_schema() -> Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "tool_id": {
                "type": "string",
                "description": "Name of the tool whose full schema to return, as listed by tools/list."
            }
        },
        "required": ["tool_id"],
        "additionalProperties": false
    })
}

/// The meta-tool's `tools/list` entry (computed once per process).
pub fn meta_tool_entry() -> Bytes {
    static ENTRY: OnceLock<Bytes> = OnceLock::new();
    ENTRY
        .get_or_init(|| {
            let input = schema::canonical_bytes(&meta_tool_input_schema());
            schema::list_entry(DISCOVER_TOOL_NAME, META_TOOL_DESCRIPTION, &input, None)
        })
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meta_tool_entry_is_valid_json_with_required_tool_id() {
        let entry: Value = serde_json::from_slice(&meta_tool_entry()).unwrap();
        assert_eq!(entry["name"], DISCOVER_TOOL_NAME);
        assert_eq!(entry["inputSchema"]["type"], "object");
        assert_eq!(
            entry["inputSchema"]["required"],
            serde_json::json!(["tool_id"])
        );
        assert_eq!(
            entry["inputSchema"]["properties"]["tool_id"]["type"],
            "string"
        );
    }
}
