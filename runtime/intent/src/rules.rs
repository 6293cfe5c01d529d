//! The standard rules, embedded in the `netc` binary.
//!
//! `rules/*.ndl` at the repository root is the source; this table includes
//! every file at build time, so `netc compile` works from any directory. A
//! test fails if a file is added to `rules/` but not listed here.
//! `--rules DIR` replaces the whole set with DIR's `*.ndl` files.

use netc_compiler::SourceInput;
use std::path::Path;

/// `(file name, text)` of every standard rules file, schema first.
pub const STANDARD_RULES: &[(&str, &str)] = &[
    ("schema.ndl", include_str!("../../../rules/schema.ndl")),
    ("validate.ndl", include_str!("../../../rules/validate.ndl")),
    ("overlay.ndl", include_str!("../../../rules/overlay.ndl")),
    ("acl.ndl", include_str!("../../../rules/acl.ndl")),
    (
        "lb_ananta.ndl",
        include_str!("../../../rules/lb_ananta.ndl"),
    ),
    ("lb_duet.ndl", include_str!("../../../rules/lb_duet.ndl")),
    ("rubik.ndl", include_str!("../../../rules/rubik.ndl")),
    ("snat.ndl", include_str!("../../../rules/snat.ndl")),
    (
        "multicast.ndl",
        include_str!("../../../rules/multicast.ndl"),
    ),
    ("anolis.ndl", include_str!("../../../rules/anolis.ndl")),
    ("nf.ndl", include_str!("../../../rules/nf.ndl")),
    (
        "andromeda.ndl",
        include_str!("../../../rules/andromeda.ndl"),
    ),
    ("yoda.ndl", include_str!("../../../rules/yoda.ndl")),
];

/// True if the standard rules declare a relation `name`: how `netc check`
/// and `netc run` tell a user who gave them intent as a plain program.
pub fn declares(name: &str) -> bool {
    STANDARD_RULES.iter().any(|(_, text)| {
        text.lines().any(|line| {
            line.trim_start()
                .strip_prefix(".decl ")
                .and_then(|rest| rest.split('(').next())
                .is_some_and(|n| n.trim() == name)
        })
    })
}

/// The rules as compilation inputs: embedded, or every `*.ndl` of `dir`
/// (sorted by name) when given.
pub fn rule_inputs(dir: Option<&Path>) -> std::io::Result<Vec<SourceInput>> {
    match dir {
        None => Ok(STANDARD_RULES
            .iter()
            .map(|(name, text)| SourceInput::Text {
                name: format!("<netc>/rules/{name}"),
                text: text.to_string(),
            })
            .collect()),
        Some(d) => {
            let mut files: Vec<_> = std::fs::read_dir(d)?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|e| e == "ndl"))
                .collect();
            files.sort();
            if files.is_empty() {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    format!("no .ndl files in `{}`", d.display()),
                ));
            }
            Ok(files.into_iter().map(SourceInput::File).collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rules_file_is_embedded() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../rules");
        let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".ndl"))
            .collect();
        on_disk.sort();
        let mut embedded: Vec<String> = STANDARD_RULES.iter().map(|(n, _)| n.to_string()).collect();
        embedded.sort();
        assert_eq!(on_disk, embedded, "rules/ and STANDARD_RULES differ: list every rules file in runtime/intent/src/rules.rs");
        for (name, text) in STANDARD_RULES {
            assert_eq!(std::fs::read_to_string(dir.join(name)).unwrap(), *text);
        }
    }

    #[test]
    fn declares_names_the_standard_relations_only() {
        for name in ["vm", "switch", "ovs_flow", "error_ovs_flow_conflict"] {
            assert!(declares(name), "{name}");
        }
        for name in ["edge", "vm_", "sw", ""] {
            assert!(!declares(name), "{name}");
        }
    }
}
