//! URL templates: `https://api/customers/{id}/orders?limit=10` split into literal and
//! parameter parts once, each parameter bound to the input leaf that fills it.
//!
//! Owns the template syntax (scheme, balanced braces, parameter names, no parameter in the
//! scheme or host, no fragment after a query) and the pairing of `{name}` parameters with
//! path-location fields, both ways. Must not percent-encode or build URLs: `invoke::request`
//! does that per call.

use super::{PlanProblem, Translation};
use crate::config::Location;

/// Longest URL template accepted, in bytes; longer templates are a plan problem.
pub(crate) const MAX_URL_TEMPLATE_BYTES: usize = 8 * 1024;

/// A URL template such as `https://api/customers/{id}/orders?limit=10`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlTemplate {
    /// Literal and parameter parts in order.
    pub parts: Vec<UrlPart>,
    /// Whether the template already has a `?` (query fields then join with `&`).
    pub has_query: bool,
    /// Sum of the literal parts' lengths, to size the output.
    pub literal_len: usize,
}

/// One part of a URL template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UrlPart {
    /// Text copied as is.
    Literal(Box<str>),
    /// A `{name}` parameter: the value of the input leaf with this index, percent-encoded.
    Param {
        /// The parameter name.
        name: Box<str>,
        /// Index into `Translation::leaves` of the path-location field that fills it.
        leaf: u32,
    },
}

/// Compiles `template` against the path fields of the compiled `input`; `None` (with the
/// problems pushed) when it does not compile.
pub(super) fn compile(
    template: &str,
    input: &Translation,
    problems: &mut Vec<PlanProblem>,
) -> Option<UrlTemplate> {
    let n_before = problems.len();
    if template.len() > MAX_URL_TEMPLATE_BYTES {
        problems.push(PlanProblem::tool(format!(
            "URL template is longer than {MAX_URL_TEMPLATE_BYTES} bytes"
        )));
        return None;
    }
    let lower = template.get(..8).unwrap_or(template).to_ascii_lowercase();
    if !(lower.starts_with("http://") || lower.starts_with("https://")) {
        problems.push(PlanProblem::tool(format!(
            "URL template {template:?} must start with http:// or https://"
        )));
    }

    // Split into literal and `{name}` parts; braces do not nest.
    let mut raw_parts: Vec<(bool, &str)> = Vec::new();
    let mut rest = template;
    let mut balanced = true;
    while !rest.is_empty() {
        match rest.find(['{', '}']) {
            None => {
                raw_parts.push((false, rest));
                rest = "";
            }
            Some(i) if rest.as_bytes().get(i) == Some(&b'}') => {
                balanced = false;
                break;
            }
            Some(i) => {
                if i > 0 {
                    raw_parts.push((false, &rest[..i]));
                }
                let after = &rest[i + 1..];
                match after.find(['{', '}']) {
                    Some(j) if after.as_bytes().get(j) == Some(&b'}') => {
                        raw_parts.push((true, &after[..j]));
                        rest = &after[j + 1..];
                    }
                    _ => {
                        balanced = false;
                        break;
                    }
                }
            }
        }
    }
    if !balanced {
        problems.push(PlanProblem::tool(format!(
            "URL template {template:?} has unbalanced braces"
        )));
        return None;
    }

    // The authority ends at the first `/`, `?` or `#` after `://`; parameters belong after it.
    let authority_end = template
        .find("://")
        .map(|s| {
            let after = s + 3;
            template[after..]
                .find(['/', '?', '#'])
                .map_or(template.len(), |e| after + e)
        })
        .unwrap_or(0);

    let mut parts = Vec::with_capacity(raw_parts.len());
    let mut has_query = false;
    let mut literal_len = 0;
    let mut offset = 0;
    let mut probe = String::with_capacity(template.len());
    let mut param_names: Vec<&str> = Vec::new();
    for (is_param, text) in raw_parts {
        if is_param {
            let valid = !text.is_empty()
                && text
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"_-.$@".contains(&b));
            if !valid {
                problems.push(PlanProblem::tool(format!(
                    "URL template parameter {{{text}}} is not a valid name"
                )));
            } else if offset < authority_end {
                problems.push(PlanProblem::tool(format!(
                    "URL template parameter {{{text}}} is in the scheme or host part"
                )));
            }
            let leaf = input
                .leaves
                .iter()
                .position(|l| l.location == Location::Path && &*l.name == text);
            match leaf {
                Some(idx) => parts.push(UrlPart::Param { name: text.into(), leaf: idx as u32 }),
                None => problems.push(PlanProblem::tool(format!(
                    "URL template parameter {{{text}}} has no input field with location \"path\" naming it"
                ))),
            }
            param_names.push(text);
            probe.push('x');
            offset += text.len() + 2;
        } else {
            if text.contains('?') {
                has_query = true;
            }
            literal_len += text.len();
            parts.push(UrlPart::Literal(text.into()));
            probe.push_str(text);
            offset += text.len();
        }
    }
    if has_query && template.contains('#') {
        problems.push(PlanProblem::tool(
            "URL template must not contain a fragment",
        ));
    }
    for leaf in input.leaves.iter().filter(|l| l.location == Location::Path) {
        if !param_names.contains(&&*leaf.name) {
            problems.push(PlanProblem::field(
                &leaf.from_path,
                format!(
                    "path field names parameter {{{}}} which the URL template does not contain",
                    leaf.name
                ),
            ));
        }
    }
    match probe.parse::<http::Uri>() {
        Ok(uri) if uri.authority().is_some() && uri.scheme().is_some() => {}
        _ => problems.push(PlanProblem::tool(format!(
            "URL template {template:?} is not a valid absolute URL"
        ))),
    }
    if problems.len() > n_before {
        return None;
    }
    Some(UrlTemplate {
        parts,
        has_query,
        literal_len,
    })
}
