//! The MCP protocol versions this runtime speaks, as a type: [`ProtocolVersion`], the [`Era`]
//! each belongs to, and the lists the handshake and the stateless era accept.
//!
//! A version is read from the wire once ([`ProtocolVersion::parse`]) and travels as a `Copy`
//! enum: in session records (stored as [`ProtocolVersion::as_str`] text, so records written by
//! an older build stay readable), in the `Scope` a method sees, in the priming decision. Also
//! the verdicts on the stateless-era routing headers ([`HeaderMismatch`], SEP-2243), which the
//! error table in `rescue.rs` answers with -32020.
//!
//! A leaf: imports nothing from the crate, so every layer (session, mcp, transport, http) can
//! use it without an import running back up the layers. Must not know methods, statuses or
//! sockets.

/// Which protocol era a request belongs to (`transport/streamable.rs` classifies each request,
/// body first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Era {
    /// 2024-11-05 … 2025-11-25: `initialize`, optional sessions.
    Handshake,
    /// 2026-07-28: per-request `_meta`, no sessions.
    Stateless,
}

/// One MCP protocol version this runtime implements. Ordered by date, oldest first.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum ProtocolVersion {
    /// 2024-11-05: the HTTP+SSE transport (`/sse`, `/messages`).
    V2024_11_05,
    /// 2025-03-26: Streamable HTTP; the default when a handshake-era request names none.
    V2025_03_26,
    /// 2025-06-18: the `MCP-Protocol-Version` header.
    V2025_06_18,
    /// 2025-11-25: SSE answers open with a priming event.
    V2025_11_25,
    /// 2026-07-28: the stateless era (`_meta` on every request, no sessions).
    V2026_07_28,
}

impl ProtocolVersion {
    /// Every version, oldest first.
    pub const ALL: [Self; 5] = [
        Self::V2024_11_05,
        Self::V2025_03_26,
        Self::V2025_06_18,
        Self::V2025_11_25,
        Self::V2026_07_28,
    ];

    /// The handshake-era versions, newest first (the first is what an `initialize` naming an
    /// unknown version is answered with).
    pub const HANDSHAKE: &'static [Self] = &[
        Self::V2025_11_25,
        Self::V2025_06_18,
        Self::V2025_03_26,
        Self::V2024_11_05,
    ];

    /// The stateless-era versions, newest first.
    #[cfg(test)]
    pub(crate) const STATELESS: &'static [Self] = &[Self::V2026_07_28];

    /// Every version newest first, stateless era before handshake era: the order of
    /// `supportedVersions` in `server/discover` and of `data.supported` in -32022 (the Python
    /// SDK's probe falls back to `initialize` when it sees handshake versions there).
    pub(crate) const SUPPORTED: &'static [Self] = &[
        Self::V2026_07_28,
        Self::V2025_11_25,
        Self::V2025_06_18,
        Self::V2025_03_26,
        Self::V2024_11_05,
    ];

    /// The version assumed when a handshake-era request names none and has no session (MCP
    /// 2025-11-25, Transports, "Protocol Version Header": "the server SHOULD assume protocol
    /// version 2025-03-26").
    pub(crate) const DEFAULT_HANDSHAKE: Self = Self::V2025_03_26;

    /// The first version whose SSE answers open with a priming event (MCP 2025-11-25,
    /// Transports, "Resumability and Redelivery"; older clients parse the empty `data` as JSON
    /// and fail).
    pub(crate) const PRIMING_SINCE: Self = Self::V2025_11_25;

    /// The version named by `text` exactly (no trimming, no case folding); `None` for any
    /// version this build does not implement.
    pub fn parse(text: &[u8]) -> Option<Self> {
        // One match (no loop over `ALL`): this runs on every request naming a version.
        match text {
            b"2024-11-05" => Some(Self::V2024_11_05),
            b"2025-03-26" => Some(Self::V2025_03_26),
            b"2025-06-18" => Some(Self::V2025_06_18),
            b"2025-11-25" => Some(Self::V2025_11_25),
            b"2026-07-28" => Some(Self::V2026_07_28),
            _ => None,
        }
    }

    /// Like [`parse`](Self::parse), accepting only versions of `era`.
    pub(crate) fn parse_in(era: Era, text: &[u8]) -> Option<Self> {
        Self::parse(text).filter(|version| version.era() == era)
    }

    /// The wire text, e.g. `"2025-11-25"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::V2024_11_05 => "2024-11-05",
            Self::V2025_03_26 => "2025-03-26",
            Self::V2025_06_18 => "2025-06-18",
            Self::V2025_11_25 => "2025-11-25",
            Self::V2026_07_28 => "2026-07-28",
        }
    }

    /// The era this version belongs to.
    pub const fn era(self) -> Era {
        match self {
            Self::V2026_07_28 => Era::Stateless,
            _ => Era::Handshake,
        }
    }

    /// Whether SSE answers of a session at this version open with a priming event.
    pub(crate) fn has_priming(self) -> bool {
        self >= Self::PRIMING_SINCE
    }
}

impl std::fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A version equals its wire text.
impl PartialEq<str> for ProtocolVersion {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

/// A version equals its wire text.
impl PartialEq<&str> for ProtocolVersion {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// Why a stateless-era routing header does not agree with the body (SEP-2243; -32020
/// HeaderMismatch on HTTP 400). Each names the header's label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum HeaderMismatch {
    /// A required header is absent.
    #[error("required header {0} is missing")]
    Missing(&'static str),
    /// The header appears more than once.
    #[error("header {0} appears more than once")]
    Duplicate(&'static str),
    /// The header is not visible ASCII, or its Base64 sentinel does not decode to UTF-8.
    #[error("header {0} is malformed")]
    Malformed(&'static str),
    /// The header's (decoded) value differs from the body.
    #[error("header {0} does not match the request body")]
    Mismatch(&'static str),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, expected: Option<(ProtocolVersion, Era, bool)>) {
        let got = ProtocolVersion::parse(text.as_bytes())
            .map(|version| (version, version.era(), version.has_priming()));
        assert_eq!(got, expected, "{text:?}");
    }

    #[test]
    fn parse_as_str_round_trips_over_all() {
        for version in ProtocolVersion::ALL {
            assert_eq!(
                ProtocolVersion::parse(version.as_str().as_bytes()),
                Some(version)
            );
            assert_eq!(version.to_string(), version.as_str());
            assert!(version == version.as_str());
        }
        // ALL is ordered by date, and the order of the enum is the order of the dates.
        for pair in ProtocolVersion::ALL.windows(2) {
            assert!(pair[0] < pair[1] && pair[0].as_str() < pair[1].as_str());
        }
    }

    #[test]
    fn versions_eras_and_priming() {
        use Era::{Handshake, Stateless};
        use ProtocolVersion as V;
        check("2024-11-05", Some((V::V2024_11_05, Handshake, false)));
        check("2025-03-26", Some((V::V2025_03_26, Handshake, false)));
        check("2025-06-18", Some((V::V2025_06_18, Handshake, false)));
        check("2025-11-25", Some((V::V2025_11_25, Handshake, true)));
        check("2026-07-28", Some((V::V2026_07_28, Stateless, true)));
        check("", None);
        check("2024-10-07", None);
        check("2099-01-01", None);
        check("2025-11-25 ", None);
        check(" 2025-11-25", None);
        check("2025-11-2", None);
        check("2025-11-250", None);
        check("v2025-11-25", None);
    }

    #[test]
    fn lists_hold_each_era_newest_first() {
        let newest_first = |list: &[ProtocolVersion]| list.windows(2).all(|w| w[0] > w[1]);
        assert!(newest_first(ProtocolVersion::HANDSHAKE));
        assert!(newest_first(ProtocolVersion::STATELESS));
        assert!(newest_first(ProtocolVersion::SUPPORTED));
        assert_eq!(ProtocolVersion::SUPPORTED.len(), ProtocolVersion::ALL.len());
        for version in ProtocolVersion::ALL {
            let list = match version.era() {
                Era::Handshake => ProtocolVersion::HANDSHAKE,
                Era::Stateless => ProtocolVersion::STATELESS,
            };
            assert!(list.contains(&version), "{version}");
            assert_eq!(
                ProtocolVersion::parse_in(version.era(), version.as_str().as_bytes()),
                Some(version)
            );
        }
        assert_eq!(
            ProtocolVersion::parse_in(Era::Handshake, b"2026-07-28"),
            None
        );
        assert_eq!(
            ProtocolVersion::parse_in(Era::Stateless, b"2025-11-25"),
            None
        );
        assert_eq!(ProtocolVersion::DEFAULT_HANDSHAKE.as_str(), "2025-03-26");
        assert_eq!(ProtocolVersion::DEFAULT_HANDSHAKE.era(), Era::Handshake);
    }

    #[test]
    fn header_mismatches_name_their_header() {
        for mismatch in [
            HeaderMismatch::Missing("Mcp-Name"),
            HeaderMismatch::Duplicate("Mcp-Name"),
            HeaderMismatch::Malformed("Mcp-Name"),
            HeaderMismatch::Mismatch("Mcp-Name"),
        ] {
            assert!(mismatch.to_string().contains("Mcp-Name"));
        }
    }
}
