//! Intent named by directory: `netc compile DIR`, `plan DIR`, `apply DIR`.
//!
//! A directory given where intent files go means every `.ndl` file directly
//! in it, in name order (as a Terraform configuration or a Batfish
//! snapshot is a directory). The expansion happens once, at the edge,
//! before any command runs, so every command (and what the store records
//! per generation) sees the same list of files. A directory with no `.ndl`
//! file is a usage error; files given by name are kept as given.

use crate::Command;
use netc_cli::commands::lab::LabAction;
use netc_cli::commands::Outcome;
use std::path::PathBuf;

impl Command {
    /// Replaces each directory among the command's intent paths by its
    /// `.ndl` files.
    pub fn expand_intent_dirs(&mut self) -> Result<(), Outcome> {
        for list in self.intent_lists() {
            *list = expand(std::mem::take(list))?;
        }
        Ok(())
    }

    fn intent_lists(&mut self) -> Vec<&mut Vec<PathBuf>> {
        match self {
            Command::Check {
                files,
                intent: true,
                ..
            } => vec![files],
            Command::Capacity { intent, .. }
            | Command::Compile { intent, .. }
            | Command::Predict { intent, .. }
            | Command::Plan { intent, .. }
            | Command::Apply { intent, .. } => vec![intent],
            Command::Verify {
                intent,
                since_intent,
                ..
            } => vec![intent, since_intent],
            Command::Serve(a) => vec![&mut a.intent],
            Command::Repl(a) => vec![&mut a.intent],
            Command::Lab(a) => match &mut a.action {
                LabAction::Up { intent } => vec![intent],
                _ => vec![],
            },
            _ => vec![],
        }
    }
}

fn expand(paths: Vec<PathBuf>) -> Result<Vec<PathBuf>, Outcome> {
    let mut out = Vec::with_capacity(paths.len());
    for p in paths {
        if !p.is_dir() {
            out.push(p);
            continue;
        }
        let entries = std::fs::read_dir(&p).map_err(|e| {
            Outcome::InputError(
                format!("cannot read the intent directory `{}`: {e}", p.display()),
                None,
            )
        })?;
        let mut files: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|f| f.is_file() && f.extension().is_some_and(|x| x == "ndl"))
            .collect();
        if files.is_empty() {
            return Err(Outcome::InputError(
                format!("the intent directory `{}` holds no .ndl file", p.display()),
                Some(
                    "a directory stands for the .ndl files directly in it; name the files instead"
                        .into(),
                ),
            ));
        }
        files.sort();
        out.extend(files);
    }
    Ok(out)
}
