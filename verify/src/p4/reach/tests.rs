//! `OuterDst::addresses_in` (`members`), against evaluating a set of
//! outer destinations address by address.

use super::*;
use crate::p4::ingress::PacketIn;

fn probe(a: u32) -> PacketIn {
    PacketIn {
        ingress_port: 0,
        vxlan_vni: None,
        outer_dst: a,
        proto: 0,
        src: 0,
        dst: 0,
        sport: 0,
        dport: 0,
    }
}

/// `members` finds exactly the addresses a set's outer destinations
/// hold, as evaluating the set at each address does: sets of prefixes
/// with holes (what LPM and exact entries carve), on addresses inside,
/// beside and outside them.
#[test]
fn members_are_the_addresses_the_set_holds() {
    let s = Space::new();
    let outer = OuterDst::of(&s);
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x as u32
    };
    for round in 0..200 {
        let base = next() & 0xffff_0000;
        let mut set = s.none();
        for _ in 0..1 + round % 4 {
            let len = 8 + next() % 25;
            let mask = u32::MAX << (32 - len);
            let net = (base | (next() & 0xffff)) & mask;
            set = set.or(&s.masked(Key::OuterDst, u128::from(net), u128::from(mask)));
            let hole = net | (next() & !mask);
            set = set.and_not(&s.eq(Key::OuterDst, u128::from(hole)));
        }
        // the other fields constrained too, as an outcome's set is
        set = set.and(&s.universe()).and(&s.eq(Key::Proto, 6));
        let mut addrs: Vec<u32> = (0..64)
            .map(|i| match i % 3 {
                0 => base | (next() & 0xffff),
                1 => base | (next() & 0xff),
                _ => next(),
            })
            .collect();
        addrs.sort_unstable();
        addrs.dedup();
        let got = outer.addresses_in(&set, &addrs);
        let dsts = outer.destinations(&set);
        let want: Vec<u32> = addrs
            .iter()
            .copied()
            .filter(|a| !set.and(&s.eq(Key::OuterDst, u128::from(*a))).is_false())
            .collect();
        assert_eq!(got, want, "round {round}");
        assert!(want.iter().all(|a| dsts.eval_in(&s.valuation(&probe(*a)))));
    }
}
