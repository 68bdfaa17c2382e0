//! The process-local ledger: tasks and contexts in two sharded maps, each entry with its
//! deadline, and a per-tenant count for the cap. Expired entries are invisible at once and
//! dropped by [`LocalLedger::sweep`] (the agent's janitor) or when met.
//!
//! Must not hold a lock across an `.await` (there is none here) or know anything but ids.

use std::hash::{BuildHasher, Hash};
use std::sync::Arc;

use bytes::Bytes;
use tokio::time::Instant;

use super::{page, AgentKey, Entry, EntryPage, LedgerConfig, LedgerError, RelayRecord, Seen};
use crate::a2a::model::TaskState;
use crate::a2a::store::ListQuery;
use crate::shard::{FastHash, FastMap, Sharded};

/// Shards of each map.
const SHARDS: usize = 16;

/// A task or context id of one agent.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct IdKey {
    agent: AgentKey,
    id: Box<str>,
}

#[derive(Debug, Clone)]
struct TaskEntry {
    caller: Arc<str>,
    context_id: String,
    state: TaskState,
    stamp: String,
    status: Option<Bytes>,
    deadline: Instant,
}

#[derive(Debug, Clone)]
struct ContextEntry {
    caller: Arc<str>,
    deadline: Instant,
}

/// The process-local ledger.
pub(crate) struct LocalLedger {
    config: LedgerConfig,
    hasher: FastHash,
    tasks: Sharded<IdKey, TaskEntry, FastHash>,
    contexts: Sharded<IdKey, ContextEntry, FastHash>,
    /// Live task entries per tenant (expired ones until swept).
    per_tenant: parking_lot::Mutex<FastMap<Arc<str>, usize>>,
    /// Push relays by relay id, with their deadline; and relay ids by task.
    relays: parking_lot::Mutex<FastMap<String, (RelayRecord, Instant)>>,
    relay_tasks: parking_lot::Mutex<FastMap<IdKey, String>>,
}

impl LocalLedger {
    pub(crate) fn new(config: LedgerConfig) -> Self {
        let hasher = FastHash::default();
        LocalLedger {
            config,
            tasks: Sharded::with_hasher(SHARDS, hasher.clone()),
            contexts: Sharded::with_hasher(SHARDS, hasher.clone()),
            hasher,
            per_tenant: Default::default(),
            relays: Default::default(),
            relay_tasks: Default::default(),
        }
    }

    fn key(agent: &AgentKey, id: &str) -> IdKey {
        IdKey {
            agent: agent.clone(),
            id: id.into(),
        }
    }

    fn bits(&self, key: &IdKey) -> u64 {
        // The high bits pick the shard; the map's buckets use the low ones.
        self.hasher.hash_one(key) >> 40
    }

    pub(crate) fn owns_task(&self, agent: &AgentKey, caller: &str, task_id: &str) -> bool {
        let key = Self::key(agent, task_id);
        let now = Instant::now();
        self.tasks
            .shard(self.bits(&key))
            .get(&key)
            .is_some_and(|e| e.deadline > now && &*e.caller == caller)
    }

    pub(crate) fn owns_context(&self, agent: &AgentKey, caller: &str, context_id: &str) -> bool {
        let key = Self::key(agent, context_id);
        let now = Instant::now();
        self.contexts
            .shard(self.bits(&key))
            .get(&key)
            .is_some_and(|e| e.deadline > now && &*e.caller == caller)
    }

    pub(crate) fn has_room(&self, tenant: &str) -> bool {
        let count = self.per_tenant.lock().get(tenant).copied().unwrap_or(0);
        if count < self.config.max_tasks_per_tenant {
            return true;
        }
        // At the cap: expired entries may still be counted.
        self.sweep();
        self.per_tenant.lock().get(tenant).copied().unwrap_or(0) < self.config.max_tasks_per_tenant
    }

    pub(crate) fn record(
        &self,
        agent: &AgentKey,
        caller: &str,
        seen: &Seen,
    ) -> Result<(), LedgerError> {
        let now = Instant::now();
        let ttl = if seen.state.is_terminal() {
            self.config.terminal_ttl
        } else {
            self.config.active_ttl
        };
        let deadline = now + ttl;
        let caller: Arc<str> = caller.into();
        let mut owner_of_context = Arc::clone(&caller);
        if let Some(task_id) = &seen.task_id {
            let key = Self::key(agent, task_id);
            let mut shard = self.tasks.shard(self.bits(&key));
            match shard.get_mut(&key) {
                Some(entry) if entry.deadline > now => {
                    if entry.caller != caller {
                        // Someone else's task: nothing of it changes, nor its context.
                        return Ok(());
                    }
                    if let Some(context_id) = &seen.context_id {
                        if entry.context_id.is_empty() {
                            entry.context_id.clone_from(context_id);
                        }
                    }
                    if seen.state != TaskState::Unspecified {
                        entry.state = seen.state;
                        entry.stamp.clone_from(&seen.stamp);
                        entry.status.clone_from(&seen.status);
                    }
                    entry.deadline = deadline;
                    owner_of_context = Arc::clone(&entry.caller);
                }
                stale => {
                    let replacing = stale.is_some();
                    drop(shard);
                    if !replacing {
                        let mut counts = self.per_tenant.lock();
                        let count = counts.entry(Arc::clone(&agent.tenant)).or_insert(0);
                        if *count >= self.config.max_tasks_per_tenant {
                            return Err(LedgerError::Full);
                        }
                        *count += 1;
                    }
                    let entry = TaskEntry {
                        caller: Arc::clone(&caller),
                        context_id: seen.context_id.clone().unwrap_or_default(),
                        state: seen.state,
                        stamp: seen.stamp.clone(),
                        status: seen.status.clone(),
                        deadline,
                    };
                    self.tasks.shard(self.bits(&key)).insert(key, entry);
                }
            }
        }
        if let Some(context_id) = &seen.context_id {
            let key = Self::key(agent, context_id);
            let mut shard = self.contexts.shard(self.bits(&key));
            match shard.get_mut(&key) {
                Some(entry) if entry.deadline > now => {
                    if entry.caller == owner_of_context {
                        entry.deadline = entry.deadline.max(deadline);
                    }
                }
                _ => {
                    shard.insert(
                        key,
                        ContextEntry {
                            caller: owner_of_context,
                            deadline: now + self.config.active_ttl.max(ttl),
                        },
                    );
                }
            }
        }
        Ok(())
    }

    pub(crate) fn evict_task(&self, agent: &AgentKey, task_id: &str) {
        let key = Self::key(agent, task_id);
        let removed = self.tasks.shard(self.bits(&key)).remove(&key);
        if removed.is_some() {
            self.uncount(&agent.tenant, 1);
        }
    }

    pub(crate) fn list(
        &self,
        agent: &AgentKey,
        caller: &str,
        query: &ListQuery,
    ) -> Result<EntryPage, LedgerError> {
        let now = Instant::now();
        let mut entries = Vec::new();
        for shard in self.tasks.shards() {
            for (key, entry) in shard.iter() {
                if entry.deadline > now && key.agent == *agent && &*entry.caller == caller {
                    entries.push(Entry {
                        task_id: key.id.to_string(),
                        context_id: entry.context_id.clone(),
                        state: entry.state,
                        stamp: entry.stamp.clone(),
                        status: entry.status.clone(),
                    });
                }
            }
        }
        page(entries, query)
    }

    pub(crate) fn sweep(&self) {
        let now = Instant::now();
        let mut gone: FastMap<Arc<str>, usize> = FastMap::default();
        for mut shard in self.tasks.shards() {
            shard.retain(|key, entry| {
                let keep = entry.deadline > now;
                if !keep {
                    *gone.entry(Arc::clone(&key.agent.tenant)).or_insert(0) += 1;
                }
                keep
            });
        }
        for mut shard in self.contexts.shards() {
            shard.retain(|_, entry| entry.deadline > now);
        }
        for (tenant, n) in gone {
            self.uncount(&tenant, n);
        }
        let mut relays = self.relays.lock();
        relays.retain(|_, (_, deadline)| *deadline > now);
        self.relay_tasks
            .lock()
            .retain(|_, relay_id| relays.contains_key(relay_id));
    }

    fn uncount(&self, tenant: &Arc<str>, n: usize) {
        let mut counts = self.per_tenant.lock();
        if let Some(count) = counts.get_mut(tenant) {
            *count = count.saturating_sub(n);
            if *count == 0 {
                counts.remove(tenant);
            }
        }
    }

    pub(crate) fn relay_for_task(&self, agent: &AgentKey, task_id: &str) -> Option<RelayRecord> {
        let relay_id = self
            .relay_tasks
            .lock()
            .get(&Self::key(agent, task_id))
            .cloned()?;
        self.relay_by_id(&relay_id)
    }

    pub(crate) fn relay_by_id(&self, relay_id: &str) -> Option<RelayRecord> {
        let now = Instant::now();
        self.relays
            .lock()
            .get(relay_id)
            .filter(|(_, deadline)| *deadline > now)
            .map(|(relay, _)| relay.clone())
    }

    pub(crate) fn relay_put(&self, relay: &RelayRecord) {
        let ttl = if relay.finished {
            self.config.terminal_ttl
        } else {
            self.config.active_ttl
        };
        let deadline = Instant::now() + ttl;
        if let Some(task_id) = &relay.task_id {
            let agent = relay_agent(relay);
            self.relay_tasks
                .lock()
                .insert(Self::key(&agent, task_id), relay.relay_id.clone());
        }
        self.relays
            .lock()
            .insert(relay.relay_id.clone(), (relay.clone(), deadline));
    }

    pub(crate) fn relay_delete(&self, relay: &RelayRecord) {
        self.relays.lock().remove(&relay.relay_id);
        if let Some(task_id) = &relay.task_id {
            self.relay_tasks
                .lock()
                .remove(&Self::key(&relay_agent(relay), task_id));
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.tasks.len()
    }
}

/// The agent a relay belongs to.
fn relay_agent(relay: &RelayRecord) -> AgentKey {
    AgentKey {
        tenant: relay.tenant.as_str().into(),
        client: relay.client.as_str().into(),
        agent: relay.agent.as_str().into(),
    }
}
