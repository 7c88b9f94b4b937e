//! Compiling SQL expressions into `Expr` trees: names resolved in a scope,
//! literals typed, casts, subqueries planned.

use super::*;
use crate::types::names::parse_type_name;

mod cast;
mod grouped;
mod operators;
mod pattern;
mod subquery;
mod subscript;

use cast::*;
use operators::*;
use pattern::*;
pub use subquery::array_subquery;
pub(crate) use subquery::row_subquery;
pub(super) use subquery::sub;
use subquery::*;
use subscript::*;

impl Expr {
    /// Compiles an AST expression in `scope`.
    pub fn compile(p: &mut Planner<'_>, scope: &Arc<Scope>, e: &ast::Expr) -> Result<Expr> {
        if let Some(e) = grouped::compile_grouped(p, scope, e)? {
            return Ok(e);
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
            A::TypedString(ts) => typed_string(p, ts)?,
            A::Nested(inner) => Expr::compile(p, scope, inner)?,
            A::UnaryOp { op, expr } => compile_unary(p, scope, op, expr)?,
            A::BinaryOp { left, op, right } => compile_binary(p, scope, left, op, right)?,
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
                pattern::like(
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
                pattern::like(
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
            } => compile_cast(p, scope, expr, data_type)?,
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
            A::Interval(iv) => interval_literal(p, scope, e, iv)?,
            A::Overlay {
                expr,
                overlay_what,
                overlay_from,
                overlay_for,
            } => {
                let mut args = vec![
                    Expr::compile(p, scope, expr)?,
                    Expr::compile(p, scope, overlay_what)?,
                    Expr::compile(p, scope, overlay_from)?,
                ];
                if let Some(f) = overlay_for {
                    args.push(Expr::compile(p, scope, f)?);
                }
                let types: Vec<DataType> = scope.cols.iter().map(|c| c.ty.clone()).collect();
                let f = match query::static_type(&args[0], &types, &p.params) {
                    Some(DataType::Bytes) => crate::functions::BinaryStrFn::OverlayBytes,
                    _ => crate::functions::BinaryStrFn::Overlay,
                };
                Expr::Func(Func::BinaryStr(f), args)
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
            } => in_subquery(p, scope, expr, subquery, *negated)?,
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
            } => any_all(
                p,
                scope,
                left,
                compare_op,
                right,
                matches!(e, A::AllOp { .. }),
            )?,
            // `(f(x)).n`: one output column of a multi-column SRF.
            A::CompoundFieldAccess { root, access_chain }
                if access_chain.len() == 1 && srf_root(root).is_some() =>
            {
                srf_field(p, scope, root, &access_chain[0])?
            }
            A::CompoundFieldAccess { root, access_chain } => {
                subscript::access_chain(p, scope, root, access_chain)?
            }
            A::Array(arr) => array_constructor(p, scope, arr)?,
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
