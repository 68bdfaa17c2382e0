//! Memory per idle session and per idle GET stream, counted by a global allocator wrapper (over
//! mimalloc, the production allocator) in a test binary of its own, so no other test's
//! allocations mix in. One `#[test]` runs the steps in order for the same reason.
//!
//! Targets (task brief): ≤ 2 KiB per idle session including map overhead; ≤ 24 KiB per idle GET
//! stream including its connection. Counts are requested bytes (allocator-internal overhead is
//! not included). Also checks that abandoned sessions and streams give everything back.

#![allow(unsafe_code)] // the counting `GlobalAlloc` wraps mimalloc

use std::convert::Infallible;
use std::time::Duration;

use http::{Request, Response};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use sluice::http::response::{event_stream, Body};
use sluice::http::server::Drain;
use sluice::session::{LocalStore, NewSession, Owner, SessionConfig, SessionId};
use sluice::transport::stream::{StreamConfig, StreamKind, StreamRegistry};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

#[path = "common/counting.rs"]
mod counting;

use counting::live;

const N_SESSIONS: usize = 10_000;
const N_CONNECTIONS: usize = 1_000;
const OWNER: Owner<'static> = Owner::new("tenant-a", "client-a", "anonymous");

#[test]
fn memory_per_session_and_stream() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    runtime.block_on(sessions());
    runtime.block_on(streams());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(connections());
}

async fn sessions() {
    let store = LocalStore::new(SessionConfig {
        idle: Duration::from_secs(60),
        // One caller holds them all here.
        max_per_caller: N_SESSIONS,
        ..SessionConfig::default()
    });
    let before = live();
    for _ in 0..N_SESSIONS {
        store
            .create(NewSession {
                owner: OWNER,
                version: sluice::protocol::ProtocolVersion::V2025_11_25,
                client_info: br#"{"name":"claude-ai","version":"0.1.0"}"#,
                capabilities: br#"{"roots":{"listChanged":true},"sampling":{},"elicitation":{}}"#,
            })
            .unwrap();
    }
    let per_session = (live() - before) / N_SESSIONS as isize;
    println!("memory: {per_session} B per idle session ({N_SESSIONS} sessions)");
    assert!(per_session <= 2048, "{per_session} B per session");

    tokio::time::advance(Duration::from_secs(61)).await;
    assert_eq!(store.expire().len(), N_SESSIONS);
    let left = live() - before;
    println!("memory: {left} B left after all sessions expired");
    assert!(left < 16 * 1024, "abandoned sessions left {left} B");
}

async fn streams() {
    let registry = StreamRegistry::new(StreamConfig {
        retain: Duration::from_secs(60),
        ..StreamConfig::default()
    })
    .unwrap();
    let before = live();
    let mut receivers = Vec::with_capacity(N_SESSIONS);
    let list_bytes = live() - before;
    for _ in 0..N_SESSIONS {
        let opened = registry
            .open(Some(SessionId::random()), OWNER, StreamKind::Get)
            .unwrap();
        receivers.push(opened.rx);
    }
    let per_stream = (live() - before - list_bytes) / N_SESSIONS as isize;
    println!("memory: {per_stream} B per idle GET stream in the registry, channel included");
    assert!(per_stream <= 4096, "{per_stream} B per stream");

    // Clients leave; after `retain` the sweep gives everything back.
    drop(receivers);
    tokio::time::advance(Duration::from_secs(1)).await;
    registry.keepalive_tick();
    tokio::time::advance(Duration::from_secs(61)).await;
    assert_eq!(registry.sweep(), N_SESSIONS);
    let left = live() - before;
    println!("memory: {left} B left after all streams were swept");
    assert!(left < 16 * 1024, "dropped streams left {left} B");
}

/// Idle GET streams over real connections: a hyper server answering each GET with a registry
/// stream, and raw TCP clients that send the request and then only hold the socket. The
/// figure includes both socket ends' user-space state (the client's is small).
async fn connections() {
    let registry = StreamRegistry::new(StreamConfig::default()).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let drain = Drain::new();
    let server_registry = registry.clone();
    let server = tokio::spawn(async move {
        loop {
            let Ok((socket, _)) = listener.accept().await else {
                return;
            };
            let registry = server_registry.clone();
            let drain = drain.clone();
            tokio::spawn(async move {
                let service = service_fn(move |_request: Request<Incoming>| {
                    let opened = registry
                        .open(Some(SessionId::random()), OWNER, StreamKind::Get)
                        .unwrap();
                    let body = Body::stream(opened.rx, &drain);
                    async move { Ok::<Response<Body>, Infallible>(event_stream(body)) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(socket), service)
                    .await;
            });
        }
    });
    // Warm up once so lazily built statics do not count.
    let mut warm = connect(addr).await;
    while registry.is_empty() {
        tokio::task::yield_now().await;
    }
    warm.flush().await.unwrap();

    let before = live();
    let mut clients = Vec::with_capacity(N_CONNECTIONS);
    for _ in 0..N_CONNECTIONS {
        clients.push(connect(addr).await);
    }
    let client_list = (clients.capacity() * std::mem::size_of::<TcpStream>()) as isize;
    while registry.len() < N_CONNECTIONS + 1 {
        tokio::task::yield_now().await;
    }
    // Let every connection write its headers and go idle.
    for _ in 0..100 {
        tokio::task::yield_now().await;
    }
    let per_connection = (live() - before - client_list) / N_CONNECTIONS as isize;
    println!("memory: {per_connection} B per idle GET stream with its HTTP/1.1 connection (both socket ends)");
    assert!(
        per_connection <= 24 * 1024,
        "{per_connection} B per connection"
    );
    drop(clients);
    server.abort();
}

async fn connect(addr: std::net::SocketAddr) -> TcpStream {
    let mut socket = TcpStream::connect(addr).await.unwrap();
    socket
        .write_all(b"GET /mcp HTTP/1.1\r\nhost: x\r\naccept: text/event-stream\r\n\r\n")
        .await
        .unwrap();
    socket
}
