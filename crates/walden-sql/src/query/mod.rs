//! Queries: planning a SELECT (sources, joins, filters pushed to where they
//! apply, grouping, ordering) and executing the plan over a transaction.
//!
//! The plan is built once per statement (and kept by prepared statements).
//! Filters on one table run before joins; equalities between tables become
//! hash-join keys; equalities on a table's whole primary key become point
//! lookups, the fast path of OLTP statements.

use crate::error::{ErrorKind, Result, SqlError};
use crate::expr::AggSpec;
use crate::expr::{Expr, Scope, ScopeCol};
use crate::functions::Env;
use crate::functions::{self, Acc, AggKind};
use crate::functions::{compare, truth, BinOp};
use crate::Column;
use sqlparser::ast::{self, SelectItem, SetExpr, TableFactor};
use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use walden_engine::{DataType, Database, Table, Value};

mod access;
mod common_type;
pub mod decorrelate;
mod depend;
mod equiv;
mod estimate;
pub mod partition;
mod probe;
pub(crate) use common_type::{
    comparable, drops_blanks, implicit, needs_cast, preferred, same_category, same_type,
    select_common, string_category, type_name, unmodified, ColumnCast,
};
mod exec;
pub mod explain;
mod from;
mod group;
mod grouping_sets;
pub use grouping_sets::grouping_call;
mod distinct_on;
mod join;
mod lateral;
mod order;
mod recursive;
mod select;
mod set_ops;
pub mod srf;
pub mod stats;
mod stream;
pub mod views;
mod walk;
pub mod window;
pub use access::*;
pub use exec::*;
use from::*;
use group::*;
use join::*;
pub(crate) use recursive::plan_recursive_cte;
pub use select::*;
use set_ops::*;
pub use walk::OrderedWalk;

/// Grouping context while compiling expressions after GROUP BY.
pub struct AggCtx {
    pub group_keys: Vec<String>,
    /// The keys' types, in the order of `group_keys`.
    pub key_types: Vec<DataType>,
    pub input_scope: Arc<Scope>,
    pub aggs: Vec<AggSpec>,
    /// Input columns grouped because they depend on a grouped primary
    /// key: (input column, position among the keys).
    pub dependent: Vec<(usize, usize)>,
    /// GROUPING SETS: each set's key positions (GROUPING reads them).
    pub sets: Option<Vec<Vec<usize>>>,
}

impl AggCtx {
    /// The key position of input column `i` when it depends on a grouped
    /// primary key (it may then be named outside an aggregate).
    pub fn dependent_key(&self, i: usize) -> Option<usize> {
        self.dependent
            .iter()
            .find(|(c, _)| *c == i)
            .map(|(_, k)| *k)
    }

    /// The types of the grouped row (keys, then the aggregates compiled so
    /// far), which expressions after GROUP BY are compiled over.
    pub fn row_types(&self, params: &[Option<DataType>]) -> Vec<DataType> {
        let input: Vec<DataType> = self.input_scope.cols.iter().map(|c| c.ty.clone()).collect();
        let aggs = self.aggs.iter().map(|a| {
            if let functions::AggKind::Ordered(o) = a.kind {
                let sort = a.arg.as_ref().and_then(|x| static_type(x, &input, params));
                let direct = a
                    .direct
                    .first()
                    .and_then(|x| static_type(x, &self.key_types, params));
                return o.result_type(sort.as_ref(), direct.as_ref());
            }
            functions::aggregate_type(
                a.kind,
                a.arg
                    .as_ref()
                    .and_then(|x| static_type(x, &input, params))
                    .as_ref(),
            )
        });
        self.key_types.iter().cloned().chain(aggs).collect()
    }
}

/// Compile-time state of one statement.
pub struct Planner<'a> {
    pub db: Arc<Database>,
    /// The system catalogs: system relations in FROM, reg constants.
    pub system: &'a dyn crate::functions::SystemCatalog,
    /// Parameter types inferred so far (`$1` is index 0).
    pub params: Vec<Option<DataType>>,
    pub agg: Option<AggCtx>,
    pub uses_sequences: bool,
    pub ctes: Vec<(String, Arc<QueryPlan>)>,
    /// Every table resolved, in order (for the privilege checks).
    used: std::cell::RefCell<Vec<(u32, String)>>,
    /// The transaction planning: tables are resolved as it sees them
    /// (its own uncommitted DDL, not others').
    pub viewer: Option<u64>,
    /// FROM labels whose `tableoid` column is a system column, left out
    /// of `*`.
    pub(crate) system_labels: Vec<String>,
    /// Whether a window function call may appear where compilation is.
    pub window: window::WindowSlot,
    /// Whether a set-returning function call may (a select list).
    pub srf: srf::SrfSlot,
    /// The session's `search_path`: where unqualified names are found.
    pub path: crate::context::search_path::SearchPath,
    /// Views expanded so far (ids, in order, with repeats): what a view
    /// defined by the query depends on, beside `used`.
    used_views: std::cell::RefCell<Vec<u32>>,
    /// How many views deep the planning is.
    pub(crate) view_depth: usize,
    /// The WHERE of the SELECT whose FROM is being planned: a partitioned
    /// table there reads only the partitions it can reach.
    pub(crate) partition_where: Option<ast::Expr>,
}

impl<'a> Planner<'a> {
    pub fn new(
        db: Arc<Database>,
        system: &'a dyn crate::functions::SystemCatalog,
        given: &[Option<DataType>],
    ) -> Self {
        Planner {
            db,
            system,
            params: given.to_vec(),
            agg: None,
            uses_sequences: false,
            ctes: Vec::new(),
            used: Default::default(),
            viewer: None,
            system_labels: Vec::new(),
            window: window::WindowSlot::Refused("here"),
            srf: srf::SrfSlot::Refused(""),
            path: Default::default(),
            used_views: Default::default(),
            view_depth: 0,
            partition_where: None,
        }
    }

    /// The views expanded so far (ids, with repeats).
    pub fn used_views(&self) -> std::cell::Ref<'_, Vec<u32>> {
        self.used_views.borrow()
    }

    pub(crate) fn note_view(&self, id: u32) {
        self.used_views.borrow_mut().push(id);
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

    /// `col = $1`: the parameter takes the column's type, or the type of
    /// the operator PostgreSQL picks for it: varchar has no operators of
    /// its own, so beside a varchar the parameter is text.
    pub fn infer_pair(&mut self, l: &Expr, r: &Expr, scope: &Scope) {
        match (l, r) {
            (Expr::Param(i), other) | (other, Expr::Param(i)) => {
                if let Some(t) = static_type(
                    other,
                    &scope.cols.iter().map(|c| c.ty.clone()).collect::<Vec<_>>(),
                    &self.params,
                ) {
                    let t = match t {
                        DataType::Varchar(_) => DataType::Text,
                        t => t,
                    };
                    self.infer_param(*i, t);
                }
            }
            _ => {}
        }
    }

    pub fn table(&self, name: &ast::ObjectName) -> Result<Arc<Table>> {
        let n = self.path.user_relation(name)?;
        let t = self.db.table_as(self.viewer, &n).map_err(|e| {
            // A name of another schema is reported as written (`s.t`).
            if n.contains(walden_engine::namespace::SCHEMA_SEP) {
                SqlError::new(
                    crate::error::ErrorKind::UndefinedTable,
                    format!("relation \"{name}\" does not exist"),
                )
            } else {
                e.into()
            }
        })?;
        self.used.borrow_mut().push((t.id(), t.name().to_string()));
        Ok(t)
    }
}

/// The last part of a (possibly schema-qualified) name; the qualifier is
/// checked against the search path by `search_path.rs`.
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

/// A primary-key range: values for the key's first columns (`prefix`,
/// fixed by equalities), then bounds on the column after them (`id
/// BETWEEN a AND b`, `id > a`). Bounds alone are on the first key column.
#[derive(Debug, Default)]
pub struct KeyRange {
    /// Values of the leading key columns, in key order.
    pub prefix: Vec<Expr>,
    /// (bound, inclusive)
    pub lo: Option<(Expr, bool)>,
    pub hi: Option<(Expr, bool)>,
}

impl KeyRange {
    /// Every expression the range evaluates.
    pub fn exprs(&self) -> impl Iterator<Item = &Expr> {
        self.prefix
            .iter()
            .chain(self.lo.iter().chain(self.hi.iter()).map(|(e, _)| e))
    }
}

/// A search through a secondary index: values for its first columns
/// (`eq`) and optionally bounds on the column after them.
#[derive(Debug)]
pub struct IndexSearch {
    /// Position in the table's `indexes`.
    pub index: usize,
    pub eq: Vec<Expr>,
    pub range: Option<Box<KeyRange>>,
}

/// How an index narrows a table's rows: one search, or the union of
/// several (`k IN (...)`, `k BETWEEN a AND b OR k BETWEEN c AND d`), each
/// row found once.
#[derive(Debug)]
pub enum IndexPath {
    Search(IndexSearch),
    Union(Vec<Probe>),
    /// `col = ANY(array)`: a union with one branch per element, chosen
    /// when the array's value is known, each with the `rest` of the
    /// filter's bounds.
    Any {
        col: usize,
        array: Expr,
        rest: Vec<Expr>,
    },
}

/// One branch of a union.
#[derive(Debug)]
pub enum Probe {
    /// The whole primary key.
    Key(Vec<Expr>),
    /// Bounds on the primary key's first column.
    Range(Box<KeyRange>),
    Index(IndexSearch),
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
        /// Or index searches that narrow it further (a secondary index, or
        /// a union of key lookups, key ranges and index searches).
        index: Option<Box<IndexPath>>,
        filter: Vec<Expr>,
    },
    Derived {
        plan: Arc<QueryPlan>,
        filter: Vec<Expr>,
        /// A reference to an uncorrelated WITH query: its rows are made
        /// once per statement and shared by every reference (PostgreSQL
        /// evaluates a CTE once, so `random()` in it is one draw).
        shared: bool,
        /// The name it is read by (a WITH query's, the alias, the view's),
        /// for EXPLAIN.
        label: String,
    },
    SysView {
        view: Arc<dyn crate::functions::SystemRelation>,
        args: Vec<Expr>,
        filter: Vec<Expr>,
    },
    /// A set-returning function in FROM (generate_series,
    /// generate_subscripts, _pg_expandarray, regexp_*): its rows, of
    /// `width` columns, the first of type `ty`.
    Srf {
        func: srf::SrfFunc,
        args: Vec<Expr>,
        ty: DataType,
        width: usize,
        filter: Vec<Expr>,
    },
    /// `unnest(array [, array ...])`: one row per element, the arrays side
    /// by side (the shorter ones padded with NULLs), as PostgreSQL's FROM
    /// form does.
    Unnest {
        arrays: Vec<Expr>,
        filter: Vec<Expr>,
    },
    /// `f(...) WITH ORDINALITY`: the function's rows numbered from 1 in the
    /// order it returns them, the number as a last bigint column. Filters
    /// sit here, above the numbering, so they never change the numbers.
    Ordinality {
        inner: Box<Source>,
        filter: Vec<Expr>,
    },
    /// `pg_partition_ancestors(rel)`: (relid, depth); no Walden table is a
    /// partition, so a relation is its only ancestor, at depth 1.
    Ancestors { rel: Expr, filter: Vec<Expr> },
    /// jsonb_each, jsonb_array_elements, jsonb_object_keys and their
    /// json and _text forms.
    JsonRows {
        func: crate::functions::json::JsonSrf,
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
        /// An index nested-loop join: the right side, a table, searched
        /// through a key for each left row (chosen at run time over the
        /// hash join when the left side is small beside the table).
        probe: Option<Box<probe::JoinProbe>>,
        /// A LATERAL right side, run once per left row (no keys then: the
        /// conditions are all in `on`).
        lateral: Option<Box<lateral::Lateral>>,
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

#[derive(Debug)]
pub struct SelectPlan {
    pub from: Source,
    pub filter: Vec<Expr>,
    pub group: Option<(Vec<Expr>, Vec<AggSpec>)>,
    /// GROUPING SETS / ROLLUP / CUBE: each set's keys (positions in
    /// `group`'s keys); a grouped row's last key is its set's index.
    pub grouping_sets: Option<Vec<Vec<usize>>>,
    pub having: Option<Expr>,
    pub projection: Vec<Expr>,
    pub distinct: bool,
    /// `DISTINCT ON (...)`: the first row (in ORDER BY order) of each
    /// distinct value of these keys.
    pub distinct_on: Option<Vec<SortKey>>,
    /// Window functions, computed after grouping and HAVING; their values
    /// extend each row, where the projection and ORDER BY read them.
    pub window: Option<Box<window::WindowPlan>>,
    /// Set-returning functions of the select list, run after the windows.
    pub srf: Option<Box<srf::ProjectSet>>,
    /// ORDER BY ... LIMIT read in a key's order, with no sort.
    pub walk: Option<Box<OrderedWalk>>,
}

#[derive(Debug)]
pub enum Body {
    Select(Box<SelectPlan>),
    SetOp {
        left: Box<QueryPlan>,
        right: Box<QueryPlan>,
        op: ast::SetOperator,
        all: bool,
        /// Per column, the type a branch's values are cast to: the common
        /// type of the two, where it differs from the branch's own.
        casts: [Vec<Option<ColumnCast>>; 2],
    },
    Values(Vec<Vec<Expr>>),
    /// `WITH RECURSIVE`: the anchor, then the step until it adds no rows.
    Recursive {
        anchor: Box<QueryPlan>,
        step: Box<QueryPlan>,
        /// Per column, the cast of the step's values to the anchor's type
        /// (which is the query's: PostgreSQL's check leaves no other).
        step_casts: Vec<Option<ColumnCast>>,
        all: bool,
        work: recursive::WorkTable,
    },
    /// The working table a recursive step reads through the CTE's name.
    WorkTable(recursive::WorkTable),
}

#[derive(Debug)]
pub struct QueryPlan {
    pub columns: Vec<Column>,
    pub body: Body,
    pub order: Vec<(SortKey, bool, bool)>,
    pub limit: Option<Expr>,
    pub offset: Option<Expr>,
    /// How `limit` counts: rows, or (FETCH ... WITH TIES, TOP ... PERCENT)
    /// more than it says.
    pub limit_mode: LimitMode,
    /// Refers to an enclosing query's columns.
    pub correlated: bool,
}

/// What a query's row count means.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LimitMode {
    /// Rows that sort equal to the last one counted come too (FETCH FIRST
    /// ... WITH TIES, TOP ... WITH TIES).
    pub with_ties: bool,
    /// The count is a percentage of the rows, rounded up (T-SQL's TOP ...
    /// PERCENT).
    pub percent: bool,
}

impl LimitMode {
    pub fn is_plain(&self) -> bool {
        !self.with_ties && !self.percent
    }
}

/// Static type of an expression over a row of `types`; an outer
/// reference's type is unknown (see [`scoped_type`]).
pub fn static_type(e: &Expr, types: &[DataType], params: &[Option<DataType>]) -> Option<DataType> {
    static_type_in(e, types, params, &|_, _| None)
}

/// Static type of `e` over a row of `types` in `scope`: an outer reference
/// takes the type of the enclosing query's column it names (unknown, it
/// would be text), so `(SELECT unnest(o.int2_array_col))` is typed as
/// PostgreSQL types it.
pub fn scoped_type(
    e: &Expr,
    scope: &Scope,
    types: &[DataType],
    params: &[Option<DataType>],
) -> Option<DataType> {
    static_type_in(e, types, params, &|depth, i| {
        let mut s = Some(scope);
        for _ in 0..depth {
            s = s.and_then(|s| s.parent.as_deref());
        }
        s.and_then(|s| s.cols.get(i)).map(|c| c.ty.clone())
    })
}

fn static_type_in(
    e: &Expr,
    types: &[DataType],
    params: &[Option<DataType>],
    outer: &dyn Fn(usize, usize) -> Option<DataType>,
) -> Option<DataType> {
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
            // Enum constants are typed by the cast that made them.
            Value::Enum(..) => return None,
            Value::Reg(k, ..) => DataType::Reg(*k),
            Value::MdArray(a) => DataType::Array(Box::new(
                a.items
                    .iter()
                    .find(|v| !v.is_null())
                    .and_then(|v| static_type_in(&Expr::Lit(v.clone()), types, params, outer))
                    .unwrap_or(DataType::Text),
            )),
            // An array constant: its first element's type decides.
            Value::Array(items) => DataType::Array(Box::new(
                items
                    .iter()
                    .find(|v| !v.is_null())
                    .and_then(|v| static_type_in(&Expr::Lit(v.clone()), types, params, outer))
                    .unwrap_or(DataType::Text),
            )),
        },
        Expr::Param(i) => params.get(*i).cloned().flatten()?,
        Expr::Col(i) => types.get(*i)?.clone(),
        Expr::Outer(depth, i) => return outer(*depth, *i),
        Expr::Not(_)
        | Expr::IsNull(..)
        | Expr::IsBool(..)
        | Expr::InList(..)
        | Expr::Between(..)
        | Expr::Like { .. } => DataType::Bool,
        Expr::Neg(x) => static_type_in(x, types, params, outer)?,
        Expr::Bin(op, a, b) => match op {
            BinOp::Concat | BinOp::Sub | BinOp::Add | BinOp::Mul | BinOp::Div | BinOp::Mod => {
                // Each operand's type once: a chain of operators is typed in
                // time linear in its length.
                let (ta, tb) = (
                    static_type_in(a, types, params, outer),
                    static_type_in(b, types, params, outer),
                );
                match (op, ta, tb) {
                    // jsonb || jsonb and jsonb - key are jsonb.
                    (BinOp::Concat | BinOp::Sub, Some(DataType::Jsonb), _)
                    | (BinOp::Concat, _, Some(DataType::Jsonb)) => DataType::Jsonb,
                    // An array beside || makes an array (concatenation,
                    // append, prepend).
                    (BinOp::Concat, Some(t @ DataType::Array(_)), _)
                    | (BinOp::Concat, _, Some(t @ DataType::Array(_))) => t,
                    (BinOp::Concat, Some(DataType::Bytes), Some(DataType::Bytes)) => {
                        DataType::Bytes
                    }
                    (BinOp::Concat, _, _) => DataType::Text,
                    (_, Some(x), Some(y)) => crate::functions::temporal::arith_type(*op, &x, &y)
                        .unwrap_or_else(|| numeric_promote(&x, &y)),
                    (_, Some(x), None) | (_, None, Some(x)) => x,
                    _ => return None,
                }
            }
            BinOp::Regex(..) => DataType::Bool,
            _ => DataType::Bool,
        },
        // A missing ELSE is a NULL, whose modifier cannot agree.
        Expr::Case(_, whens, els) => {
            let mut results: Vec<Option<DataType>> = whens
                .iter()
                .map(|(_, t)| static_type_in(t, types, params, outer))
                .collect();
            results.push(
                els.as_ref()
                    .and_then(|e| static_type_in(e, types, params, outer)),
            );
            let first = results.iter().flatten().next()?.clone();
            keep_modifier_if_agreed(first, &results)
        }
        Expr::Cast(_, t) => t.clone(),
        Expr::Func(f, args) => {
            let typed: Vec<Option<DataType>> = args
                .iter()
                .map(|a| static_type_in(a, types, params, outer))
                .collect();
            let ts: Vec<DataType> = typed
                .iter()
                .map(|t| t.clone().unwrap_or(DataType::Text))
                .collect();
            let t = functions::func_type(*f, &ts);
            match f {
                // PostgreSQL's planner drops COALESCE's NULL constants
                // before the modifier is read.
                functions::Func::Coalesce => {
                    let kept: Vec<Option<DataType>> = args
                        .iter()
                        .zip(typed)
                        .filter(|(a, _)| !matches!(a, Expr::Lit(Value::Null)))
                        .map(|(_, t)| t)
                        .collect();
                    keep_modifier_if_agreed(t, &kept)
                }
                functions::Func::Greatest
                | functions::Func::Least
                | functions::Func::ArrayBuild => keep_modifier_if_agreed(t, &typed),
                _ => t,
            }
        }
        Expr::Sub(s) => match s.kind {
            crate::expr::SubKind::Scalar => s.plan.columns.first()?.ty.clone(),
            crate::expr::SubKind::Array => {
                DataType::Array(Box::new(s.plan.columns.first()?.ty.clone()))
            }
            crate::expr::SubKind::Row => DataType::Record(
                s.plan
                    .columns
                    .iter()
                    .map(|c| (c.name.clone(), c.ty.clone()))
                    .collect(),
            ),
            _ => DataType::Bool,
        },
    })
}

/// `t`, the type of a CASE, COALESCE, GREATEST, LEAST or ARRAY[...] over
/// inputs of types `inputs`: with its type modifier only when every input
/// has the same type and modifier (`CASE ... c1 ELSE c3 END` over char(1)
/// and char(3) is bpchar), as PostgreSQL reports it.
fn keep_modifier_if_agreed(t: DataType, inputs: &[Option<DataType>]) -> DataType {
    let agreed =
        inputs.first().is_some_and(Option::is_some) && inputs.windows(2).all(|w| w[0] == w[1]);
    if agreed {
        t
    } else {
        unmodified(&t)
    }
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

/// The FROM list of an UPDATE ... FROM or a DELETE ... USING: the source of
/// its rows, and their columns.
pub(crate) fn plan_from_list(
    p: &mut Planner<'_>,
    from: &[ast::TableWithJoins],
) -> Result<(Source, Vec<ScopeCol>)> {
    let item = from::plan_from(p, from, &None, &mut Vec::new())?;
    Ok((item.source, item.cols))
}

/// Every row of `s`, filters applied.
pub(crate) fn source_rows(s: &Source, env: &Env<'_>) -> Result<Vec<Vec<Value>>> {
    exec::run_source(s, env)
}
