//! Compiled invocation plans: a tool's field rules and URL template, parsed and checked once per
//! snapshot so that a call only executes them.
//!
//! Owns [`ToolPlan`] and the checks of the whole tool that can be made before a call: method,
//! timeout, static and field header names; a REST tool compiles its input and output
//! [`Translation`]s (`plan/translate.rs`: field path syntax and `[*]` structure, overlapping
//! paths, path, query and header fields) and then its [`UrlTemplate`] against the input's path
//! fields (`plan/url.rs`: template syntax, parameters); a federated tool compiles as a GET whose
//! fields default to the query. Pure data and checks; no IO. Must not execute anything:
//! `invoke::translate` walks these trees at call time.

mod soap;
mod translate;
mod url;

use std::sync::Arc;
use std::time::Duration;

use http::{HeaderName, HeaderValue, Method};

pub(crate) use soap::{
    check_ncname, escape, is_xml_text, HeadPart, SoapPlan, XmlChild, XmlKind, XmlNode, SOAP11_ENV,
    SOAP12_ENV, XSI,
};
pub(crate) use translate::{FromChild, FromNode, Leaf, Step, ToChild, ToNode, Translation};
pub(crate) use url::{UrlPart, UrlTemplate};

use crate::config::{
    Downstream, FederatedDownstream, Location, RestDownstream, SoapDownstream, Tool,
};
use translate::Direction;

/// Headers that static or field headers may not set: the HTTP client owns them.
const RESERVED_HEADERS: &[&str] = &[
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "upgrade",
    "te",
    "trailer",
    "keep-alive",
    "proxy-connection",
];

/// A problem found while compiling a tool's plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanProblem {
    /// The field rule concerned (its exposed path), if any.
    pub field: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl PlanProblem {
    fn tool(message: impl Into<String>) -> Self {
        Self {
            field: None,
            message: message.into(),
        }
    }

    fn field(field: &str, message: impl Into<String>) -> Self {
        Self {
            field: Some(field.to_owned()),
            message: message.into(),
        }
    }
}

/// A tool's compiled request/response plan.
#[derive(Debug, Clone)]
pub struct ToolPlan {
    /// The downstream HTTP method.
    pub method: Method,
    /// The URL template, split into literal and parameter parts.
    pub url: UrlTemplate,
    /// Static headers sent on every call, in configuration order.
    pub static_headers: Vec<(HeaderName, HeaderValue)>,
    /// The per-call timeout; `None` means the invoker's default.
    pub timeout: Option<Duration>,
    /// Exposed arguments → downstream request.
    pub input: Translation,
    /// Downstream response → exposed result; `None` when the tool has no output rules (the
    /// response passes through unchanged).
    pub output: Option<Translation>,
    /// Whether response members without an output rule are kept (top-level members only).
    pub keep_unmapped_output: bool,
    /// Whether the output rules leave every answer as it is: unmapped members are kept and
    /// each rule maps a top-level member to itself. Such an answer is checked (JSON, an
    /// object) and passed on without being parsed into a tree and written again (so a mapped
    /// member that is `null` stays `null`, where a translation leaves it out).
    pub output_is_identity: bool,
    /// Whether the request carries a JSON body: always for methods other than GET, HEAD,
    /// DELETE and OPTIONS; for those only when the tool has body-location fields.
    pub sends_body: bool,
    /// A SOAP tool's envelope and XML names (`plan/soap.rs`): the body is an envelope and the
    /// answer XML.
    pub soap: Option<Arc<SoapPlan>>,
}

// === impl ToolPlan ===

impl ToolPlan {
    /// Compiles a tool, reporting every problem found (not just the first).
    pub fn compile(tool: &Tool) -> Result<ToolPlan, Vec<PlanProblem>> {
        let mut problems = Vec::new();
        let plan = match &tool.downstream {
            Downstream::Rest(rest) => compile_rest(tool, rest, &mut problems),
            Downstream::Soap(soap) => compile_soap(tool, soap, &mut problems),
            Downstream::Federated(federated) => compile_federated(tool, federated, &mut problems),
        };
        match plan {
            Some(plan) if problems.is_empty() => Ok(plan),
            _ => Err(problems),
        }
    }
}

/// Base URL of a federated tool's plan: the plan validates and translates the arguments into a
/// query string, which the federation layer then sends to every source's own URL.
pub(crate) const FEDERATED_PLAN_BASE: &str = "http://federated.invalid/";

/// A federated tool's arguments travel as query parameters to every source: its plan is a GET
/// on [`FEDERATED_PLAN_BASE`] whose input fields default to the query (a `path` location has no
/// template to fill and is refused).
fn compile_federated(
    tool: &Tool,
    federated: &FederatedDownstream,
    problems: &mut Vec<PlanProblem>,
) -> Option<ToolPlan> {
    let mut as_query = tool.clone();
    for rule in &mut as_query.inputs {
        match rule.location {
            Location::Body => rule.location = Location::Query,
            Location::Path => {
                problems.push(PlanProblem::field(
                    &rule.exposed,
                    "a federated tool has no URL template; use location = \"query\" or \"header\"",
                ));
                // Reported once: compiled as a query field from here on.
                rule.location = Location::Query;
            }
            Location::Query | Location::Header => {}
        }
    }
    let rest = RestDownstream {
        method: "GET".to_owned(),
        url: FEDERATED_PLAN_BASE.to_owned(),
        headers: Default::default(),
        timeout_ms: federated.deadline_ms,
    };
    compile_rest(&as_query, &rest, problems)
}

/// A SOAP tool is a POST of an envelope to its endpoint: compiled as a REST call (timeout,
/// HTTP headers, translations with XML source paths), then its [`SoapPlan`].
fn compile_soap(
    tool: &Tool,
    soap: &SoapDownstream,
    problems: &mut Vec<PlanProblem>,
) -> Option<ToolPlan> {
    for rule in &tool.inputs {
        if matches!(rule.location, Location::Path | Location::Query) {
            problems.push(PlanProblem::field(
                &rule.exposed,
                "a SOAP tool's arguments go in the envelope (location = \"body\") or in an HTTP \
                 header (\"header\")",
            ));
        }
    }
    let rest = RestDownstream {
        method: "POST".to_owned(),
        url: soap.url.clone(),
        headers: soap.http_headers.clone(),
        timeout_ms: soap.timeout_ms,
    };
    let mut plan = compile_rest(tool, &rest, problems)?;
    let compiled = soap::compile(
        soap,
        &plan.input,
        plan.output.as_ref(),
        tool.keep_unmapped_output,
        problems,
    )?;
    plan.output_is_identity = false;
    plan.soap = Some(Arc::new(compiled));
    Some(plan)
}

fn compile_rest(
    tool: &Tool,
    rest: &RestDownstream,
    problems: &mut Vec<PlanProblem>,
) -> Option<ToolPlan> {
    let method = match Method::from_bytes(rest.method.to_ascii_uppercase().as_bytes()) {
        Ok(m) => Some(m),
        Err(_) => {
            problems.push(PlanProblem::tool(format!(
                "invalid HTTP method {:?}",
                rest.method
            )));
            None
        }
    };

    let timeout = match rest.timeout_ms {
        Some(0) => {
            problems.push(PlanProblem::tool("timeout_ms must be greater than zero"));
            None
        }
        Some(ms) => Some(Duration::from_millis(ms)),
        None => None,
    };

    let mut static_headers = Vec::with_capacity(rest.headers.len());
    for (name, value) in &rest.headers {
        match compile_header_name(name) {
            Ok(hn) => match HeaderValue::from_str(value) {
                Ok(hv) => static_headers.push((hn, hv)),
                Err(_) => problems.push(PlanProblem::tool(format!(
                    "static header {name:?} has a value that is not a valid header value"
                ))),
            },
            Err(msg) => problems.push(PlanProblem::tool(format!("static header: {msg}"))),
        }
    }

    let xml = tool.downstream.xml_paths();
    let input = translate::compile(&tool.inputs, Direction::Input, xml, problems);
    let output = if tool.outputs.is_empty() {
        None
    } else {
        Some(translate::compile(
            &tool.outputs,
            Direction::Output,
            xml,
            problems,
        ))
    };

    let url = url::compile(&rest.url, &input, problems);

    let has_body_fields = input.leaves.iter().any(|l| l.location == Location::Body);
    let method = method?;
    let bodyless_method = matches!(
        method,
        Method::GET | Method::HEAD | Method::DELETE | Method::OPTIONS
    );
    Some(ToolPlan {
        sends_body: !bodyless_method || has_body_fields,
        method,
        url: url?,
        static_headers,
        timeout,
        input,
        output_is_identity: tool.keep_unmapped_output
            && tool
                .outputs
                .iter()
                .all(|rule| rule.source == rule.exposed && is_member_name(&rule.source)),
        output,
        keep_unmapped_output: tool.keep_unmapped_output,
        soap: None,
    })
}

/// Whether an output path names one top-level member (no `.` step, no `[*]`).
fn is_member_name(path: &str) -> bool {
    !path.is_empty() && !path.contains(['.', '[', ']'])
}

fn compile_header_name(name: &str) -> Result<HeaderName, String> {
    let hn = HeaderName::from_bytes(name.as_bytes())
        .map_err(|_| format!("{name:?} is not a valid header name"))?;
    if RESERVED_HEADERS.contains(&hn.as_str()) {
        return Err(format!(
            "{name:?} is managed by the HTTP client and cannot be set"
        ));
    }
    Ok(hn)
}

#[cfg(test)]
mod tests;
