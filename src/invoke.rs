//! Downstream calls: request building, exposed↔source field translation, correlation, and one
//! shared pooled HTTP client.
//!
//! A call is `Invoker::call(plan, policy, ctx, args)`: validate and translate the arguments in one
//! walk (`translate`), build the request (`request`), send it under the tool's timeout with a
//! bounded body (`client`), translate the response back. Must not know MCP framing: results are
//! JSON bytes plus whether they are an object; errors are `InvokeError` with an `ErrorClass` the
//! surfaces map.

pub mod budget;
pub mod client;
pub mod correlation;
pub mod error;
pub mod request;
pub mod translate;

pub use budget::{AnswerBudget, AnswerReservation, OverBudget, DEFAULT_ANSWER_BUDGET_BYTES};
pub use client::{InvokeOutput, Invoker, InvokerConfig};
pub use correlation::{
    CallContext, CorrelationPolicy, ExecutionId, ExternalCorrelationId, CORRELATION_ID_HEADER,
    EXTERNAL_CORRELATION_ID_HEADER,
};
pub use error::{ArgumentProblem, ErrorClass, InvokeError, ResponseProblem};
pub use translate::{UnknownFields, SCHEMA_DISCOVERY_FIELD};
