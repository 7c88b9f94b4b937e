//! The catalogs `pg_dump` reads beyond what psql and the drivers need, the
//! `tableoid` system column of the catalogs, and a sequence read as a
//! relation (`SELECT last_value, is_called FROM seq`).
//!
//! Walden has no procedural languages, user-defined operators, operator
//! families, casts, transforms, text search objects, foreign data wrappers,
//! default privileges, event triggers, large objects, security labels,
//! subscriptions, per-role settings, user-defined aggregates or range types,
//! so those catalogs have no rows. Like `pg_proc`, they do not list
//! Walden's built-in operators, casts and functions.

use super::rows::{b, i, t};
use super::views::{BOOL, CHAR, I2, I4, NAME, OID};
use super::*;

/// A catalog of objects Walden does not have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EmptyCatalog {
    Language,
    Operator,
    Opfamily,
    Amop,
    Amproc,
    TsParser,
    TsTemplate,
    TsDict,
    TsConfig,
    ForeignDataWrapper,
    ForeignServer,
    ForeignTable,
    UserMapping,
    DefaultAcl,
    Conversion,
    Cast,
    Transform,
    EventTrigger,
    LargeObjectMetadata,
    InitPrivs,
    Seclabel,
    Seclabels,
    Shseclabel,
    Subscription,
    DbRoleSetting,
    Aggregate,
    Range,
}

const EMPTY: &[(&str, EmptyCatalog)] = {
    use EmptyCatalog as E;
    &[
        ("pg_language", E::Language),
        ("pg_operator", E::Operator),
        ("pg_opfamily", E::Opfamily),
        ("pg_amop", E::Amop),
        ("pg_amproc", E::Amproc),
        ("pg_ts_parser", E::TsParser),
        ("pg_ts_template", E::TsTemplate),
        ("pg_ts_dict", E::TsDict),
        ("pg_ts_config", E::TsConfig),
        ("pg_foreign_data_wrapper", E::ForeignDataWrapper),
        ("pg_foreign_server", E::ForeignServer),
        ("pg_foreign_table", E::ForeignTable),
        ("pg_user_mapping", E::UserMapping),
        ("pg_default_acl", E::DefaultAcl),
        ("pg_conversion", E::Conversion),
        ("pg_cast", E::Cast),
        ("pg_transform", E::Transform),
        ("pg_event_trigger", E::EventTrigger),
        ("pg_largeobject_metadata", E::LargeObjectMetadata),
        ("pg_init_privs", E::InitPrivs),
        ("pg_seclabel", E::Seclabel),
        ("pg_seclabels", E::Seclabels),
        ("pg_shseclabel", E::Shseclabel),
        ("pg_subscription", E::Subscription),
        ("pg_db_role_setting", E::DbRoleSetting),
        ("pg_aggregate", E::Aggregate),
        ("pg_range", E::Range),
    ]
};

/// A `pg_catalog` relation of this file, by name.
pub(super) fn lookup_empty(name: &str) -> Option<EmptyCatalog> {
    EMPTY.iter().find(|(n, _)| *n == name).map(|(_, c)| *c)
}

const TEXT: DataType = DataType::Text;

impl EmptyCatalog {
    pub(super) fn columns(self) -> Vec<(&'static str, DataType)> {
        use EmptyCatalog as E;
        match self {
            E::Language => vec![
                ("oid", OID),
                ("lanname", NAME),
                ("lanowner", OID),
                ("lanispl", BOOL),
                ("lanpltrusted", BOOL),
                ("lanplcallfoid", OID),
                ("laninline", OID),
                ("lanvalidator", OID),
                ("lanacl", TEXT),
            ],
            E::Operator => vec![
                ("oid", OID),
                ("oprname", NAME),
                ("oprnamespace", OID),
                ("oprowner", OID),
                ("oprkind", CHAR),
                ("oprcanmerge", BOOL),
                ("oprcanhash", BOOL),
                ("oprleft", OID),
                ("oprright", OID),
                ("oprresult", OID),
                ("oprcom", OID),
                ("oprnegate", OID),
                ("oprcode", OID),
                ("oprrest", OID),
                ("oprjoin", OID),
            ],
            E::Opfamily => vec![
                ("oid", OID),
                ("opfmethod", OID),
                ("opfname", NAME),
                ("opfnamespace", OID),
                ("opfowner", OID),
            ],
            E::Amop => vec![
                ("oid", OID),
                ("amopfamily", OID),
                ("amoplefttype", OID),
                ("amoprighttype", OID),
                ("amopstrategy", I2),
                ("amoppurpose", CHAR),
                ("amopopr", OID),
                ("amopmethod", OID),
                ("amopsortfamily", OID),
            ],
            E::Amproc => vec![
                ("oid", OID),
                ("amprocfamily", OID),
                ("amproclefttype", OID),
                ("amprocrighttype", OID),
                ("amprocnum", I2),
                ("amproc", OID),
            ],
            E::TsParser => vec![
                ("oid", OID),
                ("prsname", NAME),
                ("prsnamespace", OID),
                ("prsstart", OID),
                ("prstoken", OID),
                ("prsend", OID),
                ("prsheadline", OID),
                ("prslextype", OID),
            ],
            E::TsTemplate => vec![
                ("oid", OID),
                ("tmplname", NAME),
                ("tmplnamespace", OID),
                ("tmplinit", OID),
                ("tmpllexize", OID),
            ],
            E::TsDict => vec![
                ("oid", OID),
                ("dictname", NAME),
                ("dictnamespace", OID),
                ("dictowner", OID),
                ("dicttemplate", OID),
                ("dictinitoption", TEXT),
            ],
            E::TsConfig => vec![
                ("oid", OID),
                ("cfgname", NAME),
                ("cfgnamespace", OID),
                ("cfgowner", OID),
                ("cfgparser", OID),
            ],
            E::ForeignDataWrapper => vec![
                ("oid", OID),
                ("fdwname", NAME),
                ("fdwowner", OID),
                ("fdwhandler", OID),
                ("fdwvalidator", OID),
                ("fdwacl", TEXT),
                ("fdwoptions", TEXT),
            ],
            E::ForeignServer => vec![
                ("oid", OID),
                ("srvname", NAME),
                ("srvowner", OID),
                ("srvfdw", OID),
                ("srvtype", TEXT),
                ("srvversion", TEXT),
                ("srvacl", TEXT),
                ("srvoptions", TEXT),
            ],
            E::ForeignTable => vec![("ftrelid", OID), ("ftserver", OID), ("ftoptions", TEXT)],
            E::UserMapping => vec![
                ("oid", OID),
                ("umuser", OID),
                ("umserver", OID),
                ("umoptions", TEXT),
            ],
            E::DefaultAcl => vec![
                ("oid", OID),
                ("defaclrole", OID),
                ("defaclnamespace", OID),
                ("defaclobjtype", CHAR),
                ("defaclacl", TEXT),
            ],
            E::Conversion => vec![
                ("oid", OID),
                ("conname", NAME),
                ("connamespace", OID),
                ("conowner", OID),
                ("conforencoding", I4),
                ("contoencoding", I4),
                ("conproc", OID),
                ("condefault", BOOL),
            ],
            E::Cast => vec![
                ("oid", OID),
                ("castsource", OID),
                ("casttarget", OID),
                ("castfunc", OID),
                ("castcontext", CHAR),
                ("castmethod", CHAR),
            ],
            E::Transform => vec![
                ("oid", OID),
                ("trftype", OID),
                ("trflang", OID),
                ("trffromsql", OID),
                ("trftosql", OID),
            ],
            E::EventTrigger => vec![
                ("oid", OID),
                ("evtname", NAME),
                ("evtevent", NAME),
                ("evtowner", OID),
                ("evtfoid", OID),
                ("evtenabled", CHAR),
                ("evttags", TEXT),
            ],
            E::LargeObjectMetadata => vec![("oid", OID), ("lomowner", OID), ("lomacl", TEXT)],
            E::InitPrivs => vec![
                ("objoid", OID),
                ("classoid", OID),
                ("objsubid", I4),
                ("privtype", CHAR),
                ("initprivs", TEXT),
            ],
            E::Seclabel => vec![
                ("objoid", OID),
                ("classoid", OID),
                ("objsubid", I4),
                ("provider", TEXT),
                ("label", TEXT),
            ],
            E::Shseclabel => vec![
                ("objoid", OID),
                ("classoid", OID),
                ("provider", TEXT),
                ("label", TEXT),
            ],
            E::Seclabels => vec![
                ("objoid", OID),
                ("classoid", OID),
                ("objsubid", I4),
                ("objtype", TEXT),
                ("objnamespace", OID),
                ("objname", TEXT),
                ("provider", TEXT),
                ("label", TEXT),
            ],
            E::Subscription => vec![
                ("oid", OID),
                ("subdbid", OID),
                ("subskiplsn", TEXT),
                ("subname", NAME),
                ("subowner", OID),
                ("subenabled", BOOL),
                ("subbinary", BOOL),
                ("substream", BOOL),
                ("subtwophasestate", CHAR),
                ("subdisableonerr", BOOL),
                ("subconninfo", TEXT),
                ("subslotname", NAME),
                ("subsynccommit", TEXT),
                ("subpublications", TEXT),
            ],
            E::DbRoleSetting => vec![("setdatabase", OID), ("setrole", OID), ("setconfig", TEXT)],
            E::Aggregate => vec![
                ("aggfnoid", OID),
                ("aggkind", CHAR),
                ("aggnumdirectargs", I2),
                ("aggtransfn", OID),
                ("aggfinalfn", OID),
                ("aggcombinefn", OID),
                ("aggtranstype", OID),
                ("agginitval", TEXT),
            ],
            E::Range => vec![
                ("rngtypid", OID),
                ("rngsubtype", OID),
                ("rngmultitypid", OID),
                ("rngcollation", OID),
                ("rngsubopc", OID),
                ("rngcanonical", OID),
                ("rngsubdiff", OID),
            ],
        }
    }

    /// The catalog's own OID (its `tableoid`); `None` for a view.
    fn relation_oid(self) -> Option<i64> {
        use EmptyCatalog as E;
        Some(match self {
            E::Language => 2612,
            E::Operator => 2617,
            E::Opfamily => 2753,
            E::Amop => 2602,
            E::Amproc => 2603,
            E::TsParser => 3601,
            E::TsTemplate => 3764,
            E::TsDict => 3600,
            E::TsConfig => 3602,
            E::ForeignDataWrapper => 2328,
            E::ForeignServer => 1417,
            E::ForeignTable => 3118,
            E::UserMapping => 1418,
            E::DefaultAcl => 826,
            E::Conversion => 2607,
            E::Cast => 2605,
            E::Transform => 3576,
            E::EventTrigger => 3466,
            E::LargeObjectMetadata => 2995,
            E::InitPrivs => 3394,
            E::Seclabel => 3596,
            E::Seclabels => return None,
            E::Shseclabel => 3592,
            E::Subscription => 6100,
            E::DbRoleSetting => 2964,
            E::Aggregate => 2600,
            E::Range => 3541,
        })
    }
}

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

/// The columns of a sequence read as a relation.
pub(super) fn sequence_relation_columns() -> Vec<(&'static str, DataType)> {
    vec![
        ("last_value", DataType::BigInt),
        ("log_cnt", DataType::BigInt),
        ("is_called", BOOL),
    ]
}

/// A sequence, or the counter behind an identity column, that a query
/// names as a relation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeqRel {
    Sequence(u32),
    /// The identity column of the table with this id.
    Identity(u32),
}

/// Finds the sequence `name` names: a sequence, or an identity column's
/// counter under the name its default shows (`<table>_<column>_seq`).
pub fn sequence_relation(db: &Seen<'_>, name: &str) -> Option<SeqRel> {
    if let Some(s) = db
        .sequences()
        .into_iter()
        .find(|s| s.name.eq_ignore_ascii_case(name))
    {
        return Some(SeqRel::Sequence(s.id));
    }
    db.tables().into_iter().find_map(|tb| {
        let (n, _) = tb.def.identity_column()?;
        identity_seq_name(&tb, n)
            .eq_ignore_ascii_case(name)
            .then(|| SeqRel::Identity(tb.id()))
    })
}

/// The name an identity column's counter goes by (PostgreSQL's name for a
/// serial column's sequence).
pub(super) fn identity_seq_name(tb: &Table, col: usize) -> String {
    format!("{}_{}_seq", tb.name(), tb.def.columns[col].name)
}

/// `pg_class.oid` of an identity column's counter: column number 0 of the
/// `pg_attrdef` OID scheme, which no default uses.
pub(super) fn identity_seq_oid(table_id: u32) -> i64 {
    attrdef_oid(table_id, 0)
}

/// The table whose identity counter has this `pg_class` OID.
pub(super) fn decode_identity_seq_oid(oid: i64) -> Option<u32> {
    if oid & 0x7ff != 0 {
        return None;
    }
    match decode_oid(oid >> 11)? {
        (id, SLOT_TABLE) => Some(id),
        _ => None,
    }
}

/// `last_value`, `log_cnt` and `is_called` of a sequence: `last_value` is
/// the value `nextval` handed out last (`is_called`), or the one it hands
/// out next (not called yet).
pub(super) fn sequence_relation_row(db: &Seen<'_>, rel: SeqRel) -> Option<Vec<Value>> {
    let (start, increment, next) = match rel {
        SeqRel::Sequence(id) => {
            let s = db.sequences().into_iter().find(|s| s.id == id)?;
            (s.start, s.increment, db.sequence_next(&s.name)?)
        }
        SeqRel::Identity(id) => {
            let tb = db.tables().into_iter().find(|t| t.id() == id)?;
            let (_, ident) = tb.def.identity_column()?;
            (ident.seed, ident.increment, tb.identity_next())
        }
    };
    let called = next != start;
    let last = if called { next - increment } else { next };
    Some(vec![i(last), i(0), b(called)])
}

/// The `pg_class` rows of the identity counters.
pub(super) fn identity_class_rows(db: &Seen<'_>) -> Vec<Vec<Value>> {
    let mut out = Vec::new();
    for tb in db.tables() {
        let Some((n, _)) = tb.def.identity_column() else {
            continue;
        };
        out.push(super::rows::class_row(
            identity_seq_oid(tb.id()),
            &identity_seq_name(&tb, n),
            0,
            0,
            1.0,
            false,
            "S",
            3,
        ));
    }
    out
}

/// The `pg_sequence` rows of the identity counters.
pub(super) fn identity_sequence_rows(db: &Seen<'_>) -> Vec<Vec<Value>> {
    let mut out = Vec::new();
    for tb in db.tables() {
        let Some((n, ident)) = tb.def.identity_column() else {
            continue;
        };
        let (type_oid, _) = type_oid_and_mod(&tb.def.columns[n].data_type);
        let max = match tb.def.columns[n].data_type {
            DataType::SmallInt => i16::MAX as i64,
            DataType::Int => i32::MAX as i64,
            _ => i64::MAX,
        };
        let (min, max) = if ident.increment > 0 {
            (1, max)
        } else {
            (-max - 1, -1)
        };
        out.push(vec![
            i(identity_seq_oid(tb.id())),
            i(type_oid),
            i(ident.seed),
            i(ident.increment),
            i(max),
            i(min),
            i(1),
            b(false),
        ]);
    }
    out
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
            match crate::constraints::check_columns(env, &tb, c) {
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
            let con = crate::foreign_keys::catalog::fk_oid(tb.id(), n);
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
            let key = crate::foreign_keys::catalog::referenced_index(&r, fk);
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
        V::Proc => vec![("proacl", TEXT, Value::Null)],
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

/// The one row of a sequence read as a relation; `args` holds its OID.
pub fn sequence_relation_rows(env: &Env<'_>, args: &[Value]) -> Result<Vec<Vec<Value>>> {
    let db = &Seen::of(env);
    let Some(Value::Int(oid)) = args.first() else {
        return Err(SqlError::internal("a sequence relation needs its OID"));
    };
    let rel = match decode_oid(*oid) {
        Some((id, SLOT_SEQUENCE)) => Some(SeqRel::Sequence(id)),
        _ => decode_identity_seq_oid(*oid).map(SeqRel::Identity),
    };
    Ok(rel
        .and_then(|r| sequence_relation_row(db, r))
        .into_iter()
        .collect())
}

/// The OID of a sequence found by `sequence_relation`.
pub fn sequence_relation_oid(rel: SeqRel) -> i64 {
    match rel {
        SeqRel::Sequence(id) => user_oid(id, SLOT_SEQUENCE),
        SeqRel::Identity(id) => identity_seq_oid(id),
    }
}

/// `pg_options_to_table(options)`: each `name=value` element as a row (an
/// element without `=` has a NULL value).
pub fn options_to_table(options: &Value) -> Vec<Vec<Value>> {
    crate::arrays::elements(options)
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

/// The name of the identity counter with this `pg_class` OID.
pub(super) fn identity_seq_name_by_oid(db: &Seen<'_>, oid: i64) -> Option<String> {
    let id = decode_identity_seq_oid(oid)?;
    let tb = db.tables().into_iter().find(|t| t.id() == id)?;
    let (n, _) = tb.def.identity_column()?;
    Some(identity_seq_name(&tb, n))
}

/// The schemas of the session's `search_path` that exist, in order, as
/// `current_schemas` lists them (`implicit`: with `pg_catalog` first when
/// the path does not name it, as it is searched anyway).
pub fn search_path_schemas(env: &Env<'_>, implicit: bool) -> Vec<&'static str> {
    let path = crate::search_path::SearchPath::of(&env.info.settings);
    if implicit {
        path.searched()
    } else {
        path.listed().to_vec()
    }
}

/// `text` with the relation name after each `marker` qualified by `public.`
/// when `public` is not on the search path (PostgreSQL qualifies a name
/// that the path would not find, as `pg_dump`'s empty path shows).
pub fn qualify_for_path(env: &Env<'_>, text: &str, marker: &str) -> String {
    if search_path_schemas(env, false).contains(&"public") || !text.contains(marker) {
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
    Ok(match tb.def.columns[n].identity {
        Some(_) => Value::text(format!(
            "public.{}",
            super::deparse::quote_ident(&identity_seq_name(&tb, n))
        )),
        None => Value::Null,
    })
}
