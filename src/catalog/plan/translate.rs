//! Translation trees: a tool's field rules compiled into the two trees a call walks.
//!
//! A [`Translation`] is two trees compiled from (from-path, to-path) pairs: the *from* tree mirrors
//! the document we read (exposed arguments for a request, the downstream response for a result),
//! so one walk over the incoming JSON visits every mapped field; each leaf carries precomputed
//! *steps* into the *to* tree (child positions, not names), so building the output needs no key
//! lookups. The same structure serves both directions.
//!
//! Owns those trees and the checks made while building them: path syntax, lined-up `[*]`
//! structure, overlapping paths, what a path, query or header field may hold. Must not walk a
//! document: `invoke::translate` does, per call.

use http::HeaderName;
use smallvec::SmallVec;

use super::{compile_header_name, PlanProblem};
use crate::config::{FieldPath, FieldRule, FieldType, Location, Segment};

/// A compiled translation between two documents (see the module doc).
#[derive(Debug, Clone)]
pub struct Translation {
    /// Members of the root object of the document we read.
    pub from: Vec<FromChild>,
    /// Members of the root object of the document we write (body fields only for requests).
    pub to: Vec<ToChild>,
    /// Every leaf, in rule order.
    pub leaves: Vec<Leaf>,
}

/// A member of an object in the from tree.
#[derive(Debug, Clone)]
pub struct FromChild {
    /// The member name as it appears in the document read.
    pub key: Box<str>,
    /// The path pattern up to this member (for error messages), e.g. `customer.addresses[*].city`.
    pub path: Box<str>,
    /// Whether the member must be present when its enclosing object is (a required leaf, or an
    /// object on the way to one that is not separated from it by an array).
    pub required: bool,
    /// Whether the member is a leaf whose rule is `nillable`: `null` is its value, not absence.
    pub nillable: bool,
    /// What the member holds.
    pub node: FromNode,
}

/// A node of the from tree.
#[derive(Debug, Clone)]
pub enum FromNode {
    /// An object with mapped members.
    Object(Vec<FromChild>),
    /// An array whose elements are walked.
    Array {
        /// What each element holds.
        element: Box<FromNode>,
        /// Steps to the matching array in the to tree when every leaf below agrees on one; the
        /// walk sizes it to this array's length so empty and sparse elements survive.
        to_array: Option<Steps>,
    },
    /// A mapped field: index into `Translation::leaves`.
    Leaf(u32),
}

/// A member of an object in the to tree.
#[derive(Debug, Clone)]
pub struct ToChild {
    /// The member name as the rule writes it (an XML name for a SOAP request).
    pub key: Box<str>,
    /// The member name as JSON with the colon, ready to copy: `"town":`.
    pub key_json: Box<str>,
    /// What the member holds.
    pub node: ToNode,
}

/// A node of the to tree.
#[derive(Debug, Clone)]
pub enum ToNode {
    /// An object; members are addressed by position.
    Object(Vec<ToChild>),
    /// An array.
    Array(Box<ToNode>),
    /// A value copied from the document read.
    Leaf,
}

/// One step into the to tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// The member at this position of the object.
    Child(u16),
    /// The array element at the next index of the walk's index stack.
    Each,
}

/// A path into the to tree.
pub(crate) type Steps = SmallVec<[Step; 6]>;

/// A mapped field.
#[derive(Debug, Clone)]
pub struct Leaf {
    /// The field's path in the document read (for error messages).
    pub from_path: Box<str>,
    /// Where the value goes in the to tree (body fields only).
    pub to: Steps,
    /// The source member name for path, query and header fields.
    pub name: Box<str>,
    /// Where an input field goes; `Body` for output rules.
    pub location: Location,
    /// The compiled header name of a header-location field.
    pub header: Option<HeaderName>,
    /// The JSON type expected (of each element when the path ends in `[*]`).
    pub ty: FieldType,
    /// Element type when `ty` is `Array` (not used for `[*]` leaves).
    pub items: FieldType,
    /// Whether `null` is a value of the field (the rule is `nillable`).
    pub nillable: bool,
}

// === compilation ===

/// Which way a translation maps.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Direction {
    /// From exposed (arguments) to source (request).
    Input,
    /// From source (response) to exposed (result).
    Output,
}

/// Compiles one direction's rules into a translation, pushing a problem for each rule that
/// does not fit (the others still compile). `xml` says source paths are XML paths.
pub(super) fn compile(
    rules: &[FieldRule],
    direction: Direction,
    xml: bool,
    problems: &mut Vec<PlanProblem>,
) -> Translation {
    let mut tr = Translation {
        from: Vec::new(),
        to: Vec::new(),
        leaves: Vec::new(),
    };
    for rule in rules {
        let exposed = FieldPath::parse(&rule.exposed);
        let source = if xml {
            FieldPath::parse_xml(&rule.source)
        } else {
            FieldPath::parse(&rule.source)
        };
        let (exposed, source) = match (exposed, source) {
            (Ok(e), Ok(s)) => (e, s),
            (e, s) => {
                if let Err(err) = e {
                    problems.push(PlanProblem::field(
                        &rule.exposed,
                        format!("exposed path does not parse: {err}"),
                    ));
                }
                if let Err(err) = s {
                    problems.push(PlanProblem::field(
                        &rule.exposed,
                        format!("source path {:?} does not parse: {err}", rule.source),
                    ));
                }
                continue;
            }
        };
        if !exposed.lines_up_with(&source) {
            problems.push(PlanProblem::field(
                &rule.exposed,
                format!(
                    "source path {:?} and exposed path do not have the same [*] structure",
                    rule.source
                ),
            ));
            continue;
        }
        let (from, to) = match direction {
            Direction::Input => (&exposed, &source),
            Direction::Output => (&source, &exposed),
        };
        let location = match direction {
            Direction::Input => rule.location,
            Direction::Output => Location::Body,
        };
        let items = rule.items.unwrap_or(FieldType::String);
        let ty = if from.is_array_leaf() {
            // A `[*]` leaf names the elements: their type is the item type, or the field type
            // when that is a scalar and no item type was given.
            match (rule.items, rule.ty) {
                (Some(t), _) => t,
                (None, FieldType::Array) => FieldType::String,
                (None, t) => t,
            }
        } else {
            rule.ty
        };
        let mut header = None;
        if location != Location::Body {
            if let Err(msg) = check_parameter(location, &source, ty, items) {
                problems.push(PlanProblem::field(&rule.exposed, msg));
                continue;
            }
            if location == Location::Header {
                match compile_header_name(&rule.source) {
                    Ok(hn) => header = Some(hn),
                    Err(msg) => {
                        problems.push(PlanProblem::field(&rule.exposed, msg));
                        continue;
                    }
                }
            }
        }
        let leaf_idx = tr.leaves.len() as u32;
        let to_steps = if location == Location::Body {
            match insert_to(&mut tr.to, to.segments()) {
                Ok(steps) => steps,
                Err(()) => {
                    problems.push(PlanProblem::field(
                        &rule.exposed,
                        format!(
                            "{} path {to} overlaps another field's {} path",
                            side_name(direction, false),
                            side_name(direction, false)
                        ),
                    ));
                    continue;
                }
            }
        } else {
            Steps::new()
        };
        // Path fields are implicitly required: the URL cannot be built without them.
        let required = rule.required || location == Location::Path;
        if insert_from(
            &mut tr.from,
            from.segments(),
            leaf_idx,
            required && direction == Direction::Input,
            rule.nillable,
        )
        .is_err()
        {
            problems.push(PlanProblem::field(
                &rule.exposed,
                format!(
                    "{} path {from} overlaps another field's {} path",
                    side_name(direction, true),
                    side_name(direction, true)
                ),
            ));
            // The to-side insertion stays: it only adds shape, never a value.
            continue;
        }
        tr.leaves.push(Leaf {
            from_path: rule.exposed.as_str().into(),
            to: to_steps,
            name: match source.segments().first() {
                Some(Segment::Key(k)) => k.clone(),
                _ => "".into(),
            },
            location,
            header,
            ty,
            items,
            nillable: rule.nillable,
        });
    }
    finish_from(&mut tr.from, "", &tr.leaves, 0);
    tr
}

/// Checks a path, query or header field. The *source* is the parameter or header name, one
/// member name (a query source may end in `[*]`); the *exposed* path may nest in objects, and
/// its `[*]` structure has already been checked to line up with the source. `ty` is the leaf's
/// type (of each element for a `[*]` leaf), `items` the element type of an `array` leaf.
fn check_parameter(
    location: Location,
    source: &FieldPath,
    ty: FieldType,
    items: FieldType,
) -> Result<(), String> {
    let what = location_name(location);
    let each = match source.segments() {
        [Segment::Key(_)] => false,
        [Segment::Key(_), Segment::Each] if location == Location::Query => true,
        [Segment::Key(_), Segment::Each] => {
            return Err(format!(
                "a {what} field must be a single scalar value, not an array{}",
                not_joined(location)
            ))
        }
        _ => {
            return Err(format!(
                "the source of a {what} field must be one {} name{} (the exposed path may \
                 nest in objects)",
                if location == Location::Header {
                    "header"
                } else {
                    "parameter"
                },
                if location == Location::Query {
                    ", optionally ending in [*]"
                } else {
                    ""
                },
            ))
        }
    };
    let scalar = |t: FieldType| !matches!(t, FieldType::Object | FieldType::Array);
    match (location, ty) {
        (_, t) if scalar(t) => Ok(()),
        (Location::Query, FieldType::Array) if !each && scalar(items) => Ok(()),
        (Location::Query, _) => Err(
            "a query field must be a scalar or an array of scalars (one key=value pair per \
             element); objects, arrays of objects and nested arrays cannot be sent in a query"
                .to_owned(),
        ),
        _ => Err(format!(
            "a {what} field must be a single scalar value, not an object or array{}",
            not_joined(location)
        )),
    }
}

/// Why header arrays are refused although HTTP could carry them.
fn not_joined(location: Location) -> &'static str {
    if location == Location::Header {
        " (a list could be sent comma-joined, but header values are not joined)"
    } else {
        ""
    }
}

fn location_name(location: Location) -> &'static str {
    match location {
        Location::Path => "path",
        Location::Query => "query",
        Location::Header => "header",
        Location::Body => "body",
    }
}

fn side_name(direction: Direction, from: bool) -> &'static str {
    match (direction, from) {
        (Direction::Input, true) | (Direction::Output, false) => "exposed",
        _ => "source",
    }
}

/// Adds a path to the from tree. Fails when it overlaps an existing path (same path twice, or
/// one ending where another continues, or an object position where another has an array).
/// Returns whether a required flag propagates to the enclosing member (it stops at arrays).
fn insert_from(
    children: &mut Vec<FromChild>,
    segments: &[Segment],
    leaf: u32,
    required: bool,
    nillable: bool,
) -> Result<bool, ()> {
    let Some(Segment::Key(key)) = segments.first() else {
        return Err(());
    };
    let rest = &segments[1..];
    let pos = match children.iter().position(|c| c.key == *key) {
        Some(p) => p,
        None => {
            children.push(FromChild {
                key: key.clone(),
                path: "".into(),
                required: false,
                nillable: nillable && rest.is_empty(),
                node: empty_from_node(rest),
            });
            children.len() - 1
        }
    };
    let child = &mut children[pos];
    let propagate = insert_from_node(&mut child.node, rest, leaf, required, nillable)?;
    child.required |= propagate;
    Ok(propagate)
}

fn empty_from_node(rest: &[Segment]) -> FromNode {
    match rest.first() {
        None => FromNode::Leaf(u32::MAX),
        Some(Segment::Key(_)) => FromNode::Object(Vec::new()),
        Some(Segment::Each) => FromNode::Array {
            element: Box::new(empty_from_node(&rest[1..])),
            to_array: None,
        },
    }
}

fn insert_from_node(
    node: &mut FromNode,
    rest: &[Segment],
    leaf: u32,
    required: bool,
    nillable: bool,
) -> Result<bool, ()> {
    match (node, rest.first()) {
        (node @ FromNode::Leaf(u32::MAX), None) => {
            *node = FromNode::Leaf(leaf);
            Ok(required)
        }
        (FromNode::Object(children), Some(Segment::Key(_))) => {
            insert_from(children, rest, leaf, required, nillable)
        }
        (FromNode::Array { element, .. }, Some(Segment::Each)) => {
            insert_from_node(element, &rest[1..], leaf, required, nillable)?;
            Ok(false)
        }
        _ => Err(()),
    }
}

/// Fills in path patterns and array counterparts once every leaf is in place.
fn finish_from(children: &mut [FromChild], prefix: &str, leaves: &[Leaf], depth: usize) {
    for child in children {
        let path = if prefix.is_empty() {
            child.key.to_string()
        } else {
            format!("{prefix}.{}", child.key)
        };
        finish_node(&mut child.node, &path, leaves, depth);
        child.path = path.into();
    }
}

fn finish_node(node: &mut FromNode, path: &str, leaves: &[Leaf], depth: usize) {
    match node {
        FromNode::Object(children) => finish_from(children, path, leaves, depth),
        FromNode::Array { element, to_array } => {
            let mut below = Vec::new();
            collect_leaves(element, &mut below);
            // The counterpart is the to-path prefix before the (depth+1)-th `[*]`, when all
            // body leaves below agree on it.
            let mut common: Option<Steps> = None;
            let mut agree = true;
            for idx in below {
                let Some(leaf) = leaves.get(idx as usize) else {
                    continue;
                };
                if leaf.location != Location::Body {
                    continue;
                }
                let prefix = prefix_before_each(&leaf.to, depth);
                match (&common, prefix) {
                    (_, None) => agree = false,
                    (None, Some(p)) => common = Some(p),
                    (Some(c), Some(p)) => agree &= *c == p,
                }
            }
            *to_array = if agree { common } else { None };
            let element_path = format!("{path}[*]");
            finish_node(element, &element_path, leaves, depth + 1);
        }
        FromNode::Leaf(_) => {}
    }
}

fn collect_leaves(node: &FromNode, out: &mut Vec<u32>) {
    match node {
        FromNode::Object(children) => children.iter().for_each(|c| collect_leaves(&c.node, out)),
        FromNode::Array { element, .. } => collect_leaves(element, out),
        FromNode::Leaf(i) => out.push(*i),
    }
}

fn prefix_before_each(steps: &Steps, depth: usize) -> Option<Steps> {
    let mut seen = 0;
    for (i, step) in steps.iter().enumerate() {
        if *step == Step::Each {
            if seen == depth {
                return Some(steps[..i].iter().copied().collect());
            }
            seen += 1;
        }
    }
    None
}

/// Adds a path to the to tree and returns its steps. Fails on overlap.
fn insert_to(children: &mut Vec<ToChild>, segments: &[Segment]) -> Result<Steps, ()> {
    let mut steps = Steps::new();
    insert_to_children(children, segments, &mut steps)?;
    Ok(steps)
}

fn insert_to_children(
    children: &mut Vec<ToChild>,
    segments: &[Segment],
    steps: &mut Steps,
) -> Result<(), ()> {
    let Some(Segment::Key(key)) = segments.first() else {
        return Err(());
    };
    let rest = &segments[1..];
    let key_json = key_json(key);
    let pos = match children.iter().position(|c| c.key_json == key_json) {
        Some(p) => {
            // An existing member: the new path must continue into an interior node of the
            // same kind.
            insert_to_node(&mut children[p].node, rest, steps_with(steps, p)?)?;
            return Ok(());
        }
        None => {
            let p = children.len();
            children.push(ToChild {
                key: key.clone(),
                key_json,
                node: fresh_to_node(rest),
            });
            p
        }
    };
    steps.push(Step::Child(u16::try_from(pos).map_err(|_| ())?));
    extend_steps(&mut children[pos].node, rest, steps);
    Ok(())
}

fn steps_with(steps: &mut Steps, pos: usize) -> Result<&mut Steps, ()> {
    steps.push(Step::Child(u16::try_from(pos).map_err(|_| ())?));
    Ok(steps)
}

fn insert_to_node(node: &mut ToNode, rest: &[Segment], steps: &mut Steps) -> Result<(), ()> {
    match (node, rest.first()) {
        (ToNode::Object(children), Some(Segment::Key(_))) => {
            insert_to_children(children, rest, steps)
        }
        (ToNode::Array(element), Some(Segment::Each)) => {
            steps.push(Step::Each);
            if rest.len() == 1 {
                // `a[*]` twice: two leaves writing the same elements.
                return Err(());
            }
            insert_to_node(element, &rest[1..], steps)
        }
        _ => Err(()),
    }
}

fn fresh_to_node(rest: &[Segment]) -> ToNode {
    match rest.first() {
        None => ToNode::Leaf,
        Some(Segment::Key(k)) => ToNode::Object(vec![ToChild {
            key: k.clone(),
            key_json: key_json(k),
            node: fresh_to_node(&rest[1..]),
        }]),
        Some(Segment::Each) => ToNode::Array(Box::new(fresh_to_node(&rest[1..]))),
    }
}

/// Records the steps of a freshly created chain (every object in it has one member).
fn extend_steps(node: &mut ToNode, rest: &[Segment], steps: &mut Steps) {
    match (node, rest.first()) {
        (ToNode::Object(children), Some(Segment::Key(_))) => {
            steps.push(Step::Child(0));
            if let Some(child) = children.first_mut() {
                extend_steps(&mut child.node, &rest[1..], steps);
            }
        }
        (ToNode::Array(element), Some(Segment::Each)) => {
            steps.push(Step::Each);
            extend_steps(element, &rest[1..], steps);
        }
        _ => {}
    }
}

/// `"name":` with JSON escaping (field names are letters, digits and `_-$@`, but non-ASCII
/// letters pass through as UTF-8, which JSON allows).
fn key_json(key: &str) -> Box<str> {
    let mut out = String::with_capacity(key.len() + 3);
    out.push('"');
    for ch in key.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push_str("\":");
    out.into()
}
