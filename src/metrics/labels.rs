//! The fixed label sets of the HTTP request metrics: [`RouteLabel`], [`MethodLabel`] and the
//! status-code slots, each a small `Copy` value with a dense index into the counter arrays.
//!
//! Owns only names and indices; must not hold counters (that is `requests.rs`) or format output
//! (that is `render.rs`). Every label value here is a static ASCII string that needs no escaping.

/// Which surface answered a request: one value per route family of `docs/routes.md`, so the series
/// count stays fixed however many tenants and tools there are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RouteLabel {
    /// Streamable HTTP: `POST`/`GET`/`DELETE` on the MCP endpoint.
    Mcp,
    /// Legacy HTTP+SSE: the `GET /sse` stream.
    LegacySse,
    /// Legacy HTTP+SSE: `POST /messages`.
    LegacyMessages,
    /// REST: the tool listing.
    RestTools,
    /// REST: a tool call.
    RestCall,
    /// The BOS platform surface.
    BosPlatform,
    /// A2A: the JSON-RPC endpoint of a client application's agent.
    A2a,
    /// A2A: the public agent card.
    A2aCard,
    /// A2A concentrator: the JSON-RPC proxy of a registered remote agent.
    A2aRemote,
    /// A2A concentrator: the agents list and the synthesized cards.
    A2aRemoteCard,
    /// A2A concentrator: the push relay webhook.
    A2aPushRelay,
    /// OAuth protected-resource metadata.
    ProtectedResource,
    /// The metrics scrape itself.
    Metrics,
    /// Liveness probe.
    Healthz,
    /// Readiness probe.
    Readyz,
    /// `POST /admin/reload`.
    AdminReload,
    /// No route matched.
    NotFound,
    /// Anything else.
    Other,
}

impl RouteLabel {
    /// Every route, in rendering order (the order of the index).
    pub const ALL: [RouteLabel; 18] = [
        RouteLabel::Mcp,
        RouteLabel::LegacySse,
        RouteLabel::LegacyMessages,
        RouteLabel::RestTools,
        RouteLabel::RestCall,
        RouteLabel::BosPlatform,
        RouteLabel::A2a,
        RouteLabel::A2aCard,
        RouteLabel::A2aRemote,
        RouteLabel::A2aRemoteCard,
        RouteLabel::A2aPushRelay,
        RouteLabel::ProtectedResource,
        RouteLabel::Metrics,
        RouteLabel::Healthz,
        RouteLabel::Readyz,
        RouteLabel::AdminReload,
        RouteLabel::NotFound,
        RouteLabel::Other,
    ];

    /// Number of route values; the first dimension of the request arrays.
    pub(crate) const COUNT: usize = Self::ALL.len();

    /// The label value, snake_case.
    pub const fn as_str(self) -> &'static str {
        match self {
            RouteLabel::Mcp => "mcp",
            RouteLabel::LegacySse => "legacy_sse",
            RouteLabel::LegacyMessages => "legacy_messages",
            RouteLabel::RestTools => "rest_tools",
            RouteLabel::RestCall => "rest_call",
            RouteLabel::BosPlatform => "bos_platform",
            RouteLabel::A2a => "a2a",
            RouteLabel::A2aCard => "a2a_card",
            RouteLabel::A2aRemote => "a2a_remote",
            RouteLabel::A2aRemoteCard => "a2a_remote_card",
            RouteLabel::A2aPushRelay => "a2a_push_relay",
            RouteLabel::ProtectedResource => "protected_resource",
            RouteLabel::Metrics => "metrics",
            RouteLabel::Healthz => "healthz",
            RouteLabel::Readyz => "readyz",
            RouteLabel::AdminReload => "admin_reload",
            RouteLabel::NotFound => "not_found",
            RouteLabel::Other => "other",
        }
    }

    /// Dense index in `0..COUNT`, equal to the position in [`RouteLabel::ALL`].
    pub(crate) const fn index(self) -> usize {
        self as usize
    }
}

/// The request method, folded to the few MCP and REST use; `HEAD`, `PUT` and extensions are
/// [`MethodLabel::Other`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MethodLabel {
    /// `GET`.
    Get,
    /// `POST`.
    Post,
    /// `DELETE`.
    Delete,
    /// `OPTIONS` (CORS preflight).
    Options,
    /// Any other method.
    Other,
}

impl MethodLabel {
    /// Every method, in rendering order (the order of the index).
    pub const ALL: [MethodLabel; 5] = [
        MethodLabel::Get,
        MethodLabel::Post,
        MethodLabel::Delete,
        MethodLabel::Options,
        MethodLabel::Other,
    ];

    /// Number of method values; the second dimension of the request arrays.
    pub(crate) const COUNT: usize = Self::ALL.len();

    /// The label value, upper case as on the wire (`other` for the rest).
    pub const fn as_str(self) -> &'static str {
        match self {
            MethodLabel::Get => "GET",
            MethodLabel::Post => "POST",
            MethodLabel::Delete => "DELETE",
            MethodLabel::Options => "OPTIONS",
            MethodLabel::Other => "other",
        }
    }

    /// Dense index in `0..COUNT`, equal to the position in [`MethodLabel::ALL`].
    pub(crate) const fn index(self) -> usize {
        self as usize
    }
}

impl From<&http::Method> for MethodLabel {
    fn from(method: &http::Method) -> Self {
        // `Method` equality on the standard methods compares an enum tag, no string compare.
        if *method == http::Method::GET {
            MethodLabel::Get
        } else if *method == http::Method::POST {
            MethodLabel::Post
        } else if *method == http::Method::DELETE {
            MethodLabel::Delete
        } else if *method == http::Method::OPTIONS {
            MethodLabel::Options
        } else {
            MethodLabel::Other
        }
    }
}

/// The status codes counted under their own label value; every other code is counted as
/// `status="other"` so a peer cannot grow the series set.
pub(crate) const COUNTED_STATUSES: [u16; 19] = [
    200, 202, 204, 400, 401, 403, 404, 405, 406, 409, 413, 415, 421, 429, 500, 501, 502, 503, 504,
];

/// Number of status slots: one per counted code plus `other`; the third dimension of the
/// request counters.
pub(crate) const STATUS_SLOTS: usize = COUNTED_STATUSES.len() + 1;

/// Index of the `other` status slot.
const STATUS_OTHER: usize = COUNTED_STATUSES.len();

/// Label values of the status slots, in index order.
const STATUS_NAMES: [&str; STATUS_SLOTS] = [
    "200", "202", "204", "400", "401", "403", "404", "405", "406", "409", "413", "415", "421",
    "429", "500", "501", "502", "503", "504", "other",
];

/// The slot a status code is counted in.
pub(crate) const fn status_index(status: u16) -> usize {
    match status {
        200 => 0,
        202 => 1,
        204 => 2,
        400 => 3,
        401 => 4,
        403 => 5,
        404 => 6,
        405 => 7,
        406 => 8,
        409 => 9,
        413 => 10,
        415 => 11,
        421 => 12,
        429 => 13,
        500 => 14,
        501 => 15,
        502 => 16,
        503 => 17,
        504 => 18,
        _ => STATUS_OTHER,
    }
}

/// The label value of a status slot.
pub(crate) const fn status_name(slot: usize) -> &'static str {
    STATUS_NAMES[slot]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_match_the_all_arrays() {
        for (i, route) in RouteLabel::ALL.iter().enumerate() {
            assert_eq!(route.index(), i, "{route:?}");
        }
        for (i, method) in MethodLabel::ALL.iter().enumerate() {
            assert_eq!(method.index(), i, "{method:?}");
        }
    }

    #[test]
    fn every_counted_status_has_its_own_slot_named_after_it() {
        for (i, code) in COUNTED_STATUSES.iter().enumerate() {
            assert_eq!(status_index(*code), i);
            assert_eq!(status_name(i), code.to_string());
        }
        for code in [0, 100, 201, 301, 418, 422, 599, 999, u16::MAX] {
            assert_eq!(status_name(status_index(code)), "other", "{code}");
        }
    }

    #[test]
    fn route_names_are_snake_case_and_distinct() {
        let names: std::collections::HashSet<_> =
            RouteLabel::ALL.iter().map(|r| r.as_str()).collect();
        assert_eq!(names.len(), RouteLabel::COUNT);
        for name in names {
            assert!(
                name.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
                "{name}"
            );
        }
    }

    #[test]
    fn methods_fold_to_their_label() {
        let check = |method: http::Method, expected: MethodLabel| {
            assert_eq!(MethodLabel::from(&method), expected, "{method}");
        };
        check(http::Method::GET, MethodLabel::Get);
        check(http::Method::POST, MethodLabel::Post);
        check(http::Method::DELETE, MethodLabel::Delete);
        check(http::Method::OPTIONS, MethodLabel::Options);
        check(http::Method::HEAD, MethodLabel::Other);
        check(http::Method::PUT, MethodLabel::Other);
        let custom = http::Method::from_bytes(b"PURGE").expect("valid token");
        check(custom, MethodLabel::Other);
    }
}
