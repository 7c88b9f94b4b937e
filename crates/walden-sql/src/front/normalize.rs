//! Lifting literals of keyed writes into `$n` parameters, so each shape is parsed once.

/// At most this many literals are lifted: the wire numbers parameters in 16 bits.
const MAX_LIFTED: usize = u16::MAX as usize;

/// The fast path for keyed writes sent as plain text: `INSERT`, `UPDATE` and
/// `DELETE` statements whose literals differ from call to call (pgbench's
/// simple protocol, ORMs without prepared statements) are turned into a
/// template with `$n` parameters, so each statement shape is parsed once per
/// session. Returns `None` when the statement is not eligible.
///
/// This runs for every statement sent as text, so it works on bytes in two
/// passes (one for the exclusions, one copying runs of text between the
/// literals) rather than building lower-cased copies and searching them.
pub fn normalize_literals(sql: &str) -> Option<(String, Vec<walden_engine::Value>)> {
    use walden_engine::Value;
    let head = sql.trim_start().as_bytes().get(..6)?;
    let is_select = head.eq_ignore_ascii_case(b"SELECT");
    if !(is_select
        || head.eq_ignore_ascii_case(b"INSERT")
        || head.eq_ignore_ascii_case(b"UPDATE")
        || head.eq_ignore_ascii_case(b"DELETE"))
    {
        return None;
    }
    let b = sql.as_bytes();
    let (start, end) = lift_start(b, is_select)?;
    let mut out = String::with_capacity(sql.len() + 8);
    let mut params = Vec::new();
    // Bytes from `copied` up to `i` go to the template as they are.
    let mut copied = 0;
    let mut i = start;
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b'"';
    // A literal that starts before `end` is lifted whole.
    while i < end {
        let c = b[i];
        if !LITERAL_STARTS[c as usize] {
            i += 1;
            continue;
        }
        let prev = if i > 0 { b[i - 1] } else { b' ' };
        if c == b'\'' {
            // A string literal; a prefixed one (N'..', E'..') is kept as is.
            let mut j = i + 1;
            let mut doubled = false;
            loop {
                if j >= b.len() {
                    return None;
                }
                if b[j] == b'\'' {
                    if j + 1 < b.len() && b[j + 1] == b'\'' {
                        doubled = true;
                        j += 2;
                        continue;
                    }
                    break;
                }
                j += 1;
            }
            // An array literal stays in the text: its type comes from what
            // it stands beside (`xs = '{1,2}'`, `xs || '{3}'`), which a
            // text parameter would not take.
            if !ident(prev) && b.get(i + 1) != Some(&b'{') && !after_type_name(b, i) {
                let body = &sql[i + 1..j];
                let text = if doubled {
                    body.replace("''", "'")
                } else {
                    body.to_string()
                };
                out.push_str(&sql[copied..i]);
                params.push(Value::text(text));
                push_param(&mut out, params.len());
                copied = j + 1;
            }
            i = j + 1;
            continue;
        }
        if c == b'"' {
            let j = b[i + 1..]
                .iter()
                .position(|&x| x == b'"')
                .map(|k| i + 1 + k)?;
            i = j + 1;
            continue;
        }
        if c.is_ascii_digit() && !ident(prev) && prev != b'.' {
            let mut j = i;
            while j < b.len() && (b[j].is_ascii_digit() || b[j] == b'.') {
                j += 1;
            }
            if j < b.len() && (b[j] == b'e' || b[j] == b'E') {
                return None;
            }
            if j < b.len() && ident(b[j]) {
                return None;
            }
            let n = &sql[i..j];
            let v = if let Ok(x) = n.parse::<i64>() {
                Value::Int(x)
            } else {
                // Exactly as written, or left to the full parse (which
                // refuses it): `str::parse` would round past 28 digits.
                Value::Decimal(walden_engine::types::parse_numeric(n).ok()??)
            };
            out.push_str(&sql[copied..i]);
            params.push(v);
            push_param(&mut out, params.len());
            copied = j;
            i = j;
            continue;
        }
        i += 1;
    }
    // The template's `$n` must stay within the wire's 65,535 parameters; a
    // statement with more literals (a bulk multi-row INSERT) is parsed as sent.
    if params.is_empty() || params.len() > MAX_LIFTED {
        return None;
    }
    out.push_str(&sql[copied..]);
    Some((out, params))
}

/// Whether the string literal at `i` follows a word that is not one of the
/// keywords a value comes after: a type name (`date '2024-01-01'`,
/// `interval '1 day'`) makes it a typed constant, which stays in the text.
fn after_type_name(b: &[u8], i: usize) -> bool {
    let mut end = i;
    while end > 0 && b[end - 1].is_ascii_whitespace() {
        end -= 1;
    }
    let mut start = end;
    while start > 0 && (b[start - 1].is_ascii_alphanumeric() || b[start - 1] == b'_') {
        start -= 1;
    }
    let word = &b[start..end];
    !word.is_empty() && !VALUE_KEYWORDS.iter().any(|k| k.eq_ignore_ascii_case(word))
}

/// Keywords a lifted value may follow.
const VALUE_KEYWORDS: &[&[u8]] = &[
    b"and", b"or", b"not", b"then", b"else", b"when", b"select", b"like", b"ilike", b"between",
    b"is", b"in", b"set", b"values", b"case", b"escape",
];

/// The exclusions of [`normalize_literals`]: `None` when the statement is
/// not eligible, else where lifting starts (a SELECT's first ` where `) and
/// where it ends (a SELECT's first clause after its WHERE: `GROUP BY`,
/// `HAVING`, `ORDER BY`, `LIMIT`, `OFFSET`, `FETCH`, whose literals are
/// its shape, or the end).
pub(super) fn lift_start(b: &[u8], is_select: bool) -> Option<(usize, usize)> {
    // `pat` (lower case) at `i`, ignoring ASCII case.
    let at = |i: usize, pat: &[u8]| {
        b.len() - i >= pat.len()
            && pat
                .iter()
                .zip(&b[i..])
                .all(|(p, c)| c.to_ascii_lowercase() == *p)
    };
    // Parameters already, comments, and clauses whose literals are part of
    // the statement's shape (row counts, positional ORDER BY) are left alone.
    // A keyed SELECT (`SELECT abalance FROM t WHERE aid = 42`): only the
    // WHERE clause's literals are lifted, so the select list (whose literals
    // name and type result columns) and the clauses after WHERE (row
    // counts, positions) stay as written. Anything with a subquery or set
    // operation, or such a clause before WHERE, is parsed as it is; so is a
    // write with one of those clauses.
    let mut selects = 0;
    let mut where_at = None;
    let mut cut = None;
    // A clause that ends a SELECT's WHERE (where lifting stops), at `i`.
    let mut clause = |i: usize, where_at: Option<usize>| -> Option<()> {
        if !is_select || where_at.is_none() {
            return None;
        }
        cut.get_or_insert(i);
        Some(())
    };
    // Most bytes start none of the patterns; skipping them through a table
    // keeps the dispatch below off the common path, and the byte after a
    // space picks the one or two patterns worth comparing.
    let starts = if is_select {
        &PATTERN_STARTS_SELECT
    } else {
        &PATTERN_STARTS
    };
    for i in 0..b.len() {
        if !starts[b[i] as usize] {
            continue;
        }
        let next = b.get(i + 1).map_or(0, |c| c.to_ascii_lowercase());
        match b[i] {
            b'$' => return None,
            b'-' if next == b'-' => return None,
            b'/' if next == b'*' => return None,
            b' ' => match next {
                b't' if at(i, b" top") => return None,
                _ if !is_select => {}
                b'u' if at(i, b" union") => return None,
                b'i' if at(i, b" intersect") || at(i, b" into ") => return None,
                b'e' if at(i, b" except") => return None,
                b'l' if at(i, b" limit") => clause(i, where_at)?,
                b'o' if at(i, b" offset") => clause(i, where_at)?,
                b'f' if at(i, b" fetch") => clause(i, where_at)?,
                b'h' if at(i, b" having") => clause(i, where_at)?,
                b'w' if where_at.is_none() && at(i, b" where ") => where_at = Some(i),
                _ => {}
            },
            b'r' | b'R' if next == b'e' && at(i, b"returning") => return None,
            b'o' | b'O' if next == b'r' && at(i, b"order by") => clause(i, where_at)?,
            b'g' | b'G' if next == b'r' && at(i, b"group by") => clause(i, where_at)?,
            b's' | b'S' if is_select && next == b'e' && at(i, b"select") => selects += 1,
            _ => {}
        }
    }
    if !is_select {
        return Some((0, b.len()));
    }
    let w = where_at?;
    if selects > 1 || b[..w].contains(&b'\'') {
        return None;
    }
    Some((w, cut.unwrap_or(b.len())))
}

/// Bytes that may start an excluded pattern (see `normalize_literals`).
pub(super) static PATTERN_STARTS: [bool; 256] = byte_set(b"$-/ rRoOgG");
pub(super) static PATTERN_STARTS_SELECT: [bool; 256] = byte_set(b"$-/ rRoOgGsS");
/// Bytes that may start a literal or a quoted name.
pub(super) static LITERAL_STARTS: [bool; 256] = byte_set(b"'\"0123456789");

pub(super) const fn byte_set(bytes: &[u8]) -> [bool; 256] {
    let mut set = [false; 256];
    let mut i = 0;
    while i < bytes.len() {
        set[bytes[i] as usize] = true;
        i += 1;
    }
    set
}

/// Appends `$n`.
pub(super) fn push_param(out: &mut String, n: usize) {
    let mut digits = [0u8; 20];
    let mut k = digits.len();
    let mut n = n;
    loop {
        k -= 1;
        digits[k] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.push('$');
    out.extend(digits[k..].iter().map(|&d| d as char));
}

#[cfg(test)]
mod tests {
    use super::*;

    // The straightforward version normalize_literals replaced (it lower-cased
    // and searched the text, and copied it a character at a time); the two
    // must agree on every input.
    /// The fast path for keyed writes sent as plain text: `INSERT`, `UPDATE` and
    /// `DELETE` statements whose literals differ from call to call (pgbench's
    /// simple protocol, ORMs without prepared statements) are turned into a
    /// template with `$n` parameters, so each statement shape is parsed once per
    /// session. Returns `None` when the statement is not eligible.
    fn normalize_literals_reference(sql: &str) -> Option<(String, Vec<walden_engine::Value>)> {
        use walden_engine::Value;
        let trimmed = sql.trim_start();
        let head: String = trimmed
            .chars()
            .take(6)
            .collect::<String>()
            .to_ascii_uppercase();
        let is_select = head.starts_with("SELECT");
        if !(is_select
            || head.starts_with("INSERT")
            || head.starts_with("UPDATE")
            || head.starts_with("DELETE"))
        {
            return None;
        }
        if sql.contains('$') || sql.contains("--") || sql.contains("/*") {
            return None;
        }
        let lower = sql.to_ascii_lowercase();
        if lower.contains("returning") || lower.contains(" top") {
            return None;
        }
        let clauses = [
            "order by", "group by", " limit", " offset", " fetch", " having",
        ];
        let cut = clauses.iter().filter_map(|k| lower.find(k)).min();
        if !is_select && (lower.contains("order by") || lower.contains("group by")) {
            return None;
        }
        // A keyed SELECT (`SELECT abalance FROM t WHERE aid = 42`): only the
        // WHERE clause's literals are lifted, so the select list (whose literals
        // name and type result columns) stays as written. Anything with a
        // subquery, set operation or row-count clause is parsed as it is.
        let mut start = 0;
        if is_select {
            if lower.matches("select").count() > 1
                || [" union", " intersect", " except", " into "]
                    .iter()
                    .any(|k| lower.contains(k))
            {
                return None;
            }
            let w = lower.find(" where ")?;
            if sql[..w].contains('\'') || cut.is_some_and(|c| c < w) {
                return None;
            }
            start = w;
        }
        let end = if is_select {
            cut.unwrap_or(sql.len())
        } else {
            sql.len()
        };
        let b = sql.as_bytes();
        let mut out = String::with_capacity(sql.len());
        out.push_str(&sql[..start]);
        let mut params = Vec::new();
        let mut i = start;
        let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b'"';
        while i < end {
            let c = b[i];
            let prev = if i > 0 { b[i - 1] } else { b' ' };
            if c == b'\'' {
                // A string literal; a prefixed one (N'..', E'..') is kept as is.
                let mut j = i + 1;
                let mut text = String::new();
                loop {
                    if j >= b.len() {
                        return None;
                    }
                    if b[j] == b'\'' {
                        if j + 1 < b.len() && b[j + 1] == b'\'' {
                            text.push('\'');
                            j += 2;
                            continue;
                        }
                        break;
                    }
                    let ch = sql[j..].chars().next()?;
                    text.push(ch);
                    j += ch.len_utf8();
                }
                if ident(prev) || text.starts_with('{') || super::after_type_name(b, i) {
                    out.push_str(&sql[i..=j]);
                } else {
                    params.push(Value::text(text));
                    out.push_str(&format!("${}", params.len()));
                }
                i = j + 1;
                continue;
            }
            if c == b'"' {
                let j = sql[i + 1..].find('"').map(|k| i + 1 + k)?;
                out.push_str(&sql[i..=j]);
                i = j + 1;
                continue;
            }
            if c.is_ascii_digit() && !ident(prev) && prev != b'.' {
                let mut j = i;
                while j < b.len() && (b[j].is_ascii_digit() || b[j] == b'.') {
                    j += 1;
                }
                if j < b.len() && (b[j] == b'e' || b[j] == b'E') {
                    return None;
                }
                if j < b.len() && ident(b[j]) {
                    return None;
                }
                let n = &sql[i..j];
                let v = if let Ok(x) = n.parse::<i64>() {
                    Value::Int(x)
                } else {
                    // Exactly as written, or left to the full parse (which
                    // refuses it): `str::parse` would round past 28 digits.
                    Value::Decimal(walden_engine::types::parse_numeric(n).ok()??)
                };
                params.push(v);
                out.push_str(&format!("${}", params.len()));
                i = j;
                continue;
            }
            let ch = sql[i..].chars().next()?;
            out.push(ch);
            i += ch.len_utf8();
        }
        if params.is_empty() || params.len() > MAX_LIFTED {
            return None;
        }
        out.push_str(&sql[i.min(sql.len())..]);
        Some((out, params))
    }

    #[test]
    fn literals_become_parameters_for_keyed_writes() {
        let (t, p) = normalize_literals(
            "UPDATE pgbench_accounts SET abalance = abalance + -17 WHERE aid = 42;",
        )
        .unwrap();
        assert_eq!(
            t,
            "UPDATE pgbench_accounts SET abalance = abalance + -$1 WHERE aid = $2;"
        );
        assert_eq!(
            p,
            vec![walden_engine::Value::Int(17), walden_engine::Value::Int(42)]
        );
        let (t, p) = normalize_literals("INSERT INTO t2 (a, b) VALUES ('it''s', 1.5)").unwrap();
        assert_eq!(t, "INSERT INTO t2 (a, b) VALUES ($1, $2)");
        assert_eq!(p[0], walden_engine::Value::text("it's"));
        assert!(normalize_literals("SELECT 1").is_none());
        let (t, p) =
            normalize_literals("SELECT abalance, 7 FROM pgbench_accounts WHERE aid = 42").unwrap();
        assert_eq!(t, "SELECT abalance, 7 FROM pgbench_accounts WHERE aid = $1");
        assert_eq!(p, vec![walden_engine::Value::Int(42)]);
        assert!(normalize_literals("SELECT 'x' FROM t WHERE a = 1").is_none());
        // The clauses after WHERE stay as written (row counts, positions).
        let (t, p) = normalize_literals(
            "SELECT no_o_id FROM new_orders WHERE no_d_id = 3 AND no_w_id = 1 ORDER BY no_o_id ASC LIMIT 1 FOR UPDATE",
        )
        .unwrap();
        assert_eq!(
            t,
            "SELECT no_o_id FROM new_orders WHERE no_d_id = $1 AND no_w_id = $2 ORDER BY no_o_id ASC LIMIT 1 FOR UPDATE"
        );
        assert_eq!(p.len(), 2);
        let (t, _) = normalize_literals("SELECT a FROM t WHERE a = 1 ORDER BY 1 LIMIT 5").unwrap();
        assert_eq!(t, "SELECT a FROM t WHERE a = $1 ORDER BY 1 LIMIT 5");
        let (t, _) = normalize_literals("SELECT a FROM t WHERE a = 'x limit 2' AND b = 3").unwrap();
        assert_eq!(t, "SELECT a FROM t WHERE a = $1 AND b = 3");
        assert!(normalize_literals("SELECT a FROM t ORDER BY a LIMIT 5").is_none());
        assert!(normalize_literals("SELECT a FROM t GROUP BY a HAVING a > 1 WHERE").is_none());
        assert!(normalize_literals("DELETE FROM t WHERE a = 1 ORDER BY a").is_none());
        assert!(normalize_literals("SELECT a FROM t WHERE a IN (SELECT 1)").is_none());
        assert!(normalize_literals("DELETE TOP (3) FROM t").is_none());
        assert!(normalize_literals("INSERT INTO t VALUES (N'x', 1e5)").is_none());
        // More literals than the wire has parameters: left to the full parse.
        let rows = vec!["(1, 'a')"; 40_000].join(",");
        assert!(normalize_literals(&format!("INSERT INTO t VALUES {rows}")).is_none());
    }

    #[test]
    fn literal_lifting_matches_the_reference() {
        let seeds = [
            "UPDATE pgbench_accounts SET abalance = abalance + -17 WHERE aid = 42;",
            "SELECT abalance FROM pgbench_accounts WHERE aid = 42",
            "SELECT abalance, 7 FROM pgbench_accounts WHERE aid = 42",
            "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (3, 1, 5, 10, CURRENT_TIMESTAMP)",
            "INSERT INTO t2 (a, b) VALUES ('it''s', 1.5)",
            "insert into t values (N'x', E'y', 'z''''', '')",
            "DELETE FROM t WHERE a = 1 RETURNING a",
            "DELETE TOP (3) FROM t",
            "SELECT a FROM t WHERE a = 1 LIMIT 5",
            "SELECT a FROM t WHERE a IN (SELECT 1)",
            "select \"x where\" from t where b = '1' and c = 2.25",
            "UPDATE t SET a = 'é''ü' WHERE k = 'ß' AND n = 12",
            "UPDATE t SET a = 1e5 WHERE b = 2",
            "UPDATE t SET a = 12abc WHERE b = 2",
            "UPDATE t SET a = x.1 WHERE b = 3.4.5",
            "SELECT a FROM t  WHERE a = 'unterminated",
            "  \n\tSELECT a FROM t WHERE b = 3 ORDER BY 1",
            "SELECT a FROM t WHERE b = 3 GROUP BY a",
            "UPDATE \"T\" SET \"a\"\"b\" = 3 WHERE \"k = 4",
            "SELECT a FROM t WHERE b = $1",
            "UPDATE t SET a = 1 -- c",
            "UPDATE t SET a = 1 /* c */",
            "SELECTa FROM t WHERE b = 1",
            "INSERT",
            "",
        ];
        let alphabet: [&str; 33] = [
            "'",
            "''",
            "\"",
            "1",
            "23",
            ".",
            "e",
            "x",
            "_",
            " ",
            " where ",
            " WHERE ",
            "select ",
            " top",
            "returning",
            "Order By",
            " limit",
            "é",
            "ß",
            "-",
            "/",
            "*",
            "$",
            "N",
            " Union",
            " INTO ",
            "group by",
            " having",
            " fetch",
            " offset",
            " except",
            " intersect",
            "sElEcT",
        ];
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut rnd = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        let mut inputs: Vec<String> = seeds.iter().map(|s| s.to_string()).collect();
        for _ in 0..20_000 {
            let mut t = seeds[rnd(seeds.len())].to_string();
            for _ in 0..1 + rnd(4) {
                // A random piece at a random character boundary.
                let bounds: Vec<usize> =
                    t.char_indices().map(|(i, _)| i).chain([t.len()]).collect();
                let at = bounds[rnd(bounds.len())];
                t.insert_str(at, alphabet[rnd(alphabet.len())]);
            }
            inputs.push(t);
        }
        let mut lifted = 0;
        for sql in &inputs {
            let got = normalize_literals(sql);
            lifted += got.is_some() as usize;
            assert_eq!(got, normalize_literals_reference(sql), "{sql:?}");
        }
        // Both outcomes are well represented.
        assert!(lifted > 2_000 && lifted < inputs.len() - 2_000, "{lifted}");
    }
}
