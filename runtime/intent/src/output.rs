//! Writing an evaluated intent's outputs: the relation dumps, each device's
//! artifacts, and the directory that holds them replaced as a whole.
//!
//! - [`write_early`] (`netc compile`, on a second core while the placement
//!   is computed): every relation the placement's commit cannot change
//!   (`settled.rs`) is read once, dumped, and grouped by device for the
//!   targets that read only such relations (OVS, host agents); their
//!   devices go on a [`Board`] that a thread of its own starts rendering
//!   and writing at once, and goes on with after the placement;
//! - [`write_outputs`] (after the dataflow is released): the rest — the
//!   relations still to dump and the targets still to render (P4, which
//!   reads `vip_placement`), each relation read once — then this thread
//!   renders from the board beside that one (or beside a helper when there
//!   is none) until every device is written. A target's devices are taken
//!   in order from one counter ([`render_devices`]): same files, same bytes
//!   as one thread, and the same error — the first target in order with a
//!   failing device, and its first failing device in order;
//!   `Early::none()` (`netc verify INTENT`, `netc serve`'s verification):
//!   all of it, each relation read once;
//! - [`write_relations`] / [`write_artifacts`]: each alone, on one thread
//!   (the reference the tests compare [`write_outputs`] with);
//! - [`write_atomically`] ([`Staging`]): a reader never sees a
//!   half-written directory.
//!
//! Every part's time is summed for `netc compile --timings` ([`Written`]).

use super::timings::{Mark, Part, Span};
use super::{located_outputs, Engine};
use crate::io::csv;
use netc_compiler::plan::{Plan, RelId};
use netc_compiler::value::Row;
use netc_targets::{DeviceRows, Renderer};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// What [`write_outputs`] wrote, and where its time went.
#[derive(Debug, Default)]
pub struct Written {
    pub relations: usize,
    pub artifacts: usize,
    /// Its parts for `--timings`: reading, grouping, rendering and writing
    /// the artifacts (`main`, rendering also `helper`); the dumps on the
    /// `second` thread.
    pub parts: Vec<Part>,
}

/// A device's rows could not be rendered, or the files not written.
#[derive(Debug, thiserror::Error)]
pub enum ArtifactError {
    #[error(transparent)]
    Render(#[from] netc_targets::RenderError),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// What [`write_early`] did while the placement was computed, and the
/// thread still rendering its devices. Dropped without [`write_outputs`]
/// (a failed compile), it stops that thread and waits for it, so the
/// staging directory is removed only when nothing writes into it.
pub struct Early {
    /// Relations whose dump is written.
    dumped: Vec<RelId>,
    /// Targets whose devices are all on the board (`Renderer::name`).
    boarded: Vec<&'static str>,
    board: Arc<Board>,
    /// The thread rendering from the board; returns its parts.
    renderer: Option<std::thread::JoinHandle<Vec<Part>>>,
    /// The first dump that could not be written (reported by
    /// [`write_outputs`]).
    error: Option<std::io::Error>,
    /// Reading, dumping and grouping, for `--timings` (the `second`
    /// thread, during the placement).
    pub parts: Vec<Part>,
}

impl Early {
    /// Nothing written early: [`write_outputs`] does everything.
    pub fn none() -> Early {
        Early {
            dumped: Vec::new(),
            boarded: Vec::new(),
            board: Arc::default(),
            renderer: None,
            error: None,
            parts: Vec::new(),
        }
    }
}

impl Default for Early {
    fn default() -> Early {
        Early::none()
    }
}

impl Drop for Early {
    fn drop(&mut self) {
        if let Some(renderer) = self.renderer.take() {
            self.board.stop.store(true, Ordering::Relaxed);
            let _ = renderer.join();
        }
    }
}

/// Reads, dumps and groups every located output that `settled` marks
/// (largest first), then starts a thread rendering the targets that read
/// only those (see the module map). Returns when every settled relation has
/// been read: from then on nothing borrows the engine, so the placement's
/// commit may change it while that thread renders.
pub fn write_early(
    plan: &Plan,
    view: crate::engine::View<'_>,
    dir: &Path,
    settled: &[bool],
) -> Early {
    let mut early = Early::none();
    let mut clock = PartClock::new("second");
    let located = located_outputs(plan);
    let is_settled = |r: RelId| settled.get(r).copied().unwrap_or(false);
    // A target is rendered early when every located relation it reads is
    // settled (and it reads some).
    let targets: Vec<(usize, Box<dyn Renderer>)> = netc_targets::renderers()
        .into_iter()
        .enumerate()
        .filter(|(_, t)| {
            let reads: Vec<RelId> = consumed(plan, &located, t.as_ref());
            !reads.is_empty() && reads.into_iter().all(is_settled)
        })
        .collect();
    let mut todo: Vec<(usize, RelId)> = located
        .iter()
        .copied()
        .filter(|&r| is_settled(r))
        .map(|r| (view.len(r), r))
        .collect();
    todo.sort_by(|x, y| y.cmp(x));
    let mut grouped: Vec<BTreeMap<String, DeviceRows>> = vec![BTreeMap::new(); targets.len()];
    let rel_dir = dir.join("relations");
    if let Err(e) = std::fs::create_dir_all(&rel_dir) {
        early.error = Some(e);
    }
    for (_, r) in todo {
        let rows = clock.time("read", "read rows (once: dumps and artifacts)", || {
            view.contents(r)
        });
        if early.error.is_none() {
            match dump(plan, r, &rows, &rel_dir, &mut clock) {
                Ok(()) => early.dumped.push(r),
                Err(e) => early.error = Some(e),
            }
        }
        let readers: Vec<usize> = (0..targets.len())
            .filter(|&t| targets[t].1.consumes(&plan.relations[r].name))
            .collect();
        let mut rows = Some(rows);
        for (k, &t) in readers.iter().enumerate() {
            let mine = if k + 1 == readers.len() {
                rows.take().unwrap_or_default()
            } else {
                rows.clone().unwrap_or_default()
            };
            clock.time("group", "artifacts: group rows by device", || {
                netc_targets::group_into(&mut grouped[t], plan, r, mine)
            });
        }
    }
    for ((index, target), mut devices) in targets.into_iter().zip(grouped) {
        clock.time("group", "artifacts: group rows by device", || {
            netc_targets::sort_groups(&mut devices);
        });
        early.boarded.push(target.name());
        early.board.push(Job::new(index, target, devices));
    }
    early.parts = clock.parts;
    if early.board.left() > 0 {
        let (board, dir) = (early.board.clone(), dir.to_path_buf());
        early.renderer = Some(std::thread::spawn(move || {
            let mut clock = PartClock::new("second");
            board.work(&dir, &mut clock);
            clock.parts
        }));
    }
    early
}

/// Writes what [`write_early`] left: the remaining relation dumps and the
/// remaining targets' artifacts, each relation read once, then renders from
/// the board with the early thread (or a helper) until every device is
/// written (see the module map): `netc compile` calls it after releasing
/// the dataflow. `Early::none()`: everything.
pub fn write_outputs(
    plan: &Plan,
    engine: &Engine,
    dir: &Path,
    mut early: Early,
) -> Result<Written, ArtifactError> {
    if let Some(e) = early.error.take() {
        return Err(e.into());
    }
    let view = engine.view();
    let mut clock = PartClock::new("main");
    let located = located_outputs(plan);
    let rel_dir = dir.join("relations");
    std::fs::create_dir_all(&rel_dir)?;
    let mut to_dump: Vec<RelId> = located
        .iter()
        .copied()
        .filter(|r| !early.dumped.contains(r))
        .collect();
    let to_dump_at_first = to_dump.len();
    for (index, target) in netc_targets::renderers().into_iter().enumerate() {
        if early.boarded.contains(&target.name()) {
            continue;
        }
        let mut devices = BTreeMap::new();
        for r in consumed(plan, &located, target.as_ref()) {
            let rows = read_once(plan, view, r, &mut to_dump, &rel_dir, &mut clock)?;
            clock.time("group", "artifacts: group rows by device", || {
                netc_targets::group_into(&mut devices, plan, r, rows)
            });
        }
        clock.time("group", "artifacts: group rows by device", || {
            netc_targets::sort_groups(&mut devices);
        });
        early.board.push(Job::new(index, target, devices));
    }
    while let Some(&r) = to_dump.first() {
        read_once(plan, view, r, &mut to_dump, &rel_dir, &mut clock)?;
    }
    let dumped = early.dumped.len() + to_dump_at_first;
    // Render beside the early thread while it still works, else beside a
    // helper (when more than one device is left).
    let renderer = early.renderer.take();
    let helper_needed = renderer.as_ref().is_none_or(|h| h.is_finished()) && early.board.left() > 1;
    let board = &early.board;
    let helper = std::thread::scope(|s| {
        let helper = helper_needed.then(|| {
            s.spawn(|| {
                let mut c = PartClock::new("helper");
                board.work(dir, &mut c);
                c
            })
        });
        board.work(dir, &mut clock);
        helper.map(|h| h.join())
    });
    match helper {
        Some(Ok(c)) => clock.merge(c),
        Some(Err(panic)) => std::panic::resume_unwind(panic),
        None => {}
    }
    if let Some(r) = renderer {
        match r.join() {
            Ok(parts) => parts.into_iter().for_each(|p| clock.absorb(p)),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }
    let (artifacts, failure) = early.board.outcome();
    if let Some(e) = failure {
        return Err(e);
    }
    Ok(Written {
        relations: dumped,
        artifacts,
        parts: clock.parts,
    })
}

/// Reads relation `r` (once: a relation still in `to_dump` is dumped on the
/// way and taken off it) and returns its rows.
fn read_once(
    plan: &Plan,
    view: crate::engine::View<'_>,
    r: RelId,
    to_dump: &mut Vec<RelId>,
    rel_dir: &Path,
    clock: &mut PartClock,
) -> std::io::Result<Vec<Row>> {
    let rows = clock.time("read", "read rows (once: dumps and artifacts)", || {
        view.contents(r)
    });
    if let Some(i) = to_dump.iter().position(|&d| d == r) {
        to_dump.remove(i);
        dump(plan, r, &rows, rel_dir, clock)?;
    }
    Ok(rows)
}

/// Writes `dir/relations/<relation>.csv` for every located output relation.
pub fn write_relations(plan: &Plan, engine: &Engine, dir: &Path) -> std::io::Result<usize> {
    relations_into(
        plan,
        &located_outputs(plan),
        |r| engine.contents(r),
        dir,
        &mut PartClock::new("main"),
    )
}

/// The located relations `target` reads.
fn consumed(plan: &Plan, located: &[RelId], target: &dyn Renderer) -> Vec<RelId> {
    located
        .iter()
        .copied()
        .filter(|&r| target.consumes(&plan.relations[r].name))
        .collect()
}

/// Formats and writes one relation's dump from its (sorted) rows.
fn dump(
    plan: &Plan,
    r: RelId,
    rows: &[Row],
    rel_dir: &Path,
    clock: &mut PartClock,
) -> std::io::Result<()> {
    let text = clock.time("dump_format", "relation dumps: format", || {
        csv::render_sorted(rows, "\t")
    });
    clock.time("dump_write", "relation dumps: write", || {
        std::fs::write(
            rel_dir.join(format!("{}.csv", plan.relations[r].name)),
            text,
        )
    })
}

/// Renders every device's artifacts with every target and writes them under
/// `dir` (the files `netc_targets::render_all` gives). One target at a time,
/// holding only the rows it consumes, and each device's files written as
/// soon as they are rendered: at 100k VMs the rows and the text are GBs.
pub fn write_artifacts(plan: &Plan, engine: &Engine, dir: &Path) -> Result<usize, ArtifactError> {
    artifacts_into(
        plan,
        |r| engine.contents(r),
        dir,
        &mut PartClock::new("main"),
    )
}

/// Sums the time of each part of a loop on one thread (`--timings`).
struct PartClock {
    thread: &'static str,
    parts: Vec<Part>,
}

impl PartClock {
    fn new(thread: &'static str) -> PartClock {
        PartClock {
            thread,
            parts: Vec::new(),
        }
    }

    /// Runs `f`, adding its time to part `name`.
    fn time<T>(&mut self, name: &'static str, label: &'static str, f: impl FnOnce() -> T) -> T {
        let mark = Mark::thread();
        let out = f();
        self.add(name, label, mark.span());
        out
    }

    /// Adds `span` to part `name`.
    fn add(&mut self, name: &'static str, label: &'static str, span: Span) {
        let thread = self.thread;
        self.absorb(Part {
            name,
            label,
            thread,
            span,
        });
    }

    /// Adds another thread's parts (same names add up).
    fn merge(&mut self, other: PartClock) {
        for p in other.parts {
            self.absorb(p);
        }
    }

    /// Adds `p`'s time to the part of the same name and thread, or keeps it.
    fn absorb(&mut self, p: Part) {
        match self
            .parts
            .iter_mut()
            .find(|q| q.name == p.name && q.thread == p.thread)
        {
            Some(q) => q.span += p.span,
            None => self.parts.push(p),
        }
    }
}

fn relations_into(
    plan: &Plan,
    relations: &[RelId],
    contents: impl Fn(RelId) -> Vec<Row>,
    dir: &Path,
    clock: &mut PartClock,
) -> std::io::Result<usize> {
    let rel_dir = dir.join("relations");
    std::fs::create_dir_all(&rel_dir)?;
    let mut n = 0;
    for &r in relations {
        let rows = clock.time("read", "read rows (once: dumps and artifacts)", || {
            contents(r)
        });
        dump(plan, r, &rows, &rel_dir, clock)?;
        n += 1;
    }
    Ok(n)
}

/// The artifacts, target by target, on this thread.
fn artifacts_into(
    plan: &Plan,
    contents: impl Fn(RelId) -> Vec<Row>,
    dir: &Path,
    clock: &mut PartClock,
) -> Result<usize, ArtifactError> {
    let located = located_outputs(plan);
    let board = Board::default();
    for (index, target) in netc_targets::renderers().into_iter().enumerate() {
        let mut devices = BTreeMap::new();
        for r in consumed(plan, &located, target.as_ref()) {
            let rows = clock.time("read", "read rows (once: dumps and artifacts)", || {
                contents(r)
            });
            clock.time("group", "artifacts: group rows by device", || {
                netc_targets::group_into(&mut devices, plan, r, rows)
            });
        }
        netc_targets::sort_groups(&mut devices);
        board.push(Job::new(index, target, devices));
        // One target at a time: only its rows are held.
        board.work(dir, clock);
        if board.failed() {
            break;
        }
    }
    let (written, failure) = board.outcome();
    match failure {
        Some(e) => Err(e),
        None => Ok(written),
    }
}

/// The devices of the targets being rendered, shared by the threads that
/// render them (see the module map).
#[derive(Default)]
pub struct Board {
    jobs: Mutex<Vec<Arc<Job>>>,
    /// Set when the compile is abandoned: no thread takes another device.
    stop: AtomicBool,
}

/// One target's devices, in order, each taken by one thread.
struct Job {
    /// The target's place in `netc_targets::renderers()`.
    index: usize,
    target: Box<dyn Renderer>,
    /// Taken (and freed once written) by the thread that renders it.
    devices: Vec<Mutex<Option<(String, DeviceRows)>>>,
    /// The next device to take.
    next: AtomicUsize,
    /// Set at the first failure: no thread takes another device.
    stop: AtomicBool,
    /// The failure of the first device in order that failed.
    failed: Mutex<Option<(usize, ArtifactError)>>,
    /// Files written.
    written: AtomicUsize,
}

impl Job {
    fn new(index: usize, target: Box<dyn Renderer>, devices: BTreeMap<String, DeviceRows>) -> Job {
        Job {
            index,
            target,
            devices: devices.into_iter().map(|d| Mutex::new(Some(d))).collect(),
            next: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
            failed: Mutex::new(None),
            written: AtomicUsize::new(0),
        }
    }

    fn left(&self) -> usize {
        if self.stop.load(Ordering::Relaxed) {
            return 0;
        }
        self.devices
            .len()
            .saturating_sub(self.next.load(Ordering::Relaxed))
    }
}

impl Board {
    fn push(&self, job: Job) {
        lock(&self.jobs).push(Arc::new(job));
    }

    /// Devices not yet taken.
    fn left(&self) -> usize {
        lock(&self.jobs).iter().map(|j| j.left()).sum()
    }

    fn failed(&self) -> bool {
        lock(&self.jobs).iter().any(|j| lock(&j.failed).is_some())
    }

    /// Renders devices, the first job's first, until none is left.
    fn work(&self, dir: &Path, clock: &mut PartClock) {
        while !self.stop.load(Ordering::Relaxed) {
            let job = lock(&self.jobs).iter().find(|j| j.left() > 0).cloned();
            let Some(job) = job else { break };
            render_devices(&job, dir, clock, &self.stop);
        }
    }

    /// Files written, and the failure to report: the first target in order
    /// with a failing device, its first failing device in order.
    fn outcome(&self) -> (usize, Option<ArtifactError>) {
        let mut jobs = lock(&self.jobs).clone();
        jobs.sort_by_key(|j| j.index);
        let written = jobs.iter().map(|j| j.written.load(Ordering::Relaxed)).sum();
        let failure = jobs
            .iter()
            .find_map(|j| lock(&j.failed).take().map(|(_, e)| e));
        (written, failure)
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Takes devices in order from `job` until none is left (or one failed, or
/// `abandon` is set), rendering each and writing its files. Every device
/// before a failed one was taken before it, and a thread finishes the
/// device it took, so the failure kept (the lowest index) is the one a
/// single thread would meet.
fn render_devices(job: &Job, dir: &Path, clock: &mut PartClock, abandon: &AtomicBool) {
    // The last directory made: a target's files share one or two.
    let mut made: Option<PathBuf> = None;
    while !job.stop.load(Ordering::Relaxed) && !abandon.load(Ordering::Relaxed) {
        let i = job.next.fetch_add(1, Ordering::Relaxed);
        let Some(slot) = job.devices.get(i) else {
            break;
        };
        let Some((device, rows)) = lock(slot).take() else {
            continue;
        };
        let rendered = clock.time("render", "artifacts: render", || {
            job.target.render(&device, &rows)
        });
        drop(rows);
        let result = rendered.map_err(ArtifactError::from).and_then(|files| {
            clock.time("write", "artifacts: write files", || {
                for a in &files {
                    // a device's name is its files' name: never a path out of `dir`
                    let path = crate::io::contained::join(dir, &a.path.to_string_lossy())?;
                    if let Some(parent) = path.parent() {
                        if made.as_deref() != Some(parent) {
                            std::fs::create_dir_all(parent)?;
                            made = Some(parent.to_path_buf());
                        }
                    }
                    std::fs::write(path, &a.contents)?;
                }
                Ok::<_, ArtifactError>(files.len())
            })
        });
        match result {
            Ok(n) => {
                job.written.fetch_add(n, Ordering::Relaxed);
            }
            Err(e) => {
                job.stop.store(true, Ordering::Relaxed);
                let mut failed = lock(&job.failed);
                if failed.as_ref().is_none_or(|(j, _)| i < *j) {
                    *failed = Some((i, e));
                }
                break;
            }
        }
    }
}

/// Replaces `out` by the directory `build` fills, so a reader never sees a
/// half-written artifact set: `build` writes into a fresh sibling directory,
/// which is renamed into place only when it succeeded.
pub fn write_atomically(
    out: &Path,
    build: impl FnOnce(&Path) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let staging = Staging::begin(out)?;
    build(staging.dir())?;
    staging.finish()
}

/// A fresh sibling directory of `out` being filled: [`write_atomically`]
/// in two halves, for a caller that starts writing before it knows whether
/// it will finish. [`Staging::finish`] renames it into place; dropped
/// unfinished, it is removed and `out` is untouched, and so is the file
/// system above it: parent directories it had to create are removed too.
#[derive(Debug)]
pub struct Staging {
    out: PathBuf,
    tmp: PathBuf,
    old: PathBuf,
    /// The parents of `out` that [`Staging::begin`] created, innermost
    /// first: a refused compile must not leave `a/b/` behind for `--out a/b/out`.
    created: Vec<PathBuf>,
    finished: bool,
}

impl Staging {
    pub fn begin(out: &Path) -> std::io::Result<Staging> {
        let parent = out
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let created: Vec<PathBuf> = parent
            .ancestors()
            .take_while(|a| !a.as_os_str().is_empty() && !a.exists())
            .map(Path::to_path_buf)
            .collect();
        std::fs::create_dir_all(parent)?;
        let name = out
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "out".into());
        let tmp = parent.join(format!(".{name}.tmp-{}", std::process::id()));
        let old = parent.join(format!(".{name}.old-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::create_dir_all(&tmp)?;
        // removed even by an out-of-memory exit, which runs no Drop
        crate::oom::stage(&tmp);
        Ok(Staging {
            out: out.to_path_buf(),
            tmp,
            old,
            created,
            finished: false,
        })
    }

    /// Where to write.
    pub fn dir(&self) -> &Path {
        &self.tmp
    }

    /// Puts the directory in place of `out` (the previous `out`, if any,
    /// is removed).
    pub fn finish(mut self) -> std::io::Result<()> {
        self.finished = true;
        crate::oom::unstage(&self.tmp);
        if self.out.exists() {
            std::fs::rename(&self.out, &self.old)?;
        }
        std::fs::rename(&self.tmp, &self.out)?;
        let _ = std::fs::remove_dir_all(&self.old);
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.finished {
            let _ = std::fs::remove_dir_all(&self.tmp);
            crate::oom::unstage(&self.tmp);
            // `remove_dir` refuses a directory someone else has written
            // into meanwhile, which is what we want.
            for dir in &self.created {
                if std::fs::remove_dir(dir).is_err() {
                    break;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
