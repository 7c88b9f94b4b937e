//! CREATE/DROP TABLE, TRUNCATE, CREATE/DROP SEQUENCE: system transactions of
//! the engine (always fully durable).

use crate::catalog::constraints::{self, Declared};
use crate::catalog::index::UniqueSpec;
use crate::error::{ErrorKind, Result, SqlError};
use crate::query::{object_last, Planner};
use crate::QueryOutput;
use sqlparser::ast::{self, ColumnOption, TableConstraint};
use std::sync::Arc;
use walden_engine::{
    ColumnDef, DataType, Database, DefaultExpr, EngineError, TableDef, Transaction, Value,
};

/// A column's DEFAULT: the kinds the engine fills itself, else the
/// expression's text (compiled and evaluated per row by the SQL layer;
/// `check_defaults` compiles it once when it is declared).
pub(crate) fn default_expr(e: &ast::Expr) -> Result<DefaultExpr> {
    // PostgreSQL's DEFAULT takes a restricted expression: IN, LIKE, IS,
    // BETWEEN, AND, OR and NOT need parentheses there.
    use ast::Expr as A;
    let bare = matches!(
        e,
        A::InList { .. }
            | A::InSubquery { .. }
            | A::Like { .. }
            | A::ILike { .. }
            | A::IsNull(_)
            | A::IsNotNull(_)
            | A::IsTrue(_)
            | A::IsFalse(_)
            | A::Between { .. }
            | A::BinaryOp {
                op: ast::BinaryOperator::And | ast::BinaryOperator::Or,
                ..
            }
            | A::UnaryOp {
                op: ast::UnaryOperator::Not,
                ..
            }
    );
    if bare {
        return Err(SqlError::syntax(format!(
            "syntax error in DEFAULT {e}: the expression needs parentheses"
        )));
    }
    Ok(simple_default(e).unwrap_or_else(|| DefaultExpr::Expr(e.to_string())))
}

fn simple_default(e: &ast::Expr) -> Option<DefaultExpr> {
    use ast::Expr as A;
    Some(match e {
        A::Function(f) => {
            let name = object_last(&f.name).to_ascii_lowercase();
            match name.as_str() {
                "now"
                | "getdate"
                | "sysdatetime"
                | "getutcdate"
                | "sysutcdatetime"
                | "current_timestamp"
                | "localtimestamp"
                | "statement_timestamp"
                | "transaction_timestamp"
                | "clock_timestamp" => DefaultExpr::Now,
                "current_date" => DefaultExpr::Today,
                "newid" | "gen_random_uuid" | "uuid_generate_v4" => DefaultExpr::NewUuid,
                "nextval" => {
                    let arg = match &f.args {
                        ast::FunctionArguments::List(l) => l.args.first().map(|a| a.to_string()),
                        _ => None,
                    }?;
                    if !arg.starts_with('\'') {
                        return None;
                    }
                    let name = arg
                        .split("::")
                        .next()
                        .unwrap_or(&arg)
                        .trim()
                        .trim_matches('\'')
                        .to_string();
                    DefaultExpr::NextVal(name.rsplit('.').next().unwrap_or(&name).to_string())
                }
                _ => return None,
            }
        }
        A::Identifier(id) if id.quote_style.is_none() => {
            match id.value.to_ascii_lowercase().as_str() {
                "current_timestamp" | "localtimestamp" => DefaultExpr::Now,
                "current_date" => DefaultExpr::Today,
                _ => return None,
            }
        }
        A::Nested(inner) => simple_default(inner)?,
        A::Cast { expr, .. } => simple_default(expr)?,
        A::Value(v) => DefaultExpr::Value(literal(&v.value).ok()?),
        A::UnaryOp {
            op: ast::UnaryOperator::Minus,
            expr,
        } => match simple_default(expr)? {
            DefaultExpr::Value(Value::Int(i)) => DefaultExpr::Value(Value::Int(i.checked_neg()?)),
            DefaultExpr::Value(Value::Decimal(d)) => DefaultExpr::Value(Value::Decimal(-d)),
            DefaultExpr::Value(Value::Float(f)) => DefaultExpr::Value(Value::Float(-f)),
            _ => return None,
        },
        _ => return None,
    })
}

/// Compiles the expression DEFAULTs of these columns, so a bad one fails
/// where it is declared (as PostgreSQL's do), not at the first insert.
pub(crate) fn check_defaults<'a>(
    p: &mut Planner<'_>,
    columns: impl IntoIterator<Item = &'a ColumnDef>,
) -> Result<()> {
    for c in columns {
        if let Some(DefaultExpr::Expr(sql)) = &c.default {
            crate::dml::defaults::compile_text(p, sql)?;
        }
    }
    Ok(())
}

fn literal(v: &ast::Value) -> Result<Value> {
    Ok(match v {
        ast::Value::Number(n, _) => match n.parse::<i64>() {
            Ok(i) => Value::Int(i),
            Err(_) => Value::Decimal(
                walden_engine::types::parse_numeric(n)?
                    .ok_or_else(|| SqlError::syntax(format!("bad number {n}")))?,
            ),
        },
        ast::Value::SingleQuotedString(s) => Value::text(s),
        ast::Value::Boolean(b) => Value::Bool(*b),
        ast::Value::Null => Value::Null,
        other => return Err(SqlError::unsupported(format!("DEFAULT {other}"))),
    })
}

fn const_i64(e: &ast::Expr) -> Result<i64> {
    match e {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::Number(n, _) => n
                .parse()
                .map_err(|_| SqlError::syntax(format!("bad number {n}"))),
            _ => Err(SqlError::syntax(
                "IDENTITY needs integer seed and increment",
            )),
        },
        ast::Expr::UnaryOp {
            op: ast::UnaryOperator::Minus,
            expr,
        } => Ok(-const_i64(expr)?),
        _ => Err(SqlError::syntax(
            "IDENTITY needs integer seed and increment",
        )),
    }
}

pub fn create_table(
    db: &Arc<Database>,
    system: &dyn crate::functions::SystemCatalog,
    tx: &mut Transaction,
    ct: &ast::CreateTable,
) -> Result<QueryOutput> {
    crate::catalog::create_table_clauses::refuse_unhonoured(ct)?;
    if ct.query.is_some() {
        return Err(SqlError::internal(
            "CREATE TABLE ... AS goes to create_as.rs",
        ));
    }
    let name = object_last(&ct.name);
    if ct.if_not_exists && db.table(&name).is_ok() {
        let mut out = QueryOutput::command("CREATE TABLE");
        out.notices
            .push(format!("relation \"{name}\" already exists, skipping"));
        return Ok(out);
    }
    table_def(db, system, tx, ct)?.create(db, tx)?;
    Ok(QueryOutput::command("CREATE TABLE"))
}

/// A table `CREATE TABLE` is to make, with the sequences of its serial
/// columns (made once the table exists, owned by their columns).
pub(crate) struct NewTable {
    pub def: TableDef,
    /// Column position and sequence name of each serial column.
    serials: Vec<(usize, String)>,
}

impl NewTable {
    /// A table without serial columns.
    pub(crate) fn plain(def: TableDef) -> NewTable {
        NewTable {
            def,
            serials: Vec::new(),
        }
    }

    pub(crate) fn create(self, db: &Arc<Database>, tx: &mut Transaction) -> Result<()> {
        let NewTable { def, serials } = self;
        let types: Vec<DataType> = serials
            .iter()
            .map(|(i, _)| def.columns[*i].data_type.clone())
            .collect();
        let table_name = def.name.clone();
        tx.create_table(def)?;
        if !serials.is_empty() {
            let id = db.table_as(Some(tx.id()), &table_name)?.id();
            for ((col, seq), ty) in serials.into_iter().zip(types) {
                create_owned_sequence(tx, &seq, &ty, id, col)?;
            }
        }
        Ok(())
    }
}

/// The definition `CREATE TABLE` makes from its columns and constraints
/// (its other clauses are the caller's).
pub(crate) fn table_def(
    db: &Arc<Database>,
    system: &dyn crate::functions::SystemCatalog,
    tx: &mut Transaction,
    ct: &ast::CreateTable,
) -> Result<NewTable> {
    let name = object_last(&ct.name);
    let mut columns = Vec::new();
    let mut pk: Vec<String> = Vec::new();
    let mut uniques: Vec<UniqueSpec> = Vec::new();
    let mut plain = Vec::new();
    let mut checks: Vec<Declared> = Vec::new();
    let mut fks: Vec<crate::catalog::foreign_keys::Declared> = Vec::new();
    let mut serials: Vec<(usize, String)> = Vec::new();
    for c in &ct.columns {
        let (plain_type, precision) = crate::types::names::split_time_precision(&c.data_type)?;
        let (ty, serial) = crate::types::names::column_type_in(db, Some(tx.id()), &plain_type)?;
        let mut col = ColumnDef::new(crate::expr::fold_ident(&c.name), ty);
        col.time_precision = precision;
        if serial {
            // Named after the table as PostgreSQL folds it (an unquoted
            // `serialTest` makes `serialtest_c_seq`).
            let folded = ct
                .name
                .0
                .last()
                .and_then(|p| p.as_ident())
                .map(crate::expr::fold_ident)
                .unwrap_or_else(|| name.clone());
            let seq = serial_sequence_name(db, tx, &folded, &col.name, &serials);
            col.nullable = false;
            col.default = Some(DefaultExpr::NextVal(seq.clone()));
            serials.push((columns.len(), seq));
        }
        for o in &c.options {
            match &o.option {
                ColumnOption::NotNull => col.nullable = false,
                ColumnOption::Default(_) if serial => {
                    return Err(SqlError::syntax(format!(
                        "multiple default values specified for column \"{}\" of table \"{name}\"",
                        col.name
                    )))
                }
                ColumnOption::Null => col.nullable = true,
                ColumnOption::Default(e) => col.default = Some(default_expr(e)?),
                ColumnOption::PrimaryKey(p) => {
                    crate::catalog::foreign_keys::refuse_deferrable_key(
                        p.characteristics.as_ref(),
                        "PRIMARY KEY",
                    )?;
                    pk.push(crate::expr::fold_ident(&c.name));
                    col.nullable = false;
                }
                ColumnOption::Unique(u) => uniques.push(UniqueSpec::of(u, Some(&c.name))?),
                ColumnOption::Identity(kind) => {
                    // T-SQL's IDENTITY (not MySQL's AUTO_INCREMENT) is
                    // skipped by an INSERT without a column list.
                    let (prop, tsql) = match kind {
                        ast::IdentityPropertyKind::Identity(p) => (p, true),
                        ast::IdentityPropertyKind::Autoincrement(p) => (p, false),
                    };
                    let (seed, inc) = match &prop.parameters {
                        Some(ast::IdentityPropertyFormatKind::FunctionCall(p))
                        | Some(ast::IdentityPropertyFormatKind::StartAndIncrement(p)) => {
                            (const_i64(&p.seed)?, const_i64(&p.increment)?)
                        }
                        None => (1, 1),
                    };
                    col = col.identity(seed, inc);
                    if let Some(i) = col.identity.as_mut() {
                        i.tsql = tsql;
                    }
                }
                ColumnOption::Generated {
                    generated_as: ast::GeneratedAs::ExpStored,
                    generation_expr: Some(e),
                    generated_keyword: true,
                    ..
                } => col.generated = Some(crate::dml::checks::unnest(e).to_string()),
                ColumnOption::Generated {
                    generated_as,
                    sequence_options,
                    generation_expr,
                    ..
                } => {
                    col = generated_identity(col, generated_as, sequence_options, generation_expr)?
                }
                ColumnOption::DialectSpecific(toks) => {
                    let s: String = toks
                        .iter()
                        .map(|t| t.to_string())
                        .collect::<Vec<_>>()
                        .join(" ");
                    if s.to_ascii_uppercase().contains("AUTO_INCREMENT")
                        || s.to_ascii_uppercase().contains("AUTOINCREMENT")
                    {
                        col = col.identity(1, 1);
                    } else {
                        return Err(SqlError::unsupported(format!("column option {s}")));
                    }
                }
                ColumnOption::Check(ck) => checks.push(declared_check(o.name.as_ref(), ck)?),
                ColumnOption::ForeignKey(fk) => fks.push(crate::catalog::foreign_keys::declared(
                    o.name.as_ref(),
                    fk,
                    Some(&c.name),
                )?),
                ColumnOption::Collation(n) => {
                    let c = crate::types::collation::collation_named(n)?;
                    if !crate::types::collation::collatable(&col.data_type) {
                        return Err(crate::types::collation::not_collatable(&col.data_type));
                    }
                    col.collation = c;
                }
                ColumnOption::Comment(_) => {}
                other => return Err(SqlError::unsupported(format!("column option {other}"))),
            }
        }
        columns.push(col);
    }
    for c in &ct.constraints {
        match c {
            TableConstraint::PrimaryKey(p) => {
                crate::catalog::foreign_keys::refuse_deferrable_key(
                    p.characteristics.as_ref(),
                    "PRIMARY KEY",
                )?;
                if !pk.is_empty() {
                    return Err(SqlError::new(
                        ErrorKind::InvalidParameter,
                        format!("multiple primary keys for table \"{name}\" are not allowed"),
                    ));
                }
                for ic in &p.columns {
                    pk.push(ic.column.expr.to_string().trim_matches('"').to_string());
                }
            }
            TableConstraint::Check(ck) => checks.push(declared_check(None, ck)?),
            TableConstraint::ForeignKey(fk) => {
                fks.push(crate::catalog::foreign_keys::declared(None, fk, None)?)
            }
            TableConstraint::Unique(u) => uniques.push(UniqueSpec::of(u, None)?),
            TableConstraint::Index(ix) => plain.push(crate::catalog::index::inline_index(ix)?),
            other => return Err(SqlError::unsupported(format!("constraint {other}"))),
        }
    }
    if pk.len() > 1
        && ct
            .columns
            .iter()
            .filter(|c| {
                c.options
                    .iter()
                    .any(|o| matches!(o.option, ColumnOption::PrimaryKey(_)))
            })
            .count()
            > 1
    {
        return Err(SqlError::new(
            ErrorKind::InvalidParameter,
            format!("multiple primary keys for table \"{name}\" are not allowed"),
        ));
    }
    crate::catalog::index::check_key_width(pk.len())?;
    // Keys are stored in an order-preserving byte encoding that json and
    // jsonb do not have (and json has no equality at all).
    for k in &pk {
        if let Some(c) = columns.iter().find(|c| c.name == *k) {
            if matches!(c.data_type, DataType::Json | DataType::Jsonb) {
                return Err(SqlError::unsupported(format!(
                    "PRIMARY KEY on column \"{k}\" of type {}",
                    c.data_type.sql_name()
                )));
            }
        }
    }
    let pk_refs: Vec<&str> = pk.iter().map(|s| s.as_str()).collect();
    let mut p = Planner::new(db.clone(), system, &[]);
    check_defaults(&mut p, &columns)?;
    for c in columns.iter().filter(|c| c.generated.is_some()) {
        let other = if c.identity.is_some() {
            "identity"
        } else if c.default.is_some() {
            "default"
        } else {
            continue;
        };
        return Err(SqlError::syntax(format!(
            "both {other} and generation expression specified for column \"{}\" of table \"{name}\"",
            c.name
        )));
    }
    crate::dml::generated::check_declared(&mut p, &name, &columns)?;
    let checks = constraints::declare(
        &mut p,
        &name,
        &columns,
        checks,
        constraints::names_in_use(db),
    )?;
    let mut def = TableDef::new(name, columns, &pk_refs)
        .and_then(|d| d.with_checks(checks))
        .map_err(map_def_err)?;
    def.indexes = crate::catalog::index::table_indexes(db, &def, uniques, plain)?;
    crate::catalog::foreign_keys::declare(db, &mut def, fks)?;
    Ok(NewTable { def, serials })
}

/// The name PostgreSQL gives a serial column's sequence: `<table>_<column>_seq`,
/// or with a number after it when that is taken (`taken` holds the names
/// this statement already chose).
pub(crate) fn serial_sequence_name(
    db: &Arc<Database>,
    tx: &Transaction,
    table: &str,
    column: &str,
    taken: &[(usize, String)],
) -> String {
    let base = format!("{table}_{column}_seq");
    let seqs = db.sequences_as(Some(tx.id()));
    let free = |n: &str| {
        !seqs.iter().any(|s| s.name.eq_ignore_ascii_case(n))
            && db.table_as(Some(tx.id()), n).is_err()
            && !taken.iter().any(|(_, t)| t.eq_ignore_ascii_case(n))
    };
    if free(&base) {
        return base;
    }
    (1..)
        .map(|k| format!("{base}{k}"))
        .find(|n| free(n))
        .expect("a free name")
}

/// A serial column's sequence: of the column's type, owned by it (dropped
/// with it), as PostgreSQL makes one.
pub(crate) fn create_owned_sequence(
    tx: &Transaction,
    name: &str,
    ty: &DataType,
    table: u32,
    column: usize,
) -> Result<()> {
    let data_type = match ty {
        DataType::SmallInt => walden_engine::SeqType::SmallInt,
        DataType::Int => walden_engine::SeqType::Int,
        _ => walden_engine::SeqType::BigInt,
    };
    let opts = walden_engine::SequenceOptions {
        data_type,
        ..Default::default()
    };
    tx.create_sequence(name, &opts)?;
    tx.alter_sequence(name, |cur| {
        let mut def = cur.clone();
        def.owned_by = Some(walden_engine::SeqOwner { table, column });
        Ok((def, None))
    })?;
    Ok(())
}

pub(crate) fn declared_check(
    outer: Option<&ast::Ident>,
    ck: &ast::CheckConstraint,
) -> Result<Declared> {
    if ck.enforced == Some(false) {
        return Err(SqlError::unsupported("CHECK ... NOT ENFORCED"));
    }
    Ok(Declared {
        name: outer.or(ck.name.as_ref()).map(crate::expr::fold_ident),
        expr: (*ck.expr).clone(),
    })
}

pub(crate) fn map_def_err(e: EngineError) -> SqlError {
    match e {
        EngineError::InvalidDefinition(m)
            if m.contains("more than once") || m.contains("already exists") =>
        {
            SqlError::new(ErrorKind::DuplicateObject, m)
        }
        other => other.into(),
    }
}

pub fn drop(
    db: &Arc<Database>,
    tx: &mut Transaction,
    object_type: &ast::ObjectType,
    if_exists: bool,
    names: &[ast::ObjectName],
    cascade: bool,
) -> Result<QueryOutput> {
    if *object_type == ast::ObjectType::View {
        return crate::catalog::views::drop_views(tx, names, if_exists, cascade);
    }
    let mut out = QueryOutput::default();
    for n in names {
        let name = object_last(n);
        let r = match object_type {
            ast::ObjectType::Table => {
                if let Ok(t) = db.table_as(Some(tx.id()), &name) {
                    // A partitioned table's partitions go with it.
                    for part in crate::catalog::partitions::all_partitions(db, Some(tx.id()), &t) {
                        crate::catalog::views::drop_readers(
                            tx,
                            part.id(),
                            "table",
                            part.name(),
                            cascade,
                            &mut out,
                        )?;
                        crate::catalog::foreign_keys::drop_table(
                            tx,
                            part.name(),
                            cascade,
                            &mut out,
                        )?;
                    }
                    crate::catalog::views::drop_readers(
                        tx,
                        t.id(),
                        "table",
                        t.name(),
                        cascade,
                        &mut out,
                    )?;
                    crate::dml::triggers::forget_table(db, tx, &t)?;
                } else if db.user_view_as(Some(tx.id()), &name).is_some() {
                    return Err(SqlError::new(
                        ErrorKind::WrongObjectType,
                        format!("\"{name}\" is not a table"),
                    )
                    .with_fields(crate::error::ErrorFields {
                        hint: Some("Use DROP VIEW to remove a view.".into()),
                        ..Default::default()
                    }));
                }
                crate::catalog::foreign_keys::drop_table(tx, &name, cascade, &mut out)
            }
            ast::ObjectType::Sequence => {
                sequence_users(tx, &name, cascade, &mut out)?;
                tx.drop_sequence(&name)
            }
            ast::ObjectType::Type => {
                crate::catalog::enums::drop_type(tx, &name, if_exists, cascade, &mut out)?;
                continue;
            }
            ast::ObjectType::Index => {
                crate::catalog::index::drop_index(db, tx, &name, if_exists, &mut out)?;
                continue;
            }
            other => return Err(SqlError::unsupported(format!("DROP {other}"))),
        };
        match r {
            Ok(()) => {}
            Err(EngineError::UnknownTable(_) | EngineError::UnknownSequence(_)) if if_exists => {
                out.notices.push(format!(
                    "{} \"{name}\" does not exist, skipping",
                    object_type.to_string().to_lowercase()
                ));
            }
            Err(e) => return Err(e.into()),
        }
    }
    out.tag = format!("DROP {}", object_type.to_string().to_uppercase());
    Ok(out)
}

pub fn truncate(
    db: &Arc<Database>,
    tx: &mut Transaction,
    t: &ast::Truncate,
) -> Result<QueryOutput> {
    let mut out = QueryOutput::command("TRUNCATE TABLE");
    // A partitioned table's rows are its partitions'.
    let mut names = Vec::new();
    for target in &t.table_names {
        let name = object_last(&target.name);
        match db.table_as(Some(tx.id()), &name) {
            Ok(pt) if pt.def.partition_key.is_some() => {
                for part in crate::catalog::partitions::all_partitions(db, Some(tx.id()), &pt) {
                    if part.def.partition_key.is_none() {
                        names.push(part.name().to_string());
                    }
                }
            }
            _ => names.push(name),
        }
    }
    let cascade = matches!(t.cascade, Some(ast::CascadeOption::Cascade));
    for name in crate::catalog::foreign_keys::truncate_targets(db, names, cascade, &mut out)? {
        tx.truncate(&name)?;
    }
    Ok(out)
}

pub fn create_sequence(
    tx: &mut Transaction,
    n: &str,
    if_not_exists: bool,
    options: &walden_engine::SequenceOptions,
) -> Result<QueryOutput> {
    match tx.create_sequence(n, options) {
        Ok(()) => Ok(QueryOutput::command("CREATE SEQUENCE")),
        Err(EngineError::SequenceExists(_)) if if_not_exists => {
            let mut out = QueryOutput::command("CREATE SEQUENCE");
            out.notices
                .push(format!("relation \"{n}\" already exists, skipping"));
            Ok(out)
        }
        Err(e) => Err(e.into()),
    }
}

/// `LOCK [TABLE] name [, ...] [IN mode MODE] [NOWAIT]` (in a transaction
/// block; the locks are held to its end).
pub fn lock_table(tx: &mut Transaction, l: &ast::Lock) -> Result<QueryOutput> {
    use walden_engine::TableLockMode as M;
    let mode = match l.lock_mode {
        None | Some(ast::LockTableMode::AccessExclusive) => M::AccessExclusive,
        Some(ast::LockTableMode::AccessShare) => M::AccessShare,
        Some(ast::LockTableMode::RowShare) => M::RowShare,
        Some(ast::LockTableMode::RowExclusive) => M::RowExclusive,
        Some(ast::LockTableMode::ShareUpdateExclusive) => M::ShareUpdateExclusive,
        Some(ast::LockTableMode::Share) => M::Share,
        Some(ast::LockTableMode::ShareRowExclusive) => M::ShareRowExclusive,
        Some(ast::LockTableMode::Exclusive) => M::Exclusive,
    };
    for t in &l.tables {
        tx.lock_table_named(&crate::query::object_last(&t.name), mode, l.nowait)?;
    }
    Ok(QueryOutput::command("LOCK TABLE"))
}

/// `GENERATED { ALWAYS | BY DEFAULT } AS IDENTITY [(options)]`: an
/// identity column (ALWAYS refuses explicit values, see `dml/mod.rs`). What it
/// cannot honour is refused rather than taken for an identity: a generated
/// expression column, and sequence bounds or cycling (`NO MINVALUE`, `NO
/// MAXVALUE` and `NO CYCLE` are what it does). CACHE only tunes how
/// PostgreSQL hands out values.
pub(crate) fn generated_identity(
    col: ColumnDef,
    generated_as: &ast::GeneratedAs,
    options: &Option<Vec<ast::SequenceOptions>>,
    expr: &Option<ast::Expr>,
) -> Result<ColumnDef> {
    if expr.is_some() || matches!(generated_as, ast::GeneratedAs::ExpStored) {
        return Err(SqlError::unsupported(
            "generated columns (GENERATED ALWAYS AS (expression))",
        ));
    }
    let kind = match generated_as {
        ast::GeneratedAs::Always => walden_engine::IdentityGeneration::Always,
        _ => walden_engine::IdentityGeneration::ByDefault,
    };
    let (mut start, mut increment) = (None, 1);
    for o in options.iter().flatten() {
        match o {
            ast::SequenceOptions::StartWith(e, _) => start = Some(const_i64(e)?),
            ast::SequenceOptions::IncrementBy(e, _) => increment = const_i64(e)?,
            ast::SequenceOptions::Cache(_)
            | ast::SequenceOptions::MinValue(None)
            | ast::SequenceOptions::MaxValue(None)
            // sqlparser's `Cycle(true)` is `NO CYCLE`.
            | ast::SequenceOptions::Cycle(true) => {}
            other => {
                return Err(SqlError::unsupported(format!(
                    "identity column option {}",
                    other.to_string().trim()
                )))
            }
        }
    }
    if increment == 0 {
        return Err(SqlError::new(
            crate::error::ErrorKind::InvalidParameter,
            "INCREMENT must not be zero",
        ));
    }
    // A descending identity starts at its upper bound, -1, as PostgreSQL's.
    let start = start.unwrap_or(if increment > 0 { 1 } else { -1 });
    let mut col = col.identity(start, increment);
    if let Some(ident) = col.identity.as_mut() {
        ident.generated = Some(kind);
    }
    Ok(col)
}

/// Before `DROP SEQUENCE`: the column defaults that draw from it. Without
/// CASCADE they stop the drop (2BP01, as PostgreSQL's dependency on the
/// sequence does); with it they go (`drop cascades to default value ...`).
fn sequence_users(
    tx: &mut Transaction,
    name: &str,
    cascade: bool,
    out: &mut QueryOutput,
) -> Result<()> {
    let db = tx.database().clone();
    let uses = |c: &ColumnDef| default_names_sequence(c, name);
    let users: Vec<(String, String)> = db
        .tables_as(Some(tx.id()))
        .iter()
        .flat_map(|t| {
            t.def
                .columns
                .iter()
                .filter(|c| uses(c))
                .map(|c| (t.name().to_string(), c.name.clone()))
                .collect::<Vec<_>>()
        })
        .collect();
    if users.is_empty() {
        return Ok(());
    }
    let Some(seq) = db
        .sequences_as(Some(tx.id()))
        .into_iter()
        .find(|s| s.name.eq_ignore_ascii_case(name))
    else {
        return Ok(());
    };
    let what: Vec<String> = users
        .iter()
        .map(|(t, c)| format!("default value for column {c} of table {t}"))
        .collect();
    if !cascade {
        let detail = what
            .iter()
            .map(|w| format!("{w} depends on sequence {}", seq.name))
            .collect::<Vec<_>>()
            .join("\n");
        let hint = "Use DROP ... CASCADE to drop the dependent objects too.".to_string();
        return Err(SqlError::new(
            ErrorKind::DependentObjects,
            format!(
                "cannot drop sequence {} because other objects depend on it",
                seq.name
            ),
        )
        .with_fields(crate::error::ErrorFields {
            detail: Some(detail),
            hint: Some(hint),
            ..Default::default()
        }));
    }
    for w in &what {
        out.notices.push(format!("drop cascades to {w}"));
    }
    let tables: std::collections::BTreeSet<String> = users.into_iter().map(|(t, _)| t).collect();
    for t in tables {
        tx.fold_writes(&t)?;
        let tx: &Transaction = tx;
        tx.alter_table(&t, |cur| {
            let mut def = cur.def.clone();
            for c in def.columns.iter_mut().filter(|c| uses(c)) {
                c.default = None;
            }
            Ok::<_, EngineError>(Some(walden_engine::Alteration { def, rewrite: None }))
        })?;
    }
    Ok(())
}

/// Whether a column's default draws from (or reads) sequence `name`: a
/// `nextval` default, or an expression naming it as a quoted literal
/// (`currval('s')`), as PostgreSQL records a dependency on it.
pub(crate) fn default_names_sequence(c: &ColumnDef, name: &str) -> bool {
    match &c.default {
        Some(DefaultExpr::NextVal(n)) => n.eq_ignore_ascii_case(name),
        Some(DefaultExpr::Expr(sql)) => quoted_at(sql, name).is_some(),
        _ => false,
    }
}

/// Where `'name'` (any case) starts in `sql`.
pub(crate) fn quoted_at(sql: &str, name: &str) -> Option<usize> {
    let want = format!("'{}'", name.to_ascii_lowercase());
    sql.to_ascii_lowercase().find(&want)
}
