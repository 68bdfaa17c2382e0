//! Push notifications of registered remote agents (the push relay). Not built yet: every push
//! configuration method answers -32003 and an inline configuration on a send is refused the
//! same way, so a caller never registers a webhook the runtime would not relay.

use serde_json::Value;

use super::ledger::AgentKey;
use super::proxy::{ProxyCall, Reply};
use crate::a2a::agent::Agent;
use crate::a2a::A2aError;

/// A caller's inline push configuration, taken off a send.
#[derive(Debug)]
pub(crate) struct Inline(Value);

/// Takes the inline push configuration off a send's params.
pub(crate) fn take_inline(
    _call: &ProxyCall<'_>,
    params: &mut Value,
) -> Result<Option<Inline>, A2aError> {
    let inline = params
        .get_mut("configuration")
        .and_then(Value::as_object_mut)
        .and_then(|c| c.remove("taskPushNotificationConfig"));
    match inline {
        Some(Value::Null) | None => Ok(None),
        Some(_) => Err(A2aError::PushNotSupported),
    }
}

/// Registers `inline` for `task_id` once a unary send named the task.
pub(crate) async fn register_inline(call: &ProxyCall<'_>, task_id: &str, inline: Inline) {
    register_for(call.agent, &call.key, &call.caller, task_id, inline).await;
}

/// Registers `inline` for `task_id` once a stream named the task.
pub(crate) async fn register_for(
    _agent: &Agent,
    _key: &AgentKey,
    _caller: &str,
    _task_id: &str,
    _inline: Inline,
) {
}

/// The push configuration methods.
pub(crate) async fn call(
    _call: &ProxyCall<'_>,
    method: &'static str,
    _params: Value,
) -> Result<Reply, A2aError> {
    if method.contains("PushNotificationConfig") {
        Err(A2aError::PushNotSupported)
    } else {
        Err(A2aError::MethodNotFound(method.to_owned()))
    }
}
