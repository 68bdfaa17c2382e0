//! What waits on a task held in Redis: a subscriber's feed of events ([`RedisFeed`]) and a
//! runner's cancel signal ([`RedisCancel`]), and the in-process wakers ([`Wakers`]) through
//! which a write on this instance reaches them at once.
//!
//! Both poll Redis with short non-blocking reads, because the connection is multiplexed and
//! a blocking read (`XREAD BLOCK`) would stall every other command of the store: a feed reads
//! the task's log after the position it has seen every [`EVENT_POLL`], a cancel signal reads
//! the task's state every [`CANCEL_POLL`]. A write on this instance wakes them at once, so
//! subscribers and runners on the instance that runs the task wait for no poll. Each waiter
//! arms its wake-up before it reads, so a write between the read and the wait is never
//! missed.
//!
//! Must not write to Redis: only `redis.rs` writes.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::Notify;

use super::{bounded, Inner, RedisTasks};
use crate::a2a::model::{StreamResponse, TaskState};
use crate::a2a::store::StoreError;
use crate::shard::FastMap;

/// How often a subscriber reads the log when nothing on this instance woke it: the longest
/// delay before it sees an event written by another instance.
pub(crate) const EVENT_POLL: Duration = Duration::from_millis(50);

/// How often a runner's cancel signal reads the task's state: the longest delay before a
/// cancel made on another instance stops the runner.
pub(crate) const CANCEL_POLL: Duration = Duration::from_millis(200);

/// Log entries read per round trip.
const READ_BATCH: usize = 64;

/// Failed reads in a row after which a feed ends (`next` returns `None`, as for a subscriber
/// that fell behind): Redis has been unreachable for about this many command timeouts.
const MAX_READ_FAILURES: u32 = 3;

// === impl Wakers ===

/// One task's wake-ups.
#[derive(Debug, Default)]
pub(super) struct Wake {
    /// Notified after every event this instance logs for the task.
    events: Notify,
    /// Notified when this instance canceled the task.
    cancel: Notify,
}

/// The wake-ups of the tasks someone on this instance waits on, by task key. An entry lives
/// while a [`WakeGuard`] holds it. Every clone and drop of an entry's `Arc` happens under the
/// lock, so the guard that finds itself the last holder can remove the entry.
#[derive(Debug, Default)]
pub(super) struct Wakers {
    map: Mutex<FastMap<Box<str>, Arc<Wake>>>,
}

impl Wakers {
    /// Registers a waiter of the task `key`.
    pub(super) fn register(self: &Arc<Self>, key: &str) -> WakeGuard {
        let wake = self.map.lock().entry(key.into()).or_default().clone();
        WakeGuard {
            wakers: Arc::clone(self),
            key: key.into(),
            wake: Some(wake),
        }
    }

    /// Wakes the task's subscribers, and its cancel waiters when `canceled`.
    pub(super) fn wake(&self, key: &str, canceled: bool) {
        if let Some(wake) = self.map.lock().get(key) {
            wake.events.notify_waiters();
            if canceled {
                wake.cancel.notify_waiters();
            }
        }
    }
}

/// A waiter's hold on its task's [`Wake`]; removes the entry when it was the last.
#[derive(Debug)]
pub(super) struct WakeGuard {
    wakers: Arc<Wakers>,
    key: Box<str>,
    /// `Some` until dropped.
    wake: Option<Arc<Wake>>,
}

impl WakeGuard {
    fn wake(&self) -> Option<&Wake> {
        self.wake.as_deref()
    }
}

impl Drop for WakeGuard {
    fn drop(&mut self) {
        let mut map = self.wakers.map.lock();
        drop(self.wake.take());
        if map
            .get(&self.key)
            .is_some_and(|wake| Arc::strong_count(wake) == 1)
        {
            map.remove(&self.key);
        }
    }
}

// === impl RedisFeed ===

/// The events after a subscription's snapshot, read from the task's log in Redis.
#[derive(Debug)]
pub(crate) struct RedisFeed {
    store: RedisTasks,
    task_key: String,
    events_key: String,
    cursor: Cursor,
    /// `None` once the feed ended (or when the snapshot already ended the stream).
    wake: Option<WakeGuard>,
}

/// Where a feed is in the log.
#[derive(Debug)]
struct Cursor {
    /// Stream id of the last entry read (at first: the snapshot's).
    last: String,
    /// Version of the last event delivered (at first: the snapshot's); only the next version
    /// is accepted, so nothing is delivered twice and a gap ends the feed.
    version: u64,
    /// Events read, not yet delivered.
    ready: VecDeque<StreamResponse>,
    /// Set after an event that ends the stream, a gap, or when the task went.
    ended: bool,
    failures: u32,
}

impl RedisFeed {
    pub(super) fn new(
        store: RedisTasks,
        task_key: String,
        events_key: String,
        last: String,
        version: u64,
        wake: Option<WakeGuard>,
    ) -> Self {
        Self {
            store,
            task_key,
            events_key,
            cursor: Cursor {
                last,
                version,
                ready: VecDeque::new(),
                ended: wake.is_none(),
                failures: 0,
            },
            wake,
        }
    }

    /// The next event; `None` after one that ends the stream, when the task went, when Redis
    /// trimmed events this feed had not read yet, or when Redis stays unreachable.
    pub(crate) async fn next(&mut self) -> Option<StreamResponse> {
        loop {
            if let Some(event) = self.cursor.ready.pop_front() {
                return Some(event);
            }
            if self.cursor.ended {
                self.wake = None;
                return None;
            }
            let wake = self.wake.as_ref()?.wake()?;
            let notified = wake.events.notified();
            tokio::pin!(notified);
            // Armed before the read: an event logged after it wakes this wait.
            notified.as_mut().enable();
            match self
                .cursor
                .read(&self.store.inner, &self.task_key, &self.events_key)
                .await
            {
                Ok(true) => {
                    self.cursor.failures = 0;
                    continue;
                }
                Ok(false) => self.cursor.failures = 0,
                Err(_) => {
                    self.cursor.failures += 1;
                    if self.cursor.failures >= MAX_READ_FAILURES {
                        self.cursor.ended = true;
                        continue;
                    }
                }
            }
            tokio::select! {
                () = &mut notified => {}
                () = tokio::time::sleep(EVENT_POLL) => {}
            }
        }
    }
}

impl Cursor {
    /// Reads the log after `last` (and whether the task still exists, in the same round
    /// trip). `Ok(true)` when it moved: events are ready, or the feed ended.
    async fn read(
        &mut self,
        inner: &Inner,
        task_key: &str,
        events_key: &str,
    ) -> Result<bool, StoreError> {
        let mut pipeline = redis::pipe();
        pipeline
            .cmd("XRANGE")
            .arg(events_key)
            .arg(format!("({}", self.last))
            .arg("+")
            .arg("COUNT")
            .arg(READ_BATCH)
            .cmd("EXISTS")
            .arg(task_key);
        let mut connection = inner.connection.clone();
        type Entry = (String, HashMap<String, String>);
        let (entries, exists): (Vec<Entry>, bool) =
            bounded(inner.command_timeout, pipeline.query_async(&mut connection)).await?;
        if entries.is_empty() {
            if !exists {
                self.ended = true;
                return Ok(true);
            }
            return Ok(false);
        }
        for (id, fields) in entries {
            let version = fields.get("v").and_then(|v| v.parse::<u64>().ok());
            self.last = id;
            match version {
                Some(version) if version <= self.version => continue,
                Some(version) if version == self.version + 1 => {
                    let Some(event) = fields
                        .get("e")
                        .and_then(|e| serde_json::from_str::<StreamResponse>(e).ok())
                    else {
                        self.ended = true;
                        break;
                    };
                    self.version = version;
                    let ends = event.ends_stream();
                    self.ready.push_back(event);
                    if ends {
                        self.ended = true;
                        break;
                    }
                }
                // A gap (the log was trimmed past events this feed had not read) or an
                // unreadable entry: the subscriber must start again from a fresh snapshot.
                _ => {
                    self.ended = true;
                    break;
                }
            }
        }
        Ok(true)
    }
}

// === impl RedisCancel ===

/// Resolves when the task is canceled (by any instance), or is gone.
#[derive(Debug)]
pub(crate) struct RedisCancel {
    store: RedisTasks,
    task_key: String,
    owner_field: String,
    wake: WakeGuard,
}

impl RedisCancel {
    pub(super) fn new(
        store: RedisTasks,
        task_key: String,
        owner_field: String,
        wake: WakeGuard,
    ) -> Self {
        Self {
            store,
            task_key,
            owner_field,
            wake,
        }
    }

    /// At once when this instance cancels the task; otherwise at the first read of its state
    /// (every [`CANCEL_POLL`]) that finds it canceled, gone or another owner's. A failed read
    /// is not a cancel: the runner keeps running while Redis is unreachable.
    pub(crate) async fn wait(self) {
        let Some(wake) = self.wake.wake() else { return };
        loop {
            let notified = wake.cancel.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.is_over().await.unwrap_or(false) {
                return;
            }
            tokio::select! {
                () = &mut notified => return,
                () = tokio::time::sleep(CANCEL_POLL) => {}
            }
        }
    }

    /// Whether the task is canceled, gone, or not this owner's.
    async fn is_over(&self) -> Result<bool, StoreError> {
        let inner = &*self.store.inner;
        let mut connection = inner.connection.clone();
        let (owner, state): (Option<String>, Option<String>) = bounded(
            inner.command_timeout,
            redis::cmd("HMGET")
                .arg(&self.task_key)
                .arg(&["owner", "state"])
                .query_async(&mut connection),
        )
        .await?;
        Ok(owner.as_deref() != Some(self.owner_field.as_str())
            || state.as_deref() == Some(TaskState::Canceled.as_v1()))
    }
}
