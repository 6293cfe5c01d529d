//! The warm session: intent compiled once, then kept up to date change by change.
//!
//! What `netc serve` and `netc repl` hold. Rules first, in the manner of an
//! incremental engine:
//! - [`Warm::start`] compiles the rules with the intent texts and evaluates
//!   them from scratch (one *full evaluation*, counted).
//! - [`Warm::change`] takes the new intent texts, compiles them (parsing and
//!   checking are cheap; evaluating is what costs), diffs their facts
//!   against the facts the engine holds and commits only the difference;
//!   then the placement built-in runs on the new inputs and only the
//!   `vip_placement` rows that differ are committed. The result is the same
//!   as a from-scratch evaluation of the new texts (a test compares them).
//! - The one change handled by recomputing: the texts declare relations or
//!   rules that differ from the running program (its *shape*). Then the
//!   engine is rebuilt, and [`Counters::full_evaluations`] says so.
//! - [`Warm::edit`] inserts or deletes single facts (`:assert`/`:retract`).
//! - A dry run (`decide` answers "do not keep": `plan`, `:whatif`) commits,
//!   reads the outcome, and commits the inverse: the state afterwards equals
//!   the state before.
//!
//! Every change reports its [`DeviceDelta`]s: the located output rows that
//! appeared or disappeared, grouped by the device in their `@` column, so
//! only the devices a change touched appear.

use crate as intent;
use crate::engine::{Changes, Engine, EngineError, Transaction};
use crate::findings;
use crate::placement::{self, PlacementError};
use netc_compiler::plan::{Plan, RelId};
use netc_compiler::source::{SourceMap, Span};
use netc_compiler::syntax::confine::Scope;
use netc_compiler::value::{Row, Value};
use netc_compiler::{compile_inputs_in, SourceInput};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

pub use super::texts::{FactText, Includes, IntentText};

/// Why a change was refused. Nothing changed in the session.
#[derive(Debug, thiserror::Error)]
pub enum WarmError {
    #[error("cannot read `{path}`: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot read the rules: {0}")]
    Rules(std::io::Error),
    /// The program has errors; the rendered diagnostics.
    #[error("the intent has errors:\n{0}")]
    Diagnostics(String),
    #[error("engine: {0}")]
    Engine(#[from] EngineError),
    #[error("placement: {0}")]
    Placement(#[from] PlacementError),
    #[error("no such fact to retract: {0}")]
    NoSuchFact(String),
}

/// How the session has worked so far: the evidence that changes are warm.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Engines built and evaluated from scratch (1 after start).
    pub full_evaluations: u64,
    /// Changes committed incrementally into the running engine.
    pub warm_changes: u64,
    /// Base-fact changes the last change committed.
    pub last_input_changes: usize,
    /// Microseconds the last change took (compile + commit + placement).
    pub last_change_micros: u64,
    /// Times the placement built-in read its model and placed every VIP
    /// (start included): a change that moves none of its inputs skips it.
    pub placements: u64,
}

/// The located output rows of one device that a change added or removed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeviceDelta {
    pub device: String,
    /// `(relation, row)`, sorted.
    pub added: Vec<(String, Row)>,
    pub removed: Vec<(String, Row)>,
}

/// What one change did.
#[derive(Clone, Debug, Default)]
pub struct Change {
    /// Only the devices whose rows changed, by name.
    pub devices: Vec<DeviceDelta>,
    /// Bad intent after the change (`error_*` rows), rendered with citations.
    pub findings: Vec<String>,
    /// Whether the engine had to be rebuilt (the program's shape changed).
    pub full: bool,
    /// Base facts inserted or deleted.
    pub input_changes: usize,
}

/// Where an intent fact came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// Written in an intent file.
    File(Span),
    /// Asserted at the REPL.
    Asserted,
}

type Facts = BTreeMap<(RelId, Row), Origin>;

/// A running, evaluated intent.
pub struct Warm {
    rules: Option<PathBuf>,
    includes: Includes,
    engine: Engine,
    /// The relations and rules the engine runs, as text: a change with a
    /// different shape cannot be committed incrementally.
    shape: String,
    /// The latest compilation's plan (its facts' spans cite `sources`).
    plan: Arc<Plan>,
    sources: SourceMap,
    files: Vec<IntentText>,
    intent: Facts,
    /// `vip_placement` rows the built-in committed (not intent facts).
    placed: BTreeSet<Row>,
    /// Whether a relation the placement reads (`placement::model::READS`)
    /// may have changed since `placed` was computed: the built-in is a
    /// function of those relations, so while they stand still it is not
    /// run again (its model read and greedy pass were most of an
    /// `:assert`'s time: docs/performance.md, *The warm path users drive*).
    model_stale: bool,
    counters: Counters,
    /// Where verification keeps the artifact sets its reports cite
    /// (`rollout::verdict::keep_dir` of the session's state directory): a
    /// deployment's layout, so the session's owner says it
    /// ([`Warm::keep_verified_in`]); empty until then.
    verified: PathBuf,
}

struct Compiled {
    plan: Arc<Plan>,
    sources: SourceMap,
    facts: Facts,
}

fn compile(
    files: &[IntentText],
    rules: Option<&Path>,
    includes: &Includes,
) -> Result<Compiled, WarmError> {
    let mut inputs = intent::rules::rule_inputs(rules).map_err(WarmError::Rules)?;
    inputs.extend(files.iter().map(|f| SourceInput::Text {
        name: f.name.clone(),
        text: f.text.clone(),
    }));
    let scope = match includes {
        Includes::Disk => None,
        Includes::Confined { dir } => {
            let texts: Vec<(String, String)> = files
                .iter()
                .map(|f| (f.name.clone(), f.text.clone()))
                .collect();
            Some(Scope::new(&texts, dir.as_deref()))
        }
    };
    let mut c = compile_inputs_in(&inputs, scope.as_ref());
    // As `intent::load`: warnings inside the rules are not the user's to fix.
    let names: Vec<&str> = files.iter().map(|f| f.name.as_str()).collect();
    let sources = &c.sources;
    c.diagnostics.items.retain(|d| {
        d.is_error()
            || d.span
                .is_some_and(|s| names.contains(&sources.file(s.file).name.as_str()))
    });
    let plan = match c.plan.take() {
        Some(p) if !c.diagnostics.has_errors() => p,
        _ => return Err(WarmError::Diagnostics(c.diagnostics.render_all(&c.sources))),
    };
    let facts = plan
        .facts
        .iter()
        .enumerate()
        .map(|(i, (r, row))| {
            let origin = plan
                .fact_spans
                .get(i)
                .map_or(Origin::Asserted, |s| Origin::File(*s));
            ((*r, row.clone()), origin)
        })
        .collect();
    Ok(Compiled {
        plan: Arc::new(plan),
        sources: c.sources,
        facts,
    })
}

fn shape(plan: &Plan) -> String {
    format!("{:?}\n{:?}", plan.relations, plan.strata)
}

impl Warm {
    /// Compiles and evaluates from scratch (one full evaluation); includes
    /// read from disk.
    pub fn start(files: Vec<IntentText>, rules: Option<&Path>) -> Result<Warm, WarmError> {
        Warm::start_in(files, rules, Includes::Disk)
    }

    /// [`Warm::start`], with the texts' includes confined as `includes` says
    /// (for this and every later change).
    pub fn start_in(
        files: Vec<IntentText>,
        rules: Option<&Path>,
        includes: Includes,
    ) -> Result<Warm, WarmError> {
        let c = compile(&files, rules, &includes)?;
        let mut engine = Engine::new(c.plan.clone(), 1)?;
        engine.commit(Transaction::new())?;
        let placed: BTreeSet<Row> = placement::place_into(&mut engine)?
            .map(|p| p.rows().into_iter().collect())
            .unwrap_or_default();
        let model_stale = model_reads_placement(&c.plan);
        Ok(Warm {
            rules: rules.map(Path::to_path_buf),
            includes,
            shape: shape(&c.plan),
            engine,
            plan: c.plan,
            sources: c.sources,
            files,
            intent: c.facts,
            placed,
            // `place_into` commits without reading the changes back: look
            // again at the first change only if the rules let the model
            // read the built-in's own rows.
            model_stale,
            counters: Counters {
                full_evaluations: 1,
                placements: 1,
                ..Default::default()
            },
            verified: PathBuf::new(),
        })
    }

    /// Keeps the artifact sets that verification reports cite in `dir`
    /// (`rollout::verdict::keep_dir` of the state directory).
    pub fn keep_verified_in(&mut self, dir: &Path) {
        self.verified = dir.to_path_buf();
    }

    /// Moves to new intent texts (see the module doc). `decide` sees the
    /// session in its new state and says whether to keep it (`true`) or go
    /// back to the state before (`false`: a dry run), plus anything it read.
    pub fn change<T>(
        &mut self,
        files: Vec<IntentText>,
        decide: impl FnOnce(&Warm, &Change) -> (bool, T),
    ) -> Result<(Change, T), WarmError> {
        let t0 = Instant::now();
        let c = compile(&files, self.rules.as_deref(), &self.includes)?;
        if shape(&c.plan) != self.shape {
            return self.rebuild(files, decide, t0);
        }
        let before = (
            self.intent.clone(),
            std::mem::replace(&mut self.plan, c.plan),
            std::mem::replace(&mut self.sources, c.sources),
            std::mem::replace(&mut self.files, files),
        );
        let mut change = match self.retarget(c.facts) {
            Ok(ch) => ch,
            Err(e) => {
                // `self.intent` is what the engine holds now: undo from there.
                let (old, plan, sources, files) = before;
                let _ = self.retarget(old);
                (self.plan, self.sources, self.files) = (plan, sources, files);
                return Err(e);
            }
        };
        change.findings = self.findings();
        let (keep, seen) = decide(self, &change);
        if keep {
            self.counters.warm_changes += 1;
            self.counters.last_input_changes = change.input_changes;
            self.counters.last_change_micros = t0.elapsed().as_micros() as u64;
        } else {
            let (old, plan, sources, files) = before;
            self.retarget(old)?;
            (self.plan, self.sources, self.files) = (plan, sources, files);
        }
        Ok((change, seen))
    }

    /// The program changed shape: a new engine, compared device by device.
    fn rebuild<T>(
        &mut self,
        files: Vec<IntentText>,
        decide: impl FnOnce(&Warm, &Change) -> (bool, T),
        t0: Instant,
    ) -> Result<(Change, T), WarmError> {
        let mut next = Warm::start_in(files, self.rules.as_deref(), self.includes.clone())?;
        let old = self.located();
        let new = next.located();
        let mut diff: BTreeMap<(String, Row), isize> = BTreeMap::new();
        for k in old.difference(&new) {
            diff.insert(k.clone(), -1);
        }
        for k in new.difference(&old) {
            diff.insert(k.clone(), 1);
        }
        let change = Change {
            devices: group_by_device(&next.plan, diff),
            findings: next.findings(),
            full: true,
            input_changes: next.intent.len() + next.placed.len(),
        };
        let (keep, seen) = decide(&next, &change);
        if keep {
            next.counters = Counters {
                full_evaluations: self.counters.full_evaluations + 1,
                warm_changes: self.counters.warm_changes,
                last_input_changes: change.input_changes,
                last_change_micros: t0.elapsed().as_micros() as u64,
                placements: self.counters.placements + next.counters.placements,
            };
            *self = next;
        }
        Ok((change, seen))
    }

    /// Every located output row, by relation name.
    fn located(&self) -> BTreeSet<(String, Row)> {
        intent::located_outputs(&self.plan)
            .into_iter()
            .flat_map(|r| {
                let name = self.plan.relations[r].name.clone();
                self.engine
                    .contents(r)
                    .into_iter()
                    .map(move |row| (name.clone(), row))
            })
            .collect()
    }

    /// Inserts (`insert`) or deletes one intent fact, as `:assert`/`:retract`.
    /// Proportional to the fact: the transaction is the fact itself (no
    /// copy or diff of the whole intent), unless it is a `vip_placement`
    /// fact, which pins or unpins the placement (then as [`Warm::change`]).
    pub fn edit(&mut self, rel: RelId, row: Row, insert: bool) -> Result<Change, WarmError> {
        let t0 = Instant::now();
        let key = (rel, row);
        let present = self.intent.contains_key(&key);
        if !insert && !present {
            return Err(WarmError::NoSuchFact(super::pattern::show_atom(
                &self.plan.relations[rel].name,
                &key.1,
            )));
        }
        let mut change = if self.plan.relation_id("vip_placement") == Some(rel) {
            let mut next = self.intent.clone();
            if insert {
                next.entry(key).or_insert(Origin::Asserted);
            } else {
                next.remove(&key);
            }
            self.retarget(next)?
        } else {
            let mut tx = Transaction::new();
            match (insert, present) {
                (true, false) => {
                    tx.insert(rel, key.1.clone());
                }
                (false, true) => {
                    tx.delete(rel, key.1.clone());
                }
                _ => {}
            }
            let first = self.commit_facts(tx)?;
            // The engine holds the fact now (see `retarget`).
            if insert {
                self.intent.entry(key).or_insert(Origin::Asserted);
            } else {
                self.intent.remove(&key);
            }
            self.place(first)?
        };
        change.findings = self.findings();
        self.counters.warm_changes += 1;
        self.counters.last_input_changes = change.input_changes;
        self.counters.last_change_micros = t0.elapsed().as_micros() as u64;
        Ok(change)
    }

    /// Commits the base-fact difference to `intent` (keeping the built-in's
    /// rows while the rules re-derive), then the placement difference.
    fn retarget(&mut self, intent: Facts) -> Result<Change, WarmError> {
        let vp = self.plan.relation_id("vip_placement");
        let pins = |facts: &Facts| vp.is_some_and(|v| holds_relation(facts, v));
        let tx = if !pins(&self.intent) && !pins(&intent) {
            // The built-in's rows stand on both sides and no intent fact is
            // one of them: the difference is the intent's own, found by
            // walking the two sorted maps once.
            fact_difference(&self.intent, &intent)
        } else {
            let keep_placed = !pins(&intent);
            let current = self.base();
            let mut wanted: BTreeSet<(RelId, Row)> = intent.keys().cloned().collect();
            if let (Some(v), true) = (vp, keep_placed) {
                wanted.extend(self.placed.iter().map(|r| (v, r.clone())));
            }
            let mut tx = Transaction::new();
            for (r, row) in current.difference(&wanted) {
                tx.delete(*r, row.clone());
            }
            for (r, row) in wanted.difference(&current) {
                tx.insert(*r, row.clone());
            }
            tx
        };
        let pinned = pins(&intent);
        let first = self.commit_facts(tx)?;
        // `self.intent` is what the engine holds from here on: a failing
        // placement leaves them agreeing, and `change` undoes from there.
        self.intent = intent;
        if pinned {
            // The intent places its VIPs itself: the built-in places
            // nothing (its rows went in `tx`), and runs again once unpinned.
            self.placed = BTreeSet::new();
            self.model_stale = true;
            return Ok(self.delta(&[first.0], first.1));
        }
        self.place(first)
    }

    /// Commits intent facts (the built-in's rows kept): the changes and how
    /// many facts went in.
    fn commit_facts(&mut self, tx: Transaction) -> Result<(Changes, usize), WarmError> {
        let n = tx.len();
        Ok((self.engine.commit(tx)?, n))
    }

    /// After [`Warm::commit_facts`]: runs the placement built-in if a
    /// relation it reads may have moved (`model_stale`, or in `first`) and
    /// commits the rows that differ; the change's per-device delta.
    fn place(&mut self, first: (Changes, usize)) -> Result<Change, WarmError> {
        let vp = self.plan.relation_id("vip_placement");
        let (first, mut input_changes) = first;
        let reads: Vec<RelId> = placement::model::READS
            .iter()
            .filter_map(|r| self.plan.relation_id(r))
            .collect();
        let moved = |ch: &Changes| reads.iter().any(|r| !ch.get(*r).is_empty());
        self.model_stale |= moved(&first);
        let mut changes = vec![first];
        if let Some(v) = vp {
            if self.model_stale {
                let mut placed = BTreeSet::new();
                if let Some(inputs) = placement::model::read(&self.engine)? {
                    if !inputs.model.vips.is_empty() {
                        placed = placement::Placement::from_inputs(inputs)
                            .rows()
                            .into_iter()
                            .collect();
                    }
                }
                self.counters.placements += 1;
                let mut tx = Transaction::new();
                for row in self.placed.difference(&placed) {
                    tx.delete(v, row.clone());
                }
                for row in placed.difference(&self.placed) {
                    tx.insert(v, row.clone());
                }
                input_changes += tx.len();
                let second = self.engine.commit(tx)?;
                // Were the model to read its own output, the next change
                // must look again.
                self.model_stale = moved(&second);
                changes.push(second);
                self.placed = placed;
            }
        }
        Ok(self.delta(&changes, input_changes))
    }

    /// The per-device delta of a change's commits.
    fn delta(&self, changes: &[Changes], input_changes: usize) -> Change {
        let mut diff: BTreeMap<(String, Row), isize> = BTreeMap::new();
        let located: BTreeSet<RelId> = intent::located_outputs(&self.plan).into_iter().collect();
        for ch in changes {
            add_changes(&self.plan, &located, ch, &mut diff);
        }
        Change {
            devices: group_by_device(&self.plan, diff),
            findings: Vec::new(),
            full: false,
            input_changes,
        }
    }

    fn base(&self) -> BTreeSet<(RelId, Row)> {
        let mut b: BTreeSet<(RelId, Row)> = self.intent.keys().cloned().collect();
        if let Some(v) = self.plan.relation_id("vip_placement") {
            b.extend(self.placed.iter().map(|r| (v, r.clone())));
        }
        b
    }

    /// Bad intent now (`error_*` rows), rendered with their citations.
    pub fn findings(&self) -> Vec<String> {
        findings::collect(&self.plan, |r| self.engine.contents(r))
            .iter()
            .map(|f| f.render(&self.sources))
            .collect()
    }

    /// Rows of `rel` matching `pattern`.
    pub fn query(&self, pattern: &super::pattern::Pattern) -> Vec<Row> {
        self.engine
            .contents(pattern.rel)
            .into_iter()
            .filter(|r| pattern.matches(r))
            .collect()
    }

    pub fn plan(&self) -> &Arc<Plan> {
        &self.plan
    }
    pub fn engine(&self) -> &Engine {
        &self.engine
    }
    pub fn sources(&self) -> &SourceMap {
        &self.sources
    }
    pub fn files(&self) -> &[IntentText] {
        &self.files
    }
    pub fn rules(&self) -> Option<&Path> {
        self.rules.as_deref()
    }
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// Where an intent fact was written (`file:line:col`), `asserted` for one
    /// asserted at the REPL, `None` if it is not an intent fact.
    pub fn origin(&self, rel: RelId, row: &[Value]) -> Option<String> {
        match self.intent.get(&(rel, row.to_vec()))? {
            Origin::File(s) => Some(self.sources.location(*s)),
            Origin::Asserted => Some("asserted at the prompt".into()),
        }
    }

    /// Whether a `vip_placement` row came from the placement built-in.
    pub fn is_placed(&self, rel: RelId, row: &[Value]) -> bool {
        self.plan.relation_id("vip_placement") == Some(rel) && self.placed.contains(row)
    }

    /// Where verification keeps the artifact sets its reports cite.
    pub fn verified_dir(&self) -> &Path {
        &self.verified
    }

    /// The intent facts by relation, as text (as the verifier reads them).
    pub fn fact_texts(&self) -> BTreeMap<String, Vec<FactText>> {
        let mut facts: BTreeMap<String, Vec<FactText>> = BTreeMap::new();
        for ((rel, row), origin) in &self.intent {
            facts
                .entry(self.plan.relations[*rel].name.clone())
                .or_default()
                .push(FactText {
                    vals: row.iter().map(text).collect(),
                    at: match origin {
                        Origin::File(s) => self.sources.location(*s),
                        Origin::Asserted => "prompt".into(),
                    },
                });
        }
        facts
    }
}

/// A value as artifact text (symbols without quotes).
pub fn text(v: &Value) -> String {
    match v {
        Value::Symbol(s) => s.as_str().to_string(),
        other => other.to_string(),
    }
}

/// Whether a relation the placement built-in reads can depend on
/// `vip_placement`, the relation it writes (not with the standard rules).
fn model_reads_placement(plan: &Plan) -> bool {
    let Some(vp) = plan.relation_id("vip_placement") else {
        return false;
    };
    let settled = crate::settled::settled(plan, &[vp]);
    placement::model::READS
        .iter()
        .filter_map(|r| plan.relation_id(r))
        .any(|r| !settled[r])
}

/// Whether `facts` holds a row of `rel` (the map is sorted by relation
/// first: one range lookup).
fn holds_relation(facts: &Facts, rel: RelId) -> bool {
    facts
        .range((rel, Row::new())..)
        .next()
        .is_some_and(|((r, _), _)| *r == rel)
}

/// The transaction taking the facts `from` to the facts `to`: one walk of
/// the two sorted maps, no copies of the facts they share.
fn fact_difference(from: &Facts, to: &Facts) -> Transaction {
    let mut tx = Transaction::new();
    let (mut a, mut b) = (from.keys().peekable(), to.keys().peekable());
    loop {
        match (a.peek(), b.peek()) {
            (Some(x), Some(y)) => match x.cmp(y) {
                std::cmp::Ordering::Less => {
                    tx.delete(x.0, x.1.clone());
                    a.next();
                }
                std::cmp::Ordering::Greater => {
                    tx.insert(y.0, y.1.clone());
                    b.next();
                }
                std::cmp::Ordering::Equal => {
                    a.next();
                    b.next();
                }
            },
            (Some(x), None) => {
                tx.delete(x.0, x.1.clone());
                a.next();
            }
            (None, Some(y)) => {
                tx.insert(y.0, y.1.clone());
                b.next();
            }
            (None, None) => return tx,
        }
    }
}

fn add_changes(
    plan: &Plan,
    located: &BTreeSet<RelId>,
    ch: &Changes,
    diff: &mut BTreeMap<(String, Row), isize>,
) {
    for (rel, rows) in ch.iter() {
        if !located.contains(&rel) {
            continue;
        }
        for (row, d) in rows {
            let key = (plan.relations[rel].name.clone(), row.clone());
            let e = diff.entry(key.clone()).or_insert(0);
            *e += d;
            if *e == 0 {
                diff.remove(&key);
            }
        }
    }
}

/// Splits located row changes by the device in their `@` column.
fn group_by_device(plan: &Plan, diff: BTreeMap<(String, Row), isize>) -> Vec<DeviceDelta> {
    let mut by: BTreeMap<String, DeviceDelta> = BTreeMap::new();
    for ((rel, row), d) in diff {
        let loc = plan
            .relation_id(&rel)
            .and_then(|r| plan.relations[r].location)
            .unwrap_or(0);
        let device = row.get(loc).map(text).unwrap_or_default();
        let e = by.entry(device.clone()).or_insert_with(|| DeviceDelta {
            device,
            ..Default::default()
        });
        if d > 0 {
            e.added.push((rel, row));
        } else {
            e.removed.push((rel, row));
        }
    }
    by.into_values().collect()
}

#[cfg(test)]
mod tests;
