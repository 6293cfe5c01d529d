//! The store's schema, and the checks that make a foreign or damaged file an
//! error instead of something netc writes into.
//!
//! Expects: a freshly opened connection. Guarantees: on `Ok`, the file is a
//! netc store of [`SCHEMA_VERSION`] in WAL mode with `synchronous = FULL`
//! (an empty or new file is initialised in one transaction) whose artifact
//! tables have their `sha256` column (a store of an older netc gains it,
//! NULL in the rows it already holds: netc reads those unchecked, with a
//! note; an older netc still reads and writes the store); on `Err`, the
//! file was not written. A file with netc's id that lacks one of its
//! tables is [`StoreError::Incomplete`], and a file that cannot be written
//! [`StoreError::ReadOnly`] (opened again read-only by `Store::open_existing`).

use super::error::classify;
use super::{StoreError, APPLICATION_ID, SCHEMA_VERSION};
use rusqlite::Connection;
use std::path::Path;

const TABLES: &str = "
CREATE TABLE generation (
    id       INTEGER PRIMARY KEY AUTOINCREMENT,
    created  INTEGER NOT NULL,            -- unix seconds
    verdict  TEXT NOT NULL CHECK (verdict IN ('proven', 'violated', 'not-run')),
    forced   INTEGER NOT NULL,
    actor    TEXT NOT NULL,
    command  TEXT NOT NULL,
    note     TEXT NOT NULL,
    inventory TEXT NOT NULL               -- the routes used, in inventory syntax
);
CREATE TABLE intent_file (
    gen INTEGER NOT NULL REFERENCES generation(id), ord INTEGER NOT NULL,
    path TEXT NOT NULL, sha256 TEXT NOT NULL, text TEXT NOT NULL,
    PRIMARY KEY (gen, ord)
);
CREATE TABLE intent_fact (
    gen INTEGER NOT NULL REFERENCES generation(id), ord INTEGER NOT NULL,
    relation TEXT NOT NULL, row TEXT NOT NULL, at TEXT NOT NULL,
    PRIMARY KEY (gen, ord)
);
CREATE TABLE device_output (
    gen INTEGER NOT NULL REFERENCES generation(id),
    device TEXT NOT NULL, kind TEXT NOT NULL, path TEXT NOT NULL,
    text TEXT NOT NULL, pushed INTEGER NOT NULL,
    sha256 TEXT,                          -- of the row (super::row_sha256); NULL: an older netc committed it
    PRIMARY KEY (gen, path)
);
CREATE TABLE relation_file (
    gen INTEGER NOT NULL REFERENCES generation(id),
    name TEXT NOT NULL, text TEXT NOT NULL,
    sha256 TEXT,                          -- as device_output's
    PRIMARY KEY (gen, name)
);
-- at most one row: an apply that has started touching devices and not yet
-- committed or put them back
CREATE TABLE applying (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    pid INTEGER NOT NULL, started INTEGER NOT NULL, base INTEGER, command TEXT NOT NULL
);
";

/// The tables of [`TABLES`], each of which a netc store has.
const TABLE_NAMES: [&str; 6] = [
    "generation",
    "intent_file",
    "intent_fact",
    "device_output",
    "relation_file",
    "applying",
];

/// Validates (or, when `writable`, initialises and upgrades) the file
/// behind `conn`; a read-only connection is only validated.
pub(super) fn prepare(conn: &Connection, path: &Path, writable: bool) -> Result<(), StoreError> {
    let not_db = |e: rusqlite::Error| {
        classify(path, e, |e| StoreError::NotADatabase {
            path: path.to_path_buf(),
            detail: e.to_string(),
        })
    };
    let sql = |e: rusqlite::Error| {
        classify(path, e, |source| StoreError::Sqlite {
            path: path.to_path_buf(),
            source,
        })
    };
    conn.busy_timeout(std::time::Duration::from_secs(10))
        .map_err(sql)?;
    // Reading the header is the first access: garbage bytes fail here.
    let app: i32 = conn
        .query_row("PRAGMA application_id", [], |r| r.get(0))
        .map_err(not_db)?;
    let version: i32 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(not_db)?;
    let tables: i64 = conn
        .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
        .map_err(not_db)?;
    if app != APPLICATION_ID && (app != 0 || tables > 0) {
        return Err(StoreError::Foreign {
            path: path.to_path_buf(),
            found: app,
        });
    }
    if app == APPLICATION_ID && version > SCHEMA_VERSION {
        return Err(StoreError::NewerSchema {
            path: path.to_path_buf(),
            found: version,
        });
    }
    if app == APPLICATION_ID && version < 1 {
        return Err(StoreError::NotADatabase {
            path: path.to_path_buf(),
            detail: format!("netc's application id but schema version {version}"),
        });
    }
    let check: String = conn
        .query_row("PRAGMA quick_check", [], |r| r.get(0))
        .map_err(not_db)?;
    if check != "ok" {
        return Err(StoreError::NotADatabase {
            path: path.to_path_buf(),
            detail: format!("quick_check: {}", check.lines().next().unwrap_or("")),
        });
    }
    if app == APPLICATION_ID {
        // netc's id but not its tables: damaged or edited; said, and not
        // written (no WAL switch, no column added)
        let missing: Vec<&str> = TABLE_NAMES
            .iter()
            .copied()
            .filter(|t| !has_table(conn, t).unwrap_or(false))
            .collect();
        if !missing.is_empty() {
            return Err(StoreError::Incomplete {
                path: path.to_path_buf(),
                missing: missing.join(", "),
            });
        }
    }
    if !writable {
        return Ok(());
    }
    let mode: String = conn
        .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
        .map_err(sql)?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(StoreError::NotADatabase {
            path: path.to_path_buf(),
            detail: format!("cannot switch to WAL (journal mode stays `{mode}`)"),
        });
    }
    conn.execute_batch("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;")
        .map_err(sql)?;
    if app == 0 {
        conn.execute_batch(&format!(
            "BEGIN IMMEDIATE; {TABLES} PRAGMA application_id = {APPLICATION_ID}; PRAGMA user_version = {SCHEMA_VERSION}; COMMIT;"
        ))
        .map_err(sql)?;
    }
    for table in ["device_output", "relation_file"] {
        if has_column(conn, table, "sha256").map_err(sql)? {
            continue;
        }
        // another process may add it at the same moment: then it is there
        if let Err(e) = conn.execute_batch(&format!("ALTER TABLE {table} ADD COLUMN sha256 TEXT")) {
            if !has_column(conn, table, "sha256").map_err(sql)? {
                return Err(sql(e));
            }
        }
    }
    Ok(())
}

fn has_table(conn: &Connection, table: &str) -> rusqlite::Result<bool> {
    conn.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
        [table],
        |r| r.get::<_, i64>(0),
    )
    .map(|n| n > 0)
}

fn has_column(conn: &Connection, table: &str, column: &str) -> rusqlite::Result<bool> {
    let mut st = conn.prepare(&format!("SELECT name FROM pragma_table_info('{table}')"))?;
    let names = st.query_map([], |r| r.get::<_, String>(0))?;
    for n in names {
        if n? == column {
            return Ok(true);
        }
    }
    Ok(false)
}
