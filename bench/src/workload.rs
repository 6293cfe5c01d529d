//! The two benchmark workloads: their facts, generated from a seed, and the
//! single-fact changes applied to them.
//!
//! Expects: sizes from the command line (`bench/run.py` passes the full or
//! `--quick` sizes). Guarantees: the same seed and sizes give the same facts
//! and the same changes, byte for byte, on every machine (a SplitMix64
//! generator, no platform randomness).
//!
//! - `reach`: `nodes` nodes, `edges` distinct random directed edges (no
//!   self-loops), `sources` distinct random source nodes. With 5 edges per
//!   node the graph has a giant strongly connected component, so each source
//!   reaches almost every node and `reach` has about `sources × nodes` rows.
//! - `join5`: five relations `a`..`e` of `m = facts / 5` distinct pairs each,
//!   every column uniform over `0..m`. Each join step then matches on average
//!   one tuple per row (E|a⋈b| = m·m/m = m), so every intermediate result and
//!   `out(x, u)` have about `m` rows: non-trivial, and bounded.
//!
//! Facts are written as Souffle TSV (`<rel>.facts`, read by `netc` and by the
//! driver through `netc_intent::io`) and as ASP facts (`facts.lp`, for
//! clingo), plus `meta.json` recording the parameters.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::path::Path;

/// SplitMix64: tiny, fast, and identical everywhere.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x6a09_e667_f3bc_c908)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (n > 0), by multiply-shift (no modulo bias worth noting at these sizes).
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    Reach,
    Join5,
}

impl Workload {
    pub fn parse(s: &str) -> Option<Workload> {
        match s {
            "reach" => Some(Workload::Reach),
            "join5" => Some(Workload::Join5),
            _ => None,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Workload::Reach => "reach",
            Workload::Join5 => "join5",
        }
    }
    /// The relation whose size and contents are the program's answer.
    pub fn output(self) -> &'static str {
        match self {
            Workload::Reach => "reach",
            Workload::Join5 => "out",
        }
    }
    /// The relations single-fact changes are applied to, in rotation.
    pub fn changed(self) -> &'static [&'static str] {
        match self {
            Workload::Reach => &["edge"],
            Workload::Join5 => &["a", "b", "c", "d", "e"],
        }
    }
}

/// Generation parameters; written to `meta.json` and read back by `run`.
#[derive(Clone, Debug)]
pub struct Params {
    pub workload: Workload,
    pub seed: u64,
    /// reach: node count. join5: the key domain `m` (= facts per relation).
    pub domain: u64,
    /// reach: edge count. join5: total facts over the five relations.
    pub facts: u64,
    /// reach: source count. join5: unused (0).
    pub sources: u64,
}

impl Params {
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "workload": self.workload.name(),
            "seed": self.seed,
            "domain": self.domain,
            "facts": self.facts,
            "sources": self.sources,
        })
    }
    pub fn from_json(v: &serde_json::Value) -> Result<Params, String> {
        let num = |k: &str| {
            v[k].as_u64()
                .ok_or_else(|| format!("meta.json: `{k}` missing or not a number"))
        };
        let workload = v["workload"]
            .as_str()
            .and_then(Workload::parse)
            .ok_or("meta.json: bad `workload`")?;
        Ok(Params {
            workload,
            seed: num("seed")?,
            domain: num("domain")?,
            facts: num("facts")?,
            sources: num("sources")?,
        })
    }
}

/// Generated base facts: `(relation name, rows of two numbers / one number)`.
pub struct Facts {
    pub rels: Vec<(&'static str, Vec<Vec<i64>>)>,
}

impl Facts {
    pub fn total(&self) -> usize {
        self.rels.iter().map(|(_, r)| r.len()).sum()
    }
}

/// `n` distinct pairs in `0..dx × 0..dy`, random order, optionally without `x == y`.
fn distinct_pairs(rng: &mut Rng, n: u64, dx: u64, dy: u64, no_loops: bool) -> Vec<Vec<i64>> {
    assert!(
        n <= dx * dy / 2,
        "asked for {n} distinct pairs out of {}",
        dx * dy
    );
    let mut seen = HashSet::with_capacity(n as usize);
    let mut out = Vec::with_capacity(n as usize);
    while (out.len() as u64) < n {
        let (x, y) = (rng.below(dx), rng.below(dy));
        if (no_loops && x == y) || !seen.insert((x, y)) {
            continue;
        }
        out.push(vec![x as i64, y as i64]);
    }
    out
}

pub fn generate(p: &Params) -> Facts {
    let mut rng = Rng::new(p.seed);
    match p.workload {
        Workload::Reach => {
            let edges = distinct_pairs(&mut rng, p.facts, p.domain, p.domain, true);
            let mut seen = HashSet::new();
            let mut sources = Vec::new();
            while (sources.len() as u64) < p.sources.min(p.domain) {
                let s = rng.below(p.domain) as i64;
                if seen.insert(s) {
                    sources.push(vec![s]);
                }
            }
            Facts {
                rels: vec![("edge", edges), ("source", sources)],
            }
        }
        Workload::Join5 => {
            let m = p.domain;
            let per = p.facts / 5;
            let rels = ["a", "b", "c", "d", "e"]
                .into_iter()
                .map(|r| (r, distinct_pairs(&mut rng, per, m, m, false)))
                .collect();
            Facts { rels }
        }
    }
}

/// A new fact for `rel` (drawn like the generated ones) that `present` does not hold.
pub fn fresh_fact(p: &Params, rng: &mut Rng, present: &HashSet<Vec<i64>>) -> Vec<i64> {
    loop {
        let (x, y) = (rng.below(p.domain) as i64, rng.below(p.domain) as i64);
        if p.workload == Workload::Reach && x == y {
            continue;
        }
        let f = vec![x, y];
        if !present.contains(&f) {
            return f;
        }
    }
}

/// Writes `<rel>.facts` (TSV), `facts.lp` (ASP) and `meta.json` into `dir`.
pub fn write(p: &Params, facts: &Facts, dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut asp = String::new();
    for (rel, rows) in &facts.rels {
        let mut tsv = String::with_capacity(rows.len() * 14);
        for row in rows {
            let fields: Vec<String> = row.iter().map(|v| v.to_string()).collect();
            tsv.push_str(&fields.join("\t"));
            tsv.push('\n');
            let _ = writeln!(asp, "{rel}({}).", fields.join(","));
        }
        std::fs::write(dir.join(format!("{rel}.facts")), tsv)?;
    }
    std::fs::write(dir.join("facts.lp"), asp)?;
    let meta = serde_json::to_string_pretty(&p.to_json()).expect("json");
    std::fs::write(dir.join("meta.json"), meta + "\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_distinct() {
        let p = Params {
            workload: Workload::Reach,
            seed: 7,
            domain: 100,
            facts: 500,
            sources: 3,
        };
        let (f1, f2) = (generate(&p), generate(&p));
        assert_eq!(f1.rels, f2.rels);
        let edges: HashSet<_> = f1.rels[0].1.iter().cloned().collect();
        assert_eq!(edges.len(), 500);
        assert!(f1.rels[0].1.iter().all(|e| e[0] != e[1]));
        assert_eq!(f1.rels[1].1.len(), 3);
    }
}
