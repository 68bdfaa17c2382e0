//! The composition root: wires HTTP routes to the surfaces and runs the listener.
//!
//! STUB API.

use std::future::Future;

/// Everything `serve` needs besides the listener.
#[derive(Debug, Clone, Default)]
pub struct ServeConfig {}

/// Serves on an already-bound listener until `shutdown` resolves, then drains.
pub async fn serve(
    _listener: tokio::net::TcpListener,
    _config: ServeConfig,
    _shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    todo!("serve")
}
