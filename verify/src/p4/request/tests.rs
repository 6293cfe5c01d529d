//! Tests of the P4Runtime request reader in `request.rs`.

use super::*;

const NOACTION: u32 = 21257015;

fn info() -> P4Info {
    read_p4info("p4info", NETC_P4INFO).unwrap()
}
fn table(info: &P4Info, name: &str) -> u32 {
    *info.tables.iter().find(|(_, t)| t.name == name).unwrap().0
}
fn action(info: &P4Info, name: &str) -> u32 {
    *info.actions.iter().find(|(_, a)| a.name == name).unwrap().0
}
fn decode_text(text: &str, info: &P4Info) -> Result<Vec<Update>, DecodeError> {
    decode("sw.txtpb", &textpb::parse("sw.txtpb", text).unwrap(), info)
}

#[test]
fn reads_every_tables_initial_default_action_as_p4c_writes_it() {
    let info = info();
    let default = |t: &str| {
        info.tables[&table(&info, t)]
            .initial_default
            .clone()
            .unwrap()
    };
    assert_eq!(info.tables.len(), 13);
    assert!(info.tables.values().all(|t| t.initial_default.is_some()));
    // set_config(0): p4c writes the argument at the parameter's full width
    assert_eq!(
        default("switch_config"),
        Action {
            id: action(&info, "set_config"),
            params: vec![(1, 0)]
        }
    );
    for t in ["port_tenant", "tunnel", "route_member", "underlay"] {
        assert_eq!(default(t).id, action(&info, "drop"), "{t}");
    }
    for t in ["port_role", "acl", "mcast", "vip_local", "vip", "route"] {
        assert_eq!(default(t).id, action(&info, "nop"), "{t}");
    }
    for t in ["ecmp", "ecmp_local"] {
        assert_eq!(default(t).id, NOACTION, "{t}");
        let ti = &info.tables[&table(&info, t)];
        assert_eq!(ti.scope(NOACTION), Some(Scope::DefaultOnly), "{t}");
        assert_eq!(
            ti.scope(action(&info, "to_member")),
            Some(Scope::TableAndDefault)
        );
    }
    assert_eq!(info.actions[&NOACTION].name, "NoAction");
}

#[test]
fn a_default_only_action_is_refused_in_an_entry_and_a_member() {
    let info = info();
    let ecmp = table(&info, "ecmp");
    let entry = format!(
        "updates {{ type: INSERT entity {{ table_entry {{ table_id: {ecmp} \
         match {{ field_id: 1 exact {{ value: \"\\n\" }} }} \
         match {{ field_id: 2 exact {{ value: \"\\006\" }} }} \
         match {{ field_id: 3 exact {{ value: \"P\" }} }} \
         match {{ field_id: 4 exact {{ value: \"\\000\" }} }} \
         action {{ action {{ action_id: {NOACTION} }} }} }} }} }}"
    );
    let e = decode_text(&entry, &info).unwrap_err();
    assert!(e.message.contains("DEFAULT_ONLY in table `ecmp`"), "{e}");
    let member = format!(
        "updates {{ type: INSERT entity {{ action_profile_member {{ \
         action_profile_id: 285212673 member_id: 1 action {{ action_id: {NOACTION} }} }} }} }}"
    );
    let e = decode_text(&member, &info).unwrap_err();
    assert!(
        e.message.contains("not an entry action of table `ecmp`"),
        "{e}"
    );
    // the same member with to_member is fine
    let ok = format!(
        "updates {{ type: INSERT entity {{ action_profile_member {{ \
         action_profile_id: 285212673 member_id: 1 action {{ action_id: {} \
         params {{ param_id: 1 value: \"\\001\" }} params {{ param_id: 2 value: \"\\n\" }} }} }} }} }}",
        action(&info, "to_member")
    );
    assert_eq!(decode_text(&ok, &info).unwrap().len(), 1);
}

#[test]
fn a_p4info_whose_default_is_not_a_table_action_is_refused() {
    let bad = NETC_P4INFO.replacen(
        "initial_default_action {\n    action_id: 16777218\n  }",
        "initial_default_action {\n    action_id: 16777228\n  }",
        1,
    );
    assert_ne!(bad, NETC_P4INFO);
    let e = read_p4info("p4info", &bad).unwrap_err();
    assert!(
        e.message.contains("is not an action of table `port_role`"),
        "{e}"
    );
}
