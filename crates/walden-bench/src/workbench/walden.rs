//! Walden as a target: the embedded engine (an instance in a scratch
//! directory, driven through the SQL layer in process) or a running server.
//! Both read the counters the same way, through the system views of SPEC §5,
//! so what the workbench prints is what a DBA would read.

use super::target::{
    Conn, Counters, Db, Dialect, Durability, Exposure, ModeSpec, Recovery, SessionWaits, Target,
    TargetKind,
};
use crate::{BenchError, Result};
use std::path::Path;
use std::sync::Arc;
use walden_engine::{Instance, InstanceConfig};
use walden_sql::{SqlEngine, SqlSession};

/// Opens a connection to a named database.
pub type Connector = Arc<dyn Fn(&str) -> Result<Box<dyn Conn>> + Send + Sync>;

/// A Walden instance, embedded or behind a server.
pub struct WaldenTarget {
    label: String,
    connect: Connector,
    /// Keeps the embedded instance alive (and closes it cleanly on drop).
    engine: Option<Arc<SqlEngine>>,
    /// The embedded instance's data directory.
    dir: Option<std::path::PathBuf>,
}

impl WaldenTarget {
    /// An embedded instance in `dir` (which must be empty or not exist).
    pub fn embedded(dir: &Path) -> Result<WaldenTarget> {
        let mut cfg = InstanceConfig::new(dir);
        // The experiments make and drop a database per cell; periodic
        // checkpoints would only add noise to the log counters.
        cfg.checkpoint_interval = None;
        let instance = Instance::open(cfg)?;
        let mut t = WaldenTarget::from_engine("walden (embedded)".into(), SqlEngine::new(instance));
        t.dir = Some(dir.to_path_buf());
        Ok(t)
    }

    /// An instance opened by the caller (closed when the target is dropped).
    pub fn from_engine(label: String, engine: Arc<SqlEngine>) -> WaldenTarget {
        WaldenTarget {
            label,
            connect: embedded_connector(engine.clone()),
            engine: Some(engine),
            dir: None,
        }
    }

    /// A running server reached through `connect` (see `pgwire.rs`).
    pub fn server(label: String, connect: Connector) -> WaldenTarget {
        WaldenTarget {
            label,
            connect,
            engine: None,
            dir: None,
        }
    }
}

/// Sessions of an in-process SQL engine.
pub fn embedded_connector(engine: Arc<SqlEngine>) -> Connector {
    Arc::new(move |db: &str| {
        let s = engine
            .connect(db, "workbench", "walden bench")
            .map_err(|err| BenchError::Other(format!("connect to {db}: {err}")))?;
        Ok(Box::new(EmbeddedConn(s)) as Box<dyn Conn>)
    })
}

impl Drop for WaldenTarget {
    fn drop(&mut self) {
        if let Some(e) = self.engine.take() {
            let _ = e.instance().close();
        }
    }
}

impl Target for WaldenTarget {
    fn kind(&self) -> TargetKind {
        TargetKind::Walden
    }
    fn label(&self) -> String {
        self.label.clone()
    }
    fn dialect(&self) -> Dialect {
        Dialect::Walden
    }
    fn mode(&self, d: Durability) -> ModeSpec {
        match d {
            Durability::Full => ModeSpec {
                durability: d,
                label: "DELAYED_DURABILITY = DISABLED".into(),
                short: "durable".into(),
            },
            Durability::Relaxed => ModeSpec {
                durability: d,
                label: "DELAYED_DURABILITY = FORCED".into(),
                short: "delayed".into(),
            },
        }
    }
    fn has_recovery_models(&self) -> bool {
        true
    }
    fn embedded_dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }
    fn fresh_db(
        &self,
        name: &str,
        d: Durability,
        recovery: Option<Recovery>,
    ) -> Result<Box<dyn Db>> {
        let mut admin = (self.connect)("walden")?;
        admin.exec(&format!("DROP DATABASE IF EXISTS {name}"))?;
        admin.exec(&format!("CREATE DATABASE {name}"))?;
        let dd = match d {
            Durability::Full => "DISABLED",
            Durability::Relaxed => "FORCED",
        };
        admin.exec(&format!(
            "ALTER DATABASE {name} SET DELAYED_DURABILITY = {dd}"
        ))?;
        if let Some(r) = recovery {
            let r = match r {
                Recovery::Simple => "SIMPLE",
                Recovery::Full => "FULL",
            };
            admin.exec(&format!("ALTER DATABASE {name} SET RECOVERY {r}"))?;
        }
        Ok(Box::new(WaldenDb {
            name: name.to_string(),
            connect: self.connect.clone(),
        }))
    }
}

struct WaldenDb {
    name: String,
    connect: Connector,
}

fn num(v: &Option<String>) -> Option<f64> {
    v.as_deref().and_then(|s| s.trim().parse::<f64>().ok())
}

impl Db for WaldenDb {
    fn connect(&self) -> Result<Box<dyn Conn>> {
        (self.connect)(&self.name)
    }

    fn counters(&self, m: &mut dyn Conn) -> Result<Counters> {
        let name = &self.name;
        let mut c = Counters::default();
        let rows = m.query(&format!(
            "SELECT num_of_writes, num_of_bytes_written, io_stall_write_ms \
             FROM sys.dm_io_virtual_file_stats(DB_ID('{name}'), 2)"
        ))?;
        if let Some(r) = rows.first() {
            c.log_writes = num(&r[0]).map(|v| v as u64);
            c.log_bytes = num(&r[1]).map(|v| v as u64);
            c.io_stall_write_ms = num(&r[2]);
        }
        let rows = m.query(&format!(
            "SELECT counter_name, cntr_value FROM sys.dm_os_performance_counters \
             WHERE instance_name = '{name}'"
        ))?;
        for r in rows {
            let v = num(&r[1]).map(|v| v as u64);
            match r[0].as_deref().map(str::trim) {
                Some("Log Flushes/sec") => c.log_flushes = v,
                Some("Log Bytes Flushed/sec") => c.log_bytes_flushed = v,
                Some("Write Transactions/sec") => c.write_transactions = v,
                _ => {}
            }
        }
        let rows = m.query(
            "SELECT waiting_tasks_count, wait_time_ms FROM sys.dm_os_wait_stats \
             WHERE wait_type = 'WRITELOG'",
        )?;
        if let Some(r) = rows.first() {
            c.writelog_waits = num(&r[0]).map(|v| v as u64);
            c.writelog_wait_ms = num(&r[1]);
        } else {
            c.writelog_waits = Some(0);
            c.writelog_wait_ms = Some(0.0);
        }
        Ok(c)
    }

    fn session_waits(&self, conn: &mut dyn Conn) -> Result<Option<SessionWaits>> {
        let rows = conn.query(
            "SELECT waiting_tasks_count, wait_time_ms FROM sys.dm_exec_session_wait_stats \
             WHERE session_id = @@SPID AND wait_type = 'WRITELOG'",
        )?;
        // No row: the session never waited.
        let w = rows
            .first()
            .map(|r| SessionWaits {
                count: num(&r[0]).unwrap_or(0.0) as u64,
                wait_ms: num(&r[1]).unwrap_or(0.0),
            })
            .unwrap_or_default();
        Ok(Some(w))
    }

    fn exposure(&self, m: &mut dyn Conn) -> Result<Option<Exposure>> {
        let rows = m.query(&format!(
            "SELECT unhardened_bytes, unhardened_commits, oldest_unhardened_age_ms, \
             peak_unhardened_bytes, peak_exposure_ms FROM sys.dm_log_exposure WHERE database_name = '{}'",
            self.name
        ))?;
        Ok(rows.first().map(|r| Exposure {
            bytes: num(&r[0]).unwrap_or(0.0) as u64,
            commits: num(&r[1]).unwrap_or(0.0) as u64,
            oldest_ms: num(&r[2]).unwrap_or(0.0),
            peak_bytes: num(&r[3]).unwrap_or(0.0) as u64,
            peak_ms: num(&r[4]).unwrap_or(0.0),
        }))
    }

    fn reset_exposure_peaks(&self, conn: &mut dyn Conn) -> Result<()> {
        conn.exec("DBCC SQLPERF('sys.dm_log_exposure', CLEAR)")
    }

    fn flush_log(&self, conn: &mut dyn Conn) -> Result<bool> {
        conn.exec("EXEC sys.sp_flush_log")?;
        Ok(true)
    }

    fn checkpoint(&self, conn: &mut dyn Conn) -> Result<()> {
        conn.exec("CHECKPOINT")
    }

    fn drop_db(self: Box<Self>) -> Result<()> {
        let mut admin = (self.connect)("walden")?;
        admin.exec(&format!("DROP DATABASE {}", self.name))
    }
}

/// An in-process SQL session.
struct EmbeddedConn(SqlSession);

impl EmbeddedConn {
    fn run(&mut self, sql: &str) -> Result<walden_sql::QueryOutput> {
        let mut outs = self.0.execute_batch(sql);
        let mut last = None;
        for o in outs.drain(..) {
            match o {
                Ok(out) => last = Some(out),
                Err(e) => {
                    return Err(BenchError::Other(format!(
                        "{e} (statement: {})",
                        crate::workbench::short_sql(sql)
                    )))
                }
            }
        }
        Ok(last.unwrap_or_default())
    }
}

impl Conn for EmbeddedConn {
    fn exec(&mut self, sql: &str) -> Result<()> {
        self.run(sql).map(|_| ())
    }
    fn query(&mut self, sql: &str) -> Result<Vec<Vec<Option<String>>>> {
        let out = self.run(sql)?;
        Ok(out
            .rows
            .into_iter()
            .map(|r| {
                r.into_iter()
                    .map(|v| match v {
                        walden_sql::Value::Null => None,
                        v => Some(v.to_string()),
                    })
                    .collect()
            })
            .collect())
    }
}
