//! Session settings (run-time parameters): `SET`, `SHOW`, `RESET`, and the
//! functions `set_config` and `current_setting`, which all read and write
//! the same per-session map.

use crate::error::{ErrorKind, Result, SqlError};
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::Arc;
use walden_engine::Session;

/// A session's settings: shared with the statements it runs, since
/// `set_config` is a function evaluated inside a query.
#[derive(Clone)]
pub struct Settings {
    session: Arc<Session>,
    values: Arc<Mutex<BTreeMap<String, String>>>,
    /// The value given at connection start (RESET returns to it).
    application_name: Arc<str>,
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.values.lock().iter()).finish()
    }
}

fn invalid(name: &str, v: &str) -> SqlError {
    SqlError::new(
        ErrorKind::InvalidParameter,
        format!("invalid value for parameter \"{name}\": \"{v}\""),
    )
}

impl Settings {
    pub fn new(session: Arc<Session>, application_name: &str) -> Settings {
        let s = Settings {
            session,
            values: Default::default(),
            application_name: application_name.into(),
        };
        s.values
            .lock()
            .insert("application_name".into(), application_name.into());
        s
    }

    /// Sets a parameter for the session. The ones that change what Walden
    /// does take effect here; the others are kept and shown back.
    pub fn set(&self, name: &str, value: &str) -> Result<()> {
        let name = name.to_ascii_lowercase();
        let v = value.trim().trim_matches('\'').to_string();
        let lower = v.to_ascii_lowercase();
        match name.as_str() {
            "synchronous_commit" => {
                let delayed = match lower.as_str() {
                    "off" | "false" | "0" | "no" => true,
                    "on" | "true" | "1" | "yes" | "local" | "remote_write" | "remote_apply" => {
                        false
                    }
                    _ => return Err(invalid(&name, &v)),
                };
                self.session.set_delayed_default(delayed);
            }
            "delayed_durability" => {
                let on = match lower.as_str() {
                    "on" | "true" | "1" => true,
                    "off" | "false" | "0" => false,
                    _ => {
                        return Err(SqlError::new(
                            ErrorKind::InvalidParameter,
                            format!("DELAYED_DURABILITY must be ON or OFF, not \"{v}\""),
                        ))
                    }
                };
                self.session.set_delayed_default(on);
            }
            "application_name" => self.session.set_program_name(&v),
            _ => {}
        }
        self.values.lock().insert(name, v);
        Ok(())
    }

    /// `RESET name`: back to the value the session started with.
    pub fn reset(&self, name: &str) {
        let name = name.to_ascii_lowercase();
        match name.as_str() {
            "synchronous_commit" | "delayed_durability" => self.session.set_delayed_default(false),
            "application_name" => {
                let _ = self.set("application_name", &self.application_name.clone());
                return;
            }
            _ => {}
        }
        self.values.lock().remove(&name);
    }

    /// `RESET ALL` (asyncpg runs it whenever a pooled connection is released).
    pub fn reset_all(&self) {
        self.session.set_delayed_default(false);
        self.values.lock().clear();
        let _ = self.set("application_name", &self.application_name.clone());
    }

    /// A parameter's current value; `None` if it was never set and is not
    /// one Walden reports.
    pub fn get(&self, name: &str) -> Option<String> {
        let name = name.to_ascii_lowercase();
        let on_off = |b: bool| if b { "on" } else { "off" }.to_string();
        match name.as_str() {
            "synchronous_commit" => return Some(on_off(!self.session.delayed_default())),
            "delayed_durability" => return Some(on_off(self.session.delayed_default())),
            "transaction_isolation" | "transaction isolation level" => {
                return Some("read committed".into())
            }
            "server_version_num" => return Some("150000".into()),
            "max_connections" => return Some("100".into()),
            _ => {}
        }
        if let Some(v) = self.values.lock().get(&name) {
            return Some(v.clone());
        }
        crate::server_parameters()
            .into_iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(&name))
            .map(|(_, v)| v)
    }
}
