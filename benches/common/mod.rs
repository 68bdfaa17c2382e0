//! What the end-to-end benches share: one-worker runtimes pinned to a core, the choice of a
//! server core and a client core, CPU accounting from `/proc` (per runtime from
//! `/proc/self/task/*/schedstat`, the rest of the machine from `/proc/stat`), and the loopback
//! HTTP/1.1 plumbing their peers use (a keep-alive client connection, a server accept loop).
//!
//! Each bench includes it with `mod common;`, so an item a bench does not use is allowed to be
//! dead there. Owns only measurement plumbing (and, in `soap.rs`, the one answer the SOAP benches
//! share): workloads, servers and reports stay in the benches.

#![allow(dead_code)]

pub(crate) mod soap;

use std::net::SocketAddr;
use std::time::Instant;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Runtime;

/// A one-worker multi-thread runtime (the production scheduler) whose threads are named `name`
/// and pinned to `core` when there is one.
pub(crate) fn runtime(name: &'static str, core: Option<core_affinity::CoreId>) -> Runtime {
    runtime_with(name, core, || {})
}

/// [`runtime`], also running `on_start` on each of its threads (e.g. to mark them for a
/// counting allocator).
pub(crate) fn runtime_with(
    name: &'static str,
    core: Option<core_affinity::CoreId>,
    on_start: fn(),
) -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name(name)
        .on_thread_start(move || {
            if let Some(core) = core {
                core_affinity::set_for_current(core);
            }
            on_start();
        })
        .enable_all()
        .build()
        .expect("building a runtime")
}

/// An HTTP/1.1 keep-alive client connection to `addr` with `TCP_NODELAY` (its driver spawned).
pub(crate) async fn connect(
    addr: SocketAddr,
) -> Result<hyper::client::conn::http1::SendRequest<Full<Bytes>>, String> {
    let stream = TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    stream
        .set_nodelay(true)
        .map_err(|e| format!("nodelay: {e}"))?;
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| format!("handshake: {e}"))?;
    tokio::spawn(conn);
    Ok(sender)
}

/// Serves `service` on every connection `listener` accepts (HTTP/1.1, `TCP_NODELAY`) until
/// `stop` completes.
pub(crate) async fn serve_http1<S, B>(
    listener: TcpListener,
    stop: impl std::future::Future<Output = ()>,
    service: S,
) where
    S: hyper::service::Service<Request<Incoming>, Response = Response<B>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    tokio::pin!(stop);
    loop {
        let accepted = tokio::select! {
            () = &mut stop => return,
            accepted = listener.accept() => accepted,
        };
        let Ok((stream, _)) = accepted else { continue };
        let _ = stream.set_nodelay(true);
        let service = service.clone();
        tokio::spawn(async move {
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

/// The first two visible cores: (server, client); both `None` with fewer than two.
pub(crate) fn server_and_client_cores(
) -> (Option<core_affinity::CoreId>, Option<core_affinity::CoreId>) {
    let cores = core_affinity::get_core_ids().unwrap_or_default();
    match cores.as_slice() {
        [first, second, ..] => (Some(*first), Some(*second)),
        _ => (None, None),
    }
}

/// Clock ticks per second of `/proc/stat` (USER_HZ, 100 on Linux).
pub(crate) const TICKS_PER_SEC: f64 = 100.0;

/// CPU times at one instant: of the server threads and of the client threads (ns on a CPU,
/// from `/proc/self/task/*/schedstat`, chosen by thread-name prefix), of this process, and of
/// the whole machine (ticks, from `/proc/stat`).
pub(crate) struct CpuSample {
    pub at: Instant,
    pub server_ns: u64,
    pub client_ns: u64,
    pub process_ns: u64,
    pub machine_busy_ticks: u64,
}

impl CpuSample {
    /// A sample now: threads whose name starts with one of `server` count as server, those
    /// with one of `client` as client.
    pub(crate) fn take(server: &[&str], client: &[&str]) -> Self {
        let (mut server_ns, mut client_ns, mut process_ns) = (0, 0, 0);
        if let Ok(tasks) = std::fs::read_dir("/proc/self/task") {
            for task in tasks.flatten() {
                let path = task.path();
                let Ok(comm) = std::fs::read_to_string(path.join("comm")) else {
                    continue;
                };
                let ns: u64 = std::fs::read_to_string(path.join("schedstat"))
                    .ok()
                    .and_then(|s| s.split_whitespace().next()?.parse().ok())
                    .unwrap_or(0);
                process_ns += ns;
                if server.iter().any(|prefix| comm.starts_with(prefix)) {
                    server_ns += ns;
                } else if client.iter().any(|prefix| comm.starts_with(prefix)) {
                    client_ns += ns;
                }
            }
        }
        Self {
            at: Instant::now(),
            server_ns,
            client_ns,
            process_ns,
            machine_busy_ticks: machine_busy_ticks(),
        }
    }

    /// Seconds from `self` to `later` (at least 1 ms).
    pub(crate) fn secs(&self, later: &Self) -> f64 {
        (later.at - self.at).as_secs_f64().max(1e-3)
    }

    /// Server CPU time from `self` to `later`, in ns.
    pub(crate) fn server_ns(&self, later: &Self) -> u64 {
        later.server_ns.saturating_sub(self.server_ns)
    }

    /// Client CPU time from `self` to `later`, in ns.
    pub(crate) fn client_ns(&self, later: &Self) -> u64 {
        later.client_ns.saturating_sub(self.client_ns)
    }

    /// Busy cores of the whole machine minus this process from `self` to `later`: other
    /// people's load.
    pub(crate) fn other_cores(&self, later: &Self) -> f64 {
        let secs = self.secs(later);
        let process = later.process_ns.saturating_sub(self.process_ns) as f64 / 1e9 / secs;
        let machine = later
            .machine_busy_ticks
            .saturating_sub(self.machine_busy_ticks) as f64
            / TICKS_PER_SEC
            / secs;
        (machine - process).max(0.0)
    }
}

/// Busy ticks of all cores from `/proc/stat` (everything but idle and iowait).
pub(crate) fn machine_busy_ticks() -> u64 {
    let Ok(stat) = std::fs::read_to_string("/proc/stat") else {
        return 0;
    };
    let Some(line) = stat.lines().next() else {
        return 0;
    };
    let values: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|v| v.parse().ok())
        .collect();
    let total: u64 = values.iter().take(8).sum();
    let idle = values.get(3).copied().unwrap_or(0) + values.get(4).copied().unwrap_or(0);
    total.saturating_sub(idle)
}

/// The median of per-round figures (the upper middle of an even count; 0 when empty): what every
/// table quotes on a noisy machine.
pub(crate) fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}
