//! XML Schema 1.0 → field rules: the XSD table of the SOAP design notes, row by row.
//!
//! Owns [`Schemas`] (the global elements, types, groups and attribute groups of every loaded
//! schema, by namespace and name) and [`Fields`], the walk of an element's content that emits
//! one [`RuleSpec`] per leaf: `sequence`/`all` children in order, `choice` members optional
//! (noted in their description), `minOccurs`/`maxOccurs` as required and arrays with bounds,
//! `nillable`, attributes as `@name`, `simpleContent` as `#text` (exposed `value`) beside its
//! attributes, `complexContent` extension after its base, `any`/`anyType` as free objects,
//! enumerations and facets, built-in types with formats, recursion cut at a depth. Must not
//! read WSDL (`wsdl.rs`) or write TOML (`emit.rs`).

use std::collections::HashMap;

use roxmltree::Node;

use super::emit::{snake_case, RuleSpec};
use super::Problem;
use crate::config::FieldType;

/// The XML Schema namespace.
pub(crate) const XSD: &str = "http://www.w3.org/2001/XMLSchema";

/// How deep the walk follows nested and recursive types before an element becomes a free
/// object.
pub(crate) const MAX_TYPE_DEPTH: usize = 8;

type Key<'d> = (&'d str, &'d str);

/// Every global component of the loaded schemas.
#[derive(Default)]
pub(crate) struct Schemas<'d, 't> {
    pub(crate) elements: HashMap<Key<'d>, Node<'d, 't>>,
    pub(crate) types: HashMap<Key<'d>, Node<'d, 't>>,
    groups: HashMap<Key<'d>, Node<'d, 't>>,
    attribute_groups: HashMap<Key<'d>, Node<'d, 't>>,
    attributes: HashMap<Key<'d>, Node<'d, 't>>,
}

impl<'d, 't> Schemas<'d, 't> {
    /// Adds the global components of one `xsd:schema` element.
    pub(crate) fn add(&mut self, schema: Node<'d, 't>) {
        let ns = schema.attribute("targetNamespace").unwrap_or("");
        for child in schema.children().filter(|n| is_xsd(n)) {
            let Some(name) = child.attribute("name") else {
                continue;
            };
            let map = match child.tag_name().name() {
                "element" => &mut self.elements,
                "complexType" | "simpleType" => &mut self.types,
                "group" => &mut self.groups,
                "attributeGroup" => &mut self.attribute_groups,
                "attribute" => &mut self.attributes,
                _ => continue,
            };
            map.insert((ns, name), child);
        }
    }
}

pub(crate) fn is_xsd(node: &Node<'_, '_>) -> bool {
    node.is_element() && node.tag_name().namespace() == Some(XSD)
}

fn xsd_children<'a, 'i>(node: Node<'a, 'i>) -> impl Iterator<Item = Node<'a, 'i>> {
    node.children().filter(is_xsd)
}

fn xsd_child<'a, 'i>(node: Node<'a, 'i>, name: &str) -> Option<Node<'a, 'i>> {
    xsd_children(node).find(|n| n.tag_name().name() == name)
}

/// Resolves a QName attribute value (`tns:Order`) in the scope of `node`.
pub(crate) fn qname<'a>(node: Node<'a, '_>, value: &'a str) -> (&'a str, &'a str) {
    match value.split_once(':') {
        Some((prefix, local)) => (node.lookup_namespace_uri(Some(prefix)).unwrap_or(""), local),
        None => (node.lookup_namespace_uri(None).unwrap_or(""), value),
    }
}

/// The `xsd:schema` a node is in: its target namespace and whether local elements are
/// qualified.
pub(crate) fn schema_of<'a>(node: Node<'a, '_>) -> (&'a str, bool) {
    let schema = node
        .ancestors()
        .find(|n| is_xsd(n) && n.tag_name().name() == "schema");
    let ns = schema
        .and_then(|s| s.attribute("targetNamespace"))
        .unwrap_or("");
    let qualified = schema.and_then(|s| s.attribute("elementFormDefault")) == Some("qualified");
    (ns, qualified)
}

/// `documentation` text of a component's `annotation`, on one line.
pub(crate) fn documentation(node: Node<'_, '_>) -> Option<String> {
    let annotation = xsd_child(node, "annotation").or_else(|| {
        node.children()
            .find(|n| n.tag_name().name() == "documentation")
    })?;
    let doc = if annotation.tag_name().name() == "documentation" {
        annotation
    } else {
        xsd_child(annotation, "documentation")?
    };
    let text: String = doc
        .descendants()
        .filter(|n| n.is_text())
        .filter_map(|n| n.text())
        .collect();
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    (!text.is_empty()).then_some(text)
}

/// A built-in type as (JSON type, format).
fn builtin(name: &str) -> Option<(FieldType, Option<&'static str>)> {
    Some(match name {
        "string" | "normalizedString" | "token" | "language" | "Name" | "NCName" | "ID"
        | "IDREF" | "IDREFS" | "ENTITY" | "ENTITIES" | "NMTOKEN" | "NMTOKENS" | "QName"
        | "NOTATION" | "hexBinary" | "gYear" | "gYearMonth" | "gMonth" | "gMonthDay" | "gDay"
        | "anySimpleType" => (FieldType::String, None),
        "int" | "short" | "byte" | "long" | "integer" | "unsignedInt" | "unsignedShort"
        | "unsignedByte" | "unsignedLong" | "positiveInteger" | "nonNegativeInteger"
        | "negativeInteger" | "nonPositiveInteger" => (FieldType::Integer, None),
        "decimal" | "float" | "double" => (FieldType::Number, None),
        "boolean" => (FieldType::Boolean, None),
        "date" => (FieldType::String, Some("date")),
        "dateTime" => (FieldType::String, Some("date-time")),
        "time" => (FieldType::String, Some("time")),
        "duration" => (FieldType::String, Some("duration")),
        "anyURI" => (FieldType::String, Some("uri")),
        "base64Binary" => (FieldType::String, Some("byte")),
        _ => return None,
    })
}

/// A simple type as a rule's type, format, enumeration and facets.
#[derive(Default)]
struct Simple {
    ty: FieldType,
    format: Option<&'static str>,
    enums: Vec<toml::Value>,
    pattern: Option<String>,
    min_length: Option<u64>,
    max_length: Option<u64>,
    minimum: Option<f64>,
    maximum: Option<f64>,
}

/// Which side the rules are for.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    Input,
    Output,
}

/// Where a walk is: the source and exposed paths so far, whether every element on the way
/// (since the last array) is required, the depth, the complex types being expanded, and the
/// choice a member belongs to.
#[derive(Clone, Default)]
struct At<'d> {
    source: String,
    exposed: String,
    required: bool,
    depth: usize,
    types: Vec<Key<'d>>,
    choice: Option<String>,
}

impl<'d> At<'d> {
    fn root() -> Self {
        At {
            required: true,
            ..At::default()
        }
    }

    /// One step down: `source` (an XML name, `@attr` or `#text`) and `exposed`.
    fn child(&self, source: &str, exposed: &str, required: bool) -> Self {
        At {
            source: if self.source.is_empty() {
                source.to_owned()
            } else {
                format!("{}/{source}", self.source)
            },
            exposed: if self.exposed.is_empty() {
                exposed.to_owned()
            } else {
                format!("{}.{exposed}", self.exposed)
            },
            required: self.required && required,
            depth: self.depth + 1,
            types: self.types.clone(),
            choice: self.choice.clone(),
        }
    }

    /// The same place as an array: `[*]` on both paths; requirement restarts inside.
    fn each(mut self) -> Self {
        self.source.push_str("[*]");
        self.exposed.push_str("[*]");
        self.required = true;
        self
    }
}

/// The walk that turns element content into rules.
pub(crate) struct Fields<'s, 'd, 't> {
    pub(crate) schemas: &'s Schemas<'d, 't>,
    pub(crate) side: Side,
    /// The namespace unprefixed path segments are in, and whether local elements use it.
    pub(crate) default_ns: &'d str,
    /// Prefixes of other namespaces met (`ns1` → URI), in order.
    pub(crate) prefixes: &'s mut Vec<(String, String)>,
    pub(crate) rules: Vec<RuleSpec>,
    pub(crate) problems: &'s mut Vec<Problem>,
    /// Notes for a human (constructs met but not mapped, such as `xsd:any` particles).
    pub(crate) notes: &'s mut Vec<String>,
}

impl<'d, 't> Fields<'_, 'd, 't> {
    /// The rules of an element's content (attributes and children), paths starting inside it:
    /// what the wrapper of a document/literal wrapped operation holds.
    pub(crate) fn content_of(&mut self, element: Node<'d, 't>) {
        let at = At::root();
        if let Some((ty, _)) = self.type_of(element) {
            self.typed(ty, &at);
        }
    }

    /// One element as the first step of the paths (a part of a bare document operation).
    pub(crate) fn element_at_root(&mut self, element: Node<'d, 't>) {
        self.element(element, &At::root(), false);
    }

    /// A part declared with `type=` (rpc): an unqualified element named `name` of that type.
    pub(crate) fn typed_part(&mut self, part: Node<'d, 't>, name: &str, type_name: &'d str) {
        let at = At::root().child(name, &snake_case(name), true);
        let key = qname(part, type_name);
        if key.0 == XSD {
            let simple = self.simple_builtin(part, key.1);
            self.leaf(&at, simple, None, false);
        } else if let Some(&ty) = self.schemas.types.get(&key) {
            let mut at = at;
            if ty.tag_name().name() == "complexType" {
                at.types.push(key);
            }
            self.typed(ty, &at);
        } else {
            self.problem(part, format!("type {type_name:?} is not declared"));
        }
    }

    fn problem(&mut self, node: Node<'_, '_>, message: String) {
        self.problems.push(Problem::at(node, message));
    }

    /// An element's type node (inline, or named) and its name; `None` for a built-in.
    fn type_of(&mut self, element: Node<'d, 't>) -> Option<(Node<'d, 't>, Option<Key<'d>>)> {
        if let Some(inline) = xsd_children(element)
            .find(|n| matches!(n.tag_name().name(), "complexType" | "simpleType"))
        {
            return Some((inline, None));
        }
        let name = element.attribute("type")?;
        let key = qname(element, name);
        if key.0 == XSD {
            return None;
        }
        match self.schemas.types.get(&key) {
            Some(&ty) => Some((ty, Some(key))),
            None => {
                self.problem(element, format!("type {name:?} is not declared"));
                None
            }
        }
    }

    /// A type's content at `at`: a simple type is a leaf, a complex type its members.
    fn typed(&mut self, ty: Node<'d, 't>, at: &At<'d>) {
        if ty.tag_name().name() == "simpleType" {
            let simple = self.simple(ty);
            self.leaf(at, simple, documentation(ty), false);
        } else {
            self.complex(ty, at);
        }
    }

    /// A complex type's attributes and content.
    fn complex(&mut self, ty: Node<'d, 't>, at: &At<'d>) {
        for child in xsd_children(ty) {
            match child.tag_name().name() {
                "sequence" | "all" | "choice" | "group" => self.particle(child, at),
                "attribute" | "attributeGroup" => self.attribute(child, at),
                "simpleContent" => self.simple_content(child, at),
                "complexContent" => self.complex_content(child, at),
                "anyAttribute" | "annotation" => {}
                "any" => self.any(child),
                other => self.problem(child, format!("xsd:{other} is not supported here")),
            }
        }
    }

    /// `sequence`, `all`, `choice` and `group ref` particles, in order.
    fn particle(&mut self, node: Node<'d, 't>, at: &At<'d>) {
        let optional = node.attribute("minOccurs") == Some("0");
        let mut inner = at.clone();
        if optional {
            inner.required = false;
        }
        match node.tag_name().name() {
            "group" => {
                let Some(name) = node.attribute("ref") else {
                    return;
                };
                match self.schemas.groups.get(&qname(node, name)) {
                    Some(&group) => {
                        for child in xsd_children(group) {
                            self.particle(child, &inner);
                        }
                    }
                    None => self.problem(node, format!("group {name:?} is not declared")),
                }
            }
            "choice" => {
                let members: Vec<&str> = xsd_children(node)
                    .filter_map(|n| n.attribute("name").or(n.attribute("ref")))
                    .collect();
                inner.required = false;
                inner.choice = Some(format!("one of: {}", members.join(", ")));
                for child in xsd_children(node) {
                    self.member(child, &inner);
                }
            }
            _ => {
                for child in xsd_children(node) {
                    self.member(child, &inner);
                }
            }
        }
    }

    fn member(&mut self, node: Node<'d, 't>, at: &At<'d>) {
        match node.tag_name().name() {
            "element" => self.element(node, at, true),
            "sequence" | "all" | "choice" | "group" => self.particle(node, at),
            "any" => self.any(node),
            "annotation" => {}
            other => self.problem(
                node,
                format!("xsd:{other} is not supported in a model group"),
            ),
        }
    }

    fn any(&mut self, node: Node<'_, '_>) {
        let pos = node.document().text_pos_at(node.range().start);
        self.notes.push(format!(
            "xsd:any at line {}, column {} has no field rules: map what it carries by hand",
            pos.row, pos.col
        ));
    }

    /// An element declaration (local or `ref`) at `at`; `local` says whether it is a local
    /// element (its form follows `elementFormDefault`) rather than a global one.
    fn element(&mut self, decl: Node<'d, 't>, at: &At<'d>, local: bool) {
        let min: u64 = decl
            .attribute("minOccurs")
            .and_then(|v| v.parse().ok())
            .unwrap_or(1);
        let max: Option<u64> = match decl.attribute("maxOccurs") {
            Some("unbounded") => None,
            Some(v) => v.parse().ok(),
            None => Some(1),
        };
        if max == Some(0) {
            return;
        }
        // A reference: the global element, qualified by its schema.
        let (element, qualified, ns) = match decl.attribute("ref") {
            Some(name) => {
                let key = qname(decl, name);
                match self.schemas.elements.get(&key) {
                    Some(&global) => (global, true, key.0),
                    None => {
                        self.problem(decl, format!("element {name:?} is not declared"));
                        return;
                    }
                }
            }
            None => {
                let (ns, qualified) = schema_of(decl);
                let qualified = !local
                    || decl
                        .attribute("form")
                        .map_or(qualified, |f| f == "qualified");
                (decl, qualified, ns)
            }
        };
        let Some(name) = element.attribute("name") else {
            self.problem(decl, "an element without a name".into());
            return;
        };
        let Some(segment) = self.segment(decl, name, qualified, ns) else {
            return;
        };
        let repeated = max.is_none_or(|m| m > 1);
        let mut child = at.child(&segment, &snake_case(name), min >= 1 && at.choice.is_none());
        let description = documentation(decl).or_else(|| documentation(element));
        let nillable = element.attribute("nillable") == Some("true");
        if child.depth > MAX_TYPE_DEPTH {
            self.free_object(&child, description, "nested deeper than the import follows");
            return;
        }
        match self.type_of(element) {
            // Simple content: a leaf; a repeated one is an `array` leaf with its bounds.
            None => {
                let simple = match element.attribute("type") {
                    Some(t) => self.simple_builtin(element, qname(element, t).1),
                    // No type: anyType.
                    None => {
                        self.free_object(&child, description, "xsd:anyType");
                        return;
                    }
                };
                self.leaf_occurs(&child, simple, description, nillable, repeated, min, max);
            }
            Some((ty, _)) if ty.tag_name().name() == "simpleType" => {
                let simple = self.simple(ty);
                let description = description.or_else(|| documentation(ty));
                self.leaf_occurs(&child, simple, description, nillable, repeated, min, max);
            }
            Some((ty, key)) => {
                if let Some(key) = key {
                    if child.types.contains(&key) {
                        self.free_object(&child, description, "a recursive type");
                        return;
                    }
                    child.types.push(key);
                }
                if repeated {
                    child = child.each();
                }
                let before = self.rules.len();
                self.complex(ty, &child);
                if self.rules.len() == before {
                    // An element with no content (`<Ping/>`): nothing to map.
                    return;
                }
                if let Some(description) = description {
                    // The first rule of the element carries its documentation.
                    if let Some(rule) = self.rules.get_mut(before) {
                        if rule.description.is_none() {
                            rule.description = Some(description);
                        }
                    }
                }
            }
        }
    }

    /// The path segment of an element: bare in the default namespace, `nsN:` prefixed in
    /// another; an unqualified element below qualified ones cannot be written as a path.
    fn segment(
        &mut self,
        node: Node<'_, '_>,
        name: &str,
        qualified: bool,
        ns: &str,
    ) -> Option<String> {
        if !qualified {
            if !self.default_ns.is_empty() {
                self.problem(
                    node,
                    format!("element {name:?} is unqualified inside qualified content (mixed elementFormDefault)"),
                );
                return None;
            }
            return Some(name.to_owned());
        }
        if ns == self.default_ns {
            return Some(name.to_owned());
        }
        let prefix = match self.prefixes.iter().find(|(_, uri)| uri == ns) {
            Some((prefix, _)) => prefix.clone(),
            None => {
                let prefix = format!("ns{}", self.prefixes.len() + 1);
                self.prefixes.push((prefix.clone(), ns.to_owned()));
                prefix
            }
        };
        Some(format!("{prefix}:{name}"))
    }

    /// A simple leaf, repeated as an `array` leaf when `maxOccurs > 1`.
    #[allow(clippy::too_many_arguments)]
    fn leaf_occurs(
        &mut self,
        at: &At<'d>,
        simple: Simple,
        description: Option<String>,
        nillable: bool,
        repeated: bool,
        min: u64,
        max: Option<u64>,
    ) {
        let start = self.rules.len();
        self.leaf(at, simple, description, nillable);
        if repeated {
            if let Some(rule) = self.rules.get_mut(start) {
                rule.items = Some(rule.ty);
                rule.ty = FieldType::Array;
                rule.min_items = (min > 0).then_some(min);
                rule.max_items = max;
                rule.required = at.required && self.side == Side::Input;
            }
        }
    }

    fn leaf(&mut self, at: &At<'d>, simple: Simple, description: Option<String>, nillable: bool) {
        let description = match (&at.choice, description) {
            (Some(choice), Some(d)) => Some(format!("{d} ({choice})")),
            (Some(choice), None) => Some(format!("({choice})")),
            (None, d) => d,
        };
        self.rules.push(RuleSpec {
            source: at.source.clone(),
            exposed: at.exposed.clone(),
            ty: simple.ty,
            required: at.required && self.side == Side::Input,
            nillable,
            description,
            format: simple.format.map(Into::into),
            enum_values: simple.enums,
            pattern: simple.pattern,
            min_length: simple.min_length,
            max_length: simple.max_length,
            minimum: simple.minimum,
            maximum: simple.maximum,
            ..RuleSpec::default()
        });
    }

    /// An element mapped as one free-form object.
    fn free_object(&mut self, at: &At<'d>, description: Option<String>, why: &str) {
        let note = format!("free-form object ({why})");
        self.rules.push(RuleSpec {
            source: at.source.clone(),
            exposed: at.exposed.clone(),
            ty: FieldType::Object,
            required: at.required && self.side == Side::Input,
            description: Some(match description {
                Some(d) => format!("{d} ({note})"),
                None => note,
            }),
            any_properties: true,
            ..RuleSpec::default()
        });
    }

    /// An `attribute` (local or `ref`) or `attributeGroup ref`.
    fn attribute(&mut self, node: Node<'d, 't>, at: &At<'d>) {
        if node.tag_name().name() == "attributeGroup" {
            let Some(name) = node.attribute("ref") else {
                return;
            };
            match self.schemas.attribute_groups.get(&qname(node, name)) {
                Some(&group) => {
                    for child in xsd_children(group) {
                        if matches!(child.tag_name().name(), "attribute" | "attributeGroup") {
                            self.attribute(child, at);
                        }
                    }
                }
                None => self.problem(node, format!("attributeGroup {name:?} is not declared")),
            }
            return;
        }
        let decl = match node.attribute("ref") {
            Some(name) => match self.schemas.attributes.get(&qname(node, name)) {
                Some(&global) => global,
                None => {
                    self.problem(node, format!("attribute {name:?} is not declared"));
                    return;
                }
            },
            None => node,
        };
        if node.attribute("use") == Some("prohibited") {
            return;
        }
        let Some(name) = decl.attribute("name") else {
            return;
        };
        // An attribute beside an element of the same exposed name takes a prefix.
        let mut exposed = snake_case(name);
        let taken = |rules: &[RuleSpec], exposed: &str| {
            let path = if at.exposed.is_empty() {
                exposed.to_owned()
            } else {
                format!("{}.{exposed}", at.exposed)
            };
            rules
                .iter()
                .any(|r| r.exposed == path || r.exposed.starts_with(&format!("{path}.")))
        };
        if taken(&self.rules, &exposed) {
            exposed = format!("attr_{exposed}");
        }
        let child = at.child(
            &format!("@{name}"),
            &exposed,
            node.attribute("use") == Some("required"),
        );
        let simple = match decl.attribute("type") {
            Some(t) => {
                let key = qname(decl, t);
                if key.0 == XSD {
                    self.simple_builtin(decl, key.1)
                } else {
                    match self.schemas.types.get(&key) {
                        Some(&ty) => self.simple(ty),
                        None => Simple::default(),
                    }
                }
            }
            None => {
                xsd_child(decl, "simpleType").map_or_else(Simple::default, |ty| self.simple(ty))
            }
        };
        self.leaf(&child, simple, documentation(decl), false);
    }

    /// `simpleContent`: the text as `#text` (exposed `value`) beside the attributes.
    fn simple_content(&mut self, node: Node<'d, 't>, at: &At<'d>) {
        let Some(derivation) =
            xsd_children(node).find(|n| matches!(n.tag_name().name(), "extension" | "restriction"))
        else {
            return;
        };
        let simple = match derivation.attribute("base") {
            Some(base) => {
                let key = qname(derivation, base);
                if key.0 == XSD {
                    self.simple_builtin(derivation, key.1)
                } else {
                    match self.schemas.types.get(&key) {
                        Some(&ty) if ty.tag_name().name() == "simpleType" => self.simple(ty),
                        _ => Simple::default(),
                    }
                }
            }
            None => Simple::default(),
        };
        let text = at.child("#text", "value", true);
        self.leaf(&text, simple, None, false);
        for child in xsd_children(derivation) {
            if matches!(child.tag_name().name(), "attribute" | "attributeGroup") {
                self.attribute(child, at);
            }
        }
    }

    /// `complexContent`: an extension's base content, then its own; a restriction's own.
    fn complex_content(&mut self, node: Node<'d, 't>, at: &At<'d>) {
        let Some(derivation) =
            xsd_children(node).find(|n| matches!(n.tag_name().name(), "extension" | "restriction"))
        else {
            return;
        };
        if derivation.tag_name().name() == "extension" {
            if let Some(base) = derivation.attribute("base") {
                let key = qname(derivation, base);
                if key.0 == XSD && key.1 == "anyType" {
                    // No base content.
                } else if let Some(&ty) = self.schemas.types.get(&key) {
                    self.complex(ty, at);
                } else if key.0 == "http://schemas.xmlsoap.org/soap/encoding/" {
                    self.problem(derivation, "SOAP encoding arrays (soapenc:Array) are rpc/encoded, which is not supported".into());
                } else {
                    self.problem(derivation, format!("base type {base:?} is not declared"));
                }
            }
        } else if derivation
            .attribute("base")
            .is_some_and(|b| qname(derivation, b).0 == "http://schemas.xmlsoap.org/soap/encoding/")
        {
            self.problem(
                derivation,
                "SOAP encoding arrays (soapenc:Array) are rpc/encoded, which is not supported"
                    .into(),
            );
            return;
        }
        self.complex(derivation, at);
    }

    fn simple_builtin(&mut self, node: Node<'_, '_>, name: &str) -> Simple {
        match builtin(name) {
            Some((ty, format)) => Simple {
                ty,
                format,
                ..Simple::default()
            },
            None if name == "anyType" => Simple::default(),
            None => {
                self.problem(node, format!("xsd:{name} is not a built-in type"));
                Simple::default()
            }
        }
    }

    /// A simple type: its base built-in, enumeration and facets (lists and unions are strings).
    fn simple(&mut self, ty: Node<'d, 't>) -> Simple {
        let Some(restriction) = xsd_child(ty, "restriction") else {
            return Simple::default();
        };
        let mut simple = match restriction.attribute("base") {
            Some(base) => {
                let key = qname(restriction, base);
                if key.0 == XSD {
                    self.simple_builtin(restriction, key.1)
                } else {
                    match self.schemas.types.get(&key) {
                        Some(&base) if base != ty => self.simple(base),
                        _ => Simple::default(),
                    }
                }
            }
            None => xsd_child(restriction, "simpleType")
                .map_or_else(Simple::default, |inner| self.simple(inner)),
        };
        for facet in xsd_children(restriction) {
            let Some(value) = facet.attribute("value") else {
                continue;
            };
            match facet.tag_name().name() {
                "enumeration" => simple.enums.push(match simple.ty {
                    FieldType::Integer => value
                        .parse::<i64>()
                        .map_or_else(|_| value.into(), toml::Value::Integer),
                    FieldType::Number => value
                        .parse::<f64>()
                        .map_or_else(|_| value.into(), toml::Value::Float),
                    _ => value.into(),
                }),
                "pattern" => simple.pattern = Some(format!("^(?:{value})$")),
                "length" => {
                    simple.min_length = value.parse().ok();
                    simple.max_length = simple.min_length;
                }
                "minLength" => simple.min_length = value.parse().ok(),
                "maxLength" => simple.max_length = value.parse().ok(),
                "minInclusive" => simple.minimum = value.parse().ok(),
                "maxInclusive" => simple.maximum = value.parse().ok(),
                _ => {}
            }
        }
        simple
    }
}
