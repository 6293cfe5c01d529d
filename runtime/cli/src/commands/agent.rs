//! `netc agent --host H --artifacts DIR [--bridge B] [--health-out FILE]`:
//! the per-host daemon (runtime/deploy/src/agent/). Options map 1:1 onto
//! [`AgentOptions`]; errors are printed once, here, with the host named.
//! `--once` reconciles the bridge and probes once, then exits: 0 when the
//! bridge now matches, 2 with the error otherwise.

use super::Outcome;
use crate::agent::{self, probe::ProbeSettings, AgentOptions};
use std::path::PathBuf;
use std::time::Duration;

/// `netc agent` options.
#[derive(clap::Args, Debug)]
#[command(after_help = crate::after_help!(
    concat!(
        "Reads DIR/ovs/<host>.flows, DIR/ovs/<host>.groups and DIR/host/<host>.json (re-read when they change).\n",
        "Health is written as `dip_health(tenant, vm, proto, port, \"up\"|\"down\").` facts: pass the file to the next `netc compile`.\n",
        "Detection time of a dead DIP <= (--fall + 1) x --interval-ms + --timeout-ms. Stop the daemon with SIGTERM.\n",
        "--json prints {\"host\": ..., \"stopped\": true} when the agent ends cleanly."
    ),
    example: "  netc agent --host h1 --artifacts out --bridge unix:.netc/lab/h1/br-int.mgmt --once --json",
    exit0: "stopped cleanly (--once: the bridge matches)",
    exit1: "(not used)",
    exit2: "usage, input, I/O or device error",
))]
pub struct AgentArgs {
    /// This host's name (the @host of its rows).
    #[arg(long)]
    pub host: String,
    /// The artifact directory `netc compile --out` writes.
    #[arg(long, value_name = "DIR")]
    pub artifacts: PathBuf,
    /// The bridge to keep, as ovs-ofctl names it (e.g. br-int, or unix:/run/openvswitch/br-int.mgmt).
    #[arg(long)]
    pub bridge: Option<String>,
    /// The ovs-ofctl program.
    #[arg(long, default_value = "ovs-ofctl")]
    pub ofctl: PathBuf,
    /// Probe the DIPs of the config document and write dip_health facts to FILE.
    #[arg(long, value_name = "FILE")]
    pub health_out: Option<PathBuf>,
    /// Probe (and artifact check) interval.
    #[arg(long, default_value_t = 1000)]
    pub interval_ms: u64,
    /// Deadline of one TCP connect probe.
    #[arg(long, default_value_t = 500)]
    pub timeout_ms: u64,
    /// Consecutive failed probes before a DIP is down.
    #[arg(long, default_value_t = 3)]
    pub fall: u32,
    /// Consecutive good probes before a down DIP is up again.
    #[arg(long, default_value_t = 2)]
    pub rise: u32,
    /// Reconcile the bridge at least this often, even when nothing changed.
    #[arg(long, default_value_t = 10000)]
    pub resync_ms: u64,
    /// Reconcile and probe once, then exit.
    #[arg(long)]
    pub once: bool,
    /// Stop after this many seconds.
    #[arg(long)]
    pub duration_s: Option<u64>,
    /// Print the ending as JSON (errors too).
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: AgentArgs) -> Outcome {
    if a.bridge.is_none() && a.health_out.is_none() {
        return Outcome::InputError(
            "the agent has nothing to do".into(),
            Some(
                "give --bridge (to keep a bridge's flows) and/or --health-out (to probe DIPs)"
                    .into(),
            ),
        );
    }
    let host = a.host.clone();
    let opts = AgentOptions {
        host: a.host,
        artifacts: a.artifacts,
        bridge: a.bridge,
        ofctl: a.ofctl,
        health_out: a.health_out,
        interval: Duration::from_millis(a.interval_ms.max(10)),
        settings: ProbeSettings {
            timeout: Duration::from_millis(a.timeout_ms.max(1)),
            fall: a.fall.max(1),
            rise: a.rise.max(1),
        },
        resync: Duration::from_millis(a.resync_ms.max(10)),
        once: a.once,
        duration: a.duration_s.map(Duration::from_secs),
    };
    match agent::run(&opts) {
        Ok(()) => {
            if a.json {
                super::output::emit(
                    serde_json::json!({"host": host, "stopped": true, "once": a.once}),
                );
            }
            Outcome::Ok
        }
        Err(e) => Outcome::InputError(e.to_string(), None),
    }
}
