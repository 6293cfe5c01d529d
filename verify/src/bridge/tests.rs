//! Tests of the OVS bridge model in `bridge.rs`: unit cases and proptest properties.

use super::*;
use crate::incremental::Moves;
use crate::space::{Field, Space};
use proptest::prelude::*;

/// A set of packets: a union of (TCP destination port, source port)
/// prefixes, so sets overlap, nest and miss each other.
fn set(space: &Space, cubes: &[(u16, u8, u16, u8)]) -> Bdd {
    let mut s = space.none();
    for &(d, dl, p, pl) in cubes {
        let mask = |len: u8| (0xffffu128 << (16 - u32::from(len % 17))) & 0xffff;
        let c = space
            .field_eq(Field::TpDst, u128::from(d), mask(dl))
            .and(&space.field_eq(Field::TpSrc, u128::from(p), mask(pl)));
        s = s.or(&c);
    }
    s
}

proptest! {
    /// The walks without building agree with building the set and
    /// asking whether it is empty (the library's check reports
    /// non-emptiness).
    #[test]
    fn within_and_disjoint_agree_with_built_sets(
        a in prop::collection::vec((any::<u16>(), 0..17u8, any::<u16>(), 0..17u8), 0..4),
        b in prop::collection::vec((any::<u16>(), 0..17u8, any::<u16>(), 0..17u8), 0..4),
    ) {
        let space = Space::new();
        let (a, b) = (set(&space, &a), set(&space, &b));
        prop_assert_eq!(within(&a, &b), a.and_not(&b).is_false());
        prop_assert_eq!(within(&a, &a.or(&b)), true);
        prop_assert_eq!(disjoint_sets(&a, &b), a.and(&b).is_false());
        let mut m = BTreeMap::from([(0u8, b.clone())]);
        union_absorbed_into(&mut m, 0, a.clone());
        prop_assert!(m[&0].iff(&a.or(&b)).is_true());
    }
}

/// A flow from small numbers: few distinct flows, so texts repeat and
/// a TCP port decides which wins; mostly of table 0, some of table 1,
/// some matching an address instead (tables whose fields differ).
fn flow(x: (u8, u8, u8)) -> FlowText {
    let (prio, port, out) = (x.0 % 3, x.1 % 4, x.2 % 3);
    let matches = match x.1 / 4 % 4 {
        3 => format!("ip,nw_dst=10.0.0.{port}"),
        _ => format!("tcp,tp_dst={}", 80 + u16::from(port)),
    };
    FlowText {
        table: u8::from(x.0 / 3 % 4 == 3),
        priority: 100 + u16::from(prio),
        cookie: 0,
        matches,
        actions: format!("output:{}", out + 1),
        at: String::new(),
    }
}

/// Each outcome as the flows' text its path ran and its end: what a
/// path says, whatever handles name the flows.
type Text = (u16, String, String);

fn texts(b: &Bridge, outs: &[Outcome]) -> Vec<(Vec<Text>, End)> {
    let mut v: Vec<_> = outs
        .iter()
        .map(|o| {
            let path = o
                .path
                .iter()
                .map(|h| match *h {
                    Hop::Flow { handle, .. } => {
                        let f = &b.flow(handle).expect("a fresh path's flow").text;
                        (f.priority, f.matches.clone(), f.actions.clone())
                    }
                    _ => (0, String::new(), String::new()),
                })
                .collect();
            (path, o.end.clone())
        })
        .collect();
    v.sort();
    v
}

proptest! {
    /// A chain of patches: a flow carried keeps its handle (naming an
    /// equal flow), a flow removed loses it for good, a flow added
    /// takes a number never given before, and every run reads as a
    /// bridge built from the same flows reads.
    #[test]
    fn patched_flows_keep_their_handles_and_run_as_built(
        flows in prop::collection::vec((any::<u8>(), any::<u8>(), any::<u8>()), 0..12),
        steps in prop::collection::vec(
            prop::collection::vec((0usize..14, proptest::option::of((any::<u8>(), any::<u8>(), any::<u8>()))), 1..4),
            1..5),
    ) {
        let space = Space::new();
        let mut cur: Vec<FlowText> = flows.into_iter().map(flow).collect();
        let mut b = Bridge::new("br", 0, &cur, &[]).unwrap();
        let mut given: std::collections::BTreeSet<u32> = b.handles.iter().copied().collect();
        let key = |f: &FlowText| (f.table, f.priority, f.matches.clone(), f.actions.clone());
        for edits in steps {
            let next: Vec<FlowText> = crate::edited(&cur, edits.into_iter().map(|(at, f)| (at, f.map(flow))).collect());
            let moved = crate::incremental::moves_by(&cur, &next, key);
            let before: Vec<(u32, (u8, u16, String, String))> = b
                .handles
                .iter()
                .map(|&h| (h, key(&b.flow(h).unwrap().text)))
                .collect();
            let old_len = b.at.len() as u32;
            let p = Bridge::patched(&mut b, &next, &[], moved.as_ref()).unwrap();
            let pairs = moved.as_ref().map_or_else(|| (0..cur.len() as u32).map(Some).collect(), Moves::to_vec);
            for (i, j) in pairs.into_iter().enumerate() {
                if let Some(j) = j {
                    prop_assert_eq!(p.handles[j as usize], before[i].0, "a carried flow's handle");
                }
            }
            for (h, k) in before {
                if let Some(f) = p.flow(h) {
                    prop_assert_eq!(key(&f.text), k);
                }
            }
            for (j, &h) in p.handles.iter().enumerate() {
                prop_assert_eq!(p.at[h as usize], j as u32);
                if h >= old_len {
                    prop_assert!(given.insert(h), "handle {} given twice", h);
                }
            }
            let fresh = Bridge::new("br", 0, &next, &[]).unwrap();
            // the tables and their fields as a build reads them
            prop_assert_eq!(&p.tables, &fresh.tables);
            prop_assert_eq!(&p.keys, &fresh.keys);
            let all = Pkt { set: space.all(), over: BTreeMap::new() };
            let (mut a, mut f) = (Vec::new(), Vec::new());
            p.run(&space, &all, 0, &[], true, &mut a);
            fresh.run(&space, &all, 0, &[], true, &mut f);
            prop_assert_eq!(texts(&p, &a), texts(&fresh, &f));
            (b, cur) = (p, next);
        }
    }
}

/// A bridge built again (a pairing it cannot follow) gives no flow a
/// handle the old bridge gave: every path kept from it names a gone flow.
#[test]
fn a_bridge_built_again_keeps_no_handle() {
    let cur: Vec<FlowText> = (0..3).map(|i| flow((i, i, i))).collect();
    let next: Vec<FlowText> = (0..2).map(|i| flow((i, i, i))).collect();
    let mut b = Bridge::new("br", 0, &cur, &[]).unwrap();
    let p = Bridge::patched(&mut b, &next, &[], None).unwrap();
    assert!((0..3).all(|h| p.flow(h).is_none()));
    assert_eq!(p.handles, [3, 4]);
    assert_eq!(p.flow(4).unwrap().text.matches, "tcp,tp_dst=81");
}

/// A carried flow is cited where the new artifacts have it: a line
/// removed above it moves its `file:line`.
#[test]
fn a_patched_bridge_cites_its_flows_where_they_are_now() {
    let at = |fs: &mut Vec<FlowText>| {
        for (i, f) in fs.iter_mut().enumerate() {
            f.at = format!("br.flows:{}", i + 1);
        }
    };
    let mut cur: Vec<FlowText> = (0..3).map(|i| flow((i, i, i))).collect();
    at(&mut cur);
    let mut next = cur[1..].to_vec();
    at(&mut next);
    let mut b = Bridge::new("br", 0, &cur, &[]).unwrap();
    let moved = Moves::listed(vec![None, Some(0), Some(1)], 2);
    let p = Bridge::patched(&mut b, &next, &[], Some(&moved)).unwrap();
    let mut a = crate::artifacts::Artifacts::default();
    a.flows.insert("br".into(), next);
    assert!(p.cite(&a, 0).is_none());
    let f = p.cite(&a, 2).unwrap();
    assert_eq!(
        (f.matches.as_str(), f.at.as_str()),
        ("tcp,tp_dst=82", "br.flows:2")
    );
}
