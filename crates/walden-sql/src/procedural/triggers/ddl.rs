//! `CREATE [OR REPLACE] TRIGGER`, `DROP TRIGGER`, `ALTER TABLE ... ENABLE |
//! DISABLE TRIGGER`, and the check `DROP FUNCTION` makes for triggers that
//! use the function. Each writes rows of [`TRIGGER_TABLE`] with ordinary
//! SQL in the session's transaction.

use super::*;
use crate::front::plpgsql::trigger::{DropTrigger, EnableTrigger};
use crate::front::plpgsql::{lex, K};

fn undefined_table(name: &str) -> SqlError {
    SqlError::new(
        ErrorKind::UndefinedTable,
        format!("relation \"{name}\" does not exist"),
    )
}

fn regclass_text(schema: &Option<String>, table: &str) -> String {
    let q = crate::types::quote::quote_ident;
    match schema {
        Some(s) => format!("{}.{}", q(s), q(table)),
        None => q(table),
    }
}

/// Whether a WHEN condition names `rec` (`new` or `old`).
fn names_record(cond: &str, rec: &str) -> bool {
    lex(cond).is_ok_and(|t| {
        t.iter()
            .enumerate()
            .any(|(i, x)| x.is(rec) && t.get(i + 1).is_some_and(|d| d.k == K::Op && d.w == "."))
    })
}

impl<'h, H: Host> Runner<'h, H> {
    /// The OID of the table `schema.table` names (42P01 if none; 42809
    /// for a view; 0A000 for a partitioned table or a partition).
    fn trigger_table(&mut self, schema: &Option<String>, table: &str) -> Result<Option<i64>> {
        let name = regclass_text(schema, table);
        let o = match self.fixed(
            "SELECT c.oid, c.relkind, c.relispartition FROM pg_catalog.pg_class c \
             WHERE c.oid = to_regclass($1)",
            &[Value::text(name)],
        ) {
            Ok(o) => o,
            Err(e) if e.kind == ErrorKind::UndefinedTable => return Ok(None),
            Err(e) => return Err(e),
        };
        let Some(r) = o.rows.into_iter().next() else {
            return Ok(None);
        };
        let kind = r[1].to_string();
        if kind == "v" || kind == "m" {
            return Err(SqlError::unsupported(format!(
                "triggers on view \"{table}\" (views are read-only here)"
            )));
        }
        if kind == "p" || matches!(r[2], Value::Bool(true)) {
            return Err(SqlError::unsupported(format!(
                "triggers on partitioned table \"{table}\" or its partitions"
            )));
        }
        if kind != "r" {
            return Err(SqlError::new(
                ErrorKind::WrongObjectType,
                format!("\"{table}\" is not a table or view"),
            ));
        }
        Ok(r[0].as_i64())
    }

    pub fn create_trigger(&mut self, t: &PgTrigger) -> Result<QueryOutput> {
        let oid = self
            .trigger_table(&t.schema, &t.table)?
            .ok_or_else(|| undefined_table(&t.table))?;
        if let Some(body) = &t.tsql_body {
            return self.create_tsql_trigger(t, oid, body);
        }
        let func = self
            .func_definition(&t.func)?
            .and_then(|d| crate::front::plpgsql::parse_pg_function(&d))
            .ok_or_else(|| {
                SqlError::new(
                    ErrorKind::UndefinedFunction,
                    format!("function {}() does not exist", t.func),
                )
            })?;
        if !func.is_trigger() {
            return Err(SqlError::new(
                ErrorKind::InvalidObjectDefinition,
                format!("function {} must return type trigger", t.func),
            ));
        }
        if let Some(w) = &t.when {
            let bad = |m: &str| {
                Err(SqlError::new(
                    ErrorKind::InvalidObjectDefinition,
                    m.to_string(),
                ))
            };
            let (new, old) = (names_record(w, "new"), names_record(w, "old"));
            if !t.row && (new || old) {
                return bad("statement trigger's WHEN condition cannot reference column values");
            }
            if t.fires_on(TrigOp::Insert) && old {
                return bad("INSERT trigger's WHEN condition cannot reference OLD values");
            }
            if t.fires_on(TrigOp::Delete) && new {
                return bad("DELETE trigger's WHEN condition cannot reference NEW values");
            }
            // It must read as an expression now, not at the first row.
            crate::front::plpgsql::trigger_expr(w)?;
        }
        self.trigger_store()?;
        let exists = !self
            .fixed(
                &format!("SELECT 1 FROM public.{TRIGGER_TABLE} WHERE tbl_oid = $1 AND name = $2"),
                &[Value::Int(oid), Value::text(t.name.clone())],
            )?
            .rows
            .is_empty();
        if exists && !t.replace {
            return Err(SqlError::new(
                ErrorKind::DuplicateObject,
                format!(
                    "trigger \"{}\" for relation \"{}\" already exists",
                    t.name, t.table
                ),
            ));
        }
        let text = t.definition(&regclass_text(&t.schema, &t.table));
        self.fixed(
            &format!(
                "INSERT INTO public.{TRIGGER_TABLE} (tbl_oid, name, func, definition, enabled) \
                 VALUES ($1, $2, $3, $4, true) ON CONFLICT (tbl_oid, name) DO UPDATE SET \
                 func = EXCLUDED.func, definition = EXCLUDED.definition, enabled = true"
            ),
            &[
                Value::Int(oid),
                Value::text(t.name.clone()),
                Value::text(t.func.clone()),
                Value::text(text),
            ],
        )?;
        note(oid);
        Ok(QueryOutput::command("CREATE TRIGGER"))
    }

    fn trigger_store(&mut self) -> Result<()> {
        self.fixed(
            &format!(
                "CREATE TABLE IF NOT EXISTS public.{TRIGGER_TABLE} (tbl_oid bigint NOT NULL, \
                 name text NOT NULL, func text NOT NULL, definition text NOT NULL, \
                 enabled boolean NOT NULL, PRIMARY KEY (tbl_oid, name))"
            ),
            &[],
        )?;
        Ok(())
    }

    /// T-SQL's CREATE [OR ALTER] TRIGGER: names are the schema's (one
    /// trigger of a name in the database); the body must parse now.
    fn create_tsql_trigger(&mut self, t: &PgTrigger, oid: i64, body: &str) -> Result<QueryOutput> {
        crate::front::parse_batch(body)?;
        self.trigger_store()?;
        let found = self.fixed(
            &format!("SELECT tbl_oid FROM public.{TRIGGER_TABLE} WHERE lower(name) = lower($1)"),
            &[Value::text(t.name.clone())],
        )?;
        if let Some(r) = found.rows.first() {
            if !t.replace {
                return Err(SqlError::new(
                    ErrorKind::DuplicateObject,
                    format!(
                        "There is already an object named '{}' in the database.",
                        t.name
                    ),
                ));
            }
            self.fixed(
                &format!(
                    "DELETE FROM public.{TRIGGER_TABLE} WHERE tbl_oid = $1 AND lower(name) = lower($2)"
                ),
                &[r[0].clone(), Value::text(t.name.clone())],
            )?;
        }
        self.fixed(
            &format!(
                "INSERT INTO public.{TRIGGER_TABLE} (tbl_oid, name, func, definition, enabled) \
                 VALUES ($1, $2, '', $3, true)"
            ),
            &[
                Value::Int(oid),
                Value::text(t.name.clone()),
                Value::text(t.definition("")),
            ],
        )?;
        note(oid);
        Ok(QueryOutput::command("CREATE TRIGGER"))
    }

    /// T-SQL's DROP TRIGGER [IF EXISTS] name, ...
    pub fn drop_tsql_triggers(&mut self, names: &[String], if_exists: bool) -> Result<QueryOutput> {
        for n in names {
            let gone = match self.fixed(
                &format!("DELETE FROM public.{TRIGGER_TABLE} WHERE lower(name) = lower($1) AND func = ''"),
                &[Value::text(n.clone())],
            ) {
                Ok(o) => tag_rows(&o.tag).unwrap_or(0) > 0,
                Err(e) if e.kind == ErrorKind::UndefinedTable => false,
                Err(e) => return Err(e),
            };
            if !gone && !if_exists {
                return Err(SqlError::new(
                    ErrorKind::UndefinedObject,
                    format!(
                        "Cannot drop the trigger '{n}', because it does not exist or you do not have permission."
                    ),
                ));
            }
        }
        Ok(QueryOutput::command("DROP TRIGGER"))
    }

    pub fn drop_trigger(&mut self, d: &DropTrigger) -> Result<QueryOutput> {
        let oid = match self.trigger_table(&d.schema, &d.table)? {
            Some(o) => o,
            None if d.if_exists => {
                let mut o = QueryOutput::command("DROP TRIGGER");
                o.notices
                    .push(format!("relation \"{}\" does not exist, skipping", d.table));
                return Ok(o);
            }
            None => return Err(undefined_table(&d.table)),
        };
        let gone = match self.fixed(
            &format!("DELETE FROM public.{TRIGGER_TABLE} WHERE tbl_oid = $1 AND name = $2"),
            &[Value::Int(oid), Value::text(d.name.clone())],
        ) {
            Ok(o) => tag_rows(&o.tag).unwrap_or(0) > 0,
            Err(e) if e.kind == ErrorKind::UndefinedTable => false,
            Err(e) => return Err(e),
        };
        let mut o = QueryOutput::command("DROP TRIGGER");
        if !gone {
            if !d.if_exists {
                return Err(SqlError::new(
                    ErrorKind::UndefinedObject,
                    format!(
                        "trigger \"{}\" for table \"{}\" does not exist",
                        d.name, d.table
                    ),
                ));
            }
            o.notices.push(format!(
                "trigger \"{}\" for relation \"{}\" does not exist, skipping",
                d.name, d.table
            ));
        }
        Ok(o)
    }

    pub fn enable_trigger(&mut self, e: &EnableTrigger) -> Result<QueryOutput> {
        let oid = match self.trigger_table(&e.schema, &e.table)? {
            Some(o) => o,
            None if e.if_exists => {
                let mut o = QueryOutput::command("ALTER TABLE");
                o.notices
                    .push(format!("relation \"{}\" does not exist, skipping", e.table));
                return Ok(o);
            }
            None => return Err(undefined_table(&e.table)),
        };
        let (sql, params) = match &e.name {
            Some(n) => (
                format!("UPDATE public.{TRIGGER_TABLE} SET enabled = $2 WHERE tbl_oid = $1 AND name = $3"),
                vec![
                    Value::Int(oid),
                    Value::Bool(e.enable),
                    Value::text(n.clone()),
                ],
            ),
            None => (
                format!("UPDATE public.{TRIGGER_TABLE} SET enabled = $2 WHERE tbl_oid = $1"),
                vec![Value::Int(oid), Value::Bool(e.enable)],
            ),
        };
        let n = match self.fixed(&sql, &params) {
            Ok(o) => tag_rows(&o.tag).unwrap_or(0),
            Err(x) if x.kind == ErrorKind::UndefinedTable => 0,
            Err(x) => return Err(x),
        };
        if let (Some(name), 0) = (&e.name, n) {
            return Err(SqlError::new(
                ErrorKind::UndefinedObject,
                format!(
                    "trigger \"{name}\" for table \"{}\" does not exist",
                    e.table
                ),
            ));
        }
        Ok(QueryOutput::command("ALTER TABLE"))
    }

    /// DROP FUNCTION's check: a trigger of a live table using `func`
    /// keeps it (2BP01, as PostgreSQL without CASCADE).
    pub(in crate::procedural) fn triggers_using(&mut self, func: &str) -> Result<()> {
        let o = match self.fixed(
            &format!(
                "SELECT w.name, c.relname FROM public.{TRIGGER_TABLE} w \
                 JOIN pg_catalog.pg_class c ON c.oid = w.tbl_oid WHERE w.func = $1 ORDER BY 2, 1"
            ),
            &[Value::text(func)],
        ) {
            Ok(o) => o,
            Err(e) if e.kind == ErrorKind::UndefinedTable => return Ok(()),
            Err(e) => return Err(e),
        };
        if o.rows.is_empty() {
            return Ok(());
        }
        let detail: Vec<String> = o
            .rows
            .iter()
            .map(|r| {
                format!(
                    "trigger {} on table {} depends on function {func}()",
                    r[0], r[1]
                )
            })
            .collect();
        Err(SqlError::new(
            ErrorKind::DependentObjects,
            format!("cannot drop function {func}() because other objects depend on it"),
        )
        .with_fields(crate::error::ErrorFields {
            detail: Some(detail.join("\n")),
            hint: Some("Use DROP ... CASCADE to drop the dependent objects too.".into()),
            ..Default::default()
        }))
    }
}
