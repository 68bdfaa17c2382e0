//! Integration tests: catalog — loading, every validation problem class, visibility, prompts,
//! schema snapshots per mode, discovery, reload under concurrent readers, change signals.
//!
//! The catalog does no network IO, so these tests use files in a temporary directory and the
//! fixtures under `tests/fixtures/catalog/`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::BytesMut;
use serde_json::{json, Value};
use sluice::catalog::schema::sha256_hex;
use sluice::catalog::{self, Catalog, ClientKey, DiscoverError};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/catalog")
        .join(name)
}

/// A file in a fresh temporary directory, removed on drop.
struct TempConfig {
    dir: PathBuf,
    path: PathBuf,
}

impl TempConfig {
    fn new(tag: &str, text: &str) -> Self {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("sluice-catalog-{}-{tag}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("sluice.toml");
        let config = Self { dir, path };
        config.write(text);
        config
    }

    /// Replaces the file atomically (write + rename), as an operator's deploy would.
    fn write(&self, text: &str) {
        let tmp = self.dir.join("sluice.toml.tmp");
        std::fs::write(&tmp, text).unwrap();
        std::fs::rename(&tmp, &self.path).unwrap();
    }
}

impl Drop for TempConfig {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Runs `check` on a file and compares its verdict and output lines.
fn check_file(path: &Path, ok: bool, expected: &[&str]) {
    let mut out = Vec::new();
    let verdict = catalog::check(path, &mut out);
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines, expected, "{}", path.display());
    assert_eq!(verdict, ok);
}

fn listing(catalog: &Catalog, tenant: &str, client: &str) -> Value {
    let snapshot = catalog.current();
    let view = snapshot.client(tenant, client).unwrap();
    let mut out = BytesMut::new();
    view.write_tools_list(&mut out);
    serde_json::from_slice(&out).unwrap()
}

fn names(listing: &Value) -> Vec<&str> {
    listing
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect()
}

// === loading and validation ===

#[test]
fn valid_fixture_checks_ok() {
    check_file(&fixture("valid.toml"), true, &["ok: 2 tenants, 5 tools"]);
}

#[test]
fn syntax_errors_name_line_and_column() {
    let path = fixture("invalid_syntax.toml");
    check_file(
        &path,
        false,
        &[&format!(
            "file '{}' line 6, column 30: invalid basic string, expected `\"`",
            path.display()
        )],
    );
    let path = fixture("invalid_shape.toml");
    check_file(
        &path,
        false,
        &[&format!(
            "file '{}' line 10, column 15: unknown variant `eager`, expected one of `full`, `data-structure-only`, `lazy`",
            path.display()
        )],
    );
}

#[test]
fn missing_file_is_reported() {
    let mut out = Vec::new();
    assert!(!catalog::check(&fixture("no-such-file.toml"), &mut out));
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.starts_with("file '") && text.contains("no-such-file.toml"),
        "{text}"
    );
}

#[test]
fn every_problem_class_is_reported_with_its_location() {
    check_file(
        &fixture("invalid_many.toml"),
        false,
        &[
            "tenant 'acme' / client 'bot': duplicate client id",
            "tenant 'acme' / client 'bad/id': client id must be 1–64 characters from [A-Za-z0-9._-]",
            "tenant 'acme' / toolset 'crm' / tool 'get customer': tool name must be 1–128 characters from [A-Za-z0-9_.-]",
            "tenant 'acme' / toolset 'crm' / tool 'dup': duplicate tool name in this toolset",
            "tenant 'acme' / toolset 'crm' / tool 'fields' / field 'a..b': exposed path 'a..b' is not a valid field path: empty segment at byte 2",
            "tenant 'acme' / toolset 'crm' / tool 'fields' / field 'n': 'items' is set but the type is 'integer', not 'array'",
            "tenant 'acme' / toolset 'crm' / tool 'fields' / field 'kind': enum value \"two\" is not of type 'integer'",
            "tenant 'acme' / toolset 'crm' / tool 'fields' / field 'c': exposed path is used by another rule too",
            "tenant 'acme' / toolset 'crm' / tool 'fields' / field 'd': 'd' is a leaf here but an object in 'd.e'",
            "tenant 'acme' / toolset 'crm': duplicate toolset id",
            "tenant 'acme' / assignment '#3 (ghost → nowhere)': unknown client 'ghost'",
            "tenant 'acme' / assignment '#3 (ghost → nowhere)': unknown toolset 'nowhere'",
            "tenant 'acme' / toolset 'support' / tool 'shared': tool name is also published by toolset 'billing'; both are assigned to client 'bot'",
            "tenant 'acme': duplicate tenant id",
            "tenant 'this-tenant-id-is-far-too-long-to-be-a-path-segment-of-the-runtime-url': tenant id must be 1–64 characters from [A-Za-z0-9._-]",
        ],
    );
}

#[test]
fn name_clash_needs_a_shared_client_and_published_tools() {
    let base = r#"
[[tenant]]
id = "t"
auth = { anonymous = true }
[[tenant.client]]
id = "c1"
[[tenant.client]]
id = "c2"
[[tenant.toolset]]
id = "a"
[[tenant.toolset.tool]]
name = "same"
downstream = { kind = "rest", method = "GET", url = "http://h/" }
[[tenant.toolset]]
id = "b"
[[tenant.toolset.tool]]
name = "same"
PUBLISHED
downstream = { kind = "rest", method = "GET", url = "http://h/" }
[[tenant.assignment]]
client = "c1"
toolset = "a"
[[tenant.assignment]]
client = "SECOND"
toolset = "b"
"#;
    let cases = [
        ("c2", "", true),
        ("c1", "published = false", true),
        ("c1", "", false),
    ];
    for (second, published, ok) in cases {
        let text = base
            .replace("SECOND", second)
            .replace("PUBLISHED", published);
        let file = TempConfig::new("clash", &text);
        let mut out = Vec::new();
        assert_eq!(
            catalog::check(&file.path, &mut out),
            ok,
            "{second} {published}"
        );
    }
}

// === visibility and listings ===

#[test]
fn visibility_follows_publication_and_assignment() {
    let catalog = Catalog::load(&fixture("valid.toml")).unwrap();
    let snapshot = catalog.current();
    let visible = |t, c| -> Vec<String> {
        snapshot
            .client(t, c)
            .unwrap()
            .tools()
            .iter()
            .map(|tool| tool.name.to_string())
            .collect()
    };
    assert_eq!(
        visible("acme", "support-bot"),
        ["create_order", "get_customer"]
    );
    assert_eq!(
        visible("acme", "sales-agent"),
        ["create_order", "get_customer", "sales_report"]
    );
    assert!(visible("acme", "auditor").is_empty());
    assert_eq!(visible("globex", "ops.console"), ["list_stock"]);
    assert!(snapshot
        .tool("acme", "support-bot", "merge_customers")
        .is_none());
    assert!(snapshot
        .tool("acme", "support-bot", "sales_report")
        .is_none());
    assert!(snapshot.client("acme", "ops.console").is_none());
    assert!(snapshot.client("initech", "support-bot").is_none());

    let tool = snapshot
        .tool("acme", "sales-agent", "sales_report")
        .unwrap();
    assert_eq!(&*tool.toolset, "analytics");
    assert_eq!(tool.schema_version, 1);

    assert!(snapshot.needs_discovery("acme", "support-bot"));
    assert!(snapshot.needs_discovery("acme", "sales-agent"));
    assert!(!snapshot.needs_discovery("acme", "auditor"));
    assert!(!snapshot.needs_discovery("globex", "ops.console"));
    assert!(snapshot
        .client("acme", "auditor")
        .unwrap()
        .log_list_payloads());
    assert!(!snapshot
        .client("globex", "ops.console")
        .unwrap()
        .log_list_payloads());
}

#[test]
fn listings_match_the_schema_snapshots() {
    let catalog = Catalog::load(&fixture("valid.toml")).unwrap();
    for (tenant, client) in [("acme", "sales-agent"), ("globex", "ops.console")] {
        let expected: Value = serde_json::from_slice(
            &std::fs::read(fixture(&format!("valid.{tenant}.{client}.tools.json"))).unwrap(),
        )
        .unwrap();
        assert_eq!(
            listing(&catalog, tenant, client),
            expected,
            "{tenant}/{client}"
        );
    }
    assert_eq!(listing(&catalog, "acme", "auditor"), json!([]));
}

#[test]
fn listing_bytes_are_deterministic_and_sorted_by_name() {
    let first = Catalog::load(&fixture("valid.toml")).unwrap();
    let second = Catalog::load(&fixture("valid.toml")).unwrap();
    let bytes = |c: &Catalog| {
        let mut out = BytesMut::new();
        c.current()
            .client("acme", "sales-agent")
            .unwrap()
            .write_tools_list(&mut out);
        out
    };
    assert_eq!(bytes(&first), bytes(&second));
    assert_eq!(
        names(&listing(&first, "acme", "sales-agent")),
        [
            "create_order",
            "discover_tool_schema",
            "get_customer",
            "sales_report"
        ]
    );
    assert_eq!(
        first.current().fingerprint("acme", "sales-agent"),
        second.current().fingerprint("acme", "sales-agent")
    );
}

#[test]
fn full_schemas_of_structure_only_and_lazy_tools() {
    let catalog = Catalog::load(&fixture("valid.toml")).unwrap();
    let snapshot = catalog.current();
    let full = |name| -> Value {
        let tool = snapshot.tool("acme", "sales-agent", name).unwrap();
        serde_json::from_slice(&tool.schemas.input_full).unwrap()
    };
    assert_eq!(
        full("create_order"),
        json!({
            "type": "object",
            "properties": {
                "attributes": {"type": "object", "additionalProperties": {"type": "string"}},
                "customer": {
                    "type": "object",
                    "properties": {"id": {"type": "integer", "description": "Who orders"}},
                    "required": ["id"]
                },
                "lines": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "options": {
                                "type": "array",
                                "items": {"type": "object", "properties": {"code": {"type": "string"}}}
                            },
                            "quantity": {"type": "integer"},
                            "sku": {"type": "string", "description": "Article number"}
                        },
                        "required": ["sku"]
                    }
                },
                "tags": {"type": "array", "description": "Free tags", "items": {"type": "string"}}
            },
            "required": ["customer", "lines"]
        })
    );
    assert_eq!(
        full("sales_report"),
        json!({
            "type": "object",
            "properties": {
                "period": {
                    "type": "object",
                    "properties": {
                        "from": {"type": "string", "format": "date"},
                        "to": {"type": "string", "format": "date"}
                    },
                    "required": ["from"]
                },
                "regions": {"type": "array", "items": {"type": "string", "enum": ["north", "south"]}}
            },
            "required": ["period"]
        })
    );
}

// === prompts ===

#[test]
fn effective_prompts_of_the_fixture() {
    let catalog = Catalog::load(&fixture("valid.toml")).unwrap();
    let snapshot = catalog.current();
    let prompt = |t, c, s| {
        snapshot
            .client(t, c)
            .unwrap()
            .toolset(s)
            .unwrap()
            .prompt
            .as_deref()
            .map(str::to_owned)
    };
    assert_eq!(
        prompt("acme", "support-bot", "crm").as_deref(),
        Some("Use the CRM tools to look customers up before answering.\n\nYou are Acme's support assistant. Be brief.")
    );
    assert_eq!(
        prompt("acme", "sales-agent", "crm").as_deref(),
        Some("Use the CRM tools to look customers up before answering.\n\nAlways quote the order number.")
    );
    assert_eq!(
        prompt("acme", "sales-agent", "analytics").as_deref(),
        Some("Only discuss the sales team's own regions.")
    );
    assert_eq!(prompt("globex", "ops.console", "inventory"), None);
    let view = snapshot.client("acme", "support-bot").unwrap();
    assert!(view.toolset("analytics").is_none());
    assert_eq!(view.toolsets().len(), 1);
    assert_eq!(view.toolsets()[0].n_visible_tools, 2);
}

/// Every combination of include-client-prompt × custom none/append/override × default present or
/// absent, each as its own client of one tenant, resolved through a whole snapshot.
#[test]
fn prompt_composition_for_every_assignment_combination() {
    let mut text = String::from("[[tenant]]\nid = \"t\"\nauth = { anonymous = true }\n");
    let mut expected = Vec::new();
    let mut n = 0;
    for default in [Some("D"), None] {
        for include in [true, false] {
            for custom in ["none", "append", "override"] {
                n += 1;
                let client = format!("c{n}");
                let toolset = format!("s{n}");
                text += &format!("[[tenant.client]]\nid = \"{client}\"\nsystem_prompt = \"C\"\n");
                text += &format!("[[tenant.toolset]]\nid = \"{toolset}\"\n");
                if let Some(d) = default {
                    text += &format!("system_prompt = \"{d}\"\n");
                }
                text += &format!(
                    "[[tenant.assignment]]\nclient = \"{client}\"\ntoolset = \"{toolset}\"\ninclude_client_prompt = {include}\n"
                );
                if custom != "none" {
                    text += &format!("custom_prompt = \"X\"\ncustom_prompt_mode = \"{custom}\"\n");
                }
                let chain: Vec<&str> = [default, include.then_some("C")]
                    .into_iter()
                    .flatten()
                    .collect();
                let want = match custom {
                    "override" => Some("X".to_owned()),
                    "append" => Some(
                        chain
                            .iter()
                            .copied()
                            .chain(["X"])
                            .collect::<Vec<_>>()
                            .join("\n\n"),
                    ),
                    _ => (!chain.is_empty()).then(|| chain.join("\n\n")),
                };
                expected.push((client, toolset, want));
            }
        }
    }
    let file = TempConfig::new("prompts", &text);
    let catalog = Catalog::load(&file.path).unwrap();
    let snapshot = catalog.current();
    let got: Vec<Option<String>> = expected
        .iter()
        .map(|(c, s, _)| {
            snapshot
                .client("t", c)
                .unwrap()
                .toolset(s)
                .unwrap()
                .prompt
                .as_deref()
                .map(str::to_owned)
        })
        .collect();
    let want: Vec<Option<String>> = expected.iter().map(|(_, _, w)| w.clone()).collect();
    assert_eq!(got, want);
    // Spot-check the table itself so a mistake in the generator cannot hide a wrong result.
    assert_eq!(want[1].as_deref(), Some("D\n\nC\n\nX"));
    assert_eq!(want[9].as_deref(), None);
}

// === discovery ===

#[test]
fn discovery_returns_full_schemas_version_and_hash() {
    let catalog = Catalog::load(&fixture("valid.toml")).unwrap();
    let snapshot = catalog.current();
    let found = catalog::discover(&snapshot, "acme", "sales-agent", "sales_report").unwrap();
    let input: Value = serde_json::from_slice(found.input_schema()).unwrap();
    assert_eq!(input["properties"]["period"]["required"], json!(["from"]));
    assert!(input["properties"].get("_schema_discovery").is_none());
    let output: Value = serde_json::from_slice(found.output_schema().unwrap()).unwrap();
    assert_eq!(
        output["properties"]["rows"]["items"]["properties"]["months"]["items"]["properties"]
            ["total"],
        json!({"type": "number"})
    );
    assert_eq!(found.version(), 1);
    assert_eq!(found.hash(), sha256_hex(found.input_schema()));

    let answer: Value = serde_json::from_slice(&found.to_json()).unwrap();
    assert_eq!(answer["tool_id"], "sales_report");
    assert_eq!(answer["inputSchema"], input);
    assert_eq!(answer["outputSchema"], output);
    assert_eq!(answer["schemaVersion"], 1);
    assert_eq!(answer["schemaHash"], found.hash());

    let no_output = catalog::discover(&snapshot, "acme", "sales-agent", "create_order").unwrap();
    assert!(no_output.output_schema().is_none());
    let answer: Value = serde_json::from_slice(&no_output.to_json()).unwrap();
    assert!(answer.get("outputSchema").is_none());
}

#[test]
fn discovery_refuses_invisible_tools() {
    let catalog = Catalog::load(&fixture("valid.toml")).unwrap();
    let snapshot = catalog.current();
    let err = |t, c, name| catalog::discover(&snapshot, t, c, name).err();
    assert_eq!(
        err("acme", "sales-agent", "nope"),
        Some(DiscoverError::UnknownTool("nope".into()))
    );
    assert_eq!(
        err("acme", "sales-agent", "merge_customers"),
        Some(DiscoverError::UnknownTool("merge_customers".into()))
    );
    assert_eq!(
        err("acme", "support-bot", "sales_report"),
        Some(DiscoverError::UnknownTool("sales_report".into()))
    );
    assert_eq!(
        err("acme", "ghost", "sales_report"),
        Some(DiscoverError::UnknownClient {
            tenant: "acme".into(),
            client: "ghost".into()
        })
    );
}

// === reload ===

/// A configuration whose every part names generation `n`: tenant `t` with clients c0..c3, each
/// seeing tools `g{n}_a` and `g{n}_b` whose descriptions say `n`.
fn generation(n: usize) -> String {
    let mut text = String::from("[[tenant]]\nid = \"t\"\nauth = { anonymous = true }\n");
    for c in 0..4 {
        text += &format!("[[tenant.client]]\nid = \"c{c}\"\n");
        text += &format!("[[tenant.assignment]]\nclient = \"c{c}\"\ntoolset = \"s\"\n");
    }
    text += "[[tenant.toolset]]\nid = \"s\"\n";
    for suffix in ["a", "b"] {
        text += &format!(
            "[[tenant.toolset.tool]]\nname = \"g{n}_{suffix}\"\ndescription = \"{n}\"\ndownstream = {{ kind = \"rest\", method = \"GET\", url = \"http://h/\" }}\n"
        );
    }
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn readers_see_whole_snapshots_while_reloads_swap() {
    let file = TempConfig::new("swap", &generation(0));
    let catalog = Arc::new(Catalog::load(&file.path).unwrap());
    let done = Arc::new(AtomicBool::new(false));
    let mut readers = Vec::new();
    for _ in 0..16 {
        let catalog = catalog.clone();
        let done = done.clone();
        readers.push(tokio::spawn(async move {
            let mut last_version = 0;
            let mut n_reads = 0u64;
            let mut versions_seen = std::collections::BTreeSet::new();
            while !done.load(Ordering::Acquire) || n_reads == 0 {
                let snapshot = catalog.current();
                assert!(
                    snapshot.version() >= last_version,
                    "versions went backwards"
                );
                last_version = snapshot.version();
                // Whole: every client of this snapshot lists the same generation.
                let generation = (snapshot.version() - 1).to_string();
                for c in 0..4 {
                    let view = snapshot.client("t", &format!("c{c}")).unwrap();
                    let names: Vec<String> =
                        view.tools().iter().map(|t| t.name.to_string()).collect();
                    assert_eq!(
                        names,
                        [format!("g{generation}_a"), format!("g{generation}_b")]
                    );
                    assert!(view.tools().iter().all(|t| t.def.description == generation));
                }
                versions_seen.insert(snapshot.version());
                n_reads += 1;
                tokio::task::yield_now().await;
            }
            (n_reads, versions_seen.len())
        }));
    }
    let mut changes = catalog.subscribe();
    for n in 1..=40 {
        file.write(&generation(n));
        let outcome = catalog.reload().unwrap();
        assert_eq!(outcome.version, n as u64 + 1);
        assert_eq!(outcome.changed.len(), 4);
        let change = changes.recv().await.unwrap();
        assert_eq!(change.version, outcome.version);
        tokio::task::yield_now().await;
    }
    done.store(true, Ordering::Release);
    for reader in readers {
        let (n_reads, _) = reader.await.unwrap();
        assert!(n_reads > 0);
    }
    assert_eq!(catalog.current().version(), 41);
}

#[test]
fn failed_reload_keeps_the_old_snapshot() {
    let file = TempConfig::new("failed", &generation(0));
    let catalog = Catalog::load(&file.path).unwrap();
    let mut changes = catalog.subscribe();
    let before = catalog.current();

    file.write(&generation(1).replace("toolset = \"s\"", "toolset = \"missing\""));
    let report = catalog.reload().unwrap_err();
    assert_eq!(report.problems.len(), 4, "{report}");
    assert_eq!(
        report.problems[0].to_string(),
        "tenant 't' / assignment '#1 (c0 → missing)': unknown toolset 'missing'"
    );
    file.write("[[tenant]\n");
    let report = catalog.reload().unwrap_err();
    assert!(report.to_string().contains("line 1"), "{report}");

    let after = catalog.current();
    assert!(Arc::ptr_eq(&before, &after));
    assert!(after.tool("t", "c0", "g0_a").is_some());
    assert!(matches!(
        changes.try_recv(),
        Err(tokio::sync::broadcast::error::TryRecvError::Empty)
    ));

    file.write(&generation(1));
    assert_eq!(catalog.reload().unwrap().version, 2);
    assert!(catalog.current().tool("t", "c0", "g1_a").is_some());
}

const SIGNAL_BASE: &str = r#"
[[tenant]]
id = "t"
auth = { anonymous = true }
[[tenant.client]]
id = "c1"
[[tenant.client]]
id = "c2"
[[tenant.client]]
id = "c3"
[[tenant.toolset]]
id = "s1"
system_prompt = "P1"
[[tenant.toolset.tool]]
name = "one"
description = "D1"
downstream = { kind = "rest", method = "GET", url = "http://h/1" }
[[tenant.toolset]]
id = "s2"
[[tenant.toolset.tool]]
name = "two"
description = "D2"
downstream = { kind = "rest", method = "GET", url = "http://h/2" }
[[tenant.toolset.tool]]
name = "draft"
published = false
downstream = { kind = "rest", method = "GET", url = "http://h/3" }
[[tenant.assignment]]
client = "c1"
toolset = "s1"
[[tenant.assignment]]
client = "c2"
toolset = "s2"
[[tenant.assignment]]
client = "c3"
toolset = "s1"
[[tenant.assignment]]
client = "c3"
toolset = "s2"

[[tenant]]
id = "u"
auth = { anonymous = true }
[[tenant.client]]
id = "c1"
[[tenant.toolset]]
id = "s"
[[tenant.toolset.tool]]
name = "u_tool"
description = "DU"
downstream = { kind = "rest", method = "GET", url = "http://h/u" }
[[tenant.assignment]]
client = "c1"
toolset = "s"
"#;

#[tokio::test]
async fn change_signal_names_only_clients_whose_listing_changed() {
    let file = TempConfig::new("signal", SIGNAL_BASE);
    let catalog = Catalog::load(&file.path).unwrap();
    let mut changes = catalog.subscribe();
    let key = |t: &str, c: &str| ClientKey {
        tenant: t.into(),
        client: c.into(),
    };
    // (what changes, the text replaced, clients whose tools/list changed, clients whose exposed
    // prompts changed).
    let cases: [(&str, &str, Vec<ClientKey>, Vec<ClientKey>); 6] = [
        (
            "description of a tool in s2",
            "\"D2\"",
            vec![key("t", "c2"), key("t", "c3")],
            vec![],
        ),
        (
            "a prompt only",
            "\"P1\"",
            vec![],
            vec![key("t", "c1"), key("t", "c3")],
        ),
        ("the other tenant", "\"DU\"", vec![key("u", "c1")], vec![]),
        ("an unpublished tool", "\"http://h/3\"", vec![], vec![]),
        (
            "a tool in s1",
            "\"D1\"",
            vec![key("t", "c1"), key("t", "c3")],
            vec![],
        ),
        ("nothing", "\"no such text\"", vec![], vec![]),
    ];
    let mut text = SIGNAL_BASE.to_owned();
    for (n, (what, needle, expected, expected_prompts)) in cases.into_iter().enumerate() {
        text = text.replace(needle, &format!("{}-x\"", needle.trim_end_matches('"')));
        file.write(&text);
        let before = catalog.current();
        let outcome = catalog.reload().unwrap();
        assert_eq!(outcome.changed, expected, "{what}");
        let change = changes.recv().await.unwrap();
        assert_eq!(change.version, n as u64 + 2);
        assert_eq!(change.changed, expected, "{what}");
        assert_eq!(change.prompts_changed, expected_prompts, "{what}");
        let after = catalog.current();
        for (t, c) in [("t", "c1"), ("t", "c2"), ("t", "c3"), ("u", "c1")] {
            let moved = before.fingerprint(t, c) != after.fingerprint(t, c);
            assert_eq!(moved, expected.contains(&key(t, c)), "{what}: {t}/{c}");
        }
    }

    // Publishing the draft changes what c2 and c3 see; removing a client names it too.
    text = text.replace("published = false\n", "");
    file.write(&text);
    assert_eq!(
        catalog.reload().unwrap().changed,
        vec![key("t", "c2"), key("t", "c3")]
    );
    text = text.replacen(
        "[[tenant.client]]\nid = \"c1\"\n[[tenant.client]]",
        "[[tenant.client]]",
        1,
    );
    text = text.replacen(
        "[[tenant.assignment]]\nclient = \"c1\"\ntoolset = \"s1\"\n",
        "",
        1,
    );
    file.write(&text);
    assert_eq!(catalog.reload().unwrap().changed, vec![key("t", "c1")]);
}

#[test]
fn schema_version_moves_only_with_the_schema() {
    let file = TempConfig::new("version", SIGNAL_BASE);
    let catalog = Catalog::load(&file.path).unwrap();
    let version = |c: &Catalog, name| c.current().tool("t", "c3", name).unwrap().schema_version;
    let text = SIGNAL_BASE.replace("\"D1\"", "\"D1 changed\"");
    file.write(&text);
    catalog.reload().unwrap();
    assert_eq!(
        version(&catalog, "one"),
        1,
        "a description is not part of the schema"
    );
    let text = text.replace(
        "url = \"http://h/2\" }\n",
        "url = \"http://h/2\" }\n[[tenant.toolset.tool.input]]\nsource = \"q\"\nexposed = \"q\"\nlocation = \"query\"\n",
    );
    file.write(&text);
    catalog.reload().unwrap();
    assert_eq!(version(&catalog, "two"), 3);
    assert_eq!(version(&catalog, "one"), 1);
}
