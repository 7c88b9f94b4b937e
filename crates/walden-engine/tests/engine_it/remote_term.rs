//! A commit logged while this database was a primary with synchronous
//! secondaries is acknowledged only through that primary's hook. When the
//! hook goes away between the quorum check and the wait (the database was
//! demoted: an HA switchover fenced it while the commit's local flush was
//! under way), the commit must fail as unconfirmed, not be acknowledged with
//! no secondary asked: the new primary never received its log.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use walden_engine::{
    ColumnDef, CommitRequest, DataType, Database, Instance, InstanceConfig, RemoteHarden, TableDef,
    Value,
};
use walden_log::{Lsn, WaitSinks};

/// A hook that, when `vanish` is set, removes itself from the database at
/// the quorum check (what a demotion does to it), and counts the waits.
struct Hook {
    db: Mutex<Option<Arc<Database>>>,
    vanish: bool,
    waits: AtomicUsize,
}

impl RemoteHarden for Hook {
    fn check_quorum(&self) -> Result<(), String> {
        if self.vanish {
            if let Some(db) = self.db.lock().unwrap().take() {
                db.set_remote_harden(None);
            }
        }
        Ok(())
    }

    fn wait(&self, _lsn: Lsn, _waits: WaitSinks<'_>) -> Result<bool, String> {
        self.waits.fetch_add(1, Ordering::SeqCst);
        Ok(true)
    }
}

fn commit_one(vanish: bool) -> (Result<(), String>, usize) {
    let dir = tempfile::tempdir().unwrap();
    let mut ic = InstanceConfig::new(dir.path());
    ic.background_checkpoints = false;
    let inst = Instance::open(ic).unwrap();
    let db = inst.database("walden").unwrap();
    let s = inst.new_session();
    let def = TableDef::new("t", vec![ColumnDef::new("id", DataType::Int)], &["id"]).unwrap();
    let t = db.create_table(&s, def).unwrap();
    let hook = Arc::new(Hook {
        db: Mutex::new(Some(db.clone())),
        vanish,
        waits: AtomicUsize::new(0),
    });
    db.set_remote_harden(Some(hook.clone()));
    let mut tx = db.begin(&s);
    tx.insert_into(&t, vec![Some(Value::Int(1))]).unwrap();
    let res = tx
        .commit(CommitRequest::Default)
        .map(|_| ())
        .map_err(|e| e.to_string());
    inst.shutdown_nowait().unwrap();
    (res, hook.waits.load(Ordering::SeqCst))
}

#[test]
fn a_commit_waits_on_the_hook_it_was_checked_under() {
    let (res, waits) = commit_one(false);
    assert_eq!(res, Ok(()));
    assert_eq!(waits, 1, "the durable commit waited for its secondaries");
}

#[test]
fn a_commit_whose_primary_term_ended_is_not_acknowledged() {
    let (res, waits) = commit_one(true);
    let err = res.expect_err("acknowledged with no secondary asked");
    assert!(err.contains("stopped being the primary"), "{err}");
    assert_eq!(waits, 0);
}
