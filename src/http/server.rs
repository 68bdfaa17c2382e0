//! The accept loop: connection limit, `TCP_NODELAY`, HTTP/1.1 and HTTP/2 on one port, header read
//! timeout, and graceful drain.
//!
//! Drain, in order: stop accepting (the listener is dropped, so new connections are refused);
//! fire the [`Drain`] signal (streaming bodies end at their next frame boundary); ask every
//! connection to finish its in-flight requests and close (hyper-util graceful shutdown); after
//! the grace period, drop whatever is left. Must not know what the service does.

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use http::{Request, Response};
use hyper::body::Incoming;
use hyper::service::Service;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};
use tokio::task::JoinSet;

use super::body::DEFAULT_MAX_BODY_BYTES;
use super::response::Body;

/// Default for the most connections served at once. At the limit the server stops accepting;
/// new connections wait in the kernel's backlog until one closes.
pub const DEFAULT_MAX_CONNECTIONS: usize = 10_000;
/// Default time in-flight requests get to finish after shutdown starts; after it, remaining
/// connections are dropped.
pub const DEFAULT_DRAIN_GRACE: Duration = Duration::from_secs(30);
/// Default time a client has to send a complete HTTP/1 request head; when it runs out, the
/// connection is closed.
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Default for concurrent streams per HTTP/2 connection; the client is told the limit in
/// SETTINGS and streams beyond it are refused (`REFUSED_STREAM`).
pub const DEFAULT_H2_MAX_CONCURRENT_STREAMS: u32 = 256;

/// Pause after an accept error that is not about one connection (e.g. too many open files), so
/// the loop does not spin while the condition lasts.
const ACCEPT_ERROR_BACKOFF: Duration = Duration::from_millis(50);

/// Connection and request limits.
#[derive(Debug, Clone)]
pub struct Limits {
    /// See [`DEFAULT_MAX_CONNECTIONS`].
    pub max_connections: usize,
    /// See [`DEFAULT_MAX_BODY_BYTES`].
    pub max_body_bytes: usize,
    /// See [`DEFAULT_DRAIN_GRACE`].
    pub drain_grace: Duration,
    /// See [`DEFAULT_HEADER_READ_TIMEOUT`].
    pub header_read_timeout: Duration,
    /// See [`DEFAULT_H2_MAX_CONCURRENT_STREAMS`].
    pub h2_max_concurrent_streams: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            drain_grace: DEFAULT_DRAIN_GRACE,
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            h2_max_concurrent_streams: DEFAULT_H2_MAX_CONCURRENT_STREAMS,
        }
    }
}

// === impl Drain ===

/// The server-wide "draining has started" signal. Cheap to clone; streaming bodies and
/// long-lived handlers hold one and stop at a clean boundary when it fires.
#[derive(Debug, Clone)]
pub struct Drain {
    /// `true` once draining started. Only [`run`] (or a test) flips it; everyone else watches.
    tx: watch::Sender<bool>,
}

impl Default for Drain {
    fn default() -> Self {
        Self::new()
    }
}

impl Drain {
    /// A signal that has not fired.
    pub fn new() -> Self {
        Self {
            tx: watch::Sender::new(false),
        }
    }

    /// Fires the signal (idempotent).
    pub fn start(&self) {
        self.tx.send_replace(true);
    }

    /// Whether the signal has fired.
    pub fn is_draining(&self) -> bool {
        *self.tx.borrow()
    }

    /// Resolves once the signal fires (at once if it already has).
    pub fn signalled(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut rx = self.tx.subscribe();
        async move {
            // An error means every sender is gone: nobody can fire it any more, so treat the
            // server as gone too.
            let _ = rx.wait_for(|draining| *draining).await;
        }
    }
}

// === accept loop ===

/// Serves `service` on every connection `listener` accepts until `shutdown` resolves, then
/// drains (see the module doc). Returns once every connection has finished or been dropped.
pub async fn run<S>(
    listener: TcpListener,
    limits: &Limits,
    drain: Drain,
    service: S,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()>
where
    S: Service<Request<Incoming>, Response = Response<Body>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(limits.h2_max_concurrent_streams);

    // Each connection task holds a permit; at the limit the loop waits here instead of
    // accepting, so excess connections queue in the kernel backlog.
    let permits = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let graceful = GracefulShutdown::new();
    let mut connections = JoinSet::new();
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
        let stream = match accepted {
            Ok((stream, _peer)) => stream,
            Err(err) if is_per_connection(&err) => {
                tracing::debug!(error = %err, "accept failed for one connection");
                continue;
            }
            Err(err) => {
                tracing::warn!(error = %err, "accept failed; backing off");
                tokio::time::sleep(ACCEPT_ERROR_BACKOFF).await;
                continue;
            }
        };
        if let Err(err) = stream.set_nodelay(true) {
            tracing::debug!(error = %err, "could not set TCP_NODELAY");
        }

        let conn = builder
            .serve_connection(TokioIo::new(stream), service.clone())
            .into_owned();
        let conn = graceful.watch(conn);
        connections.spawn(async move {
            if let Err(err) = conn.await {
                tracing::debug!(error = %err, "connection ended with an error");
            }
            drop(permit);
        });
    }

    // Stop accepting first, so connection attempts from here on are refused.
    drop(listener);
    drain.start();
    let in_flight = graceful.count();
    tracing::info!(in_flight, "draining");
    if tokio::time::timeout(limits.drain_grace, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(
            remaining = connections.len(),
            "drain grace period over; dropping connections"
        );
    }
    connections.shutdown().await;
    Ok(())
}

/// Accept errors that concern only the connection being accepted (the loop just moves on).
fn is_per_connection(err: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(
        err.kind(),
        ConnectionRefused | ConnectionAborted | ConnectionReset | Interrupted | WouldBlock
    )
}
