//! The engine's public value types: what a commit takes ([`Transaction`]
//! of [`Diff`]s), what it returns ([`Changes`]), what it counts
//! ([`CommitStats`], [`EngineStats`]) and why it fails ([`EngineError`]).
//!
//! Guarantees: plain data with public fields, re-exported from the engine
//! module; the semantics of applying them are the engine's (`lib.rs`).

use netc_compiler::plan::RelId;
use netc_compiler::value::Row;
use std::collections::BTreeMap;
use std::time::Duration;

/// Why the engine refused or failed an operation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EngineError {
    /// The plan breaks an invariant the lowering promised (an internal error).
    #[error("internal error: invalid plan ({invariant}): {detail}")]
    InvalidPlan {
        invariant: &'static str,
        detail: String,
    },
    #[error("unknown relation id {0}")]
    UnknownRelation(RelId),
    #[error("relation `{relation}` has {expected} column(s), but the row has {found}")]
    Arity {
        relation: String,
        expected: usize,
        found: usize,
    },
    #[error(
        "relation `{relation}`, column `{column}`: `{value}` is not a value of type {expected}"
    )]
    Type {
        relation: String,
        column: String,
        expected: String,
        value: String,
    },
    #[error("the engine needs at least one worker")]
    NoWorkers,
    #[error("{lanes} lanes need one worker each, not {workers}")]
    LanesOfWorkers { lanes: usize, workers: usize },
    #[error("could not start the worker threads: {0}")]
    Start(String),
    #[error("internal error: engine worker {worker} failed: {message}")]
    WorkerDied { worker: usize, message: String },
    #[error("internal error: {0}")]
    Internal(String),
    /// A one-shot engine ([`Engine::new_one_shot`]) released the dataflow
    /// of the strata reading this relation after commit 0.
    #[error(
        "relation `{0}` cannot change: this engine was started for one evaluation and released what reads it"
    )]
    Released(String),
    #[error("the engine stopped after an earlier failure: {0}")]
    Poisoned(String),
}

/// Insert or delete a base fact.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Diff {
    Insert,
    Delete,
}

impl Diff {
    /// `+1` for an insert, `-1` for a delete.
    pub fn sign(self) -> isize {
        match self {
            Diff::Insert => 1,
            Diff::Delete => -1,
        }
    }
}

/// Base-fact changes applied together. They apply in order: inserting then
/// deleting the same fact leaves it absent. Inserting a present base fact or
/// deleting an absent one does nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Transaction {
    pub changes: Vec<(RelId, Row, Diff)>,
}

impl Transaction {
    pub fn new() -> Transaction {
        Transaction::default()
    }
    pub fn insert(&mut self, rel: RelId, row: Row) -> &mut Self {
        self.changes.push((rel, row, Diff::Insert));
        self
    }
    pub fn delete(&mut self, rel: RelId, row: Row) -> &mut Self {
        self.changes.push((rel, row, Diff::Delete));
        self
    }
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }
    pub fn len(&self) -> usize {
        self.changes.len()
    }
}

/// The net changes of one commit: per relation that changed, `(row, +1)` for
/// a row that appeared and `(row, -1)` for one that disappeared, sorted by
/// row in `Value`'s order. Relations without changes are absent.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Changes {
    pub by_rel: BTreeMap<RelId, Vec<(Row, isize)>>,
}

impl Changes {
    /// The changes of one relation (empty if none).
    pub fn get(&self, rel: RelId) -> &[(Row, isize)] {
        self.by_rel.get(&rel).map(|v| v.as_slice()).unwrap_or(&[])
    }
    pub fn iter(&self) -> impl Iterator<Item = (RelId, &[(Row, isize)])> {
        self.by_rel.iter().map(|(r, v)| (*r, v.as_slice()))
    }
    /// Rows that appeared in `rel`.
    pub fn inserted(&self, rel: RelId) -> impl Iterator<Item = &Row> {
        self.get(rel).iter().filter(|(_, d)| *d > 0).map(|(r, _)| r)
    }
    /// Rows that disappeared from `rel`.
    pub fn deleted(&self, rel: RelId) -> impl Iterator<Item = &Row> {
        self.get(rel).iter().filter(|(_, d)| *d < 0).map(|(r, _)| r)
    }
    pub fn is_empty(&self) -> bool {
        self.by_rel.is_empty()
    }
    /// Total number of row changes over all relations.
    pub fn len(&self) -> usize {
        self.by_rel.values().map(Vec::len).sum()
    }
}

/// Counters of one commit.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CommitStats {
    /// The dataflow epoch it ran as; `None` if it changed no base fact and so
    /// did not run at all.
    pub epoch: Option<u64>,
    /// Base-fact changes that took effect (after set semantics).
    pub input_changes: usize,
    /// Rows handled by interpreted operators (scans, joins, filters, heads,
    /// ...), summed over workers: the work done, a measure of incrementality.
    pub records: u64,
    /// Relation updates captured before consolidation, over all workers.
    pub updates: usize,
    /// Net row changes (the size of the commit's [`Changes`]).
    pub changes: usize,
    /// Dataflow pieces run (on each worker); a warm commit runs only those
    /// a change can reach (`render.rs`, `skip.rs`).
    pub pieces_run: usize,
    /// Time spent waiting for the dataflow.
    pub dataflow: Duration,
    /// Time of the whole commit.
    pub elapsed: Duration,
}

/// Counters of the engine.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EngineStats {
    pub workers: usize,
    /// Lanes (`lanes.rs`): timely instances of `workers` threads each, each
    /// running its share of the pieces.
    pub lanes: usize,
    /// Shared arrangements (and negation key sets) each worker built.
    pub arrangements: usize,
    /// Epochs run so far (commit 0 included).
    pub epochs: u64,
    /// The latest commit (commit 0 right after [`Engine::new`](super::Engine::new)).
    pub last: CommitStats,
    /// [`CommitStats::records`] summed over all commits.
    pub total_records: u64,
    /// Building the dataflow (before commit 0): wall time, and CPU time of
    /// every thread of the process meanwhile (`netc compile --timings`).
    pub build_wall: Duration,
    pub build_cpu: Duration,
}
