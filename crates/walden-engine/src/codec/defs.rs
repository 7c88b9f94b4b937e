//! Catalog definitions: tables (columns, indexes, checks, foreign keys),
//! database settings and sequences.

use super::{get_type, put_ivar, put_str, put_type, put_value, put_var, short, Reader};
use crate::error::Result;
use crate::schema::{
    CheckDef, Collation, ColumnDef, DbSettings, DefaultExpr, DelayedDurability, FkAction,
    ForeignKeyDef, Identity, IdentityGeneration, IndexDef, PartitionOf, RecoveryModel, SeqOwner,
    SeqType, SequenceDef, TableDef,
};

pub fn put_table_def(out: &mut Vec<u8>, d: &TableDef) {
    put_var(out, d.id as u64);
    put_str(out, &d.name);
    put_var(out, d.columns.len() as u64);
    for c in &d.columns {
        put_str(out, &c.name);
        put_type(out, &c.data_type);
        out.push(c.nullable as u8);
        match &c.default {
            None => out.push(0),
            Some(DefaultExpr::Value(v)) => {
                out.push(1);
                put_value(out, v);
            }
            Some(DefaultExpr::Now) => out.push(2),
            Some(DefaultExpr::NewUuid) => out.push(3),
            Some(DefaultExpr::NextVal(s)) => {
                out.push(4);
                put_str(out, s);
            }
            Some(DefaultExpr::Today) => out.push(5),
            Some(DefaultExpr::Expr(s)) => {
                out.push(6);
                put_str(out, s);
            }
        }
        match c.identity {
            None => out.push(0),
            Some(i) => {
                out.push(1);
                put_ivar(out, i.seed);
                put_ivar(out, i.increment);
            }
        }
    }
    put_var(out, d.primary_key.len() as u64);
    for &k in &d.primary_key {
        put_var(out, k as u64);
    }
    // Parts added after the first format, each tagged so a reader that
    // meets one it does not know fails instead of dropping it.
    let generated: Vec<(usize, IdentityGeneration)> = d
        .columns
        .iter()
        .enumerate()
        .filter_map(|(k, c)| Some((k, c.identity?.generated?)))
        .collect();
    let tsql: Vec<usize> = d
        .columns
        .iter()
        .enumerate()
        .filter(|(_, c)| c.identity.is_some_and(|i| i.tsql))
        .map(|(k, _)| k)
        .collect();
    let collated: Vec<(usize, u8)> = d
        .columns
        .iter()
        .enumerate()
        .filter_map(|(k, c)| match c.collation {
            Collation::Default => None,
            Collation::C => Some((k, 1)),
            Collation::Posix => Some((k, 2)),
        })
        .collect();
    let precise: Vec<(usize, u8)> = d
        .columns
        .iter()
        .enumerate()
        .filter_map(|(k, c)| Some((k, c.time_precision?)))
        .collect();
    let computed: Vec<(usize, &str)> = d
        .columns
        .iter()
        .enumerate()
        .filter_map(|(k, c)| Some((k, c.generated.as_deref()?)))
        .collect();
    let ordered = d.indexes.iter().filter(|ix| !ix.options.is_empty()).count();
    let parts = d.indexes.len()
        + ordered
        + computed.len()
        + collated.len()
        + precise.len()
        + d.checks.len()
        + d.foreign_keys.len()
        + d.pk_name.is_some() as usize
        + generated.len()
        + tsql.len()
        + d.partition_key.is_some() as usize
        + d.partition_of.is_some() as usize;
    put_var(out, parts as u64);
    for ix in &d.indexes {
        out.push(DEF_INDEX);
        put_index_def(out, ix);
    }
    // Written only for indexes with column options, so others encode as
    // before; after every DEF_INDEX, which they name by position.
    for (k, ix) in d.indexes.iter().enumerate() {
        if !ix.options.is_empty() {
            out.push(DEF_INDEX_OPTIONS);
            put_var(out, k as u64);
            put_index_options(out, &ix.options);
        }
    }
    for c in &d.checks {
        out.push(DEF_CHECK);
        put_str(out, &c.name);
        put_str(out, &c.expr);
    }
    if let Some(n) = &d.pk_name {
        out.push(DEF_PKEY_NAME);
        put_str(out, n);
    }
    for fk in &d.foreign_keys {
        out.push(DEF_FOREIGN_KEY);
        put_foreign_key(out, fk);
    }
    // Written only for such columns, so other definitions encode as before.
    for (k, g) in generated {
        out.push(DEF_IDENTITY_GENERATED);
        put_var(out, k as u64);
        out.push(match g {
            IdentityGeneration::ByDefault => 0,
            IdentityGeneration::Always => 1,
        });
    }
    for k in tsql {
        out.push(DEF_IDENTITY_TSQL);
        put_var(out, k as u64);
    }
    for (k, code) in collated {
        out.push(DEF_COLLATION);
        put_var(out, k as u64);
        out.push(code);
    }
    for (k, p) in precise {
        out.push(DEF_TIME_PRECISION);
        put_var(out, k as u64);
        out.push(p);
    }
    for (k, sql) in computed {
        out.push(DEF_GENERATED_EXPR);
        put_var(out, k as u64);
        put_str(out, sql);
    }
    if let Some(k) = &d.partition_key {
        out.push(DEF_PARTITION_KEY);
        put_str(out, k);
    }
    if let Some(po) = &d.partition_of {
        out.push(DEF_PARTITION_OF);
        put_var(out, po.parent as u64);
        put_str(out, &po.bound);
    }
}

/// Tags of the parts in a table definition's tail (3 is the foreign keys').
const DEF_INDEX: u8 = 1;
const DEF_CHECK: u8 = 2;
const DEF_PKEY_NAME: u8 = 4;
const DEF_FOREIGN_KEY: u8 = 3;
/// A column's identity is a SQL-standard one (`GENERATED ... AS IDENTITY`):
/// the column's position, then how it is generated.
const DEF_IDENTITY_GENERATED: u8 = 7;
/// A column's identity is T-SQL's `IDENTITY` (its position follows).
const DEF_IDENTITY_TSQL: u8 = 8;
/// A column's collation other than the default: its position, then 1 for
/// `C`, 2 for `POSIX`.
const DEF_COLLATION: u8 = 17;
/// A column's fractional-second precision (`timestamp(2)`): its position,
/// then the digits kept.
const DEF_TIME_PRECISION: u8 = 18;
/// A partitioned table's key (its text follows).
const DEF_PARTITION_KEY: u8 = 19;
/// A partition's parent id and bound text.
const DEF_PARTITION_OF: u8 = 20;
/// A generated column (`GENERATED ALWAYS AS (expr) STORED`): its position,
/// then the expression's SQL text.
const DEF_GENERATED_EXPR: u8 = 21;
/// An index's column options (`DESC`, `NULLS FIRST`): the index's position
/// among the DEF_INDEX parts, then the options (see `put_index_options`).
const DEF_INDEX_OPTIONS: u8 = 22;

/// An index's per-column option bytes: their count, then one byte each.
pub fn put_index_options(out: &mut Vec<u8>, options: &[u8]) {
    put_var(out, options.len() as u64);
    out.extend_from_slice(options);
}

/// Reads what `put_index_options` wrote for an index of `ncols` key
/// columns (an option byte it does not know fails the read).
pub fn get_index_options(r: &mut Reader<'_>, ncols: usize) -> Result<Vec<u8>> {
    let n = r.var()? as usize;
    if n != ncols {
        return Err(short());
    }
    (0..n)
        .map(|_| {
            let b = r.u8()?;
            if b & !(crate::schema::INDEX_DESC | crate::schema::INDEX_NULLS_FIRST) != 0 {
                return Err(short());
            }
            Ok(b)
        })
        .collect()
}

pub fn put_foreign_key(out: &mut Vec<u8>, fk: &ForeignKeyDef) {
    put_str(out, &fk.name);
    put_var(out, fk.columns.len() as u64);
    for (&c, &r) in fk.columns.iter().zip(&fk.ref_columns) {
        put_var(out, c as u64);
        put_var(out, r as u64);
    }
    put_var(out, fk.ref_table as u64);
    out.push(fk.on_update.code() as u8);
    out.push(fk.on_delete.code() as u8);
    // One byte of flags: MATCH FULL, DEFERRABLE, INITIALLY DEFERRED (a
    // record written before deferrable keys holds 0 or 1 here).
    out.push(fk.match_full as u8 | (fk.deferrable as u8) << 1 | (fk.initially_deferred as u8) << 2);
}

/// `ncols`: the referencing table's width (positions are checked against
/// it; the referenced side is checked where the table is known).
pub fn get_foreign_key(r: &mut Reader<'_>, ncols: usize) -> Result<ForeignKeyDef> {
    let name = r.str()?.to_string();
    let n = r.var()? as usize;
    let mut columns = Vec::with_capacity(n.min(64));
    let mut ref_columns = Vec::with_capacity(n.min(64));
    for _ in 0..n {
        let c = r.var()? as usize;
        if c >= ncols {
            return Err(short());
        }
        columns.push(c);
        ref_columns.push(r.var()? as usize);
    }
    let ref_table = r.var()? as u32;
    let on_update = FkAction::from_code(r.u8()?).ok_or_else(short)?;
    let on_delete = FkAction::from_code(r.u8()?).ok_or_else(short)?;
    let flags = r.u8()?;
    Ok(ForeignKeyDef {
        name,
        columns,
        ref_table,
        ref_columns,
        on_update,
        on_delete,
        match_full: flags & 1 != 0,
        deferrable: flags & 2 != 0,
        initially_deferred: flags & 4 != 0,
    })
}

pub fn put_index_def(out: &mut Vec<u8>, ix: &IndexDef) {
    put_var(out, ix.id as u64);
    put_str(out, &ix.name);
    put_var(out, ix.columns.len() as u64);
    for &c in &ix.columns {
        put_var(out, c as u64);
    }
    out.push(ix.unique as u8 | (ix.constraint as u8) << 1);
}

pub fn get_index_def(r: &mut Reader<'_>, ncols: usize) -> Result<IndexDef> {
    let id = r.var()? as u32;
    let name = r.str()?.to_string();
    let n = r.var()? as usize;
    let mut columns = Vec::with_capacity(n.min(64));
    for _ in 0..n {
        let c = r.var()? as usize;
        if c >= ncols {
            return Err(short());
        }
        columns.push(c);
    }
    let flags = r.u8()?;
    Ok(IndexDef {
        id,
        name,
        columns,
        unique: flags & 1 != 0,
        constraint: flags & 2 != 0,
        options: Vec::new(),
    })
}

/// A table definition as `put_table_def` writes it; `tail` is false for the
/// first format (log records tagged 10, images of version 1), which ended
/// after the primary key.
pub fn get_table_def(r: &mut Reader<'_>, tail: bool) -> Result<TableDef> {
    let id = r.var()? as u32;
    let name = r.str()?.to_string();
    let n = r.var()? as usize;
    let mut columns = Vec::with_capacity(n.min(4096));
    for _ in 0..n {
        let name = r.str()?.to_string();
        let data_type = get_type(r)?;
        let nullable = r.u8()? != 0;
        let default = match r.u8()? {
            0 => None,
            1 => Some(DefaultExpr::Value(r.value()?)),
            2 => Some(DefaultExpr::Now),
            3 => Some(DefaultExpr::NewUuid),
            4 => Some(DefaultExpr::NextVal(r.str()?.to_string())),
            5 => Some(DefaultExpr::Today),
            6 => Some(DefaultExpr::Expr(r.str()?.to_string())),
            _ => return Err(short()),
        };
        let identity = match r.u8()? {
            0 => None,
            _ => Some(Identity {
                seed: r.ivar()?,
                increment: r.ivar()?,
                generated: None,
                tsql: false,
            }),
        };
        columns.push(ColumnDef {
            name,
            data_type,
            nullable,
            default,
            identity,
            collation: Collation::Default,
            time_precision: None,
            generated: None,
        });
    }
    let k = r.var()? as usize;
    let mut primary_key = Vec::with_capacity(k.min(64));
    for _ in 0..k {
        let i = r.var()? as usize;
        if i >= columns.len() {
            return Err(short());
        }
        primary_key.push(i);
    }
    let mut indexes = Vec::new();
    let mut checks = Vec::new();
    let mut pk_name = None;
    let mut foreign_keys = Vec::new();
    let mut partition_key = None;
    let mut partition_of = None;
    if tail {
        for _ in 0..r.var()? {
            match r.u8()? {
                DEF_INDEX => indexes.push(get_index_def(r, columns.len())?),
                DEF_CHECK => checks.push(CheckDef {
                    name: r.str()?.to_string(),
                    expr: r.str()?.to_string(),
                }),
                DEF_PKEY_NAME => pk_name = Some(r.str()?.to_string()),
                DEF_FOREIGN_KEY => foreign_keys.push(get_foreign_key(r, columns.len())?),
                DEF_IDENTITY_GENERATED => {
                    let k = r.var()? as usize;
                    let g = match r.u8()? {
                        0 => IdentityGeneration::ByDefault,
                        1 => IdentityGeneration::Always,
                        _ => return Err(short()),
                    };
                    // Only an identity column can be generated as one.
                    let ident = columns
                        .get_mut(k)
                        .and_then(|c| c.identity.as_mut())
                        .ok_or_else(short)?;
                    ident.generated = Some(g);
                }
                DEF_IDENTITY_TSQL => {
                    let k = r.var()? as usize;
                    let ident = columns
                        .get_mut(k)
                        .and_then(|c| c.identity.as_mut())
                        .ok_or_else(short)?;
                    ident.tsql = true;
                }
                DEF_COLLATION => {
                    let k = r.var()? as usize;
                    let c = match r.u8()? {
                        1 => Collation::C,
                        2 => Collation::Posix,
                        _ => return Err(short()),
                    };
                    columns.get_mut(k).ok_or_else(short)?.collation = c;
                }
                DEF_TIME_PRECISION => {
                    let k = r.var()? as usize;
                    let p = r.u8()?;
                    if p > 6 {
                        return Err(short());
                    }
                    columns.get_mut(k).ok_or_else(short)?.time_precision = Some(p);
                }
                DEF_PARTITION_KEY => partition_key = Some(r.str()?.to_string()),
                DEF_GENERATED_EXPR => {
                    let k = r.var()? as usize;
                    let sql = r.str()?.to_string();
                    columns.get_mut(k).ok_or_else(short)?.generated = Some(sql);
                }
                DEF_INDEX_OPTIONS => {
                    let k = r.var()? as usize;
                    let ix = indexes.get_mut(k).ok_or_else(short)?;
                    ix.options = get_index_options(r, ix.columns.len())?;
                }
                DEF_PARTITION_OF => {
                    let parent = u32::try_from(r.var()?).map_err(|_| short())?;
                    let bound = r.str()?.to_string();
                    partition_of = Some(PartitionOf { parent, bound });
                }
                _ => return Err(short()),
            }
        }
    }
    Ok(TableDef {
        id,
        name,
        columns,
        primary_key,
        indexes,
        checks,
        pk_name,
        foreign_keys,
        partition_key,
        partition_of,
    })
}

pub fn put_settings(out: &mut Vec<u8>, s: &DbSettings) {
    out.push(match s.delayed_durability {
        DelayedDurability::Disabled => 0,
        DelayedDurability::Allowed => 1,
        DelayedDurability::Forced => 2,
    });
    out.push(match s.recovery_model {
        RecoveryModel::Simple => 0,
        RecoveryModel::Full => 1,
    });
    put_var(out, s.max_exposure_bytes.map_or(0, |b| b + 1));
    put_var(out, s.max_exposure_ms.map_or(0, |b| b + 1));
}

pub fn get_settings(r: &mut Reader<'_>) -> Result<DbSettings> {
    let dd = match r.u8()? {
        0 => DelayedDurability::Disabled,
        1 => DelayedDurability::Allowed,
        2 => DelayedDurability::Forced,
        _ => return Err(short()),
    };
    let rm = match r.u8()? {
        0 => RecoveryModel::Simple,
        1 => RecoveryModel::Full,
        _ => return Err(short()),
    };
    let opt = |v: u64| (v > 0).then(|| v - 1);
    Ok(DbSettings {
        delayed_durability: dd,
        recovery_model: rm,
        max_exposure_bytes: opt(r.var()?),
        max_exposure_ms: opt(r.var()?),
    })
}

/// Set in a sequence's encoded id (ids are u32) when its type, bounds and
/// CYCLE follow; records from before have none (bigint, default bounds).
const SEQ_BOUNDED: u64 = 1 << 32;
/// Set in a sequence's encoded id when its owning column (table id, column
/// position) follows the CYCLE byte; written only for an owned sequence.
const SEQ_OWNED: u64 = 1 << 33;

pub fn put_sequence(out: &mut Vec<u8>, s: &SequenceDef) {
    let owned = if s.owned_by.is_some() { SEQ_OWNED } else { 0 };
    put_var(out, s.id as u64 | SEQ_BOUNDED | owned);
    put_str(out, &s.name);
    put_ivar(out, s.start);
    put_ivar(out, s.increment);
    out.push(match s.data_type {
        SeqType::SmallInt => 1,
        SeqType::Int => 2,
        SeqType::BigInt => 3,
    });
    put_ivar(out, s.min);
    put_ivar(out, s.max);
    out.push(s.cycle as u8);
    if let Some(o) = s.owned_by {
        put_var(out, o.table as u64);
        put_var(out, o.column as u64);
    }
}

pub fn get_sequence(r: &mut Reader<'_>) -> Result<SequenceDef> {
    let id = r.var()?;
    let name = r.str()?.to_string();
    let start = r.ivar()?;
    let increment = r.ivar()?;
    let (data_type, min, max, cycle) = if id & SEQ_BOUNDED != 0 {
        let data_type = match r.u8()? {
            1 => SeqType::SmallInt,
            2 => SeqType::Int,
            3 => SeqType::BigInt,
            _ => return Err(short()),
        };
        (data_type, r.ivar()?, r.ivar()?, r.u8()? != 0)
    } else {
        let (min, max) = SequenceDef::default_bounds(start, increment);
        (SeqType::BigInt, min, max, false)
    };
    let owned_by = if id & SEQ_OWNED != 0 {
        Some(SeqOwner {
            table: r.var()? as u32,
            column: r.var()? as usize,
        })
    } else {
        None
    };
    Ok(SequenceDef {
        id: (id & u32::MAX as u64) as u32,
        name,
        start,
        increment,
        data_type,
        min,
        max,
        cycle,
        owned_by,
    })
}
