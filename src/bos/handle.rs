//! Signed context handles: `bch_` + base64url(payload) + `.` + base64url(HMAC-SHA256).
//!
//! The payload is a version byte followed by the tenant and the context id, each prefixed with
//! its length (u32, big-endian). The MAC covers a domain label, the payload (length-prefixed)
//! and the caller id, so the caller is bound without being written into the handle: a handle
//! verifies only for the caller it was issued to, and a caller cannot read another caller's id
//! out of one. Every instance that shares the secret verifies every other's handles; there is no
//! state and no expiry (removing or reassigning the context in the configuration is what
//! revokes its handles, see [`super::resolve`]).
//!
//! Must not reveal why a handle is refused: every refusal displays as "unknown context", and
//! the MAC comparison is constant-time. Handles are peer input: parsing never panics, and
//! input longer than [`MAX_HANDLE_LEN`] is refused before it is decoded.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

type HmacSha256 = Hmac<Sha256>;

/// Every handle starts with this.
pub(crate) const HANDLE_PREFIX: &str = "bch_";

/// Longest handle accepted; longer input is refused without being decoded.
pub(crate) const MAX_HANDLE_LEN: usize = 512;

/// The payload format this code issues and accepts.
const VERSION: u8 = 1;

/// Separates handle MACs from any other use of the same secret.
const DOMAIN: &[u8] = b"sluice/bos/context-handle\0";

/// Length of a base64url-encoded HMAC-SHA256 (32 bytes, unpadded).
const MAC_B64_LEN: usize = 43;

/// Why a handle was refused. Both variants display as "unknown context", so the message a
/// client sees never says whether a context exists (for it or anyone else); the variants only
/// help logs and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum HandleError {
    /// Not shaped like a handle: prefix, length, base64, version or payload layout.
    #[error("unknown context")]
    Malformed,
    /// Well-formed, but not signed with this secret for this caller, or the context is gone.
    #[error("unknown context")]
    UnknownContext,
}

/// The secret handles are signed with, ready to issue and verify.
#[derive(Clone)]
pub(crate) struct HandleKey {
    mac: HmacSha256,
}

impl std::fmt::Debug for HandleKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HandleKey(..)")
    }
}

impl HandleKey {
    /// Keys HMAC-SHA256 with `secret` (use at least 32 random bytes; every instance that must
    /// accept the handles needs the same secret).
    pub(crate) fn new(secret: &[u8]) -> Self {
        // HMAC accepts keys of any length (RFC 2104 §2), so this never fails; the fallback keeps
        // that promise without a panic path.
        let mac = HmacSha256::new_from_slice(secret)
            .unwrap_or_else(|_| <HmacSha256 as hmac::digest::KeyInit>::new(&Default::default()));
        Self { mac }
    }

    /// A handle for `context_id` of `tenant`, valid only when presented by `caller`.
    ///
    /// With ids within their configured bounds (64 bytes each for tenant and context ids) the
    /// handle is at most 231 characters, well under [`MAX_HANDLE_LEN`]; the caller id does not
    /// count, as it is not written into the handle.
    pub(crate) fn issue(&self, tenant: &str, context_id: &str, caller: &str) -> String {
        let payload = encode_payload(tenant, context_id);
        let tag = self.tag(&payload, caller);
        let mut handle = String::with_capacity(
            HANDLE_PREFIX.len() + (payload.len() * 4).div_ceil(3) + 1 + MAC_B64_LEN,
        );
        handle.push_str(HANDLE_PREFIX);
        URL_SAFE_NO_PAD.encode_string(&payload, &mut handle);
        handle.push('.');
        URL_SAFE_NO_PAD.encode_string(tag, &mut handle);
        handle
    }

    /// The `(tenant, context_id)` a handle names, if `caller` may use it.
    ///
    /// The caller must still check that the context exists and still belongs to `caller`
    /// ([`super::resolve`] does both).
    pub(crate) fn verify(
        &self,
        handle: &str,
        caller: &str,
    ) -> Result<(String, String), HandleError> {
        if handle.len() > MAX_HANDLE_LEN {
            return Err(HandleError::Malformed);
        }
        let body = handle
            .strip_prefix(HANDLE_PREFIX)
            .ok_or(HandleError::Malformed)?;
        let (payload_b64, tag_b64) = body.split_once('.').ok_or(HandleError::Malformed)?;
        if tag_b64.len() != MAC_B64_LEN {
            return Err(HandleError::Malformed);
        }
        let payload = URL_SAFE_NO_PAD
            .decode(payload_b64)
            .map_err(|_| HandleError::Malformed)?;
        let mut presented = [0u8; 32];
        let n = URL_SAFE_NO_PAD
            .decode_slice(tag_b64, &mut presented)
            .map_err(|_| HandleError::Malformed)?;
        if n != presented.len() {
            return Err(HandleError::Malformed);
        }
        // Authenticate before interpreting the payload, in constant time, so nothing about an
        // unauthenticated payload (or how close a forged tag came) is observable.
        let expected = self.tag(&payload, caller);
        if !bool::from(expected.as_slice().ct_eq(&presented)) {
            return Err(HandleError::UnknownContext);
        }
        decode_payload(&payload).ok_or(HandleError::Malformed)
    }

    /// HMAC(secret, DOMAIN ‖ len(payload) ‖ payload ‖ caller). The length prefix makes the
    /// input unambiguous: no other (payload, caller) pair gives the same bytes.
    fn tag(&self, payload: &[u8], caller: &str) -> [u8; 32] {
        let mut mac = self.mac.clone();
        mac.update(DOMAIN);
        mac.update(&len_prefix(payload.len()));
        mac.update(payload);
        mac.update(caller.as_bytes());
        mac.finalize().into_bytes().into()
    }
}

/// A length as 4 big-endian bytes (saturating; no configured id comes near 4 GiB).
fn len_prefix(len: usize) -> [u8; 4] {
    u32::try_from(len).unwrap_or(u32::MAX).to_be_bytes()
}

/// `VERSION ‖ len(tenant) ‖ tenant ‖ len(context_id) ‖ context_id`.
fn encode_payload(tenant: &str, context_id: &str) -> Vec<u8> {
    let mut payload = Vec::with_capacity(1 + 4 + tenant.len() + 4 + context_id.len());
    payload.push(VERSION);
    for part in [tenant, context_id] {
        payload.extend_from_slice(&len_prefix(part.len()));
        payload.extend_from_slice(part.as_bytes());
    }
    payload
}

/// The inverse of [`encode_payload`]; `None` for any other layout (trailing bytes included).
fn decode_payload(payload: &[u8]) -> Option<(String, String)> {
    let (&version, mut rest) = payload.split_first()?;
    if version != VERSION {
        return None;
    }
    let mut take = || -> Option<String> {
        let (len, tail) = rest.split_first_chunk::<4>()?;
        let len = usize::try_from(u32::from_be_bytes(*len)).ok()?;
        if len > tail.len() {
            return None;
        }
        let (part, tail) = tail.split_at(len);
        rest = tail;
        String::from_utf8(part.to_vec()).ok()
    };
    let tenant = take()?;
    let context_id = take()?;
    rest.is_empty().then_some((tenant, context_id))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const SECRET: &[u8] = b"0123456789abcdef0123456789abcdef";

    fn key() -> HandleKey {
        HandleKey::new(SECRET)
    }

    /// Checks that `handle` is refused for `caller` with `expected`.
    fn check_refused(handle: &str, caller: &str, expected: HandleError) {
        assert_eq!(key().verify(handle, caller), Err(expected), "{handle:?}");
    }

    #[test]
    fn round_trip() {
        let handle = key().issue("acme", "ops-eu", "apikey:demo");
        assert!(handle.starts_with(HANDLE_PREFIX));
        assert!(handle
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.')));
        assert_eq!(
            key().verify(&handle, "apikey:demo"),
            Ok(("acme".to_owned(), "ops-eu".to_owned()))
        );
        // Another instance with the same secret accepts it: no state.
        assert!(HandleKey::new(SECRET)
            .verify(&handle, "apikey:demo")
            .is_ok());
    }

    #[test]
    fn longest_configured_ids_fit() {
        let longest = "x".repeat(64);
        let handle = key().issue(&longest, &longest, &"c".repeat(4096));
        assert_eq!(handle.len(), 231);
        assert!(key().verify(&handle, &"c".repeat(4096)).is_ok());
    }

    #[test]
    fn caller_id_is_not_readable_from_the_handle() {
        let handle = key().issue("acme", "ops", "jwt:https://idp|secret-subject");
        let payload_b64 = handle
            .strip_prefix(HANDLE_PREFIX)
            .and_then(|b| b.split_once('.'))
            .map(|(p, _)| p)
            .unwrap();
        let payload = URL_SAFE_NO_PAD.decode(payload_b64).unwrap();
        assert!(!payload.windows(6).any(|w| w == b"secret"));
    }

    #[test]
    fn another_caller_is_refused_like_a_forgery() {
        let handle = key().issue("acme", "ops", "apikey:alice");
        check_refused(&handle, "apikey:bob", HandleError::UnknownContext);
        check_refused(&handle, "apikey:alic", HandleError::UnknownContext);
        check_refused(&handle, "", HandleError::UnknownContext);
        assert_eq!(
            HandleError::UnknownContext.to_string(),
            HandleError::Malformed.to_string()
        );
    }

    #[test]
    fn different_secret_is_refused() {
        let handle = key().issue("acme", "ops", "apikey:alice");
        assert_eq!(
            HandleKey::new(b"another secret").verify(&handle, "apikey:alice"),
            Err(HandleError::UnknownContext)
        );
    }

    #[test]
    fn tampering_is_refused() {
        let handle = key().issue("acme", "ops", "apikey:alice");
        let (payload_b64, tag_b64) = handle[HANDLE_PREFIX.len()..].split_once('.').unwrap();

        // Another tenant/context, re-encoded, with the original tag.
        let forged = URL_SAFE_NO_PAD.encode(encode_payload("evil", "ops"));
        check_refused(
            &format!("{HANDLE_PREFIX}{forged}.{tag_b64}"),
            "apikey:alice",
            HandleError::UnknownContext,
        );
        // One flipped tag character.
        let mut tag = tag_b64.to_owned().into_bytes();
        tag[0] = if tag[0] == b'A' { b'B' } else { b'A' };
        let tag = String::from_utf8(tag).unwrap();
        check_refused(
            &format!("{HANDLE_PREFIX}{payload_b64}.{tag}"),
            "apikey:alice",
            HandleError::UnknownContext,
        );
        // Truncations at every length.
        for end in 0..handle.len() {
            assert!(key().verify(&handle[..end], "apikey:alice").is_err());
        }
        // Shape errors.
        for bad in [
            "",
            "bch_",
            "bch_.",
            "garbage",
            "bch_!!!.!!!",
            &handle.replacen("bch_", "bcx_", 1),
            &format!("{handle}."),
            &format!("{handle}A"),
            &handle.replace('.', ""),
            &"x".repeat(MAX_HANDLE_LEN + 1),
        ] {
            check_refused(bad, "apikey:alice", HandleError::Malformed);
        }
    }

    #[test]
    fn a_validly_signed_but_unknown_layout_is_malformed() {
        // Trailing bytes and another version, signed with the real key: still refused.
        let mut payload = encode_payload("acme", "ops");
        payload.push(0);
        let tag = key().tag(&payload, "c");
        let handle = format!(
            "{HANDLE_PREFIX}{}.{}",
            URL_SAFE_NO_PAD.encode(&payload),
            URL_SAFE_NO_PAD.encode(tag)
        );
        check_refused(&handle, "c", HandleError::Malformed);
        let mut payload = encode_payload("acme", "ops");
        payload[0] = 2;
        let tag = key().tag(&payload, "c");
        let handle = format!(
            "{HANDLE_PREFIX}{}.{}",
            URL_SAFE_NO_PAD.encode(&payload),
            URL_SAFE_NO_PAD.encode(tag)
        );
        check_refused(&handle, "c", HandleError::Malformed);
    }

    proptest! {
        #[test]
        fn round_trips_any_ids(tenant in ".{0,40}", context in ".{0,40}", caller in ".{0,40}") {
            let handle = key().issue(&tenant, &context, &caller);
            prop_assert!(handle.len() <= MAX_HANDLE_LEN);
            prop_assert_eq!(key().verify(&handle, &caller), Ok((tenant, context)));
        }

        #[test]
        fn random_strings_are_refused(input in ".{0,600}") {
            prop_assert!(key().verify(&input, "apikey:alice").is_err());
        }

        #[test]
        fn random_handle_shaped_strings_are_refused(
            payload in "[A-Za-z0-9_-]{0,80}",
            tag in "[A-Za-z0-9_-]{43}",
        ) {
            let input = format!("{HANDLE_PREFIX}{payload}.{tag}");
            prop_assert!(key().verify(&input, "apikey:alice").is_err());
        }

        #[test]
        fn any_single_byte_change_is_refused(idx in 0usize..200, byte in 0x21u8..0x7f) {
            let handle = key().issue("acme", "ops", "apikey:alice");
            let idx = idx % handle.len();
            prop_assume!(handle.as_bytes()[idx] != byte);
            let mut tampered = handle.into_bytes();
            tampered[idx] = byte;
            let tampered = String::from_utf8(tampered).unwrap();
            prop_assert!(key().verify(&tampered, "apikey:alice").is_err());
        }
    }
}
