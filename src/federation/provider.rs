//! The provider HTTP client: page URLs, one page read, page parsing and error mapping.
//!
//! Owns `ProviderClient` (one pooled hyper-util client, HTTPS through hyper-rustls like
//! `invoke/client.rs`), `page_url`, `parse_page`, and `ProviderError` with its mapping onto the
//! contract's source error codes. Every page body counts against the process-wide answer budget
//! (`invoke/budget.rs`) while it is read and parsed. Must not emit events, merge records or apply timeouts (the run
//! loop in `fanout.rs` owns time). Provider messages, URLs and credentials never leave this file
//! except in `tracing` debug lines, and credentials not even there ("Provider exceptions and
//! credentials are excluded").

use bytes::{Bytes, BytesMut};
use http::header::{HeaderName, HeaderValue, ACCEPT, CONTENT_LENGTH};
use http::{Request, StatusCode, Uri};
use http_body_util::{BodyExt, Empty};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::sync::Arc;

use super::{LimitReason, SourceErrorCode};
use crate::config::Source;
use crate::invoke::{AnswerBudget, AnswerReservation, OverBudget};
use crate::telemetry::{Attribute, RequestTrace};

/// How long establishing a provider connection may take; past it the source is
/// `source_unavailable` (the per-source timeout still bounds the whole read).
pub(super) const PROVIDER_CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// Idle pooled provider connections kept per host.
pub(super) const PROVIDER_MAX_IDLE_PER_HOST: usize = 32;

/// Characters percent-encoded in a cursor (everything but unreserved characters).
const CURSOR_ENCODE: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// Why a provider read failed. `code()` is all that reaches events and results.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ProviderError {
    /// The page URL or the credential header cannot form a request (configuration).
    #[error("provider request cannot be built")]
    BadRequest,
    /// No connection could be established.
    #[error("provider connection failed")]
    Connect(#[source] hyper_util::client::legacy::Error),
    /// The exchange broke after connecting.
    #[error("provider exchange failed")]
    Transport(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// A non-2xx status.
    #[error("provider answered {0}")]
    Status(StatusCode),
    /// The body is larger than `max_provider_body_bytes`.
    #[error("provider body larger than {limit} bytes")]
    TooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// The body is not a provider page (not JSON, missing or ill-typed required keys).
    #[error("provider body is malformed")]
    Malformed(#[source] serde_json::Error),
    /// A record names another source identity or record type than the one read.
    #[error("provider record does not match the source")]
    IdentityMismatch,
    /// The source kept returning cursors past its page limit.
    #[error("provider returned too many pages")]
    TooManyPages,
    /// The page would take the process past its downstream answer budget.
    #[error("{0}")]
    Busy(OverBudget),
}

impl ProviderError {
    /// The contract's error code for this failure.
    pub(crate) fn code(&self) -> SourceErrorCode {
        match self {
            Self::Status(StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN) => {
                SourceErrorCode::ProviderAuthorizationRequired
            }
            Self::Status(StatusCode::TOO_MANY_REQUESTS) => SourceErrorCode::RateLimited,
            Self::IdentityMismatch => SourceErrorCode::SourceIdentityMismatch,
            Self::BadRequest
            | Self::Connect(_)
            | Self::Transport(_)
            | Self::Status(_)
            | Self::TooLarge { .. }
            | Self::Malformed(_)
            | Self::TooManyPages
            | Self::Busy(_) => SourceErrorCode::SourceUnavailable,
        }
    }

    /// The server limit that cut the source, when one did (`error.reason`).
    pub(crate) fn reason(&self) -> Option<LimitReason> {
        match self {
            Self::TooManyPages => Some(LimitReason::PageLimit),
            Self::Busy(_) => Some(LimitReason::AnswerBudget),
            _ => None,
        }
    }
}

/// One provider page as parsed. Unknown keys are ignored.
#[derive(Debug, Deserialize)]
pub(crate) struct ProviderPage {
    pub(crate) records: Vec<ProviderRecord>,
    /// `null` or absent: the last page.
    #[serde(default)]
    pub(crate) next_cursor: Option<String>,
}

/// One provider record as parsed: every key but `version` is required.
#[derive(Debug, Deserialize)]
pub(crate) struct ProviderRecord {
    pub(crate) source_identity: String,
    pub(crate) external_id: String,
    pub(crate) record_type: String,
    pub(crate) observed_at: String,
    #[serde(default)]
    pub(crate) version: Option<ProviderVersion>,
    pub(crate) fields: Map<String, Value>,
}

/// `version`: a string or a number (`null` and absence are `None`).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum ProviderVersion {
    Text(String),
    Number(serde_json::Number),
}

impl ProviderVersion {
    pub(crate) fn into_value(version: Option<Self>) -> Value {
        match version {
            None => Value::Null,
            Some(Self::Text(text)) => Value::String(text),
            Some(Self::Number(number)) => Value::Number(number),
        }
    }
}

/// Parses a provider body.
pub(crate) fn parse_page(body: &[u8]) -> Result<ProviderPage, ProviderError> {
    serde_json::from_slice(body).map_err(ProviderError::Malformed)
}

/// `{url}?{query}&cursor={cursor}&limit={limit}`: joined with `&` when `url` already has a
/// query; `query` and `cursor` left out when empty or absent.
pub(crate) fn page_url(url: &str, query: &str, cursor: Option<&str>, limit: usize) -> String {
    let mut out = String::with_capacity(url.len() + query.len() + 48);
    out.push_str(url);
    let mut separator = match url.find('?') {
        None => Some('?'),
        Some(at) if at + 1 == url.len() || url.ends_with('&') => None,
        Some(_) => Some('&'),
    };
    let mut push = |out: &mut String, part: &str| {
        if let Some(sep) = separator.take() {
            out.push(sep);
        } else if !(out.ends_with('?') || out.ends_with('&')) {
            out.push('&');
        }
        out.push_str(part);
    };
    let query = query.trim_start_matches(['?', '&']);
    if !query.is_empty() {
        push(&mut out, query);
    }
    if let Some(cursor) = cursor {
        let encoded = format!("cursor={}", utf8_percent_encode(cursor, CURSOR_ENCODE));
        push(&mut out, &encoded);
    }
    push(&mut out, &format!("limit={limit}"));
    out
}

type HttpClient = Client<HttpsConnector<HttpConnector>, Empty<Bytes>>;

/// The shared provider client (clone-cheap, pooled).
#[derive(Clone)]
pub(crate) struct ProviderClient {
    client: HttpClient,
    max_body_bytes: usize,
    /// Provider page bytes held at once count here (unlimited until `with_answer_budget`).
    budget: Arc<AnswerBudget>,
}

impl std::fmt::Debug for ProviderClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderClient")
            .field("max_body_bytes", &self.max_body_bytes)
            .finish_non_exhaustive()
    }
}

impl ProviderClient {
    /// Builds the pooled client. Needs no runtime until the first request.
    pub(crate) fn new(max_body_bytes: usize) -> Self {
        let client = crate::invoke::client::pooled_client(
            PROVIDER_CONNECT_TIMEOUT,
            None,
            PROVIDER_MAX_IDLE_PER_HOST,
        );
        Self {
            client,
            max_body_bytes,
            budget: AnswerBudget::new(0),
        }
    }

    /// Counts page bodies against `budget` while they are read and parsed.
    pub(crate) fn with_answer_budget(mut self, budget: Arc<AnswerBudget>) -> Self {
        self.budget = budget;
        self
    }

    /// Reads one page: GET with `accept: application/json` and the source's credential.
    /// Dropping the future cancels the request (hyper closes the HTTP/1 connection).
    /// With `trace` (telemetry on), the request is a CLIENT span carrying the source's identity
    /// (`sluice.source.identity`), its context sent in the request's headers.
    pub(crate) async fn fetch_page(
        &self,
        source: &Source,
        url: &str,
        trace: Option<&RequestTrace>,
    ) -> Result<ProviderPage, ProviderError> {
        // The body's reservation is held until it is parsed (`_held` drops at the end).
        let (body, _held) = self.fetch_body(source, url, trace).await?;
        parse_page(&body).inspect_err(|err| {
            tracing::debug!(source = %source.source_identity, error = %err, "provider page rejected");
        })
    }

    async fn fetch_body(
        &self,
        source: &Source,
        url: &str,
        trace: Option<&RequestTrace>,
    ) -> Result<(Bytes, AnswerReservation), ProviderError> {
        let uri: Uri = url.parse().map_err(|_| ProviderError::BadRequest)?;
        let mut request = Request::get(uri)
            .header(ACCEPT, "application/json")
            .body(Empty::<Bytes>::new())
            .map_err(|_| ProviderError::BadRequest)?;
        if let Some(credential) = &source.credential {
            let name = HeaderName::from_bytes(credential.header.as_bytes())
                .map_err(|_| ProviderError::BadRequest)?;
            let mut value =
                HeaderValue::from_str(&credential.value).map_err(|_| ProviderError::BadRequest)?;
            value.set_sensitive(true);
            request.headers_mut().insert(name, value);
        }
        let span = trace.filter(|trace| trace.records()).map(|trace| {
            let identity = Attribute::new("sluice.source.identity", source.source_identity.clone());
            trace.http_client_span(&mut request, vec![identity])
        });
        let response = self.client.request(request).await.map_err(|err| {
            tracing::debug!(source = %source.source_identity, error = %err, "provider request failed");
            if let Some(span) = &span {
                span.fail(if err.is_connect() { "connect" } else { "transport" });
            }
            if err.is_connect() {
                ProviderError::Connect(err)
            } else {
                ProviderError::Transport(Box::new(err))
            }
        })?;
        let status = response.status();
        if let Some(span) = &span {
            span.status(status.as_u16());
        }
        if !status.is_success() {
            tracing::debug!(source = %source.source_identity, %status, "provider answered an error status");
            // The body is never read: provider messages are not shown anywhere.
            return Err(ProviderError::Status(status));
        }
        let limit = self.max_body_bytes;
        let declared = response
            .headers()
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > limit as u64) {
            return Err(ProviderError::TooLarge { limit });
        }
        let declared = declared.unwrap_or(0) as usize;
        let mut held = self.budget.reserve(declared).map_err(ProviderError::Busy)?;
        let mut body = response.into_body();
        let mut buf = BytesMut::with_capacity(declared);
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|err| ProviderError::Transport(Box::new(err)))?;
            let Ok(data) = frame.into_data() else {
                continue;
            };
            if buf.len().saturating_add(data.len()) > limit {
                return Err(ProviderError::TooLarge { limit });
            }
            held.ensure(buf.len() + data.len(), limit)
                .map_err(ProviderError::Busy)?;
            buf.extend_from_slice(&data);
        }
        Ok((buf.freeze(), held))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_url(url: &str, query: &str, cursor: Option<&str>, expected: &str) {
        assert_eq!(page_url(url, query, cursor, 100), expected, "{url} {query}");
    }

    #[test]
    fn page_urls_join_correctly() {
        check_url("http://h/p", "", None, "http://h/p?limit=100");
        check_url(
            "http://h/p",
            "q=a%20b",
            None,
            "http://h/p?q=a%20b&limit=100",
        );
        check_url(
            "http://h/p",
            "q=1",
            Some("c 1/&"),
            "http://h/p?q=1&cursor=c%201%2F%26&limit=100",
        );
        check_url(
            "http://h/p?k=v",
            "q=1",
            Some("x"),
            "http://h/p?k=v&q=1&cursor=x&limit=100",
        );
        check_url("http://h/p?", "q=1", None, "http://h/p?q=1&limit=100");
        check_url(
            "http://h/p?k=v&",
            "",
            Some("x"),
            "http://h/p?k=v&cursor=x&limit=100",
        );
        check_url("http://h/p", "?q=1", None, "http://h/p?q=1&limit=100");
    }

    #[test]
    fn error_codes() {
        let code = |e: ProviderError| e.code().as_str();
        assert_eq!(
            code(ProviderError::Status(StatusCode::UNAUTHORIZED)),
            "provider_authorization_required"
        );
        assert_eq!(
            code(ProviderError::Status(StatusCode::FORBIDDEN)),
            "provider_authorization_required"
        );
        assert_eq!(
            code(ProviderError::Status(StatusCode::TOO_MANY_REQUESTS)),
            "rate_limited"
        );
        assert_eq!(
            code(ProviderError::Status(StatusCode::BAD_GATEWAY)),
            "source_unavailable"
        );
        assert_eq!(
            code(ProviderError::Status(StatusCode::NOT_FOUND)),
            "source_unavailable"
        );
        assert_eq!(
            code(ProviderError::TooLarge { limit: 1 }),
            "source_unavailable"
        );
        assert_eq!(
            code(ProviderError::IdentityMismatch),
            "source_identity_mismatch"
        );
    }

    #[test]
    fn parses_pages_and_rejects_malformed_ones() {
        let ok = br#"{"records":[{"source_identity":"s","external_id":"1","record_type":"person",
            "observed_at":"t","version":3,"fields":{},"extra":1}],"next_cursor":null}"#;
        let page = parse_page(ok).unwrap();
        assert_eq!(page.records.len(), 1);
        assert!(page.next_cursor.is_none());
        for bad in [
            &br#"{"records":[{"source_identity":"s","record_type":"person","observed_at":"t","fields":{}}]}"#[..],
            br#"{"records":[{"source_identity":"s","external_id":1,"record_type":"person","observed_at":"t","fields":{}}]}"#,
            br#"{"records":[{"source_identity":"s","external_id":"1","record_type":"person","observed_at":"t","version":[],"fields":{}}]}"#,
            br#"{"records":[{"source_identity":"s","external_id":"1","record_type":"person","observed_at":"t","fields":[]}]}"#,
            br#"{"next_cursor":null}"#,
            br#"<html>"#,
            br#"{"records":[]} x"#,
        ] {
            assert!(matches!(parse_page(bad), Err(ProviderError::Malformed(_))), "{}", String::from_utf8_lossy(bad));
        }
    }
}
