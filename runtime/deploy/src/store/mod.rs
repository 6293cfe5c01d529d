//! The generation store: what netc applied, when, from what, with what verdict.
//!
//! One SQLite file, `DIR/state.db` (`DIR` is `.netc/` in the working
//! directory unless `--state DIR` says otherwise), opened through
//! `rusqlite` with SQLite compiled in (no system library needed). Schema and
//! crash-safety argument: `specs/store.md`.
//!
//! Expects: one writer at a time per directory: an apply holds
//! [`ApplyLock`] from before it plans until it has committed, and a second
//! one is refused at once ([`StoreError::Busy`]). Guarantees:
//! - a file that is not a netc store is never reused: garbage bytes, a damaged
//!   page, a foreign SQLite file (its `application_id` is not [`APPLICATION_ID`]
//!   and it holds tables) or a newer schema ([`SCHEMA_VERSION`]) is a
//!   [`StoreError`] with a hint, and the file is left untouched;
//! - a generation is committed in ONE transaction (WAL journal, `synchronous
//!   = FULL`): after a crash it is either wholly there or wholly absent;
//! - an apply writes a journal row ([`Store::begin_apply`]) before it touches
//!   a device and clears it in the transaction that commits the generation
//!   ([`Store::commit_generation`]) or when it has put the devices back
//!   ([`Store::abort_apply`]); a journal row found later
//!   ([`Store::interrupted`]) means devices may hold a mix of two generations,
//!   and the next apply re-pushes every device.
//!
//! API, in the order an apply uses it: [`Store::open`] (creates) or
//! [`Store::open_existing`] (read-only commands) → [`Store::last_applied`] →
//! [`Store::device_outputs`] (what each device should hold) →
//! [`Store::begin_apply`] → push → [`Store::commit_generation`]. Reading:
//! [`Store::history`], [`Store::generation`], [`Store::intent_files`],
//! [`Store::intent_facts`], [`Store::relation_files`], and
//! [`Store::write_artifact_dir`], which rebuilds a generation's artifact
//! directory exactly as `netc compile` wrote it (for `netc verify --against`).

mod error;
mod lock;
mod reserve;
mod schema;
mod time;

pub use error::StoreError;
pub use lock::{ApplyLock, LOCK_FILE};
pub use reserve::Reserve;
pub use time::utc_text;

use rusqlite::{params, Connection, OptionalExtension};
use std::path::{Path, PathBuf};

/// `PRAGMA application_id` of a netc store: "netc" in ASCII.
pub const APPLICATION_ID: i32 = 0x6e65_7463;
/// `PRAGMA user_version` this netc writes and reads.
pub const SCHEMA_VERSION: i32 = 1;
/// The database file inside the state directory.
pub const DB_FILE: &str = "state.db";
/// The default state directory, relative to the working directory.
pub const DEFAULT_DIR: &str = ".netc";

/// The verifier's verdict on a generation's artifacts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Proven,
    Violated,
    NotRun,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Proven => "proven",
            Verdict::Violated => "violated",
            Verdict::NotRun => "not-run",
        }
    }
    fn parse(s: &str) -> Verdict {
        match s {
            "proven" => Verdict::Proven,
            "violated" => Verdict::Violated,
            _ => Verdict::NotRun,
        }
    }
}

/// An intent file as it was when the generation was made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IntentFile {
    pub path: String,
    /// SHA-256 of `text`, hex.
    pub sha256: String,
    pub text: String,
}

impl IntentFile {
    pub fn new(path: &str, text: String) -> IntentFile {
        IntentFile {
            path: path.to_string(),
            sha256: sha256_hex(text.as_bytes()),
            text,
        }
    }
}

/// One intent fact: `relation(row)` at `file:line`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IntentFact {
    pub relation: String,
    /// The values, tab-separated, as `netc compile` writes rows.
    pub row: String,
    pub at: String,
}

/// One artifact file of one device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceOutput {
    pub device: String,
    /// The target: `ovs`, `p4` or `host`.
    pub kind: String,
    /// Relative to an artifact directory, e.g. `ovs/h1.flows`.
    pub path: String,
    pub text: String,
    /// Whether the apply pushed it (false: no inventory entry reaches it).
    pub pushed: bool,
}

/// A generation, without its (large) contents.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Generation {
    pub id: i64,
    /// Unix seconds.
    pub created: i64,
    pub verdict: Verdict,
    pub forced: bool,
    /// Who: `$USER` (or `unknown`).
    pub actor: String,
    /// What: the command line.
    pub command: String,
    /// e.g. `rollback to 3`.
    pub note: String,
    pub files: Vec<String>,
    pub devices: usize,
    /// The routes the apply used, in inventory (TOML) syntax.
    pub inventory: String,
}

/// What [`Store::commit_generation`] records.
#[derive(Clone, Debug, Default)]
pub struct NewGeneration {
    pub files: Vec<IntentFile>,
    pub facts: Vec<IntentFact>,
    pub outputs: Vec<DeviceOutput>,
    /// `relations/<name>.csv` texts, by relation name.
    pub relations: Vec<(String, String)>,
    pub verdict: Option<Verdict>,
    pub forced: bool,
    pub actor: String,
    pub command: String,
    pub note: String,
    pub inventory: String,
}

impl NewGeneration {
    /// The bytes its rows hold (texts and names), to reserve room for them.
    pub fn size(&self) -> u64 {
        let files: usize = self
            .files
            .iter()
            .map(|f| f.path.len() + f.text.len() + 64)
            .sum();
        let facts: usize = self
            .facts
            .iter()
            .map(|f| f.relation.len() + f.row.len() + f.at.len() + 16)
            .sum();
        let outputs: usize = self
            .outputs
            .iter()
            .map(|o| o.device.len() + o.path.len() + o.text.len() + 80)
            .sum();
        let relations: usize = self
            .relations
            .iter()
            .map(|(n, t)| n.len() + t.len() + 64)
            .sum();
        (files
            + facts
            + outputs
            + relations
            + self.inventory.len()
            + self.command.len()
            + self.note.len()) as u64
    }
}

/// An apply in progress (or interrupted): written before any device is touched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Journal {
    pub pid: u32,
    /// Unix seconds.
    pub started: i64,
    /// The generation the devices held before (none: first apply).
    pub base: Option<i64>,
    pub command: String,
}

/// Sets `path`'s mode to `mode` when this user owns it and it is wider;
/// a path another user owns is left as it is, with a warning.
fn restrict(path: &Path, mode: u32) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let Ok(meta) = std::fs::metadata(path) else {
            return;
        };
        if meta.mode() & 0o777 & !mode == 0 {
            return;
        }
        let set = std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode));
        if let Err(e) = set {
            eprintln!(
                "warning: `{}` is readable by others (mode {:o}) and cannot be restricted: {e}",
                path.display(),
                meta.mode() & 0o777
            );
        }
    }
}

/// An open state directory.
pub struct Store {
    conn: Connection,
    dir: PathBuf,
    path: PathBuf,
}

impl Store {
    /// Opens the store in `dir`, creating the directory and the database if
    /// they do not exist.
    pub fn open(dir: &Path) -> Result<Store, StoreError> {
        let made = !dir.exists();
        std::fs::create_dir_all(dir).map_err(|source| StoreError::Io {
            dir: dir.to_path_buf(),
            source,
        })?;
        // the store holds every device's configuration and the daemon's
        // token: a directory made here is 0700 before anything is written in
        // it (one the user gave is theirs to set), the database file 0600
        // (SQLite gives its -wal and -shm files the database's mode)
        if made {
            restrict(dir, 0o700);
        }
        let store = Store::open_file(dir)?;
        restrict(&store.path, 0o600);
        Ok(store)
    }

    /// Opens an existing store; [`StoreError::NoState`] when there is none.
    /// A store that cannot be written (a read-only file system, no
    /// permission) is opened read-only: reading commands keep working, and
    /// any write is refused as [`StoreError::ReadOnly`].
    pub fn open_existing(dir: &Path) -> Result<Store, StoreError> {
        if !dir.join(DB_FILE).exists() {
            return Err(StoreError::NoState {
                dir: dir.to_path_buf(),
            });
        }
        match Store::open_file(dir) {
            Err(StoreError::ReadOnly { .. }) => Store::open_read_only(dir),
            other => other,
        }
    }

    fn open_file(dir: &Path) -> Result<Store, StoreError> {
        let path = dir.join(DB_FILE);
        if path.is_dir() {
            return Err(StoreError::NotADatabase {
                path,
                detail: "it is a directory".into(),
            });
        }
        // a 0-byte file is not a new store: a new one is initialised in the
        // call that creates it, so this one lost its contents (truncated,
        // or copied while empty), and starting history again at generation
        // 1 over it would hide that
        let existed = path.exists();
        if existed && std::fs::metadata(&path).is_ok_and(|m| m.len() == 0) {
            return Err(StoreError::Empty { path });
        }
        let conn = Connection::open(&path).map_err(|e| not_a_db(&path, e))?;
        let store = Store {
            conn,
            dir: dir.to_path_buf(),
            path,
        };
        if let Err(e) = schema::prepare(&store.conn, &store.path, true) {
            if !existed {
                // a store this call created and could not initialise (a full
                // disk, say) is not left behind as an empty file
                let Store { conn, path, .. } = store;
                drop(conn);
                for suffix in ["", "-wal", "-shm"] {
                    let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
                }
            }
            return Err(e);
        }
        Ok(store)
    }

    /// Opens the store for reading only: `mode=ro`, or, where SQLite cannot
    /// even create its shared-memory file next to it (a read-only
    /// directory), `immutable=1` — sound there, since no one can write it.
    fn open_read_only(dir: &Path) -> Result<Store, StoreError> {
        use rusqlite::OpenFlags as F;
        let path = dir.join(DB_FILE);
        let uri = |query: &str| {
            let p = path.to_string_lossy();
            let p = p
                .replace('%', "%25")
                .replace('?', "%3f")
                .replace('#', "%23");
            format!("file:{p}?{query}")
        };
        let flags = F::SQLITE_OPEN_READ_ONLY | F::SQLITE_OPEN_URI | F::SQLITE_OPEN_NO_MUTEX;
        let mut last = None;
        for query in ["mode=ro", "immutable=1"] {
            let conn =
                Connection::open_with_flags(uri(query), flags).map_err(|e| not_a_db(&path, e))?;
            let store = Store {
                conn,
                dir: dir.to_path_buf(),
                path: path.clone(),
            };
            match schema::prepare(&store.conn, &store.path, false) {
                Ok(()) => return Ok(store),
                Err(e @ StoreError::ReadOnly { .. }) => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or(StoreError::NoState {
            dir: dir.to_path_buf(),
        }))
    }

    /// The state directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn sql(&self, e: rusqlite::Error) -> StoreError {
        error::classify(&self.path, e, |source| StoreError::Sqlite {
            path: self.path.clone(),
            source,
        })
    }

    /// The newest committed generation.
    pub fn last_applied(&self) -> Result<Option<Generation>, StoreError> {
        let id: Option<i64> = self
            .conn
            .query_row("SELECT max(id) FROM generation", [], |r| r.get(0))
            .map_err(|e| self.sql(e))?;
        id.map(|id| self.generation(id)).transpose()
    }

    /// One generation's metadata.
    pub fn generation(&self, id: i64) -> Result<Generation, StoreError> {
        let row = self
            .conn
            .query_row(
                "SELECT id, created, verdict, forced, actor, command, note, inventory FROM generation WHERE id = ?1",
                [id],
                |r| {
                    Ok(Generation {
                        id: r.get(0)?,
                        created: r.get(1)?,
                        verdict: Verdict::parse(&r.get::<_, String>(2)?),
                        forced: r.get::<_, i64>(3)? != 0,
                        actor: r.get(4)?,
                        command: r.get(5)?,
                        note: r.get(6)?,
                        files: Vec::new(),
                        devices: 0,
                        inventory: r.get(7)?,
                    })
                },
            )
            .optional()
            .map_err(|e| self.sql(e))?;
        let mut g = row.ok_or(StoreError::NoGeneration { id })?;
        // the list only: a generation whose texts were edited is still listed (reading them refuses)
        g.files = self.rows(
            "SELECT path FROM intent_file WHERE gen = ?1 ORDER BY ord",
            id,
            |r| r.get(0),
        )?;
        g.devices = self
            .conn
            .query_row(
                "SELECT count(DISTINCT device) FROM device_output WHERE gen = ?1",
                [id],
                |r| r.get::<_, i64>(0),
            )
            .map_err(|e| self.sql(e))? as usize;
        Ok(g)
    }

    /// Every generation, oldest first.
    pub fn history(&self) -> Result<Vec<Generation>, StoreError> {
        let ids: Vec<i64> = {
            let mut st = self
                .conn
                .prepare("SELECT id FROM generation ORDER BY id")
                .map_err(|e| self.sql(e))?;
            let rows = st.query_map([], |r| r.get(0)).map_err(|e| self.sql(e))?;
            rows.collect::<Result<_, _>>().map_err(|e| self.sql(e))?
        };
        ids.into_iter().map(|id| self.generation(id)).collect()
    }

    /// The intent files of a generation, in the order they were given;
    /// [`StoreError::Tampered`] when a text does not match its SHA-256.
    pub fn intent_files(&self, id: i64) -> Result<Vec<IntentFile>, StoreError> {
        let files = self.rows(
            "SELECT path, sha256, text FROM intent_file WHERE gen = ?1 ORDER BY ord",
            id,
            |r| {
                Ok(IntentFile {
                    path: r.get(0)?,
                    sha256: r.get(1)?,
                    text: r.get(2)?,
                })
            },
        )?;
        if let Some(f) = files
            .iter()
            .find(|f| sha256_hex(f.text.as_bytes()) != f.sha256)
        {
            return Err(tampered(id, "intent file", &f.path));
        }
        Ok(files)
    }

    /// The intent facts of a generation.
    pub fn intent_facts(&self, id: i64) -> Result<Vec<IntentFact>, StoreError> {
        self.rows(
            "SELECT relation, row, at FROM intent_fact WHERE gen = ?1 ORDER BY ord",
            id,
            |r| {
                Ok(IntentFact {
                    relation: r.get(0)?,
                    row: r.get(1)?,
                    at: r.get(2)?,
                })
            },
        )
    }

    /// Every device artifact of a generation, sorted by device then path;
    /// [`StoreError::Tampered`] when one does not match its recorded hash
    /// (rows an older netc committed have none: [`Store::unhashed`]).
    pub fn device_outputs(&self, id: i64) -> Result<Vec<DeviceOutput>, StoreError> {
        let rows = self.rows(
            "SELECT device, kind, path, text, pushed, sha256 FROM device_output WHERE gen = ?1 ORDER BY device, path",
            id,
            |r| {
                Ok((
                    DeviceOutput {
                        device: r.get(0)?,
                        kind: r.get(1)?,
                        path: r.get(2)?,
                        text: r.get(3)?,
                        pushed: r.get::<_, i64>(4)? != 0,
                    },
                    r.get::<_, Option<String>>(5)?,
                ))
            },
        )?;
        rows.into_iter()
            .map(|(o, sha)| match sha {
                Some(h) if h != output_sha256(&o) => Err(tampered(id, "device artifact", &o.path)),
                _ => Ok(o),
            })
            .collect()
    }

    /// `relations/<name>.csv` of a generation: (name, text), sorted; checked
    /// as [`Store::device_outputs`].
    pub fn relation_files(&self, id: i64) -> Result<Vec<(String, String)>, StoreError> {
        let rows = self.rows(
            "SELECT name, text, sha256 FROM relation_file WHERE gen = ?1 ORDER BY name",
            id,
            |r| Ok((r.get(0)?, r.get(1)?, r.get::<_, Option<String>>(2)?)),
        )?;
        rows.into_iter()
            .map(
                |(name, text, sha): (String, String, Option<String>)| match sha {
                    Some(h) if h != relation_sha256(&name, &text) => Err(tampered(
                        id,
                        "relation file",
                        &format!("relations/{name}.csv"),
                    )),
                    _ => Ok((name, text)),
                },
            )
            .collect()
    }

    /// How many artifact rows of a generation carry no hash (committed by a
    /// netc that recorded none): they are read unchecked.
    pub fn unhashed(&self, id: i64) -> Result<usize, StoreError> {
        self.generation_exists(id)?;
        let n: i64 = self
            .conn
            .query_row(
                "SELECT (SELECT count(*) FROM device_output WHERE gen = ?1 AND sha256 IS NULL) + (SELECT count(*) FROM relation_file WHERE gen = ?1 AND sha256 IS NULL)",
                [id],
                |r| r.get(0),
            )
            .map_err(|e| self.sql(e))?;
        Ok(n as usize)
    }

    fn rows<T>(
        &self,
        sql: &str,
        id: i64,
        f: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
    ) -> Result<Vec<T>, StoreError> {
        self.generation_exists(id)?;
        let mut st = self.conn.prepare(sql).map_err(|e| self.sql(e))?;
        let rows = st.query_map([id], f).map_err(|e| self.sql(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.sql(e))
    }

    fn generation_exists(&self, id: i64) -> Result<(), StoreError> {
        let n: i64 = self
            .conn
            .query_row("SELECT count(*) FROM generation WHERE id = ?1", [id], |r| {
                r.get(0)
            })
            .map_err(|e| self.sql(e))?;
        if n == 0 {
            return Err(StoreError::NoGeneration { id });
        }
        Ok(())
    }

    /// Writes generation `id` as an artifact directory (`relations/`, `ovs/`,
    /// `p4/`, `host/`), byte for byte what `netc compile` wrote for it.
    pub fn write_artifact_dir(&self, id: i64, dir: &Path) -> Result<(), StoreError> {
        let io = |source| StoreError::Io {
            dir: dir.to_path_buf(),
            source,
        };
        std::fs::create_dir_all(dir.join("relations")).map_err(io)?;
        // a stored name is data: it is joined only if it stays under `dir`
        for (name, text) in self.relation_files(id)? {
            let p =
                crate::io::contained::join(dir, &format!("relations/{name}.csv")).map_err(io)?;
            std::fs::write(p, text).map_err(io)?;
        }
        for o in self.device_outputs(id)? {
            let p = crate::io::contained::join(dir, &o.path).map_err(io)?;
            if let Some(parent) = p.parent() {
                std::fs::create_dir_all(parent).map_err(io)?;
            }
            std::fs::write(p, o.text).map_err(io)?;
        }
        Ok(())
    }

    /// The journal of an apply that started and neither committed nor
    /// aborted, if its process is gone (a crash or `kill -9`).
    pub fn interrupted(&self) -> Result<Option<Journal>, StoreError> {
        Ok(self.journal()?.filter(|j| !process_alive(j.pid)))
    }

    fn journal(&self) -> Result<Option<Journal>, StoreError> {
        self.conn
            .query_row(
                "SELECT pid, started, base, command FROM applying WHERE id = 1",
                [],
                |r| {
                    Ok(Journal {
                        pid: r.get::<_, i64>(0)? as u32,
                        started: r.get(1)?,
                        base: r.get(2)?,
                        command: r.get(3)?,
                    })
                },
            )
            .optional()
            .map_err(|e| self.sql(e))
    }

    /// Records that an apply is about to touch devices. Returns the journal
    /// of an earlier interrupted apply, if any (its devices may hold a mix);
    /// refuses with [`StoreError::Busy`] while another apply is alive.
    pub fn begin_apply(&mut self, journal: &Journal) -> Result<Option<Journal>, StoreError> {
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(|e| sql_error(&self.path, e))?;
        let sql = |e| sql_error(&self.path, e);
        let old: Option<Journal> = tx
            .query_row(
                "SELECT pid, started, base, command FROM applying WHERE id = 1",
                [],
                |r| {
                    Ok(Journal {
                        pid: r.get::<_, i64>(0)? as u32,
                        started: r.get(1)?,
                        base: r.get(2)?,
                        command: r.get(3)?,
                    })
                },
            )
            .optional()
            .map_err(sql)?;
        if let Some(o) = &old {
            if o.pid != journal.pid && process_alive(o.pid) {
                return Err(StoreError::Busy {
                    dir: self.dir.clone(),
                    pid: o.pid,
                    started: utc_text(o.started),
                });
            }
        }
        tx.execute(
            "INSERT OR REPLACE INTO applying (id, pid, started, base, command) VALUES (1, ?1, ?2, ?3, ?4)",
            params![journal.pid as i64, journal.started, journal.base, journal.command],
        )
        .map_err(sql)?;
        tx.commit().map_err(sql)?;
        Ok(old)
    }

    /// Clears the journal after a failed apply put every device back.
    pub fn abort_apply(&mut self) -> Result<(), StoreError> {
        self.conn
            .execute("DELETE FROM applying", [])
            .map_err(|e| self.sql(e))?;
        Ok(())
    }

    /// Records a generation and clears the journal, in one transaction.
    /// Returns the new generation's id.
    pub fn commit_generation(&mut self, g: &NewGeneration) -> Result<i64, StoreError> {
        let path = self.path.clone();
        let sql = move |e| sql_error(&path, e);
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(&sql)?;
        tx.execute(
            "INSERT INTO generation (created, verdict, forced, actor, command, note, inventory) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                time::now(),
                g.verdict.unwrap_or(Verdict::NotRun).as_str(),
                g.forced as i64,
                g.actor,
                g.command,
                g.note,
                g.inventory
            ],
        )
        .map_err(&sql)?;
        let id = tx.last_insert_rowid();
        {
            let mut st = tx
                .prepare("INSERT INTO intent_file (gen, ord, path, sha256, text) VALUES (?1, ?2, ?3, ?4, ?5)")
                .map_err(&sql)?;
            for (i, f) in g.files.iter().enumerate() {
                st.execute(params![id, i as i64, f.path, f.sha256, f.text])
                    .map_err(&sql)?;
            }
            let mut st = tx
                .prepare("INSERT INTO intent_fact (gen, ord, relation, row, at) VALUES (?1, ?2, ?3, ?4, ?5)")
                .map_err(&sql)?;
            for (i, f) in g.facts.iter().enumerate() {
                st.execute(params![id, i as i64, f.relation, f.row, f.at])
                    .map_err(&sql)?;
            }
            let mut st = tx
                .prepare("INSERT INTO device_output (gen, device, kind, path, text, pushed, sha256) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)")
                .map_err(&sql)?;
            for o in &g.outputs {
                st.execute(params![
                    id,
                    o.device,
                    o.kind,
                    o.path,
                    o.text,
                    o.pushed as i64,
                    output_sha256(o)
                ])
                .map_err(&sql)?;
            }
            let mut st = tx
                .prepare(
                    "INSERT INTO relation_file (gen, name, text, sha256) VALUES (?1, ?2, ?3, ?4)",
                )
                .map_err(&sql)?;
            for (name, text) in &g.relations {
                st.execute(params![id, name, text, relation_sha256(name, text)])
                    .map_err(&sql)?;
            }
        }
        tx.execute("DELETE FROM applying", []).map_err(&sql)?;
        tx.commit().map_err(&sql)?;
        Ok(id)
    }

    /// SQLite's own consistency check plus netc's: every generation's
    /// contents refer to a generation. Returns the problems found.
    pub fn check(&self) -> Result<Vec<String>, StoreError> {
        let mut problems = Vec::new();
        let ic: String = self
            .conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .map_err(|e| self.sql(e))?;
        if ic != "ok" {
            problems.push(format!("integrity_check: {ic}"));
        }
        for t in [
            "intent_file",
            "intent_fact",
            "device_output",
            "relation_file",
        ] {
            let n: i64 = self
                .conn
                .query_row(
                    &format!(
                        "SELECT count(*) FROM {t} WHERE gen NOT IN (SELECT id FROM generation)"
                    ),
                    [],
                    |r| r.get(0),
                )
                .map_err(|e| self.sql(e))?;
            if n > 0 {
                problems.push(format!("{n} row(s) of {t} belong to no generation"));
            }
        }
        Ok(problems)
    }
}

fn not_a_db(path: &Path, e: rusqlite::Error) -> StoreError {
    error::classify(path, e, |e| StoreError::NotADatabase {
        path: path.to_path_buf(),
        detail: e.to_string(),
    })
}

/// A SQLite error on the store at `path`, classified ([`error::classify`]).
fn sql_error(path: &Path, e: rusqlite::Error) -> StoreError {
    error::classify(path, e, |source| StoreError::Sqlite {
        path: path.to_path_buf(),
        source,
    })
}

/// Whether a process is alive (Linux: its `/proc` entry exists and it is not a zombie).
fn process_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

fn tampered(generation: i64, what: &'static str, file: &str) -> StoreError {
    StoreError::Tampered {
        generation,
        what,
        file: file.to_string(),
    }
}

/// An artifact row's hash: its device, kind and path as well as its text,
/// so a row moved to another device or path does not match either.
fn output_sha256(o: &DeviceOutput) -> String {
    sha256_hex(format!("{}\0{}\0{}\0{}", o.device, o.kind, o.path, o.text).as_bytes())
}

fn relation_sha256(name: &str, text: &str) -> String {
    sha256_hex(format!("{name}\0{text}").as_bytes())
}

/// Lower-case hex SHA-256.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests;
