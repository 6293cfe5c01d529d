//! Directives: `.input`, `.output` and `.printsize` attached to the
//! relations they name, their IO parameters checked.
//!
//! Expects: the program and its relations ([`super::resolve::relations`]).
//! Guarantees: a directive naming an undeclared relation is E0108 (with a
//! did-you-mean or a `.decl` hint); every IO parameter or value netc does
//! not implement (specs/language.md §3) is E0116, never ignored; each named
//! relation gets the directive's [`IoSpec`].

use super::ir::RelInfo;
use super::{did_you_mean, Reporter};
use crate::ast::{DirectiveKind, Item, Program};
use crate::diagnostics::Diagnostic;
use crate::plan::IoSpec;
use std::collections::HashMap;

/// Attaches `.input`, `.output` and `.printsize` directives to their relations.
pub fn directives(program: &Program, rels: &mut [RelInfo], r: &mut Reporter) {
    let index: HashMap<String, usize> = rels
        .iter()
        .enumerate()
        .map(|(i, rel)| (rel.name.clone(), i))
        .collect();
    for item in &program.items {
        let Item::Directive(d) = item else { continue };
        for name in &d.relations {
            let Some(&id) = index.get(&name.name) else {
                let kind = match d.kind {
                    DirectiveKind::Input => ".input",
                    DirectiveKind::Output => ".output",
                    DirectiveKind::PrintSize => ".printsize",
                };
                let mut diag = Diagnostic::error(
                    "E0108",
                    name.span,
                    format!("`{kind}` names undeclared relation `{}`", name.name),
                );
                diag = match did_you_mean(&name.name, rels.iter().map(|r| r.name.as_str())) {
                    Some(h) => diag.with_hint(h),
                    None => diag.with_hint(format!(
                        "declare it first, e.g. `.decl {}(x: symbol)`",
                        name.name
                    )),
                };
                r.push(diag);
                continue;
            };
            io_params(d, r);
            let spec = IoSpec {
                params: d
                    .params
                    .iter()
                    .map(|(k, v)| (k.name.clone(), v.clone()))
                    .collect(),
            };
            match d.kind {
                DirectiveKind::Input => rels[id].inputs.push(spec),
                DirectiveKind::Output => rels[id].outputs.push(spec),
                DirectiveKind::PrintSize => rels[id].printsize = true,
            }
        }
    }
}

/// The IO parameters netc implements (specs/language.md §3); any other
/// parameter or value is an error naming it (E0116), never ignored.
fn io_params(d: &crate::ast::Directive, r: &mut Reporter) {
    let (allowed, ios): (&[&str], &[&str]) = match d.kind {
        DirectiveKind::Input => (
            &["IO", "filename", "delimiter", "headers"],
            &["file", "jsonl"],
        ),
        DirectiveKind::Output => (
            &["IO", "filename", "delimiter", "headers"],
            &["file", "stdout"],
        ),
        DirectiveKind::PrintSize => (&[], &[]),
    };
    for (k, v) in &d.params {
        let bad = if !allowed.contains(&k.name.as_str()) {
            Some(format!(
                "IO parameter `{}` is not supported by netc",
                k.name
            ))
        } else if k.name == "IO" && !ios.contains(&v.as_str()) {
            let verb = if matches!(d.kind, DirectiveKind::Input) {
                "reads"
            } else {
                "writes"
            };
            Some(format!(
                "`IO={v}` is not supported by netc here (it {verb} {})",
                ios.join(", ")
            ))
        } else if k.name == "headers" && v != "true" && v != "false" {
            Some(format!("`headers={v}`: expected true or false"))
        } else {
            None
        };
        if let Some(message) = bad {
            let hint = match k.name.as_str() {
                "compress" => "write the file uncompressed and compress it afterwards; specs/language.md §3 lists the IO parameters netc reads".to_string(),
                "rfc4180" => "netc reads delimiter-separated fields without quoting; specs/language.md §3 lists the IO parameters netc reads".to_string(),
                _ => format!(
                    "supported here: {}; see specs/language.md §3",
                    if allowed.is_empty() { "none".to_string() } else { allowed.join(", ") }
                ),
            };
            r.push(Diagnostic::error("E0116", k.span, message).with_hint(hint));
        }
    }
}
