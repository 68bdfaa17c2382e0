//! The importers' output: tools as the configuration text `sluice check` reads.
//!
//! Owns [`ToolSpec`] and [`RuleSpec`] (what an importer found, in configuration terms) and
//! [`config_text`], which writes a tenant, a toolset and its tools as TOML, strings quoted by
//! the `toml` crate, with `#` comments where a human has to decide something. Must not read
//! contracts: `wsdl.rs` and `openapi.rs` do.

use std::fmt::Write as _;

use crate::config::{FieldType, Location};

/// One imported tool.
#[derive(Debug, Clone, Default)]
pub struct ToolSpec {
    /// The tool name.
    pub name: String,
    /// Its description.
    pub description: String,
    /// Whether it is published (write-like operations are not, unless asked).
    pub published: bool,
    /// `key = value` lines of the downstream table (values already TOML).
    pub downstream: Vec<(String, String)>,
    /// Comment lines written after the downstream table (headers to fill in, credentials).
    pub notes: Vec<String>,
    /// Input field rules.
    pub inputs: Vec<RuleSpec>,
    /// Output field rules.
    pub outputs: Vec<RuleSpec>,
}

/// One field rule.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RuleSpec {
    pub source: String,
    pub exposed: String,
    pub ty: FieldType,
    pub items: Option<FieldType>,
    pub required: bool,
    pub nillable: bool,
    pub description: Option<String>,
    pub format: Option<String>,
    pub enum_values: Vec<toml::Value>,
    /// `additional_properties = true` on an object leaf (`xsd:anyType`, free-form objects).
    pub any_properties: bool,
    pub location: Location,
    pub pattern: Option<String>,
    pub min_length: Option<u64>,
    pub max_length: Option<u64>,
    pub minimum: Option<f64>,
    pub maximum: Option<f64>,
    pub min_items: Option<u64>,
    pub max_items: Option<u64>,
}

/// A TOML basic string.
pub(crate) fn quote(text: &str) -> String {
    toml::Value::String(text.to_owned()).to_string()
}

/// The configuration text: `[[tenant]]` `tenant` (anonymous, for a first run), a client
/// `app` assigned one `[[tenant.toolset]]` `toolset` holding `tools`, after `header` (comment
/// lines).
pub fn config_text(
    header: &[String],
    tenant: &str,
    toolset: &str,
    toolset_description: &str,
    tools: &[ToolSpec],
) -> String {
    let mut out = String::new();
    for line in header {
        let _ = writeln!(out, "# {line}");
    }
    let _ = writeln!(out, "\n[[tenant]]\nid = {}", quote(tenant));
    let _ = writeln!(
        out,
        "# Development only: anyone may call. Give the client an api_key (`sluice key new`) or\n\
         # configure auth.jwt before deploying.\nauth = {{ anonymous = true }}"
    );
    let _ = writeln!(
        out,
        "\n[[tenant.client]]\nid = \"app\"\n\n[[tenant.assignment]]\nclient = \"app\"\ntoolset = {}",
        quote(toolset)
    );
    let _ = writeln!(
        out,
        "\n[[tenant.toolset]]\nid = {}\ndescription = {}",
        quote(toolset),
        quote(toolset_description)
    );
    for tool in tools {
        let _ = writeln!(
            out,
            "\n[[tenant.toolset.tool]]\nname = {}",
            quote(&tool.name)
        );
        let _ = writeln!(out, "description = {}", quote(&tool.description));
        if !tool.published {
            let _ = writeln!(
                out,
                "# A write-like operation: review it, then publish it.\npublished = false"
            );
        }
        let _ = writeln!(out, "[tenant.toolset.tool.downstream]");
        for (key, value) in &tool.downstream {
            let _ = writeln!(out, "{key} = {value}");
        }
        for note in &tool.notes {
            let _ = writeln!(out, "# {note}");
        }
        for (kind, rules) in [("input", &tool.inputs), ("output", &tool.outputs)] {
            for rule in rules {
                write_rule(&mut out, kind, rule);
            }
        }
    }
    out
}

fn write_rule(out: &mut String, kind: &str, rule: &RuleSpec) {
    let _ = writeln!(out, "[[tenant.toolset.tool.{kind}]]");
    let _ = writeln!(out, "source = {}", quote(&rule.source));
    let _ = writeln!(out, "exposed = {}", quote(&rule.exposed));
    if rule.ty != FieldType::String {
        let _ = writeln!(out, "type = {}", quote(rule.ty.name()));
    }
    if let Some(items) = rule.items {
        let _ = writeln!(out, "items = {}", quote(items.name()));
    }
    if rule.required {
        let _ = writeln!(out, "required = true");
    }
    if rule.nillable {
        let _ = writeln!(out, "nillable = true");
    }
    if rule.location != Location::Body {
        let location = match rule.location {
            Location::Path => "path",
            Location::Query => "query",
            Location::Header => "header",
            Location::Body => "body",
        };
        let _ = writeln!(out, "location = {}", quote(location));
    }
    if let Some(description) = &rule.description {
        let _ = writeln!(out, "description = {}", quote(description));
    }
    if let Some(format) = &rule.format {
        let _ = writeln!(out, "format = {}", quote(format));
    }
    if !rule.enum_values.is_empty() {
        let values = toml::Value::Array(rule.enum_values.clone());
        let _ = writeln!(out, "enum = {values}");
    }
    if rule.any_properties {
        let _ = writeln!(out, "additional_properties = true");
    }
    if let Some(pattern) = &rule.pattern {
        let _ = writeln!(out, "pattern = {}", quote(pattern));
    }
    let numbers = [
        ("min_length", rule.min_length.map(|n| n.to_string())),
        ("max_length", rule.max_length.map(|n| n.to_string())),
        ("minimum", rule.minimum.map(float)),
        ("maximum", rule.maximum.map(float)),
        ("min_items", rule.min_items.map(|n| n.to_string())),
        ("max_items", rule.max_items.map(|n| n.to_string())),
    ];
    for (key, value) in numbers {
        if let Some(value) = value {
            let _ = writeln!(out, "{key} = {value}");
        }
    }
}

/// A float as TOML writes it (always with a fraction or exponent).
fn float(value: f64) -> String {
    toml::Value::Float(value).to_string()
}

/// `GetOrderStatus` → `get_order_status`, `orderID` → `order_id`, `ship-to` → `ship_to`: the
/// names models read best.
pub(crate) fn snake_case(name: &str) -> String {
    let chars: Vec<char> = name.chars().collect();
    let mut out = String::with_capacity(name.len() + 4);
    for (i, &c) in chars.iter().enumerate() {
        if c.is_uppercase() {
            let prev = i.checked_sub(1).and_then(|p| chars.get(p)).copied();
            let next = chars.get(i + 1).copied();
            let boundary = match prev {
                Some(p) if p.is_lowercase() || p.is_ascii_digit() => true,
                Some(p) if p.is_uppercase() => next.is_some_and(char::is_lowercase),
                _ => false,
            };
            if boundary && !out.ends_with('_') {
                out.push('_');
            }
            out.extend(c.to_lowercase());
        } else if c.is_alphanumeric() {
            out.push(c);
        } else if !out.ends_with('_') && !out.is_empty() {
            out.push('_');
        }
    }
    let out = out.trim_end_matches('_').to_owned();
    if out.is_empty() {
        "field".to_owned()
    } else if out.starts_with(|c: char| c.is_ascii_digit()) {
        format!("_{out}")
    } else {
        out
    }
}

#[cfg(test)]
mod tests {
    use super::snake_case;

    #[test]
    fn names_become_snake_case() {
        for (name, expected) in [
            ("GetOrderStatus", "get_order_status"),
            ("orderID", "order_id"),
            ("HTTPRequest", "http_request"),
            ("ship-to", "ship_to"),
            ("Add", "add"),
            ("value2Go", "value2_go"),
            ("_x", "x"),
            ("9lives", "_9lives"),
        ] {
            assert_eq!(snake_case(name), expected, "{name}");
        }
    }
}
