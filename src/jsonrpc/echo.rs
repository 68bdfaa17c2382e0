//! Bounding text that error messages echo back from the request: a method, tool or prompt
//! name, a resource URI, an argument name, a requested version.
//!
//! A peer chooses that text and its length (a 4 MB method name is a valid JSON string), so an
//! error answer quoting it verbatim would cost as much to build and send as the request did to
//! receive. Every echo goes through [`echo`]. Must not know where the text came from.

use std::borrow::Cow;

/// Most bytes of peer-chosen text an error message quotes. Longer text is cut on a UTF-8
/// character boundary at or below this length and ends with `…`, so an echoed name adds at
/// most this many bytes plus three to an error body.
pub(crate) const MAX_ECHO_BYTES: usize = 128;

/// `text` when it is at most [`MAX_ECHO_BYTES`] long (no copy); else its longest prefix that
/// fits, cut on a character boundary, followed by `…`.
pub(crate) fn echo(text: &str) -> Cow<'_, str> {
    if text.len() <= MAX_ECHO_BYTES {
        return Cow::Borrowed(text);
    }
    let mut end = MAX_ECHO_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let mut cut = String::with_capacity(end + '…'.len_utf8());
    cut.push_str(text.get(..end).unwrap_or_default());
    cut.push('…');
    Cow::Owned(cut)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, expected: &str) {
        assert_eq!(echo(text), expected, "{text:?}");
    }

    #[test]
    fn cuts_long_text_on_a_char_boundary() {
        check("", "");
        check("tools/call", "tools/call");
        let exact = "a".repeat(MAX_ECHO_BYTES);
        check(&exact, &exact);
        check(
            &"b".repeat(MAX_ECHO_BYTES + 1),
            &format!("{}…", "b".repeat(MAX_ECHO_BYTES)),
        );
        // `é` is two bytes: 127 ASCII bytes then `é` straddles the limit, so it goes.
        let straddling = format!("{}é", "c".repeat(MAX_ECHO_BYTES - 1));
        check(&straddling, &format!("{}…", "c".repeat(MAX_ECHO_BYTES - 1)));
        let huge = "€".repeat(1 << 20);
        let cut = echo(&huge);
        assert!(cut.len() <= MAX_ECHO_BYTES + '…'.len_utf8());
        assert!(cut.ends_with('…'));
    }
}
