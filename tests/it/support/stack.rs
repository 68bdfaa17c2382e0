//! [`Stack`]: a [`TestServer`] over a fresh [`Downstream`], both built from one [`Fixture`]
//! (the module's catalog text, the fake its tools call and any state the text names), plus
//! the catalog fragments several fixtures share ([`echo_tool`], [`added_tools`]). Owns only
//! starting the pair and reloading its catalog; what the answers must be stays in the tests.

use std::net::SocketAddr;
use std::ops::{Deref, DerefMut};

use sluice::catalog::ReloadOutcome;
use sluice::ServeConfig;

use super::{Downstream, DownstreamBuilder, ServerBuilder, TestServer};

/// Which tools a fixture's catalog text lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tools {
    /// The tools the server starts with.
    Base,
    /// The base tools and [`added_tool`]: what a reload that changes the listing brings.
    WithAdded,
}

/// What one test module runs sluice over.
pub(crate) trait Fixture: Sized + 'static {
    /// The fixture's own state (a directory, keys), made afresh for each stack.
    fn new() -> Self;

    /// The downstream fake the catalog's tools call.
    fn downstream() -> DownstreamBuilder;

    /// The catalog text over the downstream at `downstream`, listing `tools`.
    fn text(&self, downstream: SocketAddr, tools: Tools) -> String;

    /// What every server of this fixture is set to before a test's own changes.
    fn server(builder: ServerBuilder) -> ServerBuilder {
        builder
    }
}

/// sluice on 127.0.0.1:0 over a fresh downstream; shuts down when dropped. Reads as the
/// server it runs (`stack.addr`, `stack.catalog`, `stack.post(..)`).
pub(crate) struct Stack<F: Fixture> {
    pub server: TestServer,
    pub downstream: Downstream,
    pub fixture: F,
}

impl<F: Fixture> Deref for Stack<F> {
    type Target = TestServer;
    fn deref(&self) -> &TestServer {
        &self.server
    }
}

impl<F: Fixture> DerefMut for Stack<F> {
    fn deref_mut(&mut self) -> &mut TestServer {
        &mut self.server
    }
}

impl<F: Fixture> Stack<F> {
    /// The fixture's stack with its base tools and settings.
    pub(crate) async fn start() -> Self {
        Self::with(|_| {}).await
    }

    /// The fixture's stack, with `configure` applied to the settings last.
    pub(crate) async fn with(configure: impl FnOnce(&mut ServeConfig) + 'static) -> Self {
        let fixture = F::new();
        let downstream = F::downstream().start().await;
        let text = fixture.text(downstream.addr, Tools::Base);
        let server = F::server(TestServer::toml(&text))
            .with(configure)
            .start()
            .await;
        Stack {
            server,
            downstream,
            fixture,
        }
    }

    /// Replaces the running catalog with `text` (as a reload does).
    pub(crate) fn reload_text(&self, text: &str) -> ReloadOutcome {
        let config = sluice::config::parse(text, "test").expect("parses");
        self.catalog.replace(&config).expect("reload")
    }

    /// Replaces the running catalog with the fixture's text listing `tools`.
    pub(crate) fn reload(&self, tools: Tools) -> ReloadOutcome {
        self.reload_text(&self.fixture.text(self.downstream.addr, tools))
    }

    /// Reloads the catalog with [`added_tool`]: list_changed goes out.
    pub(crate) fn add_tool(&self) {
        assert!(!self.reload(Tools::WithAdded).changed.is_empty());
    }
}

// === catalog fragments ===

/// Tool `echo`: `GET /echo`, exposing the answer's `message`.
pub(crate) fn echo_tool(downstream: SocketAddr) -> String {
    format!(
        r#"
[[tenant.toolset.tool]]
name = "echo"
description = "Echo a greeting."
downstream = {{ kind = "rest", method = "GET", url = "http://{downstream}/echo" }}

[[tenant.toolset.tool.output]]
source = "message"
exposed = "message"
"#
    )
}

/// Tool `added` (`GET /echo`), the one a reload brings.
fn added_tool(downstream: SocketAddr) -> String {
    format!(
        r#"
[[tenant.toolset.tool]]
name = "added"
description = "Appears on reload."
downstream = {{ kind = "rest", method = "GET", url = "http://{downstream}/echo" }}
"#
    )
}

/// [`added_tool`] when `tools` is [`Tools::WithAdded`], else nothing.
pub(crate) fn added_tools(downstream: SocketAddr, tools: Tools) -> String {
    match tools {
        Tools::Base => String::new(),
        Tools::WithAdded => added_tool(downstream),
    }
}
