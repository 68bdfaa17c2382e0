//! Integration tests: the `sluice` binary's `check` subcommand and `serve` refusing an invalid
//! file, run as real processes.

use std::process::Command;

use crate::support::Binary;

fn sluice() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
}

fn fixture(name: &str) -> String {
    format!(
        "{}/tests/fixtures/catalog/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

#[test]
fn check_accepts_a_valid_file() {
    let out = sluice()
        .args(["check", "--config", &fixture("valid.toml")])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.starts_with("ok: 2 tenants"), "{stdout}");
}

#[test]
fn check_reports_every_problem_with_its_location_and_fails() {
    let out = sluice()
        .args(["check", "--config", &fixture("invalid_many.toml")])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let located = stdout.lines().filter(|l| l.starts_with("tenant '")).count();
    assert!(located >= 5, "expected many located problems:\n{stdout}");
}

#[test]
fn check_reports_syntax_errors_with_line_and_column() {
    let out = sluice()
        .args(["check", "--config", &fixture("invalid_syntax.toml")])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout.contains("line"), "{stdout}");
}

#[test]
fn serve_refuses_an_invalid_file_with_the_same_report() {
    let out = sluice()
        .args([
            "serve",
            "--config",
            &fixture("invalid_many.toml"),
            "--listen",
            "127.0.0.1:0",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("is invalid"), "{stderr}");
    assert!(stderr.contains("tenant '"), "{stderr}");
}

#[test]
fn import_prints_a_configuration_or_located_problems() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let out = sluice()
        .args([
            "import",
            "wsdl",
            &format!("{dir}/tests/fixtures/soap/calculator.wsdl"),
        ])
        .args([
            "--binding",
            "soap12",
            "--operations",
            "Add",
            "--tenant",
            "calc",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("name = \"add\"") && text.contains("version = \"1.2\""),
        "{text}"
    );
    assert!(!text.contains("name = \"divide\""), "{text}");
    assert!(sluice::config::parse(&text, "stdout").is_ok());

    let out = sluice()
        .args([
            "import",
            "openapi",
            &format!("{dir}/tests/fixtures/soap/calculator.wsdl"),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let errors = String::from_utf8_lossy(&out.stderr);
    assert!(
        errors.starts_with("error: ") && errors.contains("calculator.wsdl"),
        "{errors}"
    );
}

#[test]
fn the_readme_configuration_example_is_valid() {
    let readme =
        std::fs::read_to_string(format!("{}/README.md", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let example = readme
        .split("### Configuration at a glance")
        .nth(1)
        .and_then(|rest| rest.split("```toml").nth(1))
        .and_then(|rest| rest.split("```").next())
        .expect("README has the configuration example");
    let config = sluice::config::parse(example, "README.md").expect("it parses");
    let catalog = sluice::catalog::Catalog::from_config(&config);
    assert!(
        catalog.is_ok(),
        "{:?}",
        catalog.err().map(|r| r.to_string())
    );
}

#[test]
fn key_new_prints_a_key_and_its_hash_entry() {
    let out = sluice()
        .args(["key", "new"])
        .env("SLUICE_API_KEY_PEPPER", "cli-pepper")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let token = stdout
        .lines()
        .map(str::trim)
        .find(|line| line.starts_with("rtk_"))
        .unwrap_or_else(|| panic!("no key in {stdout}"));
    let parsed = sluice::auth::apikey::parse(token).expect("a well-formed key");
    let id_line = format!("id = \"{}\"", parsed.id);
    assert!(stdout.contains(&id_line), "{stdout}");
    let hash = sluice::auth::apikey::hash_secret(b"cli-pepper", parsed.secret);
    let hash_line = format!("hash = \"{}\"", hex::encode(hash));
    assert!(stdout.contains(&hash_line), "{stdout}");
    // The secret itself never appears in the configuration entry.
    let entry = &stdout[stdout.find("[[tenant.client.api_key]]").expect("entry")..];
    assert!(!entry.contains(parsed.secret));

    let out = sluice()
        .args(["key", "new"])
        .env_remove("SLUICE_API_KEY_PEPPER")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("SLUICE_API_KEY_PEPPER"));
}

/// `serve` logs JSON lines when configured to, warns when several instances are expected without
/// Redis, answers `/readyz`, and on SIGTERM drains and exits 0 (the process a deployment stops).
#[test]
fn serve_logs_json_and_drains_on_sigterm() {
    use std::io::{Read, Write};
    use std::time::Duration;

    let mut binary = Binary::start(
        "cli",
        "[server]\nlisten = \"127.0.0.1:0\"\n[server.log]\nformat = \"json\"\n\
         [cluster]\nexpected_instances = 2\n\
         [[tenant]]\nid = \"t\"\nauth = { anonymous = true }\n[[tenant.client]]\nid = \"c\"\n",
    );
    let next = |what: &str| binary.until(what);
    let listening = next("listening");
    assert_eq!(listening["level"], "INFO");
    let addr = listening["fields"]["addr"].as_str().unwrap().to_owned();
    // Several instances expected without Redis: said once at start, not refused.
    let warning = next(
        "several instances are expected but [cluster] redis_url is not set: sessions and \
         streams are process-local, so each instance only knows its own (clients need sticky \
         routing)",
    );
    assert_eq!(warning["level"], "WARN");
    assert_eq!(warning["fields"]["expected_instances"], 2);

    let mut stream = std::net::TcpStream::connect(&addr).unwrap();
    stream
        .write_all(b"GET /readyz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
        .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");

    binary.signal("TERM");
    next("SIGTERM: shutting down");
    next("drained; exiting");
    let exit = binary.wait(Duration::from_secs(20));
    assert!(exit.success(), "{exit:?}");
}
