//! Window functions: `f(...) OVER (PARTITION BY ... ORDER BY ... frame)`,
//! named windows (`WINDOW w AS (...)`, `OVER w`, `OVER (w ORDER BY ...)`).
//!
//! Planning is here: each call in the select list or ORDER BY becomes a
//! `WinCall` whose value is a column appended to the row after grouping and
//! HAVING. Calls with the same PARTITION BY and ORDER BY share one sort.
//! Frames are in `frame.rs`, evaluation in `eval.rs`, and the text rewrite
//! that carries `EXCLUDE ...` past sqlparser (which does not parse it) in
//! `front/window_exclude.rs`.

use super::*;
use crate::front::{arg_expr, args_of, fname};

mod eval;
mod frame;
use crate::front::window_exclude::take_marker;
pub use crate::front::window_exclude::Exclude;
pub use eval::run_windows;

/// Column numbers of window results while the select list is compiled: the
/// width of the row below them is known only once every aggregate is found,
/// so they are placed (`place`) afterwards.
const WIN_MARK: usize = usize::MAX / 2;

/// Whether a window function call may be compiled where the planner is.
pub enum WindowSlot {
    /// Not here; the words finish "window functions are not allowed ...".
    Refused(&'static str),
    /// Not in this statement (0A000), with this message.
    Unsupported(&'static str),
    /// Inside a window function's arguments or window definition.
    Nested,
    /// Inside an aggregate's arguments.
    InAggregate,
    /// In a select list or ORDER BY: calls are collected here.
    Open(Box<WinCtx>),
}

impl WindowSlot {
    fn refusal(&self) -> SqlError {
        match self {
            WindowSlot::Refused(r) => SqlError::new(
                ErrorKind::WindowingError,
                format!("window functions are not allowed {r}"),
            ),
            WindowSlot::Unsupported(m) => SqlError::new(ErrorKind::FeatureNotSupported, *m),
            WindowSlot::Nested => SqlError::new(
                ErrorKind::WindowingError,
                "window function calls cannot be nested",
            ),
            _ => SqlError::new(
                ErrorKind::GroupingError,
                "aggregate function calls cannot contain window function calls",
            ),
        }
    }
}

/// The calls found so far in one SELECT, and its WINDOW clause.
#[derive(Default)]
pub struct WinCtx {
    named: Vec<(String, ast::NamedWindowExpr)>,
    sort_keys: Vec<String>,
    sorts: Vec<WinSort>,
    calls: Vec<WinCall>,
}

impl WinCtx {
    pub fn new(named: &[ast::NamedWindowDefinition]) -> Result<WinCtx> {
        let mut out: Vec<(String, ast::NamedWindowExpr)> = Vec::new();
        for ast::NamedWindowDefinition(name, expr) in named {
            let n = name.value.to_ascii_lowercase();
            if out.iter().any(|(m, _)| *m == n) {
                return Err(SqlError::new(
                    ErrorKind::WindowingError,
                    format!("window \"{n}\" is already defined"),
                ));
            }
            out.push((n, expr.clone()));
        }
        Ok(WinCtx {
            named: out,
            ..Default::default()
        })
    }
}

/// The window calls of one SELECT.
#[derive(Debug)]
pub struct WindowPlan {
    pub sorts: Vec<WinSort>,
    pub calls: Vec<WinCall>,
}

impl WindowPlan {
    pub fn exprs(&self) -> impl Iterator<Item = &Expr> {
        self.sorts
            .iter()
            .flat_map(|s| s.partition.iter().chain(s.order.iter().map(|o| &o.0)))
            .chain(self.calls.iter().flat_map(|c| {
                c.args
                    .iter()
                    .chain(c.filter.iter())
                    .chain(c.frame.start.offset())
                    .chain(c.frame.end.offset())
            }))
    }
}

/// A PARTITION BY and ORDER BY, sorted for once however many calls use it.
#[derive(Debug)]
pub struct WinSort {
    pub partition: Vec<Expr>,
    /// (key, descending, nulls first)
    pub order: Vec<(Expr, bool, bool)>,
}

#[derive(Debug)]
pub struct WinCall {
    pub sort: usize,
    pub func: WinFunc,
    /// Arguments; for an aggregate: its argument, then the second one
    /// (string_agg's delimiter, json_object_agg's value) if it has one.
    pub args: Vec<Expr>,
    pub filter: Option<Expr>,
    pub frame: Frame,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WinFunc {
    RowNumber,
    Rank,
    DenseRank,
    PercentRank,
    CumeDist,
    Ntile,
    Lag,
    Lead,
    FirstValue,
    LastValue,
    NthValue,
    Agg(AggKind),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Units {
    Rows,
    Range,
    Groups,
}

#[derive(Debug)]
pub enum Bound {
    UnboundedPreceding,
    Preceding(Expr),
    CurrentRow,
    Following(Expr),
    UnboundedFollowing,
}

impl Bound {
    fn offset(&self) -> Option<&Expr> {
        match self {
            Bound::Preceding(e) | Bound::Following(e) => Some(e),
            _ => None,
        }
    }
}

#[derive(Debug)]
pub struct Frame {
    pub units: Units,
    pub start: Bound,
    pub end: Bound,
    pub exclude: Exclude,
}

/// A window definition with named references resolved.
struct Spec {
    partition: Vec<ast::Expr>,
    order: Vec<ast::OrderByExpr>,
    frame: Option<ast::WindowFrame>,
    exclude: Exclude,
}

fn resolve_name(named: &[(String, ast::NamedWindowExpr)], id: &ast::Ident) -> Result<Spec> {
    let n = id.value.to_ascii_lowercase();
    // A window may refer only to those defined before it, so the search
    // for `w`'s own definition is limited to the ones ahead of it.
    let at = named.iter().position(|(m, _)| *m == n).ok_or_else(|| {
        SqlError::new(
            ErrorKind::UndefinedObject,
            format!("window \"{n}\" does not exist"),
        )
    })?;
    match &named[at].1 {
        ast::NamedWindowExpr::NamedWindow(other) => resolve_name(&named[..at], other),
        ast::NamedWindowExpr::WindowSpec(s) => resolve_spec(&named[..at], s),
    }
}

fn resolve_spec(named: &[(String, ast::NamedWindowExpr)], s: &ast::WindowSpec) -> Result<Spec> {
    let (exclude, partition) = take_marker(&s.partition_by);
    let Some(base_name) = &s.window_name else {
        return Ok(Spec {
            partition,
            order: s.order_by.clone(),
            frame: s.window_frame.clone(),
            exclude,
        });
    };
    let base = resolve_name(named, base_name)?;
    let n = base_name.value.to_ascii_lowercase();
    let refuse = |m: String| Err(SqlError::new(ErrorKind::WindowingError, m));
    if !partition.is_empty() {
        return refuse(format!(
            "cannot override PARTITION BY clause of window \"{n}\""
        ));
    }
    if !s.order_by.is_empty() && !base.order.is_empty() {
        return refuse(format!("cannot override ORDER BY clause of window \"{n}\""));
    }
    if base.frame.is_some() || base.exclude != Exclude::NoOthers {
        return refuse(format!(
            "cannot copy window \"{n}\" because it has a frame clause"
        ));
    }
    Ok(Spec {
        partition: base.partition,
        order: if s.order_by.is_empty() {
            base.order
        } else {
            s.order_by.clone()
        },
        frame: s.window_frame.clone(),
        exclude,
    })
}

/// Compiles a call with OVER into a reference to its (later) value.
pub fn compile_call(p: &mut Planner<'_>, scope: &Arc<Scope>, f: &ast::Function) -> Result<Expr> {
    let mut ctx = match std::mem::replace(&mut p.window, WindowSlot::Nested) {
        WindowSlot::Open(c) => c,
        other => {
            let err = other.refusal();
            p.window = other;
            return Err(err);
        }
    };
    let r = compile_in(p, scope, f, &mut ctx);
    p.window = WindowSlot::Open(ctx);
    r.map(|slot| Expr::Col(WIN_MARK + slot))
}

fn compile_in(
    p: &mut Planner<'_>,
    scope: &Arc<Scope>,
    f: &ast::Function,
    ctx: &mut WinCtx,
) -> Result<usize> {
    crate::functions::refuse_empty_count(f)?;
    let name = fname(f);
    let spec = match f.over.as_ref() {
        Some(ast::WindowType::NamedWindow(id)) => resolve_name(&ctx.named, id)?,
        Some(ast::WindowType::WindowSpec(s)) => resolve_spec(&ctx.named, s)?,
        None => return Err(SqlError::internal("a window call without OVER")),
    };
    if f.null_treatment.is_some() {
        return Err(SqlError::unsupported(format!(
            "IGNORE NULLS / RESPECT NULLS in {name}()"
        )));
    }
    if !f.within_group.is_empty() {
        return Err(SqlError::unsupported(format!(
            "{name}() WITHIN GROUP (...) OVER"
        )));
    }
    if let ast::FunctionArguments::List(l) = &f.args {
        if matches!(
            l.duplicate_treatment,
            Some(ast::DuplicateTreatment::Distinct)
        ) {
            return Err(SqlError::new(
                ErrorKind::FeatureNotSupported,
                "DISTINCT is not implemented for window functions",
            ));
        }
        if !l.clauses.is_empty() {
            return Err(SqlError::new(
                ErrorKind::FeatureNotSupported,
                "aggregate ORDER BY is not implemented for window functions",
            ));
        }
    }
    let mut bare = f.clone();
    bare.over = None;
    let arity = args_of(f).len();
    let (func, arity_ok) = match name.as_str() {
        "row_number" => (WinFunc::RowNumber, arity == 0),
        "rank" => (WinFunc::Rank, arity == 0),
        "dense_rank" => (WinFunc::DenseRank, arity == 0),
        "percent_rank" => (WinFunc::PercentRank, arity == 0),
        "cume_dist" => (WinFunc::CumeDist, arity == 0),
        "ntile" => (WinFunc::Ntile, arity == 1),
        "lag" => (WinFunc::Lag, (1..=3).contains(&arity)),
        "lead" => (WinFunc::Lead, (1..=3).contains(&arity)),
        "first_value" => (WinFunc::FirstValue, arity == 1),
        "last_value" => (WinFunc::LastValue, arity == 1),
        "nth_value" => (WinFunc::NthValue, arity == 2),
        _ => match functions::aggregate_kind(&bare) {
            Some(kind) => (WinFunc::Agg(kind), true),
            None => {
                return Err(SqlError::new(
                    ErrorKind::WrongObjectType,
                    format!(
                    "OVER specified, but {name} is not a window function nor an aggregate function"
                ),
                ))
            }
        },
    };
    if !arity_ok {
        return Err(SqlError::new(
            ErrorKind::UndefinedFunction,
            format!("function {name} with {arity} arguments does not exist"),
        ));
    }
    let (args, filter) = match func {
        WinFunc::Agg(kind) => {
            let a = crate::expr::compile_aggregate(p, scope, &bare, kind)?;
            (a.arg.into_iter().chain(a.separator).collect(), a.filter)
        }
        _ => {
            if f.filter.is_some() {
                return Err(SqlError::new(
                    ErrorKind::FeatureNotSupported,
                    "FILTER is not implemented for non-aggregate window functions",
                ));
            }
            let mut args = Vec::new();
            for a in args_of(f) {
                let e = arg_expr(a)
                    .ok_or_else(|| SqlError::syntax(format!("unsupported argument to {name}")))?;
                args.push(Expr::compile(p, scope, e)?);
            }
            (args, None)
        }
    };
    let mut frame = compile_frame(p, scope, &spec)?;
    let key = format!(
        "{}\u{0}{}",
        spec.partition
            .iter()
            .map(|e| e.to_string())
            .collect::<Vec<_>>()
            .join("\u{1}"),
        spec.order
            .iter()
            .map(|e| e.to_string())
            .collect::<Vec<_>>()
            .join("\u{1}")
    );
    let sort = match ctx.sort_keys.iter().position(|k| *k == key) {
        Some(i) => i,
        None => {
            let mut partition = Vec::new();
            for e in &spec.partition {
                partition.push(Expr::compile(p, scope, e)?);
            }
            let mut order = Vec::new();
            for it in &spec.order {
                let desc = crate::expr::sort_desc(&it.options)?;
                let nulls_first = it.options.nulls_first.unwrap_or(desc);
                order.push((Expr::compile(p, scope, &it.expr)?, desc, nulls_first));
            }
            ctx.sort_keys.push(key);
            ctx.sorts.push(WinSort { partition, order });
            ctx.sorts.len() - 1
        }
    };
    if frame.units == Units::Range && p.agg.is_none() {
        // (Over grouped rows the key's type is known only later.)
        let types: Vec<DataType> = scope.cols.iter().map(|c| c.ty.clone()).collect();
        if let Some((key, _, _)) = ctx.sorts[sort].order.first() {
            let key = static_type(key, &types, &p.params);
            check_range_offset(&frame, key.clone(), &p.params)?;
            type_quoted_offsets(&mut frame, key);
        }
    }
    ctx.calls.push(WinCall {
        sort,
        func,
        args,
        filter,
        frame,
    });
    Ok(ctx.calls.len() - 1)
}

fn compile_frame(p: &mut Planner<'_>, scope: &Arc<Scope>, spec: &Spec) -> Result<Frame> {
    let err = |m: &str| Err(SqlError::new(ErrorKind::WindowingError, m.to_string()));
    let Some(f) = &spec.frame else {
        // RANGE UNBOUNDED PRECEDING to CURRENT ROW: with no ORDER BY every
        // row is a peer, so this is the whole partition.
        return Ok(Frame {
            units: Units::Range,
            start: Bound::UnboundedPreceding,
            end: Bound::CurrentRow,
            exclude: spec.exclude,
        });
    };
    let units = match f.units {
        ast::WindowFrameUnits::Rows => Units::Rows,
        ast::WindowFrameUnits::Range => Units::Range,
        ast::WindowFrameUnits::Groups => Units::Groups,
    };
    let end_ast = f
        .end_bound
        .clone()
        .unwrap_or(ast::WindowFrameBound::CurrentRow);
    use ast::WindowFrameBound as B;
    match (&f.start_bound, &end_ast) {
        (B::Following(None), _) => return err("frame start cannot be UNBOUNDED FOLLOWING"),
        (_, B::Preceding(None)) => return err("frame end cannot be UNBOUNDED PRECEDING"),
        (B::CurrentRow, B::Preceding(Some(_))) => {
            return err("frame starting from current row cannot have preceding rows")
        }
        (B::Following(Some(_)), B::Preceding(Some(_)) | B::CurrentRow) => {
            return err("frame starting from following row cannot have preceding rows")
        }
        _ => {}
    }
    let has_offset = |b: &B| matches!(b, B::Preceding(Some(_)) | B::Following(Some(_)));
    if units == Units::Range
        && (has_offset(&f.start_bound) || has_offset(&end_ast))
        && spec.order.len() != 1
    {
        return err("RANGE with offset PRECEDING/FOLLOWING requires exactly one ORDER BY column");
    }
    if units == Units::Groups && spec.order.is_empty() {
        return err("GROUPS mode requires an ORDER BY clause");
    }
    // Offsets are constants of the query: no columns of the row.
    let empty = Arc::new(Scope {
        cols: vec![],
        parent: scope.parent.clone(),
        reach: None,
    });
    let saved = p.agg.take();
    let mut bound = |b: &B| -> Result<Bound> {
        Ok(match b {
            B::Preceding(None) => Bound::UnboundedPreceding,
            B::Following(None) => Bound::UnboundedFollowing,
            B::CurrentRow => Bound::CurrentRow,
            B::Preceding(Some(e)) => Bound::Preceding(Expr::compile(p, &empty, e)?),
            B::Following(Some(e)) => Bound::Following(Expr::compile(p, &empty, e)?),
        })
    };
    let r = bound(&f.start_bound).and_then(|s| Ok((s, bound(&end_ast)?)));
    p.agg = saved;
    let (start, end) = r?;
    Ok(Frame {
        units,
        start,
        end,
        exclude: spec.exclude,
    })
}

/// A quoted RANGE offset (`'inf' PRECEDING`, `'1 day' FOLLOWING`) takes
/// the type PostgreSQL gives it: the ORDER BY column's for a number, an
/// interval for a date or time.
fn type_quoted_offsets(frame: &mut Frame, key: Option<DataType>) {
    use DataType as T;
    let target = match key {
        Some(k @ (T::SmallInt | T::Int | T::BigInt | T::Real | T::Double | T::Decimal { .. })) => k,
        Some(T::Date | T::Timestamp | T::TimestampTz | T::Time) => T::Interval,
        _ => return,
    };
    for b in [&mut frame.start, &mut frame.end] {
        if let Bound::Preceding(e) | Bound::Following(e) = b {
            if matches!(e, Expr::Lit(Value::Text(_))) {
                let lit = std::mem::replace(e, Expr::Lit(Value::Null));
                *e = Expr::Cast(Box::new(lit), target.clone());
            }
        }
    }
}

/// RANGE offsets exist for numbers (a number) and dates and times (an
/// interval), as PostgreSQL's in_range functions.
fn check_range_offset(
    frame: &Frame,
    key: Option<DataType>,
    params: &[Option<DataType>],
) -> Result<()> {
    use DataType as T;
    let Some(key) = key else { return Ok(()) };
    let name = |t: &DataType| crate::types::regtype_name(crate::types::type_oid_and_mod(t).0);
    for off in [frame.start.offset(), frame.end.offset()]
        .into_iter()
        .flatten()
    {
        let numeric = |t: &DataType| {
            matches!(
                t,
                T::SmallInt | T::Int | T::BigInt | T::Real | T::Double | T::Decimal { .. }
            )
        };
        let fits = |o: &DataType| match key {
            ref k if numeric(k) => numeric(o),
            T::Date | T::Timestamp | T::TimestampTz | T::Time => matches!(o, T::Interval),
            _ => false,
        };
        if !numeric(&key) && !matches!(key, T::Date | T::Timestamp | T::TimestampTz | T::Time) {
            return Err(SqlError::new(
                ErrorKind::FeatureNotSupported,
                format!(
                    "RANGE with offset PRECEDING/FOLLOWING is not supported for column type {}",
                    name(&key)
                ),
            ));
        }
        // A quoted literal or a parameter takes the type it needs.
        match static_type(off, &[], params) {
            Some(T::Text) | None => {}
            Some(o) if fits(&o) => {}
            Some(o) => {
                return Err(SqlError::new(
                    ErrorKind::FeatureNotSupported,
                    format!(
                        "RANGE with offset PRECEDING/FOLLOWING is not supported for column type {} and offset type {}",
                        name(&key),
                        name(&o)
                    ),
                ))
            }
        }
    }
    Ok(())
}

/// Gives window results their place after the `base` columns of the row.
pub fn place(e: &mut Expr, base: usize) {
    if let Expr::Col(i) = e {
        if *i >= WIN_MARK {
            *i = base + (*i - WIN_MARK);
        }
    }
    for c in e.children_mut() {
        place(c, base);
    }
}

/// The calls' result types, over a row of `types`.
pub fn result_types(
    calls: &[WinCall],
    types: &[DataType],
    params: &[Option<DataType>],
) -> Vec<DataType> {
    calls
        .iter()
        .map(|c| {
            let arg = c.args.first().and_then(|a| static_type(a, types, params));
            match c.func {
                WinFunc::RowNumber | WinFunc::Rank | WinFunc::DenseRank => DataType::BigInt,
                WinFunc::Ntile => DataType::Int,
                WinFunc::PercentRank | WinFunc::CumeDist => DataType::Double,
                WinFunc::Lag
                | WinFunc::Lead
                | WinFunc::FirstValue
                | WinFunc::LastValue
                | WinFunc::NthValue => arg
                    .or_else(|| c.args.get(2).and_then(|a| static_type(a, types, params)))
                    .unwrap_or(DataType::Text),
                WinFunc::Agg(kind) => functions::aggregate_type(kind, arg.as_ref()),
            }
        })
        .collect()
}

/// Takes the calls collected for a SELECT (none: `None`).
pub fn finish(ctx: WinCtx) -> Option<WindowPlan> {
    (!ctx.calls.is_empty()).then_some(WindowPlan {
        sorts: ctx.sorts,
        calls: ctx.calls,
    })
}
