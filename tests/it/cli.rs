//! Integration tests: the `sluice` binary's `check` subcommand and `serve` refusing an invalid
//! file, run as real processes.

use std::process::Command;

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
fn the_readme_configuration_example_is_valid() {
    let readme =
        std::fs::read_to_string(format!("{}/README.md", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let example = readme
        .split("### Configuration at a glance")
        .nth(1)
        .and_then(|rest| rest.split("```toml").nth(1))
        .and_then(|rest| rest.split("```").next())
        .expect("README has the configuration example");
    let config = sluice::catalog::load::parse(example, "README.md").expect("it parses");
    let catalog = sluice::catalog::Catalog::from_config(&config);
    assert!(
        catalog.is_ok(),
        "{:?}",
        catalog.err().map(|r| r.to_string())
    );
}
