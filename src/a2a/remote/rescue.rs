//! The concentrator's failures as a caller sees them: an upstream exchange that failed, a
//! ledger that refused or is down, the code of an upstream's error answer. The details go to
//! the log, never to the caller.
//!
//! Must not decide anything else about a call.

use super::ledger::LedgerError;
use super::upstream::UpstreamError;
use crate::a2a::error::{UPSTREAM_AUTH_FAILED, UPSTREAM_TIMEOUT, UPSTREAM_UNAVAILABLE};
use crate::a2a::A2aError;

/// A transport failure as the caller sees it (the detail goes to the log, never to the caller).
pub(crate) fn upstream_error(err: UpstreamError) -> A2aError {
    tracing::debug!(error = %err, "remote agent exchange failed");
    match err {
        UpstreamError::Timeout => A2aError::Upstream(UPSTREAM_TIMEOUT),
        UpstreamError::AuthFailed(_) => A2aError::Upstream(UPSTREAM_AUTH_FAILED),
        UpstreamError::NonConforming(_) => A2aError::InvalidAgentResponse,
        UpstreamError::Unavailable(_) | UpstreamError::Config(_) => {
            A2aError::Upstream(UPSTREAM_UNAVAILABLE)
        }
    }
}

/// A ledger failure as the caller sees it.
pub(crate) fn ledger_error(err: LedgerError) -> A2aError {
    match err {
        LedgerError::Full => A2aError::UnsupportedOperation(
            "the remote task limit of this tenant is reached; try again later".into(),
        ),
        LedgerError::BadPageToken => A2aError::InvalidParams("invalid pageToken".into()),
        LedgerError::Unavailable(why) => {
            tracing::warn!(%why, "remote task ledger unavailable");
            A2aError::Internal
        }
    }
}

/// The `code` of an upstream error object (0 when unreadable: the envelope was checked).
pub(crate) fn error_code(error: &[u8]) -> i64 {
    #[derive(serde::Deserialize)]
    struct Code {
        code: i64,
    }
    serde_json::from_slice::<Code>(error).map_or(0, |c| c.code)
}
