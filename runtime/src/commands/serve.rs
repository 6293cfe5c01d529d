//! `netc serve`: the command line of the warm daemon (`crate::serve`).

use super::Outcome;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
#[command(after_help = concat!(
    "Keeps the intent compiled and evaluated; each change is committed into the running dataflow as a\n",
    "difference of facts (never a recompilation), and each device's output delta is published.\n\n",
    "Endpoints (JSON; every request needs `Authorization: Bearer <token>`; specs/serve.md):\n",
    "  POST /v1/plan    {\"files\": [{\"name\", \"text\"}]} or {\"paths\": [...]}: the change, per device, and the verdict\n",
    "  POST /v1/apply   the same, then record a generation in the store and publish the deltas\n",
    "  POST /v1/verify  verify the current state      POST /v1/query {\"query\": \"vip_dip(V, D)\"}\n",
    "  GET  /v1/status  generation, files, counters    GET /v1/deltas?since=N&wait=S (long-poll)\n\n",
    "On start it recovers the last generation committed in the store (so a daemon killed with -9 comes\n",
    "back with the same state); with none, it starts from INTENT. The token is --token-file, else\n",
    "STATE/serve.token (made, mode 0600, when missing).\n\n",
    "Examples:\n",
    "  netc serve examples/quickstart/intent.ndl &\n",
    "  curl -s -H \"Authorization: Bearer $(cat .netc/serve.token)\" localhost:7878/v1/status\n",
    "  netc apply --server http://127.0.0.1:7878 examples/quickstart/intent.ndl\n\n",
    "Exit codes: 0 stopped cleanly · 2 the state, the token, the intent or the address could not be used"
))]
pub struct ServeArgs {
    /// Intent files to start from when the store holds no generation yet.
    pub intent: Vec<PathBuf>,
    /// Address to listen on (loopback unless you say otherwise; port 0 picks a free one).
    #[arg(long, default_value = "127.0.0.1:7878", value_name = "HOST:PORT")]
    pub listen: String,
    /// State directory (the store), as for `netc apply`.
    #[arg(long, value_name = "DIR")]
    pub state: Option<PathBuf>,
    /// File holding the bearer token (default: STATE/serve.token, made when missing).
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Use the .ndl files of DIR instead of the standard rules built into netc.
    #[arg(long, value_name = "DIR")]
    pub rules: Option<PathBuf>,
}

pub fn run(a: ServeArgs) -> Outcome {
    crate::serve::run(crate::serve::ServeArgs {
        listen: &a.listen,
        state: a.state.as_deref(),
        token_file: a.token_file.as_deref(),
        intent: &a.intent,
        rules: a.rules.as_deref(),
    })
}
