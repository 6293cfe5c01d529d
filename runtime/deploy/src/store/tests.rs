//! The store against real SQLite files in temporary directories.

use super::*;

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("netc-store-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn sample(n: usize) -> NewGeneration {
    NewGeneration {
        files: vec![IntentFile::new("a.ndl", format!("host(\"h{n}\").\n"))],
        facts: vec![IntentFact {
            relation: "host".into(),
            row: format!("h{n}"),
            at: "a.ndl:1".into(),
        }],
        outputs: vec![
            DeviceOutput {
                device: "h1".into(),
                kind: "ovs".into(),
                path: "ovs/h1.flows".into(),
                text: format!("table=0,priority={n},actions=drop\n"),
                pushed: true,
            },
            DeviceOutput {
                device: "tor1".into(),
                kind: "p4".into(),
                path: "p4/tor1.txtpb".into(),
                text: String::new(),
                pushed: false,
            },
        ],
        relations: vec![("ovs_flow".into(), format!("h1\t0\t{n}\n"))],
        verdict: Some(Verdict::Proven),
        forced: n % 2 == 1,
        actor: "tester".into(),
        command: "netc apply a.ndl".into(),
        note: String::new(),
        inventory: "[ovs]\nh1 = \"br\"\n".into(),
    }
}

#[test]
fn generations_round_trip_and_survive_reopening() {
    let dir = tmp("roundtrip");
    let mut s = Store::open(&dir).unwrap();
    assert!(s.last_applied().unwrap().is_none());
    let g1 = s.commit_generation(&sample(1)).unwrap();
    let g2 = s.commit_generation(&sample(2)).unwrap();
    assert!(g2 > g1);
    drop(s);
    let s = Store::open_existing(&dir).unwrap();
    let last = s.last_applied().unwrap().unwrap();
    assert_eq!(last.id, g2);
    assert!(!last.forced);
    assert_eq!(last.files, vec!["a.ndl".to_string()]);
    assert_eq!(last.devices, 2);
    assert_eq!(last.inventory, sample(2).inventory);
    assert!(s.generation(g1).unwrap().forced);
    assert_eq!(s.history().unwrap().len(), 2);
    let outs = s.device_outputs(g1).unwrap();
    assert_eq!(outs, sample(1).outputs);
    let files = s.intent_files(g2).unwrap();
    assert_eq!(files[0].sha256, sha256_hex(b"host(\"h2\").\n"));
    assert_eq!(s.intent_facts(g2).unwrap(), sample(2).facts);
    assert!(matches!(
        s.device_outputs(99),
        Err(StoreError::NoGeneration { id: 99 })
    ));
    let art = dir.join("art");
    s.write_artifact_dir(g2, &art).unwrap();
    assert_eq!(
        std::fs::read_to_string(art.join("ovs/h1.flows")).unwrap(),
        "table=0,priority=2,actions=drop\n"
    );
    assert_eq!(
        std::fs::read_to_string(art.join("relations/ovs_flow.csv")).unwrap(),
        "h1\t0\t2\n"
    );
    assert!(s.check().unwrap().is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn journal_marks_an_interrupted_apply_and_commit_clears_it() {
    let dir = tmp("journal");
    let mut s = Store::open(&dir).unwrap();
    // a pid that has exited: the apply that wrote the journal is gone
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let j = Journal {
        pid: dead,
        started: 5,
        base: None,
        command: "netc apply".into(),
    };
    assert_eq!(s.begin_apply(&j).unwrap(), None);
    assert_eq!(s.interrupted().unwrap(), Some(j.clone()));
    let mine = Journal {
        pid: std::process::id(),
        ..j.clone()
    };
    // the dead apply's journal is handed back, and replaced
    assert_eq!(s.begin_apply(&mine).unwrap(), Some(j));
    assert_eq!(s.interrupted().unwrap(), None, "our own apply is alive");
    s.commit_generation(&sample(1)).unwrap();
    assert_eq!(s.journal().unwrap(), None);
    // a live apply by another process refuses a second one
    s.begin_apply(&Journal {
        pid: 1,
        ..mine.clone()
    })
    .unwrap();
    assert!(matches!(
        s.begin_apply(&mine),
        Err(StoreError::Busy { pid: 1, .. })
    ));
    s.abort_apply().unwrap();
    assert_eq!(s.journal().unwrap(), None);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn garbage_foreign_and_newer_files_are_refused_untouched() {
    let dir = tmp("bad");
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join(DB_FILE);
    let garbage: Vec<u8> = (0..8192u32).map(|i| (i * 7919 % 251) as u8).collect();
    std::fs::write(&db, &garbage).unwrap();
    assert!(matches!(
        Store::open(&dir),
        Err(StoreError::NotADatabase { .. })
    ));
    assert_eq!(std::fs::read(&db).unwrap(), garbage, "file untouched");

    std::fs::remove_file(&db).unwrap();
    {
        let c = Connection::open(&db).unwrap();
        c.execute_batch("CREATE TABLE photos (id INTEGER);")
            .unwrap();
    }
    let e = Store::open(&dir).err().unwrap();
    assert!(matches!(e, StoreError::Foreign { found: 0, .. }), "{e}");
    assert!(e.hint().unwrap().contains("move"));

    std::fs::remove_file(&db).unwrap();
    drop(Store::open(&dir).unwrap());
    {
        let c = Connection::open(&db).unwrap();
        c.execute_batch(&format!("PRAGMA user_version = {};", SCHEMA_VERSION + 1))
            .unwrap();
    }
    assert!(matches!(
        Store::open(&dir),
        Err(StoreError::NewerSchema { .. })
    ));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_damaged_page_is_refused() {
    let dir = tmp("damaged");
    let mut s = Store::open(&dir).unwrap();
    for n in 0..40 {
        s.commit_generation(&sample(n)).unwrap();
    }
    s.conn
        .execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
        .unwrap();
    drop(s);
    let db = dir.join(DB_FILE);
    let mut bytes = std::fs::read(&db).unwrap();
    assert!(bytes.len() > 3 * 4096);
    // keep the header (page 1), scribble over page 2 and 3
    for b in &mut bytes[4096..3 * 4096] {
        *b = 0xA5;
    }
    std::fs::write(&db, &bytes).unwrap();
    assert!(matches!(
        Store::open(&dir),
        Err(StoreError::NotADatabase { .. })
    ));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn open_existing_needs_a_store() {
    let dir = tmp("none");
    assert!(matches!(
        Store::open_existing(&dir),
        Err(StoreError::NoState { .. })
    ));
    assert!(!dir.exists(), "reading never creates the directory");
}
