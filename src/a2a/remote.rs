//! The concentrator: remote A2A agents an administrator registered for a tenant
//! (`[[tenant.a2a_agent]]`), republished under the runtime's URLs with the runtime's
//! authentication, proxied for the callers the runtime authenticated, with per-caller task
//! isolation, audit, correlation and push relaying. Callers never learn the upstream's address
//! or credential; the upstream sees one client, the runtime.
//!
//! Layout:
//! - `registry.rs`: the agents of the current snapshot, their upstream clients and last good
//!   cards, refreshed in the background.
//! - `upstream.rs` + `auth.rs`: the HTTP client of one agent and its credential (bearer, API
//!   key, OAuth 2.0 client credentials with a cached token).
//! - `card.rs`: an upstream card read (1.0 or 0.3, normalized to 1.0) and the card the runtime
//!   serves instead (its own URL and security schemes, no signatures).
//! - `ledger.rs` (+ `ledger/`): which caller owns which upstream task and context.
//! - `proxy.rs`: the JSON-RPC endpoint, method by method; `wire.rs`: the envelopes and frames
//!   around the upstream's payload; `relay.rs`: the streaming relay.
//! - `forward.rs`: the headers that go upstream besides the body and the credential;
//!   `span.rs`: the call's SERVER span and each upstream request's CLIENT span (its context
//!   sent on); `rescue.rs`: upstream and ledger failures as the caller sees them.
//! - `push.rs`: the push relay.
//! - `ask.rs`: the `ask_{agentId}` MCP tools of agents with `expose_as_tool`.
//! - `surface.rs`: the agents list and the synthesized card routes.
//!
//! Must not grow a second A2A stack: requests are read by `agent.rs`, errors come from
//! `error.rs` and the one table, translation from `v03.rs`, audit and metrics are the crate's.

pub(crate) mod ask;
pub(crate) mod auth;
mod card;
mod forward;
pub(crate) mod ledger;
pub(crate) mod proxy;
pub(crate) mod push;
pub(crate) mod registry;
pub(crate) mod relay;
mod rescue;
mod span;
pub(crate) mod surface;
pub(crate) mod upstream;
pub(crate) mod wire;

use std::sync::Arc;

use ledger::Ledger;
use registry::Remotes;

/// What the concentrator holds: the agents and the ownership ledger.
#[derive(Debug, Clone)]
pub(crate) struct Concentrator {
    pub remotes: Arc<Remotes>,
    pub ledger: Ledger,
}
