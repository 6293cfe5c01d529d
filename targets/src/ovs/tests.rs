//! Unit tests of the OVS target without a switch: rendering, cookies,
//! file round trips, dump parsing and the delta. The real-OVS tests are in
//! `tests/test_ovs_*.py`.

use super::delta::Delta;
use super::dump::{group_marker_cookie, parse_flows, parse_groups, Observed};
use super::text::{flow_cookie, BridgeState};
use super::*;
use netc_compiler::value::Sym;
use proptest::prelude::*;

fn flow_row(t: i64, p: i64, m: &str, a: &str, c: i64) -> Row {
    vec![
        Value::Symbol(Sym::new("h1")),
        Value::Number(t),
        Value::Number(p),
        Value::Symbol(Sym::new(m)),
        Value::Symbol(Sym::new(a)),
        Value::Number(c),
    ]
}

fn rows(flows: Vec<Row>, groups: Vec<Row>) -> DeviceRows {
    let mut d = DeviceRows::new();
    d.insert("ovs_flow".into(), flows);
    d.insert("ovs_group".into(), groups);
    d
}

fn group_row(id: i64, t: &str, b: &str) -> Row {
    vec![
        Value::Symbol(Sym::new("h1")),
        Value::Number(id),
        Value::Symbol(Sym::new(t)),
        Value::Symbol(Sym::new(b)),
    ]
}

#[test]
fn renders_sorted_lines_with_identifying_cookies() {
    let d = rows(
        vec![
            flow_row(30, 100, "ip,reg6=5001,nw_dst=10.1.1.12", "output:1", 2),
            flow_row(0, 0, "", "drop", 1),
            flow_row(30, 200, "ip", "drop", 2),
        ],
        vec![group_row(1000, "all", "bucket=output:10")],
    );
    let a = OvsRenderer.render("h1", &d).unwrap();
    assert_eq!(a[0].path, PathBuf::from("ovs/h1.flows"));
    let lines: Vec<&str> = a[0].contents.lines().collect();
    assert_eq!(lines.len(), 3);
    assert!(
        lines[0].starts_with("table=0,priority=0,cookie=0x01"),
        "{}",
        lines[0]
    );
    assert!(lines[0].ends_with(",actions=drop"));
    assert!(lines[1].starts_with("table=30,priority=200,cookie=0x02"));
    assert!(lines[2].contains(",ip,reg6=5001,nw_dst=10.1.1.12,actions=output:1"));
    assert_eq!(a[1].contents, "group_id=1000,type=all,bucket=output:10\n");
}

#[test]
fn rejects_rows_that_cannot_be_flows() {
    for bad in [
        flow_row(253, 1, "", "drop", 1),
        flow_row(0, 70000, "", "drop", 1),
        flow_row(0, 1, "", "drop", 0),
        flow_row(0, 1, "", " ", 1),
    ] {
        let e = OvsRenderer
            .render("h1", &rows(vec![bad], vec![]))
            .unwrap_err();
        assert_eq!(e.device, "h1");
        assert!(e.message.contains("ovs_flow("), "{}", e.message);
    }
    let e = OvsRenderer
        .render("h1", &rows(vec![], vec![group_row(5, "weird", "")]))
        .unwrap_err();
    assert!(e.message.contains("type `weird`"));
}

#[test]
fn cookie_changes_with_every_part_and_keeps_the_concern() {
    let c = flow_cookie(3, 20, 1000, "ip", "drop");
    assert_eq!(c >> 56, 3);
    assert_ne!(c, flow_cookie(3, 20, 1000, "ip", "resubmit(,30)"));
    assert_ne!(c, flow_cookie(3, 20, 1001, "ip", "drop"));
    assert_ne!(c, flow_cookie(3, 21, 1000, "ip", "drop"));
    assert_ne!(c, flow_cookie(3, 20, 1000, "arp", "drop"));
}

#[test]
fn dump_parsing_reads_cookies_tables_markers_and_groups() {
    let g = Group {
        id: 1000,
        kind: "all".into(),
        buckets: "bucket=output:10".into(),
    };
    let mc = group_marker_cookie(&g);
    let flows = format!(
        "OFPST_FLOW reply (OF1.5) (xid=0x2):\n cookie=0x2, priority=100,tun_id=0x1389,in_port=1 actions=drop\n \
         cookie=0x1, table=10, priority=90,ip actions=resubmit(,15)\n priority=0 actions=NORMAL\n \
         cookie={mc:#x}, table=253, priority=1,metadata=0x3e8 actions=drop\n"
    );
    let mut o = Observed::default();
    parse_flows(&flows, &mut o).unwrap();
    parse_groups(
        "OFPST_GROUP_DESC reply (OF1.5) (xid=0x2):\n group_id=1000,type=all,bucket=bucket_id:0,actions=output:10\n",
        &mut o,
    )
    .unwrap();
    assert_eq!(o.flow_count(), 3);
    assert_eq!(o.flows[&1][0].table, 10);
    assert_eq!(o.flows[&0][0].priority, 0);
    assert_eq!(o.markers.get(&1000), Some(&mc));
    assert!(o.groups.contains(&1000));
    // the intended state = exactly these flows + group: only the foreign flows go
    let mut st = BridgeState::default();
    st.add_group(g).unwrap();
    st.add_flow(Flow {
        table: 0,
        priority: 100,
        matches: "in_port=1,tun_id=5001".into(),
        actions: "drop".into(),
        cookie: 2,
    })
    .unwrap();
    st.add_flow(Flow {
        table: 10,
        priority: 90,
        matches: "ip".into(),
        actions: "resubmit(,15)".into(),
        cookie: 1,
    })
    .unwrap();
    let d = Delta::between(&st, &o);
    assert_eq!(d.del_flows.iter().map(|x| x.0).collect::<Vec<_>>(), vec![0]);
    assert!(d.add_flows.is_empty() && d.add_groups.is_empty() && d.mod_groups.is_empty());
}

fn arb_state() -> impl Strategy<Value = BridgeState> {
    let flow = (0u8..5, 0u16..4, 0u8..4, 0u8..3, 1u8..4);
    let group = (1000u32..1004, 0u8..3);
    (
        proptest::collection::vec(flow, 0..12),
        proptest::collection::vec(group, 0..4),
    )
        .prop_map(|(fs, gs)| {
            let mut st = BridgeState::default();
            for (t, p, m, a, c) in fs {
                let matches = ["", "ip", "arp", "ip,reg6=1"][m as usize].to_string();
                let actions = ["drop", "output:1", "resubmit(,30)"][a as usize].to_string();
                let cookie = flow_cookie(c, t, p, &matches, &actions);
                let _ = st.add_flow(Flow {
                    table: t,
                    priority: p,
                    matches,
                    actions,
                    cookie,
                });
            }
            for (id, b) in gs {
                st.groups.insert(
                    id,
                    Group {
                        id,
                        kind: "all".into(),
                        buckets: ["", "bucket=output:10", "bucket=output:11"][b as usize].into(),
                    },
                );
            }
            st
        })
}

/// What a bridge holding exactly `st` (with markers) would dump.
fn as_observed(st: &BridgeState) -> Observed {
    let mut o = Observed::default();
    for f in st.flows.values() {
        o.flows.entry(f.cookie).or_default().push(dump::SeenFlow {
            cookie: f.cookie,
            table: f.table,
            priority: f.priority,
            text: f.line(),
        });
    }
    for g in st.groups.values() {
        o.groups.insert(g.id);
        o.markers.insert(g.id, group_marker_cookie(g));
    }
    o
}

/// Applies a delta to an observed state the way OVS executes the bundle.
fn apply(o: &Observed, d: &Delta) -> Observed {
    let mut o = o.clone();
    for g in d.add_groups.iter().chain(&d.mod_groups) {
        o.groups.insert(g.id);
    }
    for (c, _) in &d.del_flows {
        o.flows.remove(c);
        o.markers.retain(|_, m| m != c);
    }
    for f in &d.add_flows {
        if f.table == dump::MARKER_TABLE {
            let id: u32 = f.matches.trim_start_matches("metadata=").parse().unwrap();
            o.markers.insert(id, f.cookie);
        } else {
            o.flows.insert(
                f.cookie,
                vec![dump::SeenFlow {
                    cookie: f.cookie,
                    table: f.table,
                    priority: f.priority,
                    text: f.line(),
                }],
            );
        }
    }
    for id in &d.del_groups {
        o.groups.remove(id);
        o.markers.remove(id);
    }
    o
}

proptest! {
    /// From any state to any state: the delta lands exactly on the target,
    /// and a second reconcile has nothing to do.
    #[test]
    fn delta_reaches_the_intended_state(a in arb_state(), b in arb_state()) {
        let from = as_observed(&a);
        let d = Delta::between(&b, &from);
        let after = apply(&from, &d);
        prop_assert_eq!(&after, &as_observed(&b));
        prop_assert!(Delta::between(&b, &after).is_empty());
        // nothing already right was touched
        let same = a.flows.keys().filter(|c| b.flows.contains_key(c)).count();
        prop_assert_eq!(d.add_flows.iter().filter(|f| f.table != dump::MARKER_TABLE).count(), b.flows.len() - same);
    }

    /// The files read back to the same state.
    #[test]
    fn files_round_trip(a in arb_state()) {
        let back = BridgeState::parse(&a.flows_text(), &a.groups_text(), "h").unwrap();
        prop_assert_eq!(back, a);
    }
}

#[test]
fn group_fingerprints_agree_between_netc_text_and_ovs_dumps() {
    use super::dump::{fingerprint, fingerprint_line};
    let ours = "selection_method=hash,fields(ip_src,ip_dst,nw_proto,tcp_src,tcp_dst),bucket=weight:2,actions=mod_dl_dst:02:00:00:00:00:01,set_field:5001->tun_id,set_field:192.168.0.13->tun_dst,output:1,bucket=weight:1,actions=resubmit(,40)";
    let dumped = "group_id=5,type=select,selection_method=hash,fields(ip_src,ip_dst,nw_proto,tcp_src,tcp_dst),bucket=bucket_id:0,weight:2,actions=set_field:02:00:00:00:00:01->eth_dst,set_field:0x1389->tun_id,set_field:192.168.0.13->tun_dst,output:1,bucket=bucket_id:1,actions=resubmit(,40)";
    assert_eq!(fingerprint("select", ours), fingerprint_line(dumped));
    assert_eq!(
        fingerprint("all", "bucket=output:10"),
        fingerprint_line("group_id=1000,type=all,bucket=bucket_id:0,actions=output:10")
    );
    assert_ne!(
        fingerprint("all", "bucket=output:10"),
        fingerprint_line("group_id=1000,type=all,bucket=bucket_id:0,actions=output:11")
    );
    assert_eq!(
        fingerprint("all", ""),
        fingerprint_line("group_id=6,type=all")
    );
}

/// A flow row with columns drawn from small sets, so that duplicates, equal
/// texts of different concerns, bad tables/priorities/concerns, empty
/// actions and non-symbol columns all occur.
fn arb_flow_row() -> impl Strategy<Value = Row> {
    let text = prop::sample::select(vec!["", "ip", "arp", "ip,nw_dst=10.0.0.1", "in_port=2"]);
    let actions = prop::sample::select(vec!["drop", "output:1", "resubmit(,40)", " "]);
    (
        prop::sample::select(vec![0i64, 10, 30, 252, 253, -1]),
        prop::sample::select(vec![0i64, 1, 100, 65535, 65536]),
        text,
        actions,
        prop::sample::select(vec![1i64, 2, 3, 253, 0]),
        0u8..20,
    )
        .prop_map(|(t, p, m, a, c, odd)| {
            let mut row = flow_row(t, p, m, a, c);
            match odd {
                0 => row[3] = Value::Number(7),
                1 => row[2] = Value::Unsigned(p.max(0) as u64),
                2 => row.truncate(5),
                _ => {}
            }
            row
        })
}

/// Only good flow rows, many alike: the path `netc compile` takes.
fn arb_good_flow_row() -> impl Strategy<Value = Row> {
    (
        prop::sample::select(vec![0i64, 10, 30, 252]),
        prop::sample::select(vec![0i64, 1, 100, 65535]),
        prop::sample::select(vec!["", "ip", "arp", "ip,nw_dst=10.0.0.1", "in_port=2"]),
        prop::sample::select(vec!["drop", "output:1", "resubmit(,40)"]),
        prop::sample::select(vec![1i64, 2, 3, 253]),
    )
        .prop_map(|(t, p, m, a, c)| flow_row(t, p, m, a, c))
}

proptest! {
    #[test]
    fn good_flows_from_rows_match_the_bridge_state(flows in prop::collection::vec(arb_good_flow_row(), 0..80)) {
        let st = bridge_state("h1", &rows(flows.clone(), vec![])).unwrap();
        prop_assert_eq!(super::lines::flows_text(&flows), Some(st.flows_text()));
    }

    /// `lines::flows_text` is the `BridgeState` path's `.flows` text
    /// whenever that path succeeds, and declines whenever it fails (the
    /// renderer then reports that path's error).
    #[test]
    fn flows_from_rows_match_the_bridge_state(flows in prop::collection::vec(arb_flow_row(), 0..40)) {
        let d = rows(flows.clone(), vec![]);
        let slow = bridge_state("h1", &d);
        let fast = super::lines::flows_text(&flows);
        match (&slow, &fast) {
            (Ok(st), Some(text)) => prop_assert_eq!(&st.flows_text(), text),
            (Err(_), None) => {}
            _ => prop_assert!(false, "slow {:?} fast {:?}", slow.map(|s| s.flows_text()), fast),
        }
        // The renderer gives what the `BridgeState` path gives.
        let rendered = OvsRenderer.render("h1", &d);
        match slow {
            Ok(st) if st.flows.is_empty() => prop_assert_eq!(rendered.unwrap(), vec![]),
            Ok(st) => prop_assert_eq!(rendered.unwrap()[0].contents.clone(), st.flows_text()),
            Err(e) => prop_assert_eq!(rendered.unwrap_err(), e),
        }
    }
}
