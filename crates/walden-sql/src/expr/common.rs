//! One type for a list of expressions (CASE results, COALESCE, GREATEST,
//! LEAST, ARRAY[...], IN lists), each cast to it as PostgreSQL resolves
//! them.

use super::*;

/// The results of a CASE (its ELSE first, as PostgreSQL lists them), the
/// arguments of COALESCE, GREATEST and LEAST, the elements of ARRAY[...]:
/// they resolve to one type as a UNION's columns do, and each is cast to
/// it (`COALESCE(1, 2.5)` is numeric). Quoted literals and NULLs among
/// them (PostgreSQL's unknown) take it too (`COALESCE('x', relname)` is
/// name, `CASE ... THEN 'abc' ELSE 1 END` 22P02), kept as literals when
/// it is text or char(n); an untyped parameter is inferred as it.
pub(crate) fn resolve_common(
    p: &mut Planner<'_>,
    scope: &Scope,
    items: Vec<&mut Expr>,
    context: &str,
) -> Result<()> {
    let unknown = |e: &Expr| matches!(e, Expr::Lit(Value::Text(_) | Value::Null));
    let col_types: Vec<DataType> = scope.cols.iter().map(|c| c.ty.clone()).collect();
    let types: Vec<Option<DataType>> = items
        .iter()
        .map(|e| {
            if unknown(e) {
                None
            } else {
                query::static_type(e, &col_types, &p.params)
            }
        })
        .collect();
    if types.iter().all(Option::is_none) {
        return Ok(());
    }
    let ty = query::select_common(&types, context)?;
    for (e, t) in items.into_iter().zip(&types) {
        match t {
            Some(t) if query::needs_cast(t, &ty) => {
                let inner = std::mem::replace(e, Expr::Lit(Value::Null));
                *e = cast_from(inner, Some(t), ty.clone());
            }
            Some(_) => {}
            None if unknown(e) => {
                if matches!(ty, DataType::Text | DataType::Char(_)) {
                    continue;
                }
                // A bad literal fails when planned, as PostgreSQL's, even
                // in a branch never taken; the cast stays for types read
                // at run time (timestamptz in the session's zone).
                if let Expr::Lit(v) = &*e {
                    check_literal(p, v, &ty)?;
                }
                let lit = std::mem::replace(e, Expr::Lit(Value::Null));
                *e = Expr::Cast(Box::new(lit), ty.clone());
            }
            None => {
                if let Expr::Param(k) = e {
                    p.infer_param(*k, ty.clone());
                }
            }
        }
    }
    Ok(())
}

/// `'a' IN ('a', 1)`: a quoted literal on the left takes the common type
/// of the list, as PostgreSQL's (there 22P02). A list with no common type
/// is compared item by item, as there.
pub(super) fn in_list_unknown(
    p: &mut Planner<'_>,
    scope: &Scope,
    x: Expr,
    items: &[Expr],
) -> Result<Expr> {
    let Expr::Lit(v @ Value::Text(_)) = &x else {
        return Ok(x);
    };
    let col_types: Vec<DataType> = scope.cols.iter().map(|c| c.ty.clone()).collect();
    let types: Vec<Option<DataType>> = items
        .iter()
        .map(|e| match e {
            Expr::Lit(Value::Text(_) | Value::Null) => None,
            e => query::static_type(e, &col_types, &p.params),
        })
        .collect();
    match query::select_common(&types, "IN") {
        Ok(ty) if !matches!(ty, DataType::Text | DataType::Char(_) | DataType::Enum(_)) => {
            // The literal has no modifier: `'abcd' IN (v)` over a
            // varchar(3) compares all four characters.
            let ty = match query::unmodified(&ty) {
                // The reg types compare with oid's `=`, so the literal is
                // read as an OID (`'pg_class' IN (r)` is 22P02), as there.
                DataType::Reg(_) => DataType::Oid,
                ty => ty,
            };
            coerce(v.clone(), &ty)?;
            Ok(Expr::Cast(Box::new(x), ty))
        }
        _ => Ok(x),
    }
}

/// Fails as PostgreSQL does when it reads quoted literal `v` as type `ty`
/// while planning: a reg type's name is looked up (`'pg_type'` is a
/// regclass's name, not an OID), any other type's input is parsed.
fn check_literal(p: &Planner<'_>, v: &Value, ty: &DataType) -> Result<()> {
    match (ty, v) {
        (DataType::Reg(kind), Value::Text(name)) => p
            .system
            .check_reg_constant(&p.db, p.viewer, &p.path, *kind, name),
        _ => coerce(v.clone(), ty).map(|_| ()).map_err(SqlError::from),
    }
}
