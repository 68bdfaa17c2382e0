//! BOS platform tools: the pure parts behind `/mcp/apps/bos/platform`.
//!
//! A caller of the platform endpoint does not name a tenant and client in the path; it picks a
//! *context* (an organization, application, installation and role it may act in) and passes the
//! context's opaque handle to every call. The contract is the published `bos/source-results/v1`
//! contract, version 1 (the `bos_execute` envelope in its §2, the final frame in its §5); how it
//! sits beside the MCP specification is `docs/eras.md`.
//!
//! - `context.rs`: the `[[tenant.bos_context]]` configuration ([`BosContextConfig`]), its
//!   validation, and the resolved [`BosContext`] with its public JSON.
//! - `handle.rs`: signed, stateless context handles ([`HandleKey`]): any instance sharing the
//!   secret verifies a handle another issued; a handle only verifies for the caller it was
//!   issued to.
//! - `tools.rs`: the three platform tools' `tools/list` entries, their argument parsing
//!   ([`parse_call`], over a `serde_json` or simd-json tape value) and the results of the two
//!   listing tools.
//! - `envelope.rs`: the `bos_execute` identity envelope around an operation's result.
//!
//! Must not do IO, route requests, authenticate or call tools: the transports and the
//! dispatcher do, and hand this module a verified caller id and the result bytes. Must not
//! reveal whether a context exists for someone else: every refusal of a handle is the same
//! "unknown context".

pub(crate) mod context;
pub(crate) mod envelope;
pub(crate) mod handle;
pub(crate) mod tools;

#[cfg(test)]
mod tests;

pub(crate) use context::{BosContext, BosContextConfig, BosContexts};
pub(crate) use envelope::{execute_result, Extras};
pub(crate) use handle::{HandleError, HandleKey};
pub(crate) use tools::{parse_call, ArgsError, BosCall};
#[cfg(test)]
pub(crate) use {
    context::ContextError,
    envelope::CONTRACT_VERSION,
    tools::{list_contexts_result, list_tools_result, BosTool},
};

/// The path of the platform endpoint (wired to the transports by the server).
pub(crate) const PLATFORM_PATH: &str = "/mcp/apps/bos/platform";

/// Resolves `handle` for `caller` in one step: verifies the signature, checks the handle's
/// tenant is `tenant`, and finds the context, still assigned to `caller`, in `contexts`.
///
/// Every failure, including a context that was removed or reassigned since the handle was
/// issued, is [`HandleError::UnknownContext`]-like (see [`HandleError`]), so the answer never
/// tells a caller that a context exists for someone else.
pub(crate) fn resolve<'c>(
    key: &HandleKey,
    contexts: &'c BosContexts,
    handle: &str,
    caller: &str,
) -> Result<&'c BosContext, HandleError> {
    let (tenant, context_id) = key.verify(handle, caller)?;
    if tenant != contexts.tenant() {
        return Err(HandleError::UnknownContext);
    }
    contexts
        .get(&context_id, caller)
        .ok_or(HandleError::UnknownContext)
}
