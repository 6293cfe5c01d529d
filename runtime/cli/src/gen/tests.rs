//! Tests of the generator: exact counts per preset, byte determinism, knob
//! validation, and — the property that matters — generated intent is valid:
//! the standard rules derive no `error_*` row, for many seeds and shapes.

use super::*;
use crate::intent;
use proptest::prelude::*;
use std::sync::Arc;

fn bytes(p: &Params) -> Vec<u8> {
    let s = generate(p).expect("valid params");
    let mut out = Vec::new();
    writer::write_all(&s, &mut out).expect("write to memory");
    out
}

#[test]
fn presets_have_the_documented_counts() {
    // (preset, switches, links, hosts, tenants, vms, vips, acls, groups, nf, flows)
    for (preset, sw, links, hosts, tenants, vms, vips, acls, groups, nf, flows) in [
        (Preset::S, 22, 40, 100, 100, 1_000, 300, 400, 10, 2, 1_000),
        (
            Preset::M,
            82,
            288,
            1_000,
            1_000,
            10_000,
            3_000,
            4_000,
            100,
            4,
            10_000,
        ),
        (
            Preset::L,
            502,
            4_200,
            10_000,
            10_000,
            100_000,
            30_000,
            40_000,
            1_000,
            8,
            100_000,
        ),
    ] {
        let s = generate(&Params::preset(preset)).expect("preset is valid");
        let c = s.counts();
        assert_eq!(
            (
                c.switches,
                c.links,
                c.hosts,
                c.tenants,
                c.vms,
                c.vips,
                c.acls,
                c.mcast_groups,
                c.nf_chains,
                c.flows
            ),
            (sw, links, hosts, tenants, vms, vips, acls, groups, nf, flows),
            "{preset:?}"
        );
        assert!(c.dips >= c.vips, "every VIP has at least one DIP");
    }
}

#[test]
fn same_seed_same_bytes_other_seed_other_bytes() {
    let p = Params::preset(Preset::S);
    let a = bytes(&p);
    assert_eq!(a, bytes(&p));
    let q = Params {
        seed: 2,
        ..p.clone()
    };
    assert_ne!(a, bytes(&q));
    // one stream per concern: more ACLs do not move any VM
    let more_acls = Params {
        acls_per_tenant: 9,
        ..p.clone()
    };
    let vms = |p: &Params| {
        let s = generate(p).unwrap();
        s.tenants
            .vms
            .iter()
            .map(|v| (v.ip, v.host))
            .collect::<Vec<_>>()
    };
    assert_eq!(vms(&p), vms(&more_acls));
}

#[test]
fn bad_knobs_name_the_knob() {
    let p = Params::preset(Preset::S);
    for (bad, knob) in [
        (Params { k: 5, ..p.clone() }, "--k"),
        (
            Params {
                hosts: 0,
                ..p.clone()
            },
            "--hosts",
        ),
        (
            Params {
                hosts: 8 * 251,
                ..p.clone()
            },
            "--hosts",
        ),
        (
            Params {
                hoverboards: 0,
                ..p.clone()
            },
            "--hoverboard-pct",
        ),
        (
            Params {
                max_dips: 0,
                ..p.clone()
            },
            "--max-dips",
        ),
        (
            Params {
                vms_per_tenant: 1,
                ..p.clone()
            },
            "--flows",
        ),
    ] {
        match generate(&bad) {
            Err(GenError::BadKnob { knob: k, .. }) => assert_eq!(k, knob),
            other => panic!("expected a bad {knob}, got {other:?}"),
        }
    }
}

#[test]
fn dip_counts_are_heavy_tailed_and_large_pools_get_tips() {
    let p = Params {
        tenants: 20,
        vms_per_tenant: 700,
        hosts: 400,
        k: 8,
        vips: 2_000,
        max_dips: 700,
        flows: 0,
        mcast_groups: 0,
        ..Params::preset(Preset::S)
    };
    let s = generate(&p).unwrap();
    let d: Vec<usize> = s.services.vips.iter().map(|v| v.dips.len()).collect();
    let ones = d.iter().filter(|&&x| x == 1).count();
    let big = d.iter().filter(|&&x| x >= 100).count();
    assert!(
        ones > 800 && ones < 1_200,
        "about half have one DIP: {ones}"
    );
    assert!(big > 0 && big < 60, "about 1% have 100 or more: {big}");
    for v in &s.services.vips {
        assert_eq!(v.tip_range.is_some(), v.dips.len() > services::TUNNEL_TABLE);
    }
}

/// Generates, compiles with the standard rules, and returns the findings.
fn findings_of(p: &Params) -> Vec<String> {
    let s = generate(p).expect("valid params");
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("netc-gen-test-{}-{n}", std::process::id()));
    let w = writer::write_dir(&s, &dir).expect("write");
    let c = intent::load(&w.files, None).expect("rules");
    let errors: Vec<String> = c
        .diagnostics
        .items
        .iter()
        .filter(|d| d.is_error())
        .map(|d| format!("{d:?}"))
        .collect();
    assert!(
        errors.is_empty(),
        "the generated intent does not check: {errors:?}"
    );
    let plan = Arc::new(c.plan.clone().expect("a plan"));
    let engine = intent::evaluate(plan.clone(), 1).expect("evaluate");
    let found = intent::findings::collect(&plan, |r| engine.contents(r));
    let _ = std::fs::remove_dir_all(&dir);
    found.iter().map(|f| f.render(&c.sources)).collect()
}

#[test]
fn a_small_scenario_is_valid_intent() {
    let p = Params {
        k: 4,
        hosts: 12,
        tenants: 6,
        vms_per_tenant: 6,
        vips: 10,
        mcast_groups: 4,
        nf_chains: 2,
        flows: 30,
        ..Params::preset(Preset::S)
    };
    assert_eq!(findings_of(&p), Vec::<String>::new());
}

#[test]
fn a_vip_with_more_dips_than_a_tunnel_table_is_valid_two_level() {
    let base = Params {
        k: 2,
        hosts: 40,
        tenants: 1,
        vms_per_tenant: 600,
        vips: 20,
        max_dips: 600,
        acls_per_tenant: 0,
        mcast_groups: 0,
        nf_chains: 0,
        flows: 0,
        snat_pct: 0,
        ..Params::preset(Preset::S)
    };
    // the first seed (in a bounded search) whose draws give a VIP > 512 DIPs
    let p = (1..=5_000u64)
        .map(|seed| Params {
            seed,
            ..base.clone()
        })
        .find(|p| {
            let s = generate(p).unwrap();
            s.services.vips.iter().any(|v| v.tip_range.is_some())
        })
        .expect("P(d > 512) = 1/513 per VIP: some seed of 5,000 has one");
    assert_eq!(findings_of(&p), Vec::<String>::new());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]
    #[test]
    fn generated_intent_is_valid_for_any_seed_and_shape(
        seed in any::<u64>(),
        k in prop::sample::select(vec![2u32, 4, 6]),
        hosts in 1u32..20,
        tenants in 1u32..6,
        vms in 2u32..9,
        vnets in 1u32..3,
        vips in 0u32..12,
        acls in 0u32..5,
        groups in 0u32..5,
        nf in 0u32..3,
        hoverboard_pct in prop::sample::select(vec![0u32, 50, 100]),
        snat_pct in prop::sample::select(vec![0u32, 50, 100]),
    ) {
        let p = Params {
            seed,
            k,
            hosts: hosts.min(k * (k / 2) * 250),
            tenants,
            vms_per_tenant: vms,
            vnets_per_tenant: vnets,
            vips,
            acls_per_tenant: acls,
            mcast_groups: groups,
            nf_chains: nf,
            hoverboard_pct,
            snat_pct,
            flows: tenants * 2,
            ..Params::preset(Preset::S)
        };
        prop_assert_eq!(findings_of(&p), Vec::<String>::new());
    }
}

/// Generates `p`, drops every fact line starting with one of `without`
/// (to compare with a hand-written intent lacking them), and evaluates it.
fn evaluate_generated(
    p: &Params,
    without: &[&str],
) -> (Arc<netc_compiler::plan::Plan>, crate::engine::Engine) {
    let s = generate(p).expect("valid params");
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("netc-gen-eval-{}-{n}", std::process::id()));
    let w = writer::write_dir(&s, &dir).expect("write");
    for f in &w.files {
        let text = std::fs::read_to_string(f).expect("read back");
        let kept: String = text
            .lines()
            .filter(|l| !without.iter().any(|w| l.starts_with(w)))
            .map(|l| format!("{l}\n"))
            .collect();
        std::fs::write(f, kept).expect("rewrite");
    }
    let c = intent::load(&w.files, None).expect("rules");
    let plan = Arc::new(c.plan.clone().expect("a plan"));
    let engine = intent::evaluate(plan.clone(), 1).expect("evaluate");
    let _ = std::fs::remove_dir_all(&dir);
    (plan, engine)
}

/// The fabric's own underlay routes (`p4_fabric_route`: `p4_underlay`
/// without the /32s of the placed VIPs and TIPs) as (switch, network,
/// length, port).
fn underlay(
    plan: &netc_compiler::plan::Plan,
    e: &crate::engine::Engine,
) -> Vec<(String, u32, u8, i64)> {
    use netc_compiler::value::Value;
    let r = plan
        .relation_id("p4_fabric_route")
        .expect("p4_fabric_route");
    e.contents(r)
        .iter()
        .map(|row| match (&row[0], &row[1], &row[2]) {
            (Value::Symbol(s), Value::Prefix4(a, l), Value::Number(p)) => {
                (s.as_str().to_string(), *a, *l, *p)
            }
            other => panic!("unexpected p4_fabric_route row {other:?}"),
        })
        .collect()
}

#[test]
fn the_underlay_routes_racks_and_reaches_every_host_as_per_host_routes_did() {
    let p = Params {
        k: 4,
        hosts: 20,
        tenants: 2,
        vms_per_tenant: 4,
        vips: 2,
        mcast_groups: 0,
        nf_chains: 0,
        flows: 0,
        ..Params::preset(Preset::S)
    };
    let s = generate(&p).expect("valid params");
    let (plan, racks) = evaluate_generated(&p, &[]);
    let (_, per_host) = evaluate_generated(&p, &["tor_prefix("]);
    let with_racks = underlay(&plan, &racks);
    let reference = underlay(&plan, &per_host);
    let t = &s.topo;
    // one entry per other switch's loopback, per other ToR's rack, per own host
    for (i, sw) in t.switches.iter().enumerate() {
        let is_tor = t.tors.contains(&i);
        let own_hosts = t.hosts.iter().filter(|h| h.tor == i).count();
        let rows = with_racks.iter().filter(|r| r.0 == sw.name).count();
        let expected = (t.switches.len() - 1) + (t.tors.len() - usize::from(is_tor)) + own_hosts;
        assert_eq!(rows, expected, "{}", sw.name);
        // and no host /32 away from the host's ToR
        for h in t.hosts.iter().filter(|h| h.tor != i) {
            assert!(
                !with_racks
                    .iter()
                    .any(|r| r.0 == sw.name && r.1 == h.ip && r.2 == 32),
                "{} holds a /32 for {}",
                sw.name,
                h.name
            );
        }
    }
    // longest-prefix match over the rack routes sends every host's address
    // out of the port its own /32 used without racks
    let lpm = |sw: &str, addr: u32| {
        with_racks
            .iter()
            .filter(|r| r.0 == sw && (r.2 == 0 || (addr ^ r.1) >> (32 - u32::from(r.2)) == 0))
            .max_by_key(|r| r.2)
            .map(|r| r.3)
    };
    let mut checked = 0;
    for r in reference.iter().filter(|r| r.2 == 32) {
        assert_eq!(lpm(&r.0, r.1), Some(r.3), "{} to {:#x}", r.0, r.1);
        checked += 1;
    }
    assert_eq!(checked, reference.len(), "the reference holds only /32s");
    assert!(
        checked > t.switches.len() * t.hosts.len(),
        "every host on every other switch"
    );
}
