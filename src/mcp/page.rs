//! Cursor pagination for the three lists (MCP 2025-11-25, Utilities § Pagination).
//!
//! A cursor is opaque to clients: base64url (no padding) of 13 bytes — the list kind (1), a tag
//! naming the listing it was cut from (8), and the offset of the next item (4). The tag is the
//! client's listing fingerprint for `tools/list` (changes exactly when the listing does) and the
//! snapshot version for resources and prompts; a cursor whose tag no longer matches, whose kind
//! is another list's, or whose offset is past the end is "invalid or expired": -32602, and the
//! client lists again from the start. Must not know what the items are.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;

use super::McpError;

/// Longest cursor accepted; longer ones are -32602 without being decoded.
pub(crate) const MAX_CURSOR_LEN: usize = 64;

const CURSOR_BYTES: usize = 13;

/// Which list a cursor belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ListKind {
    Tools = 1,
    Resources = 2,
    Prompts = 3,
}

/// One page of a list of `len` items: items `start..end`, and the cursor of the next page.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Page {
    pub(crate) start: usize,
    pub(crate) end: usize,
    pub(crate) next: Option<String>,
}

/// Cuts the page `cursor` points at (the first page when `None`).
pub(crate) fn page(
    kind: ListKind,
    tag: u64,
    len: usize,
    page_size: usize,
    cursor: Option<&str>,
) -> Result<Page, McpError> {
    let start = match cursor {
        None => 0,
        Some(cursor) => decode(kind, tag, len, cursor)?,
    };
    let end = start.saturating_add(page_size.max(1)).min(len);
    let next = (end < len).then(|| encode(kind, tag, end));
    Ok(Page { start, end, next })
}

fn encode(kind: ListKind, tag: u64, offset: usize) -> String {
    let mut raw = [0u8; CURSOR_BYTES];
    raw[0] = kind as u8;
    raw[1..9].copy_from_slice(&tag.to_be_bytes());
    // Lists are far shorter than 2^32 items; saturate rather than wrap if one were not.
    let offset = u32::try_from(offset).unwrap_or(u32::MAX);
    raw[9..].copy_from_slice(&offset.to_be_bytes());
    URL_SAFE_NO_PAD.encode(raw)
}

fn decode(kind: ListKind, tag: u64, len: usize, cursor: &str) -> Result<usize, McpError> {
    let invalid =
        || McpError::InvalidParams("Invalid or expired cursor; list again without one".into());
    if cursor.len() > MAX_CURSOR_LEN {
        return Err(invalid());
    }
    let raw = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| invalid())?;
    let raw: [u8; CURSOR_BYTES] = raw.try_into().map_err(|_| invalid())?;
    let (head, offset) = raw.split_at(9);
    let (kind_byte, cursor_tag) = head.split_at(1);
    let cursor_tag: [u8; 8] = cursor_tag.try_into().map_err(|_| invalid())?;
    let offset: [u8; 4] = offset.try_into().map_err(|_| invalid())?;
    let offset = u32::from_be_bytes(offset) as usize;
    if kind_byte != [kind as u8] || u64::from_be_bytes(cursor_tag) != tag || offset >= len {
        return Err(invalid());
    }
    Ok(offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Walks every page of a list of `len` items and checks the (start, end) ranges.
    fn check(len: usize, page_size: usize, expected: &[(usize, usize)]) {
        let mut got = Vec::new();
        let mut cursor = None;
        loop {
            let page = page(ListKind::Tools, 7, len, page_size, cursor.as_deref()).unwrap();
            got.push((page.start, page.end));
            match page.next {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        assert_eq!(got, expected);
    }

    fn check_rejected(len: usize, cursor: &str) {
        let err = page(ListKind::Tools, 7, len, 2, Some(cursor)).unwrap_err();
        assert!(matches!(err, McpError::InvalidParams(_)), "{cursor}");
    }

    #[test]
    fn pages_cover_the_list_once() {
        check(0, 2, &[(0, 0)]);
        check(2, 2, &[(0, 2)]);
        check(5, 2, &[(0, 2), (2, 4), (4, 5)]);
        check(3, 0, &[(0, 1), (1, 2), (2, 3)]);
    }

    #[test]
    fn foreign_stale_or_malformed_cursors_are_invalid_params() {
        let good = encode(ListKind::Tools, 7, 2);
        assert_eq!(decode(ListKind::Tools, 7, 5, &good).unwrap(), 2);
        check_rejected(5, &encode(ListKind::Prompts, 7, 2));
        check_rejected(5, &encode(ListKind::Tools, 8, 2));
        check_rejected(2, &encode(ListKind::Tools, 7, 2));
        check_rejected(5, "");
        check_rejected(5, "not base64!");
        check_rejected(5, "AAAA");
        check_rejected(5, &"A".repeat(MAX_CURSOR_LEN + 4));
    }
}
