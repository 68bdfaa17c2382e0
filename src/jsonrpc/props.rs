//! Properties checked by the fuzz target and the integration tests. They never panic on any
//! input, except to report a violated property. They must not be used on a hot path.

use bytes::BytesMut;

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
/// response that is valid JSON; an accepted message written back with `Message::write_to`
/// parses again to an equal message (same kind, id text, method, error, payload JSON).
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
    let mut written = BytesMut::new();
    first.write_to(&mut written);
    let mut rewritten = written.to_vec();
    let second = match parse(&mut rewritten) {
        Ok(message) => message,
        Err(error) => panic!("re-parse of {written:?} failed: {error:?}"),
    };
    assert_eq!(summary(&first), summary(&second), "written: {written:?}");
}
