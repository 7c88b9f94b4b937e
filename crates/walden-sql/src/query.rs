//! Queries: planning a SELECT (sources, joins, filters pushed to where they
//! apply, grouping, ordering) and executing the plan over a transaction.
//!
//! The plan is built once per statement (and kept by prepared statements).
//! Filters on one table run before joins; equalities between tables become
//! hash-join keys; equalities on a table's whole primary key become point
//! lookups, the fast path of OLTP statements.

use crate::error::{ErrorKind, Result, SqlError};
use crate::expr::{compare, truth, BinOp, Env, Expr, Scope, ScopeCol};
use crate::functions::{self, Acc, AggKind, AggSpec};
use crate::sysviews::{self, SysView};
use crate::Column;
use sqlparser::ast::{self, SelectItem, SetExpr, TableFactor};
use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use walden_engine::{DataType, Database, Instance, Table, Value};

/// Grouping context while compiling expressions after GROUP BY.
pub struct AggCtx {
    pub group_keys: Vec<String>,
    pub input_scope: Arc<Scope>,
    pub aggs: Vec<AggSpec>,
}

/// Compile-time state of one statement.
pub struct Planner<'a> {
    pub db: Arc<Database>,
    _instance: std::marker::PhantomData<&'a Instance>,
    /// Parameter types inferred so far (`$1` is index 0).
    pub params: Vec<Option<DataType>>,
    pub agg: Option<AggCtx>,
    pub uses_sequences: bool,
    pub ctes: Vec<(String, Arc<QueryPlan>)>,
    /// Every table resolved, in order (for the privilege checks).
    used: std::cell::RefCell<Vec<(u32, String)>>,
}

impl<'a> Planner<'a> {
    pub fn new(db: Arc<Database>, _instance: &'a Instance, given: &[Option<DataType>]) -> Self {
        Planner {
            db,
            _instance: std::marker::PhantomData,
            params: given.to_vec(),
            agg: None,
            uses_sequences: false,
            ctes: Vec::new(),
            used: Default::default(),
        }
    }

    /// The tables resolved so far (id and name), in order, with repeats.
    pub fn used_tables(&self) -> std::cell::Ref<'_, Vec<(u32, String)>> {
        self.used.borrow()
    }

    pub fn note_param(&mut self, i: usize) {
        if self.params.len() <= i {
            self.params.resize(i + 1, None);
        }
    }

    pub fn infer_param(&mut self, i: usize, t: DataType) {
        self.note_param(i);
        if self.params[i].is_none() {
            self.params[i] = Some(t);
        }
    }

    /// `col = $1`: the parameter takes the column's type.
    pub fn infer_pair(&mut self, l: &Expr, r: &Expr, scope: &Scope) {
        match (l, r) {
            (Expr::Param(i), other) | (other, Expr::Param(i)) => {
                if let Some(t) = static_type(
                    other,
                    &scope.cols.iter().map(|c| c.ty.clone()).collect::<Vec<_>>(),
                    &self.params,
                ) {
                    self.infer_param(*i, t);
                }
            }
            _ => {}
        }
    }

    pub fn table(&self, name: &ast::ObjectName) -> Result<Arc<Table>> {
        let n = object_last(name);
        let t = self.db.table(&n)?;
        self.used.borrow_mut().push((t.id(), t.name().to_string()));
        Ok(t)
    }
}

/// The last part of a (possibly schema-qualified) name; `dbo.` and `public.`
/// resolve to the database's only schema.
pub fn object_last(name: &ast::ObjectName) -> String {
    name.0
        .last()
        .map(|p| match p {
            ast::ObjectNamePart::Identifier(i) => i.value.clone(),
            other => other.to_string(),
        })
        .unwrap_or_default()
}

fn object_schema(name: &ast::ObjectName) -> Option<String> {
    let n = name.0.len();
    (n >= 2).then(|| {
        name.0[n - 2]
            .to_string()
            .trim_matches('"')
            .to_ascii_lowercase()
    })
}

#[derive(Debug)]
pub enum JoinKind {
    Inner,
    Left,
    Right,
    Full,
}

/// Bounds on the first primary-key column (`id BETWEEN a AND b`, `id > a`).
#[derive(Debug, Default)]
pub struct KeyRange {
    /// (bound, inclusive)
    pub lo: Option<(Expr, bool)>,
    pub hi: Option<(Expr, bool)>,
}

/// A search through a secondary index: values for its first columns
/// (`eq`) and optionally bounds on the column after them.
#[derive(Debug)]
pub struct IndexPath {
    /// Position in the table's `indexes`.
    pub index: usize,
    pub eq: Vec<Expr>,
    pub range: Option<Box<KeyRange>>,
}

#[derive(Debug)]
pub enum Source {
    /// No FROM: one empty row.
    Single,
    Table {
        table: Arc<Table>,
        /// A point lookup on the whole primary key, when the filters fix it.
        lookup: Option<Vec<Expr>>,
        /// Otherwise, bounds on the key's first column that narrow the scan
        /// (the filters still decide which rows pass).
        range: Option<Box<KeyRange>>,
        /// Or a secondary index that narrows it further.
        index: Option<Box<IndexPath>>,
        filter: Vec<Expr>,
    },
    Derived {
        plan: Arc<QueryPlan>,
        filter: Vec<Expr>,
    },
    SysView {
        view: SysView,
        args: Vec<Expr>,
        filter: Vec<Expr>,
    },
    Series {
        start: Expr,
        stop: Expr,
        step: Option<Expr>,
        filter: Vec<Expr>,
    },
    /// `unnest(array)`: one row per element of an array in text form.
    Unnest { array: Expr, filter: Vec<Expr> },
    /// `pg_partition_ancestors(rel)`: (relid, depth); no Walden table is a
    /// partition, so a relation is its only ancestor, at depth 1.
    Ancestors { rel: Expr, filter: Vec<Expr> },
    /// jsonb_each, jsonb_array_elements, jsonb_object_keys and their
    /// json and _text forms.
    JsonRows {
        func: crate::jsonfn::JsonSrf,
        arg: Expr,
        filter: Vec<Expr>,
    },
    Join {
        left: Box<Source>,
        right: Box<Source>,
        kind: JoinKind,
        /// Hash-join keys: expressions over the left row and over the right row.
        keys: Vec<(Expr, Expr)>,
        /// Condition over the combined row.
        on: Vec<Expr>,
        right_width: usize,
    },
}

#[derive(Debug)]
pub enum SortKey {
    /// An output column.
    Output(usize),
    /// An expression over the row before projection.
    Input(Expr),
}

/// ORDER BY items: key, descending, nulls first.
pub type Order = Vec<(SortKey, bool, bool)>;

/// Per-group state: key values, accumulators, and values seen by DISTINCT aggregates.
/// A group's key, its aggregates' states, their DISTINCT sets, and the
/// rows held back for aggregates with their own ORDER BY (sort key, value,
/// second argument).
type GroupState = (Vec<Value>, Vec<Acc>, Vec<HashSet<Value>>, Vec<Vec<Held>>);
type Held = (Vec<Value>, Value, Value);

#[derive(Debug)]
pub struct SelectPlan {
    pub from: Source,
    pub filter: Vec<Expr>,
    pub group: Option<(Vec<Expr>, Vec<AggSpec>)>,
    pub having: Option<Expr>,
    pub projection: Vec<Expr>,
    pub distinct: bool,
}

#[derive(Debug)]
pub enum Body {
    Select(Box<SelectPlan>),
    SetOp {
        left: Box<QueryPlan>,
        right: Box<QueryPlan>,
        op: ast::SetOperator,
        all: bool,
    },
    Values(Vec<Vec<Expr>>),
}

#[derive(Debug)]
pub struct QueryPlan {
    pub columns: Vec<Column>,
    pub body: Body,
    pub order: Vec<(SortKey, bool, bool)>,
    pub limit: Option<Expr>,
    pub offset: Option<Expr>,
    /// Refers to an enclosing query's columns.
    pub correlated: bool,
}

/// Static type of an expression over a row of `types`.
pub fn static_type(e: &Expr, types: &[DataType], params: &[Option<DataType>]) -> Option<DataType> {
    Some(match e {
        Expr::Lit(v) => match v {
            Value::Null => return None,
            Value::Bool(_) => DataType::Bool,
            Value::Int(i) if i32::try_from(*i).is_ok() => DataType::Int,
            Value::Int(_) => DataType::BigInt,
            Value::Float(_) => DataType::Double,
            Value::Decimal(_) => DataType::Decimal {
                precision: 0,
                scale: 0,
            },
            Value::Text(_) => DataType::Text,
            Value::Timestamp(_) => DataType::Timestamp,
            Value::Date(_) => DataType::Date,
            Value::Uuid(_) => DataType::Uuid,
            Value::Bytes(_) => DataType::Bytes,
            Value::TimestampTz(_) => DataType::TimestampTz,
            Value::Time(_) => DataType::Time,
            Value::Interval(_) => DataType::Interval,
            Value::Json(_) => DataType::Json,
            Value::Jsonb(_) => DataType::Jsonb,
        },
        Expr::Param(i) => params.get(*i).cloned().flatten()?,
        Expr::Col(i) => types.get(*i)?.clone(),
        Expr::Outer(..) => return None,
        Expr::Not(_)
        | Expr::IsNull(..)
        | Expr::IsBool(..)
        | Expr::InList(..)
        | Expr::Between(..)
        | Expr::Like { .. } => DataType::Bool,
        Expr::Neg(x) => static_type(x, types, params)?,
        Expr::Bin(op, a, b) => match op {
            // jsonb || jsonb and jsonb - key are jsonb.
            BinOp::Concat | BinOp::Sub
                if static_type(a, types, params) == Some(DataType::Jsonb)
                    || (*op == BinOp::Concat
                        && static_type(b, types, params) == Some(DataType::Jsonb)) =>
            {
                DataType::Jsonb
            }
            BinOp::Concat => DataType::Text,
            BinOp::Regex(..) => DataType::Bool,
            BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Mod => {
                let (ta, tb) = (static_type(a, types, params), static_type(b, types, params));
                match (ta, tb) {
                    (Some(x), Some(y)) => crate::temporal::arith_type(*op, &x, &y)
                        .unwrap_or_else(|| numeric_promote(&x, &y)),
                    (Some(x), None) | (None, Some(x)) => x,
                    _ => return None,
                }
            }
            _ => DataType::Bool,
        },
        Expr::Case(_, whens, els) => whens
            .iter()
            .find_map(|(_, t)| static_type(t, types, params))
            .or_else(|| els.as_ref().and_then(|e| static_type(e, types, params)))?,
        Expr::Cast(_, t) => t.clone(),
        Expr::Func(f, args) => {
            let ts: Vec<DataType> = args
                .iter()
                .map(|a| static_type(a, types, params).unwrap_or(DataType::Text))
                .collect();
            functions::func_type(*f, &ts)
        }
        Expr::Sub(s) => match s.kind {
            crate::expr::SubKind::Scalar => s.plan.columns.first()?.ty.clone(),
            _ => DataType::Bool,
        },
    })
}

fn numeric_promote(a: &DataType, b: &DataType) -> DataType {
    use DataType::*;
    match (a, b) {
        (Double | Real, _) | (_, Double | Real) => Double,
        (Decimal { .. }, _) | (_, Decimal { .. }) => Decimal {
            precision: 0,
            scale: 0,
        },
        (BigInt, _) | (_, BigInt) => BigInt,
        (Int, _) | (_, Int) => Int,
        (SmallInt, SmallInt) => SmallInt,
        (Timestamp, _) => Timestamp,
        (Date, Date) => Int,
        (Date, _) => Date,
        (Text, _) | (_, Text) => Text,
        (x, _) => x.clone(),
    }
}

/// Splits an AND tree into its conjuncts.
pub(crate) fn conjuncts(e: &ast::Expr, out: &mut Vec<ast::Expr>) {
    match e {
        ast::Expr::BinaryOp {
            left,
            op: ast::BinaryOperator::And,
            right,
        } => {
            conjuncts(left, out);
            conjuncts(right, out);
        }
        ast::Expr::Nested(inner)
            if matches!(
                inner.as_ref(),
                ast::Expr::BinaryOp {
                    op: ast::BinaryOperator::And,
                    ..
                }
            ) =>
        {
            conjuncts(inner, out)
        }
        other => out.push(other.clone()),
    }
}

/// Column indices (of the current row) an expression reads.
pub fn cols_used(e: &Expr, out: &mut Vec<usize>) {
    if let Expr::Col(i) = e {
        out.push(*i);
    }
    for c in e.children() {
        cols_used(c, out);
    }
}

/// Shifts column indices by `-by` (to evaluate over a sub-row).
fn shift(e: &mut Expr, by: usize) {
    if let Expr::Col(i) = e {
        *i -= by;
    }
    for c in e.children_mut() {
        shift(c, by);
    }
}

/// A FROM item being assembled: its source, its columns, and whether it sits
/// on the nullable side of an outer join (filters must not move into it).
struct Item {
    source: Source,
    cols: Vec<ScopeCol>,
}

fn alias_name(alias: &Option<ast::TableAlias>) -> Option<String> {
    alias.as_ref().map(|a| a.name.value.to_ascii_lowercase())
}

fn rename_cols(cols: &mut [ScopeCol], alias: &Option<ast::TableAlias>) {
    if let Some(a) = alias {
        for (c, n) in cols.iter_mut().zip(a.columns.iter()) {
            c.name = crate::expr::fold_ident(&n.name);
        }
    }
}

fn plan_factor(p: &mut Planner<'_>, f: &TableFactor, outer: &Option<Arc<Scope>>) -> Result<Item> {
    match f {
        TableFactor::Table {
            name,
            alias,
            args,
            with_hints,
            ..
        } => {
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
                });
                for a in &args.args {
                    if let ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) = a {
                        exprs.push(Expr::compile(p, &scope, e)?);
                    }
                }
                return table_function(&tname, exprs, label, alias);
            }
            if let Some(view) = sysviews::lookup(schema.as_deref(), &tname) {
                let mut cols: Vec<ScopeCol> = view
                    .columns()
                    .into_iter()
                    .map(|(n, t)| ScopeCol {
                        table: Some(label.clone()),
                        name: n.to_string(),
                        ty: t,
                    })
                    .collect();
                rename_cols(&mut cols, alias);
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
                    let mut cols: Vec<ScopeCol> = plan
                        .columns
                        .iter()
                        .map(|c| ScopeCol {
                            table: Some(label.clone()),
                            name: c.name.clone(),
                            ty: c.ty.clone(),
                        })
                        .collect();
                    rename_cols(&mut cols, alias);
                    return Ok(Item {
                        source: Source::Derived {
                            plan,
                            filter: vec![],
                        },
                        cols,
                    });
                }
            }
            let table = p.table(name)?;
            let mut cols: Vec<ScopeCol> = table
                .def
                .columns
                .iter()
                .map(|c| ScopeCol {
                    table: Some(label.clone()),
                    name: c.name.clone(),
                    ty: c.data_type.clone(),
                })
                .collect();
            rename_cols(&mut cols, alias);
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
            subquery,
            alias,
            lateral,
            ..
        } => {
            if *lateral {
                return Err(SqlError::unsupported("LATERAL"));
            }
            let plan = Arc::new(plan_query(p, subquery, outer.clone())?);
            let label = alias_name(alias);
            let mut cols: Vec<ScopeCol> = plan
                .columns
                .iter()
                .map(|c| ScopeCol {
                    table: label.clone(),
                    name: c.name.clone(),
                    ty: c.ty.clone(),
                })
                .collect();
            rename_cols(&mut cols, alias);
            Ok(Item {
                source: Source::Derived {
                    plan,
                    filter: vec![],
                },
                cols,
            })
        }
        TableFactor::Function {
            name, args, alias, ..
        } => {
            let scope = Arc::new(Scope {
                cols: vec![],
                parent: outer.clone(),
            });
            let mut exprs = Vec::new();
            for a in args {
                if let ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) = a {
                    exprs.push(Expr::compile(p, &scope, e)?);
                }
            }
            let tname = object_last(name);
            let label = alias_name(alias).unwrap_or_else(|| tname.to_ascii_lowercase());
            table_function(&tname, exprs, label, alias)
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
            Ok(item)
        }
        other => Err(SqlError::unsupported(format!("FROM item {other}"))),
    }
}

fn table_function(
    name: &str,
    args: Vec<Expr>,
    label: String,
    alias: &Option<ast::TableAlias>,
) -> Result<Item> {
    let lname = name.to_ascii_lowercase();
    if let Some(func) = crate::jsonfn::srf(&lname) {
        let [arg] = <[Expr; 1]>::try_from(args)
            .map_err(|_| SqlError::syntax(format!("{lname} takes one argument")))?;
        let mut cols: Vec<ScopeCol> = func
            .columns(&label)
            .into_iter()
            .map(|(n, t)| ScopeCol {
                table: Some(label.clone()),
                name: n,
                ty: t,
            })
            .collect();
        rename_cols(&mut cols, alias);
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
        "generate_series" => {
            if args.len() < 2 || args.len() > 3 {
                return Err(SqlError::syntax("generate_series(start, stop [, step])"));
            }
            let mut it = args.into_iter();
            let (start, stop, step) = (it.next().unwrap(), it.next().unwrap(), it.next());
            // `generate_series(...) AS x` names the column x.
            let col = alias
                .as_ref()
                .and_then(|a| a.columns.first().map(|c| c.name.value.to_ascii_lowercase()))
                .unwrap_or_else(|| label.clone());
            Ok(Item {
                source: Source::Series {
                    start,
                    stop,
                    step,
                    filter: vec![],
                },
                cols: vec![ScopeCol {
                    table: Some(label),
                    name: col,
                    ty: DataType::BigInt,
                }],
            })
        }
        "unnest" => {
            let [array] = <[Expr; 1]>::try_from(args)
                .map_err(|_| SqlError::syntax("unnest takes one array"))?;
            let col = alias
                .as_ref()
                .and_then(|a| a.columns.first().map(|c| c.name.value.to_ascii_lowercase()))
                .unwrap_or_else(|| label.clone());
            Ok(Item {
                source: Source::Unnest {
                    array,
                    filter: vec![],
                },
                cols: vec![ScopeCol {
                    table: Some(label),
                    name: col,
                    ty: DataType::Text,
                }],
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
                })
                .collect();
            rename_cols(&mut cols, alias);
            Ok(Item {
                source: Source::Ancestors {
                    rel,
                    filter: vec![],
                },
                cols,
            })
        }
        "dm_io_virtual_file_stats" => {
            let view = SysView::FileStats;
            let mut cols: Vec<ScopeCol> = view
                .columns()
                .into_iter()
                .map(|(n, t)| ScopeCol {
                    table: Some(label.clone()),
                    name: n.to_string(),
                    ty: t,
                })
                .collect();
            rename_cols(&mut cols, alias);
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

/// Plans a FROM list into a left-deep join chain. `pending` receives the ON
/// conditions of outer joins' nullable sides' ... (unused: conditions stay on
/// their join).
fn plan_from(
    p: &mut Planner<'_>,
    from: &[ast::TableWithJoins],
    outer: &Option<Arc<Scope>>,
    _pending: &mut Vec<Expr>,
) -> Result<Item> {
    let mut acc: Option<Item> = None;
    for twj in from {
        let first = plan_factor(p, &twj.relation, outer)?;
        acc = Some(match acc {
            None => first,
            Some(left) => join(p, left, first, JoinKind::Inner, None, outer)?,
        });
        for j in &twj.joins {
            let right = plan_factor(p, &j.relation, outer)?;
            use ast::JoinOperator as J;
            let (kind, constraint) = match &j.join_operator {
                J::Join(c) | J::Inner(c) => (JoinKind::Inner, Some(c)),
                J::Left(c) | J::LeftOuter(c) => (JoinKind::Left, Some(c)),
                J::Right(c) | J::RightOuter(c) => (JoinKind::Right, Some(c)),
                J::FullOuter(c) => (JoinKind::Full, Some(c)),
                J::CrossJoin(_) => (JoinKind::Inner, None),
                other => return Err(SqlError::unsupported(format!("join {other:?}"))),
            };
            let left = acc.take().unwrap();
            acc = Some(join(p, left, right, kind, constraint, outer)?);
        }
    }
    Ok(acc.unwrap_or(Item {
        source: Source::Single,
        cols: vec![],
    }))
}

fn join(
    p: &mut Planner<'_>,
    left: Item,
    right: Item,
    kind: JoinKind,
    constraint: Option<&ast::JoinConstraint>,
    outer: &Option<Arc<Scope>>,
) -> Result<Item> {
    let lw = left.cols.len();
    let mut cols = left.cols;
    let right_width = right.cols.len();
    cols.extend(right.cols);
    let scope = Arc::new(Scope {
        cols: cols.clone(),
        parent: outer.clone(),
    });
    let mut on = Vec::new();
    match constraint {
        Some(ast::JoinConstraint::On(e)) => {
            let mut cs = Vec::new();
            conjuncts(e, &mut cs);
            for c in cs {
                on.push(Expr::compile(p, &scope, &c)?);
            }
        }
        Some(ast::JoinConstraint::Using(names)) => {
            for n in names {
                let n = object_last(n).to_ascii_lowercase();
                let li = cols[..lw]
                    .iter()
                    .position(|c| c.name.eq_ignore_ascii_case(&n));
                let ri = cols[lw..]
                    .iter()
                    .position(|c| c.name.eq_ignore_ascii_case(&n));
                match (li, ri) {
                    (Some(l), Some(r)) => on.push(Expr::Bin(BinOp::Eq, Box::new(Expr::Col(l)), Box::new(Expr::Col(lw + r)))),
                    _ => {
                        return Err(SqlError::new(
                            ErrorKind::UndefinedColumn,
                            format!("column \"{n}\" specified in USING clause does not exist in both tables"),
                        ))
                    }
                }
            }
        }
        Some(ast::JoinConstraint::Natural) => return Err(SqlError::unsupported("NATURAL JOIN")),
        Some(ast::JoinConstraint::None) | None => {}
    }
    let mut source = Source::Join {
        left: Box::new(left.source),
        right: Box::new(right.source),
        kind,
        keys: vec![],
        on: vec![],
        right_width,
    };
    for c in on {
        place_on_join(&mut source, c, lw);
    }
    Ok(Item { source, cols })
}

/// Puts a condition on a join: a hash key if it equates the two sides,
/// otherwise a residual condition; single-side conditions of inner joins move
/// into that side.
fn place_on_join(source: &mut Source, c: Expr, lw: usize) {
    let Source::Join {
        left,
        right,
        kind,
        keys,
        on,
        ..
    } = source
    else {
        return;
    };
    let mut used = Vec::new();
    cols_used(&c, &mut used);
    let correlated_sub = matches!(&c, Expr::Sub(s) if s.correlated);
    if !correlated_sub && !c.uses_outer() {
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
        if matches!(kind, JoinKind::Inner) && !used.is_empty() {
            if used.iter().all(|&i| i < lw) {
                add_filter(left, c, 0);
                return;
            }
            if used.iter().all(|&i| i >= lw) {
                add_filter(right, c, lw);
                return;
            }
        }
    }
    on.push(c);
}

/// Adds a filter (over the row of `source`, after shifting by `by`).
fn add_filter(source: &mut Source, mut c: Expr, by: usize) {
    shift(&mut c, by);
    match source {
        Source::Table { filter, .. }
        | Source::Derived { filter, .. }
        | Source::SysView { filter, .. }
        | Source::Series { filter, .. }
        | Source::Unnest { filter, .. }
        | Source::Ancestors { filter, .. }
        | Source::JsonRows { filter, .. } => filter.push(c),
        Source::Join { .. } => {
            let lw = source_width_left(source);
            place_on_join(source, c, lw);
        }
        Source::Single => {}
    }
}

fn source_width(s: &Source) -> usize {
    match s {
        Source::Single => 0,
        Source::Table { table, .. } => table.def.columns.len(),
        Source::Derived { plan, .. } => plan.columns.len(),
        Source::SysView { view, .. } => view.columns().len(),
        Source::Series { .. } | Source::Unnest { .. } => 1,
        Source::Ancestors { .. } => 2,
        Source::JsonRows { func, .. } => func.columns("").len(),
        Source::Join {
            left, right_width, ..
        } => source_width(left) + right_width,
    }
}

fn source_width_left(s: &Source) -> usize {
    match s {
        Source::Join { left, .. } => source_width(left),
        _ => 0,
    }
}

/// Turns equality filters on a table's whole primary key into a point lookup.
pub fn choose_lookups(s: &mut Source) {
    match s {
        Source::Table {
            table,
            lookup,
            range,
            index,
            filter,
        } => {
            if !table.def.primary_key.is_empty() {
                *range = choose_range(table.def.primary_key[0], filter);
                let key: Option<Vec<Expr>> = table
                    .def
                    .primary_key
                    .iter()
                    .map(|&pk| equal_const(pk, filter))
                    .collect();
                if let Some(key) = key {
                    *lookup = Some(key);
                    *range = None;
                    return;
                }
            }
            *index = choose_index(table, filter, range.is_some());
            if index.is_some() {
                *range = None;
            }
        }
        Source::Join { left, right, .. } => {
            choose_lookups(left);
            choose_lookups(right);
        }
        _ => {}
    }
}

/// A constant that `filter` says column `col` equals.
fn equal_const(col: usize, filter: &[Expr]) -> Option<Expr> {
    filter.iter().find_map(|f| match f {
        Expr::Bin(BinOp::Eq, a, b) => match (a.as_ref(), b.as_ref()) {
            (Expr::Col(i), other) | (other, Expr::Col(i)) if *i == col && !other.uses_row() => {
                clone_const(other)
            }
            _ => None,
        },
        _ => None,
    })
}

/// The index that fixes the most leading columns by equality (a range on
/// the next one counts half a column); none when no index helps, or when
/// it would only give a range and the primary key gives one already.
fn choose_index(table: &Table, filter: &[Expr], pk_range: bool) -> Option<Box<IndexPath>> {
    let mut best: Option<(usize, IndexPath)> = None;
    for (n, ix) in table.indexes.iter().enumerate() {
        let mut eq = Vec::new();
        for &c in &ix.def.columns {
            match equal_const(c, filter) {
                Some(e) => eq.push(e),
                None => break,
            }
        }
        let range = ix
            .def
            .columns
            .get(eq.len())
            .and_then(|&c| choose_range(c, filter));
        let score = eq.len() * 2 + range.is_some() as usize;
        if score == 0 || (eq.is_empty() && pk_range) {
            continue;
        }
        if best.as_ref().is_none_or(|(b, _)| score > *b) {
            best = Some((
                score,
                IndexPath {
                    index: n,
                    eq,
                    range,
                },
            ));
        }
    }
    best.map(|(_, p)| Box::new(p))
}

/// A value for a bound or lookup on a column of type `ty`: `None` when it
/// is NULL (nothing equals it), `Some(Err(()))` when it does not convert
/// without loss (it then cannot narrow a search: `id > 2.5` on an integer).
fn bound_value(
    e: &Expr,
    ty: &DataType,
    env: &Env<'_>,
) -> Result<Option<std::result::Result<Value, ()>>> {
    let v = e.eval(&[], env)?;
    if v.is_null() {
        return Ok(None);
    }
    Ok(Some(match walden_engine::types::coerce(v.clone(), ty) {
        Ok(c)
            if matches!(
                crate::expr::compare(&c, &v),
                Ok(Some(std::cmp::Ordering::Equal))
            ) =>
        {
            Ok(c)
        }
        _ => Err(()),
    }))
}

/// The rows an index search finds, as the transaction sees them, in key
/// order (the caller applies the filter). `None` when the index cannot
/// serve this execution (a value that does not convert, or a snapshot
/// older than the index): the caller scans instead.
pub(crate) fn index_rows(
    table: &Table,
    ip: &IndexPath,
    env: &Env<'_>,
) -> Result<Option<Vec<(walden_engine::Key, walden_engine::Row)>>> {
    use std::ops::Bound;
    let Some(ix) = table.indexes.get(ip.index) else {
        return Ok(None);
    };
    let col_type = |k: usize| &table.def.columns[ix.def.columns[k]].data_type;
    let mut prefix = Vec::with_capacity(ip.eq.len() + 1);
    for (k, e) in ip.eq.iter().enumerate() {
        match bound_value(e, col_type(k), env)? {
            None => return Ok(Some(Vec::new())),
            Some(Ok(v)) => prefix.push(v),
            Some(Err(())) => return Ok(None),
        }
    }
    let n = prefix.len();
    let mut lo_val = None;
    let mut hi = None;
    if let Some(r) = &ip.range {
        let ty = col_type(n);
        if let Some((e, _)) = &r.lo {
            match bound_value(e, ty, env)? {
                None => return Ok(Some(Vec::new())),
                Some(Ok(v)) => lo_val = Some(v),
                Some(Err(())) => {}
            }
        }
        if let Some((e, inclusive)) = &r.hi {
            match bound_value(e, ty, env)? {
                None => return Ok(Some(Vec::new())),
                Some(Ok(v)) => hi = Some((v, *inclusive)),
                Some(Err(())) => {}
            }
        }
    }
    // Entries are the values followed by the row key, so they sort after
    // the bare values: an inclusive start at the values finds them all
    // (an exclusive lower bound is left to the filter).
    let mut start = prefix.clone();
    if let Some(v) = lo_val {
        start.push(v);
    }
    let lo = if start.is_empty() {
        Bound::Unbounded
    } else {
        Bound::Included(start.into_boxed_slice())
    };
    let more = |k: &walden_engine::Key| {
        k.starts_with(&prefix)
            && hi.as_ref().is_none_or(|(h, inclusive)| match k.get(n) {
                Some(v) if v.is_null() => true,
                Some(v) => {
                    if *inclusive {
                        v <= h
                    } else {
                        v < h
                    }
                }
                None => false,
            })
    };
    Ok(env.tx.index_scan(table, ip.index, lo, more))
}

/// Bounds on key column `col` from comparisons and BETWEEN in `filter`.
fn choose_range(col: usize, filter: &[Expr]) -> Option<Box<KeyRange>> {
    let mut r = KeyRange::default();
    // Keeps the first bound found on each side; any one is a valid superset.
    let mut set = |lo: bool, e: &Expr, inclusive: bool| {
        let slot = if lo { &mut r.lo } else { &mut r.hi };
        if slot.is_none() {
            if let Some(c) = clone_const(e) {
                *slot = Some((c, inclusive));
            }
        }
    };
    for f in filter {
        match f {
            Expr::Bin(op @ (BinOp::Lt | BinOp::LtEq | BinOp::Gt | BinOp::GtEq), a, b) => {
                // `col op e` or `e op col` (mirrored).
                let (e, op) = match (a.as_ref(), b.as_ref()) {
                    (Expr::Col(i), e) if *i == col && !e.uses_row() => (e, *op),
                    (e, Expr::Col(i)) if *i == col && !e.uses_row() => (
                        e,
                        match op {
                            BinOp::Lt => BinOp::Gt,
                            BinOp::LtEq => BinOp::GtEq,
                            BinOp::Gt => BinOp::Lt,
                            _ => BinOp::LtEq,
                        },
                    ),
                    _ => continue,
                };
                match op {
                    BinOp::Gt => set(true, e, false),
                    BinOp::GtEq => set(true, e, true),
                    BinOp::Lt => set(false, e, false),
                    _ => set(false, e, true),
                }
            }
            Expr::Between(x, lo, hi, false)
                if matches!(x.as_ref(), Expr::Col(i) if *i == col)
                    && !lo.uses_row()
                    && !hi.uses_row() =>
            {
                set(true, lo, true);
                set(false, hi, true);
            }
            _ => {}
        }
    }
    (r.lo.is_some() || r.hi.is_some()).then(|| Box::new(r))
}

/// The scan bounds of `range` on `table`. Only what is certain narrows the
/// scan: a bound whose value does not convert to the key column's type, and
/// the upper or exclusive-lower bound of a composite key (whose longer keys
/// sort after the one-column bound), leave that side open.
pub(crate) fn key_bounds(
    table: &Table,
    range: Option<&KeyRange>,
    env: &Env<'_>,
) -> Result<(
    std::ops::Bound<walden_engine::Key>,
    std::ops::Bound<walden_engine::Key>,
)> {
    use std::ops::Bound;
    let Some(r) = range else {
        return Ok((Bound::Unbounded, Bound::Unbounded));
    };
    let single = table.def.primary_key.len() == 1;
    let ty = &table.def.columns[table.def.primary_key[0]].data_type;
    let conv = |e: &Expr| -> Result<Option<Value>> {
        let v = e.eval(&[], env)?;
        if v.is_null() {
            return Ok(None);
        }
        // Only a lossless conversion may bound the scan: `id > 2.5` must not
        // become `id > 3` (or 2) on an integer key.
        Ok(match walden_engine::types::coerce(v.clone(), ty) {
            Ok(c)
                if matches!(
                    crate::expr::compare(&c, &v),
                    Ok(Some(std::cmp::Ordering::Equal))
                ) =>
            {
                Some(c)
            }
            _ => None,
        })
    };
    let lo = match &r.lo {
        Some((e, inc)) => match conv(e)? {
            Some(v) if *inc || single => {
                let k: walden_engine::Key = vec![v].into_boxed_slice();
                if *inc {
                    Bound::Included(k)
                } else {
                    Bound::Excluded(k)
                }
            }
            Some(v) => Bound::Included(vec![v].into_boxed_slice()),
            None => Bound::Unbounded,
        },
        None => Bound::Unbounded,
    };
    let hi = match &r.hi {
        Some((e, inc)) if single => match conv(e)? {
            Some(v) => {
                let k: walden_engine::Key = vec![v].into_boxed_slice();
                if *inc {
                    Bound::Included(k)
                } else {
                    Bound::Excluded(k)
                }
            }
            None => Bound::Unbounded,
        },
        _ => Bound::Unbounded,
    };
    // An empty or inverted range would make BTreeMap::range panic.
    let empty = match (&lo, &hi) {
        (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) => {
            a > b
                || (a == b
                    && !(matches!(lo, Bound::Included(_)) && matches!(hi, Bound::Included(_))))
        }
        _ => false,
    };
    if empty {
        return Ok((Bound::Included(Box::new([])), Bound::Excluded(Box::new([]))));
    }
    Ok((lo, hi))
}

/// A copy of a row-independent expression (literals, parameters, casts of them).
fn clone_const(e: &Expr) -> Option<Expr> {
    Some(match e {
        Expr::Lit(v) => Expr::Lit(v.clone()),
        Expr::Param(i) => Expr::Param(*i),
        Expr::Outer(d, i) => Expr::Outer(*d, *i),
        Expr::Neg(x) => Expr::Neg(Box::new(clone_const(x)?)),
        Expr::Cast(x, t) => Expr::Cast(Box::new(clone_const(x)?), t.clone()),
        Expr::Bin(op, a, b) => Expr::Bin(*op, Box::new(clone_const(a)?), Box::new(clone_const(b)?)),
        _ => return None,
    })
}

/// Whether a plan can run again for a later execution of the same statement:
/// it reads only tables (no system views, table functions or derived tables,
/// whose plans are not worth keeping) and holds no subquery, whose rows are
/// cached in the plan for one statement.
pub(crate) fn reusable(plan: &QueryPlan) -> bool {
    let body = match &plan.body {
        Body::Select(sel) => {
            let group_ok = sel.group.as_ref().is_none_or(|(keys, aggs)| {
                no_subquery(keys)
                    && no_subquery(
                        aggs.iter()
                            .flat_map(|a| a.arg.iter().chain(a.separator.iter())),
                    )
            });
            source_reusable(&sel.from)
                && no_subquery(&sel.filter)
                && no_subquery(&sel.projection)
                && no_subquery(&sel.having)
                && group_ok
        }
        Body::SetOp { left, right, .. } => reusable(left) && reusable(right),
        Body::Values(rows) => no_subquery(rows.iter().flatten()),
    };
    let order_ok = plan.order.iter().all(|(k, _, _)| match k {
        SortKey::Output(_) => true,
        SortKey::Input(e) => !e.has_subquery(),
    });
    body && order_ok && no_subquery(plan.limit.iter().chain(plan.offset.iter()))
}

/// The expressions an index search evaluates.
pub(crate) fn index_exprs(ip: &IndexPath) -> impl Iterator<Item = &Expr> {
    ip.eq.iter().chain(
        ip.range
            .iter()
            .flat_map(|r| r.lo.iter().chain(r.hi.iter()).map(|(e, _)| e)),
    )
}

fn no_subquery<'a>(es: impl IntoIterator<Item = &'a Expr>) -> bool {
    es.into_iter().all(|e| !e.has_subquery())
}

fn source_reusable(s: &Source) -> bool {
    match s {
        Source::Single => true,
        Source::Table {
            lookup,
            range,
            index,
            filter,
            ..
        } => {
            no_subquery(lookup.iter().flatten())
                && range
                    .as_deref()
                    .is_none_or(|r| no_subquery(r.lo.iter().chain(r.hi.iter()).map(|(e, _)| e)))
                && index
                    .as_deref()
                    .is_none_or(|ip| no_subquery(index_exprs(ip)))
                && no_subquery(filter)
        }
        Source::Join {
            left,
            right,
            keys,
            on,
            ..
        } => {
            source_reusable(left)
                && source_reusable(right)
                && keys
                    .iter()
                    .all(|(a, b)| !a.has_subquery() && !b.has_subquery())
                && no_subquery(on)
        }
        Source::Derived { .. }
        | Source::SysView { .. }
        | Source::Series { .. }
        | Source::Unnest { .. }
        | Source::Ancestors { .. }
        | Source::JsonRows { .. } => false,
    }
}

/// Plans a query (`outer`: the enclosing query's scope, for correlation).
pub fn plan_query(
    p: &mut Planner<'_>,
    q: &ast::Query,
    outer: Option<Arc<Scope>>,
) -> Result<QueryPlan> {
    // A top-level locking read is planned by `locking.rs`; anywhere else
    // (a subquery, a CTE, INSERT ... SELECT) it would take no lock.
    if !q.locks.is_empty() {
        return Err(SqlError::unsupported(
            "FOR UPDATE / FOR SHARE in a subquery, CTE or INSERT ... SELECT",
        ));
    }
    let saved_ctes = p.ctes.len();
    if let Some(with) = &q.with {
        if with.recursive {
            return Err(SqlError::unsupported("WITH RECURSIVE"));
        }
        for cte in &with.cte_tables {
            let mut plan = plan_query(p, &cte.query, outer.clone())?;
            for (c, a) in plan.columns.iter_mut().zip(cte.alias.columns.iter()) {
                c.name = a.name.value.to_ascii_lowercase();
            }
            p.ctes
                .push((cte.alias.name.value.to_ascii_lowercase(), Arc::new(plan)));
        }
    }
    let r = plan_query_body(p, q, outer);
    p.ctes.truncate(saved_ctes);
    r
}

fn plan_query_body(
    p: &mut Planner<'_>,
    q: &ast::Query,
    outer: Option<Arc<Scope>>,
) -> Result<QueryPlan> {
    let order_items: Vec<ast::OrderByExpr> = match &q.order_by {
        Some(ob) => match &ob.kind {
            ast::OrderByKind::Expressions(v) => v.clone(),
            ast::OrderByKind::All(_) => return Err(SqlError::unsupported("ORDER BY ALL")),
        },
        None => vec![],
    };
    let empty = Arc::new(Scope {
        cols: vec![],
        parent: outer.clone(),
    });
    let (mut limit, offset) = limit_offset(p, &empty, q)?;
    if let Some(f) = &q.fetch {
        if let Some(qty) = &f.quantity {
            limit = Some(Expr::compile(p, &empty, qty)?);
        }
    }
    for l in [&limit, &offset].into_iter().flatten() {
        if let Expr::Param(i) = l {
            p.infer_param(*i, DataType::BigInt);
        }
    }
    let mut plan = match q.body.as_ref() {
        SetExpr::Select(sel) => {
            let (plan, order) = plan_select(p, sel, &order_items, outer.clone())?;
            let mut plan = plan;
            plan.order = order;
            if let Some(top) = &sel.top {
                limit = Some(match &top.quantity {
                    Some(ast::TopQuantity::Expr(e)) => Expr::compile(p, &empty, e)?,
                    Some(ast::TopQuantity::Constant(n)) => Expr::Lit(Value::Int(*n as i64)),
                    None => return Err(SqlError::syntax("TOP needs a row count")),
                });
            }
            plan
        }
        other => {
            let mut plan = plan_set_expr(p, other, outer.clone())?;
            plan.order = output_order(&plan.columns, &order_items)?;
            plan
        }
    };
    plan.limit = limit;
    plan.offset = offset;
    Ok(plan)
}

fn output_order(
    columns: &[Column],
    items: &[ast::OrderByExpr],
) -> Result<Vec<(SortKey, bool, bool)>> {
    let mut out = Vec::new();
    for it in items {
        let desc = matches!(it.options.sort, Some(ast::OrderBySort::Desc));
        let nulls_first = it.options.nulls_first.unwrap_or(desc);
        let idx = match &it.expr {
            ast::Expr::Value(v) => match &v.value {
                ast::Value::Number(n, _) => n
                    .parse::<usize>()
                    .ok()
                    .filter(|&i| i >= 1 && i <= columns.len())
                    .map(|i| i - 1),
                _ => None,
            },
            e => {
                let name = crate::expr::column_name(e);
                columns
                    .iter()
                    .position(|c| c.name.eq_ignore_ascii_case(&name))
            }
        };
        match idx {
            Some(i) => out.push((SortKey::Output(i), desc, nulls_first)),
            None => {
                return Err(SqlError::new(
                    ErrorKind::UndefinedColumn,
                    format!("ORDER BY term {} does not match a result column", it.expr),
                ))
            }
        }
    }
    Ok(out)
}

fn plan_set_expr(
    p: &mut Planner<'_>,
    body: &SetExpr,
    outer: Option<Arc<Scope>>,
) -> Result<QueryPlan> {
    match body {
        SetExpr::Select(sel) => Ok(plan_select(p, sel, &[], outer)?.0),
        SetExpr::Query(q) => plan_query(p, q, outer),
        SetExpr::SetOperation {
            left,
            op,
            set_quantifier,
            right,
        } => {
            let l = plan_set_expr(p, left, outer.clone())?;
            let r = plan_set_expr(p, right, outer)?;
            if l.columns.len() != r.columns.len() {
                return Err(SqlError::syntax(format!(
                    "each {op} query must have the same number of columns"
                )));
            }
            let all = matches!(set_quantifier, ast::SetQuantifier::All);
            Ok(QueryPlan {
                columns: l.columns.clone(),
                correlated: l.correlated || r.correlated,
                body: Body::SetOp {
                    left: Box::new(l),
                    right: Box::new(r),
                    op: *op,
                    all,
                },
                order: vec![],
                limit: None,
                offset: None,
            })
        }
        SetExpr::Values(v) => {
            let scope = Arc::new(Scope {
                cols: vec![],
                parent: outer,
            });
            let mut rows = Vec::new();
            for r in &v.rows {
                rows.push(
                    r.iter()
                        .map(|e| Expr::compile(p, &scope, e))
                        .collect::<Result<Vec<_>>>()?,
                );
            }
            let width = rows.first().map_or(0, |r| r.len());
            if rows.iter().any(|r| r.len() != width) {
                return Err(SqlError::syntax("VALUES lists must all be the same length"));
            }
            let columns = (0..width)
                .map(|i| Column {
                    name: format!("column{}", i + 1),
                    ty: rows
                        .iter()
                        .find_map(|r| static_type(&r[i], &[], &p.params))
                        .unwrap_or(DataType::Text),
                })
                .collect();
            let correlated = rows.iter().flatten().any(|e| e.uses_outer());
            Ok(QueryPlan {
                columns,
                body: Body::Values(rows),
                order: vec![],
                limit: None,
                offset: None,
                correlated,
            })
        }
        other => Err(SqlError::unsupported(format!("query {other}"))),
    }
}

/// A query's LIMIT and OFFSET expressions (either spelling).
pub(crate) fn limit_offset(
    p: &mut Planner<'_>,
    scope: &Arc<Scope>,
    q: &ast::Query,
) -> Result<(Option<Expr>, Option<Expr>)> {
    Ok(match &q.limit_clause {
        Some(ast::LimitClause::LimitOffset { limit, offset, .. }) => (
            limit
                .as_ref()
                .map(|l| Expr::compile(p, scope, l))
                .transpose()?,
            offset
                .as_ref()
                .map(|o| Expr::compile(p, scope, &o.value))
                .transpose()?,
        ),
        Some(ast::LimitClause::OffsetCommaLimit { offset, limit }) => (
            Some(Expr::compile(p, scope, limit)?),
            Some(Expr::compile(p, scope, offset)?),
        ),
        None => (None, None),
    })
}

/// Whether an expression contains an aggregate call (not counting those
/// inside subqueries, which belong to them).
pub(crate) fn has_aggregate(e: &ast::Expr) -> bool {
    use ast::Expr as A;
    let any = |v: &[&ast::Expr]| v.iter().any(|x| has_aggregate(x));
    match e {
        A::Function(f) => {
            if functions::aggregate_kind(f).is_some() {
                return true;
            }
            match &f.args {
                ast::FunctionArguments::List(l) => l.args.iter().any(|a| match a {
                    ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(x))
                    | ast::FunctionArg::Named {
                        arg: ast::FunctionArgExpr::Expr(x),
                        ..
                    } => has_aggregate(x),
                    _ => false,
                }),
                _ => false,
            }
        }
        A::BinaryOp { left, right, .. } => any(&[left, right]),
        A::UnaryOp { expr, .. }
        | A::Nested(expr)
        | A::Cast { expr, .. }
        | A::IsNull(expr)
        | A::IsNotNull(expr)
        | A::IsTrue(expr)
        | A::IsFalse(expr)
        | A::IsNotTrue(expr)
        | A::IsNotFalse(expr)
        | A::Ceil { expr, .. }
        | A::Floor { expr, .. }
        | A::Extract { expr, .. }
        | A::Trim { expr, .. }
        | A::InSubquery { expr, .. } => has_aggregate(expr),
        A::IsDistinctFrom(a, b) | A::IsNotDistinctFrom(a, b) => any(&[a, b]),
        A::InList { expr, list, .. } => has_aggregate(expr) || list.iter().any(has_aggregate),
        A::Between {
            expr, low, high, ..
        } => any(&[expr, low, high]),
        A::Like { expr, pattern, .. } | A::ILike { expr, pattern, .. } => any(&[expr, pattern]),
        A::Case {
            operand,
            conditions,
            else_result,
            ..
        } => {
            operand.as_deref().is_some_and(has_aggregate)
                || conditions
                    .iter()
                    .any(|w| has_aggregate(&w.condition) || has_aggregate(&w.result))
                || else_result.as_deref().is_some_and(has_aggregate)
        }
        A::Substring {
            expr,
            substring_from,
            substring_for,
            ..
        } => {
            has_aggregate(expr)
                || substring_from.as_deref().is_some_and(has_aggregate)
                || substring_for.as_deref().is_some_and(has_aggregate)
        }
        A::Tuple(v) => v.iter().any(has_aggregate),
        _ => false,
    }
}

fn plan_select(
    p: &mut Planner<'_>,
    sel: &ast::Select,
    order_items: &[ast::OrderByExpr],
    outer: Option<Arc<Scope>>,
) -> Result<(QueryPlan, Order)> {
    if sel.into.is_some() {
        return Err(SqlError::unsupported("SELECT ... INTO"));
    }
    let mut item = plan_from(p, &sel.from, &outer, &mut Vec::new())?;
    let scope = Arc::new(Scope {
        cols: item.cols.clone(),
        parent: outer.clone(),
    });
    let input_types: Vec<DataType> = item.cols.iter().map(|c| c.ty.clone()).collect();
    // WHERE: conjuncts move to the sources and joins they concern.
    let mut filter = Vec::new();
    let mut correlated = false;
    if let Some(w) = &sel.selection {
        let mut cs = Vec::new();
        conjuncts(w, &mut cs);
        for c in cs {
            if has_aggregate(&c) {
                return Err(SqlError::new(
                    ErrorKind::GroupingError,
                    "aggregate functions are not allowed in WHERE",
                ));
            }
            let e = Expr::compile(p, &scope, &c)?;
            correlated |= e.uses_outer();
            let mut used = Vec::new();
            cols_used(&e, &mut used);
            let is_sub = matches!(&e, Expr::Sub(_));
            if !used.is_empty() && !is_sub && all_inner(&item.source) {
                add_filter_top(&mut item.source, e);
            } else {
                filter.push(e);
            }
        }
    }
    choose_lookups(&mut item.source);

    // Grouping.
    let group_exprs: Vec<ast::Expr> = match &sel.group_by {
        ast::GroupByExpr::Expressions(v, _) => v.clone(),
        ast::GroupByExpr::All(_) => return Err(SqlError::unsupported("GROUP BY ALL")),
    };
    let projection_has_agg = sel.projection.iter().any(|i| match i {
        SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => has_aggregate(e),
        _ => false,
    }) || sel.having.as_ref().is_some_and(has_aggregate)
        || order_items.iter().any(|o| has_aggregate(&o.expr));
    let grouped = !group_exprs.is_empty() || projection_has_agg;

    // Output columns (expanding wildcards) as (name, AST expr).
    let mut outputs: Vec<(String, ast::Expr)> = Vec::new();
    for it in &sel.projection {
        match it {
            SelectItem::UnnamedExpr(e) => outputs.push((crate::expr::column_name(e), e.clone())),
            // A quoted alias keeps its case (psql's `AS "Schema"` headers).
            SelectItem::ExprWithAlias { expr, alias } => outputs.push((
                if alias.quote_style.is_some() {
                    alias.value.clone()
                } else {
                    alias.value.to_ascii_lowercase()
                },
                expr.clone(),
            )),
            SelectItem::Wildcard(_) => {
                if item.cols.is_empty() {
                    return Err(SqlError::syntax(
                        "SELECT * with no tables specified is not valid",
                    ));
                }
                for c in &item.cols {
                    outputs.push((c.name.clone(), qualified(c)));
                }
            }
            SelectItem::QualifiedWildcard(kind, _) => {
                let t = match kind {
                    ast::SelectItemQualifiedWildcardKind::ObjectName(n) => {
                        object_last(n).to_ascii_lowercase()
                    }
                    ast::SelectItemQualifiedWildcardKind::Expr(e) => {
                        e.to_string().to_ascii_lowercase()
                    }
                };
                let before = outputs.len();
                for c in item
                    .cols
                    .iter()
                    .filter(|c| c.table.as_deref() == Some(t.as_str()))
                {
                    outputs.push((c.name.clone(), qualified(c)));
                }
                if outputs.len() == before {
                    return Err(SqlError::new(
                        ErrorKind::UndefinedTable,
                        format!("missing FROM-clause entry for table \"{t}\""),
                    ));
                }
            }
            other => return Err(SqlError::unsupported(format!("select item {other}"))),
        }
    }

    let mut group = None;
    let mut having = None;
    let mut row_types = input_types.clone();
    if grouped {
        let mut keys = Vec::new();
        let mut key_names = Vec::new();
        for g in &group_exprs {
            // GROUP BY 1 / GROUP BY alias refer to output columns.
            let g = match g {
                ast::Expr::Value(v) => match &v.value {
                    ast::Value::Number(n, _) => match n.parse::<usize>() {
                        Ok(i) if i >= 1 && i <= outputs.len() => outputs[i - 1].1.clone(),
                        _ => {
                            return Err(SqlError::syntax(format!(
                                "GROUP BY position {n} is not in select list"
                            )))
                        }
                    },
                    _ => g.clone(),
                },
                ast::Expr::Identifier(id) if scope.resolve(None, &id.value).is_err() => outputs
                    .iter()
                    .find(|(n, _)| n.eq_ignore_ascii_case(&id.value))
                    .map(|(_, e)| e.clone())
                    .unwrap_or_else(|| g.clone()),
                _ => g.clone(),
            };
            keys.push(Expr::compile(p, &scope, &g)?);
            key_names.push(g.to_string());
        }
        p.agg = Some(AggCtx {
            group_keys: key_names,
            input_scope: scope.clone(),
            aggs: Vec::new(),
        });
        group = Some(keys);
    }
    let proj_scope = scope.clone();
    let mut projection = Vec::new();
    let compiled = (|| -> Result<()> {
        for (_, e) in &outputs {
            projection.push(Expr::compile(p, &proj_scope, e)?);
        }
        if let Some(h) = &sel.having {
            having = Some(Expr::compile(p, &proj_scope, h)?);
        }
        Ok(())
    })();
    if let Err(e) = compiled {
        p.agg = None;
        return Err(e);
    }
    // ORDER BY: output column (alias or position) or an expression over the input.
    let mut order = Vec::new();
    for it in order_items {
        let desc = matches!(it.options.sort, Some(ast::OrderBySort::Desc));
        let nulls_first = it.options.nulls_first.unwrap_or(desc);
        let by_pos = match &it.expr {
            ast::Expr::Value(v) => match &v.value {
                ast::Value::Number(n, _) => Some(
                    n.parse::<usize>()
                        .ok()
                        .filter(|&i| i >= 1 && i <= outputs.len())
                        .ok_or_else(|| {
                            SqlError::syntax(format!("ORDER BY position {n} is not in select list"))
                        })?
                        - 1,
                ),
                _ => None,
            },
            ast::Expr::Identifier(id) => {
                let n = id.value.to_ascii_lowercase();
                let is_alias = sel.projection.iter().any(|i| matches!(i, SelectItem::ExprWithAlias { alias, .. } if alias.value.eq_ignore_ascii_case(&n)));
                if is_alias || scope.resolve(None, &n).is_err() {
                    outputs
                        .iter()
                        .position(|(name, _)| name.eq_ignore_ascii_case(&n))
                } else {
                    None
                }
            }
            _ => None,
        };
        let key = match by_pos {
            Some(i) => SortKey::Output(i),
            None => match Expr::compile(p, &proj_scope, &it.expr) {
                Ok(e) => SortKey::Input(e),
                Err(err) => {
                    p.agg = None;
                    return Err(err);
                }
            },
        };
        order.push((key, desc, nulls_first));
    }
    let group = match (group, p.agg.take()) {
        (Some(keys), Some(ctx)) => {
            let key_types: Vec<DataType> = keys
                .iter()
                .map(|k| static_type(k, &input_types, &p.params).unwrap_or(DataType::Text))
                .collect();
            let agg_types: Vec<DataType> = ctx
                .aggs
                .iter()
                .map(|a| {
                    functions::aggregate_type(
                        a.kind,
                        a.arg
                            .as_ref()
                            .and_then(|x| static_type(x, &input_types, &p.params))
                            .as_ref(),
                    )
                })
                .collect();
            row_types = key_types.into_iter().chain(agg_types).collect();
            Some((keys, ctx.aggs))
        }
        _ => None,
    };
    let columns: Vec<Column> = outputs
        .iter()
        .zip(&projection)
        .map(|((name, _), e)| Column {
            name: name.clone(),
            ty: static_type(e, &row_types, &p.params).unwrap_or(DataType::Text),
        })
        .collect();
    correlated |= projection.iter().any(|e| e.uses_outer()) || source_correlated(&item.source);
    let distinct = match &sel.distinct {
        Some(ast::Distinct::Distinct) => true,
        Some(ast::Distinct::On(_)) => return Err(SqlError::unsupported("DISTINCT ON")),
        _ => false,
    };
    let plan = QueryPlan {
        columns,
        body: Body::Select(Box::new(SelectPlan {
            from: item.source,
            filter,
            group,
            having,
            projection,
            distinct,
        })),
        order: vec![],
        limit: None,
        offset: None,
        correlated,
    };
    Ok((plan, order))
}

fn qualified(c: &ScopeCol) -> ast::Expr {
    match &c.table {
        Some(t) => ast::Expr::CompoundIdentifier(vec![
            ast::Ident::new(t.clone()),
            ast::Ident::new(c.name.clone()),
        ]),
        None => ast::Expr::Identifier(ast::Ident::new(c.name.clone())),
    }
}

fn all_inner(s: &Source) -> bool {
    match s {
        Source::Join {
            left, right, kind, ..
        } => matches!(kind, JoinKind::Inner) && all_inner(left) && all_inner(right),
        _ => true,
    }
}

fn source_correlated(s: &Source) -> bool {
    match s {
        Source::Table {
            filter,
            lookup,
            range,
            index,
            ..
        } => {
            index
                .as_deref()
                .is_some_and(|ip| index_exprs(ip).any(|e| e.uses_outer()))
                || filter.iter().any(|e| e.uses_outer())
                || lookup
                    .as_ref()
                    .is_some_and(|l| l.iter().any(|e| e.uses_outer()))
                || range
                    .as_ref()
                    .is_some_and(|r| r.lo.iter().chain(r.hi.iter()).any(|(e, _)| e.uses_outer()))
        }
        Source::Derived { plan, filter } => {
            plan.correlated || filter.iter().any(|e| e.uses_outer())
        }
        Source::SysView { filter, args, .. } => filter.iter().chain(args).any(|e| e.uses_outer()),
        Source::Series {
            filter,
            start,
            stop,
            step,
        } => {
            filter.iter().any(|e| e.uses_outer())
                || start.uses_outer()
                || stop.uses_outer()
                || step.as_ref().is_some_and(|s| s.uses_outer())
        }
        Source::Unnest { array, filter } => {
            array.uses_outer() || filter.iter().any(|e| e.uses_outer())
        }
        Source::Ancestors { rel, filter } => {
            rel.uses_outer() || filter.iter().any(|e| e.uses_outer())
        }
        Source::JsonRows { arg, filter, .. } => {
            arg.uses_outer() || filter.iter().any(|e| e.uses_outer())
        }
        Source::Join {
            left,
            right,
            keys,
            on,
            ..
        } => {
            source_correlated(left)
                || source_correlated(right)
                || on.iter().any(|e| e.uses_outer())
                || keys.iter().any(|(a, b)| a.uses_outer() || b.uses_outer())
        }
        Source::Single => false,
    }
}

/// Adds a WHERE conjunct at the deepest place that has all its columns.
fn add_filter_top(source: &mut Source, c: Expr) {
    add_filter(source, c, 0)
}

// ---------------------------------------------------------------- execution

fn check_cancel(env: &Env<'_>) -> Result<()> {
    if env.cancel.load(std::sync::atomic::Ordering::Relaxed) {
        return Err(SqlError::new(
            ErrorKind::Cancelled,
            "canceling statement due to user request",
        ));
    }
    Ok(())
}

/// The primary key a point lookup names, each part in its column's type (a
/// text parameter against an integer key).
pub(crate) fn lookup_key(table: &Table, key: &[Expr], env: &Env<'_>) -> Result<Vec<Value>> {
    key.iter()
        .zip(&table.def.primary_key)
        .map(|(e, &col)| {
            let v = e.eval(&[], env)?;
            Ok(
                walden_engine::types::coerce(v.clone(), &table.def.columns[col].data_type)
                    .unwrap_or(v),
            )
        })
        .collect()
}

/// Whether a row satisfies every filter (NULL counts as false).
pub(crate) fn passes(filters: &[Expr], row: &[Value], env: &Env<'_>) -> Result<bool> {
    for f in filters {
        if truth(&f.eval(row, env)?)? != Some(true) {
            return Ok(false);
        }
    }
    Ok(true)
}

fn run_source(s: &Source, env: &Env<'_>) -> Result<Vec<Vec<Value>>> {
    check_cancel(env)?;
    Ok(match s {
        Source::Single => vec![vec![]],
        Source::Table {
            table,
            lookup,
            range,
            index,
            filter,
        } => {
            let tx = env.tx;
            if let Some(key) = lookup {
                let k = lookup_key(table, key, env)?;
                match tx.get_in(table, &k) {
                    Some(r) if passes(filter, &r, env)? => vec![r.to_vec()],
                    _ => vec![],
                }
            } else {
                let mut out = Vec::new();
                let found = match index {
                    Some(ip) => index_rows(table, ip, env)?,
                    None => None,
                };
                let mut i = 0usize;
                let mut visit = |r: &walden_engine::types::Row| -> Result<()> {
                    if i.is_multiple_of(4096) {
                        check_cancel(env)?;
                    }
                    i += 1;
                    if passes(filter, r, env)? {
                        env.info.mem.charge_row(r.len())?;
                        out.push(r.to_vec());
                    }
                    Ok(())
                };
                match found {
                    Some(rows) => {
                        for (_, r) in rows {
                            visit(&r)?;
                        }
                    }
                    None => {
                        tx.scan_each(table, key_bounds(table, range.as_deref(), env)?, visit)?
                    }
                }
                out
            }
        }
        Source::Derived { plan, filter } => {
            let rows = execute_plan(plan, env, None)?;
            let mut out = Vec::new();
            for r in rows {
                if passes(filter, &r, env)? {
                    out.push(r);
                }
            }
            out
        }
        Source::SysView { view, args, filter } => {
            let a = args
                .iter()
                .map(|e| e.eval(&[], env))
                .collect::<Result<Vec<_>>>()?;
            let rows = sysviews::rows(*view, &a, env)?;
            let mut out = Vec::new();
            for r in rows {
                if passes(filter, &r, env)? {
                    out.push(r);
                }
            }
            out
        }
        Source::JsonRows { func, arg, filter } => {
            let mut out = Vec::new();
            for r in func.rows(&arg.eval(&[], env)?)? {
                if passes(filter, &r, env)? {
                    out.push(r);
                }
            }
            out
        }
        Source::Ancestors { rel, filter } => {
            let rel = match rel.eval(&[], env)? {
                Value::Text(t) => crate::pg_catalog::regclass_oid(env, &t)?,
                other => other,
            };
            let r = vec![rel, Value::Int(1)];
            if !r[0].is_null() && passes(filter, &r, env)? {
                vec![r]
            } else {
                vec![]
            }
        }
        Source::Unnest { array, filter } => {
            let mut out = Vec::new();
            for item in crate::pg_catalog::array_elements(&array.eval(&[], env)?) {
                let r = vec![item.map(Value::text).unwrap_or(Value::Null)];
                if passes(filter, &r, env)? {
                    out.push(r);
                }
            }
            out
        }
        Source::Series {
            start,
            stop,
            step,
            filter,
        } => {
            let int = |v: Value| match v {
                Value::Int(i) => Ok(i),
                other => crate::expr::cast(other, &DataType::BigInt).and_then(|x| {
                    x.as_i64().ok_or_else(|| {
                        SqlError::new(ErrorKind::DataException, "generate_series needs integers")
                    })
                }),
            };
            let (a, b) = (start.eval(&[], env)?, stop.eval(&[], env)?);
            let st = match step {
                Some(s) => s.eval(&[], env)?,
                None => Value::Int(1),
            };
            // A NULL bound or step gives no rows, as in PostgreSQL.
            if a.is_null() || b.is_null() || st.is_null() {
                return Ok(vec![]);
            }
            let (a, b, st) = (int(a)?, int(b)?, int(st)?);
            if st == 0 {
                return Err(SqlError::new(
                    ErrorKind::InvalidParameter,
                    "step size cannot equal zero",
                ));
            }
            let mut out = Vec::new();
            let mut i = a;
            let mut n = 0u64;
            while (st > 0 && i <= b) || (st < 0 && i >= b) {
                // Counted in steps, not rows kept: a filter that keeps few
                // rows must not make the series uncancellable.
                n += 1;
                if n.is_multiple_of(65536) {
                    check_cancel(env)?;
                }
                let r = vec![Value::Int(i)];
                if passes(filter, &r, env)? {
                    env.info.mem.charge_row(1)?;
                    out.push(r);
                }
                // Near i64::MAX the next value does not exist: the series
                // ends (wrapping made it start over and never end).
                match i.checked_add(st) {
                    Some(n) => i = n,
                    None => break,
                }
            }
            out
        }
        Source::Join {
            left,
            right,
            kind,
            keys,
            on,
            right_width,
        } => {
            let l = run_source(left, env)?;
            let r = run_source(right, env)?;
            let lw = source_width(left);
            join_rows(l, r, lw, *right_width, kind, keys, on, env)?
        }
    })
}

#[allow(clippy::too_many_arguments)]
fn join_rows(
    l: Vec<Vec<Value>>,
    r: Vec<Vec<Value>>,
    lw: usize,
    rw: usize,
    kind: &JoinKind,
    keys: &[(Expr, Expr)],
    on: &[Expr],
    env: &Env<'_>,
) -> Result<Vec<Vec<Value>>> {
    let mut out = Vec::new();
    let mut right_matched = vec![false; r.len()];
    let combine = |a: &[Value], b: &[Value]| {
        let mut row = Vec::with_capacity(a.len() + b.len());
        row.extend_from_slice(a);
        row.extend_from_slice(b);
        row
    };
    if !keys.is_empty() {
        let mut index: HashMap<Vec<Value>, Vec<usize>> = HashMap::new();
        for (i, row) in r.iter().enumerate() {
            let k = keys
                .iter()
                .map(|(_, re)| re.eval(row, env))
                .collect::<Result<Vec<_>>>()?;
            if k.iter().any(|v| v.is_null()) {
                continue;
            }
            index.entry(normalize_key(k)).or_default().push(i);
        }
        for (n, lrow) in l.iter().enumerate() {
            if n % 4096 == 0 {
                check_cancel(env)?;
            }
            let k = keys
                .iter()
                .map(|(le, _)| le.eval(lrow, env))
                .collect::<Result<Vec<_>>>()?;
            let mut matched = false;
            if !k.iter().any(|v| v.is_null()) {
                if let Some(hits) = index.get(&normalize_key(k)) {
                    for &i in hits {
                        let row = combine(lrow, &r[i]);
                        if passes(on, &row, env)? {
                            matched = true;
                            right_matched[i] = true;
                            env.info.mem.charge_row(row.len())?;
                            out.push(row);
                        }
                    }
                }
            }
            if !matched && matches!(kind, JoinKind::Left | JoinKind::Full) {
                env.info.mem.charge_row(lw + rw)?;
                out.push(combine(lrow, &vec![Value::Null; rw]));
            }
        }
    } else {
        for (n, lrow) in l.iter().enumerate() {
            if n % 256 == 0 {
                check_cancel(env)?;
            }
            let mut matched = false;
            for (i, rrow) in r.iter().enumerate() {
                let row = combine(lrow, rrow);
                if passes(on, &row, env)? {
                    matched = true;
                    right_matched[i] = true;
                    env.info.mem.charge_row(row.len())?;
                    out.push(row);
                }
            }
            if !matched && matches!(kind, JoinKind::Left | JoinKind::Full) {
                env.info.mem.charge_row(lw + rw)?;
                out.push(combine(lrow, &vec![Value::Null; rw]));
            }
        }
    }
    if matches!(kind, JoinKind::Right | JoinKind::Full) {
        for (i, rrow) in r.iter().enumerate() {
            if !right_matched[i] {
                out.push(combine(&vec![Value::Null; lw], rrow));
            }
        }
    }
    Ok(out)
}

/// Keys of a hash join compare numbers by value (1 = 1.0).
fn normalize_key(k: Vec<Value>) -> Vec<Value> {
    k.into_iter()
        .map(|v| match v {
            Value::Decimal(d) if d.fract().is_zero() => {
                rust_decimal::prelude::ToPrimitive::to_i64(&d)
                    .map(Value::Int)
                    .unwrap_or(Value::Decimal(d))
            }
            Value::Float(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Value::Int(f as i64),
            other => other,
        })
        .collect()
}

pub(crate) fn sort_rows(rows: &mut [(Vec<Value>, Vec<Value>)], order: &[(SortKey, bool, bool)]) {
    let dirs: Vec<(bool, bool)> = order.iter().map(|(_, d, n)| (*d, *n)).collect();
    rows.sort_by(|a, b| compare_keys(&a.1, &b.1, &dirs));
}

/// Orders two sort keys column by column, each (descending, nulls first).
fn compare_keys(a: &[Value], b: &[Value], dirs: &[(bool, bool)]) -> Ordering {
    {
        for (i, (desc, nulls_first)) in dirs.iter().enumerate() {
            let (x, y) = (&a[i], &b[i]);
            let o = match (x.is_null(), y.is_null()) {
                (true, true) => Ordering::Equal,
                (true, false) => {
                    if *nulls_first {
                        Ordering::Less
                    } else {
                        Ordering::Greater
                    }
                }
                (false, true) => {
                    if *nulls_first {
                        Ordering::Greater
                    } else {
                        Ordering::Less
                    }
                }
                _ => {
                    let o = compare(x, y).ok().flatten().unwrap_or(Ordering::Equal);
                    if *desc {
                        o.reverse()
                    } else {
                        o
                    }
                }
            };
            if o != Ordering::Equal {
                return o;
            }
        }
        Ordering::Equal
    }
}

pub(crate) fn eval_count(e: &Option<Expr>, env: &Env<'_>) -> Result<Option<usize>> {
    match e {
        None => Ok(None),
        Some(e) => match e.eval(&[], env)? {
            Value::Null => Ok(None),
            v => {
                let n = crate::expr::cast(v, &DataType::BigInt)?
                    .as_i64()
                    .unwrap_or(0);
                if n < 0 {
                    return Err(SqlError::new(
                        ErrorKind::InvalidParameter,
                        "LIMIT/OFFSET must not be negative",
                    ));
                }
                Ok(Some(n as usize))
            }
        },
    }
}

/// Runs a plan; `limit_hint` stops early when only a few rows are needed
/// (EXISTS, scalar subqueries).
pub fn execute_plan(
    plan: &QueryPlan,
    env: &Env<'_>,
    limit_hint: Option<usize>,
) -> Result<Vec<Vec<Value>>> {
    let limit = eval_count(&plan.limit, env)?;
    let offset = eval_count(&plan.offset, env)?.unwrap_or(0);
    let mut rows: Vec<(Vec<Value>, Vec<Value>)> = match &plan.body {
        Body::Select(sel) => run_select(sel, &plan.order, env)?,
        Body::Values(rows) => rows
            .iter()
            .map(|r| {
                Ok((
                    r.iter()
                        .map(|e| e.eval(&[], env))
                        .collect::<Result<Vec<_>>>()?,
                    vec![],
                ))
            })
            .collect::<Result<Vec<_>>>()?,
        Body::SetOp {
            left,
            right,
            op,
            all,
        } => {
            let l = execute_plan(left, env, None)?;
            let r = execute_plan(right, env, None)?;
            set_op(l, r, *op, *all)?
                .into_iter()
                .map(|r| (r, vec![]))
                .collect()
        }
    };
    if !plan.order.is_empty() {
        if !matches!(plan.body, Body::Select(_)) {
            for (out, keys) in rows.iter_mut() {
                *keys = plan
                    .order
                    .iter()
                    .map(|(k, _, _)| match k {
                        SortKey::Output(i) => out[*i].clone(),
                        SortKey::Input(_) => Value::Null,
                    })
                    .collect();
            }
        }
        sort_rows(&mut rows, &plan.order);
    }
    let mut out: Vec<Vec<Value>> = rows.into_iter().skip(offset).map(|(r, _)| r).collect();
    let cap = match (limit, limit_hint) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    if let Some(n) = cap {
        out.truncate(n);
    }
    Ok(out)
}

fn set_op(
    l: Vec<Vec<Value>>,
    r: Vec<Vec<Value>>,
    op: ast::SetOperator,
    all: bool,
) -> Result<Vec<Vec<Value>>> {
    let norm = |row: &Vec<Value>| normalize_key(row.clone());
    Ok(match op {
        ast::SetOperator::Union => {
            let mut out = l;
            out.extend(r);
            if !all {
                let mut seen = HashSet::new();
                out.retain(|row| seen.insert(norm(row)));
            }
            out
        }
        ast::SetOperator::Except | ast::SetOperator::Minus => {
            if all {
                let mut counts: HashMap<Vec<Value>, usize> = HashMap::new();
                for row in &r {
                    *counts.entry(norm(row)).or_default() += 1;
                }
                l.into_iter()
                    .filter(|row| match counts.get_mut(&norm(row)) {
                        Some(c) if *c > 0 => {
                            *c -= 1;
                            false
                        }
                        _ => true,
                    })
                    .collect()
            } else {
                let rs: HashSet<Vec<Value>> = r.iter().map(norm).collect();
                let mut seen = HashSet::new();
                l.into_iter()
                    .filter(|row| !rs.contains(&norm(row)) && seen.insert(norm(row)))
                    .collect()
            }
        }
        ast::SetOperator::Intersect => {
            let mut counts: HashMap<Vec<Value>, usize> = HashMap::new();
            for row in &r {
                *counts.entry(norm(row)).or_default() += 1;
            }
            let mut seen = HashSet::new();
            l.into_iter()
                .filter(|row| match counts.get_mut(&norm(row)) {
                    Some(c) if *c > 0 => {
                        if all {
                            *c -= 1;
                            true
                        } else {
                            seen.insert(norm(row))
                        }
                    }
                    _ => false,
                })
                .collect()
        }
    })
}

fn run_select(
    sel: &SelectPlan,
    order: &[(SortKey, bool, bool)],
    env: &Env<'_>,
) -> Result<Vec<(Vec<Value>, Vec<Value>)>> {
    let mut rows = run_source(&sel.from, env)?;
    if !sel.filter.is_empty() {
        let mut kept = Vec::with_capacity(rows.len());
        for r in rows {
            if passes(&sel.filter, &r, env)? {
                kept.push(r);
            }
        }
        rows = kept;
    }
    if let Some((keys, aggs)) = &sel.group {
        rows = group_rows(rows, keys, aggs, env)?;
        if let Some(h) = &sel.having {
            let mut kept = Vec::with_capacity(rows.len());
            for r in rows {
                if truth(&h.eval(&r, env)?)? == Some(true) {
                    kept.push(r);
                }
            }
            rows = kept;
        }
    }
    let mut out = Vec::with_capacity(rows.len());
    for r in &rows {
        let projected = sel
            .projection
            .iter()
            .map(|e| e.eval(r, env))
            .collect::<Result<Vec<_>>>()?;
        let keys = order
            .iter()
            .map(|(k, _, _)| match k {
                SortKey::Output(i) => Ok(projected[*i].clone()),
                SortKey::Input(e) => e.eval(r, env),
            })
            .collect::<Result<Vec<_>>>()?;
        out.push((projected, keys));
    }
    if sel.distinct {
        let mut seen = HashSet::new();
        out.retain(|(r, _)| seen.insert(normalize_key(r.clone())));
    }
    Ok(out)
}

fn group_rows(
    rows: Vec<Vec<Value>>,
    keys: &[Expr],
    aggs: &[AggSpec],
    env: &Env<'_>,
) -> Result<Vec<Vec<Value>>> {
    let mut groups: HashMap<Vec<Value>, usize> = HashMap::new();
    let mut states: Vec<GroupState> = Vec::new();
    let seps: Vec<Value> = aggs
        .iter()
        .map(|a| {
            a.separator
                .as_ref()
                // The object aggregates' value is per row (below).
                .filter(|_| !matches!(a.kind, AggKind::JsonObjectAgg { .. }))
                .map(|s| s.eval(&[], env))
                .transpose()
                .map(|v| v.unwrap_or(Value::Null))
        })
        .collect::<Result<Vec<_>>>()?;
    for r in rows {
        let k = keys
            .iter()
            .map(|e| e.eval(&r, env))
            .collect::<Result<Vec<_>>>()?;
        let nk = normalize_key(k.clone());
        let gi = match groups.get(&nk) {
            Some(&i) => i,
            None => {
                states.push((
                    k,
                    aggs.iter().map(|a| Acc::new(a.kind)).collect(),
                    aggs.iter().map(|_| HashSet::new()).collect(),
                    aggs.iter().map(|_| Vec::new()).collect(),
                ));
                groups.insert(nk, states.len() - 1);
                states.len() - 1
            }
        };
        let st = &mut states[gi];
        for (i, a) in aggs.iter().enumerate() {
            let v = match &a.arg {
                Some(e) => e.eval(&r, env)?,
                None => Value::Null,
            };
            if a.distinct
                && !v.is_null()
                && !st.2[i].insert(normalize_key(vec![v.clone()]).pop().unwrap())
            {
                continue;
            }
            let val = match (a.kind, &a.separator) {
                (AggKind::JsonObjectAgg { .. }, Some(val)) => val.eval(&r, env)?,
                _ => seps[i].clone(),
            };
            if !a.order.is_empty() {
                let key = a
                    .order
                    .iter()
                    .map(|(e, _, _)| e.eval(&r, env))
                    .collect::<Result<Vec<_>>>()?;
                st.3[i].push((key, v, val));
                continue;
            }
            st.1[i].add(a.kind, v, &val)?;
        }
    }
    if states.is_empty() && keys.is_empty() {
        // Aggregates over no rows still give one row.
        states.push((
            vec![],
            aggs.iter().map(|a| Acc::new(a.kind)).collect(),
            vec![],
            aggs.iter().map(|_| Vec::new()).collect(),
        ));
    }
    states
        .into_iter()
        .map(|(mut k, accs, _, held)| {
            for ((mut a, spec), mut rows) in accs.into_iter().zip(aggs).zip(held) {
                if !spec.order.is_empty() {
                    let dirs: Vec<(bool, bool)> =
                        spec.order.iter().map(|(_, d, n)| (*d, *n)).collect();
                    // Stable: rows equal in the order keep their input order.
                    rows.sort_by(|x, y| compare_keys(&x.0, &y.0, &dirs));
                    for (_, v, val) in rows {
                        a.add(spec.kind, v, &val)?;
                    }
                }
                k.push(a.finish(spec.kind)?);
            }
            Ok(k)
        })
        .collect()
}
