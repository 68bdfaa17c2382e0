//! Bench `soap_codec`: the SOAP codec of a tool call, without the network, against naive
//! baselines in the same group.
//!
//! * **read**: a ~2 KB answer (ten customer records as repeated elements with an attribute, a
//!   number and a boolean each) read into the exposed JSON result. sluice: the plan-guided
//!   streaming reader (`Invoker::read_soap`: namespace-aware events → source JSON → the one-walk
//!   translation). Baseline: quick-xml events → a generic `serde_json::Value` tree (attributes
//!   as `@name`, repeated elements as arrays) → walk to the records → re-shape each into the
//!   exposed record with typed values → serialize.
//! * **write**: the request envelope for eleven arguments (three scalars, an address object, a
//!   list of three tags and five order lines of three fields). sluice: `Invoker::prepare`
//!   (validation, the translation walk, the envelope written into one buffer). Baseline: the
//!   same arguments read from a `serde_json::Value` and the envelope assembled with `format!`
//!   per element and `str::replace` escaping.
//!
//! Run: `cargo bench --bench soap_codec`. Target (issue 18): sluice ≥ 3× its baseline in both.

mod common;

use std::hint::black_box;

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use http_body_util::BodyExt;
use quick_xml::events::Event;
use serde_json::{json, Map, Value};
use sluice::catalog::plan::ToolPlan;
use sluice::config::Tool;
use sluice::invoke::client::ResponseBody;
use sluice::invoke::{CallContext, CorrelationPolicy, Invoker, InvokerConfig};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The read side: ten records, the fields of each.
const READ_TOOL: &str = r#"
name = "list_customers"
[downstream]
kind = "soap"
url = "http://crm.example/soap"
operation = "{urn:crm}ListCustomers"
[[output]]
source = "ListCustomersResult/Customer[*]/@id"
exposed = "customers[*].id"
type = "integer"
[[output]]
source = "ListCustomersResult/Customer[*]/Name"
exposed = "customers[*].name"
[[output]]
source = "ListCustomersResult/Customer[*]/Email"
exposed = "customers[*].email"
[[output]]
source = "ListCustomersResult/Customer[*]/Phone"
exposed = "customers[*].phone"
[[output]]
source = "ListCustomersResult/Customer[*]/City"
exposed = "customers[*].city"
[[output]]
source = "ListCustomersResult/Customer[*]/Segment"
exposed = "customers[*].segment"
[[output]]
source = "ListCustomersResult/Customer[*]/Balance"
exposed = "customers[*].balance"
type = "number"
[[output]]
source = "ListCustomersResult/Customer[*]/Active"
exposed = "customers[*].active"
type = "boolean"
"#;

/// (XML element or `@attribute`, exposed name, type) of a record, for the baseline.
const RECORD: &[(&str, &str, &str)] = &[
    ("@id", "id", "integer"),
    ("Name", "name", "string"),
    ("Email", "email", "string"),
    ("Phone", "phone", "string"),
    ("City", "city", "string"),
    ("Segment", "segment", "string"),
    ("Balance", "balance", "number"),
    ("Active", "active", "boolean"),
];

/// The write side: eleven arguments, one of them a list of objects.
const WRITE_TOOL: &str = r#"
name = "place_order"
[downstream]
kind = "soap"
url = "http://orders.example/soap"
operation = "{urn:orders}PlaceOrder"
[[input]]
source = "CustomerId"
exposed = "customer_id"
type = "integer"
required = true
[[input]]
source = "Reference"
exposed = "reference"
[[input]]
source = "Note"
exposed = "note"
[[input]]
source = "Ship/Street"
exposed = "address.street"
[[input]]
source = "Ship/City"
exposed = "address.city"
[[input]]
source = "Ship/Zip"
exposed = "address.zip"
[[input]]
source = "Tags/Tag[*]"
exposed = "tags[*]"
[[input]]
source = "Lines/Line[*]/Sku"
exposed = "lines[*].sku"
[[input]]
source = "Lines/Line[*]/Qty"
exposed = "lines[*].qty"
type = "integer"
[[input]]
source = "Lines/Line[*]/Price"
exposed = "lines[*].price"
type = "number"
"#;

fn arguments() -> Value {
    json!({
        "customer_id": 4711,
        "reference": "PO-2026-12-03/17",
        "note": "leave at the door <back> & ring twice",
        "address": {"street": "Rua Augusta 100", "city": "Lisboa", "zip": "1100-053"},
        "tags": ["priority", "gift", "b2b"],
        "lines": (1..=5).map(|i| json!({"sku": format!("SKU-{i:04}"), "qty": i, "price": 9.25 + i as f64})).collect::<Vec<_>>(),
    })
}

fn plan(text: &str) -> ToolPlan {
    let tool: Tool = toml::from_str(text).expect("tool");
    ToolPlan::compile(&tool).expect("tool compiles")
}

// === baselines ===

/// quick-xml events into a generic tree: an element with neither attributes nor children is
/// its text; otherwise an object of `@attributes`, children (repeated names as arrays) and a
/// `#text`.
fn naive_tree(xml: &str) -> Value {
    let mut reader = quick_xml::Reader::from_str(xml);
    // (name, attributes and children, text) of each open element.
    let mut stack: Vec<(String, Map<String, Value>, String)> =
        vec![(String::new(), Map::new(), String::new())];
    loop {
        match reader.read_event().expect("xml") {
            Event::Start(start) => {
                let name = String::from_utf8_lossy(start.local_name().as_ref()).into_owned();
                let mut map = Map::new();
                for attr in start.attributes().flatten() {
                    let key = String::from_utf8_lossy(attr.key.local_name().as_ref()).into_owned();
                    let value = attr.unescape_value().expect("attr").into_owned();
                    map.insert(format!("@{key}"), Value::String(value));
                }
                stack.push((name, map, String::new()));
            }
            Event::Text(text) => {
                if let Some(top) = stack.last_mut() {
                    top.2.push_str(&text.decode().expect("text"));
                }
            }
            Event::GeneralRef(reference) => {
                if let Some(top) = stack.last_mut() {
                    top.2.push(match &*reference {
                        b"amp" => '&',
                        b"lt" => '<',
                        b"gt" => '>',
                        b"quot" => '"',
                        _ => '\'',
                    });
                }
            }
            Event::End(_) => {
                let (name, map, text) = stack.pop().expect("open element");
                let value = if map.is_empty() {
                    Value::String(text)
                } else {
                    Value::Object(map)
                };
                let parent = &mut stack.last_mut().expect("parent").1;
                match parent.get_mut(&name) {
                    Some(Value::Array(items)) => items.push(value),
                    Some(existing) => {
                        let first = existing.take();
                        *existing = Value::Array(vec![first, value]);
                    }
                    None => {
                        parent.insert(name, value);
                    }
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    Value::Object(stack.pop().expect("root").1)
}

/// The baseline read: the tree, then the records re-shaped with typed values.
fn naive_read(xml: &str) -> Vec<u8> {
    let tree = naive_tree(xml);
    let result = &tree["Envelope"]["Body"]["ListCustomersResponse"]["ListCustomersResult"];
    let records = match &result["Customer"] {
        Value::Array(items) => items.clone(),
        Value::Null => Vec::new(),
        one => vec![one.clone()],
    };
    let customers: Vec<Value> = records
        .iter()
        .map(|record| {
            let mut out = Map::new();
            for (from, to, ty) in RECORD {
                let Some(Value::String(text)) = record.get(*from) else {
                    continue;
                };
                let value = match *ty {
                    "integer" => text.parse::<i64>().map(Value::from).unwrap_or(json!(text)),
                    "number" => text.parse::<f64>().map(Value::from).unwrap_or(json!(text)),
                    "boolean" => Value::Bool(text == "true" || text == "1"),
                    _ => Value::String(text.clone()),
                };
                out.insert((*to).to_owned(), value);
            }
            Value::Object(out)
        })
        .collect();
    serde_json::to_vec(&json!({ "customers": customers })).expect("json")
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn scalar(value: &Value) -> String {
    match value {
        Value::String(s) => escape(s),
        other => other.to_string(),
    }
}

/// The baseline write: the envelope assembled with `format!`.
fn naive_write(args: &Value) -> String {
    let mut body = String::new();
    let field = |name: &str, value: Option<&Value>| {
        value.map_or(String::new(), |v| {
            format!("<tns:{name}>{}</tns:{name}>", scalar(v))
        })
    };
    body.push_str(&field("CustomerId", args.get("customer_id")));
    body.push_str(&field("Reference", args.get("reference")));
    body.push_str(&field("Note", args.get("note")));
    if let Some(address) = args.get("address") {
        body.push_str(&format!(
            "<tns:Ship>{}{}{}</tns:Ship>",
            field("Street", address.get("street")),
            field("City", address.get("city")),
            field("Zip", address.get("zip"))
        ));
    }
    if let Some(Value::Array(tags)) = args.get("tags") {
        let tags: String = tags.iter().map(|t| field("Tag", Some(t))).collect();
        body.push_str(&format!("<tns:Tags>{tags}</tns:Tags>"));
    }
    if let Some(Value::Array(lines)) = args.get("lines") {
        let lines: String = lines
            .iter()
            .map(|line| {
                format!(
                    "<tns:Line>{}{}{}</tns:Line>",
                    field("Sku", line.get("sku")),
                    field("Qty", line.get("qty")),
                    field("Price", line.get("price"))
                )
            })
            .collect();
        body.push_str(&format!("<tns:Lines>{lines}</tns:Lines>"));
    }
    format!(
        "<soapenv:Envelope xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\" \
         xmlns:tns=\"urn:orders\"><soapenv:Body><tns:PlaceOrder>{body}</tns:PlaceOrder>\
         </soapenv:Body></soapenv:Envelope>"
    )
}

// === the group ===

fn codec(c: &mut Criterion) {
    let invoker = Invoker::new(InvokerConfig::default());
    let read_plan = plan(READ_TOOL);
    let xml = common::soap::answer(10);
    let bytes = Bytes::from(xml.clone());

    // Both sides read the same records.
    let ours = invoker
        .read_soap(
            &read_plan,
            http::StatusCode::OK,
            ResponseBody::from_bytes(bytes.clone()),
        )
        .expect("sluice reads the answer");
    let ours: Value = serde_json::from_slice(&ours.body).expect("json");
    let theirs: Value = serde_json::from_slice(&naive_read(&xml)).expect("json");
    assert_eq!(ours, theirs, "the baseline reads the same result");

    let mut group = c.benchmark_group("soap_codec");
    group.throughput(Throughput::Bytes(xml.len() as u64));
    group.bench_function("read/sluice", |b| {
        b.iter(|| {
            let out = invoker
                .read_soap(
                    &read_plan,
                    http::StatusCode::OK,
                    ResponseBody::from_bytes(black_box(bytes.clone())),
                )
                .expect("read");
            black_box(out.body.len())
        })
    });
    // The floor both share: quick-xml's tokenizer alone (every event, nothing done with it).
    group.bench_function("read/floor_quick_xml_events", |b| {
        b.iter(|| {
            let mut reader = quick_xml::Reader::from_str(black_box(&xml));
            let mut n = 0usize;
            while !matches!(reader.read_event(), Ok(Event::Eof) | Err(_)) {
                n += 1;
            }
            black_box(n)
        })
    });
    group.bench_function("read/naive_quick_xml_serde_value", |b| {
        b.iter(|| black_box(naive_read(black_box(&xml)).len()))
    });

    let write_plan = plan(WRITE_TOOL);
    let args = arguments();
    let mut text = args.to_string().into_bytes();
    let borrowed = simd_json::to_borrowed_value(&mut text).expect("arguments");
    let policy = CorrelationPolicy::execution_id();
    let ctx = CallContext::new(None);
    let envelope = |request: http::Request<http_body_util::Full<Bytes>>| {
        futures::executor::block_on(request.into_body().collect())
            .expect("body")
            .to_bytes()
    };
    let written = envelope(
        invoker
            .prepare(&write_plan, &policy, &ctx, &borrowed)
            .expect("prepare"),
    );
    let naive = naive_write(&args);
    assert_eq!(
        std::str::from_utf8(&written).expect("utf-8").replace(
            " xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\"",
            ""
        ),
        naive,
        "the baseline writes the same envelope"
    );
    group.throughput(Throughput::Bytes(written.len() as u64));
    group.bench_function("write/sluice", |b| {
        b.iter(|| {
            let request = invoker
                .prepare(&write_plan, &policy, &ctx, black_box(&borrowed))
                .expect("prepare");
            black_box(request)
        })
    });
    group.bench_function("write/naive_format", |b| {
        b.iter(|| black_box(naive_write(black_box(&args)).len()))
    });
    group.finish();
}

criterion_group!(benches, codec);
criterion_main!(benches);
