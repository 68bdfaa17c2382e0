//! `[[tenant.toolset.tool]]`: a tool, its downstream (REST, SOAP — `soap.rs` — or federated
//! sources) and its field rules, plus the names a tool or an argument may not take.
//!
//! Owns the serde shapes and the plain facts about them (the JSON type a rule's value has).
//! Must not compile anything: URL templates and translation trees are `catalog/plan`'s, schemas
//! `catalog/schema.rs`'s.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::path::FieldPath;

/// Name of the meta-tool that returns full schemas (the catalog lists it when a client needs
/// it); no configured tool may take it.
pub(crate) const DISCOVER_TOOL_NAME: &str = "discover_tool_schema";

/// Name of the placeholder property of Lazy schemas; no input field may be exposed under it.
pub(crate) const DISCOVERY_PLACEHOLDER: &str = "_schema_discovery";

/// A tool: one business API operation exposed to AI clients.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tool {
    /// Tool name: `[A-Za-z0-9_.-]{1,128}`, unique within the tenant's visible set.
    pub name: String,
    /// What the tool does (always present on the wire; empty string when unset).
    #[serde(default)]
    pub description: String,
    /// Unpublished tools are invisible.
    #[serde(default = "yes")]
    pub published: bool,
    /// How much of the input schema `tools/list` shows.
    #[serde(default)]
    pub schema_mode: SchemaMode,
    /// Whether requests and responses of this tool are logged for audit.
    #[serde(default)]
    pub log_payloads: bool,
    /// A scope callers need to call this tool (besides the tenant's `required_scopes`); a
    /// caller without it gets 403 `insufficient_scope`.
    pub scope: Option<String>,
    /// Whether downstream response fields without an output rule are kept (`true`) or dropped.
    #[serde(default)]
    pub keep_unmapped_output: bool,
    /// Largest result (its JSON, as the model reads it) this tool returns; a larger one is
    /// handled as `on_oversize` says. Unset: the toolset's, else no limit.
    #[serde(default)]
    pub max_result_bytes: Option<usize>,
    /// What an over-limit result gets: `"truncate"` (default: arrays cut from their end until
    /// it fits, `_meta` saying what was cut) or `"refuse"` (a tool error). Unset: the
    /// toolset's, else `"truncate"`.
    #[serde(default)]
    pub on_oversize: Option<OversizePolicy>,
    /// Where the call goes.
    pub downstream: Downstream,
    /// Input field rules (exposed argument → downstream request).
    #[serde(default, rename = "input")]
    pub inputs: Vec<FieldRule>,
    /// Output field rules (downstream response → exposed result).
    #[serde(default, rename = "output")]
    pub outputs: Vec<FieldRule>,
}

fn yes() -> bool {
    true
}

/// What a result over `max_result_bytes` gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum OversizePolicy {
    /// Cut its arrays from the end until it fits.
    #[default]
    Truncate,
    /// Answer a tool error instead.
    Refuse,
}

/// How much of a tool's input schema is published in listings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum SchemaMode {
    /// Descriptions, formats and enums included.
    #[default]
    Full,
    /// Structure only: names, nesting, items, additionalProperties, required.
    DataStructureOnly,
    /// Only the `_schema_discovery` placeholder; discovery required before use.
    Lazy,
}

/// The downstream a tool calls.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Downstream {
    /// An HTTP JSON API.
    Rest(RestDownstream),
    /// A SOAP 1.1 or 1.2 operation (`config/soap.rs`); source paths are XML paths.
    Soap(super::SoapDownstream),
    /// A federated read: the same query fanned out to several provider sources, their records
    /// streamed page by page (`bos/source-results/v1`) and merged by identity.
    Federated(FederatedDownstream),
}

/// A federated read over several sources. The tool's input rules name the query parameters
/// every source receives (`location` defaults to the query for these tools).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FederatedDownstream {
    /// The record type every source returns, e.g. `person`.
    pub record_type: String,
    /// The operation deadline in milliseconds: sources still running then are cancelled and
    /// reported `source_timeout`; delivered records are kept.
    pub deadline_ms: Option<u64>,
    /// Most records this read delivers, all sources together (default `[server]
    /// federated_max_records`); past it every unfinished source ends with `source_unavailable`
    /// (reason `record_limit`), delivered records are kept and the result is partial.
    pub max_records: Option<u32>,
    /// The sources, read concurrently (at most `maxConcurrentSources` at once).
    #[serde(default, rename = "source")]
    pub sources: Vec<Source>,
}

/// One provider source of a federated read.
///
/// Provider protocol: `GET {url}?{arguments as query}&cursor=…&limit=…` answers
/// `{"records":[…], "next_cursor": "…" | null}`; each record carries `source_identity`,
/// `external_id`, `record_type`, `observed_at`, optional `version`, and `fields`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Source {
    /// The kind of system, e.g. `crm`.
    pub source_type: String,
    /// This source's identity; every record it returns must name it.
    pub source_identity: String,
    /// The provider endpoint (`http` or `https`).
    pub url: String,
    /// Per-source timeout in milliseconds for the whole read (all its pages).
    pub timeout_ms: Option<u64>,
    /// A credential sent to this provider only (never the client's).
    pub credential: Option<SourceCredential>,
    /// `limit` asked of the provider per page (default: the extension's page size).
    pub page_limit: Option<u32>,
    /// Most provider pages read from this source (default `[server] federated_max_pages`); a
    /// source still returning a cursor then ends with `source_unavailable` (reason
    /// `page_limit`), its delivered pages kept and the result partial.
    pub max_pages: Option<u32>,
    /// Capabilities published in each record's provenance (default `["read"]`).
    #[serde(default = "read_capability")]
    pub capabilities: Vec<String>,
    /// How provider fields map to the federated record.
    #[serde(default)]
    pub fields: SourceFields,
}

fn read_capability() -> Vec<String> {
    vec!["read".to_owned()]
}

/// A header carrying this source's credential, e.g. `Authorization: Bearer …`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceCredential {
    /// The header name.
    pub header: String,
    /// The header value.
    pub value: String,
}

/// Provider field paths (dotted, inside the record's `fields`) of the federated record's
/// fields; an unset or absent field is `null`.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct SourceFields {
    /// → `display_name`.
    pub display_name: Option<String>,
    /// → `email` (identity: compared lowercased and trimmed).
    pub email: Option<String>,
    /// → `phone` (identity: compared as digits, with a leading `+` kept).
    pub phone: Option<String>,
    /// → `lifecycle`.
    pub lifecycle: Option<String>,
    /// `attributes` name → provider field path.
    #[serde(default)]
    pub attributes: BTreeMap<String, String>,
}

/// A REST downstream.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RestDownstream {
    /// HTTP method (`GET`, `POST`, …).
    pub method: String,
    /// URL template with `{name}` path parameters, e.g. `http://api/customers/{id}`.
    pub url: String,
    /// Static headers sent on every call.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Per-call timeout in milliseconds (server default when unset).
    pub timeout_ms: Option<u64>,
}

/// One field mapping between the exposed (MCP) contract and the downstream (source) contract.
///
/// Paths are dotted segments with `[*]` array positions: `customer.addresses[*].city`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FieldRule {
    /// Path in the downstream payload.
    pub source: String,
    /// Path in the exposed (MCP) payload.
    pub exposed: String,
    /// JSON type of the leaf.
    #[serde(rename = "type", default)]
    pub ty: FieldType,
    /// Item type when `ty` is `array` (default `string`).
    pub items: Option<FieldType>,
    /// Whether the field is required.
    #[serde(default)]
    pub required: bool,
    /// Description (Full schema mode only).
    pub description: Option<String>,
    /// Format hint, e.g. `date-time` (Full schema mode only).
    pub format: Option<String>,
    /// Allowed values (Full schema mode only).
    #[serde(rename = "enum")]
    pub enum_values: Option<Vec<toml::Value>>,
    /// A JSON Schema passed through unchanged as `additionalProperties` of an object field.
    pub additional_properties: Option<toml::Value>,
    /// Where an input field goes in the downstream request (ignored on output rules).
    #[serde(default)]
    pub location: Location,
    /// Constraints of the value published in the schema (Full schema mode only): `pattern`,
    /// `minLength`/`maxLength` (strings), `minimum`/`maximum` (numbers), `minItems`/`maxItems`
    /// (arrays). Documentation for the model; the downstream enforces them.
    pub pattern: Option<String>,
    /// `minLength` (see `pattern`).
    pub min_length: Option<u64>,
    /// `maxLength`.
    pub max_length: Option<u64>,
    /// `minimum`.
    pub minimum: Option<f64>,
    /// `maximum`.
    pub maximum: Option<f64>,
    /// `minItems` (of an array field).
    pub min_items: Option<u64>,
    /// `maxItems` (of an array field).
    pub max_items: Option<u64>,
    /// Whether `null` is a value of the field (XSD `nillable`): the schema admits it and an
    /// argument set to `null` is sent (`xsi:nil="true"` to a SOAP downstream, `null` in a JSON
    /// body) instead of counting as absent.
    #[serde(default)]
    pub nillable: bool,
}

/// JSON type of a field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum FieldType {
    /// A JSON string.
    #[default]
    String,
    /// A JSON integer.
    Integer,
    /// Any JSON number.
    Number,
    /// `true` or `false`.
    Boolean,
    /// A JSON object.
    Object,
    /// A JSON array.
    Array,
}

/// Where an input field is placed in the downstream request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Location {
    /// A `{name}` segment of the URL template (the source path is the parameter name).
    Path,
    /// A query parameter.
    Query,
    /// A request header.
    Header,
    /// The JSON body, at the source path.
    #[default]
    Body,
}

// === impl FieldType ===

impl FieldType {
    /// The JSON Schema name of the type.
    pub fn name(self) -> &'static str {
        match self {
            FieldType::String => "string",
            FieldType::Integer => "integer",
            FieldType::Number => "number",
            FieldType::Boolean => "boolean",
            FieldType::Object => "object",
            FieldType::Array => "array",
        }
    }
}

// === impl FieldRule ===

impl Downstream {
    /// Whether source paths are XML paths (`a/b/@c`) rather than dotted JSON paths.
    pub(crate) fn xml_paths(&self) -> bool {
        matches!(self, Downstream::Soap(_))
    }
}

impl FieldRule {
    /// A rule with only its paths, type and location set (for tests).
    #[cfg(test)]
    pub(crate) fn plain(source: &str, exposed: &str, ty: FieldType, location: Location) -> Self {
        FieldRule {
            source: source.into(),
            exposed: exposed.into(),
            ty,
            items: None,
            required: false,
            description: None,
            format: None,
            enum_values: None,
            additional_properties: None,
            location,
            nillable: false,
            pattern: None,
            min_length: None,
            max_length: None,
            minimum: None,
            maximum: None,
            min_items: None,
            max_items: None,
        }
    }

    /// The element type of a path ending in `[*]`.
    pub(crate) fn element_type(&self) -> FieldType {
        match self.ty {
            FieldType::Array => self.items.unwrap_or(FieldType::String),
            ty => ty,
        }
    }

    /// The innermost value type of the rule at its parsed exposed `path`: what `format`, `enum`
    /// and `additionalProperties` describe.
    pub(crate) fn value_type(&self, path: &FieldPath) -> FieldType {
        if path.is_array_leaf() {
            self.element_type()
        } else {
            match self.ty {
                FieldType::Array => self.items.unwrap_or(FieldType::String),
                ty => ty,
            }
        }
    }
}
