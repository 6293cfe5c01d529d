//! `p4/netc.p4`'s ingress (and its egress prune), run on one concrete
//! packet over a switch's installed entries.
//!
//! Expects: a [`Switch`] (the state its WriteRequest installs) and the
//! P4Info. Guarantees: the packet takes the branches of netc.p4's `apply`
//! block in the same order — port_role, tenant classification and
//! port_tenant (a host port's VXLAN VNI must be listed, miss → drop), hash5
//! of the innermost 5-tuple (`netc_compiler::functors::hash5_v4`, the one
//! definition), acl (ternary/range, highest priority wins, default nop),
//! mcast (VXLAN to 224.0.0.0/4: replicate to the group's ports except the
//! ingress port), vip_local (host ports) then vip → `idx = h5 % n` → ecmp
//! member → `to_member` → tunnel → `encap` (VNI, underlay, inner MAC; a miss
//! drops), else route (LPM) → route_member, then underlay (LPM) → port.
//! Every entry used is cited as `file:line`, so a fate says why.

use super::request::{Action, EntryAction, FieldMatch, P4Info, TableEntry};
use super::switch::Switch;
use netc_compiler::functors::hash5_v4;

/// A packet as it arrives at a switch port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PacketIn {
    pub ingress_port: u32,
    /// The VXLAN VNI when the packet arrives encapsulated.
    pub vxlan_vni: Option<u32>,
    /// The outer IPv4 destination (the inner one for plain IP).
    pub outer_dst: u32,
    /// The innermost 5-tuple.
    pub proto: u8,
    pub src: u32,
    pub dst: u32,
    pub sport: u16,
    pub dport: u16,
}

/// Where the packet goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fate {
    Drop {
        why: String,
    },
    Multicast {
        group: u32,
        ports: Vec<u32>,
    },
    Unicast {
        port: u32,
        /// (VNI, outer destination, inner destination MAC) when encapsulated here.
        encap: Option<(u32, u32, u64)>,
    },
}

/// A fate and the entries that decided it (`file:line`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trace {
    pub fate: Fate,
    pub h5: u32,
    pub cites: Vec<String>,
}

struct Run<'a> {
    sw: &'a Switch,
    info: &'a P4Info,
    cites: Vec<String>,
}

/// Whether a match on one key field holds for `v` (LPM on 32-bit fields).
pub(crate) fn field_matches(m: &FieldMatch, v: u128) -> bool {
    match m {
        FieldMatch::Exact(x) => *x == v,
        FieldMatch::Lpm(x, len) => {
            let mask = if *len == 0 {
                0
            } else {
                (u128::from(u32::MAX) << (32 - len)) & u128::from(u32::MAX)
            };
            (v & mask) == (x & mask)
        }
        FieldMatch::Ternary(x, k) => (v & k) == (x & k),
        FieldMatch::Range(a, b) => *a <= v && v <= *b,
    }
}

impl<'a> Run<'a> {
    /// Applies table `name` to the key `(field id, value)`: the hit entry's
    /// action (highest priority, then longest prefix), else the default
    /// entry's, else None (the program's default: nop/drop as the caller says).
    fn apply(&mut self, name: &str, key: &[(u32, u128)]) -> Option<(Action, bool)> {
        let (&tid, _) = self.info.tables.iter().find(|(_, t)| t.name == name)?;
        let mut best: Option<(&TableEntry, u32, (i32, u32))> = None;
        let mut default = None;
        for (e, line) in self.sw.entries.values().filter(|(e, _)| e.table_id == tid) {
            if e.is_default {
                default = Some((e, *line));
                continue;
            }
            let hit = e.matches.iter().all(|(f, m)| {
                key.iter()
                    .find(|(k, _)| k == f)
                    .is_some_and(|(_, v)| field_matches(m, *v))
            });
            if !hit {
                continue;
            }
            let rank = (
                e.priority,
                e.matches
                    .iter()
                    .map(|(_, m)| if let FieldMatch::Lpm(_, l) = m { *l } else { 0 })
                    .sum(),
            );
            if best.is_none_or(|(_, _, r)| rank > r) {
                best = Some((e, *line, rank));
            }
        }
        let (e, line, hit) = match (best, default) {
            (Some((e, l, _)), _) => (e, l, true),
            (None, Some((e, l))) => (e, l, false),
            (None, None) => return None,
        };
        self.cites
            .push(format!("{}:{line}  {}.{name}", self.sw.file, self.sw.name));
        let action = match &e.action {
            Some(EntryAction::Action(a)) => a.clone(),
            Some(EntryAction::Member(m)) => {
                let (a, l) = self.sw.member(e.table_id, *m)?;
                self.cites
                    .push(format!("{}:{l}  {} member {m}", self.sw.file, self.sw.name));
                a.clone()
            }
            None => return None,
        };
        Some((action, hit))
    }
    fn action_name(&self, a: &Action) -> &str {
        self.info.actions.get(&a.id).map_or("", |x| x.name.as_str())
    }
}

fn arg(a: &Action, id: u32) -> u128 {
    a.params
        .iter()
        .find(|(p, _)| *p == id)
        .map_or(0, |(_, v)| *v)
}

impl Switch {
    /// netc.p4's ingress on `p`.
    pub fn ingress(&self, info: &P4Info, p: &PacketIn) -> Trace {
        let mut r = Run {
            sw: self,
            info,
            cites: Vec::new(),
        };
        let h5 = hash5_v4(p.proto, p.src, p.dst, p.sport, p.dport);
        let fate = run(&mut r, p, h5);
        Trace {
            fate,
            h5,
            cites: r.cites,
        }
    }
}

fn run(r: &mut Run, p: &PacketIn, h5: u32) -> Fate {
    let drop = |why: &str| Fate::Drop {
        why: why.to_string(),
    };
    let port = u128::from(p.ingress_port);
    let host_port = matches!(r.apply("port_role", &[(1, port)]), Some((a, true)) if r.action_name(&a) == "set_host_port");
    let vni = p.vxlan_vni.unwrap_or(0);
    if host_port && vni != 0 {
        match r.apply("port_tenant", &[(1, port), (2, u128::from(vni))]) {
            Some((a, true)) if r.action_name(&a) == "nop" => {}
            _ => return drop("port_tenant: the host port may not send this VNI"),
        }
    }
    let l4 = [
        (1, u128::from(p.src)),
        (2, u128::from(p.dst)),
        (3, u128::from(p.proto)),
        (4, u128::from(p.dport)),
    ];
    if let Some((a, _)) = r.apply("acl", &l4) {
        if r.action_name(&a) == "drop" {
            return drop("acl: denied");
        }
    }
    if p.vxlan_vni.is_some() && p.outer_dst >> 28 == 0xe {
        if let Some((a, true)) = r.apply("mcast", &[(1, u128::from(vni)), (2, u128::from(p.dst))]) {
            let group = arg(&a, 1) as u32;
            let Some((replicas, line)) = r.sw.groups.get(&group) else {
                return drop("mcast: the multicast group is not installed");
            };
            r.cites.push(format!(
                "{}:{line}  {} multicast group {group}",
                r.sw.file, r.sw.name
            ));
            // egress: never back out of the ingress port
            let ports = replicas
                .iter()
                .map(|(port, _)| *port)
                .filter(|x| *x != p.ingress_port)
                .collect();
            return Fate::Multicast { group, ports };
        }
    }
    let lb_key = [
        (1, u128::from(vni)),
        (2, u128::from(p.outer_dst)),
        (3, u128::from(p.proto)),
        (4, u128::from(p.dport)),
    ];
    let mut balanced = None;
    if host_port {
        if let Some((a, true)) = r.apply("vip_local", &lb_key) {
            balanced = Some(("ecmp_local", a));
        }
    }
    if balanced.is_none() {
        if let Some((a, true)) = r.apply("vip", &lb_key) {
            balanced = Some(("ecmp", a));
        }
    }
    let mut nexthop = p.outer_dst;
    let mut encap = None;
    if let Some((ecmp, lb)) = balanced {
        let n = arg(&lb, 1);
        if n == 0 {
            return drop("lb: n = 0");
        }
        let idx = u128::from(h5) % n;
        let key = [
            (1, u128::from(p.outer_dst)),
            (2, u128::from(p.proto)),
            (3, u128::from(p.dport)),
            (4, idx),
        ];
        let (mvni, member) = match r.apply(ecmp, &key) {
            Some((a, true)) => (arg(&a, 1), arg(&a, 2)),
            _ => (0, 0),
        };
        match r.apply("tunnel", &[(1, mvni), (2, member)]) {
            Some((a, true)) if r.action_name(&a) == "encap" => {
                let underlay = arg(&a, 1) as u32;
                encap = Some((mvni as u32, underlay, arg(&a, 2) as u64));
                nexthop = underlay;
            }
            _ => return drop("tunnel: no tunnel entry for the chosen member"),
        }
    } else if let Some((a, true)) = r.apply("route", &[(1, u128::from(p.outer_dst))]) {
        let n = arg(&a, 3);
        if n == 0 {
            return drop("route: n = 0");
        }
        let key = [(1, arg(&a, 1)), (2, arg(&a, 2)), (3, u128::from(h5) % n)];
        match r.apply("route_member", &key) {
            Some((m, true)) if r.action_name(&m) == "set_nexthop" => nexthop = arg(&m, 1) as u32,
            _ => return drop("route_member: no next hop for this slot"),
        }
    }
    match r.apply("underlay", &[(1, u128::from(nexthop))]) {
        Some((a, _)) if r.action_name(&a) == "forward" => Fate::Unicast {
            port: arg(&a, 1) as u32,
            encap,
        },
        _ => drop("underlay: no route to the next hop"),
    }
}

#[cfg(test)]
mod tests {
    use super::super::{request, switch::Switch, textpb};
    use super::*;

    // A small request in the text netc writes: a VIP 10.0.0.100:80/tcp with
    // n = 3 over two members, their tunnels, an ACL deny, an underlay.
    const REQ: &str = r#"
updates { type: INSERT entity { action_profile_member { action_profile_id: 285212673 member_id: 1
  action { action_id: 16777224 params { param_id: 1 value: "\001" } params { param_id: 2 value: "\n\001\000\001" } } } } }
updates { type: INSERT entity { action_profile_member { action_profile_id: 285212673 member_id: 2
  action { action_id: 16777224 params { param_id: 1 value: "\001" } params { param_id: 2 value: "\n\001\000\002" } } } } }
updates { type: INSERT entity { table_entry { table_id: 33554439
  match { field_id: 1 exact { value: "\000" } } match { field_id: 2 exact { value: "\n\000\000d" } }
  match { field_id: 3 exact { value: "\006" } } match { field_id: 4 exact { value: "P" } }
  action { action { action_id: 16777222 params { param_id: 1 value: "\003" } } } } } }
updates { type: INSERT entity { table_entry { table_id: 33554440
  match { field_id: 1 exact { value: "\n\000\000d" } } match { field_id: 2 exact { value: "\006" } }
  match { field_id: 3 exact { value: "P" } } match { field_id: 4 exact { value: "\000" } }
  action { action_profile_member_id: 1 } } } }
updates { type: INSERT entity { table_entry { table_id: 33554440
  match { field_id: 1 exact { value: "\n\000\000d" } } match { field_id: 2 exact { value: "\006" } }
  match { field_id: 3 exact { value: "P" } } match { field_id: 4 exact { value: "\001" } }
  action { action_profile_member_id: 2 } } } }
updates { type: INSERT entity { table_entry { table_id: 33554442
  match { field_id: 1 exact { value: "\001" } } match { field_id: 2 exact { value: "\n\001\000\001" } }
  action { action { action_id: 16777225 params { param_id: 1 value: "\300\250\000\001" } params { param_id: 2 value: "\002\000\000\000\000\001" } } } } } }
updates { type: INSERT entity { table_entry { table_id: 33554436 priority: 10
  match { field_id: 1 ternary { value: "\306\063d\000" mask: "\377\377\377\000" } }
  action { action { action_id: 16777217 } } } } }
updates { type: INSERT entity { table_entry { table_id: 33554445
  match { field_id: 1 lpm { value: "\300\250\000\000" prefix_len: 16 } }
  action { action { action_id: 16777228 params { param_id: 1 value: "\007" } } } } } }
"#;

    fn switch() -> (Switch, P4Info) {
        let info = request::read_p4info("p4info", request::NETC_P4INFO).unwrap();
        let tree = textpb::parse("s.txtpb", REQ).unwrap();
        let ups = request::decode("s.txtpb", &tree, &info).unwrap();
        (Switch::apply("s", "s.txtpb", &ups, &info).unwrap(), info)
    }

    fn pkt(src: u32, sport: u16) -> PacketIn {
        PacketIn {
            ingress_port: 1,
            vxlan_vni: None,
            outer_dst: 0x0a00_0064,
            proto: 6,
            src,
            dst: 0x0a00_0064,
            sport,
            dport: 80,
        }
    }

    #[test]
    fn the_member_is_slot_h5_mod_n_and_an_empty_slot_drops() {
        let (sw, info) = switch();
        let mut seen = [false; 3];
        for sport in 1000..1100u16 {
            let p = pkt(0x0808_0808, sport);
            let t = sw.ingress(&info, &p);
            let slot = (t.h5 % 3) as usize;
            seen[slot] = true;
            match (slot, &t.fate) {
                (
                    0,
                    Fate::Unicast {
                        port: 7,
                        encap: Some((1, 0xc0a8_0001, 0x0200_0000_0001)),
                    },
                ) => {}
                // member 2 (slot 1) has no tunnel entry; slot 2 has no member
                (1 | 2, Fate::Drop { why }) => assert!(why.starts_with("tunnel"), "{why}"),
                other => panic!("slot {slot}: {other:?}"),
            }
            assert!(t.cites.iter().any(|c| c.starts_with("s.txtpb:")), "{t:?}");
        }
        assert_eq!(seen, [true; 3]);
    }

    #[test]
    fn the_acl_drops_before_load_balancing() {
        let (sw, info) = switch();
        let t = sw.ingress(&info, &pkt(0xc633_6407, 1234)); // 198.51.100.7
        assert_eq!(
            t.fate,
            Fate::Drop {
                why: "acl: denied".into()
            }
        );
    }
}
