//! Unit tests of `stream.rs` and `stream/`.
use super::*;

fn check(input: &str, expected: Option<(&str, u64, u64)>) {
    let parsed = parse_event_id(input.as_bytes())
        .map(|id| (std::str::from_utf8(id.instance).unwrap(), id.stream, id.seq));
    assert_eq!(parsed, expected, "{input:?}");
}

#[test]
fn event_id_parsing() {
    check("abc.1.2", Some(("abc", 1, 2)));
    check("A_-9.0.0", Some(("A_-9", 0, 0)));
    check("i.18446744073709551615.1", Some(("i", u64::MAX, 1)));
    check("i.18446744073709551616.1", None); // overflow
    check("", None);
    check("abc", None);
    check("abc.1", None);
    check("abc.1.2.3", None);
    check(".1.2", None);
    check("abc..2", None);
    check("abc.1.", None);
    check("abc.01.2", None);
    check("abc.1.+2", None);
    check("abc.1.-2", None);
    check("abc.1.2 ", None);
    check("a b.1.2", None);
    check("abcdefghijklmnopq.1.2", None); // 17-char instance
    check("é.1.2", None);
}

#[test]
fn event_id_format_round_trips() {
    for (instance, stream, seq) in [
        ("x", 0, 0),
        ("inst-01", 7, 123),
        ("abcdefghijklmnop", u64::MAX, u64::MAX),
    ] {
        let id = EventId::new(instance, stream, seq);
        let parsed = parse_event_id(id.as_bytes()).unwrap();
        assert_eq!(
            (parsed.instance, parsed.stream, parsed.seq),
            (instance.as_bytes(), stream, seq)
        );
    }
}

#[test]
fn instance_ids() {
    assert!(StreamRegistry::new(StreamConfig::default()).is_ok());
    let random = StreamRegistry::new(StreamConfig::default()).unwrap();
    assert_eq!(random.instance().len(), INSTANCE_ID_LEN);
    assert!(is_instance_id(random.instance().as_bytes()));
    for bad in ["", "a.b", "with space", "abcdefghijklmnopq"] {
        let config = StreamConfig {
            instance: Some(bad.to_owned()),
            ..StreamConfig::default()
        };
        assert!(
            matches!(
                StreamRegistry::new(config),
                Err(StreamError::InvalidInstance(_))
            ),
            "{bad:?}"
        );
    }
}

#[test]
fn listen_message_names_the_subscription() {
    let message = list_changed_message(Some(br#""sub-1""#));
    let value: serde_json::Value = serde_json::from_slice(&message).unwrap();
    assert_eq!(
        value["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "sub-1"
    );
    assert_eq!(
        &list_changed_message(None)[..],
        br#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#
    );
    assert_eq!(
        &message[..],
        br#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"sub-1"}}}"#
    );
}
