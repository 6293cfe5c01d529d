//! The load-balancer model: Muxes, HMux switches and DoS black holes as a trace reads them.
//!
//! Expects an [`Artifacts`] set: the rows of [`ROW_RELATIONS`] (software
//! Muxes' `agent_mux_*`, HMux switches' `p4_vip` / `p4_ecmp_member` /
//! `p4_tunnel`, `agent_mux_blackhole`) and `p4_announce`.
//! Guarantees:
//! - Every row has a *handle* (what `Hop::Lb { handle }` names and the
//!   entries hold): it stays with its row while the row exists and is
//!   never given to another row, so an update that adds or removes rows
//!   moves no other entry and no kept path ([`Lb::row`] finds a handle's
//!   row in the artifacts now, so a citation is always the current
//!   `file:line`; a handle whose row is gone finds none, [`Lb::holds`]).
//!   (The incremental verifier renumbered the kept paths of every VM that
//!   had reached a Mux whenever rows moved: with the Hoverboards' flows,
//!   an 82-second catch-up at 100k VMs.) Per relation,
//!   position → handle and handle → position are two arrays, moved by the
//!   dirty relations only; a build's handles are its rows' positions.
//! - Row ids number every row of [`ROW_RELATIONS`], relation after relation
//!   in that order and each relation's rows in artifact order: a VIP's
//!   entries keep row order by them.
//! - [`Lb::update`] moves the model to the next generation and equals
//!   [`Lb::build`] on it (same entries, same row ids, same holders): it
//!   diffs each changed relation's rows in order (a linear merge: an
//!   update adds or removes a few of tens of thousands), re-parses only
//!   the rows added, drops the entries of the rows removed and moves the
//!   handles of the rest. It also says what a trace could see
//!   differently: the (instance, address) pairs whose entries changed —
//!   among them every pair at which a trace read a removed row, so a kept
//!   path naming a gone handle is always traced again — and the addresses
//!   whose holders changed. Two rows with one key (the model keeps the
//!   last), or a relation's handles running out, make an update build the
//!   model again in full; only then do handles change ([`HandleMap`]).

use crate::artifacts::{Artifacts, Row};
use crate::network::{row_err, ModelError};
use crate::ofctl::{parse_ip, parse_mac};
use crate::row_moves::{Moves, RowMoves};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// The relations whose rows a path can name, in row-id order.
pub const ROW_RELATIONS: [&str; 7] = [
    "agent_mux_vip",
    "agent_mux_member",
    "agent_mux_tunnel",
    "p4_vip",
    "p4_ecmp_member",
    "p4_tunnel",
    "agent_mux_blackhole",
];

/// What each relation of [`ROW_RELATIONS`] is.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// A VIP's entry; `hmux`: an HMux switch's (held only if announced).
    Vip {
        hmux: bool,
    },
    Member,
    Tunnel,
    Blackhole,
}

const KINDS: [Kind; 7] = [
    Kind::Vip { hmux: false },
    Kind::Member,
    Kind::Tunnel,
    Kind::Vip { hmux: true },
    Kind::Member,
    Kind::Tunnel,
    Kind::Blackhole,
];

/// A Mux entry: (proto, port, n, row handle).
pub type VipEntry = (u8, u16, u64, u32);

/// The low bits of a row handle: the row's number within its relation
/// (the relation's index in [`ROW_RELATIONS`] is above them).
const LOCAL_BITS: u32 = 28;
/// A handle number whose row is gone (and a position no row has).
const FREE: u32 = u32::MAX;

fn handle(k: usize, local: u32) -> u32 {
    ((k as u32) << LOCAL_BITS) | local
}

fn split(h: u32) -> (usize, usize) {
    (
        (h >> LOCAL_BITS) as usize,
        (h & ((1 << LOCAL_BITS) - 1)) as usize,
    )
}
/// (instance, vip, proto, port, idx).
pub type MemberKey = (String, u32, u8, u16, u64);

/// The load-balancer entries of one generation.
#[derive(Clone, Default)]
pub struct Lb {
    /// The first row id of each relation of [`ROW_RELATIONS`], then the count.
    base: [u32; 8],
    /// Per relation: each row's handle number, by position.
    handles: [Vec<u32>; 7],
    /// Per relation: each handle number's position ([`FREE`]: its row is
    /// gone; the number is not given again).
    pos: [Vec<u32>; 7],
    /// Per VIP relation (`agent_mux_vip`, `p4_vip`), each row's address,
    /// by handle number.
    vip_addr: [Vec<u32>; 2],
    /// (instance, vni, address) → entries, in row order.
    pub vip: BTreeMap<(String, u64, u32), Vec<VipEntry>>,
    /// → (mvni, member, row handle).
    pub member: BTreeMap<MemberKey, (u64, u32, u32)>,
    /// (instance, mvni, member) → (underlay, dmac, row handle).
    pub tunnel: BTreeMap<(String, u64, u32), (u32, u64, u32)>,
    /// (instance, address) → row handle.
    pub blackhole: BTreeMap<(String, u32), u32>,
    /// address → instance → its VIP rows there ([software Mux, HMux]).
    held: BTreeMap<u32, BTreeMap<String, [u32; 2]>>,
    /// /32 address → the switches announcing it (`p4_announce`), in row order.
    announced: BTreeMap<u32, Vec<String>>,
    /// address → instances holding it (the HMux switches announcing it if
    /// one of them holds it, else the software Muxes with a VIP entry), sorted.
    holders: BTreeMap<u32, Vec<String>>,
    /// (instance, mvni, member) → the VIPs with a member entry naming it
    /// there, each with how many: the VIPs a changed tunnel reaches
    /// (scanning the instance's member entries per changed tunnel was the
    /// rest of the model's update at 100k VMs).
    vips_of_member: BTreeMap<(String, u64, u32), BTreeMap<u32, u32>>,
    /// Two rows of a relation share a key (the model keeps the last).
    duplicate: bool,
}

/// Old handle → new, when the model was built again (each relation's
/// old handle numbers → the new handle, [`FREE`]: the row is gone).
#[derive(Clone, Debug, PartialEq)]
pub struct HandleMap([Vec<u32>; 7]);

impl HandleMap {
    /// The new handle of old handle `h` (`None`: its row is gone).
    pub fn get(&self, h: u32) -> Option<u32> {
        let (k, local) = split(h);
        let to = *self.0.get(k)?.get(local)?;
        (to != FREE).then_some(to)
    }
}

/// What [`Lb::update`] found changed.
#[derive(Default)]
pub struct LbChange {
    /// Old handle → new when the model was built again; `None`: every
    /// handle still names the row it named.
    pub handles: Option<HandleMap>,
    /// (instance, address) whose entries differ (`None`: any address).
    pub instances: BTreeSet<(String, Option<u32>)>,
    /// Addresses whose holders differ.
    pub addresses: BTreeSet<u32>,
}

/// One row's entry in the model (its key, parsed).
enum Entry {
    Vip((String, u64, u32), (u8, u16, u64)),
    Member(MemberKey, (u64, u32)),
    Tunnel((String, u64, u32), (u32, u64)),
    Blackhole((String, u32)),
    /// A black-hole row whose address does not parse (never reached).
    Inert(String),
}

impl Entry {
    fn parse(kind: Kind, r: &Row) -> Result<Entry, ModelError> {
        let v = &r.vals;
        let inst = || v.first().cloned().unwrap_or_default();
        Ok(match kind {
            Kind::Vip { .. } => {
                let bad = || row_err(r, "expected (device, vni, vip, proto, port, n)");
                let key = (
                    inst(),
                    num_at(v, 1).ok_or_else(bad)?,
                    ip_at(v, 2).ok_or_else(bad)?,
                );
                let val = (
                    num_at(v, 3).ok_or_else(bad)? as u8,
                    num_at(v, 4).ok_or_else(bad)? as u16,
                    num_at(v, 5).ok_or_else(bad)?,
                );
                Entry::Vip(key, val)
            }
            Kind::Member => {
                let bad = || row_err(r, "expected (device, vip, proto, port, idx, mvni, member)");
                let key = (
                    inst(),
                    ip_at(v, 1).ok_or_else(bad)?,
                    num_at(v, 2).ok_or_else(bad)? as u8,
                    num_at(v, 3).ok_or_else(bad)? as u16,
                    num_at(v, 4).ok_or_else(bad)?,
                );
                Entry::Member(
                    key,
                    (num_at(v, 5).ok_or_else(bad)?, ip_at(v, 6).ok_or_else(bad)?),
                )
            }
            Kind::Tunnel => {
                let bad = || row_err(r, "expected (device, mvni, member, underlay, dmac)");
                let key = (
                    inst(),
                    num_at(v, 1).ok_or_else(bad)?,
                    ip_at(v, 2).ok_or_else(bad)?,
                );
                let dmac = v.get(4).and_then(|m| parse_mac(m)).ok_or_else(bad)?;
                Entry::Tunnel(key, (ip_at(v, 3).ok_or_else(bad)?, dmac))
            }
            Kind::Blackhole => match ip_at(v, 1) {
                Some(ip) => Entry::Blackhole((inst(), ip)),
                None => Entry::Inert(inst()),
            },
        })
    }

    /// The (instance, address) a trace reads this entry at (a member's is
    /// its VIP's; a tunnel's is every VIP with that member: [`Lb::update`]).
    fn at(&self) -> Option<(String, Option<u32>)> {
        match self {
            Entry::Vip((i, _, a), _) => Some((i.clone(), Some(*a))),
            Entry::Member((i, a, ..), _) => Some((i.clone(), Some(*a))),
            Entry::Blackhole((i, a)) => Some((i.clone(), Some(*a))),
            Entry::Inert(i) => Some((i.clone(), None)),
            Entry::Tunnel(..) => None,
        }
    }
}

impl Lb {
    /// The model of every row of `a`.
    pub fn build(a: &Artifacts) -> Result<Lb, ModelError> {
        let mut lb = Lb::default();
        let mut id = 0u32;
        for (k, rel) in ROW_RELATIONS.iter().enumerate() {
            lb.base[k] = id;
            let rows = a.rows(rel);
            if rows.len() >= 1 << LOCAL_BITS {
                return Err(ModelError::Row {
                    at: rel.to_string(),
                    message: format!("more than {} rows", 1u32 << LOCAL_BITS),
                });
            }
            lb.handles[k] = (0..rows.len() as u32).collect();
            lb.pos[k] = lb.handles[k].clone();
            if let Some(f) = vip_family(k) {
                lb.vip_addr[f] = vec![0; rows.len()];
            }
            for (i, r) in rows.iter().enumerate() {
                let e = Entry::parse(KINDS[k], r)?;
                if let (Entry::Vip(key, _), Some(f)) = (&e, vip_family(k)) {
                    lb.vip_addr[f][i] = key.2;
                }
                lb.insert(KINDS[k], e, handle(k, i as u32));
                id += 1;
            }
        }
        lb.base[7] = id;
        lb.announced = announced(a);
        let addrs: Vec<u32> = lb.held.keys().chain(lb.announced.keys()).copied().collect();
        for addr in addrs {
            lb.set_holders(addr);
        }
        Ok(lb)
    }

    /// Address → instances holding it.
    pub fn holders(&self) -> &BTreeMap<u32, Vec<String>> {
        &self.holders
    }

    /// The relation and row of handle `h` in `a` (the artifacts the model
    /// was built or updated from); `None` when its row is gone.
    pub fn row<'a>(&self, a: &'a Artifacts, h: u32) -> Option<(&'static str, &'a Row)> {
        let (k, local) = split(h);
        let rel = *ROW_RELATIONS.get(k)?;
        let at = *self.pos[k].get(local)?;
        Some((rel, a.rows(rel).get(at as usize)?))
    }

    /// Whether handle `h` names a row of the model now.
    pub fn holds(&self, h: u32) -> bool {
        let (k, local) = split(h);
        self.pos
            .get(k)
            .and_then(|p| p.get(local))
            .is_some_and(|&at| at != FREE)
    }

    /// The address of the VIP entry of handle `h` (`None`: not a VIP
    /// row, or gone).
    pub fn vip_of(&self, h: u32) -> Option<u32> {
        let (k, local) = split(h);
        let f = vip_family(k)?;
        if !self.holds(h) {
            return None;
        }
        self.vip_addr[f].get(local).copied()
    }

    /// Adds the entry of the row of handle `id` (the last row of a key
    /// wins, as a fresh build reads them in order; a key seen twice is
    /// noted). Its position is set.
    fn insert(&mut self, kind: Kind, e: Entry, id: u32) {
        let (base, pos) = (&self.base, &self.pos);
        match e {
            Entry::Vip(key, (proto, port, n)) => {
                let fam = usize::from(matches!(kind, Kind::Vip { hmux: true }));
                let c = self
                    .held
                    .entry(key.2)
                    .or_default()
                    .entry(key.0.clone())
                    .or_default();
                c[fam] += 1;
                let es = self.vip.entry(key).or_default();
                // in row order: by the rows' ids now
                let me = id_of(base, pos, id);
                let at = es.partition_point(|x| id_of(base, pos, x.3) < me);
                es.insert(at, (proto, port, n, id));
            }
            Entry::Member(key, (mvni, member)) => {
                let (inst, vip) = (key.0.clone(), key.1);
                if let Some((mv, m, _)) = self.member.insert(key, (mvni, member, id)) {
                    self.duplicate = true;
                    self.unindex_member(&inst, vip, mv, m);
                }
                let n = self.vips_of_member.entry((inst, mvni, member)).or_default();
                *n.entry(vip).or_default() += 1;
            }
            Entry::Tunnel(key, (underlay, dmac)) => {
                self.duplicate |= self.tunnel.insert(key, (underlay, dmac, id)).is_some();
            }
            Entry::Blackhole(key) => {
                self.duplicate |= self.blackhole.insert(key, id).is_some();
            }
            Entry::Inert(_) => {}
        }
    }

    /// Drops the entry of the row of handle `id` (a model without
    /// duplicate keys).
    fn remove(&mut self, kind: Kind, e: &Entry, id: u32) {
        match e {
            Entry::Vip(key, _) => {
                if let Some(es) = self.vip.get_mut(key) {
                    es.retain(|x| x.3 != id);
                    if es.is_empty() {
                        self.vip.remove(key);
                    }
                }
                let fam = usize::from(matches!(kind, Kind::Vip { hmux: true }));
                if let Some(at) = self.held.get_mut(&key.2) {
                    if let Some(c) = at.get_mut(&key.0) {
                        c[fam] = c[fam].saturating_sub(1);
                        if *c == [0, 0] {
                            at.remove(&key.0);
                        }
                    }
                    if at.is_empty() {
                        self.held.remove(&key.2);
                    }
                }
            }
            Entry::Member(key, _) => {
                if let Some((mv, m, _)) = self.member.remove(key) {
                    self.unindex_member(&key.0, key.1, mv, m);
                }
            }
            Entry::Tunnel(key, _) => {
                self.tunnel.remove(key);
            }
            Entry::Blackhole(key) => {
                self.blackhole.remove(key);
            }
            Entry::Inert(_) => {}
        }
    }

    /// One member entry of `vip` at `inst` naming (mvni, member) fewer.
    fn unindex_member(&mut self, inst: &str, vip: u32, mvni: u64, member: u32) {
        let key = (inst.to_string(), mvni, member);
        let Some(n) = self.vips_of_member.get_mut(&key) else {
            return;
        };
        if let Some(c) = n.get_mut(&vip) {
            *c -= 1;
            if *c == 0 {
                n.remove(&vip);
            }
        }
        if n.is_empty() {
            self.vips_of_member.remove(&key);
        }
    }

    /// Recomputes who holds `addr` (an announcing HMux switch that holds
    /// it takes it from the software Muxes).
    fn set_holders(&mut self, addr: u32) {
        let held = self.held.get(&addr);
        let holds = |s: &String| held.is_some_and(|h| h.contains_key(s));
        let mut hs: Vec<String> = match self.announced.get(&addr) {
            Some(sw) if sw.iter().any(holds) => sw.clone(),
            _ => held
                .into_iter()
                .flatten()
                .filter(|(_, c)| c[0] > 0)
                .map(|(i, _)| i.clone())
                .collect(),
        };
        hs.sort();
        hs.dedup();
        if hs.is_empty() {
            self.holders.remove(&addr);
        } else {
            self.holders.insert(addr, hs);
        }
    }

    /// Moves the model from `moves.old` (what it was built from) to
    /// `moves.new`, where only the relations `moves` takes as dirty may
    /// differ (their row pairings are shared with the table checks); what
    /// changed.
    pub fn update(&mut self, moves: &RowMoves) -> Result<LbChange, ModelError> {
        let (old, new) = (moves.old, moves.new);
        if self.duplicate {
            return self.rebuild(old, new, Held::Old);
        }
        let mut ch = LbChange::default();
        // per relation: old index → new (`None`: not dirty, kept as it was)
        let mut pos: Vec<Option<Moves>> = Vec::with_capacity(7);
        let mut new_base = [0u32; 8];
        for (k, rel) in ROW_RELATIONS.iter().enumerate() {
            let n = new.rows(rel).len();
            // handle numbers are not given again: when they run out, the
            // model is built again (its handles are its rows' positions)
            if self.pos[k].len() + n >= 1 << LOCAL_BITS {
                return self.rebuild(old, new, Held::Old);
            }
            new_base[k + 1] = new_base[k] + n as u32;
            pos.push(moves.of(rel));
        }
        let mut tunnels: BTreeSet<(String, u64, u32)> = BTreeSet::new();
        let mut addrs: BTreeSet<u32> = BTreeSet::new();
        let mut note = |e: &Entry, ch: &mut LbChange, addrs: &mut BTreeSet<u32>| {
            match e {
                Entry::Tunnel(key, _) => {
                    tunnels.insert(key.clone());
                }
                Entry::Vip(key, _) => {
                    addrs.insert(key.2);
                }
                _ => {}
            }
            ch.instances.extend(e.at());
        };
        // the rows removed (they parsed when the model was built): entries
        // dropped, handles retired; the kept rows' handles move to their new
        // positions (only in the dirty relations: no other entry moves)
        let mut reordered = false;
        for (k, rel) in ROW_RELATIONS.iter().enumerate() {
            let Some(p) = &pos[k] else { continue };
            let rows = old.rows(rel);
            let mut now = vec![FREE; new.rows(rel).len()];
            let mut last = None;
            for (i, j) in p.iter().enumerate() {
                let h = self.handles[k][i];
                match j {
                    Some(j) => {
                        now[*j as usize] = h;
                        reordered |= last.is_some_and(|l| l > *j) && vip_family(k).is_some();
                        last = Some(*j);
                    }
                    None => {
                        let e = Entry::parse(KINDS[k], &rows[i])?;
                        note(&e, &mut ch, &mut addrs);
                        self.remove(KINDS[k], &e, handle(k, h));
                        self.pos[k][h as usize] = FREE;
                    }
                }
            }
            for (j, &h) in now.iter().enumerate() {
                if h != FREE {
                    self.pos[k][h as usize] = j as u32;
                }
            }
            self.handles[k] = now;
        }
        self.base = new_base;
        if reordered {
            // kept VIP rows paired out of order (the hashed rest): each
            // key's entries back in row order
            let (base, hpos) = (&self.base, &self.pos);
            for es in self.vip.values_mut() {
                es.sort_by_key(|e| id_of(base, hpos, e.3));
            }
        }
        // the rows added, in row order (a bad row fails as a fresh build would)
        for (k, rel) in ROW_RELATIONS.iter().enumerate() {
            if pos[k].is_none() {
                continue;
            }
            let rows = new.rows(rel);
            for (j, row) in rows.iter().enumerate() {
                if self.handles[k][j] != FREE {
                    continue;
                }
                // a number no row had: a kept path naming a removed
                // row's handle never names this one
                self.pos[k].push(FREE);
                if let Some(f) = vip_family(k) {
                    self.vip_addr[f].push(0);
                }
                let h = (self.pos[k].len() - 1) as u32;
                self.handles[k][j] = h;
                self.pos[k][h as usize] = j as u32;
                let e = Entry::parse(KINDS[k], row)?;
                note(&e, &mut ch, &mut addrs);
                if let (Entry::Vip(key, _), Some(f)) = (&e, vip_family(k)) {
                    self.vip_addr[f][h as usize] = key.2;
                }
                self.insert(KINDS[k], e, handle(k, h));
            }
        }
        if self.duplicate {
            // the kept rows' handles are at their new positions already
            return self.rebuild(old, new, Held::New);
        }
        // a member's tunnel changed: every VIP at that instance with the member
        for t in &tunnels {
            for vip in self
                .vips_of_member
                .get(t)
                .into_iter()
                .flat_map(|n| n.keys())
            {
                ch.instances.insert((t.0.clone(), Some(*vip)));
            }
        }
        if moves.dirty("p4_announce") {
            let now = announced(new);
            for a in self.announced.keys().chain(now.keys()) {
                if self.announced.get(a) != now.get(a) {
                    addrs.insert(*a);
                }
            }
            self.announced = now;
        }
        for a in addrs {
            let before = self.holders.get(&a).cloned();
            self.set_holders(a);
            if self.holders.get(&a) != before.as_ref() {
                ch.addresses.insert(a);
            }
        }
        Ok(ch)
    }

    /// [`Lb::update`] by building the model of `new` and comparing; each
    /// handle held is mapped to its row's new one (`held`: whether the
    /// handles are at their rows' positions in `old` or, moved by an
    /// update that met a duplicate key, in `new`).
    fn rebuild(
        &mut self,
        old: &Artifacts,
        new: &Artifacts,
        held: Held,
    ) -> Result<LbChange, ModelError> {
        let before = Lb::build(old)?;
        let fresh = Lb::build(new)?;
        let was = std::mem::replace(self, fresh);
        let mut ch = LbChange::default();
        for (i, a) in changed_at(old, new) {
            ch.instances.insert((i, a));
        }
        for a in before.holders.keys().chain(self.holders.keys()) {
            if before.holders.get(a) != self.holders.get(a) {
                ch.addresses.insert(*a);
            }
        }
        // old row id → new; `None`: every row where it was, or (`New`)
        // the handles already at their rows' new positions
        let moved = match held {
            Held::Old => {
                type Key<'a> = (&'static str, &'a [String]);
                let keys = |a: &'_ Artifacts| -> Vec<(&'static str, Vec<String>)> {
                    ROW_RELATIONS
                        .iter()
                        .flat_map(|rel| a.rows(rel).iter().map(move |r| (*rel, r.vals.clone())))
                        .collect()
                };
                let (o, n) = (keys(old), keys(new));
                let ok: Vec<Key> = o.iter().map(|(r, v)| (*r, v.as_slice())).collect();
                let nk: Vec<Key> = n.iter().map(|(r, v)| (*r, v.as_slice())).collect();
                crate::incremental::positions(&ok, &nk)
            }
            Held::New => None,
        };
        let map = std::array::from_fn(|k| {
            let to = |at: u32| -> u32 {
                let at = match &moved {
                    Some(m) => match m[(was.base[k] + at) as usize] {
                        Some(id) => id - self.base[k],
                        None => return FREE,
                    },
                    None => at,
                };
                handle(k, at)
            };
            was.pos[k]
                .iter()
                .map(|&at| if at == FREE { FREE } else { to(at) })
                .collect()
        });
        ch.handles = Some(HandleMap(map));
        Ok(ch)
    }
}

/// The instances whose rows differ between `old` and `new` (any address:
/// the rebuild's answer, coarse; an update without duplicate keys diffs
/// the rows instead).
fn changed_at(old: &Artifacts, new: &Artifacts) -> BTreeSet<(String, Option<u32>)> {
    type Rows<'a> = BTreeMap<&'a str, Vec<(usize, &'a [String])>>;
    fn by_instance(a: &Artifacts) -> Rows<'_> {
        let mut m: Rows<'_> = BTreeMap::new();
        for (k, rel) in ROW_RELATIONS.iter().enumerate() {
            for r in a.rows(rel) {
                let inst = r.vals.first().map_or("", String::as_str);
                m.entry(inst).or_default().push((k, r.vals.as_slice()));
            }
        }
        m
    }
    let (o, n) = (by_instance(old), by_instance(new));
    o.keys()
        .chain(n.keys())
        .filter(|i| o.get(*i) != n.get(*i))
        .map(|i| (i.to_string(), None))
        .collect()
}

/// Where the handles of a model being built again stand.
#[derive(Clone, Copy)]
enum Held {
    /// At their rows' positions in the generation before.
    Old,
    /// At their rows' positions in the next generation.
    New,
}

/// Which family of VIP rows relation `k` is (0: software Mux, 1: HMux).
fn vip_family(k: usize) -> Option<usize> {
    match k {
        0 => Some(0),
        3 => Some(1),
        _ => None,
    }
}

fn announced(a: &Artifacts) -> BTreeMap<u32, Vec<String>> {
    let mut m: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    for r in a.rows("p4_announce") {
        let Some((ip, len)) = r.vals.get(1).and_then(|p| p.split_once('/')) else {
            continue;
        };
        if let (Some(ip), "32") = (parse_ip(ip), len) {
            m.entry(ip).or_default().push(r.vals[0].clone());
        }
    }
    m
}

/// The id now of the row of handle `h`, given each relation's first id
/// and each handle's position.
fn id_of(base: &[u32; 8], pos: &[Vec<u32>; 7], h: u32) -> u32 {
    let (k, local) = split(h);
    base[k] + pos[k][local]
}

/// Old index → new index of rows with equal values, pairing each row at
/// most once and in order. A linear merge: equal rows advance together, a
/// mismatch looks a few rows ahead on each side for the other (rows added
/// or removed there), else takes both as replaced; a long run of those
/// and the rest is paired by hashing. A row the two generations share is
/// equal without its values being read (an edit shares every row it did
/// not touch: at 100k VMs comparing the values was most of the model's
/// update).
pub(crate) fn row_positions(old: &[Arc<Row>], new: &[Arc<Row>]) -> Vec<Option<u32>> {
    let eq = |a: &Arc<Row>, b: &Arc<Row>| Arc::ptr_eq(a, b) || a.vals == b.vals;
    const AHEAD: usize = 48;
    let mut out = vec![None; old.len()];
    let (mut i, mut j, mut replaced) = (0, 0, 0);
    while i < old.len() && j < new.len() {
        if eq(&old[i], &new[j]) {
            replaced = 0;
            out[i] = Some(j as u32);
            i += 1;
            j += 1;
            continue;
        }
        let upto = |n: usize, at: usize| at + 1..n.min(at + AHEAD);
        if let Some(k) = upto(old.len(), i).find(|&k| eq(&old[k], &new[j])) {
            i = k; // old[i..k] removed
            continue;
        }
        if let Some(k) = upto(new.len(), j).find(|&k| eq(&new[k], &old[i])) {
            j = k; // new[j..k] added
            continue;
        }
        // neither nearby: old[i] became new[j] (a member's slot renumbered,
        // a vector's size), unless too many in a row say the rows moved
        // farther: then what is left is paired by hashing
        replaced += 1;
        if replaced > AHEAD {
            fn key(r: &Arc<Row>) -> &[String] {
                r.vals.as_slice()
            }
            let (ok, nk): (Vec<&[String]>, Vec<&[String]>) = (
                old[i..].iter().map(key).collect(),
                new[j..].iter().map(key).collect(),
            );
            for (d, p) in crate::incremental::paired(&ok, &nk).into_iter().enumerate() {
                out[i + d] = p.map(|p| p + j as u32);
            }
            return out;
        }
        i += 1;
        j += 1;
        continue;
    }
    out
}

fn num_at(v: &[String], i: usize) -> Option<u64> {
    v.get(i)?.parse().ok()
}

fn ip_at(v: &[String], i: usize) -> Option<u32> {
    parse_ip(v.get(i)?)
}

#[cfg(test)]
mod tests;
