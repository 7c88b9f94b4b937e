//! SET, SET LOCAL, RESET and SHOW of run-time parameters.

use super::SqlSession;
use crate::error::{Result, SqlError};
use crate::front::Command;
use crate::{Column, QueryOutput};
use walden_engine::{DataType, Value};

impl SqlSession {
    /// Runs SET / SET LOCAL / RESET / SHOW (see `execute_command`).
    pub(super) fn set_show(&mut self, cmd: &Command) -> Result<QueryOutput> {
        match cmd {
            Command::Set(name, value)
                if matches!(
                    name.as_str(),
                    "transaction_isolation" | "transaction_read_only" | "transaction_deferrable"
                ) =>
            {
                self.set_tx_parameter(name, value)
            }
            Command::Set(name, value) => self.set(name, value),
            Command::SetLocal(name, value) => {
                let mut out = QueryOutput::command("SET");
                if !self.settings.set_local(name, value)? {
                    out.notices
                        .push("SET LOCAL can only be used in transaction blocks".into());
                }
                Ok(out)
            }
            Command::Reset(name) => {
                match name {
                    Some(n) => self.settings.reset(n)?,
                    None => self.settings.reset_all(),
                }
                Ok(QueryOutput::command("RESET"))
            }
            Command::Show(name) => {
                let v = self.show(name)?;
                Ok(QueryOutput {
                    columns: Some(vec![Column {
                        name: name.clone(),
                        ty: DataType::Text,
                        origin: None,
                    }]),
                    rows: vec![vec![Value::text(v)]],
                    tag: "SHOW".into(),
                    ..Default::default()
                })
            }
            _ => Err(SqlError::internal("not a SET, RESET or SHOW command")),
        }
    }

    fn set(&mut self, name: &str, value: &str) -> Result<QueryOutput> {
        // `SET name TO DEFAULT` is RESET.
        if value.eq_ignore_ascii_case("default") {
            self.settings.reset(name)?;
            return Ok(QueryOutput::command("SET"));
        }
        self.settings.set(name, value)?;
        Ok(QueryOutput::command("SET"))
    }

    fn show(&self, name: &str) -> Result<String> {
        if name.eq_ignore_ascii_case("is_superuser") {
            return Ok(if self.is_superuser() { "on" } else { "off" }.into());
        }
        self.settings
            .get(name)
            .ok_or_else(|| crate::context::settings::unrecognized(name))
    }
}
