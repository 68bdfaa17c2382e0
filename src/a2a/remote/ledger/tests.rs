//! The ledger's contract, run against both shapes: the local one always, the Redis one on the
//! machine's Redis (skipped with a visible line when unreachable, unless
//! `SLUICE_REQUIRE_REDIS=1`).

use std::sync::Arc;
use std::time::Duration;

use super::*;

fn config() -> LedgerConfig {
    LedgerConfig {
        active_ttl: Duration::from_secs(60),
        terminal_ttl: Duration::from_secs(30),
        max_tasks_per_tenant: 5,
    }
}

fn agent(client: &str) -> AgentKey {
    AgentKey {
        tenant: Arc::from("t"),
        client: Arc::from(client),
        agent: Arc::from("billing"),
    }
}

fn seen(task: &str, ctx: &str, state: TaskState, stamp: &str) -> Seen {
    Seen {
        task_id: Some(task.to_owned()),
        context_id: Some(ctx.to_owned()),
        status: Some(Bytes::from(format!(
            "{{\"state\":\"{}\",\"timestamp\":\"{stamp}\"}}",
            state.as_v1()
        ))),
        state,
        stamp: stamp.to_owned(),
    }
}

fn all() -> ListQuery {
    ListQuery {
        context_id: None,
        state: None,
        page_size: 0,
        page_token: None,
        status_after: None,
    }
}

async fn with_ledgers(test: &str, run: impl AsyncFn(&Ledger)) {
    run(&Ledger::local(config())).await;
    let Some(redis) = crate::session::redis_or_skip(test).await else {
        return;
    };
    let (connection, namespace) = redis.shared().expect("redis config");
    let ledger = Ledger::Redis(Arc::new(redis::RedisLedger::new(
        connection.clone(),
        namespace.clone(),
        Duration::from_secs(2),
        config(),
    )));
    run(&ledger).await;
    let mut connection = connection;
    let keys: Vec<String> = ::redis::cmd("KEYS")
        .arg(format!("{namespace}*"))
        .query_async(&mut connection)
        .await
        .unwrap_or_default();
    if !keys.is_empty() {
        let _: Result<i64, _> = ::redis::cmd("DEL")
            .arg(keys)
            .query_async(&mut connection)
            .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn owners_see_their_ids_and_nobody_else_does() {
    with_ledgers("ledger_owners", async |ledger: &Ledger| {
        let a = agent("app");
        let stamp = "2026-12-02T10:00:00.000Z";
        ledger
            .record(&a, "alice", &seen("t1", "c1", TaskState::Working, stamp))
            .await
            .unwrap();
        assert!(ledger.owns_task(&a, "alice", "t1").await.unwrap());
        assert!(ledger.owns_context(&a, "alice", "c1").await.unwrap());
        assert!(!ledger.owns_task(&a, "bob", "t1").await.unwrap());
        assert!(!ledger.owns_context(&a, "bob", "c1").await.unwrap());
        // Another client application of the same tenant is another namespace.
        assert!(!ledger
            .owns_task(&agent("other"), "alice", "t1")
            .await
            .unwrap());
        assert!(!ledger.owns_task(&a, "alice", "t2").await.unwrap());

        // Bob seeing alice's ids in an answer takes nothing from her.
        ledger
            .record(&a, "bob", &seen("t1", "c1", TaskState::Completed, stamp))
            .await
            .unwrap();
        assert!(!ledger.owns_task(&a, "bob", "t1").await.unwrap());
        let page = ledger.list(&a, "alice", &all()).await.unwrap();
        assert_eq!(page.entries.len(), 1);
        assert_eq!(page.entries[0].state, TaskState::Working);

        // A second task in alice's context keeps the context hers.
        ledger
            .record(&a, "alice", &seen("t2", "c1", TaskState::Submitted, stamp))
            .await
            .unwrap();
        assert!(ledger.owns_context(&a, "alice", "c1").await.unwrap());

        ledger.evict_task(&a, "t1").await.unwrap();
        assert!(!ledger.owns_task(&a, "alice", "t1").await.unwrap());
        assert!(ledger.owns_task(&a, "alice", "t2").await.unwrap());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_pages_only_the_callers_tasks_newest_first() {
    with_ledgers("ledger_list", async |ledger: &Ledger| {
        let a = agent("app");
        for (n, caller) in ["alice", "bob", "alice", "alice"].iter().enumerate() {
            let stamp = format!("2026-12-02T10:00:0{n}.000Z");
            let state = if n == 3 {
                TaskState::Completed
            } else {
                TaskState::Working
            };
            ledger
                .record(
                    &a,
                    caller,
                    &seen(&format!("t{n}"), &format!("c{n}"), state, &stamp),
                )
                .await
                .unwrap();
        }
        let page = ledger.list(&a, "alice", &all()).await.unwrap();
        let ids: Vec<&str> = page.entries.iter().map(|e| e.task_id.as_str()).collect();
        assert_eq!(ids, ["t3", "t2", "t0"]);
        assert_eq!(page.total_size, 3);
        let status = page.entries[0].status.as_deref().unwrap();
        assert!(std::str::from_utf8(status)
            .unwrap()
            .contains("TASK_STATE_COMPLETED"));

        let mut query = all();
        query.page_size = 2;
        let first = ledger.list(&a, "alice", &query).await.unwrap();
        assert_eq!(first.entries.len(), 2);
        assert!(!first.next_page_token.is_empty());
        query.page_token = Some(first.next_page_token);
        let second = ledger.list(&a, "alice", &query).await.unwrap();
        let ids: Vec<&str> = second.entries.iter().map(|e| e.task_id.as_str()).collect();
        assert_eq!(ids, ["t0"]);
        assert!(second.next_page_token.is_empty());

        let mut by_state = all();
        by_state.state = Some(TaskState::Completed);
        assert_eq!(
            ledger
                .list(&a, "alice", &by_state)
                .await
                .unwrap()
                .total_size,
            1
        );
        let mut by_context = all();
        by_context.context_id = Some("c2".into());
        assert_eq!(
            ledger
                .list(&a, "alice", &by_context)
                .await
                .unwrap()
                .total_size,
            1
        );
        let mut bad = all();
        bad.page_token = Some("%%%".into());
        assert_eq!(
            ledger.list(&a, "alice", &bad).await,
            Err(LedgerError::BadPageToken)
        );
        assert_eq!(ledger.list(&a, "bob", &all()).await.unwrap().total_size, 1);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_holds_at_most_its_cap() {
    with_ledgers("ledger_cap", async |ledger: &Ledger| {
        let a = agent("app");
        let stamp = "2026-12-02T10:00:00.000Z";
        for n in 0..5 {
            assert!(ledger.has_room("t").await.unwrap());
            ledger
                .record(
                    &a,
                    "alice",
                    &seen(&format!("t{n}"), "c", TaskState::Working, stamp),
                )
                .await
                .unwrap();
        }
        assert!(!ledger.has_room("t").await.unwrap());
        assert_eq!(
            ledger
                .record(&a, "alice", &seen("t9", "c", TaskState::Working, stamp))
                .await,
            Err(LedgerError::Full)
        );
        // Updates of known tasks still land.
        ledger
            .record(&a, "alice", &seen("t0", "c", TaskState::Completed, stamp))
            .await
            .unwrap();
        ledger.evict_task(&a, "t1").await.unwrap();
        assert!(ledger.has_room("t").await.unwrap());
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn local_entries_expire() {
    let ledger = Ledger::local(config());
    let a = agent("app");
    let stamp = "2026-12-02T10:00:00.000Z";
    ledger
        .record(
            &a,
            "alice",
            &seen("done", "c1", TaskState::Completed, stamp),
        )
        .await
        .unwrap();
    ledger
        .record(&a, "alice", &seen("busy", "c2", TaskState::Working, stamp))
        .await
        .unwrap();
    tokio::time::advance(Duration::from_secs(31)).await;
    assert!(!ledger.owns_task(&a, "alice", "done").await.unwrap());
    assert!(ledger.owns_task(&a, "alice", "busy").await.unwrap());
    ledger.sweep();
    assert_eq!(ledger.len(), 1);
    tokio::time::advance(Duration::from_secs(30)).await;
    ledger.sweep();
    assert_eq!(ledger.len(), 0);
    assert!(!ledger.owns_context(&a, "alice", "c2").await.unwrap());
}
