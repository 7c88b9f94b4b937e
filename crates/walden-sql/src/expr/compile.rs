//! Compiling SQL expressions into `Expr` trees: names resolved in a scope,
//! literals typed, casts, subqueries planned.

use super::*;
use crate::functions::bitwise::BitOp;
use crate::types::names::parse_type_name;

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
                if f.over.is_none() && crate::front::fname(f) == "grouping" {
                    return crate::query::grouping_call(p, f);
                }
                if let Some(kind) = functions::aggregate_kind(f) {
                    let mut ctx = p.agg.take().unwrap();
                    let win =
                        std::mem::replace(&mut p.window, query::window::WindowSlot::InAggregate);
                    let srf = std::mem::replace(&mut p.srf, SrfSlot::Refused("aggregate"));
                    let compiled = super::compile_aggregate(p, &ctx.input_scope, f, kind);
                    p.window = win;
                    p.srf = srf;
                    let slot = ctx.aggs.len();
                    // (A window aggregate is not moved out: only here.)
                    let compiled = compiled.and_then(|spec| {
                        if super::aggregate_call::outer_level(&spec) {
                            return Err(SqlError::unsupported(format!(
                                "{}() over only an enclosing query's columns (an outer-level aggregate)",
                                crate::front::fname(f)
                            )));
                        }
                        Ok(spec)
                    });
                    match compiled {
                        Ok(spec) => ctx.aggs.push(spec),
                        Err(err) => {
                            p.agg = Some(ctx);
                            return Err(err);
                        }
                    }
                    let keys = ctx.group_keys.len();
                    p.agg = Some(ctx);
                    if let functions::AggKind::Ordered(_) = kind {
                        super::ordered_direct_args(p, scope, f, slot)?;
                    }
                    return Ok(Expr::Col(keys + slot));
                }
            }
            if let ast::Expr::Identifier(_) | ast::Expr::CompoundIdentifier(_) = e {
                // A column of the input that is not grouped (unless it is an
                // outer reference, which is constant per group).
                let input = agg.input_scope.clone();
                let (t, n) = ident_parts(e);
                if let Ok((0, i)) = input.resolve(t.as_deref(), &n) {
                    if let Some(k) = agg.dependent_key(i) {
                        return Ok(Expr::Col(k));
                    }
                    // Named as PostgreSQL names it: qualified by its table.
                    let c = &input.cols[i];
                    let shown = match &c.table {
                        Some(t) => format!("{t}.{}", c.name),
                        None => c.name.clone(),
                    };
                    return Err(SqlError::new(
                        ErrorKind::GroupingError,
                        format!("column \"{shown}\" must appear in the GROUP BY clause or be used in an aggregate function"),
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
                match col_ref(scope, None, &id.value) {
                    Ok(e) => e,
                    // A FROM item's name alone is its whole row, as a record.
                    Err(err) if err.kind == ErrorKind::UndefinedColumn => {
                        record::whole_row(scope, &fold_ident(id)).ok_or(err)?
                    }
                    Err(err) => return Err(err),
                }
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
                    // The wire carries at most 65,535 parameters; a larger
                    // number is refused before it sizes the parameter list.
                    if n > u16::MAX as usize {
                        return Err(SqlError::new(
                            ErrorKind::InvalidParameter,
                            format!("there is no parameter ${n}"),
                        ));
                    }
                    p.note_param(n - 1);
                    Expr::Param(n - 1)
                }
                other => Expr::Lit(lit_value(other)?),
            },
            A::TypedString(ts) => {
                let t = crate::types::names::data_type_in(&p.db, p.viewer, &ts.data_type)?;
                let v = lit_value(&ts.value.value)?;
                // An enum constant keeps its cast, which types it.
                if t == DataType::TimestampTz || crate::types::names::is_enum(&t) {
                    // Read in the zone in force when it runs, not when planned.
                    coerce(v.clone(), &t)?;
                    Expr::Cast(Box::new(Expr::Lit(v)), t)
                } else if matches!(t, DataType::Varchar(_) | DataType::Char(_)) {
                    // Kept under its cast, which types it (a bare string
                    // literal would read as unknown).
                    Expr::Cast(
                        Box::new(Expr::Lit(crate::functions::explicit_cast(v, &t)?)),
                        t,
                    )
                } else {
                    Expr::Lit(crate::functions::explicit_cast(v, &t)?)
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
                        other => narrow_int_result(p, scope, Expr::Neg(Box::new(other))),
                    },
                    UnaryOperator::Plus => inner,
                    UnaryOperator::BitwiseNot => {
                        super::bitwise::compile(p, scope, BitOp::Not, None, inner)?
                    }
                    // `|/ x` and `||/ x` are of double precision only; `@ x` is abs.
                    UnaryOperator::PGSquareRoot => {
                        Expr::Func(Func::FloatFn(crate::functions::FloatFn::Sqrt), vec![inner])
                    }
                    UnaryOperator::PGCubeRoot => {
                        Expr::Func(Func::FloatFn(crate::functions::FloatFn::Cbrt), vec![inner])
                    }
                    UnaryOperator::PGAbs => Expr::Func(Func::Abs, vec![inner]),
                    other => return Err(SqlError::unsupported(format!("operator {other}"))),
                }
            }
            A::BinaryOp { left, op, right } => {
                if let Some(e) = super::bitwise::bitwise_binary(p, scope, left, op, right)? {
                    return Ok(e);
                }
                if let Some(e) = super::array_ops::compile_operator(p, scope, left, op, right)? {
                    return Ok(e);
                }
                if let Some(j) = crate::functions::json::operator(op) {
                    let l = Expr::compile(p, scope, left)?;
                    let r = Expr::compile(p, scope, right)?;
                    return Ok(Expr::Func(Func::Json(j), vec![l, r]));
                }
                if let ast::BinaryOperator::PGExp = op {
                    return power_operator(p, scope, left, right);
                }
                if let Some(rows) = super::row_compare::rewrite(left, op, right)? {
                    return Expr::compile(p, scope, &rows);
                }
                let op = bin_op(op)?;
                let l = Expr::compile(p, scope, left)?;
                let r = Expr::compile(p, scope, right)?;
                if matches!(
                    op,
                    BinOp::Eq | BinOp::NotEq | BinOp::Lt | BinOp::LtEq | BinOp::Gt | BinOp::GtEq
                ) {
                    record::refuse_comparison(scope, &[&l, &r])?;
                }
                let (l, r) = if matches!(
                    op,
                    BinOp::Eq | BinOp::NotEq | BinOp::Lt | BinOp::LtEq | BinOp::Gt | BinOp::GtEq
                ) {
                    super::compare_types::reconcile(p, scope, l, r, op)?
                } else {
                    (l, r)
                };
                let (l, r) = super::array_ops::coerce_operands(p, scope, l, r)?;
                // Compared with an enum, a literal or parameter is a label
                // (`||` and the rest read it as text).
                let (l, r) = if matches!(
                    op,
                    BinOp::Eq | BinOp::NotEq | BinOp::Lt | BinOp::LtEq | BinOp::Gt | BinOp::GtEq
                ) {
                    let l = crate::expr::enum_ops::beside(p, scope, &r, l)?;
                    let r = crate::expr::enum_ops::beside(p, scope, &l, r)?;
                    (l, r)
                } else {
                    (l, r)
                };
                if op != BinOp::Concat {
                    p.infer_pair(&l, &r, scope);
                }
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
                let (l, r) = if op == BinOp::Concat {
                    concat_operands(p, scope, l, r)?
                } else {
                    (l, r)
                };
                let e = Expr::Bin(op, Box::new(l), Box::new(r));
                if matches!(
                    op,
                    BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Mod
                ) {
                    narrow_int_result(p, scope, e)
                } else {
                    e
                }
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
                if let Some(rows) = super::row_compare::rewrite_in(expr, list, *negated)? {
                    return Expr::compile(p, scope, &rows);
                }
                let x = Expr::compile(p, scope, expr)?;
                record::refuse_comparison(scope, &[&x])?;
                let items = list
                    .iter()
                    .map(|i| {
                        let c = Expr::compile(p, scope, i)?;
                        super::compare_types::check(p, scope, &x, &c, BinOp::Eq)?;
                        p.infer_pair(&x, &c, scope);
                        crate::expr::enum_ops::beside(p, scope, &x, c)
                    })
                    .collect::<Result<Vec<_>>>()?;
                let x = in_list_unknown(p, scope, x, &items)?;
                Expr::InList(Box::new(x), items, *negated)
            }
            A::Between {
                expr,
                negated,
                low,
                high,
            } => {
                let x = Expr::compile(p, scope, expr)?;
                let lo = Expr::compile(p, scope, low)?;
                let hi = Expr::compile(p, scope, high)?;
                let lo = crate::expr::enum_ops::beside(p, scope, &x, lo)?;
                let hi = crate::expr::enum_ops::beside(p, scope, &x, hi)?;
                Expr::Between(Box::new(x), Box::new(lo), Box::new(hi), *negated)
            }
            A::Like {
                negated,
                expr,
                pattern,
                escape_char,
                any,
            } => {
                let pattern = quantified(*any, pattern)?;
                like(
                    p,
                    scope,
                    expr,
                    &pattern,
                    escape_char.as_deref(),
                    *negated,
                    false,
                )?
            }
            A::ILike {
                negated,
                expr,
                pattern,
                escape_char,
                any,
            } => {
                let pattern = quantified(*any, pattern)?;
                like(
                    p,
                    scope,
                    expr,
                    &pattern,
                    escape_char.as_deref(),
                    *negated,
                    true,
                )?
            }
            A::Case { .. } if matches!(p.srf, SrfSlot::Open(_)) => {
                let srf = std::mem::replace(&mut p.srf, SrfSlot::Refused("CASE"));
                let r = Expr::compile(p, scope, e);
                p.srf = srf;
                r?
            }
            A::Case {
                operand,
                conditions,
                else_result,
                ..
            } => {
                let mut e = Expr::Case(
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
                );
                if let Expr::Case(_, whens, els) = &mut e {
                    let mut results: Vec<&mut Expr> = els.as_deref_mut().into_iter().collect();
                    results.extend(whens.iter_mut().map(|(_, r)| r));
                    resolve_common(p, scope, results, "CASE")?;
                }
                e
            }
            A::Cast {
                expr, data_type, ..
            } => {
                if let Some(e) = catalog_cast(p, scope, expr, data_type)? {
                    return Ok(e);
                }
                // `::interval DAY TO SECOND(3)`: cut and rounded as it runs.
                if let ast::DataType::Interval {
                    fields: Some(fields),
                    precision,
                } = data_type
                {
                    let inner = Expr::compile(p, scope, expr)?;
                    let precision = precision.map(|p| p.min(6) as u8);
                    return Ok(Expr::Func(
                        Func::IntervalTypmod(Some(*fields), precision),
                        vec![inner],
                    ));
                }
                let (plain_type, precision) = crate::types::names::split_time_precision(data_type)?;
                if let Some(digits) = precision.filter(|d| *d < 6) {
                    let cast = A::Cast {
                        kind: ast::CastKind::Cast,
                        expr: expr.clone(),
                        data_type: plain_type,
                        format: None,
                    };
                    let inner = Expr::compile(p, scope, &cast)?;
                    return Ok(Expr::Func(Func::TimePrecision(digits), vec![inner]));
                }
                let t = crate::types::names::data_type_in(&p.db, p.viewer, data_type)?;
                // `1e400::float8`: a number written for a float is read as
                // one (as numeric it may be beyond what Walden holds).
                if matches!(t, DataType::Real | DataType::Double) {
                    if let A::Value(v) = expr.as_ref() {
                        if let ast::Value::Number(n, _) = &v.value {
                            let f: f64 = n
                                .parse()
                                .map_err(|_| SqlError::syntax(format!("invalid number {n}")))?;
                            return Ok(Expr::Cast(Box::new(Expr::Lit(Value::Float(f))), t));
                        }
                    }
                }
                let inner = Expr::compile(p, scope, expr)?;
                if let Expr::Param(i) = inner {
                    p.infer_param(i, t.clone());
                }
                // An int2vector or oidvector as text is its elements
                // separated by spaces.
                let types: Vec<DataType> = scope.cols.iter().map(|c| c.ty.clone()).collect();
                let from = query::static_type(&inner, &types, &p.params);
                if matches!(t, DataType::Text | DataType::Varchar(_))
                    && matches!(from, Some(DataType::Int2Vector | DataType::OidVector))
                {
                    let joined = Expr::Func(
                        Func::ArrayToString,
                        vec![inner, Expr::Lit(Value::text(" "))],
                    );
                    return Ok(Expr::Cast(Box::new(joined), t));
                }
                // A record (or an array of records) as text, by its fields' types.
                if matches!(t, DataType::Text | DataType::Varchar(_))
                    && from.as_ref().is_some_and(record::holds_record)
                {
                    let shape = crate::functions::json::records::shape(from.as_ref().unwrap())
                        .unwrap_or(Value::Null);
                    let text = Expr::Func(Func::RecordText, vec![inner, Expr::Lit(shape)]);
                    return Ok(Expr::Cast(Box::new(text), t));
                }
                if matches!(t, DataType::Decimal { .. }) && from == Some(DataType::Real) {
                    let numeric = Expr::Func(Func::Float4Numeric, vec![inner]);
                    return Ok(Expr::Cast(Box::new(numeric), t));
                }
                cast_from(inner, from.as_ref(), t)
            }
            A::Convert {
                expr,
                data_type: Some(dt),
                ..
            } => Expr::Cast(
                Box::new(Expr::compile(p, scope, expr)?),
                crate::types::names::data_type_in(&p.db, p.viewer, dt)?,
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
                if f.over.is_some() {
                    let srf = std::mem::replace(&mut p.srf, SrfSlot::Refused("window"));
                    let r = query::window::compile_call(p, scope, f);
                    p.srf = srf;
                    return r;
                }
                let name = crate::front::fname(f);
                if name == "row" && f.over.is_none() {
                    return record::row_call(p, scope, f);
                }
                if let Some(func) = query::srf::lookup(&name) {
                    return query::srf::compile_call(p, scope, f, func, None);
                }
                if name == "coalesce" && matches!(p.srf, SrfSlot::Open(_)) {
                    let srf = std::mem::replace(&mut p.srf, SrfSlot::Refused("COALESCE"));
                    let r = super::call::compile_call(p, scope, f);
                    p.srf = srf;
                    return r;
                }
                if functions::aggregate_kind(f).is_some() {
                    return Err(SqlError::new(
                        ErrorKind::GroupingError,
                        format!("aggregate function {} is not allowed here", f.name),
                    ));
                }
                super::call::compile_call(p, scope, f)?
            }
            A::Ceil { expr, .. } => Expr::Func(Func::Ceil, vec![Expr::compile(p, scope, expr)?]),
            // position(sub IN s) is strpos(s, sub).
            A::Position { expr, r#in } => Expr::Func(
                Func::StrPos,
                vec![
                    Expr::compile(p, scope, r#in)?,
                    Expr::compile(p, scope, expr)?,
                ],
            ),
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
                use sqlparser::ast::DateTimeField as D;
                // `SECOND(p)` is the fractional precision (PostgreSQL has no
                // leading precision); `DAY TO SECOND(p)` likewise.
                let precision = match (&iv.leading_field, iv.leading_precision) {
                    (Some(D::Second), Some(p)) if iv.fractional_seconds_precision.is_none() => {
                        Some(p)
                    }
                    (_, None) => iv.fractional_seconds_precision,
                    _ => return Err(SqlError::unsupported(format!("interval literal {e}"))),
                };
                let fields = match &iv.leading_field {
                    Some(lead) => Some(
                        crate::types::interval_typmod::fields_of(lead, iv.last_field.as_ref())
                            .ok_or_else(|| SqlError::syntax(format!("invalid interval {e}")))?,
                    ),
                    None => None,
                };
                let text = match Expr::compile(p, scope, &iv.value)? {
                    Expr::Lit(Value::Text(s)) => s.to_string(),
                    Expr::Lit(v @ (Value::Int(_) | Value::Decimal(_))) if fields.is_some() => {
                        v.to_string()
                    }
                    _ => return Err(SqlError::unsupported(format!("interval literal {e}"))),
                };
                let precision = precision.map(|p| p.min(6) as u8);
                Expr::Lit(Value::Interval(crate::types::interval_typmod::parse(
                    &text, fields, precision,
                )?))
            }
            A::AtTimeZone {
                timestamp,
                time_zone,
            } => Expr::Func(
                Func::AtTimeZone,
                vec![
                    Expr::compile(p, scope, timestamp)?,
                    Expr::compile(p, scope, time_zone)?,
                ],
            ),
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
                let probe = super::compare_types::certain_type(p, scope, &x);
                let s = sub(
                    p,
                    scope,
                    subquery,
                    SubKind::In {
                        expr: Box::new(x),
                        negated: *negated,
                    },
                )?;
                super::compare_types::check_sub(probe, &s, BinOp::Eq)?;
                s
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
                // `x = ANY ($1)`: the parameter is an array of x's type.
                if let A::Value(v) = right.as_ref() {
                    if let ast::Value::Placeholder(_) = v.value {
                        let types: Vec<DataType> =
                            scope.cols.iter().map(|c| c.ty.clone()).collect();
                        if let (Expr::Param(i), Some(t)) = (
                            Expr::compile(p, scope, right)?,
                            query::static_type(&x, &types, &p.params),
                        ) {
                            p.infer_param(i, DataType::Array(Box::new(t)));
                        }
                    }
                }
                let op = bin_op(compare_op)?;
                match right.as_ref() {
                    A::Subquery(q) => {
                        let probe = super::compare_types::certain_type(p, scope, &x);
                        let s = sub(
                            p,
                            scope,
                            q,
                            SubKind::Quantified {
                                expr: Box::new(x),
                                op,
                                all,
                            },
                        )?;
                        super::compare_types::check_sub(probe, &s, op)?;
                        s
                    }
                    // `x = ANY (array)`: arrays are values in text form.
                    other => {
                        let arr = Expr::compile(p, scope, other)?;
                        // `$1 = ANY (xs)`: the parameter is an element.
                        if let Expr::Param(i) = x {
                            let types: Vec<DataType> =
                                scope.cols.iter().map(|c| c.ty.clone()).collect();
                            if let Some(DataType::Array(t)) =
                                query::static_type(&arr, &types, &p.params)
                            {
                                p.infer_param(i, *t);
                            }
                        }
                        super::compare_types::check_array(p, scope, &x, &arr, op)?;
                        let x = crate::expr::enum_ops::beside_array(p, scope, x, &arr)?;
                        Expr::Func(Func::AnyArray(op, all), vec![x, arr])
                    }
                }
            }
            // `(f(x)).n`: one output column of a multi-column SRF.
            A::CompoundFieldAccess { root, access_chain }
                if access_chain.len() == 1 && srf_root(root).is_some() =>
            {
                let (f, func) = srf_root(root).expect("checked");
                match &access_chain[0] {
                    ast::AccessExpr::Dot(A::Identifier(id)) => {
                        let field = fold_ident(id);
                        query::srf::compile_call(p, scope, f, func, Some(&field))?
                    }
                    other => {
                        return Err(SqlError::unsupported(format!("expression {root}{other}")))
                    }
                }
            }
            A::CompoundFieldAccess { root, access_chain } => {
                // Only `array[i]` subscripts; field access needs composite types.
                // `t.col[i]` parses as `t` followed by `.col` and `[i]`: the
                // leading names are one qualified column name.
                let mut names = match root.as_ref() {
                    A::Identifier(id) => vec![id.clone()],
                    A::CompoundIdentifier(ids) => ids.clone(),
                    _ => vec![],
                };
                let mut chain = access_chain.as_slice();
                if !names.is_empty() {
                    while let Some((ast::AccessExpr::Dot(A::Identifier(id)), rest)) =
                        chain.split_first()
                    {
                        names.push(id.clone());
                        chain = rest;
                    }
                }
                let mut e = if names.len() > 1 {
                    Expr::compile(p, scope, &A::CompoundIdentifier(names))?
                } else {
                    Expr::compile(p, scope, root)?
                };
                // Subscripts in a row join one lookup (`a[i][j]`); one after a
                // parenthesised lookup (`(a[i])[j]`) applies to its result.
                let mut in_row = false;
                for a in chain {
                    let was_in_row = std::mem::replace(&mut in_row, false);
                    match a {
                        ast::AccessExpr::Subscript(ast::Subscript::Index { index }) => {
                            in_row = true;
                            let mut i = Expr::compile(p, scope, index)?;
                            let types: Vec<DataType> =
                                scope.cols.iter().map(|c| c.ty.clone()).collect();
                            if matches!(
                                query::static_type(&e, &types, &p.params),
                                Some(DataType::Int2Vector | DataType::OidVector)
                            ) {
                                // int2vector and oidvector number their elements from 0.
                                i = Expr::Bin(
                                    BinOp::Add,
                                    Box::new(i),
                                    Box::new(Expr::Lit(Value::Int(1))),
                                );
                            }
                            // `a[i][j]`: one lookup with every subscript.
                            e = match e {
                                Expr::Func(Func::ArrayElement, mut args) if was_in_row => {
                                    args.push(i);
                                    Expr::Func(Func::ArrayElement, args)
                                }
                                e => Expr::Func(Func::ArrayElement, vec![e, i]),
                            };
                        }
                        ast::AccessExpr::Dot(A::Identifier(id)) => {
                            e = record::field(p, scope, e, &fold_ident(id))?;
                        }
                        other => {
                            return Err(SqlError::unsupported(format!("expression {root}{other}")))
                        }
                    }
                }
                e
            }
            A::Array(arr) => {
                let mut elems = arr
                    .elem
                    .iter()
                    .map(|x| Expr::compile(p, scope, x))
                    .collect::<Result<Vec<_>>>()?;
                // An ARRAY[...] of arrays (`ARRAY[[1,2],[3,4]]`) has one
                // more dimension than its sub-arrays.
                let types: Vec<DataType> = scope.cols.iter().map(|c| c.ty.clone()).collect();
                if elems.iter().any(|x| {
                    matches!(
                        query::static_type(x, &types, &p.params),
                        Some(DataType::Array(_))
                    )
                }) || arr.elem.iter().any(|x| matches!(x, A::Array(_)))
                {
                    return Ok(Expr::Func(Func::ArrayBuildNested, elems));
                }
                resolve_common(p, scope, elems.iter_mut().collect(), "ARRAY")?;
                Expr::Func(Func::ArrayBuild, elems)
            }
            A::Tuple(items) if items.len() == 1 => Expr::compile(p, scope, &items[0])?,
            A::Tuple(items) => record::row(p, scope, items)?,
            // Only the collations that order as Walden does (by code
            // point) are known; the expression is then unchanged.
            A::Collate { expr, collation } => {
                crate::types::collation::collation_named(collation)?;
                Expr::compile(p, scope, expr)?
            }
            other => return Err(SqlError::unsupported(format!("expression {other}"))),
        })
    }
}

/// `x ^ y`: power(); numeric ^ numeric (or integer) is numeric there,
/// float8 otherwise (integers and, beside a float, numerics are read as
/// float8, as PostgreSQL resolves them).
fn power_operator(
    p: &mut Planner<'_>,
    scope: &Arc<Scope>,
    left: &ast::Expr,
    right: &ast::Expr,
) -> Result<Expr> {
    let l = Expr::compile(p, scope, left)?;
    let r = Expr::compile(p, scope, right)?;
    Ok(Expr::Func(Func::Power, vec![l, r]))
}

/// The pattern of `LIKE ANY (array)`, which the parser gives as a flag
/// beside the parenthesised array, as the call `any(array)` that the
/// `SOME` and `ALL` forms parse as.
fn quantified(any: bool, pattern: &ast::Expr) -> Result<ast::Expr> {
    if !any {
        return Ok(pattern.clone());
    }
    match pattern {
        ast::Expr::Nested(inner) => Ok(ast::Expr::Function(ast::Function {
            name: ast::ObjectName::from(vec![ast::Ident::new("any")]),
            uses_odbc_syntax: false,
            parameters: ast::FunctionArguments::None,
            args: ast::FunctionArguments::List(ast::FunctionArgumentList {
                duplicate_treatment: None,
                args: vec![ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(
                    (**inner).clone(),
                ))],
                clauses: vec![],
            }),
            filter: None,
            null_treatment: None,
            over: None,
            within_group: vec![],
        })),
        other => Err(SqlError::unsupported(format!("LIKE ANY {other}"))),
    }
}

/// `x [NOT] [I]LIKE pattern [ESCAPE e]`, and `x LIKE ANY|SOME|ALL (array)`
/// (the quantifier parses as a call of that name).
fn like(
    p: &mut Planner<'_>,
    scope: &Arc<Scope>,
    expr: &ast::Expr,
    pattern: &ast::Expr,
    escape: Option<&ast::Expr>,
    negated: bool,
    ci: bool,
) -> Result<Expr> {
    let x = Expr::compile(p, scope, expr)?;
    if let ast::Expr::Function(f) = pattern {
        let name = f.name.to_string().to_ascii_lowercase();
        if let ("any" | "some" | "all", ast::FunctionArguments::List(l)) = (name.as_str(), &f.args)
        {
            if let [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(arr))] = l.args.as_slice()
            {
                if escape.is_some() {
                    return Err(SqlError::unsupported(format!(
                        "ESCAPE with LIKE {}",
                        name.to_ascii_uppercase()
                    )));
                }
                if let ast::Expr::Subquery(_) = arr {
                    return Err(SqlError::unsupported(format!(
                        "LIKE {} (subquery)",
                        name.to_ascii_uppercase()
                    )));
                }
                let arr = Expr::compile(p, scope, arr)?;
                return Ok(Expr::Func(
                    Func::AnyArray(BinOp::Like(ci, negated), name == "all"),
                    vec![x, arr],
                ));
            }
        }
    }
    Ok(Expr::Like {
        expr: Box::new(x),
        pattern: Box::new(Expr::compile(p, scope, pattern)?),
        escape: escape
            .map(|e| Expr::compile(p, scope, e).map(Box::new))
            .transpose()?,
        negated,
        ci,
    })
}

/// Integer arithmetic runs on i64; a result typed int2 or int4 (both
/// operands integers) is checked against its type's range, so
/// `2147483647::int4 * 2::int2` is 22003 as in PostgreSQL.
fn narrow_int_result(p: &Planner<'_>, scope: &Scope, e: Expr) -> Expr {
    let types: Vec<DataType> = scope.cols.iter().map(|c| c.ty.clone()).collect();
    let ty = |x: &Expr| query::static_type(x, &types, &p.params);
    let int = |t: Option<DataType>| {
        matches!(
            t,
            Some(DataType::SmallInt | DataType::Int | DataType::BigInt)
        )
    };
    let operands_int = match &e {
        Expr::Bin(_, a, b) => int(ty(a)) && int(ty(b)),
        Expr::Neg(a) => int(ty(a)),
        _ => false,
    };
    match ty(&e) {
        Some(t @ (DataType::SmallInt | DataType::Int)) if operands_int => {
            Expr::Cast(Box::new(e), t)
        }
        _ => e,
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

pub(super) fn col_ref(scope: &Scope, table: Option<&str>, name: &str) -> Result<Expr> {
    let (d, i) = scope.resolve(table, name)?;
    let at = |i: usize| {
        if d == 0 {
            Expr::Col(i)
        } else {
            Expr::Outer(d, i)
        }
    };
    let mut s = scope;
    for _ in 0..d {
        match s.parent.as_deref() {
            Some(p) => s = p,
            None => return Ok(at(i)),
        }
    }
    let Some(c) = s.cols.get(i) else {
        return Ok(at(i));
    };
    // The merged column is named unqualified, or under the join's alias
    // (`(a FULL JOIN b USING (id)) j`), which labels both sides alike.
    let as_merged = table.is_none()
        || if c.merged.is_empty() {
            s.cols
                .iter()
                .enumerate()
                .any(|(k, o)| k != i && o.hidden && o.table == c.table && o.name == c.name)
        } else {
            c.merged
                .iter()
                .all(|&m| s.cols.get(m).is_some_and(|o| o.table == c.table))
        };
    if !as_merged {
        return Ok(at(i));
    }
    let mut e = at(i);
    if !c.merged.is_empty() {
        let mut args = vec![e];
        args.extend(c.merged.iter().map(|&m| at(m)));
        e = Expr::Func(Func::Coalesce, args);
    }
    Ok(match &c.using_ty {
        Some(t) => Expr::Cast(Box::new(e), t.clone()),
        None => e,
    })
}

/// `ARRAY(SELECT ...)`.
pub fn array_subquery(p: &mut Planner<'_>, scope: &Arc<Scope>, q: &ast::Query) -> Result<Expr> {
    sub(p, scope, q, SubKind::Array)
}

/// The SRF call under `(...)` in a field selection, if it is one.
fn srf_root(e: &ast::Expr) -> Option<(&ast::Function, query::srf::SrfFunc)> {
    match e {
        ast::Expr::Nested(inner) => srf_root(inner),
        ast::Expr::Function(f) => Some((f, query::srf::lookup(&crate::front::fname(f))?)),
        _ => None,
    }
}

/// `(SELECT a, b, ...)` as the one row it yields, a record of its
/// columns (see [`SubKind::Row`]), and how many columns that is.
pub(crate) fn row_subquery(
    p: &mut Planner<'_>,
    scope: &Arc<Scope>,
    q: &ast::Query,
) -> Result<(Expr, usize)> {
    let e = sub(p, scope, q, SubKind::Row)?;
    let width = match &e {
        Expr::Sub(s) => s.plan.columns.len(),
        _ => 0,
    };
    Ok((e, width))
}

pub(super) fn sub(
    p: &mut Planner<'_>,
    scope: &Arc<Scope>,
    q: &ast::Query,
    kind: SubKind,
) -> Result<Expr> {
    let saved = p.agg.take();
    let win = std::mem::replace(&mut p.window, query::window::WindowSlot::Refused("here"));
    let plan = query::plan_query(p, q, Some(scope.clone()));
    // A correlated subquery outside grouping may have a grouped form.
    let grouped = match &plan {
        Ok(pl) if pl.correlated && saved.is_none() => query::decorrelate::plan(p, scope, q, &kind),
        _ => None,
    };
    p.window = win;
    p.agg = saved;
    let plan = plan?;
    if matches!(
        kind,
        SubKind::Scalar | SubKind::In { .. } | SubKind::Quantified { .. } | SubKind::Array
    ) && plan.columns.len() != 1
    {
        return Err(SqlError::syntax("subquery must return only one column"));
    }
    if matches!(kind, SubKind::Array)
        && matches!(
            plan.columns.first().map(|c| &c.ty),
            Some(DataType::Array(_))
        )
    {
        return Err(SqlError::unsupported("ARRAY(subquery) of arrays"));
    }
    let correlated = plan.correlated;
    Ok(Expr::Sub(Box::new(SubPlan {
        plan: Arc::new(plan),
        kind,
        correlated,
        cache: parking_lot::Mutex::new(None),
        grouped,
    })))
}
