//! The concentrator: remote A2A agents an administrator registered for a tenant
//! (`[[tenant.a2a_agent]]`), republished under the runtime's URLs with the runtime's
//! authentication, proxied for the callers the runtime authenticated.
//!
//! Layout:
//! - `ledger.rs` (+ `ledger/`): which caller owns which upstream task and context.

pub(crate) mod ledger;
