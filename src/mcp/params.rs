//! Reading typed params out of a [`Payload`] without copying: each method declares a small
//! struct of borrowed fields and fills it with these accessors.
//!
//! The seam hands methods `Option<&Payload>`, and `Payload::deserialize` consumes the payload,
//! so params are read through the tape view ([`Payload::value`]) instead: same borrowed `&str`
//! fields, no second parse, no value tree. Any shape error is -32602 naming the member. Must not
//! know which method it serves.

use std::borrow::Cow;

use simd_json::prelude::*;
use simd_json::tape::Value;

use super::McpError;
use crate::jsonrpc::Payload;

/// The params object (`null` when absent). Params that are present but not an object are -32602.
pub(crate) fn root<'p, 'a>(params: Option<&'p Payload<'a>>) -> Result<Value<'p, 'a>, McpError> {
    let Some(payload) = params else {
        return Ok(Value::null());
    };
    let value = payload.value();
    if value.is_object() {
        Ok(value)
    } else {
        Err(invalid("params must be an object".into()))
    }
}

/// A member that is absent or `null` reads as `None`.
pub(crate) fn member<'p, 'a>(object: Value<'p, 'a>, key: &str) -> Option<Value<'p, 'a>> {
    object.get(key).filter(|v| !v.is_null())
}

/// An optional string member.
pub(crate) fn opt_str<'a>(object: Value<'_, 'a>, key: &str) -> Result<Option<&'a str>, McpError> {
    match member(object, key) {
        None => Ok(None),
        Some(value) => value
            .into_string()
            .map(Some)
            .ok_or_else(|| invalid(format!("'{key}' must be a string").into())),
    }
}

/// A required string member.
pub(crate) fn req_str<'a>(object: Value<'_, 'a>, key: &str) -> Result<&'a str, McpError> {
    opt_str(object, key)?.ok_or_else(|| invalid(format!("'{key}' (a string) is required").into()))
}

/// An optional object member.
pub(crate) fn opt_object<'p, 'a>(
    object: Value<'p, 'a>,
    key: &str,
) -> Result<Option<Value<'p, 'a>>, McpError> {
    match member(object, key) {
        None => Ok(None),
        Some(value) if value.is_object() => Ok(Some(value)),
        Some(_) => Err(invalid(format!("'{key}' must be an object").into())),
    }
}

/// An optional boolean member (absent or `null` = `false`).
pub(crate) fn opt_bool(object: Value<'_, '_>, key: &str) -> Result<bool, McpError> {
    match member(object, key) {
        None => Ok(false),
        Some(value) => value
            .as_bool()
            .ok_or_else(|| invalid(format!("'{key}' must be a boolean").into())),
    }
}

fn invalid(message: Cow<'static, str>) -> McpError {
    McpError::InvalidParams(message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc::{parse, Message};

    /// Parses `params` inside a request and runs `read` on it; compares the outcome's text.
    fn check(
        params: &str,
        read: fn(Option<&Payload<'_>>) -> Result<String, McpError>,
        expected: &str,
    ) {
        let mut body =
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{params}}}"#).into_bytes();
        let Ok(Message::Request { params, .. }) = parse(&mut body) else {
            panic!("not a request: {params}");
        };
        let got = match read(params.as_ref()) {
            Ok(text) => text,
            Err(err) => format!("error: {err}"),
        };
        assert_eq!(got, expected, "{params:?}");
    }

    fn cursor(params: Option<&Payload<'_>>) -> Result<String, McpError> {
        let root = root(params)?;
        Ok(format!("{:?}", opt_str(root, "cursor")?))
    }

    fn name(params: Option<&Payload<'_>>) -> Result<String, McpError> {
        Ok(req_str(root(params)?, "name")?.to_owned())
    }

    #[test]
    fn typed_members() {
        check("{}", cursor, "None");
        check(r#"{"cursor":null}"#, cursor, "None");
        check(r#"{"cursor":"abc"}"#, cursor, r#"Some("abc")"#);
        check(
            r#"{"cursor":1}"#,
            cursor,
            "error: 'cursor' must be a string",
        );
        check("[1]", cursor, "error: params must be an object");
        check(r#"{"name":"a\"b"}"#, name, "a\"b");
        check("{}", name, "error: 'name' (a string) is required");
    }
}
