//! A kept VM result, packed: what the incremental verifier holds per VM
//! between updates, in a few bytes per BDD node instead of a node vector per
//! set.
//!
//! Expects a [`VmChecked`] (a VM's trace outcomes, footprint, delivered and
//! spoofed sets). Guarantees: [`Kept::unpack`] gives back a result equal to
//! the one packed — the same outcomes, paths, reads and sets (each BDD the
//! same function, so every later BDD operation and every report reads the
//! same) — and the counts and violations the report reads are kept unpacked
//! ([`Kept::violations`] …), so a report unpacks nothing.
//!
//! Why: `biodivine_lib_bdd` gives every `Bdd` its own node vector (12 bytes a
//! node, plus the vector), so a VM's sets — one per outcome, one per
//! (bridge, table, field values) its trace read, one per peer it delivered
//! to — repeat the same sub-diagrams (its own source address, the tenant's
//! prefixes) hundreds of times. Kept per VM for 10k VMs that was ~4 GB
//! (4× `netc verify`'s peak at M), which made 100k VMs not fit. Here all of
//! one VM's sets share one node table (equal nodes stored once), each node
//! written as varints relative to its own position; a set is its root.
//! An update unpacks only the VMs it visits.

use crate::bridge::{End, Hop, Outcome, Pkt, Reads, Val};
use crate::checks::{Violation, VmChecked};
use crate::network::Footprint;
use crate::space::Field;
use biodivine_lib_bdd::{Bdd, BddNode, BddPointer, BddVariable};
use std::collections::{BTreeMap, BTreeSet, HashMap};

type Quick = std::hash::BuildHasherDefault<netc_compiler::fxhash::FxHasher>;

/// A packed result that does not decode: a broken invariant of this module
/// (only [`Kept::pack`] writes the bytes), never a user's mistake.
#[derive(Debug, Clone, thiserror::Error)]
#[error("internal: a kept VM result does not decode at byte {at} ({what})")]
pub struct Corrupt {
    pub at: usize,
    pub what: &'static str,
}

/// One VM's result as the verifier keeps it between updates.
pub struct Kept {
    /// What a report reads (the violations are few; their sets stay BDDs).
    pub violations: Vec<Violation>,
    pub outcomes: usize,
    pub pairs: usize,
    pub outcome_violations: usize,
    /// The footprint, the outcomes, and the spoofed and delivered sets,
    /// each packed on its own: an update that only looks at a VM's
    /// footprint decodes nothing else, and one that changes only its sets
    /// (a pair re-check) writes only those again ([`Kept::repack`]).
    footprint: Box<[u8]>,
    traced: Box<[u8]>,
    sets: Box<[u8]>,
}

impl Kept {
    pub fn pack(c: VmChecked) -> Kept {
        let footprint = pack_footprint(&c.footprint);
        let traced = pack_traced(&c.traced);
        Kept::with(c, footprint, traced)
    }

    /// [`Kept::pack`] of a result whose footprint and outcomes are those
    /// of `old` (a VM whose pair checks alone ran again): their bytes are
    /// taken over, only the sets are written.
    pub fn repack(c: VmChecked, old: Kept) -> Kept {
        Kept::with(c, old.footprint, old.traced)
    }

    /// [`Kept::pack`] of a result whose footprint is that of `old` (a
    /// partial re-trace whose reads were all within the kept ones): its
    /// bytes are taken over, the outcomes and sets written.
    pub fn pack_on(c: VmChecked, old: Kept) -> Kept {
        let traced = pack_traced(&c.traced);
        Kept::with(c, old.footprint, traced)
    }

    fn with(c: VmChecked, footprint: Box<[u8]>, traced: Box<[u8]>) -> Kept {
        let mut w = Writer::default();
        w.bdd(&c.spoof);
        w.uv(c.delivered.len() as u128);
        for (peer, set) in &c.delivered {
            w.uv(*peer as u128);
            w.bdd(set);
        }
        Kept {
            violations: c.violations,
            outcomes: c.outcomes,
            pairs: c.pairs,
            outcome_violations: c.outcome_violations,
            footprint,
            traced,
            sets: w.finish(),
        }
    }

    /// The footprint alone.
    pub fn footprint(&self) -> Result<Footprint, Corrupt> {
        let mut r = Reader::new(&self.footprint)?;
        let fp = r.footprint()?;
        r.end()?;
        Ok(fp)
    }

    /// The result as it was packed, its footprint already decoded by
    /// [`Kept::footprint`] (the violations cloned: the kept one stays
    /// whole, so a VM an update leaves alone is put back as it was).
    pub fn unpack_with(&self, footprint: Footprint) -> Result<VmChecked, Corrupt> {
        let mut r = Reader::new(&self.traced)?;
        let n = r.len()?;
        let mut traced = Vec::with_capacity(n);
        for _ in 0..n {
            traced.push(r.outcome()?);
        }
        r.end()?;
        let (spoof, delivered) = self.sets()?;
        Ok(VmChecked {
            violations: self.violations.clone(),
            outcomes: self.outcomes,
            pairs: self.pairs,
            footprint,
            traced,
            outcome_violations: self.outcome_violations,
            spoof,
            delivered,
        })
    }

    /// The spoofed and delivered sets alone (what a pair re-check reads).
    pub fn sets(&self) -> Result<(Bdd, BTreeMap<usize, Bdd>), Corrupt> {
        let mut r = Reader::new(&self.sets)?;
        let spoof = r.bdd()?;
        let mut delivered = BTreeMap::new();
        for _ in 0..r.len()? {
            let peer = r.small("peer")? as usize;
            delivered.insert(peer, r.bdd()?);
        }
        r.end()?;
        Ok((spoof, delivered))
    }

    /// The whole result as it was packed.
    pub fn unpack(&self) -> Result<VmChecked, Corrupt> {
        self.unpack_with(self.footprint()?)
    }

    /// Bytes held (the violations' sets aside).
    pub fn bytes(&self) -> usize {
        self.footprint.len() + self.traced.len() + self.sets.len()
    }
}

fn pack_footprint(fp: &Footprint) -> Box<[u8]> {
    let mut w = Writer::default();
    w.footprint(fp);
    w.finish()
}

fn pack_traced(outs: &[Outcome]) -> Box<[u8]> {
    let mut w = Writer::default();
    w.uv(outs.len() as u128);
    for o in outs {
        w.outcome(o);
    }
    w.finish()
}

/// Node id of the terminals in a node table: 0 false, 1 true; a node
/// `k` of the table is id `k + 2`.
const TERMINALS: u32 = 2;

#[derive(Default)]
struct Writer {
    /// The body: everything but the node table, sets as root ids.
    out: Vec<u8>,
    /// The shared node table: (variable, low id, high id), children first.
    nodes: Vec<(u16, u32, u32)>,
    ids: HashMap<(u16, u32, u32), u32, Quick>,
    num_vars: u16,
    /// Per node of the set being interned: its id (`u32::MAX`: not yet).
    scratch: Vec<u32>,
}

impl Writer {
    /// LEB128.
    fn uv(&mut self, mut x: u128) {
        loop {
            let b = (x & 0x7f) as u8;
            x >>= 7;
            if x == 0 {
                self.out.push(b);
                return;
            }
            self.out.push(b | 0x80);
        }
    }

    fn str(&mut self, s: &str) {
        self.uv(s.len() as u128);
        self.out.extend_from_slice(s.as_bytes());
    }

    fn bdd(&mut self, b: &Bdd) {
        let root = self.intern(b);
        self.uv(u128::from(root));
    }

    /// `b`'s nodes into the shared table (post-order from the root, so a
    /// node's children are in before it); its root's id.
    fn intern(&mut self, b: &Bdd) -> u32 {
        // terminals too: a decoded `false` must have the variables of the
        // sets it is combined with
        self.num_vars = b.num_vars();
        if b.is_false() {
            return 0;
        }
        if b.is_true() {
            return 1;
        }
        let map = &mut self.scratch;
        map.clear();
        map.resize(b.size(), u32::MAX);
        map[0] = 0;
        map[1] = 1;
        let root = b.root_pointer();
        // a `Bdd`'s nodes come children first (every operation builds them
        // so): one pass in index order, no stack; otherwise the walk below
        let ordered = (2..b.size()).all(|i| {
            let p = BddPointer::from_index(i);
            b.low_link_of(p).to_index() < i && b.high_link_of(p).to_index() < i
        });
        if ordered {
            for i in 2..b.size() {
                let p = BddPointer::from_index(i);
                let key = (
                    b.var_of(p).to_index() as u16,
                    map[b.low_link_of(p).to_index()],
                    map[b.high_link_of(p).to_index()],
                );
                let nodes = &mut self.nodes;
                map[i] = *self.ids.entry(key).or_insert_with(|| {
                    nodes.push(key);
                    nodes.len() as u32 - 1 + TERMINALS
                });
            }
            return map[root.to_index()];
        }
        let mut stack = vec![root];
        while let Some(&p) = stack.last() {
            let i = p.to_index();
            if map[i] != u32::MAX {
                stack.pop();
                continue;
            }
            let (lo, hi) = (b.low_link_of(p), b.high_link_of(p));
            let (ml, mh) = (map[lo.to_index()], map[hi.to_index()]);
            if ml == u32::MAX {
                stack.push(lo);
                continue;
            }
            if mh == u32::MAX {
                stack.push(hi);
                continue;
            }
            stack.pop();
            let key = (b.var_of(p).to_index() as u16, ml, mh);
            let nodes = &mut self.nodes;
            let id = *self.ids.entry(key).or_insert_with(|| {
                nodes.push(key);
                nodes.len() as u32 - 1 + TERMINALS
            });
            map[i] = id;
        }
        map[root.to_index()]
    }

    fn field(&mut self, f: Field) {
        let t = match f {
            Field::DlType => 0,
            Field::NwProto => 1,
            Field::NwDst => 2,
            Field::NwSrc => 3,
            Field::TpDst => 4,
            Field::TpSrc => 5,
            Field::DlSrc => 6,
            Field::DlDst => 7,
            Field::ArpOp => 8,
            Field::ArpSpa => 9,
            Field::ArpTpa => 10,
            Field::ArpSha => 11,
            Field::ArpTha => 12,
            Field::InPort => 13,
            Field::TunId => 14,
            Field::TunDst => 15,
            Field::CtState => 16,
            Field::Reg(r) => {
                self.out.push(17);
                self.out.push(r);
                return;
            }
        };
        self.out.push(t);
    }

    fn val(&mut self, v: Val) {
        match v {
            Val::Const(x) => {
                self.out.push(0);
                self.uv(x);
            }
            Val::Alias(f) => {
                self.out.push(1);
                self.field(f);
            }
            Val::Unknown => self.out.push(2),
        }
    }

    fn footprint(&mut self, fp: &Footprint) {
        self.uv(fp.bridges.len() as u128);
        for (name, r) in &fp.bridges {
            self.str(name);
            self.uv(r.tables.len() as u128);
            for ((t, key), set) in &r.tables {
                self.out.push(*t);
                self.uv(key.len() as u128);
                for (f, v) in key {
                    self.field(*f);
                    self.val(*v);
                }
                self.bdd(set);
            }
            self.uv(r.groups.len() as u128);
            for (g, set) in &r.groups {
                self.uv(u128::from(*g));
                self.bdd(set);
            }
        }
        self.uv(fp.addresses.len() as u128);
        for (a, set) in &fp.addresses {
            self.uv(u128::from(*a));
            self.bdd(set);
        }
        self.uv(fp.instances.len() as u128);
        for ((i, a), set) in &fp.instances {
            self.str(i);
            self.uv(u128::from(*a));
            self.bdd(set);
        }
        self.uv(fp.fanout.len() as u128);
        for (t, set) in &fp.fanout {
            self.uv(*t);
            self.bdd(set);
        }
        self.uv(fp.ports.len() as u128);
        for (d, p) in &fp.ports {
            self.str(d);
            self.uv(u128::from(*p));
        }
    }

    fn outcome(&mut self, o: &Outcome) {
        self.uv(u128::from(o.device));
        self.bdd(&o.pkt.set);
        self.uv(o.pkt.over.len() as u128);
        for (f, v) in &o.pkt.over {
            self.field(*f);
            self.val(*v);
        }
        self.uv(o.path.len() as u128);
        for h in &o.path {
            match *h {
                Hop::Flow { bridge, handle } => {
                    self.out.push(0);
                    self.uv(u128::from(bridge));
                    self.uv(u128::from(handle));
                }
                Hop::Group {
                    bridge,
                    group,
                    bucket,
                } => {
                    self.out.push(1);
                    self.uv(u128::from(bridge));
                    self.uv(u128::from(group));
                    self.uv(u128::from(bucket));
                }
                Hop::Lb { handle } => {
                    self.out.push(2);
                    // the relation's bits (the top four) low: a handle's
                    // number within its relation is small
                    self.uv(u128::from(handle.rotate_left(4)));
                }
                Hop::Underlay { to } => {
                    self.out.push(3);
                    self.uv(u128::from(to));
                }
            }
        }
        match &o.end {
            End::Deliver { port } => {
                self.out.push(0);
                self.uv(u128::from(*port));
            }
            End::Tunnel { tun_id, tun_dst } => {
                self.out.push(1);
                self.uv(*tun_id);
                self.uv(u128::from(*tun_dst));
            }
            End::Uplink => self.out.push(2),
            End::Drop { why } => {
                self.out.push(3);
                self.str(why);
            }
        }
    }

    /// The node table, then the body. A child is written as 0/1 (a
    /// terminal) or 2 + how far before its parent it is: most children
    /// are near, so most nodes take 3–5 bytes.
    fn finish(mut self) -> Box<[u8]> {
        let body = std::mem::take(&mut self.out);
        self.uv(u128::from(self.num_vars));
        self.uv(self.nodes.len() as u128);
        let nodes = std::mem::take(&mut self.nodes);
        for (k, (var, lo, hi)) in nodes.iter().enumerate() {
            let id = k as u32 + TERMINALS;
            self.uv(u128::from(*var));
            for c in [*lo, *hi] {
                let code = if c < TERMINALS { c } else { id - c + 1 };
                self.uv(u128::from(code));
            }
        }
        self.out.extend_from_slice(&body);
        self.out.into_boxed_slice()
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
    num_vars: u16,
    nodes: Vec<(u16, u32, u32)>,
    /// Per table node: its index in the set being built (`u32::MAX`: not
    /// in it), reset after each set.
    scratch: Vec<u32>,
}

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8]) -> Result<Reader<'a>, Corrupt> {
        let mut r = Reader {
            bytes,
            at: 0,
            num_vars: 0,
            nodes: Vec::new(),
            scratch: Vec::new(),
        };
        r.num_vars = r.small("variable count")? as u16;
        let n = r.len()?;
        r.nodes.reserve_exact(n);
        for k in 0..n {
            let id = k as u32 + TERMINALS;
            let var = r.small("variable")?;
            if var >= u32::from(r.num_vars) {
                return Err(r.bad("variable out of range"));
            }
            let mut child = || -> Result<u32, Corrupt> {
                let code = r.small("child")?;
                match code {
                    0 | 1 => Ok(code),
                    d if d - 1 <= id - TERMINALS => Ok(id - (d - 1)),
                    _ => Err(r.bad("child after its parent")),
                }
            };
            let (lo, hi) = (child()?, child()?);
            r.nodes.push((var as u16, lo, hi));
        }
        r.scratch = vec![u32::MAX; n];
        Ok(r)
    }

    fn bad(&self, what: &'static str) -> Corrupt {
        Corrupt { at: self.at, what }
    }

    fn uv(&mut self) -> Result<u128, Corrupt> {
        let mut x: u128 = 0;
        let mut shift = 0;
        loop {
            let b = *self
                .bytes
                .get(self.at)
                .ok_or_else(|| self.bad("truncated"))?;
            self.at += 1;
            if shift >= 128 {
                return Err(self.bad("varint too long"));
            }
            x |= u128::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(x);
            }
            shift += 7;
        }
    }

    fn small(&mut self, what: &'static str) -> Result<u32, Corrupt> {
        u32::try_from(self.uv()?).map_err(|_| self.bad(what))
    }

    /// A count of items that follow: each takes a byte at least, so a
    /// count past the bytes left is corrupt (and allocates nothing).
    fn len(&mut self) -> Result<usize, Corrupt> {
        let n = self.small("length")? as usize;
        match n <= self.bytes.len() - self.at {
            true => Ok(n),
            false => Err(self.bad("length past the end")),
        }
    }

    fn byte(&mut self) -> Result<u8, Corrupt> {
        let b = *self
            .bytes
            .get(self.at)
            .ok_or_else(|| self.bad("truncated"))?;
        self.at += 1;
        Ok(b)
    }

    fn str(&mut self) -> Result<String, Corrupt> {
        let n = self.len()?;
        let s = self
            .bytes
            .get(self.at..self.at + n)
            .ok_or_else(|| self.bad("truncated"))?;
        self.at += n;
        String::from_utf8(s.to_vec()).map_err(|_| self.bad("not UTF-8"))
    }

    fn end(&self) -> Result<(), Corrupt> {
        match self.at == self.bytes.len() {
            true => Ok(()),
            false => Err(self.bad("bytes after the end")),
        }
    }

    /// The set whose root is the next id: its nodes taken out of the table
    /// (post-order, so children come first and the root last, as a `Bdd`
    /// keeps them).
    fn bdd(&mut self) -> Result<Bdd, Corrupt> {
        let root = self.small("root")?;
        let nv = self.num_vars;
        let mut out = vec![BddNode::mk_zero(nv)];
        if root == 0 {
            return Bdd::from_nodes(&out).map_err(|_| self.bad("false"));
        }
        out.push(BddNode::mk_one(nv));
        if root == 1 {
            return Bdd::from_nodes(&out).map_err(|_| self.bad("true"));
        }
        if (root - TERMINALS) as usize >= self.nodes.len() {
            return Err(self.bad("root out of range"));
        }
        let index = |s: &[u32], id: u32| match id {
            0 | 1 => id,
            _ => s[(id - TERMINALS) as usize],
        };
        let mut touched = Vec::new();
        let mut stack = vec![root];
        while let Some(&id) = stack.last() {
            let k = (id - TERMINALS) as usize;
            if self.scratch[k] != u32::MAX {
                stack.pop();
                continue;
            }
            let (var, lo, hi) = self.nodes[k];
            let (il, ih) = (index(&self.scratch, lo), index(&self.scratch, hi));
            if il == u32::MAX {
                stack.push(lo);
                continue;
            }
            if ih == u32::MAX {
                stack.push(hi);
                continue;
            }
            stack.pop();
            self.scratch[k] = out.len() as u32;
            touched.push(k);
            out.push(BddNode::mk_node(
                BddVariable::from_index(var as usize),
                BddPointer::from_index(il as usize),
                BddPointer::from_index(ih as usize),
            ));
        }
        for k in touched {
            self.scratch[k] = u32::MAX;
        }
        Bdd::from_nodes(&out).map_err(|_| self.bad("not a BDD"))
    }

    fn field(&mut self) -> Result<Field, Corrupt> {
        Ok(match self.byte()? {
            0 => Field::DlType,
            1 => Field::NwProto,
            2 => Field::NwDst,
            3 => Field::NwSrc,
            4 => Field::TpDst,
            5 => Field::TpSrc,
            6 => Field::DlSrc,
            7 => Field::DlDst,
            8 => Field::ArpOp,
            9 => Field::ArpSpa,
            10 => Field::ArpTpa,
            11 => Field::ArpSha,
            12 => Field::ArpTha,
            13 => Field::InPort,
            14 => Field::TunId,
            15 => Field::TunDst,
            16 => Field::CtState,
            17 => Field::Reg(self.byte()?),
            _ => return Err(self.bad("field")),
        })
    }

    fn val(&mut self) -> Result<Val, Corrupt> {
        Ok(match self.byte()? {
            0 => Val::Const(self.uv()?),
            1 => Val::Alias(self.field()?),
            2 => Val::Unknown,
            _ => return Err(self.bad("value")),
        })
    }

    fn footprint(&mut self) -> Result<Footprint, Corrupt> {
        let mut fp = Footprint::default();
        for _ in 0..self.len()? {
            let name = self.str()?;
            let mut r = Reads::default();
            for _ in 0..self.len()? {
                let t = self.byte()?;
                let n = self.len()?;
                let mut key = Vec::with_capacity(n);
                for _ in 0..n {
                    key.push((self.field()?, self.val()?));
                }
                r.tables.insert((t, key), self.bdd()?);
            }
            for _ in 0..self.len()? {
                let g = self.small("group")?;
                r.groups.insert(g, self.bdd()?);
            }
            fp.bridges.insert(name, r);
        }
        for _ in 0..self.len()? {
            let a = self.small("address")?;
            fp.addresses.insert(a, self.bdd()?);
        }
        for _ in 0..self.len()? {
            let i = self.str()?;
            let a = self.small("address")?;
            fp.instances.insert((i, a), self.bdd()?);
        }
        for _ in 0..self.len()? {
            let t = self.uv()?;
            fp.fanout.insert(t, self.bdd()?);
        }
        let mut ports = BTreeSet::new();
        for _ in 0..self.len()? {
            let d = self.str()?;
            ports.insert((d, self.small("port")?));
        }
        fp.ports = ports;
        Ok(fp)
    }

    fn outcome(&mut self) -> Result<Outcome, Corrupt> {
        let device = self.small("device")?;
        let set = self.bdd()?;
        let mut over = BTreeMap::new();
        for _ in 0..self.len()? {
            let f = self.field()?;
            over.insert(f, self.val()?);
        }
        let n = self.len()?;
        let mut path = Vec::with_capacity(n);
        for _ in 0..n {
            path.push(match self.byte()? {
                0 => Hop::Flow {
                    bridge: self.small("bridge")?,
                    handle: self.small("flow")?,
                },
                1 => Hop::Group {
                    bridge: self.small("bridge")?,
                    group: self.small("group")?,
                    bucket: self.small("bucket")?,
                },
                2 => Hop::Lb {
                    handle: self.small("handle")?.rotate_right(4),
                },
                3 => Hop::Underlay {
                    to: self.small("address")?,
                },
                _ => return Err(self.bad("hop")),
            });
        }
        let end = match self.byte()? {
            0 => End::Deliver {
                port: self.small("port")?,
            },
            1 => End::Tunnel {
                tun_id: self.uv()?,
                tun_dst: self.small("address")?,
            },
            2 => End::Uplink,
            3 => End::Drop { why: self.str()? },
            _ => return Err(self.bad("end")),
        };
        Ok(Outcome {
            device,
            pkt: Pkt { set, over },
            path,
            end,
        })
    }
}

#[cfg(test)]
mod tests;
