//! sluice: a high-throughput MCP runtime.
//!
//! The crate is a set of modules, one concern each; imports between them form no cycle. They
//! are listed leaves first: a module imports only modules listed above it (see
//! `ARCHITECTURE.md` for the map and its invariants):
//!
//! - [`sse`]: the Server-Sent Events codec (encoder on pooled buffers, incremental decoder).
//! - [`jsonrpc`]: JSON-RPC 2.0 messages parsed in place with simd-json, written into pooled buffers.
//! - [`protocol`]: the MCP protocol versions and eras as a type (a leaf: imports nothing).
//! - `shard`: the one lock-sharded hash map (a leaf).
//! - `json_text`: the one JSON string writer (a leaf).
//! - [`rescue`]: the one table from a failure to its HTTP status and JSON-RPC code, the MCP and
//!   server error codes, the one error writer.
//! - [`http`]: accept loop, routing, media-type negotiation, bounded bodies, error responses.
//! - [`bos`]: the BOS platform pieces: contexts, signed context handles, platform tools, the
//!   identity envelope.
//! - [`config`]: the configuration file's model, loading with positions, environment overrides,
//!   validation.
//! - [`audit`]: audit records and their bounded background writer.
//! - [`catalog`]: immutable per-tenant snapshots of a configuration, schema generation, plans.
//! - [`auth`]: credentials (API keys, JWT bearer tokens) → `Caller`; challenges; resource metadata.
//! - [`metrics`]: the Prometheus registry behind `/metrics`.
//! - [`invoke`]: downstream calls with exposed↔source field translation and correlation.
//! - [`federation`]: federated reads fanned out over provider sources, their source events and
//!   the identity merge (`bos/source-results/v1`).
//! - [`log_limit`]: repeated warnings rate-limited per tenant and kind (bounded, lock-sharded).
//! - [`session`]: session ids, records, the session store and backplane seams (process-local
//!   and Redis).
//! - [`access`]: the gate every tenant-scoped request passes (Origin, tenant, credential, scopes).
//! - [`mcp`]: the MCP dispatcher and every method, `_meta` rules and era-specific result shapes.
//! - [`transport`]: MCP over HTTP: Streamable HTTP in both eras, legacy HTTP+SSE, live streams.
//! - [`rest`]: the REST surface over the catalog and invoke code.
//! - [`a2a`]: each client application as an A2A agent (cards, messages, tasks, push) over the
//!   same catalog and tool path as MCP.
//! - [`admin`]: `POST /admin/reload`.
//! - [`demo`]: the bundled demo APIs and configuration behind `sluice demo`.
//! - [`bench`](mod@bench): `sluice bench`, the MCP load generator and idle-session hold (a
//!   client only; the `load-generator` feature, on by default).
//! - [`server`]: the composition root that wires routes to surfaces and runs the listener.
//!
//! `main.rs` only parses flags, builds the configuration, binds a listener and calls [`serve`].

#![forbid(unsafe_code)]

pub(crate) mod a2a;
pub(crate) mod access;
pub(crate) mod admin;
pub mod audit;
pub mod auth;
#[cfg(feature = "load-generator")]
pub mod bench;
pub(crate) mod bos;
pub mod catalog;
pub mod config;
pub mod contract;
pub mod demo;
pub mod federation;
pub mod http;
pub mod invoke;
pub(crate) mod json_text;
pub mod jsonrpc;
pub mod log_limit;
pub mod mcp;
pub mod metrics;
pub mod protocol;
pub(crate) mod ratelimit;
pub(crate) mod rescue;
pub(crate) mod rest;
pub mod server;
pub mod session;
pub(crate) mod shard;
pub(crate) mod simd_scratch;
pub mod sse;
pub mod telemetry;
pub mod transport;

pub use server::{serve, ServeConfig};
