//! `netc export --souffle FILE...`: print a pure-Souffle program.
//!
//! The program is the compiled plan lowered by
//! `netc_compiler::souffle_export` (network types encoded as numbers).
//! With `-F DIR --facts-out OUT` it also re-encodes every `.input` facts
//! file into OUT, so the exported program can run on the same data.

use super::{output, report, Outcome};
use crate::io::facts;
use netc_compiler::{compile_files, souffle_export};
use std::path::{Path, PathBuf};

pub fn run(files: &[PathBuf], facts_dir: Option<&Path>, facts_out: Option<&Path>) -> Outcome {
    let c = compile_files(files);
    if report(&c) {
        return Outcome::ProgramErrors;
    }
    let Some(plan) = &c.plan else {
        return Outcome::ProgramErrors;
    };
    let text = match souffle_export::export(plan, &c.sources) {
        Ok(t) => t,
        Err(e) => {
            let hint = "see specs/language.md, \"Exporting to Souffle\", for what has an encoding";
            output::hold_message(&format!("{e} ({hint})"));
            eprintln!("error: {e}");
            eprintln!("   = hint: {hint}");
            return Outcome::ProgramErrors;
        }
    };
    if let Some(out) = facts_out {
        let dir = facts_dir.unwrap_or(Path::new("."));
        if let Err(e) = std::fs::create_dir_all(out) {
            return Outcome::InputError(format!("cannot create `{}`: {e}", out.display()), None);
        }
        for rel in &plan.relations {
            for spec in &rel.inputs {
                let rows = match facts::read_input(rel, spec, dir) {
                    Ok(r) => r,
                    Err(e) => return e.into(),
                };
                let delim = facts::delimiter(spec);
                let mut body = String::new();
                for row in rows {
                    let fields: Vec<String> = row.iter().map(souffle_export::encode).collect();
                    body.push_str(&fields.join(&delim));
                    body.push('\n');
                }
                let path = facts::input_path(rel, spec, out);
                if let Err(e) = std::fs::write(&path, body) {
                    return Outcome::InputError(
                        format!("cannot write `{}`: {e}", path.display()),
                        None,
                    );
                }
            }
        }
    }
    if output::json() {
        output::emit(serde_json::json!({"souffle": text, "facts_out": facts_out}));
    } else {
        print!("{text}");
    }
    Outcome::Ok
}
