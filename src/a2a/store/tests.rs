//! Tests of the task store through its front ([`TaskStore`]), local implementation.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde_json::json;

use super::*;
use crate::a2a::model::{
    Artifact, Message, Part, Role, StreamResponse, Task, TaskArtifactUpdateEvent, TaskState,
    TaskStatus, TaskStatusUpdateEvent,
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

fn store() -> TaskStore {
    TaskStore::local(TaskStoreConfig::default())
}

#[tokio::test]
async fn create_get_and_owner_isolation() {
    let store = store();
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
    }
    assert_eq!(store.get(&alice(), "missing").await, Ok(None));
    assert_eq!(store.len(), 1);
}

#[tokio::test]
async fn append_applies_in_order_and_refuses_after_terminal() {
    let store = store();
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

#[tokio::test]
async fn cancel_semantics_and_signal() {
    let store = store();
    let t = task("t1", "ctx", TaskState::Working, "2026-12-02T10:00:00.000Z");
    store.create(&alice(), &t).await.unwrap();
    let signal = store.cancelled(&alice(), "t1");
    let waiter = tokio::spawn(signal.wait());
    tokio::task::yield_now().await;
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

#[tokio::test]
async fn list_pages_filters_and_isolation() {
    let store = store();
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
        check_list(&store, &alice(), q, &all).await;
    }
    let by_context = ListQuery {
        context_id: Some("c1".into()),
        page_size: 1,
        ..ListQuery::default()
    };
    check_list(&store, &alice(), by_context, &["t4", "t3", "t1"]).await;
    let by_state = ListQuery {
        state: Some(TaskState::Completed),
        ..ListQuery::default()
    };
    check_list(&store, &alice(), by_state, &["t4", "t2"]).await;
    let after = ListQuery {
        status_after: Some("2026-12-02T10:00:02.000Z".into()),
        page_size: 2,
        ..ListQuery::default()
    };
    check_list(&store, &alice(), after, &["t5", "t4", "t3"]).await;
    check_list(&store, &bob, ListQuery::default(), &["b1"]).await;
    check_list(
        &store,
        &owner("beta", "app", "alice"),
        ListQuery::default(),
        &[],
    )
    .await;

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscribe_has_no_gap_and_no_duplicate_under_a_concurrent_writer() {
    const N_EVENTS: usize = 2_000;
    let store = Arc::new(store());
    let t = task("t1", "ctx", TaskState::Working, "2026-12-02T10:00:00.000Z");
    store.create(&alice(), &t).await.unwrap();
    let writer = {
        let store = store.clone();
        tokio::spawn(async move {
            for n in 0..N_EVENTS {
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
        })
    };
    // Subscribers join at different points; each must see exactly the events after its
    // snapshot, in order, then the COMPLETED that ends it.
    let mut readers = Vec::new();
    for _ in 0..4 {
        let mut sub = store.subscribe(&alice(), "t1").await.unwrap().unwrap();
        readers.push(tokio::spawn(async move {
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
        }));
        tokio::task::yield_now().await;
    }
    writer.await.unwrap();
    for reader in readers {
        // A subscriber that fell more than the buffer behind ends early without COMPLETED;
        // one that did not must have seen every event.
        let (next, ended) = reader.await.unwrap();
        if ended {
            assert_eq!(next, N_EVENTS);
        }
    }
    // A subscriber to the finished task gets the snapshot and the end at once.
    let mut late = store.subscribe(&alice(), "t1").await.unwrap().unwrap();
    assert_eq!(late.snapshot.status.state, TaskState::Completed);
    assert_eq!(late.next().await, None);
}

#[tokio::test]
async fn a_subscriber_that_falls_behind_ends() {
    let store = store();
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

#[tokio::test]
async fn tenant_cap() {
    let store = TaskStore::local(TaskStoreConfig {
        max_tasks_per_tenant: 2,
        ..TaskStoreConfig::default()
    });
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

#[tokio::test]
async fn push_configs_are_owner_scoped_and_capped() {
    let store = TaskStore::local(TaskStoreConfig {
        max_push_configs_per_task: 2,
        ..TaskStoreConfig::default()
    });
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
    assert_eq!(store.list_push(&alice(), "t1").await, Ok(Some(vec![two_b])));
    assert_eq!(store.list_push(&alice(), "missing").await, Ok(None));
}

/// A small completed task: one history message, one artifact with a data part and a text part.
pub(crate) fn small_completed(n: usize) -> Task {
    let mut t = task(
        &format!("{n:08x}-5d2c-4a8e-9b1f-0c6e2d7a4b3f"),
        "ctx-0001",
        TaskState::Completed,
        "2026-12-02T10:00:00.000Z",
    );
    t.history.push(Message {
        message_id: format!("m-{n}"),
        role: Role::parse("ROLE_USER"),
        parts: vec![Part::text("look up Ada")],
        context_id: Some("ctx-0001".into()),
        task_id: None,
        metadata: None,
        extensions: Vec::new(),
        reference_task_ids: Vec::new(),
        extra: Default::default(),
    });
    t.artifacts.push(Artifact {
        artifact_id: "result".into(),
        name: None,
        description: None,
        parts: vec![
            Part::data(json!({"id": 1, "name": "Ada"})),
            Part::text("found"),
        ],
        metadata: None,
        extensions: Vec::new(),
        extra: Default::default(),
    });
    t
}
