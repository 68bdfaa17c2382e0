//! Tests of the whole registry through its rendered exposition: parsed with `prometheus-parse`
//! (a lenient parser) and checked by a strict structural reader of our own, so a scrape that
//! Prometheus would reject fails here.

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use prometheus_parse::{Sample, Scrape, Value};

use super::*;

// === helpers ===

fn parse(text: &str) -> Scrape {
    let lines = text.lines().map(|line| Ok(line.to_owned()));
    Scrape::parse(lines).expect("exposition parses")
}

/// `prometheus-parse` does not unescape label values; undo the three escapes the format has.
fn unescape(raw: &str) -> String {
    let mut out = String::new();
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('\\') => out.push('\\'),
            Some('"') => out.push('"'),
            Some('n') => out.push('\n'),
            other => panic!("bad escape \\{other:?} in {raw:?}"),
        }
    }
    out
}

fn samples<'a>(scrape: &'a Scrape, metric: &str) -> Vec<&'a Sample> {
    scrape
        .samples
        .iter()
        .filter(|s| s.metric == metric)
        .collect()
}

/// The one sample of `metric` whose labels include all of `labels`.
fn sample<'a>(scrape: &'a Scrape, metric: &str, labels: &[(&str, &str)]) -> &'a Sample {
    let found: Vec<_> = samples(scrape, metric)
        .into_iter()
        .filter(|s| labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
        .collect();
    assert_eq!(found.len(), 1, "{metric} {labels:?}: {found:?}");
    found[0]
}

fn counter(scrape: &Scrape, metric: &str, labels: &[(&str, &str)]) -> f64 {
    match sample(scrape, metric, labels).value {
        Value::Counter(n) => n,
        ref other => panic!("{metric} {labels:?} is not a counter: {other:?}"),
    }
}

fn gauge(scrape: &Scrape, metric: &str, labels: &[(&str, &str)]) -> f64 {
    match sample(scrape, metric, labels).value {
        Value::Gauge(n) => n,
        ref other => panic!("{metric} {labels:?} is not a gauge: {other:?}"),
    }
}

/// `_sum` and `_count` of a histogram: untyped to `prometheus-parse`.
fn untyped(scrape: &Scrape, metric: &str, labels: &[(&str, &str)]) -> f64 {
    match sample(scrape, metric, labels).value {
        Value::Untyped(n) => n,
        ref other => panic!("{metric} {labels:?} is not untyped: {other:?}"),
    }
}

fn buckets(scrape: &Scrape, labels: &[(&str, &str)]) -> Vec<(f64, f64)> {
    match &sample(scrape, DURATION, labels).value {
        Value::Histogram(counts) => counts.iter().map(|c| (c.less_than, c.count)).collect(),
        other => panic!("{labels:?} is not a histogram: {other:?}"),
    }
}

/// A strict reader of the text format: returns each family's `# TYPE` and checks what
/// `prometheus-parse` lets through — every sample belongs to the family declared just before
/// it (HELP then TYPE, once per family), no series appears twice, the text ends in a newline.
fn check_structure(text: &str) -> BTreeMap<String, String> {
    assert!(text.ends_with('\n'), "exposition must end with a newline");
    let mut types = BTreeMap::new();
    let mut current: Option<(String, String)> = None;
    let mut pending_help: Option<String> = None;
    let mut series = HashSet::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let name = rest.split(' ').next().expect("HELP names a metric");
            pending_help = Some(name.to_owned());
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut parts = rest.split(' ');
            let name = parts.next().expect("TYPE names a metric").to_owned();
            let kind = parts.next().expect("TYPE has a kind").to_owned();
            assert_eq!(parts.next(), None, "{line}");
            assert_eq!(
                pending_help.take().as_deref(),
                Some(name.as_str()),
                "{line}"
            );
            assert!(
                types.insert(name.clone(), kind.clone()).is_none(),
                "family {name} declared twice"
            );
            current = Some((name, kind));
        } else {
            assert!(!line.starts_with('#'), "unexpected comment {line}");
            let (name_and_labels, value) = line.rsplit_once(' ').expect("sample has a value");
            assert!(
                value.parse::<f64>().is_ok() || value == "+Inf",
                "bad value in {line}"
            );
            let name = name_and_labels
                .split('{')
                .next()
                .expect("sample has a name");
            let (family, kind) = current.as_ref().expect("sample after a TYPE");
            let allowed = if kind == "histogram" {
                [
                    format!("{family}_bucket"),
                    format!("{family}_sum"),
                    format!("{family}_count"),
                ]
                .contains(&name.to_owned())
            } else {
                name == family
            };
            assert!(allowed, "{name} sampled under family {family}");
            assert!(
                series.insert(name_and_labels.to_owned()),
                "duplicate series {name_and_labels}"
            );
        }
    }
    types
}

fn expected_types() -> BTreeMap<String, String> {
    [
        (BUILD_INFO, "gauge"),
        (UPTIME, "gauge"),
        (REQUESTS, "counter"),
        (DURATION, "histogram"),
        (SESSIONS, "gauge"),
        (STREAMS, "gauge"),
        (SSE_FRAMES, "counter"),
        (SSE_BYTES, "counter"),
        (DOWNSTREAM_ERRORS, "counter"),
        (SOURCE_ERRORS, "counter"),
        (A2A_TASKS, "gauge"),
        (A2A_CALLS, "counter"),
        (A2A_REMOTE_CALLS, "counter"),
        (A2A_REMOTE_UP, "gauge"),
        ("mcp_server_operation_duration_seconds", "histogram"),
        ("mcp_server_session_duration_seconds", "histogram"),
    ]
    .into_iter()
    .map(|(name, kind)| (name.to_owned(), kind.to_owned()))
    .collect()
}

const MCP_POST: [(&str, &str); 2] = [("route", "mcp"), ("method", "POST")];

// === tests ===

#[test]
fn an_empty_registry_declares_every_family_and_no_request_series() {
    let metrics = Metrics::new();
    let text = metrics.render();
    assert_eq!(check_structure(&text), expected_types());

    let scrape = parse(&text);
    assert!(samples(&scrape, REQUESTS).is_empty());
    assert!(samples(&scrape, DURATION).is_empty());
    assert_eq!(
        gauge(
            &scrape,
            BUILD_INFO,
            &[("version", env!("CARGO_PKG_VERSION"))]
        ),
        1.0
    );
    assert_eq!(counter(&scrape, SSE_FRAMES, &[]), 0.0);
    for family in expected_types().keys() {
        assert!(scrape.docs.contains_key(family), "no HELP for {family}");
    }
}

#[test]
fn render_after_observations_parses_with_the_right_types_labels_and_counts() {
    let metrics = Metrics::new();
    let observations: [(RouteLabel, MethodLabel, u16, u64); 7] = [
        (RouteLabel::Mcp, MethodLabel::Post, 200, 300),
        (RouteLabel::Mcp, MethodLabel::Post, 200, 4_000),
        (RouteLabel::Mcp, MethodLabel::Post, 202, 800),
        (RouteLabel::Mcp, MethodLabel::Post, 418, 20_000),
        (RouteLabel::Mcp, MethodLabel::Get, 200, 1_000),
        (RouteLabel::Healthz, MethodLabel::Get, 200, 10),
        (RouteLabel::NotFound, MethodLabel::Other, 404, 50),
    ];
    for (route, method, status, micros) in observations {
        metrics.observe_request(route, method, status, Duration::from_micros(micros));
    }
    metrics.add_sse(3, 120);
    metrics.add_sse(2, 80);
    metrics.downstream_error("timeout");
    metrics.downstream_error("timeout");
    metrics.downstream_error("connect");
    metrics.source_error("unavailable");
    metrics.session_opened("acme");

    let text = metrics.render();
    assert_eq!(check_structure(&text), expected_types());
    let scrape = parse(&text);

    // Counters by exact status, unknown codes folded into "other", zero series left out.
    assert_eq!(samples(&scrape, REQUESTS).len(), 6);
    let requests = |route: &str, method: &str, status: &str| {
        counter(
            &scrape,
            REQUESTS,
            &[("route", route), ("method", method), ("status", status)],
        )
    };
    assert_eq!(requests("mcp", "POST", "200"), 2.0);
    assert_eq!(requests("mcp", "POST", "202"), 1.0);
    assert_eq!(requests("mcp", "POST", "other"), 1.0);
    assert_eq!(requests("mcp", "GET", "200"), 1.0);
    assert_eq!(requests("healthz", "GET", "200"), 1.0);
    assert_eq!(requests("not_found", "other", "404"), 1.0);

    // Histograms: one per observed (route, method), cumulative, ending in +Inf == _count.
    assert_eq!(samples(&scrape, DURATION).len(), 4);
    for labels in [
        &MCP_POST[..],
        &[("route", "mcp"), ("method", "GET")],
        &[("route", "healthz"), ("method", "GET")],
        &[("route", "not_found"), ("method", "other")],
    ] {
        let counts = buckets(&scrape, labels);
        assert_eq!(counts.len(), 15, "{labels:?}");
        assert!(
            counts
                .windows(2)
                .all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1),
            "{labels:?}: {counts:?}"
        );
        let (last_le, last_count) = counts[counts.len() - 1];
        assert_eq!(last_le, f64::INFINITY);
        let count = untyped(&scrape, &format!("{DURATION}_count"), labels);
        assert_eq!(last_count, count, "{labels:?}");
    }
    let mcp_post = buckets(&scrape, &MCP_POST);
    let at = |le: f64| {
        mcp_post
            .iter()
            .find(|(bound, _)| *bound == le)
            .map(|(_, n)| *n)
            .expect("bucket present")
    };
    assert_eq!(at(0.0005), 1.0); // 300 µs
    assert_eq!(at(0.001), 2.0); // + 800 µs
    assert_eq!(at(0.005), 3.0); // + 4 ms
    assert_eq!(at(0.025), 4.0); // + 20 ms
    assert_eq!(
        untyped(&scrape, &format!("{DURATION}_count"), &MCP_POST),
        4.0
    );
    let sum = untyped(&scrape, &format!("{DURATION}_sum"), &MCP_POST);
    assert!((sum - 0.0251).abs() < 1e-12, "{sum}");

    assert_eq!(counter(&scrape, SSE_FRAMES, &[]), 5.0);
    assert_eq!(counter(&scrape, SSE_BYTES, &[]), 200.0);
    assert_eq!(
        counter(&scrape, DOWNSTREAM_ERRORS, &[("code", "timeout")]),
        2.0
    );
    assert_eq!(
        counter(&scrape, DOWNSTREAM_ERRORS, &[("code", "connect")]),
        1.0
    );
    assert_eq!(
        counter(&scrape, SOURCE_ERRORS, &[("code", "unavailable")]),
        1.0
    );
    assert_eq!(gauge(&scrape, SESSIONS, &[("tenant", "acme")]), 1.0);
    assert_eq!(gauge(&scrape, STREAMS, &[("tenant", "acme")]), 0.0);
}

#[test]
fn tenant_names_are_escaped_and_read_back_intact() {
    let metrics = Metrics::new();
    let weird = "we\"ird\\ten\nant";
    metrics.session_opened(weird);
    metrics.session_opened(weird);
    let _stream = metrics.stream_guard(weird);

    let text = metrics.render();
    assert!(
        text.contains(r#"sluice_active_sessions{tenant="we\"ird\\ten\nant"} 2"#),
        "{text}"
    );
    check_structure(&text);

    let scrape = parse(&text);
    let sessions = samples(&scrape, SESSIONS);
    assert_eq!(sessions.len(), 1);
    let raw = sessions[0].labels.get("tenant").expect("tenant label");
    assert_eq!(unescape(raw), weird);
    assert_eq!(sessions[0].value, Value::Gauge(2.0));
    let streams = samples(&scrape, STREAMS);
    assert_eq!(streams[0].value, Value::Gauge(1.0));
}

#[test]
fn concurrent_observations_are_all_counted() {
    const THREADS: usize = 8;
    const PER_THREAD: u64 = 20_000;
    let metrics = Arc::new(Metrics::new());
    std::thread::scope(|scope| {
        for thread in 0..THREADS {
            let metrics = &metrics;
            scope.spawn(move || {
                // Half the threads share one series so the same counters are contended.
                let route = if thread % 2 == 0 {
                    RouteLabel::Mcp
                } else {
                    RouteLabel::RestCall
                };
                for i in 0..PER_THREAD {
                    let status = if i % 4 == 0 { 500 } else { 200 };
                    metrics.observe_request(
                        route,
                        MethodLabel::Post,
                        status,
                        Duration::from_micros(i % 2_000),
                    );
                    metrics.add_sse(1, 10);
                }
            });
        }
    });

    let scrape = parse(&metrics.render());
    let per_route = (THREADS as u64 / 2 * PER_THREAD) as f64;
    for route in ["mcp", "rest_call"] {
        let labels = [("route", route), ("method", "POST")];
        let ok = counter(
            &scrape,
            REQUESTS,
            &[labels[0], labels[1], ("status", "200")],
        );
        let failed = counter(
            &scrape,
            REQUESTS,
            &[labels[0], labels[1], ("status", "500")],
        );
        assert_eq!(failed, per_route / 4.0, "{route}");
        assert_eq!(ok + failed, per_route, "{route}");
        assert_eq!(
            untyped(&scrape, &format!("{DURATION}_count"), &labels),
            per_route
        );
        // Each thread observes 0..2000 µs ten times over: sum = 10 * (0+…+1999) µs per thread.
        let expected_sum = (THREADS / 2) as f64 * 10.0 * (1999.0 * 2000.0 / 2.0) * 1e-6;
        let sum = untyped(&scrape, &format!("{DURATION}_sum"), &labels);
        assert!((sum - expected_sum).abs() < 1e-6, "{route}: {sum}");
    }
    let total = (THREADS as u64 * PER_THREAD) as f64;
    assert_eq!(counter(&scrape, SSE_FRAMES, &[]), total);
    assert_eq!(counter(&scrape, SSE_BYTES, &[]), total * 10.0);
}

#[test]
fn concurrent_tenant_gauges_return_to_zero() {
    let metrics = Arc::new(Metrics::new());
    std::thread::scope(|scope| {
        for thread in 0..8 {
            let metrics = &metrics;
            scope.spawn(move || {
                let tenant = if thread % 2 == 0 { "even" } else { "odd" };
                for _ in 0..5_000 {
                    metrics.session_opened(tenant);
                    let guard = metrics.stream_guard(tenant);
                    metrics.stream_opened(tenant);
                    metrics.stream_closed(tenant);
                    drop(guard);
                    metrics.session_closed(tenant);
                }
                metrics.session_opened(tenant);
            });
        }
    });
    let scrape = parse(&metrics.render());
    for tenant in ["even", "odd"] {
        assert_eq!(gauge(&scrape, SESSIONS, &[("tenant", tenant)]), 4.0);
        assert_eq!(gauge(&scrape, STREAMS, &[("tenant", tenant)]), 0.0);
    }
}

#[tokio::test]
async fn a_stream_guard_decrements_when_the_body_holding_it_is_dropped() {
    let metrics = Arc::new(Metrics::new());
    let streams = |metrics: &Metrics| gauge(&parse(&metrics.render()), STREAMS, &[("tenant", "t")]);

    let first = metrics.stream_guard("t");
    let second = metrics.stream_guard("t");
    assert_eq!(streams(&metrics), 2.0);

    // A body moved into a task and dropped there, as hyper does when the client goes away.
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let _held = second;
        let _ = stopped.await;
    });
    assert_eq!(streams(&metrics), 2.0);
    drop(stop);
    task.await.expect("task ends");
    assert_eq!(streams(&metrics), 1.0);

    drop(first);
    assert_eq!(streams(&metrics), 0.0);
}

#[test]
fn pruned_tenants_leave_the_scrape_once_idle() {
    let metrics = Metrics::new();
    metrics.session_opened("kept");
    metrics.session_opened("removed");
    let stream = metrics.stream_guard("removed");
    metrics.session_closed("removed");

    metrics.prune_tenants(|tenant| tenant == "kept");
    let scrape = parse(&metrics.render());
    assert_eq!(gauge(&scrape, STREAMS, &[("tenant", "removed")]), 1.0);

    drop(stream);
    metrics.prune_tenants(|tenant| tenant == "kept");
    let scrape = parse(&metrics.render());
    let tenants: Vec<_> = samples(&scrape, SESSIONS)
        .iter()
        .filter_map(|s| s.labels.get("tenant"))
        .collect();
    assert_eq!(tenants, vec!["kept"]);
}

#[test]
fn registered_families_render_with_their_type_and_current_value() {
    let metrics = Metrics::new();
    let dropped = Arc::new(AtomicU64::new(0));
    metrics
        .register_counter(
            "sluice_audit_dropped_total",
            "Audit records dropped because the sink was full.",
            Arc::clone(&dropped),
        )
        .expect("fresh name");
    let live = Arc::new(std::sync::atomic::AtomicI64::new(0));
    let live_for_scrape = Arc::clone(&live);
    metrics
        .register_gauge_fn(
            "sluice_live_sessions",
            "Sessions in the store.",
            Box::new(move || live_for_scrape.load(std::sync::atomic::Ordering::Relaxed)),
        )
        .expect("fresh name");

    dropped.fetch_add(3, std::sync::atomic::Ordering::Relaxed);
    live.store(-2, std::sync::atomic::Ordering::Relaxed);

    let text = metrics.render();
    let types = check_structure(&text);
    assert_eq!(types["sluice_audit_dropped_total"], "counter");
    assert_eq!(types["sluice_live_sessions"], "gauge");
    let scrape = parse(&text);
    assert_eq!(counter(&scrape, "sluice_audit_dropped_total", &[]), 3.0);
    assert_eq!(gauge(&scrape, "sluice_live_sessions", &[]), -2.0);
    assert_eq!(
        scrape.docs["sluice_audit_dropped_total"],
        "Audit records dropped because the sink was full."
    );
}

#[test]
fn registration_refuses_bad_and_taken_names() {
    let metrics = Metrics::new();
    let counter = || Arc::new(AtomicU64::new(0));
    assert_eq!(
        metrics.register_counter("bad-name", "", counter()),
        Err(MetricsError::InvalidName("bad-name"))
    );
    for taken in [
        REQUESTS,
        "sluice_http_request_duration_seconds_bucket",
        UPTIME,
    ] {
        assert_eq!(
            metrics.register_counter(taken, "", counter()),
            Err(MetricsError::DuplicateName(taken))
        );
    }
    assert_eq!(metrics.register_counter("x_total", "", counter()), Ok(()));
    assert_eq!(
        metrics.register_gauge_fn("x_total", "", Box::new(|| 0)),
        Err(MetricsError::DuplicateName("x_total"))
    );
    // The refused registrations left nothing behind.
    let types = check_structure(&metrics.render());
    assert_eq!(types.len(), expected_types().len() + 1);
}

#[tokio::test(start_paused = true)]
async fn uptime_follows_the_clock_and_renders_are_deterministic() {
    let metrics = Metrics::new();
    tokio::time::advance(Duration::from_secs(90)).await;
    metrics.session_opened("b");
    metrics.session_opened("a");
    metrics.downstream_error("z");
    metrics.downstream_error("a");
    for route in RouteLabel::ALL.iter().rev() {
        metrics.observe_request(*route, MethodLabel::Get, 200, Duration::ZERO);
    }

    let first = metrics.render();
    assert_eq!(metrics.render(), first);
    let scrape = parse(&first);
    assert_eq!(gauge(&scrape, UPTIME, &[]), 90.0);

    // Series come in index order, tenants and codes by name, whatever the call order.
    let order = |metric: &str, label: &str| -> Vec<String> {
        first
            .lines()
            .filter(|line| line.starts_with(&format!("{metric}{{")))
            .filter_map(|line| {
                let start = line.find(&format!("{label}=\""))? + label.len() + 2;
                let end = start + line[start..].find('"')?;
                Some(line[start..end].to_owned())
            })
            .collect()
    };
    let routes: Vec<_> = RouteLabel::ALL
        .iter()
        .map(|r| r.as_str().to_owned())
        .collect();
    assert_eq!(order(REQUESTS, "route"), routes);
    assert_eq!(order(SESSIONS, "tenant"), vec!["a", "b"]);
    assert_eq!(order(DOWNSTREAM_ERRORS, "code"), vec!["a", "z"]);
}

#[test]
fn render_into_appends_to_a_reused_buffer() {
    let metrics = Metrics::new();
    let mut buffer = String::from("keep\n");
    metrics.render_into(&mut buffer);
    assert!(buffer.starts_with("keep\n# HELP sluice_build_info "));
    assert!(buffer.ends_with('\n'));
}

#[test]
fn metrics_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Metrics>();
    assert_send_sync::<GaugeGuard>();
}
