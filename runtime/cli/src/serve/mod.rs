//! `netc serve`: a daemon that keeps the intent's dataflow warm.
//!
//! Map, in the order a request meets it:
//! - `server.rs`: the threads — a reader per connection, the request
//!   workers, and the waiter that holds long-polls without a worker;
//! - `http.rs`: HTTP/1.1 (std only), bearer-token auth and limits before the
//!   body, read deadlines, JSON, the version check, one log line per
//!   request (`log.rs`, `--json`);
//! - `api.rs`: the endpoints (specs/serve.md) over the shared [`api::Daemon`];
//!   `apply.rs`: `POST /v1/apply`, made at once or in stages;
//!   `paths.rs`: the files a request names, read only under `--intent-dir`;
//!   `candidate.rs`: a plan's or an apply's candidate state through the gate;
//! - `devices.rs`: where an apply is pushed (inventory, the local lab, or
//!   nowhere with `--no-push`) and the rollout with put-back;
//! - [`warm`] (netc-intent's): the session — intent compiled once, each
//!   change committed as a difference of facts into the running engine
//!   (shared with `netc repl`); [`texts`]: its intent texts and where their
//!   includes read; [`pattern`]: `rel(X, "c", _)` patterns (queries,
//!   `:assert`, `:explain`);
//! - `deltas.rs`: the numbered stream of per-device deltas;
//! - [`record`] (netc-deploy's): the session as a store generation and
//!   back (recovery);
//! - `client.rs`: the other side, for `netc plan/apply --server URL`.
//!
//! [`run`] opens the store (`--state DIR`, default `.netc`), recovers the
//! last committed generation's intent (or starts from the command line's
//! files), makes or reads the token, binds (127.0.0.1:7878 unless
//! `--listen` says otherwise) and serves (`server.rs`). Changes are
//! serialised by one lock; deltas long-polls wait without holding it or a
//! request worker.

pub use netc_intent::{pattern, texts, warm};
pub mod deltas;
pub use netc_deploy::record;
pub mod devices;
pub mod log;
pub mod api;
mod apply;
pub mod budget;
pub mod candidate;
pub mod http;
pub mod paths;
pub mod server;
pub mod client;

use crate::commands::Outcome;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

pub struct ServeArgs<'a> {
    pub listen: &'a str,
    /// `--read-timeout`: how long a request's head and body may take to arrive.
    pub read_timeout: std::time::Duration,
    pub state: Option<&'a Path>,
    pub token_file: Option<&'a Path>,
    pub intent: &'a [PathBuf],
    /// `--intent-dir DIR`: the one directory requests' `paths` and `.include`
    /// may read from (None: they read nothing from disk).
    pub intent_dir: Option<&'a Path>,
    pub rules: Option<&'a Path>,
    /// `--inventory FILE` (None: the local lab, as `netc apply`).
    pub inventory: Option<&'a Path>,
    /// `--no-push`: record and publish only.
    pub no_push: bool,
    pub json: bool,
}

pub fn run(args: ServeArgs) -> Outcome {
    match start(&args) {
        Ok(o) | Err(o) => o,
    }
}

fn start(args: &ServeArgs) -> Result<Outcome, Outcome> {
    let dir = args.state.map_or_else(
        || PathBuf::from(crate::store::DEFAULT_DIR),
        Path::to_path_buf,
    );
    let devices = match (args.no_push, args.inventory) {
        (true, _) => devices::Devices::None,
        (false, Some(p)) => devices::Devices::Inventory(crate::commands::apply::load_inventory(p)?),
        (false, None) => devices::Devices::Lab,
    };
    let log = log::Log { json: args.json };
    let store = crate::store::Store::open(&dir).map_err(store_error)?;
    let token_path = args
        .token_file
        .map_or_else(|| dir.join("serve.token"), Path::to_path_buf);
    let token = token(&token_path, args.token_file.is_some(), args.json)?;
    let mut initial = Vec::new();
    for p in args.intent {
        initial.push(warm::IntentText::read(p).map_err(|e| {
            Outcome::InputError(
                e.to_string(),
                Some("INTENT... are intent files (.ndl)".into()),
            )
        })?);
    }
    let intent_dir =
        match args.intent_dir {
            None => None,
            Some(d) if d.is_dir() => Some(std::fs::canonicalize(d).map_err(|e| {
                Outcome::InputError(
                    format!("cannot use --intent-dir `{}`: {e}", d.display()),
                    None,
                )
            })?),
            Some(d) => return Err(Outcome::InputError(
                format!("--intent-dir `{}` is not a directory", d.display()),
                Some(
                    "--intent-dir DIR names the directory whose files requests may name in `paths`"
                        .into(),
                ),
            )),
        };
    let includes = warm::Includes::Confined {
        dir: intent_dir.clone(),
    };
    let (mut warm, generation) =
        record::recover(&store, initial, args.rules, includes).map_err(|e| {
            Outcome::InputError(
                e.to_string(),
                Some("`netc check --intent FILE` shows the intent's diagnostics".into()),
            )
        })?;
    // reports name kept artifact sets by absolute path: clients do not share the daemon's cwd
    warm.keep_verified_in(&crate::rollout::verdict::keep_dir(
        &std::fs::canonicalize(&dir).unwrap_or_else(|_| dir.clone()),
    ));
    if generation > 0 && !args.intent.is_empty() {
        eprintln!(
            "note: recovered generation {generation} from {}; the INTENT files on the command line are not loaded (POST /v1/apply them)",
            dir.display()
        );
    }
    let outputs = if generation > 0 {
        store.device_outputs(generation).map_err(store_error)?
    } else {
        record::generation(&warm, None)
            .map_err(|e| Outcome::InputError(e.to_string(), None))?
            .outputs
    };
    let listener = std::net::TcpListener::bind(args.listen).map_err(|e| {
        Outcome::InputError(
            format!("cannot listen on {}: {e}", args.listen),
            Some("--listen HOST:PORT, e.g. 127.0.0.1:7878 (port 0 picks a free one)".into()),
        )
    })?;
    let bound = listener.local_addr().ok();
    let addr = bound.map_or_else(|| args.listen.to_string(), |a| a.to_string());
    if !bound.is_some_and(|a| a.ip().is_loopback()) {
        eprintln!("warning: listening on {addr}, reachable from other machines; every request still needs the token");
    }
    let epoch = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let shared = Arc::new(api::Shared {
        daemon: Mutex::new(api::Daemon {
            warm,
            store,
            generation,
            outputs,
        }),
        deltas: deltas::DeltaLog::default(),
        token,
        intent_dir,
        epoch,
        devices,
        log,
    });
    log.event(
        "listening",
        serde_json::json!({
            "url": format!("http://{addr}"),
            "pid": std::process::id(),
            "token_file": std::path::absolute(&token_path).unwrap_or(token_path).display().to_string(),
            "state": dir.display().to_string(),
            "generation": generation,
            "push": shared.devices.describe(),
            "version": client::VERSION,
        }),
    );
    server::serve(listener, shared, args.read_timeout);
    Ok(Outcome::Ok)
}

fn store_error(e: crate::store::StoreError) -> Outcome {
    let hint = e.hint();
    Outcome::InputError(e.to_string(), hint)
}

/// The bearer token: `--token-file` (`given`), else `DIR/serve.token`, made
/// (32 random bytes, hex, mode 0600) when it does not exist.
fn token(path: &Path, given: bool, json: bool) -> Result<String, Outcome> {
    match std::fs::read_to_string(path) {
        Ok(t) if !t.trim().is_empty() => {
            #[cfg(unix)]
            if let Ok(m) = std::fs::metadata(path) {
                let mode = std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o777;
                if mode & 0o077 != 0 {
                    eprintln!(
                        "warning: the token file `{}` is readable by others (mode {mode:o}): anyone who reads it can apply; `chmod 600 {}`",
                        path.display(),
                        path.display()
                    );
                }
            }
            return Ok(t.trim().to_string());
        }
        Ok(_) => {
            return Err(Outcome::InputError(
                format!("the token file `{}` is empty", path.display()),
                Some("put a secret in it, or delete it to have one made".into()),
            ))
        }
        Err(e) if given || e.kind() != std::io::ErrorKind::NotFound => {
            return Err(Outcome::InputError(
                format!("cannot read the token file `{}`: {e}", path.display()),
                None,
            ))
        }
        Err(_) => {}
    }
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes))
        .map_err(|e| Outcome::InputError(format!("cannot read /dev/urandom: {e}"), None))?;
    let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
    opts.open(path)
        .and_then(|mut f| f.write_all(token.as_bytes()))
        .map_err(|e| {
            Outcome::InputError(
                format!("cannot write the token to `{}`: {e}", path.display()),
                None,
            )
        })?;
    if !json {
        eprintln!("netc serve: made a token in {} (mode 0600)", path.display());
    }
    Ok(token)
}
