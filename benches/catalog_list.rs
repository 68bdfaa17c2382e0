//! catalog_list: what `tools/list` costs when the snapshot has precomputed every entry, against
//! generating the same schemas and entries from scratch (what a per-request implementation pays).
//!
//! Input: one tenant, one client, 1,000 tools of ~10 input fields each (nested objects, arrays of
//! objects, nested arrays, scalar arrays, enums, additionalProperties) plus 2 output fields; a
//! third of the tools in each schema mode. Both functions run in the same group so the ratio comes
//! from one run.

use std::hint::black_box;

use bytes::BytesMut;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use sluice::catalog::{schema, Catalog};
use sluice::config::Config;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const N_TOOLS: usize = 1_000;

fn config_text(n_tools: usize) -> String {
    let mut text = String::from(
        "[[tenant]]\nid = \"bench\"\nauth = { anonymous = true }\n[[tenant.client]]\nid = \"agent\"\n[[tenant.toolset]]\nid = \"all\"\n\
         system_prompt = \"Bench toolset.\"\n[[tenant.assignment]]\nclient = \"agent\"\ntoolset = \"all\"\n",
    );
    let modes = ["full", "data-structure-only", "lazy"];
    for i in 0..n_tools {
        let mode = modes[i % modes.len()];
        text += &format!(
            "[[tenant.toolset.tool]]\nname = \"tool_{i:04}\"\ndescription = \"Operation number {i} of the bench API.\"\n\
             schema_mode = \"{mode}\"\ndownstream = {{ kind = \"rest\", method = \"POST\", url = \"http://api.internal/ops/{i}\" }}\n"
        );
        let inputs: [(&str, &str, &str); 10] = [
            (
                "id",
                "id",
                "type = \"integer\"\nrequired = true\ndescription = \"Record id\"",
            ),
            (
                "customer.name",
                "customer.name",
                "required = true\ndescription = \"Full name\"",
            ),
            ("customer.email", "customer.email", "format = \"email\""),
            (
                "customer.addr[*].city",
                "customer.addresses[*].city",
                "description = \"City\"",
            ),
            (
                "customer.addr[*].zip",
                "customer.addresses[*].postal_code",
                "",
            ),
            ("lines[*].sku", "order.lines[*].sku", "required = true"),
            (
                "lines[*].qty",
                "order.lines[*].quantity",
                "type = \"integer\"",
            ),
            (
                "tags[*]",
                "tags[*]",
                "enum = [\"new\", \"vip\", \"churned\"]",
            ),
            ("grid[*][*]", "grid[*][*]", "type = \"number\""),
            (
                "attrs",
                "attributes",
                "type = \"object\"\nadditional_properties = { type = \"string\" }",
            ),
        ];
        for (source, exposed, extra) in inputs {
            text += &format!("[[tenant.toolset.tool.input]]\nsource = \"{source}\"\nexposed = \"{exposed}\"\n{extra}\n");
        }
        text += "[[tenant.toolset.tool.output]]\nsource = \"status\"\nexposed = \"status\"\n\
                 [[tenant.toolset.tool.output]]\nsource = \"items[*].id\"\nexposed = \"items[*].id\"\ntype = \"integer\"\n";
    }
    text
}

fn bench_catalog_list(c: &mut Criterion) {
    let config: Config = toml::from_str(&config_text(N_TOOLS)).expect("bench config parses");
    let catalog = Catalog::from_config(&config).expect("bench config is valid");
    let snapshot = catalog.current();
    let client = snapshot
        .client("bench", "agent")
        .expect("bench client exists")
        .clone();
    let tools: Vec<_> = config.tenants[0].toolsets[0].tools.clone();
    assert_eq!(client.tools().len(), N_TOOLS);
    eprintln!(
        "catalog_list: listing of {N_TOOLS} tools is {} bytes",
        client.tools_list_len()
    );

    let mut group = c.benchmark_group("catalog_list");
    group.throughput(Throughput::Elements(N_TOOLS as u64));

    // (a) The listing as served: copy the precomputed entries into a reused buffer.
    let mut buf = BytesMut::with_capacity(client.tools_list_len());
    group.bench_with_input(
        BenchmarkId::new("list_from_snapshot", N_TOOLS),
        &client,
        |b, client| {
            b.iter(|| {
                buf.clear();
                client.write_tools_list(&mut buf);
                black_box(buf.len())
            })
        },
    );
    assert_eq!(buf.len(), client.tools_list_len());
    let listed: serde_json::Value = serde_json::from_slice(&buf).expect("listing is JSON");
    assert_eq!(listed.as_array().map(Vec::len), Some(N_TOOLS + 1)); // + discover_tool_schema

    // (b) Baseline: generate every schema and entry from scratch, as a per-request listing would.
    let mut n_bytes = 0;
    group.bench_with_input(
        BenchmarkId::new("generate_all_schemas", N_TOOLS),
        &tools,
        |b, tools| {
            b.iter(|| {
                n_bytes = 0;
                for tool in tools {
                    let schemas = schema::generate(tool).expect("valid tool");
                    let entry = schema::list_entry(
                        &tool.name,
                        &tool.description,
                        &schemas.input_listed,
                        schemas.output_listed.as_deref(),
                    );
                    n_bytes += entry.len();
                }
                black_box(n_bytes)
            })
        },
    );
    let meta_entry_len = client
        .list_entries()
        .iter()
        .find(|e| e.starts_with(b"{\"name\":\"discover_tool_schema\""))
        .map_or(0, |e| e.len());
    // The same entries as the snapshot's: bytes minus brackets, commas and the meta-tool entry.
    assert_eq!(
        n_bytes,
        client.tools_list_len() - 2 - N_TOOLS - meta_entry_len
    );
    group.finish();
}

criterion_group!(benches, bench_catalog_list);
criterion_main!(benches);
