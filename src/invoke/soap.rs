//! SOAP downstreams: the envelope written from the translated arguments, the answer read back
//! into the source JSON the output rules translate, and faults.
//!
//! `write.rs` writes the request envelope (`request.rs` calls it where a REST tool writes its
//! JSON body), `read.rs` stream-parses the answer, `fault.rs` turns a `Fault` into a tool
//! failure; [`answer`] is what `client.rs` calls with a body read on any status. Everything a
//! call needs was compiled into the plan's [`SoapPlan`](crate::catalog::plan::SoapPlan). Must
//! not know MCP or send anything itself.

mod fault;
#[cfg(any(test, feature = "test-util"))]
pub mod props;
pub(crate) mod read;
pub(crate) mod write;

use http::StatusCode;

pub(crate) use read::{read_answer, Answer, ReadError};
pub(crate) use write::write_envelope;

use super::error::{InvokeError, ResponseProblem};
use crate::catalog::plan::ToolPlan;

/// What a SOAP answer (read on any status) means: a fault wherever it came with, the source
/// JSON of a 2xx result, or the same errors a REST downstream gives (a non-2xx status without
/// an envelope is that status; a 2xx body that is not a SOAP envelope is an invalid response).
pub(crate) fn answer(
    plan: &ToolPlan,
    status: StatusCode,
    body: &[u8],
    max_depth: usize,
) -> Result<Answer, InvokeError> {
    let Some(soap) = &plan.soap else {
        return Err(InvokeError::Request("not a SOAP tool".into()));
    };
    match read_answer(body, soap, plan.output.as_ref(), max_depth) {
        Ok(Answer::Fault(fault)) => Ok(Answer::Fault(fault)),
        Ok(_) | Err(_) if !status.is_success() => Err(InvokeError::Status(status)),
        Ok(result) => Ok(result),
        Err(ReadError::Refused(_) | ReadError::TooDeep(_)) => {
            Err(InvokeError::InvalidResponse(ResponseProblem::Refused))
        }
        Err(_) => Err(InvokeError::InvalidResponse(ResponseProblem::NotXml)),
    }
}

#[cfg(test)]
mod tests;
