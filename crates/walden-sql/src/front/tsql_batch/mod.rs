//! T-SQL batches and procedure bodies: statements separated by `;` or by
//! nothing at all (a new statement starts at its first keyword), with
//! variables and control flow. The grammar only cuts the text into a tree
//! of statements; the SQL statements inside keep their text (variables
//! still in it), which `procedural/` compiles and runs.

use super::*;

mod parser;

use parser::implicit_exec;
pub use parser::parse_batch;

/// A statement of a T-SQL batch or body.
#[derive(Clone, Debug, PartialEq)]
pub enum TStmt {
    /// `DECLARE @a type [= x], ...`
    Declare(Vec<VarDecl>),
    /// `SET @v = x`, `SET @v += x` (`op`: the operator before `=`).
    Assign {
        var: String,
        op: Option<char>,
        expr: String,
    },
    /// `SELECT @a = x, @b = y [FROM ...]`: `query` selects the values.
    SelectAssign {
        vars: Vec<String>,
        query: String,
    },
    If {
        cond: String,
        then: Box<TStmt>,
        els: Option<Box<TStmt>>,
    },
    While {
        cond: String,
        body: Box<TStmt>,
    },
    Block(Vec<TStmt>),
    /// `BEGIN TRY ... END TRY BEGIN CATCH ... END CATCH`.
    TryCatch(Vec<TStmt>, Vec<TStmt>),
    Break,
    Continue,
    Return(Option<String>),
    Print(String),
    /// `BEGIN TRAN[SACTION] [name]`: counted by `@@TRANCOUNT`.
    BeginTran,
    /// `COMMIT [TRAN[SACTION] [name]] [WITH (DELAYED_DURABILITY = ON|OFF)]`.
    CommitTran(Option<bool>),
    /// `ROLLBACK [TRAN[SACTION]]` of the whole transaction.
    RollbackTran,
    /// `ROLLBACK TRAN[SACTION] savepoint`: its text, run by the session.
    RollbackSavepoint(String),
    Exec(ExecCall),
    CreateProc(ProcDef),
    DropProc {
        names: Vec<String>,
        if_exists: bool,
    },
    /// `CREATE | ALTER | CREATE OR ALTER FUNCTION` of a scalar function.
    CreateFunc(FuncDef),
    DropFunc {
        names: Vec<String>,
        if_exists: bool,
    },
    /// `SET NOCOUNT ON | OFF`.
    NoCount(bool),
    /// `WAITFOR DELAY 'hh:mm[:ss[.fff]]'` (the expression's text).
    WaitForDelay(String),
    /// `SET XACT_ABORT ON | OFF`.
    XactAbort(bool),
    /// `SET IDENTITY_INSERT [schema.]table ON | OFF` (the name lower case).
    IdentityInsert {
        table: String,
        on: bool,
    },
    /// `THROW` (rethrow, in a CATCH block) or `THROW number, message, state`.
    Throw(Option<[String; 3]>),
    /// `RAISERROR (message, severity, state [, argument ...])`.
    Raiserror(Vec<String>),
    /// Any other statement, as written (variables still in it).
    Sql(String),
    /// PL/pgSQL `FOR v IN [REVERSE] a .. b [BY s] LOOP ... END LOOP`.
    ForInt {
        var: String,
        from: String,
        to: String,
        step: Option<String>,
        reverse: bool,
        body: Vec<TStmt>,
    },
    /// PL/pgSQL `SELECT ... INTO [STRICT] vars ...` (or a statement's
    /// `RETURNING ... INTO`): `query` is the statement without its INTO.
    SelectInto {
        vars: Vec<String>,
        query: String,
        strict: bool,
    },
    /// PL/pgSQL `PERFORM`: the query's rows are dropped.
    Perform(String),
    /// PL/pgSQL `RAISE`.
    Raise(Box<PgRaise>),
    /// PL/pgSQL `EXECUTE text [INTO [STRICT] vars] [USING args]`.
    Execute {
        text: String,
        into: Vec<String>,
        strict: bool,
        using: Vec<String>,
    },
    /// PL/pgSQL `BEGIN ... EXCEPTION WHEN c [OR c] THEN ... END`: the body
    /// runs in a subtransaction, undone when a handler takes its error.
    Guarded {
        body: Vec<TStmt>,
        handlers: Vec<(Vec<String>, Vec<TStmt>)>,
    },
    /// PL/pgSQL `ASSERT cond [, message]`.
    Assert(String, Option<String>),
    /// PL/pgSQL `RETURN NEXT [expr]`: one more row of a set-returning
    /// function (without an expression: its OUT parameters' values).
    ReturnNext(Option<String>),
    /// PL/pgSQL `RETURN QUERY query`: the query's rows.
    ReturnQuery(String),
    /// PL/pgSQL `RETURN QUERY EXECUTE text [USING args]`.
    ReturnQueryExecute {
        text: String,
        using: Vec<String>,
    },
}

/// PL/pgSQL `RAISE [level] ['format' [, arg ...]] [USING option = x, ...]`
/// (no format and no options: re-raise the handled error).
#[derive(Clone, Debug, PartialEq)]
pub struct PgRaise {
    pub level: String,
    /// The format's literal as written.
    pub format: Option<String>,
    pub args: Vec<String>,
    /// Lower-case option names with their expressions.
    pub options: Vec<(String, String)>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct VarDecl {
    /// Lower case, with its `@`.
    pub name: String,
    pub ty: String,
    pub init: Option<String>,
}

/// `EXEC [@rc =] name [arg, ...]`.
#[derive(Clone, Debug, PartialEq)]
pub struct ExecCall {
    pub ret: Option<String>,
    pub name: String,
    pub args: Vec<ExecArg>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ExecArg {
    /// `@param =` (lower case), for a named argument.
    pub name: Option<String>,
    /// The value's text; `None` for `DEFAULT`.
    pub value: Option<String>,
    pub output: bool,
}

/// How a procedure definition treats an existing one of its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProcMode {
    Create,
    Alter,
    CreateOrAlter,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ProcDef {
    pub mode: ProcMode,
    /// Lower case, without a schema.
    pub name: String,
    pub params: Vec<ProcParam>,
    /// The body's text (after `AS`).
    pub body: String,
}

/// A scalar function: `RETURNS returns AS BEGIN ... RETURN x END`.
#[derive(Clone, Debug, PartialEq)]
pub struct FuncDef {
    pub mode: ProcMode,
    /// Lower case, without a schema.
    pub name: String,
    pub params: Vec<ProcParam>,
    pub returns: String,
    /// The body's text (`BEGIN ... END`).
    pub body: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ProcParam {
    pub name: String,
    pub ty: String,
    pub default: Option<String>,
    pub output: bool,
}

/// Whether a simple query is a T-SQL batch that needs the procedural
/// runtime: a statement of its own (DECLARE @v, SET @v, IF, WHILE, a
/// BEGIN ... END block, PRINT, a procedure's CREATE / DROP / EXEC,
/// T-SQL's nested BEGIN TRAN) or a batch-wide variable such as @@ROWCOUNT.
/// Everything else keeps PostgreSQL's batch semantics.
pub fn is_tsql_batch(sql: &str) -> bool {
    let lower = sql.to_ascii_lowercase();
    const HINTS: &[&str] = &[
        "@",
        "if",
        "while",
        "print",
        "return",
        "begin",
        "proc",
        "function",
        "exec",
        "declare",
        "break",
        "continue",
        "raiserror",
        "throw",
        "nocount",
        "tran",
        "identity_insert",
        "xact_abort",
        "waitfor",
    ];
    if !HINTS.iter().any(|h| lower.contains(h)) {
        return implicit_exec(sql);
    }
    if implicit_exec(sql) {
        return true;
    }
    if lower.contains("@@rowcount")
        || lower.contains("@@trancount")
        || lower.contains("@@error")
        || lower.contains("@@options")
    {
        return true;
    }
    let pieces = split(sql);
    // `BEGIN TRAN; ...; COMMIT TRAN` as one message keeps PostgreSQL's
    // implicit block (the T-SQL spellings of its transaction statements);
    // alone, or in a batch of line-separated statements, they count
    // @@TRANCOUNT.
    let alone = pieces.len() == 1;
    pieces.iter().any(|piece| {
        let Some(r) = Raw::new(piece) else {
            return false;
        };
        let (w0, w1) = (r.word(0), r.word(1));
        let first = match w0.as_str() {
            "IF" | "WHILE" | "PRINT" | "RETURN" | "BREAK" | "CONTINUE" | "THROW" | "RAISERROR"
            | "WAITFOR" => true,
            "BEGIN" if w1 == "TRAN" => alone,
            "BEGIN" => {
                !matches!(
                    w1.as_str(),
                    "TRANSACTION" | "WORK" | "ISOLATION" | "READ" | "NOT" | "DEFERRABLE"
                ) && r.tok(1).is_some()
            }
            "DECLARE" => later_marker(&r, 0),
            // NOCOUNT is the T-SQL state's (@@ROWCOUNT's batches read it).
            "SET" => {
                later_marker(&r, 0)
                    || matches!(w1.as_str(), "NOCOUNT" | "IDENTITY_INSERT" | "XACT_ABORT")
            }
            "CREATE" => {
                matches!(w1.as_str(), "PROC" | "PROCEDURE")
                    || (w1 == "FUNCTION" && tsql_function(&r, 2))
                    || (w1 == "OR"
                        && r.word(2) == "ALTER"
                        && (matches!(r.word(3).as_str(), "PROC" | "PROCEDURE")
                            || (r.word(3) == "FUNCTION" && tsql_function(&r, 4))))
            }
            "ALTER" => {
                matches!(w1.as_str(), "PROC" | "PROCEDURE")
                    || (w1 == "FUNCTION" && tsql_function(&r, 2))
            }
            // PostgreSQL's DROP FUNCTION names argument types: `f(int)`.
            "DROP" => {
                matches!(w1.as_str(), "PROC" | "PROCEDURE")
                    || (w1 == "FUNCTION" && !piece.contains('('))
            }
            "EXEC" | "EXECUTE" => {
                // The system procedures the session runs itself, with or
                // without their schema (`EXEC sys.sp_flush_log`).
                let name = if matches!(r.tok(2), Some(Token::Period)) {
                    r.word(3)
                } else {
                    w1.clone()
                };
                parse_execute(piece).is_none()
                    && !matches!(name.as_str(), "SP_FLUSH_LOG" | "SP_RENAME")
            }
            "COMMIT" | "ROLLBACK" if w1 == "TRAN" && alone => true,
            // `ROLLBACK TRAN[SACTION] name` (a savepoint or the named
            // transaction) is T-SQL's alone.
            "ROLLBACK" => {
                matches!(w1.as_str(), "TRAN" | "TRANSACTION")
                    && r.tok(2).is_some_and(|t| !matches!(t, Token::SemiColon))
                    && !matches!(r.word(2).as_str(), "TO" | "AND")
            }
            _ => false,
        };
        first || (1..r.solid.len()).any(|k| later_marker(&r, k))
    })
}

/// Whether the function defined from word `k` (its name) is T-SQL's:
/// parameters named `@p` or none, then `RETURNS` (PostgreSQL's names its
/// parameters without `@` and has a LANGUAGE).
fn tsql_function(r: &Raw, k: usize) -> bool {
    let mut j = k + 1;
    while matches!(r.tok(j), Some(Token::Period)) {
        j += 2;
    }
    if !matches!(r.tok(j), Some(Token::LParen)) {
        return false;
    }
    match r.tok(j + 1) {
        Some(Token::RParen) => r.word(j + 2) == "RETURNS",
        Some(Token::Word(w)) => w.value.starts_with('@'),
        Some(Token::AtSign) => true,
        _ => false,
    }
}

/// A T-SQL statement keyword past a piece's first word (statements there
/// need not be separated by `;`).
fn later_marker(r: &Raw, k: usize) -> bool {
    let var_next = matches!(r.tok(k + 1), Some(Token::AtSign))
        || matches!(r.tok(k + 1), Some(Token::Word(w)) if w.value.starts_with('@'));
    match r.word(k).as_str() {
        "WHILE" | "PRINT" | "RAISERROR" => k > 0,
        "DECLARE" | "SET" => var_next,
        "IF" => {
            // PostgreSQL's `IF [NOT] EXISTS name` clause (after any word:
            // `ADD VALUE`, `DROP IDENTITY`, ...); T-SQL's `IF [NOT] EXISTS`
            // tests a subquery.
            let j = if r.word(k + 1) == "NOT" { k + 2 } else { k + 1 };
            let pg_clause = r.word(j) == "EXISTS" && !matches!(r.tok(j + 1), Some(Token::LParen));
            k > 0
                && !pg_clause
                && !matches!(
                    r.word(k - 1).as_str(),
                    "TABLE"
                        | "VIEW"
                        | "INDEX"
                        | "SEQUENCE"
                        | "TYPE"
                        | "SCHEMA"
                        | "FUNCTION"
                        | "PROCEDURE"
                        | "PROC"
                        | "TRIGGER"
                        | "DATABASE"
                        | "ROLE"
                        | "USER"
                        | "GROUP"
                        | "COLUMN"
                        | "CONSTRAINT"
                        | "EXTENSION"
                        | "DOMAIN"
                        | "CONCURRENTLY"
                        | "ADD"
                        | "DROP"
                        | "OWNED"
                        | "STATISTICS"
                        | "POLICY"
                        | "RULE"
                        | "AGGREGATE"
                        | "OPERATOR"
                        | "CAST"
                        | "COLLATION"
                        | "SERVER"
                        | "MAPPING"
                        | "TABLESPACE"
                        | "PUBLICATION"
                        | "SUBSCRIPTION"
                        | "EVENT"
                        | "LANGUAGE"
                        | "TRANSFORM"
                        | "CONVERSION"
                        | "FAMILY"
                        | "CLASS"
                        | "WRAPPER"
                        | "TEMPLATE"
                        | "PARSER"
                        | "DICTIONARY"
                        | "CONFIGURATION"
                        | "ROUTINE"
                        | "MATERIALIZED"
                )
        }
        _ => false,
    }
}

/// A procedure's definition as it is stored: `CREATE PROCEDURE` whatever
/// statement made it, so that it parses back to the same procedure.
pub fn proc_text(d: &ProcDef) -> String {
    let params: Vec<String> = d
        .params
        .iter()
        .map(|p| {
            let mut s = format!("{} {}", p.name, p.ty);
            if let Some(x) = &p.default {
                s.push_str(&format!(" = {x}"));
            }
            if p.output {
                s.push_str(" OUTPUT");
            }
            s
        })
        .collect();
    format!(
        "CREATE PROCEDURE {} {}\nAS\n{}",
        quote_name(&d.name),
        params.join(", "),
        d.body
    )
}

/// A function's definition as it is stored (see [`proc_text`]).
pub fn func_text(d: &FuncDef) -> String {
    let params: Vec<String> = d
        .params
        .iter()
        .map(|p| match &p.default {
            Some(x) => format!("{} {} = {x}", p.name, p.ty),
            None => format!("{} {}", p.name, p.ty),
        })
        .collect();
    format!(
        "CREATE FUNCTION {} ({})\nRETURNS {}\nAS\n{}",
        quote_name(&d.name),
        params.join(", "),
        d.returns,
        d.body
    )
}

/// A procedure name in brackets when it is not a plain word.
fn quote_name(n: &str) -> String {
    if n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && !n.is_empty() {
        n.to_string()
    } else {
        format!("[{}]", n.replace(']', "]]"))
    }
}

/// A parse error of a batch, with the line it is on.
fn err_at(line: usize, msg: impl std::fmt::Display) -> SqlError {
    SqlError::syntax(format!("syntax error at line {line}: {msg}"))
}

#[cfg(test)]
mod tests;
