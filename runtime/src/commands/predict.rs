//! `netc predict`: what the verifier's model says one packet does.
//!
//! Expects an artifact directory (`netc compile … --out DIR`) and a packet
//! (`host=h1,in_port=10,tcp,ip_src=…,ip_dst=…,tp_dst=80`, parsed by
//! `netc_verify::predict::Probe`). Guarantees: prints, per bridge the packet
//! reaches, each path's flows (cookie, `file:line`), group buckets and fate
//! with the rewritten headers — the same model `netc verify` proves the
//! invariants on, so a surprising answer here is a surprising proof there.
//! Exit 0 predicted, 2 input errors (bad packet, unknown host, unreadable or
//! unmodellable artifacts).

use super::Outcome;
use netc_verify::artifacts::Artifacts;
use netc_verify::network::Network;
use netc_verify::policy::Policy;
use netc_verify::predict::{predict, Probe};
use std::path::Path;

pub fn run(artifacts: &Path, packet: &str, json: bool) -> Outcome {
    match run_inner(artifacts, packet, json) {
        Ok(()) => Outcome::Ok,
        Err(o) => o,
    }
}

fn run_inner(dir: &Path, packet: &str, json: bool) -> Result<(), Outcome> {
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
    let policy = Policy::from_artifacts(&artifacts);
    let net = Network::build(&artifacts, &policy)
        .map_err(|e| Outcome::InputError(format!("cannot model the artifacts: {e}"), None))?;
    let p = predict(&net, &policy.underlay, &probe)
        .map_err(|e| Outcome::InputError(e.to_string(), None))?;
    if json {
        super::output::emit(p.to_json());
    } else {
        print!("{}", p.render());
    }
    Ok(())
}
