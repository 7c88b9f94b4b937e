//! Session-scoped temporary tables (`CREATE TEMP TABLE`, T-SQL's `#t`,
//! `SELECT ... INTO #t`). A temporary table is an ordinary engine table
//! whose name is `pg_temp_N.name`, N the creating session's id: as the
//! catalog keys relations by one name, the prefix keeps two sessions' `t`
//! apart and from a permanent `t`. Each statement is rewritten before it runs:
//! a name that refers to one of the session's temporary tables (unqualified,
//! `pg_temp.t` or `pg_temp_N.t`) becomes the prefixed name, so the planner,
//! DML and DDL need not know. The session drops its tables when it ends;
//! startup drops any left by a crash (see docs/design.md, "Temporary tables").

use crate::error::{ErrorKind, Result, SqlError};
use sqlparser::ast::{self, ObjectName, Statement, VisitMut, VisitorMut};
use std::collections::{BTreeMap, BTreeSet};
use std::ops::ControlFlow;

use crate::types::temp_names::PREFIX;
pub use crate::types::temp_names::{internal, split_temp};

/// What a temporary table's `ON COMMIT` clause asks of each commit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OnCommit {
    #[default]
    PreserveRows,
    DeleteRows,
    Drop,
}

/// The temporary tables a session has created (folded names). A name stays
/// until the session ends; whether the table still exists (a rolled back
/// CREATE, a DROP, ON COMMIT DROP) is asked of the catalog each time.
#[derive(Debug, Default)]
pub struct TempTables {
    created: BTreeMap<String, OnCommit>,
}

impl TempTables {
    pub fn is_empty(&self) -> bool {
        self.created.is_empty()
    }

    pub fn names(&self) -> impl Iterator<Item = &String> {
        self.created.keys()
    }
}

/// A table `rewrite` found the statement creating.
pub struct Created {
    pub name: String,
    pub on_commit: OnCommit,
}

/// What a `CREATE TABLE` or `SELECT ... INTO` target says about temporariness.
fn temp_target(name: &ObjectName, temporary: bool, spid: u32) -> Result<Option<String>> {
    let parts = idents(name);
    let Some(last) = parts.last() else {
        return Ok(None);
    };
    if last.value.starts_with("##") {
        return Err(SqlError::unsupported(format!(
            "global temporary table {} (## tables)",
            last.value
        )));
    }
    let schema = (parts.len() >= 2).then(|| crate::expr::fold_ident(parts[parts.len() - 2]));
    let temp_schema = schema
        .as_deref()
        .is_some_and(|s| is_own_temp_schema(s, spid));
    let hash = last.value.starts_with('#');
    if !(temporary || hash || temp_schema) {
        return Ok(None);
    }
    if let Some(s) = &schema {
        if !temp_schema && !(hash && (s == "dbo" || s.is_empty())) {
            return Err(SqlError::new(
                ErrorKind::InvalidTableDefinition,
                "cannot create temporary relation in non-temporary schema",
            ));
        }
    }
    Ok(Some(crate::expr::fold_ident(last)))
}

fn is_own_temp_schema(s: &str, spid: u32) -> bool {
    s == "pg_temp" || s.strip_prefix(PREFIX) == Some(&spid.to_string())
}

fn idents(name: &ObjectName) -> Vec<&ast::Ident> {
    name.0.iter().filter_map(|p| p.as_ident()).collect()
}

fn single(value: String) -> ObjectName {
    ObjectName::from(vec![ast::Ident::with_quote('"', value)])
}

/// Rewrites names in `stmt` that refer to the session's temporary tables.
/// `exists` says whether an engine name is a table the statement can see.
/// Returns the folded name of a temporary table the statement creates.
pub fn rewrite(
    stmt: &mut Statement,
    temps: &TempTables,
    spid: u32,
    exists: &dyn Fn(&str) -> bool,
) -> Result<Option<Created>> {
    let mut r = Resolver {
        temps,
        spid,
        exists,
        ctes: BTreeSet::new(),
    };
    let mut created: Option<Created> = None;
    // A WITH query of the same name hides a table (scopes are not
    // followed: a name any WITH of the statement uses is left alone).
    let _ = stmt.visit(&mut CteNames(&mut r.ctes));
    match stmt {
        Statement::CreateTable(ct) => {
            if let Some(name) = temp_target(&ct.name, ct.temporary, spid)? {
                ct.name = single(internal(spid, &name));
                ct.temporary = false;
                ct.global = None;
                let on_commit = match ct.on_commit.take() {
                    None | Some(ast::OnCommit::PreserveRows) => OnCommit::PreserveRows,
                    Some(ast::OnCommit::DeleteRows) => OnCommit::DeleteRows,
                    Some(ast::OnCommit::Drop) => OnCommit::Drop,
                };
                created = Some(Created { name, on_commit });
            } else {
                if ct.on_commit.is_some() {
                    return Err(SqlError::new(
                        ErrorKind::InvalidTableDefinition,
                        "ON COMMIT can only be used on temporary tables",
                    ));
                }
                reserved(&ct.name)?;
            }
            let permanent = created.is_none();
            // A temporary table's foreign key to itself (`parent int
            // REFERENCES tree`) names the table being created.
            let own = created.as_ref().map(|c| c.name.clone());
            let names_own = |target: &ObjectName| match (&own, idents(target).as_slice()) {
                (Some(o), [one]) => crate::expr::fold_ident(one) == *o,
                (Some(o), [schema, one]) => {
                    is_own_temp_schema(&crate::expr::fold_ident(schema), spid)
                        && crate::expr::fold_ident(one) == *o
                }
                _ => false,
            };
            let fk_targets = ct
                .columns
                .iter_mut()
                .flat_map(|c| c.options.iter_mut())
                .filter_map(|o| match &mut o.option {
                    ast::ColumnOption::ForeignKey(fk) => Some(&mut fk.foreign_table),
                    _ => None,
                })
                .chain(ct.constraints.iter_mut().filter_map(|c| match c {
                    ast::TableConstraint::ForeignKey(fk) => Some(&mut fk.foreign_table),
                    _ => None,
                }));
            for target in fk_targets {
                if names_own(target) {
                    *target = single(internal(spid, own.as_deref().unwrap_or_default()));
                    continue;
                }
                if let Some(to) = r.map(target) {
                    if permanent {
                        return Err(permanent_references_temp());
                    }
                    *target = single(to);
                }
            }
        }
        Statement::Query(q) => {
            let target = match crate::catalog::create_as::select_into(q) {
                Some(t) => Some(t?.0),
                None => None,
            };
            if let (Some(target), ast::SetExpr::Select(s)) = (target, q.body.as_mut()) {
                if let Some(into) = s.into.as_mut() {
                    if let Some(name) = temp_target(&target, into.temporary, spid)? {
                        let to = ast::Ident::with_quote('"', internal(spid, &name));
                        into.targets = vec![ast::Expr::Identifier(to)];
                        into.temporary = false;
                        created = Some(Created {
                            name,
                            on_commit: OnCommit::PreserveRows,
                        });
                    } else {
                        reserved(&target)?;
                    }
                }
            }
        }
        // An index of a temporary table is in the session's schema too.
        Statement::CreateIndex(ci) if r.map(&ci.table_name).is_some() => {
            if let Some(n) = ci.name.as_mut() {
                if let [one] = idents(n).as_slice() {
                    let name = crate::expr::fold_ident(one);
                    *n = single(internal(spid, &name));
                    created = Some(Created {
                        name,
                        on_commit: OnCommit::PreserveRows,
                    });
                }
            }
        }
        Statement::Drop {
            object_type: ast::ObjectType::Table | ast::ObjectType::Index,
            names,
            ..
        } => {
            for n in names.iter_mut() {
                if let Some(to) = r.map(n) {
                    *n = single(to);
                }
            }
        }
        Statement::AlterTable(at) => {
            if r.map(&at.name).is_some() {
                for op in &mut at.operations {
                    match op {
                        ast::AlterTableOperation::RenameTable { .. } => {
                            return Err(SqlError::unsupported(
                                "ALTER TABLE ... RENAME of a temporary table",
                            ))
                        }
                        ast::AlterTableOperation::AddConstraint {
                            constraint: ast::TableConstraint::ForeignKey(fk),
                            ..
                        } => {
                            if let Some(to) = r.map(&fk.foreign_table) {
                                fk.foreign_table = single(to);
                            }
                        }
                        _ => {}
                    }
                }
            } else {
                for op in &at.operations {
                    if let ast::AlterTableOperation::AddConstraint {
                        constraint: ast::TableConstraint::ForeignKey(fk),
                        ..
                    } = op
                    {
                        if r.map(&fk.foreign_table).is_some() {
                            return Err(permanent_references_temp());
                        }
                    }
                }
            }
        }
        Statement::Copy {
            source: ast::CopySource::Table { table_name, .. },
            ..
        } => {
            if let Some(to) = r.map(table_name) {
                *table_name = single(to);
            }
        }
        // T-SQL's `OUTPUT ... INTO #t`.
        Statement::Insert(ast::Insert { output, .. })
        | Statement::Update(ast::Update { output, .. })
        | Statement::Delete(ast::Delete { output, .. }) => {
            if let Some(ast::OutputClause::Output {
                into_table: Some(into),
                ..
            }) = output.as_mut()
            {
                for t in into.targets.iter_mut() {
                    match t {
                        ast::Expr::Identifier(i) => {
                            if let Some(to) = r.map(&ObjectName::from(vec![i.clone()])) {
                                *i = ast::Ident::with_quote('"', to);
                            }
                        }
                        ast::Expr::Function(f) => {
                            if let Some(to) = r.map(&f.name) {
                                f.name = single(to);
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
        _ => {}
    }
    if created.is_some() && temps.is_empty() {
        // Nothing else in the statement can name a temporary table yet
        // but the one it creates (CREATE TABLE AS / SELECT INTO read only
        // permanent ones then).
        return Ok(created);
    }
    // T-SQL's `DELETE t FROM t JOIN ...` names a FROM item, not a table;
    // a permanent table or view being created goes where the path says,
    // whatever temporary table has its name.
    let placeholder = || ObjectName::from(vec![]);
    let kept = match stmt {
        Statement::Delete(d) => Kept::Tables(std::mem::take(&mut d.tables)),
        Statement::CreateTable(ct) => Kept::Name(std::mem::replace(&mut ct.name, placeholder())),
        Statement::CreateView(cv) => Kept::Name(std::mem::replace(&mut cv.name, placeholder())),
        _ => Kept::Nothing,
    };
    let _ = stmt.visit(&mut r);
    match (kept, stmt) {
        (Kept::Tables(t), Statement::Delete(d)) => d.tables = t,
        (Kept::Name(n), Statement::CreateTable(ct)) => ct.name = n,
        (Kept::Name(n), Statement::CreateView(cv)) => cv.name = n,
        _ => {}
    }
    Ok(created)
}

enum Kept {
    Nothing,
    Tables(Vec<ObjectName>),
    Name(ObjectName),
}

/// Refuses a permanent table named as temporary ones are in the engine.
fn reserved(name: &ObjectName) -> Result<()> {
    match idents(name).last() {
        Some(last) if split_temp(&crate::expr::fold_ident(last)).is_some() => Err(SqlError::new(
            ErrorKind::ReservedName,
            format!(
                "the name \"{}\" is reserved for temporary tables",
                last.value
            ),
        )),
        _ => Ok(()),
    }
}

/// PostgreSQL's refusal of a permanent table's foreign key to a temporary one.
fn permanent_references_temp() -> SqlError {
    SqlError::new(
        ErrorKind::InvalidTableDefinition,
        "constraints on permanent tables may reference only permanent tables",
    )
}

struct CteNames<'a>(&'a mut BTreeSet<String>);

impl VisitorMut for CteNames<'_> {
    type Break = ();
    fn pre_visit_query(&mut self, q: &mut ast::Query) -> ControlFlow<()> {
        if let Some(w) = &q.with {
            for c in &w.cte_tables {
                self.0.insert(crate::expr::fold_ident(&c.alias.name));
            }
        }
        ControlFlow::Continue(())
    }
}

struct Resolver<'a> {
    temps: &'a TempTables,
    spid: u32,
    exists: &'a dyn Fn(&str) -> bool,
    ctes: BTreeSet<String>,
}

impl Resolver<'_> {
    /// The engine name `name` stands for when it is a temporary table.
    fn map(&self, name: &ObjectName) -> Option<String> {
        let parts = idents(name);
        if parts.len() != name.0.len() {
            return None;
        }
        match parts.as_slice() {
            [one] => {
                let n = crate::expr::fold_ident(one);
                if self.ctes.contains(&n) || !self.temps.created.contains_key(&n) {
                    return None;
                }
                let e = internal(self.spid, &n);
                (self.exists)(&e).then_some(e)
            }
            [schema, rel] if is_own_temp_schema(&crate::expr::fold_ident(schema), self.spid) => {
                Some(internal(self.spid, &crate::expr::fold_ident(rel)))
            }
            _ => None,
        }
    }
}

impl VisitorMut for Resolver<'_> {
    type Break = ();

    fn pre_visit_table_factor(&mut self, f: &mut ast::TableFactor) -> ControlFlow<()> {
        // The written name stays the FROM item's label (`t.a`).
        if let ast::TableFactor::Table {
            name,
            alias: alias @ None,
            args: None,
            ..
        } = f
        {
            if self.map(name).is_some() {
                if let Some(last) = idents(name).last() {
                    *alias = Some(ast::TableAlias {
                        explicit: true,
                        name: (*last).clone(),
                        columns: vec![],
                        at: None,
                    });
                }
            }
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_statement(&mut self, s: &mut Statement) -> ControlFlow<()> {
        if let Statement::Insert(ins) = s {
            if let ast::TableObject::TableName(name) = &ins.table {
                if ins.table_alias.is_none() && self.map(name).is_some() {
                    if let Some(last) = idents(name).last() {
                        ins.table_alias = Some(ast::TableAliasWithoutColumns {
                            explicit: true,
                            alias: (*last).clone(),
                        });
                    }
                }
            }
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_relation(&mut self, name: &mut ObjectName) -> ControlFlow<()> {
        if let Some(to) = self.map(name) {
            *name = single(to);
        }
        ControlFlow::Continue(())
    }
}

impl super::SqlSession {
    /// The engine name of a relation a command names by parts (ANALYZE's
    /// targets), when it is one of the session's temporary tables
    /// (unqualified, `pg_temp.t` or `pg_temp_N.t`).
    pub(super) fn temp_engine_name(&self, parts: &[String]) -> Option<String> {
        let name = match parts {
            [n] => n,
            [s, n] if is_own_temp_schema(s, self.session.id) => n,
            _ => return None,
        };
        if !self.temps.created.contains_key(name) {
            return None;
        }
        let engine = internal(self.session.id, name);
        let tx = self.tx.as_ref().map(|t| t.id());
        self.db.table_as(tx, &engine).is_ok().then_some(engine)
    }

    /// `cmd` with its names of temporary tables resolved (itself when it
    /// names none), registering a temporary table it creates.
    pub(super) fn temp_rewrite(
        &mut self,
        cmd: &std::sync::Arc<crate::front::Command>,
    ) -> Result<std::sync::Arc<crate::front::Command>> {
        use crate::front::Command;
        // A query creates a table only with `SELECT ... INTO`.
        let creates = |s: &Statement| match s {
            Statement::CreateTable(_) => true,
            Statement::Query(q) => {
                matches!(q.body.as_ref(), ast::SetExpr::Select(s) if s.into.is_some())
            }
            _ => false,
        };
        let dml = |s: &Statement| {
            matches!(
                s,
                Statement::Query(_)
                    | Statement::Insert(_)
                    | Statement::Update(_)
                    | Statement::Delete(_)
                    | Statement::Merge(_)
            )
        };
        // Anything else (DDL, COMMIT, ROLLBACK) may change which temporary
        // tables exist, whether or not the catalog version moves yet.
        if !matches!(cmd.as_ref(), Command::Sql(s) | Command::DeleteTop(_, s) if dml(s)) {
            self.temp_rewrites.clear();
        }
        let stmt = match cmd.as_ref() {
            Command::Sql(s) | Command::DeleteTop(_, s) => s,
            Command::Declare(_) if !self.temps.is_empty() => {
                return self.rewrite_cursor(cmd);
            }
            _ => return Ok(cmd.clone()),
        };
        if self.temps.is_empty() && !creates(stmt) {
            return Ok(cmd.clone());
        }
        let key = std::sync::Arc::as_ptr(cmd) as usize;
        let version = self.db.catalog_version();
        let tx = self.tx.as_ref().map(|t| t.id());
        if let Some(m) = self.temp_rewrites.get(&key) {
            if m.version == version && m.tx == tx {
                return Ok(m.rewritten.clone());
            }
        }
        let mut new = stmt.as_ref().clone();
        let spid = self.session.id;
        let db = self.db.clone();
        let exists = move |n: &str| db.table_as(tx, n).is_ok() || db.index_table(n).is_some();
        let created = rewrite(&mut new, &self.temps, spid, &exists)?;
        if let Some(c) = created {
            self.temps.created.insert(c.name, c.on_commit);
            self.temp_rewrites.clear();
        }
        if new == **stmt {
            return Ok(cmd.clone());
        }
        if !dml(stmt) {
            return Ok(std::sync::Arc::new(Command::Sql(Box::new(new))));
        }
        let rewritten = std::sync::Arc::new(match cmd.as_ref() {
            Command::DeleteTop(n, _) => Command::DeleteTop(*n, Box::new(new)),
            _ => Command::Sql(Box::new(new)),
        });
        if self.temp_rewrites.len() >= 512 {
            self.temp_rewrites.clear();
        }
        self.temp_rewrites.insert(
            key,
            super::TempRewrite {
                _original: cmd.clone(),
                rewritten: rewritten.clone(),
                version,
                tx,
            },
        );
        Ok(rewritten)
    }

    fn rewrite_cursor(
        &mut self,
        cmd: &std::sync::Arc<crate::front::Command>,
    ) -> Result<std::sync::Arc<crate::front::Command>> {
        let crate::front::Command::Declare(d) = cmd.as_ref() else {
            return Ok(cmd.clone());
        };
        let mut st = Statement::Query(d.query.clone());
        let tx = self.tx.as_ref().map(|t| t.id());
        let db = self.db.clone();
        let exists = move |n: &str| db.table_as(tx, n).is_ok();
        rewrite(&mut st, &self.temps, self.session.id, &exists)?;
        let Statement::Query(q) = st else {
            return Ok(cmd.clone());
        };
        let mut d = d.clone();
        d.query = q;
        Ok(std::sync::Arc::new(crate::front::Command::Declare(d)))
    }

    /// Drops the session's temporary tables (at its end): what an open
    /// transaction did is rolled back first.
    pub(super) fn drop_temp_tables(&mut self) {
        if self.temps.is_empty() {
            return;
        }
        drop(self.tx.take());
        let names: Vec<ObjectName> = self
            .temps
            .names()
            .map(|n| internal(self.session.id, n))
            .filter(|n| self.db.table_as(None, n).is_ok())
            .map(single)
            .collect();
        self.temps.created.clear();
        self.temp_rewrites.clear();
        if names.is_empty() {
            return;
        }
        let mut tx = self.db.begin(&self.session);
        let r = crate::catalog::ddl::drop(
            &self.db,
            &mut tx,
            &ast::ObjectType::Table,
            true,
            &names,
            true,
        )
        .and_then(|_| {
            tx.commit(walden_engine::CommitRequest::Default)
                .map_err(SqlError::from)
        });
        if let Err(e) = r {
            // Startup drops what is left (see `drop_leftovers`).
            tracing::warn!("dropping temporary tables at session end: {e}");
        }
    }
}

impl super::SqlSession {
    /// What the session's temporary tables' `ON COMMIT` asks, done in `tx`
    /// just before it commits.
    pub(super) fn temp_on_commit(&self, tx: &mut walden_engine::Transaction) -> Result<()> {
        for (name, action) in &self.temps.created {
            if *action == OnCommit::PreserveRows {
                continue;
            }
            let e = internal(self.session.id, name);
            if self.db.table_as(Some(tx.id()), &e).is_err() {
                continue;
            }
            match action {
                OnCommit::DeleteRows => tx.truncate(&e)?,
                _ => {
                    crate::catalog::ddl::drop(
                        &self.db,
                        tx,
                        &ast::ObjectType::Table,
                        true,
                        &[single(e)],
                        true,
                    )?;
                }
            }
        }
        Ok(())
    }
}

/// Drops temporary tables a crash or kill left behind: no session owns
/// them after a restart. Run once a primary's databases are open.
pub fn drop_leftovers(
    db: &std::sync::Arc<walden_engine::Database>,
    session: &std::sync::Arc<walden_engine::Session>,
) -> Result<usize> {
    let names: Vec<ObjectName> = db
        .table_names()
        .into_iter()
        .filter(|n| split_temp(n).is_some())
        .map(single)
        .collect();
    if names.is_empty() || db.is_secondary() {
        return Ok(0);
    }
    let mut tx = db.begin(session);
    crate::catalog::ddl::drop(db, &mut tx, &ast::ObjectType::Table, true, &names, true)?;
    tx.commit(walden_engine::CommitRequest::Default)?;
    Ok(names.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(sql: &str, temps: &[&str]) -> Result<(String, Option<String>)> {
        let mut st = crate::front::parse_sql(sql)?;
        let t = TempTables {
            created: temps
                .iter()
                .map(|s| (s.to_string(), OnCommit::PreserveRows))
                .collect(),
        };
        let c = rewrite(&mut st, &t, 7, &|_| true)?;
        Ok((st.to_string(), c.map(|c| c.name)))
    }

    #[test]
    fn creation_takes_the_prefixed_name() {
        let (s, c) = run("CREATE TEMP TABLE t (a int)", &[]).unwrap();
        assert_eq!(c.as_deref(), Some("t"));
        assert!(s.starts_with("CREATE TABLE \"pg_temp_7.t\""), "{s}");
        let (s, c) = run("CREATE TABLE #t (a int)", &[]).unwrap();
        assert_eq!(c.as_deref(), Some("#t"));
        assert!(s.contains("\"pg_temp_7.#t\""), "{s}");
        let (_, c) = run("CREATE TABLE t (a int)", &[]).unwrap();
        assert_eq!(c, None);
        assert!(run("CREATE TABLE ##g (a int)", &[]).is_err());
        assert!(run("CREATE TEMP TABLE public.t (a int)", &[]).is_err());
    }

    #[test]
    fn references_resolve_to_the_session_table() {
        let (s, _) = run("SELECT t.a FROM t JOIN u ON t.a = u.a", &["t"]).unwrap();
        assert!(s.contains("FROM \"pg_temp_7.t\" AS t JOIN u"), "{s}");
        let (s, _) = run("SELECT * FROM public.t, pg_temp.t", &["t"]).unwrap();
        assert!(s.contains("public.t, \"pg_temp_7.t\" AS t"), "{s}");
        let (s, _) = run("WITH t AS (SELECT 1) SELECT * FROM t", &["t"]).unwrap();
        assert!(!s.contains("pg_temp"), "{s}");
        let (s, _) = run("DROP TABLE t, u", &["t"]).unwrap();
        assert_eq!(s, "DROP TABLE \"pg_temp_7.t\", u");
        let (s, _) = run("INSERT INTO t VALUES (1)", &["t"]).unwrap();
        assert!(s.contains("\"pg_temp_7.t\" AS t"), "{s}");
        assert!(run("CREATE TABLE p (a int REFERENCES t)", &["t"]).is_err());
        // A temporary table referencing itself.
        let (s, _) = run(
            "CREATE TEMP TABLE tree (id int PRIMARY KEY, parent int REFERENCES tree (id))",
            &[],
        )
        .unwrap();
        assert!(s.contains("REFERENCES \"pg_temp_7.tree\""), "{s}");
    }
}
