//! Table variables (`DECLARE @t TABLE (col type [constraints], ...)`). A
//! table variable is a session temporary table of a name no one else
//! writes (`#tv<level>_<name>`: the call level keeps a procedure's `@t`
//! apart from its caller's); statements that name `@t` are compiled with
//! that name in its place (`compile::lift`). It lives as long as the batch
//! or procedure body that declared it: the runtime drops it when that ends.
//!
//! SQL Server's table variables are not transactional: a ROLLBACK leaves
//! their rows as they were, nor does a ROLLBACK to a savepoint. The
//! runtime honours that by copying the rows of every live table variable
//! before it rolls back and putting them back after (identity values
//! included). A failed statement is still undone on
//! a table variable (its statement savepoint), as SQL Server does.

use super::*;

/// A declared table variable.
#[derive(Clone)]
pub(super) struct TableVar {
    /// The temporary table's name.
    pub internal: String,
    /// The column list, with its parentheses.
    pub columns: String,
}

/// A table variable's rows, kept across a rollback.
struct Saved {
    var: TableVar,
    columns: Vec<String>,
    rows: Vec<Vec<Value>>,
}

impl<'h, H: Host> Runner<'h, H> {
    /// `DECLARE @t TABLE (...)`. A declaration runs once per scope: run
    /// again (in a loop) it keeps the rows, as SQL Server's declarations
    /// are not executable statements.
    pub(super) fn declare_table(&mut self, name: &str, ty: &str) -> Result<()> {
        if self.frame().contains_key(name) {
            return Err(redeclared(name));
        }
        if self.tables.last().is_some_and(|t| t.contains_key(name)) {
            return Ok(());
        }
        let columns = ty["TABLE".len()..].trim().to_string();
        let level = self.frames.len() - 1;
        let bare: String = name
            .trim_start_matches('@')
            .chars()
            .map(|c| if c.is_alphanumeric() { c } else { '_' })
            .collect();
        let var = TableVar {
            internal: format!("#tv{level}_{bare}"),
            columns,
        };
        self.create_table_var(&var)?;
        if let Some(t) = self.tables.last_mut() {
            t.insert(name.to_string(), var);
        }
        Ok(())
    }

    fn create_table_var(&mut self, var: &TableVar) -> Result<()> {
        // A table of this name left by an earlier batch (one whose DROP a
        // later ROLLBACK undid) must not hold rows of its own.
        self.fixed(&format!("DROP TABLE IF EXISTS {}", var.internal), &[])?;
        self.fixed(
            &format!("CREATE TABLE {} {}", var.internal, var.columns),
            &[],
        )?;
        Ok(())
    }

    /// Drops the innermost scope's table variables (the scope has ended).
    pub(super) fn drop_table_vars(&mut self) -> Result<()> {
        let vars = self.tables.pop().unwrap_or_default();
        let mut r = Ok(());
        for v in vars.values() {
            if let Err(e) = self.fixed(&format!("DROP TABLE IF EXISTS {}", v.internal), &[]) {
                r = Err(e);
            }
        }
        r
    }

    /// The temporary table names of the innermost scope's table variables,
    /// by variable name (what `lift` puts in their place).
    pub(super) fn table_names(&self) -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> = self
            .tables
            .last()
            .map(|t| {
                t.iter()
                    .map(|(k, v)| (k.clone(), v.internal.clone()))
                    .collect()
            })
            .unwrap_or_default();
        // And the `#t` of a call that has a table of its own while a
        // caller has one too: the innermost call's, seen by the calls it
        // makes (SQL Server's scopes for temporary tables).
        for (written, actual) in self.temps.iter().rev().flatten() {
            if written != actual && !v.iter().any(|(n, _)| n == written) {
                v.push((written.clone(), actual.clone()));
            }
        }
        v.sort();
        v
    }

    /// Rolls the transaction (or, `ROLLBACK TRAN name`, its work since a
    /// savepoint) back through `undo`, leaving every live table variable's
    /// rows as they were (SQL Server's rule).
    pub(super) fn keeping_table_vars<T>(
        &mut self,
        undo: impl FnOnce(&mut Self) -> Result<T>,
    ) -> Result<T> {
        let vars: Vec<TableVar> = self
            .tables
            .iter()
            .flat_map(|t| t.values().cloned())
            .collect();
        let mut saved = Vec::with_capacity(vars.len());
        for var in vars {
            let (columns, rows) = match self.fixed(&format!("SELECT * FROM {}", var.internal), &[])
            {
                Ok(o) => (
                    o.columns
                        .unwrap_or_default()
                        .into_iter()
                        .map(|c| c.name)
                        .collect(),
                    o.rows,
                ),
                Err(_) => (Vec::new(), Vec::new()),
            };
            saved.push(Saved { var, columns, rows });
        }
        let out = undo(self)?;
        for s in saved {
            self.restore(&s)?;
        }
        Ok(out)
    }

    fn restore(&mut self, s: &Saved) -> Result<()> {
        self.create_table_var(&s.var)?;
        let Some(width) = s.rows.first().map(Vec::len) else {
            return Ok(());
        };
        let slots: Vec<String> = (1..=width).map(|k| format!("${k}")).collect();
        let names: Vec<String> = s
            .columns
            .iter()
            .map(|c| format!("\"{}\"", c.replace('"', "\"\"")))
            .collect();
        let sql = format!(
            "INSERT INTO {} ({}) VALUES ({})",
            s.var.internal,
            names.join(", "),
            slots.join(", ")
        );
        // The rows keep their identity values.
        let identity = self.host.state().identity.clone();
        let before = identity
            .lock()
            .ok()
            .and_then(|mut l| l.insert_on.replace(s.var.internal.clone()));
        let mut r = Ok(());
        for row in &s.rows {
            if let Err(e) = self.fixed(&sql, row) {
                r = Err(e);
                break;
            }
        }
        if let Ok(mut l) = identity.lock() {
            l.insert_on = before;
        }
        r
    }
}

fn redeclared(name: &str) -> SqlError {
    SqlError::new(
        ErrorKind::DuplicateObject,
        format!(
            "The variable name '{name}' has already been declared. Variable names must be unique within a query batch or stored procedure."
        ),
    )
}
