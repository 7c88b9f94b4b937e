//! Equalities carried through join keys: with `c_w_id = w_id AND w_id = 5`
//! the customer side gets `c_w_id = 5` too, so each table's own filters
//! can choose its access path (a key lookup instead of a scan).
//!
//! Only between plain columns of tables joined by inner joins, and only
//! when the two columns' equality is exact: the same type, or integers of
//! any width. Then `a = b` (true) and `b = k` (true) make `a = k` true, so
//! the added filter passes every row the query returns: it never changes
//! the result, only how the rows are found.

use super::*;

#[derive(Default)]
struct Facts {
    /// A constant each column equals (a WHERE or ON conjunct of its table).
    consts: Vec<(usize, Expr)>,
    /// Join keys equating two table columns.
    pairs: Vec<(usize, usize)>,
    /// Each position's column type, for table columns.
    types: HashMap<usize, DataType>,
}

/// Adds the equalities the join keys imply to the tables of an inner-join
/// tree (see the module comment).
pub(super) fn propagate(source: &mut Source) {
    if !matches!(source, Source::Join { .. }) || !select::all_inner(source) {
        return;
    }
    let mut facts = Facts::default();
    collect(source, 0, &mut facts);
    if facts.pairs.is_empty() || facts.consts.is_empty() {
        return;
    }
    // Union-find over the columns the keys link.
    let mut parent: HashMap<usize, usize> = HashMap::new();
    fn root(parent: &mut HashMap<usize, usize>, c: usize) -> usize {
        let p = *parent.entry(c).or_insert(c);
        if p == c {
            return c;
        }
        let r = root(parent, p);
        parent.insert(c, r);
        r
    }
    for &(a, b) in &facts.pairs {
        let (ta, tb) = (facts.types.get(&a), facts.types.get(&b));
        if ta.zip(tb).is_some_and(|(x, y)| exact_equality(x, y)) {
            let (ra, rb) = (root(&mut parent, a), root(&mut parent, b));
            if ra != rb {
                parent.insert(ra, rb);
            }
        }
    }
    let members: Vec<usize> = parent.keys().copied().collect();
    let mut added = Vec::new();
    for &(c, ref k) in &facts.consts {
        if !parent.contains_key(&c) {
            continue;
        }
        let r = root(&mut parent, c);
        for &m in &members {
            if m != c
                && root(&mut parent, m) == r
                && !facts.consts.iter().any(|(x, _)| *x == m)
                && !added.iter().any(|(x, _): &(usize, Expr)| *x == m)
            {
                if let Some(k) = access::clone_const(k) {
                    added.push((m, k));
                }
            }
        }
    }
    for (m, k) in added {
        from::add_filter(
            source,
            Expr::Bin(BinOp::Eq, Box::new(Expr::Col(m)), Box::new(k)),
            0,
        );
    }
}

/// Whether equality between columns of these types is exact, so that it
/// is transitive with a comparison to a constant.
fn exact_equality(a: &DataType, b: &DataType) -> bool {
    use DataType::*;
    let int = |t: &DataType| matches!(t, SmallInt | Int | BigInt);
    a == b || (int(a) && int(b))
}

fn collect(s: &Source, base: usize, f: &mut Facts) {
    match s {
        Source::Table { table, filter, .. } => {
            for (k, c) in table.def.columns.iter().enumerate() {
                f.types.insert(base + k, c.data_type.clone());
            }
            for e in filter {
                if let Expr::Bin(BinOp::Eq, a, b) = e {
                    match (a.as_ref(), b.as_ref()) {
                        (Expr::Col(i), k) | (k, Expr::Col(i)) if !k.uses_row() => {
                            if let Some(k) = access::clone_const(k) {
                                f.consts.push((base + i, k));
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
        Source::Join {
            left, right, keys, ..
        } => {
            let lw = source_width(left);
            collect(left, base, f);
            collect(right, base + lw, f);
            for (l, r) in keys {
                if let (Expr::Col(a), Expr::Col(b)) = (l, r) {
                    f.pairs.push((base + a, base + lw + b));
                }
            }
        }
        _ => {}
    }
}
