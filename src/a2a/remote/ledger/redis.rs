//! The ownership ledger in Redis, shared by every instance configured with the same
//! `[cluster]` Redis and prefix: a task sent through one instance is owned, followed,
//! cancelled and listed through any other.
//!
//! Layout (under `sluice:{prefix}:`; `{t}` tenant, `{c}` client, `{a}` agent, `{s}` caller,
//! each component escaped so `:` always separates them):
//! - `a2a:rtask:{t}:{c}:{a}:{task}`: a hash `caller`, `ctx`, `state`, `stamp`, `status` (the
//!   last status object's JSON); TTL `active_ttl`, `terminal_ttl` once terminal.
//! - `a2a:rctx:{t}:{c}:{a}:{ctx}`: the owning caller; TTL `active_ttl`, refreshed on use.
//! - `a2a:rindex:{t}:{c}:{a}:{s}`: a set of the caller's task ids, what `ListTasks` reads;
//!   members whose task hash is gone are pruned when read.
//! - `a2a:rtenant:{t}`: a sorted set `{c}:{a}:{task}` → deadline (server ms), the tenant cap.
//! - `a2a:relay:{relayId}`: a push relay record (JSON), TTL `active_ttl`; and
//!   `a2a:rrelay:{t}:{c}:{a}:{task}`: the relay id of a task, the same TTL. A record is
//!   written whole (last writer wins: configuration changes of one task come from its one
//!   owner).
//!
//! Each write is one script (check the owner, write, count against the cap); times come from
//! the Redis server clock. Every command is bounded by the command timeout; a timeout or any
//! Redis error is [`LedgerError::Unavailable`]. Must not know HTTP, JSON-RPC or the upstream.

use std::future::Future;
use std::time::Duration;

use bytes::Bytes;
use redis::aio::ConnectionManager;
use redis::{RedisResult, Script};

use super::{page, AgentKey, Entry, EntryPage, LedgerConfig, LedgerError, RelayRecord, Seen};
use crate::a2a::model::TaskState;
use crate::a2a::store::ListQuery;
use crate::session::redis_wire::component;

/// Record. KEYS: task, context, index, tenant set. ARGV: caller, has task (0/1), context id
/// ('' for none), has state (0/1), state, stamp, status JSON, task TTL ms, context TTL ms,
/// tenant cap, tenant member, task id.
/// Returns 1 (written), 0 (another caller's task: nothing written) or -1 (tenant cap reached).
const RECORD: &str = r"
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local caller = ARGV[1]
local ttl = tonumber(ARGV[8])
local ctx_ttl = tonumber(ARGV[9])
local owner = caller
if ARGV[2] == '1' then
  local current = redis.call('HGET', KEYS[1], 'caller')
  if current and current ~= caller then return 0 end
  if not current then
    redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now)
    if redis.call('ZCARD', KEYS[4]) >= tonumber(ARGV[10]) then return -1 end
    redis.call('HSET', KEYS[1], 'caller', caller, 'ctx', ARGV[3], 'state', '', 'stamp', '')
  elseif ARGV[3] ~= '' and redis.call('HGET', KEYS[1], 'ctx') == '' then
    redis.call('HSET', KEYS[1], 'ctx', ARGV[3])
  end
  if ARGV[4] == '1' then
    redis.call('HSET', KEYS[1], 'state', ARGV[5], 'stamp', ARGV[6], 'status', ARGV[7])
  end
  redis.call('PEXPIRE', KEYS[1], ttl)
  redis.call('SADD', KEYS[3], ARGV[12])
  if redis.call('PTTL', KEYS[3]) < ctx_ttl then redis.call('PEXPIRE', KEYS[3], ctx_ttl) end
  redis.call('ZADD', KEYS[4], now + ttl, ARGV[11])
  if redis.call('PTTL', KEYS[4]) < ctx_ttl then redis.call('PEXPIRE', KEYS[4], ctx_ttl) end
end
if ARGV[3] ~= '' then
  local current = redis.call('GET', KEYS[2])
  if not current then
    redis.call('SET', KEYS[2], owner, 'PX', ctx_ttl)
  elseif current == owner then
    redis.call('PEXPIRE', KEYS[2], ctx_ttl)
  end
end
return 1
";

/// Room. KEYS: tenant set. ARGV: tenant cap. Returns 1 when the tenant is below its cap.
const ROOM: &str = r"
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[1]) then return 1 end
return 0
";

/// Evict. KEYS: task, index, tenant set. ARGV: task id, tenant member.
const EVICT: &str = r"
redis.call('DEL', KEYS[1])
redis.call('SREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[2])
return 1
";

/// The ledger in Redis.
pub(crate) struct RedisLedger {
    connection: ConnectionManager,
    namespace: String,
    command_timeout: Duration,
    config: LedgerConfig,
    record: Script,
    room: Script,
    evict: Script,
}

async fn bounded<T>(
    limit: Duration,
    operation: impl Future<Output = RedisResult<T>>,
) -> Result<T, LedgerError> {
    crate::session::redis_wire::bounded(limit, operation)
        .await
        .map_err(|failed| LedgerError::Unavailable(failed.into_text()))
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis())
        .unwrap_or(u64::MAX)
        .max(1)
}

impl RedisLedger {
    /// A ledger on `connection` (`namespace` is `sluice:{prefix}:`).
    pub(crate) fn new(
        connection: ConnectionManager,
        namespace: String,
        command_timeout: Duration,
        config: LedgerConfig,
    ) -> Self {
        RedisLedger {
            connection,
            namespace,
            command_timeout,
            config,
            record: Script::new(RECORD),
            room: Script::new(ROOM),
            evict: Script::new(EVICT),
        }
    }

    fn agent_part(key: &AgentKey) -> String {
        format!(
            "{}:{}:{}",
            component(&key.tenant),
            component(&key.client),
            component(&key.agent)
        )
    }

    fn task_key(&self, key: &AgentKey, task_id: &str) -> String {
        format!(
            "{}a2a:rtask:{}:{}",
            self.namespace,
            Self::agent_part(key),
            component(task_id)
        )
    }

    fn context_key(&self, key: &AgentKey, context_id: &str) -> String {
        format!(
            "{}a2a:rctx:{}:{}",
            self.namespace,
            Self::agent_part(key),
            component(context_id)
        )
    }

    fn index_key(&self, key: &AgentKey, caller: &str) -> String {
        format!(
            "{}a2a:rindex:{}:{}",
            self.namespace,
            Self::agent_part(key),
            component(caller)
        )
    }

    fn tenant_key(&self, tenant: &str) -> String {
        format!("{}a2a:rtenant:{}", self.namespace, component(tenant))
    }

    fn tenant_member(key: &AgentKey, task_id: &str) -> String {
        format!(
            "{}:{}:{}",
            component(&key.client),
            component(&key.agent),
            component(task_id)
        )
    }

    pub(crate) async fn owns_task(
        &self,
        key: &AgentKey,
        caller: &str,
        task_id: &str,
    ) -> Result<bool, LedgerError> {
        let mut connection = self.connection.clone();
        let owner: Option<String> = bounded(
            self.command_timeout,
            redis::cmd("HGET")
                .arg(self.task_key(key, task_id))
                .arg("caller")
                .query_async(&mut connection),
        )
        .await?;
        Ok(owner.as_deref() == Some(caller))
    }

    pub(crate) async fn owns_context(
        &self,
        key: &AgentKey,
        caller: &str,
        context_id: &str,
    ) -> Result<bool, LedgerError> {
        let mut connection = self.connection.clone();
        let owner: Option<String> = bounded(
            self.command_timeout,
            redis::cmd("GET")
                .arg(self.context_key(key, context_id))
                .query_async(&mut connection),
        )
        .await?;
        Ok(owner.as_deref() == Some(caller))
    }

    pub(crate) async fn has_room(&self, tenant: &str) -> Result<bool, LedgerError> {
        let mut connection = self.connection.clone();
        let mut invocation = self.room.key(self.tenant_key(tenant));
        invocation.arg(self.config.max_tasks_per_tenant);
        let room: i64 = bounded(
            self.command_timeout,
            invocation.invoke_async(&mut connection),
        )
        .await?;
        Ok(room == 1)
    }

    pub(crate) async fn record(
        &self,
        key: &AgentKey,
        caller: &str,
        seen: &Seen,
    ) -> Result<(), LedgerError> {
        let task_id = seen.task_id.as_deref().unwrap_or_default();
        let context_id = seen.context_id.as_deref().unwrap_or_default();
        let ttl = if seen.state.is_terminal() {
            self.config.terminal_ttl
        } else {
            self.config.active_ttl
        };
        let context_ttl = self.config.active_ttl.max(ttl);
        let has_state = seen.state != TaskState::Unspecified;
        let status = seen.status.as_deref().unwrap_or_default();
        let mut invocation = self.record.key(self.task_key(key, task_id));
        invocation
            .key(self.context_key(key, context_id))
            .key(self.index_key(key, caller))
            .key(self.tenant_key(&key.tenant))
            .arg(caller)
            .arg(u8::from(seen.task_id.is_some()))
            .arg(context_id)
            .arg(u8::from(has_state))
            .arg(if has_state { seen.state.as_v1() } else { "" })
            .arg(&seen.stamp)
            .arg(status)
            .arg(millis(ttl))
            .arg(millis(context_ttl))
            .arg(self.config.max_tasks_per_tenant)
            .arg(Self::tenant_member(key, task_id))
            .arg(task_id);
        let mut connection = self.connection.clone();
        let written: i64 = bounded(
            self.command_timeout,
            invocation.invoke_async(&mut connection),
        )
        .await?;
        match written {
            -1 => Err(LedgerError::Full),
            _ => Ok(()),
        }
    }

    pub(crate) async fn evict_task(
        &self,
        key: &AgentKey,
        task_id: &str,
    ) -> Result<(), LedgerError> {
        let mut connection = self.connection.clone();
        let owner: Option<String> = bounded(
            self.command_timeout,
            redis::cmd("HGET")
                .arg(self.task_key(key, task_id))
                .arg("caller")
                .query_async(&mut connection),
        )
        .await?;
        let Some(owner) = owner else {
            return Ok(());
        };
        let mut invocation = self.evict.key(self.task_key(key, task_id));
        invocation
            .key(self.index_key(key, &owner))
            .key(self.tenant_key(&key.tenant))
            .arg(task_id)
            .arg(Self::tenant_member(key, task_id));
        let _: i64 = bounded(
            self.command_timeout,
            invocation.invoke_async(&mut connection),
        )
        .await?;
        Ok(())
    }

    pub(crate) async fn list(
        &self,
        key: &AgentKey,
        caller: &str,
        query: &ListQuery,
    ) -> Result<EntryPage, LedgerError> {
        let index = self.index_key(key, caller);
        let mut connection = self.connection.clone();
        let ids: Vec<String> = bounded(
            self.command_timeout,
            redis::cmd("SMEMBERS")
                .arg(&index)
                .query_async(&mut connection),
        )
        .await?;
        let mut entries = Vec::with_capacity(ids.len());
        let mut gone = Vec::new();
        for batch in ids.chunks(256) {
            let mut pipe = redis::pipe();
            for id in batch {
                pipe.cmd("HMGET")
                    .arg(self.task_key(key, id))
                    .arg("caller")
                    .arg("ctx")
                    .arg("state")
                    .arg("stamp")
                    .arg("status");
            }
            type Row = (
                Option<String>,
                Option<String>,
                Option<String>,
                Option<String>,
                Option<Vec<u8>>,
            );
            let rows: Vec<Row> =
                bounded(self.command_timeout, pipe.query_async(&mut connection)).await?;
            for (id, (owner, ctx, state, stamp, status)) in batch.iter().zip(rows) {
                if owner.as_deref() != Some(caller) {
                    gone.push(id.clone());
                    continue;
                }
                entries.push(Entry {
                    task_id: id.clone(),
                    context_id: ctx.unwrap_or_default(),
                    state: TaskState::parse(state.as_deref().unwrap_or_default()),
                    stamp: stamp.unwrap_or_default(),
                    status: status.filter(|s| !s.is_empty()).map(Bytes::from),
                });
            }
        }
        if !gone.is_empty() {
            // Best effort: a member left behind is pruned again next time.
            let _ = bounded(
                self.command_timeout,
                redis::cmd("SREM")
                    .arg(&index)
                    .arg(&gone)
                    .query_async::<i64>(&mut connection),
            )
            .await;
        }
        page(entries, query)
    }

    fn relay_key(&self, relay_id: &str) -> String {
        format!("{}a2a:relay:{}", self.namespace, component(relay_id))
    }

    fn relay_task_key(&self, key: &AgentKey, task_id: &str) -> String {
        format!(
            "{}a2a:rrelay:{}:{}",
            self.namespace,
            Self::agent_part(key),
            component(task_id)
        )
    }

    pub(crate) async fn relay_for_task(
        &self,
        key: &AgentKey,
        task_id: &str,
    ) -> Result<Option<RelayRecord>, LedgerError> {
        let mut connection = self.connection.clone();
        let relay_id: Option<String> = bounded(
            self.command_timeout,
            redis::cmd("GET")
                .arg(self.relay_task_key(key, task_id))
                .query_async(&mut connection),
        )
        .await?;
        match relay_id {
            Some(relay_id) => self.relay_by_id(&relay_id).await,
            None => Ok(None),
        }
    }

    pub(crate) async fn relay_by_id(
        &self,
        relay_id: &str,
    ) -> Result<Option<RelayRecord>, LedgerError> {
        let mut connection = self.connection.clone();
        let json: Option<Vec<u8>> = bounded(
            self.command_timeout,
            redis::cmd("GET")
                .arg(self.relay_key(relay_id))
                .query_async(&mut connection),
        )
        .await?;
        match json {
            None => Ok(None),
            Some(json) => serde_json::from_slice(&json)
                .map(Some)
                .map_err(|err| LedgerError::Unavailable(format!("unreadable relay record: {err}"))),
        }
    }

    pub(crate) async fn relay_put(&self, relay: &RelayRecord) -> Result<(), LedgerError> {
        let json =
            serde_json::to_vec(relay).map_err(|err| LedgerError::Unavailable(err.to_string()))?;
        let ttl = millis(if relay.finished {
            self.config.terminal_ttl
        } else {
            self.config.active_ttl
        });
        let mut pipe = redis::pipe();
        pipe.cmd("SET")
            .arg(self.relay_key(&relay.relay_id))
            .arg(json)
            .arg("PX")
            .arg(ttl)
            .ignore();
        if let Some(task_id) = &relay.task_id {
            let key = AgentKey {
                tenant: relay.tenant.as_str().into(),
                client: relay.client.as_str().into(),
                agent: relay.agent.as_str().into(),
            };
            pipe.cmd("SET")
                .arg(self.relay_task_key(&key, task_id))
                .arg(&relay.relay_id)
                .arg("PX")
                .arg(ttl)
                .ignore();
        }
        let mut connection = self.connection.clone();
        bounded(
            self.command_timeout,
            pipe.query_async::<()>(&mut connection),
        )
        .await
    }

    pub(crate) async fn relay_delete(&self, relay: &RelayRecord) -> Result<(), LedgerError> {
        let mut keys = vec![self.relay_key(&relay.relay_id)];
        if let Some(task_id) = &relay.task_id {
            let key = AgentKey {
                tenant: relay.tenant.as_str().into(),
                client: relay.client.as_str().into(),
                agent: relay.agent.as_str().into(),
            };
            keys.push(self.relay_task_key(&key, task_id));
        }
        let mut connection = self.connection.clone();
        bounded(
            self.command_timeout,
            redis::cmd("DEL")
                .arg(keys)
                .query_async::<i64>(&mut connection),
        )
        .await
        .map(drop)
    }
}
