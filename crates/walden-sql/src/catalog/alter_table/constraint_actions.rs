//! ALTER TABLE's constraints: ADD/DROP/RENAME CONSTRAINT (primary key,
//! unique, check; FOREIGN KEY hooks in at `add_constraint`), named as
//! PostgreSQL names them, and the validation of the rows against the new
//! definition before the change is logged (`alter_table.rs` runs it).

use crate::catalog::alter_table::{err, Work};
use crate::catalog::constraints::{self, Declared};
use crate::catalog::index::{self, UniqueSpec};
use crate::error::{ErrorFields, ErrorKind, Result, SqlError};
use crate::expr::fold_ident;
use crate::query::Planner;
use sqlparser::ast;
use walden_engine::{Alteration, ColumnSource, DataType, IndexDef, TableDef, Value};

impl Work<'_> {
    pub(crate) fn add_constraint(
        &mut self,
        p: &mut Planner<'_>,
        c: &ast::TableConstraint,
    ) -> Result<()> {
        use ast::TableConstraint as C;
        match c {
            C::PrimaryKey(pk) => {
                crate::catalog::foreign_keys::refuse_deferrable_key(
                    pk.characteristics.as_ref(),
                    "PRIMARY KEY",
                )?;
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
                let d = crate::catalog::ddl::declared_check(None, ck)?;
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

    pub(crate) fn set_primary_key(&mut self, name: Option<String>, cols: Vec<usize>) -> Result<()> {
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

    pub(crate) fn relation_taken(&self, name: &str) -> bool {
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

    pub(crate) fn constraint_names(&self) -> Vec<String> {
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

    pub(crate) fn check_constraint_name_free(&self, name: &str) -> Result<()> {
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

    pub(crate) fn add_unique(&mut self, u: UniqueSpec) -> Result<()> {
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
                index::choose_name(self.table(), &names, "key", &|n| {
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
            options: Vec::new(),
        });
        Ok(())
    }

    pub(crate) fn add_checks(&mut self, p: &mut Planner<'_>, checks: Vec<Declared>) -> Result<()> {
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

    pub(crate) fn drop_constraint(&mut self, name: &str, if_exists: bool) -> Result<()> {
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

    pub(crate) fn rename_constraint(&mut self, old: &str, new: &str) -> Result<()> {
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
    pub(crate) fn finish(&mut self, p: &mut Planner<'_>) -> Result<Option<Alteration>> {
        let identity = self.src.len() == self.old.def.columns.len()
            && self
                .src
                .iter()
                .enumerate()
                .all(|(i, s)| matches!(s, ColumnSource::Old(j) if *j == i));
        if identity && self.def == self.old.def {
            return Ok(None);
        }
        // NOT NULL where the values may hold nulls (a new constraint or
        // new values), and the CHECKs to validate again.
        let unchecked: Vec<usize> = (0..self.def.columns.len())
            .filter(|&i| {
                !self.def.columns[i].nullable
                    && !matches!(self.src[i], ColumnSource::Old(j)
                        if !self.old.def.columns[j].nullable)
            })
            .collect();
        let scope = crate::dml::checks::scope_of(&self.def.name, &self.def.columns);
        let mut checks = Vec::new();
        for c in &self.def.checks {
            if self.retyped || self.new_checks.contains(&c.name) {
                let e = crate::dml::checks::parse_stored(&c.expr)?;
                checks.push((
                    c.name.clone(),
                    crate::dml::checks::compile_check(p, &scope, &e)?,
                ));
            }
        }
        checks.sort_by(|a, b| a.0.cmp(&b.0));
        if unchecked.is_empty() && checks.is_empty() {
            return Ok(Some(self.alteration(identity)));
        }
        // One pass over the rows, nothing held: which columns hold nulls,
        // and the first row a CHECK fails (or cannot evaluate).
        let mut nulls = vec![false; unchecked.len()];
        let mut failed: Option<SqlError> = None;
        let (name, env) = (self.def.name.clone(), self.env);
        self.each_row(|row| {
            for (k, &i) in unchecked.iter().enumerate() {
                nulls[k] |= row[i].is_null();
            }
            if failed.is_none() && !nulls.iter().any(|n| *n) {
                for (cname, x) in &checks {
                    match x.eval(row, env) {
                        Ok(Value::Bool(false)) => {
                            failed = Some(check_violated(&name, cname));
                            break;
                        }
                        Ok(_) => {}
                        Err(e) => {
                            failed = Some(e);
                            break;
                        }
                    }
                }
            }
            Ok(())
        })?;
        let null_col = unchecked
            .iter()
            .zip(&nulls)
            .find(|(_, n)| **n)
            .map(|(i, _)| *i);
        if null_col.is_none() && failed.is_none() {
            // A new primary key's duplicates are the engine's to find as it
            // builds the re-keyed table (holding it, under the
            // transaction's memory limit).
            return Ok(Some(self.alteration(identity)));
        }
        // A new primary key's duplicates are reported before its nulls, as
        // PostgreSQL builds the index first.
        if !self.def.primary_key.is_empty() && self.def.primary_key != self.old.def.primary_key {
            self.find_duplicate_key()?;
        }
        if let Some(i) = null_col {
            let c = &self.def.columns[i];
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
        match failed {
            Some(e) => Err(e),
            None => Ok(Some(self.alteration(identity))),
        }
    }

    fn alteration(&self, identity: bool) -> Alteration {
        Alteration {
            def: self.def.clone(),
            rewrite: (!identity).then(|| self.src.clone()),
        }
    }

    /// Fails with the first duplicate of the new primary key's values
    /// (rows with a null in them are the NOT NULL check's). Only on the
    /// way to another error: the keys seen are held, charged to the
    /// statement's memory limit.
    fn find_duplicate_key(&mut self) -> Result<()> {
        let pk = self.def.primary_key.clone();
        let env = self.env;
        let mut seen = std::collections::HashSet::new();
        let mut dup: Option<Vec<Value>> = None;
        self.each_row(|row| {
            if dup.is_some() {
                return Ok(());
            }
            let key: Vec<Value> = pk.iter().map(|&c| row[c].clone()).collect();
            if key.iter().any(Value::is_null) {
                return Ok(());
            }
            env.info.mem.charge_row(key.len())?;
            if let Some(k) = seen.replace(key) {
                dup = Some(k);
            }
            Ok(())
        })?;
        let Some(key) = dup else { return Ok(()) };
        Err(
            walden_engine::EngineError::UniqueBuildFailed(Box::new(walden_engine::KeyConflict {
                table: self.def.name.clone(),
                constraint: self.def.pkey_name(),
                columns: self.def.column_list(&pk),
                key: walden_engine::value_list(&key),
            }))
            .into(),
        )
    }
}

fn check_violated(table: &str, name: &str) -> SqlError {
    err(
        ErrorKind::CheckViolation,
        format!("check constraint \"{name}\" of relation \"{table}\" is violated by some row"),
    )
    .with_fields(ErrorFields {
        table: Some(table.to_string()),
        constraint: Some(name.to_string()),
        ..Default::default()
    })
}
