//! Reading a SOAP answer: the envelope stream-parsed with a namespace-aware reader into the
//! source JSON the output translation reads, guided by the output rules' paths.
//!
//! Owns the answer reader: either envelope namespace, the `Fault` check (`fault.rs` gives it
//! meaning), elements matched by namespace and local name (an unqualified element matches by
//! local name: services differ on `elementFormDefault`), repeated elements as arrays even with
//! one element, typed numbers and booleans, `xsi:nil` as `null`, attributes as `@name` and text
//! beside them as `#text`, `object`-typed fields and fault details read generically.
//!
//! Parser safety: a document type declaration is refused (no DTD, so no entity can be defined
//! or expanded and nothing external is fetched); references other than the five predefined
//! entities and character references are refused; nesting is bounded; the body is already
//! bounded by the downstream answer limit. Must not do IO or translate to the exposed shape
//! (`invoke/translate.rs` does, exactly as for REST).

use std::borrow::Cow;

use bytes::{BufMut, BytesMut};
use quick_xml::events::{BytesStart, Event};
use quick_xml::name::ResolveResult;
use quick_xml::NsReader;

use super::fault::{Fault, FaultParts};
use crate::catalog::plan::{
    FromChild, FromNode, Leaf, SoapPlan, Translation, XmlChild, XmlKind, XmlNode, SOAP11_ENV,
    SOAP12_ENV, XSI,
};
use crate::config::FieldType;
use crate::json_text::put_str;

/// What an answer held.
#[derive(Debug)]
pub(crate) enum Answer {
    /// The result, as the source JSON object the output translation reads.
    Result(BytesMut),
    /// A SOAP fault.
    Fault(Fault),
}

/// Why an answer could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ReadError {
    /// Not well-formed XML (or an undeclared namespace prefix).
    #[error("the answer is not well-formed XML")]
    NotXml,
    /// Well-formed, but not a SOAP envelope with a body.
    #[error("the answer is not a SOAP envelope")]
    NotSoap,
    /// A construct the reader refuses for safety.
    #[error("the answer holds {0}, which is refused")]
    Refused(&'static str),
    /// Nested deeper than the limit.
    #[error("the answer nests deeper than {0} elements")]
    TooDeep(usize),
}

/// Reads `xml` as the answer of `soap`'s operation; `output` is the tool's output translation
/// (`None`: the result is `{}` once the answer is known not to be a fault).
pub(crate) fn read_answer(
    xml: &[u8],
    soap: &SoapPlan,
    output: Option<&Translation>,
    max_depth: usize,
) -> Result<Answer, ReadError> {
    let leaves = output.map_or(&[][..], |tr| &tr.leaves[..]);
    let mut rd = Reader::new(xml, max_depth, leaves, 2 * xml.len() + 16);
    rd.enter_body()?;
    let (children, from) = match output {
        Some(tr) if !soap.wrapped => (&soap.output[..], &tr.from[..]),
        _ => (&[][..], &[][..]),
    };
    // The body's first element: a fault, the result element, or (document style) a part.
    let first = loop {
        match rd.next(children)? {
            Ev::Start {
                start,
                envelope: true,
                ..
            } if start.local_name().as_ref() == b"Fault" => {
                let parts = rd.generic(&start)?;
                return Ok(Answer::Fault(Fault::from_parts(
                    &FaultParts::from(&parts),
                    soap,
                )));
            }
            ev @ Ev::Start { .. } => break Some(ev),
            Ev::Text(t) if t.trim().is_empty() => {}
            Ev::Text(_) | Ev::Char(_) => return Err(ReadError::NotSoap),
            Ev::End => break None,
            Ev::Eof => return Err(ReadError::NotXml),
        }
    };
    let Some(tr) = output else {
        return Ok(Answer::Result(BytesMut::from(&b"{}"[..])));
    };
    match (soap.wrapped, first) {
        // The result element's members.
        (true, Some(Ev::Start { start, .. })) => {
            rd.members(Some(&start), &soap.output, &tr.from, None)?;
        }
        // The body is the result: its first part is already read.
        (false, first) => rd.members(None, children, from, first)?,
        (true, _) => rd.out.put_slice(b"{}"),
    }
    Ok(Answer::Result(rd.out))
}

/// One event, classified.
enum Ev<'i> {
    /// A start tag: which of the expected children it is, and whether it is in an envelope
    /// namespace.
    Start {
        start: BytesStart<'i>,
        child: Option<usize>,
        envelope: bool,
    },
    End,
    Text(Cow<'i, str>),
    Char(char),
    Eof,
}

/// The parse state of one answer.
struct Reader<'i, 'p> {
    r: NsReader<&'i [u8]>,
    depth: usize,
    max_depth: usize,
    leaves: &'p [Leaf],
    out: BytesMut,
    /// Where [`Reader::next`] starts looking among the expected children.
    hint: usize,
}

impl<'i, 'p> Reader<'i, 'p> {
    fn new(xml: &'i [u8], max_depth: usize, leaves: &'p [Leaf], capacity: usize) -> Self {
        let mut r = NsReader::from_reader(xml);
        let config = r.config_mut();
        config.expand_empty_elements = true;
        config.check_end_names = true;
        config.check_comments = false;
        Self {
            r,
            depth: 0,
            max_depth,
            leaves,
            out: BytesMut::with_capacity(capacity),
            hint: 0,
        }
    }

    /// The next event; a start tag is matched against `children`.
    fn next(&mut self, children: &[XmlChild]) -> Result<Ev<'i>, ReadError> {
        loop {
            let event = self.r.read_event().map_err(|_| ReadError::NotXml)?;
            match event {
                Event::Start(start) => {
                    let local = start.local_name();
                    let local = local.as_ref();
                    // Namespaces are resolved only for a name that could match: a child the
                    // caller expects, or an envelope element.
                    // Sequences come in order: the member after the last one met is tried first.
                    let n = children.len();
                    let child = (0..n)
                        .map(|k| (self.hint + k) % n)
                        .find(|&i| {
                            let c = &children[i];
                            c.kind == XmlKind::Element && *c.name.local.as_bytes() == *local
                        })
                        .filter(|&i| {
                            let (res, _) = self.r.resolve_element(start.name());
                            match &res {
                                ResolveResult::Bound(ns) => {
                                    matches(&children[i], Some(ns.as_ref()), local)
                                }
                                ResolveResult::Unbound => true,
                                ResolveResult::Unknown(_) => false,
                            }
                        });
                    let envelope = matches!(local, b"Envelope" | b"Header" | b"Body" | b"Fault")
                        && {
                            let (res, _) = self.r.resolve_element(start.name());
                            matches!(&res, ResolveResult::Bound(ns)
                            if ns.as_ref() == SOAP11_ENV.as_bytes() || ns.as_ref() == SOAP12_ENV.as_bytes())
                        };
                    self.depth += 1;
                    if self.depth > self.max_depth {
                        return Err(ReadError::TooDeep(self.max_depth));
                    }
                    return Ok(Ev::Start {
                        start,
                        child,
                        envelope,
                    });
                }
                Event::End(_) => {
                    self.depth = self.depth.saturating_sub(1);
                    return Ok(Ev::End);
                }
                Event::Text(text) => {
                    return text
                        .decode()
                        .map(|t| Ev::Text(normalize_eols(t)))
                        .map_err(|_| ReadError::NotXml)
                }
                Event::CData(data) => {
                    return data
                        .decode()
                        .map(|t| Ev::Text(normalize_eols(t)))
                        .map_err(|_| ReadError::NotXml)
                }
                Event::GeneralRef(reference) => {
                    if let Some(ch) = reference
                        .resolve_char_ref()
                        .map_err(|_| ReadError::NotXml)?
                    {
                        return Ok(Ev::Char(ch));
                    }
                    return match &*reference {
                        b"lt" => Ok(Ev::Char('<')),
                        b"gt" => Ok(Ev::Char('>')),
                        b"amp" => Ok(Ev::Char('&')),
                        b"quot" => Ok(Ev::Char('"')),
                        b"apos" => Ok(Ev::Char('\'')),
                        _ => Err(ReadError::Refused("an entity reference")),
                    };
                }
                Event::DocType(_) => {
                    return Err(ReadError::Refused("a document type declaration (DTD)"))
                }
                Event::Decl(_) | Event::PI(_) | Event::Comment(_) => {}
                // `expand_empty_elements` turns `<a/>` into a start and an end.
                Event::Empty(_) => return Err(ReadError::NotXml),
                Event::Eof => return Ok(Ev::Eof),
            }
        }
    }

    /// Reads past the prolog, the `Envelope` start tag, an optional `Header` and the `Body`
    /// start tag.
    fn enter_body(&mut self) -> Result<(), ReadError> {
        let mut in_envelope = false;
        loop {
            match self.next(&[])? {
                Ev::Start {
                    start,
                    envelope: true,
                    ..
                } => match (in_envelope, start.local_name().as_ref()) {
                    (false, b"Envelope") => in_envelope = true,
                    (true, b"Header") => self.skip()?,
                    (true, b"Body") => return Ok(()),
                    _ => return Err(ReadError::NotSoap),
                },
                Ev::Start { .. } => return Err(ReadError::NotSoap),
                Ev::Text(t) if t.trim().is_empty() => {}
                Ev::Text(_) | Ev::Char(_) | Ev::End => return Err(ReadError::NotSoap),
                Ev::Eof => {
                    return Err(if in_envelope {
                        ReadError::NotXml
                    } else {
                        ReadError::NotSoap
                    })
                }
            }
        }
    }

    /// Reads to the end of the element whose start tag was just read.
    fn skip(&mut self) -> Result<(), ReadError> {
        let mut open = 1usize;
        while open > 0 {
            match self.next(&[])? {
                Ev::Start { .. } => open += 1,
                Ev::End => open -= 1,
                Ev::Eof => return Err(ReadError::NotXml),
                Ev::Text(_) | Ev::Char(_) => {}
            }
        }
        Ok(())
    }

    /// Writes the object an element (or the body) holds: its mapped attributes (`start`), its
    /// mapped children and its `#text`, to the end of the element. `pending` is a child start
    /// tag already read.
    fn members(
        &mut self,
        start: Option<&BytesStart<'i>>,
        children: &[XmlChild],
        from: &[FromChild],
        mut pending: Option<Ev<'i>>,
    ) -> Result<(), ReadError> {
        self.out.put_u8(b'{');
        let mut first = true;
        if let Some(start) = start {
            self.attributes(start, children, from, &mut first)?;
        }
        let text_member = children.iter().position(|c| c.kind == XmlKind::Text);
        let mut text = String::new();
        // The member whose array is open (repeated elements in a row).
        let mut open: Option<usize> = None;
        // The member expected next: the one after the last met, or the same for a repeat.
        let mut last_member = 0usize;
        loop {
            let ev = match pending.take() {
                Some(ev) => ev,
                None => {
                    self.hint = last_member;
                    self.next(children)?
                }
            };
            match ev {
                Ev::Start {
                    start,
                    child: Some(i),
                    ..
                } => {
                    let (Some(xml), Some(member)) = (children.get(i), from.get(i)) else {
                        self.skip()?;
                        continue;
                    };
                    last_member = if matches!(xml.node, XmlNode::Array(_)) {
                        i
                    } else {
                        i + 1
                    };
                    match &xml.node {
                        XmlNode::Array(each) => {
                            if open == Some(i) {
                                self.out.put_u8(b',');
                            } else {
                                self.close_array(&mut open);
                                self.key(&mut first, &member.key);
                                self.out.put_u8(b'[');
                                open = Some(i);
                            }
                            let (node, item) = match &member.node {
                                FromNode::Array { element, .. } => (&**element, false),
                                leaf => (leaf, true),
                            };
                            self.value(&start, each, node, item)?;
                        }
                        node => {
                            self.close_array(&mut open);
                            self.key(&mut first, &member.key);
                            self.value(&start, node, &member.node, false)?;
                        }
                    }
                }
                Ev::Start { .. } => self.skip()?,
                Ev::Text(t) if text_member.is_some() => text.push_str(&t),
                Ev::Char(c) if text_member.is_some() => text.push(c),
                Ev::Text(_) | Ev::Char(_) => {}
                Ev::End => break,
                Ev::Eof => return Err(ReadError::NotXml),
            }
        }
        self.close_array(&mut open);
        if let Some(i) = text_member {
            if let (false, Some(member)) = (text.trim().is_empty(), from.get(i)) {
                self.key(&mut first, &member.key);
                let ty = self.leaf_type(&member.node, false);
                self.typed(ty, &text);
            }
        }
        self.out.put_u8(b'}');
        Ok(())
    }

    /// The mapped attributes of `start`.
    fn attributes(
        &mut self,
        start: &BytesStart<'i>,
        children: &[XmlChild],
        from: &[FromChild],
        first: &mut bool,
    ) -> Result<(), ReadError> {
        if !children.iter().any(|c| c.kind == XmlKind::Attribute) {
            return Ok(());
        }
        for attr in start.attributes() {
            let attr = attr.map_err(|_| ReadError::NotXml)?;
            let (res, local) = self.r.resolve_attribute(attr.key);
            let ns = match &res {
                ResolveResult::Bound(ns) => Some(ns.as_ref()),
                _ => None,
            };
            let found = children
                .iter()
                .position(|c| c.kind == XmlKind::Attribute && matches(c, ns, local.as_ref()));
            let Some(i) = found else { continue };
            let Some(member) = from.get(i) else { continue };
            let value = attr
                .unescape_value()
                .map_err(|_| ReadError::Refused("an entity reference"))?;
            self.key(first, &member.key);
            let ty = self.leaf_type(&member.node, false);
            self.typed(ty, &value);
        }
        Ok(())
    }

    /// A mapped element's value: `null` for `xsi:nil`, an object, or a typed leaf.
    fn value(
        &mut self,
        start: &BytesStart<'i>,
        xml: &XmlNode,
        from: &FromNode,
        item: bool,
    ) -> Result<(), ReadError> {
        if self.is_nil(start) {
            self.out.put_slice(b"null");
            return self.skip();
        }
        match (xml, from) {
            (XmlNode::Object(children), FromNode::Object(members)) => {
                self.members(Some(start), children, members, None)
            }
            (_, FromNode::Leaf(_)) => match self.leaf_type(from, item) {
                FieldType::Object | FieldType::Array => {
                    let node = self.generic(start)?;
                    node.write_json(&mut self.out);
                    Ok(())
                }
                ty => {
                    let text = self.text()?;
                    self.typed(ty, &text);
                    Ok(())
                }
            },
            // Shapes the plan does not produce (nested arrays are refused there).
            _ => {
                self.out.put_slice(b"null");
                self.skip()
            }
        }
    }

    /// The type of a leaf's value (of each element for an `array` leaf read element by element).
    fn leaf_type(&self, node: &FromNode, item: bool) -> FieldType {
        match node {
            FromNode::Leaf(idx) => match self.leaves.get(*idx as usize) {
                Some(leaf) if item || leaf.ty == FieldType::Array => leaf.items,
                Some(leaf) => leaf.ty,
                None => FieldType::String,
            },
            _ => FieldType::Object,
        }
    }

    fn is_nil(&self, start: &BytesStart<'i>) -> bool {
        // Most elements have no attributes at all: no parse for them.
        if memchr::memmem::find(start.attributes_raw(), b"nil").is_none() {
            return false;
        }
        start.attributes().flatten().any(|attr| {
            let (res, local) = self.r.resolve_attribute(attr.key);
            matches!(&res, ResolveResult::Bound(ns) if ns.as_ref() == XSI.as_bytes())
                && local.as_ref() == b"nil"
                && matches!(&*attr.value, b"true" | b"1")
        })
    }

    /// The text content of the element just opened, to its end (child elements skipped).
    fn text(&mut self) -> Result<Cow<'i, str>, ReadError> {
        // One text event (the usual case) stays borrowed from the answer.
        let mut text = Cow::Borrowed("");
        loop {
            match self.next(&[])? {
                Ev::Text(t) if text.is_empty() => text = t,
                Ev::Text(t) => text.to_mut().push_str(&t),
                Ev::Char(c) => text.to_mut().push(c),
                Ev::Start { .. } => self.skip()?,
                Ev::End => return Ok(text),
                Ev::Eof => return Err(ReadError::NotXml),
            }
        }
    }

    /// Reads the element just opened into a [`Generic`] tree.
    fn generic(&mut self, start: &BytesStart<'i>) -> Result<Generic, ReadError> {
        let mut node = Generic {
            ns: None,
            local: String::from_utf8_lossy(start.local_name().as_ref()).into_owned(),
            nil: self.is_nil(start),
            ..Generic::default()
        };
        let (res, _) = self.r.resolve_element(start.name());
        if let ResolveResult::Bound(ns) = res {
            node.ns = Some(String::from_utf8_lossy(ns.as_ref()).into_owned());
        }
        for attr in start.attributes() {
            let attr = attr.map_err(|_| ReadError::NotXml)?;
            let key = attr.key.as_ref();
            if key.starts_with(b"xmlns") {
                continue;
            }
            let (res, local) = self.r.resolve_attribute(attr.key);
            if matches!(&res, ResolveResult::Bound(ns) if ns.as_ref() == XSI.as_bytes()) {
                continue;
            }
            let value = attr
                .unescape_value()
                .map_err(|_| ReadError::Refused("an entity reference"))?;
            node.attributes.push((
                String::from_utf8_lossy(local.as_ref()).into_owned(),
                value.into_owned(),
            ));
        }
        loop {
            match self.next(&[])? {
                Ev::Start { start, .. } => {
                    let child = self.generic(&start)?;
                    node.children.push(child);
                }
                Ev::Text(t) => node.text.push_str(&t),
                Ev::Char(c) => node.text.push(c),
                Ev::End => return Ok(node),
                Ev::Eof => return Err(ReadError::NotXml),
            }
        }
    }

    fn key(&mut self, first: &mut bool, key: &str) {
        if !*first {
            self.out.put_u8(b',');
        }
        *first = false;
        put_str(&mut self.out, key);
        self.out.put_u8(b':');
    }

    fn close_array(&mut self, open: &mut Option<usize>) {
        if open.take().is_some() {
            self.out.put_u8(b']');
        }
    }

    fn typed(&mut self, ty: FieldType, text: &str) {
        write_typed(&mut self.out, ty, text);
    }
}

/// Whether an element or attribute named `local` in `ns` is `child`: same local name, and the
/// same namespace or none.
fn matches(child: &XmlChild, ns: Option<&[u8]>, local: &[u8]) -> bool {
    child.name.local.as_bytes() == local
        && match (&child.name.ns, ns) {
            (_, None) => true,
            (Some(want), Some(got)) => want.as_bytes() == got,
            (None, Some(_)) => false,
        }
}

/// A leaf's text as JSON of its type: integers and numbers typed when their lexical form is a
/// number (`+5`, `007`, `1.` and `.5` are normalized), booleans from `true`/`1`/`false`/`0`;
/// anything else is kept as a string rather than lost.
pub(crate) fn write_typed(out: &mut BytesMut, ty: FieldType, text: &str) {
    let trimmed = text.trim();
    match ty {
        FieldType::Integer | FieldType::Number => {
            if let Some(number) = json_number(trimmed, ty == FieldType::Integer) {
                out.put_slice(number.as_bytes());
            } else {
                put_str(out, text);
            }
        }
        FieldType::Boolean => match trimmed {
            "true" | "1" => out.put_slice(b"true"),
            "false" | "0" => out.put_slice(b"false"),
            _ => put_str(out, text),
        },
        _ => put_str(out, text),
    }
}

/// An XSD numeric lexical form as a JSON number, if it is one.
fn json_number(text: &str, integer: bool) -> Option<Cow<'_, str>> {
    let digits = text.strip_prefix('+').unwrap_or(text);
    let body = digits.strip_prefix('-').unwrap_or(digits);
    if body.is_empty() {
        return None;
    }
    if body.bytes().all(|b| b.is_ascii_digit()) {
        let trimmed = body.trim_start_matches('0');
        let trimmed = if trimmed.is_empty() { "0" } else { trimmed };
        let negative = digits.starts_with('-') && trimmed != "0";
        return Some(if trimmed.len() == body.len() && !text.starts_with('+') {
            Cow::Borrowed(text)
        } else if negative {
            Cow::Owned(format!("-{trimmed}"))
        } else {
            Cow::Owned(trimmed.to_owned())
        });
    }
    if integer {
        return None;
    }
    // A short decimal already in JSON's grammar (`12.50`, `-0.5`, `1e5`) is copied as it is:
    // short enough that every parser reads it as a finite double.
    if text.len() <= 24 && is_json_number(text) {
        return Some(Cow::Borrowed(text));
    }
    // Other decimals and doubles: anything Rust reads as a finite float, written back as JSON.
    let ok = body
        .bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'));
    let value: f64 = digits.parse().ok().filter(|_| ok)?;
    value.is_finite().then(|| Cow::Owned(value.to_string()))
}

/// Whether `text` is a JSON number: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`.
fn is_json_number(text: &str) -> bool {
    let b = text.as_bytes();
    let mut i = usize::from(b.first() == Some(&b'-'));
    let digits = |i: &mut usize| {
        let start = *i;
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i - start
    };
    let int_start = i;
    let n = digits(&mut i);
    if n == 0 || (n > 1 && b[int_start] == b'0') {
        return false;
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// Text content with XML's end-of-line normalization (CR LF and lone CR read as LF), borrowed
/// when there is no CR.
fn normalize_eols(text: Cow<'_, str>) -> Cow<'_, str> {
    if !text.contains('\r') {
        return text;
    }
    Cow::Owned(text.replace("\r\n", "\n").replace('\r', "\n"))
}

/// An element read without a schema (an `object` field, a fault detail).
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Generic {
    pub(crate) ns: Option<String>,
    pub(crate) local: String,
    pub(crate) nil: bool,
    pub(crate) attributes: Vec<(String, String)>,
    pub(crate) text: String,
    pub(crate) children: Vec<Generic>,
}

impl Generic {
    /// As JSON: `null` when nil, its text when it has neither attributes nor children, else an
    /// object of `@attributes`, children by local name (repeated names as arrays, in first-seen
    /// order) and a non-blank `#text`.
    pub(crate) fn write_json(&self, out: &mut BytesMut) {
        if self.nil {
            out.put_slice(b"null");
            return;
        }
        if self.attributes.is_empty() && self.children.is_empty() {
            put_str(out, &self.text);
            return;
        }
        out.put_u8(b'{');
        let mut first = true;
        let mut sep = |out: &mut BytesMut| {
            if !std::mem::take(&mut first) {
                out.put_u8(b',');
            }
        };
        for (name, value) in &self.attributes {
            sep(out);
            put_str(out, &format!("@{name}"));
            out.put_u8(b':');
            put_str(out, value);
        }
        for (i, child) in self.children.iter().enumerate() {
            if self.children[..i].iter().any(|c| c.local == child.local) {
                continue;
            }
            sep(out);
            put_str(out, &child.local);
            out.put_u8(b':');
            let count = self
                .children
                .iter()
                .filter(|c| c.local == child.local)
                .count();
            if count == 1 {
                child.write_json(out);
            } else {
                out.put_u8(b'[');
                let same = self.children.iter().filter(|c| c.local == child.local);
                for (n, c) in same.enumerate() {
                    if n > 0 {
                        out.put_u8(b',');
                    }
                    c.write_json(out);
                }
                out.put_u8(b']');
            }
        }
        if !self.text.trim().is_empty() {
            sep(out);
            out.put_slice(b"\"#text\":");
            put_str(out, &self.text);
        }
        out.put_u8(b'}');
    }

    /// The first child named `local`.
    pub(crate) fn child(&self, local: &str) -> Option<&Generic> {
        self.children.iter().find(|c| c.local == local)
    }
}
