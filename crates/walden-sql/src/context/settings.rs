//! Session settings (run-time parameters): `SET`, `SHOW`, `RESET`, and the
//! functions `set_config` and `current_setting`, which all read and write
//! the same per-session map.

use crate::error::{ErrorKind, Result, SqlError};
use crate::front::transaction::{check_isolation, Isolation};
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use walden_engine::types::dtinput::DateOrder;
use walden_engine::Session;

/// PostgreSQL's `max_index_keys` (a read-only setting): an index, key or
/// UNIQUE constraint has at most this many columns.
pub const MAX_INDEX_KEYS: usize = 32;

mod params;
mod pg15;

pub(crate) use params::{superuser_only, unrecognized};

/// A session's settings: shared with the statements it runs, since
/// `set_config` is a function evaluated inside a query.
#[derive(Clone)]
pub struct Settings {
    session: Arc<Session>,
    values: Arc<Mutex<BTreeMap<String, String>>>,
    /// The value given at connection start (RESET returns to it).
    application_name: Arc<str>,
    /// Values the server configured for this session (shown until SET,
    /// and what RESET returns to).
    defaults: Arc<Mutex<BTreeMap<String, String>>>,
    tx: Arc<Mutex<TxScope>>,
    /// Counts the changes to `values` and `defaults`: what every statement
    /// derives from them (the parsed time zone and search path) is kept
    /// with the generation it was derived at.
    generation: Arc<AtomicU64>,
    /// The parsed TimeZone, with the generation it was read at.
    zone: Arc<Mutex<Option<(u64, walden_engine::types::zone::Zone)>>>,
    /// The parsed search_path, with the generation it was read at.
    path: Arc<Mutex<Option<(u64, crate::context::search_path::SearchPath)>>>,
    /// The parsed timeouts, with the generation they were read at.
    timeouts: Arc<Mutex<Option<(u64, crate::context::timeouts::SessionTimeouts)>>>,
    /// Whether the session's database is a secondary replica now
    /// (`in_hot_standby`; every transaction is read-only there).
    standby: Arc<Mutex<Option<StandbyProbe>>>,
}

/// Tells whether the session's database is a secondary replica.
pub type StandbyProbe = Arc<dyn Fn() -> bool + Send + Sync>;

/// Settings are transactional, as in PostgreSQL: a rolled-back transaction
/// undoes its SETs, and `SET LOCAL` lasts until the transaction ends.
#[derive(Default)]
struct TxScope {
    /// In an explicit transaction block.
    active: bool,
    /// The settings before the block's first change.
    saved: Option<Saved>,
    /// Names set with SET LOCAL in the block.
    local: Vec<String>,
}

struct Saved {
    values: BTreeMap<String, String>,
    delayed: bool,
}

/// The settings at a savepoint ([`Settings::savepoint_mark`]).
#[derive(Debug, Clone)]
pub struct SettingsMark {
    values: BTreeMap<String, String>,
    delayed: bool,
    local: usize,
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.values.lock().iter()).finish()
    }
}

/// What setting a parameter does besides being shown back.
enum Effect {
    /// The session's default commit durability.
    Delayed(bool),
    /// The program name in `sys.dm_exec_sessions`.
    Program,
    Kept,
}

/// A parameter's folded name, its value, and its effect; bad values refused.
fn parse(name: &str, value: &str) -> Result<(String, String, Effect)> {
    let name = name.to_ascii_lowercase();
    let v = value.trim().trim_matches('\'').to_string();
    let lower = v.to_ascii_lowercase();
    let effect = match name.as_str() {
        "synchronous_commit" => Effect::Delayed(match lower.as_str() {
            "off" | "false" | "0" | "no" => true,
            "on" | "true" | "1" | "yes" | "local" | "remote_write" | "remote_apply" => false,
            _ => return Err(invalid(&name, &v)),
        }),
        "delayed_durability" => Effect::Delayed(match lower.as_str() {
            "on" | "true" | "1" => true,
            "off" | "false" | "0" => false,
            _ => {
                return Err(SqlError::new(
                    ErrorKind::InvalidParameter,
                    format!("DELAYED_DURABILITY must be ON or OFF, not \"{v}\""),
                ))
            }
        }),
        "application_name" => Effect::Program,
        // The level is checked here, the one place every spelling reaches
        // (SET, set_config, BEGIN and SET TRANSACTION set the same names).
        "default_transaction_isolation" | "transaction_isolation" => {
            let level = Isolation::parse(&v).ok_or_else(|| invalid(&name, &v))?;
            check_isolation(level)?;
            return Ok((name, level.name().to_string(), Effect::Kept));
        }
        "default_transaction_read_only"
        | "transaction_read_only"
        | "default_transaction_deferrable"
        | "transaction_deferrable" => {
            let on = parse_bool(&lower).ok_or_else(|| invalid(&name, &v))?;
            return Ok((name, if on { "on" } else { "off" }.into(), Effect::Kept));
        }
        // Kept and ignored these would change nobody's privileges.
        "role" | "session_authorization" | "authorization" => {
            return Err(SqlError::unsupported(
                "SET ROLE / SET SESSION AUTHORIZATION (a session acts as the role it logged in as)",
            ))
        }
        "statement_timeout" | "idle_in_transaction_session_timeout" | "idle_session_timeout" => {
            // Kept in the form SHOW prints; read by `timeouts.rs`.
            let d = crate::context::timeouts::parse_duration(&name, &v)?;
            return Ok((
                name,
                crate::context::timeouts::show_duration(d),
                Effect::Kept,
            ));
        }
        // Values Walden would store but not honour are refused.
        "lock_timeout"
            if crate::context::timeouts::parse_duration(&name, &v)
                .map_err(|_| invalid(&name, &v))?
                .is_some() =>
        {
            return Err(SqlError::unsupported(format!(
                "lock_timeout \"{v}\" per session (the server-wide lock_timeout_ms in \
                 walden.toml applies; 0 is accepted)"
            )))
        }
        // Any zone Walden can read (IANA name, UTC, a numeric offset);
        // the session's timestamptz input and output follow it.
        "timezone" => match walden_engine::types::zone::Zone::parse(&v) {
            Some(z) => return Ok((name, z.name, Effect::Kept)),
            None if is_utc(&lower) => Effect::Kept,
            None => {
                return Err(SqlError::new(
                    ErrorKind::InvalidParameter,
                    format!("invalid value for parameter \"TimeZone\": \"{v}\""),
                ))
            }
        },
        // Stored in the canonical form SHOW prints; the field order is
        // read by `Settings::zone` for date input.
        "datestyle" => {
            let (_, order) = datestyle_order(&v)?;
            let order = match order {
                DateOrder::Mdy => "MDY",
                DateOrder::Dmy => "DMY",
                DateOrder::Ymd => "YMD",
            };
            return Ok((name, format!("ISO, {order}"), Effect::Kept));
        }
        "client_encoding" if !matches!(lower.as_str(), "utf8" | "utf-8" | "unicode") => {
            return Err(SqlError::unsupported(format!(
                "client_encoding \"{v}\" (Walden speaks UTF8 only)"
            )))
        }
        // Walden's notices are all of level NOTICE: the levels above it
        // suppress them (`Settings::notices_shown`).
        "client_min_messages" => {
            if !params::MESSAGE_LEVELS.contains(&lower.as_str()) {
                return Err(invalid(&name, &v));
            }
            return Ok((name, lower, Effect::Kept));
        }
        // Stored; name resolution reads it.
        "search_path" => Effect::Kept,
        // The values the guards above let through.
        "lock_timeout" | "client_encoding" => Effect::Kept,
        _ => return Ok((name.clone(), params::check_other(&name, &v)?, Effect::Kept)),
    };
    Ok((name, v, effect))
}

/// A `DateStyle` value: its output style (only ISO is written; the
/// others are refused rather than ignored) and its field order for
/// ambiguous input. A part left out keeps the default, as a part of the
/// current value does in PostgreSQL.
pub(crate) fn datestyle_order(v: &str) -> Result<(&'static str, DateOrder)> {
    let mut order = DateOrder::Mdy;
    let (mut have_style, mut have_order) = (false, false);
    for part in v.split(',').map(|p| p.trim().to_ascii_lowercase()) {
        let conflict = match part.as_str() {
            "iso" => std::mem::replace(&mut have_style, true),
            "sql" | "postgres" | "german" => {
                return Err(SqlError::unsupported(format!(
                    "DateStyle output style \"{part}\" (Walden writes dates in ISO style)"
                )))
            }
            "ymd" | "dmy" | "euro" | "european" | "mdy" | "us" | "noneuro" | "noneuropean" => {
                order = match part.as_str() {
                    "ymd" => DateOrder::Ymd,
                    "dmy" | "euro" | "european" => DateOrder::Dmy,
                    _ => DateOrder::Mdy,
                };
                std::mem::replace(&mut have_order, true)
            }
            "default" => false,
            _ => {
                return Err(SqlError::new(
                    ErrorKind::InvalidParameter,
                    format!("invalid value for parameter \"DateStyle\": \"{v}\""),
                ))
            }
        };
        if conflict {
            return Err(SqlError::new(
                ErrorKind::InvalidParameter,
                format!("invalid value for parameter \"DateStyle\": \"{v}\""),
            ));
        }
    }
    Ok(("ISO", order))
}

/// A boolean parameter value as PostgreSQL reads one.
fn parse_bool(v: &str) -> Option<bool> {
    match v {
        "on" | "true" | "yes" | "1" | "t" | "y" => Some(true),
        "off" | "false" | "no" | "0" | "f" | "n" => Some(false),
        _ => None,
    }
}

/// The spellings of UTC a client may set TimeZone to.
fn is_utc(tz: &str) -> bool {
    matches!(
        tz,
        "utc"
            | "gmt"
            | "etc/utc"
            | "etc/gmt"
            | "uct"
            | "zulu"
            | "z"
            | "0"
            | "+00"
            | "+00:00"
            | "00:00"
            | "default"
    )
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
            defaults: Default::default(),
            tx: Default::default(),
            generation: Default::default(),
            zone: Default::default(),
            path: Default::default(),
            timeouts: Default::default(),
            standby: Default::default(),
        };
        s.values
            .lock()
            .insert("application_name".into(), application_name.into());
        s
    }

    /// How `in_hot_standby` and `transaction_read_only` learn the
    /// database's role.
    pub fn set_standby_probe(&self, f: StandbyProbe) {
        *self.standby.lock() = Some(f);
    }

    /// Whether the session's database is a secondary replica now.
    pub fn in_hot_standby(&self) -> bool {
        let f = self.standby.lock().clone();
        f.is_some_and(|f| f())
    }

    /// An explicit transaction block begins.
    pub fn begin_tx(&self) {
        let mut tx = self.tx.lock();
        tx.active = true;
        tx.saved = None;
        tx.local.clear();
    }

    /// The block ends: a rollback undoes every change made in it, a commit
    /// only the SET LOCAL ones.
    pub fn end_tx(&self, committed: bool) {
        let (saved, local) = {
            let mut tx = self.tx.lock();
            tx.active = false;
            (tx.saved.take(), std::mem::take(&mut tx.local))
        };
        let Some(saved) = saved else { return };
        let names: Vec<String> = if committed {
            local
        } else {
            let mut all: Vec<String> = self.values.lock().keys().cloned().collect();
            all.extend(saved.values.keys().cloned());
            all.push("synchronous_commit".into());
            all
        };
        for n in names {
            match n.as_str() {
                "synchronous_commit" | "delayed_durability" => {
                    self.session.set_delayed_default(saved.delayed)
                }
                _ => {}
            }
            match saved.values.get(&n) {
                Some(v) => {
                    if n == "application_name" {
                        self.session.set_program_name(v);
                    }
                    self.change_values(|values| values.insert(n, v.clone()));
                }
                None => {
                    self.change_values(|values| values.remove(&n));
                }
            }
        }
    }

    /// The settings as a savepoint finds them, to go back to on ROLLBACK
    /// TO SAVEPOINT (PostgreSQL undoes a subtransaction's SETs with it).
    pub fn savepoint_mark(&self) -> SettingsMark {
        SettingsMark {
            values: self.values.lock().clone(),
            delayed: self.session.delayed_default(),
            local: self.tx.lock().local.len(),
        }
    }

    /// Back to the settings of `mark` (what was set since is undone).
    pub fn rollback_to_mark(&self, mark: &SettingsMark) {
        let now = self.values.lock().clone();
        if now != mark.values {
            if let Some(v) = mark.values.get("application_name") {
                self.session.set_program_name(v);
            }
            let restored = mark.values.clone();
            self.change_values(|values| *values = restored);
        }
        self.session.set_delayed_default(mark.delayed);
        self.tx.lock().local.truncate(mark.local);
    }

    /// Remembers the settings before a change inside a transaction block.
    fn remember(&self, local: Option<&str>) {
        let mut tx = self.tx.lock();
        if !tx.active {
            return;
        }
        if tx.saved.is_none() {
            tx.saved = Some(Saved {
                values: self.values.lock().clone(),
                delayed: self.session.delayed_default(),
            });
        }
        if let Some(n) = local {
            tx.local.push(n.to_ascii_lowercase());
        }
    }

    /// Whether the current transaction is READ ONLY (its own mode, else the
    /// session default). Read per statement, so kept cheap.
    pub fn tx_read_only(&self) -> bool {
        let values = self.values.lock();
        match values.get("transaction_read_only") {
            Some(v) => v == "on",
            None => values
                .get("default_transaction_read_only")
                .is_some_and(|v| v == "on"),
        }
    }

    /// `SET LOCAL`: until the end of the transaction block. Outside one it
    /// has no effect (false), as in PostgreSQL, which warns.
    pub fn set_local(&self, name: &str, value: &str) -> Result<bool> {
        if !self.tx.lock().active {
            return Ok(false);
        }
        self.check(name, value)?;
        self.remember(Some(name));
        self.apply(name, value)?;
        Ok(true)
    }

    /// Sets a parameter for the session. The ones that change what Walden
    /// does take effect here; the others are kept and shown back.
    pub fn set(&self, name: &str, value: &str) -> Result<()> {
        // A transaction's own modes last until it ends (set_config reaches
        // here; SET and SET TRANSACTION go through the session).
        if matches!(
            name.to_ascii_lowercase().as_str(),
            "transaction_isolation" | "transaction_read_only" | "transaction_deferrable"
        ) {
            return self.set_local(name, value).map(drop);
        }
        self.check(name, value)?;
        self.remember(None);
        self.apply(name, value)
    }

    /// The value as SET would store it (bad values refused).
    pub fn normalized(&self, name: &str, value: &str) -> Result<String> {
        parse(name, value).map(|(_, v, _)| v)
    }

    /// Refuses a bad value before anything is remembered or changed.
    fn check(&self, name: &str, value: &str) -> Result<()> {
        parse(name, value).map(|_| ())
    }

    fn apply(&self, name: &str, value: &str) -> Result<()> {
        let (name, v, effect) = parse(name, value)?;
        match effect {
            Effect::Delayed(on) => self.session.set_delayed_default(on),
            Effect::Program => self.session.set_program_name(&v),
            Effect::Kept => {}
        }
        self.change_values(|values| values.insert(name, v));
        Ok(())
    }

    /// A value the server configured for this session: shown until the
    /// session sets its own, and what RESET returns to.
    pub fn set_default(&self, name: &str, value: &str) -> Result<()> {
        let (name, v, _) = parse(name, value)?;
        self.defaults.lock().insert(name, v);
        self.generation.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    /// `RESET name`: back to the value the session started with.
    pub fn reset(&self, name: &str) -> Result<()> {
        let name = name.to_ascii_lowercase();
        if self.get(&name).is_none() && matches!(params::known(&name), params::Known::No) {
            return Err(params::unrecognized(&name));
        }
        self.remember(None);
        match name.as_str() {
            "synchronous_commit" | "delayed_durability" => self.session.set_delayed_default(false),
            "application_name" => {
                let _ = self.set("application_name", &self.application_name.clone());
                return Ok(());
            }
            _ => {}
        }
        self.change_values(|values| values.remove(&name));
        Ok(())
    }

    /// Whether NOTICE messages reach the client (`client_min_messages`).
    pub fn notices_shown(&self) -> bool {
        let level = self.get("client_min_messages");
        let rank = |l: &str| params::MESSAGE_LEVELS.iter().position(|m| *m == l);
        match level.as_deref().and_then(rank) {
            Some(r) => r <= rank("notice").unwrap_or(0),
            None => true,
        }
    }

    /// Whether WARNINGs reach the client (`client_min_messages` at
    /// `warning` or below).
    pub fn warnings_shown(&self) -> bool {
        let level = self.get("client_min_messages");
        let rank = |l: &str| params::MESSAGE_LEVELS.iter().position(|m| *m == l);
        match level.as_deref().and_then(rank) {
            Some(r) => r <= rank("warning").unwrap_or(0),
            None => true,
        }
    }

    /// `RESET ALL` (asyncpg runs it whenever a pooled connection is released).
    pub fn reset_all(&self) {
        self.remember(None);
        self.session.set_delayed_default(false);
        self.change_values(|values| values.clear());
        let _ = self.set("application_name", &self.application_name.clone());
    }

    /// Changes the values map, then moves the generation: whatever was
    /// derived before (even from the values as they now are) is derived
    /// again by the next reader.
    fn change_values<R>(&self, f: impl FnOnce(&mut BTreeMap<String, String>) -> R) -> R {
        let r = f(&mut self.values.lock());
        self.generation.fetch_add(1, Ordering::AcqRel);
        r
    }

    /// `derive` of the current values, kept in `memo` until they change.
    fn derived<T: Clone>(&self, memo: &Mutex<Option<(u64, T)>>, derive: impl FnOnce() -> T) -> T {
        let generation = self.generation.load(Ordering::Acquire);
        if let Some((g, v)) = &*memo.lock() {
            if *g == generation {
                return v.clone();
            }
        }
        let v = derive();
        *memo.lock() = Some((generation, v.clone()));
        v
    }

    /// The session time zone (see `walden_engine::types::zone`).
    pub fn zone(&self) -> walden_engine::types::zone::Zone {
        self.derived(&self.zone, || {
            let name = self.get("timezone").unwrap_or_else(|| "UTC".into());
            let mut zone = walden_engine::types::zone::Zone::parse(&name).unwrap_or_default();
            if let Some(style) = self.get("datestyle") {
                zone.order = datestyle_order(&style).map(|(_, o)| o).unwrap_or_default();
            }
            if let Some(d) = self.get("extra_float_digits") {
                zone.float_digits = d.trim().parse().unwrap_or(1);
            }
            zone.bytea_escape = self
                .get("bytea_output")
                .is_some_and(|v| v.trim().eq_ignore_ascii_case("escape"));
            if let Some(style) = self.get("intervalstyle") {
                zone.interval_style = walden_engine::types::interval::IntervalStyle::parse(&style)
                    .unwrap_or_default();
            }
            zone
        })
    }

    /// The session's timeouts (statement, idle in a transaction, idle).
    pub(crate) fn timeouts(&self) -> crate::context::timeouts::SessionTimeouts {
        self.derived(&self.timeouts, || crate::context::timeouts::read(self))
    }

    /// The session's `search_path` as set (before privileges drop schemas).
    pub(crate) fn search_path(&self) -> crate::context::search_path::SearchPath {
        self.derived(&self.path, || match self.get("search_path") {
            Some(v) => crate::context::search_path::SearchPath::parse(&v),
            None => crate::context::search_path::SearchPath::default(),
        })
    }

    /// The names of the parameters this session has set (`pg_settings`
    /// lists them with the ones every session reports).
    pub fn names_set(&self) -> Vec<String> {
        let mut v: Vec<String> = self.values.lock().keys().cloned().collect();
        for k in self.defaults.lock().keys() {
            if !v.contains(k) {
                v.push(k.clone());
            }
        }
        v
    }

    /// A parameter's current value; `None` if it was never set and is not
    /// one Walden reports.
    pub fn get(&self, name: &str) -> Option<String> {
        let name = name.to_ascii_lowercase();
        let on_off = |b: bool| if b { "on" } else { "off" }.to_string();
        match name.as_str() {
            "synchronous_commit" => return Some(on_off(!self.session.delayed_default())),
            "delayed_durability" => return Some(on_off(self.session.delayed_default())),
            "transaction isolation level" => return self.get("transaction_isolation"),
            // On a secondary replica every transaction is read-only, as
            // on a PostgreSQL hot standby (its default stays as set).
            "transaction_read_only" if self.in_hot_standby() => return Some("on".into()),
            "transaction_isolation" | "transaction_read_only" | "transaction_deferrable" => {
                // This transaction's mode, else the session's default.
                let values = self.values.lock();
                if let Some(v) = values.get(&name) {
                    return Some(v.clone());
                }
                drop(values);
                return Some(
                    self.get(&format!("default_{name}"))
                        .unwrap_or_else(|| tx_default(&name).into()),
                );
            }
            "default_transaction_isolation"
            | "default_transaction_read_only"
            | "default_transaction_deferrable" => {
                let v = self.values.lock().get(&name).cloned();
                let d = || self.defaults.lock().get(&name).cloned();
                return Some(v.or_else(d).unwrap_or_else(|| tx_default(&name).into()));
            }
            "in_hot_standby" => return Some(on_off(self.in_hot_standby())),
            "server_version_num" => return Some("150000".into()),
            "max_connections" => return Some("100".into()),
            // PostgreSQL's compile-time limit, which CREATE INDEX enforces.
            "max_index_keys" => return Some(MAX_INDEX_KEYS.to_string()),
            _ => {}
        }
        if let Some(v) = self.values.lock().get(&name) {
            return Some(v.clone());
        }
        if let Some(v) = self.defaults.lock().get(&name) {
            return Some(v.clone());
        }
        crate::server_parameter(&name)
            .or_else(|| params::default_of(&name))
            .map(str::to_string)
    }
}

/// What the transaction-mode parameters are when nothing set them.
fn tx_default(name: &str) -> &'static str {
    if name.ends_with("isolation") {
        "read committed"
    } else {
        "off"
    }
}
