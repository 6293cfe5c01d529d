//! Tests of the warm session (`super`): changes against from-scratch runs.

use super::*;
use proptest::prelude::*;

fn quickstart() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/quickstart/intent.ndl");
    std::fs::read_to_string(path).expect("examples/quickstart/intent.ndl")
}

fn start(text: &str) -> Warm {
    let file = IntentText {
        name: "intent.ndl".into(),
        text: text.into(),
    };
    Warm::start(vec![file], None).expect("the quickstart intent evaluates")
}

fn fact(w: &Warm, text: &str) -> (RelId, Row) {
    let p = super::super::pattern::parse(text, w.plan()).expect("a fact");
    (p.rel, p.ground().expect("ground"))
}

/// Edits one fact at a time and holds the session to a from-scratch
/// start of the same intent text after each: outputs and the
/// built-in's rows. A fact no placement input depends on does not run
/// the built-in again; one that moves its model does.
#[test]
fn edits_equal_from_scratch_and_place_only_when_the_model_moves() {
    let base = quickstart();
    let mut w = start(&base);
    assert_eq!(w.counters().placements, 1);
    assert!(
        !model_reads_placement(w.plan()),
        "the standard rules' model does not read vip_placement"
    );
    // ... but every relation derived from it does depend on it
    let vp = w.plan().relation_id("vip_placement").unwrap();
    let p4 = w.plan().relation_id("p4_vip");
    let settled = crate::settled::settled(w.plan(), &[vp]);
    assert!(!settled[vp] && p4.is_some_and(|r| !settled[r]));
    let vm = r#"vm("acme", "db2", 02:00:00:00:01:04, 10.1.2.22, "h2")."#;
    let port = r#"vm_port("h2", "acme", "db2", 11)."#;
    let pool = r#"dip_pool(203.0.113.10, 6, 80, "acme", "db2", 8080, 1)."#;
    let steps: [(&str, bool, bool); 5] = [
        // (fact, insert, moves the placement's model)
        (vm, true, false),
        (port, true, false),
        (pool, true, true),
        (pool, false, true),
        (vm, false, false),
    ];
    let mut text_facts: Vec<&str> = Vec::new();
    for (f, insert, moves) in steps {
        let before = w.counters().placements;
        let (rel, row) = fact(&w, f);
        let change = w.edit(rel, row, insert).expect("the edit commits");
        assert!(!change.full);
        if insert {
            text_facts.push(f);
        } else {
            text_facts.retain(|x| *x != f);
        }
        let fresh = start(&format!("{base}\n{}\n", text_facts.join("\n")));
        assert_eq!(w.located(), fresh.located(), "after {f} (insert {insert})");
        assert_eq!(w.placed, fresh.placed, "after {f}");
        let ran = w.counters().placements - before;
        assert_eq!(
            ran,
            u64::from(moves),
            "placement runs after {f} (insert {insert})"
        );
    }
    // retracting what is not there is refused and changes nothing
    let (rel, row) = fact(&w, vm);
    assert!(matches!(
        w.edit(rel, row, false),
        Err(WarmError::NoSuchFact(_))
    ));
}

fn facts() -> impl Strategy<Value = Facts> {
    proptest::collection::btree_map(
        (
            0usize..3,
            proptest::collection::vec((0i64..4).prop_map(Value::Number), 0..3),
        ),
        Just(Origin::Asserted),
        0..24,
    )
}

proptest! {
    /// Applying the difference to `from` gives exactly `to`, with one
    /// change per fact on one side only.
    #[test]
    fn fact_difference_takes_from_to_to(from in facts(), to in facts()) {
        let tx = fact_difference(&from, &to);
        let mut got: BTreeSet<(RelId, Row)> = from.keys().cloned().collect();
        for (rel, row, diff) in &tx.changes {
            let key = (*rel, row.clone());
            match diff {
                crate::engine::Diff::Insert => prop_assert!(got.insert(key)),
                crate::engine::Diff::Delete => prop_assert!(got.remove(&key)),
            }
        }
        let want: BTreeSet<(RelId, Row)> = to.keys().cloned().collect();
        prop_assert_eq!(got, want);
        prop_assert_eq!(holds_relation(&to, 1), to.keys().any(|(r, _)| *r == 1));
    }
}
