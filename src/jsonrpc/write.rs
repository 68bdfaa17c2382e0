//! Writers: JSON-RPC messages appended to a caller-provided (pooled) `BytesMut`.
//!
//! Values are serialized by serde straight into the buffer through `BufMut::writer`, with no
//! intermediate `String`. When serialization fails, the buffer is truncated back to where the
//! message began, so a caller never sends half a message. This file does no parsing and knows
//! no MCP method.

use bytes::{BufMut, BytesMut};
use serde::Serialize;

use super::id::{write_json_int, IdRef};
use super::parse::{Message, ParseError};
use super::ErrorCode;
use crate::json_text::put_str;

const HEAD_WITH_ID: &[u8] = br#"{"jsonrpc":"2.0","id":"#;

/// Serializes `value` as JSON at the end of `buf`.
fn put_serialized<T: Serialize + ?Sized>(
    buf: &mut BytesMut,
    value: &T,
) -> Result<(), serde_json::Error> {
    serde_json::to_writer(buf.writer(), value)
}

/// Runs `write`, truncating `buf` back to its length before the call if `write` fails.
fn all_or_nothing<E>(
    buf: &mut BytesMut,
    write: impl FnOnce(&mut BytesMut) -> Result<(), E>,
) -> Result<(), E> {
    let start = buf.len();
    let result = write(buf);
    if result.is_err() {
        buf.truncate(start);
    }
    result
}

/// Writes `{"jsonrpc":"2.0","id":…,"result":…}`.
#[cfg(test)]
pub(crate) fn write_result<'i, T: Serialize + ?Sized>(
    buf: &mut BytesMut,
    id: impl Into<IdRef<'i>>,
    result: &T,
) -> Result<(), serde_json::Error> {
    let id = id.into();
    all_or_nothing(buf, |buf| {
        buf.put_slice(HEAD_WITH_ID);
        id.write_json(buf);
        buf.put_slice(br#","result":"#);
        put_serialized(buf, result)?;
        buf.put_u8(b'}');
        Ok(())
    })
}

/// Writes `{"jsonrpc":"2.0","id":…,"result":<raw_json>}` where `raw_json` is already JSON
/// (e.g. a downstream body passed through). The caller vouches that it is one valid JSON value.
pub(crate) fn write_result_raw<'i>(buf: &mut BytesMut, id: impl Into<IdRef<'i>>, raw_json: &[u8]) {
    buf.reserve(HEAD_WITH_ID.len() + raw_json.len() + 32);
    buf.put_slice(HEAD_WITH_ID);
    id.into().write_json(buf);
    buf.put_slice(br#","result":"#);
    buf.put_slice(raw_json);
    buf.put_u8(b'}');
}

/// Writes the head of an error up to and including the message:
/// `{"jsonrpc":"2.0","id":…,"error":{"code":…,"message":"…"`.
fn put_error_head(buf: &mut BytesMut, id: IdRef<'_>, code: i64, message: &str) {
    buf.put_slice(HEAD_WITH_ID);
    id.write_json(buf);
    buf.put_slice(br#","error":{"code":"#);
    write_json_int(buf, code);
    buf.put_slice(br#","message":"#);
    put_str(buf, message);
}

/// Writes `{"jsonrpc":"2.0","id":…|null,"error":{"code":…,"message":…}}`.
pub(crate) fn write_error<'i>(
    buf: &mut BytesMut,
    id: impl Into<IdRef<'i>>,
    code: ErrorCode,
    message: &str,
) {
    put_error_head(buf, id.into(), i64::from(code.0), message);
    buf.put_slice(b"}}");
}

/// Writes an error with a `data` member serialized from `data`.
pub(crate) fn write_error_with_data<'i, D: Serialize + ?Sized>(
    buf: &mut BytesMut,
    id: impl Into<IdRef<'i>>,
    code: ErrorCode,
    message: &str,
    data: &D,
) -> Result<(), serde_json::Error> {
    let id = id.into();
    all_or_nothing(buf, |buf| {
        put_error_head(buf, id, i64::from(code.0), message);
        buf.put_slice(br#","data":"#);
        put_serialized(buf, data)?;
        buf.put_slice(b"}}");
        Ok(())
    })
}

/// Writes `{"jsonrpc":"2.0","id":…,"method":…,"params":…}` (no `params` when `None`).
#[cfg(test)]
pub(crate) fn write_request<'i, T: Serialize + ?Sized>(
    buf: &mut BytesMut,
    id: impl Into<IdRef<'i>>,
    method: &str,
    params: Option<&T>,
) -> Result<(), serde_json::Error> {
    let id = id.into();
    all_or_nothing(buf, |buf| {
        buf.put_slice(HEAD_WITH_ID);
        id.write_json(buf);
        put_method_and_params(buf, method, params)
    })
}

/// Writes `{"jsonrpc":"2.0","method":…,"params":…}` (no `params` when `None`).
#[cfg(test)]
pub(crate) fn write_notification<T: Serialize + ?Sized>(
    buf: &mut BytesMut,
    method: &str,
    params: Option<&T>,
) -> Result<(), serde_json::Error> {
    all_or_nothing(buf, |buf| {
        buf.put_slice(br#"{"jsonrpc":"2.0""#);
        put_method_and_params(buf, method, params)
    })
}

#[cfg(test)]
fn put_method_and_params<T: Serialize + ?Sized>(
    buf: &mut BytesMut,
    method: &str,
    params: Option<&T>,
) -> Result<(), serde_json::Error> {
    buf.put_slice(br#","method":"#);
    put_str(buf, method);
    if let Some(params) = params {
        buf.put_slice(br#","params":"#);
        put_serialized(buf, params)?;
    }
    buf.put_u8(b'}');
    Ok(())
}

// === impl Message ===

impl Message<'_> {
    /// Writes the message back as compact JSON-RPC (members in canonical order, ids and
    /// strings re-escaped, payloads re-serialized from the tape).
    pub fn write_to(&self, buf: &mut BytesMut) {
        match self {
            Message::Request { id, method, params } => {
                buf.put_slice(HEAD_WITH_ID);
                id.write_json(buf);
                buf.put_slice(br#","method":"#);
                put_str(buf, method);
                if let Some(params) = params {
                    buf.put_slice(br#","params":"#);
                    params.write_json(buf);
                }
                buf.put_u8(b'}');
            }
            Message::Notification { method, params } => {
                buf.put_slice(br#"{"jsonrpc":"2.0","method":"#);
                put_str(buf, method);
                if let Some(params) = params {
                    buf.put_slice(br#","params":"#);
                    params.write_json(buf);
                }
                buf.put_u8(b'}');
            }
            Message::Response { id, result } => {
                buf.put_slice(HEAD_WITH_ID);
                id.write_json(buf);
                buf.put_slice(br#","result":"#);
                result.write_json(buf);
                buf.put_u8(b'}');
            }
            Message::ErrorResponse {
                id,
                code,
                message,
                data,
            } => {
                put_error_head(buf, IdRef::from(*id), *code, message);
                if let Some(data) = data {
                    buf.put_slice(br#","data":"#);
                    data.write_json(buf);
                }
                buf.put_slice(b"}}");
            }
        }
    }
}

// === impl ParseError ===

impl ParseError {
    /// Writes the error response for this rejection (`"id": null` when the id was unreadable).
    pub fn write_to(&self, buf: &mut BytesMut) {
        write_error(buf, self.id.as_ref(), self.code, self.message);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;
    use crate::jsonrpc::{parse, Id, OwnedId};

    /// Checks that `written` is one JSON value equal to `expected` (read back with serde_json).
    fn check(written: &[u8], expected: Value) {
        let actual: Value = serde_json::from_slice(written)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(written)));
        assert_eq!(actual, expected);
    }

    fn written(write: impl FnOnce(&mut BytesMut)) -> BytesMut {
        let mut buf = BytesMut::new();
        write(&mut buf);
        buf
    }

    #[test]
    fn results_parse_back() {
        let owned = OwnedId::from_str_id("a\"b\\é");
        check(
            &written(|b| write_result(b, Id::Int(0), &json!({"ok": true})).unwrap()),
            json!({"jsonrpc": "2.0", "id": 0, "result": {"ok": true}}),
        );
        check(
            &written(|b| write_result(b, &owned, "text\n\u{1}").unwrap()),
            json!({"jsonrpc": "2.0", "id": "a\"b\\é", "result": "text\n\u{1}"}),
        );
        check(
            &written(|b| write_result(b, Id::from_u64(9_007_199_254_740_993), &()).unwrap()),
            json!({"jsonrpc": "2.0", "id": 9_007_199_254_740_993_u64, "result": null}),
        );
        check(
            &written(|b| write_result_raw(b, &b"\"0\""[..], br#"{"content":[]}"#)),
            json!({"jsonrpc": "2.0", "id": "0", "result": {"content": []}}),
        );
        // The big id keeps every digit on the wire (serde_json would read it back exactly too).
        assert!(
            written(|b| write_result_raw(b, Id::from_u64(9_007_199_254_740_993), b"1"))
                .starts_with(br#"{"jsonrpc":"2.0","id":9007199254740993,"#)
        );
    }

    #[test]
    fn errors_parse_back() {
        check(
            &written(|b| write_error(b, None::<&OwnedId>, ErrorCode::PARSE_ERROR, "bad \"json\"")),
            json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "bad \"json\""}}),
        );
        check(
            &written(|b| {
                write_error_with_data(
                    b,
                    Id::Str("x"),
                    ErrorCode::INVALID_PARAMS,
                    "é",
                    &json!({"uri": "a"}),
                )
                .unwrap()
            }),
            json!({"jsonrpc": "2.0", "id": "x", "error": {"code": -32602, "message": "é", "data": {"uri": "a"}}}),
        );
        let mut body = br#"{"jsonrpc":"2.0","id":[1],"method":"m"}"#.to_vec();
        let error = parse(&mut body).map(|_| ()).unwrap_err();
        check(
            &written(|b| error.write_to(b)),
            json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": error.message}}),
        );
    }

    #[test]
    fn requests_and_notifications_parse_back() {
        check(
            &written(|b| write_request(b, Id::Int(4), "tools/list", None::<&()>).unwrap()),
            json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"}),
        );
        check(
            &written(|b| {
                write_notification(b, "notifications/progress", Some(&json!({"p": 1}))).unwrap()
            }),
            json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"p": 1}}),
        );
    }

    #[test]
    fn failed_serialization_leaves_buffer_unchanged() {
        struct Fails;
        impl Serialize for Fails {
            fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
                Err(serde::ser::Error::custom("no"))
            }
        }
        let mut buf = BytesMut::from(&b"kept"[..]);
        assert!(write_result(&mut buf, Id::Int(1), &Fails).is_err());
        assert!(write_error_with_data(
            &mut buf,
            Id::Int(1),
            ErrorCode::INTERNAL_ERROR,
            "m",
            &Fails
        )
        .is_err());
        assert_eq!(&buf[..], b"kept");
    }

    #[test]
    fn parsed_messages_write_back() {
        for input in [
            json!({"jsonrpc": "2.0", "id": "q", "method": "tools/call", "params": {"name": "n", "arguments": {"a": [1, 2.5, null]}}}),
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": ["x"]}),
            json!({"jsonrpc": "2.0", "id": -7, "result": {"content": [{"type": "text", "text": "a\u{0}b"}]}}),
            json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32000, "message": "m", "data": "d"}}),
        ] {
            let mut body = serde_json::to_vec(&input).unwrap();
            let message = parse(&mut body).unwrap();
            check(&written(|b| message.write_to(b)), input);
        }
    }
}
