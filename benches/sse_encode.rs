//! Benchmarks the SSE encoder against a naive `serde_json::to_string` + `format!` encoder.
//!
//! Owns only measurement. One group, `sse_encode`, `Throughput::Bytes` of the frame:
//! - `serialize_frame/{struct,value}`: a ~600-byte JSON-RPC result serialized and framed
//!   (`Encoder::message_json`) vs `to_string` + `format!`;
//! - `frame_ready/payload600`: framing a payload that is already bytes (`Encoder::message`)
//!   vs `format!`.
//!
//! Each frame is dropped after the iteration, as hyper drops it after writing, so the encoder
//! runs in its steady state (buffer reclaimed, no allocation; `tests/alloc.rs` proves the zero).
//! After each benchmark the frame is compared with the naive one, so both measure the same work.

use std::hint::black_box;

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use mimalloc::MiMalloc;
use serde::Serialize;
use sluice::sse::Encoder;

#[global_allocator]
static GLOBAL: MiMalloc = MiMalloc;

#[derive(Serialize)]
struct RpcResult<'a> {
    jsonrpc: &'a str,
    id: u64,
    result: ToolResult<'a>,
}

#[derive(Serialize)]
struct ToolResult<'a> {
    content: Vec<Content<'a>>,
    #[serde(rename = "structuredContent")]
    structured: Customer<'a>,
    #[serde(rename = "isError")]
    is_error: bool,
}

#[derive(Serialize)]
struct Content<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    text: &'a str,
}

#[derive(Serialize)]
struct Customer<'a> {
    id: &'a str,
    name: &'a str,
    email: &'a str,
    phone: &'a str,
    city: &'a str,
    tier: &'a str,
    open_orders: u32,
    balance: f64,
    tags: [&'a str; 3],
    note: &'a str,
}

fn result() -> RpcResult<'static> {
    RpcResult {
        jsonrpc: "2.0",
        id: 4711,
        result: ToolResult {
            content: vec![Content {
                kind: "text",
                text: "Customer 4711: Jane Example, jane@example.com, +49 30 1234567, Berlin, \
                       tier gold, 3 open orders (SO-1001 shipped, SO-1002 packing, SO-1003 \
                       awaiting payment), balance 1234.5 EUR.",
            }],
            structured: Customer {
                id: "crm-eu:contact:004711",
                name: "Jane Example",
                email: "jane@example.com",
                phone: "+49 30 1234567",
                city: "Berlin",
                tier: "gold",
                open_orders: 3,
                balance: 1234.5,
                tags: ["vip", "newsletter", "invoice-monthly"],
                note: "prefers email; invoices monthly; VAT id DE123456789",
            },
            is_error: false,
        },
    }
}

const ID: &str = "i1.s7.42";

fn naive_json<T: Serialize>(value: &T) -> Bytes {
    let json = serde_json::to_string(value).unwrap();
    Bytes::from(format!("event: message\nid: {ID}\ndata: {json}\n\n"))
}

fn naive_ready(payload: &str) -> Bytes {
    Bytes::from(format!("event: message\nid: {ID}\ndata: {payload}\n\n"))
}

fn bench_encode(c: &mut Criterion) {
    let mut group = c.benchmark_group("sse_encode");

    let value = result();
    let json_value = serde_json::to_value(result()).unwrap();
    for (name, expected) in [
        ("struct", naive_json(&value)),
        ("value", naive_json(&json_value)),
    ] {
        assert!(
            (550..=700).contains(&expected.len()),
            "frame is {} bytes",
            expected.len()
        );
        group.throughput(Throughput::Bytes(expected.len() as u64));
        let mut encoder = Encoder::new();
        let mut last = (Bytes::new(), Bytes::new());
        let encode = |encoder: &mut Encoder| match name {
            "struct" => encoder.message_json(Some(ID.as_bytes()), black_box(&value)),
            _ => encoder.message_json(Some(ID.as_bytes()), black_box(&json_value)),
        };
        group.bench_function(
            BenchmarkId::new("sluice", format!("serialize_frame/{name}")),
            |b| b.iter(|| last.0 = encode(&mut encoder).unwrap()),
        );
        group.bench_function(
            BenchmarkId::new("naive", format!("serialize_frame/{name}")),
            |b| {
                b.iter(|| match name {
                    "struct" => last.1 = naive_json(black_box(&value)),
                    _ => last.1 = naive_json(black_box(&json_value)),
                })
            },
        );
        let ours = encode(&mut encoder).unwrap();
        assert_eq!(ours, expected);
        for frame in [last.0, last.1] {
            assert!(
                frame.is_empty() || frame == expected,
                "a bench produced a different frame"
            );
        }
    }

    let payload = serde_json::to_string(&value).unwrap();
    let expected = naive_ready(&payload);
    group.throughput(Throughput::Bytes(expected.len() as u64));
    let mut encoder = Encoder::new();
    let mut last = (Bytes::new(), Bytes::new());
    group.bench_function(BenchmarkId::new("sluice", "frame_ready/payload600"), |b| {
        b.iter(|| last.0 = encoder.message(Some(ID.as_bytes()), black_box(payload.as_bytes())))
    });
    group.bench_function(BenchmarkId::new("naive", "frame_ready/payload600"), |b| {
        b.iter(|| last.1 = naive_ready(black_box(&payload)))
    });
    assert_eq!(
        encoder.message(Some(ID.as_bytes()), payload.as_bytes()),
        expected
    );
    for frame in [last.0, last.1] {
        assert!(
            frame.is_empty() || frame == expected,
            "a bench produced a different frame"
        );
    }
    group.finish();
}

criterion_group!(benches, bench_encode);
criterion_main!(benches);
