//! Bench `jsonrpc_parse`: classify one JSON-RPC `tools/call` body with `method` and `id` in hand
//! and `params` reachable without re-parsing, for our `parse` and the alternatives it was chosen
//! against (serde_json to `Value`, the baseline; serde_json envelope with `&RawValue` params,
//! the strong baseline; simd-json borrowed value, serde envelope and tape variants).
//!
//! simd-json rewrites its input, so every variant copies the body into a reused buffer inside
//! the timed routine (the same copy for all, measured alone as `copy_only`).

use std::borrow::Cow;
use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use serde::Deserialize;
use serde_json::value::RawValue;
use simd_json::prelude::*;
use sluice::jsonrpc::{parse, Id, Message};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A typical `tools/call` as a client sends it (~300 bytes).
fn small_call() -> Vec<u8> {
    br#"{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"search_orders","arguments":{"customer_id":"C-001234","status":["open","shipped"],"created_after":"2025-01-01T00:00:00Z","limit":25,"include_lines":true,"query":"blue widget \"deluxe\" caf\u00e9"},"_meta":{"progressToken":"tok-42"}}}"#.to_vec()
}

/// A `tools/call` with large `arguments` (~50 KB: an array of records).
fn large_call() -> Vec<u8> {
    let mut records = String::new();
    let mut record_idx = 0;
    while records.len() < 50_000 {
        if record_idx > 0 {
            records.push(',');
        }
        records.push_str(&format!(
            r#"{{"id":{record_idx},"sku":"SKU-{record_idx:06}","name":"Widget number {record_idx}","tags":["alpha","beta","gamma"],"price":{}.{:02},"active":{},"note":"line one\nline \"two\" caf\u00e9"}}"#,
            record_idx * 3 % 1000,
            record_idx % 100,
            record_idx % 2 == 0
        ));
        record_idx += 1;
    }
    format!(
        r#"{{"jsonrpc":"2.0","id":"call-7","method":"tools/call","params":{{"name":"bulk_upsert","arguments":{{"records":[{records}]}}}}}}"#
    )
    .into_bytes()
}

/// serde_json's strong baseline: envelope fields typed, params left as raw JSON text.
#[derive(Deserialize)]
struct RawEnvelope<'a> {
    #[serde(borrow)]
    jsonrpc: Cow<'a, str>,
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    method: Cow<'a, str>,
    #[serde(borrow)]
    params: Option<&'a RawValue>,
}

/// simd-json serde envelope: params as a borrowed DOM.
#[derive(Deserialize)]
#[serde(bound(deserialize = "'a: 'de, 'de: 'a"))]
struct SimdEnvelope<'a> {
    jsonrpc: &'a str,
    id: Option<simd_json::BorrowedValue<'a>>,
    method: &'a str,
    params: Option<simd_json::BorrowedValue<'a>>,
}

/// What every variant reports: the method's length and whether params were reachable.
type Seen = (usize, bool);

fn ours(body: &mut [u8]) -> Seen {
    match parse(body) {
        Ok(Message::Request { method, params, id }) => {
            black_box(id);
            (method.len(), params.is_some())
        }
        _ => (0, false),
    }
}

fn serde_value(body: &[u8]) -> Seen {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(body) else {
        return (0, false);
    };
    let ok = value.get("jsonrpc").and_then(|v| v.as_str()) == Some("2.0");
    black_box(value.get("id"));
    let method = value.get("method").and_then(|m| m.as_str()).unwrap_or("");
    (method.len(), ok && value.get("params").is_some())
}

fn serde_raw(body: &[u8]) -> Seen {
    let Ok(env) = serde_json::from_slice::<RawEnvelope<'_>>(body) else {
        return (0, false);
    };
    black_box(env.id);
    (
        env.method.len(),
        env.jsonrpc == "2.0" && env.params.is_some(),
    )
}

fn simd_borrowed(body: &mut [u8], buffers: &mut simd_json::Buffers) -> Seen {
    let Ok(value) = simd_json::to_borrowed_value_with_buffers(body, buffers) else {
        return (0, false);
    };
    let ok = value.get_str("jsonrpc") == Some("2.0");
    black_box(value.get("id"));
    let method = value.get_str("method").unwrap_or("");
    (method.len(), ok && value.get("params").is_some())
}

fn simd_serde(body: &mut [u8], buffers: &mut simd_json::Buffers) -> Seen {
    let Ok(env) = simd_json::serde::from_slice_with_buffers::<SimdEnvelope<'_>>(body, buffers)
    else {
        return (0, false);
    };
    black_box(&env.id);
    (
        env.method.len(),
        env.jsonrpc == "2.0" && env.params.is_some(),
    )
}

fn simd_tape_fresh_buffers(body: &mut [u8]) -> Seen {
    let Ok(tape) = simd_json::to_tape(body) else {
        return (0, false);
    };
    let value = tape.as_value();
    let ok = value.get_str("jsonrpc") == Some("2.0");
    black_box(value.get("id"));
    let method = value.get_str("method").unwrap_or("");
    (method.len(), ok && value.get("params").is_some())
}

fn simd_tape_padded(
    padded: &mut [u8],
    len: usize,
    buffers: &mut simd_json::Buffers,
    tape_store: &mut simd_json::Tape<'static>,
) -> Seen {
    let mut tape = std::mem::replace(tape_store, simd_json::Tape(Vec::new())).reset();
    let seen = match simd_json::fill_tape_padded(padded, len, buffers, &mut tape) {
        Ok(()) => {
            let value = tape.as_value();
            let ok = value.get_str("jsonrpc") == Some("2.0");
            black_box(value.get("id"));
            let method = value.get_str("method").unwrap_or("");
            (method.len(), ok && value.get("params").is_some())
        }
        Err(_) => (0, false),
    };
    *tape_store = tape.reset();
    seen
}

fn bench_parse(c: &mut Criterion) {
    let mut group = c.benchmark_group("jsonrpc_parse");
    for (name, input) in [("small", small_call()), ("large", large_call())] {
        group.throughput(Throughput::Bytes(input.len() as u64));
        let mut body = input.clone();
        let mut buffers = simd_json::Buffers::new(input.len());
        let id = BenchmarkId::new("copy_only", name);
        group.bench_function(id, |b| {
            b.iter(|| {
                body.copy_from_slice(black_box(&input));
                black_box(body.len())
            })
        });

        group.bench_function(BenchmarkId::new("sluice_parse", name), |b| {
            b.iter(|| {
                body.copy_from_slice(black_box(&input));
                ours(&mut body)
            })
        });
        body.copy_from_slice(&input);
        assert_eq!(ours(&mut body), ("tools/call".len(), true));
        body.copy_from_slice(&input);
        let expected_id = if name == "small" {
            Id::Int(42)
        } else {
            Id::Str("call-7")
        };
        assert_eq!(
            parse(&mut body).ok().and_then(|m| m.id()),
            Some(expected_id)
        );

        group.bench_function(BenchmarkId::new("serde_json_value", name), |b| {
            b.iter(|| {
                body.copy_from_slice(black_box(&input));
                serde_value(&body)
            })
        });
        assert_eq!(serde_value(&input), ("tools/call".len(), true));

        group.bench_function(BenchmarkId::new("serde_json_raw_params", name), |b| {
            b.iter(|| {
                body.copy_from_slice(black_box(&input));
                serde_raw(&body)
            })
        });
        assert_eq!(serde_raw(&input), ("tools/call".len(), true));

        group.bench_function(BenchmarkId::new("simd_borrowed_value", name), |b| {
            b.iter(|| {
                body.copy_from_slice(black_box(&input));
                simd_borrowed(&mut body, &mut buffers)
            })
        });
        body.copy_from_slice(&input);
        assert_eq!(
            simd_borrowed(&mut body, &mut buffers),
            ("tools/call".len(), true)
        );

        group.bench_function(BenchmarkId::new("simd_serde_envelope", name), |b| {
            b.iter(|| {
                body.copy_from_slice(black_box(&input));
                simd_serde(&mut body, &mut buffers)
            })
        });
        body.copy_from_slice(&input);
        assert_eq!(
            simd_serde(&mut body, &mut buffers),
            ("tools/call".len(), true)
        );

        group.bench_function(BenchmarkId::new("simd_tape_fresh_buffers", name), |b| {
            b.iter(|| {
                body.copy_from_slice(black_box(&input));
                simd_tape_fresh_buffers(&mut body)
            })
        });
        body.copy_from_slice(&input);
        assert_eq!(
            simd_tape_fresh_buffers(&mut body),
            ("tools/call".len(), true)
        );

        // Tape into a caller-padded buffer, reusing the tape allocation: the floor for simd-json.
        let mut padded = input.clone();
        padded.resize(input.len() + simd_json::INPUT_PADDING, b' ');
        let mut tape_store: simd_json::Tape<'static> = simd_json::Tape(Vec::new());
        group.bench_function(BenchmarkId::new("simd_tape_padded_reused", name), |b| {
            b.iter(|| {
                padded[..input.len()].copy_from_slice(black_box(&input));
                simd_tape_padded(&mut padded, input.len(), &mut buffers, &mut tape_store)
            })
        });
        padded[..input.len()].copy_from_slice(&input);
        let seen = simd_tape_padded(&mut padded, input.len(), &mut buffers, &mut tape_store);
        assert_eq!(seen, ("tools/call".len(), true));
    }
    group.finish();
}

criterion_group!(benches, bench_parse);
criterion_main!(benches);
