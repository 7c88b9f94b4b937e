//! `SET CONSTRAINTS` and the deferred checks at COMMIT (see
//! `dml/deferred.rs`). (A child of `session/mod.rs`: it works on the
//! session's transaction block.)

use super::SqlSession;
use crate::dml::deferred;
use crate::error::{ErrorKind, Result, SqlError};
use crate::{QueryOutput, Warning, WarningKind};
use walden_engine::Transaction;

impl SqlSession {
    /// `SET CONSTRAINTS {ALL | name, ...} {DEFERRED | IMMEDIATE}`. Each
    /// name must be a deferrable constraint (42809 for another constraint,
    /// 42704 for none); outside a transaction block it only warns, as
    /// PostgreSQL.
    pub(super) fn set_constraints(
        &mut self,
        names: &[String],
        deferred: bool,
    ) -> Result<QueryOutput> {
        let mut out = QueryOutput::command("SET CONSTRAINTS");
        let tables = self.db.tables();
        for n in names {
            let is = |a: &str| a.eq_ignore_ascii_case(n);
            let deferrable = tables.iter().any(|t| {
                t.def
                    .foreign_keys
                    .iter()
                    .any(|f| f.deferrable && is(&f.name))
            });
            if deferrable {
                continue;
            }
            let exists = tables.iter().any(|t| {
                (!t.def.primary_key.is_empty() && is(&t.def.pkey_name()))
                    || t.def.checks.iter().any(|c| is(&c.name))
                    || t.def.foreign_keys.iter().any(|f| is(&f.name))
                    || t.def.indexes.iter().any(|i| i.constraint && is(&i.name))
            });
            return Err(if exists {
                SqlError::new(
                    ErrorKind::WrongObjectType,
                    format!("constraint \"{n}\" is not deferrable"),
                )
            } else {
                SqlError::new(
                    ErrorKind::UndefinedObject,
                    format!("constraint \"{n}\" does not exist"),
                )
            });
        }
        if !(self.explicit || self.implicit) {
            out.warnings.push(Warning {
                kind: WarningKind::NoTransactionBlock,
                message: "SET CONSTRAINTS can only be used in transaction blocks".into(),
            });
            return Ok(out);
        }
        let names = (!names.is_empty()).then(|| names.to_vec());
        self.in_tx(|tx, _| deferred::set_mode(tx, names, deferred))?;
        Ok(out)
    }

    /// What runs in `tx` just before it commits: the deferred constraint
    /// checks (a failure fails the commit), then the temporary tables'
    /// `ON COMMIT` actions.
    pub(super) fn before_commit(&self, tx: &mut Transaction) -> Result<()> {
        deferred::check_at_commit(tx)?;
        self.temp_on_commit(tx)
    }
}
