//! The A2A 1.0 data model (`lf.a2a.v1` in ProtoJSON: camelCase members, enums as
//! `SCREAMING_SNAKE` strings): tasks, messages, parts, artifacts and the four stream events.
//!
//! Parsing is lenient: every object keeps the members it does not know in `extra` and writes them
//! back unchanged (A2A 1.1 adds `Task.generation` and a history timeline; a task that went
//! through sluice must not lose them). The 0.3 shapes are translated by `v03.rs`, never here.
//! Must not know HTTP, JSON-RPC envelopes or the task store.

use std::borrow::Cow;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// Unknown members of an object, kept verbatim.
pub(crate) type Extra = Map<String, Value>;

/// `TaskState` (A2A 1.0, Task states). `Unspecified` is also what an unknown string reads as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub(crate) enum TaskState {
    #[default]
    Unspecified,
    Submitted,
    Working,
    InputRequired,
    AuthRequired,
    Completed,
    Failed,
    Canceled,
    Rejected,
}

impl TaskState {
    /// Every state, in declaration order.
    pub(crate) const ALL: [TaskState; 9] = [
        TaskState::Unspecified,
        TaskState::Submitted,
        TaskState::Working,
        TaskState::InputRequired,
        TaskState::AuthRequired,
        TaskState::Completed,
        TaskState::Failed,
        TaskState::Canceled,
        TaskState::Rejected,
    ];

    /// The 1.0 wire string (`TASK_STATE_COMPLETED`).
    pub(crate) fn as_v1(self) -> &'static str {
        match self {
            TaskState::Unspecified => "TASK_STATE_UNSPECIFIED",
            TaskState::Submitted => "TASK_STATE_SUBMITTED",
            TaskState::Working => "TASK_STATE_WORKING",
            TaskState::InputRequired => "TASK_STATE_INPUT_REQUIRED",
            TaskState::AuthRequired => "TASK_STATE_AUTH_REQUIRED",
            TaskState::Completed => "TASK_STATE_COMPLETED",
            TaskState::Failed => "TASK_STATE_FAILED",
            TaskState::Canceled => "TASK_STATE_CANCELED",
            TaskState::Rejected => "TASK_STATE_REJECTED",
        }
    }

    /// The 0.3 wire string (`completed`, `input-required`, `unknown`).
    pub(crate) fn as_v03(self) -> &'static str {
        match self {
            TaskState::Unspecified => "unknown",
            TaskState::Submitted => "submitted",
            TaskState::Working => "working",
            TaskState::InputRequired => "input-required",
            TaskState::AuthRequired => "auth-required",
            TaskState::Completed => "completed",
            TaskState::Failed => "failed",
            TaskState::Canceled => "canceled",
            TaskState::Rejected => "rejected",
        }
    }

    /// Reads either version's string; anything else is `Unspecified`. (0.3 also spelled
    /// `cancelled` in places; both spellings read as `Canceled`.)
    pub(crate) fn parse(text: &str) -> TaskState {
        TaskState::ALL
            .into_iter()
            .find(|state| state.as_v1() == text || state.as_v03() == text)
            .unwrap_or(if text == "cancelled" {
                TaskState::Canceled
            } else {
                TaskState::Unspecified
            })
    }

    /// Completed, failed, canceled, rejected: no further message, no cancel, no subscribe.
    pub(crate) fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskState::Completed | TaskState::Failed | TaskState::Canceled | TaskState::Rejected
        )
    }

    /// Input or authorization required: the client answers with another message on the task.
    pub(crate) fn is_interrupted(self) -> bool {
        matches!(self, TaskState::InputRequired | TaskState::AuthRequired)
    }
}

/// `Role`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    Unspecified,
    User,
    Agent,
}

impl Role {
    /// Reads either version's string; anything else is `Unspecified`.
    pub(crate) fn parse(text: &str) -> Role {
        match text {
            "ROLE_USER" | "user" => Role::User,
            "ROLE_AGENT" | "agent" => Role::Agent,
            _ => Role::Unspecified,
        }
    }
}

/// Enums are written as their 1.0 strings and read leniently from either version's.
macro_rules! string_enum_serde {
    ($ty:ty) => {
        impl Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_v1())
            }
        }

        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
                Ok(<$ty>::parse(&text))
            }
        }
    };
}

string_enum_serde!(TaskState);
string_enum_serde!(Role);

impl Role {
    /// The 0.3 string (`user`, `agent`).
    pub(crate) fn as_v03(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Agent | Role::Unspecified => "agent",
        }
    }

    /// The 1.0 string (`ROLE_USER`).
    pub(crate) fn as_v1(self) -> &'static str {
        match self {
            Role::Unspecified => "ROLE_UNSPECIFIED",
            Role::User => "ROLE_USER",
            Role::Agent => "ROLE_AGENT",
        }
    }
}

/// A value a part carries: `Tree` when read from a peer, `Raw` when the runtime wrote it from
/// JSON it already holds as text (a tool's `structuredContent` and its text content, as the
/// `CallToolResult` has them). A raw value is never parsed into a tree: it is cloned as one
/// copy and written into the task's JSON as it is, which is what keeps the A2A envelope of a
/// tool call near the cost of the call (PERFORMANCE.md, issue 16). Reading always gives `Tree`;
/// two values are equal when they read as the same JSON.
#[derive(Debug, Clone)]
pub(crate) enum Json<T> {
    Tree(T),
    /// JSON text of a `T` (for `Json<String>`, a JSON string with its quotes and escapes).
    Raw(Box<RawValue>),
}

impl<T: DeserializeOwned + Clone> Json<T> {
    /// The value as a tree (`None`: raw text that does not read as a `T`, which `Raw`'s writers
    /// never make).
    pub(crate) fn tree(&self) -> Option<Cow<'_, T>> {
        match self {
            Json::Tree(value) => Some(Cow::Borrowed(value)),
            Json::Raw(raw) => serde_json::from_str(raw.get()).ok().map(Cow::Owned),
        }
    }
}

impl<T: Serialize> Serialize for Json<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Json::Tree(value) => value.serialize(serializer),
            Json::Raw(raw) => raw.serialize(serializer),
        }
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Json<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        T::deserialize(deserializer).map(Json::Tree)
    }
}

impl<T: DeserializeOwned + Clone + PartialEq> PartialEq for Json<T> {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Json::Raw(a), Json::Raw(b)) if a.get() == b.get() => true,
            _ => self.tree().is_some() && self.tree() == other.tree(),
        }
    }
}

/// `Part`: exactly one of `text`, `raw` (base64), `url`, `data` (discriminated by presence).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Part {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<Json<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Json<Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
    #[serde(flatten)]
    pub extra: Extra,
}

impl Part {
    /// A text part.
    pub(crate) fn text(text: impl Into<String>) -> Part {
        Part {
            text: Some(Json::Tree(text.into())),
            ..Part::default()
        }
    }

    /// A data part holding `data` (any JSON value).
    pub(crate) fn data(data: Value) -> Part {
        Part {
            data: Some(Json::Tree(data)),
            ..Part::default()
        }
    }

    /// A data part holding the JSON text `raw` as it is.
    pub(crate) fn raw_data(raw: Box<RawValue>) -> Part {
        Part {
            data: Some(Json::Raw(raw)),
            ..Part::default()
        }
    }

    /// A text part holding `raw`, a JSON string (quotes and escapes included), as it is.
    pub(crate) fn raw_text(raw: Box<RawValue>) -> Part {
        Part {
            text: Some(Json::Raw(raw)),
            ..Part::default()
        }
    }
}

/// `Message`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Message {
    pub message_id: String,
    pub role: Role,
    #[serde(default)]
    pub parts: Vec<Part>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reference_task_ids: Vec<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `TaskStatus`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TaskStatus {
    pub state: TaskState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    /// ISO-8601 UTC with milliseconds (`2026-12-02T09:08:32.712Z`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `Artifact`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Artifact {
    pub artifact_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default)]
    pub parts: Vec<Part>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `Task`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Task {
    pub id: String,
    pub context_id: String,
    pub status: TaskStatus,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<Artifact>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<Message>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `TaskStatusUpdateEvent`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TaskStatusUpdateEvent {
    pub task_id: String,
    pub context_id: String,
    pub status: TaskStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `TaskArtifactUpdateEvent`: `append` adds the parts to the artifact of the same id,
/// `lastChunk` says it is complete.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TaskArtifactUpdateEvent {
    pub task_id: String,
    pub context_id: String,
    pub artifact: Artifact,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub append: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub last_chunk: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `StreamResponse`: exactly one member. The body of every SSE event's `result` and of every
/// push notification.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) enum StreamResponse {
    Task(Task),
    Message(Message),
    StatusUpdate(TaskStatusUpdateEvent),
    ArtifactUpdate(TaskArtifactUpdateEvent),
}

impl StreamResponse {
    /// Whether this event ends a task stream: a task or status update in a terminal or
    /// interrupted state, or a direct message.
    pub(crate) fn ends_stream(&self) -> bool {
        match self {
            StreamResponse::Task(task) => {
                task.status.state.is_terminal() || task.status.state.is_interrupted()
            }
            StreamResponse::StatusUpdate(update) => {
                update.status.state.is_terminal() || update.status.state.is_interrupted()
            }
            StreamResponse::Message(_) => true,
            StreamResponse::ArtifactUpdate(_) => false,
        }
    }
}

impl Task {
    /// Applies a stream event to this snapshot: a status update replaces the status (the
    /// previous status message, if any, moves into the history), an artifact update adds the
    /// artifact or, with `append`, extends the parts of the artifact with the same id. A task
    /// event replaces the snapshot; a message is appended to the history.
    pub(crate) fn apply(&mut self, event: &StreamResponse) {
        match event {
            StreamResponse::Task(task) => *self = task.clone(),
            StreamResponse::Message(message) => self.history.push(message.clone()),
            StreamResponse::StatusUpdate(update) => {
                let previous = std::mem::replace(&mut self.status, update.status.clone());
                if let Some(message) = previous.message {
                    self.history.push(message);
                }
            }
            StreamResponse::ArtifactUpdate(update) => {
                let existing = self
                    .artifacts
                    .iter_mut()
                    .find(|a| a.artifact_id == update.artifact.artifact_id);
                match existing {
                    Some(artifact) if update.append => {
                        artifact.parts.extend(update.artifact.parts.iter().cloned());
                        if update.artifact.metadata.is_some() {
                            artifact.metadata = update.artifact.metadata.clone();
                        }
                    }
                    Some(artifact) => *artifact = update.artifact.clone(),
                    None => self.artifacts.push(update.artifact.clone()),
                }
            }
        }
    }

    /// This task with at most the `n` most recent history messages (`historyLength`; `0`
    /// omits the history) and, unless `include_artifacts`, no artifacts.
    pub(crate) fn trimmed(&self, history_length: Option<usize>, include_artifacts: bool) -> Task {
        let mut task = self.clone();
        if let Some(n) = history_length {
            let skip = task.history.len().saturating_sub(n);
            task.history.drain(..skip);
        }
        if !include_artifacts {
            task.artifacts.clear();
        }
        task
    }
}

/// The current time as A2A writes timestamps: ISO-8601 UTC with milliseconds.
pub(crate) fn now_timestamp() -> String {
    let mut out = Vec::with_capacity(24);
    crate::audit::write_rfc3339_millis(std::time::SystemTime::now(), &mut out);
    String::from_utf8(out).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parses `json` as `T`, writes it back, and checks it reads the same as `expected`.
    fn check<T: serde::de::DeserializeOwned + Serialize>(json: &str, expected: &str) {
        let value: T = serde_json::from_str(json).expect("parses");
        let written = serde_json::to_value(&value).expect("writes");
        let expected: Value = serde_json::from_str(expected).expect("expected is JSON");
        assert_eq!(written, expected, "{json}");
    }

    #[test]
    fn unknown_members_survive_a_round_trip() {
        let task = r#"{"id":"t1","contextId":"c1","generation":7,
            "status":{"state":"TASK_STATE_WORKING","timestamp":"2026-12-02T09:00:00.000Z","x":1},
            "history":[{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi","y":[1]}]}]}"#;
        check::<Task>(task, task);
    }

    #[test]
    fn stream_responses_are_one_member_objects() {
        check::<StreamResponse>(
            r#"{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"}}}"#,
            r#"{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"}}}"#,
        );
        check::<StreamResponse>(
            r#"{"artifactUpdate":{"taskId":"t","contextId":"c","append":true,"artifact":{"artifactId":"a","parts":[{"data":{"k":1}}]}}}"#,
            r#"{"artifactUpdate":{"taskId":"t","contextId":"c","append":true,"artifact":{"artifactId":"a","parts":[{"data":{"k":1}}]}}}"#,
        );
        assert!(serde_json::from_str::<StreamResponse>(r#"{"nope":{}}"#).is_err());
    }

    #[test]
    fn states_read_both_versions_and_classify() {
        for state in TaskState::ALL {
            assert_eq!(TaskState::parse(state.as_v1()), state);
            assert_eq!(TaskState::parse(state.as_v03()), state);
        }
        assert_eq!(TaskState::parse("cancelled"), TaskState::Canceled);
        assert_eq!(TaskState::parse("TASK_STATE_NEW"), TaskState::Unspecified);
        let unknown: TaskState = serde_json::from_str(r#""TASK_STATE_NEW""#).expect("lenient");
        assert_eq!(unknown, TaskState::Unspecified);
        let terminal: Vec<_> = TaskState::ALL
            .into_iter()
            .filter(|s| s.is_terminal())
            .collect();
        assert_eq!(
            terminal,
            [
                TaskState::Completed,
                TaskState::Failed,
                TaskState::Canceled,
                TaskState::Rejected
            ]
        );
    }

    #[test]
    fn events_apply_to_a_snapshot() {
        let mut task: Task = serde_json::from_str(
            r#"{"id":"t","contextId":"c","status":{"state":"TASK_STATE_SUBMITTED"}}"#,
        )
        .expect("task");
        let events = [
            r#"{"artifactUpdate":{"taskId":"t","contextId":"c","artifact":{"artifactId":"a","parts":[{"text":"1"}]}}}"#,
            r#"{"artifactUpdate":{"taskId":"t","contextId":"c","append":true,"artifact":{"artifactId":"a","parts":[{"text":"2"}]}}}"#,
            r#"{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_INPUT_REQUIRED","message":{"messageId":"q","role":"ROLE_AGENT","parts":[{"text":"?"}]}}}}"#,
            r#"{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"}}}"#,
        ];
        for event in events {
            let event: StreamResponse = serde_json::from_str(event).expect("event");
            task.apply(&event);
        }
        assert_eq!(task.status.state, TaskState::Completed);
        assert_eq!(task.artifacts.len(), 1);
        assert_eq!(task.artifacts[0].parts.len(), 2);
        assert_eq!(task.history.len(), 1, "the question moved into the history");
        assert_eq!(task.trimmed(Some(0), false).history.len(), 0);
        assert!(task.trimmed(None, false).artifacts.is_empty());
    }

    #[test]
    fn raw_parts_are_written_as_they_are_and_equal_their_trees() {
        let data =
            RawValue::from_string(r#"{"id":1,"name":"Ada \u00e9"}"#.to_owned()).expect("raw");
        let text = RawValue::from_string(r#""{\"id\":1}""#.to_owned()).expect("raw");
        let raw = vec![Part::raw_data(data), Part::raw_text(text)];
        let tree = vec![
            Part::data(serde_json::json!({"id": 1, "name": "Ada é"})),
            Part::text(r#"{"id":1}"#),
        ];
        assert_eq!(raw, tree, "raw and tree parts of the same JSON are equal");
        assert_ne!(raw[1], Part::text("{}"));
        let written = serde_json::to_string(&raw).expect("writes");
        assert_eq!(
            written, r#"[{"data":{"id":1,"name":"Ada \u00e9"}},{"text":"{\"id\":1}"}]"#,
            "copied verbatim, escapes included"
        );
        assert_eq!(
            serde_json::to_value(&raw).expect("to a tree"),
            serde_json::to_value(&tree).expect("to a tree")
        );
        let read: Vec<Part> = serde_json::from_str(&written).expect("reads back");
        assert!(
            matches!(read[0].data, Some(Json::Tree(_))),
            "reading gives trees"
        );
        assert_eq!(read, tree);
    }
}
