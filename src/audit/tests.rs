//! Tests of the audit handle and writer: record encoding as seen by a JSON reader, the file
//! sink, both full-queue policies against a stalled sink, shutdown, and error handling.

use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{mpsc as std_mpsc, Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use serde_json::{json, Value};

use super::*;
use crate::config::AuditSink;

// === helpers ===

fn settings(sink: AuditSink, queue: usize, when_full: AuditWhenFull) -> AuditSettings {
    AuditSettings {
        sink,
        path: None,
        queue,
        when_full,
    }
}

fn record(n: usize) -> Record {
    Record::new(
        Surface::Mcp,
        CallType::ToolCall,
        Arc::from("acme"),
        Arc::from("desk"),
        Arc::from("alice"),
    )
    .with_execution_id(format!("exec-{n}"))
}

fn parse_lines(bytes: &[u8]) -> Vec<Value> {
    let text = std::str::from_utf8(bytes).expect("audit output is UTF-8");
    assert!(
        text.is_empty() || text.ends_with('\n'),
        "output ends a line: {text:?}"
    );
    text.lines()
        .map(|line| serde_json::from_str(line).expect("every line is one JSON object"))
        .collect()
}

fn execution_ids(lines: &[Value]) -> Vec<String> {
    lines
        .iter()
        .map(|line| line["execution_id"].as_str().unwrap_or("?").to_owned())
        .collect()
}

fn expected_ids(range: std::ops::Range<usize>) -> Vec<String> {
    range.map(|n| format!("exec-{n}")).collect()
}

fn line_of(record: &Record) -> Value {
    let mut out = Vec::new();
    record.write_line(&mut out);
    let lines = parse_lines(&out);
    assert_eq!(lines.len(), 1, "one record is one line");
    lines.into_iter().next().unwrap_or(Value::Null)
}

/// A unique path in the temp directory, removed on drop.
struct TempPath(PathBuf);

impl TempPath {
    fn new(name: &str) -> Self {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        Self(std::env::temp_dir().join(format!(
            "sluice-audit-{}-{nanos}-{name}.jsonl",
            std::process::id()
        )))
    }

    fn settings(&self, queue: usize, when_full: AuditWhenFull) -> AuditSettings {
        AuditSettings {
            path: Some(self.0.to_string_lossy().into_owned()),
            ..settings(AuditSink::File, queue, when_full)
        }
    }

    fn read(&self) -> Vec<u8> {
        std::fs::read(&self.0).unwrap_or_default()
    }
}

impl Drop for TempPath {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// An in-memory sink the test can read.
#[derive(Clone, Default)]
struct SharedBuf(Arc<Mutex<Vec<u8>>>);

impl SharedBuf {
    fn contents(&self) -> Vec<u8> {
        self.0.lock().map(|buf| buf.clone()).unwrap_or_default()
    }
}

impl Write for SharedBuf {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        if let Ok(mut buf) = self.0.lock() {
            buf.extend_from_slice(bytes);
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A sink that stalls: every write reports on `entered`, then waits for a permit on `gate`.
/// Dropping the gate's sender opens it for good.
struct GatedSink {
    out: SharedBuf,
    entered: std_mpsc::Sender<()>,
    gate: std_mpsc::Receiver<()>,
}

impl Write for GatedSink {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let _ = self.entered.send(());
        let _ = self.gate.recv();
        self.out.write(bytes)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The test's side of a [`GatedSink`].
struct Gate {
    out: SharedBuf,
    entered: std_mpsc::Receiver<()>,
    gate: Option<std_mpsc::Sender<()>>,
}

impl Gate {
    fn new() -> (Self, Box<dyn Write + Send>) {
        let out = SharedBuf::default();
        let (entered_tx, entered_rx) = std_mpsc::channel();
        let (gate_tx, gate_rx) = std_mpsc::channel();
        let sink = GatedSink {
            out: out.clone(),
            entered: entered_tx,
            gate: gate_rx,
        };
        let gate = Gate {
            out,
            entered: entered_rx,
            gate: Some(gate_tx),
        };
        (gate, Box::new(sink))
    }

    /// Waits until the writer is stuck inside a write.
    fn wait_stalled(&self) {
        self.entered
            .recv_timeout(Duration::from_secs(10))
            .expect("the writer reaches the sink");
    }

    fn open(&mut self) {
        self.gate = None;
    }
}

/// A sink whose every write fails.
struct FailingSink;

impl Write for FailingSink {
    fn write(&mut self, _: &[u8]) -> io::Result<usize> {
        Err(io::Error::other("disk on fire"))
    }

    fn flush(&mut self) -> io::Result<()> {
        Err(io::Error::other("disk on fire"))
    }
}

// === record encoding ===

#[test]
fn call_types_serialize_snake_case() {
    let expected = [
        "tool_call",
        "tools_list",
        "resource_read",
        "prompt_get",
        "schema_discovery",
        "source_result_stream",
        "auth_failure",
        "session_rejected",
        "a2a_message",
        "a2a_task",
        "a2a_push",
    ];
    assert_eq!(CallType::ALL.len(), expected.len());
    for (call_type, name) in CallType::ALL.into_iter().zip(expected) {
        assert_eq!(call_type.as_str(), name);
        assert_eq!(serde_json::to_value(call_type).ok(), Some(json!(name)));
        let line = line_of(&Record {
            call_type,
            ..record(0)
        });
        assert_eq!(line["call_type"], json!(name));
    }
}

#[test]
fn surfaces_and_outcomes_serialize_snake_case() {
    for (surface, name) in Surface::ALL
        .into_iter()
        .zip(["mcp", "legacy_sse", "rest", "bos", "a2a"])
    {
        assert_eq!(serde_json::to_value(surface).ok(), Some(json!(name)));
        let line = line_of(&Record {
            surface,
            ..record(0)
        });
        assert_eq!(line["surface"], json!(name));
    }
    for (outcome, name) in
        Outcome::ALL
            .into_iter()
            .zip(["ok", "error", "denied", "rejected", "cancelled"])
    {
        assert_eq!(serde_json::to_value(outcome).ok(), Some(json!(name)));
        let line = line_of(&Record {
            outcome,
            ..record(0)
        });
        assert_eq!(line["outcome"], json!(name));
    }
}

#[test]
fn full_record_line_has_every_field() {
    let full = Record::new(
        Surface::LegacySse,
        CallType::SessionRejected,
        Arc::from("tenant \"t\""),
        Arc::from("client\\c"),
        Arc::from("caller\n1"),
    )
    .with_execution_id("0b6f1d3a-2c4e-4f5a-8b9c-0d1e2f3a4b5c")
    .with_external_correlation_id("ext-42")
    .with_session("sess-1")
    .with_tool("orders.get")
    .with_outcome(Outcome::Rejected, Some("-32600".to_owned()))
    .with_duration(Duration::from_micros(1_234_567))
    .with_detail("session owned by another caller")
    .with_request(Bytes::from_static(
        br#"{"id":1,"params":{"q":[1,2.5,"x"]}}"#,
    ))
    .with_response(Bytes::from_static(b"not json"))
    .with_tools_list(Bytes::from_static(
        b"{\n  \"tools\": [\n    {\"name\": \"a\"}\n  ]\n}\n",
    ));
    let full = Record {
        ts: UNIX_EPOCH + Duration::from_millis(1_700_000_000_123),
        ..full
    };
    let mut out = Vec::new();
    full.write_line(&mut out);
    assert_eq!(
        out.iter().filter(|&&b| b == b'\n').count(),
        1,
        "exactly one line"
    );
    let line = line_of(&full);
    assert_eq!(
        line,
        json!({
            "ts": "2023-11-14T22:13:20.123Z",
            "execution_id": "0b6f1d3a-2c4e-4f5a-8b9c-0d1e2f3a4b5c",
            "external_correlation_id": "ext-42",
            "tenant": "tenant \"t\"",
            "client": "client\\c",
            "caller": "caller\n1",
            "session": "sess-1",
            "surface": "legacy_sse",
            "call_type": "session_rejected",
            "tool": "orders.get",
            "outcome": "rejected",
            "error_code": "-32600",
            "duration_us": 1_234_567,
            "detail": "session owned by another caller",
            "request": {"id": 1, "params": {"q": [1, 2.5, "x"]}},
            "response": "not json",
            "tools_list": {"tools": [{"name": "a"}]},
        })
    );
}

#[test]
fn empty_record_line_has_every_field_as_null() {
    let line = line_of(&record(7));
    let object = line.as_object().expect("a JSON object");
    let keys: Vec<&str> = object.keys().map(String::as_str).collect();
    let mut expected = vec![
        "ts",
        "execution_id",
        "external_correlation_id",
        "tenant",
        "client",
        "caller",
        "session",
        "surface",
        "call_type",
        "tool",
        "outcome",
        "error_code",
        "duration_us",
        "detail",
        "request",
        "response",
        "tools_list",
    ];
    let mut sorted_keys = keys.clone();
    sorted_keys.sort_unstable();
    expected.sort_unstable();
    assert_eq!(sorted_keys, expected);
    for key in [
        "external_correlation_id",
        "session",
        "tool",
        "error_code",
        "detail",
        "request",
        "response",
        "tools_list",
    ] {
        assert_eq!(line[key], Value::Null, "{key}");
    }
    assert_eq!(line["duration_us"], json!(0));
    assert_eq!(line["ts"], json!("1970-01-01T00:00:00.000Z"));
}

#[test]
fn duration_saturates() {
    let rec = record(0).with_duration(Duration::MAX);
    assert_eq!(rec.duration_us, u64::MAX);
    assert_eq!(line_of(&rec)["duration_us"], json!(u64::MAX));
}

// === the handle ===

#[tokio::test]
async fn disabled_records_nothing() {
    let audit = Audit::disabled();
    assert!(!audit.is_enabled());
    audit.record(record(0)).await;
    assert!(!audit.try_record(record(1)));
    assert_eq!(audit.dropped(), 0);
    assert_eq!(audit.records_written(), 0);
    assert_eq!(audit.queue_len(), 0);

    let (audit, writer) =
        Audit::start(&settings(AuditSink::Off, 16, AuditWhenFull::Block)).expect("off starts");
    assert!(!audit.is_enabled());
    audit.record(record(0)).await;
    writer.shutdown().await;
}

#[test]
fn start_rejects_bad_settings() {
    let no_path = settings(AuditSink::File, 16, AuditWhenFull::Drop);
    let err = Audit::start(&no_path).expect_err("file sink without a path");
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput);

    let temp = TempPath::new("zero-queue");
    let err = Audit::start(&temp.settings(0, AuditWhenFull::Drop)).expect_err("empty queue");
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput);

    let missing_dir = AuditSettings {
        path: Some(
            std::env::temp_dir()
                .join("sluice-audit-no-such-dir/x/audit.jsonl")
                .to_string_lossy()
                .into_owned(),
        ),
        ..no_path
    };
    assert!(Audit::start(&missing_dir).is_err());
}

#[tokio::test]
async fn record_stamps_the_time() {
    let out = SharedBuf::default();
    let (audit, writer) = Audit::start_with_sink(
        &settings(AuditSink::File, 16, AuditWhenFull::Block),
        Box::new(out.clone()),
    )
    .expect("starts");
    let before = SystemTime::now();
    audit.record(record(0)).await;
    writer.shutdown().await;
    let lines = parse_lines(&out.contents());
    let ts = lines[0]["ts"].as_str().expect("ts is a string");
    let mut floor = Vec::new();
    record::write_rfc3339_millis(before, &mut floor);
    // Same-width RFC 3339 UTC strings order like the times they name.
    assert!(
        ts.as_bytes() >= floor.as_slice(),
        "{ts} is not before the call"
    );
    assert_eq!(ts.len(), "2023-11-14T22:13:20.123Z".len());
}

// === file sink ===

#[tokio::test]
async fn file_sink_appends_json_lines() {
    const N_RECORDS: usize = 1000;
    let temp = TempPath::new("lines");
    std::fs::write(&temp.0, b"{\"earlier\":true}\n").expect("seed the file");
    let (audit, writer) = Audit::start(&temp.settings(64, AuditWhenFull::Block)).expect("starts");
    assert!(audit.is_enabled());
    for n in 0..N_RECORDS {
        let rec = record(n)
            .with_request(Bytes::from(format!("{{\"n\":{n}}}")))
            .with_duration(Duration::from_micros(n as u64));
        audit.record(rec).await;
    }
    writer.shutdown().await;

    let lines = parse_lines(&temp.read());
    assert_eq!(lines.len(), N_RECORDS + 1);
    assert_eq!(lines[0], json!({"earlier": true}), "append, not truncate");
    assert_eq!(execution_ids(&lines[1..]), expected_ids(0..N_RECORDS));
    for (n, line) in lines[1..].iter().enumerate() {
        assert_eq!(line["request"], json!({ "n": n }));
        assert_eq!(line["duration_us"], json!(n));
        assert_eq!(line["tenant"], json!("acme"));
    }
    assert_eq!(audit.records_written(), N_RECORDS as u64);
    assert_eq!(audit.dropped(), 0);
    assert_eq!(audit.write_errors(), 0);
}

#[tokio::test]
async fn records_reach_the_file_when_the_queue_idles() {
    let temp = TempPath::new("prompt");
    let (audit, writer) = Audit::start(&temp.settings(64, AuditWhenFull::Drop)).expect("starts");
    for n in 0..3 {
        audit.record(record(n)).await;
    }
    // No shutdown: the writer flushes on its own once the queue is empty. This waits on
    // another thread, so it polls real time (bounded by a generous deadline).
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let lines = loop {
        let lines = parse_lines(&temp.read());
        if lines.len() == 3 || std::time::Instant::now() > deadline {
            break lines;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    };
    assert_eq!(execution_ids(&lines), expected_ids(0..3));
    writer.shutdown().await;
}

// === full queue ===

#[tokio::test]
async fn drop_policy_drops_and_counts_when_the_writer_stalls() {
    const QUEUE: usize = 4;
    let (mut gate, sink) = Gate::new();
    let (audit, writer) =
        Audit::start_with_sink(&settings(AuditSink::File, QUEUE, AuditWhenFull::Drop), sink)
            .expect("starts");
    let metric = audit.dropped_counter();

    // The writer takes record 0 and stalls flushing it.
    audit.record(record(0)).await;
    gate.wait_stalled();
    assert_eq!(audit.queue_len(), 0);

    for n in 1..=10 {
        audit.record(record(n)).await;
        assert!(audit.queue_len() <= QUEUE, "queue stays bounded");
    }
    assert_eq!(audit.queue_len(), QUEUE);
    assert_eq!(audit.dropped(), 10 - QUEUE as u64);
    assert_eq!(metric.load(Ordering::Relaxed), audit.dropped());
    assert!(!audit.try_record(record(11)), "try_record drops too");
    assert_eq!(audit.dropped(), 11 - QUEUE as u64);

    gate.open();
    writer.shutdown().await;
    let lines = parse_lines(&gate.out.contents());
    assert_eq!(execution_ids(&lines), expected_ids(0..QUEUE + 1));
    assert_eq!(audit.records_written(), QUEUE as u64 + 1);
}

#[tokio::test(start_paused = true)]
async fn block_policy_waits_for_room_and_loses_nothing() {
    const QUEUE: usize = 2;
    let (mut gate, sink) = Gate::new();
    let (audit, writer) = Audit::start_with_sink(
        &settings(AuditSink::File, QUEUE, AuditWhenFull::Block),
        sink,
    )
    .expect("starts");

    audit.record(record(0)).await;
    gate.wait_stalled();
    for n in 1..=QUEUE {
        audit.record(record(n)).await;
    }
    assert_eq!(audit.queue_len(), QUEUE);

    let blocked = audit.record(record(QUEUE + 1));
    tokio::pin!(blocked);
    let waited = tokio::time::timeout(Duration::from_millis(100), &mut blocked).await;
    assert!(waited.is_err(), "record waits while the queue is full");
    assert_eq!(audit.queue_len(), QUEUE);

    // From here the test waits on the writer thread, which paused time cannot see: a paused
    // clock would jump to the deadline while the thread is still working.
    tokio::time::resume();
    gate.open();
    tokio::time::timeout(Duration::from_secs(10), blocked)
        .await
        .expect("record completes once the writer frees room");
    writer.shutdown().await;

    let lines = parse_lines(&gate.out.contents());
    assert_eq!(execution_ids(&lines), expected_ids(0..QUEUE + 2));
    assert_eq!(audit.dropped(), 0);
}

// === shutdown ===

#[tokio::test]
async fn shutdown_writes_everything_queued() {
    const N_QUEUED: usize = 50;
    let (mut gate, sink) = Gate::new();
    let (audit, writer) =
        Audit::start_with_sink(&settings(AuditSink::File, 100, AuditWhenFull::Drop), sink)
            .expect("starts");
    audit.record(record(0)).await;
    gate.wait_stalled();
    for n in 1..=N_QUEUED {
        audit.record(record(n)).await;
    }
    assert_eq!(audit.queue_len(), N_QUEUED);

    let shutdown = tokio::spawn(writer.shutdown());
    tokio::task::yield_now().await;
    assert!(!shutdown.is_finished(), "shutdown waits for the writer");
    gate.open();
    shutdown.await.expect("shutdown task");

    let lines = parse_lines(&gate.out.contents());
    assert_eq!(execution_ids(&lines), expected_ids(0..N_QUEUED + 1));

    // The queue is closed now: later records are counted as dropped, not lost silently.
    audit.record(record(999)).await;
    assert_eq!(audit.dropped(), 1);
    assert_eq!(parse_lines(&gate.out.contents()).len(), N_QUEUED + 1);
}

#[tokio::test]
async fn shutdown_right_after_recording_loses_nothing() {
    let out = SharedBuf::default();
    let (audit, writer) = Audit::start_with_sink(
        &settings(AuditSink::File, 8, AuditWhenFull::Block),
        Box::new(out.clone()),
    )
    .expect("starts");
    let clones: Vec<Audit> = (0..4).map(|_| audit.clone()).collect();
    let tasks: Vec<_> = clones
        .into_iter()
        .enumerate()
        .map(|(task, audit)| {
            tokio::spawn(async move {
                for n in 0..100 {
                    audit.record(record(task * 100 + n)).await;
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("recording task");
    }
    writer.shutdown().await;
    let mut ids = execution_ids(&parse_lines(&out.contents()));
    ids.sort_unstable();
    let mut expected = expected_ids(0..400);
    expected.sort_unstable();
    assert_eq!(ids, expected);
}

#[tokio::test]
async fn writer_exits_when_every_handle_is_gone() {
    let out = SharedBuf::default();
    let (audit, writer) = Audit::start_with_sink(
        &settings(AuditSink::File, 8, AuditWhenFull::Block),
        Box::new(out.clone()),
    )
    .expect("starts");
    audit.record(record(0)).await;
    let AuditWriter { tx, done } = writer;
    drop(tx);
    drop(audit);
    tokio::time::timeout(Duration::from_secs(10), done.expect("a running writer"))
        .await
        .expect("the writer exits")
        .expect("and reports it");
    assert_eq!(execution_ids(&parse_lines(&out.contents())), ["exec-0"]);
}

// === errors ===

#[tokio::test]
async fn write_errors_are_counted_not_fatal() {
    let (audit, writer) = Audit::start_with_sink(
        &settings(AuditSink::File, 8, AuditWhenFull::Block),
        Box::new(FailingSink),
    )
    .expect("starts");
    for n in 0..3 {
        audit.record(record(n)).await;
    }
    writer.shutdown().await;
    assert!(audit.write_errors() >= 1, "failed flushes are counted");
    assert_eq!(audit.dropped(), 0);
}
