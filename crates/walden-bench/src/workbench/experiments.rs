//! The five experiments of SPEC §6, as plans the runner executes for every
//! target and mode. Sizes are the published ones times `scale` (`--full` is
//! scale 1); the row count of one transaction is never scaled, because it
//! decides how a transaction meets the log (one block or many).

use super::harness::{Plan, TABLE};
use super::table::int as fmt_n;
use super::target::insert_sql;
use std::sync::Arc;

/// An experiment: what it runs and what it reproduces.
pub struct ExperimentDef {
    pub name: &'static str,
    pub title: &'static str,
    pub description: String,
    /// The published figures (SPEC §1) this reproduces.
    pub published: &'static str,
    pub plans: Vec<Plan>,
    /// Why it cannot run here, if it cannot.
    pub unavailable: Option<String>,
    /// Set for the synchronous-replica experiment, which runs its own
    /// primary and secondary ([`super::replica`]) instead of `plans`.
    pub replica: Option<ReplicaPlan>,
}

/// What `sync-replica` runs: `batches` x `rows_per_batch` single-row inserts
/// per cell, auto-commit and one transaction per batch, with no
/// availability group and with a secondary in each mode at each delay.
#[derive(Clone, Debug)]
pub struct ReplicaPlan {
    pub batches: u64,
    pub rows_per_batch: u64,
    /// Added one-way network delays, ms (0: loopback as is).
    pub delays_ms: Vec<u64>,
}

/// The experiment names, in the order `all` runs them.
pub const NAMES: [&str; 5] = [
    "purge",
    "three-insert",
    "small-vs-large",
    "log-io",
    "sync-replica",
];

/// `n * scale`, at least `min`.
pub fn scaled(n: u64, scale: f64, min: u64) -> u64 {
    ((n as f64 * scale).round() as u64).max(min)
}

/// Ids of session `s` start here, so sessions never collide.
fn base(s: usize) -> u64 {
    (s as u64 + 1) * 1_000_000_000
}

pub fn define(name: &str, scale: f64) -> Option<ExperimentDef> {
    Some(match name {
        "purge" => purge(scale),
        "three-insert" => three_insert(scale),
        "small-vs-large" => small_vs_large(scale),
        "log-io" => log_io(scale),
        "sync-replica" => sync_replica(scale),
        _ => return None,
    })
}

fn purge(scale: f64) -> ExperimentDef {
    let iters = scaled(1000, scale, 2);
    let rows = 1000u64;
    let mut plans = Vec::new();
    for sessions in [8usize, 16] {
        plans.push(Plan {
            variant: format!("insert, {sessions} sessions"),
            sessions,
            transactions: iters * sessions as u64,
            rows: iters * rows * sessions as u64,
            setup: None,
            work: Arc::new(move |c, ctx| {
                for it in 0..iters {
                    c.exec(ctx.dialect.begin())?;
                    for r in 0..rows {
                        c.exec(&insert_sql(
                            TABLE,
                            base(ctx.session) + it * rows + r,
                            ctx.session,
                        ))?;
                    }
                    c.exec("COMMIT")?;
                }
                Ok(iters)
            }),
            flush_at_end: false,
            per_recovery_model: false,
        });
        plans.push(Plan {
            variant: format!("delete, {sessions} sessions"),
            sessions,
            transactions: iters * sessions as u64,
            rows: iters * rows * sessions as u64,
            setup: Some(Arc::new(move |c, dialect| {
                for s in 0..sessions {
                    c.exec(&dialect.bulk_insert(TABLE, base(s), base(s) + iters * rows - 1))?;
                }
                Ok(())
            })),
            work: Arc::new(move |c, ctx| {
                for it in 0..iters {
                    let a = base(ctx.session) + it * rows;
                    c.exec(&format!(
                        "DELETE FROM {TABLE} WHERE id BETWEEN {a} AND {}",
                        a + rows - 1
                    ))?;
                }
                Ok(iters)
            }),
            flush_at_end: false,
            per_recovery_model: false,
        });
    }
    ExperimentDef {
        name: "purge",
        title: "Insert/delete purge workload",
        description: format!(
            "8 and 16 sessions; each runs {} transactions inserting {} rows one statement at a \
             time, then (in a separate cell) {} transactions each deleting {} rows.",
            fmt_n(iters),
            fmt_n(rows),
            fmt_n(iters),
            fmt_n(rows)
        ),
        published: "Published run (SQL Server): 1,000 iterations per session; DD removes the \
                    WRITELOG waits that dominate each session's duration.",
        plans,
        unavailable: None,
        replica: None,
    }
}

fn three_insert(scale: f64) -> ExperimentDef {
    let n = scaled(50_000, scale, 10);
    let sessions = 5usize;
    ExperimentDef {
        name: "three-insert",
        title: "3-insert transactions from 5 threads",
        description: format!(
            "{sessions} sessions x {} transactions of BEGIN; 3 INSERTs; COMMIT.",
            fmt_n(n)
        ),
        published: "Published: 3,778 transactions/s fully durable vs 5,818 delayed (1.54x).",
        plans: vec![Plan {
            variant: format!("{sessions} sessions x {} txns", fmt_n(n)),
            sessions,
            transactions: n * sessions as u64,
            rows: 3 * n * sessions as u64,
            setup: None,
            work: Arc::new(move |c, ctx| {
                for i in 0..n {
                    c.exec(ctx.dialect.begin())?;
                    for k in 0..3 {
                        c.exec(&insert_sql(
                            TABLE,
                            base(ctx.session) + i * 3 + k,
                            ctx.session,
                        ))?;
                    }
                    c.exec("COMMIT")?;
                }
                Ok(n)
            }),
            flush_at_end: false,
            per_recovery_model: false,
        }],
        unavailable: None,
        replica: None,
    }
}

fn small_vs_large(scale: f64) -> ExperimentDef {
    let small = scaled(500_000, scale, 20);
    let reps = scaled(10_000, scale, 5);
    let mut plans = vec![Plan {
        variant: format!("{} single-insert batches", fmt_n(small)),
        sessions: 1,
        transactions: small,
        rows: small,
        setup: None,
        work: Arc::new(move |c, ctx| {
            for i in 0..small {
                c.exec(&insert_sql(TABLE, base(ctx.session) + i, ctx.session))?;
            }
            Ok(small)
        }),
        flush_at_end: false,
        per_recovery_model: true,
    }];
    for width in [1000u64, 10] {
        plans.push(Plan {
            variant: format!("update {} rows x {}", fmt_n(width), fmt_n(reps)),
            sessions: 1,
            transactions: reps,
            rows: reps * width,
            setup: Some(Arc::new(|c, dialect| {
                c.exec(&dialect.bulk_insert(TABLE, 1, 1000))
            })),
            work: Arc::new(move |c, _| {
                for _ in 0..reps {
                    c.exec(&format!(
                        "UPDATE {TABLE} SET v = v + 1 WHERE id BETWEEN 1 AND {width}"
                    ))?;
                }
                Ok(reps)
            }),
            flush_at_end: false,
            per_recovery_model: true,
        });
    }
    let width = 10u64;
    plans.push(Plan {
        variant: format!("delete {} rows x {}", fmt_n(width), fmt_n(reps)),
        sessions: 1,
        transactions: reps,
        rows: reps * width,
        setup: Some(Arc::new(move |c, dialect| {
            c.exec(&dialect.bulk_insert(TABLE, 1, reps * width))
        })),
        work: Arc::new(move |c, _| {
            for i in 0..reps {
                let a = 1 + i * width;
                c.exec(&format!(
                    "DELETE FROM {TABLE} WHERE id BETWEEN {a} AND {}",
                    a + width - 1
                ))?;
            }
            Ok(reps)
        }),
        flush_at_end: false,
        per_recovery_model: true,
    });
    ExperimentDef {
        name: "small-vs-large",
        title: "Many small transactions vs fewer larger ones",
        description: format!(
            "One session: {} auto-commit single-row inserts; updates of 1,000 and of 10 rows \
             repeated {} times; deletes of 10 rows repeated {} times. Walden runs each under \
             recovery SIMPLE and FULL.",
            fmt_n(small),
            fmt_n(reps),
            fmt_n(reps)
        ),
        published: "Published: 500,000 single-insert batches took 120-134 s fully durable vs \
                    68 s delayed, ~8,000 log writes of ~32 KB instead of ~500,000 of ~1 KB and \
                    about half the bytes; the larger transactions changed by a few percent.",
        plans,
        unavailable: None,
        replica: None,
    }
}

fn log_io(scale: f64) -> ExperimentDef {
    let n = scaled(10_000, scale, 10);
    let bulk = scaled(2_000_000, scale, 1000);
    let one = |variant: String, sessions: usize| Plan {
        variant,
        sessions,
        transactions: n * sessions as u64,
        rows: n * sessions as u64,
        setup: None,
        work: Arc::new(move |c, ctx| {
            for i in 0..n {
                c.exec(&insert_sql(TABLE, base(ctx.session) + i, ctx.session))?;
            }
            Ok(n)
        }),
        flush_at_end: true,
        per_recovery_model: false,
    };
    let plans = vec![
        one(format!("{} inserts, 1 session", fmt_n(n)), 1),
        one(format!("{} inserts x 20 sessions", fmt_n(n)), 20),
        Plan {
            variant: format!("bulk load {} rows", fmt_n(bulk)),
            sessions: 1,
            transactions: 1,
            rows: bulk,
            setup: None,
            work: Arc::new(move |c, ctx| {
                c.exec(&ctx.dialect.bulk_insert(TABLE, 1, bulk))?;
                Ok(1)
            }),
            flush_at_end: true,
            per_recovery_model: false,
        },
        Plan {
            variant: format!("{} inserts in 1 transaction", fmt_n(bulk)),
            sessions: 1,
            transactions: 1,
            rows: bulk,
            setup: None,
            work: Arc::new(move |c, ctx| {
                c.exec(ctx.dialect.begin())?;
                for i in 0..bulk {
                    c.exec(&insert_sql(TABLE, 1 + i, ctx.session))?;
                }
                c.exec("COMMIT")?;
                Ok(1)
            }),
            flush_at_end: true,
            per_recovery_model: false,
        },
    ];
    ExperimentDef {
        name: "log-io",
        title: "Log-write characteristics",
        description: format!(
            "{} auto-commit inserts from 1 session and from each of 20 sessions; a {}-row bulk \
             load in one statement; {} single-row inserts in one transaction. Every cell ends \
             with a log flush (EXEC sys.sp_flush_log), timed.",
            fmt_n(n),
            fmt_n(bulk),
            fmt_n(bulk)
        ),
        published: "Published: 10,000 inserts took 96 s (9.5 ms WRITELOG average) and 28 s \
                    (2.8 ms) on two disks fully durable, under 1 s with delayed durability and \
                    no WRITELOG waits.",
        plans,
        unavailable: None,
        replica: None,
    }
}

fn sync_replica(scale: f64) -> ExperimentDef {
    // 10 x 10,000 as published; the batch count is kept (it is the number
    // of rounds the cells interleave over), the batch size scaled.
    let n = scaled(10_000, scale, 10);
    let batches = 10;
    ExperimentDef {
        name: "sync-replica",
        title: "Auto-commit vs explicit transactions with a synchronous replica",
        description: format!(
            "{batches} x {} single-row inserts from one session, auto-commit vs one transaction \
             per {}, on a primary with no availability group (local), with a SYNCHRONOUS_COMMIT \
             secondary (sync), the same with DELAYED_DURABILITY = FORCED (sync + delayed), \
             with an ASYNCHRONOUS_COMMIT secondary (async), and with one bounded by \
             MAX_LAG_BYTES = 65536, MAX_LAG_MS = 10 (async + bound); the secondary is a second instance \
             in the same process, on the same disk unless --secondary-dir says otherwise, \
             reached over loopback TCP, directly and through a proxy adding 1 ms and 5 ms each \
             way. Each cell runs one batch per round, \
             the cells interleaved (reversed every other round); medians are over rounds.",
            fmt_n(n),
            fmt_n(n)
        ),
        published: "Published: ~4.4 ms per auto-commit insert with a synchronous replica; \
                    7 min 50 s auto-commit vs a couple of seconds in explicit transactions.",
        plans: Vec::new(),
        unavailable: None,
        replica: Some(ReplicaPlan {
            batches,
            rows_per_batch: n,
            delays_ms: vec![0, 1, 5],
        }),
    }
}
