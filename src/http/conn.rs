//! One connection's life after accept: which requests are in progress on it, and when it must be
//! closed because its peer went quiet.
//!
//! hyper closes nothing on its own before the first request (the HTTP/1-or-HTTP/2 sniff waits for
//! bytes forever), between HTTP/1 keep-alive requests (its header timer runs from the end of the
//! previous response, which would make it an idle timeout), or on an HTTP/2 connection with no
//! open stream. So the accept loop ([`super::server::run`]) wraps every connection in three parts
//! that share one [`ConnState`]:
//! - [`TrackedIo`] around the socket tells HTTP/1 from HTTP/2 by the preface and notes the first
//!   byte of each later HTTP/1 request head;
//! - [`Tracked`] around the service counts the requests in progress, from the parsed head until
//!   the response body is dropped (a streaming SSE body keeps its request in progress);
//! - [`drive`] runs the connection next to a [`Watchdog`] that fires when nothing is in progress
//!   and a timeout ran out: the header read timeout from accept until the first request and from
//!   the first byte of each later HTTP/1 head, the idle timeout after the last request ended (from
//!   accept on HTTP/2, whose first stream may come later). `drive` also follows the drain phases:
//!   graceful shutdown when draining starts, and a 503 for requests still unanswered when the grace
//!   period ends.
//!
//! Cost on the request path: one `Arc` clone and two counter updates per request, a few relaxed
//! loads per read; time comes from a coarse clock (one atomic load, no clock read), and the timer
//! is re-armed lazily (at most once per timeout period, not per request). HTTP/2 requests that have
//! to wait also register on their connection's grace-end [`Notify`]: they run in their own tasks,
//! which nothing else would wake when the grace period ends.
//!
//! Must not know what the service does.

use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::io;
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use http::{Request, Response, Version};
use hyper::body::Incoming;
use hyper::service::Service;
use hyper_util::server::graceful::GracefulConnection;
use pin_project_lite::pin_project;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::futures::OwnedNotified;
use tokio::sync::{watch, Notify};
use tokio::time::{Instant, Sleep};

use super::drain::Phase;
use super::error::Error;
use super::response::Body;

/// How often the coarse clock advances. Its readings are at most this much behind, so every
/// deadline adds it once: a timeout never fires early.
const CLOCK_TICK: Duration = Duration::from_millis(100);

/// How long a connection the watchdog closes gets to say goodbye (an HTTP/2 GOAWAY) before it is
/// dropped.
const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// The shortest re-check interval of a watchdog whose connection has requests in progress.
const MIN_RECHECK: Duration = Duration::from_secs(1);

/// `head_since` while no request head is due.
const NO_HEAD: u64 = u64::MAX;

/// The HTTP/2 connection preface (RFC 9113 §3.4); the auto builder picks HTTP/2 on exactly it.
const H2_PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

const PROTOCOL_UNKNOWN: u8 = 0;
const PROTOCOL_H1: u8 = 1;
const PROTOCOL_H2: u8 = 2;

// === impl Clock ===

/// A millisecond clock read with one atomic load; a ticker task advances it every
/// [`CLOCK_TICK`]. One per server.
#[derive(Debug)]
pub(super) struct Clock {
    base: Instant,
    /// Milliseconds since `base` at the last tick. Written by the ticker only.
    now_ms: AtomicU64,
}

impl Clock {
    /// A clock at zero; it advances once [`Clock::spawn_ticker`] runs.
    pub(super) fn new() -> Arc<Self> {
        Arc::new(Self {
            base: Instant::now(),
            now_ms: AtomicU64::new(0),
        })
    }

    /// Advances the clock every [`CLOCK_TICK`] until the task is aborted.
    pub(super) fn spawn_ticker(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        let clock = Arc::clone(self);
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(CLOCK_TICK);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            loop {
                ticks.tick().await;
                clock.now_ms.store(clock.exact_ms(), Ordering::Relaxed);
            }
        })
    }

    /// The coarse time: no clock read, at most [`CLOCK_TICK`] behind.
    fn coarse_ms(&self) -> u64 {
        self.now_ms.load(Ordering::Relaxed)
    }

    /// The exact time (a clock read), for the watchdog's rare wake-ups.
    fn exact_ms(&self) -> u64 {
        u64::try_from(self.base.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn instant(&self, ms: u64) -> Instant {
        self.base + Duration::from_millis(ms)
    }
}

// === impl ConnState ===

/// The timeouts a [`Watchdog`] enforces.
#[derive(Debug, Clone, Copy)]
pub(super) struct Timeouts {
    /// A request head must be complete this long after accept (the first) or after its first
    /// byte (later HTTP/1 heads).
    pub header_read: Duration,
    /// A connection with no request in progress is closed this long after the last one ended.
    pub idle: Duration,
}

/// What one connection's parts share. Written from the connection's task (reads, request
/// starts) and, on HTTP/2, from stream tasks (request ends); read by its watchdog. Every field
/// is an independent relaxed atomic except `in_flight`, whose release decrement publishes
/// `last_end`.
#[derive(Debug)]
pub(super) struct ConnState {
    clock: Arc<Clock>,
    /// Requests whose response body has not been dropped yet.
    in_flight: AtomicUsize,
    /// Coarse ms when the last request ended; accept time before the first.
    last_end: AtomicU64,
    /// Coarse ms from which the HTTP/1 request head being read is due: accept for the first
    /// request, the first byte for a later one; [`NO_HEAD`] while no head is being read.
    head_since: AtomicU64,
    /// `PROTOCOL_*`, as [`TrackedIo`] sniffed it.
    protocol: AtomicU8,
    /// Set once, by [`drive`], when the drain grace period ended.
    grace_over: AtomicBool,
    /// Notified with `grace_over`, for the HTTP/2 requests waiting in their own tasks.
    grace_wake: Arc<Notify>,
}

/// Why the watchdog closed a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Expired {
    /// No complete request head within the header read timeout.
    Header,
    /// No request in progress for the idle timeout.
    Idle,
}

impl ConnState {
    /// The state of a connection accepted now.
    pub(super) fn new(clock: &Arc<Clock>) -> Arc<Self> {
        let now = clock.coarse_ms();
        Arc::new(Self {
            clock: Arc::clone(clock),
            in_flight: AtomicUsize::new(0),
            last_end: AtomicU64::new(now),
            head_since: AtomicU64::new(now),
            protocol: AtomicU8::new(PROTOCOL_UNKNOWN),
            grace_over: AtomicBool::new(false),
            grace_wake: Arc::new(Notify::new()),
        })
    }

    /// When the connection is to be closed, in clock ms, and why; `None` while a request is in
    /// progress.
    fn deadline(&self, timeouts: &Timeouts) -> Option<(u64, Expired)> {
        if self.in_flight.load(Ordering::Acquire) > 0 {
            return None;
        }
        let tick = millis(CLOCK_TICK);
        let head_since = self.head_since.load(Ordering::Relaxed);
        // HTTP/2 has no head to wait for between streams: frames that carry no request (SETTINGS,
        // PING, WINDOW_UPDATE, an unfinished HEADERS) leave the connection idle.
        if head_since != NO_HEAD && self.protocol.load(Ordering::Relaxed) != PROTOCOL_H2 {
            let due = head_since.saturating_add(millis(timeouts.header_read) + tick);
            return Some((due, Expired::Header));
        }
        let last_end = self.last_end.load(Ordering::Relaxed);
        Some((
            last_end.saturating_add(millis(timeouts.idle) + tick),
            Expired::Idle,
        ))
    }

    fn is_grace_over(&self) -> bool {
        self.grace_over.load(Ordering::Acquire)
    }

    /// Lets every request still waiting answer 503 (see [`TrackedFuture`]).
    fn end_grace(&self) {
        self.grace_over.store(true, Ordering::Release);
        self.grace_wake.notify_waiters();
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// One request in progress; dropped with its response body (or with the request, cancelled).
#[derive(Debug)]
struct InFlight(Arc<ConnState>);

impl InFlight {
    fn start(conn: &Arc<ConnState>) -> Self {
        conn.head_since.store(NO_HEAD, Ordering::Relaxed);
        conn.in_flight.fetch_add(1, Ordering::Relaxed);
        Self(Arc::clone(conn))
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let conn = &self.0;
        conn.last_end
            .store(conn.clock.coarse_ms(), Ordering::Relaxed);
        conn.in_flight.fetch_sub(1, Ordering::Release);
    }
}

// === impl TrackedIo ===

pin_project! {
    /// The socket, noting for the watchdog which protocol it speaks and when an HTTP/1 request
    /// head starts. Writes pass straight through.
    pub(super) struct TrackedIo<I> {
        #[pin]
        io: I,
        conn: Arc<ConnState>,
        sniff: Sniff,
    }
}

/// How far the connection's first bytes told its protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sniff {
    /// This many bytes matched the HTTP/2 preface so far.
    Matching(usize),
    Http1,
    Http2,
}

impl Sniff {
    /// The state after `bytes` more were read.
    fn advance(self, bytes: &[u8]) -> Sniff {
        let Sniff::Matching(mut matched) = self else {
            return self;
        };
        for byte in bytes {
            if H2_PREFACE.get(matched) != Some(byte) {
                return Sniff::Http1;
            }
            matched += 1;
            if matched == H2_PREFACE.len() {
                return Sniff::Http2;
            }
        }
        Sniff::Matching(matched)
    }
}

impl<I> TrackedIo<I> {
    pub(super) fn new(io: I, conn: Arc<ConnState>) -> Self {
        Self {
            io,
            conn,
            sniff: Sniff::Matching(0),
        }
    }
}

impl<I: AsyncRead> AsyncRead for TrackedIo<I> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.project();
        let before = buf.filled().len();
        ready!(this.io.poll_read(cx, buf))?;
        let read = &buf.filled()[before..];
        if read.is_empty() || *this.sniff == Sniff::Http2 {
            return Poll::Ready(Ok(()));
        }
        if let Sniff::Matching(_) = this.sniff {
            *this.sniff = this.sniff.advance(read);
            match this.sniff {
                Sniff::Http1 => this.conn.protocol.store(PROTOCOL_H1, Ordering::Relaxed),
                Sniff::Http2 => {
                    this.conn.protocol.store(PROTOCOL_H2, Ordering::Relaxed);
                    return Poll::Ready(Ok(()));
                }
                Sniff::Matching(_) => {}
            }
        }
        // HTTP/1: a byte read while no request is in progress starts the next head (pipelined
        // bytes read during a request are parsed as soon as it ends).
        let conn = &this.conn;
        if conn.in_flight.load(Ordering::Relaxed) == 0
            && conn.head_since.load(Ordering::Relaxed) == NO_HEAD
        {
            conn.head_since
                .store(conn.clock.coarse_ms(), Ordering::Relaxed);
        }
        Poll::Ready(Ok(()))
    }
}

impl<I: AsyncWrite> AsyncWrite for TrackedIo<I> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.project().io.poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.project().io.poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.project().io.poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.project().io.poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}

// === impl Tracked ===

/// The service of one connection: counts its requests in progress and answers 503 for those
/// still unanswered when the drain grace period ends.
#[derive(Debug)]
pub(super) struct Tracked<S> {
    inner: S,
    conn: Arc<ConnState>,
}

impl<S> Tracked<S> {
    pub(super) fn new(inner: S, conn: Arc<ConnState>) -> Self {
        Self { inner, conn }
    }
}

impl<S> Service<Request<Incoming>> for Tracked<S>
where
    S: Service<Request<Incoming>, Response = Response<Body>, Error = Infallible>,
{
    type Response = Response<TrackedBody>;
    type Error = Infallible;
    type Future = TrackedFuture<S::Future>;

    fn call(&self, req: Request<Incoming>) -> Self::Future {
        let in_flight = InFlight::start(&self.conn);
        let h2 = req.version() == Version::HTTP_2;
        TrackedFuture {
            inner: self.inner.call(req),
            in_flight: Some(in_flight),
            h2,
            grace: None,
        }
    }
}

pin_project! {
    /// A request being handled; see [`Tracked`].
    pub(super) struct TrackedFuture<F> {
        #[pin]
        inner: F,
        in_flight: Option<InFlight>,
        h2: bool,
        // HTTP/2 only, from the first time the handler waits.
        #[pin]
        grace: Option<OwnedNotified>,
    }
}

impl<F> Future for TrackedFuture<F>
where
    F: Future<Output = Result<Response<Body>, Infallible>>,
{
    type Output = Result<Response<TrackedBody>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        let Some(conn) = this.in_flight.as_ref().map(|in_flight| &in_flight.0) else {
            // Polled again after it answered: nothing left to do.
            return Poll::Pending;
        };
        if conn.is_grace_over() {
            return Poll::Ready(Ok(grace_over(this.in_flight.take())));
        }
        match this.inner.poll(cx) {
            Poll::Ready(Ok(response)) => {
                let in_flight = this.in_flight.take();
                return Poll::Ready(Ok(response.map(|inner| TrackedBody { inner, in_flight })));
            }
            Poll::Ready(Err(never)) => match never {},
            Poll::Pending => {}
        }
        // HTTP/1 requests run in the connection's task, which `drive` wakes when the grace
        // period ends; an HTTP/2 request runs in its own task and registers to be woken.
        if *this.h2 {
            if this.grace.is_none() {
                let wake = Arc::clone(&conn.grace_wake);
                this.grace.set(Some(wake.notified_owned()));
            }
            if let Some(grace) = this.grace.as_mut().as_pin_mut() {
                let _ = grace.poll(cx);
            }
            // Checked again once registered: the grace period may have ended in between.
            if conn.is_grace_over() {
                return Poll::Ready(Ok(grace_over(this.in_flight.take())));
            }
        }
        Poll::Pending
    }
}

/// The answer to a request still unanswered when the drain grace period ends.
fn grace_over(in_flight: Option<InFlight>) -> Response<TrackedBody> {
    let response = Error::Unavailable(
        "shutting down: the request did not finish within the drain grace period".into(),
    )
    .into_response();
    response.map(|inner| TrackedBody { inner, in_flight })
}

pin_project! {
    /// A response body that keeps its request in progress until it is dropped.
    pub(super) struct TrackedBody {
        #[pin]
        inner: Body,
        in_flight: Option<InFlight>,
    }
}

impl fmt::Debug for TrackedBody {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TrackedBody").finish_non_exhaustive()
    }
}

impl http_body::Body for TrackedBody {
    type Data = <Body as http_body::Body>::Data;
    type Error = <Body as http_body::Body>::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        self.project().inner.poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

// === impl Watchdog ===

pin_project! {
    /// Resolves when the connection has had nothing in progress for too long (see
    /// [`ConnState::deadline`]). Its timer stays armed at the earliest deadline it has seen and,
    /// when it fires early (activity moved the deadline), re-arms once.
    pub(super) struct Watchdog {
        conn: Arc<ConnState>,
        timeouts: Timeouts,
        // Clock ms the timer is armed for.
        armed_ms: u64,
        #[pin]
        timer: Sleep,
    }
}

impl Watchdog {
    pub(super) fn new(conn: Arc<ConnState>, timeouts: Timeouts) -> Self {
        // Always armed at a finite time: with a request in progress, at the first re-check.
        let armed_ms = conn.deadline(&timeouts).map_or_else(
            || conn.clock.coarse_ms().saturating_add(recheck_ms(&timeouts)),
            |(due, _)| due,
        );
        let timer = tokio::time::sleep_until(conn.clock.instant(armed_ms.min(far_ms())));
        Self {
            conn,
            timeouts,
            armed_ms,
            timer,
        }
    }
}

/// How soon a watchdog whose connection has requests in progress looks again.
fn recheck_ms(timeouts: &Timeouts) -> u64 {
    millis(timeouts.idle.max(MIN_RECHECK))
}

/// A deadline far enough to mean "never" that `Instant` arithmetic cannot overflow.
fn far_ms() -> u64 {
    millis(Duration::from_secs(365 * 24 * 3600))
}

impl Future for Watchdog {
    type Output = Expired;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Expired> {
        let mut this = self.project();
        // Only ever moved earlier here (a split HTTP/1 head); later deadlines wait for the
        // timer, so steady traffic costs no timer operation.
        if let Some((due, _)) = this.conn.deadline(this.timeouts) {
            if due < *this.armed_ms {
                *this.armed_ms = due;
                this.timer.as_mut().reset(this.conn.clock.instant(due));
            }
        }
        loop {
            ready!(this.timer.as_mut().poll(cx));
            let now = this.conn.clock.exact_ms();
            let next = match this.conn.deadline(this.timeouts) {
                Some((due, why)) if due <= now => return Poll::Ready(why),
                Some((due, _)) => due,
                // In progress: look again later (an HTTP/2 stream ends in its own task, which
                // does not wake this one).
                None => now.saturating_add(recheck_ms(this.timeouts)),
            };
            *this.armed_ms = next;
            this.timer
                .as_mut()
                .reset(this.conn.clock.instant(next.min(far_ms())));
        }
    }
}

// === drive ===

/// Runs one connection to its end: closes it when the watchdog fires (gracefully, then after
/// [`CLOSE_GRACE`] by dropping it), starts its graceful shutdown when the server drains, and
/// when the drain grace period ends lets its unanswered requests answer 503.
pub(super) async fn drive<C>(
    conn: C,
    state: Arc<ConnState>,
    timeouts: Timeouts,
    mut phase: watch::Receiver<Phase>,
) where
    C: GracefulConnection,
    C::Error: fmt::Display,
{
    let mut conn = pin!(conn);
    let mut watchdog = pin!(Watchdog::new(Arc::clone(&state), timeouts));
    let mut closing: Option<Pin<Box<Sleep>>> = None;
    let mut shutdown_started = false;
    let mut phase_open = true;
    // A drain that started before this connection subscribed.
    let mut current = *phase.borrow_and_update();
    loop {
        if current >= Phase::Draining && !shutdown_started {
            shutdown_started = true;
            conn.as_mut().graceful_shutdown();
        }
        if current == Phase::GraceOver && phase_open {
            phase_open = false;
            state.end_grace();
        }
        tokio::select! {
            biased;
            result = conn.as_mut() => {
                if let Err(err) = result {
                    tracing::debug!(error = %err, "connection ended with an error");
                }
                return;
            }
            changed = phase.changed(), if phase_open => match changed {
                Ok(()) => current = *phase.borrow_and_update(),
                // The server is gone; whatever the accept loop does next decides.
                Err(_) => phase_open = false,
            },
            expired = watchdog.as_mut(), if closing.is_none() => {
                tracing::debug!(?expired, "closing a quiet connection");
                if !shutdown_started {
                    shutdown_started = true;
                    conn.as_mut().graceful_shutdown();
                }
                closing = Some(Box::pin(tokio::time::sleep(CLOSE_GRACE)));
            }
            () = async {
                match closing.as_mut() {
                    Some(timer) => timer.await,
                    None => std::future::pending().await,
                }
            } => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sniff(chunks: &[&[u8]]) -> Sniff {
        chunks
            .iter()
            .fold(Sniff::Matching(0), |state, chunk| state.advance(chunk))
    }

    #[test]
    fn the_preface_is_sniffed_across_reads() {
        assert_eq!(sniff(&[H2_PREFACE]), Sniff::Http2);
        assert_eq!(
            sniff(&[b"PRI * HT", b"TP/2.0\r\n\r\nSM\r\n\r\n"]),
            Sniff::Http2
        );
        assert_eq!(sniff(&[b"PRI * HTTP/2.0\r\n"]), Sniff::Matching(16));
        assert_eq!(sniff(&[b"GET / HTTP/1.1\r\n"]), Sniff::Http1);
        assert_eq!(sniff(&[b"P", b"OST / HTTP/1.1\r\n"]), Sniff::Http1);
        assert_eq!(sniff(&[b"PRI * HTTP/1.1\r\n"]), Sniff::Http1);
        assert_eq!(sniff(&[]), Sniff::Matching(0));
    }

    const TIMEOUTS: Timeouts = Timeouts {
        header_read: Duration::from_secs(10),
        idle: Duration::from_secs(60),
    };

    fn state() -> Arc<ConnState> {
        let clock = Clock::new();
        clock.now_ms.store(1_000, Ordering::Relaxed);
        ConnState::new(&clock)
    }

    fn check(conn: &ConnState, expected: Option<(u64, Expired)>) {
        let tick = millis(CLOCK_TICK);
        let got = conn.deadline(&TIMEOUTS);
        assert_eq!(got, expected.map(|(due, why)| (due + tick, why)));
    }

    #[test]
    fn deadlines() {
        // From accept: the first head is due within the header read timeout.
        let conn = state();
        check(&conn, Some((11_000, Expired::Header)));

        // HTTP/2 waits for its first stream as long as it would between streams.
        conn.protocol.store(PROTOCOL_H2, Ordering::Relaxed);
        check(&conn, Some((61_000, Expired::Idle)));
        conn.protocol.store(PROTOCOL_H1, Ordering::Relaxed);

        // In progress: no deadline, however long.
        let first = InFlight::start(&conn);
        let second = InFlight::start(&conn);
        check(&conn, None);
        conn.clock.now_ms.store(5_000, Ordering::Relaxed);
        drop(first);
        check(&conn, None);
        conn.clock.now_ms.store(7_000, Ordering::Relaxed);
        drop(second);

        // Between requests: idle from the end of the last one.
        check(&conn, Some((67_000, Expired::Idle)));

        // A later head: due from its first byte.
        conn.head_since.store(30_000, Ordering::Relaxed);
        check(&conn, Some((40_000, Expired::Header)));
    }

    #[tokio::test(start_paused = true)]
    async fn the_watchdog_waits_out_requests_in_progress() {
        let clock = Clock::new();
        let ticker = clock.spawn_ticker();
        let conn = ConnState::new(&clock);
        conn.protocol.store(PROTOCOL_H1, Ordering::Relaxed);
        let timeouts = Timeouts {
            header_read: Duration::from_secs(1),
            idle: Duration::from_secs(3),
        };
        let request = InFlight::start(&conn);
        let started = Instant::now();
        let watchdog = tokio::spawn(Watchdog::new(Arc::clone(&conn), timeouts));
        tokio::time::sleep(Duration::from_secs(10)).await;
        assert!(!watchdog.is_finished());
        drop(request);
        let expired = watchdog.await.expect("watchdog");
        assert_eq!(expired, Expired::Idle);
        let waited = started.elapsed();
        assert!(
            waited >= Duration::from_secs(13) && waited <= Duration::from_secs(15),
            "{waited:?}"
        );
        ticker.abort();
    }
}
