//! Field rule checks: exposed and source paths parse and stay shallow, no input is exposed as
//! the Lazy-schema placeholder, `items`, `additional_properties` and `enum` fit the field's
//! type, and the exposed paths of one direction form one object (asked of the
//! [`ToolCompiler`], which builds that tree).
//!
//! Owns the path depth limit and the type rules of a field. Must not build schemas or
//! translation trees.

use super::{Loc, Report, ToolCompiler};
use crate::config::{FieldPath, FieldRule, FieldType, Segment, DISCOVERY_PLACEHOLDER};

/// Most segments a field path may have. Deeper paths are refused (they would only make schemas
/// and translation recurse deeper).
pub(crate) const MAX_PATH_SEGMENTS: usize = 32;

/// Checks one direction's rules of a tool (`kind` is `field` for inputs, `output field` for
/// outputs), then the structural conflicts among their exposed paths.
/// `xml` says source paths are XML paths (a SOAP tool's).
pub(super) fn check_rules<C: ToolCompiler>(
    report: &mut Report,
    loc: &Loc,
    kind: &'static str,
    rules: &[FieldRule],
    is_input: bool,
    xml: bool,
    compiler: &C,
) {
    let mut exposed_paths = Vec::with_capacity(rules.len());
    for rule in rules {
        let floc = loc.with(kind, &rule.exposed);
        let exposed = check_path(report, &floc, "exposed", &rule.exposed, false);
        check_path(report, &floc, "source", &rule.source, xml);
        if let Some(path) = &exposed {
            if is_input
                && path
                    .segments()
                    .first()
                    .is_some_and(|s| matches!(s, Segment::Key(k) if &**k == DISCOVERY_PLACEHOLDER))
            {
                report.push(
                    &floc,
                    format!("'{DISCOVERY_PLACEHOLDER}' is reserved for lazy schema discovery"),
                );
            }
            check_types(report, &floc, rule, path);
        }
        exposed_paths.push(exposed);
    }
    for (rule, message) in compiler.conflicts(rules, &exposed_paths) {
        if let Some(rule) = rules.get(rule) {
            report.push(&loc.with(kind, &rule.exposed), message);
        }
    }
}

fn check_path(
    report: &mut Report,
    loc: &Loc,
    which: &str,
    text: &str,
    xml: bool,
) -> Option<FieldPath> {
    let parsed = if xml {
        FieldPath::parse_xml(text)
    } else {
        FieldPath::parse(text)
    };
    match parsed {
        Ok(path) if path.segments().len() > MAX_PATH_SEGMENTS => {
            report.push(
                loc,
                format!("{which} path has more than {MAX_PATH_SEGMENTS} segments"),
            );
            None
        }
        Ok(path) => Some(path),
        Err(err) => {
            report.push(
                loc,
                format!("{which} path '{text}' is not a valid field path: {err}"),
            );
            None
        }
    }
}

fn check_types(report: &mut Report, loc: &Loc, rule: &FieldRule, path: &FieldPath) {
    if let Some(items) = rule.items {
        if rule.ty != FieldType::Array {
            report.push(
                loc,
                format!(
                    "'items' is set but the type is '{}', not 'array'",
                    rule.ty.name()
                ),
            );
        } else if items == FieldType::Array {
            report.push(
                loc,
                "'items' cannot be 'array'; write nested arrays as 'path[*][*]'",
            );
        }
    }
    let value_type = rule.value_type(path);
    if let Some(extra) = &rule.additional_properties {
        if value_type != FieldType::Object {
            report.push(
                loc,
                format!(
                    "'additional_properties' needs an object field, but the value type is '{}'",
                    value_type.name()
                ),
            );
        }
        if !matches!(extra, toml::Value::Boolean(_) | toml::Value::Table(_)) {
            report.push(
                loc,
                "'additional_properties' must be a boolean or a table (a JSON Schema)",
            );
        } else if has_non_finite(extra) {
            report.push(loc, "'additional_properties' contains a non-finite number");
        }
    }
    if let Some(values) = &rule.enum_values {
        if matches!(value_type, FieldType::Object | FieldType::Array) {
            report.push(
                loc,
                format!("'enum' is not supported on '{}' values", value_type.name()),
            );
        } else {
            if values.is_empty() {
                report.push(loc, "'enum' is empty: no value could ever be accepted");
            }
            for value in values {
                if !enum_value_fits(value, value_type) {
                    report.push(
                        loc,
                        format!("enum value {value} is not of type '{}'", value_type.name()),
                    );
                }
            }
        }
    }
}

fn enum_value_fits(value: &toml::Value, ty: FieldType) -> bool {
    match (ty, value) {
        (FieldType::String, toml::Value::String(_)) => true,
        (FieldType::Integer, toml::Value::Integer(_)) => true,
        (FieldType::Number, toml::Value::Integer(_)) => true,
        (FieldType::Number, toml::Value::Float(f)) => f.is_finite(),
        (FieldType::Boolean, toml::Value::Boolean(_)) => true,
        _ => false,
    }
}

fn has_non_finite(value: &toml::Value) -> bool {
    match value {
        toml::Value::Float(f) => !f.is_finite(),
        toml::Value::Array(items) => items.iter().any(has_non_finite),
        toml::Value::Table(table) => table.values().any(has_non_finite),
        _ => false,
    }
}
