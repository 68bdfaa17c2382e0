//! The audit trail: one [`Record`] per call, queued by the request path and written as JSON
//! lines by a background writer.
//!
//! - `record.rs`: [`Record`], [`CallType`], [`Surface`], [`Outcome`] and the JSON-lines encoder.
//! - `sink.rs`: opening the sink (stdout or an append-mode file) and the writer thread.
//! - this file: the [`Audit`] handle the request path holds, the [`CancelGuard`] that records a
//!   call dropped before it finished (its client went away) as `cancelled`, and the
//!   [`AuditWriter`] that owns the writer's life cycle.
//!
//! The queue between them is a bounded tokio channel of `settings.queue` records, so memory is
//! bounded whatever the sink does. When it is full, `when_full = "block"` makes
//! [`Audit::record`] wait for room (no record is lost) and `"drop"` drops the record and counts
//! it in [`Audit::dropped_counter`] (the `sluice_audit_dropped_total` metric). The writer
//! flushes whenever the queue is momentarily empty, so a record reaches the file within moments
//! of the last call, and on [`AuditWriter::shutdown`].
//!
//! Must not decide *when* a call is audited or which payloads are captured: the surfaces build
//! records (and skip building payload copies when [`Audit::is_enabled`] is false). Never writes
//! secrets: records only carry what callers put in them.

mod record;
mod sink;

#[cfg(test)]
mod tests;

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::SystemTime;

use tokio::sync::{mpsc, oneshot};

pub(crate) use record::write_rfc3339_millis;
pub use record::{CallType, Outcome, Record, RemoteCall, Surface};

use crate::config::{AuditSettings, AuditWhenFull};
use sink::{Counters, Msg};

/// A cheap-to-clone handle that queues audit records for the background writer.
///
/// Cloning costs one reference-count increment. A disabled handle ([`Audit::disabled`], or
/// `sink = "off"`) records nothing and reads no clock.
#[derive(Debug, Clone)]
pub struct Audit {
    inner: Arc<Inner>,
}

/// What every clone of one [`Audit`] shares.
#[derive(Debug)]
struct Inner {
    /// The queue's sending side; `None` when auditing is off. Dropping the last handle (and the
    /// `AuditWriter`) closes the queue, which ends the writer after it has drained it.
    tx: Option<mpsc::Sender<Msg>>,
    /// What `record` does when the queue is full.
    when_full: AuditWhenFull,
    /// Shared with the writer thread (`written`, `write_errors`) and with metrics.
    counters: Counters,
}

impl Audit {
    /// A handle that records nothing; [`Audit::is_enabled`] is false.
    pub(crate) fn disabled() -> Self {
        Self {
            inner: Arc::new(Inner {
                tx: None,
                when_full: AuditWhenFull::Drop,
                counters: Counters::default(),
            }),
        }
    }

    /// Opens the configured sink and starts the writer.
    ///
    /// For `sink = "off"` this returns a disabled handle and a writer whose shutdown is a
    /// no-op. Fails when the file cannot be opened, `sink = "file"` has no `path`, `queue` is 0,
    /// or the writer thread cannot be started. Needs no runtime; the writer is its own thread.
    pub fn start(settings: &AuditSettings) -> io::Result<(Audit, AuditWriter)> {
        match sink::open(settings)? {
            None => Ok((Audit::disabled(), AuditWriter::noop())),
            Some(out) => Self::start_with_sink(settings, out),
        }
    }

    /// Starts the writer over an already open sink (tests use this to stall or inspect it).
    pub(crate) fn start_with_sink(
        settings: &AuditSettings,
        out: Box<dyn io::Write + Send>,
    ) -> io::Result<(Audit, AuditWriter)> {
        if settings.queue == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "audit queue must hold at least one record",
            ));
        }
        let (tx, rx) = mpsc::channel(settings.queue);
        let counters = Counters::default();
        let done = sink::spawn(
            rx,
            out,
            Arc::clone(&counters.written),
            Arc::clone(&counters.write_errors),
        )?;
        let writer = AuditWriter {
            tx: Some(tx.clone()),
            done: Some(done),
        };
        let audit = Audit {
            inner: Arc::new(Inner {
                tx: Some(tx),
                when_full: settings.when_full,
                counters,
            }),
        };
        Ok((audit, writer))
    }

    /// Whether records go anywhere; when false, callers skip building records and payload
    /// copies.
    pub(crate) fn is_enabled(&self) -> bool {
        self.inner.tx.is_some()
    }

    /// Stamps `record.ts` with the current time and queues it.
    ///
    /// With `when_full = "block"` this waits while the queue is full; with `"drop"` it never
    /// waits and a record that does not fit is dropped and counted. After the writer has shut
    /// down, records are dropped and counted. A no-op when disabled.
    pub async fn record(&self, mut record: Record) {
        let Some(tx) = &self.inner.tx else {
            return;
        };
        record.ts = SystemTime::now();
        match self.inner.when_full {
            AuditWhenFull::Block => {
                if tx.send(Msg::Record(record)).await.is_err() {
                    self.count_dropped();
                }
            }
            AuditWhenFull::Drop => {
                if tx.try_send(Msg::Record(record)).is_err() {
                    self.count_dropped();
                }
            }
        }
    }

    /// Queues `record` without ever waiting, whatever `when_full` says; returns whether it was
    /// queued. For places that cannot await (a `Drop` impl ending a stream). Under `block` a
    /// full queue still drops (and counts) the record, so prefer [`Audit::record`].
    pub(crate) fn try_record(&self, mut record: Record) -> bool {
        let Some(tx) = &self.inner.tx else {
            return false;
        };
        record.ts = SystemTime::now();
        let queued = tx.try_send(Msg::Record(record)).is_ok();
        if !queued {
            self.count_dropped();
        }
        queued
    }

    /// Records dropped so far (queue full under `drop`, or written after shutdown).
    #[cfg(test)]
    pub(crate) fn dropped(&self) -> u64 {
        self.inner.counters.dropped.load(Ordering::Relaxed)
    }

    /// The dropped-records counter itself, for the `sluice_audit_dropped_total` metric.
    pub(crate) fn dropped_counter(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.inner.counters.dropped)
    }

    /// Records handed to the sink so far (in its buffer or written; flushed when the queue
    /// idles).
    #[cfg(test)]
    pub(crate) fn records_written(&self) -> u64 {
        self.inner.counters.written.load(Ordering::Relaxed)
    }

    /// Failed writes and flushes to the sink so far (each is also logged, rate-limited).
    #[cfg(test)]
    pub(crate) fn write_errors(&self) -> u64 {
        self.inner.counters.write_errors.load(Ordering::Relaxed)
    }

    /// Records waiting in the queue now (never more than `settings.queue`); 0 when disabled.
    #[cfg(test)]
    pub(crate) fn queue_len(&self) -> usize {
        self.inner
            .tx
            .as_ref()
            .map_or(0, |tx| tx.max_capacity() - tx.capacity())
    }

    fn count_dropped(&self) {
        self.inner.counters.dropped.fetch_add(1, Ordering::Relaxed);
    }
}

/// Writes the `cancelled` record of a call whose future is dropped before it wrote its own
/// record (hyper drops a request's future when its client goes away; a stream's task drops its
/// work when the stream is closed), so every call writes exactly one record.
///
/// Hold it across the call, armed, and [`CancelGuard::disarm`] it right after the normal record
/// was queued (no await point between the two). Dropped armed, it builds the record with
/// `build` (the call's identity, its duration so far) and queues it without waiting
/// ([`Audit::try_record`]) with outcome [`Outcome::Cancelled`]. Costs nothing more than the
/// references it holds until then: no allocation, no clock read.
#[must_use = "a guard dropped at once records every call as cancelled"]
pub(crate) struct CancelGuard<'a, F: FnOnce() -> Option<Record>> {
    audit: &'a Audit,
    build: Option<F>,
}

impl<'a, F: FnOnce() -> Option<Record>> CancelGuard<'a, F> {
    /// An armed guard; `build` makes the cancelled call's record (`None`: not audited).
    pub(crate) fn new(audit: &'a Audit, build: F) -> Self {
        Self {
            audit,
            build: Some(build),
        }
    }

    /// The call wrote its own record: nothing to write on drop.
    pub(crate) fn disarm(mut self) {
        self.build = None;
    }
}

impl<F: FnOnce() -> Option<Record>> Drop for CancelGuard<'_, F> {
    fn drop(&mut self) {
        let Some(build) = self.build.take() else {
            return;
        };
        if let Some(mut record) = build() {
            record.outcome = Outcome::Cancelled;
            self.audit.try_record(record);
        }
    }
}

/// The `detail` of a cancelled call's record: the downstream's status when it had answered.
pub(crate) fn cancelled_detail(downstream_status: Option<u16>) -> String {
    match downstream_status {
        Some(status) => format!("client disconnected; downstream answered {status}"),
        None => "client disconnected".to_owned(),
    }
}

/// Owns the background writer's life cycle; call [`AuditWriter::shutdown`] when the server
/// stops so queued records are written.
///
/// Dropping it without a shutdown detaches the writer: it keeps writing until every [`Audit`]
/// handle is gone, then flushes and exits.
#[derive(Debug)]
pub struct AuditWriter {
    /// A sender kept to deliver the shutdown message; `None` for `sink = "off"`.
    tx: Option<mpsc::Sender<Msg>>,
    /// Fires when the writer thread has flushed and exited.
    done: Option<oneshot::Receiver<()>>,
}

impl AuditWriter {
    fn noop() -> Self {
        Self {
            tx: None,
            done: None,
        }
    }

    /// Closes the queue, writes every record already queued, flushes, and returns once the
    /// writer has exited. Records offered afterwards are dropped and counted.
    ///
    /// The shutdown message waits for queue room like any record, so a sink that never accepts
    /// a write makes this wait forever; wrap it in a timeout when that matters.
    pub(crate) async fn shutdown(mut self) {
        if let Some(tx) = self.tx.take() {
            // An error means the writer is already gone; `done` below then resolves at once.
            let _ = tx.send(Msg::Shutdown).await;
        }
        if let Some(done) = self.done.take() {
            // An error means the thread ended without reporting (it panicked); nothing to wait
            // for either way.
            let _ = done.await;
        }
    }
}
