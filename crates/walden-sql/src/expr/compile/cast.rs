//! Compiling casts and typed literals (`type 'text'`, `INTERVAL '..' fields`).

use super::*;
use ast::Expr as A;

/// `type 'text'`.
pub(super) fn typed_string(p: &mut Planner<'_>, ts: &ast::TypedString) -> Result<Expr> {
    // `timestamp(2) 'now'`: the literal, rounded to the precision.
    let (plain, precision) = crate::types::names::split_time_precision(&ts.data_type)?;
    if let Some(digits) = precision.filter(|d| *d < 6) {
        let inner = typed_string(
            p,
            &ast::TypedString {
                data_type: plain,
                ..ts.clone()
            },
        )?;
        return Ok(Expr::Func(Func::TimePrecision(digits), vec![inner]));
    }
    Ok({
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
    })
}

/// `expr::type` / `CAST(expr AS type)`.
pub(super) fn compile_cast(
    p: &mut Planner<'_>,
    scope: &Arc<Scope>,
    expr: &ast::Expr,
    data_type: &ast::DataType,
) -> Result<Expr> {
    Ok({
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
                expr: Box::new(expr.clone()),
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
            if let A::Value(v) = expr {
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
    })
}

/// `INTERVAL 'text' [fields] [(p)]`.
pub(super) fn interval_literal(
    p: &mut Planner<'_>,
    scope: &Arc<Scope>,
    e: &ast::Expr,
    iv: &ast::Interval,
) -> Result<Expr> {
    Ok({
        use sqlparser::ast::DateTimeField as D;
        // `SECOND(p)` is the fractional precision (PostgreSQL has no
        // leading precision); `DAY TO SECOND(p)` likewise.
        let precision = match (&iv.leading_field, iv.leading_precision) {
            (Some(D::Second), Some(p)) if iv.fractional_seconds_precision.is_none() => Some(p),
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
            Expr::Lit(v @ (Value::Int(_) | Value::Decimal(_))) if fields.is_some() => v.to_string(),
            _ => return Err(SqlError::unsupported(format!("interval literal {e}"))),
        };
        let precision = precision.map(|p| p.min(6) as u8);
        Expr::Lit(Value::Interval(crate::types::interval_typmod::parse(
            &text, fields, precision,
        )?))
    })
}
