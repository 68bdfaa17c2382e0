//! Federated reads: fan out to provider sources, stream their pages as source events
//! (`bos/source-results/v1`), merge everything delivered by identity into one authoritative
//! result.
//!
//! A read is `Federation::run(tool, query, sink)`:
//! - `provider.rs` reads one source page by page (`GET {url}?{query}&cursor=…&limit=…`) with the
//!   shared pooled client and maps failures onto the contract's error codes;
//! - `fanout.rs` runs every source concurrently inside the `run` future (at most
//!   `max_concurrent_sources` reads in flight), validates records before publication, cuts
//!   delivery pages of at most `page_size` records federated within each chunk, stamps the global
//!   `sequence`, emits events to the `EventSink`, and enforces per-source timeouts and the
//!   operation deadline;
//! - `merge.rs` merges records by record ref, normalized email and normalized phone
//!   (transitively), deterministically;
//! - `record.rs` is the record model and its JSON; `event.rs` the events and sinks;
//!   `result.rs` the final `FederatedOutcome` and its JSON.
//!
//! **Invariant:** nothing here spawns a task: dropping the `run` future cancels every source
//! read at once (that is how a client disconnect cancels).
//! **Invariant:** provider messages, URLs and credentials never reach an event or the outcome.
//!
//! Must not know MCP, SSE framing or HTTP serving: the integrator negotiates the extension,
//! frames events and writes the final response.

mod event;
mod fanout;
mod merge;
mod provider;
mod record;
mod result;

#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::Duration;

/// The page a local `contractUri` serves (text/markdown): how this server delivers the
/// extension, in our words.
pub(crate) const CONTRACT_PAGE: &str = include_str!("federation/contract.md");

/// Where the contract page is served when `contract_uri` is local (the default).
pub(crate) const CONTRACT_PATH: &str = "/contracts/bos-source-results-v1";

#[cfg(test)]
pub(crate) use event::ChannelSink;
pub(crate) use event::NullSink;
pub use event::{
    EventSink, SinkClosed, SourceEvent, SourceRef, SourceStatus, SOURCE_RESULT_METHOD,
};
pub use merge::merge_records;
/// The identity merge before issue 15 (a canonical sort of every record first): the oracle
/// and bench baseline of [`merge_records`].
#[cfg(any(test, feature = "test-util"))]
pub use merge::merge_records_sorted;
pub(crate) use provider::ProviderClient;
pub(crate) use record::write_records;
pub use record::{FederatedRecord, IdentityMatch, MatchRule, Provenance};
pub(crate) use result::FederatedOutcome;

use crate::config::FederatedDownstream;

/// The extension's name, as advertised under `capabilities.experimental`.
pub const EXTENSION: &str = "bos/source-results/v1";

/// Default `pageSize`: the most records in one delivery page; a larger provider page is split.
pub const DEFAULT_PAGE_SIZE: usize = 100;

/// Default `maxConcurrentSources`: source reads in flight at once; further sources wait for a
/// slot (their own timeout starts when they get one; the operation deadline runs throughout).
pub(crate) const DEFAULT_MAX_CONCURRENT_SOURCES: usize = 8;

/// Default per-source timeout (whole read, all pages) of a source that sets none; when hit the
/// source ends with `source_timeout`.
pub(crate) const DEFAULT_SOURCE_TIMEOUT: Duration = Duration::from_secs(10);

/// Default operation deadline of a tool that sets none; when hit every unfinished source is
/// cancelled and ends with `source_timeout`; delivered records are kept.
pub(crate) const DEFAULT_DEADLINE: Duration = Duration::from_secs(30);

/// Default largest provider body read; a larger one ends the source with `source_unavailable`.
pub(crate) const DEFAULT_MAX_PROVIDER_BODY_BYTES: usize = 8 * 1024 * 1024;

/// Default most pages read from one source (a source's `max_pages` overrides it; `[server]
/// federated_max_pages`); a source still returning a cursor then ends with `source_unavailable`
/// and reason `page_limit` (its delivered pages are kept, the result is partial).
pub(crate) const DEFAULT_MAX_PAGES_PER_SOURCE: usize = 100;

/// Default most records one read delivers, all sources together (a tool's `max_records`
/// overrides it; `[server] federated_max_records`); past it the read stops: every unfinished
/// source ends with `source_unavailable` and reason `record_limit`, the delivered records are
/// kept and the result is partial.
pub(crate) const DEFAULT_MAX_RECORDS_PER_CALL: usize = 10_000;

/// The contract's source error codes ("one of source_timeout, source_identity_mismatch,
/// provider_authorization_required, rate_limited, or source_unavailable").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SourceErrorCode {
    /// The source's timeout or the operation deadline fired.
    SourceTimeout,
    /// A record named another source identity or record type.
    SourceIdentityMismatch,
    /// The provider answered 401 or 403.
    ProviderAuthorizationRequired,
    /// The provider answered 429.
    RateLimited,
    /// Connect failure, other non-2xx, malformed or oversized body.
    SourceUnavailable,
}

impl SourceErrorCode {
    /// The code on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::SourceTimeout => "source_timeout",
            Self::SourceIdentityMismatch => "source_identity_mismatch",
            Self::ProviderAuthorizationRequired => "provider_authorization_required",
            Self::RateLimited => "rate_limited",
            Self::SourceUnavailable => "source_unavailable",
        }
    }
}

/// Why this server cut a source that ended with `source_unavailable`: its own limit, not the
/// provider. The contract's error codes are a closed set, so the code stays
/// `source_unavailable` and this is written next to it as `error.reason` (in the source's
/// `error` terminal and in its `metadata.source_errors` entry); absent for other failures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LimitReason {
    /// The source kept returning `next_cursor` past its page limit.
    PageLimit,
    /// The read delivered its most records; this source was still running (or had more).
    RecordLimit,
    /// The process-wide downstream answer budget could not hold the source's page.
    AnswerBudget,
}

impl LimitReason {
    /// The reason on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::PageLimit => "page_limit",
            Self::RecordLimit => "record_limit",
            Self::AnswerBudget => "answer_budget",
        }
    }
}

/// Limits of federated reads (advertised as `pageSize` and `maxConcurrentSources`).
#[derive(Debug, Clone)]
pub struct FederationConfig {
    /// Most records in one delivery page (and the default provider `limit`).
    pub page_size: usize,
    /// Source reads in flight at once, per invocation.
    pub max_concurrent_sources: usize,
    /// Per-source timeout when the source sets none.
    pub default_source_timeout: Duration,
    /// Operation deadline when the tool sets none.
    pub default_deadline: Duration,
    /// Largest provider body read (`[server] downstream_max_answer_bytes`, shared with tool
    /// answers).
    pub max_provider_body_bytes: usize,
    /// Most pages read from one source whose `max_pages` is unset.
    pub max_pages_per_source: usize,
    /// Most records one read delivers when the tool's `max_records` is unset.
    pub max_records_per_call: usize,
}

impl Default for FederationConfig {
    fn default() -> Self {
        Self {
            page_size: DEFAULT_PAGE_SIZE,
            max_concurrent_sources: DEFAULT_MAX_CONCURRENT_SOURCES,
            default_source_timeout: DEFAULT_SOURCE_TIMEOUT,
            default_deadline: DEFAULT_DEADLINE,
            max_provider_body_bytes: DEFAULT_MAX_PROVIDER_BODY_BYTES,
            max_pages_per_source: DEFAULT_MAX_PAGES_PER_SOURCE,
            max_records_per_call: DEFAULT_MAX_RECORDS_PER_CALL,
        }
    }
}

/// Runs federated reads. Build one and share it (`Arc<Federation>`): it holds the provider
/// connection pool.
#[derive(Debug, Clone)]
pub struct Federation {
    config: Arc<FederationConfig>,
    client: ProviderClient,
}

impl Federation {
    /// Builds the provider client. Limits of 0 are raised to 1.
    pub fn new(mut config: FederationConfig) -> Self {
        config.page_size = config.page_size.max(1);
        config.max_concurrent_sources = config.max_concurrent_sources.max(1);
        config.max_pages_per_source = config.max_pages_per_source.max(1);
        config.max_records_per_call = config.max_records_per_call.max(1);
        let client = ProviderClient::new(config.max_provider_body_bytes);
        Self {
            config: Arc::new(config),
            client,
        }
    }

    /// Counts every provider page against `budget` (the process-wide answer budget the tool
    /// client shares): a page it cannot hold ends its source with `source_unavailable`, reason
    /// `answer_budget`.
    pub(crate) fn with_answer_budget(mut self, budget: Arc<crate::invoke::AnswerBudget>) -> Self {
        self.client = self.client.with_answer_budget(budget);
        self
    }

    /// The limits in force.
    pub fn config(&self) -> &FederationConfig {
        &self.config
    }

    /// Reads every source of `tool` with the argument query string `query` (already validated
    /// and percent-encoded; may be empty), emitting source events to `sink` as pages arrive, and
    /// returns the merged, authoritative result. Never fails: source failures are reported in
    /// events and in the outcome. Dropping the future cancels every source read. With `trace`
    /// (telemetry on), every provider request is a CLIENT span and carries its context.
    pub async fn run(
        &self,
        tool: &FederatedDownstream,
        query: &str,
        sink: &mut dyn EventSink,
        trace: Option<&crate::telemetry::RequestTrace>,
    ) -> FederatedOutcome {
        fanout::run(&self.config, &self.client, tool, query, sink, trace).await
    }
}
