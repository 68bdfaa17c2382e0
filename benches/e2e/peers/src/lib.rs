//! What the three peer binaries share: the `--listen`/`--workers` flags, a tokio runtime of N
//! workers, binding and announcing (`listening ADDR` on stdout, the line the e2e scripts wait
//! for), the accept loop (hyper-util's auto builder: HTTP/1.1 keep-alive and h2c, `TCP_NODELAY`,
//! as sluice serves) and SIGINT/SIGTERM.
//!
//! Owns nothing of MCP and must not reach into sluice beyond its public `demo` module: these
//! servers exist only to be measured against sluice by `benches/e2e/run.sh` and `memory.sh`.

use std::convert::Infallible;
use std::future::Future;
use std::io::Write;
use std::net::SocketAddr;

use anyhow::Context;
use bytes::Bytes;
use http::{Request, Response};
use hyper::body::{Body, Incoming};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;

/// Flags every peer binary takes.
#[derive(Debug, Clone, clap::Args)]
pub struct Common {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:0")]
    pub listen: SocketAddr,
    /// Tokio worker threads (the benchmark runs the server under test with 1, on one core).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
    pub workers: u16,
}

/// A multi-thread runtime (the production scheduler, as sluice's) with `workers` workers.
pub fn runtime(workers: u16) -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(usize::from(workers))
        .enable_all()
        .build()
        .context("building the tokio runtime")
}

/// Binds `addr` and prints `listening ADDR` (the bound address) on stdout, flushed.
pub async fn bind(addr: SocketAddr) -> anyhow::Result<TcpListener> {
    let listener = TcpListener::bind(addr)
        .await
        .with_context(|| format!("binding {addr}"))?;
    let bound = listener.local_addr()?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "listening {bound}")?;
    out.flush()?;
    Ok(listener)
}

/// Resolves on the first SIGINT or SIGTERM.
pub fn shutdown_signal() -> anyhow::Result<impl Future<Output = ()>> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut interrupt = signal(SignalKind::interrupt()).context("installing SIGINT handler")?;
    let mut terminate = signal(SignalKind::terminate()).context("installing SIGTERM handler")?;
    Ok(async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
    })
}

/// Accepts connections on `listener` until `stop` resolves, serving each with `handler` over
/// HTTP/1.1 (keep-alive) or h2c, whichever the client speaks. Accept errors (e.g. out of file
/// descriptors) are skipped after a short pause rather than ending the server.
pub async fn serve<H, F, B>(listener: TcpListener, handler: H, stop: impl Future<Output = ()>)
where
    H: Fn(Request<Incoming>) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = Result<Response<B>, Infallible>> + Send + 'static,
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    tokio::pin!(stop);
    loop {
        let accepted = tokio::select! {
            () = &mut stop => return,
            accepted = listener.accept() => accepted,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(err) => {
                eprintln!("accept: {err}");
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let handler = handler.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(handler);
            let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
