//! sluice: a high-throughput MCP runtime.
//!
//! The crate is layered as a pipeline; each module is one stage and lower stages never import
//! higher ones (see `ARCHITECTURE.md` for the map and its invariants):
//!
//! - [`sse`]: the Server-Sent Events codec (encoder on pooled buffers, incremental decoder).
//! - [`jsonrpc`]: JSON-RPC 2.0 messages parsed in place with simd-json, written into pooled buffers.
//! - [`protocol`]: the MCP protocol versions and eras as a type (a leaf: imports nothing).
//! - [`rescue`]: the one table from a failure to its HTTP status and JSON-RPC code, the MCP and
//!   server error codes, the one error writer.
//! - [`http`]: accept loop, routing, media-type negotiation, bounded bodies, error responses.
//! - [`config`]: the configuration file's model, loading with positions, environment overrides,
//!   validation.
//! - [`catalog`]: immutable per-tenant snapshots of a configuration, schema generation, plans.
//! - [`invoke`]: downstream calls with exposed↔source field translation and correlation.
//! - [`mcp`]: the MCP dispatcher and every method, `_meta` rules and era-specific result shapes.
//! - [`session`]: session ids, records, the session store and backplane seams (process-local).
//! - [`transport`]: MCP over HTTP: Streamable HTTP in both eras, legacy HTTP+SSE, live streams.
//! - [`rest`]: the REST surface over the catalog and invoke code.
//! - [`auth`]: credentials (API keys, JWT bearer tokens) → `Caller`; challenges; resource metadata.
//! - [`access`]: the gate every tenant-scoped request passes (Origin, tenant, credential, scopes).
//! - [`audit`]: audit records and their bounded background writer.
//! - [`metrics`]: the Prometheus registry behind `/metrics`.
//! - [`log_limit`]: repeated warnings rate-limited per tenant and kind (bounded, lock-sharded).
//! - [`federation`]: federated reads fanned out over provider sources, their source events and
//!   the identity merge (`bos/source-results/v1`).
//! - [`bos`]: the BOS platform pieces: contexts, signed context handles, platform tools, the
//!   identity envelope.
//! - [`admin`]: `POST /admin/reload`.
//! - [`demo`]: the bundled demo APIs and configuration behind `sluice demo`.
//! - [`bench`]: `sluice bench`, the MCP load generator and idle-session hold (a client only).
//! - [`server`]: the composition root that wires routes to surfaces and runs the listener.
//!
//! `main.rs` only parses flags, builds the configuration, binds a listener and calls [`serve`].

#![forbid(unsafe_code)]

pub(crate) mod access;
pub(crate) mod admin;
pub mod audit;
pub mod auth;
pub mod bench;
pub(crate) mod bos;
pub mod catalog;
pub mod config;
pub mod demo;
pub mod federation;
pub mod http;
pub mod invoke;
pub mod jsonrpc;
pub mod log_limit;
pub mod mcp;
pub mod metrics;
pub mod protocol;
pub(crate) mod rescue;
pub(crate) mod rest;
pub mod server;
pub mod session;
pub mod sse;
pub mod transport;

pub use server::{serve, ServeConfig};
