//! Tests of the table invariants in `tables.rs` (AFF-1, AFF-2, AFF-4, CAP-1): unit cases and proptest properties.

use super::aff4::aff4_vm_lookups;
use super::*;
use crate::artifacts::FlowText;
use proptest::prelude::*;

/// A generation whose CAP-1 relations hold these rows (relation,
/// switch and value): few switches and values, so rows repeat and
/// counts move up and down on each.
fn p4_rows(rows: &[(usize, u8)]) -> Artifacts {
    let mut a = Artifacts::default();
    for (j, (k, sw)) in rows.iter().enumerate() {
        let rel = CAP1_RELATIONS[k % CAP1_RELATIONS.len()];
        a.relations
            .entry(rel.to_string())
            .or_default()
            .push(std::sync::Arc::new(Row {
                vals: vec![format!("tor-{}", sw % 3), (sw / 3).to_string()],
                at: format!("f:{j}"),
            }));
    }
    a
}

/// A host flow from small numbers: a SNAT grant of a few (VNI, DIP,
/// ports) or another flow; texts repeat.
fn snat_flow(x: (u8, u8)) -> FlowText {
    let (vni, dip) = (10 + x.0 % 3, x.1 % 4);
    let actions = match x.0 / 3 % 3 {
        0 => "output:1".to_string(),
        _ => format!(
            "ct(commit,table=31,zone={vni},nat(src=100.96.0.1:{}-{}))",
            1000 + u16::from(dip) * 8,
            1007 + u16::from(dip) * 8
        ),
    };
    FlowText {
        table: 30,
        priority: 5,
        matches: format!("ip,reg6={vni},nw_src=10.0.0.{dip}"),
        actions,
        ..FlowText::default()
    }
}

/// Each flow cited at its line, as a file of these flows would be.
fn lines(mut fs: Vec<FlowText>) -> Vec<FlowText> {
    for (i, f) in fs.iter_mut().enumerate() {
        f.at = format!("h.flows:{}", i + 1);
    }
    fs
}

proptest! {
    /// The grants moved by an edit's flow moves (the middle read
    /// again) equal every flow's grants read afresh, cites included.
    #[test]
    fn moved_grants_equal_grants_read_afresh(
        flows in proptest::collection::vec((any::<u8>(), any::<u8>()), 0..12),
        edits in proptest::collection::vec((0usize..14, proptest::option::of((any::<u8>(), any::<u8>()))), 0..4),
    ) {
        let old = lines(flows.into_iter().map(snat_flow).collect());
        let new = lines(crate::edited(&old, edits.into_iter().map(|(at, f)| (at, f.map(snat_flow))).collect()));
        let key = |f: &FlowText| (f.matches.clone(), f.actions.clone());
        let m = crate::incremental::moves_by(&old, &new, key);
        let was = flow_grants_in(&old, 0..old.len());
        prop_assert_eq!(moved_grants(&new, &was, m.as_ref()), flow_grants_in(&new, 0..new.len()));
    }
}

proptest! {
    /// AFF-4's lookups built for the rows' keys only answer every key
    /// the rows name as maps of every VM do (a tenant's last VM's VNI,
    /// the first VM of a (VNI, address)); VMs repeat tenants and keys.
    #[test]
    fn aff4_lookups_answer_as_maps_of_every_vm(
        vms in proptest::collection::vec((0u8..4, 0u8..3, 0u8..4), 0..20),
        ranges in proptest::collection::vec(0u8..5, 0..6),
        snats in proptest::collection::vec((0u8..4, 0u8..5), 0..6),
    ) {
        let mut p = Policy::default();
        for (i, &(t, vni, ip)) in vms.iter().enumerate() {
            p.vms.push(std::sync::Arc::new(crate::policy::Vm {
                tenant: format!("t{t}"),
                name: format!("v{i}"),
                vni: u64::from(vni),
                mac: 0,
                ip: u32::from(ip),
                host: format!("h{i}"),
                port: 1,
                at: String::new(),
            }));
        }
        let mut a = Artifacts::default();
        let row = |vals: Vec<String>| std::sync::Arc::new(Row { vals, at: String::new() });
        for t in &ranges {
            a.relations.entry("agent_snat_range".into()).or_default().push(row(vec![
                "h".into(), format!("t{t}"), "x".into(), "0.0.0.1".into(), "0.0.0.2".into(),
                "1".into(), "2".into(),
            ]));
        }
        for (vni, ip) in &snats {
            a.relations.entry("agent_mux_snat".into()).or_default().push(row(vec![
                "m".into(), "0.0.0.9".into(), "1".into(), "2".into(), vni.to_string(),
                std::net::Ipv4Addr::from(u32::from(*ip)).to_string(), "0.0.0.3".into(),
            ]));
        }
        let every_tenant: BTreeMap<&str, u64> =
            p.vms.iter().map(|v| (v.tenant.as_str(), v.vni)).collect();
        let every_owner = vms_by_addr(&p);
        let (tenants, owners) = aff4_vm_lookups(&a, &p);
        for t in &ranges {
            let t = format!("t{t}");
            prop_assert_eq!(tenants.get(t.as_str()), every_tenant.get(t.as_str()));
        }
        for (vni, ip) in &snats {
            let k = (u64::from(*vni), u32::from(*ip));
            prop_assert_eq!(
                owners.get(&k).map(|v| v.name.as_str()),
                every_owner.get(&k).map(|v| v.name.as_str())
            );
        }
    }
}

proptest! {
    /// The kept table use, moved by an update's rows added and
    /// removed, equals a fresh count of the new generation.
    #[test]
    fn moved_cap_use_equals_a_fresh_count(
        rows in proptest::collection::vec((0usize..5, 0u8..9), 0..30),
        edits in proptest::collection::vec(
            (0usize..40, proptest::option::of((0usize..5, 0u8..9))), 1..6),
    ) {
        let (old, new) = (p4_rows(&rows), p4_rows(&crate::edited(&rows, edits)));
        let mut use_ = cap1_use(&old);
        move_cap_use(&mut use_, &crate::row_moves::RowMoves::every(&old, &new));
        prop_assert_eq!(use_, cap1_use(&new));
    }
}

/// A generation holding one endpoint (100.64.0.2:80/6) on each
/// `(instance, vip relation, member relation)`, with these members.
fn held(on: &[(&str, &str, &str)], members: &[u8]) -> Artifacts {
    let mut a = Artifacts::default();
    let mut push = |rel: &str, vals: Vec<String>| {
        let rows = a.relations.entry(rel.to_string()).or_default();
        let at = format!("{rel}.csv:{}", rows.len() + 1);
        rows.push(std::sync::Arc::new(Row { vals, at }));
    };
    for (inst, vrel, mrel) in on {
        let n = members.len().to_string();
        let row = [inst, "0", "100.64.0.2", "6", "80", n.as_str()];
        push(vrel, row.iter().map(|t| t.to_string()).collect());
        for (i, m) in members.iter().enumerate() {
            let row = [
                inst.to_string(),
                "100.64.0.2".into(),
                "6".into(),
                "80".into(),
                i.to_string(),
                "10".into(),
                format!("10.0.0.{m}"),
            ];
            push(mrel, row.to_vec());
        }
    }
    a
}

#[test]
fn a_switch_newly_holding_a_vip_is_compared_with_what_served_it() {
    let smux = ("smux1", "agent_mux_vip", "agent_mux_member");
    let core = ("core1", "p4_vip", "p4_ecmp_member");
    let agg = ("agg1", "p4_vip", "p4_ecmp_member");
    // on the SMuxes with the DIPs already changed, then back on a
    // switch: the switch chooses as the SMux did — nothing moves
    let (cxs, _) = aff2(&held(&[smux], &[1, 2, 3]), &held(&[smux, core], &[1, 2, 3]));
    assert!(cxs.is_empty(), "{cxs:?}");
    // a switch moving the VIP to another switch with the same vector
    let (cxs, _) = aff2(&held(&[smux, agg], &[1, 2]), &held(&[smux, core], &[1, 2]));
    assert!(cxs.is_empty(), "{cxs:?}");
    // the DIP added while the VIP comes onto the switch: the switch has
    // no connection table, so the SMux's established connections break
    let (cxs, lines) = aff2(&held(&[smux], &[1, 2]), &held(&[smux, core], &[1, 2, 3]));
    assert_eq!(cxs.len(), 1, "{lines:?}");
    assert!(
        cxs[0].summary.contains("`core1` (before: `smux1`)"),
        "{}",
        cxs[0].summary
    );
    assert_eq!(cxs[0].key.as_deref(), Some("100.64.0.2:80/6"));
    // ... and from another switch, the switch is what served it
    let (cxs, _) = aff2(
        &held(&[smux, agg], &[1, 2]),
        &held(&[smux, core], &[1, 2, 3]),
    );
    assert!(
        cxs[0].summary.contains("(before: `agg1`)"),
        "{}",
        cxs[0].summary
    );
    // the SMux alone keeps its connections: a note, no violation
    let (cxs, lines) = aff2(&held(&[smux], &[1, 2]), &held(&[smux], &[1, 2, 3]));
    assert!(
        cxs.is_empty() && lines.iter().any(|l| l.contains("connection table")),
        "{lines:?}"
    );
}
