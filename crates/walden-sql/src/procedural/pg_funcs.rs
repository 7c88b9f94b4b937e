//! PostgreSQL functions (`LANGUAGE sql | plpgsql`): stored as T-SQL's
//! scalar functions are, in `walden_functions` (the CREATE text). A call
//! of a body that inlines becomes one SQL expression, the body run
//! symbolically over its arguments (`funcs::run`); any other body runs on
//! the runtime at each call (`pg_call.rs`).

use super::funcs::{self, Env};
use super::*;
use crate::front::plpgsql::{lex, parse_plpgsql, Lang, PgFunc, K};

/// `DROP FUNCTION` / `CREATE` of a PostgreSQL function.
impl<'h, H: Host> Runner<'h, H> {
    pub fn create_pg_func(&mut self, f: &PgFunc, text: &str) -> Result<QueryOutput> {
        // The body must parse (refused now, not at a call); one that does
        // not inline runs (`pg_call.rs`).
        if f.procedure || !inlinable(f) {
            match f.lang {
                Lang::Sql => {
                    sql_statements(&f.body, &f.param_names(), !f.procedure)?;
                }
                Lang::Plpgsql if f.is_trigger() => {
                    crate::front::plpgsql::parse_plpgsql_trigger(&f.body)?;
                }
                Lang::Plpgsql => {
                    let body = parse_plpgsql(&f.body, &f.var_names())?;
                    super::pg_rows::check_returns(f, &body)?;
                }
            }
        }
        if f.gives_rows() {
            // A row type must name a table now.
            self.result_columns(f)?;
        }
        let existing = self.func_definitions(&f.name)?;
        let mut same = None;
        for d in &existing {
            match crate::front::plpgsql::parse_pg_function(&d.text) {
                Some(o) if super::overload::same_signature(&o, f) => {
                    same = Some((d.key.clone(), o));
                }
                Some(_) => {}
                // A T-SQL function of this name: not PostgreSQL's to overload.
                None => {
                    return Err(SqlError::new(
                        ErrorKind::DuplicateFunction,
                        format!("function \"{}\" already exists (a T-SQL function)", f.name),
                    ))
                }
            }
        }
        let key = match same {
            Some((key, old)) => {
                if old.procedure != f.procedure && f.replace {
                    return Err(SqlError::new(
                        ErrorKind::WrongObjectType,
                        format!("cannot change routine kind of \"{}\"", f.name),
                    ));
                }
                if !f.replace {
                    return Err(SqlError::new(
                        ErrorKind::DuplicateFunction,
                        format!(
                            "function \"{}\" already exists with same argument types",
                            f.name
                        ),
                    ));
                }
                if !f.procedure && !same_result(&old, f) {
                    let types: Vec<&str> = f.params.iter().map(|p| p.ty.as_str()).collect();
                    return Err(SqlError::new(
                        ErrorKind::InvalidFunctionDefinition,
                        "cannot change return type of existing function",
                    )
                    .with_fields(crate::error::ErrorFields {
                        hint: Some(format!(
                            "Use DROP FUNCTION {}({}) first.",
                            f.name,
                            types.join(", ")
                        )),
                        ..Default::default()
                    }));
                }
                key
            }
            None if existing.is_empty() => f.name.clone(),
            None => {
                let types: Vec<String> = f
                    .params
                    .iter()
                    .map(|p| p.ty.trim().to_ascii_lowercase())
                    .collect();
                let mut key = format!("{}({})", f.name, types.join(","));
                while existing.iter().any(|d| d.key == key) {
                    key.push('_');
                }
                key
            }
        };
        let text = self.placed_text(f, text)?;
        self.store_func(&key, &text)?;
        Ok(QueryOutput::command(if f.procedure {
            "CREATE PROCEDURE"
        } else {
            "CREATE FUNCTION"
        }))
    }

    /// The CREATE text as stored. A routine belongs to the schema its
    /// name gives or, unqualified, to the first existing schema of
    /// search_path (PostgreSQL's rule); an unqualified name of a schema
    /// other than `public` is written qualified into the text, which is
    /// where `pg_proc` (so pg_dump) reads the schema from.
    fn placed_text(&mut self, f: &PgFunc, text: &str) -> Result<String> {
        let schema = match &f.schema {
            Some(s) => s.clone(),
            None => {
                let o = self.fixed("SELECT current_schema()", &[])?;
                match o.rows.into_iter().next().and_then(|r| r.into_iter().next()) {
                    Some(Value::Null) | None => {
                        return Err(SqlError::new(
                            ErrorKind::InvalidSchemaName,
                            "no schema has been selected to create in",
                        ))
                    }
                    Some(v) => v.to_string(),
                }
            }
        };
        match schema.as_str() {
            "public" | "dbo" => return Ok(text.to_string()),
            "pg_catalog" | "pg_toast" | "information_schema" => {
                return Err(SqlError::unsupported(format!(
                    "creating routines in schema {schema}"
                )))
            }
            _ => {}
        }
        let o = self.fixed(
            "SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = $1",
            &[Value::text(schema.clone())],
        )?;
        if o.rows.is_empty() {
            return Err(SqlError::new(
                ErrorKind::InvalidSchemaName,
                format!("schema \"{schema}\" does not exist"),
            ));
        }
        if f.schema.is_some() {
            return Ok(text.to_string());
        }
        let at = f.name_at.min(text.len());
        Ok(format!(
            "{}{}.{}",
            &text[..at],
            crate::types::quote::quote_ident(&schema),
            &text[at..]
        ))
    }

    pub fn drop_pg_funcs(
        &mut self,
        names: &[(String, Option<Vec<String>>)],
        if_exists: bool,
        procedure: Option<bool>,
    ) -> Result<QueryOutput> {
        let kind = match procedure {
            Some(true) => "procedure",
            Some(false) => "function",
            None => "routine",
        };
        let mut notices = Vec::new();
        for (name, types) in names {
            let defs = self.func_definitions(name)?;
            let shown = match types {
                Some(t) => format!("{name}({})", t.join(", ")),
                None => name.clone(),
            };
            let mut found = Vec::new();
            for d in &defs {
                match crate::front::plpgsql::parse_pg_function(&d.text) {
                    Some(f)
                        if types
                            .as_ref()
                            .is_some_and(|t| !super::overload::takes(&f, t)) => {}
                    Some(f) => found.push((d.key.clone(), Some(f))),
                    // A T-SQL function: its types are not PostgreSQL's to name.
                    None => found.push((d.key.clone(), None)),
                }
            }
            if found.len() > 1 {
                return Err(SqlError::new(
                    ErrorKind::AmbiguousFunction,
                    format!("{kind} name \"{name}\" is not unique"),
                )
                .with_fields(crate::error::ErrorFields {
                    hint: Some(format!(
                        "Specify the argument list to select the {kind} unambiguously."
                    )),
                    ..Default::default()
                }));
            }
            let Some((key, f)) = found.pop() else {
                if if_exists {
                    notices.push(format!("{kind} {shown} does not exist, skipping"));
                    continue;
                }
                return Err(SqlError::new(
                    ErrorKind::UndefinedFunction,
                    format!("{kind} {shown} does not exist"),
                ));
            };
            if let Some(f) = &f {
                if procedure.is_some_and(|p| p != f.procedure) {
                    return Err(SqlError::new(
                        ErrorKind::WrongObjectType,
                        format!("{shown} is not a {kind}"),
                    ));
                }
            }
            if f.as_ref().is_none_or(|f| f.params.is_empty()) {
                self.triggers_using(name)?;
            }
            self.drop_func(&key, true)?;
        }
        let mut o = QueryOutput::command(match procedure {
            Some(true) => "DROP PROCEDURE",
            Some(false) => "DROP FUNCTION",
            None => "DROP ROUTINE",
        });
        o.notices = notices;
        Ok(o)
    }
}

/// Whether two definitions give the same result (a replacement may not
/// change it).
fn same_result(a: &PgFunc, b: &PgFunc) -> bool {
    let ty = |t: &str| crate::types::names::parse_type_name(t).ok();
    let outs = |f: &PgFunc| -> Vec<(String, Option<DataType>)> {
        f.out.iter().map(|o| (o.name.clone(), ty(&o.ty))).collect()
    };
    a.set == b.set
        && outs(a) == outs(b)
        && (ty(&a.returns) == ty(&b.returns)
            && (ty(&a.returns).is_some() || a.returns.eq_ignore_ascii_case(&b.returns)))
}

fn not_found(f: &PgFunc, n: usize) -> SqlError {
    SqlError::new(
        ErrorKind::UndefinedFunction,
        format!(
            "function {}({n} arguments) does not exist (it takes {})",
            f.name,
            f.params.len()
        ),
    )
    .with_fields(crate::error::ErrorFields {
        hint: Some(
            "No function matches the given name and argument types. You might need to add explicit type casts."
                .into(),
        ),
        ..Default::default()
    })
}

/// Each parameter's value for a call `f(args)` as an expression: the
/// positional arguments, then the named ones (`name => x`), then defaults.
pub(super) fn bind_call(f: &PgFunc, args: &[Option<String>]) -> Result<Vec<String>> {
    let gathered;
    let args = if f.variadic {
        gathered = variadic_args(f, args)?;
        &gathered[..]
    } else {
        args
    };
    let mut given: Vec<Option<String>> = vec![None; f.params.len()];
    let mut named = false;
    for (k, a) in args.iter().enumerate() {
        let Some(a) = a else {
            return Err(SqlError::syntax(
                "DEFAULT is not an argument of a function call",
            ));
        };
        let t = lex(a)?;
        if t.len() > 2 && (t[1].op("=>") || t[1].op(":=")) && t[0].k == K::Word {
            named = true;
            let at = f
                .params
                .iter()
                .position(|p| p.name[1..] == t[0].w)
                .ok_or_else(|| not_found(f, args.len()))?;
            given[at] = Some(a[t[2].s..].to_string());
            continue;
        }
        if named {
            return Err(SqlError::syntax(
                "positional argument cannot follow named argument",
            ));
        }
        if k >= f.params.len() {
            return Err(not_found(f, args.len()));
        }
        given[k] = Some(a.clone());
    }
    f.params
        .iter()
        .zip(given)
        .map(|(p, g)| {
            g.or_else(|| p.default.clone())
                .ok_or_else(|| not_found(f, args.len()))
        })
        .collect()
}

/// Whether an argument is named (`name => x`).
fn is_named(a: &str) -> bool {
    lex(a).is_ok_and(|t| t.len() > 2 && (t[1].op("=>") || t[1].op(":=")) && t[0].k == K::Word)
}

/// A call of a VARIADIC function with its variadic arguments as one:
/// `f(a, 1, 2, 3)` is `f(a, ARRAY[1, 2, 3])`; `f(a, VARIADIC arr)` passes
/// the array itself. With no variadic argument the parameter's default
/// applies (else the call binds to nothing, as in PostgreSQL).
pub(super) fn variadic_args(f: &PgFunc, args: &[Option<String>]) -> Result<Vec<Option<String>>> {
    let fixed = f.params.len().saturating_sub(1);
    let positional = args
        .iter()
        .take_while(|a| a.as_deref().is_some_and(|a| !is_named(a)))
        .count();
    let mut out: Vec<Option<String>> = args[..positional.min(fixed)].to_vec();
    if positional > fixed {
        let rest = &args[fixed..positional];
        let last = rest.last().and_then(|a| a.as_deref()).unwrap_or("");
        let t = lex(last)?;
        if rest.len() == 1 && t.len() > 1 && t[0].is("variadic") {
            out.push(Some(last[t[1].s..].to_string()));
        } else if rest
            .iter()
            .flatten()
            .any(|a| lex(a).is_ok_and(|t| t.first().is_some_and(|x| x.is("variadic"))))
        {
            return Err(SqlError::syntax(
                "VARIADIC must be the last argument, alone in its place",
            ));
        } else {
            let items: Vec<&str> = rest.iter().flatten().map(|a| a.as_str()).collect();
            out.push(Some(format!("ARRAY[{}]", items.join(", "))));
        }
    }
    out.extend(args[positional..].iter().cloned());
    Ok(out)
}

/// Whether calls of `f` inline into the calling statement (else they run:
/// `pg_call.rs`). Inlining is kept for the bodies it renders exactly:
/// expressions, IF / CASE, SELECT INTO and one query.
pub(super) fn inlinable(f: &PgFunc) -> bool {
    if f.is_trigger() || f.gives_rows() {
        return false;
    }
    let args: Vec<Option<String>> = f.params.iter().map(|_| Some("NULL".into())).collect();
    inline_pg(f, &args).is_ok()
}

/// A call of a function that runs, inside an expression:
/// `walden_routine('f', args cast to their types)` cast to the result type.
pub(super) fn routine_call(key: &str, f: &PgFunc, args: &[Option<String>]) -> Result<String> {
    let values = bind_call(f, args)?;
    let mut out = format!("CAST(walden_routine('{}'", key.replace('\'', "''"));
    for (p, v) in f.params.iter().zip(values) {
        out.push_str(", ");
        out.push_str(&funcs::cast_pg(&v, &p.ty));
    }
    out.push_str(&format!(") AS {})", f.returns));
    Ok(out)
}

/// A call `f(args)` of a PostgreSQL function as one SQL expression.
pub(super) fn inline_pg(f: &PgFunc, args: &[Option<String>]) -> Result<String> {
    let given = bind_call(f, args)?;
    let mut env = Env {
        pg: true,
        ..Env::default()
    };
    let mut bound = Vec::new();
    for (p, value) in f.params.iter().zip(given) {
        bound.push((p.name.clone(), funcs::cast_pg(&value, &p.ty)));
        env.types.insert(p.name.clone(), p.ty.clone());
    }
    let names = f.param_names();
    let params: Vec<String> = f.params.iter().map(|p| p.name.clone()).collect();
    let e = funcs::bind_args(env, bound, |env| {
        let e = match f.lang {
            Lang::Sql => {
                let text = sql_body(&f.body, &names)?;
                first_row(&funcs::subst(&text, &env)?)?
            }
            Lang::Plpgsql => {
                let stmts = parse_plpgsql(&f.body, &names)?;
                let refs: Vec<&TStmt> = stmts.iter().collect();
                funcs::run(&refs, env.clone())?
            }
        };
        let e = funcs::cast_pg(&e, &f.returns);
        if f.strict && !params.is_empty() {
            let nulls: Vec<String> = params
                .iter()
                .map(|p| {
                    format!(
                        "({}) IS NULL",
                        env.vars.get(p).map(String::as_str).unwrap_or("NULL")
                    )
                })
                .collect();
            return Ok(format!(
                "CASE WHEN {} THEN NULL ELSE {e} END",
                nulls.join(" OR ")
            ));
        }
        Ok(e)
    })?;
    Ok(e)
}

/// A query's first row's value as an expression (none: NULL), as a
/// function's result or `SELECT INTO` takes it: `SELECT x` alone is `x`,
/// else the query with `LIMIT 1` as a scalar subquery.
pub(super) fn first_row(q: &str) -> Result<String> {
    let t = lex(q)?;
    let mut depth = 0;
    let mut top = Vec::new();
    for x in &t {
        if x.op("(") || x.op("[") {
            depth += 1;
        } else if x.op(")") || x.op("]") {
            depth -= 1;
        } else if depth == 0 {
            top.push(x);
        }
    }
    let words = |ws: &[&str]| {
        top.iter()
            .any(|x| x.k == K::Word && ws.contains(&x.w.as_str()))
    };
    if t.first().is_some_and(|x| x.is("select"))
        && !words(&[
            "from",
            "where",
            "group",
            "having",
            "order",
            "limit",
            "offset",
            "fetch",
            "union",
            "intersect",
            "except",
            "distinct",
            "window",
            "into",
            "all",
            "as",
        ])
        && !top.iter().any(|x| x.op(","))
        && t.len() > 1
    {
        return Ok(format!("({})", &q[t[1].s..]));
    }
    if words(&[
        "limit",
        "offset",
        "fetch",
        "union",
        "intersect",
        "except",
        "for",
    ]) {
        return Ok(format!("(SELECT * FROM ({q}) AS walden_q LIMIT 1)"));
    }
    Ok(format!("({q} LIMIT 1)"))
}

/// A LANGUAGE sql body that inlines: one query, its parameter references
/// written `@name`.
fn sql_body(body: &str, names: &[String]) -> Result<String> {
    let t = lex(body)?;
    let stmts = t.iter().filter(|x| x.op(";")).count();
    let last_semi = t.last().is_some_and(|x| x.op(";"));
    if stmts > usize::from(last_semi) {
        return Err(SqlError::unsupported(
            "a LANGUAGE sql function of several statements",
        ));
    }
    let Some(first) = t.first() else {
        return Err(SqlError::unsupported("an empty LANGUAGE sql function"));
    };
    if !matches!(first.w.as_str(), "select" | "values" | "with") {
        return Err(SqlError::unsupported(
            "a LANGUAGE sql function that changes data",
        ));
    }
    let end = if last_semi { t.len() - 1 } else { t.len() };
    rewrite_params(body, &t[..end], names)
}

/// A LANGUAGE sql body that runs: its statements (split at top-level
/// `;`), each with its parameter references written `@name`. The last
/// must give rows (a query, or a change with RETURNING).
pub(super) fn sql_statements(body: &str, names: &[String], rows: bool) -> Result<Vec<String>> {
    let t = lex(body)?;
    let mut out = Vec::new();
    let mut start = 0;
    let mut depth = 0i32;
    for k in 0..=t.len() {
        let end = k == t.len();
        if !end {
            if t[k].op("(") || t[k].op("[") {
                depth += 1;
            } else if t[k].op(")") || t[k].op("]") {
                depth -= 1;
            }
        }
        if end || (depth == 0 && t[k].op(";")) {
            if k > start {
                out.push(rewrite_params(body, &t[start..k], names)?);
            }
            start = k + 1;
        }
    }
    let Some(last) = out.last() else {
        return Err(SqlError::unsupported("an empty LANGUAGE sql function"));
    };
    if !rows {
        return Ok(out);
    }
    let lt = lex(last)?;
    let gives_rows = lt
        .first()
        .is_some_and(|x| matches!(x.w.as_str(), "select" | "values" | "with" | "table"))
        || lt.iter().any(|x| x.is("returning"));
    if !gives_rows {
        return Err(SqlError::new(
            ErrorKind::InvalidFunctionDefinition,
            "return type mismatch in function: its final statement must be SELECT or INSERT/UPDATE/DELETE RETURNING",
        ));
    }
    Ok(out)
}

/// The statement the tokens `t` of `body` span, with each parameter
/// reference (`name`, `$n`) written `@name`.
fn rewrite_params(
    body: &str,
    t: &[crate::front::plpgsql::Tok],
    names: &[String],
) -> Result<String> {
    let Some(first) = t.first() else {
        return Ok(String::new());
    };
    // A column takes precedence over a parameter of its name in a SQL
    // function: with a FROM, a bare parameter name is ambiguous here.
    let has_from = t
        .iter()
        .any(|x| x.is("from") || x.is("update") || x.is("returning") || x.is("join"));
    let mut out = String::new();
    let mut prev = first.s;
    for k in 0..t.len() {
        let x = &t[k];
        out.push_str(&body[prev..x.s]);
        prev = x.e;
        let before_dot = k > 0 && t[k - 1].op(".");
        let after = t.get(k + 1);
        if x.k == K::Word
            && names.contains(&x.w)
            && !before_dot
            && !after.is_some_and(|a| a.op("(") || a.op("."))
        {
            if has_from {
                return Err(SqlError::unsupported(format!(
                    "parameter name \"{}\" in a LANGUAGE sql statement that reads or writes a table (a column of that name would take precedence): write ${}",
                    x.w,
                    names.iter().position(|n| *n == x.w).unwrap_or(0) + 1
                )));
            }
            out.push('@');
            out.push_str(&x.w);
        } else if x.k == K::Param {
            let n: usize = x.w.parse().unwrap_or(0);
            match n.checked_sub(1).and_then(|n| names.get(n)) {
                Some(p) => {
                    out.push('@');
                    out.push_str(p);
                }
                None => {
                    return Err(SqlError::new(
                        ErrorKind::UndefinedColumn,
                        format!("there is no parameter ${n}"),
                    ))
                }
            }
        } else {
            out.push_str(&body[x.s..x.e]);
        }
    }
    Ok(out)
}

/// A statement that is one function call: `SELECT f(args) [[AS] c] [;]`
/// (name lower case, its arguments' texts, the column's name if given).
#[allow(clippy::type_complexity)]
pub(super) fn single_call(text: &str) -> Option<(String, Vec<Option<String>>, Option<String>)> {
    let t = lex(text).ok()?;
    if !t.first()?.is("select") {
        return None;
    }
    let mut i = 1;
    let mut name = t.get(i).filter(|x| x.k == K::Word)?.w.clone();
    i += 1;
    while t.get(i).is_some_and(|x| x.op(".")) {
        name = t
            .get(i + 1)
            .filter(|x| x.k == K::Word || x.k == K::QIdent)?
            .w
            .clone();
        i += 2;
    }
    if !t.get(i)?.op("(") {
        return None;
    }
    let open = i;
    let mut depth = 0;
    let mut args = Vec::new();
    let mut start = open + 1;
    let close;
    loop {
        let x = t.get(i)?;
        if x.op("(") || x.op("[") {
            depth += 1;
        } else if x.op(")") || x.op("]") {
            depth -= 1;
            if depth == 0 {
                if i > start {
                    args.push(Some(text[t[start].s..t[i - 1].e].to_string()));
                }
                close = i;
                break;
            }
        } else if x.op(",") && depth == 1 {
            if i == start {
                return None;
            }
            args.push(Some(text[t[start].s..t[i - 1].e].to_string()));
            start = i + 1;
        }
        i += 1;
    }
    let mut j = close + 1;
    let mut column = None;
    if t.get(j).is_some_and(|x| x.is("as")) {
        j += 1;
    }
    if let Some(x) = t.get(j).filter(|x| x.k == K::Word || x.k == K::QIdent) {
        column = Some(x.w.clone());
        j += 1;
    }
    if t.get(j).is_some_and(|x| x.op(";")) {
        j += 1;
    }
    if j != t.len() {
        return None;
    }
    // A DEFAULT argument is T-SQL's; the inliner reports it.
    if args
        .iter()
        .flatten()
        .any(|a| a.trim().eq_ignore_ascii_case("default"))
    {
        return None;
    }
    Some((name, args, column))
}
