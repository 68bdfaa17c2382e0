//! The run loop of one federated read.
//!
//! Owns reading each source page by page (validation, mapping, delivery chunks, source-local
//! federation), the concurrency limit, per-source timeouts, the operation deadline, the page
//! limit of each source and the record limit of the read, sequencing and page indexes, and
//! collecting what was delivered into the final outcome.
//!
//! Shape: every source read is a future in one `FuturesUnordered` polled by the `run` future
//! itself (no spawned task), gated by a semaphore of `max_concurrent_sources` permits. Reads send
//! their pages and their terminal through a bounded channel to the loop, which alone assigns
//! `sequence` and `pageIndex` and awaits the sink; a slow sink therefore fills the channel and
//! holds the reads back. Dropping the `run` future drops every read and so every provider
//! request. Must not know MCP or SSE framing.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use futures_util::stream::{FuturesUnordered, StreamExt};
use tokio::sync::{mpsc, Semaphore};

use super::event::{EventSink, SinkClosed, SourceEvent, SourceRef, SourceStatus};
use super::merge::merge_records;
use super::provider::{page_url, ProviderClient, ProviderError, ProviderVersion};
use super::record::{FederatedRecord, SourceMapping};
use super::result::{rfc3339_utc, FederatedOutcome, SourceFailure, SourceObservation};
use super::{FederationConfig, LimitReason, SourceErrorCode};
use crate::config::{FederatedDownstream, Source};
use crate::telemetry::RequestTrace;

/// What a source read tells the loop, in its own order.
enum Message {
    /// One delivery page: `shown` is federated within the chunk (empty when not streaming);
    /// `raw` are the chunk's single-source records, kept for the final merge.
    Page {
        source_idx: usize,
        shown: Vec<FederatedRecord>,
        raw: Vec<FederatedRecord>,
    },
    /// The source's end: `None` when complete.
    Terminal {
        source_idx: usize,
        error: Option<Failure>,
    },
}

/// A source's failure: the contract's code and, when a limit of this server cut it, why.
type Failure = (SourceErrorCode, Option<LimitReason>);

/// The terminal of a source cut by the read's record limit.
const RECORD_LIMIT: Failure = (
    SourceErrorCode::SourceUnavailable,
    Some(LimitReason::RecordLimit),
);

/// What every source read shares, borrowed from the `run` future.
struct ReadContext<'a> {
    config: &'a FederationConfig,
    client: &'a ProviderClient,
    query: &'a str,
    record_type: &'a str,
    streaming: bool,
    slots: &'a Semaphore,
    /// The request's trace (telemetry on): each page read is a CLIENT span under it.
    trace: Option<&'a RequestTrace>,
}

/// The loop's view of one source.
struct SourceState {
    source: SourceRef,
    /// Pages emitted so far (the last page index).
    pages: u64,
    /// When its first page (or its completion) was emitted.
    observed_at: Option<String>,
    /// `Some(None)`: completed; `Some(Some(failure))`: failed; `None`: still running.
    terminal: Option<Option<Failure>>,
}

/// The loop's state: sequencing, per-source states and everything delivered.
struct Collector<'s> {
    sink: &'s mut dyn EventSink,
    sequence: u64,
    sources: Vec<SourceState>,
    delivered: Vec<FederatedRecord>,
    /// Most records delivered (the read's record limit); `delivered.len()` never exceeds it.
    max_records: usize,
    /// Set when a page did not fit under `max_records`: the read stops.
    record_limit_hit: bool,
    /// Whether pages carry their records (`EventSink::is_streaming`).
    streaming: bool,
}

impl Collector<'_> {
    async fn handle(&mut self, message: Message) -> Result<(), SinkClosed> {
        match message {
            Message::Page {
                source_idx,
                mut shown,
                mut raw,
            } => {
                if self.sources[source_idx].terminal.is_some() {
                    // Cut already (record limit): what it still sends is not delivered.
                    return Ok(());
                }
                let room = self.max_records.saturating_sub(self.delivered.len());
                let cut = raw.len() > room;
                if cut {
                    self.record_limit_hit = true;
                    raw.truncate(room);
                    shown = if self.streaming && !raw.is_empty() {
                        merge_records(raw.clone())
                    } else {
                        Vec::new()
                    };
                    if raw.is_empty() {
                        return self.terminate(source_idx, Some(RECORD_LIMIT)).await;
                    }
                }
                let state = &mut self.sources[source_idx];
                state.pages += 1;
                if state.observed_at.is_none() {
                    state.observed_at = Some(rfc3339_utc(SystemTime::now()));
                }
                let (page_index, source) = (state.pages, state.source.clone());
                self.delivered.extend(raw);
                self.emit(page_index, source, shown, SourceStatus::Page, None)
                    .await?;
                if cut {
                    self.terminate(source_idx, Some(RECORD_LIMIT)).await?;
                }
                Ok(())
            }
            Message::Terminal { source_idx, error } => self.terminate(source_idx, error).await,
        }
    }

    async fn terminate(
        &mut self,
        source_idx: usize,
        error: Option<Failure>,
    ) -> Result<(), SinkClosed> {
        let state = &mut self.sources[source_idx];
        if state.terminal.is_some() {
            return Ok(());
        }
        state.terminal = Some(error);
        if error.is_none() && state.observed_at.is_none() {
            state.observed_at = Some(rfc3339_utc(SystemTime::now()));
        }
        let (page_index, source) = (state.pages, state.source.clone());
        let status = match error {
            None => SourceStatus::Complete,
            Some(_) => SourceStatus::Error,
        };
        self.emit(page_index, source, Vec::new(), status, error)
            .await
    }

    /// Ends every source still running with `failure`.
    async fn terminate_unfinished(&mut self, failure: Failure) -> Result<(), SinkClosed> {
        for source_idx in 0..self.sources.len() {
            self.terminate(source_idx, Some(failure)).await?;
        }
        Ok(())
    }

    async fn emit(
        &mut self,
        page_index: u64,
        source: SourceRef,
        records: Vec<FederatedRecord>,
        status: SourceStatus,
        error: Option<Failure>,
    ) -> Result<(), SinkClosed> {
        self.sequence += 1;
        let event = SourceEvent {
            sequence: self.sequence,
            page_index,
            source,
            records,
            status,
            error: error.map(|(code, _)| code),
            reason: error.and_then(|(_, reason)| reason),
        };
        self.sink.emit(event).await
    }

    fn into_outcome(self, invoked_at: SystemTime, cancelled: bool) -> FederatedOutcome {
        let mut provenance = Vec::new();
        let mut source_errors = Vec::new();
        for state in self.sources {
            match state.terminal {
                Some(Some((code, reason))) => source_errors.push(SourceFailure {
                    source: state.source.clone(),
                    code,
                    reason,
                }),
                // Only a cancelled run leaves sources without a terminal.
                None => source_errors.push(SourceFailure {
                    source: state.source.clone(),
                    code: SourceErrorCode::SourceUnavailable,
                    reason: None,
                }),
                Some(None) => {}
            }
            if let Some(observed_at) = state.observed_at {
                provenance.push(SourceObservation {
                    source: state.source,
                    observed_at,
                });
            }
        }
        provenance.sort_by(|a, b| a.source.cmp(&b.source));
        source_errors.sort_by(|a, b| a.source.cmp(&b.source));
        FederatedOutcome {
            records: merge_records(self.delivered),
            observed_at: rfc3339_utc(invoked_at),
            provenance,
            source_errors,
            cancelled,
        }
    }
}

/// How the loop ended.
enum Ending {
    /// Every source sent its terminal.
    Finished,
    /// The operation deadline fired first.
    Deadline,
    /// The read delivered its most records.
    RecordLimit,
    /// The sink closed.
    SinkClosed,
}

pub(super) async fn run(
    config: &FederationConfig,
    client: &ProviderClient,
    tool: &FederatedDownstream,
    query: &str,
    sink: &mut dyn EventSink,
    trace: Option<&RequestTrace>,
) -> FederatedOutcome {
    let invoked_at = SystemTime::now();
    let deadline = tokio::time::sleep(
        tool.deadline_ms
            .map(Duration::from_millis)
            .unwrap_or(config.default_deadline),
    );
    tokio::pin!(deadline);
    let record_type: Arc<str> = tool.record_type.as_str().into();
    let mappings: Vec<SourceMapping> = tool
        .sources
        .iter()
        .map(|source| SourceMapping::new(source, &record_type))
        .collect();
    let slots = Semaphore::new(config.max_concurrent_sources);
    let streaming = sink.is_streaming();
    let context = ReadContext {
        config,
        client,
        query,
        record_type: &record_type,
        streaming,
        slots: &slots,
        trace,
    };
    let mut collector = Collector {
        sink,
        sequence: 0,
        sources: mappings
            .iter()
            .map(|mapping| SourceState {
                source: SourceRef {
                    source_type: Arc::clone(&mapping.source_type),
                    source_identity: Arc::clone(&mapping.source_identity),
                },
                pages: 0,
                observed_at: None,
                terminal: None,
            })
            .collect(),
        delivered: Vec::new(),
        max_records: tool
            .max_records
            .map_or(config.max_records_per_call, |n| n as usize)
            .max(1),
        record_limit_hit: false,
        streaming,
    };

    let (tx, mut rx) = mpsc::channel::<Message>(config.max_concurrent_sources);
    let mut reads: FuturesUnordered<_> = tool
        .sources
        .iter()
        .zip(&mappings)
        .enumerate()
        .map(|(source_idx, (source, mapping))| {
            read_source(&context, source_idx, source, mapping, tx.clone())
        })
        .collect();
    // The reads hold the only senders: the channel ends when the last read has finished.
    drop(tx);

    let ending = loop {
        tokio::select! {
            // Deliver what is queued before polling more reads: keeps memory bounded.
            biased;
            message = rx.recv() => match message {
                Some(message) => {
                    if collector.handle(message).await.is_err() {
                        break Ending::SinkClosed;
                    }
                    if collector.record_limit_hit {
                        break Ending::RecordLimit;
                    }
                }
                None => break Ending::Finished,
            },
            Some(()) = reads.next(), if !reads.is_empty() => {}
            () = &mut deadline => break Ending::Deadline,
        }
    };
    // Cancels every read still running (and its provider request).
    drop(reads);

    match ending {
        Ending::Finished => collector.into_outcome(invoked_at, false),
        Ending::SinkClosed => collector.into_outcome(invoked_at, true),
        Ending::Deadline => {
            tracing::debug!("federated read deadline reached; cancelling unfinished sources");
            // Pages the reads produced before the deadline are delivered, then every unfinished
            // source gets its `source_timeout` terminal.
            let mut closed = false;
            while let Some(message) = rx.recv().await {
                if collector.handle(message).await.is_err() {
                    closed = true;
                    break;
                }
            }
            if !closed {
                closed = collector
                    .terminate_unfinished((SourceErrorCode::SourceTimeout, None))
                    .await
                    .is_err();
            }
            collector.into_outcome(invoked_at, closed)
        }
        Ending::RecordLimit => {
            tracing::debug!("federated read record limit reached; cutting unfinished sources");
            // What the reads queued before they were dropped: terminals still count (a source
            // that completed is complete); pages no longer fit, so their sources are cut.
            let mut closed = false;
            while let Some(message) = rx.recv().await {
                if collector.handle(message).await.is_err() {
                    closed = true;
                    break;
                }
            }
            if !closed {
                closed = collector.terminate_unfinished(RECORD_LIMIT).await.is_err();
            }
            collector.into_outcome(invoked_at, closed)
        }
    }
}

/// Reads one source within its slot and timeout, then sends its terminal.
async fn read_source(
    context: &ReadContext<'_>,
    source_idx: usize,
    source: &Source,
    mapping: &SourceMapping,
    tx: mpsc::Sender<Message>,
) {
    // The semaphore is never closed, so the permit is always granted.
    let _slot = context.slots.acquire().await;
    let timeout = source
        .timeout_ms
        .map(Duration::from_millis)
        .unwrap_or(context.config.default_source_timeout);
    let read = read_pages(context, source_idx, source, mapping, &tx);
    let error = match tokio::time::timeout(timeout, read).await {
        Ok(Ok(())) => None,
        Ok(Err(err)) => {
            tracing::debug!(
                source_type = %source.source_type,
                source = %source.source_identity,
                error = %err,
                code = err.code().as_str(),
                "federated source failed"
            );
            Some((err.code(), err.reason()))
        }
        Err(_) => {
            tracing::debug!(source = %source.source_identity, "federated source timed out");
            Some((SourceErrorCode::SourceTimeout, None))
        }
    };
    // A closed channel means the loop is gone; nothing is left to tell.
    let _ = tx.send(Message::Terminal { source_idx, error }).await;
}

/// Follows `next_cursor` until the last page, sending delivery pages as they are cut.
async fn read_pages(
    context: &ReadContext<'_>,
    source_idx: usize,
    source: &Source,
    mapping: &SourceMapping,
    tx: &mpsc::Sender<Message>,
) -> Result<(), ProviderError> {
    let page_size = context.config.page_size;
    let limit = source
        .page_limit
        .map_or(page_size, |limit| (limit as usize).max(1));
    let max_pages = source
        .max_pages
        .map_or(context.config.max_pages_per_source, |n| n as usize)
        .max(1);
    let mut cursor: Option<String> = None;
    for _ in 0..max_pages {
        let url = page_url(&source.url, context.query, cursor.as_deref(), limit);
        let page = context
            .client
            .fetch_page(source, &url, context.trace)
            .await?;
        // "Records are validated against the authorized source before publication": one
        // foreign record withholds the whole provider page and ends the source.
        let foreign = page.records.iter().any(|record| {
            record.source_identity != source.source_identity
                || record.record_type != context.record_type
        });
        if foreign {
            return Err(ProviderError::IdentityMismatch);
        }
        let mut records = page.records.into_iter().map(|record| {
            mapping.map(
                record.external_id,
                record.observed_at,
                ProviderVersion::into_value(record.version),
                &record.fields,
            )
        });
        loop {
            // "Delivery pages may split provider pages": chunks of at most `page_size`.
            let raw: Vec<FederatedRecord> = records.by_ref().take(page_size).collect();
            if raw.is_empty() {
                break;
            }
            // "Event pages apply source-local federation within each chunk."
            let shown = if context.streaming {
                merge_records(raw.clone())
            } else {
                Vec::new()
            };
            let message = Message::Page {
                source_idx,
                shown,
                raw,
            };
            if tx.send(message).await.is_err() {
                // The loop is gone (the run is ending); stop reading.
                return Ok(());
            }
        }
        match page.next_cursor {
            Some(next) if !next.is_empty() => cursor = Some(next),
            _ => return Ok(()),
        }
    }
    Err(ProviderError::TooManyPages)
}
