//! Compiling subscripts and field selections (`a[i][j]`, `(a[i])[j]`,
//! `(f(x)).n`, `r.f`) and `ARRAY[...]` constructors.

use super::*;
use ast::Expr as A;

/// `(f(x)).n`: one output column of a multi-column SRF.
pub(super) fn srf_field(
    p: &mut Planner<'_>,
    scope: &Arc<Scope>,
    root: &ast::Expr,
    access: &ast::AccessExpr,
) -> Result<Expr> {
    Ok({
        let (f, func) = srf_root(root).expect("checked");
        match access {
            ast::AccessExpr::Dot(A::Identifier(id)) => {
                let field = fold_ident(id);
                query::srf::compile_call(p, scope, f, func, Some(&field))?
            }
            other => return Err(SqlError::unsupported(format!("expression {root}{other}"))),
        }
    })
}

/// `root` followed by subscripts and field selections.
pub(super) fn access_chain(
    p: &mut Planner<'_>,
    scope: &Arc<Scope>,
    root: &ast::Expr,
    access_chain: &[ast::AccessExpr],
) -> Result<Expr> {
    Ok({
        // Only `array[i]` subscripts; field access needs composite types.
        // `t.col[i]` parses as `t` followed by `.col` and `[i]`: the
        // leading names are one qualified column name.
        let mut names = match root {
            A::Identifier(id) => vec![id.clone()],
            A::CompoundIdentifier(ids) => ids.clone(),
            _ => vec![],
        };
        let mut chain = access_chain;
        if !names.is_empty() {
            while let Some((ast::AccessExpr::Dot(A::Identifier(id)), rest)) = chain.split_first() {
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
                    if !was_in_row {
                        refuse_scalar_subscript(p, scope, &e)?;
                    }
                    let mut i = Expr::compile(p, scope, index)?;
                    let types: Vec<DataType> = scope.cols.iter().map(|c| c.ty.clone()).collect();
                    if matches!(
                        query::static_type(&e, &types, &p.params),
                        Some(DataType::Int2Vector | DataType::OidVector)
                    ) {
                        // int2vector and oidvector number their elements from 0.
                        i = Expr::Bin(BinOp::Add, Box::new(i), Box::new(Expr::Lit(Value::Int(1))));
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
                other => return Err(SqlError::unsupported(format!("expression {root}{other}"))),
            }
        }
        e
    })
}

/// A subscript on a value whose type has none (`(a[1])[1]` where `a[1]`
/// is an integer): PostgreSQL's 42804 when the statement is planned.
fn refuse_scalar_subscript(p: &Planner<'_>, scope: &Scope, e: &Expr) -> Result<()> {
    use DataType as T;
    let types: Vec<DataType> = scope.cols.iter().map(|c| c.ty.clone()).collect();
    let Some(t) = query::static_type(e, &types, &p.params) else {
        return Ok(());
    };
    if matches!(
        t,
        T::SmallInt
            | T::Int
            | T::BigInt
            | T::Real
            | T::Double
            | T::Decimal { .. }
            | T::Bool
            | T::Date
            | T::Time
            | T::Timestamp
            | T::TimestampTz
            | T::Interval
            | T::Uuid
    ) {
        let name = crate::types::regtype_name(crate::types::type_oid_and_mod(&t).0);
        return Err(SqlError::new(
            ErrorKind::DatatypeMismatch,
            format!("cannot subscript type {name} because it does not support subscripting"),
        ));
    }
    Ok(())
}

/// `ARRAY[...]`.
pub(super) fn array_constructor(
    p: &mut Planner<'_>,
    scope: &Arc<Scope>,
    arr: &ast::Array,
) -> Result<Expr> {
    Ok({
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
    })
}

/// The SRF call under `(...)` in a field selection, if it is one.
pub(super) fn srf_root(e: &ast::Expr) -> Option<(&ast::Function, query::srf::SrfFunc)> {
    match e {
        ast::Expr::Nested(inner) => srf_root(inner),
        ast::Expr::Function(f) => Some((f, query::srf::lookup(&crate::front::fname(f))?)),
        _ => None,
    }
}
