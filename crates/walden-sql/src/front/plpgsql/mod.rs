//! PostgreSQL routines: `CREATE [OR REPLACE] FUNCTION ... LANGUAGE sql |
//! plpgsql`, `DO`, `DROP FUNCTION name(types)`, and the forms Walden
//! refuses (procedures, CALL). Bodies are parsed into the procedural
//! runtime's tree (`body.rs`), the one T-SQL uses.

mod body;
mod lex;
pub mod trigger;

pub use body::{parse_plpgsql, parse_plpgsql_trigger, trigger_expr};
pub(crate) use lex::{lex, Tok, K};
pub use trigger::{field_var, RETURN_NEW, RETURN_OLD};

use crate::error::{Result, SqlError};
use crate::front::ProcParam;

/// The table that holds the database's functions and procedures (their
/// CREATE texts, one row per overload: `procedural/overload.rs`).
pub const FUNC_TABLE: &str = "walden_functions";

/// The table that holds the database's T-SQL procedures.
pub const PROC_TABLE: &str = "walden_procedures";

/// Whether an engine table is one of the tables that hold routines and
/// triggers (always in `public`, named as such by the runtime's SQL):
/// they are how definitions are stored, not objects of the database, so
/// the catalogs (and so pg_dump, `\d`) do not list them.
pub fn is_routine_table(engine_name: &str) -> bool {
    engine_name == FUNC_TABLE || engine_name == PROC_TABLE || engine_name == trigger::TRIGGER_TABLE
}

/// A stored function's OID: from its key (the row's `name`: stable, and
/// in a range Walden's other OIDs do not use).
pub fn function_oid(key: &str) -> i64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in key.as_bytes() {
        h ^= *b as u64;
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    0x6000_0000 + (h % 0x0fff_ffff) as i64
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lang {
    Sql,
    Plpgsql,
}

/// A PostgreSQL function's definition.
#[derive(Clone, Debug)]
pub struct PgFunc {
    pub replace: bool,
    /// Lower case, without a schema.
    pub name: String,
    /// Each named `@name` (`@_k` when it has no name), with its type and
    /// default.
    pub params: Vec<ProcParam>,
    pub returns: String,
    pub lang: Lang,
    pub strict: bool,
    /// `i`, `s` or `v`.
    pub volatility: char,
    pub body: String,
    /// A procedure (`CREATE PROCEDURE`, run by CALL): no result type; its
    /// OUT / INOUT parameters (`output`) are its result row.
    pub procedure: bool,
    /// `RETURNS SETOF x` / `RETURNS TABLE (...)`: a set of rows.
    pub set: bool,
    /// A function's result columns when they are named: its OUT and INOUT
    /// parameters, or RETURNS TABLE's columns, in order (each `@name`,
    /// with its type). They are variables of the body too; an INOUT one
    /// is also in `params`.
    pub out: Vec<ProcParam>,
    /// `RETURNS TABLE (...)` made `out`.
    pub table: bool,
    /// The schema the CREATE named (`s.f`), lower case.
    pub schema: Option<String>,
    /// Where the name (its first part) starts in the CREATE text.
    pub name_at: usize,
    /// The arguments as declared, in order, each with its mode as
    /// `pg_proc.proargmodes` writes it (`i`, `o`, `b`, `v`).
    pub declared: Vec<(char, ProcParam)>,
    /// The last parameter is `VARIADIC x type[]`: the call's arguments
    /// from its place on are its array's elements.
    pub variadic: bool,
}

impl PgFunc {
    /// `RETURNS trigger`: run only as a trigger.
    pub fn is_trigger(&self) -> bool {
        self.returns.eq_ignore_ascii_case("trigger")
    }

    /// The parameters' variable names without `@`, in order.
    pub fn param_names(&self) -> Vec<String> {
        self.params
            .iter()
            .map(|p| p.name[1..].to_string())
            .collect()
    }

    /// The body's variables that the call makes: the parameters (`$n`
    /// numbers these), then the OUT-only result columns.
    pub fn var_names(&self) -> Vec<String> {
        let mut v = self.param_names();
        for o in &self.out {
            let n = o.name[1..].to_string();
            if !v.contains(&n) {
                v.push(n);
            }
        }
        v
    }

    /// Whether a call gives rows (a set, or a row of named columns) rather
    /// than one value.
    pub fn gives_rows(&self) -> bool {
        self.set || !self.out.is_empty()
    }
}

/// How a parameter passes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    In,
    Out,
    InOut,
    /// An IN parameter that takes the call's remaining arguments.
    Variadic,
}

/// A statement this module handles.
#[derive(Clone, Debug)]
pub enum PgRoutine {
    CreateFunction(PgFunc),
    /// `DO` with its body.
    Do(String),
    DropFunction {
        /// Each name with its argument types when given.
        names: Vec<(String, Option<Vec<String>>)>,
        if_exists: bool,
        /// `DROP PROCEDURE` (`Some(true)`), `DROP FUNCTION` (`Some(false)`)
        /// or `DROP ROUTINE` (either, `None`).
        procedure: Option<bool>,
    },
    /// `CALL name(args)`: each argument's text.
    Call {
        name: String,
        args: Vec<String>,
    },
    CreateTrigger(trigger::PgTrigger),
    DropTrigger(trigger::DropTrigger),
    /// `ALTER TABLE t ENABLE | DISABLE TRIGGER name | ALL | USER`.
    EnableTrigger(trigger::EnableTrigger),
    /// T-SQL's `DROP TRIGGER [IF EXISTS] name [, ...]` (no table).
    DropTsqlTriggers {
        names: Vec<String>,
        if_exists: bool,
    },
}

fn refuse(what: &str) -> SqlError {
    SqlError::unsupported(what)
}

/// The statement as a PostgreSQL routine statement, if it is one (a
/// T-SQL `CREATE FUNCTION f(@p ...)` is not).
pub fn recognise_routine(sql: &str) -> Option<Result<PgRoutine>> {
    if !may_be_routine(sql) {
        return None;
    }
    let t = lex(sql).ok()?;
    let w = |k: usize| -> &str {
        match t.get(k) {
            Some(x) if x.k == K::Word => &x.w,
            _ => "",
        }
    };
    let mut k = 1;
    match w(0) {
        "do" => Some(parse_do(&t)),
        "create" => {
            let replace =
                w(1) == "or" && (w(2) == "replace" || (w(2) == "alter" && w(3) == "trigger"));
            if replace {
                k = 3;
            }
            // T-SQL's body follows AS unquoted (`AS BEGIN`, `AS RETURN`);
            // PostgreSQL's is a string, or a SQL-standard RETURN / BEGIN
            // ATOMIC.
            let mut depth = 0;
            let mut tsql = false;
            for (j, x) in t.iter().enumerate() {
                if x.op("(") {
                    depth += 1;
                } else if x.op(")") {
                    depth -= 1;
                } else if depth == 0 && x.is("as") && t.get(j + 1).is_some_and(|y| y.k == K::Word) {
                    tsql = true;
                }
            }
            let lang = !tsql
                && (t.iter().enumerate().any(|(j, x)| x.is("language") && j > k)
                    || t.iter().any(|x| x.is("return"))
                    || (t.iter().any(|x| x.is("atomic")) && t.iter().any(|x| x.is("begin"))));
            match w(k) {
                "function" if lang && !t.iter().any(|x| x.w.starts_with('@')) => {
                    Some(parse_function(sql, &t, k + 1, replace, false))
                }
                "procedure" if lang && !t.iter().any(|x| x.w.starts_with('@')) => {
                    Some(parse_function(sql, &t, k + 1, replace, true))
                }
                // T-SQL's: the name (maybe `s.name`, `[name]`) then ON.
                "trigger" if trigger::is_tsql_create(sql) => Some(
                    trigger::parse_tsql_create(sql, &t, k, replace).map(PgRoutine::CreateTrigger),
                ),
                "trigger" | "constraint" if t.iter().any(|x| x.is("execute")) => {
                    Some(trigger::parse_create(sql, &t, k, replace).map(PgRoutine::CreateTrigger))
                }
                _ => None,
            }
        }
        "alter" if w(1) == "trigger" => {
            Some(trigger::parse_tsql_create(sql, &t, 1, true).map(PgRoutine::CreateTrigger))
        }
        "alter"
            if w(1) == "table"
                && t.iter().any(|x| x.is("trigger"))
                && t.iter().any(|x| x.is("enable") || x.is("disable")) =>
        {
            trigger::parse_enable(&t).map(|r| r.map(PgRoutine::EnableTrigger))
        }
        "drop" if w(1) == "trigger" && t.iter().any(|x| x.is("on")) => {
            Some(trigger::parse_drop(&t).map(PgRoutine::DropTrigger))
        }
        "drop" if w(1) == "trigger" => Some(
            trigger::parse_tsql_drop(&t)
                .map(|(names, if_exists)| PgRoutine::DropTsqlTriggers { names, if_exists }),
        ),
        "drop" if matches!(w(1), "function" | "procedure" | "routine") => {
            // Without argument lists: T-SQL's DROP, which takes either
            // language's routines (T-SQL has no DROP ROUTINE).
            if w(1) != "routine" && !t.iter().any(|x| x.op("(")) {
                return None;
            }
            let kind = match w(1) {
                "procedure" => Some(true),
                "function" => Some(false),
                _ => None,
            };
            Some(parse_drop(&t, kind))
        }
        "call" => Some(parse_call(sql, &t)),
        _ => None,
    }
}

/// Whether `sql` may be a routine statement, by its first word (`DO`,
/// `CREATE`, `ALTER`, `DROP`, `CALL`): cheap, for the plain statements of
/// every simple query, which need not be tokenized here. A statement that
/// does not start with an ASCII word (a quoted name, ...) may be one.
pub fn may_be_routine(sql: &str) -> bool {
    let mut rest = sql.trim_start();
    // Comments before the first word.
    loop {
        if let Some(r) = rest.strip_prefix("--") {
            rest = r.find('\n').map_or("", |i| &r[i + 1..]).trim_start();
        } else if let Some(r) = rest.strip_prefix("/*") {
            // Nested comments: let the lexer decide.
            if r.find("*/").is_some_and(|e| r[..e].contains("/*")) {
                return true;
            }
            rest = r.find("*/").map_or("", |i| &r[i + 2..]).trim_start();
        } else {
            break;
        }
    }
    let b = rest.as_bytes();
    if !b.first().is_some_and(u8::is_ascii_alphabetic) {
        return true;
    }
    let end = b
        .iter()
        .position(|c| !(c.is_ascii_alphanumeric() || *c == b'_'))
        .unwrap_or(b.len());
    // A word running into other characters (`créate`): the lexer decides.
    if b.get(end).is_some_and(|c| !c.is_ascii()) {
        return true;
    }
    let word = &rest[..end];
    ["do", "create", "alter", "drop", "call"]
        .iter()
        .any(|w| word.eq_ignore_ascii_case(w))
}

fn syntax_near(t: Option<&Tok>) -> SqlError {
    match t {
        Some(t) => SqlError::syntax(format!("syntax error at or near \"{}\"", t.w)),
        None => SqlError::syntax("syntax error at end of input"),
    }
}

fn parse_do(t: &[Tok]) -> Result<PgRoutine> {
    let mut body = None;
    let mut i = 1;
    while i < t.len() {
        if t[i].k == K::Str && body.is_none() {
            body = Some(t[i].w.clone());
            i += 1;
        } else if t[i].is("language") {
            match t.get(i + 1) {
                Some(l) if l.w == "plpgsql" => i += 2,
                Some(l) => return Err(refuse(&format!("DO LANGUAGE {}", l.w))),
                None => return Err(syntax_near(None)),
            }
        } else if t[i].op(";") && i + 1 == t.len() {
            i += 1;
        } else {
            return Err(syntax_near(t.get(i)));
        }
    }
    body.map(PgRoutine::Do)
        .ok_or_else(|| SqlError::syntax("no inline code specified"))
}

/// `name[.name]` from `i`: the last part lower case (quoted: as written).
fn name_at(t: &[Tok], mut i: usize) -> Result<(String, usize)> {
    let mut name;
    loop {
        match t.get(i) {
            Some(x) if x.k == K::Word || x.k == K::QIdent => name = x.w.clone(),
            other => return Err(syntax_near(other)),
        }
        i += 1;
        if t.get(i).is_some_and(|x| x.op(".")) {
            i += 1;
        } else {
            return Ok((name, i));
        }
    }
}

/// The tokens inside the parentheses at `open`, split at top-level commas;
/// and the index past `)`.
fn paren_list(t: &[Tok], open: usize) -> Result<(Vec<(usize, usize)>, usize)> {
    if !t.get(open).is_some_and(|x| x.op("(")) {
        return Err(syntax_near(t.get(open)));
    }
    let mut out = Vec::new();
    let mut depth = 0;
    let mut start = open + 1;
    let mut j = open + 1;
    loop {
        let Some(x) = t.get(j) else {
            return Err(syntax_near(None));
        };
        if x.op("(") || x.op("[") {
            depth += 1;
        } else if (x.op(")") || x.op("]")) && depth > 0 {
            depth -= 1;
        } else if x.op(")") {
            if j > start {
                out.push((start, j));
            }
            return Ok((out, j + 1));
        } else if x.op(",") && depth == 0 {
            out.push((start, j));
            start = j + 1;
        }
        j += 1;
    }
}

fn span(sql: &str, t: &[Tok], a: usize, b: usize) -> String {
    if a >= b {
        return String::new();
    }
    sql[t[a].s..t[b - 1].e].to_string()
}

/// An argument declaration: `[IN|OUT|INOUT|VARIADIC] [name] type [DEFAULT x]`.
fn parse_arg(
    sql: &str,
    t: &[Tok],
    (a, b): (usize, usize),
    k: usize,
    procedure: bool,
) -> Result<(ProcParam, Mode)> {
    let mut a = a;
    let mut output = false;
    let mut mode = Mode::In;
    match t.get(a).map(|x| x.w.as_str()) {
        Some("in") if a + 1 < b => a += 1,
        Some(m @ ("out" | "inout")) if a + 1 < b => {
            output = true;
            mode = if m == "out" && !procedure {
                Mode::Out
            } else {
                Mode::InOut
            };
            a += 1;
        }
        Some("variadic") if a + 1 < b => {
            mode = Mode::Variadic;
            a += 1;
        }
        _ => {}
    }
    let mut end = b;
    let mut default = None;
    for j in a..b {
        if t[j].is("default") || t[j].op("=") {
            end = j;
            default = Some(span(sql, t, j + 1, b));
            break;
        }
    }
    let whole = span(sql, t, a, end);
    let (name, ty) = if end > a + 1
        && (t[a].k == K::Word || t[a].k == K::QIdent)
        && crate::types::names::parse_type_name(&whole).is_err()
    {
        (t[a].w.clone(), span(sql, t, a + 1, end))
    } else {
        (format!("_{}", k + 1), whole)
    };
    if ty.contains('%') {
        return Err(refuse("%TYPE in a parameter's type"));
    }
    crate::types::names::parse_type_name(&ty)?;
    Ok((
        ProcParam {
            name: format!("@{name}"),
            ty,
            default,
            output,
        },
        mode,
    ))
}

const OPTION_WORDS: &[&str] = &[
    "language",
    "immutable",
    "stable",
    "volatile",
    "strict",
    "called",
    "security",
    "external",
    "leakproof",
    "not",
    "parallel",
    "cost",
    "rows",
    "set",
    "as",
    "return",
    "begin",
    "window",
    "support",
    "transform",
];

fn parse_function(
    sql: &str,
    t: &[Tok],
    at: usize,
    replace: bool,
    procedure: bool,
) -> Result<PgRoutine> {
    let (name, open) = name_at(t, at)?;
    let schema = (open >= at + 3).then(|| t[open - 3].w.clone());
    let (args, mut i) = paren_list(t, open)?;
    let mut params = Vec::new();
    let mut out = Vec::new();
    let mut declared = Vec::new();
    for (k, span) in args.iter().enumerate() {
        let (p, mode) = parse_arg(sql, t, *span, k, procedure)?;
        let m = match mode {
            Mode::Out => 'o',
            Mode::InOut if t[span.0].is("out") => 'o',
            Mode::InOut => 'b',
            Mode::Variadic => 'v',
            Mode::In => 'i',
        };
        if declared.iter().any(|(m, _)| *m == 'v') && m != 'o' {
            return Err(SqlError::new(
                crate::error::ErrorKind::InvalidFunctionDefinition,
                "VARIADIC parameter must be the last input parameter",
            ));
        }
        if m == 'v' && !p.ty.trim_end().ends_with(']') {
            return Err(SqlError::new(
                crate::error::ErrorKind::InvalidFunctionDefinition,
                "VARIADIC parameter must be an array",
            ));
        }
        declared.push((m, p.clone()));
        if matches!(mode, Mode::Out | Mode::InOut) && !procedure {
            // An unnamed result column is `columnN` (N its place).
            let mut o = p.clone();
            if o.name.starts_with("@_") {
                o.name = format!("@column{}", k + 1);
            }
            out.push(o);
        }
        if mode != Mode::Out {
            params.push(p);
        }
    }
    let mut f = PgFunc {
        replace,
        name,
        params,
        returns: String::new(),
        lang: Lang::Sql,
        strict: false,
        volatility: 'v',
        body: String::new(),
        procedure,
        set: false,
        out,
        table: false,
        variadic: declared.iter().any(|(m, _)| *m == 'v'),
        schema,
        name_at: t[at].s,
        declared,
    };
    let mut lang = None;
    let mut table_cols = false;
    let mut body = None;
    while i < t.len() {
        let x = &t[i];
        if x.op(";") && i + 1 == t.len() {
            break;
        }
        match x.w.as_str() {
            "returns" if x.k == K::Word && procedure => {
                return Err(SqlError::new(
                    crate::error::ErrorKind::InvalidFunctionDefinition,
                    "procedures cannot have a RETURNS clause",
                ))
            }
            "returns" if x.k == K::Word => {
                if t.get(i + 1).is_some_and(|y| y.is("setof")) {
                    f.set = true;
                    i += 1;
                }
                if !f.set && t.get(i + 1).is_some_and(|y| y.is("table")) {
                    if !f.out.is_empty() {
                        return Err(SqlError::new(
                            crate::error::ErrorKind::InvalidFunctionDefinition,
                            "OUT and INOUT arguments aren't allowed in TABLE functions",
                        ));
                    }
                    let (cols, j) = paren_list(t, i + 2)?;
                    for (k, (a, b)) in cols.iter().enumerate() {
                        if *b < a + 2 {
                            return Err(syntax_near(t.get(*a)));
                        }
                        let ty = span(sql, t, a + 1, *b);
                        crate::types::names::parse_type_name(&ty)?;
                        let _ = k;
                        f.out.push(ProcParam {
                            name: format!("@{}", t[*a].w),
                            ty,
                            default: None,
                            output: true,
                        });
                    }
                    f.set = true;
                    f.table = true;
                    table_cols = true;
                    f.returns = "record".into();
                    i = j;
                    continue;
                }
                if t.get(i + 1).is_some_and(|y| y.is("null")) {
                    // RETURNS NULL ON NULL INPUT
                    f.strict = true;
                    i += 5;
                    continue;
                }
                let mut j = i + 1;
                while j < t.len()
                    && !(t[j].k == K::Word && OPTION_WORDS.contains(&t[j].w.as_str()))
                    && !t[j].op(";")
                {
                    j += 1;
                }
                f.returns = span(sql, t, i + 1, j);
                i = j;
            }
            "language" if x.k == K::Word => {
                lang = t.get(i + 1).map(|y| y.w.clone());
                i += 2;
            }
            "immutable" | "stable" | "volatile" if x.k == K::Word => {
                f.volatility = x.w.chars().next().unwrap_or('v');
                i += 1;
            }
            "strict" if x.k == K::Word => {
                f.strict = true;
                i += 1;
            }
            "called" if x.k == K::Word => i += 4,
            "leakproof" if x.k == K::Word => i += 1,
            "not" if t.get(i + 1).is_some_and(|y| y.is("leakproof")) => i += 2,
            "security" if x.k == K::Word => {
                if t.get(i + 1).is_some_and(|y| y.is("definer")) {
                    return Err(refuse("SECURITY DEFINER"));
                }
                i += 2;
            }
            "parallel" | "cost" | "rows" if x.k == K::Word => i += 2,
            "as" if x.k == K::Word => {
                match t.get(i + 1) {
                    Some(s) if s.k == K::Str => body = Some(s.w.clone()),
                    other => return Err(syntax_near(other)),
                }
                if t.get(i + 2).is_some_and(|y| y.op(",")) {
                    return Err(refuse("a function in a C library (AS 'obj', 'symbol')"));
                }
                i += 2;
            }
            "return" if x.k == K::Word => {
                let mut j = i + 1;
                while j < t.len() && !t[j].op(";") {
                    j += 1;
                }
                body = Some(format!("SELECT {}", span(sql, t, i + 1, j)));
                lang.get_or_insert_with(|| "sql".into());
                i = j;
            }
            "begin" if x.k == K::Word => {
                return Err(refuse("a BEGIN ATOMIC function body"));
            }
            "set" | "window" | "support" | "transform" | "external" if x.k == K::Word => {
                return Err(refuse(&format!(
                    "{} in CREATE FUNCTION",
                    x.w.to_ascii_uppercase()
                )));
            }
            _ => return Err(syntax_near(Some(x))),
        }
    }
    f.lang = match lang.as_deref() {
        Some("sql") => Lang::Sql,
        Some("plpgsql") => Lang::Plpgsql,
        Some(l) => {
            return Err(SqlError::new(
                crate::error::ErrorKind::UndefinedObject,
                format!("language \"{l}\" does not exist"),
            ))
        }
        None => return Err(SqlError::syntax("no language specified")),
    };
    f.body = body.ok_or_else(|| SqlError::syntax("no function body specified"))?;
    if procedure {
        return Ok(PgRoutine::CreateFunction(f));
    }
    if f.returns.is_empty() {
        match f.out.as_slice() {
            [] => {
                return Err(SqlError::new(
                    crate::error::ErrorKind::InvalidFunctionDefinition,
                    "function result type must be specified",
                ))
            }
            [one] => f.returns = one.ty.clone(),
            _ => f.returns = "record".into(),
        }
    }
    let r = f.returns.to_ascii_lowercase();
    if !table_cols && !f.out.is_empty() {
        // OUT parameters name the result: RETURNS must agree with them.
        let agrees = match f.out.as_slice() {
            [one] => {
                r == "record"
                    || crate::types::names::parse_type_name(&one.ty).ok()
                        == crate::types::names::parse_type_name(&f.returns).ok()
            }
            _ => r == "record",
        };
        if !agrees {
            return Err(SqlError::new(
                crate::error::ErrorKind::InvalidFunctionDefinition,
                format!(
                    "function result type must be {} because of OUT parameters",
                    if f.out.len() == 1 {
                        f.out[0].ty.to_ascii_lowercase()
                    } else {
                        "record".into()
                    }
                ),
            ));
        }
        if r == "record" && f.out.len() == 1 {
            f.returns = f.out[0].ty.clone();
        }
        return Ok(PgRoutine::CreateFunction(f));
    }
    if table_cols {
        return Ok(PgRoutine::CreateFunction(f));
    }
    if r == "trigger" {
        if !f.params.is_empty() {
            return Err(SqlError::new(
                crate::error::ErrorKind::InvalidFunctionDefinition,
                "trigger functions cannot have declared arguments",
            ));
        }
        if f.lang != Lang::Plpgsql {
            return Err(SqlError::new(
                crate::error::ErrorKind::InvalidFunctionDefinition,
                "SQL functions cannot return type trigger",
            ));
        }
        return Ok(PgRoutine::CreateFunction(f));
    }
    if r == "record" {
        return Err(refuse(
            "RETURNS record without OUT parameters (a column definition list at each call)",
        ));
    }
    if matches!(r.as_str(), "void" | "event_trigger") {
        return Err(refuse(&format!("RETURNS {r}")));
    }
    // Another name may be a table's row type (resolved when the function
    // is created and called).
    if crate::types::names::parse_type_name(&f.returns).is_err()
        && (f.returns.contains('(') || f.returns.contains('['))
    {
        crate::types::names::parse_type_name(&f.returns)?;
    }
    Ok(PgRoutine::CreateFunction(f))
}

/// `CALL name(args)`.
fn parse_call(sql: &str, t: &[Tok]) -> Result<PgRoutine> {
    let (name, open) = name_at(t, 1)?;
    let (list, mut i) = paren_list(t, open)?;
    if t.get(i).is_some_and(|x| x.op(";")) {
        i += 1;
    }
    if i < t.len() {
        return Err(syntax_near(t.get(i)));
    }
    let args = list.iter().map(|(a, b)| span(sql, t, *a, *b)).collect();
    Ok(PgRoutine::Call { name, args })
}

fn parse_drop(t: &[Tok], procedure: Option<bool>) -> Result<PgRoutine> {
    let mut i = 2;
    let if_exists = t.get(i).is_some_and(|x| x.is("if"));
    if if_exists {
        i += 2;
    }
    let mut names = Vec::new();
    loop {
        let (name, j) = name_at(t, i)?;
        i = j;
        let types = if t.get(i).is_some_and(|x| x.op("(")) {
            let (list, j) = paren_list(t, i)?;
            i = j;
            Some(
                // OUT arguments are not part of the signature; a name
                // before a type is dropped.
                list.iter()
                    .filter(|(a, _)| !t[*a].is("out"))
                    .map(|(a, b)| {
                        let mut a = *a;
                        if b > &(a + 1)
                            && (t[a].is("in") || t[a].is("inout") || t[a].is("variadic"))
                        {
                            a += 1;
                        }
                        let join = |from: usize| {
                            t[from..*b]
                                .iter()
                                .map(|x| x.w.clone())
                                .collect::<Vec<_>>()
                                .join(" ")
                        };
                        let whole = join(a);
                        if *b > a + 1
                            && crate::types::names::parse_type_name(&whole).is_err()
                            && crate::types::names::parse_type_name(&join(a + 1)).is_ok()
                        {
                            join(a + 1)
                        } else {
                            whole
                        }
                    })
                    .collect(),
            )
        } else {
            None
        };
        names.push((name, types));
        if t.get(i).is_some_and(|x| x.op(",")) {
            i += 1;
            continue;
        }
        break;
    }
    if t.get(i).is_some_and(|x| x.is("cascade")) {
        return Err(refuse("DROP FUNCTION ... CASCADE"));
    }
    if t.get(i).is_some_and(|x| x.is("restrict")) {
        i += 1;
    }
    if t.get(i).is_some_and(|x| x.op(";")) {
        i += 1;
    }
    if i < t.len() {
        return Err(syntax_near(t.get(i)));
    }
    Ok(PgRoutine::DropFunction {
        names,
        if_exists,
        procedure,
    })
}

/// Whether a stored definition is a PostgreSQL function's (and it).
pub fn parse_pg_function(text: &str) -> Option<PgFunc> {
    match recognise_routine(text)? {
        Ok(PgRoutine::CreateFunction(f)) => Some(f),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definitions() {
        let Some(Ok(PgRoutine::CreateFunction(f))) = recognise_routine(
            "CREATE OR REPLACE FUNCTION public.add1(a int, integer DEFAULT 2) RETURNS int \
             LANGUAGE sql IMMUTABLE STRICT AS $$ select a + $2 $$",
        ) else {
            panic!("not a function");
        };
        assert_eq!(f.name, "add1");
        assert_eq!(f.param_names(), vec!["a", "_2"]);
        assert_eq!(f.params[1].default.as_deref(), Some("2"));
        assert!(f.strict && f.replace && f.volatility == 'i');
        assert_eq!(f.body.trim(), "select a + $2");
        assert!(matches!(
            recognise_routine("DO $$BEGIN NULL; END$$"),
            Some(Ok(PgRoutine::Do(_)))
        ));
        assert!(
            recognise_routine("CREATE FUNCTION f(@a int) RETURNS int AS BEGIN RETURN 1 END")
                .is_none()
        );
        assert!(
            recognise_routine("CREATE FUNCTION f() RETURNS int AS BEGIN RETURN 1 END").is_none()
        );
        assert!(recognise_routine("CREATE FUNCTION f() RETURNS int RETURN 1").is_some());
        assert!(matches!(
            recognise_routine("DROP FUNCTION IF EXISTS f(int, text)"),
            Some(Ok(PgRoutine::DropFunction { .. }))
        ));
    }

    /// The first-word test before tokenizing: routine statements behind
    /// comments and in any case pass; plain statements do not.
    #[test]
    fn first_word_before_tokenizing() {
        for sql in [
            "do $$begin null; end$$",
            "  -- a comment\n/* another */ Call p(1)",
            "/* a /* nested */ one */ create function f() returns int return 1",
            "\"do\" $$begin null; end$$",
            "ALTER TABLE t DISABLE TRIGGER ALL",
            "drop trigger tr on t",
        ] {
            assert!(may_be_routine(sql), "{sql}");
        }
        for sql in [
            "SELECT 1",
            "  -- do\nINSERT INTO t VALUES (1)",
            "/* call p() */ update t set a = 1",
            "with x as (select 1) select * from x",
            "docall()",
        ] {
            assert!(!may_be_routine(sql), "{sql}");
            assert!(recognise_routine(sql).is_none(), "{sql}");
        }
        assert!(matches!(
            recognise_routine("-- first\nDO $$BEGIN NULL; END$$"),
            Some(Ok(PgRoutine::Do(_)))
        ));
    }
}
