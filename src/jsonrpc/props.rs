//! Properties checked by the fuzz target and the integration tests. They never panic on any
//! input, except to report a violated property. They must not be used on a hot path.

use std::fmt;

use bytes::BytesMut;
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

use super::{parse, ErrorCode, Message};

/// Kind, id text, method, error (code, message), payload JSON text.
type Summary = (
    u8,
    Option<String>,
    Option<String>,
    Option<(i64, String)>,
    Option<Vec<u8>>,
);

/// The parts of a message that must survive a write and a re-parse: kind, id text, method,
/// error code and message, and the payload's canonical JSON text.
fn summary(message: &Message<'_>) -> Summary {
    let (kind, payload, error) = match message {
        Message::Request { params, .. } => (0, params.as_ref(), None),
        Message::Notification { params, .. } => (1, params.as_ref(), None),
        Message::Response { result, .. } => (2, Some(result), None),
        Message::ErrorResponse {
            code,
            message,
            data,
            ..
        } => (3, data.as_ref(), Some((*code, (*message).to_owned()))),
    };
    (
        kind,
        message.id().map(|id| id.to_string()),
        message.method().map(str::to_owned),
        error,
        payload.map(|payload| payload.to_json_vec()),
    )
}

/// For any input: `parse` does not panic; a rejection is -32700 or -32600 and writes an error
/// response that is valid JSON; an accepted body holds no NUL byte and no repeated name in any
/// object; an accepted message written back with `Message::write_to` parses again to an equal
/// message (same kind, id text, method, error, payload JSON).
pub fn parse_roundtrip(data: &[u8]) {
    let mut body = data.to_vec();
    let first = match parse(&mut body) {
        Ok(message) => message,
        Err(error) => {
            assert!(
                error.code == ErrorCode::PARSE_ERROR || error.code == ErrorCode::INVALID_REQUEST,
                "unexpected code {:?}",
                error.code
            );
            assert!(
                error.code == ErrorCode::INVALID_REQUEST || error.id.is_none(),
                "a parse error carries no id"
            );
            let mut written = BytesMut::new();
            error.write_to(&mut written);
            let reply: Result<serde_json::Value, _> = serde_json::from_slice(&written);
            assert!(reply.is_ok(), "error reply is not JSON: {written:?}");
            return;
        }
    };
    // Strictness: an accepted body has no NUL byte and, read by a naive reference, no object
    // with a repeated name at any depth.
    assert!(!data.contains(&0), "a body with a NUL byte was accepted");
    assert!(
        naive_has_repeated_name(data) != Some(true),
        "a body with a repeated name was accepted"
    );
    let mut written = BytesMut::new();
    first.write_to(&mut written);
    let mut rewritten = written.to_vec();
    let second = match parse(&mut rewritten) {
        Ok(message) => message,
        Err(error) => panic!("re-parse of {written:?} failed: {error:?}"),
    };
    assert_eq!(summary(&first), summary(&second), "written: {written:?}");
}

/// The naive reference for repeated names: serde_json reads `data` as one value while each
/// object remembers its names in a `Vec`. `Some(true)` when some object repeats a name, `None`
/// when serde_json does not read `data` as exactly one JSON value.
fn naive_has_repeated_name(data: &[u8]) -> Option<bool> {
    serde_json::from_slice::<Repeated>(data)
        .ok()
        .map(|Repeated(repeated)| repeated)
}

/// Whether a value holds an object with a repeated name.
struct Repeated(bool);

impl<'de> Deserialize<'de> for Repeated {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(RepeatedVisitor)
    }
}

struct RepeatedVisitor;

impl<'de> Visitor<'de> for RepeatedVisitor {
    type Value = Repeated;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Repeated, E> {
        Ok(Repeated(false))
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Repeated, E> {
        Ok(Repeated(false))
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Repeated, E> {
        Ok(Repeated(false))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Repeated, E> {
        Ok(Repeated(false))
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Repeated, E> {
        Ok(Repeated(false))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Repeated, E> {
        Ok(Repeated(false))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Repeated, A::Error> {
        let mut repeated = false;
        while let Some(Repeated(inner)) = seq.next_element()? {
            repeated |= inner;
        }
        Ok(Repeated(repeated))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Repeated, A::Error> {
        let mut names: Vec<String> = Vec::new();
        let mut repeated = false;
        while let Some(name) = map.next_key::<String>()? {
            repeated |= names.contains(&name);
            names.push(name);
            let Repeated(inner) = map.next_value()?;
            repeated |= inner;
        }
        Ok(Repeated(repeated))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_naive_reference_finds_repeated_names() {
        assert_eq!(
            naive_has_repeated_name(br#"{"a":1,"b":[{"a":2}]}"#),
            Some(false)
        );
        assert_eq!(
            naive_has_repeated_name(br#"{"a":1,"b":[{"c":2,"c":3}]}"#),
            Some(true)
        );
        assert_eq!(
            naive_has_repeated_name(br#"{"a":1,"\u0061":2}"#),
            Some(true)
        );
        assert_eq!(naive_has_repeated_name(b"{} x"), None);
        parse_roundtrip(br#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1,"a":2}}"#);
        parse_roundtrip(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"}\x00{}");
    }
}
