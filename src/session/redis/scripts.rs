//! The Lua scripts of the Redis session store (`store.rs`), one per operation, each a single
//! round trip that reads the Redis clock first (`NOW`). The key layout they work on is
//! documented in `store.rs`; the scripts must not touch keys they are not given.

use redis::Script;

/// Returns the server time in milliseconds as `now` (shared prologue).
const NOW: &str = r"
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
";

/// Create. KEYS: session, tenant set, tenants, caller set, ledger, ledger creation times. ARGV:
/// tenant cap, idle ms, init ms, tenant, client, caller, version, client info, capabilities, id,
/// caller cap, ledger grace ms.
/// Returns 0 (created), 1 (tenant cap reached), 2 (id taken), 3 (caller cap reached).
const CREATE: &str = r"
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[1]) then return 1 end
redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now)
if redis.call('ZCARD', KEYS[4]) >= tonumber(ARGV[11]) then return 3 end
if redis.call('EXISTS', KEYS[1]) == 1 then return 2 end
local expires = now + math.min(tonumber(ARGV[2]), tonumber(ARGV[3]))
redis.call('HSET', KEYS[1], 'tenant', ARGV[4], 'client', ARGV[5], 'caller', ARGV[6],
  'version', ARGV[7], 'client_info', ARGV[8], 'capabilities', ARGV[9], 'initialized', '0',
  'created', now, 'last_seen', now, 'expires', expires)
redis.call('PEXPIREAT', KEYS[1], expires)
redis.call('ZADD', KEYS[2], expires, ARGV[10])
if redis.call('PTTL', KEYS[2]) < expires - now then redis.call('PEXPIREAT', KEYS[2], expires) end
redis.call('ZADD', KEYS[4], expires, ARGV[10])
if redis.call('PTTL', KEYS[4]) < expires - now then redis.call('PEXPIREAT', KEYS[4], expires) end
redis.call('SADD', KEYS[3], ARGV[4])
redis.call('ZADD', KEYS[5], expires, ARGV[10])
redis.call('HSET', KEYS[6], ARGV[10], now)
local kept = expires + tonumber(ARGV[12])
if redis.call('PTTL', KEYS[5]) < kept - now then
  redis.call('PEXPIREAT', KEYS[5], kept)
  redis.call('PEXPIREAT', KEYS[6], kept)
end
return 0
";

/// Validate, mark initialized, or set the handshake. KEYS: session, tenant set, caller set,
/// ledger, ledger creation times. ARGV: tenant, client, caller, idle ms, init ms, id, operation
/// (`v`, `i`, `h`), refresh-after ms, broadcast channel, session-gone notice, ledger grace ms,
/// then for `h` version, client info, capabilities.
/// A refresh moves the session's ledger score with its expiry (only if it is in the ledger:
/// `XX`); a session found expired stays in the ledger, for the sweep to measure.
/// A `v` whose session was refreshed less than refresh-after ms ago writes nothing (the expiry
/// stays); `h` and a session found expired publish the session-gone notice, so every instance's
/// cache drops it.
/// Returns `{1}` (not found), `{2}` (foreign), `{0, ms left}` (`i`, `h`) or
/// `{0, ms left, initialized, version, client info, capabilities, ms until a refresh is due}`
/// (`v`).
const TOUCH: &str = r"
local record = redis.call('HMGET', KEYS[1], 'tenant', 'client', 'caller', 'created',
  'initialized', 'expires', 'last_seen')
if not record[1] then return {1} end
if record[1] ~= ARGV[1] or record[2] ~= ARGV[2] or record[3] ~= ARGV[3] then return {2} end
if now >= tonumber(record[6]) then
  redis.call('DEL', KEYS[1])
  redis.call('ZREM', KEYS[2], ARGV[6])
  redis.call('ZREM', KEYS[3], ARGV[6])
  redis.call('PUBLISH', ARGV[9], ARGV[10])
  return {1}
end
local initialized = record[5] == '1'
local refresh_after = tonumber(ARGV[8])
local since = now - (tonumber(record[7]) or 0)
if ARGV[7] == 'v' and since < refresh_after then
  local data = redis.call('HMGET', KEYS[1], 'version', 'client_info', 'capabilities')
  return {0, tonumber(record[6]) - now, initialized and 1 or 0, data[1], data[2], data[3],
    refresh_after - since}
end
if ARGV[7] == 'i' then
  initialized = true
  redis.call('HSET', KEYS[1], 'initialized', '1')
elseif ARGV[7] == 'h' then
  redis.call('HSET', KEYS[1], 'version', ARGV[12], 'client_info', ARGV[13], 'capabilities', ARGV[14])
  redis.call('PUBLISH', ARGV[9], ARGV[10])
end
local expires = now + tonumber(ARGV[4])
if not initialized then expires = math.min(expires, tonumber(record[4]) + tonumber(ARGV[5])) end
redis.call('HSET', KEYS[1], 'last_seen', now, 'expires', expires)
redis.call('PEXPIREAT', KEYS[1], expires)
redis.call('ZADD', KEYS[2], expires, ARGV[6])
if redis.call('PTTL', KEYS[2]) < expires - now then redis.call('PEXPIREAT', KEYS[2], expires) end
redis.call('ZADD', KEYS[3], expires, ARGV[6])
if redis.call('PTTL', KEYS[3]) < expires - now then redis.call('PEXPIREAT', KEYS[3], expires) end
if redis.call('ZADD', KEYS[4], 'XX', 'CH', expires, ARGV[6]) == 1 then
  local kept = expires + tonumber(ARGV[11])
  if redis.call('PTTL', KEYS[4]) < kept - now then
    redis.call('PEXPIREAT', KEYS[4], kept)
    redis.call('PEXPIREAT', KEYS[5], kept)
  end
end
if ARGV[7] ~= 'v' then return {0, expires - now} end
local data = redis.call('HMGET', KEYS[1], 'version', 'client_info', 'capabilities')
return {0, expires - now, initialized and 1 or 0, data[1], data[2], data[3], refresh_after}
";

/// Delete. KEYS: session, tenant set, caller set, ledger, ledger creation times. ARGV: tenant,
/// client, caller, id, broadcast channel, session-gone notice (published in the same step, so
/// every instance's cache drops the session).
/// Returns {0, lifetime ms} (deleted: out of the ledger, the caller reports the lifetime), {1}
/// (not found, or already expired: left in the ledger for the sweep), {2} (foreign).
const DELETE: &str = r"
local record = redis.call('HMGET', KEYS[1], 'tenant', 'client', 'caller', 'expires', 'created')
if not record[1] then return {1} end
if record[1] ~= ARGV[1] or record[2] ~= ARGV[2] or record[3] ~= ARGV[3] then return {2} end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[4])
redis.call('ZREM', KEYS[3], ARGV[4])
redis.call('PUBLISH', ARGV[5], ARGV[6])
if now >= tonumber(record[4]) then return {1} end
redis.call('ZREM', KEYS[4], ARGV[4])
redis.call('HDEL', KEYS[5], ARGV[4])
return {0, now - (tonumber(record[5]) or now)}
";

/// Live sessions per tenant. KEYS: tenants, then one tenant set per ARGV tenant.
/// Returns the counts in ARGV order; forgets tenants with none left.
const COUNTS: &str = r"
local counts = {}
for index = 2, #KEYS do
  local live = redis.call('ZCOUNT', KEYS[index], '(' .. now, '+inf')
  if live == 0 then redis.call('SREM', KEYS[1], ARGV[index - 1]) end
  counts[index - 1] = live
end
return counts
";

/// The ledger's ids whose expiry has passed, by the Redis clock. KEYS: ledger. ARGV: limit.
const DUE: &str = r"
return redis.call('ZRANGE', KEYS[1], '-inf', now, 'BYSCORE', 'LIMIT', 0, tonumber(ARGV[1]))
";

/// Claim ended sessions from the ledger. KEYS: ledger, ledger creation times, then one session
/// record per ARGV id. Each id whose record is gone and whose ledger score has passed leaves
/// the ledger here, atomically, so only one instance ever claims it; an id whose record lives
/// on (refreshed by an instance that did not move its score) gets the record's expiry back.
/// Returns the claimed sessions' lifetimes (expiry minus creation) in milliseconds.
const CLAIM: &str = r"
local lived = {}
for index = 3, #KEYS do
  local id = ARGV[index - 2]
  local expires = redis.call('ZSCORE', KEYS[1], id)
  if expires and tonumber(expires) <= now then
    if redis.call('EXISTS', KEYS[index]) == 1 then
      local current = tonumber(redis.call('HGET', KEYS[index], 'expires'))
      if current and current > now then redis.call('ZADD', KEYS[1], current, id) end
    else
      local created = tonumber(redis.call('HGET', KEYS[2], id))
      redis.call('ZREM', KEYS[1], id)
      redis.call('HDEL', KEYS[2], id)
      if created then lived[#lived + 1] = math.max(0, tonumber(expires) - created) end
    end
  end
end
return lived
";

/// The scripts, hashed once (`EVALSHA`, loaded on first `NOSCRIPT`).
pub(super) struct Scripts {
    pub(super) create: Script,
    pub(super) touch: Script,
    pub(super) delete: Script,
    pub(super) counts: Script,
    pub(super) due: Script,
    pub(super) claim: Script,
}

impl Scripts {
    pub(super) fn new() -> Self {
        let with_now = |body: &str| Script::new(&format!("{NOW}{body}"));
        Self {
            create: with_now(CREATE),
            touch: with_now(TOUCH),
            delete: with_now(DELETE),
            counts: with_now(COUNTS),
            due: with_now(DUE),
            claim: with_now(CLAIM),
        }
    }
}
