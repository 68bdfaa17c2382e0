//! Session records and the owner identity a session (or stream) is bound to.
//!
//! Owns the shape of what a store keeps per session and the compact [`OwnerKey`] that binds a
//! session or a stream to its tenant, client application and caller. Must not know how records
//! are stored or expired.

use bytes::Bytes;
use tokio::time::Instant;

use crate::protocol::ProtocolVersion;

/// Who a request comes from: the tenant and client application of its path and the
/// authenticated caller subject. A session answers only to the owner that opened it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owner<'a> {
    /// Tenant id (path segment).
    pub tenant: &'a str,
    /// Client application id (path segment).
    pub client: &'a str,
    /// Authenticated caller subject (`anonymous` on a tenant that lets unauthenticated callers in).
    pub caller: &'a str,
}

impl<'a> Owner<'a> {
    /// An owner from its three parts.
    pub const fn new(tenant: &'a str, client: &'a str, caller: &'a str) -> Self {
        Self {
            tenant,
            client,
            caller,
        }
    }
}

/// An owned [`Owner`] in one allocation: `tenant`, `client` and `caller` concatenated, with the
/// two split points. Records and streams keep this instead of three strings.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct OwnerKey {
    text: Box<str>,
    tenant_len: u32,
    client_len: u32,
}

impl OwnerKey {
    /// Copies `owner`.
    pub fn new(owner: Owner<'_>) -> Self {
        let mut text =
            String::with_capacity(owner.tenant.len() + owner.client.len() + owner.caller.len());
        text.push_str(owner.tenant);
        text.push_str(owner.client);
        text.push_str(owner.caller);
        Self {
            text: text.into_boxed_str(),
            // Lengths beyond u32 are impossible for path segments and subjects that fit in a
            // request; saturating keeps a hostile length from wrapping into a false match.
            tenant_len: u32::try_from(owner.tenant.len()).unwrap_or(u32::MAX),
            client_len: u32::try_from(owner.client.len()).unwrap_or(u32::MAX),
        }
    }

    /// The three parts.
    pub fn get(&self) -> Owner<'_> {
        let tenant_end = self.tenant_len as usize;
        let client_end = tenant_end + self.client_len as usize;
        Owner {
            tenant: self.text.get(..tenant_end).unwrap_or_default(),
            client: self.text.get(tenant_end..client_end).unwrap_or_default(),
            caller: self.text.get(client_end..).unwrap_or_default(),
        }
    }

    /// True when `owner` is exactly this owner.
    pub(crate) fn is(&self, owner: Owner<'_>) -> bool {
        self.get() == owner
    }

    /// True when this owner belongs to `tenant` and (when given) `client`.
    pub(crate) fn is_within(&self, tenant: &str, client: Option<&str>) -> bool {
        let mine = self.get();
        mine.tenant == tenant && client.is_none_or(|client| mine.client == client)
    }
}

impl std::fmt::Debug for OwnerKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.get().fmt(f)
    }
}

/// What a new session starts with.
#[derive(Debug, Clone, Copy)]
pub struct NewSession<'a> {
    /// Who opens it.
    pub owner: Owner<'a>,
    /// The negotiated protocol version (one of [`ProtocolVersion::HANDSHAKE`]).
    pub version: ProtocolVersion,
    /// The client's `clientInfo`, raw JSON (copied: the record never pins a request buffer).
    pub client_info: &'a [u8],
    /// The client's `capabilities`, raw JSON (copied).
    pub capabilities: &'a [u8],
}

/// What a store keeps per session (under its id: the id is the map's key, not a field).
#[derive(Debug, Clone)]
pub(crate) struct SessionRecord {
    /// Tenant, client application and caller that opened it.
    pub owner: OwnerKey,
    /// The negotiated protocol version.
    pub version: ProtocolVersion,
    /// `clientInfo`, raw JSON (exactly sized copy).
    pub client_info: Bytes,
    /// `capabilities`, raw JSON (exactly sized copy).
    pub capabilities: Bytes,
    /// When it was created.
    pub created: Instant,
    /// When a request last named it (validation refreshes this).
    pub last_seen: Instant,
    /// True once `notifications/initialized` arrived.
    pub initialized: bool,
}

impl SessionRecord {
    /// A fresh record for `new`, created now.
    pub(crate) fn new(new: NewSession<'_>, now: Instant) -> Self {
        Self {
            owner: OwnerKey::new(new.owner),
            version: new.version,
            client_info: copy_exact(new.client_info),
            capabilities: copy_exact(new.capabilities),
            created: now,
            last_seen: now,
            initialized: false,
        }
    }

    /// What a validation hands back.
    pub(crate) fn info(&self) -> SessionInfo {
        SessionInfo {
            version: self.version,
            initialized: self.initialized,
            client_info: self.client_info.clone(),
            capabilities: self.capabilities.clone(),
        }
    }

    /// True when the session has expired at `now`: idle longer than `idle`, or never
    /// initialized within `init_timeout` of its creation.
    pub(crate) fn is_expired(
        &self,
        now: Instant,
        idle: std::time::Duration,
        init_timeout: std::time::Duration,
    ) -> bool {
        now.saturating_duration_since(self.last_seen) >= idle
            || (!self.initialized && now.saturating_duration_since(self.created) >= init_timeout)
    }
}

/// What the transport learns from a successful validation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionInfo {
    /// The negotiated protocol version (decides priming events and the default version header).
    pub version: ProtocolVersion,
    /// True once `notifications/initialized` arrived.
    pub initialized: bool,
    /// `clientInfo`, raw JSON.
    pub client_info: Bytes,
    /// `capabilities`, raw JSON.
    pub capabilities: Bytes,
}

/// The handshake data an `initialize` sets on a session minted before it (the 2024-11-05
/// `/sse` transport mints the session when the stream opens).
#[derive(Debug, Clone, Copy)]
pub struct Handshake<'a> {
    /// The negotiated protocol version.
    pub version: ProtocolVersion,
    /// `clientInfo`, raw JSON (copied).
    pub client_info: &'a [u8],
    /// `capabilities`, raw JSON (copied).
    pub capabilities: &'a [u8],
}

/// An exactly sized copy (an empty slice costs nothing).
fn copy_exact(bytes: &[u8]) -> Bytes {
    if bytes.is_empty() {
        Bytes::new()
    } else {
        Bytes::copy_from_slice(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(tenant: &str, client: &str, caller: &str) {
        let owner = Owner::new(tenant, client, caller);
        let key = OwnerKey::new(owner);
        assert_eq!(key.get(), owner);
        assert!(key.is(owner));
        assert!(key.is_within(tenant, Some(client)));
        assert!(key.is_within(tenant, None));
    }

    #[test]
    fn owner_key_round_trips() {
        check("t", "c", "anonymous");
        check("", "", "");
        check("tenant-a", "client.b", "user@example.com");
        check("é", "ü", "日本");
    }

    #[test]
    fn owner_key_splits_are_part_of_identity() {
        // Same concatenation, different split points: different owners.
        let a = OwnerKey::new(Owner::new("ab", "c", "x"));
        assert!(!a.is(Owner::new("a", "bc", "x")));
        assert!(!a.is_within("a", None));
        assert!(!a.is_within("ab", Some("cx")));
        assert_ne!(a, OwnerKey::new(Owner::new("a", "bc", "x")));
    }
}
