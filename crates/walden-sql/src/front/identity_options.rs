//! An identity column's option list (`AS IDENTITY (...)`) as PostgreSQL
//! takes it: options in any order, and `SEQUENCE NAME` (pg_dump writes
//! `ADD GENERATED ... AS IDENTITY (SEQUENCE NAME public.t_id_seq START
//! WITH 1 INCREMENT BY 1 NO MINVALUE NO MAXVALUE CACHE 1)`). sqlparser
//! reads them in one fixed order and has no SEQUENCE NAME, so the list is
//! rewritten into that order before parsing. The sequence name is checked
//! here, where the table and column are known: an identity column's counter
//! is always `<table>_<column>_seq`, so another name is refused (0A000).

use super::*;

/// `sql` with every identity option list in sqlparser's order; `None` when
/// it has none. A repeated option is 42601, as PostgreSQL.
pub(super) fn rewrite(sql: &str) -> Result<Option<String>> {
    if !sql.to_ascii_uppercase().contains("IDENTITY") {
        return Ok(None);
    }
    let Some(raw) = super::toks::Raw::new(sql) else {
        return Ok(None);
    };
    let (toks, solid) = (&raw.toks, &raw.solid);
    let tok = |k: usize| raw.tok(k);
    let word = |k: usize| raw.word(k);
    // (first token, last token, replacement)
    let mut cuts: Vec<(usize, usize, String)> = Vec::new();
    let mut k = 0;
    while k + 2 < solid.len() {
        if !(word(k) == "AS" && word(k + 1) == "IDENTITY" && tok(k + 2) == Some(&Token::LParen)) {
            k += 1;
            continue;
        }
        let mut o = IdentityOptions::default();
        let mut j = k + 3;
        let mut seen: Vec<&'static str> = Vec::new();
        let mut once = |what: &'static str| {
            if seen.contains(&what) {
                Err(SqlError::syntax("conflicting or redundant options"))
            } else {
                seen.push(what);
                Ok(())
            }
        };
        // A number, with its sign.
        let number = |j: &mut usize| -> Option<String> {
            let neg = tok(*j) == Some(&Token::Minus);
            if neg {
                *j += 1;
            }
            match tok(*j) {
                Some(Token::Number(n, _)) => {
                    *j += 1;
                    Some(if neg { format!("-{n}") } else { n.clone() })
                }
                _ => None,
            }
        };
        let parsed = loop {
            match word(j).as_str() {
                _ if tok(j) == Some(&Token::RParen) => break true,
                "START" => {
                    once("START")?;
                    j += 1 + (word(j + 1) == "WITH") as usize;
                    o.start = number(&mut j);
                    if o.start.is_none() {
                        break false;
                    }
                }
                "INCREMENT" => {
                    once("INCREMENT")?;
                    j += 1 + (word(j + 1) == "BY") as usize;
                    o.increment = number(&mut j);
                    if o.increment.is_none() {
                        break false;
                    }
                }
                "CACHE" => {
                    once("CACHE")?;
                    j += 1;
                    o.cache = number(&mut j);
                    if o.cache.is_none() {
                        break false;
                    }
                }
                "CYCLE" => {
                    once("CYCLE")?;
                    o.cycle = Some(true);
                    j += 1;
                }
                "MINVALUE" | "MAXVALUE" => {
                    let min = word(j) == "MINVALUE";
                    once(if min { "MINVALUE" } else { "MAXVALUE" })?;
                    j += 1;
                    let Some(n) = number(&mut j) else { break false };
                    *if min { &mut o.min } else { &mut o.max } = Some(Some(n));
                }
                "NO" => match word(j + 1).as_str() {
                    "CYCLE" => {
                        once("CYCLE")?;
                        o.cycle = Some(false);
                        j += 2;
                    }
                    "MINVALUE" => {
                        once("MINVALUE")?;
                        o.min = Some(None);
                        j += 2;
                    }
                    "MAXVALUE" => {
                        once("MAXVALUE")?;
                        o.max = Some(None);
                        j += 2;
                    }
                    _ => break false,
                },
                "SEQUENCE" if word(j + 1) == "NAME" => {
                    once("SEQUENCE NAME")?;
                    j += 2;
                    let mut name = vec![name_part(tok(j))];
                    j += 1;
                    while tok(j) == Some(&Token::Period) {
                        name.push(name_part(tok(j + 1)));
                        j += 2;
                    }
                    if name.iter().any(Option::is_none) {
                        break false;
                    }
                    o.sequence_name = name.into_iter().flatten().collect();
                }
                _ => break false,
            }
        };
        if !parsed {
            // Not a list Walden reads: sqlparser reports it as it is.
            k += 3;
            continue;
        }
        if !o.sequence_name.is_empty() {
            check_sequence_name(&solid.iter().map(|&i| &toks[i]).collect::<Vec<_>>(), k, &o)?;
        }
        cuts.push((solid[k + 2], solid[j], format!("({})", o.canonical())));
        k = j + 1;
    }
    if cuts.is_empty() {
        return Ok(None);
    }
    Ok(super::toks::splice(toks, cuts))
}

/// The options of one list, as written.
#[derive(Default)]
struct IdentityOptions {
    start: Option<String>,
    increment: Option<String>,
    cache: Option<String>,
    /// `Some(None)`: `NO MINVALUE`.
    min: Option<Option<String>>,
    max: Option<Option<String>>,
    cycle: Option<bool>,
    /// Folded parts of `SEQUENCE NAME`.
    sequence_name: Vec<String>,
}

impl IdentityOptions {
    /// The options in the order sqlparser reads them.
    fn canonical(&self) -> String {
        let mut parts = Vec::new();
        if let Some(n) = &self.increment {
            parts.push(format!("INCREMENT BY {n}"));
        }
        match &self.min {
            Some(Some(n)) => parts.push(format!("MINVALUE {n}")),
            Some(None) => parts.push("NO MINVALUE".into()),
            None => {}
        }
        match &self.max {
            Some(Some(n)) => parts.push(format!("MAXVALUE {n}")),
            Some(None) => parts.push("NO MAXVALUE".into()),
            None => {}
        }
        if let Some(n) = &self.start {
            parts.push(format!("START WITH {n}"));
        }
        if let Some(n) = &self.cache {
            parts.push(format!("CACHE {n}"));
        }
        match self.cycle {
            Some(true) => parts.push("CYCLE".into()),
            Some(false) => parts.push("NO CYCLE".into()),
            None => {}
        }
        parts.join(" ")
    }
}

/// A name part as PostgreSQL folds it (unquoted: lower case).
fn name_part(t: Option<&Token>) -> Option<String> {
    match t {
        Some(Token::Word(w)) if w.quote_style.is_none() => Some(w.value.to_ascii_lowercase()),
        Some(Token::Word(w)) => Some(w.value.clone()),
        _ => None,
    }
}

/// Refuses a `SEQUENCE NAME` that is not the one Walden's counter for the
/// column goes by (`<table>_<column>_seq`, in the one schema). The list at
/// token `at` belongs to `ALTER TABLE t ALTER [COLUMN] c ADD GENERATED ...`
/// or to a column of `CREATE TABLE t (c type GENERATED ...)`.
fn check_sequence_name(toks: &[&Token], at: usize, o: &IdentityOptions) -> Result<()> {
    let word = |k: usize| super::toks::bare_word(toks.get(k).copied());
    // The table: the last part of the name after TABLE [IF [NOT] EXISTS] [ONLY].
    let mut after_table = 0;
    let mut table = None;
    if let Some(mut j) = (0..at).find(|&k| word(k) == "TABLE").map(|k| k + 1) {
        while matches!(word(j).as_str(), "IF" | "NOT" | "EXISTS" | "ONLY") {
            j += 1;
        }
        table = name_part(toks.get(j).copied());
        while toks.get(j + 1) == Some(&&Token::Period) {
            table = name_part(toks.get(j + 2).copied());
            j += 2;
        }
        after_table = j + 1;
    }
    // The column: before `ADD GENERATED`, or the first word of the column
    // definition the list is in.
    let column = if word(0) == "ALTER" {
        (after_table..at)
            .rev()
            .find(|&j| word(j) == "ADD")
            .and_then(|j| name_part(toks.get(j.checked_sub(1)?).copied()))
    } else {
        let mut depth = 0i32;
        let mut start = None;
        for (j, t) in toks.iter().enumerate().take(at) {
            match t {
                Token::LParen => {
                    depth += 1;
                    if depth == 1 {
                        start = Some(j + 1);
                    }
                }
                Token::RParen => depth -= 1,
                Token::Comma if depth == 1 => start = Some(j + 1),
                _ => {}
            }
        }
        start.and_then(|j| name_part(toks.get(j).copied()))
    };
    let given = &o.sequence_name;
    let (schema_ok, last) = match given.as_slice() {
        [name] => (true, name),
        [schema, name] => (schema == "public", name),
        _ => (false, &given[given.len() - 1]),
    };
    let want = match (table, column) {
        (Some(t), Some(c)) => format!("{t}_{c}_seq"),
        _ => String::new(),
    };
    if schema_ok && !want.is_empty() && *last == want {
        return Ok(());
    }
    Err(SqlError::unsupported(format!(
        "SEQUENCE NAME {} (an identity column's sequence is named <table>_<column>_seq{})",
        given.join("."),
        if want.is_empty() {
            String::new()
        } else {
            format!(", here {want}")
        }
    )))
}

#[cfg(test)]
mod tests {
    use super::rewrite;

    #[test]
    fn options_are_put_in_sqlparsers_order() {
        assert_eq!(
            rewrite(
                "ALTER TABLE public.t ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY (\n\
                 SEQUENCE NAME public.t_id_seq START WITH 1 INCREMENT BY 1 NO MINVALUE NO MAXVALUE CACHE 1)"
            )
            .unwrap()
            .as_deref(),
            Some(
                "ALTER TABLE public.t ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY \
                 (INCREMENT BY 1 NO MINVALUE NO MAXVALUE START WITH 1 CACHE 1)"
            )
        );
        assert_eq!(
            rewrite("CREATE TABLE t (id int GENERATED ALWAYS AS IDENTITY (START 5 INCREMENT -2), v text)")
                .unwrap()
                .as_deref(),
            Some("CREATE TABLE t (id int GENERATED ALWAYS AS IDENTITY (INCREMENT BY -2 START WITH 5), v text)")
        );
        assert!(rewrite(
            "CREATE TABLE \"T\" (a int, \"Id\" int GENERATED ALWAYS AS IDENTITY (SEQUENCE NAME \"T_Id_seq\"))"
        )
        .unwrap()
        .is_some());
        assert_eq!(rewrite("SELECT 'AS IDENTITY (x)'").unwrap(), None);
        assert_eq!(
            rewrite("CREATE TABLE t (id int GENERATED ALWAYS AS IDENTITY)").unwrap(),
            None
        );
    }

    #[test]
    fn other_sequence_names_and_repeats_are_refused() {
        let e =
            rewrite("ALTER TABLE t ALTER id ADD GENERATED ALWAYS AS IDENTITY (SEQUENCE NAME foo)")
                .unwrap_err();
        assert!(e.to_string().contains("SEQUENCE NAME foo"), "{e}");
        assert!(
            rewrite("CREATE TABLE t (id int GENERATED ALWAYS AS IDENTITY (START 1 START 2))")
                .is_err()
        );
    }
}

/// The optimizer-hint prefix that carries `OVERRIDING ... VALUE` through
/// sqlparser, which does not parse the clause: `INSERT INTO t (id)
/// OVERRIDING SYSTEM VALUE VALUES (1)` is parsed as `INSERT
/// /*waldenoverriding+SYSTEM*/ INTO t (id) VALUES (1)` (the PostgreSQL
/// dialect keeps such a comment as the statement's hint).
const OVERRIDING_HINT: &str = "waldenoverriding";

/// What an INSERT's `OVERRIDING` clause says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Overriding {
    /// `OVERRIDING SYSTEM VALUE`: a `GENERATED ALWAYS` identity column
    /// takes the given value.
    System,
    /// `OVERRIDING USER VALUE`: the values given for identity columns are
    /// ignored; they take their next values.
    User,
}

/// The `OVERRIDING` clause of a parsed INSERT.
pub fn overriding(ins: &sqlparser::ast::Insert) -> Option<Overriding> {
    ins.optimizer_hints
        .iter()
        .find(|h| h.prefix == OVERRIDING_HINT)
        .and_then(|h| match h.text.trim() {
            "SYSTEM" => Some(Overriding::System),
            "USER" => Some(Overriding::User),
            _ => None,
        })
}

/// An INSERT's `OVERRIDING { SYSTEM | USER } VALUE` as the hint sqlparser
/// keeps; `None` when the text has no such clause.
pub(super) fn rewrite_overriding(sql: &str) -> Option<String> {
    if !sql.to_ascii_uppercase().contains("OVERRIDING") {
        return None;
    }
    let raw = super::toks::Raw::new(sql)?;
    let (toks, solid) = (&raw.toks, &raw.solid);
    let word = |k: usize| raw.word(k);
    if word(0) != "INSERT" {
        return None;
    }
    let mut depth = 0i32;
    let at = (1..solid.len()).find(|&k| {
        match toks[solid[k]] {
            Token::LParen => depth += 1,
            Token::RParen => depth -= 1,
            _ => {}
        }
        depth == 0
            && word(k) == "OVERRIDING"
            && matches!(word(k + 1).as_str(), "SYSTEM" | "USER")
            && word(k + 2) == "VALUE"
    })?;
    let mut out = String::with_capacity(sql.len() + 32);
    for (i, t) in toks.iter().enumerate() {
        if i == solid[0] {
            out.push_str(&format!("{t} /*{OVERRIDING_HINT}+{}*/", word(at + 1)));
        } else if (solid[at]..=solid[at + 2]).contains(&i) {
            continue;
        } else {
            out.push_str(&t.to_string());
        }
    }
    Some(out)
}

#[cfg(test)]
mod overriding_tests {
    use super::*;

    #[test]
    fn overriding_becomes_a_hint() {
        let sql =
            rewrite_overriding("insert into t (id) overriding system value values (1)").unwrap();
        assert_eq!(
            sql,
            "insert /*waldenoverriding+SYSTEM*/ into t (id)  values (1)"
        );
        let Ok(Statement::Insert(ins)) = crate::front::parse_sql(&sql) else {
            panic!("{sql} does not parse");
        };
        assert_eq!(overriding(&ins), Some(Overriding::System));
        let sql = rewrite_overriding("INSERT INTO t OVERRIDING USER VALUE SELECT 1").unwrap();
        let Ok(Statement::Insert(ins)) = crate::front::parse_sql(&sql) else {
            panic!("{sql} does not parse");
        };
        assert_eq!(overriding(&ins), Some(Overriding::User));
        assert_eq!(
            rewrite_overriding("INSERT INTO t VALUES ('OVERRIDING USER VALUE')"),
            None
        );
        assert_eq!(rewrite_overriding("SELECT overriding FROM t"), None);
    }
}
