//! Join order for inner joins: the relations of a FROM list (comma joins,
//! and INNER/CROSS JOIN chains whose ON conditions are plain comparisons)
//! are joined in the order the join predicates make cheapest, not in the
//! order they are written.
//!
//! The FROM list is first split into relations: each comma item, and each
//! relation of an inner-join chain (its ON conjuncts then join the WHERE
//! conjuncts, which for an inner join means the same). A chain with an
//! outer join, a USING or NATURAL join, or an ON condition holding a call
//! or a subquery stays one relation, planned as written. Each relation is
//! planned in the written order (so its errors and side effects come in
//! that order), then the predicates are resolved to the relations they
//! name, and the order is chosen:
//! - never a cross product while some remaining relation is linked to the
//!   ones joined so far by a predicate;
//! - up to [`DP_LIMIT`] relations, dynamic programming over subsets for the
//!   left-deep order whose intermediate results add up to the fewest rows;
//!   beyond, a greedy walk that adds the linked relation giving the
//!   smallest result;
//! - the written order is kept unless the chosen one is clearly cheaper
//!   (half the estimated rows), so a query whose order is already sensible
//!   keeps its plan.
//!
//! The row the joined relations make keeps the written order's columns for
//! `SELECT *` (each column's `star` rank), whatever their positions.

use super::from::*;
use super::*;
use super::{estimate, stats};
use std::ops::ControlFlow;

/// Relations up to which the order is searched exhaustively.
const DP_LIMIT: usize = 10;

/// One relation of the FROM list.
enum Unit<'a> {
    Factor(&'a TableFactor),
    /// A FROM item planned whole, as written.
    Whole(&'a ast::TableWithJoins),
}

/// The FROM item of a SELECT, in the best join order found, and the ON
/// conjuncts of the inner joins it dissolved (to be placed as WHERE's are).
pub(super) fn plan_from_where(
    p: &mut Planner<'_>,
    from: &[ast::TableWithJoins],
    selection: Option<&ast::Expr>,
    outer: &Option<Arc<Scope>>,
) -> Result<(Item, Vec<ast::Expr>)> {
    let Some((units, on)) = split(from) else {
        return Ok((plan_from(p, from, outer, &mut Vec::new())?, vec![]));
    };
    if units.len() < 3 {
        return Ok((plan_from(p, from, outer, &mut Vec::new())?, vec![]));
    }
    let mut items: Vec<Item> = Vec::with_capacity(units.len());
    // Per relation, what its lateral references reached of the relations
    // before it (positions in their columns, in the written order).
    let mut reached: Vec<Option<crate::expr::Reach>> = Vec::with_capacity(units.len());
    let mut before: Vec<ScopeCol> = Vec::new();
    for u in &units {
        let (item, reach) = match u {
            Unit::Factor(f) => super::lateral::plan_beside(
                p,
                &before,
                outer,
                super::lateral::may_be_lateral(f),
                &mut |p, o| plan_factor(p, f, o),
            )?,
            Unit::Whole(twj) => super::lateral::plan_beside(
                p,
                &before,
                outer,
                super::lateral::chain_may_be_lateral(twj),
                &mut |p, o| plan_from(p, std::slice::from_ref(*twj), o, &mut Vec::new()),
            )?,
        };
        before.extend(item.cols.iter().cloned());
        items.push(item);
        reached.push(reach);
    }
    let mut preds = Vec::new();
    if let Some(w) = selection {
        conjuncts(w, &mut preds);
    }
    let on_conjuncts: Vec<(usize, usize, ast::Expr)> = on
        .iter()
        .flat_map(|(first, at, e)| {
            let mut cs = Vec::new();
            conjuncts(e, &mut cs);
            cs.into_iter().map(move |c| (*first, *at, c))
        })
        .collect();
    let mut graph = Graph::new(&items, &preds, &on_conjuncts);
    graph.lateral_after(&items, &reached);
    // An ON condition naming a relation outside its join is an error the
    // written order reports; so is one of a relation not all-inner.
    let reorder =
        graph.on_ok && items.len() <= 128 && items.iter().all(|i| select::all_inner(&i.source));
    let written: Vec<usize> = (0..items.len()).collect();
    let order = if reorder {
        graph.best_order()
    } else {
        written.clone()
    };
    if order == written {
        return Ok((
            written_order(p, items, &reached, &units, from, outer)?,
            vec![],
        ));
    }
    let moved: Vec<ast::Expr> = on_conjuncts.into_iter().map(|(_, _, e)| e).collect();
    Ok((join_in_order(p, items, &reached, &order, outer)?, moved))
}

/// The relations of `from`, and the ON conditions of the inner joins split
/// apart (with the index of their chain's first relation and their own);
/// `None` when there is nothing to reorder.
#[allow(clippy::type_complexity)]
fn split(from: &[ast::TableWithJoins]) -> Option<(Vec<Unit<'_>>, Vec<(usize, usize, ast::Expr)>)> {
    let mut units = Vec::new();
    let mut on = Vec::new();
    for twj in from {
        let dissolves = twj.joins.iter().all(|j| {
            use ast::JoinOperator as J;
            match &j.join_operator {
                J::Join(c) | J::Inner(c) => match c {
                    ast::JoinConstraint::On(e) => plain(e),
                    ast::JoinConstraint::None => true,
                    _ => false,
                },
                J::CrossJoin(_) => true,
                _ => false,
            }
        });
        if !dissolves {
            units.push(Unit::Whole(twj));
            continue;
        }
        let first = units.len();
        units.push(Unit::Factor(&twj.relation));
        for j in &twj.joins {
            units.push(Unit::Factor(&j.relation));
            use ast::JoinOperator as J;
            if let J::Join(ast::JoinConstraint::On(e)) | J::Inner(ast::JoinConstraint::On(e)) =
                &j.join_operator
            {
                on.push((first, units.len() - 1, e.clone()));
            }
        }
    }
    (units.len() >= 3).then_some((units, on))
}

/// Whether an ON condition is made only of columns, constants and
/// operators (no call, no subquery: their errors name the JOIN clause).
fn plain(e: &ast::Expr) -> bool {
    let found = ast::visit_expressions(e, |x| match x {
        ast::Expr::Function(_)
        | ast::Expr::Subquery(_)
        | ast::Expr::Exists { .. }
        | ast::Expr::InSubquery { .. } => ControlFlow::Break(()),
        _ => ControlFlow::Continue(()),
    });
    found.is_continue()
}

/// The FROM item as `plan_from` builds it, from relations planned already.
fn written_order(
    p: &mut Planner<'_>,
    items: Vec<Item>,
    reached: &[Option<crate::expr::Reach>],
    units: &[Unit<'_>],
    from: &[ast::TableWithJoins],
    outer: &Option<Arc<Scope>>,
) -> Result<Item> {
    let mut items = items.into_iter();
    let mut acc: Option<Item> = None;
    let mut k = 0;
    // A lateral relation joins the ones before it as they were planned.
    let lateral = |k: usize, left: &Item| {
        reached[k]
            .as_ref()
            .map(|r| super::lateral::Lateral::in_place(r, left.cols.len()))
    };
    for twj in from {
        let first = items.next().expect("one item per relation");
        let whole = matches!(units[k], Unit::Whole(_));
        acc = Some(match acc {
            None => first,
            Some(left) => {
                let lat = lateral(k, &left);
                join(p, left, first, JoinKind::Inner, None, outer, lat)?
            }
        });
        k += 1;
        if whole {
            continue;
        }
        for j in &twj.joins {
            let right = items.next().expect("one item per relation");
            use ast::JoinOperator as J;
            let c = match &j.join_operator {
                J::Join(c) | J::Inner(c) => Some(c),
                _ => None,
            };
            let left = acc.take().expect("a left side");
            let lat = lateral(k, &left);
            acc = Some(join(p, left, right, JoinKind::Inner, c, outer, lat)?);
            k += 1;
        }
    }
    Ok(acc.expect("three relations or more"))
}

/// A left-deep chain of inner joins over `items` in `order`, whose columns
/// keep the written order's places in `SELECT *`.
fn join_in_order(
    p: &mut Planner<'_>,
    items: Vec<Item>,
    reached: &[Option<crate::expr::Reach>],
    order: &[usize],
    outer: &Option<Arc<Scope>>,
) -> Result<Item> {
    let widths: Vec<usize> = items.iter().map(|i| i.cols.len()).collect();
    let stars: Vec<Vec<usize>> = items.iter().map(|i| star_order(&i.cols)).collect();
    // Where each relation's columns start in the written order's row.
    let starts: Vec<usize> = widths
        .iter()
        .scan(0, |at, w| {
            let s = *at;
            *at += w;
            Some(s)
        })
        .collect();
    let mut slots: Vec<Option<Item>> = items.into_iter().map(Some).collect();
    let mut offset = vec![0usize; slots.len()];
    let mut acc: Option<Item> = None;
    let mut at = 0;
    for &u in order {
        let item = slots[u].take().expect("each relation once");
        // A lateral relation reads the written order's columns before it:
        // where each one it reads now is (the order put them all before).
        let lat = reached[u].as_ref().map(|r| {
            let map = r
                .cols
                .iter()
                .map(|&c| {
                    let v = starts.iter().rposition(|&s| s <= c).expect("a relation");
                    (c, offset[v] + c - starts[v])
                })
                .collect();
            Box::new(super::lateral::Lateral {
                width: starts[u],
                map: Some(map),
                enclosing: r.beyond,
            })
        });
        offset[u] = at;
        at += widths[u];
        acc = Some(match acc {
            None => item,
            Some(left) => join(p, left, item, JoinKind::Inner, None, outer, lat)?,
        });
    }
    let mut item = acc.expect("three relations or more");
    let mut rank = 0;
    for (u, star) in stars.iter().enumerate() {
        for &i in star {
            item.cols[offset[u] + i].star = rank;
            rank += 1;
        }
    }
    Ok(item)
}

/// What a predicate tells about the relations it names.
#[derive(Debug)]
enum Pred {
    /// `a = b` between columns of two relations (relation, column) each.
    Equi((usize, usize), (usize, usize)),
    /// `column = constant` on one relation, with the constant's value
    /// when it is a literal.
    EqConst(usize, usize, Option<Value>),
    /// Anything else over these relations.
    Other(Vec<usize>),
}

/// The relations, their estimated rows, and the predicates linking them.
struct Graph {
    /// Rows each relation gives after its own filters.
    rows: Vec<f64>,
    /// Predicates over two relations or more, as (relations bitmask,
    /// selectivity).
    links: Vec<(u128, f64)>,
    /// Relations linked to each (bitmask of those sharing a predicate).
    near: Vec<u128>,
    n: usize,
    /// Every ON conjunct names only relations of its chain up to its join.
    on_ok: bool,
    /// Per relation, the relations a lateral one reads (it must follow
    /// them).
    needs: Vec<u128>,
}

/// Selectivity of a comparison other than equality (PostgreSQL's default
/// for an inequality, a third).
const OTHER_SEL: f64 = 1.0 / 3.0;
/// Selectivity of `column = constant` on a column not a key.
const EQ_SEL: f64 = 0.1;

impl Graph {
    fn new(items: &[Item], preds: &[ast::Expr], on: &[(usize, usize, ast::Expr)]) -> Graph {
        let n = items.len();
        // Where each relation's columns start in the written order's row.
        let mut starts = Vec::with_capacity(n);
        let mut cols = Vec::new();
        for it in items {
            starts.push(cols.len());
            cols.extend(it.cols.iter().cloned());
        }
        let scope = Scope::new(cols);
        let unit_of = |i: usize| starts.iter().rposition(|&s| s <= i).expect("a relation");
        let resolve = |e: &ast::Expr| -> Option<(usize, usize)> {
            let (t, name) = crate::expr::ident_parts(strip(e));
            if name.is_empty() {
                return None;
            }
            let (d, i) = scope.resolve(t.as_deref(), &name).ok()?;
            (d == 0).then(|| {
                let u = unit_of(i);
                (u, i - starts[u])
            })
        };
        let classify = |e: &ast::Expr| -> Option<Pred> {
            // Relations named; a subquery's columns are its own.
            let mut units: Vec<usize> = Vec::new();
            let mut sub = false;
            let _ = ast::visit_expressions(e, |x| {
                match x {
                    ast::Expr::Subquery(_)
                    | ast::Expr::Exists { .. }
                    | ast::Expr::InSubquery { .. } => sub = true,
                    ast::Expr::Identifier(_) | ast::Expr::CompoundIdentifier(_) => {
                        if let Some((u, _)) = resolve(x) {
                            if !units.contains(&u) {
                                units.push(u);
                            }
                        }
                    }
                    _ => {}
                }
                ControlFlow::<()>::Continue(())
            });
            if sub || units.is_empty() {
                return None;
            }
            if let ast::Expr::BinaryOp {
                left,
                op: ast::BinaryOperator::Eq,
                right,
            } = strip(e)
            {
                match (resolve(left), resolve(right)) {
                    (Some(a), Some(b)) if a.0 != b.0 => return Some(Pred::Equi(a, b)),
                    (Some(a), None) if units.len() == 1 && constant(right) => {
                        return Some(Pred::EqConst(a.0, a.1, literal(right)))
                    }
                    (None, Some(b)) if units.len() == 1 && constant(left) => {
                        return Some(Pred::EqConst(b.0, b.1, literal(left)))
                    }
                    _ => {}
                }
            }
            Some(Pred::Other(units))
        };
        let mut on_ok = true;
        for (first, at, e) in on {
            let _ = ast::visit_expressions(e, |x| {
                if let ast::Expr::Identifier(_) | ast::Expr::CompoundIdentifier(_) = x {
                    match resolve(x) {
                        Some((u, _)) if u >= *first && u <= *at => {}
                        _ => on_ok = false,
                    }
                }
                ControlFlow::<()>::Continue(())
            });
        }
        let classified: Vec<Pred> = preds
            .iter()
            .chain(on.iter().map(|(_, _, e)| e))
            .filter_map(classify)
            .collect();

        let base: Vec<f64> = items.iter().map(|i| estimate::rows(&i.source)).collect();
        let mut rows = base.clone();
        let mut fixed: Vec<Vec<usize>> = vec![Vec::new(); n];
        let mut links = Vec::new();
        let mut near = vec![0u128; n];
        for pr in &classified {
            match pr {
                Pred::EqConst(u, c, v) => {
                    if !fixed[*u].contains(c) {
                        fixed[*u].push(*c);
                        rows[*u] *= eq_selectivity(&items[*u].source, *c, v.as_ref(), base[*u]);
                    }
                }
                Pred::Other(us) if us.len() == 1 => rows[us[0]] *= OTHER_SEL,
                Pred::Other(us) => {
                    let mask = us.iter().fold(0u128, |m, &u| m | bit(u));
                    links.push((mask, OTHER_SEL));
                    for &u in us {
                        near[u] |= mask & !bit(u);
                    }
                }
                Pred::Equi((a, ca), (b, cb)) => {
                    let da = distinct(&items[*a].source, *ca, base[*a]);
                    let db = distinct(&items[*b].source, *cb, base[*b]);
                    links.push((bit(*a) | bit(*b), 1.0 / da.max(db).max(1.0)));
                    near[*a] |= bit(*b);
                    near[*b] |= bit(*a);
                }
            }
        }
        // A key fixed by constants gives at most one row.
        for u in 0..n {
            if key_fixed(&items[u].source, &fixed[u]) {
                rows[u] = rows[u].min(1.0);
            }
            rows[u] = rows[u].max(1.0);
        }
        Graph {
            rows,
            links,
            near,
            n,
            on_ok,
            needs: vec![0; n],
        }
    }

    /// Keeps each lateral relation after the relations it reads (which
    /// link it to them, as a join predicate would).
    fn lateral_after(&mut self, items: &[Item], reached: &[Option<crate::expr::Reach>]) {
        let mut starts = Vec::with_capacity(items.len());
        let mut at = 0;
        for it in items {
            starts.push(at);
            at += it.cols.len();
        }
        for (u, r) in reached.iter().enumerate() {
            let Some(r) = r else { continue };
            for &c in &r.cols {
                let v = starts.iter().rposition(|&s| s <= c).expect("a relation");
                self.needs[u] |= bit(v);
                self.near[u] |= bit(v);
                self.near[v] |= bit(u);
            }
        }
    }

    /// Whether `u` may join `set`: a lateral relation only after what it
    /// reads.
    fn ready(&self, u: usize, set: u128) -> bool {
        self.needs[u] & set == self.needs[u]
    }

    /// Estimated rows of the join of the relations in `set`.
    fn card(&self, set: u128) -> f64 {
        let mut c = 1.0;
        for u in 0..self.n {
            if set & bit(u) != 0 {
                c *= self.rows[u];
            }
        }
        for &(m, s) in &self.links {
            if m & set == m {
                c *= s;
            }
        }
        c.max(1.0)
    }

    /// Whether `u` shares a predicate with a relation of `set`.
    fn linked(&self, u: usize, set: u128) -> bool {
        self.near[u] & set != 0
    }

    /// Whether some relation outside `set` that may join it is linked to it.
    fn any_linked(&self, set: u128) -> bool {
        (0..self.n).any(|u| set & bit(u) == 0 && self.ready(u, set) && self.linked(u, set))
    }

    /// The sum of the intermediate results' rows of a left-deep `order`.
    fn cost(&self, order: &[usize]) -> f64 {
        let mut set = 0u128;
        let mut total = 0.0;
        for (k, &u) in order.iter().enumerate() {
            set |= bit(u);
            if k > 0 {
                total += self.card(set);
            }
        }
        total
    }

    /// Whether `order` forms a cross product that a linked relation could
    /// have avoided.
    fn avoidable_cross(&self, order: &[usize]) -> bool {
        let mut set = 0u128;
        for (k, &u) in order.iter().enumerate() {
            if k > 0 && !self.linked(u, set) && self.any_linked(set) {
                return true;
            }
            set |= bit(u);
        }
        false
    }

    fn best_order(&self) -> Vec<usize> {
        let written: Vec<usize> = (0..self.n).collect();
        let chosen = if self.n <= DP_LIMIT {
            self.dynamic()
        } else {
            self.greedy()
        };
        if !self.avoidable_cross(&written) && self.cost(&chosen) * 2.0 > self.cost(&written) {
            return written;
        }
        chosen
    }

    /// The cheapest left-deep order without avoidable cross products,
    /// by dynamic programming over the subsets.
    fn dynamic(&self) -> Vec<usize> {
        let n = self.n;
        let full = (1usize << n) - 1;
        let mut best: Vec<Option<(f64, usize)>> = vec![None; full + 1];
        let mut card = vec![0.0; full + 1];
        for (set, c) in card.iter_mut().enumerate().skip(1) {
            *c = self.card(set as u128);
        }
        for u in 0..n {
            if self.needs[u] == 0 {
                best[1 << u] = Some((0.0, u));
            }
        }
        for set in 1..=full {
            let Some((cost, _)) = best[set] else {
                continue;
            };
            let linked_exists = self.any_linked(set as u128);
            for u in 0..n {
                if set & (1 << u) != 0 || !self.ready(u, set as u128) {
                    continue;
                }
                if linked_exists && !self.linked(u, set as u128) {
                    continue;
                }
                let next = set | (1 << u);
                let c = cost + card[next];
                if best[next].is_none_or(|(b, _)| c < b) {
                    best[next] = Some((c, u));
                }
            }
        }
        let mut order = Vec::with_capacity(n);
        let mut set = full;
        while set != 0 {
            let (_, u) = best[set].expect("every subset reached");
            order.push(u);
            set &= !(1 << u);
        }
        order.reverse();
        order
    }

    /// A greedy order: the smallest relation first, then each time the
    /// linked relation whose join gives the fewest rows.
    fn greedy(&self) -> Vec<usize> {
        let mut order = Vec::with_capacity(self.n);
        let mut set = 0u128;
        while order.len() < self.n {
            let linked_exists = set != 0 && self.any_linked(set);
            let mut pick: Option<(f64, usize)> = None;
            for u in 0..self.n {
                if set & bit(u) != 0
                    || !self.ready(u, set)
                    || (linked_exists && !self.linked(u, set))
                {
                    continue;
                }
                let c = self.card(set | bit(u));
                if pick.is_none_or(|(b, _)| c < b) {
                    pick = Some((c, u));
                }
            }
            let (_, u) = pick.expect("a relation left");
            order.push(u);
            set |= bit(u);
        }
        order
    }
}

fn bit(u: usize) -> u128 {
    1u128 << (u % 128)
}

fn strip(e: &ast::Expr) -> &ast::Expr {
    match e {
        ast::Expr::Nested(inner) => strip(inner),
        e => e,
    }
}

/// A literal or a parameter.
fn constant(e: &ast::Expr) -> bool {
    match strip(e) {
        ast::Expr::Value(_) => true,
        ast::Expr::UnaryOp { expr, .. } => constant(expr),
        ast::Expr::Cast { expr, .. } => constant(expr),
        _ => false,
    }
}

/// A literal's value (numbers and strings; others are not compared with
/// the statistics).
fn literal(e: &ast::Expr) -> Option<Value> {
    match strip(e) {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::Number(n, _) => n
                .parse::<i64>()
                .map(Value::Int)
                .ok()
                .or_else(|| n.parse::<f64>().ok().map(Value::Float)),
            ast::Value::SingleQuotedString(s) => Some(Value::text(s)),
            _ => None,
        },
        ast::Expr::UnaryOp {
            op: ast::UnaryOperator::Minus,
            expr,
        } => match literal(expr)? {
            Value::Int(i) => Some(Value::Int(-i)),
            Value::Float(f) => Some(Value::Float(-f)),
            _ => None,
        },
        _ => None,
    }
}

/// The share of a relation's rows whose column `col` equals `v`: from the
/// column's statistics when ANALYZE gathered them, else a tenth.
fn eq_selectivity(s: &Source, col: usize, v: Option<&Value>, rows: f64) -> f64 {
    if let Source::Table { table, .. } = s {
        if let (Some(st), Some(c)) = (stats::of(table), table.def.columns.get(col)) {
            if let Some(cs) = st.column(&c.name) {
                return match v {
                    Some(v) => cs.eq_selectivity(v, rows),
                    None => (1.0 - cs.null_frac) / cs.distinct(rows),
                }
                .clamp(1.0 / rows.max(1.0), 1.0);
            }
        }
    }
    EQ_SEL
}

/// Distinct values of a relation's column: all its rows for a column that
/// is a key by itself, the statistics' count; otherwise a guess of half
/// the rows.
fn distinct(s: &Source, col: usize, rows: f64) -> f64 {
    if let Source::Table { table, .. } = s {
        if let Some(d) = estimate::column_distinct(table, col) {
            return d;
        }
    }
    (rows / 2.0).max(1.0)
}

/// Whether the columns `fixed` cover the primary key or a unique index of
/// a table.
fn key_fixed(s: &Source, fixed: &[usize]) -> bool {
    match s {
        Source::Table { table, .. } => estimate::key_covered(table, fixed),
        _ => false,
    }
}
