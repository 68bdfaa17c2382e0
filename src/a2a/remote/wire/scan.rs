//! A validating scan of JSON text that allocates nothing: what lets the relay read each
//! upstream event's envelope and peek at its ids and state with no heap work per event (the
//! issue 17 relay target; `benches/a2a_relay.rs` counts it).
//!
//! [`Json::parse`] checks a whole text against RFC 8259 once (UTF-8, string escapes and control
//! characters, number grammar, literals, bracket matching, nesting bounded by [`MAX_DEPTH`]) by
//! recursive descent, so the nesting lives on the stack, never in a buffer (serde_json's
//! skipping of a nested value grows a scratch `Vec` once per parse, which is the allocation this
//! replaces). Values found inside a checked text are walked without checking again. Object
//! member names are compared as written (a name spelled with escapes does not match).
//!
//! Owns only the scan; must not know A2A or JSON-RPC (`wire.rs` gives the members meaning).

use std::borrow::Cow;
use std::ops::Range;

/// Nesting beyond this is refused (serde_json's default recursion limit).
pub(crate) const MAX_DEPTH: usize = 128;

/// Why a text is not one JSON value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NotJson;

/// One JSON value's text, known to be valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Json<'a>(&'a str);

impl<'a> Json<'a> {
    /// `text` as one JSON value (whitespace around it allowed, nothing else).
    pub(crate) fn parse(text: &'a [u8]) -> Result<Json<'a>, NotJson> {
        let text = std::str::from_utf8(text).map_err(|_| NotJson)?;
        let bytes = text.as_bytes();
        let start = skip_ws(bytes, 0);
        let end = check_value(bytes, start, 0)?;
        if skip_ws(bytes, end) != bytes.len() {
            return Err(NotJson);
        }
        Ok(Json(&text[start..end]))
    }

    /// `text` as one JSON object (whitespace around it allowed), checked as [`Json::parse`]
    /// checks, each member handed to `member` as it is checked (one pass, where [`Json::parse`]
    /// then [`Json::members`] would walk the text twice).
    pub(crate) fn parse_object(
        text: &'a [u8],
        mut member: impl FnMut(&'a str, Json<'a>),
    ) -> Result<Json<'a>, NotJson> {
        let text = std::str::from_utf8(text).map_err(|_| NotJson)?;
        let bytes = text.as_bytes();
        let start = skip_ws(bytes, 0);
        if bytes.get(start) != Some(&b'{') {
            return Err(NotJson);
        }
        let mut report = |name: Range<usize>, value: Range<usize>| {
            if let (Some(name), Some(value)) = (text.get(name), text.get(value)) {
                member(name, Json(value));
            }
        };
        let end = check_container(bytes, start, 0, b'}', true, Some(&mut report))?;
        if skip_ws(bytes, end) != bytes.len() {
            return Err(NotJson);
        }
        Ok(Json(&text[start..end]))
    }

    /// `text` that a [`Json::parse`] gave (whole, or a value found in one): not checked again.
    /// Any other text is walked without panicking, but what the walk finds is meaningless.
    pub(crate) fn checked(text: &'a str) -> Json<'a> {
        Json(text.trim_matches([' ', '\t', '\n', '\r']))
    }

    /// The value's text, as written.
    pub(crate) fn text(self) -> &'a str {
        self.0
    }

    /// The members of an object in order (none for any other value).
    pub(crate) fn members(self) -> Members<'a> {
        let bytes = self.0.as_bytes();
        Members {
            text: self.0,
            at: if bytes.first() == Some(&b'{') {
                1
            } else {
                bytes.len()
            },
        }
    }

    /// The first member called `name` of an object.
    pub(crate) fn get(self, name: &str) -> Option<Json<'a>> {
        self.members()
            .find(|(member, _)| *member == name)
            .map(|(_, value)| value)
    }

    /// The string's value: borrowed from the text unless it holds escapes. `None` for any other
    /// value.
    pub(crate) fn as_str(self) -> Option<Cow<'a, str>> {
        let inner = self.0.strip_prefix('"')?.strip_suffix('"')?;
        if !inner.contains('\\') {
            return Some(Cow::Borrowed(inner));
        }
        serde_json::from_str::<String>(self.0).ok().map(Cow::Owned)
    }

    /// Whether the value is `null`.
    pub(crate) fn is_null(self) -> bool {
        self.0 == "null"
    }

    /// Whether the value is an object.
    pub(crate) fn is_object(self) -> bool {
        self.0.starts_with('{')
    }
}

/// The members of a checked object: `(name as written, value)`.
#[derive(Debug, Clone)]
pub(crate) struct Members<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Iterator for Members<'a> {
    type Item = (&'a str, Json<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        let bytes = self.text.as_bytes();
        let at = skip_ws(bytes, self.at);
        let at = match bytes.get(at) {
            Some(b',') => skip_ws(bytes, at + 1),
            Some(b'"') => at,
            _ => {
                self.at = bytes.len();
                return None;
            }
        };
        let name_end = skip_checked(bytes, at);
        let value_start = skip_ws(bytes, skip_ws(bytes, name_end) + 1);
        let value_end = skip_checked(bytes, value_start);
        self.at = value_end;
        Some((
            self.text.get(at + 1..name_end.saturating_sub(1))?,
            Json(self.text.get(value_start..value_end)?),
        ))
    }
}

fn skip_ws(bytes: &[u8], mut at: usize) -> usize {
    while matches!(bytes.get(at), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        at += 1;
    }
    at
}

/// Checks the value starting at `at`; returns where it ends.
fn check_value(bytes: &[u8], at: usize, depth: usize) -> Result<usize, NotJson> {
    match bytes.get(at).ok_or(NotJson)? {
        b'{' => check_container(bytes, at, depth, b'}', true, None),
        b'[' => check_container(bytes, at, depth, b']', false, None),
        b'"' => check_string(bytes, at),
        b't' => literal(bytes, at, b"true"),
        b'f' => literal(bytes, at, b"false"),
        b'n' => literal(bytes, at, b"null"),
        b'-' | b'0'..=b'9' => check_number(bytes, at),
        _ => Err(NotJson),
    }
}

/// Where a member's name (without its quotes) and value lie in the text.
type Report<'r> = Option<&'r mut dyn FnMut(Range<usize>, Range<usize>)>;

/// Checks an object (`object`) or array; `report` hears of each member of an object.
fn check_container(
    bytes: &[u8],
    at: usize,
    depth: usize,
    close: u8,
    object: bool,
    mut report: Report<'_>,
) -> Result<usize, NotJson> {
    if depth >= MAX_DEPTH {
        return Err(NotJson);
    }
    let mut at = skip_ws(bytes, at + 1);
    if bytes.get(at) == Some(&close) {
        return Ok(at + 1);
    }
    loop {
        let mut name = 0..0;
        if object {
            if bytes.get(at) != Some(&b'"') {
                return Err(NotJson);
            }
            let end = check_string(bytes, at)?;
            name = at + 1..end - 1;
            at = skip_ws(bytes, end);
            if bytes.get(at) != Some(&b':') {
                return Err(NotJson);
            }
            at = skip_ws(bytes, at + 1);
        }
        let end = check_value(bytes, at, depth + 1)?;
        if let Some(report) = report.as_mut() {
            report(name, at..end);
        }
        at = skip_ws(bytes, end);
        match bytes.get(at) {
            Some(b',') => at = skip_ws(bytes, at + 1),
            Some(&byte) if byte == close => return Ok(at + 1),
            _ => return Err(NotJson),
        }
    }
}

fn check_string(bytes: &[u8], at: usize) -> Result<usize, NotJson> {
    let mut at = at + 1;
    loop {
        let rest = bytes.get(at..).ok_or(NotJson)?;
        let run = memchr::memchr2(b'"', b'\\', rest).ok_or(NotJson)?;
        if rest[..run].iter().any(|&byte| byte < 0x20) {
            return Err(NotJson);
        }
        at += run;
        if bytes.get(at) == Some(&b'"') {
            return Ok(at + 1);
        }
        at += 1;
        match *bytes.get(at).ok_or(NotJson)? {
            b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => at += 1,
            b'u' => {
                let hex = bytes.get(at + 1..at + 5).ok_or(NotJson)?;
                if !hex.iter().all(u8::is_ascii_hexdigit) {
                    return Err(NotJson);
                }
                at += 5;
            }
            _ => return Err(NotJson),
        }
    }
}

fn literal(bytes: &[u8], at: usize, word: &[u8]) -> Result<usize, NotJson> {
    match bytes.get(at..at + word.len()) {
        Some(found) if found == word => Ok(at + word.len()),
        _ => Err(NotJson),
    }
}

fn check_number(bytes: &[u8], mut at: usize) -> Result<usize, NotJson> {
    let digits = |bytes: &[u8], from: usize| {
        let mut at = from;
        while bytes.get(at).is_some_and(u8::is_ascii_digit) {
            at += 1;
        }
        at
    };
    if bytes.get(at) == Some(&b'-') {
        at += 1;
    }
    match bytes.get(at) {
        Some(b'0') => at += 1,
        Some(b'1'..=b'9') => at = digits(bytes, at),
        _ => return Err(NotJson),
    }
    if bytes.get(at) == Some(&b'.') {
        let end = digits(bytes, at + 1);
        if end == at + 1 {
            return Err(NotJson);
        }
        at = end;
    }
    if matches!(bytes.get(at), Some(b'e' | b'E')) {
        at += 1;
        if matches!(bytes.get(at), Some(b'+' | b'-')) {
            at += 1;
        }
        let end = digits(bytes, at);
        if end == at {
            return Err(NotJson);
        }
        at = end;
    }
    Ok(at)
}

/// Where the value starting at `at` of a checked text ends (nothing is checked again).
fn skip_checked(bytes: &[u8], at: usize) -> usize {
    match bytes.get(at) {
        Some(b'"') => skip_string(bytes, at),
        Some(b'{' | b'[') => {
            let mut depth = 0usize;
            let mut at = at;
            while at < bytes.len() {
                match bytes[at] {
                    b'"' => {
                        at = skip_string(bytes, at);
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth = depth.saturating_sub(1);
                        if depth == 0 {
                            return at + 1;
                        }
                    }
                    _ => {}
                }
                at += 1;
            }
            bytes.len()
        }
        _ => {
            let rest = bytes.get(at..).unwrap_or_default();
            at + rest
                .iter()
                .position(|byte| {
                    matches!(
                        byte,
                        b',' | b':' | b']' | b'}' | b' ' | b'\t' | b'\n' | b'\r'
                    )
                })
                .unwrap_or(rest.len())
        }
    }
}

/// Where the checked string starting at `at` ends.
fn skip_string(bytes: &[u8], at: usize) -> usize {
    let mut at = at + 1;
    while let Some(run) = bytes
        .get(at..)
        .and_then(|rest| memchr::memchr2(b'"', b'\\', rest))
    {
        at += run;
        if bytes.get(at) == Some(&b'"') {
            return at + 1;
        }
        at += 2;
    }
    bytes.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_json_is_accepted_and_walked() {
        let text = br#" {"a":1,"b" : [true, {"c":"x\"y"}], "d":-1.5e+3,"e":null,"f":"\u00e9"} "#;
        let json = Json::parse(text).expect("valid");
        assert!(json.text().starts_with('{') && json.text().ends_with('}'));
        let members: Vec<(&str, &str)> = json.members().map(|(k, v)| (k, v.text())).collect();
        assert_eq!(
            members,
            [
                ("a", "1"),
                ("b", r#"[true, {"c":"x\"y"}]"#),
                ("d", "-1.5e+3"),
                ("e", "null"),
                ("f", r#""\u00e9""#),
            ]
        );
        assert!(json.get("e").is_some_and(Json::is_null));
        assert_eq!(json.get("f").and_then(Json::as_str).as_deref(), Some("é"));
        assert!(matches!(
            Json::parse(br#""plain""#).ok().and_then(Json::as_str),
            Some(Cow::Borrowed("plain"))
        ));
        assert_eq!(json.get("zz"), None);
        let mut seen = Vec::new();
        let object = Json::parse_object(text, |name, value| seen.push((name, value.text())))
            .expect("an object");
        assert_eq!(object, json);
        assert_eq!(seen, members, "one pass reports what the walk finds");
        assert_eq!(Json::parse_object(b"[1]", |_, _| {}), Err(NotJson));
        assert_eq!(Json::parse_object(br#"{"a":1} x"#, |_, _| {}), Err(NotJson));
        assert_eq!(Json::parse(b"[1,2]").expect("array").members().count(), 0);
        for scalar in [
            &b"0"[..],
            b"-0.5",
            b"1E9",
            b"true",
            b"false",
            b"null",
            b"\"\"",
            b"{}",
            b"[]",
        ] {
            assert!(
                Json::parse(scalar).is_ok(),
                "{}",
                String::from_utf8_lossy(scalar)
            );
        }
    }

    #[test]
    fn invalid_json_is_refused() {
        for bad in [
            &b""[..],
            b"{",
            b"{\"a\":1,}",
            b"[1,]",
            b"{\"a\" 1}",
            b"{1:2}",
            b"[1 2]",
            b"{\"a\":1]",
            b"\"abc",
            b"\"a\x01b\"",
            b"\"\\x\"",
            b"\"\\u12g4\"",
            b"01",
            b"1.",
            b"-",
            b"1e",
            b"tru",
            b"nul",
            b"{} {}",
            b"\xff",
            b"[\"\xc3\"]",
        ] {
            assert_eq!(
                Json::parse(bad),
                Err(NotJson),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
        let deep = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
        assert_eq!(Json::parse(deep.as_bytes()), Err(NotJson));
        let ok = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
        assert!(Json::parse(ok.as_bytes()).is_ok());
    }

    /// The scan accepts exactly what serde_json accepts, on every prefix of real documents.
    #[test]
    fn the_scan_agrees_with_serde_json() {
        let docs = [
            r#"{"jsonrpc":"2.0","id":"sl-1","result":{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING","message":{"parts":[{"text":"a\nb"}]}}}}}"#,
            r#"[1, -2.5e-3, true, false, null, "x\\y\u0041", {"a": [[], {}]}]"#,
        ];
        for doc in docs {
            for end in 0..=doc.len() {
                let Some(prefix) = doc.get(..end) else {
                    continue;
                };
                let ours = Json::parse(prefix.as_bytes()).is_ok();
                let serde = serde_json::from_str::<serde::de::IgnoredAny>(prefix).is_ok();
                assert_eq!(ours, serde, "{prefix}");
            }
        }
    }

    proptest::proptest! {
        /// Texts from JSON's own alphabet (plus a control character and bytes that are not
        /// UTF-8): the scan accepts exactly the UTF-8 texts serde_json accepts (serde_json skips
        /// an ignored string without checking its UTF-8; a `&RawValue` or `&str` it borrows is
        /// checked, as the scan checks all), and every member it finds in an object is JSON.
        #[test]
        fn the_scan_agrees_with_serde_json_on_any_text(
            text in proptest::collection::vec(proptest::sample::select(
                &b"{}[],:\"\\ \n0123-+.eEtrufalsn\x01\xc3\xa9\xffabu"[..]), 0..40)
        ) {
            let ours = Json::parse(&text).is_ok();
            let serde = std::str::from_utf8(&text).is_ok()
                && serde_json::from_slice::<serde::de::IgnoredAny>(&text).is_ok();
            proptest::prop_assert_eq!(ours, serde, "{:?}", String::from_utf8_lossy(&text));
            let mut found = Vec::new();
            if Json::parse_object(&text, |name, value| found.push((name, value))).is_ok() {
                for (_, value) in found {
                    proptest::prop_assert!(
                        serde_json::from_str::<serde::de::IgnoredAny>(value.text()).is_ok()
                    );
                }
            }
        }
    }
}
