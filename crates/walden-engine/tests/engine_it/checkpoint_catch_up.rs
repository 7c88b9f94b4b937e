//! The background checkpointer pauses between batches so that commits keep
//! most of the machine, but a writer that outpaces it (a bulk load) would
//! then keep every version it commits in memory, the next checkpoint
//! falling due before the last is done. Here a writer commits much more log
//! than `checkpoint_log_bytes` during each checkpoint: the checkpointer must
//! stop pausing (counted), and the rows must be whole afterwards, in memory
//! and after a restart.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};
use walden_engine::store::StorageConfig;
use walden_engine::*;

use crate::model;
use model::{check, items_def, Model, Probes, Rng};

/// Several batches of 2,048 keys per checkpoint.
const ROWS: i64 = 12_000;
const VALUES: i64 = 30;

fn config(mem: &MemVfs) -> InstanceConfig {
    InstanceConfig {
        vfs: Arc::new(mem.clone()),
        log: LogConfig {
            segment_size: 4 << 20,
            preallocate_spare: false,
            ..LogConfig::default()
        },
        background_checkpoints: true,
        checkpoint_log_bytes: 256 * 1024,
        checkpoint_interval: None,
        storage: StorageConfig {
            cache_bytes: 1 << 20,
            ..Default::default()
        },
        ..InstanceConfig::new("/inst")
    }
}

fn tag(id: i64, round: i64) -> String {
    format!("r{id}-{round}-{}", "x".repeat(150))
}

#[test]
fn a_checkpoint_outpaced_by_writers_stops_pausing() {
    let mem = MemVfs::new();
    let probes = Probes {
        ids: ROWS,
        step: 89,
        values: VALUES,
    };
    let mut model = Model::new();
    {
        let inst = Instance::open(config(&mem)).unwrap();
        let db = inst.database("walden").unwrap();
        let s = inst.new_session();
        db.create_table(&s, items_def("items", true)).unwrap();
        let mut rng = Rng(0x5eed_c0de);
        // Every row rewritten in each round, in transactions of 2,000 rows
        // (some 400 KB of log each), until the checkpointer has had to
        // catch up a few times, or a minute has passed.
        let began = Instant::now();
        let mut round = 0;
        while db.counters().checkpoints_unpaced.load(Relaxed) < 3
            && began.elapsed() < Duration::from_secs(60)
        {
            for lo in (0..ROWS).step_by(2000) {
                let mut changes = Vec::new();
                db.run(&s, CommitRequest::Durable, |tx| {
                    changes.clear();
                    for id in lo..lo + 2000 {
                        let v = rng.below(VALUES as u64) as i64;
                        let t = tag(id, round);
                        let row = vec![Value::Int(id), Value::Int(v), Value::text(&t)];
                        if round == 0 {
                            tx.insert("items", row.into_iter().map(Some).collect())?;
                        } else {
                            tx.update("items", &[Value::Int(id)], row)?;
                        }
                        changes.push((id, (v, t)));
                    }
                    Ok(())
                })
                .unwrap();
                model.extend(changes);
            }
            round += 1;
        }
        let unpaced = db.counters().checkpoints_unpaced.load(Relaxed);
        let checkpoints = db.counters().checkpoints.load(Relaxed);
        assert!(
            unpaced >= 3,
            "after {round} rounds and {checkpoints} background checkpoints, \
             {unpaced} stopped pausing"
        );
        check(&db, &s, "items", &model, &probes, "after the load");
        inst.close().unwrap();
    }
    let inst = Instance::open(config(&mem)).unwrap();
    let db = inst.database("walden").unwrap();
    let s = inst.new_session();
    check(&db, &s, "items", &model, &probes, "after a restart");
}
