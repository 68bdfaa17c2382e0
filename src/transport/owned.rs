//! A `tools/call` that owns everything it reads, so its dispatch can leave the request's
//! handler and run in a task of its own (a session's call that has to wait, `handshake.rs`;
//! a stateless call that streams its progress, `progress.rs`), and the pump that writes a
//! call's progress notifications before its response.
//!
//! Must not implement MCP methods nor frame anything: the caller frames what it gets.

use std::future::Future;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use tokio::sync::mpsc;

use crate::auth::Caller;
use crate::invoke::CallContext;
use crate::jsonrpc::{Id, Message, Payload};
use crate::mcp::{ProgressSink, Reply, Scope};
use crate::protocol::{Era, ProtocolVersion};
use crate::session::SessionId;

/// Progress notifications queued between a call and its stream: a client that reads slowly
/// makes the call wait instead of growing memory.
pub(crate) const PROGRESS_FRAMES: usize = 16;

/// A `tools/call` with everything it reads owned: the request re-serialized from its parsed
/// form (the body was parsed in place), the path's tenant and client, the snapshot, the
/// caller, and where its progress goes.
pub(crate) struct OwnedCall {
    request: BytesMut,
    tenant: Box<str>,
    client: Box<str>,
    snapshot: Arc<crate::catalog::Snapshot>,
    view: Option<Arc<crate::catalog::ClientView>>,
    era: Era,
    version: ProtocolVersion,
    caller: Caller,
    call: CallContext,
    session: Option<SessionId>,
    surface: crate::audit::Surface,
    stream_sources: bool,
    platform: bool,
    /// The limits the request was parsed with, so it parses again whatever its depth.
    json_limits: crate::jsonrpc::Limits,
    progress: Option<ProgressSink>,
}

/// A dispatch that owns its inputs.
pub(crate) type OwnedDispatch =
    std::pin::Pin<Box<dyn Future<Output = Result<Reply, crate::mcp::McpError>> + Send + 'static>>;

impl OwnedCall {
    /// The call `id` with `params` in `scope`, to be parsed again with `json_limits`.
    pub(crate) fn new(
        scope: &Scope<'_>,
        snapshot: Arc<crate::catalog::Snapshot>,
        id: Id<'_>,
        params: Option<&Payload<'_>>,
        json_limits: crate::jsonrpc::Limits,
    ) -> Self {
        let mut request = BytesMut::with_capacity(256);
        request.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
        id.write_json(&mut request);
        request.extend_from_slice(br#","method":"tools/call""#);
        if let Some(params) = params {
            request.extend_from_slice(br#","params":"#);
            params.write_json(&mut request);
        }
        request.extend_from_slice(b"}");
        Self {
            request,
            tenant: scope.tenant.into(),
            client: scope.client.into(),
            snapshot,
            view: scope.view.cloned(),
            era: scope.era,
            version: scope.version,
            caller: scope.caller.clone(),
            call: scope.call.clone(),
            session: scope.session,
            surface: scope.surface,
            stream_sources: scope.stream_sources,
            platform: scope.platform,
            json_limits,
            progress: None,
        }
    }

    /// This call with a progress sink when its params ask for progress
    /// (`_meta.progressToken`), and the receiver its notifications arrive on.
    pub(crate) fn with_progress(
        mut self,
        params: Option<&Payload<'_>>,
    ) -> (Self, Option<mpsc::Receiver<Bytes>>) {
        if !crate::mcp::progress::requested(params) {
            return (self, None);
        }
        let (sink, rx) = ProgressSink::channel(PROGRESS_FRAMES);
        self.progress = Some(sink);
        (self, Some(rx))
    }

    /// The dispatch, ready to be polled anywhere.
    pub(crate) fn run(self, dispatcher: Arc<crate::mcp::Dispatcher>) -> OwnedDispatch {
        Box::pin(async move {
            let mut owned = self;
            let mut request = std::mem::take(&mut owned.request);
            // It was a valid request a moment ago; re-serialized, it parses the same.
            let limits = owned.json_limits;
            let Ok(Message::Request { method, params, .. }) =
                crate::jsonrpc::parse_with(&mut request, &limits)
            else {
                return Err(crate::mcp::McpError::Internal);
            };
            let scope = Scope::new(
                &owned.tenant,
                &owned.client,
                &owned.snapshot,
                owned.view.as_ref(),
                (owned.era, owned.version),
                &owned.call,
                &owned.caller,
            )
            .with_session(owned.session)
            .with_platform(owned.platform)
            .with_surface(owned.surface)
            .with_stream_sources(owned.stream_sources)
            .with_progress(owned.progress.as_ref());
            let outcome = dispatcher.request(&scope, method, params.as_ref()).await;
            // The sink goes with the call: the pump sees the channel end.
            drop(owned.progress.take());
            outcome
        })
    }
}

/// `outcome`, with a federated read that reached a call already streaming run to its final
/// result (its source events are not streamed: the answer is already this call's stream).
pub(crate) async fn settle(
    dispatcher: &crate::mcp::Dispatcher,
    outcome: Result<Reply, crate::mcp::McpError>,
) -> Result<Reply, crate::mcp::McpError> {
    match outcome {
        Ok(Reply::Federated(call)) => {
            let result = dispatcher
                .run_federated(&call, &mut crate::federation::NullSink)
                .await;
            Ok(Reply::Result(result))
        }
        other => other,
    }
}

/// Runs `work`, handing each progress message from `progress` to `write` as it arrives, and
/// every message still queued when `work` completes before returning its output (so none
/// follows the response). Without a receiver, just `work`.
pub(crate) async fn with_progress<F, W, Fut>(
    work: F,
    progress: Option<&mut mpsc::Receiver<Bytes>>,
    mut write: W,
) -> F::Output
where
    F: Future,
    W: FnMut(Bytes) -> Fut,
    Fut: Future<Output = ()>,
{
    let Some(rx) = progress else {
        return work.await;
    };
    tokio::pin!(work);
    loop {
        tokio::select! {
            biased;
            output = &mut work => {
                while let Ok(message) = rx.try_recv() {
                    write(message).await;
                }
                return output;
            }
            Some(message) = rx.recv() => write(message).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn progress_is_written_as_it_comes_and_all_of_it_before_the_output() {
        let (tx, mut rx) = mpsc::channel::<Bytes>(2);
        let work = async move {
            for step in 0..5u8 {
                // More steps than the channel holds: the pump must drain while work runs.
                tx.send(Bytes::from(vec![b'0' + step])).await.unwrap();
                tokio::task::yield_now().await;
            }
            // The last ones are still queued when the work completes.
            tx.try_send(Bytes::from_static(b"5")).unwrap();
            "done"
        };
        let written = std::sync::Mutex::new(Vec::new());
        let output = with_progress(work, Some(&mut rx), |message| {
            written.lock().unwrap().push(message);
            std::future::ready(())
        })
        .await;
        assert_eq!(output, "done");
        let written = written.into_inner().unwrap();
        assert_eq!(written.concat(), b"012345");
        let none = with_progress(async { 1 }, None, |_| std::future::ready(())).await;
        assert_eq!(none, 1);
    }
}
