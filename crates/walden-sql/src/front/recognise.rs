//! `parse`: the statements Walden recognises itself (T-SQL forms, SET, ...), the rest to sqlparser.

use super::*;

/// The `search_path` PostgreSQL starts a session with (what `SET search_path
/// TO DEFAULT` sets).
pub const DEFAULT_PATH: &str = "\"$user\", public";

/// Parses one statement.
/// `DELETE [FROM] t OUTPUT list FROM source rest` as `DELETE t FROM source
/// OUTPUT list rest` (None for any other statement).
fn tsql_delete_output(t: &[Token]) -> Option<String> {
    let word = |k: usize, w: &str| matches!(t.get(k), Some(Token::Word(x)) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case(w));
    let mut k = 1;
    if word(k, "FROM") {
        k += 1;
    }
    let name_start = k;
    while matches!(t.get(k), Some(Token::Word(_))) && !word(k, "OUTPUT") {
        k += 1;
        if matches!(t.get(k), Some(Token::Period)) {
            k += 1;
        } else {
            break;
        }
    }
    if k == name_start || !word(k, "OUTPUT") {
        return None;
    }
    // The top-level FROM after OUTPUT, and the WHERE (or end) after it.
    let top = |from: usize, w: &str| {
        let mut depth = 0i32;
        (from..t.len()).find(|&i| {
            match t[i] {
                Token::LParen => depth += 1,
                Token::RParen => depth -= 1,
                _ => {}
            }
            depth == 0 && word(i, w)
        })
    };
    let src = top(k, "FROM")?;
    let rest = top(src, "WHERE").unwrap_or(t.len());
    let join = |r: &[Token]| {
        r.iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join(" ")
    };
    Some(format!(
        "DELETE {} {} {} {}",
        join(&t[name_start..k]),
        join(&t[src..rest]),
        join(&t[k..src]),
        join(&t[rest..])
    ))
}

/// MERGE's forms sqlparser does not read: `INSERT DEFAULT VALUES` is handed
/// over as `INSERT *` (which is refused as written, so the planner reads
/// it as DEFAULT VALUES); SQL Server's `MERGE TOP (n)` is refused (None
/// when the text has neither).
fn merge_forms(t: &[Token]) -> Result<Option<String>> {
    let word = |k: usize, w: &str| matches!(t.get(k), Some(Token::Word(x)) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case(w));
    let mut out: Vec<String> = Vec::with_capacity(t.len());
    let mut changed = false;
    let mut i = 0;
    while i < t.len() {
        if word(i, "MERGE") && word(i + 1, "TOP") {
            return Err(SqlError::unsupported("MERGE TOP (n)"));
        }
        // SQL Server's `MERGE [INTO] t WITH (HOLDLOCK) [AS] x` (sqlparser
        // reads no hint there): the hint is not honoured.
        if word(i, "MERGE") {
            let mut k = i + 1 + usize::from(word(i + 1, "INTO"));
            while matches!(t.get(k), Some(Token::Word(_)))
                && matches!(t.get(k + 1), Some(Token::Period))
            {
                k += 2;
            }
            if word(k + 1, "WITH") && matches!(t.get(k + 2), Some(Token::LParen)) {
                let hint = t.get(k + 3).map(|x| x.to_string()).unwrap_or_default();
                return Err(SqlError::unsupported(format!(
                    "table hint WITH ({hint}) on the target of MERGE"
                )));
            }
        }
        if word(i, "THEN") && word(i + 1, "INSERT") && matches!(t.get(i + 2), Some(Token::Mul)) {
            return Err(SqlError::unsupported("MERGE's INSERT *"));
        }
        if word(i, "INSERT") && word(i + 1, "DEFAULT") && word(i + 2, "VALUES") {
            out.push("INSERT *".into());
            changed = true;
            i += 3;
            continue;
        }
        out.push(t[i].to_string());
        i += 1;
    }
    Ok(changed.then(|| out.join(" ")))
}

pub fn parse(sql: &str) -> Result<Command> {
    let mut t = Toks {
        t: words_and_tokens(sql),
        i: 0,
    };
    let (depth, nesting) = depth_bound(&t.t);
    if depth > MAX_DEPTH {
        return Err(too_deep(depth));
    }
    if nesting > MAX_NESTING {
        return Err(too_nested(nesting));
    }
    let first = t.word(0).unwrap_or_default();
    if matches!(first.as_str(), "MERGE" | "WITH") {
        if let Some(text) = merge_forms(&t.t)? {
            return Ok(Command::Sql(Box::new(parse_sql(&text)?)));
        }
    }
    match first.as_str() {
        "BEGIN" | "START" => return crate::front::transaction::parse_begin(&mut t).map(Command::Tx),
        "SAVEPOINT" | "SAVE" => return crate::front::transaction::parse_savepoint(&mut t).map(Command::Tx),
        "RELEASE" => return crate::front::transaction::parse_release(&mut t).map(Command::Tx),
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
            if t.eat("AND") {
                let no = t.eat("NO");
                if !t.eat("CHAIN") {
                    return Err(SqlError::syntax("syntax error: expected AND [NO] CHAIN"));
                }
                t.end("COMMIT")?;
                if !no {
                    return Ok(Command::Tx(crate::front::transaction::TxCommand::Chain(Some(dd))));
                }
            }
            t.end("COMMIT")?;
            return Ok(Command::Commit(dd));
        }
        "ROLLBACK" | "ABORT" => {
            t.i += 1;
            return Ok(match crate::front::transaction::parse_rollback(&mut t)? {
                Some(c) => Command::Tx(c),
                None => Command::Rollback,
            });
        }
        "CHECKPOINT" => return Ok(Command::Checkpoint),
        "COMMENT" if t.is(1, "ON") => return comment_statement(sql),
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
            return role::parse_role_statement(&first, &mut t);
        }
        "GRANT" | "REVOKE" => return role::parse_role_statement(&first, &mut t),
        "ALTER" if t.is(1, "DEFAULT") && t.is(2, "PRIVILEGES") => {
            return Err(SqlError::unsupported(
                "ALTER DEFAULT PRIVILEGES (new objects get the default ACL)",
            ));
        }
        "CREATE" | "ALTER" | "DROP" if t.is(1, "AVAILABILITY") && t.is(2, "GROUP") => {
            t.i += 3;
            return availability_group::parse(&first, &mut t);
        }
        // T-SQL's DECLARE @variable is not a cursor.
        f if is_cursor_statement(f)
            && !sql
                .trim_start()
                .get(f.len()..)
                .is_some_and(|r| r.trim_start().starts_with('@')) =>
        {
            return parse_cursor_statement(f, sql);
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
        "LISTEN" | "NOTIFY" | "UNLISTEN" => return parse_notify(&first, &mut t),
        // Materialized views do not exist yet: every form of their
        // statements is refused as such, not as a syntax error.
        "CREATE" | "ALTER" | "DROP" | "REFRESH"
            if t.is(1, "MATERIALIZED") && t.is(2, "VIEW") =>
        {
            return Err(SqlError::unsupported(format!(
                "{first} MATERIALIZED VIEW (materialized views)"
            )))
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
        "DISCARD" if t.is(1, "SEQUENCES") => {
            t.i += 2;
            t.end("DISCARD SEQUENCES")?;
            return Ok(Command::DiscardSequences);
        }
        "DISCARD" if t.is(1, "TEMP") || t.is(1, "TEMPORARY") => {
            t.i += 2;
            t.end("DISCARD TEMP")?;
            return Ok(Command::DiscardTemp);
        }
        "DISCARD" if t.is(1, "PLANS") => {
            t.i += 2;
            t.end("DISCARD PLANS")?;
            return Ok(Command::DiscardPlans);
        }
        "DISCARD" => {
            return Err(SqlError::syntax(
                "syntax error: DISCARD takes ALL, PLANS, SEQUENCES, TEMP or TEMPORARY",
            ))
        }
        "VACUUM" | "ANALYZE" | "ANALYSE" => return super::analyze::parse(&mut t, &first),
        "USE" => {
            t.i += 1;
            let name = t.ident()?;
            return Ok(Command::Use(name));
        }
        "PREPARE" => return parse_prepare(sql),
        "EXECUTE" if parse_execute(sql).is_some_and(|c| {
            !matches!(&c, Command::ExecutePrepared { name, .. }
                if name.eq_ignore_ascii_case("sp_flush_log") || name.eq_ignore_ascii_case("sp_rename"))
        }) =>
        {
            return Ok(parse_execute(sql).expect("checked above"));
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
                return Ok(Command::Sql(Box::new(crate::front::alter_table::sp_rename(
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
            if t.eat("CHECKDB") {
                return parse_checkdb(&mut t);
            }
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
                "this DBCC command (only DBCC CHECKDB and DBCC SQLPERF('sys.dm_os_wait_stats' | 'sys.dm_log_exposure', CLEAR))",
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
        "SET" if t.is(1, "CONSTRAINTS") => {
            t.i += 2;
            let mut names = Vec::new();
            if !t.eat("ALL") {
                loop {
                    let mut n = t.ident()?;
                    while t.eat_tok(&Token::Period) {
                        n = t.ident()?;
                    }
                    names.push(n.to_ascii_lowercase());
                    if !t.eat_tok(&Token::Comma) {
                        break;
                    }
                }
            }
            let deferred = t.eat("DEFERRED");
            if !(deferred || t.eat("IMMEDIATE")) {
                return Err(SqlError::syntax(
                    "syntax error: SET CONSTRAINTS needs DEFERRED or IMMEDIATE",
                ));
            }
            t.end("SET CONSTRAINTS")?;
            return Ok(Command::SetConstraints { names, deferred });
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
            let mut name = t.ident()?;
            let mut schema = None;
            while t.eat_tok(&Token::Period) {
                schema = Some(std::mem::replace(&mut name, t.ident()?));
            }
            let change = super::sequence_clauses::sequence_clauses(&mut t, false)?;
            let o = &change.options;
            let options = walden_engine::SequenceOptions {
                data_type: o.data_type.unwrap_or_default(),
                start: o.start,
                increment: o.increment,
                min: o.min.flatten(),
                max: o.max.flatten(),
                cycle: o.cycle.unwrap_or(false),
            };
            if let Some(c) = o.cache.filter(|c| *c <= 0) {
                return Err(SqlError::new(
                    crate::ErrorKind::InvalidParameter,
                    format!("CACHE ({c}) must be greater than zero"),
                ));
            }
            return Ok(Command::CreateSequence {
                schema,
                name,
                if_not_exists,
                options,
                owned_by: change.owned_by.flatten(),
            });
        }
        // ALTER SEQUENCE (see `alter_sequence.rs`).
        // sqlparser does not parse it; CREATE / DROP DOMAIN are refused
        // too (domains are not done yet).
        "ALTER" if t.is(1, "DOMAIN") => return Err(SqlError::unsupported("ALTER DOMAIN")),
        "ALTER" if t.is(1, "SEQUENCE") => {
            t.i += 2;
            let if_exists = t.is(0, "IF") && t.is(1, "EXISTS");
            if if_exists {
                t.i += 2;
            }
            let name = t.ident()?;
            let sequence = qualified_last(&mut t, name)?;
            let change = super::sequence_clauses::sequence_clauses(&mut t, true)?;
            return Ok(Command::AlterSequence {
                if_exists,
                sequence,
                change,
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
            if t.eat("OWNER") {
                if !t.eat("TO") {
                    return Err(SqlError::syntax(
                        "syntax error: expected ALTER DATABASE name OWNER TO role",
                    ));
                }
                let current = !t.quoted(0)
                    && matches!(
                        t.word(0).as_deref(),
                        Some("CURRENT_USER" | "SESSION_USER" | "CURRENT_ROLE")
                    );
                let owner = if current {
                    t.next();
                    None
                } else {
                    let quoted = t.quoted(0);
                    let n = t.ident()?;
                    Some(if quoted { n } else { n.to_ascii_lowercase() })
                };
                t.end("ALTER DATABASE ... OWNER TO")?;
                return Ok(Command::AlterDatabaseOwner { name, owner });
            }
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
        // T-SQL's `DELETE t [OUTPUT ...] [WHERE ...]`: FROM is optional
        // (not before a later FROM: `DELETE t FROM t JOIN ...`).
        "DELETE"
            if !t.is(1, "FROM")
                && !t.is(1, "TOP")
                && matches!(t.t.get(1), Some(Token::Word(_)))
                && !t.t[2..].iter().any(|x| matches!(x, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case("from"))) =>
        {
            let rest: Vec<String> = t.t[1..].iter().map(|x| x.to_string()).collect();
            return Ok(Command::Sql(Box::new(parse_sql(&format!(
                "DELETE FROM {}",
                rest.join(" ")
            ))?)));
        }
        // T-SQL's `DELETE [FROM] t OUTPUT ... FROM source ...`: the parser
        // takes OUTPUT after the source, so it is moved there.
        "DELETE" if tsql_delete_output(&t.t).is_some() => {
            let text = tsql_delete_output(&t.t).unwrap_or_default();
            return Ok(Command::Sql(Box::new(parse_sql(&text)?)));
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
        if let Some(c) = partition_command(sql, &low)? {
            return Ok(c);
        }
        if let Some(a) = crate::front::alter_table::identity_actions(sql) {
            return Ok(Command::AlterIdentity(a));
        }
        if let Some(a) = crate::front::alter_table::alter_constraint(sql) {
            return Ok(Command::AlterConstraint(a?));
        }
        return Ok(Command::Sql(Box::new(crate::front::alter_table::parse(
            sql,
        )?)));
    }
    Ok(Command::Sql(Box::new(parse_sql(sql)?)))
}

/// `ALTER TABLE [IF EXISTS] [ONLY] p ATTACH PARTITION c FOR VALUES ...`
/// and `... DETACH PARTITION c`, which sqlparser does not read, as the
/// `CREATE TABLE c PARTITION OF p ...` that carries the same names and bound.
fn partition_command(sql: &str, low: &str) -> Result<Option<Command>> {
    let (attach, at) = match (
        low.find(" attach partition "),
        low.find(" detach partition "),
    ) {
        (Some(i), _) => (true, i),
        (None, Some(i)) => (false, i),
        _ => return Ok(None),
    };
    let head = sql[..at].trim();
    let words: Vec<&str> = head.split_whitespace().collect();
    let mut k = 2;
    if words.get(k).is_some_and(|w| w.eq_ignore_ascii_case("if")) {
        k += 2;
    }
    if words.get(k).is_some_and(|w| w.eq_ignore_ascii_case("only")) {
        k += 1;
    }
    let parent = words[k.min(words.len())..].join(" ");
    let tail = sql[at + " attach partition ".len()..]
        .trim()
        .trim_end_matches(';');
    let (child, rest) = if attach {
        // The child's name ends where FOR VALUES or DEFAULT begins.
        let lt = tail.to_ascii_lowercase();
        let cut = [" for values", " default"]
            .iter()
            .filter_map(|w| lt.find(w))
            .min()
            .ok_or_else(|| {
                SqlError::syntax("syntax error: ATTACH PARTITION needs FOR VALUES or DEFAULT")
            })?;
        (&tail[..cut], tail[cut..].trim())
    } else {
        let mut it = tail.splitn(2, char::is_whitespace);
        let child = it.next().unwrap_or("");
        match it.next().map(|r| r.trim().to_ascii_lowercase()) {
            None => {}
            Some(r) if r.is_empty() => {}
            Some(r) => {
                return Err(SqlError::unsupported(format!(
                    "DETACH PARTITION ... {}",
                    r.to_ascii_uppercase()
                )))
            }
        }
        (child, "DEFAULT")
    };
    let text = format!("CREATE TABLE {child} PARTITION OF {parent} {rest}");
    match parse_sql(&text)? {
        Statement::CreateTable(ct) => Ok(Some(if attach {
            Command::AttachPartition(Box::new(ct))
        } else {
            Command::DetachPartition(Box::new(ct))
        })),
        _ => Err(SqlError::syntax(
            "syntax error in ATTACH / DETACH PARTITION",
        )),
    }
}

/// `COMMENT ON ...`, with what sqlparser lacks: a dollar-quoted comment
/// (made a standard string) and `COMMENT ON CONSTRAINT c ON t IS ...`
/// (parsed as `COMMENT ON TABLE t IS ...` with the constraint's name
/// beside it).
fn comment_statement(sql: &str) -> Result<Command> {
    let bad = || SqlError::syntax("syntax error in COMMENT ON ... IS ...");
    let raw = super::toks::Raw::new(sql).ok_or_else(bad)?;
    let mut cuts = Vec::new();
    let constraint = if raw.word(2) == "CONSTRAINT" {
        let Some(Token::Word(w)) = raw.tok(3) else {
            return Err(bad());
        };
        if raw.word(4) != "ON" {
            return Err(bad());
        }
        cuts.push((raw.solid[2], raw.solid[4], "TABLE".to_string()));
        // An identifier folds to lower case unless quoted.
        Some(if w.quote_style.is_some() {
            w.value.clone()
        } else {
            w.value.to_ascii_lowercase()
        })
    } else {
        None
    };
    // The comment: the token after IS, when it is dollar-quoted.
    let is = (0..raw.solid.len()).rev().find(|k| raw.word(*k) == "IS");
    if let Some(k) = is {
        if let Some(Token::DollarQuotedString(d)) = raw.tok(k + 1) {
            let quoted = format!("'{}'", d.value.replace('\'', "''"));
            cuts.push((raw.solid[k + 1], raw.solid[k + 1], quoted));
        }
    }
    let stmt = if cuts.is_empty() {
        parse_sql(sql)?
    } else {
        parse_sql(&super::toks::splice(&raw.toks, cuts).ok_or_else(bad)?)?
    };
    Ok(match constraint {
        Some(constraint) => Command::CommentOnConstraint {
            constraint,
            stmt: Box::new(stmt),
        },
        None => Command::Sql(Box::new(stmt)),
    })
}

pub(super) fn qualified_last(t: &mut Toks, mut name: String) -> Result<String> {
    while t.eat_tok(&Token::Period) {
        name = t.ident()?;
    }
    Ok(name)
}

/// A `search_path` entry as SHOW prints it: quoted unless a plain
/// lower-case name.
fn quote_path_name(n: &str) -> String {
    let plain = n
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && n.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '$');
    if plain {
        n.to_string()
    } else {
        format!("\"{}\"", n.replace('"', "\"\""))
    }
}

pub(super) fn parse_set(t: &mut Toks, sql: &str) -> Result<Command> {
    t.i += 1;
    let local = t.eat("LOCAL");
    if !local {
        t.eat("SESSION");
    }
    if t.is(0, "TRANSACTION") || t.is(0, "CHARACTERISTICS") {
        return crate::front::transaction::parse_set_transaction(t).map(Command::Tx);
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
    if name == "search_path" && t.is(0, "DEFAULT") && t.t.len() == t.i + 1 {
        return Ok(if local {
            Command::SetLocal(name, DEFAULT_PATH.into())
        } else {
            Command::Reset(Some(name))
        });
    }
    let mut parts = Vec::new();
    while !t.at_end() {
        if name == "search_path" {
            // A list of names, shown quoted where needed, as PostgreSQL
            // keeps it (`''` is the empty name `""`).
            match t.next() {
                Some(Token::Comma) => parts.push(",".to_string()),
                Some(Token::Word(w)) if w.quote_style.is_some() => {
                    parts.push(format!("\"{}\"", w.value.replace('"', "\"\"")))
                }
                Some(Token::Word(w)) => parts.push(quote_path_name(&w.value.to_ascii_lowercase())),
                Some(Token::SingleQuotedString(s)) => parts.push(quote_path_name(&s)),
                Some(other) => parts.push(other.to_string()),
                None => break,
            }
            continue;
        }
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

/// `DBCC CHECKDB [( name | 'name' | 0 )] [WITH NO_INFOMSGS]`: `0` or no
/// name is the current database. SQL Server's other options (repairs,
/// PHYSICAL_ONLY, ...) are refused: Walden's check has no such modes.
fn parse_checkdb(t: &mut Toks) -> Result<Command> {
    let mut name = None;
    if t.eat_tok(&Token::LParen) {
        name = match t.next() {
            Some(Token::Number(n, _)) if n == "0" => None,
            Some(Token::Word(w)) => Some(w.value),
            Some(Token::SingleQuotedString(s)) | Some(Token::NationalStringLiteral(s)) => Some(s),
            other => {
                return Err(SqlError::syntax(format!(
                    "syntax error: expected a database name in DBCC CHECKDB, found {}",
                    other.map_or_else(|| "the end".into(), |t| t.to_string())
                )))
            }
        };
        if t.eat_tok(&Token::Comma) {
            return Err(SqlError::unsupported(
                "DBCC CHECKDB repair options (NOINDEX, REPAIR_*)",
            ));
        }
        if !t.eat_tok(&Token::RParen) {
            return Err(SqlError::syntax("syntax error: expected ) in DBCC CHECKDB"));
        }
    }
    let mut quiet = false;
    if t.eat("WITH") {
        loop {
            match t.word(0).as_deref() {
                Some("NO_INFOMSGS") => quiet = true,
                Some(w) => return Err(SqlError::unsupported(format!("DBCC CHECKDB option {w}"))),
                None => {
                    return Err(SqlError::syntax(
                        "syntax error: expected a DBCC CHECKDB option",
                    ))
                }
            }
            t.i += 1;
            if !t.eat_tok(&Token::Comma) {
                break;
            }
        }
    }
    t.end("DBCC CHECKDB")?;
    Ok(Command::CheckDb { name, quiet })
}

/// `LISTEN channel`, `UNLISTEN channel | *`, `NOTIFY channel [, 'payload']`
/// (see `context/notify.rs`). A channel is an identifier (folded unless
/// quoted); the payload a string constant, as PostgreSQL's grammar has it.
fn parse_notify(first: &str, t: &mut Toks) -> Result<Command> {
    t.i += 1;
    // A channel is a ColId: no reserved word, and no type or function name
    // key word, unless quoted.
    let channel = |t: &mut Toks| match t.next() {
        Some(Token::Word(w))
            if w.quote_style.is_none()
                && matches!(super::keywords::category(&w.value), Some('R' | 'T')) =>
        {
            Err(near(Some(Token::Word(w))))
        }
        Some(Token::Word(w)) if w.quote_style.is_none() => Ok(w.value.to_ascii_lowercase()),
        Some(Token::Word(w)) if w.quote_style == Some('"') => Ok(w.value),
        other => Err(near(other)),
    };
    let cmd = match first {
        "LISTEN" => Command::Listen(channel(t)?),
        "UNLISTEN" if t.eat_tok(&Token::Mul) => Command::Unlisten(None),
        "UNLISTEN" => Command::Unlisten(Some(channel(t)?)),
        _ => {
            let channel = channel(t)?;
            let payload = if t.eat_tok(&Token::Comma) {
                match t.next() {
                    Some(
                        Token::SingleQuotedString(s)
                        | Token::EscapedStringLiteral(s)
                        | Token::UnicodeStringLiteral(s),
                    ) => s,
                    Some(Token::DollarQuotedString(d)) => d.value,
                    other => return Err(near(other)),
                }
            } else {
                String::new()
            };
            Command::Notify { channel, payload }
        }
    };
    if !t.at_end() {
        return Err(near(t.next()));
    }
    Ok(cmd)
}

/// PostgreSQL's syntax error at a token (or at the end).
fn near(tok: Option<Token>) -> SqlError {
    match tok {
        None | Some(Token::EOF) => SqlError::syntax("syntax error at end of input"),
        Some(t) => SqlError::syntax(format!("syntax error at or near \"{t}\"")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
