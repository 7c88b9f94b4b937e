//! String operands: char(n)'s trailing blanks (dropped in comparisons,
//! `length`, and casts to text), and the operands of `||`.

use super::*;

/// Whether `e` is of a `char(n)` type.
pub fn is_char(p: &Planner<'_>, scope: &Scope, e: &Expr) -> bool {
    let types: Vec<DataType> = scope.cols.iter().map(|c| c.ty.clone()).collect();
    matches!(
        crate::query::static_type(e, &types, &p.params),
        Some(DataType::Char(_))
    )
}

/// The operands of `||` as PostgreSQL's `text || anynonarray` reads them:
/// each as its type's text (`'x' || true` is `xtrue`, char(n) without its
/// trailing blanks). Arrays and jsonb keep their own `||`; two operands
/// neither of which is a string have none (`1 || 2` is 42883).
pub(super) fn concat_operands(
    p: &mut Planner<'_>,
    scope: &Scope,
    l: Expr,
    r: Expr,
) -> Result<(Expr, Expr)> {
    let types: Vec<DataType> = scope.cols.iter().map(|c| c.ty.clone()).collect();
    let (lt, rt) = (
        query::static_type(&l, &types, &p.params),
        query::static_type(&r, &types, &p.params),
    );
    let own_concat = |t: &Option<DataType>| {
        matches!(
            t,
            Some(DataType::Array(_) | DataType::Jsonb | DataType::Bytes)
        )
    };
    if own_concat(&lt) || own_concat(&rt) {
        p.infer_pair(&l, &r, scope);
        return Ok((l, r));
    }
    // An untyped parameter beside anything else is text (`$1 || n`).
    for e in [&l, &r] {
        if let Expr::Param(i) = e {
            p.infer_param(*i, DataType::Text);
        }
    }
    // The types that cast to text implicitly (and text itself).
    let stringish = |t: &Option<DataType>| {
        matches!(
            t,
            None | Some(
                DataType::Text
                    | DataType::Varchar(_)
                    | DataType::Char(_)
                    | DataType::Name
                    | DataType::PgChar
            )
        )
    };
    if let (Some(a), Some(b)) = (&lt, &rt) {
        if !stringish(&lt) && !stringish(&rt) {
            let name =
                |t: &DataType| crate::types::regtype_name(crate::types::type_oid_and_mod(t).0);
            return Err(SqlError::new(
                ErrorKind::UndefinedFunction,
                format!("operator does not exist: {} || {}", name(a), name(b)),
            ));
        }
    }
    let as_text = |e: Expr, t: &Option<DataType>| match t {
        Some(DataType::Bool) => Expr::Cast(Box::new(e), DataType::Text),
        Some(DataType::Char(_)) => unpad(e),
        _ => e,
    };
    Ok((as_text(l, &lt), as_text(r, &rt)))
}

/// `e`, of type `from` where known, cast to `to`; a char(n) value
/// becoming text, varchar or name loses its trailing blanks first.
pub(crate) fn cast_from(e: Expr, from: Option<&DataType>, to: DataType) -> Expr {
    let e = match from {
        Some(f) if query::drops_blanks(f, &to) => unpad(e),
        _ => e,
    };
    Expr::Cast(Box::new(e), to)
}

/// `e` without trailing blanks (for char(n) semantics).
pub fn unpad(e: Expr) -> Expr {
    match e {
        Expr::Lit(Value::Text(s)) => Expr::Lit(Value::text(s.trim_end_matches(' '))),
        Expr::Lit(v) => Expr::Lit(v),
        other => Expr::Func(Func::Rtrim, vec![other]),
    }
}
