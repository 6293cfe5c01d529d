//! `netc serve`: the command line of the warm daemon (`crate::serve`).

use super::Outcome;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
#[command(after_help = crate::after_help!(
    concat!(
        "Keeps the intent compiled and evaluated; each change is committed into the running dataflow as a\n",
        "difference of facts (never a recompilation), and each device's output delta is published.\n\n",
        "Endpoints (JSON; every request needs `Authorization: Bearer <token>`; specs/serve.md):\n",
        "  POST /v1/plan    {\"files\": [{\"name\", \"text\"}]} or {\"paths\": [...]} (under --intent-dir): the change, per device, and the verdict\n",
        "  POST /v1/apply   the same, verify (refuse a violation unless \"force\"), push every device, record a\n",
        "                   generation and publish the deltas; a device failure puts the others back (502)\n",
        "  POST /v1/verify  verify the current state      POST /v1/query {\"query\": \"vip_dip(V, D)\"}\n",
        "  GET  /v1/status  generation, files, counters    GET /v1/deltas?since=N&wait=S (long-poll)\n\n",
        "On start it recovers the last generation committed in the store (so a daemon killed with -9 comes\n",
        "back with the same state); with none, it starts from INTENT. The token is --token-file, else\n",
        "STATE/serve.token (made, mode 0600, when missing).\n\n",
        "Devices: as `netc apply` — --inventory FILE, else the local lab (one OVS bridge per host, under\n",
        "STATE/lab/; `netc lab stop` stops it); --no-push only records generations and publishes deltas.\n",
        "--json: one JSON object per line on stdout: {\"event\": \"listening\", \"url\", \"pid\", \"token_file\", ...}\n",
        "first, then {\"event\": \"request\", \"method\", \"path\", \"status\", ...} and {\"event\": \"applied\", ...}."
    ),
    example: concat!(
        "  netc serve examples/quickstart/intent.ndl &\n",
        "  curl -s -H \"Authorization: Bearer $(cat .netc/serve.token)\" localhost:7878/v1/status\n",
        "  netc apply --server http://127.0.0.1:7878 examples/quickstart/intent.ndl"
    ),
    exit0: "stopped cleanly",
    exit1: "(not used)",
    exit2: "the state, the token, the inventory, the intent or the address could not be used",
))]
pub struct ServeArgs {
    /// Intent files to start from when the store holds no generation yet.
    pub intent: Vec<PathBuf>,
    /// The one directory whose files requests may name in `paths` (and `.include`); without it the
    /// daemon reads intent only from request bodies.
    #[arg(long, value_name = "DIR")]
    pub intent_dir: Option<PathBuf>,
    /// Address to listen on (loopback unless you say otherwise; port 0 picks a free one).
    #[arg(long, default_value = "127.0.0.1:7878", value_name = "HOST:PORT")]
    pub listen: String,
    /// Seconds a request's head and body may take to arrive (from the accept); a slower one is 408.
    #[arg(long, default_value_t = 10, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub read_timeout: u64,
    /// State directory (the store), as for `netc apply`.
    #[arg(long, value_name = "DIR")]
    pub state: Option<PathBuf>,
    /// File holding the bearer token (default: STATE/serve.token, made when missing).
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Use the .ndl files of DIR instead of the standard rules built into netc.
    #[arg(long, value_name = "DIR")]
    pub rules: Option<PathBuf>,
    /// How to reach each device, as for `netc apply` (default: the local lab).
    #[arg(long, value_name = "FILE", conflicts_with = "no_push")]
    pub inventory: Option<PathBuf>,
    /// Push to no device: record generations and publish deltas for consumers only.
    #[arg(long)]
    pub no_push: bool,
    /// Log JSON lines on stdout (the first: url, pid, token file).
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: ServeArgs) -> Outcome {
    crate::serve::run(crate::serve::ServeArgs {
        listen: &a.listen,
        read_timeout: std::time::Duration::from_secs(a.read_timeout),
        state: a.state.as_deref(),
        token_file: a.token_file.as_deref(),
        intent: &a.intent,
        intent_dir: a.intent_dir.as_deref(),
        rules: a.rules.as_deref(),
        inventory: a.inventory.as_deref(),
        no_push: a.no_push,
        json: a.json,
    })
}
