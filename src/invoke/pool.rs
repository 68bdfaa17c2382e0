//! The downstream connection pool: idle HTTP/1.1 connections per host on hyper's
//! `client::conn::http1`, each driven inside the task that uses it.
//!
//! Owns [`Pool`] (the connector, and one [`HostSlot`] of idle connections per scheme and
//! authority), [`Lease`] (a connection checked out for one exchange) and [`Drive`] (polls a
//! connection alongside the future that needs it). Why not hyper-util's legacy `Client`: it
//! spawns a task per connection, so every exchange crosses tasks twice (request in, response
//! out) through channels and wake-ups, and its pool keys, checks out and returns through a
//! SipHash-keyed map and a generic checkout future; the profile of `tools/call` (PERFORMANCE.md,
//! "Performance, round two") put that at about a third of a call. Here the caller polls the
//! connection itself while it waits for the head and reads the body, and puts the connection
//! back when the body is complete; an idle connection is polled by nobody and is checked
//! (closed? ready for a request?) when it is next taken.
//!
//! Limits: at most `max_idle_per_host` idle connections per host (more are closed when
//! returned), idle ones older than `idle_timeout` are closed when met, at most [`MAX_HOSTS`]
//! hosts are pooled (beyond that a connection serves one exchange). Connections in use are
//! bounded by the caller (the per-tenant slots in `client.rs`). The connect timeout, TCP
//! keep-alive, `TCP_NODELAY` and TLS (rustls, webpki roots, ring) are the connector's, as
//! before. Must not know tools, tenants, budgets or MCP: it sends one request and hands back
//! the response head and the lease to read the body with.

use std::future::{poll_fn, Future};
use std::pin::{pin, Pin};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::HOST;
use http::uri::{Authority, Parts, Scheme};
use http::{HeaderValue, Request, Response, Uri};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::client::conn::http1;
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder, MaybeHttpsStream};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioIo;
use parking_lot::Mutex;
use tokio::net::TcpStream;
use tower_service::Service;

use crate::shard::FastMap;

/// Hosts whose idle connections are kept; calls to further hosts connect for each exchange.
/// Tool URLs name their host in the configuration (no parameter may sit in the host), so this
/// only bounds a configuration with very many downstreams.
pub(crate) const MAX_HOSTS: usize = 1024;

/// The transport under a connection: TCP, or TLS over TCP.
type Io = MaybeHttpsStream<TokioIo<TcpStream>>;

/// The connection future hyper hands out: it reads and writes the socket when polled.
type Driver = http1::Connection<Io, Full<Bytes>>;

/// A failed exchange, before the caller classifies it.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PoolError {
    /// The connection could not be made (DNS, refused, connect timeout, TLS handshake).
    #[error("connect: {0}")]
    Connect(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The connection failed during the exchange (reset, closed early, bad response head).
    #[error("transport: {0}")]
    Transport(#[source] hyper::Error),
    /// The request URI has no `http`/`https` scheme or no authority.
    #[error("the request URI is not absolute http(s)")]
    NotAbsolute,
}

/// Settings of a [`Pool`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct PoolConfig {
    /// How long making a connection may take.
    pub(crate) connect_timeout: Duration,
    /// How long an idle connection is kept; also the TCP keep-alive interval.
    pub(crate) idle_timeout: Duration,
    /// Idle connections kept per host.
    pub(crate) max_idle_per_host: usize,
}

/// Idle connections per host, and the connector that makes new ones.
pub(crate) struct Pool {
    connector: HttpsConnector<HttpConnector>,
    config: PoolConfig,
    /// One slot per authority, `[http, https]`.
    hosts: Mutex<[FastMap<Box<str>, Arc<HostSlot>>; 2]>,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// The idle connections of one host, newest last.
#[derive(Default)]
pub(crate) struct HostSlot {
    idle: Mutex<Vec<Idle>>,
}

struct Idle {
    conn: Box<Conn>,
    since: Instant,
}

/// A connection: the handle requests go in by and the future that does its IO. Always boxed
/// (hyper's connection state is large): the futures that hold one, which every request's
/// future embeds, hold a pointer, and checking in and out moves the pointer.
struct Conn {
    sender: http1::SendRequest<Full<Bytes>>,
    driver: Driver,
}

impl Pool {
    /// A pool with its connector. Needs no runtime until the first exchange.
    pub(crate) fn new(config: PoolConfig) -> Self {
        Self {
            connector: connector(config.connect_timeout, Some(config.idle_timeout)),
            config,
            hosts: Mutex::new([FastMap::default(), FastMap::default()]),
        }
    }

    /// Idle connections kept for `uri`'s host now.
    #[cfg(test)]
    pub(crate) fn idle_for(&self, uri: &Uri) -> usize {
        let Some((https, authority)) = host_of(uri) else {
            return 0;
        };
        let hosts = self.hosts.lock();
        hosts[https as usize]
            .get(authority)
            .map_or(0, |slot| slot.idle.lock().len())
    }

    /// Sends `request` (absolute URI) on an idle connection of its host, or a new one, and
    /// returns the response head with the lease the body must be read under
    /// ([`Lease::drive`]). A request a reused connection turned away before writing it (the
    /// peer closed it while idle) is sent once more on a new connection.
    pub(crate) async fn send(
        &self,
        request: Request<Full<Bytes>>,
    ) -> Result<(Response<Incoming>, Lease), PoolError> {
        let (mut head, body) = request.into_parts();
        let Parts {
            scheme,
            authority,
            path_and_query,
            ..
        } = std::mem::take(&mut head.uri).into_parts();
        let (Some(scheme), Some(authority)) = (scheme, authority) else {
            return Err(PoolError::NotAbsolute);
        };
        let https = is_https(&scheme).ok_or(PoolError::NotAbsolute)?;
        if !head.headers.contains_key(HOST) {
            let value =
                HeaderValue::from_str(authority.as_str()).map_err(|_| PoolError::NotAbsolute)?;
            head.headers.insert(HOST, value);
        }
        let slot = self.slot(https, authority.as_str());
        // The request line carries origin form; scheme and authority are kept to connect with.
        let mut origin = Parts::default();
        origin.path_and_query = path_and_query;
        head.uri = Uri::from_parts(origin).map_err(|_| PoolError::NotAbsolute)?;
        let target = Target { scheme, authority };
        let mut request = Request::from_parts(head, body);

        let mut reused = true;
        let mut pending = match slot.as_deref().and_then(|s| self.take_idle(s)) {
            Some(conn) => conn,
            None => {
                reused = false;
                self.connect(&target).await?
            }
        };
        loop {
            let mut conn = match ready(pending).await {
                Some(ready) => ready,
                None if reused => {
                    // Closed while idle: the next idle one, or a new connection.
                    pending = match slot.as_deref().and_then(|s| self.take_idle(s)) {
                        Some(next) => next,
                        None => {
                            reused = false;
                            self.connect(&target).await?
                        }
                    };
                    continue;
                }
                None => {
                    return Err(PoolError::Connect(
                        "the new connection closed before the request".into(),
                    ))
                }
            };
            let sent = {
                let Conn { sender, driver } = &mut *conn;
                let mut closed = false;
                Drive {
                    driver,
                    closed: &mut closed,
                    future: pin!(sender.try_send_request(request)),
                }
                .await
            };
            match sent {
                Ok(response) => {
                    let lease = Lease {
                        conn: Some(conn),
                        slot,
                        closed: false,
                    };
                    return Ok((response, lease));
                }
                Err(mut err) => match err.take_message() {
                    // Never written: safe to send again, once, on a new connection.
                    Some(unsent) if reused => {
                        request = unsent;
                        reused = false;
                        pending = self.connect(&target).await?;
                    }
                    _ => return Err(PoolError::Transport(err.into_error())),
                },
            }
        }
    }

    /// Takes back a lease whose response body was read to its end: its connection joins the
    /// host's idle connections (unless it closed, or `max_idle_per_host` are idle already).
    pub(crate) fn release(&self, lease: Lease) {
        lease.release(self.config.max_idle_per_host);
    }

    /// The slot of a host, created on first use; `None` past [`MAX_HOSTS`].
    fn slot(&self, https: bool, authority: &str) -> Option<Arc<HostSlot>> {
        let mut hosts = self.hosts.lock();
        let total: usize = hosts.iter().map(FastMap::len).sum();
        let map = &mut hosts[https as usize];
        if let Some(slot) = map.get(authority) {
            return Some(Arc::clone(slot));
        }
        if total >= MAX_HOSTS {
            return None;
        }
        let slot = Arc::new(HostSlot::default());
        map.insert(authority.into(), Arc::clone(&slot));
        Some(slot)
    }

    /// The newest idle connection of `slot` not past the idle timeout (older ones are closed).
    fn take_idle(&self, slot: &HostSlot) -> Option<Box<Conn>> {
        let mut idle = slot.idle.lock();
        let newest = idle.pop()?;
        if newest.since.elapsed() < self.config.idle_timeout {
            return Some(newest.conn);
        }
        // The newest is too old, so every other one is too.
        idle.clear();
        None
    }

    /// A new connection to `target`'s host, its HTTP/1.1 handshake done.
    async fn connect(&self, target: &Target) -> Result<Box<Conn>, PoolError> {
        // Boxed: the connect and handshake futures hold the TLS state inline, and every
        // request's future would carry their size.
        Box::pin(self.open(target)).await
    }

    async fn open(&self, target: &Target) -> Result<Box<Conn>, PoolError> {
        let uri = Uri::builder()
            .scheme(target.scheme.clone())
            .authority(target.authority.clone())
            .path_and_query("/")
            .build()
            .map_err(|_| PoolError::NotAbsolute)?;
        let mut connector = self.connector.clone();
        let io = connector.call(uri).await.map_err(PoolError::Connect)?;
        let (sender, driver) = http1::Builder::new()
            .handshake(io)
            .await
            .map_err(|e| PoolError::Connect(Box::new(e)))?;
        Ok(Box::new(Conn { sender, driver }))
    }
}

/// Where a request goes: what the connector needs to make a connection.
struct Target {
    scheme: Scheme,
    authority: Authority,
}

/// Whether `scheme` is `https` (`Some(true)`) or `http` (`Some(false)`); `None` for any other.
fn is_https(scheme: &Scheme) -> Option<bool> {
    if *scheme == Scheme::HTTPS {
        Some(true)
    } else if *scheme == Scheme::HTTP {
        Some(false)
    } else {
        None
    }
}

/// The scheme (https?) and authority of an absolute `http`/`https` URI.
#[cfg(test)]
fn host_of(uri: &Uri) -> Option<(bool, &str)> {
    Some((is_https(uri.scheme()?)?, uri.authority()?.as_str()))
}

/// Drives `conn` until it can take a request: `None` when it closed (or failed) meanwhile.
async fn ready(mut conn: Box<Conn>) -> Option<Box<Conn>> {
    let open = poll_fn(|cx| {
        if Pin::new(&mut conn.driver).poll(cx).is_ready() {
            return Poll::Ready(false);
        }
        match conn.sender.poll_ready(cx) {
            Poll::Ready(Ok(())) => Poll::Ready(true),
            Poll::Ready(Err(_)) => Poll::Ready(false),
            Poll::Pending => Poll::Pending,
        }
    })
    .await;
    open.then_some(conn)
}

/// A connection checked out for one exchange. Read the response body under
/// [`Lease::drive`]; then [`Pool::release`] returns the connection to its host's idle list
/// (only do that once the body has been read to its end). Dropping a lease closes the
/// connection.
pub(crate) struct Lease {
    conn: Option<Box<Conn>>,
    slot: Option<Arc<HostSlot>>,
    /// The connection's future finished: it cannot be used again.
    closed: bool,
}

impl Lease {
    /// Runs `future` (typically reading the response body) while polling the connection, which
    /// is what moves the body's bytes from the socket.
    pub(crate) async fn drive<F: Future>(&mut self, future: F) -> F::Output {
        let future = pin!(future);
        match &mut self.conn {
            Some(conn) => {
                Drive {
                    driver: &mut conn.driver,
                    closed: &mut self.closed,
                    future,
                }
                .await
            }
            None => future.await,
        }
    }

    /// Returns the connection to its host's idle list, unless it closed, the host is not
    /// pooled, or the list is full (`max_idle`); then it is closed.
    fn release(mut self, max_idle: usize) {
        let (Some(conn), Some(slot)) = (self.conn.take(), self.slot.take()) else {
            return;
        };
        if self.closed || conn.sender.is_closed() {
            return;
        }
        let mut idle = slot.idle.lock();
        if idle.len() < max_idle {
            idle.push(Idle {
                conn,
                since: Instant::now(),
            });
        }
    }
}

/// Polls a connection's driver, then `future`, until `future` is done. The driver goes first so
/// that what it reads (a response head, body bytes) is there when `future` looks.
struct Drive<'a, F> {
    driver: &'a mut Driver,
    closed: &'a mut bool,
    future: Pin<&'a mut F>,
}

impl<F: Future> Future for Drive<'_, F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = &mut *self;
        // Closed or failed: whatever waits on it has been told (hyper fails the pending
        // request and body), and it is not reused.
        if !*this.closed && Pin::new(&mut *this.driver).poll(cx).is_ready() {
            *this.closed = true;
        }
        this.future.as_mut().poll(cx)
    }
}

/// The connector every outbound client of the process uses: plain HTTP or HTTPS (rustls with
/// webpki roots and the ring provider, HTTP/1.1 by ALPN), `TCP_NODELAY`, the connect timeout,
/// and `keepalive` as the TCP keep-alive interval.
pub(crate) fn connector(
    connect_timeout: Duration,
    keepalive: Option<Duration>,
) -> HttpsConnector<HttpConnector> {
    let mut http = HttpConnector::new();
    // The TLS wrapper needs `https` URIs to reach it.
    http.enforce_http(false);
    http.set_nodelay(true);
    http.set_connect_timeout(Some(connect_timeout));
    http.set_keepalive(keepalive);
    HttpsConnectorBuilder::new()
        .with_webpki_roots()
        .https_or_http()
        .enable_http1()
        .wrap_connector(http)
}

#[cfg(test)]
mod tests;
