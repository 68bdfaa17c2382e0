//! Correlation ids: accepting the client's `X-Correlation-Id`, minting execution ids, and
//! deciding what the downstream receives.
//!
//! Owns the acceptance rules, `CallContext`, and `CorrelationPolicy` (a toolset's strategy and
//! header, compiled). Must not set response headers on the client side: the surfaces echo
//! `CallContext::external_correlation_id` in `X-External-Correlation-Id` themselves.
//!
//! Acceptance rules for an external id: exactly one `X-Correlation-Id` field; 1 to
//! `MAX_CORRELATION_ID_LEN` bytes; every byte a `tchar` of RFC 9110 §5.6.2 — `!#$%&'*+-.^_`|~`,
//! digits and ASCII letters. That is visible ASCII (0x21–0x7E) without the separators
//! `"(),/:;<=>?@[\]{}` (and never space, control bytes or non-ASCII). A value that fails is
//! ignored: not recorded, not echoed, not forwarded; it is logged at debug level.

use std::sync::atomic::{AtomicU16, Ordering};

use std::sync::Arc;

use http::{HeaderMap, HeaderName, HeaderValue};

use crate::catalog::CatalogTool;
use crate::config::CorrelationStrategy;

/// The request header a client sends its correlation id in.
pub const CORRELATION_ID_HEADER: HeaderName = HeaderName::from_static("x-correlation-id");

/// The response header the surfaces echo an accepted external id in.
pub(crate) const EXTERNAL_CORRELATION_ID_HEADER: HeaderName =
    HeaderName::from_static("x-external-correlation-id");

/// Longest external correlation id accepted, in bytes; longer values are ignored (not
/// truncated), since a truncated id would no longer correlate.
pub(crate) const MAX_CORRELATION_ID_LEN: usize = 128;

/// Why a client's correlation id was not accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejection {
    /// Empty value.
    Empty,
    /// Longer than `MAX_CORRELATION_ID_LEN`.
    TooLong,
    /// A byte that is not an RFC 9110 `tchar`, at this position.
    BadByte(usize),
    /// The header appeared more than once.
    Repeated,
}

/// An accepted external correlation id (always a valid header value of `tchar`s).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExternalCorrelationId(HeaderValue);

impl ExternalCorrelationId {
    /// Applies the acceptance rules to one header value.
    pub fn accept(value: &HeaderValue) -> Result<Self, Rejection> {
        let bytes = value.as_bytes();
        if bytes.is_empty() {
            return Err(Rejection::Empty);
        }
        if bytes.len() > MAX_CORRELATION_ID_LEN {
            return Err(Rejection::TooLong);
        }
        if let Some(pos) = bytes.iter().position(|b| !is_tchar(*b)) {
            return Err(Rejection::BadByte(pos));
        }
        Ok(Self(value.clone()))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        // Only tchar bytes were accepted, so this never fails.
        self.0.to_str().unwrap_or_default()
    }

    /// The id as a header value (for echoing and forwarding).
    pub(crate) fn header_value(&self) -> &HeaderValue {
        &self.0
    }
}

/// RFC 9110 §5.6.2: `tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." /
/// "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA`.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// The id the runtime mints for each call: a random UUID v4 in hyphenated lowercase form.
/// Never derived from anything the client sent.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct ExecutionId([u8; 36]);

impl ExecutionId {
    /// Mints a fresh id from 122 random bits.
    pub(crate) fn generate() -> Self {
        let mut n: u128 = rand::random();
        // Version 4 and RFC 4122 variant bits.
        n = (n & !(0xF << 76)) | (0x4 << 76);
        n = (n & !(0x3 << 62)) | (0x2 << 62);
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut out = [b'-'; 36];
        let mut nibble = 32;
        for (pos, slot) in out.iter_mut().enumerate() {
            if matches!(pos, 8 | 13 | 18 | 23) {
                continue;
            }
            nibble -= 1;
            *slot = HEX[((n >> (nibble * 4)) & 0xF) as usize];
        }
        Self(out)
    }

    /// The id as text.
    pub(crate) fn as_str(&self) -> &str {
        std::str::from_utf8(&self.0).unwrap_or_default()
    }

    /// The id as a header value.
    pub(crate) fn header_value(&self) -> HeaderValue {
        HeaderValue::from_bytes(&self.0).unwrap_or(HeaderValue::from_static("invalid"))
    }
}

impl std::fmt::Debug for ExecutionId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::fmt::Display for ExecutionId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A call's execution id, minted on first use: most requests (`ping`, listings) never reach a
/// downstream and so never pay for the random bits. Once minted it stays the same.
#[derive(Debug, Clone, Default)]
pub struct LazyExecutionId(std::sync::OnceLock<ExecutionId>);

impl LazyExecutionId {
    /// The id, minting it now if this is the first use.
    pub fn get(&self) -> ExecutionId {
        *self.0.get_or_init(ExecutionId::generate)
    }

    /// Whether the id was minted already (a call reached a downstream, or a record named it).
    pub(crate) fn is_minted(&self) -> bool {
        self.0.get().is_some()
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        self.0.get_or_init(ExecutionId::generate).as_str()
    }

    /// The id as a header value.
    pub(crate) fn header_value(&self) -> HeaderValue {
        self.get().header_value()
    }
}

/// The status a downstream answered a call with, once its response head has arrived: the
/// audit record of a call cancelled afterwards (the client went away) carries it. Written by the
/// invoker, read by the surfaces; one relaxed atomic, no lock.
#[derive(Debug, Default)]
pub struct DownstreamStatus(AtomicU16);

impl DownstreamStatus {
    /// Notes the downstream's status.
    pub fn set(&self, status: http::StatusCode) {
        self.0.store(status.as_u16(), Ordering::Relaxed);
    }

    /// The downstream's status, when it has answered.
    pub fn get(&self) -> Option<u16> {
        Some(self.0.load(Ordering::Relaxed)).filter(|&status| status != 0)
    }
}

impl Clone for DownstreamStatus {
    fn clone(&self) -> Self {
        Self(AtomicU16::new(self.0.load(Ordering::Relaxed)))
    }
}

/// The correlation facts of one call.
#[derive(Debug, Clone)]
pub struct CallContext {
    /// Minted by the runtime for this call (on first use).
    pub execution_id: LazyExecutionId,
    /// The client's accepted `X-Correlation-Id`, if any.
    pub external_correlation_id: Option<ExternalCorrelationId>,
    /// The downstream's status once it answered (for the record of a cancelled call).
    pub downstream_status: DownstreamStatus,
    /// The request's trace (`[telemetry]` on): downstream calls open CLIENT spans under it and
    /// carry its `traceparent`.
    pub trace: Option<Arc<crate::telemetry::RequestTrace>>,
}

impl CallContext {
    /// A context with a fresh execution id and the given external id.
    pub fn new(external_correlation_id: Option<ExternalCorrelationId>) -> Self {
        Self {
            execution_id: LazyExecutionId::default(),
            external_correlation_id,
            downstream_status: DownstreamStatus::default(),
            trace: None,
        }
    }

    /// The same, traced by `trace`.
    pub(crate) fn traced(mut self, trace: Option<Arc<crate::telemetry::RequestTrace>>) -> Self {
        self.trace = trace;
        self
    }

    /// Reads `X-Correlation-Id` from the client's request headers, applying the acceptance
    /// rules; a rejected value is logged and ignored.
    pub fn from_headers(headers: &HeaderMap) -> Self {
        Self::new(external_from_headers(headers))
    }
}

/// Applies the acceptance rules to the request's `X-Correlation-Id` field(s).
pub(crate) fn external_from_headers(headers: &HeaderMap) -> Option<ExternalCorrelationId> {
    let mut values = headers.get_all(&CORRELATION_ID_HEADER).iter();
    let first = values.next()?;
    let result = if values.next().is_some() {
        Err(Rejection::Repeated)
    } else {
        ExternalCorrelationId::accept(first)
    };
    match result {
        Ok(id) => Some(id),
        Err(rejection) => {
            let shown: String = first
                .as_bytes()
                .iter()
                .take(MAX_CORRELATION_ID_LEN)
                .flat_map(|b| b.escape_ascii())
                .map(char::from)
                .collect();
            tracing::debug!(?rejection, value = %shown, "ignoring X-Correlation-Id");
            None
        }
    }
}

/// A toolset's correlation settings, compiled.
#[derive(Debug, Clone)]
pub struct CorrelationPolicy {
    /// What is forwarded.
    pub strategy: CorrelationStrategy,
    /// The header it is forwarded in.
    pub header: HeaderName,
}

impl CorrelationPolicy {
    /// A catalog tool's policy, from the header name its snapshot parsed (no parse per call).
    pub(crate) fn of_tool(tool: &CatalogTool) -> Self {
        Self {
            strategy: tool.correlation.strategy,
            header: tool.correlation_header.clone(),
        }
    }

    /// The default policy: the execution id in `X-Correlation-Id`.
    pub fn execution_id() -> Self {
        Self {
            strategy: CorrelationStrategy::ExecutionId,
            header: CORRELATION_ID_HEADER,
        }
    }

    /// The value the downstream receives for this call, if any.
    pub(crate) fn downstream_value(&self, ctx: &CallContext) -> Option<HeaderValue> {
        match self.strategy {
            CorrelationStrategy::None => None,
            CorrelationStrategy::ExecutionId => Some(ctx.execution_id.header_value()),
            CorrelationStrategy::ExternalOrExecutionId => Some(
                ctx.external_correlation_id
                    .as_ref()
                    .map(|id| id.header_value().clone())
                    .unwrap_or_else(|| ctx.execution_id.header_value()),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(input: &[u8], expected: Result<(), Rejection>) {
        let value = HeaderValue::from_bytes(input).unwrap();
        let got = ExternalCorrelationId::accept(&value).map(|_| ());
        assert_eq!(got, expected, "{:?}", String::from_utf8_lossy(input));
    }

    #[test]
    fn acceptance() {
        check(b"abc-123", Ok(()));
        check(b"A", Ok(()));
        check(b"0f8fad5b-d9cb-469f-a165-70867728950e", Ok(()));
        check(b"!#$%&'*+-.^_`|~", Ok(()));
        check(&[b'x'; 128], Ok(()));
        check(&[b'x'; 129], Err(Rejection::TooLong));
        check(b"", Err(Rejection::Empty));
        check(b"a b", Err(Rejection::BadByte(1)));
        check(b"a:b", Err(Rejection::BadByte(1)));
        check(b"a/b", Err(Rejection::BadByte(1)));
        check(b"\"q\"", Err(Rejection::BadByte(0)));
        check(b"a\tb", Err(Rejection::BadByte(1)));
        check(b"caf\xc3\xa9", Err(Rejection::BadByte(3)));
        for sep in b"\"(),/:;<=>?@[\\]{}" {
            check(&[b'a', *sep], Err(Rejection::BadByte(1)));
        }
    }

    #[test]
    fn repeated_header_is_ignored() {
        let mut headers = HeaderMap::new();
        headers.append(CORRELATION_ID_HEADER, HeaderValue::from_static("a"));
        assert_eq!(
            external_from_headers(&headers).map(|i| i.as_str().to_owned()),
            Some("a".into())
        );
        headers.append(CORRELATION_ID_HEADER, HeaderValue::from_static("b"));
        assert!(external_from_headers(&headers).is_none());
    }

    #[test]
    fn execution_ids_are_uuid_v4() {
        let a = ExecutionId::generate();
        let b = ExecutionId::generate();
        assert_ne!(a, b);
        let s = a.as_str();
        assert_eq!(s.len(), 36);
        assert_eq!(&s[14..15], "4");
        assert!(matches!(&s[19..20], "8" | "9" | "a" | "b"), "{s}");
        assert!(s.bytes().all(|c| c == b'-' || c.is_ascii_hexdigit()));
        assert_eq!(s.matches('-').count(), 4);
    }

    #[test]
    fn execution_id_is_minted_once_on_first_use() {
        let ctx = CallContext::new(None);
        assert!(!ctx.execution_id.is_minted());
        let first = ctx.execution_id.get();
        assert!(ctx.execution_id.is_minted());
        assert_eq!(ctx.execution_id.get(), first);
        assert_eq!(ctx.execution_id.as_str(), first.as_str());
        assert_ne!(CallContext::new(None).execution_id.get(), first);
    }

    #[test]
    fn strategies() {
        let ext = ExternalCorrelationId::accept(&HeaderValue::from_static("client-1")).unwrap();
        let with = CallContext::new(Some(ext));
        let without = CallContext::new(None);
        let policy = |strategy| CorrelationPolicy {
            strategy,
            header: CORRELATION_ID_HEADER,
        };
        let exec = |c: &CallContext| Some(c.execution_id.header_value());
        assert_eq!(
            policy(CorrelationStrategy::None).downstream_value(&with),
            None
        );
        assert_eq!(
            policy(CorrelationStrategy::ExecutionId).downstream_value(&with),
            exec(&with)
        );
        assert_eq!(
            policy(CorrelationStrategy::ExternalOrExecutionId).downstream_value(&with),
            Some(HeaderValue::from_static("client-1"))
        );
        assert_eq!(
            policy(CorrelationStrategy::ExternalOrExecutionId).downstream_value(&without),
            exec(&without)
        );
    }
}
