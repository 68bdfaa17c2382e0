//! The authoritative final result of a federated read.
//!
//! Owns `FederatedOutcome` (merged records, per-source provenance and errors), the operation
//! result JSON `{"result":[…],"metadata":{…}}`, the direct tool's `CallToolResult`, and the
//! RFC 3339 `+00:00` timestamps the metadata uses. "The result is the existing self-contained
//! CallToolResult: clients can consume it independently of earlier pages." Must not do IO or
//! merge (it is handed merged records by `fanout.rs`).

use std::time::{SystemTime, UNIX_EPOCH};

use bytes::{BufMut, Bytes, BytesMut};

use super::event::SourceRef;
use super::record::{write_records, FederatedRecord};
use super::{LimitReason, SourceErrorCode};
use crate::json_text::put_str;

/// A source that delivered (or completed), for `metadata.provenance`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceObservation {
    /// The source.
    pub source: SourceRef,
    /// When its first page (or its completion, for an empty source) arrived, RFC 3339.
    pub observed_at: String,
}

/// A source that failed, for `metadata.source_errors`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFailure {
    /// The source.
    pub source: SourceRef,
    /// Its error code.
    pub code: SourceErrorCode,
    /// The server limit that cut it, when one did (`error.reason`).
    pub reason: Option<LimitReason>,
}

/// The final result of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct FederatedOutcome {
    pub(crate) records: Vec<FederatedRecord>,
    pub(crate) observed_at: String,
    /// Sorted by source.
    pub(crate) provenance: Vec<SourceObservation>,
    /// Sorted by source.
    pub(crate) source_errors: Vec<SourceFailure>,
    pub(crate) cancelled: bool,
}

impl FederatedOutcome {
    /// The merged records, sorted by record ref.
    pub fn records(&self) -> &[FederatedRecord] {
        &self.records
    }

    /// Failed sources in (source_type, source_identity) order.
    pub fn source_errors(&self) -> &[SourceFailure] {
        &self.source_errors
    }

    /// Sources that delivered, in (source_type, source_identity) order.
    pub fn provenance(&self) -> &[SourceObservation] {
        &self.provenance
    }

    /// The invocation time (RFC 3339, `+00:00`).
    pub fn observed_at(&self) -> &str {
        &self.observed_at
    }

    /// "Any source failure sets metadata.completeness: "partial"" (even with zero records).
    pub fn is_partial(&self) -> bool {
        !self.source_errors.is_empty()
    }

    /// Whether the run stopped because its event sink closed (the client went away); such an
    /// outcome is not a confirmed terminal result and need not be sent.
    pub(crate) fn is_cancelled(&self) -> bool {
        self.cancelled
    }

    /// Writes the operation result `{"result":[records],"metadata":{…}}`.
    pub(crate) fn write_operation_result(&self, out: &mut BytesMut) {
        out.put_slice(b"{\"result\":");
        write_records(out, &self.records);
        out.put_slice(b",\"metadata\":{\"retrieval_mode\":\"live_provider\",\"cache_baseline_applied\":false,\"source_delta_applied\":false,\"completeness\":\"");
        out.put_slice(if self.is_partial() {
            b"partial"
        } else {
            b"complete"
        });
        out.put_slice(b"\",\"result_count\":");
        out.put_slice(self.records.len().to_string().as_bytes());
        out.put_slice(b",\"observed_at\":");
        put_str(out, &self.observed_at);
        out.put_slice(b",\"provenance\":[");
        for (idx, seen) in self.provenance.iter().enumerate() {
            if idx > 0 {
                out.put_u8(b',');
            }
            out.put_slice(b"{\"source_type\":");
            put_str(out, &seen.source.source_type);
            out.put_slice(b",\"source_identity\":");
            put_str(out, &seen.source.source_identity);
            out.put_slice(b",\"observed_at\":");
            put_str(out, &seen.observed_at);
            out.put_u8(b'}');
        }
        out.put_slice(b"],\"source_errors\":[");
        for (idx, failure) in self.source_errors.iter().enumerate() {
            if idx > 0 {
                out.put_u8(b',');
            }
            out.put_slice(b"{\"source\":");
            failure.source.write_json(out);
            out.put_slice(b",\"error\":{\"code\":\"");
            out.put_slice(failure.code.as_str().as_bytes());
            out.put_u8(b'"');
            if let Some(reason) = failure.reason {
                out.put_slice(b",\"reason\":\"");
                out.put_slice(reason.as_str().as_bytes());
                out.put_u8(b'"');
            }
            out.put_slice(b"}}");
        }
        out.put_slice(b"]}}");
    }

    /// The operation result as bytes.
    pub(crate) fn operation_result_json(&self) -> Bytes {
        let mut out = BytesMut::with_capacity(256 + self.records.len() * 384);
        self.write_operation_result(&mut out);
        out.freeze()
    }

    /// Writes a direct tool's `CallToolResult`: `{"content":[{"type":"text","text":"<operation
    /// result as a JSON string>"}],"structuredContent":<operation result>,"isError":<partial>
    /// <extra_top_level>}`; `extra_top_level` (e.g. `,"resultType":"complete"`) is written
    /// verbatim before the closing brace.
    #[cfg(test)]
    pub(crate) fn write_call_tool_result(&self, out: &mut BytesMut, extra_top_level: &[u8]) {
        let result = self.operation_result_json();
        out.put_slice(b"{\"content\":[{\"type\":\"text\",\"text\":");
        // The operation result is written by this module from strings, so it is UTF-8.
        put_str(out, &String::from_utf8_lossy(&result));
        out.put_slice(b"}],\"structuredContent\":");
        out.put_slice(&result);
        out.put_slice(b",\"isError\":");
        out.put_slice(if self.is_partial() { b"true" } else { b"false" });
        out.put_slice(extra_top_level);
        out.put_u8(b'}');
    }
}

/// `time` as RFC 3339 in UTC with whole seconds and a `+00:00` offset, e.g.
/// `2026-10-08T12:00:00+00:00`.
pub(crate) fn rfc3339_utc(time: SystemTime) -> String {
    let secs = time
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}+00:00",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Proleptic Gregorian date of a day count since 1970-01-01 (H. Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn timestamps() {
        let at = |secs: u64| rfc3339_utc(UNIX_EPOCH + Duration::from_secs(secs));
        assert_eq!(at(0), "1970-01-01T00:00:00+00:00");
        assert_eq!(at(1_791_460_800), "2026-10-08T12:00:00+00:00");
        assert_eq!(at(951_782_400), "2000-02-29T00:00:00+00:00");
        assert_eq!(at(4_107_542_399), "2100-02-28T23:59:59+00:00");
    }

    fn source(identity: &str) -> SourceRef {
        SourceRef {
            source_type: "example".into(),
            source_identity: identity.into(),
        }
    }

    #[test]
    fn partial_outcome_writes_contract_metadata_and_call_tool_result() {
        let outcome = FederatedOutcome {
            records: vec![],
            observed_at: "2026-10-08T12:00:00+00:00".into(),
            provenance: vec![SourceObservation {
                source: source("demo-source"),
                observed_at: "2026-10-08T12:00:00+00:00".into(),
            }],
            source_errors: vec![
                SourceFailure {
                    source: source("other-demo-source"),
                    code: SourceErrorCode::SourceTimeout,
                    reason: None,
                },
                SourceFailure {
                    source: source("paging-source"),
                    code: SourceErrorCode::SourceUnavailable,
                    reason: Some(LimitReason::PageLimit),
                },
            ],
            cancelled: false,
        };
        let expected = r#"{"result":[],"metadata":{"retrieval_mode":"live_provider","cache_baseline_applied":false,"source_delta_applied":false,"completeness":"partial","result_count":0,"observed_at":"2026-10-08T12:00:00+00:00","provenance":[{"source_type":"example","source_identity":"demo-source","observed_at":"2026-10-08T12:00:00+00:00"}],"source_errors":[{"source":{"source_type":"example","source_identity":"other-demo-source"},"error":{"code":"source_timeout"}},{"source":{"source_type":"example","source_identity":"paging-source"},"error":{"code":"source_unavailable","reason":"page_limit"}}]}}"#;
        assert_eq!(&outcome.operation_result_json()[..], expected.as_bytes());
        assert!(outcome.is_partial());

        let mut out = BytesMut::new();
        outcome.write_call_tool_result(&mut out, br#","resultType":"complete""#);
        let parsed: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let text = parsed["content"][0]["text"].as_str().unwrap();
        assert_eq!(text, expected);
        assert_eq!(
            parsed["structuredContent"],
            serde_json::from_str::<serde_json::Value>(expected).unwrap()
        );
        assert_eq!(parsed["isError"], true);
        assert_eq!(parsed["resultType"], "complete");
    }
}
