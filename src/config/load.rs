//! Reading `sluice.toml`: read the file (bounded), parse the TOML into a [`Config`].
//!
//! Owns file IO and syntax errors (with line and column). Must not check meaning (that is
//! `validate.rs`, which reports every problem with its location) or read the environment (that
//! is `env.rs`; [`super::load`] applies both).

use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

use super::Config;

/// Largest configuration file read, in bytes. A larger file is refused with
/// [`LoadError::TooLarge`] before it is parsed.
pub(crate) const MAX_CONFIG_BYTES: u64 = 64 * 1024 * 1024;

/// Why a configuration file could not be turned into a [`Config`].
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file could not be read.
    #[error("file '{path}': {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The IO error.
        #[source]
        source: std::io::Error,
    },
    /// The file is larger than the limit.
    #[error("file '{path}': larger than {limit} bytes")]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The limit that was hit.
        limit: u64,
    },
    /// The file is not UTF-8.
    #[error("file '{path}': not valid UTF-8 (byte {offset})")]
    NotUtf8 {
        /// The file.
        path: PathBuf,
        /// Byte offset of the first invalid sequence.
        offset: usize,
    },
    /// TOML syntax error or a value of the wrong shape for the model.
    #[error("{0}")]
    Syntax(SyntaxError),
}

/// A TOML syntax or shape error with its position (1-based line and column, when known).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    /// The file name as given (or `<input>` when parsing a string).
    pub source_name: String,
    /// 1-based line, when the parser knows the position.
    pub line: Option<usize>,
    /// 1-based column in characters, when the parser knows the position.
    pub column: Option<usize>,
    /// What the parser said.
    pub message: String,
}

impl fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "file '{}'", self.source_name)?;
        if let (Some(line), Some(column)) = (self.line, self.column) {
            write!(f, " line {line}, column {column}")?;
        }
        write!(f, ": {}", self.message.trim_end())
    }
}

/// Reads and parses a configuration file, as written (no environment overrides).
pub(super) fn read(path: &Path) -> Result<Config, LoadError> {
    let text = read_bounded(path, MAX_CONFIG_BYTES)?;
    parse(&text, &path.display().to_string()).map_err(LoadError::Syntax)
}

/// Parses configuration text; `source_name` names it in error messages.
pub fn parse(text: &str, source_name: &str) -> Result<Config, SyntaxError> {
    toml::from_str::<Config>(text).map_err(|err| {
        let (line, column) = match err.span() {
            Some(span) => {
                let (line, column) = line_column(text, span.start);
                (Some(line), Some(column))
            }
            None => (None, None),
        };
        SyntaxError {
            source_name: source_name.to_owned(),
            line,
            column,
            message: err.message().to_owned(),
        }
    })
}

fn read_bounded(path: &Path, limit: u64) -> Result<String, LoadError> {
    let io_err = |source| LoadError::Io {
        path: path.to_owned(),
        source,
    };
    let file = std::fs::File::open(path).map_err(io_err)?;
    let mut bytes = Vec::new();
    // Reading one byte past the limit tells a file of exactly `limit` bytes from a larger one.
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io_err)?;
    if bytes.len() as u64 > limit {
        return Err(LoadError::TooLarge {
            path: path.to_owned(),
            limit,
        });
    }
    String::from_utf8(bytes).map_err(|err| LoadError::NotUtf8 {
        path: path.to_owned(),
        offset: err.utf8_error().valid_up_to(),
    })
}

/// 1-based line and column (in characters) of a byte offset.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    // Back up to a character boundary so slicing cannot panic.
    let offset = (0..=offset)
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    let before = &text[..offset];
    let line = before.bytes().filter(|&b| b == b'\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(input: &str, expected: Result<usize, &str>) {
        let got = parse(input, "t.toml").map(|c| c.tenants.len());
        match (got, expected) {
            (Ok(n), Ok(want)) => assert_eq!(n, want, "{input}"),
            (Err(err), Err(want)) => assert_eq!(err.to_string(), want, "{input}"),
            (got, want) => panic!("{input}: got {got:?}, want {want:?}"),
        }
    }

    #[test]
    fn parses_minimal_files() {
        check("", Ok(0));
        check(
            "[[tenant]]\nid = \"a\"\nauth = { anonymous = true }\n",
            Ok(1),
        );
        check("[server]\nlisten = \"0.0.0.0:1\"\n", Ok(0));
    }

    #[test]
    fn syntax_errors_carry_line_and_column() {
        check(
            "[[tenant]]\nid = = 1\n",
            Err("file 't.toml' line 2, column 6: extra `=`, expected nothing"),
        );
        check(
            "[[tenant]]\nid = \"a\"\nauth = { anonymous = true }\nbogus = 1\n",
            Err("file 't.toml' line 4, column 1: unknown field `bogus`, expected one of `id`, `client`, `toolset`, `assignment`, `auth`, `bos_context`, `rate_limit`, `a2a`, `a2a_agent`"),
        );
    }

    #[test]
    fn line_column_counts_characters() {
        assert_eq!(line_column("ab\ncé\nx", 0), (1, 1));
        assert_eq!(line_column("ab\ncé\nx", 3), (2, 1));
        assert_eq!(line_column("ab\ncé\nx", 7), (3, 1));
        assert_eq!(line_column("ab\ncé\nx", 5), (2, 2)); // inside 'é': backs up
        assert_eq!(line_column("ab", 99), (1, 3));
    }
}
