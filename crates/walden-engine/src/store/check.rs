//! Checking the base store while the database runs.
//!
//! The open does not verify every page (that made a restart as slow as the
//! data file is large; see docs/design.md, "Checking the data file"). Rows
//! carry a CRC-32C checked at every read, which covers the rows a query
//! touches; this check reads all of them: every stored row and index entry,
//! in key order, checked against its checksum, its table's shape and the
//! key before it, looked up again by its key (which walks the branch pages
//! a scan does not compare), and each table's count against the length
//! redb keeps (a subtree lost to a damaged branch page shows there). It runs in the background after each open (paced), and on demand
//! (`DBCC CHECKDB`). Damage it finds marks the store damaged: checkpoints
//! stop, so the log keeps every change since the last good one.

use super::base::{
    corrupt, index_name, is_data_table, key_from, panic_text, rows_def, table_name, BaseStore,
    META, META_IMAGE,
};
use super::keycode::{decode_key, encode_key};
use super::reads::{decode_row, row_crc, KeyFrom};
use crate::checkpoint::decode_image;
use crate::error::Result;
use redb::{ReadableDatabase, ReadableTableMetadata, TableHandle};
use std::ops::Bound;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

/// Entries read per read transaction: a short one, so that pages the
/// checkpoints free meanwhile can be reused.
const CHUNK: usize = 4096;
/// Problems a report keeps (the count goes on).
const MAX_PROBLEMS: usize = 100;

/// What a stored table is, from the catalog committed with it.
#[derive(Debug, Clone)]
struct Shape {
    /// What reports name: the SQL table (and index).
    pub name: String,
    pub key_from: KeyFrom,
    pub columns: usize,
}

/// One stored table's result.
#[derive(Debug, Clone)]
pub struct TableCheck {
    /// The stored table (`t<id>`, `i<table>_<index>`).
    pub stored: String,
    /// The SQL table (and index), or the stored name if the catalog has none.
    pub name: String,
    pub entries: u64,
    /// Whether the count was compared with redb's length: not when a
    /// checkpoint committed while the table was read in chunks.
    pub count_compared: bool,
    pub problems: u64,
}

/// The check's result.
#[derive(Debug, Clone, Default)]
pub struct CheckReport {
    pub tables: Vec<TableCheck>,
    pub entries: u64,
    pub bytes: u64,
    /// The first problems found (at most 100), each naming its table.
    pub problems: Vec<String>,
    pub problem_count: u64,
    pub elapsed: Duration,
    /// Stopped before the end (the server is shutting down).
    pub stopped: bool,
}

impl CheckReport {
    fn problem(&mut self, t: &mut TableCheck, what: String) {
        t.problems += 1;
        self.problem_count += 1;
        if self.problems.len() < MAX_PROBLEMS {
            self.problems.push(format!("{}: {what}", t.name));
        }
    }
}

/// Called after each chunk with the time it took; false stops the check.
pub(crate) type CheckPace<'a> = &'a mut dyn FnMut(Duration) -> bool;

impl BaseStore {
    /// Reads every stored table (see the module's comment). Damage found
    /// marks the store damaged.
    pub(crate) fn check(&self, pace: CheckPace<'_>) -> Result<CheckReport> {
        let t0 = Instant::now();
        let mut report = CheckReport::default();
        let names: Vec<String> = {
            let r = self.db.begin_read().map_err(|e| corrupt(&self.path, e))?;
            let list = r.list_tables().map_err(|e| corrupt(&self.path, e))?;
            list.map(|h| h.name().to_string())
                .filter(|n| is_data_table(n))
                .collect()
        };
        for stored in names {
            let mut t = TableCheck {
                name: stored.clone(),
                stored,
                entries: 0,
                count_compared: false,
                problems: 0,
            };
            let done = self.check_table(&mut t, &mut report, pace);
            report.tables.push(t);
            if !done {
                report.stopped = true;
                break;
            }
        }
        report.elapsed = t0.elapsed();
        if report.problem_count > 0 {
            let first = report.problems.first().cloned().unwrap_or_default();
            self.mark_damaged(format!(
                "{} problem(s) in the data file, the first: {first}",
                report.problem_count
            ));
        }
        Ok(report)
    }

    /// One table in chunks; false if `pace` asked to stop.
    fn check_table(
        &self,
        t: &mut TableCheck,
        report: &mut CheckReport,
        pace: CheckPace<'_>,
    ) -> bool {
        let commits = self.commits.load(Relaxed);
        let mut last: Option<Vec<u8>> = None;
        loop {
            let c0 = Instant::now();
            // redb may panic on a file damaged outside it rather than
            // return an error: either is damage found, not a crash.
            let chunk = catch_unwind(AssertUnwindSafe(|| self.check_chunk(&mut last, t, report)));
            let more = match chunk {
                Ok(Ok(Some(more))) => more,
                // The table was dropped meanwhile.
                Ok(Ok(None)) => return true,
                Ok(Err(e)) => {
                    report.problem(t, format!("reading it failed: {e}"));
                    return true;
                }
                Err(p) => {
                    let why = format!("reading it panicked in redb: {}", panic_text(&*p));
                    self.mark_panicked(format!("{}: {why}", t.name));
                    report.problem(t, why);
                    return true;
                }
            };
            if !more {
                break;
            }
            if !pace(c0.elapsed()) {
                return false;
            }
        }
        if self.commits.load(Relaxed) == commits {
            t.count_compared = true;
            let len = (|| -> Result<u64> {
                let r = self.db.begin_read().map_err(|e| corrupt(&self.path, e))?;
                let tbl = r
                    .open_table(rows_def(&t.stored))
                    .map_err(|e| corrupt(&self.path, e))?;
                tbl.len().map_err(|e| corrupt(&self.path, e))
            })();
            match len {
                Ok(n) if n == t.entries => {}
                Ok(n) => report.problem(
                    t,
                    format!("{} entries read, but the table's length is {n}", t.entries),
                ),
                // Dropped after the last chunk: nothing to compare.
                Err(_) if self.commits.load(Relaxed) != commits => t.count_compared = false,
                Err(e) => report.problem(t, format!("its length could not be read: {e}")),
            }
        }
        true
    }

    /// Up to `CHUNK` entries after `last`; `Some(more)`, or `None` if the
    /// table is gone.
    fn check_chunk(
        &self,
        last: &mut Option<Vec<u8>>,
        t: &mut TableCheck,
        report: &mut CheckReport,
    ) -> Result<Option<bool>> {
        let r = self.db.begin_read().map_err(|e| corrupt(&self.path, e))?;
        let tbl = match r.open_table(rows_def(&t.stored)) {
            Ok(tbl) => tbl,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
            Err(e) => return Err(corrupt(&self.path, e)),
        };
        // The shape from the catalog this same commit holds: a table
        // rewritten in a new shape is committed with its catalog.
        let shape = self.shape_of(&r, &t.stored)?;
        if let Some(s) = &shape {
            t.name.clone_from(&s.name);
        }
        let shape = shape.as_ref();
        let from = match last.as_deref() {
            Some(k) => Bound::Excluded(k),
            None => Bound::Unbounded,
        };
        let range = tbl
            .range::<&[u8]>((from, Bound::Unbounded))
            .map_err(|e| corrupt(&self.path, e))?;
        let mut kbuf = Vec::new();
        for (n, entry) in range.enumerate() {
            if n == CHUNK {
                return Ok(Some(true));
            }
            let (k, v) = entry.map_err(|e| corrupt(&self.path, e))?;
            let (k, v) = (k.value(), v.value());
            t.entries += 1;
            report.entries += 1;
            report.bytes += (k.len() + v.len()) as u64;
            if last.as_deref().is_some_and(|p| p >= k) {
                report.problem(t, "keys out of order".into());
            }
            if let Some(what) = check_entry(&self.path, shape, &t.name, k, v, &mut kbuf) {
                report.problem(t, what);
            }
            // A scan walks the leaves; a lookup descends the branch pages,
            // whose keys a scan never compares: a damaged one would send it
            // to the wrong leaf.
            match tbl.get(k).map_err(|e| corrupt(&self.path, e))? {
                Some(g) if g.value() == v => {}
                Some(_) => report.problem(t, "a lookup of a key finds another value".into()),
                None => report.problem(t, "a key the scan finds is not found by a lookup".into()),
            }
            let l = last.get_or_insert_with(Vec::new);
            l.clear();
            l.extend_from_slice(k);
        }
        Ok(Some(false))
    }
}

impl BaseStore {
    fn shape_of(&self, r: &redb::ReadTransaction, stored: &str) -> Result<Option<Shape>> {
        let meta = match r.open_table(META) {
            Ok(m) => m,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
            Err(e) => return Err(corrupt(&self.path, e)),
        };
        let Some(bytes) = meta.get(META_IMAGE).map_err(|e| corrupt(&self.path, e))? else {
            return Ok(None);
        };
        let image = decode_image(bytes.value(), &self.path)?;
        for t in image.catalog.by_id.values() {
            if table_name(t.id()) == stored {
                return Ok(Some(Shape {
                    name: t.def.name.clone(),
                    key_from: key_from(t),
                    columns: t.def.columns.len(),
                }));
            }
            for ix in &t.indexes {
                if index_name(t, ix) == stored {
                    return Ok(Some(Shape {
                        name: format!("{} (index {})", t.def.name, ix.def.name),
                        key_from: KeyFrom::Stored,
                        columns: 0,
                    }));
                }
            }
        }
        Ok(None)
    }
}

/// What is wrong with one stored entry, if anything.
fn check_entry(
    path: &std::path::Path,
    shape: Option<&Shape>,
    name: &str,
    k: &[u8],
    v: &[u8],
    kbuf: &mut Vec<u8>,
) -> Option<String> {
    let detail = |e: crate::error::EngineError| match e {
        crate::error::EngineError::CorruptDataFile { detail, .. } => detail,
        other => other.to_string(),
    };
    let Some(shape) = shape else {
        // Not in the catalog: its checksum, values and key alone.
        let Some(n) = v.len().checked_sub(4) else {
            return Some("an entry is shorter than its checksum".into());
        };
        let (body, crc) = v.split_at(n);
        if row_crc(k, body) != u32::from_le_bytes(crc.try_into().unwrap()) {
            return Some("an entry's checksum does not match".into());
        }
        if let Err(e) = crate::codec::Reader::new(body).values() {
            return Some(format!("an entry does not decode: {e}"));
        }
        return decode_key(k)
            .err()
            .map(|e| format!("a key does not decode: {e}"));
    };
    match decode_row(path, name, &shape.key_from, shape.columns, k, v) {
        Err(e) => Some(detail(e)),
        Ok((key, _)) => {
            if let KeyFrom::Columns(_) = shape.key_from {
                kbuf.clear();
                encode_key(&key, kbuf);
                if kbuf[..] != *k {
                    return Some("a row's key does not match its key columns".into());
                }
            }
            None
        }
    }
}
