//! The `netc` binary: argument parsing and dispatch only.
//!
//! Every subcommand lives in `commands/`; this file turns the command line
//! into a call and the call's [`Outcome`] into an exit code. A panic (a bug,
//! never a user's mistake) is reported as an internal error with exit 101
//! instead of a raw backtrace.

mod intent_paths;

use clap::{Parser, Subcommand};
use netc_cli::commands::{self, Outcome};
use std::path::PathBuf;
use std::process::ExitCode;

const EXIT_CODES: &str = "Exit codes (every command; `netc <command> --help` says what each means there):\n  0  success\n  1  the input was understood and the answer is no: program or intent errors, a violation, drift, a failed device\n  2  usage, input, state or I/O error (message and hint on stderr)\n  101  internal error (a bug in netc)\n\nEvery command takes --json: stdout then carries only JSON, failures included ({\"error\": {\"exit\": N, ...}}).";

#[derive(Parser)]
#[command(
    name = "netc",
    version,
    about = "netc — a network configuration compiler: NDlog intent in, device state out",
    long_about = "netc compiles Datalog (NDlog) programs and network intent incrementally on differential dataflow.\n\nStart with `netc run -F facts -D out prog.dl` (Souffle-compatible batch mode) or `netc check prog.dl`.",
    after_help = EXIT_CODES
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Check programs and print diagnostics; evaluate nothing.
    #[command(after_help = netc_cli::after_help!(
        concat!(
        "With --intent the files are network intent, checked with the standard rules and evaluated; bad intent is\n",
        "reported with the facts it cites (file:line:col), as `netc compile` does, and nothing is written.",
    ),
        example: "  netc check prog.dl --dump-after plan\n  netc check --intent examples/quickstart/intent.ndl --json",
        exit0: "no errors (warnings may be printed)",
        exit1: "the program or the intent has errors (diagnostics on stderr)",
        exit2: "usage, input or I/O error (message and hint on stderr)",
    ))]
    Check {
        /// Program files (.dl / .ndl), read in order as one program.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Print the output of a pass on stdout: parse (syntax tree) or plan (the plan IR).
        #[arg(long, value_name = "PASS", value_parser = ["parse", "check", "plan"])]
        dump_after: Option<String>,
        /// The files are network intent: check them with the standard rules and report bad intent.
        #[arg(long)]
        intent: bool,
        /// With --intent: use the .ndl files of DIR instead of the built-in standard rules.
        #[arg(long, value_name = "DIR", requires = "intent")]
        rules: Option<PathBuf>,
        /// Print a JSON summary (relations, rules, strata, facts) or the errors.
        #[arg(long)]
        json: bool,
    },
    /// Evaluate programs like `souffle -F DIR -D DIR`, optionally applying update transactions.
    #[command(after_help = netc_cli::after_help!(
        concat!(
        "Update scripts (--updates): lines `+rel(1, \"a\").` and `-rel(1, \"a\").`, each transaction closed by `commit.`.\n",
        "After each commit the output changes are printed as `+rel(..)` / `-rel(..)` (sorted) followed by `commit N`\n",
        "(with --json: one JSON line per commit, {\"commit\": N, \"changes\": [\"+rel(..)\", ...]}).",
    ),
        example: "  netc run -F facts -D out prog.dl\n  netc run -F facts -D - prog.dl --updates changes.txt --json",
        exit0: "evaluated (and every update applied)",
        exit1: "the program has errors (diagnostics on stderr)",
        exit2: "usage, input or I/O error (message and hint on stderr)",
    ))]
    Run {
        /// Program files (.dl / .ndl), read in order as one program.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Directory of input facts: `.input R` reads DIR/R.facts (tab-separated).
        #[arg(short = 'F', long = "facts", value_name = "DIR", default_value = ".")]
        facts: PathBuf,
        /// Directory for outputs: each `.output R` is written to DIR/R.csv; `-` prints to stdout.
        #[arg(short = 'D', long = "output", value_name = "DIR", default_value = ".")]
        output: String,
        /// Timely worker threads; never changes results. With one, the engine
        /// runs its dataflows on two lanes (threads) when a second core exists
        /// (NETC_ENGINE_LANES=N sets N).
        #[arg(short = 'w', long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=64))]
        workers: u16,
        /// A script of transactions to apply after the initial evaluation.
        #[arg(long, value_name = "SCRIPT")]
        updates: Option<PathBuf>,
        /// Print a JSON summary line (rows per output relation) and one JSON line per commit.
        #[arg(long)]
        json: bool,
    },
    /// Print how the verifier reads a P4Runtime WriteRequest (DIR/p4/<switch>.txtpb), as JSON.
    #[command(
        name = "decode-p4",
        after_help = netc_cli::after_help!(
        concat!(
        "Fields by their P4Runtime names, only those set, bytes as hex; ids checked against p4/netc.p4info.txtpb.\n",
        "The output is always JSON; --json is accepted for symmetry (errors then are JSON too).",
    ),
        example: "  netc decode-p4 out/p4/tor1.txtpb",
        exit0: "printed",
        exit1: "(not used)",
        exit2: "the file does not read or does not fit the P4Info (file:line:col named)",
    )
    )]
    DecodeP4 {
        /// A WriteRequest in protobuf text format.
        file: PathBuf,
        /// Errors as JSON too (the output is JSON anyway).
        #[arg(long)]
        json: bool,
    },
    /// Write the extra entries a Tofino switch (p4/netc_tna.p4) needs: DIR/p4_tna/<switch>.txtpb.
    #[command(after_help = netc_cli::after_help!(
        concat!(
        "netc_tna.p4 computes hash5 % n with lookup tables (Tofino has no run-time `%`); this writes,\n",
        "for every switch of an artifact directory, the WriteRequest that fills them for the vector\n",
        "sizes n its vip/vip_local/route rows use (up to 1,028 entries per n). v1model switches\n",
        "(p4/netc.p4) do not need it. Install DIR/p4_tna/<sw>.txtpb, then DIR/p4/<sw>.txtpb.",
    ),
        example: "  netc compile examples/duet/*.ndl --out out && netc tofino out",
        exit0: "written",
        exit1: "(not used)",
        exit2: "not an artifact directory, a malformed row (file:line named), or an I/O error",
    ))]
    Tofino {
        /// An artifact directory written by `netc compile ... --out DIR`.
        dir: PathBuf,
        /// Print JSON: the switches and the sizes n written for each.
        #[arg(long)]
        json: bool,
    },
    /// Each switch's table use against a capacity model (Duet: host 16K, ECMP 4K, tunnel 512; or Tofino stages/SRAM/TCAM).
    #[command(after_help = netc_cli::after_help!(
        "Counts each switch's table entries from the compiled intent and compares them with the profile's limits.",
        example: "  netc capacity examples/quickstart/intent.ndl --profile tofino --json",
        exit0: "every switch fits",
        exit1: "a switch is over capacity, or a row does not fit p4/netc.p4",
        exit2: "usage, input or I/O error (message and hint on stderr)",
    ))]
    Capacity {
        /// Intent files (.ndl facts).
        #[arg(required = true)]
        intent: Vec<PathBuf>,
        /// Capacity model: duet or tofino.
        #[arg(long, default_value = "duet")]
        profile: String,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Use the .ndl files of DIR instead of the standard rules built into netc.
        #[arg(long, value_name = "DIR")]
        rules: Option<PathBuf>,
    },
    /// Compile network intent with the standard rules into per-device artifacts.
    #[command(after_help = netc_cli::after_help!(
        concat!(
        "Writes DIR/relations/<relation>.csv for every located output relation (tab-separated, sorted) and each\n",
        "device's artifacts (DIR/ovs, DIR/p4, DIR/host). Bad intent (any error_* relation non-empty) is reported\n",
        "with the facts it cites (file:line:col); nothing is written. A progress spinner shows the stage on a terminal.",
    ),
        example: "  netc compile examples/quickstart/intent.ndl --out out --json",
        exit0: "compiled and written",
        exit1: "the program or the intent has errors (nothing written)",
        exit2: "usage, input or I/O error (message and hint on stderr)",
    ))]
    Compile {
        /// Intent files (.ndl facts), e.g. examples/quickstart/intent.ndl.
        #[arg(required = true)]
        intent: Vec<PathBuf>,
        /// Output directory (replaced as a whole).
        #[arg(short, long, value_name = "DIR")]
        out: PathBuf,
        /// Use the .ndl files of DIR instead of the standard rules built into netc.
        #[arg(long, value_name = "DIR")]
        rules: Option<PathBuf>,
        /// Timely worker threads; never changes results [default: the available cores, at most 4].
        /// With one, the engine runs its dataflows on two lanes (threads) when a second core exists.
        #[arg(short = 'w', long, value_parser = clap::value_parser!(u16).range(1..=64))]
        workers: Option<u16>,
        /// Print a JSON summary (files, relations, artifacts) or the errors.
        #[arg(long)]
        json: bool,
        /// Print the wall and CPU time of each phase on stderr (load, build the dataflow, evaluate the rules,
        /// placement, its commit, findings, release, write outputs with its parts); with --json, in the JSON too.
        #[arg(long)]
        timings: bool,
    },
    /// Generate a deterministic intent scenario (fat tree, tenants, VMs, VIPs, ACLs, multicast, NFs, traffic).
    #[command(after_help = netc_cli::after_help!(
        concat!(
        "Presets (docs/gen.md): S = 1,000 VMs / 100 hosts / 100 tenants / 300 VIPs (k=4);\n",
        "M = 10,000 VMs / 1,000 hosts / 1,000 tenants / 3,000 VIPs (k=8);\n",
        "L = 100,000 VMs / 10,000 hosts / 10,000 tenants / 30,000 VIPs (k=20, 50 hosts per ToR).\n",
        "Knobs override the preset. The same seed and knobs give the same bytes on every machine.\n",
        "--json prints the counts as JSON (not with --out -, where stdout is the facts).",
    ),
        example: "  netc gen --preset S --seed 7 --out scen/ && netc compile scen/*.ndl --out out/",
        exit0: "written",
        exit1: "(not used)",
        exit2: "a knob out of range, or an I/O error (nothing written)",
    ))]
    Gen {
        /// Scenario size: S, M or L.
        #[arg(long, default_value = "S", value_parser = clap::value_parser!(netc_cli::gen::Preset))]
        preset: netc_cli::gen::Preset,
        /// Output: a FILE (all facts), a DIR (existing, or ending in `/`: topology/tenants/services/policy.ndl), or `-` for stdout.
        #[arg(short, long, value_name = "FILE|DIR")]
        out: PathBuf,
        #[command(flatten)]
        knobs: netc_cli::commands::gen::Knobs,
        /// Print the scenario's counts as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Prove isolation and affinity on the artifacts that will be pushed (specs/invariants.md).
    #[command(after_help = netc_cli::after_help!(
        concat!(
        "`netc verify INTENT...` compiles, then verifies; `--artifacts DIR [INTENT...]` verifies a directory written by `netc compile`\n",
        "(against the intent when given, else against the host agents' rows). `--against OLD` (a previous artifact directory, or a\n",
        "generation number of the store: `--against 3 --state .netc`) adds AFF-2 and PLAN-1.\n\n",
        "Incremental: `--since OLD` verifies the previous generation OLD in full, then re-verifies only what the change to DIR can\n",
        "affect (per sending VM, by what its traces read); the report is DIR's and equals a full verification of DIR. OLD's policy\n",
        "comes from `--since-intent FILE...` (the intent OLD was compiled from), else from the same intent, else from OLD's agent rows.\n",
        "`stats.incremental` (JSON) says how many VMs were re-checked and how long the update took.\n",
        "On a terminal a spinner shows the stage (compiling, verifying).",
        ),
        example: "  netc verify examples/quickstart/intent.ndl\n  netc verify --artifacts out --json --junit verify.xml examples/quickstart/intent.ndl\n  netc verify --artifacts new --since old --since-intent old.ndl new.ndl",
        exit0: "proven",
        exit1: "an invariant is violated (counterexamples printed)",
        exit2: "usage, input or I/O error (message and hint on stderr)",
    ))]
    Verify {
        /// Intent files (.ndl facts).
        intent: Vec<PathBuf>,
        /// Verify this artifact directory instead of compiling the intent.
        #[arg(long, value_name = "DIR")]
        artifacts: Option<PathBuf>,
        /// A previous generation — an artifact directory, or a generation number in the store (--state): also check AFF-2 and PLAN-1.
        #[arg(long, value_name = "DIR|GEN")]
        against: Option<PathBuf>,
        /// The state directory of `--against GEN` (default .netc).
        #[arg(long, value_name = "DIR")]
        state: Option<PathBuf>,
        /// Verify the previous generation DIR first, then only what changed from it (needs --artifacts).
        #[arg(long, value_name = "DIR", requires = "artifacts")]
        since: Option<PathBuf>,
        /// The intent the --since generation was compiled from (its policy).
        #[arg(long, value_name = "FILE", requires = "since")]
        since_intent: Vec<PathBuf>,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
        /// Write a JUnit XML report (one test case per invariant).
        #[arg(long, value_name = "FILE")]
        junit: Option<PathBuf>,
        /// Write the counterexample packets as a pcap (Scapy: rdpcap / sendp).
        #[arg(long, value_name = "FILE")]
        pcap: Option<PathBuf>,
        /// Use the .ndl files of DIR instead of the standard rules built into netc.
        #[arg(long, value_name = "DIR")]
        rules: Option<PathBuf>,
        /// Counterexamples shown per invariant (violations are all counted).
        #[arg(long, default_value_t = 3)]
        limit: usize,
    },
    /// Show what the verifier's model predicts one packet does, device by device (a debugging aid).
    #[command(after_help = netc_cli::after_help!(
        concat!(
        "The packet: comma-separated key=value (ovs-fields(7) names): host= (the bridge) and in_port= (the VM's OpenFlow port,\n",
        "or 1 with tun_id= for a packet arriving by VXLAN), then headers: eth_src eth_dst eth_type ip_src ip_dst proto tp_src tp_dst\n",
        "arp_op arp_spa arp_tpa arp_sha arp_tha, and the shorthands ip tcp udp icmp arp. Unset headers are 0 (tp_src 40000).\n\n",
        "The same packet enters a P4 switch: host= names the switch, in_port= its port, and a VXLAN packet gives tun_id= (its\n",
        "VNI) and tun_dst= (its outer destination); the headers are the inner frame's. A switch counterexample's packet line\n",
        "(in_port=…,outer_nw_dst=…,vxlan_vni=…) reads as is after host=SWITCH.\n\n",
        "Printed per bridge the packet reaches: every path's flows (table, priority, cookie, file:line), group buckets, and its\n",
        "fate (output port, tunnel tun_id/tun_dst, uplink, drop and why) with the rewritten headers; per switch: its hop as a\n",
        "counterexample prints it (the entries matched, file:line, and the fate) and where each copy goes. A select group's\n",
        "buckets are alternatives (the model does not compute OVS's hash): each path names the bucket it assumes; a switch's\n",
        "hash is computed. With INTENT files the packet crosses the fabric as the intent wires it: a bridge's tunnel and uplink\n",
        "packets enter its host's ToR port, a switch port leads over its link to the next switch or to the attached host's\n",
        "bridge. Without them a tunnel goes straight to the bridge owning tun_dst. The model is the one `netc verify` proves on;\n",
        "tests/test_verify_agrees_ovs.py checks it against real OVS's ofproto/trace.",
    ),
        example: "  netc compile examples/quickstart/intent.ndl --out out\n  netc predict --artifacts out --packet 'host=h1,in_port=10,tcp,eth_src=02:00:00:00:01:01,eth_dst=fe:ff:ff:ff:ff:ff,ip_src=10.1.1.11,ip_dst=10.1.1.12,tp_dst=80'\n  netc predict --artifacts out examples/quickstart/intent.ndl --packet 'host=agg1,in_port=3,tcp,ip_src=198.51.100.7,ip_dst=203.0.113.10,tp_dst=80'",
        exit0: "predicted",
        exit1: "(not used)",
        exit2: "usage, input or I/O error (bad packet, unknown device, bad intent, unreadable artifacts)",
    ))]
    Predict {
        /// Intent files (.ndl facts): follow the packet across the fabric as they wire it.
        intent: Vec<PathBuf>,
        /// The artifact directory written by `netc compile --out DIR`.
        #[arg(long, value_name = "DIR", required = true)]
        artifacts: PathBuf,
        /// The packet, e.g. 'host=h1,in_port=10,tcp,ip_src=10.1.1.11,ip_dst=10.1.1.12,tp_dst=80' (host=: a bridge or a switch).
        #[arg(long, value_name = "FIELDS", required = true)]
        packet: String,
        /// Print the prediction as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print the program in another engine's language (Souffle), for cross-checking.
    #[command(after_help = netc_cli::after_help!(
        concat!(
        "Network types are encoded as numbers (ipv4, mac: unsigned; prefix4: network << 8 | length; ipv6: symbols);\n",
        "hash5 and text-to-address conversions become @netc_* user-defined functors.\n",
        "--json prints {\"souffle\": PROGRAM, \"facts_out\": DIR|null}.",
    ),
        example: "  netc export --souffle prog.dl -F facts --facts-out facts.souffle > prog.souffle.dl",
        exit0: "printed",
        exit1: "the program has errors or no Souffle equivalent",
        exit2: "usage, input or I/O error (message and hint on stderr)",
    ))]
    Export {
        /// Emit Souffle (the only format so far).
        #[arg(long, required = true)]
        souffle: bool,
        /// Program files (.dl / .ndl).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Directory of the program's input facts, re-encoded into --facts-out.
        #[arg(
            short = 'F',
            long = "facts",
            value_name = "DIR",
            requires = "facts_out"
        )]
        facts: Option<PathBuf>,
        /// Write the re-encoded input facts here.
        #[arg(long, value_name = "DIR")]
        facts_out: Option<PathBuf>,
        /// Print the program inside a JSON document.
        #[arg(long)]
        json: bool,
    },
    /// A daemon that keeps the intent warm: HTTP+JSON plan/apply/verify/query and a stream of per-device deltas.
    Serve(commands::serve::ServeArgs),
    /// A prompt over the warm intent: queries, :assert/:retract, :whatif, :explain, :plan.
    Repl(commands::repl::ReplArgs),
    /// Show what `netc apply` would change on each device, and verify it; touches no device.
    #[command(after_help = netc_cli::after_help!(
        concat!(
        "Compiles the intent, diffs each device's artifacts against the last applied generation of the state\n",
        "directory (--state, default .netc/), prints per-device +adds -removes (the entries with -v), and runs\n",
        "the verifier (with AFF-2 against the last generation).",
    ),
        example: "  netc plan -v examples/quickstart/intent.ndl",
        exit0: "the change verifies",
        exit1: "bad intent or a violation",
        exit2: "usage, input or state error (message and hint on stderr)",
    ))]
    Plan {
        /// Intent files (.ndl facts).
        #[arg(required = true)]
        intent: Vec<PathBuf>,
        /// List the entries added and removed, not only their counts.
        #[arg(short, long)]
        verbose: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
        /// The state directory.
        #[arg(long, value_name = "DIR")]
        state: Option<PathBuf>,
        /// Use the .ndl files of DIR instead of the standard rules built into netc.
        #[arg(long, value_name = "DIR")]
        rules: Option<PathBuf>,
        /// Send the intent to a running `netc serve` at URL (http://HOST:PORT) instead of compiling here;
        /// the same output and exit codes (2 also: daemon unreachable, token refused, another netc version).
        #[arg(long, value_name = "URL", conflicts_with_all = ["rules"])]
        server: Option<String>,
        /// With --server: the file holding the daemon's token (default: $NETC_TOKEN, else STATE/serve.token).
        #[arg(long, value_name = "FILE", requires = "server")]
        token_file: Option<PathBuf>,
        #[command(flatten)]
        waivers: commands::staged::WaiverArgs,
    },
    /// Plan, verify, push every device atomically, and record the generation.
    #[command(after_help = netc_cli::after_help!(
        concat!(
        "Refuses (exit 1, nothing pushed) when the verifier finds a violation, unless --force (recorded).\n",
        "Each device gets its complete intended state in one atomic step (OVS: one bundle; P4Runtime: all or\n",
        "nothing; agent: files renamed into place); if a device fails, the devices already changed are put back to\n",
        "the last generation, nothing is committed, and the error names the device and the reason.\n",
        "On a terminal a progress bar shows the devices pushed.\n\n",
        "A change that would move established connections of a VIP a switch holds (AFF-2: DIPs added or\n",
        "removed) is applied in three stages, each verified and committed as a generation (Duet §2.5): the\n",
        "VIP is withdrawn to the SMuxes, its DIPs change there, and after --drain it returns to a switch.\n",
        "`netc plan` shows the stages; --accept AFF-2:KEY --reason TEXT makes the change at once instead.\n\n",
        "Inventory (--inventory FILE, TOML; without it, the local lab):\n",
        "  [ovs]\n  h1 = \"unix:/run/openvswitch/br-int.mgmt\"   # ovs-ofctl switch argument\n",
        "  [p4.tor1]\n  address = \"10.0.0.1:9559\"\n  device_id = 1\n",
        "  device_config = \"netc.bin\"   # optional: sent with netc.p4's P4Info to a switch with no pipeline\n",
        "  [agent]\n  h2 = \"/var/lib/netc/h2\"   # the directory `netc agent --artifacts` watches\n",
        "  [defaults]   # optional: ofctl, python, p4client, timeout_secs",
    ),
        example: "  netc apply examples/quickstart/intent.ndl && netc trace web1 web2\n  netc apply --inventory inv.toml intent.ndl && netc status",
        exit0: "applied (or nothing to change)",
        exit1: "bad intent, refused by the verifier, or a device failed (devices put back)",
        exit2: "usage, input or state error (message and hint on stderr)",
    ))]
    Apply {
        /// Intent files (.ndl facts).
        #[arg(required = true)]
        intent: Vec<PathBuf>,
        /// How to reach each device (TOML; see below).
        #[arg(long, value_name = "FILE")]
        inventory: Option<PathBuf>,
        /// Apply even if the verifier finds a violation (recorded with the generation).
        #[arg(long)]
        force: bool,
        /// In a staged change, how long connections the SMuxes pinned before its DIPs changed may
        /// last: apply waits this long before the VIPs return to the switches (e.g. 300s, 5m, 0).
        #[arg(long, value_name = "DURATION", default_value = "300s", value_parser = commands::stages::parse_drain)]
        drain: std::time::Duration,
        /// List the entries added and removed.
        #[arg(short, long)]
        verbose: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
        /// The state directory.
        #[arg(long, value_name = "DIR")]
        state: Option<PathBuf>,
        /// Use the .ndl files of DIR instead of the standard rules built into netc.
        #[arg(long, value_name = "DIR")]
        rules: Option<PathBuf>,
        /// Send the intent to a running `netc serve` at URL (http://HOST:PORT) instead of compiling here;
        /// the same output and exit codes (2 also: daemon unreachable, token refused, another netc version).
        #[arg(long, value_name = "URL", conflicts_with_all = ["rules", "inventory"])]
        server: Option<String>,
        /// With --server: the file holding the daemon's token (default: $NETC_TOKEN, else STATE/serve.token).
        #[arg(long, value_name = "FILE", requires = "server")]
        token_file: Option<PathBuf>,
        #[command(flatten)]
        waivers: commands::staged::WaiverArgs,
    },
    /// Re-push a stored generation (default: the one before the last), recorded as a new generation.
    #[command(after_help = netc_cli::after_help!(
        concat!(
        "The generation's stored artifacts are verified again, pushed as `netc apply` pushes, and committed with\n",
        "the note `rollback to GEN`. Devices: --inventory FILE, else the routes the last generation used.",
    ),
        example: "  netc history && netc rollback 3",
        exit0: "done",
        exit1: "refused by the verifier or a device failed (devices put back)",
        exit2: "usage, input or state error (message and hint on stderr)",
    ))]
    Rollback {
        /// The generation to return to (`netc history` lists them).
        generation: Option<i64>,
        #[arg(long, value_name = "FILE")]
        inventory: Option<PathBuf>,
        /// Roll back even if the generation does not verify (recorded).
        #[arg(long)]
        force: bool,
        /// As `apply --drain`: in a staged rollback, the wait before the VIPs return to the switches.
        #[arg(long, value_name = "DURATION", default_value = "300s", value_parser = commands::stages::parse_drain)]
        drain: std::time::Duration,
        #[arg(short, long)]
        verbose: bool,
        #[arg(long)]
        json: bool,
        #[arg(long, value_name = "DIR")]
        state: Option<PathBuf>,
        #[command(flatten)]
        waivers: commands::staged::WaiverArgs,
    },
    /// The last generation, and whether each device still holds it (a reconcile dry run).
    #[command(after_help = netc_cli::after_help!(
        concat!(
        "Devices: --inventory FILE, else the routes the last generation used. OVS bridges are dumped and diffed by\n",
        "cookie and by what each flow does (match, priority, actions; groups by buckets), so a flow edited in place\n",
        "is drift; agent directories compared file by file; P4Runtime switches read and compared (a missing pipeline\n",
        "counts; another program's is an error). -v lists each drifted entry (table, match, expected, found);\n",
        "--json gives each device's drift count and its entries.",
    ),
        example: "  netc status -v",
        exit0: "every device in sync",
        exit1: "drift, an unreachable device, a P4 switch running another program, or an interrupted apply",
        exit2: "usage, input or state error (message and hint on stderr)",
    ))]
    Status {
        #[arg(long, value_name = "FILE")]
        inventory: Option<PathBuf>,
        /// List each drifted entry: table, match, expected and found.
        #[arg(short, long)]
        verbose: bool,
        #[arg(long)]
        json: bool,
        #[arg(long, value_name = "DIR")]
        state: Option<PathBuf>,
    },
    /// Every generation applied: id, time, who, verdict, forced, files.
    #[command(after_help = netc_cli::after_help!(
        "Reads the generation store (--state, default .netc/); touches no device.",
        example: "  netc history --json",
        exit0: "listed",
        exit1: "(not used)",
        exit2: "usage, input or state error (message and hint on stderr)",
    ))]
    History {
        #[arg(long)]
        json: bool,
        #[arg(long, value_name = "DIR")]
        state: Option<PathBuf>,
    },
    /// Per-device adds and removes between two stored generations.
    #[command(after_help = netc_cli::after_help!(
        "Compares the per-device artifacts the store recorded for the two generations; touches no device.",
        example: "  netc diff 3 4 -v",
        exit0: "printed",
        exit1: "(not used)",
        exit2: "usage, an unknown generation, or a state error",
    ))]
    Diff {
        from: i64,
        to: i64,
        #[arg(short, long)]
        verbose: bool,
        #[arg(long)]
        json: bool,
        #[arg(long, value_name = "DIR")]
        state: Option<PathBuf>,
    },
    /// The per-host agent: keeps the host's OVS bridge equal to its compiled flows, reports DIP health as facts.
    Agent(commands::agent::AgentArgs),
    /// The local OVS lab (one ovs-vswitchd per host of the intent): up, status, stop.
    Lab(commands::lab::LabArgs),
    /// Show a packet's path and fate through the lab's real bridges, host by host.
    Trace(commands::trace::TraceArgs),
}

/// mimalloc, not glibc's malloc. Why: a warm engine at L holds ~10 GB in
/// millions of small blocks, and after the from-scratch evaluation glibc's
/// `_int_malloc`/`_int_free`/`malloc_consolidate` walking that fragmented
/// heap were ~20% of a change's CPU (`perf`, docs/performance.md); with
/// mimalloc the L p50s fell 35-47%.
// A failed allocation exits 2 saying how much was needed (`netc_intent::oom`).
#[global_allocator]
static GLOBAL: netc_intent::oom::Guarded<mimalloc::MiMalloc> =
    netc_intent::oom::Guarded(mimalloc::MiMalloc);

fn main() -> ExitCode {
    // A file size limit (`ulimit -f`) makes a write fail with EFBIG, which
    // netc reports, instead of killing it with SIGXFSZ mid-apply.
    #[cfg(unix)]
    // SAFETY: setting a signal's disposition to SIG_IGN before any thread starts.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
    std::panic::set_hook(Box::new(|info| {
        eprintln!("internal error: {info}\nThis is a bug in netc, not in your input; please report it with the command you ran.");
    }));
    let mut cli = Cli::parse();
    if !matches!(cli.command, Command::Serve(_) | Command::Agent(_)) {
        // `netc status | head -1` ends quietly, as `ls` does, not with a panic
        // in println!; the daemons keep ignoring it (their sockets get EPIPE).
        // SAFETY: setting a signal's disposition before any thread starts.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        }
    }
    commands::output::set_json(cli.command.json());
    if let Err(o) = cli.command.expand_intent_dirs() {
        return o.exit();
    }
    let outcome = std::panic::catch_unwind(|| dispatch(cli)).unwrap_or(Outcome::InputError(
        "internal error (see above)".into(),
        None,
    ));
    match outcome {
        Outcome::InputError(ref m, _) if m.starts_with("internal error") => {
            if commands::output::json() {
                if let Some(doc) = commands::output::failure(101, Some(m), None) {
                    commands::output::emit(doc);
                }
            }
            ExitCode::from(101)
        }
        o => o.exit(),
    }
}

impl Command {
    /// Whether `--json` was given: every command has it.
    fn json(&self) -> bool {
        match self {
            Command::Check { json, .. }
            | Command::Run { json, .. }
            | Command::DecodeP4 { json, .. }
            | Command::Tofino { json, .. }
            | Command::Capacity { json, .. }
            | Command::Compile { json, .. }
            | Command::Gen { json, .. }
            | Command::Verify { json, .. }
            | Command::Predict { json, .. }
            | Command::Export { json, .. }
            | Command::Plan { json, .. }
            | Command::Apply { json, .. }
            | Command::Rollback { json, .. }
            | Command::Status { json, .. }
            | Command::History { json, .. }
            | Command::Diff { json, .. } => *json,
            Command::Serve(a) => a.json,
            Command::Repl(a) => a.json,
            Command::Agent(a) => a.json,
            Command::Lab(a) => a.json,
            Command::Trace(a) => a.json,
        }
    }
}

fn dispatch(cli: Cli) -> Outcome {
    match cli.command {
        Command::Check {
            files,
            dump_after,
            intent,
            rules,
            json: _,
        } => commands::check::run(commands::check::CheckArgs {
            files: &files,
            dump_after: dump_after.as_deref(),
            intent,
            rules: rules.as_deref(),
        }),
        Command::Tofino { dir, json: _ } => commands::tofino::run(&dir),
        Command::DecodeP4 { file, json: _ } => commands::decode_p4::run(&file),
        Command::Capacity {
            intent,
            profile,
            json,
            rules,
        } => commands::capacity::run(commands::capacity::CapacityArgs {
            intent: &intent,
            rules: rules.as_deref(),
            profile: &profile,
            json,
            workers: netc_engine::default_workers(),
        }),
        Command::Compile {
            intent,
            out,
            rules,
            workers,
            json: _,
            timings,
        } => commands::compile::run(commands::compile::CompileArgs {
            intent: &intent,
            rules: rules.as_deref(),
            out: &out,
            workers: workers.map_or_else(netc_engine::default_workers, usize::from),
            timings,
        }),
        Command::Gen {
            preset,
            out,
            knobs,
            json: _,
        } => commands::gen::run(preset, &knobs, &out),
        Command::Verify {
            intent,
            artifacts,
            against,
            since,
            since_intent,
            state,
            json,
            junit,
            pcap,
            rules,
            limit,
        } => commands::verify::run(commands::verify::VerifyArgs {
            intent: &intent,
            artifacts: artifacts.as_deref(),
            against: against.as_deref(),
            since: since.as_deref(),
            since_intent: &since_intent,
            state: state.as_deref(),
            json,
            junit: junit.as_deref(),
            pcap: pcap.as_deref(),
            rules: rules.as_deref(),
            limit,
        }),
        Command::Predict {
            intent,
            artifacts,
            packet,
            json,
        } => commands::predict::run(&artifacts, &packet, &intent, json),
        Command::Export {
            souffle: _,
            files,
            facts,
            facts_out,
            json: _,
        } => commands::export::run(&files, facts.as_deref(), facts_out.as_deref()),
        Command::Plan {
            intent,
            verbose,
            json,
            state,
            rules,
            server,
            token_file,
            waivers,
        } => commands::plan::run(commands::plan::PlanArgs {
            intent: &intent,
            rules: rules.as_deref(),
            state: state.as_deref(),
            verbose,
            json,
            server: server.as_deref(),
            token_file: token_file.as_deref(),
            waivers: &waivers,
        }),
        Command::Apply {
            intent,
            inventory,
            force,
            drain,
            verbose,
            json,
            state,
            rules,
            server,
            token_file,
            waivers,
        } => commands::apply::run(commands::apply::ApplyArgs {
            intent: &intent,
            rules: rules.as_deref(),
            state: state.as_deref(),
            inventory: inventory.as_deref(),
            force,
            drain,
            verbose,
            json,
            server: server.as_deref(),
            token_file: token_file.as_deref(),
            waivers: &waivers,
        }),
        Command::Rollback {
            generation,
            inventory,
            force,
            drain,
            verbose,
            json,
            state,
            waivers,
        } => commands::rollback::run(commands::rollback::RollbackArgs {
            generation,
            state: state.as_deref(),
            inventory: inventory.as_deref(),
            force,
            drain,
            verbose,
            json,
            waivers: &waivers,
        }),
        Command::Status {
            inventory,
            verbose,
            json,
            state,
        } => commands::status::run(state.as_deref(), inventory.as_deref(), verbose, json),
        Command::History { json, state } => commands::history::run(state.as_deref(), json),
        Command::Diff {
            from,
            to,
            verbose,
            json,
            state,
        } => commands::diff::run(from, to, state.as_deref(), verbose, json),
        Command::Agent(a) => commands::agent::run(a),
        Command::Serve(a) => commands::serve::run(a),
        Command::Repl(a) => commands::repl::run(a),
        Command::Lab(a) => commands::lab::run(a),
        Command::Trace(a) => commands::trace::run(a),
        Command::Run {
            files,
            facts,
            output,
            workers,
            updates,
            json: _,
        } => commands::run::run(commands::run::RunArgs {
            files: &files,
            facts_dir: &facts,
            output_dir: &output,
            workers: workers as usize,
            updates: updates.as_deref(),
        }),
    }
}
