//! Joining a stored or rendered artifact path under its root, safely.
//!
//! Expects: a root directory and a relative path read from a generation or
//! a renderer (`ovs/h1.flows`, `relations/vm.csv`). Guarantees: [`join`]
//! returns a path under the root only when the relative path is made of
//! plain names (no `..`, no root, no drive, no empty or `.` component) and
//! each name is one `netc_targets::safe_name` admits (plus its extension);
//! anything else is an `InvalidInput` error naming it, so a damaged store
//! or a hostile name can never write outside the directory.

use std::io;
use std::path::{Component, Path, PathBuf};

/// `root/rel`, when `rel` stays under `root`.
pub fn join(root: &Path, rel: &str) -> io::Result<PathBuf> {
    let bad = || {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "artifact path `{}` is not a plain relative name (it would leave `{}`)",
                rel.chars().take(120).collect::<String>(),
                root.display()
            ),
        )
    };
    let path = Path::new(rel);
    let mut out = root.to_path_buf();
    let mut parts = 0;
    for c in path.components() {
        let Component::Normal(name) = c else {
            return Err(bad());
        };
        let name = name.to_str().ok_or_else(bad)?;
        let stem = name.rsplit_once('.').map_or(name, |(s, _)| s);
        if !netc_targets::safe_name(stem) || name.len() > 80 {
            return Err(bad());
        }
        out.push(name);
        parts += 1;
    }
    if parts == 0 {
        return Err(bad());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_names_join_and_escapes_are_refused() {
        let root = Path::new("/state/verified/gen-1");
        assert_eq!(
            join(root, "ovs/h1.flows").unwrap(),
            root.join("ovs").join("h1.flows")
        );
        assert!(join(root, "relations/p4_vip.csv").is_ok());
        for bad in [
            "../x.flows",
            "ovs/../../x.flows",
            "/etc/passwd",
            "",
            "./ovs/h1.flows",
            "ovs/.hidden",
            "ovs//h1.flows/..",
        ] {
            assert!(join(root, bad).is_err(), "{bad}");
        }
    }
}
