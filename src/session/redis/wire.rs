//! What the Redis store and the Redis backplane share: one copy of each.
//!
//! Owns the escaping of key and channel components, the bound on one command and the error
//! text of a failed one ([`Unavailable`], which becomes [`SessionError::Unavailable`] or
//! [`BackplaneError::Unavailable`]), reading a reply as bytes, durations as the milliseconds
//! Lua reads. Must not know a key layout or
//! a script: those belong to `store.rs` and `backplane.rs` (and the A2A task store's
//! `a2a/store/redis.rs`, which shares these helpers).

use std::future::Future;
use std::time::Duration;

use percent_encoding::{utf8_percent_encode, AsciiSet, PercentEncode, CONTROLS};
use redis::{RedisError, RedisResult, Value};

use super::super::{BackplaneError, SessionError};

/// Bytes escaped in a key or channel component, so that `:` always separates components and
/// two different (tenant, client, caller) triples never produce the same key. Non-ASCII is
/// always escaped by `utf8_percent_encode`.
const COMPONENT: &AsciiSet = &CONTROLS.add(b':').add(b'%').add(b' ').add(b'*').add(b'?');

/// One component of a key or channel name, escaped (see [`COMPONENT`]).
pub(crate) fn component(text: &str) -> String {
    escaped(text).to_string()
}

/// One component escaped lazily, for writing into a buffer that already holds the rest of
/// the name.
pub(super) fn escaped(text: &str) -> PercentEncode<'_> {
    utf8_percent_encode(text, COMPONENT)
}

/// A Redis command failed or did not answer in time; carries the text of
/// `SessionError::Unavailable` or `BackplaneError::Unavailable`, whichever the caller reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unavailable(String);

impl Unavailable {
    /// What failed, for another layer's error (the A2A task store's).
    pub(crate) fn into_text(self) -> String {
        self.0
    }
}

impl From<Unavailable> for SessionError {
    fn from(Unavailable(text): Unavailable) -> Self {
        SessionError::Unavailable(text)
    }
}

impl From<Unavailable> for BackplaneError {
    fn from(Unavailable(text): Unavailable) -> Self {
        BackplaneError::Unavailable(text)
    }
}

/// Runs one Redis operation, bounded by `limit`. A timeout or any Redis error is
/// [`Unavailable`]: the caller cannot tell a slow Redis from a dead one, and must not wait
/// longer than its budget to find out.
pub(crate) async fn bounded<T>(
    limit: Duration,
    operation: impl Future<Output = RedisResult<T>>,
) -> Result<T, Unavailable> {
    match tokio::time::timeout(limit, operation).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(error)) => Err(unavailable(&error)),
        Err(_) => Err(Unavailable(format!(
            "no answer within {} ms",
            limit.as_millis()
        ))),
    }
}

/// The error text a Redis failure carries: the error's category and message, never the URL
/// (which may hold a password).
pub(super) fn unavailable(error: &RedisError) -> Unavailable {
    Unavailable(format!("{:?}: {}", error.kind(), error))
}

/// A reply element as bytes (bulk or simple string); `None` for anything else.
pub(super) fn as_bytes(value: &Value) -> Option<&[u8]> {
    match value {
        Value::BulkString(bytes) => Some(bytes),
        Value::SimpleString(text) => Some(text.as_bytes()),
        _ => None,
    }
}

/// Milliseconds, saturating (Lua reads them as doubles: exact up to 2^53).
pub(super) fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::super::RedisConfig;
    use super::*;

    #[test]
    fn components_never_collide() {
        // `:` separates key components, so it must never appear inside one.
        assert_eq!(component("a:b"), "a%3Ab");
        assert_eq!(component("a%3Ab"), "a%253Ab");
        assert_ne!(component("a:b"), component("a%3Ab"));
        assert_eq!(component("tenant-a.b_c"), "tenant-a.b_c");
        assert_eq!(component("é"), "%C3%A9");
    }

    #[test]
    fn namespace_escapes_the_prefix() {
        let config = RedisConfig::new("redis://127.0.0.1:6379").with_prefix("a:b");
        assert_eq!(config.namespace(), "sluice:a%3Ab:");
        assert_eq!(
            config.command_timeout,
            super::super::DEFAULT_REDIS_COMMAND_TIMEOUT
        );
    }
}
