//! The background writer: drains the audit queue into a sink as JSON lines.
//!
//! Owns opening the sink ([`open`]: standard output, or a file opened for append), the writer
//! thread's loop ([`run`]), when it flushes, and how write errors are counted and logged.
//!
//! The writer is a dedicated OS thread, not a tokio task: file and stdout writes block, and a
//! blocking write on a runtime worker would stall unrelated requests (tokio's own `fs` would
//! hand every write to the blocking pool anyway). The thread takes records with
//! `blocking_recv`, so the async side still uses an ordinary bounded tokio channel.
//!
//! Must not decide what a record contains (`record.rs`) or what happens when the queue is full
//! (`audit.rs`).

use std::fs::OpenOptions;
use std::io::{self, BufWriter, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot};

use super::record::Record;
use crate::config::{AuditSettings, AuditSink};

/// Bytes buffered before the writer writes to the sink even while records keep coming.
pub(crate) const WRITE_BUFFER_BYTES: usize = 64 * 1024;

/// Initial capacity of the reused line buffer; it grows to the largest record seen.
const LINE_BUFFER_BYTES: usize = 1024;

/// At most one write-error warning per this interval; the errors in between are counted and
/// reported with the next warning.
const WARN_INTERVAL: Duration = Duration::from_secs(1);

/// What travels on the audit queue.
///
/// Records travel unboxed: a `Box` would cost an allocation per record on the request path,
/// while the rare `Shutdown` only wastes the slot the record would have used anyway.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub(crate) enum Msg {
    /// A record to write.
    Record(Record),
    /// Sent by `AuditWriter::shutdown`: close the queue, write what is in it, flush, exit.
    Shutdown,
}

/// The counters the writer and the handle share (each `Arc` is also handed out to metrics).
#[derive(Debug, Default)]
pub(crate) struct Counters {
    /// Records written to the sink's buffer (they reach the sink at the next flush).
    pub(crate) written: Arc<AtomicU64>,
    /// Records not queued: queue full under `drop`, or the writer gone.
    pub(crate) dropped: Arc<AtomicU64>,
    /// Failed writes or flushes to the sink.
    pub(crate) write_errors: Arc<AtomicU64>,
}

/// Opens the configured sink; `Ok(None)` for `off`.
pub(crate) fn open(settings: &AuditSettings) -> io::Result<Option<Box<dyn Write + Send>>> {
    match settings.sink {
        AuditSink::Off => Ok(None),
        AuditSink::Stdout => Ok(Some(Box::new(io::stdout()))),
        AuditSink::File => {
            let Some(path) = settings.path.as_deref() else {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "audit sink \"file\" needs a path",
                ));
            };
            let file = OpenOptions::new().append(true).create(true).open(path)?;
            Ok(Some(Box::new(file)))
        }
    }
}

/// Starts the writer thread over `sink`. `done` fires when the thread has flushed and exits.
pub(crate) fn spawn(
    rx: mpsc::Receiver<Msg>,
    sink: Box<dyn Write + Send>,
    written: Arc<AtomicU64>,
    write_errors: Arc<AtomicU64>,
) -> io::Result<oneshot::Receiver<()>> {
    let (done_tx, done_rx) = oneshot::channel();
    std::thread::Builder::new()
        .name("sluice-audit".to_owned())
        .spawn(move || {
            run(rx, sink, &written, &write_errors);
            // The receiver is gone when the `AuditWriter` was dropped without a shutdown.
            let _ = done_tx.send(());
        })?;
    Ok(done_rx)
}

/// The writer loop: one record at a time into a buffered writer, flushing whenever the queue is
/// momentarily empty so records reach the sink promptly, and once more at the end.
///
/// Ends when every sender is gone, or after a `Shutdown` message once the queue is drained.
pub(super) fn run(
    mut rx: mpsc::Receiver<Msg>,
    sink: Box<dyn Write + Send>,
    written: &AtomicU64,
    write_errors: &AtomicU64,
) {
    let mut out = BufWriter::with_capacity(WRITE_BUFFER_BYTES, sink);
    let mut line = Vec::with_capacity(LINE_BUFFER_BYTES);
    let mut warner = Warner::default();
    let mut unflushed = false;
    loop {
        let msg = match rx.try_recv() {
            Ok(msg) => msg,
            Err(mpsc::error::TryRecvError::Empty) => {
                if unflushed {
                    unflushed = false;
                    if let Err(err) = out.flush() {
                        write_errors.fetch_add(1, Ordering::Relaxed);
                        warner.warn(&err);
                    }
                }
                match rx.blocking_recv() {
                    Some(msg) => msg,
                    None => break,
                }
            }
            Err(mpsc::error::TryRecvError::Disconnected) => break,
        };
        match msg {
            Msg::Record(record) => {
                line.clear();
                record.write_line(&mut line);
                match out.write_all(&line) {
                    Ok(()) => {
                        written.fetch_add(1, Ordering::Relaxed);
                        unflushed = true;
                    }
                    Err(err) => {
                        write_errors.fetch_add(1, Ordering::Relaxed);
                        warner.warn(&err);
                    }
                }
            }
            // Later sends fail (and are counted as dropped); what is queued is still received,
            // then `blocking_recv` answers `None`.
            Msg::Shutdown => rx.close(),
        }
    }
    if let Err(err) = out.flush() {
        write_errors.fetch_add(1, Ordering::Relaxed);
        warner.warn(&err);
    }
}

/// Rate-limits write-error warnings to one per [`WARN_INTERVAL`].
#[derive(Debug, Default)]
struct Warner {
    last: Option<Instant>,
    suppressed: u64,
}

impl Warner {
    fn warn(&mut self, err: &io::Error) {
        let now = Instant::now();
        if self
            .last
            .is_some_and(|last| now.duration_since(last) < WARN_INTERVAL)
        {
            self.suppressed += 1;
            return;
        }
        tracing::warn!(
            error = %err,
            suppressed = self.suppressed,
            "audit sink write failed; records are being lost"
        );
        self.last = Some(now);
        self.suppressed = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warnings_are_rate_limited() {
        let err = io::Error::other("disk on fire");
        let mut warner = Warner::default();
        warner.warn(&err);
        let first = warner.last.expect("the first error is logged");
        warner.warn(&err);
        warner.warn(&err);
        assert_eq!(
            warner.suppressed, 2,
            "errors within the interval are only counted"
        );
        assert_eq!(warner.last, Some(first));

        // Once the interval has passed, the next error is logged and the count starts over.
        warner.last = first.checked_sub(WARN_INTERVAL);
        warner.warn(&err);
        assert_eq!(warner.suppressed, 0);
        assert!(warner.last.is_some_and(|last| last >= first));
    }
}
