//! Compiling `[I]LIKE` and its quantified forms.

use super::*;

/// The pattern of `LIKE ANY (array)`, which the parser gives as a flag
/// beside the parenthesised array, as the call `any(array)` that the
/// `SOME` and `ALL` forms parse as.
pub(super) fn quantified(any: bool, pattern: &ast::Expr) -> Result<ast::Expr> {
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
pub(super) fn like(
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
