//! The method table: a match on the method name, one handler per method, and the client
//! notifications.
//!
//! Era gates live in the handlers (`initialize`/`ping` are handshake-only, `server/discover`
//! and `subscriptions/listen` stateless-only); both eras answer an unknown method -32601. Must
//! not parse or shape anything itself.

use bytes::{Bytes, BytesMut};
use simd_json::prelude::*;

use super::subscriptions::SubscriptionFilter;
use super::{lifecycle, names, prompts, resources, tools};
use super::{Dispatcher, Era, McpError, NotificationEffect, Reply, Scope};
use crate::jsonrpc::{echo, Id, Payload};

pub(crate) async fn request(
    d: &Dispatcher,
    scope: &Scope<'_>,
    method: &str,
    params: Option<&Payload<'_>>,
) -> Result<Reply, McpError> {
    if scope.platform {
        match method {
            names::TOOLS_LIST => return super::platform::list(d, scope),
            names::TOOLS_CALL => return Box::pin(super::platform::call(d, scope, params)).await,
            _ => {}
        }
    }
    match method {
        // Boxed: the downstream call's state is large (over a kilobyte), and without the box
        // every request future — `ping` and `tools/list` included — would be that large and
        // cost a copy of it. A tool call pays one allocation next to an HTTP exchange.
        names::TOOLS_CALL => Box::pin(tools::call(d, scope, params)).await,
        names::TOOLS_LIST => tools::list(d, scope, params),
        names::PING => lifecycle::ping(scope),
        names::INITIALIZE => lifecycle::initialize(d, scope, params),
        names::SERVER_DISCOVER => lifecycle::discover(d, scope),
        names::RESOURCES_LIST => resources::list(d, scope, params),
        names::RESOURCES_READ => resources::read(d, scope, params),
        names::PROMPTS_LIST => prompts::list(d, scope, params),
        names::PROMPTS_GET => prompts::get(d, scope, params),
        names::SUBSCRIPTIONS_LISTEN if scope.era == Era::Stateless => {
            SubscriptionFilter::from_params(params).map(Reply::Listen)
        }
        other => Err(McpError::MethodNotFound(echo(other).into_owned())),
    }
}

pub(crate) fn notification(
    scope: &Scope<'_>,
    method: &str,
    params: Option<&Payload<'_>>,
) -> NotificationEffect {
    match method {
        // Sessions exist only in the handshake era.
        names::NOTIFICATION_INITIALIZED if scope.era == Era::Handshake => {
            NotificationEffect::Initialized
        }
        names::NOTIFICATION_CANCELLED => cancelled_id(params)
            .map(NotificationEffect::Cancel)
            .unwrap_or(NotificationEffect::None),
        _ => NotificationEffect::None,
    }
}

/// The JSON text of `params.requestId` (a string or an integer), re-encoded canonically so it
/// compares equal to the in-flight request's `OwnedId::as_json()`. Anything else: `None`
/// ("the receiver … ignores unknown or finished ids").
fn cancelled_id(params: Option<&Payload<'_>>) -> Option<Bytes> {
    let value = params?.value().get("requestId")?;
    let id = if let Some(s) = value.as_str() {
        Id::Str(s)
    } else if let Some(n) = value.as_i64() {
        Id::from_i64(n)
    } else {
        Id::from_u64(value.as_u64()?)
    };
    let mut out = BytesMut::with_capacity(24);
    id.write_json(&mut out);
    Some(out.freeze())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc::{parse, Message};

    /// Checks the cancel id read from `notifications/cancelled` params (JSON text or `None`).
    fn check(params: &str, expected: Option<&str>) {
        let mut body =
            format!(r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{params}}}"#)
                .into_bytes();
        let Ok(Message::Notification { params, .. }) = parse(&mut body) else {
            panic!("not a notification: {params}");
        };
        let got = cancelled_id(params.as_ref());
        assert_eq!(got.as_deref(), expected.map(str::as_bytes), "{params:?}");
    }

    #[test]
    fn cancelled_ids_keep_their_json_type() {
        check(r#"{"requestId":7}"#, Some("7"));
        check(r#"{"requestId":0}"#, Some("0"));
        check(r#"{"requestId":"7"}"#, Some(r#""7""#));
        check(r#"{"requestId":"a\u0022b"}"#, Some(r#""a\"b""#));
        check(
            r#"{"requestId":18446744073709551615}"#,
            Some("18446744073709551615"),
        );
        check(r#"{"requestId":1.5}"#, None);
        check(r#"{"requestId":null}"#, None);
        check(r#"{"reason":"x"}"#, None);
        check("[7]", None);
    }
}
