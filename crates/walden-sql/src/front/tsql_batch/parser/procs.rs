//! The procedure statements of the batch grammar: `EXEC` and
//! `CREATE | ALTER PROCEDURE`.

use super::*;

impl Parser2 {
    pub(super) fn exec(&mut self) -> Result<TStmt> {
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
                return Err(err_at(
                    line,
                    format!("EXEC {name}: expected , between arguments"),
                ));
            }
        }
        self.i = end;
        Ok(TStmt::Exec(ExecCall { ret, name, args }))
    }

    /// `name [(] @p type [= default] [OUT[PUT]] [READONLY], ... [)] [WITH ...] AS body`
    /// (the body is the rest of the batch, as in SQL Server).
    pub(super) fn create_proc(&mut self, mode: ProcMode) -> Result<TStmt> {
        let line = self.line();
        let name = self.object_name()?;
        if matches!(self.tok(0), Some(Token::SemiColon)) {
            return Err(SqlError::unsupported("numbered procedures (name;n)"));
        }
        let paren = matches!(self.tok(0), Some(Token::LParen));
        if paren {
            self.i += 1;
        }
        let params = self.params(paren, line)?;
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

    /// `@p type [= default] [OUT[PUT]] [READONLY], ...` and the closing
    /// `)` when `paren`.
    pub(super) fn params(&mut self, paren: bool, line: usize) -> Result<Vec<ProcParam>> {
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
                        || matches!(
                            q.word(0).as_str(),
                            "OUT" | "OUTPUT" | "READONLY" | "AS" | "WITH"
                        )
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
        Ok(params)
    }

    /// `name ([@p type [= default], ...]) RETURNS type [WITH ...] [AS]
    /// BEGIN ... END`: a scalar function (table-valued ones are refused).
    pub(super) fn create_function(&mut self, mode: ProcMode) -> Result<TStmt> {
        let line = self.line();
        let name = self.object_name()?;
        if !matches!(self.tok(0), Some(Token::LParen)) {
            return Err(err_at(
                line,
                format!("expected ( after the function name {name}"),
            ));
        }
        self.i += 1;
        let params = self.params(true, line)?;
        if let Some(p) = params.iter().find(|p| p.output) {
            return Err(err_at(
                line,
                format!("a function's parameter {} cannot be OUTPUT", p.name),
            ));
        }
        if !self.eat("RETURNS") {
            return Err(err_at(self.line(), "expected RETURNS after the parameters"));
        }
        if self.var(0).is_some() {
            return Err(SqlError::unsupported(
                "multi-statement table-valued functions (RETURNS @t TABLE)",
            ));
        }
        if self.eat("TABLE") {
            // An inline table-valued function: `AS RETURN [(] query [)]`.
            if self.eat("WITH") {
                while !matches!(self.word(0).as_str(), "AS" | "RETURN" | "") {
                    self.i += 1;
                }
            }
            self.eat("AS");
            if self.word(0) != "RETURN" {
                return Err(err_at(
                    self.line(),
                    "expected RETURN before an inline table-valued function's query",
                ));
            }
            let body = self.rest_text(self.i);
            self.i = self.solid.len();
            return Ok(TStmt::CreateFunc(FuncDef {
                mode,
                name,
                params,
                returns: "TABLE".into(),
                body,
            }));
        }
        let end = self.solid.len();
        let stop = self.until_top(end, |q| {
            matches!(q.word(0).as_str(), "AS" | "WITH" | "BEGIN")
        });
        let returns = self.text(self.i, stop).trim().to_string();
        if returns.is_empty() {
            return Err(err_at(line, "RETURNS needs a type"));
        }
        self.i = stop;
        if self.eat("WITH") {
            loop {
                match self.word(0).as_str() {
                    "SCHEMABINDING" | "ENCRYPTION" => self.i += 1,
                    "INLINE" if matches!(self.tok(1), Some(Token::Eq)) => self.i += 3,
                    "CALLED" => self.i += 4, // CALLED ON NULL INPUT: the default
                    "EXECUTE" if self.word(1) == "AS" && self.word(2) == "CALLER" => self.i += 3,
                    w => {
                        return Err(SqlError::unsupported(format!("function option {w}")));
                    }
                }
                if !matches!(self.tok(0), Some(Token::Comma)) {
                    break;
                }
                self.i += 1;
            }
        }
        self.eat("AS");
        if self.word(0) != "BEGIN" {
            return Err(err_at(
                self.line(),
                "expected BEGIN before the function body",
            ));
        }
        let body = self.rest_text(self.i);
        parse_batch(&body)?;
        self.i = self.solid.len();
        Ok(TStmt::CreateFunc(FuncDef {
            mode,
            name,
            params,
            returns,
            body,
        }))
    }
}
