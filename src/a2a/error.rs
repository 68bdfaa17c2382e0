//! `A2aError`: every way an A2A call fails, named by meaning, and how it is written on each
//! protocol version. The code comes from the one table (`rescue::classify`); this file only
//! names the failure and writes its `data`: A2A 1.0 carries an array holding one
//! `google.rpc.ErrorInfo` (`reason`, `domain`, `metadata`), 0.3 carries none.
//! Must not choose an HTTP status: every A2A JSON-RPC error is answered on 200.

use std::borrow::Cow;

use bytes::{BufMut, BytesMut};

use crate::json_text::put_str;
use crate::jsonrpc::{ErrorCode, IdRef};
use crate::rescue::{self, A2aFailure, Failure};

/// The `ErrorInfo.domain` of the errors the A2A specification defines.
pub(crate) const A2A_DOMAIN: &str = "a2a-protocol.org";

/// The `domain` of the errors only this runtime names (a remote agent out of reach).
pub(crate) const SLUICE_DOMAIN: &str = "sluice.dev";

/// The reasons of [`A2aError::Upstream`].
pub(crate) const UPSTREAM_UNAVAILABLE: &str = "UPSTREAM_UNAVAILABLE";
pub(crate) const UPSTREAM_TIMEOUT: &str = "UPSTREAM_TIMEOUT";
pub(crate) const UPSTREAM_AUTH_FAILED: &str = "UPSTREAM_AUTH_FAILED";

fn upstream_message(reason: &str) -> &'static str {
    match reason {
        UPSTREAM_TIMEOUT => "The remote agent did not answer in time",
        UPSTREAM_AUTH_FAILED => "The remote agent refused the runtime's credential",
        _ => "The remote agent is unavailable",
    }
}

/// One A2A call's failure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum A2aError {
    /// The body is not JSON.
    #[error("Parse error")]
    Parse,
    /// JSON, but not one JSON-RPC request (a batch, a notification, no method).
    #[error("{0}")]
    InvalidRequest(Cow<'static, str>),
    /// No such method on this version.
    #[error("Method not found: {0}")]
    MethodNotFound(String),
    /// Params that do not fit the method.
    #[error("{0}")]
    InvalidParams(Cow<'static, str>),
    /// A bug or an unavailable dependency (the task store).
    #[error("Internal error")]
    Internal,
    /// Unknown task, or another caller's: never distinguished.
    #[error("Task not found")]
    TaskNotFound,
    /// The task is terminal.
    #[error("Task cannot be canceled")]
    TaskNotCancelable,
    /// Push notifications are off for this agent.
    #[error("Push notifications are not supported")]
    PushNotSupported,
    /// An operation the task's state or this agent does not allow.
    #[error("{0}")]
    UnsupportedOperation(Cow<'static, str>),
    /// None of the output media types the client accepts is one the agent produces.
    #[error("Content type not supported")]
    ContentTypeNotSupported,
    /// A remote agent answered with something that is not A2A (the concentrator's relay;
    /// the runtime's own agent never answers it).
    #[error("Invalid agent response")]
    InvalidAgentResponse,
    /// `GetExtendedAgentCard` where none is configured (a relayed remote agent without one;
    /// every client application's own agent has one).
    #[error("Extended agent card not configured")]
    ExtendedCardNotConfigured,
    /// The request needs an extension the client did not declare (a relayed remote agent's;
    /// the runtime's own extension is optional).
    #[allow(dead_code)]
    #[error("Extension support required: {0}")]
    ExtensionSupportRequired(String),
    /// An `A2A-Version` this runtime does not speak.
    /// A registered remote agent could not be reached (-32603 with our own `reason`:
    /// `UPSTREAM_UNAVAILABLE`, `UPSTREAM_TIMEOUT`, `UPSTREAM_AUTH_FAILED`). The upstream's
    /// address, status text and credential never reach the caller.
    #[error("{}", upstream_message(.0))]
    Upstream(&'static str),
    #[error("Protocol version {0} is not supported (supported: 1.0, 0.3)")]
    VersionNotSupported(String),
}

impl A2aError {
    /// The row of the one error table.
    pub(crate) fn failure(&self) -> Failure {
        use A2aError as E;
        match self {
            E::Parse => Failure::ParseError,
            E::InvalidRequest(_) => Failure::InvalidRequest,
            // A2A has one era; its unknown method is answered in-band.
            E::MethodNotFound(_) => Failure::MethodNotFound(crate::protocol::Era::Handshake),
            E::InvalidParams(_) => Failure::InvalidParams,
            E::Internal => Failure::MethodFailed,
            E::TaskNotFound => Failure::A2a(A2aFailure::TaskNotFound),
            E::TaskNotCancelable => Failure::A2a(A2aFailure::TaskNotCancelable),
            E::PushNotSupported => Failure::A2a(A2aFailure::PushNotSupported),
            E::UnsupportedOperation(_) => Failure::A2a(A2aFailure::UnsupportedOperation),
            E::ContentTypeNotSupported => Failure::A2a(A2aFailure::ContentTypeNotSupported),
            E::InvalidAgentResponse => Failure::A2a(A2aFailure::InvalidAgentResponse),
            E::ExtendedCardNotConfigured => Failure::A2a(A2aFailure::ExtendedCardNotConfigured),
            E::ExtensionSupportRequired(_) => Failure::A2a(A2aFailure::ExtensionSupportRequired),
            E::VersionNotSupported(_) => Failure::A2a(A2aFailure::VersionNotSupported),
            E::Upstream(_) => Failure::MethodFailed,
        }
    }

    /// The JSON-RPC code.
    pub(crate) fn code(&self) -> ErrorCode {
        rescue::classify(self.failure()).1
    }

    /// The `ErrorInfo.reason` (A2A 1.0 §5.4), for the errors A2A defines.
    pub(crate) fn reason(&self) -> Option<&'static str> {
        use A2aError as E;
        Some(match self {
            E::TaskNotFound => "TASK_NOT_FOUND",
            E::TaskNotCancelable => "TASK_NOT_CANCELABLE",
            E::PushNotSupported => "PUSH_NOTIFICATION_NOT_SUPPORTED",
            E::UnsupportedOperation(_) => "UNSUPPORTED_OPERATION",
            E::ContentTypeNotSupported => "CONTENT_TYPE_NOT_SUPPORTED",
            E::InvalidAgentResponse => "INVALID_AGENT_RESPONSE",
            E::ExtendedCardNotConfigured => "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
            E::ExtensionSupportRequired(_) => "EXTENSION_SUPPORT_REQUIRED",
            E::VersionNotSupported(_) => "VERSION_NOT_SUPPORTED",
            E::Upstream(reason) => reason,
            E::Parse | E::InvalidRequest(_) | E::MethodNotFound(_) | E::InvalidParams(_) => {
                return None
            }
            E::Internal => return None,
        })
    }

    /// Appends the JSON-RPC error response for `id`: with the 1.0 `ErrorInfo` array when
    /// `v1` and the error has a reason, without `data` otherwise.
    pub(crate) fn write(&self, out: &mut BytesMut, id: IdRef<'_>, v1: bool) {
        use A2aError as E;
        // Peer text inside a message is bounded where the error is made (`jsonrpc::echo`).
        let message = self.to_string();
        if let E::Upstream(reason) = self {
            // Ours, not the protocol's: written on both versions, so a 0.3 caller learns why.
            let mut data = BytesMut::with_capacity(128);
            if v1 {
                data.put_slice(b"[{\"@type\":\"type.googleapis.com/google.rpc.ErrorInfo\",");
            } else {
                data.put_slice(b"{");
            }
            data.put_slice(b"\"reason\":");
            put_str(&mut data, reason);
            data.put_slice(b",\"domain\":");
            put_str(&mut data, SLUICE_DOMAIN);
            data.put_slice(if v1 { b",\"metadata\":{}}]" } else { b"}" });
            rescue::write_error(out, id, self.code(), &message, Some(&data));
            return;
        }
        match self.reason().filter(|_| v1) {
            Some(reason) => {
                let mut data = BytesMut::with_capacity(128);
                data.put_slice(
                    b"[{\"@type\":\"type.googleapis.com/google.rpc.ErrorInfo\",\"reason\":",
                );
                put_str(&mut data, reason);
                data.put_slice(b",\"domain\":");
                put_str(&mut data, A2A_DOMAIN);
                data.put_slice(b",\"metadata\":{}}]");
                rescue::write_error(out, id, self.code(), &message, Some(&data));
            }
            None => rescue::write_error(out, id, self.code(), &message, None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(error: A2aError, v1: bool, expected: &str) {
        let mut out = BytesMut::new();
        error.write(&mut out, IdRef::Null, v1);
        let got: serde_json::Value = serde_json::from_slice(&out).expect("JSON");
        let expected: serde_json::Value = serde_json::from_str(expected).expect("expected");
        assert_eq!(got, expected);
    }

    #[test]
    fn errors_carry_error_info_on_1_0_only() {
        check(
            A2aError::TaskNotFound,
            true,
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Task not found",
               "data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo",
                        "reason":"TASK_NOT_FOUND","domain":"a2a-protocol.org","metadata":{}}]}}"#,
        );
        check(
            A2aError::TaskNotFound,
            false,
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Task not found"}}"#,
        );
        check(
            A2aError::MethodNotFound("x".into()),
            true,
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32601,"message":"Method not found: x"}}"#,
        );
    }

    #[test]
    fn every_a2a_code_is_distinct_and_in_range() {
        let errors = [
            A2aError::TaskNotFound,
            A2aError::TaskNotCancelable,
            A2aError::PushNotSupported,
            A2aError::UnsupportedOperation("x".into()),
            A2aError::ContentTypeNotSupported,
            A2aError::InvalidAgentResponse,
            A2aError::ExtendedCardNotConfigured,
            A2aError::ExtensionSupportRequired("x".into()),
            A2aError::VersionNotSupported("2.0".into()),
        ];
        let codes: Vec<i32> = errors.iter().map(|e| e.code().0).collect();
        assert_eq!(codes, (1..=9).map(|n| -32000 - n).collect::<Vec<_>>());
    }
}
