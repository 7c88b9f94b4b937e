//! Views: a named query. The engine keeps the definition as the SQL layer
//! made it (the query's text, its columns and the relations it reads) in
//! the catalog beside tables, logs it with the creating transaction, and
//! carries it in checkpoint images and to secondaries; the SQL layer plans
//! the text wherever the view is named.

use crate::codec::{put_str, put_var, short, Reader};
use crate::error::Result;
use crate::types::DataType;

/// One view.
#[derive(Clone, Debug, PartialEq)]
pub struct ViewDef {
    /// From the tables' id space (so OIDs never collide).
    pub id: u32,
    pub name: String,
    /// The defining query's text, as the SQL layer normalised it.
    pub query: String,
    /// Output columns with their types, in order.
    pub columns: Vec<(String, DataType)>,
    /// Ids of the tables and views the query reads.
    pub deps: Vec<u32>,
}

/// The encoding's version byte: a later field goes after a new version.
const VIEW_V1: u8 = 1;

pub(crate) fn put_view(out: &mut Vec<u8>, v: &ViewDef) {
    out.push(VIEW_V1);
    put_var(out, v.id as u64);
    put_str(out, &v.name);
    put_str(out, &v.query);
    put_var(out, v.columns.len() as u64);
    for (n, t) in &v.columns {
        put_str(out, n);
        crate::codec::put_type(out, t);
    }
    put_var(out, v.deps.len() as u64);
    for d in &v.deps {
        put_var(out, *d as u64);
    }
}

pub(crate) fn get_view(r: &mut Reader<'_>) -> Result<ViewDef> {
    if r.u8()? != VIEW_V1 {
        return Err(short());
    }
    let id = u32::try_from(r.var()?).map_err(|_| short())?;
    let name = r.str()?.to_string();
    let query = r.str()?.to_string();
    let n = r.var()? as usize;
    let mut columns = Vec::with_capacity(n.min(1600));
    for _ in 0..n {
        let c = r.str()?.to_string();
        columns.push((c, crate::codec::get_type(r)?));
    }
    let n = r.var()? as usize;
    let mut deps = Vec::with_capacity(n.min(1024));
    for _ in 0..n {
        deps.push(u32::try_from(r.var()?).map_err(|_| short())?);
    }
    Ok(ViewDef {
        id,
        name,
        query,
        columns,
        deps,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn view_round_trips() {
        let v = ViewDef {
            id: 42,
            name: "V".into(),
            query: "SELECT a FROM t".into(),
            columns: vec![("a".into(), DataType::Int), ("b".into(), DataType::Text)],
            deps: vec![7, 9],
        };
        let mut out = Vec::new();
        put_view(&mut out, &v);
        let mut r = Reader::new(&out);
        assert_eq!(get_view(&mut r).unwrap(), v);
        assert!(r.is_empty());
        // A cut record is an error, not a panic.
        for cut in 0..out.len() {
            let _ = get_view(&mut Reader::new(&out[..cut]));
        }
    }
}
