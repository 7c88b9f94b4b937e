//! Redo: applies log records on top of a checkpoint image. Used when a
//! database opens and when a restore replays log backups.

use crate::checkpoint::Image;
use crate::codec::{decode_redo, Op, Redo};
use crate::database::SeqState;
use crate::error::{EngineError, Result};
use crate::table::Table;
use std::collections::HashMap;
use std::sync::Arc;
use walden_log::Lsn;

pub(crate) struct Replay {
    state: Image,
    /// Parts of transactions whose commit record has not been seen yet.
    pending: HashMap<u64, Vec<Op>>,
}

impl Replay {
    pub fn new(state: Image) -> Self {
        Replay {
            state,
            pending: HashMap::new(),
        }
    }

    pub fn apply(&mut self, _end: Lsn, rec: &[u8]) -> Result<()> {
        let cat = &mut self.state.catalog;
        let redo = {
            let key_of = |tid: u32, row: &[crate::types::Value]| {
                cat.by_id.get(&tid).and_then(|t| {
                    // Tables keyed by a hidden row id always log the key.
                    t.key_of(row)
                })
            };
            decode_redo(rec, &key_of)?
        };
        match redo {
            Redo::Txn { txid, commit, ops } => {
                self.state.next_txid = self.state.next_txid.max(txid + 1);
                if !commit {
                    self.pending.entry(txid).or_default().extend(ops);
                    return Ok(());
                }
                let mut all = self.pending.remove(&txid).unwrap_or_default();
                all.extend(ops);
                for op in all {
                    match op {
                        Op::Put { table, key, row } => {
                            let t = cat.by_id.get(&table).ok_or_else(|| unknown(table))?;
                            t.observe(&key, &row);
                            t.rows.write().insert(key, row);
                        }
                        Op::Delete { table, key } => {
                            let t = cat.by_id.get(&table).ok_or_else(|| unknown(table))?;
                            t.rows.write().remove(&key);
                        }
                    }
                }
            }
            Redo::CreateTable(def) => cat.add_table(Arc::new(Table::new(def))),
            Redo::DropTable(id) => {
                cat.remove_table(id);
            }
            Redo::Truncate(id) => {
                if let Some(t) = cat.by_id.get(&id) {
                    t.rows.write().clear();
                }
            }
            Redo::CreateSequence(def) => {
                let start = def.start;
                cat.add_sequence(
                    def,
                    SeqState {
                        next: start,
                        reserved: start,
                    },
                );
            }
            Redo::DropSequence(id) => cat.sequences.retain(|_, s| s.def.id != id),
            Redo::SeqReserve { id, upto } => {
                if let Some(s) = cat.sequences.values().find(|s| s.def.id == id) {
                    // Values below `upto` may have been handed out before the crash.
                    let mut st = s.state.lock();
                    st.next = upto;
                    st.reserved = upto;
                }
            }
            Redo::Settings(s) => self.state.settings = s,
            Redo::FullBackup { lsn } => {
                self.state.backup.full_backup_lsn = Some(lsn);
                self.state.backup.log_backup_lsn = Some(lsn);
            }
            Redo::LogBackup { lsn } => self.state.backup.log_backup_lsn = Some(lsn),
            Redo::AddPrimaryKey { table, columns } => {
                let t = cat.by_id.get(&table).ok_or_else(|| unknown(table))?;
                let nt = Arc::new(t.with_primary_key(&columns)?);
                cat.add_table(nt);
            }
        }
        Ok(())
    }

    /// The recovered state. Transactions without a commit record are dropped.
    pub fn finish(self) -> Image {
        self.state
    }
}

fn unknown(table: u32) -> EngineError {
    EngineError::Data(format!(
        "redo record names table id {table}, which does not exist"
    ))
}
