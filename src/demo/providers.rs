//! Demo people providers for the federated `find_people` tool, speaking the provider protocol
//! (`GET …?q=…&cursor=…&limit=…` → `{"records":[…],"next_cursor":…}`):
//!
//! - `directory`: a fast source, a handful of people on one page;
//! - `ledger`: a paged source with many records (pages of `limit`, a short pause per page) whose
//!   people overlap the directory by email and phone, so the final merge has work to do;
//! - `archive`: a slow source that answers after the tool's source timeout, so every call shows a
//!   `source_timeout` and a partial result.
//!
//! Must not be used outside `sluice demo` and tests.

use std::time::Duration;

use serde_json::{json, Value};

/// People of the directory: (id, name, email, phone, status, city).
const DIRECTORY: &[(&str, &str, &str, &str, &str, &str)] = &[
    (
        "d-1",
        "Ada Lovelace",
        "ada@example.com",
        "+44 20 7946 0001",
        "active",
        "London",
    ),
    (
        "d-2",
        "Grace Hopper",
        "grace@example.com",
        "+1 703 555 0102",
        "active",
        "Arlington",
    ),
    (
        "d-3",
        "Alan Turing",
        "alan@example.com",
        "+44 20 7946 0003",
        "inactive",
        "London",
    ),
    (
        "d-4",
        "Edsger Dijkstra",
        "edsger@example.com",
        "+1 512 555 0104",
        "active",
        "Austin",
    ),
    (
        "d-5",
        "Barbara Liskov",
        "barbara@example.com",
        "+1 617 555 0105",
        "active",
        "Boston",
    ),
];

/// Records the ledger holds.
pub(crate) const LEDGER_SIZE: usize = 240;

/// How long the ledger pauses before each page (so pages visibly stream).
const LEDGER_PAGE_PAUSE: Duration = Duration::from_millis(40);

/// How long the archive takes: longer than the demo tool's source timeout.
const ARCHIVE_DELAY: Duration = Duration::from_secs(5);

/// Answers `GET /people/{source}` with one page, or `None` for an unknown source.
pub(crate) async fn page(
    source: &str,
    q: Option<&str>,
    cursor: Option<&str>,
    limit: usize,
) -> Option<Value> {
    let limit = limit.clamp(1, 500);
    let q = q.map(str::to_lowercase).filter(|q| !q.is_empty());
    let matches = |name: &str| q.as_deref().is_none_or(|q| name.to_lowercase().contains(q));
    match source {
        "directory" => {
            let records: Vec<Value> = DIRECTORY
                .iter()
                .filter(|p| matches(p.1))
                .map(|p| {
                    record(
                        "directory",
                        p.0,
                        json!({
                            "name": p.1, "mail": p.2, "tel": p.3, "status": p.4, "city": p.5,
                        }),
                    )
                })
                .collect();
            Some(json!({ "records": records, "next_cursor": null }))
        }
        "ledger" => {
            tokio::time::sleep(LEDGER_PAGE_PAUSE).await;
            let people: Vec<(usize, String)> = (0..LEDGER_SIZE)
                .map(|n| (n, ledger_name(n)))
                .filter(|(_, name)| matches(name))
                .collect();
            let start: usize = cursor.and_then(|c| c.parse().ok()).unwrap_or(0);
            let end = (start + limit).min(people.len());
            let records: Vec<Value> = people
                .get(start..end)
                .unwrap_or_default()
                .iter()
                .map(|(n, name)| ledger_record(*n, name))
                .collect();
            let next = (end < people.len()).then(|| end.to_string());
            Some(json!({ "records": records, "next_cursor": next }))
        }
        "archive" => {
            tokio::time::sleep(ARCHIVE_DELAY).await;
            Some(json!({ "records": [], "next_cursor": null }))
        }
        _ => None,
    }
}

/// The ledger's n-th person: the first directory people again (matched by email or phone),
/// then generated customers.
fn ledger_name(n: usize) -> String {
    match DIRECTORY.get(n) {
        Some(person) => person.1.to_owned(),
        None => format!("Customer {n:03}"),
    }
}

fn ledger_record(n: usize, name: &str) -> Value {
    let fields = match DIRECTORY.get(n) {
        // Same person as the directory's: the email differs in case and spacing (normalized
        // equal) for even ones, the phone in punctuation for odd ones.
        Some(p) if n.is_multiple_of(2) => {
            json!({ "full_name": name, "email": format!(" {} ", p.2.to_uppercase()), "segment": "gold" })
        }
        Some(p) => {
            json!({ "full_name": name, "phone": p.3.replace(' ', "-"), "segment": "silver" })
        }
        None => json!({
            "full_name": name,
            "email": format!("customer{n:03}@example.net"),
            "segment": if n.is_multiple_of(3) { "gold" } else { "bronze" },
        }),
    };
    let mut record = record("ledger", &format!("L{n:04}"), fields);
    record["version"] = json!(n % 5 + 1);
    record
}

fn record(source_identity: &str, external_id: &str, fields: Value) -> Value {
    json!({
        "source_identity": source_identity,
        "external_id": external_id,
        "record_type": "person",
        "observed_at": "2026-11-30T09:00:00Z",
        "fields": fields,
    })
}
