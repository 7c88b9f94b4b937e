//! Which run-time parameters a session may SET, and with which values.
//!
//! Walden acts on the parameters `settings.rs` handles by name. Of
//! PostgreSQL's other parameters it accepts only the values that describe
//! what Walden does anyway (`standard_conforming_strings = on`), or the
//! output settings Walden follows (`bytea_output`, `extra_float_digits`,
//! `IntervalStyle`), or
//! parameters whose every
//! value leaves results unchanged here (`check_function_bodies`: there are
//! no function bodies), and the parallel-query knobs: Walden never runs a
//! parallel plan, which is what PostgreSQL does whatever their values when
//! no worker is available. Any other value, and any parameter Walden has no
//! counterpart for (planner and memory knobs, logging), is refused with
//! 0A000 rather than stored and ignored. Names PostgreSQL does not know get
//! its 42704, except the dotted placeholder names (`myapp.user_id`)
//! PostgreSQL lets applications use for their own values.

use super::pg15::{PG_INTERNAL, PG_NOT_NOW, PG_RESTART, PG_SUPERUSER, PG_USER};
use crate::error::{ErrorKind, Result, SqlError};

/// The values a parameter Walden does not act on may take.
enum Values {
    /// Only these (lower case; the first is the default SHOW prints).
    Only(&'static [&'static str]),
    /// Any boolean: every value behaves the same in Walden.
    AnyBool(&'static str),
    /// An integer in this range.
    Int(i64, i64, &'static str),
    /// A non-negative real (a planner cost).
    Real(&'static str),
    /// A size counted in 8 kB blocks (a bare number is blocks; `kB`, `MB`,
    /// `GB` and `TB` convert), shown in the largest unit that divides it.
    Blocks(&'static str),
}

/// Parameters accepted with the values that match Walden's behaviour.
const ACCEPTED: &[(&str, Values)] = &[
    ("standard_conforming_strings", Values::Only(&["on"])),
    ("escape_string_warning", Values::AnyBool("on")),
    ("array_nulls", Values::Only(&["on"])),
    ("backslash_quote", Values::Only(&["safe_encoding"])),
    // Read by `Settings::zone`: bytea text follows it.
    ("bytea_output", Values::Only(&["hex", "escape"])),
    // Read by `Settings::zone`: interval text follows it.
    (
        "intervalstyle",
        Values::Only(&["postgres", "postgres_verbose", "sql_standard", "iso_8601"]),
    ),
    // Read by `Settings::zone`: float text follows it.
    ("extra_float_digits", Values::Int(-15, 3, "1")),
    ("quote_all_identifiers", Values::Only(&["off"])),
    ("transform_null_equals", Values::Only(&["off"])),
    ("check_function_bodies", Values::AnyBool("on")),
    ("xmloption", Values::Only(&["content", "document"])),
    ("xmlbinary", Values::Only(&["base64", "hex"])),
    // No row-level security policies exist, so both values read the same.
    ("row_security", Values::AnyBool("on")),
    ("default_tablespace", Values::Only(&["", "pg_default"])),
    ("temp_tablespaces", Values::Only(&[""])),
    ("default_table_access_method", Values::Only(&["heap"])),
    ("synchronize_seqscans", Values::AnyBool("on")),
    ("jit", Values::Only(&["off"])),
    // Upper bounds on parallel workers: Walden uses none.
    ("max_parallel_workers_per_gather", Values::Int(0, 1024, "2")),
    ("max_parallel_workers", Values::Int(0, 1024, "8")),
    (
        "max_parallel_maintenance_workers",
        Values::Int(0, 1024, "2"),
    ),
    // What steers the planner towards parallel plans. Walden never runs a
    // plan in parallel (as PostgreSQL with max_parallel_workers_per_gather
    // = 0), so every value leaves results and plans as they are.
    ("parallel_setup_cost", Values::Real("1000")),
    ("parallel_tuple_cost", Values::Real("0.1")),
    ("min_parallel_table_scan_size", Values::Blocks("8MB")),
    ("min_parallel_index_scan_size", Values::Blocks("512kB")),
    ("parallel_leader_participation", Values::AnyBool("on")),
    (
        "force_parallel_mode",
        Values::Only(&["off", "on", "regress"]),
    ),
    ("password_encryption", Values::Only(&["scram-sha-256"])),
    ("timezone_abbreviations", Values::Only(&["default"])),
    ("session_replication_role", Values::Only(&["origin"])),
    // T-SQL's SET options. Row counts travel in the CommandComplete tag,
    // which the protocol always sends, so NOCOUNT changes nothing a client
    // reads; the others are accepted at the value that is PostgreSQL's (and
    // so Walden's) behaviour: an error aborts the transaction, NULL
    // comparisons are unknown, double quotes delimit identifiers.
    ("nocount", Values::AnyBool("off")),
    ("ansi_nulls", Values::Only(&["on"])),
    ("quoted_identifier", Values::Only(&["on"])),
    ("ansi_warnings", Values::Only(&["on"])),
    ("ansi_padding", Values::Only(&["on"])),
    ("concat_null_yields_null", Values::Only(&["on"])),
    ("arithabort", Values::Only(&["on"])),
    (
        "lc_messages",
        Values::Only(&[
            "c",
            "",
            "posix",
            "en_us.utf-8",
            "en_us.utf8",
            "c.utf-8",
            "c.utf8",
        ]),
    ),
    (
        "lc_monetary",
        Values::Only(&[
            "c",
            "posix",
            "en_us.utf-8",
            "en_us.utf8",
            "c.utf-8",
            "c.utf8",
        ]),
    ),
    (
        "lc_numeric",
        Values::Only(&[
            "c",
            "posix",
            "en_us.utf-8",
            "en_us.utf8",
            "c.utf-8",
            "c.utf8",
        ]),
    ),
    (
        "lc_time",
        Values::Only(&[
            "c",
            "posix",
            "en_us.utf-8",
            "en_us.utf8",
            "c.utf-8",
            "c.utf8",
        ]),
    ),
];

/// The levels `client_min_messages` takes, least severe first.
pub(super) const MESSAGE_LEVELS: &[&str] = &[
    "debug5", "debug4", "debug3", "debug2", "debug1", "log", "notice", "warning", "error",
];

/// Checks a parameter Walden does not act on; returns the value as SHOW
/// prints it.
pub(super) fn check_other(name: &str, value: &str) -> Result<String> {
    let lower = value.to_ascii_lowercase();
    if let Some((_, values)) = ACCEPTED.iter().find(|(n, _)| *n == name) {
        let ok = match values {
            Values::Only(vs) => vs.contains(&lower.as_str()),
            Values::AnyBool(_) => super::parse_bool(&lower).is_some(),
            Values::Int(lo, hi, _) => lower.parse::<i64>().is_ok_and(|n| (*lo..=*hi).contains(&n)),
            Values::Real(_) => lower
                .trim()
                .parse::<f64>()
                .is_ok_and(|x| x.is_finite() && x >= 0.0),
            Values::Blocks(_) => blocks(&lower).is_some(),
        };
        if ok {
            return Ok(match values {
                Values::Real(_) => show_real(lower.trim().parse::<f64>().unwrap_or(0.0)),
                Values::Blocks(_) => show_blocks(blocks(&lower).unwrap_or(0)),
                Values::AnyBool(_) => {
                    let on = super::parse_bool(&lower) == Some(true);
                    if on { "on" } else { "off" }.into()
                }
                _ => value.to_string(),
            });
        }
        if matches!(values, Values::Real(_) | Values::Blocks(_)) {
            // Outside PostgreSQL's own range or form: invalid there too.
            return Err(SqlError::new(
                ErrorKind::InvalidParameter,
                format!("invalid value for parameter \"{name}\": \"{value}\""),
            ));
        }
        return Err(SqlError::unsupported(format!(
            "{name} = '{value}' (Walden accepts only {})",
            match values {
                Values::Only(vs) => vs
                    .iter()
                    .map(|v| format!("'{v}'"))
                    .collect::<Vec<_>>()
                    .join(", "),
                Values::AnyBool(_) => "on or off".into(),
                Values::Int(lo, hi, _) => format!("{lo} to {hi}"),
                Values::Real(_) => "a number of 0 or more".into(),
                Values::Blocks(_) => "a size such as 8MB".into(),
            }
        )));
    }
    match known(name) {
        Known::Settable => Err(SqlError::unsupported(format!(
            "parameter \"{name}\" (Walden has no counterpart for it)"
        ))),
        Known::Fixed(why) => Err(SqlError::new(
            ErrorKind::CantChangeParameter,
            format!("parameter \"{name}\" cannot be changed{why}"),
        )),
        Known::Custom => Ok(value.to_string()),
        Known::No => Err(unrecognized(name)),
    }
}

/// The value SHOW prints for an accepted parameter nobody set.
pub(super) fn default_of(name: &str) -> Option<&'static str> {
    match name {
        "client_min_messages" => return Some("notice"),
        "search_path" => return Some("\"$user\", public"),
        _ => {}
    }
    ACCEPTED
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| match v {
            Values::Only(vs) => vs[0],
            Values::AnyBool(d) | Values::Int(_, _, d) | Values::Real(d) | Values::Blocks(d) => d,
        })
}

/// A size setting's value in 8 kB blocks (rounded to the nearest block,
/// as PostgreSQL rounds `100kB`), if it is one.
fn blocks(v: &str) -> Option<i64> {
    let v = v.trim();
    let split = v
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(v.len());
    let (n, unit) = (v[..split].parse::<f64>().ok()?, v[split..].trim());
    let kb = match unit {
        "" => return (n.fract() == 0.0 && n <= 715_827_882.0).then_some(n as i64),
        "b" => n / 1024.0,
        "kb" => n,
        "mb" => n * 1024.0,
        "gb" => n * 1024.0 * 1024.0,
        "tb" => n * 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    // PostgreSQL rounds to whole blocks with rint: half to even.
    let b = (kb / 8.0).round_ties_even();
    (b <= 715_827_882.0).then_some(b as i64)
}

/// A block count as SHOW prints it: in the largest of kB, MB, GB, TB that
/// holds it whole.
fn show_blocks(blocks: i64) -> String {
    let kb = blocks * 8;
    if kb == 0 {
        return "0".into();
    }
    for (unit, size) in [("TB", 1i64 << 30), ("GB", 1 << 20), ("MB", 1 << 10)] {
        if kb % size == 0 {
            return format!("{}{unit}", kb / size);
        }
    }
    format!("{kb}kB")
}

/// A real setting as SHOW prints it: C's `%g` (six significant digits,
/// `1e+06` past them).
fn show_real(x: f64) -> String {
    if x == 0.0 {
        return "0".into();
    }
    let exp = x.abs().log10().floor() as i32;
    if !(-4..6).contains(&exp) {
        let m = format!("{x:.5e}");
        let (mant, e) = m.split_once('e').unwrap_or((&m, "0"));
        let mant = mant.trim_end_matches('0').trim_end_matches('.');
        let e: i32 = e.parse().unwrap_or(0);
        return format!("{mant}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs());
    }
    let s = format!("{:.*}", (5 - exp).max(0) as usize, x);
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

pub(crate) fn unrecognized(name: &str) -> SqlError {
    SqlError::new(
        ErrorKind::UndefinedObject,
        format!("unrecognized configuration parameter \"{name}\""),
    )
}

/// What PostgreSQL knows a name as.
pub(super) enum Known {
    Settable,
    /// Not by SET; the end of PostgreSQL's message says when.
    Fixed(&'static str),
    /// A dotted placeholder an application defines (`myapp.tenant`).
    Custom,
    No,
}

pub(super) fn known(name: &str) -> Known {
    let is = |list: &[&str]| list.iter().any(|n| n.eq_ignore_ascii_case(name));
    if is(PG_USER) || is(PG_SUPERUSER) {
        Known::Settable
    } else if is(PG_RESTART) {
        Known::Fixed(" without restarting the server")
    } else if is(PG_NOT_NOW) {
        Known::Fixed(" now")
    } else if is(PG_INTERNAL) {
        Known::Fixed("")
    } else if is_custom(name) {
        Known::Custom
    } else {
        Known::No
    }
}

/// `prefix.name`, both parts identifiers, as PostgreSQL allows for
/// placeholder variables.
fn is_custom(name: &str) -> bool {
    let mut parts = name.split('.');
    let ident = |p: &str| {
        !p.is_empty()
            && !p.starts_with(|c: char| c.is_ascii_digit())
            && p.chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '$')
    };
    matches!((parts.next(), parts.next()), (Some(a), Some(b)) if ident(a) && ident(b))
        && parts.all(ident)
}

/// Superuser-only parameters (PostgreSQL's `superuser` context).
pub(crate) fn superuser_only(name: &str) -> bool {
    PG_SUPERUSER.iter().any(|n| n.eq_ignore_ascii_case(name))
}
