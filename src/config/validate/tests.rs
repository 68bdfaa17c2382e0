//! Unit tests of `validate.rs` and its levels, over a compiler that finds no conflicts and
//! compiles every tool (the catalog's own compiler is tested with it in `catalog/compile.rs`).
use super::tenant::is_valid_id;
use super::tool::is_valid_tool_name;
use super::*;

/// A compiler with nothing to say: these tests check the file's meaning alone.
struct FileOnly;

impl ToolCompiler for FileOnly {
    type Plan = ();

    fn conflicts(&self, _: &[FieldRule], _: &[Option<FieldPath>]) -> Vec<(usize, String)> {
        Vec::new()
    }

    fn compile(&self, _: &Tool) -> Result<(), Vec<CompileProblem>> {
        Ok(())
    }
}

const BASE: &str = r#"
[[tenant]]
id = "acme"
auth = { anonymous = true }
[[tenant.client]]
id = "bot"
[[tenant.toolset]]
id = "crm"
"#;

/// Validates BASE + `extra` and compares the report lines.
fn check(extra: &str, expected: &[&str]) {
    let config = crate::config::parse(&format!("{BASE}{extra}"), "t").unwrap();
    let got = match validate(&config, &FileOnly) {
        Ok(_) => Vec::new(),
        Err(report) => report.problems.iter().map(ToString::to_string).collect(),
    };
    assert_eq!(got, expected);
}

const TOOL: &str = "[[tenant.toolset.tool]]\nname = \"t\"\ndownstream = { kind = \"rest\", method = \"GET\", url = \"http://h/x\" }\n";

#[test]
fn ids_and_names() {
    assert!(is_valid_id("a.b_c-9"));
    assert!(!is_valid_id(""));
    assert!(!is_valid_id("a/b"));
    assert!(!is_valid_id(&"a".repeat(65)));
    assert!(is_valid_tool_name(&"a".repeat(128)));
    assert!(!is_valid_tool_name(&"a".repeat(129)));
    assert!(!is_valid_tool_name("a b"));
}

#[test]
fn cluster_settings() {
    check(
        "[cluster]\nredis_url = \"redis://127.0.0.1:6379/0\"\nexpected_instances = 3\n",
        &[],
    );
    check(
        "[cluster]\nredis_url = \"http://user:secret@h\"\nkey_prefix = \"\"\n\
         expected_instances = 0\ncommand_timeout_ms = 0\nholder_ttl_secs = 2\n",
        &[
            "section 'cluster': redis_url must start with redis://, rediss://, redis+unix:// or unix://",
            "section 'cluster': key_prefix must not be empty",
            "section 'cluster': expected_instances must be at least 1",
            "section 'cluster': command_timeout_ms must be at least 1",
            "section 'cluster': holder_ttl_secs must be at least 3 (registrations are refreshed every third of it)",
        ],
    );
}

#[test]
fn allowed_hosts() {
    check(
        "[server]\nallowed_hosts = [\"mcp.example.com\", \"localhost:*\", \"[::1]:8080\"]\n",
        &[],
    );
    check("[server]\nallowed_hosts = [\"*\"]\n", &[]);
    check(
        "[server]\nallowed_hosts = [\"*\", \"a\", \"http://b\"]\n",
        &[
            "server 'allowed_hosts': allowed_hosts = [\"*\"] serves any Host: list nothing else with it",
            "server 'allowed_hosts': allowed_hosts entry 'http://b' is not host, host:port or host:* (IPv6 in brackets)",
        ],
    );
}

#[test]
fn connection_timeouts_must_not_be_zero() {
    check(
        "[server]\nheader_read_timeout_secs = 1\nidle_connection_secs = 1\nbody_read_timeout_secs = 1\n",
        &[],
    );
    check(
        "[server]\nidle_connection_secs = 0\nbody_read_timeout_secs = 0\n",
        &[
            "server 'idle_connection_secs': must be at least 1 (0 would close every connection at once)",
            "server 'body_read_timeout_secs': must be at least 1 (0 would close every connection at once)",
        ],
    );
}

#[test]
fn json_depth_and_downstream_answer_size_are_bounded() {
    let defaults = crate::config::ServerSettings::default();
    assert_eq!(defaults.max_json_depth, crate::jsonrpc::DEFAULT_MAX_DEPTH);
    assert_eq!(
        defaults.downstream_max_answer_bytes,
        crate::invoke::client::DEFAULT_MAX_RESPONSE_BYTES
    );
    check(
        "[server]\nmax_json_depth = 1024\ndownstream_max_answer_bytes = 1\n",
        &[],
    );
    check(
        "[server]\nmax_json_depth = 0\ndownstream_max_answer_bytes = 0\n",
        &[
            "server 'max_json_depth': must be between 1 and 1024",
            "server 'downstream_max_answer_bytes': must be between 1 and 1073741824",
        ],
    );
    check(
        "[server]\nmax_json_depth = 1025\ndownstream_max_answer_bytes = 1073741825\n",
        &[
            "server 'max_json_depth': must be between 1 and 1024",
            "server 'downstream_max_answer_bytes': must be between 1 and 1073741824",
        ],
    );
}

#[test]
fn the_caller_session_cap_fits_in_the_tenant_cap() {
    let server = |text: &str| format!("[server]\n{text}\n");
    check(&server("max_sessions_per_tenant = 5"), &[]);
    check(
        &server("max_sessions_per_tenant = 5\nmax_sessions_per_caller = 5"),
        &[],
    );
    check(
        &server("max_sessions_per_caller = 10001"),
        &["server 'max_sessions_per_caller': max_sessions_per_caller (10001) must not exceed max_sessions_per_tenant (10000)"],
    );
}

#[test]
fn valid_minimal() {
    check("", &[]);
    check(TOOL, &[]);
}

#[test]
fn field_rule_problems() {
    check(
        &format!("{TOOL}[[tenant.toolset.tool.input]]\nsource = \"a\"\nexposed = \"a\"\ntype = \"string\"\nitems = \"integer\"\n"),
        &["tenant 'acme' / toolset 'crm' / tool 't' / field 'a': 'items' is set but the type is 'string', not 'array'"],
    );
    check(
        &format!("{TOOL}[[tenant.toolset.tool.input]]\nsource = \"a\"\nexposed = \"a\"\ntype = \"integer\"\nenum = [1, \"x\", 2.5]\n"),
        &[
            "tenant 'acme' / toolset 'crm' / tool 't' / field 'a': enum value \"x\" is not of type 'integer'",
            "tenant 'acme' / toolset 'crm' / tool 't' / field 'a': enum value 2.5 is not of type 'integer'",
        ],
    );
    check(
        &format!("{TOOL}[[tenant.toolset.tool.output]]\nsource = \"a\"\nexposed = \"a..b\"\n"),
        &["tenant 'acme' / toolset 'crm' / tool 't' / output field 'a..b': exposed path 'a..b' is not a valid field path: empty segment at byte 2"],
    );
    check(
        &format!("{TOOL}[[tenant.toolset.tool.input]]\nsource = \"a\"\nexposed = \"_schema_discovery\"\n"),
        &["tenant 'acme' / toolset 'crm' / tool 't' / field '_schema_discovery': '_schema_discovery' is reserved for lazy schema discovery"],
    );
    check(
        &format!("{TOOL}[[tenant.toolset.tool.input]]\nsource = \"a\"\nexposed = \"a\"\nadditional_properties = 3\n"),
        &[
            "tenant 'acme' / toolset 'crm' / tool 't' / field 'a': 'additional_properties' needs an object field, but the value type is 'string'",
            "tenant 'acme' / toolset 'crm' / tool 't' / field 'a': 'additional_properties' must be a boolean or a table (a JSON Schema)",
        ],
    );
    check(
        &format!("{TOOL}[[tenant.toolset.tool.input]]\nsource = \"a\"\nexposed = \"{}\"\n", vec!["a"; 33].join(".")),
        &[&format!("tenant 'acme' / toolset 'crm' / tool 't' / field '{}': exposed path has more than 32 segments", vec!["a"; 33].join("."))],
    );
}

#[test]
fn reserved_meta_tool_name() {
    check(
        &TOOL.replace("\"t\"", "\"discover_tool_schema\""),
        &["tenant 'acme' / toolset 'crm' / tool 'discover_tool_schema': 'discover_tool_schema' is reserved for the schema discovery meta-tool"],
    );
}

const FEDERATED: &str = "[[tenant.toolset.tool]]\nname = \"people\"\n\
    [tenant.toolset.tool.downstream]\nkind = \"federated\"\nrecord_type = \"person\"\n";

fn source(identity: &str, extra: &str) -> String {
    format!(
        "[[tenant.toolset.tool.downstream.source]]\nsource_type = \"crm\"\n\
         source_identity = \"{identity}\"\nurl = \"http://p/{identity}\"\n{extra}"
    )
}

#[test]
fn federated_tools() {
    let good = format!(
        "{FEDERATED}{}{}[[tenant.toolset.tool.input]]\nsource = \"q\"\nexposed = \"q\"\n",
        source(
            "eu",
            "timeout_ms = 500\n[tenant.toolset.tool.downstream.source.fields]\nemail = \"mail\"\n"
        ),
        source("us", ""),
    );
    check(&good, &[]);
    let at = "tenant 'acme' / toolset 'crm' / tool 'people'";
    check(
        FEDERATED,
        &[&format!("{at}: a federated tool needs at least one source")],
    );
    check(
        &format!(
            "{FEDERATED}{}{}{}",
            source("eu", "timeout_ms = 0\n"),
            source(
                "eu",
                "credential = { header = \"bad header\", value = \"x\" }\n"
            ),
            source("xx", "").replace("http://p/xx", "ftp://p"),
        ),
        &[
            &format!("{at} / source 'eu': timeout_ms must be greater than zero"),
            &format!("{at} / source 'eu': duplicate source in this tool"),
            &format!("{at} / source 'eu': credential must be a valid header name and value"),
            &format!("{at} / source 'xx': url 'ftp://p' is not an http(s) URL"),
        ],
    );
}
