//! INSERT: its target columns, its VALUES or SELECT source, ON CONFLICT,
//! and RETURNING.

use super::*;

fn insert_table(p: &Planner<'_>, ins: &ast::Insert) -> Result<Arc<Table>> {
    match &ins.table {
        ast::TableObject::TableName(n) => target_table(p, n, "INSERT"),
        other => Err(SqlError::unsupported(format!("INSERT INTO {other}"))),
    }
}

enum InsertSource {
    /// Rows of expressions; `None` is DEFAULT.
    Values(Vec<Vec<Option<Expr>>>),
    Query(query::QueryPlan),
    /// Rows handed over when the plan runs (OUTPUT ... INTO's).
    Given(usize),
}

impl InsertSource {
    /// Whether target position `k` is given a value (not DEFAULT) by some row.
    fn given(&self) -> impl Fn(usize) -> bool + '_ {
        move |k| match self {
            InsertSource::Values(rows) => rows.iter().any(|r| matches!(r.get(k), Some(Some(_)))),
            InsertSource::Query(q) => k < q.columns.len(),
            InsertSource::Given(width) => k < *width,
        }
    }
}

fn target_columns(t: &Table, ins: &ast::Insert) -> Result<Vec<usize>> {
    if ins.columns.is_empty() {
        // SQL Server fills a T-SQL IDENTITY column itself: VALUES and
        // SELECT without a column list give the other columns.
        return Ok((0..t.def.columns.len())
            .filter(|&i| !t.def.columns[i].identity.is_some_and(|id| id.tsql))
            .collect());
    }
    ins.columns
        .iter()
        .map(|c| {
            let n = object_last(c);
            t.def.column_index(&n).ok_or_else(|| {
                SqlError::new(
                    ErrorKind::UndefinedColumn,
                    format!("column \"{n}\" of relation \"{}\" does not exist", t.name()),
                )
            })
        })
        .collect()
}

pub(crate) fn is_default_kw(e: &ast::Expr) -> bool {
    matches!(e, ast::Expr::Identifier(id) if id.quote_style.is_none() && id.value.eq_ignore_ascii_case("default"))
}

fn plan_insert_source(
    p: &mut Planner<'_>,
    ins: &ast::Insert,
    t: &Table,
) -> Result<(Vec<usize>, InsertSource)> {
    let cols = target_columns(t, ins)?;
    let Some(src) = &ins.source else {
        // `DEFAULT VALUES`: one row, every column its default.
        if ins.columns.is_empty() {
            return Ok((cols, InsertSource::Values(vec![Vec::new()])));
        }
        return Err(SqlError::unsupported("INSERT without VALUES or SELECT"));
    };
    if let (ast::SetExpr::Values(v), None, None, None) = (
        src.body.as_ref(),
        &src.order_by,
        &src.limit_clause,
        &src.fetch,
    ) {
        let empty = Arc::new(Scope::default());
        let mut rows = Vec::new();
        for r in &v.rows {
            if r.len() > cols.len() {
                return Err(SqlError::syntax(
                    "INSERT has more expressions than target columns",
                ));
            }
            if r.len() < cols.len() && !ins.columns.is_empty() {
                return Err(SqlError::syntax(
                    "INSERT has more target columns than expressions",
                ));
            }
            let mut row = Vec::new();
            for (k, e) in r.iter().enumerate() {
                if is_default_kw(e) {
                    row.push(None);
                    continue;
                }
                let x = match float_literal(e, &t.def.columns[cols[k]].data_type) {
                    Some(f) => Expr::Lit(Value::Float(f)),
                    None => Expr::compile(p, &empty, e)?,
                };
                if let Expr::Param(i) = &x {
                    p.infer_param(*i, t.def.columns[cols[k]].data_type.clone());
                }
                row.push(Some(x));
            }
            rows.push(row);
        }
        return Ok((cols, InsertSource::Values(rows)));
    }
    let plan = query::plan_query(p, src, None)?;
    if plan.columns.len() > cols.len() {
        return Err(SqlError::syntax(
            "INSERT has more expressions than target columns",
        ));
    }
    Ok((cols, InsertSource::Query(plan)))
}

/// A planned INSERT: its table, target columns, source and RETURNING list.
pub(crate) struct InsertPlan {
    pub(super) table: Arc<Table>,
    cols: Vec<usize>,
    /// Target positions whose values are ignored (`OVERRIDING USER VALUE`).
    dropped: Vec<usize>,
    source: InsertSource,
    pub(super) returning: Option<Returning>,
    /// A T-SQL IDENTITY column given a value: allowed only while `SET
    /// IDENTITY_INSERT` is ON for the table (checked when the plan runs).
    explicit_identity: Option<String>,
    checks: Checks,
    /// The table's expression DEFAULTs (evaluated per row).
    defaults: crate::dml::defaults::ExprDefaults,
    on_conflict: Option<Box<OnConflict>>,
    /// A partitioned target: where each row goes.
    routing: Option<Box<super::routing::Routing>>,
    /// A partition named directly: its bound, which each row must meet.
    bound_check: Option<crate::query::partition::Constraint>,
}

impl InsertPlan {
    /// Expressions whose evaluation does not depend on earlier executions
    /// (no subquery with a per-statement result cache), and a plain row source.
    pub(crate) fn reusable(&self) -> bool {
        let values = match &self.source {
            InsertSource::Values(rows) => {
                rows.iter().flatten().flatten().all(|e| !e.has_subquery())
            }
            InsertSource::Query(q) => query::reusable(q),
            InsertSource::Given(_) => true,
        };
        values
            && returning_reusable(&self.returning)
            && self.checks.reusable()
            && self.defaults.reusable()
            && self.on_conflict.as_ref().is_none_or(|oc| oc.reusable())
            && self.routing.is_none()
            && self.bound_check.is_none()
    }
}

impl InsertPlan {
    /// EXPLAIN's node: `Insert on t` over its rows' source.
    pub(crate) fn explain<'p>(
        &'p self,
        b: &mut crate::query::explain::Builder<'p, '_>,
    ) -> crate::query::explain::Node {
        use crate::query::explain::Node;
        let mut n = super::explain::modify("Insert", &self.table);
        if let Some(oc) = &self.on_conflict {
            let what = match oc.action {
                upsert::Action::Nothing => "NOTHING",
                _ => "UPDATE",
            };
            n.prop("Conflict Resolution", what);
        }
        let src = match &self.source {
            InsertSource::Values(rows) => {
                let mut v = if rows.len() == 1 {
                    Node::new("Result")
                } else {
                    let mut v = Node::new("Values Scan");
                    v.label = Some("Values Scan on \"*VALUES*\"".into());
                    v.alias = Some("*VALUES*".into());
                    v
                };
                v.rows = Some(rows.len() as u64);
                // The rows are given whole (each is inserted, or the
                // statement fails).
                if b.measured.is_some() {
                    v.actual = Some((rows.len() as u64, 1));
                }
                v
            }
            InsertSource::Query(q) => crate::query::explain::query_node(b, q),
            InsertSource::Given(_) => Node::new("Result"),
        };
        n.child("Outer", src);
        n
    }

    /// The table's row for one source row's values (`None`: the column's
    /// default, expression ones evaluated here), the values ignored by
    /// `OVERRIDING USER VALUE` left out.
    pub(super) fn full_row(
        &self,
        vals: Vec<Option<Value>>,
        env: &crate::functions::Env<'_>,
    ) -> Result<Vec<Option<Value>>> {
        let mut full = vec![None; self.table.def.columns.len()];
        for (k, v) in vals.into_iter().enumerate() {
            if !self.dropped.contains(&k) {
                full[self.cols[k]] = v;
            }
        }
        self.defaults.fill(&mut full, env)?;
        Ok(full)
    }

    /// The row with its generated columns computed: from the row with its
    /// defaults taken (and after the BEFORE triggers), as PostgreSQL
    /// computes them.
    pub(super) fn with_generated(
        &self,
        tx: &mut Transaction,
        full: Vec<Option<Value>>,
        ctx: &Ctx<'_>,
    ) -> Result<Vec<Option<Value>>> {
        if self.checks.generated().is_empty() {
            return Ok(full);
        }
        let mut row = tx.defaults_taken(&self.table, full)?;
        self.checks.generate(&mut row, &ctx.env(tx))?;
        Ok(row.into_iter().map(Some).collect())
    }

    /// What follows a row's insert: its CHECK constraints, on the stored
    /// row (defaults and coercions applied; a violation fails the
    /// statement, which undoes the write), and its foreign keys queued.
    pub(super) fn stored(
        &self,
        row: &walden_engine::Row,
        fks: &mut Pending,
        tx: &Transaction,
        ctx: &Ctx<'_>,
    ) -> Result<()> {
        if !self.checks.is_empty() {
            self.checks.enforce(row, &ctx.env(tx))?;
        }
        if let Some(b) = &self.bound_check {
            b.enforce(row, &ctx.env(tx))?;
        }
        fks.inserted(&self.table, row);
        Ok(())
    }

    /// A T-SQL IDENTITY column given a value needs `SET IDENTITY_INSERT`.
    pub(super) fn check_explicit_identity(&self, ctx: &Ctx<'_>) -> Result<()> {
        match &self.explicit_identity {
            Some(col) => crate::dml::identity::check_identity_insert(&self.table, col, ctx),
            None => Ok(()),
        }
    }

    /// Its target columns' positions, in its column list's order.
    pub(super) fn columns(&self) -> &[usize] {
        &self.cols
    }
}

pub(super) fn returning_reusable(r: &Option<Returning>) -> bool {
    r.as_ref().is_none_or(|r| {
        r.exprs.iter().all(|e| !e.has_subquery()) && r.into.as_ref().is_none_or(|i| i.reusable())
    })
}

pub(crate) fn plan_insert(p: &mut Planner<'_>, ins: &ast::Insert) -> Result<InsertPlan> {
    let table = insert_table(p, ins)?;
    let routing = match &table.def.partition_key {
        None => None,
        Some(_) if ins.on.is_some() => {
            return Err(SqlError::unsupported(
                "INSERT ... ON CONFLICT on a partitioned table",
            ))
        }
        Some(_) => Some(Box::new(super::routing::Routing::plan(p, &table)?)),
    };
    let bound_check = super::routing::own_constraint(p, &table)?;
    let (cols, source) = plan_insert_source(p, ins, &table)?;
    let dropped = crate::dml::identity::identity_overrides(&table, ins, &cols, source.given())?;
    let explicit_identity =
        crate::dml::identity::tsql_explicit(&table, &cols, &dropped, source.given());
    let alias = ins.table_alias.as_ref().map(|a| a.alias.value.clone());
    let scope = table_scope(&table, alias.as_deref());
    let label = scope.cols.first().and_then(|c| c.table.clone());
    let on_conflict = upsert::plan(p, ins, &table, label.as_deref().unwrap_or(""))?.map(Box::new);
    let returning = match &ins.output {
        Some(_) => super::output::plan(
            p,
            &scope,
            table.def.columns.len(),
            &ins.output,
            super::output::Verb::Insert,
        )?,
        None => returning(p, &scope, &ins.returning)?,
    };
    let checks = Checks::compile(p, &table)?;
    let defaults = crate::dml::defaults::ExprDefaults::compile(p, &table)?;
    Ok(InsertPlan {
        table,
        cols,
        dropped,
        source,
        returning,
        explicit_identity,
        checks,
        defaults,
        on_conflict,
        routing,
        bound_check,
    })
}

pub fn insert(
    p: &mut Planner<'_>,
    ins: &ast::Insert,
    tx: &mut Transaction,
    ctx: &Ctx<'_>,
) -> Result<QueryOutput> {
    run_insert(&plan_insert(p, ins)?, tx, ctx)
}

pub(crate) fn run_insert(
    pl: &InsertPlan,
    tx: &mut Transaction,
    ctx: &Ctx<'_>,
) -> Result<QueryOutput> {
    run_insert_rows(pl, tx, ctx, Vec::new())
}

/// The plan of OUTPUT ... INTO's insert of `width` values a row into
/// `target` (`cols`: its column list, if given).
pub(crate) fn plan_into(
    p: &mut Planner<'_>,
    target: &ast::ObjectName,
    cols: &[String],
    width: usize,
) -> Result<InsertPlan> {
    let cols: Vec<String> = cols
        .iter()
        .map(|c| crate::types::quote::quote_ident(c))
        .collect();
    let list = if cols.is_empty() {
        String::new()
    } else {
        format!(" ({})", cols.join(", "))
    };
    let nulls = vec!["NULL"; width].join(", ");
    let sql = format!("INSERT INTO {target}{list} VALUES ({nulls})");
    let ast::Statement::Insert(ins) = crate::front::parse_sql(&sql)? else {
        return Err(SqlError::internal("OUTPUT INTO's insert did not parse"));
    };
    let mut pl = plan_insert(p, &ins)?;
    if pl.cols.len() != width {
        return Err(SqlError::syntax(format!(
            "Column name or number of supplied values does not match table definition of \"{}\" (OUTPUT INTO).",
            pl.table.name()
        )));
    }
    pl.source = InsertSource::Given(width);
    pl.explicit_identity =
        crate::dml::identity::tsql_explicit(&pl.table, &pl.cols, &pl.dropped, |_| true);
    Ok(pl)
}

/// Runs an INSERT plan; `given`: the rows of a [`InsertSource::Given`] one.
pub(crate) fn run_insert_rows(
    pl: &InsertPlan,
    tx: &mut Transaction,
    ctx: &Ctx<'_>,
    given: Vec<Vec<Value>>,
) -> Result<QueryOutput> {
    let t = &pl.table;
    crate::dml::check_read_write(tx, t, "INSERT")?;
    pl.check_explicit_identity(ctx)?;
    let ret = &pl.returning;
    let mut n = 0u64;
    let mut out_rows = Vec::new();
    let mut fks = Pending::new(tx, t);
    // Keys this command inserted or updated: DO UPDATE may not change one twice.
    let mut touched = upsert::Touched::new();
    // The identity value of the last row inserted (`SCOPE_IDENTITY()`).
    let identity_col = t.def.identity_column().map(|(i, _)| i);
    let mut last_identity = None;
    // Triggers (`triggers.rs`): INSERT's, and UPDATE's for ON CONFLICT DO
    // UPDATE (PostgreSQL fires both statements' triggers).
    let mut fire = Firing::load(tx, ctx, t, TrigOp::Insert, &[])?;
    let mut fire_upd = match pl.on_conflict.as_ref().map(|oc| &oc.action) {
        Some(upsert::Action::Update {
            assignments, rows, ..
        }) => {
            let cols: Vec<usize> = assignments
                .iter()
                .map(|(i, _)| *i)
                .chain(rows.iter().flat_map(|r| r.cols.iter().copied()))
                .collect();
            Firing::load(tx, ctx, t, TrigOp::Update, &cols)?
        }
        _ => None,
    };
    if fire.is_some() || fire_upd.is_some() {
        if pl.routing.is_some() {
            return Err(SqlError::unsupported("triggers on a partitioned table"));
        }
        if let Some(f) = &fire {
            f.before_statement(tx, ctx)?;
        }
        if let Some(f) = &fire_upd {
            f.before_statement(tx, ctx)?;
        }
    }
    let mut store = |tx: &mut Transaction, vals: Vec<Option<Value>>| -> Result<()> {
        let mut full = pl.full_row(vals, &ctx.env(tx))?;
        if let Some(f) = fire.as_ref().filter(|f| f.has_before_row()) {
            // NEW as PostgreSQL's BEFORE trigger sees it: defaults taken.
            let row = tx.defaults_taken(t, full)?;
            match f.before_row(tx, ctx, None, Some(row))? {
                Some(r) => full = r.into_iter().map(Some).collect(),
                None => return Ok(()),
            }
        }
        let full = pl.with_generated(tx, full, ctx)?;
        if let Some(r) = &pl.routing {
            let row = tx.complete_row(t, full)?;
            if !pl.checks.is_empty() {
                pl.checks.enforce(&row, &ctx.env(tx))?;
            }
            if let Some(b) = &pl.bound_check {
                b.enforce(&row, &ctx.env(tx))?;
            }
            let stored = r.insert(tx, ctx, row)?;
            n += 1;
            if let Some(r) = ret {
                let env = ctx.env(tx);
                out_rows.push(r.row(&stored, &env)?);
            }
            return Ok(());
        }
        let row = match &pl.on_conflict {
            None => tx.insert_into(t, full)?,
            Some(oc) => {
                match tx.insert_or_conflict(t, full, &oc.arbiters, oc.locks_existing())? {
                    Upsert::Inserted(key, row) => {
                        if oc.locks_existing() {
                            touched.insert(key);
                        }
                        row
                    }
                    Upsert::Conflict {
                        key,
                        existing,
                        proposed,
                    } => {
                        // The proposed row is checked as PostgreSQL does
                        // before it looks for conflicts.
                        if !pl.checks.is_empty() {
                            pl.checks.enforce(&proposed, &ctx.env(tx))?;
                        }
                        let upsert::Action::Update {
                            assignments,
                            rows,
                            filter,
                            checks,
                        } = &oc.action
                        else {
                            return Ok(());
                        };
                        if touched.contains(&key) {
                            return Err(upsert::affected_twice());
                        }
                        let mut new_row = {
                            let env = ctx.env(tx);
                            let mut both = existing.to_vec();
                            both.extend(proposed);
                            if let Some(f) = filter {
                                if !query::passes(std::slice::from_ref(f), &both, &env)? {
                                    return Ok(());
                                }
                            }
                            let mut new_row = existing.to_vec();
                            for (i, e) in assignments {
                                new_row[*i] = e.eval(&both, &env)?;
                            }
                            for r in rows {
                                r.apply(&both, &env, &mut new_row)?;
                            }
                            new_row
                        };
                        if let Some(f) = fire_upd.as_ref().filter(|f| f.has_before_row()) {
                            match f.before_row(tx, ctx, Some(&existing), Some(new_row))? {
                                Some(r) => new_row = r,
                                None => return Ok(()),
                            }
                        }
                        checks.generate(&mut new_row, &ctx.env(tx))?;
                        let stored = tx.update_in(t, &key, new_row)?;
                        if !checks.is_empty() {
                            checks.enforce(&stored, &ctx.env(tx))?;
                        }
                        if let Some(f) = fire_upd.as_mut() {
                            f.after_row(Some(&existing), Some(&stored));
                        }
                        fks.updated(t, &existing, &stored);
                        touched.insert(t.key_of(&stored).unwrap_or(key));
                        n += 1;
                        if let Some(r) = ret {
                            let env = ctx.env(tx);
                            out_rows.push(r.row(&stored, &env)?);
                        }
                        return Ok(());
                    }
                }
            }
        };
        pl.stored(&row, &mut fks, tx, ctx)?;
        if let Some(f) = fire.as_mut() {
            f.after_row(None, Some(&row));
        }
        n += 1;
        if let Some(Value::Int(v)) = identity_col.map(|i| &row[i]) {
            last_identity = Some(*v);
        }
        if let Some(r) = ret {
            let env = ctx.env(tx);
            out_rows.push(r.row(&row, &env)?);
        }
        Ok(())
    };
    match &pl.source {
        InsertSource::Values(rows) => {
            for r in rows {
                let vals = {
                    let env = ctx.env(tx);
                    r.iter()
                        .map(|e| e.as_ref().map(|x| x.eval(&[], &env)).transpose())
                        .collect::<Result<Vec<_>>>()?
                };
                store(tx, vals)?;
            }
        }
        InsertSource::Query(plan) => {
            let rows = {
                let env = ctx.env(tx);
                query::execute_plan(plan, &env, None)?
            };
            for r in rows {
                store(tx, r.into_iter().map(Some).collect())?;
            }
        }
        InsertSource::Given(_) => {
            for r in given {
                store(tx, r.into_iter().map(Some).collect())?;
            }
        }
    }
    // Foreign keys are checked once the statement's rows are all written,
    // as PostgreSQL's (non-deferred) constraint triggers run.
    fks.finish(tx, ctx)?;
    // (OUTPUT ... INTO's insert is not the statement's own.) Before the
    // AFTER triggers, whose inserts come later (`@@IDENTITY` shows theirs).
    if let (Some(v), false) = (last_identity, matches!(pl.source, InsertSource::Given(_))) {
        if let Ok(mut log) = ctx.info.identity.lock() {
            log.took(v);
        }
    }
    if let Some(f) = fire {
        f.finish(tx, ctx)?;
    }
    if let Some(f) = fire_upd {
        f.finish(tx, ctx)?;
    }
    let mut out = QueryOutput::command(format!("INSERT 0 {n}"));
    super::output::deliver(ret, out_rows, &mut out, tx, ctx)?;
    Ok(out)
}

/// A number written for a double precision column (`1e300`, `-2.5e-310`) read as the
/// float, as PostgreSQL's numeric literal cast to float8 reads it: as
/// numeric it may be beyond what Walden's numeric holds.
fn float_literal(e: &ast::Expr, target: &walden_engine::DataType) -> Option<f64> {
    // Not for real: a float4 read through a double could round twice.
    if *target != walden_engine::DataType::Double {
        return None;
    }
    match e {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::Number(n, _) if n.parse::<i64>().is_err() => {
                n.parse::<f64>().ok().filter(|f| f.is_finite())
            }
            _ => None,
        },
        ast::Expr::UnaryOp {
            op: ast::UnaryOperator::Minus,
            expr,
        } => float_literal(expr, target).map(|f| -f),
        ast::Expr::Nested(inner) => float_literal(inner, target),
        _ => None,
    }
}
