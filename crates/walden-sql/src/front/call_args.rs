//! Reading a function call's name and arguments out of sqlparser's AST.

use sqlparser::ast::{self, FunctionArg, FunctionArgExpr, FunctionArguments};

pub fn fname(f: &ast::Function) -> String {
    f.name
        .0
        .last()
        .map(|p| p.to_string().trim_matches('"').to_ascii_lowercase())
        .unwrap_or_default()
}

pub fn args_of(f: &ast::Function) -> Vec<&FunctionArg> {
    match &f.args {
        FunctionArguments::List(l) => l.args.iter().collect(),
        _ => Vec::new(),
    }
}

pub fn arg_expr(a: &FunctionArg) -> Option<&ast::Expr> {
    match a {
        FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e),
        FunctionArg::Named {
            arg: FunctionArgExpr::Expr(e),
            ..
        } => Some(e),
        FunctionArg::ExprNamed {
            arg: FunctionArgExpr::Expr(e),
            ..
        } => Some(e),
        _ => None,
    }
}
