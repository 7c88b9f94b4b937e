//! `ALTER TABLE`: one dispatcher over sqlparser's actions. The actions of a
//! statement are applied in order to a working copy of the table's
//! definition and of where each column's values come from; the rows are
//! then validated (NOT NULL, CHECK; keys and unique indexes by the engine
//! as it rebuilds them) and the whole change is logged as one system change
//! with the database's gate held, so it is atomic and no commit slips in
//! between the validation and the change.
//!
//! Constraints and the final validation are in `alter_table/constraint_actions.rs`, the
//! T-SQL forms and unparsed clauses in `front/alter_table.rs`.
//!
//! What is refused (0A000, naming the clause): FOREIGN KEY (its own
//! module hooks in at `Work::add_constraint`), NOT VALID, column positions,
//! identity/serial or `nextval` defaults on a table with rows, and every
//! action outside columns, constraints and names (OWNER TO, SET SCHEMA,
//! triggers, partitions, storage options, ...).

pub(crate) mod constraint_actions;
pub(crate) mod identity;

use crate::catalog::index::UniqueSpec;
use crate::dml::Ctx;
use crate::error::{ErrorKind, Result, SqlError};
use crate::expr::{fold_ident, Expr};
use crate::functions::Env;
use crate::query::{self, object_last, Planner};
use crate::QueryOutput;
use sqlparser::ast::{self, AlterColumnOperation as ColOp, AlterTableOperation as Op};
use std::sync::Arc;
use walden_engine::{
    ColumnDef, ColumnSource, DataType, Database, DefaultExpr, Row, Table, TableDef, Transaction,
    Value,
};

/// Runs `ALTER TABLE` (a system change of the engine, fully durable).
pub(crate) fn alter_table(
    p: &mut Planner<'_>,
    at: &ast::AlterTable,
    tx: &mut Transaction,
    ctx: &Ctx<'_>,
) -> Result<QueryOutput> {
    if at.location.is_some() || at.on_cluster.is_some() || at.table_type.is_some() {
        return Err(SqlError::unsupported(format!(
            "this form of ALTER TABLE ({at})"
        )));
    }
    for op in &at.operations {
        refuse_unsupported(op)?;
    }
    let db = tx.database().clone();
    let name = object_last(&at.name);
    let mut out = QueryOutput::command("ALTER TABLE");
    if db.table(&name).is_err() {
        // `ALTER TABLE seq RENAME TO n` renames a sequence, as PostgreSQL's
        // ALTER TABLE takes any relation there.
        if let [ast::AlterTableOperation::RenameTable { table_name }] = at.operations.as_slice() {
            let is_seq = db
                .sequences_as(Some(tx.id()))
                .iter()
                .any(|s| s.name.eq_ignore_ascii_case(&name));
            if is_seq {
                let to = match table_name {
                    ast::RenameTableNameKind::As(n) | ast::RenameTableNameKind::To(n) => n,
                };
                let change = crate::front::SequenceChange {
                    rename: Some(object_last(to)),
                    ..Default::default()
                };
                crate::catalog::alter_sequence::alter_sequence(tx, false, &name, &change)?;
                return Ok(out);
            }
        }
        if at.if_exists {
            out.notices
                .push(format!("relation \"{name}\" does not exist, skipping"));
            return Ok(out);
        }
        return Err(walden_engine::EngineError::UnknownTable(name).into());
    }
    if at.operations.iter().all(tuning_only) {
        return Ok(out);
    }
    if let Ok(t) = db.table_as(Some(tx.id()), &name) {
        let part = t.def.partition_key.is_some() || t.def.partition_of.is_some();
        if part
            && !at
                .operations
                .iter()
                .all(|op| matches!(op, Op::RenameTable { .. }))
        {
            return Err(SqlError::unsupported(
                "ALTER TABLE of a partitioned table or a partition (other than RENAME, ATTACH and DETACH PARTITION)",
            ));
        }
    }
    crate::catalog::views::check_alter_table(tx, &name, at, &mut out)?;
    if let Ok(t) = db.table_as(Some(tx.id()), &name) {
        crate::dml::deferred::refuse_if_pending(tx, t.id(), t.name(), "ALTER TABLE")?;
    }
    // Rows this transaction wrote are validated and rewritten with the
    // committed ones.
    tx.fold_writes(&name)?;
    let tx: &Transaction = tx;
    let env = ctx.env(tx);
    let mut notices = Vec::new();
    let mut serials = Vec::new();
    tx.alter_table(&name, |t| {
        let mut w = Work::new(&db, t, &env);
        for op in &at.operations {
            w.apply(p, op)?;
        }
        let alt = w.finish(p)?;
        notices = w.notices;
        serials = w.serials;
        Ok::<_, SqlError>(alt)
    })?;
    if !serials.is_empty() {
        let t = db.table_as(Some(tx.id()), &name)?;
        for (col, seq) in serials {
            let i = t
                .def
                .column_index(&col)
                .ok_or_else(|| SqlError::internal(format!("serial column {col} went missing")))?;
            let ty = t.def.columns[i].data_type.clone();
            crate::catalog::ddl::create_owned_sequence(tx, &seq, &ty, t.id(), i)?;
        }
    }
    out.notices = notices;
    Ok(out)
}

/// `SET (parallel_workers = 4)` and the other storage parameters that
/// change no result: accepted as CREATE TABLE accepts them.
fn tuning_only(op: &Op) -> bool {
    match op {
        Op::SetOptionsParens { options } => options.iter().all(|o| {
            matches!(o, ast::SqlOption::KeyValue { key, .. }
                if crate::catalog::create_table_clauses::tuning_only(&key.value))
        }),
        _ => false,
    }
}

/// Refuses, before anything is looked at, the actions Walden does not do.
fn refuse_unsupported(op: &Op) -> Result<()> {
    match op {
        Op::AddColumn { .. }
        | Op::DropColumn { .. }
        | Op::AddConstraint { .. }
        | Op::DropConstraint { .. }
        | Op::RenameColumn { .. }
        | Op::RenameTable { .. }
        | Op::RenameConstraint { .. } => Ok(()),
        Op::DropPrimaryKey { .. } => Err(SqlError::unsupported(
            "ALTER TABLE ... DROP PRIMARY KEY (use DROP CONSTRAINT name)",
        )),
        Op::AlterColumn { .. } => Ok(()),
        op if tuning_only(op) => Ok(()),
        other => Err(SqlError::unsupported(format!("ALTER TABLE ... {other}"))),
    }
}

/// The table being altered: its next definition, where each of its
/// columns takes its values from, and the rows those sources read.
pub(crate) struct Work<'a> {
    pub(crate) db: &'a Arc<Database>,
    /// Where USING and CHECK expressions are evaluated.
    pub(crate) env: &'a Env<'a>,
    pub(crate) old: &'a Arc<Table>,
    pub(crate) rows: Option<Vec<Row>>,
    pub(crate) def: TableDef,
    pub(crate) src: Vec<ColumnSource>,
    /// CHECK constraints to validate against the rows (new ones).
    pub(crate) new_checks: Vec<String>,
    /// A column's values changed: every CHECK is validated again.
    pub(crate) retyped: bool,
    pub(crate) notices: Vec<String>,
    /// Serial columns added: (column, its sequence's name), the sequences
    /// made once the table is altered.
    pub(crate) serials: Vec<(String, String)>,
}

pub(crate) fn err(kind: ErrorKind, m: impl Into<String>) -> SqlError {
    SqlError::new(kind, m)
}

impl<'a> Work<'a> {
    pub(crate) fn new(db: &'a Arc<Database>, old: &'a Arc<Table>, env: &'a Env<'a>) -> Self {
        Work {
            db,
            env,
            old,
            rows: None,
            def: old.def.clone(),
            src: (0..old.def.columns.len()).map(ColumnSource::Old).collect(),
            new_checks: Vec::new(),
            retyped: false,
            notices: Vec::new(),
            serials: Vec::new(),
        }
    }

    pub(crate) fn table(&self) -> &str {
        &self.def.name
    }

    /// The table's newest committed rows in key order (the order the
    /// engine's rewrite follows), each charged to the statement's memory
    /// limit as it is read: a rewrite holds them all, so past the limit it
    /// fails with 53200 before it has taken the memory.
    pub(crate) fn rows(&mut self) -> Result<&[Row]> {
        if self.rows.is_none() {
            let mem = &self.env.info.mem;
            let mut rows = Vec::new();
            let all = (std::ops::Bound::Unbounded, std::ops::Bound::Unbounded);
            self.old
                .rows
                .for_each_at(all, walden_engine::mvcc::Csn::MAX, |r| {
                    mem.charge_row(r.len())?;
                    rows.push(Row::from(r));
                    Ok::<(), SqlError>(())
                })?;
            self.rows = Some(rows);
        }
        Ok(self.rows.as_deref().unwrap_or_default())
    }

    pub(crate) fn nrows(&mut self) -> Result<usize> {
        Ok(self.rows()?.len())
    }

    /// Visits each row as the working definition's columns see it. With no
    /// column of per-row values the rows stream from the table and none is
    /// held (validating `ADD PRIMARY KEY` over ten million rows takes no
    /// memory); otherwise they come from [`Self::rows`].
    pub(crate) fn each_row(&mut self, mut f: impl FnMut(&[Value]) -> Result<()>) -> Result<()> {
        let per_row = self
            .src
            .iter()
            .any(|s| matches!(s, ColumnSource::Values(_)));
        if per_row || self.rows.is_some() {
            for r in 0..self.nrows()? {
                f(&self.row(r))?;
            }
            return Ok(());
        }
        let (src, mut n) = (&self.src, 0);
        let all = (std::ops::Bound::Unbounded, std::ops::Bound::Unbounded);
        self.old
            .rows
            .for_each_at(all, walden_engine::mvcc::Csn::MAX, |raw| {
                let row = ColumnSource::project(src, raw, n);
                n += 1;
                f(&row)
            })
    }

    /// Row `n` as the working definition's columns see it.
    pub(crate) fn row(&self, n: usize) -> Vec<Value> {
        let rows = self.rows.as_deref().unwrap_or_default();
        ColumnSource::project(&self.src, &rows[n], n)
    }

    pub(crate) fn column(&self, name: &str) -> Result<usize> {
        self.def.column_index(name).ok_or_else(|| {
            err(
                ErrorKind::UndefinedColumn,
                format!(
                    "column \"{name}\" of relation \"{}\" does not exist",
                    self.table()
                ),
            )
        })
    }

    fn apply(&mut self, p: &mut Planner<'_>, op: &Op) -> Result<()> {
        match op {
            Op::AddColumn {
                if_not_exists,
                column_def,
                column_position,
                ..
            } => {
                if column_position.is_some() {
                    return Err(SqlError::unsupported(
                        "ADD COLUMN ... FIRST / AFTER (columns are added last)",
                    ));
                }
                self.add_column(p, column_def, *if_not_exists)
            }
            Op::DropColumn {
                column_names,
                if_exists,
                drop_behavior,
                ..
            } => {
                // CASCADE and RESTRICT: nothing outside the table depends on
                // a column yet (no views, no foreign keys); a generated
                // column reading it does.
                let cascade = matches!(drop_behavior, Some(ast::DropBehavior::Cascade));
                for c in column_names {
                    self.drop_column(p, &fold_ident(c), *if_exists, cascade)?;
                }
                Ok(())
            }
            Op::AlterColumn { column_name, op } => {
                let i = self.column(&fold_ident(column_name))?;
                self.alter_column(p, i, op)
            }
            Op::AddConstraint {
                constraint,
                not_valid,
            } => {
                if *not_valid {
                    return Err(SqlError::unsupported("ADD CONSTRAINT ... NOT VALID"));
                }
                self.add_constraint(p, constraint)
            }
            Op::DropConstraint {
                if_exists, name, ..
            } => self.drop_constraint(&fold_ident(name), *if_exists),
            Op::RenameColumn {
                old_column_name,
                new_column_name,
            } => self.rename_column(&fold_ident(old_column_name), &fold_ident(new_column_name)),
            Op::RenameTable { table_name } => {
                let n = match table_name {
                    ast::RenameTableNameKind::As(n) | ast::RenameTableNameKind::To(n) => n,
                };
                self.rename_table(object_last(n))
            }
            Op::RenameConstraint { old_name, new_name } => {
                self.rename_constraint(&fold_ident(old_name), &fold_ident(new_name))
            }
            op if tuning_only(op) => Ok(()),
            other => Err(SqlError::unsupported(format!("ALTER TABLE ... {other}"))),
        }
    }

    fn add_column(
        &mut self,
        p: &mut Planner<'_>,
        c: &ast::ColumnDef,
        if_not_exists: bool,
    ) -> Result<()> {
        let name = fold_ident(&c.name);
        if self.def.column_index(&name).is_some() {
            let m = format!(
                "column \"{name}\" of relation \"{}\" already exists",
                self.table()
            );
            if if_not_exists {
                self.notices.push(format!("{m}, skipping"));
                return Ok(());
            }
            return Err(err(ErrorKind::DuplicateColumn, m));
        }
        let (plain_type, precision) = crate::types::names::split_time_precision(&c.data_type)?;
        let (ty, serial) =
            crate::types::names::column_type_in(self.db, Some(self.env.tx.id()), &plain_type)?;
        let mut col = ColumnDef::new(name.clone(), ty.clone());
        col.time_precision = precision;
        if serial {
            let taken: Vec<(usize, String)> =
                self.serials.iter().map(|(_, s)| (0, s.clone())).collect();
            let seq = crate::catalog::ddl::serial_sequence_name(
                self.db,
                self.env.tx,
                self.table(),
                &name,
                &taken,
            );
            col.nullable = false;
            col.default = Some(DefaultExpr::NextVal(seq.clone()));
            self.serials.push((name.clone(), seq));
        }
        let mut checks = Vec::new();
        let mut unique = Vec::new();
        let mut primary = false;
        for o in &c.options {
            match &o.option {
                ast::ColumnOption::NotNull => col.nullable = false,
                ast::ColumnOption::Null => col.nullable = true,
                ast::ColumnOption::Default(e) => {
                    col.default = Some(crate::catalog::ddl::default_expr(e)?)
                }
                ast::ColumnOption::Check(ck) => {
                    checks.push(crate::catalog::ddl::declared_check(o.name.as_ref(), ck)?)
                }
                ast::ColumnOption::Unique(u) => unique.push(UniqueSpec::of(u, Some(&c.name))?),
                ast::ColumnOption::PrimaryKey(_) => {
                    primary = true;
                    col.nullable = false;
                }
                ast::ColumnOption::Generated {
                    generated_as: ast::GeneratedAs::ExpStored,
                    generation_expr: Some(e),
                    generated_keyword: true,
                    ..
                } => col.generated = Some(crate::dml::checks::unnest(e).to_string()),
                // An expression that is not PostgreSQL's stored one (T-SQL's
                // `AS (expr)`) is no identity: refused, not taken for one.
                ast::ColumnOption::Generated {
                    generation_expr: Some(_),
                    ..
                } => {
                    return Err(SqlError::unsupported(
                        "computed columns other than GENERATED ALWAYS AS (expression) STORED",
                    ))
                }
                ast::ColumnOption::Identity(_) | ast::ColumnOption::Generated { .. } => {
                    col = col.identity(1, 1)
                }
                ast::ColumnOption::ForeignKey(_) => {
                    return Err(SqlError::unsupported(
                        "ADD COLUMN ... REFERENCES (foreign keys)",
                    ))
                }
                ast::ColumnOption::Collation(n) => {
                    let c = crate::types::collation::collation_named(n)?;
                    if !crate::types::collation::collatable(&col.data_type) {
                        return Err(crate::types::collation::not_collatable(&col.data_type));
                    }
                    col.collation = c;
                }
                ast::ColumnOption::Comment(_) => {}
                other => return Err(SqlError::unsupported(format!("column option {other}"))),
            }
        }
        if col.generated.is_some() {
            if col.default.is_some() || col.identity.is_some() {
                return Err(SqlError::syntax(format!(
                    "both {} and generation expression specified for column \"{}\" of table \"{}\"",
                    if col.identity.is_some() {
                        "identity"
                    } else {
                        "default"
                    },
                    col.name,
                    self.table()
                )));
            }
            let mut cols = self.def.columns.clone();
            cols.push(col.clone());
            crate::dml::generated::check_declared(p, self.table(), &cols)?;
            if self.nrows()? > 0 {
                return Err(SqlError::unsupported(format!(
                    "ADD COLUMN \"{}\" GENERATED ALWAYS AS (...) STORED to a table with rows",
                    col.name
                )));
            }
        }
        // The rows are read only when the new column's values depend on them.
        let per_row = col.identity.is_some()
            || matches!(
                col.default,
                Some(DefaultExpr::NewUuid | DefaultExpr::NextVal(_) | DefaultExpr::Expr(_))
            );
        crate::catalog::ddl::check_defaults(p, std::iter::once(&col))?;
        let n = if per_row { self.nrows()? } else { 0 };
        let fill = if col.identity.is_some() {
            if n > 0 {
                return Err(SqlError::unsupported(
                    "ADD COLUMN of an identity or serial column to a table with rows",
                ));
            }
            ColumnSource::Fill(Value::Null)
        } else {
            match &col.default {
                None => ColumnSource::Fill(Value::Null),
                Some(d) => self.default_fill(&col.name, d, &ty, n)?,
            }
        };
        let fill = rounded(fill, col.time_precision);
        self.def.columns.push(col);
        self.src.push(fill);
        self.def
            .validate()
            .map_err(crate::catalog::ddl::map_def_err)?;
        let at = self.def.columns.len() - 1;
        if primary {
            self.set_primary_key(None, vec![at])?;
        }
        for u in unique {
            self.add_unique(u)?;
        }
        self.add_checks(p, checks)
    }

    /// The values a new column's default gives the rows there are: one
    /// value for a constant or `now()` (PostgreSQL evaluates a non-volatile
    /// default once), one per row for a random UUID.
    fn default_fill(
        &mut self,
        col: &str,
        d: &DefaultExpr,
        ty: &DataType,
        n: usize,
    ) -> Result<ColumnSource> {
        let now = || Value::TimestampTz(walden_engine::types::now_micros());
        Ok(match d {
            DefaultExpr::Value(v) => ColumnSource::Fill(crate::functions::cast(v.clone(), ty)?),
            DefaultExpr::Now => ColumnSource::Fill(crate::functions::cast(now(), ty)?),
            DefaultExpr::Today => ColumnSource::Fill(crate::functions::cast(
                crate::functions::cast(now(), &DataType::Date)?,
                ty,
            )?),
            DefaultExpr::NewUuid => ColumnSource::Values(
                (0..n)
                    .map(|_| {
                        self.env.info.mem.charge_row(1)?;
                        crate::functions::cast(Value::Uuid(uuid::Uuid::new_v4().as_u128()), ty)
                    })
                    .collect::<Result<_>>()?,
            ),
            DefaultExpr::NextVal(_) if n > 0 => {
                return Err(SqlError::unsupported(format!(
                    "ADD COLUMN \"{col}\" with a nextval() default to a table with rows"
                )))
            }
            DefaultExpr::NextVal(_) => ColumnSource::Fill(Value::Null),
            DefaultExpr::Expr(_) if n > 0 => {
                return Err(SqlError::unsupported(format!(
                    "ADD COLUMN \"{col}\" with an expression default to a table with rows"
                )))
            }
            DefaultExpr::Expr(_) => ColumnSource::Fill(Value::Null),
        })
    }

    fn drop_column(
        &mut self,
        p: &mut Planner<'_>,
        name: &str,
        if_exists: bool,
        cascade: bool,
    ) -> Result<()> {
        let Some(i) = self.def.column_index(name) else {
            let m = format!(
                "column \"{name}\" of relation \"{}\" does not exist",
                self.table()
            );
            if if_exists {
                self.notices.push(format!("{m}, skipping"));
                return Ok(());
            }
            return Err(err(ErrorKind::UndefinedColumn, m));
        };
        if self.def.columns.len() == 1 {
            return Err(SqlError::unsupported(
                "dropping the last column of a table (a table here has at least one column)",
            ));
        }
        let readers = crate::dml::generated::readers_of(p, self.table(), &self.def.columns, i)?;
        if !readers.is_empty() {
            if cascade {
                return Err(SqlError::unsupported(format!(
                    "DROP COLUMN {name} CASCADE of a column a generated column reads"
                )));
            }
            let table = self.table().to_string();
            let detail: Vec<String> = readers
                .iter()
                .map(|&k| {
                    format!(
                        "column {} of table {table} depends on column {name} of table {table}",
                        self.def.columns[k].name
                    )
                })
                .collect();
            return Err(err(
                ErrorKind::DependentObjects,
                format!(
                    "cannot drop column {name} of table {table} because other objects depend on it"
                ),
            )
            .with_fields(crate::error::ErrorFields {
                detail: Some(detail.join("\n")),
                hint: Some("Use DROP ... CASCADE to drop the dependent objects too.".into()),
                ..Default::default()
            }));
        }
        // As PostgreSQL: the key, indexes and constraints over the column go
        // with it.
        if self.def.primary_key.contains(&i) {
            self.def.primary_key.clear();
            self.def.pk_name = None;
        }
        self.def.indexes.retain(|ix| !ix.columns.contains(&i));
        let mut keep = Vec::new();
        for c in std::mem::take(&mut self.def.checks) {
            if !check_columns(p, &self.def, &c.expr)?.contains(&i) {
                keep.push(c);
            }
        }
        self.def.checks = keep;
        self.def.columns.remove(i);
        self.src.remove(i);
        let shift = |c: &mut usize| {
            if *c > i {
                *c -= 1
            }
        };
        self.def.primary_key.iter_mut().for_each(shift);
        for ix in &mut self.def.indexes {
            ix.columns.iter_mut().for_each(shift);
        }
        Ok(())
    }

    fn alter_column(&mut self, p: &mut Planner<'_>, i: usize, op: &ColOp) -> Result<()> {
        let cname = self.def.columns[i].name.clone();
        match op {
            ColOp::SetNotNull => self.def.columns[i].nullable = false,
            ColOp::DropNotNull => {
                if self.def.primary_key.contains(&i) {
                    return Err(err(
                        ErrorKind::InvalidTableDefinition,
                        format!("column \"{cname}\" is in a primary key"),
                    ));
                }
                if self.def.columns[i].identity.is_some() {
                    return Err(err(
                        ErrorKind::InvalidTableDefinition,
                        format!(
                            "column \"{cname}\" of relation \"{}\" is an identity column",
                            self.table()
                        ),
                    ));
                }
                self.def.columns[i].nullable = true;
            }
            ColOp::SetDefault { .. } | ColOp::DropDefault
                if self.def.columns[i].generated.is_some() =>
            {
                return Err(SqlError::syntax(format!(
                    "column \"{cname}\" of relation \"{}\" is a generated column",
                    self.table()
                )));
            }
            ColOp::SetDefault { value } => {
                let d = crate::catalog::ddl::default_expr(value)?;
                // `nextval` of the column's own counter (a serial column's,
                // shown as this sequence): what the column does already, as
                // a restore sets it after `ALTER SEQUENCE ... OWNED BY`.
                let own = format!("{}_{}_seq", self.table(), cname);
                if let (Some(id), DefaultExpr::NextVal(n)) = (self.def.columns[i].identity, &d) {
                    if id.generated.is_none() && n.eq_ignore_ascii_case(&own) {
                        return Ok(());
                    }
                }
                if let DefaultExpr::Value(v) = &d {
                    crate::functions::cast(v.clone(), &self.def.columns[i].data_type)?;
                }
                if let DefaultExpr::Expr(sql) = &d {
                    crate::dml::defaults::compile_text(p, sql)?;
                }
                self.def.columns[i].default = Some(d);
            }
            ColOp::DropDefault => self.def.columns[i].default = None,
            ColOp::SetDataType {
                data_type, using, ..
            } => self.set_type(p, i, data_type, using.as_ref())?,
            ColOp::AddGenerated {
                generated_as,
                sequence_options,
            } => self.add_identity(i, generated_as.as_ref(), sequence_options)?,
        }
        Ok(())
    }

    fn set_type(
        &mut self,
        p: &mut Planner<'_>,
        i: usize,
        ty: &ast::DataType,
        using: Option<&ast::Expr>,
    ) -> Result<()> {
        let (plain_type, precision) = crate::types::names::split_time_precision(ty)?;
        let (new, serial) = crate::types::names::column_type_in(self.db, p.viewer, &plain_type)?;
        let cname = self.def.columns[i].name.clone();
        if serial {
            return Err(err(
                ErrorKind::UndefinedObject,
                format!("type \"{ty}\" does not exist"),
            ));
        }
        if self.def.columns[i].generated.is_some() {
            return Err(SqlError::unsupported(format!(
                "ALTER COLUMN \"{cname}\" TYPE of a generated column"
            )));
        }
        let readers = crate::dml::generated::readers_of(p, self.table(), &self.def.columns, i)?;
        if let Some(&k) = readers.first() {
            return Err(err(
                ErrorKind::FeatureNotSupported,
                "cannot alter type of a column used by a generated column",
            )
            .with_fields(crate::error::ErrorFields {
                detail: Some(format!(
                    "Column \"{cname}\" is used by generated column \"{}\".",
                    self.def.columns[k].name
                )),
                ..Default::default()
            }));
        }
        let old = self.def.columns[i].data_type.clone();
        let keyed = self.def.primary_key.contains(&i)
            || self.def.indexes.iter().any(|ix| ix.columns.contains(&i));
        if keyed && matches!(new, DataType::Json | DataType::Jsonb) {
            return Err(SqlError::unsupported(format!(
                "a key or index on column \"{cname}\" of type {}",
                new.sql_name()
            )));
        }
        if using.is_none() && !assignable(&old, &new) {
            return Err(err(
                ErrorKind::DatatypeMismatch,
                format!(
                    "column \"{cname}\" cannot be cast automatically to type {}",
                    pg_type_name(&new)
                ),
            ));
        }
        // The default must convert too, as PostgreSQL checks.
        if let Some(DefaultExpr::Value(v)) = &self.def.columns[i].default {
            if crate::functions::cast(v.clone(), &new).is_err() {
                return Err(err(
                    ErrorKind::DatatypeMismatch,
                    format!(
                        "default for column \"{cname}\" cannot be cast automatically to type {}",
                        pg_type_name(&new)
                    ),
                ));
            }
        }
        let n = self.nrows()?;
        let compiled = match using {
            Some(e) => {
                if mentions_sequence(e) {
                    return Err(SqlError::unsupported(
                        "a USING expression that calls a sequence function",
                    ));
                }
                let scope = crate::dml::checks::scope_of(self.table(), &self.def.columns);
                let x = Expr::compile(p, &scope, e)?;
                if x.has_subquery() {
                    return Err(err(
                        ErrorKind::FeatureNotSupported,
                        "cannot use subquery in transform expression",
                    ));
                }
                Some(x)
            }
            None => None,
        };
        let mut vals = Vec::with_capacity(n);
        for r in 0..n {
            self.env.info.mem.charge_row(1)?;
            let row = self.row(r);
            let v = match &compiled {
                Some(x) => x.eval(&row, self.env)?,
                None => row[i].clone(),
            };
            vals.push(crate::functions::cast(v, &new)?);
        }
        self.src[i] = rounded(ColumnSource::Values(vals), precision);
        self.def.columns[i].data_type = new;
        self.def.columns[i].time_precision = precision;
        self.retyped = true;
        Ok(())
    }

    fn rename_column(&mut self, old: &str, new: &str) -> Result<()> {
        let i = self.def.column_index(old).ok_or_else(|| {
            err(
                ErrorKind::UndefinedColumn,
                format!("column \"{old}\" does not exist"),
            )
        })?;
        if self.def.column_index(new).is_some() {
            return Err(err(
                ErrorKind::DuplicateColumn,
                format!(
                    "column \"{new}\" of relation \"{}\" already exists",
                    self.table()
                ),
            ));
        }
        let was = self.def.columns[i].name.clone();
        self.def.columns[i].name = new.to_string();
        for c in &mut self.def.checks {
            c.expr = rename_in_expr(&c.expr, &was, new);
        }
        for c in &mut self.def.columns {
            if let Some(g) = c.generated.as_mut() {
                *g = rename_in_expr(g, &was, new);
            }
        }
        Ok(())
    }

    fn rename_table(&mut self, new: String) -> Result<()> {
        if !new.eq_ignore_ascii_case(self.old.name())
            && (self.db.table(&new).is_ok() || self.db.index_table(&new).is_some())
        {
            return Err(walden_engine::EngineError::RelationExists(new).into());
        }
        // The key's constraint keeps its name, as PostgreSQL's does.
        if !self.def.primary_key.is_empty() && self.def.pk_name.is_none() {
            self.def.pk_name = Some(self.def.pkey_name());
        }
        self.def.name = new;
        if self.def.pk_name.as_deref() == Some(&format!("{}_pkey", self.def.name)) {
            self.def.pk_name = None;
        }
        Ok(())
    }
}

/// The columns (positions) a stored CHECK expression uses.
fn check_columns(p: &mut Planner<'_>, def: &TableDef, text: &str) -> Result<Vec<usize>> {
    let scope = crate::dml::checks::scope_of(&def.name, &def.columns);
    let e = crate::dml::checks::parse_stored(text)?;
    let x = crate::dml::checks::compile_check(p, &scope, &e)?;
    let mut used = Vec::new();
    query::cols_used(&x, &mut used);
    Ok(used)
}

/// A stored expression with column `old` renamed to `new` (token by
/// token, so strings and other names are left alone).
fn rename_in_expr(text: &str, old: &str, new: &str) -> String {
    use sqlparser::tokenizer::{Token, Tokenizer};
    let dialect = sqlparser::dialect::PostgreSqlDialect {};
    let Ok(tokens) = Tokenizer::new(&dialect, text).tokenize() else {
        return text.to_string();
    };
    let mut out = String::new();
    for (k, t) in tokens.iter().enumerate() {
        match t {
            Token::Word(w)
                if (w.quote_style.is_none() && w.value.eq_ignore_ascii_case(old)
                    || w.quote_style == Some('"') && w.value == old)
                    && !matches!(tokens.get(k + 1), Some(Token::LParen)) =>
            {
                out.push_str(&quote_ident(new));
            }
            other => out.push_str(&other.to_string()),
        }
    }
    out
}

fn quote_ident(s: &str) -> String {
    let plain = s
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if plain {
        s.to_string()
    } else {
        format!("\"{}\"", s.replace('"', "\"\""))
    }
}

fn mentions_sequence(e: &ast::Expr) -> bool {
    let s = e.to_string().to_ascii_lowercase();
    s.contains("nextval") || s.contains("setval")
}

/// Whether PostgreSQL converts a column of type `from` to `to` without a
/// USING clause (an implicit or assignment cast exists).
fn assignable(from: &DataType, to: &DataType) -> bool {
    use DataType as T;
    let numeric = |t: &DataType| {
        matches!(
            t,
            T::SmallInt | T::Int | T::BigInt | T::Oid | T::Real | T::Double | T::Decimal { .. }
        )
    };
    let text = |t: &DataType| matches!(t, T::Text | T::Varchar(_) | T::Char(_) | T::Name);
    let datetime = |t: &DataType| matches!(t, T::Date | T::Timestamp | T::TimestampTz);
    std::mem::discriminant(from) == std::mem::discriminant(to)
        || text(to)
        || numeric(from) && numeric(to)
        || datetime(from) && datetime(to)
        || matches!(from, T::Timestamp | T::TimestampTz | T::Interval) && matches!(to, T::Time)
        || matches!(from, T::Time) && matches!(to, T::Interval)
        || matches!(from, T::Json | T::Jsonb) && matches!(to, T::Json | T::Jsonb)
}

/// A new column's values kept to its fractional-second precision.
fn rounded(src: ColumnSource, precision: Option<u8>) -> ColumnSource {
    let Some(p) = precision else { return src };
    let round = |v| walden_engine::types::datetime::round_to_precision(v, p);
    match src {
        ColumnSource::Fill(v) => ColumnSource::Fill(round(v)),
        ColumnSource::Values(vs) => ColumnSource::Values(vs.into_iter().map(round).collect()),
        old @ ColumnSource::Old(_) => old,
    }
}

/// A type as PostgreSQL's messages name it (`format_type`).
fn pg_type_name(t: &DataType) -> String {
    match t {
        DataType::Varchar(Some(n)) => format!("character varying({n})"),
        DataType::Varchar(None) => "character varying".into(),
        DataType::Timestamp => "timestamp without time zone".into(),
        other => other.sql_name(),
    }
}
