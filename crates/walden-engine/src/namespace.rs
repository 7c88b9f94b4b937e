//! Schemas (namespaces) other than `public`: a name, an id from the
//! tables' id space (so OIDs never collide) and an owner (a role OID). The
//! engine keeps them in the catalog beside tables, logs them with the
//! creating transaction, carries them in checkpoint images and to
//! secondaries, and undoes them at rollback like other DDL.
//!
//! An object of such a schema is named in the engine by the schema's name,
//! [`SCHEMA_SEP`] and its own name (see [`engine_name`]); objects of
//! `public` keep their bare name, so databases made before schemas existed
//! read unchanged. The separator is a control character no identifier may
//! hold (the SQL layer refuses names containing it), so no two (schema,
//! name) pairs share an engine name.

use crate::codec::{put_str, put_var, short, Reader};
use crate::error::Result;

/// Separates a schema's name from its object's name in engine names.
pub const SCHEMA_SEP: char = '\u{1f}';

/// The engine name of `name` in `schema`.
pub fn engine_name(schema: &str, name: &str) -> String {
    if schema == "public" {
        name.to_string()
    } else {
        format!("{schema}{SCHEMA_SEP}{name}")
    }
}

/// An engine name's schema and bare name.
pub fn split_engine_name(name: &str) -> (&str, &str) {
    match name.split_once(SCHEMA_SEP) {
        Some((s, n)) => (s, n),
        None => ("public", name),
    }
}

/// One schema.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchemaDef {
    pub id: u32,
    pub name: String,
    /// The owning role's OID.
    pub owner: u32,
}

const SCHEMA_V1: u8 = 1;

pub(crate) fn put_schema(out: &mut Vec<u8>, s: &SchemaDef) {
    out.push(SCHEMA_V1);
    put_var(out, s.id as u64);
    put_str(out, &s.name);
    put_var(out, s.owner as u64);
}

pub(crate) fn get_schema(r: &mut Reader<'_>) -> Result<SchemaDef> {
    if r.u8()? != SCHEMA_V1 {
        return Err(short());
    }
    let id = u32::try_from(r.var()?).map_err(|_| short())?;
    let name = r.str()?.to_string();
    let owner = u32::try_from(r.var()?).map_err(|_| short())?;
    Ok(SchemaDef { id, name, owner })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_round_trips_and_names_split() {
        let s = SchemaDef {
            id: 17,
            name: "Sales".into(),
            owner: 10,
        };
        let mut out = Vec::new();
        put_schema(&mut out, &s);
        assert_eq!(get_schema(&mut Reader::new(&out)).unwrap(), s);
        for cut in 0..out.len() {
            let _ = get_schema(&mut Reader::new(&out[..cut]));
        }
        assert_eq!(split_engine_name(&engine_name("s", "t")), ("s", "t"));
        assert_eq!(
            split_engine_name(&engine_name("public", "t")),
            ("public", "t")
        );
        assert_ne!(engine_name("a", "b.c"), engine_name("a.b", "c"));
    }
}
