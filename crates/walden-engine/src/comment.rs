//! Comments on catalog objects (`COMMENT ON`): kept in the catalog by the
//! object they describe, changed transactionally like other DDL, logged,
//! carried in checkpoint images and to secondaries.
//!
//! A comment goes with its object: whatever catalog change removes the
//! object (a drop, a cascade, a dropped column) removes the comment in the
//! same step ([`Catalog::prune_comments`]), live, at redo and on a
//! secondary alike; a renamed or moved column takes its comment along
//! ([`Catalog::follow_columns`]).

use crate::codec::{put_str, put_var, short, Reader};
use crate::database::Catalog;
use crate::error::Result;
use crate::schema::TableDef;
use std::sync::Arc;

/// The object a comment describes, by engine id.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CommentOn {
    /// A table, view or index (one id space).
    Relation(u32),
    /// A table's (or view's) column, by its name as the catalog spells it.
    Column(u32, String),
    /// A table's constraint, by name.
    Constraint(u32, String),
    Sequence(u32),
    /// An enum type.
    Type(u32),
    /// A table's primary key index (it has no id of its own).
    PrimaryKeyIndex(u32),
}

const TAG_RELATION: u8 = 1;
const TAG_COLUMN: u8 = 2;
const TAG_CONSTRAINT: u8 = 3;
const TAG_SEQUENCE: u8 = 4;
const TAG_TYPE: u8 = 5;
const TAG_PKEY_INDEX: u8 = 6;

pub(crate) fn put_comment(out: &mut Vec<u8>, on: &CommentOn, text: Option<&str>) {
    let (tag, id, name) = match on {
        CommentOn::Relation(id) => (TAG_RELATION, *id, None),
        CommentOn::Column(id, n) => (TAG_COLUMN, *id, Some(n)),
        CommentOn::Constraint(id, n) => (TAG_CONSTRAINT, *id, Some(n)),
        CommentOn::Sequence(id) => (TAG_SEQUENCE, *id, None),
        CommentOn::Type(id) => (TAG_TYPE, *id, None),
        CommentOn::PrimaryKeyIndex(id) => (TAG_PKEY_INDEX, *id, None),
    };
    out.push(tag);
    put_var(out, id as u64);
    if let Some(n) = name {
        put_str(out, n);
    }
    match text {
        Some(t) => {
            out.push(1);
            put_str(out, t);
        }
        None => out.push(0),
    }
}

pub(crate) fn get_comment(r: &mut Reader<'_>) -> Result<(CommentOn, Option<String>)> {
    let tag = r.u8()?;
    let id = u32::try_from(r.var()?).map_err(|_| short())?;
    let on = match tag {
        TAG_RELATION => CommentOn::Relation(id),
        TAG_COLUMN => CommentOn::Column(id, r.str()?.to_string()),
        TAG_CONSTRAINT => CommentOn::Constraint(id, r.str()?.to_string()),
        TAG_SEQUENCE => CommentOn::Sequence(id),
        TAG_TYPE => CommentOn::Type(id),
        TAG_PKEY_INDEX => CommentOn::PrimaryKeyIndex(id),
        _ => return Err(short()),
    };
    let text = match r.u8()? {
        0 => None,
        1 => Some(r.str()?.to_string()),
        _ => return Err(short()),
    };
    Ok((on, text))
}

/// Whether `def` has a constraint named `name` (primary key, unique, check
/// or foreign key).
fn has_constraint(def: &TableDef, name: &str) -> bool {
    (!def.primary_key.is_empty() && def.pkey_name().eq_ignore_ascii_case(name))
        || def.checks.iter().any(|c| c.name.eq_ignore_ascii_case(name))
        || def
            .foreign_keys
            .iter()
            .any(|f| f.name.eq_ignore_ascii_case(name))
        || def
            .indexes
            .iter()
            .any(|i| i.constraint && i.name.eq_ignore_ascii_case(name))
}

impl Catalog {
    /// Whether the object a comment would describe exists.
    pub fn comment_target_exists(&self, on: &CommentOn) -> bool {
        match on {
            CommentOn::Relation(id) => {
                self.by_id.contains_key(id)
                    || self.views.values().any(|v| v.id == *id)
                    || self
                        .by_id
                        .values()
                        .any(|t| t.def.indexes.iter().any(|i| i.id == *id))
            }
            CommentOn::Column(id, name) => {
                self.by_id.get(id).is_some_and(|t| {
                    t.def
                        .columns
                        .iter()
                        .any(|c| c.name.eq_ignore_ascii_case(name))
                }) || self.views.values().any(|v| {
                    v.id == *id && v.columns.iter().any(|c| c.0.eq_ignore_ascii_case(name))
                })
            }
            CommentOn::Constraint(id, name) => self
                .by_id
                .get(id)
                .is_some_and(|t| has_constraint(&t.def, name)),
            CommentOn::Sequence(id) => self.sequences.values().any(|s| s.def.id == *id),
            CommentOn::Type(id) => self.enums.values().any(|e| e.id == *id),
            CommentOn::PrimaryKeyIndex(id) => self
                .by_id
                .get(id)
                .is_some_and(|t| !t.def.primary_key.is_empty()),
        }
    }

    /// Sets (`Some`) or removes (`None`) the comment on `on`.
    pub(crate) fn set_comment(&mut self, on: CommentOn, text: Option<String>) {
        match text {
            Some(t) => {
                self.comments.insert(on, Arc::from(t));
            }
            None => {
                self.comments.remove(&on);
            }
        }
    }

    /// Removes the comments of objects that no longer exist.
    pub(crate) fn prune_comments(&mut self) {
        if self.comments.is_empty() {
            return;
        }
        let gone: Vec<CommentOn> = self
            .comments
            .keys()
            .filter(|on| !self.comment_target_exists(on))
            .cloned()
            .collect();
        for on in gone {
            self.comments.remove(&on);
        }
    }

    /// Moves column comments of table `old` to its altered definition `new`:
    /// a column keeps its comment under a new name (`old_of[j]` is the old
    /// position of new column `j`, when it comes from one).
    pub(crate) fn follow_columns(
        &mut self,
        old: &TableDef,
        new: &TableDef,
        old_of: &[Option<usize>],
    ) {
        let id = old.id;
        if !self
            .comments
            .keys()
            .any(|k| matches!(k, CommentOn::Column(t, _) if *t == id))
        {
            return;
        }
        let mut moved = Vec::new();
        for (j, src) in old_of.iter().enumerate() {
            let (Some(i), Some(nc)) = (src, new.columns.get(j)) else {
                continue;
            };
            let Some(oc) = old.columns.get(*i) else {
                continue;
            };
            if let Some(text) = self.comments.get(&CommentOn::Column(id, oc.name.clone())) {
                moved.push((nc.name.clone(), text.clone()));
            }
        }
        self.comments
            .retain(|k, _| !matches!(k, CommentOn::Column(t, _) if *t == id));
        for (name, text) in moved {
            self.comments.insert(CommentOn::Column(id, name), text);
        }
    }

    /// Every comment, in key order.
    pub fn comments(&self) -> Vec<(CommentOn, Arc<str>)> {
        self.comments
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comment_records_round_trip() {
        for (on, text) in [
            (CommentOn::Relation(7), Some("a table")),
            (CommentOn::Column(7, "b".into()), None),
            (CommentOn::Constraint(9, "t_pkey".into()), Some("")),
            (CommentOn::Sequence(3), Some("s")),
            (CommentOn::Type(12), None),
            (CommentOn::PrimaryKeyIndex(4), Some("k")),
        ] {
            let mut out = Vec::new();
            put_comment(&mut out, &on, text);
            let mut r = Reader::new(&out);
            assert_eq!(
                get_comment(&mut r).unwrap(),
                (on.clone(), text.map(str::to_string))
            );
            assert!(r.is_empty());
            // A cut record is an error, not a panic.
            for cut in 0..out.len() {
                assert!(get_comment(&mut Reader::new(&out[..cut])).is_err());
            }
        }
    }
}
