//! Time: the per-source timeout and the operation deadline keep what was delivered (timers
//! fired with `tokio::time::pause`). Providers and fixtures are the parent's.

use super::*;

#[tokio::test]
async fn source_timeout_keeps_delivered_pages() {
    let slow = Provider::start(|seen: &Seen| match seen.query.get("cursor") {
        None => Answer::Json(page(distinct("slow", 0, 2), Some("p1"))),
        Some(_) => Answer::Hang,
    })
    .await;
    let fast = Provider::start(paged(vec![distinct("fast", 0, 1)])).await;
    let mut slow_source = source("slow", slow.url("/"));
    slow_source.timeout_ms = Some(60_000);
    let tool = tool(vec![slow_source, source("fast", fast.url("/"))]);
    let federation = Arc::new(federation());
    let (tx, mut rx) = mpsc::channel(64);
    let run = tokio::spawn({
        let federation = Arc::clone(&federation);
        async move {
            let mut sink = ChannelSink::new(tx);
            federation.run(&tool, "", &mut sink, None).await
        }
    });
    let mut events = Vec::new();
    // Real time until both sources have shown what they will show…
    while events.len() < 3 {
        events.push(rx.recv().await.unwrap());
    }
    slow.wait_for("second page request", |c| {
        c.arrived.load(Ordering::SeqCst) == 2
    })
    .await;
    // …then the hung read's 60 s timer fires at once.
    tokio::time::pause();
    let outcome = run.await.unwrap();
    while let Some(event) = rx.recv().await {
        events.push(event);
    }
    check_invariants(&events, 2);
    let done = terminal(&events, "slow");
    assert_eq!(done.error, Some(SourceErrorCode::SourceTimeout));
    assert_eq!(done.page_index, 1);
    assert_eq!(terminal(&events, "fast").status, SourceStatus::Complete);
    assert_eq!(outcome.records().len(), 3);
    assert!(outcome.is_partial());
    assert_eq!(
        outcome.source_errors()[0].code,
        SourceErrorCode::SourceTimeout
    );
    // The timed-out request was cancelled at the provider.
    slow.wait_for("drop", |c| c.dropped.load(Ordering::SeqCst) == 1)
        .await;
}

#[tokio::test]
async fn operation_deadline_cancels_unfinished_sources_and_keeps_delivered_records() {
    let half = Provider::start(|seen: &Seen| match seen.query.get("cursor") {
        None => Answer::Json(page(distinct("half", 0, 5), Some("p1"))),
        Some(_) => Answer::Hang,
    })
    .await;
    let hung = Provider::start(|_: &Seen| Answer::Hang).await;
    let done = Provider::start(paged(vec![distinct("done", 0, 2)])).await;
    let mut sources = vec![
        source("half", half.url("/")),
        source("hung", hung.url("/")),
        source("done", done.url("/")),
    ];
    for source in &mut sources {
        source.timeout_ms = Some(3_600_000);
    }
    let mut tool = tool(sources);
    tool.deadline_ms = Some(120_000);
    let federation = Arc::new(federation());
    let (tx, mut rx) = mpsc::channel(64);
    let run = tokio::spawn({
        let federation = Arc::clone(&federation);
        async move {
            let mut sink = ChannelSink::new(tx);
            federation.run(&tool, "", &mut sink, None).await
        }
    });
    let mut events = Vec::new();
    while events.len() < 3 {
        events.push(rx.recv().await.unwrap());
    }
    half.wait_for("second page", |c| c.arrived.load(Ordering::SeqCst) == 2)
        .await;
    hung.wait_for("request", |c| c.arrived.load(Ordering::SeqCst) == 1)
        .await;
    tokio::time::pause();
    let outcome = run.await.unwrap();
    while let Some(event) = rx.recv().await {
        events.push(event);
    }
    check_invariants(&events, 3);
    for (identity, page_index) in [("half", 1), ("hung", 0)] {
        let event = terminal(&events, identity);
        assert_eq!(
            event.error,
            Some(SourceErrorCode::SourceTimeout),
            "{identity}"
        );
        assert_eq!(event.page_index, page_index, "{identity}");
    }
    assert_eq!(terminal(&events, "done").status, SourceStatus::Complete);
    assert_eq!(outcome.records().len(), 7);
    let codes: Vec<(&str, SourceErrorCode)> = outcome
        .source_errors()
        .iter()
        .map(|f| (&*f.source.source_identity, f.code))
        .collect();
    assert_eq!(
        codes,
        vec![
            ("half", SourceErrorCode::SourceTimeout),
            ("hung", SourceErrorCode::SourceTimeout)
        ]
    );
    half.wait_for("drop", |c| c.dropped.load(Ordering::SeqCst) == 1)
        .await;
    hung.wait_for("drop", |c| c.dropped.load(Ordering::SeqCst) == 1)
        .await;
}
