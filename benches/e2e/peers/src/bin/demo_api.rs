//! `demo-api`: sluice's demo downstream API (`sluice::demo::serve_api`, the in-memory CRM) as a
//! process of its own, so the e2e benchmark can pin it to the load generator's core and point
//! both sluice and `rmcp-peer` at the same loopback service.
//!
//! With `--write-config FILE` it also writes the sluice configuration for it: the bundled demo
//! configuration (`sluice::demo::config_text`) with `[server]` limits raised for the memory run
//! (10,000 sessions and as many GET streams per tenant and instance), logs at `warn`,
//! the default `post_framing` (`"sse"`: a client accepting both media types, as the handshake
//! era requires, is answered with a retained SSE stream, as rmcp answers), and `[server] listen`
//! set to `--sluice-listen` or to a free loopback port it picks (printed as `sluice ADDR`).
//! `--write-json-config FILE` writes the same with `post_framing = "json"` on another free port
//! (printed as `sluice-json ADDR`): the instance whose answers are JSON for the same requests.
//! Runs until SIGINT/SIGTERM.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use clap::Parser;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The demo API, and optionally a sluice configuration that uses it.
#[derive(Debug, Parser)]
#[command(name = "demo-api")]
struct Cli {
    #[command(flatten)]
    common: sluice_e2e_peers::Common,
    /// Write a sluice configuration for this API to FILE.
    #[arg(long)]
    write_config: Option<PathBuf>,
    /// The `[server] listen` of the written configuration (default: a free 127.0.0.1 port).
    #[arg(long)]
    sluice_listen: Option<SocketAddr>,
    /// Write the same configuration with `post_framing = "json"` to FILE, on a free port.
    #[arg(long)]
    write_json_config: Option<PathBuf>,
}

/// `[server]` settings the benchmark needs beyond the demo's: room for 10,000 idle sessions, each
/// with a GET stream on a connection of its own, plus the connections that opened them; sessions
/// that outlive a long hold; and 256 streams per session, because an independent load generator
/// (`wrk` in `run.sh`) sends every connection's requests in one session, so 64 connections keep up
/// to 64 SSE answers of one session open at once (the default, 8, would refuse most with 429).
const SERVER_OVERRIDES: &str = "\
max_sessions_per_tenant = 50000
max_connections = 50000
max_streams_per_session = 256
session_idle_secs = 3600
session_init_timeout_secs = 3600
";

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let runtime = sluice_e2e_peers::runtime(cli.common.workers)?;
    runtime.block_on(async move {
        let listener = sluice_e2e_peers::bind(cli.common.listen).await?;
        let base = format!("http://{}", listener.local_addr()?);
        if let Some(path) = &cli.write_config {
            let listen = match cli.sluice_listen {
                Some(addr) => addr,
                None => free_port().await?,
            };
            write(path, &config(&base, listen, false)?, "sluice", listen)?;
        }
        if let Some(path) = &cli.write_json_config {
            let listen = free_port().await?;
            write(path, &config(&base, listen, true)?, "sluice-json", listen)?;
        }
        sluice::demo::serve_api(listener, sluice_e2e_peers::shutdown_signal()?).await;
        Ok(())
    })
}

/// Writes `text` to `path`, then announces `NAME ADDR` on stdout.
fn write(path: &PathBuf, text: &str, name: &str, listen: SocketAddr) -> anyhow::Result<()> {
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{name} {listen}")?;
    out.flush()?;
    Ok(())
}

/// The demo configuration for the API at `base`, sluice listening on `listen`, with the default
/// framing (SSE) or `post_framing = "json"`.
fn config(base: &str, listen: SocketAddr, json: bool) -> anyhow::Result<String> {
    let text = sluice::demo::config_text(base);
    let mut out = String::with_capacity(text.len() + 512);
    let mut in_server = false;
    let mut done = false;
    for line in text.lines() {
        if line.starts_with('[') {
            in_server = line.trim() == "[server]";
        }
        // Replace the demo's listen and log settings; keep the rest (its API key pepper).
        if in_server && (line.starts_with("listen") || line.starts_with("log")) {
            continue;
        }
        out.push_str(line);
        out.push('\n');
        if in_server && !done {
            out.push_str(&format!("listen = \"{listen}\"\n"));
            out.push_str("log = { level = \"warn\" }\n");
            out.push_str(SERVER_OVERRIDES);
            if json {
                out.push_str("post_framing = \"json\"\n");
            }
            done = true;
        }
    }
    anyhow::ensure!(done, "the demo configuration has no [server] table");
    // The result must still be a configuration sluice accepts.
    let parsed = sluice::config::parse(&out, "e2e")
        .map_err(|err| anyhow::anyhow!("the generated configuration: {err}"))?;
    sluice::catalog::Catalog::from_config(&parsed)
        .map_err(|report| anyhow::anyhow!("the generated configuration is invalid:\n{report}"))?;
    Ok(out)
}

/// A loopback port nothing listens on right now.
async fn free_port() -> anyhow::Result<SocketAddr> {
    let probe = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .context("finding a free port")?;
    Ok(probe.local_addr()?)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_written_configuration_has_the_overrides_and_is_valid() {
        let listen: std::net::SocketAddr = "127.0.0.1:4567".parse().expect("an address");
        let text =
            super::config("http://127.0.0.1:9", listen, false).expect("a valid configuration");
        let parsed = sluice::config::parse(&text, "test").expect("parses");
        let server = &parsed.server;
        assert_eq!(server.listen, "127.0.0.1:4567");
        assert_eq!(server.max_sessions_per_tenant, 50_000);
        assert_eq!(server.max_connections, 50_000);
        assert_eq!(server.post_framing, sluice::config::PostFraming::Sse);
        assert_eq!(server.log.level, "warn");
        assert!(text.contains("http://127.0.0.1:9/crm/customers/"));
        assert_eq!(text.matches("listen =").count(), 1);
        let json = super::config("http://127.0.0.1:9", listen, true).expect("valid");
        let parsed = sluice::config::parse(&json, "test").expect("parses");
        assert_eq!(parsed.server.post_framing, sluice::config::PostFraming::Json);
    }
}
