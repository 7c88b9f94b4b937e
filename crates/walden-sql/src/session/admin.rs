//! Instance and database administration commands: USE, databases and
//! their options, backups, CHECKPOINT and DBCC, availability groups.

use super::SqlSession;
use crate::error::{ErrorKind, Result, SqlError};
use crate::front::Command;
use crate::{Column, QueryOutput};
use walden_engine::{DataType, DelayedDurability, RecoveryModel, Value};

impl SqlSession {
    /// Runs one of the administration commands (see `execute_command`).
    pub(super) fn admin_command(&mut self, cmd: &Command) -> Result<QueryOutput> {
        let inst = self.engine.instance.clone();
        match cmd {
            Command::Use(name) => {
                // The open transaction belongs to the current database.
                if self.explicit || self.tx.is_some() {
                    return Err(SqlError::new(
                        ErrorKind::ActiveTransaction,
                        "cannot change database inside a transaction",
                    ));
                }
                let db = inst.database(name).map_err(|_| {
                    SqlError::new(
                        ErrorKind::UndefinedDatabase,
                        format!("database \"{name}\" does not exist"),
                    )
                })?;
                if !self.who().can_connect(db.id()) {
                    return Err(crate::catalog::privileges::denied(format!(
                        "permission denied for database \"{}\"",
                        db.name()
                    )));
                }
                self.session
                    .set_identity(&self.user, self.role, db.name(), db.id());
                self.db = db;
                Ok(QueryOutput::command("SET"))
            }
            Command::FlushLog => {
                self.db.flush_log(&self.session)?;
                Ok(QueryOutput::command("EXECUTE"))
            }
            Command::Checkpoint => {
                self.db.checkpoint()?;
                Ok(QueryOutput::command("CHECKPOINT"))
            }
            Command::BackupDatabase { name, path } => {
                let file =
                    crate::admin::backup::resolve(self.engine.backup_dir.read().as_deref(), path)?;
                inst.database(name)?.backup_database(&self.session, &file)?;
                Ok(QueryOutput::command("BACKUP DATABASE"))
            }
            Command::BackupLog { name, path } => {
                let file =
                    crate::admin::backup::resolve(self.engine.backup_dir.read().as_deref(), path)?;
                inst.database(name)?.backup_log(&self.session, &file)?;
                Ok(QueryOutput::command("BACKUP LOG"))
            }
            Command::ClearWaitStats => {
                inst.wait_stats().clear();
                Ok(QueryOutput::command("DBCC"))
            }
            Command::CheckDb { name, quiet } => {
                let db = match name {
                    Some(n) => inst.database(n)?,
                    None => self.db.clone(),
                };
                crate::admin::checkdb::run(&db, *quiet)
            }
            Command::CreateAvailabilityGroup(def) => {
                self.hadr()?
                    .create_group((**def).clone())
                    .map_err(hadr_err)?;
                Ok(QueryOutput::command("CREATE AVAILABILITY GROUP"))
            }
            Command::AvailabilityGroupReseed { name, replica } => {
                self.hadr()?.reseed(name, replica).map_err(hadr_err)?;
                Ok(QueryOutput::command("ALTER AVAILABILITY GROUP"))
            }
            Command::DropAvailabilityGroup(name) => {
                self.hadr()?.drop_group(name).map_err(hadr_err)?;
                Ok(QueryOutput::command("DROP AVAILABILITY GROUP"))
            }
            Command::AvailabilityGroupFailover { name, force } => {
                let rows = self.hadr()?.failover(name, *force).map_err(hadr_err)?;
                let mut out = QueryOutput::command(format!("SELECT {}", rows.len()));
                out.columns = Some(failover_columns());
                for r in rows {
                    if r.possible_loss_bytes > 0 {
                        out.notices.push(format!(
                        "database \"{}\": log from LSN {} to {} on the old primary was not received here; transactions in it may be lost",
                        r.database, r.failover_lsn, r.primary_last_known_lsn
                    ));
                    }
                    out.rows.push(vec![
                        Value::text(&r.database),
                        Value::Int(r.failover_lsn as i64),
                        Value::Int(r.primary_last_known_lsn as i64),
                        Value::Int(r.possible_loss_bytes as i64),
                        Value::Int(r.epoch as i64),
                    ]);
                }
                Ok(out)
            }
            Command::ClearExposurePeaks => {
                for db in inst.databases() {
                    db.log().counters().reset_peaks();
                }
                Ok(QueryOutput::command("DBCC"))
            }
            Command::CreateDatabase(name) => {
                inst.create_database(name)?;
                Ok(QueryOutput::command("CREATE DATABASE"))
            }
            Command::DropDatabase { name, if_exists } => {
                if name.eq_ignore_ascii_case(self.db.name()) {
                    return Err(SqlError::new(
                        ErrorKind::ObjectInUse,
                        "cannot drop the currently open database",
                    ));
                }
                if let Some(g) = self
                    .engine
                    .replication()
                    .and_then(|r| r.groups().into_iter().find(|g| g.def.has_database(name)))
                {
                    return Err(SqlError::new(
                    ErrorKind::ObjectInUse,
                    format!(
                        "database \"{name}\" belongs to availability group \"{}\"; DROP AVAILABILITY GROUP first",
                        g.def.name
                    ),
                ));
                }
                match inst.drop_database(name) {
                    Ok(()) => Ok(QueryOutput::command("DROP DATABASE")),
                    Err(walden_engine::EngineError::UnknownDatabase(_)) if *if_exists => {
                        let mut out = QueryOutput::command("DROP DATABASE");
                        out.notices
                            .push(format!("database \"{name}\" does not exist, skipping"));
                        Ok(out)
                    }
                    Err(e) => Err(e.into()),
                }
            }
            Command::AlterDatabaseOwner { name, owner } => self.in_tx(|tx, s| {
                let who = s.who_in(tx);
                crate::catalog::owner::alter_database_owner(
                    &who,
                    &s.engine.instance,
                    tx,
                    name,
                    owner.as_deref(),
                )
            }),
            Command::AlterDatabase {
                name,
                option,
                value,
            } => {
                let db = if name.eq_ignore_ascii_case("current") {
                    self.db.clone()
                } else {
                    inst.database(name).map_err(|_| {
                        SqlError::new(
                            ErrorKind::UndefinedDatabase,
                            format!("database \"{name}\" does not exist"),
                        )
                    })?
                };
                let bound = |v: &str| -> Result<Option<u64>> {
                    match v.to_ascii_uppercase().as_str() {
                        "NONE" | "OFF" | "0" | "NULL" => Ok(None),
                        n => n.parse::<u64>().map(Some).map_err(|_| {
                            SqlError::new(
                                ErrorKind::InvalidParameter,
                                format!("{option} must be a number or NONE"),
                            )
                        }),
                    }
                };
                match option.as_str() {
                "DELAYED_DURABILITY" => {
                    let dd: DelayedDurability = value.parse()?;
                    db.alter_settings(&self.session, |s| s.delayed_durability = dd)?;
                }
                "RECOVERY" => {
                    let rm: RecoveryModel = value.parse()?;
                    db.alter_settings(&self.session, |s| s.recovery_model = rm)?;
                }
                "MAX_EXPOSURE_BYTES" => {
                    let b = bound(value)?;
                    db.alter_settings(&self.session, |s| s.max_exposure_bytes = b)?;
                }
                "MAX_EXPOSURE_MS" => {
                    let b = bound(value)?;
                    db.alter_settings(&self.session, |s| s.max_exposure_ms = b)?;
                }
                other => {
                    return Err(SqlError::new(
                        ErrorKind::InvalidParameter,
                        format!("unknown database option {other} (DELAYED_DURABILITY, RECOVERY, MAX_EXPOSURE_BYTES, MAX_EXPOSURE_MS)"),
                    ))
                }
            }
                Ok(QueryOutput::command("ALTER DATABASE"))
            }
            _ => Err(SqlError::internal("not an administration command")),
        }
    }
}

fn hadr_err(e: walden_replication::ReplicationError) -> SqlError {
    use walden_replication::ReplicationError as R;
    match e {
        R::Engine(e) => e.into(),
        R::UnknownGroup(_) => SqlError::new(ErrorKind::UndefinedObject, e.to_string()),
        R::Invalid(_) => SqlError::new(ErrorKind::InvalidParameter, e.to_string()),
        R::State(_) => SqlError::new(ErrorKind::PrerequisiteState, e.to_string()),
        R::Io(_) => SqlError::new(ErrorKind::Io, e.to_string()),
    }
}

/// The row `ALTER AVAILABILITY GROUP ... [FORCE_]FAILOVER` returns per
/// database (also its description for the extended protocol).
pub(super) fn failover_columns() -> Vec<Column> {
    Column::computed(&[
        ("database_name", DataType::Varchar(None)),
        ("failover_lsn", DataType::BigInt),
        ("primary_last_known_lsn", DataType::BigInt),
        ("possible_loss_bytes", DataType::BigInt),
        ("epoch", DataType::BigInt),
    ])
}
