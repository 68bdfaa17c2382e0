//! The Lua scripts of the Redis task store, one atomic step each.
//!
//! Owns the scripts' text and the meaning of their KEYS, ARGV and replies (documented above
//! each). Must not decide anything a script does not need to decide atomically: the snapshot
//! is computed in Rust (`Task::apply`), so a write is a compare-and-set on the version.
//! Times come from the Redis server clock (`TIME`), never from an instance's clock, so
//! instances with skewed clocks agree on every deadline.

use redis::Script;

/// Shared prologue: the server time in milliseconds as `now`, and `extend(key, ms)`, which
/// makes a set live at least `ms` longer (sets outlive every member's deadline).
const PROLOGUE: &str = r"
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local function extend(key, ms)
  if ms > 0 and redis.call('PTTL', key) < ms then redis.call('PEXPIRE', key, ms) end
end
";

/// Create. KEYS: task, events, tenant set, index, push. ARGV: tenant cap, owner, task JSON,
/// event JSON (the snapshot as a `task` event), terminal (0/1), status ms, state, context id,
/// status timestamp, events kept, TTL ms, task id.
/// Returns the tenant's task count after the insert, -1 (tenant cap reached) or -2 (id taken).
const CREATE: &str = r"
if redis.call('EXISTS', KEYS[1]) == 1 then return -2 end
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
if redis.call('ZCARD', KEYS[3]) >= tonumber(ARGV[1]) then return -1 end
-- Whatever an earlier task of this id left behind.
redis.call('DEL', KEYS[2], KEYS[5])
local ttl = tonumber(ARGV[11])
local last = redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[10], '*', 'v', '1', 'e', ARGV[4])
redis.call('HSET', KEYS[1], 'owner', ARGV[2], 'json', ARGV[3], 'version', '1', 'last', last,
  'terminal', ARGV[5], 'updated', ARGV[6], 'state', ARGV[7], 'context', ARGV[8],
  'stamp', ARGV[9])
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('PEXPIRE', KEYS[2], ttl)
redis.call('ZADD', KEYS[3], now + ttl, ARGV[12])
extend(KEYS[3], ttl)
redis.call('ZADD', KEYS[4], ARGV[6], ARGV[12])
extend(KEYS[4], ttl)
return redis.call('ZCARD', KEYS[3])
";

/// Compare-and-set of a snapshot with its event. KEYS: task, events, tenant set, index, push.
/// ARGV: owner, version read, task JSON, event JSON, new version, terminal (0/1), status ms,
/// state, context id, status timestamp, events kept, retention ms, task id.
/// Logs the event and writes the snapshot, version and log position together, so a reader of
/// (snapshot, version, position) and then the log after that position sees no gap and no
/// duplicate. A snapshot that turned terminal is re-expired to the retention.
/// Returns 0 (written), 1 (not found or another owner's) or 2 (terminal or the version moved:
/// read again).
const APPEND: &str = r"
local current = redis.call('HMGET', KEYS[1], 'owner', 'version', 'terminal')
if current[1] ~= ARGV[1] then return 1 end
if current[3] == '1' or current[2] ~= ARGV[2] then return 2 end
local last = redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[11], '*', 'v', ARGV[5], 'e', ARGV[4])
redis.call('HSET', KEYS[1], 'json', ARGV[3], 'version', ARGV[5], 'last', last,
  'terminal', ARGV[6], 'updated', ARGV[7], 'state', ARGV[8], 'context', ARGV[9],
  'stamp', ARGV[10])
if ARGV[6] == '1' then
  local retain = tonumber(ARGV[12])
  redis.call('PEXPIRE', KEYS[1], retain)
  redis.call('PEXPIRE', KEYS[2], retain)
  redis.call('PEXPIRE', KEYS[5], retain)
  redis.call('ZADD', KEYS[3], now + retain, ARGV[13])
end
redis.call('ZADD', KEYS[4], ARGV[7], ARGV[13])
local left = redis.call('PTTL', KEYS[1])
extend(KEYS[3], left)
extend(KEYS[4], left)
return 0
";

/// Put a push configuration. KEYS: task, push. ARGV: owner, field (`c:{config id}`), JSON,
/// cap. Each value is `{insertion number} {JSON}`; field `n` counts insertions, so listing
/// keeps insertion order and a replaced configuration keeps its place.
/// Returns 0 (task not found), 1 (stored) or 2 (cap reached).
const PUT_PUSH: &str = r"
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then return 0 end
local existing = redis.call('HGET', KEYS[2], ARGV[2])
local seq
if existing then
  seq = string.match(existing, '^(%d+) ') or '0'
else
  local held = redis.call('HLEN', KEYS[2])
  if held > 0 then held = held - 1 end
  if held >= tonumber(ARGV[4]) then return 2 end
  seq = redis.call('HINCRBY', KEYS[2], 'n', 1)
end
redis.call('HSET', KEYS[2], ARGV[2], seq .. ' ' .. ARGV[3])
local left = redis.call('PTTL', KEYS[1])
if left > 0 then redis.call('PEXPIRE', KEYS[2], left) end
return 1
";

/// Delete a push configuration. KEYS: task, push. ARGV: owner, field.
/// Returns 1 (deleted) or 0 (task not found or no such configuration).
const DELETE_PUSH: &str = r"
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then return 0 end
return redis.call('HDEL', KEYS[2], ARGV[2])
";

/// Tasks per tenant. KEYS: tenant sets. Returns their counts in KEYS order, after dropping
/// the members past their deadline.
const COUNTS: &str = r"
local counts = {}
for index = 1, #KEYS do
  redis.call('ZREMRANGEBYSCORE', KEYS[index], '-inf', now)
  counts[index] = redis.call('ZCARD', KEYS[index])
end
return counts
";

/// The scripts, hashed once (`EVALSHA`, loaded on first `NOSCRIPT`).
pub(super) struct Scripts {
    pub create: Script,
    pub append: Script,
    pub put_push: Script,
    pub delete_push: Script,
    pub counts: Script,
}

impl Scripts {
    pub(super) fn new() -> Self {
        let with_prologue = |body: &str| Script::new(&format!("{PROLOGUE}{body}"));
        Self {
            create: with_prologue(CREATE),
            append: with_prologue(APPEND),
            put_push: with_prologue(PUT_PUSH),
            delete_push: with_prologue(DELETE_PUSH),
            counts: with_prologue(COUNTS),
        }
    }
}
