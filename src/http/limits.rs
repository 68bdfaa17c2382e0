//! Connection and request limits: [`Limits`] and the defaults of each.
//!
//! Every limit is a named constant whose doc says what happens when it is hit; the body limits
//! are `body.rs`'s, where they are enforced. Plain data: must not do IO or know the accept loop
//! (`server.rs` reads these, and nothing here reads back).

use std::time::Duration;

use super::body::{DEFAULT_BODY_READ_TIMEOUT, DEFAULT_MAX_BODY_BYTES};

/// Default for the most connections served at once. At the limit the server stops accepting;
/// new connections wait in the kernel's backlog until one closes.
pub(crate) const DEFAULT_MAX_CONNECTIONS: usize = 10_000;
/// Default time in-flight requests get to finish after shutdown starts; after it, requests whose
/// response has not started answer 503 and remaining connections are dropped.
pub(crate) const DEFAULT_DRAIN_GRACE: Duration = Duration::from_secs(30);
/// Default time a client has to send a complete request head, counted from accept for the first
/// request (a connection that sends nothing is closed after it) and from the first byte of each
/// later HTTP/1 head; when it runs out, the connection is closed.
pub(crate) const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Default time a connection with no request in progress stays open (HTTP/1 keep-alive, HTTP/2
/// with no open stream, counted from the end of the last request or from accept); then it is
/// closed (HTTP/2 with a GOAWAY). A streaming response, SSE included, is a request in progress.
pub(crate) const DEFAULT_IDLE_CONNECTION_TIMEOUT: Duration = Duration::from_secs(60);
/// Default for concurrent streams per HTTP/2 connection; the client is told the limit in
/// SETTINGS and streams beyond it are refused (`REFUSED_STREAM`).
pub(crate) const DEFAULT_H2_MAX_CONCURRENT_STREAMS: u32 = 256;

/// Connection and request limits.
#[derive(Debug, Clone)]
pub struct Limits {
    /// See [`DEFAULT_MAX_CONNECTIONS`].
    pub max_connections: usize,
    /// See [`DEFAULT_MAX_BODY_BYTES`].
    pub max_body_bytes: usize,
    /// See [`DEFAULT_DRAIN_GRACE`].
    pub drain_grace: Duration,
    /// See [`DEFAULT_HEADER_READ_TIMEOUT`].
    pub header_read_timeout: Duration,
    /// See [`DEFAULT_IDLE_CONNECTION_TIMEOUT`].
    pub idle_timeout: Duration,
    /// See [`DEFAULT_BODY_READ_TIMEOUT`].
    pub body_read_timeout: Duration,
    /// See [`DEFAULT_H2_MAX_CONCURRENT_STREAMS`].
    pub h2_max_concurrent_streams: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            drain_grace: DEFAULT_DRAIN_GRACE,
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_CONNECTION_TIMEOUT,
            body_read_timeout: DEFAULT_BODY_READ_TIMEOUT,
            h2_max_concurrent_streams: DEFAULT_H2_MAX_CONCURRENT_STREAMS,
        }
    }
}
