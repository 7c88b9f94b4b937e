//! Casts to the reg types (`'t'::regclass`, `23::regtype`): a name to an
//! OID or an OID to a name; a name in a constant is checked when the
//! statement is planned, as PostgreSQL reads it at parse time.

use super::*;
use walden_engine::RegKind;

/// Casts to PostgreSQL's catalog types, which Walden has no column types
/// for: `regclass`, `regtype` and `regnamespace` turn a name into an OID or
/// an OID into a name, depending on which one they are given. `None` for
/// every other type.
pub(super) fn catalog_cast(
    p: &mut Planner<'_>,
    scope: &Arc<Scope>,
    expr: &ast::Expr,
    data_type: &ast::DataType,
) -> Result<Option<Expr>> {
    let names: Option<(Func, Func)> = match data_type {
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
                // A name given stays a name (Walden lists no functions to
                // look it up in).
                Some("regproc") => Some((Func::RegProcName, Func::RegProcName)),
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
                | DataType::Oid
                | DataType::Reg(_)
                | DataType::Decimal { .. }
                | DataType::Real
                | DataType::Double
        )
    );
    // A name in a constant is looked up now, so an unknown one fails
    // when the statement is prepared, as in PostgreSQL.
    if let Expr::Lit(Value::Text(name)) = &inner {
        let kind = match to_oid {
            Func::RegClassOid => Some(walden_engine::RegKind::Class),
            Func::RegTypeOid => Some(walden_engine::RegKind::Type),
            Func::RegNamespaceOid => Some(walden_engine::RegKind::Namespace),
            _ => None,
        };
        if let Some(kind) = kind {
            p.system
                .check_reg_constant(&p.db, p.viewer, &p.path, kind, name)?;
        }
    }
    Ok(Some(Expr::Func(
        if is_number { to_name } else { to_oid },
        vec![inner],
    )))
}

/// A value cast to a reg type when the statement runs (a common type's
/// cast: `SELECT 'pg_class'::regclass UNION SELECT 1259::oid` is regclass):
/// a number is an OID and takes its name, text is a name looked up, as
/// the reg types' casts and input functions do.
pub(crate) fn reg_at_run_time(v: Value, kind: RegKind, env: &Env<'_>) -> Result<Value> {
    let (by_name, by_oid) = match kind {
        RegKind::Class => (Func::RegClassOid, Func::RegClassName),
        RegKind::Type => (Func::RegTypeOid, Func::RegTypeName),
        RegKind::Namespace => (Func::RegNamespaceOid, Func::RegNamespaceName),
    };
    match v {
        Value::Null => Ok(Value::Null),
        Value::Reg(k, ..) if k == kind => Ok(v),
        Value::Text(_) => functions::call(by_name, vec![v], env),
        other => functions::call(by_oid, vec![other], env),
    }
}
