//! The pool against raw TCP servers started here: reuse, origin form and `Host`, the idle limit
//! and timeout, connections the peer closed while idle, and no reuse after an unread body.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, StatusCode, Uri};
use http_body_util::{BodyExt, Full};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::{Pool, PoolConfig, PoolError};

/// What the raw server does after answering a request on a connection.
#[derive(Clone, Copy)]
enum After {
    /// Waits for the next request.
    KeepAlive,
    /// Closes the connection (without saying so in the answer), as a server whose keep-alive
    /// timeout is shorter than the client's does.
    Close,
}

/// A raw HTTP/1.1 server: answers every request `200` with body `ok` (or `500` with a body
/// when the path is `/fail`), counts connections, and records each request head.
struct Raw {
    addr: std::net::SocketAddr,
    connections: Arc<AtomicUsize>,
    heads: Arc<parking_lot::Mutex<Vec<String>>>,
}

impl Raw {
    async fn start(after: After) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let connections = Arc::new(AtomicUsize::new(0));
        let heads = Arc::new(parking_lot::Mutex::new(Vec::new()));
        let (c, h) = (Arc::clone(&connections), Arc::clone(&heads));
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                c.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(serve(stream, after, Arc::clone(&h)));
            }
        });
        Self {
            addr,
            connections,
            heads,
        }
    }

    fn url(&self, path: &str) -> Uri {
        format!("http://{}{path}", self.addr).parse().unwrap()
    }

    fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

async fn serve(mut stream: TcpStream, after: After, heads: Arc<parking_lot::Mutex<Vec<String>>>) {
    let mut buf = Vec::new();
    loop {
        let mut chunk = [0u8; 1024];
        let end = loop {
            if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break end + 4;
            }
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        };
        let head = String::from_utf8_lossy(&buf[..end]).into_owned();
        buf.drain(..end);
        let answer: &[u8] = if head.starts_with("GET /fail ") {
            b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 5\r\n\r\nerror"
        } else {
            b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"
        };
        heads.lock().push(head);
        if stream.write_all(answer).await.is_err() {
            return;
        }
        if let After::Close = after {
            return;
        }
    }
}

fn pool(idle_timeout: Duration, max_idle_per_host: usize) -> Pool {
    Pool::new(PoolConfig {
        connect_timeout: Duration::from_secs(2),
        idle_timeout,
        max_idle_per_host,
    })
}

fn get(uri: Uri) -> Request<Full<Bytes>> {
    Request::get(uri).body(Full::new(Bytes::new())).unwrap()
}

/// One exchange read to its end; the lease goes back to the pool.
async fn exchange(pool: &Pool, uri: Uri) -> (StatusCode, Bytes) {
    let (response, mut lease) = pool.send(get(uri)).await.unwrap();
    let status = response.status();
    let body = lease
        .drive(response.into_body().collect())
        .await
        .unwrap()
        .to_bytes();
    pool.release(lease);
    (status, body)
}

#[tokio::test]
async fn sends_origin_form_with_host_and_reuses_the_connection() {
    let raw = Raw::start(After::KeepAlive).await;
    let pool = pool(Duration::from_secs(90), 8);
    for _ in 0..5 {
        let (status, body) = exchange(&pool, raw.url("/a/b?c=1")).await;
        assert_eq!((status, &body[..]), (StatusCode::OK, &b"ok"[..]));
    }
    assert_eq!(raw.connections(), 1);
    assert_eq!(pool.idle_for(&raw.url("/")), 1);
    let heads = raw.heads.lock().clone();
    assert_eq!(heads.len(), 5);
    let host = format!("host: {}\r\n", raw.addr);
    for head in &heads {
        assert!(head.starts_with("GET /a/b?c=1 HTTP/1.1\r\n"), "{head:?}");
        assert!(head.to_ascii_lowercase().contains(&host), "{head:?}");
    }
}

#[tokio::test]
async fn a_connection_the_peer_closed_while_idle_is_replaced() {
    let raw = Raw::start(After::Close).await;
    let pool = pool(Duration::from_secs(90), 8);
    for _ in 0..4 {
        let (status, _) = exchange(&pool, raw.url("/")).await;
        assert_eq!(status, StatusCode::OK);
        // Let the close reach the client side.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(raw.connections(), 4);
}

#[tokio::test]
async fn a_response_whose_body_was_not_read_closes_its_connection() {
    let raw = Raw::start(After::KeepAlive).await;
    let pool = pool(Duration::from_secs(90), 8);
    let (response, lease) = pool.send(get(raw.url("/fail"))).await.unwrap();
    assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
    drop((response, lease));
    let (status, _) = exchange(&pool, raw.url("/")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(raw.connections(), 2);
}

#[tokio::test]
async fn keeps_at_most_max_idle_per_host() {
    let raw = Raw::start(After::KeepAlive).await;
    let pool = Arc::new(pool(Duration::from_secs(90), 2));
    // Five exchanges in flight at once: five connections; two are kept.
    let mut held = Vec::new();
    for _ in 0..5 {
        held.push(pool.send(get(raw.url("/"))).await.unwrap());
    }
    for (response, mut lease) in held {
        lease.drive(response.into_body().collect()).await.unwrap();
        pool.release(lease);
    }
    assert_eq!(raw.connections(), 5);
    assert_eq!(pool.idle_for(&raw.url("/")), 2);
    exchange(&pool, raw.url("/")).await;
    exchange(&pool, raw.url("/")).await;
    assert_eq!(raw.connections(), 5);
}

#[tokio::test]
async fn idle_connections_past_the_idle_timeout_are_not_used() {
    let raw = Raw::start(After::KeepAlive).await;
    let pool = pool(Duration::from_millis(50), 8);
    exchange(&pool, raw.url("/")).await;
    tokio::time::sleep(Duration::from_millis(120)).await;
    exchange(&pool, raw.url("/")).await;
    assert_eq!(raw.connections(), 2);
    assert_eq!(pool.idle_for(&raw.url("/")), 1);
}

#[tokio::test]
async fn refuses_relative_uris_and_reports_connect_failures() {
    let pool = pool(Duration::from_secs(90), 8);
    let relative = Request::get("/x").body(Full::new(Bytes::new())).unwrap();
    assert!(matches!(
        pool.send(relative).await,
        Err(PoolError::NotAbsolute)
    ));
    // A port nothing listens on (bound, then closed).
    let addr = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap();
    let uri: Uri = format!("http://{addr}/").parse().unwrap();
    assert!(matches!(
        pool.send(get(uri)).await,
        Err(PoolError::Connect(_))
    ));
}

/// Every request's future embeds the exchange's; hyper's connection state and the TLS
/// handshake are boxed so that it stays small (it grew by ~100 KB of copying per request when
/// they were not, PERFORMANCE.md "Performance, round two").
#[test]
fn the_exchange_future_stays_small() {
    let pool = pool(Duration::from_secs(90), 8);
    let uri: Uri = "http://127.0.0.1:9/".parse().unwrap();
    let future = pool.send(get(uri));
    let size = std::mem::size_of_val(&future);
    assert!(size <= 2048, "Pool::send future is {size} bytes");
    let conn = std::mem::size_of::<super::Conn>();
    println!("send future {size} B, connection {conn} B");
}
