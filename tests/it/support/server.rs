//! [`TestServer`]: `sluice::serve` on 127.0.0.1:0 in this test's runtime, built from a TOML
//! catalog text (or a catalog, or the bundled demo) and shut down when dropped. Owns only
//! starting and stopping the server; requests go through `support::client`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request};
use http_body_util::Full;
use sluice::catalog::Catalog;
use sluice::server::TestHooks;
use sluice::ServeConfig;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::{Reply, GUARD};

/// Tenant `acme` (anonymous) with client `app` and no tools: the MCP endpoint
/// `/runtime/acme/app/mcp` exists, every other tenant and client is 404.
const ACME_APP: &str =
    "[[tenant]]\nid = \"acme\"\nauth = { anonymous = true }\n[[tenant.client]]\nid = \"app\"\n";

/// A running `sluice::serve`; dropping it starts the drain (as SIGTERM would).
pub(crate) struct TestServer {
    pub addr: SocketAddr,
    pub catalog: Arc<Catalog>,
    hooks: Option<Arc<TestHooks>>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<std::io::Result<()>>>,
}

/// One change to the configuration before the start.
type Configure = Box<dyn FnOnce(&mut ServeConfig)>;

/// How a [`TestServer`] is configured before it starts.
pub(crate) struct ServerBuilder {
    catalog: Arc<Catalog>,
    settings_from_catalog: bool,
    hooks: bool,
    configure: Vec<Configure>,
}

/// Parses a catalog text; panics with the problem when it is not valid.
fn catalog(text: &str) -> Arc<Catalog> {
    let config = sluice::config::parse(text, "test").expect("config parses");
    Arc::new(Catalog::from_config(&config).expect("config is valid"))
}

impl TestServer {
    /// Whether `serve` has returned (it failed to start, or it drained).
    pub(crate) fn has_exited(&self) -> bool {
        self.task.as_ref().is_some_and(JoinHandle::is_finished)
    }

    /// A server over this catalog text, with the `[server]` settings it names.
    pub(crate) fn toml(text: &str) -> ServerBuilder {
        Self::catalog(catalog(text))
    }

    /// A server over this catalog, with the `[server]` settings it names.
    pub(crate) fn catalog(catalog: Arc<Catalog>) -> ServerBuilder {
        ServerBuilder {
            catalog,
            settings_from_catalog: true,
            hooks: false,
            configure: Vec::new(),
        }
    }

    /// A server over [`ACME_APP`] with `ServeConfig::default()` and the test hooks: the
    /// HTTP plumbing without any `[server]` file settings.
    pub(crate) fn acme() -> ServerBuilder {
        let mut builder = Self::toml(ACME_APP);
        builder.settings_from_catalog = false;
        builder.hooks = true;
        builder
    }

    /// `http://{addr}{path}`.
    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// A JSON POST of `body` to `path` accepting JSON and SSE, plus `extra` headers (which
    /// replace defaults of the same name), on a fresh connection.
    pub(crate) async fn post(&self, path: &str, extra: &[(&str, &str)], body: &str) -> Reply {
        super::post(self.addr, path, extra, body).await
    }

    /// A request to this server (with its `Host`).
    pub(crate) fn request(
        &self,
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> Request<Full<Bytes>> {
        super::request(self.addr, method, path, headers, body)
    }

    /// The test hooks (`/__test/hold`); panics when the server was started without them.
    pub(crate) fn hooks(&self) -> &TestHooks {
        self.hooks.as_deref().expect("a server started with hooks")
    }

    /// Starts the drain (as SIGTERM would); the server keeps answering until its grace ends.
    pub(crate) fn shutdown(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }

    /// Waits (30 s at most) for `serve` to return after [`TestServer::shutdown`].
    pub(crate) async fn finished(&mut self) -> std::io::Result<()> {
        let task = self.task.take().expect("serve task");
        tokio::time::timeout(Duration::from_secs(30), task)
            .await
            .expect("serve returns after shutdown")
            .expect("serve task did not panic")
    }

    /// Starts the drain and waits ([`GUARD`] at most) for `serve` to return, whatever it
    /// returns.
    pub(crate) async fn stop(&mut self) {
        self.shutdown();
        if let Some(task) = self.task.take() {
            let _ = tokio::time::timeout(GUARD, task).await;
        }
    }

    /// Starts the drain and waits ([`GUARD`] at most) for `serve` to return successfully.
    pub(crate) async fn shut_down(&mut self) {
        self.shutdown();
        let task = self.task.take().expect("serve task");
        tokio::time::timeout(GUARD, task)
            .await
            .expect("serve returns after shutdown")
            .expect("serve task did not panic")
            .expect("serve");
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl ServerBuilder {
    /// Handshake-era POSTs answered as JSON when the client accepts both (`post_framing =
    /// "json"`).
    pub(crate) fn json_posts(self) -> Self {
        self.with(|config| config.post_framing = sluice::transport::PostFraming::Json)
    }

    /// Changes the configuration before the start (after the settings of the file).
    pub(crate) fn with(mut self, configure: impl FnOnce(&mut ServeConfig) + 'static) -> Self {
        self.configure.push(Box::new(configure));
        self
    }

    /// Binds 127.0.0.1:0 and spawns `sluice::serve`.
    pub(crate) async fn start(self) -> TestServer {
        let mut config = if self.settings_from_catalog {
            ServeConfig::from_catalog(Arc::clone(&self.catalog))
        } else {
            ServeConfig {
                catalog: Arc::clone(&self.catalog),
                ..ServeConfig::default()
            }
        };
        let hooks = self.hooks.then(|| Arc::new(TestHooks::default()));
        config.test_hooks = hooks.clone();
        for configure in self.configure {
            configure(&mut config);
        }
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("local addr");
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(sluice::serve(listener, config, async move {
            let _ = stopped.await;
        }));
        TestServer {
            addr,
            catalog: self.catalog,
            hooks,
            stop: Some(stop),
            task: Some(task),
        }
    }
}

/// sluice serving the bundled demo (`sluice demo`: the demo APIs and its configuration).
pub(crate) async fn demo() -> TestServer {
    let api = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let base = format!("http://{}", api.local_addr().expect("addr"));
    tokio::spawn(sluice::demo::serve_api(api, std::future::pending()));
    let config = sluice::config::parse(&sluice::demo::config_text(&base), "demo")
        .expect("the demo configuration parses");
    let catalog = Arc::new(Catalog::from_config(&config).expect("the demo configuration is valid"));
    TestServer::catalog(catalog).start().await
}
