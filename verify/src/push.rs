//! PUSH-1 on the OVS bridges: every bridge loads its artifacts, and what
//! they make it do is defined (specs/invariants.md §5c).
//!
//! Expects the artifacts as loaded and the network model's bridge for
//! each host (its flows parsed, in file order: a flow's position is its
//! line's index in `a.flows[host]`). Guarantees a finding, citing every
//! artifact line involved (`file:line`), for each:
//! - flow whose actions name a group (`group:G`) the bridge's `.groups`
//!   does not define: OVS refuses the flow (OFPBAC_BAD_OUT_GROUP) and with
//!   it the whole bundle, so the bridge keeps its old state;
//! - group id that two `.groups` lines define: OVS refuses the second
//!   `group add` (OFPGMFC_GROUP_EXISTS), and with it the bundle;
//! - pair of flows of one table and priority with the same match and
//!   different actions: OVS keeps the one added last, the push adds a
//!   bridge's flows sorted by their text (not in file order), and it
//!   reconciles by cookie, so the next push adds the other again and it
//!   replaces the first — which one the bridge holds depends on the pushes
//!   before;
//! - pair of flows of one table and priority whose matches overlap (a
//!   packet matches both) with different actions: OpenFlow leaves which
//!   one wins undefined.
//!
//! In both cases the model (`bridge.rs`) lets each of the two win, so the
//! path invariants see whatever the bridge may do as well.
//!
//! Overlap is decided exactly on the constraints (each a field's value
//! under a mask, the modelled subset of `ofctl.rs`): two matches share a
//! packet unless one field is fixed to different bits by both. A table's
//! flows of one priority are split by a field they match exactly (a
//! Hoverboard's routes by `nw_dst`), so pairs are compared only where
//! they could overlap.
//!
//! On a P4 switch ([`switch`], run by `p4/invariants.rs` on each switch it
//! builds): every `set_mcast_grp` entry names a multicast group the
//! request installs (the replication engine has no such group: the packets
//! the entry sends there are lost). What P4Runtime refuses outright — a
//! table, action or parameter the P4Info lacks, an INSERT of a key already
//! there, a member the table's action profile does not hold — is refused
//! when the request is read (`p4/request.rs`, `p4/switch.rs`): an input
//! error at the update's `file:line`, never a verdict.

use crate::artifacts::{Artifacts, FlowText};
use crate::bridge::Bridge;
use crate::network::Network;
use crate::ofctl::{Action, Constraint};
use crate::p4::request::{EntryAction, P4Info};
use crate::p4::switch::Switch;
use crate::report::Counterexample;
use crate::space::{show, Field};
use std::collections::{BTreeMap, HashMap};

/// A match as OVS compares matches: per field one value under one mask,
/// fields in order (`ip,nw_dst=X` and `nw_dst=X,ip` are one match).
type Canon = Vec<(Field, u128, u128)>;

/// `cs` merged per field; `None` when two constraints of one field
/// contradict (the flow matches nothing).
fn canon(cs: &[Constraint]) -> Option<Canon> {
    let mut by: BTreeMap<Field, (u128, u128)> = BTreeMap::new();
    for c in cs {
        let e = by.entry(c.field).or_insert((0, 0));
        let common = e.1 & c.mask;
        if (e.0 ^ c.value) & common != 0 {
            return None;
        }
        *e = ((e.0 & e.1) | (c.value & c.mask), e.1 | c.mask);
    }
    Some(by.into_iter().map(|(f, (v, m))| (f, v, m)).collect())
}

/// Whether some packet matches both.
fn overlap(a: &Canon, b: &Canon) -> bool {
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        let (x, y) = (&a[i], &b[j]);
        match x.0.cmp(&y.0) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                if (x.1 ^ y.1) & x.2 & y.2 != 0 {
                    return false;
                }
                i += 1;
                j += 1;
            }
        }
    }
    true
}

/// Both matches at once, as text (a packet of the overlap).
fn both(a: &Canon, b: &Canon) -> String {
    let mut by: BTreeMap<Field, (u128, u128)> = BTreeMap::new();
    for (f, v, m) in a.iter().chain(b) {
        let e = by.entry(*f).or_insert((0, 0));
        *e = (e.0 | (v & m), e.1 | m);
    }
    if by.is_empty() {
        return "any packet".into();
    }
    by.into_iter()
        .map(|(f, (v, m))| match m == f.mask() {
            true => format!("{f}={}", show(f, v)),
            false => format!("{f}={}/{m:#x}", show(f, v)),
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// One flow of a table and priority, as the pairing reads it.
struct Entry<'a> {
    pos: usize,
    m: Canon,
    actions: &'a [Action],
}

/// Flows of one (table, priority) at most this many are compared pair by
/// pair; more are split by a field first.
const SMALL: usize = 24;

/// The pairs (positions into `es`, each pair once, in either order) of
/// entries whose matches overlap and whose actions differ.
fn conflicts(es: &[Entry], ids: &[u32], used: &mut Vec<Field>, out: &mut Vec<(u32, u32)>) {
    let check = |a: u32, b: u32, out: &mut Vec<(u32, u32)>| {
        let (x, y) = (&es[a as usize], &es[b as usize]);
        if x.actions != y.actions && overlap(&x.m, &y.m) {
            out.push((a.min(b), a.max(b)));
        }
    };
    let all_pairs = |out: &mut Vec<(u32, u32)>| {
        for (k, &a) in ids.iter().enumerate() {
            for &b in &ids[k + 1..] {
                check(a, b, out);
            }
        }
    };
    if ids.len() <= SMALL {
        return all_pairs(out);
    }
    // the field most of them fix exactly, not split on yet
    let mut count: BTreeMap<Field, usize> = BTreeMap::new();
    for &i in ids {
        for (f, _, m) in &es[i as usize].m {
            if *m == f.mask() && !used.contains(f) {
                *count.entry(*f).or_default() += 1;
            }
        }
    }
    let Some((f, n)) = count
        .into_iter()
        .max_by_key(|(f, n)| (*n, std::cmp::Reverse(*f)))
    else {
        return all_pairs(out);
    };
    if n < 2 {
        return all_pairs(out);
    }
    let on = |i: u32| {
        es[i as usize]
            .m
            .iter()
            .find(|c| c.0 == f)
            .map(|c| (c.1, c.2))
    };
    let mut by: HashMap<u128, Vec<u32>> = HashMap::new();
    let mut rest = Vec::new();
    for &i in ids {
        match on(i) {
            Some((v, m)) if m == f.mask() => by.entry(v).or_default().push(i),
            _ => rest.push(i),
        }
    }
    used.push(f);
    for b in by.values() {
        conflicts(es, b, used, out);
    }
    conflicts(es, &rest, used, out);
    used.pop();
    // what does not fix the field meets each value its mask allows
    for &r in &rest {
        let rc = on(r);
        for (v, b) in &by {
            if rc.is_none_or(|(rv, rm)| (rv ^ v) & rm == 0) {
                for &e in b {
                    check(r, e, out);
                }
            }
        }
    }
}

/// A flow line as the `.flows` file has it, after its `file:line`.
fn cite(f: &FlowText) -> String {
    let m = match f.matches.is_empty() {
        true => String::new(),
        false => format!(",{}", f.matches),
    };
    format!(
        "{}  table={},priority={},cookie={:#x}{m},actions={}",
        f.at, f.table, f.priority, f.cookie, f.actions
    )
}

fn finding(summary: String, cites: Vec<String>) -> Counterexample {
    Counterexample {
        invariant: "PUSH-1".into(),
        key: None,
        summary,
        packet: None,
        paths: Vec::new(),
        cites,
    }
}

/// PUSH-1 on every bridge, by host (a host without findings has no entry).
pub fn push1(net: &Network, a: &Artifacts) -> BTreeMap<String, Vec<Counterexample>> {
    a.flows
        .keys()
        .chain(a.groups.keys())
        .filter_map(|h| net.bridge(h))
        .map(|b| (b.name.clone(), bridge(b, a)))
        .filter(|(_, cxs)| !cxs.is_empty())
        .collect()
}

/// PUSH-1 on one bridge: its groups, then its flows' group references,
/// then its conflicting flows.
pub fn bridge(b: &Bridge, a: &Artifacts) -> Vec<Counterexample> {
    let mut out = Vec::new();
    let host = b.name.as_str();
    let texts = a.flows.get(host).map_or(&[][..], Vec::as_slice);
    let groups = a.groups.get(host).map_or(&[][..], Vec::as_slice);
    let mut first: BTreeMap<u32, &str> = BTreeMap::new();
    for g in groups {
        if let Some(&at) = first.get(&g.id) {
            out.push(finding(
                format!("{host}: group {} is defined twice ({at} and {}): OVS refuses the second `group add` (OFPGMFC_GROUP_EXISTS), and with it the bridge's whole bundle", g.id, g.at),
                vec![format!("{at}  group_id={}", g.id), format!("{}  group_id={}", g.at, g.id)],
            ));
        } else {
            first.insert(g.id, &g.at);
        }
    }
    for (pos, f) in b.flows.iter().enumerate() {
        let Some(t) = texts.get(pos) else { continue };
        for act in &f.actions {
            if let Action::Group(g) = act {
                if !first.contains_key(g) {
                    out.push(finding(
                        format!("{host}: the flow at {} sends to group {g}, which the bridge's groups do not define: OVS refuses the flow (OFPBAC_BAD_OUT_GROUP), and with it the bridge's whole bundle", t.at),
                        vec![cite(t)],
                    ));
                }
            }
        }
    }
    out.extend(conflicting_flows(b, texts));
    out
}

/// PUSH-1 on one P4 switch: each multicast entry's group is installed.
pub fn switch(sw: &Switch, info: &P4Info) -> Vec<Counterexample> {
    let mut out = Vec::new();
    for (e, line) in sw.entries.values() {
        let action = match &e.action {
            Some(EntryAction::Action(a)) => Some(a),
            Some(EntryAction::Member(m)) => sw.member(e.table_id, *m).map(|(a, _)| a),
            None => None,
        };
        let Some(a) = action else { continue };
        let named = |id: u32| info.actions.get(&id).map(|x| x.name.as_str());
        if named(a.id) != Some("set_mcast_grp") {
            continue;
        }
        let group = a
            .params
            .iter()
            .find(|(p, _)| *p == 1)
            .map_or(0, |(_, v)| *v);
        if u32::try_from(group).is_ok_and(|g| sw.groups.contains_key(&g)) {
            continue;
        }
        let at = format!("{}:{line}", sw.file);
        out.push(finding(
            format!("switch {}: the entry at {at} sends to multicast group {group}, which the request does not install: the replication engine has no such group, and the packets are lost", sw.name),
            vec![format!("{at}  {}.mcast → set_mcast_grp({group})", sw.name)],
        ));
    }
    out
}

/// Pairs of flows of one table and priority that overlap with different
/// actions.
fn conflicting_flows(b: &Bridge, texts: &[FlowText]) -> Vec<Counterexample> {
    let mut by: BTreeMap<(u8, u16), Vec<Entry>> = BTreeMap::new();
    for (pos, f) in b.flows.iter().enumerate() {
        let Some(m) = canon(&f.matches) else { continue };
        by.entry((f.text.table, f.text.priority))
            .or_default()
            .push(Entry {
                pos,
                m,
                actions: &f.actions,
            });
    }
    let mut found: Vec<(usize, usize, bool, String)> = Vec::new();
    for es in by.values() {
        if es.len() < 2 {
            continue;
        }
        let ids: Vec<u32> = (0..es.len() as u32).collect();
        let mut pairs = Vec::new();
        conflicts(es, &ids, &mut Vec::new(), &mut pairs);
        for (x, y) in pairs {
            let (x, y) = (&es[x as usize], &es[y as usize]);
            let (x, y) = if x.pos < y.pos { (x, y) } else { (y, x) };
            found.push((x.pos, y.pos, x.m == y.m, both(&x.m, &y.m)));
        }
    }
    found.sort();
    found.dedup();
    let host = b.name.as_str();
    let mut out = Vec::new();
    for (p, q, same, packet) in found {
        let (Some(f), Some(g)) = (texts.get(p), texts.get(q)) else {
            continue;
        };
        // one match: shown as the first line writes it
        let packet = match same {
            true => f.matches.clone(),
            false => packet,
        };
        let summary = match same {
            true => format!(
                "{host}: table {} priority {} has two flows with one match (`{packet}`) and different actions ({} at {}, {} at {}): OVS keeps the one added last, and each push, reconciling by cookie, adds the one missing again in the other's place — which one the bridge holds depends on the pushes before",
                f.table, f.priority, f.actions, f.at, g.actions, g.at
            ),
            false => format!(
                "{host}: table {} priority {} has two flows whose matches overlap ({} and {}; a packet with {packet} matches both) with different actions: OpenFlow leaves which one wins undefined",
                f.table, f.priority, f.at, g.at
            ),
        };
        out.push(finding(summary, vec![cite(f), cite(g)]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::artifacts::{parse_flow_line, parse_group_line};
    use proptest::prelude::*;

    fn bridge_of(flows: &[&str], groups: &[&str]) -> (Bridge, Artifacts) {
        let fl: Vec<FlowText> = flows
            .iter()
            .enumerate()
            .map(|(i, l)| parse_flow_line(l, &format!("h1.flows:{}", i + 1)).unwrap())
            .collect();
        let gs: Vec<_> = groups
            .iter()
            .enumerate()
            .map(|(i, l)| parse_group_line(l, &format!("h1.groups:{}", i + 1)).unwrap())
            .collect();
        let b = Bridge::new("h1", 0, &fl, &gs).unwrap();
        let mut a = Artifacts::default();
        a.flows.insert("h1".into(), fl);
        a.groups.insert("h1".into(), gs);
        (b, a)
    }

    fn summaries(flows: &[&str], groups: &[&str]) -> Vec<String> {
        let (b, a) = bridge_of(flows, groups);
        bridge(&b, &a).into_iter().map(|c| c.summary).collect()
    }

    #[test]
    fn a_duplicate_match_with_other_actions_is_a_finding_and_an_equal_one_is_not() {
        let dup = summaries(
            &[
                "table=40,priority=100,ip,reg6=9000,nw_dst=10.90.0.1,actions=output:10",
                "table=40,priority=100,cookie=0x9,reg6=9000,nw_dst=10.90.0.1,ip,actions=output:11",
            ],
            &[],
        );
        assert_eq!(dup.len(), 1, "{dup:?}");
        assert!(dup[0].contains("one match"), "{dup:?}");
        // the same actions (another cookie): OVS does the same either way
        assert!(summaries(
            &[
                "table=40,priority=100,ip,nw_dst=10.90.0.1,actions=output:10",
                "table=40,priority=100,cookie=0x9,ip,nw_dst=10.90.0.1,actions=output:10",
            ],
            &[]
        )
        .is_empty());
    }

    #[test]
    fn overlap_at_equal_priority_is_a_finding_and_other_priorities_or_disjoint_matches_are_not() {
        let o = summaries(
            &[
                "table=20,priority=5,ip,nw_dst=10.0.0.0/8,actions=output:3",
                "table=20,priority=5,tcp,tp_dst=80,actions=drop",
            ],
            &[],
        );
        assert_eq!(o.len(), 1, "{o:?}");
        assert!(o[0].contains("undefined"), "{o:?}");
        assert!(summaries(
            &[
                "table=20,priority=5,ip,nw_dst=10.0.0.0/8,actions=output:3",
                "table=20,priority=6,tcp,tp_dst=80,actions=drop",
                "table=20,priority=5,arp,actions=drop",
                "table=20,priority=5,ip,nw_dst=11.0.0.0/8,actions=drop",
            ],
            &[]
        )
        .is_empty());
    }

    #[test]
    fn groups_undefined_or_defined_twice_are_findings() {
        let g = summaries(
            &[
                "table=0,priority=1,actions=group:9999",
                "table=0,priority=2,actions=group:1",
            ],
            &[
                "group_id=1,type=all,bucket=output:10",
                "group_id=1,type=all,bucket=output:11",
            ],
        );
        assert_eq!(g.len(), 2, "{g:?}");
        assert!(
            g[0].contains("OFPGMFC_GROUP_EXISTS") && g[1].contains("group 9999"),
            "{g:?}"
        );
    }

    /// A flow from small numbers: one table, two priorities, matches on
    /// addresses and a port, some exact and some masked.
    fn flow(x: (u8, u8, u8, u8)) -> String {
        let mut m = vec![format!("ip,nw_src=10.1.0.{}", x.1 % 3)];
        match x.2 % 4 {
            0 => m.push(format!("nw_dst=10.0.0.{}", x.2 % 5)),
            1 => m.push(format!("nw_dst=10.0.{}.0/24", x.2 % 2)),
            2 => m.push(format!("tcp,tp_dst={}", 80 + x.2 % 3)),
            _ => {}
        }
        format!(
            "table=1,priority={},{},actions=output:{}",
            x.0 % 2,
            m.join(","),
            x.3 % 3 + 10
        )
    }

    proptest! {
        /// The split by fields finds exactly the pairs a comparison of
        /// every pair (on the packets' BDDs) finds.
        #[test]
        fn the_split_finds_every_overlapping_pair(
            xs in prop::collection::vec((any::<u8>(), any::<u8>(), any::<u8>(), any::<u8>()), 0..80),
        ) {
            let lines: Vec<String> = xs.into_iter().map(flow).collect();
            let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
            let (b, _) = bridge_of(&refs, &[]);
            let space = crate::space::Space::new();
            let set = |f: &crate::bridge::Flow| f.matches.iter().fold(space.all(), |s, c| s.and(&space.field_eq(c.field, c.value, c.mask)));
            let mut want = Vec::new();
            for (i, f) in b.flows.iter().enumerate() {
                for (j, g) in b.flows.iter().enumerate().skip(i + 1) {
                    if f.text.priority == g.text.priority && f.actions != g.actions && !set(f).and(&set(g)).is_false() {
                        want.push((i, j));
                    }
                }
            }
            let texts = &bridge_of(&refs, &[]).1.flows["h1"];
            let got: Vec<(usize, usize)> = conflicting_flows(&b, texts)
                .iter()
                .map(|c| {
                    let line = |k: usize| c.cites[k].split(':').nth(1).and_then(|s| s.split_whitespace().next()).and_then(|s| s.parse::<usize>().ok()).unwrap() - 1;
                    (line(0), line(1))
                })
                .collect();
            prop_assert_eq!(got, want);
        }
    }
}
