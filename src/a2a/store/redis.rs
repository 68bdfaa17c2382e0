//! The Redis task store: task snapshots, their event logs, the per-tenant cap, each caller's
//! task index and push configurations, shared by every instance configured with the same
//! `[cluster]` Redis and prefix.
//!
//! Layout (under `sluice:{prefix}:`; `{t}` tenant, `{c}` client, `{s}` caller, `{id}` task
//! id, each escaped so `:` always separates components):
//! - `a2a:task:{t}:{id}`: a hash: `owner` (`{c}\n{s}`), `json` (the snapshot), `version`,
//!   `last` (stream id of the last event), `terminal` (0/1), `updated` (status time, ms), and
//!   `state`, `context`, `stamp` (status timestamp) so `ListTasks` filters without parsing
//!   snapshots. Its TTL is `active_ttl` from creation, `retain_terminal` once terminal.
//! - `a2a:events:{t}:{id}`: a stream of the task's events `{v: version, e: StreamResponse
//!   JSON}`, `MAXLEN ~ max_events_per_task`, the same TTL as the task.
//! - `a2a:tenant:{t}`: a sorted set task id → expiry deadline (server ms), the tenant cap.
//! - `a2a:index:{t}:{c}:{s}`: a sorted set task id → status time (ms), what `ListTasks`
//!   reads; members whose task is gone are pruned when read.
//! - `a2a:push:{t}:{id}`: a hash `c:{config id}` → `{n} {JSON}` plus the counter `n` (the
//!   insertion order), the same TTL as the task.
//!
//! Writes: `Task::apply` runs in Rust, so every change is read → apply → compare-and-set
//! script (`scripts.rs`) that checks owner and version and writes snapshot, version, log
//! position and the event together, retried on a lost race. Reads that need the owner check
//! read the `owner` field in the same round trip. Subscribers and cancel waiters poll Redis
//! (`feed.rs`); events written by this instance wake them at once.
//!
//! Every command is bounded by the command timeout; a timeout or any Redis error is
//! [`StoreError::Unavailable`]. Must not block a multiplexed connection (no `XREAD BLOCK`),
//! know HTTP or JSON-RPC, or run tasks.

use crate::session::redis_wire::component;
use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use parking_lot::Mutex;
use redis::aio::ConnectionManager;
use redis::RedisResult;

use super::{
    Appended, CancelOutcome, ListQuery, Owner, Paging, StoreError, StoredTask, TaskPage,
    TaskStoreConfig,
};
use crate::a2a::model::{
    now_timestamp, StreamResponse, Task, TaskState, TaskStatus, TaskStatusUpdateEvent,
};
use crate::shard::FastMap;

mod feed;
mod format;
mod scripts;

use format::{owner_field, push_field, push_value, stamp_millis};

use feed::Wakers;
pub(crate) use feed::{RedisCancel, RedisFeed};
use scripts::Scripts;

/// Attempts of a compare-and-set that keeps losing to concurrent writers before `append` or
/// `cancel` gives up with [`StoreError::Conflict`].
const CAS_ATTEMPTS: usize = 32;

/// Longest pause between two compare-and-set attempts (a random share of it is slept, so
/// two losers do not collide again).
const CAS_PAUSE: Duration = Duration::from_millis(2);

/// Tasks whose list fields are read per round trip by `list`.
const LIST_BATCH: usize = 256;

/// Runs one Redis operation bounded by `limit` (the session store's bound); a timeout or any
/// Redis error is [`StoreError::Unavailable`] (the text never holds the URL).
async fn bounded<T>(
    limit: Duration,
    operation: impl Future<Output = RedisResult<T>>,
) -> Result<T, StoreError> {
    crate::session::redis_wire::bounded(limit, operation)
        .await
        .map_err(|failed| StoreError::Unavailable(failed.into_text()))
}

/// A record Redis holds that does not read back (written by a newer build, or damaged).
fn unreadable(error: impl std::fmt::Display) -> StoreError {
    StoreError::Unavailable(format!("unreadable task record: {error}"))
}

fn to_json<T: serde::Serialize>(value: &T) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(unreadable)
}

/// Milliseconds for a PEXPIRE: at least 1 (0 would delete at once), saturating.
fn ttl_millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis())
        .unwrap_or(u64::MAX)
        .max(1)
}

// === impl RedisTasks ===

/// The task store in Redis; cheap to clone (one `Arc`).
#[derive(Clone)]
pub(crate) struct RedisTasks {
    inner: Arc<Inner>,
}

/// What the store, its subscriptions and its cancel signals share.
struct Inner {
    /// Multiplexed, self-reconnecting connection; cloned per command. Never given a blocking
    /// command: it carries every other command of the store.
    connection: ConnectionManager,
    scripts: Scripts,
    /// `sluice:{prefix}:`.
    namespace: String,
    command_timeout: Duration,
    config: TaskStoreConfig,
    /// Subscribers and cancel waiters of this instance, by task: what a write here wakes.
    wakers: Arc<Wakers>,
    /// Tasks per tenant as last counted, for tenants this instance created tasks for.
    counts: Mutex<FastMap<Arc<str>, usize>>,
    /// Whether a recount started by `refresh_counts` is running.
    recounting: AtomicBool,
}

impl std::fmt::Debug for RedisTasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisTasks")
            .field("namespace", &self.inner.namespace)
            .field("config", &self.inner.config)
            .field("command_timeout", &self.inner.command_timeout)
            .finish_non_exhaustive()
    }
}

/// The keys of one task.
struct TaskKeys {
    task: String,
    events: String,
    push: String,
}

/// A task as `append` and `cancel` read it before their compare-and-set.
struct Current {
    task: Task,
    version: u64,
    terminal: bool,
}

/// What the compare-and-set did.
enum Cas {
    Written,
    NotFound,
    /// Another writer got there first (or made it terminal): read again.
    Moved,
}

impl RedisTasks {
    /// A store on `connection` (not checked: see [`RedisTasks::ping`]).
    pub(crate) fn new(
        connection: ConnectionManager,
        namespace: String,
        command_timeout: Duration,
        config: TaskStoreConfig,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                connection,
                scripts: Scripts::new(),
                namespace,
                command_timeout,
                config,
                wakers: Arc::default(),
                counts: Mutex::new(FastMap::default()),
                recounting: AtomicBool::new(false),
            }),
        }
    }

    /// One `PING`.
    pub(crate) async fn ping(&self) -> Result<(), StoreError> {
        let mut connection = self.inner.connection.clone();
        bounded(
            self.inner.command_timeout,
            redis::cmd("PING").query_async::<()>(&mut connection),
        )
        .await
    }

    /// See `TaskStore::create`: cap check, id check and every write in one script.
    pub(crate) async fn create(&self, owner: &Owner, task: &Task) -> Result<u64, StoreError> {
        let inner = &*self.inner;
        let keys = inner.task_keys(&owner.tenant, &task.id);
        let terminal = task.status.state.is_terminal();
        let ttl = if terminal {
            inner.config.retain_terminal
        } else {
            inner.config.active_ttl
        };
        let stamp = task.status.timestamp.as_deref().unwrap_or_default();
        let json = to_json(task)?;
        let event = to_json(&StreamResponse::Task(task.clone()))?;
        let mut invocation = inner.scripts.create.key(&keys.task);
        invocation
            .key(&keys.events)
            .key(inner.tenant_key(&owner.tenant))
            .key(inner.index_key(owner))
            .key(&keys.push)
            .arg(inner.config.max_tasks_per_tenant)
            .arg(owner_field(owner))
            .arg(json)
            .arg(event)
            .arg(u8::from(terminal))
            .arg(stamp_millis(stamp))
            .arg(task.status.state.as_v1())
            .arg(&task.context_id)
            .arg(stamp)
            .arg(inner.config.max_events_per_task.max(1))
            .arg(ttl_millis(ttl))
            .arg(&task.id);
        let count: i64 = inner.invoke(&invocation).await?;
        match count {
            -1 => Err(StoreError::Full),
            -2 => Err(StoreError::Conflict),
            count => {
                let count = usize::try_from(count).unwrap_or(0);
                inner.counts.lock().insert(owner.tenant.clone(), count);
                Ok(1)
            }
        }
    }

    /// See `TaskStore::get`.
    pub(crate) async fn get(
        &self,
        owner: &Owner,
        id: &str,
    ) -> Result<Option<StoredTask>, StoreError> {
        Ok(self.inner.read(owner, id).await?.map(|current| StoredTask {
            task: current.task,
            version: current.version,
        }))
    }

    /// See `TaskStore::append`.
    pub(crate) async fn append(
        &self,
        owner: &Owner,
        id: &str,
        event: &StreamResponse,
    ) -> Result<Appended, StoreError> {
        let inner = &*self.inner;
        let event_json = to_json(event)?;
        for attempt in 0..CAS_ATTEMPTS {
            if attempt > 0 {
                cas_pause().await;
            }
            let Some(current) = inner.read(owner, id).await? else {
                return Ok(Appended::NotFound);
            };
            if current.terminal {
                return Ok(Appended::Terminal(Box::new(current.task)));
            }
            let mut task = current.task;
            task.apply(event);
            match inner
                .write(owner, id, current.version, &task, &event_json)
                .await?
            {
                Cas::Written => {
                    let key = inner.task_key(&owner.tenant, id);
                    inner
                        .wakers
                        .wake(&key, task.status.state == TaskState::Canceled);
                    return Ok(Appended::Applied(current.version + 1));
                }
                Cas::NotFound => return Ok(Appended::NotFound),
                Cas::Moved => continue,
            }
        }
        Err(StoreError::Conflict)
    }

    /// See `TaskStore::cancel`. The cancel signal of a runner on this instance fires at once;
    /// one on another instance sees the CANCELED state at its next poll.
    pub(crate) async fn cancel(
        &self,
        owner: &Owner,
        id: &str,
    ) -> Result<CancelOutcome, StoreError> {
        let inner = &*self.inner;
        for attempt in 0..CAS_ATTEMPTS {
            if attempt > 0 {
                cas_pause().await;
            }
            let Some(current) = inner.read(owner, id).await? else {
                return Ok(CancelOutcome::NotFound);
            };
            if current.terminal {
                return Ok(CancelOutcome::NotCancelable(current.task));
            }
            let mut task = current.task;
            let event = StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
                task_id: task.id.clone(),
                context_id: task.context_id.clone(),
                status: TaskStatus {
                    state: TaskState::Canceled,
                    message: None,
                    timestamp: Some(now_timestamp()),
                    extra: Default::default(),
                },
                metadata: None,
                extra: Default::default(),
            });
            task.apply(&event);
            let event_json = to_json(&event)?;
            match inner
                .write(owner, id, current.version, &task, &event_json)
                .await?
            {
                Cas::Written => {
                    inner.wakers.wake(&inner.task_key(&owner.tenant, id), true);
                    return Ok(CancelOutcome::Canceled(task));
                }
                Cas::NotFound => return Ok(CancelOutcome::NotFound),
                Cas::Moved => continue,
            }
        }
        Err(StoreError::Conflict)
    }

    /// See `TaskStore::cancelled`: registers the waiter now, reads Redis when awaited.
    pub(crate) fn cancelled(&self, owner: &Owner, id: &str) -> RedisCancel {
        let key = self.inner.task_key(&owner.tenant, id);
        let wake = self.inner.wakers.register(&key);
        RedisCancel::new(self.clone(), key, owner_field(owner), wake)
    }

    /// See `TaskStore::subscribe`: the snapshot, its version and its log position in one
    /// read, then the log after that position.
    pub(crate) async fn subscribe(
        &self,
        owner: &Owner,
        id: &str,
    ) -> Result<Option<(Task, RedisFeed)>, StoreError> {
        let inner = &*self.inner;
        let keys = inner.task_keys(&owner.tenant, id);
        let mut connection = inner.connection.clone();
        let (stored_owner, json, version, last): (
            Option<String>,
            Option<String>,
            Option<u64>,
            Option<String>,
        ) = bounded(
            inner.command_timeout,
            redis::cmd("HMGET")
                .arg(&keys.task)
                .arg(&["owner", "json", "version", "last"])
                .query_async(&mut connection),
        )
        .await?;
        if stored_owner.as_deref() != Some(owner_field(owner).as_str()) {
            return Ok(None);
        }
        let (Some(json), Some(version), Some(last)) = (json, version, last) else {
            return Ok(None);
        };
        let snapshot: Task = serde_json::from_str(&json).map_err(unreadable)?;
        let ended = StreamResponse::Task(snapshot.clone()).ends_stream();
        let wake = (!ended).then(|| inner.wakers.register(&keys.task));
        let feed = RedisFeed::new(self.clone(), keys.task, keys.events, last, version, wake);
        Ok(Some((snapshot, feed)))
    }

    /// See `TaskStore::list`: the caller's index, then the list fields of each task (pruning
    /// the gone), filtered and sorted here, then the snapshots of the page only.
    pub(crate) async fn list(&self, owner: &Owner, q: &ListQuery) -> Result<TaskPage, StoreError> {
        let inner = &*self.inner;
        let paging = Paging::new(q)?;
        let index = inner.index_key(owner);
        let field = owner_field(owner);
        let mut connection = inner.connection.clone();
        let ids: Vec<String> = bounded(
            inner.command_timeout,
            redis::cmd("ZREVRANGE")
                .arg(&index)
                .arg(0)
                .arg(-1)
                .query_async(&mut connection),
        )
        .await?;
        let mut matches = Vec::new();
        let mut gone = Vec::new();
        for batch in ids.chunks(LIST_BATCH) {
            let mut pipeline = redis::pipe();
            for id in batch {
                pipeline
                    .cmd("HMGET")
                    .arg(inner.task_key(&owner.tenant, id))
                    .arg(&["owner", "context", "state", "stamp"]);
            }
            type Row = (
                Option<String>,
                Option<String>,
                Option<String>,
                Option<String>,
            );
            let rows: Vec<Row> =
                bounded(inner.command_timeout, pipeline.query_async(&mut connection)).await?;
            for (id, (stored_owner, context, state, stamp)) in batch.iter().zip(rows) {
                // Gone, or the id now names another owner's task: not this caller's any more.
                if stored_owner.as_deref() != Some(field.as_str()) {
                    gone.push(id.as_str());
                    continue;
                }
                let state = TaskState::parse(state.as_deref().unwrap_or_default());
                let stamp = stamp.unwrap_or_default();
                if q.matches(context.as_deref().unwrap_or_default(), state, &stamp) {
                    matches.push((stamp, id.clone(), id.clone()));
                }
            }
        }
        if !gone.is_empty() {
            // Best effort: a member left behind is pruned by the next list.
            let _ = bounded(
                inner.command_timeout,
                redis::cmd("ZREM")
                    .arg(&index)
                    .arg(&gone)
                    .query_async::<()>(&mut connection),
            )
            .await;
        }
        // Paged on the list fields; only the page's snapshots are read.
        let (page, next_page_token, total_size) = paging.page(matches);
        let mut tasks = Vec::with_capacity(page.len());
        if !page.is_empty() {
            let mut pipeline = redis::pipe();
            for id in &page {
                pipeline
                    .cmd("HGET")
                    .arg(inner.task_key(&owner.tenant, id))
                    .arg("json");
            }
            let snapshots: Vec<Option<String>> =
                bounded(inner.command_timeout, pipeline.query_async(&mut connection)).await?;
            // A task that expired between the two reads is left out of the page.
            for json in snapshots.into_iter().flatten() {
                tasks.push(serde_json::from_str(&json).map_err(unreadable)?);
            }
        }
        Ok(TaskPage {
            tasks,
            next_page_token,
            total_size,
            page_size: paging.page_size,
        })
    }

    /// See `TaskStore::put_push`.
    pub(crate) async fn put_push(
        &self,
        owner: &Owner,
        task_id: &str,
        config_id: &str,
        json: &[u8],
    ) -> Result<bool, StoreError> {
        let inner = &*self.inner;
        let keys = inner.task_keys(&owner.tenant, task_id);
        let mut invocation = inner.scripts.put_push.key(&keys.task);
        invocation
            .key(&keys.push)
            .arg(owner_field(owner))
            .arg(push_field(config_id))
            .arg(json)
            .arg(inner.config.max_push_configs_per_task);
        match inner.invoke::<i64>(&invocation).await? {
            0 => Ok(false),
            2 => Err(StoreError::TooManyPushConfigs),
            _ => Ok(true),
        }
    }

    /// See `TaskStore::get_push`.
    pub(crate) async fn get_push(
        &self,
        owner: &Owner,
        task_id: &str,
        config_id: &str,
    ) -> Result<Option<Bytes>, StoreError> {
        let inner = &*self.inner;
        let keys = inner.task_keys(&owner.tenant, task_id);
        let mut pipeline = redis::pipe();
        pipeline
            .cmd("HGET")
            .arg(&keys.task)
            .arg("owner")
            .cmd("HGET")
            .arg(&keys.push)
            .arg(push_field(config_id));
        let mut connection = inner.connection.clone();
        let (stored_owner, value): (Option<String>, Option<Vec<u8>>) =
            bounded(inner.command_timeout, pipeline.query_async(&mut connection)).await?;
        if stored_owner.as_deref() != Some(owner_field(owner).as_str()) {
            return Ok(None);
        }
        Ok(value.as_deref().and_then(push_value).map(|(_, json)| json))
    }

    /// See `TaskStore::list_push`.
    pub(crate) async fn list_push(
        &self,
        owner: &Owner,
        task_id: &str,
    ) -> Result<Option<Vec<Bytes>>, StoreError> {
        let inner = &*self.inner;
        let keys = inner.task_keys(&owner.tenant, task_id);
        let mut pipeline = redis::pipe();
        pipeline
            .cmd("HGET")
            .arg(&keys.task)
            .arg("owner")
            .cmd("HGETALL")
            .arg(&keys.push);
        let mut connection = inner.connection.clone();
        let (stored_owner, fields): (Option<String>, HashMap<Vec<u8>, Vec<u8>>) =
            bounded(inner.command_timeout, pipeline.query_async(&mut connection)).await?;
        if stored_owner.as_deref() != Some(owner_field(owner).as_str()) {
            return Ok(None);
        }
        let mut configs: Vec<(u64, Bytes)> = fields
            .iter()
            .filter(|(field, _)| field.starts_with(b"c:"))
            .filter_map(|(_, value)| push_value(value))
            .collect();
        configs.sort_by_key(|(seq, _)| *seq);
        Ok(Some(configs.into_iter().map(|(_, json)| json).collect()))
    }

    /// See `TaskStore::delete_push`.
    pub(crate) async fn delete_push(
        &self,
        owner: &Owner,
        task_id: &str,
        config_id: &str,
    ) -> Result<bool, StoreError> {
        let inner = &*self.inner;
        let keys = inner.task_keys(&owner.tenant, task_id);
        let mut invocation = inner.scripts.delete_push.key(&keys.task);
        invocation
            .key(&keys.push)
            .arg(owner_field(owner))
            .arg(push_field(config_id));
        Ok(inner.invoke::<i64>(&invocation).await? == 1)
    }

    /// The sum of [`RedisTasks::counts`].
    pub(crate) fn len(&self) -> usize {
        self.inner.counts.lock().values().sum()
    }

    /// Tasks per tenant (all instances' tasks), for the tenants this instance created tasks
    /// for, as counted at this instance's last create in the tenant or last recount
    /// ([`RedisTasks::refresh_counts`]); tenants with none left are dropped at the recount.
    pub(crate) fn counts(&self) -> Vec<(Arc<str>, usize)> {
        self.inner
            .counts
            .lock()
            .iter()
            .map(|(tenant, n)| (tenant.clone(), *n))
            .collect()
    }

    /// Starts a recount of [`RedisTasks::counts`] in the background (one script), unless one
    /// is running or there is no runtime. The janitor's sweep calls it: Redis expires the
    /// tasks themselves.
    pub(crate) fn refresh_counts(&self) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if self.inner.recounting.swap(true, Ordering::AcqRel) {
            return;
        }
        let store = self.clone();
        runtime.spawn(async move {
            let _ = store.recount().await;
            store.inner.recounting.store(false, Ordering::Release);
        });
    }

    async fn recount(&self) -> Result<(), StoreError> {
        let inner = &*self.inner;
        let tenants: Vec<Arc<str>> = inner.counts.lock().keys().cloned().collect();
        if tenants.is_empty() {
            return Ok(());
        }
        let mut invocation = inner.scripts.counts.prepare_invoke();
        for tenant in &tenants {
            invocation.key(inner.tenant_key(tenant));
        }
        let counts: Vec<i64> = inner.invoke(&invocation).await?;
        let mut held = inner.counts.lock();
        for (tenant, count) in tenants.into_iter().zip(counts) {
            match usize::try_from(count) {
                Ok(count) if count > 0 => {
                    held.insert(tenant, count);
                }
                _ => {
                    held.remove(&tenant);
                }
            }
        }
        Ok(())
    }
}

// === impl Inner ===

impl Inner {
    fn task_key(&self, tenant: &str, id: &str) -> String {
        format!(
            "{}a2a:task:{}:{}",
            self.namespace,
            component(tenant),
            component(id)
        )
    }

    fn task_keys(&self, tenant: &str, id: &str) -> TaskKeys {
        let (tenant, id) = (component(tenant), component(id));
        let ns = &self.namespace;
        TaskKeys {
            task: format!("{ns}a2a:task:{tenant}:{id}"),
            events: format!("{ns}a2a:events:{tenant}:{id}"),
            push: format!("{ns}a2a:push:{tenant}:{id}"),
        }
    }

    fn tenant_key(&self, tenant: &str) -> String {
        format!("{}a2a:tenant:{}", self.namespace, component(tenant))
    }

    fn index_key(&self, owner: &Owner) -> String {
        format!(
            "{}a2a:index:{}:{}:{}",
            self.namespace,
            component(&owner.tenant),
            component(&owner.client),
            component(&owner.caller)
        )
    }

    async fn invoke<T: redis::FromRedisValue>(
        &self,
        invocation: &redis::ScriptInvocation<'_>,
    ) -> Result<T, StoreError> {
        let mut connection = self.connection.clone();
        bounded(
            self.command_timeout,
            invocation.invoke_async(&mut connection),
        )
        .await
    }

    /// The owner's task, its version and whether it is terminal; `None` when missing or
    /// another owner's.
    async fn read(&self, owner: &Owner, id: &str) -> Result<Option<Current>, StoreError> {
        let mut connection = self.connection.clone();
        let (stored_owner, json, version, terminal): (
            Option<String>,
            Option<String>,
            Option<u64>,
            Option<String>,
        ) = bounded(
            self.command_timeout,
            redis::cmd("HMGET")
                .arg(self.task_key(&owner.tenant, id))
                .arg(&["owner", "json", "version", "terminal"])
                .query_async(&mut connection),
        )
        .await?;
        if stored_owner.as_deref() != Some(owner_field(owner).as_str()) {
            return Ok(None);
        }
        let (Some(json), Some(version)) = (json, version) else {
            return Ok(None);
        };
        let task = serde_json::from_str(&json).map_err(unreadable)?;
        Ok(Some(Current {
            task,
            version,
            terminal: terminal.as_deref() == Some("1"),
        }))
    }

    /// The compare-and-set of `task` (the snapshot at `version` with the event applied) and
    /// its event.
    async fn write(
        &self,
        owner: &Owner,
        id: &str,
        version: u64,
        task: &Task,
        event_json: &str,
    ) -> Result<Cas, StoreError> {
        let keys = self.task_keys(&owner.tenant, id);
        let stamp = task.status.timestamp.as_deref().unwrap_or_default();
        let mut invocation = self.scripts.append.key(&keys.task);
        invocation
            .key(&keys.events)
            .key(self.tenant_key(&owner.tenant))
            .key(self.index_key(owner))
            .key(&keys.push)
            .arg(owner_field(owner))
            .arg(version)
            .arg(to_json(task)?)
            .arg(event_json)
            .arg(version + 1)
            .arg(u8::from(task.status.state.is_terminal()))
            .arg(stamp_millis(stamp))
            .arg(task.status.state.as_v1())
            .arg(&task.context_id)
            .arg(stamp)
            .arg(self.config.max_events_per_task.max(1))
            .arg(ttl_millis(self.config.retain_terminal))
            .arg(id);
        Ok(match self.invoke::<i64>(&invocation).await? {
            0 => Cas::Written,
            1 => Cas::NotFound,
            _ => Cas::Moved,
        })
    }
}

/// A random pause below [`CAS_PAUSE`].
async fn cas_pause() {
    let micros = u64::try_from(CAS_PAUSE.as_micros()).unwrap_or(1000);
    tokio::time::sleep(Duration::from_micros(rand::random_range(0..=micros))).await;
}

#[cfg(test)]
mod tests;

/// Test hooks into a Redis store's local state.
#[cfg(test)]
pub(super) mod tests_support {
    use super::super::TaskStore;

    /// Overwrites the count last seen for `tenant` (to check that a recount replaces it).
    pub(crate) fn set_count(store: &TaskStore, tenant: &str, count: usize) {
        if let TaskStore::Redis(store) = store {
            store.inner.counts.lock().insert(tenant.into(), count);
        }
    }
}
