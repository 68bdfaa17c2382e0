//! The in-process task store: a sharded map keyed by `tenant \0 task id` holding each task's
//! owner, snapshot, version and push configurations; per-tenant counters for the cap.
//!
//! A live task grows two lazily created channels, each only while someone waits on it: a
//! `broadcast` of (version, event) for subscribers and a `watch` for the cancel signal. Both
//! are written under the shard lock that writes the snapshot, so a subscriber's snapshot and
//! the events after it have no gap and no duplicate. Terminal tasks keep no event log, no channel and
//! no typed tree here: they are held as their compact JSON (`Held::Frozen`), read back on
//! `GetTask`/`ListTasks` — ~1.2 KiB per retained `get_customer` task (`tests/task_memory.rs`);
//! a subscriber to a terminal task gets the snapshot and the end of the stream.
//!
//! Must not do IO or know JSON-RPC; `super` (`store.rs`) is the front.

use std::hash::BuildHasher;
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;
use tokio::sync::{broadcast, watch};
use tokio::time::Instant;

use super::{
    Appended, CancelOutcome, ListQuery, Owner, Paging, StoreError, StoredTask, TaskPage,
    TaskStoreConfig,
};
use crate::a2a::model::{
    now_timestamp, StreamResponse, Task, TaskState, TaskStatus, TaskStatusUpdateEvent,
};
use crate::shard::{FastHash, FastMap, Sharded};

/// Events buffered per subscriber; one that falls further behind is ended (its `next` returns
/// `None` and it must resubscribe to get a fresh snapshot).
pub(crate) const SUBSCRIBER_BUFFER: usize = 64;

/// Shards of the task map.
const SHARDS: usize = 16;

/// A task as the store holds it: typed while it is live (events apply to it), its compact
/// JSON once terminal. A retained terminal task is only ever read, and the JSON is a third of
/// the size of the typed tree (every JSON object a map node, every string its own
/// allocation): what keeps 10,000 retained tasks per tenant within a few tens of MB.
#[derive(Debug)]
enum Held {
    Live(Box<Task>),
    Frozen {
        json: Bytes,
        /// History messages in `json` (whether a `historyLength` trims it).
        history: usize,
        state: TaskState,
        context_id: Box<str>,
        /// The status timestamp (`ListTasks` sorts and filters by it).
        stamp: Box<str>,
    },
}

impl Held {
    fn state(&self) -> TaskState {
        match self {
            Held::Live(task) => task.status.state,
            Held::Frozen { state, .. } => *state,
        }
    }

    fn context_id(&self) -> &str {
        match self {
            Held::Live(task) => &task.context_id,
            Held::Frozen { context_id, .. } => context_id,
        }
    }

    fn stamp(&self) -> &str {
        match self {
            Held::Live(task) => task.status.timestamp.as_deref().unwrap_or_default(),
            Held::Frozen { stamp, .. } => stamp,
        }
    }

    /// The task (a copy).
    fn task(&self) -> Task {
        match self {
            Held::Live(task) => Task::clone(task),
            // Written by `freeze` from a `Task`, so it reads back.
            Held::Frozen { json, .. } => serde_json::from_slice(json).unwrap_or_else(|_| {
                tracing::error!("a frozen A2A task does not read back");
                Task {
                    id: String::new(),
                    context_id: String::new(),
                    status: TaskStatus {
                        state: TaskState::Unspecified,
                        message: None,
                        timestamp: None,
                        extra: Default::default(),
                    },
                    artifacts: Vec::new(),
                    history: Vec::new(),
                    metadata: None,
                    extra: Default::default(),
                }
            }),
        }
    }

    /// The live task, for an event to change.
    fn live(&mut self) -> Option<&mut Task> {
        match self {
            Held::Live(task) => Some(task),
            Held::Frozen { .. } => None,
        }
    }

    /// Turns a live terminal task into its JSON.
    fn freeze(&mut self) {
        let Held::Live(task) = self else { return };
        if !task.status.state.is_terminal() {
            return;
        }
        let Ok(json) = serde_json::to_vec(&**task) else {
            return;
        };
        *self = Held::Frozen {
            json: Bytes::from(json),
            history: task.history.len(),
            state: task.status.state,
            context_id: task.context_id.as_str().into(),
            stamp: task.status.timestamp.as_deref().unwrap_or_default().into(),
        };
    }
}

/// One task.
#[derive(Debug)]
struct Entry {
    client: Arc<str>,
    caller: Arc<str>,
    tenant: Arc<str>,
    task: Held,
    version: u64,
    /// When the task was created (live) or became terminal; the sweep measures from it.
    since: Instant,
    /// Push configurations by id, insertion order.
    push: Vec<(Box<str>, Bytes)>,
    /// Live event feed, only while a subscriber exists.
    feed: Option<broadcast::Sender<(u64, Arc<StreamResponse>)>>,
    /// Cancel signal, only while a runner waits on it.
    cancel: Option<watch::Sender<bool>>,
}

impl Entry {
    fn is_owned_by(&self, owner: &Owner) -> bool {
        *self.client == *owner.client && *self.caller == *owner.caller
    }

    /// Sends `event` at the current version to the subscribers, dropping the feed once nobody
    /// listens. After the event that ends the task, the feed and the cancel signal go (their
    /// receivers see the end) and the task is frozen.
    fn publish(&mut self, event: &StreamResponse) {
        if let Some(feed) = &self.feed {
            // Copied only when someone listens.
            if feed.receiver_count() == 0
                || feed.send((self.version, Arc::new(event.clone()))).is_err()
            {
                self.feed = None;
            }
        }
        if self.task.state().is_terminal() {
            self.feed = None;
            self.cancel = None;
            self.task.freeze();
        }
    }
}

/// The in-process task store.
#[derive(Debug)]
pub(crate) struct LocalTasks {
    config: TaskStoreConfig,
    hasher: FastHash,
    tasks: Sharded<Box<str>, Entry, FastHash>,
    /// Tasks per tenant (the cap); changed under the task's shard lock on create and removal.
    tenants: Mutex<FastMap<Arc<str>, usize>>,
}

fn key(tenant: &str, id: &str) -> String {
    let mut key = String::with_capacity(tenant.len() + 1 + id.len());
    key.push_str(tenant);
    key.push('\0');
    key.push_str(id);
    key
}

impl LocalTasks {
    pub(crate) fn new(config: TaskStoreConfig) -> Self {
        let hasher = FastHash::default();
        Self {
            config,
            tasks: Sharded::with_hasher(SHARDS, hasher.clone()),
            hasher,
            tenants: Mutex::new(FastMap::default()),
        }
    }

    /// Runs `f` on the owner's entry, under its shard lock; `None` when missing or not owned.
    fn with<R>(&self, owner: &Owner, id: &str, f: impl FnOnce(&mut Entry) -> R) -> Option<R> {
        let key = key(&owner.tenant, id);
        let mut shard = self.tasks.shard(self.hasher.hash_one(key.as_str()));
        let entry = shard.get_mut(key.as_str())?;
        if !entry.is_owned_by(owner) {
            return None;
        }
        Some(f(entry))
    }

    pub(crate) fn create(&self, owner: &Owner, task: &Task) -> Result<u64, StoreError> {
        let key = key(&owner.tenant, &task.id);
        let mut shard = self.tasks.shard(self.hasher.hash_one(key.as_str()));
        if shard.contains_key(key.as_str()) {
            return Err(StoreError::Conflict);
        }
        {
            let mut tenants = self.tenants.lock();
            let count = tenants.entry(owner.tenant.clone()).or_insert(0);
            if *count >= self.config.max_tasks_per_tenant {
                return Err(StoreError::Full);
            }
            *count += 1;
        }
        shard.insert(
            key.into_boxed_str(),
            Entry {
                client: owner.client.clone(),
                caller: owner.caller.clone(),
                tenant: owner.tenant.clone(),
                task: {
                    // A task stored terminal (it never ran) is frozen at once.
                    let mut held = Held::Live(Box::new(task.clone()));
                    held.freeze();
                    held
                },
                version: 1,
                since: Instant::now(),
                push: Vec::new(),
                feed: None,
                cancel: None,
            },
        );
        Ok(1)
    }

    pub(crate) fn terminal_json(&self, owner: &Owner, id: &str) -> Option<(Bytes, usize)> {
        self.with(owner, id, |entry| match &entry.task {
            Held::Frozen { json, history, .. } => Some((json.clone(), *history)),
            Held::Live(_) => None,
        })
        .flatten()
    }

    pub(crate) fn get(&self, owner: &Owner, id: &str) -> Option<StoredTask> {
        self.with(owner, id, |entry| StoredTask {
            task: entry.task.task(),
            version: entry.version,
        })
    }

    pub(crate) fn append(&self, owner: &Owner, id: &str, event: &StreamResponse) -> Appended {
        self.with(owner, id, |entry| {
            let Some(task) = entry.task.live() else {
                return Appended::Terminal(Box::new(entry.task.task()));
            };
            task.apply(event);
            let terminal = task.status.state.is_terminal();
            entry.version += 1;
            if terminal {
                entry.since = Instant::now();
            }
            entry.publish(event);
            Appended::Applied(entry.version)
        })
        .unwrap_or(Appended::NotFound)
    }

    pub(crate) fn cancel(&self, owner: &Owner, id: &str) -> CancelOutcome {
        self.with(owner, id, |entry| {
            let Some(task) = entry.task.live() else {
                return CancelOutcome::NotCancelable(entry.task.task());
            };
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
            let canceled = task.clone();
            entry.version += 1;
            entry.since = Instant::now();
            if let Some(cancel) = entry.cancel.take() {
                let _ = cancel.send(true);
            }
            entry.publish(&event);
            CancelOutcome::Canceled(canceled)
        })
        .unwrap_or(CancelOutcome::NotFound)
    }

    pub(crate) fn cancelled(&self, owner: &Owner, id: &str) -> LocalCancel {
        let receiver = self.with(owner, id, |entry| {
            if entry.task.state().is_terminal() {
                return None;
            }
            Some(
                entry
                    .cancel
                    .get_or_insert_with(|| watch::channel(false).0)
                    .subscribe(),
            )
        });
        LocalCancel {
            receiver: receiver.flatten(),
        }
    }

    /// The snapshot and the feed of the events after it.
    pub(crate) fn subscribe(&self, owner: &Owner, id: &str) -> Option<(Task, LocalFeed)> {
        self.with(owner, id, |entry| {
            let snapshot = entry.task.task();
            let ended = StreamResponse::Task(snapshot.clone()).ends_stream();
            let receiver = if ended {
                None
            } else {
                let feed = entry
                    .feed
                    .get_or_insert_with(|| broadcast::channel(SUBSCRIBER_BUFFER).0);
                Some(feed.subscribe())
            };
            let feed = LocalFeed {
                version: entry.version,
                receiver,
            };
            (snapshot, feed)
        })
    }

    pub(crate) fn put_push(
        &self,
        owner: &Owner,
        task_id: &str,
        config_id: &str,
        json: Bytes,
    ) -> Result<bool, StoreError> {
        let max = self.config.max_push_configs_per_task;
        self.with(owner, task_id, |entry| {
            if let Some(slot) = entry.push.iter_mut().find(|(id, _)| **id == *config_id) {
                slot.1 = json;
                return Ok(());
            }
            if entry.push.len() >= max {
                return Err(StoreError::TooManyPushConfigs);
            }
            entry.push.push((config_id.into(), json));
            Ok(())
        })
        .map_or(Ok(false), |done| done.map(|()| true))
    }

    pub(crate) fn get_push(&self, owner: &Owner, task_id: &str, config_id: &str) -> Option<Bytes> {
        self.with(owner, task_id, |entry| {
            entry
                .push
                .iter()
                .find(|(id, _)| **id == *config_id)
                .map(|(_, json)| json.clone())
        })
        .flatten()
    }

    pub(crate) fn list_push(&self, owner: &Owner, task_id: &str) -> Option<Vec<Bytes>> {
        self.with(owner, task_id, |entry| {
            entry.push.iter().map(|(_, json)| json.clone()).collect()
        })
    }

    pub(crate) fn delete_push(&self, owner: &Owner, task_id: &str, config_id: &str) -> bool {
        self.with(owner, task_id, |entry| {
            let before = entry.push.len();
            entry.push.retain(|(id, _)| **id != *config_id);
            entry.push.len() != before
        })
        .unwrap_or(false)
    }

    pub(crate) fn list(&self, owner: &Owner, q: &ListQuery) -> Result<TaskPage, StoreError> {
        let paging = Paging::new(q)?;
        // Matches by their keys first; only the page's tasks are read out (a frozen one parsed).
        let mut matches: Vec<(String, String, Box<str>)> = Vec::new();
        for shard in self.tasks.shards() {
            for (key, entry) in shard.iter() {
                if *entry.tenant != *owner.tenant || !entry.is_owned_by(owner) {
                    continue;
                }
                let held = &entry.task;
                if q.matches(held.context_id(), held.state(), held.stamp()) {
                    let id = key.split_once('\0').map_or("", |(_, id)| id);
                    matches.push((held.stamp().to_owned(), id.to_owned(), key.clone()));
                }
            }
        }
        let (keys, next_page_token, total_size) = paging.page(matches);
        let tasks = keys
            .iter()
            .filter_map(|key| {
                let shard = self.tasks.shard(self.hasher.hash_one(&**key));
                shard.get(key).map(|entry| entry.task.task())
            })
            .collect();
        Ok(TaskPage {
            tasks,
            next_page_token,
            total_size,
            page_size: paging.page_size,
        })
    }

    pub(crate) fn len(&self) -> usize {
        self.tasks.len()
    }

    pub(crate) fn counts(&self) -> Vec<(Arc<str>, usize)> {
        self.tenants
            .lock()
            .iter()
            .map(|(tenant, n)| (tenant.clone(), *n))
            .collect()
    }

    pub(crate) fn sweep(&self, now: Instant) -> usize {
        let mut removed = 0;
        for mut shard in self.tasks.shards() {
            let before = shard.len();
            shard.retain(|_, entry| {
                let keep_for = if entry.task.state().is_terminal() {
                    self.config.retain_terminal
                } else {
                    self.config.active_ttl
                };
                let keep = now.saturating_duration_since(entry.since) < keep_for;
                if !keep {
                    let mut tenants = self.tenants.lock();
                    if let Some(count) = tenants.get_mut(&entry.tenant) {
                        *count = count.saturating_sub(1);
                        if *count == 0 {
                            tenants.remove(&entry.tenant);
                        }
                    }
                }
                keep
            });
            removed += before - shard.len();
            crate::shard::shrink_if_sparse(&mut shard);
        }
        removed
    }
}

// === impl LocalCancel ===

/// Resolves when the task is canceled; also when the task is gone or already canceled.
#[derive(Debug)]
pub(crate) struct LocalCancel {
    receiver: Option<watch::Receiver<bool>>,
}

impl LocalCancel {
    pub(crate) async fn wait(self) {
        if let Some(mut receiver) = self.receiver {
            // An error means the sender went (task swept or finished without a cancel): a
            // runner of a task that is gone has nothing left to do either.
            let _ = receiver.wait_for(|canceled| *canceled).await;
        }
    }
}

// === impl LocalFeed ===

/// The events after a subscription's snapshot.
#[derive(Debug)]
pub(crate) struct LocalFeed {
    /// The snapshot's version: only events above it are new.
    version: u64,
    /// `None` once the stream ended.
    receiver: Option<broadcast::Receiver<(u64, Arc<StreamResponse>)>>,
}

impl LocalFeed {
    /// The next event, `None` after one that ends the stream, when the task went, or when
    /// this subscriber fell more than [`SUBSCRIBER_BUFFER`] events behind.
    pub(crate) async fn next(&mut self) -> Option<StreamResponse> {
        let receiver = self.receiver.as_mut()?;
        loop {
            match receiver.recv().await {
                Ok((version, event)) if version > self.version => {
                    self.version = version;
                    if event.ends_stream() {
                        self.receiver = None;
                    }
                    return Some(Arc::unwrap_or_clone(event));
                }
                Ok(_) => continue,
                Err(_) => {
                    self.receiver = None;
                    return None;
                }
            }
        }
    }
}
