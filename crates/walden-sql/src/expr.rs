//! Bound expressions: compiled from sqlparser's AST against a scope (column
//! positions resolved once), then evaluated per row with SQL's three-valued
//! logic.

use crate::error::{ErrorKind, Result, SqlError};
use crate::functions::{self, Func};
use crate::query::{self, Planner, QueryPlan};
use rust_decimal::prelude::{FromPrimitive, ToPrimitive};
use rust_decimal::Decimal;
use sqlparser::ast::{self, BinaryOperator, UnaryOperator};
use std::cmp::Ordering;
use std::collections::HashSet;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use walden_engine::types::coerce;
use walden_engine::{DataType, Transaction, Value};

/// A column visible in a scope.
#[derive(Clone, Debug)]
pub struct ScopeCol {
    /// Table name or alias (lower case).
    pub table: Option<String>,
    /// Column name (lower case).
    pub name: String,
    pub ty: DataType,
}

/// The columns an expression can name, and the enclosing query's scope for
/// correlated subqueries.
#[derive(Clone, Debug, Default)]
pub struct Scope {
    pub cols: Vec<ScopeCol>,
    pub parent: Option<Arc<Scope>>,
}

impl Scope {
    pub fn new(cols: Vec<ScopeCol>) -> Self {
        Scope { cols, parent: None }
    }

    /// Finds `table.name` (or `name`): (depth, index). Depth 0 is this scope.
    /// Column names keep the case they were created with; a reference
    /// matches them regardless of case (more lenient than PostgreSQL, where
    /// an unquoted reference matches only a lower-case name).
    pub fn resolve(&self, table: Option<&str>, name: &str) -> Result<(usize, usize)> {
        let name = name.to_ascii_lowercase();
        let table = table.map(|t| t.to_ascii_lowercase());
        let hits: Vec<usize> = self
            .cols
            .iter()
            .enumerate()
            .filter(|(_, c)| {
                c.name.eq_ignore_ascii_case(&name)
                    && (table.is_none() || c.table.as_deref() == table.as_deref())
            })
            .map(|(i, _)| i)
            .collect();
        match hits.len() {
            1 => Ok((0, hits[0])),
            0 => match &self.parent {
                Some(p) => p.resolve(table.as_deref(), &name).map(|(d, i)| (d + 1, i)),
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

    fn has_table(&self, t: &str) -> bool {
        self.cols.iter().any(|c| c.table.as_deref() == Some(t))
            || self.parent.as_ref().is_some_and(|p| p.has_table(t))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Concat,
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
    And,
    Or,
    IsDistinct,
    IsNotDistinct,
    /// `~`, `~*`, `!~`, `!~*`: (case insensitive, negated).
    Regex(bool, bool),
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
}

#[derive(Debug)]
pub struct SubPlan {
    pub plan: Arc<QueryPlan>,
    pub kind: SubKind,
    /// Uncorrelated subqueries run once per statement; their rows are cached.
    pub correlated: bool,
    pub cache: parking_lot::Mutex<Option<Arc<SubCache>>>,
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
        negated: bool,
        ci: bool,
    },
    Case(Option<Box<Expr>>, Vec<(Expr, Expr)>, Option<Box<Expr>>),
    Cast(Box<Expr>, DataType),
    Func(Func, Vec<Expr>),
    Sub(Box<SubPlan>),
}

/// What evaluation can reach: parameters, enclosing rows, the transaction.
pub struct Env<'a> {
    pub params: &'a [Value],
    /// Enclosing queries' current rows, innermost first.
    pub outer: &'a [&'a [Value]],
    pub tx: &'a Transaction,
    pub info: &'a functions::SessionInfo,
    pub cancel: &'a AtomicBool,
    pub instance: &'a walden_engine::Instance,
}

fn lit_value(v: &ast::Value) -> Result<Value> {
    use ast::Value as V;
    Ok(match v {
        V::Number(n, _) => {
            if let Ok(i) = n.parse::<i64>() {
                Value::Int(i)
            } else if n.contains(['e', 'E']) {
                Value::Float(
                    n.parse()
                        .map_err(|_| SqlError::syntax(format!("invalid number {n}")))?,
                )
            } else {
                Value::Decimal(
                    n.parse::<Decimal>()
                        .or_else(|_| Decimal::from_scientific(n))
                        .map_err(|_| {
                            SqlError::new(
                                ErrorKind::NumericOutOfRange,
                                format!("number {n} is out of range"),
                            )
                        })?,
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
        B::PGCustomBinaryOperator(parts)
            if parts.last().is_some_and(|p| {
                p.starts_with('~') || p.starts_with("!~") || p == "=" || p == "<>"
            }) =>
        {
            match parts.last().unwrap().as_str() {
                "~" => BinOp::Regex(false, false),
                "~*" => BinOp::Regex(true, false),
                "!~" => BinOp::Regex(false, true),
                "!~*" => BinOp::Regex(true, true),
                "=" => BinOp::Eq,
                _ => BinOp::NotEq,
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
        ast::Expr::Function(f) => f
            .name
            .0
            .last()
            .map(|p| p.to_string().trim_matches('"').to_ascii_lowercase())
            .unwrap_or_default(),
        ast::Expr::Cast { expr, .. } => column_name(expr),
        ast::Expr::Nested(e) => column_name(e),
        ast::Expr::Case { .. } => "case".into(),
        ast::Expr::Exists { .. } => "exists".into(),
        _ => "?column?".into(),
    }
}

impl Expr {
    /// Compiles an AST expression in `scope`.
    pub fn compile(p: &mut Planner<'_>, scope: &Arc<Scope>, e: &ast::Expr) -> Result<Expr> {
        // After grouping, group-by expressions and aggregates are values of the
        // grouped row; anything else must be built from them.
        if let Some(agg) = p.agg.as_mut() {
            let key = e.to_string();
            if let Some(i) = agg.group_keys.iter().position(|k| *k == key) {
                // Grouped rows are laid out as [keys..., aggregates...].
                return Ok(Expr::Col(i));
            }
            if let ast::Expr::Function(f) = e {
                if let Some(kind) = functions::aggregate_kind(f) {
                    let mut ctx = p.agg.take().unwrap();
                    let compiled = functions::compile_aggregate(p, &ctx.input_scope, f, kind);
                    let slot = ctx.aggs.len();
                    match compiled {
                        Ok(spec) => ctx.aggs.push(spec),
                        Err(err) => {
                            p.agg = Some(ctx);
                            return Err(err);
                        }
                    }
                    let keys = ctx.group_keys.len();
                    p.agg = Some(ctx);
                    return Ok(Expr::Col(keys + slot));
                }
            }
            if let ast::Expr::Identifier(_) | ast::Expr::CompoundIdentifier(_) = e {
                // A column of the input that is not grouped (unless it is an
                // outer reference, which is constant per group).
                let input = agg.input_scope.clone();
                let (t, n) = ident_parts(e);
                if input
                    .resolve(t.as_deref(), &n)
                    .map(|(d, _)| d == 0)
                    .unwrap_or(false)
                {
                    return Err(SqlError::new(
                        ErrorKind::GroupingError,
                        format!("column \"{}\" must appear in the GROUP BY clause or be used in an aggregate function", e),
                    ));
                }
                let (d, i) = input.resolve(t.as_deref(), &n)?;
                return Ok(Expr::Outer(d, i));
            }
        }
        use ast::Expr as A;
        Ok(match e {
            A::Identifier(id) => {
                if id.value.starts_with("@@") {
                    return Ok(Expr::Func(functions::global_variable(&id.value)?, vec![]));
                }
                if id.quote_style.is_none() {
                    if let Some(f) = functions::niladic(&id.value) {
                        if scope.resolve(None, &id.value).is_err() {
                            return Ok(Expr::Func(f, vec![]));
                        }
                    }
                }
                col_ref(scope, None, &id.value)?
            }
            A::CompoundIdentifier(parts) => {
                let (t, n) = ident_parts(e);
                let _ = parts;
                col_ref(scope, t.as_deref(), &n)?
            }
            A::Value(v) => match &v.value {
                ast::Value::Placeholder(ph) => {
                    let n: usize = ph
                        .trim_start_matches('$')
                        .parse()
                        .map_err(|_| SqlError::syntax(format!("invalid parameter {ph}")))?;
                    if n == 0 {
                        return Err(SqlError::syntax("parameters are numbered from $1"));
                    }
                    p.note_param(n - 1);
                    Expr::Param(n - 1)
                }
                other => Expr::Lit(lit_value(other)?),
            },
            A::TypedString(ts) => {
                let t = crate::typing::data_type(&ts.data_type)?;
                let v = lit_value(&ts.value.value)?;
                if t == DataType::TimestampTz {
                    // Read in the zone in force when it runs, not when planned.
                    coerce(v.clone(), &t)?;
                    Expr::Cast(Box::new(Expr::Lit(v)), t)
                } else {
                    Expr::Lit(coerce(v, &t)?)
                }
            }
            A::Nested(inner) => Expr::compile(p, scope, inner)?,
            A::UnaryOp { op, expr } => {
                let inner = Expr::compile(p, scope, expr)?;
                match op {
                    UnaryOperator::Not => Expr::Not(Box::new(inner)),
                    UnaryOperator::Minus => match inner {
                        Expr::Lit(Value::Int(i)) => Expr::Lit(Value::Int(-i)),
                        Expr::Lit(Value::Decimal(d)) => Expr::Lit(Value::Decimal(-d)),
                        Expr::Lit(Value::Float(f)) => Expr::Lit(Value::Float(-f)),
                        other => Expr::Neg(Box::new(other)),
                    },
                    UnaryOperator::Plus => inner,
                    other => return Err(SqlError::unsupported(format!("operator {other}"))),
                }
            }
            A::BinaryOp { left, op, right } => {
                if let Some(j) = crate::jsonfn::operator(op) {
                    let l = Expr::compile(p, scope, left)?;
                    let r = Expr::compile(p, scope, right)?;
                    return Ok(Expr::Func(Func::Json(j), vec![l, r]));
                }
                let op = bin_op(op)?;
                let l = Expr::compile(p, scope, left)?;
                let r = Expr::compile(p, scope, right)?;
                p.infer_pair(&l, &r, scope);
                // char(n) compares without its trailing blanks, as PostgreSQL's
                // bpchar does ('ab   ' = 'ab').
                let (l, r) = if matches!(
                    op,
                    BinOp::Eq | BinOp::NotEq | BinOp::Lt | BinOp::LtEq | BinOp::Gt | BinOp::GtEq
                ) && (is_char(p, scope, &l) || is_char(p, scope, &r))
                {
                    (unpad(l), unpad(r))
                } else {
                    (l, r)
                };
                Expr::Bin(op, Box::new(l), Box::new(r))
            }
            A::IsDistinctFrom(a, b) => Expr::Bin(
                BinOp::IsDistinct,
                Box::new(Expr::compile(p, scope, a)?),
                Box::new(Expr::compile(p, scope, b)?),
            ),
            A::IsNotDistinctFrom(a, b) => Expr::Bin(
                BinOp::IsNotDistinct,
                Box::new(Expr::compile(p, scope, a)?),
                Box::new(Expr::compile(p, scope, b)?),
            ),
            A::IsNull(x) => Expr::IsNull(Box::new(Expr::compile(p, scope, x)?), false),
            A::IsNotNull(x) => Expr::IsNull(Box::new(Expr::compile(p, scope, x)?), true),
            A::IsTrue(x) => Expr::IsBool(Box::new(Expr::compile(p, scope, x)?), true, false),
            A::IsNotTrue(x) => Expr::IsBool(Box::new(Expr::compile(p, scope, x)?), true, true),
            A::IsFalse(x) => Expr::IsBool(Box::new(Expr::compile(p, scope, x)?), false, false),
            A::IsNotFalse(x) => Expr::IsBool(Box::new(Expr::compile(p, scope, x)?), false, true),
            A::InList {
                expr,
                list,
                negated,
            } => {
                let x = Expr::compile(p, scope, expr)?;
                let items = list
                    .iter()
                    .map(|i| {
                        let c = Expr::compile(p, scope, i)?;
                        p.infer_pair(&x, &c, scope);
                        Ok(c)
                    })
                    .collect::<Result<Vec<_>>>()?;
                Expr::InList(Box::new(x), items, *negated)
            }
            A::Between {
                expr,
                negated,
                low,
                high,
            } => Expr::Between(
                Box::new(Expr::compile(p, scope, expr)?),
                Box::new(Expr::compile(p, scope, low)?),
                Box::new(Expr::compile(p, scope, high)?),
                *negated,
            ),
            A::Like {
                negated,
                expr,
                pattern,
                ..
            } => Expr::Like {
                expr: Box::new(Expr::compile(p, scope, expr)?),
                pattern: Box::new(Expr::compile(p, scope, pattern)?),
                negated: *negated,
                ci: false,
            },
            A::ILike {
                negated,
                expr,
                pattern,
                ..
            } => Expr::Like {
                expr: Box::new(Expr::compile(p, scope, expr)?),
                pattern: Box::new(Expr::compile(p, scope, pattern)?),
                negated: *negated,
                ci: true,
            },
            A::Case {
                operand,
                conditions,
                else_result,
                ..
            } => Expr::Case(
                operand
                    .as_ref()
                    .map(|o| Expr::compile(p, scope, o).map(Box::new))
                    .transpose()?,
                conditions
                    .iter()
                    .map(|w| {
                        Ok((
                            Expr::compile(p, scope, &w.condition)?,
                            Expr::compile(p, scope, &w.result)?,
                        ))
                    })
                    .collect::<Result<Vec<_>>>()?,
                else_result
                    .as_ref()
                    .map(|o| Expr::compile(p, scope, o).map(Box::new))
                    .transpose()?,
            ),
            A::Cast {
                expr, data_type, ..
            } => {
                if let Some(e) = catalog_cast(p, scope, expr, data_type)? {
                    return Ok(e);
                }
                let t = crate::typing::data_type(data_type)?;
                let inner = Expr::compile(p, scope, expr)?;
                if let Expr::Param(i) = inner {
                    p.infer_param(i, t.clone());
                }
                Expr::Cast(Box::new(inner), t)
            }
            A::Convert {
                expr,
                data_type: Some(dt),
                ..
            } => Expr::Cast(
                Box::new(Expr::compile(p, scope, expr)?),
                crate::typing::data_type(dt)?,
            ),
            // T-SQL CONVERT(type, value [, style]) as the PostgreSQL dialect reads it.
            A::Convert {
                expr,
                data_type: None,
                styles,
                ..
            } if matches!(expr.as_ref(), A::Identifier(_)) && !styles.is_empty() => {
                let ty = parse_type_name(&expr.to_string())?;
                Expr::Cast(Box::new(Expr::compile(p, scope, &styles[0])?), ty)
            }
            A::Function(f) => {
                if functions::aggregate_kind(f).is_some() {
                    return Err(SqlError::new(
                        ErrorKind::GroupingError,
                        format!("aggregate function {} is not allowed here", f.name),
                    ));
                }
                functions::compile_call(p, scope, f)?
            }
            A::Ceil { expr, .. } => Expr::Func(Func::Ceil, vec![Expr::compile(p, scope, expr)?]),
            A::Floor { expr, .. } => Expr::Func(Func::Floor, vec![Expr::compile(p, scope, expr)?]),
            A::Substring {
                expr,
                substring_from,
                substring_for,
                ..
            } => {
                let mut args = vec![Expr::compile(p, scope, expr)?];
                args.push(match substring_from {
                    Some(f) => Expr::compile(p, scope, f)?,
                    None => Expr::Lit(Value::Int(1)),
                });
                if let Some(f) = substring_for {
                    args.push(Expr::compile(p, scope, f)?);
                }
                Expr::Func(Func::Substring, args)
            }
            A::Trim {
                expr,
                trim_where,
                trim_what,
                trim_characters,
            } => {
                let f = match trim_where {
                    Some(ast::TrimWhereField::Leading) => Func::Ltrim,
                    Some(ast::TrimWhereField::Trailing) => Func::Rtrim,
                    _ => Func::Trim,
                };
                // `TRIM(BOTH 'x' FROM s)` / `TRIM(s, 'x')`: the characters to strip.
                let mut args = vec![Expr::compile(p, scope, expr)?];
                match (trim_what, trim_characters) {
                    (Some(w), _) => args.push(Expr::compile(p, scope, w)?),
                    (None, Some(cs)) if cs.len() == 1 => {
                        args.push(Expr::compile(p, scope, &cs[0])?)
                    }
                    (None, Some(_)) => {
                        return Err(SqlError::unsupported("TRIM with several character lists"))
                    }
                    (None, None) => {}
                }
                Expr::Func(f, args)
            }
            A::Interval(iv) => {
                if iv.last_field.is_some()
                    || iv.leading_precision.is_some()
                    || iv.fractional_seconds_precision.is_some()
                {
                    return Err(SqlError::unsupported(format!("interval literal {e}")));
                }
                let text = match Expr::compile(p, scope, &iv.value)? {
                    Expr::Lit(Value::Text(s)) => s.to_string(),
                    Expr::Lit(v @ (Value::Int(_) | Value::Decimal(_))) => v.to_string(),
                    _ => return Err(SqlError::unsupported(format!("interval literal {e}"))),
                };
                // `INTERVAL '3' DAY`: a bare number counts the unit.
                let text = match &iv.leading_field {
                    Some(f) if text.trim().parse::<f64>().is_ok() => format!("{text} {f}"),
                    Some(f) => {
                        return Err(SqlError::unsupported(format!("interval literal with {f}")))
                    }
                    None => text,
                };
                Expr::Lit(coerce(Value::text(text), &DataType::Interval)?)
            }
            A::Extract { field, expr, .. } => Expr::Func(
                Func::Extract,
                vec![
                    Expr::Lit(Value::text(field.to_string())),
                    Expr::compile(p, scope, expr)?,
                ],
            ),
            A::Exists { subquery, negated } => {
                sub(p, scope, subquery, SubKind::Exists { negated: *negated })?
            }
            A::Subquery(q) => sub(p, scope, q, SubKind::Scalar)?,
            A::InSubquery {
                expr,
                subquery,
                negated,
            } => {
                let x = Expr::compile(p, scope, expr)?;
                sub(
                    p,
                    scope,
                    subquery,
                    SubKind::In {
                        expr: Box::new(x),
                        negated: *negated,
                    },
                )?
            }
            A::AnyOp {
                left,
                compare_op,
                right,
                ..
            }
            | A::AllOp {
                left,
                compare_op,
                right,
            } => {
                let all = matches!(e, A::AllOp { .. });
                let x = Expr::compile(p, scope, left)?;
                let op = bin_op(compare_op)?;
                match right.as_ref() {
                    A::Subquery(q) => sub(
                        p,
                        scope,
                        q,
                        SubKind::Quantified {
                            expr: Box::new(x),
                            op,
                            all,
                        },
                    )?,
                    // `x = ANY (array)`: arrays are values in text form.
                    other => {
                        let arr = Expr::compile(p, scope, other)?;
                        Expr::Func(Func::AnyArray(op, all), vec![x, arr])
                    }
                }
            }
            A::CompoundFieldAccess { root, access_chain } => {
                // Only `array[i]` subscripts; field access needs composite types.
                let mut e = Expr::compile(p, scope, root)?;
                for a in access_chain {
                    match a {
                        ast::AccessExpr::Subscript(ast::Subscript::Index { index }) => {
                            let i = Expr::compile(p, scope, index)?;
                            e = Expr::Func(Func::ArrayElement, vec![e, i]);
                        }
                        other => {
                            return Err(SqlError::unsupported(format!("expression {root}{other}")))
                        }
                    }
                }
                e
            }
            A::Array(arr) => Expr::Func(
                Func::ArrayBuild,
                arr.elem
                    .iter()
                    .map(|x| Expr::compile(p, scope, x))
                    .collect::<Result<Vec<_>>>()?,
            ),
            A::Tuple(items) if items.len() == 1 => Expr::compile(p, scope, &items[0])?,
            // One collation (binary UTF-8 order) is all there is.
            A::Collate { expr, .. } => Expr::compile(p, scope, expr)?,
            other => return Err(SqlError::unsupported(format!("expression {other}"))),
        })
    }

    /// Evaluates against `row`.
    pub fn eval(&self, row: &[Value], env: &Env<'_>) -> Result<Value> {
        Ok(match self {
            Expr::Lit(v) => v.clone(),
            Expr::Param(i) => env.params.get(*i).cloned().ok_or_else(|| {
                SqlError::new(
                    ErrorKind::InvalidParameter,
                    format!("there is no parameter ${}", i + 1),
                )
            })?,
            Expr::Col(i) => row[*i].clone(),
            Expr::Outer(d, i) => env
                .outer
                .get(d - 1)
                .and_then(|r| r.get(*i))
                .cloned()
                .ok_or_else(|| SqlError::internal("outer reference out of range"))?,
            Expr::Not(x) => match truth(&x.eval(row, env)?)? {
                Some(b) => Value::Bool(!b),
                None => Value::Null,
            },
            Expr::Neg(x) => match x.eval(row, env)? {
                Value::Null => Value::Null,
                Value::Int(i) => Value::Int(i.checked_neg().ok_or_else(overflow)?),
                Value::Float(f) => Value::Float(-f),
                Value::Decimal(d) => Value::Decimal(-d),
                Value::Interval(i) => Value::Interval(i.checked_neg().ok_or_else(|| {
                    SqlError::new(ErrorKind::DatetimeOverflow, "interval out of range")
                })?),
                v => {
                    return Err(SqlError::new(
                        ErrorKind::UndefinedFunction,
                        format!("operator does not exist: - {v}"),
                    ))
                }
            },
            Expr::Bin(BinOp::And, a, b) => {
                let l = truth(&a.eval(row, env)?)?;
                if l == Some(false) {
                    return Ok(Value::Bool(false));
                }
                let r = truth(&b.eval(row, env)?)?;
                match (l, r) {
                    (_, Some(false)) => Value::Bool(false),
                    (Some(true), Some(true)) => Value::Bool(true),
                    _ => Value::Null,
                }
            }
            Expr::Bin(BinOp::Or, a, b) => {
                let l = truth(&a.eval(row, env)?)?;
                if l == Some(true) {
                    return Ok(Value::Bool(true));
                }
                let r = truth(&b.eval(row, env)?)?;
                match (l, r) {
                    (_, Some(true)) => Value::Bool(true),
                    (Some(false), Some(false)) => Value::Bool(false),
                    _ => Value::Null,
                }
            }
            Expr::Bin(op, a, b) => binary(*op, a.eval(row, env)?, b.eval(row, env)?)?,
            Expr::IsNull(x, neg) => Value::Bool(x.eval(row, env)?.is_null() != *neg),
            Expr::IsBool(x, want, neg) => {
                let v = truth(&x.eval(row, env)?)?;
                Value::Bool((v == Some(*want)) != *neg)
            }
            Expr::InList(x, items, neg) => {
                let v = x.eval(row, env)?;
                if v.is_null() {
                    return Ok(Value::Null);
                }
                let mut saw_null = false;
                for i in items {
                    let w = i.eval(row, env)?;
                    match compare(&v, &w)? {
                        Some(Ordering::Equal) => return Ok(Value::Bool(!neg)),
                        None => saw_null = true,
                        _ => {}
                    }
                }
                if saw_null {
                    Value::Null
                } else {
                    Value::Bool(*neg)
                }
            }
            Expr::Between(x, lo, hi, neg) => {
                let v = x.eval(row, env)?;
                let ge = binary(BinOp::GtEq, v.clone(), lo.eval(row, env)?)?;
                let le = binary(BinOp::LtEq, v, hi.eval(row, env)?)?;
                let both = match (truth(&ge)?, truth(&le)?) {
                    (Some(false), _) | (_, Some(false)) => Some(false),
                    (Some(true), Some(true)) => Some(true),
                    _ => None,
                };
                match both {
                    Some(b) => Value::Bool(b != *neg),
                    None => Value::Null,
                }
            }
            Expr::Like {
                expr,
                pattern,
                negated,
                ci,
            } => {
                let (v, p) = (expr.eval(row, env)?, pattern.eval(row, env)?);
                if v.is_null() || p.is_null() {
                    return Ok(Value::Null);
                }
                let (v, p) = (v.to_string(), p.to_string());
                let m = if *ci {
                    like(&v.to_lowercase(), &p.to_lowercase())
                } else {
                    like(&v, &p)
                };
                Value::Bool(m != *negated)
            }
            Expr::Case(operand, whens, els) => {
                let base = operand.as_ref().map(|o| o.eval(row, env)).transpose()?;
                for (w, then) in whens {
                    let hit = match &base {
                        Some(b) => compare(b, &w.eval(row, env)?)? == Some(Ordering::Equal),
                        None => truth(&w.eval(row, env)?)? == Some(true),
                    };
                    if hit {
                        return then.eval(row, env);
                    }
                }
                match els {
                    Some(e) => e.eval(row, env)?,
                    None => Value::Null,
                }
            }
            Expr::Cast(x, t) => cast(x.eval(row, env)?, t)?,
            Expr::Func(f, args) => {
                let vals = args
                    .iter()
                    .map(|a| a.eval(row, env))
                    .collect::<Result<Vec<_>>>()?;
                functions::call(*f, vals, env)?
            }
            Expr::Sub(s) => eval_sub(s, row, env)?,
        })
    }

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
            Expr::Like { expr, pattern, .. } => vec![expr, pattern],
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
            Expr::Like { expr, pattern, .. } => vec![expr, pattern],
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

pub(crate) fn parse_type_name(name: &str) -> Result<DataType> {
    let dialect = sqlparser::dialect::PostgreSqlDialect {};
    let mut parser = sqlparser::parser::Parser::new(&dialect)
        .try_with_sql(name)
        .map_err(|e| SqlError::syntax(e.to_string()))?;
    let t = parser
        .parse_data_type()
        .map_err(|e| SqlError::syntax(e.to_string()))?;
    crate::typing::data_type(&t)
}

/// Whether `e` is of a `char(n)` type.
pub fn is_char(p: &Planner<'_>, scope: &Scope, e: &Expr) -> bool {
    let types: Vec<DataType> = scope.cols.iter().map(|c| c.ty.clone()).collect();
    matches!(
        crate::query::static_type(e, &types, &p.params),
        Some(DataType::Char(_))
    )
}

/// `e` without trailing blanks (for char(n) semantics).
pub fn unpad(e: Expr) -> Expr {
    match e {
        Expr::Lit(Value::Text(s)) => Expr::Lit(Value::text(s.trim_end_matches(' '))),
        Expr::Lit(v) => Expr::Lit(v),
        other => Expr::Func(Func::Rtrim, vec![other]),
    }
}

pub fn ident_parts(e: &ast::Expr) -> (Option<String>, String) {
    match e {
        ast::Expr::Identifier(i) => (None, i.value.clone()),
        ast::Expr::CompoundIdentifier(parts) => {
            let n = parts.len();
            let name = parts[n - 1].value.clone();
            let table = (n >= 2).then(|| parts[n - 2].value.clone());
            (table, name)
        }
        _ => (None, String::new()),
    }
}

fn col_ref(scope: &Scope, table: Option<&str>, name: &str) -> Result<Expr> {
    let (d, i) = scope.resolve(table, name)?;
    Ok(if d == 0 {
        Expr::Col(i)
    } else {
        Expr::Outer(d, i)
    })
}

/// `ARRAY(SELECT ...)`.
pub fn array_subquery(p: &mut Planner<'_>, scope: &Arc<Scope>, q: &ast::Query) -> Result<Expr> {
    sub(p, scope, q, SubKind::Array)
}

/// Casts to PostgreSQL's catalog types, which Walden has no column types
/// for: `regclass`, `regtype` and `regnamespace` turn a name into an OID or
/// an OID into a name, depending on which one they are given; arrays stay
/// in their text form. `None` for every other type.
fn catalog_cast(
    p: &mut Planner<'_>,
    scope: &Arc<Scope>,
    expr: &ast::Expr,
    data_type: &ast::DataType,
) -> Result<Option<Expr>> {
    let names: Option<(Func, Func)> = match data_type {
        ast::DataType::Array(_) => {
            let inner = Expr::compile(p, scope, expr)?;
            return Ok(Some(Expr::Cast(Box::new(inner), DataType::Text)));
        }
        ast::DataType::Regclass => Some((Func::RegClassOid, Func::RegClassName)),
        ast::DataType::Custom(name, _) => {
            let last = name
                .0
                .last()
                .map(|p| p.to_string().trim_matches('"').to_ascii_lowercase());
            match last.as_deref() {
                Some("regclass") => Some((Func::RegClassOid, Func::RegClassName)),
                Some("regtype") => Some((Func::RegTypeOid, Func::RegTypeName)),
                Some("regnamespace") => Some((Func::RegNamespaceOid, Func::RegNamespaceName)),
                _ => None,
            }
        }
        _ => None,
    };
    let Some((to_oid, to_name)) = names else {
        return Ok(None);
    };
    let inner = Expr::compile(p, scope, expr)?;
    let types: Vec<DataType> = scope.cols.iter().map(|c| c.ty.clone()).collect();
    // A number is an OID to name; text (a literal, a parameter) is a name.
    let is_number = matches!(
        query::static_type(&inner, &types, &p.params),
        Some(
            DataType::SmallInt
                | DataType::Int
                | DataType::BigInt
                | DataType::Decimal { .. }
                | DataType::Real
                | DataType::Double
        )
    );
    Ok(Some(Expr::Func(
        if is_number { to_name } else { to_oid },
        vec![inner],
    )))
}

fn sub(p: &mut Planner<'_>, scope: &Arc<Scope>, q: &ast::Query, kind: SubKind) -> Result<Expr> {
    let saved = p.agg.take();
    let plan = query::plan_query(p, q, Some(scope.clone()));
    p.agg = saved;
    let plan = plan?;
    if matches!(
        kind,
        SubKind::Scalar | SubKind::In { .. } | SubKind::Quantified { .. } | SubKind::Array
    ) && plan.columns.len() != 1
    {
        return Err(SqlError::syntax("subquery must return only one column"));
    }
    let correlated = plan.correlated;
    Ok(Expr::Sub(Box::new(SubPlan {
        plan: Arc::new(plan),
        kind,
        correlated,
        cache: parking_lot::Mutex::new(None),
    })))
}

fn eval_sub(s: &SubPlan, row: &[Value], env: &Env<'_>) -> Result<Value> {
    let cached = if s.correlated {
        None
    } else {
        s.cache.lock().clone()
    };
    let data = match cached {
        Some(c) => c,
        None => {
            let mut outer: Vec<&[Value]> = Vec::with_capacity(env.outer.len() + 1);
            outer.push(row);
            outer.extend_from_slice(env.outer);
            let sub_env = Env {
                params: env.params,
                outer: &outer,
                tx: env.tx,
                info: env.info,
                cancel: env.cancel,
                instance: env.instance,
            };
            let limit = match s.kind {
                SubKind::Exists { .. } => Some(1),
                SubKind::Scalar => Some(2),
                _ => None,
            };
            let rows = query::execute_plan(&s.plan, &sub_env, limit)?;
            let mut set = HashSet::new();
            let mut has_null = false;
            if matches!(s.kind, SubKind::In { .. }) {
                for r in &rows {
                    if r[0].is_null() {
                        has_null = true;
                    } else {
                        set.insert(r[0].clone());
                    }
                }
            }
            let c = Arc::new(SubCache {
                rows,
                set,
                has_null,
            });
            if !s.correlated {
                *s.cache.lock() = Some(c.clone());
            }
            c
        }
    };
    Ok(match &s.kind {
        SubKind::Exists { negated } => Value::Bool(data.rows.is_empty() == *negated),
        SubKind::Array => {
            let items: Vec<Option<String>> = data
                .rows
                .iter()
                .map(|r| (!r[0].is_null()).then(|| r[0].to_string()))
                .collect();
            Value::text(crate::pg_catalog::array_format(
                items.iter().map(|s| s.as_deref()),
            ))
        }
        SubKind::Scalar => match data.rows.len() {
            0 => Value::Null,
            1 => data.rows[0][0].clone(),
            _ => {
                return Err(SqlError::new(
                    ErrorKind::CardinalityViolation,
                    "more than one row returned by a subquery used as an expression",
                ))
            }
        },
        SubKind::In { expr, negated } => {
            let v = expr.eval(row, env)?;
            if v.is_null() {
                Value::Null
            } else if data.set.contains(&v)
                || data
                    .set
                    .iter()
                    .any(|w| compare(&v, w).ok().flatten() == Some(Ordering::Equal))
            {
                Value::Bool(!negated)
            } else if data.has_null {
                Value::Null
            } else {
                Value::Bool(*negated)
            }
        }
        SubKind::Quantified { expr, op, all } => {
            let v = expr.eval(row, env)?;
            let mut saw_null = false;
            for r in &data.rows {
                match truth(&binary(*op, v.clone(), r[0].clone())?)? {
                    Some(true) if !all => return Ok(Value::Bool(true)),
                    Some(false) if *all => return Ok(Value::Bool(false)),
                    None => saw_null = true,
                    _ => {}
                }
            }
            if saw_null {
                Value::Null
            } else {
                Value::Bool(*all)
            }
        }
    })
}

fn overflow() -> SqlError {
    SqlError::new(ErrorKind::NumericOutOfRange, "integer out of range")
}

/// SQL truth of a value: `None` for NULL.
pub fn truth(v: &Value) -> Result<Option<bool>> {
    Ok(match v {
        Value::Null => None,
        Value::Bool(b) => Some(*b),
        Value::Int(i) => Some(*i != 0),
        Value::Text(s) => match s.to_ascii_lowercase().as_str() {
            "t" | "true" | "1" | "on" | "yes" => Some(true),
            "f" | "false" | "0" | "off" | "no" => Some(false),
            _ => {
                return Err(SqlError::new(
                    ErrorKind::InvalidText,
                    format!("invalid input syntax for type boolean: \"{s}\""),
                ))
            }
        },
        other => {
            return Err(SqlError::new(
                ErrorKind::DataException,
                format!("argument of WHERE must be type boolean, not {other}"),
            ))
        }
    })
}

/// Brings a text operand to the other operand's type (a quoted literal
/// compared with a number or a date), as PostgreSQL types unknown literals.
fn unify(a: Value, b: Value) -> Result<(Value, Value)> {
    if let Some(r) = crate::temporal::unify(&a, &b) {
        return r;
    }
    Ok(match (&a, &b) {
        (Value::Text(s), Value::Int(_) | Value::Float(_) | Value::Decimal(_)) => {
            (numeric_text(s)?, b)
        }
        (Value::Int(_) | Value::Float(_) | Value::Decimal(_), Value::Text(s)) => {
            let n = numeric_text(s)?;
            (a, n)
        }
        (Value::Text(_), Value::Timestamp(_)) => (coerce(a, &DataType::Timestamp)?, b),
        (Value::Timestamp(_), Value::Text(_)) => (a, coerce(b, &DataType::Timestamp)?),
        (Value::Text(_), Value::Date(_)) => (coerce(a, &DataType::Date)?, b),
        (Value::Date(_), Value::Text(_)) => (a, coerce(b, &DataType::Date)?),
        (Value::Text(_), Value::Jsonb(_)) => (coerce(a, &DataType::Jsonb)?, b),
        (Value::Jsonb(_), Value::Text(_)) => (a, coerce(b, &DataType::Jsonb)?),
        (Value::Text(_), Value::Uuid(_)) => (coerce(a, &DataType::Uuid)?, b),
        (Value::Uuid(_), Value::Text(_)) => (a, coerce(b, &DataType::Uuid)?),
        (Value::Text(_), Value::Bool(_)) => (Value::Bool(truth(&a)?.unwrap_or(false)), b),
        (Value::Bool(_), Value::Text(_)) => {
            let t = truth(&b)?.unwrap_or(false);
            (a, Value::Bool(t))
        }
        (Value::Date(d), Value::Timestamp(_)) => (Value::Timestamp(*d as i64 * 86_400_000_000), b),
        (Value::Timestamp(_), Value::Date(d)) => {
            let t = Value::Timestamp(*d as i64 * 86_400_000_000);
            (a, t)
        }
        _ => (a, b),
    })
}

fn numeric_text(s: &str) -> Result<Value> {
    let t = s.trim();
    if let Ok(i) = t.parse::<i64>() {
        return Ok(Value::Int(i));
    }
    if let Ok(d) = t.parse::<Decimal>() {
        return Ok(Value::Decimal(d));
    }
    t.parse::<f64>().map(Value::Float).map_err(|_| {
        SqlError::new(
            ErrorKind::InvalidText,
            format!("invalid input syntax for type numeric: \"{s}\""),
        )
    })
}

/// Compares two values; `None` if either is NULL.
pub fn compare(a: &Value, b: &Value) -> Result<Option<Ordering>> {
    if a.is_null() || b.is_null() {
        return Ok(None);
    }
    let (a, b) = unify(a.clone(), b.clone())?;
    Ok(Some(a.cmp(&b)))
}

fn to_dec(v: &Value) -> Option<Decimal> {
    match v {
        Value::Int(i) => Some(Decimal::from(*i)),
        Value::Decimal(d) => Some(*d),
        Value::Float(f) => Decimal::from_f64(*f),
        _ => None,
    }
}

fn to_f64(v: &Value) -> Option<f64> {
    match v {
        Value::Int(i) => Some(*i as f64),
        Value::Decimal(d) => d.to_f64(),
        Value::Float(f) => Some(*f),
        _ => None,
    }
}

/// Applies a binary operator (not AND/OR).
pub fn binary(op: BinOp, a: Value, b: Value) -> Result<Value> {
    use BinOp::*;
    match op {
        IsDistinct | IsNotDistinct => {
            let same = match (a.is_null(), b.is_null()) {
                (true, true) => true,
                (false, false) => compare(&a, &b)? == Some(Ordering::Equal),
                _ => false,
            };
            return Ok(Value::Bool(same == (op == IsNotDistinct)));
        }
        Eq | NotEq | Lt | LtEq | Gt | GtEq => {
            return Ok(match compare(&a, &b)? {
                None => Value::Null,
                Some(o) => Value::Bool(match op {
                    Eq => o == Ordering::Equal,
                    NotEq => o != Ordering::Equal,
                    Lt => o == Ordering::Less,
                    LtEq => o != Ordering::Greater,
                    Gt => o == Ordering::Greater,
                    _ => o != Ordering::Less,
                }),
            })
        }
        _ => {}
    }
    if a.is_null() || b.is_null() {
        return Ok(Value::Null);
    }
    if let Some(r) = jsonb_binary(op, &a, &b) {
        return r;
    }
    if op == Concat {
        return Ok(Value::text(format!("{a}{b}")));
    }
    if let Regex(ci, neg) = op {
        let re = regex::RegexBuilder::new(&b.to_string())
            .case_insensitive(ci)
            .build()
            .map_err(|e| {
                SqlError::new(
                    ErrorKind::InvalidParameter,
                    format!("invalid regular expression: {e}"),
                )
            })?;
        return Ok(Value::Bool(re.is_match(&a.to_string()) != neg));
    }
    if let Some(r) = crate::temporal::binary(op, &a, &b) {
        return r;
    }
    // `ts + '1 day'`: a quoted literal beside a date/time is an interval.
    if let (
        Value::Timestamp(_) | Value::TimestampTz(_) | Value::Date(_) | Value::Time(_),
        Value::Text(s),
    ) = (&a, &b)
    {
        if matches!(op, Add | Sub) {
            if let Some(i) = walden_engine::types::interval::parse_interval(s) {
                if let Some(r) = crate::temporal::binary(op, &a, &Value::Interval(i)) {
                    return r;
                }
            }
        }
    }
    let (a, b) = unify(a, b)?;
    let undefined = |a: &Value, b: &Value| {
        SqlError::new(
            ErrorKind::UndefinedFunction,
            format!(
                "operator does not exist: {} {:?} {}",
                type_name(a),
                op,
                type_name(b)
            ),
        )
    };
    Ok(match (&a, &b) {
        (Value::Int(x), Value::Int(y)) => Value::Int(match op {
            Add => x.checked_add(*y).ok_or_else(overflow)?,
            Sub => x.checked_sub(*y).ok_or_else(overflow)?,
            Mul => x.checked_mul(*y).ok_or_else(overflow)?,
            Div => {
                if *y == 0 {
                    return Err(SqlError::new(ErrorKind::DivisionByZero, "division by zero"));
                }
                x.checked_div(*y).ok_or_else(overflow)?
            }
            Mod => {
                if *y == 0 {
                    return Err(SqlError::new(ErrorKind::DivisionByZero, "division by zero"));
                }
                x.checked_rem(*y).ok_or_else(overflow)?
            }
            _ => return Err(undefined(&a, &b)),
        }),
        (Value::Float(_), _) | (_, Value::Float(_)) => {
            let (x, y) = (
                to_f64(&a).ok_or_else(|| undefined(&a, &b))?,
                to_f64(&b).ok_or_else(|| undefined(&a, &b))?,
            );
            Value::Float(match op {
                Add => x + y,
                Sub => x - y,
                Mul => x * y,
                Div => {
                    if y == 0.0 {
                        return Err(SqlError::new(ErrorKind::DivisionByZero, "division by zero"));
                    }
                    x / y
                }
                Mod => x % y,
                _ => return Err(undefined(&a, &b)),
            })
        }
        (Value::Decimal(_), _) | (_, Value::Decimal(_)) => {
            let (x, y) = (
                to_dec(&a).ok_or_else(|| undefined(&a, &b))?,
                to_dec(&b).ok_or_else(|| undefined(&a, &b))?,
            );
            let r = match op {
                Add => x.checked_add(y),
                Sub => x.checked_sub(y),
                Mul => x.checked_mul(y),
                Div => {
                    if y.is_zero() {
                        return Err(SqlError::new(ErrorKind::DivisionByZero, "division by zero"));
                    }
                    x.checked_div(y)
                }
                Mod => {
                    if y.is_zero() {
                        return Err(SqlError::new(ErrorKind::DivisionByZero, "division by zero"));
                    }
                    x.checked_rem(y)
                }
                _ => return Err(undefined(&a, &b)),
            };
            Value::Decimal(r.ok_or_else(|| {
                SqlError::new(ErrorKind::NumericOutOfRange, "numeric value out of range")
            })?)
        }
        (Value::Timestamp(t), Value::Int(d)) if matches!(op, Add | Sub) => {
            // timestamp +/- integer days (T-SQL datetime arithmetic).
            let delta = d * 86_400_000_000;
            Value::Timestamp(if op == Add { t + delta } else { t - delta })
        }
        (Value::Date(t), Value::Int(d)) if matches!(op, Add | Sub) => Value::Date(if op == Add {
            t + *d as i32
        } else {
            t - *d as i32
        }),
        (Value::Date(x), Value::Date(y)) if op == Sub => Value::Int((*x - *y) as i64),
        (Value::Text(_), _) | (_, Value::Text(_)) if op == Add => Value::text(format!("{a}{b}")),
        _ => return Err(undefined(&a, &b)),
    })
}

/// `jsonb || jsonb` and `jsonb - key`; `None` when neither operand is jsonb.
fn jsonb_binary(op: BinOp, a: &Value, b: &Value) -> Option<Result<Value>> {
    let tree = |v: &Value| {
        crate::jsonfn::tree(v).map(|t| {
            t.map(|x| (*x).clone())
                .unwrap_or(walden_engine::types::Jsonb::Null)
        })
    };
    match (op, a, b) {
        (BinOp::Concat, Value::Jsonb(_), _) | (BinOp::Concat, _, Value::Jsonb(_)) => Some((|| {
            Ok(Value::Jsonb(Arc::new(crate::jsonfn::concat(
                &tree(a)?,
                &tree(b)?,
            ))))
        })(
        )),
        (BinOp::Sub, Value::Jsonb(j), k) => {
            Some(crate::jsonfn::delete(j, k).map(|r| Value::Jsonb(Arc::new(r))))
        }
        _ => None,
    }
}

pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "unknown",
        Value::Bool(_) => "boolean",
        Value::Int(_) => "integer",
        Value::Float(_) => "double precision",
        Value::Decimal(_) => "numeric",
        Value::Text(_) => "text",
        Value::Timestamp(_) => "timestamp",
        Value::Date(_) => "date",
        Value::Uuid(_) => "uuid",
        Value::Bytes(_) => "bytea",
        Value::TimestampTz(_) => "timestamp with time zone",
        Value::Time(_) => "time without time zone",
        Value::Interval(_) => "interval",
        Value::Json(_) => "json",
        Value::Jsonb(_) => "jsonb",
    }
}

/// `CAST(v AS t)`: like assignment coercion, but text output for any input.
pub fn cast(v: Value, t: &DataType) -> Result<Value> {
    if v.is_null() {
        return Ok(Value::Null);
    }
    let v = match (&v, t) {
        (Value::Float(f), DataType::Int | DataType::BigInt | DataType::SmallInt) => {
            Value::Float(f.round())
        }
        _ => v,
    };
    coerce(v, t).map_err(SqlError::from)
}

/// SQL LIKE with `%` and `_` (backslash escapes the next character).
///
/// Iterative, with one backtrack point (the last `%`): linear stack and
/// O(len(s) * len(p)) time whatever the pattern. A recursive matcher was
/// exponential in the number of `%` and recursed once per character, so a
/// long string could overflow the stack.
pub fn like(s: &str, p: &str) -> bool {
    #[derive(Clone, Copy, PartialEq)]
    enum Pat {
        Any,
        One,
        Lit(char),
    }
    let s: Vec<char> = s.chars().collect();
    let mut pat = Vec::new();
    let mut it = p.chars().peekable();
    while let Some(c) = it.next() {
        pat.push(match c {
            '%' => Pat::Any,
            '_' => Pat::One,
            '\\' => Pat::Lit(it.next().unwrap_or('\\')),
            c => Pat::Lit(c),
        });
    }
    let (mut si, mut pi) = (0usize, 0usize);
    // Where the last `%` was, and the string position it matched up to.
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        match pat.get(pi) {
            Some(Pat::Any) => {
                star = Some((pi, si));
                pi += 1;
            }
            Some(Pat::One) => {
                si += 1;
                pi += 1;
            }
            Some(Pat::Lit(c)) if *c == s[si] => {
                si += 1;
                pi += 1;
            }
            _ => match star {
                // Let the last `%` swallow one more character and retry.
                Some((sp, ss)) => {
                    star = Some((sp, ss + 1));
                    pi = sp + 1;
                    si = ss + 1;
                }
                None => return false,
            },
        }
    }
    pat[pi..].iter().all(|x| *x == Pat::Any)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_matches() {
        assert!(like("walden", "wal%"));
        assert!(like("walden", "%d_n"));
        assert!(!like("walden", "x%"));
        assert!(like("50%", "50\\%"));
        assert!(like("", "%%"));
        assert!(!like("", "_"));
        assert!(like("abcabd", "%ab_"));
        assert!(like("a_c", "a\\_c"));
        assert!(!like("abc", "a\\_c"));
        // Many `%` against a long near-miss: was exponential, must be quick.
        let s = "a".repeat(5_000);
        assert!(!like(&s, &format!("{}b", "%a".repeat(30))));
        assert!(like(&s, &format!("{}%", "%a".repeat(30))));
        // One frame per character was a stack overflow for long strings.
        let long = "x".repeat(2_000_000);
        assert!(like(&long, &"_".repeat(2_000_000)));
    }

    #[test]
    fn arithmetic_and_nulls() {
        assert_eq!(
            binary(BinOp::Add, Value::Int(2), Value::Int(3)).unwrap(),
            Value::Int(5)
        );
        assert_eq!(
            binary(BinOp::Div, Value::Int(7), Value::Int(2)).unwrap(),
            Value::Int(3)
        );
        assert!(binary(BinOp::Div, Value::Int(1), Value::Int(0)).is_err());
        assert!(binary(BinOp::Add, Value::Int(i64::MAX), Value::Int(1)).is_err());
        assert_eq!(
            binary(BinOp::Eq, Value::Null, Value::Int(1)).unwrap(),
            Value::Null
        );
        assert_eq!(
            binary(BinOp::Eq, Value::text("5"), Value::Int(5)).unwrap(),
            Value::Bool(true)
        );
    }
}
