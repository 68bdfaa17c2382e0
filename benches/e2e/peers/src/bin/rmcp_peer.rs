//! `rmcp-peer`: the rmcp crate's Streamable HTTP server (`StreamableHttpService` with its
//! `LocalSessionManager`, stateful as a normal rmcp deployment; `--stateless` turns sessions off)
//! at `/mcp`, with three tools shaped like sluice's demo ones. Each forwards to the same loopback
//! demo API sluice uses (`--api URL`) through a pooled keep-alive hyper client and returns the
//! API's JSON as text content:
//! - `get_customer {id}` → `GET {api}/crm/customers/{id}` (the benchmarked forwarding tool);
//! - `find_customers {city?}` → `GET {api}/crm/customers[?town=city]`;
//! - `place_order {customer_id, items}` → `POST {api}/crm/orders`.
//!
//! Served by hyper-util's auto builder (HTTP/1.1 keep-alive and h2c), one runtime of `--workers`
//! threads, mimalloc: the same shape as sluice, so only the MCP layers differ.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use clap::Parser;
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::TokioExecutor;
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, ServerCapabilities, ServerConfig};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{schemars, tool, tool_handler, tool_router, ErrorData, ServerHandler};
use tower_service::Service;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// What a path segment or query value keeps unescaped: RFC 3986's unreserved characters.
const UNRESERVED: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Most bytes of a downstream answer the tools read.
const MAX_DOWNSTREAM_BYTES: usize = 4 * 1024 * 1024;

/// rmcp's Streamable HTTP server for sluice's e2e benchmark.
#[derive(Debug, Parser)]
#[command(name = "rmcp-peer")]
struct Cli {
    #[command(flatten)]
    common: sluice_e2e_peers::Common,
    /// Base URL of the demo API the tools forward to (e.g. `http://127.0.0.1:9000`).
    #[arg(long)]
    api: String,
    /// Serve without sessions (rmcp's `legacy_session_mode = false`).
    #[arg(long)]
    stateless: bool,
}

/// The pooled client the tools forward with, and where to.
#[derive(Clone)]
struct Api {
    client: Client<HttpConnector, Full<Bytes>>,
    base: Arc<str>,
}

impl Api {
    fn new(base: &str) -> anyhow::Result<Self> {
        let base = base.trim_end_matches('/');
        let uri: http::Uri = base.parse()?;
        anyhow::ensure!(
            uri.scheme_str() == Some("http") && uri.authority().is_some(),
            "--api must be an http:// URL"
        );
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        let client = Client::builder(TokioExecutor::new())
            .pool_max_idle_per_host(64)
            .build(connector);
        Ok(Self {
            client,
            base: base.into(),
        })
    }

    /// Sends one request to `{base}{path}` and returns the answer's body as text.
    async fn call(&self, method: Method, path: &str, body: Bytes) -> Result<String, ErrorData> {
        let failed = |what: &str, err: &dyn std::fmt::Display| {
            ErrorData::internal_error(format!("downstream {what}: {err}"), None)
        };
        let mut builder = Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base));
        if !body.is_empty() {
            builder = builder.header(http::header::CONTENT_TYPE, "application/json");
        }
        let request = builder
            .body(Full::new(body))
            .map_err(|e| failed("request", &e))?;
        let response = self
            .client
            .request(request)
            .await
            .map_err(|e| failed("call", &e))?;
        let status = response.status();
        let body = http_body_util::Limited::new(response.into_body(), MAX_DOWNSTREAM_BYTES)
            .collect()
            .await
            .map_err(|e| failed("body", &e))?
            .to_bytes();
        let text = String::from_utf8(body.to_vec()).map_err(|e| failed("body", &e))?;
        if status.is_success() {
            Ok(text)
        } else {
            Err(failed("status", &format!("{status}: {text}")))
        }
    }
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct GetCustomerArgs {
    /// Customer id, e.g. c-100.
    id: String,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct FindCustomersArgs {
    /// City to filter on.
    city: Option<String>,
}

#[derive(Debug, serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
struct OrderItem {
    /// Product SKU.
    product: String,
    /// How many.
    quantity: u32,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct PlaceOrderArgs {
    /// The ordering customer's id.
    customer_id: String,
    /// Order lines.
    items: Vec<OrderItem>,
}

/// The MCP server: three tools over the demo API.
#[derive(Clone)]
struct Peer {
    api: Api,
    tool_router: ToolRouter<Self>,
}

impl Peer {
    fn new(api: Api) -> Self {
        Self {
            api,
            tool_router: Self::tool_router(),
        }
    }
}

#[tool_router]
impl Peer {
    #[tool(description = "Fetch one customer by id, with contact details and addresses.")]
    async fn get_customer(
        &self,
        Parameters(args): Parameters<GetCustomerArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let path = format!(
            "/crm/customers/{}",
            utf8_percent_encode(&args.id, UNRESERVED)
        );
        let text = self.api.call(Method::GET, &path, Bytes::new()).await?;
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]))
    }

    #[tool(description = "List customers, optionally only those living in a city.")]
    async fn find_customers(
        &self,
        Parameters(args): Parameters<FindCustomersArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let path = match &args.city {
            Some(city) => format!(
                "/crm/customers?town={}",
                utf8_percent_encode(city, UNRESERVED)
            ),
            None => "/crm/customers".to_owned(),
        };
        let text = self.api.call(Method::GET, &path, Bytes::new()).await?;
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]))
    }

    #[tool(description = "Place an order for a customer.")]
    async fn place_order(
        &self,
        Parameters(args): Parameters<PlaceOrderArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let order = serde_json::json!({"customer_ref": args.customer_id, "lines": args.items});
        let body = serde_json::to_vec(&order)
            .map_err(|e| ErrorData::internal_error(format!("order: {e}"), None))?;
        let text = self
            .api
            .call(Method::POST, "/crm/orders", Bytes::from(body))
            .await?;
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]))
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Peer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let runtime = sluice_e2e_peers::runtime(cli.common.workers)?;
    runtime.block_on(async move {
        let api = Api::new(&cli.api)?;
        // rmcp's defaults otherwise (loopback Host check, 15 s SSE keep-alive, priming events).
        let config = StreamableHttpServerConfig::default().with_legacy_session_mode(!cli.stateless);
        let service: StreamableHttpService<Peer, LocalSessionManager> =
            StreamableHttpService::new(move || Ok(Peer::new(api.clone())), Arc::default(), config);
        let listener = sluice_e2e_peers::bind(cli.common.listen).await?;
        let stop = sluice_e2e_peers::shutdown_signal()?;
        sluice_e2e_peers::serve(
            listener,
            move |req: Request<Incoming>| {
                let mut service = service.clone();
                async move {
                    if req.uri().path() != "/mcp" {
                        return Ok(not_found());
                    }
                    service.call(req).await
                }
            },
            stop,
        )
        .await;
        Ok(())
    })
}

/// 404 for any path but `/mcp`, in rmcp's response body type.
fn not_found() -> Response<http_body_util::combinators::BoxBody<Bytes, Infallible>> {
    let mut response = Response::new(Full::new(Bytes::new()).boxed());
    *response.status_mut() = StatusCode::NOT_FOUND;
    response
}
