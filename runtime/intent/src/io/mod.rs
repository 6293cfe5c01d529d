//! Reading facts and writing outputs, Souffle-compatible.
//!
//! - [`facts`] reads `.input` relations: tab-separated `R.facts` files (or
//!   the directive's `filename=`/`delimiter=`), and JSON-lines (`IO=jsonl`).
//! - [`csv`] writes `.output` relations as sorted delimiter-separated rows.
//! - [`contained`] joins an artifact path under its root, refusing any that
//!   would leave it.
//! - [`updates`] reads a script of transactions (`+R(..).`, `-R(..).`,
//!   `commit.`) and prints a commit's changes in the same notation.
//!
//! Every error names the file, line and column, what was expected and a
//! hint; nothing here panics on bad input.

pub mod contained;
pub mod csv;
pub mod facts;
pub mod updates;

use netc_compiler::plan::Column;
use netc_compiler::value::{ParseValueError, Value};

/// A problem with an input or output file, located where it happened.
#[derive(Debug, thiserror::Error)]
pub enum IoError {
    #[error("cannot read `{path}`: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("cannot write `{path}`: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
    #[error("{location}: {message}")]
    Syntax {
        location: String,
        message: String,
        hint: Option<String>,
    },
}

impl IoError {
    pub fn hint(&self) -> Option<&str> {
        match self {
            IoError::Syntax { hint, .. } => hint.as_deref(),
            IoError::Read { .. } => Some("check the -F directory or the directive's filename="),
            IoError::Write { .. } => Some("check that the -D directory is writable"),
        }
    }
}

/// Reads one attribute value from text for a column, trying each primitive
/// of a union in order.
pub fn parse_column(text: &str, column: &Column) -> Result<Value, ParseValueError> {
    let mut first_err = None;
    for &p in &column.prims {
        match Value::parse(text, p) {
            Ok(v) => return Ok(v),
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    Err(first_err.expect("a column has at least one primitive type"))
}
