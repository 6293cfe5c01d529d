//! `netc lab up|status|stop`: the local OVS lab (runtime/deploy/src/lab/) by hand.
//!
//! `up` does what `netc apply` does when there is no inventory, minus the
//! store: compile the intent (refusing bad intent, exit 1), start or reuse
//! the lab, push each host's flows (one atomic bundle per bridge). `status`
//! lists each host's daemons by pid; `stop` stops them by pid and removes
//! `<state>/lab`. Lab errors (OVS missing, a daemon that will not start, a
//! push a bridge refused) are printed once, here, exit 2.

use super::{evaluate_intent, EvaluatedIntent, Outcome};
use crate::intent;
use crate::lab::{self, LabError, Topology};
use netc_targets::ovs::client::OvsClient;
use std::path::PathBuf;

/// `netc lab` options.
#[derive(clap::Args, Debug)]
#[command(after_help = crate::after_help!(
    concat!(
        "The lab is one ovsdb-server + `ovs-vswitchd --enable-dummy` per host of the intent, under <state>/lab/<host>/,\n",
        "with br-int (vxlan0 = port 1, uplink = port 2, one dummy port vm<N> per vm_port N) and br-phy (the underlay:\n",
        "p0, the host's address in an on-link subnet covering every host, so VXLAN packets really travel host to host).\n",
        "The daemons outlive netc; `netc lab stop` stops them by pid. Nothing outside <state>/lab is touched.\n",
        "On a terminal `lab up` shows a progress bar over the hosts."
    ),
    example: concat!(
        "  netc lab up examples/quickstart/intent.ndl     # start the lab and push the flows (no store)\n",
        "  netc lab status --json                          # hosts, pids, ovs-ofctl switch arguments\n",
        "  ovs-ofctl -O OpenFlow15 dump-flows unix:$PWD/.netc/lab/h1/br-int.mgmt   # ovs-ofctl needs an absolute path\n",
        "  netc lab stop"
    ),
    exit0: "done",
    exit1: "the intent has errors (up; the lab is not changed)",
    exit2: "usage, input or I/O error, OVS missing or a daemon failed",
))]
pub struct LabArgs {
    #[command(subcommand)]
    pub action: LabAction,
    /// State directory (the lab lives in DIR/lab).
    #[arg(long, value_name = "DIR", default_value = ".netc", global = true)]
    pub state: PathBuf,
    /// Print JSON.
    #[arg(long, global = true)]
    pub json: bool,
}

#[derive(clap::Subcommand, Debug)]
pub enum LabAction {
    /// Start (or reuse) the lab for the intent's hosts and push their flows.
    Up {
        /// Intent files (.ndl facts).
        #[arg(required = true)]
        intent: Vec<PathBuf>,
    },
    /// Show each lab host's daemons (pids) and bridge.
    Status,
    /// Stop every lab daemon by pid and remove <state>/lab.
    Stop,
}

pub fn run(a: LabArgs) -> Outcome {
    match a.action {
        LabAction::Up { intent } => up(&intent, &a.state, a.json),
        LabAction::Status => status(&a.state, a.json),
        LabAction::Stop => match lab::stop_all(&a.state) {
            Ok(pids) => {
                if a.json {
                    super::output::emit(serde_json::json!({ "stopped": pids }));
                } else if pids.is_empty() {
                    println!("no lab daemons were running");
                } else {
                    let shown: Vec<String> = pids.iter().map(u32::to_string).collect();
                    println!(
                        "stopped {} lab daemons (pids {})",
                        pids.len(),
                        shown.join(" ")
                    );
                }
                Outcome::Ok
            }
            Err(e) => lab_error(e),
        },
    }
}

/// A lab error at the edge: printed once, exit 2.
pub fn lab_error(e: LabError) -> Outcome {
    Outcome::InputError(e.to_string(), None)
}

fn status(state: &std::path::Path, json: bool) -> Outcome {
    let hosts = match lab::status(state) {
        Ok(h) => h,
        Err(e) => return lab_error(e),
    };
    if json {
        super::output::emit(serde_json::json!({ "hosts": hosts }));
    } else if hosts.is_empty() {
        println!("no lab under {}", state.join("lab").display());
    } else {
        let pid = |p: Option<u32>| p.map(|p| p.to_string()).unwrap_or_else(|| "down".into());
        for h in &hosts {
            println!(
                "{:<12} ovsdb-server {:<8} ovs-vswitchd {:<8} {}",
                h.host,
                pid(h.ovsdb_server),
                pid(h.ovs_vswitchd),
                h.bridge
            );
        }
    }
    Outcome::Ok
}

fn up(files: &[PathBuf], state: &std::path::Path, json: bool) -> Outcome {
    let EvaluatedIntent {
        compilation: c,
        plan,
        engine,
        findings,
    } = match evaluate_intent(files, None, 1) {
        Ok(e) => e,
        Err(outcome) => return outcome,
    };
    if !findings.is_empty() {
        super::output::hold_findings(&findings, &c.sources);
        for f in &findings {
            eprint!("{}", f.render(&c.sources));
        }
        eprintln!(
            "\n{} problem{} in the intent; the lab was not changed",
            findings.len(),
            if findings.len() == 1 { "" } else { "s" }
        );
        return Outcome::ProgramErrors;
    }
    let topo = Topology::from_engine(&plan, &engine);
    let devices = netc_targets::group_by_device(&plan, &intent::located_outputs(&plan), |r| {
        engine.contents(r)
    });
    // render every bridge before touching any: a render error changes nothing
    let mut states = Vec::new();
    for h in &topo.hosts {
        let rows = devices.get(&h.name).cloned().unwrap_or_default();
        match netc_targets::ovs::bridge_state(&h.name, &rows) {
            Ok(s) => states.push((h.name.clone(), s)),
            Err(e) => {
                super::output::hold_message(&format!("{e}; the lab was not changed"));
                eprintln!("error: {e}\nthe lab was not changed");
                return Outcome::ProgramErrors;
            }
        }
    }
    // one step per host started and one per host pushed
    let bar = super::output::bar(2 * topo.hosts.len(), "lab up");
    let step = |what: &str, host: &str| {
        if let Some(b) = &bar {
            b.set_message(format!("{what} {host}"));
            b.inc(1);
        }
    };
    let switches = match lab::ensure_reporting(state, &topo, |h| step("started", h)) {
        Ok(s) => s,
        Err(e) => return lab_error(e),
    };
    let mut pushed = Vec::new();
    for (host, st) in &states {
        step("pushing", host);
        let client = OvsClient::new(host, &switches[host]);
        match client.reconcile(st) {
            Ok(r) => pushed.push(serde_json::json!({
                "host": host,
                "bridge": switches[host],
                "flows": st.sorted_flows().len(),
                "changed": r.changed(),
            })),
            Err(e) => return Outcome::InputError(e.to_string(), None),
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    if json {
        super::output::emit(serde_json::json!({ "hosts": pushed }));
    } else {
        for p in &pushed {
            println!(
                "{:<12} {:>6} flows  {}",
                p["host"].as_str().unwrap_or(""),
                p["flows"],
                p["bridge"].as_str().unwrap_or("")
            );
        }
        eprintln!(
            "lab up: {} host{} under {}; try `netc trace SRC DST tcp/80 --state {}`",
            pushed.len(),
            if pushed.len() == 1 { "" } else { "s" },
            state.join("lab").display(),
            state.display()
        );
    }
    Outcome::Ok
}
