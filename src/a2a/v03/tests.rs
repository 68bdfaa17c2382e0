//! The translation tables of `v03.rs`, both ways, from the observed wire examples of both
//! SDKs; unknown members survive; round trips keep every member.

use super::*;

fn parse(json: &str) -> Value {
    serde_json::from_str(json).unwrap_or_else(|err| panic!("{err}: {json}"))
}

// --- Version ---

#[test]
fn version_header_table() {
    let cases: &[(Option<&str>, Result<Version, &str>)] = &[
        (None, Ok(Version::V03)),
        (Some(""), Ok(Version::V03)),
        (Some("  "), Ok(Version::V03)),
        (Some("0.3"), Ok(Version::V03)),
        (Some("0.3.0"), Ok(Version::V03)),
        (Some("0.3.9"), Ok(Version::V03)),
        (Some("1"), Ok(Version::V1)),
        (Some("1.0"), Ok(Version::V1)),
        (Some(" 1.0 "), Ok(Version::V1)),
        (Some("1.0.1"), Ok(Version::V1)),
        (Some("1.1"), Ok(Version::V1)),
        (Some("0.2"), Err("0.2")),
        (Some("0"), Err("0")),
        (Some("2.0"), Err("2.0")),
        (Some("1."), Err("1.")),
        (Some("v1.0"), Err("v1.0")),
        (Some("1.0.1.2"), Err("1.0.1.2")),
        (Some("1.0-rc1"), Err("1.0-rc1")),
        (
            Some("99999999999999999999999"),
            Err("99999999999999999999999"),
        ),
    ];
    for (header, expected) in cases {
        let value = header.map(|text| HeaderValue::from_str(text).expect("header"));
        let got = Version::from_header(value.as_ref());
        let expected = expected.map_err(|text| A2aError::VersionNotSupported(text.to_owned()));
        assert_eq!(got, expected, "{header:?}");
    }
    let long = HeaderValue::from_str(&"9".repeat(4096)).expect("header");
    match Version::from_header(Some(&long)) {
        Err(A2aError::VersionNotSupported(text)) => assert!(text.len() < 200),
        other => panic!("{other:?}"),
    }
    let opaque = HeaderValue::from_bytes(b"1.0\xff").expect("header");
    assert!(Version::from_header(Some(&opaque)).is_err());
    assert!(Version::V1.is_v1());
    assert!(!Version::V03.is_v1());
}

// --- Methods ---

#[test]
fn method_table() {
    let cases = [
        ("message/send", Some("SendMessage")),
        ("message/stream", Some("SendStreamingMessage")),
        ("tasks/get", Some("GetTask")),
        ("tasks/list", Some("ListTasks")),
        ("tasks/cancel", Some("CancelTask")),
        ("tasks/resubscribe", Some("SubscribeToTask")),
        (
            "tasks/pushNotificationConfig/set",
            Some("CreateTaskPushNotificationConfig"),
        ),
        (
            "tasks/pushNotificationConfig/get",
            Some("GetTaskPushNotificationConfig"),
        ),
        (
            "tasks/pushNotificationConfig/list",
            Some("ListTaskPushNotificationConfigs"),
        ),
        (
            "tasks/pushNotificationConfig/delete",
            Some("DeleteTaskPushNotificationConfig"),
        ),
        (
            "agent/getAuthenticatedExtendedCard",
            Some("GetExtendedAgentCard"),
        ),
        ("SendMessage", None),
        ("tasks/pushNotificationConfig", None),
        ("Message/Send", None),
        ("", None),
    ];
    for (method, expected) in cases {
        assert_eq!(method_to_v1(method), expected, "{method}");
    }
}

// --- 0.3 → 1.0 ---

/// `params_to_v1(method, input) == expected`.
fn check_params(method_v03: &str, input: &str, expected: &str) {
    let method = method_to_v1(method_v03).expect("a 0.3 method");
    let got = params_to_v1(method, parse(input)).unwrap_or_else(|err| panic!("{err}: {input}"));
    assert_eq!(got, parse(expected), "{method_v03} {input}");
}

fn check_params_refused(method_v03: &str, input: &str) {
    let method = method_to_v1(method_v03).expect("a 0.3 method");
    match params_to_v1(method, parse(input)) {
        Err(A2aError::InvalidParams(_)) => {}
        other => panic!("{method_v03} {input}: {other:?}"),
    }
}

#[test]
fn params_table() {
    // What an a2a-sdk 0.3 client sends for `message/send` (observed on the wire).
    check_params(
        "message/send",
        r#"{"message":{"kind":"message","messageId":"m1","role":"user",
            "parts":[{"kind":"text","text":"old client"}]},
            "configuration":{"acceptedOutputModes":[],"blocking":true}}"#,
        r#"{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"old client"}]},
            "configuration":{"acceptedOutputModes":[],"returnImmediately":false}}"#,
    );
    check_params(
        "message/stream",
        r#"{"message":{"kind":"message","messageId":"m2","role":"agent","taskId":"t1",
            "contextId":"c1","parts":[
              {"kind":"file","file":{"bytes":"aGk=","mimeType":"text/plain","name":"a.txt"}},
              {"kind":"file","file":{"uri":"https://x/y.png","mimeType":"image/png"},"metadata":{"k":1}},
              {"kind":"data","data":{"tool":"t","arguments":{}}},
              {"kind":"data","data":{"value":[1,2]},"metadata":{"data_part_compat":true}},
              {"kind":"data","data":{"value":"s"},"metadata":{"data_part_compat":true,"m":2}}]},
            "configuration":{"blocking":false,"historyLength":3,
              "pushNotificationConfig":{"url":"https://hook","token":"tok",
                "authentication":{"schemes":["Bearer"],"credentials":"secret"}}},
            "metadata":{"trace":"x"}}"#,
        r#"{"message":{"messageId":"m2","role":"ROLE_AGENT","taskId":"t1","contextId":"c1",
            "parts":[
              {"raw":"aGk=","mediaType":"text/plain","filename":"a.txt"},
              {"url":"https://x/y.png","mediaType":"image/png","metadata":{"k":1}},
              {"data":{"tool":"t","arguments":{}}},
              {"data":[1,2]},
              {"data":"s","metadata":{"m":2}}]},
            "configuration":{"returnImmediately":true,"historyLength":3,
              "taskPushNotificationConfig":{"url":"https://hook","token":"tok",
                "authentication":{"scheme":"Bearer","credentials":"secret"}}},
            "metadata":{"trace":"x"}}"#,
    );
    // 0.3 `historyLength: 0` is "no limit": left unset, not "omit the history".
    check_params(
        "message/send",
        r#"{"message":{"messageId":"m","role":"user","parts":[]},"configuration":{"historyLength":0}}"#,
        r#"{"message":{"messageId":"m","role":"ROLE_USER","parts":[]},"configuration":{}}"#,
    );
    check_params(
        "tasks/get",
        r#"{"id":"t1","historyLength":2}"#,
        r#"{"id":"t1","historyLength":2}"#,
    );
    check_params(
        "tasks/get",
        r#"{"id":"t1","historyLength":0}"#,
        r#"{"id":"t1"}"#,
    );
    check_params(
        "tasks/cancel",
        r#"{"id":"t1","metadata":{"why":"x"}}"#,
        r#"{"id":"t1","metadata":{"why":"x"}}"#,
    );
    check_params("tasks/resubscribe", r#"{"id":"t1"}"#, r#"{"id":"t1"}"#);
    check_params(
        "tasks/list",
        r#"{"status":"working","pageSize":10}"#,
        r#"{"status":"TASK_STATE_WORKING","pageSize":10}"#,
    );
    check_params(
        "tasks/pushNotificationConfig/set",
        r#"{"taskId":"t1","pushNotificationConfig":{"id":"p1","url":"https://hook","token":"tok",
            "authentication":{"schemes":["Bearer","Basic"],"credentials":"c"}}}"#,
        r#"{"taskId":"t1","id":"p1","url":"https://hook","token":"tok",
            "authentication":{"scheme":"Bearer","credentials":"c"}}"#,
    );
    check_params(
        "tasks/pushNotificationConfig/get",
        r#"{"id":"t1","pushNotificationConfigId":"p1"}"#,
        r#"{"taskId":"t1","id":"p1"}"#,
    );
    check_params(
        "tasks/pushNotificationConfig/get",
        r#"{"id":"t1"}"#,
        r#"{"taskId":"t1"}"#,
    );
    check_params(
        "tasks/pushNotificationConfig/delete",
        r#"{"id":"t1","pushNotificationConfigId":"p1"}"#,
        r#"{"taskId":"t1","id":"p1"}"#,
    );
    check_params(
        "tasks/pushNotificationConfig/list",
        r#"{"id":"t1"}"#,
        r#"{"taskId":"t1"}"#,
    );
    check_params("agent/getAuthenticatedExtendedCard", "{}", "{}");
    check_params("agent/getAuthenticatedExtendedCard", "null", "{}");
    // An already-1.0 part (no kind) passes unchanged.
    check_params(
        "message/send",
        r#"{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"a"},{"url":"u"},{"data":3}]}}"#,
        r#"{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"a"},{"url":"u"},{"data":3}]}}"#,
    );
}

#[test]
fn untranslatable_params_are_invalid() {
    let send = |message: &str| format!(r#"{{"message":{message}}}"#);
    let refused = [
        ("message/send", "[1]".to_owned()),
        ("message/send", send(r#""text""#)),
        (
            "message/send",
            send(r#"{"messageId":"m","role":"user","parts":[{"kind":"file","file":{"name":"n"}}]}"#),
        ),
        (
            "message/send",
            send(r#"{"messageId":"m","role":"user","parts":[{"kind":"file","file":{"bytes":"aA==","uri":"u"}}]}"#),
        ),
        (
            "message/send",
            send(r#"{"messageId":"m","role":"user","parts":[{"kind":"file"}]}"#),
        ),
        (
            "message/send",
            send(r#"{"messageId":"m","role":"user","parts":[{"kind":"image","image":"x"}]}"#),
        ),
        (
            "message/send",
            send(r#"{"messageId":"m","role":"user","parts":[{"metadata":{}}]}"#),
        ),
        (
            "message/send",
            send(r#"{"messageId":"m","role":"user","parts":["text"]}"#),
        ),
        (
            "message/send",
            send(r#"{"messageId":"m","role":"user","parts":[{"kind":"text","text":3}]}"#),
        ),
        (
            "message/send",
            send(r#"{"messageId":"m","role":"user","parts":[{"kind":"data"}]}"#),
        ),
        (
            "message/send",
            send(r#"{"messageId":"m","role":"system","parts":[]}"#),
        ),
        (
            "message/send",
            send(r#"{"messageId":"m","role":"user","parts":{}}"#),
        ),
        (
            "message/send",
            r#"{"message":{"messageId":"m","role":"user","parts":[]},"configuration":{"blocking":"yes"}}"#
                .to_owned(),
        ),
        (
            "message/send",
            r#"{"message":{"messageId":"m","role":"user","parts":[]},"configuration":{"pushNotificationConfig":{"url":"u","authentication":{"schemes":"Bearer"}}}}"#
                .to_owned(),
        ),
        ("tasks/pushNotificationConfig/set", r#"{"taskId":"t1"}"#.to_owned()),
        ("tasks/get", r#""t1""#.to_owned()),
    ];
    for (method, params) in refused {
        check_params_refused(method, &params);
    }
}

// --- 1.0 → 0.3 ---

fn check_result(method_v1: &str, input: &str, expected: &str) {
    assert_eq!(
        result_to_v03(method_v1, parse(input)),
        parse(expected),
        "{method_v1} {input}"
    );
}

#[test]
fn result_table() {
    check_result(
        "SendMessage",
        r#"{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_SUBMITTED"},
            "history":[{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}]}}"#,
        r#"{"kind":"task","id":"t1","contextId":"c1","status":{"state":"submitted"},
            "history":[{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"hi"}]}]}"#,
    );
    check_result(
        "SendMessage",
        r#"{"message":{"messageId":"m2","role":"ROLE_AGENT","parts":[{"data":{"a":1}}]}}"#,
        r#"{"kind":"message","messageId":"m2","role":"agent","parts":[{"kind":"data","data":{"a":1}}]}"#,
    );
    check_result(
        "GetTask",
        r#"{"id":"t1","contextId":"c1",
            "status":{"state":"TASK_STATE_INPUT_REQUIRED","timestamp":"2026-11-30T09:08:32.712Z",
              "message":{"messageId":"q","role":"ROLE_AGENT","parts":[{"text":"which?"}]}},
            "artifacts":[{"artifactId":"a1","name":"out","parts":[
              {"raw":"aGk=","mediaType":"text/plain","filename":"a.txt"},
              {"url":"https://x/y","mediaType":"","filename":""},
              {"data":[1,2]},
              {"data":null,"metadata":{"m":1}}]}]}"#,
        r#"{"kind":"task","id":"t1","contextId":"c1",
            "status":{"state":"input-required","timestamp":"2026-11-30T09:08:32.712Z",
              "message":{"kind":"message","messageId":"q","role":"agent","parts":[{"kind":"text","text":"which?"}]}},
            "artifacts":[{"artifactId":"a1","name":"out","parts":[
              {"kind":"file","file":{"bytes":"aGk=","mimeType":"text/plain","name":"a.txt"}},
              {"kind":"file","file":{"uri":"https://x/y"}},
              {"kind":"data","data":{"value":[1,2]},"metadata":{"data_part_compat":true}},
              {"kind":"data","data":{"value":null},"metadata":{"m":1,"data_part_compat":true}}]}]}"#,
    );
    check_result(
        "CancelTask",
        r#"{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_CANCELED"}}"#,
        r#"{"kind":"task","id":"t1","contextId":"c1","status":{"state":"canceled"}}"#,
    );
    check_result(
        "ListTasks",
        r#"{"tasks":[{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_COMPLETED"}}],
            "nextPageToken":"","pageSize":50,"totalSize":1}"#,
        r#"{"tasks":[{"kind":"task","id":"t1","contextId":"c1","status":{"state":"completed"}}],
            "nextPageToken":"","pageSize":50,"totalSize":1}"#,
    );
    let flat = r#"{"taskId":"t1","id":"t1","url":"https://hook","token":"tok",
                   "authentication":{"scheme":"Bearer","credentials":"secret"}}"#;
    let nested = r#"{"taskId":"t1","pushNotificationConfig":{"id":"t1","url":"https://hook",
                     "token":"tok","authentication":{"schemes":["Bearer"],"credentials":"secret"}}}"#;
    check_result("CreateTaskPushNotificationConfig", flat, nested);
    check_result("GetTaskPushNotificationConfig", flat, nested);
    check_result(
        "ListTaskPushNotificationConfigs",
        &format!(r#"{{"configs":[{flat}],"nextPageToken":""}}"#),
        &format!("[{nested}]"),
    );
    check_result("ListTaskPushNotificationConfigs", "{}", "[]");
    check_result(
        "GetTaskPushNotificationConfig",
        r#"{"taskId":"t1","url":"https://hook","authentication":{"scheme":""}}"#,
        r#"{"taskId":"t1","pushNotificationConfig":{"url":"https://hook","authentication":{"schemes":[]}}}"#,
    );
    check_result("DeleteTaskPushNotificationConfig", "null", "null");
    check_result("GetTask", "null", "null");
    check_result("SendMessage", "null", "null");
    check_result(
        "GetExtendedAgentCard",
        r#"{"name":"n","capabilities":{"extendedAgentCard":true},
            "supportedInterfaces":[{"url":"https://h/a2a","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}"#,
        r#"{"name":"n","capabilities":{"extendedAgentCard":true},
            "supportedInterfaces":[{"url":"https://h/a2a","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],
            "protocolVersion":"0.3.0","url":"https://h/a2a","preferredTransport":"JSONRPC",
            "additionalInterfaces":[{"url":"https://h/a2a","transport":"JSONRPC"}],
            "supportsAuthenticatedExtendedCard":true}"#,
    );
    check_result("SomethingElse", r#"{"task":{}}"#, r#"{"task":{}}"#);
}

/// A 1.0 stream as an a2a-sdk 1.3.0 server sends it (ids shortened) becomes the 0.3 stream the
/// same server sends a header-less client, `final` set on the event before close.
#[test]
fn observed_stream_translates_event_by_event() {
    let v1 = [
        r#"{"task":{"id":"e211","contextId":"8c5c","status":{"state":"TASK_STATE_SUBMITTED"},
            "history":[{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"old client"}],"contextId":"8c5c","taskId":"e211"}]}}"#,
        r#"{"statusUpdate":{"taskId":"e211","contextId":"8c5c","status":{"state":"TASK_STATE_WORKING","timestamp":"2026-11-30T09:08:32.712844Z"}}}"#,
        r#"{"artifactUpdate":{"taskId":"e211","contextId":"8c5c","artifact":{"artifactId":"adc0","name":"echo","parts":[{"text":"echo: old client"}]}}}"#,
        r#"{"statusUpdate":{"taskId":"e211","contextId":"8c5c","status":{"state":"TASK_STATE_COMPLETED","timestamp":"2026-11-30T09:08:32.713Z"}}}"#,
    ];
    let v03 = [
        r#"{"contextId":"8c5c","history":[{"contextId":"8c5c","kind":"message","messageId":"m1","parts":[{"kind":"text","text":"old client"}],"role":"user","taskId":"e211"}],"id":"e211","kind":"task","status":{"state":"submitted"}}"#,
        r#"{"contextId":"8c5c","final":false,"kind":"status-update","status":{"state":"working","timestamp":"2026-11-30T09:08:32.712844Z"},"taskId":"e211"}"#,
        r#"{"append":false,"artifact":{"artifactId":"adc0","name":"echo","parts":[{"kind":"text","text":"echo: old client"}]},"contextId":"8c5c","kind":"artifact-update","lastChunk":false,"taskId":"e211"}"#,
        r#"{"contextId":"8c5c","final":true,"kind":"status-update","status":{"state":"completed","timestamp":"2026-11-30T09:08:32.713Z"},"taskId":"e211"}"#,
    ];
    for (index, (event, expected)) in v1.iter().zip(v03).enumerate() {
        let last = index == v1.len() - 1;
        assert_eq!(
            event_to_v03(&parse(event), last),
            parse(expected),
            "{event}"
        );
    }
    // A direct message and a chunked artifact.
    assert_eq!(
        event_to_v03(
            &parse(r#"{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"x"}]}}"#),
            true
        ),
        parse(
            r#"{"kind":"message","messageId":"m","role":"agent","parts":[{"kind":"text","text":"x"}]}"#
        ),
    );
    assert_eq!(
        event_to_v03(
            &parse(
                r#"{"artifactUpdate":{"taskId":"t","contextId":"c","append":true,"lastChunk":true,
                    "metadata":{"k":1},"artifact":{"artifactId":"a","parts":[{"data":{"n":1}}]}}}"#
            ),
            false
        ),
        parse(
            r#"{"kind":"artifact-update","taskId":"t","contextId":"c","append":true,"lastChunk":true,
                "metadata":{"k":1},"artifact":{"artifactId":"a","parts":[{"kind":"data","data":{"n":1}}]}}"#
        ),
    );
    // Stream methods answer one event through `result_to_v03` too.
    assert_eq!(
        result_to_v03("SubscribeToTask", parse(v1[0])),
        parse(v03[0])
    );
    assert_eq!(
        event_to_v03(&parse(r#"{"other":1}"#), true),
        parse(r#"{"other":1}"#)
    );
}

#[test]
fn unknown_members_survive_both_ways() {
    check_params(
        "message/send",
        r#"{"x":1,"message":{"kind":"message","messageId":"m","role":"user","y":[2],
            "parts":[{"kind":"text","text":"t","z":3},
                     {"kind":"file","file":{"uri":"u","w":4},"v":5}]},
            "configuration":{"blocking":true,"u":6,
              "pushNotificationConfig":{"url":"h","q":7,"authentication":{"schemes":["B"],"r":8}}}}"#,
        r#"{"x":1,"message":{"messageId":"m","role":"ROLE_USER","y":[2],
            "parts":[{"text":"t","z":3},{"url":"u","w":4,"v":5}]},
            "configuration":{"returnImmediately":false,"u":6,
              "taskPushNotificationConfig":{"url":"h","q":7,"authentication":{"scheme":"B","r":8}}}}"#,
    );
    let event = parse(
        r#"{"statusUpdate":{"taskId":"t","contextId":"c","generation":9,
            "status":{"state":"TASK_STATE_AUTH_REQUIRED","s":1,
              "message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"x","p":2}],"e":3}}}}"#,
    );
    assert_eq!(
        event_to_v03(&event, true),
        parse(
            r#"{"kind":"status-update","taskId":"t","contextId":"c","generation":9,"final":true,
                "status":{"state":"auth-required","s":1,
                  "message":{"kind":"message","messageId":"m","role":"agent","parts":[{"kind":"text","text":"x","p":2}],"e":3}}}"#
        ),
    );
    check_result(
        "GetTask",
        r#"{"id":"t","contextId":"c","generation":7,"timeline":[{"a":1}],
            "status":{"state":"TASK_STATE_NEW_IN_1_2"}}"#,
        r#"{"kind":"task","id":"t","contextId":"c","generation":7,"timeline":[{"a":1}],
            "status":{"state":"unknown"}}"#,
    );
}

/// A 0.3 message goes in through `params_to_v1`, lives in a 1.0 task (history, status
/// message, artifact parts), and comes back through `result_to_v03` exactly as sent.
#[test]
fn round_trip_of_a_task_keeps_every_member() {
    let message_v03 = parse(
        r#"{"kind":"message","messageId":"m1","role":"user","contextId":"c1","taskId":"t1",
            "metadata":{"trace":"x"},"extensions":["urn:e"],"referenceTaskIds":["t0"],"extra":{"a":1},
            "parts":[
              {"kind":"text","text":"hello","metadata":{"lang":"en"}},
              {"kind":"file","file":{"bytes":"aGk=","mimeType":"text/plain","name":"a.txt"}},
              {"kind":"file","file":{"uri":"https://x/y.png","mimeType":"image/png","name":"y.png"},"metadata":{"k":1}},
              {"kind":"data","data":{"tool":"t","arguments":{"n":1}}},
              {"kind":"data","data":{"value":[1,"two"]},"metadata":{"data_part_compat":true}},
              {"kind":"data","data":{"value":7},"metadata":{"data_part_compat":true,"m":2}}]}"#,
    );
    let params = params_to_v1(
        "SendMessage",
        json!({ "message": message_v03.clone(), "configuration": {"blocking": true} }),
    )
    .expect("translates");
    let message_v1 = params["message"].clone();
    assert_eq!(message_v1["role"], "ROLE_USER");
    assert!(message_v1.get("kind").is_none());

    let task_v1 = json!({
        "id": "t1", "contextId": "c1", "generation": 4, "metadata": {"owner": "o"},
        "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2026-12-02T09:00:00.000Z",
                   "message": message_v1.clone()},
        "history": [message_v1.clone()],
        "artifacts": [{"artifactId": "a1", "name": "n", "description": "d",
                       "extensions": ["urn:e"], "metadata": {"z": 0},
                       "parts": message_v1["parts"].clone()}],
    });
    let task_v03 = result_to_v03("GetTask", task_v1.clone());
    assert_eq!(
        task_v03,
        json!({
            "kind": "task", "id": "t1", "contextId": "c1", "generation": 4,
            "metadata": {"owner": "o"},
            "status": {"state": "completed", "timestamp": "2026-12-02T09:00:00.000Z",
                       "message": message_v03.clone()},
            "history": [message_v03.clone()],
            "artifacts": [{"artifactId": "a1", "name": "n", "description": "d",
                           "extensions": ["urn:e"], "metadata": {"z": 0},
                           "parts": message_v03["parts"].clone()}],
        })
    );
    // The same task through `SendMessage`'s wrapper and as a stream event.
    assert_eq!(
        result_to_v03("SendMessage", json!({ "task": task_v1.clone() })),
        task_v03
    );
    assert_eq!(event_to_v03(&json!({ "task": task_v1 }), false), task_v03);

    // A push config set through 0.3 reads back in its 0.3 shape.
    let set_v03 = parse(
        r#"{"taskId":"t1","pushNotificationConfig":{"id":"p1","url":"https://hook","token":"tok",
            "authentication":{"schemes":["Bearer"],"credentials":"secret"}}}"#,
    );
    let flat = params_to_v1("CreateTaskPushNotificationConfig", set_v03.clone()).expect("flat");
    assert_eq!(
        result_to_v03("CreateTaskPushNotificationConfig", flat),
        set_v03
    );
}

// --- Agent card ---

#[test]
fn card_gets_its_0_3_members_beside_the_1_0_ones() {
    let mut card = parse(
        r#"{"name":"n","description":"d","version":"1",
            "supportedInterfaces":[
              {"url":"https://h/t/c/a2a","protocolBinding":"JSONRPC","protocolVersion":"1.0"},
              {"url":"https://h/t/c/a2a-old","protocolBinding":"JSONRPC","protocolVersion":"0.3"}],
            "capabilities":{"streaming":true,"pushNotifications":false,"extendedAgentCard":true},
            "securitySchemes":{
              "apiKey":{"httpAuthSecurityScheme":{"scheme":"Bearer","bearerFormat":"rtk_ API key"}},
              "apiKeyHeader":{"apiKeySecurityScheme":{"location":"header","name":"X-API-Key"}},
              "oauth":{"oauth2SecurityScheme":{"flows":{"authorizationCode":{"authorizationUrl":"https://a/authorize",
                "tokenUrl":"https://a/token","scopes":{"a2a":"use"},"pkceRequired":true}}}},
              "oidc":{"openIdConnectSecurityScheme":{"openIdConnectUrl":"https://a/.well-known/openid-configuration"}},
              "mtls":{"mtlsSecurityScheme":{}}},
            "securityRequirements":[{"schemes":{"apiKey":{"list":["a2a"]}}},{"schemes":{"apiKeyHeader":{"list":[]}}}],
            "defaultInputModes":["application/json"],"defaultOutputModes":["application/json"],
            "skills":[{"id":"s","name":"s","description":"d","tags":["t"],
                       "securityRequirements":[{"schemes":{"oauth":{"list":["a2a"]}}}]},
                      {"id":"u","name":"u","description":"d","tags":["t"]}]}"#,
    );
    card_v03_members(&mut card);
    let expected = parse(
        r#"{"name":"n","description":"d","version":"1",
            "supportedInterfaces":[
              {"url":"https://h/t/c/a2a","protocolBinding":"JSONRPC","protocolVersion":"1.0"},
              {"url":"https://h/t/c/a2a-old","protocolBinding":"JSONRPC","protocolVersion":"0.3"}],
            "protocolVersion":"0.3.0","url":"https://h/t/c/a2a-old","preferredTransport":"JSONRPC",
            "additionalInterfaces":[{"url":"https://h/t/c/a2a-old","transport":"JSONRPC"}],
            "supportsAuthenticatedExtendedCard":true,
            "capabilities":{"streaming":true,"pushNotifications":false,"extendedAgentCard":true},
            "securitySchemes":{
              "apiKey":{"httpAuthSecurityScheme":{"scheme":"Bearer","bearerFormat":"rtk_ API key"},
                        "type":"http","scheme":"Bearer","bearerFormat":"rtk_ API key"},
              "apiKeyHeader":{"apiKeySecurityScheme":{"location":"header","name":"X-API-Key"},
                              "type":"apiKey","in":"header","name":"X-API-Key"},
              "oauth":{"oauth2SecurityScheme":{"flows":{"authorizationCode":{"authorizationUrl":"https://a/authorize",
                         "tokenUrl":"https://a/token","scopes":{"a2a":"use"},"pkceRequired":true}}},
                       "type":"oauth2","flows":{"authorizationCode":{"authorizationUrl":"https://a/authorize",
                         "tokenUrl":"https://a/token","scopes":{"a2a":"use"},"pkceRequired":true}}},
              "oidc":{"openIdConnectSecurityScheme":{"openIdConnectUrl":"https://a/.well-known/openid-configuration"},
                      "type":"openIdConnect","openIdConnectUrl":"https://a/.well-known/openid-configuration"},
              "mtls":{"mtlsSecurityScheme":{},"type":"mutualTLS"}},
            "securityRequirements":[{"schemes":{"apiKey":{"list":["a2a"]}}},{"schemes":{"apiKeyHeader":{"list":[]}}}],
            "security":[{"apiKey":["a2a"]},{"apiKeyHeader":[]}],
            "defaultInputModes":["application/json"],"defaultOutputModes":["application/json"],
            "skills":[{"id":"s","name":"s","description":"d","tags":["t"],
                       "securityRequirements":[{"schemes":{"oauth":{"list":["a2a"]}}}],
                       "security":[{"oauth":["a2a"]}]},
                      {"id":"u","name":"u","description":"d","tags":["t"]}]}"#,
    );
    assert_eq!(card, expected);
    // Idempotent: nothing already there is touched.
    card_v03_members(&mut card);
    assert_eq!(card, expected);

    // Without a 0.3 interface the first one is the 0.3 `url`; no extended card → false.
    let mut card = parse(
        r#"{"supportedInterfaces":[{"url":"https://h/a","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],
            "capabilities":{}}"#,
    );
    card_v03_members(&mut card);
    assert_eq!(
        card,
        parse(
            r#"{"supportedInterfaces":[{"url":"https://h/a","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],
                "capabilities":{},"protocolVersion":"0.3.0","url":"https://h/a","preferredTransport":"JSONRPC",
                "additionalInterfaces":[{"url":"https://h/a","transport":"JSONRPC"}],
                "supportsAuthenticatedExtendedCard":false}"#
        )
    );
    let mut not_a_card = json!([1]);
    card_v03_members(&mut not_a_card);
    assert_eq!(not_a_card, json!([1]));
}
