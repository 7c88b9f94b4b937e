//! Schemas in the catalog: kept by name, applied alike live and at redo,
//! and read by a transaction without other open transactions' changes.

use super::{Catalog, Database};
use crate::namespace::SchemaDef;
use std::sync::Arc;

impl Catalog {
    pub fn schema(&self, name: &str) -> Option<&Arc<SchemaDef>> {
        self.schemas.get(name)
    }

    /// Adds schema `def`, or replaces the one of its id (renamed or given
    /// another owner).
    pub(crate) fn put_schema(&mut self, def: SchemaDef) {
        self.schemas.retain(|_, s| s.id != def.id);
        self.next_table_id = self.next_table_id.max(def.id.saturating_add(1));
        self.schemas.insert(def.name.clone(), Arc::new(def));
    }

    pub(crate) fn drop_schema(&mut self, id: u32) {
        self.schemas.retain(|_, s| s.id != id);
    }

    /// The lower-case engine names of every relation and type (tables,
    /// indexes, sequences, views, enum types).
    fn object_names(&self) -> Vec<String> {
        let mut out: Vec<String> = self.tables.keys().cloned().collect();
        for t in self.tables.values() {
            for i in &t.def.indexes {
                out.push(i.name.to_ascii_lowercase());
            }
        }
        out.extend(self.sequences.keys().cloned());
        out.extend(self.views.keys().cloned());
        out.extend(self.enums.keys().cloned());
        out
    }
}

impl Database {
    /// The schemas transaction `txid` sees, in id order.
    pub fn schemas_as(&self, txid: Option<u64>) -> Vec<Arc<SchemaDef>> {
        let cat = self.catalog.read();
        let view = self.view_as(&cat, txid);
        let mut out: Vec<Arc<SchemaDef>> = view
            .as_ref()
            .unwrap_or(&cat)
            .schemas
            .values()
            .cloned()
            .collect();
        out.sort_by_key(|s| s.id);
        out
    }

    /// The schemas and the lower-case engine names of every relation and
    /// type transaction `txid` sees (what resolving a name along a
    /// `search_path` needs); no names when there is no schema but `public`.
    pub fn namespaces_as(&self, txid: Option<u64>) -> (Vec<Arc<SchemaDef>>, Vec<String>) {
        let cat = self.catalog.read();
        // The live catalog holds every open transaction's changes: no
        // schema there, none for anyone.
        if cat.schemas.is_empty() {
            return (Vec::new(), Vec::new());
        }
        let view = self.view_as(&cat, txid);
        let c = view.as_ref().unwrap_or(&cat);
        if c.schemas.is_empty() {
            return (Vec::new(), Vec::new());
        }
        let mut out: Vec<Arc<SchemaDef>> = c.schemas.values().cloned().collect();
        out.sort_by_key(|s| s.id);
        (out, c.object_names())
    }
}
