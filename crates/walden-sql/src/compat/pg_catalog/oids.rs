//! The OID scheme: fixed OIDs, user OIDs derived from engine ids, relations by OID or name.

use super::*;

/// A database's relations as one transaction sees them: its own
/// uncommitted DDL, other transactions' only once committed (as
/// PostgreSQL's catalogs show them through MVCC). Everything else is the
/// database's.
pub struct Seen<'a> {
    pub(super) db: &'a Database,
    pub(super) viewer: Option<u64>,
}

impl<'a> Seen<'a> {
    /// `viewer: None` sees the current catalog.
    pub fn new(db: &'a Database, viewer: Option<u64>) -> Seen<'a> {
        Seen { db, viewer }
    }

    /// The database as the expression's transaction sees it.
    pub fn of(env: &'a Env<'_>) -> Seen<'a> {
        Seen::new(env.tx.database(), Some(env.tx.id()))
    }

    /// The database's tables, without the ones that store routines.
    pub fn tables(&self) -> Vec<Arc<Table>> {
        let mut t = self.db.tables_as(self.viewer);
        t.retain(|t| !crate::front::plpgsql::is_routine_table(t.name()));
        t
    }

    pub fn sequences(&self) -> Vec<SequenceDef> {
        self.db.sequences_as(self.viewer)
    }

    pub fn table(&self, name: &str) -> walden_engine::Result<Arc<Table>> {
        self.db.table_as(self.viewer, name)
    }
}

impl std::ops::Deref for Seen<'_> {
    type Target = Database;
    fn deref(&self) -> &Database {
        self.db
    }
}

/// A relation of the current database, found by OID or by name.
pub(super) enum Rel {
    Table(Arc<Table>),
    /// A table's primary key (PostgreSQL's `<table>_pkey` index) or a
    /// secondary index.
    Index(CatIndex),
    Sequence(SequenceDef),
    View(Arc<walden_engine::ViewDef>),
}

/// An index as the catalogs show it.
#[derive(Clone)]
pub(super) struct CatIndex {
    pub(super) table: Arc<Table>,
    pub(super) oid: i64,
    pub(super) name: String,
    pub(super) columns: Vec<usize>,
    /// Per column, `indoption`'s bits (empty: all ASC NULLS LAST).
    pub(super) options: Vec<u8>,
    pub(super) unique: bool,
    pub(super) primary: bool,
    /// The constraint it implements: its type (`p`, `u`) and OID.
    pub(super) constraint: Option<(&'static str, i64)>,
}

impl CatIndex {
    pub(super) fn column_names(&self) -> String {
        self.columns
            .iter()
            .map(|&i| quote_ident(&self.table.def.columns[i].name))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Column `k`'s `indoption` bits.
    pub(super) fn option(&self, k: usize) -> u8 {
        self.options.get(k).copied().unwrap_or(0)
    }

    /// Key column `k` as `pg_get_indexdef` shows it: its name, then its
    /// order where it is not the default (`DESC` puts NULLs first).
    pub(super) fn column_text(&self, k: usize) -> String {
        use walden_engine::{INDEX_DESC, INDEX_NULLS_FIRST};
        let mut s = quote_ident(&self.table.def.columns[self.columns[k]].name);
        let o = self.option(k);
        let desc = o & INDEX_DESC != 0;
        let nulls_first = o & INDEX_NULLS_FIRST != 0;
        if desc {
            s.push_str(" DESC");
        }
        if nulls_first != desc {
            s.push_str(if nulls_first {
                " NULLS FIRST"
            } else {
                " NULLS LAST"
            });
        }
        s
    }

    pub(super) fn definition(&self) -> String {
        format!(
            "CREATE {}INDEX {} ON public.{} USING btree ({})",
            if self.unique { "UNIQUE " } else { "" },
            quote_ident(&self.name),
            quote_ident(self.table.name()),
            (0..self.columns.len())
                .map(|k| self.column_text(k))
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}

/// A table's indexes: the primary key's first, then the secondary ones.
pub(super) fn indexes_of(tb: &Arc<Table>) -> Vec<CatIndex> {
    let mut out = Vec::new();
    if !tb.has_hidden_key() {
        out.push(CatIndex {
            table: tb.clone(),
            oid: user_oid(tb.id(), SLOT_PKEY),
            name: pkey_name(tb),
            columns: tb.def.primary_key.clone(),
            options: Vec::new(),
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
            options: ix.options.clone(),
            unique: ix.unique,
            primary: false,
            constraint: ix
                .constraint
                .then(|| ("u", user_oid(ix.id, SLOT_INDEX_CONSTRAINT))),
        });
    }
    out
}

pub(super) fn all_indexes(db: &Seen<'_>) -> Vec<CatIndex> {
    db.tables().iter().flat_map(indexes_of).collect()
}

impl Rel {
    pub(super) fn oid(&self) -> i64 {
        match self {
            Rel::Table(t) => user_oid(t.id(), SLOT_TABLE),
            Rel::Index(ix) => ix.oid,
            Rel::Sequence(s) => user_oid(s.id, SLOT_SEQUENCE),
            Rel::View(v) => user_oid(v.id, SLOT_TABLE),
        }
    }

    pub(super) fn name(&self) -> String {
        match self {
            Rel::Table(t) => t.name().to_string(),
            Rel::Index(ix) => ix.name.clone(),
            Rel::Sequence(s) => s.name.clone(),
            Rel::View(v) => v.name.clone(),
        }
    }
}

pub(super) fn pkey_name(t: &Table) -> String {
    t.def.pkey_name()
}

pub(super) fn rel_by_oid(db: &Seen<'_>, oid: i64) -> Option<Rel> {
    let (id, slot) = decode_oid(oid)?;
    match slot {
        SLOT_TABLE => db
            .tables()
            .into_iter()
            .find(|t| t.id() == id)
            .map(Rel::Table)
            .or_else(|| db.views().into_iter().find(|v| v.id == id).map(Rel::View)),
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

pub(super) fn rel_by_name(db: &Seen<'_>, name: &str) -> Option<Rel> {
    if let Ok(t) = db.table(name) {
        return Some(Rel::Table(t));
    }
    if let Some(v) = db.db.user_view_as(db.viewer, name) {
        return Some(Rel::View(v));
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
pub(super) const SYSTEM_RELATIONS: &[(i64, &str)] = &[
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
    (2616, "pg_opclass"),
    (2618, "pg_rewrite"),
    (2620, "pg_trigger"),
    (3256, "pg_policy"),
    (3381, "pg_statistic_ext"),
    (3456, "pg_collation"),
    (6104, "pg_publication"),
    (6106, "pg_publication_rel"),
    (6237, "pg_publication_namespace"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oids_decode_to_their_objects() {
        assert_eq!(decode_oid(table_oid(3)), Some((3, SLOT_TABLE)));
        assert_eq!(decode_oid(user_oid(3, SLOT_PKEY)), Some((3, SLOT_PKEY)));
        assert_eq!(decode_oid(100), None);
    }
}
