//! Bench `invoke_translate`: argument validation + exposed→source translation + request building
//! (no network), and source→exposed response translation, for a 30-field tool with nested arrays
//! of objects (~5 elements each), against a naive baseline that clones a `serde_json::Value`
//! tree and moves each field from its path to the renamed path.
//!
//! Run: `cargo bench --bench invoke_translate`.

use std::hint::black_box;

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use http_body_util::BodyExt;
use serde_json::{Map, Value};
use sluice::catalog::plan::ToolPlan;
use sluice::config::Tool;
use sluice::config::{FieldPath, Segment};
use sluice::invoke::client::ResponseBody;
use sluice::invoke::{CallContext, CorrelationPolicy, Invoker, InvokerConfig};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// (source, exposed, type, location) of the 30 input fields.
const FIELDS: &[(&str, &str, &str, &str)] = &[
    ("clientId", "customerId", "string", "path"),
    ("lang", "locale", "string", "query"),
    ("dry", "dryRun", "boolean", "query"),
    ("X-Tenant-Tag", "tenantTag", "string", "header"),
    ("client.name", "customer.fullName", "string", "body"),
    ("client.mail", "customer.email", "string", "body"),
    ("client.tel", "customer.phone", "string", "body"),
    ("client.born", "customer.birthDate", "string", "body"),
    ("client.vip", "customer.vip", "boolean", "body"),
    ("client.rating", "customer.score", "number", "body"),
    ("remark", "note", "string", "body"),
    ("prio", "priority", "integer", "body"),
    (
        "client.addresses[*].line1",
        "customer.addresses[*].street",
        "string",
        "body",
    ),
    (
        "client.addresses[*].town",
        "customer.addresses[*].city",
        "string",
        "body",
    ),
    (
        "client.addresses[*].zip",
        "customer.addresses[*].postcode",
        "string",
        "body",
    ),
    (
        "client.addresses[*].cc",
        "customer.addresses[*].country",
        "string",
        "body",
    ),
    (
        "client.addresses[*].kind",
        "customer.addresses[*].type",
        "string",
        "body",
    ),
    ("purchases[*].ref", "orders[*].orderId", "string", "body"),
    ("purchases[*].amount", "orders[*].total", "number", "body"),
    ("purchases[*].cur", "orders[*].currency", "string", "body"),
    ("purchases[*].ts", "orders[*].placedAt", "string", "body"),
    (
        "purchases[*].items[*].article",
        "orders[*].lines[*].sku",
        "string",
        "body",
    ),
    (
        "purchases[*].items[*].count",
        "orders[*].lines[*].qty",
        "integer",
        "body",
    ),
    (
        "purchases[*].items[*].unit",
        "orders[*].lines[*].price",
        "number",
        "body",
    ),
    ("labels[*]", "tags[*]", "string", "body"),
    ("grid[*][*]", "matrix[*][*]", "integer", "body"),
    ("meta", "metadata", "object", "body"),
    ("people[*].n", "contacts[*].name", "string", "body"),
    ("people[*].r", "contacts[*].role", "string", "body"),
    ("people[*].e", "contacts[*].email", "string", "body"),
];

fn tool_toml() -> String {
    let mut text = String::from(
        "name = \"bench\"\n[downstream]\nkind = \"rest\"\nmethod = \"POST\"\n\
         url = \"https://api.example.com/v2/clients/{clientId}/update\"\n\
         headers = { \"X-Api-Key\" = \"k\" }\n",
    );
    for (source, exposed, ty, location) in FIELDS {
        text.push_str(&format!(
            "[[input]]\nsource = \"{source}\"\nexposed = \"{exposed}\"\ntype = \"{ty}\"\n\
             location = \"{location}\"\nrequired = {}\n",
            !exposed.contains('[') && *location != "query"
        ));
    }
    for (source, exposed, ty, location) in FIELDS {
        if *location == "body" {
            text.push_str(&format!(
                "[[output]]\nsource = \"{source}\"\nexposed = \"{exposed}\"\ntype = \"{ty}\"\n"
            ));
        }
    }
    text
}

fn arguments() -> String {
    let addresses: Vec<String> = (0..5)
        .map(|i| {
            format!(
                r#"{{"street":"{i} Long Street","city":"City {i}","postcode":"0{i}150","country":"NO","type":"home"}}"#
            )
        })
        .collect();
    let orders: Vec<String> = (0..5)
        .map(|i| {
            let lines: Vec<String> = (0..5)
                .map(|j| format!(r#"{{"sku":"SKU-{i}-{j}","qty":{j},"price":{j}.5}}"#))
                .collect();
            format!(
                r#"{{"orderId":"ord-{i}","total":1{i}9.95,"currency":"EUR","placedAt":"2025-01-0{}T10:00:00Z","lines":[{}]}}"#,
                i + 1,
                lines.join(",")
            )
        })
        .collect();
    let contacts: Vec<String> = (0..5)
        .map(|i| format!(r#"{{"name":"Person {i}","role":"buyer","email":"p{i}@example.com"}}"#))
        .collect();
    format!(
        r#"{{"customerId":"c-1029","locale":"nb-NO","dryRun":false,"tenantTag":"blue",
"customer":{{"fullName":"Ann Example","email":"ann@example.com","phone":"+47 555 01 234","birthDate":"1980-02-03","vip":true,"score":4.5,"addresses":[{}]}},
"note":"Deliver after 5pm, ring twice","priority":3,"orders":[{}],"tags":["a","b","c","d","e"],
"matrix":[[1,2,3,4,5],[6,7,8,9,10],[11,12,13,14,15],[16,17,18,19,20],[21,22,23,24,25]],
"metadata":{{"source":"crm","version":7,"flags":["x","y"]}},"contacts":[{}]}}"#,
        addresses.join(","),
        orders.join(","),
        contacts.join(",")
    )
}

// === the naive baseline ===

/// Naive rule: parsed paths and nothing else.
struct NaiveRule {
    from: FieldPath,
    to: FieldPath,
}

fn naive_rules(pairs: impl Iterator<Item = (&'static str, &'static str)>) -> Vec<NaiveRule> {
    pairs
        .map(|(from, to)| NaiveRule {
            from: FieldPath::parse(from).unwrap(),
            to: FieldPath::parse(to).unwrap(),
        })
        .collect()
}

/// Clones the value tree, then moves every field from its path to the renamed path, and
/// serializes the result.
fn naive_translate(input: &Value, rules: &[NaiveRule]) -> Vec<u8> {
    let mut work = input.clone();
    let mut out = Value::Object(Map::new());
    let mut found = Vec::new();
    for rule in rules {
        found.clear();
        collect(&mut work, rule.from.segments(), &mut Vec::new(), &mut found);
        for (indices, value) in found.drain(..) {
            insert(&mut out, rule.to.segments(), &indices, value);
        }
    }
    serde_json::to_vec(&out).unwrap()
}

fn collect(
    value: &mut Value,
    segments: &[Segment],
    indices: &mut Vec<usize>,
    found: &mut Vec<(Vec<usize>, Value)>,
) {
    match segments.first() {
        None => found.push((indices.clone(), value.take())),
        Some(Segment::Key(key)) => {
            if let Some(child) = value.get_mut(&**key) {
                collect(child, &segments[1..], indices, found);
            }
        }
        Some(Segment::Each) => {
            if let Value::Array(items) = value {
                for (i, item) in items.iter_mut().enumerate() {
                    indices.push(i);
                    collect(item, &segments[1..], indices, found);
                    indices.pop();
                }
            }
        }
    }
}

fn insert(out: &mut Value, segments: &[Segment], indices: &[usize], value: Value) {
    match segments.first() {
        None => *out = value,
        Some(Segment::Key(key)) => {
            if !out.is_object() {
                *out = Value::Object(Map::new());
            }
            if let Value::Object(map) = out {
                let child = map.entry(key.to_string()).or_insert(Value::Null);
                insert(child, &segments[1..], indices, value);
            }
        }
        Some(Segment::Each) => {
            if !out.is_array() {
                *out = Value::Array(Vec::new());
            }
            if let (Value::Array(items), Some((i, rest))) = (out, indices.split_first()) {
                while items.len() <= *i {
                    items.push(Value::Null);
                }
                insert(&mut items[*i], &segments[1..], rest, value);
            }
        }
    }
}

fn bench(c: &mut Criterion) {
    let tool: Tool = toml::from_str(&tool_toml()).unwrap();
    let plan = ToolPlan::compile(&tool).unwrap();
    let invoker = Invoker::new(InvokerConfig::default());
    let policy = CorrelationPolicy::execution_id();
    let ctx = CallContext::new(None);

    let args_text = arguments();
    let mut args_bytes = args_text.clone().into_bytes();
    let args_simd = simd_json::to_borrowed_value(&mut args_bytes).unwrap();
    let args_serde: Value = serde_json::from_str(&args_text).unwrap();
    let body_rules = naive_rules(
        FIELDS
            .iter()
            .filter(|f| f.3 == "body")
            .map(|(source, exposed, _, _)| (*exposed, *source)),
    );

    let mut group = c.benchmark_group("invoke_translate");

    // Request: validate + translate + build the request (URL, headers, JSON body).
    group.throughput(Throughput::Bytes(args_text.len() as u64));
    group.bench_with_input(
        BenchmarkId::new("request/sluice", "30-fields"),
        &args_simd,
        |b, args| {
            b.iter(|| {
                invoker
                    .prepare(&plan, &policy, &ctx, black_box(args))
                    .unwrap()
            })
        },
    );
    group.bench_with_input(
        BenchmarkId::new("request/naive-serde-value", "30-fields"),
        &args_serde,
        |b, args| b.iter(|| naive_translate(black_box(args), &body_rules)),
    );
    let request = invoker.prepare(&plan, &policy, &ctx, &args_simd).unwrap();
    assert_eq!(
        request.uri().to_string(),
        "https://api.example.com/v2/clients/c-1029/update?lang=nb-NO&dry=false"
    );
    assert_eq!(request.headers()["x-tenant-tag"], "blue");
    let ours = futures_body(request.into_body());
    let naive = naive_translate(&args_serde, &body_rules);
    assert_eq!(
        serde_json::from_slice::<Value>(&ours).unwrap(),
        serde_json::from_slice::<Value>(&naive).unwrap()
    );

    // Response: bytes in, translated bytes out (source → exposed).
    let response_bytes = Bytes::from(ours.to_vec());
    let out_rules = naive_rules(
        FIELDS
            .iter()
            .filter(|f| f.3 == "body")
            .map(|(source, exposed, _, _)| (*source, *exposed)),
    );
    group.throughput(Throughput::Bytes(response_bytes.len() as u64));
    group.bench_with_input(
        BenchmarkId::new("response/sluice", "30-fields"),
        &response_bytes,
        |b, body| {
            b.iter(|| {
                invoker
                    .translate_response(&plan, ResponseBody::from_bytes(black_box(body.clone())))
                    .unwrap()
            })
        },
    );
    group.bench_with_input(
        BenchmarkId::new("response/naive-serde-value", "30-fields"),
        &response_bytes,
        |b, body| {
            b.iter(|| {
                let value: Value = serde_json::from_slice(black_box(body)).unwrap();
                naive_translate(&value, &out_rules)
            })
        },
    );
    group.finish();

    let ours = invoker
        .translate_response(&plan, ResponseBody::from_bytes(response_bytes.clone()))
        .unwrap();
    let naive = naive_translate(
        &serde_json::from_slice(&response_bytes).unwrap(),
        &out_rules,
    );
    let ours_value: Value = serde_json::from_slice(&ours.body).unwrap();
    assert_eq!(ours_value, serde_json::from_slice::<Value>(&naive).unwrap());
    assert_eq!(ours_value["orders"][4]["lines"][4]["sku"], "SKU-4-4");
}

fn futures_body(body: http_body_util::Full<Bytes>) -> Bytes {
    futures::executor::block_on(body.collect())
        .unwrap()
        .to_bytes()
}

criterion_group!(benches, bench);
criterion_main!(benches);
