//! HTTP plumbing: accept loop, connection limits, graceful drain, routing, media-type
//! negotiation, bounded body collection, response helpers and the error responses (their
//! statuses and codes come from `rescue::classify`).
//!
//! Must not know MCP methods.
//!
//! - [`server`]: the accept loop ([`server::run`]).
//! - [`limits`]: [`Limits`], connection and request limits with their defaults.
//! - [`drain`]: the [`Drain`] signal and the shutdown phases.
//! - `conn`: one connection's life: requests in progress, header read and idle timeouts, the
//!   grace-end 503.
//! - [`tls`]: TLS termination (`[server.tls]`), reloadable certificates, client certificate
//!   identities.
//! - [`router`]: path + method → [`Route`].
//! - [`negotiate`]: `Accept` / `Content-Type`.
//! - [`guard`]: the `Host` allowlist and the `Origin` check (DNS-rebinding protection).
//! - [`body`]: bounded body collection.
//! - [`response`]: the response [`Body`] and helpers.
//! - [`error`]: [`Error`] and its one mapping to a response.

pub(crate) mod body;
mod conn;
pub(crate) mod cors;
pub(crate) mod drain;
pub(crate) mod error;
pub(crate) mod guard;
pub(crate) mod limits;
pub mod negotiate;
pub mod response;
pub(crate) mod router;
pub mod server;
pub mod tls;

pub use drain::Drain;
pub(crate) use error::Error;
pub use limits::Limits;
pub use response::Body;
pub(crate) use router::Target;
