//! Unit tests of `parse.rs` and `parse/check.rs`: one `check(input, expected)` line per
//! message shape, then the repeated-name rule, the depth limit, the buffer cache and payload
//! access. Owns no code the library uses.

use super::*;

/// Parses `input`; `Ok` gives `(kind, method, id JSON text)`, `Err` gives `(code, id text)`.
fn check(input: &str, expected: Result<(&str, &str, &str), (i32, &str)>) {
    let mut body = input.as_bytes().to_vec();
    let actual = match parse(&mut body) {
        Ok(message) => {
            let kind = match &message {
                Message::Request { .. } => "request",
                Message::Notification { .. } => "notification",
                Message::Response { .. } => "response",
                Message::ErrorResponse { .. } => "error",
            };
            let id = message.id().map_or("none".to_owned(), |id| id.to_string());
            Ok((kind, message.method().unwrap_or("").to_owned(), id))
        }
        Err(error) => Err((
            error.code.0,
            error.id.map_or("none".to_owned(), |id| id.to_string()),
        )),
    };
    let expected = expected
        .map(|(kind, method, id)| (kind, method.to_owned(), id.to_owned()))
        .map_err(|(code, id)| (code, id.to_owned()));
    assert_eq!(actual, expected, "input: {input}");
}

#[test]
fn valid_messages() {
    check(
        r#"{"jsonrpc":"2.0","id":0,"method":"ping"}"#,
        Ok(("request", "ping", "0")),
    );
    check(
        r#"{"jsonrpc":"2.0","id":"0","method":"ping"}"#,
        Ok(("request", "ping", "\"0\"")),
    );
    check(
        r#"{"jsonrpc":"2.0","id":-1,"method":"m"}"#,
        Ok(("request", "m", "-1")),
    );
    check(
        r#"{"jsonrpc":"2.0","id":9007199254740993,"method":"m"}"#,
        Ok(("request", "m", "9007199254740993")),
    );
    check(
        r#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"m"}"#,
        Ok(("request", "m", "18446744073709551615")),
    );
    check(
        r#"{"jsonrpc":"2.0","id":"a\"b\\u00e9","method":"m"}"#,
        Ok(("request", "m", r#""a\"b\\u00e9""#)),
    );
    check(
        r#"{"jsonrpc":"2.0","id":"\u00e9\n","method":"m"}"#,
        Ok(("request", "m", "\"é\\n\"")),
    );
    check(
        r#" {"method":"tools/call","params":{"name":"x"},"jsonrpc":"2.0","id":7} "#,
        Ok(("request", "tools/call", "7")),
    );
    check(
        r#"{"jsonrpc":"2.0","id":1,"method":"m","params":[1,2]}"#,
        Ok(("request", "m", "1")),
    );
    check(
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        Ok(("notification", "notifications/initialized", "none")),
    );
    check(
        r#"{"jsonrpc":"2.0","method":"n","params":{},"x":1}"#,
        Ok(("notification", "n", "none")),
    );
    check(
        r#"{"jsonrpc":"2.0","id":3,"result":{}}"#,
        Ok(("response", "", "3")),
    );
    check(
        r#"{"jsonrpc":"2.0","id":3,"result":null}"#,
        Ok(("response", "", "3")),
    );
    check(
        r#"{"jsonrpc":"2.0","id":"r","error":{"code":-32601,"message":"no"}}"#,
        Ok(("error", "", "\"r\"")),
    );
    check(
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad","data":[1]}}"#,
        Ok(("error", "", "none")),
    );
    // A huge integer elsewhere in the body is valid JSON (read as a float, like serde_json).
    check(
        r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"n":123456789012345678901234567890}}"#,
        Ok(("request", "m", "1")),
    );
}

#[test]
fn parse_errors() {
    check("", Err((-32700, "none")));
    check("   ", Err((-32700, "none")));
    check("{", Err((-32700, "none")));
    check(
        r#"{"jsonrpc":"2.0","id":1,"method":"m"} x"#,
        Err((-32700, "none")),
    );
    check(
        r#"{"jsonrpc":"2.0","id":1,"method":"m"}{}"#,
        Err((-32700, "none")),
    );
    check(
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\u{0}\"}",
        Err((-32700, "none")),
    );
    check(
        r#"{"jsonrpc":"2.0","id":1,"method":"m",}"#,
        Err((-32700, "none")),
    );
    check(r#"{'jsonrpc':'2.0'}"#, Err((-32700, "none")));
    // Anything but whitespace after the message, a NUL included, is not JSON.
    for tail in [
        "\u{0}",
        "\u{0}{\"zzz\":",
        " \u{0}",
        "\n\u{0}\u{0}",
        "\u{0} ",
        "\u{b}",
        "\u{c}",
    ] {
        check(
            &format!(r#"{{"jsonrpc":"2.0","id":1,"method":"m"}}{tail}"#),
            Err((-32700, "none")),
        );
    }
    check(
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"} \t\r\n",
        Ok(("request", "m", "1")),
    );
    check(
        &format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{}{}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        ),
        Err((-32700, "none")),
    );
    let mut invalid_utf8 =
        br#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":"\xff"}}"#.to_vec();
    assert_eq!(
        parse(&mut invalid_utf8).map(|_| ()).map_err(|e| e.code),
        Err(ErrorCode::PARSE_ERROR)
    );
}

#[test]
fn invalid_requests() {
    check(
        r#"[{"jsonrpc":"2.0","id":1,"method":"m"}]"#,
        Err((-32600, "none")),
    );
    check("[]", Err((-32600, "none")));
    check("1", Err((-32600, "none")));
    check(r#""x""#, Err((-32600, "none")));
    check("null", Err((-32600, "none")));
    check(r#"{"id":1,"method":"m"}"#, Err((-32600, "1")));
    check(
        r#"{"jsonrpc":"1.0","id":"a","method":"m"}"#,
        Err((-32600, "\"a\"")),
    );
    check(r#"{"jsonrpc":2.0,"id":1,"method":"m"}"#, Err((-32600, "1")));
    check(
        r#"{"jsonrpc":"2.0 ","id":1,"method":"m"}"#,
        Err((-32600, "1")),
    );
    check(r#"{"jsonrpc":"2.0","id":1}"#, Err((-32600, "1")));
    check(r#"{"jsonrpc":"2.0","id":1,"method":5}"#, Err((-32600, "1")));
    check(
        r#"{"jsonrpc":"2.0","id":1,"method":null}"#,
        Err((-32600, "1")),
    );
    check(
        r#"{"jsonrpc":"2.0","id":1,"method":"m","params":"x"}"#,
        Err((-32600, "1")),
    );
    check(
        r#"{"jsonrpc":"2.0","id":1,"method":"m","params":null}"#,
        Err((-32600, "1")),
    );
    check(
        r#"{"jsonrpc":"2.0","method":"m","params":3}"#,
        Err((-32600, "none")),
    );
    check(
        r#"{"jsonrpc":"2.0","id":null,"method":"m"}"#,
        Err((-32600, "none")),
    );
    check(
        r#"{"jsonrpc":"2.0","id":1.5,"method":"m"}"#,
        Err((-32600, "none")),
    );
    check(
        r#"{"jsonrpc":"2.0","id":1e3,"method":"m"}"#,
        Err((-32600, "none")),
    );
    check(
        r#"{"jsonrpc":"2.0","id":1.0,"method":"m"}"#,
        Err((-32600, "none")),
    );
    check(
        r#"{"jsonrpc":"2.0","id":true,"method":"m"}"#,
        Err((-32600, "none")),
    );
    check(
        r#"{"jsonrpc":"2.0","id":{},"method":"m"}"#,
        Err((-32600, "none")),
    );
    check(
        r#"{"jsonrpc":"2.0","id":[1],"method":"m"}"#,
        Err((-32600, "none")),
    );
    check(
        r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"m"}"#,
        Err((-32600, "none")),
    );
    check(
        r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"m"}"#,
        Err((-32600, "none")),
    );
    check(
        r#"{"jsonrpc":"2.0","id":1,"method":"m","method":"n"}"#,
        Err((-32600, "none")),
    );
    check(
        r#"{"jsonrpc":"2.0","id":1,"method":"m","result":{}}"#,
        Err((-32600, "1")),
    );
    check(
        r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}"#,
        Err((-32600, "1")),
    );
    check(r#"{"jsonrpc":"2.0","result":{}}"#, Err((-32600, "none")));
    check(
        r#"{"jsonrpc":"2.0","id":null,"result":{}}"#,
        Err((-32600, "none")),
    );
    check(
        r#"{"jsonrpc":"2.0","error":{"code":1,"message":"x"}}"#,
        Err((-32600, "none")),
    );
    check(
        r#"{"jsonrpc":"2.0","id":2,"error":"x"}"#,
        Err((-32600, "2")),
    );
    check(
        r#"{"jsonrpc":"2.0","id":2,"error":{"message":"x"}}"#,
        Err((-32600, "2")),
    );
    check(
        r#"{"jsonrpc":"2.0","id":2,"error":{"code":1.5,"message":"x"}}"#,
        Err((-32600, "2")),
    );
    check(
        r#"{"jsonrpc":"2.0","id":2,"error":{"code":1}}"#,
        Err((-32600, "2")),
    );
    check(
        r#"{"jsonrpc":"2.0","id":2,"error":{"code":1,"message":3}}"#,
        Err((-32600, "2")),
    );
    check(
        r#"{"jsonrpc":"2.0","id":2,"error":{"code":1,"code":2,"message":"x"}}"#,
        Err((-32600, "2")),
    );
    check(
        r#"{"jsonrpc":"2.0","id":2,"error":{"code":18446744073709551615,"message":"x"}}"#,
        Err((-32600, "2")),
    );
    check(r#"{"jsonrpc":"2.0"}"#, Err((-32600, "none")));
    check("{}", Err((-32600, "none")));
}

#[test]
fn repeated_names_are_refused_at_any_depth() {
    // Top level, whatever the member: no id (it may be the repeated one).
    check(
        r#"{"jsonrpc":"2.0","id":1,"method":"m","x":1,"x":2}"#,
        Err((-32600, "none")),
    );
    // Inside params, arguments, arrays and error data: the id is readable, so it is carried.
    check(
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_customer","name":"place_order"}}"#,
        Err((-32600, "1")),
    );
    check(
        r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"t","arguments":{"amount":1,"amount":1000}}}"#,
        Err((-32600, "\"a\"")),
    );
    check(
        r#"{"jsonrpc":"2.0","id":1,"method":"m","params":[{"k":[{"z":1,"y":2,"z":3}]}]}"#,
        Err((-32600, "1")),
    );
    check(
        r#"{"jsonrpc":"2.0","method":"n","params":{"a":{},"a":{}}}"#,
        Err((-32600, "none")),
    );
    check(
        r#"{"jsonrpc":"2.0","id":2,"error":{"code":1,"message":"x","data":{"d":1,"d":1}}}"#,
        Err((-32600, "2")),
    );
    check(
        r#"{"jsonrpc":"2.0","id":3,"result":{"r":1,"r":2}}"#,
        Err((-32600, "3")),
    );
    // Names compare after unescaping.
    check(
        r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1,"\u0061":2}}"#,
        Err((-32600, "1")),
    );
    // Objects past the pairwise size go through the hash set; the repeat may come last.
    let members: Vec<String> = (0..40).map(|i| format!(r#""k{i}":{i}"#)).collect();
    let large = members.join(",");
    check(
        &format!(r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{{{large}}}}}"#),
        Ok(("request", "m", "1")),
    );
    check(
        &format!(r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{{{large},"k0":0}}}}"#),
        Err((-32600, "1")),
    );
    check(
        &format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{{"big":{{{large}}},"small":{{"a":1,"a":1}}}}}}"#
        ),
        Err((-32600, "1")),
    );
    // Exactly the pairwise size, the repeat in the last slot.
    check(
        r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"a":8}}"#,
        Err((-32600, "1")),
    );
    // The same name in different objects is no repeat.
    check(
        r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":{"a":1},"b":[{"a":2},{"a":3}]}}"#,
        Ok(("request", "m", "1")),
    );
}

#[test]
fn depth_limit_is_configurable() {
    let nested = format!(
        r#"{{"jsonrpc":"2.0","method":"m","params":{}{}}}"#,
        "[".repeat(20),
        "]".repeat(20)
    );
    let mut body = nested.clone().into_bytes();
    assert!(parse(&mut body).is_ok());
    let mut body = nested.into_bytes();
    let err = parse_with(&mut body, &Limits { max_depth: 10 })
        .map(|_| ())
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::PARSE_ERROR);
    // The cached buffers switch back to the default depth.
    let mut body = br#"{"jsonrpc":"2.0","method":"m","params":[[[[[[[[[[[[]]]]]]]]]]]]}"#.to_vec();
    assert!(parse(&mut body).is_ok());
}

#[test]
fn a_body_above_the_cache_limit_parses_and_frees_its_buffers() {
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{{"s":"{}"}}}}"#,
        "x".repeat(crate::simd_scratch::KEEP_BUFFERS_UP_TO)
    );
    let mut body = big.into_bytes();
    assert!(matches!(
        parse(&mut body),
        Ok(Message::Request {
            params: Some(_),
            ..
        })
    ));
    assert!(!crate::simd_scratch::cached());
    let mut body = br#"{"jsonrpc":"2.0","id":2,"method":"m"}"#.to_vec();
    assert_eq!(parse(&mut body).ok().and_then(|m| m.id()), Some(Id::Int(2)));
    assert!(crate::simd_scratch::cached());
}

#[test]
fn params_are_reachable_without_reparsing() {
    use simd_json::prelude::*;

    #[derive(serde::Deserialize, Debug, PartialEq)]
    struct Call<'a> {
        name: &'a str,
        arguments: std::collections::BTreeMap<&'a str, i64>,
    }
    let mut body = br#"{"params":{"name":"search","arguments":{"q":1}},"jsonrpc":"2.0","id":"x","method":"tools/call"}"#.to_vec();
    let Ok(Message::Request {
        id,
        method,
        params: Some(params),
    }) = parse(&mut body)
    else {
        panic!("not a request with params");
    };
    assert_eq!((id, method), (Id::Str("x"), "tools/call"));
    assert_eq!(params.value().get_str("name"), Some("search"));
    assert_eq!(
        params.to_json_vec(),
        br#"{"name":"search","arguments":{"q":1}}"#
    );
    let call: Call<'_> = params.deserialize().unwrap();
    assert_eq!(call.name, "search");
    assert_eq!(call.arguments.get("q"), Some(&1));

    let mut body =
        br#"{"jsonrpc":"2.0","id":null,"error":{"data":{"k":[true]},"code":-1,"message":"m"}}"#
            .to_vec();
    let Ok(Message::ErrorResponse {
        data: Some(data),
        code: -1,
        ..
    }) = parse(&mut body)
    else {
        panic!("not an error response with data");
    };
    assert_eq!(data.to_json_vec(), br#"{"k":[true]}"#);
    let data: serde_json::Value = data.deserialize().unwrap();
    assert_eq!(data, serde_json::json!({"k": [true]}));
}
