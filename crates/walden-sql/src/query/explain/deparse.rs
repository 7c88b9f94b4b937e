//! Compiled expressions written back as SQL for EXPLAIN (`Filter: (b >
//! 5)`), in PostgreSQL's style: every operator application parenthesised,
//! columns by the names the node's row has. Subqueries are numbered
//! (`SubPlan 1`) and kept, so the tree can show their plans.

use crate::expr::{Expr, SubKind, SubPlan};
use crate::functions::BinOp;
use walden_engine::Value;

/// Writes expressions; collects the subqueries it meets.
#[derive(Default)]
pub struct Deparser<'p> {
    /// Subqueries met so far, numbered from 1 across the statement.
    pub subs: Vec<&'p SubPlan>,
    /// How many subqueries earlier nodes took (see `take_subs`).
    taken: usize,
}

impl<'p> Deparser<'p> {
    /// The subqueries met since the last call, with their numbers.
    pub fn take_subs(&mut self) -> Vec<(usize, &'p SubPlan)> {
        let start = self.taken;
        self.taken = self.subs.len();
        self.subs[start..]
            .iter()
            .enumerate()
            .map(|(i, s)| (start + i + 1, *s))
            .collect()
    }

    pub fn expr(&mut self, e: &'p Expr, names: &[String]) -> String {
        match e {
            Expr::Lit(v) => literal(v),
            Expr::Param(i) => format!("${}", i + 1),
            Expr::Col(i) => names.get(*i).cloned().unwrap_or_else(|| format!("${i}")),
            // An enclosing query's column: a parameter of the subplan, as
            // PostgreSQL shows it.
            Expr::Outer(d, i) => format!("outer{d}.col{}", i + 1),
            Expr::Not(x) => format!("(NOT {})", self.expr(x, names)),
            Expr::Neg(x) => format!("(- {})", self.expr(x, names)),
            Expr::Bin(op, a, b) => {
                let (a, b) = (self.expr(a, names), self.expr(b, names));
                format!("({a} {} {b})", op_text(*op))
            }
            Expr::IsNull(x, neg) => {
                let x = self.expr(x, names);
                format!("({x} IS {}NULL)", if *neg { "NOT " } else { "" })
            }
            Expr::IsBool(x, b, neg) => {
                let x = self.expr(x, names);
                let not = if *neg { "NOT " } else { "" };
                format!("({x} IS {not}{})", if *b { "TRUE" } else { "FALSE" })
            }
            Expr::InList(x, items, neg) => {
                let x = self.expr(x, names);
                let items: Vec<String> = items.iter().map(|i| self.expr(i, names)).collect();
                let (op, q) = if *neg { ("<>", "ALL") } else { ("=", "ANY") };
                format!("({x} {op} {q} (ARRAY[{}]))", items.join(", "))
            }
            Expr::Between(x, lo, hi, neg) => {
                let (x, lo, hi) = (
                    self.expr(x, names),
                    self.expr(lo, names),
                    self.expr(hi, names),
                );
                if *neg {
                    format!("(({x} < {lo}) OR ({x} > {hi}))")
                } else {
                    format!("(({x} >= {lo}) AND ({x} <= {hi}))")
                }
            }
            Expr::Like {
                expr,
                pattern,
                negated,
                ci,
                ..
            } => {
                let (x, p) = (self.expr(expr, names), self.expr(pattern, names));
                let op = match (ci, negated) {
                    (false, false) => "~~",
                    (false, true) => "!~~",
                    (true, false) => "~~*",
                    (true, true) => "!~~*",
                };
                format!("({x} {op} {p})")
            }
            Expr::Case(operand, whens, els) => {
                let mut s = String::from("CASE");
                if let Some(o) = operand {
                    s.push(' ');
                    s.push_str(&self.expr(o, names));
                }
                for (w, t) in whens {
                    let (w, t) = (self.expr(w, names), self.expr(t, names));
                    s.push_str(&format!(" WHEN {w} THEN {t}"));
                }
                if let Some(e) = els {
                    s.push_str(&format!(" ELSE {}", self.expr(e, names)));
                }
                s.push_str(" END");
                s
            }
            Expr::Cast(x, t) => {
                let x = self.expr(x, names);
                let (oid, typmod) = crate::types::pg_types::type_oid_and_mod(t);
                let name = crate::types::pg_types::format_type(oid, Some(typmod))
                    .unwrap_or_else(|| format!("{t:?}").to_ascii_lowercase());
                format!("({x})::{name}")
            }
            Expr::Func(f, args) => {
                let args: Vec<String> = args.iter().map(|a| self.expr(a, names)).collect();
                format!("{}({})", snake(&format!("{f:?}")), args.join(", "))
            }
            Expr::Sub(s) => {
                self.subs.push(s);
                let n = self.subs.len();
                let word = sub_word(s);
                match &s.kind {
                    SubKind::Exists { negated } => {
                        format!("({}EXISTS({word} {n}))", if *negated { "NOT " } else { "" })
                    }
                    SubKind::In { expr, negated } => {
                        let x = self.expr(expr, names);
                        let not = if *negated { "NOT " } else { "" };
                        format!("({x} {not}IN ({word} {n}))")
                    }
                    SubKind::Quantified { expr, op, all } => {
                        let x = self.expr(expr, names);
                        let q = if *all { "ALL" } else { "ANY" };
                        format!("({x} {} {q} ({word} {n}))", op_text(*op))
                    }
                    _ => format!("({word} {n})"),
                }
            }
        }
    }

    /// Each expression of `list`.
    pub fn all(&mut self, list: &'p [Expr], names: &[String]) -> Vec<String> {
        list.iter().map(|e| self.expr(e, names)).collect()
    }
}

/// PostgreSQL's word for a subquery: an InitPlan runs once before the
/// node (an uncorrelated scalar, EXISTS or ARRAY subquery), a SubPlan as
/// the node needs it.
pub(super) fn sub_word(s: &SubPlan) -> &'static str {
    let once = matches!(
        s.kind,
        SubKind::Scalar | SubKind::Exists { .. } | SubKind::Array | SubKind::Row
    );
    if once && !s.correlated {
        "InitPlan"
    } else {
        "SubPlan"
    }
}

fn op_text(op: BinOp) -> &'static str {
    match op {
        BinOp::Add => "+",
        BinOp::Sub => "-",
        BinOp::Mul => "*",
        BinOp::Div => "/",
        BinOp::Mod => "%",
        BinOp::Concat => "||",
        BinOp::Eq => "=",
        BinOp::NotEq => "<>",
        BinOp::Lt => "<",
        BinOp::LtEq => "<=",
        BinOp::Gt => ">",
        BinOp::GtEq => ">=",
        BinOp::And => "AND",
        BinOp::Or => "OR",
        BinOp::IsDistinct => "IS DISTINCT FROM",
        BinOp::IsNotDistinct => "IS NOT DISTINCT FROM",
        BinOp::Regex(ci, neg) => match (ci, neg) {
            (false, false) => "~",
            (true, false) => "~*",
            (false, true) => "!~",
            (true, true) => "!~*",
        },
        BinOp::Like(ci, neg) => match (ci, neg) {
            (false, false) => "~~",
            (false, true) => "!~~",
            (true, false) => "~~*",
            (true, true) => "!~~*",
        },
    }
}

/// A constant as SQL: strings quoted, the rest as their text.
pub(super) fn literal(v: &Value) -> String {
    match v {
        Value::Null => "NULL".into(),
        Value::Bool(b) => b.to_string(),
        Value::Int(_) | Value::Float(_) | Value::Decimal(_) => {
            let s = v.to_string();
            if s.starts_with('-') {
                format!("'{s}'")
            } else {
                s
            }
        }
        other => crate::types::quote::quote_literal_text(&other.to_string()),
    }
}

/// `ArrayBuild` as `array_build`: a function's name from its variant.
fn snake(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 4);
    for (i, ch) in s.chars().enumerate() {
        if ch.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(ch.to_ascii_lowercase());
        } else {
            out.push(ch);
        }
    }
    out
}

/// A column name as a plan shows it, qualified by its relation when asked.
pub fn column(rel: Option<&str>, name: &str) -> String {
    let c = crate::types::quote::quote_ident(name);
    match rel {
        Some(r) => format!("{}.{c}", crate::types::quote::quote_ident(r)),
        None => c,
    }
}
