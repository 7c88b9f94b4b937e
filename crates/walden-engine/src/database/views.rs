//! Views in the catalog: kept by name, applied alike live and at redo, and
//! read by a transaction without other open transactions' changes.

use super::{Catalog, Database};
use crate::view::ViewDef;
use std::sync::Arc;

impl Catalog {
    pub fn view(&self, name: &str) -> Option<&Arc<ViewDef>> {
        self.views.get(&name.to_ascii_lowercase())
    }

    /// Adds view `def`, or replaces the one of its id (which may have had
    /// another name).
    pub(crate) fn put_view(&mut self, def: ViewDef) {
        self.views.retain(|_, v| v.id != def.id);
        self.next_table_id = self.next_table_id.max(def.id.saturating_add(1));
        self.views
            .insert(def.name.to_ascii_lowercase(), Arc::new(def));
    }

    pub(crate) fn drop_view(&mut self, id: u32) {
        self.views.retain(|_, v| v.id != id);
    }

    /// Views reading relation `id` (a table or a view), in id order.
    pub(crate) fn view_users(&self, id: u32) -> Vec<Arc<ViewDef>> {
        let mut out: Vec<Arc<ViewDef>> = self
            .views
            .values()
            .filter(|v| v.deps.contains(&id))
            .cloned()
            .collect();
        out.sort_by_key(|v| v.id);
        out
    }
}

impl Database {
    /// View `name` as transaction `txid` sees it (`None`: as it stands,
    /// with every open transaction's changes).
    pub fn user_view_as(&self, txid: Option<u64>, name: &str) -> Option<Arc<ViewDef>> {
        let cat = self.catalog.read();
        if cat.views.is_empty() && txid.is_some() && self.txns.uncommitted_ddl.lock().is_empty() {
            return None;
        }
        match self.view_as(&cat, txid) {
            Some(view) => view.view(name).cloned(),
            None => cat.view(name).cloned(),
        }
    }

    /// Every view transaction `txid` sees, in id order.
    pub fn user_views_as(&self, txid: Option<u64>) -> Vec<Arc<ViewDef>> {
        let cat = self.catalog.read();
        let view = self.view_as(&cat, txid);
        let mut out: Vec<Arc<ViewDef>> = view
            .as_ref()
            .unwrap_or(&cat)
            .views
            .values()
            .cloned()
            .collect();
        out.sort_by_key(|v| v.id);
        out
    }

    /// Views reading relation `id`, as the catalog stands.
    pub fn user_view_users(&self, id: u32) -> Vec<Arc<ViewDef>> {
        self.catalog.read().view_users(id)
    }
}

impl Database {
    /// Every comment transaction `txid` sees, in key order.
    pub fn comments_as(&self, txid: Option<u64>) -> Vec<(crate::CommentOn, Arc<str>)> {
        let cat = self.catalog.read();
        if cat.comments.is_empty() && self.txns.uncommitted_ddl.lock().is_empty() {
            return Vec::new();
        }
        match self.view_as(&cat, txid) {
            Some(view) => view.comments(),
            None => cat.comments(),
        }
    }
}
