//! Writing a SOAP request: the translated arguments as the operation's children, inside the
//! envelope the plan wrote ahead of time, straight into one buffer.
//!
//! Owns the element writer: the translation's *to* tree (the walk's output, `invoke/translate.rs`)
//! read beside the plan's [`XmlChild`] names, attributes inside the start tag, the `#text`
//! member, child elements in rule order (the importer writes rules in schema order), arrays as
//! repeated elements, `null` as `xsi:nil="true"`, absent members as nothing, numbers in XSD
//! lexical form (no exponent), text escaped. Must not send anything or know HTTP.

use std::fmt::Write as _;

use bytes::{BufMut, BytesMut};
use simd_json::{BorrowedValue as Value, StaticNode};

use crate::catalog::plan::{
    check_ncname, escape, is_xml_text, HeadPart, SoapPlan, XmlChild, XmlKind, XmlNode,
};
use crate::invoke::error::{ArgumentProblem, InvokeError};
use crate::invoke::translate::{integral, Out};

/// Deepest nesting an `object`-typed argument is written to (deeper is refused).
const MAX_GENERIC_DEPTH: usize = 64;

/// Writes the whole envelope: the plan's head (with `correlation` in its slots), the
/// operation's children from the walk's `root`, the plan's tail.
pub(crate) fn write_envelope(
    buf: &mut BytesMut,
    soap: &SoapPlan,
    root: &[Out<'_>],
    correlation: &[u8],
) -> Result<(), InvokeError> {
    let secrets = if soap.secrets.is_empty() {
        &[][..]
    } else {
        secret_values(soap)?
    };
    for part in &soap.head {
        match part {
            HeadPart::Literal(text) => buf.put_slice(text.as_bytes()),
            HeadPart::CorrelationId => {
                // A header value is visible ASCII: only markup characters need escaping.
                let text = std::str::from_utf8(correlation).unwrap_or("");
                escape(buf, text, false);
            }
            HeadPart::Secret(i) => {
                let value = secrets.get(usize::from(*i)).map_or("", |v| &**v);
                escape(buf, value, false);
            }
        }
    }
    write_content(buf, root, &soap.input)?;
    buf.put_slice(soap.tail.as_bytes());
    Ok(())
}

/// The text and element members of an element whose start tag is already closed.
fn write_content(
    buf: &mut BytesMut,
    members: &[Out<'_>],
    names: &[XmlChild],
) -> Result<(), InvokeError> {
    for (out, child) in members.iter().zip(names) {
        if child.kind == XmlKind::Text {
            if let Out::Val(value) = out {
                scalar_text(buf, value)?;
            }
        }
    }
    for (out, child) in members.iter().zip(names) {
        if child.kind != XmlKind::Element {
            continue;
        }
        match (out, &child.node) {
            (Out::Empty, _) => {}
            // Repeated: one element per position (an empty position keeps its place).
            (Out::Arr(items), XmlNode::Array(each)) => {
                for item in items {
                    write_element(buf, &child.written, item, each, true)?;
                }
            }
            (out, node) => write_element(buf, &child.written, out, node, false)?,
        }
    }
    Ok(())
}

/// The plan's header secrets, read from their environment variables or files at the first call
/// and kept with the plan (a reload compiles a new plan, so a rotated secret is read again). A
/// secret that cannot be read, or holds a character XML cannot carry, fails the call as a
/// request that cannot be built; `sluice check` reports it first.
pub(crate) fn secret_values(soap: &SoapPlan) -> Result<&[Box<str>], InvokeError> {
    let values = soap.secret_values.0.get_or_init(|| {
        soap.secrets
            .iter()
            .map(|secret| match crate::config::resolve_secret(secret) {
                Ok(value) if is_xml_text(&value) => Ok(value.into_boxed_str()),
                Ok(_) => Err("a SOAP header secret holds a character XML cannot carry".to_owned()),
                Err(err) => Err(format!("a SOAP header secret: {err}")),
            })
            .collect()
    });
    match values {
        Ok(values) => Ok(values),
        Err(err) => Err(InvokeError::Request(err.clone().into())),
    }
}

/// One element named `name` holding `out`.
fn write_element(
    buf: &mut BytesMut,
    name: &str,
    out: &Out<'_>,
    node: &XmlNode,
    in_array: bool,
) -> Result<(), InvokeError> {
    match (out, node) {
        (Out::Obj(members), XmlNode::Object(children)) => {
            buf.put_u8(b'<');
            buf.put_slice(name.as_bytes());
            for (out, child) in members.iter().zip(children) {
                if let (XmlKind::Attribute, Out::Val(value)) = (child.kind, out) {
                    if matches!(value, Value::Static(StaticNode::Null)) {
                        continue;
                    }
                    buf.put_u8(b' ');
                    buf.put_slice(child.written.as_bytes());
                    buf.put_slice(b"=\"");
                    scalar_attribute(buf, value)?;
                    buf.put_u8(b'"');
                }
            }
            let has_content = members
                .iter()
                .zip(children)
                .any(|(out, child)| child.kind != XmlKind::Attribute && !matches!(out, Out::Empty));
            if !has_content {
                buf.put_slice(b"/>");
                return Ok(());
            }
            buf.put_u8(b'>');
            write_content(buf, members, children)?;
            close(buf, name);
            Ok(())
        }
        (Out::Val(value), _) => write_value(buf, name, value, 0),
        // A position of an array no mapped member filled: an empty element keeps the count.
        (Out::Empty, _) if in_array => {
            empty(buf, name);
            Ok(())
        }
        _ => Ok(()),
    }
}

/// A value as the element `name`: a scalar's text, `xsi:nil` for `null`, an array as repeated
/// elements, an object (an `object`-typed field) as elements and `@` attributes.
fn write_value(
    buf: &mut BytesMut,
    name: &str,
    value: &Value<'_>,
    depth: usize,
) -> Result<(), InvokeError> {
    if depth > MAX_GENERIC_DEPTH {
        return Err(not_xml());
    }
    match value {
        Value::Static(StaticNode::Null) => {
            buf.put_u8(b'<');
            buf.put_slice(name.as_bytes());
            buf.put_slice(b" xsi:nil=\"true\"/>");
        }
        Value::Array(items) => {
            for item in items.iter() {
                write_value(buf, name, item, depth + 1)?;
            }
        }
        Value::Object(members) => {
            buf.put_u8(b'<');
            buf.put_slice(name.as_bytes());
            for (key, value) in members.iter() {
                if let Some(attr) = key.strip_prefix('@') {
                    check_name(attr)?;
                    buf.put_u8(b' ');
                    buf.put_slice(attr.as_bytes());
                    buf.put_slice(b"=\"");
                    scalar_attribute(buf, value)?;
                    buf.put_u8(b'"');
                }
            }
            buf.put_u8(b'>');
            if let Some(text) = members.get("#text") {
                scalar_text(buf, text)?;
            }
            for (key, value) in members.iter() {
                if key.starts_with(['@', '#']) {
                    continue;
                }
                check_name(key)?;
                write_value(buf, key, value, depth + 1)?;
            }
            close(buf, name);
        }
        scalar => {
            buf.put_u8(b'<');
            buf.put_slice(name.as_bytes());
            buf.put_u8(b'>');
            scalar_text(buf, scalar)?;
            close(buf, name);
        }
    }
    Ok(())
}

fn close(buf: &mut BytesMut, name: &str) {
    buf.put_slice(b"</");
    buf.put_slice(name.as_bytes());
    buf.put_u8(b'>');
}

fn empty(buf: &mut BytesMut, name: &str) {
    buf.put_u8(b'<');
    buf.put_slice(name.as_bytes());
    buf.put_slice(b"/>");
}

/// A member name of an `object` argument must be an XML name (with an optional prefix).
fn check_name(name: &str) -> Result<(), InvokeError> {
    let local = name.split_once(':').map_or(name, |(_, l)| l);
    check_ncname(local).map_err(|_| not_xml())
}

fn not_xml() -> InvokeError {
    InvokeError::argument("", ArgumentProblem::NotXml)
}

fn scalar_text(buf: &mut BytesMut, value: &Value<'_>) -> Result<(), InvokeError> {
    scalar(buf, value, false)
}

fn scalar_attribute(buf: &mut BytesMut, value: &Value<'_>) -> Result<(), InvokeError> {
    scalar(buf, value, true)
}

/// A scalar in XSD lexical form: strings escaped, `true`/`false`, integers as digits, other
/// numbers in decimal notation (`1e300` has no exponent in `xsd:decimal`).
fn scalar(buf: &mut BytesMut, value: &Value<'_>, attribute: bool) -> Result<(), InvokeError> {
    match value {
        Value::String(text) => {
            if !is_xml_text(text) {
                return Err(not_xml());
            }
            escape(buf, text, attribute);
        }
        Value::Static(StaticNode::Bool(b)) => buf.put_slice(if *b { b"true" } else { b"false" }),
        Value::Static(StaticNode::I64(n)) => {
            let _ = write!(buf, "{n}");
        }
        Value::Static(StaticNode::U64(n)) => {
            let _ = write!(buf, "{n}");
        }
        Value::Static(StaticNode::F64(f)) => match integral(*f) {
            Some(n) => {
                let _ = write!(buf, "{n}");
            }
            // Rust's `Display` for floats is the shortest round-tripping decimal, never an
            // exponent; JSON has no NaN or infinity.
            None => {
                let _ = write!(buf, "{f}");
            }
        },
        Value::Static(StaticNode::Null) => {}
        Value::Array(_) | Value::Object(_) => return Err(not_xml()),
    }
    Ok(())
}
