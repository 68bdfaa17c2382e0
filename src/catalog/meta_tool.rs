//! The `discover_tool_schema` meta-tool's definition: description, input schema, and the
//! `tools/list` entry a snapshot adds to the listing of a client that needs discovery.
//!
//! A leaf of the catalog: `snapshot.rs` lists the entry, `discover.rs` answers calls, and
//! neither is imported here. Must not look anything up (that is `discover.rs`).

use std::sync::OnceLock;

use bytes::Bytes;
use serde_json::Value;

use super::schema::{self, DISCOVER_TOOL_NAME};

/// The meta-tool's description.
pub(crate) const DESCRIPTION: &str = "Returns the authoritative full input schema of a tool \
     (and its output schema when it has one), with a schema version and a SHA-256 schema hash. \
     Call it before the first use of a tool whose listed input schema has a _schema_discovery \
     placeholder or shows structure only.";

/// The meta-tool's input schema: `{"tool_id": string}`, required.
pub(crate) fn input_schema() -> Value {
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
pub(crate) fn entry() -> Bytes {
    static ENTRY: OnceLock<Bytes> = OnceLock::new();
    ENTRY
        .get_or_init(|| {
            let input = schema::canonical_bytes(&input_schema());
            schema::list_entry(DISCOVER_TOOL_NAME, DESCRIPTION, &input, None)
        })
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_is_valid_json_with_required_tool_id() {
        let entry: Value = serde_json::from_slice(&entry()).unwrap();
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
