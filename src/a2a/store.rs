//! The A2A task store: task snapshots with their version, the cancel signal, the live event
//! feed for subscribers, and each task's push configurations (stored opaque; the push module
//! owns their shape).
//!
//! Callers use the [`TaskStore`] front, an enum over the implementations with inherent async
//! methods (the shape of `crate::session::Sessions`). `local.rs` keeps everything in this
//! process; `redis.rs` (+ `redis/`) keeps it in Redis, so that with `[cluster]` configured any
//! instance answers `GetTask`, `ListTasks`, `CancelTask` and `SubscribeToTask` for a task
//! running on another. Every read and write is scoped by an [`Owner`]: another owner's task
//! reads exactly like a missing one, so ids cannot be probed.
//!
//! [`Subscription`] and [`CancelSignal`] hold either implementation's feed and signal behind
//! the same methods; the `ListTasks` filters and the page cursor are here, shared by both, so
//! both page identically.
//!
//! Must not know HTTP, JSON-RPC envelopes or how a task is run; it only records what the
//! runner reports (`Task::apply` in `model.rs` is the one place an event changes a snapshot).

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use bytes::Bytes;

use super::model::{StreamResponse, Task, TaskState};

mod local;
mod redis;
#[cfg(test)]
mod tests;

pub(crate) use local::LocalTasks;
pub(crate) use redis::RedisTasks;

/// Who a task belongs to: the tenant, its client application and the authenticated caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Owner {
    pub tenant: Arc<str>,
    pub client: Arc<str>,
    pub caller: Arc<str>,
}

/// Limits of the store.
#[derive(Debug, Clone)]
pub(crate) struct TaskStoreConfig {
    /// Tasks (live and retained terminal) per tenant; `create` beyond it fails with
    /// [`StoreError::Full`].
    pub max_tasks_per_tenant: usize,
    /// How long a terminal task stays readable after it ended; the sweep drops it after.
    pub retain_terminal: Duration,
    /// Safety expiry of a task that never reaches a terminal state (a runner that died).
    pub active_ttl: Duration,
    /// Events kept per task in a durable log (the Redis stream's MAXLEN).
    pub max_events_per_task: usize,
    /// Push configurations per task; `put_push` of a new one beyond it fails with
    /// [`StoreError::TooManyPushConfigs`].
    pub max_push_configs_per_task: usize,
}

impl Default for TaskStoreConfig {
    fn default() -> Self {
        Self {
            max_tasks_per_tenant: 10_000,
            retain_terminal: Duration::from_secs(3600),
            active_ttl: Duration::from_secs(24 * 3600),
            max_events_per_task: 1_000,
            max_push_configs_per_task: 10,
        }
    }
}

/// A task snapshot and its version (the number of events applied, starting at 1 for the
/// snapshot `create` stored).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StoredTask {
    pub task: Task,
    pub version: u64,
}

/// What `append` did.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Appended {
    /// Applied and logged; the new version.
    Applied(u64),
    /// Refused: the task is already terminal (a late COMPLETED after CANCELED); its snapshot.
    Terminal(Box<Task>),
    /// No such task for this owner.
    NotFound,
}

/// What `cancel` did.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum CancelOutcome {
    /// No such task for this owner (`TaskNotFound`, -32001).
    NotFound,
    /// Already terminal (`TaskNotCancelable`, -32002); its snapshot.
    NotCancelable(Task),
    /// Moved to `TASK_STATE_CANCELED`; the new snapshot.
    Canceled(Task),
}

/// `ListTasks` filters and paging.
#[derive(Debug, Clone, Default)]
pub(crate) struct ListQuery {
    pub context_id: Option<String>,
    pub state: Option<TaskState>,
    /// 0 means [`DEFAULT_PAGE_SIZE`]; capped at [`MAX_PAGE_SIZE`].
    pub page_size: usize,
    pub page_token: Option<String>,
    /// ISO-8601 timestamp: only tasks whose status changed strictly after it.
    pub status_after: Option<String>,
}

/// Page size when the query names none.
pub(crate) const DEFAULT_PAGE_SIZE: usize = 50;
/// Largest page; a larger `page_size` is clamped to it.
pub(crate) const MAX_PAGE_SIZE: usize = 100;

/// One page of `ListTasks`, newest status first.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TaskPage {
    pub tasks: Vec<Task>,
    /// Opaque cursor of the next page; empty on the last page.
    pub next_page_token: String,
    /// Tasks matching the filters over all pages.
    pub total_size: usize,
    pub page_size: usize,
}

/// Store failures.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum StoreError {
    /// The tenant holds `max_tasks_per_tenant` tasks.
    #[error("the tenant's task limit is reached")]
    Full,
    /// The backing store cannot be reached (answered -32603).
    #[error("task store unavailable: {0}")]
    Unavailable(String),
    /// A concurrent writer kept winning, or a task id is already taken (internal).
    #[error("task store write conflict")]
    Conflict,
    /// The task holds `max_push_configs_per_task` push configurations.
    #[error("too many push notification configs for this task")]
    TooManyPushConfigs,
    /// A `page_token` this store did not issue (answered -32602).
    #[error("invalid page token")]
    BadPageToken,
}

/// The task store front.
#[derive(Debug)]
pub(crate) enum TaskStore {
    Local(LocalTasks),
    Redis(RedisTasks),
}

impl TaskStore {
    /// An in-process store.
    pub(crate) fn local(config: TaskStoreConfig) -> Self {
        TaskStore::Local(LocalTasks::new(config))
    }

    /// A store in Redis shared by every instance configured with the same prefix: `connection`
    /// and `namespace` come from `RedisConfig::shared`, every command is bounded by
    /// `command_timeout`. Answers a `PING` first, so an unreachable Redis refuses the start.
    pub(crate) async fn redis(
        connection: ::redis::aio::ConnectionManager,
        namespace: String,
        command_timeout: Duration,
        config: TaskStoreConfig,
    ) -> Result<TaskStore, StoreError> {
        let store = RedisTasks::new(connection, namespace, command_timeout, config);
        store.ping().await?;
        Ok(TaskStore::Redis(store))
    }

    /// Stores a new task; its first event is the snapshot itself (version 1).
    pub(crate) async fn create(&self, owner: &Owner, task: &Task) -> Result<u64, StoreError> {
        match self {
            TaskStore::Local(store) => store.create(owner, task),
            TaskStore::Redis(store) => store.create(owner, task).await,
        }
    }

    /// The task and its version; `None` when missing or another owner's.
    pub(crate) async fn get(
        &self,
        owner: &Owner,
        id: &str,
    ) -> Result<Option<StoredTask>, StoreError> {
        match self {
            TaskStore::Local(store) => Ok(store.get(owner, id)),
            TaskStore::Redis(store) => store.get(owner, id).await,
        }
    }

    /// A terminal task's JSON as held, with its number of history messages, when the store
    /// keeps it as JSON (the local store's frozen tasks): answered verbatim, with no parse.
    /// `None` otherwise (the caller reads it with [`TaskStore::get`]).
    pub(crate) fn terminal_json(&self, owner: &Owner, id: &str) -> Option<(Bytes, usize)> {
        match self {
            TaskStore::Local(store) => store.terminal_json(owner, id),
            TaskStore::Redis(_) => None,
        }
    }

    /// Applies `event` to the snapshot and logs it, atomically; refused once terminal.
    pub(crate) async fn append(
        &self,
        owner: &Owner,
        id: &str,
        event: &StreamResponse,
    ) -> Result<Appended, StoreError> {
        match self {
            TaskStore::Local(store) => Ok(store.append(owner, id, event)),
            TaskStore::Redis(store) => store.append(owner, id, event).await,
        }
    }

    /// Moves a non-terminal task to CANCELED (status timestamp now), logs that status event
    /// and fires the task's [`CancelSignal`].
    pub(crate) async fn cancel(
        &self,
        owner: &Owner,
        id: &str,
    ) -> Result<CancelOutcome, StoreError> {
        match self {
            TaskStore::Local(store) => Ok(store.cancel(owner, id)),
            TaskStore::Redis(store) => store.cancel(owner, id).await,
        }
    }

    /// A future the runner selects on; resolves once the task is canceled (or is gone),
    /// whichever instance canceled it.
    pub(crate) fn cancelled(&self, owner: &Owner, id: &str) -> CancelSignal {
        match self {
            TaskStore::Local(store) => CancelSignal::Local(store.cancelled(owner, id)),
            TaskStore::Redis(store) => CancelSignal::Redis(store.cancelled(owner, id)),
        }
    }

    /// This owner's tasks, newest status first.
    pub(crate) async fn list(&self, owner: &Owner, q: &ListQuery) -> Result<TaskPage, StoreError> {
        match self {
            TaskStore::Local(store) => store.list(owner, q),
            TaskStore::Redis(store) => store.list(owner, q).await,
        }
    }

    /// The snapshot and then every event after it; `None` when the task is not found.
    pub(crate) async fn subscribe(
        &self,
        owner: &Owner,
        id: &str,
    ) -> Result<Option<Subscription>, StoreError> {
        match self {
            TaskStore::Local(store) => {
                Ok(store
                    .subscribe(owner, id)
                    .map(|(snapshot, feed)| Subscription {
                        snapshot,
                        feed: Feed::Local(feed),
                    }))
            }
            TaskStore::Redis(store) => {
                Ok(store
                    .subscribe(owner, id)
                    .await?
                    .map(|(snapshot, feed)| Subscription {
                        snapshot,
                        feed: Feed::Redis(Box::new(feed)),
                    }))
            }
        }
    }

    /// Stores (or replaces) push configuration `config_id` of the task. `Ok(false)` when the
    /// task is not found.
    pub(crate) async fn put_push(
        &self,
        owner: &Owner,
        task_id: &str,
        config_id: &str,
        json: Bytes,
    ) -> Result<bool, StoreError> {
        match self {
            TaskStore::Local(store) => store.put_push(owner, task_id, config_id, json),
            TaskStore::Redis(store) => store.put_push(owner, task_id, config_id, &json).await,
        }
    }

    /// One push configuration; `None` when it or the task is not found.
    pub(crate) async fn get_push(
        &self,
        owner: &Owner,
        task_id: &str,
        config_id: &str,
    ) -> Result<Option<Bytes>, StoreError> {
        match self {
            TaskStore::Local(store) => Ok(store.get_push(owner, task_id, config_id)),
            TaskStore::Redis(store) => store.get_push(owner, task_id, config_id).await,
        }
    }

    /// The task's push configurations in insertion order; `None` when the task is not found.
    pub(crate) async fn list_push(
        &self,
        owner: &Owner,
        task_id: &str,
    ) -> Result<Option<Vec<Bytes>>, StoreError> {
        match self {
            TaskStore::Local(store) => Ok(store.list_push(owner, task_id)),
            TaskStore::Redis(store) => store.list_push(owner, task_id).await,
        }
    }

    /// Removes one push configuration; whether it existed (idempotent).
    pub(crate) async fn delete_push(
        &self,
        owner: &Owner,
        task_id: &str,
        config_id: &str,
    ) -> Result<bool, StoreError> {
        match self {
            TaskStore::Local(store) => Ok(store.delete_push(owner, task_id, config_id)),
            TaskStore::Redis(store) => store.delete_push(owner, task_id, config_id).await,
        }
    }

    /// The configurations to deliver an event of the task to (empty when none or not found).
    pub(crate) async fn push_configs(
        &self,
        owner: &Owner,
        task_id: &str,
    ) -> Result<Vec<Bytes>, StoreError> {
        match self {
            TaskStore::Local(store) => Ok(store.list_push(owner, task_id).unwrap_or_default()),
            TaskStore::Redis(store) => {
                Ok(store.list_push(owner, task_id).await?.unwrap_or_default())
            }
        }
    }

    /// Tasks held (all tenants). In Redis: the sum of [`TaskStore::counts`].
    pub(crate) fn len(&self) -> usize {
        match self {
            TaskStore::Local(store) => store.len(),
            TaskStore::Redis(store) => store.len(),
        }
    }

    /// Tasks held per tenant, for `/metrics`. In Redis: the tenants this instance created
    /// tasks for, as last counted (see `RedisTasks::counts`).
    pub(crate) fn counts(&self) -> Vec<(Arc<str>, usize)> {
        match self {
            TaskStore::Local(store) => store.counts(),
            TaskStore::Redis(store) => store.counts(),
        }
    }

    /// Drops terminal tasks past `retain_terminal` and live ones past `active_ttl`; the
    /// server janitor calls it. Returns how many went. In Redis the key TTLs do the expiry
    /// (this returns 0) and the call only starts a recount of [`TaskStore::counts`].
    pub(crate) fn sweep(&self, now: tokio::time::Instant) -> usize {
        match self {
            TaskStore::Local(store) => store.sweep(now),
            TaskStore::Redis(store) => {
                store.refresh_counts();
                0
            }
        }
    }
}

// === impl Subscription ===

/// A task's snapshot and the events after it: no gap and no duplicate between them.
#[derive(Debug)]
pub(crate) struct Subscription {
    pub snapshot: Task,
    feed: Feed,
}

/// Where a subscription's events come from.
#[derive(Debug)]
enum Feed {
    Local(local::LocalFeed),
    /// Boxed: a Redis feed carries its keys and read position, and a subscription lives
    /// inside every task stream.
    Redis(Box<redis::RedisFeed>),
}

impl Subscription {
    /// The next event, `None` after one that ends the stream, when the task went, or when
    /// this subscriber fell behind (the local store's buffer, or Redis trimmed the events it
    /// had not read yet): it must resubscribe to get a fresh snapshot.
    pub(crate) async fn next(&mut self) -> Option<StreamResponse> {
        match &mut self.feed {
            Feed::Local(feed) => feed.next().await,
            Feed::Redis(feed) => feed.next().await,
        }
    }
}

// === impl CancelSignal ===

/// Resolves when the task is canceled; also when the task is gone or already canceled.
#[derive(Debug)]
pub(crate) enum CancelSignal {
    Local(local::LocalCancel),
    Redis(redis::RedisCancel),
}

impl CancelSignal {
    pub(crate) async fn wait(self) {
        match self {
            CancelSignal::Local(signal) => signal.wait().await,
            CancelSignal::Redis(signal) => signal.wait().await,
        }
    }
}

// === paging ===

impl ListQuery {
    /// Whether a task with this context, state and status timestamp passes the filters.
    pub(crate) fn matches(&self, context_id: &str, state: TaskState, stamp: &str) -> bool {
        self.context_id.as_deref().is_none_or(|c| c == context_id)
            && self.state.is_none_or(|s| s == state)
            && self
                .status_after
                .as_deref()
                .is_none_or(|after| stamp > after)
    }
}

/// The page a [`ListQuery`] asks for: its size and where it starts.
pub(crate) struct Paging {
    /// `(status timestamp, task id)` of the last task of the previous page.
    cursor: Option<(String, String)>,
    page_size: usize,
}

impl Paging {
    /// The page size (the query's, clamped; the default when it names none).
    pub(crate) fn page_size(&self) -> usize {
        self.page_size
    }

    pub(crate) fn new(q: &ListQuery) -> Result<Self, StoreError> {
        let cursor = match q.page_token.as_deref() {
            None | Some("") => None,
            Some(token) => Some(decode_token(token)?),
        };
        let page_size = match q.page_size {
            0 => DEFAULT_PAGE_SIZE,
            n => n.min(MAX_PAGE_SIZE),
        };
        Ok(Self { cursor, page_size })
    }

    /// Sorts `matches` (status timestamp, task id, item) newest first, the id breaking ties,
    /// and cuts this page: its items, the next page's token (empty on the last) and the total.
    pub(crate) fn page<T>(&self, mut matches: Vec<(String, String, T)>) -> (Vec<T>, String, usize) {
        matches.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| b.1.cmp(&a.1)));
        let total_size = matches.len();
        let start = match &self.cursor {
            None => 0,
            // The first task strictly after the cursor in this order.
            Some((stamp, id)) => matches
                .iter()
                .position(|(s, i, _)| (s.as_str(), i.as_str()) < (stamp.as_str(), id.as_str()))
                .unwrap_or(total_size),
        };
        let page: Vec<(String, String, T)> = matches
            .into_iter()
            .skip(start)
            .take(self.page_size)
            .collect();
        let next_page_token = if start + page.len() < total_size {
            page.last()
                .map(|(stamp, id, _)| encode_token(stamp, id))
                .unwrap_or_default()
        } else {
            String::new()
        };
        let items = page.into_iter().map(|(_, _, item)| item).collect();
        (items, next_page_token, total_size)
    }
}

/// The cursor `(status timestamp, task id)` of the last task of a page, as URL-safe base64.
fn encode_token(stamp: &str, id: &str) -> String {
    let mut raw = String::with_capacity(stamp.len() + 1 + id.len());
    raw.push_str(stamp);
    raw.push('\0');
    raw.push_str(id);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw)
}

fn decode_token(token: &str) -> Result<(String, String), StoreError> {
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token)
        .map_err(|_| StoreError::BadPageToken)?;
    let raw = String::from_utf8(raw).map_err(|_| StoreError::BadPageToken)?;
    let (stamp, id) = raw.split_once('\0').ok_or(StoreError::BadPageToken)?;
    Ok((stamp.to_owned(), id.to_owned()))
}
