//! Integration tests of the bundled demo: the banner's copy-pasteable sessions run as they stand
//! against `sluice demo` (its APIs and configuration) on 127.0.0.1:0.

use std::time::Duration;

use crate::support::demo;

/// The banner's BOS platform session — contexts, the context's tools, then `bos_execute` of
/// `find_people` streamed through `/mcp/apps/bos/platform` — run by `sh` exactly as printed.
#[tokio::test]
async fn banner_bos_session_streams_find_people_through_the_platform() {
    let demo = demo().await;
    let script = sluice::demo::bos_session(demo.addr);
    assert!(sluice::demo::banner(demo.addr).contains(&script));
    let output = tokio::time::timeout(
        Duration::from_secs(30),
        tokio::process::Command::new("sh")
            .arg("-c")
            .arg(format!("set -e\n{script}"))
            .output(),
    )
    .await
    .expect("the session ends")
    .expect("sh runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // bos_list_contexts names the demo context; bos_list_tools lists find_people in it.
    assert!(
        stdout.contains(r#""application_name":"Demo CRM""#),
        "{stdout}"
    );
    assert!(stdout.contains(r#""name":"find_people""#), "{stdout}");
    // bos_execute streamed each source's pages, then the identity envelope of the merged result.
    let pages = stdout
        .lines()
        .filter(|line| {
            line.starts_with("data: ") && line.contains("notifications/bos/source_result")
        })
        .count();
    assert!(pages >= 3, "one terminal per source at least: {stdout}");
    let last = stdout
        .lines()
        .rev()
        .find_map(|line| line.strip_prefix("data: "))
        .expect("a final event");
    let last: serde_json::Value = serde_json::from_str(last).expect("JSON final response");
    assert_eq!(last["id"], "search-1");
    let envelope = &last["result"]["structuredContent"];
    assert_eq!(envelope["contract_version"], "bos-identity-mcp/v2");
    assert_eq!(envelope["context"]["application_name"], "Demo CRM");
    assert!(envelope["result"]["result"]
        .as_array()
        .is_some_and(|r| !r.is_empty()));
}

/// The banner's A2A session — the card, a blocking `SendMessage` of `get_customer`, then a
/// streamed `find_people` — run by `sh` exactly as printed.
#[tokio::test]
async fn banner_a2a_session_runs_get_customer_and_streams_find_people() {
    let demo = demo().await;
    let script = sluice::demo::a2a_session(demo.addr);
    assert!(sluice::demo::banner(demo.addr).contains(&script));
    let output = tokio::time::timeout(
        Duration::from_secs(30),
        tokio::process::Command::new("sh")
            .arg("-c")
            .arg(format!("set -e\n{script}"))
            .output(),
    )
    .await
    .expect("the session ends")
    .expect("sh runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut lines = stdout.lines();
    let card: serde_json::Value =
        serde_json::from_str(lines.next().expect("the card")).expect("a JSON card");
    assert!(card["skills"]
        .as_array()
        .is_some_and(|skills| skills.iter().any(|s| s["id"] == "get_customer")));
    let sent: serde_json::Value =
        serde_json::from_str(lines.next().expect("the send")).expect("a JSON answer");
    assert_eq!(
        sent["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{sent}"
    );
    assert_eq!(
        sent["result"]["task"]["artifacts"][0]["parts"][0]["data"]["id"],
        "c-100"
    );
    let events: Vec<serde_json::Value> = stdout
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .map(|data| serde_json::from_str(data).expect("JSON event"))
        .collect();
    assert!(events[0]["result"]["task"].is_object(), "{stdout}");
    assert!(
        events
            .iter()
            .filter(|e| e["result"]["artifactUpdate"]["append"] == true)
            .count()
            >= 1,
        "{stdout}"
    );
    let last = events.last().expect("a last event");
    assert_eq!(
        last["result"]["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{last}"
    );
}
