//! JSON Schema (2020-12) generation from the *exposed* paths of a tool's field rules.
//!
//! Owns the path tree (`a.b[*].c` → `a`: object → `b`: array of objects → `c`), the structural
//! conflicts found while building it (reported during validation through `compile.rs`), the
//! three listing modes, and the canonical JSON form that schema hashes are computed over. Must not know about tenants,
//! clients or snapshots; never called per request (the snapshot computes everything once).
//!
//! Rules of the generated schema:
//! - The root is always `{"type":"object","properties":{…}}` (with `"properties":{}` for a tool
//!   without inputs, which strict consumers want), never a `$ref`.
//! - A `[*]` position is an array whose `items` describe what follows it. A path ending in `[*]`
//!   (`tags[*]`) is an array of scalars: the element type is the rule's `items` when its `type`
//!   is `array`, else its `type` (so `type = "integer"` on `ids[*]` means integers).
//! - A leaf of `type = "array"` has `items` of the rule's `items` type (default `string`).
//! - `format`, `enum` and `additionalProperties` describe the innermost value (the array items
//!   for array leaves); `description` describes the property itself.
//! - `additionalProperties` is the rule's TOML value converted to JSON, otherwise unchanged.
//! - **Required rule:** a property is listed in its parent's `required` when any rule with
//!   `required = true` lies at or below it. So a required `a.b[*].c` makes `a` required in the
//!   root, `b` required in `a`, and `c` required in each item of `b`.
//! - Objects print their keys in sorted order (canonical form), so output is deterministic and
//!   the emitted bytes are exactly the bytes that are hashed.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use bytes::Bytes;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use crate::config::{FieldPath, FieldRule, FieldType, SchemaMode, Segment, Tool};

pub(crate) use crate::config::{DISCOVERY_PLACEHOLDER, DISCOVER_TOOL_NAME};

/// How much human-readable metadata a generated schema keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Detail {
    /// Descriptions, formats and enums.
    Full,
    /// Structure only: names, nesting, items, additionalProperties, required.
    StructureOnly,
}

/// What a position of the path tree is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    /// An object with named members.
    Object,
    /// An array (`[*]`).
    Array,
    /// A value described by one rule.
    Leaf,
}

impl Shape {
    fn name(self) -> &'static str {
        match self {
            Shape::Object => "an object",
            Shape::Array => "an array",
            Shape::Leaf => "a leaf",
        }
    }
}

/// Two rules that cannot both hold in one schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Conflict {
    /// Rule `rule` has the same exposed path as the earlier rule `other`.
    Duplicate {
        /// Index of the later rule.
        rule: usize,
        /// Index of the earlier rule.
        other: usize,
    },
    /// Rule `rule` needs `at` to be `wanted` but the earlier rule `other` made it `existing`.
    Structure {
        /// Index of the later rule.
        rule: usize,
        /// Index of the rule that shaped the position first.
        other: usize,
        /// The contested path prefix, e.g. `customer.address`.
        at: String,
        /// What `rule` needs there.
        wanted: Shape,
        /// What it already is.
        existing: Shape,
    },
}

impl Conflict {
    /// The index of the rule the conflict is reported on (the later one).
    pub(crate) fn rule(&self) -> usize {
        match self {
            Conflict::Duplicate { rule, .. } | Conflict::Structure { rule, .. } => *rule,
        }
    }

    /// A message naming the other rule by its exposed path.
    pub(crate) fn message(&self, rules: &[FieldRule]) -> String {
        let exposed = |i: usize| rules.get(i).map_or("?", |r| r.exposed.as_str());
        match self {
            Conflict::Duplicate { .. } => "exposed path is used by another rule too".to_owned(),
            Conflict::Structure {
                other,
                at,
                wanted,
                existing,
                ..
            } => format!(
                "'{at}' is {} here but {} in '{}'",
                wanted.name(),
                existing.name(),
                exposed(*other)
            ),
        }
    }
}

// === the path tree ===

#[derive(Debug)]
struct Node<'a> {
    /// Index of the rule that created this position (named in conflicts).
    owner: usize,
    kind: Kind<'a>,
}

#[derive(Debug)]
enum Kind<'a> {
    Object(Obj<'a>),
    Array(Box<Node<'a>>),
    Leaf(&'a FieldRule),
}

#[derive(Debug, Default)]
struct Obj<'a> {
    props: BTreeMap<&'a str, Prop<'a>>,
}

#[derive(Debug)]
struct Prop<'a> {
    node: Node<'a>,
    /// Some required rule lies at or below this property.
    required: bool,
}

impl Kind<'_> {
    fn shape(&self) -> Shape {
        match self {
            Kind::Object(_) => Shape::Object,
            Kind::Array(_) => Shape::Array,
            Kind::Leaf(_) => Shape::Leaf,
        }
    }
}

fn wanted_shape(rest: &[Segment]) -> Shape {
    match rest.first() {
        None => Shape::Leaf,
        Some(Segment::Key(_)) => Shape::Object,
        Some(Segment::Each) => Shape::Array,
    }
}

/// The exposed-path tree of a list of rules.
#[derive(Debug, Default)]
pub(crate) struct Tree<'a> {
    root: Obj<'a>,
}

impl<'a> Tree<'a> {
    /// Builds the tree of `rules` whose paths are given parsed (`None` = unparsable, skipped).
    /// Returns the tree of the rules that fit plus every conflict.
    pub(crate) fn build(
        rules: &'a [FieldRule],
        paths: &'a [Option<FieldPath>],
    ) -> (Tree<'a>, Vec<Conflict>) {
        let mut tree = Tree::default();
        let mut conflicts = Vec::new();
        for (idx, (rule, path)) in rules.iter().zip(paths).enumerate() {
            let Some(path) = path else { continue };
            if let Err(conflict) = insert_obj(&mut tree.root, path.segments(), path, idx, rule) {
                conflicts.push(conflict);
            }
        }
        (tree, conflicts)
    }

    /// The object schema of the tree.
    pub(crate) fn to_schema(&self, detail: Detail) -> Value {
        let mut root = emit_obj(&self.root, detail);
        if let Value::Object(map) = &mut root {
            map.entry("properties").or_insert_with(|| json!({}));
        }
        root
    }
}

fn insert_obj<'a>(
    obj: &mut Obj<'a>,
    rest: &'a [Segment],
    full: &FieldPath,
    idx: usize,
    rule: &'a FieldRule,
) -> Result<(), Conflict> {
    let Some((Segment::Key(key), tail)) = rest.split_first() else {
        // The parser guarantees a member name here; a stray `[*]` is reported as a conflict.
        return Err(structure(full, rest, idx, idx, Shape::Array, Shape::Object));
    };
    match obj.props.get_mut(&**key) {
        None => {
            obj.props.insert(
                key,
                Prop {
                    node: fresh(tail, idx, rule),
                    required: rule.required,
                },
            );
            Ok(())
        }
        Some(prop) => {
            insert_node(&mut prop.node, tail, full, idx, rule)?;
            prop.required |= rule.required;
            Ok(())
        }
    }
}

fn insert_node<'a>(
    node: &mut Node<'a>,
    rest: &'a [Segment],
    full: &FieldPath,
    idx: usize,
    rule: &'a FieldRule,
) -> Result<(), Conflict> {
    match (&mut node.kind, rest.split_first()) {
        (Kind::Leaf(_), None) => Err(Conflict::Duplicate {
            rule: idx,
            other: node.owner,
        }),
        (Kind::Object(obj), Some((Segment::Key(_), _))) => insert_obj(obj, rest, full, idx, rule),
        (Kind::Array(inner), Some((Segment::Each, tail))) => {
            insert_node(inner, tail, full, idx, rule)
        }
        (kind, _) => Err(structure(
            full,
            rest,
            idx,
            node.owner,
            wanted_shape(rest),
            kind.shape(),
        )),
    }
}

fn fresh<'a>(rest: &'a [Segment], idx: usize, rule: &'a FieldRule) -> Node<'a> {
    let kind = match rest.split_first() {
        None => Kind::Leaf(rule),
        Some((Segment::Each, tail)) => Kind::Array(Box::new(fresh(tail, idx, rule))),
        Some((Segment::Key(key), tail)) => {
            let mut obj = Obj::default();
            obj.props.insert(
                key,
                Prop {
                    node: fresh(tail, idx, rule),
                    required: rule.required,
                },
            );
            Kind::Object(obj)
        }
    };
    Node { owner: idx, kind }
}

fn structure(
    full: &FieldPath,
    rest: &[Segment],
    rule: usize,
    other: usize,
    wanted: Shape,
    existing: Shape,
) -> Conflict {
    let taken = full.segments().len().saturating_sub(rest.len());
    Conflict::Structure {
        rule,
        other,
        at: prefix_text(&full.segments()[..taken]),
        wanted,
        existing,
    }
}

fn prefix_text(segments: &[Segment]) -> String {
    let mut out = String::new();
    for (i, seg) in segments.iter().enumerate() {
        match seg {
            Segment::Key(k) => {
                if i > 0 {
                    out.push('.');
                }
                out.push_str(k);
            }
            Segment::Each => out.push_str("[*]"),
        }
    }
    out
}

// === emission ===

fn emit_obj(obj: &Obj<'_>, detail: Detail) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for (name, prop) in &obj.props {
        properties.insert((*name).to_owned(), emit_prop(prop, detail));
        if prop.required {
            required.push(Value::String((*name).to_owned()));
        }
    }
    let mut map = Map::new();
    map.insert("type".into(), "object".into());
    map.insert("properties".into(), Value::Object(properties));
    if !required.is_empty() {
        map.insert("required".into(), Value::Array(required));
    }
    Value::Object(map)
}

fn emit_prop(prop: &Prop<'_>, detail: Detail) -> Value {
    let mut value = emit_node(&prop.node, detail);
    if detail == Detail::Full {
        if let (Some(rule), Value::Object(map)) = (described_rule(&prop.node), &mut value) {
            if let Some(description) = &rule.description {
                map.insert("description".into(), description.as_str().into());
            }
        }
    }
    value
}

/// The rule whose description belongs on this property: its own leaf, or the scalar leaf at the
/// end of a chain of arrays (`tags[*]`, `matrix[*][*]`).
fn described_rule<'a>(node: &Node<'a>) -> Option<&'a FieldRule> {
    match &node.kind {
        Kind::Leaf(rule) => Some(rule),
        Kind::Array(inner) => described_rule(inner),
        Kind::Object(_) => None,
    }
}

fn emit_node(node: &Node<'_>, detail: Detail) -> Value {
    match &node.kind {
        Kind::Object(obj) => emit_obj(obj, detail),
        Kind::Array(inner) => {
            let items = match &inner.kind {
                // A nillable `[*]` field's elements may each be `null`.
                Kind::Leaf(rule) => value_schema(rule.element_type(), rule, detail, rule.nillable),
                _ => emit_node(inner, detail),
            };
            json!({"type": "array", "items": items})
        }
        Kind::Leaf(rule) => match rule.ty {
            FieldType::Array => {
                let ty = rule.items.unwrap_or(FieldType::String);
                let items = value_schema(ty, rule, detail, false);
                let mut array =
                    json!({"type": type_names(FieldType::Array, rule.nillable), "items": items});
                if let (Detail::Full, Value::Object(map)) = (detail, &mut array) {
                    if let Some(n) = rule.min_items {
                        map.insert("minItems".into(), n.into());
                    }
                    if let Some(n) = rule.max_items {
                        map.insert("maxItems".into(), n.into());
                    }
                }
                array
            }
            ty => value_schema(ty, rule, detail, rule.nillable),
        },
    }
}

/// `"string"`, or `["string","null"]` for a nillable value.
fn type_names(ty: FieldType, nullable: bool) -> Value {
    if nullable {
        json!([ty.name(), "null"])
    } else {
        ty.name().into()
    }
}

fn value_schema(ty: FieldType, rule: &FieldRule, detail: Detail, nullable: bool) -> Value {
    let mut map = Map::new();
    map.insert("type".into(), type_names(ty, nullable));
    if ty == FieldType::Array {
        // Only reachable when `items = "array"`, which validation refuses; stay well-formed.
        map.insert("items".into(), json!({"type": "string"}));
    }
    if ty == FieldType::Object {
        if let Some(extra) = &rule.additional_properties {
            map.insert("additionalProperties".into(), toml_to_json(extra));
        }
    }
    if detail == Detail::Full {
        if let Some(format) = &rule.format {
            map.insert("format".into(), format.as_str().into());
        }
        let facets = [
            ("pattern", rule.pattern.as_deref().map(Value::from)),
            ("minLength", rule.min_length.map(Value::from)),
            ("maxLength", rule.max_length.map(Value::from)),
            ("minimum", rule.minimum.map(Value::from)),
            ("maximum", rule.maximum.map(Value::from)),
        ];
        for (name, value) in facets {
            if let Some(value) = value {
                map.insert(name.into(), value);
            }
        }
        if let Some(values) = &rule.enum_values {
            let mut values: Vec<Value> = values.iter().map(toml_to_json).collect();
            if nullable {
                values.push(Value::Null);
            }
            map.insert("enum".into(), Value::Array(values));
        }
    }
    Value::Object(map)
}

/// Converts a TOML value to JSON. Datetimes become their RFC 3339 text; non-finite floats (which
/// JSON cannot carry, and validation refuses) become `null`.
pub(crate) fn toml_to_json(value: &toml::Value) -> Value {
    match value {
        toml::Value::String(s) => Value::String(s.clone()),
        toml::Value::Integer(i) => Value::from(*i),
        toml::Value::Float(f) => {
            serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number)
        }
        toml::Value::Boolean(b) => Value::Bool(*b),
        toml::Value::Datetime(d) => Value::String(d.to_string()),
        toml::Value::Array(items) => Value::Array(items.iter().map(toml_to_json).collect()),
        toml::Value::Table(table) => Value::Object(
            table
                .iter()
                .map(|(k, v)| (k.clone(), toml_to_json(v)))
                .collect(),
        ),
    }
}

// === canonical JSON ===

/// Writes `value` compactly with object keys in sorted (byte) order, whatever the map type.
pub(crate) fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_unstable();
            out.push(b'{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_scalar(&Value::String(key.clone()), out);
                out.push(b':');
                if let Some(v) = map.get(key) {
                    write_canonical(v, out);
                }
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(item, out);
            }
            out.push(b']');
        }
        scalar => write_scalar(scalar, out),
    }
}

fn write_scalar(value: &Value, out: &mut Vec<u8>) {
    // Serializing a scalar `Value` into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, value);
}

/// The canonical bytes of a value.
pub(crate) fn canonical_bytes(value: &Value) -> Bytes {
    let mut out = Vec::with_capacity(256);
    write_canonical(value, &mut out);
    Bytes::from(out)
}

/// Lower-case hex SHA-256 of bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut hex = String::with_capacity(64);
    for byte in digest {
        let _ = write!(hex, "{byte:02x}");
    }
    hex
}

// === per-tool schemas ===

/// A tool's schemas whose structure does not hold together (validation reports these first).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("tool '{tool}': field rules do not form one schema")]
pub struct SchemaError {
    /// The tool.
    pub tool: String,
}

/// Every schema of one tool, serialized once.
#[derive(Debug, Clone)]
pub struct ToolSchemas {
    /// The full input schema, canonical bytes (what discovery returns and the hash covers).
    pub input_full: Bytes,
    /// The input schema shown in listings for the tool's mode (same bytes as `input_full` in
    /// Full mode).
    pub input_listed: Bytes,
    /// The full output schema, when the tool has output rules.
    pub output_full: Option<Bytes>,
    /// The output schema shown in listings: full or structure-only per mode; `None` in Lazy mode
    /// (discovery returns it).
    pub output_listed: Option<Bytes>,
    /// Lower-case hex SHA-256 of `input_full`.
    pub hash: String,
}

/// Parses the exposed paths of rules (`None` for unparsable ones).
pub(crate) fn parse_exposed(rules: &[FieldRule]) -> Vec<Option<FieldPath>> {
    rules
        .iter()
        .map(|r| FieldPath::parse(&r.exposed).ok())
        .collect()
}

/// The input schema of a tool at a level of detail (`None` when its rules conflict).
pub(crate) fn input_schema(tool: &Tool, detail: Detail) -> Option<Value> {
    rules_schema(&tool.inputs, detail)
}

/// The output schema of a tool at a level of detail; `None` when it has no output rules or
/// they conflict.
pub(crate) fn output_schema(tool: &Tool, detail: Detail) -> Option<Value> {
    if tool.outputs.is_empty() {
        return None;
    }
    rules_schema(&tool.outputs, detail)
}

fn rules_schema(rules: &[FieldRule], detail: Detail) -> Option<Value> {
    let paths = parse_exposed(rules);
    if paths.iter().any(Option::is_none) {
        return None;
    }
    let (tree, conflicts) = Tree::build(rules, &paths);
    conflicts.is_empty().then(|| tree.to_schema(detail))
}

/// The Lazy listing schema: only the required `_schema_discovery` placeholder.
pub(crate) fn lazy_schema(tool_name: &str) -> Value {
    let description = format!(
        "This tool's parameters are not listed. Before the first call, call {DISCOVER_TOOL_NAME} \
         with {{\"tool_id\": \"{tool_name}\"}} to get the full input schema, then call this tool \
         with the arguments it describes. A call whose only argument is {DISCOVERY_PLACEHOLDER} is \
         refused."
    );
    json!({
        "type": "object",
        "properties": {
            DISCOVERY_PLACEHOLDER: {"type": "boolean", "description": description}
        },
        "required": [DISCOVERY_PLACEHOLDER]
    })
}

/// Generates every schema of a tool, once.
pub fn generate(tool: &Tool) -> Result<ToolSchemas, SchemaError> {
    let err = || SchemaError {
        tool: tool.name.clone(),
    };
    let input_full = canonical_bytes(&input_schema(tool, Detail::Full).ok_or_else(err)?);
    let input_listed = match tool.schema_mode {
        SchemaMode::Full => input_full.clone(),
        SchemaMode::DataStructureOnly => {
            canonical_bytes(&input_schema(tool, Detail::StructureOnly).ok_or_else(err)?)
        }
        SchemaMode::Lazy => canonical_bytes(&lazy_schema(&tool.name)),
    };
    let (output_full, output_listed) = if tool.outputs.is_empty() {
        (None, None)
    } else {
        let full = canonical_bytes(&output_schema(tool, Detail::Full).ok_or_else(err)?);
        let listed = match tool.schema_mode {
            SchemaMode::Full => Some(full.clone()),
            SchemaMode::DataStructureOnly => Some(canonical_bytes(
                &output_schema(tool, Detail::StructureOnly).ok_or_else(err)?,
            )),
            SchemaMode::Lazy => None,
        };
        (Some(full), listed)
    };
    let hash = sha256_hex(&input_full);
    Ok(ToolSchemas {
        input_full,
        input_listed,
        output_full,
        output_listed,
        hash,
    })
}

/// The `tools/list` entry of a tool: `{"name","description","inputSchema"[,"outputSchema"]}`.
pub fn list_entry(name: &str, description: &str, input: &[u8], output: Option<&[u8]>) -> Bytes {
    let mut out = Vec::with_capacity(name.len() + description.len() + input.len() + 64);
    out.extend_from_slice(b"{\"name\":");
    write_scalar(&Value::String(name.to_owned()), &mut out);
    out.extend_from_slice(b",\"description\":");
    write_scalar(&Value::String(description.to_owned()), &mut out);
    out.extend_from_slice(b",\"inputSchema\":");
    out.extend_from_slice(input);
    if let Some(output) = output {
        out.extend_from_slice(b",\"outputSchema\":");
        out.extend_from_slice(output);
    }
    out.push(b'}');
    Bytes::from(out)
}

#[cfg(test)]
mod tests;
