//! `netc repl`: the command line of the prompt (`crate::repl`).

use super::Outcome;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
#[command(after_help = concat!(
    "Commands at the prompt:\n",
    "  ?- vip_dip(V, D).          query any relation (variables upper-case, constants, `_`)\n",
    "  :assert fact.  :retract fact.   change an intent fact; prints each device's output delta\n",
    "  :whatif FILE               delta + verifier verdict if FILE replaced its intent file; nothing applied\n",
    "  :explain tuple.            derivation tree down to the intent facts (file:line)\n",
    "  :plan  :relations  :help  :quit\n\n",
    "On a terminal: line editing, history (STATE/repl_history), Tab completes commands and relations.\n",
    "Otherwise lines are read from stdin one by one (scripts).\n\n",
    "Examples:\n",
    "  netc repl examples/quickstart/intent.ndl\n",
    "  echo '?- vm(T, N, _, _, \"h1\").' | netc repl examples/quickstart/intent.ndl\n\n",
    "Exit codes: 0 done · 1 reading a script, some line failed · 2 the session could not start"
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
}

pub fn run(a: ReplArgs) -> Outcome {
    crate::repl::run(crate::repl::ReplArgs {
        intent: &a.intent,
        state: a.state.as_deref(),
        rules: a.rules.as_deref(),
    })
}
