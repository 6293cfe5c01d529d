//! Syntax: text → [`ast::Program`](crate::ast::Program).
//!
//! [`lexer`] turns text into tokens (network literals included); [`parser`]
//! turns tokens into items, recovering after each broken one. This module
//! resolves `.include "file"` relative to the including file, splices the
//! included items in place, and reports include cycles and missing files at
//! the `.include` that named them. [`confine`] is the stricter resolution for
//! texts a daemon received from a caller: includes name only those texts or
//! files under one directory. [`components`] expands Souffle's components
//! and `eqrel` relations into plain relations and rules ([`expand`], run on
//! the whole program once every file is parsed).

pub mod components;
pub mod confine;
pub mod lexer;
pub mod mean;
pub mod parser;

use crate::ast::Program;
use crate::diagnostics::{Diagnostic, Diagnostics};
use crate::source::{FileId, SourceMap, Span};
use confine::Target;
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
    parse_file_into(sources, id, &mut Vec::new(), &mut program, diags, None);
    program
}

/// Expands what the front end turns into plain relations and rules:
/// components, then `eqrel` declarations (an instance's `eqrel` too).
/// Runs on the whole program, so a component may be declared in one file
/// and instantiated in another.
pub fn expand(program: &mut Program, diags: &mut Diagnostics) {
    components::expand(program, diags);
    components::desugar_eqrel(program, diags);
    mean::desugar(program);
}

/// Parses a caller's text whose `.include`s may name only what `scope`
/// permits (`confine`). A text an earlier include already spliced in is not
/// parsed again.
pub fn parse_text_in(
    sources: &mut SourceMap,
    name: &str,
    text: &str,
    diags: &mut Diagnostics,
    scope: &confine::Scope,
) -> Program {
    let mut program = Program::default();
    if scope.registered(sources, name) {
        return program;
    }
    let id = sources.add(name, None, text.to_string());
    parse_file_into(
        sources,
        id,
        &mut Vec::new(),
        &mut program,
        diags,
        Some(scope),
    );
    program
}

/// Parses files from disk in order, as one program.
pub fn parse_files(sources: &mut SourceMap, paths: &[PathBuf], diags: &mut Diagnostics) -> Program {
    let mut program = Program::default();
    for path in paths {
        match sources.load(path) {
            Ok(id) => parse_file_into(sources, id, &mut Vec::new(), &mut program, diags, None),
            Err(e) => diags.push(
                Diagnostic::error_nospan("E0002", format!("cannot read `{}`: {e}", path.display()))
                    .with_hint("check the path; programs are given as FILE arguments"),
            ),
        }
    }
    program
}

/// Parses one registered file and splices its includes; `stack` holds the
/// files being included (for cycle detection); `scope` confines includes.
fn parse_file_into(
    sources: &mut SourceMap,
    id: FileId,
    stack: &mut Vec<FileId>,
    program: &mut Program,
    diags: &mut Diagnostics,
    scope: Option<&confine::Scope>,
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
            parser::Parsed::Items(items) => program.items.extend(items),
            parser::Parsed::Pragma(key, _, span) => {
                components::pragma(&key, span, &mut program.pragmas_seen, diags)
            }
            parser::Parsed::Include(name, span) => {
                let target = match scope {
                    Some(scope) => scope.resolve(sources, id, &name, span),
                    None => from_disk(sources, id, &name, span),
                };
                match target {
                    Ok(Target::New(inc)) => {
                        parse_file_into(sources, inc, stack, program, diags, scope)
                    }
                    Ok(Target::Again(inc)) if stack.contains(&inc) => diags.push(
                        Diagnostic::error(
                            "E0004",
                            span,
                            format!("`{name}` includes itself (include cycle)"),
                        )
                        .with_hint("remove one of the `.include` directives in the cycle"),
                    ),
                    // Included before, outside the current chain: include once (like a guard).
                    Ok(Target::Again(_)) => {}
                    Err(d) => diags.push(d),
                }
            }
        }
    }
    stack.pop();
}

/// `.include` on the command line: the file on disk, relative to the
/// including file (the current directory for text not on disk).
fn from_disk(
    sources: &mut SourceMap,
    from: FileId,
    name: &str,
    span: Span,
) -> Result<Target, Diagnostic> {
    let base = sources
        .file(from)
        .path
        .as_ref()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .unwrap_or_default();
    let path = base.join(name);
    if let Some(existing) = sources.find_path(&path) {
        return Ok(Target::Again(existing));
    }
    sources.load(&path).map(Target::New).map_err(|e| {
        Diagnostic::error(
            "E0003",
            span,
            format!("cannot include `{}`: {e}", path.display()),
        )
        .with_hint("paths in `.include` are relative to the including file")
    })
}
