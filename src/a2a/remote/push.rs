//! The push relay of registered remote agents (A2A push notifications through the runtime).
//!
//! A caller's push configuration (`CreateTaskPushNotificationConfig`, or inline on a send) is
//! validated as the own agent validates its own (`a2a/push.rs`: https unless allowed, public
//! addresses unless the tenant allows the host, no header injection) and kept by the runtime
//! in the task's relay record (`ledger/relay.rs`), never sent upstream. The upstream gets one
//! configuration per task pointing at the runtime: `url = {public_url}/runtime/a2a/push/{relayId}`,
//! a random 256-bit `token` and a random bearer credential (`RELAY_CONFIG_ID`). An inline
//! configuration is replaced by that relay configuration in the same send, so the upstream
//! registers it atomically with the task. An upstream without push but with streaming gets a
//! background `SubscribeToTask` worker instead; with neither, -32003.
//!
//! `POST /runtime/a2a/push/{relayId}` ([`relay_post`]) checks the bearer credential and the
//! token in constant time (401 otherwise, nothing delivered), answers 200 at once and queues
//! the body for every caller configuration of the task through the own agent's delivery
//! (`PushSender`: bounded queues, retries, SSRF checks at delivery, audit per attempt). A
//! terminal state finishes the relay (its record, and the caller's configurations, then live as
//! long as a terminal ledger entry). Deleting the last caller configuration deletes the
//! upstream's relay configuration and the record.
//!
//! Must not forward a caller's webhook, token or credential to the upstream.

use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::request::Parts;
use http::{Response, StatusCode};
use serde_json::{json, Value};
use subtle::ConstantTimeEq;

use super::ledger::{AgentKey, RelayMode, RelayRecord};
use super::proxy::{ledger_error, ProxyCall, Reply, Unary};
use super::registry::RemoteAgent;
use super::upstream::Upstream;
use super::wire::{self, Answer};
use crate::a2a::agent::Agent;
use crate::a2a::methods;
use crate::a2a::push::{Delivery, PushConfig, PushPolicy, TOKEN_HEADER};
use crate::a2a::A2aError;
use crate::http::response::{self, Body};
use crate::http::{body, Error};
use crate::sse::Decoder;

/// The id of the one configuration the runtime registers at the upstream per task.
pub(crate) const RELAY_CONFIG_ID: &str = "sluice-relay";

/// Largest relay POST body.
const MAX_RELAY_BODY: usize = 1024 * 1024;

/// How long the relay webhook waits for the upstream's body.
const RELAY_BODY_TIMEOUT: Duration = Duration::from_secs(10);

/// A caller's inline configuration and the relay made for it, before the task is known.
#[derive(Debug)]
pub(crate) struct Inline(RelayRecord);

/// A random URL-safe secret of 256 bits.
fn secret() -> String {
    use base64::Engine as _;
    let bytes: [u8; 32] = rand::random();
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// A caller's configuration, read and validated as the own agent's are; its `id` defaults to
/// the task id.
async fn validated(
    call: &ProxyCall<'_>,
    config: Value,
    task_id: Option<&str>,
) -> Result<PushConfig, A2aError> {
    let mut config = methods::accept_push_config(call.agent, call.view, config, task_id).await?;
    if config.id.is_empty() {
        if let Some(task_id) = task_id {
            config.id = task_id.to_owned();
        }
    }
    Ok(config)
}

/// How the upstream can feed a relay: its own push, else a subscription, else not at all.
fn mode_of(call: &ProxyCall<'_>) -> Result<RelayMode, A2aError> {
    if call.fetched.card.push {
        Ok(RelayMode::Push)
    } else if call.fetched.card.streaming {
        Ok(RelayMode::Subscribe)
    } else {
        Err(A2aError::PushNotSupported)
    }
}

fn new_relay(call: &ProxyCall<'_>, task_id: Option<String>, mode: RelayMode) -> RelayRecord {
    RelayRecord {
        relay_id: format!("{}{}", crate::http::router::RELAY_ID_PREFIX, secret()),
        tenant: call.key.tenant.to_string(),
        client: call.key.client.to_string(),
        agent: call.key.agent.to_string(),
        caller: call.caller.to_string(),
        task_id,
        token: secret(),
        secret: secret(),
        mode,
        configs: Vec::new(),
        finished: false,
    }
}

/// The configuration the upstream gets for `relay` (1.0 flat shape).
fn upstream_config(agent: &Agent, relay: &RelayRecord) -> Value {
    let mut config = json!({
        "id": RELAY_CONFIG_ID,
        "url": format!("{}/runtime/a2a/push/{}", agent.public_base, relay.relay_id),
        "token": relay.token,
        "authentication": {"scheme": "Bearer", "credentials": relay.secret},
    });
    if let Some(task_id) = &relay.task_id {
        config["taskId"] = Value::from(task_id.as_str());
    }
    config
}

/// Takes the inline push configuration off a send's params: validated, kept by the runtime,
/// and replaced by the relay's (when the upstream has push) so the upstream registers it
/// with the task.
pub(crate) async fn take_inline(
    call: &ProxyCall<'_>,
    params: &mut Value,
) -> Result<Option<Inline>, A2aError> {
    let Some(configuration) = params
        .get_mut("configuration")
        .and_then(Value::as_object_mut)
    else {
        return Ok(None);
    };
    let inline = match configuration.remove("taskPushNotificationConfig") {
        None | Some(Value::Null) => return Ok(None),
        Some(inline) => inline,
    };
    let mode = mode_of(call)?;
    let config = validated(call, inline, None).await?;
    let mut relay = new_relay(call, None, mode);
    relay
        .configs
        .push(serde_json::to_value(&config).map_err(|_| A2aError::Internal)?);
    if mode == RelayMode::Push {
        if let Some(configuration) = params
            .get_mut("configuration")
            .and_then(Value::as_object_mut)
        {
            configuration.insert(
                "taskPushNotificationConfig".to_owned(),
                upstream_config(call.agent, &relay),
            );
        }
        // Stored before the send: the upstream may call the relay before it answers.
        call.agent
            .remote
            .ledger
            .relay_put(&relay)
            .await
            .map_err(ledger_error)?;
    }
    Ok(Some(Inline(relay)))
}

/// Binds an inline relay to the task a unary send created.
pub(crate) async fn register_inline(call: &ProxyCall<'_>, task_id: &str, inline: Inline) {
    register_for(call.agent, &call.key, &call.caller, task_id, inline).await;
}

/// Binds an inline relay to the task a send named (unary or streamed).
pub(crate) async fn register_for(
    agent: &Arc<Agent>,
    key: &AgentKey,
    _caller: &str,
    task_id: &str,
    inline: Inline,
) {
    let Inline(mut relay) = inline;
    relay.task_id = Some(task_id.to_owned());
    for config in &mut relay.configs {
        if let Some(object) = config.as_object_mut() {
            object.insert("taskId".to_owned(), task_id.into());
            if object
                .get("id")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
            {
                object.insert("id".to_owned(), task_id.into());
            }
        }
    }
    if let Err(err) = agent.remote.ledger.relay_put(&relay).await {
        tracing::warn!(%err, "push relay not stored");
        return;
    }
    if relay.mode == RelayMode::Subscribe {
        if let Some(remote) = agent
            .remote
            .remotes
            .get(&key.tenant, &key.client, &key.agent)
        {
            spawn_subscriber(Arc::clone(agent), remote, relay);
        }
    }
}

/// The push configuration methods.
pub(crate) async fn call(
    call: &ProxyCall<'_>,
    method: &'static str,
    params: Value,
) -> Result<Reply, A2aError> {
    if !method.contains("PushNotificationConfig") {
        return Err(A2aError::MethodNotFound(method.to_owned()));
    }
    if !call.agent.settings.push_enabled() {
        return Err(A2aError::PushNotSupported);
    }
    let task_id = params
        .get("taskId")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .ok_or_else(|| A2aError::InvalidParams("taskId is required".into()))?;
    let ledger = &call.agent.remote.ledger;
    if !ledger
        .owns_task(&call.key, &call.caller, &task_id)
        .await
        .map_err(ledger_error)?
    {
        return Err(A2aError::TaskNotFound);
    }
    let relay = ledger
        .relay_for_task(&call.key, &task_id)
        .await
        .map_err(ledger_error)?;
    let config_id = params
        .get("id")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .map(str::to_owned);
    let result = match method {
        methods::CREATE_PUSH => create(call, &task_id, params, relay).await?,
        methods::GET_PUSH => {
            let id = config_id.unwrap_or_else(|| task_id.clone());
            relay
                .and_then(|r| r.configs.into_iter().find(|c| c["id"] == id.as_str()))
                .ok_or(A2aError::TaskNotFound)?
        }
        methods::LIST_PUSH => {
            let configs = relay.map(|r| r.configs).unwrap_or_default();
            json!({"configs": configs, "nextPageToken": ""})
        }
        methods::DELETE_PUSH => {
            let id = config_id.ok_or_else(|| A2aError::InvalidParams("id is required".into()))?;
            if let Some(mut relay) = relay {
                relay.configs.retain(|c| c["id"] != id.as_str());
                if relay.configs.is_empty() {
                    end_relay(call, &relay).await?;
                } else {
                    ledger.relay_put(&relay).await.map_err(ledger_error)?;
                }
            }
            Value::Null
        }
        _ => return Err(A2aError::MethodNotFound(method.to_owned())),
    };
    Ok(Reply::Result(Bytes::from(
        serde_json::to_vec(&result).map_err(|_| A2aError::Internal)?,
    )))
}

/// `CreateTaskPushNotificationConfig`: the caller's config stored; the relay made (and
/// registered upstream) on the task's first one.
async fn create(
    call: &ProxyCall<'_>,
    task_id: &str,
    params: Value,
    relay: Option<RelayRecord>,
) -> Result<Value, A2aError> {
    let config = validated(call, params, Some(task_id)).await?;
    let shown = serde_json::to_value(&config).map_err(|_| A2aError::Internal)?;
    let max = call.agent.settings.max_push_configs_per_task.max(1);
    let fresh = relay.is_none();
    let mut relay = match relay {
        Some(relay) => relay,
        None => new_relay(call, Some(task_id.to_owned()), mode_of(call)?),
    };
    relay.configs.retain(|c| c["id"] != config.id.as_str());
    if relay.configs.len() >= max {
        return Err(A2aError::InvalidParams(
            "too many push notification configs for this task".into(),
        ));
    }
    relay.configs.push(shown.clone());
    let ledger = &call.agent.remote.ledger;
    ledger.relay_put(&relay).await.map_err(ledger_error)?;
    if fresh {
        let started = match relay.mode {
            RelayMode::Push => {
                let params = upstream_config(call.agent, &relay);
                match call.unary(methods::CREATE_PUSH, &params).await {
                    Ok(Unary::Result(_)) => Ok(()),
                    Ok(Unary::Error(error)) => Err(Some(error)),
                    Err(err) => {
                        let _ = ledger.relay_delete(&relay).await;
                        return Err(err);
                    }
                }
            }
            RelayMode::Subscribe => {
                spawn_subscriber(
                    Arc::clone(call.agent),
                    Arc::clone(call.remote),
                    relay.clone(),
                );
                Ok(())
            }
        };
        if let Err(Some(error)) = started {
            let _ = ledger.relay_delete(&relay).await;
            // The upstream's refusal, as it said it.
            let value: Value = serde_json::from_slice(&error).unwrap_or(Value::Null);
            let message = value["message"].as_str().unwrap_or("refused by the agent");
            return Err(A2aError::InvalidParams(
                format!(
                    "the agent refused the push relay: {}",
                    crate::jsonrpc::echo(message)
                )
                .into(),
            ));
        }
    }
    Ok(shown)
}

/// Deletes the upstream's relay configuration and the record (the last caller config went).
async fn end_relay(call: &ProxyCall<'_>, relay: &RelayRecord) -> Result<(), A2aError> {
    if relay.mode == RelayMode::Push {
        if let Some(task_id) = &relay.task_id {
            let params = json!({"taskId": task_id, "id": RELAY_CONFIG_ID});
            if let Err(err) = call.unary(methods::DELETE_PUSH, &params).await {
                tracing::warn!(%err, "the upstream's push relay config was not deleted");
            }
        }
    }
    call.agent
        .remote
        .ledger
        .relay_delete(relay)
        .await
        .map_err(ledger_error)
}

/// Queues `body` (a 1.0 `StreamResponse`) for every caller config of `relay`; a terminal
/// state finishes the relay.
async fn fan_out(agent: &Agent, relay: &RelayRecord, body: Bytes) {
    let peek = std::str::from_utf8(&body)
        .map(wire::peek_wrapped)
        .unwrap_or_default();
    let task_id = relay
        .task_id
        .clone()
        .or_else(|| peek.task_id.as_deref().map(str::to_owned))
        .unwrap_or_default();
    let snapshot = agent.catalog.current();
    let policy = match snapshot.client(&relay.tenant, &relay.client) {
        Some(view) => methods::push_policy(agent, view),
        None => PushPolicy::new(agent.settings.allow_http_push, &[]),
    };
    for config in &relay.configs {
        let Ok(mut config) = serde_json::from_value::<PushConfig>(config.clone()) else {
            continue;
        };
        if config.task_id.is_empty() {
            config.task_id.clone_from(&task_id);
        }
        agent.push.enqueue(Delivery {
            tenant: relay.tenant.as_str().into(),
            client: relay.client.as_str().into(),
            caller: relay.caller.as_str().into(),
            task_id: task_id.clone(),
            config,
            policy: policy.clone(),
            body: body.clone(),
        });
    }
    if peek.carries_status && peek.state.is_terminal() && !relay.finished {
        let mut finished = relay.clone();
        finished.finished = true;
        if let Err(err) = agent.remote.ledger.relay_put(&finished).await {
            tracing::warn!(%err, "push relay of a finished task not marked finished");
        }
    }
}

/// `POST /runtime/a2a/push/{relayId}`: an upstream's notification for a relayed task.
pub(crate) async fn relay_post<B>(
    agent: &Arc<Agent>,
    relay_id: &str,
    parts: &Parts,
    body: B,
) -> Result<Response<Body>, Error>
where
    B: http_body::Body + Unpin,
    B::Error: std::fmt::Display,
{
    let relay = match agent.remote.ledger.relay_by_id(relay_id).await {
        Ok(relay) => relay,
        Err(err) => {
            body::drain_refused(body, body::content_length(&parts.headers)).await;
            tracing::warn!(%err, "push relay lookup failed");
            return Err(Error::Unavailable("push relay unavailable".into()));
        }
    };
    let header = |name: &str| {
        parts
            .headers
            .get(name)
            .map(|v| v.as_bytes().to_vec())
            .unwrap_or_default()
    };
    let authorized = relay.as_ref().is_some_and(|relay| {
        let expected_auth = format!("Bearer {}", relay.secret);
        let auth_ok: bool = header("authorization")
            .as_slice()
            .ct_eq(expected_auth.as_bytes())
            .into();
        let token_ok: bool = header(TOKEN_HEADER)
            .as_slice()
            .ct_eq(relay.token.as_bytes())
            .into();
        auth_ok & token_ok
    });
    let Some(relay) = relay.filter(|_| authorized) else {
        body::drain_refused(body, body::content_length(&parts.headers)).await;
        // Unknown relay and wrong secret look the same.
        return Ok(response::text(StatusCode::UNAUTHORIZED, "unauthorized"));
    };
    let bytes = body::collect_limited(
        body,
        body::content_length(&parts.headers),
        MAX_RELAY_BODY,
        RELAY_BODY_TIMEOUT,
    )
    .await?;
    let bytes: Bytes = BytesMut::freeze(bytes);
    let body = match upstream_body(bytes) {
        Some(body) => body,
        None => {
            return Ok(response::text(
                StatusCode::BAD_REQUEST,
                "not an A2A notification",
            ))
        }
    };
    // Answered at once; deliveries are queued, never awaited.
    fan_out(agent, &relay, body).await;
    Ok(response::empty(StatusCode::OK))
}

/// A relay POST's body as a 1.0 `StreamResponse` (a 0.3 upstream posts the Task itself).
fn upstream_body(bytes: Bytes) -> Option<Bytes> {
    let value: Value = serde_json::from_slice(&bytes).ok()?;
    let is_v1 = ["task", "message", "statusUpdate", "artifactUpdate"]
        .iter()
        .any(|member| value.get(*member).is_some());
    if is_v1 {
        return Some(bytes);
    }
    let event = crate::a2a::v03::event_to_v1(value).ok()?;
    serde_json::to_vec(&event).ok().map(Bytes::from)
}

/// The relay of an upstream without push: a `SubscribeToTask` stream turned into deliveries,
/// until the task ends, the stream ends or the relay is deleted.
fn spawn_subscriber(agent: Arc<Agent>, remote: Arc<RemoteAgent>, relay: RelayRecord) {
    tokio::spawn(async move {
        let (Ok(upstream), Some(fetched), Some(task_id)) =
            (&remote.upstream, remote.card(), relay.task_id.clone())
        else {
            return;
        };
        if let Err(err) = subscribe(&agent, &remote, upstream, &fetched, &relay, &task_id).await {
            tracing::warn!(%err, agent = %remote.id, "push relay subscription ended");
        }
    });
}

async fn subscribe(
    agent: &Arc<Agent>,
    remote: &RemoteAgent,
    upstream: &Upstream,
    fetched: &super::registry::Fetched,
    relay: &RelayRecord,
    task_id: &str,
) -> Result<(), A2aError> {
    let interface = &fetched.card.interface;
    let params = json!({"id": task_id});
    let (method, params) = match interface.version {
        crate::a2a::v03::Version::V1 => (methods::SUBSCRIBE_TO_TASK, params),
        crate::a2a::v03::Version::V03 => (
            crate::a2a::v03::method_to_v03(methods::SUBSCRIBE_TO_TASK)
                .ok_or(A2aError::PushNotSupported)?,
            crate::a2a::v03::params_to_v03(methods::SUBSCRIBE_TO_TASK, params),
        ),
    };
    let upstream_id = remote.upstream_id();
    let body = wire::request_body(&upstream_id, method, &params);
    let mut response = upstream
        .post(
            &interface.url,
            interface.version,
            body,
            &http::HeaderMap::new(),
        )
        .await
        .map_err(super::proxy::upstream_error)?;
    if !response.is_event_stream() {
        return Err(A2aError::InvalidAgentResponse);
    }
    let idle = Duration::from_millis(remote.config.stream_idle_ms.max(1));
    let mut decoder = Decoder::with_max_frame(remote.config.max_response_bytes.max(1024));
    let mut buf = BytesMut::new();
    while let Some(chunk) = response
        .next_chunk(idle)
        .await
        .map_err(super::proxy::upstream_error)?
    {
        buf.extend_from_slice(&chunk);
        let mut events = Vec::new();
        decoder
            .decode_with(&mut buf, |event| {
                events.push(Bytes::copy_from_slice(event.data))
            })
            .map_err(|_| A2aError::InvalidAgentResponse)?;
        for data in events {
            let Answer::Result(raw) = wire::read_event(&data, &upstream_id)? else {
                return Ok(());
            };
            let event = if interface.version.is_v1() {
                data.slice_ref(raw.as_bytes())
            } else {
                let value: Value =
                    serde_json::from_str(raw).map_err(|_| A2aError::InvalidAgentResponse)?;
                let event = crate::a2a::v03::event_to_v1(value)?;
                Bytes::from(serde_json::to_vec(&event).map_err(|_| A2aError::Internal)?)
            };
            // The configs as they are now: a delete since the last event counts.
            let Some(current) = agent
                .remote
                .ledger
                .relay_by_id(&relay.relay_id)
                .await
                .map_err(ledger_error)?
            else {
                return Ok(());
            };
            fan_out(agent, &current, event).await;
        }
    }
    Ok(())
}
