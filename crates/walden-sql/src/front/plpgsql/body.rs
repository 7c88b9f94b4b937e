//! PL/pgSQL bodies, parsed into the procedural runtime's statement tree
//! (`TStmt`, shared with T-SQL): control statements become its nodes and
//! every SQL statement or expression keeps its text, with each reference
//! to a variable or parameter (`x`, `$1`) written as the runtime's `@x`,
//! so that the runtime lifts it to a statement parameter as it does for
//! T-SQL.

use super::lex::{lex, Tok, K};
use super::trigger::{field_var, RETURN_NEW, RETURN_OLD, TRIGGER_VARS};
use crate::error::{ErrorKind, Result, SqlError};
use crate::front::{PgRaise, TStmt, VarDecl};

fn refuse(what: &str) -> SqlError {
    SqlError::unsupported(format!("{what} in a PL/pgSQL body"))
}

/// Parses a PL/pgSQL body (`[DECLARE ...] BEGIN ... END`); `params` are
/// the variable names of the routine's parameters in order (`$1`, ...).
pub fn parse_plpgsql(src: &str, params: &[String]) -> Result<Vec<TStmt>> {
    parse_body(src, params, false)
}

/// A trigger function's body: `NEW.x` / `OLD.x` are variables of their
/// own ([`field_var`]), `RETURN NEW | OLD | NULL` names the row, and the
/// `TG_` variables are in scope.
pub fn parse_plpgsql_trigger(src: &str) -> Result<Vec<TStmt>> {
    parse_body(src, &[], true)
}

/// A trigger's WHEN condition as the runtime evaluates it (`NEW.x` as
/// its variable).
pub fn trigger_expr(src: &str) -> Result<String> {
    let t = lex(src)?;
    let n = t.len();
    let p = P {
        src,
        t,
        i: 0,
        scopes: vec![Vec::new()],
        params: Vec::new(),
        loops: Vec::new(),
        trigger: true,
    };
    p.text(0, n)
}

fn parse_body(src: &str, params: &[String], trigger: bool) -> Result<Vec<TStmt>> {
    let t = lex(src)?;
    let mut scopes = vec![params.to_vec(), vec!["found".into()]];
    if trigger {
        scopes.push(TRIGGER_VARS.iter().map(|v| v.to_string()).collect());
    }
    let mut p = P {
        src,
        t,
        i: 0,
        scopes,
        params: params.to_vec(),
        loops: Vec::new(),
        trigger,
    };
    let b = p.block(None)?;
    if p.peek().is_some_and(|t| t.op(";")) {
        p.i += 1;
    }
    if let Some(t) = p.peek() {
        return Err(p.err_at(t, "syntax error at or near"));
    }
    Ok(vec![b])
}

struct P<'a> {
    src: &'a str,
    t: Vec<Tok>,
    i: usize,
    /// Variables declared, by block (innermost last).
    scopes: Vec<Vec<String>>,
    params: Vec<String>,
    /// The labels of the loops around (innermost last).
    loops: Vec<Option<String>>,
    /// A trigger function's body (`NEW`, `OLD`, `TG_*`).
    trigger: bool,
}

impl<'a> P<'a> {
    fn peek(&self) -> Option<&Tok> {
        self.t.get(self.i)
    }
    fn word(&self, k: usize) -> &str {
        match self.t.get(self.i + k) {
            Some(t) if t.k == K::Word => &t.w,
            _ => "",
        }
    }
    fn err_at(&self, t: &Tok, what: &str) -> SqlError {
        SqlError::syntax(format!("{what} \"{}\"", &self.src[t.s..t.e]))
    }
    fn eof() -> SqlError {
        SqlError::syntax("syntax error at end of input")
    }
    fn expect_word(&mut self, w: &str) -> Result<()> {
        match self.peek() {
            Some(t) if t.is(w) => {
                self.i += 1;
                Ok(())
            }
            Some(t) => Err(self.err_at(t, "syntax error at or near")),
            None => Err(Self::eof()),
        }
    }
    fn expect_semi(&mut self) -> Result<()> {
        match self.peek() {
            Some(t) if t.op(";") => {
                self.i += 1;
                Ok(())
            }
            Some(t) => Err(self.err_at(t, "syntax error at or near")),
            None => Err(Self::eof()),
        }
    }
    fn is_var(&self, name: &str) -> bool {
        self.scopes.iter().any(|s| s.iter().any(|v| v == name))
    }

    /// The end of a piece of text from token `self.i`: before `;` or one of
    /// the words `stops` (or operator `..`, `stop_dots`) at depth 0.
    fn until(&self, stops: &[&str], stop_dots: bool) -> usize {
        let mut depth = 0i32;
        let mut case = 0i32;
        let mut j = self.i;
        while let Some(t) = self.t.get(j) {
            if t.k == K::Op {
                match t.w.as_str() {
                    "(" | "[" => depth += 1,
                    ")" | "]" => depth -= 1,
                    ";" if depth == 0 => return j,
                    ".." if depth == 0 && case == 0 && stop_dots => return j,
                    "," if depth == 0 && case == 0 && stops.contains(&",") => return j,
                    _ => {}
                }
            } else if t.k == K::Word && depth == 0 {
                if t.w == "case" {
                    case += 1;
                } else if t.w == "end" && case > 0 {
                    case -= 1;
                } else if case == 0 && stops.contains(&t.w.as_str()) {
                    return j;
                }
            }
            j += 1;
        }
        j
    }

    /// Tokens `a..b` as text, variables written `@name`.
    fn text(&self, a: usize, b: usize) -> Result<String> {
        if a >= b {
            return Ok(String::new());
        }
        let mut out = String::new();
        let mut prev = self.t[a].s;
        let mut skip = 0;
        for k in a..b {
            let t = &self.t[k];
            if skip > 0 {
                skip -= 1;
                prev = t.e;
                continue;
            }
            out.push_str(&self.src[prev..t.s]);
            prev = t.e;
            let before = k.checked_sub(1).and_then(|p| self.t.get(p));
            let after = self.t.get(k + 1);
            if self.trigger && (t.is("new") || t.is("old")) && !before.is_some_and(|b| b.op(".")) {
                match (after, self.t.get(k + 2)) {
                    (Some(d), Some(f)) if d.op(".") && (f.k == K::Word || f.k == K::QIdent) => {
                        out.push_str(&field_var(&t.w, &f.w));
                        skip = 2;
                        continue;
                    }
                    _ if before.is_some_and(|b| b.is("as")) => {}
                    _ => {
                        return Err(refuse(&format!(
                            "the record {} as a whole",
                            t.w.to_uppercase()
                        )))
                    }
                }
            }
            if self.trigger && t.is("tg_argv") && after.is_some_and(|a| a.op("[")) {
                // PostgreSQL's TG_ARGV counts from 0, an array from 1.
                out.push_str("@tg_argv[1 + ");
                skip = 1;
                continue;
            }
            match t.k {
                K::Word
                    if self.is_var(&t.w)
                        && !before.is_some_and(|b| b.op(".") || b.is("as"))
                        && !after.is_some_and(|a| a.op(".") || a.op("(")) =>
                {
                    out.push('@');
                    out.push_str(&t.w);
                }
                K::Word if after.is_some_and(|a| a.op(".")) && self.is_var(&t.w) => {
                    return Err(refuse("a record variable's field"));
                }
                K::Param => {
                    let n: usize = t.w.parse().unwrap_or(0);
                    match n.checked_sub(1).and_then(|n| self.params.get(n)) {
                        Some(p) => {
                            out.push('@');
                            out.push_str(p);
                        }
                        None => {
                            return Err(SqlError::new(
                                ErrorKind::Syntax,
                                format!("there is no parameter ${n}"),
                            ))
                        }
                    }
                }
                _ => out.push_str(&self.src[t.s..t.e]),
            }
        }
        Ok(out)
    }

    /// An expression up to one of `stops` (consumed: not).
    fn expr(&mut self, stops: &[&str]) -> Result<String> {
        let end = self.until(stops, false);
        if end == self.i {
            return Err(match self.peek() {
                Some(t) => self.err_at(t, "missing expression at or near"),
                None => Self::eof(),
            });
        }
        let s = self.text(self.i, end)?;
        self.i = end;
        Ok(s)
    }

    /// `[<<label>>] [DECLARE ...] BEGIN ... [EXCEPTION ...] END [label]`
    fn block(&mut self, label: Option<String>) -> Result<TStmt> {
        self.scopes.push(Vec::new());
        let mut out = Vec::new();
        if self.word(0) == "declare" {
            self.i += 1;
            while !matches!(self.word(0), "begin") {
                if self.peek().is_none() {
                    return Err(Self::eof());
                }
                if self.word(0) == "declare" {
                    self.i += 1;
                    continue;
                }
                out.push(self.declaration()?);
            }
        }
        self.expect_word("begin")?;
        let body = self.stmts(&["end", "exception"])?;
        let stmt = if self.word(0) == "exception" {
            self.i += 1;
            let mut handlers = Vec::new();
            while self.word(0) == "when" {
                self.i += 1;
                let mut conds = Vec::new();
                loop {
                    match self.peek() {
                        Some(t) if t.k == K::Word && t.w == "sqlstate" => {
                            self.i += 1;
                            match self.peek() {
                                Some(t) if t.k == K::Str => {
                                    conds.push(format!("sqlstate:{}", t.w));
                                    self.i += 1;
                                }
                                _ => return Err(SqlError::syntax("SQLSTATE needs a code")),
                            }
                        }
                        Some(t) if t.k == K::Word => {
                            conds.push(t.w.clone());
                            self.i += 1;
                        }
                        Some(t) => return Err(self.err_at(t, "syntax error at or near")),
                        None => return Err(Self::eof()),
                    }
                    if self.word(0) == "or" {
                        self.i += 1;
                    } else {
                        break;
                    }
                }
                self.expect_word("then")?;
                self.scopes.push(vec!["sqlstate".into(), "sqlerrm".into()]);
                let h = self.stmts(&["when", "end"]);
                self.scopes.pop();
                handlers.push((conds, h?));
            }
            TStmt::Guarded { body, handlers }
        } else {
            TStmt::Block(body)
        };
        self.expect_word("end")?;
        self.end_label(&label)?;
        self.scopes.pop();
        out.push(stmt);
        Ok(TStmt::Block(out))
    }

    fn end_label(&mut self, label: &Option<String>) -> Result<()> {
        if let Some(t) = self.peek().filter(|t| t.k == K::Word) {
            if label.as_deref() == Some(t.w.as_str()) {
                self.i += 1;
            } else if !t.is("if") && !t.is("loop") && !t.is("case") {
                return Err(self.err_at(t, "syntax error at or near"));
            }
        }
        Ok(())
    }

    /// `name [CONSTANT] type [NOT NULL] [{DEFAULT | := | =} expr];`
    fn declaration(&mut self) -> Result<TStmt> {
        let Some(t) = self.peek().cloned() else {
            return Err(Self::eof());
        };
        if t.k != K::Word && t.k != K::QIdent {
            return Err(self.err_at(&t, "syntax error at or near"));
        }
        self.i += 1;
        if self.word(0) == "constant" {
            self.i += 1;
        }
        if matches!(self.word(0), "alias" | "cursor" | "refcursor")
            || (self.word(0) == "no" && self.word(1) == "scroll")
            || self.word(0) == "scroll"
        {
            return Err(refuse(&format!(
                "DECLARE ... {}",
                self.word(0).to_uppercase()
            )));
        }
        let start = self.i;
        let end = self.until(&["default", "not", "collate"], false);
        // `:=` / `=` end the type too.
        let mut te = start;
        while te < end && !self.t[te].op(":=") && !self.t[te].op("=") {
            te += 1;
        }
        if te == start {
            return Err(self.err_at(&t, "missing data type for"));
        }
        let ty = self.src[self.t[start].s..self.t[te - 1].e].to_string();
        let lower = ty.to_ascii_lowercase();
        if lower.contains('%') {
            return Err(refuse("%TYPE / %ROWTYPE"));
        }
        if lower == "record" {
            return Err(refuse("a RECORD variable"));
        }
        crate::types::names::parse_type_name(&ty)?;
        self.i = te;
        if self.word(0) == "collate" {
            return Err(refuse("COLLATE in a declaration"));
        }
        let mut not_null = false;
        if self.word(0) == "not" && self.word(1) == "null" {
            not_null = true;
            self.i += 2;
        }
        let init =
            if self.word(0) == "default" || self.peek().is_some_and(|t| t.op(":=") || t.op("=")) {
                self.i += 1;
                Some(self.expr(&[])?)
            } else {
                None
            };
        if not_null && init.is_none() {
            return Err(SqlError::syntax(format!(
                "variable \"{}\" must have a default value, since it's declared NOT NULL",
                t.w
            )));
        }
        self.expect_semi()?;
        self.scopes.last_mut().expect("a scope").push(t.w.clone());
        Ok(TStmt::Declare(vec![VarDecl {
            name: format!("@{}", t.w),
            ty,
            init,
        }]))
    }

    fn stmts(&mut self, ends: &[&str]) -> Result<Vec<TStmt>> {
        let mut out = Vec::new();
        loop {
            let Some(t) = self.peek() else {
                return Err(Self::eof());
            };
            if t.k == K::Word && ends.contains(&t.w.as_str()) {
                return Ok(out);
            }
            out.push(self.stmt()?);
        }
    }

    fn stmt(&mut self) -> Result<TStmt> {
        let mut label = None;
        if self.peek().is_some_and(|t| t.op("<<")) {
            let name = self.word(1).to_string();
            if name.is_empty() || !self.t.get(self.i + 2).is_some_and(|t| t.op(">>")) {
                return Err(SqlError::syntax("syntax error in a label"));
            }
            self.i += 3;
            label = Some(name);
        }
        let head = self.word(0).to_string();
        match head.as_str() {
            "declare" | "begin" => {
                let b = self.block(label)?;
                self.expect_semi()?;
                Ok(b)
            }
            "loop" | "while" | "for" | "foreach" => self.loop_stmt(label),
            _ if label.is_some() => Err(SqlError::syntax(
                "a label must come before a block or a loop",
            )),
            "if" => self.if_stmt(),
            "case" => self.case_stmt(),
            "exit" | "continue" => self.exit(),
            "return" => self.return_stmt(),
            "raise" => self.raise(),
            "perform" => {
                self.i += 1;
                let e = self.expr(&[])?;
                self.expect_semi()?;
                Ok(TStmt::Perform(format!("SELECT {e}")))
            }
            "execute" => self.execute(),
            "get" => self.get_diagnostics(),
            "null" if self.t.get(self.i + 1).is_some_and(|t| t.op(";")) => {
                self.i += 2;
                Ok(TStmt::Block(Vec::new()))
            }
            "assert" => {
                self.i += 1;
                let c = self.expr(&[","])?;
                let m = if self.peek().is_some_and(|t| t.op(",")) {
                    self.i += 1;
                    Some(self.expr(&[])?)
                } else {
                    None
                };
                self.expect_semi()?;
                Ok(TStmt::Assert(c, m))
            }
            "commit" | "rollback" => Err(refuse("COMMIT / ROLLBACK")),
            "open" | "fetch" | "close" | "move" => Err(refuse("a cursor statement")),
            "call" => Err(refuse("CALL")),
            "return_next" => Err(refuse("RETURN NEXT")),
            "new" | "old" if self.trigger && self.t.get(self.i + 1).is_some_and(|t| t.op(".")) => {
                self.assign_field()
            }
            w if self.is_var(w) => self.assign(),
            _ => self.sql(),
        }
    }

    /// `NEW.x := e` in a trigger function.
    fn assign_field(&mut self) -> Result<TStmt> {
        let rec = self.word(0).to_string();
        let field = match self.t.get(self.i + 2) {
            Some(f) if f.k == K::Word || f.k == K::QIdent => f.w.clone(),
            other => {
                return Err(match other {
                    Some(t) => self.err_at(t, "syntax error at or near"),
                    None => Self::eof(),
                })
            }
        };
        self.i += 3;
        match self.peek() {
            Some(t) if t.op(":=") || t.op("=") => self.i += 1,
            Some(t) => return Err(self.err_at(t, "syntax error at or near")),
            None => return Err(Self::eof()),
        }
        let e = self.expr(&[])?;
        self.expect_semi()?;
        Ok(TStmt::Assign {
            var: field_var(&rec, &field),
            op: None,
            expr: e,
        })
    }

    fn assign(&mut self) -> Result<TStmt> {
        let name = self.word(0).to_string();
        self.i += 1;
        match self.peek() {
            Some(t) if t.op(":=") || t.op("=") => self.i += 1,
            Some(t) if t.op("[") || t.op(".") => {
                return Err(refuse("assignment to an array element or a field"))
            }
            Some(t) => return Err(self.err_at(t, "syntax error at or near")),
            None => return Err(Self::eof()),
        }
        let e = self.expr(&[])?;
        self.expect_semi()?;
        Ok(TStmt::Assign {
            var: format!("@{name}"),
            op: None,
            expr: e,
        })
    }

    fn if_stmt(&mut self) -> Result<TStmt> {
        self.i += 1;
        let cond = self.expr(&["then"])?;
        self.expect_word("then")?;
        let then = self.stmts(&["elsif", "elseif", "else", "end"])?;
        let els = match self.word(0) {
            "elsif" | "elseif" => Some(Box::new(self.if_stmt_tail()?)),
            "else" => {
                self.i += 1;
                let e = self.stmts(&["end"])?;
                self.end_if()?;
                Some(Box::new(TStmt::Block(e)))
            }
            _ => {
                self.end_if()?;
                None
            }
        };
        Ok(TStmt::If {
            cond,
            then: Box::new(TStmt::Block(then)),
            els,
        })
    }

    /// An ELSIF: the IF it continues ends with its `END IF`.
    fn if_stmt_tail(&mut self) -> Result<TStmt> {
        self.if_stmt()
    }

    fn end_if(&mut self) -> Result<()> {
        self.expect_word("end")?;
        self.expect_word("if")?;
        self.expect_semi()
    }

    fn case_stmt(&mut self) -> Result<TStmt> {
        self.i += 1;
        let subject = if self.word(0) == "when" {
            None
        } else {
            Some(self.expr(&["when"])?)
        };
        let mut arms = Vec::new();
        while self.word(0) == "when" {
            self.i += 1;
            let mut conds = Vec::new();
            loop {
                let e = self.expr(&["then", ","])?;
                conds.push(match &subject {
                    Some(s) => format!("({s}) = ({e})"),
                    None => e,
                });
                if self.peek().is_some_and(|t| t.op(",")) && subject.is_some() {
                    self.i += 1;
                } else {
                    break;
                }
            }
            self.expect_word("then")?;
            let body = self.stmts(&["when", "else", "end"])?;
            arms.push((conds.join(" OR "), body));
        }
        let mut tail = if self.word(0) == "else" {
            self.i += 1;
            TStmt::Block(self.stmts(&["end"])?)
        } else {
            TStmt::Raise(Box::new(PgRaise {
                level: "exception".into(),
                format: Some("'case not found'".into()),
                args: Vec::new(),
                options: vec![
                    ("errcode".into(), "'case_not_found'".into()),
                    (
                        "hint".into(),
                        "'CASE statement is missing ELSE part.'".into(),
                    ),
                ],
            }))
        };
        self.expect_word("end")?;
        self.expect_word("case")?;
        self.expect_semi()?;
        for (cond, body) in arms.into_iter().rev() {
            tail = TStmt::If {
                cond,
                then: Box::new(TStmt::Block(body)),
                els: Some(Box::new(tail)),
            };
        }
        Ok(tail)
    }

    fn loop_stmt(&mut self, label: Option<String>) -> Result<TStmt> {
        let head = self.word(0).to_string();
        self.i += 1;
        let mut int_var = None;
        let r = match head.as_str() {
            "loop" => None,
            "while" => {
                let c = self.expr(&["loop"])?;
                Some(c)
            }
            "for" => {
                let var = self.word(0).to_string();
                if var.is_empty() || self.word(1) != "in" {
                    return Err(refuse("this FOR loop"));
                }
                self.i += 2;
                let reverse = self.word(0) == "reverse";
                if reverse {
                    self.i += 1;
                }
                let dots = self.until(&["loop"], true);
                if !self.t.get(dots).is_some_and(|t| t.op("..")) {
                    return Err(refuse("FOR over a query (FOR ... IN SELECT)"));
                }
                let from = self.text(self.i, dots)?;
                self.i = dots + 1;
                let to = self.expr(&["by", "loop"])?;
                let step = if self.word(0) == "by" {
                    self.i += 1;
                    Some(self.expr(&["loop"])?)
                } else {
                    None
                };
                int_var = Some((var, from, to, step, reverse));
                None
            }
            _ => return Err(refuse("FOREACH")),
        };
        if head != "loop" {
            self.expect_word("loop")?;
        }
        self.loops.push(label.clone());
        if let Some((v, ..)) = &int_var {
            self.scopes.push(vec![v.clone()]);
        }
        let body = self.stmts(&["end"]);
        if int_var.is_some() {
            self.scopes.pop();
        }
        self.loops.pop();
        let body = body?;
        self.expect_word("end")?;
        self.expect_word("loop")?;
        self.end_label(&label)?;
        self.expect_semi()?;
        Ok(match int_var {
            Some((var, from, to, step, reverse)) => TStmt::ForInt {
                var: format!("@{var}"),
                from,
                to,
                step,
                reverse,
                body,
            },
            None => TStmt::While {
                cond: r.unwrap_or_else(|| "1 = 1".into()),
                body: Box::new(TStmt::Block(body)),
            },
        })
    }

    fn exit(&mut self) -> Result<TStmt> {
        let brk = self.word(0) == "exit";
        self.i += 1;
        if self.loops.is_empty() {
            return Err(SqlError::syntax(if brk {
                "EXIT cannot be used outside a loop, unless it has a label"
            } else {
                "CONTINUE cannot be used outside a loop"
            }));
        }
        let w = self.word(0).to_string();
        if !w.is_empty() && w != "when" {
            if self.loops.last().and_then(|l| l.as_deref()) != Some(w.as_str()) {
                return Err(refuse("EXIT / CONTINUE to an outer loop's label"));
            }
            self.i += 1;
        }
        let s = if brk { TStmt::Break } else { TStmt::Continue };
        if self.word(0) == "when" {
            self.i += 1;
            let c = self.expr(&[])?;
            self.expect_semi()?;
            return Ok(TStmt::If {
                cond: c,
                then: Box::new(s),
                els: None,
            });
        }
        self.expect_semi()?;
        Ok(s)
    }

    fn return_stmt(&mut self) -> Result<TStmt> {
        self.i += 1;
        if self.word(0) == "next" && !self.trigger {
            self.i += 1;
            if self.peek().is_some_and(|t| t.op(";")) {
                self.i += 1;
                return Ok(TStmt::ReturnNext(None));
            }
            let e = self.expr(&[])?;
            self.expect_semi()?;
            return Ok(TStmt::ReturnNext(Some(e)));
        }
        if self.word(0) == "query" && !self.trigger {
            self.i += 1;
            if self.word(0) == "execute" {
                let TStmt::Execute {
                    text, into, using, ..
                } = self.execute()?
                else {
                    return Err(SqlError::internal("EXECUTE"));
                };
                if !into.is_empty() {
                    return Err(SqlError::syntax("syntax error at or near \"INTO\""));
                }
                return Ok(TStmt::ReturnQueryExecute { text, using });
            }
            let end = self.until(&[], false);
            if end == self.i {
                return Err(match self.peek() {
                    Some(t) => self.err_at(t, "syntax error at or near"),
                    None => Self::eof(),
                });
            }
            let q = self.text(self.i, end)?;
            self.i = end;
            self.expect_semi()?;
            return Ok(TStmt::ReturnQuery(q));
        }
        if matches!(self.word(0), "next" | "query") {
            return Err(refuse(&format!("RETURN {}", self.word(0).to_uppercase())));
        }
        if self.peek().is_some_and(|t| t.op(";")) {
            self.i += 1;
            return Ok(TStmt::Return(None));
        }
        if self.trigger {
            let r = match self.word(0) {
                "new" => format!("'{RETURN_NEW}'"),
                "old" => format!("'{RETURN_OLD}'"),
                "null" => "NULL".to_string(),
                _ => {
                    return Err(refuse(
                        "RETURN of anything but NEW, OLD or NULL in a trigger function",
                    ))
                }
            };
            if !self.t.get(self.i + 1).is_some_and(|t| t.op(";")) {
                return Err(refuse(
                    "RETURN of anything but NEW, OLD or NULL in a trigger function",
                ));
            }
            self.i += 2;
            return Ok(TStmt::Return(Some(r)));
        }
        let e = self.expr(&[])?;
        self.expect_semi()?;
        Ok(TStmt::Return(Some(e)))
    }

    fn raise(&mut self) -> Result<TStmt> {
        self.i += 1;
        let mut level = "exception".to_string();
        if matches!(
            self.word(0),
            "debug" | "log" | "info" | "notice" | "warning" | "exception"
        ) {
            level = self.word(0).to_string();
            self.i += 1;
        }
        let mut r = PgRaise {
            level,
            format: None,
            args: Vec::new(),
            options: Vec::new(),
        };
        match self.peek() {
            Some(t) if t.k == K::Str => {
                r.format = Some(self.src[t.s..t.e].to_string());
                self.i += 1;
                while self.peek().is_some_and(|t| t.op(",")) {
                    self.i += 1;
                    r.args.push(self.expr(&[",", "using"])?);
                }
            }
            Some(t) if t.k == K::Word && t.w == "sqlstate" => {
                self.i += 1;
                let code = self.expr(&["using"])?;
                r.options.push(("errcode".into(), code));
                r.format = Some(String::new());
            }
            Some(t) if t.k == K::Word && t.w != "using" => {
                r.options.push(("errcode".into(), format!("'{}'", t.w)));
                r.format = Some(String::new());
                self.i += 1;
            }
            _ => {}
        }
        if self.word(0) == "using" {
            self.i += 1;
            loop {
                let name = self.word(0).to_string();
                if name.is_empty() {
                    return Err(SqlError::syntax("RAISE USING needs an option name"));
                }
                self.i += 1;
                match self.peek() {
                    Some(t) if t.op("=") || t.op(":=") => self.i += 1,
                    _ => return Err(SqlError::syntax("RAISE USING option = expression")),
                }
                let e = self.expr(&[","])?;
                r.options.push((name, e));
                if self.peek().is_some_and(|t| t.op(",")) {
                    self.i += 1;
                } else {
                    break;
                }
            }
        }
        self.expect_semi()?;
        Ok(TStmt::Raise(Box::new(r)))
    }

    fn execute(&mut self) -> Result<TStmt> {
        self.i += 1;
        let text = self.expr(&["into", "using"])?;
        let mut into = Vec::new();
        let mut strict = false;
        let mut using = Vec::new();
        loop {
            match self.word(0) {
                "into" => {
                    self.i += 1;
                    let (v, s) = self.targets()?;
                    into = v;
                    strict = s;
                }
                "using" => {
                    self.i += 1;
                    loop {
                        using.push(self.expr(&[",", "into"])?);
                        if self.peek().is_some_and(|t| t.op(",")) {
                            self.i += 1;
                        } else {
                            break;
                        }
                    }
                }
                _ => break,
            }
        }
        self.expect_semi()?;
        Ok(TStmt::Execute {
            text,
            into,
            strict,
            using,
        })
    }

    /// `[STRICT] v [, v ...]` after INTO.
    fn targets(&mut self) -> Result<(Vec<String>, bool)> {
        let strict = self.word(0) == "strict";
        if strict {
            self.i += 1;
        }
        let mut vars = Vec::new();
        loop {
            let w = self.word(0).to_string();
            if w.is_empty() || !self.is_var(&w) {
                return Err(match self.peek() {
                    Some(t) => self.err_at(t, "INTO needs variables: not a known variable:"),
                    None => Self::eof(),
                });
            }
            if self
                .t
                .get(self.i + 1)
                .is_some_and(|t| t.op(".") || t.op("["))
            {
                return Err(refuse("INTO a field or an array element"));
            }
            vars.push(format!("@{w}"));
            self.i += 1;
            if self.peek().is_some_and(|t| t.op(",")) {
                self.i += 1;
            } else {
                return Ok((vars, strict));
            }
        }
    }

    fn get_diagnostics(&mut self) -> Result<TStmt> {
        self.i += 1;
        if self.word(0) == "current" {
            self.i += 1;
        }
        if self.word(0) == "stacked" {
            return Err(refuse("GET STACKED DIAGNOSTICS"));
        }
        self.expect_word("diagnostics")?;
        let mut out = Vec::new();
        loop {
            let v = self.word(0).to_string();
            if !self.is_var(&v) {
                return Err(SqlError::syntax("GET DIAGNOSTICS needs a variable"));
            }
            self.i += 1;
            match self.peek() {
                Some(t) if t.op("=") || t.op(":=") => self.i += 1,
                _ => return Err(SqlError::syntax("GET DIAGNOSTICS variable = item")),
            }
            let item = self.word(0).to_string();
            if item != "row_count" {
                return Err(refuse(&format!("GET DIAGNOSTICS {}", item.to_uppercase())));
            }
            self.i += 1;
            out.push(TStmt::Assign {
                var: format!("@{v}"),
                op: None,
                expr: "@@rowcount".into(),
            });
            if self.peek().is_some_and(|t| t.op(",")) {
                self.i += 1;
            } else {
                break;
            }
        }
        self.expect_semi()?;
        Ok(TStmt::Block(out))
    }

    /// A SQL statement, with its `INTO [STRICT] targets` taken out.
    fn sql(&mut self) -> Result<TStmt> {
        let end = self.until(&[], false);
        if end == self.i {
            return Err(match self.peek() {
                Some(t) => self.err_at(t, "syntax error at or near"),
                None => Self::eof(),
            });
        }
        // An INTO at depth 0 not of INSERT INTO / MERGE INTO.
        let mut depth = 0;
        let mut into = None;
        for k in self.i..end {
            let t = &self.t[k];
            if t.op("(") || t.op("[") {
                depth += 1;
            } else if t.op(")") || t.op("]") {
                depth -= 1;
            } else if depth == 0
                && t.is("into")
                && !(k > self.i && (self.t[k - 1].is("insert") || self.t[k - 1].is("merge")))
            {
                into = Some(k);
                break;
            }
        }
        let stmt = match into {
            Some(k) => {
                let before = self.text(self.i, k)?;
                self.i = k + 1;
                let (vars, strict) = self.targets()?;
                let after = self.text(self.i, end)?;
                TStmt::SelectInto {
                    vars,
                    query: format!("{before} {after}"),
                    strict,
                }
            }
            None => TStmt::Sql(self.text(self.i, end)?),
        };
        self.i = end;
        self.expect_semi()?;
        Ok(stmt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body() {
        let b = parse_plpgsql(
            "DECLARE x int := $1; BEGIN FOR i IN 1..x LOOP x := x + i; EXIT WHEN x > 10; END LOOP; \
             SELECT count(*) INTO x FROM t WHERE c = x; RAISE NOTICE 'x %', x; RETURN x; END",
            &["a".into()],
        )
        .unwrap();
        let s = format!("{b:?}");
        assert!(s.contains("init: Some(\"@a\")"), "{s}");
        assert!(s.contains("SELECT count(*) FROM t WHERE c = @x"), "{s}");
        assert!(s.contains("ForInt"), "{s}");
        let e = parse_plpgsql("BEGIN FOR r IN SELECT 1 LOOP END LOOP; END", &[]).unwrap_err();
        assert_eq!(e.kind, ErrorKind::FeatureNotSupported);
    }
}
