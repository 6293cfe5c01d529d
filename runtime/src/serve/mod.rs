//! `netc serve`: a daemon that keeps the intent's dataflow warm.
//!
//! Map, in the order a request meets it:
//! - `http.rs`: HTTP/1.1 (tiny_http), bearer-token auth, body limits, JSON;
//! - `api.rs`: the endpoints (specs/serve.md) over the shared [`api::Daemon`];
//! - `warm.rs`: the session — intent compiled once, each change committed
//!   as a difference of facts into the running engine (shared with `netc
//!   repl`);
//! - `pattern.rs`: `rel(X, "c", _)` patterns (queries, `:assert`, `:explain`);
//! - `deltas.rs`: the numbered stream of per-device deltas;
//! - `record.rs`: the session as a store generation and back (recovery).
//!
//! [`run`] opens the store (`--state DIR`, default `.netc`), recovers the
//! last committed generation's intent (or starts from the command line's
//! files), makes or reads the token, binds (127.0.0.1:7878 unless
//! `--listen` says otherwise) and serves with a few threads. Changes are
//! serialised by one lock; deltas long-polls wait without holding it.

pub mod pattern;
pub mod warm;
pub mod deltas;
pub mod record;
pub mod api;
pub mod http;

use crate::commands::Outcome;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Request threads (long-polls occupy one each while they wait).
const THREADS: usize = 8;

pub struct ServeArgs<'a> {
    pub listen: &'a str,
    pub state: Option<&'a Path>,
    pub token_file: Option<&'a Path>,
    pub intent: &'a [PathBuf],
    pub rules: Option<&'a Path>,
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
    let store = crate::store::Store::open(&dir).map_err(store_error)?;
    let token = token(&dir, args.token_file)?;
    let mut initial = Vec::new();
    for p in args.intent {
        initial.push(warm::IntentText::read(p).map_err(|e| {
            Outcome::InputError(
                e.to_string(),
                Some("INTENT... are intent files (.ndl)".into()),
            )
        })?);
    }
    let (warm, generation) = record::recover(&store, initial, args.rules).map_err(|e| {
        Outcome::InputError(
            e.to_string(),
            Some("`netc check --intent FILE` shows the intent's diagnostics".into()),
        )
    })?;
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
    let server = tiny_http::Server::http(args.listen).map_err(|e| {
        Outcome::InputError(
            format!("cannot listen on {}: {e}", args.listen),
            Some("--listen HOST:PORT, e.g. 127.0.0.1:7878 (port 0 picks a free one)".into()),
        )
    })?;
    let addr = server
        .server_addr()
        .to_ip()
        .map_or_else(|| args.listen.to_string(), |a| a.to_string());
    if !server
        .server_addr()
        .to_ip()
        .is_some_and(|a| a.ip().is_loopback())
    {
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
        epoch,
    });
    eprintln!(
        "netc serve: listening on http://{addr} (generation {generation}, state {}, pid {})",
        dir.display(),
        std::process::id()
    );
    let _ = std::io::stderr().flush();
    let server = Arc::new(server);
    let workers: Vec<_> = (0..THREADS)
        .map(|_| {
            let (server, shared) = (server.clone(), shared.clone());
            std::thread::spawn(move || {
                while let Ok(req) = server.recv() {
                    http::handle(&shared, req);
                }
            })
        })
        .collect();
    for w in workers {
        let _ = w.join();
    }
    Ok(Outcome::Ok)
}

fn store_error(e: crate::store::StoreError) -> Outcome {
    let hint = e.hint();
    Outcome::InputError(e.to_string(), hint)
}

/// The bearer token: `--token-file`, else `DIR/serve.token`, made (32 random
/// bytes, hex, mode 0600) when it does not exist.
fn token(dir: &Path, file: Option<&Path>) -> Result<String, Outcome> {
    let path = file.map_or_else(|| dir.join("serve.token"), Path::to_path_buf);
    match std::fs::read_to_string(&path) {
        Ok(t) if !t.trim().is_empty() => return Ok(t.trim().to_string()),
        Ok(_) => {
            return Err(Outcome::InputError(
                format!("the token file `{}` is empty", path.display()),
                Some("put a secret in it, or delete it to have one made".into()),
            ))
        }
        Err(e) if file.is_some() || e.kind() != std::io::ErrorKind::NotFound => {
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
    opts.open(&path)
        .and_then(|mut f| f.write_all(token.as_bytes()))
        .map_err(|e| {
            Outcome::InputError(
                format!("cannot write the token to `{}`: {e}", path.display()),
                None,
            )
        })?;
    eprintln!("netc serve: made a token in {} (mode 0600)", path.display());
    Ok(token)
}
