//! JWKS served by a real hyper server on 127.0.0.1: fetch, cache, refetch limits, outage,
//! sharing across snapshots, size limits. Owns `JwksServer`; other helpers are the parent's.

use super::*;

/// A JWKS server on 127.0.0.1 that counts requests; dropping it (or [`Self::stop`]) closes the
/// listener and every connection.
struct JwksServer {
    url: String,
    body: Arc<Mutex<Bytes>>,
    status: Arc<AtomicU16>,
    hits: Arc<AtomicUsize>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl JwksServer {
    async fn start(keys: &[Value]) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/jwks.json", listener.local_addr().unwrap());
        let body = Arc::new(Mutex::new(Bytes::from(jwks(keys))));
        let hits = Arc::new(AtomicUsize::new(0));
        let status = Arc::new(AtomicU16::new(200));
        let (b, h, st) = (body.clone(), hits.clone(), status.clone());
        let task = tokio::spawn(async move {
            // Connections live in this set, so aborting the accept task closes them too.
            let mut connections = JoinSet::new();
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let (b, h, st) = (b.clone(), h.clone(), st.clone());
                let service = service_fn(move |_req| {
                    h.fetch_add(1, Ordering::SeqCst);
                    let body = b.lock().unwrap().clone();
                    let status = st.load(Ordering::SeqCst);
                    async move {
                        Ok::<_, Infallible>(
                            Response::builder()
                                .status(status)
                                .header("location", "http://127.0.0.1:1/elsewhere")
                                .header("content-type", "application/json")
                                .body(Full::new(body))
                                .unwrap(),
                        )
                    }
                });
                connections.spawn(async move {
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Self {
            url,
            body,
            status,
            hits,
            task: Some(task),
        }
    }

    fn replace(&self, keys: &[Value]) {
        *self.body.lock().unwrap() = Bytes::from(jwks(keys));
    }

    fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }

    async fn stop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
            let _ = task.await;
        }
    }
}

impl Drop for JwksServer {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

fn url_snapshot(url: &str) -> Snapshot {
    snapshot(&format!("jwks_url = {url:?}"), "", "")
}

#[tokio::test]
async fn jwks_url_fetch_cache_refetch_and_outage() {
    let mut server = JwksServer::start(&[Signer::Rsa1.jwk(Some("r1"))]).await;
    let snap = url_snapshot(&server.url);
    let view = snap.client("t1", "c1").unwrap();
    // Refetches allowed at once, so only caching and the outage are under test here.
    let authn = Authenticator::with_jwks(
        None,
        JwksCache::with_intervals(Duration::ZERO, Duration::from_secs(3600)),
    );
    let t1 = Signer::Rsa1.sign(Some("r1"), &claims());
    let t2 = Signer::Rsa2.sign(Some("r2"), &claims());

    // Fetched on first use, then served from the cache.
    assert!(authn.authenticate(&bearer(&t1), view, C1_MCP).await.is_ok());
    assert!(authn.authenticate(&bearer(&t1), view, C1_MCP).await.is_ok());
    assert_eq!(server.hits(), 1);

    // An unknown kid refetches and finds the rotated key.
    server.replace(&[Signer::Rsa1.jwk(Some("r1")), Signer::Rsa2.jwk(Some("r2"))]);
    assert!(authn.authenticate(&bearer(&t2), view, C1_MCP).await.is_ok());
    assert_eq!(server.hits(), 2);

    // The server goes down: known keys keep working from the last good set, an unknown kid is
    // simply unknown.
    server.stop().await;
    assert!(authn.authenticate(&bearer(&t1), view, C1_MCP).await.is_ok());
    assert!(authn.authenticate(&bearer(&t2), view, C1_MCP).await.is_ok());
    let t3 = Signer::Ec1.sign(Some("e3"), &claims());
    assert_eq!(
        authn.authenticate(&bearer(&t3), view, C1_MCP).await,
        Err(AuthError::invalid("unknown key id"))
    );
    assert!(authn.authenticate(&bearer(&t1), view, C1_MCP).await.is_ok());
}

#[tokio::test]
async fn jwks_url_refetch_is_limited_and_not_stampeded() {
    let server = JwksServer::start(&[Signer::Rsa1.jwk(Some("r1"))]).await;
    let snap = Arc::new(url_snapshot(&server.url));
    let authn = Arc::new(Authenticator::with_jwks(
        None,
        JwksCache::with_intervals(Duration::from_secs(3600), Duration::from_secs(3600)),
    ));

    // Many requests with an unknown kid at once, before any set is loaded: one fetch.
    let unknown = Signer::Rsa2.sign(Some("r2"), &claims());
    let mut tasks = JoinSet::new();
    for _ in 0..16 {
        let (authn, snap, token) = (authn.clone(), snap.clone(), unknown.clone());
        tasks.spawn(async move {
            let view = snap.client("t1", "c1").unwrap();
            authn.authenticate(&bearer(&token), view, C1_MCP).await
        });
    }
    while let Some(result) = tasks.join_next().await {
        assert_eq!(result.unwrap(), Err(AuthError::invalid("unknown key id")));
    }
    assert_eq!(server.hits(), 1);

    // Inside the interval, even a rotated set is not fetched again.
    server.replace(&[Signer::Rsa2.jwk(Some("r2"))]);
    let view = snap.client("t1", "c1").unwrap();
    assert!(authn
        .authenticate(&bearer(&unknown), view, C1_MCP)
        .await
        .is_err());
    assert_eq!(server.hits(), 1);
}

#[tokio::test]
async fn jwks_url_unreachable_is_unavailable() {
    // Bind then drop a listener to get a port nothing listens on.
    let port = {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        listener.local_addr().unwrap().port()
    };
    let snap = url_snapshot(&format!("http://127.0.0.1:{port}/jwks.json"));
    let view = snap.client("t1", "c1").unwrap();
    let authn = authenticator();
    let token = Signer::Rsa1.sign(Some("r1"), &claims());
    assert_eq!(
        authn.authenticate(&bearer(&token), view, C1_MCP).await,
        Err(AuthError::JwksUnavailable)
    );
}

#[tokio::test]
async fn jwks_cache_is_shared_across_snapshots() {
    let server = JwksServer::start(&[Signer::Rsa1.jwk(Some("r1"))]).await;
    let authn = authenticator();
    let token = Signer::Rsa1.sign(Some("r1"), &claims());
    // A reload builds a new snapshot; the long-lived authenticator keeps the set.
    for _ in 0..3 {
        let snap = url_snapshot(&server.url);
        let view = snap.client("t1", "c1").unwrap();
        assert!(authn
            .authenticate(&bearer(&token), view, C1_MCP)
            .await
            .is_ok());
    }
    assert_eq!(server.hits(), 1);
}

#[tokio::test]
async fn jwks_url_limits() {
    let server = JwksServer::start(&[Signer::Rsa1.jwk(Some("r1"))]).await;
    let cache = JwksCache::new();
    let source = JwksSource::Url(server.url.clone());
    assert_eq!(cache.fetch(&source).await.unwrap().len(), 1);
    // Redirects are not followed; other statuses fail the fetch.
    for status in [302, 404, 500] {
        server.status.store(status, Ordering::SeqCst);
        assert!(
            matches!(cache.fetch(&source).await, Err(FetchError::Status(s)) if s == status),
            "{status}"
        );
    }
    server.status.store(200, Ordering::SeqCst);
    // A document past the cap is refused, however it is sent.
    *server.body.lock().unwrap() = Bytes::from(vec![b' '; MAX_JWKS_BYTES + 1]);
    assert!(matches!(
        cache.fetch(&source).await,
        Err(FetchError::TooLarge)
    ));
    let dir = temp_dir();
    let path = dir.join("big.json");
    std::fs::write(&path, vec![b' '; MAX_JWKS_BYTES + 1]).unwrap();
    assert!(matches!(
        cache.fetch(&JwksSource::File(path)).await,
        Err(FetchError::TooLarge)
    ));
}
