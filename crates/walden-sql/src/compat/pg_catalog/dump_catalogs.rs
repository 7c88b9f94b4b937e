//! What `pg_dump` reads beyond what psql and the drivers need: the
//! `tableoid` system column of the catalogs, `pg_depend`, `acldefault`, the
//! columns its queries expect of the hand-built catalogs, and the functions
//! it calls on options and the search path. (The catalogs of objects Walden
//! lacks: `empty_catalogs.rs`; sequences as relations:
//! `sequence_relations.rs`.)

use super::empty_catalogs::TEXT;
use super::rows::{i, t};
use super::sequence_relations::*;
use super::views::OID;
use super::*;

/// The OID of the catalog a view reads (the value of its `tableoid` column),
/// or `None` for the views PostgreSQL defines over the catalogs (they have
/// no system columns).
pub fn catalog_relation_oid(view: PgView) -> Option<i64> {
    use PgView as V;
    Some(match view {
        V::Database => 1262,
        V::Namespace => 2615,
        V::Class => 1259,
        V::Attribute => 1249,
        V::Attrdef => 2604,
        V::Index => 2610,
        V::Constraint => 2606,
        V::Am => 2601,
        V::Collation => 3456,
        V::Type => 1247,
        V::Inherits => 2611,
        V::PartitionedTable => 3350,
        V::Policy => 3256,
        V::StatisticExt => 3381,
        V::Publication => 6104,
        V::PublicationNamespace => 6237,
        V::PublicationRel => 6106,
        V::Authid => 1260,
        V::Sequence => 2224,
        V::Depend => 2608,
        V::Description => 2609,
        V::Trigger => 2620,
        V::Rewrite => 2618,
        V::AuthMembers => 1261,
        V::Extension => 3079,
        V::Proc => 1255,
        V::Tablespace => 1213,
        V::Opclass => 2616,
        V::Empty(c) => return c.relation_oid(),
        _ => return None,
    })
}

const PG_CLASS: i64 = 1259;
const PG_CONSTRAINT: i64 = 2606;
const PG_ATTRDEF: i64 = 2604;
const PG_NAMESPACE: i64 = 2615;

fn dep(
    classid: i64,
    objid: i64,
    refclassid: i64,
    refobjid: i64,
    refsub: i64,
    deptype: &str,
) -> Vec<Value> {
    vec![
        i(classid),
        i(objid),
        i(0),
        i(refclassid),
        i(refobjid),
        i(refsub),
        t(deptype),
    ]
}

/// `pg_depend`: how Walden's objects depend on each other, with
/// PostgreSQL's dependency types: a relation on its schema (`n`), a column
/// default, index or constraint on its table's columns (`a`), an index on
/// the constraint it enforces (`i`), a default on the sequence it draws
/// from and a foreign key on the referenced columns and key (`n`), and an
/// identity counter on its column (`a`, as a serial column's sequence).
pub(super) fn depend_rows(env: &Env<'_>) -> Vec<Vec<Value>> {
    let db = &Seen::of(env);
    let mut out = Vec::new();
    let seq_oid = |name: &str| match sequence_relation(db, name)? {
        SeqRel::Sequence(id) => Some(user_oid(id, SLOT_SEQUENCE)),
        SeqRel::Identity(id) => Some(identity_seq_oid(id)),
    };
    for s in db.sequences() {
        out.push(dep(
            PG_CLASS,
            user_oid(s.id, SLOT_SEQUENCE),
            PG_NAMESPACE,
            NS_PUBLIC,
            0,
            "n",
        ));
        // OWNED BY: the sequence goes with its column (`a`).
        if let Some(o) = s.owned_by {
            out.push(dep(
                PG_CLASS,
                user_oid(s.id, SLOT_SEQUENCE),
                PG_CLASS,
                table_oid(o.table),
                o.column as i64 + 1,
                "a",
            ));
        }
    }
    for tb in db.tables() {
        let rel = table_oid(tb.id());
        out.push(dep(PG_CLASS, rel, PG_NAMESPACE, NS_PUBLIC, 0, "n"));
        for (n, c) in tb.def.columns.iter().enumerate() {
            let attnum = n as i64 + 1;
            if let Some(ident) = c.identity {
                let seq = identity_seq_oid(tb.id());
                // An identity column's sequence is internal to it (`i`), a
                // serial column's owned by it (`a`).
                let kind = if ident.generated.is_some() { "i" } else { "a" };
                out.push(dep(PG_CLASS, seq, PG_CLASS, rel, attnum, kind));
                out.push(dep(PG_CLASS, seq, PG_NAMESPACE, NS_PUBLIC, 0, "n"));
            }
            if default_text(&tb, c).is_none() {
                continue;
            }
            let def = attrdef_oid(tb.id(), n + 1);
            out.push(dep(PG_ATTRDEF, def, PG_CLASS, rel, attnum, "a"));
            let drawn_from = match (&c.identity, &c.default) {
                (Some(_), _) => Some(identity_seq_oid(tb.id())),
                (None, Some(DefaultExpr::NextVal(s))) => seq_oid(s),
                _ => None,
            };
            if let Some(seq) = drawn_from {
                out.push(dep(PG_ATTRDEF, def, PG_CLASS, seq, 0, "n"));
            }
        }
        for (n, c) in tb.def.checks.iter().enumerate() {
            let con = check_oid(tb.id(), n);
            match crate::catalog::constraints::check_columns(env, &tb, c) {
                Some(cols) if !cols.is_empty() => {
                    for k in cols {
                        out.push(dep(PG_CONSTRAINT, con, PG_CLASS, rel, k as i64, "a"));
                    }
                }
                _ => out.push(dep(PG_CONSTRAINT, con, PG_CLASS, rel, 0, "a")),
            }
        }
    }
    for ix in all_indexes(db) {
        let rel = table_oid(ix.table.id());
        match ix.constraint {
            Some((_, con)) => {
                out.push(dep(PG_CLASS, ix.oid, PG_CONSTRAINT, con, 0, "i"));
                for &k in &ix.columns {
                    out.push(dep(PG_CONSTRAINT, con, PG_CLASS, rel, k as i64 + 1, "a"));
                }
            }
            None => {
                for &k in &ix.columns {
                    out.push(dep(PG_CLASS, ix.oid, PG_CLASS, rel, k as i64 + 1, "a"));
                }
            }
        }
    }
    for tb in db.tables() {
        let rel = table_oid(tb.id());
        for (n, fk) in tb.def.foreign_keys.iter().enumerate() {
            let con = crate::compat::pg_catalog::foreign_keys::fk_oid(tb.id(), n);
            for &k in &fk.columns {
                out.push(dep(PG_CONSTRAINT, con, PG_CLASS, rel, k as i64 + 1, "a"));
            }
            let Some(r) = db.table_by_id(fk.ref_table) else {
                continue;
            };
            for &k in &fk.ref_columns {
                out.push(dep(
                    PG_CONSTRAINT,
                    con,
                    PG_CLASS,
                    table_oid(r.id()),
                    k as i64 + 1,
                    "n",
                ));
            }
            let key = crate::compat::pg_catalog::foreign_keys::referenced_index(&r, fk);
            out.push(dep(PG_CONSTRAINT, con, PG_CLASS, key, 0, "n"));
        }
    }
    out
}

/// `acldefault(type, owner)`: PostgreSQL's default ACL of an object of that
/// type, limited to the privileges Walden has (so it matches the ACL Walden
/// writes out at an object's first GRANT).
pub fn acldefault(env: &Env<'_>, kind: &str, owner: i64) -> Result<Value> {
    // (grantee is PUBLIC, privileges) of PostgreSQL's defaults.
    let items: &[(bool, &str)] = match kind {
        "r" => &[(false, "arwdDxt")],
        "s" => &[(false, "rwU")],
        "d" => &[(true, "Tc"), (false, "CTc")],
        "f" => &[(true, "X"), (false, "X")],
        "l" | "T" => &[(true, "U"), (false, "U")],
        "L" => &[(false, "rw")],
        "n" => &[(false, "UC")],
        "F" | "S" => &[(false, "U")],
        "t" => &[(false, "C")],
        "c" | "m" | "p" => &[(false, "")],
        other => {
            return Err(SqlError::internal(format!(
                "unrecognized object type abbreviation: {other}"
            )))
        }
    };
    let known: Vec<char> = walden_engine::roles::privs::LETTERS
        .iter()
        .map(|(_, c)| *c)
        .collect();
    // Only tables, sequences and databases carry Walden ACLs; the others
    // are PostgreSQL's defaults as they are.
    let keep_all = !matches!(kind, "r" | "s" | "d");
    let roles = env.instance.roles_for(env.tx);
    let owner_name = roles.name_of(owner as u32);
    let parts: Vec<String> = items
        .iter()
        .filter_map(|(public, letters)| {
            let letters: String = letters
                .chars()
                .filter(|c| keep_all || known.contains(c))
                .collect();
            if letters.is_empty() {
                return None;
            }
            let who = if *public { "" } else { owner_name.as_str() };
            Some(format!("{who}={letters}/{owner_name}"))
        })
        .collect();
    Ok(Value::text(format!("{{{}}}", parts.join(","))))
}

/// Columns of the hand-built catalogs that `pg_dump` reads and that hold
/// one value in every row of Walden's: appended after the built values.
/// Walden has no transaction-id freezing (`relfrozenxid`, `relminmxid`
/// are 0, PostgreSQL's invalid id), no privileges on types and functions
/// beyond the defaults (`typacl`, `proacl` NULL), no missing-value
/// columns, foreign tables, extension configuration or partitioning.
pub(super) fn trailing(view: PgView) -> Vec<(&'static str, DataType, Value)> {
    use PgView as V;
    match view {
        V::Class => vec![("relfrozenxid", OID, i(0)), ("relminmxid", OID, i(0))],
        V::Database => vec![
            ("datfrozenxid", OID, i(0)),
            ("datminmxid", OID, i(0)),
            ("datcollversion", TEXT, Value::Null),
        ],
        V::Type => vec![("typacl", TEXT, Value::Null)],
        // pg_dump's dumpFunc: no C functions (probin), settings, support
        // functions or transforms; the default cost and row estimate.
        V::Proc => vec![
            ("proacl", TEXT, Value::Null),
            ("probin", TEXT, Value::Null),
            ("proconfig", TEXT, Value::Null),
            ("procost", TEXT, Value::text("100")),
            ("prorows", TEXT, Value::text("0")),
            ("proleakproof", super::views::BOOL, Value::Bool(false)),
            ("protrftypes", TEXT, Value::Null),
            ("prosupport", TEXT, Value::text("-")),
        ],
        V::Attribute => vec![
            ("attmissingval", TEXT, Value::Null),
            ("attfdwoptions", TEXT, Value::Null),
        ],
        V::Extension => vec![
            ("extconfig", TEXT, Value::Null),
            ("extcondition", TEXT, Value::Null),
        ],
        V::PartitionedTable => vec![
            ("partattrs", TEXT, Value::Null),
            ("partclass", TEXT, Value::Null),
            ("partcollation", TEXT, Value::Null),
            ("partexprs", TEXT, Value::Null),
        ],
        _ => vec![],
    }
}

/// `pg_options_to_table(options)`: each `name=value` element as a row (an
/// element without `=` has a NULL value).
pub fn options_to_table(options: &Value) -> Vec<Vec<Value>> {
    crate::functions::arrays::elements(options)
        .into_iter()
        .filter(|e| !e.is_null())
        .map(|e| {
            let s = e.to_string();
            match s.split_once('=') {
                Some((k, v)) => vec![t(k), t(v)],
                None => vec![t(s), Value::Null],
            }
        })
        .collect()
}

/// The schemas of the session's `search_path` that exist, in order, as
/// `current_schemas` lists them (`implicit`: with `pg_catalog` first when
/// the path does not name it, as it is searched anyway).
pub fn search_path_schemas(env: &Env<'_>, implicit: bool) -> Vec<String> {
    let path = env.info.path.clone();
    if implicit {
        path.searched().into_iter().map(str::to_string).collect()
    } else {
        path.listed().into_iter().map(str::to_string).collect()
    }
}

/// `text` with the relation name after each `marker` qualified by `public.`
/// when `public` is not on the search path (PostgreSQL qualifies a name
/// that the path would not find, as `pg_dump`'s empty path shows).
pub fn qualify_for_path(env: &Env<'_>, text: &str, marker: &str) -> String {
    if search_path_schemas(env, false)
        .iter()
        .any(|s| s == "public")
        || !text.contains(marker)
    {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 8);
    let mut rest = text;
    while let Some(i) = rest.find(marker) {
        let after = &rest[i + marker.len()..];
        out.push_str(&rest[..i + marker.len()]);
        if !after.starts_with("public.") && !after.starts_with("pg_catalog.") {
            out.push_str("public.");
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

/// `pg_get_serial_sequence(table, column)`: the sequence a serial or
/// identity column draws from, schema-qualified (`public.t_id_seq`), or
/// NULL for another column. The table is parsed as SQL names are (folded
/// unless quoted); the column is taken literally, as PostgreSQL does.
/// T-SQL's `IDENT_CURRENT(t)` (the last identity value handed out, the
/// seed before any), `IDENT_SEED(t)`, `IDENT_INCR(t)`; NULL for a table
/// without an identity column or a name that is no table, as SQL Server.
pub fn ident_of(env: &Env<'_>, table: &str, which: crate::functions::IdentFn) -> Result<Value> {
    use crate::functions::IdentFn;
    let oid = match super::regcast::regclass_oid(env, table) {
        Ok(Value::Int(oid)) => oid,
        _ => return Ok(Value::Null),
    };
    let db = &Seen::of(env);
    let Some(Rel::Table(tb)) = rel_by_oid(db, oid) else {
        return Ok(Value::Null);
    };
    let Some((_, id)) = tb.def.identity_column() else {
        return Ok(Value::Null);
    };
    let v = match which {
        IdentFn::Seed => id.seed,
        IdentFn::Incr => id.increment,
        IdentFn::Current => {
            let next = tb.identity_next();
            if next == id.seed {
                id.seed
            } else {
                next - id.increment
            }
        }
    };
    Ok(Value::Decimal(walden_engine::types::Numeric::from(v)))
}

pub fn serial_sequence(env: &Env<'_>, table: &str, column: &str) -> Result<Value> {
    let oid = match super::regcast::regclass_oid(env, table)? {
        Value::Int(oid) => oid,
        _ => return Ok(Value::Null),
    };
    let db = &Seen::of(env);
    let Some(Rel::Table(tb)) = rel_by_oid(db, oid) else {
        // A catalog, index or sequence has no columns drawing from one.
        return Err(SqlError::new(
            ErrorKind::UndefinedColumn,
            format!("column \"{column}\" of relation \"{table}\" does not exist"),
        ));
    };
    let Some(n) = tb.def.columns.iter().position(|c| c.name == column) else {
        return Err(SqlError::new(
            ErrorKind::UndefinedColumn,
            format!(
                "column \"{column}\" of relation \"{}\" does not exist",
                tb.name()
            ),
        ));
    };
    let owned = || {
        db.sequences().into_iter().find(|s| {
            s.owned_by
                .is_some_and(|o| o.table == tb.id() && o.column == n)
        })
    };
    Ok(match tb.def.columns[n].identity {
        Some(_) => Value::text(format!(
            "public.{}",
            quote_ident(&identity_seq_name(&tb, n))
        )),
        None => match owned() {
            Some(s) => Value::text(format!("public.{}", quote_ident(&s.name))),
            None => Value::Null,
        },
    })
}
