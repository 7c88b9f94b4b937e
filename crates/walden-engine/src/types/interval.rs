//! `interval`: months, days and microseconds kept apart, as PostgreSQL does
//! (a month is not a fixed number of days, nor a day of hours across a DST
//! change), with its text input and its `postgres` output style.

use std::cmp::Ordering;

pub const US: i64 = 1_000_000;
pub const DAY_US: i64 = 86_400 * US;

#[derive(Clone, Copy, Debug, Default)]
pub struct Interval {
    pub months: i32,
    pub days: i32,
    pub micros: i64,
}

impl Interval {
    pub fn new(months: i32, days: i32, micros: i64) -> Interval {
        Interval {
            months,
            days,
            micros,
        }
    }

    /// The span with a month as 30 days and a day as 24 hours: what
    /// PostgreSQL compares (so `'1 mon' = '30 days'`) and hashes.
    pub fn span(&self) -> i128 {
        (self.months as i128 * 30 + self.days as i128) * DAY_US as i128 + self.micros as i128
    }

    pub fn checked_add(self, o: Interval) -> Option<Interval> {
        Some(Interval {
            months: self.months.checked_add(o.months)?,
            days: self.days.checked_add(o.days)?,
            micros: self.micros.checked_add(o.micros)?,
        })
    }

    pub fn checked_neg(self) -> Option<Interval> {
        Some(Interval {
            months: self.months.checked_neg()?,
            days: self.days.checked_neg()?,
            micros: self.micros.checked_neg()?,
        })
    }

    /// Multiplies by `f` as PostgreSQL's `interval_mul` does: months and
    /// days are truncated, the fractional month goes to days (30 a month,
    /// rounded to 1e-6 day) and the fractional day to seconds (rounded to
    /// a microsecond), a whole day of those seconds back to days.
    pub fn checked_mul_f64(self, f: f64) -> Option<Interval> {
        self.scale(|x| x * f)
    }

    /// Divides by `f` (not zero: the caller raises 22012) as PostgreSQL's
    /// `interval_div` does: the same cascade as `checked_mul_f64`, but each
    /// field divided (`x / f` and `x * (1 / f)` differ in the last bit).
    pub fn checked_div_f64(self, f: f64) -> Option<Interval> {
        self.scale(|x| x / f)
    }

    fn scale(self, op: impl Fn(f64) -> f64) -> Option<Interval> {
        // PostgreSQL's TSROUND: to 6 decimal places, ties to even.
        let round6 = |x: f64| (x * 1e6).round_ties_even() / 1e6;
        let int32 = |x: f64| {
            (!x.is_nan() && x >= i32::MIN as f64 && x <= i32::MAX as f64).then_some(x as i32)
        };
        let m = op(self.months as f64);
        let d = op(self.days as f64);
        let months = int32(m)?;
        let mut days = int32(d)?;
        let month_days = round6((m - months as f64) * 30.0);
        let mut secs = round6((d - days as f64 + month_days - month_days.trunc()) * 86_400.0);
        if secs.abs() >= 86_400.0 {
            let whole = (secs / 86_400.0).trunc();
            days = days.checked_add(whole as i32)?;
            secs -= whole * 86_400.0;
        }
        days = days.checked_add(month_days.trunc() as i32)?;
        let micros = (op(self.micros as f64) + secs * US as f64).round_ties_even();
        if !(-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&micros) {
            return None;
        }
        Some(Interval::new(months, days, micros as i64))
    }

    /// Whole days out of the time part (`justify_hours`).
    pub fn justify_hours(self) -> Interval {
        let extra = self.micros / DAY_US;
        Interval::new(
            self.months,
            self.days.saturating_add(extra as i32),
            self.micros % DAY_US,
        )
    }
}

impl PartialEq for Interval {
    fn eq(&self, o: &Self) -> bool {
        self.span() == o.span()
    }
}
impl Eq for Interval {}
impl PartialOrd for Interval {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Interval {
    fn cmp(&self, o: &Self) -> Ordering {
        self.span().cmp(&o.span())
    }
}

/// Appends `hh:mm:ss[.ffffff]` (trailing zeros of the fraction dropped).
pub fn push_clock(out: &mut String, micros: u64) {
    let (h, m, s, f) = (
        micros / 3_600_000_000,
        micros / 60_000_000 % 60,
        micros / 1_000_000 % 60,
        micros % 1_000_000,
    );
    out.push_str(&format!("{h:02}:{m:02}:{s:02}"));
    if f != 0 {
        let frac = format!("{f:06}");
        out.push('.');
        out.push_str(frac.trim_end_matches('0'));
    }
}

/// PostgreSQL's `IntervalStyle`: how intervals are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IntervalStyle {
    /// `1 year 2 mons -3 days +04:05:06.5` (the default).
    #[default]
    Postgres,
    /// `@ 1 year 2 mons -3 days 4 hours 5 mins 6.5 secs`, `... ago`.
    PostgresVerbose,
    /// `1-2`, `3 4:05:06.5`, `+1-2 -3 +4:05:06.5`.
    SqlStandard,
    /// `P1Y2M-3DT4H5M6.5S`.
    Iso8601,
}

impl IntervalStyle {
    pub fn parse(s: &str) -> Option<IntervalStyle> {
        Some(match s.trim().to_ascii_lowercase().as_str() {
            "postgres" => IntervalStyle::Postgres,
            "postgres_verbose" => IntervalStyle::PostgresVerbose,
            "sql_standard" => IntervalStyle::SqlStandard,
            "iso_8601" => IntervalStyle::Iso8601,
            _ => return None,
        })
    }
}

/// An interval's fields as PostgreSQL writes them: months split into years
/// and months, time into hours, minutes, seconds and microseconds, each
/// with the sign of its part (also what `to_char` fills its template from).
pub struct Fields {
    pub year: i64,
    pub mon: i64,
    pub mday: i64,
    pub hour: i64,
    pub min: i64,
    pub sec: i64,
    pub fsec: i64,
}

impl Interval {
    pub fn fields(&self) -> Fields {
        let t = self.micros;
        Fields {
            year: i64::from(self.months / 12),
            mon: i64::from(self.months % 12),
            mday: i64::from(self.days),
            hour: t / 3_600_000_000,
            min: t / 60_000_000 % 60,
            sec: t / US % 60,
            fsec: t % US,
        }
    }

    /// The text in `style`.
    pub fn to_text(&self, style: IntervalStyle) -> String {
        match style {
            IntervalStyle::Postgres => self.postgres_text(),
            IntervalStyle::PostgresVerbose => self.fields().verbose(),
            IntervalStyle::SqlStandard => self.fields().sql_standard(),
            IntervalStyle::Iso8601 => self.fields().iso8601(),
        }
    }
}

/// Seconds and a fraction without trailing zeros (`5`, `05` when `pad`,
/// `5.25`); the signs are the caller's.
fn seconds(sec: i64, fsec: i64, pad: bool) -> String {
    let mut s = if pad {
        format!("{:02}", sec.abs())
    } else {
        sec.abs().to_string()
    };
    if fsec != 0 {
        let frac = format!("{:06}", fsec.abs());
        s.push('.');
        s.push_str(frac.trim_end_matches('0'));
    }
    s
}

impl Fields {
    fn verbose(&self) -> String {
        let mut out = String::from("@");
        let mut is_zero = true;
        let mut is_before = false;
        let mut part = |out: &mut String, mut v: i64, unit: &str| {
            if v == 0 {
                return;
            }
            if is_zero {
                is_before = v < 0;
                v = v.abs();
            } else if is_before {
                v = -v;
            }
            let plural = if v == 1 { "" } else { "s" };
            out.push_str(&format!(" {v} {unit}{plural}"));
            is_zero = false;
        };
        part(&mut out, self.year, "year");
        part(&mut out, self.mon, "mon");
        part(&mut out, self.mday, "day");
        part(&mut out, self.hour, "hour");
        part(&mut out, self.min, "min");
        if self.sec != 0 || self.fsec != 0 {
            out.push(' ');
            if self.sec < 0 || (self.sec == 0 && self.fsec < 0) {
                if is_zero {
                    is_before = true;
                } else if !is_before {
                    out.push('-');
                }
            } else if is_before {
                out.push('-');
            }
            out.push_str(&seconds(self.sec, self.fsec, false));
            let plural = if self.sec.abs() != 1 || self.fsec != 0 {
                "s"
            } else {
                ""
            };
            out.push_str(&format!(" sec{plural}"));
            is_zero = false;
        }
        if is_zero {
            out.push_str(" 0");
        }
        if is_before {
            out.push_str(" ago");
        }
        out
    }

    fn sql_standard(&self) -> String {
        let Fields {
            mut year,
            mut mon,
            mut mday,
            mut hour,
            mut min,
            mut sec,
            mut fsec,
        } = *self;
        let all = [year, mon, mday, hour, min, sec, fsec];
        let has_negative = all.iter().any(|v| *v < 0);
        let has_positive = all.iter().any(|v| *v > 0);
        let has_year_month = year != 0 || mon != 0;
        let has_day_time = mday != 0 || hour != 0 || min != 0 || sec != 0 || fsec != 0;
        let standard = !(has_negative && has_positive || has_year_month && has_day_time);
        let mut out = String::new();
        if has_negative && standard {
            out.push('-');
            for v in [
                &mut year, &mut mon, &mut mday, &mut hour, &mut min, &mut sec, &mut fsec,
            ] {
                *v = -*v;
            }
        }
        if !has_negative && !has_positive {
            out.push('0');
        } else if !standard {
            let ys = if year < 0 || mon < 0 { '-' } else { '+' };
            let ds = if mday < 0 { '-' } else { '+' };
            let ss = if hour < 0 || min < 0 || sec < 0 || fsec < 0 {
                '-'
            } else {
                '+'
            };
            out.push_str(&format!(
                "{ys}{}-{} {ds}{} {ss}{}:{:02}:{}",
                year.abs(),
                mon.abs(),
                mday.abs(),
                hour.abs(),
                min.abs(),
                seconds(sec, fsec, true)
            ));
        } else if has_year_month {
            out.push_str(&format!("{year}-{mon}"));
        } else if mday != 0 {
            out.push_str(&format!(
                "{mday} {hour}:{min:02}:{}",
                seconds(sec, fsec, true)
            ));
        } else {
            out.push_str(&format!("{hour}:{min:02}:{}", seconds(sec, fsec, true)));
        }
        out
    }

    fn iso8601(&self) -> String {
        let f = self;
        if [f.year, f.mon, f.mday, f.hour, f.min, f.sec, f.fsec]
            .iter()
            .all(|v| *v == 0)
        {
            return "PT0S".into();
        }
        let mut out = String::from("P");
        let part = |out: &mut String, v: i64, unit: char| {
            if v != 0 {
                out.push_str(&format!("{v}{unit}"));
            }
        };
        part(&mut out, f.year, 'Y');
        part(&mut out, f.mon, 'M');
        part(&mut out, f.mday, 'D');
        if f.hour != 0 || f.min != 0 || f.sec != 0 || f.fsec != 0 {
            out.push('T');
        }
        part(&mut out, f.hour, 'H');
        part(&mut out, f.min, 'M');
        if f.sec != 0 || f.fsec != 0 {
            if f.sec < 0 || f.fsec < 0 {
                out.push('-');
            }
            out.push_str(&seconds(f.sec, f.fsec, false));
            out.push('S');
        }
        out
    }
}

impl std::fmt::Display for Interval {
    /// The session's `IntervalStyle` ([`super::zone::Zone::interval_style`]).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let style = super::zone::with_current(|z| z.interval_style);
        f.write_str(&self.to_text(style))
    }
}

impl Interval {
    /// PostgreSQL's default `IntervalStyle` (`postgres`): `1 year 2 mons
    /// -3 days +04:05:06.5`; a field after a negative one carries its sign.
    fn postgres_text(&self) -> String {
        let mut out = String::new();
        let (years, mons) = (self.months / 12, self.months % 12);
        let mut before_negative = false;
        let mut field = |out: &mut String, v: i32, unit: &str| {
            if v == 0 {
                return;
            }
            if !out.is_empty() {
                out.push(' ');
            }
            let sign = if v < 0 {
                "-"
            } else if before_negative {
                "+"
            } else {
                ""
            };
            let plural = if v != 1 { "s" } else { "" };
            out.push_str(&format!("{sign}{} {unit}{plural}", v.unsigned_abs()));
            before_negative = v < 0;
        };
        field(&mut out, years, "year");
        field(&mut out, mons, "mon");
        field(&mut out, self.days, "day");
        if self.micros != 0 || out.is_empty() {
            if !out.is_empty() {
                out.push(' ');
            }
            if self.micros < 0 {
                out.push('-');
            } else if before_negative {
                out.push('+');
            }
            push_clock(&mut out, self.micros.unsigned_abs());
        }
        out
    }
}

/// Parses interval input: `1 year 2 mons 3 days 04:05:06.5`, `-1 day`,
/// `3 hours ago`, `@ 1 minute`, `1.5 days`, `P1Y2M3DT4H5M6S`
/// ([`super::interval_input`]); `None` when it is not an interval.
pub fn parse_interval(s: &str) -> Option<Interval> {
    super::interval_input::parse_interval_text(s).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn show(s: &str) -> String {
        parse_interval(s).unwrap().to_string()
    }

    #[test]
    fn postgres_style_output() {
        assert_eq!(
            show("1 year 2 months 3 days 4 hours 5 minutes 6.5 seconds"),
            "1 year 2 mons 3 days 04:05:06.5"
        );
        assert_eq!(show("-1 day"), "-1 days");
        assert_eq!(show("-1 mon"), "-1 mons");
        assert_eq!(show("1 mon"), "1 mon");
        assert_eq!(show("0"), "00:00:00");
        assert_eq!(show("1 day -1 hour"), "1 day -01:00:00");
        assert_eq!(show("-1 day 1 hour"), "-1 days +01:00:00");
        assert_eq!(show("3 hours ago"), "-03:00:00");
        assert_eq!(show("1.5 days"), "1 day 12:00:00");
        assert_eq!(show("1.5 months"), "1 mon 15 days");
        assert_eq!(show("P1Y2M3DT4H5M6S"), "1 year 2 mons 3 days 04:05:06");
        assert_eq!(show("@ 2 weeks"), "14 days");
        assert_eq!(show("100:00:00"), "100:00:00");
        assert!(parse_interval("1 fortnight").is_none());
        assert!(parse_interval("").is_none());
    }

    #[test]
    fn compares_by_span() {
        assert_eq!(parse_interval("1 mon"), parse_interval("30 days"));
        assert!(parse_interval("1 day") < parse_interval("25 hours"));
    }
}
