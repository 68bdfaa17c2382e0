//! A2A (Agent2Agent, protocol 1.0 with 0.3 through one translation module): each tenant's
//! client application served as an agent over the same catalog MCP and REST serve.
//!
//! Layout:
//! - `model.rs`: the 1.0 data model (tasks, messages, parts, artifacts, stream events), lenient
//!   and keeping unknown members.
//! - `error.rs`: [`A2aError`], named by meaning; codes from the one table (`rescue.rs`).
//! - `card.rs`: the public and extended agent cards, built from the catalog and `public_url`.
//! - `rpc.rs`: one JSON-RPC request read strictly, responses and SSE events around its id.
//! - `tool.rs`: how a message names a tool, and the call through `mcp::Dispatcher`.
//! - `store.rs` (+ `store/`): the task store (snapshots, versions, cancel signal, live events,
//!   push configurations), owner-scoped.
//! - `push.rs` (+ `push/`): webhook configurations, their validation (https, public addresses
//!   unless allowlisted, no header injection) and the bounded at-least-once delivery.
//! - `v03.rs`: the one translation between A2A 0.3 and 1.0 (methods, params, results, events,
//!   card members).
//! - `agent.rs`: the surface — the card route and the JSON-RPC endpoint after the gate.
//! - `methods.rs`: the 1.0 method table.
//! - `run.rs`: the task runner (a message's tool call → task events).
//! - `stream.rs`: task event streams over SSE.
//!
//! Must not grow a second tool path: a message that names a tool runs it through
//! `mcp::Dispatcher` exactly as MCP `tools/call` does (catalog, validation, translation,
//! invoke, correlation, audit).

pub(crate) mod agent;
pub(crate) mod card;
pub(crate) mod error;
pub(crate) mod methods;
pub(crate) mod model;
pub(crate) mod push;
pub(crate) mod remote;
pub(crate) mod rpc;
pub(crate) mod run;
pub(crate) mod store;
pub(crate) mod stream;
pub(crate) mod tool;
pub(crate) mod v03;

pub(crate) use error::A2aError;
