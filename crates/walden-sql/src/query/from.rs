//! FROM items: tables, table functions, derived tables and joins, and where
//! each filter is placed among them.

use super::*;
use crate::functions::SystemRelation;

/// A FROM item being assembled: its source, its columns, and whether it sits
/// on the nullable side of an outer join (filters must not move into it).
pub(super) struct Item {
    pub(super) source: Source,
    pub(super) cols: Vec<ScopeCol>,
}

pub(super) fn alias_name(alias: &Option<ast::TableAlias>) -> Option<String> {
    alias.as_ref().map(|a| a.name.value.to_ascii_lowercase())
}

/// Names the columns by the alias's column list; a list longer than the
/// columns is 42P10, as in PostgreSQL.
pub(super) fn rename_cols(cols: &mut [ScopeCol], alias: &Option<ast::TableAlias>) -> Result<()> {
    if let Some(a) = alias {
        if a.columns.len() > cols.len() {
            return Err(SqlError::new(
                ErrorKind::InvalidColumnReference,
                format!(
                    "table \"{}\" has {} columns available but {} columns specified",
                    a.name.value,
                    cols.len(),
                    a.columns.len()
                ),
            ));
        }
        for (c, n) in cols.iter_mut().zip(a.columns.iter()) {
            c.name = crate::expr::fold_ident(&n.name);
        }
    }
    Ok(())
}

pub(super) fn plan_factor(
    p: &mut Planner<'_>,
    f: &TableFactor,
    outer: &Option<Arc<Scope>>,
) -> Result<Item> {
    match f {
        TableFactor::Table {
            name,
            alias,
            args,
            with_hints,
            with_ordinality,
            ..
        } => {
            if *with_ordinality && args.is_none() {
                // PostgreSQL's grammar has WITH ORDINALITY after function
                // calls only.
                return Err(SqlError::syntax(
                    "syntax error at or near \"ORDINALITY\": WITH ORDINALITY follows a function call in FROM, not a table",
                ));
            }
            for h in with_hints {
                let hint = h.to_string().to_ascii_uppercase();
                // Hints that ask for locks or stronger isolation cannot be
                // honoured; NOLOCK and READCOMMITTED read committed rows.
                if !matches!(
                    hint.as_str(),
                    "NOLOCK" | "READUNCOMMITTED" | "READCOMMITTED" | "ROWLOCK" | "NOWAIT"
                ) {
                    return Err(SqlError::unsupported(format!("table hint WITH ({hint})")));
                }
            }
            let tname = object_last(name);
            let schema = object_schema(name);
            let label = alias_name(alias).unwrap_or_else(|| tname.to_ascii_lowercase());
            if let Some(args) = args {
                // Table functions: generate_series and sys.dm_io_virtual_file_stats.
                let mut exprs = Vec::new();
                let scope = Arc::new(Scope {
                    cols: vec![],
                    parent: outer.clone(),
                    reach: None,
                });
                for a in &args.args {
                    if let ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) = a {
                        exprs.push(Expr::compile(p, &scope, e)?);
                    }
                }
                return table_function(p, &scope, &tname, exprs, label, alias, *with_ordinality);
            }
            let view = match schema.as_deref() {
                None => unqualified_view(p, &tname),
                s => p.system.relation(s, &tname),
            };
            if let Some(view) = view {
                let mut cols: Vec<ScopeCol> = view
                    .columns()
                    .into_iter()
                    .map(|(n, t)| ScopeCol {
                        table: Some(label.clone()),
                        name: n.to_string(),
                        ty: t,
                        origin: view.origin(n),
                        ..Default::default()
                    })
                    .collect();
                rename_cols(&mut cols, alias)?;
                if view.table_oid().is_some() {
                    p.system_labels.push(label.clone());
                }
                return Ok(Item {
                    source: Source::SysView {
                        view,
                        args: vec![],
                        filter: vec![],
                    },
                    cols,
                });
            }
            if schema.is_none() {
                if let Some((_, plan)) = p
                    .ctes
                    .iter()
                    .rev()
                    .find(|(n, _)| *n == tname.to_ascii_lowercase())
                {
                    let plan = plan.clone();
                    // Inside a recursive query's step (its work table is on
                    // the list) a WITH query may read the work table, which
                    // changes each round: run it each time it is read.
                    let in_recursive_step = p
                        .ctes
                        .iter()
                        .any(|(_, c)| matches!(c.body, Body::WorkTable(_)));
                    let shared = !plan.correlated && !in_recursive_step;
                    let mut cols: Vec<ScopeCol> = plan
                        .columns
                        .iter()
                        .map(|c| ScopeCol {
                            table: Some(label.clone()),
                            name: c.name.clone(),
                            ty: c.ty.clone(),
                            origin: c.origin,
                            ..Default::default()
                        })
                        .collect();
                    rename_cols(&mut cols, alias)?;
                    return Ok(Item {
                        source: Source::Derived {
                            plan,
                            filter: vec![],
                            shared,
                            label: tname.to_ascii_lowercase(),
                        },
                        cols,
                    });
                }
            }
            let table = match p.table(name) {
                Ok(t) => t,
                Err(e) => {
                    if let Some(item) = super::views::view_item(p, name, &label, alias)? {
                        return Ok(item);
                    }
                    return sequence_item(p, schema.as_deref(), &tname, label, alias, e);
                }
            };
            if table.def.partition_key.is_some() {
                return partitioned_item(p, table, label, alias);
            }
            let mut cols: Vec<ScopeCol> = table
                .def
                .columns
                .iter()
                .enumerate()
                .map(|(k, c)| ScopeCol {
                    table: Some(label.clone()),
                    name: c.name.clone(),
                    ty: c.data_type.clone(),
                    origin: crate::ColumnOrigin::of_table(table.id(), k),
                    ..Default::default()
                })
                .collect();
            rename_cols(&mut cols, alias)?;
            Ok(Item {
                source: Source::Table {
                    table,
                    lookup: None,
                    range: None,
                    index: None,
                    filter: vec![],
                },
                cols,
            })
        }
        TableFactor::Derived {
            subquery, alias, ..
        } => {
            // A LATERAL subquery is planned beside the items before it
            // (`outer` then holds them: see lateral.rs).
            let plan = Arc::new(plan_query(p, subquery, outer.clone())?);
            let label = alias_name(alias);
            let mut cols: Vec<ScopeCol> = plan
                .columns
                .iter()
                .map(|c| ScopeCol {
                    table: label.clone(),
                    name: c.name.clone(),
                    ty: c.ty.clone(),
                    origin: c.origin,
                    ..Default::default()
                })
                .collect();
            rename_cols(&mut cols, alias)?;
            Ok(Item {
                source: Source::Derived {
                    plan,
                    filter: vec![],
                    shared: false,
                    label: label.clone().unwrap_or_else(|| "unnamed_subquery".into()),
                },
                cols,
            })
        }
        TableFactor::Function {
            name,
            args,
            alias,
            with_ordinality,
            ..
        } => {
            let scope = Arc::new(Scope {
                cols: vec![],
                parent: outer.clone(),
                reach: None,
            });
            let mut exprs = Vec::new();
            for a in args {
                if let ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) = a {
                    exprs.push(Expr::compile(p, &scope, e)?);
                }
            }
            let tname = object_last(name);
            let label = alias_name(alias).unwrap_or_else(|| tname.to_ascii_lowercase());
            table_function(p, &scope, &tname, exprs, label, alias, *with_ordinality)
        }
        // PostgreSQL's grammar reads `unnest(...)` in FROM as this form.
        TableFactor::UNNEST {
            alias,
            array_exprs,
            with_offset,
            with_ordinality,
            ..
        } => {
            if *with_offset {
                return Err(SqlError::unsupported("UNNEST ... WITH OFFSET"));
            }
            let scope = Arc::new(Scope {
                cols: vec![],
                parent: outer.clone(),
                reach: None,
            });
            let exprs = array_exprs
                .iter()
                .map(|e| Expr::compile(p, &scope, e))
                .collect::<Result<Vec<_>>>()?;
            let label = alias_name(alias).unwrap_or_else(|| "unnest".to_string());
            table_function(p, &scope, "unnest", exprs, label, alias, *with_ordinality)
        }
        TableFactor::NestedJoin {
            table_with_joins,
            alias,
        } => {
            let mut item = plan_from(
                p,
                std::slice::from_ref(table_with_joins.as_ref()),
                outer,
                &mut Vec::new(),
            )?;
            if let Some(a) = alias_name(alias) {
                for c in &mut item.cols {
                    c.table = Some(a.clone());
                }
            }
            // The alias's column list renames the join's columns, when they
            // are listed as they are placed (no USING or NATURAL merge).
            let plain = item
                .cols
                .iter()
                .enumerate()
                .all(|(k, c)| !c.hidden && c.star == k && c.merged.is_empty());
            if plain {
                rename_cols(&mut item.cols, alias)?;
            } else if alias.as_ref().is_some_and(|a| !a.columns.is_empty()) {
                return Err(SqlError::unsupported(
                    "a column list on the alias of a join with USING or NATURAL",
                ));
            }
            Ok(item)
        }
        other => Err(SqlError::unsupported(format!("FROM item {other}"))),
    }
}

/// A partitioned table named in FROM: the rows of the partitions the
/// SELECT's WHERE can reach, as a derived table under the table's name and
/// columns (with `tableoid`, which `*` leaves out).
fn partitioned_item(
    p: &mut Planner<'_>,
    table: Arc<Table>,
    label: String,
    alias: &Option<ast::TableAlias>,
) -> Result<Item> {
    let node = super::partition::Node::load(p, table.clone())?;
    let mut conj = Vec::new();
    // (Columns renamed by the alias would be misread: no pruning then.)
    let renamed = alias.as_ref().is_some_and(|a| !a.columns.is_empty());
    if let (Some(w), false) = (&p.partition_where, renamed) {
        super::conjuncts(w, &mut conj);
    }
    let leaves = super::partition::prune(&node, &conj, &label);
    let sql = super::partition::expand_sql(&table, &leaves);
    let ast::Statement::Query(q) = crate::front::parse_sql(&sql)? else {
        return Err(SqlError::internal("partitioned table's read did not parse"));
    };
    let ctes = std::mem::take(&mut p.ctes);
    let saved_where = p.partition_where.take();
    let planned = plan_query(p, &q, None);
    p.ctes = ctes;
    p.partition_where = saved_where;
    let plan = Arc::new(planned?);
    let mut cols: Vec<ScopeCol> = plan
        .columns
        .iter()
        .enumerate()
        .map(|(k, c)| ScopeCol {
            table: Some(label.clone()),
            name: c.name.clone(),
            ty: c.ty.clone(),
            origin: if k < table.def.columns.len() {
                crate::ColumnOrigin::of_table(table.id(), k)
            } else {
                None
            },
            ..Default::default()
        })
        .collect();
    rename_cols(&mut cols, alias)?;
    p.system_labels.push(label.clone());
    Ok(Item {
        source: Source::Derived {
            plan,
            filter: vec![],
            shared: false,
            label: label.clone(),
        },
        cols,
    })
}

/// A sequence (or an identity column's counter) named in FROM: one row of
/// `last_value`, `log_cnt`, `is_called`, as PostgreSQL reads a sequence.
/// `not_table` is the error to give when it is not one either.
/// The catalog view an unqualified name finds along the search path:
/// `pg_catalog`'s (and the `sys` views) unless the path puts `public`
/// first and a user table has the name; `information_schema`'s when the
/// path lists that schema.
fn unqualified_view(p: &Planner<'_>, name: &str) -> Option<Arc<dyn SystemRelation>> {
    for schema in p.path.searched() {
        match schema {
            "pg_catalog" => {
                if let Some(v) = p.system.relation(None, name) {
                    return Some(v);
                }
            }
            "information_schema" => {
                if let Some(v) = p.system.relation(Some("information_schema"), name) {
                    return Some(v);
                }
            }
            "public" if p.db.table_as(p.viewer, name).is_ok() => return None,
            _ => {}
        }
    }
    None
}

fn sequence_item(
    p: &Planner<'_>,
    schema: Option<&str>,
    name: &str,
    label: String,
    alias: &Option<ast::TableAlias>,
    not_table: SqlError,
) -> Result<Item> {
    let found = match schema {
        None if p.path.finds_user_objects() => p.system.sequence_relation(&p.db, p.viewer, name),
        Some("public" | "dbo") => p.system.sequence_relation(&p.db, p.viewer, name),
        _ => None,
    };
    let Some((view, arg)) = found else {
        return Err(not_table);
    };
    let mut cols: Vec<ScopeCol> = view
        .columns()
        .into_iter()
        .map(|(n, t)| ScopeCol {
            table: Some(label.clone()),
            name: n.to_string(),
            ty: t,
            origin: None,
            ..Default::default()
        })
        .collect();
    rename_cols(&mut cols, alias)?;
    Ok(Item {
        source: Source::SysView {
            view,
            args: vec![Expr::Lit(arg)],
            filter: vec![],
        },
        cols,
    })
}

/// A function in FROM, with `WITH ORDINALITY` when `ordinality` (every
/// function here returns its rows in a defined order, so each can number
/// them).
pub(super) fn table_function(
    p: &Planner<'_>,
    scope: &Scope,
    name: &str,
    args: Vec<Expr>,
    label: String,
    alias: &Option<ast::TableAlias>,
    ordinality: bool,
) -> Result<Item> {
    // The alias's last column may name the ordinality column: the
    // function's own columns are checked against the rest.
    let own_alias = match alias {
        Some(a) if ordinality => {
            let mut a = a.clone();
            a.columns.truncate(a.columns.len().saturating_sub(1));
            Some(a)
        }
        _ => alias.clone(),
    };
    let item = function_rows(p, scope, name, args, label.clone(), &own_alias)?;
    if !ordinality {
        return Ok(item);
    }
    let mut cols = item.cols;
    cols.push(ScopeCol {
        table: Some(label),
        name: "ordinality".to_string(),
        ty: DataType::BigInt,
        origin: None,
        ..Default::default()
    });
    // The alias column list names the ordinality column too, after the
    // function's own columns.
    rename_cols(&mut cols, alias)?;
    Ok(Item {
        source: Source::Ordinality {
            inner: Box::new(item.source),
            filter: vec![],
        },
        cols,
    })
}

/// The rows of function `name` over `args`, compiled beside `scope` (an
/// argument reading an earlier FROM item or an enclosing query is typed
/// by the column it reads).
fn function_rows(
    p: &Planner<'_>,
    scope: &Scope,
    name: &str,
    args: Vec<Expr>,
    label: String,
    alias: &Option<ast::TableAlias>,
) -> Result<Item> {
    let lname = name.to_ascii_lowercase();
    if let Some(func) = crate::functions::json::srf(&lname) {
        let [arg] = <[Expr; 1]>::try_from(args)
            .map_err(|_| SqlError::syntax(format!("{lname} takes one argument")))?;
        let mut cols: Vec<ScopeCol> = func
            .columns(&label)
            .into_iter()
            .map(|(n, t)| ScopeCol {
                table: Some(label.clone()),
                name: n,
                ty: t,
                origin: None,
                ..Default::default()
            })
            .collect();
        rename_cols(&mut cols, alias)?;
        return Ok(Item {
            source: Source::JsonRows {
                func,
                arg,
                filter: vec![],
            },
            cols,
        });
    }
    match lname.as_str() {
        "generate_series"
        | "generate_subscripts"
        | "_pg_expandarray"
        | "regexp_split_to_table"
        | "regexp_matches"
        | "pg_get_keywords"
        | "pg_listening_channels"
        | "string_split"
        | "walden_routine_set" => {
            let func = srf::lookup(&lname).expect("listed SRF");
            let types: Vec<Option<DataType>> = args
                .iter()
                .map(|a| scoped_type(a, scope, &[], &p.params))
                .collect();
            let func = srf::for_types(func, &types);
            // STRING_SPLIT's columns depend on its third argument, which
            // must be a constant (SQL Server's rule).
            let func = match (func, args.get(2)) {
                (srf::SrfFunc::StringSplit(_), None) => func,
                (srf::SrfFunc::StringSplit(_), Some(Expr::Lit(v))) => {
                    srf::SrfFunc::StringSplit(matches!(v, Value::Int(1) | Value::Bool(true)))
                }
                (srf::SrfFunc::StringSplit(_), Some(_)) => {
                    return Err(SqlError::new(
                        ErrorKind::InvalidParameter,
                        "The third argument of STRING_SPLIT (enable_ordinal) must be a constant 0 or 1.",
                    ))
                }
                _ => func,
            };
            if func == srf::SrfFunc::Series && (args.len() < 2 || args.len() > 3) {
                return Err(SqlError::syntax("generate_series(start, stop [, step])"));
            }
            // A one-column function's column is named by the alias.
            let out = if func == srf::SrfFunc::Routine {
                // A stored function's own name labels it.
                let label = match (alias, srf::routine_name(&args)) {
                    (None, Some(n)) => n,
                    _ => label.clone(),
                };
                srf::routine_cols(&args, &label)?
            } else {
                srf::columns(func, &label, &types)
            };
            let label = match (alias, srf::routine_name(&args)) {
                (None, Some(n)) if func == srf::SrfFunc::Routine => n,
                _ => label,
            };
            let ty = out[0].1.clone();
            let mut cols: Vec<ScopeCol> = out
                .into_iter()
                .map(|(n, t)| ScopeCol {
                    table: Some(label.clone()),
                    name: n,
                    ty: t,
                    origin: None,
                    ..Default::default()
                })
                .collect();
            rename_cols(&mut cols, alias)?;
            Ok(Item {
                source: Source::Srf {
                    func,
                    width: cols.len(),
                    args,
                    ty,
                    filter: vec![],
                },
                cols,
            })
        }
        "unnest" => {
            if args.is_empty() {
                return Err(SqlError::new(
                    ErrorKind::UndefinedFunction,
                    "function unnest() does not exist",
                ));
            }
            // One array names its column after the alias (or `unnest`);
            // several are named by the alias column list, as PostgreSQL.
            let single = args.len() == 1;
            let mut cols: Vec<ScopeCol> = args
                .iter()
                .map(|a| ScopeCol {
                    table: Some(label.clone()),
                    name: if single {
                        label.clone()
                    } else {
                        "unnest".to_string()
                    },
                    // An array's elements have its element type; an array
                    // in text form (a catalog column) has text elements.
                    ty: match scoped_type(a, scope, &[], &p.params) {
                        Some(DataType::Array(e)) => *e,
                        _ => DataType::Text,
                    },
                    origin: None,
                    ..Default::default()
                })
                .collect();
            rename_cols(&mut cols, alias)?;
            Ok(Item {
                source: Source::Unnest {
                    arrays: args,
                    filter: vec![],
                },
                cols,
            })
        }
        "pg_options_to_table" => {
            let [options] = <[Expr; 1]>::try_from(args)
                .map_err(|_| SqlError::syntax("pg_options_to_table takes one array"))?;
            let view = p
                .system
                .table_function("pg_options_to_table")
                .ok_or_else(|| SqlError::internal("the catalogs have no pg_options_to_table"))?;
            let mut cols: Vec<ScopeCol> = view
                .columns()
                .into_iter()
                .map(|(n, t)| ScopeCol {
                    table: Some(label.clone()),
                    name: n.to_string(),
                    ty: t,
                    origin: None,
                    ..Default::default()
                })
                .collect();
            rename_cols(&mut cols, alias)?;
            Ok(Item {
                source: Source::SysView {
                    view,
                    args: vec![options],
                    filter: vec![],
                },
                cols,
            })
        }
        "pg_partition_ancestors" => {
            let [rel] = <[Expr; 1]>::try_from(args)
                .map_err(|_| SqlError::syntax("pg_partition_ancestors takes one relation"))?;
            let mut cols: Vec<ScopeCol> = ["relid", "depth"]
                .into_iter()
                .map(|n| ScopeCol {
                    table: Some(label.clone()),
                    name: n.to_string(),
                    ty: DataType::Int,
                    origin: None,
                    ..Default::default()
                })
                .collect();
            rename_cols(&mut cols, alias)?;
            Ok(Item {
                source: Source::Ancestors {
                    rel,
                    filter: vec![],
                },
                cols,
            })
        }
        "dm_io_virtual_file_stats" => {
            let view = p
                .system
                .table_function("dm_io_virtual_file_stats")
                .ok_or_else(|| {
                    SqlError::internal("the catalogs have no dm_io_virtual_file_stats")
                })?;
            let mut cols: Vec<ScopeCol> = view
                .columns()
                .into_iter()
                .map(|(n, t)| ScopeCol {
                    table: Some(label.clone()),
                    name: n.to_string(),
                    ty: t,
                    origin: None,
                    ..Default::default()
                })
                .collect();
            rename_cols(&mut cols, alias)?;
            Ok(Item {
                source: Source::SysView {
                    view,
                    args,
                    filter: vec![],
                },
                cols,
            })
        }
        other => Err(SqlError::new(
            ErrorKind::UndefinedFunction,
            format!("function {other}() does not exist"),
        )),
    }
}

/// Plans a FROM list into a left-deep join chain, in the written order;
/// a lateral item reads the items before it (see lateral.rs).
pub(super) fn plan_from(
    p: &mut Planner<'_>,
    from: &[ast::TableWithJoins],
    outer: &Option<Arc<Scope>>,
    _pending: &mut Vec<Expr>,
) -> Result<Item> {
    let mut acc: Option<Item> = None;
    for twj in from {
        let (first, reach) = beside(p, acc.as_ref(), &twj.relation, outer)?;
        acc = Some(match acc {
            None => first,
            Some(left) => {
                let lat = reach.map(|r| super::lateral::Lateral::in_place(&r, left.cols.len()));
                join(p, left, first, JoinKind::Inner, None, outer, lat)?
            }
        });
        for j in &twj.joins {
            use ast::JoinOperator as J;
            let (kind, constraint) = match &j.join_operator {
                J::Join(c) | J::Inner(c) => (JoinKind::Inner, Some(c)),
                J::Left(c) | J::LeftOuter(c) => (JoinKind::Left, Some(c)),
                J::Right(c) | J::RightOuter(c) => (JoinKind::Right, Some(c)),
                J::FullOuter(c) => (JoinKind::Full, Some(c)),
                J::CrossJoin(_) => (JoinKind::Inner, None),
                other => return Err(SqlError::unsupported(format!("join {other:?}"))),
            };
            let (right, reach) = beside(p, acc.as_ref(), &j.relation, outer)?;
            let left = acc.take().expect("a left side");
            if let Some(r) = &reach {
                super::lateral::check_kind(&kind, r, &left.cols)?;
            }
            let lat = reach.map(|r| super::lateral::Lateral::in_place(&r, left.cols.len()));
            acc = Some(join(p, left, right, kind, constraint, outer, lat)?);
        }
    }
    Ok(acc.unwrap_or(Item {
        source: Source::Single,
        cols: vec![],
    }))
}

/// A FROM item planned beside the items joined so far (`acc`).
fn beside(
    p: &mut Planner<'_>,
    acc: Option<&Item>,
    f: &TableFactor,
    outer: &Option<Arc<Scope>>,
) -> Result<(Item, Option<crate::expr::Reach>)> {
    let before = acc.map_or(&[][..], |a| &a.cols[..]);
    super::lateral::plan_beside(
        p,
        before,
        outer,
        super::lateral::may_be_lateral(f),
        &mut |p, o| plan_factor(p, f, o),
    )
}

/// Puts a condition on a join: a hash key if it equates the two sides,
/// otherwise a residual condition; single-side conditions of inner joins move
/// into that side.
pub(super) fn place_on_join(source: &mut Source, c: Expr, lw: usize) {
    let Source::Join {
        left,
        right,
        kind,
        keys,
        on,
        lateral,
        ..
    } = source
    else {
        return;
    };
    let mut used = Vec::new();
    cols_used(&c, &mut used);
    // A lateral right side runs with its left row as its enclosing row:
    // a condition over the join's row stays on the join (it would read the
    // wrong enclosing rows inside), unless it is the left side's alone.
    if lateral.is_some() {
        let to_left = matches!(kind, JoinKind::Inner)
            && !has_correlated_sub(&c)
            && !used.is_empty()
            && used.iter().all(|&i| i < lw)
            && takes_filters(left);
        if to_left {
            add_filter(left, c, 0);
        } else {
            on.push(c);
        }
        return;
    }
    // A reference to an enclosing query's row is a constant here, and may
    // go into either side (where it can choose an access path: a
    // correlated subquery's join would otherwise read both tables whole
    // for each outer row); a correlated subquery in the condition refers
    // to this join's whole row and stays on the join.
    if !has_correlated_sub(&c) {
        if let Expr::Bin(BinOp::Eq, a, b) = &c {
            let side = |e: &Expr| {
                let mut u = Vec::new();
                cols_used(e, &mut u);
                if u.is_empty() {
                    0
                } else if u.iter().all(|&i| i < lw) {
                    1
                } else if u.iter().all(|&i| i >= lw) {
                    2
                } else {
                    3
                }
            };
            let (sa, sb) = (side(a), side(b));
            if (sa, sb) == (1, 2) || (sa, sb) == (2, 1) {
                let Expr::Bin(_, a, b) = c else {
                    unreachable!()
                };
                let (mut l, mut r) = if sa == 1 { (*a, *b) } else { (*b, *a) };
                let _ = &mut l;
                shift(&mut r, lw);
                keys.push((l, r));
                return;
            }
        }
        // A condition on the inner side of an outer join only decides which
        // of its rows match, so it may filter that side's rows first (which
        // lets its key serve the join).
        let (to_left, to_right) = match kind {
            JoinKind::Inner => (true, true),
            JoinKind::Left => (false, true),
            JoinKind::Right => (true, false),
            JoinKind::Full => (false, false),
        };
        if !used.is_empty() {
            if to_left && takes_filters(left) && used.iter().all(|&i| i < lw) {
                add_filter(left, c, 0);
                return;
            }
            if to_right && takes_filters(right) && used.iter().all(|&i| i >= lw) {
                add_filter(right, c, lw);
                return;
            }
        }
    }
    on.push(c);
}

/// Whether `e` holds a correlated subquery.
fn has_correlated_sub(e: &Expr) -> bool {
    match e {
        Expr::Sub(s) => s.correlated,
        e => e.children().iter().any(|c| has_correlated_sub(c)),
    }
}

/// Whether a filter over a source's rows may be placed in it: not in an
/// outer join, where it would become part of the join's condition (and
/// turn rows it should remove into NULL-extended ones).
fn takes_filters(s: &Source) -> bool {
    !matches!(
        s,
        Source::Join {
            kind: JoinKind::Left | JoinKind::Right | JoinKind::Full,
            ..
        }
    )
}

/// Adds a filter (over the row of `source`, after shifting by `by`).
pub(super) fn add_filter(source: &mut Source, mut c: Expr, by: usize) {
    shift(&mut c, by);
    match source {
        Source::Table { filter, .. }
        | Source::Derived { filter, .. }
        | Source::SysView { filter, .. }
        | Source::Srf { filter, .. }
        | Source::Unnest { filter, .. }
        | Source::Ordinality { filter, .. }
        | Source::Ancestors { filter, .. }
        | Source::JsonRows { filter, .. } => filter.push(c),
        Source::Join { .. } => {
            let lw = source_width_left(source);
            place_on_join(source, c, lw);
        }
        Source::Single => {}
    }
}

pub(super) fn source_width(s: &Source) -> usize {
    match s {
        Source::Single => 0,
        Source::Table { table, .. } => table.def.columns.len(),
        Source::Derived { plan, .. } => plan.columns.len(),
        Source::SysView { view, .. } => view.columns().len(),
        Source::Srf { width, .. } => *width,
        Source::Unnest { arrays, .. } => arrays.len(),
        Source::Ordinality { inner, .. } => source_width(inner) + 1,
        Source::Ancestors { .. } => 2,
        Source::JsonRows { func, .. } => func.columns("").len(),
        Source::Join {
            left, right_width, ..
        } => source_width(left) + right_width,
    }
}

pub(super) fn source_width_left(s: &Source) -> usize {
    match s {
        Source::Join { left, .. } => source_width(left),
        _ => 0,
    }
}
