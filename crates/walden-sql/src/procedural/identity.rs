//! Session statements of the runtime: `SET IDENTITY_INSERT t ON | OFF`
//! (which one table of the session takes explicit values for its IDENTITY
//! column; the DML stage reads it from the session's
//! [`crate::functions::IdentityLog`]) and `WAITFOR DELAY`.

use super::*;

impl<'h, H: Host> Runner<'h, H> {
    pub(super) fn identity_insert(&mut self, table: &str, on: bool) -> Result<()> {
        let c = self
            .host
            .parse("SELECT to_regclass($1) IS NOT NULL, IDENT_SEED($1) IS NOT NULL")?;
        let o = self.host.run(&c, &[Value::text(table)])?;
        let row = o.rows.into_iter().next().unwrap_or_default();
        if row.first() != Some(&Value::Bool(true)) {
            return Err(SqlError::new(
                ErrorKind::UndefinedTable,
                format!(
                    "Cannot find the object \"{table}\" because it does not exist or you do not have permissions."
                ),
            ));
        }
        if row.get(1) != Some(&Value::Bool(true)) {
            return Err(SqlError::new(
                ErrorKind::WrongObjectType,
                format!(
                    "Table '{table}' does not have the identity property. Cannot perform SET operation."
                ),
            ));
        }
        let identity = self.host.state().identity.clone();
        let mut log = identity
            .lock()
            .map_err(|_| SqlError::internal("the session's identity state is poisoned"))?;
        match (&log.insert_on, on) {
            (Some(other), true) if other != table => {
                return Err(SqlError::new(
                    ErrorKind::PrerequisiteState,
                    format!(
                        "IDENTITY_INSERT is already ON for table '{other}'. Cannot perform SET operation for table '{table}'."
                    ),
                ))
            }
            (_, true) => log.insert_on = Some(table.to_string()),
            (Some(t), false) if t == table => log.insert_on = None,
            (_, false) => {}
        }
        drop(log);
        self.host.state().rowcount = 0;
        Ok(())
    }
}

impl<'h, H: Host> Runner<'h, H> {
    /// `WAITFOR DELAY 'hh:mm[:ss[.fff]]'`: sleeps, answering cancel and
    /// statement_timeout as it goes.
    pub(super) fn wait_for(&mut self, expr: &str) -> Result<()> {
        let v = self.eval(expr)?;
        let text = match crate::functions::cast(v, &DataType::Text)? {
            Value::Null => return Ok(()),
            v => v.to_string(),
        };
        let d = delay(&text).ok_or_else(|| {
            SqlError::new(
                ErrorKind::InvalidText,
                format!("Error converting '{text}' to a WAITFOR DELAY time (hh:mm[:ss[.fff]])."),
            )
        })?;
        let until = std::time::Instant::now() + d;
        loop {
            self.host.check_cancel()?;
            let now = std::time::Instant::now();
            if now >= until {
                return Ok(());
            }
            std::thread::sleep((until - now).min(std::time::Duration::from_millis(20)));
        }
    }
}

/// A WAITFOR DELAY time: `hh:mm`, `hh:mm:ss`, `hh:mm:ss.fff` (under 24 hours).
fn delay(s: &str) -> Option<std::time::Duration> {
    let mut parts = s.trim().split(':');
    let h: u64 = parts.next()?.trim().parse().ok()?;
    let m: u64 = parts.next()?.trim().parse().ok()?;
    let secs: f64 = match parts.next() {
        Some(x) => x.trim().parse().ok()?,
        None => 0.0,
    };
    if parts.next().is_some() || h > 23 || m > 59 || !(0.0..60.0).contains(&secs) {
        return None;
    }
    Some(
        std::time::Duration::from_secs(h * 3600 + m * 60)
            + std::time::Duration::from_secs_f64(secs),
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn delays() {
        use std::time::Duration;
        assert_eq!(super::delay("00:00:01"), Some(Duration::from_secs(1)));
        assert_eq!(super::delay("00:00:00.1"), Some(Duration::from_millis(100)));
        assert_eq!(super::delay("01:02"), Some(Duration::from_secs(3720)));
        assert_eq!(super::delay("24:00:00"), None);
        assert_eq!(super::delay("abc"), None);
    }
}
