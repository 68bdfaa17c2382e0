//! Result shaping per era: what the stateless era (2026-07-28) adds to every result.
//!
//! Stateless era (MCP 2026-07-28, Basic and Server Utilities § Caching): every result carries
//! `resultType: "complete"` and `_meta["io.modelcontextprotocol/serverInfo"]`; the results of
//! `server/discover`, the three lists and `resources/read` also carry `ttlMs` and `cacheScope:
//! "private"` (the catalog varies per tenant, client and caller). Handshake era: none of these. The
//! suffixes are built once per dispatcher, so shaping a result is one copy. Must not know any
//! method's members.

use bytes::{BufMut, Bytes, BytesMut};

use super::json;
use super::names::META_SERVER_INFO;
use super::Era;

/// Whether a result is cacheable (SEP-2549), i.e. carries `ttlMs` and `cacheScope`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cache {
    /// Not a cacheable result (`tools/call`, `prompts/get`).
    No,
    /// `server/discover`, the lists, `resources/read`: `cacheScope: "private"`.
    Private,
}

/// The era members, pre-serialized.
#[derive(Debug)]
pub(crate) struct Shapes {
    /// `{"name":…,"version":…}`.
    server_info: Bytes,
    /// `,"resultType":"complete","_meta":{…serverInfo…}}`.
    complete: Bytes,
    /// `,"resultType":"complete","ttlMs":N,"cacheScope":"private","_meta":{…}}`.
    complete_cached: Bytes,
}

impl Shapes {
    /// Builds the suffixes for a server identity and a `ttlMs`.
    pub(crate) fn new(server_name: &str, server_version: &str, ttl_ms: u64) -> Self {
        let mut info = BytesMut::with_capacity(64);
        info.put_slice(b"{\"name\":");
        json::put_str(&mut info, server_name);
        info.put_slice(b",\"version\":");
        json::put_str(&mut info, server_version);
        info.put_u8(b'}');
        let server_info = info.freeze();

        let meta = |out: &mut BytesMut| {
            out.put_slice(b",\"_meta\":{");
            json::put_str(out, META_SERVER_INFO);
            out.put_u8(b':');
            out.put_slice(&server_info);
            out.put_slice(b"}}");
        };
        let mut complete = BytesMut::with_capacity(128);
        complete.put_slice(b",\"resultType\":\"complete\"");
        meta(&mut complete);
        let mut cached = BytesMut::with_capacity(160);
        cached.put_slice(b",\"resultType\":\"complete\",\"ttlMs\":");
        json::put_u64(&mut cached, ttl_ms);
        cached.put_slice(b",\"cacheScope\":\"private\"");
        meta(&mut cached);
        Self {
            server_info: server_info.clone(),
            complete: complete.freeze(),
            complete_cached: cached.freeze(),
        }
    }

    /// `{"name":…,"version":…}`.
    pub(crate) fn server_info(&self) -> &Bytes {
        &self.server_info
    }

    /// How many bytes [`close`](Self::close) may append.
    pub(crate) fn max_suffix_len(&self) -> usize {
        self.complete_cached.len()
    }

    /// [`close`](Self::close) with members of our own in the result's `_meta` (`members`:
    /// `"key":value` pairs, comma-separated); the stateless era's `serverInfo` joins them.
    /// Never cached: only results with something to say take this path.
    pub(crate) fn close_with_meta(&self, out: &mut BytesMut, era: Era, members: &[u8]) {
        if era == Era::Stateless {
            out.put_slice(b",\"resultType\":\"complete\"");
        }
        out.put_slice(b",\"_meta\":{");
        out.put_slice(members);
        if era == Era::Stateless {
            out.put_u8(b',');
            json::put_str(out, META_SERVER_INFO);
            out.put_u8(b':');
            out.put_slice(&self.server_info);
        }
        out.put_slice(b"}}");
    }

    /// Closes a result object that `out` opened with `{` (and maybe some members): appends the
    /// era members and the closing brace.
    pub(crate) fn close(&self, out: &mut BytesMut, era: Era, cache: Cache) {
        let suffix = match (era, cache) {
            (Era::Handshake, _) => {
                out.put_u8(b'}');
                return;
            }
            (Era::Stateless, Cache::No) => &self.complete,
            (Era::Stateless, Cache::Private) => &self.complete_cached,
        };
        // An empty object has no member before ours, hence no comma.
        let suffix = if out.last() == Some(&b'{') {
            suffix.get(1..).unwrap_or_default()
        } else {
            &suffix[..]
        };
        out.put_slice(suffix);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(members: &str, era: Era, cache: Cache, expected: &str) {
        let shapes = Shapes::new("s", "1", 5);
        let mut out = BytesMut::from(format!("{{{members}").as_bytes());
        shapes.close(&mut out, era, cache);
        assert_eq!(std::str::from_utf8(&out).unwrap(), expected);
        assert!(out.len() <= members.len() + 1 + shapes.max_suffix_len());
    }

    #[test]
    fn era_members() {
        check(r#""a":1"#, Era::Handshake, Cache::Private, r#"{"a":1}"#);
        check("", Era::Handshake, Cache::No, "{}");
        check(
            r#""a":1"#,
            Era::Stateless,
            Cache::No,
            r#"{"a":1,"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}}}"#,
        );
        check(
            "",
            Era::Stateless,
            Cache::Private,
            r#"{"resultType":"complete","ttlMs":5,"cacheScope":"private","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}}}"#,
        );
    }
}
