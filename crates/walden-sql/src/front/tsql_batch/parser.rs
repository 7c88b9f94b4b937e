//! The batch grammar's parser: where a statement ends (`extent`), and
//! each T-SQL statement's own syntax.

use super::*;
use sqlparser::tokenizer::Whitespace;

mod procs;

/// Parses a batch (or a procedure body) into statements.
pub fn parse_batch(sql: &str) -> Result<Vec<TStmt>> {
    let implicit;
    let sql = if implicit_exec(sql) {
        implicit = format!("EXEC {sql}");
        implicit.as_str()
    } else {
        sql
    };
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

/// Whether the batch starts with a call of a system procedure without
/// EXEC (`sp_executesql N'...'`): SQL Server lets the batch's first
/// statement leave EXEC out. Taken for `sp_` names only, which no
/// statement keyword shares.
pub(crate) fn implicit_exec(sql: &str) -> bool {
    if !sql
        .as_bytes()
        .windows(3)
        .any(|w| w.eq_ignore_ascii_case(b"sp_"))
    {
        return false;
    }
    let mut t = Tokenizer::new(&MsSqlDialect {}, sql).with_unescape(false);
    let Ok(toks) = t.tokenize() else {
        return false;
    };
    let mut solid = toks.iter().filter(|t| !matches!(t, Token::Whitespace(_)));
    match (solid.next(), solid.next()) {
        (Some(Token::Word(w)), next) => {
            w.quote_style.is_none()
                && w.value.len() > 3
                && w.value[..3].eq_ignore_ascii_case("sp_")
                && !matches!(next, Some(Token::LParen) | Some(Token::Period))
        }
        _ => false,
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
        let to = to.min(self.solid.len());
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
                && matches!(
                    w.as_str(),
                    "SELECT" | "VALUES" | "INSERT" | "UPDATE" | "DELETE" | "MERGE"
                )
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
        let prev = if k > 0 {
            self.word_at(k - 1)
        } else {
            String::new()
        };
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
                matches!(
                    prev.as_str(),
                    "UNION" | "ALL" | "EXCEPT" | "INTERSECT" | "AS" | "FOR"
                ) || matches!(prev_tok, Some(Token::LParen))
                    || (matches!(first, "INSERT" | "WITH") && main.is_none())
                    || (first == "INSERT" && main.as_deref() == Some("INSERT"))
            }
            "INSERT" | "UPDATE" | "DELETE" | "MERGE" => {
                (first == "WITH" && main.is_none())
                    // MERGE's `WHEN ... THEN UPDATE | INSERT | DELETE`.
                    || (prev == "THEN" && (first == "MERGE" || main.as_deref() == Some("MERGE")))
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
            // INSERT ... EXEC (not after the INSERT's own VALUES or SELECT).
            "EXEC" | "EXECUTE" => {
                (first == "INSERT" && matches!(main.as_deref(), None | Some("INSERT")))
                    || prev == "WITH"
            }
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
                        return Err(err_at(
                            self.line(),
                            "END TRY must be followed by BEGIN CATCH",
                        ));
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
                Ok(TStmt::Return(
                    (!e.trim().is_empty()).then(|| e.trim().to_string()),
                ))
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
            "SET" if matches!(self.word(1).as_str(), "NOCOUNT" | "XACT_ABORT") => {
                let what = self.word(1);
                let on = match self.word(2).as_str() {
                    "ON" => true,
                    "OFF" => false,
                    _ => return Err(err_at(line, format!("SET {what} ON | OFF"))),
                };
                self.i += 3;
                Ok(if what == "NOCOUNT" {
                    TStmt::NoCount(on)
                } else {
                    TStmt::XactAbort(on)
                })
            }
            "SET" if self.word(1) == "IDENTITY_INSERT" => {
                let end = self.extent(self.i, "SET");
                self.i += 2;
                let table = self.object_name()?;
                let on = match self.word(0).as_str() {
                    "ON" => true,
                    "OFF" => false,
                    _ => return Err(err_at(line, "SET IDENTITY_INSERT table ON | OFF")),
                };
                self.i += 1;
                if self.i != end {
                    return Err(err_at(line, "SET IDENTITY_INSERT table ON | OFF"));
                }
                Ok(TStmt::IdentityInsert { table, on })
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
                if self.word(at) == "FUNCTION" {
                    let mode = match (first.as_str(), or_alter) {
                        (_, true) => ProcMode::CreateOrAlter,
                        ("CREATE", _) => ProcMode::Create,
                        _ => ProcMode::Alter,
                    };
                    self.i += at + 1;
                    return self.create_function(mode);
                }
                self.plain(&first)
            }
            "DROP" if matches!(self.word(1).as_str(), "PROC" | "PROCEDURE" | "FUNCTION") => {
                let function = self.word(1) == "FUNCTION";
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
                    return Err(err_at(
                        line,
                        "DROP PROCEDURE | FUNCTION [IF EXISTS] name [, ...]",
                    ));
                }
                Ok(if function {
                    TStmt::DropFunc { names, if_exists }
                } else {
                    TStmt::DropProc { names, if_exists }
                })
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
                                return Err(SqlError::unsupported(format!(
                                    "RAISERROR ... WITH {w}"
                                )))
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
                    return Err(err_at(
                        line,
                        "RAISERROR needs a message, a severity and a state",
                    ));
                }
                Ok(TStmt::Raiserror(args))
            }
            "WAITFOR" => {
                let end = self.extent(self.i, "WAITFOR");
                if self.word(1) != "DELAY" {
                    return Err(SqlError::unsupported(format!(
                        "WAITFOR {} (only WAITFOR DELAY)",
                        self.word(1)
                    )));
                }
                let e = self.text(self.i + 2, end);
                self.i = end;
                if e.trim().is_empty() {
                    return Err(err_at(line, "WAITFOR DELAY needs a time"));
                }
                Ok(TStmt::WaitForDelay(e.trim().to_string()))
            }
            "GOTO" => Err(SqlError::unsupported("GOTO")),
            "END" | "ELSE" => Err(err_at(line, format!("{first} without its opening"))),
            _ if matches!(self.tok(1), Some(Token::Colon))
                && matches!(self.tok(0), Some(Token::Word(_))) =>
            {
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
        if end == start && start < self.solid.len() {
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
            Some(Token::Word(w))
                if w.value.starts_with('@') && !w.value.starts_with("@@") && w.value.len() > 1 =>
            {
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
            let stop = self.until_top(end, |p| matches!(p.tok(0), Some(Token::Eq | Token::Comma)));
            let ty = self.text(self.i, stop).trim().to_string();
            if ty.is_empty() {
                return Err(err_at(line, format!("DECLARE {name} needs a type")));
            }
            let up = ty.to_ascii_uppercase();
            // `@t TABLE (...)`: a table variable (its type text keeps the
            // column list, which the runtime creates).
            if up.starts_with("TABLE") && !up["TABLE".len()..].trim_start().starts_with('(') {
                return Err(err_at(
                    line,
                    format!("DECLARE {name} TABLE expects (columns)"),
                ));
            }
            if up.starts_with("CURSOR") {
                return Err(SqlError::unsupported(
                    "cursor variables (DECLARE @c CURSOR)",
                ));
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
            _ => {
                return Err(err_at(
                    line,
                    format!("SET {var} expects = or an operator and ="),
                ))
            }
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
                return Err(SqlError::unsupported(
                    "compound assignment in SELECT @v op= x",
                ));
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
            return Ok(TStmt::RollbackSavepoint(text));
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
        // Empty parts name the defaults (`..p`, `.dbo.p`).
        while matches!(self.tok(0), Some(Token::Period)) {
            self.i += 1;
        }
        loop {
            let name = match self.tok(0) {
                Some(Token::Word(w)) => w.value.to_ascii_lowercase(),
                _ => return Err(err_at(self.line(), "expected a name")),
            };
            self.i += 1;
            if matches!(self.tok(0), Some(Token::Period)) {
                while matches!(self.tok(0), Some(Token::Period)) {
                    self.i += 1;
                }
                continue;
            }
            return Ok(name);
        }
    }
}
