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
//! The same mapping runs the other way for the concentrator (`remote/`), which calls a remote
//! agent whose card offers only 0.3: `v03/upstream.rs` turns 1.0 requests into 0.3 ones and
//! 0.3 answers back into 1.0.
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

    /// The `A2A-Version` value a request in this version carries.
    pub(crate) fn header(self) -> HeaderValue {
        HeaderValue::from_static(match self {
            Version::V03 => "0.3",
            Version::V1 => "1.0",
        })
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

mod upstream;
pub(crate) use upstream::{
    error_data_to_v1, event_to_v1, method_to_v03, params_to_v03, result_to_v1,
};

#[cfg(test)]
mod tests;
