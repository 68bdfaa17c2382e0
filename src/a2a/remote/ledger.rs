//! The concentrator's ownership ledger: which caller owns which upstream task and context of a
//! registered remote agent. Every caller reaches the upstream with the runtime's one
//! credential, so the upstream cannot tell them apart; the ledger does. Upstream ids pass
//! through unchanged: the agent's path already namespaces them, and the ledger is keyed by
//! (tenant, client, agent, id).
//!
//! Written whenever a Task, Message or stream event carrying ids comes back from the upstream
//! ([`Seen`]); read before any call that names an id (`proxy.rs`). A task or context owned by
//! someone else is indistinguishable from an unknown one. `ListTasks` is answered from here:
//! each entry keeps the task's last status object as the upstream wrote it.
//!
//! Two shapes, like the task store: process-local ([`local::LocalLedger`]) and Redis
//! ([`redis::RedisLedger`], with `[cluster]`), so a task sent through one instance is
//! followed, cancelled and listed through any other. Entries live `active_ttl` from their last
//! update and `terminal_ttl` once the task is terminal; a tenant holds at most
//! `max_tasks_per_tenant` entries (a new task past it is refused before it reaches the
//! upstream).
//!
//! Must not know HTTP, JSON-RPC or the upstream: it stores what it is told.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use crate::a2a::model::TaskState;
use crate::a2a::store::ListQuery;

pub(crate) mod local;
pub(crate) mod redis;
pub(crate) mod relay;

pub(crate) use relay::{RelayMode, RelayRecord};

#[cfg(test)]
mod tests;

/// The agent a ledger entry belongs to: (tenant, client application, agent id).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct AgentKey {
    pub tenant: Arc<str>,
    pub client: Arc<str>,
    pub agent: Arc<str>,
}

/// Limits of the ledger (`[server.a2a]` `remote_*`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct LedgerConfig {
    /// Lifetime of an entry whose task is not terminal, from its last update.
    pub active_ttl: Duration,
    /// Lifetime of an entry once its task is terminal.
    pub terminal_ttl: Duration,
    /// Entries a tenant may hold at once (tasks; contexts are bounded by tasks).
    pub max_tasks_per_tenant: usize,
}

impl From<&crate::config::A2aSettings> for LedgerConfig {
    fn from(settings: &crate::config::A2aSettings) -> Self {
        LedgerConfig {
            active_ttl: Duration::from_secs(settings.remote_task_secs),
            terminal_ttl: Duration::from_secs(settings.remote_terminal_secs),
            max_tasks_per_tenant: settings.remote_max_tasks_per_tenant,
        }
    }
}

/// Ids and status seen in one upstream answer or event.
#[derive(Debug, Clone, Default)]
pub(crate) struct Seen {
    pub task_id: Option<String>,
    pub context_id: Option<String>,
    /// The status object's JSON as the upstream wrote it (bounded by the caller).
    pub status: Option<Bytes>,
    pub state: TaskState,
    /// The status timestamp (ISO 8601), for ordering and `statusTimestampAfter`.
    pub stamp: String,
}

/// One task as `ListTasks` shows it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Entry {
    pub task_id: String,
    pub context_id: String,
    pub state: TaskState,
    pub stamp: String,
    /// The last status object seen (`{}`-free: absent when none was seen).
    pub status: Option<Bytes>,
}

/// One page of the caller's tasks, newest status first.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct EntryPage {
    pub entries: Vec<Entry>,
    pub next_page_token: String,
    pub total_size: usize,
    pub page_size: usize,
}

/// Why the ledger could not answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum LedgerError {
    /// The tenant holds `max_tasks_per_tenant` entries.
    #[error("the tenant's remote task ledger is full")]
    Full,
    /// A `pageToken` this ledger did not write.
    #[error("invalid pageToken")]
    BadPageToken,
    /// Redis failed or timed out (the text never holds the URL).
    #[error("ledger unavailable: {0}")]
    Unavailable(String),
}

/// The ledger: a `match` front over the two shapes.
#[derive(Clone)]
pub(crate) enum Ledger {
    Local(Arc<local::LocalLedger>),
    Redis(Arc<redis::RedisLedger>),
}

impl std::fmt::Debug for Ledger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ledger::Local(_) => f.write_str("Ledger::Local"),
            Ledger::Redis(_) => f.write_str("Ledger::Redis"),
        }
    }
}

impl Ledger {
    /// A process-local ledger.
    pub(crate) fn local(config: LedgerConfig) -> Ledger {
        Ledger::Local(Arc::new(local::LocalLedger::new(config)))
    }

    /// Whether `caller` owns task `task_id` of `key`'s agent.
    pub(crate) async fn owns_task(
        &self,
        key: &AgentKey,
        caller: &str,
        task_id: &str,
    ) -> Result<bool, LedgerError> {
        match self {
            Ledger::Local(l) => Ok(l.owns_task(key, caller, task_id)),
            Ledger::Redis(r) => r.owns_task(key, caller, task_id).await,
        }
    }

    /// Whether `caller` owns context `context_id` of `key`'s agent.
    pub(crate) async fn owns_context(
        &self,
        key: &AgentKey,
        caller: &str,
        context_id: &str,
    ) -> Result<bool, LedgerError> {
        match self {
            Ledger::Local(l) => Ok(l.owns_context(key, caller, context_id)),
            Ledger::Redis(r) => r.owns_context(key, caller, context_id).await,
        }
    }

    /// Whether the tenant may start one more task (below `max_tasks_per_tenant`).
    pub(crate) async fn has_room(&self, tenant: &str) -> Result<bool, LedgerError> {
        match self {
            Ledger::Local(l) => Ok(l.has_room(tenant)),
            Ledger::Redis(r) => r.has_room(tenant).await,
        }
    }

    /// Records what an upstream answer showed, for `caller`. An id another caller already owns
    /// is left to its owner (the upstream echoing someone else's id changes nothing). A new
    /// task past the tenant's cap is not recorded (`Full`).
    pub(crate) async fn record(
        &self,
        key: &AgentKey,
        caller: &str,
        seen: &Seen,
    ) -> Result<(), LedgerError> {
        if seen.task_id.is_none() && seen.context_id.is_none() {
            return Ok(());
        }
        match self {
            Ledger::Local(l) => l.record(key, caller, seen),
            Ledger::Redis(r) => r.record(key, caller, seen).await,
        }
    }

    /// Forgets a task (the upstream said it does not know it).
    pub(crate) async fn evict_task(
        &self,
        key: &AgentKey,
        task_id: &str,
    ) -> Result<(), LedgerError> {
        match self {
            Ledger::Local(l) => {
                l.evict_task(key, task_id);
                Ok(())
            }
            Ledger::Redis(r) => r.evict_task(key, task_id).await,
        }
    }

    /// One page of `caller`'s tasks of `key`'s agent, filtered by `query`.
    pub(crate) async fn list(
        &self,
        key: &AgentKey,
        caller: &str,
        query: &ListQuery,
    ) -> Result<EntryPage, LedgerError> {
        match self {
            Ledger::Local(l) => l.list(key, caller, query),
            Ledger::Redis(r) => r.list(key, caller, query).await,
        }
    }

    /// The relay of task `task_id` of `key`'s agent.
    pub(crate) async fn relay_for_task(
        &self,
        key: &AgentKey,
        task_id: &str,
    ) -> Result<Option<RelayRecord>, LedgerError> {
        match self {
            Ledger::Local(l) => Ok(l.relay_for_task(key, task_id)),
            Ledger::Redis(r) => r.relay_for_task(key, task_id).await,
        }
    }

    /// The relay `relay_id`.
    pub(crate) async fn relay_by_id(
        &self,
        relay_id: &str,
    ) -> Result<Option<RelayRecord>, LedgerError> {
        match self {
            Ledger::Local(l) => Ok(l.relay_by_id(relay_id)),
            Ledger::Redis(r) => r.relay_by_id(relay_id).await,
        }
    }

    /// Stores `relay` (by id, and by task once it names one), for `active_ttl`.
    pub(crate) async fn relay_put(&self, relay: &RelayRecord) -> Result<(), LedgerError> {
        match self {
            Ledger::Local(l) => {
                l.relay_put(relay);
                Ok(())
            }
            Ledger::Redis(r) => r.relay_put(relay).await,
        }
    }

    /// Forgets `relay`.
    pub(crate) async fn relay_delete(&self, relay: &RelayRecord) -> Result<(), LedgerError> {
        match self {
            Ledger::Local(l) => {
                l.relay_delete(relay);
                Ok(())
            }
            Ledger::Redis(r) => r.relay_delete(relay).await,
        }
    }

    /// Drops expired entries (the local shape; Redis expires keys itself).
    pub(crate) fn sweep(&self) {
        if let Ledger::Local(l) = self {
            l.sweep();
        }
    }

    /// Entries held (the local shape; 0 for Redis, which is not counted per instance).
    pub(crate) fn len(&self) -> usize {
        match self {
            Ledger::Local(l) => l.len(),
            Ledger::Redis(_) => 0,
        }
    }
}

/// Pages `entries` (all of the caller's that pass the filters) as the task store pages its own
/// tasks: newest status first, the task id breaking ties, an opaque cursor.
pub(crate) fn page(entries: Vec<Entry>, query: &ListQuery) -> Result<EntryPage, LedgerError> {
    let paging = crate::a2a::store::Paging::new(query).map_err(|_| LedgerError::BadPageToken)?;
    let matches = entries
        .into_iter()
        .filter(|e| query.matches(&e.context_id, e.state, &e.stamp))
        .map(|e| (e.stamp.clone(), e.task_id.clone(), e))
        .collect();
    let (entries, next_page_token, total_size) = paging.page(matches);
    Ok(EntryPage {
        entries,
        next_page_token,
        total_size,
        page_size: paging.page_size(),
    })
}
