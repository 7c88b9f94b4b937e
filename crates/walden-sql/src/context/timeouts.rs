//! Session timeouts: `statement_timeout`, `idle_in_transaction_session_timeout`
//! and `idle_session_timeout`, as PostgreSQL has them.
//!
//! The statement timeout is enforced by one watchdog thread for the process:
//! a statement registers its deadline, and if it is still running then, the
//! watchdog sets the session's cancel flag (which the executor and row lock
//! waits watch) and marks the cancellation as a timeout. The idle timeouts
//! are the wire server's, which waits for the client's next message.

use parking_lot::{Condvar, Mutex};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

use crate::context::settings::Settings;
use crate::error::{ErrorKind, Result, SqlError};

/// A session's timeouts (`None`: off, PostgreSQL's 0).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SessionTimeouts {
    pub statement: Option<Duration>,
    pub idle_in_transaction: Option<Duration>,
    pub idle_session: Option<Duration>,
}

const STATEMENT: &str = "statement_timeout";
const IDLE_IN_TX: &str = "idle_in_transaction_session_timeout";
const IDLE: &str = "idle_session_timeout";

fn setting(settings: &Settings, name: &str) -> Option<Duration> {
    settings
        .get(name)
        .and_then(|v| parse_duration(name, &v).ok().flatten())
}

/// The session's statement_timeout (SET, or the server's default).
pub fn statement(settings: &Settings) -> Option<Duration> {
    settings.timeouts().statement
}

/// All three, as the session has them now (parsed once per change of the
/// settings: every statement and every wait for a message asks).
pub fn from_settings(settings: &Settings) -> SessionTimeouts {
    settings.timeouts()
}

/// All three, read and parsed from the settings.
pub(crate) fn read(settings: &Settings) -> SessionTimeouts {
    SessionTimeouts {
        statement: setting(settings, STATEMENT),
        idle_in_transaction: setting(settings, IDLE_IN_TX),
        idle_session: setting(settings, IDLE),
    }
}

/// Makes `t` the session's defaults (the server's configuration).
pub fn set_defaults(settings: &Settings, t: SessionTimeouts) {
    for (name, d) in [
        (STATEMENT, t.statement),
        (IDLE_IN_TX, t.idle_in_transaction),
        (IDLE, t.idle_session),
    ] {
        // show_duration's form always parses back.
        let _ = settings.set_default(name, &show_duration(d));
    }
}

/// Parses a PostgreSQL time setting: a number of milliseconds, or a number
/// with a unit (`us`, `ms`, `s`, `min`, `h`, `d`); 0 turns it off.
pub fn parse_duration(name: &str, v: &str) -> Result<Option<Duration>> {
    let t = v.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let bad = || {
        SqlError::new(
            ErrorKind::InvalidParameter,
            format!("invalid value for parameter \"{name}\": \"{v}\""),
        )
    };
    let n: f64 = num.parse().map_err(|_| bad())?;
    let ms = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "ms" => n,
        "us" => n / 1000.0,
        "s" => n * 1000.0,
        "min" => n * 60_000.0,
        "h" => n * 3_600_000.0,
        "d" => n * 86_400_000.0,
        _ => return Err(bad()),
    };
    if !ms.is_finite() || !(0.0..=i32::MAX as f64).contains(&ms) {
        return Err(bad());
    }
    Ok((ms >= 1.0).then(|| Duration::from_millis(ms as u64)))
}

/// How SHOW prints a time setting (PostgreSQL's style: `0`, `250ms`, `5s`).
pub fn show_duration(d: Option<Duration>) -> String {
    match d {
        None => "0".into(),
        Some(d) => {
            let ms = d.as_millis();
            if ms % 60_000 == 0 {
                format!("{}min", ms / 60_000)
            } else if ms % 1000 == 0 {
                format!("{}s", ms / 1000)
            } else {
                format!("{ms}ms")
            }
        }
    }
}

struct Armed {
    cancel: Weak<AtomicBool>,
    fired: Weak<AtomicBool>,
}

struct Watchdog {
    /// (deadline, serial) -> the statement's flags.
    armed: Mutex<BTreeMap<(Instant, u64), Armed>>,
    cv: Condvar,
    serial: std::sync::atomic::AtomicU64,
}

fn watchdog() -> &'static Watchdog {
    static W: OnceLock<&'static Watchdog> = OnceLock::new();
    W.get_or_init(|| {
        let w: &'static Watchdog = Box::leak(Box::new(Watchdog {
            armed: Mutex::new(BTreeMap::new()),
            cv: Condvar::new(),
            serial: Default::default(),
        }));
        std::thread::Builder::new()
            .name("walden-stmt-timeout".into())
            .spawn(move || w.run())
            .expect("cannot start the statement timeout thread");
        w
    })
}

impl Watchdog {
    fn run(&self) {
        let mut armed = self.armed.lock();
        loop {
            let now = Instant::now();
            while let Some(entry) = armed.first_entry() {
                if entry.key().0 > now {
                    break;
                }
                let a = entry.remove();
                if let (Some(c), Some(f)) = (a.cancel.upgrade(), a.fired.upgrade()) {
                    f.store(true, Relaxed);
                    c.store(true, Relaxed);
                }
            }
            match armed.keys().next().map(|k| k.0) {
                Some(d) => {
                    self.cv.wait_until(&mut armed, d);
                }
                None => self.cv.wait(&mut armed),
            }
        }
    }
}

/// A statement's deadline while it runs; dropping it disarms it.
pub struct Deadline(Option<(Instant, u64)>);

impl Drop for Deadline {
    fn drop(&mut self) {
        if let Some(k) = self.0 {
            watchdog().armed.lock().remove(&k);
        }
    }
}

/// Arms `timeout` for a statement: when it expires, `fired` then `cancel`
/// are set. `None` arms nothing and costs nothing.
pub fn arm(
    timeout: Option<Duration>,
    cancel: &Arc<AtomicBool>,
    fired: &Arc<AtomicBool>,
) -> Deadline {
    let Some(t) = timeout else {
        return Deadline(None);
    };
    fired.store(false, Relaxed);
    let w = watchdog();
    let key = (Instant::now() + t, w.serial.fetch_add(1, Relaxed));
    let mut armed = w.armed.lock();
    let first = armed.keys().next().is_none_or(|k| key < *k);
    armed.insert(
        key,
        Armed {
            cancel: Arc::downgrade(cancel),
            fired: Arc::downgrade(fired),
        },
    );
    if first {
        w.cv.notify_one();
    }
    Deadline(Some(key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_and_show_as_postgresql_does() {
        let p = |v: &str| parse_duration("statement_timeout", v).unwrap();
        assert_eq!(p("0"), None);
        assert_eq!(p("1500"), Some(Duration::from_millis(1500)));
        assert_eq!(p("2s"), Some(Duration::from_secs(2)));
        assert_eq!(p(" 3 min"), Some(Duration::from_secs(180)));
        assert_eq!(p("250ms"), Some(Duration::from_millis(250)));
        assert!(parse_duration("statement_timeout", "soon").is_err());
        assert!(parse_duration("statement_timeout", "-1").is_err());
        assert_eq!(show_duration(p("2s")), "2s");
        assert_eq!(show_duration(p("250")), "250ms");
        assert_eq!(show_duration(None), "0");
    }

    #[test]
    fn an_armed_deadline_fires_once_and_a_dropped_one_never() {
        let (c, f) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(false)),
        );
        let d = arm(Some(Duration::from_millis(20)), &c, &f);
        std::thread::sleep(Duration::from_millis(200));
        assert!(c.load(Relaxed) && f.load(Relaxed));
        drop(d);
        let (c, f) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(false)),
        );
        drop(arm(Some(Duration::from_millis(20)), &c, &f));
        std::thread::sleep(Duration::from_millis(100));
        assert!(!c.load(Relaxed) && !f.load(Relaxed));
    }
}
