//! Enum types in the catalog: kept by name, applied alike live and at
//! redo, and carried into every table definition whose columns use them.

use super::{Catalog, Database};
use crate::table::Table;
use crate::types::{DataType, EnumRef, EnumType};
use std::sync::Arc;

/// `t` with enum type `e` put in for the type of the same id (in an
/// array's element too); `None` when `t` does not use it.
fn retyped(t: &DataType, e: &Arc<EnumType>) -> Option<DataType> {
    match t {
        DataType::Enum(r) if r.id() == e.id => Some(DataType::Enum(EnumRef(e.clone()))),
        DataType::Array(inner) => retyped(inner, e).map(|i| DataType::Array(Box::new(i))),
        _ => None,
    }
}

/// Whether `t` is enum type `id` or an array of it.
pub(crate) fn uses_enum(t: &DataType, id: u32) -> bool {
    match t {
        DataType::Enum(r) => r.id() == id,
        DataType::Array(inner) => uses_enum(inner, id),
        _ => false,
    }
}

impl Catalog {
    /// Adds enum type `def`, or replaces the one of its id (which may have
    /// had another name); tables with columns of the type take the new
    /// definition.
    pub(crate) fn put_enum(&mut self, def: EnumType) {
        self.enums.retain(|_, e| e.id != def.id);
        self.next_table_id = self.next_table_id.max(def.id.saturating_add(1));
        let def = Arc::new(def);
        self.enums
            .insert(def.name.to_ascii_lowercase(), def.clone());
        let users: Vec<Arc<Table>> = self
            .by_id
            .values()
            .filter(|t| {
                t.def
                    .columns
                    .iter()
                    .any(|c| uses_enum(&c.data_type, def.id))
            })
            .cloned()
            .collect();
        for t in users {
            let mut td = t.def.clone();
            for c in &mut td.columns {
                if let Some(n) = retyped(&c.data_type, &def) {
                    c.data_type = n;
                }
            }
            self.add_table(Arc::new(t.sharing(td)));
        }
    }

    pub(crate) fn drop_enum(&mut self, id: u32) {
        self.enums.retain(|_, e| e.id != id);
    }

    /// Columns of enum type `id` (or arrays of it), as (table, column), in
    /// table creation order.
    pub(crate) fn enum_users(&self, id: u32) -> Vec<(Arc<Table>, String)> {
        let mut tables: Vec<&Arc<Table>> = self.by_id.values().collect();
        tables.sort_by_key(|t| t.id());
        let mut out = Vec::new();
        for t in tables {
            for c in &t.def.columns {
                if uses_enum(&c.data_type, id) {
                    out.push((t.clone(), c.name.clone()));
                }
            }
        }
        out
    }
}

impl Database {
    /// The catalog as transaction `txid` sees it: without other open
    /// transactions' catalog changes (`None`: as it stands).
    fn catalog_as(&self, txid: Option<u64>) -> Catalog {
        let cat = self.catalog.read();
        let reg = self.txns.uncommitted_ddl.lock();
        let mut view = cat.shallow_copy();
        if let Some(me) = txid {
            for (t, reverts) in reg.iter() {
                if *t != me {
                    for r in reverts.iter().rev() {
                        view.revert(r);
                    }
                }
            }
        }
        view
    }

    /// Enum type `name` as transaction `txid` sees it.
    pub fn enum_type_as(&self, txid: Option<u64>, name: &str) -> Option<Arc<EnumType>> {
        self.catalog_as(txid)
            .enums
            .get(&name.to_ascii_lowercase())
            .cloned()
    }

    /// Every enum type transaction `txid` sees, in id order.
    pub fn enum_types_as(&self, txid: Option<u64>) -> Vec<Arc<EnumType>> {
        let mut out: Vec<Arc<EnumType>> = self.catalog_as(txid).enums.values().cloned().collect();
        out.sort_by_key(|e| e.id);
        out
    }

    /// Columns using enum type `id`, as (table, column).
    pub fn enum_users(&self, id: u32) -> Vec<(String, String)> {
        self.catalog
            .read()
            .enum_users(id)
            .into_iter()
            .map(|(t, c)| (t.name().to_string(), c))
            .collect()
    }
}
