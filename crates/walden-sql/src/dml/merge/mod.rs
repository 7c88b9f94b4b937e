//! MERGE (PostgreSQL 15's, and SQL Server's with `WHEN NOT MATCHED BY
//! SOURCE` and OUTPUT): planning here, execution in run.rs.
//!
//! The statement is planned as a join of the source with the target (the
//! target's columns first, as UPDATE ... FROM's scope has them) and a list
//! of WHEN clauses by kind. WHEN MATCHED clauses read both sides; WHEN NOT
//! MATCHED [BY TARGET] clauses the source's columns only, and BY SOURCE
//! clauses the target's only (a reference to the other side is an error,
//! as in PostgreSQL and SQL Server). Each INSERT action is planned as an
//! INSERT of the target (defaults, identity, CHECK constraints and foreign
//! keys as INSERT has them), its values compiled over the source.

use super::*;
use std::ops::ControlFlow;

mod run;
pub(crate) use run::run_merge;

/// Which rows a WHEN clause is for.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Matched,
    NotMatched,
    BySource,
}

enum Action {
    /// Assignments to target positions, over the clause's row.
    Update(Vec<(usize, Expr)>),
    Delete,
    /// The INSERT of the target, and a value (`None`: DEFAULT) for each of
    /// its columns, over the source row.
    Insert(Box<InsertPlan>, Vec<Option<Expr>>),
    Nothing,
}

struct Clause {
    kind: Kind,
    cond: Option<Expr>,
    action: Action,
}

/// A planned MERGE.
pub(crate) struct MergePlan {
    /// The target's rows the ON condition may join (all of them with a BY
    /// SOURCE clause), found as UPDATE finds its rows.
    target: Planned,
    width: usize,
    source: Source,
    source_width: usize,
    /// ON, over the target's row followed by the source's.
    on: Vec<Expr>,
    /// Equalities of a target column and a source column in ON (source
    /// positions counted from the source's first column).
    keys: Vec<(usize, usize)>,
    clauses: Vec<Clause>,
    /// OUTPUT, over the new row, the source row, the old row and `$action`.
    output: Option<Returning>,
    checks: Option<Checks>,
    mode: LockMode,
}

impl MergePlan {
    /// The columns of the rows it returns (OUTPUT without INTO).
    pub(crate) fn columns(&self) -> Option<Vec<crate::Column>> {
        self.output
            .as_ref()
            .filter(|r| r.into.is_none())
            .map(|r| r.columns.clone())
    }
}

/// The MERGE statement of `WITH ... MERGE`.
pub(crate) fn is_merge(q: &ast::Query) -> Option<&ast::Merge> {
    match q.body.as_ref() {
        ast::SetExpr::Merge(ast::Statement::Merge(m)) => Some(m),
        _ => None,
    }
}

/// Plans a MERGE (with the WITH list of `WITH ... MERGE`).
pub(crate) fn plan_merge(
    p: &mut Planner<'_>,
    m: &ast::Merge,
    with: Option<&ast::With>,
) -> Result<MergePlan> {
    if with.is_some_and(|w| w.recursive) {
        return Err(SqlError::syntax(
            "WITH RECURSIVE is not supported for MERGE statement",
        ));
    }
    let saved = p.ctes.len();
    let r = with
        .map_or(Ok(()), |w| query::plan_with(p, w, &None))
        .and_then(|()| plan_body(p, m));
    p.ctes.truncate(saved);
    r
}

fn plan_body(p: &mut Planner<'_>, m: &ast::Merge) -> Result<MergePlan> {
    if !m.optimizer_hints.is_empty() {
        return Err(SqlError::unsupported("optimizer hints on MERGE"));
    }
    let (name, alias) = match &m.table {
        ast::TableFactor::Table {
            name,
            alias,
            args: None,
            with_hints,
            version: None,
            partitions,
            ..
        } if partitions.is_empty() => {
            // The target's rows are locked as they change whatever the
            // hint; anything stronger (HOLDLOCK, TABLOCK) is not honoured.
            if let Some(h) = with_hints
                .iter()
                .find(|h| !h.to_string().eq_ignore_ascii_case("ROWLOCK"))
            {
                return Err(SqlError::unsupported(format!(
                    "table hint WITH ({h}) on the target of MERGE"
                )));
            }
            (name, alias.as_ref().map(|a| a.name.value.clone()))
        }
        other => return Err(SqlError::unsupported(format!("MERGE INTO {other}"))),
    };
    let t = target_table(p, name, "MERGE")?;
    if t.def.partition_key.is_some() || t.def.partition_of.is_some() {
        return Err(SqlError::unsupported(
            "MERGE into a partitioned table or a partition",
        ));
    }
    let width = t.def.columns.len();
    let target_scope = table_scope(&t, alias.as_deref());
    let source_item = ast::TableWithJoins {
        relation: m.source.clone(),
        joins: vec![],
    };
    let (scope, list) = from::plan_list(p, &target_scope, std::slice::from_ref(&source_item))?;
    let source_scope = Arc::new(Scope {
        cols: scope.cols[width..].to_vec(),
        parent: scope.parent.clone(),
        reach: None,
    });
    let mut conjuncts = Vec::new();
    query::conjuncts(&m.on, &mut conjuncts);
    let mut on = Vec::new();
    let mut keys = Vec::new();
    let mut target_only = Vec::new();
    for c in &conjuncts {
        let e = Expr::compile(p, &scope, c)?;
        if from::max_col(&e) < width && !e.uses_outer() {
            target_only.push(Expr::compile(p, &scope, c)?);
        }
        if let Expr::Bin(crate::functions::BinOp::Eq, a, b) = &e {
            let pair = match (a.as_ref(), b.as_ref()) {
                (Expr::Col(x), Expr::Col(y)) | (Expr::Col(y), Expr::Col(x))
                    if *x < width && *y >= width =>
                {
                    Some((*x, *y))
                }
                _ => None,
            };
            if let Some((x, y)) = pair {
                if from::hashable(&scope.cols[x].ty, &scope.cols[y].ty) {
                    keys.push((x, y - width));
                }
            }
        }
        on.push(e);
    }
    let clauses = plan_clauses(p, m, &t, name, &scope, &source_scope, &target_scope)?;
    // Without a BY SOURCE clause only the target rows ON can join matter.
    let by_source = clauses.iter().any(|c| c.kind == Kind::BySource);
    let access = access_for(&t, if by_source { vec![] } else { target_only });
    let output = plan_output(p, &scope, width, &m.output)?;
    let checks = Some(Checks::compile(p, &t)?).filter(|c| !c.is_empty());
    let mode = if clauses.iter().any(|c| matches!(c.action, Action::Delete)) {
        LockMode::Update
    } else {
        update_lock_mode(
            &t,
            clauses.iter().flat_map(|c| match &c.action {
                Action::Update(a) => a.iter().map(|(i, _)| *i).collect(),
                _ => Vec::new(),
            }),
        )
    };
    Ok(MergePlan {
        target: Planned {
            table: t,
            lookup: access.lookup,
            range: access.range,
            index: access.index,
            filter: access.filter,
            assignments: vec![],
            rows: vec![],
            returning: None,
            checks: None,
            from: None,
            moving: None,
            bound_check: None,
            partitions: None,
        },
        width,
        source: list.source,
        source_width: scope.cols.len() - width,
        on,
        keys,
        clauses,
        output,
        checks,
        mode,
    })
}

fn plan_clauses(
    p: &mut Planner<'_>,
    m: &ast::Merge,
    t: &Arc<Table>,
    name: &ast::ObjectName,
    scope: &Arc<Scope>,
    source_scope: &Arc<Scope>,
    target_scope: &Arc<Scope>,
) -> Result<Vec<Clause>> {
    let mut out: Vec<Clause> = Vec::new();
    for c in &m.clauses {
        let kind = match c.clause_kind {
            ast::MergeClauseKind::Matched => Kind::Matched,
            ast::MergeClauseKind::NotMatched | ast::MergeClauseKind::NotMatchedByTarget => {
                Kind::NotMatched
            }
            ast::MergeClauseKind::NotMatchedBySource => Kind::BySource,
        };
        // As PostgreSQL: a clause after an unconditional one of its kind
        // could never act.
        if out.iter().any(|o| o.kind == kind && o.cond.is_none()) {
            return Err(SqlError::syntax(
                "unreachable WHEN clause specified after unconditional WHEN clause",
            ));
        }
        let clause_scope = match kind {
            Kind::Matched => scope,
            Kind::NotMatched => source_scope,
            Kind::BySource => target_scope,
        };
        let cond = c
            .predicate
            .as_ref()
            .map(|e| Expr::compile(p, clause_scope, e))
            .transpose()?;
        let action = match &c.action {
            ast::MergeAction::DoNothing { .. } => Action::Nothing,
            ast::MergeAction::Delete { .. } => Action::Delete,
            ast::MergeAction::Update(u) => {
                if u.update_predicate.is_some() || u.delete_predicate.is_some() {
                    return Err(SqlError::unsupported(
                        "WHERE or DELETE WHERE after a MERGE's UPDATE SET",
                    ));
                }
                let ast::MergeUpdateKind::Set(assignments) = &u.kind else {
                    return Err(SqlError::unsupported("MERGE's UPDATE SET *"));
                };
                Action::Update(plan_set(p, t, clause_scope, assignments)?)
            }
            ast::MergeAction::Insert(ins) => plan_insert_action(p, name, source_scope, ins)?,
        };
        out.push(Clause { kind, cond, action });
    }
    Ok(out)
}

/// UPDATE SET's assignments (`(a, b) = (x, y)` spread; no `(a, b) =
/// (SELECT ...)`, no `= DEFAULT`, a GENERATED ALWAYS column refused).
fn plan_set(
    p: &mut Planner<'_>,
    t: &Arc<Table>,
    scope: &Arc<Scope>,
    assignments: &[ast::Assignment],
) -> Result<Vec<(usize, Expr)>> {
    let mut out: Vec<(usize, Expr)> = Vec::new();
    for a in super::assign::spread(t, assignments, Some("MERGE ... UPDATE"))? {
        let super::assign::Assigned::One { col, i, value } = a else {
            return Err(SqlError::internal("row assignment in MERGE"));
        };
        if crate::dml::generated::is_generated(t, i) {
            if !is_default_kw(value) {
                return Err(crate::dml::generated::value_refused(&col, true));
            }
            continue;
        }
        if is_default_kw(value) {
            return Err(SqlError::unsupported("SET col = DEFAULT in MERGE"));
        }
        if crate::dml::identity::is_generated_always(t, i) {
            return Err(crate::dml::identity::generated_always(
                &t.def.columns[i].name,
                true,
            ));
        }
        let e = Expr::compile(p, scope, value)?;
        if let Expr::Param(pi) = &e {
            p.infer_param(*pi, t.def.columns[i].data_type.clone());
        }
        out.push((i, e));
    }
    Ok(out)
}

/// `INSERT [(cols)] VALUES (...)` or `INSERT DEFAULT VALUES` (which the
/// front end hands over as `INSERT *`): the target's INSERT is planned from
/// an INSERT statement with the same column list and DEFAULT where the
/// clause has it, so its defaults, identity rules and checks are INSERT's.
fn plan_insert_action(
    p: &mut Planner<'_>,
    name: &ast::ObjectName,
    source_scope: &Arc<Scope>,
    ins: &ast::MergeInsertExpr,
) -> Result<Action> {
    if ins.insert_predicate.is_some() {
        return Err(SqlError::unsupported("WHERE after a MERGE's INSERT VALUES"));
    }
    let items: Vec<ast::Expr> = match &ins.kind {
        ast::MergeInsertKind::Wildcard if ins.columns.is_empty() => Vec::new(),
        ast::MergeInsertKind::Values(v) => match v.rows.as_slice() {
            [row] => row.to_vec(),
            _ => return Err(SqlError::syntax("a MERGE's INSERT VALUES takes one row")),
        },
        other => return Err(SqlError::unsupported(format!("MERGE's INSERT {other}"))),
    };
    let cols: Vec<String> = ins
        .columns
        .iter()
        .map(|c| crate::types::quote::quote_ident(&object_last(c)))
        .collect();
    let list = if cols.is_empty() {
        String::new()
    } else {
        format!(" ({})", cols.join(", "))
    };
    let sql = if items.is_empty() {
        format!("INSERT INTO {name} DEFAULT VALUES")
    } else {
        let placeholders: Vec<&str> = items
            .iter()
            .map(|e| if is_default_kw(e) { "DEFAULT" } else { "NULL" })
            .collect();
        format!(
            "INSERT INTO {name}{list} VALUES ({})",
            placeholders.join(", ")
        )
    };
    let ast::Statement::Insert(stmt) = crate::front::parse_sql(&sql)? else {
        return Err(SqlError::internal("MERGE's INSERT did not parse"));
    };
    let plan = plan_insert(p, &stmt)?;
    let t = plan.table.clone();
    let mut values = Vec::new();
    for (k, e) in items.iter().enumerate() {
        if is_default_kw(e) {
            values.push(None);
            continue;
        }
        let x = Expr::compile(p, source_scope, e)?;
        if let (Expr::Param(pi), Some(&c)) = (&x, plan.columns().get(k)) {
            p.infer_param(*pi, t.def.columns[c].data_type.clone());
        }
        values.push(Some(x));
    }
    Ok(Action::Insert(Box::new(plan), values))
}

/// OUTPUT over MERGE: `inserted.x` the new row, `deleted.x` the old one
/// (NULLs where the action has none), the source's columns by its name,
/// and `$action` ('INSERT', 'UPDATE' or 'DELETE'). PostgreSQL 15 has no
/// RETURNING on MERGE.
fn plan_output(
    p: &mut Planner<'_>,
    scope: &Arc<Scope>,
    width: usize,
    clause: &Option<ast::OutputClause>,
) -> Result<Option<Returning>> {
    let (items, into) = match clause {
        None => return Ok(None),
        Some(ast::OutputClause::Returning { .. }) => {
            return Err(SqlError::syntax("syntax error at or near \"RETURNING\""))
        }
        Some(ast::OutputClause::Output {
            select_items,
            into_table,
            ..
        }) => (select_items, into_table),
    };
    if items.iter().any(|i| matches!(i, SelectItem::Wildcard(_))) {
        return Err(SqlError::syntax(
            "syntax error: OUTPUT * must name inserted.* or deleted.*",
        ));
    }
    let mut cols = scope.cols.clone();
    for c in cols.iter_mut().take(width) {
        c.table = Some("inserted".to_string());
    }
    cols.extend(scope.cols.iter().take(width).map(|c| ScopeCol {
        table: Some("deleted".to_string()),
        hidden: false,
        merged: Vec::new(),
        ..c.clone()
    }));
    cols.push(ScopeCol {
        name: ACTION.to_string(),
        ty: walden_engine::DataType::Text,
        ..Default::default()
    });
    let out_scope = Arc::new(Scope {
        cols,
        parent: scope.parent.clone(),
        reach: None,
    });
    // `$action` is read as a parameter placeholder: it names the column.
    let mut items = items.clone();
    let _ = ast::visit_expressions_mut(&mut items, |e| {
        if let ast::Expr::Value(v) = e {
            if matches!(&v.value, ast::Value::Placeholder(s) if s.eq_ignore_ascii_case(ACTION)) {
                *e = ast::Expr::Identifier(ast::Ident::with_quote('"', ACTION));
            }
        }
        ControlFlow::<()>::Continue(())
    });
    let mut r = returning(p, &out_scope, &Some(items))?;
    if let (Some(r), Some(into)) = (&mut r, into) {
        r.into = Some(output::plan_into(p, into, r.columns.len())?);
    }
    Ok(r)
}

/// The name OUTPUT reads the action by.
const ACTION: &str = "$action";
