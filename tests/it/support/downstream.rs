//! [`Downstream`]: a fake business API on 127.0.0.1:0 (a small hyper HTTP/1.1 server), built
//! route by route — `Downstream::new().route("/echo", Answer::Json(..)).start()` — with canned
//! answers, closures, held answers the test releases, and a record of every request. Owns only
//! the fake's side of the wire; what sluice makes of the answers is the tests' business.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Method, Request, Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, Notify};

use super::GUARD;

/// What a fake answers with: any body.
pub(crate) type Answered = Response<BoxBody<Bytes, Infallible>>;

type Handler =
    Arc<dyn Fn(Received) -> Pin<Box<dyn Future<Output = Answered> + Send>> + Send + Sync>;

/// One request as the fake received it (its body read whole).
#[derive(Debug, Clone)]
pub(crate) struct Received {
    pub method: Method,
    /// The request target as sent (origin form: path and query).
    pub uri: String,
    pub headers: HeaderMap,
    pub body: Bytes,
}

/// Serves `handle` on a fresh 127.0.0.1 listener, one task per connection; the listener lives
/// as long as the test's runtime.
pub(crate) async fn http_server<F, Fut>(handle: F) -> SocketAddr
where
    F: Fn(Request<Incoming>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Answered> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let handle = handle.clone();
            tokio::spawn(async move {
                let service = service_fn(move |req| {
                    let answer = handle(req);
                    async move { Ok::<_, Infallible>(answer.await) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    addr
}

/// A whole answer with this status and body (no `Content-Type`).
pub(crate) fn full(status: u16, body: impl Into<Bytes>) -> Answered {
    let mut answer = Response::new(Full::new(body.into()).boxed());
    *answer.status_mut() = StatusCode::from_u16(status).expect("status");
    answer
}

/// A `200 application/json` answer with this body.
fn json(body: impl Into<Bytes>) -> Answered {
    let mut answer = full(200, body);
    answer.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    answer
}

/// How a route answers.
pub(crate) enum Answer {
    /// `200 application/json` with this body.
    Json(&'static str),
    /// This status and body, without a `Content-Type`.
    Plain(u16, &'static str),
    /// `200 application/json` with the request's own body.
    Echo,
    /// Counts as held, then answers `200 application/json` with this body once the test calls
    /// [`Downstream::release`]; the request future dropped first (the caller went away) is
    /// reported to [`Downstream::wait_dropped`].
    Hold(&'static str),
    /// Counts as held and never answers (until the caller goes away, reported like `Hold`).
    Stall,
    /// Whatever the closure answers to the request.
    Fn(Handler),
}

impl Answer {
    /// A route answered by `handle`.
    pub(crate) fn with<F, Fut>(handle: F) -> Answer
    where
        F: Fn(Received) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Answered> + Send + 'static,
    {
        Answer::Fn(Arc::new(move |req| Box::pin(handle(req))))
    }
}

/// A fake API being configured.
pub(crate) struct DownstreamBuilder {
    routes: HashMap<String, Answer>,
    fallback: Option<Answer>,
}

/// A running fake API: its address and what it has seen.
pub(crate) struct Downstream {
    pub addr: SocketAddr,
    state: Arc<State>,
}

struct State {
    /// Every request, in arrival order.
    received: Mutex<Vec<Received>>,
    /// Connections accepted.
    connections: AtomicUsize,
    /// Requests that reached a `Hold` or `Stall` route.
    held: AtomicUsize,
    entered: Notify,
    release: Notify,
    entered_tx: mpsc::UnboundedSender<()>,
    entered_rx: tokio::sync::Mutex<mpsc::UnboundedReceiver<()>>,
    dropped_tx: mpsc::UnboundedSender<String>,
    dropped_rx: tokio::sync::Mutex<mpsc::UnboundedReceiver<String>>,
}

/// Sends its request's path on drop unless answered: proves a held request was abandoned.
struct DropSignal(Option<mpsc::UnboundedSender<String>>, String);

impl DropSignal {
    /// The request was answered: nothing to report.
    fn answered(mut self) {
        self.0 = None;
    }
}

impl Drop for DropSignal {
    fn drop(&mut self) {
        if let Some(tx) = self.0.take() {
            let _ = tx.send(std::mem::take(&mut self.1));
        }
    }
}

impl Downstream {
    /// A fake with no routes yet; unknown paths answer 404.
    #[allow(clippy::new_ret_no_self)]
    pub(crate) fn new() -> DownstreamBuilder {
        DownstreamBuilder {
            routes: HashMap::new(),
            fallback: None,
        }
    }

    /// Every request received so far, in order.
    pub(crate) fn requests(&self) -> Vec<Received> {
        self.state.received.lock().expect("lock").clone()
    }

    /// The one request received so far (fails when there were more or none).
    pub(crate) fn only(&self) -> Received {
        let all = self.requests();
        assert_eq!(all.len(), 1, "{all:#?}");
        all.into_iter().next().expect("one request")
    }

    /// Path and query of every request received so far, in order.
    pub(crate) fn seen(&self) -> Vec<String> {
        self.requests().into_iter().map(|r| r.uri).collect()
    }

    /// The headers of every request received so far, in order.
    pub(crate) fn headers(&self) -> Vec<HeaderMap> {
        self.requests().into_iter().map(|r| r.headers).collect()
    }

    /// How many requests have arrived so far.
    pub(crate) fn hits(&self) -> usize {
        self.state.received.lock().expect("lock").len()
    }

    /// How many connections the fake has accepted so far.
    pub(crate) fn connections(&self) -> usize {
        self.state.connections.load(Ordering::SeqCst)
    }

    /// How many requests have reached a held route so far.
    pub(crate) fn held(&self) -> usize {
        self.state.held.load(Ordering::SeqCst)
    }

    /// Waits until `n` requests have reached a held route.
    pub(crate) async fn wait_held(&self, n: usize) {
        tokio::time::timeout(GUARD, async {
            while self.held() < n {
                let entered = self.state.entered.notified();
                if self.held() >= n {
                    break;
                }
                let _ = tokio::time::timeout(Duration::from_millis(50), entered).await;
            }
        })
        .await
        .expect("the held calls reach the downstream");
    }

    /// Waits for the next request to reach a held route.
    pub(crate) async fn wait_entered(&self) {
        let mut rx = self.state.entered_rx.lock().await;
        let got = tokio::time::timeout(GUARD, rx.recv()).await;
        assert!(matches!(got, Ok(Some(()))), "downstream was not called");
    }

    /// Waits for the next held request to be dropped unanswered; returns its path.
    pub(crate) async fn wait_dropped(&self) -> String {
        let mut rx = self.state.dropped_rx.lock().await;
        let got = tokio::time::timeout(GUARD, rx.recv()).await;
        match got {
            Ok(Some(path)) => path,
            _ => panic!("downstream request was not dropped"),
        }
    }

    /// Lets every request waiting on a `Hold` route answer.
    pub(crate) fn release(&self) {
        self.state.release.notify_waiters();
    }
}

impl DownstreamBuilder {
    /// Answers `path` (exact match, query aside) with `answer`.
    pub(crate) fn route(mut self, path: &str, answer: Answer) -> Self {
        self.routes.insert(path.to_owned(), answer);
        self
    }

    /// Answers every path without a route with `answer`.
    pub(crate) fn fallback(mut self, answer: Answer) -> Self {
        self.fallback = Some(answer);
        self
    }

    pub(crate) async fn start(self) -> Downstream {
        let (entered_tx, entered_rx) = mpsc::unbounded_channel();
        let (dropped_tx, dropped_rx) = mpsc::unbounded_channel();
        let state = Arc::new(State {
            received: Mutex::new(Vec::new()),
            connections: AtomicUsize::new(0),
            held: AtomicUsize::new(0),
            entered: Notify::new(),
            release: Notify::new(),
            entered_tx,
            entered_rx: tokio::sync::Mutex::new(entered_rx),
            dropped_tx,
            dropped_rx: tokio::sync::Mutex::new(dropped_rx),
        });
        let routes = Arc::new((self.routes, self.fallback));
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let shared = Arc::clone(&state);
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                shared.connections.fetch_add(1, Ordering::SeqCst);
                let (state, routes) = (Arc::clone(&shared), Arc::clone(&routes));
                tokio::spawn(async move {
                    let service = service_fn(move |req| {
                        let (state, routes) = (Arc::clone(&state), Arc::clone(&routes));
                        async move {
                            let answer = answer(&state, &routes.0, routes.1.as_ref(), req).await;
                            Ok::<_, Infallible>(answer)
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Downstream { addr, state }
    }
}

async fn answer(
    state: &State,
    routes: &HashMap<String, Answer>,
    fallback: Option<&Answer>,
    req: Request<Incoming>,
) -> Answered {
    let path = req.uri().path().to_owned();
    let (parts, body) = req.into_parts();
    let body = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let received = Received {
        method: parts.method,
        uri: parts.uri.to_string(),
        headers: parts.headers,
        body,
    };
    state.received.lock().expect("lock").push(received.clone());
    let Some(route) = routes.get(&path).or(fallback) else {
        return full(404, "");
    };
    match route {
        Answer::Json(body) => json(*body),
        Answer::Plain(status, body) => full(*status, *body),
        Answer::Echo => json(received.body),
        Answer::Hold(body) => {
            let released = state.release.notified();
            let signal = hold(state, &path);
            released.await;
            signal.answered();
            json(*body)
        }
        Answer::Stall => {
            let _signal = hold(state, &path);
            std::future::pending::<Answered>().await
        }
        Answer::Fn(handle) => handle(received).await,
    }
}

/// Counts a held request and announces it; the returned guard reports its drop.
fn hold(state: &State, path: &str) -> DropSignal {
    state.held.fetch_add(1, Ordering::SeqCst);
    state.entered.notify_one();
    let _ = state.entered_tx.send(());
    DropSignal(Some(state.dropped_tx.clone()), path.to_owned())
}
