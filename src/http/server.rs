//! The accept loop: connection limit, `TCP_NODELAY`, HTTP/1.1 and HTTP/2 on one port, and
//! graceful drain. Each connection runs under `conn.rs` (header read and idle timeouts, requests
//! in progress, the grace-end 503).
//!
//! Drain, in order: stop accepting (the listener is dropped, so new connections are refused);
//! fire the [`Drain`] signal (streaming bodies end at their next frame boundary; every connection
//! starts its graceful shutdown, finishing its in-flight requests); when the grace period ends,
//! requests whose response has not started answer 503, and after [`GRACE_END_FLUSH`] whatever is
//! left is dropped. Must not know what the service does.

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use http::{Request, Response};
use hyper::body::Incoming;
use hyper::service::Service;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use super::conn::{self, Clock, ConnState, Timeouts, Tracked, TrackedIo};
use super::response::Body;
use super::tls::{ClientCertificate, Tls};

// The accept loop's settings and signal live in their own files (`limits.rs`, `drain.rs`), so
// that bodies, responses and connections can name them without importing the accept loop.
pub use super::drain::Drain;
pub use super::limits::Limits;

/// Pause after an accept error that is not about one connection (e.g. too many open files), so
/// the loop does not spin while the condition lasts.
const ACCEPT_ERROR_BACKOFF: Duration = Duration::from_millis(50);

/// At most one accept-error warning per this interval; the next one counts those suppressed.
const ACCEPT_ERROR_LOG_INTERVAL: Duration = Duration::from_secs(1);

/// After the drain grace period, how long the 503 answers (and streams ending) get to reach
/// their clients before the connections left are dropped.
pub(crate) const GRACE_END_FLUSH: Duration = Duration::from_secs(1);

// === accept loop ===

/// Who is on the other end of a connection: its address and, over TLS, its verified client
/// certificate. Handed to the service factory of [`run`] once per connection, so requests carry
/// it without a per-request allocation.
#[derive(Debug, Clone)]
pub struct Peer {
    /// The remote address.
    pub addr: std::net::SocketAddr,
    /// The identity of the verified client certificate (mTLS), when one was presented.
    pub certificate: Option<Arc<ClientCertificate>>,
}

/// Serves the service `make_service` builds for each connection `listener` accepts (over TLS
/// when `tls` is set) until `shutdown` resolves, then drains (see the module doc). Returns once
/// every connection has finished or been dropped.
pub async fn run<F, S>(
    listener: TcpListener,
    limits: &Limits,
    tls: Option<Arc<Tls>>,
    drain: Drain,
    make_service: F,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()>
where
    F: Fn(Peer) -> S + Send + Sync + 'static,
    S: Service<Request<Incoming>, Response = Response<Body>, Error = Infallible> + Send + 'static,
    S::Future: Send + 'static,
{
    let mut builder = Builder::new(TokioExecutor::new());
    // hyper's own header timer runs from the end of the previous response, which would close
    // keep-alive connections after the header timeout instead of the idle one: the connection
    // watchdog (`conn.rs`) times heads instead, from their first byte.
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(None);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(limits.h2_max_concurrent_streams);
    let builder = Arc::new(builder);
    let make_service = Arc::new(make_service);
    let timeouts = Timeouts {
        header_read: limits.header_read_timeout,
        idle: limits.idle_timeout,
    };
    let clock = Clock::new();
    let ticker = clock.spawn_ticker();

    // Each connection task holds a permit; at the limit the loop waits here instead of
    // accepting, so excess connections queue in the kernel backlog.
    let permits = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let mut connections = JoinSet::new();
    let mut accept_errors = RateLimitedLog::new(ACCEPT_ERROR_LOG_INTERVAL);
    let mut shutdown = std::pin::pin!(shutdown);

    loop {
        while connections.try_join_next().is_some() {}

        let permit = tokio::select! {
            biased;
            () = &mut shutdown => break,
            permit = permits.clone().acquire_owned() => permit,
        };
        let Ok(permit) = permit else { break };

        let accepted = tokio::select! {
            biased;
            () = &mut shutdown => break,
            accepted = listener.accept() => accepted,
        };
        let (stream, addr) = match accepted {
            Ok(accepted) => accepted,
            Err(err) if is_per_connection(&err) => {
                tracing::debug!(error = %err, "accept failed for one connection");
                continue;
            }
            Err(err) => {
                // EMFILE and friends last while they last: one line a second, with a count.
                if let Some(suppressed) = accept_errors.record(Instant::now()) {
                    tracing::warn!(error = %err, suppressed, "accept failed; backing off");
                }
                tokio::time::sleep(ACCEPT_ERROR_BACKOFF).await;
                continue;
            }
        };
        if let Err(err) = stream.set_nodelay(true) {
            tracing::debug!(error = %err, "could not set TCP_NODELAY");
        }

        let phase = drain.subscribe();
        let builder = Arc::clone(&builder);
        let clock = Arc::clone(&clock);
        match &tls {
            None => {
                let service = make_service(Peer {
                    addr,
                    certificate: None,
                });
                connections.spawn(async move {
                    serve_connection(&builder, &clock, stream, service, timeouts, phase).await;
                    drop(permit);
                });
            }
            Some(tls) => {
                // The handshake runs in the connection's task, never in the accept loop, so a
                // slow client delays no one else (and is cut off at the handshake timeout).
                let tls = Arc::clone(tls);
                let make_service = Arc::clone(&make_service);
                connections.spawn(async move {
                    match tls.accept(stream).await {
                        Ok((stream, certificate)) => {
                            let service = make_service(Peer { addr, certificate });
                            serve_connection(&builder, &clock, stream, service, timeouts, phase)
                                .await;
                        }
                        Err(err) => tracing::debug!(%addr, error = %err, "TLS handshake failed"),
                    }
                    drop(permit);
                });
            }
        }
    }

    // Stop accepting first, so connection attempts from here on are refused.
    drop(listener);
    // Counted before the drain starts: an idle connection the drain closes at once is still
    // one the drain began with (counting after raced with those closes).
    while connections.try_join_next().is_some() {}
    tracing::info!(connections = connections.len(), "draining");
    drain.start();
    let all_closed = async { while connections.join_next().await.is_some() {} };
    if tokio::time::timeout(limits.drain_grace, all_closed)
        .await
        .is_err()
    {
        // Finished tasks not joined yet would count as open.
        while connections.try_join_next().is_some() {}
        tracing::warn!(
            remaining = connections.len(),
            "drain grace period over; unanswered requests get 503, then connections are dropped"
        );
        drain.end_grace();
        let flushed = async { while connections.join_next().await.is_some() {} };
        let _ = tokio::time::timeout(GRACE_END_FLUSH, flushed).await;
    }
    connections.shutdown().await;
    ticker.abort();
    Ok(())
}

/// Serves one connection (plain or TLS) to its end under the connection watchdog.
async fn serve_connection<I, S>(
    builder: &Builder<TokioExecutor>,
    clock: &Arc<Clock>,
    io: I,
    service: S,
    timeouts: Timeouts,
    phase: tokio::sync::watch::Receiver<super::drain::Phase>,
) where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    S: Service<Request<Incoming>, Response = Response<Body>, Error = Infallible> + Send + 'static,
    S::Future: Send + 'static,
{
    let state = ConnState::new(clock);
    let io = TokioIo::new(TrackedIo::new(io, Arc::clone(&state)));
    let conn = builder
        .serve_connection(io, Tracked::new(service, Arc::clone(&state)))
        .into_owned();
    conn::drive(conn, state, timeouts, phase).await;
}

// === impl RateLimitedLog ===

/// Decides which of a stream of repeated events get a log line: the first, then at most one
/// per interval, each saying how many were suppressed since the last line.
#[derive(Debug)]
struct RateLimitedLog {
    interval: Duration,
    /// When the last line was logged.
    last: Option<Instant>,
    /// Events since the last line that got none.
    suppressed: u64,
}

impl RateLimitedLog {
    fn new(interval: Duration) -> Self {
        Self {
            interval,
            last: None,
            suppressed: 0,
        }
    }

    /// Records one event at `now`: `Some(suppressed)` when it gets a line.
    fn record(&mut self, now: Instant) -> Option<u64> {
        let due = self
            .last
            .is_none_or(|last| now.saturating_duration_since(last) >= self.interval);
        if !due {
            self.suppressed += 1;
            return None;
        }
        self.last = Some(now);
        Some(std::mem::take(&mut self.suppressed))
    }
}

/// Accept errors that concern only the connection being accepted (the loop just moves on).
fn is_per_connection(err: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(
        err.kind(),
        ConnectionRefused | ConnectionAborted | ConnectionReset | Interrupted | WouldBlock
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_errors_get_one_line_a_second_with_a_count() {
        let start = Instant::now();
        let at = |ms: u64| start + Duration::from_millis(ms);
        let mut log = RateLimitedLog::new(Duration::from_secs(1));
        assert_eq!(log.record(at(0)), Some(0));
        for ms in (50..1_000).step_by(50) {
            assert_eq!(log.record(at(ms)), None, "{ms} ms");
        }
        assert_eq!(log.record(at(1_000)), Some(19));
        assert_eq!(log.record(at(1_500)), None);
        assert_eq!(log.record(at(5_000)), Some(1));
        assert_eq!(log.record(at(6_000)), Some(0));
    }
}
