//! Tests of the incremental placement update: hand-worked changes of one
//! VIP (unrelated VIPs kept, the minimal delta, stickiness), proptests that
//! an update equals the sticky greedy run from scratch (one change, changes
//! in sequence, many blocks), and on a fat tree that later endpoints are
//! confirmed rather than re-decided.

use super::*;

fn four_vips() -> Model {
    let f = fabric(
        &[
            ("a1", [100; 3]),
            ("a2", [100; 3]),
            ("t1", [50; 3]),
            ("t2", [50; 3]),
            ("t3", [50; 3]),
        ],
        &[
            ("t1", "a1", 10_000),
            ("t2", "a1", 10_000),
            ("t2", "a2", 10_000),
            ("t3", "a2", 10_000),
            ("a1", "a2", 40_000),
        ],
    );
    model(
        f,
        vec![
            (ip(1), vip([2, 8, 8], &[("t1", 8)], &[("a1", 3000)])),
            (ip(2), vip([2, 8, 8], &[("t3", 8)], &[("a2", 2500)])),
            (ip(3), vip([2, 4, 4], &[("t2", 4)], &[("t1", 1200)])),
            (ip(4), vip([2, 4, 4], &[("t3", 4)], &[("t3", 300)])),
        ],
    )
}

#[test]
fn one_vip_change_keeps_unrelated_vips_and_returns_the_minimal_delta() {
    let mut p = Placement::compute(four_vips(), &BTreeMap::new());
    let before = p.assignment().clone();
    assert_eq!(before.len(), 4);
    // the smallest VIP doubles its traffic: it stays last in order
    let mut v4 = p.model().vips[&ip(4)].clone();
    v4.traffic.insert(s("t3"), 600);
    let d = p.update(vec![VipChange::Set(ip(4), v4)]);
    // one block (a block is >= 64 steps): its other steps are confirmed
    // with one candidate each, only the changed VIP is re-decided
    assert_eq!(p.stats().replayed_from, 0);
    assert_eq!(p.stats().evaluated, 1, "only the changed VIP is re-decided");
    assert_eq!(p.stats().confirmed, 3);
    for e in [ip(1), ip(2), ip(3)] {
        assert_eq!(p.assignment()[&e], before[&e]);
    }
    assert_eq!(d, incremental::diff(&before, p.assignment()));
    assert!(d
        .deleted
        .iter()
        .chain(&d.inserted)
        .all(|(e, _)| *e == ip(4)));

    // a new small VIP: nothing else moves, the delta is its one row
    let before = p.assignment().clone();
    let d = p.update(vec![VipChange::Set(
        ip(5),
        vip([1, 1, 1], &[("t2", 1)], &[("t2", 50)]),
    )]);
    assert_eq!(d.deleted, vec![]);
    assert_eq!(d.inserted.len(), 1);
    assert_eq!(d.inserted[0].0, ip(5));
    assert_eq!(p.stats().evaluated, 1);
    for (e, sw) in &before {
        assert_eq!(p.assignment()[e], *sw);
    }

    // removing it again gives back exactly the delete
    let d = p.update(vec![VipChange::Remove(ip(5))]);
    assert_eq!(d.inserted, vec![]);
    assert_eq!(d.deleted.len(), 1);
    assert_eq!(p.assignment(), &before);

    // no change, no delta, no work
    let d = p.update(vec![]);
    assert!(d.is_empty());
    assert_eq!(p.stats().evaluated, 0);
}

#[test]
fn a_bigger_vip_moves_up_and_later_vips_stay_by_stickiness() {
    let mut p = Placement::compute(four_vips(), &BTreeMap::new());
    let before = p.assignment().clone();
    // VIP 4 becomes the biggest: it is re-decided first; the others are
    // re-evaluated after it but keep their switch unless the gain > δ.
    let mut v4 = p.model().vips[&ip(4)].clone();
    v4.traffic.insert(s("t3"), 5000);
    let d = p.update(vec![VipChange::Set(ip(4), v4)]);
    assert_eq!(p.stats().replayed_from, 0);
    let fresh = Placement::compute(p.model().clone(), &before);
    assert_eq!(p.assignment(), fresh.assignment());
    assert_eq!(d, incremental::diff(&before, p.assignment()));
    for e in [ip(1), ip(2), ip(3)] {
        assert_eq!(
            p.assignment()[&e],
            before[&e],
            "VIP {e} moved without a gain > δ"
        );
    }
}

#[test]
fn delta_as_a_transaction_deletes_then_inserts() {
    let d = Delta {
        deleted: vec![(ip(1), s("a"))],
        inserted: vec![(ip(1), s("b"))],
    };
    let tx = d.transaction(7);
    assert_eq!(tx.len(), 2);
    assert_eq!(tx.changes[0].2, crate::engine::Diff::Delete);
    assert_eq!(tx.changes[1].0, 7);
}

// ------------------------------------------------------------ proptest

pub(super) fn arb_model() -> impl Strategy<Value = Model> {
    let names = ["a1", "a2", "c1", "t1", "t2", "t3"];
    let switches = prop::collection::vec((0i64..40, 0i64..60, 0i64..40), 6);
    // possible links: ToR-agg, agg-core, one ToR-ToR
    let pairs = [
        ("t1", "a1"),
        ("t2", "a1"),
        ("t2", "a2"),
        ("t3", "a2"),
        ("a1", "c1"),
        ("a2", "c1"),
        ("t1", "t3"),
    ];
    let links = prop::collection::vec(prop::option::of(500i64..20_000), pairs.len());
    let vip_s = (
        (1i64..3, 1i64..12, 1i64..12),
        prop::collection::btree_map(0usize..6, 1i64..8, 0..3),
        prop::collection::btree_map(0usize..6, 0i64..6000, 0..3),
    );
    let vips = prop::collection::btree_map(1u8..12, vip_s, 1..8);
    let params = (0.5f64..1.0, 0.0f64..0.2);
    // a route budget that binds as often as not
    let budget = prop::option::of(0i64..8);
    (switches, links, vips, params, budget).prop_map(move |(sw, ls, vs, (h, d), b)| {
        let mut f = Fabric {
            routes_free: b,
            ..Fabric::default()
        };
        for (n, (x, y, z)) in names.iter().zip(sw) {
            f.switches.insert(s(n), [x, y, z]);
        }
        for ((a, b), c) in pairs.iter().zip(ls) {
            if let Some(c) = c {
                f.links.insert((s(a), s(b)), c);
                f.links.insert((s(b), s(a)), c);
            }
        }
        let vips = vs
            .into_iter()
            .map(|(d, ((h, e, t), mem, tr))| {
                let spec = VipSpec {
                    endpoint: EndpointSpec {
                        need: [h, e, t],
                        members: mem.into_iter().map(|(i, n)| (s(names[i]), n)).collect(),
                    },
                    traffic: tr.into_iter().map(|(i, m)| (s(names[i]), m)).collect(),
                    tips: BTreeMap::new(),
                };
                (ip(d), spec)
            })
            .collect();
        Model {
            fabric: f,
            vips,
            params: Params {
                link_headroom: h,
                delta: d,
            },
        }
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// update(one VIP change) == the sticky run from scratch on the new
    /// model with previous = the old placement; the delta is exactly the
    /// difference; VIPs before the change's position keep their switch; and
    /// the tables never overflow.
    #[test]
    fn update_equals_sticky_recompute(
        m in arb_model(),
        which in 0usize..16,
        traffic in 0i64..9000,
        remove in any::<bool>(),
    ) {
        let mut p = Placement::compute(m.clone(), &BTreeMap::new());
        let before = p.assignment().clone();
        let old_order = greedy::order(p.model());
        // a sticky recompute without changes is a fixed point
        let again = Placement::compute(m.clone(), &before);
        prop_assert_eq!(again.assignment(), &before);

        let keys: Vec<Endpoint> = m.vips.keys().copied().collect();
        let v = if which < keys.len() { keys[which] } else { ip(200) };
        let change = if remove && m.vips.contains_key(&v) {
            VipChange::Remove(v)
        } else {
            let mut spec = m.vips.get(&v).cloned().unwrap_or_else(|| vip([1, 2, 2], &[("t1", 2)], &[]));
            spec.traffic = BTreeMap::from([(s("a1"), traffic)]);
            VipChange::Set(v, spec)
        };
        let d = p.update(vec![change]);
        let fresh = Placement::compute(p.model().clone(), &before);
        prop_assert_eq!(p.assignment(), fresh.assignment());
        prop_assert_eq!(&d, &incremental::diff(&before, p.assignment()));
        let pos = old_order.iter().position(|i| i.vip == v).unwrap_or(old_order.len());
        prop_assert!(p.stats().replayed_from <= pos);
        for item in &old_order[..p.stats().replayed_from] {
            prop_assert_eq!(p.assignment().get(&item.ep), before.get(&item.ep));
        }
        prop_assert!(p.stats().evaluated <= p.stats().endpoints - p.stats().replayed_from);
        // CAP-1 on what was placed
        let mut used: BTreeMap<Sym, [i64; 3]> = BTreeMap::new();
        for (e, sw) in p.assignment() {
            let need = p.model().vips[e].endpoint.need;
            let u = used.entry(*sw).or_default();
            for i in 0..3 { u[i] += need[i]; }
        }
        for (sw, u) in used {
            let free = p.model().fabric.switches[&sw];
            for i in 0..3 { prop_assert!(u[i] <= free[i], "{sw:?} table {i}: {u:?} > {free:?}"); }
        }
    }
}

/// A VIP of `arb_model`'s fabric, with up to two TIPs (a two-level VIP).
fn arb_vip() -> impl Strategy<Value = VipSpec> {
    let names = ["a1", "a2", "c1", "t1", "t2", "t3"];
    let tip = ((1i64..3, 1i64..8, 1i64..8), 3usize..6, 1i64..6);
    (
        (1i64..3, 1i64..12, 1i64..12),
        prop::collection::btree_map(0usize..6, 1i64..8, 0..3),
        prop::collection::btree_map(0usize..6, 0i64..6000, 0..3),
        prop::collection::vec(tip, 0..3),
        0u8..200,
    )
        .prop_map(move |((h, e, t), mem, tr, tips, salt)| VipSpec {
            endpoint: EndpointSpec {
                need: [h, e, t],
                members: mem.into_iter().map(|(i, n)| (s(names[i]), n)).collect(),
            },
            traffic: tr.into_iter().map(|(i, m)| (s(names[i]), m)).collect(),
            tips: tips
                .into_iter()
                .enumerate()
                .map(|(k, ((h, e, t), tor, n))| {
                    (
                        Ipv4Addr::new(100, 65, salt, k as u8),
                        EndpointSpec {
                            need: [h, e, t],
                            members: BTreeMap::from([(s(names[tor]), n)]),
                        },
                    )
                })
                .collect(),
        })
}

/// Applies `changes` and checks the result against the greedy's run from
/// scratch on the new model, sticky to the placement before the update:
/// the same steps, stop and assignment, a delta that is the difference, and
/// no endpoint visited or kept twice.
fn update_equals_sticky_run(
    p: &mut Placement,
    changes: Vec<VipChange>,
) -> Result<(), TestCaseError> {
    let before = p.assignment().clone();
    let d = p.update(changes);
    let fresh = Placement::compute(p.model().clone(), &before);
    prop_assert_eq!(p.outcomes(), fresh.outcomes());
    prop_assert_eq!(p.assignment(), fresh.assignment());
    prop_assert_eq!(p.stopped_at(), fresh.stopped_at());
    prop_assert_eq!(&d, &incremental::diff(&before, p.assignment()));
    let st = p.stats();
    prop_assert!(st.evaluated + st.confirmed + st.kept <= st.endpoints - st.replayed_from);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(150))]

    /// A sequence of updates (VIPs added with or without TIPs, removed,
    /// their traffic or DIPs changed, several at once) gives after each one
    /// exactly the greedy's run from scratch on the new model with
    /// previous = the placement before it (specs/intent.md §5): the same
    /// steps in the same order, each with the same switch and load, the
    /// same stop, and a delta that is the difference.
    #[test]
    fn updates_in_sequence_equal_the_sticky_run_from_scratch(
        m in arb_model(),
        edits in prop::collection::vec(
            prop::collection::vec((1u8..16, prop::option::of(arb_vip())), 1..3),
            1..6,
        ),
        target in prop::option::of(1usize..5),
    ) {
        // blocks of 1-4 steps (many blocks: checkpoints, kept blocks,
        // splits) or the default (one block)
        let mut p = match target {
            Some(t) => Placement::compute_in_blocks(m, &BTreeMap::new(), t),
            None => Placement::compute(m, &BTreeMap::new()),
        };
        for edit in edits {
            let mut changes = Vec::new();
            let mut seen = std::collections::BTreeSet::new();
            for (d, spec) in edit {
                if !seen.insert(d) {
                    continue;
                }
                changes.push(match spec {
                    // a TIP belongs to one VIP (`model::read` refuses a TIP
                    // of two): its address carries the VIP's
                    Some(mut spec) => {
                        spec.tips = spec
                            .tips
                            .into_values()
                            .enumerate()
                            .map(|(k, t)| (Ipv4Addr::new(100, 65, d, k as u8), t))
                            .collect();
                        VipChange::Set(ip(d), spec)
                    }
                    None => VipChange::Remove(ip(d)),
                });
            }
            update_equals_sticky_run(&mut p, changes)?;
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(60))]

    /// On a fat tree with tens to hundreds of VIPs in small blocks, what
    /// `netc-bench intent`'s add_vip does (a VIP removed, then put back),
    /// traffic changes that move a VIP in the order, and new VIPs with
    /// TIPs: after each update the steps are exactly the sticky run from
    /// scratch, and the delta is the difference. `tight` shrinks the
    /// tables so that the greedy stops part way (blocks after the stop).
    #[test]
    fn updates_over_many_blocks_equal_the_sticky_run_from_scratch(
        n in 20u32..160,
        seed in 0u64..1_000,
        tight in any::<bool>(),
        target in 1usize..12,
        edits in prop::collection::vec((0usize..10_000, 0u8..4, 1i64..400), 1..12),
    ) {
        let (mut m, tors) = random_vips(4, n, seed);
        if tight {
            for t in m.fabric.switches.values_mut() {
                *t = [24, 12, 12];
            }
        }
        let mut p = Placement::compute_in_blocks(m, &BTreeMap::new(), target);
        for (which, kind, traffic) in edits {
            let keys: Vec<Endpoint> = p.model().vips.keys().copied().collect();
            let v = keys[which % keys.len()];
            let spec = p.model().vips[&v].clone();
            let steps: Vec<Vec<VipChange>> = match kind {
                // removed, then re-added with the same spec
                0 => vec![vec![VipChange::Remove(v)], vec![VipChange::Set(v, spec)]],
                // its traffic changes: it moves in the order
                1 => {
                    let mut spec = spec;
                    spec.traffic = BTreeMap::from([(tors[which % tors.len()], traffic)]);
                    vec![vec![VipChange::Set(v, spec)]]
                }
                // a new VIP with one TIP
                2 => {
                    let new = Ipv4Addr::from(0x6441_0000 + which as u32);
                    let mut spec = spec;
                    spec.traffic = BTreeMap::from([(tors[(which / 7) % tors.len()], traffic)]);
                    spec.tips = BTreeMap::from([(
                        Ipv4Addr::from(0x6442_0000 + which as u32),
                        EndpointSpec {
                            need: [1, 1, 1],
                            members: BTreeMap::from([(tors[which % tors.len()], 1)]),
                        },
                    )]);
                    vec![vec![VipChange::Set(new, spec)]]
                }
                // two VIPs at once: one removed, another's traffic changed
                _ => {
                    let w = keys[(which / 3) % keys.len()];
                    if w == v {
                        vec![vec![VipChange::Remove(v)]]
                    } else {
                        let mut ws = p.model().vips[&w].clone();
                        ws.traffic = BTreeMap::from([(tors[0], traffic)]);
                        vec![vec![VipChange::Remove(v), VipChange::Set(w, ws)]]
                    }
                }
            };
            for changes in steps {
                update_equals_sticky_run(&mut p, changes)?;
            }
        }
    }
}

/// On a fat tree with 2,000 VIPs, adding a small VIP (placed first in
/// greedy order by its traffic, so every other endpoint comes after it) or
/// removing one re-decides only endpoints whose previous switch the sticky
/// rule cannot be shown to keep: most are kept in blocks the bound proves
/// (never visited) or confirmed with one candidate, and the result is still
/// the run from scratch.
#[test]
fn a_vip_change_confirms_later_endpoints_instead_of_re_deciding_them() {
    let (m, tors) = random_vips(6, 2_000, 7);
    let mut p = Placement::compute(m, &BTreeMap::new());
    let new = Ipv4Addr::new(100, 99, 0, 1);
    let spec = VipSpec {
        endpoint: EndpointSpec {
            need: [2, 1, 1],
            members: BTreeMap::from([(tors[3], 1)]),
        },
        traffic: BTreeMap::from([(tors[5], 500)]),
        tips: BTreeMap::new(),
    };
    for change in [
        VipChange::Set(new, spec),
        VipChange::Remove(new),
        VipChange::Remove(Ipv4Addr::from(0x6440_0000 + 17)),
    ] {
        let before = p.assignment().clone();
        p.update(vec![change]);
        let fresh = Placement::compute(p.model().clone(), &before);
        assert_eq!(p.outcomes(), fresh.outcomes());
        let st = p.stats().clone();
        assert!(
            (st.confirmed + st.kept) * 10 >= (st.endpoints - st.replayed_from) * 9,
            "most later endpoints are confirmed or kept: {st:?}"
        );
        assert!(st.evaluated * 20 < st.endpoints, "{st:?}");
        // only the blocks holding the change, and those the bound cannot
        // keep, are visited
        assert!(
            st.evaluated + st.confirmed < st.endpoints / 4,
            "most later endpoints are not visited: {st:?}"
        );
    }
}

/// A k-ary fat tree (ToRs and aggs per pod, cores), 10/40 Gbps links; the
/// ToRs.
pub(super) fn fat_tree(k: usize) -> (Fabric, Vec<Sym>) {
    let mut f = Fabric::default();
    let (h, e, t) = (16_384, 4_096, 512);
    let mut tors = Vec::new();
    for p in 0..k {
        for i in 0..k / 2 {
            let tor = s(&format!("tor{p}-{i}"));
            let agg = s(&format!("agg{p}-{i}"));
            f.switches.insert(tor, [h, e, t]);
            f.switches.insert(agg, [h, e, t]);
            tors.push(tor);
        }
        for i in 0..k / 2 {
            for j in 0..k / 2 {
                let (tor, agg) = (s(&format!("tor{p}-{i}")), s(&format!("agg{p}-{j}")));
                f.links.insert((tor, agg), 10_000);
                f.links.insert((agg, tor), 10_000);
            }
            for c in 0..k / 2 {
                let (agg, core) = (s(&format!("agg{p}-{i}")), s(&format!("core{i}-{c}")));
                f.switches.insert(core, [h, e, t]);
                f.links.insert((agg, core), 40_000);
                f.links.insert((core, agg), 40_000);
            }
        }
    }
    (f, tors)
}
