//! Tests of the load-balancer model in `lb.rs`: unit cases and proptest properties.

use super::*;
use proptest::prelude::*;

/// A row of relation `k` of [`ROW_RELATIONS`] (or `p4_announce` for 7)
/// from small numbers: few instances, VIPs and members, so keys repeat.
fn row(k: usize, x: [u8; 4]) -> (String, Row) {
    let ip = |n: u8| format!("10.0.0.{}", n % 3 + 1);
    let vip = |n: u8| format!("100.64.0.{}", n % 3 + 1);
    let (mux, hmux) = (format!("smux-{}", x[0] % 2), format!("tor-{}", x[0] % 2));
    let vals: Vec<String> = match k {
        0 | 3 => vec![
            if k == 0 { mux } else { hmux },
            "7".into(),
            vip(x[1]),
            "6".into(),
            "80".into(),
            (x[2] % 3 + 1).to_string(),
        ],
        1 | 4 => vec![
            if k == 1 { mux } else { hmux },
            vip(x[1]),
            "6".into(),
            "80".into(),
            (x[2] % 3).to_string(),
            "9".into(),
            ip(x[3]),
        ],
        2 | 5 => vec![
            if k == 2 { mux } else { hmux },
            "9".into(),
            ip(x[1]),
            format!("172.16.0.{}", x[2] % 4),
            format!("02:00:00:00:00:0{}", x[3] % 4),
        ],
        6 => vec![
            mux,
            if x[1].is_multiple_of(4) {
                "bad".into()
            } else {
                vip(x[1])
            },
        ],
        _ => vec![hmux, format!("{}/32", vip(x[1]))],
    };
    let rel = if k == 7 {
        "p4_announce"
    } else {
        ROW_RELATIONS[k]
    };
    (
        rel.to_string(),
        Row {
            vals,
            at: String::new(),
        },
    )
}

fn artifacts(rows: &[(usize, [u8; 4])]) -> Artifacts {
    let mut a = Artifacts::default();
    for &(k, x) in rows {
        let (rel, r) = row(k, x);
        a.relations.entry(rel).or_default().push(Arc::new(r));
    }
    // every row cites its line, so an edit moves the later rows' lines
    for rows in a.relations.values_mut() {
        for (i, r) in rows.iter_mut().enumerate() {
            Arc::make_mut(r).at = format!("f:{}", i + 1);
        }
    }
    a
}

/// What a trace reads at (instance, address), row ids aside: the VIP
/// entries with each slot's member and tunnel, and the black hole.
type View = (
    Vec<(u64, u8, u16, Vec<Option<(u64, u32, Option<(u32, u64)>)>>)>,
    bool,
);

fn view(lb: &Lb, inst: &str, addr: u32) -> View {
    let mut entries = Vec::new();
    for ((i, vni, a), es) in &lb.vip {
        if i != inst || *a != addr {
            continue;
        }
        for &(proto, port, n, _) in es {
            let slots = (0..n.min(8))
                .map(|idx| {
                    let key = (inst.to_string(), addr, proto, port, idx);
                    lb.member.get(&key).map(|&(mvni, m, _)| {
                        let t = lb.tunnel.get(&(inst.to_string(), mvni, m));
                        (mvni, m, t.map(|&(u, d, _)| (u, d)))
                    })
                })
                .collect();
            entries.push((*vni, proto, port, slots));
        }
    }
    (
        entries,
        lb.blackhole.contains_key(&(inst.to_string(), addr)),
    )
}

/// The row id now of handle `h`.
fn id(lb: &Lb, h: u32) -> u32 {
    id_of(&lb.base, &lb.pos, h)
}

/// The handle of the row with id `id` now.
fn handle_at(lb: &Lb, id: u32) -> Option<u32> {
    let k = (0..7).find(|&k| id >= lb.base[k] && id < lb.base[k + 1])?;
    Some(handle(k, lb.handles[k][(id - lb.base[k]) as usize]))
}

/// Every handle the model holds, with its row's relation and values in `a`.
fn rows_by_handle(lb: &Lb, a: &Artifacts) -> Vec<(u32, &'static str, Vec<String>)> {
    (0..7)
        .flat_map(|k| (0..lb.pos[k].len() as u32).map(move |l| handle(k, l)))
        .filter_map(|h| {
            let (rel, r) = lb.row(a, h)?;
            Some((h, rel, r.vals.clone()))
        })
        .collect()
}

/// Where a trace reads each handle the model's entries hold: (the
/// handle, instance, address); a tunnel's at every VIP with a member
/// entry naming it there.
fn read_at(lb: &Lb) -> Vec<(u32, String, u32)> {
    let mut at = Vec::new();
    for ((i, _, a), es) in &lb.vip {
        at.extend(es.iter().map(|e| (e.3, i.clone(), *a)));
    }
    for (k, v) in &lb.member {
        at.push((v.2, k.0.clone(), k.1));
    }
    for (k, v) in &lb.tunnel {
        for vip in lb.vips_of_member.get(k).into_iter().flat_map(|n| n.keys()) {
            at.push((v.2, k.0.clone(), *vip));
        }
    }
    for ((i, a), h) in &lb.blackhole {
        at.push((*h, i.clone(), *a));
    }
    at
}

/// An update (`was` → `lb`, with `ch`) that did not build the model
/// again keeps every handle of a row it kept on an equal row, and
/// names the (instance, address) where a trace read each handle it
/// retired (a kept path naming it is then traced again); one that
/// built it again maps each kept row's handle to an equal row.
fn handles_kept(
    was: &Lb,
    old: &Artifacts,
    lb: &Lb,
    new: &Artifacts,
    ch: &LbChange,
) -> Result<(), TestCaseError> {
    for (h, rel, vals) in rows_by_handle(was, old) {
        let now = match &ch.handles {
            Some(m) => m.get(h),
            None => lb.holds(h).then_some(h),
        };
        if let Some(n) = now {
            let (rn, r) = lb.row(new, n).unwrap();
            prop_assert_eq!((rel, &vals), (rn, &r.vals));
        }
    }
    if ch.handles.is_none() {
        for (h, i, a) in read_at(was) {
            if !lb.holds(h) {
                prop_assert!(
                    ch.instances.contains(&(i.clone(), Some(a)))
                        || ch.instances.contains(&(i.clone(), None)),
                    "handle {h:#x} read at {i}/{a} retired unnamed"
                );
            }
        }
    }
    Ok(())
}

/// The model with every handle resolved to its row id now (what a
/// trace reads), and each VIP row's address by id.
#[allow(clippy::type_complexity)]
fn resolved(
    lb: &Lb,
) -> (
    BTreeMap<(String, u64, u32), Vec<VipEntry>>,
    BTreeMap<MemberKey, (u64, u32, u32)>,
    BTreeMap<(String, u64, u32), (u32, u64, u32)>,
    BTreeMap<(String, u32), u32>,
    Vec<Option<u32>>,
) {
    let vip = lb
        .vip
        .iter()
        .map(|(k, es)| {
            let es = es.iter().map(|e| (e.0, e.1, e.2, id(lb, e.3))).collect();
            (k.clone(), es)
        })
        .collect();
    let member = lb
        .member
        .iter()
        .map(|(k, v)| (k.clone(), (v.0, v.1, id(lb, v.2))))
        .collect();
    let tunnel = lb
        .tunnel
        .iter()
        .map(|(k, v)| (k.clone(), (v.0, v.1, id(lb, v.2))))
        .collect();
    let blackhole = lb
        .blackhole
        .iter()
        .map(|(k, v)| (k.clone(), id(lb, *v)))
        .collect();
    let addrs = (0..lb.base[7])
        .map(|id| lb.vip_of(handle_at(lb, id)?))
        .collect();
    (vip, member, tunnel, blackhole, addrs)
}

fn same_model(a: &Lb, b: &Lb) -> Result<(), TestCaseError> {
    prop_assert_eq!(a.base, b.base);
    prop_assert_eq!(resolved(a), resolved(b));
    prop_assert_eq!(&a.holders, &b.holders);
    prop_assert_eq!(&a.vips_of_member, &b.vips_of_member);
    // the index is the member entries read backwards
    let mut scan: BTreeMap<(String, u64, u32), BTreeMap<u32, u32>> = BTreeMap::new();
    for (k, (mv, m, _)) in &a.member {
        *scan
            .entry((k.0.clone(), *mv, *m))
            .or_default()
            .entry(k.1)
            .or_default() += 1;
    }
    prop_assert_eq!(&a.vips_of_member, &scan);
    // each position's handle is at that position
    for k in 0..7 {
        for (j, &h) in a.handles[k].iter().enumerate() {
            prop_assert_eq!(a.pos[k][h as usize], j as u32);
        }
    }
    Ok(())
}

proptest! {
    /// An update equals a build of the new rows (entries, row ids,
    /// holders); a kept row keeps its handle (or, built again, is
    /// mapped to an equal row); every (instance, address) a trace
    /// would read differently or read a retired handle at, and every
    /// address whose holders differ, is named. Duplicate keys and
    /// black holes that do not parse are drawn too.
    #[test]
    fn update_equals_build_and_names_every_change(
        rows in proptest::collection::vec((0usize..8, any::<[u8; 4]>()), 0..40),
        edits in proptest::collection::vec(
            (0usize..60, proptest::option::of((0usize..8, any::<[u8; 4]>()))), 1..6),
    ) {
        let next = crate::edited(&rows, edits);
        let (old, new) = (artifacts(&rows), artifacts(&next));
        let mut lb = Lb::build(&old).unwrap();
        let before = lb.clone();
        let ch = lb.update(&RowMoves::every(&old, &new)).unwrap();
        let fresh = Lb::build(&new).unwrap();
        same_model(&lb, &fresh)?;
        handles_kept(&before, &old, &lb, &new, &ch)?;
        let insts: BTreeSet<&str> = ["smux-0", "smux-1", "tor-0", "tor-1"].into();
        for inst in insts {
            for addr in (1..4).map(|n| u32::from_be_bytes([100, 64, 0, n])) {
                if view(&before, inst, addr) != view(&fresh, inst, addr) {
                    prop_assert!(
                        ch.instances.contains(&(inst.to_string(), Some(addr)))
                            || ch.instances.contains(&(inst.to_string(), None)),
                        "{inst} at {addr} changed unnamed"
                    );
                }
            }
        }
        for a in before.holders.keys().chain(fresh.holders.keys()) {
            if before.holders.get(a) != fresh.holders.get(a) {
                prop_assert!(ch.addresses.contains(a));
            }
        }
    }
}

proptest! {
    /// A chain of updates (handles retired by one update, rows added
    /// by a later one) stays equal to a build of each generation, and
    /// each keeps (or, built again, maps) a kept row's handle on an
    /// equal row and names where its retired handles were read.
    #[test]
    fn updates_in_a_row_equal_builds(
        rows in proptest::collection::vec((0usize..7, any::<[u8; 4]>()), 0..30),
        steps in proptest::collection::vec(
            proptest::collection::vec(
                (0usize..40, proptest::option::of((0usize..7, any::<[u8; 4]>()))), 1..4),
            1..6),
    ) {
        let mut cur = rows;
        let mut lb = Lb::build(&artifacts(&cur)).unwrap();
        for edits in steps {
            let next = crate::edited(&cur, edits);
            let (old, new) = (artifacts(&cur), artifacts(&next));
            let before = lb.clone();
            let ch = lb.update(&RowMoves::every(&old, &new)).unwrap();
            let fresh = Lb::build(&new).unwrap();
            same_model(&lb, &fresh)?;
            handles_kept(&before, &old, &lb, &new, &ch)?;
            cur = next;
        }
    }
}

proptest! {
    /// Pairing rows the two generations share (an edit shares every
    /// row it did not touch) gives the pairing of the same rows with
    /// nothing shared, whose values are all read: after inserts,
    /// removals and rows replaced by equal unshared copies, with
    /// duplicates (few distinct rows).
    #[test]
    fn shared_rows_pair_as_rows_read_in_full(
        rows in proptest::collection::vec((0usize..2, any::<[u8; 4]>()), 0..30),
        edits in proptest::collection::vec(
            (0usize..40, 0u8..3, (0usize..2, any::<[u8; 4]>())), 1..6),
    ) {
        let old: Vec<Arc<Row>> = rows.iter().map(|&(k, x)| Arc::new(row(k, x).1)).collect();
        let mut new = old.clone();
        for (at, kind, (k, x)) in edits {
            let at = at.min(new.len());
            match kind {
                0 => new.insert(at, Arc::new(row(k, x).1)),
                1 if at < new.len() => {
                    new.remove(at);
                }
                _ if at < new.len() => new[at] = Arc::new((*new[at]).clone()),
                _ => {}
            }
        }
        let copy = |v: &[Arc<Row>]| -> Vec<Arc<Row>> {
            v.iter().map(|r| Arc::new((**r).clone())).collect()
        };
        prop_assert_eq!(row_positions(&old, &new), row_positions(&copy(&old), &copy(&new)));
    }
}

/// A row removed above a row a path names leaves that row its handle,
/// which cites the row's new line; nothing is renumbered, and the
/// removed row's handle is never given to a row added later.
#[test]
fn a_removed_row_keeps_the_handles_of_the_rows_after_it() {
    let row_a = |n| (0, [0, n, 0, 0]);
    let gen0 = artifacts(&[row_a(0), row_a(1), row_a(2)]);
    let gen1 = artifacts(&[row_a(1), row_a(2)]);
    let gen2 = artifacts(&[row_a(0), row_a(1), row_a(2)]);
    let mut lb = Lb::build(&gen0).unwrap();
    let ch = lb.update(&RowMoves::every(&gen0, &gen1)).unwrap();
    assert_eq!(ch.handles, None);
    assert!(!lb.holds(0));
    assert!(lb.row(&gen1, 0).is_none());
    let (_, r) = lb.row(&gen1, 2).unwrap();
    assert_eq!((r.vals[2].as_str(), r.at.as_str()), ("100.64.0.3", "f:2"));
    assert_eq!(lb.vip_of(2), Some(u32::from_be_bytes([100, 64, 0, 3])));
    // the row back at the top takes a new handle, not the retired one
    let ch = lb.update(&RowMoves::every(&gen1, &gen2)).unwrap();
    assert_eq!(ch.handles, None);
    assert!(!lb.holds(0));
    assert_eq!(handle_at(&lb, 0), Some(3));
    let (_, r) = lb.row(&gen2, 3).unwrap();
    assert_eq!((r.vals[2].as_str(), r.at.as_str()), ("100.64.0.1", "f:1"));
    assert_eq!(lb.vip_of(0), None);
}
