//! Anonymous records: `ROW(a, b)` / `(a, b)`, a multi-column function's
//! row in a select list (`_pg_expandarray(indkey) AS keys`), and
//! `(expr).field`. A record is a `Value::Array` of its fields, typed
//! `DataType::Record` with the fields' names and types, so field
//! selection resolves its name when the query is planned.

use super::*;

/// The static type of `e` in `scope`.
fn type_of(p: &Planner<'_>, scope: &Scope, e: &Expr) -> Option<DataType> {
    let types: Vec<DataType> = scope.cols.iter().map(|c| c.ty.clone()).collect();
    query::static_type(e, &types, &p.params)
}

// The entry points are out of line so that `Expr::compile`'s frame, which
// a deep expression stacks once per level, does not grow with them.

/// `ROW(a, b, ...)`.
#[inline(never)]
pub(super) fn row_call(p: &mut Planner<'_>, scope: &Arc<Scope>, f: &ast::Function) -> Result<Expr> {
    let items = crate::front::args_of(f)
        .into_iter()
        .map(|a| {
            crate::front::arg_expr(a)
                .cloned()
                .ok_or_else(|| SqlError::syntax("unsupported argument to ROW"))
        })
        .collect::<Result<Vec<_>>>()?;
    row(p, scope, &items)
}

/// `ROW(a, b, ...)` or `(a, b, ...)`: fields named f1, f2, ... as in
/// PostgreSQL.
#[inline(never)]
pub(super) fn row(p: &mut Planner<'_>, scope: &Arc<Scope>, items: &[ast::Expr]) -> Result<Expr> {
    let mut fields = Vec::with_capacity(items.len());
    let mut values = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let e = Expr::compile(p, scope, item)?;
        let t = type_of(p, scope, &e).unwrap_or(DataType::Text);
        fields.push((format!("f{}", i + 1), t));
        values.push(e);
    }
    Ok(named(values, fields))
}

/// A record of `values` with the fields `fields` (as many).
pub(crate) fn named(values: Vec<Expr>, fields: Vec<(String, DataType)>) -> Expr {
    Expr::Cast(
        Box::new(Expr::Func(Func::RowBuild, values)),
        DataType::Record(fields),
    )
}

/// `(e).name`: the field of a record-typed `e`.
#[inline(never)]
pub(super) fn field(p: &Planner<'_>, scope: &Scope, e: Expr, name: &str) -> Result<Expr> {
    match type_of(p, scope, &e) {
        Some(DataType::Record(fields)) => {
            let i = fields.iter().position(|(n, _)| n == name).ok_or_else(|| {
                SqlError::new(
                    ErrorKind::UndefinedColumn,
                    format!("could not identify column \"{name}\" in record data type"),
                )
            })?;
            // At most 1664 fields (PostgreSQL's column limit) fit in u16.
            let i = u16::try_from(i)
                .map_err(|_| SqlError::unsupported("a record of more than 65535 fields"))?;
            Ok(Expr::Func(Func::RecordField(i), vec![e]))
        }
        Some(t) => Err(SqlError::new(
            ErrorKind::WrongObjectType,
            format!(
                "column notation .{name} applied to type {}, which is not a composite type",
                t.sql_name()
            ),
        )),
        None => Err(SqlError::unsupported(format!(
            "field selection .{name} from an expression of unknown type"
        ))),
    }
}

/// Whether `e` is record-valued, from its shape alone (constant time: it
/// runs for every comparison, and an operand can be a long chain).
fn is_record(scope: &Scope, e: &Expr) -> bool {
    match e {
        Expr::Cast(_, DataType::Record(_)) | Expr::Func(Func::RowBuild, _) => true,
        // A select-list function's row: CASE WHEN produced THEN ROW(...).
        Expr::Case(None, whens, None) => whens.first().is_some_and(|(_, t)| is_record(scope, t)),
        Expr::Col(i) => {
            matches!(scope.cols.get(*i), Some(c) if matches!(c.ty, DataType::Record(_)))
        }
        Expr::Sub(s) => {
            matches!(s.plan.columns.first(), Some(c) if matches!(c.ty, DataType::Record(_)))
        }
        _ => false,
    }
}

/// Refuses comparing records: PostgreSQL compares them field by field with
/// its own NULL rules, which Walden does not implement.
#[inline(never)]
pub(super) fn refuse_comparison(scope: &Scope, operands: &[&Expr]) -> Result<()> {
    if operands.iter().any(|e| is_record(scope, e)) {
        return Err(SqlError::unsupported("comparison of record values"));
    }
    Ok(())
}

/// Whether a value of type `t` holds a record (itself, or as an element).
pub(super) fn holds_record(t: &DataType) -> bool {
    match t {
        DataType::Record(_) => true,
        DataType::Array(e) => holds_record(e),
        _ => false,
    }
}

/// `e` ready for a JSON function: a record or an array goes as json built
/// by its static type (field names, nesting); other values as they are.
pub(super) fn json_arg(p: &Planner<'_>, scope: &Scope, e: Expr) -> Expr {
    let types: Vec<DataType> = scope.cols.iter().map(|c| c.ty.clone()).collect();
    match query::static_type(&e, &types, &p.params)
        .as_ref()
        .and_then(crate::functions::json::records::shape)
    {
        Some(shape) => Expr::Func(Func::RecordJson, vec![e, Expr::Lit(shape)]),
        None => e,
    }
}

/// `t` naming a FROM item (here or in an enclosing query): a record of its
/// columns, named and typed as they are, as PostgreSQL's whole-row reference.
pub(super) fn whole_row(scope: &Scope, name: &str) -> Option<Expr> {
    let mut s = scope;
    let mut depth = 0;
    loop {
        let cols: Vec<usize> = (0..s.cols.len())
            .filter(|&i| s.cols[i].table.as_deref() == Some(name))
            .collect();
        if !cols.is_empty() {
            let fields = cols
                .iter()
                .map(|&i| (s.cols[i].name.clone(), s.cols[i].ty.clone()))
                .collect();
            let values = cols
                .iter()
                .map(|&i| {
                    if depth == 0 {
                        Expr::Col(i)
                    } else {
                        Expr::Outer(depth, i)
                    }
                })
                .collect();
            return Some(named(values, fields));
        }
        s = s.parent.as_deref()?;
        depth += 1;
    }
}
