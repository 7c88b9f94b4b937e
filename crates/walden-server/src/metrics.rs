//! The Prometheus `/metrics` endpoint: the counters of SPEC §5 in the text
//! exposition format, served by a minimal HTTP/1.1 responder.

use std::fmt::Write;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use walden_engine::{DelayedDurability, Instance, RecoveryModel};

use crate::server::Shared;

struct Out {
    text: String,
}

impl Out {
    fn header(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.text, "# HELP walden_{name} {help}");
        let _ = writeln!(self.text, "# TYPE walden_{name} {kind}");
    }
    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        let _ = write!(self.text, "walden_{name}");
        if !labels.is_empty() {
            self.text.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.text.push(',');
                }
                let v = v
                    .replace('\\', "\\\\")
                    .replace('"', "\\\"")
                    .replace('\n', "\\n");
                let _ = write!(self.text, "{k}=\"{v}\"");
            }
            self.text.push('}');
        }
        let _ = writeln!(self.text, " {value}");
    }
}

/// Renders every metric of the instance.
pub fn render(
    instance: &Instance,
    connections: usize,
    replication: Option<&walden_replication::Replication>,
    login_failures: &[(&str, u64)],
) -> String {
    let mut o = Out {
        text: String::with_capacity(8192),
    };
    let dbs = instance.databases();

    o.header(
        "database_info",
        "gauge",
        "Databases (value 1) with their settings as labels.",
    );
    for db in &dbs {
        let s = db.settings();
        let id = db.id().to_string();
        let dd = match s.delayed_durability {
            DelayedDurability::Disabled => "DISABLED",
            DelayedDurability::Allowed => "ALLOWED",
            DelayedDurability::Forced => "FORCED",
        };
        let rm = match s.recovery_model {
            RecoveryModel::Simple => "SIMPLE",
            RecoveryModel::Full => "FULL",
        };
        o.sample(
            "database_info",
            &[
                ("db", db.name()),
                ("database_id", &id),
                ("recovery_model", rm),
                ("delayed_durability", dd),
            ],
            1.0,
        );
    }

    // A failed log write or sync poisons a database: it refuses writes
    // until restarted (sys.databases shows SUSPECT). Alert on this.
    o.header(
        "database_poisoned",
        "gauge",
        "1 while the database refuses writes after a failed log write or sync (SUSPECT).",
    );
    for db in &dbs {
        let poisoned = db.log().is_poisoned().is_some();
        o.sample(
            "database_poisoned",
            &[("db", db.name())],
            if poisoned { 1.0 } else { 0.0 },
        );
    }

    // sys.dm_io_virtual_file_stats, per database and file.
    type FileMetric = (
        &'static str,
        &'static str,
        &'static str,
        fn(&walden_engine::FileStatsSnapshot) -> f64,
    );
    let file_metrics: [FileMetric; 7] = [
        (
            "file_writes_total",
            "counter",
            "Write calls (num_of_writes).",
            |s| s.num_of_writes as f64,
        ),
        (
            "file_bytes_written_total",
            "counter",
            "Bytes written (num_of_bytes_written).",
            |s| s.num_of_bytes_written as f64,
        ),
        (
            "file_io_stall_write_seconds_total",
            "counter",
            "Time spent in writes and syncs, seconds (io_stall_write_ms).",
            |s| s.io_stall_write_ms / 1e3,
        ),
        (
            "file_reads_total",
            "counter",
            "Read calls (num_of_reads).",
            |s| s.num_of_reads as f64,
        ),
        (
            "file_bytes_read_total",
            "counter",
            "Bytes read (num_of_bytes_read).",
            |s| s.num_of_bytes_read as f64,
        ),
        (
            "file_io_stall_read_seconds_total",
            "counter",
            "Time spent in reads, seconds (io_stall_read_ms).",
            |s| s.io_stall_read_ms / 1e3,
        ),
        (
            "file_size_bytes",
            "gauge",
            "Size on disk (size_on_disk_bytes).",
            |s| s.size_on_disk_bytes as f64,
        ),
    ];
    let snaps: Vec<_> = dbs
        .iter()
        .map(|db| {
            (
                db.data_file_stats().snapshot(),
                db.log_file_stats().snapshot(),
            )
        })
        .collect();
    for (name, kind, help, f) in file_metrics {
        o.header(name, kind, help);
        for (db, (data, log)) in dbs.iter().zip(&snaps) {
            o.sample(name, &[("db", db.name()), ("file", "data")], f(data));
            o.sample(name, &[("db", db.name()), ("file", "log")], f(log));
        }
    }

    // Log manager counters (Log Flushes/sec, Log Bytes Flushed/sec, Log Flush Wait Time).
    type LogMetric = (
        &'static str,
        &'static str,
        fn(&walden_engine::LogCounters) -> f64,
    );
    let log_metrics: [LogMetric; 10] = [
        (
            "log_flushes_total",
            "Log flushes (Log Flushes/sec as a cumulative count).",
            |c| c.log_flushes.load(Relaxed) as f64,
        ),
        ("log_bytes_flushed_total", "Log bytes flushed.", |c| {
            c.log_bytes_flushed.load(Relaxed) as f64
        }),
        (
            "log_slow_flushes_total",
            "Log flushes that took 40 ms or more (the disk's sync; each logs \"slow log flush\", at most one line a second).",
            |c| c.slow_log_flushes.load(Relaxed) as f64,
        ),
        (
            "log_flush_wait_seconds_total",
            "Time commits waited for log flushes, seconds (Log Flush Wait Time).",
            |c| c.log_flush_wait_us.load(Relaxed) as f64 / 1e6,
        ),
        (
            "log_bytes_appended_total",
            "Log bytes appended to the buffer.",
            |c| c.log_bytes_appended.load(Relaxed) as f64,
        ),
        ("log_records_appended_total", "Log records appended.", |c| {
            c.records_appended.load(Relaxed) as f64
        }),
        (
            "log_delayed_acks_total",
            "Commit records the log manager acknowledged before hardening (user delayed commits: walden_delayed_commits_total).",
            |c| c.delayed_commits.load(Relaxed) as f64,
        ),
        (
            "log_system_commits_total",
            "System transactions (DDL, settings changes, backups) the log manager committed fully durable; user commits are walden_durable_commits_total and walden_delayed_commits_total.",
            |c| c.durable_commits.load(Relaxed) as f64,
        ),
        (
            "log_exposure_bound_waits_total",
            "Delayed commits that waited for the exposure bound.",
            |c| c.exposure_bound_waits.load(Relaxed) as f64,
        ),
        (
            "log_exposure_bound_misses_total",
            "Times the exposure bound was exceeded.",
            |c| c.exposure_bound_misses.load(Relaxed) as f64,
        ),
    ];
    for (name, help, f) in log_metrics {
        o.header(name, "counter", help);
        for db in &dbs {
            o.sample(name, &[("db", db.name())], f(db.log().counters()));
        }
    }

    // Transaction counters (sys.dm_os_performance_counters).
    type TxMetric = (
        &'static str,
        &'static str,
        fn(&walden_engine::DbCounters) -> u64,
    );
    let tx_metrics: [TxMetric; 12] = [
        (
            "transactions_total",
            "Transactions (Transactions/sec as a cumulative count).",
            |c| c.transactions.load(Relaxed),
        ),
        (
            "write_transactions_total",
            "Write transactions (Write Transactions/sec).",
            |c| c.write_transactions.load(Relaxed),
        ),
        (
            "durable_commits_total",
            "Fully durable user commits.",
            |c| c.durable_commits.load(Relaxed),
        ),
        (
            "delayed_commits_total",
            "Delayed durable user commits.",
            |c| c.delayed_commits.load(Relaxed),
        ),
        ("rollbacks_total", "Rolled back transactions.", |c| {
            c.rollbacks.load(Relaxed)
        }),
        ("checkpoints_total", "Checkpoints.", |c| {
            c.checkpoints.load(Relaxed)
        }),
        (
            "checkpoint_written_bytes_total",
            "Bytes checkpoints wrote to the data file.",
            |c| c.checkpoint_bytes.load(Relaxed),
        ),
        (
            "checkpoint_rows_total",
            "Rows checkpoints wrote to or deleted from the data file.",
            |c| c.checkpoint_rows.load(Relaxed),
        ),
        (
            "checkpoint_store_commits_total",
            "Commits checkpoints made to the data file (large ones are written in batches).",
            |c| c.checkpoint_commits.load(Relaxed),
        ),
        (
            "checkpoints_unpaced_total",
            "Background checkpoints that stopped pausing between batches: the next one fell due while they ran.",
            |c| c.checkpoints_unpaced.load(Relaxed),
        ),
        (
            "rows_evicted_total",
            "Rows that left memory after a checkpoint wrote them (read from the data file since).",
            |c| c.rows_evicted.load(Relaxed),
        ),
        ("deadlocks_total", "Deadlocks.", |c| {
            c.deadlocks.load(Relaxed)
        }),
    ];
    for (name, help, f) in tx_metrics {
        o.header(name, "counter", help);
        for db in &dbs {
            o.sample(name, &[("db", db.name())], f(db.counters()) as f64);
        }
    }

    // Live exposure (sys.dm_log_exposure).
    let exposures: Vec<_> = dbs.iter().map(|db| db.exposure()).collect();
    type ExpMetric = (
        &'static str,
        &'static str,
        fn(&walden_engine::Exposure) -> f64,
    );
    let exp_metrics: [ExpMetric; 5] = [
        (
            "exposure_unhardened_bytes",
            "Log bytes of acknowledged, unhardened delayed commits.",
            |e| e.unhardened_bytes as f64,
        ),
        (
            "exposure_unhardened_commits",
            "Acknowledged, unhardened delayed commits.",
            |e| e.unhardened_commits as f64,
        ),
        (
            "exposure_oldest_age_seconds",
            "Age of the oldest acknowledged, unhardened commit, seconds.",
            |e| e.oldest_age_ms / 1e3,
        ),
        ("log_end_lsn", "End of the log.", |e| e.end_lsn as f64),
        ("log_hardened_lsn", "End of the hardened log.", |e| {
            e.hardened_lsn as f64
        }),
    ];
    for (name, help, f) in exp_metrics {
        o.header(name, "gauge", help);
        for (db, e) in dbs.iter().zip(&exposures) {
            o.sample(name, &[("db", db.name())], f(e));
        }
    }

    // sys.dm_os_wait_stats.
    let waits = instance.wait_stats().rows();
    o.header(
        "wait_tasks_total",
        "counter",
        "Waits (waiting_tasks_count).",
    );
    for w in &waits {
        o.sample(
            "wait_tasks_total",
            &[("wait_type", w.wait_type.name())],
            w.waiting_tasks_count as f64,
        );
    }
    o.header(
        "wait_time_seconds_total",
        "counter",
        "Time waited, seconds (wait_time_ms).",
    );
    for w in &waits {
        o.sample(
            "wait_time_seconds_total",
            &[("wait_type", w.wait_type.name())],
            w.wait_time_ms / 1e3,
        );
    }
    o.header(
        "wait_max_time_seconds",
        "gauge",
        "Longest single wait, seconds (max_wait_time_ms).",
    );
    for w in &waits {
        o.sample(
            "wait_max_time_seconds",
            &[("wait_type", w.wait_type.name())],
            w.max_wait_time_ms / 1e3,
        );
    }

    // Availability groups (sys.dm_hadr_database_replica_states and the
    // "Database Replica" counters).
    type ReplMetric = (
        &'static str,
        &'static str,
        fn(&walden_engine::ReplicaCounters) -> f64,
    );
    let repl_metrics: [ReplMetric; 3] = [
        (
            "mirrored_write_transactions_total",
            "Durable commits that waited for synchronous secondaries (Mirrored Write Transactions/sec).",
            |c| c.mirrored_write_transactions.load(Relaxed) as f64,
        ),
        (
            "transaction_delay_seconds_total",
            "Time commits waited for synchronous secondaries, seconds (Transaction Delay).",
            |c| c.transaction_delay_us.load(Relaxed) as f64 / 1e6,
        ),
        (
            "log_bytes_received_total",
            "Log bytes received from the primary (Log Bytes Received/sec).",
            |c| c.log_bytes_received.load(Relaxed) as f64,
        ),
    ];
    for (name, help, f) in repl_metrics {
        o.header(name, "counter", help);
        for db in &dbs {
            o.sample(name, &[("db", db.name())], f(db.replica_counters()));
        }
    }
    if let Some(r) = replication {
        o.header(
            "hadr_auth_failures_total",
            "counter",
            "Replication peers refused for failing authentication (wrong secret, forged or replayed frame, TLS).",
        );
        o.sample("hadr_auth_failures_total", &[], r.auth_failures().0 as f64);
        if let Some(c) = r.ha_counters() {
            use std::sync::atomic::Ordering::Relaxed;
            let ha: [(&str, &str, &std::sync::atomic::AtomicU64); 8] = [
                ("ha_promotions_total", "Times this node took an availability group's leader key in etcd and became its primary.", &c.promotions),
                ("ha_demotions_total", "Times this node stopped being a group's primary because it lost the leader key or its lease.", &c.demotions),
                ("ha_lease_lost_total", "Times the node's etcd lease lapsed before it was renewed.", &c.lease_lost),
                ("ha_lease_renewals_total", "Successful renewals of the node's etcd lease.", &c.renewals),
                ("ha_lease_renew_failures_total", "Failed attempts to renew the node's etcd lease.", &c.renew_failures),
                ("ha_sync_set_writes_total", "Writes of a group's published set of counted synchronous secondaries.", &c.sync_set_writes),
                ("ha_switchovers_total", "Times this primary handed its leader key to a secondary that asked (ALTER AVAILABILITY GROUP ... FAILOVER).", &c.switchovers),
                ("ha_forced_failovers_total", "Times this node took a lapsed leader key by an operator's FORCE_FAILOVER_ALLOW_DATA_LOSS.", &c.forced_failovers),
            ];
            for (name, help, v) in ha {
                o.header(name, "counter", help);
                o.sample(name, &[], v.load(Relaxed) as f64);
            }
            o.header(
                "ha_is_primary",
                "gauge",
                "1 when this node holds the group's leader key under a live lease.",
            );
            for (g, primary) in r.roles() {
                o.sample(
                    "ha_is_primary",
                    &[("group", &g)],
                    if primary { 1.0 } else { 0.0 },
                );
            }
        }
        let rows = r.replica_states();
        type RowMetric = (
            &'static str,
            &'static str,
            fn(&walden_replication::ReplicaStateRow) -> f64,
        );
        let row_metrics: [RowMetric; 8] = [
            (
                "hadr_synchronized",
                "1 when the replica is SYNCHRONIZED, else 0 (synchronization_state_desc).",
                |r| (r.synchronization_state_desc == "SYNCHRONIZED") as u8 as f64,
            ),
            (
                "hadr_connected",
                "1 when the replica's connection is up.",
                |r| r.is_connected as u8 as f64,
            ),
            (
                "hadr_log_send_queue_bytes",
                "Log not yet sent to the replica, bytes (log_send_queue_size, which is in KB).",
                |r| r.log_send_queue_size as f64 * 1024.0,
            ),
            (
                "hadr_redo_queue_bytes",
                "Log hardened but not redone on the replica, bytes (redo_queue_size, which is in KB).",
                |r| r.redo_queue_size as f64 * 1024.0,
            ),
            (
                "hadr_last_hardened_lsn",
                "Last LSN hardened on the replica (last_hardened_lsn).",
                |r| r.last_hardened_lsn as f64,
            ),
            (
                "hadr_secondary_lag_seconds",
                "How long the secondary has been behind the primary (secondary_lag_seconds).",
                |r| r.secondary_lag_seconds.unwrap_or(0.0),
            ),
            (
                "hadr_lag_bytes",
                "Log the replica has not hardened, bytes (lag_bytes; what a bounded-lag secondary's MAX_LAG_BYTES limits).",
                |r| r.lag_bytes.unwrap_or(0) as f64,
            ),
            (
                "hadr_lag_seconds",
                "Bounded-lag secondary: age of the oldest acknowledged commit it has not hardened, seconds (lag_ms / 1000; what MAX_LAG_MS limits).",
                |r| r.lag_ms.unwrap_or(0.0) / 1e3,
            ),
        ];
        for (name, help, f) in row_metrics {
            o.header(name, "gauge", help);
            for row in &rows {
                o.sample(
                    name,
                    &[
                        ("group", &row.group_name),
                        ("replica", &row.replica_name),
                        ("db", &row.database_name),
                        (
                            "role",
                            if row.is_primary_replica {
                                "primary"
                            } else {
                                "secondary"
                            },
                        ),
                    ],
                    f(row),
                );
            }
        }
    }

    o.header("sessions", "gauge", "Open engine sessions.");
    o.sample("sessions", &[], instance.sessions().len() as f64);
    o.header("connections", "gauge", "Open client connections.");
    o.sample("connections", &[], connections as f64);
    o.header(
        "login_failures_total",
        "counter",
        "Refused logins by reason: no_rule (no host-based rule matched), rejected (a reject rule), password (SCRAM failed), certificate, role (no such role, or NOLOGIN).",
    );
    for (reason, n) in login_failures {
        o.sample("login_failures_total", &[("reason", reason)], *n as f64);
    }
    o.text
}

/// Serves `/metrics` until the listener is dropped.
pub async fn serve(listener: TcpListener, shared: Arc<Shared>) {
    let mut shutdown = shared.shutdown_rx();
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = shutdown.changed() => return,
        };
        match accepted {
            Ok((stream, _)) => {
                let shared = shared.clone();
                tokio::spawn(async move {
                    if let Err(e) = handle(stream, &shared).await {
                        tracing::debug!(error = %e, "metrics request failed");
                    }
                });
            }
            Err(e) => {
                tracing::warn!(error = %e, "metrics accept failed");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        }
    }
}

async fn handle(mut stream: TcpStream, shared: &Shared) -> std::io::Result<()> {
    let mut req = Vec::with_capacity(1024);
    let mut buf = [0u8; 1024];
    let read = async {
        loop {
            let n = stream.read(&mut buf).await?;
            if n == 0 {
                break;
            }
            req.extend_from_slice(&buf[..n]);
            if req.windows(4).any(|w| w == b"\r\n\r\n") || req.len() > 16 * 1024 {
                break;
            }
        }
        Ok::<_, std::io::Error>(())
    };
    tokio::time::timeout(std::time::Duration::from_secs(10), read)
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "request timeout"))??;
    let line = String::from_utf8_lossy(&req);
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("");
    let path = parts.next().unwrap_or("");
    let path = path.split('?').next().unwrap_or("");
    let (status, ctype, body) = if method != "GET" && method != "HEAD" {
        (
            "405 Method Not Allowed",
            "text/plain",
            "method not allowed\n".to_string(),
        )
    } else if path == "/metrics" {
        let instance = shared.engine.instance().clone();
        let conns = shared.connection_count();
        let repl = shared.engine.replication();
        let failures: Vec<(&str, u64)> = crate::auth::Failure::ALL
            .iter()
            .map(|f| (f.label(), shared.auth_failures.get(*f)))
            .collect();
        let body =
            tokio::task::spawn_blocking(move || render(&instance, conns, repl.as_ref(), &failures))
                .await
                .unwrap_or_default();
        ("200 OK", "text/plain; version=0.0.4; charset=utf-8", body)
    } else if let Some((status, body)) = health(path, shared) {
        (status, "application/json", body)
    } else if path == "/" {
        (
            "200 OK",
            "text/plain",
            "Walden metrics: see /metrics\n".to_string(),
        )
    } else {
        ("404 Not Found", "text/plain", "not found\n".to_string())
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    if method != "HEAD" {
        stream.write_all(body.as_bytes()).await?;
    }
    stream.shutdown().await
}

/// Patroni-style health checks for load balancers and probes: `/primary`
/// (or `/master`, `/read-write`) answers 200 only where every availability
/// group this node is in has its writable primary here (in HA mode: the
/// leader key under a live lease); `/replica` (`/read-only`) 200 where this
/// node is a secondary of every group; `/health` 200 while the server runs.
fn health(path: &str, shared: &Shared) -> Option<(&'static str, String)> {
    let kind = match path {
        "/primary" | "/master" | "/leader" | "/read-write" => 0,
        "/replica" | "/standby" | "/read-only" => 1,
        "/health" => 2,
        _ => return None,
    };
    let repl = shared.engine.replication();
    let roles = repl.as_ref().map(|r| r.roles()).unwrap_or_default();
    let primary = !roles.is_empty() && roles.iter().all(|(_, p)| *p);
    let replica = !roles.is_empty() && roles.iter().all(|(_, p)| !*p);
    let role = if primary {
        "primary"
    } else if replica {
        "replica"
    } else if roles.is_empty() {
        "standalone"
    } else {
        "mixed"
    };
    let groups: Vec<serde_json::Value> = roles
        .iter()
        .map(|(g, p)| serde_json::json!({"group": g, "primary": p}))
        .collect();
    let mut body = serde_json::json!({
        "state": "running",
        "role": role,
        "groups": groups,
        "name": repl.as_ref().map(|r| r.name().to_string()),
    });
    if let Some(r) = &repl {
        if let Some(h) = r.ha_config() {
            body["ha_cluster"] = serde_json::json!(h.cluster);
        }
        if let Some((_, err)) = r.ha_view() {
            body["etcd_error"] = serde_json::json!(err);
        }
    }
    let ok = match kind {
        0 => primary,
        1 => replica,
        _ => !shared.is_shutting_down(),
    };
    let status = if ok {
        "200 OK"
    } else {
        "503 Service Unavailable"
    };
    Some((status, format!("{body}\n")))
}
