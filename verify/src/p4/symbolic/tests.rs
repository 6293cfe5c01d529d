//! The property: for random switch states (every table of netc.p4, small
//! value domains so entries overlap and hit) and random packets, the
//! symbolic model puts the packet in exactly one outcome its hash can
//! take, and that outcome's fate is the concrete interpreter's.

use super::super::request::{self, Entity, FieldMatch, Update, UpdateType};
use super::*;
use proptest::prelude::*;
use std::collections::BTreeSet;

const ADDRS: [u32; 7] = [
    0x0a00_0001,
    0x0a00_0002,
    0x0a00_0064,
    0xef01_0101,
    0xc0a8_0001,
    0xc0a8_0101,
    0x0a01_0001,
];
const MASKS: [u128; 3] = [0, 0xffff_ff00, 0xffff_ffff];
const LENS: [u32; 5] = [0, 8, 16, 24, 32];
const VNIS: [u32; 3] = [100, 200, 300];
const RANGES: [(u128, u128); 3] = [(0, 65535), (80, 80), (0, 100)];

fn info() -> P4Info {
    request::read_p4info("p4info", request::NETC_P4INFO).unwrap()
}
fn table(info: &P4Info, name: &str) -> u32 {
    *info.tables.iter().find(|(_, t)| t.name == name).unwrap().0
}
fn action(info: &P4Info, name: &str, params: &[u128]) -> Action {
    let id = *info.actions.iter().find(|(_, a)| a.name == name).unwrap().0;
    Action {
        id,
        params: params
            .iter()
            .enumerate()
            .map(|(i, v)| (i as u32 + 1, *v))
            .collect(),
    }
}

/// One random entry: (table, key choices, action choice, parameters).
type Spec = (u8, [u8; 6], u8, [u8; 3]);

fn switch_of(specs: &[Spec], groups: &[(u8, u8)]) -> Switch {
    let info = info();
    let mut ups = Vec::new();
    let mut seen = BTreeSet::new();
    let mut line = 0u32;
    let mut push = |ups: &mut Vec<Update>, entity: Entity| {
        line += 1;
        ups.push(Update {
            kind: UpdateType::Insert,
            entity,
            line,
        });
    };
    for (m, (profile, mvni, member)) in [
        (1u32, (0x1100_0001u32, 1u128, 0u8)),
        (2, (0x1100_0001, 0, 2)),
        (3, (0x1100_0002, 2, 1)),
    ] {
        let a = action(
            &info,
            "to_member",
            &[mvni, u128::from(ADDRS[member as usize])],
        );
        push(
            &mut ups,
            Entity::Member {
                profile_id: profile,
                member_id: m,
                action: a,
            },
        );
    }
    let mut group_ids = BTreeSet::new();
    for (id, ports) in groups {
        if !group_ids.insert(*id % 3) {
            continue;
        }
        let replicas = (0..4u32)
            .filter(|p| (ports >> p) & 1 == 1)
            .map(|p| (p + 1, 0))
            .collect();
        push(
            &mut ups,
            Entity::McastGroup {
                id: u32::from(*id % 3) + 1,
                replicas,
            },
        );
    }
    for &(t, k, a, p) in specs {
        let ad = |i: u8| u128::from(ADDRS[i as usize % ADDRS.len()]);
        let port = |i: u8| u128::from(i % 4 + 1);
        let vni = |i: u8| u128::from(VNIS[i as usize % 3]);
        let proto = |i: u8| if i.is_multiple_of(2) { 6 } else { 17 };
        let dport = |i: u8| if i.is_multiple_of(2) { 80 } else { 443 };
        let pick = |yes: bool, a: Action, b: Action| if yes { a } else { b };
        let nop = action(&info, "nop", &[]);
        let drop_ = action(&info, "drop", &[]);
        let (name, matches, act, prio): (&str, Vec<(u32, FieldMatch)>, EntryAction, i32) =
            match t % 12 {
                0 => (
                    "port_role",
                    vec![(1, FieldMatch::Exact(port(k[0])))],
                    EntryAction::Action(pick(a % 4 != 0, action(&info, "set_host_port", &[]), nop)),
                    0,
                ),
                1 => (
                    "port_tenant",
                    vec![
                        (1, FieldMatch::Exact(port(k[0]))),
                        (2, FieldMatch::Exact(vni(k[1]))),
                    ],
                    EntryAction::Action(pick(a % 4 != 0, nop, drop_)),
                    0,
                ),
                2 => {
                    let (lo, hi) = RANGES[k[4] as usize % 3];
                    let mut ms = vec![
                        (1, FieldMatch::Ternary(ad(k[0]), MASKS[k[1] as usize % 3])),
                        (2, FieldMatch::Ternary(ad(k[2]), MASKS[k[3] as usize % 3])),
                        (4, FieldMatch::Range(lo, hi)),
                    ];
                    if k[5] % 2 == 0 {
                        ms.push((3, FieldMatch::Ternary(proto(k[5] / 2), 0xff)));
                    }
                    (
                        "acl",
                        ms,
                        EntryAction::Action(pick(a % 2 == 0, drop_, nop)),
                        i32::from(p[0] % 3) + 1,
                    )
                }
                3 => (
                    "mcast",
                    vec![
                        (1, FieldMatch::Exact(vni(k[0]))),
                        (2, FieldMatch::Exact(ad(k[1]))),
                    ],
                    EntryAction::Action(pick(
                        a % 4 != 0,
                        action(&info, "set_mcast_grp", &[u128::from(p[0] % 4)]),
                        nop,
                    )),
                    0,
                ),
                t @ (4 | 5) => {
                    let (tab, act) = if t == 4 {
                        ("vip", "lb")
                    } else {
                        ("vip_local", "lb_local")
                    };
                    let ms = vec![
                        (1, FieldMatch::Exact(vni(k[0]) * u128::from(k[4] % 2))),
                        (2, FieldMatch::Exact(ad(k[1]))),
                        (3, FieldMatch::Exact(proto(k[2]))),
                        (4, FieldMatch::Exact(dport(k[3]))),
                    ];
                    (
                        tab,
                        ms,
                        EntryAction::Action(pick(
                            a % 5 != 0,
                            action(&info, act, &[u128::from(p[0] % 4)]),
                            nop,
                        )),
                        0,
                    )
                }
                t @ (6 | 7) => {
                    let tab = if t == 6 { "ecmp" } else { "ecmp_local" };
                    let ms = vec![
                        (1, FieldMatch::Exact(ad(k[1]))),
                        (2, FieldMatch::Exact(proto(k[2]))),
                        (3, FieldMatch::Exact(dport(k[3]))),
                        (4, FieldMatch::Exact(u128::from(k[0] % 4))),
                    ];
                    let member = if t == 6 { u32::from(a % 2) + 1 } else { 3 };
                    (tab, ms, EntryAction::Member(member), 0)
                }
                8 => (
                    "tunnel",
                    vec![
                        (1, FieldMatch::Exact(u128::from(k[0] % 3))),
                        (2, FieldMatch::Exact(ad(k[1]))),
                    ],
                    EntryAction::Action(pick(
                        a % 4 != 0,
                        action(
                            &info,
                            "encap",
                            &[ad(p[0]), 0x0200_0000_0001 + u128::from(p[1])],
                        ),
                        drop_,
                    )),
                    0,
                ),
                9 => {
                    let len = LENS[k[1] as usize % 5];
                    (
                        "route",
                        vec![(1, FieldMatch::Lpm(ad(k[0]), len))],
                        EntryAction::Action(pick(
                            a % 4 != 0,
                            action(
                                &info,
                                "route_ecmp",
                                &[ad(k[0]), u128::from(len), u128::from(p[0] % 4)],
                            ),
                            nop,
                        )),
                        0,
                    )
                }
                10 => (
                    "route_member",
                    vec![
                        (1, FieldMatch::Exact(ad(k[0]))),
                        (2, FieldMatch::Exact(u128::from(LENS[k[1] as usize % 5]))),
                        (3, FieldMatch::Exact(u128::from(k[2] % 4))),
                    ],
                    EntryAction::Action(pick(
                        a % 4 != 0,
                        action(&info, "set_nexthop", &[ad(p[0])]),
                        drop_,
                    )),
                    0,
                ),
                _ => (
                    "underlay",
                    vec![(1, FieldMatch::Lpm(ad(k[0]), LENS[k[1] as usize % 5]))],
                    EntryAction::Action(pick(
                        a % 4 != 0,
                        action(&info, "forward", &[u128::from(p[0] % 8)]),
                        drop_,
                    )),
                    0,
                ),
            };
        let table_id = table(&info, name);
        if !seen.insert(format!("{table_id} {prio} {matches:?}")) {
            continue;
        }
        push(
            &mut ups,
            Entity::Table(request::TableEntry {
                table_id,
                matches,
                action: Some(act),
                priority: prio,
                is_default: false,
            }),
        );
    }
    Switch::apply("s", "s.txtpb", &ups, &info).unwrap()
}

fn packet() -> impl Strategy<Value = PacketIn> {
    (
        0u32..6,
        prop::option::of(0usize..4),
        0usize..8,
        any::<bool>(),
        0usize..8,
        0usize..8,
        any::<u16>(),
        prop::sample::select(vec![0u16, 79, 80, 100, 443, 9999]),
    )
        .prop_map(|(port, vni, od, tcp, s, d, sport, dport)| {
            let ad = |i: usize| ADDRS.get(i).copied().unwrap_or(0x0808_0808);
            PacketIn {
                ingress_port: port,
                vxlan_vni: vni.map(|i| [0, 100, 200, 300][i]),
                outer_dst: ad(od),
                proto: if tcp { 6 } else { 17 },
                src: ad(s),
                // a plain IP packet has one destination
                dst: if vni.is_some() { ad(d) } else { ad(od) },
                sport,
                dport,
            }
        })
}

fn spec() -> impl Strategy<Value = Spec> {
    (0u8..12, any::<[u8; 6]>(), any::<u8>(), any::<[u8; 3]>())
}

fn same(sym: &Fate, p: &PacketIn, concrete: &Fate) -> bool {
    match (sym, concrete) {
        (Fate::Multicast { group, ports }, Fate::Multicast { group: g, ports: q }) => {
            let pruned: Vec<u32> = ports
                .iter()
                .copied()
                .filter(|x| *x != p.ingress_port)
                .collect();
            group == g && &pruned == q
        }
        (a, b) => a == b,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    #[test]
    fn symbolic_fate_is_the_concrete_fate(
        specs in prop::collection::vec(spec(), 0..40),
        groups in prop::collection::vec((any::<u8>(), any::<u8>()), 0..3),
        packets in prop::collection::vec(packet(), 1..30),
    ) {
        let info = info();
        let sw = switch_of(&specs, &groups);
        let model = Model::build(&sw, &info);
        for p in &packets {
            let concrete = sw.ingress(&info, p);
            let v = model.space.valuation(p);
            let h5 = u128::from(concrete.h5);
            let taken: Vec<&SymOutcome> = model.outcomes.iter()
                .filter(|o| o.set.eval_in(&v) && o.slot.is_none_or(|s| h5 % s.n == s.idx))
                .collect();
            prop_assert_eq!(taken.len(), 1, "packet {:?}", p);
            prop_assert!(same(&taken[0].fate, p, &concrete.fate), "packet {:?}: symbolic {:?}, concrete {:?}", p, taken[0].fate, concrete.fate);
        }
    }
}

#[test]
fn the_outcomes_partition_every_packet_and_witnesses_take_their_slot() {
    let specs: Vec<Spec> = (0..48u8)
        .map(|i| (i % 12, [i, i / 2, i / 3, i / 5, i / 7, i], i, [i, 1, 2]))
        .collect();
    let info = info();
    let sw = switch_of(&specs, &[(0, 0b0111), (1, 0b1010)]);
    let m = Model::build(&sw, &info);
    let mut sets_by_slot: std::collections::BTreeMap<Option<(u128, u128)>, Bdd> =
        Default::default();
    for o in &m.outcomes {
        let p = m.witness(o).unwrap();
        let c = sw.ingress(&info, &p);
        assert!(
            same(&o.fate, &p, &c.fate),
            "{p:?}: {:?} vs {:?}",
            o.fate,
            c.fate
        );
        let k = o.slot.map(|s| (s.n, s.idx));
        let e = sets_by_slot.entry(k).or_insert_with(|| m.space.none());
        assert!(e.and(&o.set).is_false(), "outcomes with one slot overlap");
        *e = e.or(&o.set);
    }
    assert!(m.outcomes.len() > 5);
}
