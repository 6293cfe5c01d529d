//! `netc tofino DIR`: the extra P4Runtime entries a Tofino switch running
//! `p4/netc_tna.p4` needs, for an artifact directory `netc compile` wrote.
//!
//! Why a separate step: `netc_tna.p4` computes `hash5 % n` with lookup
//! tables (targets `p4::tna`), up to 1,028 entries per distinct vector size
//! `n` per switch; v1model switches do not need them, so `netc compile` does
//! not write them. Reads the `n` of every `p4_vip`, `p4_vip_local` (column
//! 5) and `p4_route` (column 2) row in `DIR/relations/`, and writes
//! `DIR/p4_tna/<switch>.txtpb` (one WriteRequest per switch, to install
//! before `DIR/p4/<switch>.txtpb`). Exit 0 written; 2 if DIR is not an
//! artifact directory or a row's `n` is not in 1..=65535 (file:line named).

use super::{output, Outcome};
use netc_targets::p4::tna;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// (relation, column of n) whose rows carry a vector size.
const SIZED: [(&str, usize); 3] = [("p4_vip", 5), ("p4_vip_local", 5), ("p4_route", 2)];

pub fn run(dir: &Path) -> Outcome {
    let rel_dir = dir.join("relations");
    if !rel_dir.is_dir() {
        return Outcome::InputError(
            format!(
                "`{}` is not an artifact directory (no `relations/` in it)",
                dir.display()
            ),
            Some("pass a directory written by `netc compile INTENT --out DIR`".into()),
        );
    }
    let mut sizes: BTreeMap<String, BTreeSet<u16>> = BTreeMap::new();
    for (rel, col) in SIZED {
        let path = rel_dir.join(format!("{rel}.csv"));
        if !path.exists() {
            continue;
        }
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) => {
                return Outcome::InputError(format!("cannot read `{}`: {e}", path.display()), None)
            }
        };
        for (i, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            let cols: Vec<&str> = line.split('\t').collect();
            let n = cols
                .get(col)
                .and_then(|v| v.parse::<u16>().ok())
                .filter(|n| *n > 0);
            let Some(n) = n else {
                return Outcome::InputError(
                    format!(
                        "{}:{}:1: expected a vector size n in 1..=65535 in column {}",
                        path.display(),
                        i + 1,
                        col + 1
                    ),
                    Some("the file is not as `netc compile` wrote it; compile again".into()),
                );
            };
            sizes.entry(cols[0].to_string()).or_default().insert(n);
        }
    }
    let out = dir.join("p4_tna");
    let written = (|| -> std::io::Result<usize> {
        if out.exists() {
            std::fs::remove_dir_all(&out)?;
        }
        std::fs::create_dir_all(&out)?;
        for (switch, ns) in &sizes {
            std::fs::write(out.join(format!("{switch}.txtpb")), tna::render(switch, ns))?;
        }
        Ok(sizes.len())
    })();
    match written {
        Ok(k) => {
            if output::json() {
                let switches: serde_json::Map<String, serde_json::Value> = sizes
                    .iter()
                    .map(|(sw, ns)| (sw.clone(), serde_json::json!(ns)))
                    .collect();
                output::emit(serde_json::json!({"out": out, "sizes": switches}));
            }
            eprintln!(
                "wrote the Tofino modulo entries of {k} switch{} to {}",
                if k == 1 { "" } else { "es" },
                out.display()
            );
            Outcome::Ok
        }
        Err(e) => Outcome::InputError(format!("cannot write `{}`: {e}", out.display()), None),
    }
}
