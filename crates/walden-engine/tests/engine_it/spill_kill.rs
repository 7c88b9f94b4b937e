//! Real SIGKILLs in a large transaction's life (`txn/spill.rs`: it logs its
//! changes as non-commit parts while it runs). A child process loads
//! generation after generation of a table in one transaction each (some
//! rolled back, some rolled back to a savepoint), with small durable
//! commits and checkpoints beside; the parent kills it at a random instant
//! (while parts go in, at a commit, after one before the next checkpoint),
//! reopens, and finds the table as one whole generation (the last
//! acknowledged, or the one whose commit was under way), never a mix, and
//! every acknowledged small commit.

use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};
use walden_engine::*;

use crate::model;
use model::{check, items_def, Model, Probes, Rng};

const CHILD_DIR: &str = "WALDEN_SPILL_KILL_DIR";
const BULK: i64 = 30_000;
const SMALL: i64 = 16;
const PROBES: Probes = Probes {
    ids: BULK,
    step: 991,
    values: 1,
};

fn config(dir: &Path) -> InstanceConfig {
    InstanceConfig {
        background_checkpoints: false,
        limits: Limits {
            spill_transaction_bytes: 1 << 20,
            ..Default::default()
        },
        ..InstanceConfig::new(dir)
    }
}

/// Generation `g`'s rows (generation 0 is a third as many).
fn bulk_model(g: i64) -> Model {
    let n = if g == 0 { BULK / 3 } else { BULK };
    (0..n)
        .map(|id| (id, (g, format!("g{g}-{id}-{}", "z".repeat(200)))))
        .collect()
}

fn row(id: i64, v: i64, t: &str) -> Vec<Option<Value>> {
    vec![
        Some(Value::Int(id)),
        Some(Value::Int(v)),
        Some(Value::text(t)),
    ]
}

/// Generation `g` in one transaction: TRUNCATE, every row (some first with
/// a provisional tag), rows and rewrites undone by `ROLLBACK TO`, then the
/// provisional rows rewritten.
fn load(tx: &mut Transaction, g: i64) -> Result<()> {
    tx.truncate("bulk")?;
    let m = bulk_model(g);
    for (id, (v, t)) in &m {
        let t = if id % 5 == 0 {
            "provisional"
        } else {
            t.as_str()
        };
        tx.insert("bulk", row(*id, *v, t))?;
    }
    tx.savepoint("s")?;
    for id in BULK..BULK + 2_000 {
        tx.insert("bulk", row(id, -1, "undone"))?;
    }
    for id in (1..BULK).step_by(3) {
        tx.update(
            "bulk",
            &[Value::Int(id)],
            vec![Value::Int(id), Value::Int(-1), Value::text("undone")],
        )?;
    }
    tx.rollback_to_savepoint("s")?;
    for (id, (v, t)) in m.iter().step_by(5) {
        tx.update(
            "bulk",
            &[Value::Int(*id)],
            vec![Value::Int(*id), Value::Int(*v), Value::text(t)],
        )?;
    }
    Ok(())
}

/// Appends a line to the child's acknowledgement file (the page cache
/// outlives a SIGKILL).
fn note(f: &std::sync::Mutex<std::fs::File>, line: &str) {
    let mut f = f.lock().unwrap();
    writeln!(f, "{line}").unwrap();
}

fn child(dir: &Path) -> ! {
    let inst = Instance::open(config(&dir.join("inst"))).unwrap();
    let db = inst.database("walden").unwrap();
    let s = inst.new_session();
    db.create_table(&s, items_def("bulk", false)).unwrap();
    db.create_table(&s, items_def("small", false)).unwrap();
    db.run(&s, CommitRequest::Durable, |tx| {
        for (id, (v, t)) in bulk_model(0) {
            tx.insert("bulk", row(id, v, &t))?;
        }
        for id in 0..SMALL {
            tx.insert("small", row(id, 0, "s"))?;
        }
        Ok(())
    })
    .unwrap();
    let acks = Arc::new(std::sync::Mutex::new(
        std::fs::File::create(dir.join("acks")).unwrap(),
    ));
    note(&acks, "ready");
    {
        let (db, s, acks) = (db.clone(), inst.new_session(), acks.clone());
        std::thread::spawn(move || {
            for i in 1.. {
                let id = i % SMALL;
                let mut tx = db.begin(&s);
                tx.update(
                    "small",
                    &[Value::Int(id)],
                    vec![Value::Int(id), Value::Int(i), Value::text("s")],
                )
                .unwrap();
                tx.commit(CommitRequest::Durable).unwrap();
                note(&acks, &format!("small {id} {i}"));
                std::thread::sleep(Duration::from_millis(1));
            }
        });
    }
    {
        let db = db.clone();
        std::thread::spawn(move || loop {
            db.checkpoint().unwrap();
            std::thread::sleep(Duration::from_millis(50));
        });
    }
    for g in 1.. {
        let mut tx = db.begin(&s);
        load(&mut tx, g).unwrap();
        assert!(tx.is_spilled());
        match g % 4 {
            // Rolled back: its parts are void.
            3 => tx.rollback(),
            _ => {
                note(&acks, &format!("committing {g}"));
                tx.commit(CommitRequest::Durable).unwrap();
                note(&acks, &format!("load {g}"));
            }
        }
    }
    unreachable!()
}

/// What the child acknowledged: the last committed generation, the one
/// whose commit was under way (if any), and the small rows.
fn acknowledged(dir: &Path) -> (i64, Option<i64>, Model) {
    let text = std::fs::read_to_string(dir.join("acks")).unwrap();
    let (mut last, mut trying) = (0, None);
    let mut small = Model::new();
    for line in text.lines() {
        let w: Vec<&str> = line.split(' ').collect();
        match w[..] {
            ["load", g] => {
                last = g.parse().unwrap();
                trying = None;
            }
            ["committing", g] => trying = Some(g.parse().unwrap()),
            ["small", id, v] => {
                small.insert(id.parse().unwrap(), (v.parse().unwrap(), "s".into()));
            }
            _ => {}
        }
    }
    (last, trying, small)
}

#[test]
fn sigkills_in_a_large_transactions_life_keep_it_whole_or_absent() {
    if let Some(dir) = std::env::var_os(CHILD_DIR) {
        child(Path::new(&dir));
    }
    let mut rng = Rng(0x6b111);
    let mut outcomes = Vec::new();
    for trial in 0..6 {
        let tmp = tempfile::tempdir().unwrap();
        let mut proc = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "spill_kill::sigkills_in_a_large_transactions_life_keep_it_whole_or_absent",
                "--nocapture",
            ])
            .env(CHILD_DIR, tmp.path())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(120);
        while !std::fs::read_to_string(tmp.path().join("acks"))
            .is_ok_and(|t| t.starts_with("ready"))
        {
            assert!(Instant::now() < deadline, "the child did not get ready");
            assert!(proc.try_wait().unwrap().is_none(), "the child ended");
            std::thread::sleep(Duration::from_millis(10));
        }
        std::thread::sleep(Duration::from_millis(200 + rng.below(3_000)));
        // SAFETY: kill(2) of our own child.
        unsafe { libc::kill(proc.id() as i32, libc::SIGKILL) };
        let status = proc.wait().unwrap();
        assert_eq!(status.signal(), Some(libc::SIGKILL), "child: {status}");
        let (last, trying, small) = acknowledged(tmp.path());
        let inst = Instance::open(config(&tmp.path().join("inst"))).unwrap();
        let db = inst.database("walden").unwrap();
        let s = inst.new_session();
        let mut tx = db.begin(&s);
        tx.begin_statement();
        let first = tx.get("bulk", &[Value::Int(0)]).unwrap().unwrap();
        drop(tx);
        let g = first[1].as_i64().unwrap();
        let what = format!("trial {trial}: acknowledged {last}, committing {trying:?}, found {g}");
        assert!(
            g == last || Some(g) == trying,
            "{what}: not the acknowledged generation"
        );
        check(&db, &s, "bulk", &bulk_model(g), &PROBES, &what);
        let mut tx = db.begin(&s);
        tx.begin_statement();
        for (id, (v, _)) in &small {
            let got = tx.get("small", &[Value::Int(*id)]).unwrap().unwrap();
            let got = got[1].as_i64().unwrap();
            assert!(
                got >= *v,
                "{what}: small row {id} is {got}, acknowledged {v}"
            );
        }
        drop(tx);
        println!("{what}, {} small rows acknowledged", small.len());
        outcomes.push(last);
        inst.close().unwrap();
    }
    // The kills fell at different points of the loads' lives.
    assert!(
        outcomes.iter().any(|&g| g > 0),
        "no load committed before a kill"
    );
}
