//! Paging and delivery pages: cursors, page limits, chunked federation, empty sources, merge
//! across sources. Providers and fixtures are the parent's (`federation/tests.rs`).

use super::*;

#[tokio::test]
async fn follows_next_cursor_and_sends_query_and_limit() {
    let provider = Provider::start(paged(vec![
        distinct("a", 0, 3),
        distinct("a", 3, 2),
        distinct("a", 5, 1),
    ]))
    .await;
    let tool = tool(vec![source("a", provider.url("/people?tenant=t1"))]);
    let (events, outcome) = collect(&federation(), &tool, "q=ada%20l").await;

    let seen = provider.seen();
    let queries: Vec<&str> = seen.iter().map(|s| s.raw_query.as_str()).collect();
    assert_eq!(
        queries,
        vec![
            "tenant=t1&q=ada%20l&limit=100",
            "tenant=t1&q=ada%20l&cursor=p1&limit=100",
            "tenant=t1&q=ada%20l&cursor=p2&limit=100",
        ]
    );
    assert!(seen.iter().all(|s| s.path == "/people"));
    assert!(seen
        .iter()
        .all(|s| s.headers.get("accept").unwrap() == "application/json"));
    assert_eq!(page_sizes(&events, "a"), vec![3, 2, 1]);
    let done = terminal(&events, "a");
    assert_eq!((done.status, done.page_index), (SourceStatus::Complete, 3));
    assert_eq!(outcome.records().len(), 6);
    assert!(!outcome.is_partial());
    assert_eq!(outcome.provenance().len(), 1);
}

#[tokio::test]
async fn provider_page_larger_than_page_size_is_split_and_page_limit_is_sent() {
    let provider =
        Provider::start(paged(vec![distinct("a", 0, 250), distinct("a", 250, 30)])).await;
    let mut a = source("a", provider.url("/"));
    a.page_limit = Some(250);
    let (events, outcome) = collect(&federation(), &tool(vec![a]), "").await;
    assert_eq!(page_sizes(&events, "a"), vec![100, 100, 50, 30]);
    assert_eq!(terminal(&events, "a").page_index, 4);
    assert_eq!(provider.seen()[0].raw_query, "limit=250");
    assert_eq!(outcome.records().len(), 280);
    // The first page's records arrive in provider order, mapped.
    let first = &events[0].records;
    let refs: Vec<&str> = first.iter().map(|r| r.record_ref.as_str()).collect();
    assert!(refs.contains(&"bos:person:a:0"));
    assert_eq!(first[0].attributes[0].0.as_ref(), "k");
}

#[tokio::test]
async fn records_are_federated_within_each_chunk_and_across_everything_in_the_result() {
    // Chunk 1 (records 0..100) holds 0 and 1 sharing an email (case and spaces differ) and
    // 2 and 3 sharing a phone; record 150 (chunk 2) shares 0's email.
    let mut records = distinct("a", 0, 200);
    records[0] = provider_record("a", "0", json!("Ada@Example.org "), Value::Null);
    records[1] = provider_record("a", "1", json!("ada@example.org"), Value::Null);
    records[2] = provider_record("a", "2", Value::Null, json!("+44 20 7946 0000"));
    records[3] = provider_record("a", "3", Value::Null, json!("+44-20-7946-0000"));
    records[150] = provider_record("a", "150", json!("ADA@example.org"), Value::Null);
    let provider = Provider::start(paged(vec![records])).await;
    let (events, outcome) = collect(
        &federation(),
        &tool(vec![source("a", provider.url("/"))]),
        "",
    )
    .await;

    assert_eq!(page_sizes(&events, "a"), vec![98, 100]);
    let merged = events[0]
        .records
        .iter()
        .find(|r| r.record_ref == "bos:person:a:0")
        .unwrap();
    let matched = merged.identity_match.as_ref().unwrap();
    assert_eq!(matched.rules, vec![MatchRule::Email]);
    assert_eq!(
        matched.record_refs,
        vec!["bos:person:a:0", "bos:person:a:1"]
    );
    assert!(events[1]
        .records
        .iter()
        .any(|r| r.record_ref == "bos:person:a:150"));

    // The final result merges across chunks: 0, 1 and 150 are one record.
    assert_eq!(outcome.records().len(), 200 - 3);
    let merged = outcome
        .records()
        .iter()
        .find(|r| r.record_ref == "bos:person:a:0")
        .unwrap();
    assert_eq!(
        merged.identity_match.as_ref().unwrap().record_refs,
        vec!["bos:person:a:0", "bos:person:a:1", "bos:person:a:150"]
    );
    assert_eq!(merged.sources.len(), 3);
}

#[tokio::test]
async fn empty_source_completes_with_page_index_zero() {
    let provider = Provider::start(paged(vec![vec![]])).await;
    let other = Provider::start(paged(vec![vec![], distinct("b", 0, 1)])).await;
    let tool = tool(vec![
        source("a", provider.url("/")),
        source("b", other.url("/")),
    ]);
    let (events, outcome) = collect(&federation(), &tool, "").await;
    let done = terminal(&events, "a");
    assert_eq!((done.status, done.page_index), (SourceStatus::Complete, 0));
    // An empty provider page with a cursor is followed, not delivered.
    assert_eq!(page_sizes(&events, "b"), vec![1]);
    assert_eq!(terminal(&events, "b").page_index, 1);
    assert!(!outcome.is_partial());
    assert_eq!(outcome.records().len(), 1);
}

#[tokio::test]
async fn sources_merge_across_each_other_in_the_final_result() {
    let a = Provider::start(paged(vec![vec![provider_record(
        "a",
        "1",
        json!("x@example.org"),
        json!("+1 555 0100"),
    )]]))
    .await;
    let b = Provider::start(paged(vec![vec![
        provider_record("b", "7", Value::Null, json!("+15550100")),
        provider_record("b", "8", json!("solo@example.org"), Value::Null),
    ]]))
    .await;
    let tool = tool(vec![source("b", b.url("/")), source("a", a.url("/"))]);
    let (_, outcome) = collect(&federation(), &tool, "").await;
    let json: Value = serde_json::from_slice(&outcome.operation_result_json()).unwrap();
    assert_eq!(json["metadata"]["result_count"], 2);
    assert_eq!(json["metadata"]["completeness"], "complete");
    let first = &json["result"][0];
    assert_eq!(first["record_ref"], "bos:person:a:1");
    assert_eq!(first["display_name"], "a 1");
    assert_eq!(first["identity_match"]["rules"], json!(["phone"]));
    assert_eq!(
        first["identity_match"]["record_refs"],
        json!(["bos:person:a:1", "bos:person:b:7"])
    );
    assert_eq!(first["sources"][1]["source_identity"], "b");
    assert_eq!(first["sources"][0]["version"], 1);
    assert_eq!(json["result"][1]["identity_match"], Value::Null);
    let provenance: Vec<&str> = json["metadata"]["provenance"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["source_identity"].as_str().unwrap())
        .collect();
    assert_eq!(provenance, vec!["a", "b"]);
}
