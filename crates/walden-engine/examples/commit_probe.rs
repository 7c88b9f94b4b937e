//! A fixed amount of work on the delayed-commit path and on recovery, for
//! comparing builds by instruction count (`valgrind --tool=callgrind`
//! counts the same on a busy machine) as well as by the clock.
//!
//! ```text
//! cargo build --release -p walden-engine --example commit_probe
//! P=target/release/examples/commit_probe
//! $P delayed 100000 DIR     # one session, one-row inserts, FORCED delayed commits
//! $P recsetup 100 DIR       # 100 MB of log no checkpoint covers (64 rows of 1 KB a commit)
//! $P recover DIR            # opens DIR (redo of that log) and stops without a checkpoint
//! valgrind --tool=callgrind $P delayed 100000 DIR2   # instructions per commit = total / N
//! ```
//!
//! `delayed` is `walden bench log`'s `delayed x1` cell, `recsetup` and
//! `recover` its recovery measurement, with a fixed size instead of a fixed
//! time. DIR must not exist yet for `delayed` and `recsetup`.
use std::sync::Arc;
use std::time::Instant;
use walden_engine::{
    ColumnDef, CommitRequest, DataType, DelayedDurability, Instance, InstanceConfig, TableDef,
    Value,
};

fn cfg(dir: &str) -> InstanceConfig {
    let mut ic = InstanceConfig::new(dir);
    ic.background_checkpoints = false;
    ic
}

#[inline(never)]
fn delayed_loop(
    db: &Arc<walden_engine::Database>,
    s: &Arc<walden_engine::Session>,
    t: &Arc<walden_engine::Table>,
    n: u64,
) {
    for i in 0..n {
        let mut tx = db.begin(s);
        tx.insert_into(t, vec![None, Some(Value::Int(i as i64))])
            .unwrap();
        tx.commit(CommitRequest::Default).unwrap();
    }
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    match a[1].as_str() {
        "delayed" => {
            let n: u64 = a[2].parse().unwrap();
            let inst = Instance::open(cfg(&a[3])).unwrap();
            let db = inst.database("walden").unwrap();
            let admin = inst.new_session();
            let t = db
                .create_table(
                    &admin,
                    TableDef::new(
                        "t",
                        vec![
                            ColumnDef::new("id", DataType::BigInt).identity(1, 1),
                            ColumnDef::new("v", DataType::Int),
                        ],
                        &["id"],
                    )
                    .unwrap(),
                )
                .unwrap();
            db.alter_settings(&admin, |s| s.delayed_durability = DelayedDurability::Forced)
                .unwrap();
            let s = inst.new_session();
            let t0 = Instant::now();
            delayed_loop(&db, &s, &t, n);
            let secs = t0.elapsed().as_secs_f64();
            db.flush_log(&admin).unwrap();
            println!(
                "delayed {} commits in {:.3} s = {:.0}/s",
                n,
                secs,
                n as f64 / secs
            );
            inst.shutdown_nowait().unwrap();
        }
        "recsetup" => {
            let mb: u64 = a[2].parse().unwrap();
            let inst = Instance::open(cfg(&a[3])).unwrap();
            let db = inst.database("walden").unwrap();
            let s = inst.new_session();
            let t = db
                .create_table(
                    &s,
                    TableDef::new(
                        "r",
                        vec![
                            ColumnDef::new("id", DataType::BigInt).identity(1, 1),
                            ColumnDef::new("payload", DataType::Text),
                        ],
                        &["id"],
                    )
                    .unwrap(),
                )
                .unwrap();
            db.alter_settings(&s, |st| st.delayed_durability = DelayedDurability::Forced)
                .unwrap();
            let start = db.log().end_lsn();
            let payload: String = (0..1000).map(|i| (b'a' + (i % 26) as u8) as char).collect();
            while db.log().end_lsn() - start < mb * 1_000_000 {
                let mut tx = db.begin(&s);
                for _ in 0..64 {
                    tx.insert_into(&t, vec![None, Some(Value::text(&payload))])
                        .unwrap();
                }
                tx.commit(CommitRequest::Default).unwrap();
            }
            db.flush_log(&s).unwrap();
            println!("wrote {} bytes of log", db.log().end_lsn() - start);
            inst.shutdown_nowait().unwrap();
        }
        "recover" => {
            let t0 = Instant::now();
            let inst = Instance::open(cfg(&a[2])).unwrap();
            let secs = t0.elapsed().as_secs_f64();
            let db = inst.database("walden").unwrap();
            let span = db.log().end_lsn() - db.checkpoint_lsn();
            println!(
                "recover {:.1} MB in {:.3} s = {:.0} MB/s",
                span as f64 / 1e6,
                secs,
                span as f64 / 1e6 / secs
            );
            inst.shutdown_nowait().unwrap();
        }
        _ => panic!("usage: commit_probe delayed N DIR | recsetup MB DIR | recover DIR"),
    }
}
