//! The `reg*` casts (`regclass`, `regtype`, `regnamespace`): names to OIDs and back.

use super::*;

/// A reg type's input that is an OID rather than a name, as PostgreSQL's
/// `reg*in` functions read it: `-` is no object (OID 0), a string of digits
/// is the OID itself (so `'-1'` is a name).
fn input_oid(text: &str) -> Option<Result<Value>> {
    if text == "-" {
        return Some(Ok(Value::Int(0)));
    }
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(
        text.parse::<u32>()
            .map(|o| Value::Int(o as i64))
            .map_err(|_| {
                SqlError::new(
                    ErrorKind::NumericOutOfRange,
                    format!("value \"{text}\" is out of range for type oid"),
                )
            }),
    )
}

/// A schema named in a qualified reg input must exist (3F000), as
/// PostgreSQL checks it before the object.
fn check_schema(schema: Option<&str>) -> Result<()> {
    match schema {
        Some(s) if s != "dbo" && !NAMESPACES.iter().any(|(_, n)| *n == s) => Err(SqlError::new(
            ErrorKind::InvalidSchemaName,
            format!("schema \"{s}\" does not exist"),
        )),
        _ => Ok(()),
    }
}

/// `'name'::regclass`: the OID of a relation named in text (or given as
/// digits).
pub fn regclass_oid(env: &Env<'_>, text: &str) -> Result<Value> {
    input_oid(text).unwrap_or_else(|| regclass_lookup(env, text))
}

/// The OID of the relation `text` names (`to_regclass` reads only names).
pub fn regclass_lookup(env: &Env<'_>, text: &str) -> Result<Value> {
    let path = env.info.path.clone();
    regclass_lookup_in(&Seen::of(env), &path, text)
}

/// Whether the reg constant `text` (a `'...'::regclass`, `::regtype` or
/// `::regnamespace` literal) names something, checked when the statement
/// is planned: PostgreSQL reads such constants at parse time, so an
/// unknown name fails Parse, not Execute.
pub fn check_reg_constant(
    db: &Seen<'_>,
    path: &crate::context::search_path::SearchPath,
    kind: walden_engine::RegKind,
    text: &str,
) -> Result<()> {
    use walden_engine::RegKind as K;
    if let Some(oid) = input_oid(text) {
        return oid.map(|_| ());
    }
    match kind {
        K::Class => regclass_lookup_in(db, path, text).map(|_| ()),
        K::Namespace => regnamespace_lookup(text).map(|_| ()),
        K::Type => match regtype_lookup(text) {
            Ok(_) => Ok(()),
            // An enum type (or its array) of the database's.
            Err(e) => {
                let name = text.trim();
                let base = name
                    .strip_suffix("[]")
                    .or_else(|| name.strip_prefix('_'))
                    .unwrap_or(name);
                match db.db.enum_type_as(db.viewer, base.trim_matches('"')) {
                    Some(_) => Ok(()),
                    None => Err(e),
                }
            }
        },
    }
}

fn regclass_lookup_in(
    db: &Seen<'_>,
    path: &crate::context::search_path::SearchPath,
    text: &str,
) -> Result<Value> {
    let (schema, mut name) = split_qualified(text);
    let other = schema
        .as_deref()
        .filter(|s| path.namespaces().find(s).is_some());
    if other.is_none() {
        check_schema(schema.as_deref())?;
    }
    let user = match schema.as_deref() {
        None => path.finds_user_objects(),
        Some(s) => matches!(s, "public" | "dbo") || other.is_some(),
    };
    // A name of another schema (or found in one along the path) is its
    // engine name.
    if user && (other.is_some() || (schema.is_none() && !path.namespaces().schemas.is_empty())) {
        if let Some(e) = path.user_object(schema.as_deref(), &name)? {
            name = e;
        }
    }
    let system = matches!(schema.as_deref(), None | Some("pg_catalog"));
    // Unqualified, pg_catalog is searched first unless the path puts
    // public before it.
    if system && user && !path.user_first() {
        if let Some(oid) = system_relation_oid(&name) {
            return Ok(Value::Int(oid));
        }
    }
    if user {
        if let Some(r) = rel_by_name(db, &name) {
            return Ok(Value::Int(r.oid()));
        }
        if let Some(s) = super::sequence_relations::sequence_relation(db, &name) {
            return Ok(Value::Int(
                super::sequence_relations::sequence_relation_oid(s),
            ));
        }
    }
    if let Some(oid) = system.then(|| system_relation_oid(&name)).flatten() {
        return Ok(Value::Int(oid));
    }
    Err(SqlError::new(
        ErrorKind::UndefinedTable,
        format!("relation \"{}\" does not exist", text.trim()),
    ))
}

fn system_relation_oid(name: &str) -> Option<i64> {
    SYSTEM_RELATIONS
        .iter()
        .find(|(_, n)| *n == name)
        .map(|(oid, _)| *oid)
        .or_else(|| lookup(Some("pg_catalog"), name).and_then(catalog_relation_oid))
}

/// `oid::regclass` as text: the relation's name (qualified when the search
/// path would not find it), or the number when no relation has that OID
/// (as PostgreSQL prints a dangling regclass).
pub fn regclass_name(env: &Env<'_>, oid: i64) -> String {
    let user = |name: &str| {
        let (schema, bare) = walden_engine::namespace::split_engine_name(name);
        // Bare when the path finds this very object by its bare name.
        let found = env
            .info
            .path
            .user_object(None, bare)
            .ok()
            .flatten()
            .is_some_and(|e| e.eq_ignore_ascii_case(name));
        if found {
            quote_ident(bare)
        } else {
            format!("{}.{}", quote_ident(schema), quote_ident(bare))
        }
    };
    if let Some(r) = rel_by_oid(&Seen::of(env), oid) {
        return user(&r.name());
    }
    if let Some(name) = super::sequence_relations::identity_seq_name_by_oid(&Seen::of(env), oid) {
        return user(&name);
    }
    SYSTEM_RELATIONS
        .iter()
        .find(|(o, _)| *o == oid)
        .map(|(_, n)| n.to_string())
        .unwrap_or_else(|| oid.to_string())
}

/// `'name'::regtype`: a type's OID from its name (`int4`, `integer`, ...)
/// or digits.
pub fn regtype_oid(text: &str) -> Result<Value> {
    input_oid(text).unwrap_or_else(|| regtype_lookup(text))
}

/// The OID of the type `text` names; a type modifier (`varchar(10)`,
/// `timestamp(3) with time zone`) is read and dropped, as regtype has none.
pub fn regtype_lookup(text: &str) -> Result<Value> {
    let (schema, name) = split_qualified(&without_typmod(text));
    check_schema(schema.as_deref())?;
    // `integer[]` and `_int4` name the array type of `integer`.
    if let Some(elem) = name.strip_suffix("[]") {
        if let Value::Int(e) = regtype_lookup(elem)? {
            if let Some(a) = walden_engine::types::array::array_oid_of(e as u32) {
                return Ok(Value::Int(a as i64));
            }
        }
    }
    if let Some((_, a, _)) = walden_engine::types::array::ARRAY_TYPES
        .iter()
        .find(|(_, _, n)| *n == name)
    {
        return Ok(Value::Int(*a as i64));
    }
    let found = TYPES
        .iter()
        .find(|t| t.name == name || format_type(t.oid, None).as_deref() == Some(name.as_str()))
        .map(|t| t.oid)
        .or(match name.as_str() {
            "int" => Some(23),
            "varchar" => Some(1043),
            "bool" => Some(16),
            "decimal" => Some(1700),
            "float" => Some(701),
            _ => None,
        })
        .or_else(|| {
            PSEUDO_TYPES
                .iter()
                .find(|(_, n)| *n == name || n.trim_matches('"') == name)
                .map(|(o, _)| *o)
        });
    found.map(Value::Int).ok_or_else(|| {
        SqlError::new(
            ErrorKind::UndefinedObject,
            format!("type \"{}\" does not exist", text.trim()),
        )
    })
}

/// `text` without a parenthesized type modifier, spaces collapsed.
fn without_typmod(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut depth = 0usize;
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            c if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `'name'::regnamespace` (or digits).
pub fn regnamespace_oid(text: &str) -> Result<Value> {
    input_oid(text).unwrap_or_else(|| regnamespace_lookup(text))
}
