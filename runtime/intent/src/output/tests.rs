//! Tests of the output writers: the parallel writers give the files, bytes
//! and errors the one-thread reference writers give; staging replaces a
//! directory as a whole.

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
    let w = write_outputs(&plan, &e, &two, Early::none()).unwrap();
    assert_eq!((w.artifacts, w.relations), (n, 1));
    assert_eq!(n, 97 * 2);
    assert_eq!(files(&one), files(&two));
    let _ = std::fs::remove_dir_all(&one);
    let _ = std::fs::remove_dir_all(&two);
}

#[test]
fn written_early_then_after_is_what_one_thread_writes() {
    let e = engine(97, &[]);
    let plan = e.plan().clone();
    let (one, two) = (scratch("one-e"), scratch("early"));
    let n = write_artifacts(&plan, &e, &one).unwrap();
    write_relations(&plan, &e, &one).unwrap();
    let settled = vec![true; plan.relations.len()];
    let early = write_early(&plan, e.view(), &two, &settled);
    assert!(early.dumped.len() == 1 && early.boarded == ["ovs"]);
    let w = write_outputs(&plan, &e, &two, early).unwrap();
    assert_eq!((w.artifacts, w.relations), (n, 1));
    assert_eq!(files(&one), files(&two));
    let _ = std::fs::remove_dir_all(&one);
    let _ = std::fs::remove_dir_all(&two);
}

#[test]
fn an_unfinished_staging_leaves_no_directory_it_created() {
    let root = scratch("staging");
    std::fs::create_dir_all(root.join("kept")).unwrap();
    let out = root.join("kept/a/b/out");
    let staging = Staging::begin(&out).unwrap();
    std::fs::write(staging.dir().join("x"), "half").unwrap();
    assert!(root.join("kept/a/b").is_dir());
    drop(staging);
    assert!(root.join("kept").is_dir(), "a parent that existed stays");
    assert!(!root.join("kept/a").exists(), "{:?}", files(&root));
    // Finished, the parents it made are the output's and stay.
    let staging = Staging::begin(&out).unwrap();
    staging.finish().unwrap();
    assert!(out.is_dir());
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_dropped_early_write_stops_before_it_returns() {
    let e = engine(400, &[]);
    let plan = e.plan().clone();
    let dir = scratch("dropped");
    let settled = vec![true; plan.relations.len()];
    drop(write_early(&plan, e.view(), &dir, &settled));
    // Nothing writes into the directory once the drop returned.
    let now = files(&dir);
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert_eq!(files(&dir), now);
    let _ = std::fs::remove_dir_all(&dir);
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
            let two = write_outputs(&plan, &e, &dir, Early::none()).unwrap_err();
            let settled = vec![true; plan.relations.len()];
            let early = write_early(&plan, e.view(), &dir, &settled);
            let three = write_outputs(&plan, &e, &dir, early).unwrap_err();
            for err in [one, two, three] {
                match err {
                    ArtifactError::Render(r) => assert_eq!(r.device, first),
                    other => panic!("{other}"),
                }
            }
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}
