//! The A2A 1.0 method table: each method's params read from JSON, checked, and answered from
//! the task store, the runner (`run.rs`) and the cards. Everything here speaks 1.0; `agent.rs`
//! translates 0.3 before and after.
//!
//! Ownership is the store's: every read and write names the caller's [`Owner`], so another
//! caller's task answers exactly like a missing one (-32001).
//!
//! Must not know HTTP framing or SSE (it answers an [`Answer`]); the one HTTP-level refusal it
//! makes is the called tool's own scope (403, like MCP).

use std::time::Duration;

use bytes::Bytes;
use serde::Deserialize;
use serde_json::{json, Value};

use super::agent::{Agent, Call};
use super::model::{Message, Role, StreamResponse, Task, TaskState, TaskStatus};
use super::push::{self, PushConfig, PushPolicy};
use super::rpc::Params;
use super::run;
use super::store::{Appended, CancelOutcome, ListQuery, Owner, StoreError, Subscription, TaskPage};
use super::{card, tool, A2aError};
use crate::access::Endpoint;
use crate::catalog::ClientView;

pub(crate) const SEND_MESSAGE: &str = "SendMessage";
pub(crate) const SEND_STREAMING_MESSAGE: &str = "SendStreamingMessage";
pub(crate) const GET_TASK: &str = "GetTask";
pub(crate) const LIST_TASKS: &str = "ListTasks";
pub(crate) const CANCEL_TASK: &str = "CancelTask";
pub(crate) const SUBSCRIBE_TO_TASK: &str = "SubscribeToTask";
pub(crate) const CREATE_PUSH: &str = "CreateTaskPushNotificationConfig";
pub(crate) const GET_PUSH: &str = "GetTaskPushNotificationConfig";
pub(crate) const LIST_PUSH: &str = "ListTaskPushNotificationConfigs";
pub(crate) const DELETE_PUSH: &str = "DeleteTaskPushNotificationConfig";
pub(crate) const GET_EXTENDED_CARD: &str = "GetExtendedAgentCard";

/// Every 1.0 method.
const METHODS: [&str; 11] = [
    SEND_MESSAGE,
    SEND_STREAMING_MESSAGE,
    GET_TASK,
    LIST_TASKS,
    CANCEL_TASK,
    SUBSCRIBE_TO_TASK,
    CREATE_PUSH,
    GET_PUSH,
    LIST_PUSH,
    DELETE_PUSH,
    GET_EXTENDED_CARD,
];

/// The table's name for a 1.0 method.
pub(crate) fn v1_name(method: &str) -> Option<&'static str> {
    METHODS.iter().copied().find(|known| *known == method)
}

/// What a method answers.
pub(crate) enum Answer {
    /// One JSON-RPC result (1.0 shape).
    Value(Value),
    /// One JSON-RPC result (1.0 shape) as JSON text, written verbatim.
    Raw(Bytes),
    /// An event stream.
    Stream(Box<TaskStream>),
}

/// A task's event stream: `first` (the snapshot) and then the subscription's events, until
/// one ends the stream.
pub(crate) struct TaskStream {
    pub first: StreamResponse,
    pub subscription: Option<Subscription>,
}

/// Why a method fails: an A2A error (answered on 200) or an HTTP refusal of the caller's own
/// authorization.
pub(crate) enum Fail {
    A2a(A2aError),
    Http(crate::http::Error),
}

impl From<A2aError> for Fail {
    fn from(err: A2aError) -> Self {
        Fail::A2a(err)
    }
}

impl From<StoreError> for Fail {
    fn from(err: StoreError) -> Self {
        Fail::A2a(store_error(err))
    }
}

/// A store failure as the caller sees it.
pub(crate) fn store_error(err: StoreError) -> A2aError {
    match err {
        StoreError::Full => A2aError::UnsupportedOperation(
            "the task limit of this tenant is reached; try again later".into(),
        ),
        StoreError::TooManyPushConfigs => {
            A2aError::InvalidParams("too many push notification configs for this task".into())
        }
        StoreError::BadPageToken => A2aError::InvalidParams("invalid pageToken".into()),
        StoreError::Unavailable(_) | StoreError::Conflict => A2aError::Internal,
    }
}

/// Runs one 1.0 method.
pub(crate) async fn call(call: &Call<'_>, method: &str, params: Params) -> Result<Answer, Fail> {
    match method {
        SEND_MESSAGE => send(call, params, false).await,
        SEND_STREAMING_MESSAGE => send(call, params, true).await,
        GET_TASK => get_task(call, params).await,
        LIST_TASKS => list_tasks(call, params).await,
        CANCEL_TASK => cancel_task(call, params).await,
        SUBSCRIBE_TO_TASK => subscribe(call, params).await,
        CREATE_PUSH => create_push(call, params).await,
        GET_PUSH => get_push(call, params).await,
        LIST_PUSH => list_push(call, params).await,
        DELETE_PUSH => delete_push(call, params).await,
        GET_EXTENDED_CARD => {
            let view = &call.admitted.view;
            Ok(Answer::Value(card::extended_card(
                view,
                call.agent.card_context(),
            )))
        }
        other => Err(A2aError::MethodNotFound(other.to_owned()).into()),
    }
}

fn read<T: serde::de::DeserializeOwned>(params: Params) -> Result<T, A2aError> {
    params.read()
}

// === SendMessage, SendStreamingMessage ===

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SendParams {
    message: Message,
    #[serde(default)]
    configuration: Option<SendConfiguration>,
    #[serde(default)]
    metadata: Option<Value>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct SendConfiguration {
    #[serde(default)]
    return_immediately: bool,
    #[serde(default)]
    history_length: Option<usize>,
    #[serde(default)]
    task_push_notification_config: Option<Value>,
    #[serde(default)]
    accepted_output_modes: Vec<String>,
}

/// The media types the runtime's agent answers with (the card's `defaultOutputModes`).
const OUTPUT_MODES: [&str; 2] = ["application/json", "text/plain"];

/// Whether the client accepts what the agent produces: no list accepts anything; a listed
/// type matches exactly (case-insensitive, parameters ignored) or by `*/*` / `type/*`.
fn accepts_output(accepted: &[String]) -> bool {
    accepted.is_empty()
        || accepted.iter().any(|mode| {
            let mode = mode
                .split(';')
                .next()
                .unwrap_or_default()
                .trim()
                .to_ascii_lowercase();
            OUTPUT_MODES.iter().any(|ours| {
                mode == *ours
                    || mode == "*/*"
                    || mode
                        .strip_suffix("/*")
                        .is_some_and(|kind| ours.split('/').next() == Some(kind))
            })
        })
}

async fn send(call: &Call<'_>, params: Params, streaming: bool) -> Result<Answer, Fail> {
    let SendParams {
        mut message,
        configuration,
        metadata,
    } = read(params)?;
    let configuration = configuration.unwrap_or_default();
    if !accepts_output(&configuration.accepted_output_modes) {
        return Err(A2aError::ContentTypeNotSupported.into());
    }
    if message.message_id.is_empty() {
        return Err(A2aError::InvalidParams("message.messageId is required".into()).into());
    }
    if message.parts.is_empty() {
        return Err(A2aError::InvalidParams("message.parts must not be empty".into()).into());
    }
    message.role = Role::User;
    // The called tool's own scope is the caller's authorization, checked before anything is
    // stored (403 `insufficient_scope`, as on MCP and REST).
    if let Ok(tool_call) = tool::read_call(&message) {
        *call.tool.lock() = Some(tool_call.name.clone());
        let view = &call.admitted.view;
        call.agent
            .access
            .admit_call(
                &call.admitted.caller,
                view,
                Endpoint::A2a,
                &tool_call.name,
                None,
            )
            .await
            .map_err(Fail::Http)?;
    }
    let inline_push = match &configuration.task_push_notification_config {
        Some(config) => Some(push_config(call, config.clone(), None).await?),
        None => None,
    };
    let agent = call.agent;
    let owner = &call.owner;

    let (task_id, waiting) = match message.task_id.clone() {
        Some(task_id) => {
            let Some(stored) = agent.store.get(owner, &task_id).await? else {
                return Err(A2aError::TaskNotFound.into());
            };
            let task = stored.task;
            if task.status.state.is_terminal() {
                return Err(A2aError::UnsupportedOperation(
                    format!("Task {task_id} is in terminal state").into(),
                )
                .into());
            }
            match &message.context_id {
                Some(context) if *context != task.context_id => {
                    return Err(A2aError::InvalidParams(
                        "message.contextId does not match the task's contextId".into(),
                    )
                    .into());
                }
                _ => message.context_id = Some(task.context_id.clone()),
            }
            let subscription = agent.store.subscribe(owner, &task_id).await?;
            if let Some(config) = inline_push {
                store_push(call, &task_id, config).await?;
            }
            run::follow_up(agent, owner, &task_id, message)?;
            (task_id, Waiting::new(subscription, None))
        }
        None => {
            let task_id = new_id();
            let context_id = message.context_id.clone().unwrap_or_else(new_id);
            message.task_id = Some(task_id.clone());
            message.context_id = Some(context_id.clone());
            let task = Task {
                id: task_id.clone(),
                context_id,
                status: TaskStatus {
                    state: TaskState::Submitted,
                    message: None,
                    timestamp: Some(super::model::now_timestamp()),
                    extra: Default::default(),
                },
                artifacts: Vec::new(),
                history: vec![message.clone()],
                metadata,
                extra: Default::default(),
            };
            agent.store.create(owner, &task).await?;
            // A new task has no push config but the inline one.
            if let Some(config) = inline_push {
                store_push(call, &task_id, config).await?;
                agent
                    .push_event(owner, &task_id, &StreamResponse::Task(task.clone()))
                    .await;
            }
            // A stream follows the task's events; a blocking send only waits for its end.
            let subscription = if streaming {
                agent.store.subscribe(owner, &task_id).await?
            } else {
                None
            };
            let done = run::start(call, task, message).await?;
            (task_id, Waiting::new(subscription, done))
        }
    };

    if streaming {
        let Some(subscription) = waiting.subscription else {
            return Err(A2aError::TaskNotFound.into());
        };
        let first = StreamResponse::Task(subscription.snapshot.clone());
        return Ok(Answer::Stream(Box::new(TaskStream {
            first,
            subscription: Some(subscription),
        })));
    }
    let history = configuration
        .history_length
        .or(Some(agent.settings.default_history_length));
    if !configuration.return_immediately {
        let limit = Duration::from_secs(agent.settings.blocking_timeout_secs);
        let _ = tokio::time::timeout(limit, waiting.settled()).await;
    }
    // A terminal task held as JSON is answered as it is, unless the history is trimmed.
    if let Some((json, held)) = agent.store.terminal_json(owner, &task_id) {
        if history.is_none_or(|n| n >= held) {
            let mut result = bytes::BytesMut::with_capacity(json.len() + 10);
            result.extend_from_slice(b"{\"task\":");
            result.extend_from_slice(&json);
            result.extend_from_slice(b"}");
            return Ok(Answer::Raw(result.freeze()));
        }
    }
    let Some(stored) = agent.store.get(owner, &task_id).await? else {
        return Err(A2aError::TaskNotFound.into());
    };
    let task = stored.task.trimmed(history, true);
    Ok(raw(&SendResult { task: &task }))
}

/// `SendMessage`'s result: `{"task": …}`.
#[derive(serde::Serialize)]
struct SendResult<'a> {
    task: &'a Task,
}

/// A result serialized straight to JSON text (no `Value` tree in between).
fn raw<T: serde::Serialize>(result: &T) -> Answer {
    Answer::Raw(Bytes::from(
        serde_json::to_vec(result).unwrap_or_else(|_| b"null".to_vec()),
    ))
}

/// What a send waits on: the task's runner saying it is done (a new task run here), or the
/// task's events (a follow-up, or a stream).
struct Waiting {
    subscription: Option<Subscription>,
    done: Option<tokio::sync::oneshot::Receiver<()>>,
}

impl Waiting {
    fn new(
        subscription: Option<Subscription>,
        done: Option<tokio::sync::oneshot::Receiver<()>>,
    ) -> Self {
        Self { subscription, done }
    }

    /// Resolves once the task ends its stream (terminal or interrupted).
    async fn settled(self) {
        if let Some(done) = self.done {
            // Sent, or dropped with the runner: the task ended either way.
            let _ = done.await;
            return;
        }
        let Some(mut subscription) = self.subscription else {
            return;
        };
        if StreamResponse::Task(subscription.snapshot.clone()).ends_stream() {
            return;
        }
        while let Some(event) = subscription.next().await {
            if event.ends_stream() {
                return;
            }
        }
    }
}

/// A fresh task or context id: a random (version 4) UUID, hyphenated lowercase hex.
pub(crate) fn new_id() -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bits =
        rand::random::<u128>() & !(0xf000 << 64) & !(0xc << 60) | (0x4000 << 64) | (0x8 << 60);
    let mut id = String::with_capacity(36);
    let mut shift = 128;
    for at in 0..36 {
        if matches!(at, 8 | 13 | 18 | 23) {
            id.push('-');
        } else {
            shift -= 4;
            id.push(char::from(HEX[((bits >> shift) & 0xf) as usize]));
        }
    }
    id
}

// === GetTask, ListTasks, CancelTask, SubscribeToTask ===

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TaskParams {
    id: String,
    #[serde(default)]
    history_length: Option<usize>,
}

async fn get_task(call: &Call<'_>, params: Params) -> Result<Answer, Fail> {
    let params: TaskParams = read(params)?;
    let Some(stored) = call.agent.store.get(&call.owner, &params.id).await? else {
        return Err(A2aError::TaskNotFound.into());
    };
    let history = params
        .history_length
        .or(Some(call.agent.settings.default_history_length));
    Ok(raw(&stored.task.trimmed(history, true)))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ListParams {
    #[serde(default)]
    context_id: Option<String>,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    page_size: Option<usize>,
    #[serde(default)]
    page_token: Option<String>,
    #[serde(default)]
    history_length: Option<usize>,
    #[serde(default)]
    status_timestamp_after: Option<String>,
    #[serde(default)]
    include_artifacts: bool,
}

async fn list_tasks(call: &Call<'_>, params: Params) -> Result<Answer, Fail> {
    let params: ListParams = read(params)?;
    let settings = &call.agent.settings;
    let page_size = match params.page_size {
        Some(0) => {
            return Err(A2aError::InvalidParams("pageSize must be at least 1".into()).into());
        }
        Some(n) => n.min(settings.list_max_page_size),
        None => settings.list_default_page_size,
    };
    let state = match params.status.as_deref() {
        None | Some("") => None,
        Some(text) => match TaskState::parse(text) {
            TaskState::Unspecified => {
                return Err(
                    A2aError::InvalidParams(format!("unknown task state {text:?}").into()).into(),
                );
            }
            state => Some(state),
        },
    };
    let query = ListQuery {
        context_id: params.context_id.filter(|c| !c.is_empty()),
        state,
        page_size,
        page_token: params.page_token.filter(|t| !t.is_empty()),
        status_after: params.status_timestamp_after.filter(|t| !t.is_empty()),
    };
    let TaskPage {
        tasks,
        next_page_token,
        total_size,
        page_size,
    } = call.agent.store.list(&call.owner, &query).await?;
    let history = params
        .history_length
        .or(Some(settings.default_history_length));
    let tasks: Vec<Task> = tasks
        .iter()
        .map(|task| task.trimmed(history, params.include_artifacts))
        .collect();
    Ok(Answer::Value(json!({
        "tasks": tasks,
        "nextPageToken": next_page_token,
        "pageSize": page_size,
        "totalSize": total_size,
    })))
}

async fn cancel_task(call: &Call<'_>, params: Params) -> Result<Answer, Fail> {
    let params: TaskParams = read(params)?;
    match call.agent.store.cancel(&call.owner, &params.id).await? {
        CancelOutcome::NotFound => Err(A2aError::TaskNotFound.into()),
        CancelOutcome::NotCancelable(_) => Err(A2aError::TaskNotCancelable.into()),
        CancelOutcome::Canceled(task) => {
            let event = StreamResponse::StatusUpdate(super::model::TaskStatusUpdateEvent {
                task_id: task.id.clone(),
                context_id: task.context_id.clone(),
                status: task.status.clone(),
                metadata: None,
                extra: Default::default(),
            });
            call.agent.push_event(&call.owner, &task.id, &event).await;
            Ok(Answer::Value(
                serde_json::to_value(&task).unwrap_or(Value::Null),
            ))
        }
    }
}

async fn subscribe(call: &Call<'_>, params: Params) -> Result<Answer, Fail> {
    let params: TaskParams = read(params)?;
    let Some(subscription) = call.agent.store.subscribe(&call.owner, &params.id).await? else {
        return Err(A2aError::TaskNotFound.into());
    };
    if subscription.snapshot.status.state.is_terminal() {
        return Err(A2aError::UnsupportedOperation(
            format!("Task {} is in terminal state", params.id).into(),
        )
        .into());
    }
    Ok(Answer::Stream(Box::new(TaskStream {
        first: StreamResponse::Task(subscription.snapshot.clone()),
        subscription: Some(subscription),
    })))
}

// === Push notification configs ===

/// A config from the request, validated against the server's and tenant's policy; `task_id`
/// fills its `taskId` (an inline config names none).
async fn push_config(
    call: &Call<'_>,
    config: Value,
    task_id: Option<&str>,
) -> Result<PushConfig, A2aError> {
    accept_push_config(call.agent, &call.admitted.view, config, task_id).await
}

/// A push config a caller sent (to the own agent or, through the concentrator, to a remote
/// one): -32003 when push is off; read as 1.0's `TaskPushNotificationConfig`, `task_id` filling
/// its `taskId`; validated and its host resolved against the server's and `view`'s tenant's
/// webhook policy (`push.rs`).
pub(crate) async fn accept_push_config(
    agent: &Agent,
    view: &ClientView,
    config: Value,
    task_id: Option<&str>,
) -> Result<PushConfig, A2aError> {
    if !agent.settings.push_enabled() {
        return Err(A2aError::PushNotSupported);
    }
    let mut config: PushConfig = serde_json::from_value(config)
        .map_err(|err| A2aError::InvalidParams(err.to_string().into()))?;
    if let Some(task_id) = task_id {
        config.task_id = task_id.to_owned();
    }
    push::validate_resolved(&config, &push_policy(agent, view), PUSH_RESOLVE_LIMIT)
        .await
        .map_err(|refusal| {
            A2aError::InvalidParams(format!("push notification config refused: {refusal}").into())
        })?;
    Ok(config)
}

/// How long creating a push config waits for its host to resolve.
const PUSH_RESOLVE_LIMIT: Duration = Duration::from_secs(2);

/// The webhook policy of `view`'s tenant.
pub(crate) fn push_policy(agent: &Agent, view: &ClientView) -> PushPolicy {
    PushPolicy::new(
        agent.settings.allow_http_push,
        &view.a2a().push_allowed_hosts,
    )
}

/// The member of a stored config that remembers it was registered over 0.3, so its
/// deliveries are 0.3 bodies (what a 0.3 receiver parses); never shown to clients.
const STORED_VERSION: &str = "x-sluice-a2a-version";

/// A stored config as clients see it (without [`STORED_VERSION`]).
fn shown(bytes: &[u8]) -> Option<Value> {
    let mut value: Value = serde_json::from_slice(bytes).ok()?;
    if let Some(object) = value.as_object_mut() {
        object.remove(STORED_VERSION);
    }
    Some(value)
}

/// Stores `config` on the task (its id defaults to the task id); the JSON clients see.
async fn store_push(call: &Call<'_>, task_id: &str, mut config: PushConfig) -> Result<Value, Fail> {
    config.task_id = task_id.to_owned();
    if config.id.is_empty() {
        config.id = task_id.to_owned();
    }
    config.extra.remove(STORED_VERSION);
    let value = serde_json::to_value(&config).map_err(|_| A2aError::Internal)?;
    let mut stored = value.clone();
    if !call.version.is_v1() {
        stored[STORED_VERSION] = Value::from("0.3");
    }
    let bytes = Bytes::from(stored.to_string());
    if !call
        .agent
        .store
        .put_push(&call.owner, task_id, &config.id, bytes)
        .await?
    {
        return Err(A2aError::TaskNotFound.into());
    }
    Ok(value)
}

async fn create_push(call: &Call<'_>, params: Params) -> Result<Answer, Fail> {
    let params = params.value()?;
    let Some(task_id) = params
        .get("taskId")
        .and_then(Value::as_str)
        .map(str::to_owned)
    else {
        return Err(A2aError::InvalidParams("taskId is required".into()).into());
    };
    let config = push_config(call, params, Some(&task_id)).await?;
    let stored = call.agent.store.get(&call.owner, &task_id).await?;
    match stored {
        None => return Err(A2aError::TaskNotFound.into()),
        Some(stored) if stored.task.status.state.is_terminal() => {
            return Err(A2aError::UnsupportedOperation(
                format!("Task {task_id} is in terminal state").into(),
            )
            .into());
        }
        Some(_) => {}
    }
    Ok(Answer::Value(store_push(call, &task_id, config).await?))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PushParams {
    task_id: String,
    #[serde(default)]
    id: Option<String>,
}

async fn get_push(call: &Call<'_>, params: Params) -> Result<Answer, Fail> {
    if !call.agent.settings.push_enabled() {
        return Err(A2aError::PushNotSupported.into());
    }
    let params: PushParams = read(params)?;
    let id = params.id.unwrap_or_else(|| params.task_id.clone());
    match call
        .agent
        .store
        .get_push(&call.owner, &params.task_id, &id)
        .await?
    {
        Some(bytes) => Ok(Answer::Value(shown(&bytes).unwrap_or(Value::Null))),
        None => Err(A2aError::TaskNotFound.into()),
    }
}

async fn list_push(call: &Call<'_>, params: Params) -> Result<Answer, Fail> {
    if !call.agent.settings.push_enabled() {
        return Err(A2aError::PushNotSupported.into());
    }
    let params: PushParams = read(params)?;
    let Some(configs) = call
        .agent
        .store
        .list_push(&call.owner, &params.task_id)
        .await?
    else {
        return Err(A2aError::TaskNotFound.into());
    };
    let configs: Vec<Value> = configs.iter().filter_map(|bytes| shown(bytes)).collect();
    Ok(Answer::Value(
        json!({ "configs": configs, "nextPageToken": "" }),
    ))
}

async fn delete_push(call: &Call<'_>, params: Params) -> Result<Answer, Fail> {
    if !call.agent.settings.push_enabled() {
        return Err(A2aError::PushNotSupported.into());
    }
    let params: PushParams = read(params)?;
    let Some(id) = params.id else {
        return Err(A2aError::InvalidParams("id is required".into()).into());
    };
    if call
        .agent
        .store
        .get(&call.owner, &params.task_id)
        .await?
        .is_none()
    {
        return Err(A2aError::TaskNotFound.into());
    }
    call.agent
        .store
        .delete_push(&call.owner, &params.task_id, &id)
        .await?;
    Ok(Answer::Value(Value::Null))
}

impl super::agent::Agent {
    /// Records `event` on the task and hands it to its push configs: the one way the runner
    /// and the methods change a task.
    pub(crate) async fn record(
        &self,
        owner: &Owner,
        task_id: &str,
        event: &StreamResponse,
    ) -> Result<Appended, StoreError> {
        let appended = self.store.append(owner, task_id, event).await?;
        if matches!(appended, Appended::Applied(_)) {
            self.push_event(owner, task_id, event).await;
        }
        Ok(appended)
    }

    /// Queues `event` for every push config of the task (never waits for a delivery).
    pub(crate) async fn push_event(&self, owner: &Owner, task_id: &str, event: &StreamResponse) {
        let configs = self
            .store
            .push_configs(owner, task_id)
            .await
            .unwrap_or_default();
        if configs.is_empty() {
            return;
        }
        let Ok(value) = serde_json::to_value(event) else {
            return;
        };
        let body = Bytes::from(value.to_string());
        // The 0.3 body, for configs registered over 0.3; made once, when one needs it.
        let mut body_v03: Option<Bytes> = None;
        // The tenant's allowlist as it is now: a reload that removes a host stops deliveries.
        let snapshot = self.catalog.current();
        let allowed = snapshot
            .client(&owner.tenant, &owner.client)
            .map(|view| view.a2a().push_allowed_hosts.clone())
            .unwrap_or_default();
        let policy = PushPolicy::new(self.settings.allow_http_push, &allowed);
        for config in configs {
            let Ok(mut config) = serde_json::from_slice::<PushConfig>(&config) else {
                continue;
            };
            let v03 = config.extra.remove(STORED_VERSION).is_some();
            let body = if v03 {
                body_v03
                    .get_or_insert_with(|| {
                        let event = super::v03::event_to_v03(&value, event.ends_stream());
                        Bytes::from(event.to_string())
                    })
                    .clone()
            } else {
                body.clone()
            };
            self.push.enqueue(push::Delivery {
                tenant: owner.tenant.clone(),
                client: owner.client.clone(),
                caller: owner.caller.clone(),
                task_id: task_id.to_owned(),
                config,
                policy: policy.clone(),
                body,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_modes_match_exactly_or_by_wildcard() {
        let modes = |list: &[&str]| list.iter().map(|m| (*m).to_owned()).collect::<Vec<_>>();
        assert!(accepts_output(&[]));
        assert!(accepts_output(&modes(&["application/json"])));
        assert!(accepts_output(&modes(&["Text/Plain; charset=utf-8"])));
        assert!(accepts_output(&modes(&["image/png", "text/*"])));
        assert!(accepts_output(&modes(&["*/*"])));
        assert!(!accepts_output(&modes(&["image/png"])));
        assert!(!accepts_output(&modes(&["audio/*"])));
        let id = new_id();
        assert_eq!(id.len(), 36);
        assert_eq!(&id[14..15], "4", "{id}");
        assert!(matches!(&id[19..20], "8" | "9" | "a" | "b"), "{id}");
        for (at, c) in id.char_indices() {
            let hyphen = matches!(at, 8 | 13 | 18 | 23);
            assert_eq!(c == '-', hyphen, "{id}");
            assert!(hyphen || matches!(c, '0'..='9' | 'a'..='f'), "{id}");
        }
        assert_ne!(new_id(), new_id());
    }
}
