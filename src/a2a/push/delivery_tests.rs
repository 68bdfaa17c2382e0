//! Tests of push delivery against real webhook receivers (small hyper servers on
//! `127.0.0.1:0`, allowlisted with `http` allowed): headers and body, retries, redirects,
//! refusals without a connection, the bounded queue, per-task order, the audit records.

use std::collections::VecDeque;
use std::io::Write;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Response};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use parking_lot::Mutex;
use serde_json::Map;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use super::tests::{config, dev, strict};
use super::*;
use crate::audit::Audit;
use crate::config::{A2aSettings, AuditSettings, AuditWhenFull};

/// What a receiver saw of one request.
#[derive(Debug, Clone)]
struct Seen {
    path: String,
    headers: HeaderMap,
    body: Bytes,
}

/// A webhook receiver on `127.0.0.1:0`: answers from a script (then 200), records every
/// request and counts connections. Stops on drop.
struct Receiver {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
    connections: Arc<AtomicUsize>,
    task: JoinHandle<()>,
}

type Scripted = (u16, Vec<(&'static str, String)>);

impl Receiver {
    async fn start(script: Vec<Scripted>) -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("local addr");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let connections = Arc::new(AtomicUsize::new(0));
        let script = Arc::new(Mutex::new(VecDeque::from(script)));
        let task = tokio::spawn({
            let (seen, connections) = (Arc::clone(&seen), Arc::clone(&connections));
            async move {
                loop {
                    let Ok((stream, _)) = listener.accept().await else {
                        return;
                    };
                    connections.fetch_add(1, Ordering::SeqCst);
                    let (seen, script) = (Arc::clone(&seen), Arc::clone(&script));
                    tokio::spawn(async move {
                        let service = service_fn(move |request: http::Request<Incoming>| {
                            let (seen, script) = (Arc::clone(&seen), Arc::clone(&script));
                            async move {
                                let (head, body) = request.into_parts();
                                let body = body.collect().await?.to_bytes();
                                seen.lock().push(Seen {
                                    path: head.uri.to_string(),
                                    headers: head.headers,
                                    body,
                                });
                                let (status, headers) =
                                    script.lock().pop_front().unwrap_or((200, Vec::new()));
                                let mut response = Response::builder().status(status);
                                for (name, value) in headers {
                                    response = response.header(name, value);
                                }
                                Ok::<_, hyper::Error>(
                                    response
                                        .body(Full::new(Bytes::from_static(b"{\"ok\":true}")))
                                        .expect("response"),
                                )
                            }
                        });
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(TokioIo::new(stream), service)
                            .await;
                    });
                }
            }
        });
        Receiver {
            addr,
            seen,
            connections,
            task,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().clone()
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn settings(workers: usize, queue: usize, attempts: u32) -> A2aSettings {
    A2aSettings {
        allow_http_push: true,
        push_workers: workers,
        push_queue: queue,
        push_attempts: attempts,
        push_timeout_ms: 2_000,
        push_backoff_ms: 10,
        ..A2aSettings::default()
    }
}

fn delivery(config: PushConfig, policy: PushPolicy, body: &'static str) -> Delivery {
    Delivery {
        tenant: Arc::from("t1"),
        client: Arc::from("app"),
        caller: Arc::from("alice"),
        task_id: config.task_id.clone(),
        config,
        policy,
        body: Bytes::from_static(body.as_bytes()),
    }
}

fn loopback() -> PushPolicy {
    dev(&["127.0.0.1"])
}

/// Deliveries decided so far (delivered, failed or refused).
fn decided(stats: &PushStats) -> u64 {
    stats.delivered.load(Ordering::SeqCst)
        + stats.failed.load(Ordering::SeqCst)
        + stats.refused.load(Ordering::SeqCst)
}

/// Waits until `n` deliveries are decided (at most 10 s).
async fn settle(sender: &PushSender, n: u64) {
    let stats = sender.stats();
    for _ in 0..2_000 {
        if decided(stats) >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("deliveries not decided in time: {stats:?}");
}

fn counts(stats: &PushStats) -> [u64; 5] {
    [
        stats.delivered.load(Ordering::SeqCst),
        stats.failed.load(Ordering::SeqCst),
        stats.retried.load(Ordering::SeqCst),
        stats.dropped.load(Ordering::SeqCst),
        stats.refused.load(Ordering::SeqCst),
    ]
}

const STATUS_BODY: &str =
    r#"{"statusUpdate":{"taskId":"task-1","status":{"state":"TASK_STATE_WORKING"}}}"#;

#[tokio::test]
async fn delivers_with_headers_and_the_exact_body() {
    let receiver = Receiver::start(Vec::new()).await;
    let sender = PushSender::start(&settings(2, 16, 3), Audit::disabled());
    let config = PushConfig {
        token: Some("tok-123".to_owned()),
        authentication: Some(PushAuth {
            scheme: "Bearer".to_owned(),
            credentials: Some("secret-xyz".to_owned()),
            extra: Map::new(),
        }),
        ..config(&receiver.url("/hooks/a2a?tenant=t1"))
    };
    assert!(sender.enqueue(delivery(config, loopback(), STATUS_BODY)));
    settle(&sender, 1).await;
    assert_eq!(counts(sender.stats()), [1, 0, 0, 0, 0]);

    let seen = receiver.seen();
    assert_eq!(seen.len(), 1);
    let request = &seen[0];
    assert_eq!(request.path, "/hooks/a2a?tenant=t1");
    assert_eq!(request.body, STATUS_BODY.as_bytes());
    let header = |name: &str| {
        request
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    assert_eq!(header("content-type").as_deref(), Some("application/json"));
    assert_eq!(
        header("x-a2a-notification-token").as_deref(),
        Some("tok-123")
    );
    assert_eq!(
        header("authorization").as_deref(),
        Some("Bearer secret-xyz")
    );
    assert_eq!(
        header("user-agent"),
        Some(format!("sluice/{}", env!("CARGO_PKG_VERSION")))
    );
    assert_eq!(header("host"), Some(receiver.addr.to_string()));
    assert_eq!(
        header("content-length"),
        Some(STATUS_BODY.len().to_string())
    );
}

#[tokio::test]
async fn no_token_or_authentication_sends_neither_header() {
    let receiver = Receiver::start(Vec::new()).await;
    let sender = PushSender::start(&settings(1, 4, 1), Audit::disabled());
    assert!(sender.enqueue(delivery(config(&receiver.url("/")), loopback(), "{}")));
    settle(&sender, 1).await;
    let seen = receiver.seen();
    assert_eq!(seen.len(), 1);
    assert!(seen[0].headers.get("x-a2a-notification-token").is_none());
    assert!(seen[0].headers.get("authorization").is_none());
}

#[tokio::test]
async fn retries_after_503_then_delivers() {
    let receiver = Receiver::start(vec![(503, Vec::new()), (200, Vec::new())]).await;
    let sender = PushSender::start(&settings(1, 4, 3), Audit::disabled());
    assert!(sender.enqueue(delivery(
        config(&receiver.url("/")),
        loopback(),
        STATUS_BODY
    )));
    settle(&sender, 1).await;
    assert_eq!(counts(sender.stats()), [1, 0, 1, 0, 0]);
    let seen = receiver.seen();
    assert_eq!(seen.len(), 2);
    assert!(seen.iter().all(|s| s.body == STATUS_BODY.as_bytes()));
}

#[tokio::test]
async fn gives_up_after_the_attempts() {
    let receiver = Receiver::start(vec![(500, Vec::new()); 5]).await;
    let sender = PushSender::start(&settings(1, 4, 3), Audit::disabled());
    assert!(sender.enqueue(delivery(config(&receiver.url("/")), loopback(), "{}")));
    settle(&sender, 1).await;
    assert_eq!(counts(sender.stats()), [0, 1, 2, 0, 0]);
    assert_eq!(receiver.seen().len(), 3);
}

#[tokio::test]
async fn other_4xx_is_final() {
    let receiver = Receiver::start(vec![(404, Vec::new())]).await;
    let sender = PushSender::start(&settings(1, 4, 3), Audit::disabled());
    assert!(sender.enqueue(delivery(config(&receiver.url("/")), loopback(), "{}")));
    settle(&sender, 1).await;
    assert_eq!(counts(sender.stats()), [0, 1, 0, 0, 0]);
    assert_eq!(receiver.seen().len(), 1);
}

#[tokio::test]
async fn redirect_is_not_followed() {
    let elsewhere = Receiver::start(Vec::new()).await;
    let receiver = Receiver::start(vec![(302, vec![("location", elsewhere.url("/stolen"))])]).await;
    let sender = PushSender::start(&settings(1, 4, 3), Audit::disabled());
    assert!(sender.enqueue(delivery(config(&receiver.url("/")), loopback(), "{}")));
    settle(&sender, 1).await;
    assert_eq!(counts(sender.stats()), [0, 1, 0, 0, 0]);
    assert_eq!(receiver.seen().len(), 1);
    assert_eq!(elsewhere.connections.load(Ordering::SeqCst), 0);
    assert!(elsewhere.seen().is_empty());
}

#[tokio::test]
async fn loopback_not_allowlisted_is_refused_without_a_connection() {
    let receiver = Receiver::start(Vec::new()).await;
    let sender = PushSender::start(&settings(1, 4, 3), Audit::disabled());
    // The IP literal (refused by validation) and a name resolving to it (refused after the
    // lookup).
    let by_ip = config(&receiver.url("/"));
    let by_name = config(&format!("http://localhost:{}/", receiver.addr.port()));
    assert!(sender.enqueue(delivery(by_ip, dev(&[]), "{}")));
    assert!(sender.enqueue(delivery(by_name, dev(&["127.0.0.1"]), "{}")));
    settle(&sender, 2).await;
    assert_eq!(counts(sender.stats()), [0, 0, 0, 0, 2]);
    assert_eq!(receiver.connections.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn https_only_when_http_is_not_allowed() {
    let receiver = Receiver::start(Vec::new()).await;
    let sender = PushSender::start(&settings(1, 4, 3), Audit::disabled());
    let policy = PushPolicy {
        allow_http: false,
        ..loopback()
    };
    assert!(sender.enqueue(delivery(config(&receiver.url("/")), policy, "{}")));
    settle(&sender, 1).await;
    assert_eq!(counts(sender.stats()), [0, 0, 0, 0, 1]);
    assert_eq!(receiver.connections.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn connection_refused_is_retried_then_failed() {
    // A port nobody listens on: bind one, note it, close it.
    let port = {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        listener.local_addr().expect("addr").port()
    };
    let sender = PushSender::start(&settings(1, 4, 2), Audit::disabled());
    let url = format!("http://127.0.0.1:{port}/");
    assert!(sender.enqueue(delivery(config(&url), loopback(), "{}")));
    settle(&sender, 1).await;
    assert_eq!(counts(sender.stats()), [0, 1, 1, 0, 0]);
}

#[tokio::test]
async fn allowlisted_name_connects_to_its_checked_addresses() {
    // `localhost` goes through the lookup and the pinned resolver (not the IP-literal path).
    let receiver = Receiver::start(Vec::new()).await;
    let sender = PushSender::start(&settings(1, 4, 1), Audit::disabled());
    let url = format!("http://LocalHost:{}/hook", receiver.addr.port());
    assert!(sender.enqueue(delivery(config(&url), dev(&["localhost"]), "{}")));
    settle(&sender, 1).await;
    assert_eq!(counts(sender.stats()), [1, 0, 0, 0, 0]);
    let seen = receiver.seen();
    assert_eq!(seen[0].path, "/hook");
    assert_eq!(
        seen[0].headers.get("host").and_then(|v| v.to_str().ok()),
        Some(format!("localhost:{}", receiver.addr.port()).as_str())
    );
}

#[tokio::test]
async fn https_speaks_tls() {
    // The receiver speaks plain HTTP: the TLS handshake fails, no request is read, and the
    // attempts are spent.
    let receiver = Receiver::start(Vec::new()).await;
    let sender = PushSender::start(&settings(1, 4, 2), Audit::disabled());
    let url = format!("https://127.0.0.1:{}/", receiver.addr.port());
    assert!(sender.enqueue(delivery(config(&url), loopback(), "{}")));
    settle(&sender, 1).await;
    assert_eq!(counts(sender.stats()), [0, 1, 1, 0, 0]);
    assert_eq!(receiver.connections.load(Ordering::SeqCst), 2);
    assert!(receiver.seen().is_empty());
}

#[tokio::test]
async fn full_queue_drops_and_counts() {
    // On the current-thread test runtime the worker cannot take the first delivery until this
    // test awaits, so the one-slot queue is still full for the second.
    let sender = PushSender::start(&settings(1, 1, 1), Audit::disabled());
    let refused = config("https://127.0.0.1/");
    assert!(sender.enqueue(delivery(refused.clone(), strict(), "{}")));
    assert!(!sender.enqueue(delivery(refused.clone(), strict(), "{}")));
    assert!(!sender.enqueue(delivery(refused, strict(), "{}")));
    assert_eq!(sender.stats().dropped.load(Ordering::SeqCst), 2);
    settle(&sender, 1).await;
    assert_eq!(counts(sender.stats()), [0, 0, 0, 2, 1]);
}

#[tokio::test]
async fn queue_capacity_is_split_over_workers() {
    // 5 slots over 2 workers: 3 + 2, and nothing is delivered before the test awaits.
    let sender = PushSender::start(&settings(2, 5, 1), Audit::disabled());
    let mut queued = 0;
    for task_idx in 0..64 {
        let config = PushConfig {
            task_id: format!("task-{task_idx}"),
            ..config("https://127.0.0.1/")
        };
        queued += usize::from(sender.enqueue(delivery(config, strict(), "{}")));
    }
    assert_eq!(queued, 5);
    assert_eq!(sender.stats().dropped.load(Ordering::SeqCst), 59);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_tasks_events_arrive_in_order() {
    let receiver = Receiver::start(Vec::new()).await;
    let sender = PushSender::start(&settings(4, 128, 3), Audit::disabled());
    const BODIES: [&str; 20] = [
        r#"{"n":0}"#,
        r#"{"n":1}"#,
        r#"{"n":2}"#,
        r#"{"n":3}"#,
        r#"{"n":4}"#,
        r#"{"n":5}"#,
        r#"{"n":6}"#,
        r#"{"n":7}"#,
        r#"{"n":8}"#,
        r#"{"n":9}"#,
        r#"{"n":10}"#,
        r#"{"n":11}"#,
        r#"{"n":12}"#,
        r#"{"n":13}"#,
        r#"{"n":14}"#,
        r#"{"n":15}"#,
        r#"{"n":16}"#,
        r#"{"n":17}"#,
        r#"{"n":18}"#,
        r#"{"n":19}"#,
    ];
    for body in BODIES {
        assert!(sender.enqueue(delivery(config(&receiver.url("/")), loopback(), body)));
    }
    settle(&sender, 20).await;
    assert_eq!(counts(sender.stats()), [20, 0, 0, 0, 0]);
    let bodies: Vec<Bytes> = receiver.seen().into_iter().map(|s| s.body).collect();
    let expected: Vec<Bytes> = BODIES
        .iter()
        .map(|b| Bytes::from_static(b.as_bytes()))
        .collect();
    assert_eq!(bodies, expected);
}

/// An audit sink the test reads back.
#[derive(Clone, Default)]
struct SharedBuf(Arc<Mutex<Vec<u8>>>);

impl Write for SharedBuf {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn one_audit_record_per_attempt_without_secrets() {
    let buf = SharedBuf::default();
    let audit_settings = AuditSettings {
        queue: 64,
        when_full: AuditWhenFull::Block,
        ..AuditSettings::default()
    };
    let (audit, writer) =
        Audit::start_with_sink(&audit_settings, Box::new(buf.clone())).expect("audit starts");
    let receiver = Receiver::start(vec![(503, Vec::new())]).await;
    let sender = PushSender::start(&settings(1, 4, 3), audit);
    let config = PushConfig {
        token: Some("tok-SECRET".to_owned()),
        authentication: Some(PushAuth {
            scheme: "Bearer".to_owned(),
            credentials: Some("cred-SECRET".to_owned()),
            extra: Map::new(),
        }),
        ..config(&receiver.url("/"))
    };
    assert!(sender.enqueue(delivery(config, loopback(), "{}")));
    settle(&sender, 1).await;
    drop(sender);
    writer.shutdown().await;

    let text = String::from_utf8(buf.0.lock().clone()).expect("utf-8");
    assert!(!text.contains("SECRET"), "{text}");
    let records: Vec<serde_json::Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect();
    assert_eq!(records.len(), 2, "{text}");
    for record in &records {
        assert_eq!(record["call_type"], "a2a_push");
        assert_eq!(record["surface"], "a2a");
        assert_eq!(record["tenant"], "t1");
        assert_eq!(record["client"], "app");
        assert_eq!(record["caller"], "alice");
    }
    assert_eq!(records[0]["outcome"], "error");
    assert_eq!(records[0]["error_code"], "push_status");
    assert_eq!(
        records[0]["detail"],
        "task task-1 config cfg-1 attempt 1/3: HTTP 503"
    );
    assert_eq!(records[1]["outcome"], "ok");
    assert_eq!(
        records[1]["detail"],
        "task task-1 config cfg-1 attempt 2/3: HTTP 200"
    );
}
