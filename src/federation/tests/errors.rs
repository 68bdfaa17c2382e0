//! Source errors: every error code mapped, an identity mismatch after a good page, credentials
//! sent but never shown. Providers and fixtures are the parent's (`federation/tests.rs`).

use super::*;

#[tokio::test]
async fn every_error_code_is_mapped() {
    let provider = Provider::start(|seen: &Seen| match seen.path.as_str() {
        "/401" => Answer::Status(401, r#"{"error":"token expired"}"#),
        "/403" => Answer::Status(403, "forbidden"),
        "/429" => Answer::Status(429, "slow down"),
        "/500" => Answer::Status(500, "boom"),
        "/404" => Answer::Status(404, "nope"),
        "/html" => Answer::Json("<html>".into()),
        "/missing-key" => Answer::Json(
            r#"{"records":[{"source_identity":"missing-key","record_type":"person","observed_at":"t","fields":{}}],"next_cursor":null}"#.into(),
        ),
        "/big" => Answer::Json(page(distinct("big", 0, 50), None)),
        "/loop" => Answer::Json(page(vec![], Some("again"))),
        _ => Answer::Status(500, "unexpected"),
    })
    .await;
    // A port nothing listens on: bind, read the port, close.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let mut sources: Vec<Source> = [
        "401",
        "403",
        "429",
        "500",
        "404",
        "html",
        "missing-key",
        "big",
        "loop",
    ]
    .iter()
    .map(|name| source(name, provider.url(&format!("/{name}"))))
    .collect();
    sources.push(source("refused", format!("http://{closed}/")));
    let mut bad_header = source("bad-credential", provider.url("/500"));
    bad_header.credential = Some(SourceCredential {
        header: "bad header".into(),
        value: "x".into(),
    });
    sources.push(bad_header);
    let n_sources = sources.len();
    let federation = Federation::new(FederationConfig {
        max_provider_body_bytes: 2048,
        max_pages_per_source: 5,
        ..FederationConfig::default()
    });
    let (events, outcome) = collect(&federation, &tool(sources), "").await;

    let expect = [
        ("401", "provider_authorization_required"),
        ("403", "provider_authorization_required"),
        ("429", "rate_limited"),
        ("500", "source_unavailable"),
        ("404", "source_unavailable"),
        ("html", "source_unavailable"),
        ("missing-key", "source_unavailable"),
        ("big", "source_unavailable"),
        ("loop", "source_unavailable"),
        ("refused", "source_unavailable"),
        ("bad-credential", "source_unavailable"),
    ];
    for (identity, code) in expect {
        let event = terminal(&events, identity);
        assert_eq!(event.status, SourceStatus::Error, "{identity}");
        assert_eq!(
            event.error.map(SourceErrorCode::as_str),
            Some(code),
            "{identity}"
        );
        assert_eq!(event.page_index, 0, "{identity}");
    }
    assert_eq!(
        provider.seen().iter().filter(|s| s.path == "/loop").count(),
        5
    );
    assert!(outcome.is_partial());
    assert_eq!(outcome.records().len(), 0);
    assert_eq!(outcome.source_errors().len(), n_sources);
    let json: Value = serde_json::from_slice(&outcome.operation_result_json()).unwrap();
    assert_eq!(json["metadata"]["completeness"], "partial");
    assert_eq!(json["metadata"]["provenance"], json!([]));
    // Provider messages never travel.
    let text = format!("{}{}", events_text(&events), outcome_text(&outcome));
    for leaked in [
        "token expired",
        "forbidden",
        "slow down",
        "boom",
        "127.0.0.1",
        "<html>",
    ] {
        assert!(!text.contains(leaked), "{leaked} leaked");
    }
}

#[tokio::test]
async fn identity_mismatch_after_a_good_page_keeps_that_page() {
    let mut second = distinct("a", 10, 3);
    second.push(provider_record("not-a", "99", Value::Null, Value::Null));
    let provider = Provider::start(paged(vec![distinct("a", 0, 2), second])).await;
    let wrong_type = Provider::start(paged(vec![vec![json!({
        "source_identity": "t", "external_id": "1", "record_type": "company",
        "observed_at": "x", "fields": {}
    })]]))
    .await;
    let tool = tool(vec![
        source("a", provider.url("/")),
        source("t", wrong_type.url("/")),
    ]);
    let (events, outcome) = collect(&federation(), &tool, "").await;
    assert_eq!(page_sizes(&events, "a"), vec![2]);
    let done = terminal(&events, "a");
    assert_eq!(done.error, Some(SourceErrorCode::SourceIdentityMismatch));
    assert_eq!(done.page_index, 1);
    let done = terminal(&events, "t");
    assert_eq!(done.error, Some(SourceErrorCode::SourceIdentityMismatch));
    assert_eq!(done.page_index, 0);
    let refs: Vec<&str> = outcome
        .records()
        .iter()
        .map(|r| r.record_ref.as_str())
        .collect();
    assert_eq!(refs, vec!["bos:person:a:0", "bos:person:a:1"]);
    assert!(outcome.is_partial());
    // A source that delivered and then failed is in both provenance and source_errors.
    assert_eq!(outcome.provenance().len(), 1);
    assert!(!events_text(&events).contains("not-a"));
}

#[tokio::test]
async fn credential_is_sent_but_never_shown() {
    let provider = Provider::start(|seen: &Seen| {
        if seen
            .headers
            .get("authorization")
            .is_some_and(|v| v == "Bearer SECRET-TOKEN")
        {
            Answer::Status(500, "internal error near SECRET-TOKEN")
        } else {
            Answer::Status(401, "who are you")
        }
    })
    .await;
    let mut a = source("a", provider.url("/?api_key=SECRET-KEY"));
    a.credential = Some(SourceCredential {
        header: "Authorization".into(),
        value: "Bearer SECRET-TOKEN".into(),
    });
    let (events, outcome) = collect(&federation(), &tool(vec![a]), "").await;
    assert_eq!(
        terminal(&events, "a").error,
        Some(SourceErrorCode::SourceUnavailable)
    );
    let text = format!(
        "{}{}{:?}",
        events_text(&events),
        outcome_text(&outcome),
        outcome
    );
    assert!(!text.contains("SECRET"), "{text}");
}
