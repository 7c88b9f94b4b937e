//! Helpers the `sql_statements*` tests share: run SQL, take its rows, tag or error.

use walden_sql::{ErrorKind, SqlSession};

pub fn rows(s: &mut SqlSession, sql: &str) -> Vec<Vec<String>> {
    let mut res = s.execute_batch(sql);
    let last = res.pop().unwrap_or_else(|| panic!("no result for {sql}"));
    for r in &res {
        if let Err(e) = r {
            panic!("{sql}: {e}");
        }
    }
    let out = last.unwrap_or_else(|e| panic!("{sql}: {e}"));
    out.rows
        .iter()
        .map(|r| {
            r.iter()
                .map(|v| {
                    if v.is_null() {
                        "NULL".into()
                    } else {
                        v.to_string()
                    }
                })
                .collect()
        })
        .collect()
}

pub fn tag(s: &mut SqlSession, sql: &str) -> String {
    let r = s.execute_batch(sql).pop().unwrap();
    r.unwrap_or_else(|e| panic!("{sql}: {e}")).tag
}

pub fn err(s: &mut SqlSession, sql: &str) -> ErrorKind {
    match s.execute_batch(sql).pop().unwrap() {
        Ok(o) => panic!("{sql} succeeded: {}", o.tag),
        Err(e) => e.kind,
    }
}

pub fn one(s: &mut SqlSession, sql: &str) -> String {
    let r = rows(s, sql);
    assert_eq!(r.len(), 1, "{sql}: {r:?}");
    r[0][0].clone()
}
