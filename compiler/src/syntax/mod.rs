//! Syntax: text → [`ast::Program`](crate::ast::Program).
//!
//! [`lexer`] turns text into tokens (network literals included); [`parser`]
//! turns tokens into items, recovering after each broken one. This module
//! resolves `.include "file"` relative to the including file, splices the
//! included items in place, and reports include cycles and missing files at
//! the `.include` that named them.

pub mod lexer;
pub mod parser;

use crate::ast::Program;
use crate::diagnostics::{Diagnostic, Diagnostics};
use crate::source::{FileId, SourceMap, Span};
use std::path::{Path, PathBuf};

/// Parses text that is not (necessarily) on disk, e.g. a test program or
/// stdin. `.include`s resolve relative to the current directory.
pub fn parse_text(
    sources: &mut SourceMap,
    name: &str,
    text: &str,
    diags: &mut Diagnostics,
) -> Program {
    let id = sources.add(name, None, text.to_string());
    let mut program = Program::default();
    parse_file_into(sources, id, &mut Vec::new(), &mut program, diags);
    program
}

/// Parses files from disk in order, as one program.
pub fn parse_files(sources: &mut SourceMap, paths: &[PathBuf], diags: &mut Diagnostics) -> Program {
    let mut program = Program::default();
    for path in paths {
        match sources.load(path) {
            Ok(id) => parse_file_into(sources, id, &mut Vec::new(), &mut program, diags),
            Err(e) => diags.push(
                Diagnostic::error_nospan("E0002", format!("cannot read `{}`: {e}", path.display()))
                    .with_hint("check the path; programs are given as FILE arguments"),
            ),
        }
    }
    program
}

/// Parses one registered file and splices its includes; `stack` holds the
/// files being included (for cycle detection).
fn parse_file_into(
    sources: &mut SourceMap,
    id: FileId,
    stack: &mut Vec<FileId>,
    program: &mut Program,
    diags: &mut Diagnostics,
) {
    let tokens = lexer::lex(id, &sources.file(id).text);
    let mut errors = Vec::new();
    let parsed = parser::Parser::new(&tokens).items(&mut errors);
    for e in errors {
        diags.push(e);
    }
    stack.push(id);
    for p in parsed {
        match p {
            parser::Parsed::Item(item) => program.items.push(item),
            parser::Parsed::Include(name, span) => {
                include(sources, id, &name, span, stack, program, diags)
            }
        }
    }
    stack.pop();
}

fn include(
    sources: &mut SourceMap,
    from: FileId,
    name: &str,
    span: Span,
    stack: &mut Vec<FileId>,
    program: &mut Program,
    diags: &mut Diagnostics,
) {
    let base = sources
        .file(from)
        .path
        .as_ref()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .unwrap_or_default();
    let path = base.join(name);
    if let Some(existing) = sources.find_path(&path) {
        if stack.contains(&existing) {
            diags.push(
                Diagnostic::error(
                    "E0004",
                    span,
                    format!("`{name}` includes itself (include cycle)"),
                )
                .with_hint("remove one of the `.include` directives in the cycle"),
            );
            return;
        }
        // Included before, outside the current chain: include once (like a guard).
        return;
    }
    match sources.load(&path) {
        Ok(id) => parse_file_into(sources, id, stack, program, diags),
        Err(e) => diags.push(
            Diagnostic::error(
                "E0003",
                span,
                format!("cannot include `{}`: {e}", path.display()),
            )
            .with_hint("paths in `.include` are relative to the including file"),
        ),
    }
}
