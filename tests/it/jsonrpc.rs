//! Integration tests: jsonrpc. Replays the fuzz seed corpus through the round-trip property and
//! checks every classification case of the brief (input → code and id) plus a proptest of the
//! round trip over generated messages. No IO: the codec is a pure function over a buffer.

use std::path::Path;

use proptest::prelude::*;
use sluice::jsonrpc::{parse, props, Message};

#[test]
fn fuzz_corpus_round_trips() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/jsonrpc_parse");
    let mut n_files = 0;
    for entry in std::fs::read_dir(&dir).expect("corpus directory") {
        let path = entry.expect("corpus entry").path();
        let data = std::fs::read(&path).expect("corpus file");
        props::parse_roundtrip(&data);
        n_files += 1;
    }
    assert!(
        n_files >= 12,
        "only {n_files} corpus files in {}",
        dir.display()
    );
}

/// What `parse` makes of `input`: `Ok(kind)` or `Err((code, id JSON text or "none"))`.
fn classify(input: &[u8]) -> Result<&'static str, (i32, String)> {
    let mut body = input.to_vec();
    match parse(&mut body) {
        Ok(Message::Request { .. }) => Ok("request"),
        Ok(Message::Notification { .. }) => Ok("notification"),
        Ok(Message::Response { .. }) => Ok("response"),
        Ok(Message::ErrorResponse { .. }) => Ok("error"),
        Err(e) => Err((e.code.0, e.id.map_or("none".into(), |id| id.to_string()))),
    }
}

fn check(input: &str, code: i32, id: &str) {
    assert_eq!(
        classify(input.as_bytes()),
        Err((code, id.to_owned())),
        "input: {input}"
    );
}

#[test]
fn every_malformed_input_is_classified() {
    // Invalid JSON → -32700 with no id.
    check("", -32700, "none");
    check(" \n", -32700, "none");
    check(r#"{"jsonrpc":"2.0","id":1,"method":"m"}}"#, -32700, "none");
    check(r#"{"jsonrpc":"2.0","id":1,"method":"m"} 1"#, -32700, "none");
    check(r#"{"jsonrpc":"2.0","id":1,"method":"m""#, -32700, "none");
    check(r#"{"jsonrpc":"2.0","id":01,"method":"m"}"#, -32700, "none");
    check(r#"{"jsonrpc":"2.0","id":NaN,"method":"m"}"#, -32700, "none");
    assert_eq!(
        classify(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xc3\x28\"}"),
        Err((-32700, "none".into()))
    );
    // A batch → -32600.
    check(r#"[{"jsonrpc":"2.0","id":1,"method":"m"}]"#, -32600, "none");
    // Not an object → -32600.
    check("42", -32600, "none");
    check("true", -32600, "none");
    // Missing or wrong jsonrpc → -32600 with the id when readable.
    check(r#"{"id":5,"method":"m"}"#, -32600, "5");
    check(r#"{"jsonrpc":"2","id":"s","method":"m"}"#, -32600, "\"s\"");
    check(r#"{"jsonrpc":null,"id":5,"method":"m"}"#, -32600, "5");
    // Missing or non-string method.
    check(r#"{"jsonrpc":"2.0","id":5}"#, -32600, "5");
    check(r#"{"jsonrpc":"2.0","id":5,"method":["m"]}"#, -32600, "5");
    // params neither object nor array.
    check(
        r#"{"jsonrpc":"2.0","id":5,"method":"m","params":1}"#,
        -32600,
        "5",
    );
    check(
        r#"{"jsonrpc":"2.0","id":5,"method":"m","params":true}"#,
        -32600,
        "5",
    );
    // Ids that are not a string or an integer.
    check(
        r#"{"jsonrpc":"2.0","id":null,"method":"m"}"#,
        -32600,
        "none",
    );
    check(r#"{"jsonrpc":"2.0","id":2.5,"method":"m"}"#, -32600, "none");
    check(r#"{"jsonrpc":"2.0","id":2E1,"method":"m"}"#, -32600, "none");
    check(
        r#"{"jsonrpc":"2.0","id":false,"method":"m"}"#,
        -32600,
        "none",
    );
    check(
        r#"{"jsonrpc":"2.0","id":{"a":1},"method":"m"}"#,
        -32600,
        "none",
    );
    check(r#"{"jsonrpc":"2.0","id":[],"method":"m"}"#, -32600, "none");
    // A response needs exactly one of result / error.
    check(r#"{"jsonrpc":"2.0","id":5}"#, -32600, "5");
    check(
        r#"{"jsonrpc":"2.0","id":5,"result":1,"error":{"code":1,"message":"m"}}"#,
        -32600,
        "5",
    );
}

#[test]
fn ids_echo_back_with_their_type() {
    for (id_json, expected) in [
        ("0", "0"),
        ("\"0\"", "\"0\""),
        ("-1", "-1"),
        ("9007199254740993", "9007199254740993"),
        (r#""a\"b\u00e9""#, "\"a\\\"bé\""),
        (r#""\/\b\f\n\r\t""#, r#""/\b\f\n\r\t""#),
    ] {
        let mut body = format!(r#"{{"jsonrpc":"2.0","id":{id_json},"method":"m"}}"#).into_bytes();
        let message = parse(&mut body).expect("valid request");
        let id = message.id().expect("request id");
        assert_eq!(id.to_string(), expected);
        // Whatever the escaping, it is the same JSON value as the input id.
        let original: serde_json::Value = serde_json::from_str(id_json).unwrap();
        let echoed: serde_json::Value = serde_json::from_str(&id.to_string()).unwrap();
        assert_eq!(original, echoed);
    }
}

fn json_leaf() -> impl Strategy<Value = serde_json::Value> {
    prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        any::<u64>().prop_map(serde_json::Value::from),
        (-1e300f64..1e300).prop_map(serde_json::Value::from),
        ".*".prop_map(serde_json::Value::from),
    ]
}

fn json_value() -> impl Strategy<Value = serde_json::Value> {
    json_leaf().prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::from),
            prop::collection::btree_map(".*", inner, 0..6)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #[test]
    fn generated_requests_round_trip(id in prop_oneof![any::<i64>().prop_map(serde_json::Value::from), ".*".prop_map(serde_json::Value::from)],
                                     method in ".*",
                                     params in prop::collection::btree_map(".*", json_value(), 0..4)) {
        let params = serde_json::Value::Object(params.into_iter().collect());
        let request = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let bytes = serde_json::to_vec(&request).unwrap();
        props::parse_roundtrip(&bytes);
        // And what we write back is the same JSON value as what came in.
        let mut body = bytes.clone();
        let message = parse(&mut body).unwrap();
        let mut written = bytes::BytesMut::new();
        message.write_to(&mut written);
        // Both sides go through serde_json's reader, whose float parsing is not exact without
        // its float_roundtrip feature; simd-json reads and writes floats exactly.
        let back: serde_json::Value = serde_json::from_slice(&written).unwrap();
        let expected: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        prop_assert_eq!(back, expected);
    }
}
