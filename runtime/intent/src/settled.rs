//! Which relations a later commit can no longer change: what `netc compile`
//! may write out while the placement is still being computed.
//!
//! After commit 0 only `vip_placement` changes (`Engine::new_one_shot`).
//! A relation is *settled* when no rule chain leads from a changed relation
//! to it: every rule deriving it reads (scans, joins, negates, aggregates)
//! only settled relations. Computed from the plan's rule bodies alone.

use netc_compiler::plan::{Plan, RelId};

/// Per relation: true when no change of the relations `changed` can reach
/// it through the plan's rules.
pub fn settled(plan: &Plan, changed: &[RelId]) -> Vec<bool> {
    let n = plan.relations.len();
    // Readers of each relation: the heads of the rules whose body reads it.
    let mut readers: Vec<Vec<RelId>> = vec![Vec::new(); n];
    for rule in plan.strata.iter().flat_map(|s| &s.rules) {
        for (r, _) in rule.body.reads() {
            readers[r].push(rule.head);
        }
    }
    let mut reached = vec![false; n];
    let mut todo: Vec<RelId> = changed.to_vec();
    while let Some(r) = todo.pop() {
        if r >= n || std::mem::replace(&mut reached[r], true) {
            continue;
        }
        todo.extend(readers[r].iter().copied());
    }
    reached.into_iter().map(|r| !r).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_change_reaches_through_joins_negation_and_aggregates() {
        let c = netc_compiler::compile_text(
            "t.ndl",
            ".decl p(x: number)\n.decl q(x: number)\n.decl a(x: number)\n\
             .decl b(x: number)\n.decl n(x: number)\n.decl g(x: number, c: number)\n\
             .decl free(x: number)\n.decl t(x: number)\n\
             a(x) :- q(x), p(x).\nb(x) :- a(x).\nn(x) :- q(x), !p(x).\n\
             g(x, c) :- q(x), c = count : { p(x) }.\nfree(x) :- q(x).\nt(x) :- free(x).\n",
        );
        assert!(!c.diagnostics.has_errors(), "{:?}", c.diagnostics.items);
        let plan = c.plan.unwrap();
        let p = plan.relation_id("p").unwrap();
        let s = settled(&plan, &[p]);
        let id = |name: &str| plan.relation_id(name).unwrap();
        for name in ["p", "a", "b", "n", "g"] {
            assert!(!s[id(name)], "{name} is reached");
        }
        for name in ["q", "free", "t"] {
            assert!(s[id(name)], "{name} is settled");
        }
    }

    #[test]
    fn in_the_standard_rules_the_host_flows_do_not_wait_for_the_placement() {
        let inputs = crate::rules::rule_inputs(None).unwrap();
        let c = netc_compiler::compile_inputs(&inputs);
        let plan = c.plan.expect("the standard rules compile");
        let vp = plan.relation_id("vip_placement").unwrap();
        let s = settled(&plan, &[vp]);
        let id = |name: &str| plan.relation_id(name).unwrap();
        assert!(s[id("ovs_flow")] && s[id("ovs_group")]);
        assert!(!s[id("p4_vip")] && !s[id("vip_placement")]);
    }
}
