//! `netc predict`: what the verifier's model says one packet does.
//!
//! Expects an artifact directory (`netc compile … --out DIR`), a packet
//! (`host=h1,in_port=10,tcp,ip_src=…,ip_dst=…,tp_dst=80` entering a host's
//! bridge, or `host=tor1,in_port=49,tun_id=…,tun_dst=…,…` entering a P4
//! switch; parsed by `netc_verify::predict::Probe`) and optionally the
//! intent files: with them the packet is followed across the fabric as the
//! intent wires it (`link` facts, hosts' ToR ports). Guarantees: prints, per
//! device the packet reaches, each bridge path's flows (cookie, `file:line`),
//! group buckets and fate with the rewritten headers, and each switch hop's
//! entries (`.txtpb` `file:line`) and copies as a switch counterexample
//! prints them — the same model `netc verify` proves the invariants on, so
//! a surprising answer here is a surprising proof there. Exit 0 predicted,
//! 2 input errors (bad packet, unknown device, bad intent, unreadable or
//! unmodellable artifacts).

use super::Outcome;
use netc_verify::artifacts::Artifacts;
use netc_verify::network::Network;
use netc_verify::policy::Policy;
use netc_verify::predict::{predict, Model, Probe};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub fn run(artifacts: &Path, packet: &str, intent: &[PathBuf], json: bool) -> Outcome {
    match run_inner(artifacts, packet, intent, json) {
        Ok(()) => Outcome::Ok,
        Err(o) => o,
    }
}

fn run_inner(dir: &Path, packet: &str, intent: &[PathBuf], json: bool) -> Result<(), Outcome> {
    let probe = Probe::parse(packet).map_err(|e| {
        Outcome::InputError(
            e.to_string(),
            Some(
                "e.g. --packet 'host=h1,in_port=10,tcp,eth_src=02:00:00:00:01:01,ip_src=10.1.1.11,ip_dst=10.1.1.12,tp_dst=80'"
                    .into(),
            ),
        )
    })?;
    let artifacts =
        Artifacts::load(dir).map_err(|e| Outcome::InputError(e.to_string(), e.hint.clone()))?;
    let policy = if intent.is_empty() {
        Policy::from_artifacts(&artifacts)
    } else {
        let ev = super::verify::evaluate(intent, None)?;
        crate::rollout::verdict::policy_of_facts(&crate::rollout::candidate::intent_facts(
            intent, &ev,
        ))
    };
    let net = Network::build(&artifacts, &policy)
        .map_err(|e| Outcome::InputError(format!("cannot model the artifacts: {e}"), None))?;
    let info = netc_verify::p4::p4info().map_err(|e| Outcome::InputError(e.to_string(), None))?;
    let mut switches = BTreeMap::new();
    for (name, text) in &artifacts.switches {
        let sw = netc_verify::p4::build_switch(name, text)
            .map_err(|e| Outcome::InputError(e.to_string(), e.hint.clone()))?;
        switches.insert(name.clone(), sw);
    }
    let model = Model {
        net: &net,
        policy: &policy,
        switches: &switches,
        info: &info,
    };
    let p = predict(&model, &probe).map_err(|e| {
        Outcome::InputError(
            e.to_string(),
            Some("`netc predict --help` describes the packet".into()),
        )
    })?;
    if json {
        super::output::emit(p.to_json());
    } else {
        print!("{}", p.render());
    }
    Ok(())
}
