//! `sluice import openapi`: an OpenAPI 3.0 or 3.1 document (JSON or YAML) as one REST tool per
//! operation.
//!
//! Owns reading the document, local `$ref` resolution (`#/components/...`; a reference to
//! another document is refused), and the mapping: `operationId` (or method and path) as the
//! name, `summary`/`description` as the description, path, query and header parameters and a
//! JSON request body as input rules with their locations, the first 2xx JSON response as
//! output rules, the first server as the URL base, security schemes noted as credentials to fill
//! in. What cannot be mapped (cookie parameters, object parameters, non-JSON bodies, `oneOf`/
//! `anyOf` in a body, a response that is not an object) is reported, never dropped silently.
//! Must not read WSDL or write TOML itself (`emit.rs` does).

use std::path::Path;

use serde_json::Value;

use super::emit::{config_text, quote, snake_case, RuleSpec, ToolSpec};
use super::Problem;
use crate::config::{FieldType, Location};

const METHODS: &[&str] = &["get", "put", "post", "delete", "patch", "head", "options"];

/// How deep nested schemas are followed before a value becomes a free object.
const MAX_DEPTH: usize = 8;

/// What `sluice import openapi` was asked.
#[derive(Debug, Clone, Default)]
pub struct OpenApiOptions {
    /// The tenant id of the output.
    pub tenant: String,
    /// The toolset id (default: the API's title, snake_case).
    pub toolset: Option<String>,
    /// Only these operations (operationIds or tool names).
    pub operations: Option<Vec<String>>,
}

/// Reads the document at `path` and writes its tools as configuration text; the second value
/// holds what could not be mapped and the credentials to fill in. `Err`: the document cannot be
/// used at all.
pub fn import_openapi(
    path: &Path,
    options: &OpenApiOptions,
) -> Result<(String, Vec<String>), Vec<Problem>> {
    let shown = path.display().to_string();
    let text =
        std::fs::read_to_string(path).map_err(|e| vec![Problem::file(&shown, e.to_string())])?;
    if text.len() as u64 > super::MAX_CONTRACT_BYTES {
        return Err(vec![Problem::file(
            &shown,
            "larger than the contract limit".into(),
        )]);
    }
    let doc: Value = if text.trim_start().starts_with('{') {
        serde_json::from_str(&text)
            .map_err(|e| vec![Problem::file(&shown, format!("not JSON: {e}"))])?
    } else {
        serde_norway::from_str(&text)
            .map_err(|e| vec![Problem::file(&shown, format!("not YAML: {e}"))])?
    };
    let version = doc.get("openapi").and_then(Value::as_str).unwrap_or("");
    if !(version.starts_with("3.0") || version.starts_with("3.1")) {
        return Err(vec![Problem::file(
            &shown,
            format!("openapi {version:?}: only OpenAPI 3.0 and 3.1 are supported (convert Swagger 2.0 first)"),
        )]);
    }
    let mut notes = Vec::new();
    let base = server_url(&doc, &mut notes);
    let mut tools = Vec::new();
    let mut names = std::collections::HashSet::new();
    let paths = doc
        .get("paths")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    for (path_text, item) in &paths {
        let item = resolve(&doc, item);
        for method in METHODS {
            let Some(op) = item.get(*method) else {
                continue;
            };
            let op = resolve(&doc, op);
            let default_name = format!("{method}_{}", path_text.replace(['{', '}'], ""));
            let id = op
                .get("operationId")
                .and_then(Value::as_str)
                .unwrap_or(&default_name);
            let mut name = snake_case(id);
            if let Some(wanted) = &options.operations {
                if !wanted.iter().any(|w| w == id || *w == name) {
                    continue;
                }
            }
            let stem = name.clone();
            let mut n = 2;
            while !names.insert(name.clone()) {
                name = format!("{stem}_{n}");
                n += 1;
            }
            let mut tool_notes = Vec::new();
            let mut mapper = Mapper {
                doc: &doc,
                notes: &mut tool_notes,
            };
            let mut inputs = Vec::new();
            // Path-level parameters, overridden by the operation's of the same name and place.
            let mut params: Vec<Value> = Vec::new();
            for list in [item.get("parameters"), op.get("parameters")] {
                for p in list.and_then(Value::as_array).into_iter().flatten() {
                    let p = resolve(&doc, p).clone();
                    let key = |v: &Value| (v.get("name").cloned(), v.get("in").cloned());
                    params.retain(|q| key(q) != key(&p));
                    params.push(p);
                }
            }
            for p in &params {
                mapper.parameter(p, &mut inputs);
            }
            if let Some(body) = op.get("requestBody") {
                mapper.request_body(resolve(&doc, body), &mut inputs);
            }
            let outputs = mapper.response(op.get("responses"));
            let security = op.get("security").or(doc.get("security"));
            credentials(&doc, security, &mut tool_notes);
            let description = [op.get("summary"), op.get("description")]
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(" — ");
            for note in &tool_notes {
                notes.push(format!("{name}: {note}"));
            }
            tools.push(ToolSpec {
                description: if description.is_empty() {
                    format!("{} {path_text}", method.to_uppercase())
                } else {
                    description
                },
                published: true,
                downstream: vec![
                    ("kind".into(), quote("rest")),
                    ("method".into(), quote(&method.to_uppercase())),
                    ("url".into(), quote(&format!("{base}{path_text}"))),
                ],
                notes: tool_notes,
                inputs,
                outputs,
                name,
            });
        }
    }
    let title = doc
        .pointer("/info/title")
        .and_then(Value::as_str)
        .unwrap_or("api");
    let file = path
        .file_name()
        .map_or_else(|| shown.clone(), |f| f.to_string_lossy().into_owned());
    let header = vec![
        format!("Generated by `sluice import openapi {file}`: one tool per operation of {title}."),
        "Edit freely: rename exposed fields, write descriptions, pick schema modes; then run `sluice check`.".to_owned(),
    ];
    let toolset = options.toolset.clone().unwrap_or_else(|| snake_case(title));
    let text = config_text(
        &header,
        &options.tenant,
        &toolset,
        &format!("Operations of {title}."),
        &tools,
    );
    Ok((text, notes))
}

/// The first server's URL with its variables' defaults, without a trailing slash.
fn server_url(doc: &Value, notes: &mut Vec<String>) -> String {
    let Some(server) = doc.pointer("/servers/0") else {
        notes.push("no servers: every url starts with http://localhost; set the API's base".into());
        return "http://localhost".into();
    };
    let mut url = server
        .get("url")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    if let Some(vars) = server.get("variables").and_then(Value::as_object) {
        for (name, var) in vars {
            let default = var.get("default").and_then(Value::as_str).unwrap_or("");
            url = url.replace(&format!("{{{name}}}"), default);
        }
    }
    if !url.starts_with("http://") && !url.starts_with("https://") {
        notes.push(format!("the server url {url:?} is relative: prefixed with http://localhost; set the API's base"));
        url = format!("http://localhost{url}");
    }
    url.trim_end_matches('/').to_owned()
}

/// A value with its `$ref` (local) followed; an unresolvable one is returned as it is.
fn resolve<'a>(doc: &'a Value, value: &'a Value) -> &'a Value {
    let mut value = value;
    for _ in 0..16 {
        let Some(reference) = value.get("$ref").and_then(Value::as_str) else {
            return value;
        };
        match reference.strip_prefix('#').and_then(|p| doc.pointer(p)) {
            Some(target) => value = target,
            None => return value,
        }
    }
    value
}

/// Notes the credentials the operation's security requirements need.
fn credentials(doc: &Value, security: Option<&Value>, notes: &mut Vec<String>) {
    for requirement in security.and_then(Value::as_array).into_iter().flatten() {
        for name in requirement
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, _)| k)
        {
            let scheme = doc.pointer(&format!("/components/securitySchemes/{name}"));
            let how = match scheme.and_then(|s| s.get("type")).and_then(Value::as_str) {
                Some("apiKey") => format!(
                    "an API key in {} {:?}",
                    scheme
                        .and_then(|s| s.get("in"))
                        .and_then(Value::as_str)
                        .unwrap_or("header"),
                    scheme
                        .and_then(|s| s.get("name"))
                        .and_then(Value::as_str)
                        .unwrap_or("?")
                ),
                Some("http") => format!(
                    "HTTP {} authentication",
                    scheme
                        .and_then(|s| s.get("scheme"))
                        .and_then(Value::as_str)
                        .unwrap_or("?")
                ),
                Some(other) => other.to_owned(),
                None => "an undeclared scheme".into(),
            };
            notes.push(format!(
                "credential to fill in: security scheme {name:?} ({how}); add it to the downstream's `headers`"
            ));
        }
    }
}

struct Mapper<'a, 'n> {
    doc: &'a Value,
    notes: &'n mut Vec<String>,
}

impl Mapper<'_, '_> {
    fn parameter(&mut self, p: &Value, inputs: &mut Vec<RuleSpec>) {
        let name = p.get("name").and_then(Value::as_str).unwrap_or("");
        let location = match p.get("in").and_then(Value::as_str) {
            Some("path") => Location::Path,
            Some("query") => Location::Query,
            Some("header") => Location::Header,
            other => {
                self.notes.push(format!(
                    "parameter {name:?} in {other:?} is not supported: map it by hand"
                ));
                return;
            }
        };
        let schema = p
            .get("schema")
            .map(|s| resolve(self.doc, s))
            .cloned()
            .unwrap_or(Value::Null);
        let mut rule = leaf(&schema);
        if matches!(rule.ty, FieldType::Object)
            || (rule.ty == FieldType::Array && rule.items == Some(FieldType::Object))
        {
            self.notes.push(format!(
                "parameter {name:?} is an object: not supported in {location:?}; map it by hand"
            ));
            return;
        }
        if rule.ty == FieldType::Array && location != Location::Query {
            self.notes.push(format!(
                "parameter {name:?} is an array: only query arrays are supported"
            ));
            return;
        }
        rule.source = name.to_owned();
        rule.exposed = snake_case(name);
        rule.required = location == Location::Path
            || p.get("required").and_then(Value::as_bool).unwrap_or(false);
        rule.location = location;
        if rule.description.is_none() {
            rule.description = p
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_owned);
        }
        inputs.push(rule);
    }

    fn request_body(&mut self, body: &Value, inputs: &mut Vec<RuleSpec>) {
        let content = body.get("content").and_then(Value::as_object);
        let json = content.and_then(|c| c.iter().find(|(k, _)| is_json(k)).map(|(_, v)| v));
        let Some(media) = json else {
            let types: Vec<&String> = content.map(|c| c.keys().collect()).unwrap_or_default();
            self.notes.push(format!(
                "request body {types:?} is not JSON: not mapped (send JSON or map it by hand)"
            ));
            return;
        };
        let schema = media
            .get("schema")
            .map(|s| resolve(self.doc, s))
            .cloned()
            .unwrap_or(Value::Null);
        let required = body
            .get("required")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let before = inputs.len();
        self.walk(&schema, "", "", required, true, 0, &mut Vec::new(), inputs);
        if inputs.len() == before {
            self.notes
                .push("the request body has no properties to map".into());
        }
    }

    fn response(&mut self, responses: Option<&Value>) -> Vec<RuleSpec> {
        let mut outputs = Vec::new();
        let Some(responses) = responses.and_then(Value::as_object) else {
            return outputs;
        };
        let ok = responses.iter().find(|(code, _)| code.starts_with('2'));
        let Some((_, response)) = ok else {
            return outputs;
        };
        let response = resolve(self.doc, response);
        let json = response
            .get("content")
            .and_then(Value::as_object)
            .and_then(|c| c.iter().find(|(k, _)| is_json(k)).map(|(_, v)| v));
        let Some(schema) = json.and_then(|m| m.get("schema")) else {
            return outputs;
        };
        let schema = resolve(self.doc, schema).clone();
        let object = schema_type(&schema) == Some("object")
            || schema.get("properties").is_some()
            || schema.get("allOf").is_some();
        if !object {
            self.notes.push("the response is not an object: passed through as the API answers it (no output rules)".into());
            return outputs;
        }
        self.walk(
            &schema,
            "",
            "",
            false,
            false,
            0,
            &mut Vec::new(),
            &mut outputs,
        );
        outputs
    }

    /// An object schema's properties as rules under `source`/`exposed`.
    #[allow(clippy::too_many_arguments)]
    fn walk(
        &mut self,
        schema: &Value,
        source: &str,
        exposed: &str,
        required: bool,
        input: bool,
        depth: usize,
        refs: &mut Vec<String>,
        out: &mut Vec<RuleSpec>,
    ) {
        for key in ["oneOf", "anyOf"] {
            if schema.get(key).is_some() {
                self.notes.push(format!(
                    "{key} at {:?} is not supported: map the variant you need by hand",
                    if source.is_empty() {
                        "the body"
                    } else {
                        source
                    }
                ));
                return;
            }
        }
        let mut properties = serde_json::Map::new();
        let mut required_names: Vec<String> = Vec::new();
        let mut parts = vec![schema.clone()];
        parts.extend(
            schema
                .get("allOf")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
        );
        for part in &parts {
            let part = resolve(self.doc, part);
            if let Some(props) = part.get("properties").and_then(Value::as_object) {
                properties.extend(props.clone());
            }
            for name in part
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(name) = name.as_str() {
                    required_names.push(name.to_owned());
                }
            }
        }
        for (name, prop) in &properties {
            let reference = prop.get("$ref").and_then(Value::as_str).map(str::to_owned);
            let prop = resolve(self.doc, prop);
            let src = join(source, name);
            let exp = join(exposed, name);
            let req = required && required_names.iter().any(|n| n == name);
            let recursive = reference.as_ref().is_some_and(|r| refs.contains(r));
            match schema_type(prop) {
                Some("object") | None
                    if prop.get("properties").is_some() || prop.get("allOf").is_some() =>
                {
                    if depth >= MAX_DEPTH || recursive {
                        out.push(free(&src, &exp, req && input));
                        continue;
                    }
                    if let Some(r) = &reference {
                        refs.push(r.clone());
                    }
                    self.walk(prop, &src, &exp, req, input, depth + 1, refs, out);
                    if reference.is_some() {
                        refs.pop();
                    }
                }
                Some("array") => {
                    let items = prop
                        .get("items")
                        .map(|i| resolve(self.doc, i))
                        .cloned()
                        .unwrap_or(Value::Null);
                    let object_items =
                        items.get("properties").is_some() || items.get("allOf").is_some();
                    if object_items && depth < MAX_DEPTH && !recursive {
                        self.walk(
                            &items,
                            &format!("{src}[*]"),
                            &format!("{exp}[*]"),
                            true,
                            input,
                            depth + 1,
                            refs,
                            out,
                        );
                    } else {
                        let mut rule = leaf(prop);
                        rule.source = src;
                        rule.exposed = exp;
                        rule.required = req && input;
                        out.push(rule);
                    }
                }
                _ => {
                    let mut rule = leaf(prop);
                    rule.source = src;
                    rule.exposed = exp;
                    rule.required = req && input;
                    out.push(rule);
                }
            }
        }
    }
}

fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_owned()
    } else {
        format!("{prefix}.{name}")
    }
}

fn is_json(media: &str) -> bool {
    let media = media.split(';').next().unwrap_or("").trim();
    media == "application/json" || media.ends_with("+json")
}

/// The schema's type: `type`, or the non-null member of a 3.1 type list.
fn schema_type(schema: &Value) -> Option<&str> {
    match schema.get("type") {
        Some(Value::String(t)) => Some(t),
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null"),
        _ => None,
    }
}

fn field_type(name: Option<&str>) -> FieldType {
    match name {
        Some("integer") => FieldType::Integer,
        Some("number") => FieldType::Number,
        Some("boolean") => FieldType::Boolean,
        Some("object") => FieldType::Object,
        Some("array") => FieldType::Array,
        _ => FieldType::String,
    }
}

fn free(source: &str, exposed: &str, required: bool) -> RuleSpec {
    RuleSpec {
        source: source.to_owned(),
        exposed: exposed.to_owned(),
        ty: FieldType::Object,
        required,
        any_properties: true,
        description: Some(
            "free-form object (nested deeper than the import follows, or recursive)".into(),
        ),
        ..RuleSpec::default()
    }
}

/// A scalar (or array, or free object) schema as a rule without paths.
fn leaf(schema: &Value) -> RuleSpec {
    let ty = field_type(schema_type(schema));
    let nillable = schema
        .get("nullable")
        .and_then(Value::as_bool)
        .unwrap_or(false)
        || matches!(schema.get("type"), Some(Value::Array(t)) if t.iter().any(|v| v == "null"));
    let (values_of, items) = if ty == FieldType::Array {
        let items = schema.get("items").cloned().unwrap_or(Value::Null);
        (items.clone(), Some(field_type(schema_type(&items))))
    } else {
        (schema.clone(), None)
    };
    let enum_values = values_of
        .get("enum")
        .and_then(Value::as_array)
        .map(|values| {
            values
                .iter()
                .filter(|v| !v.is_null())
                .filter_map(to_toml)
                .collect()
        })
        .unwrap_or_default();
    let number = |key: &str| values_of.get(key).and_then(Value::as_f64);
    let count = |key: &str| values_of.get(key).and_then(Value::as_u64);
    RuleSpec {
        ty,
        items,
        nillable,
        description: schema
            .get("description")
            .and_then(Value::as_str)
            .map(str::to_owned),
        format: values_of
            .get("format")
            .and_then(Value::as_str)
            .map(str::to_owned),
        enum_values,
        any_properties: ty == FieldType::Object,
        pattern: values_of
            .get("pattern")
            .and_then(Value::as_str)
            .map(str::to_owned),
        min_length: count("minLength"),
        max_length: count("maxLength"),
        minimum: number("minimum"),
        maximum: number("maximum"),
        min_items: schema.get("minItems").and_then(Value::as_u64),
        max_items: schema.get("maxItems").and_then(Value::as_u64),
        ..RuleSpec::default()
    }
}

fn to_toml(value: &Value) -> Option<toml::Value> {
    Some(match value {
        Value::String(s) => toml::Value::String(s.clone()),
        Value::Bool(b) => toml::Value::Boolean(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => toml::Value::Integer(i),
            None => toml::Value::Float(n.as_f64()?),
        },
        _ => return None,
    })
}
