//! `[server]` checks: the public URL, the `Host` allowlist, the audit sink, queue and session
//! caps, and the limits that would stop every request if zero.
//!
//! Owns those checks. Must not look at tenants (their secrets' presence is `tenant.rs` and
//! `client.rs`'s to check) or at `[cluster]` (`cluster.rs`).

use super::{Loc, Report};
use crate::config::{AuditSink, ServerSettings};

/// The public URL, the allowlists, the audit sink and queue, the stream queues, the caller
/// session cap.
pub(super) fn check(report: &mut Report, server: &ServerSettings) {
    if let Some(url) = &server.public_url {
        let ok = url.parse::<http::Uri>().is_ok_and(|uri| {
            matches!(uri.scheme_str(), Some("http" | "https"))
                && uri.host().is_some()
                && matches!(uri.path(), "" | "/")
                && uri.query().is_none()
        });
        if !ok {
            report.push(
                &Loc::root().with("server", "public_url"),
                format!("public_url '{url}' must be scheme://host[:port] with no path"),
            );
        }
    }
    let hosts = &server.allowed_hosts;
    if hosts.iter().any(|entry| entry == "*") && hosts.len() > 1 {
        report.push(
            &Loc::root().with("server", "allowed_hosts"),
            "allowed_hosts = [\"*\"] serves any Host: list nothing else with it".to_owned(),
        );
    }
    for entry in hosts.iter().filter(|entry| *entry != "*") {
        if let Err(err) = crate::http::guard::HostPattern::parse(entry) {
            report.push(
                &Loc::root().with("server", "allowed_hosts"),
                err.to_string(),
            );
        }
    }
    if let Some(tls) = &server.tls {
        let loc = Loc::root().with("server", "tls");
        if tls.client_auth != crate::config::ClientAuth::None && tls.client_ca.is_none() {
            report.push(
                &loc,
                "client_auth needs client_ca (the CAs client certificates are verified against)",
            );
        }
        if tls.handshake_timeout_ms == 0 {
            report.push(&loc, "handshake_timeout_ms must be at least 1");
        }
    }
    if server.audit.sink == AuditSink::File && server.audit.path.is_none() {
        report.push(
            &Loc::root().with("server", "audit"),
            "sink = \"file\" needs a path",
        );
    }
    if server.stream_queue_messages == 0 || server.stream_queue_bytes == 0 {
        report.push(
            &Loc::root().with("server", "stream_queue"),
            "stream_queue_messages and stream_queue_bytes must be at least 1",
        );
    }
    if server.audit.queue == 0 {
        report.push(
            &Loc::root().with("server", "audit"),
            "queue must be at least 1",
        );
    }
    if let Some(per_caller) = server.max_sessions_per_caller {
        if per_caller > server.max_sessions_per_tenant {
            report.push(
                &Loc::root().with("server", "max_sessions_per_caller"),
                format!(
                    "max_sessions_per_caller ({per_caller}) must not exceed \
                     max_sessions_per_tenant ({})",
                    server.max_sessions_per_tenant
                ),
            );
        }
    }
}

/// `[telemetry]`: a sampling ratio in [0, 1], an http(s) endpoint, a queue of at least one.
pub(super) fn check_telemetry(report: &mut Report, telemetry: &crate::config::TelemetrySettings) {
    if !telemetry.enabled {
        return;
    }
    let loc = Loc::root().with("telemetry", "");
    if !(0.0..=1.0).contains(&telemetry.sampling_ratio) {
        report.push(&loc, "sampling_ratio must be between 0.0 and 1.0");
    }
    let ok = telemetry.endpoint.parse::<http::Uri>().is_ok_and(|uri| {
        matches!(uri.scheme_str(), Some("http" | "https")) && uri.host().is_some()
    });
    if !ok {
        report.push(
            &loc,
            format!("endpoint '{}' must be an http(s) URL", telemetry.endpoint),
        );
    }
    if telemetry.max_queue_spans == 0 || telemetry.export_timeout_ms == 0 {
        report.push(
            &loc,
            "max_queue_spans and export_timeout_ms must be at least 1",
        );
    }
}

/// The limits a zero would turn into "refuse everything": federated read limits, connection
/// timeouts, the JSON depth and the downstream answer size.
pub(super) fn check_limits(report: &mut Report, server: &ServerSettings) {
    check_federated_limits(report, server);
    check_connection_timeouts(report, server);
    check_size_limits(report, server);
    check_a2a(report, &server.a2a);
}

/// `[server.a2a]`: each limit between 1 and a bound past which it guards nothing (a zero would
/// refuse every task, page or delivery), and a default page size within the largest.
fn check_a2a(report: &mut Report, a2a: &crate::config::A2aSettings) {
    let limits: [(&str, u64, u64); 13] = [
        (
            "max_tasks_per_tenant",
            a2a.max_tasks_per_tenant as u64,
            10_000_000,
        ),
        ("task_retain_secs", a2a.task_retain_secs, 30 * 86_400),
        ("task_active_secs", a2a.task_active_secs, 30 * 86_400),
        (
            "max_events_per_task",
            a2a.max_events_per_task as u64,
            100_000,
        ),
        ("blocking_timeout_secs", a2a.blocking_timeout_secs, 3_600),
        ("list_max_page_size", a2a.list_max_page_size as u64, 1_000),
        (
            "list_default_page_size",
            a2a.list_default_page_size as u64,
            1_000,
        ),
        (
            "max_push_configs_per_task",
            a2a.max_push_configs_per_task as u64,
            100,
        ),
        ("push_queue", a2a.push_queue as u64, 1_000_000),
        ("push_workers", a2a.push_workers as u64, 256),
        ("push_attempts", u64::from(a2a.push_attempts), 10),
        ("push_timeout_ms", a2a.push_timeout_ms, 120_000),
        ("push_backoff_ms", a2a.push_backoff_ms, 60_000),
    ];
    for (name, value, max) in limits {
        if value == 0 || value > max {
            report.push(
                &Loc::root().with("server", format!("a2a.{name}")),
                format!("{name} must be between 1 and {max}"),
            );
        }
    }
    if a2a.list_default_page_size > a2a.list_max_page_size {
        report.push(
            &Loc::root().with("server", "a2a.list_default_page_size"),
            "list_default_page_size must not exceed list_max_page_size".to_owned(),
        );
    }
}

/// Most nesting `max_json_depth` may allow: everything that later walks a payload (writers,
/// serde) recurses once per level, so a deeper limit would only move the failure to a stack.
const MAX_JSON_DEPTH: usize = 1024;

/// Largest `downstream_max_answer_bytes`: one answer is held whole in memory.
const MAX_DOWNSTREAM_ANSWER_BYTES: usize = 1 << 30;

/// The JSON depth (0 would refuse every body) and the downstream answer size (0 would fail
/// every call with an answer), each with an upper bound past which the limit guards nothing.
fn check_size_limits(report: &mut Report, server: &ServerSettings) {
    for (name, value, max) in [
        ("max_json_depth", server.max_json_depth, MAX_JSON_DEPTH),
        (
            "downstream_max_answer_bytes",
            server.downstream_max_answer_bytes,
            MAX_DOWNSTREAM_ANSWER_BYTES,
        ),
    ] {
        if value == 0 || value > max {
            report.push(
                &Loc::root().with("server", name),
                format!("must be between 1 and {max}"),
            );
        }
    }
}

/// Federated read limits: 0 would end every read before its first page.
fn check_federated_limits(report: &mut Report, server: &ServerSettings) {
    if server.federated_max_pages == 0 {
        report.push(
            &Loc::root().with("server", "federated_max_pages"),
            "federated_max_pages must be at least 1",
        );
    }
    if server.federated_max_records == 0 {
        report.push(
            &Loc::root().with("server", "federated_max_records"),
            "federated_max_records must be at least 1",
        );
    }
}

/// A zero connection timeout would close every connection at once.
fn check_connection_timeouts(report: &mut Report, server: &ServerSettings) {
    for (name, secs) in [
        ("header_read_timeout_secs", server.header_read_timeout_secs),
        ("idle_connection_secs", server.idle_connection_secs),
        ("body_read_timeout_secs", server.body_read_timeout_secs),
    ] {
        if secs == 0 {
            report.push(
                &Loc::root().with("server", name),
                "must be at least 1 (0 would close every connection at once)",
            );
        }
    }
}
