//! SOAP plans: what a SOAP tool's call needs besides its translations, compiled once.
//!
//! Owns [`SoapPlan`]: the envelope around the operation's children, written out ahead of time
//! (namespace declarations, SOAP headers with their constants and secrets; only the
//! correlation id is left as a slot), the `Content-Type` and `SOAPAction` of the version, the
//! XML names of the input translation's *to* tree and of the output translation's *from* tree
//! ([`XmlChild`] trees aligned with them position by position), the declared fault details and
//! the strings a fault text must never carry (the endpoint, the secrets).
//!
//! Also the checks only a SOAP tool has: QNames and their prefixes, attributes and `#text` as
//! leaves, no nested arrays (XML repeats an element; it has no array of arrays), no
//! `keep_unmapped_output`. Secrets are slots: the invoke layer reads them (no IO here). Must not write or read XML per call: `invoke::soap` does.

use std::collections::BTreeMap;

use http::HeaderValue;

use super::{FromChild, FromNode};
use super::{PlanProblem, ToChild, ToNode, Translation};
use crate::config::{
    FieldType, SecretRef, SoapDownstream, SoapHeader, SoapStyle, SoapVersion, WsSecurity,
};

/// The SOAP 1.1 envelope namespace.
pub(crate) const SOAP11_ENV: &str = "http://schemas.xmlsoap.org/soap/envelope/";
/// The SOAP 1.2 envelope namespace.
pub(crate) const SOAP12_ENV: &str = "http://www.w3.org/2003/05/soap-envelope";
/// `xsi`, for `xsi:nil`.
pub(crate) const XSI: &str = "http://www.w3.org/2001/XMLSchema-instance";
const WSSE: &str =
    "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-secext-1.0.xsd";
const PASSWORD_TEXT: &str =
    "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-username-token-profile-1.0#PasswordText";

/// Prefixes the envelope declares itself; configured namespaces may not take them.
const RESERVED_PREFIXES: &[&str] = &["soapenv", "xsi", "wsse", "xml", "xmlns"];

/// A compiled SOAP operation.
#[derive(Debug, Clone)]
pub struct SoapPlan {
    /// The version the request is written in.
    pub version: SoapVersion,
    /// `text/xml; charset=utf-8` or `application/soap+xml; charset=utf-8[; action="…"]`.
    pub content_type: HeaderValue,
    /// The quoted `SOAPAction` header of a SOAP 1.1 call.
    pub soap_action: Option<HeaderValue>,
    /// The envelope up to the operation's children: literals and the correlation id's slot.
    pub head: Vec<HeadPart>,
    /// The envelope after the operation's children.
    pub tail: Box<str>,
    /// XML names of the input translation's to tree (same positions).
    pub input: Vec<XmlChild>,
    /// XML names of the output translation's from tree (same positions); empty without output
    /// rules (the answer is then `{}` once it is known not to be a fault).
    pub output: Vec<XmlChild>,
    /// Whether the answer's result is the body's first element (document-wrapped, rpc) rather
    /// than the body itself (document).
    pub wrapped: bool,
    /// Declared fault detail elements.
    pub fault_details: Vec<XmlName>,
    /// Texts a fault string must not show (the endpoint URL; the secrets are added when read).
    pub redact: Vec<Box<str>>,
    /// The secrets of the header slots, in slot order (header fields, the WS-Security password).
    pub secrets: Vec<SecretRef>,
    /// Their values, read once by the invoke layer at the first call (`invoke::soap`): the
    /// catalog reads no configuration source beyond the file.
    pub secret_values: SecretValues,
}

/// The read secrets; `Debug` never shows them.
#[derive(Clone, Default)]
pub struct SecretValues(pub std::sync::OnceLock<Result<Vec<Box<str>>, String>>);

impl std::fmt::Debug for SecretValues {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretValues([redacted])")
    }
}

/// A piece of the envelope head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeadPart {
    /// Written as is.
    Literal(Box<str>),
    /// The call's correlation id, escaped.
    CorrelationId,
    /// The secret at this index of [`SoapPlan::secrets`], escaped.
    Secret(u16),
}

/// An XML name: its namespace (none for unqualified elements and attributes) and local part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XmlName {
    /// The namespace URI, if qualified.
    pub ns: Option<Box<str>>,
    /// The local name.
    pub local: Box<str>,
}

/// What a member of an element is on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XmlKind {
    /// A child element (repeated for arrays).
    Element,
    /// An attribute (`@name`).
    Attribute,
    /// The element's own text (`#text`), beside its attributes.
    Text,
}

/// One member of an element, aligned with a translation tree's member at the same position.
#[derive(Debug, Clone)]
pub struct XmlChild {
    /// Element, attribute or text.
    pub kind: XmlKind,
    /// The name matched when reading.
    pub name: XmlName,
    /// The name as written: `p:Local` or `Local`.
    pub written: Box<str>,
    /// Its children, when an object.
    pub node: XmlNode,
}

/// The XML side of a translation tree node.
#[derive(Debug, Clone)]
pub enum XmlNode {
    /// An element with mapped members.
    Object(Vec<XmlChild>),
    /// A repeated element: the shape of each.
    Array(Box<XmlNode>),
    /// A value.
    Leaf,
}

/// Namespaces in scope for a tool: configured prefixes plus the operation's.
struct Names<'a> {
    prefixes: &'a BTreeMap<String, String>,
    /// The operation's namespace and the prefix it is written with.
    op_ns: Option<(String, String)>,
    /// Prefixes that had to be invented for `{ns}Name` forms, in order.
    extra: Vec<(String, String)>,
}

impl Names<'_> {
    /// Resolves `{ns}Local`, `p:Local` or `Local` (in `default`, if any) into a name and the
    /// text to write.
    fn resolve(
        &mut self,
        text: &str,
        default: Option<&(String, String)>,
    ) -> Result<(XmlName, String), String> {
        if let Some(rest) = text.strip_prefix('{') {
            let Some((ns, local)) = rest.split_once('}') else {
                return Err(format!("{text:?}: `{{namespace}}Name` is missing its `}}`"));
            };
            check_ncname(local).map_err(|e| format!("{text:?}: {e}"))?;
            let prefix = self.prefix_for(ns);
            return Ok((name(Some(ns), local), format!("{prefix}:{local}")));
        }
        match text.split_once(':') {
            Some((prefix, local)) => {
                check_ncname(local).map_err(|e| format!("{text:?}: {e}"))?;
                let ns = match &self.op_ns {
                    Some((ns, p)) if p == prefix => ns.clone(),
                    _ => self.prefixes.get(prefix).cloned().ok_or_else(|| {
                        format!("{text:?}: the prefix {prefix:?} is not declared in `namespaces`")
                    })?,
                };
                Ok((name(Some(&ns), local), text.to_owned()))
            }
            None => {
                check_ncname(text).map_err(|e| format!("{text:?}: {e}"))?;
                Ok(match default {
                    Some((ns, prefix)) => (name(Some(ns), text), format!("{prefix}:{text}")),
                    None => (name(None, text), text.to_owned()),
                })
            }
        }
    }

    /// The prefix a namespace is written with: a configured one, the operation's, or a new
    /// `ns{n}`.
    fn prefix_for(&mut self, ns: &str) -> String {
        if let Some((op, prefix)) = &self.op_ns {
            if op == ns {
                return prefix.clone();
            }
        }
        if let Some((prefix, _)) = self.prefixes.iter().find(|(_, uri)| *uri == ns) {
            return prefix.clone();
        }
        if let Some((prefix, _)) = self.extra.iter().find(|(_, uri)| uri == ns) {
            return prefix.clone();
        }
        let mut n = self.extra.len();
        let prefix = loop {
            let candidate = format!("ns{n}");
            if !self.prefixes.contains_key(&candidate) {
                break candidate;
            }
            n += 1;
        };
        self.extra.push((prefix.clone(), ns.to_owned()));
        prefix
    }
}

fn name(ns: Option<&str>, local: &str) -> XmlName {
    XmlName {
        ns: ns.map(Into::into),
        local: local.into(),
    }
}

/// Checks an XML NCName (no colon): a letter or `_` first, then letters, digits, `.`, `-`, `_`.
pub(crate) fn check_ncname(text: &str) -> Result<(), String> {
    let mut chars = text.chars();
    match chars.next() {
        None => return Err("an empty XML name".into()),
        Some(c) if c.is_alphabetic() || c == '_' => {}
        Some(c) => return Err(format!("an XML name cannot start with {c:?}")),
    }
    match chars.find(|c| !(c.is_alphanumeric() || matches!(c, '.' | '-' | '_'))) {
        Some(c) => Err(format!("{c:?} is not allowed in an XML name")),
        None => Ok(()),
    }
}

/// Compiles the SOAP side of a tool whose translations are already compiled.
pub(super) fn compile(
    soap: &SoapDownstream,
    input: &Translation,
    output: Option<&Translation>,
    keep_unmapped_output: bool,
    problems: &mut Vec<PlanProblem>,
) -> Option<SoapPlan> {
    let before = problems.len();
    if keep_unmapped_output {
        problems.push(PlanProblem::tool(
            "keep_unmapped_output is not supported for SOAP tools: the answer is read by the \
             output rules' paths, so map every field the result should carry",
        ));
    }
    for prefix in soap.namespaces.keys() {
        if RESERVED_PREFIXES.contains(&prefix.as_str()) {
            problems.push(PlanProblem::tool(format!(
                "the namespace prefix {prefix:?} is reserved for the envelope"
            )));
        } else if let Err(e) = check_ncname(prefix) {
            problems.push(PlanProblem::tool(format!(
                "namespace prefix {prefix:?}: {e}"
            )));
        }
    }
    let mut names = Names {
        prefixes: &soap.namespaces,
        op_ns: None,
        extra: Vec::new(),
    };
    // The operation element fixes the default namespace of unprefixed children.
    let operation = match operation_name(&soap.operation, &soap.namespaces) {
        Ok((ns, local, prefix)) => {
            names.op_ns = ns.map(|ns| (ns, prefix.clone()));
            Some((local, prefix))
        }
        Err(msg) => {
            problems.push(PlanProblem::tool(format!("operation: {msg}")));
            None
        }
    };
    let qualified = names.op_ns.clone().filter(|_| soap.qualified);
    // rpc parts are unqualified; below them, and everywhere else, children follow `qualified`.
    let first_level = match soap.style {
        SoapStyle::Rpc => None,
        SoapStyle::Document => names.op_ns.clone(),
        SoapStyle::DocumentWrapped => qualified.clone(),
    };
    let input_xml = to_children(&input.to, &mut names, &first_level, &qualified, problems);
    let output_xml = match output {
        Some(out) => from_children(
            &out.from,
            out,
            &mut names,
            &first_level,
            &qualified,
            problems,
        ),
        None => Vec::new(),
    };
    let mut fault_details = Vec::new();
    for detail in &soap.fault_details {
        match names.resolve(detail, names.op_ns.clone().as_ref()) {
            Ok((n, _)) => fault_details.push(n),
            Err(msg) => problems.push(PlanProblem::tool(format!("fault_details: {msg}"))),
        }
    }
    let mut redact: Vec<Box<str>> = vec![soap.url.as_str().into()];
    let mut secrets = Vec::new();
    let mut headers = String::new();
    for header in &soap.headers {
        write_header(
            header,
            &mut names,
            soap.version,
            &mut headers,
            &mut secrets,
            problems,
        );
    }
    if let Some(wss) = &soap.ws_security {
        write_ws_security(wss, soap.version, &mut headers, &mut secrets, problems);
    }
    let (content_type, soap_action) = content_type(soap, problems);
    if problems.len() > before {
        return None;
    }
    let (op_local, op_prefix) = operation?;
    let env_ns = match soap.version {
        SoapVersion::V11 => SOAP11_ENV,
        SoapVersion::V12 => SOAP12_ENV,
    };
    let mut open = format!("<soapenv:Envelope xmlns:soapenv=\"{env_ns}\" xmlns:xsi=\"{XSI}\"");
    if let Some((ns, prefix)) = &names.op_ns {
        if !soap.namespaces.contains_key(prefix) {
            push_xmlns(&mut open, prefix, ns);
        }
    }
    for (prefix, ns) in soap
        .namespaces
        .iter()
        .chain(names.extra.iter().map(|(p, n)| (p, n)))
    {
        push_xmlns(&mut open, prefix, ns);
    }
    open.push('>');
    let mut head = Vec::new();
    if !headers.is_empty() {
        open.push_str("<soapenv:Header>");
        // The slots split the header text: correlation ids and secrets, in order.
        let mut secret = 0u16;
        for ch in headers.chars() {
            let slot = match ch {
                CORRELATION_SLOT => HeadPart::CorrelationId,
                SECRET_SLOT => {
                    secret += 1;
                    HeadPart::Secret(secret - 1)
                }
                ch => {
                    open.push(ch);
                    continue;
                }
            };
            head.push(HeadPart::Literal(std::mem::take(&mut open).into()));
            head.push(slot);
        }
        open.push_str("</soapenv:Header>");
    }
    open.push_str("<soapenv:Body>");
    let op_written = if op_prefix.is_empty() {
        op_local.clone()
    } else {
        format!("{op_prefix}:{op_local}")
    };
    let tail = match soap.style {
        SoapStyle::Document => "</soapenv:Body></soapenv:Envelope>".to_owned(),
        SoapStyle::DocumentWrapped | SoapStyle::Rpc => {
            open.push('<');
            open.push_str(&op_written);
            open.push('>');
            format!("</{op_written}></soapenv:Body></soapenv:Envelope>")
        }
    };
    head.push(HeadPart::Literal(open.into()));
    redact.retain(|text| !text.is_empty());
    Some(SoapPlan {
        version: soap.version,
        content_type,
        soap_action,
        head,
        tail: tail.into(),
        input: input_xml,
        output: output_xml,
        wrapped: soap.style != SoapStyle::Document,
        fault_details,
        redact,
        secrets,
        secret_values: SecretValues::default(),
    })
}

/// Marks where the correlation id goes while headers are written as one text (a character
/// no escaped XML text contains).
const CORRELATION_SLOT: char = '\u{0}';

/// Marks where the next secret goes.
const SECRET_SLOT: char = '\u{1}';

fn push_xmlns(out: &mut String, prefix: &str, ns: &str) {
    out.push_str(" xmlns:");
    out.push_str(prefix);
    out.push_str("=\"");
    escape_into(out, ns, true);
    out.push('"');
}

/// `{ns}Local` or `p:Local` → (namespace, local, the prefix it is written with).
fn operation_name(
    text: &str,
    prefixes: &BTreeMap<String, String>,
) -> Result<(Option<String>, String, String), String> {
    if let Some(rest) = text.strip_prefix('{') {
        let (ns, local) = rest
            .split_once('}')
            .ok_or_else(|| format!("{text:?}: `{{namespace}}Name` is missing its `}}`"))?;
        check_ncname(local).map_err(|e| format!("{text:?}: {e}"))?;
        if ns.is_empty() {
            return Ok((None, local.to_owned(), String::new()));
        }
        let prefix = prefixes
            .iter()
            .find(|(_, uri)| *uri == ns)
            .map_or_else(|| "tns".to_owned(), |(p, _)| p.clone());
        return Ok((Some(ns.to_owned()), local.to_owned(), prefix));
    }
    match text.split_once(':') {
        Some((prefix, local)) => {
            check_ncname(local).map_err(|e| format!("{text:?}: {e}"))?;
            let ns = prefixes.get(prefix).ok_or_else(|| {
                format!("{text:?}: the prefix {prefix:?} is not declared in `namespaces`")
            })?;
            Ok((Some(ns.clone()), local.to_owned(), prefix.to_owned()))
        }
        None => Err(format!(
            "{text:?} has no namespace: write `{{namespace}}{text}` or `prefix:{text}`"
        )),
    }
}

/// The XML names of a to tree's members (the request side).
fn to_children(
    children: &[ToChild],
    names: &mut Names<'_>,
    here: &Option<(String, String)>,
    below: &Option<(String, String)>,
    problems: &mut Vec<PlanProblem>,
) -> Vec<XmlChild> {
    children
        .iter()
        .map(|child| {
            let (kind, name, written) = member_name(&child.key, names, here, problems);
            let node = to_node(&child.node, names, below, problems);
            check_member(kind, &child.key, &node, problems);
            XmlChild {
                kind,
                name,
                written: written.into(),
                node,
            }
        })
        .collect()
}

fn to_node(
    node: &ToNode,
    names: &mut Names<'_>,
    below: &Option<(String, String)>,
    problems: &mut Vec<PlanProblem>,
) -> XmlNode {
    match node {
        ToNode::Object(children) => {
            XmlNode::Object(to_children(children, names, below, below, problems))
        }
        ToNode::Array(element) => {
            if matches!(**element, ToNode::Array(_)) {
                problems.push(PlanProblem::tool(
                    "a SOAP source path cannot have `[*][*]`: XML repeats an element, it has no \
                     arrays of arrays",
                ));
            }
            XmlNode::Array(Box::new(to_node(element, names, below, problems)))
        }
        ToNode::Leaf => XmlNode::Leaf,
    }
}

/// The XML names of a from tree's members (the answer side).
fn from_children(
    children: &[FromChild],
    tr: &Translation,
    names: &mut Names<'_>,
    here: &Option<(String, String)>,
    below: &Option<(String, String)>,
    problems: &mut Vec<PlanProblem>,
) -> Vec<XmlChild> {
    children
        .iter()
        .map(|child| {
            let (kind, name, written) = member_name(&child.key, names, here, problems);
            let node = from_node(&child.node, tr, names, below, problems);
            check_member(kind, &child.key, &node, problems);
            XmlChild {
                kind,
                name,
                written: written.into(),
                node,
            }
        })
        .collect()
}

fn from_node(
    node: &FromNode,
    tr: &Translation,
    names: &mut Names<'_>,
    below: &Option<(String, String)>,
    problems: &mut Vec<PlanProblem>,
) -> XmlNode {
    match node {
        FromNode::Object(children) => {
            XmlNode::Object(from_children(children, tr, names, below, below, problems))
        }
        FromNode::Array { element, .. } => {
            if matches!(**element, FromNode::Array { .. }) {
                problems.push(PlanProblem::tool(
                    "a SOAP source path cannot have `[*][*]`: XML repeats an element, it has no \
                     arrays of arrays",
                ));
            }
            XmlNode::Array(Box::new(from_node(element, tr, names, below, problems)))
        }
        // An `array`-typed leaf is a repeated element too.
        FromNode::Leaf(idx) => match tr.leaves.get(*idx as usize) {
            Some(leaf) if leaf.ty == FieldType::Array => XmlNode::Array(Box::new(XmlNode::Leaf)),
            _ => XmlNode::Leaf,
        },
    }
}

/// A member key: `@attr`, `@p:attr`, `#text`, `p:Element` or `Element`.
fn member_name(
    key: &str,
    names: &mut Names<'_>,
    here: &Option<(String, String)>,
    problems: &mut Vec<PlanProblem>,
) -> (XmlKind, XmlName, String) {
    let (kind, result) = if key == "#text" {
        return (XmlKind::Text, name(None, "#text"), String::new());
    } else if let Some(attr) = key.strip_prefix('@') {
        // Attributes are unqualified unless prefixed (attributeFormDefault="unqualified").
        (XmlKind::Attribute, names.resolve(attr, None))
    } else {
        (XmlKind::Element, names.resolve(key, here.as_ref()))
    };
    match result {
        Ok((n, written)) => (kind, n, written),
        Err(msg) => {
            problems.push(PlanProblem::tool(format!("source path segment {msg}")));
            (kind, name(None, key), key.to_owned())
        }
    }
}

/// Attributes and text are single values.
fn check_member(kind: XmlKind, key: &str, node: &XmlNode, problems: &mut Vec<PlanProblem>) {
    if kind != XmlKind::Element && !matches!(node, XmlNode::Leaf) {
        problems.push(PlanProblem::tool(format!(
            "source path segment {key:?} is an attribute or an element's text: it holds one \
             scalar value (no children, no `[*]`, not an array)"
        )));
    }
}

/// Writes one configured SOAP header element (secrets resolved now, the correlation id as a
/// slot).
fn write_header(
    header: &SoapHeader,
    names: &mut Names<'_>,
    version: SoapVersion,
    out: &mut String,
    secrets: &mut Vec<SecretRef>,
    problems: &mut Vec<PlanProblem>,
) {
    let written = match names.resolve(&header.element, names.op_ns.clone().as_ref()) {
        Ok((_, written)) => written,
        Err(msg) => {
            problems.push(PlanProblem::tool(format!("header element {msg}")));
            return;
        }
    };
    let prefix = written.split_once(':').map(|(p, _)| p.to_owned());
    out.push('<');
    out.push_str(&written);
    if header.must_understand {
        out.push_str(must_understand(version));
    }
    out.push('>');
    for field in &header.fields {
        if let Err(msg) = check_ncname(&field.name) {
            problems.push(PlanProblem::tool(format!(
                "header {:?} field {:?}: {msg}",
                header.element, field.name
            )));
            continue;
        }
        let child = match &prefix {
            Some(p) => format!("{p}:{}", field.name),
            None => field.name.clone(),
        };
        out.push('<');
        out.push_str(&child);
        out.push('>');
        if field.sources() != 1 {
            problems.push(PlanProblem::tool(format!(
                "header {:?} field {:?}: set exactly one of value, correlation_id, secret_env, \
                 secret_file",
                header.element, field.name
            )));
        } else if let Some(value) = &field.value {
            if !is_xml_text(value) {
                problems.push(PlanProblem::tool(format!(
                    "header {:?} field {:?}: the value holds a character XML 1.0 cannot carry",
                    header.element, field.name
                )));
            }
            escape_into(out, value, false);
        } else if field.correlation_id {
            out.push(CORRELATION_SLOT);
        } else if let Some(secret) = field.secret() {
            // A slot: the invoke layer reads the secret (config reading stays out of the catalog).
            out.push(SECRET_SLOT);
            secrets.push(secret);
        }
        out.push_str("</");
        out.push_str(&child);
        out.push('>');
    }
    out.push_str("</");
    out.push_str(&written);
    out.push('>');
}

fn must_understand(version: SoapVersion) -> &'static str {
    match version {
        SoapVersion::V11 => " soapenv:mustUnderstand=\"1\"",
        SoapVersion::V12 => " soapenv:mustUnderstand=\"true\"",
    }
}

fn write_ws_security(
    wss: &WsSecurity,
    version: SoapVersion,
    out: &mut String,
    secrets: &mut Vec<SecretRef>,
    problems: &mut Vec<PlanProblem>,
) {
    if !is_xml_text(&wss.username) {
        problems.push(PlanProblem::tool(
            "ws_security: the user name holds a character XML 1.0 cannot carry",
        ));
    }
    out.push_str("<wsse:Security xmlns:wsse=\"");
    out.push_str(WSSE);
    out.push('"');
    out.push_str(must_understand(version));
    out.push_str("><wsse:UsernameToken><wsse:Username>");
    escape_into(out, &wss.username, false);
    out.push_str("</wsse:Username><wsse:Password Type=\"");
    out.push_str(PASSWORD_TEXT);
    out.push_str("\">");
    out.push(SECRET_SLOT);
    secrets.push(wss.password());
    out.push_str("</wsse:Password></wsse:UsernameToken></wsse:Security>");
}

/// The version's `Content-Type` and, for 1.1, the quoted `SOAPAction`.
fn content_type(
    soap: &SoapDownstream,
    problems: &mut Vec<PlanProblem>,
) -> (HeaderValue, Option<HeaderValue>) {
    let plain = HeaderValue::from_static("text/xml; charset=utf-8");
    if soap.action.contains(['"', '\\']) || soap.action.chars().any(char::is_control) {
        problems.push(PlanProblem::tool(
            "action cannot hold quotes, backslashes or control characters",
        ));
        return (plain, None);
    }
    let header = |text: String| {
        HeaderValue::from_str(&text).unwrap_or_else(|_| HeaderValue::from_static(""))
    };
    match soap.version {
        SoapVersion::V11 => (plain, Some(header(format!("\"{}\"", soap.action)))),
        SoapVersion::V12 if soap.action.is_empty() => (
            HeaderValue::from_static("application/soap+xml; charset=utf-8"),
            None,
        ),
        SoapVersion::V12 => (
            header(format!(
                "application/soap+xml; charset=utf-8; action=\"{}\"",
                soap.action
            )),
            None,
        ),
    }
}

/// Whether every character of `text` is allowed in XML 1.0 (`Char`: no C0 controls but tab,
/// line feed and carriage return; no U+FFFE, U+FFFF).
pub(crate) fn is_xml_text(text: &str) -> bool {
    text.chars().all(|c| {
        !matches!(c, '\u{0}'..='\u{8}' | '\u{b}' | '\u{c}' | '\u{e}'..='\u{1f}' | '\u{fffe}' | '\u{ffff}')
    })
}

/// Escapes `&`, `<`, `>` (and `"` in attributes; CR, and tab and LF in attributes, as
/// character references so they survive end-of-line and attribute normalization), copying runs
/// of plain bytes at once: the one XML escaper, of the plan's constants and of each call's values
/// (`invoke/soap/write.rs`).
pub(crate) fn escape<B: bytes::BufMut>(buf: &mut B, text: &str, attribute: bool) {
    let bytes = text.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let replacement: &[u8] = match b {
            b'&' => b"&amp;",
            b'<' => b"&lt;",
            b'>' => b"&gt;",
            b'"' if attribute => b"&quot;",
            b'\r' => b"&#13;",
            b'\n' if attribute => b"&#10;",
            b'\t' if attribute => b"&#9;",
            _ => continue,
        };
        buf.put_slice(&bytes[start..i]);
        buf.put_slice(replacement);
        start = i + 1;
    }
    buf.put_slice(&bytes[start..]);
}

/// [`escape`] into a `String` (compile time only).
fn escape_into(out: &mut String, text: &str, attribute: bool) {
    let mut bytes = Vec::with_capacity(text.len());
    escape(&mut bytes, text, attribute);
    // Valid UTF-8 with ASCII replacements is valid UTF-8.
    out.push_str(&String::from_utf8_lossy(&bytes));
}
