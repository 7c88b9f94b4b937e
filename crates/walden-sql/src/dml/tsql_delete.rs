//! T-SQL's `DELETE target FROM source [WHERE ...]`: the rows of `target`
//! that the join of `source` (and WHERE) keeps. `target` names a table or
//! an alias of `source`; a table not in `source` joins it. Inner and cross
//! joins become PostgreSQL's `DELETE FROM target USING others WHERE
//! (join conditions) AND (where)`; outer joins are refused, since there an
//! unmatched target row is deleted too. Also the UPDATE form whose
//! meaning differs between the two languages.

use super::*;

pub(crate) fn normalize(d: &ast::Delete) -> Result<ast::Delete> {
    let [target] = d.tables.as_slice() else {
        return Err(SqlError::unsupported("DELETE of several tables"));
    };
    let source = match &d.from {
        ast::FromTable::WithFromKeyword(v) | ast::FromTable::WithoutKeyword(v) => v,
    };
    if d.using.is_some() {
        return Err(SqlError::unsupported("DELETE t FROM ... USING ..."));
    }
    let mut rels: Vec<ast::TableFactor> = Vec::new();
    let mut conds: Vec<ast::Expr> = Vec::new();
    for twj in source {
        rels.push(twj.relation.clone());
        for j in &twj.joins {
            match &j.join_operator {
                ast::JoinOperator::Inner(c) | ast::JoinOperator::Join(c) => match c {
                    ast::JoinConstraint::On(e) => conds.push(e.clone()),
                    ast::JoinConstraint::None => {}
                    _ => {
                        return Err(SqlError::unsupported(
                            "DELETE t FROM ... JOIN ... USING / NATURAL",
                        ))
                    }
                },
                ast::JoinOperator::CrossJoin(_) => {}
                _ => {
                    return Err(SqlError::unsupported(
                        "DELETE t FROM ... with an outer join",
                    ))
                }
            }
            rels.push(j.relation.clone());
        }
    }
    let name = object_last(target).to_ascii_lowercase();
    let named = |r: &ast::TableFactor| match r {
        ast::TableFactor::Table { name: n, alias, .. } => match alias {
            Some(a) => a.name.value.eq_ignore_ascii_case(&name),
            None => object_last(n).eq_ignore_ascii_case(&name),
        },
        _ => {
            matches!(r, ast::TableFactor::Derived { alias: Some(a), .. } if a.name.value.eq_ignore_ascii_case(&name))
        }
    };
    let mut hits: Vec<usize> = (0..rels.len()).filter(|&i| named(&rels[i])).collect();
    // The table's own name also names an aliased item of it (`DELETE t
    // FROM t AS x WHERE x.a = 2`): the rows deleted are the ones FROM
    // reads, as in SQL Server, not every row of a second copy joined to
    // them (which deleted the whole table).
    if hits.is_empty() {
        hits = (0..rels.len())
            .filter(|&i| {
                matches!(&rels[i], ast::TableFactor::Table { name: n, alias: Some(_), .. }
                    if object_last(n).eq_ignore_ascii_case(&name))
            })
            .collect();
    }
    let target_rel = match hits.as_slice() {
        [] => ast::TableFactor::Table {
            name: target.clone(),
            alias: None,
            args: None,
            with_hints: vec![],
            version: None,
            with_ordinality: false,
            partitions: vec![],
            json_path: None,
            sample: None,
            index_hints: vec![],
        },
        [k] => {
            let r = rels.remove(*k);
            if !matches!(r, ast::TableFactor::Table { .. }) {
                return Err(SqlError::unsupported(format!(
                    "DELETE {name} where {name} is not a table"
                )));
            }
            r
        }
        _ => {
            return Err(SqlError::new(
                ErrorKind::AmbiguousColumn,
                format!("The object name '{name}' is ambiguous in DELETE ... FROM."),
            ))
        }
    };
    let mut selection: Option<ast::Expr> = None;
    for c in conds.into_iter().chain(d.selection.clone()) {
        let c = ast::Expr::Nested(Box::new(c));
        selection = Some(match selection {
            None => c,
            Some(s) => ast::Expr::BinaryOp {
                left: Box::new(s),
                op: ast::BinaryOperator::And,
                right: Box::new(c),
            },
        });
    }
    let mut out = d.clone();
    out.tables = Vec::new();
    out.from = ast::FromTable::WithFromKeyword(vec![ast::TableWithJoins {
        relation: target_rel,
        joins: vec![],
    }]);
    out.using = (!rels.is_empty()).then(|| {
        rels.into_iter()
            .map(|relation| ast::TableWithJoins {
                relation,
                joins: vec![],
            })
            .collect()
    });
    out.selection = selection;
    Ok(out)
}

/// `UPDATE t SET ... FROM t AS x ...`: SQL Server reads FROM's `t` as the
/// row being updated, PostgreSQL as a second copy of the table joined to
/// every target row. Either answer would be wrong for half the users, so
/// the form is refused; `UPDATE t AS o ... FROM t AS x` (PostgreSQL's
/// self-join, which T-SQL cannot write) still runs.
pub(crate) fn refuse_self_join(t: &Table, from: &[ast::TableWithJoins]) -> Result<()> {
    let same = |r: &ast::TableFactor| {
        matches!(r, ast::TableFactor::Table { name, alias: Some(_), .. }
            if object_last(name).eq_ignore_ascii_case(t.name()))
    };
    let hit = from
        .iter()
        .any(|twj| same(&twj.relation) || twj.joins.iter().any(|j| same(&j.relation)));
    if hit {
        return Err(SqlError::unsupported(format!(
            "UPDATE {0} ... FROM {0} AS alias: SQL Server updates the FROM row, PostgreSQL joins a second copy; write UPDATE {0} AS o ... FROM {0} AS alias for the join",
            t.name()
        )));
    }
    Ok(())
}
