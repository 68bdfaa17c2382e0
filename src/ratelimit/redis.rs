//! The shared bucket store: TATs in Redis, every instance taking from the same buckets, one
//! round trip per limited call (`EVALSHA` of [`SCRIPT`], which `redis::Script` loads on its
//! first `NOSCRIPT`).
//!
//! The script reads Redis's own clock (`TIME`), so instances with skewed clocks still share one
//! timeline, decides every bucket of the call, and writes their new TATs only when all allow
//! (each key expires once its TAT has passed: a passed bucket is a fresh one). Keys are
//! `{namespace}:rl:{{tenant}}:…` (one hash tag per tenant, so a call's buckets share a slot).
//! Must not know rules or callers.

use std::time::Duration;

use redis::aio::ConnectionManager;

use super::gcra::Shape;

/// GCRA over several buckets at once. `KEYS`: the buckets; `ARGV`: each bucket's interval and
/// tolerance in microseconds, in `KEYS` order. Returns `{0, 0}` when the call was taken from
/// every bucket, `{i, retry_after_us}` when bucket `i` (1-based) refuses (nothing is written).
/// Numbers are written with `%.0f`: Lua's default number format would round a microsecond
/// timestamp.
pub(crate) const SCRIPT: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local next = {}
for i, key in ipairs(KEYS) do
  local interval = tonumber(ARGV[2 * i - 1])
  local tolerance = tonumber(ARGV[2 * i])
  local tat = tonumber(redis.call('GET', key) or now)
  if tat < now then tat = now end
  if tat - now > tolerance then
    return {i, tat - now - tolerance}
  end
  next[i] = tat + interval
end
for i, key in ipairs(KEYS) do
  local ttl_ms = math.floor((next[i] - now) / 1000) + 1
  redis.call('SET', key, string.format('%.0f', next[i]), 'PX', ttl_ms)
end
return {0, 0}
";

/// Buckets in Redis.
#[derive(Debug, Clone)]
pub(crate) struct RedisStore {
    connection: ConnectionManager,
    namespace: String,
    timeout: Duration,
    script: std::sync::Arc<redis::Script>,
}

impl RedisStore {
    /// A store on `connection`, keys under `namespace`, every call bounded by `timeout`.
    pub(crate) fn new(connection: ConnectionManager, namespace: String, timeout: Duration) -> Self {
        Self {
            connection,
            namespace,
            timeout,
            script: std::sync::Arc::new(redis::Script::new(SCRIPT)),
        }
    }

    /// Takes one call from every bucket of `items` at once, or from none, as
    /// [`super::local::LocalStore::take_all`] does; a [`StoreError`] when Redis failed or did
    /// not answer in time.
    pub(crate) async fn take_all(
        &self,
        tenant: &str,
        items: &[(&[u8], Shape)],
    ) -> Result<Result<(), (usize, u64)>, StoreError> {
        let mut invocation = self.script.prepare_invoke();
        for (key, shape) in items {
            let mut full = Vec::with_capacity(self.namespace.len() + tenant.len() + key.len() + 8);
            full.extend_from_slice(self.namespace.as_bytes());
            full.extend_from_slice(b":rl:{");
            full.extend_from_slice(tenant.as_bytes());
            full.extend_from_slice(b"}:");
            full.extend_from_slice(key);
            invocation.key(full);
            invocation.arg(shape.interval_us).arg(shape.tolerance_us);
        }
        let mut connection = self.connection.clone();
        let answer = tokio::time::timeout(
            self.timeout,
            invocation.invoke_async::<(i64, i64)>(&mut connection),
        )
        .await
        .map_err(|_| StoreError::Timeout(self.timeout))??;
        Ok(match answer {
            (0, _) => Ok(()),
            (bucket, retry) => Err((
                usize::try_from(bucket - 1).unwrap_or_default(),
                u64::try_from(retry).unwrap_or_default(),
            )),
        })
    }
}

/// Why the shared store gave no decision.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StoreError {
    /// Redis answered with an error or the connection failed.
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),
    /// No answer within the command timeout.
    #[error("no answer from redis within {0:?}")]
    Timeout(Duration),
}
