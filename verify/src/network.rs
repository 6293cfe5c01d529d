//! The network model: bridges, load-balancer instances and the underlay.
//!
//! Expects an [`Artifacts`] set and the [`Policy`]'s underlay map.
//! Guarantees: [`Network::trace`] follows a set of packets from a VM's port
//! through its host's bridge, the underlay (a tunnel packet goes to the
//! device that owns `tun_dst`: a host/Hoverboard bridge at in_port 1 with
//! its `tun_id`, the HMux switch announcing the address (`p4_announce` /32)
//! or else every SMux holding it, or — for 224.0.0.0/4 — every other
//! bridge), through Muxes (`agent_mux_*` / `p4_vip`, `p4_ecmp_member`,
//! `p4_tunnel`: every slot of the vector is a possible choice; which one is
//! AFF-1's business, checked on the tables), to final outcomes: delivered to
//! a port, sent to the uplink (the Internet), or dropped. The underlay is
//! trusted: VXLAN reaches a bridge only from netc's devices.

use crate::artifacts::{Artifacts, Row};
use crate::bridge::{
    union_absorbed_into, union_into, Bridge, End, FlowError, Hop, Outcome, Pkt, Reads, Val,
};
use crate::lb::Lb;
use crate::ofctl::{Action, Constraint};
use crate::policy::{Policy, Vm};
use crate::space::{Field, Space};
use biodivine_lib_bdd::Bdd;
use std::collections::{BTreeMap, BTreeSet};

const MAX_UNDERLAY_HOPS: usize = 8;

/// What a trace read of the network, each part with the set of original
/// packets that read it: the parts whose change can change its outcomes
/// (`incremental.rs` re-traces a VM on the packets that met a change).
#[derive(Clone, Debug, Default)]
pub struct Footprint {
    /// Bridges run (by name), with what was read of each.
    pub bridges: BTreeMap<String, Reads>,
    /// Underlay addresses a tunnel packet was sent to.
    pub addresses: BTreeMap<u32, Bdd>,
    /// Load-balancer instances whose entries were read, with the address
    /// (VIP or black-holed address) the packet was sent to: an instance
    /// reads only that address's entries and its members' tunnels.
    pub instances: BTreeMap<(String, u32), Bdd>,
    /// `tun_id`s of multicast tunnel packets fanned out to every bridge.
    pub fanout: BTreeMap<u128, Bdd>,
    /// (device, port) a packet was delivered to.
    pub ports: BTreeSet<(String, u32)>,
    /// Set by [`Footprint::unrecorded`]: nothing is noted (a full
    /// verification that keeps no footprint need not pay for one — noting
    /// the reads was a quarter of its time).
    off: bool,
}

impl Footprint {
    /// A footprint that notes nothing: for traces whose reads nobody keeps.
    pub fn unrecorded() -> Footprint {
        Footprint {
            off: true,
            ..Footprint::default()
        }
    }

    /// Starts noting what `b` reads (unless this footprint notes nothing).
    fn start(&self, b: &Bridge) {
        if !self.off {
            b.record();
        }
    }

    fn note(&mut self, b: &Bridge) {
        if self.off {
            return;
        }
        self.bridges
            .entry(b.name.clone())
            .or_default()
            .merge(b.recorded());
    }

    /// `m[k] ∪= set`, unless this footprint notes nothing.
    fn reach<K: Ord>(off: bool, m: &mut BTreeMap<K, Bdd>, k: K, set: &Bdd) {
        if !off {
            union_into(m, k, set);
        }
    }

    /// Adds what another trace (of other packets of the same VM) read;
    /// whether this footprint grew (a kept result whose footprint did not
    /// keeps its packed bytes: `kept.rs`).
    pub fn merge(&mut self, other: Footprint) -> bool {
        // (a re-trace's reads are mostly within the kept ones: absorbed)
        let mut grew = false;
        for (name, r) in other.bridges {
            grew |= match self.bridges.get_mut(&name) {
                Some(mine) => mine.absorb(r),
                None => {
                    self.bridges.insert(name, r);
                    true
                }
            };
        }
        for (a, b) in other.addresses {
            grew |= union_absorbed_into(&mut self.addresses, a, b);
        }
        for (i, b) in other.instances {
            grew |= union_absorbed_into(&mut self.instances, i, b);
        }
        for (t, b) in other.fanout {
            grew |= union_absorbed_into(&mut self.fanout, t, b);
        }
        for p in other.ports {
            grew |= self.ports.insert(p);
        }
        grew
    }
}

/// Which `tun_id`s a bridge's table 0 lets in from the tunnel port:
/// `None` = any (some live flow does not pin `tun_id`).
pub type TunnelAccept = Option<BTreeSet<u128>>;

pub struct Network {
    pub space: Space,
    pub bridges: Vec<Bridge>,
    /// Per bridge: the multicast fan-out skips bridges that drop the tun_id
    /// at table 0 anyway (sound: only drops are skipped).
    accepts: Vec<TunnelAccept>,
    by_name: BTreeMap<String, u32>,
    underlay: BTreeMap<u32, u32>,
    /// The load-balancer entries (a path's `Hop::Lb` names a row handle of them).
    pub lb: Lb,
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum ModelError {
    #[error(transparent)]
    Flow(#[from] FlowError),
    #[error("{at}: {message}")]
    Row { at: String, message: String },
}

impl Network {
    pub fn build(a: &Artifacts, policy: &Policy) -> Result<Network, ModelError> {
        let space = Space::new();
        let mut bridges = Vec::new();
        let mut by_name = BTreeMap::new();
        let names: std::collections::BTreeSet<&String> =
            a.flows.keys().chain(a.groups.keys()).collect();
        for (i, name) in names.into_iter().enumerate() {
            let flows = a.flows.get(name).map(Vec::as_slice).unwrap_or(&[]);
            let groups = a.groups.get(name).map(Vec::as_slice).unwrap_or(&[]);
            bridges.push(Bridge::new(name, i as u32, flows, groups)?);
            by_name.insert(name.clone(), i as u32);
        }
        let underlay = policy
            .underlay
            .iter()
            .filter_map(|(ip, d)| Some((*ip, *by_name.get(d)?)))
            .collect();
        let accepts = bridges.iter().map(tunnel_accept).collect();
        Ok(Network {
            space,
            bridges,
            accepts,
            by_name,
            underlay,
            lb: Lb::build(a)?,
        })
    }

    /// Replaces bridge `name` (which exists) by one built from `flows` and
    /// `groups`; the rest of the network is kept, and so are the old
    /// bridge's table lookups that `keep` says no changed flow can meet
    /// (`renumber`: old flow index → new, `None` = unchanged).
    pub(crate) fn replace_bridge(
        &mut self,
        name: &str,
        flows: &[crate::artifacts::FlowText],
        groups: &[crate::artifacts::GroupText],
        renumber: Option<&crate::incremental::Moves>,
        keep: impl Fn(u8, &[(Field, Val)]) -> bool + 'static,
    ) -> Result<(), ModelError> {
        let Some(&i) = self.by_name.get(name) else {
            return Err(ModelError::Row {
                at: name.to_string(),
                message: "internal: replace_bridge on a bridge the network does not have".into(),
            });
        };
        // the kept flows move over; only the new ones are parsed
        let b = Bridge::patched(&mut self.bridges[i as usize], flows, groups, renumber)?;
        self.accepts[i as usize] = tunnel_accept(&b);
        let old = std::mem::replace(&mut self.bridges[i as usize], b);
        self.bridges[i as usize].carry_cache(old, renumber, keep);
        Ok(())
    }

    /// The index of bridge `name` (its `device` in outcomes and paths).
    pub fn index_of(&self, name: &str) -> Option<u32> {
        self.by_name.get(name).copied()
    }

    pub fn accepts(&self, name: &str) -> Option<&TunnelAccept> {
        self.by_name.get(name).map(|&i| &self.accepts[i as usize])
    }

    /// Re-reads the underlay map (underlay address → device).
    pub fn set_underlay(&mut self, policy: &Policy) {
        self.underlay = policy
            .underlay
            .iter()
            .filter_map(|(ip, d)| Some((*ip, *self.by_name.get(d)?)))
            .collect();
    }

    /// Whether a path reaches VM `vm` of tenant `to` from tenant `from`
    /// through a declared exposure: a load-balancer entry of a VIP that is
    /// public or `from`'s own, of which the VM is a declared backend.
    pub fn exposed(&self, path: &[Hop], policy: &Policy, from: &str, to: &str, vm: &str) -> bool {
        path.iter().any(|h| {
            let Hop::Lb { handle } = h else { return false };
            // only a VIP's own entry exposes its backends
            let Some(vip) = self.lb.vip_of(*handle) else {
                return false;
            };
            let declared = policy
                .backends
                .contains(&(vip, to.to_string(), vm.to_string()));
            let open = match policy.vips.get(&vip) {
                Some((t, public)) => *public || t == from,
                None => !policy.from_intent,
            };
            declared && open
        })
    }

    pub fn bridge(&self, name: &str) -> Option<&Bridge> {
        self.by_name.get(name).map(|&i| &self.bridges[i as usize])
    }

    /// Every final outcome of the packets `set` sent by `vm`.
    pub fn trace(&self, vm: &Vm, set: Bdd, keep_drops: bool) -> Vec<Outcome> {
        self.trace_reading(vm, set, keep_drops, &mut Footprint::unrecorded())
    }

    /// [`Network::trace`], noting in `fp` every part of the network read.
    pub fn trace_reading(
        &self,
        vm: &Vm,
        set: Bdd,
        keep_drops: bool,
        fp: &mut Footprint,
    ) -> Vec<Outcome> {
        let Some(b) = self.bridge(&vm.host) else {
            return Vec::new();
        };
        let mut over = BTreeMap::new();
        over.insert(Field::InPort, Val::Const(u128::from(vm.port)));
        let pkt = Pkt { set, over };
        let mut first = Vec::new();
        fp.start(b);
        b.run(&self.space, &pkt, 0, &[], keep_drops, &mut first);
        fp.note(b);
        let mut out = Vec::new();
        for o in first {
            self.fabric(o, keep_drops, &mut out, 0, fp);
        }
        out
    }

    fn fabric(
        &self,
        o: Outcome,
        keep_drops: bool,
        out: &mut Vec<Outcome>,
        depth: usize,
        fp: &mut Footprint,
    ) {
        let End::Tunnel { tun_id, tun_dst } = o.end else {
            if let (End::Deliver { port }, false) = (&o.end, fp.off) {
                let port = *port;
                fp.ports
                    .insert((self.bridges[o.device as usize].name.clone(), port));
            }
            if keep_drops || !matches!(o.end, End::Drop { .. }) {
                out.push(o);
            }
            return;
        };
        Footprint::reach(fp.off, &mut fp.addresses, tun_dst, &o.pkt.set);
        let drop = |why: String| Outcome {
            end: End::Drop { why },
            ..o.clone()
        };
        if depth >= MAX_UNDERLAY_HOPS {
            out.push(drop(
                "more than 8 underlay hops (a forwarding loop?)".into(),
            ));
            return;
        }
        let mut path = o.path.clone();
        path.push(Hop::Underlay { to: tun_dst });
        let arrive = |pkt: &Pkt| {
            let mut over: BTreeMap<Field, Val> = pkt
                .over
                .iter()
                .filter(|(f, _)| f.is_header())
                .map(|(f, v)| (*f, *v))
                .collect();
            over.insert(Field::InPort, Val::Const(1));
            over.insert(Field::TunId, Val::Const(tun_id));
            Pkt {
                set: pkt.set.clone(),
                over,
            }
        };
        let mut next = Vec::new();
        if let Some(&b) = self.underlay.get(&tun_dst) {
            let b = &self.bridges[b as usize];
            fp.start(b);
            b.run(
                &self.space,
                &arrive(&o.pkt),
                0,
                &path,
                keep_drops,
                &mut next,
            );
            fp.note(b);
        } else if let Some(insts) = self.lb.holders().get(&tun_dst) {
            for inst in insts {
                let at = (inst.clone(), tun_dst);
                Footprint::reach(fp.off, &mut fp.instances, at, &o.pkt.set);
                self.lb(
                    inst,
                    tun_id as u64,
                    tun_dst,
                    &o,
                    &path,
                    keep_drops,
                    &mut next,
                );
            }
        } else if tun_dst >> 28 == 0xe {
            Footprint::reach(fp.off, &mut fp.fanout, tun_id, &o.pkt.set);
            let takes = |b: &Bridge| {
                keep_drops
                    || self.accepts[b.index as usize]
                        .as_ref()
                        .is_none_or(|ids| ids.contains(&tun_id))
            };
            for b in self
                .bridges
                .iter()
                .filter(|b| b.index != o.device && takes(b))
            {
                fp.start(b);
                b.run(
                    &self.space,
                    &arrive(&o.pkt),
                    0,
                    &path,
                    keep_drops,
                    &mut next,
                );
                fp.note(b);
            }
        } else {
            if keep_drops {
                out.push(Outcome {
                    path,
                    ..drop(format!(
                        "no device owns underlay address {}",
                        std::net::Ipv4Addr::from(tun_dst)
                    ))
                });
            }
            return;
        }
        for n in next {
            self.fabric(n, keep_drops, out, depth + 1, fp);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn lb(
        &self,
        inst: &str,
        vni: u64,
        addr: u32,
        o: &Outcome,
        path: &[Hop],
        keep_drops: bool,
        out: &mut Vec<Outcome>,
    ) {
        let ended = |pkt: Pkt, path: Vec<Hop>, end: End| Outcome {
            device: o.device,
            pkt,
            path,
            end,
        };
        if let Some(&row) = self.lb.blackhole.get(&(inst.to_string(), addr)) {
            if keep_drops {
                let mut p = path.to_vec();
                p.push(Hop::Lb { handle: row });
                out.push(ended(
                    o.pkt.clone(),
                    p,
                    End::Drop {
                        why: "DoS black hole".into(),
                    },
                ));
            }
            return;
        }
        let entries = self.lb.vip.get(&(inst.to_string(), vni, addr));
        for &(proto, port, n, row) in entries.into_iter().flatten() {
            let mut set = o.pkt.set.clone();
            for (field, value) in [
                (Field::NwProto, u128::from(proto)),
                (Field::TpDst, u128::from(port)),
            ] {
                let c = Constraint {
                    field,
                    value,
                    mask: field.mask(),
                };
                match o.pkt.constrain(&self.space, &c) {
                    Some((b, _)) => set = set.and(&b),
                    None => set = self.space.none(),
                }
            }
            if set.is_false() {
                continue;
            }
            for idx in 0..n {
                let mut p = path.to_vec();
                p.push(Hop::Lb { handle: row });
                let pkt = Pkt {
                    set: set.clone(),
                    over: o.pkt.over.clone(),
                };
                let Some(&(mvni, member, mrow)) =
                    self.lb
                        .member
                        .get(&(inst.to_string(), addr, proto, port, idx))
                else {
                    if keep_drops {
                        out.push(ended(
                            pkt,
                            p,
                            End::Drop {
                                why: format!("slot {idx} of the vector has no member"),
                            },
                        ));
                    }
                    continue;
                };
                p.push(Hop::Lb { handle: mrow });
                if mvni == 0 {
                    out.push(ended(
                        pkt,
                        p,
                        End::Tunnel {
                            tun_id: 0,
                            tun_dst: member,
                        },
                    ));
                    continue;
                }
                match self.lb.tunnel.get(&(inst.to_string(), mvni, member)) {
                    None => {
                        if keep_drops {
                            out.push(ended(
                                pkt,
                                p,
                                End::Drop {
                                    why: "member without a tunnel entry".into(),
                                },
                            ));
                        }
                    }
                    Some(&(underlay, dmac, trow)) => {
                        p.push(Hop::Lb { handle: trow });
                        let mut pkt = pkt;
                        pkt.over.insert(Field::DlDst, Val::Const(u128::from(dmac)));
                        out.push(ended(
                            pkt,
                            p,
                            End::Tunnel {
                                tun_id: u128::from(mvni),
                                tun_dst: underlay,
                            },
                        ));
                    }
                }
            }
        }
    }
}

/// The `tun_id`s `b` lets in at table 0 from the tunnel port (in_port 1).
/// A flow that cannot match in_port 1, or only drops, lets nothing in; a
/// live flow that does not pin `tun_id` exactly lets in any.
pub fn tunnel_accept(b: &Bridge) -> TunnelAccept {
    let mut ids = BTreeSet::new();
    // table 0's flows only (a set, so their order does not matter): not a
    // pass over every flow of a rebuilt Hoverboard
    for f in b.table_flows(0) {
        let pinned = |field: Field| f.matches.iter().find(|c| c.field == field);
        if pinned(Field::InPort).is_some_and(|c| (c.value & c.mask) != (1 & c.mask)) {
            continue;
        }
        if f.actions.iter().all(|a| matches!(a, Action::Drop)) {
            continue;
        }
        match pinned(Field::TunId) {
            Some(c) if c.mask == Field::TunId.mask() => {
                ids.insert(c.value);
            }
            _ => return None,
        }
    }
    Some(ids)
}

pub(crate) fn row_err(r: &Row, message: &str) -> ModelError {
    ModelError::Row {
        at: r.at.clone(),
        message: message.to_string(),
    }
}
