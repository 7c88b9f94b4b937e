//! System views: SQL Server's DMVs over the engine's counters and Walden's
//! exposure view; the PostgreSQL catalogs are in `compat/pg_catalog/`.

use crate::compat::activity_view;
use crate::compat::pg_catalog::{self, PgView};
use crate::error::Result;
use crate::functions::Env;
use std::time::UNIX_EPOCH;
use walden_engine::{DataType, Value};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SysView {
    Databases,
    /// `sys.schemas`: SQL Server's fixed schemas and those CREATE SCHEMA
    /// made (`public` is `dbo`).
    Schemas,
    /// `sys.triggers` (`pg_catalog/triggers.rs`).
    Triggers,
    FileStats,
    WaitStats,
    SessionWaitStats,
    PerfCounters,
    Sessions,
    LogExposure,
    HadrReplicaStates,
    IndexUsageStats,
    PartitionStats,
    /// `sys.dm_tran_locks` (`locks_view.rs`).
    TranLocks,
    /// `pg_locks` (`locks_view.rs`).
    PgLocks,
    /// `pg_stat_activity` (`activity_view.rs`).
    PgStatActivity,
    /// `sys.dm_exec_requests` (`activity_view.rs`).
    Requests,
    /// `pg_stats` (`stats_view.rs`).
    PgStats,
    /// A `pg_catalog` or `information_schema` relation.
    Pg(PgView),
}

/// Finds a system view by (schema, name).
pub fn lookup(schema: Option<&str>, name: &str) -> Option<SysView> {
    let n = name.to_ascii_lowercase();
    let v = match (schema, n.as_str()) {
        (Some("sys") | None, "databases") if schema.is_some() => SysView::Databases,
        (Some("sys"), "schemas") => SysView::Schemas,
        (Some("sys"), "triggers") => SysView::Triggers,
        (Some("sys"), "dm_io_virtual_file_stats") => SysView::FileStats,
        (Some("sys") | None, "dm_os_wait_stats") => SysView::WaitStats,
        (Some("sys") | None, "dm_exec_session_wait_stats") => SysView::SessionWaitStats,
        (Some("sys") | None, "dm_os_performance_counters") => SysView::PerfCounters,
        (Some("sys") | None, "dm_exec_sessions") => SysView::Sessions,
        (Some("sys") | None, "dm_log_exposure") => SysView::LogExposure,
        (Some("sys") | None, "dm_hadr_database_replica_states") => SysView::HadrReplicaStates,
        (Some("sys") | None, "dm_db_index_usage_stats") => SysView::IndexUsageStats,
        (Some("sys") | None, "dm_db_partition_stats") => SysView::PartitionStats,
        (Some("sys") | None, "dm_tran_locks") => SysView::TranLocks,
        (Some("pg_catalog") | None, "pg_locks") => SysView::PgLocks,
        (Some("pg_catalog") | None, "pg_stat_activity") => SysView::PgStatActivity,
        (Some("pg_catalog") | None, "pg_stats") => SysView::PgStats,
        (Some("sys") | None, "dm_exec_requests") => SysView::Requests,
        _ => return pg_catalog::lookup(schema, name).map(SysView::Pg),
    };
    Some(v)
}

use DataType as T;

impl SysView {
    pub fn columns(self) -> Vec<(&'static str, DataType)> {
        let text = T::Varchar(None);
        match self {
            SysView::TranLocks => crate::compat::locks_view::tran_locks_columns(),
            SysView::PgLocks => crate::compat::locks_view::pg_locks_columns(),
            SysView::PgStatActivity => activity_view::pg_stat_activity_columns(),
            SysView::PgStats => crate::compat::stats_view::pg_stats_columns(),
            SysView::Sessions => activity_view::exec_sessions_columns(),
            SysView::Requests => activity_view::exec_requests_columns(),
            // SQL Server's columns, with the names added: a search with
            // leading values is a seek, an ordered walk with none a scan
            // (lookups are not counted apart).
            SysView::IndexUsageStats => vec![
                ("database_id", T::Int),
                ("object_id", T::BigInt),
                ("index_id", T::BigInt),
                ("table_name", text.clone()),
                ("index_name", text.clone()),
                ("user_seeks", T::BigInt),
                ("user_scans", T::BigInt),
                ("user_lookups", T::BigInt),
                ("user_updates", T::BigInt),
            ],
            // SQL Server's columns, pages counted in its 8 KB units so that
            // `used_page_count * 8 / 1024` is MB as a DBA expects; one
            // partition per table and per index, with the names added.
            SysView::PartitionStats => {
                let mut c = vec![
                    ("partition_id", T::BigInt),
                    ("object_id", T::BigInt),
                    ("index_id", T::BigInt),
                    ("partition_number", T::Int),
                ];
                for n in [
                    "in_row_data_page_count",
                    "in_row_used_page_count",
                    "in_row_reserved_page_count",
                    "lob_used_page_count",
                    "lob_reserved_page_count",
                    "row_overflow_used_page_count",
                    "row_overflow_reserved_page_count",
                    "used_page_count",
                    "reserved_page_count",
                    "row_count",
                ] {
                    c.push((n, T::BigInt));
                }
                c.push(("table_name", text.clone()));
                c.push(("index_name", text.clone()));
                c
            }
            SysView::HadrReplicaStates => vec![
                ("group_name", text.clone()),
                ("replica_name", text.clone()),
                ("database_id", T::Int),
                ("database_name", text.clone()),
                ("is_local", T::Bool),
                ("is_primary_replica", T::Bool),
                ("availability_mode_desc", text.clone()),
                ("synchronization_state_desc", text.clone()),
                ("is_connected", T::Bool),
                ("log_send_queue_size", T::BigInt),
                ("redo_queue_size", T::BigInt),
                ("last_sent_lsn", T::BigInt),
                ("last_hardened_lsn", T::BigInt),
                ("last_redone_lsn", T::BigInt),
                ("last_commit_time", T::Timestamp),
                ("secondary_lag_seconds", T::Double),
                ("last_error", text),
                ("needs_reseed", T::Bool),
                ("lag_bytes", T::BigInt),
                ("lag_ms", T::Double),
                ("max_lag_bytes", T::BigInt),
                ("max_lag_ms", T::BigInt),
                ("is_lag_bound_counted", T::Bool),
            ],
            SysView::Triggers => vec![
                ("name", text.clone()),
                ("object_id", T::Int),
                ("parent_class", T::SmallInt),
                ("parent_class_desc", text.clone()),
                ("parent_id", T::Int),
                ("type", text.clone()),
                ("type_desc", text.clone()),
                ("is_ms_shipped", T::Bool),
                ("is_disabled", T::Bool),
                ("is_not_for_replication", T::Bool),
                ("is_instead_of_trigger", T::Bool),
            ],
            SysView::Schemas => vec![
                ("name", text.clone()),
                ("schema_id", T::Int),
                ("principal_id", T::Int),
            ],
            SysView::Databases => vec![
                ("name", text.clone()),
                ("database_id", T::Int),
                ("recovery_model_desc", text.clone()),
                ("delayed_durability_desc", text.clone()),
                ("state_desc", text),
                ("max_exposure_bytes", T::BigInt),
                ("max_exposure_ms", T::BigInt),
            ],
            SysView::FileStats => vec![
                ("database_id", T::Int),
                ("file_id", T::Int),
                ("sample_ms", T::BigInt),
                ("num_of_reads", T::BigInt),
                ("num_of_bytes_read", T::BigInt),
                ("io_stall_read_ms", T::BigInt),
                ("num_of_writes", T::BigInt),
                ("num_of_bytes_written", T::BigInt),
                ("io_stall_write_ms", T::BigInt),
                ("io_stall", T::BigInt),
                ("size_on_disk_bytes", T::BigInt),
            ],
            SysView::WaitStats => vec![
                ("wait_type", text),
                ("waiting_tasks_count", T::BigInt),
                ("wait_time_ms", T::BigInt),
                ("max_wait_time_ms", T::BigInt),
                ("signal_wait_time_ms", T::BigInt),
            ],
            SysView::SessionWaitStats => vec![
                ("session_id", T::SmallInt),
                ("wait_type", text),
                ("waiting_tasks_count", T::BigInt),
                ("wait_time_ms", T::BigInt),
                ("max_wait_time_ms", T::BigInt),
                ("signal_wait_time_ms", T::BigInt),
            ],
            SysView::PerfCounters => vec![
                ("object_name", text.clone()),
                ("counter_name", text.clone()),
                ("instance_name", text),
                ("cntr_value", T::BigInt),
                ("cntr_type", T::Int),
            ],
            SysView::LogExposure => vec![
                ("database_id", T::Int),
                ("database_name", text),
                ("unhardened_bytes", T::BigInt),
                ("unhardened_commits", T::BigInt),
                ("oldest_unhardened_age_ms", T::Double),
                ("end_of_log_lsn", T::BigInt),
                ("hardened_lsn", T::BigInt),
                ("max_exposure_bytes", T::BigInt),
                ("max_exposure_ms", T::BigInt),
                ("peak_unhardened_bytes", T::BigInt),
                ("peak_exposure_ms", T::Double),
                ("exposure_bound_waits", T::BigInt),
                ("exposure_bound_misses", T::BigInt),
            ],
            SysView::Pg(v) => v.columns(),
        }
    }
}

fn i(v: u64) -> Value {
    Value::Int(v.min(i64::MAX as u64) as i64)
}

fn t(s: impl AsRef<str>) -> Value {
    Value::text(s)
}

fn opt(v: Option<u64>) -> Value {
    v.map(i).unwrap_or(Value::Null)
}

pub fn rows(view: SysView, args: &[Value], env: &Env<'_>) -> Result<Vec<Vec<Value>>> {
    let inst = env.instance;
    let mut out = Vec::new();
    match view {
        SysView::TranLocks => return Ok(crate::compat::locks_view::tran_locks_rows(env)),
        SysView::PgLocks => return Ok(crate::compat::locks_view::pg_locks_rows(env)),
        SysView::PgStatActivity => return Ok(activity_view::pg_stat_activity_rows(env)),
        SysView::PgStats => return Ok(crate::compat::stats_view::pg_stats_rows(env)),
        SysView::Sessions => return Ok(activity_view::exec_sessions_rows(env)),
        SysView::Requests => return Ok(activity_view::exec_requests_rows(env)),
        SysView::IndexUsageStats => {
            let db = pg_catalog::Seen::of(env);
            for tb in db.tables() {
                for ix in &tb.indexes {
                    let n = |a: &std::sync::atomic::AtomicU64| {
                        Value::Int(a.load(std::sync::atomic::Ordering::Relaxed) as i64)
                    };
                    out.push(vec![
                        Value::Int(db.id() as i64),
                        Value::Int(pg_catalog::table_oid(tb.id())),
                        Value::Int(pg_catalog::index_oid(ix.def.id)),
                        t(tb.name()),
                        t(&ix.def.name),
                        n(&ix.seeks),
                        n(&ix.scans),
                        Value::Int(0),
                        n(&ix.updates),
                    ]);
                }
            }
        }
        SysView::PartitionStats => {
            let db = pg_catalog::Seen::of(env);
            // 8 KB pages, rounded up.
            let pages = |bytes: u64| Value::Int(bytes.div_ceil(8192) as i64);
            for tb in db.tables() {
                let stored = db.stored_bytes(&tb)?;
                let rows = Value::Int(tb.len() as i64);
                let mut part = |partition: i64, index_id: i64, bytes: u64, name: Value| {
                    let mut r = vec![
                        Value::Int(partition),
                        Value::Int(pg_catalog::table_oid(tb.id())),
                        Value::Int(index_id),
                        Value::Int(1),
                    ];
                    // In-row data, used and reserved: all of it; no LOB or
                    // row-overflow pages.
                    r.extend([pages(bytes), pages(bytes), pages(bytes)]);
                    r.extend(std::iter::repeat_n(Value::Int(0), 4));
                    r.extend([pages(bytes), pages(bytes), rows.clone(), t(tb.name()), name]);
                    out.push(r);
                };
                // The rows: a clustered index (1) on the primary key, or a
                // heap (0) keyed by a hidden row id.
                let (index_id, name) = if tb.def.primary_key.is_empty() {
                    (0, Value::Null)
                } else {
                    (1, t(tb.def.pkey_name()))
                };
                part(pg_catalog::table_oid(tb.id()), index_id, stored.rows, name);
                for ix in &tb.indexes {
                    let bytes = stored
                        .indexes
                        .iter()
                        .find(|(id, _)| *id == ix.def.id)
                        .map_or(0, |(_, b)| *b);
                    let oid = pg_catalog::index_oid(ix.def.id);
                    part(oid, oid, bytes, t(&ix.def.name));
                }
            }
        }
        SysView::HadrReplicaStates => {
            let Some(r) = env.info.replication.as_ref() else {
                return Ok(out);
            };
            for row in r.replica_states() {
                out.push(vec![
                    t(&row.group_name),
                    t(&row.replica_name),
                    Value::Int(row.database_id as i64),
                    t(&row.database_name),
                    Value::Bool(row.is_local),
                    Value::Bool(row.is_primary_replica),
                    t(row.availability_mode_desc),
                    t(row.synchronization_state_desc),
                    Value::Bool(row.is_connected),
                    i(row.log_send_queue_size),
                    i(row.redo_queue_size),
                    i(row.last_sent_lsn),
                    i(row.last_hardened_lsn),
                    i(row.last_redone_lsn),
                    row.last_commit_time
                        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                        .map(|d| Value::Timestamp(d.as_micros() as i64))
                        .unwrap_or(Value::Null),
                    row.secondary_lag_seconds
                        .map(Value::Float)
                        .unwrap_or(Value::Null),
                    row.last_error.as_deref().map(t).unwrap_or(Value::Null),
                    Value::Bool(row.needs_reseed),
                    row.lag_bytes.map(i).unwrap_or(Value::Null),
                    row.lag_ms.map(Value::Float).unwrap_or(Value::Null),
                    row.max_lag_bytes.map(i).unwrap_or(Value::Null),
                    row.max_lag_ms.map(i).unwrap_or(Value::Null),
                    row.is_lag_bound_counted
                        .map(Value::Bool)
                        .unwrap_or(Value::Null),
                ]);
            }
        }
        SysView::Triggers => out = pg_catalog::triggers::sys_triggers_rows(env),
        SysView::Schemas => {
            // SQL Server's ids for its own schemas; a made schema's id is
            // its pg_namespace OID, its principal its owner's role OID.
            for (name, id) in [
                ("dbo", 1),
                ("guest", 2),
                ("INFORMATION_SCHEMA", 3),
                ("sys", 4),
            ] {
                out.push(vec![t(name), Value::Int(id), Value::Int(1)]);
            }
            for s in &env.info.path.namespaces().schemas {
                out.push(vec![
                    t(&s.name),
                    Value::Int(crate::catalog::schemas::schema_oid(s.id)),
                    Value::Int(s.owner as i64),
                ]);
            }
        }
        SysView::Databases => {
            for db in inst.databases() {
                let s = db.settings();
                out.push(vec![
                    t(db.name()),
                    Value::Int(db.id() as i64),
                    t(s.recovery_model.as_str()),
                    t(s.delayed_durability.as_str()),
                    t(if db.log().is_poisoned().is_some() {
                        "SUSPECT"
                    } else {
                        "ONLINE"
                    }),
                    opt(s.max_exposure_bytes),
                    opt(s.max_exposure_ms),
                ]);
            }
        }
        SysView::FileStats => {
            let want_db = args.first().and_then(|v| v.as_i64());
            let want_file = args.get(1).and_then(|v| v.as_i64());
            let sample_ms = std::time::SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_millis() as u64)
                .unwrap_or(0);
            for db in inst.databases() {
                if want_db.is_some_and(|d| d != db.id() as i64) {
                    continue;
                }
                for (file_id, s) in [
                    (1, db.data_file_stats().snapshot()),
                    (2, db.log_file_stats().snapshot()),
                ] {
                    if want_file.is_some_and(|f| f != file_id) {
                        continue;
                    }
                    let (rs, ws) = (
                        s.io_stall_read_ms.round() as u64,
                        s.io_stall_write_ms.round() as u64,
                    );
                    out.push(vec![
                        Value::Int(db.id() as i64),
                        Value::Int(file_id),
                        i(sample_ms),
                        i(s.num_of_reads),
                        i(s.num_of_bytes_read),
                        i(rs),
                        i(s.num_of_writes),
                        i(s.num_of_bytes_written),
                        i(ws),
                        i(rs + ws),
                        i(s.size_on_disk_bytes),
                    ]);
                }
            }
        }
        SysView::WaitStats => {
            for w in inst.wait_stats().rows() {
                out.push(vec![
                    t(w.wait_type.name()),
                    i(w.waiting_tasks_count),
                    i(w.wait_time_ms.round() as u64),
                    i(w.max_wait_time_ms.round() as u64),
                    Value::Int(0),
                ]);
            }
        }
        SysView::SessionWaitStats => {
            for s in inst.sessions() {
                for w in s.waits.rows() {
                    if w.waiting_tasks_count == 0 {
                        continue;
                    }
                    out.push(vec![
                        Value::Int(s.id as i64),
                        t(w.wait_type.name()),
                        i(w.waiting_tasks_count),
                        i(w.wait_time_ms.round() as u64),
                        i(w.max_wait_time_ms.round() as u64),
                        Value::Int(0),
                    ]);
                }
            }
        }
        SysView::PerfCounters => {
            use std::sync::atomic::Ordering::Relaxed;
            // cntr_type 272696576 is PERF_COUNTER_BULK_COUNT: a cumulative value
            // the reader turns into a rate, as SQL Server presents .../sec counters.
            const BULK: i64 = 272_696_576;
            const RAW: i64 = 65_792;
            for db in inst.databases() {
                let lc = db.log().counters();
                let dc = db.counters();
                let rc = db.replica_counters();
                let rows: [(&str, &str, u64, i64); 11] = [
                    (
                        "SQLServer:Buffer Manager",
                        "Checkpoint pages/sec",
                        // The base store writes 4 KiB pages.
                        dc.checkpoint_bytes.load(Relaxed) / 4096,
                        BULK,
                    ),
                    (
                        "SQLServer:Databases",
                        "Log Flushes/sec",
                        lc.log_flushes.load(Relaxed),
                        BULK,
                    ),
                    (
                        "SQLServer:Databases",
                        "Log Bytes Flushed/sec",
                        lc.log_bytes_flushed.load(Relaxed),
                        BULK,
                    ),
                    (
                        "SQLServer:Databases",
                        "Log Flush Wait Time",
                        lc.log_flush_wait_us.load(Relaxed) / 1000,
                        RAW,
                    ),
                    (
                        "SQLServer:Databases",
                        "Write Transactions/sec",
                        dc.write_transactions.load(Relaxed),
                        BULK,
                    ),
                    (
                        "SQLServer:Databases",
                        "Transactions/sec",
                        dc.transactions.load(Relaxed),
                        BULK,
                    ),
                    (
                        "SQLServer:Databases",
                        "Delayed Durable Commits",
                        dc.delayed_commits.load(Relaxed),
                        BULK,
                    ),
                    (
                        "SQLServer:Database Replica",
                        "Transaction Delay",
                        rc.transaction_delay_us.load(Relaxed) / 1000,
                        BULK,
                    ),
                    (
                        "SQLServer:Database Replica",
                        "Mirrored Write Transactions/sec",
                        rc.mirrored_write_transactions.load(Relaxed),
                        BULK,
                    ),
                    (
                        "SQLServer:Database Replica",
                        "Log Bytes Received/sec",
                        rc.log_bytes_received.load(Relaxed),
                        BULK,
                    ),
                    (
                        "SQLServer:Locks",
                        "Number of Deadlocks/sec",
                        dc.deadlocks.load(Relaxed),
                        BULK,
                    ),
                ];
                for (obj, name, v, ty) in rows {
                    out.push(vec![t(obj), t(name), t(db.name()), i(v), Value::Int(ty)]);
                }
            }
        }
        SysView::LogExposure => {
            use std::sync::atomic::Ordering::Relaxed;
            for db in inst.databases() {
                let e = db.exposure();
                let lc = db.log().counters();
                let s = db.settings();
                out.push(vec![
                    Value::Int(db.id() as i64),
                    t(db.name()),
                    i(e.unhardened_bytes),
                    i(e.unhardened_commits),
                    Value::Float(e.oldest_age_ms),
                    i(e.end_lsn),
                    i(e.hardened_lsn),
                    opt(s.max_exposure_bytes),
                    opt(s.max_exposure_ms),
                    i(lc.peak_exposure_bytes.load(Relaxed)),
                    Value::Float(lc.peak_exposure_us.load(Relaxed) as f64 / 1000.0),
                    // Delayed commits held back by a bound, and commits a
                    // stalled disk hardened later than `max_exposure_ms`.
                    i(lc.exposure_bound_waits.load(Relaxed)),
                    i(lc.exposure_bound_misses.load(Relaxed)),
                ]);
            }
        }
        SysView::Pg(pg_catalog::PgView::SequenceRel) => {
            return pg_catalog::sequence_relation_rows(env, args)
        }
        SysView::Pg(pg_catalog::PgView::OptionsTable) => {
            return Ok(pg_catalog::options_to_table(
                args.first().unwrap_or(&Value::Null),
            ))
        }
        SysView::Pg(v) => return pg_catalog::rows(v, env),
    }
    Ok(out)
}
