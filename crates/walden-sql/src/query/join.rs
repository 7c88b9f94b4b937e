//! Joining two FROM items: the ON condition, or the columns USING and
//! NATURAL merge (one column named unqualified, listed first by `*`, the
//! first non-NULL of both sides for FULL joins), and the order `*` lists
//! the joined columns in.

use super::from::*;
use super::*;

pub(super) fn join(
    p: &mut Planner<'_>,
    left: Item,
    right: Item,
    kind: JoinKind,
    constraint: Option<&ast::JoinConstraint>,
    outer: &Option<Arc<Scope>>,
    lateral: Option<Box<super::lateral::Lateral>>,
) -> Result<Item> {
    let lw = left.cols.len();
    let right_width = right.cols.len();
    let left_order = star_order(&left.cols);
    let right_order: Vec<usize> = star_order(&right.cols)
        .into_iter()
        .map(|i| lw + i)
        .collect();
    let mut cols = left.cols;
    cols.extend(right.cols.into_iter().map(|mut c| {
        for m in &mut c.merged {
            *m += lw;
        }
        c
    }));
    let mut on = Vec::new();
    let using: Vec<String> = match constraint {
        Some(ast::JoinConstraint::On(e)) => {
            let scope = Arc::new(Scope {
                cols: cols.clone(),
                parent: outer.clone(),
                reach: None,
            });
            let mut cs = Vec::new();
            conjuncts(e, &mut cs);
            p.window = window::WindowSlot::Refused("in JOIN conditions");
            let compiled = cs
                .iter()
                .map(|c| Expr::compile(p, &scope, c))
                .collect::<Result<Vec<_>>>();
            p.window = window::WindowSlot::Refused("here");
            on.extend(compiled?);
            Vec::new()
        }
        Some(ast::JoinConstraint::Using(names)) => {
            let mut seen: Vec<String> = Vec::new();
            for n in names {
                let n = object_last(n).to_ascii_lowercase();
                if seen.contains(&n) {
                    return Err(SqlError::new(
                        ErrorKind::DuplicateColumn,
                        format!("column name \"{n}\" appears more than once in USING clause"),
                    ));
                }
                seen.push(n);
            }
            seen
        }
        // NATURAL: the names both sides show, in the left side's order.
        Some(ast::JoinConstraint::Natural) => {
            let mut names: Vec<String> = Vec::new();
            for &i in &left_order {
                let c = &cols[i];
                let n = c.name.to_ascii_lowercase();
                if !c.hidden
                    && !names.contains(&n)
                    && right_order
                        .iter()
                        .any(|&j| !cols[j].hidden && cols[j].name.eq_ignore_ascii_case(&n))
                {
                    names.push(n);
                }
            }
            names
        }
        Some(ast::JoinConstraint::None) | None => Vec::new(),
    };
    // Each USING column: the two sides' columns become one, named
    // unqualified (the left one for inner and left joins, the right one
    // for right joins, the first non-NULL for full joins), listed first
    // by `*`; both stay reachable qualified.
    let mut first = Vec::new();
    for n in &using {
        let li = using_side(&cols, &left_order, n, "left")?;
        let ri = using_side(&cols, &right_order, n, "right")?;
        // Each side as named unqualified (a merged column of an inner join
        // is its COALESCE or cast), and the type both resolve to.
        let side = |i: usize| {
            let c: &ScopeCol = &cols[i];
            let mut args = vec![Expr::Col(i)];
            args.extend(c.merged.iter().map(|&m| Expr::Col(m)));
            let e = if args.len() == 1 {
                args.pop().expect("one")
            } else {
                Expr::Func(crate::functions::Func::Coalesce, args)
            };
            match &c.using_ty {
                Some(t) => (Expr::Cast(Box::new(e), t.clone()), t.clone()),
                None => (e, c.ty.clone()),
            }
        };
        let ((le, lt), (re, rt)) = (side(li), side(ri));
        let ty = super::common_type::using_type(&lt, &rt)?;
        // Both sides compare in the common type (a date's value is not a
        // timestamp's, also as a hash join's key).
        let to = |e: Expr, t: &DataType| {
            if std::mem::discriminant(t) == std::mem::discriminant(&ty) {
                e
            } else {
                Expr::Cast(Box::new(e), ty.clone())
            }
        };
        on.push(Expr::Bin(
            BinOp::Eq,
            Box::new(to(le, &lt)),
            Box::new(to(re, &rt)),
        ));
        let shown = match kind {
            JoinKind::Inner | JoinKind::Left => {
                cols[ri].hidden = true;
                li
            }
            JoinKind::Right => {
                cols[li].hidden = true;
                ri
            }
            JoinKind::Full => {
                let mut extra = vec![ri];
                extra.extend(cols[ri].merged.clone());
                cols[li].merged.extend(extra);
                cols[ri].hidden = true;
                li
            }
        };
        // Only a change of type casts: a column whose type differs from the
        // common one only by its modifier keeps its values as they are
        // (a cast to unbounded numeric would lose numeric(10,2)'s scale).
        let own = &cols[shown].ty;
        cols[shown].using_ty =
            (std::mem::discriminant(own) != std::mem::discriminant(&ty)).then_some(ty);
        first.push(shown);
    }
    let order: Vec<usize> = first
        .iter()
        .copied()
        .chain(
            left_order
                .into_iter()
                .chain(right_order)
                .filter(|i| !first.contains(i)),
        )
        .collect();
    for (rank, i) in order.into_iter().enumerate() {
        cols[i].star = rank;
    }
    let mut source = Source::Join {
        left: Box::new(left.source),
        right: Box::new(right.source),
        kind,
        keys: vec![],
        on: vec![],
        right_width,
        probe: None,
        lateral,
    };
    for c in on {
        place_on_join(&mut source, c, lw);
    }
    Ok(Item { source, cols })
}

/// Positions of `cols` in the order `SELECT *` lists them.
pub(super) fn star_order(cols: &[ScopeCol]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..cols.len()).collect();
    order.sort_by_key(|&i| cols[i].star);
    order
}

/// The one column of a join side (`side` lists its positions) that a USING
/// name finds unqualified.
fn using_side(cols: &[ScopeCol], side: &[usize], name: &str, which: &str) -> Result<usize> {
    let hits: Vec<usize> = side
        .iter()
        .copied()
        .filter(|&i| !cols[i].hidden && cols[i].name.eq_ignore_ascii_case(name))
        .collect();
    match hits.as_slice() {
        [one] => Ok(*one),
        [] => Err(SqlError::new(
            ErrorKind::UndefinedColumn,
            format!("column \"{name}\" specified in USING clause does not exist in {which} table"),
        )),
        _ => Err(SqlError::new(
            ErrorKind::AmbiguousColumn,
            format!("common column name \"{name}\" appears more than once in {which} table"),
        )),
    }
}
