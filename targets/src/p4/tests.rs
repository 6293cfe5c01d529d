//! Unit tests of the P4 target: rows → entities → updates → text, and the
//! errors for rows that do not fit. (Every example's messages are also
//! decoded with the official P4Runtime classes by tests/test_p4_messages.py.)

use super::*;
use crate::DeviceRows;
use netc_compiler::value::{Row, Value};

fn sym(s: &str) -> Value {
    Value::Symbol(netc_compiler::value::Sym::new(s))
}
fn num(n: i64) -> Value {
    Value::Number(n)
}
fn ip(a: [u8; 4]) -> Value {
    Value::Ipv4(u32::from_be_bytes(a))
}

fn rows(list: &[(&str, Row)]) -> DeviceRows {
    let mut d = DeviceRows::new();
    for (r, row) in list {
        d.entry(r.to_string()).or_default().push(row.clone());
    }
    for v in d.values_mut() {
        v.sort();
    }
    d
}

fn duet_rows(dips: &[[u8; 4]]) -> DeviceRows {
    let mut l = vec![(
        "p4_vip",
        vec![
            sym("t1"),
            num(0),
            ip([10, 9, 0, 1]),
            num(6),
            num(80),
            num(dips.len() as i64),
        ],
    )];
    for (i, d) in dips.iter().enumerate() {
        l.push((
            "p4_ecmp_member",
            vec![
                sym("t1"),
                ip([10, 9, 0, 1]),
                num(6),
                num(80),
                num(i as i64),
                num(5001),
                ip(*d),
            ],
        ));
        l.push((
            "p4_tunnel",
            vec![
                sym("t1"),
                num(5001),
                ip(*d),
                ip([192, 168, (i >> 8) as u8, 1u8.wrapping_add(i as u8)]),
                Value::Mac(0x0200_0000_0001 + i as u64),
            ],
        ));
    }
    l.push(("p4_switch_config", vec![sym("t1"), ip([10, 255, 0, 1])]));
    rows(&l)
}

#[test]
fn full_install_puts_members_before_entries_and_modifies_the_default() {
    let text = render_full("t1", &duet_rows(&[[10, 1, 0, 1], [10, 1, 0, 2]])).unwrap();
    let member = text.find("action_profile_member {").unwrap();
    let entry = text.find("action_profile_member_id:").unwrap();
    assert!(member < entry, "{text}");
    assert!(
        text.contains("type: MODIFY\n  entity {\n    table_entry {\n      table_id: 33554433\n"),
        "{text}"
    );
    assert_eq!(
        text.matches("type: INSERT").count(),
        2 + 1 + 2 + 2,
        "{text}"
    );
}

#[test]
fn a_value_wider_than_its_field_names_switch_table_and_row() {
    let mut r = duet_rows(&[[10, 1, 0, 1]]);
    r.get_mut("p4_vip").unwrap()[0][4] = num(70000);
    let e = render_full("t1", &r).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, P4Error::Width { bits: 16, .. }), "{msg}");
    assert!(
        msg.contains("switch `t1`") && msg.contains("table `vip`") && msg.contains("70000"),
        "{msg}"
    );
    assert!(
        msg.contains("p4_vip(t1, 0, 10.9.0.1, 6, 70000, 1)"),
        "{msg}"
    );
}

#[test]
fn negative_and_wrongly_typed_values_are_errors_not_panics() {
    let r = rows(&[("p4_host_port", vec![sym("s"), num(-1)])]);
    assert!(matches!(render_full("s", &r), Err(P4Error::Width { .. })));
    let r = rows(&[("p4_host_port", vec![sym("s"), sym("x")])]);
    assert!(matches!(render_full("s", &r), Err(P4Error::Value { .. })));
    let r = rows(&[("p4_host_port", vec![sym("s")])]);
    assert!(matches!(render_full("s", &r), Err(P4Error::Value { .. })));
    let r = rows(&[("p4_mystery", vec![sym("s")])]);
    assert!(matches!(
        render_full("s", &r),
        Err(P4Error::UnknownRelation { .. })
    ));
}

#[test]
fn same_key_different_action_is_a_conflict() {
    let r = rows(&[
        (
            "p4_vip",
            vec![sym("s"), num(0), ip([10, 9, 0, 1]), num(6), num(80), num(2)],
        ),
        (
            "p4_vip",
            vec![sym("s"), num(0), ip([10, 9, 0, 1]), num(6), num(80), num(3)],
        ),
    ]);
    let e = render_full("s", &r).unwrap_err();
    assert!(matches!(e, P4Error::Conflict { table: "vip", .. }), "{e}");
}

#[test]
fn over_the_tunnel_table_is_a_capacity_error() {
    let dips: Vec<[u8; 4]> = (0..513u32)
        .map(|i| [10, 2, (i >> 8) as u8, i as u8])
        .collect();
    let e = render_full("t1", &duet_rows(&dips)).unwrap_err();
    assert!(matches!(e, P4Error::Capacity { capacity: 512, .. }), "{e}");
    assert!(
        e.to_string().contains("switch `t1`") && e.to_string().contains("tunnel"),
        "{e}"
    );
}

#[test]
fn delta_keeps_member_ids_and_touches_only_what_changed() {
    let old = duet_rows(&[[10, 1, 0, 1], [10, 1, 0, 2]]);
    let mut ids = members::MemberIds::default();
    entries::build("t1", &old, &mut ids).unwrap();
    // replace DIP .1 by .3 in slot 0
    let new = duet_rows(&[[10, 1, 0, 3], [10, 1, 0, 2]]);
    let text = render_delta("t1", &old, &new, &mut ids).unwrap();
    // member .2 keeps id 2; .3 takes the freed id 1 (a member MODIFY), its tunnel is new
    assert_eq!(
        ids.get((schema::ECMP_PROFILE.id, 5001, 0x0a01_0002)),
        Some(2)
    );
    assert_eq!(
        ids.get((schema::ECMP_PROFILE.id, 5001, 0x0a01_0003)),
        Some(1)
    );
    assert_eq!(text.matches("type: MODIFY").count(), 1, "{text}");
    assert_eq!(text.matches("type: INSERT").count(), 1, "{text}");
    assert_eq!(text.matches("type: DELETE").count(), 1, "{text}");
    // nothing changes: no updates
    let same = render_delta("t1", &new, &new, &mut ids).unwrap();
    assert!(!same.contains("updates {"), "{same}");
}

#[test]
fn removing_the_config_resets_the_default_entry() {
    let old = rows(&[("p4_switch_config", vec![sym("s"), ip([10, 0, 0, 1])])]);
    let mut ids = members::MemberIds::default();
    let text = render_delta("s", &old, &DeviceRows::new(), &mut ids).unwrap();
    assert!(
        text.contains("type: MODIFY") && text.contains("is_default_action: true"),
        "{text}"
    );
    assert!(!text.contains("action_id"), "{text}");
}

#[test]
fn acl_wildcards_are_omitted_and_ranges_kept() {
    let r = rows(&[(
        "p4_acl",
        vec![
            sym("s"),
            num(100),
            Value::Prefix4(0, 0),
            Value::Prefix4(0x0a09_0001, 32),
            num(0),
            num(0),
            num(65535),
            sym("drop"),
        ],
    )]);
    let ents = entities("s", &r).unwrap();
    let Entity::Table(t) = &ents[0] else {
        panic!("{ents:?}")
    };
    assert_eq!(
        t.matches,
        vec![(2, entries::Match::Ternary(0x0a09_0001, 0xffff_ffff))]
    );
    assert_eq!(t.priority, 100);
}

#[test]
fn tofino_model_counts_range_expansion_in_tcam_and_flags_overflow() {
    use entries::{Match, TableEntry, Target};
    let acl = |i: u32| {
        Entity::Table(TableEntry {
            table: &schema::ACL,
            matches: vec![
                (2, Match::Ternary(0x0a00_0000 + i as u128, 0xffff_ffff)),
                (4, Match::Range(1, 65534)),
            ],
            priority: 1 + i as i32,
            target: Target::Action(entries::ActionCall {
                spec: &schema::DROP,
                args: vec![],
            }),
            is_default: false,
            source: format!("acl {i}"),
        })
    };
    let few: Vec<Entity> = (0..10).map(acl).collect();
    let u = resources::usage("s", &few, resources::Profile::Tofino);
    let t = u.tables.iter().find(|t| t.table == "acl").unwrap();
    assert_eq!((t.entries, t.hw_entries, t.tcam_blocks), (10, 300, 2)); // 88-bit key: 2 blocks wide, 1 deep
    assert!(u.ok());
    let many: Vec<Entity> = (0..3000).map(acl).collect();
    let u = resources::usage("s", &many, resources::Profile::Tofino);
    let e = resources::check(&u).unwrap_err();
    assert!(
        e.to_string().contains("`tcam`") && e.to_string().contains("switch `s`"),
        "{e}"
    );
}
