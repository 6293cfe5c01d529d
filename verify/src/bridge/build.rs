//! Building a [`Bridge`]: from flow and group text ([`Bridge::new`]), from
//! an older bridge reusing what it already parsed ([`Bridge::rebuilt`]), or
//! by patching one in place for an update ([`Bridge::patched`]), and taking
//! over an older bridge's lookup cache ([`Bridge::carry_cache`]).
//!
//! Guarantees: whichever way it is built, a bridge holds each table's flows
//! by priority, then file order, its per-table match counts and lookup
//! keys agree with its flows, and a handle whose flow is gone maps to
//! [`GONE`] — so running it gives the outcomes a fresh [`Bridge::new`] of
//! the same text would.

use super::{Bridge, Flow, FlowError, Group, Val, GONE};
use crate::artifacts::{FlowText, GroupText};
use crate::incremental::Moves;
use crate::lookup_cache::{CacheEdit, LookupCache};
use crate::ofctl::{self, Action};
use crate::space::Field;
use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Parsed flows by their (match, actions) text, for [`Bridge::rebuilt`].
type Parsed<'a> = HashMap<(&'a str, &'a str), Vec<&'a Flow>>;

impl Bridge {
    pub fn new(
        name: &str,
        index: u32,
        flows: &[FlowText],
        groups: &[GroupText],
    ) -> Result<Bridge, FlowError> {
        Bridge::build(name, index, flows, groups, HashMap::new())
    }

    /// The bridge `old` becomes with these flows and groups: a flow whose
    /// match and actions text `old` already parsed takes a copy of the
    /// parsed form (an update of a bridge of thousands of flows parses only
    /// the few it added). `old` is left as it was. Every flow takes a new
    /// handle (no path through `old` names one of them).
    pub fn rebuilt(
        old: &Bridge,
        flows: &[FlowText],
        groups: &[GroupText],
    ) -> Result<Bridge, FlowError> {
        let mut parsed: Parsed = HashMap::new();
        for f in old.flows.iter().rev() {
            parsed
                .entry((f.text.matches.as_str(), f.text.actions.as_str()))
                .or_default()
                .push(f);
        }
        let mut b = Bridge::build(&old.name, old.index, flows, groups, parsed)?;
        // every flow takes a number `old` never gave: no path kept from
        // `old` names a flow of this bridge (each is traced again)
        let first = old.at.len() as u32;
        b.handles.iter_mut().for_each(|h| *h += first);
        let mut at = vec![GONE; old.at.len()];
        at.append(&mut b.at);
        b.at = at;
        Ok(b)
    }

    /// `old` with its flows moved to their new positions (`moved`: old
    /// position → new, flows paired by their text, `file:line` aside;
    /// `None`: the same flows), patched where `moved` says the flows
    /// changed: only the middle's new flows are parsed, the flows after it
    /// shift in one move, and the tables and their fields follow the flows
    /// added and removed. A change of a few flows of tens of thousands (a
    /// Hoverboard) neither hashes, clones nor re-sorts the rest. A carried
    /// flow keeps its handle; a new one takes a number never given before.
    /// `old` is left without flows (its cache and keys stay, for
    /// [`Bridge::carry_cache`]); on an error it is left as it was.
    pub(crate) fn patched(
        old: &mut Bridge,
        flows: &[FlowText],
        groups: &[GroupText],
        moved: Option<&Moves>,
    ) -> Result<Bridge, FlowError> {
        let n_old = old.flows.len();
        // the old middle, the new one, and per new middle position the old
        // flow carried there (each old flow carried at most once)
        let (om, nm, carried) = match moved {
            None if n_old == flows.len() => (0..0, 0..0, Vec::new()),
            None => return Bridge::rebuilt(old, flows, groups),
            Some(m) => {
                let (om, nm) = (m.old_middle(), m.new_middle());
                if m.old_len != n_old || m.new_len != flows.len() || m.middle.len() != om.len() {
                    return Bridge::rebuilt(old, flows, groups);
                }
                let mut carried: Vec<Option<usize>> = vec![None; nm.len()];
                for (i, j) in m.middle.iter().enumerate() {
                    let Some(j) = j else { continue };
                    let c = (*j as usize)
                        .checked_sub(nm.start)
                        .and_then(|k| carried.get_mut(k));
                    match c {
                        Some(c @ None) => *c = Some(i),
                        _ => return Bridge::rebuilt(old, flows, groups),
                    }
                }
                (om, nm, carried)
            }
        };
        // parse what is new before anything of `old` moves
        let mut fresh: Vec<Option<Flow>> = Vec::with_capacity(nm.len());
        for (f, c) in flows[nm.clone()].iter().zip(&carried) {
            fresh.push(match c {
                Some(_) => None,
                None => {
                    let e = |source| FlowError {
                        at: f.at.clone(),
                        source,
                    };
                    Some(Flow {
                        text: f.clone(),
                        matches: ofctl::parse_match(&f.matches).map_err(e)?,
                        actions: ofctl::parse_actions(&f.actions).map_err(e)?,
                    })
                }
            });
        }
        let gs = Bridge::patched_groups(old, groups)?;
        // the flows: the old middle out, the new one in (its carried flows
        // moved, not cloned; their `file:line` is left as parsed: comparing
        // and copying every carried flow's was 41% of an update that edits
        // two Hoverboards at 100k VMs; citations read the artifacts, see
        // [`Bridge::cite`])
        let mut fl = std::mem::take(&mut old.flows);
        let mut out: Vec<Flow> = fl[om.clone()].iter_mut().map(std::mem::take).collect();
        let mut counts = std::mem::take(&mut old.counts);
        let mut refields = BTreeSet::new();
        // the old middle's flows, each with its new position (`None`: gone)
        let old_middle = moved.map_or(&[][..], |m| m.middle.as_slice());
        for (f, to) in out.iter().zip(old_middle) {
            if to.is_none() {
                refields.extend(count(&mut counts, f, false));
            }
        }
        let middle: Vec<Flow> = carried
            .iter()
            .zip(fresh)
            .map(|(c, f)| match (c, f) {
                (Some(i), _) => std::mem::take(&mut out[*i]),
                (None, f) => f.unwrap_or_default(),
            })
            .collect();
        for (f, c) in middle.iter().zip(&carried) {
            if c.is_none() {
                refields.extend(count(&mut counts, f, true));
            }
        }
        fl.splice(om.clone(), middle);
        // handles: the flows not carried lose theirs, new flows take new
        // ones, and every flow that moved is found where it is now
        let mut handles = std::mem::take(&mut old.handles);
        let mut at = std::mem::take(&mut old.at);
        for (&h, to) in handles[om.clone()].iter().zip(old_middle) {
            if to.is_none() {
                at[h as usize] = GONE;
            }
        }
        let mid_handles: Vec<u32> = carried
            .iter()
            .map(|c| match c {
                Some(i) => handles[om.start + i],
                None => {
                    at.push(GONE);
                    (at.len() - 1) as u32
                }
            })
            .collect();
        handles.splice(om.clone(), mid_handles);
        let shifted = match n_old == fl.len() {
            true => nm.clone(),
            false => nm.start..fl.len(),
        };
        for j in shifted {
            at[handles[j] as usize] = j as u32;
        }
        // tables: positions renumbered, the flows gone dropped, the new
        // ones put in their place by priority
        let mut tables = std::mem::take(&mut old.tables);
        if let Some(m) = moved {
            let in_order = m.in_order();
            let mut added: BTreeMap<u8, Vec<u32>> = BTreeMap::new();
            for (k, c) in carried.iter().enumerate() {
                if c.is_none() {
                    let j = nm.start + k;
                    added.entry(fl[j].text.table).or_default().push(j as u32);
                }
            }
            for (t, v) in tables.iter_mut() {
                v.retain_mut(|p| match m.get(*p as usize) {
                    Some(j) => {
                        *p = j;
                        true
                    }
                    None => false,
                });
                let new = added.remove(t).unwrap_or_default();
                place(&fl, v, new, in_order);
            }
            for (t, new) in added {
                let v = tables.entry(t).or_default();
                place(&fl, v, new, true);
            }
            tables.retain(|_, v| !v.is_empty());
        }
        // fields: only tables whose matched fields changed are read again
        let mut keys = old.keys.clone();
        for t in refields {
            match counts.get(&t) {
                Some(c) if c.flows > 0 => {
                    keys.insert(t, c.keys());
                }
                _ => {
                    keys.remove(&t);
                    counts.remove(&t);
                }
            }
        }
        Ok(Bridge {
            name: old.name.clone(),
            index: old.index,
            flows: fl,
            groups: gs,
            tables,
            keys,
            counts,
            handles,
            at,
            patched: true,
            cache: RefCell::new(LookupCache::default()),
            reads: RefCell::new(None),
        })
    }

    /// `groups` parsed, a group whose text is the same taking `old`'s
    /// parsed buckets (`old` is left without groups). Of two lines with one
    /// id the last is the group, as in [`Bridge::new`] (OVS refuses such a
    /// bundle: PUSH-1's finding).
    fn patched_groups(
        old: &mut Bridge,
        groups: &[GroupText],
    ) -> Result<BTreeMap<u32, Group>, FlowError> {
        let last: BTreeMap<u32, &GroupText> = groups.iter().map(|g| (g.id, g)).collect();
        // parsed before anything of `old` moves (an error leaves it as it was)
        let mut parsed: BTreeMap<u32, Vec<Vec<Action>>> = BTreeMap::new();
        for (id, g) in &last {
            let same = old
                .groups
                .get(id)
                .is_some_and(|k| k.text.kind == g.kind && k.text.buckets == g.buckets);
            if !same {
                let b = ofctl::parse_buckets(&g.buckets).map_err(|source| FlowError {
                    at: g.at.clone(),
                    source,
                })?;
                parsed.insert(*id, b);
            }
        }
        let mut old_groups = std::mem::take(&mut old.groups);
        let mut gs = BTreeMap::new();
        for (id, g) in last {
            let buckets = match parsed.remove(&id) {
                Some(b) => b,
                None => old_groups
                    .remove(&id)
                    .map(|k| k.buckets)
                    .unwrap_or_default(),
            };
            gs.insert(
                id,
                Group {
                    text: g.clone(),
                    buckets,
                },
            );
        }
        Ok(gs)
    }

    fn build<'a>(
        name: &str,
        index: u32,
        flows: &'a [FlowText],
        groups: &[GroupText],
        mut parsed: Parsed<'a>,
    ) -> Result<Bridge, FlowError> {
        let mut fl = Vec::new();
        for f in flows {
            let e = |source| FlowError {
                at: f.at.clone(),
                source,
            };
            let known = parsed
                .get_mut(&(f.matches.as_str(), f.actions.as_str()))
                .and_then(Vec::pop);
            let (matches, actions) = match known {
                Some(p) => (p.matches.clone(), p.actions.clone()),
                None => (
                    ofctl::parse_match(&f.matches).map_err(e)?,
                    ofctl::parse_actions(&f.actions).map_err(e)?,
                ),
            };
            fl.push(Flow {
                text: f.clone(),
                matches,
                actions,
            });
        }
        let mut gs = BTreeMap::new();
        for g in groups {
            let buckets = ofctl::parse_buckets(&g.buckets).map_err(|source| FlowError {
                at: g.at.clone(),
                source,
            })?;
            gs.insert(
                g.id,
                Group {
                    text: g.clone(),
                    buckets,
                },
            );
        }
        Ok(Bridge::assemble(name, index, fl, gs))
    }

    /// A bridge of these parsed flows and groups: its tables (flows by
    /// priority) and the fields each table matches.
    fn assemble(name: &str, index: u32, fl: Vec<Flow>, gs: BTreeMap<u32, Group>) -> Bridge {
        let mut tables: BTreeMap<u8, Vec<u32>> = BTreeMap::new();
        let mut counts: BTreeMap<u8, TableCounts> = BTreeMap::new();
        for (i, f) in fl.iter().enumerate() {
            tables.entry(f.text.table).or_default().push(i as u32);
            count(&mut counts, f, true);
        }
        let keys = counts.iter().map(|(t, c)| (*t, c.keys())).collect();
        for v in tables.values_mut() {
            sort_by_priority(&fl, v);
        }
        let n = fl.len() as u32;
        Bridge {
            name: name.to_string(),
            index,
            flows: fl,
            groups: gs,
            tables,
            keys,
            counts,
            handles: (0..n).collect(),
            at: (0..n).collect(),
            patched: false,
            cache: RefCell::new(LookupCache::default()),
            reads: RefCell::new(None),
        }
    }

    /// Takes over `old`'s cached table lookups that this bridge would
    /// compute alike: same table, same fields matched, and `keep` says no
    /// flow added or removed there can match the values (`flows` maps
    /// `old`'s flow indices to this bridge's; a flow it lacks drops the
    /// entry). Saves an update re-tracing through a rebuilt bridge from
    /// recomputing every lookup. The lookups are not visited here: the
    /// change is logged and each lookup thinned when next read
    /// (`lookup_cache.rs`; a pass over a Hoverboard's whole cache per
    /// rebuild was half of rebuilding it).
    pub(crate) fn carry_cache(
        &self,
        old: Bridge,
        flows: Option<&Moves>,
        keep: impl Fn(u8, &[(Field, Val)]) -> bool + 'static,
    ) {
        let mut refields: Vec<u8> = old
            .keys
            .keys()
            .chain(self.keys.keys())
            .filter(|t| old.keys.get(t) != self.keys.get(t))
            .copied()
            .collect();
        refields.sort_unstable();
        refields.dedup();
        let edit = CacheEdit {
            refields,
            keep: Box::new(keep),
            flows: flows.cloned(),
        };
        let cache = old.cache.into_inner().carried(edit, |t| self.keys.get(&t));
        let mut mine = self.cache.borrow_mut();
        // a bridge looked up before taking the cache over keeps its own
        // (dropping lookups is always sound; never the case in an update)
        if mine.len() == 0 {
            *mine = cache;
        }
    }
}

/// A table's flows, and per field its flows match, how many matches.
#[derive(Default)]
pub(super) struct TableCounts {
    flows: u32,
    fields: Vec<(Field, u32)>,
}

impl TableCounts {
    /// The fields matched, sorted.
    fn keys(&self) -> Vec<Field> {
        let mut k: Vec<Field> = self
            .fields
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(f, _)| *f)
            .collect();
        k.sort_unstable();
        k
    }
}

/// Counts flow `f` into its table (`add`) or out of it; returns the table
/// if the fields it matches (or whether it has flows) changed. A table
/// matches a few fields, so a linear search beats a map.
fn count(counts: &mut BTreeMap<u8, TableCounts>, f: &Flow, add: bool) -> Option<u8> {
    let c = counts.entry(f.text.table).or_default();
    let step = |n: &mut u32| {
        let was = *n;
        *n = if add { was + 1 } else { was.saturating_sub(1) };
        (was == 0) != (*n == 0)
    };
    let mut changed = step(&mut c.flows);
    for m in &f.matches {
        let at = match c.fields.iter().position(|(x, _)| *x == m.field) {
            Some(at) => at,
            None => {
                c.fields.push((m.field, 0));
                c.fields.len() - 1
            }
        };
        changed |= step(&mut c.fields[at].1);
    }
    changed.then_some(f.text.table)
}

/// Sorts a table's flow positions by priority, then file order: on the
/// pairs, without reading a flow per comparison.
fn sort_by_priority(fl: &[Flow], v: &mut Vec<u32>) {
    let mut by: Vec<(Reverse<u16>, u32)> = v
        .iter()
        .map(|&i| (Reverse(fl[i as usize].text.priority), i))
        .collect();
    by.sort_unstable();
    v.clear();
    v.extend(by.into_iter().map(|(_, i)| i));
}

/// Puts the flows at positions `new` (of `fl`) into table `v` (positions
/// by priority, then file order, if `sorted`): a few are inserted where
/// they belong, more are sorted in with the rest.
fn place(fl: &[Flow], v: &mut Vec<u32>, new: Vec<u32>, sorted: bool) {
    let key = |i: u32| (Reverse(fl[i as usize].text.priority), i);
    if sorted && new.len() <= 32 {
        for j in new {
            let at = v.partition_point(|&q| key(q) < key(j));
            v.insert(at, j);
        }
        return;
    }
    v.extend(new);
    sort_by_priority(fl, v);
}
