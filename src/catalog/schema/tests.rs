//! Unit tests of `schema.rs`.
use super::*;

fn rule(exposed: &str, spec: &str) -> FieldRule {
    let text = format!("source = \"x\"\nexposed = \"{exposed}\"\n{spec}");
    toml::from_str(&text).unwrap()
}

/// Checks the schema (compact canonical JSON) of `rules` at `detail`.
fn check(rules: &[FieldRule], detail: Detail, expected: &str) {
    let got = rules_schema(rules, detail)
        .map(|v| String::from_utf8(canonical_bytes(&v).to_vec()).unwrap());
    assert_eq!(got.as_deref(), Some(expected));
}

fn check_conflicts(rules: &[FieldRule], expected: &[&str]) {
    let paths = parse_exposed(rules);
    let (_, conflicts) = Tree::build(rules, &paths);
    let got: Vec<String> = conflicts
        .iter()
        .map(|c| format!("{}: {}", rules[c.rule()].exposed, c.message(rules)))
        .collect();
    assert_eq!(got, expected);
}

#[test]
fn empty_inputs_give_empty_properties() {
    check(&[], Detail::Full, r#"{"properties":{},"type":"object"}"#);
}

#[test]
fn scalars_and_full_metadata() {
    check(
        &[rule("id", "type = \"integer\"\nrequired = true\ndescription = \"The id\"\nformat = \"int64\"\nenum = [1, 2]")],
        Detail::Full,
        r#"{"properties":{"id":{"description":"The id","enum":[1,2],"format":"int64","type":"integer"}},"required":["id"],"type":"object"}"#,
    );
    check(
        &[rule("id", "type = \"integer\"\nrequired = true\ndescription = \"The id\"\nformat = \"int64\"\nenum = [1, 2]")],
        Detail::StructureOnly,
        r#"{"properties":{"id":{"type":"integer"}},"required":["id"],"type":"object"}"#,
    );
}

#[test]
fn nested_objects_and_required_propagation() {
    check(
        &[
            rule("customer.name", "required = true"),
            rule("customer.address.city", ""),
            rule("note", ""),
        ],
        Detail::StructureOnly,
        concat!(
            r#"{"properties":{"customer":{"properties":{"address":{"properties":{"city":{"type":"string"}},"type":"object"},"#,
            r#""name":{"type":"string"}},"required":["name"],"type":"object"},"note":{"type":"string"}},"required":["customer"],"type":"object"}"#
        ),
    );
}

#[test]
fn arrays_of_objects_and_scalars() {
    check(
        &[
            rule(
                "orders[*].lines[*].sku",
                "required = true\ndescription = \"SKU\"",
            ),
            rule("orders[*].lines[*].qty", "type = \"integer\""),
            rule("tags[*]", "description = \"Tags\"\nenum = [\"a\", \"b\"]"),
            rule("ids[*]", "type = \"array\"\nitems = \"integer\""),
            rule("scores[*]", "type = \"number\""),
            rule("matrix[*][*]", "type = \"integer\""),
        ],
        Detail::Full,
        concat!(
            r#"{"properties":{"ids":{"items":{"type":"integer"},"type":"array"},"#,
            r#""matrix":{"items":{"items":{"type":"integer"},"type":"array"},"type":"array"},"#,
            r#""orders":{"items":{"properties":{"lines":{"items":{"properties":{"qty":{"type":"integer"},"sku":{"description":"SKU","type":"string"}},"required":["sku"],"type":"object"},"type":"array"}},"required":["lines"],"type":"object"},"type":"array"},"#,
            r#""scores":{"items":{"type":"number"},"type":"array"},"#,
            r#""tags":{"description":"Tags","items":{"enum":["a","b"],"type":"string"},"type":"array"}},"#,
            r#""required":["orders"],"type":"object"}"#
        ),
    );
}

#[test]
fn array_leaves_default_to_string_items() {
    check(
        &[rule("labels", "type = \"array\"\nformat = \"email\"")],
        Detail::Full,
        r#"{"properties":{"labels":{"items":{"format":"email","type":"string"},"type":"array"}},"type":"object"}"#,
    );
    check(
        &[rule("labels", "type = \"array\"")],
        Detail::StructureOnly,
        r#"{"properties":{"labels":{"items":{"type":"string"},"type":"array"}},"type":"object"}"#,
    );
}

#[test]
fn additional_properties_pass_through_in_both_modes() {
    let r = rule("attrs", "type = \"object\"\ndescription = \"d\"\nadditional_properties = { type = \"string\", maxLength = 8 }");
    check(
        std::slice::from_ref(&r),
        Detail::Full,
        r#"{"properties":{"attrs":{"additionalProperties":{"maxLength":8,"type":"string"},"description":"d","type":"object"}},"type":"object"}"#,
    );
    check(
        std::slice::from_ref(&r),
        Detail::StructureOnly,
        r#"{"properties":{"attrs":{"additionalProperties":{"maxLength":8,"type":"string"},"type":"object"}},"type":"object"}"#,
    );
    check(
        &[rule(
            "m",
            "type = \"object\"\nadditional_properties = false",
        )],
        Detail::StructureOnly,
        r#"{"properties":{"m":{"additionalProperties":false,"type":"object"}},"type":"object"}"#,
    );
}

#[test]
fn conflicts_are_found_and_named() {
    check_conflicts(
        &[rule("a", ""), rule("a", "")],
        &["a: exposed path is used by another rule too"],
    );
    check_conflicts(
        &[rule("a", ""), rule("a.b", "")],
        &["a.b: 'a' is an object here but a leaf in 'a'"],
    );
    check_conflicts(
        &[rule("a.b", ""), rule("a", "")],
        &["a: 'a' is a leaf here but an object in 'a.b'"],
    );
    check_conflicts(
        &[rule("a[*].b", ""), rule("a.c", "")],
        &["a.c: 'a' is an object here but an array in 'a[*].b'"],
    );
    check_conflicts(
        &[rule("t[*]", ""), rule("t[*].x", "")],
        &["t[*].x: 't[*]' is an object here but a leaf in 't[*]'"],
    );
    check_conflicts(&[rule("x.y", ""), rule("x.z", ""), rule("w[*]", "")], &[]);
}

#[test]
fn lazy_and_entries() {
    let tool: Tool = toml::from_str(
        "name = \"t\"\nschema_mode = \"lazy\"\ndownstream = { kind = \"rest\", method = \"GET\", url = \"http://h/\" }\n[[input]]\nsource = \"a\"\nexposed = \"a\"\n[[output]]\nsource = \"b\"\nexposed = \"b\"\n",
    )
    .unwrap();
    let schemas = generate(&tool).unwrap();
    let listed: Value = serde_json::from_slice(&schemas.input_listed).unwrap();
    assert_eq!(listed["required"], json!([DISCOVERY_PLACEHOLDER]));
    assert_eq!(listed["properties"].as_object().map(Map::len), Some(1));
    assert!(schemas.output_listed.is_none());
    assert!(schemas.output_full.is_some());
    assert_eq!(schemas.hash, sha256_hex(&schemas.input_full));
    assert_eq!(schemas.hash.len(), 64);
    let entry = list_entry("t", "q\"d", b"{}", Some(b"{\"type\":\"object\"}"));
    assert_eq!(
        &entry[..],
        br#"{"name":"t","description":"q\"d","inputSchema":{},"outputSchema":{"type":"object"}}"#
    );
}

#[test]
fn canonical_sorts_keys_at_every_level() {
    let v = json!({"b": [{"z": 1, "a": null}], "a": "x"});
    assert_eq!(
        &canonical_bytes(&v)[..],
        br#"{"a":"x","b":[{"a":null,"z":1}]}"#
    );
    assert_eq!(
        sha256_hex(b"abc"),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
}
