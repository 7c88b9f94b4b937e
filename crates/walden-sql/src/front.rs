//! The front end: splits a batch into statements, recognises the statements
//! sqlparser does not take (T-SQL durability and administration forms), and
//! parses the rest with sqlparser (PostgreSQL dialect first, MS SQL second).

use crate::error::{Result, SqlError};
use sqlparser::ast::Statement;
use sqlparser::dialect::{MsSqlDialect, PostgreSqlDialect};
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Token, Tokenizer};

/// A statement, either handled by Walden's front end or parsed by sqlparser.
#[derive(Clone, Debug)]
pub enum Command {
    /// BEGIN and the other transaction-control statements (`txmodes.rs`).
    Tx(crate::txmodes::TxCommand),
    /// `COMMIT` / `END`, with `WITH (DELAYED_DURABILITY = ON|OFF)` if given.
    Commit(Option<bool>),
    Rollback,
    /// `SET name = value` / `SET name TO value` / `SET name value`.
    Set(String, String),
    Show(String),
    Use(String),
    FlushLog,
    Checkpoint,
    BackupDatabase {
        name: String,
        path: String,
    },
    BackupLog {
        name: String,
        path: String,
    },
    ClearWaitStats,
    /// `DBCC SQLPERF('sys.dm_log_exposure', CLEAR)`: restarts the peak exposure.
    ClearExposurePeaks,
    /// `CREATE AVAILABILITY GROUP ...` (see `hadr.rs`).
    CreateAvailabilityGroup(Box<walden_replication::AgDef>),
    /// `ALTER AVAILABILITY GROUP name FAILOVER | FORCE_FAILOVER_ALLOW_DATA_LOSS`.
    AvailabilityGroupFailover {
        name: String,
        force: bool,
    },
    DropAvailabilityGroup(String),
    /// `ALTER AVAILABILITY GROUP name RESEED 'replica'`.
    AvailabilityGroupReseed {
        name: String,
        replica: String,
    },
    CreateDatabase(String),
    DropDatabase {
        name: String,
        if_exists: bool,
    },
    /// `ALTER DATABASE name SET option = value`.
    AlterDatabase {
        name: String,
        option: String,
        value: String,
    },
    /// `DELETE TOP (n) ...`: the rest parsed as a DELETE, at most n rows.
    DeleteTop(u64, Box<Statement>),
    /// `CREATE SEQUENCE name [START [WITH] n] [INCREMENT [BY] n] ...` (options in any order).
    CreateSequence {
        name: String,
        if_not_exists: bool,
        start: Option<i64>,
        increment: i64,
    },
    /// Statements accepted and ignored (`VACUUM`, `ANALYZE`, `SET NOCOUNT ON`, ...).
    Ignored(String),
    /// `SET LOCAL name = value`: until the transaction block ends.
    SetLocal(String, String),
    /// `RESET name` / `RESET ALL` (None).
    Reset(Option<String>),
    /// `DEALLOCATE [PREPARE] name | ALL` (None).
    Deallocate(Option<String>),
    /// `DISCARD ALL`: settings, advisory locks, prepared statements.
    DiscardAll,
    /// pgbench's catalog probe of `pg_class`/`pg_inherits` for a table.
    PgbenchPartitionProbe(String),
    /// `DECLARE name ... CURSOR ... FOR query` (see `cursor.rs`).
    Declare(Box<crate::cursor::DeclareCursor>),
    /// `FETCH` / `MOVE`.
    Fetch(crate::cursor::FetchCursor),
    /// `CLOSE name` / `CLOSE ALL` (None).
    CloseCursor(Option<String>),
    /// CREATE/ALTER/DROP ROLE, GRANT, REVOKE (see `role_stmt.rs`).
    Access(Box<crate::role_stmt::AccessStmt>),
    Sql(Box<Statement>),
}

/// Splits a batch on semicolons outside quotes, comments and dollar quotes.
pub fn split(batch: &str) -> Vec<&str> {
    let b = batch.as_bytes();
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\'' | b'"' => {
                let q = b[i];
                i += 1;
                while i < b.len() {
                    if b[i] == q {
                        if i + 1 < b.len() && b[i + 1] == q {
                            i += 2;
                            continue;
                        }
                        break;
                    }
                    i += 1;
                }
            }
            b'-' if b.get(i + 1) == Some(&b'-') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                    i += 1;
                }
                i += 1;
            }
            b'$' => {
                // $tag$ ... $tag$
                let mut j = i + 1;
                while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
                    j += 1;
                }
                if j < b.len() && b[j] == b'$' && !(j > i + 1 && b[i + 1].is_ascii_digit()) {
                    let tag = &batch[i..=j];
                    if let Some(end) = batch[j + 1..].find(tag) {
                        i = j + 1 + end + tag.len() - 1;
                    } else {
                        i = b.len();
                    }
                }
            }
            b';' => {
                out.push(&batch[start..i]);
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    out.push(&batch[start.min(batch.len())..]);
    out.into_iter().filter(|s| !is_blank(s)).collect()
}

/// Whether a piece of a batch holds only whitespace and comments (checked
/// without tokenizing: this runs for every statement).
fn is_blank(s: &str) -> bool {
    let mut rest = s.trim_start();
    loop {
        if rest.is_empty() {
            return true;
        }
        if let Some(r) = rest.strip_prefix("--") {
            rest = r.find('\n').map_or("", |i| &r[i + 1..]).trim_start();
        } else if let Some(r) = rest.strip_prefix("/*") {
            rest = r.find("*/").map_or("", |i| &r[i + 2..]).trim_start();
        } else {
            return false;
        }
    }
}

fn words_and_tokens(sql: &str) -> Vec<Token> {
    let dialect = PostgreSqlDialect {};
    match Tokenizer::new(&dialect, sql).tokenize() {
        Ok(t) => t
            .into_iter()
            .filter(|t| !matches!(t, Token::Whitespace(_)))
            .collect(),
        Err(_) => vec![Token::make_word("?", None)],
    }
}

/// A cursor over the significant tokens of one statement.
pub(crate) struct Toks {
    t: Vec<Token>,
    i: usize,
}

impl Toks {
    pub(crate) fn word(&self, k: usize) -> Option<String> {
        match self.t.get(self.i + k) {
            Some(Token::Word(w)) => Some(w.value.to_ascii_uppercase()),
            _ => None,
        }
    }
    pub(crate) fn is(&self, k: usize, w: &str) -> bool {
        self.word(k).as_deref() == Some(w)
    }
    pub(crate) fn next(&mut self) -> Option<Token> {
        let t = self.t.get(self.i).cloned();
        self.i += 1;
        t
    }
    pub(crate) fn eat(&mut self, w: &str) -> bool {
        if self.is(0, w) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    pub(crate) fn eat_tok(&mut self, tok: &Token) -> bool {
        if self.t.get(self.i) == Some(tok) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    pub(crate) fn ident(&mut self) -> Result<String> {
        match self.next() {
            Some(Token::Word(w)) => Ok(w.value),
            Some(Token::SingleQuotedString(s)) => Ok(s),
            other => Err(SqlError::syntax(format!(
                "syntax error: expected a name, found {}",
                other
                    .map(|t| t.to_string())
                    .unwrap_or_else(|| "end of input".into())
            ))),
        }
    }
    pub(crate) fn value(&mut self) -> Result<String> {
        match self.next() {
            Some(Token::Word(w)) => Ok(w.value),
            Some(Token::SingleQuotedString(s)) => Ok(s),
            Some(Token::Number(n, _)) => Ok(n),
            Some(Token::Minus) => Ok(format!("-{}", self.value()?)),
            other => Err(SqlError::syntax(format!(
                "syntax error: expected a value, found {}",
                other
                    .map(|t| t.to_string())
                    .unwrap_or_else(|| "end of input".into())
            ))),
        }
    }
    /// Whether the token at `k` is a quoted identifier.
    pub(crate) fn quoted(&self, k: usize) -> bool {
        matches!(self.t.get(self.i + k), Some(Token::Word(w)) if w.quote_style.is_some())
    }
    pub(crate) fn peek_is(&self, tok: &Token) -> bool {
        self.t.get(self.i) == Some(tok)
    }
    pub(crate) fn peek_text(&self) -> Option<String> {
        self.t.get(self.i).map(|t| t.to_string())
    }
    pub(crate) fn at_end(&self) -> bool {
        self.i >= self.t.len()
    }
    pub(crate) fn end(&self, what: &str) -> Result<()> {
        if self.at_end() {
            Ok(())
        } else {
            Err(SqlError::syntax(format!(
                "syntax error at or near \"{}\" in {what}",
                self.t[self.i]
            )))
        }
    }
}

/// The deepest expression or set-operation chain Walden plans and evaluates
/// (PostgreSQL's default `max_stack_depth` of 2 MB allows a few thousand to a
/// few tens of thousands, depending on the operator). Statements above it
/// fail with 54001 before sqlparser builds a tree: a left-deep chain such as
/// `1+1+...+1` is parsed in a loop, but planning, evaluating and even
/// dropping that tree recurse once per operator.
pub const MAX_DEPTH: usize = 10_000;

/// The deepest nesting of parentheses (subqueries, function calls,
/// parenthesised expressions) Walden plans. Planning a nested scalar
/// subquery copies the levels inside it, so time and memory grow with the
/// square of this depth: 2,000 levels took 50 s and 15 GB before the limit.
pub const MAX_NESTING: usize = 200;

/// An upper bound on how deep the statement's expression tree can be: at
/// each parenthesis level, the operators since the last comma (a chain of
/// them nests one deeper per operator), summed over the enclosing levels;
/// and the deepest parenthesis nesting. Linear in the tokens, no recursion.
pub fn depth_bound(tokens: &[Token]) -> (usize, usize) {
    let mut levels: Vec<usize> = vec![0];
    let (mut depth, mut max, mut nest) = (0usize, 0usize, 0usize);
    for t in tokens {
        match t {
            Token::LParen | Token::LBracket | Token::LBrace => {
                levels.push(0);
                depth += 1;
                nest = nest.max(levels.len() - 1);
            }
            Token::RParen | Token::RBracket | Token::RBrace if levels.len() > 1 => {
                depth -= levels.pop().unwrap_or(0) + 1;
            }
            Token::Comma | Token::SemiColon => {
                if let Some(top) = levels.last_mut() {
                    depth -= *top;
                    *top = 0;
                }
            }
            t if chains(t) => {
                if let Some(top) = levels.last_mut() {
                    *top += 1;
                }
                depth += 1;
            }
            _ => {}
        }
        max = max.max(depth);
    }
    (max, nest)
}

/// The deepest parenthesis nesting in the text, counting parentheses inside
/// literals and comments too (an over-estimate is harmless: it sizes a
/// stack). Bytes, no tokenizer: this runs before every statement.
pub fn paren_nesting(sql: &str) -> usize {
    let (mut d, mut max) = (0usize, 0usize);
    for b in sql.bytes() {
        match b {
            b'(' | b'[' => {
                d += 1;
                max = max.max(d);
            }
            b')' | b']' => d = d.saturating_sub(1),
            _ => {}
        }
    }
    max
}

/// Whether a token can add a level to a chain: operators, and the keywords
/// that join two operands (AND, OR, UNION, IS, LIKE, ...).
fn chains(t: &Token) -> bool {
    match t {
        Token::Word(w) => {
            w.quote_style.is_none()
                && matches!(
                    w.value.to_ascii_uppercase().as_str(),
                    "AND"
                        | "OR"
                        | "NOT"
                        | "UNION"
                        | "EXCEPT"
                        | "INTERSECT"
                        | "MINUS"
                        | "IS"
                        | "LIKE"
                        | "ILIKE"
                        | "SIMILAR"
                        | "BETWEEN"
                        | "IN"
                        | "COLLATE"
                        | "AT"
                        | "OVERLAPS"
                        | "JOIN"
                        | "CASE"
                )
        }
        Token::EOF
        | Token::Number(..)
        | Token::Placeholder(_)
        | Token::Whitespace(_)
        | Token::Period
        | Token::Comma
        | Token::SemiColon
        | Token::Char(_)
        | Token::SingleQuotedString(_)
        | Token::DoubleQuotedString(_)
        | Token::TripleSingleQuotedString(_)
        | Token::TripleDoubleQuotedString(_)
        | Token::DollarQuotedString(_)
        | Token::SingleQuotedByteStringLiteral(_)
        | Token::DoubleQuotedByteStringLiteral(_)
        | Token::TripleSingleQuotedByteStringLiteral(_)
        | Token::TripleDoubleQuotedByteStringLiteral(_)
        | Token::SingleQuotedRawStringLiteral(_)
        | Token::DoubleQuotedRawStringLiteral(_)
        | Token::TripleSingleQuotedRawStringLiteral(_)
        | Token::TripleDoubleQuotedRawStringLiteral(_)
        | Token::NationalStringLiteral(_)
        | Token::QuoteDelimitedStringLiteral(_)
        | Token::NationalQuoteDelimitedStringLiteral(_)
        | Token::EscapedStringLiteral(_)
        | Token::UnicodeStringLiteral(_)
        | Token::HexStringLiteral(_) => false,
        _ => true,
    }
}

/// Parses one statement.
pub fn parse(sql: &str) -> Result<Command> {
    let mut t = Toks {
        t: words_and_tokens(sql),
        i: 0,
    };
    let (depth, nesting) = depth_bound(&t.t);
    if depth > MAX_DEPTH {
        return Err(SqlError::too_deep(depth));
    }
    if nesting > MAX_NESTING {
        return Err(SqlError::too_nested(nesting));
    }
    let first = t.word(0).unwrap_or_default();
    match first.as_str() {
        "BEGIN" | "START" => return crate::txmodes::parse_begin(&mut t).map(Command::Tx),
        "SAVEPOINT" | "SAVE" => return crate::txmodes::parse_savepoint(&mut t).map(Command::Tx),
        "RELEASE" => return crate::txmodes::parse_release(&mut t).map(Command::Tx),
        "COMMIT" | "END" => {
            t.i += 1;
            let _ = t.eat("TRAN") || t.eat("TRANSACTION") || t.eat("WORK");
            if !t.is(0, "WITH") && !t.is(0, "AND") && matches!(t.t.get(t.i), Some(Token::Word(_))) {
                t.i += 1; // transaction name
            }
            let mut dd = None;
            if t.eat("WITH") {
                if !t.eat_tok(&Token::LParen)
                    || !t.eat("DELAYED_DURABILITY")
                    || !t.eat_tok(&Token::Eq)
                {
                    return Err(SqlError::syntax(
                        "syntax error: expected COMMIT WITH (DELAYED_DURABILITY = ON | OFF)",
                    ));
                }
                dd = Some(match t.value()?.to_ascii_uppercase().as_str() {
                    "ON" => true,
                    "OFF" => false,
                    v => {
                        return Err(SqlError::syntax(format!(
                            "DELAYED_DURABILITY must be ON or OFF, not {v}"
                        )))
                    }
                });
                if !t.eat_tok(&Token::RParen) {
                    return Err(SqlError::syntax(
                        "syntax error: expected ) after DELAYED_DURABILITY option",
                    ));
                }
            }
            if t.eat("AND") && !(t.eat("NO") && t.eat("CHAIN")) {
                return Err(SqlError::unsupported("COMMIT AND CHAIN"));
            }
            t.end("COMMIT")?;
            return Ok(Command::Commit(dd));
        }
        "ROLLBACK" | "ABORT" => {
            t.i += 1;
            return Ok(match crate::txmodes::parse_rollback(&mut t)? {
                Some(c) => Command::Tx(c),
                None => Command::Rollback,
            });
        }
        "CHECKPOINT" => return Ok(Command::Checkpoint),
        // Cursors keep their rows, not the table rows they came from.
        "UPDATE" | "DELETE"
            if t.t.windows(3).any(|w| {
                matches!(w, [Token::Word(a), Token::Word(b), Token::Word(c)]
                    if a.value.eq_ignore_ascii_case("where")
                        && b.value.eq_ignore_ascii_case("current")
                        && c.value.eq_ignore_ascii_case("of"))
            }) =>
        {
            return Err(SqlError::unsupported(format!(
                "{first} ... WHERE CURRENT OF"
            )));
        }
        "CREATE" | "ALTER" | "DROP" if t.is(1, "ROLE") || t.is(1, "USER") || t.is(1, "GROUP") => {
            return crate::role_stmt::parse(&first, &mut t);
        }
        "GRANT" | "REVOKE" => return crate::role_stmt::parse(&first, &mut t),
        "CREATE" | "ALTER" | "DROP" if t.is(1, "AVAILABILITY") && t.is(2, "GROUP") => {
            t.i += 3;
            return crate::hadr::parse(&first, &mut t);
        }
        // T-SQL's DECLARE @variable is not a cursor.
        f if crate::cursor::is_cursor_statement(f)
            && !sql
                .trim_start()
                .get(f.len()..)
                .is_some_and(|r| r.trim_start().starts_with('@')) =>
        {
            return crate::cursor::parse(f, sql);
        }
        "RESET" => {
            t.i += 1;
            if t.eat("ALL") {
                return Ok(Command::Reset(None));
            }
            let mut name = t.ident()?;
            while t.eat_tok(&Token::Period) {
                name = format!("{name}.{}", t.ident()?);
            }
            // RESET TIME ZONE is RESET timezone.
            if name.eq_ignore_ascii_case("time") && t.eat("ZONE") {
                name = "timezone".into();
            }
            if !t.at_end() {
                return Err(SqlError::syntax(format!("syntax error in RESET ({sql})")));
            }
            return Ok(Command::Reset(Some(name.to_ascii_lowercase())));
        }
        // Nothing is ever listened to: accepting LISTEN would promise
        // notifications that never come.
        "LISTEN" | "NOTIFY" => {
            return Err(SqlError::unsupported(format!("{first} (notifications)")))
        }
        "DEALLOCATE" => {
            t.i += 1;
            t.eat("PREPARE");
            if t.eat("ALL") {
                t.end("DEALLOCATE ALL")?;
                return Ok(Command::Deallocate(None));
            }
            // An unquoted name folds to lower case, as every identifier does.
            let name = match t.next() {
                Some(Token::Word(w)) if w.quote_style.is_none() => w.value.to_ascii_lowercase(),
                Some(Token::Word(w)) => w.value,
                _ => return Err(SqlError::syntax("DEALLOCATE needs a statement name or ALL")),
            };
            t.end("DEALLOCATE")?;
            return Ok(Command::Deallocate(Some(name)));
        }
        "DISCARD" if t.is(1, "ALL") => {
            t.i += 2;
            t.end("DISCARD ALL")?;
            return Ok(Command::DiscardAll);
        }
        "VACUUM" | "ANALYZE" | "DISCARD" | "UNLISTEN" => return Ok(Command::Ignored(first)),
        "USE" => {
            t.i += 1;
            let name = t.ident()?;
            return Ok(Command::Use(name));
        }
        "EXEC" | "EXECUTE" => {
            t.i += 1;
            let mut name = t.ident()?;
            while t.eat_tok(&Token::Period) {
                name = t.ident()?;
            }
            if name.eq_ignore_ascii_case("sp_flush_log") {
                return Ok(Command::FlushLog);
            }
            if name.eq_ignore_ascii_case("sp_rename") {
                // Its arguments are strings ('t.a', 'b', 'COLUMN'), possibly
                // N'...' and named (@objname = ...).
                let args: Vec<String> = t.t[t.i..]
                    .iter()
                    .filter_map(|x| match x {
                        Token::SingleQuotedString(s) | Token::NationalStringLiteral(s) => {
                            Some(s.clone())
                        }
                        _ => None,
                    })
                    .collect();
                return Ok(Command::Sql(Box::new(crate::alter_table_parse::sp_rename(
                    &args,
                )?)));
            }
            return Err(SqlError::new(
                crate::error::ErrorKind::UndefinedFunction,
                format!("procedure \"{name}\" does not exist"),
            ));
        }
        "DBCC" => {
            t.i += 1;
            if t.eat("SQLPERF") {
                let rest: String = t.t[t.i..]
                    .iter()
                    .map(|x| x.to_string())
                    .collect::<Vec<_>>()
                    .join(" ");
                let up = rest.to_ascii_uppercase();
                if up.contains("DM_OS_WAIT_STATS") && up.contains("CLEAR") {
                    return Ok(Command::ClearWaitStats);
                }
                if up.contains("DM_LOG_EXPOSURE") && up.contains("CLEAR") {
                    return Ok(Command::ClearExposurePeaks);
                }
            }
            return Err(SqlError::unsupported(
                "this DBCC command (only DBCC SQLPERF('sys.dm_os_wait_stats' | 'sys.dm_log_exposure', CLEAR))",
            ));
        }
        "BACKUP" => {
            t.i += 1;
            let log = if t.eat("LOG") {
                true
            } else if t.eat("DATABASE") {
                false
            } else {
                return Err(SqlError::syntax(
                    "syntax error: expected BACKUP DATABASE or BACKUP LOG",
                ));
            };
            let name = t.ident()?;
            if !(t.eat("TO") && t.eat("DISK") && t.eat_tok(&Token::Eq)) {
                return Err(SqlError::syntax("syntax error: expected TO DISK = 'path'"));
            }
            let path = t.value()?;
            return Ok(if log {
                Command::BackupLog { name, path }
            } else {
                Command::BackupDatabase { name, path }
            });
        }
        "SET" => return parse_set(&mut t, sql),
        "SHOW" => {
            t.i += 1;
            // SHOW TRANSACTION ISOLATION LEVEL (JDBC's getTransactionIsolation).
            if t.is(0, "TRANSACTION") && t.is(1, "ISOLATION") && t.is(2, "LEVEL") {
                t.i += 3;
                t.end("SHOW")?;
                return Ok(Command::Show("transaction_isolation".into()));
            }
            let mut name = t.ident()?;
            while t.eat_tok(&Token::Period) {
                name = format!("{name}.{}", t.ident()?);
            }
            return Ok(Command::Show(name.to_ascii_lowercase()));
        }
        "CREATE" if t.is(1, "SEQUENCE") => {
            t.i += 2;
            let if_not_exists = t.is(0, "IF") && t.is(1, "NOT") && t.is(2, "EXISTS");
            if if_not_exists {
                t.i += 3;
            }
            let name = t.ident()?;
            let name = qualified_last(&mut t, name)?;
            let (mut start, mut increment) = (None, 1i64);
            let num = |t: &mut Toks| -> Result<i64> {
                t.value()?
                    .parse()
                    .map_err(|_| SqlError::syntax("syntax error: sequence options need integers"))
            };
            while !t.at_end() {
                if t.eat("START") {
                    t.eat("WITH");
                    start = Some(num(&mut t)?);
                } else if t.eat("INCREMENT") {
                    t.eat("BY");
                    increment = num(&mut t)?;
                } else if t.eat("AS") {
                    t.ident()?;
                } else if t.eat("MINVALUE") || t.eat("MAXVALUE") || t.eat("CACHE") {
                    num(&mut t)?;
                } else if t.eat("NO") {
                    t.ident()?;
                } else if t.eat("CYCLE") || t.eat("NOCYCLE") {
                } else {
                    return Err(SqlError::syntax(format!(
                        "syntax error at or near \"{}\" in CREATE SEQUENCE",
                        t.t[t.i]
                    )));
                }
            }
            return Ok(Command::CreateSequence {
                name,
                if_not_exists,
                start,
                increment,
            });
        }
        "CREATE" if t.is(1, "DATABASE") => {
            t.i += 2;
            return Ok(Command::CreateDatabase(t.ident()?));
        }
        "DROP" if t.is(1, "DATABASE") => {
            t.i += 2;
            let if_exists = t.is(0, "IF") && t.is(1, "EXISTS");
            if if_exists {
                t.i += 2;
            }
            return Ok(Command::DropDatabase {
                name: t.ident()?,
                if_exists,
            });
        }
        "ALTER" if t.is(1, "DATABASE") => {
            t.i += 2;
            let name = t.ident()?;
            if !t.eat("SET") {
                return Err(SqlError::syntax(
                    "syntax error: expected ALTER DATABASE name SET option = value",
                ));
            }
            let option = t.ident()?.to_ascii_uppercase();
            let _ = t.eat_tok(&Token::Eq);
            let value = t.value()?;
            let _ = t.eat("WITH") && (t.eat("NO_WAIT") || t.eat("ROLLBACK") && t.eat("IMMEDIATE"));
            return Ok(Command::AlterDatabase {
                name,
                option,
                value,
            });
        }
        "DELETE" if t.is(1, "TOP") => {
            // DELETE TOP (n) [FROM] t ...: strip TOP (n) and parse the rest.
            t.i += 2;
            let paren = t.eat_tok(&Token::LParen);
            let n: u64 = t
                .value()?
                .parse()
                .map_err(|_| SqlError::syntax("syntax error: TOP needs a row count"))?;
            if paren && !t.eat_tok(&Token::RParen) {
                return Err(SqlError::syntax("syntax error: expected ) after TOP (n"));
            }
            let rest: Vec<String> = t.t[t.i..].iter().map(|x| x.to_string()).collect();
            let mut text = String::from("DELETE ");
            if !t.is(0, "FROM") {
                text.push_str("FROM ");
            }
            text.push_str(&rest.join(" "));
            let stmt = parse_sql(&text)?;
            return Ok(Command::DeleteTop(n, Box::new(stmt)));
        }
        _ => {}
    }
    let low = sql.to_ascii_lowercase();
    if first == "COPY" && low.contains("freeze") {
        // `WITH (FREEZE ON)` (pgbench -i) is a no-op here and sqlparser rejects
        // the ON; drop the option.
        let cleaned = drop_freeze(sql);
        return Ok(Command::Sql(Box::new(parse_sql(&cleaned)?)));
    }
    if low.contains("pg_catalog.pg_class") && low.contains("pg_inherits") && low.contains("relname")
    {
        if let Some(i) = low.find("c.relname = '") {
            let rest = &sql[i + 13..];
            if let Some(end) = rest.find('\'') {
                return Ok(Command::PgbenchPartitionProbe(rest[..end].to_string()));
            }
        }
    }
    if first == "ALTER" && low.split_whitespace().nth(1) == Some("table") {
        return Ok(Command::Sql(Box::new(crate::alter_table_parse::parse(
            sql,
        )?)));
    }
    Ok(Command::Sql(Box::new(parse_sql(sql)?)))
}

fn qualified_last(t: &mut Toks, mut name: String) -> Result<String> {
    while t.eat_tok(&Token::Period) {
        name = t.ident()?;
    }
    Ok(name)
}

fn parse_set(t: &mut Toks, sql: &str) -> Result<Command> {
    t.i += 1;
    let local = t.eat("LOCAL");
    if !local {
        t.eat("SESSION");
    }
    if t.is(0, "TRANSACTION") || t.is(0, "CHARACTERISTICS") {
        return crate::txmodes::parse_set_transaction(t).map(Command::Tx);
    }
    let mut name = t.ident()?;
    while t.eat_tok(&Token::Period) {
        name = format!("{name}.{}", t.ident()?);
    }
    let name = name.to_ascii_lowercase();
    if name == "time" && t.is(0, "ZONE") {
        t.i += 1;
        let v = t.value()?;
        return Ok(if local {
            Command::SetLocal("timezone".into(), v)
        } else {
            Command::Set("timezone".into(), v)
        });
    }
    let _ = t.eat_tok(&Token::Eq) || t.eat("TO");
    if t.at_end() {
        return Err(SqlError::syntax(format!(
            "syntax error: SET {name} needs a value ({sql})"
        )));
    }
    let mut parts = Vec::new();
    while !t.at_end() {
        match t.next() {
            Some(Token::Comma) => parts.push(",".to_string()),
            Some(Token::Word(w)) => parts.push(w.value),
            Some(Token::SingleQuotedString(s)) => parts.push(s),
            Some(Token::Number(n, _)) => parts.push(n),
            Some(Token::Minus) => parts.push("-".into()),
            Some(other) => parts.push(other.to_string()),
            None => break,
        }
    }
    let value = parts.join(" ").replace(" , ", ", ").replace("- ", "-");
    Ok(if local {
        Command::SetLocal(name, value)
    } else {
        Command::Set(name, value)
    })
}

/// sqlparser parses `FOR UPDATE` and `FOR SHARE` only: `FOR NO KEY UPDATE`
/// and `FOR KEY SHARE` are spelled as a marker clause (see `locking.rs`)
/// followed by the stronger form. `None` when the text has neither.
fn weaker_row_locks(sql: &str) -> Option<String> {
    if !sql.to_ascii_uppercase().contains("KEY") {
        return None;
    }
    let toks = Tokenizer::new(&PostgreSqlDialect {}, sql)
        .with_unescape(false)
        .tokenize()
        .ok()?;
    let words: Vec<(usize, String)> = toks
        .iter()
        .enumerate()
        .filter(|(_, t)| !matches!(t, Token::Whitespace(_)))
        .map(|(i, t)| match t {
            Token::Word(w) if w.quote_style.is_none() => (i, w.value.to_ascii_uppercase()),
            _ => (i, String::new()),
        })
        .collect();
    let marker = format!("\"{}\"", crate::locking::WEAKER);
    // (first token, last token, replacement)
    let mut cuts: Vec<(usize, usize, String)> = Vec::new();
    for (j, (i, w)) in words.iter().enumerate() {
        if w != "FOR" {
            continue;
        }
        let next = |k: usize| words.get(j + k).map(|(_, w)| w.as_str());
        if next(1) == Some("NO") && next(2) == Some("KEY") && next(3) == Some("UPDATE") {
            cuts.push((
                *i,
                words[j + 3].0,
                format!("FOR UPDATE OF {marker} FOR UPDATE"),
            ));
        } else if next(1) == Some("KEY") && next(2) == Some("SHARE") {
            cuts.push((
                *i,
                words[j + 2].0,
                format!("FOR SHARE OF {marker} FOR SHARE"),
            ));
        }
    }
    if cuts.is_empty() {
        return None;
    }
    let mut out = String::new();
    let mut i = 0;
    for (from, to, with) in cuts {
        for t in &toks[i..from] {
            out.push_str(&t.to_string());
        }
        out.push_str(&with);
        i = to + 1;
    }
    for t in &toks[i..] {
        out.push_str(&t.to_string());
    }
    Some(out)
}

/// Parses a statement with sqlparser: PostgreSQL first, then MS SQL for
/// T-SQL forms; the PostgreSQL error is reported if both fail.
/// The character position (from 1) of sqlparser's `Line: l, Column: c` in
/// `sql`, as PostgreSQL's ErrorResponse reports it.
fn error_position(sql: &str, msg: &str) -> Option<u32> {
    let at = msg.rfind("Line: ")?;
    let rest = &msg[at + 6..];
    let (line, rest) = rest.split_once(", Column: ")?;
    let line: usize = line.trim().parse().ok()?;
    let col: usize = rest
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect::<String>()
        .parse()
        .ok()?;
    let before: usize = sql
        .split('\n')
        .take(line.checked_sub(1)?)
        .map(|l| l.chars().count() + 1)
        .sum();
    u32::try_from(before + col).ok()
}

pub fn parse_sql(sql: &str) -> Result<Statement> {
    let original = sql;
    // T-SQL's @@SPID and @@VERSION parse as operators in the PostgreSQL
    // dialect; spell them as the equivalent functions.
    let rewritten;
    let sql = if sql.contains("@@") {
        rewritten = replace_ci(
            &replace_ci(sql, "@@spid", "pg_backend_pid()"),
            "@@version",
            "version()",
        );
        rewritten.as_str()
    } else {
        sql
    };
    let rewritten3;
    let sql = match crate::index_ddl::tsql_create_index(sql)? {
        Some(s) => {
            rewritten3 = s;
            rewritten3.as_str()
        }
        None => sql,
    };
    let rewritten2;
    let sql = if sql.to_ascii_lowercase().contains("next value for") {
        rewritten2 = next_value_for(sql);
        rewritten2.as_str()
    } else {
        sql
    };
    let rewritten3;
    let sql = match weaker_row_locks(sql) {
        Some(s) => {
            rewritten3 = s;
            rewritten3.as_str()
        }
        None => sql,
    };
    // Nesting is bounded by `depth_bound` before parsing (sqlparser's own
    // default of 50 refused ordinary nested CASEs and subqueries, and turned
    // into a misleading syntax error where it backtracks).
    let parse = |dialect: &dyn sqlparser::dialect::Dialect| {
        Parser::new(dialect)
            .with_recursion_limit(MAX_DEPTH + MAX_NESTING + 1)
            .try_with_sql(sql)
            .and_then(|mut p| p.parse_statements())
    };
    let pg = parse(&PostgreSqlDialect {});
    let stmts = match pg {
        Ok(s) => s,
        Err(pg_err) => match parse(&MsSqlDialect {}) {
            Ok(s) => s,
            Err(_) => {
                if matches!(
                    pg_err,
                    sqlparser::parser::ParserError::RecursionLimitExceeded
                ) {
                    return Err(SqlError::new(
                        crate::error::ErrorKind::StackDepth,
                        "stack depth limit exceeded: the statement nests parentheses, \
                         subqueries or CASE expressions more than 50 deep",
                    ));
                }
                let msg = pg_err.to_string();
                let msg = msg
                    .strip_prefix("sql parser error: ")
                    .unwrap_or(&msg)
                    .to_string();
                let e = SqlError::syntax(format!("syntax error: {msg}"));
                // A rewritten text's columns are not the client's.
                return Err(match error_position(original, &msg) {
                    Some(p) if std::ptr::eq(original, sql) => {
                        e.with_fields(crate::error::ErrorFields {
                            position: Some(p),
                            ..Default::default()
                        })
                    }
                    _ => e,
                });
            }
        },
    };
    let mut it = stmts.into_iter();
    let first = it
        .next()
        .ok_or_else(|| SqlError::syntax("empty statement"))?;
    if it.next().is_some() {
        return Err(SqlError::syntax("syntax error: more than one statement"));
    }
    Ok(first)
}

/// The fast path for keyed writes sent as plain text: `INSERT`, `UPDATE` and
/// `DELETE` statements whose literals differ from call to call (pgbench's
/// simple protocol, ORMs without prepared statements) are turned into a
/// template with `$n` parameters, so each statement shape is parsed once per
/// session. Returns `None` when the statement is not eligible.
///
/// This runs for every statement sent as text, so it works on bytes in two
/// passes (one for the exclusions, one copying runs of text between the
/// literals) rather than building lower-cased copies and searching them.
pub fn normalize_literals(sql: &str) -> Option<(String, Vec<walden_engine::Value>)> {
    use walden_engine::Value;
    let head = sql.trim_start().as_bytes().get(..6)?;
    let is_select = head.eq_ignore_ascii_case(b"SELECT");
    if !(is_select
        || head.eq_ignore_ascii_case(b"INSERT")
        || head.eq_ignore_ascii_case(b"UPDATE")
        || head.eq_ignore_ascii_case(b"DELETE"))
    {
        return None;
    }
    let b = sql.as_bytes();
    let start = lift_start(b, is_select)?;
    let mut out = String::with_capacity(sql.len() + 8);
    let mut params = Vec::new();
    // Bytes from `copied` up to `i` go to the template as they are.
    let mut copied = 0;
    let mut i = start;
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b'"';
    while i < b.len() {
        let c = b[i];
        if !LITERAL_STARTS[c as usize] {
            i += 1;
            continue;
        }
        let prev = if i > 0 { b[i - 1] } else { b' ' };
        if c == b'\'' {
            // A string literal; a prefixed one (N'..', E'..') is kept as is.
            let mut j = i + 1;
            let mut doubled = false;
            loop {
                if j >= b.len() {
                    return None;
                }
                if b[j] == b'\'' {
                    if j + 1 < b.len() && b[j + 1] == b'\'' {
                        doubled = true;
                        j += 2;
                        continue;
                    }
                    break;
                }
                j += 1;
            }
            if !ident(prev) {
                let body = &sql[i + 1..j];
                let text = if doubled {
                    body.replace("''", "'")
                } else {
                    body.to_string()
                };
                out.push_str(&sql[copied..i]);
                params.push(Value::text(text));
                push_param(&mut out, params.len());
                copied = j + 1;
            }
            i = j + 1;
            continue;
        }
        if c == b'"' {
            let j = b[i + 1..]
                .iter()
                .position(|&x| x == b'"')
                .map(|k| i + 1 + k)?;
            i = j + 1;
            continue;
        }
        if c.is_ascii_digit() && !ident(prev) && prev != b'.' {
            let mut j = i;
            while j < b.len() && (b[j].is_ascii_digit() || b[j] == b'.') {
                j += 1;
            }
            if j < b.len() && (b[j] == b'e' || b[j] == b'E') {
                return None;
            }
            if j < b.len() && ident(b[j]) {
                return None;
            }
            let n = &sql[i..j];
            let v = if let Ok(x) = n.parse::<i64>() {
                Value::Int(x)
            } else {
                Value::Decimal(n.parse().ok()?)
            };
            out.push_str(&sql[copied..i]);
            params.push(v);
            push_param(&mut out, params.len());
            copied = j;
            i = j;
            continue;
        }
        i += 1;
    }
    if params.is_empty() {
        return None;
    }
    out.push_str(&sql[copied..]);
    Some((out, params))
}

/// The exclusions of [`normalize_literals`]: `None` when the statement is
/// not eligible, else where lifting starts (a SELECT's first ` where `).
fn lift_start(b: &[u8], is_select: bool) -> Option<usize> {
    // `pat` (lower case) at `i`, ignoring ASCII case.
    let at = |i: usize, pat: &[u8]| {
        b.len() - i >= pat.len()
            && pat
                .iter()
                .zip(&b[i..])
                .all(|(p, c)| c.to_ascii_lowercase() == *p)
    };
    // Parameters already, comments, and clauses whose literals are part of
    // the statement's shape (row counts, positional ORDER BY) are left alone.
    // A keyed SELECT (`SELECT abalance FROM t WHERE aid = 42`): only the
    // WHERE clause's literals are lifted, so the select list (whose literals
    // name and type result columns) stays as written. Anything with a
    // subquery, set operation or row-count clause is parsed as it is.
    let mut selects = 0;
    let mut where_at = None;
    // Most bytes start none of the patterns; skipping them through a table
    // keeps the dispatch below off the common path, and the byte after a
    // space picks the one or two patterns worth comparing.
    let starts = if is_select {
        &PATTERN_STARTS_SELECT
    } else {
        &PATTERN_STARTS
    };
    for i in 0..b.len() {
        if !starts[b[i] as usize] {
            continue;
        }
        let next = b.get(i + 1).map_or(0, |c| c.to_ascii_lowercase());
        match b[i] {
            b'$' => return None,
            b'-' if next == b'-' => return None,
            b'/' if next == b'*' => return None,
            b' ' => match next {
                b't' if at(i, b" top") => return None,
                _ if !is_select => {}
                b'u' if at(i, b" union") => return None,
                b'i' if at(i, b" intersect") || at(i, b" into ") => return None,
                b'e' if at(i, b" except") => return None,
                b'l' if at(i, b" limit") => return None,
                b'o' if at(i, b" offset") => return None,
                b'f' if at(i, b" fetch") => return None,
                b'h' if at(i, b" having") => return None,
                b'w' if where_at.is_none() && at(i, b" where ") => where_at = Some(i),
                _ => {}
            },
            b'r' | b'R' if next == b'e' && at(i, b"returning") => return None,
            b'o' | b'O' if next == b'r' && at(i, b"order by") => return None,
            b'g' | b'G' if next == b'r' && at(i, b"group by") => return None,
            b's' | b'S' if is_select && next == b'e' && at(i, b"select") => selects += 1,
            _ => {}
        }
    }
    if !is_select {
        return Some(0);
    }
    let w = where_at?;
    if selects > 1 || b[..w].contains(&b'\'') {
        return None;
    }
    Some(w)
}

/// Bytes that may start an excluded pattern (see `normalize_literals`).
static PATTERN_STARTS: [bool; 256] = byte_set(b"$-/ rRoOgG");
static PATTERN_STARTS_SELECT: [bool; 256] = byte_set(b"$-/ rRoOgGsS");
/// Bytes that may start a literal or a quoted name.
static LITERAL_STARTS: [bool; 256] = byte_set(b"'\"0123456789");

const fn byte_set(bytes: &[u8]) -> [bool; 256] {
    let mut set = [false; 256];
    let mut i = 0;
    while i < bytes.len() {
        set[bytes[i] as usize] = true;
        i += 1;
    }
    set
}

/// Appends `$n`.
fn push_param(out: &mut String, n: usize) {
    let mut digits = [0u8; 20];
    let mut k = digits.len();
    let mut n = n;
    loop {
        k -= 1;
        digits[k] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.push('$');
    out.extend(digits[k..].iter().map(|&d| d as char));
}

/// Removes a COPY option list's `FREEZE [ON|OFF|TRUE|FALSE]`.
fn drop_freeze(sql: &str) -> String {
    let mut out = String::new();
    let words: Vec<&str> = sql.split_inclusive([' ', ',', '(', ')']).collect();
    let mut i = 0;
    while i < words.len() {
        let w = words[i]
            .trim_matches([' ', ',', '(', ')'])
            .to_ascii_lowercase();
        if w == "freeze" {
            let keep_tail: String = words[i]
                .chars()
                .filter(|c| *c == ')' || *c == '(')
                .collect();
            i += 1;
            if i < words.len() {
                let v = words[i]
                    .trim_matches([' ', ',', '(', ')'])
                    .to_ascii_lowercase();
                if matches!(v.as_str(), "on" | "off" | "true" | "false") {
                    let tail: String = words[i].chars().filter(|c| *c == ')').collect();
                    out.push_str(&keep_tail);
                    out.push_str(&tail);
                    i += 1;
                    continue;
                }
            }
            out.push_str(&keep_tail);
            continue;
        }
        out.push_str(words[i]);
        i += 1;
    }
    // "(format text, )" or "()" left behind.
    let out = out.replace(", )", ")").replace(",)", ")");
    out.replace("with ()", "")
        .replace("WITH ()", "")
        .replace("with ( )", "")
}

/// `NEXT VALUE FOR [schema.]seq` becomes `nextval('seq')`.
fn next_value_for(sql: &str) -> String {
    let lower = sql.to_ascii_lowercase();
    let mut out = String::with_capacity(sql.len());
    let mut i = 0;
    while let Some(pos) = lower[i..].find("next value for") {
        let start = i + pos;
        out.push_str(&sql[i..start]);
        let mut j = start + "next value for".len();
        while j < sql.len() && sql.as_bytes()[j].is_ascii_whitespace() {
            j += 1;
        }
        let k = sql[j..]
            .find(|c: char| {
                !(c.is_ascii_alphanumeric()
                    || c == '_'
                    || c == '.'
                    || c == '"'
                    || c == '['
                    || c == ']')
            })
            .map_or(sql.len(), |e| j + e);
        let name = sql[j..k]
            .rsplit('.')
            .next()
            .unwrap_or("")
            .trim_matches(['"', '[', ']']);
        out.push_str(&format!("nextval('{name}')"));
        i = k;
    }
    out.push_str(&sql[i..]);
    out
}

fn replace_ci(s: &str, from: &str, to: &str) -> String {
    let lower = s.to_ascii_lowercase();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while let Some(pos) = lower[i..].find(from) {
        out.push_str(&s[i..i + pos]);
        out.push_str(to);
        i += pos + from.len();
    }
    out.push_str(&s[i..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    // The straightforward version normalize_literals replaced (it lower-cased
    // and searched the text, and copied it a character at a time); the two
    // must agree on every input.
    /// The fast path for keyed writes sent as plain text: `INSERT`, `UPDATE` and
    /// `DELETE` statements whose literals differ from call to call (pgbench's
    /// simple protocol, ORMs without prepared statements) are turned into a
    /// template with `$n` parameters, so each statement shape is parsed once per
    /// session. Returns `None` when the statement is not eligible.
    fn normalize_literals_reference(sql: &str) -> Option<(String, Vec<walden_engine::Value>)> {
        use walden_engine::Value;
        let trimmed = sql.trim_start();
        let head: String = trimmed
            .chars()
            .take(6)
            .collect::<String>()
            .to_ascii_uppercase();
        let is_select = head.starts_with("SELECT");
        if !(is_select
            || head.starts_with("INSERT")
            || head.starts_with("UPDATE")
            || head.starts_with("DELETE"))
        {
            return None;
        }
        if sql.contains('$') || sql.contains("--") || sql.contains("/*") {
            return None;
        }
        let lower = sql.to_ascii_lowercase();
        if lower.contains("returning")
            || lower.contains(" top")
            || lower.contains("order by")
            || lower.contains("group by")
        {
            return None;
        }
        // A keyed SELECT (`SELECT abalance FROM t WHERE aid = 42`): only the
        // WHERE clause's literals are lifted, so the select list (whose literals
        // name and type result columns) stays as written. Anything with a
        // subquery, set operation or row-count clause is parsed as it is.
        let mut start = 0;
        if is_select {
            if lower.matches("select").count() > 1
                || [
                    " union",
                    " intersect",
                    " except",
                    " limit",
                    " offset",
                    " fetch",
                    " having",
                    " into ",
                ]
                .iter()
                .any(|k| lower.contains(k))
            {
                return None;
            }
            let w = lower.find(" where ")?;
            if sql[..w].contains('\'') {
                return None;
            }
            start = w;
        }
        let b = sql.as_bytes();
        let mut out = String::with_capacity(sql.len());
        out.push_str(&sql[..start]);
        let mut params = Vec::new();
        let mut i = start;
        let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b'"';
        while i < b.len() {
            let c = b[i];
            let prev = if i > 0 { b[i - 1] } else { b' ' };
            if c == b'\'' {
                // A string literal; a prefixed one (N'..', E'..') is kept as is.
                let mut j = i + 1;
                let mut text = String::new();
                loop {
                    if j >= b.len() {
                        return None;
                    }
                    if b[j] == b'\'' {
                        if j + 1 < b.len() && b[j + 1] == b'\'' {
                            text.push('\'');
                            j += 2;
                            continue;
                        }
                        break;
                    }
                    let ch = sql[j..].chars().next()?;
                    text.push(ch);
                    j += ch.len_utf8();
                }
                if ident(prev) {
                    out.push_str(&sql[i..=j]);
                } else {
                    params.push(Value::text(text));
                    out.push_str(&format!("${}", params.len()));
                }
                i = j + 1;
                continue;
            }
            if c == b'"' {
                let j = sql[i + 1..].find('"').map(|k| i + 1 + k)?;
                out.push_str(&sql[i..=j]);
                i = j + 1;
                continue;
            }
            if c.is_ascii_digit() && !ident(prev) && prev != b'.' {
                let mut j = i;
                while j < b.len() && (b[j].is_ascii_digit() || b[j] == b'.') {
                    j += 1;
                }
                if j < b.len() && (b[j] == b'e' || b[j] == b'E') {
                    return None;
                }
                if j < b.len() && ident(b[j]) {
                    return None;
                }
                let n = &sql[i..j];
                let v = if let Ok(x) = n.parse::<i64>() {
                    Value::Int(x)
                } else {
                    Value::Decimal(n.parse().ok()?)
                };
                params.push(v);
                out.push_str(&format!("${}", params.len()));
                i = j;
                continue;
            }
            let ch = sql[i..].chars().next()?;
            out.push(ch);
            i += ch.len_utf8();
        }
        if params.is_empty() {
            return None;
        }
        Some((out, params))
    }

    #[test]
    fn literals_become_parameters_for_keyed_writes() {
        let (t, p) = normalize_literals(
            "UPDATE pgbench_accounts SET abalance = abalance + -17 WHERE aid = 42;",
        )
        .unwrap();
        assert_eq!(
            t,
            "UPDATE pgbench_accounts SET abalance = abalance + -$1 WHERE aid = $2;"
        );
        assert_eq!(
            p,
            vec![walden_engine::Value::Int(17), walden_engine::Value::Int(42)]
        );
        let (t, p) = normalize_literals("INSERT INTO t2 (a, b) VALUES ('it''s', 1.5)").unwrap();
        assert_eq!(t, "INSERT INTO t2 (a, b) VALUES ($1, $2)");
        assert_eq!(p[0], walden_engine::Value::text("it's"));
        assert!(normalize_literals("SELECT 1").is_none());
        let (t, p) =
            normalize_literals("SELECT abalance, 7 FROM pgbench_accounts WHERE aid = 42").unwrap();
        assert_eq!(t, "SELECT abalance, 7 FROM pgbench_accounts WHERE aid = $1");
        assert_eq!(p, vec![walden_engine::Value::Int(42)]);
        assert!(normalize_literals("SELECT 'x' FROM t WHERE a = 1").is_none());
        assert!(normalize_literals("SELECT a FROM t WHERE a = 1 LIMIT 5").is_none());
        assert!(normalize_literals("SELECT a FROM t WHERE a IN (SELECT 1)").is_none());
        assert!(normalize_literals("DELETE TOP (3) FROM t").is_none());
        assert!(normalize_literals("INSERT INTO t VALUES (N'x', 1e5)").is_none());
    }

    #[test]
    fn literal_lifting_matches_the_reference() {
        let seeds = [
            "UPDATE pgbench_accounts SET abalance = abalance + -17 WHERE aid = 42;",
            "SELECT abalance FROM pgbench_accounts WHERE aid = 42",
            "SELECT abalance, 7 FROM pgbench_accounts WHERE aid = 42",
            "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (3, 1, 5, 10, CURRENT_TIMESTAMP)",
            "INSERT INTO t2 (a, b) VALUES ('it''s', 1.5)",
            "insert into t values (N'x', E'y', 'z''''', '')",
            "DELETE FROM t WHERE a = 1 RETURNING a",
            "DELETE TOP (3) FROM t",
            "SELECT a FROM t WHERE a = 1 LIMIT 5",
            "SELECT a FROM t WHERE a IN (SELECT 1)",
            "select \"x where\" from t where b = '1' and c = 2.25",
            "UPDATE t SET a = 'é''ü' WHERE k = 'ß' AND n = 12",
            "UPDATE t SET a = 1e5 WHERE b = 2",
            "UPDATE t SET a = 12abc WHERE b = 2",
            "UPDATE t SET a = x.1 WHERE b = 3.4.5",
            "SELECT a FROM t  WHERE a = 'unterminated",
            "  \n\tSELECT a FROM t WHERE b = 3 ORDER BY 1",
            "SELECT a FROM t WHERE b = 3 GROUP BY a",
            "UPDATE \"T\" SET \"a\"\"b\" = 3 WHERE \"k = 4",
            "SELECT a FROM t WHERE b = $1",
            "UPDATE t SET a = 1 -- c",
            "UPDATE t SET a = 1 /* c */",
            "SELECTa FROM t WHERE b = 1",
            "INSERT",
            "",
        ];
        let alphabet: [&str; 33] = [
            "'",
            "''",
            "\"",
            "1",
            "23",
            ".",
            "e",
            "x",
            "_",
            " ",
            " where ",
            " WHERE ",
            "select ",
            " top",
            "returning",
            "Order By",
            " limit",
            "é",
            "ß",
            "-",
            "/",
            "*",
            "$",
            "N",
            " Union",
            " INTO ",
            "group by",
            " having",
            " fetch",
            " offset",
            " except",
            " intersect",
            "sElEcT",
        ];
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut rnd = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        let mut inputs: Vec<String> = seeds.iter().map(|s| s.to_string()).collect();
        for _ in 0..20_000 {
            let mut t = seeds[rnd(seeds.len())].to_string();
            for _ in 0..1 + rnd(4) {
                // A random piece at a random character boundary.
                let bounds: Vec<usize> =
                    t.char_indices().map(|(i, _)| i).chain([t.len()]).collect();
                let at = bounds[rnd(bounds.len())];
                t.insert_str(at, alphabet[rnd(alphabet.len())]);
            }
            inputs.push(t);
        }
        let mut lifted = 0;
        for sql in &inputs {
            let got = normalize_literals(sql);
            lifted += got.is_some() as usize;
            assert_eq!(got, normalize_literals_reference(sql), "{sql:?}");
        }
        // Both outcomes are well represented.
        assert!(lifted > 2_000 && lifted < inputs.len() - 2_000, "{lifted}");
    }

    #[test]
    fn copy_freeze_is_dropped() {
        for sql in [
            "copy pgbench_accounts from stdin with (freeze on)",
            "COPY t FROM STDIN WITH (FORMAT text, FREEZE ON)",
            "COPY t FROM STDIN WITH (FREEZE, FORMAT csv)",
        ] {
            assert!(
                matches!(parse(sql), Ok(Command::Sql(_))),
                "{sql}: {:?}",
                drop_freeze(sql)
            );
        }
    }

    #[test]
    fn blank_pieces_are_dropped() {
        assert!(is_blank("  \n -- only a comment\n /* and another */ "));
        assert!(!is_blank(" -- c\n SELECT 1"));
        assert_eq!(split("SELECT 1; -- trailing\n ; /* x */ ;").len(), 1);
    }

    #[test]
    fn splits_batches_outside_quotes() {
        let s = split("BEGIN; INSERT INTO t VALUES ('a;b'); -- c;\n COMMIT;;");
        assert_eq!(s.len(), 3);
        assert!(s[1].contains("'a;b'"));
    }

    #[test]
    fn recognises_tsql_forms() {
        assert!(matches!(
            parse("COMMIT TRAN WITH (DELAYED_DURABILITY = ON)").unwrap(),
            Command::Commit(Some(true))
        ));
        assert!(matches!(
            parse("commit transaction t1 with (delayed_durability=off)").unwrap(),
            Command::Commit(Some(false))
        ));
        assert!(matches!(parse("END").unwrap(), Command::Commit(None)));
        assert!(matches!(
            parse("EXEC sys.sp_flush_log").unwrap(),
            Command::FlushLog
        ));
        match parse("ALTER DATABASE shop SET DELAYED_DURABILITY = FORCED WITH NO_WAIT").unwrap() {
            Command::AlterDatabase {
                name,
                option,
                value,
            } => {
                assert_eq!(
                    (name.as_str(), option.as_str(), value.as_str()),
                    ("shop", "DELAYED_DURABILITY", "FORCED")
                )
            }
            c => panic!("{c:?}"),
        }
        assert!(matches!(
            parse("DELETE TOP (10) FROM dbo.t WHERE x > 1").unwrap(),
            Command::DeleteTop(10, _)
        ));
        assert!(
            matches!(parse("SET synchronous_commit = off").unwrap(), Command::Set(n, v) if n == "synchronous_commit" && v == "off")
        );
        assert!(matches!(
            parse("DBCC SQLPERF('sys.dm_os_wait_stats', CLEAR)").unwrap(),
            Command::ClearWaitStats
        ));
        assert!(matches!(
            parse("BACKUP LOG shop TO DISK = '/tmp/x.trn'").unwrap(),
            Command::BackupLog { .. }
        ));
        assert!(matches!(
            parse("CREATE TABLE t (id INT IDENTITY(1,1) PRIMARY KEY)").unwrap(),
            Command::Sql(_)
        ));
        assert!(matches!(
            parse("alter table pgbench_branches add primary key (bid)").unwrap(),
            Command::Sql(_)
        ));
    }
}
