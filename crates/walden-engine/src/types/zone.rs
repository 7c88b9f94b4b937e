//! The session time zone.
//!
//! `timestamptz` values are UTC microseconds; the session's `TimeZone`
//! decides how text is read into them and how they are shown. Text
//! conversions happen deep inside value code (`coerce`, `Display`) that has
//! no session in reach, so, as PostgreSQL does with its `session_timezone`
//! global, the zone is ambient: the SQL layer sets it on the thread for the
//! span of a statement (and the wire layer while it encodes rows) with
//! [`enter`]; code that runs outside any session sees UTC.

use super::dtinput::DateOrder;
use super::interval::IntervalStyle;
use jiff::tz::{Offset, TimeZone};
use std::cell::{Cell, RefCell};

/// A session time zone: its name as `SHOW TimeZone` prints it, and the
/// rules. It also carries the session's `DateStyle` field order, the other
/// setting date/time text is read with, and its `extra_float_digits` and
/// `bytea_output`, which float and bytea text are written with, so that one
/// ambient value holds them all.
#[derive(Clone, Debug)]
pub struct Zone {
    pub name: String,
    tz: TimeZone,
    pub order: DateOrder,
    /// `extra_float_digits` (-15 to 3): above 0 floats are written with
    /// the shortest exact digits, else with 15 (float4: 6) plus this many.
    pub float_digits: i8,
    /// `bytea_output = escape`: bytea text is PostgreSQL's escape format
    /// rather than hex.
    pub bytea_escape: bool,
    /// `IntervalStyle`: how interval text is written (and, for
    /// sql_standard, how a leading minus is read).
    pub interval_style: IntervalStyle,
}

impl Default for Zone {
    fn default() -> Self {
        Zone::utc()
    }
}

thread_local!(static CURRENT: RefCell<Option<Zone>> = const { RefCell::new(None) });
thread_local!(static NOW: Cell<Option<i64>> = const { Cell::new(None) });

/// Restores the previous transaction instant when dropped.
pub struct NowGuard(Option<i64>);

impl Drop for NowGuard {
    fn drop(&mut self) {
        NOW.with(|c| c.set(self.0));
    }
}

/// Makes `now` (UTC microseconds) the instant the input `now`, `today`,
/// ... read on this thread until the guard drops: the transaction's start
/// in a transaction block, as PostgreSQL's. Unset, they read the clock.
pub fn enter_now(now: Option<i64>) -> NowGuard {
    NowGuard(NOW.with(|c| c.replace(now)))
}

/// The instant `now` reads as.
pub fn current_now() -> i64 {
    NOW.with(|c| c.get()).unwrap_or_else(super::now_micros)
}

/// Restores the previous zone when dropped.
pub struct ZoneGuard(Option<Zone>);

impl Drop for ZoneGuard {
    fn drop(&mut self) {
        let prev = self.0.take();
        CURRENT.with(|c| *c.borrow_mut() = prev);
    }
}

/// Makes `z` the zone of this thread until the guard drops.
pub fn enter(z: &Zone) -> ZoneGuard {
    ZoneGuard(CURRENT.with(|c| c.borrow_mut().replace(z.clone())))
}

/// Runs `f` with the current zone.
pub fn with_current<T>(f: impl FnOnce(&Zone) -> T) -> T {
    CURRENT.with(|c| match &*c.borrow() {
        Some(z) => f(z),
        None => f(&Zone::utc()),
    })
}

const US: i64 = 1_000_000;

impl Zone {
    pub fn utc() -> Zone {
        Zone {
            name: "UTC".into(),
            tz: TimeZone::UTC,
            order: DateOrder::Mdy,
            float_digits: 1,
            bytea_escape: false,
            interval_style: IntervalStyle::Postgres,
        }
    }

    /// A zone fixed `secs` east of UTC.
    pub fn fixed(name: String, secs: i32) -> Option<Zone> {
        Some(Zone {
            name,
            tz: TimeZone::fixed(Offset::from_seconds(secs).ok()?),
            order: DateOrder::Mdy,
            float_digits: 1,
            bytea_escape: false,
            interval_style: IntervalStyle::Postgres,
        })
    }

    /// Parses a `TimeZone` setting: an IANA name (`Europe/Paris`), a UTC
    /// spelling, or a numeric offset. Offsets follow PostgreSQL: a bare
    /// number (`SET TIME ZONE -5`, `'-5'`) is hours east (ISO sign), but a
    /// POSIX form such as `UTC+5`, `<+05>-5` or `'+05:30'` counts hours
    /// *west*.
    pub fn parse(spec: &str) -> Option<Zone> {
        let s = spec.trim();
        let lower = s.to_ascii_lowercase();
        if matches!(
            lower.as_str(),
            "utc" | "gmt" | "etc/utc" | "etc/gmt" | "uct" | "zulu" | "z" | "universal" | "default"
        ) {
            return Some(Zone {
                name: if lower == "default" {
                    "UTC".into()
                } else {
                    s.to_string()
                },
                tz: TimeZone::UTC,
                order: DateOrder::Mdy,
                float_digits: 1,
                bytea_escape: false,
                interval_style: IntervalStyle::Postgres,
            });
        }
        // A number of hours: `SET TIME ZONE -5`, `SET TIME ZONE 5.5`.
        if let Ok(h) = s.parse::<f64>() {
            if h.abs() <= 15.0 {
                let secs = (h * 3600.0).round() as i32;
                return Zone::fixed(format!("<{}>{}", offset_text(secs), posix_text(secs)), secs);
            }
            return None;
        }
        // The name a numeric zone is shown with: `<-05>+05`.
        if let Some(rest) = s.strip_prefix('<') {
            let (iso, _) = rest.split_once('>')?;
            let secs = parse_offset(iso)?;
            return Zone::fixed(s.to_string(), secs);
        }
        // `'+05:30'`, `'-08:00'`, `'04:30'`: PostgreSQL reads such a
        // string as a POSIX zone, hours *west* of UTC (`'+02:00'` is UTC-2).
        let signed = if s.starts_with(['+', '-']) {
            s.to_string()
        } else {
            format!("+{s}")
        };
        if let Some(secs) = parse_offset(&signed) {
            if s.contains(':') {
                return Zone::fixed(s.to_string(), -secs);
            }
            return None;
        }
        if s.is_empty() || s.len() > 64 || s.contains("..") {
            return None;
        }
        TimeZone::get(s).ok().map(|tz| Zone {
            name: s.to_string(),
            tz,
            order: DateOrder::Mdy,
            float_digits: 1,
            bytea_escape: false,
            interval_style: IntervalStyle::Postgres,
        })
    }

    /// A zone named in date/time text (`America/New_York`, `Japan`,
    /// `UTC`): a name from the time zone database, any case; else a POSIX
    /// zone (`GMT-4`, `PST+03:00`: hours *west*), as PostgreSQL reads one.
    pub fn named(s: &str) -> Option<Zone> {
        if s.is_empty() || s.len() > 64 || s.contains("..") {
            return None;
        }
        let posix = || {
            if s.bytes().any(|b| b.is_ascii_digit()) {
                TimeZone::posix(&s.to_ascii_uppercase()).ok()
            } else {
                None
            }
        };
        TimeZone::get(s).ok().or_else(posix).map(|tz| Zone {
            name: s.to_string(),
            tz,
            order: DateOrder::Mdy,
            float_digits: 1,
            bytea_escape: false,
            interval_style: IntervalStyle::Postgres,
        })
    }

    /// The offset from UTC, in seconds, at UTC instant `utc_us`.
    pub fn offset_at(&self, utc_us: i64) -> i32 {
        let ts = jiff::Timestamp::from_microsecond(utc_us.clamp(MIN_US, MAX_US))
            .unwrap_or(jiff::Timestamp::UNIX_EPOCH);
        self.tz.to_offset(ts).seconds()
    }

    /// The zone's abbreviation at UTC instant `utc_us` (`PST`, `CEST`;
    /// `+05` for a fixed offset without one).
    pub fn abbreviation_at(&self, utc_us: i64) -> String {
        let ts = jiff::Timestamp::from_microsecond(utc_us.clamp(MIN_US, MAX_US))
            .unwrap_or(jiff::Timestamp::UNIX_EPOCH);
        let info = self.tz.to_offset_info(ts);
        let a = info.abbreviation();
        if a.is_empty() {
            offset_text(info.offset().seconds())
        } else {
            a.to_string()
        }
    }

    /// The offset (seconds east) abbreviation `abbr` stood for in this zone
    /// at UTC instant `utc_us`, as PostgreSQL reads a dynamic abbreviation:
    /// the latest period at or before that instant that used it, else the
    /// first after; `None` when the zone never used it. (A wall-clock time
    /// is probed at the instant the zone's own rules give it.)
    pub fn abbreviation_offset(&self, abbr: &str, utc_us: i64) -> Option<i32> {
        let ts = jiff::Timestamp::from_microsecond(utc_us.clamp(MIN_US, MAX_US)).ok()?;
        let upto = ts
            .checked_add(jiff::SignedDuration::from_micros(1))
            .unwrap_or(ts);
        let same = |a: &str| a.eq_ignore_ascii_case(abbr);
        if let Some(t) = self.tz.preceding(upto).find(|t| same(t.abbreviation())) {
            return Some(t.offset().seconds());
        }
        self.tz
            .following(ts)
            .find(|t| same(t.abbreviation()))
            .map(|t| t.offset().seconds())
    }

    /// Local wall-clock microseconds of a UTC instant.
    pub fn to_local(&self, utc_us: i64) -> i64 {
        utc_us.saturating_add(self.offset_at(utc_us) as i64 * US)
    }

    /// The UTC instant of a local wall-clock time. A time repeated by a
    /// fall-back transition is read as the later one (standard time), one
    /// skipped by a spring-forward gap with the offset before the gap, as
    /// PostgreSQL does.
    pub fn from_local(&self, local_us: i64) -> i64 {
        let clamped = local_us.clamp(MIN_US + 86_400 * US, MAX_US - 86_400 * US);
        let r = jiff::Timestamp::from_microsecond(clamped)
            .ok()
            .and_then(|t| {
                let dt = t.to_zoned(TimeZone::UTC).datetime();
                self.tz.to_ambiguous_timestamp(dt).later().ok()
            });
        match r {
            Some(t) => t.as_microsecond() + (local_us - clamped),
            None => local_us - self.offset_at(local_us) as i64 * US,
        }
    }
}

/// jiff's timestamp range; instants beyond it use the offset at its edge.
const MIN_US: i64 = -377_705_116_800_000_000;
const MAX_US: i64 = 253_402_207_200_000_000;

/// `+05`, `-08`, `+05:30`, `+05:30:15`: an offset as PostgreSQL shows it.
pub fn offset_text(secs: i32) -> String {
    let sign = if secs < 0 { '-' } else { '+' };
    let a = secs.unsigned_abs();
    let (h, m, s) = (a / 3600, a / 60 % 60, a % 60);
    match (m, s) {
        (0, 0) => format!("{sign}{h:02}"),
        (_, 0) => format!("{sign}{h:02}:{m:02}"),
        _ => format!("{sign}{h:02}:{m:02}:{s:02}"),
    }
}

/// The POSIX spelling of an offset (sign inverted), for a fixed zone's name.
fn posix_text(secs: i32) -> String {
    let a = secs.unsigned_abs();
    let sign = if secs > 0 { "-" } else { "+" };
    let (h, m) = (a / 3600, a / 60 % 60);
    if m == 0 {
        format!("{sign}{h:02}")
    } else {
        format!("{sign}{h:02}:{m:02}")
    }
}

/// Parses a numeric offset east of UTC: `+05`, `-0800`, `+05:30`, `-3:00:15`.
pub fn parse_offset(s: &str) -> Option<i32> {
    let (sign, rest) = match s.as_bytes().first()? {
        b'+' => (1, &s[1..]),
        b'-' => (-1, &s[1..]),
        _ => return None,
    };
    let parts: Vec<&str> = if rest.contains(':') {
        rest.split(':').collect()
    } else if rest.len() > 2 && rest.bytes().all(|b| b.is_ascii_digit()) {
        // `+0530`, `+053015`
        rest.as_bytes()
            .chunks(2)
            .map(|c| std::str::from_utf8(c).unwrap_or("x"))
            .collect()
    } else {
        vec![rest]
    };
    if parts.is_empty() || parts.len() > 3 {
        return None;
    }
    let mut secs = 0i32;
    for (i, p) in parts.iter().enumerate() {
        if p.is_empty() || p.len() > 2 || !p.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let v: i32 = p.parse().ok()?;
        if i > 0 && v > 59 {
            return None;
        }
        secs += v * [3600, 60, 1][i];
    }
    (secs <= 15 * 3600 + 59 * 60).then_some(sign * secs)
}
