//! The mapping of `v03.rs` run backwards, for the concentrator calling a remote agent whose
//! card offers only A2A 0.3: a 1.0 request (method and params) becomes the 0.3 one, and the
//! upstream's 0.3 result, stream event or error `data` becomes 1.0 again, so everything past
//! `remote/proxy.rs` and `remote/relay.rs` sees 1.0 only.
//!
//! Requests are built by sluice and trusted to be 1.0 shapes, so their translation cannot
//! fail. Answers come from another server: a shape with no 1.0 form (a message with an unknown
//! role, a part that is none of text, file and data, an event of unknown kind) is
//! `InvalidAgentResponse`, never passed on half translated. Unknown members pass through.
//! Must not know HTTP, the ledger or the relay.

use serde_json::{json, Map, Value};

use super::{
    message_to_v03, message_to_v1, part_to_v1, push_config_to_v03, push_config_to_v1, rename,
    TaskState, CANCEL_TASK, CREATE_PUSH_CONFIG, DELETE_PUSH_CONFIG, GET_PUSH_CONFIG, GET_TASK,
    LIST_PUSH_CONFIGS, LIST_TASKS, METHODS, SEND_MESSAGE, SEND_STREAMING_MESSAGE,
};
use crate::a2a::A2aError;

/// The 0.3 name of a 1.0 method; `None` for a method 0.3 servers do not serve over JSON-RPC
/// (`ListTasks`: 0.3 had it on REST only, and the concentrator answers it from its ledger).
pub(crate) fn method_to_v03(method_v1: &str) -> Option<&'static str> {
    if method_v1 == LIST_TASKS {
        return None;
    }
    METHODS
        .iter()
        .find(|(_, v1)| *v1 == method_v1)
        .map(|(v03, _)| *v03)
}

/// 1.0 params of `method_v1` → the 0.3 params: the message with its `kind`s and 0.3 enum
/// strings, `returnImmediately` → `blocking`, push configurations nested, `{taskId, id}` →
/// `{id, pushNotificationConfigId}`. Members with no 0.3 counterpart are left as they are.
pub(crate) fn params_to_v03(method_v1: &str, params: Value) -> Value {
    let Value::Object(mut params) = params else {
        return params;
    };
    match method_v1 {
        SEND_MESSAGE | SEND_STREAMING_MESSAGE => {
            if let Some(message) = params.get_mut("message") {
                message_to_v03(message);
            }
            if let Some(Value::Object(configuration)) = params.get_mut("configuration") {
                configuration_to_v03(configuration);
            }
        }
        CREATE_PUSH_CONFIG => return push_config_to_v03(Value::Object(params)),
        GET_PUSH_CONFIG | DELETE_PUSH_CONFIG => {
            // The config id first: its 0.3 name frees `id` for the task id.
            rename(&mut params, "id", "pushNotificationConfigId");
            rename(&mut params, "taskId", "id");
        }
        LIST_PUSH_CONFIGS => rename(&mut params, "taskId", "id"),
        // GetTask {id, historyLength}, CancelTask {id}, SubscribeToTask {id}: the same.
        _ => {}
    }
    Value::Object(params)
}

/// 1.0 `SendMessageConfiguration` → 0.3 `MessageSendConfiguration`, in place.
fn configuration_to_v03(configuration: &mut Map<String, Value>) {
    if let Some(Value::Bool(immediately)) = configuration.remove("returnImmediately") {
        configuration.insert("blocking".to_owned(), Value::Bool(!immediately));
    }
    if let Some(config) = configuration.remove("taskPushNotificationConfig") {
        // 0.3 nests the bare `PushNotificationConfig` here, without the task id.
        if let Value::Object(mut task_config) = push_config_to_v03(config) {
            if let Some(nested) = task_config.remove("pushNotificationConfig") {
                configuration.insert("pushNotificationConfig".to_owned(), nested);
            }
        }
    }
}

/// A 0.3 result of `method_v1` → the 1.0 result: `SendMessage`'s task or message wrapped as
/// `{"task"}`/`{"message"}`, tasks with 1.0 states, roles and parts, push configurations flat,
/// the 0.3 bare config list as `{"configs"}`.
pub(crate) fn result_to_v1(method_v1: &str, result: Value) -> Result<Value, A2aError> {
    match method_v1 {
        SEND_MESSAGE => event_to_v1(result),
        GET_TASK | CANCEL_TASK => {
            let mut task = result;
            task_to_v1(&mut task)?;
            Ok(task)
        }
        CREATE_PUSH_CONFIG | GET_PUSH_CONFIG => task_push_config_to_v1(result),
        LIST_PUSH_CONFIGS => match result {
            Value::Array(configs) => {
                let configs = configs
                    .into_iter()
                    .map(task_push_config_to_v1)
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(json!({ "configs": configs }))
            }
            Value::Null => Ok(json!({ "configs": [] })),
            _ => Err(A2aError::InvalidAgentResponse),
        },
        _ => Ok(result),
    }
}

/// One 0.3 stream event (or `message/send` result) → the 1.0 `StreamResponse`: a task or
/// message wrapped, `status-update` → `statusUpdate` (without `final`: 1.0 ends a stream by
/// closing it), `artifact-update` → `artifactUpdate`. The kind is read from `kind`, or from the
/// members when a server leaves it out.
pub(crate) fn event_to_v1(event: Value) -> Result<Value, A2aError> {
    let Value::Object(mut object) = event else {
        return Err(A2aError::InvalidAgentResponse);
    };
    let kind = match object.remove("kind") {
        Some(Value::String(kind)) => kind,
        Some(_) => return Err(A2aError::InvalidAgentResponse),
        None if object.contains_key("artifact") => "artifact-update".to_owned(),
        None if object.contains_key("taskId") && object.contains_key("status") => {
            "status-update".to_owned()
        }
        None if object.contains_key("status") => "task".to_owned(),
        None if object.contains_key("messageId") => "message".to_owned(),
        None => return Err(A2aError::InvalidAgentResponse),
    };
    match kind.as_str() {
        "task" => {
            let mut task = Value::Object(object);
            task_to_v1(&mut task)?;
            Ok(json!({ "task": task }))
        }
        "message" => {
            let mut message = Value::Object(object);
            response_message_to_v1(&mut message)?;
            Ok(json!({ "message": message }))
        }
        "status-update" => {
            object.remove("final");
            if let Some(status) = object.get_mut("status") {
                status_to_v1(status)?;
            }
            Ok(json!({ "statusUpdate": object }))
        }
        "artifact-update" => {
            if let Some(artifact) = object.get_mut("artifact") {
                artifact_to_v1(artifact)?;
            }
            Ok(json!({ "artifactUpdate": object }))
        }
        _ => Err(A2aError::InvalidAgentResponse),
    }
}

/// 0.3 error `data` (any JSON value, or an array already) → 1.0's array of `Any` details: an
/// array passes; anything else travels as one `google.protobuf.Value` detail, so a 1.0 client
/// still reads the upstream's data.
pub(crate) fn error_data_to_v1(data: Value) -> Value {
    match data {
        Value::Array(_) | Value::Null => data,
        other => json!([{ "@type": "type.googleapis.com/google.protobuf.Value", "value": other }]),
    }
}

/// 0.3 `Task` → 1.0 `Task`, in place.
fn task_to_v1(value: &mut Value) -> Result<(), A2aError> {
    let Some(task) = value.as_object_mut() else {
        return Err(A2aError::InvalidAgentResponse);
    };
    task.remove("kind");
    if let Some(status) = task.get_mut("status") {
        status_to_v1(status)?;
    }
    if let Some(Value::Array(history)) = task.get_mut("history") {
        history.iter_mut().try_for_each(response_message_to_v1)?;
    }
    if let Some(Value::Array(artifacts)) = task.get_mut("artifacts") {
        artifacts.iter_mut().try_for_each(artifact_to_v1)?;
    }
    Ok(())
}

/// 0.3 `TaskStatus` → 1.0: the `TASK_STATE_*` string, the message.
fn status_to_v1(value: &mut Value) -> Result<(), A2aError> {
    let Some(status) = value.as_object_mut() else {
        return Err(A2aError::InvalidAgentResponse);
    };
    if let Some(Value::String(state)) = status.get_mut("state") {
        *state = TaskState::parse(state).as_v1().to_owned();
    }
    if let Some(message) = status.get_mut("message") {
        if !message.is_null() {
            response_message_to_v1(message)?;
        }
    }
    Ok(())
}

/// 0.3 `Artifact` → 1.0: its parts.
fn artifact_to_v1(value: &mut Value) -> Result<(), A2aError> {
    let Some(artifact) = value.as_object_mut() else {
        return Err(A2aError::InvalidAgentResponse);
    };
    if let Some(Value::Array(parts)) = artifact.get_mut("parts") {
        parts
            .iter_mut()
            .try_for_each(part_to_v1)
            .map_err(|_| A2aError::InvalidAgentResponse)?;
    }
    Ok(())
}

/// A message in an answer: the request-side translation, its refusals the upstream's fault.
fn response_message_to_v1(value: &mut Value) -> Result<(), A2aError> {
    message_to_v1(value).map_err(|_| A2aError::InvalidAgentResponse)
}

/// 0.3 `TaskPushNotificationConfig{taskId, pushNotificationConfig{…}}` → 1.0's flat config.
fn task_push_config_to_v1(value: Value) -> Result<Value, A2aError> {
    let Value::Object(mut config) = value else {
        return Err(A2aError::InvalidAgentResponse);
    };
    if let Some(nested) = config.remove("pushNotificationConfig") {
        let flat = push_config_to_v1(nested).map_err(|_| A2aError::InvalidAgentResponse)?;
        config.extend(flat);
    }
    Ok(Value::Object(config))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::a2a::v03::{params_to_v1, result_to_v03};

    /// What sluice sends a 0.3 upstream reads back, through the server-side translation, as
    /// the 1.0 request it started as.
    #[test]
    fn requests_survive_the_round_trip() {
        let cases = [
            (
                SEND_MESSAGE,
                json!({"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [
                    {"text": "hi"},
                    {"url": "https://x/y.pdf", "mediaType": "application/pdf", "filename": "y.pdf"},
                    {"data": [1, 2]}
                ]}, "configuration": {"returnImmediately": true, "historyLength": 3,
                    "taskPushNotificationConfig": {"id": "c1", "url": "https://hook/",
                        "token": "t", "authentication": {"scheme": "Bearer", "credentials": "k"}}}}),
            ),
            (GET_TASK, json!({"id": "t1", "historyLength": 2})),
            (CANCEL_TASK, json!({"id": "t1"})),
            (
                CREATE_PUSH_CONFIG,
                json!({"taskId": "t1", "id": "c1", "url": "https://hook/",
                       "authentication": {"scheme": "Bearer"}}),
            ),
            (GET_PUSH_CONFIG, json!({"taskId": "t1", "id": "c1"})),
            (DELETE_PUSH_CONFIG, json!({"taskId": "t1", "id": "c1"})),
            (LIST_PUSH_CONFIGS, json!({"taskId": "t1"})),
        ];
        for (method, v1) in cases {
            let v03 = params_to_v03(method, v1.clone());
            assert_ne!(method_to_v03(method), None, "{method}");
            let back = params_to_v1(method, v03.clone()).expect("0.3 params read");
            assert_eq!(back, v1, "{method} via {v03}");
        }
        let sent = params_to_v03(
            SEND_MESSAGE,
            json!({"message": {"role": "ROLE_AGENT", "parts": [{"text": "x"}]},
                   "configuration": {"returnImmediately": false}}),
        );
        assert_eq!(sent["message"]["kind"], "message");
        assert_eq!(sent["message"]["role"], "agent");
        assert_eq!(sent["message"]["parts"][0]["kind"], "text");
        assert_eq!(sent["configuration"]["blocking"], true);
        assert_eq!(method_to_v03(LIST_TASKS), None);
        assert_eq!(method_to_v03("SubscribeToTask"), Some("tasks/resubscribe"));
    }

    /// A 0.3 answer reads as the 1.0 answer the server-side translation would have made it
    /// from.
    #[test]
    fn answers_survive_the_round_trip() {
        let task = json!({"id": "t1", "contextId": "c1",
            "status": {"state": "TASK_STATE_WORKING",
                       "message": {"messageId": "m2", "role": "ROLE_AGENT",
                                   "parts": [{"text": "working"}]}},
            "history": [{"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}],
            "artifacts": [{"artifactId": "a1", "parts": [{"raw": "AAE=", "mediaType": "x/y"}]}]});
        let cases = [
            (SEND_MESSAGE, json!({"task": task})),
            (
                SEND_MESSAGE,
                json!({"message": {"messageId": "m3", "role": "ROLE_AGENT", "parts": [{"text": "done"}]}}),
            ),
            (GET_TASK, task.clone()),
            (CANCEL_TASK, task.clone()),
            (
                GET_PUSH_CONFIG,
                json!({"taskId": "t1", "id": "c1", "url": "https://h/",
                       "authentication": {"scheme": "Bearer"}}),
            ),
            (
                LIST_PUSH_CONFIGS,
                json!({"configs": [{"taskId": "t1", "id": "c1", "url": "https://h/"}]}),
            ),
        ];
        for (method, v1) in cases {
            let v03 = result_to_v03(method, v1.clone());
            let back = result_to_v1(method, v03.clone()).expect("0.3 answer reads");
            assert_eq!(back, v1, "{method} via {v03}");
        }
        assert_eq!(
            result_to_v1(LIST_PUSH_CONFIGS, json!([])).unwrap(),
            json!({"configs": []})
        );
    }

    #[test]
    fn stream_events_lose_final_and_gain_their_wrapper() {
        let status = json!({"statusUpdate": {"taskId": "t1", "contextId": "c1",
            "status": {"state": "TASK_STATE_COMPLETED"}}});
        let artifact = json!({"artifactUpdate": {"taskId": "t1", "contextId": "c1",
            "artifact": {"artifactId": "a", "parts": [{"data": {"k": 1}}]},
            "append": false, "lastChunk": true}});
        for event in [status, artifact] {
            let v03 = crate::a2a::v03::event_to_v03(&event, true);
            assert_eq!(event_to_v1(v03).unwrap(), event);
        }
        // Without `kind`, by members.
        let bare =
            json!({"taskId": "t", "contextId": "c", "status": {"state": "failed"}, "final": true});
        assert_eq!(
            event_to_v1(bare).unwrap(),
            json!({"statusUpdate": {"taskId": "t", "contextId": "c",
                   "status": {"state": "TASK_STATE_FAILED"}}})
        );
    }

    #[test]
    fn non_conforming_answers_are_refused() {
        for bad in [
            json!("text"),
            json!({"kind": "unheard-of"}),
            json!({"kind": 7}),
            json!({"kind": "message", "role": "robot", "parts": []}),
            json!({"kind": "task", "id": "t", "status": {"state": "working"},
                   "artifacts": [{"parts": [{"kind": "video"}]}]}),
            json!({}),
        ] {
            assert!(
                matches!(
                    event_to_v1(bad.clone()),
                    Err(A2aError::InvalidAgentResponse)
                ),
                "{bad}"
            );
        }
        assert!(result_to_v1(LIST_PUSH_CONFIGS, json!("x")).is_err());
    }

    #[test]
    fn error_data_becomes_a_detail_array() {
        assert_eq!(error_data_to_v1(json!([{"a": 1}])), json!([{"a": 1}]));
        assert_eq!(
            error_data_to_v1(json!({"why": "x"})),
            json!([{"@type": "type.googleapis.com/google.protobuf.Value", "value": {"why": "x"}}])
        );
    }
}
