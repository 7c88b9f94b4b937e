//! `CREATE TYPE ... AS ENUM`, `DROP TYPE`, `ALTER TYPE` as transactional
//! catalog changes (see `ddl.rs`): they take effect at commit and vanish
//! at rollback.

use super::Transaction;
use crate::codec::Redo;
use crate::error::{EngineError, Result};
use crate::lock::{TableLockMode, WaitPolicy};
use crate::types::EnumType;

impl Transaction {
    /// `CREATE TYPE name AS ENUM (labels)`.
    pub fn create_enum(&self, name: &str, labels: &[String]) -> Result<()> {
        let mut def = EnumType::new(name, labels)?;
        self.catalog_change(|cat| {
            let key = name.to_ascii_lowercase();
            // A table's row type has its name, as in PostgreSQL.
            if cat.enums.contains_key(&key) || cat.table(name).is_some() {
                return Err(EngineError::TypeExists(name.to_string()));
            }
            def.id = cat.next_table_id.max(1);
            cat.put_enum(def.clone());
            Ok(((), Redo::CreateEnum(def)))
        })
    }

    /// `DROP TYPE name`: refused while a column uses the type (the SQL
    /// layer drops those first for CASCADE).
    pub fn drop_enum(&self, name: &str) -> Result<()> {
        let cur = self
            .db
            .enum_type_as(Some(self.txid), name)
            .ok_or_else(|| EngineError::UnknownType(name.to_string()))?;
        self.catalog_change(|cat| {
            // Columns of the array type first, as PostgreSQL finds them
            // (through the array type, which depends on the enum).
            let mut by: Vec<(String, String, bool)> = cat
                .enum_users(cur.id)
                .into_iter()
                .map(|(t, c)| {
                    let array = t.def.column_index(&c).is_some_and(|i| {
                        matches!(t.def.columns[i].data_type, crate::types::DataType::Array(_))
                    });
                    (t.name().to_string(), c, array)
                })
                .collect();
            by.sort_by_key(|u| !u.2);
            if !by.is_empty() {
                return Err(EngineError::TypeInUse {
                    name: cur.name.clone(),
                    by,
                });
            }
            cat.drop_enum(cur.id);
            Ok(((), Redo::DropEnum(cur.id)))
        })
    }

    /// `ALTER TYPE name ...`: `change` makes the new definition from the
    /// current one (`None`: nothing to do). Tables with columns of the type
    /// are locked ACCESS EXCLUSIVE first, since their definitions take the
    /// new one.
    pub fn alter_enum(
        &self,
        name: &str,
        change: impl FnOnce(&EnumType) -> Result<Option<EnumType>>,
    ) -> Result<()> {
        let cur = self
            .db
            .enum_type_as(Some(self.txid), name)
            .ok_or_else(|| EngineError::UnknownType(name.to_string()))?;
        let users: Vec<u32> = {
            let cat = self.db.catalog.read();
            let mut ids: Vec<u32> = cat.enum_users(cur.id).iter().map(|(t, _)| t.id()).collect();
            ids.dedup();
            ids
        };
        for id in users {
            self.lock_table_id(id, TableLockMode::AccessExclusive, WaitPolicy::Wait)?;
        }
        // Made from the definition as it stands once the tables are locked.
        let now = self
            .db
            .enum_type_as(Some(self.txid), name)
            .ok_or_else(|| EngineError::UnknownType(name.to_string()))?;
        let Some(new) = change(&now)? else {
            return Ok(());
        };
        self.catalog_change(|cat| {
            if !new.name.eq_ignore_ascii_case(&now.name)
                && (cat.enums.contains_key(&new.name.to_ascii_lowercase())
                    || cat.table(&new.name).is_some())
            {
                return Err(EngineError::TypeExists(new.name.clone()));
            }
            cat.put_enum(new.clone());
            Ok(((), Redo::AlterEnum(new)))
        })
    }
}
