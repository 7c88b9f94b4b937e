//! `ALTER SEQUENCE s OWNED BY t.c` (every pg_dump of a serial column has
//! it, after `CREATE SEQUENCE` and before the column's `nextval` default).
//! A Walden sequence is not tied to a column; a column with its own counter
//! is (a serial column, whose counter PostgreSQL's catalogs show as the
//! sequence `<table>_<column>_seq` owned by the column). So OWNED BY turns
//! the pair into that: the column gets its own counter, starting where the
//! sequence would have, and the sequence goes (in the same transaction).
//! The dump's later `SET DEFAULT nextval('s')` names that counter and
//! changes nothing, and its `setval('s', ...)` sets the counter.
//!
//! What cannot become such a counter is refused (0A000, naming why): another
//! sequence name than `<table>_<column>_seq`, a sequence that has handed out
//! values or whose type, bounds or CYCLE differ from a serial column's, a
//! sequence another column's default uses, a nullable column. `OWNED BY
//! NONE` of a sequence (never owned here) changes nothing.

use crate::error::{ErrorKind, Result, SqlError};
use crate::QueryOutput;
use walden_engine::{
    Alteration, DataType, DefaultExpr, EngineError, Identity, SeqType, Transaction,
};

pub(crate) fn alter_sequence_owned_by(
    tx: &mut Transaction,
    if_exists: bool,
    sequence: &str,
    owner: Option<&(String, String)>,
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
        return Err(SqlError::new(
            ErrorKind::UndefinedTable,
            format!("relation \"{sequence}\" does not exist"),
        ));
    };
    let Some((table, column)) = owner else {
        return Ok(out);
    };
    let t = db.table_as(Some(tx.id()), table)?;
    let Some(i) = t.def.column_index(column) else {
        return Err(SqlError::new(
            ErrorKind::UndefinedColumn,
            format!(
                "column \"{column}\" of relation \"{}\" does not exist",
                t.name()
            ),
        ));
    };
    let col = &t.def.columns[i];
    let refuse = |why: String| {
        Err(SqlError::unsupported(format!(
            "ALTER SEQUENCE {} OWNED BY {}.{} ({why})",
            seq.name,
            t.name(),
            col.name
        )))
    };
    let counter = format!("{}_{}_seq", t.name(), col.name);
    if !seq.name.eq_ignore_ascii_case(&counter) {
        return refuse(format!(
            "a column's own counter is named {counter}; sequences are not tied to columns"
        ));
    }
    let ty = match col.data_type {
        DataType::SmallInt => SeqType::SmallInt,
        DataType::Int => SeqType::Int,
        DataType::BigInt => SeqType::BigInt,
        _ => return refuse("the column is not smallint, integer or bigint".into()),
    };
    if col.identity.is_some() || t.def.identity_column().is_some() {
        return refuse("the table already has a column with its own counter".into());
    }
    if col.nullable {
        return refuse("the column is nullable; a column with its own counter is NOT NULL".into());
    }
    match &col.default {
        None => {}
        Some(DefaultExpr::NextVal(n)) if n.eq_ignore_ascii_case(&seq.name) => {}
        Some(_) => return refuse("the column has another default".into()),
    }
    // The bounds PostgreSQL gives a serial column's sequence.
    let (tmin, tmax) = ty.range();
    let (min, max) = if seq.increment > 0 {
        (1, tmax)
    } else {
        (tmin, -1)
    };
    if seq.data_type != ty || seq.min != min || seq.max != max || seq.cycle {
        return refuse(
            "its type, bounds or CYCLE differ from those of the column's own counter".into(),
        );
    }
    if db.sequence_next(&seq.name) != Some(seq.start) {
        return refuse("it has handed out values".into());
    }
    let used_elsewhere = db.tables_as(Some(tx.id())).iter().any(|o| {
        o.def.columns.iter().enumerate().any(|(k, c)| {
            (o.id() != t.id() || k != i)
                && matches!(&c.default, Some(DefaultExpr::NextVal(n)) if n.eq_ignore_ascii_case(&seq.name))
        })
    });
    if used_elsewhere {
        return refuse("another column's default uses it".into());
    }
    tx.fold_writes(t.name())?;
    let (start, increment) = (seq.start, seq.increment);
    let tx: &Transaction = tx;
    tx.alter_table(t.name(), |cur| {
        let mut def = cur.def.clone();
        let c = &mut def.columns[i];
        c.default = None;
        // The engine starts a new counter at its seed.
        c.identity = Some(Identity {
            seed: start,
            increment,
            generated: None,
            tsql: false,
        });
        Ok::<_, EngineError>(Some(Alteration { def, rewrite: None }))
    })?;
    tx.drop_sequence(&seq.name)?;
    Ok(out)
}
