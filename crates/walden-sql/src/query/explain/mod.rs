//! EXPLAIN: the plan a statement runs, as a tree of PostgreSQL's node
//! names (`tree.rs` for queries, `dml/explain.rs` for writes), shown as
//! text or JSON (`render.rs`), with expressions written back as SQL
//! (`deparse.rs`) and, for EXPLAIN ANALYZE, the rows each measured node
//! produced (`measure.rs`).
//!
//! Walden has no statistics or cost model: a node carries an estimated
//! row count only where the engine knows it without estimating (a whole
//! table's committed row count, at most one row for a whole-key lookup),
//! and no costs at all.

mod deparse;
pub mod measure;
mod render;
mod tree;

pub use deparse::Deparser;
pub use render::{render_json, render_text, Summary};
pub use tree::{
    pkey_name, query_node, source_names, source_node, table_names, table_node, Builder, TablePath,
};

/// The names of a source's row, qualified by relation.
pub fn tree_names(s: &crate::query::Source) -> Vec<String> {
    source_names(s, true)
}

/// A property of a node: one value, or a list (`Sort Key`, `Group Key`).
#[derive(Debug, Clone)]
pub enum Prop {
    Text(String),
    List(Vec<String>),
}

/// One node of a plan as EXPLAIN shows it.
#[derive(Debug, Default)]
pub struct Node {
    /// PostgreSQL's node type (`Seq Scan`, `Hash Join`, `ModifyTable`).
    pub kind: String,
    /// How the text form names the node when it differs from `kind`
    /// (`Insert on t` for a ModifyTable, `Hash Left Join`).
    pub label: Option<String>,
    pub operation: Option<&'static str>,
    pub strategy: Option<&'static str>,
    pub join_type: Option<&'static str>,
    pub relation: Option<String>,
    pub alias: Option<String>,
    pub index: Option<String>,
    pub scan_direction: Option<&'static str>,
    /// Rows the node returns, when known without estimating.
    pub rows: Option<u64>,
    /// Properties in the order shown.
    pub props: Vec<(&'static str, Prop)>,
    /// Children with their relationship (`Outer`, `Inner`, `SubPlan`,
    /// `InitPlan`, `Member`) and, for subplans, their name (`SubPlan 1`,
    /// `CTE c`).
    pub children: Vec<(Child, Node)>,
    /// What EXPLAIN ANALYZE measured: (rows, loops).
    pub actual: Option<(u64, u64)>,
}

#[derive(Debug)]
pub struct Child {
    pub relationship: &'static str,
    pub name: Option<String>,
}

impl Node {
    pub fn new(kind: &str) -> Node {
        Node {
            kind: kind.to_string(),
            ..Default::default()
        }
    }

    pub fn prop(&mut self, key: &'static str, v: impl Into<String>) {
        self.props.push((key, Prop::Text(v.into())));
    }

    pub fn list(&mut self, key: &'static str, v: Vec<String>) {
        if !v.is_empty() {
            self.props.push((key, Prop::List(v)));
        }
    }

    /// `Filter: (...)`-style properties: the conjuncts ANDed.
    pub fn cond(&mut self, key: &'static str, parts: Vec<String>) {
        if let Some(c) = and_all(parts) {
            self.prop(key, c);
        }
    }

    pub fn child(&mut self, relationship: &'static str, n: Node) {
        self.children.push((
            Child {
                relationship,
                name: None,
            },
            n,
        ));
    }

    pub fn named_child(&mut self, relationship: &'static str, name: String, n: Node) {
        self.children.push((
            Child {
                relationship,
                name: Some(name),
            },
            n,
        ));
    }

    /// The node placed over `self` (a Limit over a Sort over a scan).
    pub fn under(self, mut top: Node) -> Node {
        top.child("Outer", self);
        top
    }
}

/// Conjuncts as PostgreSQL shows them: one in parentheses, several ANDed
/// inside one pair.
pub fn and_all(parts: Vec<String>) -> Option<String> {
    match parts.len() {
        0 => None,
        1 => {
            let p = parts.into_iter().next().unwrap_or_default();
            Some(if p.starts_with('(') && balanced(&p) {
                p
            } else {
                format!("({p})")
            })
        }
        _ => Some(format!("({})", parts.join(" AND "))),
    }
}

/// Whether `s`'s first parenthesis closes at its end.
fn balanced(s: &str) -> bool {
    let mut depth = 0i32;
    let mut quoted = false;
    for (i, ch) in s.char_indices() {
        match ch {
            '\'' => quoted = !quoted,
            '(' if !quoted => depth += 1,
            ')' if !quoted => {
                depth -= 1;
                if depth == 0 && i + 1 < s.len() {
                    return false;
                }
            }
            _ => {}
        }
    }
    depth == 0
}
