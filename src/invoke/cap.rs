//! The result size guard (`max_result_bytes`): a tool result over its limit is cut without
//! breaking its JSON — elements dropped from the end of its arrays, largest array first — or
//! refused, as the tool's `on_oversize` says.
//!
//! Works on the result's bytes: one scan records every array's element spans (and its JSON
//! Pointer), the cuts are chosen from those spans, and the kept bytes are copied once, so the
//! result keeps its exact text (member order, number spelling) everywhere it is not cut. The
//! MCP text content and `structuredContent` are then written from the one cut result, so they
//! agree. Must not know MCP or HTTP: the surfaces put [`Cut::meta`] where their protocol has
//! room for it.

use bytes::{BufMut, Bytes, BytesMut};

use crate::config::OversizePolicy;

/// What the guard does with one result.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Capped {
    /// Within the limit: unchanged.
    Fits,
    /// Cut to fit.
    Cut(Cut),
    /// Over the limit and refused (or nothing left to cut): the tool error's text.
    Refused(String),
}

/// A result cut to fit its limit.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Cut {
    /// The cut result (valid JSON, at most the limit).
    pub body: Bytes,
    /// `{"limitBytes":…,"originalBytes":…,"resultBytes":…,"cut":[{"path":…,"kept":…,"of":…}]}`.
    pub meta: Bytes,
}

/// The guard for `body` under `limit` bytes.
pub(crate) fn apply(body: &Bytes, limit: usize, policy: OversizePolicy) -> Capped {
    if body.len() <= limit {
        return Capped::Fits;
    }
    let over = || {
        format!(
            "the result is {} bytes, over this tool's max_result_bytes ({limit})",
            body.len()
        )
    };
    if policy == OversizePolicy::Refuse {
        return Capped::Refused(over());
    }
    let mut arrays = Vec::new();
    let mut scanner = Scanner {
        bytes: body,
        pos: 0,
        arrays: &mut arrays,
    };
    if scanner.value(&mut String::new(), 0).is_none() {
        return Capped::Refused(format!("{}; it could not be read to cut it", over()));
    }
    match choose(&arrays, body.len() - limit) {
        Some(cuts) => Capped::Cut(write(body, limit, &arrays, &cuts)),
        None => Capped::Refused(format!("{}, and its arrays cannot be cut enough", over())),
    }
}

/// One array of the result: its JSON Pointer, its brackets and its elements' spans.
#[derive(Debug)]
struct Array {
    path: String,
    open: usize,
    close: usize,
    elements: Vec<(usize, usize)>,
}

/// How many elements of `arrays[index]` stay.
#[derive(Debug, Clone, Copy)]
struct Keep {
    index: usize,
    kept: usize,
}

/// The cuts that save at least `excess` bytes: the largest arrays first, each cut from its end
/// one element at a time; arrays inside a dropped element are gone already. `None` when even
/// emptying every array does not save enough.
fn choose(arrays: &[Array], excess: usize) -> Option<Vec<Keep>> {
    let mut order: Vec<usize> = (0..arrays.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(arrays[i].close - arrays[i].open));
    let mut dropped: Vec<(usize, usize)> = Vec::new();
    let mut keeps = Vec::new();
    let mut saved = 0usize;
    for index in order {
        if saved >= excess {
            break;
        }
        let array = &arrays[index];
        if dropped
            .iter()
            .any(|&(from, to)| array.open >= from && array.close <= to)
        {
            continue;
        }
        let n = array.elements.len();
        let mut kept = n;
        while kept > 0 && saved < excess {
            kept -= 1;
            let (start, end) = array.elements[kept];
            // An element goes with the comma before it (the first with nothing).
            let from = if kept == 0 {
                start
            } else {
                array.elements[kept - 1].1
            };
            saved += end - from;
        }
        if kept < n {
            let from = if kept == 0 {
                array.elements[0].0
            } else {
                array.elements[kept - 1].1
            };
            dropped.push((from, array.elements[n - 1].1));
            keeps.push(Keep { index, kept });
        }
    }
    (saved >= excess).then_some(keeps)
}

/// Copies `body` without the dropped spans and describes the cuts.
fn write(body: &Bytes, limit: usize, arrays: &[Array], keeps: &[Keep]) -> Cut {
    let mut spans: Vec<(usize, usize)> = keeps
        .iter()
        .map(|keep| {
            let array = &arrays[keep.index];
            let last = array.elements[array.elements.len() - 1].1;
            let from = if keep.kept == 0 {
                array.elements[0].0
            } else {
                array.elements[keep.kept - 1].1
            };
            (from, last)
        })
        .collect();
    spans.sort_unstable();
    let mut out = BytesMut::with_capacity(limit);
    let mut at = 0;
    for (from, to) in spans {
        if from < at {
            continue; // inside a span already dropped
        }
        out.put_slice(&body[at..from]);
        at = to;
    }
    out.put_slice(&body[at..]);
    let body_out = out.freeze();

    let mut meta = BytesMut::with_capacity(96 + 48 * keeps.len());
    meta.put_slice(b"{\"limitBytes\":");
    put_u64(&mut meta, limit as u64);
    meta.put_slice(b",\"originalBytes\":");
    put_u64(&mut meta, body.len() as u64);
    meta.put_slice(b",\"resultBytes\":");
    put_u64(&mut meta, body_out.len() as u64);
    meta.put_slice(b",\"cut\":[");
    let mut described: Vec<&Keep> = keeps.iter().collect();
    described.sort_by_key(|keep| arrays[keep.index].open);
    for (i, keep) in described.into_iter().enumerate() {
        let array = &arrays[keep.index];
        if i > 0 {
            meta.put_u8(b',');
        }
        meta.put_slice(b"{\"path\":");
        crate::json_text::put_str(&mut meta, &array.path);
        meta.put_slice(b",\"kept\":");
        put_u64(&mut meta, keep.kept as u64);
        meta.put_slice(b",\"of\":");
        put_u64(&mut meta, array.elements.len() as u64);
        meta.put_u8(b'}');
    }
    meta.put_slice(b"]}");
    Cut {
        body: body_out,
        meta: meta.freeze(),
    }
}

// === the scan ===

/// Deepest nesting scanned (results are bounded by `[server] max_json_depth` already).
const MAX_DEPTH: usize = 1024;

/// A recursive-descent scan of one JSON value recording arrays. Never panics: malformed input
/// ends it with `None`.
struct Scanner<'a> {
    bytes: &'a [u8],
    pos: usize,
    arrays: &'a mut Vec<Array>,
}

impl Scanner<'_> {
    fn peek(&mut self) -> Option<u8> {
        while let Some(&b) = self.bytes.get(self.pos) {
            if !matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
                return Some(b);
            }
            self.pos += 1;
        }
        None
    }

    /// Scans the value at the cursor (`path` is its JSON Pointer); returns its end.
    fn value(&mut self, path: &mut String, depth: usize) -> Option<usize> {
        if depth > MAX_DEPTH {
            return None;
        }
        match self.peek()? {
            b'[' => self.array(path, depth),
            b'{' => self.object(path, depth),
            b'"' => {
                self.string()?;
                Some(self.pos)
            }
            _ => {
                // A number, true, false or null: up to the next delimiter.
                let start = self.pos;
                while let Some(&b) = self.bytes.get(self.pos) {
                    if matches!(b, b',' | b']' | b'}' | b' ' | b'\t' | b'\n' | b'\r') {
                        break;
                    }
                    self.pos += 1;
                }
                (self.pos > start).then_some(self.pos)
            }
        }
    }

    fn array(&mut self, path: &mut String, depth: usize) -> Option<usize> {
        let open = self.pos;
        self.pos += 1;
        let slot = self.arrays.len();
        self.arrays.push(Array {
            path: path.clone(),
            open,
            close: open,
            elements: Vec::new(),
        });
        let mut elements = Vec::new();
        if self.peek()? == b']' {
            self.pos += 1;
        } else {
            loop {
                let base = path.len();
                path.push('/');
                path.push_str(itoa(elements.len()).as_str());
                let start = self.pos;
                let end = self.value(path, depth + 1)?;
                path.truncate(base);
                elements.push((start, end));
                match self.peek()? {
                    b',' => self.pos += 1,
                    b']' => {
                        self.pos += 1;
                        break;
                    }
                    _ => return None,
                }
                self.peek()?;
            }
        }
        let array = self.arrays.get_mut(slot)?;
        array.close = self.pos;
        array.elements = elements;
        Some(self.pos)
    }

    fn object(&mut self, path: &mut String, depth: usize) -> Option<usize> {
        self.pos += 1;
        if self.peek()? == b'}' {
            self.pos += 1;
            return Some(self.pos);
        }
        loop {
            if self.peek()? != b'"' {
                return None;
            }
            let key_start = self.pos + 1;
            self.string()?;
            let key = std::str::from_utf8(self.bytes.get(key_start..self.pos - 1)?).ok()?;
            if self.peek()? != b':' {
                return None;
            }
            self.pos += 1;
            self.peek()?;
            let base = path.len();
            path.push('/');
            // JSON Pointer (RFC 6901): `~` → `~0`, `/` → `~1`; escapes stay as written.
            for c in key.chars() {
                match c {
                    '~' => path.push_str("~0"),
                    '/' => path.push_str("~1"),
                    c => path.push(c),
                }
            }
            self.value(path, depth + 1)?;
            path.truncate(base);
            match self.peek()? {
                b',' => self.pos += 1,
                b'}' => {
                    self.pos += 1;
                    return Some(self.pos);
                }
                _ => return None,
            }
        }
    }

    /// Skips the string at the cursor (its opening quote), leaving the cursor after its close.
    fn string(&mut self) -> Option<()> {
        self.pos += 1;
        loop {
            let rest = self.bytes.get(self.pos..)?;
            let at = memchr::memchr2(b'"', b'\\', rest)?;
            self.pos += at;
            if self.bytes[self.pos] == b'"' {
                self.pos += 1;
                return Some(());
            }
            self.pos += 2;
        }
    }
}

fn itoa(n: usize) -> String {
    n.to_string()
}

fn put_u64(out: &mut BytesMut, n: u64) {
    out.put_slice(itoa(n as usize).as_bytes());
}

#[cfg(test)]
mod tests;
