//! FOREIGN KEY constraints: declared in CREATE TABLE (column `REFERENCES`
//! and table `FOREIGN KEY`) or added with ALTER TABLE, checked as
//! PostgreSQL checks them (the referenced columns carry a primary key or
//! unique constraint, the types compare), named as PostgreSQL names them,
//! and stored in the referencing table's definition. Enforcement is in
//! `foreign_keys/enforce.rs`; the catalogs' view of them in
//! `foreign_keys/catalog.rs`.

use crate::error::{ErrorFields, ErrorKind, Result, SqlError};
use crate::expr::fold_ident;
use crate::query::object_last;
use crate::QueryOutput;
use sqlparser::ast;
use std::sync::Arc;
use walden_engine::{
    ColumnDef, DataType, Database, EngineError, FkAction, ForeignKeyDef, Table, TableDef,
    Transaction,
};

/// A foreign key as written, before its names are resolved.
pub(crate) struct Declared {
    name: Option<String>,
    columns: Vec<String>,
    ref_table: String,
    ref_columns: Vec<String>,
    on_update: FkAction,
    on_delete: FkAction,
    match_full: bool,
    deferrable: bool,
    initially_deferred: bool,
}

fn action(a: &Option<ast::ReferentialAction>) -> FkAction {
    use ast::ReferentialAction as R;
    match a {
        None | Some(R::NoAction) => FkAction::NoAction,
        Some(R::Restrict) => FkAction::Restrict,
        Some(R::Cascade) => FkAction::Cascade,
        Some(R::SetNull) => FkAction::SetNull,
        Some(R::SetDefault) => FkAction::SetDefault,
    }
}

/// Reads a parsed FOREIGN KEY (or a column's REFERENCES, `column` set),
/// refusing what Walden does not do.
pub(crate) fn declared(
    outer_name: Option<&ast::Ident>,
    fk: &ast::ForeignKeyConstraint,
    column: Option<&ast::Ident>,
) -> Result<Declared> {
    if fk.index_name.is_some() {
        return Err(SqlError::unsupported("an index name in FOREIGN KEY"));
    }
    let (deferrable, initially_deferred) = deferrability(fk.characteristics.as_ref())?;
    if fk
        .characteristics
        .as_ref()
        .is_some_and(|c| c.enforced == Some(false))
    {
        return Err(SqlError::unsupported("FOREIGN KEY ... NOT ENFORCED"));
    }
    let match_full = match fk.match_kind {
        None | Some(ast::ConstraintReferenceMatchKind::Simple) => false,
        Some(ast::ConstraintReferenceMatchKind::Full) => true,
        Some(ast::ConstraintReferenceMatchKind::Partial) => {
            return Err(SqlError::new(
                ErrorKind::FeatureNotSupported,
                "MATCH PARTIAL not yet implemented",
            ))
        }
    };
    let columns: Vec<String> = match column {
        Some(c) => vec![fold_ident(c)],
        None => fk.columns.iter().map(fold_ident).collect(),
    };
    Ok(Declared {
        name: outer_name.or(fk.name.as_ref()).map(fold_ident),
        columns,
        ref_table: object_last(&fk.foreign_table),
        ref_columns: fk.referred_columns.iter().map(fold_ident).collect(),
        on_update: action(&fk.on_update),
        on_delete: action(&fk.on_delete),
        match_full,
        deferrable,
        initially_deferred,
    })
}

/// `[NOT] DEFERRABLE [INITIALLY DEFERRED | IMMEDIATE]` as PostgreSQL reads
/// it: INITIALLY DEFERRED alone implies DEFERRABLE, and with NOT
/// DEFERRABLE is an error. Returns (deferrable, initially deferred).
pub(crate) fn deferrability(c: Option<&ast::ConstraintCharacteristics>) -> Result<(bool, bool)> {
    let Some(c) = c else {
        return Ok((false, false));
    };
    let initially = c.initially == Some(ast::DeferrableInitial::Deferred);
    if initially && c.deferrable == Some(false) {
        return Err(SqlError::syntax(
            "constraint declared INITIALLY DEFERRED must be DEFERRABLE",
        ));
    }
    Ok((c.deferrable == Some(true) || initially, initially))
}

/// A PRIMARY KEY or UNIQUE constraint's characteristics: `NOT DEFERRABLE`
/// and `INITIALLY IMMEDIATE` are what Walden does; a deferrable one is
/// refused (its unique index checks every write at once).
pub(crate) fn refuse_deferrable_key(
    c: Option<&ast::ConstraintCharacteristics>,
    what: &str,
) -> Result<()> {
    if deferrability(c)?.0 {
        return Err(SqlError::unsupported(format!(
            "DEFERRABLE {what} constraints"
        )));
    }
    if c.is_some_and(|c| c.enforced == Some(false)) {
        return Err(SqlError::unsupported(format!("{what} ... NOT ENFORCED")));
    }
    Ok(())
}

fn invalid_fk(message: impl Into<String>) -> SqlError {
    SqlError::new(ErrorKind::InvalidForeignKey, message)
}

/// Types whose values compare as equal exactly when they are equal, so a
/// key found in one is found in the other.
fn type_class(t: &DataType) -> (u8, u8) {
    use DataType as T;
    // (family, class): a family shares PostgreSQL's cross-type equality,
    // a class also Walden's stored representation.
    match t {
        T::SmallInt | T::Int | T::BigInt | T::Oid => (1, 1),
        T::Real | T::Double => (1, 2),
        T::Decimal { .. } => (1, 3),
        T::Varchar(_) | T::Text | T::Name => (2, 1),
        T::Char(_) => (2, 2),
        T::Date => (3, 1),
        T::Timestamp => (3, 2),
        T::TimestampTz => (3, 3),
        T::Bool => (4, 0),
        T::Uuid => (5, 0),
        T::Bytes => (6, 0),
        T::Time => (7, 0),
        T::Interval => (8, 0),
        T::Json => (9, 0),
        T::Jsonb => (10, 0),
        // Enum types: one family (the key values carry positions, which
        // only a key of the same type can match).
        T::Enum(_) => (11, 0),
        T::Array(e) => {
            let (f, c) = type_class(e);
            (100 + f, c)
        }
        // Catalog-only types (no table column has them).
        T::Int2Vector => (12, 0),
        T::PgChar => (14, 0),
        T::Reg(_) => (15, 0),
        T::OidVector => (13, 0),
        T::Record(_) => (14, 0),
    }
}

/// The referencing table as far as a declaration needs it: its name and
/// columns, and its own primary key and unique indexes (a foreign key may
/// reference the table it is declared on).
pub(crate) struct Referencing<'a> {
    pub def: &'a TableDef,
}

/// Where a foreign key's referenced columns live: the referenced table's
/// definition (`None`: the table being created) and its id (0: itself).
fn referenced_def<'a>(
    db: &Database,
    me: &'a TableDef,
    name: &str,
    holder: &'a mut Option<Arc<Table>>,
) -> Result<(&'a TableDef, u32)> {
    if name.eq_ignore_ascii_case(&me.name) {
        return Ok((me, me.id));
    }
    let t = db.table(name)?;
    let id = t.id();
    *holder = Some(t);
    Ok((&holder.as_ref().expect("just set").def, id))
}

/// Resolves a declared foreign key of table `me` (during CREATE TABLE, `me`
/// is the new definition with id 0). `taken`: constraint names in use in
/// the schema, which a generated name avoids.
pub(crate) fn resolve(
    db: &Database,
    me: Referencing<'_>,
    d: Declared,
    taken: &[String],
) -> Result<ForeignKeyDef> {
    let me = me.def;
    let mut holder = None;
    let (r, ref_id) = referenced_def(db, me, &d.ref_table, &mut holder)?;
    // Rows written through a partitioned table reach its partitions
    // without their foreign keys' checks, and a key referencing one would
    // look for rows in its parent: both refused.
    let partitioned = |t: &TableDef| t.partition_key.is_some() || t.partition_of.is_some();
    if partitioned(me) || partitioned(r) {
        return Err(SqlError::unsupported(
            "FOREIGN KEY constraints on or referencing partitioned tables and partitions",
        ));
    }
    let columns = positions(&d.columns, &me.columns, false)?;
    let ref_columns = if d.ref_columns.is_empty() {
        if r.primary_key.is_empty() {
            return Err(SqlError::new(
                ErrorKind::UndefinedObject,
                format!(
                    "there is no primary key for referenced table \"{}\"",
                    r.name
                ),
            ));
        }
        r.primary_key.clone()
    } else {
        positions(&d.ref_columns, &r.columns, true)?
    };
    if columns.len() != ref_columns.len() {
        return Err(invalid_fk(
            "number of referencing and referenced columns for foreign key disagree",
        ));
    }
    if !is_unique_key(r, &ref_columns) {
        return Err(invalid_fk(format!(
            "there is no unique constraint matching given keys for referenced table \"{}\"",
            r.name
        )));
    }
    let name = match d.name {
        Some(n) => {
            if me.foreign_keys.iter().any(|f| f.name == n) || me.checks.iter().any(|c| c.name == n)
            {
                return Err(SqlError::new(
                    ErrorKind::DuplicateObject,
                    format!(
                        "constraint \"{n}\" for relation \"{}\" already exists",
                        me.name
                    ),
                ));
            }
            n
        }
        None => {
            // PostgreSQL: "<table>_<col>[_<col>...]_fkey", a number appended
            // until no constraint of the schema has it.
            let cols: Vec<&str> = columns
                .iter()
                .map(|&c| me.columns[c].name.as_str())
                .collect();
            let base = format!("{}_{}_fkey", me.name, cols.join("_"));
            let free = |n: &str| {
                !taken.iter().any(|t| t == n) && !me.foreign_keys.iter().any(|f| f.name == n)
            };
            let mut name = base.clone();
            let mut pass = 0;
            while !free(&name) {
                pass += 1;
                name = format!("{base}{pass}");
            }
            name
        }
    };
    for (&c, &rc) in columns.iter().zip(&ref_columns) {
        let (a, b) = (&me.columns[c].data_type, &r.columns[rc].data_type);
        let (fa, ca) = type_class(a);
        let (fb, cb) = type_class(b);
        if fa != fb {
            return Err(SqlError::new(
                ErrorKind::DatatypeMismatch,
                format!("foreign key constraint \"{name}\" cannot be implemented"),
            )
            .with_fields(ErrorFields {
                detail: Some(format!(
                    "Key columns \"{}\" and \"{}\" are of incompatible types: {} and {}.",
                    me.columns[c].name,
                    r.columns[rc].name,
                    a.sql_name(),
                    b.sql_name()
                )),
                ..Default::default()
            }));
        }
        if ca != cb {
            return Err(SqlError::unsupported(format!(
                "a foreign key between columns of types {} and {}",
                a.sql_name(),
                b.sql_name()
            )));
        }
    }
    Ok(ForeignKeyDef {
        name,
        columns,
        ref_table: ref_id,
        ref_columns,
        on_update: d.on_update,
        on_delete: d.on_delete,
        match_full: d.match_full,
        deferrable: d.deferrable,
        initially_deferred: d.initially_deferred,
    })
}

fn positions(names: &[String], columns: &[ColumnDef], referenced: bool) -> Result<Vec<usize>> {
    let mut out: Vec<usize> = Vec::with_capacity(names.len());
    for n in names {
        let i = columns
            .iter()
            .position(|c| c.name.eq_ignore_ascii_case(n))
            .ok_or_else(|| {
                SqlError::new(
                    ErrorKind::UndefinedColumn,
                    format!("column \"{n}\" referenced in foreign key constraint does not exist"),
                )
            })?;
        if out.contains(&i) {
            return Err(invalid_fk(if referenced {
                "foreign key referenced-columns list must not contain duplicates"
            } else {
                "foreign key referencing-columns list must not contain duplicates"
            }));
        }
        out.push(i);
    }
    Ok(out)
}

/// Whether the columns (as a set) are the table's primary key or the
/// columns of one of its unique indexes.
pub(crate) fn is_unique_key(r: &TableDef, cols: &[usize]) -> bool {
    let mut want = cols.to_vec();
    want.sort_unstable();
    let same = |c: &[usize]| {
        let mut c = c.to_vec();
        c.sort_unstable();
        c == want
    };
    (!r.primary_key.is_empty() && same(&r.primary_key))
        || r.indexes.iter().any(|ix| ix.unique && same(&ix.columns))
}

/// Every constraint name in use in the database: CHECKs, primary keys and
/// foreign keys.
pub(crate) fn names_in_use(db: &Database) -> Vec<String> {
    let mut out = crate::catalog::constraints::names_in_use(db);
    for t in db.tables() {
        out.extend(t.def.foreign_keys.iter().map(|f| f.name.clone()));
    }
    out
}

/// Resolves the foreign keys declared in a CREATE TABLE into `def` (which
/// has its columns, primary key and unique indexes).
pub(crate) fn declare(db: &Database, def: &mut TableDef, declared: Vec<Declared>) -> Result<()> {
    if declared.is_empty() {
        return Ok(());
    }
    let mut taken = names_in_use(db);
    for d in declared {
        let fk = resolve(db, Referencing { def }, d, &taken)?;
        taken.push(fk.name.clone());
        def.foreign_keys.push(fk);
    }
    Ok(())
}

/// `ALTER TABLE t ADD [CONSTRAINT name] FOREIGN KEY ...`: resolved, then
/// validated against the committed rows and logged by the engine.
pub fn alter_add(
    db: &Arc<Database>,
    tx: &mut Transaction,
    table: &str,
    outer_name: Option<&ast::Ident>,
    fk: &ast::ForeignKeyConstraint,
) -> Result<QueryOutput> {
    let t = db.table(table)?;
    let d = declared(outer_name, fk, None)?;
    let taken = names_in_use(db);
    let fk = resolve(db, Referencing { def: &t.def }, d, &taken)?;
    tx.add_foreign_key(t.name(), fk).map_err(map_engine)?;
    Ok(QueryOutput::command("ALTER TABLE"))
}

/// `ALTER TABLE t DROP CONSTRAINT [IF EXISTS] name` when `name` is a
/// foreign key of `t`; `None` when it is not one (another kind of
/// constraint, for the ALTER TABLE dispatcher to handle).
pub fn alter_drop(
    db: &Arc<Database>,
    tx: &mut Transaction,
    table: &str,
    name: &str,
) -> Result<Option<QueryOutput>> {
    let t = db.table(table)?;
    if !t.def.foreign_keys.iter().any(|f| f.name == name) {
        return Ok(None);
    }
    tx.drop_foreign_key(t.name(), name)?;
    Ok(Some(QueryOutput::command("ALTER TABLE")))
}

/// Whether an ALTER TABLE is one this module runs by itself: a single
/// ADD of a FOREIGN KEY, or a single DROP CONSTRAINT of a foreign key.
pub fn handles(db: &Database, at: &ast::AlterTable) -> bool {
    let [op] = at.operations.as_slice() else {
        return false;
    };
    match op {
        ast::AlterTableOperation::AddConstraint { constraint, .. } => {
            matches!(constraint, ast::TableConstraint::ForeignKey(_))
        }
        ast::AlterTableOperation::DropConstraint { name, .. } => {
            db.table(&object_last(&at.name)).is_ok_and(|t| {
                t.def
                    .foreign_keys
                    .iter()
                    .any(|f| f.name == fold_ident(name))
            })
        }
        _ => false,
    }
}

/// Runs an ALTER TABLE that [`handles`] said is this module's.
pub fn alter_table(
    db: &Arc<Database>,
    tx: &mut Transaction,
    at: &ast::AlterTable,
) -> Result<QueryOutput> {
    let table = object_last(&at.name);
    if let Ok(t) = db.table_as(Some(tx.id()), &table) {
        crate::dml::deferred::refuse_if_pending(tx, t.id(), t.name(), "ALTER TABLE")?;
    }
    match at.operations.as_slice() {
        [ast::AlterTableOperation::AddConstraint {
            constraint: ast::TableConstraint::ForeignKey(fk),
            not_valid,
        }] => {
            if *not_valid {
                return Err(SqlError::unsupported("NOT VALID foreign keys"));
            }
            alter_add(db, tx, &table, None, fk)
        }
        // Nothing depends on a foreign key: CASCADE drops the same.
        [ast::AlterTableOperation::DropConstraint { name, .. }] => {
            alter_drop(db, tx, &table, &fold_ident(name))?.ok_or_else(|| {
                SqlError::new(
                    ErrorKind::UndefinedObject,
                    format!(
                        "constraint \"{}\" of relation \"{table}\" does not exist",
                        fold_ident(name)
                    ),
                )
            })
        }
        _ => Err(SqlError::internal(
            "ALTER TABLE is not a foreign key change",
        )),
    }
}

/// `ALTER TABLE t ALTER CONSTRAINT c [NOT] DEFERRABLE [INITIALLY ...]`: a
/// foreign key's deferrability changes (logged as an ALTER TABLE that
/// keeps the rows).
pub fn alter_constraint(
    tx: &mut Transaction,
    a: &crate::front::alter_table::AlterConstraint,
) -> Result<QueryOutput> {
    let db = tx.database().clone();
    let mut out = QueryOutput::command("ALTER TABLE");
    let Ok(t) = db.table_as(Some(tx.id()), &a.table) else {
        if a.if_exists {
            out.notices
                .push(format!("relation \"{}\" does not exist, skipping", a.table));
            return Ok(out);
        }
        return Err(EngineError::UnknownTable(a.table.clone()).into());
    };
    if !t.def.foreign_keys.iter().any(|f| f.name == a.name) {
        let d = &t.def;
        let other = (!d.primary_key.is_empty() && d.pkey_name() == a.name)
            || d.checks.iter().any(|c| c.name == a.name)
            || d.indexes.iter().any(|i| i.constraint && i.name == a.name);
        return Err(if other {
            SqlError::new(
                ErrorKind::WrongObjectType,
                format!(
                    "constraint \"{}\" of relation \"{}\" is not a foreign key constraint",
                    a.name, d.name
                ),
            )
        } else {
            SqlError::new(
                ErrorKind::UndefinedObject,
                format!(
                    "constraint \"{}\" of relation \"{}\" does not exist",
                    a.name, d.name
                ),
            )
        });
    }
    crate::dml::deferred::refuse_if_pending(tx, t.id(), t.name(), "ALTER TABLE")?;
    tx.fold_writes(&a.table)?;
    let tx: &Transaction = tx;
    tx.alter_table(&a.table, |t| {
        let mut def = t.def.clone();
        for fk in def.foreign_keys.iter_mut().filter(|f| f.name == a.name) {
            fk.deferrable = a.deferrable;
            fk.initially_deferred = a.initially_deferred;
        }
        Ok::<_, SqlError>(Some(walden_engine::Alteration { def, rewrite: None }))
    })?;
    Ok(out)
}

/// DROP TABLE ... [CASCADE]: the engine refuses a table other tables'
/// foreign keys reference unless CASCADE, which drops those keys (each
/// named in a notice, as PostgreSQL does).
pub fn drop_table(
    tx: &mut Transaction,
    name: &str,
    cascade: bool,
    out: &mut QueryOutput,
) -> std::result::Result<(), EngineError> {
    for (constraint, table) in tx.drop_table_cascade(name, cascade)? {
        out.notices.push(format!(
            "drop cascades to constraint {constraint} on table {table}"
        ));
    }
    Ok(())
}

/// TRUNCATE: a table referenced by a foreign key of a table not truncated
/// with it is refused (0A000, as PostgreSQL); CASCADE truncates those too.
/// Returns the tables to truncate, in order.
pub fn truncate_targets(
    db: &Database,
    names: Vec<String>,
    cascade: bool,
    out: &mut QueryOutput,
) -> Result<Vec<String>> {
    let mut list: Vec<Arc<Table>> = Vec::new();
    for n in &names {
        let t = db.table(n)?;
        if !list.iter().any(|x| x.id() == t.id()) {
            list.push(t);
        }
    }
    let mut i = 0;
    while i < list.len() {
        let id = list[i].id();
        for (child, _) in db.referencing(id) {
            if list.iter().any(|x| x.id() == child.id()) {
                continue;
            }
            if !cascade {
                return Err(SqlError::new(
                    ErrorKind::FeatureNotSupported,
                    "cannot truncate a table referenced in a foreign key constraint",
                )
                .with_fields(ErrorFields {
                    detail: Some(format!(
                        "Table \"{}\" references \"{}\".",
                        child.name(),
                        list[i].name()
                    )),
                    ..Default::default()
                }));
            }
            out.notices
                .push(format!("truncate cascades to table \"{}\"", child.name()));
            list.push(child);
        }
        i += 1;
    }
    Ok(list.iter().map(|t| t.name().to_string()).collect())
}

/// The engine's foreign key errors with PostgreSQL's fields.
pub(crate) fn map_engine(e: EngineError) -> SqlError {
    match e {
        EngineError::InvalidDefinition(m) if m.contains("already exists") => {
            SqlError::new(ErrorKind::DuplicateObject, m)
        }
        other => other.into(),
    }
}

/// `pg_get_constraintdef` of a foreign key.
pub(crate) fn constraint_def(me: &TableDef, r: &TableDef, fk: &ForeignKeyDef) -> String {
    let names = |d: &TableDef, cols: &[usize]| -> String {
        cols.iter()
            .map(|&c| crate::types::quote_ident(&d.columns[c].name))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut s = format!(
        "FOREIGN KEY ({}) REFERENCES {}({})",
        names(me, &fk.columns),
        crate::types::quote_ident(&r.name),
        names(r, &fk.ref_columns)
    );
    if fk.match_full {
        s.push_str(" MATCH FULL");
    }
    if fk.on_update != FkAction::NoAction {
        s.push_str(" ON UPDATE ");
        s.push_str(fk.on_update.sql());
    }
    if fk.on_delete != FkAction::NoAction {
        s.push_str(" ON DELETE ");
        s.push_str(fk.on_delete.sql());
    }
    if fk.deferrable {
        s.push_str(" DEFERRABLE");
    }
    if fk.initially_deferred {
        s.push_str(" INITIALLY DEFERRED");
    }
    s
}
