//! The upstream client against scripted HTTP servers started here on 127.0.0.1 port 0: the
//! credential each scheme sends (and the OAuth token cached, single-flighted and renewed on a
//! 401), how statuses and media types classify, the request, stream-idle and size limits, and
//! conditional card fetches.

use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Request, Response, StatusCode, Uri};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use parking_lot::Mutex;
use tokio::net::TcpListener;

use super::{CardFetch, Upstream, UpstreamError};
use crate::a2a::v03::Version;
use crate::config::RemoteAgentConfig;

/// One request as the server saw it.
#[derive(Clone, Debug)]
struct Seen {
    path: String,
    headers: HeaderMap,
    body: Bytes,
}

/// How the server answers.
struct Answer {
    status: StatusCode,
    headers: Vec<(&'static str, String)>,
    body: Body,
    /// Wait before the head.
    delay: Duration,
}

enum Body {
    Full(Bytes),
    /// These chunks, then silence with the connection open.
    Stalls(Vec<Bytes>),
}

impl Answer {
    fn json(status: u16, body: &str) -> Answer {
        Answer {
            status: StatusCode::from_u16(status).unwrap(),
            headers: vec![("content-type", "application/json".into())],
            body: Body::Full(Bytes::copy_from_slice(body.as_bytes())),
            delay: Duration::ZERO,
        }
    }
}

type Handler = Arc<dyn Fn(&Seen) -> Answer + Send + Sync>;

struct Server {
    addr: std::net::SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Server {
    async fn start(handler: impl Fn(&Seen) -> Answer + Send + Sync + 'static) -> Server {
        let handler: Handler = Arc::new(handler);
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (handler, log) = (Arc::clone(&handler), Arc::clone(&log));
                tokio::spawn(async move {
                    let service = service_fn(move |request: Request<Incoming>| {
                        let (handler, log) = (Arc::clone(&handler), Arc::clone(&log));
                        async move {
                            let (parts, body) = request.into_parts();
                            let body = body
                                .collect()
                                .await
                                .map(|b| b.to_bytes())
                                .unwrap_or_default();
                            let seen = Seen {
                                path: parts.uri.path().to_owned(),
                                headers: parts.headers,
                                body,
                            };
                            log.lock().push(seen.clone());
                            let answer = handler(&seen);
                            tokio::time::sleep(answer.delay).await;
                            Ok::<_, Infallible>(respond(answer))
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Server { addr, seen }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn uri(&self, path: &str) -> Uri {
        self.url(path).parse().unwrap()
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().clone()
    }

    fn hits(&self, path: &str) -> usize {
        self.seen.lock().iter().filter(|s| s.path == path).count()
    }
}

fn respond(answer: Answer) -> Response<UnsyncBoxBody<Bytes, Infallible>> {
    let body = match answer.body {
        Body::Full(bytes) => Full::new(bytes).boxed_unsync(),
        Body::Stalls(chunks) => {
            let stream =
                futures_util::stream::unfold(chunks.into_iter(), |mut chunks| async move {
                    match chunks.next() {
                        Some(chunk) => Some((Ok::<_, Infallible>(Frame::data(chunk)), chunks)),
                        None => std::future::pending().await,
                    }
                });
            StreamBody::new(stream).boxed_unsync()
        }
    };
    let mut response = Response::new(body);
    *response.status_mut() = answer.status;
    for (name, value) in answer.headers {
        response.headers_mut().insert(name, value.parse().unwrap());
    }
    response
}

/// A secret in a file of its own.
fn secret_file(name: &str, secret: &str) -> String {
    let path = std::env::temp_dir().join(format!(
        "sluice-upstream-{}-{name}-{}",
        std::process::id(),
        rand::random::<u64>()
    ));
    std::fs::write(&path, secret).unwrap();
    path.display().to_string()
}

fn config(card_url: &str, extra: &str) -> RemoteAgentConfig {
    toml::from_str(&format!(
        "id = \"a\"\ncard_url = \"{card_url}\"\nclients = [\"app\"]\n{extra}"
    ))
    .unwrap()
}

const OK: &str = r#"{"jsonrpc":"2.0","id":"sl-1","result":{}}"#;

async fn post(upstream: &Upstream, server: &Server) -> Result<Bytes, UpstreamError> {
    let mut headers = HeaderMap::new();
    headers.insert(
        "traceparent",
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
            .parse()
            .unwrap(),
    );
    let response = upstream
        .post(
            &server.uri("/rpc"),
            Version::V1,
            Bytes::from_static(b"{}"),
            &headers,
        )
        .await?;
    response.collect(1 << 20).await
}

#[tokio::test]
async fn static_credentials_and_the_request_headers_reach_the_upstream() {
    let server = Server::start(|_| Answer::json(200, OK)).await;
    let bearer = format!(
        "[upstream_auth]\nkind = \"bearer\"\nsecret_file = \"{}\"",
        secret_file("bearer", "tok-1\n")
    );
    let upstream = Upstream::new(&config(&server.url("/card"), &bearer)).unwrap();
    assert_eq!(post(&upstream, &server).await.unwrap(), OK.as_bytes());
    let seen = &server.seen()[0];
    assert_eq!(seen.headers["authorization"], "Bearer tok-1");
    assert_eq!(seen.headers["a2a-version"], "1.0");
    assert_eq!(seen.headers["content-type"], "application/json");
    assert!(seen.headers["user-agent"]
        .to_str()
        .unwrap()
        .starts_with("sluice/"));
    assert!(seen.headers.contains_key("traceparent"));
    assert_eq!(seen.body, "{}");

    let api_key = format!(
        "[upstream_auth]\nkind = \"api_key\"\nheader = \"X-Agent-Key\"\nsecret_file = \"{}\"",
        secret_file("key", "k-2")
    );
    let upstream = Upstream::new(&config(&server.url("/card"), &api_key)).unwrap();
    upstream
        .post(
            &server.uri("/rpc"),
            Version::V03,
            Bytes::new(),
            &HeaderMap::new(),
        )
        .await
        .unwrap();
    let seen = &server.seen()[1];
    assert_eq!(seen.headers["x-agent-key"], "k-2");
    assert_eq!(seen.headers["a2a-version"], "0.3");
    assert!(!seen.headers.contains_key("authorization"));

    // A secret that does not resolve is the configuration's error, not a panic.
    let missing = "[upstream_auth]\nkind = \"bearer\"\nsecret_file = \"/nonexistent/sluice\"";
    let err = Upstream::new(&config(&server.url("/card"), missing)).unwrap_err();
    assert!(matches!(err, UpstreamError::Config(_)), "{err}");
}

#[tokio::test]
async fn the_oauth_token_is_fetched_once_cached_and_renewed_after_a_401() {
    let issued = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&issued);
    let server = Server::start(move |seen| match seen.path.as_str() {
        "/token" => {
            let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
            Answer::json(
                200,
                &format!(r#"{{"access_token":"at-{n}","token_type":"Bearer","expires_in":3600}}"#),
            )
        }
        // The first token is revoked upstream: only the second is accepted.
        _ if seen.headers["authorization"] == "Bearer at-1" => Answer::json(401, "{}"),
        _ => Answer::json(200, OK),
    })
    .await;
    let oauth = format!(
        "[upstream_auth]\nkind = \"oauth2_client_credentials\"\ntoken_url = \"{}\"\n\
         client_id = \"edge client\"\nscopes = [\"a2a.read\", \"a2a.write\"]\n\
         audience = \"https://agents\"\nsecret_file = \"{}\"",
        server.url("/token"),
        secret_file("oauth", "s3cr:t")
    );
    let upstream = Arc::new(Upstream::new(&config(&server.url("/card"), &oauth)).unwrap());
    // Concurrent first calls ask the token endpoint once (and the retry after the 401 once).
    let calls: Vec<_> = (0..8)
        .map(|_| {
            let upstream = Arc::clone(&upstream);
            let uri = server.uri("/rpc");
            tokio::spawn(async move {
                let response = upstream
                    .post(&uri, Version::V1, Bytes::new(), &HeaderMap::new())
                    .await?;
                response.collect(1024).await
            })
        })
        .collect();
    for call in calls {
        assert_eq!(call.await.unwrap().unwrap(), OK.as_bytes());
    }
    assert_eq!(server.hits("/token"), 2, "one fetch, one renewal");
    post(&upstream, &server).await.unwrap();
    assert_eq!(server.hits("/token"), 2, "the renewed token is cached");
    let token = server
        .seen()
        .into_iter()
        .find(|s| s.path == "/token")
        .unwrap();
    assert_eq!(
        token.headers["authorization"],
        // base64("edge%20client:s3cr%3At")
        "Basic ZWRnZSUyMGNsaWVudDpzM2NyJTNBdA=="
    );
    assert_eq!(
        token.headers["content-type"],
        "application/x-www-form-urlencoded"
    );
    assert_eq!(
        token.body,
        "grant_type=client_credentials&scope=a2a%2Eread%20a2a%2Ewrite&audience=https%3A%2F%2Fagents"
    );
}

#[tokio::test]
async fn a_refused_client_or_a_refusing_upstream_is_auth_failed() {
    let server = Server::start(|seen| match seen.path.as_str() {
        "/token" => Answer::json(400, r#"{"error":"invalid_client"}"#),
        _ => Answer::json(403, "{}"),
    })
    .await;
    let oauth = format!(
        "[upstream_auth]\nkind = \"oauth2_client_credentials\"\ntoken_url = \"{}\"\n\
         client_id = \"c\"\nsecret_file = \"{}\"",
        server.url("/token"),
        secret_file("refused", "s")
    );
    let upstream = Upstream::new(&config(&server.url("/card"), &oauth)).unwrap();
    let err = post(&upstream, &server).await.unwrap_err();
    assert!(matches!(err, UpstreamError::AuthFailed(400)), "{err}");
    assert_eq!(server.hits("/rpc"), 0);
    let upstream = Upstream::new(&config(&server.url("/card"), "")).unwrap();
    let err = post(&upstream, &server).await.unwrap_err();
    assert!(matches!(err, UpstreamError::AuthFailed(403)), "{err}");
}

#[tokio::test]
async fn statuses_and_media_types_classify() {
    let server = Server::start(|seen| match seen.path.as_str() {
        "/busy" => Answer::json(503, "{}"),
        "/html" => Answer {
            headers: vec![("content-type", "text/html".into())],
            ..Answer::json(200, "<html>")
        },
        "/rpc-error" => Answer::json(
            400,
            r#"{"jsonrpc":"2.0","id":"sl-1","error":{"code":-32600,"message":"no"}}"#,
        ),
        "/gone" => Answer {
            headers: vec![],
            ..Answer::json(404, "not here")
        },
        _ => Answer::json(200, OK),
    })
    .await;
    let upstream = Upstream::new(&config(&server.url("/card"), "")).unwrap();
    let post = |path: &'static str| {
        let uri = server.uri(path);
        let upstream = &upstream;
        async move {
            upstream
                .post(&uri, Version::V1, Bytes::new(), &HeaderMap::new())
                .await
        }
    };
    assert!(matches!(
        post("/busy").await,
        Err(UpstreamError::Unavailable(_))
    ));
    assert!(matches!(
        post("/html").await,
        Err(UpstreamError::NonConforming(_))
    ));
    assert!(matches!(
        post("/gone").await,
        Err(UpstreamError::NonConforming(_))
    ));
    // A JSON-RPC error carried by a 4xx is the caller's to read.
    let body = post("/rpc-error")
        .await
        .unwrap()
        .collect(1024)
        .await
        .unwrap();
    assert!(body.starts_with(b"{\"jsonrpc\""));
    // Nobody listening.
    let closed = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let dead = format!("http://{}/rpc", closed.local_addr().unwrap());
    drop(closed);
    let err = upstream
        .post(
            &dead.parse().unwrap(),
            Version::V1,
            Bytes::new(),
            &HeaderMap::new(),
        )
        .await
        .err()
        .expect("refused");
    assert!(matches!(err, UpstreamError::Unavailable(_)), "{err}");
}

#[tokio::test]
async fn limits_bound_the_head_the_body_and_each_stream_chunk() {
    let server = Server::start(|seen| match seen.path.as_str() {
        "/slow" => Answer {
            delay: Duration::from_secs(30),
            ..Answer::json(200, OK)
        },
        "/big" => Answer::json(200, &"x".repeat(4096)),
        _ => Answer {
            status: StatusCode::OK,
            headers: vec![("content-type", "text/event-stream; charset=utf-8".into())],
            body: Body::Stalls(vec![Bytes::from_static(b"data: {}\n\n")]),
            delay: Duration::ZERO,
        },
    })
    .await;
    let upstream = Upstream::new(&config(
        &server.url("/card"),
        "request_ms = 200\nmax_response_bytes = 1024",
    ))
    .unwrap();
    let call = |path: &'static str| {
        let uri = server.uri(path);
        let upstream = &upstream;
        async move {
            upstream
                .post(&uri, Version::V1, Bytes::new(), &HeaderMap::new())
                .await
        }
    };
    assert!(matches!(call("/slow").await, Err(UpstreamError::Timeout)));
    let big = call("/big").await.unwrap().collect(1024).await;
    assert!(
        matches!(big, Err(UpstreamError::NonConforming(_))),
        "{big:?}"
    );
    let mut stream = call("/stream").await.unwrap();
    assert!(stream.is_event_stream());
    let first = stream.next_chunk(Duration::from_millis(500)).await.unwrap();
    assert_eq!(first.as_deref(), Some(&b"data: {}\n\n"[..]));
    let quiet = stream.next_chunk(Duration::from_millis(50)).await;
    assert!(matches!(quiet, Err(UpstreamError::Timeout)), "{quiet:?}");
}

#[tokio::test]
async fn the_card_is_fetched_conditionally() {
    let server = Server::start(|seen| {
        if seen
            .headers
            .get("if-none-match")
            .is_some_and(|v| v == "\"v1\"")
        {
            return Answer {
                body: Body::Full(Bytes::new()),
                ..Answer::json(304, "")
            };
        }
        Answer {
            headers: vec![
                ("content-type", "application/json".into()),
                ("etag", "\"v1\"".into()),
            ],
            ..Answer::json(200, r#"{"name":"up"}"#)
        }
    })
    .await;
    let upstream = Upstream::new(&config(&server.url("/card"), "")).unwrap();
    match upstream.fetch_card(None).await.unwrap() {
        CardFetch::Fetched { body, etag } => {
            assert_eq!(body, r#"{"name":"up"}"#);
            assert_eq!(etag.as_deref(), Some("\"v1\""));
        }
        CardFetch::NotModified => panic!("a first fetch is a card"),
    }
    assert!(matches!(
        upstream.fetch_card(Some("\"v1\"")).await.unwrap(),
        CardFetch::NotModified
    ));
    assert_eq!(server.seen()[1].headers["accept"], "application/json");
}
