//! Redo records: a transaction's changes and the DDL records, as written
//! to the log and replayed by recovery.

use super::{
    get_enum, get_foreign_key, get_index_def, get_index_options, get_sequence, get_settings,
    get_table_def, put_enum, put_foreign_key, put_index_def, put_index_options, put_ivar,
    put_sequence, put_settings, put_str, put_table_def, put_value, put_values, put_var, short,
    Reader,
};
use crate::alter::ColumnSource;
use crate::error::{EngineError, Result};
use crate::roles::RoleRecord;
use crate::schema::{DbSettings, ForeignKeyDef, IndexDef, SequenceDef, TableDef};
use crate::types::{EnumType, Key, Row, Value};
use std::sync::Arc;

/// One change inside a transaction record.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// Insert or replace the row with this key.
    Put {
        table: u32,
        key: Key,
        row: Row,
    },
    Delete {
        table: u32,
        key: Key,
    },
    /// A catalog change made by the transaction (an encoded [`Redo`]),
    /// applied at its commit before its rows.
    Ddl(Vec<u8>),
    /// The role catalog the transaction's commit installs (recovery
    /// reinstalls it when `instance.json` holds an older version).
    Roles(RoleRecord),
    /// The transaction no longer changes this key: an earlier part's op on
    /// it is void (a `ROLLBACK TO` undid it, or DDL folded the key's write
    /// into its own record). Written only by a transaction that logs as it
    /// goes (`txn/spill.rs`).
    Forget {
        table: u32,
        key: Key,
    },
}

/// A redo log record.
#[derive(Clone, Debug, PartialEq)]
pub enum Redo {
    /// Changes of a transaction. Only a record with `commit` set makes the
    /// transaction (with all its earlier parts) take effect.
    Txn {
        txid: u64,
        commit: bool,
        ops: Vec<Op>,
    },
    /// A transaction that logged parts while it ran rolled back: its parts
    /// are void.
    TxnAbort {
        txid: u64,
    },
    CreateTable(TableDef),
    DropTable(u32),
    Truncate(u32),
    CreateSequence(SequenceDef),
    DropSequence(u32),
    /// `ALTER SEQUENCE`: the sequence's new definition (its id names it;
    /// the name may be new), and the value its next `nextval` returns when
    /// it was restarted (else it goes on where it is).
    AlterSequence {
        def: SequenceDef,
        restart: Option<i64>,
    },
    /// Sequence values up to `upto` may have been handed out.
    SeqReserve {
        id: u32,
        upto: i64,
    },
    Settings(DbSettings),
    /// A full backup was taken at `lsn` (starts the log-backup chain).
    FullBackup {
        lsn: u64,
    },
    /// The log before `lsn` has been backed up.
    LogBackup {
        lsn: u64,
    },
    /// A table keyed by a hidden row id gets a primary key.
    AddPrimaryKey {
        table: u32,
        columns: Vec<usize>,
    },
    /// A secondary index is built on the table's rows.
    CreateIndex {
        table: u32,
        index: IndexDef,
    },
    DropIndex {
        table: u32,
        index: u32,
    },
    /// `ALTER TABLE ... ADD FOREIGN KEY` (validated before it was logged).
    AddForeignKey {
        table: u32,
        fk: ForeignKeyDef,
    },
    /// `ALTER TABLE ... DROP CONSTRAINT` of a foreign key.
    DropForeignKey {
        table: u32,
        name: String,
    },
    /// `ALTER TABLE`: the table's new definition, and how its rows are
    /// rewritten into it (`None`: they are kept as they are).
    AlterTable {
        table: u32,
        def: TableDef,
        rewrite: Option<Vec<ColumnSource>>,
    },
    /// `setval` of an identity column's counter: the next value the
    /// table's identity column takes.
    IdentitySet {
        table: u32,
        next: i64,
    },
    /// `CREATE TYPE ... AS ENUM`.
    CreateEnum(EnumType),
    /// `DROP TYPE` of an enum type.
    DropEnum(u32),
    /// `ALTER TYPE` of an enum type: its new definition (columns of the
    /// type take it too).
    AlterEnum(EnumType),
    /// `CREATE [OR REPLACE] VIEW` / `ALTER VIEW`: the view's definition
    /// (replacing the one of its id).
    PutView(crate::view::ViewDef),
    /// `DROP VIEW`.
    DropView(u32),
    /// `COMMENT ON`: the object's comment, or `None` to remove it.
    Comment(crate::comment::CommentOn, Option<String>),
    /// `CREATE SCHEMA` / `ALTER SCHEMA`: the schema's definition
    /// (replacing the one of its id).
    PutSchema(crate::namespace::SchemaDef),
    /// `DROP SCHEMA`.
    DropSchema(u32),
}

/// Redo tags of enum types (35..=39 are reserved for them).
const TAG_CREATE_ENUM: u8 = 35;
const TAG_DROP_ENUM: u8 = 36;
const TAG_ALTER_ENUM: u8 = 37;

/// Redo tags of views (40..=44 are reserved for them).
const TAG_PUT_VIEW: u8 = 40;
const TAG_DROP_VIEW: u8 = 41;

/// Redo tag of comments (45..=49 are reserved for them).
const TAG_COMMENT: u8 = 45;

/// Redo tags of schemas (50..=54 are reserved for them).
const TAG_PUT_SCHEMA: u8 = 50;
const TAG_DROP_SCHEMA: u8 = 51;

/// Redo tags of sequences after the first ones (60..=64 are reserved).
const TAG_ALTER_SEQUENCE: u8 = 60;

/// Redo tags of ALTER TABLE (25..=34 are reserved for it).
const TAG_ALTER_TABLE: u8 = 25;
const TAG_IDENTITY_SET: u8 = 26;
/// CREATE INDEX of an index with column options (DESC, NULLS FIRST): as
/// tag 21, then the options.
const TAG_CREATE_INDEX_OPTIONS: u8 = 27;

fn put_column_source(out: &mut Vec<u8>, s: &ColumnSource) {
    match s {
        ColumnSource::Old(i) => {
            out.push(0);
            put_var(out, *i as u64);
        }
        ColumnSource::Fill(v) => {
            out.push(1);
            put_value(out, v);
        }
        ColumnSource::Values(vs) => {
            out.push(2);
            put_values(out, vs);
        }
    }
}

fn get_column_source(r: &mut Reader<'_>) -> Result<ColumnSource> {
    Ok(match r.u8()? {
        0 => ColumnSource::Old(r.var()? as usize),
        1 => ColumnSource::Fill(r.value()?),
        2 => ColumnSource::Values(r.values()?),
        _ => return Err(short()),
    })
}

pub const TAG_TXN_PART: u8 = 1;
pub const TAG_TXN_COMMIT: u8 = 2;
pub const TAG_TXN_ABORT: u8 = 3;

/// Op tag of [`Op::Forget`].
const OP_FORGET: u8 = 3;

/// An abort record: the transaction's parts are void.
pub fn put_txn_abort(out: &mut Vec<u8>, txid: u64) {
    out.push(TAG_TXN_ABORT);
    put_var(out, txid);
}

pub fn put_op_forget(out: &mut Vec<u8>, table: u32, key: &[Value]) {
    out.push(OP_FORGET);
    put_var(out, table as u64);
    put_values(out, key);
}

/// Starts a transaction record; ops follow with [`put_op_put`] / [`put_op_delete`].
pub fn put_txn_header(out: &mut Vec<u8>, txid: u64, commit: bool, nops: usize) {
    out.push(if commit { TAG_TXN_COMMIT } else { TAG_TXN_PART });
    put_var(out, txid);
    put_var(out, nops as u64);
}

/// A put; the key is written only for tables keyed by a hidden row id
/// (`key_in_row` false), since otherwise it is part of the row.
pub fn put_op_put(out: &mut Vec<u8>, table: u32, key: Option<&[Value]>, row: &[Value]) {
    out.push(1);
    put_var(out, table as u64);
    match key {
        Some(k) => {
            out.push(1);
            put_values(out, k);
        }
        None => out.push(0),
    }
    put_values(out, row);
}

/// Op tag of a catalog change inside a transaction record (from the range
/// reserved for transactional DDL, 40..=49).
const OP_DDL: u8 = 40;

/// A catalog change inside a transaction record: an encoded [`Redo`].
pub fn put_op_ddl(out: &mut Vec<u8>, rec: &[u8]) {
    out.push(OP_DDL);
    put_var(out, rec.len() as u64);
    out.extend_from_slice(rec);
}

/// Op tag of a transaction's role catalog (redo tags 41..=45 are reserved
/// for role records).
const OP_ROLES: u8 = 41;

/// The role catalog a transaction commits: the instance's id, then the
/// catalog as JSON (the form `instance.json` keeps it in).
pub fn put_op_roles(out: &mut Vec<u8>, rec: &RoleRecord) {
    out.push(OP_ROLES);
    put_str(out, &rec.instance);
    let json = serde_json::to_string(&*rec.catalog).expect("role catalog serializes");
    put_str(out, &json);
}

pub fn put_op_delete(out: &mut Vec<u8>, table: u32, key: &[Value]) {
    out.push(2);
    put_var(out, table as u64);
    put_values(out, key);
}

pub fn encode_redo(r: &Redo) -> Vec<u8> {
    let mut out = Vec::new();
    match r {
        Redo::Txn { txid, commit, ops } => {
            put_txn_header(&mut out, *txid, *commit, ops.len());
            for op in ops {
                match op {
                    Op::Put { table, key, row } => put_op_put(&mut out, *table, Some(key), row),
                    Op::Delete { table, key } => put_op_delete(&mut out, *table, key),
                    Op::Ddl(rec) => put_op_ddl(&mut out, rec),
                    Op::Roles(rec) => put_op_roles(&mut out, rec),
                    Op::Forget { table, key } => put_op_forget(&mut out, *table, key),
                }
            }
        }
        Redo::TxnAbort { txid } => put_txn_abort(&mut out, *txid),
        Redo::CreateTable(d) => {
            out.push(20);
            put_table_def(&mut out, d);
        }
        Redo::DropTable(id) => {
            out.push(11);
            put_var(&mut out, *id as u64);
        }
        Redo::Truncate(id) => {
            out.push(12);
            put_var(&mut out, *id as u64);
        }
        Redo::CreateSequence(s) => {
            out.push(13);
            put_sequence(&mut out, s);
        }
        Redo::DropSequence(id) => {
            out.push(14);
            put_var(&mut out, *id as u64);
        }
        Redo::AlterSequence { def, restart } => {
            out.push(TAG_ALTER_SEQUENCE);
            put_sequence(&mut out, def);
            match restart {
                None => out.push(0),
                Some(v) => {
                    out.push(1);
                    put_ivar(&mut out, *v);
                }
            }
        }
        Redo::SeqReserve { id, upto } => {
            out.push(15);
            put_var(&mut out, *id as u64);
            put_ivar(&mut out, *upto);
        }
        Redo::IdentitySet { table, next } => {
            out.push(TAG_IDENTITY_SET);
            put_var(&mut out, *table as u64);
            put_ivar(&mut out, *next);
        }
        Redo::Settings(s) => {
            out.push(16);
            put_settings(&mut out, s);
        }
        Redo::FullBackup { lsn } => {
            out.push(17);
            put_var(&mut out, *lsn);
        }
        Redo::LogBackup { lsn } => {
            out.push(18);
            put_var(&mut out, *lsn);
        }
        Redo::AddPrimaryKey { table, columns } => {
            out.push(19);
            put_var(&mut out, *table as u64);
            put_var(&mut out, columns.len() as u64);
            for c in columns {
                put_var(&mut out, *c as u64);
            }
        }
        Redo::CreateIndex { table, index } => {
            // An index with column options has a record of its own, which
            // a reader that predates them refuses.
            out.push(if index.options.is_empty() {
                21
            } else {
                TAG_CREATE_INDEX_OPTIONS
            });
            put_var(&mut out, *table as u64);
            put_index_def(&mut out, index);
            if !index.options.is_empty() {
                put_index_options(&mut out, &index.options);
            }
        }
        Redo::DropIndex { table, index } => {
            out.push(22);
            put_var(&mut out, *table as u64);
            put_var(&mut out, *index as u64);
        }
        Redo::AlterTable {
            table,
            def,
            rewrite,
        } => {
            out.push(TAG_ALTER_TABLE);
            put_var(&mut out, *table as u64);
            put_table_def(&mut out, def);
            match rewrite {
                None => out.push(0),
                Some(cols) => {
                    out.push(1);
                    put_var(&mut out, cols.len() as u64);
                    for c in cols {
                        put_column_source(&mut out, c);
                    }
                }
            }
        }
        Redo::AddForeignKey { table, fk } => {
            out.push(23);
            put_var(&mut out, *table as u64);
            put_foreign_key(&mut out, fk);
        }
        Redo::DropForeignKey { table, name } => {
            out.push(24);
            put_var(&mut out, *table as u64);
            put_str(&mut out, name);
        }
        Redo::CreateEnum(e) => {
            out.push(TAG_CREATE_ENUM);
            put_enum(&mut out, e);
        }
        Redo::DropEnum(id) => {
            out.push(TAG_DROP_ENUM);
            put_var(&mut out, *id as u64);
        }
        Redo::AlterEnum(e) => {
            out.push(TAG_ALTER_ENUM);
            put_enum(&mut out, e);
        }
        Redo::PutView(v) => {
            out.push(TAG_PUT_VIEW);
            crate::view::put_view(&mut out, v);
        }
        Redo::DropView(id) => {
            out.push(TAG_DROP_VIEW);
            put_var(&mut out, *id as u64);
        }
        Redo::Comment(on, text) => {
            out.push(TAG_COMMENT);
            crate::comment::put_comment(&mut out, on, text.as_deref());
        }
        Redo::PutSchema(s) => {
            out.push(TAG_PUT_SCHEMA);
            crate::namespace::put_schema(&mut out, s);
        }
        Redo::DropSchema(id) => {
            out.push(TAG_DROP_SCHEMA);
            put_var(&mut out, *id as u64);
        }
    }
    out
}

/// Decodes a redo record. Put ops carry `key: None` in the encoding when the
/// key is derivable from the row; the caller fills it in (`key_of`).
pub fn decode_redo(buf: &[u8], key_of: &dyn Fn(u32, &[Value]) -> Option<Key>) -> Result<Redo> {
    let mut r = Reader::new(buf);
    let tag = r.u8()?;
    let rec = match tag {
        TAG_TXN_PART | TAG_TXN_COMMIT => {
            let txid = r.var()?;
            let n = r.var()? as usize;
            let mut ops = Vec::with_capacity(n.min(1 << 16));
            for _ in 0..n {
                match r.u8()? {
                    1 => {
                        let table = r.var()? as u32;
                        let key = if r.u8()? == 1 {
                            Some(r.values()?.into_boxed_slice())
                        } else {
                            None
                        };
                        let row: Row = Arc::from(r.values()?);
                        let key = match key {
                            Some(k) => k,
                            None => key_of(table, &row).ok_or_else(|| {
                                EngineError::Data(format!(
                                    "redo record names unknown table {table} \
                                     or its row lacks the key columns"
                                ))
                            })?,
                        };
                        ops.push(Op::Put { table, key, row });
                    }
                    2 => {
                        let table = r.var()? as u32;
                        let key = r.values()?.into_boxed_slice();
                        ops.push(Op::Delete { table, key });
                    }
                    OP_FORGET => {
                        let table = r.var()? as u32;
                        let key = r.values()?.into_boxed_slice();
                        ops.push(Op::Forget { table, key });
                    }
                    OP_DDL => {
                        let n = r.var()? as usize;
                        ops.push(Op::Ddl(r.bytes(n)?.to_vec()));
                    }
                    OP_ROLES => {
                        let instance = r.str()?.to_string();
                        let catalog = serde_json::from_str(r.str()?).map_err(|e| {
                            EngineError::Data(format!("role catalog in a redo record: {e}"))
                        })?;
                        ops.push(Op::Roles(RoleRecord {
                            instance,
                            catalog: Arc::new(catalog),
                        }));
                    }
                    _ => return Err(short()),
                }
            }
            Redo::Txn {
                txid,
                commit: tag == TAG_TXN_COMMIT,
                ops,
            }
        }
        TAG_TXN_ABORT => Redo::TxnAbort { txid: r.var()? },
        10 => Redo::CreateTable(get_table_def(&mut r, false)?),
        20 => Redo::CreateTable(get_table_def(&mut r, true)?),
        11 => Redo::DropTable(r.var()? as u32),
        12 => Redo::Truncate(r.var()? as u32),
        13 => Redo::CreateSequence(get_sequence(&mut r)?),
        14 => Redo::DropSequence(r.var()? as u32),
        TAG_ALTER_SEQUENCE => Redo::AlterSequence {
            def: get_sequence(&mut r)?,
            restart: match r.u8()? {
                0 => None,
                _ => Some(r.ivar()?),
            },
        },
        15 => Redo::SeqReserve {
            id: r.var()? as u32,
            upto: r.ivar()?,
        },
        TAG_IDENTITY_SET => Redo::IdentitySet {
            table: r.var()? as u32,
            next: r.ivar()?,
        },
        16 => Redo::Settings(get_settings(&mut r)?),
        17 => Redo::FullBackup { lsn: r.var()? },
        18 => Redo::LogBackup { lsn: r.var()? },
        19 => {
            let table = r.var()? as u32;
            let n = r.var()? as usize;
            let columns = (0..n.min(1024))
                .map(|_| r.var().map(|c| c as usize))
                .collect::<Result<Vec<_>>>()?;
            Redo::AddPrimaryKey { table, columns }
        }
        21 => Redo::CreateIndex {
            table: r.var()? as u32,
            // Column positions are checked against the table at redo.
            index: get_index_def(&mut r, usize::MAX)?,
        },
        TAG_CREATE_INDEX_OPTIONS => {
            let table = r.var()? as u32;
            let mut index = get_index_def(&mut r, usize::MAX)?;
            index.options = get_index_options(&mut r, index.columns.len())?;
            Redo::CreateIndex { table, index }
        }
        22 => Redo::DropIndex {
            table: r.var()? as u32,
            index: r.var()? as u32,
        },
        TAG_ALTER_TABLE => {
            let table = r.var()? as u32;
            let def = get_table_def(&mut r, true)?;
            let rewrite = match r.u8()? {
                0 => None,
                _ => {
                    let n = r.var()? as usize;
                    if n > buf.len() {
                        return Err(short());
                    }
                    Some(
                        (0..n)
                            .map(|_| get_column_source(&mut r))
                            .collect::<Result<Vec<_>>>()?,
                    )
                }
            };
            Redo::AlterTable {
                table,
                def,
                rewrite,
            }
        }
        TAG_CREATE_ENUM => Redo::CreateEnum(get_enum(&mut r)?),
        TAG_DROP_ENUM => Redo::DropEnum(u32::try_from(r.var()?).map_err(|_| short())?),
        TAG_ALTER_ENUM => Redo::AlterEnum(get_enum(&mut r)?),
        TAG_PUT_VIEW => Redo::PutView(crate::view::get_view(&mut r)?),
        TAG_DROP_VIEW => Redo::DropView(u32::try_from(r.var()?).map_err(|_| short())?),
        TAG_PUT_SCHEMA => Redo::PutSchema(crate::namespace::get_schema(&mut r)?),
        TAG_DROP_SCHEMA => Redo::DropSchema(u32::try_from(r.var()?).map_err(|_| short())?),
        TAG_COMMENT => {
            let (on, text) = crate::comment::get_comment(&mut r)?;
            Redo::Comment(on, text)
        }
        23 => Redo::AddForeignKey {
            table: r.var()? as u32,
            // Column positions are checked against the tables at redo.
            fk: get_foreign_key(&mut r, usize::MAX)?,
        },
        24 => Redo::DropForeignKey {
            table: r.var()? as u32,
            name: r.str()?.to_string(),
        },
        _ => return Err(short()),
    };
    Ok(rec)
}
