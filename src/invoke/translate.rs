//! Executes compiled translations: one walk over a JSON document following the plan's from tree,
//! checking input rules on the way, building the to document, and writing it as JSON.
//!
//! Owns the walk (`Walk`), the output tree (`Out`, borrowed leaves — nothing is cloned) and its
//! serializer, and response translation. Must not build HTTP requests or do IO.
//!
//! Choices a caller can rely on:
//! - a `null` argument counts as absent (a required field set to `null` is missing), except
//!   for a `nillable` field, whose `null` is written;
//! - a missing required field is named by its full exposed path, even when an enclosing object
//!   is what is absent (`{}` for a required `period.from` reports `period.from`);
//! - unknown argument members are ignored by default, or rejected with `UnknownFields::Reject`;
//!   `_schema_discovery` is always ignored here (the request builder handles the only-argument
//!   case);
//! - integers are JSON numbers without fraction or exponent (`1.0` is not an integer);
//! - on responses nothing is checked: members of an unexpected type are skipped, and with
//!   `keep_unmapped_output` only *top-level* unmapped members are kept (nested ones are dropped,
//!   since their place in the exposed document is not defined).

use bytes::{BufMut, BytesMut};
use simd_json::prelude::Writable;
use simd_json::{BorrowedValue as Value, StaticNode};
use smallvec::SmallVec;

use super::error::{ArgumentProblem, InvokeError};
use crate::catalog::plan::{FromChild, FromNode, Step, ToChild, ToNode, Translation};
use crate::config::{FieldType, Location};
use crate::json_text::put_str;

/// The member name that marks a lazily discovered schema.
pub(crate) const SCHEMA_DISCOVERY_FIELD: &str = "_schema_discovery";

/// What happens to argument members no input rule names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UnknownFields {
    /// Dropped silently (default: clients and models often send extras).
    #[default]
    Ignore,
    /// Rejected as an invalid argument naming the member.
    Reject,
}

/// The output document under construction. Objects hold their members by position in the
/// plan's to tree; leaves borrow the value read.
#[derive(Debug)]
pub(crate) enum Out<'v> {
    Empty,
    Obj(Vec<Out<'v>>),
    Arr(Vec<Out<'v>>),
    Val(&'v Value<'v>),
}

fn empty_members<'v>(n: usize) -> Vec<Out<'v>> {
    std::iter::repeat_with(|| Out::Empty).take(n).collect()
}

/// One walk over a document.
pub(crate) struct Walk<'p, 'v> {
    tr: &'p Translation,
    /// Whether input rules (required, types, unknown members) are enforced.
    check: bool,
    unknown: UnknownFields,
    /// The root object of the to document.
    pub(crate) root: Vec<Out<'v>>,
    /// Array positions of the elements being walked, outermost first.
    indices: SmallVec<[usize; 4]>,
    /// Non-body leaves (path, query, header) met, with their values.
    pub(crate) params: SmallVec<[(u32, &'v Value<'v>); 8]>,
}

impl<'p, 'v> Walk<'p, 'v> {
    pub(crate) fn new(tr: &'p Translation, check: bool, unknown: UnknownFields) -> Self {
        Self {
            tr,
            check,
            unknown,
            root: empty_members(tr.to.len()),
            indices: SmallVec::new(),
            params: SmallVec::new(),
        }
    }

    /// Walks the root object.
    pub(crate) fn run(
        &mut self,
        root: &'v simd_json::borrowed::Object<'v>,
    ) -> Result<(), InvokeError> {
        let tr = self.tr;
        self.walk_members(&tr.from, root)?;
        if self.check && self.unknown == UnknownFields::Reject {
            reject_unknown(&tr.from, root, "")?;
        }
        Ok(())
    }

    fn walk_members(
        &mut self,
        members: &'p [FromChild],
        obj: &'v simd_json::borrowed::Object<'v>,
    ) -> Result<(), InvokeError> {
        for member in members {
            match obj.get(&*member.key) {
                // A nillable field's `null` is its value: it is sent (`xsi:nil` to SOAP).
                Some(value @ Value::Static(StaticNode::Null)) if member.nillable => {
                    self.walk_node(&member.node, &member.path, 0, value)?
                }
                None | Some(Value::Static(StaticNode::Null)) => {
                    if self.check && member.required {
                        return Err(InvokeError::argument(
                            missing_path(self.tr, member),
                            ArgumentProblem::Missing,
                        ));
                    }
                }
                Some(value) => self.walk_node(&member.node, &member.path, 0, value)?,
            }
        }
        Ok(())
    }

    /// `path` and `elements` name the node for errors: the member path plus `[*]` per level.
    fn walk_node(
        &mut self,
        node: &'p FromNode,
        path: &str,
        elements: usize,
        value: &'v Value<'v>,
    ) -> Result<(), InvokeError> {
        match node {
            FromNode::Object(members) => match value {
                Value::Object(obj) => {
                    self.walk_members(members, obj)?;
                    if self.check && self.unknown == UnknownFields::Reject {
                        reject_unknown(members, obj, &element_path(path, elements))?;
                    }
                    Ok(())
                }
                _ if self.check => Err(InvokeError::argument(
                    &element_path(path, elements),
                    ArgumentProblem::WrongType {
                        expected: FieldType::Object,
                    },
                )),
                _ => Ok(()),
            },
            FromNode::Array { element, to_array } => match value {
                Value::Array(items) => {
                    if let Some(steps) = to_array {
                        self.size_array(steps, items.len());
                    }
                    for (idx, item) in items.iter().enumerate() {
                        self.indices.push(idx);
                        let r = self.walk_node(element, path, elements + 1, item);
                        self.indices.pop();
                        r?;
                    }
                    Ok(())
                }
                _ if self.check => Err(InvokeError::argument(
                    &element_path(path, elements),
                    ArgumentProblem::WrongType {
                        expected: FieldType::Array,
                    },
                )),
                _ => Ok(()),
            },
            FromNode::Leaf(idx) => {
                let Some(leaf) = self.tr.leaves.get(*idx as usize) else {
                    return Ok(());
                };
                if self.check
                    && !(leaf.nillable && matches!(value, Value::Static(StaticNode::Null)))
                {
                    check_type(leaf.ty, leaf.items, value)
                        .map_err(|problem| InvokeError::argument(&leaf.from_path, problem))?;
                }
                if leaf.location == Location::Body {
                    let tr = self.tr;
                    if let Some(slot) = navigate(&mut self.root, &tr.to, &leaf.to, &self.indices) {
                        *slot = Out::Val(value);
                    }
                } else {
                    self.params.push((*idx, value));
                }
                Ok(())
            }
        }
    }

    /// Makes the to-tree array at `steps` at least `len` long, so empty and sparse elements
    /// keep their positions.
    fn size_array(&mut self, steps: &[Step], len: usize) {
        let tr = self.tr;
        let Some(slot) = navigate(&mut self.root, &tr.to, steps, &self.indices) else {
            return;
        };
        if matches!(slot, Out::Empty) {
            *slot = Out::Arr(Vec::with_capacity(len));
        }
        if let Out::Arr(items) = slot {
            if items.len() < len {
                items.resize_with(len, || Out::Empty);
            }
        }
    }
}

/// The field a missing required member stands for: the first required leaf below it, so that a
/// missing `period` reports `period.from` (the field the caller has to supply). Required flags
/// stop at arrays, so the chain is objects down to a leaf.
fn missing_path<'p>(tr: &'p Translation, member: &'p FromChild) -> &'p str {
    let mut member = member;
    loop {
        match &member.node {
            FromNode::Object(children) => match children.iter().find(|c| c.required) {
                Some(child) => member = child,
                None => return &member.path,
            },
            FromNode::Leaf(idx) => {
                return tr
                    .leaves
                    .get(*idx as usize)
                    .map_or(&*member.path, |l| &*l.from_path)
            }
            FromNode::Array { .. } => return &member.path,
        }
    }
}

fn element_path(path: &str, elements: usize) -> String {
    let mut s = String::with_capacity(path.len() + 3 * elements);
    s.push_str(path);
    for _ in 0..elements {
        s.push_str("[*]");
    }
    s
}

fn reject_unknown(
    members: &[FromChild],
    obj: &simd_json::borrowed::Object<'_>,
    prefix: &str,
) -> Result<(), InvokeError> {
    for key in obj.keys() {
        if prefix.is_empty() && key == SCHEMA_DISCOVERY_FIELD {
            continue;
        }
        if !members.iter().any(|m| *m.key == **key) {
            let field = if prefix.is_empty() {
                key.to_string()
            } else {
                format!("{prefix}.{key}")
            };
            return Err(InvokeError::argument(&field, ArgumentProblem::Unknown));
        }
    }
    Ok(())
}

fn type_ok(ty: FieldType, value: &Value<'_>) -> bool {
    match (ty, value) {
        (FieldType::String, Value::String(_)) => true,
        (FieldType::Object, Value::Object(_)) => true,
        (FieldType::Array, Value::Array(_)) => true,
        (FieldType::Boolean, Value::Static(StaticNode::Bool(_))) => true,
        (FieldType::Integer, Value::Static(StaticNode::I64(_) | StaticNode::U64(_))) => true,
        // "An integer is a number with a zero fractional part" (JSON Schema 2020-12, Validation
        // §6.1.1): `300.0` is one. Clients that carry JSON through protobuf `Value` (the A2A
        // Python SDK) send every number as a double.
        (FieldType::Integer, Value::Static(StaticNode::F64(f))) => integral(*f).is_some(),
        (FieldType::Number, Value::Static(s)) => {
            !matches!(s, StaticNode::Bool(_) | StaticNode::Null)
        }
        _ => false,
    }
}

/// The integer a double stands for, when it has no fractional part and is exactly
/// representable (|f| ≤ 2^53).
pub(crate) fn integral(f: f64) -> Option<i64> {
    const EXACT: f64 = 9_007_199_254_740_992.0;
    // In range, so the cast is exact.
    (f.is_finite() && f.fract() == 0.0 && f.abs() <= EXACT).then_some(f as i64)
}

fn check_type(ty: FieldType, items: FieldType, value: &Value<'_>) -> Result<(), ArgumentProblem> {
    if !type_ok(ty, value) {
        return Err(ArgumentProblem::WrongType { expected: ty });
    }
    if let (FieldType::Array, Value::Array(elements)) = (ty, value) {
        if let Some(index) = elements.iter().position(|e| !type_ok(items, e)) {
            return Err(ArgumentProblem::WrongItemType {
                expected: items,
                index,
            });
        }
    }
    Ok(())
}

/// Follows `steps` from the root, creating objects and arrays on the way; `indices` supplies
/// the array positions in order. `None` only if the plan and the tree disagree (never for a
/// plan from `ToolPlan::compile`).
fn navigate<'a, 'v>(
    root: &'a mut Vec<Out<'v>>,
    to: &[ToChild],
    steps: &[Step],
    indices: &[usize],
) -> Option<&'a mut Out<'v>> {
    let mut steps = steps.iter();
    let mut indices = indices.iter();
    let Some(Step::Child(first)) = steps.next() else {
        return None;
    };
    let mut shape: &ToNode = &to.get(*first as usize)?.node;
    let mut node: &'a mut Out<'v> = root.get_mut(*first as usize)?;
    for step in steps {
        match (*step, shape) {
            (Step::Child(c), ToNode::Object(members)) => {
                if matches!(node, Out::Empty) {
                    *node = Out::Obj(empty_members(members.len()));
                }
                let Out::Obj(outs) = node else { return None };
                node = outs.get_mut(c as usize)?;
                shape = &members.get(c as usize)?.node;
            }
            (Step::Each, ToNode::Array(element)) => {
                let idx = *indices.next()?;
                if matches!(node, Out::Empty) {
                    *node = Out::Arr(Vec::new());
                }
                let Out::Arr(items) = node else { return None };
                if items.len() <= idx {
                    items.resize_with(idx + 1, || Out::Empty);
                }
                node = items.get_mut(idx)?;
                shape = element;
            }
            _ => return None,
        }
    }
    Some(node)
}

// === serialization ===

/// Writes the root object.
pub(crate) fn write_root(buf: &mut BytesMut, root: &[Out<'_>], to: &[ToChild]) {
    write_members(buf, root, to);
}

fn write_members(buf: &mut BytesMut, outs: &[Out<'_>], members: &[ToChild]) {
    buf.put_u8(b'{');
    let mut first = true;
    for (out, member) in outs.iter().zip(members) {
        if matches!(out, Out::Empty) {
            continue;
        }
        if !first {
            buf.put_u8(b',');
        }
        first = false;
        buf.extend_from_slice(member.key_json.as_bytes());
        write_node(buf, out, &member.node);
    }
    buf.put_u8(b'}');
}

fn write_node(buf: &mut BytesMut, out: &Out<'_>, shape: &ToNode) {
    match (out, shape) {
        (Out::Val(value), _) => write_value(buf, value),
        (Out::Obj(outs), ToNode::Object(members)) => write_members(buf, outs, members),
        (Out::Arr(items), ToNode::Array(element)) => {
            buf.put_u8(b'[');
            for (idx, item) in items.iter().enumerate() {
                if idx > 0 {
                    buf.put_u8(b',');
                }
                write_node(buf, item, element);
            }
            buf.put_u8(b']');
        }
        // A hole (an array element nothing was written to) keeps the element's shape.
        (Out::Empty, ToNode::Object(_)) => buf.extend_from_slice(b"{}"),
        (Out::Empty, ToNode::Array(_)) => buf.extend_from_slice(b"[]"),
        _ => buf.extend_from_slice(b"null"),
    }
}

/// Writes one JSON value. Writing into a `BytesMut` cannot fail.
pub(crate) fn write_value(buf: &mut BytesMut, value: &Value<'_>) {
    let mut writer = buf.writer();
    let _ = value.write(&mut writer);
}

/// Translates a parsed downstream response into `buf`.
pub(crate) fn translate_response(
    tr: &Translation,
    keep_unmapped: bool,
    root: &Value<'_>,
    buf: &mut BytesMut,
) -> Result<(), super::error::ResponseProblem> {
    let Value::Object(obj) = root else {
        return Err(super::error::ResponseProblem::NotAnObject);
    };
    let mut walk = Walk::new(tr, false, UnknownFields::Ignore);
    // Checks are off, so the walk cannot fail.
    let _ = walk.run(obj);
    write_root(buf, &walk.root, &tr.to);
    if keep_unmapped {
        let mut wrote_any = buf.len() > 2;
        let mut opened = false;
        for (key, value) in obj.iter() {
            let mapped = tr.from.iter().any(|m| *m.key == **key);
            let taken = tr.to.iter().any(|m| key_matches(&m.key_json, key));
            if mapped || taken {
                continue;
            }
            if !opened {
                // Reopen the object written above.
                buf.truncate(buf.len() - 1);
                opened = true;
            }
            if wrote_any {
                buf.put_u8(b',');
            }
            wrote_any = true;
            put_str(buf, key);
            buf.put_u8(b':');
            write_value(buf, value);
        }
        if opened {
            buf.put_u8(b'}');
        }
    }
    Ok(())
}

/// Whether `"name":` names `key`.
fn key_matches(key_json: &str, key: &str) -> bool {
    key_json.len() == key.len() + 3 && key_json.get(1..1 + key.len()) == Some(key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::plan::ToolPlan;
    use crate::config::{Downstream, FieldRule, RestDownstream, Tool};

    fn rule(source: &str, exposed: &str, ty: FieldType, required: bool) -> FieldRule {
        FieldRule {
            required,
            ..FieldRule::plain(source, exposed, ty, Location::Body)
        }
    }

    fn plan(inputs: Vec<FieldRule>) -> ToolPlan {
        let tool = Tool {
            name: "t".into(),
            description: String::new(),
            published: true,
            schema_mode: Default::default(),
            log_payloads: false,
            scope: None,
            keep_unmapped_output: false,
            max_result_bytes: None,
            on_oversize: None,
            downstream: Downstream::Rest(RestDownstream {
                method: "POST".into(),
                url: "http://h/x".into(),
                headers: Default::default(),
                timeout_ms: None,
            }),
            inputs,
            outputs: vec![],
        };
        ToolPlan::compile(&tool).unwrap()
    }

    /// Translates `input` through the plan's input rules; `Err` is the error's safe message.
    fn check(plan: &ToolPlan, input: &str, expected: Result<&str, &str>) {
        let mut bytes = input.as_bytes().to_vec();
        let value = simd_json::to_borrowed_value(&mut bytes).unwrap();
        let Value::Object(obj) = &value else {
            panic!("not an object")
        };
        let mut walk = Walk::new(&plan.input, true, UnknownFields::Reject);
        let got = walk.run(obj).map(|()| {
            let mut buf = BytesMut::new();
            write_root(&mut buf, &walk.root, &plan.input.to);
            String::from_utf8(buf.to_vec()).unwrap()
        });
        match (got, expected) {
            (Ok(g), Ok(e)) => assert_eq!(g, e, "{input}"),
            (Err(g), Err(e)) => assert_eq!(g.safe_message(), e, "{input}"),
            (g, e) => panic!("{input}: got {g:?}, expected {e:?}"),
        }
    }

    use FieldType::{Array as A, Integer as I, Number as N, Object as O, String as S};

    #[test]
    fn renames_through_nested_arrays() {
        let p = plan(vec![
            rule("client.name", "customer.name", S, true),
            rule(
                "client.addresses[*].town",
                "customer.addresses[*].city",
                S,
                true,
            ),
            rule(
                "client.addresses[*].zip",
                "customer.addresses[*].postcode",
                S,
                false,
            ),
            rule("grid[*][*]", "matrix[*][*]", I, false),
            rule("orders[*].lines[*].sku", "o[*].l[*].s", S, false),
        ]);
        check(
            &p,
            r#"{"customer":{"name":"Ann"}}"#,
            Ok(r#"{"client":{"name":"Ann"}}"#),
        );
        check(
            &p,
            r#"{"customer":{"name":"A","addresses":[{"city":"X","postcode":"1"},{"city":"Y"}]}}"#,
            Ok(r#"{"client":{"name":"A","addresses":[{"town":"X","zip":"1"},{"town":"Y"}]}}"#),
        );
        check(
            &p,
            r#"{"customer":{"name":"A","addresses":[]}}"#,
            Ok(r#"{"client":{"name":"A","addresses":[]}}"#),
        );
        check(
            &p,
            r#"{"customer":{"name":"A"},"matrix":[[1,2],[],[3]]}"#,
            Ok(r#"{"client":{"name":"A"},"grid":[[1,2],[],[3]]}"#),
        );
        check(
            &p,
            r#"{"customer":{"name":"A"},"o":[{"l":[{"s":"a"},{"s":"b"}]},{"l":[]},{}]}"#,
            Ok(
                r#"{"client":{"name":"A"},"orders":[{"lines":[{"sku":"a"},{"sku":"b"}]},{"lines":[]},{}]}"#,
            ),
        );
        check(
            &p,
            r#"{"customer":{"name":"A"},"_schema_discovery":true}"#,
            Ok(r#"{"client":{"name":"A"}}"#),
        );
    }

    #[test]
    fn rejects_bad_arguments() {
        let p = plan(vec![
            rule("client.name", "customer.name", S, true),
            rule(
                "client.addresses[*].town",
                "customer.addresses[*].city",
                S,
                true,
            ),
            rule("n", "count", I, false),
            rule("x", "ratio", N, false),
            rule("ids", "ids", A, false),
            rule("meta", "meta", O, false),
        ]);
        check(
            &p,
            r#"{}"#,
            Err("Invalid argument 'customer.name': required field is missing."),
        );
        check(
            &p,
            r#"{"customer":null}"#,
            Err("Invalid argument 'customer.name': required field is missing."),
        );
        check(
            &p,
            r#"{"customer":{}}"#,
            Err("Invalid argument 'customer.name': required field is missing."),
        );
        check(
            &p,
            r#"{"customer":{"name":1}}"#,
            Err("Invalid argument 'customer.name': expected a string."),
        );
        check(
            &p,
            r#"{"customer":[]}"#,
            Err("Invalid argument 'customer': expected an object."),
        );
        check(
            &p,
            r#"{"customer":{"name":"a","addresses":{}}}"#,
            Err("Invalid argument 'customer.addresses': expected an array."),
        );
        check(
            &p,
            r#"{"customer":{"name":"a","addresses":[1]}}"#,
            Err("Invalid argument 'customer.addresses[*]': expected an object."),
        );
        check(
            &p,
            r#"{"customer":{"name":"a","addresses":[{"city":"x"},{}]}}"#,
            Err("Invalid argument 'customer.addresses[*].city': required field is missing."),
        );
        check(
            &p,
            r#"{"customer":{"name":"a"},"count":1.5}"#,
            Err("Invalid argument 'count': expected an integer."),
        );
        check(
            &p,
            r#"{"customer":{"name":"a"},"count":"1"}"#,
            Err("Invalid argument 'count': expected an integer."),
        );
        // A number with a zero fractional part is an integer (JSON Schema 2020-12 §6.1.1).
        check(
            &p,
            r#"{"customer":{"name":"a"},"count":300.0}"#,
            Ok(r#"{"client":{"name":"a"},"n":300.0}"#),
        );
        check(
            &p,
            r#"{"customer":{"name":"a"},"count":1e300}"#,
            Err("Invalid argument 'count': expected an integer."),
        );
        check(
            &p,
            r#"{"customer":{"name":"a"},"count":-3,"ratio":2}"#,
            Ok(r#"{"client":{"name":"a"},"n":-3,"x":2}"#),
        );
        check(
            &p,
            r#"{"customer":{"name":"a"},"ratio":true}"#,
            Err("Invalid argument 'ratio': expected a number."),
        );
        check(
            &p,
            r#"{"customer":{"name":"a"},"ids":["a",2]}"#,
            Err("Invalid argument 'ids': element 1 must be a string."),
        );
        check(
            &p,
            r#"{"customer":{"name":"a"},"meta":{"k":[1,{"z":null}]}}"#,
            Ok(r#"{"client":{"name":"a"},"meta":{"k":[1,{"z":null}]}}"#),
        );
        check(
            &p,
            r#"{"customer":{"name":"a"},"extra":1}"#,
            Err("Invalid argument 'extra': unknown field."),
        );
        check(
            &p,
            r#"{"customer":{"name":"a","nick":"b"}}"#,
            Err("Invalid argument 'customer.nick': unknown field."),
        );
    }

    #[test]
    fn responses_keep_top_level_unmapped_members_on_request() {
        let p = plan(vec![
            rule("client.town", "customer.city", S, false),
            rule("id", "ref", S, false),
        ]);
        let run = |input: &str, keep: bool| {
            let mut bytes = input.as_bytes().to_vec();
            let value = simd_json::to_borrowed_value(&mut bytes).unwrap();
            let mut buf = BytesMut::new();
            translate_response(&p.input, keep, &value, &mut buf)
                .map(|()| String::from_utf8(buf.to_vec()).unwrap())
        };
        // The input translation doubles as an output one here: from exposed to source names.
        assert_eq!(
            run(
                r#"{"customer":{"city":"X","zip":1},"ref":"r","other":[1]}"#,
                false
            )
            .unwrap(),
            r#"{"client":{"town":"X"},"id":"r"}"#
        );
        assert_eq!(
            run(r#"{"customer":{"city":"X"},"ref":"r","other":[1]}"#, true).unwrap(),
            r#"{"client":{"town":"X"},"id":"r","other":[1]}"#
        );
        assert_eq!(
            run(r#"{"other":"a\"b","id":"clash"}"#, true).unwrap(),
            r#"{"other":"a\"b"}"#
        );
        assert_eq!(run(r#"{"customer":"wrong type"}"#, false).unwrap(), r#"{}"#);
        assert!(run(r#"[1]"#, false).is_err());
    }
}
