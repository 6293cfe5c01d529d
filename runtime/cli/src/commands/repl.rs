//! `netc repl`: the command line of the prompt (`crate::repl`).

use super::Outcome;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
#[command(after_help = crate::after_help!(
    concat!(
        "Commands at the prompt:\n",
        "  ?- vip_dip(V, D).          query any relation (variables upper-case, constants, `_`)\n",
        "  :assert fact.  :retract fact.   change an intent fact; prints each device's output delta\n",
        "  :whatif FILE               delta + verifier verdict if FILE replaced its intent file; nothing applied\n",
        "  :explain tuple.            derivation tree down to the intent facts (file:line), through aggregates\n",
        "  :plan  :relations  :help  :quit\n\n",
        "On a terminal: line editing, history (STATE/repl_history), Tab completes commands and relations.\n",
        "Otherwise lines are read from stdin one by one (scripts). With --json every line's answer is one JSON\n",
        "line on stdout ({\"line\": ..., \"ok\": true, ...} or {\"line\": ..., \"error\": {...}})."
    ),
    example: "  netc repl examples/quickstart/intent.ndl\n  echo '?- vm(T, N, _, _, \"h1\").' | netc repl examples/quickstart/intent.ndl --json",
    exit0: "done (:quit or end of input)",
    exit1: "reading a script, some line failed",
    exit2: "the session could not start (bad intent files, state or rules)",
))]
pub struct ReplArgs {
    /// Intent files (default: the last generation in the state directory, if any).
    pub intent: Vec<PathBuf>,
    /// State directory (history file; the generation to load without INTENT).
    #[arg(long, value_name = "DIR")]
    pub state: Option<PathBuf>,
    /// Use the .ndl files of DIR instead of the standard rules built into netc.
    #[arg(long, value_name = "DIR")]
    pub rules: Option<PathBuf>,
    /// Answer each line with one JSON line (for programs driving the prompt).
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: ReplArgs) -> Outcome {
    crate::repl::run(crate::repl::ReplArgs {
        intent: &a.intent,
        state: a.state.as_deref(),
        rules: a.rules.as_deref(),
        json: a.json,
    })
}
