//! The one translation between A2A 0.3 and A2A 1.0 on the JSON-RPC binding. A request without
//! an `A2A-Version` header speaks 0.3 (A2A 1.0, "Service Parameters": a missing version means
//! 0.3); everything else in `a2a/` speaks 1.0 natively, and this file is the only place that
//! knows the 0.3 shapes:
//!
//! - method names (`message/send` ↔ `SendMessage`, …);
//! - the `kind` discriminators of messages, tasks, parts and stream events ↔ 1.0's wrapper
//!   members and member presence;
//! - enum strings (`completed`, `user`) ↔ `TASK_STATE_*`, `ROLE_*` (through `model.rs`);
//! - `blocking` ↔ `!returnImmediately`;
//! - file parts `file{bytes|uri, mimeType, name}` ↔ `raw|url` + `mediaType` + `filename`, and a
//!   non-object 1.0 data value ↔ a 0.3 `{"value": …}` data part flagged `data_part_compat`
//!   (the convention both a2a-sdk compat layers use);
//! - push configurations nested (`pushNotificationConfig`, `authentication.schemes[]`) ↔ flat
//!   (`authentication.scheme`), and the 0.3 `{id, pushNotificationConfigId}` ↔ `{taskId, id}`;
//! - `final` on the status event that precedes stream close (1.0 dropped it);
//! - the 0.3 members of the agent card, added next to the 1.0 ones.
//!
//! Everything works on `serde_json::Value` and only touches the members it translates:
//! unknown members pass through untouched in both directions (A2A 1.1 adds members a proxy
//! must not lose). Error `data` per version is `error.rs`'s job, not this file's.
//! Must not know HTTP beyond reading the version header, JSON-RPC envelopes, tasks or the
//! store.

use std::borrow::Cow;

use http::HeaderValue;
use serde_json::{json, Map, Value};

use super::model::{Role, TaskState};
use super::A2aError;
use crate::jsonrpc::echo;

// === Version ===

/// The protocol version a request speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Version {
    V03,
    V1,
}

impl Version {
    /// From the `A2A-Version` header value (`Major.Minor`, a patch level tolerated): absent or
    /// empty is 0.3, any `0.3.x` is 0.3, any `1.x` is 1.0, anything else is
    /// `VersionNotSupported` quoting the (bounded) text.
    pub(crate) fn from_header(value: Option<&HeaderValue>) -> Result<Version, A2aError> {
        let Some(value) = value else {
            return Ok(Version::V03);
        };
        let text = String::from_utf8_lossy(value.as_bytes());
        let text = text.trim();
        if text.is_empty() {
            return Ok(Version::V03);
        }
        match major_minor(text) {
            Some((1, _)) => Ok(Version::V1),
            Some((0, 3)) => Ok(Version::V03),
            _ => Err(A2aError::VersionNotSupported(echo(text).into_owned())),
        }
    }

    /// Whether this is 1.0.
    pub(crate) fn is_v1(self) -> bool {
        self == Version::V1
    }
}

/// `(major, minor)` of `1`, `1.0` or `1.0.1`; `None` for anything that is not one to three
/// dot-separated decimal numbers.
fn major_minor(text: &str) -> Option<(u64, u64)> {
    fn number(text: &str) -> Option<u64> {
        if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        text.parse().ok()
    }
    let mut parts = text.split('.');
    let major = number(parts.next()?)?;
    let minor = match parts.next() {
        Some(part) => number(part)?,
        None => 0,
    };
    if let Some(patch) = parts.next() {
        number(patch)?;
    }
    if parts.next().is_some() {
        return None;
    }
    Some((major, minor))
}

// === Methods ===

// The 1.0 method names this file translates for (A2A 1.0, JSON-RPC binding).
const SEND_MESSAGE: &str = "SendMessage";
const SEND_STREAMING_MESSAGE: &str = "SendStreamingMessage";
const GET_TASK: &str = "GetTask";
const LIST_TASKS: &str = "ListTasks";
const CANCEL_TASK: &str = "CancelTask";
const SUBSCRIBE_TO_TASK: &str = "SubscribeToTask";
const CREATE_PUSH_CONFIG: &str = "CreateTaskPushNotificationConfig";
const GET_PUSH_CONFIG: &str = "GetTaskPushNotificationConfig";
const LIST_PUSH_CONFIGS: &str = "ListTaskPushNotificationConfigs";
const DELETE_PUSH_CONFIG: &str = "DeleteTaskPushNotificationConfig";
const GET_EXTENDED_AGENT_CARD: &str = "GetExtendedAgentCard";

/// 0.3 method name → 1.0 method name. `tasks/list` is not a 0.3 JSON-RPC method (0.3 only had
/// it on REST), but a 0.3-era client may send it; it is accepted as `ListTasks`.
const METHODS: [(&str, &str); 11] = [
    ("message/send", SEND_MESSAGE),
    ("message/stream", SEND_STREAMING_MESSAGE),
    ("tasks/get", GET_TASK),
    ("tasks/list", LIST_TASKS),
    ("tasks/cancel", CANCEL_TASK),
    ("tasks/resubscribe", SUBSCRIBE_TO_TASK),
    ("tasks/pushNotificationConfig/set", CREATE_PUSH_CONFIG),
    ("tasks/pushNotificationConfig/get", GET_PUSH_CONFIG),
    ("tasks/pushNotificationConfig/list", LIST_PUSH_CONFIGS),
    ("tasks/pushNotificationConfig/delete", DELETE_PUSH_CONFIG),
    (
        "agent/getAuthenticatedExtendedCard",
        GET_EXTENDED_AGENT_CARD,
    ),
];

/// The 1.0 name of a 0.3 method; `None` for anything else (including 1.0 names).
pub(crate) fn method_to_v1(method: &str) -> Option<&'static str> {
    METHODS
        .iter()
        .find(|(v03, _)| *v03 == method)
        .map(|(_, v1)| *v1)
}

// === 0.3 → 1.0: request params ===

fn invalid(message: &'static str) -> A2aError {
    A2aError::InvalidParams(Cow::Borrowed(message))
}

/// 0.3 params → 1.0 params for `method_v1` (the 1.0 name, from [`method_to_v1`]). Absent
/// (`null`) params read as `{}`. Shapes that have no 1.0 form (a file part with neither
/// `bytes` nor `uri`, a part of unknown kind, params that are not an object) are
/// `InvalidParams`; a missing required member is left for the 1.0 handler to refuse.
pub(crate) fn params_to_v1(method_v1: &str, params: Value) -> Result<Value, A2aError> {
    let mut params = match params {
        Value::Null => Map::new(),
        Value::Object(params) => params,
        _ => return Err(invalid("params must be an object")),
    };
    match method_v1 {
        SEND_MESSAGE | SEND_STREAMING_MESSAGE => {
            if let Some(message) = params.get_mut("message") {
                message_to_v1(message)?;
            }
            if let Some(configuration) = params.get_mut("configuration") {
                configuration_to_v1(configuration)?;
            }
        }
        GET_TASK => drop_unlimited_history(&mut params),
        LIST_TASKS => {
            if let Some(Value::String(state)) = params.get_mut("status") {
                *state = TaskState::parse(state).as_v1().to_owned();
            }
        }
        CREATE_PUSH_CONFIG => {
            // 0.3 `TaskPushNotificationConfig{taskId, pushNotificationConfig{…}}` → 1.0's flat
            // `TaskPushNotificationConfig{taskId, id, url, token, authentication}`.
            let config = match params.remove("pushNotificationConfig") {
                Some(config @ Value::Object(_)) => push_config_to_v1(config)?,
                _ => return Err(invalid("pushNotificationConfig must be an object")),
            };
            params.extend(config);
        }
        GET_PUSH_CONFIG | DELETE_PUSH_CONFIG => {
            // 0.3 `{id: <task id>, pushNotificationConfigId}` → 1.0 `{taskId, id}`. A 0.3 get
            // without a config id stays without `id` (0.3: "the task's config").
            rename(&mut params, "id", "taskId");
            rename(&mut params, "pushNotificationConfigId", "id");
        }
        LIST_PUSH_CONFIGS => rename(&mut params, "id", "taskId"),
        // CancelTask {id, metadata}, SubscribeToTask {id} and GetExtendedAgentCard {} are the
        // same in both versions.
        _ => {}
    }
    Ok(Value::Object(params))
}

fn rename(object: &mut Map<String, Value>, from: &str, to: &str) {
    if let Some(value) = object.remove(from) {
        object.insert(to.to_owned(), value);
    }
}

/// 0.3 `historyLength: 0` means "no limit" to both a2a-sdk 0.3 servers (Python skips the trim
/// for 0, JS's `slice(-0)` keeps everything), while 1.0 `0` omits the history: a 0.3 zero is
/// left unset, as the a2a-sdk compat layer does.
fn drop_unlimited_history(object: &mut Map<String, Value>) {
    if object.get("historyLength").and_then(Value::as_u64) == Some(0) {
        object.remove("historyLength");
    }
}

/// 0.3 `MessageSendConfiguration` → 1.0 `SendMessageConfiguration`.
fn configuration_to_v1(value: &mut Value) -> Result<(), A2aError> {
    let configuration = match value {
        Value::Null => return Ok(()),
        Value::Object(configuration) => configuration,
        _ => return Err(invalid("configuration must be an object")),
    };
    // The inverted sense: 0.3 `blocking: true` is 1.0 `returnImmediately: false`.
    match configuration.remove("blocking") {
        None | Some(Value::Null) => {}
        Some(Value::Bool(blocking)) => {
            configuration.insert("returnImmediately".to_owned(), Value::Bool(!blocking));
        }
        Some(_) => return Err(invalid("configuration.blocking must be a boolean")),
    }
    match configuration.remove("pushNotificationConfig") {
        None | Some(Value::Null) => {}
        Some(config) => {
            let config = push_config_to_v1(config)?;
            configuration.insert(
                "taskPushNotificationConfig".to_owned(),
                Value::Object(config),
            );
        }
    }
    drop_unlimited_history(configuration);
    Ok(())
}

/// 0.3 `PushNotificationConfig{id, url, token, authentication{schemes[], credentials}}` → the
/// members of 1.0's flat config (`authentication{scheme, credentials}`). 1.0 has one scheme:
/// the first of several is kept, as both a2a-sdk compat layers do.
fn push_config_to_v1(config: Value) -> Result<Map<String, Value>, A2aError> {
    let Value::Object(mut config) = config else {
        return Err(invalid("pushNotificationConfig must be an object"));
    };
    match config.get_mut("authentication") {
        None | Some(Value::Null) => {}
        Some(Value::Object(authentication)) => match authentication.remove("schemes") {
            None | Some(Value::Null) => {}
            Some(Value::Array(schemes)) => match schemes.into_iter().next() {
                None => {}
                Some(scheme @ Value::String(_)) => {
                    authentication.insert("scheme".to_owned(), scheme);
                }
                Some(_) => return Err(invalid("authentication.schemes must hold strings")),
            },
            Some(_) => return Err(invalid("authentication.schemes must be an array")),
        },
        Some(_) => return Err(invalid("authentication must be an object")),
    }
    Ok(config)
}

/// 0.3 `Message` → 1.0 `Message`, in place.
fn message_to_v1(value: &mut Value) -> Result<(), A2aError> {
    let Some(message) = value.as_object_mut() else {
        return Err(invalid("message must be an object"));
    };
    message.remove("kind");
    if let Some(Value::String(role)) = message.get_mut("role") {
        match Role::parse(role) {
            Role::Unspecified => return Err(invalid("message.role must be \"user\" or \"agent\"")),
            known => *role = known.as_v1().to_owned(),
        }
    }
    match message.get_mut("parts") {
        None => {}
        Some(Value::Array(parts)) => parts.iter_mut().try_for_each(part_to_v1)?,
        Some(_) => return Err(invalid("message.parts must be an array")),
    }
    Ok(())
}

/// 0.3 `Part` (`kind` text | file | data) → 1.0 `Part` (one of text | raw | url | data). A part
/// without `kind` is read by its members, so an already-1.0 part passes unchanged.
fn part_to_v1(value: &mut Value) -> Result<(), A2aError> {
    let Some(part) = value.as_object_mut() else {
        return Err(invalid("each part must be an object"));
    };
    let kind = match part.remove("kind") {
        Some(Value::String(kind)) => Some(kind),
        None => ["text", "file", "data"]
            .into_iter()
            .find(|member| part.contains_key(*member))
            .map(str::to_owned),
        Some(_) => return Err(invalid("part.kind must be a string")),
    };
    match kind.as_deref() {
        Some("text") => {
            if !part.get("text").is_some_and(Value::is_string) {
                return Err(invalid("a text part needs text"));
            }
        }
        Some("file") => file_part_to_v1(part)?,
        Some("data") => data_part_to_v1(part)?,
        Some(_) => return Err(invalid("part.kind must be text, file or data")),
        None if part.contains_key("raw") || part.contains_key("url") => {}
        None => return Err(invalid("a part needs kind text, file or data")),
    }
    Ok(())
}

/// `{"file": {bytes | uri, mimeType, name}}` → `raw | url` + `mediaType` + `filename`.
fn file_part_to_v1(part: &mut Map<String, Value>) -> Result<(), A2aError> {
    let Some(Value::Object(mut file)) = part.remove("file") else {
        return Err(invalid("a file part needs a file object"));
    };
    let mut take = |key: &str| file.remove(key).filter(|value| !value.is_null());
    let content = match (take("bytes"), take("uri")) {
        (Some(bytes), None) => ("raw", bytes),
        (None, Some(uri)) => ("url", uri),
        _ => {
            return Err(invalid(
                "a file part needs exactly one of file.bytes and file.uri",
            ))
        }
    };
    let media_type = take("mimeType");
    let filename = take("name");
    part.insert(content.0.to_owned(), content.1);
    if let Some(media_type) = media_type {
        part.insert("mediaType".to_owned(), media_type);
    }
    if let Some(filename) = filename {
        part.insert("filename".to_owned(), filename);
    }
    // Members of `file` this file does not know move to the part rather than vanish.
    for (key, value) in file {
        part.entry(key).or_insert(value);
    }
    Ok(())
}

/// `{"data": {…}}`; a `{"value": v}` flagged `metadata.data_part_compat` (how a 1.0 data
/// value that is not an object travels through 0.3) is unwrapped back to `v`.
fn data_part_to_v1(part: &mut Map<String, Value>) -> Result<(), A2aError> {
    if !part.contains_key("data") {
        return Err(invalid("a data part needs data"));
    }
    let Some(Value::Object(metadata)) = part.get_mut("metadata") else {
        return Ok(());
    };
    if metadata.get(DATA_PART_COMPAT) != Some(&Value::Bool(true)) {
        return Ok(());
    }
    metadata.remove(DATA_PART_COMPAT);
    if metadata.is_empty() {
        part.remove("metadata");
    }
    if let Some(Value::Object(data)) = part.get_mut("data") {
        if data.len() == 1 {
            if let Some(value) = data.remove("value") {
                part.insert("data".to_owned(), value);
            }
        }
    }
    Ok(())
}

/// The metadata flag of a 0.3 data part that wraps a non-object 1.0 value as `{"value": …}`.
const DATA_PART_COMPAT: &str = "data_part_compat";

// === 1.0 → 0.3: results and stream events ===

/// 1.0 result of `method_v1` → the 0.3 result: `SendMessage`'s `{"task"}`/`{"message"}`
/// unwrapped to the object with its `kind`; tasks (`GetTask`, `CancelTask`, each of
/// `ListTasks`) with `kind`, 0.3 state strings, roles and parts; push configs nested; the
/// config list as a bare array; the extended card with its 0.3 members. A stream method's
/// result is one event ([`event_to_v03`], not last). `null` and unknown methods pass through.
pub(crate) fn result_to_v03(method_v1: &str, result: Value) -> Value {
    let mut result = result;
    match method_v1 {
        SEND_MESSAGE => match result {
            Value::Object(mut object) => {
                if let Some(mut task) = object.remove("task") {
                    task_to_v03(&mut task);
                    task
                } else if let Some(mut message) = object.remove("message") {
                    message_to_v03(&mut message);
                    message
                } else {
                    Value::Object(object)
                }
            }
            other => other,
        },
        SEND_STREAMING_MESSAGE | SUBSCRIBE_TO_TASK => event_to_v03(&result, false),
        GET_TASK | CANCEL_TASK => {
            task_to_v03(&mut result);
            result
        }
        LIST_TASKS => {
            if let Some(Value::Array(tasks)) = result.get_mut("tasks") {
                tasks.iter_mut().for_each(task_to_v03);
            }
            result
        }
        CREATE_PUSH_CONFIG | GET_PUSH_CONFIG => push_config_to_v03(result),
        LIST_PUSH_CONFIGS => match result {
            // ProtoJSON omits an empty repeated member: `{}` is an empty list.
            Value::Object(mut object) => match object.remove("configs") {
                Some(Value::Array(configs)) => {
                    Value::Array(configs.into_iter().map(push_config_to_v03).collect())
                }
                None | Some(Value::Null) => Value::Array(Vec::new()),
                Some(other) => {
                    object.insert("configs".to_owned(), other);
                    Value::Object(object)
                }
            },
            other => other,
        },
        GET_EXTENDED_AGENT_CARD => {
            card_v03_members(&mut result);
            result
        }
        _ => result,
    }
}

/// One 1.0 `StreamResponse` → its 0.3 event: `task`/`message` unwrapped with their `kind`;
/// `statusUpdate` → `kind: "status-update"` with `final: last`; `artifactUpdate` →
/// `kind: "artifact-update"` with `append` and `lastChunk` (default false). `last` is true for
/// the event that precedes stream close (1.0 signals the end by closing; 0.3 by `final`).
/// Anything else is returned unchanged.
pub(crate) fn event_to_v03(event: &Value, last: bool) -> Value {
    let Some(object) = event.as_object() else {
        return event.clone();
    };
    if let Some(task) = object.get("task") {
        let mut task = task.clone();
        task_to_v03(&mut task);
        return task;
    }
    if let Some(message) = object.get("message") {
        let mut message = message.clone();
        message_to_v03(&mut message);
        return message;
    }
    if let Some(Value::Object(update)) = object.get("statusUpdate") {
        let mut update = update.clone();
        update.insert("kind".to_owned(), "status-update".into());
        if let Some(status) = update.get_mut("status") {
            status_to_v03(status);
        }
        update.insert("final".to_owned(), Value::Bool(last));
        return Value::Object(update);
    }
    if let Some(Value::Object(update)) = object.get("artifactUpdate") {
        let mut update = update.clone();
        update.insert("kind".to_owned(), "artifact-update".into());
        if let Some(artifact) = update.get_mut("artifact") {
            artifact_to_v03(artifact);
        }
        update.entry("append").or_insert(Value::Bool(false));
        update.entry("lastChunk").or_insert(Value::Bool(false));
        return Value::Object(update);
    }
    event.clone()
}

/// 1.0 `Task` → 0.3 `Task`, in place.
fn task_to_v03(value: &mut Value) {
    let Some(task) = value.as_object_mut() else {
        return;
    };
    task.insert("kind".to_owned(), "task".into());
    if let Some(status) = task.get_mut("status") {
        status_to_v03(status);
    }
    if let Some(Value::Array(history)) = task.get_mut("history") {
        history.iter_mut().for_each(message_to_v03);
    }
    if let Some(Value::Array(artifacts)) = task.get_mut("artifacts") {
        artifacts.iter_mut().for_each(artifact_to_v03);
    }
}

/// 1.0 `TaskStatus` → 0.3: the state string (an unknown one reads as `unknown`), the message.
fn status_to_v03(value: &mut Value) {
    let Some(status) = value.as_object_mut() else {
        return;
    };
    if let Some(Value::String(state)) = status.get_mut("state") {
        *state = TaskState::parse(state).as_v03().to_owned();
    }
    if let Some(message) = status.get_mut("message") {
        message_to_v03(message);
    }
}

/// 1.0 `Artifact` → 0.3: its parts.
fn artifact_to_v03(value: &mut Value) {
    if let Some(artifact) = value.as_object_mut() {
        parts_to_v03(artifact);
    }
}

/// 1.0 `Message` → 0.3: `kind`, the role string, the parts.
fn message_to_v03(value: &mut Value) {
    let Some(message) = value.as_object_mut() else {
        return;
    };
    message.insert("kind".to_owned(), "message".into());
    if let Some(Value::String(role)) = message.get_mut("role") {
        *role = Role::parse(role).as_v03().to_owned();
    }
    parts_to_v03(message);
}

fn parts_to_v03(object: &mut Map<String, Value>) {
    if let Some(Value::Array(parts)) = object.get_mut("parts") {
        parts.iter_mut().for_each(part_to_v03);
    }
}

/// 1.0 `Part` → 0.3 `Part` with its `kind`. Empty `mediaType`/`filename` (how some servers
/// write unset members) are dropped from file parts rather than sent as empty names.
fn part_to_v03(value: &mut Value) {
    let Some(part) = value.as_object_mut() else {
        return;
    };
    if part.contains_key("kind") {
        return;
    }
    if part.contains_key("text") {
        part.insert("kind".to_owned(), "text".into());
        return;
    }
    let content = match part.remove("raw") {
        Some(raw) => Some(("bytes", raw)),
        None => part.remove("url").map(|url| ("uri", url)),
    };
    if let Some((member, content)) = content {
        let mut file = Map::new();
        file.insert(member.to_owned(), content);
        for (from, to) in [("mediaType", "mimeType"), ("filename", "name")] {
            match part.remove(from) {
                Some(Value::String(text)) if text.is_empty() => {}
                Some(value) => {
                    file.insert(to.to_owned(), value);
                }
                None => {}
            }
        }
        part.insert("kind".to_owned(), "file".into());
        part.insert("file".to_owned(), Value::Object(file));
        return;
    }
    if let Some(data) = part.get_mut("data") {
        // 0.3 data is an object; any other 1.0 value travels wrapped and flagged.
        if !data.is_object() {
            let inner = data.take();
            *data = json!({ "value": inner });
            let metadata = part
                .entry("metadata")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(metadata) = metadata {
                metadata.insert(DATA_PART_COMPAT.to_owned(), Value::Bool(true));
            }
        }
        part.insert("kind".to_owned(), "data".into());
    }
}

/// 1.0's flat `TaskPushNotificationConfig` → 0.3's `{taskId, pushNotificationConfig{id, url,
/// token, authentication{schemes[], credentials}}}`. Members 0.3 does not nest (`taskId`,
/// `tenant`, unknown ones) stay at the top.
fn push_config_to_v03(config: Value) -> Value {
    let Value::Object(mut flat) = config else {
        return config;
    };
    let mut nested = Map::new();
    for member in ["id", "url", "token", "authentication"] {
        if let Some(value) = flat.remove(member) {
            nested.insert(member.to_owned(), value);
        }
    }
    if let Some(Value::Object(authentication)) = nested.get_mut("authentication") {
        let schemes = match authentication.remove("scheme") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::String(scheme)) if scheme.is_empty() => Vec::new(),
            Some(scheme) => vec![scheme],
        };
        authentication.insert("schemes".to_owned(), Value::Array(schemes));
    }
    flat.insert("pushNotificationConfig".to_owned(), Value::Object(nested));
    Value::Object(flat)
}

// === Agent card ===

/// 1.0 security scheme wrapper member → the 0.3 `type` discriminator.
const SCHEME_TYPES: [(&str, &str); 5] = [
    ("apiKeySecurityScheme", "apiKey"),
    ("httpAuthSecurityScheme", "http"),
    ("oauth2SecurityScheme", "oauth2"),
    ("openIdConnectSecurityScheme", "openIdConnect"),
    ("mtlsSecurityScheme", "mutualTLS"),
];

/// Adds the 0.3 members to a 1.0 agent card, in place, so that one card serves both: 1.0
/// clients read `supportedInterfaces` and ignore the rest, 0.3 clients read `url`,
/// `protocolVersion` and the `type`-discriminated schemes. Members already present are never
/// overwritten, so applying it twice changes nothing.
///
/// - `protocolVersion` "0.3.0"; `url`, `preferredTransport` and `additionalInterfaces` from
///   the `supportedInterfaces` entry with protocol version 0.3 (else the first);
/// - `supportsAuthenticatedExtendedCard` = `capabilities.extendedAgentCard`;
/// - `security` (`[{name: [scopes]}]`) from `securityRequirements`, on the card and on each
///   skill;
/// - each security scheme keeps its 1.0 wrapper member and gets the 0.3 members beside it:
///   `type` plus the wrapper's members (`location` named `in` for API keys). This is the
///   shape a2a-sdk 1.3.0's own server publishes (it deep-merges its 0.3 card into the 1.0
///   one); its card parser pops `type`, re-wraps the 0.3 members and ignores the nested 1.0
///   wrapper, and @a2a-js/sdk 1.3.0 selects the interface from `supportedInterfaces` and
///   keeps the card as sent. Without `type` a 0.3 client misreads every scheme.
pub(crate) fn card_v03_members(card: &mut Value) {
    let Some(card) = card.as_object_mut() else {
        return;
    };
    let interface = card
        .get("supportedInterfaces")
        .and_then(Value::as_array)
        .and_then(|interfaces| {
            interfaces
                .iter()
                .find(|interface| {
                    interface
                        .get("protocolVersion")
                        .and_then(Value::as_str)
                        .and_then(major_minor)
                        == Some((0, 3))
                })
                .or_else(|| interfaces.first())
        });
    let url = interface
        .and_then(|interface| interface.get("url"))
        .cloned();
    let transport = interface
        .and_then(|interface| interface.get("protocolBinding"))
        .cloned()
        .unwrap_or_else(|| "JSONRPC".into());
    if let Some(url) = url {
        card.entry("additionalInterfaces")
            .or_insert_with(|| json!([{"url": url, "transport": transport}]));
        card.entry("url").or_insert(url);
        card.entry("preferredTransport").or_insert(transport);
    }
    card.entry("protocolVersion").or_insert("0.3.0".into());
    let extended = card
        .get("capabilities")
        .and_then(|capabilities| capabilities.get("extendedAgentCard"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    card.entry("supportsAuthenticatedExtendedCard")
        .or_insert(Value::Bool(extended));
    if let Some(security) = card.get("securityRequirements").and_then(security_v03) {
        card.entry("security").or_insert(security);
    }
    if let Some(Value::Array(skills)) = card.get_mut("skills") {
        for skill in skills.iter_mut().filter_map(Value::as_object_mut) {
            if let Some(security) = skill.get("securityRequirements").and_then(security_v03) {
                skill.entry("security").or_insert(security);
            }
        }
    }
    if let Some(Value::Object(schemes)) = card.get_mut("securitySchemes") {
        for scheme in schemes.values_mut().filter_map(Value::as_object_mut) {
            scheme_v03_members(scheme);
        }
    }
}

/// 1.0 `securityRequirements` (`[{"schemes": {name: {"list": [scopes]}}}]`) → 0.3 `security`
/// (`[{name: [scopes]}]`).
fn security_v03(requirements: &Value) -> Option<Value> {
    let requirements = requirements.as_array()?;
    let security = requirements
        .iter()
        .map(|requirement| {
            let schemes = requirement
                .get("schemes")
                .and_then(Value::as_object)
                .map(|schemes| {
                    schemes
                        .iter()
                        .map(|(name, scopes)| {
                            let scopes = scopes.get("list").cloned().unwrap_or(json!([]));
                            (name.clone(), scopes)
                        })
                        .collect::<Map<_, _>>()
                })
                .unwrap_or_default();
            Value::Object(schemes)
        })
        .collect();
    Some(Value::Array(security))
}

/// The 0.3 members of one 1.0 security scheme, added beside its wrapper member.
fn scheme_v03_members(scheme: &mut Map<String, Value>) {
    if scheme.contains_key("type") {
        return;
    }
    let Some((wrapper, kind)) = SCHEME_TYPES
        .iter()
        .find(|(wrapper, _)| scheme.contains_key(*wrapper))
    else {
        return;
    };
    let inner = match scheme.get(*wrapper) {
        Some(Value::Object(inner)) => inner.clone(),
        _ => Map::new(),
    };
    scheme.insert("type".to_owned(), (*kind).into());
    for (member, value) in inner {
        let member = if *kind == "apiKey" && member == "location" {
            "in".to_owned()
        } else {
            member
        };
        scheme.entry(member).or_insert(value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> Value {
        serde_json::from_str(json).unwrap_or_else(|err| panic!("{err}: {json}"))
    }

    // --- Version ---

    #[test]
    fn version_header_table() {
        let cases: &[(Option<&str>, Result<Version, &str>)] = &[
            (None, Ok(Version::V03)),
            (Some(""), Ok(Version::V03)),
            (Some("  "), Ok(Version::V03)),
            (Some("0.3"), Ok(Version::V03)),
            (Some("0.3.0"), Ok(Version::V03)),
            (Some("0.3.9"), Ok(Version::V03)),
            (Some("1"), Ok(Version::V1)),
            (Some("1.0"), Ok(Version::V1)),
            (Some(" 1.0 "), Ok(Version::V1)),
            (Some("1.0.1"), Ok(Version::V1)),
            (Some("1.1"), Ok(Version::V1)),
            (Some("0.2"), Err("0.2")),
            (Some("0"), Err("0")),
            (Some("2.0"), Err("2.0")),
            (Some("1."), Err("1.")),
            (Some("v1.0"), Err("v1.0")),
            (Some("1.0.1.2"), Err("1.0.1.2")),
            (Some("1.0-rc1"), Err("1.0-rc1")),
            (
                Some("99999999999999999999999"),
                Err("99999999999999999999999"),
            ),
        ];
        for (header, expected) in cases {
            let value = header.map(|text| HeaderValue::from_str(text).expect("header"));
            let got = Version::from_header(value.as_ref());
            let expected = expected.map_err(|text| A2aError::VersionNotSupported(text.to_owned()));
            assert_eq!(got, expected, "{header:?}");
        }
        let long = HeaderValue::from_str(&"9".repeat(4096)).expect("header");
        match Version::from_header(Some(&long)) {
            Err(A2aError::VersionNotSupported(text)) => assert!(text.len() < 200),
            other => panic!("{other:?}"),
        }
        let opaque = HeaderValue::from_bytes(b"1.0\xff").expect("header");
        assert!(Version::from_header(Some(&opaque)).is_err());
        assert!(Version::V1.is_v1());
        assert!(!Version::V03.is_v1());
    }

    // --- Methods ---

    #[test]
    fn method_table() {
        let cases = [
            ("message/send", Some("SendMessage")),
            ("message/stream", Some("SendStreamingMessage")),
            ("tasks/get", Some("GetTask")),
            ("tasks/list", Some("ListTasks")),
            ("tasks/cancel", Some("CancelTask")),
            ("tasks/resubscribe", Some("SubscribeToTask")),
            (
                "tasks/pushNotificationConfig/set",
                Some("CreateTaskPushNotificationConfig"),
            ),
            (
                "tasks/pushNotificationConfig/get",
                Some("GetTaskPushNotificationConfig"),
            ),
            (
                "tasks/pushNotificationConfig/list",
                Some("ListTaskPushNotificationConfigs"),
            ),
            (
                "tasks/pushNotificationConfig/delete",
                Some("DeleteTaskPushNotificationConfig"),
            ),
            (
                "agent/getAuthenticatedExtendedCard",
                Some("GetExtendedAgentCard"),
            ),
            ("SendMessage", None),
            ("tasks/pushNotificationConfig", None),
            ("Message/Send", None),
            ("", None),
        ];
        for (method, expected) in cases {
            assert_eq!(method_to_v1(method), expected, "{method}");
        }
    }

    // --- 0.3 → 1.0 ---

    /// `params_to_v1(method, input) == expected`.
    fn check_params(method_v03: &str, input: &str, expected: &str) {
        let method = method_to_v1(method_v03).expect("a 0.3 method");
        let got = params_to_v1(method, parse(input)).unwrap_or_else(|err| panic!("{err}: {input}"));
        assert_eq!(got, parse(expected), "{method_v03} {input}");
    }

    fn check_params_refused(method_v03: &str, input: &str) {
        let method = method_to_v1(method_v03).expect("a 0.3 method");
        match params_to_v1(method, parse(input)) {
            Err(A2aError::InvalidParams(_)) => {}
            other => panic!("{method_v03} {input}: {other:?}"),
        }
    }

    #[test]
    fn params_table() {
        // What an a2a-sdk 0.3 client sends for `message/send` (observed on the wire).
        check_params(
            "message/send",
            r#"{"message":{"kind":"message","messageId":"m1","role":"user",
                "parts":[{"kind":"text","text":"old client"}]},
                "configuration":{"acceptedOutputModes":[],"blocking":true}}"#,
            r#"{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"old client"}]},
                "configuration":{"acceptedOutputModes":[],"returnImmediately":false}}"#,
        );
        check_params(
            "message/stream",
            r#"{"message":{"kind":"message","messageId":"m2","role":"agent","taskId":"t1",
                "contextId":"c1","parts":[
                  {"kind":"file","file":{"bytes":"aGk=","mimeType":"text/plain","name":"a.txt"}},
                  {"kind":"file","file":{"uri":"https://x/y.png","mimeType":"image/png"},"metadata":{"k":1}},
                  {"kind":"data","data":{"tool":"t","arguments":{}}},
                  {"kind":"data","data":{"value":[1,2]},"metadata":{"data_part_compat":true}},
                  {"kind":"data","data":{"value":"s"},"metadata":{"data_part_compat":true,"m":2}}]},
                "configuration":{"blocking":false,"historyLength":3,
                  "pushNotificationConfig":{"url":"https://hook","token":"tok",
                    "authentication":{"schemes":["Bearer"],"credentials":"secret"}}},
                "metadata":{"trace":"x"}}"#,
            r#"{"message":{"messageId":"m2","role":"ROLE_AGENT","taskId":"t1","contextId":"c1",
                "parts":[
                  {"raw":"aGk=","mediaType":"text/plain","filename":"a.txt"},
                  {"url":"https://x/y.png","mediaType":"image/png","metadata":{"k":1}},
                  {"data":{"tool":"t","arguments":{}}},
                  {"data":[1,2]},
                  {"data":"s","metadata":{"m":2}}]},
                "configuration":{"returnImmediately":true,"historyLength":3,
                  "taskPushNotificationConfig":{"url":"https://hook","token":"tok",
                    "authentication":{"scheme":"Bearer","credentials":"secret"}}},
                "metadata":{"trace":"x"}}"#,
        );
        // 0.3 `historyLength: 0` is "no limit": left unset, not "omit the history".
        check_params(
            "message/send",
            r#"{"message":{"messageId":"m","role":"user","parts":[]},"configuration":{"historyLength":0}}"#,
            r#"{"message":{"messageId":"m","role":"ROLE_USER","parts":[]},"configuration":{}}"#,
        );
        check_params(
            "tasks/get",
            r#"{"id":"t1","historyLength":2}"#,
            r#"{"id":"t1","historyLength":2}"#,
        );
        check_params(
            "tasks/get",
            r#"{"id":"t1","historyLength":0}"#,
            r#"{"id":"t1"}"#,
        );
        check_params(
            "tasks/cancel",
            r#"{"id":"t1","metadata":{"why":"x"}}"#,
            r#"{"id":"t1","metadata":{"why":"x"}}"#,
        );
        check_params("tasks/resubscribe", r#"{"id":"t1"}"#, r#"{"id":"t1"}"#);
        check_params(
            "tasks/list",
            r#"{"status":"working","pageSize":10}"#,
            r#"{"status":"TASK_STATE_WORKING","pageSize":10}"#,
        );
        check_params(
            "tasks/pushNotificationConfig/set",
            r#"{"taskId":"t1","pushNotificationConfig":{"id":"p1","url":"https://hook","token":"tok",
                "authentication":{"schemes":["Bearer","Basic"],"credentials":"c"}}}"#,
            r#"{"taskId":"t1","id":"p1","url":"https://hook","token":"tok",
                "authentication":{"scheme":"Bearer","credentials":"c"}}"#,
        );
        check_params(
            "tasks/pushNotificationConfig/get",
            r#"{"id":"t1","pushNotificationConfigId":"p1"}"#,
            r#"{"taskId":"t1","id":"p1"}"#,
        );
        check_params(
            "tasks/pushNotificationConfig/get",
            r#"{"id":"t1"}"#,
            r#"{"taskId":"t1"}"#,
        );
        check_params(
            "tasks/pushNotificationConfig/delete",
            r#"{"id":"t1","pushNotificationConfigId":"p1"}"#,
            r#"{"taskId":"t1","id":"p1"}"#,
        );
        check_params(
            "tasks/pushNotificationConfig/list",
            r#"{"id":"t1"}"#,
            r#"{"taskId":"t1"}"#,
        );
        check_params("agent/getAuthenticatedExtendedCard", "{}", "{}");
        check_params("agent/getAuthenticatedExtendedCard", "null", "{}");
        // An already-1.0 part (no kind) passes unchanged.
        check_params(
            "message/send",
            r#"{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"a"},{"url":"u"},{"data":3}]}}"#,
            r#"{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"a"},{"url":"u"},{"data":3}]}}"#,
        );
    }

    #[test]
    fn untranslatable_params_are_invalid() {
        let send = |message: &str| format!(r#"{{"message":{message}}}"#);
        let refused = [
            ("message/send", "[1]".to_owned()),
            ("message/send", send(r#""text""#)),
            (
                "message/send",
                send(r#"{"messageId":"m","role":"user","parts":[{"kind":"file","file":{"name":"n"}}]}"#),
            ),
            (
                "message/send",
                send(r#"{"messageId":"m","role":"user","parts":[{"kind":"file","file":{"bytes":"aA==","uri":"u"}}]}"#),
            ),
            (
                "message/send",
                send(r#"{"messageId":"m","role":"user","parts":[{"kind":"file"}]}"#),
            ),
            (
                "message/send",
                send(r#"{"messageId":"m","role":"user","parts":[{"kind":"image","image":"x"}]}"#),
            ),
            (
                "message/send",
                send(r#"{"messageId":"m","role":"user","parts":[{"metadata":{}}]}"#),
            ),
            (
                "message/send",
                send(r#"{"messageId":"m","role":"user","parts":["text"]}"#),
            ),
            (
                "message/send",
                send(r#"{"messageId":"m","role":"user","parts":[{"kind":"text","text":3}]}"#),
            ),
            (
                "message/send",
                send(r#"{"messageId":"m","role":"user","parts":[{"kind":"data"}]}"#),
            ),
            (
                "message/send",
                send(r#"{"messageId":"m","role":"system","parts":[]}"#),
            ),
            (
                "message/send",
                send(r#"{"messageId":"m","role":"user","parts":{}}"#),
            ),
            (
                "message/send",
                r#"{"message":{"messageId":"m","role":"user","parts":[]},"configuration":{"blocking":"yes"}}"#
                    .to_owned(),
            ),
            (
                "message/send",
                r#"{"message":{"messageId":"m","role":"user","parts":[]},"configuration":{"pushNotificationConfig":{"url":"u","authentication":{"schemes":"Bearer"}}}}"#
                    .to_owned(),
            ),
            ("tasks/pushNotificationConfig/set", r#"{"taskId":"t1"}"#.to_owned()),
            ("tasks/get", r#""t1""#.to_owned()),
        ];
        for (method, params) in refused {
            check_params_refused(method, &params);
        }
    }

    // --- 1.0 → 0.3 ---

    fn check_result(method_v1: &str, input: &str, expected: &str) {
        assert_eq!(
            result_to_v03(method_v1, parse(input)),
            parse(expected),
            "{method_v1} {input}"
        );
    }

    #[test]
    fn result_table() {
        check_result(
            "SendMessage",
            r#"{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_SUBMITTED"},
                "history":[{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}]}}"#,
            r#"{"kind":"task","id":"t1","contextId":"c1","status":{"state":"submitted"},
                "history":[{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"hi"}]}]}"#,
        );
        check_result(
            "SendMessage",
            r#"{"message":{"messageId":"m2","role":"ROLE_AGENT","parts":[{"data":{"a":1}}]}}"#,
            r#"{"kind":"message","messageId":"m2","role":"agent","parts":[{"kind":"data","data":{"a":1}}]}"#,
        );
        check_result(
            "GetTask",
            r#"{"id":"t1","contextId":"c1",
                "status":{"state":"TASK_STATE_INPUT_REQUIRED","timestamp":"2026-11-30T09:08:32.712Z",
                  "message":{"messageId":"q","role":"ROLE_AGENT","parts":[{"text":"which?"}]}},
                "artifacts":[{"artifactId":"a1","name":"out","parts":[
                  {"raw":"aGk=","mediaType":"text/plain","filename":"a.txt"},
                  {"url":"https://x/y","mediaType":"","filename":""},
                  {"data":[1,2]},
                  {"data":null,"metadata":{"m":1}}]}]}"#,
            r#"{"kind":"task","id":"t1","contextId":"c1",
                "status":{"state":"input-required","timestamp":"2026-11-30T09:08:32.712Z",
                  "message":{"kind":"message","messageId":"q","role":"agent","parts":[{"kind":"text","text":"which?"}]}},
                "artifacts":[{"artifactId":"a1","name":"out","parts":[
                  {"kind":"file","file":{"bytes":"aGk=","mimeType":"text/plain","name":"a.txt"}},
                  {"kind":"file","file":{"uri":"https://x/y"}},
                  {"kind":"data","data":{"value":[1,2]},"metadata":{"data_part_compat":true}},
                  {"kind":"data","data":{"value":null},"metadata":{"m":1,"data_part_compat":true}}]}]}"#,
        );
        check_result(
            "CancelTask",
            r#"{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_CANCELED"}}"#,
            r#"{"kind":"task","id":"t1","contextId":"c1","status":{"state":"canceled"}}"#,
        );
        check_result(
            "ListTasks",
            r#"{"tasks":[{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_COMPLETED"}}],
                "nextPageToken":"","pageSize":50,"totalSize":1}"#,
            r#"{"tasks":[{"kind":"task","id":"t1","contextId":"c1","status":{"state":"completed"}}],
                "nextPageToken":"","pageSize":50,"totalSize":1}"#,
        );
        let flat = r#"{"taskId":"t1","id":"t1","url":"https://hook","token":"tok",
                       "authentication":{"scheme":"Bearer","credentials":"secret"}}"#;
        let nested = r#"{"taskId":"t1","pushNotificationConfig":{"id":"t1","url":"https://hook",
                         "token":"tok","authentication":{"schemes":["Bearer"],"credentials":"secret"}}}"#;
        check_result("CreateTaskPushNotificationConfig", flat, nested);
        check_result("GetTaskPushNotificationConfig", flat, nested);
        check_result(
            "ListTaskPushNotificationConfigs",
            &format!(r#"{{"configs":[{flat}],"nextPageToken":""}}"#),
            &format!("[{nested}]"),
        );
        check_result("ListTaskPushNotificationConfigs", "{}", "[]");
        check_result(
            "GetTaskPushNotificationConfig",
            r#"{"taskId":"t1","url":"https://hook","authentication":{"scheme":""}}"#,
            r#"{"taskId":"t1","pushNotificationConfig":{"url":"https://hook","authentication":{"schemes":[]}}}"#,
        );
        check_result("DeleteTaskPushNotificationConfig", "null", "null");
        check_result("GetTask", "null", "null");
        check_result("SendMessage", "null", "null");
        check_result(
            "GetExtendedAgentCard",
            r#"{"name":"n","capabilities":{"extendedAgentCard":true},
                "supportedInterfaces":[{"url":"https://h/a2a","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}"#,
            r#"{"name":"n","capabilities":{"extendedAgentCard":true},
                "supportedInterfaces":[{"url":"https://h/a2a","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],
                "protocolVersion":"0.3.0","url":"https://h/a2a","preferredTransport":"JSONRPC",
                "additionalInterfaces":[{"url":"https://h/a2a","transport":"JSONRPC"}],
                "supportsAuthenticatedExtendedCard":true}"#,
        );
        check_result("SomethingElse", r#"{"task":{}}"#, r#"{"task":{}}"#);
    }

    /// A 1.0 stream as an a2a-sdk 1.3.0 server sends it (ids shortened) becomes the 0.3 stream the
    /// same server sends a header-less client, `final` set on the event before close.
    #[test]
    fn observed_stream_translates_event_by_event() {
        let v1 = [
            r#"{"task":{"id":"e211","contextId":"8c5c","status":{"state":"TASK_STATE_SUBMITTED"},
                "history":[{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"old client"}],"contextId":"8c5c","taskId":"e211"}]}}"#,
            r#"{"statusUpdate":{"taskId":"e211","contextId":"8c5c","status":{"state":"TASK_STATE_WORKING","timestamp":"2026-11-30T09:08:32.712844Z"}}}"#,
            r#"{"artifactUpdate":{"taskId":"e211","contextId":"8c5c","artifact":{"artifactId":"adc0","name":"echo","parts":[{"text":"echo: old client"}]}}}"#,
            r#"{"statusUpdate":{"taskId":"e211","contextId":"8c5c","status":{"state":"TASK_STATE_COMPLETED","timestamp":"2026-11-30T09:08:32.713Z"}}}"#,
        ];
        let v03 = [
            r#"{"contextId":"8c5c","history":[{"contextId":"8c5c","kind":"message","messageId":"m1","parts":[{"kind":"text","text":"old client"}],"role":"user","taskId":"e211"}],"id":"e211","kind":"task","status":{"state":"submitted"}}"#,
            r#"{"contextId":"8c5c","final":false,"kind":"status-update","status":{"state":"working","timestamp":"2026-11-30T09:08:32.712844Z"},"taskId":"e211"}"#,
            r#"{"append":false,"artifact":{"artifactId":"adc0","name":"echo","parts":[{"kind":"text","text":"echo: old client"}]},"contextId":"8c5c","kind":"artifact-update","lastChunk":false,"taskId":"e211"}"#,
            r#"{"contextId":"8c5c","final":true,"kind":"status-update","status":{"state":"completed","timestamp":"2026-11-30T09:08:32.713Z"},"taskId":"e211"}"#,
        ];
        for (index, (event, expected)) in v1.iter().zip(v03).enumerate() {
            let last = index == v1.len() - 1;
            assert_eq!(
                event_to_v03(&parse(event), last),
                parse(expected),
                "{event}"
            );
        }
        // A direct message and a chunked artifact.
        assert_eq!(
            event_to_v03(
                &parse(
                    r#"{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"x"}]}}"#
                ),
                true
            ),
            parse(
                r#"{"kind":"message","messageId":"m","role":"agent","parts":[{"kind":"text","text":"x"}]}"#
            ),
        );
        assert_eq!(
            event_to_v03(
                &parse(
                    r#"{"artifactUpdate":{"taskId":"t","contextId":"c","append":true,"lastChunk":true,
                        "metadata":{"k":1},"artifact":{"artifactId":"a","parts":[{"data":{"n":1}}]}}}"#
                ),
                false
            ),
            parse(
                r#"{"kind":"artifact-update","taskId":"t","contextId":"c","append":true,"lastChunk":true,
                    "metadata":{"k":1},"artifact":{"artifactId":"a","parts":[{"kind":"data","data":{"n":1}}]}}"#
            ),
        );
        // Stream methods answer one event through `result_to_v03` too.
        assert_eq!(
            result_to_v03("SubscribeToTask", parse(v1[0])),
            parse(v03[0])
        );
        assert_eq!(
            event_to_v03(&parse(r#"{"other":1}"#), true),
            parse(r#"{"other":1}"#)
        );
    }

    #[test]
    fn unknown_members_survive_both_ways() {
        check_params(
            "message/send",
            r#"{"x":1,"message":{"kind":"message","messageId":"m","role":"user","y":[2],
                "parts":[{"kind":"text","text":"t","z":3},
                         {"kind":"file","file":{"uri":"u","w":4},"v":5}]},
                "configuration":{"blocking":true,"u":6,
                  "pushNotificationConfig":{"url":"h","q":7,"authentication":{"schemes":["B"],"r":8}}}}"#,
            r#"{"x":1,"message":{"messageId":"m","role":"ROLE_USER","y":[2],
                "parts":[{"text":"t","z":3},{"url":"u","w":4,"v":5}]},
                "configuration":{"returnImmediately":false,"u":6,
                  "taskPushNotificationConfig":{"url":"h","q":7,"authentication":{"scheme":"B","r":8}}}}"#,
        );
        let event = parse(
            r#"{"statusUpdate":{"taskId":"t","contextId":"c","generation":9,
                "status":{"state":"TASK_STATE_AUTH_REQUIRED","s":1,
                  "message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"x","p":2}],"e":3}}}}"#,
        );
        assert_eq!(
            event_to_v03(&event, true),
            parse(
                r#"{"kind":"status-update","taskId":"t","contextId":"c","generation":9,"final":true,
                    "status":{"state":"auth-required","s":1,
                      "message":{"kind":"message","messageId":"m","role":"agent","parts":[{"kind":"text","text":"x","p":2}],"e":3}}}"#
            ),
        );
        check_result(
            "GetTask",
            r#"{"id":"t","contextId":"c","generation":7,"timeline":[{"a":1}],
                "status":{"state":"TASK_STATE_NEW_IN_1_2"}}"#,
            r#"{"kind":"task","id":"t","contextId":"c","generation":7,"timeline":[{"a":1}],
                "status":{"state":"unknown"}}"#,
        );
    }

    /// A 0.3 message goes in through `params_to_v1`, lives in a 1.0 task (history, status
    /// message, artifact parts), and comes back through `result_to_v03` exactly as sent.
    #[test]
    fn round_trip_of_a_task_keeps_every_member() {
        let message_v03 = parse(
            r#"{"kind":"message","messageId":"m1","role":"user","contextId":"c1","taskId":"t1",
                "metadata":{"trace":"x"},"extensions":["urn:e"],"referenceTaskIds":["t0"],"extra":{"a":1},
                "parts":[
                  {"kind":"text","text":"hello","metadata":{"lang":"en"}},
                  {"kind":"file","file":{"bytes":"aGk=","mimeType":"text/plain","name":"a.txt"}},
                  {"kind":"file","file":{"uri":"https://x/y.png","mimeType":"image/png","name":"y.png"},"metadata":{"k":1}},
                  {"kind":"data","data":{"tool":"t","arguments":{"n":1}}},
                  {"kind":"data","data":{"value":[1,"two"]},"metadata":{"data_part_compat":true}},
                  {"kind":"data","data":{"value":7},"metadata":{"data_part_compat":true,"m":2}}]}"#,
        );
        let params = params_to_v1(
            "SendMessage",
            json!({ "message": message_v03.clone(), "configuration": {"blocking": true} }),
        )
        .expect("translates");
        let message_v1 = params["message"].clone();
        assert_eq!(message_v1["role"], "ROLE_USER");
        assert!(message_v1.get("kind").is_none());

        let task_v1 = json!({
            "id": "t1", "contextId": "c1", "generation": 4, "metadata": {"owner": "o"},
            "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2026-12-02T09:00:00.000Z",
                       "message": message_v1.clone()},
            "history": [message_v1.clone()],
            "artifacts": [{"artifactId": "a1", "name": "n", "description": "d",
                           "extensions": ["urn:e"], "metadata": {"z": 0},
                           "parts": message_v1["parts"].clone()}],
        });
        let task_v03 = result_to_v03("GetTask", task_v1.clone());
        assert_eq!(
            task_v03,
            json!({
                "kind": "task", "id": "t1", "contextId": "c1", "generation": 4,
                "metadata": {"owner": "o"},
                "status": {"state": "completed", "timestamp": "2026-12-02T09:00:00.000Z",
                           "message": message_v03.clone()},
                "history": [message_v03.clone()],
                "artifacts": [{"artifactId": "a1", "name": "n", "description": "d",
                               "extensions": ["urn:e"], "metadata": {"z": 0},
                               "parts": message_v03["parts"].clone()}],
            })
        );
        // The same task through `SendMessage`'s wrapper and as a stream event.
        assert_eq!(
            result_to_v03("SendMessage", json!({ "task": task_v1.clone() })),
            task_v03
        );
        assert_eq!(event_to_v03(&json!({ "task": task_v1 }), false), task_v03);

        // A push config set through 0.3 reads back in its 0.3 shape.
        let set_v03 = parse(
            r#"{"taskId":"t1","pushNotificationConfig":{"id":"p1","url":"https://hook","token":"tok",
                "authentication":{"schemes":["Bearer"],"credentials":"secret"}}}"#,
        );
        let flat = params_to_v1("CreateTaskPushNotificationConfig", set_v03.clone()).expect("flat");
        assert_eq!(
            result_to_v03("CreateTaskPushNotificationConfig", flat),
            set_v03
        );
    }

    // --- Agent card ---

    #[test]
    fn card_gets_its_0_3_members_beside_the_1_0_ones() {
        let mut card = parse(
            r#"{"name":"n","description":"d","version":"1",
                "supportedInterfaces":[
                  {"url":"https://h/t/c/a2a","protocolBinding":"JSONRPC","protocolVersion":"1.0"},
                  {"url":"https://h/t/c/a2a-old","protocolBinding":"JSONRPC","protocolVersion":"0.3"}],
                "capabilities":{"streaming":true,"pushNotifications":false,"extendedAgentCard":true},
                "securitySchemes":{
                  "apiKey":{"httpAuthSecurityScheme":{"scheme":"Bearer","bearerFormat":"rtk_ API key"}},
                  "apiKeyHeader":{"apiKeySecurityScheme":{"location":"header","name":"X-API-Key"}},
                  "oauth":{"oauth2SecurityScheme":{"flows":{"authorizationCode":{"authorizationUrl":"https://a/authorize",
                    "tokenUrl":"https://a/token","scopes":{"a2a":"use"},"pkceRequired":true}}}},
                  "oidc":{"openIdConnectSecurityScheme":{"openIdConnectUrl":"https://a/.well-known/openid-configuration"}},
                  "mtls":{"mtlsSecurityScheme":{}}},
                "securityRequirements":[{"schemes":{"apiKey":{"list":["a2a"]}}},{"schemes":{"apiKeyHeader":{"list":[]}}}],
                "defaultInputModes":["application/json"],"defaultOutputModes":["application/json"],
                "skills":[{"id":"s","name":"s","description":"d","tags":["t"],
                           "securityRequirements":[{"schemes":{"oauth":{"list":["a2a"]}}}]},
                          {"id":"u","name":"u","description":"d","tags":["t"]}]}"#,
        );
        card_v03_members(&mut card);
        let expected = parse(
            r#"{"name":"n","description":"d","version":"1",
                "supportedInterfaces":[
                  {"url":"https://h/t/c/a2a","protocolBinding":"JSONRPC","protocolVersion":"1.0"},
                  {"url":"https://h/t/c/a2a-old","protocolBinding":"JSONRPC","protocolVersion":"0.3"}],
                "protocolVersion":"0.3.0","url":"https://h/t/c/a2a-old","preferredTransport":"JSONRPC",
                "additionalInterfaces":[{"url":"https://h/t/c/a2a-old","transport":"JSONRPC"}],
                "supportsAuthenticatedExtendedCard":true,
                "capabilities":{"streaming":true,"pushNotifications":false,"extendedAgentCard":true},
                "securitySchemes":{
                  "apiKey":{"httpAuthSecurityScheme":{"scheme":"Bearer","bearerFormat":"rtk_ API key"},
                            "type":"http","scheme":"Bearer","bearerFormat":"rtk_ API key"},
                  "apiKeyHeader":{"apiKeySecurityScheme":{"location":"header","name":"X-API-Key"},
                                  "type":"apiKey","in":"header","name":"X-API-Key"},
                  "oauth":{"oauth2SecurityScheme":{"flows":{"authorizationCode":{"authorizationUrl":"https://a/authorize",
                             "tokenUrl":"https://a/token","scopes":{"a2a":"use"},"pkceRequired":true}}},
                           "type":"oauth2","flows":{"authorizationCode":{"authorizationUrl":"https://a/authorize",
                             "tokenUrl":"https://a/token","scopes":{"a2a":"use"},"pkceRequired":true}}},
                  "oidc":{"openIdConnectSecurityScheme":{"openIdConnectUrl":"https://a/.well-known/openid-configuration"},
                          "type":"openIdConnect","openIdConnectUrl":"https://a/.well-known/openid-configuration"},
                  "mtls":{"mtlsSecurityScheme":{},"type":"mutualTLS"}},
                "securityRequirements":[{"schemes":{"apiKey":{"list":["a2a"]}}},{"schemes":{"apiKeyHeader":{"list":[]}}}],
                "security":[{"apiKey":["a2a"]},{"apiKeyHeader":[]}],
                "defaultInputModes":["application/json"],"defaultOutputModes":["application/json"],
                "skills":[{"id":"s","name":"s","description":"d","tags":["t"],
                           "securityRequirements":[{"schemes":{"oauth":{"list":["a2a"]}}}],
                           "security":[{"oauth":["a2a"]}]},
                          {"id":"u","name":"u","description":"d","tags":["t"]}]}"#,
        );
        assert_eq!(card, expected);
        // Idempotent: nothing already there is touched.
        card_v03_members(&mut card);
        assert_eq!(card, expected);

        // Without a 0.3 interface the first one is the 0.3 `url`; no extended card → false.
        let mut card = parse(
            r#"{"supportedInterfaces":[{"url":"https://h/a","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],
                "capabilities":{}}"#,
        );
        card_v03_members(&mut card);
        assert_eq!(
            card,
            parse(
                r#"{"supportedInterfaces":[{"url":"https://h/a","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],
                    "capabilities":{},"protocolVersion":"0.3.0","url":"https://h/a","preferredTransport":"JSONRPC",
                    "additionalInterfaces":[{"url":"https://h/a","transport":"JSONRPC"}],
                    "supportsAuthenticatedExtendedCard":false}"#
            )
        );
        let mut not_a_card = json!([1]);
        card_v03_members(&mut not_a_card);
        assert_eq!(not_a_card, json!([1]));
    }
}
