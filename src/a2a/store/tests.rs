//! Tests of the task store through its front ([`TaskStore`]), against both implementations.
//!
//! Each test shared by both is an `async fn(&Harness)` that [`both!`] runs twice: on a local
//! store and on a Redis store. Redis is found at `SLUICE_TEST_REDIS_URL` (default
//! `redis://127.0.0.1:6379`); when it is not reachable the Redis run prints a visible skip
//! line and passes, unless `SLUICE_REQUIRE_REDIS=1`, which makes it fail instead. Each Redis
//! run works under its own random prefix and deletes its keys at the end. Tests of one
//! implementation's own behaviour (the local buffer and sweep, Redis expiry and two
//! instances sharing one Redis) follow the shared ones.
//!
//! Redis expiry runs on the server clock, which `tokio::time::pause` cannot stop, so those
//! tests use retention of a few hundred milliseconds and real waits with wide margins.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ::redis::AsyncCommands as _;

use bytes::Bytes;

use super::*;
use crate::a2a::model::{
    Artifact, Part, StreamResponse, Task, TaskArtifactUpdateEvent, TaskState, TaskStatus,
    TaskStatusUpdateEvent,
};

fn owner(tenant: &str, client: &str, caller: &str) -> Owner {
    Owner {
        tenant: Arc::from(tenant),
        client: Arc::from(client),
        caller: Arc::from(caller),
    }
}

fn alice() -> Owner {
    owner("acme", "app", "alice")
}

fn status(state: TaskState, stamp: &str) -> TaskStatus {
    TaskStatus {
        state,
        message: None,
        timestamp: Some(stamp.to_owned()),
        extra: Default::default(),
    }
}

fn task(id: &str, context: &str, state: TaskState, stamp: &str) -> Task {
    Task {
        id: id.to_owned(),
        context_id: context.to_owned(),
        status: status(state, stamp),
        artifacts: Vec::new(),
        history: Vec::new(),
        metadata: None,
        extra: Default::default(),
    }
}

fn status_event(id: &str, state: TaskState) -> StreamResponse {
    StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
        task_id: id.to_owned(),
        context_id: "ctx".to_owned(),
        status: status(state, "2026-12-02T10:00:00.000Z"),
        metadata: None,
        extra: Default::default(),
    })
}

fn artifact_event(id: &str, n: usize) -> StreamResponse {
    StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
        task_id: id.to_owned(),
        context_id: "ctx".to_owned(),
        artifact: Artifact {
            artifact_id: format!("a{n}"),
            name: None,
            description: None,
            parts: vec![Part::text(format!("chunk {n}"))],
            metadata: None,
            extensions: Vec::new(),
            extra: Default::default(),
        },
        append: false,
        last_chunk: false,
        metadata: None,
        extra: Default::default(),
    })
}

// === harness ===

/// Which implementation a shared test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Local,
    Redis,
}

/// A store under test; for Redis also where it lives, to open a second instance and clean up.
struct Harness {
    store: TaskStore,
    kind: Kind,
    redis: Option<crate::session::RedisConfig>,
    config: TaskStoreConfig,
}

impl Harness {
    fn local(config: TaskStoreConfig) -> Self {
        Self {
            store: TaskStore::local(config.clone()),
            kind: Kind::Local,
            redis: None,
            config,
        }
    }

    /// A Redis store under a fresh prefix, or `None` (after printing why) when Redis is not
    /// reachable and not required.
    async fn redis(test: &str, config: TaskStoreConfig) -> Option<Self> {
        let redis = crate::session::redis_or_skip(&format!("a2a-{test}")).await?;
        let mut harness = Self {
            store: TaskStore::local(config.clone()),
            kind: Kind::Redis,
            redis: Some(redis),
            config,
        };
        harness.store = harness.instance().await;
        Some(harness)
    }

    /// Another instance on the same Redis and prefix (Redis only).
    async fn instance(&self) -> TaskStore {
        let redis = self.redis.as_ref().expect("a Redis harness");
        let (connection, namespace) = redis.shared().unwrap();
        TaskStore::redis(
            connection,
            namespace,
            redis.command_timeout,
            self.config.clone(),
        )
        .await
        .unwrap()
    }

    async fn connection(&self) -> ::redis::aio::MultiplexedConnection {
        let redis = self.redis.as_ref().expect("a Redis harness");
        let client = ::redis::Client::open(redis.url.as_str()).unwrap();
        client.get_multiplexed_async_connection().await.unwrap()
    }

    /// The keys of this test's namespace.
    async fn keys(&self) -> Vec<String> {
        let Some(redis) = &self.redis else {
            return Vec::new();
        };
        let (_, namespace) = redis.shared().unwrap();
        let mut connection = self.connection().await;
        let mut iter = connection
            .scan_match::<_, String>(format!("{namespace}*"))
            .await
            .unwrap();
        let mut keys = Vec::new();
        while let Some(key) = futures_util::StreamExt::next(&mut iter).await {
            keys.push(key.unwrap());
        }
        keys
    }

    /// Deletes every key of this test's namespace.
    async fn cleanup(self) {
        let keys = self.keys().await;
        if !keys.is_empty() {
            self.connection().await.del::<_, ()>(keys).await.unwrap();
        }
    }
}

/// Runs the shared test `$name` (an `async fn(&Harness)`) on a local and on a Redis store
/// made with `$config`: tests `$name::local` and `$name::redis`.
macro_rules! both {
    ($name:ident) => {
        both!($name, TaskStoreConfig::default());
    };
    ($name:ident, $config:expr) => {
        mod $name {
            use super::*;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn local() {
                super::$name(&Harness::local($config)).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn redis() {
                let Some(harness) = Harness::redis(stringify!($name), $config).await else {
                    return;
                };
                super::$name(&harness).await;
                harness.cleanup().await;
            }
        }
    };
}

/// Runs `$name` (an `async fn(&Harness)`) on a Redis store made with `$config` only.
macro_rules! redis_only {
    ($name:ident, $config:expr) => {
        mod $name {
            use super::*;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn redis() {
                let Some(harness) = Harness::redis(stringify!($name), $config).await else {
                    return;
                };
                super::$name(&harness).await;
                harness.cleanup().await;
            }
        }
    };
}

// === shared tests ===

both!(create_get_and_owner_isolation);
async fn create_get_and_owner_isolation(h: &Harness) {
    let store = &h.store;
    let t = task(
        "t1",
        "ctx",
        TaskState::Submitted,
        "2026-12-02T10:00:00.000Z",
    );
    assert_eq!(store.create(&alice(), &t).await, Ok(1));
    assert_eq!(store.create(&alice(), &t).await, Err(StoreError::Conflict));
    let got = store.get(&alice(), "t1").await.unwrap().unwrap();
    assert_eq!((got.task, got.version), (t.clone(), 1));
    // Another caller, client or tenant reads the task exactly like a missing one.
    for other in [
        owner("acme", "app", "bob"),
        owner("acme", "other", "alice"),
        owner("beta", "app", "alice"),
    ] {
        assert_eq!(store.get(&other, "t1").await, Ok(None));
        assert_eq!(
            store
                .append(&other, "t1", &status_event("t1", TaskState::Working))
                .await,
            Ok(Appended::NotFound)
        );
        assert_eq!(
            store.cancel(&other, "t1").await,
            Ok(CancelOutcome::NotFound)
        );
        assert_eq!(
            store
                .subscribe(&other, "t1")
                .await
                .unwrap()
                .map(|s| s.snapshot),
            None
        );
        assert_eq!(store.list_push(&other, "t1").await, Ok(None));
        // Its cancel signal is ready at once: there is nothing to run for that owner.
        tokio::time::timeout(Duration::from_secs(1), store.cancelled(&other, "t1").wait())
            .await
            .expect("ready at once");
    }
    assert_eq!(store.get(&alice(), "missing").await, Ok(None));
    assert_eq!(store.len(), 1);
    // Components that would run together in a key do not collide.
    let colon = owner("acme", "app:x", "y");
    let other = owner("acme", "app", "x:y");
    store
        .create(
            &colon,
            &task("k:1", "c", TaskState::Working, "2026-12-02T10:00:00.000Z"),
        )
        .await
        .unwrap();
    assert_eq!(store.get(&other, "k:1").await, Ok(None));
    assert!(store.get(&colon, "k:1").await.unwrap().is_some());
}

both!(append_applies_in_order_and_refuses_after_terminal);
async fn append_applies_in_order_and_refuses_after_terminal(h: &Harness) {
    let store = &h.store;
    let t = task(
        "t1",
        "ctx",
        TaskState::Submitted,
        "2026-12-02T10:00:00.000Z",
    );
    store.create(&alice(), &t).await.unwrap();
    let events = [
        status_event("t1", TaskState::Working),
        artifact_event("t1", 1),
        artifact_event("t1", 2),
    ];
    for (n, event) in events.iter().enumerate() {
        assert_eq!(
            store.append(&alice(), "t1", event).await,
            Ok(Appended::Applied(n as u64 + 2))
        );
    }
    let got = store.get(&alice(), "t1").await.unwrap().unwrap();
    assert_eq!(got.version, 4);
    assert_eq!(got.task.status.state, TaskState::Working);
    let ids: Vec<&str> = got
        .task
        .artifacts
        .iter()
        .map(|a| a.artifact_id.as_str())
        .collect();
    assert_eq!(ids, ["a1", "a2"]);

    // CANCELED first; the late COMPLETED is dropped.
    assert!(matches!(
        store.cancel(&alice(), "t1").await,
        Ok(CancelOutcome::Canceled(_))
    ));
    match store
        .append(&alice(), "t1", &status_event("t1", TaskState::Completed))
        .await
    {
        Ok(Appended::Terminal(task)) => assert_eq!(task.status.state, TaskState::Canceled),
        other => panic!("late COMPLETED: {other:?}"),
    }
    assert_eq!(store.get(&alice(), "t1").await.unwrap().unwrap().version, 5);
}

both!(concurrent_appends_all_land_once);
async fn concurrent_appends_all_land_once(h: &Harness) {
    const WRITERS: usize = 4;
    const EACH: usize = 25;
    let store = &h.store;
    let t = task("t1", "ctx", TaskState::Working, "2026-12-02T10:00:00.000Z");
    store.create(&alice(), &t).await.unwrap();
    // Writers racing on one task: every append lands exactly once, each with its own version.
    let mut versions: Vec<u64> = futures_util::future::join_all((0..WRITERS).map(|w| async move {
        let mut versions = Vec::new();
        for n in 0..EACH {
            match store
                .append(&alice(), "t1", &artifact_event("t1", w * EACH + n))
                .await
            {
                Ok(Appended::Applied(version)) => versions.push(version),
                other => panic!("append: {other:?}"),
            }
        }
        versions
    }))
    .await
    .into_iter()
    .flatten()
    .collect();
    versions.sort_unstable();
    let expected: Vec<u64> = (2..=(WRITERS * EACH) as u64 + 1).collect();
    assert_eq!(versions, expected);
    let got = store.get(&alice(), "t1").await.unwrap().unwrap();
    assert_eq!(got.task.artifacts.len(), WRITERS * EACH);
}

both!(cancel_semantics_and_signal);
async fn cancel_semantics_and_signal(h: &Harness) {
    let store = &h.store;
    let t = task("t1", "ctx", TaskState::Working, "2026-12-02T10:00:00.000Z");
    store.create(&alice(), &t).await.unwrap();
    let signal = store.cancelled(&alice(), "t1");
    let waiter = tokio::spawn(signal.wait());
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(!waiter.is_finished());

    let canceled = match store.cancel(&alice(), "t1").await {
        Ok(CancelOutcome::Canceled(task)) => task,
        other => panic!("cancel: {other:?}"),
    };
    assert_eq!(canceled.status.state, TaskState::Canceled);
    assert_ne!(canceled.status.timestamp, t.status.timestamp);
    tokio::time::timeout(Duration::from_secs(1), waiter)
        .await
        .expect("the cancel signal fired")
        .unwrap();
    // Canceling again is the -32002 case; a signal asked for after the cancel is ready.
    assert_eq!(
        store.cancel(&alice(), "t1").await,
        Ok(CancelOutcome::NotCancelable(canceled))
    );
    tokio::time::timeout(
        Duration::from_secs(1),
        store.cancelled(&alice(), "t1").wait(),
    )
    .await
    .expect("ready at once");

    let done = task(
        "t2",
        "ctx",
        TaskState::Completed,
        "2026-12-02T10:00:00.000Z",
    );
    store.create(&alice(), &done).await.unwrap();
    assert_eq!(
        store.cancel(&alice(), "t2").await,
        Ok(CancelOutcome::NotCancelable(done))
    );
    assert_eq!(
        store.cancel(&alice(), "nope").await,
        Ok(CancelOutcome::NotFound)
    );
}

/// Lists with `q` page after page; checks the ids in order and the total.
async fn check_list(store: &TaskStore, who: &Owner, mut q: ListQuery, expected: &[&str]) {
    let mut seen = Vec::new();
    for _ in 0..100 {
        let page = store.list(who, &q).await.unwrap();
        assert_eq!(page.total_size, expected.len());
        seen.extend(page.tasks.into_iter().map(|t| t.id));
        if page.next_page_token.is_empty() {
            break;
        }
        q.page_token = Some(page.next_page_token);
    }
    assert_eq!(seen, expected, "{q:?}");
}

both!(list_pages_filters_and_isolation);
async fn list_pages_filters_and_isolation(h: &Harness) {
    let store = &h.store;
    let rows = [
        ("t1", "c1", TaskState::Working, "2026-12-02T10:00:01.000Z"),
        ("t2", "c2", TaskState::Completed, "2026-12-02T10:00:02.000Z"),
        ("t3", "c1", TaskState::Working, "2026-12-02T10:00:03.000Z"),
        ("t4", "c1", TaskState::Completed, "2026-12-02T10:00:03.000Z"),
        ("t5", "c2", TaskState::Working, "2026-12-02T10:00:05.000Z"),
    ];
    for (id, ctx, state, stamp) in rows {
        store
            .create(&alice(), &task(id, ctx, state, stamp))
            .await
            .unwrap();
    }
    let bob = owner("acme", "app", "bob");
    store
        .create(
            &bob,
            &task("b1", "c1", TaskState::Working, "2026-12-02T10:00:09.000Z"),
        )
        .await
        .unwrap();

    let all = ["t5", "t4", "t3", "t2", "t1"];
    for page_size in [0, 1, 2, 3, 5, 500] {
        let q = ListQuery {
            page_size,
            ..ListQuery::default()
        };
        check_list(store, &alice(), q, &all).await;
    }
    let by_context = ListQuery {
        context_id: Some("c1".into()),
        page_size: 1,
        ..ListQuery::default()
    };
    check_list(store, &alice(), by_context, &["t4", "t3", "t1"]).await;
    let by_state = ListQuery {
        state: Some(TaskState::Completed),
        ..ListQuery::default()
    };
    check_list(store, &alice(), by_state, &["t4", "t2"]).await;
    let after = ListQuery {
        status_after: Some("2026-12-02T10:00:02.000Z".into()),
        page_size: 2,
        ..ListQuery::default()
    };
    check_list(store, &alice(), after, &["t5", "t4", "t3"]).await;
    check_list(store, &bob, ListQuery::default(), &["b1"]).await;
    check_list(
        store,
        &owner("beta", "app", "alice"),
        ListQuery::default(),
        &[],
    )
    .await;

    // A status change moves a task to the front and into the state filter.
    let mut completed = status_event("t1", TaskState::Completed);
    if let StreamResponse::StatusUpdate(update) = &mut completed {
        update.status.timestamp = Some("2026-12-02T10:00:07.000Z".into());
    }
    store.append(&alice(), "t1", &completed).await.unwrap();
    let by_state = ListQuery {
        state: Some(TaskState::Completed),
        ..ListQuery::default()
    };
    check_list(store, &alice(), by_state, &["t1", "t4", "t2"]).await;

    for bad in ["%%%", "bm8tc2VwYXJhdG9y"] {
        let q = ListQuery {
            page_token: Some(bad.into()),
            ..ListQuery::default()
        };
        assert_eq!(
            store.list(&alice(), &q).await,
            Err(StoreError::BadPageToken)
        );
    }
}

both!(subscribe_has_no_gap_and_no_duplicate_under_a_concurrent_writer);
async fn subscribe_has_no_gap_and_no_duplicate_under_a_concurrent_writer(h: &Harness) {
    // Redis rewrites the whole snapshot per event (and this one grows by an artifact per
    // event), so its run is shorter.
    let n_events = match h.kind {
        Kind::Local => 2_000,
        Kind::Redis => 300,
    };
    let store = &h.store;
    let t = task("t1", "ctx", TaskState::Working, "2026-12-02T10:00:00.000Z");
    store.create(&alice(), &t).await.unwrap();
    let writer = async {
        for n in 0..n_events {
            store
                .append(&alice(), "t1", &artifact_event("t1", n))
                .await
                .unwrap();
            if n % 16 == 0 {
                tokio::task::yield_now().await;
            }
        }
        store
            .append(&alice(), "t1", &status_event("t1", TaskState::Completed))
            .await
            .unwrap();
    };
    // Subscribers join at different points; each must see exactly the events after its
    // snapshot, in order, then the COMPLETED that ends it.
    let readers = async {
        let mut readers = Vec::new();
        for _ in 0..4 {
            let mut sub = store.subscribe(&alice(), "t1").await.unwrap().unwrap();
            readers.push(async move {
                let mut next = sub.snapshot.artifacts.len();
                let mut ended = false;
                while let Some(event) = sub.next().await {
                    match event {
                        StreamResponse::ArtifactUpdate(update) => {
                            assert_eq!(update.artifact.artifact_id, format!("a{next}"));
                            next += 1;
                        }
                        StreamResponse::StatusUpdate(update) => {
                            assert_eq!(update.status.state, TaskState::Completed);
                            ended = true;
                        }
                        other => panic!("unexpected {other:?}"),
                    }
                }
                (next, ended)
            });
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        futures_util::future::join_all(readers).await
    };
    let ((), results) = tokio::join!(writer, readers);
    for (next, ended) in results {
        // A local subscriber that fell more than the buffer behind ends early without
        // COMPLETED; one that did not must have seen every event. Redis keeps the log, so
        // every subscriber sees every event.
        if ended || h.kind == Kind::Redis {
            assert!(ended);
            assert_eq!(next, n_events);
        }
    }
    // A subscriber to the finished task gets the snapshot and the end at once.
    let mut late = store.subscribe(&alice(), "t1").await.unwrap().unwrap();
    assert_eq!(late.snapshot.status.state, TaskState::Completed);
    assert_eq!(late.next().await, None);
}

both!(
    tenant_cap,
    TaskStoreConfig {
        max_tasks_per_tenant: 2,
        ..TaskStoreConfig::default()
    }
);
async fn tenant_cap(h: &Harness) {
    let store = &h.store;
    let stamp = "2026-12-02T10:00:00.000Z";
    store
        .create(&alice(), &task("t1", "c", TaskState::Working, stamp))
        .await
        .unwrap();
    store
        .create(
            &owner("acme", "app", "bob"),
            &task("t2", "c", TaskState::Working, stamp),
        )
        .await
        .unwrap();
    assert_eq!(
        store
            .create(&alice(), &task("t3", "c", TaskState::Working, stamp))
            .await,
        Err(StoreError::Full)
    );
    // Another tenant is not affected.
    let other = owner("beta", "app", "alice");
    store
        .create(&other, &task("t3", "c", TaskState::Working, stamp))
        .await
        .unwrap();
    let mut counts = store.counts();
    counts.sort();
    assert_eq!(counts, [(Arc::from("acme"), 2), (Arc::from("beta"), 1)]);
}

both!(
    push_configs_are_owner_scoped_and_capped,
    TaskStoreConfig {
        max_push_configs_per_task: 2,
        ..TaskStoreConfig::default()
    }
);
async fn push_configs_are_owner_scoped_and_capped(h: &Harness) {
    let store = &h.store;
    let stamp = "2026-12-02T10:00:00.000Z";
    store
        .create(&alice(), &task("t1", "c", TaskState::Working, stamp))
        .await
        .unwrap();
    let one = Bytes::from_static(br#"{"id":"p1"}"#);
    let two = Bytes::from_static(br#"{"id":"p2"}"#);
    assert_eq!(
        store.put_push(&alice(), "t1", "p1", one.clone()).await,
        Ok(true)
    );
    assert_eq!(
        store.put_push(&alice(), "t1", "p2", two.clone()).await,
        Ok(true)
    );
    assert_eq!(
        store.put_push(&alice(), "t1", "p3", one.clone()).await,
        Err(StoreError::TooManyPushConfigs)
    );
    // Replacing an existing one is not a new one.
    let two_b = Bytes::from_static(br#"{"id":"p2","v":2}"#);
    assert_eq!(
        store.put_push(&alice(), "t1", "p2", two_b.clone()).await,
        Ok(true)
    );
    assert_eq!(
        store.get_push(&alice(), "t1", "p2").await,
        Ok(Some(two_b.clone()))
    );
    assert_eq!(
        store.list_push(&alice(), "t1").await,
        Ok(Some(vec![one.clone(), two_b.clone()]))
    );
    assert_eq!(store.push_configs(&alice(), "t1").await.unwrap().len(), 2);
    let bob = owner("acme", "app", "bob");
    assert_eq!(
        store.put_push(&bob, "t1", "p9", one.clone()).await,
        Ok(false)
    );
    assert_eq!(store.get_push(&bob, "t1", "p1").await, Ok(None));
    assert_eq!(store.delete_push(&bob, "t1", "p1").await, Ok(false));
    assert_eq!(store.push_configs(&bob, "t1").await, Ok(Vec::new()));
    assert_eq!(store.delete_push(&alice(), "t1", "p1").await, Ok(true));
    assert_eq!(store.delete_push(&alice(), "t1", "p1").await, Ok(false));
    assert_eq!(
        store.list_push(&alice(), "t1").await,
        Ok(Some(vec![two_b.clone()]))
    );
    assert_eq!(store.list_push(&alice(), "missing").await, Ok(None));
    assert_eq!(store.get_push(&alice(), "t1", "p1").await, Ok(None));
    // A freed slot takes a new one, listed after the older ones.
    let three = Bytes::from_static(br#"{"id":"p3"}"#);
    assert_eq!(
        store.put_push(&alice(), "t1", "p3", three.clone()).await,
        Ok(true)
    );
    assert_eq!(
        store.list_push(&alice(), "t1").await,
        Ok(Some(vec![two_b, three]))
    );
}

// === local only ===

#[tokio::test]
async fn a_subscriber_that_falls_behind_ends() {
    let store = TaskStore::local(TaskStoreConfig::default());
    store
        .create(
            &alice(),
            &task("t1", "ctx", TaskState::Working, "2026-12-02T10:00:00.000Z"),
        )
        .await
        .unwrap();
    let mut sub = store.subscribe(&alice(), "t1").await.unwrap().unwrap();
    for n in 0..local::SUBSCRIBER_BUFFER + 1 {
        store
            .append(&alice(), "t1", &artifact_event("t1", n))
            .await
            .unwrap();
    }
    assert_eq!(sub.next().await, None);
    // Within the buffer, every event arrives.
    let mut sub = store.subscribe(&alice(), "t1").await.unwrap().unwrap();
    store
        .append(&alice(), "t1", &artifact_event("t1", 99))
        .await
        .unwrap();
    assert_eq!(sub.next().await, Some(artifact_event("t1", 99)));
}

#[tokio::test(start_paused = true)]
async fn sweep_drops_terminal_after_retention_and_live_after_ttl() {
    let store = TaskStore::local(TaskStoreConfig {
        max_tasks_per_tenant: 2,
        retain_terminal: Duration::from_secs(60),
        active_ttl: Duration::from_secs(600),
        ..TaskStoreConfig::default()
    });
    let stamp = "2026-12-02T10:00:00.000Z";
    store
        .create(&alice(), &task("live", "c", TaskState::Working, stamp))
        .await
        .unwrap();
    store
        .create(&alice(), &task("done", "c", TaskState::Working, stamp))
        .await
        .unwrap();
    tokio::time::advance(Duration::from_secs(30)).await;
    store
        .append(
            &alice(),
            "done",
            &status_event("done", TaskState::Completed),
        )
        .await
        .unwrap();
    tokio::time::advance(Duration::from_secs(59)).await;
    assert_eq!(store.sweep(tokio::time::Instant::now()), 0);
    tokio::time::advance(Duration::from_secs(1)).await;
    assert_eq!(store.sweep(tokio::time::Instant::now()), 1);
    assert_eq!(store.get(&alice(), "done").await, Ok(None));
    assert!(store.get(&alice(), "live").await.unwrap().is_some());
    // The swept task's slot is free again.
    store
        .create(&alice(), &task("next", "c", TaskState::Working, stamp))
        .await
        .unwrap();
    tokio::time::advance(Duration::from_secs(600)).await;
    assert_eq!(store.sweep(tokio::time::Instant::now()), 2);
    assert_eq!(store.len(), 0);
    assert!(store.counts().is_empty());
}

// === Redis only ===

mod redis_only;
