//! The wire form of what the Redis backplane publishes: routed messages, session closes,
//! catalog invalidations and configuration notices.
//!
//! Owns the byte layout of each frame and its decoding, which never panics on what some other
//! Redis client may have published. Pure functions over buffers: must not do IO or know
//! Redis, SSE or JSON-RPC (a routed message is opaque bytes).
//!
//! A frame addressed to one session's streams (deliver, close) is its kind byte, the raw bytes
//! of the session id, three big-endian `u16` lengths (tenant, client, caller), those three
//! strings, and the message. An invalidation is its kind byte and the tenant; a configuration
//! notice its kind byte, the origin instance, `:` and the version in decimal; a session-gone
//! notice its kind byte and the raw bytes of the session id.

use bytes::{BufMut, Bytes, BytesMut};

use crate::session::{Owner, SessionId, SESSION_ID_BYTES};

/// First byte of a routed message for one session's stream.
const KIND_DELIVER: u8 = 1;

/// First byte of a catalog invalidation.
const KIND_INVALIDATE: u8 = 2;

/// First byte of a "close this session's streams" message (same layout as a deliver frame,
/// empty message).
pub(super) const KIND_CLOSE: u8 = 3;

/// First byte of a configuration notice: `{kind}{origin instance}:{version in decimal}`.
pub(super) const KIND_RELOAD: u8 = 4;

/// First byte of a "session deleted or changed" notice: `{kind}{session id, raw bytes}`. The
/// store's scripts publish it (`store.rs`); every instance's subscriber empties its session
/// cache entry (`cache.rs`).
pub(super) const KIND_SESSION_GONE: u8 = 5;

/// Fixed part of a deliver frame: kind, session id, three `u16` lengths.
const DELIVER_HEADER: usize = 1 + SESSION_ID_BYTES + 3 * 2;

/// A routed message, decoded from what arrived on this instance's channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Routed<'a> {
    /// The session whose stream should get it.
    pub session: SessionId,
    /// Who the stream must belong to.
    pub owner: Owner<'a>,
    /// One JSON-RPC message.
    pub message: &'a [u8],
}

/// Why a pub/sub payload was not a message of ours.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum FrameError {
    /// Shorter than its header or its stated lengths.
    #[error("truncated backplane frame")]
    Truncated,
    /// Unknown first byte.
    #[error("unknown backplane frame kind {0}")]
    UnknownKind(u8),
    /// An owner part is not UTF-8.
    #[error("backplane frame owner is not UTF-8")]
    NotUtf8,
    /// An owner part is longer than a frame can carry.
    #[error("owner part longer than 65535 bytes")]
    TooLong,
}

/// Encodes a message for `session`'s stream owned by `owner`.
pub(crate) fn encode_deliver(
    owner: Owner<'_>,
    session: &SessionId,
    message: &[u8],
) -> Result<Bytes, FrameError> {
    encode_routed(KIND_DELIVER, owner, session, message)
}

/// Encodes a frame addressed to one session's streams (`KIND_DELIVER` or `KIND_CLOSE`).
pub(super) fn encode_routed(
    kind: u8,
    owner: Owner<'_>,
    session: &SessionId,
    message: &[u8],
) -> Result<Bytes, FrameError> {
    let len = |part: &str| u16::try_from(part.len()).map_err(|_| FrameError::TooLong);
    let lens = [len(owner.tenant)?, len(owner.client)?, len(owner.caller)?];
    let mut frame = BytesMut::with_capacity(
        DELIVER_HEADER
            + owner.tenant.len()
            + owner.client.len()
            + owner.caller.len()
            + message.len(),
    );
    frame.put_u8(kind);
    frame.put_slice(session.as_bytes());
    for part_len in lens {
        frame.put_u16(part_len);
    }
    frame.put_slice(owner.tenant.as_bytes());
    frame.put_slice(owner.client.as_bytes());
    frame.put_slice(owner.caller.as_bytes());
    frame.put_slice(message);
    Ok(frame.freeze())
}

/// Decodes a deliver frame (anything else is an error, never a panic). The subscriber reads
/// both routed kinds with [`decode_routed`]; this is the tests' view of one.
#[cfg(test)]
pub(crate) fn decode_deliver(frame: &[u8]) -> Result<Routed<'_>, FrameError> {
    match decode_routed(frame)? {
        (KIND_DELIVER, routed) => Ok(routed),
        (kind, _) => Err(FrameError::UnknownKind(kind)),
    }
}

/// Decodes a frame addressed to one session's streams: its kind (`KIND_DELIVER` or
/// `KIND_CLOSE`) and content.
pub(super) fn decode_routed(frame: &[u8]) -> Result<(u8, Routed<'_>), FrameError> {
    let (&kind, rest) = frame.split_first().ok_or(FrameError::Truncated)?;
    if kind != KIND_DELIVER && kind != KIND_CLOSE {
        return Err(FrameError::UnknownKind(kind));
    }
    let (id, rest) = rest
        .split_first_chunk::<SESSION_ID_BYTES>()
        .ok_or(FrameError::Truncated)?;
    let (lens, mut rest) = rest.split_first_chunk::<6>().ok_or(FrameError::Truncated)?;
    let mut parts = [""; 3];
    for (index, part) in parts.iter_mut().enumerate() {
        let at = index * 2;
        let len = usize::from(u16::from_be_bytes([
            lens.get(at).copied().unwrap_or(0),
            lens.get(at + 1).copied().unwrap_or(0),
        ]));
        let (text, tail) = rest.split_at_checked(len).ok_or(FrameError::Truncated)?;
        *part = std::str::from_utf8(text).map_err(|_| FrameError::NotUtf8)?;
        rest = tail;
    }
    let [tenant, client, caller] = parts;
    Ok((
        kind,
        Routed {
            session: SessionId::from_bytes(*id),
            owner: Owner::new(tenant, client, caller),
            message: rest,
        },
    ))
}

/// Decodes a configuration notice: the instance that reloaded and the new version.
pub(super) fn decode_reload(frame: &[u8]) -> Result<(&[u8], u64), FrameError> {
    let Some((&KIND_RELOAD, rest)) = frame.split_first() else {
        return Err(FrameError::Truncated);
    };
    let at = rest
        .iter()
        .rposition(|&byte| byte == b':')
        .ok_or(FrameError::Truncated)?;
    let (origin, version) = rest.split_at(at);
    let version = std::str::from_utf8(version.get(1..).unwrap_or_default())
        .ok()
        .and_then(|digits| digits.parse().ok())
        .ok_or(FrameError::NotUtf8)?;
    Ok((origin, version))
}

/// Encodes a session-gone notice for `session`.
pub(super) fn encode_session_gone(session: &SessionId) -> [u8; 1 + SESSION_ID_BYTES] {
    let mut frame = [KIND_SESSION_GONE; 1 + SESSION_ID_BYTES];
    frame[1..].copy_from_slice(session.as_bytes());
    frame
}

/// Decodes a session-gone notice: the session.
pub(super) fn decode_session_gone(frame: &[u8]) -> Result<SessionId, FrameError> {
    match frame.split_first() {
        Some((&KIND_SESSION_GONE, id)) => <[u8; SESSION_ID_BYTES]>::try_from(id)
            .map(SessionId::from_bytes)
            .map_err(|_| FrameError::Truncated),
        Some((&kind, _)) => Err(FrameError::UnknownKind(kind)),
        None => Err(FrameError::Truncated),
    }
}

/// Encodes a catalog invalidation for `tenant`.
pub(crate) fn encode_invalidate(tenant: &str) -> Bytes {
    let mut frame = BytesMut::with_capacity(1 + tenant.len());
    frame.put_u8(KIND_INVALIDATE);
    frame.put_slice(tenant.as_bytes());
    frame.freeze()
}

/// Decodes a catalog invalidation: the tenant.
pub(crate) fn decode_invalidate(frame: &[u8]) -> Result<&str, FrameError> {
    match frame.split_first() {
        Some((&KIND_INVALIDATE, tenant)) => {
            std::str::from_utf8(tenant).map_err(|_| FrameError::NotUtf8)
        }
        Some((&kind, _)) => Err(FrameError::UnknownKind(kind)),
        None => Err(FrameError::Truncated),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(owner: Owner<'_>, message: &[u8]) {
        let session = SessionId::random();
        let frame = encode_deliver(owner, &session, message).unwrap();
        let routed = decode_deliver(&frame).unwrap();
        assert_eq!(
            routed,
            Routed {
                session,
                owner,
                message
            }
        );
        // Every strict prefix of the header and owner is truncated, never a panic.
        let owner_end =
            DELIVER_HEADER + owner.tenant.len() + owner.client.len() + owner.caller.len();
        for cut in 0..owner_end {
            assert_eq!(
                decode_deliver(frame.get(..cut).unwrap()),
                Err(FrameError::Truncated),
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn deliver_frames_round_trip() {
        check(Owner::new("t", "c", "anonymous"), br#"{"jsonrpc":"2.0"}"#);
        check(Owner::new("", "", ""), b"");
        check(Owner::new("a:b", "é", "user@example.com"), b"\x00\xff");
    }

    #[test]
    fn owner_split_is_part_of_the_frame() {
        let session = SessionId::random();
        let a = encode_deliver(Owner::new("ab", "c", "x"), &session, b"m").unwrap();
        let b = encode_deliver(Owner::new("a", "bc", "x"), &session, b"m").unwrap();
        assert_ne!(a, b);
        assert_eq!(
            decode_deliver(&a).unwrap().owner,
            Owner::new("ab", "c", "x")
        );
    }

    #[test]
    fn session_gone_round_trips_and_refuses_other_lengths() {
        let id = SessionId::random();
        let frame = encode_session_gone(&id);
        assert_eq!(decode_session_gone(&frame), Ok(id));
        assert_eq!(
            decode_session_gone(&frame[..frame.len() - 1]),
            Err(FrameError::Truncated)
        );
        assert_eq!(decode_session_gone(&[]), Err(FrameError::Truncated));
        assert_eq!(
            decode_session_gone(&encode_invalidate("t")),
            Err(FrameError::UnknownKind(KIND_INVALIDATE))
        );
    }

    #[test]
    fn garbage_is_an_error() {
        assert_eq!(decode_deliver(b""), Err(FrameError::Truncated));
        assert_eq!(decode_deliver(b"\x07abc"), Err(FrameError::UnknownKind(7)));
        let mut frame = vec![KIND_DELIVER];
        frame.extend_from_slice(&[0; SESSION_ID_BYTES]);
        frame.extend_from_slice(&[0, 1, 0, 0, 0, 0, 0xff]);
        assert_eq!(decode_deliver(&frame), Err(FrameError::NotUtf8));
        assert_eq!(decode_invalidate(b""), Err(FrameError::Truncated));
        assert_eq!(decode_invalidate(b"\x01t"), Err(FrameError::UnknownKind(1)));
        assert_eq!(
            decode_invalidate(&encode_invalidate("tenant-a")),
            Ok("tenant-a")
        );
    }

    #[test]
    fn oversized_owner_is_refused() {
        let long = "x".repeat(70_000);
        let owner = Owner::new("t", "c", &long);
        assert_eq!(
            encode_deliver(owner, &SessionId::random(), b""),
            Err(FrameError::TooLong)
        );
    }
}
