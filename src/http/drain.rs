//! The server-wide drain signal: [`Drain`] and the shutdown phases it moves through.
//!
//! The accept loop (`server.rs`) moves the phase forward — serving, draining, grace over —
//! and everyone else watches: streaming bodies end at their next frame boundary once draining
//! starts, and connections answer 503 to requests whose response has not started once the
//! grace period is over. Must not know connections or responses: it is only the signal.

use std::future::Future;

use tokio::sync::watch;

/// The server-wide "draining has started" signal. Cheap to clone; streaming bodies and
/// long-lived handlers hold one and stop at a clean boundary when it fires.
#[derive(Debug, Clone)]
pub struct Drain {
    /// Where the server is in its shutdown. Only the accept loop ([`run`](super::server::run)) or a test moves it, and only
    /// forward; everyone else watches.
    tx: watch::Sender<Phase>,
}

/// The server's shutdown phases, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Phase {
    /// Accepting and serving.
    Serving,
    /// Not accepting; in-flight requests are finishing.
    Draining,
    /// The grace period is over: unanswered requests answer 503.
    GraceOver,
}

impl Default for Drain {
    fn default() -> Self {
        Self::new()
    }
}

impl Drain {
    /// A signal that has not fired.
    pub fn new() -> Self {
        Self {
            tx: watch::Sender::new(Phase::Serving),
        }
    }

    /// Fires the signal (idempotent).
    pub fn start(&self) {
        self.advance(Phase::Draining);
    }

    /// Whether the signal has fired.
    pub(crate) fn is_draining(&self) -> bool {
        *self.tx.borrow() != Phase::Serving
    }

    /// Ends the grace period (after [`Drain::start`]).
    pub(super) fn end_grace(&self) {
        self.advance(Phase::GraceOver);
    }

    fn advance(&self, to: Phase) {
        self.tx.send_if_modified(|phase| {
            let moves = *phase < to;
            if moves {
                *phase = to;
            }
            moves
        });
    }

    pub(super) fn subscribe(&self) -> watch::Receiver<Phase> {
        self.tx.subscribe()
    }

    /// Resolves once the signal fires (at once if it already has).
    pub(crate) fn signalled(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut rx = self.tx.subscribe();
        async move {
            // An error means every sender is gone: nobody can fire it any more, so treat the
            // server as gone too.
            let _ = rx.wait_for(|phase| *phase != Phase::Serving).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drain_phases_only_move_forward() {
        let drain = Drain::new();
        assert!(!drain.is_draining());
        drain.end_grace();
        drain.start();
        assert_eq!(*drain.subscribe().borrow(), Phase::GraceOver);
        assert!(drain.is_draining());
    }
}
