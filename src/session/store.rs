//! The `SessionStore` contract: the seam between the transport and where session state lives
//! (process-local maps, or Redis shared by several instances).
//!
//! Owns the contract only; implementations live in `local.rs` and `redis/store.rs`. Callers
//! go through the [`Sessions`](super::Sessions) front, which dispatches by `match` to each
//! store's implementation of this trait (static calls: no boxed futures on the hot path).

use std::future::Future;

use super::{Handshake, NewSession, Owner, SessionError, SessionId, SessionInfo};

/// Where sessions live. Every method is async because a shared store does IO.
///
/// The contract every implementation keeps:
/// - **Ownership is identity.** A session answers only to the exact [`Owner`] (tenant, client,
///   caller) that created it. Any mismatch fails with [`SessionError::Foreign`], with no side
///   effect (last-seen is not refreshed, nothing is deleted); the transport answers it exactly
///   like [`SessionError::NotFound`] (no oracle) and audits it as a security event.
/// - **Expired is unknown.** A session idle for longer than the idle timeout, or not
///   initialized within the init timeout, is `NotFound` from the moment it expires, whether or
///   not a sweep has removed it yet.
/// - **The per-tenant and per-caller caps are never exceeded**, even under concurrent creates
///   from any number of tasks (or instances): a create that would exceed the tenant's fails with
///   [`SessionError::TenantCapReached`], one that would exceed its caller's (same tenant, client
///   and caller) with [`SessionError::CallerCapReached`], and either leaves nothing behind.
/// - **Removal releases everything.** A deleted or expired session leaves no per-session memory
///   in the store.
pub(crate) trait SessionStore: Send + Sync {
    /// Mints a new session for `new.owner`, counting it against the tenant's cap.
    fn create(
        &self,
        new: NewSession<'_>,
    ) -> impl Future<Output = Result<SessionId, SessionError>> + Send;

    /// Checks that `id` exists, is not expired and belongs to `owner`; refreshes its last-seen
    /// time and returns what the transport needs.
    fn validate(
        &self,
        id: &SessionId,
        owner: Owner<'_>,
    ) -> impl Future<Output = Result<SessionInfo, SessionError>> + Send;

    /// Records that `notifications/initialized` arrived (ends the init timeout). Same
    /// ownership rule as `validate`, and refreshes last-seen.
    fn mark_initialized(
        &self,
        id: &SessionId,
        owner: Owner<'_>,
    ) -> impl Future<Output = Result<(), SessionError>> + Send;

    /// Sets the negotiated version and client data on a session minted before its
    /// `initialize` (the 2024-11-05 `/sse` transport). Same ownership rule as `validate`.
    fn set_handshake(
        &self,
        id: &SessionId,
        owner: Owner<'_>,
        handshake: Handshake<'_>,
    ) -> impl Future<Output = Result<(), SessionError>> + Send;

    /// Ends the session. Same ownership rule as `validate`: `NotFound` when the id is unknown,
    /// expired, or owned by someone else.
    fn delete(
        &self,
        id: &SessionId,
        owner: Owner<'_>,
    ) -> impl Future<Output = Result<(), SessionError>> + Send;

    /// Live sessions of `tenant` (what the cap counts).
    fn count(&self, tenant: &str) -> impl Future<Output = Result<usize, SessionError>> + Send;

    /// Removes every session expired now and returns their ids, so the caller can close their
    /// streams. Called periodically by the sweeper.
    fn expire(&self) -> impl Future<Output = Result<Vec<SessionId>, SessionError>> + Send;
}
