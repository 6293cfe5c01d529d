//! Removing a VIP from the placement and adding it back: the placement half
//! of `netc-bench intent`'s `add_vip` kind.
//!
//! - [`remove`] takes the VIP's spec out of the placement's model *before*
//!   the incremental update removes it (read afterwards it is gone, and the
//!   re-add silently did nothing: the bug behind `outputs_differing` in
//!   earlier results);
//! - [`re_add`] puts the same spec back through the incremental update.
//!
//! Both return the `vip_placement` delta the driver commits.

use netc_runtime::placement::{Delta, Endpoint, Placement, VipChange, VipSpec};

/// A VIP taken out of the placement, with what is needed to put it back.
#[derive(Debug, Clone, PartialEq)]
pub struct Removed {
    pub ep: Endpoint,
    pub spec: VipSpec,
}

/// Removes `ep` (if the placement knows it) and returns its spec and the delta.
pub fn remove(p: &mut Placement, ep: Endpoint) -> Option<(Removed, Delta)> {
    let spec = p.model().vips.get(&ep).cloned()?;
    let delta = p.update(vec![VipChange::Remove(ep)]);
    Some((Removed { ep, spec }, delta))
}

/// Adds a removed VIP back with its original spec.
pub fn re_add(p: &mut Placement, r: Removed) -> Delta {
    p.update(vec![VipChange::Set(r.ep, r.spec)])
}

#[cfg(test)]
mod tests {
    use super::*;
    use netc_compiler::value::Sym;
    use netc_runtime::placement::{EndpointSpec, Fabric, Model, Params};
    use std::collections::BTreeMap;
    use std::net::Ipv4Addr;

    /// Two ToRs under two aggs; `n` VIPs whose table needs fill the
    /// switches so that only some of them fit (the greedy stops).
    fn crowded(n: u32) -> Model {
        let s = Sym::new;
        let mut f = Fabric::default();
        for (name, free) in [
            ("t1", [40, 12, 12]),
            ("t2", [40, 12, 12]),
            ("a1", [30, 9, 9]),
            ("a2", [30, 9, 9]),
        ] {
            f.switches.insert(s(name), free);
        }
        for (a, b) in [("t1", "a1"), ("t1", "a2"), ("t2", "a1"), ("t2", "a2")] {
            f.links.insert((s(a), s(b)), 1000);
            f.links.insert((s(b), s(a)), 1000);
        }
        let mut vips = BTreeMap::new();
        for v in 0..n {
            let tor = if v % 2 == 0 { "t1" } else { "t2" };
            let other = if v % 3 == 0 { "t2" } else { "t1" };
            let members: BTreeMap<Sym, i64> = [(s(tor), 1), (s(other), 1)].into_iter().collect();
            let slots = members.len() as i64;
            vips.insert(
                Ipv4Addr::from(0x6440_0000 + v),
                VipSpec {
                    endpoint: EndpointSpec {
                        need: [2, slots, slots],
                        members,
                    },
                    traffic: BTreeMap::from([(s(tor), 10 + i64::from(v * 37 % 90))]),
                    tips: BTreeMap::new(),
                },
            );
        }
        Model {
            fabric: f,
            vips,
            params: Params::default(),
        }
    }

    /// After every remove/re-add pair the model is the original one and the
    /// placement is the sticky from-scratch run on it (previous = the
    /// placement after the removal), as `Placement::update` defines it.
    #[test]
    fn remove_then_re_add_equals_the_from_scratch_placement() {
        let m = crowded(40);
        let mut p = Placement::compute(m.clone(), &BTreeMap::new());
        assert!(p.stopped_at().is_some(), "the scenario must be crowded");
        let placed_at_start = p.assignment().len();
        let eps: Vec<Endpoint> = m.vips.keys().copied().collect();
        for i in 0..60 {
            let ep = eps[(i * 7) % eps.len()];
            let before = p.assignment().clone();
            let (removed, d1) = remove(&mut p, ep).expect("the VIP is known");
            assert!(!p.model().vips.contains_key(&ep));
            let mut without = m.clone();
            without.vips.remove(&ep);
            assert_eq!(
                p.assignment(),
                Placement::compute(without, &before).assignment()
            );
            assert_eq!(d1.is_empty(), before == *p.assignment());
            let after_removal = p.assignment().clone();
            re_add(&mut p, removed);
            assert_eq!(p.model(), &m, "the re-added VIP has its original spec");
            assert_eq!(
                p.assignment(),
                Placement::compute(m.clone(), &after_removal).assignment()
            );
        }
        // the sticky runs keep as many VIPs placed as the first one here
        assert_eq!(p.assignment().len(), placed_at_start);
    }
}
