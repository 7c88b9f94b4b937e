//! A node tree as PostgreSQL's EXPLAIN prints it: text (one row per line,
//! children under `->  `) or JSON (its key names, so tools that read
//! PostgreSQL's plans read these).

use super::{Node, Prop};
use std::fmt::Write;

/// What the text shows beside the nodes.
#[derive(Debug, Default, Clone, Copy)]
pub struct Summary {
    /// Show estimated rows where known (COSTS).
    pub costs: bool,
    /// Milliseconds planning took (SUMMARY).
    pub planning_ms: Option<f64>,
    /// Milliseconds the statement ran (EXPLAIN ANALYZE with SUMMARY).
    pub execution_ms: Option<f64>,
}

/// The text form: one string per line.
pub fn render_text(root: &Node, s: &Summary) -> Vec<String> {
    let mut out = Vec::new();
    text_node(root, s, 0, false, &mut out);
    if let Some(ms) = s.planning_ms {
        out.push(format!("Planning Time: {ms:.3} ms"));
    }
    if let Some(ms) = s.execution_ms {
        out.push(format!("Execution Time: {ms:.3} ms"));
    }
    out
}

/// `col`: where the node's name starts; `arrow`: whether it is a child.
fn text_node(n: &Node, s: &Summary, col: usize, arrow: bool, out: &mut Vec<String>) {
    let mut line = String::new();
    if arrow {
        line.push_str(&" ".repeat(col - 4));
        line.push_str("->  ");
    } else {
        line.push_str(&" ".repeat(col));
    }
    line.push_str(n.label.as_deref().unwrap_or(&n.kind));
    if s.costs {
        if let Some(r) = n.rows {
            let _ = write!(line, "  (rows={r})");
        }
    }
    match n.actual {
        Some((_, 0)) => line.push_str(" (never executed)"),
        Some((rows, loops)) => {
            let gap = if s.costs && n.rows.is_some() {
                " "
            } else {
                "  "
            };
            let _ = write!(line, "{gap}(actual rows={rows} loops={loops})");
        }
        None => {}
    }
    out.push(line);
    let pad = " ".repeat(col + 2);
    for (k, v) in &n.props {
        let v = match v {
            Prop::Text(t) => t.clone(),
            Prop::List(l) => l.join(", "),
        };
        out.push(format!("{pad}{k}: {v}"));
    }
    for (c, child) in &n.children {
        match &c.name {
            Some(name) => {
                out.push(format!("{pad}{name}"));
                text_node(child, s, col + 8, true, out);
            }
            None => text_node(child, s, col + 6, true, out),
        }
    }
}

/// The JSON form: one document, PostgreSQL's shape.
pub fn render_json(root: &Node, s: &Summary) -> String {
    let mut out = String::from("[\n  {\n    \"Plan\": ");
    json_node(root, None, s, 4, &mut out);
    if let Some(ms) = s.planning_ms {
        let _ = write!(out, ",\n    \"Planning Time\": {ms:.3}");
    }
    if let Some(ms) = s.execution_ms {
        let _ = write!(out, ",\n    \"Triggers\": [\n    ]");
        let _ = write!(out, ",\n    \"Execution Time\": {ms:.3}");
    }
    out.push_str("\n  }\n]");
    out
}

fn q(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

fn json_node(n: &Node, rel: Option<&super::Child>, s: &Summary, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent + 2);
    let mut fields: Vec<(String, String)> = vec![("Node Type".into(), q(&n.kind))];
    if let Some(o) = n.operation {
        fields.push(("Operation".into(), q(o)));
    }
    if let Some(st) = n.strategy {
        fields.push(("Strategy".into(), q(st)));
    }
    if let Some(c) = rel {
        fields.push(("Parent Relationship".into(), q(c.relationship)));
        if let Some(name) = &c.name {
            fields.push(("Subplan Name".into(), q(name)));
        }
    }
    fields.push(("Parallel Aware".into(), "false".into()));
    fields.push(("Async Capable".into(), "false".into()));
    if let Some(j) = n.join_type {
        fields.push(("Join Type".into(), q(j)));
    }
    if let Some(d) = n.scan_direction {
        fields.push(("Scan Direction".into(), q(d)));
    }
    if let Some(i) = &n.index {
        fields.push(("Index Name".into(), q(i)));
    }
    if let Some(r) = &n.relation {
        fields.push(("Relation Name".into(), q(r)));
    }
    if let Some(a) = &n.alias {
        fields.push(("Alias".into(), q(a)));
    }
    if s.costs {
        if let Some(r) = n.rows {
            fields.push(("Plan Rows".into(), r.to_string()));
        }
    }
    if let Some((rows, loops)) = n.actual {
        fields.push(("Actual Rows".into(), rows.to_string()));
        fields.push(("Actual Loops".into(), loops.to_string()));
    }
    for (k, v) in &n.props {
        let v = match v {
            Prop::Text(t) => q(t),
            Prop::List(l) => {
                let items: Vec<String> = l.iter().map(|x| format!("{pad}  {}", q(x))).collect();
                format!("[\n{}\n{pad}]", items.join(",\n"))
            }
        };
        fields.push((k.to_string(), v));
    }
    out.push_str("{\n");
    let body: Vec<String> = fields
        .iter()
        .map(|(k, v)| format!("{pad}{}: {v}", q(k)))
        .collect();
    out.push_str(&body.join(",\n"));
    if !n.children.is_empty() {
        let _ = write!(out, ",\n{pad}\"Plans\": [\n");
        for (i, (c, child)) in n.children.iter().enumerate() {
            if i > 0 {
                out.push_str(",\n");
            }
            out.push_str(&" ".repeat(indent + 4));
            json_node(child, Some(c), s, indent + 4, out);
        }
        let _ = write!(out, "\n{pad}]");
    }
    let _ = write!(out, "\n{}}}", " ".repeat(indent));
}
