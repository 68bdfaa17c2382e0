//! Downstream calls: request building, exposed↔source field translation, correlation, and one
//! shared pooled HTTP client.
//!
//! A call is `Invoker::call(plan, policy, ctx, args)`: validate and translate the arguments in one
//! walk (`translate`), build the request (`request`), send it under the tool's timeout with a
//! bounded body (`client`), translate the response back. Must not know MCP framing: results are
//! JSON bytes plus whether they are an object; errors are `InvokeError` with an `ErrorClass` the
//! surfaces map.

pub(crate) mod budget;
pub(crate) mod cap;
pub mod client;
pub(crate) mod correlation;
pub(crate) mod error;
pub(crate) mod pool;
pub(crate) mod request;
pub mod soap;
pub(crate) mod translate;

pub(crate) use budget::{AnswerBudget, AnswerReservation, OverBudget};
pub use client::{InvokeOutput, Invoker, InvokerConfig};
pub(crate) use correlation::EXTERNAL_CORRELATION_ID_HEADER;
pub use correlation::{
    CallContext, CorrelationPolicy, ExecutionId, ExternalCorrelationId, CORRELATION_ID_HEADER,
};
pub use error::{ArgumentProblem, ErrorClass, InvokeError, ResponseProblem};
