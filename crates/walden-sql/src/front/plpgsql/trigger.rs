//! PostgreSQL's trigger statements: `CREATE [OR REPLACE] TRIGGER`,
//! `DROP TRIGGER`, and a trigger's definition as stored (the text
//! [`PgTrigger::definition`] writes, which is also what
//! `pg_get_triggerdef` shows).

use super::lex::{lex, Tok, K};
use super::{name_at, paren_list, refuse, span, syntax_near};
use crate::error::{Result, SqlError};

/// The variables a trigger function sees besides `NEW` and `OLD`.
pub const TRIGGER_VARS: &[&str] = &[
    "tg_op",
    "tg_name",
    "tg_when",
    "tg_level",
    "tg_table_name",
    "tg_relname",
    "tg_table_schema",
    "tg_relid",
    "tg_nargs",
    "tg_argv",
];

/// The text `RETURN NEW` / `RETURN OLD` of a trigger function evaluates to
/// (the runtime reads the row from the fields' variables).
pub const RETURN_NEW: &str = "NEW";
pub const RETURN_OLD: &str = "OLD";

/// The variable holding field `f` of `NEW` (`rec` "new") or `OLD`.
pub fn field_var(rec: &str, f: &str) -> String {
    format!("@__{rec}__{}", f.to_lowercase())
}

/// The table holding a database's triggers (its rows: table OID, name,
/// function, definition as [`PgTrigger::definition`] writes it, enabled).
pub const TRIGGER_TABLE: &str = "walden_triggers";

/// When a trigger fires, relative to the change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timing {
    Before,
    After,
    InsteadOf,
}

impl Timing {
    pub fn word(self) -> &'static str {
        match self {
            Timing::Before => "BEFORE",
            Timing::After => "AFTER",
            Timing::InsteadOf => "INSTEAD OF",
        }
    }
}

/// A data change a trigger fires on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrigOp {
    Insert,
    Update,
    Delete,
    Truncate,
}

impl TrigOp {
    pub fn word(self) -> &'static str {
        match self {
            TrigOp::Insert => "INSERT",
            TrigOp::Update => "UPDATE",
            TrigOp::Delete => "DELETE",
            TrigOp::Truncate => "TRUNCATE",
        }
    }
}

/// A trigger's definition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PgTrigger {
    pub replace: bool,
    /// As written (quoted: case kept; else lower case).
    pub name: String,
    /// The table: schema (if written) and name.
    pub schema: Option<String>,
    pub table: String,
    pub timing: Timing,
    pub events: Vec<TrigOp>,
    /// `UPDATE OF a, b`: the columns (empty: any update).
    pub update_of: Vec<String>,
    /// `FOR EACH ROW` (else once per statement).
    pub row: bool,
    /// The WHEN condition's text, without its parentheses.
    pub when: Option<String>,
    /// The function (lower case, no schema) and its arguments as text.
    pub func: String,
    pub args: Vec<String>,
    /// A T-SQL trigger (`CREATE TRIGGER t ON tbl AFTER INSERT AS body`):
    /// its body, run once per statement with `inserted` / `deleted`.
    pub tsql_body: Option<String>,
    /// A T-SQL trigger's CREATE text, as stored and shown.
    pub tsql_text: Option<String>,
}

impl PgTrigger {
    /// `pg_trigger.tgtype`: PostgreSQL's bits (ROW 1, BEFORE 2, INSERT 4,
    /// DELETE 8, UPDATE 16, TRUNCATE 32, INSTEAD 64).
    pub fn tgtype(&self) -> i64 {
        let mut v = 0;
        if self.row {
            v |= 1;
        }
        match self.timing {
            Timing::Before => v |= 2,
            Timing::InsteadOf => v |= 64,
            Timing::After => {}
        }
        for e in &self.events {
            v |= match e {
                TrigOp::Insert => 4,
                TrigOp::Delete => 8,
                TrigOp::Update => 16,
                TrigOp::Truncate => 32,
            };
        }
        v
    }

    pub fn fires_on(&self, op: TrigOp) -> bool {
        self.events.contains(&op)
    }

    /// The definition as PostgreSQL's `pg_get_triggerdef` writes it (the
    /// table named by `qualified`).
    pub fn definition(&self, qualified: &str) -> String {
        if let Some(t) = &self.tsql_text {
            return t.clone();
        }
        let q = crate::types::quote::quote_ident;
        let mut events = Vec::new();
        // PostgreSQL's order, whatever the CREATE's.
        let mut ordered = self.events.clone();
        ordered.sort_by_key(|e| match e {
            TrigOp::Insert => 0,
            TrigOp::Delete => 1,
            TrigOp::Update => 2,
            TrigOp::Truncate => 3,
        });
        for e in &ordered {
            if *e == TrigOp::Update && !self.update_of.is_empty() {
                let cols: Vec<String> = self.update_of.iter().map(|c| q(c)).collect();
                events.push(format!("UPDATE OF {}", cols.join(", ")));
            } else {
                events.push(e.word().to_string());
            }
        }
        let mut s = format!(
            "CREATE TRIGGER {} {} {} ON {qualified} FOR EACH {}",
            q(&self.name),
            self.timing.word(),
            events.join(" OR "),
            if self.row { "ROW" } else { "STATEMENT" }
        );
        if let Some(w) = &self.when {
            s.push_str(&format!(" WHEN (({w}))"));
        }
        let args: Vec<String> = self
            .args
            .iter()
            .map(|a| crate::types::quote::quote_literal_text(a))
            .collect();
        s.push_str(&format!(
            " EXECUTE FUNCTION {}({})",
            q(&self.func),
            args.join(", ")
        ));
        s
    }
}

/// `DROP TRIGGER [IF EXISTS] name ON table [CASCADE | RESTRICT]`.
#[derive(Clone, Debug)]
pub struct DropTrigger {
    pub name: String,
    pub schema: Option<String>,
    pub table: String,
    pub if_exists: bool,
}

/// `name [. name]`: schema and name.
fn qualified_at(t: &[Tok], i: usize) -> Result<(Option<String>, String, usize)> {
    let (last, end) = name_at(t, i)?;
    let schema = if end >= i + 3 {
        Some(t[end - 3].w.clone())
    } else {
        None
    };
    Ok((schema, last, end))
}

fn word(t: &[Tok], i: usize) -> &str {
    match t.get(i) {
        Some(x) if x.k == K::Word => &x.w,
        _ => "",
    }
}

/// Parses `CREATE [OR REPLACE] [CONSTRAINT] TRIGGER ...`; `k` is the index
/// of the word after CREATE [OR REPLACE].
pub(super) fn parse_create(sql: &str, t: &[Tok], mut k: usize, replace: bool) -> Result<PgTrigger> {
    if word(t, k) == "constraint" {
        return Err(refuse("CREATE CONSTRAINT TRIGGER"));
    }
    k += 1; // TRIGGER
    let name = match t.get(k) {
        Some(x) if x.k == K::Word || x.k == K::QIdent => x.w.clone(),
        other => return Err(syntax_near(other)),
    };
    k += 1;
    let timing = match word(t, k) {
        "before" => Timing::Before,
        "after" => Timing::After,
        "instead" if word(t, k + 1) == "of" => {
            k += 1;
            Timing::InsteadOf
        }
        _ => return Err(syntax_near(t.get(k))),
    };
    k += 1;
    let mut events = Vec::new();
    let mut update_of = Vec::new();
    loop {
        let op = match word(t, k) {
            "insert" => TrigOp::Insert,
            "update" => TrigOp::Update,
            "delete" => TrigOp::Delete,
            "truncate" => TrigOp::Truncate,
            _ => return Err(syntax_near(t.get(k))),
        };
        k += 1;
        if op == TrigOp::Update && word(t, k) == "of" {
            k += 1;
            loop {
                match t.get(k) {
                    Some(x) if x.k == K::Word || x.k == K::QIdent => update_of.push(x.w.clone()),
                    other => return Err(syntax_near(other)),
                }
                k += 1;
                if t.get(k).is_some_and(|x| x.op(",")) {
                    k += 1;
                } else {
                    break;
                }
            }
        }
        if events.contains(&op) {
            return Err(SqlError::syntax(format!(
                "duplicate trigger events specified at or near \"{}\"",
                op.word().to_lowercase()
            )));
        }
        events.push(op);
        if word(t, k) == "or" {
            k += 1;
        } else {
            break;
        }
    }
    if word(t, k) != "on" {
        return Err(syntax_near(t.get(k)));
    }
    let (schema, table, mut k) = qualified_at(t, k + 1)?;
    let mut row = false;
    let mut when = None;
    loop {
        match word(t, k) {
            "referencing" => {
                return Err(refuse(
                    "REFERENCING (transition tables of statement-level triggers)",
                ))
            }
            "from" | "deferrable" | "initially" => {
                return Err(refuse("constraint trigger options (FROM, DEFERRABLE)"))
            }
            "not" if word(t, k + 1) == "deferrable" => k += 2,
            "for" => {
                k += 1;
                if word(t, k) == "each" {
                    k += 1;
                }
                row = match word(t, k) {
                    "row" => true,
                    "statement" => false,
                    _ => return Err(syntax_near(t.get(k))),
                };
                k += 1;
            }
            "when" => {
                let (_, end) = paren_list(t, k + 1)?;
                let mut a = k + 2;
                let mut b = end - 1;
                // Stored doubled, as pg_get_triggerdef shows it.
                while b > a + 1
                    && t[a].op("(")
                    && t[b - 1].op(")")
                    && paren_list(t, a).is_ok_and(|(_, e)| e == b)
                {
                    a += 1;
                    b -= 1;
                }
                when = Some(span(sql, t, a, b));
                k = end;
            }
            "execute" => break,
            _ => return Err(syntax_near(t.get(k))),
        }
    }
    k += 1;
    if !matches!(word(t, k), "function" | "procedure") {
        return Err(syntax_near(t.get(k)));
    }
    let (_, func, k) = qualified_at(t, k + 1)?;
    let func = func.to_lowercase();
    let (list, end) = paren_list(t, k)?;
    let mut args = Vec::new();
    for (a, b) in list {
        if b != a + 1 {
            return Err(syntax_near(t.get(a + 1)));
        }
        let x = &t[a];
        args.push(match x.k {
            K::Str | K::Word | K::QIdent | K::Num => x.w.clone(),
            _ => return Err(syntax_near(Some(x))),
        });
    }
    if t.get(end).is_some_and(|x| x.op(";")) && end + 1 == t.len() {
    } else if end != t.len() {
        return Err(syntax_near(t.get(end)));
    }
    if events.contains(&TrigOp::Truncate) && row {
        return Err(SqlError::new(
            crate::error::ErrorKind::FeatureNotSupported,
            "TRUNCATE FOR EACH ROW triggers are not supported",
        ));
    }
    if timing == Timing::InsteadOf {
        if !row {
            return Err(SqlError::new(
                crate::error::ErrorKind::FeatureNotSupported,
                "INSTEAD OF triggers must be FOR EACH ROW",
            ));
        }
        // Only views take them, and Walden's views are read-only.
        return Err(refuse("INSTEAD OF triggers (on views)"));
    }
    if events.contains(&TrigOp::Truncate) {
        return Err(refuse("TRUNCATE triggers"));
    }
    Ok(PgTrigger {
        replace,
        name,
        schema,
        table,
        timing,
        events,
        update_of,
        row,
        when,
        func,
        args,
        tsql_body: None,
        tsql_text: None,
    })
}

/// A possibly bracketed (`[x]`) or quoted name part at `k`: its text and
/// the index past it.
fn tsql_part(t: &[Tok], k: usize) -> Option<(String, usize)> {
    match t.get(k) {
        Some(x) if x.op("[") => {
            let mut j = k + 1;
            let mut name = String::new();
            while let Some(y) = t.get(j) {
                if y.op("]") {
                    return Some((name, j + 1));
                }
                name.push_str(&y.w);
                j += 1;
            }
            None
        }
        Some(x) if x.k == K::Word || x.k == K::QIdent => Some((x.w.to_lowercase(), k + 1)),
        _ => None,
    }
}

/// Whether `sql` is T-SQL's `CREATE | ALTER | CREATE OR ALTER TRIGGER name ON`.
pub fn is_tsql_create(sql: &str) -> bool {
    // Cheap first: this runs for every simple query.
    let head: String = sql
        .chars()
        .take(200)
        .collect::<String>()
        .to_ascii_lowercase();
    if !head.contains("trigger") {
        return false;
    }
    let Ok(t) = lex(sql) else {
        return false;
    };
    let k = match (word(&t, 0), word(&t, 1), word(&t, 2)) {
        ("create", "or", "alter") | ("create", "or", "replace") => 3,
        ("create", _, _) | ("alter", _, _) => 1,
        _ => return false,
    };
    word(&t, k) == "trigger" && tsql_name(&t, k + 1).is_ok_and(|(_, _, e)| word(&t, e) == "on")
}

/// `[schema.]name` in T-SQL's spelling: schema and name.
fn tsql_name(t: &[Tok], k: usize) -> Result<(Option<String>, String, usize)> {
    let (a, mut j) = tsql_part(t, k).ok_or_else(|| syntax_near(t.get(k)))?;
    if t.get(j).is_some_and(|x| x.op(".")) {
        let (b, e) = tsql_part(t, j + 1).ok_or_else(|| syntax_near(t.get(j + 1)))?;
        j = e;
        return Ok((Some(a), b, j));
    }
    Ok((None, a, j))
}

/// T-SQL's `CREATE [OR ALTER] TRIGGER [s.]name ON [s.]table {FOR | AFTER |
/// INSTEAD OF} INSERT [, UPDATE] [, DELETE] [NOT FOR REPLICATION] AS body`;
/// `k` is the index of TRIGGER.
pub(super) fn parse_tsql_create(
    sql: &str,
    t: &[Tok],
    k: usize,
    replace: bool,
) -> Result<PgTrigger> {
    let (_, name, mut k) = tsql_name(t, k + 1)?;
    if word(t, k) != "on" {
        return Err(syntax_near(t.get(k)));
    }
    let (schema, table, e) = tsql_name(t, k + 1)?;
    // `dbo` is the default schema (`public`).
    let schema = schema.filter(|s| s != "dbo");
    k = e;
    if word(t, k) == "with" {
        return Err(refuse("CREATE TRIGGER ... WITH options"));
    }
    let timing = match word(t, k) {
        "for" | "after" => Timing::After,
        "instead" => return Err(refuse("INSTEAD OF triggers")),
        _ => return Err(syntax_near(t.get(k))),
    };
    k += 1;
    let mut events = Vec::new();
    loop {
        let op = match word(t, k) {
            "insert" => TrigOp::Insert,
            "update" => TrigOp::Update,
            "delete" => TrigOp::Delete,
            _ => return Err(syntax_near(t.get(k))),
        };
        if !events.contains(&op) {
            events.push(op);
        }
        k += 1;
        if t.get(k).is_some_and(|x| x.op(",")) {
            k += 1;
        } else {
            break;
        }
    }
    if word(t, k) == "not" && word(t, k + 1) == "for" && word(t, k + 2) == "replication" {
        k += 3;
    }
    if word(t, k) != "as" {
        return Err(syntax_near(t.get(k)));
    }
    let body = t
        .get(k + 1)
        .map(|x| sql[x.s..].trim().to_string())
        .ok_or_else(|| SqlError::syntax("syntax error at end of input"))?;
    // Stored as CREATE TRIGGER (an ALTER's text would not run again).
    let head_end = t.iter().position(|x| x.is("trigger")).map_or(0, |p| t[p].s);
    let text = format!("CREATE {}", &sql[head_end..]);
    Ok(PgTrigger {
        replace,
        name,
        schema,
        table,
        timing,
        events,
        update_of: Vec::new(),
        row: false,
        when: None,
        func: String::new(),
        args: Vec::new(),
        tsql_body: Some(body),
        tsql_text: Some(text.trim().to_string()),
    })
}

/// T-SQL's `DROP TRIGGER [IF EXISTS] [s.]name [, ...]`: the names.
pub(super) fn parse_tsql_drop(t: &[Tok]) -> Result<(Vec<String>, bool)> {
    let mut k = 2;
    let mut if_exists = false;
    if word(t, k) == "if" && word(t, k + 1) == "exists" {
        if_exists = true;
        k += 2;
    }
    let mut names = Vec::new();
    loop {
        let (_, n, e) = tsql_name(t, k)?;
        names.push(n);
        k = e;
        if t.get(k).is_some_and(|x| x.op(",")) {
            k += 1;
        } else {
            break;
        }
    }
    if t.get(k).is_some_and(|x| x.op(";")) {
        k += 1;
    }
    if k != t.len() {
        return Err(syntax_near(t.get(k)));
    }
    Ok((names, if_exists))
}

/// Parses `DROP TRIGGER ...` from its tokens.
pub(super) fn parse_drop(t: &[Tok]) -> Result<DropTrigger> {
    let mut k = 2;
    let mut if_exists = false;
    if word(t, k) == "if" && word(t, k + 1) == "exists" {
        if_exists = true;
        k += 2;
    }
    let name = match t.get(k) {
        Some(x) if x.k == K::Word || x.k == K::QIdent => x.w.clone(),
        other => return Err(syntax_near(other)),
    };
    k += 1;
    if word(t, k) != "on" {
        return Err(syntax_near(t.get(k)));
    }
    let (schema, table, mut k) = qualified_at(t, k + 1)?;
    if matches!(word(t, k), "cascade" | "restrict") {
        k += 1;
    }
    if t.get(k).is_some_and(|x| x.op(";")) {
        k += 1;
    }
    if k != t.len() {
        return Err(syntax_near(t.get(k)));
    }
    Ok(DropTrigger {
        name,
        schema,
        table,
        if_exists,
    })
}

/// `ALTER TABLE t ENABLE | DISABLE TRIGGER name | ALL | USER`.
#[derive(Clone, Debug)]
pub struct EnableTrigger {
    pub schema: Option<String>,
    pub table: String,
    /// `None`: ALL or USER (Walden has no system triggers).
    pub name: Option<String>,
    pub enable: bool,
    pub if_exists: bool,
}

/// Parses the ALTER TABLE form, if the statement is only that (else `None`:
/// another ALTER TABLE).
pub(super) fn parse_enable(t: &[Tok]) -> Option<Result<EnableTrigger>> {
    let mut k = 2;
    let mut if_exists = false;
    if word(t, k) == "if" && word(t, k + 1) == "exists" {
        if_exists = true;
        k += 2;
    }
    if word(t, k) == "only" {
        k += 1;
    }
    let (schema, table, mut k) = qualified_at(t, k).ok()?;
    let enable = match word(t, k) {
        "enable" => true,
        "disable" => false,
        _ => return None,
    };
    k += 1;
    if enable && matches!(word(t, k), "always" | "replica") {
        if word(t, k) == "replica" {
            return Some(Err(refuse("ENABLE REPLICA TRIGGER")));
        }
        k += 1;
    }
    if word(t, k) != "trigger" {
        return None;
    }
    k += 1;
    let name = match t.get(k) {
        Some(x) if x.is("all") || x.is("user") => None,
        Some(x) if x.k == K::Word || x.k == K::QIdent => Some(x.w.clone()),
        other => return Some(Err(syntax_near(other))),
    };
    k += 1;
    if t.get(k).is_some_and(|x| x.op(";")) {
        k += 1;
    }
    if k != t.len() {
        return None;
    }
    Some(Ok(EnableTrigger {
        schema,
        table,
        name,
        enable,
        if_exists,
    }))
}

/// A stored definition read back.
pub fn parse_stored(def: &str) -> Option<PgTrigger> {
    let t = lex(def).ok()?;
    if is_tsql_create(def) {
        return parse_tsql_create(def, &t, 1, false).ok();
    }
    parse_create(def, &t, 1, false).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let sql = "CREATE TRIGGER \"Trg\" BEFORE INSERT OR UPDATE OF a, b ON s.t FOR EACH ROW WHEN (new.a > 1) EXECUTE PROCEDURE f('x', 2)";
        let t = lex(sql).unwrap();
        let tr = parse_create(sql, &t, 1, false).unwrap();
        assert_eq!(tr.name, "Trg");
        assert_eq!(tr.schema.as_deref(), Some("s"));
        assert_eq!(tr.events, vec![TrigOp::Insert, TrigOp::Update]);
        assert_eq!(tr.update_of, vec!["a", "b"]);
        assert_eq!(tr.when.as_deref(), Some("new.a > 1"));
        assert_eq!(tr.args, vec!["x", "2"]);
        let d = tr.definition("s.t");
        assert_eq!(
            d,
            "CREATE TRIGGER \"Trg\" BEFORE INSERT OR UPDATE OF a, b ON s.t FOR EACH ROW WHEN ((new.a > 1)) EXECUTE FUNCTION f('x', '2')"
        );
        assert_eq!(parse_stored(&d).unwrap().events, tr.events);
    }
}
