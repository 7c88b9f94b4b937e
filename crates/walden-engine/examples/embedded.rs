//! Walden embedded: open an instance, create a database and a table, run
//! durable and delayed transactions, read the counters and the exposure,
//! flush, close.
//!
//! Run with `cargo run --release -p walden-engine --example embedded`.

use walden_engine::*;

fn main() -> Result<()> {
    let dir = std::env::temp_dir().join(format!("walden-embedded-{}", std::process::id()));
    let inst = Instance::open(InstanceConfig::new(&dir))?;
    let db = inst.create_database("shop")?;
    let s = inst.new_session();

    db.create_table(
        &s,
        TableDef::new(
            "orders",
            vec![
                ColumnDef::new("id", DataType::BigInt).identity(1, 1),
                ColumnDef::new("item", DataType::Varchar(Some(40))).not_null(),
                ColumnDef::new("qty", DataType::Int).default(DefaultExpr::Value(Value::Int(1))),
                ColumnDef::new("at", DataType::Timestamp).default(DefaultExpr::Now),
            ],
            &["id"],
        )?,
    )?;

    // Allow delayed durability; each transaction chooses.
    db.alter_settings(&s, |x| {
        x.delayed_durability = DelayedDurability::Allowed;
        // Never more than 64 KiB of acknowledged work at risk.
        x.max_exposure_bytes = Some(64 * 1024);
    })?;

    let t = db.table("orders")?;
    let started = std::time::Instant::now();
    for i in 0..1000 {
        let mut tx = db.begin(&s);
        tx.insert_into(
            &t,
            vec![None, Some(Value::text(format!("widget-{i}"))), None, None],
        )?;
        tx.commit(CommitRequest::Durable)?;
    }
    let durable = started.elapsed();

    let started = std::time::Instant::now();
    for i in 0..1000 {
        let mut tx = db.begin(&s);
        tx.insert_into(
            &t,
            vec![
                None,
                Some(Value::text(format!("gadget-{i}"))),
                Some(Value::Int(2)),
                None,
            ],
        )?;
        tx.commit(CommitRequest::Delayed)?;
    }
    let delayed = started.elapsed();

    let e = db.exposure();
    println!("1000 durable commits: {durable:?}; 1000 delayed commits: {delayed:?}");
    println!(
        "exposure now: {} bytes in {} acknowledged commits, oldest {:.2} ms; end LSN {}, hardened LSN {}",
        e.unhardened_bytes, e.unhardened_commits, e.oldest_age_ms, e.end_lsn, e.hardened_lsn
    );

    // sp_flush_log: harden everything committed so far.
    db.flush_log(&s)?;
    let log = db.log_file_stats().snapshot();
    let w = s.waits.get(WaitType::WriteLog);
    println!(
        "log file: {} writes, {} bytes ({} per write), io stall {:.1} ms",
        log.num_of_writes,
        log.num_of_bytes_written,
        log.num_of_bytes_written / log.num_of_writes.max(1),
        log.io_stall_write_ms
    );
    println!(
        "this session: WRITELOG {} waits, {:.1} ms total, {:.3} ms max",
        w.waiting_tasks_count, w.wait_time_ms, w.max_wait_time_ms
    );

    let tx = db.begin(&s);
    println!("orders: {} rows", tx.scan_all("orders")?.len());
    drop(tx);

    inst.close()?; // hardens and checkpoints: a planned restart loses nothing
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
