//! Functional dependencies of GROUP BY: a table's primary key, grouped by
//! every one of its columns, fixes the table's other columns within a
//! group, so they may be selected outside aggregates (PostgreSQL's rule).

use super::*;

/// The input columns (of the FROM row) that depend on the grouping `keys`
/// and are not keys themselves: the other columns of each table in FROM
/// whose whole primary key is among the keys as plain columns.
pub(super) fn dependent_columns(source: &Source, keys: &[Expr]) -> Vec<usize> {
    let grouped = |c: usize| keys.iter().any(|k| matches!(k, Expr::Col(x) if *x == c));
    let mut tables = Vec::new();
    tables_at(source, 0, &mut tables);
    let mut out = Vec::new();
    for (base, table) in tables {
        let pk = &table.def.primary_key;
        if pk.is_empty() || table.has_hidden_key() || !pk.iter().all(|&c| grouped(base + c)) {
            continue;
        }
        out.extend(
            (0..table.def.columns.len())
                .map(|c| base + c)
                .filter(|&c| !grouped(c)),
        );
    }
    out
}

/// The tables of a FROM tree with the position of their first column.
fn tables_at<'s>(s: &'s Source, base: usize, out: &mut Vec<(usize, &'s Table)>) {
    match s {
        Source::Table { table, .. } => out.push((base, table)),
        Source::Join { left, right, .. } => {
            tables_at(left, base, out);
            tables_at(right, base + source_width(left), out);
        }
        _ => {}
    }
}
