//! `ALTER SEQUENCE`: its options (`AS`, `INCREMENT`, `MINVALUE`,
//! `MAXVALUE`, `START`, `RESTART`, `CACHE`, `CYCLE`), `OWNED BY t.c | NONE`
//! and `RENAME TO`, checked as PostgreSQL does (`SequenceDef::altered`) and
//! made in one logged catalog change. A column's `nextval` default names
//! its sequence, so a rename carries those defaults along (PostgreSQL's
//! name the sequence by OID and need nothing).

use crate::error::{ErrorKind, Result, SqlError};
use crate::front::SequenceChange;
use crate::QueryOutput;
use walden_engine::{Alteration, DefaultExpr, EngineError, SeqOwner, Transaction};

pub(crate) fn alter_sequence(
    tx: &mut Transaction,
    if_exists: bool,
    sequence: &str,
    change: &SequenceChange,
) -> Result<QueryOutput> {
    let db = tx.database().clone();
    let mut out = QueryOutput::command("ALTER SEQUENCE");
    let Some(seq) = db
        .sequences_as(Some(tx.id()))
        .into_iter()
        .find(|s| s.name.eq_ignore_ascii_case(sequence))
    else {
        if if_exists {
            out.notices
                .push(format!("relation \"{sequence}\" does not exist, skipping"));
            return Ok(out);
        }
        if db.table_as(Some(tx.id()), sequence).is_ok() {
            return Err(SqlError::new(
                ErrorKind::WrongObjectType,
                format!("\"{sequence}\" is not a sequence"),
            ));
        }
        return Err(SqlError::new(
            ErrorKind::UndefinedTable,
            format!("relation \"{sequence}\" does not exist"),
        ));
    };
    let owner = match &change.owned_by {
        None => seq.owned_by,
        Some(None) => None,
        Some(Some((table, column))) => Some(owner_column(tx, table, column)?),
    };
    let new_name = change.rename.clone();
    tx.alter_sequence(&seq.name, |cur| {
        let (mut def, restart) = cur.altered(&change.options)?;
        def.owned_by = owner;
        if let Some(n) = &new_name {
            def.name = n.clone();
        }
        Ok((def, restart))
    })
    .map_err(|e| match e {
        EngineError::SequenceExists(n) => SqlError::new(
            ErrorKind::DuplicateTable,
            format!("relation \"{n}\" already exists"),
        ),
        other => other.into(),
    })?;
    if let Some(n) = &new_name {
        follow_rename(tx, &seq.name, n)?;
    }
    Ok(out)
}

/// The column `OWNED BY table.column` names.
fn owner_column(tx: &Transaction, table: &str, column: &str) -> Result<SeqOwner> {
    let db = tx.database().clone();
    let t = db.table_as(Some(tx.id()), table).map_err(|_| {
        // A system catalog (`pg_class`) is in another schema.
        if table.to_ascii_lowercase().starts_with("pg_") {
            SqlError::new(
                ErrorKind::PrerequisiteState,
                "sequence must be in same schema as table it is linked to",
            )
        } else {
            SqlError::new(
                ErrorKind::UndefinedTable,
                format!("relation \"{table}\" does not exist"),
            )
        }
    })?;
    let Some(i) = t.def.column_index(column) else {
        return Err(SqlError::new(
            ErrorKind::UndefinedColumn,
            format!(
                "column \"{column}\" of relation \"{}\" does not exist",
                t.name()
            ),
        ));
    };
    Ok(SeqOwner {
        table: t.id(),
        column: i,
    })
}

/// Points the `nextval` defaults that name sequence `old` at `new`.
pub(crate) fn follow_rename(tx: &mut Transaction, old: &str, new: &str) -> Result<()> {
    if old.eq_ignore_ascii_case(new) {
        return Ok(());
    }
    let db = tx.database().clone();
    let uses = |c: &walden_engine::ColumnDef| crate::catalog::ddl::default_names_sequence(c, old);
    for t in db.tables_as(Some(tx.id())) {
        if !t.def.columns.iter().any(uses) {
            continue;
        }
        tx.fold_writes(t.name())?;
        let tx: &Transaction = tx;
        tx.alter_table(t.name(), |cur| {
            let mut def = cur.def.clone();
            for c in def.columns.iter_mut().filter(|c| uses(c)) {
                c.default = Some(match c.default.take() {
                    Some(DefaultExpr::Expr(mut sql)) => {
                        while let Some(at) = crate::catalog::ddl::quoted_at(&sql, old) {
                            sql.replace_range(at..at + old.len() + 2, &format!("'{new}'"));
                        }
                        DefaultExpr::Expr(sql)
                    }
                    _ => DefaultExpr::NextVal(new.to_string()),
                });
            }
            Ok::<_, EngineError>(Some(Alteration { def, rewrite: None }))
        })?;
    }
    Ok(())
}
