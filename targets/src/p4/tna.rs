//! Tofino only: the entries that make `p4/netc_tna.p4` compute `hash5 % n`
//! without a run-time `%`.
//!
//! Why: AFF-1 needs every HMux (v1model or Tofino) and every software Mux to
//! pick `vector[hash5 % n]`; Tofino has no `%`. With h5 = Σ b_i·2^(8i)
//! (bytes b0..b3), `h5 mod n = (Σ r_i) mod n` where `r_i = (b_i ·
//! (2^(8i) mod n)) mod n`. Table `mod_b<i>` maps (n, b_i) → `add_residue(r_i)`
//! (a miss adds nothing, so r_i = 0 has no entry); the accumulator is then
//! below 4n, and `mod_reduce` maps (n, acc in [k·n, (k+1)·n − 1]) →
//! `reduce(k·n)`, leaving idx = acc − k·n = h5 mod n.
//!
//! Expects: a switch's entities from `entries::build` (the `n` of its `lb`,
//! `lb_local` and `route_ecmp` entries). Guarantees: for every n in 1..=65535
//! used by the switch, the entries above (at most 4 × 256 + 4 per n),
//! deterministic and sorted; [`Installed`] runs those entries as the program
//! does, so tests check the scheme as written, not a re-implementation of `%`.

use super::delta;
use super::entries::{ActionCall, Entity, Match, TableEntry, Target};
use super::schema::{self, TableSpec};
use super::text;
use std::collections::{BTreeSet, HashMap};

/// Every vector size `n` the switch's entries use (they all need modulo entries).
pub fn vector_sizes(entities: &[Entity]) -> BTreeSet<u16> {
    let mut out = BTreeSet::new();
    for e in entities {
        let Entity::Table(t) = e else { continue };
        let Target::Action(call) = &t.target else {
            continue;
        };
        let n = match call.spec.id {
            id if id == schema::LB.id || id == schema::LB_LOCAL.id => call.args.first(),
            id if id == schema::ROUTE_ECMP.id => call.args.get(2),
            _ => None,
        };
        if let Some(&n) = n {
            // entries::build refuses n = 0 and n >= 2^16 (bit<16>)
            if let Ok(n) = u16::try_from(n) {
                if n > 0 {
                    out.insert(n);
                }
            }
        }
    }
    out
}

/// `2^(8·byte) mod n`.
fn weight(byte: u32, n: u16) -> u64 {
    (1u64 << (8 * byte)) % u64::from(n)
}

fn entry(
    table: &'static TableSpec,
    matches: Vec<(u32, Match)>,
    target: Target,
    source: &str,
) -> Entity {
    Entity::Table(TableEntry {
        table,
        matches,
        priority: if table.prioritized { 1 } else { 0 },
        target,
        is_default: false,
        source: source.to_string(),
    })
}

/// The modulo entries for the vector sizes `ns`.
pub fn modulo_entities(ns: &BTreeSet<u16>) -> Vec<Entity> {
    let mut out = Vec::new();
    for &n in ns {
        let source = format!("hash5 % {n} on Tofino (p4/netc_tna.p4)");
        for (byte, table) in schema::MOD_BYTES.iter().enumerate() {
            let w = weight(byte as u32, n);
            for b in 0u64..256 {
                let r = (b * w) % u64::from(n);
                if r == 0 {
                    continue;
                }
                let call = ActionCall {
                    spec: &schema::ADD_RESIDUE,
                    args: vec![u128::from(r)],
                };
                out.push(entry(
                    table,
                    vec![
                        (1, Match::Exact(u128::from(n))),
                        (2, Match::Exact(b.into())),
                    ],
                    Target::Action(call),
                    &source,
                ));
            }
        }
        let n128 = u128::from(n);
        for k in 0..4u128 {
            let call = ActionCall {
                spec: &schema::REDUCE,
                args: vec![k * n128],
            };
            out.push(entry(
                &schema::MOD_REDUCE,
                vec![
                    (1, Match::Exact(n128)),
                    (2, Match::Range(k * n128, (k + 1) * n128 - 1)),
                ],
                Target::Action(call),
                &source,
            ));
        }
    }
    out
}

/// The modulo tables of a switch as installed: what [`Installed::index`]
/// runs, lookup by lookup, as `p4/netc_tna.p4`'s apply block does.
pub struct Installed {
    /// `mod_b<i>`: (n, b_i) → r
    bytes: [HashMap<(u128, u128), u128>; 4],
    /// `mod_reduce`: (n, lo, hi, sub)
    reduce: Vec<(u128, u128, u128, u128)>,
}

impl Installed {
    pub fn new(entities: &[Entity]) -> Installed {
        let mut bytes: [HashMap<(u128, u128), u128>; 4] = Default::default();
        let mut reduce = Vec::new();
        for e in entities {
            let Entity::Table(t) = e else { continue };
            let Target::Action(call) = &t.target else {
                continue;
            };
            let arg = call.args.first().copied().unwrap_or(0);
            match (
                t.matches.as_slice(),
                schema::MOD_BYTES.iter().position(|b| b.id == t.table.id),
            ) {
                ([(_, Match::Exact(n)), (_, Match::Exact(b))], Some(i)) => {
                    bytes[i].insert((*n, *b), arg);
                }
                ([(_, Match::Exact(n)), (_, Match::Range(lo, hi))], None)
                    if t.table.id == schema::MOD_REDUCE.id =>
                {
                    reduce.push((*n, *lo, *hi, arg));
                }
                _ => {}
            }
        }
        Installed { bytes, reduce }
    }

    /// idx for `h5` under the entry with vector size `n`: `Some(idx)`, or
    /// `None` when `mod_reduce` misses (idx stays 0xffff, which no ecmp
    /// entry matches).
    pub fn index(&self, n: u16, h5: u32) -> Option<u16> {
        let n = u128::from(n);
        let mut acc: u128 = 0;
        for (i, table) in self.bytes.iter().enumerate() {
            let b = u128::from((h5 >> (8 * i)) & 0xff);
            // add_residue(r): acc = acc + r (bit<32>); a miss does nothing
            if let Some(r) = table.get(&(n, b)) {
                acc = (acc + r) & 0xffff_ffff;
            }
        }
        // reduce(sub): idx = (bit<16>)(acc - sub)
        self.reduce
            .iter()
            .find(|(m, lo, hi, _)| *m == n && *lo <= acc && acc <= *hi)
            .map(|(_, _, _, sub)| (acc.wrapping_sub(*sub) & 0xffff) as u16)
    }
}

/// The WriteRequest that installs, on `p4/netc_tna.p4`, the modulo entries
/// for the vector sizes `ns` of a switch (see [`vector_sizes`]).
pub fn render(device: &str, ns: &BTreeSet<u16>) -> String {
    let updates = delta::full(&modulo_entities(ns));
    let sizes: Vec<String> = ns.iter().map(u16::to_string).collect();
    text::write_request(
        &[
            format!("P4Runtime WriteRequest for switch `{device}` on Tofino: the modulo entries of p4/netc_tna.p4"),
            format!(
                "(hash5 % n without `%`) for n in {{{}}}; {} updates. Install before p4/{device}.txtpb.",
                sizes.join(", "),
                updates.len()
            ),
        ],
        &updates,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(ents: &Installed, n: u16, h5: u32) {
        assert_eq!(
            ents.index(n, h5),
            Some((h5 % u32::from(n)) as u16),
            "n = {n}, h5 = {h5}"
        );
    }

    #[test]
    fn every_allowed_n_gives_exactly_h5_mod_n() {
        // Every n of bit<16> (n = 0 is refused by entries::build), each with
        // the hashes where a carry or a wrap would show: 0, the top, the
        // bytes' extremes, and values just around multiples of n.
        let edges = [
            0u32,
            1,
            255,
            256,
            65535,
            65536,
            0x00ff_ffff,
            0x0100_0000,
            u32::MAX,
            u32::MAX - 1,
            0x8000_0000,
        ];
        for n in 1..=u16::MAX {
            let ents = Installed::new(&modulo_entities(&BTreeSet::from([n])));
            let n32 = u32::from(n);
            let mut hs = edges.to_vec();
            let k = u32::MAX / n32;
            hs.extend([
                k * n32,
                (k * n32).wrapping_sub(1),
                n32 - 1,
                n32.wrapping_mul(257),
            ]);
            // a few pseudo-random ones (splitmix-like, fixed seed per n)
            let mut x = u64::from(n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            for _ in 0..4 {
                x ^= x >> 31;
                x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
                hs.push(x as u32);
            }
            for h5 in hs {
                check(&ents, n, h5);
            }
        }
    }

    #[test]
    fn entries_per_n_stay_small_and_a_missing_n_never_picks_a_member() {
        let ents = modulo_entities(&BTreeSet::from([7, 1000]));
        let per = |n: u128| {
            ents.iter()
                .filter(|e| matches!(e, Entity::Table(t) if t.matches[0].1 == Match::Exact(n)))
                .count()
        };
        assert!(per(7) <= 4 * 256 + 4 && per(1000) <= 4 * 256 + 4);
        // n = 9 has no entries: the chain leaves no index
        assert_eq!(Installed::new(&ents).index(9, 12345), None);
        assert_eq!(Installed::new(&ents).index(7, 12345), Some(12345 % 7));
    }
}
