//! The Redis task store's own tests against a real Redis: two instances sharing tasks, a
//! subscriber whose log was trimmed, expiry after retention.

use super::*;

redis_only!(two_instances_share_tasks, TaskStoreConfig::default());
/// Two stores on one prefix are two instances: a task run on A is read, listed, followed and
/// canceled on B.
async fn two_instances_share_tasks(h: &Harness) {
    const N_BEFORE: usize = 3;
    const N_AFTER: usize = 40;
    let a = &h.store;
    let b = h.instance().await;
    let stamp = "2026-12-02T10:00:00.000Z";
    a.create(&alice(), &task("t1", "ctx", TaskState::Working, stamp))
        .await
        .unwrap();
    for n in 0..N_BEFORE {
        a.append(&alice(), "t1", &artifact_event("t1", n))
            .await
            .unwrap();
    }
    let got = b.get(&alice(), "t1").await.unwrap().unwrap();
    assert_eq!(got.version, N_BEFORE as u64 + 1);

    // B subscribes mid-way: the snapshot, then exactly the remaining events in order.
    let mut sub = b.subscribe(&alice(), "t1").await.unwrap().unwrap();
    assert_eq!(sub.snapshot.artifacts.len(), N_BEFORE);
    let reader = async {
        let mut seen = Vec::new();
        while let Some(event) = sub.next().await {
            seen.push(event);
        }
        seen
    };
    let writer = async {
        for n in N_BEFORE..N_BEFORE + N_AFTER {
            a.append(&alice(), "t1", &artifact_event("t1", n))
                .await
                .unwrap();
            if n % 8 == 0 {
                tokio::time::sleep(Duration::from_millis(15)).await;
            }
        }
        a.append(&alice(), "t1", &status_event("t1", TaskState::Completed))
            .await
            .unwrap();
    };
    let (seen, ()) = tokio::join!(reader, writer);
    let mut expected: Vec<StreamResponse> = (N_BEFORE..N_BEFORE + N_AFTER)
        .map(|n| artifact_event("t1", n))
        .collect();
    expected.push(status_event("t1", TaskState::Completed));
    assert_eq!(seen, expected);

    // A cancel on B reaches the runner on A.
    a.create(&alice(), &task("t2", "ctx", TaskState::Working, stamp))
        .await
        .unwrap();
    let signal = a.cancelled(&alice(), "t2");
    let waiter = tokio::spawn(signal.wait());
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!waiter.is_finished());
    let started = Instant::now();
    assert!(matches!(
        b.cancel(&alice(), "t2").await,
        Ok(CancelOutcome::Canceled(_))
    ));
    tokio::time::timeout(Duration::from_secs(2), waiter)
        .await
        .expect("A's cancel signal fired")
        .unwrap();
    let waited = started.elapsed();
    eprintln!("cancel on B reached A after {waited:?}");
    assert!(waited < Duration::from_millis(600), "{waited:?}");
    match a
        .append(&alice(), "t2", &status_event("t2", TaskState::Completed))
        .await
    {
        Ok(Appended::Terminal(task)) => assert_eq!(task.status.state, TaskState::Canceled),
        other => panic!("A's append after B's cancel: {other:?}"),
    }

    // Another owner on B sees nothing.
    let bob = owner("acme", "app", "bob");
    assert_eq!(b.get(&bob, "t1").await, Ok(None));
    assert_eq!(b.cancel(&bob, "t2").await, Ok(CancelOutcome::NotFound));
    assert!(b.subscribe(&bob, "t1").await.unwrap().is_none());
    assert_eq!(
        b.append(&bob, "t1", &artifact_event("t1", 0)).await,
        Ok(Appended::NotFound)
    );
    check_list(&b, &bob, ListQuery::default(), &[]).await;
    check_list(&b, &alice(), ListQuery::default(), &["t2", "t1"]).await;
}

redis_only!(
    a_subscriber_the_log_was_trimmed_past_ends,
    TaskStoreConfig {
        max_events_per_task: 10,
        ..TaskStoreConfig::default()
    }
);
async fn a_subscriber_the_log_was_trimmed_past_ends(h: &Harness) {
    let store = &h.store;
    store
        .create(
            &alice(),
            &task("t1", "ctx", TaskState::Working, "2026-12-02T10:00:00.000Z"),
        )
        .await
        .unwrap();
    let mut sub = store.subscribe(&alice(), "t1").await.unwrap().unwrap();
    // `MAXLEN ~` trims whole stream nodes (100 entries by default): write well past one.
    for n in 0..400 {
        store
            .append(&alice(), "t1", &artifact_event("t1", n))
            .await
            .unwrap();
    }
    assert_eq!(sub.next().await, None);
    // A fresh subscription starts after the trim and gets every event.
    let mut sub = store.subscribe(&alice(), "t1").await.unwrap().unwrap();
    store
        .append(&alice(), "t1", &artifact_event("t1", 999))
        .await
        .unwrap();
    assert_eq!(sub.next().await, Some(artifact_event("t1", 999)));
}

redis_only!(
    terminal_tasks_expire_after_retention,
    TaskStoreConfig {
        max_tasks_per_tenant: 1,
        retain_terminal: Duration::from_millis(300),
        ..TaskStoreConfig::default()
    }
);
async fn terminal_tasks_expire_after_retention(h: &Harness) {
    let store = &h.store;
    let stamp = "2026-12-02T10:00:00.000Z";
    store
        .create(&alice(), &task("done", "c", TaskState::Working, stamp))
        .await
        .unwrap();
    store
        .put_push(&alice(), "done", "p1", Bytes::from_static(b"{}"))
        .await
        .unwrap();
    let mut sub = store.subscribe(&alice(), "done").await.unwrap().unwrap();
    let waiter = tokio::spawn(store.cancelled(&alice(), "done").wait());
    store
        .append(
            &alice(),
            "done",
            &status_event("done", TaskState::Completed),
        )
        .await
        .unwrap();
    assert_eq!(
        sub.next().await,
        Some(status_event("done", TaskState::Completed))
    );
    assert_eq!(sub.next().await, None);
    assert_eq!(
        store
            .create(&alice(), &task("next", "c", TaskState::Working, stamp))
            .await,
        Err(StoreError::Full)
    );
    // Still readable within the retention; gone, with its log and push configs, after it.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(store.get(&alice(), "done").await.unwrap().is_some());
    assert!(!waiter.is_finished(), "a completed task is not canceled");
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(store.get(&alice(), "done").await, Ok(None));
    assert_eq!(store.list_push(&alice(), "done").await, Ok(None));
    // The runner's signal of a task that went resolves.
    tokio::time::timeout(Duration::from_secs(2), waiter)
        .await
        .expect("the signal of a gone task resolves")
        .unwrap();
    // The slot is free again, and the list forgets the task.
    store
        .create(&alice(), &task("next", "c", TaskState::Working, stamp))
        .await
        .unwrap();
    check_list(store, &alice(), ListQuery::default(), &["next"]).await;
    let keys = h.keys().await;
    assert!(
        keys.iter().all(|key| !key.contains(":done")),
        "nothing of the expired task is left: {keys:?}"
    );
    // A recount (started by the sweep, in the background) sees the one live task.
    super::redis::tests_support::set_count(store, "acme", 7);
    assert_eq!(store.len(), 7);
    assert_eq!(store.sweep(tokio::time::Instant::now()), 0);
    let deadline = Instant::now() + Duration::from_secs(2);
    while store.len() != 1 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(store.counts(), [(Arc::from("acme"), 1)]);
}
