//! A SQL batch parsed and run against an in-memory instance: any error is
//! fine, a panic or abort (stack overflow) is a bug.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::sync::{Arc, OnceLock};
use walden_engine::{Instance, InstanceConfig, LogConfig, MemVfs};
use walden_sql::SqlEngine;

fn engine() -> &'static Arc<SqlEngine> {
    static E: OnceLock<Arc<SqlEngine>> = OnceLock::new();
    E.get_or_init(|| {
        let inst = Instance::open(InstanceConfig {
            vfs: Arc::new(MemVfs::new()),
            log: LogConfig {
                segment_size: 4 << 20,
                preallocate_spare: false,
                ..LogConfig::default()
            },
            background_checkpoints: false,
            ..InstanceConfig::new("/fuzz")
        })
        .unwrap();
        let e = SqlEngine::new(inst);
        // A few tables for statements to find.
        let mut s = e.connect("walden", "sa", "fuzz").unwrap();
        for r in s.execute_batch(
            "create table t (id int primary key, name varchar(20), price decimal(10,2), at timestamp);
             insert into t values (1, 'a', 1.50, '2024-01-01 00:00:00'), (2, null, 0, null);
             create table u (k bigint, b bytea, d date, g uuid, f double precision, ok boolean);
             insert into u values (7, '\\x00ff', '2020-02-29', null, 1.5e10, true);",
        ) {
            r.unwrap();
        }
        e
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(sql) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(mut s) = engine().connect("walden", "sa", "fuzz") else {
        return;
    };
    for out in s.execute_batch(sql).into_iter().flatten() {
        for row in &out.rows {
            for v in row {
                let _ = v.to_string();
            }
        }
    }
});
