//! T-SQL batches and procedure bodies: statements separated by `;` or by
//! nothing at all (a new statement starts at its first keyword), with
//! variables and control flow. The grammar only cuts the text into a tree
//! of statements; the SQL statements inside keep their text (variables
//! still in it), which `procedural/` compiles and runs.

use super::*;
use sqlparser::tokenizer::Whitespace;

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
    SelectAssign { vars: Vec<String>, query: String },
    If {
        cond: String,
        then: Box<TStmt>,
        els: Option<Box<TStmt>>,
    },
    While { cond: String, body: Box<TStmt> },
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
    Exec(ExecCall),
    CreateProc(ProcDef),
    DropProc { names: Vec<String>, if_exists: bool },
    /// `SET NOCOUNT ON | OFF`.
    NoCount(bool),
    /// `THROW` (rethrow, in a CATCH block) or `THROW number, message, state`.
    Throw(Option<[String; 3]>),
    /// `RAISERROR (message, severity, state [, argument ...])`.
    Raiserror(Vec<String>),
    /// Any other statement, as written (variables still in it).
    Sql(String),
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
        "@", "if", "while", "print", "return", "begin", "proc", "exec", "declare", "break",
        "continue",
    ];
    if !HINTS.iter().any(|h| lower.contains(h)) {
        return false;
    }
    if lower.contains("@@rowcount") || lower.contains("@@trancount") || lower.contains("@@error")
    {
        return true;
    }
    split(sql).iter().any(|piece| {
        let Some(r) = Raw::new(piece) else {
            return false;
        };
        let (w0, w1) = (r.word(0), r.word(1));
        let first = match w0.as_str() {
            "IF" | "WHILE" | "PRINT" | "RETURN" | "BREAK" | "CONTINUE" | "THROW" | "RAISERROR" => {
                true
            }
            "BEGIN" => {
                !matches!(
                    w1.as_str(),
                    "TRANSACTION" | "WORK" | "ISOLATION" | "READ" | "NOT" | "DEFERRABLE"
                ) && r.tok(1).is_some()
            }
            "DECLARE" => later_marker(&r, 0),
            // NOCOUNT is the T-SQL state's (@@ROWCOUNT's batches read it).
            "SET" => later_marker(&r, 0) || w1 == "NOCOUNT",
            "CREATE" => {
                matches!(w1.as_str(), "PROC" | "PROCEDURE")
                    || (w1 == "OR"
                        && r.word(2) == "ALTER"
                        && matches!(r.word(3).as_str(), "PROC" | "PROCEDURE"))
            }
            "ALTER" | "DROP" => matches!(w1.as_str(), "PROC" | "PROCEDURE"),
            "EXEC" | "EXECUTE" => {
                parse_execute(piece).is_none()
                    && !matches!(w1.as_str(), "SP_FLUSH_LOG" | "SP_RENAME")
            }
            "COMMIT" | "ROLLBACK" => w1 == "TRAN",
            _ => false,
        };
        first || (1..r.solid.len()).any(|k| later_marker(&r, k))
    })
}

/// A T-SQL statement keyword past a piece's first word (statements there
/// need not be separated by `;`).
fn later_marker(r: &Raw, k: usize) -> bool {
    let var_next = matches!(r.tok(k + 1), Some(Token::AtSign))
        || matches!(r.tok(k + 1), Some(Token::Word(w)) if w.value.starts_with('@'));
    match r.word(k).as_str() {
        "WHILE" | "PRINT" | "RAISERROR" => k > 0,
        "DECLARE" | "SET" => var_next,
        "IF" => k > 0 && !matches!(
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
        ),
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

/// Parses a batch (or a procedure body) into statements.
pub fn parse_batch(sql: &str) -> Result<Vec<TStmt>> {
    let toks = Tokenizer::new(&MsSqlDialect {}, sql)
        .with_unescape(false)
        .tokenize()
        .map_err(|e| SqlError::syntax(format!("syntax error: {e}")))?;
    let mut p = Parser2 {
        solid: (0..toks.len())
            .filter(|&i| !matches!(toks[i], Token::Whitespace(_)))
            .collect(),
        toks,
        i: 0,
    };
    let mut out = Vec::new();
    loop {
        p.skip_semis();
        if p.at_end() {
            return Ok(out);
        }
        if p.word(0) == "END" {
            return Err(err_at(p.line(), "END without BEGIN"));
        }
        if p.word(0) == "ELSE" {
            return Err(err_at(p.line(), "ELSE without IF"));
        }
        out.push(p.statement()?);
    }
}

/// Statement keywords: one of these at the top level of a statement's text
/// starts the next statement (unless `continues` says it belongs to it).
const STARTS: &[&str] = &[
    "SELECT",
    "INSERT",
    "UPDATE",
    "DELETE",
    "MERGE",
    "DECLARE",
    "SET",
    "IF",
    "ELSE",
    "WHILE",
    "BEGIN",
    "END",
    "PRINT",
    "EXEC",
    "EXECUTE",
    "RETURN",
    "BREAK",
    "CONTINUE",
    "CREATE",
    "DROP",
    "ALTER",
    "TRUNCATE",
    "COMMIT",
    "ROLLBACK",
    "USE",
    "THROW",
    "RAISERROR",
    "WITH",
    "SAVE",
    "GRANT",
    "REVOKE",
    "DBCC",
    "CHECKPOINT",
    "WAITFOR",
];

struct Parser2 {
    toks: Vec<Token>,
    /// Positions of the tokens that are not whitespace.
    solid: Vec<usize>,
    /// Index into `solid`.
    i: usize,
}

impl Parser2 {
    fn at_end(&self) -> bool {
        self.i >= self.solid.len()
    }

    fn tok(&self, k: usize) -> Option<&Token> {
        self.solid.get(self.i + k).map(|&j| &self.toks[j])
    }

    fn word(&self, k: usize) -> String {
        bare_word(self.tok(k))
    }

    fn word_at(&self, at: usize) -> String {
        bare_word(self.solid.get(at).map(|&j| &self.toks[j]))
    }

    fn tok_at(&self, at: usize) -> Option<&Token> {
        self.solid.get(at).map(|&j| &self.toks[j])
    }

    /// The line of the current token (from 1).
    fn line(&self) -> usize {
        let end = self.solid.get(self.i).copied().unwrap_or(self.toks.len());
        1 + self.toks[..end]
            .iter()
            .map(|t| match t {
                Token::Whitespace(Whitespace::Newline) => 1,
                Token::Whitespace(Whitespace::SingleLineComment { .. }) => 1,
                Token::Whitespace(Whitespace::MultiLineComment(c)) => c.matches('\n').count(),
                t => t.to_string().matches('\n').count(),
            })
            .sum::<usize>()
    }

    fn skip_semis(&mut self) {
        while matches!(self.tok(0), Some(Token::SemiColon)) {
            self.i += 1;
        }
    }

    /// The text of solid tokens `from..to` (with the whitespace between).
    fn text(&self, from: usize, to: usize) -> String {
        if from >= to {
            return String::new();
        }
        let (a, b) = (self.solid[from], self.solid[to - 1]);
        self.toks[a..=b].iter().map(|t| t.to_string()).collect()
    }

    /// The text from solid token `from` to the end of the input.
    fn rest_text(&self, from: usize) -> String {
        match self.solid.get(from) {
            Some(&a) => self.toks[a..].iter().map(|t| t.to_string()).collect(),
            None => String::new(),
        }
    }

    fn eat(&mut self, w: &str) -> bool {
        if self.word(0) == w {
            self.i += 1;
            true
        } else {
            false
        }
    }

    /// Where the statement that starts at `start` (its first word `first`)
    /// ends: at `;`, or before the next statement's first keyword at the
    /// top level (parentheses and CASE ... END counted).
    fn extent(&self, start: usize, first: &str) -> usize {
        let mut depth = 0i32;
        let mut cases = 0i32;
        let mut main: Option<String> = None;
        let mut k = start + 1;
        while k < self.solid.len() {
            let t = self.tok_at(k).expect("in range");
            match t {
                Token::LParen => depth += 1,
                Token::RParen => depth -= 1,
                Token::SemiColon if depth <= 0 => return k,
                _ => {}
            }
            let w = self.word_at(k);
            if w == "CASE" {
                cases += 1;
            } else if w == "END" && cases > 0 {
                cases -= 1;
            } else if depth <= 0
                && cases == 0
                && STARTS.contains(&w.as_str())
                && !self.continues(k, first, &w, &main)
            {
                return k;
            }
            if depth <= 0
                && main.is_none()
                && matches!(w.as_str(), "SELECT" | "VALUES" | "INSERT" | "UPDATE" | "DELETE" | "MERGE")
            {
                main = Some(w);
            }
            k += 1;
        }
        k
    }

    /// Whether keyword `w` at `k` belongs to the statement begun by `first`
    /// (`main`: the first SELECT/VALUES/DML keyword seen in it).
    fn continues(&self, k: usize, first: &str, w: &str, main: &Option<String>) -> bool {
        let prev = if k > 0 { self.word_at(k - 1) } else { String::new() };
        let prev_tok = if k > 0 { self.tok_at(k - 1) } else { None };
        let next = self.word_at(k + 1);
        if prev == "ON" {
            return true; // ON DELETE / ON UPDATE / ON COMMIT
        }
        if matches!(first, "GRANT" | "REVOKE" | "DENY") {
            return true;
        }
        match w {
            "SELECT" => {
                matches!(prev.as_str(), "UNION" | "ALL" | "EXCEPT" | "INTERSECT" | "AS" | "FOR")
                    || matches!(prev_tok, Some(Token::LParen))
                    || (matches!(first, "INSERT" | "WITH") && main.is_none())
                    || (first == "INSERT" && main.as_deref() == Some("INSERT"))
            }
            "INSERT" | "UPDATE" | "DELETE" | "MERGE" => {
                (first == "WITH" && main.is_none())
                    || matches!(prev.as_str(), "FOR" | "OF" | "AFTER")
                    || matches!(prev_tok, Some(Token::Comma))
            }
            "SET" => {
                matches!(first, "UPDATE" | "ALTER" | "MERGE")
                    || main.as_deref() == Some("UPDATE")
                    || matches!(prev.as_str(), "DELETE" | "UPDATE")
            }
            "WITH" => {
                // A CTE starts a statement; WITH (hints), WITH TIES, WITH
                // CHECK OPTION ... continue one.
                !(matches!(self.tok_at(k + 1), Some(Token::Word(_)))
                    && (self.word_at(k + 2) == "AS"
                        || matches!(self.tok_at(k + 2), Some(Token::LParen))))
                    || first == "CREATE"
            }
            "IF" => matches!(first, "DROP" | "CREATE") && matches!(next.as_str(), "EXISTS" | "NOT"),
            "ALTER" | "DROP" | "CREATE" => first == "ALTER",
            "EXEC" | "EXECUTE" => first == "INSERT" || prev == "WITH",
            _ => false,
        }
    }

    /// One statement at the cursor.
    fn statement(&mut self) -> Result<TStmt> {
        let first = self.word(0);
        let line = self.line();
        // label:  (GOTO is not supported; a label alone is skipped)
        match first.as_str() {
            "BEGIN" => match self.word(1).as_str() {
                "TRAN" | "TRANSACTION" | "DISTRIBUTED" => {
                    let end = self.extent(self.i, "BEGIN");
                    if self.text(self.i, end).to_ascii_uppercase().contains("MARK") {
                        return Err(SqlError::unsupported("BEGIN TRANSACTION ... WITH MARK"));
                    }
                    if self.word(1) == "DISTRIBUTED" {
                        return Err(SqlError::unsupported("BEGIN DISTRIBUTED TRANSACTION"));
                    }
                    self.i = end;
                    Ok(TStmt::BeginTran)
                }
                "TRY" => {
                    self.i += 2;
                    let body = self.block_until(&["END", "TRY"], line)?;
                    if !(self.eat("BEGIN") && self.eat("CATCH")) {
                        return Err(err_at(self.line(), "END TRY must be followed by BEGIN CATCH"));
                    }
                    let handler = self.block_until(&["END", "CATCH"], line)?;
                    Ok(TStmt::TryCatch(body, handler))
                }
                _ => {
                    self.i += 1;
                    let body = self.block_until(&["END"], line)?;
                    Ok(TStmt::Block(body))
                }
            },
            "IF" => {
                self.i += 1;
                let cond = self.condition("IF")?;
                self.skip_semis();
                let then = Box::new(self.statement_required("IF")?);
                let save = self.i;
                self.skip_semis();
                let els = if self.eat("ELSE") {
                    self.skip_semis();
                    Some(Box::new(self.statement_required("ELSE")?))
                } else {
                    self.i = save;
                    None
                };
                Ok(TStmt::If { cond, then, els })
            }
            "WHILE" => {
                self.i += 1;
                let cond = self.condition("WHILE")?;
                self.skip_semis();
                let body = Box::new(self.statement_required("WHILE")?);
                Ok(TStmt::While { cond, body })
            }
            "BREAK" | "CONTINUE" => {
                self.i += 1;
                Ok(if first == "BREAK" {
                    TStmt::Break
                } else {
                    TStmt::Continue
                })
            }
            "RETURN" => {
                let end = self.extent(self.i, "RETURN");
                let e = self.text(self.i + 1, end);
                self.i = end;
                Ok(TStmt::Return((!e.trim().is_empty()).then(|| e.trim().to_string())))
            }
            "PRINT" => {
                let end = self.extent(self.i, "PRINT");
                let e = self.text(self.i + 1, end);
                self.i = end;
                if e.trim().is_empty() {
                    return Err(err_at(line, "PRINT needs a value"));
                }
                Ok(TStmt::Print(e.trim().to_string()))
            }
            "DECLARE" if self.var(1).is_some() => self.declare(),
            "SET" if self.var(1).is_some() => self.assign(),
            "SET" if self.word(1) == "NOCOUNT" => {
                let on = match self.word(2).as_str() {
                    "ON" => true,
                    "OFF" => false,
                    _ => return Err(err_at(line, "SET NOCOUNT ON | OFF")),
                };
                self.i += 3;
                Ok(TStmt::NoCount(on))
            }
            "SELECT" if self.var(1).is_some() && self.is_assign_op(2) => self.select_assign(),
            "COMMIT" | "ROLLBACK" => self.commit_or_rollback(&first),
            "EXEC" | "EXECUTE" => self.exec(),
            "CREATE" | "ALTER" => {
                let or_alter = first == "CREATE" && self.word(1) == "OR" && self.word(2) == "ALTER";
                let at = if or_alter { 3 } else { 1 };
                if matches!(self.word(at).as_str(), "PROC" | "PROCEDURE") {
                    let mode = match (first.as_str(), or_alter) {
                        (_, true) => ProcMode::CreateOrAlter,
                        ("CREATE", _) => ProcMode::Create,
                        _ => ProcMode::Alter,
                    };
                    self.i += at + 1;
                    return self.create_proc(mode);
                }
                self.plain(&first)
            }
            "DROP" if matches!(self.word(1).as_str(), "PROC" | "PROCEDURE") => {
                let end = self.extent(self.i, "DROP");
                self.i += 2;
                let if_exists = self.word(0) == "IF" && self.word(1) == "EXISTS";
                if if_exists {
                    self.i += 2;
                }
                let mut names = Vec::new();
                while self.i < end {
                    names.push(self.object_name()?);
                    if !matches!(self.tok(0), Some(Token::Comma)) {
                        break;
                    }
                    self.i += 1;
                }
                if self.i != end || names.is_empty() {
                    return Err(err_at(line, "DROP PROCEDURE [IF EXISTS] name [, ...]"));
                }
                Ok(TStmt::DropProc { names, if_exists })
            }
            "THROW" => {
                let end = self.extent(self.i, "THROW");
                self.i += 1;
                if self.i == end {
                    return Ok(TStmt::Throw(None));
                }
                let args = self.args_until(end);
                self.i = end;
                match <[String; 3]>::try_from(args) {
                    Ok(a) => Ok(TStmt::Throw(Some(a))),
                    Err(_) => Err(err_at(line, "THROW number, message, state")),
                }
            }
            "RAISERROR" => {
                let end = self.extent(self.i, "RAISERROR");
                self.i += 1;
                if !matches!(self.tok(0), Some(Token::LParen)) {
                    return Err(err_at(line, "RAISERROR (message, severity, state [, ...])"));
                }
                self.i += 1;
                let close = self.until_top(end, |p| matches!(p.tok(0), Some(Token::RParen)));
                let args = self.args_until(close);
                self.i = close + 1;
                if self.eat("WITH") {
                    loop {
                        match self.word(0).as_str() {
                            "NOWAIT" => self.i += 1,
                            w @ ("LOG" | "SETERROR") => {
                                return Err(SqlError::unsupported(format!("RAISERROR ... WITH {w}")))
                            }
                            _ => return Err(err_at(line, "RAISERROR ... WITH NOWAIT")),
                        }
                        if !matches!(self.tok(0), Some(Token::Comma)) {
                            break;
                        }
                        self.i += 1;
                    }
                }
                if self.i != end {
                    return Err(err_at(line, "RAISERROR (message, severity, state [, ...])"));
                }
                if args.len() < 3 {
                    return Err(err_at(line, "RAISERROR needs a message, a severity and a state"));
                }
                Ok(TStmt::Raiserror(args))
            }
            "GOTO" => Err(SqlError::unsupported("GOTO")),
            "END" | "ELSE" => Err(err_at(line, format!("{first} without its opening"))),
            _ if matches!(self.tok(1), Some(Token::Colon)) && matches!(self.tok(0), Some(Token::Word(_))) => {
                Err(SqlError::unsupported("labels and GOTO"))
            }
            _ => self.plain(&first),
        }
    }

    /// The statement after IF / ELSE / WHILE.
    fn statement_required(&mut self, after: &str) -> Result<TStmt> {
        if self.at_end() || matches!(self.word(0).as_str(), "END" | "ELSE") {
            return Err(err_at(self.line(), format!("{after} needs a statement")));
        }
        self.statement()
    }

    /// Any other statement: its text up to where it ends.
    fn plain(&mut self, first: &str) -> Result<TStmt> {
        let end = self.extent(self.i, first);
        let s = self.text(self.i, end);
        self.i = end;
        Ok(TStmt::Sql(s))
    }

    /// Statements up to the closing words (`END`, or `END TRY` ...).
    fn block_until(&mut self, close: &[&str], line: usize) -> Result<Vec<TStmt>> {
        let mut out = Vec::new();
        loop {
            self.skip_semis();
            if self.at_end() {
                return Err(err_at(line, format!("BEGIN without {}", close.join(" "))));
            }
            if close.iter().enumerate().all(|(k, w)| self.word(k) == *w) {
                self.i += close.len();
                return Ok(out);
            }
            if self.word(0) == "ELSE" {
                return Err(err_at(self.line(), "ELSE without IF"));
            }
            if self.word(0) == "END" {
                return Err(err_at(self.line(), format!("expected {}", close.join(" "))));
            }
            out.push(self.statement()?);
        }
    }

    /// The condition of IF / WHILE: up to the statement it guards.
    fn condition(&mut self, what: &str) -> Result<String> {
        // The condition's first token may itself be a keyword (EXISTS, NOT).
        let start = self.i;
        let end = self.extent(start, what);
        let mut end = end;
        if end == start {
            end = start + 1;
        }
        // `IF (SELECT ...) > 1`: extent stops at nothing inside parentheses.
        let c = self.text(start, end);
        if c.trim().is_empty() {
            return Err(err_at(self.line(), format!("{what} needs a condition")));
        }
        self.i = end;
        Ok(c)
    }

    /// The variable name at offset `k` (lower case, with `@`).
    fn var(&self, k: usize) -> Option<String> {
        match self.tok(k) {
            Some(Token::Word(w)) if w.value.starts_with('@') && !w.value.starts_with("@@") && w.value.len() > 1 => {
                Some(w.value.to_ascii_lowercase())
            }
            _ => None,
        }
    }

    /// Comma-separated expressions from the cursor to `end` (top level).
    fn args_until(&mut self, end: usize) -> Vec<String> {
        let mut out = Vec::new();
        while self.i < end {
            let stop = self.until_top(end, |p| matches!(p.tok(0), Some(Token::Comma)));
            out.push(self.text(self.i, stop).trim().to_string());
            self.i = stop;
            if matches!(self.tok(0), Some(Token::Comma)) {
                self.i += 1;
            }
        }
        out
    }

    /// `=` or `op=` at offset `k`.
    fn is_assign_op(&self, k: usize) -> bool {
        matches!(self.tok(k), Some(Token::Eq))
            || (matches!(
                self.tok(k),
                Some(Token::Plus | Token::Minus | Token::Mul | Token::Div | Token::Mod)
            ) && matches!(self.tok(k + 1), Some(Token::Eq)))
    }

    fn declare(&mut self) -> Result<TStmt> {
        let line = self.line();
        let end = self.extent(self.i, "DECLARE");
        self.i += 1;
        let mut vars = Vec::new();
        while self.i < end {
            let name = self
                .var(0)
                .ok_or_else(|| err_at(line, "DECLARE expects @name type"))?;
            self.i += 1;
            self.eat("AS");
            let stop = self.until_top(end, |p| {
                matches!(p.tok(0), Some(Token::Eq | Token::Comma))
            });
            let ty = self.text(self.i, stop).trim().to_string();
            if ty.is_empty() {
                return Err(err_at(line, format!("DECLARE {name} needs a type")));
            }
            let up = ty.to_ascii_uppercase();
            if up.starts_with("TABLE") {
                return Err(SqlError::unsupported("table variables (DECLARE @t TABLE)"));
            }
            if up.starts_with("CURSOR") {
                return Err(SqlError::unsupported("cursor variables (DECLARE @c CURSOR)"));
            }
            self.i = stop;
            let init = if matches!(self.tok(0), Some(Token::Eq)) {
                self.i += 1;
                let stop = self.until_top(end, |p| matches!(p.tok(0), Some(Token::Comma)));
                let e = self.text(self.i, stop);
                self.i = stop;
                Some(e.trim().to_string())
            } else {
                None
            };
            vars.push(VarDecl { name, ty, init });
            if matches!(self.tok(0), Some(Token::Comma)) {
                self.i += 1;
            }
        }
        Ok(TStmt::Declare(vars))
    }

    /// The first solid position from the cursor, before `end`, at the top
    /// level (parentheses and CASE counted) where `stop` holds; `end` if none.
    fn until_top(&mut self, end: usize, stop: impl Fn(&Parser2) -> bool) -> usize {
        let save = self.i;
        let (mut depth, mut cases) = (0i32, 0i32);
        while self.i < end {
            if depth == 0 && cases == 0 && stop(self) {
                break;
            }
            match self.tok(0) {
                Some(Token::LParen) => depth += 1,
                Some(Token::RParen) => depth -= 1,
                _ => {}
            }
            match self.word(0).as_str() {
                "CASE" => cases += 1,
                "END" => cases -= 1,
                _ => {}
            }
            self.i += 1;
        }
        let at = self.i;
        self.i = save;
        at
    }

    fn assign(&mut self) -> Result<TStmt> {
        let line = self.line();
        let end = self.extent(self.i, "SET");
        let var = self.var(1).expect("checked");
        self.i += 2;
        let op = match self.tok(0) {
            Some(Token::Eq) => None,
            Some(t @ (Token::Plus | Token::Minus | Token::Mul | Token::Div | Token::Mod))
                if matches!(self.tok(1), Some(Token::Eq)) =>
            {
                let c = t.to_string().chars().next();
                self.i += 1;
                c
            }
            _ => return Err(err_at(line, format!("SET {var} expects = or an operator and ="))),
        };
        self.i += 1;
        let expr = self.text(self.i, end);
        if expr.trim().is_empty() {
            return Err(err_at(line, format!("SET {var} needs a value")));
        }
        self.i = end;
        Ok(TStmt::Assign { var, op, expr })
    }

    /// `SELECT @a = x, @b = y [FROM ...]` becomes `SELECT x, y [FROM ...]`.
    fn select_assign(&mut self) -> Result<TStmt> {
        let line = self.line();
        let end = self.extent(self.i, "SELECT");
        self.i += 1;
        let mut vars = Vec::new();
        let mut exprs = Vec::new();
        loop {
            let Some(v) = self.var(0) else {
                return Err(err_at(
                    line,
                    "a SELECT that assigns to a variable cannot also return columns",
                ));
            };
            if !matches!(self.tok(1), Some(Token::Eq)) {
                return Err(SqlError::unsupported("compound assignment in SELECT @v op= x"));
            }
            self.i += 2;
            let stop = self.until_top(end, |p| {
                matches!(p.tok(0), Some(Token::Comma))
                    || matches!(
                        p.word(0).as_str(),
                        "FROM" | "WHERE" | "GROUP" | "HAVING" | "ORDER" | "UNION" | "OPTION"
                    )
            });
            exprs.push(self.text(self.i, stop));
            vars.push(v);
            self.i = stop;
            if matches!(self.tok(0), Some(Token::Comma)) {
                self.i += 1;
                continue;
            }
            break;
        }
        let rest = self.text(self.i, end);
        self.i = end;
        Ok(TStmt::SelectAssign {
            vars,
            query: format!("SELECT {} {rest}", exprs.join(", ")),
        })
    }

    fn commit_or_rollback(&mut self, first: &str) -> Result<TStmt> {
        let end = self.extent(self.i, first);
        let text = self.text(self.i, end);
        let mut k = 1;
        if matches!(self.word(1).as_str(), "TRAN" | "TRANSACTION" | "WORK") {
            k += 1;
        }
        // A name other than WITH (a savepoint for ROLLBACK TRAN name).
        let named = self.i + k < end && self.word(k) != "WITH";
        if first == "ROLLBACK" && named {
            // ROLLBACK TRAN savepoint: the session's own handling.
            self.i = end;
            return Ok(TStmt::Sql(text));
        }
        if first == "COMMIT" {
            // COMMIT's own parser reads the rest (DELAYED_DURABILITY).
            let c = parse(&text)?;
            self.i = end;
            return match c {
                Command::Commit(dd) => Ok(TStmt::CommitTran(dd)),
                _ => Ok(TStmt::Sql(text)),
            };
        }
        self.i = end;
        Ok(TStmt::RollbackTran)
    }

    /// `[schema.]name`, lower case, without the schema.
    fn object_name(&mut self) -> Result<String> {
        loop {
            let name = match self.tok(0) {
                Some(Token::Word(w)) => w.value.to_ascii_lowercase(),
                _ => return Err(err_at(self.line(), "expected a name")),
            };
            self.i += 1;
            if matches!(self.tok(0), Some(Token::Period)) {
                self.i += 1;
                continue;
            }
            return Ok(name);
        }
    }

    fn exec(&mut self) -> Result<TStmt> {
        let line = self.line();
        let end = self.extent(self.i, "EXEC");
        if matches!(self.tok(1), Some(Token::LParen)) {
            return Err(SqlError::unsupported("EXEC (dynamic SQL)"));
        }
        let text = self.text(self.i, end);
        if matches!(self.word(1).as_str(), "SP_FLUSH_LOG" | "SP_RENAME") {
            self.i = end;
            return Ok(TStmt::Sql(text));
        }
        self.i += 1;
        let ret = match self.var(0) {
            Some(v) if matches!(self.tok(1), Some(Token::Eq)) => {
                self.i += 2;
                Some(v)
            }
            _ => None,
        };
        let name = self.object_name()?;
        if name == "sp_executesql" {
            return Err(SqlError::unsupported("sp_executesql"));
        }
        let mut args = Vec::new();
        while self.i < end {
            let pname = match self.var(0) {
                Some(v) if matches!(self.tok(1), Some(Token::Eq)) => {
                    self.i += 2;
                    Some(v)
                }
                _ => None,
            };
            let stop = self.until_top(end, |p| {
                matches!(p.tok(0), Some(Token::Comma))
                    || matches!(p.word(0).as_str(), "OUTPUT" | "OUT")
            });
            let v = self.text(self.i, stop).trim().to_string();
            if v.is_empty() {
                return Err(err_at(line, format!("EXEC {name}: an argument is missing")));
            }
            self.i = stop;
            let output = self.eat("OUTPUT") || self.eat("OUT");
            args.push(ExecArg {
                name: pname,
                value: (!v.eq_ignore_ascii_case("default")).then_some(v),
                output,
            });
            if matches!(self.tok(0), Some(Token::Comma)) {
                self.i += 1;
            } else if self.i < end {
                return Err(err_at(line, format!("EXEC {name}: expected , between arguments")));
            }
        }
        self.i = end;
        Ok(TStmt::Exec(ExecCall { ret, name, args }))
    }

    /// `name [(] @p type [= default] [OUT[PUT]] [READONLY], ... [)] [WITH ...] AS body`
    /// (the body is the rest of the batch, as in SQL Server).
    fn create_proc(&mut self, mode: ProcMode) -> Result<TStmt> {
        let line = self.line();
        let name = self.object_name()?;
        if matches!(self.tok(0), Some(Token::SemiColon)) {
            return Err(SqlError::unsupported("numbered procedures (name;n)"));
        }
        let paren = matches!(self.tok(0), Some(Token::LParen));
        if paren {
            self.i += 1;
        }
        let mut params = Vec::new();
        while let Some(p) = self.var(0) {
            self.i += 1;
            self.eat("AS");
            let end = self.solid.len();
            let stop = self.until_top(end, |q| {
                matches!(q.tok(0), Some(Token::Eq | Token::Comma))
                    || matches!(
                        q.word(0).as_str(),
                        "OUT" | "OUTPUT" | "READONLY" | "AS" | "WITH" | "VARYING"
                    )
                    || (paren && matches!(q.tok(0), Some(Token::RParen)))
            });
            let ty = self.text(self.i, stop).trim().to_string();
            if ty.is_empty() {
                return Err(err_at(line, format!("parameter {p} needs a type")));
            }
            self.i = stop;
            self.eat("VARYING");
            let default = if matches!(self.tok(0), Some(Token::Eq)) {
                self.i += 1;
                let stop = self.until_top(end, |q| {
                    matches!(q.tok(0), Some(Token::Comma))
                        || matches!(q.word(0).as_str(), "OUT" | "OUTPUT" | "READONLY" | "AS" | "WITH")
                        || (paren && matches!(q.tok(0), Some(Token::RParen)))
                });
                let d = self.text(self.i, stop).trim().to_string();
                self.i = stop;
                Some(d)
            } else {
                None
            };
            let output = self.eat("OUTPUT") || self.eat("OUT");
            if self.eat("READONLY") {
                return Err(SqlError::unsupported("table-valued parameters (READONLY)"));
            }
            params.push(ProcParam {
                name: p,
                ty,
                default,
                output,
            });
            if matches!(self.tok(0), Some(Token::Comma)) {
                self.i += 1;
            } else {
                break;
            }
        }
        if paren && !matches!(self.tok(0), Some(Token::RParen)) {
            return Err(err_at(self.line(), "expected ) after the parameters"));
        }
        if paren {
            self.i += 1;
        }
        if self.eat("WITH") {
            // RECOMPILE and EXECUTE AS OWNER change nothing here; others are refused.
            loop {
                if self.eat("RECOMPILE") {
                } else if self.word(0) == "EXECUTE" && self.word(1) == "AS" {
                    let who = self.word(2);
                    if !matches!(who.as_str(), "OWNER" | "CALLER") {
                        return Err(SqlError::unsupported(format!("WITH EXECUTE AS {who}")));
                    }
                    if who == "OWNER" {
                        return Err(SqlError::unsupported("WITH EXECUTE AS OWNER"));
                    }
                    self.i += 3;
                } else {
                    return Err(SqlError::unsupported(format!(
                        "procedure option {}",
                        self.word(0)
                    )));
                }
                if !matches!(self.tok(0), Some(Token::Comma)) {
                    break;
                }
                self.i += 1;
            }
        }
        if self.word(0) == "FOR" {
            return Err(SqlError::unsupported("FOR REPLICATION"));
        }
        if !self.eat("AS") {
            return Err(err_at(self.line(), "expected AS before the procedure body"));
        }
        let body = self.rest_text(self.i);
        // The body must parse now (its errors are the CREATE's).
        parse_batch(&body)?;
        self.i = self.solid.len();
        Ok(TStmt::CreateProc(ProcDef {
            mode,
            name,
            params,
            body,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sql(s: &str) -> TStmt {
        TStmt::Sql(s.into())
    }

    #[test]
    fn newline_separated_statements() {
        let b = parse_batch("SELECT 1\nTRUNCATE TABLE t\nINSERT INTO t SELECT a FROM u UNION SELECT 2\nSELECT 3").unwrap();
        assert_eq!(
            b,
            vec![
                sql("SELECT 1"),
                sql("TRUNCATE TABLE t"),
                sql("INSERT INTO t SELECT a FROM u UNION SELECT 2"),
                sql("SELECT 3")
            ]
        );
        let b = parse_batch("UPDATE t SET a = CASE WHEN b = 1 THEN 2 ELSE 3 END WHERE c = 1 DELETE FROM t").unwrap();
        assert_eq!(b.len(), 2, "{b:?}");
        let b = parse_batch("DROP TABLE IF EXISTS t\nCREATE TABLE t (a int)\nWITH c AS (SELECT 1 AS x) SELECT x FROM c").unwrap();
        assert_eq!(b.len(), 3, "{b:?}");
    }

    #[test]
    fn the_delayed_durability_loop() {
        let b = parse_batch(
            "DECLARE @i int = 1, @s varchar(10);\nWHILE @i <= 10000\nBEGIN\n  BEGIN TRAN\n  INSERT INTO t VALUES (@i)\n  COMMIT TRAN WITH (DELAYED_DURABILITY = ON)\n  SET @i += 1\nEND",
        )
        .unwrap();
        assert_eq!(b.len(), 2);
        let TStmt::Declare(v) = &b[0] else { panic!("{b:?}") };
        assert_eq!(v[0].init.as_deref(), Some("1"));
        assert_eq!(v[1].ty, "varchar(10)");
        let TStmt::While { cond, body } = &b[1] else { panic!() };
        assert_eq!(cond.trim(), "@i <= 10000");
        let TStmt::Block(s) = body.as_ref() else { panic!() };
        assert_eq!(s[0], TStmt::BeginTran);
        assert_eq!(s[1], sql("INSERT INTO t VALUES (@i)"));
        assert_eq!(s[2], TStmt::CommitTran(Some(true)));
        assert_eq!(
            s[3],
            TStmt::Assign {
                var: "@i".into(),
                op: Some('+'),
                expr: " 1".into()
            }
        );
    }

    #[test]
    fn procedures_and_calls() {
        let b = parse_batch(
            "CREATE PROCEDURE dbo.p @Iterations int = 1000, @out int OUTPUT AS\nBEGIN\nSET NOCOUNT ON\nSELECT @out = count(*) FROM t\nRETURN 3\nEND",
        )
        .unwrap();
        let TStmt::CreateProc(d) = &b[0] else { panic!("{b:?}") };
        assert_eq!(d.name, "p");
        assert_eq!(d.params[0].default.as_deref(), Some("1000"));
        assert!(d.params[1].output);
        let body = parse_batch(&d.body).unwrap();
        let TStmt::Block(s) = &body[0] else { panic!() };
        assert_eq!(s[0], TStmt::NoCount(true));
        assert!(matches!(&s[1], TStmt::SelectAssign { query, .. } if query.trim() == "SELECT count(*) FROM t"));
        let b = parse_batch("EXEC @rc = p 5, @out = @x OUTPUT\nEXECUTE p @Iterations = DEFAULT").unwrap();
        let TStmt::Exec(c) = &b[0] else { panic!() };
        assert_eq!(c.ret.as_deref(), Some("@rc"));
        assert_eq!(c.args.len(), 2);
        assert!(c.args[1].output);
        let TStmt::Exec(c) = &b[1] else { panic!() };
        assert_eq!(c.args[0].value, None);
    }

    #[test]
    fn if_else_and_errors() {
        let b = parse_batch("IF @a > 1 PRINT 'x' ELSE IF EXISTS (SELECT 1) SELECT 2 ELSE BEGIN SELECT 3 END").unwrap();
        assert_eq!(b.len(), 1, "{b:?}");
        assert!(parse_batch("BEGIN SELECT 1").is_err());
        assert!(parse_batch("END").is_err());
        assert!(parse_batch("WHILE 1=1").is_err());
    }

    #[test]
    fn which_batches_are_tsql() {
        assert!(is_tsql_batch("DECLARE @i int = 1"));
        assert!(is_tsql_batch("select 1; if 1=1 print 'a'"));
        assert!(is_tsql_batch("SELECT @@ROWCOUNT"));
        assert!(!is_tsql_batch("BEGIN; SELECT 1; COMMIT"));
        assert!(!is_tsql_batch("BEGIN TRANSACTION ISOLATION LEVEL SERIALIZABLE"));
        assert!(!is_tsql_batch("DECLARE c CURSOR FOR SELECT 1"));
        assert!(!is_tsql_batch("EXECUTE q(1)"));
        assert!(!is_tsql_batch("SELECT '@x' @> '{}'"));
        assert!(is_tsql_batch("BEGIN TRAN"));
    }
}
