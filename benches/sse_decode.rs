//! Benchmarks the SSE decoder against peer crates and a boundary-only memchr scan.
//!
//! Owns only measurement: each input is a ~256 KiB event stream fed in chunks of 1, 16 and
//! 64 KiB; `Throughput::Bytes`. In the same group, so ratios come from one run:
//! - `sluice_stream`: `sse::EventStream` over a stream of `Bytes` chunks (what clients use);
//! - `sluice_buffered`: `Decoder::decode` on one `BytesMut` the chunks are appended to (what a
//!   socket reader does; includes copying the chunk in, as a read would);
//! - `sluice_borrowed`: `Decoder::decode_slice` straight over each chunk, events handed out as
//!   `EventRef`s borrowing it; only a frame cut by a chunk boundary is copied into a carry buffer
//!   (what a client reading from a hyper body does with the borrowed API);
//! - `sluice_borrowed_buffered`: `Decoder::decode_with` on one `BytesMut` the chunks are appended
//!   to (includes the copy a socket read makes, like `sluice_buffered`);
//! - `memchr_scan`: finds frame boundaries (`\n\n`) only — the practical limit;
//! - `sse_stream_02` (what rmcp uses), `sse_stream_03`, `eventsource_stream`: peers, driven
//!   over the same stream of chunks (16 KiB only, to keep the run short).
//!
//! Every stream is polled by the same tiny executor (a no-op waker; the input is always ready).
//! After each benchmark the event count and data length are checked, so a bench cannot measure
//! a decoder that silently does less.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use bytes::{Bytes, BytesMut};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use eventsource_stream::Eventsource;
use futures::Stream;
use mimalloc::MiMalloc;
use sluice::sse::{Decoder, EventRef, EventStream};

#[global_allocator]
static GLOBAL: MiMalloc = MiMalloc;

/// Size each input stream is built up to.
const STREAM_BYTES: usize = 256 * 1024;

const CHUNK_SIZES: [usize; 3] = [1024, 16 * 1024, 64 * 1024];

/// The chunk size at which the peer crates run.
const PEER_CHUNK: usize = 16 * 1024;

struct Input {
    name: &'static str,
    stream: Bytes,
    n_events: usize,
    /// Sum of the data lengths of all events.
    data_bytes: usize,
}

/// A realistic MCP notification (~540 bytes of JSON): a federated source page.
fn notification(n: usize) -> String {
    format!(
        concat!(
            r#"{{"jsonrpc":"2.0","method":"notifications/bos/source_result","params":{{"#,
            r#""invocationId":"inv-7f3a9c","sequence":{n},"source":"crm-eu","pageIndex":{n},"#,
            r#""records":[{{"ref":"crm-eu:contact:{n:06}","type":"contact","observedAt":"#,
            r#""2026-11-30T10:41:20Z","fields":{{"name":"Jane Example","email":"#,
            r#""jane.example@example.com","phone":"+49 30 1234567","company":"Example GmbH","#,
            r#""city":"Berlin","country":"DE","tier":"gold","openOrders":3,"#,
            r#""lastContact":"2026-11-02","owner":"Max Mustermann","notes":"#,
            r#""prefers email; invoices monthly; VAT id DE123456789"}}}}],"#,
            r#""status":"page","progress":{{"delivered":{n},"expected":500}}}}}}"#
        ),
        n = n % 1000
    )
}

fn build(name: &'static str, mut frame: impl FnMut(usize) -> (String, usize)) -> Input {
    let mut stream = String::new();
    let mut n_events = 0;
    let mut data_bytes = 0;
    while stream.len() < STREAM_BYTES {
        let (text, data_len) = frame(n_events);
        stream.push_str(&text);
        n_events += 1;
        data_bytes += data_len;
    }
    Input {
        name,
        stream: Bytes::from(stream),
        n_events,
        data_bytes,
    }
}

fn inputs() -> Vec<Input> {
    let mcp600 = |n: usize| {
        let data = notification(n);
        let frame = format!("event: message\nid: i1.s7.{n}\ndata: {data}\n\n");
        (frame, data.len())
    };
    let mcp = build("mcp600", mcp600);
    let frame_len = mcp.stream.len() / mcp.n_events;
    assert!(
        (560..=640).contains(&frame_len),
        "mcp600 frames are {frame_len} bytes"
    );

    let tiny = build("tiny45", |n| {
        let data = format!(r#"{{"jsonrpc":"2.0","id":{},"result":{{}}}}"#, 10 + n % 90);
        (format!("data: {data}\n\n"), data.len())
    });
    assert_eq!(tiny.stream.len() / tiny.n_events, 45);

    let multiline = build("multiline", |n| {
        // The same notification, pretty-printed over several data lines.
        let value: serde_json::Value = serde_json::from_str(&notification(n)).unwrap();
        let data = serde_json::to_string_pretty(&value).unwrap();
        let mut frame = String::from("event: message\n");
        for line in data.lines() {
            frame.push_str("data: ");
            frame.push_str(line);
            frame.push('\n');
        }
        frame.push('\n');
        (frame, data.len())
    });

    let crlf = build("crlf", |n| {
        let (frame, data_len) = mcp600(n);
        (frame.replace('\n', "\r\n"), data_len)
    });
    vec![mcp, tiny, multiline, crlf]
}

fn chunks_of(stream: &Bytes, size: usize) -> Vec<Bytes> {
    (0..stream.len())
        .step_by(size)
        .map(|start| stream.slice(start..(start + size).min(stream.len())))
        .collect()
}

fn chunk_stream(chunks: &[Bytes]) -> impl Stream<Item = Result<Bytes, Infallible>> + '_ {
    futures::stream::iter(chunks.iter().cloned().map(Ok))
}

/// Polls a stream that is always ready to its end, folding each item.
fn drive<S: Stream>(stream: S, mut each: impl FnMut(S::Item)) {
    let mut stream = std::pin::pin!(stream);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        match Pin::as_mut(&mut stream).poll_next(&mut cx) {
            Poll::Ready(Some(item)) => each(item),
            Poll::Ready(None) => return,
            Poll::Pending => panic!("an in-memory stream never waits"),
        }
    }
}

/// (events, data bytes) decoded by `EventStream`.
fn sluice_stream(chunks: &[Bytes]) -> (usize, usize) {
    let mut totals = (0, 0);
    drive(EventStream::new(chunk_stream(chunks)), |event| {
        let event = event.unwrap();
        totals.0 += 1;
        totals.1 += event.data.len();
    });
    totals
}

fn sluice_buffered(chunks: &[Bytes], buf: &mut BytesMut) -> (usize, usize) {
    let mut decoder = Decoder::new();
    let mut totals = (0, 0);
    buf.clear();
    for chunk in chunks {
        buf.extend_from_slice(chunk);
        while let Some(event) = decoder.decode(buf).unwrap() {
            totals.0 += 1;
            totals.1 += event.data.len();
        }
    }
    totals
}

/// (events, data bytes) through the borrowed API over each chunk in place: a frame cut by the
/// chunk end is moved to `carry` and completed from the next chunk.
fn sluice_borrowed(chunks: &[Bytes], carry: &mut Vec<u8>) -> (usize, usize) {
    let mut decoder = Decoder::new();
    let mut totals = (0, 0);
    carry.clear();
    let mut count = |event: EventRef<'_>| {
        totals.0 += 1;
        totals.1 += event.data.len();
    };
    for chunk in chunks {
        let mut chunk: &[u8] = chunk;
        // Complete the carried frame line by line (the decoder resumes where it stopped), then
        // go on in place with the rest of the chunk.
        while !carry.is_empty() && !chunk.is_empty() {
            let line = memchr::memchr2(b'\n', b'\r', chunk).map_or(chunk.len(), |at| at + 1);
            carry.extend_from_slice(&chunk[..line]);
            chunk = &chunk[line..];
            let consumed = decoder.decode_slice(carry, &mut count).unwrap();
            carry.drain(..consumed);
        }
        if !carry.is_empty() {
            continue;
        }
        let consumed = decoder.decode_slice(chunk, &mut count).unwrap();
        carry.extend_from_slice(&chunk[consumed..]);
    }
    totals
}

fn sluice_borrowed_buffered(chunks: &[Bytes], buf: &mut BytesMut) -> (usize, usize) {
    let mut decoder = Decoder::new();
    let mut totals = (0, 0);
    buf.clear();
    for chunk in chunks {
        buf.extend_from_slice(chunk);
        decoder
            .decode_with(buf, |event| {
                totals.0 += 1;
                totals.1 += event.data.len();
            })
            .unwrap();
    }
    totals
}

/// Counts frame ends (`\n\n`, or `\r\n\r\n` for CRLF streams), including ones split across
/// chunks. The data length is not known to a scan, so it reports the expected one.
fn memchr_scan(chunks: &[Bytes], finder: &memchr::memmem::Finder<'_>) -> usize {
    let needle = finder.needle();
    let mut n_frames = 0;
    let mut carry = [0u8; 8];
    let mut carry_len = 0;
    for chunk in chunks {
        // A boundary split across chunks: join the last bytes of the previous chunk with the
        // first of this one.
        if carry_len > 0 {
            let mut joint = [0u8; 16];
            let head = &chunk[..chunk.len().min(needle.len() - 1)];
            joint[..carry_len].copy_from_slice(&carry[..carry_len]);
            joint[carry_len..carry_len + head.len()].copy_from_slice(head);
            n_frames += finder.find_iter(&joint[..carry_len + head.len()]).count();
        }
        n_frames += finder.find_iter(chunk).count();
        carry_len = (needle.len() - 1).min(chunk.len());
        carry[..carry_len].copy_from_slice(&chunk[chunk.len() - carry_len..]);
    }
    n_frames
}

fn sse_stream_02(chunks: &[Bytes]) -> (usize, usize) {
    let mut totals = (0, 0);
    drive(
        sse_stream_02::SseStream::from_bytes_stream(chunk_stream(chunks)),
        |event| {
            let event = event.unwrap();
            if let Some(data) = event.data {
                totals.0 += 1;
                totals.1 += data.len();
            }
        },
    );
    totals
}

fn sse_stream_03(chunks: &[Bytes]) -> (usize, usize) {
    let mut totals = (0, 0);
    drive(
        sse_stream_03::SseByteStream::new(chunk_stream(chunks)),
        |event| {
            let event = event.unwrap();
            if let Some(data) = event.data {
                totals.0 += 1;
                totals.1 += data.len();
            }
        },
    );
    totals
}

fn eventsource_stream(chunks: &[Bytes]) -> (usize, usize) {
    let mut totals = (0, 0);
    drive(chunk_stream(chunks).eventsource(), |event| {
        let event = event.unwrap();
        totals.0 += 1;
        totals.1 += event.data.len();
    });
    totals
}

/// Benchmarks `run` as `name`, checking its result before (always) and after (when criterion's
/// filter let it run) the measurement.
fn bench_checked<T: PartialEq + std::fmt::Debug>(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    param: &str,
    expected: T,
    mut run: impl FnMut() -> T,
) {
    assert_eq!(run(), expected, "{name} {param}");
    let mut result = None;
    group.bench_function(BenchmarkId::new(name, param), |b| {
        b.iter(|| result = Some(run()))
    });
    if let Some(result) = result {
        assert_eq!(result, expected, "{name} {param}");
    }
}

fn bench_decode(c: &mut Criterion) {
    let mut group = c.benchmark_group("sse_decode");
    for input in inputs() {
        let expected = (input.n_events, input.data_bytes);
        group.throughput(Throughput::Bytes(input.stream.len() as u64));
        let needle: &[u8] = if input.name == "crlf" {
            b"\r\n\r\n"
        } else {
            b"\n\n"
        };
        let finder = memchr::memmem::Finder::new(needle);
        for chunk_size in CHUNK_SIZES {
            let chunks = chunks_of(&input.stream, chunk_size);
            let param = format!("{}/{}KiB", input.name, chunk_size / 1024);

            let black_box = std::hint::black_box;
            bench_checked(&mut group, "sluice_stream", &param, expected, || {
                sluice_stream(black_box(&chunks))
            });
            let mut buf = BytesMut::with_capacity(2 * chunk_size);
            bench_checked(&mut group, "sluice_buffered", &param, expected, || {
                sluice_buffered(black_box(&chunks), &mut buf)
            });
            let mut carry = Vec::with_capacity(chunk_size);
            bench_checked(&mut group, "sluice_borrowed", &param, expected, || {
                sluice_borrowed(black_box(&chunks), &mut carry)
            });
            bench_checked(
                &mut group,
                "sluice_borrowed_buffered",
                &param,
                expected,
                || sluice_borrowed_buffered(black_box(&chunks), &mut buf),
            );
            bench_checked(&mut group, "memchr_scan", &param, input.n_events, || {
                memchr_scan(black_box(&chunks), &finder)
            });
            if chunk_size != PEER_CHUNK {
                continue;
            }
            bench_checked(&mut group, "sse_stream_02", &param, expected, || {
                sse_stream_02(black_box(&chunks))
            });
            bench_checked(&mut group, "sse_stream_03", &param, expected, || {
                sse_stream_03(black_box(&chunks))
            });
            bench_checked(&mut group, "eventsource_stream", &param, expected, || {
                eventsource_stream(black_box(&chunks))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench_decode);
criterion_main!(benches);
