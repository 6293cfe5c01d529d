//! AFF-1's health probes: every probe a host agent runs aims at a DIP
//! endpoint that host serves (specs/invariants.md §4).
//!
//! Expects the `agent_probe` rows (read from the pushed `host/<h>.json`
//! documents' `probes` when the set has them: host, tenant, VM, address,
//! protocol, target port), the `agent_dip` rows and the policy. Guarantees:
//! [`check`] reports, as AFF-1, each probe that does not aim at a DIP
//! endpoint of its host — with the intent: the VM exists, runs on that
//! host, has that address, and a pool (or Yoda mapping) declares that
//! (protocol, target port) for it (`Policy::dsr`); without it: the host's
//! own `agent_dip` rows name that endpoint. A probe aimed elsewhere reports
//! another endpoint's health, so the Muxes keep a dead DIP in (or drop a
//! live one from) the vector every instance must agree on. A DIP endpoint
//! with no probe at all is not reported here.

use crate::artifacts::Artifacts;
use crate::ofctl::parse_ip;
use crate::policy::{Policy, Vm};
use crate::report::Counterexample;
use std::collections::{BTreeSet, HashMap};
use std::net::Ipv4Addr;

/// The relations [`check`] reads (with the policy's VMs and DIP endpoints).
pub const RELATIONS: [&str; 2] = ["agent_probe", "agent_dip"];

/// Why the probe row `v` (host, tenant, VM, address, protocol, target port)
/// aims at no DIP endpoint of its host, or None when it does.
fn wrong(
    v: &[String],
    policy: &Policy,
    vms: &HashMap<(&str, &str), &Vm>,
    dips: &BTreeSet<&[String]>,
) -> Option<String> {
    let (h, t, vm, ip, proto, tport) = (&v[0], &v[1], &v[2], &v[3], &v[4], &v[5]);
    if !policy.from_intent {
        // the host's own DIP rows: (host, tenant, VM, address, …, proto, …, target port)
        let named = dips.iter().any(|d| {
            d[0] == *h
                && d[1] == *t
                && d[2] == *vm
                && d[3] == *ip
                && d[5] == *proto
                && d[7] == *tport
        });
        return (!named).then(|| format!("host {h} serves no such DIP endpoint (agent_dip)"));
    }
    let Some(x) = vms.get(&(t.as_str(), vm.as_str())) else {
        return Some(format!("the intent has no VM {t}/{vm}"));
    };
    if x.host != *h {
        return Some(format!("{t}/{vm} runs on {}, not on {h}", x.host));
    }
    if parse_ip(ip) != Some(x.ip) {
        return Some(format!("{t}/{vm}'s address is {}", Ipv4Addr::from(x.ip)));
    }
    let (Ok(p), Ok(tp)) = (proto.parse::<u8>(), tport.parse::<u16>()) else {
        return Some("its protocol or target port is not a number".into());
    };
    let declared = policy.dsr.contains(&(t.to_string(), vm.to_string(), p, tp));
    (!declared).then(|| format!("no pool of the intent serves {t}/{vm} at {tport}/{proto}"))
}

/// Every probe that aims at no DIP endpoint of its host, as AFF-1.
pub fn check(a: &Artifacts, policy: &Policy) -> Vec<Counterexample> {
    let probes = a.rows("agent_probe");
    if probes.is_empty() {
        return Vec::new();
    }
    let named: BTreeSet<(&str, &str)> = probes
        .iter()
        .filter(|r| r.vals.len() >= 3)
        .map(|r| (r.vals[1].as_str(), r.vals[2].as_str()))
        .collect();
    let vms: HashMap<(&str, &str), &Vm> = policy
        .vms
        .iter()
        .filter(|v| named.contains(&(v.tenant.as_str(), v.name.as_str())))
        .map(|v| ((v.tenant.as_str(), v.name.as_str()), v.as_ref()))
        .collect();
    let dips: BTreeSet<&[String]> = a
        .rows("agent_dip")
        .iter()
        .filter(|r| r.vals.len() >= 8)
        .map(|r| r.vals.as_slice())
        .collect();
    let mut out = Vec::new();
    for r in probes {
        let v = &r.vals;
        let why = if v.len() < 6 {
            Some("the row has fewer than 6 columns".to_string())
        } else {
            wrong(v, policy, &vms, &dips)
        };
        let Some(why) = why else { continue };
        let at = |i: usize| v.get(i).map_or("?", String::as_str);
        out.push(Counterexample {
            invariant: "AFF-1".into(),
            summary: format!(
                "host {}'s health probe of {}/{} aims at {}:{}/{}: {why} — the DIP's health is read from another endpoint",
                at(0),
                at(1),
                at(2),
                at(3),
                at(5),
                at(4)
            ),
            cites: vec![format!("{}  agent_probe({})", r.at, v.join(", "))],
            ..Counterexample::default()
        });
    }
    out
}
