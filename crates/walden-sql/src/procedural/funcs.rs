//! Scalar T-SQL functions: `CREATE | ALTER | CREATE OR ALTER | DROP
//! FUNCTION`. A definition (its CREATE text) is a row of [`FUNC_TABLE`],
//! written like a procedure's (logged, recovered, replicated and undone on
//! rollback as other rows are).
//!
//! A call is inlined: before a statement is compiled, each call
//! `[schema.]f(args)` of a stored function becomes one SQL expression, the
//! function's body run symbolically over its parameters (DECLARE, SET,
//! `SELECT @v = ...`, IF/ELSE, BEGIN/END and RETURN become CASE
//! expressions and scalar subqueries), each parameter the argument cast to
//! its type and the result cast to the RETURNS type. So a call in a WHERE
//! clause is planned with the query and costs no procedure call per row.
//! A body with other statements (WHILE, EXEC, table variables ...) is
//! refused at CREATE with 0A000.

use super::*;
use crate::front::{FuncDef, ProcMode};
use sqlparser::dialect::MsSqlDialect;
use sqlparser::tokenizer::{Token, Tokenizer};
use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// The table that holds the database's functions (created with the first).
pub use crate::front::plpgsql::FUNC_TABLE;

/// Bumped by every CREATE / ALTER / DROP FUNCTION: sessions drop the
/// statements they compiled before (a call in them may mean another body).
static EPOCH: AtomicU64 = AtomicU64::new(0);

/// The names functions have had in this process (a superset: a dropped or
/// rolled back one stays): which plain statements may call one. `None`
/// until read from the table.
static NAMES: Mutex<Option<HashSet<String>>> = Mutex::new(None);

/// Calls inlined inside one another at most (SQL Server's nesting limit).
const MAX_DEPTH: usize = 32;

pub(super) fn epoch() -> u64 {
    EPOCH.load(Ordering::Relaxed)
}

fn remember(name: &str) {
    if let Ok(mut n) = NAMES.lock() {
        n.get_or_insert_with(HashSet::new).insert(name.to_string());
    }
    EPOCH.fetch_add(1, Ordering::Relaxed);
}

/// Whether a function of this name may exist (a superset, as `NAMES`).
pub(super) fn known_name(name: &str) -> bool {
    NAMES
        .lock()
        .ok()
        .and_then(|n| n.as_ref().map(|n| n.contains(name)))
        .unwrap_or(true)
}

/// Whether a plain statement (not a T-SQL batch) may call a stored
/// function, so that it must run through the runtime, which inlines it.
pub fn calls_user_function<H: Host>(host: &mut H, sql: &str) -> bool {
    // Looked at under the lock when known (this runs for every simple
    // query: the set is not copied, nor the text lowered when it is empty).
    if let Ok(g) = NAMES.lock() {
        if let Some(names) = g.as_ref() {
            return calls_one_of(names, sql);
        }
    }
    match load_names(host) {
        Some(n) => {
            let calls = calls_one_of(&n, sql);
            if let Ok(mut g) = NAMES.lock() {
                g.get_or_insert_with(HashSet::new).extend(n);
            }
            calls
        }
        None => false,
    }
}

/// Whether `sql` calls a function named in `names` (`name(`, not part of
/// a longer word).
fn calls_one_of(names: &HashSet<String>, sql: &str) -> bool {
    if names.is_empty() {
        return false;
    }
    let lower = sql.to_ascii_lowercase();
    names.iter().any(|n| {
        lower.match_indices(n.as_str()).any(|(at, _)| {
            lower[at + n.len()..].trim_start().starts_with('(')
                && !lower[..at]
                    .chars()
                    .last()
                    .is_some_and(|c| c.is_alphanumeric() || c == '_')
        })
    })
}

/// The stored functions' names; `None` when they cannot be read now (a
/// failed transaction).
fn load_names<H: Host>(host: &mut H) -> Option<HashSet<String>> {
    let c = host
        .parse(&format!(
            "SELECT to_regclass('public.{FUNC_TABLE}') IS NOT NULL"
        ))
        .ok()?;
    let o = host.run(&c, &[]).ok()?;
    if o.rows.first().and_then(|r| r.first()) != Some(&Value::Bool(true)) {
        return Some(HashSet::new());
    }
    let c = host
        .parse(&format!("SELECT name FROM public.{FUNC_TABLE}"))
        .ok()?;
    let o = host.run(&c, &[]).ok()?;
    Some(
        o.rows
            .into_iter()
            .filter_map(|r| r.into_iter().next())
            .map(|v| super::overload::key_name(&v.to_string()).to_string())
            .collect(),
    )
}

fn not_found(name: &str) -> SqlError {
    SqlError::new(
        ErrorKind::UndefinedFunction,
        format!("Cannot find either column \"dbo\" or the user-defined function or aggregate \"dbo.{name}\", or the name is ambiguous."),
    )
}

impl<'h, H: Host> Runner<'h, H> {
    /// A function's definition text, if there is one.
    /// The definition stored under `key` (a name, or an overload's
    /// `name(types)`); for a name whose definitions are all overloads, the
    /// one without arguments (a trigger function's).
    pub(super) fn func_definition(&mut self, key: &str) -> Result<Option<String>> {
        let q = format!("SELECT definition FROM public.{FUNC_TABLE} WHERE name = $1");
        let found = match self.fixed(&q, &[Value::text(key)]) {
            Ok(o) => o
                .rows
                .into_iter()
                .next()
                .and_then(|r| r.into_iter().next())
                .map(|v| v.to_string()),
            Err(e) if e.kind == ErrorKind::UndefinedTable => return Ok(None),
            Err(e) => return Err(e),
        };
        if found.is_some() || key.contains('(') {
            return Ok(found);
        }
        Ok(self
            .pg_overloads(key)?
            .into_iter()
            .find(|(_, f)| f.params.is_empty())
            .and_then(|(k, _)| {
                self.func_definitions(key)
                    .ok()?
                    .into_iter()
                    .find(|d| d.key == k)
                    .map(|d| d.text)
            }))
    }

    pub(super) fn create_func(&mut self, def: &FuncDef) -> Result<()> {
        let exists = self.func_definition(&def.name)?.is_some();
        match def.mode {
            ProcMode::Create if exists => {
                return Err(SqlError::new(
                    ErrorKind::DuplicateObject,
                    format!(
                        "There is already an object named '{}' in the database.",
                        def.name
                    ),
                ))
            }
            ProcMode::Alter if !exists => return Err(not_found(&def.name)),
            _ => {}
        }
        for p in &def.params {
            crate::types::names::parse_type_name(&sized(&p.ty))?;
        }
        if def.returns.eq_ignore_ascii_case("table") {
            // An inline table-valued function: its query must parse.
            let args: Vec<Option<String>> =
                def.params.iter().map(|_| Some("NULL".into())).collect();
            let q = tvf_query(def, &args)?;
            self.host
                .parse(&format!("SELECT * FROM {q} AS walden_tvf"))?;
            self.store_func(&def.name, &crate::front::func_text(def))?;
            self.emit(QueryOutput::command(match def.mode {
                ProcMode::Alter => "ALTER FUNCTION",
                _ => "CREATE FUNCTION",
            }));
            return Ok(());
        }
        crate::types::names::parse_type_name(&sized(&def.returns))?;
        // The body must be one Walden can inline (refused now, not at a call).
        let args: Vec<Option<String>> = def.params.iter().map(|_| Some("NULL".into())).collect();
        inline(def, &args)?;
        self.store_func(&def.name, &crate::front::func_text(def))?;
        self.emit(QueryOutput::command(match def.mode {
            ProcMode::Alter => "ALTER FUNCTION",
            _ => "CREATE FUNCTION",
        }));
        Ok(())
    }

    /// Writes a function's definition under its key (its row, made with
    /// the first).
    pub(super) fn store_func(&mut self, key: &str, text: &str) -> Result<()> {
        self.fixed(
            &format!(
                "CREATE TABLE IF NOT EXISTS public.{FUNC_TABLE} (name text PRIMARY KEY, definition text NOT NULL)"
            ),
            &[],
        )?;
        self.fixed(
            &format!(
                "INSERT INTO public.{FUNC_TABLE} (name, definition) VALUES ($1, $2) \
                 ON CONFLICT (name) DO UPDATE SET definition = EXCLUDED.definition"
            ),
            &[Value::text(key), Value::text(text)],
        )?;
        remember(super::overload::key_name(key));
        Ok(())
    }

    pub(super) fn drop_func(&mut self, name: &str, if_exists: bool) -> Result<()> {
        let gone = match self.fixed(
            &format!("DELETE FROM public.{FUNC_TABLE} WHERE name = $1"),
            &[Value::text(name)],
        ) {
            Ok(o) => tag_rows(&o.tag).unwrap_or(0) > 0,
            Err(e) if e.kind == ErrorKind::UndefinedTable => false,
            Err(e) => return Err(e),
        };
        if !gone && !if_exists {
            return Err(SqlError::new(
                ErrorKind::UndefinedFunction,
                format!(
                    "Cannot drop the function '{name}', because it does not exist or you do not have permission."
                ),
            ));
        }
        EPOCH.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// `text` with its calls of stored functions inlined (itself when it
    /// calls none).
    pub(super) fn expand_calls(&mut self, text: &str) -> Result<String> {
        let names = NAMES.lock().ok().and_then(|n| n.clone());
        let names = match names {
            Some(n) => n,
            None => {
                let n = load_names(&mut *self.host).unwrap_or_default();
                if let Ok(mut g) = NAMES.lock() {
                    g.get_or_insert_with(HashSet::new).extend(n.iter().cloned());
                }
                n
            }
        };
        if names.is_empty() {
            return Ok(text.to_string());
        }
        let mut text = text.to_string();
        // A PostgreSQL function inlined once in this text runs at its
        // further calls: a recursive body would inline without end.
        let mut inlined: HashSet<String> = HashSet::new();
        for _ in 0..=MAX_DEPTH {
            let toks = tokens(&text)?;
            let Some((start, name, args, end)) = next_call(&toks, &names) else {
                return Ok(text);
            };
            let defs = self.func_definitions(&name)?;
            let Some(first) = defs.first() else {
                // A name a dropped function had: the planner reports it.
                return Ok(text);
            };
            let def = first.text.clone();
            // PostgreSQL's: the overload the arguments choose.
            let pg: Vec<(String, crate::front::plpgsql::PgFunc)> = defs
                .iter()
                .filter_map(|d| {
                    crate::front::plpgsql::parse_pg_function(&d.text).map(|f| (d.key.clone(), f))
                })
                .collect();
            let pg_call = !pg.is_empty();
            let (key, chosen) = if pg.is_empty() {
                (name.clone(), None)
            } else {
                let (k, f) = self.choose(&name, pg, &args)?;
                (k, Some(f))
            };
            // A function in FROM, or one that gives rows, is a
            // set-returning call (`pg_rows.rs`), written without the
            // parentheses around an expression.
            let mut bare = false;
            let body = match chosen {
                Some(f) if f.procedure => {
                    return Err(SqlError::new(
                        ErrorKind::WrongObjectType,
                        format!("{name}() is a procedure"),
                    )
                    .with_fields(crate::error::ErrorFields {
                        hint: Some("To call a procedure, use CALL.".into()),
                        ..Default::default()
                    }))
                }
                Some(f) if f.gives_rows() || in_from(&toks, start) => {
                    bare = true;
                    self.routine_set_call(&key, &f, &args)?
                }
                Some(f) if !inlined.contains(&key) && super::pg_funcs::inlinable(&f) => {
                    inlined.insert(key.clone());
                    super::pg_funcs::inline_pg(&f, &args)?
                }
                Some(f) => super::pg_funcs::routine_call(&key, &f, &args)?,
                None => {
                    let stmts = self.body(&def)?;
                    let Some(TStmt::CreateFunc(f)) = stmts.first() else {
                        return Err(SqlError::internal(
                            "a stored function definition does not parse",
                        ));
                    };
                    if f.returns.eq_ignore_ascii_case("table") {
                        if !in_from(&toks, start) {
                            return Err(SqlError::new(
                                ErrorKind::UndefinedFunction,
                                format!("{name} is a table-valued function: it is called in FROM"),
                            ));
                        }
                        bare = true;
                        let q = tvf_query(f, &args)?;
                        if has_alias(&toks, end) {
                            q
                        } else {
                            format!("{q} AS {name}")
                        }
                    } else {
                        inline(f, &args)?
                    }
                }
            };
            // A PostgreSQL call that is a whole select-list item names its
            // column after the function (the inlined expression, a CAST,
            // would be named after the type).
            let label =
                !bare && pg_call && select_item(&toks, start, end) && !has_alias(&toks, end);
            let mut out = String::new();
            for t in &toks[..start] {
                out.push_str(&t.to_string());
            }
            if bare {
                out.push_str(&body);
            } else {
                out.push('(');
                out.push_str(&body);
                out.push(')');
            }
            if label {
                out.push_str(&format!(" AS \"{}\"", name.replace('"', "\"\"")));
            }
            for t in &toks[end..] {
                out.push_str(&t.to_string());
            }
            text = out;
        }
        Err(SqlError::new(
            ErrorKind::StackDepth,
            format!(
                "Maximum stored procedure, function, trigger, or view nesting level exceeded (limit {MAX_DEPTH})."
            ),
        ))
    }
}

fn tokens(text: &str) -> Result<Vec<Token>> {
    Tokenizer::new(&MsSqlDialect {}, text)
        .with_unescape(false)
        .tokenize()
        .map_err(|e| SqlError::syntax(format!("syntax error: {e}")))
}

/// Whether the call that starts at token `start` is an item of a FROM
/// clause (after FROM, JOIN, LATERAL, APPLY, or a comma of a FROM list).
fn in_from(toks: &[Token], start: usize) -> bool {
    scan_back(toks, start, |word, first| match word {
        "from" | "join" | "lateral" | "apply" => Some(true),
        "on" | "using" if !first => Some(true),
        "select" | "where" | "group" | "by" | "having" | "order" | "limit" | "offset"
        | "values" | "set" | "returning" | "window" | "into" | "on" | "using" | "when" | "then"
        | "else" | "and" | "or" | "not" | "return" | "in" | "is" | "like" | "between" | "case"
        | "distinct" | "all" | "any" | "some" | "exists" | "array" => Some(false),
        _ if first => Some(false),
        _ => None,
    })
}

/// Walks back from token `start` over its parenthesis level to the word
/// that decides what the item there is. `decide` gets each unquoted word at
/// that level, lower-cased, and whether it is the first token before the
/// item; it answers, or `None` to look further back. A comma right before
/// the item is passed over (an item of a list); any other first token, an
/// unmatched `(` or the text's start is `false`.
fn scan_back(toks: &[Token], start: usize, decide: impl Fn(&str, bool) -> Option<bool>) -> bool {
    let mut k = start;
    let mut depth = 0i32;
    let mut first = true;
    while k > 0 {
        k -= 1;
        let t = &toks[k];
        if matches!(t, Token::Whitespace(_)) {
            continue;
        }
        let was_first = std::mem::replace(&mut first, false);
        match t {
            Token::RParen => depth += 1,
            Token::LParen if depth == 0 => return false,
            Token::LParen => depth -= 1,
            Token::Comma if was_first => {}
            Token::Word(w) if depth == 0 && w.quote_style.is_none() => {
                if let Some(answer) = decide(&w.value.to_ascii_lowercase(), was_first) {
                    return answer;
                }
            }
            _ if was_first => return false,
            _ => {}
        }
    }
    false
}

fn skip_ws(toks: &[Token], mut k: usize) -> usize {
    while matches!(toks.get(k), Some(Token::Whitespace(_))) {
        k += 1;
    }
    k
}

/// The first call of a function in `names`: where it starts, its name, its
/// arguments (`None` for DEFAULT) and where it ends (past its `)`).
#[allow(clippy::type_complexity)]
fn next_call(
    toks: &[Token],
    names: &HashSet<String>,
) -> Option<(usize, String, Vec<Option<String>>, usize)> {
    let mut i = 0;
    while i < toks.len() {
        let Token::Word(w) = &toks[i] else {
            i += 1;
            continue;
        };
        // The start of a dotted name (not after a `.`).
        let after_dot = i > 0 && matches!(toks[i - 1], Token::Period);
        let mut last = w.value.to_ascii_lowercase();
        let mut j = i + 1;
        while matches!(toks.get(j), Some(Token::Period)) {
            match toks.get(j + 1) {
                Some(Token::Word(n)) => {
                    last = n.value.to_ascii_lowercase();
                    j += 2;
                }
                _ => break,
            }
        }
        let open = skip_ws(toks, j);
        if after_dot
            || last.starts_with('@')
            || !names.contains(&last)
            || !matches!(toks.get(open), Some(Token::LParen))
        {
            i = j.max(i + 1);
            continue;
        }
        // The arguments, split at top-level commas.
        let mut args = Vec::new();
        let mut cur = String::new();
        let mut depth = 0;
        let mut k = open + 1;
        loop {
            let t = toks.get(k)?;
            match t {
                Token::LParen => depth += 1,
                Token::RParen if depth == 0 => break,
                Token::RParen => depth -= 1,
                Token::Comma if depth == 0 => {
                    args.push(std::mem::take(&mut cur));
                    k += 1;
                    continue;
                }
                _ => {}
            }
            cur.push_str(&t.to_string());
            k += 1;
        }
        if !(args.is_empty() && cur.trim().is_empty()) {
            args.push(cur);
        }
        let args = args
            .into_iter()
            .map(|a| {
                let a = a.trim().to_string();
                (!a.eq_ignore_ascii_case("default")).then_some(a)
            })
            .collect();
        return Some((i, last, args, k + 1));
    }
    None
}

/// Whether the call from token `start` to `end` is a whole item of a
/// select list: SELECT (or a comma of its list) before it, and after it a
/// comma, the list's end or a clause that ends it.
fn select_item(toks: &[Token], start: usize, end: usize) -> bool {
    let after = match toks.get(skip_ws(toks, end)) {
        None | Some(Token::SemiColon) | Some(Token::Comma) | Some(Token::RParen) => true,
        Some(Token::Word(w)) if w.quote_style.is_none() => matches!(
            w.value.to_ascii_lowercase().as_str(),
            "from"
                | "into"
                | "where"
                | "union"
                | "except"
                | "intersect"
                | "order"
                | "group"
                | "having"
                | "limit"
                | "offset"
                | "fetch"
                | "window"
        ),
        _ => false,
    };
    if !after {
        return false;
    }
    // Back to SELECT over the list's items at this parenthesis level.
    scan_back(toks, start, |word, first| match word {
        "select" => Some(true),
        "all" | "distinct" if first => None,
        _ if first => Some(false),
        "from" | "where" | "group" | "by" | "having" | "order" | "limit" | "values" | "set"
        | "returning" | "on" | "using" | "into" => Some(false),
        _ => None,
    })
}

/// Whether an alias follows the call that ends before token `end`.
fn has_alias(toks: &[Token], end: usize) -> bool {
    match toks.get(skip_ws(toks, end)) {
        Some(Token::Word(w)) => {
            w.quote_style.is_some()
                || w.keyword == sqlparser::keywords::Keyword::AS
                || w.keyword == sqlparser::keywords::Keyword::NoKeyword
        }
        _ => false,
    }
}

/// An inline table-valued function's query over these arguments, in
/// parentheses (a derived table).
fn tvf_query(f: &FuncDef, args: &[Option<String>]) -> Result<String> {
    if args.len() > f.params.len() {
        return Err(SqlError::new(
            ErrorKind::UndefinedFunction,
            format!(
                "Procedure or function {} has too many arguments specified.",
                f.name
            ),
        ));
    }
    let mut env = Env::default();
    for (k, p) in f.params.iter().enumerate() {
        let value = match args.get(k).cloned().flatten() {
            Some(a) => a,
            None => p.default.clone().unwrap_or_else(|| "NULL".into()),
        };
        env.vars.insert(p.name.clone(), cast(&value, &p.ty));
        env.types.insert(p.name.clone(), p.ty.clone());
    }
    let body = f.body.trim().trim_end_matches(';').trim_end();
    let q = match body.get(..6) {
        Some(r) if r.eq_ignore_ascii_case("return") => body[6..].trim(),
        _ => body,
    };
    let q = subst(q, &env)?;
    // `(query)` as written is kept; anything else is put in parentheses.
    let whole = q.starts_with('(') && {
        let mut depth = 0;
        let mut closes_at = 0;
        for (k, c) in q.char_indices() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        closes_at = k;
                        break;
                    }
                }
                _ => {}
            }
        }
        closes_at + 1 == q.len()
    };
    Ok(if whole { q } else { format!("({q})") })
}

/// A T-SQL declared type: a string or binary type without a length is
/// one character or byte long, as SQL Server declares it.
pub(super) fn sized(ty: &str) -> String {
    let t = ty.trim();
    match t.to_ascii_lowercase().as_str() {
        "varchar" | "nvarchar" | "char" | "nchar" | "binary" | "varbinary" => format!("{t}(1)"),
        _ => t.to_string(),
    }
}

fn cast(e: &str, ty: &str) -> String {
    format!("CAST(({e}) AS {})", sized(ty))
}

/// The function's result for these arguments as one SQL expression.
fn inline(f: &FuncDef, args: &[Option<String>]) -> Result<String> {
    if args.len() > f.params.len() {
        return Err(SqlError::new(
            ErrorKind::UndefinedFunction,
            format!(
                "Procedure or function {} has too many arguments specified.",
                f.name
            ),
        ));
    }
    let mut env = Env::default();
    let mut bound = Vec::new();
    for (k, p) in f.params.iter().enumerate() {
        let value = match args.get(k).cloned().flatten() {
            Some(a) => a,
            // DEFAULT, or (as Babelfish and the corpus do) left out.
            None => p.default.clone().unwrap_or_else(|| "NULL".into()),
        };
        bound.push((p.name.clone(), cast(&value, &p.ty)));
        env.types.insert(p.name.clone(), p.ty.clone());
    }
    let body = crate::front::parse_batch(&f.body)?;
    let stmts: Vec<&TStmt> = body.iter().collect();
    let e = bind_args(env, bound, |env| run(&stmts, env))?;
    Ok(cast(&e, &f.returns))
}

/// Aliases of bound arguments, unique in the process.
static ALIAS: AtomicU64 = AtomicU64::new(0);

/// The body's expression (`build`) over the arguments (`(parameter, value)`).
/// Where the body reads a table, an argument written into it could be
/// captured by the body's own columns (`f(a)` with `... FROM t WHERE a =
/// @p`): then the arguments are bound once, in a derived table the body's
/// subqueries reach by its alias; elsewhere they are written in place.
pub(super) fn bind_args(
    mut env: Env,
    bound: Vec<(String, String)>,
    build: impl FnOnce(Env) -> Result<String>,
) -> Result<String> {
    if bound.is_empty() {
        return build(env);
    }
    let alias = format!("walden_a{}", ALIAS.fetch_add(1, Ordering::Relaxed));
    for (k, (name, _)) in bound.iter().enumerate() {
        env.vars.insert(name.clone(), format!("{alias}.p{k}"));
    }
    let e = build(env)?;
    let reads = crate::front::plpgsql::lex(&e)
        .map(|t| t.iter().any(|x| x.is("select")))
        .unwrap_or(true);
    if !reads {
        let mut out = e;
        for (k, (_, v)) in bound.iter().enumerate().rev() {
            out = out.replace(&format!("{alias}.p{k}"), &format!("({v})"));
        }
        return Ok(out);
    }
    let cols: Vec<String> = bound
        .iter()
        .enumerate()
        .map(|(k, (_, v))| format!("{v} AS p{k}"))
        .collect();
    Ok(format!(
        "(SELECT {e} FROM (SELECT {}) AS {alias})",
        cols.join(", ")
    ))
}

#[derive(Clone, Default)]
pub(super) struct Env {
    /// Each variable's value as an expression.
    pub vars: HashMap<String, String>,
    pub types: HashMap<String, String>,
    /// A PostgreSQL function (its types as PostgreSQL reads them).
    pub pg: bool,
}

impl Env {
    fn cast(&self, e: &str, ty: &str) -> String {
        if self.pg {
            cast_pg(e, ty)
        } else {
            cast(e, ty)
        }
    }
}

/// A PL/pgSQL expression is a query's select list (`RETURN max(a) FROM
/// t` is allowed): as one SQL expression.
fn pg_expr(e: String, env: &Env) -> Result<String> {
    if !env.pg {
        return Ok(e);
    }
    super::pg_funcs::first_row(&format!("SELECT {e}"))
}

/// A cast to a type as PostgreSQL reads its name.
pub(super) fn cast_pg(e: &str, ty: &str) -> String {
    format!("CAST(({e}) AS {ty})")
}

fn refuse_in(what: &str, env: &Env) -> SqlError {
    if env.pg {
        return SqlError::unsupported(format!(
            "{what} in a function body (Walden inlines a PL/pgSQL function whose body is DECLARE, :=, IF / ELSIF / ELSE, CASE, SELECT ... INTO and RETURN)"
        ));
    }
    refuse(what)
}

fn refuse(what: &str) -> SqlError {
    SqlError::unsupported(format!(
        "{what} in a function body (Walden runs a scalar function's DECLARE, SET, SELECT @v = ..., IF/ELSE, BEGIN/END and RETURN)"
    ))
}

/// The value the statements return, run from `env`.
pub(super) fn run(stmts: &[&TStmt], mut env: Env) -> Result<String> {
    let Some((first, rest)) = stmts.split_first() else {
        // PostgreSQL: a path without RETURN is an error when it runs
        // (2F005), which the runtime reports.
        if env.pg {
            return Err(refuse_in("a path that ends without RETURN", &env));
        }
        return Ok("NULL".into());
    };
    match first {
        TStmt::Declare(vars) => {
            for v in vars {
                if v.ty
                    .get(..5)
                    .is_some_and(|t| t.eq_ignore_ascii_case("table"))
                {
                    return Err(refuse("a table variable"));
                }
                let value = match &v.init {
                    Some(e) => env.cast(&pg_expr(subst(e, &env)?, &env)?, &v.ty),
                    None => env.cast("NULL", &v.ty),
                };
                env.vars.insert(v.name.clone(), value);
                env.types.insert(v.name.clone(), v.ty.clone());
            }
            run(rest, env)
        }
        TStmt::Assign { var, op, expr } => {
            let ty = env.types.get(var).cloned().ok_or_else(|| undeclared(var))?;
            let e = pg_expr(subst(expr, &env)?, &env)?;
            let cur = env.vars.get(var).cloned().unwrap_or_else(|| "NULL".into());
            let string = crate::types::names::parse_type_name(&sized(&ty))
                .map(|t| is_string(&t))
                .unwrap_or(false);
            let value = match op {
                None => e,
                Some('+') if string => format!("({cur}) || ({e})"),
                Some(c) => format!("({cur}) {c} ({e})"),
            };
            let value = env.cast(&value, &ty);
            env.vars.insert(var.clone(), value);
            run(rest, env)
        }
        TStmt::SelectInto {
            vars,
            query,
            strict: false,
        } => {
            let [var] = vars.as_slice() else {
                return Err(refuse_in("SELECT INTO several variables", &env));
            };
            if !query
                .trim_start()
                .to_ascii_lowercase()
                .starts_with("select")
            {
                return Err(refuse_in("a statement that changes data", &env));
            }
            let ty = env.types.get(var).cloned().ok_or_else(|| undeclared(var))?;
            let q = subst(query, &env)?;
            // No row sets NULL; several take the first (PostgreSQL's rule).
            let value = super::pg_funcs::first_row(&q)?;
            let value = env.cast(&value, &ty);
            env.vars.insert(var.clone(), value);
            run(rest, env)
        }
        TStmt::SelectAssign { vars, query } => {
            let [var] = vars.as_slice() else {
                return Err(refuse("SELECT assigning several variables"));
            };
            let ty = env.types.get(var).cloned().ok_or_else(|| undeclared(var))?;
            let q = subst(query, &env)?;
            let cur = env.vars.get(var).cloned().unwrap_or_else(|| "NULL".into());
            // No row leaves the variable as it was.
            let value = format!("CASE WHEN EXISTS ({q}) THEN ({q}) ELSE ({cur}) END");
            env.vars.insert(var.clone(), cast(&value, &ty));
            run(rest, env)
        }
        TStmt::If { cond, then, els } => {
            let c = pg_expr(subst(cond, &env)?, &env)?;
            let mut a: Vec<&TStmt> = vec![then.as_ref()];
            a.extend_from_slice(rest);
            let mut b: Vec<&TStmt> = els.iter().map(|e| e.as_ref()).collect();
            b.extend_from_slice(rest);
            let a = run(&a, env.clone())?;
            let b = run(&b, env)?;
            Ok(format!("CASE WHEN {c} THEN {a} ELSE {b} END"))
        }
        TStmt::Block(b) => {
            let mut all: Vec<&TStmt> = b.iter().collect();
            all.extend_from_slice(rest);
            run(&all, env)
        }
        TStmt::Return(Some(e)) => pg_expr(subst(e, &env)?, &env),
        TStmt::Return(None) if env.pg => Err(SqlError::syntax(
            "RETURN cannot have a parameter in function returning void",
        )),
        TStmt::Return(None) => Err(SqlError::syntax(
            "The last statement included within a function must be a return statement.",
        )),
        TStmt::While { .. } => Err(refuse_in("WHILE / LOOP", &env)),
        TStmt::TryCatch(..) => Err(refuse("TRY/CATCH")),
        TStmt::Exec(_) => Err(refuse("EXEC")),
        TStmt::Print(_) => Err(refuse("PRINT")),
        TStmt::Sql(s) if !env.pg => Err(refuse(&format!(
            "statement {}",
            s.split_whitespace().next().unwrap_or("")
        ))),
        _ if env.pg => Err(refuse_in(
            match first {
                TStmt::Sql(_) => "a SQL statement",
                TStmt::ForInt { .. } => "FOR",
                TStmt::Perform(_) => "PERFORM",
                TStmt::Raise(_) => "RAISE",
                TStmt::Execute { .. } => "EXECUTE",
                TStmt::Guarded { .. } => "an EXCEPTION block",
                TStmt::Assert(..) => "ASSERT",
                _ => "this statement",
            },
            &env,
        )),
        _ => Err(refuse("this statement")),
    }
}

/// `e` with the body's variables replaced by their values; SCOPE_IDENTITY()
/// is NULL in a function (its own scope, where nothing is inserted).
pub(super) fn subst(e: &str, env: &Env) -> Result<String> {
    let toks = tokens(e)?;
    let mut out = String::with_capacity(e.len());
    let mut i = 0;
    while i < toks.len() {
        let t = &toks[i];
        if let Token::Word(w) = t {
            let lower = w.value.to_ascii_lowercase();
            if w.quote_style.is_none() && lower.starts_with('@') && !lower.starts_with("@@") {
                let v = env.vars.get(&lower).ok_or_else(|| undeclared(&lower))?;
                out.push('(');
                out.push_str(v);
                out.push(')');
                i += 1;
                continue;
            }
            if w.quote_style.is_none() && lower == "scope_identity" {
                let open = skip_ws(&toks, i + 1);
                let close = skip_ws(&toks, open + 1);
                if matches!(toks.get(open), Some(Token::LParen))
                    && matches!(toks.get(close), Some(Token::RParen))
                {
                    out.push_str("CAST(NULL AS numeric(38, 0))");
                    i = close + 1;
                    continue;
                }
            }
        }
        out.push_str(&t.to_string());
        i += 1;
    }
    Ok(out)
}
