//! PL/pgSQL's statements on the runtime: `DO` blocks, integer FOR loops,
//! `SELECT ... INTO`, PERFORM, RAISE, EXECUTE, exception blocks (each a
//! subtransaction: a savepoint rolled back when a handler takes the
//! error), ASSERT and `FOUND`. Statements and expressions run as T-SQL's
//! do: lifted to parameters, parsed and planned once per text.

use super::*;
use crate::front::PgRaise;

/// The condition names an exception handler may name, with their
/// SQLSTATE (a code ending in `000` names its whole class).
const CONDITIONS: &[(&str, &str)] = &[
    ("division_by_zero", "22012"),
    ("unique_violation", "23505"),
    ("not_null_violation", "23502"),
    ("foreign_key_violation", "23503"),
    ("check_violation", "23514"),
    ("integrity_constraint_violation", "23000"),
    ("restrict_violation", "23001"),
    ("numeric_value_out_of_range", "22003"),
    ("invalid_text_representation", "22P02"),
    ("string_data_right_truncation", "22001"),
    ("null_value_not_allowed", "22004"),
    ("invalid_parameter_value", "22023"),
    ("datetime_field_overflow", "22008"),
    ("invalid_datetime_format", "22007"),
    ("data_exception", "22000"),
    ("cardinality_violation", "21000"),
    ("raise_exception", "P0001"),
    ("no_data_found", "P0002"),
    ("too_many_rows", "P0003"),
    ("assert_failure", "P0004"),
    ("plpgsql_error", "P0000"),
    ("case_not_found", "20000"),
    ("undefined_table", "42P01"),
    ("undefined_column", "42703"),
    ("undefined_function", "42883"),
    ("undefined_object", "42704"),
    ("duplicate_table", "42P07"),
    ("duplicate_object", "42710"),
    ("syntax_error", "42601"),
    ("insufficient_privilege", "42501"),
    ("feature_not_supported", "0A000"),
    ("serialization_failure", "40001"),
    ("deadlock_detected", "40P01"),
    ("lock_not_available", "55P03"),
    ("object_in_use", "55006"),
    ("query_canceled", "57014"),
    ("program_limit_exceeded", "54000"),
    ("statement_too_complex", "54001"),
    ("invalid_transaction_state", "25000"),
    ("read_only_sql_transaction", "25006"),
    ("wrong_object_type", "42809"),
    ("datatype_mismatch", "42804"),
];

/// An error's SQLSTATE (a RAISE's own code, or its kind's).
pub(super) fn sqlstate_of(e: &SqlError) -> String {
    e.fields
        .as_ref()
        .and_then(|f| f.sqlstate.clone())
        .unwrap_or_else(|| e.kind.sqlstate().to_string())
}

/// Whether a handler's condition takes an error of this SQLSTATE.
fn matches(cond: &str, code: &str) -> Result<bool> {
    if cond == "others" {
        // OTHERS does not take a cancel (PostgreSQL's rule).
        return Ok(code != "57014");
    }
    let want = match cond.strip_prefix("sqlstate:") {
        Some(c) => c.to_string(),
        None => CONDITIONS
            .iter()
            .find(|(n, _)| *n == cond)
            .map(|(_, c)| c.to_string())
            .ok_or_else(|| {
                SqlError::new(
                    ErrorKind::UndefinedObject,
                    format!("unrecognized exception condition \"{cond}\""),
                )
            })?,
    };
    Ok(if want.ends_with("000") && want.len() == 5 {
        code.get(..2) == want.get(..2)
    } else {
        code == want
    })
}

/// The error kind of a SQLSTATE (for a RAISE's ERRCODE): the kind whose
/// code it is, else a raised exception carrying the code.
fn kind_of(code: &str) -> ErrorKind {
    const KINDS: &[ErrorKind] = &[
        ErrorKind::DivisionByZero,
        ErrorKind::UniqueViolation,
        ErrorKind::NotNullViolation,
        ErrorKind::ForeignKeyViolation,
        ErrorKind::CheckViolation,
        ErrorKind::NumericOutOfRange,
        ErrorKind::InvalidText,
        ErrorKind::StringTooLong,
        ErrorKind::NoDataFound,
        ErrorKind::TooManyRows,
        ErrorKind::AssertFailure,
        ErrorKind::CaseNotFound,
        ErrorKind::InvalidParameter,
        ErrorKind::FeatureNotSupported,
        ErrorKind::DataException,
    ];
    KINDS
        .iter()
        .copied()
        .find(|k| k.sqlstate() == code)
        .unwrap_or(ErrorKind::RaiseException)
}

fn int_of(v: Value, what: &str) -> Result<i64> {
    match crate::functions::cast(v, &DataType::BigInt)? {
        Value::Null => Err(SqlError::new(
            ErrorKind::NullValueNotAllowed,
            format!("{what} of FOR loop cannot be null"),
        )),
        v => v
            .as_i64()
            .ok_or_else(|| SqlError::internal("an integer bound")),
    }
}

impl<'h, H: Host> Runner<'h, H> {
    /// Runs a `DO` block's body (parsed by `front::parse_plpgsql`): in the
    /// open transaction, or in one of its own that an error rolls back.
    pub fn run_do(&mut self, stmts: &[TStmt]) -> Result<QueryOutput> {
        self.pg = true;
        self.frame().insert(
            "@found".into(),
            Var {
                ty: DataType::Bool,
                value: Value::Bool(false),
            },
        );
        let own = !self.host.in_transaction();
        if own {
            self.fixed("BEGIN", &[])?;
        }
        let r = self.block(stmts);
        if own {
            let end = if r.is_ok() { "COMMIT" } else { "ROLLBACK" };
            let c = self.host.parse(end)?;
            let o = self.host.run(&c, &[]);
            r?;
            if o?.tag == "ROLLBACK" {
                return Err(SqlError::new(
                    ErrorKind::InFailedTransaction,
                    "the DO block's transaction failed and was rolled back",
                ));
            }
        } else {
            r?;
        }
        let mut o = QueryOutput::command("DO");
        o.notices = std::mem::take(&mut self.notices);
        Ok(o)
    }

    pub(super) fn set_found(&mut self, found: bool) {
        if let Some(v) = self.frame().get_mut("@found") {
            v.value = Value::Bool(found);
        }
    }

    /// A SQL statement in PL/pgSQL: its rows go nowhere (a SELECT without
    /// INTO is an error); FOUND and ROW_COUNT follow it.
    pub(super) fn pg_sql(&mut self, text: &str) -> Result<()> {
        let head = text
            .split_whitespace()
            .next()
            .unwrap_or("")
            .to_ascii_lowercase();
        if matches!(head.as_str(), "select" | "values" | "table") {
            return Err(SqlError::syntax(
                "query has no destination for result data (use PERFORM to discard the result)",
            ));
        }
        let o = self.sql(text)?;
        if o.columns.is_some()
            && head == "with"
            && tag_rows(&o.tag).is_some()
            && o.tag.starts_with("SELECT")
        {
            return Err(SqlError::syntax(
                "query has no destination for result data (use PERFORM to discard the result)",
            ));
        }
        let rows = tag_rows(&o.tag).unwrap_or(0);
        self.host.state().rowcount = rows;
        if matches!(
            head.as_str(),
            "insert" | "update" | "delete" | "merge" | "with"
        ) {
            self.set_found(rows > 0);
        }
        self.notices.extend(o.notices);
        Ok(())
    }

    pub(super) fn pg_stmt(&mut self, s: &TStmt) -> Result<Flow> {
        match s {
            TStmt::ForInt {
                var,
                from,
                to,
                step,
                reverse,
                body,
            } => {
                let from = int_of(self.eval(from)?, "lower bound")?;
                let to = int_of(self.eval(to)?, "upper bound")?;
                let step = match step {
                    Some(e) => int_of(self.eval(e)?, "BY value")?,
                    None => 1,
                };
                if step <= 0 {
                    return Err(SqlError::new(
                        ErrorKind::InvalidParameter,
                        "BY value of FOR loop must be greater than zero",
                    ));
                }
                // The loop variable hides any outer one of its name.
                let outer = self.frame().remove(var);
                let mut i = from;
                let mut ran = false;
                let mut flow = Flow::Normal;
                while if *reverse { i >= to } else { i <= to } {
                    self.host.check_cancel()?;
                    ran = true;
                    self.frame().insert(
                        var.clone(),
                        Var {
                            ty: DataType::Int,
                            value: Value::Int(i),
                        },
                    );
                    match self.block(body) {
                        Ok(Flow::Break) => break,
                        Ok(Flow::Return) => {
                            flow = Flow::Return;
                            break;
                        }
                        Ok(_) => {}
                        Err(e) => {
                            self.restore_var(var, outer);
                            return Err(e);
                        }
                    }
                    let next = if *reverse {
                        i.checked_sub(step)
                    } else {
                        i.checked_add(step)
                    };
                    match next {
                        Some(n) => i = n,
                        None => break,
                    }
                }
                self.restore_var(var, outer);
                self.set_found(ran);
                return Ok(flow);
            }
            TStmt::SelectInto {
                vars,
                query,
                strict,
            } => {
                let o = self.sql(query)?;
                let dml = !query
                    .trim_start()
                    .get(..6)
                    .is_some_and(|h| h.eq_ignore_ascii_case("select"))
                    && !query.trim_start().to_ascii_lowercase().starts_with("with");
                let n = o.rows.len();
                self.assign_into(vars, o.rows, *strict, *strict || dml)?;
                self.host.state().rowcount = n as i64;
                self.set_found(n > 0);
                self.notices.extend(o.notices);
            }
            TStmt::Perform(q) => {
                let o = self.sql(q)?;
                let n = o.rows.len();
                self.host.state().rowcount = n as i64;
                self.set_found(n > 0);
                self.notices.extend(o.notices);
            }
            TStmt::Raise(r) => self.pg_raise(r)?,
            TStmt::Execute {
                text,
                into,
                strict,
                using,
            } => {
                let sql = match self.eval(text)? {
                    Value::Null => {
                        return Err(SqlError::new(
                            ErrorKind::NullValueNotAllowed,
                            "query string argument of EXECUTE is null",
                        ))
                    }
                    v => v.to_string(),
                };
                let mut params = Vec::new();
                for u in using {
                    params.push(self.eval(u)?);
                }
                let expanded = self.expand_calls(&sql)?;
                let c = self.host.parse(&expanded)?;
                let o = self.host.run(&c, &params)?;
                let n = if o.columns.is_some() {
                    o.rows.len() as i64
                } else {
                    tag_rows(&o.tag).unwrap_or(0)
                };
                self.host.state().rowcount = n;
                if !into.is_empty() {
                    self.assign_into(into, o.rows, *strict, *strict)?;
                }
            }
            TStmt::Guarded { body, handlers } => return self.guarded(body, handlers),
            TStmt::Assert(cond, msg) => {
                if !self.truth(cond)? {
                    let m = match msg {
                        Some(m) => self.text_or_null(m)?,
                        None => "assertion failed".into(),
                    };
                    return Err(SqlError::new(ErrorKind::AssertFailure, m));
                }
            }
            _ => return Err(SqlError::internal("not a PL/pgSQL statement")),
        }
        Ok(Flow::Normal)
    }

    /// `SELECT ... INTO`, `EXECUTE ... INTO`: the first row's columns into
    /// `vars` (NULLs without a row); STRICT wants exactly one row, and
    /// `one_row` refuses several (a DML `RETURNING INTO` too).
    fn assign_into(
        &mut self,
        vars: &[String],
        rows: Vec<Vec<Value>>,
        strict: bool,
        one_row: bool,
    ) -> Result<()> {
        if rows.len() > 1 && one_row {
            return Err(SqlError::new(
                ErrorKind::TooManyRows,
                "query returned more than one row",
            ));
        }
        if rows.is_empty() && strict {
            return Err(SqlError::new(
                ErrorKind::NoDataFound,
                "query returned no rows",
            ));
        }
        let row = rows.into_iter().next();
        for (k, v) in vars.iter().enumerate() {
            let value = row
                .as_ref()
                .and_then(|r| r.get(k).cloned())
                .unwrap_or(Value::Null);
            self.set_var(v, value)?;
        }
        Ok(())
    }

    fn restore_var(&mut self, var: &str, outer: Option<Var>) {
        match outer {
            Some(v) => {
                self.frame().insert(var.to_string(), v);
            }
            None => {
                self.frame().remove(var);
            }
        }
    }

    fn text_or_null(&mut self, e: &str) -> Result<String> {
        Ok(match self.eval(e)? {
            Value::Null => "<NULL>".into(),
            v => crate::functions::cast(v, &DataType::Text)?.to_string(),
        })
    }

    fn pg_raise(&mut self, r: &PgRaise) -> Result<()> {
        let Some(format) = &r.format else {
            if !r.options.is_empty() {
                return self.pg_raise(&PgRaise {
                    format: Some(String::new()),
                    ..r.clone()
                });
            }
            return match self.caught.last() {
                Some(c) => Err(c.error.clone()),
                None => Err(SqlError::new(
                    ErrorKind::RaiseException,
                    "RAISE without parameters cannot be used outside an exception handler",
                )
                .with_fields(crate::error::ErrorFields {
                    sqlstate: Some("0Z002".into()),
                    ..Default::default()
                })),
            };
        };
        let mut message = String::new();
        if !format.is_empty() {
            let f = match self.eval(format)? {
                Value::Null => String::new(),
                v => v.to_string(),
            };
            let mut args = r.args.iter();
            let mut chars = f.chars().peekable();
            while let Some(c) = chars.next() {
                if c == '%' {
                    if chars.peek() == Some(&'%') {
                        chars.next();
                        message.push('%');
                        continue;
                    }
                    match args.next() {
                        Some(a) => {
                            let v = self.text_or_null(a)?;
                            message.push_str(&v);
                        }
                        None => {
                            return Err(SqlError::syntax("too few parameters specified for RAISE"))
                        }
                    }
                } else {
                    message.push(c);
                }
            }
            if args.next().is_some() {
                return Err(SqlError::syntax("too many parameters specified for RAISE"));
            }
        }
        let mut fields = crate::error::ErrorFields::default();
        let mut code = None;
        for (name, e) in &r.options {
            let v = self.text_or_null(e)?;
            match name.as_str() {
                "message" => message = v,
                "detail" => fields.detail = Some(v),
                "hint" => fields.hint = Some(v),
                "errcode" => {
                    let c = if v.len() == 5
                        && v.chars()
                            .all(|c| c.is_ascii_digit() || c.is_ascii_uppercase())
                    {
                        v
                    } else {
                        CONDITIONS
                            .iter()
                            .find(|(n, _)| *n == v)
                            .map(|(_, c)| c.to_string())
                            .ok_or_else(|| {
                                SqlError::new(
                                    ErrorKind::UndefinedObject,
                                    format!("unrecognized exception condition \"{v}\""),
                                )
                            })?
                    };
                    if message.is_empty() {
                        message = CONDITIONS
                            .iter()
                            .find(|(_, k)| *k == c)
                            .map(|(n, _)| n.to_string())
                            .unwrap_or_else(|| c.clone());
                    }
                    code = Some(c);
                }
                "column" | "constraint" | "datatype" | "table" | "schema" => {}
                other => {
                    return Err(SqlError::syntax(format!(
                        "unrecognized RAISE statement option \"{other}\""
                    )))
                }
            }
        }
        if r.level != "exception" {
            if matches!(r.level.as_str(), "notice" | "info" | "warning") {
                self.notices.push(message);
            }
            return Ok(());
        }
        let code = code.unwrap_or_else(|| "P0001".into());
        let kind = kind_of(&code);
        if kind.sqlstate() != code {
            fields.sqlstate = Some(code);
        }
        Err(SqlError::new(kind, message).with_fields(fields))
    }

    /// An exception block: its body in a savepoint; an error a handler
    /// takes rolls the body back and runs the handler.
    fn guarded(&mut self, body: &[TStmt], handlers: &[(Vec<String>, Vec<TStmt>)]) -> Result<Flow> {
        if !self.host.in_transaction() {
            return Err(SqlError::unsupported(
                "an exception block outside a transaction",
            ));
        }
        self.guards += 1;
        let name = format!("\"walden: plpgsql block {}\"", self.guards);
        if let Err(e) = self.fixed(&format!("SAVEPOINT {name}"), &[]) {
            self.guards -= 1;
            return Err(e);
        }
        let r = self.block(body);
        let e = match r {
            Ok(f) => {
                self.guards -= 1;
                self.fixed(&format!("RELEASE SAVEPOINT {name}"), &[])?;
                return Ok(f);
            }
            Err(e) => e,
        };
        let code = sqlstate_of(&e);
        let mut taken = None;
        for (conds, h) in handlers {
            for c in conds {
                if matches(c, &code)? {
                    taken = Some(h);
                    break;
                }
            }
            if taken.is_some() {
                break;
            }
        }
        let undone = self
            .fixed(&format!("ROLLBACK TO SAVEPOINT {name}"), &[])
            .and_then(|_| self.fixed(&format!("RELEASE SAVEPOINT {name}"), &[]));
        self.guards -= 1;
        undone?;
        let Some(h) = taken else {
            return Err(e);
        };
        if e.kind == ErrorKind::StackDepth && e.message.contains("nesting") {
            return Err(e);
        }
        let saved: Vec<(String, Option<Var>)> = ["@sqlstate", "@sqlerrm"]
            .iter()
            .map(|n| (n.to_string(), self.frame().remove(*n)))
            .collect();
        self.frame().insert(
            "@sqlstate".into(),
            Var {
                ty: DataType::Text,
                value: Value::text(code),
            },
        );
        self.frame().insert(
            "@sqlerrm".into(),
            Var {
                ty: DataType::Text,
                value: Value::text(e.message.clone()),
            },
        );
        self.caught.push(Caught {
            error: e,
            number: 50000,
            severity: 16,
            state: 1,
        });
        let r = self.block(h);
        self.caught.pop();
        for (n, v) in saved {
            self.restore_var(&n, v);
        }
        r
    }
}
