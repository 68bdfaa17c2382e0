//! Errors of a downstream call, answering questions instead of being downcast.
//!
//! Owns `InvokeError`, its predicates (`is_timeout()`, `is_connect()`, `status()`, …), the
//! three-way `ErrorClass` the REST and MCP surfaces map to a status or result, and the
//! client-safe message. Must not map to HTTP statuses or JSON-RPC codes itself: that happens once,
//! in `http/` (invalid arguments → 400 / -32602, downstream failure → 502 / `isError: true`,
//! timeout → 504 / `isError: true`, answer budget exhausted → 503 / `isError: true`).

use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

use http::StatusCode;

use crate::config::FieldType;
use crate::jsonrpc::echo;

/// A boxed source error from the HTTP stack.
pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// How the surfaces treat a failed call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// The caller's arguments are wrong: 400 on REST; -32602 (or a tool-execution error) in MCP.
    InvalidArguments,
    /// The downstream failed (connect, status, bad or oversized body): 502; `isError: true`.
    Downstream,
    /// The downstream did not answer within the tool's timeout: 504; `isError: true`.
    Timeout,
    /// This server cannot hold the answer now (the process-wide answer budget is exhausted):
    /// 503; `isError: true`. Retrying shortly may succeed.
    Busy,
}

/// What is wrong with one argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgumentProblem {
    /// The arguments are not valid JSON.
    InvalidJson,
    /// The arguments are not a JSON object.
    NotAnObject,
    /// A required field is absent (or `null`).
    Missing,
    /// The value has the wrong JSON type.
    WrongType {
        /// The type the field requires.
        expected: FieldType,
    },
    /// An array element has the wrong JSON type.
    WrongItemType {
        /// The type each element requires.
        expected: FieldType,
        /// The position of the first offending element.
        index: usize,
    },
    /// The field is not part of the tool's input (only when unknown fields are rejected).
    Unknown,
    /// A header-location value cannot be sent as an HTTP header (control characters).
    InvalidHeaderValue,
    /// A path-location value is `.` or `..`: a dot segment would change which downstream path
    /// is called (RFC 3986 §5.2.4).
    DotPathSegment,
    /// A path-location value is empty: it would leave an empty segment (`//`) in the path.
    EmptyPathSegment,
    /// A value cannot be written as XML (a character XML 1.0 cannot carry, or an `object`
    /// member name that is not an XML name).
    NotXml,
}

impl ArgumentProblem {
    /// Whether the value would change which downstream path is called: refused as a protocol
    /// error (-32602), not reported as a tool execution error the model retries with.
    pub(crate) fn is_path_refusal(&self) -> bool {
        matches!(self, Self::DotPathSegment | Self::EmptyPathSegment)
    }
}

impl fmt::Display for ArgumentProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidJson => f.write_str("arguments are not valid JSON"),
            Self::NotAnObject => f.write_str("arguments must be a JSON object"),
            Self::Missing => f.write_str("required field is missing"),
            Self::WrongType { expected } => write!(f, "expected {}", type_name(*expected)),
            Self::WrongItemType { expected, index } => {
                write!(f, "element {index} must be {}", type_name(*expected))
            }
            Self::Unknown => f.write_str("unknown field"),
            Self::InvalidHeaderValue => f.write_str("value cannot be sent as a header"),
            Self::DotPathSegment => f.write_str("a path value cannot be \".\" or \"..\""),
            Self::EmptyPathSegment => f.write_str("a path value cannot be empty"),
            Self::NotXml => f.write_str(
                "a value cannot be written as XML (a control character, or a member name that \
                 is not an XML name)",
            ),
        }
    }
}

fn type_name(ty: FieldType) -> &'static str {
    match ty {
        FieldType::String => "a string",
        FieldType::Integer => "an integer",
        FieldType::Number => "a number",
        FieldType::Boolean => "a boolean",
        FieldType::Object => "an object",
        FieldType::Array => "an array",
    }
}

/// What is wrong with a downstream response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResponseProblem {
    /// The body is not valid JSON.
    NotJson,
    /// The tool has output rules but the body is not a JSON object.
    NotAnObject,
    /// A SOAP downstream's body is not a well-formed SOAP envelope.
    NotXml,
    /// A SOAP downstream's body holds a construct refused for safety (a DTD, an entity
    /// reference, nesting past the limit).
    Refused,
    /// The body is larger than the configured limit.
    TooLarge {
        /// The limit in bytes.
        limit: usize,
    },
}

impl fmt::Display for ResponseProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotJson => f.write_str("body is not valid JSON"),
            Self::NotAnObject => f.write_str("body is not a JSON object"),
            Self::NotXml => f.write_str("body is not a SOAP envelope"),
            Self::Refused => f.write_str("body holds a DTD or entity reference (refused)"),
            Self::TooLarge { limit } => write!(f, "body exceeds {limit} bytes"),
        }
    }
}

/// A failed downstream call.
#[derive(Debug, thiserror::Error)]
pub enum InvokeError {
    /// An argument is missing, mistyped or unknown. `field` is the exposed path pattern
    /// (`customer.addresses[*].city`); empty for the arguments as a whole.
    #[error("invalid argument {field:?}: {problem}")]
    InvalidArgument {
        /// The exposed path of the field.
        field: Box<str>,
        /// What is wrong.
        problem: ArgumentProblem,
    },
    /// `_schema_discovery` was the only argument: the caller must hydrate the schema first.
    #[error("schema discovery required before calling this tool")]
    SchemaDiscoveryRequired,
    /// The whole exchange (connect, request, response body) exceeded the tool's timeout.
    #[error("downstream did not answer within {0:?}")]
    Timeout(Duration),
    /// The connection to the downstream could not be established.
    #[error("downstream connect failed: {0}")]
    Connect(#[source] BoxError),
    /// The exchange failed after connecting (reset, protocol error, body error).
    #[error("downstream exchange failed: {0}")]
    Transport(#[source] BoxError),
    /// The downstream answered with a non-success status.
    #[error("downstream answered {0}")]
    Status(StatusCode),
    /// The downstream body could not be used.
    #[error("downstream response unusable: {0}")]
    InvalidResponse(ResponseProblem),
    /// The request could not be built (an internal inconsistency, not the caller's fault).
    #[error("downstream request could not be built: {0}")]
    Request(Cow<'static, str>),
    /// Holding the answer would take the process past `downstream_answer_budget_bytes`; the
    /// rest of the body is not read.
    #[error("{0}")]
    Busy(super::budget::OverBudget),
}

impl InvokeError {
    /// A short fixed code for metrics: `connect`, `transport`, `status_4xx`, `status_5xx`,
    /// `timeout`, `invalid_response`, `invalid_arguments`.
    pub(crate) fn metric_code(&self) -> &'static str {
        match self {
            Self::Connect(_) => "connect",
            Self::Transport(_) => "transport",
            Self::Status(status) if status.is_client_error() => "status_4xx",
            Self::Status(_) => "status_5xx",
            Self::Timeout(_) => "timeout",
            Self::InvalidResponse(_) => "invalid_response",
            Self::Busy(_) => "answer_budget",
            _ => "invalid_arguments",
        }
    }

    pub(crate) fn argument(field: &str, problem: ArgumentProblem) -> Self {
        Self::InvalidArgument {
            field: field.into(),
            problem,
        }
    }

    /// The classification the surfaces map to a status / result.
    pub fn class(&self) -> ErrorClass {
        match self {
            Self::InvalidArgument { .. } | Self::SchemaDiscoveryRequired => {
                ErrorClass::InvalidArguments
            }
            Self::Timeout(_) => ErrorClass::Timeout,
            Self::Busy(_) => ErrorClass::Busy,
            Self::Connect(_)
            | Self::Transport(_)
            | Self::Status(_)
            | Self::InvalidResponse(_)
            | Self::Request(_) => ErrorClass::Downstream,
        }
    }

    /// Whether the downstream did not answer in time.
    pub fn is_timeout(&self) -> bool {
        matches!(self, Self::Timeout(_))
    }

    /// Whether the connection could not be established.
    pub fn is_connect(&self) -> bool {
        matches!(self, Self::Connect(_))
    }

    /// The downstream's status when it answered with a non-success one.
    pub fn status(&self) -> Option<StatusCode> {
        match self {
            Self::Status(s) => Some(*s),
            _ => None,
        }
    }

    /// Whether the caller's arguments were rejected (including the schema-discovery rule).
    pub fn is_invalid_arguments(&self) -> bool {
        self.class() == ErrorClass::InvalidArguments
    }

    /// Whether the answer was refused for the process-wide answer budget.
    #[cfg(test)]
    pub(crate) fn is_busy(&self) -> bool {
        matches!(self, Self::Busy(_))
    }

    /// Whether an argument was refused because it would change which downstream path is
    /// called (see [`ArgumentProblem::is_path_refusal`]).
    pub(crate) fn is_path_refusal(&self) -> bool {
        matches!(self, Self::InvalidArgument { problem, .. } if problem.is_path_refusal())
    }

    /// Whether the downstream answered with a body that could not be used.
    pub fn is_invalid_response(&self) -> bool {
        matches!(self, Self::InvalidResponse(_))
    }

    /// The exposed field an argument error names.
    pub fn field(&self) -> Option<&str> {
        match self {
            Self::InvalidArgument { field, .. } => Some(field),
            _ => None,
        }
    }

    /// A message safe to show to clients: it never includes downstream bodies, URLs,
    /// headers, host names or transport details. Argument errors name the exposed field (the
    /// caller's own contract) and never echo values.
    pub fn safe_message(&self) -> Cow<'static, str> {
        match self {
            Self::InvalidArgument { field, problem } if field.is_empty() => {
                Cow::Owned(format!("Invalid arguments: {problem}."))
            }
            Self::InvalidArgument { field, problem } => {
                Cow::Owned(format!("Invalid argument '{}': {problem}.", echo(field)))
            }
            Self::SchemaDiscoveryRequired => Cow::Borrowed(
                "This tool's input schema has not been discovered. Call discover_tool_schema \
                 for this tool first, then call it again with real arguments.",
            ),
            Self::Timeout(d) => Cow::Owned(format!(
                "The downstream service did not answer within {} ms.",
                d.as_millis()
            )),
            Self::Connect(_) => Cow::Borrowed("The downstream service could not be reached."),
            Self::Transport(_) => Cow::Borrowed("The connection to the downstream service failed."),
            Self::Status(s) => Cow::Owned(format!(
                "The downstream service answered with status {}.",
                s.as_u16()
            )),
            Self::InvalidResponse(ResponseProblem::TooLarge { .. }) => {
                Cow::Borrowed("The downstream service's response was too large.")
            }
            Self::InvalidResponse(_) => {
                Cow::Borrowed("The downstream service returned an invalid response.")
            }
            Self::Request(_) => Cow::Borrowed("The downstream request could not be built."),
            Self::Busy(_) => Cow::Borrowed(
                "Server busy: too many large downstream answers are being held right now; \
                 try again shortly.",
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(err: InvokeError, class: ErrorClass, message: &str) {
        assert_eq!(err.class(), class, "{err}");
        assert_eq!(err.safe_message(), message);
    }

    #[test]
    fn classes_and_messages() {
        check(
            InvokeError::argument("a.b[*].c", ArgumentProblem::Missing),
            ErrorClass::InvalidArguments,
            "Invalid argument 'a.b[*].c': required field is missing.",
        );
        check(
            InvokeError::argument(
                "n",
                ArgumentProblem::WrongType {
                    expected: FieldType::Integer,
                },
            ),
            ErrorClass::InvalidArguments,
            "Invalid argument 'n': expected an integer.",
        );
        check(
            InvokeError::argument("", ArgumentProblem::NotAnObject),
            ErrorClass::InvalidArguments,
            "Invalid arguments: arguments must be a JSON object.",
        );
        check(
            InvokeError::Timeout(Duration::from_millis(250)),
            ErrorClass::Timeout,
            "The downstream service did not answer within 250 ms.",
        );
        check(
            InvokeError::Status(StatusCode::SERVICE_UNAVAILABLE),
            ErrorClass::Downstream,
            "The downstream service answered with status 503.",
        );
        check(
            InvokeError::InvalidResponse(ResponseProblem::TooLarge { limit: 10 }),
            ErrorClass::Downstream,
            "The downstream service's response was too large.",
        );
        assert!(InvokeError::SchemaDiscoveryRequired.is_invalid_arguments());
        assert!(InvokeError::SchemaDiscoveryRequired
            .safe_message()
            .contains("discover_tool_schema"));
        assert_eq!(
            InvokeError::Status(StatusCode::BAD_GATEWAY).status(),
            Some(StatusCode::BAD_GATEWAY)
        );
        assert!(InvokeError::Timeout(Duration::ZERO).is_timeout());
        let busy = InvokeError::Busy(crate::invoke::budget::OverBudget { budget: 1 });
        assert!(busy.is_busy());
        assert_eq!(busy.metric_code(), "answer_budget");
        check(
            busy,
            ErrorClass::Busy,
            "Server busy: too many large downstream answers are being held right now; try \
             again shortly.",
        );
        assert!(InvokeError::InvalidResponse(ResponseProblem::NotJson).is_invalid_response());
    }
}
