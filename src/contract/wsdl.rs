//! `sluice import wsdl`: a WSDL 1.1 contract as one tool per operation.
//!
//! Owns loading (the WSDL file and every file its `wsdl:import`, `xsd:import` and
//! `xsd:include` name, relative to the including file, bounded in size; a location with a
//! scheme is refused: nothing is fetched), the WSDL model (messages, port types, SOAP 1.1 and
//! 1.2 bindings, service addresses), the choice of one binding per operation (an operation on
//! a 1.1 and a 1.2 port is one tool), the layout (document/literal wrapped, bare document,
//! rpc/literal; rpc/encoded refused), write-like operations left unpublished, and the tool's
//! downstream table. Field rules come from `xsd.rs`; the text from `emit.rs`.

use std::collections::HashSet;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use roxmltree::{Document, Node, ParsingOptions};

use super::emit::{config_text, quote, snake_case, ToolSpec};
use super::xsd::{documentation, is_xsd, qname, schema_of, Fields, Schemas, Side};
use super::{Problem, MAX_CONTRACT_BYTES};

const WSDL: &str = "http://schemas.xmlsoap.org/wsdl/";
const WSDL_SOAP11: &str = "http://schemas.xmlsoap.org/wsdl/soap/";
const WSDL_SOAP12: &str = "http://schemas.xmlsoap.org/wsdl/soap12/";
const WSDL20: &str = "http://www.w3.org/ns/wsdl";

/// Operation names (snake_case, first word) taken as writes: left unpublished unless
/// `--include-writes`.
const WRITE_VERBS: &[&str] = &[
    "create", "update", "delete", "remove", "set", "put", "post", "insert", "modify", "cancel",
    "submit", "save", "write", "place", "patch", "upsert", "register", "approve",
];

/// Which SOAP binding a tool uses when an operation has both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Binding {
    /// SOAP 1.1 (the default).
    #[default]
    Soap11,
    /// SOAP 1.2.
    Soap12,
}

/// What `sluice import wsdl` was asked.
#[derive(Debug, Clone, Default)]
pub struct WsdlOptions {
    /// The tenant id of the output.
    pub tenant: String,
    /// The toolset id (default: the service name, snake_case).
    pub toolset: Option<String>,
    /// The preferred binding.
    pub binding: Binding,
    /// Only these operations (WSDL names or tool names).
    pub operations: Option<Vec<String>>,
    /// Publish write-like operations too.
    pub include_writes: bool,
}

/// A loaded file.
struct Source {
    path: PathBuf,
    text: String,
}

/// Reads the contract at `path` and writes its tools as configuration text; `Err` lists every
/// problem (file, line, column). The second value holds notes for the operator (constructs
/// left to map by hand).
pub fn import_wsdl(
    path: &Path,
    options: &WsdlOptions,
) -> Result<(String, Vec<String>), Vec<Problem>> {
    let sources = load(path)?;
    let mut problems = Vec::new();
    let mut docs = Vec::with_capacity(sources.len());
    for source in &sources {
        match Document::parse_with_options(&source.text, ParsingOptions::default()) {
            Ok(doc) => docs.push(doc),
            Err(err) => problems.push(Problem::file(
                &source.path.display().to_string(),
                err.to_string(),
            )),
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    let name_files = |mut problems: Vec<Problem>| {
        for problem in &mut problems {
            if problem.file.is_empty() {
                if let Some(source) = sources
                    .iter()
                    .find(|s| s.text.as_ptr() as usize == problem.doc)
                {
                    problem.file = source.path.display().to_string();
                }
            }
        }
        problems
    };
    let mut notes = Vec::new();
    let result = build(&docs, options, &mut problems, &mut notes, &sources[0].path);
    if !problems.is_empty() {
        return Err(name_files(problems));
    }
    Ok((result, notes))
}

/// The file and everything it imports or includes, each once.
fn load(root: &Path) -> Result<Vec<Source>, Vec<Problem>> {
    let mut sources = Vec::new();
    let mut seen = HashSet::new();
    let mut queue = vec![root.to_path_buf()];
    let mut problems = Vec::new();
    while let Some(path) = queue.pop() {
        let key = path.canonicalize().unwrap_or_else(|_| path.clone());
        if !seen.insert(key) {
            continue;
        }
        let shown = path.display().to_string();
        let text = match read_bounded(&path) {
            Ok(text) => text,
            Err(message) => {
                problems.push(Problem::file(&shown, message));
                continue;
            }
        };
        match Document::parse_with_options(&text, ParsingOptions::default()) {
            Ok(doc) => {
                for node in doc.descendants().filter(|n| n.is_element()) {
                    let ns = node.tag_name().namespace();
                    let location = match (ns, node.tag_name().name()) {
                        (Some(WSDL), "import") => node.attribute("location"),
                        (Some(super::xsd::XSD), "import" | "include") => {
                            node.attribute("schemaLocation")
                        }
                        _ => None,
                    };
                    let Some(location) = location else { continue };
                    if location.contains("://") || location.starts_with("//") {
                        let mut problem = Problem::at(
                            node,
                            format!(
                            "{location:?} is remote: imports are resolved from local files only; \
                             put the file next to the WSDL and name it by a relative path"
                        ),
                        );
                        problem.file = shown.clone();
                        problems.push(problem);
                        continue;
                    }
                    let base = path.parent().unwrap_or_else(|| Path::new("."));
                    queue.push(base.join(location));
                }
            }
            Err(err) => problems.push(Problem::file(&shown, err.to_string())),
        }
        sources.push(Source { path, text });
    }
    if problems.is_empty() {
        Ok(sources)
    } else {
        Err(problems)
    }
}

fn read_bounded(path: &Path) -> Result<String, String> {
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut text = String::new();
    file.take(MAX_CONTRACT_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| e.to_string())?;
    if text.len() as u64 > MAX_CONTRACT_BYTES {
        return Err(format!("larger than {MAX_CONTRACT_BYTES} bytes"));
    }
    Ok(text)
}

fn is_wsdl(node: &Node<'_, '_>, name: &str) -> bool {
    node.is_element() && node.tag_name().namespace() == Some(WSDL) && node.tag_name().name() == name
}

fn wsdl_children<'d, 't>(
    node: Node<'d, 't>,
    name: &'static str,
) -> impl Iterator<Item = Node<'d, 't>> {
    node.children().filter(move |n| is_wsdl(n, name))
}

/// The SOAP version a binding element declares, if it is a SOAP binding.
fn soap_version<'d, 't>(binding: Node<'d, 't>) -> Option<(Binding, Node<'d, 't>)> {
    binding
        .children()
        .find_map(|n| match (n.tag_name().namespace(), n.tag_name().name()) {
            (Some(WSDL_SOAP11), "binding") => Some((Binding::Soap11, n)),
            (Some(WSDL_SOAP12), "binding") => Some((Binding::Soap12, n)),
            _ => None,
        })
}

/// The child of `node` in the binding's SOAP namespace named `name`.
fn soap_child<'d, 't>(node: Node<'d, 't>, version: Binding, name: &str) -> Option<Node<'d, 't>> {
    let ns = match version {
        Binding::Soap11 => WSDL_SOAP11,
        Binding::Soap12 => WSDL_SOAP12,
    };
    node.children()
        .find(|n| n.tag_name().namespace() == Some(ns) && n.tag_name().name() == name)
}

/// Finds a WSDL component (`message`, …) by namespace and name.
type Finder<'f, 'd, 't> = &'f dyn Fn(&'static str, (&str, &str)) -> Option<Node<'d, 't>>;

/// One binding of an operation.
struct Bound<'d, 't> {
    version: Binding,
    operation: Node<'d, 't>,
    style: &'d str,
    address: Option<&'d str>,
}

fn build(
    docs: &[Document<'_>],
    options: &WsdlOptions,
    problems: &mut Vec<Problem>,
    notes: &mut Vec<String>,
    root: &Path,
) -> String {
    let mut schemas = Schemas::default();
    let mut definitions = Vec::new();
    for doc in docs {
        let top = doc.root_element();
        if is_xsd(&top) && top.tag_name().name() == "schema" {
            schemas.add(top);
        } else if is_wsdl(&top, "definitions") {
            definitions.push(top);
            for types in wsdl_children(top, "types") {
                for schema in types
                    .children()
                    .filter(|n| is_xsd(n) && n.tag_name().name() == "schema")
                {
                    schemas.add(schema);
                }
            }
        } else if top.tag_name().namespace() == Some(WSDL20) {
            problems.push(Problem::at(
                top,
                "WSDL 2.0 is not supported: only WSDL 1.1 `definitions`".into(),
            ));
        }
    }
    let tns = |node: Node<'_, '_>| {
        node.ancestors()
            .find(|n| is_wsdl(n, "definitions"))
            .and_then(|d| d.attribute("targetNamespace"))
            .unwrap_or("")
            .to_owned()
    };
    let find = |kind: &'static str, key: (&str, &str)| {
        definitions.iter().find_map(|d| {
            wsdl_children(*d, kind).find(|n| n.attribute("name") == Some(key.1) && tns(*n) == key.0)
        })
    };
    // Ports: binding → address.
    let mut addresses = Vec::new();
    let mut service_name = None;
    for def in &definitions {
        for service in wsdl_children(*def, "service") {
            service_name = service_name.or(service.attribute("name"));
            for port in wsdl_children(service, "port") {
                let address = port
                    .children()
                    .find(|n| n.tag_name().name() == "address")
                    .and_then(|a| a.attribute("location"));
                if let Some(binding) = port.attribute("binding") {
                    let key = qname(port, binding);
                    addresses.push(((key.0.to_owned(), key.1.to_owned()), address));
                }
            }
        }
    }
    let mut tools: Vec<ToolSpec> = Vec::new();
    let mut names = HashSet::new();
    for def in &definitions {
        for port_type in wsdl_children(*def, "portType") {
            let pt_key = (
                tns(port_type),
                port_type.attribute("name").unwrap_or("").to_owned(),
            );
            for op in wsdl_children(port_type, "operation") {
                let Some(op_name) = op.attribute("name") else {
                    continue;
                };
                let tool_name = snake_case(op_name);
                if let Some(wanted) = &options.operations {
                    if !wanted.iter().any(|w| w == op_name || *w == tool_name) {
                        continue;
                    }
                }
                // Every SOAP binding of this port type that binds the operation.
                let mut bound = Vec::new();
                for d in &definitions {
                    for binding in wsdl_children(*d, "binding") {
                        let Some(ty) = binding.attribute("type") else {
                            continue;
                        };
                        let key = qname(binding, ty);
                        if (key.0, key.1) != (pt_key.0.as_str(), pt_key.1.as_str()) {
                            continue;
                        }
                        let Some((version, soap_binding)) = soap_version(binding) else {
                            continue;
                        };
                        let Some(operation) = wsdl_children(binding, "operation")
                            .find(|o| o.attribute("name") == Some(op_name))
                        else {
                            continue;
                        };
                        let style = soap_child(operation, version, "operation")
                            .and_then(|o| o.attribute("style"))
                            .or(soap_binding.attribute("style"))
                            .unwrap_or("document");
                        let b_key = (
                            tns(binding),
                            binding.attribute("name").unwrap_or("").to_owned(),
                        );
                        let address = addresses
                            .iter()
                            .find(|(k, _)| *k == b_key)
                            .and_then(|(_, a)| *a);
                        bound.push(Bound {
                            version,
                            operation,
                            style,
                            address,
                        });
                    }
                }
                let chosen = bound
                    .iter()
                    .find(|b| b.version == options.binding)
                    .or_else(|| bound.first());
                let Some(chosen) = chosen else {
                    notes.push(format!("operation {op_name} has no SOAP binding: skipped"));
                    continue;
                };
                let mut name = tool_name.clone();
                let mut n = 2;
                while !names.insert(name.clone()) {
                    name = format!("{tool_name}_{n}");
                    n += 1;
                }
                if let Some(tool) = operation_tool(
                    &schemas, &find, op, chosen, name, options, problems, notes, &tns,
                ) {
                    tools.push(tool);
                }
            }
        }
    }
    let service = service_name.unwrap_or("service");
    let file = root.file_name().map_or_else(
        || root.display().to_string(),
        |f| f.to_string_lossy().into_owned(),
    );
    let header = vec![
        format!("Generated by `sluice import wsdl {file}`: one tool per operation of {service}."),
        "Edit freely: rename exposed fields, write descriptions, pick schema modes; then run `sluice check`.".to_owned(),
    ];
    let toolset = options
        .toolset
        .clone()
        .unwrap_or_else(|| snake_case(service));
    config_text(
        &header,
        &options.tenant,
        &toolset,
        &format!("Operations of the {service} SOAP service."),
        &tools,
    )
}

#[allow(clippy::too_many_arguments)]
fn operation_tool<'d, 't>(
    schemas: &Schemas<'d, 't>,
    find: Finder<'_, 'd, 't>,
    op: Node<'d, 't>,
    bound: &Bound<'d, 't>,
    name: String,
    options: &WsdlOptions,
    problems: &mut Vec<Problem>,
    notes: &mut Vec<String>,
    tns: &dyn Fn(Node<'_, '_>) -> String,
) -> Option<ToolSpec> {
    let op_name = op.attribute("name").unwrap_or("");
    let version = bound.version;
    let before = problems.len();
    // rpc/encoded (and document/encoded) are refused, at the binding's `soap:body`.
    for direction in ["input", "output"] {
        if let Some(body) = wsdl_children(
            bound.operation,
            if direction == "input" {
                "input"
            } else {
                "output"
            },
        )
        .next()
        .and_then(|io| soap_child(io, version, "body"))
        {
            if body.attribute("use") == Some("encoded") {
                problems.push(Problem::at(
                    body,
                    format!(
                        "operation {op_name}: {}/encoded is not supported (only literal bodies)",
                        bound.style
                    ),
                ));
            }
        }
    }
    if problems.len() > before {
        return None;
    }
    let message = |direction: &'static str| {
        let io = wsdl_children(op, direction).next()?;
        let msg = io.attribute("message")?;
        find("message", qname(io, msg))
    };
    let input = message("input");
    let output = message("output");
    let parts = |msg: Option<Node<'d, 't>>| -> Vec<Node<'d, 't>> {
        msg.map(|m| wsdl_children(m, "part").collect())
            .unwrap_or_default()
    };
    let (in_parts, out_parts) = (parts(input), parts(output));
    let element_of = |part: Node<'d, 't>| {
        let el = part.attribute("element")?;
        let key = qname(part, el);
        schemas.elements.get(&key).copied().map(|node| (key, node))
    };
    let rpc = bound.style == "rpc";
    let wrapped = !rpc
        && in_parts.len() == 1
        && element_of(in_parts[0]).is_some_and(|((_, local), _)| local == op_name);
    // The operation element and the namespace of unprefixed names.
    let (op_ns, style, qualified) = if rpc {
        let ns = wsdl_children(bound.operation, "input")
            .next()
            .and_then(|io| soap_child(io, version, "body"))
            .and_then(|b| b.attribute("namespace"))
            .map(str::to_owned)
            .unwrap_or_else(|| tns(op));
        (ns, "rpc", false)
    } else if wrapped {
        let ((ns, _), element) = element_of(in_parts[0])?;
        let (_, qualified) = schema_of(element);
        (ns.to_owned(), "document-wrapped", qualified)
    } else {
        let ns = in_parts
            .first()
            .and_then(|p| element_of(*p))
            .map_or_else(|| tns(op), |((ns, _), _)| ns.to_owned());
        (ns, "document", false)
    };
    let mut prefixes: Vec<(String, String)> = Vec::new();
    let mut notes_here = Vec::new();
    let default_ns: &str = if qualified { &op_ns } else { "" };
    let mut rules_of =
        |side: Side, parts: &[Node<'d, 't>], problems: &mut Vec<Problem>, wrapper_only: bool| {
            let mut fields = Fields {
                schemas,
                side,
                default_ns,
                prefixes: &mut prefixes,
                rules: Vec::new(),
                problems,
                notes: &mut notes_here,
            };
            for part in parts {
                let part_name = part.attribute("name").unwrap_or("part");
                match (part.attribute("element"), part.attribute("type")) {
                    (Some(el), _) => match schemas.elements.get(&qname(*part, el)) {
                        Some(&element) if wrapper_only => fields.content_of(element),
                        Some(&element) => fields.element_at_root(element),
                        None => fields.problems.push(Problem::at(
                            *part,
                            format!("element {el:?} is not declared"),
                        )),
                    },
                    (None, Some(ty)) => fields.typed_part(*part, part_name, ty),
                    (None, None) => fields.problems.push(Problem::at(
                        *part,
                        format!("part {part_name:?} has neither element nor type"),
                    )),
                }
            }
            fields.rules
        };
    let inputs = rules_of(Side::Input, &in_parts, problems, wrapped);
    // The answer is read the same way: inside the response element, or from the body.
    let out_wrapped = !rpc && out_parts.len() == 1 && wrapped;
    let outputs = rules_of(Side::Output, &out_parts, problems, out_wrapped);
    let mut fault_details = Vec::new();
    for fault in wsdl_children(op, "fault") {
        let Some(msg) = fault.attribute("message") else {
            continue;
        };
        let Some(message) = find("message", qname(fault, msg)) else {
            continue;
        };
        for part in wsdl_children(message, "part") {
            if let Some(el) = part.attribute("element") {
                let (ns, local) = qname(part, el);
                fault_details.push(quote(&format!("{{{ns}}}{local}")));
            }
        }
    }
    let action = soap_child(bound.operation, version, "operation")
        .and_then(|o| o.attribute("soapAction"))
        .unwrap_or("");
    let mut downstream = vec![
        ("kind".to_owned(), quote("soap")),
        (
            "url".to_owned(),
            quote(bound.address.unwrap_or("http://localhost/set-the-endpoint")),
        ),
        (
            "version".to_owned(),
            quote(match version {
                Binding::Soap11 => "1.1",
                Binding::Soap12 => "1.2",
            }),
        ),
        ("action".to_owned(), quote(action)),
        (
            "operation".to_owned(),
            quote(&format!("{{{op_ns}}}{op_name}")),
        ),
        ("style".to_owned(), quote(style)),
        ("qualified".to_owned(), qualified.to_string()),
    ];
    if !prefixes.is_empty() {
        let table: Vec<String> = prefixes
            .iter()
            .map(|(p, ns)| format!("{p} = {}", quote(ns)))
            .collect();
        downstream.push((
            "namespaces".to_owned(),
            format!("{{ {} }}", table.join(", ")),
        ));
    }
    if !fault_details.is_empty() {
        downstream.push((
            "fault_details".to_owned(),
            format!("[{}]", fault_details.join(", ")),
        ));
    }
    let mut tool_notes = Vec::new();
    if bound.address.is_none() {
        tool_notes.push("No soap:address in the contract: set `url` to the endpoint.".to_owned());
    }
    if let Some(input) = wsdl_children(bound.operation, "input").next() {
        for header in input.children().filter(|n| {
            n.tag_name().name() == "header"
                && matches!(n.tag_name().namespace(), Some(WSDL_SOAP11 | WSDL_SOAP12))
        }) {
            let part = header.attribute("part").unwrap_or("?");
            let message = header.attribute("message").unwrap_or("?");
            tool_notes.push(format!(
                "SOAP header {message}/{part}: describe it as [[tenant.toolset.tool.downstream.header]] \
                 (element, fields from constants, correlation_id or secret_env)."
            ));
        }
    }
    for note in notes_here {
        tool_notes.push(note.clone());
        notes.push(format!("{name}: {note}"));
    }
    // `documentation` reads `wsdl:documentation` (a direct child) as well as XSD annotations.
    let description = documentation(op).unwrap_or_else(|| format!("The {op_name} operation."));
    let first_word = name.split('_').next().unwrap_or("");
    Some(ToolSpec {
        published: options.include_writes || !WRITE_VERBS.contains(&first_word),
        name,
        description,
        downstream,
        notes: tool_notes,
        inputs,
        outputs,
    })
}
