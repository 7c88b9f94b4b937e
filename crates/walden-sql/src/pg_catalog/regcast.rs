//! The `reg*` casts (`regclass`, `regtype`, `regnamespace`): names to OIDs and back.

use super::*;

/// Splits `schema.name` (either part may be double-quoted) and folds
/// unquoted parts to lower case, as PostgreSQL reads a regclass literal.
pub fn split_qualified(s: &str) -> (Option<String>, String) {
    let mut parts = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut was_quoted = false;
    let mut chars = s.trim().chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            '"' => {
                quoted = !quoted;
                was_quoted = true;
            }
            '.' if !quoted => {
                parts.push(fold(std::mem::take(&mut cur), was_quoted));
                was_quoted = false;
            }
            c => cur.push(c),
        }
    }
    parts.push(fold(cur, was_quoted));
    let name = parts.pop().unwrap_or_default();
    (parts.pop(), name)
}

pub(super) fn fold(s: String, quoted: bool) -> String {
    if quoted {
        s
    } else {
        s.trim().to_ascii_lowercase()
    }
}

/// `'name'::regclass`: the OID of a relation named in text.
pub fn regclass_oid(env: &Env<'_>, text: &str) -> Result<Value> {
    if let Ok(oid) = text.trim().parse::<i64>() {
        return Ok(Value::Int(oid));
    }
    let (schema, name) = split_qualified(text);
    let db = &Seen::of(env);
    let path = crate::search_path::SearchPath::of(&env.info.settings);
    let user = match schema.as_deref() {
        None => path.finds_user_objects(),
        Some(s) => matches!(s, "public" | "dbo"),
    };
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
        if crate::search_path::SearchPath::of(&env.info.settings).finds_user_objects() {
            quote_ident(name)
        } else {
            format!("public.{}", quote_ident(name))
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

/// `oid::regtype` as text.
pub fn regtype_name(oid: i64) -> String {
    if oid == 0 {
        return "-".into();
    }
    match format_type(oid, None) {
        Some(n) => n,
        None => oid.to_string(),
    }
}

/// `'name'::regtype`: a type's OID from its name (`int4`, `integer`, ...).
pub fn regtype_oid(text: &str) -> Result<Value> {
    if let Ok(oid) = text.trim().parse::<i64>() {
        return Ok(Value::Int(oid));
    }
    let (_, name) = split_qualified(text);
    // `integer[]` and `_int4` name the array type of `integer`.
    if let Some(elem) = name.strip_suffix("[]") {
        if let Value::Int(e) = regtype_oid(elem)? {
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
        });
    found.map(Value::Int).ok_or_else(|| {
        SqlError::new(
            ErrorKind::UndefinedObject,
            format!("type \"{}\" does not exist", text.trim()),
        )
    })
}

/// `oid::regnamespace` as text.
pub fn regnamespace_name(oid: i64) -> String {
    NAMESPACES
        .iter()
        .find(|(o, _)| *o == oid)
        .map(|(_, n)| n.to_string())
        .unwrap_or_else(|| oid.to_string())
}

/// `'name'::regnamespace`.
pub fn regnamespace_oid(text: &str) -> Result<Value> {
    if let Ok(oid) = text.trim().parse::<i64>() {
        return Ok(Value::Int(oid));
    }
    let (_, name) = split_qualified(text);
    NAMESPACES
        .iter()
        .find(|(_, n)| *n == name)
        .map(|(o, _)| Value::Int(*o))
        .ok_or_else(|| {
            SqlError::new(
                ErrorKind::UndefinedObject,
                format!("schema \"{}\" does not exist", text.trim()),
            )
        })
}

pub(super) const NAMESPACES: &[(i64, &str)] = &[
    (NS_PG_CATALOG, "pg_catalog"),
    (NS_PG_TOAST, "pg_toast"),
    (NS_PUBLIC, "public"),
    (NS_INFORMATION_SCHEMA, "information_schema"),
];
