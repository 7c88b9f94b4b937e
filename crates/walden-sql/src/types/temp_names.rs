//! Engine names of temporary tables: `pg_temp_N.name`, N the creating
//! session's id (see `session/temp_tables.rs`). The catalogs show such a
//! relation as `name` in schema `pg_temp_N`, as PostgreSQL does.

/// The prefix of every temporary relation's engine name.
pub const PREFIX: &str = "pg_temp_";

/// The engine name of session `spid`'s temporary relation `name` (folded).
pub fn internal(spid: u32, name: &str) -> String {
    format!("{PREFIX}{spid}.{name}")
}

/// The owning session and the user-visible name of a temporary relation's
/// engine name; `None` for a permanent one.
pub fn split_temp(name: &str) -> Option<(u32, &str)> {
    let rest = name.strip_prefix(PREFIX)?;
    let (n, rel) = rest.split_once('.')?;
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((n.parse().ok()?, rel))
}

/// The name a catalog shows for an engine relation name.
pub fn shown(name: &str) -> &str {
    split_temp(name).map_or(name, |(_, rel)| rel)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        assert_eq!(split_temp(&internal(12, "t")), Some((12, "t")));
        assert_eq!(split_temp(&internal(3, "#a.b")), Some((3, "#a.b")));
        assert_eq!(split_temp("pg_temp_x.t"), None);
        assert_eq!(split_temp("t"), None);
        assert_eq!(shown("pg_temp_4.t_pkey"), "t_pkey");
    }
}
