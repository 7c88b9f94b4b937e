//! Bound expressions: compiled from sqlparser's AST against a scope (column
//! positions resolved once), then evaluated per row with SQL's three-valued
//! logic.

use crate::error::{ErrorKind, Result, SqlError};
use crate::functions::{self, Func};
use crate::query::{self, srf::SrfSlot, Planner, QueryPlan};
use sqlparser::ast::{self, BinaryOperator, UnaryOperator};
use std::cmp::Ordering;
use std::collections::HashSet;
use std::sync::Arc;
use walden_engine::types::coerce;
use walden_engine::{DataType, Value};

pub(crate) mod aggregate_call;
mod array_ops;
mod bitwise;
mod call;
mod colname;
mod common;
mod compare_types;
mod compile;
pub(crate) mod enum_ops;
mod eval;
mod order;
pub use order::sort_desc;
pub(crate) mod record;
mod regcast;
mod row_compare;
mod text_ops;
use crate::functions::operators::*;
use crate::functions::Env;
pub use aggregate_call::{compile_aggregate, ordered_direct_args, AggSpec};
use common::in_list_unknown;
pub(crate) use common::resolve_common;
pub use compile::*;
pub(crate) use regcast::reg_at_run_time;
use regcast::*;
pub(crate) use text_ops::cast_from;
use text_ops::concat_operands;
pub use text_ops::{is_char, unpad};

/// A column visible in a scope.
#[derive(Clone, Debug)]
pub struct ScopeCol {
    /// Table name or alias (lower case).
    pub table: Option<String>,
    /// Column name (lower case).
    pub name: String,
    pub ty: DataType,
    /// The table column it is, seen through derived tables and CTEs.
    pub origin: Option<crate::ColumnOrigin>,
    /// A column a USING or NATURAL join merged into the other side's: found
    /// only when qualified (`b.id`), left out of `*`.
    pub hidden: bool,
    /// The merged column of a FULL join (and of joins over one): named
    /// unqualified it is the first non-NULL of itself and these row
    /// positions, as PostgreSQL's COALESCE(a.id, b.id).
    pub merged: Vec<usize>,
    /// The merged column of a USING join over columns of different types:
    /// named unqualified it is cast to their common type (PostgreSQL's
    /// `bigint` for `int` and `bigint`); `a.id` stays the side's own.
    pub using_ty: Option<DataType>,
    /// Its place in `SELECT *`: USING joins list the merged columns first.
    pub star: usize,
}

impl Default for ScopeCol {
    fn default() -> Self {
        ScopeCol {
            table: None,
            name: String::new(),
            ty: DataType::Text,
            origin: None,
            hidden: false,
            merged: Vec::new(),
            using_ty: None,
            star: 0,
        }
    }
}

/// The columns an expression can name, and the enclosing query's scope for
/// correlated subqueries.
#[derive(Clone, Debug, Default)]
pub struct Scope {
    pub cols: Vec<ScopeCol>,
    pub parent: Option<Arc<Scope>>,
    /// For the scope a LATERAL item is planned beside (the FROM items
    /// before it): what the item's names reached, which makes it lateral.
    pub reach: Option<Arc<parking_lot::Mutex<Reach>>>,
}

/// What the names of a FROM item reached through a lateral scope: its
/// columns (positions in it), and whether any went past it to an
/// enclosing query.
#[derive(Clone, Debug, Default)]
pub struct Reach {
    pub cols: Vec<usize>,
    pub beyond: bool,
}

impl Scope {
    pub fn new(cols: Vec<ScopeCol>) -> Self {
        Scope {
            cols,
            parent: None,
            reach: None,
        }
    }

    /// Finds `table.name` (or `name`): (depth, index). Depth 0 is this scope.
    /// Column names keep the case they were created with; a reference
    /// matches them regardless of case (more lenient than PostgreSQL, where
    /// an unquoted reference matches only a lower-case name).
    pub fn resolve(&self, table: Option<&str>, name: &str) -> Result<(usize, usize)> {
        let name = name.to_ascii_lowercase();
        let table = table.map(|t| t.to_ascii_lowercase());
        let mut hits: Vec<usize> = self
            .cols
            .iter()
            .enumerate()
            .filter(|(_, c)| {
                c.name.eq_ignore_ascii_case(&name)
                    && match &table {
                        None => !c.hidden,
                        Some(t) => c.table.as_deref() == Some(t.as_str()),
                    }
            })
            .map(|(i, _)| i)
            .collect();
        // A join's alias labels both sides of a USING column alike: the
        // alias names the merged one.
        if table.is_some() && hits.len() > 1 {
            hits.retain(|&i| !self.cols[i].hidden);
        }
        match hits.len() {
            1 => {
                if let Some(r) = &self.reach {
                    r.lock().cols.push(hits[0]);
                }
                Ok((0, hits[0]))
            }
            0 => match &self.parent {
                Some(p) => {
                    let (d, i) = p.resolve(table.as_deref(), &name)?;
                    if let Some(r) = &self.reach {
                        r.lock().beyond = true;
                    }
                    Ok((d + 1, i))
                }
                None => Err(match &table {
                    Some(t) if !self.has_table(t) => SqlError::new(
                        ErrorKind::UndefinedTable,
                        format!("missing FROM-clause entry for table \"{t}\""),
                    ),
                    Some(t) => SqlError::new(
                        ErrorKind::UndefinedColumn,
                        format!("column {t}.{name} does not exist"),
                    ),
                    None => SqlError::new(
                        ErrorKind::UndefinedColumn,
                        format!("column \"{name}\" does not exist"),
                    ),
                }),
            },
            _ => Err(SqlError::new(
                ErrorKind::AmbiguousColumn,
                format!("column reference \"{name}\" is ambiguous"),
            )),
        }
    }

    /// The table column a select-list (or RETURNING) entry reads, when it is
    /// a plain reference to one, here or in an enclosing query (PostgreSQL's
    /// markTargetListOrigins: any other expression has none). A cast to the
    /// column's own type (typmod included) is no expression in PostgreSQL,
    /// so it keeps the origin; `type_of` reads a cast's target type.
    pub fn origin_of(
        &self,
        e: &ast::Expr,
        type_of: &dyn Fn(&ast::DataType) -> Option<DataType>,
    ) -> Option<crate::ColumnOrigin> {
        self.typed_origin(e, type_of).map(|(o, _)| o)
    }

    fn typed_origin(
        &self,
        e: &ast::Expr,
        type_of: &dyn Fn(&ast::DataType) -> Option<DataType>,
    ) -> Option<(crate::ColumnOrigin, DataType)> {
        match e {
            ast::Expr::Nested(inner) => self.typed_origin(inner, type_of),
            ast::Expr::Cast {
                expr, data_type, ..
            } => {
                let (o, t) = self.typed_origin(expr, type_of)?;
                (type_of(data_type)? == t).then_some((o, t))
            }
            ast::Expr::Identifier(_) | ast::Expr::CompoundIdentifier(_) => {
                let (t, n) = ident_parts(e);
                let (depth, i) = self.resolve(t.as_deref(), &n).ok()?;
                let mut s = self;
                for _ in 0..depth {
                    s = s.parent.as_deref()?;
                }
                let c = s.cols.get(i)?;
                // A FULL join's merged column is a COALESCE: no origin.
                if t.is_none() && (!c.merged.is_empty() || c.using_ty.is_some()) {
                    return None;
                }
                Some((c.origin?, c.ty.clone()))
            }
            _ => None,
        }
    }

    fn has_table(&self, t: &str) -> bool {
        self.cols.iter().any(|c| c.table.as_deref() == Some(t))
            || self.parent.as_ref().is_some_and(|p| p.has_table(t))
    }
}

/// What a subquery yields.
#[derive(Debug)]
pub enum SubKind {
    Scalar,
    Exists {
        negated: bool,
    },
    In {
        expr: Box<Expr>,
        negated: bool,
    },
    /// `x op ANY (subquery)` / `x op ALL (subquery)`.
    Quantified {
        expr: Box<Expr>,
        op: BinOp,
        all: bool,
    },
    /// `ARRAY(subquery)`: the first column of every row, as an array in
    /// text form.
    Array,
    /// The one row of a subquery of any width, as a record of its columns
    /// (NULL for no row): the source of `UPDATE ... SET (a, b) = (SELECT
    /// ...)`, which spreads it over the columns.
    Row,
}

#[derive(Debug)]
pub struct SubPlan {
    pub plan: Arc<QueryPlan>,
    pub kind: SubKind,
    /// Uncorrelated subqueries run once per statement; their rows are cached.
    pub correlated: bool,
    pub cache: parking_lot::Mutex<Option<Arc<SubCache>>>,
    /// A correlated subquery's grouped form, which answers most enclosing
    /// rows from one pass (see `query/decorrelate.rs`).
    pub grouped: Option<Box<crate::query::decorrelate::Decorrelated>>,
}

#[derive(Debug)]
pub struct SubCache {
    pub rows: Vec<Vec<Value>>,
    pub set: HashSet<Value>,
    pub has_null: bool,
}

#[derive(Debug)]
pub enum Expr {
    Lit(Value),
    Param(usize),
    Col(usize),
    /// A column of an enclosing query's row: (depth >= 1, index).
    Outer(usize, usize),
    Not(Box<Expr>),
    Neg(Box<Expr>),
    Bin(BinOp, Box<Expr>, Box<Expr>),
    IsNull(Box<Expr>, bool),
    IsBool(Box<Expr>, bool, bool),
    InList(Box<Expr>, Vec<Expr>, bool),
    Between(Box<Expr>, Box<Expr>, Box<Expr>, bool),
    Like {
        expr: Box<Expr>,
        pattern: Box<Expr>,
        /// `ESCAPE e`; none means backslash.
        escape: Option<Box<Expr>>,
        negated: bool,
        ci: bool,
    },
    Case(Option<Box<Expr>>, Vec<(Expr, Expr)>, Option<Box<Expr>>),
    Cast(Box<Expr>, DataType),
    Func(Func, Vec<Expr>),
    Sub(Box<SubPlan>),
}

fn lit_value(v: &ast::Value) -> Result<Value> {
    use ast::Value as V;
    Ok(match v {
        V::Number(n, _) => {
            if let Ok(i) = n.parse::<i64>() {
                Value::Int(i)
            } else {
                // numeric, as PostgreSQL types `1.5` and `1e5`: exactly as
                // written, or refused (never rounded, nor read as a float:
                // `1e30 + 1` is exact in PostgreSQL). A float written so is
                // read as one where the context is a float (`1e300::float8`,
                // an INSERT into a float column).
                Value::Decimal(
                    walden_engine::types::parse_numeric(n)?
                        .ok_or_else(|| SqlError::syntax(format!("invalid number {n}")))?,
                )
            }
        }
        V::SingleQuotedString(s)
        | V::EscapedStringLiteral(s)
        | V::NationalStringLiteral(s)
        | V::UnicodeStringLiteral(s)
        | V::TripleSingleQuotedString(s) => Value::text(s),
        V::DollarQuotedString(d) => Value::text(&d.value),
        V::HexStringLiteral(h) => Value::Bytes(
            (0..h.len() / 2)
                .map(|i| u8::from_str_radix(&h[2 * i..2 * i + 2], 16))
                .collect::<std::result::Result<Vec<u8>, _>>()
                .map_err(|_| SqlError::syntax("invalid hex literal"))?
                .into(),
        ),
        V::Boolean(b) => Value::Bool(*b),
        V::Null => Value::Null,
        V::DoubleQuotedString(s) => Value::text(s),
        other => return Err(SqlError::unsupported(format!("literal {other}"))),
    })
}

fn bin_op(op: &BinaryOperator) -> Result<BinOp> {
    use BinaryOperator as B;
    Ok(match op {
        B::Plus => BinOp::Add,
        B::Minus => BinOp::Sub,
        B::Multiply => BinOp::Mul,
        B::Divide => BinOp::Div,
        B::Modulo => BinOp::Mod,
        B::StringConcat => BinOp::Concat,
        B::Eq => BinOp::Eq,
        B::NotEq => BinOp::NotEq,
        B::Lt => BinOp::Lt,
        B::LtEq => BinOp::LtEq,
        B::Gt => BinOp::Gt,
        B::GtEq => BinOp::GtEq,
        B::And => BinOp::And,
        B::Or => BinOp::Or,
        B::PGRegexMatch => BinOp::Regex(false, false),
        B::PGRegexIMatch => BinOp::Regex(true, false),
        B::PGRegexNotMatch => BinOp::Regex(false, true),
        B::PGRegexNotIMatch => BinOp::Regex(true, true),
        // `OPERATOR(op)` / `OPERATOR(pg_catalog.op)`: pg_catalog's
        // operators are the built-in ones.
        B::PGCustomBinaryOperator(parts) => {
            let op = match parts.as_slice() {
                [op] => op.as_str(),
                [schema, op] if schema.trim_matches('"') == "pg_catalog" => op.as_str(),
                [schema, _] if !matches!(schema.as_str(), "public" | "information_schema") => {
                    return Err(SqlError::new(
                        ErrorKind::InvalidSchemaName,
                        format!("schema \"{}\" does not exist", schema.trim_matches('"')),
                    ))
                }
                _ => {
                    return Err(SqlError::new(
                        ErrorKind::UndefinedFunction,
                        format!("operator does not exist: {}", parts.join(".")),
                    ))
                }
            };
            match op {
                "~" => BinOp::Regex(false, false),
                "~*" => BinOp::Regex(true, false),
                "!~" => BinOp::Regex(false, true),
                "!~*" => BinOp::Regex(true, true),
                "=" => BinOp::Eq,
                "<>" | "!=" => BinOp::NotEq,
                "<" => BinOp::Lt,
                "<=" => BinOp::LtEq,
                ">" => BinOp::Gt,
                ">=" => BinOp::GtEq,
                "+" => BinOp::Add,
                "-" => BinOp::Sub,
                "*" => BinOp::Mul,
                "/" => BinOp::Div,
                "%" => BinOp::Mod,
                "||" => BinOp::Concat,
                other => {
                    return Err(SqlError::unsupported(format!(
                        "operator OPERATOR(pg_catalog.{other})"
                    )))
                }
            }
        }
        other => return Err(SqlError::unsupported(format!("operator {other}"))),
    })
}

/// An identifier as PostgreSQL folds it: unquoted to lower case, quoted
/// as written.
pub fn fold_ident(i: &ast::Ident) -> String {
    if i.quote_style.is_some() {
        i.value.clone()
    } else {
        i.value.to_ascii_lowercase()
    }
}

/// Names an expression gets as a result column.
pub fn column_name(e: &ast::Expr) -> String {
    match e {
        ast::Expr::Identifier(i) => fold_ident(i),
        ast::Expr::CompoundIdentifier(parts) => parts.last().map(fold_ident).unwrap_or_default(),
        ast::Expr::Function(f) => {
            let n = f
                .name
                .0
                .last()
                .map(|p| p.to_string().trim_matches('"').to_ascii_lowercase())
                .unwrap_or_default();
            // A stored function's call is named after the function.
            if n == "walden_routine_set" || n == "walden_routine" {
                if let Some(ast::Expr::Value(v)) = crate::front::args_of(f)
                    .first()
                    .and_then(|a| crate::front::arg_expr(a))
                {
                    if let ast::Value::SingleQuotedString(s) = &v.value {
                        return s.split('(').next().unwrap_or(s).to_string();
                    }
                }
            }
            n
        }
        ast::Expr::Cast {
            expr, data_type, ..
        } => colname::cast(expr, data_type),
        ast::Expr::TypedString(ts) => colname::type_name(&ts.data_type),
        ast::Expr::Interval(_) => "interval".into(),
        ast::Expr::Position { .. } => "position".into(),
        ast::Expr::Extract { .. } => "extract".into(),
        ast::Expr::AtTimeZone { .. } => "timezone".into(),
        ast::Expr::Nested(e) => column_name(e),
        // A CASE whose ELSE has a name of its own takes it, as PostgreSQL.
        ast::Expr::Case { else_result, .. } => else_result
            .as_deref()
            .and_then(colname::strong_name)
            .unwrap_or_else(|| "case".into()),
        ast::Expr::Exists { .. } => "exists".into(),
        // The grammar's special forms are named after the function they call.
        ast::Expr::Substring { .. } => "substring".into(),
        ast::Expr::Overlay { .. } => "overlay".into(),
        ast::Expr::Ceil { .. } => "ceil".into(),
        ast::Expr::Floor { .. } => "floor".into(),
        ast::Expr::Trim { trim_where, .. } => match trim_where {
            Some(ast::TrimWhereField::Leading) => "ltrim",
            Some(ast::TrimWhereField::Trailing) => "rtrim",
            _ => "btrim",
        }
        .into(),
        // A scalar subquery is named after its (first) result column.
        ast::Expr::Subquery(q) => colname::first_column(q).unwrap_or_else(|| "?column?".into()),
        // `ARRAY[...]` is "array"; `a[1]` is named after `a`.
        ast::Expr::Array(_) => "array".into(),
        // `(f(x)).n` is named after the field.
        ast::Expr::CompoundFieldAccess { access_chain, .. }
            if matches!(
                access_chain.last(),
                Some(ast::AccessExpr::Dot(ast::Expr::Identifier(_)))
            ) =>
        {
            match access_chain.last() {
                Some(ast::AccessExpr::Dot(ast::Expr::Identifier(i))) => fold_ident(i),
                _ => unreachable!("matched above"),
            }
        }
        ast::Expr::CompoundFieldAccess { root, .. } => column_name(root),
        _ => "?column?".into(),
    }
}

impl Expr {
    /// Direct sub-expressions evaluated against the same row (a subquery's
    /// body runs against its own rows; its IN/ANY operand does not).
    pub fn children(&self) -> Vec<&Expr> {
        match self {
            Expr::Lit(_) | Expr::Param(_) | Expr::Col(_) | Expr::Outer(..) => vec![],
            Expr::Not(x)
            | Expr::Neg(x)
            | Expr::IsNull(x, _)
            | Expr::IsBool(x, ..)
            | Expr::Cast(x, _) => vec![x],
            Expr::Bin(_, a, b) => vec![a, b],
            Expr::InList(x, l, _) => std::iter::once(x.as_ref()).chain(l.iter()).collect(),
            Expr::Between(a, b, c, _) => vec![a, b, c],
            Expr::Like {
                expr,
                pattern,
                escape,
                ..
            } => [expr, pattern]
                .into_iter()
                .chain(escape)
                .map(|x| x.as_ref())
                .collect(),
            Expr::Case(o, w, e) => o
                .iter()
                .map(|x| x.as_ref())
                .chain(w.iter().flat_map(|(a, b)| [a, b]))
                .chain(e.iter().map(|x| x.as_ref()))
                .collect(),
            Expr::Func(_, a) => a.iter().collect(),
            Expr::Sub(s) => match &s.kind {
                SubKind::In { expr, .. } | SubKind::Quantified { expr, .. } => vec![expr],
                _ => vec![],
            },
        }
    }

    /// [`Expr::children`], mutably.
    pub fn children_mut(&mut self) -> Vec<&mut Expr> {
        match self {
            Expr::Lit(_) | Expr::Param(_) | Expr::Col(_) | Expr::Outer(..) => vec![],
            Expr::Not(x)
            | Expr::Neg(x)
            | Expr::IsNull(x, _)
            | Expr::IsBool(x, ..)
            | Expr::Cast(x, _) => vec![x],
            Expr::Bin(_, a, b) => vec![a, b],
            Expr::InList(x, l, _) => std::iter::once(x.as_mut()).chain(l.iter_mut()).collect(),
            Expr::Between(a, b, c, _) => vec![a, b, c],
            Expr::Like {
                expr,
                pattern,
                escape,
                ..
            } => [expr, pattern]
                .into_iter()
                .chain(escape)
                .map(|x| x.as_mut())
                .collect(),
            Expr::Case(o, w, e) => o
                .iter_mut()
                .map(|x| x.as_mut())
                .chain(w.iter_mut().flat_map(|(a, b)| [a, b]))
                .chain(e.iter_mut().map(|x| x.as_mut()))
                .collect(),
            Expr::Func(_, a) => a.iter_mut().collect(),
            Expr::Sub(s) => match &mut s.kind {
                SubKind::In { expr, .. } | SubKind::Quantified { expr, .. } => vec![expr],
                _ => vec![],
            },
        }
    }

    /// Whether the expression depends on the current row (columns, impure
    /// functions, correlated subqueries).
    pub fn uses_row(&self) -> bool {
        match self {
            Expr::Col(_) => true,
            Expr::Func(f, _) if !f.is_pure() => true,
            Expr::Sub(s) if s.correlated => true,
            e => e.children().iter().any(|c| c.uses_row()),
        }
    }

    /// Whether the expression refers to enclosing queries (is correlated).
    pub fn uses_outer(&self) -> bool {
        match self {
            Expr::Outer(..) => true,
            Expr::Sub(s) if s.correlated => true,
            e => e.children().iter().any(|c| c.uses_outer()),
        }
    }

    /// Whether the expression holds a subquery. Such plans are not reused
    /// across executions: an uncorrelated subquery caches its rows in the plan
    /// for the length of one statement.
    pub fn has_subquery(&self) -> bool {
        match self {
            Expr::Sub(_) => true,
            e => e.children().iter().any(|c| c.has_subquery()),
        }
    }
}
