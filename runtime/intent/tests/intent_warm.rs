//! The standard rules in a warm engine: a random sequence of edits (DIP
//! health reports down and back up, DIPs leaving and rejoining their pool,
//! VMs moving to another host) on the Ananta example (a DIP already down,
//! tenant and public VIPs), the Duet example (a two-level VIP with TIPs,
//! Rubik local mappings) and the Andromeda example (Hoverboard and meshed
//! tenants), each commit followed by the strongest oracle there is — every
//! `.output` relation equals what a fresh engine computes from the same base
//! facts. The rules that only some endpoints or tenants need (the ranks of a
//! two-level VIP's DIPs, the live slots of a mapping with a DIP down, the
//! host load balancer's lists, the per-VM routes of meshed tenants) are left
//! unrun by most warm commits (`skip.rs`), so this is where a rule that reads
//! the wrong neighbour would show. The warm engine splits its pieces over
//! three lanes (`lanes.rs`), the fresh one runs them all in one.

use netc_compiler::plan::{Plan, RelId};
use netc_compiler::value::{Row, Value};
use netc_engine::{Engine, Transaction};
use std::path::PathBuf;
use std::sync::Arc;

fn plan(example: &str) -> Arc<Plan> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(example)
        .join("intent.ndl");
    let c = netc_intent::load(&[path], None).expect("the example reads");
    assert!(!c.diagnostics.has_errors(), "{example} does not compile");
    Arc::new(c.plan.expect("a plan"))
}

fn rel(p: &Plan, name: &str) -> RelId {
    p.relation_id(name)
        .unwrap_or_else(|| panic!("no relation {name}"))
}

fn assert_matches_scratch(e: &Engine, context: &str) {
    let mut plan = (**e.plan()).clone();
    plan.facts = (0..plan.relations.len())
        .flat_map(|r| e.base_facts(r).into_iter().map(move |row| (r, row)))
        .collect();
    // One lane: the warm engine runs in three (`Engine::with_lanes`), so
    // a piece decided before another lane handed it its rows would show.
    let fresh = Engine::with_lanes(Arc::new(plan), 1, 1).unwrap();
    for (r, relation) in e.plan().relations.iter().enumerate() {
        if !relation.outputs.is_empty() {
            assert_eq!(
                e.contents(r),
                fresh.contents(r),
                "{context}: relation {}",
                relation.name
            );
        }
    }
}

fn edits(example: &str, steps: usize, seed: u64) {
    let p = plan(example);
    let (pool, health) = (rel(&p, "dip_pool"), rel(&p, "dip_health"));
    let (vm, host) = (rel(&p, "vm"), rel(&p, "host"));
    let mut e = Engine::with_lanes(p.clone(), 1, 3).unwrap();
    // dip_pool(vip, proto, port, tenant, vm, tport, weight)
    let pools: Vec<Row> = e.base_facts(pool);
    let hosts: Vec<Value> = e.base_facts(host).into_iter().map(|h| h[0]).collect();
    assert!(
        hosts.len() >= 2,
        "{example}: too few hosts to move VMs between"
    );
    let mut x = seed;
    let mut next = |n: usize| {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (x >> 33) as usize % n
    };
    for step in 0..steps {
        let mut t = Transaction::new();
        for _ in 0..1 + next(2) {
            // without DIPs (Andromeda), only VMs move
            let what = if pools.is_empty() { 2 } else { next(3) };
            if what == 2 {
                // vm(tenant, name, mac, ip, host): to another host
                let vms = e.base_facts(vm);
                let mut moved = vms[next(vms.len())].clone();
                t.delete(vm, moved.clone());
                moved[4] = hosts
                    [(hosts.iter().position(|h| *h == moved[4]).unwrap_or(0) + 1) % hosts.len()];
                t.insert(vm, moved);
                continue;
            }
            let d = &pools[next(pools.len())];
            if what == 0 {
                // dip_health(tenant, vm, proto, tport, status)
                let report: Row = vec![d[3], d[4], d[1], d[5], Value::sym("down")];
                if e.contains(health, &report) {
                    t.delete(health, report);
                } else {
                    t.insert(health, report);
                }
            } else if e.contains(pool, d) {
                t.delete(pool, d.clone());
            } else {
                t.insert(pool, d.clone());
            }
        }
        e.commit(t).unwrap();
        assert_matches_scratch(&e, &format!("{example}, step {step}"));
    }
}

#[test]
fn ananta_edits_match_from_scratch() {
    edits("ananta", 30, 11);
}

#[test]
fn duet_edits_match_from_scratch() {
    edits("duet", 12, 5);
}

#[test]
fn andromeda_edits_match_from_scratch() {
    edits("andromeda", 20, 3);
}
