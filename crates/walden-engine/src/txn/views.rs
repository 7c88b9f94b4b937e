//! `CREATE [OR REPLACE] VIEW`, `ALTER VIEW`, `DROP VIEW` as transactional
//! catalog changes (see `ddl.rs`): they take effect at commit and vanish
//! at rollback.

use super::Transaction;
use crate::codec::Redo;
use crate::error::{EngineError, Result};
use crate::view::ViewDef;

impl Transaction {
    /// Creates view `def` (its id is assigned), or with `replace` puts it
    /// in place of the view of that name, keeping its id. Every relation in
    /// `def.deps` must exist.
    pub fn put_view(&self, mut def: ViewDef, replace: bool) -> Result<u32> {
        self.catalog_change(|cat| {
            let existing = cat.view(&def.name).cloned();
            match existing {
                Some(old) if replace => def.id = old.id,
                Some(_) => return Err(EngineError::RelationExists(def.name.clone())),
                None => {
                    if cat.table(&def.name).is_some()
                        || cat.index_table(&def.name).is_some()
                        || cat.sequences.contains_key(&def.name.to_ascii_lowercase())
                    {
                        return Err(EngineError::RelationExists(def.name.clone()));
                    }
                    def.id = cat.next_table_id.max(1);
                }
            }
            for d in &def.deps {
                if cat.table_by_id(*d).is_none() && !cat.views.values().any(|v| v.id == *d) {
                    return Err(EngineError::UnknownTable(format!(
                        "(relation id {d}, dropped)"
                    )));
                }
            }
            let id = def.id;
            cat.put_view(def.clone());
            Ok((id, Redo::PutView(def)))
        })
    }

    /// Renames view `name` (`ALTER VIEW ... RENAME TO`).
    pub fn rename_view(&self, name: &str, to: &str) -> Result<()> {
        self.catalog_change(|cat| {
            let cur = cat
                .view(name)
                .cloned()
                .ok_or_else(|| EngineError::UnknownTable(name.to_string()))?;
            if cat.table(to).is_some()
                || cat.view(to).is_some()
                || cat.index_table(to).is_some()
                || cat.sequences.contains_key(&to.to_ascii_lowercase())
            {
                return Err(EngineError::RelationExists(to.to_string()));
            }
            let mut def = (*cur).clone();
            def.name = to.to_string();
            cat.put_view(def.clone());
            Ok(((), Redo::PutView(def)))
        })
    }

    /// Drops view `name`; views reading it are the caller's to drop first
    /// (CASCADE) or to refuse.
    pub fn drop_view(&self, name: &str) -> Result<()> {
        self.catalog_change(|cat| {
            let cur = cat
                .view(name)
                .cloned()
                .ok_or_else(|| EngineError::UnknownTable(name.to_string()))?;
            cat.drop_view(cur.id);
            Ok(((), Redo::DropView(cur.id)))
        })
    }
}

impl Transaction {
    /// `COMMENT ON`: sets (`Some`) or removes (`None`) the comment on `on`,
    /// which must exist.
    pub fn set_comment(&self, on: crate::comment::CommentOn, text: Option<String>) -> Result<()> {
        self.catalog_change(|cat| {
            if !cat.comment_target_exists(&on) {
                return Err(EngineError::UnknownTable(format!("{on:?}")));
            }
            cat.set_comment(on.clone(), text.clone());
            Ok(((), Redo::Comment(on, text)))
        })
    }
}
