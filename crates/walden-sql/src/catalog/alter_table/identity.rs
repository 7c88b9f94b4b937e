//! Identity columns in ALTER TABLE: `ALTER [COLUMN] c ADD GENERATED {
//! ALWAYS | BY DEFAULT } AS IDENTITY [(options)]` (an action sqlparser
//! parses, run by `alter_table.rs`'s dispatcher), and `SET GENERATED` /
//! `DROP IDENTITY` (parsed in `front/alter_table.rs`, run here). Each is a
//! change of the table's definition, logged and applied as the other
//! actions; the engine starts a new counter for a column that just became
//! an identity column.

use crate::catalog::alter_table::{err, Work};
use crate::dml::Ctx;
use crate::error::{ErrorKind, Result, SqlError};
use crate::query::Planner;
use crate::QueryOutput;
use sqlparser::ast;
use walden_engine::{DataType, Transaction};

/// `ALTER TABLE t ALTER c SET GENERATED ... | DROP IDENTITY [IF EXISTS]`
/// (parsed in `front/alter_table.rs`): a change of the definition only,
/// logged and applied as the other actions.
pub(crate) fn alter_identity(
    p: &mut Planner<'_>,
    a: &crate::front::alter_table::AlterIdentity,
    tx: &mut Transaction,
    ctx: &Ctx<'_>,
) -> Result<QueryOutput> {
    if a.actions.len() > 1 {
        return Err(SqlError::syntax("conflicting or redundant options"));
    }
    let db = tx.database().clone();
    let mut out = QueryOutput::command("ALTER TABLE");
    let name = match db.table_as(Some(tx.id()), &a.table) {
        Ok(t) => t.name().to_string(),
        Err(_) if a.if_exists => {
            out.notices
                .push(format!("relation \"{}\" does not exist, skipping", a.table));
            return Ok(out);
        }
        Err(e) => return Err(e.into()),
    };
    tx.fold_writes(&name)?;
    let tx: &Transaction = tx;
    let env = ctx.env(tx);
    let mut notices = Vec::new();
    tx.alter_table(&name, |t| {
        let mut w = Work::new(&db, t, &env);
        let i = w.column(&a.column)?;
        for action in &a.actions {
            w.identity_action(i, action)?;
        }
        let alt = w.finish(p)?;
        notices = w.notices;
        Ok::<_, SqlError>(alt)
    })?;
    out.notices = notices;
    Ok(out)
}

impl Work<'_> {
    /// `SET GENERATED { ALWAYS | BY DEFAULT }`, `DROP IDENTITY [IF
    /// EXISTS]` (the column stays NOT NULL, as PostgreSQL's; its counter
    /// goes, and a later ADD GENERATED starts a new one).
    pub(crate) fn identity_action(
        &mut self,
        i: usize,
        action: &crate::front::alter_table::IdentityAction,
    ) -> Result<()> {
        use crate::front::alter_table::IdentityAction as A;
        let col = &mut self.def.columns[i];
        let not_identity = format!(
            "column \"{}\" of relation \"{}\" is not an identity column",
            col.name, self.def.name
        );
        // A serial column is not an identity column in PostgreSQL's sense.
        let ident = col.identity.as_mut().filter(|id| id.generated.is_some());
        match (action, ident) {
            (A::SetGenerated(g), Some(id)) => id.generated = Some(*g),
            (A::Drop { .. }, Some(_)) => col.identity = None,
            (A::Drop { if_exists: true }, None) => {
                self.notices.push(format!("{not_identity}, skipping"))
            }
            (_, None) => return Err(err(ErrorKind::PrerequisiteState, not_identity)),
        }
        Ok(())
    }

    /// `ALTER COLUMN c ADD GENERATED { ALWAYS | BY DEFAULT } AS IDENTITY
    /// [(options)]` (pg_dump adds identity columns so): the column (NOT
    /// NULL, with no default, of an integer type) becomes an identity
    /// column whose counter starts at START whatever rows the table holds,
    /// as PostgreSQL's new sequence does (a restore then calls `setval`).
    /// The engine starts the counter when it installs the definition, on
    /// the primary, at recovery and on a secondary alike.
    pub(crate) fn add_identity(
        &mut self,
        i: usize,
        generated_as: Option<&ast::GeneratedAs>,
        options: &Option<Vec<ast::SequenceOptions>>,
    ) -> Result<()> {
        let Some(generated_as) = generated_as else {
            return Err(SqlError::syntax(
                "syntax error: ADD GENERATED needs ALWAYS or BY DEFAULT",
            ));
        };
        let col = &self.def.columns[i];
        let what = format!("column \"{}\" of relation \"{}\"", col.name, self.table());
        if !matches!(
            col.data_type,
            DataType::SmallInt | DataType::Int | DataType::BigInt
        ) {
            return Err(err(
                ErrorKind::InvalidParameter,
                "identity column type must be smallint, integer, or bigint",
            ));
        }
        if col.nullable {
            return Err(err(
                ErrorKind::PrerequisiteState,
                format!("{what} must be declared NOT NULL before identity can be added"),
            ));
        }
        match col.identity {
            Some(id) if id.generated.is_some() => {
                return Err(err(
                    ErrorKind::PrerequisiteState,
                    format!("{what} is already an identity column"),
                ))
            }
            // A serial column: PostgreSQL's has a nextval() default.
            Some(_) => {
                return Err(err(
                    ErrorKind::PrerequisiteState,
                    format!("{what} already has a default value"),
                ))
            }
            None if col.default.is_some() => {
                return Err(err(
                    ErrorKind::PrerequisiteState,
                    format!("{what} already has a default value"),
                ))
            }
            None => {}
        }
        self.def.columns[i] =
            crate::catalog::ddl::generated_identity(col.clone(), generated_as, options, &None)?;
        self.def
            .validate()
            .map_err(crate::catalog::ddl::map_def_err)
    }
}
