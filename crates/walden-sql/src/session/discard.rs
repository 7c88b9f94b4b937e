//! DISCARD SEQUENCES | PLANS | TEMP | ALL.

use super::SqlSession;
use crate::error::{Result, SqlError};
use crate::front::Command;
use crate::QueryOutput;

impl SqlSession {
    /// Runs one of the DISCARD commands (see `execute_command`).
    pub(super) fn discard(&mut self, cmd: &Command) -> Result<QueryOutput> {
        match cmd {
            Command::DiscardSequences => {
                self.session.discard_sequences();
                Ok(QueryOutput::command("DISCARD SEQUENCES"))
            }
            Command::DiscardPlans => {
                self.forget_plans();
                Ok(QueryOutput::command("DISCARD PLANS"))
            }
            Command::DiscardTemp => {
                // PostgreSQL drops them in the open transaction; Walden
                // drops them in a transaction of their own (as at session
                // end), so only outside one (refused in a block).
                if self.explicit || self.implicit || self.tx.is_some() {
                    return Err(SqlError::unsupported(
                        "DISCARD TEMP inside a transaction block",
                    ));
                }
                self.drop_temp_tables();
                self.forget_plans();
                Ok(QueryOutput::command("DISCARD TEMP"))
            }
            Command::DiscardAll => {
                self.drop_temp_tables();
                self.forget_plans();
                self.session.discard_sequences();
                self.settings.reset_all();
                self.engine.advisory.unlock_all(self.session.id);
                // UNLISTEN * (DISCARD ALL runs outside a block: at once).
                self.engine.notify.committed(
                    &self.listener,
                    vec![crate::context::notify::Pending::Unlisten(None)],
                );
                self.close_all_cursors();
                self.sql_deallocate(None);
                let mut out = QueryOutput::command("DISCARD ALL");
                out.deallocate = Some(crate::Deallocate::All);
                Ok(out)
            }
            _ => Err(SqlError::internal("not a DISCARD command")),
        }
    }
}
