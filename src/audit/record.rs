//! One audit record and its JSON-lines encoding.
//!
//! Owns [`Record`], the small enums that classify a call ([`CallType`], [`Surface`],
//! [`Outcome`]), and [`Record::write_line`], which appends one JSON object plus `\n` to a
//! caller-owned buffer. The encoder writes by hand into that buffer (no `serde_json::Value`, no
//! intermediate `String`s), so the writer thread reuses one `Vec<u8>` for every record.
//!
//! Must not do IO or know about queues: `sink.rs` owns the writer, `audit.rs` the handle.
//!
//! Every line carries every field, `null` when absent, so downstream tools see one fixed shape.
//! Payload dimensions (`request`, `response`, `tools_list`) are raw JSON bytes the caller
//! already holds; they are written verbatim as JSON values. Bytes that are not one valid JSON
//! text are written as a JSON string instead, so a line is always valid JSON.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use serde::Serialize;

use crate::json_text::put_str;

/// What kind of call a record describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CallType {
    /// `tools/call` (or a REST tool invocation).
    ToolCall,
    /// `tools/list`; the listed tools may ride along in [`Record::tools_list`].
    ToolsList,
    /// `resources/read`.
    ResourceRead,
    /// `prompts/get`.
    PromptGet,
    /// `discover_tool_schema`, kept apart from tool calls as the spec asks.
    SchemaDiscovery,
    /// A source's result stream (one record when the stream ends).
    SourceResultStream,
    /// A request refused for missing or bad credentials.
    AuthFailure,
    /// A request naming a session it may not use (unknown, expired, or owned by another caller).
    SessionRejected,
    /// An A2A `SendMessage` / `SendStreamingMessage` (one record per message, naming its tool).
    A2aMessage,
    /// An A2A task operation (get, list, cancel, subscribe, push configuration).
    A2aTask,
    /// One attempt to deliver an A2A push notification to a webhook.
    A2aPush,
}

impl CallType {
    /// Every call type, in declaration order (tests and metrics labels).
    pub const ALL: [CallType; 11] = [
        CallType::ToolCall,
        CallType::ToolsList,
        CallType::ResourceRead,
        CallType::PromptGet,
        CallType::SchemaDiscovery,
        CallType::SourceResultStream,
        CallType::AuthFailure,
        CallType::SessionRejected,
        CallType::A2aMessage,
        CallType::A2aTask,
        CallType::A2aPush,
    ];

    /// The snake_case name written in the `call_type` field.
    pub const fn as_str(self) -> &'static str {
        match self {
            CallType::ToolCall => "tool_call",
            CallType::ToolsList => "tools_list",
            CallType::ResourceRead => "resource_read",
            CallType::PromptGet => "prompt_get",
            CallType::SchemaDiscovery => "schema_discovery",
            CallType::SourceResultStream => "source_result_stream",
            CallType::AuthFailure => "auth_failure",
            CallType::SessionRejected => "session_rejected",
            CallType::A2aMessage => "a2a_message",
            CallType::A2aTask => "a2a_task",
            CallType::A2aPush => "a2a_push",
        }
    }
}

/// Which surface a call arrived on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Surface {
    /// Streamable HTTP MCP (either era).
    Mcp,
    /// The legacy HTTP+SSE MCP transport (`/sse` + `/messages`).
    LegacySse,
    /// The REST surface.
    Rest,
    /// The business-object surface.
    Bos,
    /// The A2A agent surface.
    A2a,
}

impl Surface {
    /// Every surface, in declaration order.
    pub const ALL: [Surface; 5] = [
        Surface::Mcp,
        Surface::LegacySse,
        Surface::Rest,
        Surface::Bos,
        Surface::A2a,
    ];

    /// The snake_case name written in the `surface` field.
    pub const fn as_str(self) -> &'static str {
        match self {
            Surface::Mcp => "mcp",
            Surface::LegacySse => "legacy_sse",
            Surface::Rest => "rest",
            Surface::Bos => "bos",
            Surface::A2a => "a2a",
        }
    }
}

/// How a call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The call succeeded.
    #[default]
    Ok,
    /// The call failed (downstream error, timeout, invalid params…); see `error_code`.
    Error,
    /// The caller is not allowed to do this (authentication or authorization).
    Denied,
    /// The request was refused before it ran (bad session, limits).
    Rejected,
    /// The client went away (closed the connection or the stream) before the call finished;
    /// the work was cancelled. `duration_us` is how long it ran; `detail` names the downstream's
    /// status when it had answered.
    Cancelled,
}

impl Outcome {
    /// Every outcome, in declaration order.
    pub const ALL: [Outcome; 5] = [
        Outcome::Ok,
        Outcome::Error,
        Outcome::Denied,
        Outcome::Rejected,
        Outcome::Cancelled,
    ];

    /// The snake_case name written in the `outcome` field.
    pub const fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Error => "error",
            Outcome::Denied => "denied",
            Outcome::Rejected => "rejected",
            Outcome::Cancelled => "cancelled",
        }
    }
}

/// One audit record.
///
/// Fields are public so the hot path fills them directly; [`Record::new`] sets the identity and
/// classification and leaves everything else empty, and the `with_*` methods chain. Identity
/// strings are `Arc<str>` so filling them is a reference-count increment.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// When the call was recorded. [`crate::audit::Audit::record`] stamps it when the record is
    /// queued; whatever was here before is overwritten. Written as RFC 3339 UTC with
    /// milliseconds.
    pub ts: SystemTime,
    /// The execution id the runtime minted for the call, if it has one.
    pub execution_id: Option<String>,
    /// The client's accepted `X-Correlation-Id`, if any.
    pub external_correlation_id: Option<String>,
    /// The tenant; empty when not known (e.g. an authentication failure on an unknown route).
    pub tenant: Arc<str>,
    /// The client application; empty when not known.
    pub client: Arc<str>,
    /// The caller id; empty when not known.
    pub caller: Arc<str>,
    /// The MCP session id, when the call ran in one.
    pub session: Option<String>,
    /// The surface the call arrived on.
    pub surface: Surface,
    /// What kind of call this was.
    pub call_type: CallType,
    /// The tool (or resource URI, prompt name) the call named, if any.
    pub tool: Option<String>,
    /// How the call ended.
    pub outcome: Outcome,
    /// A JSON-RPC error code (`"-32602"`) or an error class (`"downstream_timeout"`).
    pub error_code: Option<String>,
    /// How long the call took, in microseconds.
    pub duration_us: u64,
    /// Why, for security events ("session owned by another caller"). Never secrets.
    pub detail: Option<String>,
    /// The request payload as raw JSON, when request logging is on for the tool.
    pub request: Option<Bytes>,
    /// The response payload as raw JSON, when response logging is on for the tool.
    pub response: Option<Bytes>,
    /// The `tools/list` result as raw JSON, when any tool in the catalog logs payloads.
    pub tools_list: Option<Bytes>,
    /// A call proxied to a registered remote A2A agent: what the upstream showed.
    pub remote: Option<Box<RemoteCall>>,
}

impl Record {
    /// A record of a successful call with no optional field set. `ts` is stamped later by
    /// [`crate::audit::Audit::record`].
    pub fn new(
        surface: Surface,
        call_type: CallType,
        tenant: Arc<str>,
        client: Arc<str>,
        caller: Arc<str>,
    ) -> Self {
        Self {
            ts: UNIX_EPOCH,
            execution_id: None,
            external_correlation_id: None,
            tenant,
            client,
            caller,
            session: None,
            surface,
            call_type,
            tool: None,
            outcome: Outcome::Ok,
            error_code: None,
            duration_us: 0,
            detail: None,
            request: None,
            response: None,
            tools_list: None,
            remote: None,
        }
    }

    /// Sets the execution id.
    pub(crate) fn with_execution_id(mut self, execution_id: impl Into<String>) -> Self {
        self.execution_id = Some(execution_id.into());
        self
    }

    /// Sets the accepted external correlation id.
    pub(crate) fn with_external_correlation_id(mut self, id: impl Into<String>) -> Self {
        self.external_correlation_id = Some(id.into());
        self
    }

    /// Sets the session id.
    pub(crate) fn with_session(mut self, session: impl Into<String>) -> Self {
        self.session = Some(session.into());
        self
    }

    /// Sets the tool (or resource, prompt) name.
    pub(crate) fn with_tool(mut self, tool: impl Into<String>) -> Self {
        self.tool = Some(tool.into());
        self
    }

    /// Sets the outcome and, for failures, the error code or class.
    pub(crate) fn with_outcome(mut self, outcome: Outcome, error_code: Option<String>) -> Self {
        self.outcome = outcome;
        self.error_code = error_code;
        self
    }

    /// Sets the call's duration (saturating at `u64::MAX` microseconds).
    pub(crate) fn with_duration(mut self, duration: Duration) -> Self {
        self.duration_us = u64::try_from(duration.as_micros()).unwrap_or(u64::MAX);
        self
    }

    /// Sets the security-event explanation.
    pub(crate) fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }

    /// Sets the raw JSON request payload.
    #[cfg(test)]
    pub(crate) fn with_request(mut self, request: Bytes) -> Self {
        self.request = Some(request);
        self
    }

    /// Sets the raw JSON response payload.
    #[cfg(test)]
    pub(crate) fn with_response(mut self, response: Bytes) -> Self {
        self.response = Some(response);
        self
    }

    /// Sets the raw JSON `tools/list` result.
    #[cfg(test)]
    pub(crate) fn with_tools_list(mut self, tools_list: Bytes) -> Self {
        self.tools_list = Some(tools_list);
        self
    }

    /// Sets what a proxied A2A call showed of the upstream.
    pub(crate) fn with_remote(mut self, remote: RemoteCall) -> Self {
        self.remote = Some(Box::new(remote));
        self
    }

    /// Appends this record as one JSON object and a `\n` to `out`.
    ///
    /// Allocates nothing beyond growing `out`, except for a payload that is not valid UTF-8
    /// (then a lossy copy is escaped as a string).
    pub(crate) fn write_line(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"ts\":\"");
        write_rfc3339_millis(self.ts, out);
        out.extend_from_slice(b"\",\"execution_id\":");
        write_opt_str(self.execution_id.as_deref(), out);
        out.extend_from_slice(b",\"external_correlation_id\":");
        write_opt_str(self.external_correlation_id.as_deref(), out);
        out.extend_from_slice(b",\"tenant\":");
        put_str(out, &self.tenant);
        out.extend_from_slice(b",\"client\":");
        put_str(out, &self.client);
        out.extend_from_slice(b",\"caller\":");
        put_str(out, &self.caller);
        out.extend_from_slice(b",\"session\":");
        write_opt_str(self.session.as_deref(), out);
        out.extend_from_slice(b",\"surface\":\"");
        out.extend_from_slice(self.surface.as_str().as_bytes());
        out.extend_from_slice(b"\",\"call_type\":\"");
        out.extend_from_slice(self.call_type.as_str().as_bytes());
        out.extend_from_slice(b"\",\"tool\":");
        write_opt_str(self.tool.as_deref(), out);
        out.extend_from_slice(b",\"outcome\":\"");
        out.extend_from_slice(self.outcome.as_str().as_bytes());
        out.extend_from_slice(b"\",\"error_code\":");
        write_opt_str(self.error_code.as_deref(), out);
        out.extend_from_slice(b",\"duration_us\":");
        write_u64(self.duration_us, out);
        out.extend_from_slice(b",\"detail\":");
        write_opt_str(self.detail.as_deref(), out);
        out.extend_from_slice(b",\"request\":");
        write_payload(self.request.as_deref(), out);
        out.extend_from_slice(b",\"response\":");
        write_payload(self.response.as_deref(), out);
        out.extend_from_slice(b",\"tools_list\":");
        write_payload(self.tools_list.as_deref(), out);
        if let Some(remote) = &self.remote {
            remote.write(out);
        }
        out.extend_from_slice(b"}\n");
    }
}

/// The `remote` member of a record of a call proxied to a registered remote A2A agent (written
/// only on those records).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RemoteCall {
    /// The agent id.
    pub agent: Arc<str>,
    /// The A2A method (1.0 name).
    pub method: &'static str,
    /// The upstream task id the call named or was answered with.
    pub task_id: Option<String>,
    /// The upstream context id.
    pub context_id: Option<String>,
    /// The last task state seen (`TASK_STATE_*`).
    pub state: Option<&'static str>,
    /// Bytes received from the upstream.
    pub bytes: u64,
    /// Stream events relayed (streams only).
    pub events: Option<u64>,
    /// `open` or `close` on the two records of a relayed stream.
    pub stream: Option<&'static str>,
}

impl RemoteCall {
    fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b",\"remote\":{\"agent\":");
        put_str(out, &self.agent);
        out.extend_from_slice(b",\"method\":");
        put_str(out, self.method);
        out.extend_from_slice(b",\"task_id\":");
        write_opt_str(self.task_id.as_deref(), out);
        out.extend_from_slice(b",\"context_id\":");
        write_opt_str(self.context_id.as_deref(), out);
        out.extend_from_slice(b",\"state\":");
        write_opt_str(self.state, out);
        out.extend_from_slice(b",\"bytes\":");
        write_u64(self.bytes, out);
        if let Some(events) = self.events {
            out.extend_from_slice(b",\"events\":");
            write_u64(events, out);
        }
        if let Some(stream) = self.stream {
            out.extend_from_slice(b",\"stream\":");
            put_str(out, stream);
        }
        out.push(b'}');
    }
}

// === encoding helpers ===

fn write_opt_str(value: Option<&str>, out: &mut Vec<u8>) {
    match value {
        Some(text) => put_str(out, text),
        None => out.extend_from_slice(b"null"),
    }
}

/// Writes a payload dimension: `null` when absent, the bytes verbatim when they are one valid
/// JSON text, otherwise the bytes as a JSON string.
///
/// Verbatim payloads may be pretty-printed. In valid JSON a raw CR or LF byte can only be
/// insignificant whitespace (inside strings they must be escaped), so they are replaced by
/// spaces: the value is unchanged and the record stays on one line.
fn write_payload(payload: Option<&[u8]>, out: &mut Vec<u8>) {
    let Some(bytes) = payload else {
        out.extend_from_slice(b"null");
        return;
    };
    match std::str::from_utf8(bytes) {
        Ok(text) if is_json_text(text) => {
            let trimmed = text.trim_matches(|c: char| matches!(c, ' ' | '\t' | '\n' | '\r'));
            let from = out.len();
            out.extend_from_slice(trimmed.as_bytes());
            for byte in &mut out[from..] {
                if matches!(*byte, b'\n' | b'\r') {
                    *byte = b' ';
                }
            }
        }
        Ok(text) => put_str(out, text),
        Err(_) => put_str(out, &String::from_utf8_lossy(bytes)),
    }
}

/// Whether `text` is exactly one JSON value (surrounding whitespace allowed).
fn is_json_text(text: &str) -> bool {
    serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok()
}

fn write_u64(mut value: u64, out: &mut Vec<u8>) {
    let mut digits = [0u8; 20];
    let mut pos = digits.len();
    loop {
        pos -= 1;
        digits[pos] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[pos..]);
}

/// Writes `value` with exactly `width` digits (zero-padded; higher digits are cut, which the
/// callers' ranges never need).
fn write_padded(mut value: u64, width: usize, out: &mut Vec<u8>) {
    let mut digits = [b'0'; 20];
    for slot in digits[..width].iter_mut().rev() {
        *slot = b'0' + (value % 10) as u8;
        value /= 10;
    }
    out.extend_from_slice(&digits[..width]);
}

/// Writes `ts` as `YYYY-MM-DDTHH:MM:SS.mmmZ` (RFC 3339, UTC, milliseconds). Times before the
/// Unix epoch are written as the epoch; years past 9999 are not representable in RFC 3339 and
/// are written with their low four digits (no clock reaches them).
pub(crate) fn write_rfc3339_millis(ts: SystemTime, out: &mut Vec<u8>) {
    let since_epoch = ts.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO);
    let secs = since_epoch.as_secs();
    let days = secs / 86_400;
    let secs_of_day = secs % 86_400;
    let (year, month, day) = civil_from_days(days);
    write_padded(year, 4, out);
    out.push(b'-');
    write_padded(month, 2, out);
    out.push(b'-');
    write_padded(day, 2, out);
    out.push(b'T');
    write_padded(secs_of_day / 3600, 2, out);
    out.push(b':');
    write_padded(secs_of_day / 60 % 60, 2, out);
    out.push(b':');
    write_padded(secs_of_day % 60, 2, out);
    out.push(b'.');
    write_padded(u64::from(since_epoch.subsec_millis()), 3, out);
    out.push(b'Z');
}

/// Days since 1970-01-01 to a proleptic Gregorian (year, month, day), after Howard Hinnant's
/// `civil_from_days` (http://howardhinnant.github.io/date_algorithms.html), restricted to
/// non-negative day counts so it stays in unsigned arithmetic.
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    // Shift the epoch to 0000-03-01 so leap days fall at the end of each 400-year era.
    let z = days + 719_468;
    let era = z / 146_097;
    let day_of_era = z - era * 146_097; // [0, 146096]
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365; // [0, 399]
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100); // [0, 365]
    let month_index = (5 * day_of_year + 2) / 153; // [0, 11], March = 0
    let day = day_of_year - (153 * month_index + 2) / 5 + 1; // [1, 31]
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    }; // [1, 12]
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rfc3339(secs: u64, millis: u32) -> String {
        let mut out = Vec::new();
        write_rfc3339_millis(
            UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_millis(u64::from(millis)),
            &mut out,
        );
        String::from_utf8(out).expect("timestamps are ASCII")
    }

    fn check_ts(secs: u64, millis: u32, expected: &str) {
        assert_eq!(
            rfc3339(secs, millis),
            expected,
            "secs={secs} millis={millis}"
        );
    }

    #[test]
    fn timestamps() {
        check_ts(0, 0, "1970-01-01T00:00:00.000Z");
        check_ts(59, 999, "1970-01-01T00:00:59.999Z");
        check_ts(86_399, 1, "1970-01-01T23:59:59.001Z");
        check_ts(951_782_400, 0, "2000-02-29T00:00:00.000Z");
        check_ts(951_868_800, 0, "2000-03-01T00:00:00.000Z");
        check_ts(1_700_000_000, 123, "2023-11-14T22:13:20.123Z");
        check_ts(1_709_164_800, 0, "2024-02-29T00:00:00.000Z");
        check_ts(4_102_444_799, 500, "2099-12-31T23:59:59.500Z");
        check_ts(4_107_542_400, 0, "2100-03-01T00:00:00.000Z");
        check_ts(253_402_300_799, 999, "9999-12-31T23:59:59.999Z");
    }

    #[test]
    fn before_epoch_is_written_as_epoch() {
        let mut out = Vec::new();
        write_rfc3339_millis(UNIX_EPOCH - Duration::from_secs(10), &mut out);
        assert_eq!(out, b"1970-01-01T00:00:00.000Z");
    }

    /// Every day from 1970 to 2400 against a naive day-by-day calendar walk.
    #[test]
    fn civil_from_days_matches_naive_walk() {
        fn is_leap(year: u64) -> bool {
            year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400))
        }
        let (mut year, mut month, mut day) = (1970u64, 1u64, 1u64);
        for days in 0..(430 * 366) {
            assert_eq!(civil_from_days(days), (year, month, day), "day {days}");
            let month_len = match month {
                2 if is_leap(year) => 29,
                2 => 28,
                4 | 6 | 9 | 11 => 30,
                _ => 31,
            };
            day += 1;
            if day > month_len {
                day = 1;
                month += 1;
                if month > 12 {
                    month = 1;
                    year += 1;
                }
            }
        }
    }

    fn json_str(text: &str) -> String {
        let mut out = Vec::new();
        put_str(&mut out, text);
        String::from_utf8(out).expect("escaped output is UTF-8")
    }

    #[test]
    fn strings_escape_like_serde_json() {
        let inputs = [
            "",
            "plain",
            "quote \" and backslash \\",
            "new\nline\rtab\t",
            "\u{0}\u{1}\u{8}\u{c}\u{1f}\u{7f}",
            "unicode é ✓ 😀 \u{2028}",
        ];
        for input in inputs {
            let ours = json_str(input);
            let back: String = serde_json::from_str(&ours).expect("our escape parses");
            assert_eq!(back, input);
            assert_eq!(
                ours,
                serde_json::to_string(input).expect("serde_json escapes"),
                "input {input:?}"
            );
        }
    }

    #[test]
    fn numbers() {
        for value in [0, 7, 10, 999, 1_000_000, u64::MAX] {
            let mut out = Vec::new();
            write_u64(value, &mut out);
            assert_eq!(out, value.to_string().as_bytes());
        }
    }

    fn payload(bytes: &[u8]) -> String {
        let mut out = Vec::new();
        write_payload(Some(bytes), &mut out);
        String::from_utf8(out).expect("payload output is UTF-8")
    }

    #[test]
    fn payloads() {
        // Valid JSON is copied verbatim.
        assert_eq!(
            payload(br#"{"a":[1,2,{"b":null}]}"#),
            r#"{"a":[1,2,{"b":null}]}"#
        );
        assert_eq!(payload(b"42"), "42");
        assert_eq!(payload(br#""text""#), r#""text""#);
        // Pretty-printed JSON stays one line and means the same.
        let pretty = b"{\r\n  \"a\": \"x\\ny\",\n  \"b\": [1,\n 2]\n}\n";
        let written = payload(pretty);
        assert!(!written.contains('\n') && !written.contains('\r'));
        let expected: serde_json::Value = serde_json::from_slice(pretty).expect("valid");
        let got: serde_json::Value = serde_json::from_str(&written).expect("still valid");
        assert_eq!(got, expected);
        // Invalid JSON becomes a string with the same text.
        assert_eq!(payload(b"{not json"), r#""{not json""#);
        assert_eq!(payload(b"1 2"), r#""1 2""#);
        assert_eq!(payload(b""), r#""""#);
        assert_eq!(payload(b"line\nbreak"), r#""line\nbreak""#);
        // Invalid UTF-8 (even inside an otherwise valid JSON string) becomes a lossy string.
        assert_eq!(payload(b"\"\xff\""), "\"\\\"\u{fffd}\\\"\"");
    }
}
