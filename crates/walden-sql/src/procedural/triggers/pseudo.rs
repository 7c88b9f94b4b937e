//! T-SQL triggers' `inserted` and `deleted`: a statement of the body that
//! reads one (`FROM inserted`, `JOIN deleted d`) reads a derived table of
//! the rows the firing statement changed, each value a variable of the
//! trigger's frame (`@__ins_<row>_<col>`), so the text is lifted to
//! parameters like any other; `UPDATE(col)` is whether the statement set
//! the column.

use sqlparser::dialect::MsSqlDialect;
use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::{Token, Tokenizer};
use walden_engine::DataType;

/// What a T-SQL trigger's statements may read.
#[derive(Debug)]
pub(in crate::procedural) struct Pseudo {
    /// The table's columns: name and type.
    pub cols: Vec<(String, DataType)>,
    pub inserted: usize,
    pub deleted: usize,
    /// The columns the statement set (lower case).
    pub assigned: Vec<String>,
}

/// The variable holding column `c` of row `r` of `inserted` (`ins`) or
/// `deleted` (`del`).
pub(in crate::procedural) fn cell(which: &str, r: usize, c: usize) -> String {
    format!("@__{which}_{r}_{c}")
}

impl Pseudo {
    fn derived(&self, which: &str, n: usize) -> String {
        let q = crate::types::quote::quote_ident;
        let names: Vec<String> = self.cols.iter().map(|(c, _)| q(c)).collect();
        if n == 0 {
            let nulls: Vec<String> = self
                .cols
                .iter()
                .map(|(c, t)| format!("CAST(NULL AS {}) AS {}", t.sql_name(), q(c)))
                .collect();
            return format!("(SELECT {} WHERE 1 = 0)", nulls.join(", "));
        }
        let rows: Vec<String> = (0..n)
            .map(|r| {
                let v: Vec<String> = (0..self.cols.len()).map(|c| cell(which, r, c)).collect();
                format!("({})", v.join(", "))
            })
            .collect();
        format!(
            "(SELECT * FROM (VALUES {}) AS __rows ({}))",
            rows.join(", "),
            names.join(", ")
        )
    }

    /// `sql` with its reads of `inserted` / `deleted` and its `UPDATE(col)`
    /// calls replaced; `None` when it has none.
    pub fn rewrite(&self, sql: &str) -> Option<String> {
        let lower = sql.to_ascii_lowercase();
        if !lower.contains("inserted") && !lower.contains("deleted") && !lower.contains("update") {
            return None;
        }
        let toks = Tokenizer::new(&MsSqlDialect {}, sql)
            .with_unescape(false)
            .tokenize()
            .ok()?;
        let significant = |k: usize, step: isize| -> Option<&Token> {
            let mut j = k as isize + step;
            while j >= 0 && (j as usize) < toks.len() {
                match &toks[j as usize] {
                    Token::Whitespace(_) => j += step,
                    t => return Some(t),
                }
            }
            None
        };
        let mut out = String::with_capacity(sql.len());
        let mut changed = false;
        let mut i = 0;
        while i < toks.len() {
            let t = &toks[i];
            if let Token::Word(w) = t {
                let v = w.value.to_ascii_lowercase();
                let prev = significant(i, -1);
                let next = significant(i, 1);
                let after_from = matches!(prev, Some(Token::Word(p)) if matches!(p.keyword, Keyword::FROM | Keyword::JOIN));
                if (v == "inserted" || v == "deleted")
                    && after_from
                    && !matches!(next, Some(Token::Period))
                {
                    let n = if v == "inserted" {
                        self.inserted
                    } else {
                        self.deleted
                    };
                    out.push_str(&self.derived(if v == "inserted" { "ins" } else { "del" }, n));
                    // An alias of its own follows, or it is named by itself.
                    let aliased = match next {
                        Some(Token::Word(a)) => {
                            a.keyword == Keyword::AS
                                || a.quote_style.is_some()
                                || matches!(a.keyword, Keyword::NoKeyword)
                        }
                        _ => false,
                    };
                    if !aliased {
                        out.push_str(&format!(" AS {}", w.value));
                    }
                    changed = true;
                    i += 1;
                    continue;
                }
                if v == "update" && w.quote_style.is_none() {
                    if let (Some(Token::LParen), Some(Token::Word(c)), Some(Token::RParen)) =
                        (toks.get(i + 1), toks.get(i + 2), toks.get(i + 3))
                    {
                        let set = self.assigned.contains(&c.value.to_ascii_lowercase());
                        out.push_str(if set { "(1 = 1)" } else { "(1 = 0)" });
                        changed = true;
                        i += 4;
                        continue;
                    }
                }
            }
            out.push_str(&t.to_string());
            i += 1;
        }
        changed.then_some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_become_derived_tables() {
        let p = Pseudo {
            cols: vec![("id".into(), DataType::Int), ("v".into(), DataType::Text)],
            inserted: 1,
            deleted: 0,
            assigned: vec!["v".into()],
        };
        assert_eq!(
            p.rewrite("INSERT INTO a SELECT inserted.id, 'x' FROM INSERTED").unwrap(),
            "INSERT INTO a SELECT inserted.id, 'x' FROM (SELECT * FROM (VALUES (@__ins_0_0, @__ins_0_1)) AS __rows (id, v)) AS INSERTED"
        );
        assert_eq!(
            p.rewrite("SELECT d.id FROM deleted d WHERE UPDATE(v) AND NOT UPDATE(id)").unwrap(),
            "SELECT d.id FROM (SELECT CAST(NULL AS integer) AS id, CAST(NULL AS text) AS v WHERE 1 = 0) d WHERE (1 = 1) AND NOT (1 = 0)"
        );
        assert!(p.rewrite("SELECT 1").is_none());
    }
}
