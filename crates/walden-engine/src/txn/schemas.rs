//! `CREATE SCHEMA`, `ALTER SCHEMA ... OWNER TO`, `DROP SCHEMA` as
//! transactional catalog changes (see `ddl.rs`). What a dropped schema
//! held is the caller's to drop first (CASCADE) or to refuse.

use super::Transaction;
use crate::codec::Redo;
use crate::error::{EngineError, Result};
use crate::namespace::SchemaDef;

impl Transaction {
    /// Creates schema `name` owned by `owner`; its id is returned.
    pub fn create_schema(&self, name: &str, owner: u32) -> Result<u32> {
        self.catalog_change(|cat| {
            if cat.schema(name).is_some() {
                return Err(EngineError::RelationExists(name.to_string()));
            }
            let def = SchemaDef {
                id: cat.next_table_id.max(1),
                name: name.to_string(),
                owner,
            };
            let id = def.id;
            cat.put_schema(def.clone());
            Ok((id, Redo::PutSchema(def)))
        })
    }

    /// Gives schema `name` another owner.
    pub fn alter_schema_owner(&self, name: &str, owner: u32) -> Result<()> {
        self.catalog_change(|cat| {
            let mut def = (**cat
                .schema(name)
                .ok_or_else(|| EngineError::UnknownTable(name.to_string()))?)
            .clone();
            def.owner = owner;
            cat.put_schema(def.clone());
            Ok(((), Redo::PutSchema(def)))
        })
    }

    /// Drops schema `name`.
    pub fn drop_schema(&self, name: &str) -> Result<()> {
        self.catalog_change(|cat| {
            let id = cat
                .schema(name)
                .ok_or_else(|| EngineError::UnknownTable(name.to_string()))?
                .id;
            cat.drop_schema(id);
            Ok(((), Redo::DropSchema(id)))
        })
    }
}
