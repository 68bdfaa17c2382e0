//! Media-type negotiation: which of `application/json` and `text/event-stream` a request's
//! `Accept` header(s) allow, which one the client prefers, and whether a `Content-Type` is JSON.
//!
//! Works on raw header bytes (no UTF-8 or allocation needed) and never fails: a malformed media
//! range is skipped, as if the client had not sent it. Must not know what the bodies mean.
//!
//! Rules (RFC 9110 §12.5.1 and §8.3.1):
//! - Media ranges are separated by commas, within one header or across several `Accept` headers.
//! - Type, subtype and parameter names compare case-insensitively.
//! - The most specific matching range decides a type's quality: `type/sub;param` over `type/sub`
//!   over `type/*` over `*/*`. Among equally specific ranges the highest `q` wins.
//! - `q=0` means "not acceptable". A `q` that is not a valid qvalue skips its whole range.
//! - No `Accept` header at all means every media type is acceptable.

use http::header::{HeaderMap, ACCEPT};

/// The two media types an MCP endpoint can answer with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MediaKind {
    /// `application/json`.
    Json,
    /// `text/event-stream`.
    EventStream,
}

/// The quality with which one media type is accepted, and how specific the range that said so was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Match {
    /// 0 = no range matched; 1 = `*/*`; 2 = `type/*`; 3 = `type/sub`; 4 = `type/sub;params`.
    specificity: u8,
    /// Thousandths: 1000 = `q=1`.
    q: u16,
}

impl Match {
    fn offer(&mut self, specificity: u8, q: u16) {
        if specificity > self.specificity || (specificity == self.specificity && q > self.q) {
            *self = Match { specificity, q };
        }
    }
}

/// What a request's `Accept` headers say about JSON and SSE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Accept {
    present: bool,
    json: Match,
    sse: Match,
}

impl Accept {
    /// Reads every `Accept` header of a request.
    pub(crate) fn from_headers(headers: &HeaderMap) -> Self {
        Self::parse(headers.get_all(ACCEPT).iter().map(|value| value.as_bytes()))
    }

    /// Parses a list of `Accept` header values (one per header line).
    ///
    /// A single value that is one of the few strings MCP clients actually send (see
    /// [`COMMON_VALUES`]) is answered from a table; anything else goes through the general parser.
    pub(crate) fn parse<'a>(values: impl IntoIterator<Item = &'a [u8]>) -> Self {
        let mut values = values.into_iter();
        let Some(first) = values.next() else {
            return Self::parse_general(None);
        };
        let Some(second) = values.next() else {
            return match common_value(first) {
                Some(accept) => accept,
                None => Self::parse_general(Some(first)),
            };
        };
        Self::parse_general([first, second].into_iter().chain(values))
    }

    /// The general RFC 9110 parser (no table lookup).
    fn parse_general<'a>(values: impl IntoIterator<Item = &'a [u8]>) -> Self {
        let mut accept = Accept {
            present: false,
            json: Match::default(),
            sse: Match::default(),
        };
        for value in values {
            accept.present = true;
            for range in split_unquoted(value, b',') {
                accept.add_range(range);
            }
        }
        accept
    }

    fn add_range(&mut self, range: &[u8]) {
        let mut parts = split_unquoted(range, b';');
        let media = trim(parts.next().unwrap_or_default());
        if media.is_empty() {
            return;
        }
        let Some(slash) = memchr::memchr(b'/', media) else {
            return;
        };
        let (ty, sub) = (trim(&media[..slash]), trim(&media[slash + 1..]));
        if ty.is_empty() || sub.is_empty() || (ty == b"*" && sub != b"*") {
            return;
        }
        let mut has_params = false;
        let mut q = 1000;
        for param in parts {
            let param = trim(param);
            if param.is_empty() {
                continue;
            }
            let (name, value) = match memchr::memchr(b'=', param) {
                Some(eq) => (trim(&param[..eq]), trim(&param[eq + 1..])),
                None => (param, &b""[..]),
            };
            if name.eq_ignore_ascii_case(b"q") {
                match parse_qvalue(value) {
                    Some(parsed) => q = parsed,
                    None => return,
                }
                // Everything after `q` is an accept-extension, not a media type parameter.
                break;
            }
            has_params = true;
        }
        let specificity_for = |want_ty: &[u8], want_sub: &[u8]| -> u8 {
            if ty == b"*" {
                1
            } else if !ty.eq_ignore_ascii_case(want_ty) {
                0
            } else if sub == b"*" {
                2
            } else if !sub.eq_ignore_ascii_case(want_sub) {
                0
            } else if has_params {
                4
            } else {
                3
            }
        };
        let json = specificity_for(b"application", b"json");
        if json > 0 {
            self.json.offer(json, q);
        }
        let sse = specificity_for(b"text", b"event-stream");
        if sse > 0 {
            self.sse.offer(sse, q);
        }
    }

    /// Whether the request carried any `Accept` header.
    pub(crate) fn is_present(&self) -> bool {
        self.present
    }

    /// The quality (thousandths) given to `application/json`; 0 = not acceptable.
    pub(crate) fn json_q(&self) -> u16 {
        if self.present {
            self.json.q
        } else {
            1000
        }
    }

    /// The quality (thousandths) given to `text/event-stream`; 0 = not acceptable.
    pub(crate) fn sse_q(&self) -> u16 {
        if self.present {
            self.sse.q
        } else {
            1000
        }
    }

    /// Whether `application/json` is acceptable.
    pub(crate) fn accepts_json(&self) -> bool {
        self.json_q() > 0
    }

    /// Whether `text/event-stream` is acceptable.
    pub(crate) fn accepts_sse(&self) -> bool {
        self.sse_q() > 0
    }

    /// The acceptable type with the strictly higher quality; `None` on a tie or when neither is
    /// acceptable (the caller then applies its own preference).
    pub(crate) fn preferred(&self) -> Option<MediaKind> {
        let (json, sse) = (self.json_q(), self.sse_q());
        if json > sse {
            Some(MediaKind::Json)
        } else if sse > json {
            Some(MediaKind::EventStream)
        } else {
            None
        }
    }
}

/// The full-quality match of an exact `type/subtype` range.
const EXACT: Match = Match {
    specificity: 3,
    q: 1000,
};
/// No range matched.
const NONE: Match = Match {
    specificity: 0,
    q: 0,
};

/// `Accept` values common enough to deserve a table entry, with what the general parser makes
/// of them (a unit test checks each against it). Compared case-insensitively, whole value only.
const COMMON_VALUES: [(&[u8], Match, Match); 8] = [
    (b"application/json, text/event-stream", EXACT, EXACT),
    (b"application/json,text/event-stream", EXACT, EXACT),
    (b"text/event-stream, application/json", EXACT, EXACT),
    (b"text/event-stream,application/json", EXACT, EXACT),
    (b"text/event-stream", NONE, EXACT),
    (b"application/json", EXACT, NONE),
    (
        b"application/json;q=0.5, text/event-stream",
        Match {
            specificity: 3,
            q: 500,
        },
        EXACT,
    ),
    (
        b"application/json; q=0.5, text/event-stream",
        Match {
            specificity: 3,
            q: 500,
        },
        EXACT,
    ),
];

/// The table answer for a single `Accept` value, if it is one of [`COMMON_VALUES`].
fn common_value(value: &[u8]) -> Option<Accept> {
    COMMON_VALUES
        .iter()
        .find(|(text, _, _)| text.len() == value.len() && text.eq_ignore_ascii_case(value))
        .map(|&(_, json, sse)| Accept {
            present: true,
            json,
            sse,
        })
}

/// Whether a `Content-Type` value names `application/json`, whatever its parameters and case
/// (`Application/JSON; charset=utf-8` is JSON).
pub(crate) fn is_json_content_type(value: &[u8]) -> bool {
    let media = match memchr::memchr(b';', value) {
        Some(semi) => &value[..semi],
        None => value,
    };
    trim(media).eq_ignore_ascii_case(b"application/json")
}

/// Parses an RFC 9110 qvalue (`0`, `0.5`, `1`, `1.000`) into thousandths.
fn parse_qvalue(value: &[u8]) -> Option<u16> {
    let (&first, rest) = value.split_first()?;
    let decimals = match rest {
        [] => &[][..],
        [b'.', decimals @ ..] if decimals.len() <= 3 => decimals,
        _ => return None,
    };
    if !decimals.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut thousandths: u16 = 0;
    for idx in 0..3 {
        let digit = decimals.get(idx).map_or(0, |d| u16::from(d - b'0'));
        thousandths = thousandths * 10 + digit;
    }
    match first {
        b'0' => Some(thousandths),
        b'1' if thousandths == 0 => Some(1000),
        _ => None,
    }
}

/// Trims optional whitespace (space and tab).
fn trim(mut bytes: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = bytes {
        bytes = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = bytes {
        bytes = rest;
    }
    bytes
}

/// Splits on `sep`, except inside a quoted-string (where `\` escapes the next byte).
fn split_unquoted(bytes: &[u8], sep: u8) -> impl Iterator<Item = &[u8]> {
    let mut rest = Some(bytes);
    std::iter::from_fn(move || {
        let current = rest?;
        let mut in_quotes = false;
        let mut escaped = false;
        for (idx, &byte) in current.iter().enumerate() {
            if escaped {
                escaped = false;
            } else if in_quotes && byte == b'\\' {
                escaped = true;
            } else if byte == b'"' {
                in_quotes = !in_quotes;
            } else if byte == sep && !in_quotes {
                rest = Some(&current[idx + 1..]);
                return Some(&current[..idx]);
            }
        }
        rest = None;
        Some(current)
    })
}

/// Properties of the `Accept` parser, shared by the fuzz target and the corpus replay test.
#[doc(hidden)]
#[cfg(any(test, feature = "test-util"))]
pub mod props {
    use super::{Accept, MediaKind};

    /// Treats `data` as `Accept` header values separated by `\n` and asserts the parser's
    /// properties. Panics only when a property fails (never on odd input).
    pub fn accept_header(data: &[u8]) {
        let values: Vec<&[u8]> = data.split(|&b| b == b'\n').collect();
        let accept = Accept::parse(values.iter().copied());

        // Deterministic.
        assert_eq!(accept, Accept::parse(values.iter().copied()));

        // Answers agree with the qualities.
        assert_eq!(accept.accepts_json(), accept.json_q() > 0);
        assert_eq!(accept.accepts_sse(), accept.sse_q() > 0);
        assert!(accept.json_q() <= 1000 && accept.sse_q() <= 1000);
        match accept.preferred() {
            Some(MediaKind::Json) => assert!(accept.json_q() > accept.sse_q()),
            Some(MediaKind::EventStream) => assert!(accept.sse_q() > accept.json_q()),
            None => assert_eq!(accept.json_q(), accept.sse_q()),
        }

        // Case never matters.
        let lower = data.to_ascii_lowercase();
        let upper = data.to_ascii_uppercase();
        let parse_split =
            |bytes: &[u8]| Accept::parse(bytes.split(|&b| b == b'\n').collect::<Vec<_>>());
        assert_eq!(parse_split(&lower), parse_split(&upper));

        // Several headers mean the same as one header joined with commas (quotes can span a
        // comma, so only without them).
        if !data.contains(&b'"') {
            let joined = values.join(&b","[..]);
            assert_eq!(accept, Accept::parse([&joined[..]]));
        }

        // Appending `*/*` makes every type acceptable that no range mentioned, and changes
        // nothing for a type some more specific range already decided.
        let mut with_any = values.clone();
        with_any.push(b"*/*");
        let widened = Accept::parse(with_any);
        if accept.json.specificity == 0 {
            assert!(widened.accepts_json());
        } else if accept.json.specificity > 1 {
            assert_eq!(widened.json_q(), accept.json_q());
        }
        if accept.sse.specificity == 0 {
            assert!(widened.accepts_sse());
        } else if accept.sse.specificity > 1 {
            assert_eq!(widened.sse_q(), accept.sse_q());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `expected` = (json q, sse q, preferred).
    fn check(header: &str, expected: (u16, u16, Option<MediaKind>)) {
        let values: Vec<&[u8]> = header.split('\n').map(str::as_bytes).collect();
        let accept = Accept::parse(values);
        assert_eq!(
            (accept.json_q(), accept.sse_q(), accept.preferred()),
            expected,
            "Accept: {header:?}"
        );
        props::accept_header(header.as_bytes());
    }

    use MediaKind::{EventStream as S, Json as J};

    #[test]
    fn common_values_agree_with_the_general_parser() {
        for (text, _, _) in COMMON_VALUES {
            let upper = text.to_ascii_uppercase();
            for value in [text, &upper[..]] {
                let fast = common_value(value);
                assert!(fast.is_some(), "{value:?}");
                assert_eq!(fast, Some(Accept::parse_general([value])), "{value:?}");
                assert_eq!(Accept::parse([value]), Accept::parse_general([value]));
            }
        }
        assert_eq!(common_value(b"text/event-stream "), None);
        assert_eq!(common_value(b"*/*"), None);
    }

    #[test]
    fn accept_table() {
        check("application/json, text/event-stream", (1000, 1000, None));
        check("application/json", (1000, 0, Some(J)));
        check("text/event-stream", (0, 1000, Some(S)));
        check("*/*", (1000, 1000, None));
        check("application/*", (1000, 0, Some(J)));
        check("text/*", (0, 1000, Some(S)));
        check("application/*, text/*", (1000, 1000, None));
        check("APPLICATION/JSON, Text/Event-Stream", (1000, 1000, None));
        check(
            "application/json;q=0.5, text/event-stream",
            (500, 1000, Some(S)),
        );
        check(
            "application/json; Q=0.9 , text/event-stream;q=0.8",
            (900, 800, Some(J)),
        );
        check("application/json;q=0, */*", (0, 1000, Some(S)));
        check("*/*;q=0", (0, 0, None));
        check("*/*;q=0.1, application/json", (1000, 100, Some(J)));
        check("text/*;q=0, text/event-stream;q=0.3", (0, 300, Some(S)));
        check("text/event-stream;q=0.3, text/*;q=0", (0, 300, Some(S)));
        check(
            "application/json;charset=utf-8, text/event-stream",
            (1000, 1000, None),
        );
        check(
            "application/json;charset=utf-8;q=0.2, application/json",
            (200, 0, Some(J)),
        );
        check("application/json\ntext/event-stream", (1000, 1000, None));
        check(
            "application/json;q=1.000, text/event-stream;q=0.001",
            (1000, 1, Some(J)),
        );
        check(
            "application/json;q=1.5, text/event-stream",
            (0, 1000, Some(S)),
        );
        check(
            "application/json;q=0.1234, text/event-stream",
            (0, 1000, Some(S)),
        );
        check("application/json;q=abc", (0, 0, None));
        check("application/json;q=", (0, 0, None));
        check("application/json;q=0.", (0, 0, None));
        check("application/json;q=1.", (1000, 0, Some(J)));
        check("*/json", (0, 0, None));
        check("json", (0, 0, None));
        check("", (0, 0, None));
        check(",,, ;;", (0, 0, None));
        check("text/html, image/png", (0, 0, None));
        check("application/jsonx, text/event-streams", (0, 0, None));
        check(
            "application/json;a=\"x,y\";q=0.4, text/event-stream",
            (400, 1000, Some(S)),
        );
        check("application/json;a=\"x\\\";q=0\";q=0.6", (600, 0, Some(J)));
        check("  application/json  ;  q=0.7 ", (700, 0, Some(J)));
        check("application/json;q=0.5;level=1", (500, 0, Some(J)));
    }

    #[test]
    fn absent_accept_allows_everything() {
        let accept = Accept::parse(std::iter::empty());
        assert!(!accept.is_present());
        assert!(accept.accepts_json() && accept.accepts_sse());
        assert_eq!(accept.preferred(), None);
    }

    #[test]
    fn content_type_table() {
        let check = |value: &str, expected: bool| {
            assert_eq!(
                is_json_content_type(value.as_bytes()),
                expected,
                "{value:?}"
            );
        };
        check("application/json", true);
        check("Application/JSON; charset=utf-8", true);
        check("application/json;charset=UTF-8", true);
        check(" application/json ", true);
        check("application/json-seq", false);
        check("application/jsonx", false);
        check("text/json", false);
        check("text/plain", false);
        check("", false);
        check("application/*", false);
    }

    #[test]
    fn qvalue_table() {
        let check = |value: &str, expected: Option<u16>| {
            assert_eq!(parse_qvalue(value.as_bytes()), expected, "{value:?}");
        };
        check("0", Some(0));
        check("0.5", Some(500));
        check("0.05", Some(50));
        check("0.005", Some(5));
        check("1", Some(1000));
        check("1.0", Some(1000));
        check("1.000", Some(1000));
        check("1.001", None);
        check("2", None);
        check("0.0000", None);
        check("-1", None);
        check("", None);
        check(".5", None);
    }
}
