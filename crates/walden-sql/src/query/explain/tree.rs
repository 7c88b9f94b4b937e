//! The node tree of a planned query, as PostgreSQL names its nodes: each
//! table's access path (`Seq Scan`, `Index Scan using ... on ...` for a
//! key lookup, a key range, an index search, an ORDER BY ... LIMIT walk;
//! `Bitmap Heap Scan` over a `BitmapOr` for a union of searches), joins
//! in their order with their method, then grouping, windows, DISTINCT,
//! the sort and the limit above.

use super::deparse::column;
use super::measure::{Measured, Part};
use super::{Deparser, Node};
use crate::expr::SubPlan;
use crate::query::probe::{JoinProbe, ProbeValue};
use crate::query::*;
use walden_engine::Table;

/// Builds trees; with `measured`, after EXPLAIN ANALYZE ran the plan.
pub struct Builder<'p, 'm> {
    pub d: Deparser<'p>,
    pub measured: Option<&'m Measured>,
    pub verbose: bool,
    /// WITH queries already shown (a shared one is shown at its first
    /// reference).
    shown: Vec<usize>,
}

impl<'p, 'm> Builder<'p, 'm> {
    pub fn new(measured: Option<&'m Measured>, verbose: bool) -> Self {
        Builder {
            d: Deparser::default(),
            measured,
            verbose,
            shown: Vec::new(),
        }
    }

    fn actual<T>(&self, at: &T, part: Part) -> Option<(u64, u64)> {
        self.measured.map(|m| m.actual(at, part))
    }

    /// The subqueries the expressions of `n` met, as its subplans.
    pub fn attach_subs(&mut self, n: &mut Node) {
        for (k, s) in self.d.take_subs() {
            let sub = subplan_node(self, s);
            let word = super::deparse::sub_word(s);
            let (rel, name) = (word, format!("{word} {k}"));
            n.named_child(rel, name, sub);
        }
    }
}

fn subplan_node<'p>(b: &mut Builder<'p, '_>, s: &'p SubPlan) -> Node {
    let mut n = query_node(b, &s.plan);
    // A correlated subquery with a grouped form (query/decorrelate.rs):
    // that plan too, which answers the rows after the first few.
    if let Some(g) = &s.grouped {
        let how = match g.residual {
            Some(_) => {
                "rows found by its {} key column(s) in one run, then tested by the other conditions"
            }
            None => "value found by its {} key column(s) in one grouped run",
        };
        n.prop(
            "Grouped Pass",
            format!(
                "after {} rows, each row's {}",
                crate::query::decorrelate::PER_ROW_FIRST,
                how.replace("{}", &g.keys.len().to_string())
            ),
        );
        let grouped = query_node(b, &g.plan);
        n.child("Grouped", grouped);
    }
    n
}

/// The tree of a query plan.
pub fn query_node<'p>(b: &mut Builder<'p, '_>, plan: &'p QueryPlan) -> Node {
    let mut walked = false;
    let mut n = match &plan.body {
        Body::Select(sel) => {
            let (n, w) = select_node(b, sel, plan);
            walked = w;
            n
        }
        Body::Values(rows) => {
            let mut n = if rows.len() == 1 {
                Node::new("Result")
            } else {
                let mut n = Node::new("Values Scan");
                n.label = Some("Values Scan on \"*VALUES*\"".into());
                n.alias = Some("*VALUES*".into());
                n
            };
            n.rows = Some(rows.len() as u64);
            if b.verbose {
                let names: Vec<String> = Vec::new();
                let out: Vec<String> = rows
                    .first()
                    .map(|r| r.iter().map(|e| b.d.expr(e, &names)).collect())
                    .unwrap_or_default();
                n.list("Output", out);
            }
            b.attach_subs(&mut n);
            n
        }
        Body::SetOp {
            left,
            right,
            op,
            all,
            ..
        } => {
            let mut app = Node::new("Append");
            app.child("Member", query_node(b, left));
            app.child("Member", query_node(b, right));
            let cmd = match op {
                ast::SetOperator::Union => None,
                ast::SetOperator::Intersect => Some("Intersect"),
                _ => Some("Except"),
            };
            match (cmd, all) {
                (None, true) => app,
                (None, false) => {
                    let mut top = Node::new("Aggregate");
                    top.label = Some("HashAggregate".into());
                    top.strategy = Some("Hashed");
                    top.list(
                        "Group Key",
                        plan.columns.iter().map(|c| column(None, &c.name)).collect(),
                    );
                    app.under(top)
                }
                (Some(c), all) => {
                    let mut top = Node::new("SetOp");
                    let all = if *all { " All" } else { "" };
                    top.label = Some(format!("HashSetOp {c}{all}"));
                    top.strategy = Some("Hashed");
                    top.prop("Command", format!("{c}{all}"));
                    app.under(top)
                }
            }
        }
        Body::Recursive { anchor, step, .. } => {
            let mut n = Node::new("Recursive Union");
            n.child("Outer", query_node(b, anchor));
            n.child("Inner", query_node(b, step));
            n
        }
        Body::WorkTable(_) => Node::new("WorkTable Scan"),
    };
    if !plan.order.is_empty() && !walked {
        let mut s = Node::new("Sort");
        let keys = sort_keys(b, plan);
        s.list("Sort Key", keys);
        b.attach_subs(&mut s);
        n = n.under(s);
    }
    if plan.limit.is_some() || plan.offset.is_some() {
        let mut l = Node::new("Limit");
        let none: Vec<String> = Vec::new();
        if let Some(e) = &plan.limit {
            let c = b.d.expr(e, &none);
            l.prop("Row Count", c);
        }
        if let Some(e) = &plan.offset {
            let c = b.d.expr(e, &none);
            l.prop("Offset", c);
        }
        if plan.limit_mode.with_ties {
            l.prop("With Ties", "true");
        }
        if plan.limit_mode.percent {
            l.prop("Percent", "true");
        }
        b.attach_subs(&mut l);
        n = n.under(l);
    }
    n.actual = b.actual(plan, Part::Query);
    n
}

fn sort_keys<'p>(b: &mut Builder<'p, '_>, plan: &'p QueryPlan) -> Vec<String> {
    let input = match &plan.body {
        Body::Select(sel) => input_names(sel),
        _ => Vec::new(),
    };
    plan.order
        .iter()
        .map(|(k, desc, nulls_first)| {
            let mut s = match k {
                SortKey::Output(i) => plan
                    .columns
                    .get(*i)
                    .map(|c| column(None, &c.name))
                    .unwrap_or_default(),
                SortKey::Input(e) => b.d.expr(e, &input),
            };
            if *desc {
                s.push_str(" DESC");
                if !nulls_first {
                    s.push_str(" NULLS LAST");
                }
            } else if *nulls_first {
                s.push_str(" NULLS FIRST");
            }
            s
        })
        .collect()
}

/// The names of the row a SELECT's expressions after FROM read: the
/// FROM row, or after GROUP BY the keys then the aggregates.
fn input_names(sel: &SelectPlan) -> Vec<String> {
    let from = source_names(&sel.from, matches!(sel.from, Source::Join { .. }));
    match &sel.group {
        None => from,
        Some((keys, aggs)) => {
            let mut d = Deparser::default();
            let mut out: Vec<String> = keys.iter().map(|k| d.expr(k, &from)).collect();
            if sel.grouping_sets.is_some() {
                out.push("GROUPING SET".into());
            }
            for a in aggs {
                let name = format!("{:?}", a.kind).to_ascii_lowercase();
                let arg = match &a.arg {
                    Some(e) => d.expr(e, &from),
                    None => "*".into(),
                };
                let name = name.trim_end_matches("star").to_string();
                let distinct = if a.distinct { "DISTINCT " } else { "" };
                out.push(format!("{name}({distinct}{arg})"));
            }
            out
        }
    }
}

/// A SELECT's nodes; whether its ORDER BY is served by a walk.
fn select_node<'p>(
    b: &mut Builder<'p, '_>,
    sel: &'p SelectPlan,
    plan: &'p QueryPlan,
) -> (Node, bool) {
    let qualify = matches!(sel.from, Source::Join { .. });
    let names = source_names(&sel.from, qualify);
    let walk = sel.walk.as_deref().filter(|w| {
        b.measured
            .and_then(|m| m.get(*w, Part::Source))
            .is_none_or(|c| c.walked > 0 || c.sorted == 0)
    });
    let walked = walk.is_some();
    let mut n = match (walk, &sel.from) {
        (Some(w), Source::Table { table, filter, .. }) => walk_node(b, table, w, filter),
        _ => source_node(b, &sel.from, qualify),
    };
    if !sel.filter.is_empty() {
        let parts = b.d.all(&sel.filter, &names);
        let key = if matches!(sel.from, Source::Join { .. }) {
            "Join Filter"
        } else {
            "Filter"
        };
        n.cond(key, parts);
        b.attach_subs(&mut n);
        // Its count was taken before this filter.
        if n.actual.is_some() {
            n.actual = None;
        }
    }
    if let (Some((keys, _)), Some(sets)) = (&sel.group, &sel.grouping_sets) {
        // Grouping sets: a hash table per set (a set of no keys is one
        // group), shown as PostgreSQL shows a mixed aggregate.
        let mut g = Node::new("Aggregate");
        let all_hashed = sets.iter().all(|s| !s.is_empty());
        g.strategy = Some(if all_hashed { "Hashed" } else { "Mixed" });
        g.label = Some(
            if all_hashed {
                "HashAggregate"
            } else {
                "MixedAggregate"
            }
            .into(),
        );
        let k = b.d.all(keys, &names);
        for set in sets {
            if set.is_empty() {
                g.list("Group Key", vec!["()".into()]);
            } else {
                g.list("Hash Key", set.iter().map(|&i| k[i].clone()).collect());
            }
        }
        if let Some(h) = &sel.having {
            let grouped = input_names(sel);
            let c = b.d.expr(h, &grouped);
            g.cond("Filter", vec![c]);
        }
        b.attach_subs(&mut g);
        g.actual = b.actual(sel, Part::Groups);
        n = n.under(g);
    } else if let Some((keys, _)) = &sel.group {
        let mut g = Node::new("Aggregate");
        if keys.is_empty() {
            g.strategy = Some("Plain");
        } else {
            g.strategy = Some("Hashed");
            g.label = Some("HashAggregate".into());
            let k = b.d.all(keys, &names);
            g.list("Group Key", k);
        }
        if let Some(h) = &sel.having {
            let grouped = input_names(sel);
            let c = b.d.expr(h, &grouped);
            g.cond("Filter", vec![c]);
        }
        b.attach_subs(&mut g);
        g.actual = b.actual(sel, Part::Groups);
        n = n.under(g);
    }
    if sel.window.is_some() {
        n = n.under(Node::new("WindowAgg"));
    }
    if sel.srf.is_some() {
        n = n.under(Node::new("ProjectSet"));
    }
    // Written always, so the subqueries of the select list are shown.
    let input = input_names(sel);
    let out = b.d.all(&sel.projection, &input);
    if b.verbose {
        // First, as PostgreSQL shows it.
        n.props.insert(0, ("Output", super::Prop::List(out)));
    }
    b.attach_subs(&mut n);
    if sel.distinct_on.is_some() {
        // The first row of each DISTINCT ON key, in ORDER BY order.
        n = n.under(Node::new("Unique"));
    }
    if sel.distinct {
        let mut u = Node::new("Aggregate");
        u.label = Some("HashAggregate".into());
        u.strategy = Some("Hashed");
        u.list(
            "Group Key",
            plan.columns.iter().map(|c| column(None, &c.name)).collect(),
        );
        n = n.under(u);
    }
    (n, walked)
}

/// The names of a source's row, qualified by relation when asked.
pub fn source_names(s: &Source, qualify: bool) -> Vec<String> {
    match s {
        Source::Table { table, .. } => table_names(table, qualify),
        Source::Derived { plan, label, .. } => plan
            .columns
            .iter()
            .map(|c| column(qualify.then_some(label.as_str()), &c.name))
            .collect(),
        Source::SysView { view, .. } => view
            .columns()
            .iter()
            .map(|(n, _)| column(None, n))
            .collect(),
        Source::Join { left, right, .. } => {
            let mut v = source_names(left, qualify);
            v.extend(source_names(right, qualify));
            v
        }
        other => (1..=source_width(other))
            .map(|i| format!("column{i}"))
            .collect(),
    }
}

pub fn table_names(table: &Table, qualify: bool) -> Vec<String> {
    table
        .def
        .columns
        .iter()
        .map(|c| column(qualify.then_some(table.name()), &c.name))
        .collect()
}

/// The name PostgreSQL gives a table's primary key index.
pub fn pkey_name(table: &Table) -> String {
    format!("{}_pkey", table.name())
}

fn index_name(table: &Table, ix: Option<usize>) -> String {
    match ix {
        None => pkey_name(table),
        Some(n) => table
            .indexes
            .get(n)
            .map(|i| i.def.name.clone())
            .unwrap_or_default(),
    }
}

fn key_columns(table: &Table, ix: Option<usize>) -> Vec<usize> {
    match ix {
        None => table.def.primary_key.clone(),
        Some(n) => table
            .indexes
            .get(n)
            .map(|i| i.def.columns.clone())
            .unwrap_or_default(),
    }
}

/// An index condition: equalities on the key's leading columns, then the
/// range's bounds on the next.
fn key_cond<'p>(
    d: &mut Deparser<'p>,
    names: &[String],
    cols: &[usize],
    eq: &'p [Expr],
    range: Option<&'p KeyRange>,
) -> Vec<String> {
    let none: Vec<String> = Vec::new();
    let name = |i: usize| cols.get(i).and_then(|&c| names.get(c)).cloned();
    let mut parts = Vec::new();
    for (i, e) in eq.iter().enumerate() {
        let v = d.expr(e, &none);
        parts.push(format!("({} = {v})", name(i).unwrap_or_default()));
    }
    if let Some(r) = range {
        let mut at = eq.len();
        for e in &r.prefix {
            let v = d.expr(e, &none);
            parts.push(format!("({} = {v})", name(at).unwrap_or_default()));
            at += 1;
        }
        let c = name(at).unwrap_or_default();
        if let Some((e, inc)) = &r.lo {
            let v = d.expr(e, &none);
            parts.push(format!("({c} {} {v})", if *inc { ">=" } else { ">" }));
        }
        if let Some((e, inc)) = &r.hi {
            let v = d.expr(e, &none);
            parts.push(format!("({c} {} {v})", if *inc { "<=" } else { "<" }));
        }
    }
    parts
}

fn scan_base(table: &Table, kind: &str, index: Option<String>) -> Node {
    let mut n = Node::new(kind);
    n.label = Some(match &index {
        Some(ix) => format!("{kind} using {ix} on {}", table.name()),
        None => format!("{kind} on {}", table.name()),
    });
    n.relation = Some(table.name().to_string());
    n.alias = Some(table.name().to_string());
    n.index = index;
    if kind == "Index Scan" {
        n.scan_direction = Some("Forward");
    }
    n
}

fn walk_node<'p>(
    b: &mut Builder<'p, '_>,
    table: &Table,
    w: &'p OrderedWalk,
    filter: &'p [Expr],
) -> Node {
    let names = table_names(table, false);
    let cols = key_columns(table, w.index);
    let mut n = scan_base(table, "Index Scan", Some(index_name(table, w.index)));
    if w.reverse {
        n.scan_direction = Some("Backward");
        n.label = Some(format!(
            "Index Scan Backward using {} on {}",
            index_name(table, w.index),
            table.name()
        ));
    }
    let cond = key_cond(&mut b.d, &names, &cols, &w.eq, w.range.as_deref());
    n.cond("Index Cond", cond);
    let f = b.d.all(filter, &names);
    n.cond("Filter", f);
    b.attach_subs(&mut n);
    n
}

/// The node of one FROM source.
pub fn source_node<'p>(b: &mut Builder<'p, '_>, s: &'p Source, qualify: bool) -> Node {
    let mut n = match s {
        Source::Single => Node::new("Result"),
        Source::Table {
            table,
            lookup,
            range,
            index,
            filter,
        } => table_node(
            b,
            table,
            TablePath {
                lookup: lookup.as_deref(),
                range: range.as_deref(),
                index: index.as_deref(),
                filter,
            },
            qualify,
        ),
        Source::Derived {
            plan,
            filter,
            shared,
            label,
        } => {
            let inner_names: Vec<String> = plan
                .columns
                .iter()
                .map(|c| column(qualify.then_some(label.as_str()), &c.name))
                .collect();
            let mut n;
            if *shared {
                n = Node::new("CTE Scan");
                n.label = Some(format!("CTE Scan on {label}"));
                n.relation = Some(label.clone());
                n.alias = Some(label.clone());
                let key = Arc::as_ptr(plan) as usize;
                if !b.shown.contains(&key) {
                    b.shown.push(key);
                    let q = query_node(b, plan);
                    n.named_child("InitPlan", format!("CTE {label}"), q);
                }
            } else {
                n = Node::new("Subquery Scan");
                n.label = Some(format!("Subquery Scan on {label}"));
                n.alias = Some(label.clone());
                let q = query_node(b, plan);
                n.child("Subquery", q);
            }
            let f = b.d.all(filter, &inner_names);
            n.cond("Filter", f);
            n
        }
        Source::SysView { filter, view, .. } => {
            let names = source_names(s, false);
            let mut n = Node::new("Function Scan");
            if let Some(oid) = view.table_oid() {
                n.prop("Relation OID", oid.to_string());
            }
            let f = b.d.all(filter, &names);
            n.cond("Filter", f);
            n
        }
        Source::Srf { filter, .. }
        | Source::Unnest { filter, .. }
        | Source::Ancestors { filter, .. }
        | Source::JsonRows { filter, .. } => {
            let names = source_names(s, false);
            let mut n = Node::new("Function Scan");
            let f = b.d.all(filter, &names);
            n.cond("Filter", f);
            n
        }
        Source::Ordinality { inner, filter } => {
            let names = source_names(s, false);
            let mut n = source_node(b, inner, false);
            let f = b.d.all(filter, &names);
            n.cond("Filter", f);
            n
        }
        Source::Join {
            left,
            right,
            kind,
            keys,
            on,
            probe,
            lateral,
            ..
        } => {
            let mut n = join_node(b, s, left, right, kind, keys, on, probe.as_deref(), qualify);
            if lateral.is_some() {
                n.prop("Lateral", "the inner side runs once per outer row");
            }
            n
        }
    };
    // The planner's estimate where the rows are not known exactly.
    if n.rows.is_none() {
        n.rows = Some(crate::query::estimate::rows(s).round() as u64);
    }
    b.attach_subs(&mut n);
    n.actual = b.actual(s, Part::Source);
    n
}

/// How a table's rows are found (see `Source::Table`).
pub struct TablePath<'p> {
    pub lookup: Option<&'p [Expr]>,
    pub range: Option<&'p KeyRange>,
    pub index: Option<&'p IndexPath>,
    pub filter: &'p [Expr],
}

/// The scan node of a table read through `path`.
pub fn table_node<'p>(
    b: &mut Builder<'p, '_>,
    table: &Table,
    path: TablePath<'p>,
    qualify: bool,
) -> Node {
    let names = table_names(table, qualify);
    let pk = &table.def.primary_key;
    let mut n = if let Some(key) = path.lookup {
        let mut n = scan_base(table, "Index Scan", Some(pkey_name(table)));
        let c = key_cond(&mut b.d, &names, pk, key, None);
        n.cond("Index Cond", c);
        n.rows = Some(1);
        n
    } else if let Some(ip) = path.index {
        index_path_node(b, table, ip, &names)
    } else if let Some(r) = path.range {
        let mut n = scan_base(table, "Index Scan", Some(pkey_name(table)));
        let c = key_cond(&mut b.d, &names, pk, &[], Some(r));
        n.cond("Index Cond", c);
        n
    } else {
        let mut n = scan_base(table, "Seq Scan", None);
        if path.filter.is_empty() {
            n.rows = Some(table.len() as u64);
        }
        n
    };
    let f = b.d.all(path.filter, &names);
    n.cond("Filter", f);
    b.attach_subs(&mut n);
    n
}

fn index_path_node<'p>(
    b: &mut Builder<'p, '_>,
    table: &Table,
    ip: &'p IndexPath,
    names: &[String],
) -> Node {
    match ip {
        IndexPath::Search(s) => {
            let mut n = scan_base(table, "Index Scan", Some(index_name(table, Some(s.index))));
            let cols = key_columns(table, Some(s.index));
            let c = key_cond(&mut b.d, names, &cols, &s.eq, s.range.as_deref());
            n.cond("Index Cond", c);
            n
        }
        IndexPath::Union(probes) => {
            let mut or = Node::new("BitmapOr");
            let pk = &table.def.primary_key;
            for p in probes {
                let (ix, c) = match p {
                    Probe::Key(k) => (None, key_cond(&mut b.d, names, pk, k, None)),
                    Probe::Range(r) => (None, key_cond(&mut b.d, names, pk, &[], Some(r))),
                    Probe::Index(s) => {
                        let cols = key_columns(table, Some(s.index));
                        (
                            Some(s.index),
                            key_cond(&mut b.d, names, &cols, &s.eq, s.range.as_deref()),
                        )
                    }
                };
                let name = index_name(table, ix);
                let mut m = Node::new("Bitmap Index Scan");
                m.label = Some(format!("Bitmap Index Scan on {name}"));
                m.index = Some(name);
                m.cond("Index Cond", c);
                or.child("Member", m);
            }
            or.under(scan_base(table, "Bitmap Heap Scan", None))
        }
        IndexPath::Any { col, array, .. } => {
            let mut n = scan_base(table, "Bitmap Heap Scan", None);
            let none: Vec<String> = Vec::new();
            let a = b.d.expr(array, &none);
            let c = names.get(*col).cloned().unwrap_or_default();
            n.prop("Recheck Cond", format!("({c} = ANY ({a}))"));
            n.prop(
                "Index Choice",
                "per array element at run time (the primary key or an index on the column)",
            );
            n
        }
    }
}

/// PostgreSQL's Nested Loop: `Nested Loop` for an inner join, `Nested
/// Loop Left Join` for the others.
fn nested_loop(word: &str) -> Node {
    let mut n = Node::new("Nested Loop");
    if !word.is_empty() {
        n.label = Some(format!("Nested Loop{word} Join"));
    }
    n
}

#[allow(clippy::too_many_arguments)]
fn join_node<'p>(
    b: &mut Builder<'p, '_>,
    s: &'p Source,
    left: &'p Source,
    right: &'p Source,
    kind: &JoinKind,
    keys: &'p [(Expr, Expr)],
    on: &'p [Expr],
    probe: Option<&'p JoinProbe>,
    qualify: bool,
) -> Node {
    let (jt, word) = match kind {
        JoinKind::Inner => ("Inner", ""),
        JoinKind::Left => ("Left", " Left"),
        JoinKind::Right => ("Right", " Right"),
        JoinKind::Full => ("Full", " Full"),
    };
    let lnames = source_names(left, qualify);
    let rnames = source_names(right, qualify);
    let mut all = lnames.clone();
    all.extend(rnames.iter().cloned());
    let counts = b.measured.and_then(|m| m.get(s, Part::Source));
    // The run-time choice (see `probe.rs`): as measured, else as planned.
    let searched = probe.is_some() && counts.is_none_or(|c| c.searched > 0 || c.hashed == 0);
    let outer = source_node(b, left, qualify);
    let mut n;
    if let (true, Some(pr), Source::Table { table, filter, .. }) = (searched, probe, right) {
        n = nested_loop(word);
        let cols = key_columns(table, pr.index);
        let mut inner = scan_base(table, "Index Scan", Some(index_name(table, pr.index)));
        let mut cond = Vec::new();
        for (i, v) in pr.eq.iter().enumerate() {
            let c = cols.get(i).and_then(|&c| rnames.get(c)).cloned();
            let v = match v {
                ProbeValue::Key(k) => b.d.expr(&keys[*k].0, &lnames),
                ProbeValue::Const(e) => b.d.expr(e, &Vec::new()),
            };
            cond.push(format!("({} = {v})", c.unwrap_or_default()));
        }
        inner.cond("Index Cond", cond);
        // Rows per search: the join's estimate over the outer rows.
        let per = crate::query::estimate::rows(s) / crate::query::estimate::rows(left);
        inner.rows = Some(per.max(1.0).round() as u64);
        let f = b.d.all(filter, &rnames);
        inner.cond("Filter", f);
        b.attach_subs(&mut inner);
        inner.actual = b.actual(right, Part::Source);
        let mut jf: Vec<String> = keys
            .iter()
            .map(|(l, r)| {
                let (l, r) = (b.d.expr(l, &lnames), b.d.expr(r, &rnames));
                format!("({l} = {r})")
            })
            .collect();
        jf.extend(b.d.all(on, &all));
        n.cond("Join Filter", jf);
        n.prop(
            "Run-time Choice",
            format!(
                "index search per outer row while {} has at least 4 times the outer rows, else Hash Join",
                table.name()
            ),
        );
        n.child("Outer", outer);
        n.child("Inner", inner);
    } else if !keys.is_empty() {
        n = Node::new("Hash Join");
        n.label = Some(format!("Hash{word} Join"));
        let hc: Vec<String> = keys
            .iter()
            .map(|(l, r)| {
                let (l, r) = (b.d.expr(l, &lnames), b.d.expr(r, &rnames));
                format!("({l} = {r})")
            })
            .collect();
        n.cond("Hash Cond", hc);
        let jf = b.d.all(on, &all);
        n.cond("Join Filter", jf);
        if let (Some(_), Source::Table { table, .. }) = (probe, right) {
            n.prop(
                "Run-time Choice",
                format!(
                    "Nested Loop with an index search per outer row while {} has at least 4 times the outer rows",
                    table.name()
                ),
            );
        }
        let inner = source_node(b, right, qualify);
        let mut hash = Node::new("Hash");
        hash.actual = inner.actual;
        n.child("Outer", outer);
        n.child("Inner", inner.under(hash));
    } else {
        n = nested_loop(word);
        let jf = b.d.all(on, &all);
        n.cond("Join Filter", jf);
        let inner = source_node(b, right, qualify);
        n.child("Outer", outer);
        n.child("Inner", inner);
    }
    n.join_type = Some(jt);
    b.attach_subs(&mut n);
    n.actual = b.actual(s, Part::Source);
    n
}
