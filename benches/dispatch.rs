//! dispatch: what `Dispatcher::request` costs for `tools/list` (20 tools) and `ping`, from an
//! already-parsed message to the `result` bytes, against a naive handler that does the same work
//! with `serde_json::Value` (params as a Value, tools held as Values, the result built as a Value
//! tree and serialized). Both in one group so the ratio comes from one run.
//!
//! Input: one tenant, one client, 20 tools in Full schema mode with 4 input fields each (a
//! nested object, an array, an integer) and 2 output fields; the request is
//! `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}` parsed once up front.

use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use serde_json::{json, Value};
use sluice::catalog::Snapshot;
use sluice::config::Config;
use sluice::invoke::{CallContext, Invoker, InvokerConfig};
use sluice::jsonrpc::{self, Message};
use sluice::mcp::{Dispatcher, DispatcherConfig, Era, Reply, Scope};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const N_TOOLS: usize = 20;

fn config_text() -> String {
    let mut text = String::from(
        "[[tenant]]\nid = \"bench\"\nauth = { anonymous = true }\n[[tenant.client]]\nid = \"agent\"\n[[tenant.toolset]]\nid = \"all\"\n\
         [[tenant.assignment]]\nclient = \"agent\"\ntoolset = \"all\"\n",
    );
    for i in 0..N_TOOLS {
        text += &format!(
            "[[tenant.toolset.tool]]\nname = \"tool_{i:02}\"\ndescription = \"Operation number {i} of the bench API.\"\n\
             downstream = {{ kind = \"rest\", method = \"POST\", url = \"http://api.internal/ops/{i}\" }}\n\
             [[tenant.toolset.tool.input]]\nsource = \"id\"\nexposed = \"id\"\ntype = \"integer\"\nrequired = true\ndescription = \"Record id\"\n\
             [[tenant.toolset.tool.input]]\nsource = \"customer.name\"\nexposed = \"customer.name\"\ndescription = \"Full name\"\n\
             [[tenant.toolset.tool.input]]\nsource = \"customer.email\"\nexposed = \"customer.email\"\nformat = \"email\"\n\
             [[tenant.toolset.tool.input]]\nsource = \"tags[*]\"\nexposed = \"tags[*]\"\n\
             [[tenant.toolset.tool.output]]\nsource = \"status\"\nexposed = \"status\"\n\
             [[tenant.toolset.tool.output]]\nsource = \"n\"\nexposed = \"count\"\ntype = \"integer\"\n"
        );
    }
    text
}

/// Polls a future that completes without waiting (every method here but `tools/call`), as the
/// transport's inline path does; no executor is involved.
fn ready<F: Future>(future: F) -> F::Output {
    let mut cx = Context::from_waker(Waker::noop());
    match pin!(future).poll(&mut cx) {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("the method waited"),
    }
}

/// The baseline: a method table over `serde_json::Value`, tools kept as parsed Values.
struct NaiveDispatcher {
    tools: Vec<Value>,
}

impl NaiveDispatcher {
    fn request(&self, method: &str, params: &Value) -> Result<Vec<u8>, i32> {
        let result = match method {
            "ping" => json!({}),
            "tools/list" => {
                if params.get("cursor").is_some_and(|c| !c.is_null()) {
                    return Err(-32602);
                }
                json!({ "tools": self.tools.clone() })
            }
            _ => return Err(-32601),
        };
        serde_json::to_vec(&result).map_err(|_| -32603)
    }
}

fn bench_dispatch(c: &mut Criterion) {
    let config: Config = toml::from_str(&config_text()).expect("bench config parses");
    let snapshot = Snapshot::build(&config, 1, None).expect("bench config is valid");
    let view = snapshot.client("bench", "agent").expect("bench client");
    assert_eq!(view.tools().len(), N_TOOLS);
    let dispatcher = Dispatcher::new(
        DispatcherConfig::default(),
        Arc::new(Invoker::new(InvokerConfig::default())),
    );
    let naive = NaiveDispatcher {
        tools: view
            .list_entries()
            .iter()
            .map(|entry| serde_json::from_slice(entry).expect("entry is JSON"))
            .collect(),
    };
    let ctx = CallContext::new(None);
    let caller = sluice::auth::Caller::anonymous("bench".into(), "agent".into());
    let scope = Scope::new(
        "bench",
        "agent",
        &snapshot,
        snapshot.client("bench", "agent"),
        (
            Era::Handshake,
            sluice::protocol::ProtocolVersion::V2025_11_25,
        ),
        &ctx,
        &caller,
    );

    let mut group = c.benchmark_group("dispatch");
    for method in ["tools/list", "ping"] {
        let text = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{{}}}}"#);
        let mut body = text.clone().into_bytes();
        let Ok(Message::Request { method, params, .. }) = jsonrpc::parse(&mut body) else {
            panic!("bench request parses");
        };
        let naive_params: Value =
            serde_json::from_str::<Value>(&text).expect("JSON")["params"].clone();
        let input = if method == "tools/list" {
            format!("tools_list_{N_TOOLS}")
        } else {
            method.to_owned()
        };
        group.throughput(Throughput::Elements(1));
        eprintln!(
            "dispatch: request future is {} bytes",
            std::mem::size_of_val(&dispatcher.request(&scope, method, params.as_ref()))
        );

        let mut sluice_out = bytes::Bytes::new();
        group.bench_function(BenchmarkId::new("dispatcher", &input), |b| {
            b.iter(|| {
                let reply = ready(dispatcher.request(&scope, black_box(method), params.as_ref()));
                let Ok(Reply::Result(bytes)) = reply else {
                    panic!("{method} failed");
                };
                let n = bytes.len();
                sluice_out = bytes;
                black_box(n)
            })
        });

        let mut naive_out = Vec::new();
        group.bench_function(BenchmarkId::new("naive_value", &input), |b| {
            b.iter(|| {
                let bytes = naive
                    .request(black_box(method), &naive_params)
                    .expect("naive handler");
                let n = bytes.len();
                naive_out = bytes;
                black_box(n)
            })
        });

        // Same JSON from both, so neither measured the wrong thing.
        let ours: Value = serde_json::from_slice(&sluice_out).expect("dispatcher result is JSON");
        let theirs: Value = serde_json::from_slice(&naive_out).expect("naive result is JSON");
        assert_eq!(ours, theirs, "{method}");
        if method == "tools/list" {
            assert_eq!(ours["tools"].as_array().map(Vec::len), Some(N_TOOLS));
            eprintln!("dispatch: tools/list result is {} bytes", sluice_out.len());
        }
    }
    group.finish();
}

criterion_group!(benches, bench_dispatch);
criterion_main!(benches);
