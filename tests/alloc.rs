//! Proves that the SSE encoder allocates nothing per frame in steady state, and the borrowed
//! decoder nothing per event.
//!
//! A separate test binary because it installs a counting global allocator. Owns only that
//! proof; what the frames contain is tested in `src/sse/encode.rs`. Counts are per thread, so
//! tests running in parallel do not disturb each other.

#![allow(unsafe_code)] // the counting `GlobalAlloc` wraps `System`

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::collections::VecDeque;

use bytes::Bytes;
use serde::Serialize;
use sluice::sse::{Decoder, Encoder};

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

fn note_allocation() {
    // `try_with`: the allocator may run while this thread's locals are being torn down.
    let _ = ALLOCATIONS.try_with(|count| count.set(count.get() + 1));
}

// SAFETY: every call is forwarded unchanged to the system allocator; counting has no effect on
// the memory handed out.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note_allocation();
        // SAFETY: same contract as our caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note_allocation();
        // SAFETY: same contract as our caller's.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note_allocation();
        // SAFETY: same contract as our caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as our caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

const WARM_UP_FRAMES: usize = 1_000;
const MEASURED_FRAMES: usize = 10_000;

/// How many frames the consumer holds before dropping the oldest: hyper keeps a few queued
/// data frames while the socket is busy, then drops each after writing it.
const IN_FLIGHT: usize = 4;

/// Runs `frame` for the warm-up, then counts allocations over the measured frames, each frame
/// handed to a consumer that holds up to `in_flight` of them before dropping the oldest.
fn allocations_per_run(in_flight: usize, mut frame: impl FnMut(usize) -> Bytes) -> u64 {
    let mut queue: VecDeque<Bytes> = VecDeque::with_capacity(in_flight + 1);
    let mut run = |n: usize, queue: &mut VecDeque<Bytes>| {
        let bytes = frame(n);
        assert!(bytes.ends_with(b"\n\n"), "not a complete frame");
        queue.push_back(bytes);
        if queue.len() > in_flight {
            queue.pop_front();
        }
    };
    for n in 0..WARM_UP_FRAMES {
        run(n, &mut queue);
    }
    let before = allocations();
    for n in 0..MEASURED_FRAMES {
        run(n, &mut queue);
    }
    allocations() - before
}

/// A realistic ~600-byte JSON-RPC result.
#[derive(Serialize)]
struct RpcResult<'a> {
    jsonrpc: &'a str,
    id: u64,
    result: ToolResult<'a>,
}

#[derive(Serialize)]
struct ToolResult<'a> {
    content: [Content<'a>; 1],
    #[serde(rename = "isError")]
    is_error: bool,
}

#[derive(Serialize)]
struct Content<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    text: &'a str,
}

const TEXT: &str = "Customer 4711: Jane Example, jane@example.com, +49 30 1234567, account \
    active since 2019, tier gold, open orders 3 (SO-1001 shipped, SO-1002 packing, SO-1003 \
    awaiting payment), last contact 2026-11-02 via phone about a delivery address change to \
    Hauptstrasse 12, 10115 Berlin; notes: prefers email, invoices monthly, VAT id DE123456789, \
    credit limit 25,000 EUR, payment terms 30 days net, assigned rep Max Mustermann.";

fn rpc_result(id: u64) -> RpcResult<'static> {
    RpcResult {
        jsonrpc: "2.0",
        id,
        result: ToolResult {
            content: [Content {
                kind: "text",
                text: TEXT,
            }],
            is_error: false,
        },
    }
}

fn check_zero(name: &str, mut frame: impl FnMut(&mut Encoder, usize) -> Bytes) {
    for in_flight in [0, 1, IN_FLIGHT] {
        let mut encoder = Encoder::new();
        let count = allocations_per_run(in_flight, |n| frame(&mut encoder, n));
        assert_eq!(
            count, 0,
            "{name}: {count} allocations over {MEASURED_FRAMES} frames with {in_flight} in flight"
        );
    }
}

#[test]
fn message_allocates_nothing_per_frame() {
    let payload = serde_json::to_vec(&rpc_result(1)).unwrap();
    assert!(payload.len() > 500);
    check_zero("message", |encoder, _| {
        encoder.message(Some(b"i1.s7.42"), &payload)
    });
}

#[test]
fn message_json_allocates_nothing_per_frame() {
    let ids: Vec<String> = (0..MEASURED_FRAMES).map(|n| format!("i1.s7.{n}")).collect();
    check_zero("message_json", |encoder, n| {
        let id = ids[n % ids.len()].as_bytes();
        encoder
            .message_json(Some(id), &rpc_result(n as u64))
            .unwrap()
    });
}

#[test]
fn message_with_allocates_nothing_per_frame() {
    let payload = serde_json::to_vec(&rpc_result(1)).unwrap();
    check_zero("message_with", |encoder, _| {
        encoder.message_with(None, |buf| buf.extend_from_slice(&payload))
    });
}

#[test]
fn multi_line_message_allocates_nothing_per_frame() {
    let payload = b"line one\nline two\r\nline three\rline four".repeat(10);
    check_zero("multi-line message", |encoder, _| {
        encoder.message(None, &payload)
    });
}

#[test]
fn priming_allocates_nothing_per_frame() {
    check_zero("priming", |encoder, _| {
        encoder.priming(b"i1.s7.0", Some(3000))
    });
}

#[test]
fn comment_allocates_nothing_per_frame() {
    check_zero("comment", |encoder, _| encoder.comment(b"keepalive"));
}

#[test]
fn new_encoder_per_stream_reuses_pooled_buffers() {
    // A short stream per request: take an encoder, write two frames, drop everything.
    let payload = serde_json::to_vec(&rpc_result(1)).unwrap();
    let count = allocations_per_run(0, |_| {
        let mut encoder = Encoder::new();
        let _priming = encoder.priming(b"i1.s7.0", None);
        encoder.message(Some(b"i1.s7.1"), &payload)
    });
    assert_eq!(
        count, 0,
        "{count} allocations over {MEASURED_FRAMES} streams"
    );
}

#[test]
fn borrowed_decoder_allocates_nothing_per_event() {
    let mut encoder = Encoder::new();
    let mut stream = Vec::new();
    for n in 0..64u64 {
        let id = format!("i1.s7.{n}");
        stream.extend_from_slice(
            &encoder
                .message_json(Some(id.as_bytes()), &rpc_result(n))
                .unwrap(),
        );
        // A multi-line frame goes through the scratch buffer and the line parser.
        stream.extend_from_slice(&encoder.message(None, b"a\nb\r\nc"));
    }
    let mut decoder = Decoder::new();
    let mut buf = bytes::BytesMut::with_capacity(stream.len());
    let mut n_events = 0;
    let mut run = |decoder: &mut Decoder, buf: &mut bytes::BytesMut| {
        // Fed in uneven pieces, so frames are cut by the end of the input too.
        for piece in stream.chunks(1000) {
            buf.extend_from_slice(piece);
            decoder
                .decode_with(buf, |event| n_events += event.data.len().min(1))
                .unwrap();
        }
    };
    run(&mut decoder, &mut buf);
    let before = allocations();
    for _ in 0..100 {
        run(&mut decoder, &mut buf);
    }
    let count = allocations() - before;
    assert_eq!(count, 0, "{count} allocations over 100 streams");
    assert_eq!(n_events, 101 * 128);
}

#[test]
fn the_counter_counts() {
    // Guards the proof itself: a frame that is kept alive forces new buffers.
    let mut encoder = Encoder::new();
    let before = allocations();
    let kept: Vec<Bytes> = (0..1000)
        .map(|_| encoder.message(None, &[b'x'; 600]))
        .collect();
    assert!(allocations() > before);
    assert_eq!(kept.len(), 1000);
}
