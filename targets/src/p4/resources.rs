//! A model of one switch's table use against its capacity (CAP-1).
//!
//! Two profiles:
//! - **Duet** (the paper's switch): host table 16K entries (`vip` +
//!   `vip_local`), ECMP table 4K (`ecmp` + `ecmp_local`), tunnel table 512;
//!   every other table against its P4Info `size`.
//! - **Tofino**: 12 match-action stages, each with 80 SRAM blocks of 1,024 ×
//!   128 bits and 24 TCAM blocks of 512 × 44 bits. An exact table takes SRAM:
//!   `max(entries, 1024)` entries packed `floor(128 / width)` per word (or
//!   `ceil(width / 128)` words per entry), width = key bits + action-data
//!   bits + 4 bits of action selector/valid overhead. A ternary/LPM/range
//!   table takes TCAM blocks `ceil(key bits / 44)` wide and `ceil(entries /
//!   512)` deep (a range row counts its prefix expansion), plus SRAM for its
//!   action data. Stages needed = the larger of the program's dependency
//!   depth (distinct [`TNA_LEVELS`] of the tables in use) and the blocks divided by the per-stage blocks.
//!   A Tofino runs `p4/netc_tna.p4`, so its use includes the modulo tables
//!   (`tna.rs`: up to 1,028 entries per distinct vector size n) and its
//!   depth is [`TNA_LEVELS`].
//!   This is a model for planning and for the verifier, not bf-p4c's
//!   allocator: it ignores cuckoo-hash headroom, hash-distribution units and
//!   gateway resources. Real numbers come from bf-p4c's resource report.
//!
//! Expects: entities from `entries::build`. Guarantees: [`usage`] never
//! fails; [`check`] names the first over-full limit.

use super::entries::{Entity, Match};
use super::schema::{self, MatchKind, TableSpec, TABLES, TNA_TABLES};
use super::tna;
use super::P4Error;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    Duet,
    Tofino,
}

impl std::str::FromStr for Profile {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "duet" => Ok(Profile::Duet),
            "tofino" => Ok(Profile::Tofino),
            _ => Err(format!(
                "unknown capacity profile `{s}` (expected `duet` or `tofino`)"
            )),
        }
    }
}

pub const DUET_HOST: u64 = 16_384;
pub const DUET_ECMP: u64 = 4_096;
pub const DUET_TUNNEL: u64 = 512;
pub const TOFINO_STAGES: u64 = 12;
pub const TOFINO_SRAM_PER_STAGE: u64 = 80;
pub const TOFINO_TCAM_PER_STAGE: u64 = 24;
pub const SRAM_WORDS: u64 = 1024;
pub const SRAM_WIDTH: u64 = 128;
pub const TCAM_DEPTH: u64 = 512;
pub const TCAM_WIDTH: u64 = 44;
pub const EXACT_MIN_ENTRIES: u64 = 1024;
const OVERHEAD_BITS: u64 = 4;

/// The stage level of each table in `p4/netc_tna.p4`'s dependency graph (a
/// table reads what tables of lower levels wrote; vip, route wait for the
/// tables before them to miss). A switch needs as many stages as distinct
/// levels among its non-empty tables. The modulo chain (one accumulator, so four
/// dependent tables, then the reduction) sits between the tables that pick
/// `n` and the index tables.
pub const TNA_LEVELS: &[(&str, u64)] = &[
    ("switch_config", 1),
    ("port_role", 1),
    ("port_tenant", 2),
    ("acl", 1),
    ("mcast", 1),
    ("vip_local", 2),
    ("vip", 3),
    ("route", 4),
    ("mod_b0", 5),
    ("mod_b1", 6),
    ("mod_b2", 7),
    ("mod_b3", 8),
    ("mod_reduce", 9),
    ("ecmp_local", 10),
    ("ecmp", 10),
    ("route_member", 10),
    ("tunnel", 11),
    ("underlay", 12),
];

/// One limit and what uses it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Limit {
    pub name: String,
    pub tables: Vec<&'static str>,
    pub used: u64,
    pub capacity: u64,
    pub unit: &'static str,
}

impl Limit {
    pub fn over(&self) -> bool {
        self.used > self.capacity
    }
}

/// One table's entries and (Tofino) blocks.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TableUse {
    pub table: &'static str,
    /// P4Runtime entries (range rows count once).
    pub entries: u64,
    /// Hardware entries (a range row counts its prefix expansion).
    pub hw_entries: u64,
    pub sram_blocks: u64,
    pub tcam_blocks: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SwitchUse {
    pub device: String,
    pub profile: Profile,
    pub tables: Vec<TableUse>,
    pub limits: Vec<Limit>,
}

impl SwitchUse {
    pub fn ok(&self) -> bool {
        self.limits.iter().all(|l| !l.over())
    }
}

/// Number of prefixes that cover [lo, hi] in a `bits`-wide space.
pub fn range_expansion(lo: u128, hi: u128, bits: u32) -> u64 {
    let mut n = 0;
    let mut lo = lo;
    let top = if bits >= 128 {
        u128::MAX
    } else {
        (1u128 << bits) - 1
    };
    let hi = hi.min(top);
    while lo <= hi {
        let mut size = if lo == 0 {
            bits.min(127)
        } else {
            lo.trailing_zeros().min(bits)
        };
        while size > 0 && lo + ((1u128 << size) - 1) > hi {
            size -= 1;
        }
        n += 1;
        let next = lo + (1u128 << size);
        if next == 0 || next > hi {
            break;
        }
        lo = next;
    }
    n
}

fn action_bits(t: &TableSpec) -> u64 {
    // widest action of the table's actions the P4Info lists
    let widest = |ps: &[schema::ParamSpec]| ps.iter().map(|p| p.bits as u64).sum::<u64>();
    match t.name {
        "switch_config" => widest(schema::SET_CONFIG.params),
        "mcast" => widest(schema::SET_MCAST_GRP.params),
        "vip" | "vip_local" => widest(schema::LB.params),
        "ecmp" | "ecmp_local" => 16, // a member index into the profile
        "tunnel" => widest(schema::ENCAP.params),
        "route" => widest(schema::ROUTE_ECMP.params),
        "route_member" => widest(schema::SET_NEXTHOP.params),
        "underlay" => widest(schema::FORWARD.params),
        "mod_b0" | "mod_b1" | "mod_b2" | "mod_b3" => widest(schema::ADD_RESIDUE.params),
        "mod_reduce" => widest(schema::REDUCE.params),
        _ => 0,
    }
}

fn sram_blocks(entries: u64, width: u64) -> u64 {
    if entries == 0 {
        return 0;
    }
    let width = width.max(1);
    let words = if width <= SRAM_WIDTH {
        entries.div_ceil(SRAM_WIDTH / width)
    } else {
        entries * width.div_ceil(SRAM_WIDTH)
    };
    words.div_ceil(SRAM_WORDS)
}

fn table_use(t: &'static TableSpec, entities: &[&Entity]) -> TableUse {
    let entries = entities.len() as u64;
    let mut hw_entries = 0;
    for e in entities {
        let mut n = 1;
        if let Entity::Table(te) = e {
            for (fid, m) in &te.matches {
                if let Match::Range(lo, hi) = m {
                    let bits = t
                        .fields
                        .iter()
                        .find(|f| f.id == *fid)
                        .map_or(16, |f| f.bits);
                    n *= range_expansion(*lo, *hi, bits);
                }
            }
        }
        hw_entries += n;
    }
    let key_bits: u64 = t.fields.iter().map(|f| f.bits as u64).sum();
    let tcam = t.fields.iter().any(|f| f.kind != MatchKind::Exact);
    let (sram, tcam_blocks) = if entries == 0 {
        (0, 0)
    } else if tcam {
        let wide = key_bits.div_ceil(TCAM_WIDTH).max(1);
        let deep = hw_entries.div_ceil(TCAM_DEPTH);
        (
            sram_blocks(hw_entries, action_bits(t) + OVERHEAD_BITS),
            wide * deep,
        )
    } else {
        let n = hw_entries.max(EXACT_MIN_ENTRIES);
        (sram_blocks(n, key_bits + action_bits(t) + OVERHEAD_BITS), 0)
    };
    TableUse {
        table: t.name,
        entries,
        hw_entries,
        sram_blocks: sram,
        tcam_blocks,
    }
}

/// The table use of one switch under a profile.
pub fn usage(device: &str, entities: &[Entity], profile: Profile) -> SwitchUse {
    // A Tofino runs p4/netc_tna.p4: the same tables plus the modulo chain.
    let modulo = match profile {
        Profile::Tofino => tna::modulo_entities(&tna::vector_sizes(entities)),
        Profile::Duet => Vec::new(),
    };
    let program: Vec<&'static TableSpec> = match profile {
        Profile::Tofino => TABLES.iter().chain(TNA_TABLES.iter()).copied().collect(),
        Profile::Duet => TABLES.to_vec(),
    };
    let mut by_table: BTreeMap<u32, Vec<&Entity>> = BTreeMap::new();
    let mut members: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut groups = 0u64;
    for e in entities.iter().chain(&modulo) {
        match e {
            Entity::Table(t) => by_table.entry(t.table.id).or_default().push(e),
            Entity::Member(m) => *members.entry(m.profile.name).or_default() += 1,
            Entity::Mcast(_) => groups += 1,
        }
    }
    let tables: Vec<TableUse> = program
        .iter()
        .map(|t| table_use(t, by_table.get(&t.id).map(Vec::as_slice).unwrap_or(&[])))
        .collect();
    let entries = |names: &[&str]| -> u64 {
        tables
            .iter()
            .filter(|u| names.contains(&u.table))
            .map(|u| u.entries)
            .sum()
    };
    let limit = |name: &str, tabs: Vec<&'static str>, used: u64, capacity: u64, unit| Limit {
        name: name.to_string(),
        tables: tabs,
        used,
        capacity,
        unit,
    };
    let mut limits = Vec::new();
    match profile {
        Profile::Duet => {
            limits.push(limit(
                "host",
                vec!["vip", "vip_local"],
                entries(&["vip", "vip_local"]),
                DUET_HOST,
                "entries",
            ));
            limits.push(limit(
                "ecmp",
                vec!["ecmp", "ecmp_local"],
                entries(&["ecmp", "ecmp_local"]),
                DUET_ECMP,
                "entries",
            ));
            limits.push(limit(
                "tunnel",
                vec!["tunnel"],
                entries(&["tunnel"]),
                DUET_TUNNEL,
                "entries",
            ));
            for t in TABLES {
                if !["vip", "vip_local", "ecmp", "ecmp_local", "tunnel"].contains(&t.name) {
                    limits.push(limit(
                        t.name,
                        vec![t.name],
                        entries(&[t.name]),
                        t.size,
                        "entries",
                    ));
                }
            }
        }
        Profile::Tofino => {
            let sram: u64 = tables.iter().map(|u| u.sram_blocks).sum();
            let tcam: u64 = tables.iter().map(|u| u.tcam_blocks).sum();
            // the dependency chain among the tables in use: an empty table
            // is not placed, so the levels it would take are not needed
            let depth = TNA_LEVELS
                .iter()
                .filter(|(n, _)| tables.iter().any(|u| u.table == *n && u.entries > 0))
                .map(|(_, l)| *l)
                .collect::<std::collections::BTreeSet<u64>>()
                .len() as u64;
            let stages = depth
                .max(sram.div_ceil(TOFINO_SRAM_PER_STAGE))
                .max(tcam.div_ceil(TOFINO_TCAM_PER_STAGE));
            let all: Vec<&'static str> = program.iter().map(|t| t.name).collect();
            limits.push(limit(
                "sram",
                all.clone(),
                sram,
                TOFINO_STAGES * TOFINO_SRAM_PER_STAGE,
                "blocks",
            ));
            limits.push(limit(
                "tcam",
                all.clone(),
                tcam,
                TOFINO_STAGES * TOFINO_TCAM_PER_STAGE,
                "blocks",
            ));
            limits.push(limit("stages", all, stages, TOFINO_STAGES, "stages"));
        }
    }
    for p in [&schema::ECMP_PROFILE, &schema::ECMP_LOCAL_PROFILE] {
        let used = members.get(p.name).copied().unwrap_or(0);
        limits.push(limit(p.name, vec![p.table.name], used, p.size, "members"));
    }
    limits.push(limit(
        "multicast groups",
        vec!["mcast"],
        groups,
        1 << schema::MGID_BITS,
        "groups",
    ));
    SwitchUse {
        device: device.to_string(),
        profile,
        tables,
        limits,
    }
}

/// Err naming the switch and the first limit it exceeds.
pub fn check(u: &SwitchUse) -> Result<(), P4Error> {
    match u.limits.iter().find(|l| l.over()) {
        None => Ok(()),
        Some(l) => Err(P4Error::Capacity {
            device: u.device.clone(),
            limit: l.name.clone(),
            tables: l.tables.join(", "),
            used: l.used,
            capacity: l.capacity,
            unit: l.unit,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_expansion_counts_covering_prefixes() {
        assert_eq!(range_expansion(0, 65535, 16), 1);
        assert_eq!(range_expansion(80, 80, 16), 1);
        assert_eq!(range_expansion(1, 65534, 16), 30);
        assert_eq!(range_expansion(1024, 2047, 16), 1);
        assert_eq!(range_expansion(1000, 1999, 16), 7);
    }

    #[test]
    fn exact_tables_take_at_least_1024_entries() {
        let u = usage("s", &[], Profile::Tofino);
        assert!(u.tables.iter().all(|t| t.sram_blocks == 0));
        assert_eq!(sram_blocks(EXACT_MIN_ENTRIES, 84), 1);
        assert_eq!(sram_blocks(4096, 84), 4);
        assert_eq!(sram_blocks(1024, 200), 2);
    }
}
