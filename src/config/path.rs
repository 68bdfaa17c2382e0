//! Field paths: dotted segments with `[*]` array positions, as written in field rules.
//!
//! `customer.addresses[*].city` is `Key("customer")`, `Key("addresses")`, `Each`, `Key("city")`.
//! The source paths of a SOAP tool are XML paths ([`FieldPath::parse_xml`]): `/` separates
//! element names, which may carry a namespace prefix and dots (`o:Order/Lines/Line[*]/o.Sku`);
//! `@id` names an attribute and `#text` the text content of an element that also has
//! attributes.
//! Owns parsing and the structural comparison used by validation ("do the source and exposed
//! paths have the same array structure?"). Must not know about JSON values or schemas.

use std::fmt;

use smallvec::SmallVec;

/// One step of a path.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Segment {
    /// An object member.
    Key(Box<str>),
    /// Every element of an array (`[*]`).
    Each,
}

/// A parsed field path.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FieldPath {
    segments: SmallVec<[Segment; 4]>,
}

/// Why a path string is not a valid field path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// The path is empty.
    #[error("path is empty")]
    Empty,
    /// A segment between dots is empty (`a..b`, `.a`, `a.`).
    #[error("empty segment at byte {0}")]
    EmptySegment(usize),
    /// A `[` that does not open exactly `[*]`.
    #[error("only `[*]` array positions are supported (byte {0})")]
    BadIndex(usize),
    /// The path starts with an array position; paths start at an object member.
    #[error("path must start with a field name")]
    LeadingArray,
    /// A character outside the allowed set.
    #[error("invalid character {1:?} at byte {0}")]
    BadChar(usize, char),
}

impl FieldPath {
    /// Parses `a.b[*].c`. Names may contain `[A-Za-z0-9_-$@]` and any non-ASCII letter.
    pub fn parse(text: &str) -> Result<Self, PathError> {
        Self::parse_in(text, b'.', |ch| {
            ch.is_alphanumeric() || matches!(ch, '_' | '-' | '$' | '@')
        })
    }

    /// Parses an XML path `a/p:b[*]/@c`: names may also contain `.` and `:` (a prefix), and a
    /// segment may be `#text`. Which names are well-formed QNames is the SOAP plan's check.
    pub(crate) fn parse_xml(text: &str) -> Result<Self, PathError> {
        Self::parse_in(text, b'/', |ch| {
            ch.is_alphanumeric() || matches!(ch, '_' | '-' | '@' | '.' | ':' | '#')
        })
    }

    fn parse_in(text: &str, sep: u8, allowed: impl Fn(char) -> bool) -> Result<Self, PathError> {
        if text.is_empty() {
            return Err(PathError::Empty);
        }
        let mut segments = SmallVec::new();
        let bytes = text.as_bytes();
        let mut i = 0;
        let mut name_start = 0;
        // `expect_name` is true right after a dot or at the start: a name must follow.
        let mut expect_name = true;
        while i < bytes.len() {
            match bytes[i] {
                b if b == sep => {
                    if expect_name && name_start == i {
                        return Err(PathError::EmptySegment(i));
                    }
                    if name_start < i {
                        segments.push(Segment::Key(text[name_start..i].into()));
                    }
                    i += 1;
                    name_start = i;
                    expect_name = true;
                }
                b'[' => {
                    if name_start < i {
                        segments.push(Segment::Key(text[name_start..i].into()));
                    } else if segments.is_empty() {
                        return Err(PathError::LeadingArray);
                    } else if expect_name && !matches!(segments.last(), Some(Segment::Each)) {
                        return Err(PathError::EmptySegment(i));
                    }
                    if bytes.get(i + 1) != Some(&b'*') || bytes.get(i + 2) != Some(&b']') {
                        return Err(PathError::BadIndex(i));
                    }
                    segments.push(Segment::Each);
                    i += 3;
                    name_start = i;
                    expect_name = false;
                    if i < bytes.len() && bytes[i] != sep && bytes[i] != b'[' {
                        return Err(PathError::BadIndex(i));
                    }
                }
                _ => {
                    let ch = text[i..].chars().next().unwrap_or('\u{fffd}');
                    if !allowed(ch) {
                        return Err(PathError::BadChar(i, ch));
                    }
                    expect_name = false;
                    i += ch.len_utf8();
                }
            }
        }
        if name_start < bytes.len() {
            segments.push(Segment::Key(text[name_start..].into()));
        } else if expect_name {
            return Err(PathError::EmptySegment(bytes.len()));
        }
        Ok(Self { segments })
    }

    /// The segments in order.
    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }

    /// How many `[*]` positions the path has.
    pub(crate) fn depth(&self) -> usize {
        self.segments
            .iter()
            .filter(|s| matches!(s, Segment::Each))
            .count()
    }

    /// Whether the path ends in `[*]` (an array leaf whose items are scalars).
    pub(crate) fn is_array_leaf(&self) -> bool {
        matches!(self.segments.last(), Some(Segment::Each))
    }

    /// The array "shape" of the path: for each `[*]`, how many keys precede it since the
    /// previous one is irrelevant; what matters is the count and whether the path ends in one.
    /// Two paths line up when they have the same number of `[*]` and agree on ending in one.
    pub(crate) fn lines_up_with(&self, other: &FieldPath) -> bool {
        self.depth() == other.depth() && self.is_array_leaf() == other.is_array_leaf()
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for seg in &self.segments {
            match seg {
                Segment::Key(k) => {
                    if !first {
                        f.write_str(".")?;
                    }
                    f.write_str(k)?;
                }
                Segment::Each => f.write_str("[*]")?,
            }
            first = false;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(input: &str, expected: Result<&str, PathError>) {
        let got = FieldPath::parse(input).map(|p| p.to_string());
        assert_eq!(got.as_deref().map_err(Clone::clone), expected, "{input}");
    }

    #[test]
    fn parses_and_prints() {
        check("a", Ok("a"));
        check(
            "customer.addresses[*].city",
            Ok("customer.addresses[*].city"),
        );
        check("tags[*]", Ok("tags[*]"));
        check("m[*][*]", Ok("m[*][*]"));
        check("a[*].b[*].c", Ok("a[*].b[*].c"));
        check("naïve_field", Ok("naïve_field"));
    }

    #[test]
    fn rejects_malformed() {
        check("", Err(PathError::Empty));
        check(".a", Err(PathError::EmptySegment(0)));
        check("a..b", Err(PathError::EmptySegment(2)));
        check("a.", Err(PathError::EmptySegment(2)));
        check("[*]", Err(PathError::LeadingArray));
        check("a[0]", Err(PathError::BadIndex(1)));
        check("a[*]b", Err(PathError::BadIndex(4)));
        check("a b", Err(PathError::BadChar(1, ' ')));
    }

    #[test]
    fn xml_paths_split_on_slashes() {
        let keys = |s: &str| {
            FieldPath::parse_xml(s).map(|p| {
                p.segments()
                    .iter()
                    .map(|s| match s {
                        Segment::Key(k) => k.to_string(),
                        Segment::Each => "[*]".into(),
                    })
                    .collect::<Vec<_>>()
            })
        };
        assert_eq!(
            keys("o:Order/Lines/Line[*]/@id").unwrap(),
            ["o:Order", "Lines", "Line", "[*]", "@id"]
        );
        assert_eq!(keys("Amount/#text").unwrap(), ["Amount", "#text"]);
        assert_eq!(keys("a.b/c").unwrap(), ["a.b", "c"]);
        assert_eq!(keys("a//b"), Err(PathError::EmptySegment(2)));
        assert_eq!(keys("a b"), Err(PathError::BadChar(1, ' ')));
        // A dotted JSON path is one XML name, and a slash is not a JSON path character.
        assert_eq!(FieldPath::parse("a/b"), Err(PathError::BadChar(1, '/')));
    }

    #[test]
    fn structure_comparison() {
        let p = |s| FieldPath::parse(s).unwrap();
        assert!(p("customer.addresses[*].city").lines_up_with(&p("client.addresses[*].town")));
        assert!(!p("a[*].b").lines_up_with(&p("a.b")));
        assert!(!p("a[*]").lines_up_with(&p("a[*].b")));
        assert_eq!(p("a[*].b[*].c").depth(), 2);
    }
}
