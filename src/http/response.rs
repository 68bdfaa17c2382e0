//! The one response body type handed to hyper, and helpers that build common responses.
//!
//! [`Body`] covers every shape a reply takes: nothing, one ready buffer, a few ready SSE frames (an
//! SSE reply whose frames are all known is answered inline, with no task and no channel —
//! `docs/hot-path.md`), and a channel-fed stream for replies that really stream. A streaming body
//! watches the server's drain signal and ends between two frames when it fires, so a shutdown never
//! cuts a frame in half. Must not know what the bytes mean.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE};
use http::{Response, StatusCode};
use http_body::{Frame, SizeHint};
use smallvec::SmallVec;
use tokio::sync::mpsc;

use super::drain::Drain;

/// Frames an inline SSE reply holds without spilling to the heap.
pub(crate) const INLINE_FRAMES: usize = 4;

/// `Content-Type: application/json`.
pub(crate) const APPLICATION_JSON: HeaderValue = HeaderValue::from_static("application/json");
/// `Content-Type: text/event-stream`.
pub(crate) const TEXT_EVENT_STREAM: HeaderValue = HeaderValue::from_static("text/event-stream");
/// `Content-Type: text/plain; charset=utf-8`.
pub(crate) const TEXT_PLAIN: HeaderValue = HeaderValue::from_static("text/plain; charset=utf-8");
/// `X-Accel-Buffering`: tells nginx-style proxies not to buffer an event stream.
pub(crate) const X_ACCEL_BUFFERING: http::HeaderName =
    http::HeaderName::from_static("x-accel-buffering");

/// A response body.
pub struct Body {
    kind: Kind,
    /// SSE frames and bytes this body sent, added to [`SSE_FRAMES`] / [`SSE_BYTES`] once, when
    /// it drops (no shared counter is touched per frame).
    sent: Sent,
}

/// SSE frames sent by every event-stream body of the process, counted when each body ends.
pub(crate) static SSE_FRAMES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
/// SSE bytes sent by every event-stream body of the process, counted when each body ends.
pub(crate) static SSE_BYTES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

#[derive(Default)]
struct Sent {
    frames: u64,
    bytes: u64,
}

impl Sent {
    fn count(&mut self, frame: &Bytes) {
        self.frames += 1;
        self.bytes += frame.len() as u64;
    }
}

impl Drop for Body {
    fn drop(&mut self) {
        use std::sync::atomic::Ordering::Relaxed;
        if self.sent.frames > 0 {
            SSE_FRAMES.fetch_add(self.sent.frames, Relaxed);
            SSE_BYTES.fetch_add(self.sent.bytes, Relaxed);
        }
    }
}

enum Kind {
    Empty,
    Full(Option<Bytes>),
    Frames(smallvec::IntoIter<[Bytes; INLINE_FRAMES]>),
    Stream(Streaming),
}

/// A channel-fed body that also ends when the server starts draining.
struct Streaming {
    rx: mpsc::Receiver<Bytes>,
    /// Resolves once the server drains; `None` after it did (the body has ended).
    drained: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
    /// A last frame sent when the server drains, before the body ends (e.g. the final response
    /// that closes a subscription gracefully).
    epilogue: Option<Bytes>,
    /// The producer's byte count of what is queued in `rx`; each frame taken is subtracted.
    backlog: Option<Arc<Backlog>>,
}

/// Bytes queued for a channel-fed body and not yet taken by the connection. The producer adds
/// what it queues ([`Backlog::add`]) and checks [`Backlog::has_room`] before queuing more; the
/// body subtracts each frame as it hands it to hyper, so the count is exactly what waits in
/// the channel (plus what the producer reserved). One relaxed atomic per frame each way.
#[derive(Debug, Default)]
pub struct Backlog(AtomicUsize);

impl Backlog {
    /// Counts `n` more bytes queued (or reserved).
    pub(crate) fn add(&self, n: usize) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }

    /// Counts `n` bytes taken off the queue (or a reservation released).
    pub(crate) fn sub(&self, n: usize) {
        // Saturating: a frame queued before the count was attached never underflows it.
        let _ = self
            .0
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
                Some(used.saturating_sub(n))
            });
    }

    /// The bytes queued now.
    pub fn get(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }

    /// Whether one more frame may be queued under `limit`: while the queue holds less than
    /// `limit` bytes (so it overshoots by at most the one frame admitted last, and a frame
    /// larger than `limit` still passes an empty queue).
    pub(crate) fn has_room(&self, limit: usize) -> bool {
        self.get() < limit
    }
}

// === impl Body ===

impl Body {
    /// No body (`Content-Length: 0` where the status allows one).
    pub fn empty() -> Self {
        Self {
            kind: Kind::Empty,
            sent: Sent::default(),
        }
    }

    /// One ready buffer.
    pub fn full(bytes: impl Into<Bytes>) -> Self {
        Self {
            kind: Kind::Full(Some(bytes.into())),
            sent: Sent::default(),
        }
    }

    /// Frames that are all known now, sent in order, then the body ends.
    pub fn frames(frames: SmallVec<[Bytes; INLINE_FRAMES]>) -> Self {
        Self {
            kind: Kind::Frames(frames.into_iter()),
            sent: Sent::default(),
        }
    }

    /// A body fed frame by frame through `rx`; it ends when every sender is dropped, or, between
    /// two frames, when `drain` fires (the producer then sees its sender closed).
    pub fn stream(rx: mpsc::Receiver<Bytes>, drain: &Drain) -> Self {
        Self {
            kind: Kind::Stream(Streaming {
                rx,
                drained: Some(Box::pin(drain.signalled())),
                epilogue: None,
                backlog: None,
            }),
            sent: Sent::default(),
        }
    }

    /// The same channel-fed body, subtracting each frame it takes from `backlog` (the
    /// producer's count of queued bytes, which bounds the queue in bytes as the channel bounds
    /// it in frames). No effect on other kinds.
    pub fn counted(mut self, backlog: Arc<Backlog>) -> Self {
        if let Kind::Stream(stream) = &mut self.kind {
            stream.backlog = Some(backlog);
        }
        self
    }

    /// A body fed frame by frame through `rx` that ends only when every sender is dropped: the
    /// server's drain does not cut it (its grace period bounds it instead). For answers whose last
    /// frame is the point, such as a federated read's final result.
    pub fn channel(rx: mpsc::Receiver<Bytes>) -> Self {
        Self {
            kind: Kind::Stream(Streaming {
                rx,
                drained: Some(Box::pin(std::future::pending())),
                epilogue: None,
                backlog: None,
            }),
            sent: Sent::default(),
        }
    }

    /// Like [`Body::stream`], but when the server drains the body sends `epilogue` as its last
    /// frame instead of just ending (frames still queued at that moment are dropped).
    pub(crate) fn stream_with_epilogue(
        rx: mpsc::Receiver<Bytes>,
        drain: &Drain,
        epilogue: Bytes,
    ) -> Self {
        Self {
            kind: Kind::Stream(Streaming {
                rx,
                drained: Some(Box::pin(drain.signalled())),
                epilogue: Some(epilogue),
                backlog: None,
            }),
            sent: Sent::default(),
        }
    }
}

impl std::fmt::Debug for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match &self.kind {
            Kind::Empty => "empty",
            Kind::Full(_) => "full",
            Kind::Frames(_) => "frames",
            Kind::Stream(_) => "stream",
        };
        f.debug_struct("Body").field("kind", &kind).finish()
    }
}

impl http_body::Body for Body {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        let sent = &mut this.sent;
        match &mut this.kind {
            Kind::Empty => Poll::Ready(None),
            Kind::Full(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            Kind::Frames(frames) => Poll::Ready(frames.next().map(|b| {
                sent.count(&b);
                Ok(Frame::data(b))
            })),
            Kind::Stream(stream) => {
                // After the drain (and the epilogue, if any) nothing more is sent.
                if stream.drained.is_none() {
                    return Poll::Ready(None);
                }
                // A frame already queued goes out before the drain check: frames are whole, so
                // stopping between any two of them leaves a clean boundary.
                if let Poll::Ready(next) = stream.rx.poll_recv(cx) {
                    return Poll::Ready(next.map(|b| {
                        if let Some(backlog) = &stream.backlog {
                            backlog.sub(b.len());
                        }
                        sent.count(&b);
                        Ok(Frame::data(b))
                    }));
                }
                let Some(drained) = stream.drained.as_mut() else {
                    return Poll::Ready(None);
                };
                match drained.as_mut().poll(cx) {
                    Poll::Ready(()) => {
                        stream.drained = None;
                        stream.rx.close();
                        Poll::Ready(stream.epilogue.take().map(|b| {
                            sent.count(&b);
                            Ok(Frame::data(b))
                        }))
                    }
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.kind {
            Kind::Empty => true,
            Kind::Full(bytes) => bytes.is_none(),
            Kind::Frames(frames) => frames.as_slice().is_empty(),
            Kind::Stream(stream) => stream.drained.is_none(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Empty => SizeHint::with_exact(0),
            Kind::Full(bytes) => SizeHint::with_exact(bytes.as_ref().map_or(0, |b| b.len() as u64)),
            // Frames are streamed without a Content-Length on purpose: an SSE reply must look
            // like a stream to clients and proxies.
            Kind::Frames(_) | Kind::Stream(_) => SizeHint::default(),
        }
    }
}

// === response helpers ===

/// `200` with a JSON body.
pub(crate) fn json(status: StatusCode, body: impl Into<Bytes>) -> Response<Body> {
    with_type(status, APPLICATION_JSON, Body::full(body))
}

/// `200` with an SSE body; sets `Content-Type`, `Cache-Control: no-cache` and
/// `X-Accel-Buffering: no`.
pub fn event_stream(body: Body) -> Response<Body> {
    let mut response = with_type(StatusCode::OK, TEXT_EVENT_STREAM, body);
    let headers = response.headers_mut();
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(X_ACCEL_BUFFERING, HeaderValue::from_static("no"));
    response
}

/// A plain-text body (health checks).
pub(crate) fn text(status: StatusCode, body: &'static str) -> Response<Body> {
    with_type(
        status,
        TEXT_PLAIN,
        Body::full(Bytes::from_static(body.as_bytes())),
    )
}

/// `status` with an owned `text/plain` body.
pub(crate) fn text_owned(status: StatusCode, body: String) -> Response<Body> {
    with_type(status, TEXT_PLAIN, Body::full(Bytes::from(body)))
}

/// A status with no body (`202 Accepted` for notifications and responses).
pub(crate) fn empty(status: StatusCode) -> Response<Body> {
    let mut response = Response::new(Body::empty());
    *response.status_mut() = status;
    response
}

fn with_type(status: StatusCode, content_type: HeaderValue, body: Body) -> Response<Body> {
    let mut response = Response::new(body);
    *response.status_mut() = status;
    response.headers_mut().insert(CONTENT_TYPE, content_type);
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;
    use smallvec::smallvec;

    async fn collect(body: Body) -> (Vec<Bytes>, bool) {
        let mut body = body;
        let mut frames = Vec::new();
        while let Some(frame) = body.frame().await {
            match frame {
                Ok(frame) => frames.extend(frame.into_data().ok()),
                Err(never) => match never {},
            }
        }
        let ended = http_body::Body::is_end_stream(&body);
        (frames, ended)
    }

    fn check(body: Body, expected: &[&str]) {
        let rt = tokio::runtime::Builder::new_current_thread().build();
        let Ok(rt) = rt else { panic!("runtime") };
        let (frames, ended) = rt.block_on(collect(body));
        let frames: Vec<&[u8]> = frames.iter().map(|b| &b[..]).collect();
        let expected: Vec<&[u8]> = expected.iter().map(|s| s.as_bytes()).collect();
        assert_eq!(frames, expected);
        assert!(ended);
    }

    #[test]
    fn shapes() {
        check(Body::empty(), &[]);
        check(Body::full("abc"), &["abc"]);
        check(Body::full(""), &[""]);
        check(Body::frames(smallvec![]), &[]);
        check(
            Body::frames(smallvec![Bytes::from("a\n\n"), Bytes::from("b\n\n")]),
            &["a\n\n", "b\n\n"],
        );
        let many: SmallVec<[Bytes; INLINE_FRAMES]> =
            (0..6).map(|i| Bytes::from(format!("{i}\n\n"))).collect();
        check(
            Body::frames(many),
            &["0\n\n", "1\n\n", "2\n\n", "3\n\n", "4\n\n", "5\n\n"],
        );
    }

    #[test]
    fn size_hints() {
        assert_eq!(
            http_body::Body::size_hint(&Body::full("abc")).exact(),
            Some(3)
        );
        assert_eq!(http_body::Body::size_hint(&Body::empty()).exact(), Some(0));
        let frames = Body::frames(smallvec![Bytes::from("a")]);
        assert_eq!(http_body::Body::size_hint(&frames).exact(), None);
    }

    #[tokio::test]
    async fn stream_ends_when_senders_drop() {
        let drain = Drain::new();
        let (tx, rx) = mpsc::channel(4);
        let body = Body::stream(rx, &drain);
        for frame in ["a\n\n", "b\n\n"] {
            assert!(tx.send(Bytes::from(frame)).await.is_ok());
        }
        drop(tx);
        let (frames, _) = collect(body).await;
        assert_eq!(frames, vec![Bytes::from("a\n\n"), Bytes::from("b\n\n")]);
    }

    #[tokio::test]
    async fn stream_ends_on_drain_and_closes_the_channel() {
        let drain = Drain::new();
        let (tx, rx) = mpsc::channel(4);
        let mut body = Body::stream(rx, &drain);
        assert!(tx.send(Bytes::from("a\n\n")).await.is_ok());
        let first = body.frame().await.and_then(|f| f.ok()?.into_data().ok());
        assert_eq!(first, Some(Bytes::from("a\n\n")));
        drain.start();
        assert!(body.frame().await.is_none());
        assert!(http_body::Body::is_end_stream(&body));
        assert!(tx.send(Bytes::from("late")).await.is_err());
    }

    #[test]
    fn event_stream_headers() {
        let response = event_stream(Body::empty());
        let headers = response.headers();
        assert_eq!(headers[CONTENT_TYPE], "text/event-stream");
        assert_eq!(headers[CACHE_CONTROL], "no-cache");
        assert_eq!(headers[X_ACCEL_BUFFERING], "no");
    }
}
