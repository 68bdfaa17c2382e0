//! Concurrency, cancellation and backpressure: the concurrency limit, dropping the run future,
//! a slow or closed sink, the null sink. Providers and fixtures are the parent's.

use super::*;

#[tokio::test]
async fn concurrency_limit_is_never_exceeded() {
    let provider = Provider::start(|seen: &Seen| {
        let identity = seen.path.trim_start_matches('/').to_owned();
        let next = if seen.query.contains_key("cursor") {
            None
        } else {
            Some("p1")
        };
        Answer::Delayed(
            Duration::from_millis(15),
            page(distinct(&identity, 0, 1), next),
        )
    })
    .await;
    let sources: Vec<Source> = (0..12)
        .map(|i| source(&format!("s{i}"), provider.url(&format!("/s{i}"))))
        .collect();
    let federation = Federation::new(FederationConfig {
        max_concurrent_sources: 3,
        ..FederationConfig::default()
    });
    let (events, outcome) = collect(&federation, &tool(sources), "").await;
    assert_eq!(events.len(), 12 * 3);
    assert_eq!(outcome.records().len(), 12);
    let max = provider.counters.max_in_flight.load(Ordering::SeqCst);
    assert!(max <= 3, "{max} reads in flight");
    assert!(max >= 2, "reads did not overlap ({max})");
}

#[tokio::test]
async fn dropping_the_run_future_drops_every_provider_request() {
    let provider = Provider::start(|_: &Seen| Answer::Hang).await;
    let sources: Vec<Source> = (0..4)
        .map(|i| source(&format!("s{i}"), provider.url(&format!("/s{i}"))))
        .collect();
    let tool = tool(sources);
    let federation = Arc::new(federation());
    let run = tokio::spawn({
        let federation = Arc::clone(&federation);
        async move { federation.run(&tool, "", &mut NullSink, None).await }
    });
    provider
        .wait_for("4 requests", |c| c.in_flight.load(Ordering::SeqCst) == 4)
        .await;
    run.abort();
    assert!(run.await.unwrap_err().is_cancelled());
    provider
        .wait_for("4 drops", |c| c.dropped.load(Ordering::SeqCst) == 4)
        .await;
    assert_eq!(provider.counters.in_flight.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn slow_sink_holds_sources_back_and_closed_sink_cancels() {
    let pages: Vec<Vec<Value>> = (0..40).map(|i| distinct("a", i, 1)).collect();
    let provider = Provider::start(paged(pages)).await;
    let federation = Arc::new(Federation::new(FederationConfig {
        max_concurrent_sources: 1,
        ..FederationConfig::default()
    }));
    let tool = tool(vec![source("a", provider.url("/"))]);
    let (tx, mut rx) = mpsc::channel(1);
    let run = tokio::spawn({
        let federation = Arc::clone(&federation);
        async move {
            let mut sink = ChannelSink::new(tx);
            federation.run(&tool, "", &mut sink, None).await
        }
    });
    // Nobody reads: the read stalls after a few pages instead of buffering all 40.
    provider
        .wait_for("a few pages", |c| c.arrived.load(Ordering::SeqCst) >= 2)
        .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let fetched = provider.counters.arrived.load(Ordering::SeqCst);
    assert!(fetched <= 5, "{fetched} pages fetched with nobody reading");
    // Take two events, then go away: the run stops and reports it was cancelled.
    let first = rx.recv().await.unwrap();
    assert_eq!(first.sequence, 1);
    rx.recv().await.unwrap();
    drop(rx);
    let outcome = run.await.unwrap();
    assert!(outcome.is_cancelled());
    assert!(outcome.is_partial());
    assert!(provider.counters.arrived.load(Ordering::SeqCst) < 40);
}

#[tokio::test]
async fn null_sink_gives_the_same_result_as_streaming() {
    let mut records = distinct("a", 0, 120);
    records[5] = provider_record("a", "5", json!("dup@example.org"), Value::Null);
    records[110] = provider_record("a", "110", json!("DUP@example.org"), Value::Null);
    let a = Provider::start(paged(vec![records])).await;
    let b = Provider::start(paged(vec![vec![provider_record(
        "b",
        "1",
        json!("dup@example.org"),
        Value::Null,
    )]]))
    .await;
    let tool = tool(vec![source("a", a.url("/")), source("b", b.url("/"))]);
    let federation = federation();
    let (_, streamed) = collect(&federation, &tool, "").await;
    let mut null = NullSink;
    let quiet = federation.run(&tool, "", &mut null, None).await;
    assert_eq!(streamed.records(), quiet.records());
    assert_eq!(quiet.records().len(), 120 - 1);
}
