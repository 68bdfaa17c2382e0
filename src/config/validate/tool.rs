//! Toolset and tool checks: toolset ids and correlation headers, tool names (valid, unique in
//! the toolset, not the meta-tool's), federated sources, and the tool's compiled plan.
//!
//! Owns the tool name rule and the federated-read checks; runs `field.rs` for the field rules
//! and asks the [`ToolCompiler`] to compile each tool (its problems are reported once: a
//! problem the file checks already found for the same field is not repeated in the compiler's
//! words). Must not compile anything itself.

use std::collections::HashSet;

use super::tenant::check_id;
use super::{field, is_http_url, Loc, Report, TenantPlans, ToolCompiler};
use crate::config::{Downstream, FederatedDownstream, Tenant, Tool, DISCOVER_TOOL_NAME};

/// Longest tool name (MCP rule `[A-Za-z0-9_.-]{1,128}`).
pub(crate) const MAX_TOOL_NAME_LEN: usize = 128;

/// Whether `name` is a valid tool name: `[A-Za-z0-9_.-]{1,128}`.
pub(crate) fn is_valid_tool_name(name: &str) -> bool {
    (1..=MAX_TOOL_NAME_LEN).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// Every toolset of the tenant and its tools. Returns the toolset ids and the compiled plans as
/// `[toolset][tool]` (`None` where a tool did not compile).
pub(super) fn check_toolsets<'a, C: ToolCompiler>(
    report: &mut Report,
    tloc: &Loc,
    tenant: &'a Tenant,
    compiler: &C,
) -> (HashSet<&'a str>, TenantPlans<C::Plan>) {
    let mut toolset_ids = HashSet::new();
    let mut tenant_plans = Vec::with_capacity(tenant.toolsets.len());
    for toolset in &tenant.toolsets {
        let sloc = tloc.with("toolset", &toolset.id);
        check_id(report, &sloc, "toolset", &toolset.id);
        if !toolset_ids.insert(toolset.id.as_str()) {
            report.push(&sloc, "duplicate toolset id");
        }
        if toolset.correlation.header.is_empty()
            || http::HeaderName::from_bytes(toolset.correlation.header.as_bytes()).is_err()
        {
            report.push(
                &sloc,
                format!(
                    "correlation header '{}' is not a valid header name",
                    toolset.correlation.header
                ),
            );
        }
        if toolset
            .max_result_bytes
            .is_some_and(|n| n < MIN_RESULT_BYTES)
        {
            report.push(
                &sloc,
                format!("max_result_bytes must be at least {MIN_RESULT_BYTES}"),
            );
        }
        let mut tool_names = HashSet::new();
        let mut toolset_plans = Vec::with_capacity(toolset.tools.len());
        for tool in &toolset.tools {
            let loc = sloc.with("tool", &tool.name);
            if !tool_names.insert(tool.name.as_str()) {
                report.push(&loc, "duplicate tool name in this toolset");
            }
            toolset_plans.push(check_tool(report, &loc, tool, compiler));
        }
        tenant_plans.push(toolset_plans);
    }
    (toolset_ids, tenant_plans)
}

/// The smallest `max_result_bytes`: room for `[]` or `{}` and a little more, so a cut result
/// is never empty by construction.
const MIN_RESULT_BYTES: usize = 16;

/// Checks one tool; its compiled plan, or `None` when compiling it reported problems.
fn check_tool<C: ToolCompiler>(
    report: &mut Report,
    loc: &Loc,
    tool: &Tool,
    compiler: &C,
) -> Option<C::Plan> {
    let since = report.problems.len();
    if tool.max_result_bytes.is_some_and(|n| n < MIN_RESULT_BYTES) {
        report.push(
            loc,
            format!("max_result_bytes must be at least {MIN_RESULT_BYTES}"),
        );
    }
    if !is_valid_tool_name(&tool.name) {
        report.push(
            loc,
            format!("tool name must be 1–{MAX_TOOL_NAME_LEN} characters from [A-Za-z0-9_.-]"),
        );
    }
    if tool.name == DISCOVER_TOOL_NAME {
        report.push(
            loc,
            format!("'{DISCOVER_TOOL_NAME}' is reserved for the schema discovery meta-tool"),
        );
    }
    let xml = tool.downstream.xml_paths();
    field::check_rules(report, loc, "field", &tool.inputs, true, xml, compiler);
    field::check_rules(
        report,
        loc,
        "output field",
        &tool.outputs,
        false,
        xml,
        compiler,
    );
    if let Downstream::Federated(federated) = &tool.downstream {
        check_federated(report, loc, tool, federated);
    }
    if let Downstream::Soap(soap) = &tool.downstream {
        check_soap_secrets(report, loc, soap);
    }
    match compiler.compile(tool) {
        Ok(plan) => Some(plan),
        Err(problems) => {
            for problem in problems {
                let at = match &problem.field {
                    Some(field) => loc.with("field", field),
                    None => loc.clone(),
                };
                report.push_once(since, &at, problem.message);
            }
            None
        }
    }
}

/// The secrets a SOAP tool's headers carry can be read now (the call reads them at its first
/// use; a missing variable is reported here, not as failing calls).
fn check_soap_secrets(report: &mut Report, loc: &Loc, soap: &crate::config::SoapDownstream) {
    for header in &soap.headers {
        for field in &header.fields {
            if let Some(secret) = field.secret() {
                if let Err(err) = crate::config::resolve_secret(&secret) {
                    report.push(
                        loc,
                        format!("header {:?} field {:?}: {err}", header.element, field.name),
                    );
                }
            }
        }
    }
    if let Some(wss) = &soap.ws_security {
        if let Err(err) = crate::config::resolve_secret(&wss.password()) {
            report.push(loc, format!("ws_security password: {err}"));
        }
    }
}

/// A federated read: a record type, at least one source, distinct source identities, usable
/// URLs, timeouts and credentials, and no output rules (its result shape is the contract's).
fn check_federated(report: &mut Report, loc: &Loc, tool: &Tool, federated: &FederatedDownstream) {
    if federated.record_type.trim().is_empty() {
        report.push(loc, "record_type must not be empty");
    }
    if federated.deadline_ms == Some(0) {
        report.push(loc, "deadline_ms must be greater than zero");
    }
    if federated.max_records == Some(0) {
        report.push(loc, "max_records must be greater than zero");
    }
    if federated.sources.is_empty() {
        report.push(loc, "a federated tool needs at least one source");
    }
    if !tool.outputs.is_empty() {
        report.push(
            loc,
            "a federated tool has no output rules: its records use the federated record shape",
        );
    }
    let mut identities = HashSet::new();
    for source in &federated.sources {
        let sloc = loc.with("source", &source.source_identity);
        if source.source_type.trim().is_empty() || source.source_identity.trim().is_empty() {
            report.push(&sloc, "source_type and source_identity must not be empty");
        }
        if !identities.insert((source.source_type.as_str(), source.source_identity.as_str())) {
            report.push(&sloc, "duplicate source in this tool");
        }
        if !is_http_url(&source.url) {
            report.push(&sloc, format!("url '{}' is not an http(s) URL", source.url));
        }
        if source.timeout_ms == Some(0) {
            report.push(&sloc, "timeout_ms must be greater than zero");
        }
        if source.page_limit == Some(0) {
            report.push(&sloc, "page_limit must be greater than zero");
        }
        if source.max_pages == Some(0) {
            report.push(&sloc, "max_pages must be greater than zero");
        }
        if let Some(credential) = &source.credential {
            if http::HeaderName::from_bytes(credential.header.as_bytes()).is_err()
                || http::HeaderValue::from_str(&credential.value).is_err()
            {
                report.push(&sloc, "credential must be a valid header name and value");
            }
        }
        let fields = &source.fields;
        let paths = [
            &fields.display_name,
            &fields.email,
            &fields.phone,
            &fields.lifecycle,
        ];
        let empty_path = paths
            .iter()
            .any(|p| p.as_deref().is_some_and(str::is_empty))
            || fields
                .attributes
                .iter()
                .any(|(k, v)| k.is_empty() || v.is_empty());
        if empty_path {
            report.push(&sloc, "field paths and attribute names must not be empty");
        }
    }
}
