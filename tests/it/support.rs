//! The one test kit of the integration binary: [`TestServer`] (sluice on 127.0.0.1:0, shut
//! down on drop), [`Downstream`] (a fake business API built route by route), [`Reply`] and
//! [`SseReader`] (answers read whole or event by event), [`Binary`] (the real `sluice serve`
//! with its JSON logs), [`Stack`] (a server over a downstream, from one module's
//! [`Fixture`]), the one-connection clients and raw socket helpers, and the MCP bodies
//! every module sends. Tests read like sentences:
//!
//! ```ignore
//! let api = Downstream::new().route("/echo", Answer::Json(r#"{"message":"hello"}"#)).start().await;
//! let server = TestServer::toml(&config_text(api.addr)).json_posts().start().await;
//! let reply = post(server.addr, MCP, &[], PING).await;
//! ```
//!
//! Owns only client-side and fake-side plumbing: assertions about sluice's answers stay in
//! the modules that test them. Nothing here may change what a test asserts.

mod auth;
mod client;
mod downstream;
mod mcp;
mod process;
mod reply;
mod server;
mod sse;
mod stack;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

pub(crate) use auth::{auth_fixture, rsa1};
pub(crate) use client::{
    open, post, raw, raw_status, read_until_closed, request, request_to_host, send, write_request,
};
pub(crate) use downstream::{
    full, http_server, Answer, Answered, Downstream, DownstreamBuilder, Received,
};
pub(crate) use mcp::{
    call_body, initialize_body, modern_meta, session, stateless_meta, INITIALIZED, MODERN,
};
pub(crate) use process::{signal, Binary};
pub(crate) use reply::Reply;
pub(crate) use server::{demo, ServerBuilder, TestServer};
pub(crate) use sse::SseReader;
pub(crate) use stack::{added_tools, echo_tool, Fixture, Stack, Tools};

/// The hang guard of every exchange: a test that waits longer has found a hang.
pub(crate) const GUARD: Duration = Duration::from_secs(20);

/// The `Accept` of an MCP client that takes either answer.
pub(crate) const BOTH: &str = "application/json, text/event-stream";

/// The MCP endpoint of tenant `acme`, client `app`.
pub(crate) const MCP: &str = "/runtime/acme/app/mcp";

/// A fresh directory under the system temporary directory, removed when dropped.
pub(crate) struct TempDir(PathBuf);

impl TempDir {
    /// `sluice-it-{name}-{pid}-{n}`, created.
    pub(crate) fn new(name: &str) -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "sluice-it-{name}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).expect("temp dir");
        TempDir(dir)
    }

    pub(crate) fn path(&self) -> &Path {
        &self.0
    }

    /// A path inside the directory.
    pub(crate) fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
