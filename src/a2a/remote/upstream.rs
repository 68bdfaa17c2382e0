//! The HTTP client of one remote agent: its card fetch and its JSON-RPC posts, on a connection
//! pool of its own (`invoke/pool.rs`, so that the agent's `connect_ms` is the connect timeout
//! and one slow agent's connections never crowd out another's).
//!
//! Owns [`Upstream`] (the pool, the runtime's credential from `auth.rs`, the limits),
//! [`UpstreamResponse`] (an answer's head and body, read whole with [`UpstreamResponse::collect`]
//! or chunk by chunk for a stream with [`UpstreamResponse::next_chunk`]) and [`UpstreamError`],
//! the four ways an exchange fails, which `proxy.rs` maps to A2A errors. Every exchange is
//! bounded: the head and a whole answer by `request_ms`, each stream chunk by
//! `stream_idle_ms`, every answer by `max_response_bytes`. A 401 on an OAuth credential drops
//! the cached token and the request is sent once more with a new one.
//! Must not know A2A methods, tasks, the ledger or the caller beyond the headers it is handed.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_TYPE, ETAG, IF_NONE_MATCH, USER_AGENT};
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode, Uri};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use tokio::time::Instant;

use super::auth::UpstreamCredential;
use crate::a2a::v03::Version;
use crate::config::RemoteAgentConfig;
use crate::http::body;
use crate::http::Error as HttpError;
use crate::invoke::pool::{Lease, Pool, PoolConfig, PoolError};

/// The `User-Agent` of every upstream request.
pub(crate) const AGENT: &str = concat!("sluice/", env!("CARGO_PKG_VERSION"));

/// Idle upstream connections kept, per agent.
const MAX_IDLE: usize = 32;
/// How long an idle upstream connection is kept.
const IDLE: Duration = Duration::from_secs(90);

/// Why an upstream exchange failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum UpstreamError {
    /// Not reachable: connect failure, reset, or an HTTP status that says so (5xx).
    #[error("upstream unavailable: {0}")]
    Unavailable(String),
    /// No answer (head, body or next stream chunk) in time.
    #[error("upstream timed out")]
    Timeout,
    /// The upstream (or its token endpoint) refused the runtime's credential.
    #[error("upstream refused the runtime's credential (HTTP {0})")]
    AuthFailed(u16),
    /// An answer no conforming agent sends: wrong media type, too large, not JSON-RPC.
    #[error("upstream answer not conforming: {0}")]
    NonConforming(String),
    /// The agent's configuration cannot be used (a secret that does not resolve).
    #[error("{0}")]
    Config(String),
}

/// What a card fetch found.
pub(crate) enum CardFetch {
    /// `304`: the held card is current.
    NotModified,
    /// A card body and its entity tag.
    Fetched { body: Bytes, etag: Option<String> },
}

/// The client of one registered agent.
pub(crate) struct Upstream {
    card_url: Uri,
    pool: Arc<Pool>,
    credential: UpstreamCredential,
    request: Duration,
    max_response: usize,
}

impl std::fmt::Debug for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upstream")
            .field("card_url", &self.card_url)
            .field("credential", &self.credential)
            .finish_non_exhaustive()
    }
}

impl Upstream {
    /// The client `config` describes; its secret is read now.
    pub(crate) fn new(config: &RemoteAgentConfig) -> Result<Upstream, UpstreamError> {
        let card_url = config
            .card_url
            .parse::<Uri>()
            .map_err(|_| UpstreamError::Config(format!("invalid card_url {}", config.card_url)))?;
        let pool = Arc::new(Pool::new(PoolConfig {
            connect_timeout: Duration::from_millis(config.connect_ms.max(1)),
            idle_timeout: IDLE,
            max_idle_per_host: MAX_IDLE,
        }));
        Ok(Upstream {
            card_url,
            pool,
            credential: UpstreamCredential::new(&config.upstream_auth)?,
            request: Duration::from_millis(config.request_ms.max(1)),
            max_response: config.max_response_bytes,
        })
    }

    /// `GET` the card, conditionally on `etag`.
    pub(crate) async fn fetch_card(&self, etag: Option<&str>) -> Result<CardFetch, UpstreamError> {
        let deadline = Instant::now() + self.request;
        let mut rejected = false;
        loop {
            let mut request = Request::builder()
                .method(Method::GET)
                .uri(self.card_url.clone())
                .header(ACCEPT, "application/json")
                .header(USER_AGENT, AGENT);
            if let Some(etag) = etag.and_then(|e| HeaderValue::from_str(e).ok()) {
                request = request.header(IF_NONE_MATCH, etag);
            }
            let (response, used) = self.authorized(request, Bytes::new(), deadline).await?;
            match response.status {
                StatusCode::NOT_MODIFIED => return Ok(CardFetch::NotModified),
                StatusCode::UNAUTHORIZED
                    if !rejected && self.credential.rejected(used.as_ref()) =>
                {
                    rejected = true;
                }
                status if status.is_success() => {
                    let etag = response
                        .head
                        .get(ETAG)
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_owned);
                    let body = response.collect(self.max_response).await?;
                    return Ok(CardFetch::Fetched { body, etag });
                }
                status => return Err(status_error(status)),
            }
        }
    }

    /// `POST`s one JSON-RPC request to `url` in `version`, with `headers` (the forwarded ones
    /// and the correlation id) and the runtime's credential. The answer's head is checked: a
    /// JSON body or an event stream, whatever the status, is the caller's to read (a JSON-RPC
    /// error may come with a 4xx); 401/403 are the credential's, other statuses without such a
    /// body are failures.
    pub(crate) async fn post(
        &self,
        url: &Uri,
        version: Version,
        body: Bytes,
        headers: &HeaderMap,
    ) -> Result<UpstreamResponse, UpstreamError> {
        let deadline = Instant::now() + self.request;
        let mut rejected = false;
        loop {
            let mut request = Request::builder()
                .method(Method::POST)
                .uri(url.clone())
                .header(CONTENT_TYPE, "application/json")
                .header(ACCEPT, "application/json, text/event-stream")
                .header(USER_AGENT, AGENT)
                .header("a2a-version", version.header());
            if let Some(map) = request.headers_mut() {
                for (name, value) in headers {
                    map.insert(name.clone(), value.clone());
                }
            }
            let (response, used) = self.authorized(request, body.clone(), deadline).await?;
            let status = response.status;
            if status == StatusCode::UNAUTHORIZED
                && !rejected
                && self.credential.rejected(used.as_ref())
            {
                rejected = true;
                continue;
            }
            if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
                return Err(UpstreamError::AuthFailed(status.as_u16()));
            }
            if response.is_event_stream() {
                if !status.is_success() {
                    return Err(status_error(status));
                }
                return Ok(response);
            }
            if response.is_json() && (status.is_success() || status.is_client_error()) {
                return Ok(response);
            }
            if !status.is_success() {
                return Err(status_error(status));
            }
            let media_type = String::from_utf8_lossy(response.media_type()).into_owned();
            return Err(UpstreamError::NonConforming(format!(
                "media type {}",
                crate::jsonrpc::echo(&media_type)
            )));
        }
    }

    /// Sends `request` with `body` and the runtime's credential; returns the answer and the
    /// credential value it carried (what a 401 refused).
    async fn authorized(
        &self,
        mut request: http::request::Builder,
        body: Bytes,
        deadline: Instant,
    ) -> Result<(UpstreamResponse, Option<HeaderValue>), UpstreamError> {
        let credential = self
            .credential
            .header(&self.pool, self.left(deadline))
            .await?;
        let used = match credential {
            Some((name, value)) => {
                request = request.header(name, value.clone());
                Some(value)
            }
            None => None,
        };
        let request = request
            .body(Full::new(body))
            .map_err(|_| UpstreamError::Config("invalid upstream request".into()))?;
        Ok((self.send(request, deadline).await?, used))
    }

    fn left(&self, deadline: Instant) -> Duration {
        deadline.saturating_duration_since(Instant::now())
    }

    async fn send(
        &self,
        request: Request<Full<Bytes>>,
        deadline: Instant,
    ) -> Result<UpstreamResponse, UpstreamError> {
        let (response, lease) = tokio::time::timeout_at(deadline, self.pool.send(request))
            .await
            .map_err(|_| UpstreamError::Timeout)?
            .map_err(pool_error)?;
        Ok(UpstreamResponse::new(
            response,
            lease,
            Arc::clone(&self.pool),
            deadline,
        ))
    }
}

/// One exchange on `pool` read whole (at most `max` bytes, all within `limit`): the token
/// endpoint's, which `auth.rs` asks for.
pub(crate) async fn exchange(
    pool: &Arc<Pool>,
    request: Request<Full<Bytes>>,
    max: usize,
    limit: Duration,
) -> Result<(StatusCode, Bytes), UpstreamError> {
    let deadline = Instant::now() + limit;
    let (response, lease) = tokio::time::timeout_at(deadline, pool.send(request))
        .await
        .map_err(|_| UpstreamError::Timeout)?
        .map_err(pool_error)?;
    let response = UpstreamResponse::new(response, lease, Arc::clone(pool), deadline);
    let status = response.status;
    Ok((status, response.collect(max).await?))
}

fn pool_error(err: PoolError) -> UpstreamError {
    UpstreamError::Unavailable(err.to_string())
}

fn status_error(status: StatusCode) -> UpstreamError {
    match status {
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
            UpstreamError::AuthFailed(status.as_u16())
        }
        StatusCode::REQUEST_TIMEOUT | StatusCode::GATEWAY_TIMEOUT => UpstreamError::Timeout,
        status if status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS => {
            UpstreamError::Unavailable(format!("HTTP {}", status.as_u16()))
        }
        status => UpstreamError::NonConforming(format!("HTTP {}", status.as_u16())),
    }
}

/// An upstream answer: its head, and its body read under the connection's lease (the
/// connection returns to the pool once the body was read to its end).
pub(crate) struct UpstreamResponse {
    status: StatusCode,
    head: HeaderMap,
    body: Incoming,
    lease: Option<Lease>,
    pool: Arc<Pool>,
    /// The whole exchange's deadline ([`UpstreamResponse::collect`]).
    deadline: Instant,
}

impl UpstreamResponse {
    fn new(response: Response<Incoming>, lease: Lease, pool: Arc<Pool>, deadline: Instant) -> Self {
        let (parts, body) = response.into_parts();
        UpstreamResponse {
            status: parts.status,
            head: parts.headers,
            body,
            lease: Some(lease),
            pool,
            deadline,
        }
    }

    fn media_type(&self) -> &[u8] {
        let value = self
            .head
            .get(CONTENT_TYPE)
            .map_or(&b""[..], HeaderValue::as_bytes);
        let end = memchr::memchr(b';', value).unwrap_or(value.len());
        value[..end].trim_ascii()
    }

    /// The upstream's status.
    pub(crate) fn status(&self) -> StatusCode {
        self.status
    }

    /// Whether the answer is `text/event-stream`.
    pub(crate) fn is_event_stream(&self) -> bool {
        self.media_type().eq_ignore_ascii_case(b"text/event-stream")
    }

    fn is_json(&self) -> bool {
        self.media_type().eq_ignore_ascii_case(b"application/json")
    }

    /// The whole body, at most `max` bytes, by the exchange's deadline.
    pub(crate) async fn collect(mut self, max: usize) -> Result<Bytes, UpstreamError> {
        let declared = body::content_length(&self.head);
        let read = body::collect_limited(
            &mut self.body,
            declared,
            max,
            self.deadline - Instant::now(),
        );
        let collected = match self.lease.as_mut() {
            Some(lease) => tokio::time::timeout_at(self.deadline, lease.drive(read)).await,
            None => tokio::time::timeout_at(self.deadline, read).await,
        };
        let bytes = collected
            .map_err(|_| UpstreamError::Timeout)?
            .map_err(|err| match err {
                HttpError::PayloadTooLarge { limit } => {
                    UpstreamError::NonConforming(format!("answer larger than {limit} bytes"))
                }
                HttpError::BodyTimeout { .. } => UpstreamError::Timeout,
                other => UpstreamError::Unavailable(other.to_string()),
            })?;
        if let Some(lease) = self.lease.take() {
            self.pool.release(lease);
        }
        Ok(bytes.freeze())
    }

    /// The next data chunk of a streamed body, waiting at most `idle`; `None` at its end (the
    /// connection then returns to the pool). Cancel-safe: a chunk is never lost to a `select!`
    /// that drops the future.
    pub(crate) async fn next_chunk(
        &mut self,
        idle: Duration,
    ) -> Result<Option<Bytes>, UpstreamError> {
        loop {
            let frame = {
                let next = self.body.frame();
                let read = match self.lease.as_mut() {
                    Some(lease) => tokio::time::timeout(idle, lease.drive(next)).await,
                    None => tokio::time::timeout(idle, next).await,
                };
                read.map_err(|_| UpstreamError::Timeout)?
            };
            match frame {
                None => {
                    if let Some(lease) = self.lease.take() {
                        self.pool.release(lease);
                    }
                    return Ok(None);
                }
                Some(Err(err)) => return Err(UpstreamError::Unavailable(err.to_string())),
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) if data.is_empty() => {}
                    Ok(data) => return Ok(Some(data)),
                    // Trailers carry nothing the relay reads.
                    Err(_) => {}
                },
            }
        }
    }
}

#[cfg(test)]
mod tests;
