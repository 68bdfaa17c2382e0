//! Contract importers: a WSDL 1.1 + XSD contract (`sluice import wsdl`) or an OpenAPI 3.0/3.1
//! document (`sluice import openapi`) becomes tool mappings a tenant can serve at once and edit
//! later.
//!
//! `openapi.rs` maps each operation to a REST tool (parameters, JSON bodies, the 2xx JSON
//! response, local `$ref`s).
//! `wsdl.rs` loads the contract and its `wsdl:import`/`xsd:import`/`xsd:include` files (local
//! files only, relative to the including file: nothing is ever fetched), picks one binding
//! per operation and writes one tool per operation; `xsd.rs` turns element content into field
//! rules; `emit.rs` writes the configuration text. Problems carry the file, line and column of
//! the construct. Runs from the CLI, never at request time; must not touch the catalog or the
//! network.

mod emit;
mod openapi;
mod wsdl;
mod xsd;

use std::fmt;

pub use emit::{config_text, RuleSpec, ToolSpec};
pub use openapi::{import_openapi, OpenApiOptions};
pub use wsdl::{import_wsdl, Binding, WsdlOptions};

/// Largest contract file read, in bytes.
pub(crate) const MAX_CONTRACT_BYTES: u64 = 16 * 1024 * 1024;

/// A problem in a contract, located.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The file, as given or resolved (empty until the importer names it).
    pub file: String,
    /// 1-based line (0 when not known).
    pub line: u32,
    /// 1-based column.
    pub col: u32,
    /// What is wrong.
    pub message: String,
    /// Which loaded document the position is in (its text's address), to name the file.
    doc: usize,
}

impl Problem {
    /// A problem at `node`.
    pub(crate) fn at(node: roxmltree::Node<'_, '_>, message: String) -> Self {
        let doc = node.document();
        let pos = doc.text_pos_at(node.range().start);
        Problem {
            file: String::new(),
            line: pos.row,
            col: pos.col,
            message,
            doc: doc.input_text().as_ptr() as usize,
        }
    }

    /// A problem of a whole file.
    pub(crate) fn file(file: &str, message: String) -> Self {
        Problem {
            file: file.to_owned(),
            line: 0,
            col: 0,
            message,
            doc: 0,
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(
                f,
                "{}:{}:{}: {}",
                self.file, self.line, self.col, self.message
            )
        }
    }
}
