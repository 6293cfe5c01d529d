//! Tests of the packed kept VM result in `kept.rs`: unit cases and proptest properties.

use super::*;
use crate::space::Space;
use proptest::prelude::*;

/// A set of packets: a union of (destination address, TCP destination
/// port) prefixes, so the sets of one result share sub-diagrams.
fn set(space: &Space, cubes: &[(u32, u8, u16, u8)]) -> Bdd {
    let mut s = space.none();
    for &(a, al, p, pl) in cubes {
        let mask = |w: u32, len: u8| {
            let len = u32::from(len) % (w + 1);
            ((1u128 << w) - 1) & !((1u128 << (w - len)) - 1)
        };
        let c = space
            .field_eq(Field::NwDst, u128::from(a), mask(32, al))
            .and(&space.field_eq(Field::TpDst, u128::from(p), mask(16, pl)));
        s = s.or(&c);
    }
    s
}

type Cubes = Vec<(u32, u8, u16, u8)>;
type Key = Vec<(Field, Val)>;
/// A drawn outcome: device, set, what the path wrote, path, end.
type DrawnOutcome = (u32, Cubes, Key, Vec<Hop>, End);

fn cubes() -> impl Strategy<Value = Cubes> {
    // few distinct values: sets that repeat and nest
    prop::collection::vec((0..4u32, 0..33u8, 20..24u16, 0..17u8), 0..4)
}

fn field() -> impl Strategy<Value = Field> {
    prop_oneof![
        Just(Field::NwDst),
        Just(Field::TunId),
        Just(Field::CtState),
        Just(Field::InPort),
        (0..16u8).prop_map(Field::Reg),
    ]
}

fn val() -> impl Strategy<Value = Val> {
    prop_oneof![
        any::<u128>().prop_map(Val::Const),
        field().prop_map(Val::Alias),
        Just(Val::Unknown),
    ]
}

fn hop() -> impl Strategy<Value = Hop> {
    prop_oneof![
        (any::<u32>(), any::<u32>()).prop_map(|(bridge, handle)| Hop::Flow { bridge, handle }),
        (any::<u32>(), any::<u32>(), any::<u32>()).prop_map(|(bridge, group, bucket)| {
            Hop::Group {
                bridge,
                group,
                bucket,
            }
        }),
        any::<u32>().prop_map(|handle| Hop::Lb { handle }),
        any::<u32>().prop_map(|to| Hop::Underlay { to }),
    ]
}

fn end() -> impl Strategy<Value = End> {
    prop_oneof![
        any::<u32>().prop_map(|port| End::Deliver { port }),
        (any::<u128>(), any::<u32>()).prop_map(|(tun_id, tun_dst)| End::Tunnel { tun_id, tun_dst }),
        Just(End::Uplink),
        "[a-z é]{0,12}".prop_map(|why| End::Drop { why }),
    ]
}

/// A result with every kind of part, its sets as cubes (built in the test).
#[derive(Debug, Clone)]
struct Drawn {
    tables: Vec<(String, u8, Key, Cubes)>,
    groups: Vec<(String, u32, Cubes)>,
    addresses: Vec<(u32, Cubes)>,
    instances: Vec<(String, u32, Cubes)>,
    fanout: Vec<(u128, Cubes)>,
    ports: Vec<(String, u32)>,
    outcomes: Vec<DrawnOutcome>,
    spoof: Cubes,
    delivered: Vec<(usize, Cubes)>,
    counts: (usize, usize, usize),
}

fn drawn() -> impl Strategy<Value = Drawn> {
    let name = "(br|hv|mux)[0-9]";
    let key = prop::collection::vec((field(), val()), 0..3);
    (
        (
            prop::collection::vec((name, any::<u8>(), key, cubes()), 0..5),
            prop::collection::vec((name, any::<u32>(), cubes()), 0..3),
            prop::collection::vec((any::<u32>(), cubes()), 0..3),
            prop::collection::vec((name, any::<u32>(), cubes()), 0..3),
            prop::collection::vec((any::<u128>(), cubes()), 0..3),
            prop::collection::vec((name, any::<u32>()), 0..3),
        ),
        prop::collection::vec(
            (
                any::<u32>(),
                cubes(),
                prop::collection::vec((field(), val()), 0..3),
                prop::collection::vec(hop(), 0..5),
                end(),
            ),
            0..5,
        ),
        cubes(),
        prop::collection::vec((0..1_000_000usize, cubes()), 0..4),
        (any::<u32>(), any::<u32>(), any::<u32>()),
    )
        .prop_map(
            |(
                (tables, groups, addresses, instances, fanout, ports),
                outcomes,
                spoof,
                delivered,
                c,
            )| {
                Drawn {
                    tables,
                    groups,
                    addresses,
                    instances,
                    fanout,
                    ports,
                    outcomes,
                    spoof,
                    delivered,
                    counts: (c.0 as usize, c.1 as usize, c.2 as usize),
                }
            },
        )
}

fn build(space: &Space, d: &Drawn) -> VmChecked {
    let mut fp = Footprint::default();
    for (b, t, key, s) in &d.tables {
        let r = fp.bridges.entry(b.clone()).or_default();
        r.tables.insert((*t, key.clone()), set(space, s));
    }
    for (b, g, s) in &d.groups {
        let r = fp.bridges.entry(b.clone()).or_default();
        r.groups.insert(*g, set(space, s));
    }
    for (a, s) in &d.addresses {
        fp.addresses.insert(*a, set(space, s));
    }
    for (i, a, s) in &d.instances {
        fp.instances.insert((i.clone(), *a), set(space, s));
    }
    for (t, s) in &d.fanout {
        fp.fanout.insert(*t, set(space, s));
    }
    fp.ports = d.ports.iter().cloned().collect();
    let traced = d
        .outcomes
        .iter()
        .map(|(device, s, over, path, end)| Outcome {
            device: *device,
            pkt: Pkt {
                set: set(space, s),
                over: over.iter().copied().collect(),
            },
            path: path.clone(),
            end: end.clone(),
        })
        .collect();
    VmChecked {
        violations: Vec::new(),
        outcomes: d.counts.0,
        pairs: d.counts.1,
        footprint: fp,
        traced,
        outcome_violations: d.counts.2,
        spoof: set(space, &d.spoof),
        delivered: d
            .delivered
            .iter()
            .map(|(p, s)| (*p, set(space, s)))
            .collect(),
    }
}

/// Two sets equal as functions, each a well-formed `Bdd` (an operation
/// on it gives what it gives on the original).
fn same_set(a: &Bdd, b: &Bdd) -> bool {
    a.iff(b).is_true() && a.size() == b.size() && a.and(b).iff(a).is_true()
}

fn same(a: &VmChecked, b: &VmChecked) -> Result<(), TestCaseError> {
    prop_assert_eq!(
        (a.outcomes, a.pairs, a.outcome_violations),
        (b.outcomes, b.pairs, b.outcome_violations)
    );
    let (fa, fb) = (&a.footprint, &b.footprint);
    prop_assert_eq!(fa.bridges.len(), fb.bridges.len());
    for ((na, ra), (nb, rb)) in fa.bridges.iter().zip(&fb.bridges) {
        prop_assert_eq!(na, nb);
        prop_assert!(ra.tables.keys().eq(rb.tables.keys()));
        prop_assert!(ra
            .tables
            .values()
            .zip(rb.tables.values())
            .all(|(x, y)| same_set(x, y)));
        prop_assert!(ra.groups.keys().eq(rb.groups.keys()));
        prop_assert!(ra
            .groups
            .values()
            .zip(rb.groups.values())
            .all(|(x, y)| same_set(x, y)));
    }
    prop_assert!(fa.addresses.keys().eq(fb.addresses.keys()));
    prop_assert!(fa
        .addresses
        .values()
        .zip(fb.addresses.values())
        .all(|(x, y)| same_set(x, y)));
    prop_assert!(fa.instances.keys().eq(fb.instances.keys()));
    prop_assert!(fa
        .instances
        .values()
        .zip(fb.instances.values())
        .all(|(x, y)| same_set(x, y)));
    prop_assert!(fa.fanout.keys().eq(fb.fanout.keys()));
    prop_assert!(fa
        .fanout
        .values()
        .zip(fb.fanout.values())
        .all(|(x, y)| same_set(x, y)));
    prop_assert_eq!(&fa.ports, &fb.ports);
    prop_assert_eq!(a.traced.len(), b.traced.len());
    for (x, y) in a.traced.iter().zip(&b.traced) {
        prop_assert_eq!(x.device, y.device);
        prop_assert!(same_set(&x.pkt.set, &y.pkt.set));
        prop_assert_eq!(&x.pkt.over, &y.pkt.over);
        prop_assert_eq!(&x.path, &y.path);
        prop_assert_eq!(&x.end, &y.end);
    }
    prop_assert!(same_set(&a.spoof, &b.spoof));
    prop_assert!(a.delivered.keys().eq(b.delivered.keys()));
    prop_assert!(a
        .delivered
        .values()
        .zip(b.delivered.values())
        .all(|(x, y)| same_set(x, y)));
    Ok(())
}

proptest! {
    /// Unpacking gives back what was packed: every key, path and end,
    /// every set the same function in a `Bdd` of the same size.
    #[test]
    fn unpack_gives_back_what_was_packed(d in drawn()) {
        let space = Space::new();
        let c = build(&space, &d);
        let kept = Kept::pack(build(&space, &d));
        same(&kept.unpack().map_err(|e| TestCaseError::fail(e.to_string()))?, &c)?;
        let fp = kept.footprint().map_err(|e| TestCaseError::fail(e.to_string()))?;
        same(&kept.unpack_with(fp).map_err(|e| TestCaseError::fail(e.to_string()))?, &c)?;
    }

    /// A repack keeps the old footprint and outcomes and takes the new
    /// sets and counts.
    #[test]
    fn repack_takes_the_new_sets(d in drawn(), e in drawn()) {
        let space = Space::new();
        let old = Kept::pack(build(&space, &d));
        let mut want = build(&space, &e);
        let new = Kept::repack(build(&space, &e), old);
        let had = build(&space, &d);
        want.footprint = had.footprint;
        want.traced = had.traced;
        same(&new.unpack().map_err(|e| TestCaseError::fail(e.to_string()))?, &want)?;
    }

    /// A pack on an old result keeps the old footprint and takes the
    /// new outcomes, sets and counts.
    #[test]
    fn pack_on_takes_the_new_outcomes(d in drawn(), e in drawn()) {
        let space = Space::new();
        let old = Kept::pack(build(&space, &d));
        let mut want = build(&space, &e);
        let new = Kept::pack_on(build(&space, &e), old);
        want.footprint = build(&space, &d).footprint;
        same(&new.unpack().map_err(|e| TestCaseError::fail(e.to_string()))?, &want)?;
    }

    /// Bytes that are not a packed result are an error, never a panic.
    #[test]
    fn garbage_is_an_error(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        let kept = Kept {
            violations: Vec::new(),
            outcomes: 0,
            pairs: 0,
            outcome_violations: 0,
            footprint: bytes.clone().into_boxed_slice(),
            traced: bytes.clone().into_boxed_slice(),
            sets: bytes.into_boxed_slice(),
        };
        let _ = kept.unpack();
    }
}

/// The sets of one result share their nodes: many sets with a common
/// part (below the variables where they differ) take far less than
/// their node vectors.
#[test]
fn shared_sub_diagrams_are_stored_once() {
    let space = Space::new();
    let common = space
        .field_eq(Field::NwSrc, 0x0a00_0001, 0xffff_ffff)
        .and(&space.field_eq(Field::TpDst, 22, 0xffff));
    let mut fp = Footprint::default();
    let mut nodes = 0;
    for t in 0..100u8 {
        let s = common.and(&space.field_eq(Field::NwProto, u128::from(t), 0xff));
        nodes += s.size();
        fp.addresses.insert(u32::from(t), s);
    }
    let kept = Kept::pack(VmChecked {
        violations: Vec::new(),
        outcomes: 0,
        pairs: 0,
        footprint: fp,
        traced: Vec::new(),
        outcome_violations: 0,
        spoof: space.none(),
        delivered: BTreeMap::new(),
    });
    // a node vector takes 12 bytes a node
    assert!(
        kept.bytes() * 10 < nodes * 12,
        "{} bytes for {nodes} nodes",
        kept.bytes()
    );
}
