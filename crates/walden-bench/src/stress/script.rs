//! The script a stress session runs: `\set` lines, statements split on `;`,
//! and the `:name` parameters substituted in each iteration.
//!
//! Parsing happens once; each statement becomes a template of literal text
//! and parameter slots, so an iteration only appends strings and draws
//! random numbers.

use rand::distributions::{Alphanumeric, Distribution};
use rand::Rng;

/// Longest string `:randstr(n)` may ask for (a typo such as `randstr(1e9)`
/// should fail at parse time, not exhaust memory mid-run).
const MAX_RANDSTR: usize = 1 << 20;

/// A value drawn afresh in each iteration.
#[derive(Debug, Clone, PartialEq)]
pub enum Generator {
    /// Uniform integer in `lo..=hi`.
    Random(i64, i64),
    /// Random alphanumeric string of this length.
    RandStr(usize),
    /// A constant (`\set scale 10`).
    Const(i64),
}

impl Generator {
    fn generate(&self, rng: &mut impl Rng, out: &mut String) {
        use std::fmt::Write;
        match *self {
            Generator::Random(lo, hi) => {
                let _ = write!(out, "{}", rng.gen_range(lo..=hi));
            }
            Generator::RandStr(len) => {
                out.extend(
                    Alphanumeric
                        .sample_iter(&mut *rng)
                        .take(len)
                        .map(char::from),
                );
            }
            Generator::Const(v) => {
                let _ = write!(out, "{v}");
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Part {
    Lit(String),
    /// `:n`, the session's iteration number.
    N,
    /// `:session`, the session number (1-based).
    Session,
    /// A `\set` variable, by index into [`Script::vars`].
    Var(usize),
    /// An inline `:rand(a,b)` or `:randstr(n)`.
    Gen(Generator),
}

/// One statement of the script, ready to render.
#[derive(Debug, Clone)]
pub struct Statement {
    /// The statement as written (for error reports).
    pub text: String,
    parts: Vec<Part>,
    /// Whether it may open a transaction (BEGIN / START ...): a failed
    /// iteration that ran one sends ROLLBACK before the next.
    pub opens_transaction: bool,
}

/// Per-iteration values of a render.
pub struct Bindings<'a> {
    pub n: u64,
    pub session: usize,
    /// The `\set` variables' values, in [`Script::vars`] order.
    pub vars: &'a [String],
}

impl Statement {
    /// Appends the statement with its parameters substituted to `out`.
    pub fn render(&self, b: &Bindings<'_>, rng: &mut impl Rng, out: &mut String) {
        use std::fmt::Write;
        for p in &self.parts {
            match p {
                Part::Lit(s) => out.push_str(s),
                Part::N => {
                    let _ = write!(out, "{}", b.n);
                }
                Part::Session => {
                    let _ = write!(out, "{}", b.session);
                }
                Part::Var(i) => out.push_str(&b.vars[*i]),
                Part::Gen(g) => g.generate(rng, out),
            }
        }
    }
}

/// A parsed script.
#[derive(Debug, Clone)]
pub struct Script {
    /// `\set` variables, evaluated once per iteration in this order.
    pub vars: Vec<(String, Generator)>,
    pub statements: Vec<Statement>,
}

impl Script {
    /// Draws this iteration's `\set` values into `vals` (reusing its strings).
    pub fn draw_vars(&self, rng: &mut impl Rng, vals: &mut Vec<String>) {
        vals.resize(self.vars.len(), String::new());
        for ((_, g), v) in self.vars.iter().zip(vals.iter_mut()) {
            v.clear();
            g.generate(rng, v);
        }
    }
}

/// Parses a script: leading `\set name expr` lines (blank and `--` comment
/// lines may be mixed in), then SQL statements separated by `;`.
pub fn parse_script(src: &str) -> Result<Script, String> {
    let mut vars: Vec<(String, Generator)> = Vec::new();
    let mut body_start = src.len();
    let mut offset = 0;
    for line in src.split_inclusive('\n') {
        let t = line.trim();
        if t.is_empty() || t.starts_with("--") {
            offset += line.len();
            continue;
        }
        if let Some(meta) = t.strip_prefix('\\') {
            let (name, g) = parse_set(meta)?;
            if vars.iter().any(|(v, _)| *v == name) {
                return Err(format!("\\set {name}: set twice"));
            }
            vars.push((name, g));
            offset += line.len();
            continue;
        }
        body_start = offset;
        break;
    }
    let body = &src[body_start..];
    if let Some(l) = body.lines().find(|l| l.trim_start().starts_with("\\set")) {
        return Err(format!(
            "\\set lines must come before the first statement: {}",
            l.trim()
        ));
    }
    let mut statements = Vec::new();
    for (i, text) in split_statements(body).into_iter().enumerate() {
        let parts = parse_params(&text, &vars).map_err(|e| format!("statement {}: {e}", i + 1))?;
        let first = text
            .split(|c: char| !c.is_ascii_alphabetic())
            .find(|w| !w.is_empty())
            .unwrap_or("")
            .to_ascii_uppercase();
        statements.push(Statement {
            opens_transaction: first == "BEGIN" || first == "START",
            text,
            parts,
        });
    }
    if statements.is_empty() {
        return Err("the script has no SQL statement".into());
    }
    Ok(Script { vars, statements })
}

/// Parses the text after `\` of a meta line: `set name expr`.
fn parse_set(meta: &str) -> Result<(String, Generator), String> {
    let mut words = meta.splitn(3, char::is_whitespace);
    let cmd = words.next().unwrap_or("");
    if cmd != "set" {
        return Err(format!("unsupported meta-command \\{cmd} (only \\set is)"));
    }
    let name = words.next().unwrap_or("").trim();
    let expr = words.next().unwrap_or("").trim();
    if !is_ident(name) || expr.is_empty() {
        return Err(format!("expected \\set NAME EXPR, got \\{}", meta.trim()));
    }
    if matches!(name, "n" | "session" | "rand" | "random" | "randstr") {
        return Err(format!("\\set {name}: that name is built in"));
    }
    let expr = expr.trim_end_matches(';').trim();
    let g = if let Ok(v) = expr.parse::<i64>() {
        Generator::Const(v)
    } else {
        let (fname, rest) = expr.split_at(expr.find('(').unwrap_or(expr.len()));
        let args = rest
            .strip_prefix('(')
            .and_then(|r| r.strip_suffix(')'))
            .ok_or_else(|| {
                format!("\\set {name}: expected random(a, b), randstr(n) or an integer, got {expr}")
            })?;
        parse_call(fname.trim(), args)
            .ok_or_else(|| format!("\\set {name}: unknown function {}", fname.trim()))?
            .map_err(|e| format!("\\set {name}: {e}"))?
    };
    Ok((name.to_string(), g))
}

/// `rand`/`random`/`randstr` applied to `args` (the text between the
/// parentheses); `None` when `fname` is none of them.
fn parse_call(fname: &str, args: &str) -> Option<Result<Generator, String>> {
    let ints: Result<Vec<i64>, _> = args.split(',').map(|a| a.trim().parse::<i64>()).collect();
    Some(match fname {
        "rand" | "random" => match ints.as_deref() {
            Ok([lo, hi]) if lo <= hi => Ok(Generator::Random(*lo, *hi)),
            Ok([lo, hi]) => Err(format!(
                "{fname}({lo}, {hi}): the low bound is above the high one"
            )),
            _ => Err(format!("{fname}({args}): expected two integers")),
        },
        "randstr" => match ints.as_deref() {
            Ok([len]) if (0..=MAX_RANDSTR as i64).contains(len) => {
                Ok(Generator::RandStr(*len as usize))
            }
            _ => Err(format!(
                "randstr({args}): expected a length in 0..={MAX_RANDSTR}"
            )),
        },
        _ => return None,
    })
}

fn is_ident(s: &str) -> bool {
    let mut cs = s.chars();
    matches!(cs.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && cs.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Turns a statement into literal text and parameter slots. `::` (a cast)
/// never starts a parameter, and a `:name` that is neither built in nor
/// `\set` stays as written. Quotes are not special: `':randstr(8)'` makes a
/// random string literal.
fn parse_params(text: &str, vars: &[(String, Generator)]) -> Result<Vec<Part>, String> {
    let mut parts = Vec::new();
    let mut lit = String::new();
    let mut rest = text;
    while let Some(pos) = rest.find(':') {
        lit.push_str(&rest[..pos]);
        let after = &rest[pos + 1..];
        if let Some(tail) = after.strip_prefix(':') {
            lit.push_str("::");
            rest = tail;
            continue;
        }
        let name_len = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(after.len());
        let name = &after[..name_len];
        let tail = &after[name_len..];
        let slot = if !is_ident(name) {
            None
        } else if let Some(i) = vars.iter().position(|(v, _)| v == name) {
            Some((Part::Var(i), tail))
        } else {
            match name {
                "n" => Some((Part::N, tail)),
                "session" => Some((Part::Session, tail)),
                "rand" | "random" | "randstr" if tail.starts_with('(') => {
                    let close = tail
                        .find(')')
                        .ok_or_else(|| format!(":{name}( has no closing parenthesis"))?;
                    let g = parse_call(name, &tail[1..close]).expect("a known function")?;
                    Some((Part::Gen(g), &tail[close + 1..]))
                }
                _ => None,
            }
        };
        match slot {
            Some((part, tail)) => {
                if !lit.is_empty() {
                    parts.push(Part::Lit(std::mem::take(&mut lit)));
                }
                parts.push(part);
                rest = tail;
            }
            None => {
                lit.push(':');
                rest = after;
            }
        }
    }
    lit.push_str(rest);
    if !lit.is_empty() {
        parts.push(Part::Lit(lit));
    }
    Ok(parts)
}

/// Splits SQL on `;` outside quotes ('...', "...", $tag$...$tag$) and
/// comments (`--`, nested `/* */`). Pieces that hold only blanks and
/// comments are dropped; the others lose the `;` and the blanks and comments
/// before their first token (so error reports show the statement itself).
pub fn split_statements(sql: &str) -> Vec<String> {
    let b = sql.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    // Where the current piece's first token starts, once it has one.
    let mut start: Option<usize> = None;
    while i < b.len() {
        if start.is_none()
            && !b[i].is_ascii_whitespace()
            && !b[i..].starts_with(b"--")
            && !b[i..].starts_with(b"/*")
        {
            start = Some(i);
        }
        match b[i] {
            b';' => {
                if let Some(s) = start.take() {
                    if s < i {
                        out.push(sql[s..i].trim_end().to_string());
                    }
                }
                i += 1;
            }
            b'-' if b.get(i + 1) == Some(&b'-') => {
                i = sql[i..].find('\n').map_or(b.len(), |p| i + p + 1);
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let mut depth = 1;
                i += 2;
                while i < b.len() && depth > 0 {
                    if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                        depth += 1;
                        i += 2;
                    } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                        depth -= 1;
                        i += 2;
                    } else {
                        i += 1;
                    }
                }
            }
            q @ (b'\'' | b'"') => {
                // E'...' strings take backslash escapes.
                let escapes = q == b'\''
                    && i > 0
                    && matches!(b[i - 1], b'E' | b'e')
                    && (i < 2 || !(b[i - 2].is_ascii_alphanumeric() || b[i - 2] == b'_'));
                i += 1;
                while i < b.len() {
                    if escapes && b[i] == b'\\' {
                        i += 2;
                    } else if b[i] == q {
                        // A doubled quote stays inside.
                        if b.get(i + 1) == Some(&q) {
                            i += 2;
                        } else {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
                i += 1;
            }
            b'$' => match dollar_tag(&sql[i..]) {
                Some(tag) => {
                    let body = i + tag.len();
                    i = sql[body..]
                        .find(tag)
                        .map_or(b.len(), |p| body + p + tag.len());
                }
                None => i += 1,
            },
            _ => i += 1,
        }
    }
    if let Some(s) = start {
        out.push(sql[s..].trim_end().to_string());
    }
    out
}

/// The `$tag$` opening a dollar-quoted string at the start of `s`, if any
/// (`$1` parameters and `$` inside identifiers are not tags).
fn dollar_tag(s: &str) -> Option<&str> {
    let inner = &s[1..];
    let end = inner.find('$')?;
    let tag = &inner[..end];
    let ok = tag.is_empty()
        || (!tag.starts_with(|c: char| c.is_ascii_digit())
            && tag.chars().all(|c| c.is_alphanumeric() || c == '_'));
    ok.then(|| &s[..end + 2])
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn render(st: &Statement, n: u64, session: usize, vars: &[String]) -> String {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let mut out = String::new();
        st.render(&Bindings { n, session, vars }, &mut rng, &mut out);
        out
    }

    #[test]
    fn splits_outside_quotes_and_comments() {
        let sql = "INSERT INTO t VALUES ('a;b', \"c;d\"); -- x; y\n\
                   SELECT $$;$$, $f$ ; $f$, E'\\';', $1 ;/* a; /* b; */ c; */ ;\n\
                   ;  -- only a comment;\n UPDATE t SET v = 'it''s;' ";
        assert_eq!(
            split_statements(sql),
            vec![
                "INSERT INTO t VALUES ('a;b', \"c;d\")",
                "SELECT $$;$$, $f$ ; $f$, E'\\';', $1",
                "UPDATE t SET v = 'it''s;'",
            ]
        );
        assert!(split_statements(" ; -- nothing\n/* here */").is_empty());
    }

    #[test]
    fn substitutes_parameters() {
        let s = parse_script(
            "-- header\n\\set aid random(5, 5)\n\\set k 42\n\
             INSERT INTO t VALUES (:session, :n, :aid, :k, :rand(3,3), ':randstr(4)', x::int, :other, a:b);\n\
             SELECT :random(-2, -2)",
        )
        .unwrap();
        assert_eq!(s.vars.len(), 2);
        assert_eq!(s.statements.len(), 2);
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let mut vals = Vec::new();
        s.draw_vars(&mut rng, &mut vals);
        assert_eq!(vals, ["5", "42"]);
        let out = render(&s.statements[0], 17, 3, &vals);
        let (head, tail) = out.split_at(out.find('\'').unwrap());
        assert_eq!(head, "INSERT INTO t VALUES (3, 17, 5, 42, 3, ");
        assert_eq!(tail.len(), "'abcd', x::int, :other, a:b)".len());
        assert!(tail[1..5].chars().all(|c| c.is_ascii_alphanumeric()));
        assert!(tail.ends_with("', x::int, :other, a:b)"));
        assert_eq!(render(&s.statements[1], 1, 1, &vals), "SELECT -2");
    }

    #[test]
    fn rejects_bad_scripts() {
        for bad in [
            "",
            "-- only a comment",
            "\\set x random(5, 1)\nSELECT :x",
            "\\set x rand(1)\nSELECT 1",
            "\\set n 1\nSELECT 1",
            "\\setx 1\nSELECT 1",
            "\\sleep 1\nSELECT 1",
            "SELECT 1;\n\\set x 1\nSELECT :x",
            "SELECT :rand(1,",
            "SELECT :randstr(-1)",
        ] {
            assert!(parse_script(bad).is_err(), "accepted {bad:?}");
        }
        let s = parse_script("begin; insert into t values (1); commit").unwrap();
        let opens: Vec<bool> = s.statements.iter().map(|s| s.opens_transaction).collect();
        assert_eq!(opens, [true, false, false]);
    }
}
