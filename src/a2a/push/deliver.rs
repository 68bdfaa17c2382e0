//! Delivering push notifications: one worker's loop ([`Worker::run`]), the attempts of one
//! delivery with their backoff, and one attempt on the wire.
//!
//! An attempt validates the configuration again and resolves its host now ([`super::check`],
//! [`super::resolve_target`]), then connects through a connector whose resolver answers only
//! that host, with exactly the addresses just checked ([`PinnedResolver`]): the name is never
//! looked up a second time, so an answer that changes between the check and the connect (DNS
//! rebinding) cannot reach an internal address. TLS keeps the URL's host as server name and
//! verifies the certificate against the webpki roots. The request is one `POST` on its own
//! HTTP/1.1 connection (`Connection: close`); the answer's status decides, its body is read up
//! to [`MAX_RESPONSE_BODY`] and dropped, a redirect is never followed.
//!
//! Must not queue or pick workers (`push.rs` does); never puts the token or the credentials in
//! an audit record or an error.

use std::error::Error as StdError;
use std::future::poll_fn;
use std::io;
use std::net::SocketAddr;
use std::pin::pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::header::{AUTHORIZATION, CONNECTION, CONTENT_TYPE, HOST, USER_AGENT};
use http::{HeaderValue, Request, StatusCode, Uri};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1;
use hyper_rustls::HttpsConnectorBuilder;
use hyper_util::client::legacy::connect::dns::Name;
use hyper_util::client::legacy::connect::HttpConnector;
use tokio::sync::mpsc;
use tokio::time::{timeout_at, Instant};
use tower_service::Service;

use super::{check, resolve_target, Delivery, PushRefusal, PushStats, Target, TOKEN_HEADER};
use crate::audit::{Audit, CallType, Outcome, Record, Surface};
use crate::config::A2aSettings;

/// Response body bytes read before the answer is dropped (a webhook has nothing to tell us
/// beyond its status; reading a little lets a well-behaved one finish its write).
pub(crate) const MAX_RESPONSE_BODY: usize = 64 * 1024;

/// The longest wait between two attempts, whatever `push_backoff_ms` and the attempt count.
pub(crate) const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// Longest error text kept in an audit record's `detail`.
const MAX_DETAIL_ERROR: usize = 300;

/// `User-Agent` of every notification.
const AGENT: &str = concat!("sluice/", env!("CARGO_PKG_VERSION"));

/// How every delivery is attempted, from `[server.a2a]`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Plan {
    /// Attempts per delivery, the first included (at least 1).
    attempts: u32,
    /// The time limit of one attempt, from the lookup to the last body byte read.
    timeout: Duration,
    /// The wait after the first failed attempt, doubled after each further one.
    backoff: Duration,
}

impl Plan {
    pub(super) fn from_settings(settings: &A2aSettings) -> Plan {
        Plan {
            attempts: settings.push_attempts.max(1),
            timeout: Duration::from_millis(settings.push_timeout_ms.max(1)),
            backoff: Duration::from_millis(settings.push_backoff_ms),
        }
    }

    /// The wait after failed attempt `attempt` (1-based): `backoff · 2^(attempt-1)`, at most
    /// [`MAX_BACKOFF`].
    fn backoff_after(&self, attempt: u32) -> Duration {
        let factor = 1u32 << attempt.saturating_sub(1).min(20);
        self.backoff.saturating_mul(factor).min(MAX_BACKOFF)
    }
}

/// One worker: delivers what its queue holds, one delivery at a time.
pub(super) struct Worker {
    plan: Plan,
    audit: Audit,
    stats: Arc<PushStats>,
}

/// Why one attempt did not get a status.
#[derive(Debug, thiserror::Error)]
enum AttemptError {
    /// The configuration failed the validation at delivery time.
    #[error("refused: {0}")]
    Refused(#[from] PushRefusal),
    /// No connection (refused, unreachable, TLS handshake or certificate failure).
    #[error("connect: {}", chain(.0.as_ref()))]
    Connect(Box<dyn StdError + Send + Sync>),
    /// The connection failed during the exchange.
    #[error("transport: {}", chain(.0))]
    Transport(hyper::Error),
    /// The attempt's time limit passed before the response head.
    #[error("timed out")]
    Timeout,
    /// The request could not be built (a header value; validation makes this unreachable).
    #[error("request: {0}")]
    Request(&'static str),
}

impl AttemptError {
    /// The `error_code` class of the attempt's audit record.
    fn class(&self) -> &'static str {
        match self {
            AttemptError::Refused(_) => "push_refused",
            AttemptError::Connect(_) => "push_connect",
            AttemptError::Transport(_) => "push_transport",
            AttemptError::Timeout => "push_timeout",
            AttemptError::Request(_) => "push_request",
        }
    }
}

/// What an attempt's result means for the delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    /// 2xx: done.
    Delivered,
    /// 408, 429, 5xx, no connection, a timeout: worth another attempt.
    Retry,
    /// A redirect (never followed), another 4xx, an unbuildable request: giving up now.
    Final,
    /// Refused by validation: never sent, giving up now.
    Refused,
}

fn verdict(result: &Result<StatusCode, AttemptError>) -> Verdict {
    match result {
        Ok(status) if status.is_success() => Verdict::Delivered,
        Ok(status)
            if *status == StatusCode::REQUEST_TIMEOUT
                || *status == StatusCode::TOO_MANY_REQUESTS
                || status.is_server_error() =>
        {
            Verdict::Retry
        }
        Ok(_) => Verdict::Final,
        Err(AttemptError::Refused(refusal)) if refusal.is_transient() => Verdict::Retry,
        Err(AttemptError::Refused(_)) => Verdict::Refused,
        Err(AttemptError::Connect(_) | AttemptError::Transport(_) | AttemptError::Timeout) => {
            Verdict::Retry
        }
        Err(AttemptError::Request(_)) => Verdict::Final,
    }
}

impl Worker {
    pub(super) fn new(plan: Plan, audit: Audit, stats: Arc<PushStats>) -> Worker {
        Worker { plan, audit, stats }
    }

    /// Delivers every queued delivery in order; ends when the sender is dropped and the queue
    /// is empty.
    pub(super) async fn run(self, mut queue: mpsc::Receiver<Delivery>) {
        while let Some(delivery) = queue.recv().await {
            self.deliver(&delivery).await;
        }
    }

    /// Every attempt of one delivery, each audited, until one decides it.
    async fn deliver(&self, delivery: &Delivery) {
        for attempt in 1..=self.plan.attempts {
            let started = Instant::now();
            let result = attempt_once(delivery, started + self.plan.timeout).await;
            let verdict = verdict(&result);
            self.audit_attempt(delivery, attempt, &result, started.elapsed())
                .await;
            let counter = match verdict {
                Verdict::Delivered => &self.stats.delivered,
                Verdict::Final => &self.stats.failed,
                Verdict::Refused => &self.stats.refused,
                Verdict::Retry if attempt == self.plan.attempts => &self.stats.failed,
                Verdict::Retry => {
                    self.stats.retried.fetch_add(1, Ordering::Relaxed);
                    tokio::time::sleep(self.plan.backoff_after(attempt)).await;
                    continue;
                }
            };
            counter.fetch_add(1, Ordering::Relaxed);
            return;
        }
    }

    /// One audit record per attempt: the task, the configuration, the status or the error.
    async fn audit_attempt(
        &self,
        delivery: &Delivery,
        attempt: u32,
        result: &Result<StatusCode, AttemptError>,
        elapsed: Duration,
    ) {
        if !self.audit.is_enabled() {
            return;
        }
        let (what, outcome, class) = match result {
            Ok(status) if status.is_success() => {
                (format!("HTTP {}", status.as_u16()), Outcome::Ok, None)
            }
            Ok(status) => (
                format!("HTTP {}", status.as_u16()),
                Outcome::Error,
                Some("push_status"),
            ),
            Err(err) => {
                let mut text = err.to_string();
                truncate_at_char(&mut text, MAX_DETAIL_ERROR);
                (text, Outcome::Error, Some(err.class()))
            }
        };
        let detail = format!(
            "task {} config {} attempt {}/{}: {}",
            delivery.task_id, delivery.config.id, attempt, self.plan.attempts, what
        );
        let record = Record::new(
            Surface::A2a,
            CallType::A2aPush,
            Arc::clone(&delivery.tenant),
            Arc::clone(&delivery.client),
            Arc::clone(&delivery.caller),
        )
        .with_outcome(outcome, class.map(str::to_owned))
        .with_duration(elapsed)
        .with_detail(detail);
        self.audit.record(record).await;
    }
}

/// One attempt: validate, resolve, connect to the checked addresses, `POST`, read the status.
/// The whole attempt ends by `deadline`: no response head by then is a timeout; the body is
/// read only until then (the status decides either way).
async fn attempt_once(delivery: &Delivery, deadline: Instant) -> Result<StatusCode, AttemptError> {
    let target = check(&delivery.config, &delivery.policy)?;
    let addrs = timeout_at(deadline, resolve_target(&target))
        .await
        .map_err(|_| AttemptError::Timeout)??;
    let request = build_request(delivery, &target)?;

    let mut connector = connector(&target, addrs);
    let io = timeout_at(deadline, async {
        poll_fn(|cx| connector.poll_ready(cx)).await?;
        connector.call(target.uri.clone()).await
    })
    .await
    .map_err(|_| AttemptError::Timeout)?
    .map_err(AttemptError::Connect)?;
    let (mut sender, conn) = timeout_at(deadline, http1::handshake::<_, Full<Bytes>>(io))
        .await
        .map_err(|_| AttemptError::Timeout)?
        .map_err(AttemptError::Transport)?;

    let exchange = async move {
        let response = timeout_at(deadline, sender.send_request(request))
            .await
            .map_err(|_| AttemptError::Timeout)?
            .map_err(AttemptError::Transport)?;
        let status = response.status();
        // The status is the answer; a body that is slow or breaks off changes nothing.
        let _ = timeout_at(deadline, drain(response.into_body())).await;
        Ok(status)
    };
    // The connection does the socket IO; it is polled alongside the exchange and dropped with
    // it, so nothing outlives the attempt.
    let mut conn = pin!(conn);
    let mut exchange = pin!(exchange);
    tokio::select! {
        biased;
        result = &mut exchange => result,
        // The connection ended (closed after the response, or failed): the exchange then
        // finishes at once with what it has.
        _ = &mut conn => exchange.await,
    }
}

/// The notification: `POST` in origin form with the configuration's headers.
fn build_request(
    delivery: &Delivery,
    target: &Target,
) -> Result<Request<Full<Bytes>>, AttemptError> {
    let authority = target
        .uri
        .authority()
        .ok_or(AttemptError::Request("no authority"))?;
    let path = target.uri.path_and_query().map_or("/", |pq| pq.as_str());
    let origin: Uri = path
        .parse()
        .map_err(|_| AttemptError::Request("bad path"))?;
    let host =
        HeaderValue::from_str(authority.as_str()).map_err(|_| AttemptError::Request("bad host"))?;
    let mut request = Request::post(origin)
        .header(HOST, host)
        .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
        .header(USER_AGENT, HeaderValue::from_static(AGENT))
        .header(CONNECTION, HeaderValue::from_static("close"))
        .body(Full::new(delivery.body.clone()))
        .map_err(|_| AttemptError::Request("bad request"))?;
    let headers = request.headers_mut();
    if let Some(token) = delivery.config.token.as_deref().filter(|t| !t.is_empty()) {
        let mut value =
            HeaderValue::from_str(token).map_err(|_| AttemptError::Request("bad token"))?;
        value.set_sensitive(true);
        headers.insert(TOKEN_HEADER, value);
    }
    if let Some(auth) = &delivery.config.authentication {
        let text = match auth.credentials.as_deref() {
            Some(credentials) => format!("{} {}", auth.scheme, credentials),
            None => auth.scheme.clone(),
        };
        let mut value =
            HeaderValue::from_str(&text).map_err(|_| AttemptError::Request("bad authorization"))?;
        value.set_sensitive(true);
        headers.insert(AUTHORIZATION, value);
    }
    Ok(request)
}

/// Reads at most [`MAX_RESPONSE_BODY`] bytes of the answer and drops them.
async fn drain(mut body: Incoming) {
    let mut read = 0usize;
    while read < MAX_RESPONSE_BODY {
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Some(data) = frame.data_ref() {
                    read += data.len();
                }
            }
            Some(Err(_)) | None => return,
        }
    }
}

/// The connector of one attempt: TCP only to `addrs`, then TLS for `https` (webpki roots, the
/// URL's host as server name), HTTP/1.1 only. Built per attempt so the pinned addresses are
/// immutable; building it costs microseconds against a handshake's milliseconds.
fn connector(
    target: &Target,
    addrs: Vec<SocketAddr>,
) -> hyper_rustls::HttpsConnector<HttpConnector<PinnedResolver>> {
    let mut http = HttpConnector::new_with_resolver(PinnedResolver {
        host: Arc::from(target.host.as_str()),
        addrs: Arc::from(addrs),
    });
    // The TLS wrapper needs `https` URIs to reach it.
    http.enforce_http(false);
    http.set_nodelay(true);
    let builder = HttpsConnectorBuilder::new().with_webpki_roots();
    let builder = if target.https {
        builder.https_only()
    } else {
        builder.https_or_http()
    };
    builder.enable_http1().wrap_connector(http)
}

/// A resolver that knows one name and answers it with the addresses checked for it; any other
/// name is an error. (An IP-literal host never reaches a resolver: the connector dials it.)
#[derive(Debug, Clone)]
struct PinnedResolver {
    /// The checked host: lowercased, no trailing dot.
    host: Arc<str>,
    /// Its checked addresses, with the port.
    addrs: Arc<[SocketAddr]>,
}

impl Service<Name> for PinnedResolver {
    type Response = PinnedAddrs;
    type Error = io::Error;
    type Future = std::future::Ready<Result<Self::Response, io::Error>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), io::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, name: Name) -> Self::Future {
        let asked = name.as_str();
        let asked = asked.strip_suffix('.').unwrap_or(asked);
        std::future::ready(if asked.eq_ignore_ascii_case(&self.host) {
            Ok(PinnedAddrs {
                addrs: Arc::clone(&self.addrs),
                next: 0,
            })
        } else {
            Err(io::Error::other("host is not the one that was checked"))
        })
    }
}

/// The addresses a [`PinnedResolver`] answers with, in order.
#[derive(Debug)]
struct PinnedAddrs {
    addrs: Arc<[SocketAddr]>,
    next: usize,
}

impl Iterator for PinnedAddrs {
    type Item = SocketAddr;

    fn next(&mut self) -> Option<SocketAddr> {
        let addr = self.addrs.get(self.next).copied();
        self.next += 1;
        addr
    }
}

/// An error and its sources, `": "`-separated.
fn chain(err: &(dyn StdError + 'static)) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        // Some errors repeat their source's message in their own.
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// Cuts `text` to at most `max` bytes, on a character boundary.
fn truncate_at_char(text: &mut String, max: usize) {
    if text.len() > max {
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn backoff_doubles_and_caps() {
        let plan = Plan {
            attempts: 10,
            timeout: Duration::from_secs(1),
            backoff: Duration::from_millis(500),
        };
        assert_eq!(plan.backoff_after(1), Duration::from_millis(500));
        assert_eq!(plan.backoff_after(2), Duration::from_millis(1000));
        assert_eq!(plan.backoff_after(3), Duration::from_millis(2000));
        assert_eq!(plan.backoff_after(7), Duration::from_secs(30));
        assert_eq!(plan.backoff_after(40), Duration::from_secs(30));
    }

    #[test]
    fn verdicts() {
        let status = |code: u16| verdict(&Ok(StatusCode::from_u16(code).expect("status")));
        assert_eq!(status(200), Verdict::Delivered);
        assert_eq!(status(204), Verdict::Delivered);
        assert_eq!(status(301), Verdict::Final);
        assert_eq!(status(302), Verdict::Final);
        assert_eq!(status(307), Verdict::Final);
        assert_eq!(status(400), Verdict::Final);
        assert_eq!(status(401), Verdict::Final);
        assert_eq!(status(404), Verdict::Final);
        assert_eq!(status(408), Verdict::Retry);
        assert_eq!(status(429), Verdict::Retry);
        assert_eq!(status(500), Verdict::Retry);
        assert_eq!(status(503), Verdict::Retry);
        assert_eq!(verdict(&Err(AttemptError::Timeout)), Verdict::Retry);
        assert_eq!(
            verdict(&Err(PushRefusal::NonPublicAddress.into())),
            Verdict::Refused
        );
        assert_eq!(
            verdict(&Err(PushRefusal::Unresolvable.into())),
            Verdict::Retry
        );
    }

    #[test]
    fn pinned_resolver_answers_only_its_host() {
        let addr: SocketAddr = "192.0.2.7:443".parse().expect("addr");
        let mut resolver = PinnedResolver {
            host: Arc::from("hooks.example.com"),
            addrs: Arc::from(vec![addr]),
        };
        let name = |text: &str| text.parse::<Name>().expect("name");
        let answer = |resolver: &mut PinnedResolver, text: &str| {
            futures_util::FutureExt::now_or_never(resolver.call(name(text))).expect("ready")
        };
        let found: Vec<_> = answer(&mut resolver, "Hooks.Example.COM.")
            .expect("its own host")
            .collect();
        assert_eq!(found, vec![addr]);
        assert!(answer(&mut resolver, "other.example.com").is_err());
    }
}
