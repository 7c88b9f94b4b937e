//! SQL text the catalog functions print: identifiers, defaults, index and constraint definitions.

use super::*;

/// A column default as `pg_get_expr(adbin, ...)` prints it. Identity columns
/// (`SERIAL`, `IDENTITY(1,1)`, `GENERATED ... AS IDENTITY` are one thing in
/// Walden) show as the `nextval` default of a serial column, the form
/// PostgreSQL users read most often.
pub(super) fn default_text(table: &Table, c: &ColumnDef) -> Option<String> {
    // A generated column's expression is its `pg_attrdef` row, as in
    // PostgreSQL (attgenerated tells the two apart).
    if let Some(sql) = &c.generated {
        return Some(crate::catalog::constraints::expr_def_text(sql, false));
    }
    // A serial-like identity shows as PostgreSQL's serial column; a
    // SQL-standard identity column has no default there (attidentity says).
    if c.identity.is_some_and(|i| i.generated.is_none()) {
        return Some(format!(
            "nextval({}::regclass)",
            quote_literal(&format!("{}_{}_seq", table.name(), c.name))
        ));
    }
    let (oid, _) = type_oid_and_mod(&c.data_type);
    let type_name = format_type(oid, None).unwrap_or_default();
    Some(match c.default.as_ref()? {
        DefaultExpr::Value(Value::Null) => return None,
        DefaultExpr::Value(v @ (Value::Int(_) | Value::Decimal(_) | Value::Float(_))) => {
            let s = v.to_string();
            // PostgreSQL prints a negative constant as a typed literal.
            if s.starts_with('-') {
                format!("{}::{type_name}", quote_literal(&s))
            } else {
                s
            }
        }
        DefaultExpr::Value(Value::Bool(b)) => b.to_string(),
        DefaultExpr::Value(v) => format!("{}::{type_name}", quote_literal(&v.to_string())),
        DefaultExpr::Now => "now()".into(),
        DefaultExpr::Today => "CURRENT_DATE".into(),
        DefaultExpr::NewUuid => "gen_random_uuid()".into(),
        DefaultExpr::NextVal(seq) => format!("nextval({}::regclass)", quote_literal(seq)),
        DefaultExpr::Expr(sql) => sql.clone(),
    })
}

/// `pg_get_indexdef(oid, column, pretty)`: the whole `CREATE INDEX`
/// statement for column 0, else the name of that key column.
pub fn indexdef(env: &Env<'_>, oid: i64, column: i64) -> Option<String> {
    let Some(Rel::Index(ix)) = rel_by_oid(&Seen::of(env), oid) else {
        return None;
    };
    if column > 0 {
        let i = *ix.columns.get(column as usize - 1)?;
        return Some(quote_ident(&ix.table.def.columns[i].name));
    }
    Some(ix.definition())
}

/// `pg_get_constraintdef(oid, pretty)`.
pub fn constraintdef(env: &Env<'_>, oid: i64, pretty: bool) -> Option<String> {
    if let Some(def) = crate::compat::pg_catalog::foreign_keys::constraintdef(&Seen::of(env), oid) {
        return Some(def);
    }
    if let Some((id, n)) = decode_check_oid(oid) {
        let t = Seen::of(env).tables().into_iter().find(|t| t.id() == id)?;
        return Some(crate::catalog::constraints::check_def_text(
            t.def.checks.get(n)?,
            pretty,
        ));
    }
    let (_, slot) = decode_oid(oid)?;
    if slot != SLOT_PKEY_CONSTRAINT && slot != SLOT_INDEX_CONSTRAINT {
        return None;
    }
    let ix = all_indexes(&Seen::of(env))
        .into_iter()
        .find(|ix| ix.constraint.is_some_and(|(_, c)| c == oid))?;
    Some(format!(
        "{} ({})",
        if ix.primary { "PRIMARY KEY" } else { "UNIQUE" },
        ix.column_names()
    ))
}

/// `pg_size_pretty(bytes)`, with PostgreSQL's units and rounding.
pub fn size_pretty(bytes: i64) -> String {
    const LIMIT: i64 = 10 * 1024;
    const LIMIT2: i64 = LIMIT * 2 - 1;
    let half_rounded = |x: i64| (x + if x < 0 { -1 } else { 1 }) / 2;
    if bytes.unsigned_abs() < LIMIT as u64 {
        return format!("{bytes} bytes");
    }
    // Keep one extra bit for rounding, as PostgreSQL does.
    let mut size = bytes >> 9;
    for unit in ["kB", "MB", "GB"] {
        if size.unsigned_abs() < LIMIT2 as u64 {
            return format!("{} {unit}", half_rounded(size));
        }
        size >>= 10;
    }
    format!("{} TB", half_rounded(size))
}

/// `(a * 2)` as `a * 2`: the pretty form of a deparsed expression drops the
/// parentheses around the whole of it (not those of `(a) + (b)`).
pub fn without_outer_parens(s: &str) -> &str {
    let Some(inner) = s.strip_prefix('(').and_then(|r| r.strip_suffix(')')) else {
        return s;
    };
    let (mut depth, mut quoted) = (0i32, false);
    for ch in inner.chars() {
        match ch {
            '\'' => quoted = !quoted,
            '(' if !quoted => depth += 1,
            ')' if !quoted => {
                depth -= 1;
                if depth < 0 {
                    return s;
                }
            }
            _ => {}
        }
    }
    if depth == 0 {
        inner
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idents_and_sizes_print_like_postgres() {
        assert_eq!(quote_ident("abc_1"), "abc_1");
        assert_eq!(quote_ident("Abc"), "\"Abc\"");
        assert_eq!(quote_ident("user"), "\"user\"");
        assert_eq!(
            split_qualified("public.\"T\""),
            (Some("public".into()), "T".into())
        );
        assert_eq!(size_pretty(8192), "8192 bytes");
        assert_eq!(size_pretty(10 * 1024 * 1024), "10 MB");
        assert_eq!(size_pretty(123_456), "121 kB");
        assert_eq!(size_pretty(i64::MIN), "-8388608 TB");
    }
}
