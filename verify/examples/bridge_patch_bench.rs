//! The `bridges` step of incremental updates that edit a few large bridges (Hoverboards), alone.
//!
//! Loads an artifact directory holding only those bridges' flow files
//! (`ovs/<device>.flows`, an empty `relations/`), verifies it in full (no
//! VMs: nothing to trace), then alternately removes a flow and puts a copy
//! back in each bridge, telling each update which devices changed, and
//! prints each update's steps over 0.05 ms. The bridges of an L scenario
//! are two of 54.5k flows; every VM change edits both. A measurement of
//! this run, never a test.
//!
//! ```sh
//! mkdir -p /tmp/hb/relations /tmp/hb/ovs
//! cp L_out/ovs/hb-0.flows L_out/ovs/hb-1.flows /tmp/hb/ovs/
//! cargo run --release -p netc-verify --example bridge_patch_bench -- /tmp/hb 20
//! ```
use netc_verify::artifacts::Artifacts;
use netc_verify::dirty::Dirty;
use netc_verify::incremental::Verifier;
use netc_verify::policy::Policy;
use std::path::PathBuf;

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(dir), n) = (args.next(), args.next()) else {
        eprintln!("usage: bridge_patch_bench ARTIFACT_DIR [UPDATES]  (a directory with ovs/*.flows and an empty relations/)");
        std::process::exit(2);
    };
    let Ok(updates) = n.as_deref().unwrap_or("20").parse::<usize>() else {
        eprintln!("error: UPDATES must be a number");
        std::process::exit(2);
    };
    let a = match Artifacts::load(&PathBuf::from(&dir)) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    let flows: usize = a.flows.values().map(Vec::len).sum();
    println!("{} bridges, {flows} flows", a.flows.len());
    let mut v = match Verifier::new(a.clone(), Policy::default(), 3) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    let dirty = Dirty {
        devices: a.flows.keys().cloned().collect(),
        ..Dirty::default()
    };
    let mut cur = a;
    for i in 0..updates {
        let mut next = cur.clone();
        for f in next.flows.values_mut().filter(|f| !f.is_empty()) {
            let at = (f.len() / 3 + i * 997) % f.len();
            match i % 2 {
                0 => {
                    f.remove(at);
                }
                _ => f.insert(at, f[at].clone()),
            }
        }
        let up = match v.update_dirty(next.clone(), Policy::default(), &dirty) {
            Ok(up) => up,
            Err(e) => {
                eprintln!("error: {e}");
                std::process::exit(1);
            }
        };
        let mut steps: Vec<_> = up.steps.iter().filter(|(_, ms)| **ms > 0.05).collect();
        steps.sort_by(|x, y| y.1.total_cmp(x.1));
        let steps: Vec<String> = steps.iter().map(|(k, ms)| format!("{k} {ms:.2}")).collect();
        println!("update {i}: {:.2} ms ({})", up.millis, steps.join(", "));
        cur = next;
    }
}
