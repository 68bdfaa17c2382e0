//! The `sluice` binary: parses flags, builds the configuration, binds, and calls `sluice::serve`.
//!
//! Nothing else lives here: no request handling, no configuration semantics beyond flags.
//! Subcommands: `serve --config FILE` (production), `check --config FILE` (validation, exit 0/1),
//! `demo` (the bundled demo configuration over demo APIs on loopback), `import wsdl|openapi FILE`
//! (`sluice::contract`: tool mappings on stdout, problems with file:line:col on stderr), `bench` (the MCP load
//! generator, `sluice::bench`) and `bench idle` (its hold mode).

#![forbid(unsafe_code)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use sluice::catalog::{self, Catalog};
use sluice::config::{self, LogFormat, LogSettings, Overrides};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// File descriptors wanted beyond one per client connection: the listener, logs, the audit file,
/// Redis and downstream connections. A lower open-file limit is warned about at start.
const FD_HEADROOM: u64 = 256;

/// sluice: a high-throughput MCP runtime.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Cli {
    /// Runtime worker threads for `serve` and `demo` (default: one per core). `1` pins the
    /// whole server to one scheduler thread, as the benchmarks run it.
    #[arg(long, global = true, value_parser = clap::value_parser!(u16).range(1..))]
    workers: Option<u16>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the configured tenants until SIGINT or SIGTERM, then drain. SIGHUP reloads the file.
    Serve {
        /// The configuration file (`sluice.toml`).
        #[arg(long)]
        config: PathBuf,
        /// Address to listen on (default: `[server] listen` from the file).
        #[arg(long)]
        listen: Option<SocketAddr>,
    },
    /// Validate a configuration file and print every problem with its location.
    Check {
        /// The configuration file.
        #[arg(long)]
        config: PathBuf,
    },
    /// Serve the bundled demo: demo APIs on loopback exposed as tools of tenant `demo`.
    Demo {
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1:8080")]
        listen: SocketAddr,
    },
    /// Load-test an MCP server over Streamable HTTP (any server: sluice, rmcp, the SDKs).
    #[cfg(feature = "load-generator")]
    Bench(Box<BenchArgs>),
    /// API keys.
    Key {
        #[command(subcommand)]
        command: KeyCommand,
    },
    /// Turn a contract into tool mappings: prints a configuration `sluice check` accepts.
    Import {
        #[command(subcommand)]
        command: ImportCommand,
    },
}

#[derive(Debug, Subcommand)]
enum ImportCommand {
    /// A WSDL 1.1 contract (with its local XSD imports): one SOAP tool per operation.
    Wsdl {
        /// The WSDL file.
        file: PathBuf,
        /// The tenant id of the output.
        #[arg(long, default_value = "imported")]
        tenant: String,
        /// The toolset id (default: the service name).
        #[arg(long)]
        toolset: Option<String>,
        /// The binding used when an operation has both.
        #[arg(long, value_enum, default_value = "soap11")]
        binding: BindingArg,
        /// Only these operations (comma-separated WSDL or tool names).
        #[arg(long, value_delimiter = ',')]
        operations: Option<Vec<String>>,
        /// Publish write-like operations (create…, update…, delete…, set…) too.
        #[arg(long)]
        include_writes: bool,
    },
    /// An OpenAPI 3.0 or 3.1 document (JSON or YAML): one REST tool per operation.
    Openapi {
        /// The OpenAPI file.
        file: PathBuf,
        /// The tenant id of the output.
        #[arg(long, default_value = "imported")]
        tenant: String,
        /// The toolset id (default: the API's title).
        #[arg(long)]
        toolset: Option<String>,
        /// Only these operations (comma-separated operationIds or tool names).
        #[arg(long, value_delimiter = ',')]
        operations: Option<Vec<String>>,
    },
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum BindingArg {
    Soap11,
    Soap12,
}

#[derive(Debug, Subcommand)]
enum KeyCommand {
    /// Mint a new API key: prints the key (give it to the client application, it is shown once)
    /// and the `[[tenant.client.api_key]]` entry to add to the configuration (its hash only).
    /// The pepper comes from `SLUICE_API_KEY_PEPPER`, else from `--config`'s
    /// `[server] api_key_pepper`.
    New {
        /// A configuration whose `[server] api_key_pepper` to use.
        #[arg(long)]
        config: Option<PathBuf>,
    },
}

/// `sluice bench` flags (see `sluice::bench::settings` for their meaning and defaults).
#[cfg(feature = "load-generator")]
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
struct BenchArgs {
    #[command(subcommand)]
    command: Option<BenchCommand>,
    /// The MCP endpoint, e.g. http://127.0.0.1:8080/runtime/demo/agent/mcp.
    #[arg(long, required = true)]
    url: Option<String>,
    /// `handshake` (2025-11-25 sessions) or `stateless` (2026-07-28 envelope). Default handshake.
    #[arg(long)]
    era: Option<String>,
    /// `ping`, `tools/list` or `tools/call`. Default ping.
    #[arg(long)]
    method: Option<String>,
    /// The tool of `tools/call`.
    #[arg(long)]
    tool: Option<String>,
    /// The arguments of `tools/call`, a JSON object (default `{}`).
    #[arg(long)]
    args: Option<String>,
    /// Members added to every request's `params._meta`, a JSON object (e.g. client capabilities
    /// opting into `bos/source-results/v1`).
    #[arg(long)]
    meta: Option<String>,
    /// Concurrent virtual clients (default 16).
    #[arg(long)]
    clients: Option<usize>,
    /// TCP connections the clients share round-robin (default: one per client).
    #[arg(long)]
    connections: Option<usize>,
    /// HTTP/1.1 (the default).
    #[arg(long, conflicts_with = "h2")]
    http1: bool,
    /// Prior-knowledge h2c: clients sharing a connection multiplex streams.
    #[arg(long)]
    h2: bool,
    /// Counted time window, e.g. 10s (default 10s).
    #[arg(long, conflicts_with = "requests")]
    duration: Option<String>,
    /// Counted requests across all clients (instead of a window).
    #[arg(long)]
    requests: Option<u64>,
    /// Uncounted warm-up (default 1s for a window, none for --requests).
    #[arg(long)]
    warmup: Option<String>,
    /// `sse`, `json` or `both` (default both).
    #[arg(long)]
    accept: Option<String>,
    /// An extra header, 'Name: value' (repeatable).
    #[arg(long = "header")]
    headers: Vec<String>,
    /// Write the results as JSON to FILE (`-` = stdout).
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// No progress lines.
    #[arg(long)]
    quiet: bool,
    /// Per-request timeout (default 10s).
    #[arg(long)]
    timeout: Option<String>,
}

#[cfg(feature = "load-generator")]
#[derive(Debug, Subcommand)]
enum BenchCommand {
    /// Open N idle sessions (and GET streams), print `ready sessions=N streams=S`, hold them,
    /// then delete them: for measuring a server's memory.
    Idle {
        /// The MCP endpoint.
        #[arg(long)]
        url: String,
        /// Sessions to open.
        #[arg(long)]
        sessions: usize,
        /// Open one GET stream per session too, each on its own connection.
        #[arg(long)]
        streams: bool,
        /// Keep-alive connections the sessions are opened over (default 64).
        #[arg(long)]
        connections: Option<usize>,
        /// How long to hold (default 60s); SIGINT/SIGTERM end it early.
        #[arg(long)]
        hold: Option<String>,
        /// An extra header, 'Name: value' (repeatable).
        #[arg(long = "header")]
        headers: Vec<String>,
        /// Per-request timeout while opening (default 10s).
        #[arg(long)]
        timeout: Option<String>,
    },
}

fn main() -> anyhow::Result<ExitCode> {
    let cli = Cli::parse();
    // `serve` logs as its configuration says; everything else logs text at `info`.
    let log = match &cli.command {
        Command::Serve { config, .. } => config::load(config)
            .map(|config| config.server.log)
            .unwrap_or_default(),
        _ => LogSettings::default(),
    };
    init_logs(&log);
    if let Command::Key {
        command: KeyCommand::New { config },
    } = &cli.command
    {
        return key_new(config.as_deref());
    }
    if let Command::Import { command } = &cli.command {
        return import(command);
    }
    if let Command::Check { config } = &cli.command {
        let ok = catalog::check(config, &mut std::io::stdout().lock());
        return Ok(if ok {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        });
    }
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(workers) = cli.workers {
        builder.worker_threads(usize::from(workers));
    }
    let runtime = builder
        .enable_all()
        .build()
        .context("building the tokio runtime")?;
    match cli.command {
        Command::Serve { config, listen } => runtime.block_on(serve(&config, listen))?,
        Command::Demo { listen } => runtime.block_on(demo(listen))?,
        #[cfg(feature = "load-generator")]
        Command::Bench(args) => return runtime.block_on(bench(args)),
        Command::Check { .. } | Command::Key { .. } | Command::Import { .. } => {}
    }
    Ok(ExitCode::SUCCESS)
}

/// Installs the `tracing` subscriber: text or JSON lines, filtered by `RUST_LOG` when set, else
/// by the configured level.
fn init_logs(settings: &LogSettings) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .or_else(|_| tracing_subscriber::EnvFilter::try_new(&settings.level))
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    sluice::log_limit::limiter().set_interval(std::time::Duration::from_millis(
        settings.repeat_interval_ms,
    ));
    match settings.format {
        LogFormat::Json => builder.json().with_current_span(false).init(),
        LogFormat::Text => builder.init(),
    }
}

/// `sluice key new`.
fn key_new(config: Option<&Path>) -> anyhow::Result<ExitCode> {
    let pepper = match Overrides::from_env().api_key_pepper {
        Some(pepper) => pepper,
        None => {
            let Some(path) = config else {
                anyhow::bail!(
                    "set SLUICE_API_KEY_PEPPER or pass --config with [server] api_key_pepper"
                );
            };
            let config =
                config::load(path).map_err(|err| anyhow::anyhow!("{}: {err}", path.display()))?;
            config
                .server
                .api_key_pepper
                .context("the configuration has no [server] api_key_pepper")?
        }
    };
    let key = sluice::auth::apikey::generate(pepper.as_bytes());
    println!("API key (give it to the client application; it is not stored anywhere):");
    println!();
    println!("    {}", key.token);
    println!();
    println!("Add to the client application in the configuration:");
    println!();
    println!("[[tenant.client.api_key]]");
    println!("id = \"{}\"", key.id);
    println!("hash = \"{}\"", key.hash_hex);
    println!("# scopes = [\"mcp:tools\"]          # unset grants every scope");
    println!("# expires_at = 2027-01-01T00:00:00Z");
    Ok(ExitCode::SUCCESS)
}

async fn serve(path: &Path, listen: Option<SocketAddr>) -> anyhow::Result<()> {
    let catalog = match Catalog::load(path) {
        Ok(catalog) => Arc::new(catalog),
        Err(report) => anyhow::bail!("{} is invalid:\n{report}", path.display()),
    };
    let listen = match listen {
        Some(addr) => addr,
        None => {
            let snapshot = catalog.current();
            let configured = &snapshot.settings().listen;
            configured
                .parse()
                .with_context(|| format!("[server] listen = {configured:?} is not an address"))?
        }
    };
    // `[cluster]` and `[telemetry]` are read once, at start (a reload does not move an instance
    // to another Redis or collector).
    let (cluster, telemetry) = config::load(path)
        .map(|file| (file.cluster, file.telemetry))
        .unwrap_or_default();
    reload_on_sighup(Arc::clone(&catalog))?;
    let config = sluice::ServeConfig::from_catalog(catalog)
        .with_cluster(&cluster)
        .with_telemetry(&telemetry);
    run(listen, config, |_| ()).await
}

async fn demo(listen: SocketAddr) -> anyhow::Result<()> {
    let api = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .context("binding the demo API")?;
    let api_base = format!("http://{}", api.local_addr()?);
    tokio::spawn(sluice::demo::serve_api(api, std::future::pending()));
    let text = sluice::demo::config_text(&api_base);
    let mut config = config::parse(&text, "demo")
        .map_err(|err| anyhow::anyhow!("the bundled demo configuration: {err}"))?;
    // The demo runs with the environment's overrides, as a configuration file would.
    Overrides::from_env().apply(&mut config);
    let catalog = match Catalog::from_config(&config) {
        Ok(catalog) => Arc::new(catalog),
        Err(report) => anyhow::bail!("the bundled demo configuration is invalid:\n{report}"),
    };
    run(listen, sluice::ServeConfig::from_catalog(catalog), |addr| {
        println!("{}", sluice::demo::banner(addr));
    })
    .await
}

/// `sluice bench` and `sluice bench idle`.
#[cfg(feature = "load-generator")]
async fn bench(args: Box<BenchArgs>) -> anyhow::Result<ExitCode> {
    use sluice::bench;
    if let Some(BenchCommand::Idle {
        url,
        sessions,
        streams,
        connections,
        hold,
        headers,
        timeout,
    }) = args.command
    {
        let settings = bench::IdleSettings::from_flags(bench::IdleFlags {
            url,
            sessions,
            streams,
            connections,
            hold,
            headers,
            timeout,
        })?;
        bench::idle(settings, shutdown_signal()?).await?;
        return Ok(ExitCode::SUCCESS);
    }
    let settings = bench::Settings::from_flags(bench::Flags {
        url: args.url.unwrap_or_default(),
        era: args.era,
        method: args.method,
        tool: args.tool,
        args: args.args,
        meta: args.meta,
        clients: args.clients,
        connections: args.connections,
        h2: args.h2,
        duration: args.duration,
        requests: args.requests,
        warmup: args.warmup,
        accept: args.accept,
        headers: args.headers,
        json: args.json,
        quiet: args.quiet,
        timeout: args.timeout,
    })?;
    let stop = settings.stop;
    let json = settings.json.clone();
    // Ctrl-C or SIGTERM ends the run early with the report of what was counted.
    let report = bench::run_until(settings, shutdown_signal()?).await?;
    // With `--json -` stdout carries only the JSON; the summary goes to stderr.
    match json.as_deref() {
        Some(path) if path.as_os_str() == "-" => eprint!("{}", report.summary(stop)),
        _ => print!("{}", report.summary(stop)),
    }
    if let Some(path) = json {
        bench::write_json(&report, &path)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Binds, announces, serves until SIGINT/SIGTERM, drains.
async fn run(
    listen: SocketAddr,
    config: sluice::ServeConfig,
    announce: impl FnOnce(SocketAddr),
) -> anyhow::Result<()> {
    raise_fd_limit(config.limits.max_connections);
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .with_context(|| format!("binding {listen}"))?;
    let addr = listener.local_addr()?;
    tracing::info!(%addr, "listening");
    announce(addr);
    sluice::serve(listener, config, shutdown_signal()?).await?;
    tracing::info!("drained; exiting");
    Ok(())
}

/// Raises the soft open-file limit to the hard one (a low soft limit, 1024 on many systems, would
/// refuse connections with EMFILE long before `max_connections`), and warns when even that is
/// below what `max_connections` needs.
fn raise_fd_limit(max_connections: usize) {
    let needed = u64::try_from(max_connections)
        .unwrap_or(u64::MAX)
        .saturating_add(FD_HEADROOM);
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(limit) => {
            tracing::info!(limit, "open file limit");
            if limit < needed {
                tracing::warn!(
                    limit,
                    needed,
                    max_connections,
                    "the open file limit is below what max_connections needs; accepts will \
                     fail with EMFILE before the connection limit is reached (raise the hard \
                     limit, e.g. LimitNOFILE= or ulimit -Hn, or lower max_connections)"
                );
            }
        }
        Err(err) => tracing::warn!(%err, "could not raise the open file limit"),
    }
}

/// Reloads the catalog on every SIGHUP; a failed reload keeps the current catalog.
fn reload_on_sighup(catalog: Arc<Catalog>) -> anyhow::Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut hangup = signal(SignalKind::hangup()).context("installing SIGHUP handler")?;
    tokio::spawn(async move {
        while hangup.recv().await.is_some() {
            let catalog = Arc::clone(&catalog);
            match tokio::task::spawn_blocking(move || catalog.reload()).await {
                Ok(Ok(outcome)) => tracing::info!(
                    version = outcome.version,
                    changed = outcome.changed.len(),
                    "SIGHUP: catalog reloaded"
                ),
                Ok(Err(report)) => {
                    tracing::warn!(%report, "SIGHUP: reload refused; keeping the current catalog")
                }
                Err(err) => tracing::error!(%err, "SIGHUP: reload task failed"),
            }
        }
    });
    Ok(())
}

/// Resolves on the first SIGINT or SIGTERM. A second one, while the first is being honoured
/// (e.g. during the drain), exits the process at once with 128 + the signal number.
fn shutdown_signal() -> anyhow::Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut interrupt = signal(SignalKind::interrupt()).context("installing SIGINT handler")?;
    let mut terminate = signal(SignalKind::terminate()).context("installing SIGTERM handler")?;
    Ok(async move {
        tokio::select! {
            _ = interrupt.recv() => tracing::info!("SIGINT: shutting down"),
            _ = terminate.recv() => tracing::info!("SIGTERM: shutting down"),
        }
        tokio::spawn(async move {
            let (name, code) = tokio::select! {
                _ = interrupt.recv() => ("SIGINT", 128 + 2),
                _ = terminate.recv() => ("SIGTERM", 128 + 15),
            };
            tracing::warn!(signal = name, "second signal: exiting now without draining");
            std::process::exit(code);
        });
    })
}

/// `import wsdl|openapi`: the configuration on stdout; problems (file:line:col) and notes on
/// stderr.
fn import(command: &ImportCommand) -> anyhow::Result<ExitCode> {
    let result = match command {
        ImportCommand::Wsdl {
            file,
            tenant,
            toolset,
            binding,
            operations,
            include_writes,
        } => sluice::contract::import_wsdl(
            file,
            &sluice::contract::WsdlOptions {
                tenant: tenant.clone(),
                toolset: toolset.clone(),
                binding: match binding {
                    BindingArg::Soap11 => sluice::contract::Binding::Soap11,
                    BindingArg::Soap12 => sluice::contract::Binding::Soap12,
                },
                operations: operations.clone(),
                include_writes: *include_writes,
            },
        ),
        ImportCommand::Openapi {
            file,
            tenant,
            toolset,
            operations,
        } => sluice::contract::import_openapi(
            file,
            &sluice::contract::OpenApiOptions {
                tenant: tenant.clone(),
                toolset: toolset.clone(),
                operations: operations.clone(),
            },
        ),
    };
    match result {
        Ok((text, notes)) => {
            for note in notes {
                eprintln!("note: {note}");
            }
            print!("{text}");
            Ok(ExitCode::SUCCESS)
        }
        Err(problems) => {
            for problem in problems {
                eprintln!("error: {problem}");
            }
            Ok(ExitCode::FAILURE)
        }
    }
}
