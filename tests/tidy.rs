//! Repository hygiene, checked by reading files only (no sluice code runs): every Rust file of
//! `src/`, `tests/` and `benches/` opens with a `//!` doc; nothing in `src/`, `tests/`,
//! `benches/`, `README.md`, `ARCHITECTURE.md` or `PERFORMANCE.md` points at a document or a
//! path outside this repository; no `src/` file is longer than [`MAX_SRC_LINES`] lines.
//!
//! Every offender is printed at once, so one run lists all the work. Owns only these checks;
//! it must not grow into a linter of style (clippy and rustfmt do that).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The longest a `src/` file may be: past this, a file holds several concerns.
const MAX_SRC_LINES: usize = 800;

/// Files that offended when this test was written (paths relative to the repository root,
/// `/`-separated); an entry excuses every check for its file. This list must only shrink: fix
/// a file and delete its entry (the test fails on an entry whose file no longer offends), never
/// add one.
const KNOWN_OFFENDERS: &[&str] = &[];

/// Strings that name something outside the repository: design notes and protocol digests that
/// live beside it, and paths of the machine it was written on. Built from pieces so that this
/// file does not match itself.
fn outside_references() -> Vec<String> {
    let md = ".md";
    vec![
        format!("../{}", "shared"),
        format!("DESIGN{md}"),
        format!("protocol/mcp{md}"),
        format!("protocol/auth{md}"),
        format!("protocol/a2a{md}"),
        format!("protocol/soap{md}"),
        format!("/{}/", "work"),
    ]
}

/// Directories never walked: installed packages and build output, not repository content.
const SKIPPED_DIRS: &[&str] = &[
    "node_modules",
    "target",
    ".venv",
    "venv",
    "__pycache__",
    ".pytest_cache",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every file under `dir` (relative to the root), sorted, skipping [`SKIPPED_DIRS`].
fn walk(dir: &str) -> Vec<PathBuf> {
    fn visit(path: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(path) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name();
            if path.is_dir() {
                if !SKIPPED_DIRS.iter().any(|skip| name == *skip) {
                    visit(&path, out);
                }
            } else {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    visit(&root().join(dir), &mut out);
    out.sort();
    out
}

/// A path relative to the root, `/`-separated.
fn relative(path: &Path) -> String {
    let rel = path.strip_prefix(root()).unwrap_or(path);
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// One problem of one file.
struct Offence {
    file: String,
    what: String,
}

fn check_docs(offences: &mut Vec<Offence>) {
    for dir in ["src", "tests", "benches"] {
        for path in walk(dir) {
            if path.extension().is_none_or(|ext| ext != "rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let first = text.lines().find(|line| !line.trim().is_empty());
            if !first.is_some_and(|line| line.trim_start().starts_with("//!")) {
                offences.push(Offence {
                    file: relative(&path),
                    what: "does not open with a `//!` doc".to_owned(),
                });
            }
        }
    }
}

fn check_references(offences: &mut Vec<Offence>) {
    let needles = outside_references();
    let this_file = root().join("tests").join("tidy.rs");
    let mut files: Vec<PathBuf> = ["src", "tests", "benches"]
        .iter()
        .flat_map(|dir| walk(dir))
        .collect();
    files.extend(
        ["README.md", "ARCHITECTURE.md", "PERFORMANCE.md"]
            .iter()
            .map(|name| root().join(name)),
    );
    for path in files {
        if path == this_file {
            continue;
        }
        // Binary files (fuzz seeds, keys in DER) are not text and cite nothing.
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        for (n, line) in text.lines().enumerate() {
            for needle in &needles {
                if line.contains(needle.as_str()) {
                    offences.push(Offence {
                        file: relative(&path),
                        what: format!("line {}: refers outside the repository ({needle:?})", n + 1),
                    });
                }
            }
        }
    }
}

fn check_lengths(offences: &mut Vec<Offence>) {
    for path in walk("src") {
        if path.extension().is_none_or(|ext| ext != "rs") {
            continue;
        }
        let lines = std::fs::read_to_string(&path)
            .unwrap_or_default()
            .lines()
            .count();
        if lines > MAX_SRC_LINES {
            offences.push(Offence {
                file: relative(&path),
                what: format!("{lines} lines, more than {MAX_SRC_LINES}"),
            });
        }
    }
}

#[test]
fn the_repository_is_tidy() {
    let mut offences = Vec::new();
    check_docs(&mut offences);
    check_references(&mut offences);
    check_lengths(&mut offences);

    let mut report = String::new();
    for offence in &offences {
        if !KNOWN_OFFENDERS.contains(&offence.file.as_str()) {
            let _ = writeln!(report, "{}: {}", offence.file, offence.what);
        }
    }
    for known in KNOWN_OFFENDERS {
        if !offences.iter().any(|o| o.file == *known) {
            let _ = writeln!(
                report,
                "{known}: no longer offends; delete it from KNOWN_OFFENDERS"
            );
        }
    }
    assert!(report.is_empty(), "the repository is not tidy:\n{report}");
}
