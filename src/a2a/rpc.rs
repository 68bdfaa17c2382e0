//! One A2A JSON-RPC request in, one response out: the request read with the crate's strict
//! JSON-RPC codec (`jsonrpc::parse_with`: no NUL byte, no repeated member, bounded depth, one
//! message — A2A has no batches) and its `params` handed on as a JSON value; responses and
//! stream events written around the caller's id, byte for byte as it sent it.
//! Must not know A2A methods or tasks.

use bytes::{BufMut, Bytes, BytesMut};
use serde_json::Value;

use super::A2aError;
use crate::jsonrpc::{self, IdRef, Message};

/// A parsed A2A request.
#[derive(Debug)]
pub(crate) struct Request {
    /// The id's JSON text, echoed in every answer and stream event.
    pub id: Bytes,
    /// The method as sent (a 0.3 name is translated by the caller).
    pub method: String,
    /// The params (`{}` when absent).
    pub params: Params,
}

/// A request's params object as compact JSON text, read into the method's own type in one
/// pass (no intermediate `Value` tree on the 1.0 path).
#[derive(Debug, Clone)]
pub(crate) struct Params(Bytes);

impl Params {
    /// The params of `value` (an object).
    pub(crate) fn from_value(value: &Value) -> Params {
        Params(Bytes::from(
            serde_json::to_vec(value).unwrap_or_else(|_| b"{}".to_vec()),
        ))
    }

    /// The params read as `T`; `InvalidParams` with serde's reason when they do not fit.
    pub(crate) fn read<T: serde::de::DeserializeOwned>(&self) -> Result<T, A2aError> {
        serde_json::from_slice(&self.0)
            .map_err(|err| A2aError::InvalidParams(err.to_string().into()))
    }

    /// The params as a JSON value.
    pub(crate) fn value(&self) -> Result<Value, A2aError> {
        self.read()
    }
}

/// Why a body is not an A2A request: the error and the id to answer it with, when readable.
#[derive(Debug)]
pub(crate) struct Refused {
    pub id: Option<Bytes>,
    pub error: A2aError,
}

/// Reads one request from `body` (parsed in place).
pub(crate) fn parse(body: &mut [u8], limits: &jsonrpc::Limits) -> Result<Request, Refused> {
    let message = jsonrpc::parse_with(body, limits).map_err(|err| Refused {
        id: err
            .id
            .as_ref()
            .map(|id| Bytes::copy_from_slice(id.as_json())),
        error: if err.code == jsonrpc::ErrorCode::PARSE_ERROR {
            A2aError::Parse
        } else {
            A2aError::InvalidRequest(err.message.into())
        },
    })?;
    match message {
        Message::Request { id, method, params } => {
            let mut text = BytesMut::with_capacity(24);
            id.write_json(&mut text);
            let id = text.freeze();
            let params = match params {
                None => Params(Bytes::from_static(b"{}")),
                // The tape was checked (depth, names); the method reads the compact copy.
                Some(payload) => {
                    let json = payload.to_json_vec();
                    if json.first() != Some(&b'{') {
                        return Err(Refused {
                            id: Some(id),
                            error: A2aError::InvalidParams("params must be an object".into()),
                        });
                    }
                    Params(Bytes::from(json))
                }
            };
            Ok(Request {
                id,
                method: method.to_owned(),
                params,
            })
        }
        Message::Notification { .. } => Err(Refused {
            id: None,
            error: A2aError::InvalidRequest("an A2A request needs an id".into()),
        }),
        other => Err(Refused {
            id: other.id().map(|id| {
                let mut text = BytesMut::with_capacity(24);
                id.write_json(&mut text);
                text.freeze()
            }),
            error: A2aError::InvalidRequest("expected a request, not a response".into()),
        }),
    }
}

/// `{"jsonrpc":"2.0","id":<id>,"result":<result>}`.
pub(crate) fn result(id: &[u8], result: &Value) -> Bytes {
    let mut out = BytesMut::with_capacity(128);
    write_result(&mut out, id, result);
    out.freeze()
}

/// `{"jsonrpc":"2.0","id":<id>,"result":<result>}` with `result` already JSON text.
pub(crate) fn result_raw(id: &[u8], result: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(result.len() + id.len() + 32);
    out.put_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    out.put_slice(id);
    out.put_slice(b",\"result\":");
    out.put_slice(result);
    out.put_u8(b'}');
    out.freeze()
}

fn write_result(out: &mut BytesMut, id: &[u8], result: &Value) {
    out.put_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    out.put_slice(id);
    out.put_slice(b",\"result\":");
    let mut writer = out.writer();
    // Writing a `Value` into memory cannot fail.
    let _ = serde_json::to_writer(&mut writer, result);
    let out = writer.into_inner();
    out.put_u8(b'}');
}

/// The error response for `id` (`null` when unknown), with 1.0 `data` when `v1`.
pub(crate) fn error(id: Option<&[u8]>, error: &A2aError, v1: bool) -> Bytes {
    let mut out = BytesMut::with_capacity(160);
    let id = id.map_or(IdRef::Null, IdRef::Json);
    error.write(&mut out, id, v1);
    out.freeze()
}

/// One SSE event carrying a response: `data: <response>\n\n` (A2A streams name no event and
/// carry no id; the JSON has no raw newline).
pub(crate) fn sse_event(response: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(response.len() + 8);
    out.put_slice(b"data: ");
    out.put_slice(response);
    out.put_slice(b"\n\n");
    out.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(body: &str, expected: Result<(&str, &str, &str), (Option<&str>, i32)>) {
        let mut bytes = body.as_bytes().to_vec();
        let got = parse(&mut bytes, &jsonrpc::Limits::DEFAULT);
        match (got, expected) {
            (Ok(request), Ok((id, method, params))) => {
                assert_eq!(&request.id[..], id.as_bytes(), "{body}");
                assert_eq!(request.method, method, "{body}");
                let params: Value = serde_json::from_str(params).expect("params");
                assert_eq!(request.params.value().expect("params"), params, "{body}");
            }
            (Err(refused), Err((id, code))) => {
                assert_eq!(refused.id.as_deref(), id.map(str::as_bytes), "{body}");
                assert_eq!(refused.error.code().0, code, "{body}");
            }
            (got, expected) => panic!("{body}: got {got:?}, expected {expected:?}"),
        }
    }

    #[test]
    fn requests_are_read_strictly() {
        check(
            r#"{"jsonrpc":"2.0","id":"a1","method":"SendMessage","params":{"message":{}}}"#,
            Ok((r#""a1""#, "SendMessage", r#"{"message":{}}"#)),
        );
        check(
            r#"{"jsonrpc":"2.0","id":7,"method":"GetTask"}"#,
            Ok(("7", "GetTask", "{}")),
        );
        check("{", Err((None, -32700)));
        check(
            r#"[{"jsonrpc":"2.0","id":1,"method":"GetTask"}]"#,
            Err((None, -32600)),
        );
        check(
            r#"{"jsonrpc":"2.0","method":"GetTask"}"#,
            Err((None, -32600)),
        );
        check(
            r#"{"jsonrpc":"2.0","id":3,"method":"GetTask","params":[1]}"#,
            Err((Some("3"), -32602)),
        );
        check(
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"GetTask"}"#,
            Err((None, -32600)),
        );
    }

    #[test]
    fn responses_echo_the_id_verbatim() {
        let out = result(br#""x""#, &serde_json::json!({"task": {"id": "t"}}));
        assert_eq!(
            &out[..],
            br#"{"jsonrpc":"2.0","id":"x","result":{"task":{"id":"t"}}}"#
        );
        assert_eq!(&sse_event(b"{}")[..], b"data: {}\n\n");
    }
}
