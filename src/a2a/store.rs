//! The A2A task store: task snapshots with their version, the cancel signal, the live event
//! feed for subscribers, and each task's push configurations (stored opaque; the push module
//! owns their shape).
//!
//! Callers use the [`TaskStore`] front, an enum over the implementations with inherent async
//! methods (the shape of `crate::session::Sessions`). `local.rs` keeps everything in this
//! process. Every read and write is scoped by an [`Owner`]: another owner's task reads exactly
//! like a missing one, so ids cannot be probed.
//!
//! Must not know HTTP, JSON-RPC envelopes or how a task is run; it only records what the
//! runner reports (`Task::apply` in `model.rs` is the one place an event changes a snapshot).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use super::model::{StreamResponse, Task, TaskState};

mod local;
#[cfg(test)]
mod tests;

pub(crate) use local::{CancelSignal, LocalTasks, Subscription};

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
}

impl TaskStore {
    /// An in-process store.
    pub(crate) fn local(config: TaskStoreConfig) -> Self {
        TaskStore::Local(LocalTasks::new(config))
    }

    /// Stores a new task; its first event is the snapshot itself (version 1).
    pub(crate) async fn create(&self, owner: &Owner, task: &Task) -> Result<u64, StoreError> {
        match self {
            TaskStore::Local(store) => store.create(owner, task),
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
        }
    }

    /// A future the runner selects on; resolves once the task is canceled (or is gone).
    pub(crate) fn cancelled(&self, owner: &Owner, id: &str) -> CancelSignal {
        match self {
            TaskStore::Local(store) => store.cancelled(owner, id),
        }
    }

    /// This owner's tasks, newest status first.
    pub(crate) async fn list(&self, owner: &Owner, q: &ListQuery) -> Result<TaskPage, StoreError> {
        match self {
            TaskStore::Local(store) => store.list(owner, q),
        }
    }

    /// The snapshot and then every event after it; `None` when the task is not found.
    pub(crate) async fn subscribe(
        &self,
        owner: &Owner,
        id: &str,
    ) -> Result<Option<Subscription>, StoreError> {
        match self {
            TaskStore::Local(store) => Ok(store.subscribe(owner, id)),
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
        }
    }

    /// Tasks held (all tenants).
    pub(crate) fn len(&self) -> usize {
        match self {
            TaskStore::Local(store) => store.len(),
        }
    }

    /// Tasks held per tenant, for `/metrics`.
    pub(crate) fn counts(&self) -> Vec<(Arc<str>, usize)> {
        match self {
            TaskStore::Local(store) => store.counts(),
        }
    }

    /// Drops terminal tasks past `retain_terminal` and live ones past `active_ttl`; the
    /// server janitor calls it. Returns how many went.
    pub(crate) fn sweep(&self, now: tokio::time::Instant) -> usize {
        match self {
            TaskStore::Local(store) => store.sweep(now),
        }
    }
}
