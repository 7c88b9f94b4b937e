//! `ALTER TABLE`: one dispatcher over sqlparser's actions. The actions of a
//! statement are applied in order to a working copy of the table's
//! definition and of where each column's values come from; the rows are
//! then validated (NOT NULL, CHECK; keys and unique indexes by the engine
//! as it rebuilds them) and the whole change is logged as one system change
//! with the database's gate held, so it is atomic and no commit slips in
//! between the validation and the change.
//!
//! What is refused (0A000, naming the clause): FOREIGN KEY (its own
//! module hooks in at `add_constraint`), NOT VALID, column positions,
//! identity/serial or `nextval` defaults on a table with rows, and every
//! action outside columns, constraints and names (OWNER TO, SET SCHEMA,
//! triggers, partitions, storage options, ...).

use crate::constraints::{self, Declared};
use crate::dml::Ctx;
use crate::error::{ErrorFields, ErrorKind, Result, SqlError};
use crate::expr::{fold_ident, Env, Expr};
use crate::index_ddl::{self, UniqueSpec};
use crate::query::{self, object_last, Planner};
use crate::QueryOutput;
use sqlparser::ast::{self, AlterColumnOperation as ColOp, AlterTableOperation as Op};
use std::sync::Arc;
use walden_engine::{
    Alteration, ColumnDef, ColumnSource, DataType, Database, DefaultExpr, IndexDef, Row, Session,
    Table, TableDef, Transaction, Value,
};

/// Runs `ALTER TABLE` (a system change of the engine, fully durable).
pub(crate) fn alter_table(
    p: &mut Planner<'_>,
    at: &ast::AlterTable,
    tx: &Transaction,
    ctx: &Ctx<'_>,
    session: &Session,
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
        if at.if_exists {
            out.notices
                .push(format!("relation \"{name}\" does not exist, skipping"));
            return Ok(out);
        }
        return Err(walden_engine::EngineError::UnknownTable(name).into());
    }
    if db.table(&name).is_ok_and(|t| tx.has_written(t.id())) {
        return Err(SqlError::unsupported(format!(
            "ALTER TABLE of \"{name}\" after this transaction changed its rows \
             (DDL is not transactional here yet)"
        )));
    }
    let env = ctx.env(tx);
    let mut notices = Vec::new();
    db.alter_table(session, &name, |t| {
        let mut w = Work::new(&db, t, &env);
        for op in &at.operations {
            w.apply(p, op)?;
        }
        let alt = w.finish(p)?;
        notices = w.notices;
        Ok::<_, SqlError>(alt)
    })?;
    out.notices = notices;
    Ok(out)
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
        Op::AlterColumn { op, .. } => match op {
            ColOp::AddGenerated { .. } => Err(SqlError::unsupported(format!(
                "ALTER TABLE ... ALTER COLUMN ... {op}"
            ))),
            _ => Ok(()),
        },
        other => Err(SqlError::unsupported(format!("ALTER TABLE ... {other}"))),
    }
}

/// The table being altered: its next definition, where each of its
/// columns takes its values from, and the rows those sources read.
struct Work<'a> {
    db: &'a Arc<Database>,
    /// Where USING and CHECK expressions are evaluated.
    env: &'a Env<'a>,
    old: &'a Arc<Table>,
    rows: Option<Vec<Row>>,
    def: TableDef,
    src: Vec<ColumnSource>,
    /// CHECK constraints to validate against the rows (new ones).
    new_checks: Vec<String>,
    /// A column's values changed: every CHECK is validated again.
    retyped: bool,
    notices: Vec<String>,
}

fn err(kind: ErrorKind, m: impl Into<String>) -> SqlError {
    SqlError::new(kind, m)
}

impl<'a> Work<'a> {
    fn new(db: &'a Arc<Database>, old: &'a Arc<Table>, env: &'a Env<'a>) -> Self {
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
        }
    }

    fn table(&self) -> &str {
        &self.def.name
    }

    fn rows(&mut self) -> &[Row] {
        let old = self.old;
        self.rows
            .get_or_insert_with(|| old.latest_rows().into_values().collect())
    }

    fn nrows(&mut self) -> usize {
        self.rows().len()
    }

    /// Row `n` as the working definition's columns see it.
    fn row(&self, n: usize) -> Vec<Value> {
        let rows = self.rows.as_deref().unwrap_or_default();
        self.src
            .iter()
            .map(|s| match s {
                ColumnSource::Old(i) => rows[n][*i].clone(),
                ColumnSource::Fill(v) => v.clone(),
                ColumnSource::Values(v) => v[n].clone(),
            })
            .collect()
    }

    /// Column `i` of row `n`.
    fn value(&self, n: usize, i: usize) -> Value {
        let rows = self.rows.as_deref().unwrap_or_default();
        match &self.src[i] {
            ColumnSource::Old(j) => rows[n][*j].clone(),
            ColumnSource::Fill(v) => v.clone(),
            ColumnSource::Values(v) => v[n].clone(),
        }
    }

    fn column(&self, name: &str) -> Result<usize> {
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
                ..
            } => {
                // CASCADE and RESTRICT: nothing outside the table depends on
                // a column yet (no views, no foreign keys).
                for c in column_names {
                    self.drop_column(p, &fold_ident(c), *if_exists)?;
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
        let (ty, serial) = crate::typing::column_type(&c.data_type)?;
        let mut col = ColumnDef::new(name.clone(), ty.clone());
        if serial {
            col = col.identity(1, 1);
        }
        let mut checks = Vec::new();
        let mut unique = Vec::new();
        let mut primary = false;
        for o in &c.options {
            match &o.option {
                ast::ColumnOption::NotNull => col.nullable = false,
                ast::ColumnOption::Null => col.nullable = true,
                ast::ColumnOption::Default(e) => col.default = Some(crate::ddl::default_expr(e)?),
                ast::ColumnOption::Check(ck) => {
                    checks.push(crate::ddl::declared_check(o.name.as_ref(), ck)?)
                }
                ast::ColumnOption::Unique(u) => unique.push(UniqueSpec::of(u, Some(&c.name))?),
                ast::ColumnOption::PrimaryKey(_) => {
                    primary = true;
                    col.nullable = false;
                }
                ast::ColumnOption::Identity(_) | ast::ColumnOption::Generated { .. } => {
                    col = col.identity(1, 1)
                }
                ast::ColumnOption::ForeignKey(_) => {
                    return Err(SqlError::unsupported(
                        "ADD COLUMN ... REFERENCES (foreign keys)",
                    ))
                }
                ast::ColumnOption::Comment(_) | ast::ColumnOption::Collation(_) => {}
                other => return Err(SqlError::unsupported(format!("column option {other}"))),
            }
        }
        // The rows are read only when the new column's values depend on them.
        let per_row = col.identity.is_some()
            || matches!(
                col.default,
                Some(DefaultExpr::NewUuid | DefaultExpr::NextVal(_))
            );
        let n = if per_row { self.nrows() } else { 0 };
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
        self.def.columns.push(col);
        self.src.push(fill);
        self.def.validate().map_err(crate::ddl::map_def_err)?;
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
            DefaultExpr::Value(v) => ColumnSource::Fill(crate::expr::cast(v.clone(), ty)?),
            DefaultExpr::Now => ColumnSource::Fill(crate::expr::cast(now(), ty)?),
            DefaultExpr::Today => ColumnSource::Fill(crate::expr::cast(
                crate::expr::cast(now(), &DataType::Date)?,
                ty,
            )?),
            DefaultExpr::NewUuid => ColumnSource::Values(
                (0..n)
                    .map(|_| crate::expr::cast(Value::Uuid(uuid::Uuid::new_v4().as_u128()), ty))
                    .collect::<Result<_>>()?,
            ),
            DefaultExpr::NextVal(_) if n > 0 => {
                return Err(SqlError::unsupported(format!(
                    "ADD COLUMN \"{col}\" with a nextval() default to a table with rows"
                )))
            }
            DefaultExpr::NextVal(_) => ColumnSource::Fill(Value::Null),
        })
    }

    fn drop_column(&mut self, p: &mut Planner<'_>, name: &str, if_exists: bool) -> Result<()> {
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
            ColOp::SetDefault { value } => {
                let d = crate::ddl::default_expr(value)?;
                if let DefaultExpr::Value(v) = &d {
                    crate::expr::cast(v.clone(), &self.def.columns[i].data_type)?;
                }
                self.def.columns[i].default = Some(d);
            }
            ColOp::DropDefault => self.def.columns[i].default = None,
            ColOp::SetDataType {
                data_type, using, ..
            } => self.set_type(p, i, data_type, using.as_ref())?,
            ColOp::AddGenerated { .. } => {
                return Err(SqlError::unsupported(format!(
                    "ALTER TABLE ... ALTER COLUMN ... {op}"
                )))
            }
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
        let (new, serial) = crate::typing::column_type(ty)?;
        let cname = self.def.columns[i].name.clone();
        if serial {
            return Err(err(
                ErrorKind::UndefinedObject,
                format!("type \"{ty}\" does not exist"),
            ));
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
            if crate::expr::cast(v.clone(), &new).is_err() {
                return Err(err(
                    ErrorKind::DatatypeMismatch,
                    format!(
                        "default for column \"{cname}\" cannot be cast automatically to type {}",
                        pg_type_name(&new)
                    ),
                ));
            }
        }
        let n = self.nrows();
        let compiled = match using {
            Some(e) => {
                if mentions_sequence(e) {
                    return Err(SqlError::unsupported(
                        "a USING expression that calls a sequence function",
                    ));
                }
                let scope = constraints::scope_of(self.table(), &self.def.columns);
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
            let row = self.row(r);
            let v = match &compiled {
                Some(x) => x.eval(&row, self.env)?,
                None => row[i].clone(),
            };
            vals.push(crate::expr::cast(v, &new)?);
        }
        self.src[i] = ColumnSource::Values(vals);
        self.def.columns[i].data_type = new;
        self.retyped = true;
        Ok(())
    }

    fn add_constraint(&mut self, p: &mut Planner<'_>, c: &ast::TableConstraint) -> Result<()> {
        use ast::TableConstraint as C;
        match c {
            C::PrimaryKey(pk) => {
                if pk
                    .characteristics
                    .as_ref()
                    .is_some_and(|c| c.deferrable == Some(true) || c.initially.is_some())
                {
                    return Err(SqlError::unsupported("DEFERRABLE PRIMARY KEY constraints"));
                }
                let mut cols = Vec::new();
                for ic in &pk.columns {
                    let name = match &ic.column.expr {
                        ast::Expr::Identifier(i) => fold_ident(i),
                        other => {
                            return Err(SqlError::unsupported(format!(
                                "PRIMARY KEY on an expression ({other})"
                            )))
                        }
                    };
                    cols.push(self.column(&name)?);
                }
                let name = pk.name.as_ref().or(pk.index_name.as_ref()).map(fold_ident);
                self.set_primary_key(name, cols)
            }
            C::Unique(u) => self.add_unique(UniqueSpec::of(u, None)?),
            C::Check(ck) => {
                let d = crate::ddl::declared_check(None, ck)?;
                self.add_checks(p, vec![d])
            }
            // Foreign keys are the FK module's; until it hooks in here they
            // are refused rather than stored unenforced.
            C::ForeignKey(_) => Err(SqlError::unsupported(
                "ALTER TABLE ... ADD FOREIGN KEY (foreign keys are not enforced yet)",
            )),
            other => Err(SqlError::unsupported(format!(
                "ALTER TABLE ... ADD {other}"
            ))),
        }
    }

    fn set_primary_key(&mut self, name: Option<String>, cols: Vec<usize>) -> Result<()> {
        if !self.def.primary_key.is_empty() {
            return Err(err(
                ErrorKind::InvalidTableDefinition,
                format!(
                    "multiple primary keys for table \"{}\" are not allowed",
                    self.table()
                ),
            ));
        }
        for &c in &cols {
            let t = &self.def.columns[c].data_type;
            if matches!(t, DataType::Json | DataType::Jsonb) {
                return Err(SqlError::unsupported(format!(
                    "PRIMARY KEY on column \"{}\" of type {}",
                    self.def.columns[c].name,
                    t.sql_name()
                )));
            }
        }
        let default = format!("{}_pkey", self.table());
        let name = name.unwrap_or(default.clone());
        // The index's name is checked first, as PostgreSQL creates it first.
        if self.relation_taken(&name) {
            return Err(walden_engine::EngineError::RelationExists(name).into());
        }
        self.check_constraint_name_free(&name)?;
        for &c in &cols {
            self.def.columns[c].nullable = false;
        }
        self.def.primary_key = cols;
        self.def.pk_name = (name != default).then_some(name);
        Ok(())
    }

    fn relation_taken(&self, name: &str) -> bool {
        let ours = name.eq_ignore_ascii_case(&self.def.name)
            || self
                .def
                .indexes
                .iter()
                .any(|ix| ix.name.eq_ignore_ascii_case(name));
        // An index of this table dropped in this statement frees its name.
        let dropped_here = self
            .old
            .def
            .indexes
            .iter()
            .any(|ix| ix.name.eq_ignore_ascii_case(name));
        let pkey = |t: &TableDef| !t.primary_key.is_empty() && t.pkey_name() == name;
        ours || pkey(&self.def)
            || (!dropped_here
                && !name.eq_ignore_ascii_case(self.old.name())
                && (self.db.table(name).is_ok()
                    || self.db.index_table(name).is_some()
                    || self
                        .db
                        .tables()
                        .iter()
                        .any(|t| t.id() != self.old.id() && pkey(&t.def))))
    }

    fn constraint_names(&self) -> Vec<String> {
        let mut v: Vec<String> = self.def.checks.iter().map(|c| c.name.clone()).collect();
        v.extend(
            self.def
                .indexes
                .iter()
                .filter(|i| i.constraint)
                .map(|i| i.name.clone()),
        );
        if !self.def.primary_key.is_empty() {
            v.push(self.def.pkey_name());
        }
        v
    }

    fn check_constraint_name_free(&self, name: &str) -> Result<()> {
        if self.constraint_names().iter().any(|n| n == name) {
            return Err(err(
                ErrorKind::DuplicateObject,
                format!(
                    "constraint \"{name}\" for relation \"{}\" already exists",
                    self.table()
                ),
            ));
        }
        Ok(())
    }

    fn add_unique(&mut self, u: UniqueSpec) -> Result<()> {
        let cols = u
            .columns
            .iter()
            .map(|c| self.column(c))
            .collect::<Result<Vec<_>>>()?;
        for &c in &cols {
            let t = &self.def.columns[c].data_type;
            if matches!(t, DataType::Json | DataType::Jsonb) {
                return Err(SqlError::unsupported(format!(
                    "an index on column \"{}\" of type {}",
                    self.def.columns[c].name,
                    t.sql_name()
                )));
            }
        }
        let name = match u.name {
            Some(n) => {
                if self.relation_taken(&n) {
                    return Err(walden_engine::EngineError::RelationExists(n).into());
                }
                self.check_constraint_name_free(&n)?;
                n
            }
            None => {
                let names: Vec<String> = cols
                    .iter()
                    .map(|&c| self.def.columns[c].name.clone())
                    .collect();
                index_ddl::choose_name(self.table(), &names, "key", &|n| {
                    self.relation_taken(n) || self.constraint_names().iter().any(|c| c == n)
                })
            }
        };
        self.def.indexes.push(IndexDef {
            id: 0,
            name,
            columns: cols,
            unique: true,
            constraint: true,
        });
        Ok(())
    }

    fn add_checks(&mut self, p: &mut Planner<'_>, checks: Vec<Declared>) -> Result<()> {
        if checks.is_empty() {
            return Ok(());
        }
        let mut taken = constraints::names_in_use(self.db);
        taken.extend(self.constraint_names());
        for d in &checks {
            if let Some(n) = &d.name {
                self.check_constraint_name_free(n)?;
            }
        }
        let table = self.def.name.clone();
        let new = constraints::declare(p, &table, &self.def.columns, checks, taken)?;
        for c in new {
            self.new_checks.push(c.name.clone());
            self.def.checks.push(c);
        }
        Ok(())
    }

    fn drop_constraint(&mut self, name: &str, if_exists: bool) -> Result<()> {
        if !self.def.primary_key.is_empty() && self.def.pkey_name() == name {
            // The columns stay NOT NULL, as in PostgreSQL.
            self.def.primary_key.clear();
            self.def.pk_name = None;
            return Ok(());
        }
        if let Some(i) = self
            .def
            .indexes
            .iter()
            .position(|ix| ix.constraint && ix.name == name)
        {
            self.def.indexes.remove(i);
            return Ok(());
        }
        if let Some(i) = self.def.checks.iter().position(|c| c.name == name) {
            self.def.checks.remove(i);
            return Ok(());
        }
        let m = format!(
            "constraint \"{name}\" of relation \"{}\" does not exist",
            self.table()
        );
        if if_exists {
            self.notices.push(format!("{m}, skipping"));
            return Ok(());
        }
        Err(err(ErrorKind::UndefinedObject, m))
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

    fn rename_constraint(&mut self, old: &str, new: &str) -> Result<()> {
        let exists = self.constraint_names().iter().any(|n| n == old);
        if !exists {
            return Err(err(
                ErrorKind::UndefinedObject,
                format!(
                    "constraint \"{old}\" for table \"{}\" does not exist",
                    self.table()
                ),
            ));
        }
        self.check_constraint_name_free(new)?;
        let is_index = !self.def.primary_key.is_empty() && self.def.pkey_name() == old
            || self.def.indexes.iter().any(|ix| ix.name == old);
        if is_index && self.relation_taken(new) {
            return Err(walden_engine::EngineError::RelationExists(new.to_string()).into());
        }
        if !self.def.primary_key.is_empty() && self.def.pkey_name() == old {
            let default = format!("{}_pkey", self.def.name);
            self.def.pk_name = (new != default).then(|| new.to_string());
        } else if let Some(ix) = self.def.indexes.iter_mut().find(|ix| ix.name == old) {
            ix.name = new.to_string();
        } else if let Some(c) = self.def.checks.iter_mut().find(|c| c.name == old) {
            c.name = new.to_string();
        }
        Ok(())
    }

    /// Validates the rows against the new definition and returns the
    /// change (`None` if nothing changes).
    fn finish(&mut self, p: &mut Planner<'_>) -> Result<Option<Alteration>> {
        let identity = self.src.len() == self.old.def.columns.len()
            && self
                .src
                .iter()
                .enumerate()
                .all(|(i, s)| matches!(s, ColumnSource::Old(j) if *j == i));
        if identity && self.def == self.old.def {
            return Ok(None);
        }
        // A new primary key's duplicates are reported before its nulls, as
        // PostgreSQL builds the index first.
        if !self.def.primary_key.is_empty() && self.def.primary_key != self.old.def.primary_key {
            let n = self.nrows();
            let pk = self.def.primary_key.clone();
            let mut seen = std::collections::HashSet::new();
            for r in 0..n {
                let row = self.row(r);
                let key: Vec<Value> = pk.iter().map(|&c| row[c].clone()).collect();
                if !key.iter().any(Value::is_null) && !seen.insert(key.clone()) {
                    return Err(walden_engine::EngineError::UniqueBuildFailed(Box::new(
                        walden_engine::KeyConflict {
                            table: self.def.name.clone(),
                            constraint: self.def.pkey_name(),
                            columns: self.def.column_list(&pk),
                            key: key
                                .iter()
                                .map(|v| match v {
                                    Value::Null => "null".to_string(),
                                    v => v.to_string(),
                                })
                                .collect::<Vec<_>>()
                                .join(", "),
                        },
                    ))
                    .into());
                }
            }
        }
        // NOT NULL where the values may hold nulls (a new constraint or
        // new values).
        let unchecked: Vec<usize> = (0..self.def.columns.len())
            .filter(|&i| {
                !self.def.columns[i].nullable
                    && !matches!(self.src[i], ColumnSource::Old(j)
                        if !self.old.def.columns[j].nullable)
            })
            .collect();
        let n = if unchecked.is_empty() {
            0
        } else {
            self.nrows()
        };
        for i in unchecked {
            let c = &self.def.columns[i];
            if (0..n).any(|r| self.value(r, i).is_null()) {
                return Err(err(
                    ErrorKind::NotNullViolation,
                    format!(
                        "column \"{}\" of relation \"{}\" contains null values",
                        c.name, self.def.name
                    ),
                )
                .with_fields(ErrorFields {
                    table: Some(self.def.name.clone()),
                    column: Some(c.name.clone()),
                    ..Default::default()
                }));
            }
        }
        let scope = constraints::scope_of(&self.def.name, &self.def.columns);
        let mut checks = Vec::new();
        for c in &self.def.checks {
            if self.retyped || self.new_checks.contains(&c.name) {
                let e = constraints::parse_stored(&c.expr)?;
                checks.push((c.name.clone(), constraints::compile_check(p, &scope, &e)?));
            }
        }
        checks.sort_by(|a, b| a.0.cmp(&b.0));
        if !checks.is_empty() {
            for r in 0..self.nrows() {
                let row = self.row(r);
                for (name, x) in &checks {
                    if let Value::Bool(false) = x.eval(&row, self.env)? {
                        return Err(err(
                            ErrorKind::CheckViolation,
                            format!(
                                "check constraint \"{name}\" of relation \"{}\" is violated by some row",
                                self.def.name
                            ),
                        )
                        .with_fields(ErrorFields {
                            table: Some(self.def.name.clone()),
                            constraint: Some(name.clone()),
                            ..Default::default()
                        }));
                    }
                }
            }
        }
        Ok(Some(Alteration {
            def: self.def.clone(),
            rewrite: (!identity).then(|| self.src.clone()),
        }))
    }
}

/// The columns (positions) a stored CHECK expression uses.
fn check_columns(p: &mut Planner<'_>, def: &TableDef, text: &str) -> Result<Vec<usize>> {
    let scope = constraints::scope_of(&def.name, &def.columns);
    let e = constraints::parse_stored(text)?;
    let x = constraints::compile_check(p, &scope, &e)?;
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
            T::SmallInt | T::Int | T::BigInt | T::Real | T::Double | T::Decimal { .. }
        )
    };
    let text = |t: &DataType| matches!(t, T::Text | T::Varchar(_) | T::Char(_));
    let datetime = |t: &DataType| matches!(t, T::Date | T::Timestamp | T::TimestampTz);
    std::mem::discriminant(from) == std::mem::discriminant(to)
        || text(to)
        || numeric(from) && numeric(to)
        || datetime(from) && datetime(to)
        || matches!(from, T::Timestamp | T::TimestampTz | T::Interval) && matches!(to, T::Time)
        || matches!(from, T::Time) && matches!(to, T::Interval)
        || matches!(from, T::Json | T::Jsonb) && matches!(to, T::Json | T::Jsonb)
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

/// Parses an `ALTER TABLE` statement. What sqlparser does not take is
/// looked at again: T-SQL's `ALTER COLUMN c type [NULL | NOT NULL]` is
/// rewritten to PostgreSQL's form, and a PostgreSQL clause Walden does not
/// do is refused naming it (rather than reported as a syntax error).
pub(crate) fn parse(sql: &str) -> Result<ast::Statement> {
    let first = match crate::front::parse_sql(sql) {
        Ok(s) => return Ok(s),
        Err(e) => e,
    };
    let words = words(sql);
    if let Some(pg) = tsql_alter_column(&words) {
        return crate::front::parse_sql(&pg);
    }
    if let Some(clause) = unparsed_clause(&words) {
        return Err(SqlError::unsupported(format!("ALTER TABLE ... {clause}")));
    }
    Err(first)
}

/// The statement's tokens, without whitespace; `[x]` and `"x"` become
/// `"x"`.
fn words(sql: &str) -> Vec<String> {
    use sqlparser::tokenizer::{Token, Tokenizer};
    let dialect = sqlparser::dialect::MsSqlDialect {};
    let Ok(tokens) = Tokenizer::new(&dialect, sql).tokenize() else {
        return Vec::new();
    };
    tokens
        .into_iter()
        .filter(|t| !matches!(t, Token::Whitespace(_) | Token::SemiColon))
        .map(|t| match t {
            Token::Word(w) if w.quote_style.is_some() => {
                format!("\"{}\"", w.value.replace('"', "\"\""))
            }
            other => other.to_string(),
        })
        .collect()
}

fn is(w: &str, kw: &str) -> bool {
    w.eq_ignore_ascii_case(kw)
}

/// `ALTER TABLE t ALTER COLUMN c type [NULL | NOT NULL]` (SQL Server): the
/// type changes as SQL Server converts (an explicit conversion), and the
/// column becomes NOT NULL or, without either word, nullable, as there.
fn tsql_alter_column(w: &[String]) -> Option<String> {
    if w.len() < 7 || !is(&w[0], "ALTER") || !is(&w[1], "TABLE") {
        return None;
    }
    let mut i = 3;
    let mut table = w[2].clone();
    while w.get(i).map(String::as_str) == Some(".") {
        table = format!("{table}.{}", w.get(i + 1)?);
        i += 2;
    }
    if !is(w.get(i)?, "ALTER") || !is(w.get(i + 1)?, "COLUMN") {
        return None;
    }
    let col = w.get(i + 2)?;
    let mut ty: &[String] = &w[i + 3..];
    let mut nullability = "DROP NOT NULL";
    if ty.len() >= 2 && is(&ty[ty.len() - 2], "NOT") && is(&ty[ty.len() - 1], "NULL") {
        nullability = "SET NOT NULL";
        ty = &ty[..ty.len() - 2];
    } else if ty.last().is_some_and(|t| is(t, "NULL")) {
        ty = &ty[..ty.len() - 1];
    }
    if ty.is_empty()
        || ty.iter().any(|t| {
            ["SET", "DROP", "TYPE", "ADD", "COLLATE"]
                .iter()
                .any(|k| is(t, k))
        })
    {
        return None;
    }
    let ty = ty.join(" ").replace(" ( ", "(").replace(" )", ")");
    Some(format!(
        "ALTER TABLE {table} ALTER COLUMN {col} TYPE {ty} USING CAST({col} AS {ty}), \
         ALTER COLUMN {col} {nullability}"
    ))
}

/// The PostgreSQL ALTER TABLE clause in `w` that sqlparser does not parse
/// (and Walden does not do), if any.
fn unparsed_clause(w: &[String]) -> Option<String> {
    const CLAUSES: &[&[&str]] = &[
        &["SET", "SCHEMA"],
        &["SET", "TABLESPACE"],
        &["SET", "ACCESS", "METHOD"],
        &["SET", "WITHOUT", "CLUSTER"],
        &["SET", "WITHOUT", "OIDS"],
        &["SET", "STATISTICS"],
        &["SET", "STORAGE"],
        &["SET", "COMPRESSION"],
        &["SET", "GENERATED"],
        &["SET", "("],
        &["RESET", "("],
        &["CLUSTER", "ON"],
        &["NO", "INHERIT"],
        &["INHERIT"],
        &["NOT", "OF"],
        &["OF"],
        &["ALTER", "CONSTRAINT"],
        &["ATTACH", "PARTITION"],
        &["DETACH", "PARTITION"],
        &["DROP", "IDENTITY"],
        &["ADD", "GENERATED"],
        &["RESTART"],
        &["VALIDATE", "CONSTRAINT"],
        &["DISABLE"],
        &["ENABLE"],
        &["REPLICA", "IDENTITY"],
        &["OWNER", "TO"],
        &["USING", "INDEX"],
        &["EXCLUDE"],
    ];
    (3..w.len()).find_map(|i| {
        CLAUSES.iter().find_map(|c| {
            let hit = c
                .iter()
                .enumerate()
                .all(|(k, kw)| w.get(i + k).is_some_and(|x| is(x, kw)));
            hit.then(|| c.join(" ").replace(" (", " (...)"))
        })
    })
}

/// T-SQL's `sp_rename 'table', 'new'` and `sp_rename 'table.column', 'new',
/// 'COLUMN'`, as the ALTER TABLE they amount to. Other object types (an
/// index, a constraint, a user type) are refused.
pub(crate) fn sp_rename(args: &[String]) -> Result<ast::Statement> {
    let (Some(obj), Some(new)) = (args.first(), args.get(1)) else {
        return Err(SqlError::syntax(
            "sp_rename needs the object's name and its new name",
        ));
    };
    let ident = |s: &str| {
        let s = s.trim().trim_start_matches('[').trim_end_matches(']');
        let plain = !s.is_empty()
            && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !s.starts_with(|c: char| c.is_ascii_digit());
        if plain {
            s.to_string()
        } else {
            format!("\"{}\"", s.replace('"', "\"\""))
        }
    };
    let parts: Vec<&str> = obj.split('.').collect();
    let sql = match args.get(2).map(|k| k.to_ascii_uppercase()) {
        Some(k) if k == "COLUMN" => {
            let [.., table, column] = parts.as_slice() else {
                return Err(SqlError::syntax(
                    "sp_rename of a column needs 'table.column'",
                ));
            };
            format!(
                "ALTER TABLE {} RENAME COLUMN {} TO {}",
                ident(table),
                ident(column),
                ident(new)
            )
        }
        None => format!(
            "ALTER TABLE {} RENAME TO {}",
            ident(parts.last().copied().unwrap_or_default()),
            ident(new)
        ),
        Some(k) if k == "OBJECT" => format!(
            "ALTER TABLE {} RENAME TO {}",
            ident(parts.last().copied().unwrap_or_default()),
            ident(new)
        ),
        Some(other) => {
            return Err(SqlError::unsupported(format!(
                "sp_rename of an object of type '{other}'"
            )))
        }
    };
    crate::front::parse_sql(&sql)
}
