//! `subscriptions/listen` (2026-07-28) and the `list_changed` notifications.
//!
//! The listen stream replaces the GET stream (MCP 2026-07-28, Patterns § Subscriptions): the
//! transport answers the request with a long-lived SSE stream whose first message MUST be
//! `notifications/subscriptions/acknowledged {notifications: <the subset honoured>}`; every message
//! on it carries `_meta["io.modelcontextprotocol/subscriptionId"]` = the listen request's id; "the
//! server MUST NOT send notification types the client has not explicitly requested"; a graceful end
//! sends the listen request's response `{resultType: "complete", _meta: {subscriptionId}}`. This
//! runtime honours the three `…ListChanged` flags and no `resourceSubscriptions` (it does not
//! advertise `resources.subscribe`), which the acknowledgement therefore omits. This file builds
//! those messages; the stream is the transport's. Subscription ids are passed as their JSON text
//! (e.g. `OwnedId::as_json()`).

use bytes::{BufMut, Bytes, BytesMut};

use super::lifecycle::Prepared;
use super::names::{
    META_SERVER_INFO, META_SUBSCRIPTION_ID, NOTIFICATION_PROMPTS_LIST_CHANGED,
    NOTIFICATION_RESOURCES_LIST_CHANGED, NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED,
    NOTIFICATION_TOOLS_LIST_CHANGED,
};
use super::{json, params, Era, McpError};
use crate::jsonrpc::Payload;

/// Which list changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListChanged {
    /// `notifications/tools/list_changed`.
    Tools,
    /// `notifications/prompts/list_changed`.
    Prompts,
    /// `notifications/resources/list_changed`.
    Resources,
}

impl ListChanged {
    /// The notification's method name.
    pub fn method(self) -> &'static str {
        match self {
            ListChanged::Tools => NOTIFICATION_TOOLS_LIST_CHANGED,
            ListChanged::Prompts => NOTIFICATION_PROMPTS_LIST_CHANGED,
            ListChanged::Resources => NOTIFICATION_RESOURCES_LIST_CHANGED,
        }
    }
}

/// The notifications a listen stream honours (the requested ones this server supports).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SubscriptionFilter {
    /// `toolsListChanged`.
    pub tools_list_changed: bool,
    /// `promptsListChanged`.
    pub prompts_list_changed: bool,
    /// `resourcesListChanged`.
    pub resources_list_changed: bool,
}

impl SubscriptionFilter {
    /// Reads `params.notifications` of a `subscriptions/listen` request (required object).
    pub(crate) fn from_params(params: Option<&Payload<'_>>) -> Result<Self, McpError> {
        let notifications = params::opt_object(params::root(params)?, "notifications")?
            .ok_or_else(|| {
                McpError::InvalidParams("'notifications' (an object) is required".into())
            })?;
        Ok(Self {
            tools_list_changed: params::opt_bool(notifications, "toolsListChanged")?,
            prompts_list_changed: params::opt_bool(notifications, "promptsListChanged")?,
            resources_list_changed: params::opt_bool(notifications, "resourcesListChanged")?,
        })
    }

    /// Whether notifications of `kind` may be sent on the stream.
    pub(crate) fn wants(&self, kind: ListChanged) -> bool {
        match kind {
            ListChanged::Tools => self.tools_list_changed,
            ListChanged::Prompts => self.prompts_list_changed,
            ListChanged::Resources => self.resources_list_changed,
        }
    }
}

/// `,"_meta":{"io.modelcontextprotocol/subscriptionId":<id>`, left open.
fn put_subscription_meta(out: &mut BytesMut, subscription_id: &[u8]) {
    out.put_slice(b"\"_meta\":{");
    json::put_str(out, META_SUBSCRIPTION_ID);
    out.put_u8(b':');
    out.put_slice(subscription_id);
}

/// A whole `notifications/*/list_changed` message; with `_meta.subscriptionId` when given.
/// The era changes nothing else: the notification has no params of its own.
pub(crate) fn list_changed(kind: ListChanged, _era: Era, subscription_id: Option<&[u8]>) -> Bytes {
    list_changed_notification(kind, subscription_id)
}

/// [`list_changed`] for callers that know no era (the same bytes in every era): the stream
/// registry's list_changed delivery and the backplane's invalidations.
pub(crate) fn list_changed_notification(
    kind: ListChanged,
    subscription_id: Option<&[u8]>,
) -> Bytes {
    let mut out = BytesMut::with_capacity(128);
    out.put_slice(b"{\"jsonrpc\":\"2.0\",\"method\":");
    json::put_str(&mut out, kind.method());
    if let Some(id) = subscription_id {
        out.put_slice(b",\"params\":{");
        put_subscription_meta(&mut out, id);
        out.put_slice(b"}}");
    }
    out.put_u8(b'}');
    out.freeze()
}

/// The whole `notifications/subscriptions/acknowledged` message.
pub(crate) fn acknowledged(filter: &SubscriptionFilter, subscription_id: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(192);
    out.put_slice(b"{\"jsonrpc\":\"2.0\",\"method\":");
    json::put_str(&mut out, NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED);
    out.put_slice(b",\"params\":{\"notifications\":{");
    let flags = [
        (filter.tools_list_changed, "toolsListChanged"),
        (filter.prompts_list_changed, "promptsListChanged"),
        (filter.resources_list_changed, "resourcesListChanged"),
    ];
    for (i, (_, name)) in flags.iter().filter(|(on, _)| *on).enumerate() {
        if i > 0 {
            out.put_u8(b',');
        }
        json::put_str(&mut out, name);
        out.put_slice(b":true");
    }
    out.put_slice(b"},");
    put_subscription_meta(&mut out, subscription_id);
    out.put_slice(b"}}}");
    out.freeze()
}

/// The `result` that ends a listen stream gracefully.
pub(crate) fn listen_result(prepared: &Prepared, subscription_id: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(160);
    out.put_slice(b"{\"resultType\":\"complete\",");
    put_subscription_meta(&mut out, subscription_id);
    out.put_u8(b',');
    json::put_str(&mut out, META_SERVER_INFO);
    out.put_u8(b':');
    out.put_slice(prepared.shapes.server_info());
    out.put_slice(b"}}");
    out.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(got: Bytes, expected: &str) {
        assert_eq!(std::str::from_utf8(&got).unwrap(), expected);
        serde_json::from_slice::<serde_json::Value>(&got).unwrap();
    }

    #[test]
    fn messages() {
        check(
            list_changed(ListChanged::Tools, Era::Handshake, None),
            r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#,
        );
        check(
            list_changed(ListChanged::Prompts, Era::Stateless, Some(b"\"l-1\"")),
            r#"{"jsonrpc":"2.0","method":"notifications/prompts/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"l-1"}}}"#,
        );
        let filter = SubscriptionFilter {
            tools_list_changed: true,
            prompts_list_changed: false,
            resources_list_changed: true,
        };
        check(
            acknowledged(&filter, b"9"),
            r#"{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"toolsListChanged":true,"resourcesListChanged":true},"_meta":{"io.modelcontextprotocol/subscriptionId":9}}}"#,
        );
        check(
            acknowledged(&SubscriptionFilter::default(), b"0"),
            r#"{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{},"_meta":{"io.modelcontextprotocol/subscriptionId":0}}}"#,
        );
        let prepared = Prepared::new(&super::super::DispatcherConfig {
            server_version: "1".to_owned(),
            ..Default::default()
        });
        check(
            listen_result(&prepared, b"9"),
            r#"{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":9,"io.modelcontextprotocol/serverInfo":{"name":"sluice","version":"1"}}}"#,
        );
    }
}
