//! Writing an evaluated intent's outputs: the relation dumps, each device's
//! artifacts, and the directory that holds them replaced as a whole.
//!
//! - [`write_outputs`] (`netc compile`, after the dataflow is released, so
//!   both cores are free): the dumps on a second thread; the artifacts
//!   target by target, rows grouped by device on the calling thread, then
//!   the devices rendered and written by two threads that take them in
//!   order from one counter ([`render_devices`]). Same files, same bytes as
//!   one thread, and the same error: the first device in order that fails;
//! - [`dump_settled`]: the dumps of the relations no later commit changes,
//!   written while the placement is computed (`intent::evaluate_beside`);
//! - [`write_relations`] / [`write_artifacts`]: each alone, on one thread;
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
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

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

/// Writes the relation dumps ([`write_relations`]) and the device
/// artifacts ([`write_artifacts`]) on the calling thread and two more (see
/// the module map): `netc compile` calls it after releasing the dataflow,
/// when the workers' cores are idle.
///
/// `dumped`: relations whose dump is already in `dir` ([`dump_settled`]).
pub fn write_outputs(
    plan: &Plan,
    engine: &Engine,
    dir: &Path,
    dumped: &[RelId],
) -> Result<Written, ArtifactError> {
    let view = engine.view();
    std::thread::scope(|s| {
        let dumps = s.spawn(|| {
            let mut clock = PartClock::new("second");
            let todo: Vec<RelId> = located_outputs(plan)
                .into_iter()
                .filter(|r| !dumped.contains(r))
                .collect();
            let n = relations_into(plan, &todo, |r| view.contents(r), dir, &mut clock)?;
            Ok::<_, std::io::Error>((n + dumped.len(), clock.parts))
        });
        let mut clock = PartClock::new("main");
        let artifacts = artifacts_into(plan, |r| view.contents(r), dir, &mut clock, true);
        let (relations, dump_parts) = match dumps.join() {
            Ok(written) => written?,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        let mut parts = clock.parts;
        parts.extend(dump_parts);
        Ok(Written {
            relations,
            artifacts: artifacts?,
            parts,
        })
    })
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

/// Dumps (as [`write_relations`] does) the relations `todo`, in order,
/// until `stop` is set (checked between relations) or one fails: what
/// `netc compile` does on a second core while the placement is computed,
/// with the located outputs no later commit changes, largest first.
/// Returns the relations dumped and the time it took; a failure only ends
/// it early (the relations not dumped are left to [`write_outputs`], which
/// reports failures).
pub fn dump_settled(
    plan: &Plan,
    view: crate::engine::View<'_>,
    dir: &Path,
    todo: &[RelId],
    stop: &AtomicBool,
) -> (Vec<RelId>, Vec<Part>) {
    let mut clock = PartClock::new("second");
    let mut done = Vec::new();
    for &r in todo {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        match relations_into(plan, &[r], |r| view.contents(r), dir, &mut clock) {
            Ok(_) => done.push(r),
            Err(_) => break,
        }
    }
    (done, clock.parts)
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
        false,
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
        let rows = clock.time("dump_read", "relation dumps: read rows", || contents(r));
        let text = clock.time("dump_format", "relation dumps: format", || {
            csv::render(&rows, "\t")
        });
        drop(rows);
        clock.time("dump_write", "relation dumps: write", || {
            std::fs::write(
                rel_dir.join(format!("{}.csv", plan.relations[r].name)),
                text,
            )
        })?;
        n += 1;
    }
    Ok(n)
}

/// The artifacts, target by target; with `two_threads`, each target's
/// devices are rendered and written by this thread and a helper.
fn artifacts_into(
    plan: &Plan,
    contents: impl Fn(RelId) -> Vec<Row>,
    dir: &Path,
    clock: &mut PartClock,
    two_threads: bool,
) -> Result<usize, ArtifactError> {
    let located = located_outputs(plan);
    let mut written = 0;
    for target in netc_targets::renderers() {
        let consumed: Vec<RelId> = located
            .iter()
            .copied()
            .filter(|&r| target.consumes(&plan.relations[r].name))
            .collect();
        // Reading a relation's rows happens inside the grouping, one
        // relation at a time (never every relation's rows at once).
        let mut read = Span::default();
        let grouping = Mark::thread();
        let devices = netc_targets::group_by_device(plan, &consumed, |r| {
            let mark = Mark::thread();
            let rows = contents(r);
            read += mark.span();
            rows
        });
        let grouped = grouping.span();
        clock.add("read", "artifacts: read rows", read);
        clock.add(
            "group",
            "artifacts: group rows by device",
            Span {
                wall: grouped.wall.saturating_sub(read.wall),
                cpu: grouped.cpu.saturating_sub(read.cpu),
            },
        );
        let devices: Vec<(&String, &DeviceRows)> = devices.iter().collect();
        let queue = Queue::default();
        if two_threads && devices.len() > 1 {
            let helper = std::thread::scope(|s| {
                let helper = s.spawn(|| {
                    let mut c = PartClock::new("helper");
                    render_devices(target.as_ref(), &devices, &queue, dir, &mut c);
                    c
                });
                render_devices(target.as_ref(), &devices, &queue, dir, clock);
                helper.join()
            });
            match helper {
                Ok(c) => clock.merge(c),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        } else {
            render_devices(target.as_ref(), &devices, &queue, dir, clock);
        }
        if let Some((_, e)) = queue.failed.into_inner().unwrap_or_else(|p| p.into_inner()) {
            return Err(e);
        }
        written += queue.written.into_inner();
    }
    Ok(written)
}

/// The devices of one target, shared by the threads that render them.
#[derive(Default)]
struct Queue {
    /// The next device to take.
    next: AtomicUsize,
    /// Set at the first failure: no thread takes another device.
    stop: AtomicBool,
    /// The failure of the first device in order that failed.
    failed: Mutex<Option<(usize, ArtifactError)>>,
    /// Files written.
    written: AtomicUsize,
}

/// Takes devices in order from `queue` until none is left (or one failed),
/// rendering each and writing its files. Every device before a failed one
/// was taken before it, and a thread finishes the device it took, so the
/// failure kept (the lowest index) is the one a single thread would meet.
fn render_devices(
    target: &dyn Renderer,
    devices: &[(&String, &DeviceRows)],
    queue: &Queue,
    dir: &Path,
    clock: &mut PartClock,
) {
    // The last directory made: a target's files share one or two.
    let mut made: Option<PathBuf> = None;
    while !queue.stop.load(Ordering::Relaxed) {
        let i = queue.next.fetch_add(1, Ordering::Relaxed);
        let Some((device, rows)) = devices.get(i) else {
            break;
        };
        let rendered = clock.time("render", "artifacts: render", || {
            target.render(device, rows)
        });
        let result = rendered.map_err(ArtifactError::from).and_then(|files| {
            clock.time("write", "artifacts: write files", || {
                for a in &files {
                    let path = dir.join(&a.path);
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
                queue.written.fetch_add(n, Ordering::Relaxed);
            }
            Err(e) => {
                queue.stop.store(true, Ordering::Relaxed);
                let mut failed = queue.failed.lock().unwrap_or_else(|p| p.into_inner());
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
/// unfinished, it is removed and `out` is untouched.
#[derive(Debug)]
pub struct Staging {
    out: PathBuf,
    tmp: PathBuf,
    old: PathBuf,
    finished: bool,
}

impl Staging {
    pub fn begin(out: &Path) -> std::io::Result<Staging> {
        let parent = out
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        std::fs::create_dir_all(parent)?;
        let name = out
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "out".into());
        let tmp = parent.join(format!(".{name}.tmp-{}", std::process::id()));
        let old = parent.join(format!(".{name}.old-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::create_dir_all(&tmp)?;
        Ok(Staging {
            out: out.to_path_buf(),
            tmp,
            old,
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
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// `hosts` hosts with one good flow each; those in `bad` also get a
    /// flow in table 999, which the OVS target refuses.
    fn engine(hosts: usize, bad: &[usize]) -> Engine {
        let mut text = String::from(
            ".decl ovs_flow(@host: symbol, table: number, priority: number, match: symbol, \
             actions: symbol, cookie: number)\n.output ovs_flow\n",
        );
        for h in 0..hosts {
            text.push_str(&format!(
                "ovs_flow(\"h{h:03}\", 0, {h}, \"in_port={h}\", \"drop\", 1).\n"
            ));
        }
        for h in bad {
            text.push_str(&format!(
                "ovs_flow(\"h{h:03}\", 999, 1, \"\", \"drop\", 1).\n"
            ));
        }
        let c = netc_compiler::compile_text("t.ndl", &text);
        assert!(!c.diagnostics.has_errors(), "{:?}", c.diagnostics.items);
        Engine::new(Arc::new(c.plan.unwrap()), 1).unwrap()
    }

    fn files(dir: &Path) -> Vec<(PathBuf, String)> {
        let mut out = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    stack.push(p);
                } else {
                    let text = std::fs::read_to_string(&p).unwrap();
                    out.push((p.strip_prefix(dir).unwrap().to_path_buf(), text));
                }
            }
        }
        out.sort();
        out
    }

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("netc-output-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn two_threads_write_what_one_thread_writes() {
        let e = engine(97, &[]);
        let plan = e.plan().clone();
        let (one, two) = (scratch("one"), scratch("two"));
        let n = write_artifacts(&plan, &e, &one).unwrap();
        write_relations(&plan, &e, &one).unwrap();
        let w = write_outputs(&plan, &e, &two, &[]).unwrap();
        assert_eq!((w.artifacts, w.relations), (n, 1));
        assert_eq!(n, 97 * 2);
        assert_eq!(files(&one), files(&two));
        let _ = std::fs::remove_dir_all(&one);
        let _ = std::fs::remove_dir_all(&two);
    }

    #[test]
    fn the_error_is_the_first_failing_device_in_order_with_any_threads() {
        for bad in [vec![5, 60, 61, 90], vec![89, 3], vec![0], vec![96]] {
            let e = engine(97, &bad);
            let plan = e.plan().clone();
            let first = format!("h{:03}", bad.iter().min().unwrap());
            for _ in 0..5 {
                let dir = scratch("bad");
                let one = write_artifacts(&plan, &e, &dir).unwrap_err();
                let two = write_outputs(&plan, &e, &dir, &[]).unwrap_err();
                for err in [one, two] {
                    match err {
                        ArtifactError::Render(r) => assert_eq!(r.device, first),
                        other => panic!("{other}"),
                    }
                }
                let _ = std::fs::remove_dir_all(&dir);
            }
        }
    }
}
