//! PostgreSQL's system catalogs and catalog functions, derived from Walden's
//! own catalog, so that psql's `\d` family, drivers and tools can read them.
//!
//! Walden has one schema (`public`), tables with an optional primary key,
//! column defaults and sequences. Every relation's OID is computed from the
//! engine's ids, so one object has the same OID in every catalog, in every
//! session and across restarts. The catalogs of features Walden lacks
//! (policies, publications, statistics objects, inheritance, triggers,
//! dependencies, comments) exist and are empty, so the queries tools send
//! about them return no rows instead of failing.
//!
//! Arrays have no type of their own in Walden; catalog columns and functions
//! that PostgreSQL types as arrays use PostgreSQL's text form (`{a,b}`).

use crate::error::{ErrorKind, Result, SqlError};
use crate::expr::Env;
use std::sync::Arc;
use walden_engine::{ColumnDef, DataType, Database, DefaultExpr, SequenceDef, Table, Value};

// Fixed OIDs, as PostgreSQL assigns them.
const NS_PG_CATALOG: i64 = 11;
const NS_PG_TOAST: i64 = 99;
pub(crate) const NS_PUBLIC: i64 = 2200;
/// PostgreSQL assigns this one at initdb; any OID below 16384 will do.
const NS_INFORMATION_SCHEMA: i64 = 13_000;
const AM_HEAP: i64 = 2;
const AM_BTREE: i64 = 403;
const COLL_DEFAULT: i64 = 100;
const COLL_C: i64 = 950;
const COLL_POSIX: i64 = 951;
/// The one role (the bootstrap superuser's OID).
const OWNER_OID: i64 = 10;

/// OIDs of user objects start here, as in PostgreSQL.
const FIRST_USER_OID: i64 = 16_384;
/// Each table and sequence id owns a block of OIDs: table, its primary-key
/// index, that index's constraint, its row type; sequence and its row type.
/// Tables and sequences are numbered separately by the engine, so they use
/// different slots of the block.
const STRIDE: i64 = 8;
const SLOT_TABLE: i64 = 0;
const SLOT_PKEY: i64 = 1;
const SLOT_PKEY_CONSTRAINT: i64 = 2;
const SLOT_TABLE_TYPE: i64 = 3;
const SLOT_SEQUENCE: i64 = 4;
const SLOT_SEQUENCE_TYPE: i64 = 5;
/// A secondary index (its id comes from the tables' id space).
const SLOT_INDEX: i64 = 6;
/// The UNIQUE constraint behind an index.
const SLOT_INDEX_CONSTRAINT: i64 = 7;

fn user_oid(id: u32, slot: i64) -> i64 {
    FIRST_USER_OID + STRIDE * id as i64 + slot
}

/// The OID of a table (`pg_class.oid`).
pub fn table_oid(id: u32) -> i64 {
    user_oid(id, SLOT_TABLE)
}

/// The OID of a table's primary key index.
pub fn pkey_oid(id: u32) -> i64 {
    user_oid(id, SLOT_PKEY)
}

/// The OID of a secondary index (`pg_class.oid`, `pg_index.indexrelid`).
pub fn index_oid(id: u32) -> i64 {
    user_oid(id, SLOT_INDEX)
}

/// The engine id and slot an OID stands for.
fn decode_oid(oid: i64) -> Option<(u32, i64)> {
    if oid < FIRST_USER_OID {
        return None;
    }
    let off = oid - FIRST_USER_OID;
    u32::try_from(off / STRIDE)
        .ok()
        .map(|id| (id, off % STRIDE))
}

/// `pg_attrdef.oid`: unique within `pg_attrdef` (a table has at most 1600
/// columns in PostgreSQL, so 11 bits for the column number suffice).
fn attrdef_oid(table_id: u32, attnum: usize) -> i64 {
    (table_oid(table_id) << 11) | attnum as i64
}

/// `pg_constraint.oid` of a table's n-th (0-based) CHECK constraint: above
/// every OID of the slot scheme, and unique within `pg_constraint`.
fn check_oid(table_id: u32, n: usize) -> i64 {
    (table_oid(table_id) << 12) | (n as i64 + 1)
}

fn decode_check_oid(oid: i64) -> Option<(u32, usize)> {
    let n = (oid & 0xfff) as usize;
    let (id, slot) = decode_oid(oid >> 12)?;
    (slot == SLOT_TABLE && n > 0).then_some((id, n - 1))
}

/// A relation of the current database, found by OID or by name.
enum Rel {
    Table(Arc<Table>),
    /// A table's primary key (PostgreSQL's `<table>_pkey` index) or a
    /// secondary index.
    Index(CatIndex),
    Sequence(SequenceDef),
}

/// An index as the catalogs show it.
#[derive(Clone)]
struct CatIndex {
    table: Arc<Table>,
    oid: i64,
    name: String,
    columns: Vec<usize>,
    unique: bool,
    primary: bool,
    /// The constraint it implements: its type (`p`, `u`) and OID.
    constraint: Option<(&'static str, i64)>,
}

impl CatIndex {
    fn column_names(&self) -> String {
        self.columns
            .iter()
            .map(|&i| quote_ident(&self.table.def.columns[i].name))
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn definition(&self) -> String {
        format!(
            "CREATE {}INDEX {} ON public.{} USING btree ({})",
            if self.unique { "UNIQUE " } else { "" },
            quote_ident(&self.name),
            quote_ident(self.table.name()),
            self.column_names()
        )
    }
}

/// A table's indexes: the primary key's first, then the secondary ones.
fn indexes_of(tb: &Arc<Table>) -> Vec<CatIndex> {
    let mut out = Vec::new();
    if !tb.has_hidden_key() {
        out.push(CatIndex {
            table: tb.clone(),
            oid: user_oid(tb.id(), SLOT_PKEY),
            name: pkey_name(tb),
            columns: tb.def.primary_key.clone(),
            unique: true,
            primary: true,
            constraint: Some(("p", user_oid(tb.id(), SLOT_PKEY_CONSTRAINT))),
        });
    }
    for ix in &tb.def.indexes {
        out.push(CatIndex {
            table: tb.clone(),
            oid: user_oid(ix.id, SLOT_INDEX),
            name: ix.name.clone(),
            columns: ix.columns.clone(),
            unique: ix.unique,
            primary: false,
            constraint: ix
                .constraint
                .then(|| ("u", user_oid(ix.id, SLOT_INDEX_CONSTRAINT))),
        });
    }
    out
}

fn all_indexes(db: &Database) -> Vec<CatIndex> {
    db.tables().iter().flat_map(indexes_of).collect()
}

impl Rel {
    fn oid(&self) -> i64 {
        match self {
            Rel::Table(t) => user_oid(t.id(), SLOT_TABLE),
            Rel::Index(ix) => ix.oid,
            Rel::Sequence(s) => user_oid(s.id, SLOT_SEQUENCE),
        }
    }

    fn name(&self) -> String {
        match self {
            Rel::Table(t) => t.name().to_string(),
            Rel::Index(ix) => ix.name.clone(),
            Rel::Sequence(s) => s.name.clone(),
        }
    }
}

fn pkey_name(t: &Table) -> String {
    t.def.pkey_name()
}

fn rel_by_oid(db: &Database, oid: i64) -> Option<Rel> {
    let (id, slot) = decode_oid(oid)?;
    match slot {
        SLOT_TABLE => db
            .tables()
            .into_iter()
            .find(|t| t.id() == id)
            .map(Rel::Table),
        SLOT_PKEY | SLOT_INDEX => all_indexes(db)
            .into_iter()
            .find(|ix| ix.oid == oid)
            .map(Rel::Index),
        SLOT_SEQUENCE => db
            .sequences()
            .into_iter()
            .find(|s| s.id == id)
            .map(Rel::Sequence),
        _ => None,
    }
}

fn rel_by_name(db: &Database, name: &str) -> Option<Rel> {
    if let Ok(t) = db.table(name) {
        return Some(Rel::Table(t));
    }
    if let Some(ix) = all_indexes(db)
        .into_iter()
        .find(|ix| ix.name.eq_ignore_ascii_case(name))
    {
        return Some(Rel::Index(ix));
    }
    db.sequences()
        .into_iter()
        .find(|s| s.name.eq_ignore_ascii_case(name))
        .map(Rel::Sequence)
}

/// The system catalogs tools refer to by name (`'pg_class'::regclass`).
const SYSTEM_RELATIONS: &[(i64, &str)] = &[
    (1247, "pg_type"),
    (1249, "pg_attribute"),
    (1255, "pg_proc"),
    (1259, "pg_class"),
    (1260, "pg_authid"),
    (1262, "pg_database"),
    (2224, "pg_sequence"),
    (2601, "pg_am"),
    (2604, "pg_attrdef"),
    (2606, "pg_constraint"),
    (2608, "pg_depend"),
    (2609, "pg_description"),
    (2610, "pg_index"),
    (2611, "pg_inherits"),
    (2615, "pg_namespace"),
    (2618, "pg_rewrite"),
    (2620, "pg_trigger"),
    (3256, "pg_policy"),
    (3381, "pg_statistic_ext"),
    (3456, "pg_collation"),
    (6104, "pg_publication"),
    (6106, "pg_publication_rel"),
    (6237, "pg_publication_namespace"),
];

/// Splits `schema.name` (either part may be double-quoted) and folds
/// unquoted parts to lower case, as PostgreSQL reads a regclass literal.
fn split_qualified(s: &str) -> (Option<String>, String) {
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

fn fold(s: String, quoted: bool) -> String {
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
    let db = env.tx.database();
    let user = matches!(schema.as_deref(), None | Some("public"));
    let system = matches!(schema.as_deref(), None | Some("pg_catalog"));
    if user {
        if let Some(r) = rel_by_name(db, &name) {
            return Ok(Value::Int(r.oid()));
        }
    }
    if system {
        if let Some((oid, _)) = SYSTEM_RELATIONS.iter().find(|(_, n)| *n == name) {
            return Ok(Value::Int(*oid));
        }
    }
    Err(SqlError::new(
        ErrorKind::UndefinedTable,
        format!("relation \"{}\" does not exist", text.trim()),
    ))
}

/// `oid::regclass` as text: the relation's name, or the number when no
/// relation has that OID (as PostgreSQL prints a dangling regclass).
pub fn regclass_name(env: &Env<'_>, oid: i64) -> String {
    if let Some(r) = rel_by_oid(env.tx.database(), oid) {
        return quote_ident(&r.name());
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

const NAMESPACES: &[(i64, &str)] = &[
    (NS_PG_CATALOG, "pg_catalog"),
    (NS_PG_TOAST, "pg_toast"),
    (NS_PUBLIC, "public"),
    (NS_INFORMATION_SCHEMA, "information_schema"),
];

/// A row of `pg_type`.
struct PgType {
    oid: i64,
    name: &'static str,
    len: i64,
    /// `typcategory`.
    category: &'static str,
    collatable: bool,
}

const fn ty(
    oid: i64,
    name: &'static str,
    len: i64,
    category: &'static str,
    collatable: bool,
) -> PgType {
    PgType {
        oid,
        name,
        len,
        category,
        collatable,
    }
}

/// The types Walden's values take, plus the ones catalog columns use.
const TYPES: &[PgType] = &[
    ty(16, "bool", 1, "B", false),
    ty(17, "bytea", -1, "U", false),
    ty(18, "char", 1, "Z", false),
    ty(19, "name", 64, "S", true),
    ty(20, "int8", 8, "N", false),
    ty(21, "int2", 2, "N", false),
    ty(23, "int4", 4, "N", false),
    ty(25, "text", -1, "S", true),
    ty(26, "oid", 4, "N", false),
    ty(700, "float4", 4, "N", false),
    ty(701, "float8", 8, "N", false),
    ty(1042, "bpchar", -1, "S", true),
    ty(1043, "varchar", -1, "S", true),
    ty(1082, "date", 4, "D", false),
    ty(1083, "time", 8, "D", false),
    ty(1114, "timestamp", 8, "D", false),
    ty(1184, "timestamptz", 8, "D", false),
    ty(114, "json", -1, "U", false),
    ty(3802, "jsonb", -1, "U", false),
    ty(1186, "interval", 16, "T", false),
    ty(1700, "numeric", -1, "N", false),
    ty(2205, "regclass", 4, "N", false),
    ty(2206, "regtype", 4, "N", false),
    ty(2950, "uuid", 16, "U", false),
    ty(4089, "regnamespace", 4, "N", false),
];

/// The PostgreSQL type OID and type modifier of a Walden column type (the
/// same mapping the wire server reports in RowDescription).
pub fn type_oid_and_mod(t: &DataType) -> (i64, i64) {
    match t {
        DataType::SmallInt => (21, -1),
        DataType::Int => (23, -1),
        DataType::BigInt => (20, -1),
        DataType::Bool => (16, -1),
        DataType::Real => (700, -1),
        DataType::Double => (701, -1),
        DataType::Decimal { precision, scale } if *precision > 0 => {
            (1700, ((*precision as i64) << 16 | *scale as i64) + 4)
        }
        DataType::Decimal { .. } => (1700, -1),
        DataType::Varchar(Some(n)) => (1043, *n as i64 + 4),
        DataType::Varchar(None) => (1043, -1),
        DataType::Text => (25, -1),
        DataType::Timestamp => (1114, -1),
        DataType::Date => (1082, -1),
        DataType::Uuid => (2950, -1),
        DataType::Bytes => (17, -1),
        DataType::TimestampTz => (1184, -1),
        DataType::Time => (1083, -1),
        DataType::Interval => (1186, -1),
        DataType::Char(n) => (1042, *n as i64 + 4),
        DataType::Json => (114, -1),
        DataType::Jsonb => (3802, -1),
    }
}

/// `format_type(oid, typmod)`: the type's SQL name as PostgreSQL prints it
/// in `\d` (`integer`, `character varying(20)`, `numeric(12,2)`); `None`
/// for an unknown OID (PostgreSQL prints `???`).
pub fn format_type(oid: i64, typmod: Option<i64>) -> Option<String> {
    let m = typmod.filter(|m| *m >= 0);
    Some(match oid {
        16 => "boolean".into(),
        17 => "bytea".into(),
        18 => "\"char\"".into(),
        19 => "name".into(),
        20 => "bigint".into(),
        21 => "smallint".into(),
        23 => "integer".into(),
        25 => "text".into(),
        26 => "oid".into(),
        700 => "real".into(),
        701 => "double precision".into(),
        1042 => match m {
            Some(m) => format!("character({})", m - 4),
            None => "bpchar".into(),
        },
        1043 => match m {
            Some(m) => format!("character varying({})", m - 4),
            None => "character varying".into(),
        },
        1082 => "date".into(),
        1083 => "time without time zone".into(),
        1186 => "interval".into(),
        114 => "json".into(),
        3802 => "jsonb".into(),
        1114 => match m {
            Some(p) => format!("timestamp({p}) without time zone"),
            None => "timestamp without time zone".into(),
        },
        1184 => match m {
            Some(p) => format!("timestamp({p}) with time zone"),
            None => "timestamp with time zone".into(),
        },
        1700 => match m {
            Some(m) => format!("numeric({},{})", (m - 4) >> 16, (m - 4) & 0xffff),
            None => "numeric".into(),
        },
        2205 => "regclass".into(),
        2206 => "regtype".into(),
        2950 => "uuid".into(),
        4089 => "regnamespace".into(),
        _ => return None,
    })
}

/// PostgreSQL's `quote_ident`: double quotes unless the name is a lower-case
/// identifier that is not a reserved word.
pub fn quote_ident(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '$')
        && !RESERVED.contains(&s);
    if plain {
        s.to_string()
    } else {
        format!("\"{}\"", s.replace('"', "\"\""))
    }
}

/// PostgreSQL's reserved key words (those `quote_ident` quotes).
const RESERVED: &[&str] = &[
    "all",
    "analyse",
    "analyze",
    "and",
    "any",
    "array",
    "as",
    "asc",
    "asymmetric",
    "both",
    "case",
    "cast",
    "check",
    "collate",
    "column",
    "constraint",
    "create",
    "current_catalog",
    "current_date",
    "current_role",
    "current_time",
    "current_timestamp",
    "current_user",
    "default",
    "deferrable",
    "desc",
    "distinct",
    "do",
    "else",
    "end",
    "except",
    "false",
    "fetch",
    "for",
    "foreign",
    "from",
    "grant",
    "group",
    "having",
    "in",
    "initially",
    "intersect",
    "into",
    "lateral",
    "leading",
    "limit",
    "localtime",
    "localtimestamp",
    "not",
    "null",
    "offset",
    "on",
    "only",
    "or",
    "order",
    "placing",
    "primary",
    "references",
    "returning",
    "select",
    "session_user",
    "some",
    "symmetric",
    "table",
    "then",
    "to",
    "trailing",
    "true",
    "union",
    "unique",
    "user",
    "using",
    "variadic",
    "when",
    "where",
    "window",
    "with",
];

fn quote_literal(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// A column default as `pg_get_expr(adbin, ...)` prints it. Identity columns
/// (`SERIAL`, `IDENTITY(1,1)`, `GENERATED ... AS IDENTITY` are one thing in
/// Walden) show as the `nextval` default of a serial column, the form
/// PostgreSQL users read most often.
fn default_text(table: &Table, c: &ColumnDef) -> Option<String> {
    if c.identity.is_some() {
        return Some(format!(
            "nextval({}::regclass)",
            quote_literal(&format!("{}_{}_seq", table.name(), c.name))
        ));
    }
    let (oid, _) = type_oid_and_mod(&c.data_type);
    let type_name = format_type(oid, None).unwrap_or_default();
    Some(match c.default.as_ref()? {
        DefaultExpr::Value(Value::Null) => return None,
        DefaultExpr::Value(v @ (Value::Int(_) | Value::Decimal(_) | Value::Float(_))) => {
            let s = v.to_string();
            // PostgreSQL prints a negative constant as a typed literal.
            if s.starts_with('-') {
                format!("{}::{type_name}", quote_literal(&s))
            } else {
                s
            }
        }
        DefaultExpr::Value(Value::Bool(b)) => b.to_string(),
        DefaultExpr::Value(v) => format!("{}::{type_name}", quote_literal(&v.to_string())),
        DefaultExpr::Now => "now()".into(),
        DefaultExpr::Today => "CURRENT_DATE".into(),
        DefaultExpr::NewUuid => "gen_random_uuid()".into(),
        DefaultExpr::NextVal(seq) => format!("nextval({}::regclass)", quote_literal(seq)),
    })
}

/// `pg_get_indexdef(oid, column, pretty)`: the whole `CREATE INDEX`
/// statement for column 0, else the name of that key column.
pub fn indexdef(env: &Env<'_>, oid: i64, column: i64) -> Option<String> {
    let Some(Rel::Index(ix)) = rel_by_oid(env.tx.database(), oid) else {
        return None;
    };
    if column > 0 {
        let i = *ix.columns.get(column as usize - 1)?;
        return Some(quote_ident(&ix.table.def.columns[i].name));
    }
    Some(ix.definition())
}

/// `pg_get_constraintdef(oid, pretty)`.
pub fn constraintdef(env: &Env<'_>, oid: i64, pretty: bool) -> Option<String> {
    if let Some(def) = crate::foreign_keys::catalog::constraintdef(env.tx.database(), oid) {
        return Some(def);
    }
    if let Some((id, n)) = decode_check_oid(oid) {
        let t = env
            .tx
            .database()
            .tables()
            .into_iter()
            .find(|t| t.id() == id)?;
        return Some(crate::constraints::check_def_text(
            t.def.checks.get(n)?,
            pretty,
        ));
    }
    let (_, slot) = decode_oid(oid)?;
    if slot != SLOT_PKEY_CONSTRAINT && slot != SLOT_INDEX_CONSTRAINT {
        return None;
    }
    let ix = all_indexes(env.tx.database())
        .into_iter()
        .find(|ix| ix.constraint.is_some_and(|(_, c)| c == oid))?;
    Some(format!(
        "{} ({})",
        if ix.primary { "PRIMARY KEY" } else { "UNIQUE" },
        ix.column_names()
    ))
}

/// `pg_size_pretty(bytes)`, with PostgreSQL's units and rounding.
pub fn size_pretty(bytes: i64) -> String {
    const LIMIT: i64 = 10 * 1024;
    const LIMIT2: i64 = LIMIT * 2 - 1;
    let half_rounded = |x: i64| (x + if x < 0 { -1 } else { 1 }) / 2;
    if bytes.unsigned_abs() < LIMIT as u64 {
        return format!("{bytes} bytes");
    }
    // Keep one extra bit for rounding, as PostgreSQL does.
    let mut size = bytes >> 9;
    for unit in ["kB", "MB", "GB"] {
        if size.unsigned_abs() < LIMIT2 as u64 {
            return format!("{} {unit}", half_rounded(size));
        }
        size >>= 10;
    }
    format!("{} TB", half_rounded(size))
}

// --- Arrays in PostgreSQL's text form ---------------------------------------

/// Parses `{a,"b c",NULL}`; `None` if the text is not an array literal.
pub fn array_parse(s: &str) -> Option<Vec<Option<String>>> {
    let inner = s.trim().strip_prefix('{')?.strip_suffix('}')?;
    let mut out = Vec::new();
    if inner.trim().is_empty() {
        return Some(out);
    }
    let mut chars = inner.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let mut item = String::new();
        let mut quoted = false;
        if chars.peek() == Some(&'"') {
            quoted = true;
            chars.next();
            loop {
                match chars.next()? {
                    '\\' => item.push(chars.next()?),
                    '"' => break,
                    c => item.push(c),
                }
            }
        }
        while let Some(&c) = chars.peek() {
            if c == ',' {
                break;
            }
            chars.next();
            match c {
                '\\' => item.push(chars.next()?),
                c if quoted && c.is_whitespace() => {}
                c => item.push(c),
            }
        }
        let item = if quoted {
            item
        } else {
            item.trim_end().to_string()
        };
        out.push(if !quoted && item.eq_ignore_ascii_case("null") {
            None
        } else {
            Some(item)
        });
        if chars.next().is_none() {
            return Some(out);
        }
    }
}

/// Formats elements as an array literal, quoting where PostgreSQL does.
pub fn array_format<'a>(items: impl IntoIterator<Item = Option<&'a str>>) -> String {
    let mut out = String::from("{");
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        match item {
            None => out.push_str("NULL"),
            Some(s) => {
                let quote = s.is_empty()
                    || s.eq_ignore_ascii_case("null")
                    || s.chars()
                        .any(|c| matches!(c, ',' | '{' | '}' | '"' | '\\') || c.is_whitespace());
                if quote {
                    out.push('"');
                    for c in s.chars() {
                        if c == '"' || c == '\\' {
                            out.push('\\');
                        }
                        out.push(c);
                    }
                    out.push('"');
                } else {
                    out.push_str(s);
                }
            }
        }
    }
    out.push('}');
    out
}

/// Elements of an array value (its text form); a scalar is a one-element
/// array, NULL has none.
pub fn array_elements(v: &Value) -> Vec<Option<String>> {
    match v {
        Value::Null => vec![],
        Value::Text(s) => array_parse(s).unwrap_or_else(|| vec![Some(s.to_string())]),
        other => vec![Some(other.to_string())],
    }
}

// --- The catalog views --------------------------------------------------------

/// A catalog view: a relation of `pg_catalog` or `information_schema`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PgView {
    Database,
    Namespace,
    Class,
    Attribute,
    Attrdef,
    Index,
    Constraint,
    Am,
    Collation,
    Type,
    Inherits,
    PartitionedTable,
    Policy,
    StatisticExt,
    Publication,
    PublicationNamespace,
    PublicationRel,
    Roles,
    /// `pg_authid`: `pg_roles` with the password verifiers, superusers only.
    Authid,
    Sequence,
    Depend,
    Description,
    Trigger,
    Rewrite,
    AuthMembers,
    Extension,
    Proc,
    Tablespace,
    Tables,
    Indexes,
    InfoTables,
    InfoColumns,
    /// Constraint views (`foreign_keys/catalog.rs`).
    Info(crate::foreign_keys::catalog::InfoView),
    /// `pg_cursors`: the session's open cursors.
    Cursors,
}

/// Finds a catalog view by (schema, name); `pg_catalog` views also answer
/// unqualified, as `pg_catalog` is first on PostgreSQL's search path.
pub fn lookup(schema: Option<&str>, name: &str) -> Option<PgView> {
    use PgView as V;
    let n = name.to_ascii_lowercase();
    if schema == Some("information_schema") {
        return match n.as_str() {
            "tables" => Some(V::InfoTables),
            "columns" => Some(V::InfoColumns),
            other => crate::foreign_keys::catalog::InfoView::lookup(other).map(V::Info),
        };
    }
    if !matches!(schema, None | Some("pg_catalog")) {
        return None;
    }
    Some(match n.as_str() {
        "pg_database" => V::Database,
        "pg_namespace" => V::Namespace,
        "pg_class" => V::Class,
        "pg_attribute" => V::Attribute,
        "pg_attrdef" => V::Attrdef,
        "pg_index" => V::Index,
        "pg_constraint" => V::Constraint,
        "pg_am" => V::Am,
        "pg_collation" => V::Collation,
        "pg_type" => V::Type,
        "pg_inherits" => V::Inherits,
        "pg_partitioned_table" => V::PartitionedTable,
        "pg_policy" => V::Policy,
        "pg_statistic_ext" => V::StatisticExt,
        "pg_publication" => V::Publication,
        "pg_publication_namespace" => V::PublicationNamespace,
        "pg_publication_rel" => V::PublicationRel,
        "pg_roles" | "pg_user" => V::Roles,
        "pg_authid" | "pg_shadow" => V::Authid,
        "pg_sequence" => V::Sequence,
        "pg_depend" => V::Depend,
        "pg_description" => V::Description,
        "pg_trigger" => V::Trigger,
        "pg_rewrite" => V::Rewrite,
        "pg_auth_members" => V::AuthMembers,
        "pg_extension" => V::Extension,
        "pg_proc" => V::Proc,
        "pg_tablespace" => V::Tablespace,
        "pg_tables" => V::Tables,
        "pg_indexes" => V::Indexes,
        "pg_cursors" => V::Cursors,
        _ => return None,
    })
}

use DataType as T;

const OID: T = T::Int;
const BOOL: T = T::Bool;
const NAME: T = T::Text;
const CHAR: T = T::Text;
const I2: T = T::SmallInt;
const I4: T = T::Int;

impl PgView {
    pub fn columns(self) -> Vec<(&'static str, DataType)> {
        use PgView as V;
        match self {
            V::Cursors => crate::cursor::pg_cursors_columns(),
            V::Database => vec![
                ("oid", OID),
                ("datname", NAME),
                ("datdba", OID),
                ("encoding", I4),
                ("datcollate", T::Text),
                ("datctype", T::Text),
                ("daticulocale", T::Text),
                ("datlocprovider", CHAR),
                ("datistemplate", BOOL),
                ("datallowconn", BOOL),
                ("datconnlimit", I4),
                ("dattablespace", OID),
                ("datacl", T::Text),
            ],
            V::Namespace => vec![
                ("oid", OID),
                ("nspname", NAME),
                ("nspowner", OID),
                ("nspacl", T::Text),
            ],
            V::Class => vec![
                ("oid", OID),
                ("relname", NAME),
                ("relnamespace", OID),
                ("reltype", OID),
                ("reloftype", OID),
                ("relowner", OID),
                ("relam", OID),
                ("relfilenode", OID),
                ("reltablespace", OID),
                ("relpages", I4),
                ("reltuples", T::Real),
                ("relallvisible", I4),
                ("reltoastrelid", OID),
                ("relhasindex", BOOL),
                ("relisshared", BOOL),
                ("relpersistence", CHAR),
                ("relkind", CHAR),
                ("relnatts", I2),
                ("relchecks", I2),
                ("relhasrules", BOOL),
                ("relhastriggers", BOOL),
                ("relhassubclass", BOOL),
                ("relrowsecurity", BOOL),
                ("relforcerowsecurity", BOOL),
                ("relispopulated", BOOL),
                ("relreplident", CHAR),
                ("relispartition", BOOL),
                ("relrewrite", OID),
                ("relacl", T::Text),
                ("reloptions", T::Text),
                ("relpartbound", T::Text),
            ],
            V::Attribute => vec![
                ("attrelid", OID),
                ("attname", NAME),
                ("atttypid", OID),
                ("attstattarget", I4),
                ("attlen", I2),
                ("attnum", I2),
                ("attndims", I4),
                ("atttypmod", I4),
                ("attbyval", BOOL),
                ("attalign", CHAR),
                ("attstorage", CHAR),
                ("attcompression", CHAR),
                ("attnotnull", BOOL),
                ("atthasdef", BOOL),
                ("atthasmissing", BOOL),
                ("attidentity", CHAR),
                ("attgenerated", CHAR),
                ("attisdropped", BOOL),
                ("attislocal", BOOL),
                ("attinhcount", I4),
                ("attcollation", OID),
                ("attacl", T::Text),
                ("attoptions", T::Text),
            ],
            V::Attrdef => vec![
                ("oid", OID),
                ("adrelid", OID),
                ("adnum", I2),
                ("adbin", T::Text),
            ],
            V::Index => vec![
                ("indexrelid", OID),
                ("indrelid", OID),
                ("indnatts", I2),
                ("indnkeyatts", I2),
                ("indisunique", BOOL),
                ("indnullsnotdistinct", BOOL),
                ("indisprimary", BOOL),
                ("indisexclusion", BOOL),
                ("indimmediate", BOOL),
                ("indisclustered", BOOL),
                ("indisvalid", BOOL),
                ("indcheckxmin", BOOL),
                ("indisready", BOOL),
                ("indislive", BOOL),
                ("indisreplident", BOOL),
                ("indkey", T::Text),
                ("indcollation", T::Text),
                ("indclass", T::Text),
                ("indoption", T::Text),
                ("indexprs", T::Text),
                ("indpred", T::Text),
            ],
            V::Constraint => vec![
                ("oid", OID),
                ("conname", NAME),
                ("connamespace", OID),
                ("contype", CHAR),
                ("condeferrable", BOOL),
                ("condeferred", BOOL),
                ("convalidated", BOOL),
                ("conrelid", OID),
                ("contypid", OID),
                ("conindid", OID),
                ("conparentid", OID),
                ("confrelid", OID),
                ("confupdtype", CHAR),
                ("confdeltype", CHAR),
                ("confmatchtype", CHAR),
                ("conislocal", BOOL),
                ("coninhcount", I4),
                ("connoinherit", BOOL),
                ("conkey", T::Text),
                ("confkey", T::Text),
                ("conbin", T::Text),
            ],
            V::Am => vec![
                ("oid", OID),
                ("amname", NAME),
                ("amhandler", T::Text),
                ("amtype", CHAR),
            ],
            V::Collation => vec![
                ("oid", OID),
                ("collname", NAME),
                ("collnamespace", OID),
                ("collowner", OID),
                ("collprovider", CHAR),
                ("collisdeterministic", BOOL),
                ("collencoding", I4),
                ("collcollate", T::Text),
                ("collctype", T::Text),
            ],
            V::Type => vec![
                ("oid", OID),
                ("typname", NAME),
                ("typnamespace", OID),
                ("typowner", OID),
                ("typlen", I2),
                ("typbyval", BOOL),
                ("typtype", CHAR),
                ("typcategory", CHAR),
                ("typisdefined", BOOL),
                ("typrelid", OID),
                ("typelem", OID),
                ("typarray", OID),
                ("typnotnull", BOOL),
                ("typbasetype", OID),
                ("typtypmod", I4),
                ("typndims", I4),
                ("typcollation", OID),
                // What psycopg's TypeInfo.fetch and asyncpg's introspection read.
                ("typdelim", CHAR),
                ("typinput", NAME),
                ("typoutput", NAME),
                ("typreceive", NAME),
                ("typsend", NAME),
                ("typalign", CHAR),
                ("typstorage", CHAR),
                ("typdefault", T::Text),
            ],
            V::Inherits => vec![
                ("inhrelid", OID),
                ("inhparent", OID),
                ("inhseqno", I4),
                ("inhdetachpending", BOOL),
            ],
            V::PartitionedTable => vec![
                ("partrelid", OID),
                ("partstrat", CHAR),
                ("partnatts", I2),
                ("partdefid", OID),
            ],
            V::Policy => vec![
                ("oid", OID),
                ("polname", NAME),
                ("polrelid", OID),
                ("polcmd", CHAR),
                ("polpermissive", BOOL),
                ("polroles", T::Text),
                ("polqual", T::Text),
                ("polwithcheck", T::Text),
            ],
            V::StatisticExt => vec![
                ("oid", OID),
                ("stxrelid", OID),
                ("stxname", NAME),
                ("stxnamespace", OID),
                ("stxowner", OID),
                ("stxstattarget", I4),
                ("stxkeys", T::Text),
                ("stxkind", T::Text),
                ("stxexprs", T::Text),
            ],
            V::Publication => vec![
                ("oid", OID),
                ("pubname", NAME),
                ("pubowner", OID),
                ("puballtables", BOOL),
                ("pubinsert", BOOL),
                ("pubupdate", BOOL),
                ("pubdelete", BOOL),
                ("pubtruncate", BOOL),
                ("pubviaroot", BOOL),
            ],
            V::PublicationNamespace => {
                vec![("oid", OID), ("pnpubid", OID), ("pnnspid", OID)]
            }
            V::PublicationRel => vec![
                ("oid", OID),
                ("prpubid", OID),
                ("prrelid", OID),
                ("prqual", T::Text),
                ("prattrs", T::Text),
            ],
            V::Roles | V::Authid => vec![
                ("oid", OID),
                ("rolname", NAME),
                ("rolsuper", BOOL),
                ("rolinherit", BOOL),
                ("rolcreaterole", BOOL),
                ("rolcreatedb", BOOL),
                ("rolcanlogin", BOOL),
                ("rolreplication", BOOL),
                ("rolconnlimit", I4),
                ("rolpassword", T::Text),
                ("rolvaliduntil", T::Timestamp),
                ("rolbypassrls", BOOL),
                ("rolconfig", T::Text),
            ],
            V::Sequence => vec![
                ("seqrelid", OID),
                ("seqtypid", OID),
                ("seqstart", T::BigInt),
                ("seqincrement", T::BigInt),
                ("seqmax", T::BigInt),
                ("seqmin", T::BigInt),
                ("seqcache", T::BigInt),
                ("seqcycle", BOOL),
            ],
            V::Depend => vec![
                ("classid", OID),
                ("objid", OID),
                ("objsubid", I4),
                ("refclassid", OID),
                ("refobjid", OID),
                ("refobjsubid", I4),
                ("deptype", CHAR),
            ],
            V::Description => vec![
                ("objoid", OID),
                ("classoid", OID),
                ("objsubid", I4),
                ("description", T::Text),
            ],
            V::Trigger => vec![
                ("oid", OID),
                ("tgrelid", OID),
                ("tgparentid", OID),
                ("tgname", NAME),
                ("tgfoid", OID),
                ("tgtype", I2),
                ("tgenabled", CHAR),
                ("tgisinternal", BOOL),
                ("tgconstraint", OID),
            ],
            V::Rewrite => vec![
                ("oid", OID),
                ("rulename", NAME),
                ("ev_class", OID),
                ("ev_type", CHAR),
                ("ev_enabled", CHAR),
                ("is_instead", BOOL),
            ],
            V::AuthMembers => vec![
                ("oid", OID),
                ("roleid", OID),
                ("member", OID),
                ("grantor", OID),
                ("admin_option", BOOL),
            ],
            V::Extension => vec![
                ("oid", OID),
                ("extname", NAME),
                ("extowner", OID),
                ("extnamespace", OID),
                ("extrelocatable", BOOL),
                ("extversion", T::Text),
            ],
            V::Proc => vec![
                ("oid", OID),
                ("proname", NAME),
                ("pronamespace", OID),
                ("proowner", OID),
                ("prolang", OID),
                ("prokind", CHAR),
                ("proretset", BOOL),
                ("pronargs", I2),
                ("prorettype", OID),
                ("proargtypes", T::Text),
            ],
            V::Tablespace => vec![
                ("oid", OID),
                ("spcname", NAME),
                ("spcowner", OID),
                ("spcacl", T::Text),
                ("spcoptions", T::Text),
            ],
            V::Tables => vec![
                ("schemaname", NAME),
                ("tablename", NAME),
                ("tableowner", NAME),
                ("tablespace", NAME),
                ("hasindexes", BOOL),
                ("hasrules", BOOL),
                ("hastriggers", BOOL),
                ("rowsecurity", BOOL),
            ],
            V::Indexes => vec![
                ("schemaname", NAME),
                ("tablename", NAME),
                ("indexname", NAME),
                ("tablespace", NAME),
                ("indexdef", T::Text),
            ],
            V::InfoTables => vec![
                ("table_catalog", T::Text),
                ("table_schema", T::Text),
                ("table_name", T::Text),
                ("table_type", T::Text),
            ],
            V::Info(v) => v.columns(),
            V::InfoColumns => vec![
                ("table_catalog", T::Text),
                ("table_schema", T::Text),
                ("table_name", T::Text),
                ("column_name", T::Text),
                ("ordinal_position", T::Int),
                ("column_default", T::Text),
                ("is_nullable", T::Text),
                ("data_type", T::Text),
                ("character_maximum_length", T::Int),
                ("numeric_precision", T::Int),
                ("numeric_scale", T::Int),
            ],
        }
    }
}

fn i(v: i64) -> Value {
    Value::Int(v)
}

fn b(v: bool) -> Value {
    Value::Bool(v)
}

fn t(s: impl AsRef<str>) -> Value {
    Value::text(s)
}

const NULL: Value = Value::Null;

/// Storage strategy, length and by-value flag of a column type, as
/// `pg_attribute` reports them.
fn storage(oid: i64) -> (&'static str, i64, bool) {
    let len = TYPES.iter().find(|t| t.oid == oid).map_or(-1, |t| t.len);
    match oid {
        1700 => ("m", -1, false),
        _ if len < 0 => ("x", -1, false),
        _ => ("p", len, len <= 8),
    }
}

fn collation_of(oid: i64) -> i64 {
    if TYPES.iter().any(|t| t.oid == oid && t.collatable) {
        COLL_DEFAULT
    } else {
        0
    }
}

/// One `pg_attribute` row.
fn attribute_row(
    relid: i64,
    num: usize,
    c: &ColumnDef,
    has_def: bool,
    not_null: bool,
) -> Vec<Value> {
    let (oid, typmod) = type_oid_and_mod(&c.data_type);
    let (st, len, byval) = storage(oid);
    vec![
        i(relid),
        t(&c.name),
        i(oid),
        i(-1),
        i(len),
        i(num as i64),
        i(0),
        i(typmod),
        b(byval),
        t(if len == 8 || len < 0 { "d" } else { "i" }),
        t(st),
        t(""),
        b(not_null),
        b(has_def),
        b(false),
        t(""),
        t(""),
        b(false),
        b(true),
        i(0),
        i(collation_of(oid)),
        NULL,
        NULL,
    ]
}

/// The rows of a catalog view for the session's database.
pub fn rows(view: PgView, env: &Env<'_>) -> Result<Vec<Vec<Value>>> {
    use PgView as V;
    let db = env.tx.database();
    let user = &env.info.user;
    let mut out = Vec::new();
    match view {
        V::Cursors => out = crate::cursor::pg_cursors_rows(&env.info.cursors),
        V::Database => {
            for d in env.instance.databases() {
                out.push(vec![
                    i(d.id() as i64),
                    t(d.name()),
                    i(OWNER_OID),
                    i(6),
                    t("C.UTF-8"),
                    t("C.UTF-8"),
                    NULL,
                    t("c"),
                    b(false),
                    b(true),
                    i(-1),
                    i(1663),
                    NULL,
                ]);
            }
        }
        V::Namespace => {
            for (oid, name) in NAMESPACES {
                out.push(vec![i(*oid), t(name), i(OWNER_OID), NULL]);
            }
        }
        V::Am => {
            out.push(vec![i(AM_HEAP), t("heap"), t("heap_tableam_handler"), t("t")]);
            out.push(vec![i(AM_BTREE), t("btree"), t("bthandler"), t("i")]);
        }
        V::Collation => {
            for (oid, name, provider) in [
                (COLL_DEFAULT, "default", "d"),
                (COLL_C, "C", "c"),
                (COLL_POSIX, "POSIX", "c"),
            ] {
                let locale = if oid == COLL_DEFAULT { NULL } else { t(name) };
                out.push(vec![
                    i(oid),
                    t(name),
                    i(NS_PG_CATALOG),
                    i(OWNER_OID),
                    t(provider),
                    b(true),
                    i(-1),
                    locale.clone(),
                    locale,
                ]);
            }
        }
        V::Type => {
            for ty in TYPES {
                out.push(vec![
                    i(ty.oid),
                    t(ty.name),
                    i(NS_PG_CATALOG),
                    i(OWNER_OID),
                    i(ty.len),
                    b(ty.len > 0 && ty.len <= 8),
                    t("b"),
                    t(ty.category),
                    b(true),
                    i(0),
                    i(0),
                    i(0),
                    b(false),
                    i(0),
                    i(-1),
                    i(0),
                    i(if ty.collatable { COLL_DEFAULT } else { 0 }),
                    t(","),
                    t(format!("{}in", ty.name)),
                    t(format!("{}out", ty.name)),
                    t(format!("{}recv", ty.name)),
                    t(format!("{}send", ty.name)),
                    t(match ty.len {
                        8 => "d",
                        4 | -1 => "i",
                        2 => "s",
                        _ => "c",
                    }),
                    t(if ty.len == -1 { "x" } else { "p" }),
                    NULL,
                ]);
            }
        }
        V::Roles => out = crate::privileges::role_rows(env, false)?,
        V::Authid => out = crate::privileges::role_rows(env, true)?,
        V::AuthMembers => out = crate::privileges::member_rows(env),
        V::Class => {
            for tb in db.tables() {
                let has_index = !tb.has_hidden_key() || !tb.def.indexes.is_empty();
                out.push(class_row(
                    user_oid(tb.id(), SLOT_TABLE),
                    tb.name(),
                    user_oid(tb.id(), SLOT_TABLE_TYPE),
                    AM_HEAP,
                    tb.len() as f64,
                    has_index,
                    "r",
                    tb.def.columns.len(),
                ));
                // Owner and grants from the role catalog (`privileges.rs`).
                let (acl, owner) = crate::privileges::table_acl(env, tb.id());
                if let Some(r) = out.last_mut() {
                    r[5] = i(owner);
                    r[18] = i(tb.def.checks.len() as i64);
                    // PostgreSQL enforces foreign keys with triggers on both
                    // tables; psql's \d lists them only when this is set.
                    r[20] = b(!tb.def.foreign_keys.is_empty()
                        || !db.referencing(tb.id()).is_empty());
                    let n = r.len();
                    r[n - 3] = acl;
                }
                for ix in indexes_of(&tb) {
                    out.push(class_row(
                        ix.oid,
                        &ix.name,
                        0,
                        AM_BTREE,
                        tb.len() as f64,
                        false,
                        "i",
                        ix.columns.len(),
                    ));
                }
            }
            for s in db.sequences() {
                out.push(class_row(
                    user_oid(s.id, SLOT_SEQUENCE),
                    &s.name,
                    user_oid(s.id, SLOT_SEQUENCE_TYPE),
                    0,
                    1.0,
                    false,
                    "S",
                    3,
                ));
            }
        }
        V::Attribute => {
            for tb in db.tables() {
                let relid = user_oid(tb.id(), SLOT_TABLE);
                for (n, c) in tb.def.columns.iter().enumerate() {
                    let has_def = default_text(&tb, c).is_some();
                    out.push(attribute_row(relid, n + 1, c, has_def, !c.nullable));
                }
                for ix in indexes_of(&tb) {
                    for (n, &k) in ix.columns.iter().enumerate() {
                        out.push(attribute_row(ix.oid, n + 1, &tb.def.columns[k], false, false));
                    }
                }
            }
        }
        V::Attrdef => {
            for tb in db.tables() {
                for (n, c) in tb.def.columns.iter().enumerate() {
                    if let Some(d) = default_text(&tb, c) {
                        out.push(vec![
                            i(attrdef_oid(tb.id(), n + 1)),
                            i(user_oid(tb.id(), SLOT_TABLE)),
                            i(n as i64 + 1),
                            t(d),
                        ]);
                    }
                }
            }
        }
        V::Index => {
            for ix in all_indexes(db) {
                let tb = &ix.table;
                let n = ix.columns.len();
                let keys: Vec<String> = ix.columns.iter().map(|k| (k + 1).to_string()).collect();
                let zeros = vec!["0"; n].join(" ");
                let colls: Vec<String> = ix
                    .columns
                    .iter()
                    .map(|&k| {
                        let (oid, _) = type_oid_and_mod(&tb.def.columns[k].data_type);
                        collation_of(oid).to_string()
                    })
                    .collect();
                out.push(vec![
                    i(ix.oid),
                    i(user_oid(tb.id(), SLOT_TABLE)),
                    i(n as i64),
                    i(n as i64),
                    b(ix.unique),
                    b(false),
                    b(ix.primary),
                    b(false),
                    b(true),
                    b(false),
                    b(true),
                    b(false),
                    b(true),
                    b(true),
                    b(false),
                    t(keys.join(" ")),
                    t(colls.join(" ")),
                    t(&zeros),
                    t(&zeros),
                    NULL,
                    NULL,
                ]);
            }
        }
        V::Constraint => {
            out.extend(crate::foreign_keys::catalog::pg_constraint_rows(db));
            for tb in db.tables() {
                for (n, c) in tb.def.checks.iter().enumerate() {
                    let conkey = crate::constraints::check_columns(env, &tb, c)
                        .map(|k| {
                            let k: Vec<String> = k.iter().map(|i| i.to_string()).collect();
                            t(array_format(k.iter().map(|s| Some(s.as_str()))))
                        })
                        .unwrap_or(NULL);
                    out.push(vec![
                        i(check_oid(tb.id(), n)),
                        t(&c.name),
                        i(NS_PUBLIC),
                        t("c"),
                        b(false),
                        b(false),
                        b(true),
                        i(user_oid(tb.id(), SLOT_TABLE)),
                        i(0),
                        i(0),
                        i(0),
                        i(0),
                        t(" "),
                        t(" "),
                        t(" "),
                        b(true),
                        i(0),
                        b(false),
                        conkey,
                        NULL,
                        t(&c.expr),
                    ]);
                }
            }
            for ix in all_indexes(db) {
                let Some((contype, con_oid)) = ix.constraint else {
                    continue;
                };
                let keys: Vec<String> = ix.columns.iter().map(|k| (k + 1).to_string()).collect();
                out.push(vec![
                    i(con_oid),
                    t(&ix.name),
                    i(NS_PUBLIC),
                    t(contype),
                    b(false),
                    b(false),
                    b(true),
                    i(user_oid(ix.table.id(), SLOT_TABLE)),
                    i(0),
                    i(ix.oid),
                    i(0),
                    i(0),
                    t(" "),
                    t(" "),
                    t(" "),
                    b(true),
                    i(0),
                    b(true),
                    t(array_format(keys.iter().map(|k| Some(k.as_str())))),
                    NULL,
                    NULL,
                ]);
            }
        }
        V::Sequence => {
            for s in db.sequences() {
                let (min, max) = if s.increment > 0 {
                    (1, i64::MAX)
                } else {
                    (i64::MIN, -1)
                };
                out.push(vec![
                    i(user_oid(s.id, SLOT_SEQUENCE)),
                    i(20),
                    i(s.start),
                    i(s.increment),
                    i(max),
                    i(min),
                    i(1),
                    b(false),
                ]);
            }
        }
        V::Tablespace => {
            for (oid, name) in [(1663, "pg_default"), (1664, "pg_global")] {
                out.push(vec![i(oid), t(name), i(OWNER_OID), NULL, NULL]);
            }
        }
        V::Tables => {
            for tb in db.tables() {
                out.push(vec![
                    t("public"),
                    t(tb.name()),
                    t(user),
                    NULL,
                    b(!tb.has_hidden_key()),
                    b(false),
                    b(false),
                    b(false),
                ]);
            }
        }
        V::Indexes => {
            for ix in all_indexes(db) {
                out.push(vec![
                    t("public"),
                    t(ix.table.name()),
                    t(&ix.name),
                    NULL,
                    t(ix.definition()),
                ]);
            }
        }
        V::Info(v) => out.extend(v.rows(db)),
        V::InfoTables => {
            for tb in db.tables() {
                out.push(vec![
                    t(db.name()),
                    t("public"),
                    t(tb.name()),
                    t("BASE TABLE"),
                ]);
            }
        }
        V::InfoColumns => {
            for tb in db.tables() {
                for (n, c) in tb.def.columns.iter().enumerate() {
                    let (oid, _) = type_oid_and_mod(&c.data_type);
                    let (len, prec, scale) = match c.data_type {
                        DataType::Varchar(n) => (n.map(|n| i(n as i64)), NULL, NULL),
                        DataType::Decimal { precision, scale } if precision > 0 => {
                            (None, i(precision as i64), i(scale as i64))
                        }
                        DataType::SmallInt => (None, i(16), i(0)),
                        DataType::Int => (None, i(32), i(0)),
                        DataType::BigInt => (None, i(64), i(0)),
                        _ => (None, NULL, NULL),
                    };
                    out.push(vec![
                        t(db.name()),
                        t("public"),
                        t(tb.name()),
                        t(&c.name),
                        i(n as i64 + 1),
                        default_text(&tb, c).map(t).unwrap_or(NULL),
                        t(if c.nullable { "YES" } else { "NO" }),
                        t(format_type(oid, None).unwrap_or_default()),
                        len.unwrap_or(NULL),
                        prec,
                        scale,
                    ]);
                }
            }
        }
        // Features Walden does not have: no rows.
        V::Inherits
        | V::PartitionedTable
        | V::Policy
        | V::StatisticExt
        | V::Publication
        | V::PublicationNamespace
        | V::PublicationRel
        | V::Depend
        | V::Description
        | V::Trigger
        | V::Rewrite
        | V::Extension
        // Walden's functions are built in and not listed.
        | V::Proc => {}
    }
    // Rows are built by hand next to the column lists above; a mismatch
    // would make column references read the wrong value (or past the row),
    // so it is an error rather than a wrong answer.
    let width = view.columns().len();
    if let Some(r) = out.iter().find(|r| r.len() != width) {
        return Err(SqlError::internal(format!(
            "catalog view {view:?} built a row of {} values for {width} columns",
            r.len()
        )));
    }
    Ok(out)
}

#[allow(clippy::too_many_arguments)]
fn class_row(
    oid: i64,
    name: &str,
    reltype: i64,
    am: i64,
    tuples: f64,
    has_index: bool,
    kind: &str,
    natts: usize,
) -> Vec<Value> {
    vec![
        i(oid),
        t(name),
        i(NS_PUBLIC),
        i(reltype),
        i(0),
        i(OWNER_OID),
        i(am),
        i(oid),
        i(0),
        i(0),
        Value::Float(tuples),
        i(0),
        i(0),
        b(has_index),
        b(false),
        t("p"),
        t(kind),
        i(natts as i64),
        i(0),
        b(false),
        b(false),
        b(false),
        b(false),
        b(false),
        b(true),
        t(if kind == "r" { "d" } else { "n" }),
        b(false),
        i(0),
        NULL,
        NULL,
        NULL,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_names_match_postgres() {
        assert_eq!(format_type(23, Some(-1)).unwrap(), "integer");
        assert_eq!(
            format_type(1043, Some(24)).unwrap(),
            "character varying(20)"
        );
        assert_eq!(
            format_type(1700, Some((12 << 16 | 2) + 4)).unwrap(),
            "numeric(12,2)"
        );
        assert_eq!(
            format_type(1114, None).unwrap(),
            "timestamp without time zone"
        );
        assert!(format_type(123_456, None).is_none());
        for (t, want) in [
            (DataType::Varchar(Some(20)), "character varying(20)"),
            (
                DataType::Decimal {
                    precision: 12,
                    scale: 2,
                },
                "numeric(12,2)",
            ),
            (DataType::BigInt, "bigint"),
            (DataType::Text, "text"),
        ] {
            let (oid, m) = type_oid_and_mod(&t);
            assert_eq!(format_type(oid, Some(m)).unwrap(), want);
        }
    }

    #[test]
    fn arrays_round_trip_in_text_form() {
        let items = [Some("a"), Some("b c"), None, Some(""), Some("x\"y")];
        let s = array_format(items);
        assert_eq!(s, r#"{a,"b c",NULL,"","x\"y"}"#);
        let back = array_parse(&s).unwrap();
        assert_eq!(
            back,
            items
                .iter()
                .map(|x| x.map(String::from))
                .collect::<Vec<_>>()
        );
        assert_eq!(array_parse("{}").unwrap(), vec![]);
        assert_eq!(
            array_parse("{1, 2}").unwrap(),
            vec![Some("1".into()), Some("2".into())]
        );
        assert!(array_parse("not an array").is_none());
        assert!(array_parse("{\"unterminated}").is_none());
    }

    #[test]
    fn oids_decode_to_their_objects() {
        assert_eq!(decode_oid(table_oid(3)), Some((3, SLOT_TABLE)));
        assert_eq!(decode_oid(user_oid(3, SLOT_PKEY)), Some((3, SLOT_PKEY)));
        assert_eq!(decode_oid(100), None);
    }

    #[test]
    fn idents_and_sizes_print_like_postgres() {
        assert_eq!(quote_ident("abc_1"), "abc_1");
        assert_eq!(quote_ident("Abc"), "\"Abc\"");
        assert_eq!(quote_ident("user"), "\"user\"");
        assert_eq!(
            split_qualified("public.\"T\""),
            (Some("public".into()), "T".into())
        );
        assert_eq!(size_pretty(8192), "8192 bytes");
        assert_eq!(size_pretty(10 * 1024 * 1024), "10 MB");
        assert_eq!(size_pretty(123_456), "121 kB");
        assert_eq!(size_pretty(i64::MIN), "-8388608 TB");
    }
}
