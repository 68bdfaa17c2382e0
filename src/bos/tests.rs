//! Tests of the `bos` module as a whole: configuration, resolution, the platform tools'
//! definitions, argument parsing and results, and the identity envelope against the contract's
//! final frame (the published `bos/source-results/v1` contract §5).

use bytes::BytesMut;
use proptest::prelude::*;
use serde_json::{json, Value};

use super::tools::{definitions, write_list_contexts, write_list_tools_entries};
use super::*;

const SECRET: &[u8] = b"a test secret of thirty-two bytes";

/// The contract's final `bos_execute` frame (its §5), the `data:` line verbatim.
const CONTRACT_FINAL_FRAME: &str = r##"{"jsonrpc":"2.0","id":"search-1","result":{"content":[{"type":"text","text":"{\"contract_version\": \"bos-identity-mcp/v2\", \"context\": {\"context_handle\": \"DISCOVERED_CONTEXT_HANDLE\", \"organization_name\": \"Example Organization\", \"application_name\": \"Example Application\", \"installation_name\": \"Example Installation\", \"role_label\": \"Example Role\", \"is_default\": true}, \"result\": {\"result\": [{\"record_ref\": \"bos:person:demo-1\", \"display_name\": \"Example Person\", \"email\": null, \"phone\": null, \"lifecycle\": null, \"sources\": [{\"source_type\": \"example\", \"source_identity\": \"demo-source\", \"external_id\": \"demo-1\", \"record_type\": \"person\", \"observed_at\": \"2026-10-08T12:00:00Z\", \"capabilities\": [\"read\"], \"version\": null}], \"identity_match\": null, \"attributes\": {}}], \"metadata\": {\"retrieval_mode\": \"live_provider\", \"cache_baseline_applied\": false, \"source_delta_applied\": false, \"completeness\": \"partial\", \"result_count\": 1, \"observed_at\": \"2026-10-08T12:00:00+00:00\", \"provenance\": [{\"source_type\": \"example\", \"source_identity\": \"demo-source\", \"observed_at\": \"2026-10-08T12:00:00+00:00\"}], \"source_errors\": [{\"source\": {\"source_type\": \"example\", \"source_identity\": \"other-demo-source\"}, \"error\": {\"code\": \"source_timeout\"}}]}}}"}],"structuredContent":{"contract_version":"bos-identity-mcp/v2","context":{"context_handle":"DISCOVERED_CONTEXT_HANDLE","organization_name":"Example Organization","application_name":"Example Application","installation_name":"Example Installation","role_label":"Example Role","is_default":true},"result":{"result":[{"record_ref":"bos:person:demo-1","display_name":"Example Person","email":null,"phone":null,"lifecycle":null,"sources":[{"source_type":"example","source_identity":"demo-source","external_id":"demo-1","record_type":"person","observed_at":"2026-10-08T12:00:00Z","capabilities":["read"],"version":null}],"identity_match":null,"attributes":{}}],"metadata":{"retrieval_mode":"live_provider","cache_baseline_applied":false,"source_delta_applied":false,"completeness":"partial","result_count":1,"observed_at":"2026-10-08T12:00:00+00:00","provenance":[{"source_type":"example","source_identity":"demo-source","observed_at":"2026-10-08T12:00:00+00:00"}],"source_errors":[{"source":{"source_type":"example","source_identity":"other-demo-source"},"error":{"code":"source_timeout"}}]}}},"isError":true,"_meta":{"bos/context":{"context_handle":"DISCOVERED_CONTEXT_HANDLE","organization_name":"Example Organization","application_name":"Example Application","installation_name":"Example Installation","role_label":"Example Role","is_default":true}}}}"##;

fn config(id: &str, caller: &str, is_default: bool) -> BosContextConfig {
    BosContextConfig {
        id: id.to_owned(),
        caller: caller.to_owned(),
        client: "crm".to_owned(),
        application_name: "Example Application".to_owned(),
        installation_name: "Example Installation".to_owned(),
        role_label: "Example Role".to_owned(),
        is_default,
    }
}

fn contexts(configs: &[BosContextConfig]) -> Result<BosContexts, ContextError> {
    BosContexts::build("acme", configs, |client| client == "crm")
}

fn parse(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).unwrap_or_else(|err| {
        panic!("{err}: {}", String::from_utf8_lossy(bytes));
    })
}

// === context.rs ===

#[test]
fn config_parses_from_toml_and_refuses_unknown_fields() {
    #[derive(serde::Deserialize)]
    struct Tenant {
        #[serde(rename = "bos_context")]
        bos_contexts: Vec<BosContextConfig>,
    }
    let text = r#"
        [[bos_context]]
        id = "ops"
        caller = "apikey:demo"
        client = "crm"
        application_name = "A"
        installation_name = "I"
        role_label = "R"
        is_default = true

        [[bos_context]]
        id = "audit"
        caller = "jwt:https://idp.example.com|user-1"
        client = "crm"
        application_name = "A"
        installation_name = "I"
        role_label = "R"
    "#;
    let tenant: Tenant = toml::from_str(text).unwrap();
    assert_eq!(tenant.bos_contexts.len(), 2);
    assert!(tenant.bos_contexts[0].is_default);
    assert!(!tenant.bos_contexts[1].is_default);
    assert_eq!(
        tenant.bos_contexts[1].caller,
        "jwt:https://idp.example.com|user-1"
    );

    let unknown = format!("{text}\nrole = \"x\"\n");
    assert!(toml::from_str::<Tenant>(&unknown).is_err());
}

#[test]
fn validation() {
    let ok = contexts(&[
        config("ops", "apikey:a", true),
        config("audit", "apikey:a", false),
        config("ops-b", "apikey:b", true),
    ])
    .unwrap();
    assert_eq!(ok.tenant(), "acme");
    assert_eq!(ok.all().len(), 3);

    let check = |configs: &[BosContextConfig], expected: ContextError| {
        assert_eq!(contexts(configs), Err(expected));
    };
    check(
        &[
            config("ops", "apikey:a", false),
            config("ops", "apikey:b", false),
        ],
        ContextError::DuplicateId {
            tenant: "acme".into(),
            id: "ops".into(),
        },
    );
    check(
        &[
            config("ops", "apikey:a", true),
            config("audit", "apikey:a", true),
        ],
        ContextError::SeveralDefaults {
            tenant: "acme".into(),
            caller: "apikey:a".into(),
        },
    );
    for bad_id in ["", "a b", "é", "a/b", &"x".repeat(65)] {
        check(
            &[config(bad_id, "apikey:a", false)],
            ContextError::InvalidId {
                tenant: "acme".into(),
                id: bad_id.into(),
            },
        );
    }
    let mut empty_role = config("ops", "apikey:a", false);
    empty_role.role_label.clear();
    check(
        &[empty_role],
        ContextError::EmptyField {
            tenant: "acme".into(),
            id: "ops".into(),
            field: "role_label",
        },
    );
    let mut empty_caller = config("ops", "", false);
    empty_caller.caller.clear();
    check(
        &[empty_caller],
        ContextError::EmptyField {
            tenant: "acme".into(),
            id: "ops".into(),
            field: "caller",
        },
    );
    let mut other_client = config("ops", "apikey:a", false);
    other_client.client = "billing".into();
    check(
        &[other_client],
        ContextError::UnknownClient {
            tenant: "acme".into(),
            id: "ops".into(),
            client: "billing".into(),
        },
    );
}

#[test]
fn lookups_are_per_caller() {
    let set = contexts(&[
        config("ops", "apikey:a", false),
        config("audit", "apikey:a", true),
        config("other", "apikey:b", false),
    ])
    .unwrap();
    let ids: Vec<&str> = set.for_caller("apikey:a").map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["ops", "audit"]);
    assert_eq!(
        set.get("other", "apikey:b").map(|c| c.id.as_str()),
        Some("other")
    );
    assert_eq!(set.get("other", "apikey:a"), None);
    assert_eq!(set.get("missing", "apikey:a"), None);
    assert_eq!(
        set.default_for("apikey:a").map(|c| c.id.as_str()),
        Some("audit")
    );
    assert_eq!(set.default_for("apikey:b"), None);
    assert_eq!(set.for_caller("apikey:c").count(), 0);
}

#[test]
fn public_json_names_exactly_the_public_fields() {
    let mut cfg = config("ops", "apikey:secret-caller", true);
    cfg.application_name = "App \"quoted\" \\ \u{1} é".into();
    let set = contexts(&[cfg]).unwrap();
    let context = &set.all()[0];
    assert_eq!(context.organization_name.as_ref(), "acme");
    let bytes = context.public_json("bch_x.y");
    assert_eq!(
        parse(&bytes),
        json!({
            "context_handle": "bch_x.y",
            "organization_name": "acme",
            "application_name": "App \"quoted\" \\ \u{1} é",
            "installation_name": "Example Installation",
            "role_label": "Example Role",
            "is_default": true
        })
    );
    let text = std::str::from_utf8(&bytes).unwrap();
    assert!(!text.contains("secret-caller") && !text.contains("\"ops\""));
    assert!(text.starts_with(r#"{"context_handle":"bch_x.y","organization_name":"acme","#));
}

// === resolve ===

#[test]
fn resolve_checks_signature_tenant_and_current_assignment() {
    let key = HandleKey::new(SECRET);
    let set = contexts(&[
        config("ops", "apikey:a", true),
        config("b-ops", "apikey:b", false),
    ])
    .unwrap();

    let handle = key.issue("acme", "ops", "apikey:a");
    assert_eq!(
        resolve(&key, &set, &handle, "apikey:a").map(|c| c.id.as_str()),
        Ok("ops")
    );
    // Another caller: the same refusal as a context that does not exist.
    assert_eq!(
        resolve(&key, &set, &handle, "apikey:b"),
        Err(HandleError::UnknownContext)
    );
    // Another tenant's handle.
    let elsewhere = key.issue("globex", "ops", "apikey:a");
    assert_eq!(
        resolve(&key, &set, &elsewhere, "apikey:a"),
        Err(HandleError::UnknownContext)
    );
    // A signed handle for a context that was removed, or reassigned to another caller.
    let removed = key.issue("acme", "gone", "apikey:a");
    assert_eq!(
        resolve(&key, &set, &removed, "apikey:a"),
        Err(HandleError::UnknownContext)
    );
    let reassigned = key.issue("acme", "b-ops", "apikey:a");
    assert_eq!(
        resolve(&key, &set, &reassigned, "apikey:a"),
        Err(HandleError::UnknownContext)
    );
    // Garbage.
    assert_eq!(
        resolve(&key, &set, "nope", "apikey:a"),
        Err(HandleError::Malformed)
    );
}

// === tools.rs: definitions ===

#[test]
fn definitions_are_tools_list_entries_with_object_schemas() {
    let defs = definitions();
    let names: Vec<String> = defs
        .iter()
        .map(|d| parse(d.as_bytes())["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        names,
        ["bos_execute", "bos_list_contexts", "bos_list_tools"]
    );

    for (def, required) in defs.iter().zip([
        &["context_handle", "tool_name", "arguments"][..],
        &[][..],
        &["context_handle"][..],
    ]) {
        let def = parse(def.as_bytes());
        let name = def["name"].as_str().unwrap();
        assert_eq!(BosTool::from_name(name).map(BosTool::name), Some(name));
        assert!(
            def["description"].as_str().is_some_and(|d| !d.is_empty()),
            "{name}"
        );
        let schema = &def["inputSchema"];
        assert_eq!(schema["type"], "object", "{name}");
        assert_eq!(schema["additionalProperties"], false, "{name}");
        let properties = schema["properties"].as_object().unwrap();
        let listed: Vec<&str> = schema["required"]
            .as_array()
            .map(|r| r.iter().map(|v| v.as_str().unwrap()).collect())
            .unwrap_or_default();
        assert_eq!(listed, required, "{name}");
        assert_eq!(properties.len(), required.len(), "{name}");
        for member in required {
            let property = &properties[*member];
            let expected = if *member == "arguments" {
                "object"
            } else {
                "string"
            };
            assert_eq!(property["type"], expected, "{name}.{member}");
            assert!(property["description"].is_string(), "{name}.{member}");
        }
        assert!(def["annotations"].is_object());
    }
    assert_eq!(BosTool::from_name("bos_other"), None);
}

// === tools.rs: argument parsing ===

/// A parsed call as owned values: `(tool, handle, tool_name, inner arguments)`.
type Summary = (BosTool, Option<String>, Option<String>, Option<Value>);

/// Parses `args` (JSON text; "" for absent) for `name` through both value kinds and checks they
/// agree; returns the result as `(tool, handle, tool_name, inner arguments as JSON)`.
fn check_args(name: &str, args: &str) -> Result<Summary, ArgsError> {
    let serde_value: Option<Value> =
        (!args.is_empty()).then(|| serde_json::from_str(args).unwrap());
    let from_serde =
        parse_call(name, serde_value.as_ref()).map(|call| summarize(&call, |v| (*v).clone()));

    let mut bytes = args.as_bytes().to_vec();
    let tape = (!args.is_empty()).then(|| simd_json::to_tape(&mut bytes).unwrap());
    let from_tape = parse_call(name, tape.as_ref().map(|t| t.as_value())).map(|call| {
        summarize(&call, |v| {
            let mut text = Vec::new();
            simd_json::prelude::Writable::write(v, &mut text).unwrap();
            serde_json::from_slice(&text).unwrap()
        })
    });
    assert_eq!(from_serde, from_tape, "{name} {args}");
    from_serde
}

fn summarize<V: Copy>(call: &BosCall<'_, V>, to_json: impl Fn(&V) -> Value) -> Summary {
    match call {
        BosCall::Execute {
            context_handle,
            tool_name,
            arguments,
        } => (
            call.tool(),
            Some((*context_handle).to_owned()),
            Some((*tool_name).to_owned()),
            Some(to_json(arguments)),
        ),
        _ => (
            call.tool(),
            call.context_handle().map(str::to_owned),
            None,
            None,
        ),
    }
}

#[test]
fn arguments_parse() {
    use BosTool::*;
    assert_eq!(
        check_args("bos_list_contexts", ""),
        Ok((ListContexts, None, None, None))
    );
    assert_eq!(
        check_args("bos_list_contexts", "null"),
        Ok((ListContexts, None, None, None))
    );
    assert_eq!(
        check_args("bos_list_contexts", "{}"),
        Ok((ListContexts, None, None, None))
    );
    assert_eq!(
        check_args("bos_list_tools", r#"{"context_handle":"bch_a.b"}"#),
        Ok((ListTools, Some("bch_a.b".into()), None, None))
    );
    assert_eq!(
        check_args(
            "bos_execute",
            r#"{"context_handle":"h","tool_name":"search_people","arguments":{"q":"é\"","n":[1,{"x":null}]}}"#
        ),
        Ok((
            Execute,
            Some("h".into()),
            Some("search_people".into()),
            Some(json!({"q": "é\"", "n": [1, {"x": null}]}))
        ))
    );
    assert_eq!(
        check_args(
            "bos_execute",
            r#"{"context_handle":"h","tool_name":"t","arguments":{}}"#
        ),
        Ok((Execute, Some("h".into()), Some("t".into()), Some(json!({}))))
    );
}

#[test]
fn argument_errors() {
    let check = |name: &str, args: &str, expected: ArgsError, message: &str| {
        let err = check_args(name, args).unwrap_err();
        assert_eq!(err, expected, "{name} {args}");
        assert_eq!(err.to_string(), message);
        assert_eq!(err.code(), crate::jsonrpc::ErrorCode::INVALID_PARAMS);
    };
    check(
        "bos_nope",
        "{}",
        ArgsError::UnknownTool("bos_nope".into()),
        "Unknown tool: bos_nope",
    );
    check(
        "bos_list_contexts",
        "[]",
        ArgsError::NotAnObject,
        "arguments must be an object",
    );
    check(
        "bos_list_tools",
        "\"h\"",
        ArgsError::NotAnObject,
        "arguments must be an object",
    );
    check(
        "bos_list_contexts",
        r#"{"context_handle":"h"}"#,
        ArgsError::UnknownMember("context_handle".into()),
        "unknown argument 'context_handle'",
    );
    check(
        "bos_list_tools",
        "",
        ArgsError::Missing {
            member: "context_handle",
            expected: "a string",
        },
        "'context_handle' (a string) is required",
    );
    check(
        "bos_list_tools",
        r#"{"context_handle":null}"#,
        ArgsError::Missing {
            member: "context_handle",
            expected: "a string",
        },
        "'context_handle' (a string) is required",
    );
    check(
        "bos_list_tools",
        r#"{"context_handle":7}"#,
        ArgsError::WrongType {
            member: "context_handle",
            expected: "a string",
        },
        "'context_handle' must be a string",
    );
    check(
        "bos_list_tools",
        r#"{"context_handle":""}"#,
        ArgsError::Empty {
            member: "context_handle",
        },
        "'context_handle' must not be empty",
    );
    check(
        "bos_execute",
        r#"{"context_handle":"h","arguments":{}}"#,
        ArgsError::Missing {
            member: "tool_name",
            expected: "a string",
        },
        "'tool_name' (a string) is required",
    );
    check(
        "bos_execute",
        r#"{"context_handle":"h","tool_name":"t"}"#,
        ArgsError::Missing {
            member: "arguments",
            expected: "an object",
        },
        "'arguments' (an object) is required",
    );
    check(
        "bos_execute",
        r#"{"context_handle":"h","tool_name":"t","arguments":[1]}"#,
        ArgsError::WrongType {
            member: "arguments",
            expected: "an object",
        },
        "'arguments' must be an object",
    );
    check(
        "bos_execute",
        r#"{"context_handle":"h","tool_name":"t","arguments":{},"toolName":"t"}"#,
        ArgsError::UnknownMember("toolName".into()),
        "unknown argument 'toolName'",
    );
}

// === tools.rs: results ===

#[test]
fn list_contexts_result_shape() {
    let key = HandleKey::new(SECRET);
    let set = contexts(&[
        config("ops", "apikey:a", true),
        config("audit", "apikey:a", false),
    ])
    .unwrap();
    let pairs: Vec<(&BosContext, String)> = set
        .for_caller("apikey:a")
        .map(|c| (c, c.issue_handle(&key)))
        .collect();
    let bytes = list_contexts_result(pairs.iter().map(|(c, h)| (*c, h.as_str())));
    let result = parse(&bytes);
    assert_eq!(result["isError"], false);
    let listed = result["structuredContent"]["contexts"].as_array().unwrap();
    assert_eq!(listed.len(), 2);
    for ((context, handle), listed) in pairs.iter().zip(listed) {
        assert_eq!(listed, &parse(&context.public_json(handle)));
        let handle = listed["context_handle"].as_str().unwrap();
        assert_eq!(resolve(&key, &set, handle, "apikey:a"), Ok(*context));
    }
    assert_eq!(result["content"][0]["type"], "text");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert_eq!(parse(text.as_bytes()), result["structuredContent"]);

    let empty = parse(&list_contexts_result(
        std::iter::empty::<(&BosContext, &str)>(),
    ));
    assert_eq!(empty["structuredContent"], json!({"contexts": []}));

    // The open form takes era members before the closing brace.
    let mut out = BytesMut::new();
    write_list_contexts(&mut out, std::iter::empty::<(&BosContext, &str)>());
    out.extend_from_slice(br#","resultType":"complete"}"#);
    assert_eq!(parse(&out)["resultType"], "complete");
}

#[test]
fn list_tools_result_shape() {
    let context = br#"{"context_handle":"h","organization_name":"acme","application_name":"a","installation_name":"i","role_label":"r","is_default":false}"#;
    let schema = br#"{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}"#;
    let bytes = list_tools_result(
        context,
        [
            ("search_people", "Finds \"people\".", &schema[..]),
            ("noop", "", &b"{\"type\":\"object\"}"[..]),
        ],
    );
    let result = parse(&bytes);
    let structured = &result["structuredContent"];
    assert_eq!(structured["context"], parse(context));
    assert_eq!(
        structured["tools"],
        json!([
            {"name": "search_people", "description": "Finds \"people\".", "inputSchema": parse(schema)},
            {"name": "noop", "description": "", "inputSchema": {"type": "object"}}
        ])
    );
    assert_eq!(result["isError"], false);
    let text = result["content"][0]["text"].as_str().unwrap();
    assert_eq!(&parse(text.as_bytes()), structured);

    let mut out = BytesMut::new();
    let entry =
        br#"{"name":"x","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}"#;
    write_list_tools_entries(&mut out, context, [&entry[..], &entry[..]]);
    out.extend_from_slice(b"}");
    let result = parse(&out);
    assert_eq!(
        result["structuredContent"]["tools"],
        json!([parse(entry), parse(entry)])
    );
}

// === envelope.rs ===

#[test]
fn envelope_reproduces_the_contract_final_frame() {
    let frame = parse(CONTRACT_FINAL_FRAME.as_bytes());
    let expected = &frame["result"];
    let context = serde_json::to_vec(&expected["structuredContent"]["context"]).unwrap();
    let operation = serde_json::to_vec(&expected["structuredContent"]["result"]).unwrap();

    let bytes = execute_result(&context, &operation, true, Extras::default());
    let got = parse(&bytes);
    // The text copy in the contract uses Python's separators; compare it parsed.
    let mut got_without_text = got.clone();
    let mut expected_without_text = expected.clone();
    let got_text = got_without_text["content"][0]["text"].take();
    let expected_text = expected_without_text["content"][0]["text"].take();
    assert_eq!(got_without_text, expected_without_text);
    assert_eq!(
        parse(got_text.as_str().unwrap().as_bytes()),
        parse(expected_text.as_str().unwrap().as_bytes())
    );

    // Every path the contract names.
    let structured = &got["structuredContent"];
    assert_eq!(structured["contract_version"], CONTRACT_VERSION);
    assert_eq!(
        structured["result"]["result"][0]["record_ref"],
        "bos:person:demo-1"
    );
    assert_eq!(structured["result"]["metadata"]["completeness"], "partial");
    assert_eq!(
        structured["result"]["metadata"]["source_errors"][0]["error"]["code"],
        "source_timeout"
    );
    assert_eq!(structured["context"], parse(&context));
    assert_eq!(got["_meta"]["bos/context"], parse(&context));
    assert_eq!(got["isError"], true);
    assert_eq!(&parse(got_text.as_str().unwrap().as_bytes()), structured);

    // The stateless era adds resultType (and serverInfo inside the one _meta).
    let stateless = parse(&execute_result(
        &context,
        &operation,
        true,
        Extras {
            top_level: br#","resultType":"complete""#,
            meta: br#","io.modelcontextprotocol/serverInfo":{"name":"sluice","version":"1"}"#,
        },
    ));
    assert_eq!(stateless["resultType"], "complete");
    assert_eq!(stateless["_meta"]["bos/context"], parse(&context));
    assert_eq!(
        stateless["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "sluice"
    );
    assert_eq!(stateless["structuredContent"], got["structuredContent"]);
}

#[test]
fn envelope_member_order_matches_the_contract() {
    let bytes = execute_result(
        b"{}",
        b"[]",
        false,
        Extras {
            top_level: b",\"x\":1",
            meta: b"",
        },
    );
    assert_eq!(
        std::str::from_utf8(&bytes).unwrap(),
        r#"{"content":[{"type":"text","text":"{\"contract_version\":\"bos-identity-mcp/v2\",\"context\":{},\"result\":[]}"}],"structuredContent":{"contract_version":"bos-identity-mcp/v2","context":{},"result":[]},"isError":false,"x":1,"_meta":{"bos/context":{}}}"#
    );
}

/// Any JSON value, strings with arbitrary characters included.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        "\\PC*".prop_map(Value::String),
        any::<String>().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(any::<String>(), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #[test]
    fn envelope_round_trips_any_result(
        result in any_json(),
        is_error in any::<bool>(),
        label in any::<String>(),
        handle in any::<String>(),
    ) {
        let mut cfg = config("ops", "apikey:a", false);
        cfg.role_label = if label.is_empty() { "r".into() } else { label };
        let set = contexts(&[cfg]).unwrap();
        let context = set.all()[0].public_json(&handle);
        let operation = serde_json::to_vec(&result).unwrap();
        let got = parse(&execute_result(&context, &operation, is_error, Extras::default()));

        let structured = &got["structuredContent"];
        prop_assert_eq!(&structured["result"], &result);
        prop_assert_eq!(&structured["context"], &parse(&context));
        prop_assert_eq!(&structured["context"]["context_handle"], &Value::String(handle));
        prop_assert_eq!(&got["_meta"]["bos/context"], &structured["context"]);
        prop_assert_eq!(&got["isError"], &Value::Bool(is_error));
        let text = got["content"][0]["text"].as_str().unwrap();
        prop_assert_eq!(&parse(text.as_bytes()), structured);
    }
}
