//! GROUP BY's grouping sets: `GROUPING SETS (...)`, `ROLLUP (...)`,
//! `CUBE (...)` and `()`, mixed with plain items and nested as PostgreSQL
//! allows, expanded to a list of sets of grouping expressions; and
//! `GROUPING(...)`, which tells a group's rolled-up keys from real NULLs.
//!
//! Each input row feeds one group per set (the grouping's `Grouper`); a
//! grouped row holds every key (NULL where its set leaves the key out)
//! and, last, the index of its set, which `GROUPING` reads.

use super::*;

/// PostgreSQL's limits: sets in all, and elements of one CUBE.
const MAX_SETS: usize = 4096;
const MAX_CUBE: usize = 12;

/// GROUP BY's expressions (each once, in order of appearance) and, when
/// it has grouping sets, each set as positions among them.
pub(super) struct GroupingSpec {
    pub items: Vec<ast::Expr>,
    pub sets: Option<Vec<Vec<usize>>>,
}

/// The name of the grouped row's last key, its grouping set's index
/// (no expression is named so).
pub(super) const SET_KEY: &str = "\u{1}grouping set";

fn too_many() -> SqlError {
    SqlError::new(
        ErrorKind::StackDepth,
        format!("too many grouping sets present (maximum {MAX_SETS})"),
    )
}

struct Expander {
    items: Vec<ast::Expr>,
    names: Vec<String>,
}

impl Expander {
    fn index(&mut self, e: &ast::Expr) -> usize {
        let name = e.to_string();
        if let Some(i) = self.names.iter().position(|n| *n == name) {
            return i;
        }
        self.items.push(e.clone());
        self.names.push(name);
        self.items.len() - 1
    }

    /// The sets one item inside a grouping construct stands for.
    fn item(&mut self, e: &ast::Expr) -> Result<Vec<Vec<usize>>> {
        match e {
            ast::Expr::GroupingSets(elems) => {
                let mut out = Vec::new();
                for el in elems {
                    out.extend(self.product(el)?);
                    if out.len() > MAX_SETS {
                        return Err(too_many());
                    }
                }
                Ok(out)
            }
            ast::Expr::Rollup(groups) => {
                let groups = self.groups(groups)?;
                Ok((0..=groups.len())
                    .rev()
                    .map(|n| groups[..n].concat())
                    .collect())
            }
            ast::Expr::Cube(groups) => self.cube(groups),
            ast::Expr::Tuple(v) if v.is_empty() => Ok(vec![vec![]]),
            // Inside GROUPING SETS the constructs parse as calls.
            ast::Expr::Function(f) if f.over.is_none() && f.name.0.len() == 1 => {
                match crate::front::fname(f).as_str() {
                    name @ ("rollup" | "cube") => {
                        let groups: Vec<Vec<ast::Expr>> = crate::front::args_of(f)
                            .into_iter()
                            .map(|a| match crate::front::arg_expr(a) {
                                Some(ast::Expr::Tuple(v)) => Ok(v.clone()),
                                Some(ast::Expr::Nested(x)) => Ok(vec![(**x).clone()]),
                                Some(x) => Ok(vec![x.clone()]),
                                None => Err(SqlError::syntax(format!("bad argument to {name}"))),
                            })
                            .collect::<Result<_>>()?;
                        let rollup = if name == "rollup" {
                            ast::Expr::Rollup(groups)
                        } else {
                            ast::Expr::Cube(groups)
                        };
                        self.item(&rollup)
                    }
                    _ => Ok(vec![vec![self.index(e)]]),
                }
            }
            _ => Ok(vec![vec![self.index(e)]]),
        }
    }

    /// Each group of a ROLLUP or CUBE as key positions.
    fn groups(&mut self, groups: &[Vec<ast::Expr>]) -> Result<Vec<Vec<usize>>> {
        groups
            .iter()
            .map(|g| {
                let mut set = Vec::new();
                for e in g {
                    // Only expressions inside ROLLUP and CUBE, as PostgreSQL.
                    if matches!(
                        e,
                        ast::Expr::GroupingSets(_) | ast::Expr::Rollup(_) | ast::Expr::Cube(_)
                    ) {
                        return Err(SqlError::syntax(format!("syntax error at or near \"{e}\"")));
                    }
                    set.push(self.index(e));
                }
                Ok(set)
            })
            .collect()
    }

    fn cube(&mut self, groups: &[Vec<ast::Expr>]) -> Result<Vec<Vec<usize>>> {
        if groups.len() > MAX_CUBE {
            return Err(SqlError::new(
                ErrorKind::TooManyColumns,
                format!("CUBE is limited to {MAX_CUBE} elements"),
            ));
        }
        let groups = self.groups(groups)?;
        let n = groups.len();
        // Largest sets first, as ROLLUP's.
        let mut masks: Vec<u32> = (0..1u32 << n).collect();
        masks.sort_by_key(|m| std::cmp::Reverse(m.count_ones()));
        Ok(masks
            .into_iter()
            .map(|m| {
                (0..n)
                    .filter(|i| m & (1 << i) != 0)
                    .flat_map(|i| groups[i].iter().copied())
                    .collect()
            })
            .collect())
    }

    /// The sets of a list of items combined: each set of the first with
    /// each of the second, and so on.
    fn product(&mut self, items: &[ast::Expr]) -> Result<Vec<Vec<usize>>> {
        let mut acc: Vec<Vec<usize>> = vec![vec![]];
        for it in items {
            let sets = self.item(it)?;
            if acc.len().saturating_mul(sets.len()) > MAX_SETS {
                return Err(too_many());
            }
            acc = acc
                .iter()
                .flat_map(|a| {
                    sets.iter().map(move |s| {
                        let mut v = a.clone();
                        v.extend(s.iter().copied());
                        v
                    })
                })
                .collect();
        }
        Ok(acc)
    }
}

/// Expands GROUP BY's items.
pub(super) fn expand(group_by: &[ast::Expr]) -> Result<GroupingSpec> {
    // `GROUP BY (a, b)` is `GROUP BY a, b`.
    let mut flat = Vec::new();
    for e in group_by {
        match e {
            ast::Expr::Tuple(v) if !v.is_empty() => flat.extend(v.iter().cloned()),
            // `GROUP BY (a)` is `GROUP BY a`.
            ast::Expr::Nested(x) => {
                let mut x: &ast::Expr = x;
                while let ast::Expr::Nested(y) = x {
                    x = y;
                }
                flat.push(x.clone())
            }
            e => flat.push(e.clone()),
        }
    }
    let construct = |e: &ast::Expr| {
        matches!(
            e,
            ast::Expr::GroupingSets(_) | ast::Expr::Rollup(_) | ast::Expr::Cube(_)
        ) || matches!(e, ast::Expr::Tuple(v) if v.is_empty())
    };
    let mut x = Expander {
        items: Vec::new(),
        names: Vec::new(),
    };
    if !flat.iter().any(construct) {
        for e in &flat {
            x.index(e);
        }
        return Ok(GroupingSpec {
            items: x.items,
            sets: None,
        });
    }
    let mut sets = Vec::new();
    for s in x.product(&flat)? {
        let mut s = s;
        s.sort_unstable();
        s.dedup();
        sets.push(s);
    }
    Ok(GroupingSpec {
        items: x.items,
        sets: Some(sets),
    })
}

/// `GROUPING(a, b, ...)` over a grouped row: a bit per argument, the
/// last argument's lowest, set where the row's grouping set leaves that
/// key out. Each argument must be one of GROUP BY's expressions.
pub fn grouping_call(p: &mut Planner<'_>, f: &ast::Function) -> Result<Expr> {
    let Some(ctx) = p.agg.as_ref() else {
        return Err(SqlError::new(
            ErrorKind::GroupingError,
            "grouping operations are not allowed here",
        ));
    };
    let args = crate::front::args_of(f);
    if args.len() >= 32 {
        return Err(SqlError::new(
            ErrorKind::TooManyArguments,
            "GROUPING must have fewer than 32 arguments",
        ));
    }
    let mut keys = Vec::new();
    for a in &args {
        let e = crate::front::arg_expr(a)
            .ok_or_else(|| SqlError::syntax("bad argument to GROUPING"))?;
        let name = e.to_string();
        let k = ctx
            .group_keys
            .iter()
            .position(|k| *k == name)
            .ok_or_else(|| {
                SqlError::new(
                    ErrorKind::GroupingError,
                    "arguments to GROUPING must be grouping expressions of the associated query level",
                )
            })?;
        keys.push(k);
    }
    let int = |v: i64| Expr::Cast(Box::new(Expr::Lit(Value::Int(v))), DataType::Int);
    let Some(sets) = &ctx.sets else {
        return Ok(int(0));
    };
    let value = |set: &Vec<usize>| {
        keys.iter()
            .fold(0i64, |acc, k| (acc << 1) | i64::from(!set.contains(k)))
    };
    let values: Vec<i64> = sets.iter().map(value).collect();
    if values.iter().all(|v| *v == values[0]) {
        return Ok(int(values[0]));
    }
    let set_col = ctx
        .group_keys
        .iter()
        .position(|k| k == SET_KEY)
        .ok_or_else(|| SqlError::internal("grouping sets without their set key"))?;
    let arms = values
        .iter()
        .enumerate()
        .map(|(si, v)| (Expr::Lit(Value::Int(si as i64)), Expr::Lit(Value::Int(*v))))
        .collect();
    Ok(Expr::Cast(
        Box::new(Expr::Case(Some(Box::new(Expr::Col(set_col))), arms, None)),
        DataType::Int,
    ))
}
