//! The server's peak heap for one large `tools/call`: a 1 MiB string argument sent to a REST
//! downstream that answers with it, so 1 MiB goes each way. Counted by a global allocator
//! wrapper over mimalloc (the production allocator) in a test binary of its own, so no other
//! test's allocations mix in.
//!
//! The peers allocate nothing while a call is measured: the client and the downstream are raw
//! TCP loops that send bytes built beforehand and read into buffers sized beforehand, so the
//! peak above the idle heap is the server's (its body buffers, the parsed arguments, the
//! downstream request and response, the result and its frame). The bound is a multiple of the
//! payload; a pipeline that copies the payload once more per stage shows up here, where an RSS
//! reading of a process (allocator-retained pages, thread caches) would hide it in noise.
//!
//! Owns only this measurement; what the call answers is tested in `tests/it`.

#![allow(unsafe_code)] // the counting `GlobalAlloc` wraps mimalloc

use std::sync::Arc;

use sluice::catalog::Catalog;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

#[path = "common/counting.rs"]
mod counting;

use counting::{live, peak, reset_peak};

/// The size of the string argument, and of the string the downstream answers.
const PAYLOAD: usize = 1024 * 1024;
/// The measured peak may reach this many payloads above the idle heap. Measured: 6.13 — the
/// request body (1), the downstream answer as read (1), simd-json's scratch for parsing it
/// (input copy 1, string buffer 1, structural index 0.5), the translated result (1), and
/// hyper's read buffers (0.6). One more copy of the payload anywhere fails it.
const MAX_PAYLOADS: isize = 7;

fn config_text(downstream: std::net::SocketAddr) -> String {
    format!(
        r#"
[[tenant]]
id = "acme"
auth = {{ anonymous = true }}

[[tenant.client]]
id = "app"

[[tenant.toolset]]
id = "base"
description = "Base tools"

[[tenant.toolset.tool]]
name = "big"
description = "Answers with its argument."
downstream = {{ kind = "rest", method = "POST", url = "http://{downstream}/big" }}

[[tenant.toolset.tool.input]]
source = "text"
exposed = "text"
type = "string"
required = true

[[tenant.toolset.tool.output]]
source = "text"
exposed = "text"

[[tenant.assignment]]
client = "app"
toolset = "base"
"#
    )
}

/// The position just past the blank line ending the head, if `buf` holds it.
fn head_end(buf: &[u8]) -> Option<usize> {
    buf.windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|at| at + 4)
}

/// The `Content-Length` of a request head (0 when absent).
fn content_length(head: &[u8]) -> usize {
    let head = std::str::from_utf8(head).expect("an ASCII head");
    head.split("\r\n")
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().expect("a length"))
        })
        .unwrap_or(0)
}

/// The downstream: one connection at a time, keep-alive, each request read into one buffer
/// allocated before the first and answered with the same prebuilt response.
async fn downstream(listener: TcpListener, response: Arc<Vec<u8>>) {
    let mut buf = Vec::with_capacity(4 * PAYLOAD);
    loop {
        let Ok((mut socket, _)) = listener.accept().await else {
            return;
        };
        'requests: loop {
            buf.clear();
            let end = loop {
                if let Some(end) = head_end(&buf) {
                    if buf.len() >= end + content_length(&buf[..end]) {
                        break end + content_length(&buf[..end]);
                    }
                }
                assert!(buf.len() < buf.capacity(), "a request larger than expected");
                match socket.read_buf(&mut buf).await {
                    Ok(0) | Err(_) => break 'requests,
                    Ok(_) => {}
                }
            };
            assert_eq!(end, buf.len(), "one request at a time");
            if socket.write_all(&response).await.is_err() {
                break;
            }
        }
    }
}

/// One call over a new connection: the prebuilt request out, the whole answer (the server
/// closes after it) into `answer`.
async fn call(addr: std::net::SocketAddr, request: &[u8], answer: &mut Vec<u8>) {
    answer.clear();
    let mut socket = TcpStream::connect(addr).await.expect("connect");
    socket.write_all(request).await.expect("send");
    loop {
        assert!(
            answer.len() < answer.capacity(),
            "an answer larger than expected"
        );
        if socket.read_buf(answer).await.expect("read") == 0 {
            break;
        }
    }
}

#[test]
fn a_large_call_peaks_at_a_bounded_multiple_of_its_payload() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let text = "y".repeat(PAYLOAD);
        let answer_body = format!(r#"{{"text":"{text}"}}"#);
        let response = Arc::new(
            format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{answer_body}",
                answer_body.len()
            )
            .into_bytes(),
        );
        let api = TcpListener::bind("127.0.0.1:0").await.expect("bind api");
        let api_addr = api.local_addr().expect("api addr");
        tokio::spawn(downstream(api, response));

        let config = sluice::config::parse(&config_text(api_addr), "memory").expect("parses");
        let catalog = Arc::new(Catalog::from_config(&config).expect("valid"));
        let mut serve = sluice::ServeConfig::from_catalog(catalog);
        serve.limits.max_body_bytes = 4 * PAYLOAD;
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind sluice");
        let addr = listener.local_addr().expect("sluice addr");
        tokio::spawn(async move {
            sluice::serve(listener, serve, std::future::pending())
                .await
                .expect("serves");
        });

        let meta = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"memory","version":"1"}}"#;
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"big","arguments":{{"text":"{text}"}},"_meta":{meta}}}}}"#
        );
        let request = format!(
            "POST /runtime/acme/app/mcp HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\
             content-type: application/json\r\naccept: application/json, text/event-stream\r\n\
             mcp-protocol-version: 2026-07-28\r\nmcp-method: tools/call\r\nmcp-name: big\r\n\
             content-length: {}\r\n\r\n{body}",
            body.len()
        )
        .into_bytes();
        drop((text, body));
        let mut answer = Vec::with_capacity(8 * PAYLOAD);

        // The first calls fill the pools (the downstream connection, buffers, lazy statics).
        let mut peaks = Vec::new();
        for round in 0..5 {
            // Settle: the previous connection's tasks end on the runtime.
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            let before = live();
            reset_peak();
            call(addr, &request, &mut answer).await;
            let head = String::from_utf8_lossy(&answer[..answer.len().min(200)]).into_owned();
            assert!(head.starts_with("HTTP/1.1 200"), "not answered: {head}");
            let tail = &answer[answer.len().saturating_sub(PAYLOAD + 200)..];
            assert!(
                tail.windows(64).any(|w| w.iter().all(|&b| b == b'y')),
                "the answer lacks the payload"
            );
            let grown = peak() - before;
            println!(
                "round {round}: peak {grown} B above idle = {:.2} payloads",
                grown as f64 / PAYLOAD as f64
            );
            if round >= 2 {
                peaks.push(grown);
            }
        }
        let best = peaks.iter().copied().min().expect("rounds");
        assert!(
            best <= MAX_PAYLOADS * PAYLOAD as isize,
            "a 1 MiB call peaked at {best} B above idle ({:.2} payloads)",
            best as f64 / PAYLOAD as f64
        );
    });
}
