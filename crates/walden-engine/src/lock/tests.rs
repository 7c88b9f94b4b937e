use super::*;
static NO: AtomicBool = AtomicBool::new(false);
use crate::types::Value;
const X: LockMode = LockMode::Update;
const W: WaitPolicy = WaitPolicy::Wait;
use std::sync::Arc;

fn k(i: i64) -> LockKey {
    (1, vec![Value::Int(i)].into_boxed_slice())
}

#[test]
fn a_cycle_is_detected_and_the_requester_is_the_victim() {
    let lm = Arc::new(LockManager::default());
    lm.acquire(1, &k(1), X, W, &[], None, &NO).unwrap();
    lm.acquire(2, &k(2), X, W, &[], None, &NO).unwrap();
    let lm2 = lm.clone();
    let t = std::thread::spawn(move || lm2.acquire(1, &k(2), X, W, &[], None, &NO).map(|_| ()));
    // Let transaction 1 start waiting for 2.
    while lm.table.lock().edges(1) != vec![2] {
        std::thread::sleep(Duration::from_millis(1));
    }
    let err = lm
        .acquire(2, &k(1), X, W, &[], None, &NO)
        .expect_err("deadlock");
    assert!(matches!(err, EngineError::Deadlock { victim: 2, .. }));
    lm.release(2, [k(2)]);
    t.join().unwrap().unwrap();
}

#[test]
fn timeouts_fire() {
    let lm = LockManager::default();
    lm.acquire(1, &k(1), X, W, &[], None, &NO).unwrap();
    let e = lm
        .acquire(2, &k(1), X, W, &[], Some(Duration::from_millis(20)), &NO)
        .unwrap_err();
    assert!(matches!(e, EngineError::LockTimeout(_)));
}

fn wait_until_waiting(lm: &LockManager, txid: u64, owner: u64) {
    while !lm.table.lock().edges(txid).contains(&owner) {
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn a_release_hands_the_lock_to_the_first_waiter_and_moves_the_others_edges() {
    let lm = Arc::new(LockManager::default());
    lm.acquire(1, &k(1), X, W, &[], None, &NO).unwrap();
    lm.acquire(3, &k(3), X, W, &[], None, &NO).unwrap();
    let (a, b) = (lm.clone(), lm.clone());
    let t2 = std::thread::spawn(move || a.acquire(2, &k(1), X, W, &[], None, &NO).map(|_| ()));
    wait_until_waiting(&lm, 2, 1);
    let t3 = std::thread::spawn(move || b.acquire(3, &k(1), X, W, &[], None, &NO).map(|_| ()));
    wait_until_waiting(&lm, 3, 1);
    lm.release(1, [k(1)]);
    t2.join().unwrap().unwrap();
    {
        let t = lm.table.lock();
        assert_eq!(
            t.locks.get(&k(1)).and_then(|e| e.mode_of(2)),
            Some(Mode::Row(X))
        );
        // 3 now waits for 2, so 2 waiting for 3 closes a cycle.
        assert_eq!(t.edges(3), vec![2]);
        assert!(t.edges(2).is_empty());
    }
    let err = lm
        .acquire(2, &k(3), X, W, &[], None, &NO)
        .expect_err("deadlock");
    assert!(matches!(err, EngineError::Deadlock { victim: 2, .. }));
    lm.release(2, [k(1)]);
    t3.join().unwrap().unwrap();
    lm.release(3, [k(1), k(3)]);
    assert_eq!(lm.held(), 0);
    assert!(lm.table.lock().waiting.is_empty());
}

#[test]
fn a_timed_out_waiter_leaves_the_queue() {
    let lm = LockManager::default();
    lm.acquire(1, &k(1), X, W, &[], None, &NO).unwrap();
    assert!(lm
        .acquire(2, &k(1), X, W, &[], Some(Duration::from_millis(5)), &NO)
        .is_err());
    assert!(lm.table.lock().waiting.is_empty());
    lm.release(1, [k(1)]);
    assert_eq!(lm.held(), 0);
}

#[test]
fn many_sessions_on_few_keys_serialise_without_losing_a_wakeup() {
    let lm = Arc::new(LockManager::default());
    let counter = Arc::new(Mutex::new([0u64; 3]));
    let threads: Vec<_> = (0..8u64)
        .map(|i| {
            let (lm, counter) = (lm.clone(), counter.clone());
            std::thread::spawn(move || {
                for j in 0..300u64 {
                    let txid = 1 + i * 1_000 + j;
                    let key = k(((i + j) % 3) as i64);
                    lm.acquire(txid, &key, X, W, &[], None, &NO)
                        .map(|_| ())
                        .unwrap();
                    counter.lock()[((i + j) % 3) as usize] += 1;
                    lm.release(txid, [key]);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(counter.lock().iter().sum::<u64>(), 2_400);
    assert_eq!(lm.held(), 0);
}

#[test]
fn a_cancel_ends_a_lock_wait() {
    let lm = Arc::new(LockManager::default());
    lm.acquire(1, &k(1), X, W, &[], None, &NO).unwrap();
    let cancel = Arc::new(AtomicBool::new(false));
    let (lm2, c2) = (lm.clone(), cancel.clone());
    let t = std::thread::spawn(move || lm2.acquire(2, &k(1), X, W, &[], None, &c2).map(|_| ()));
    std::thread::sleep(Duration::from_millis(50));
    cancel.store(true, Relaxed);
    let r = t.join().unwrap();
    assert!(matches!(r, Err(EngineError::Cancelled)), "{r:?}");
    // The cancelled waiter left the queue: the lock goes back to free.
    lm.release(1, [k(1)]);
    lm.acquire(3, &k(1), X, W, &[], None, &NO).unwrap();
}

fn get(lm: &LockManager, tx: u64, key: i64, mode: LockMode, p: WaitPolicy) -> Acquired {
    lm.acquire(tx, &k(key), mode, p, &[], Some(Duration::from_secs(5)), &NO)
        .unwrap()
}

#[test]
fn the_conflict_table_is_postgresqls() {
    use LockMode::*;
    let modes = [KeyShare, Share, NoKeyUpdate, Update];
    // Rows: held; columns: requested (PostgreSQL's table 13.3).
    let expect = [
        [false, false, false, true],
        [false, false, true, true],
        [false, true, true, true],
        [true, true, true, true],
    ];
    for (i, a) in modes.iter().enumerate() {
        for (j, b) in modes.iter().enumerate() {
            assert_eq!(a.conflicts(*b), expect[i][j], "{a:?} vs {b:?}");
        }
    }
}

#[test]
fn table_modes_follow_postgresqls_conflict_table() {
    use TableLockMode::*;
    let modes = TableLockMode::ALL;
    // PostgreSQL's table 13.2: which requested modes each held mode
    // conflicts with (1 = conflict), weakest first.
    let expect = [
        "00000001", "00000011", "00001111", "00011111", "00110111", "00111111", "01111111",
        "11111111",
    ];
    for (i, a) in modes.iter().enumerate() {
        for (j, b) in modes.iter().enumerate() {
            let want = expect[i].as_bytes()[j] == b'1';
            assert_eq!(a.conflicts(*b), want, "{a:?} vs {b:?}");
        }
    }
    assert_eq!(RowExclusive.combine(Share), ShareRowExclusive);
    assert!(AccessExclusive.covers(RowShare));
    assert!(!Share.covers(RowExclusive));
}

#[test]
fn table_and_row_locks_deadlock_together() {
    let lm = Arc::new(LockManager::default());
    lm.acquire_table(1, 7, TableLockMode::RowExclusive, W, &[], None, &NO)
        .unwrap();
    lm.acquire(2, &k(1), X, W, &[], None, &NO).unwrap();
    let lm2 = lm.clone();
    let t = std::thread::spawn(move || lm2.acquire(1, &k(1), X, W, &[], None, &NO).map(|_| ()));
    wait_until_waiting(&lm, 1, 2);
    let e = lm
        .acquire_table(2, 7, TableLockMode::AccessExclusive, W, &[], None, &NO)
        .expect_err("deadlock");
    assert!(
        matches!(e, EngineError::Deadlock { victim: 2, .. }),
        "{e:?}"
    );
    assert_eq!(
        lm.acquire_table(
            3,
            7,
            TableLockMode::Share,
            WaitPolicy::NoWait,
            &[],
            None,
            &NO
        )
        .unwrap(),
        Acquired::Busy
    );
    lm.release(2, [k(1)]);
    t.join().unwrap().unwrap();
    assert_eq!(
        lm.table_locks(),
        vec![(1, 7, TableLockMode::RowExclusive, true)]
    );
    lm.release(1, [k(1), table_lock_key(7)]);
    assert_eq!(lm.held(), 0);
}

#[test]
fn shared_modes_coexist_and_nowait_reports_busy() {
    use LockMode::*;
    let lm = LockManager::default();
    let nw = WaitPolicy::NoWait;
    assert_eq!(get(&lm, 1, 1, Share, nw), Acquired::New);
    assert_eq!(get(&lm, 2, 1, Share, nw), Acquired::New);
    assert_eq!(get(&lm, 3, 1, KeyShare, nw), Acquired::New);
    assert_eq!(get(&lm, 4, 1, NoKeyUpdate, nw), Acquired::Busy);
    assert_eq!(get(&lm, 1, 1, KeyShare, nw), Acquired::Held);
    lm.release(1, [k(1)]);
    lm.release(2, [k(1)]);
    // Key share does not block an update that keeps the key.
    assert_eq!(get(&lm, 4, 1, NoKeyUpdate, nw), Acquired::New);
    assert_eq!(get(&lm, 5, 1, Update, nw), Acquired::Busy);
    lm.release(3, [k(1)]);
    lm.release(4, [k(1)]);
    assert_eq!(lm.held(), 0);
}

#[test]
fn an_upgrade_waits_for_other_sharers_and_two_upgraders_deadlock() {
    use LockMode::*;
    let lm = Arc::new(LockManager::default());
    get(&lm, 1, 1, Share, W);
    get(&lm, 2, 1, Share, W);
    let lm2 = lm.clone();
    let t = std::thread::spawn(move || get(&lm2, 1, 1, Update, W));
    wait_until_waiting(&lm, 1, 2);
    let e = lm
        .acquire(2, &k(1), Update, W, &[], None, &NO)
        .expect_err("deadlock");
    assert!(
        matches!(e, EngineError::Deadlock { victim: 2, .. }),
        "{e:?}"
    );
    lm.release(2, [k(1)]);
    assert_eq!(t.join().unwrap(), Acquired::Upgraded(Share));
    // Back to share: another sharer fits again.
    lm.downgrade(1, &k(1), Share);
    assert_eq!(get(&lm, 3, 1, Share, WaitPolicy::NoWait), Acquired::New);
    lm.release(1, [k(1)]);
    lm.release(3, [k(1)]);
    assert_eq!(lm.held(), 0);
    assert!(lm.table.lock().waiting.is_empty());
}

#[test]
fn a_release_grants_every_compatible_waiter_at_the_front() {
    use LockMode::*;
    let lm = Arc::new(LockManager::default());
    get(&lm, 1, 1, Update, W);
    let (a, b) = (lm.clone(), lm.clone());
    let t2 = std::thread::spawn(move || get(&a, 2, 1, Share, W));
    wait_until_waiting(&lm, 2, 1);
    let t3 = std::thread::spawn(move || get(&b, 3, 1, KeyShare, W));
    wait_until_waiting(&lm, 3, 1);
    lm.release(1, [k(1)]);
    assert_eq!(t2.join().unwrap(), Acquired::New);
    assert_eq!(t3.join().unwrap(), Acquired::New);
    lm.release(2, [k(1)]);
    lm.release(3, [k(1)]);
    assert_eq!(lm.held(), 0);
}

/// A table lock taken as a transaction takes it (weak ones through the
/// fast path when they may), with its path.
fn take(
    lm: &LockManager,
    txid: u64,
    mode: TableLockMode,
    held: Option<TablePath>,
    policy: WaitPolicy,
) -> (Acquired, TablePath) {
    lm.take_table(txid, 7, mode, held, policy, &[], None, &NO)
        .unwrap()
}

/// Gives back what `take` took, as a transaction's end does.
fn give_back(lm: &LockManager, txid: u64, path: TablePath) {
    if !lm.release_fast(txid, 7, path) {
        lm.release(txid, [table_lock_key(7)]);
    }
}

#[test]
fn weak_table_locks_take_the_fast_path_and_show_in_the_lock_views() {
    use TableLockMode::*;
    let lm = LockManager::default();
    let nw = WaitPolicy::NoWait;
    assert_eq!(
        take(&lm, 1, RowExclusive, None, nw),
        (Acquired::New, TablePath::Fast)
    );
    assert_eq!(
        take(&lm, 2, AccessShare, None, nw),
        (Acquired::New, TablePath::Fast)
    );
    // A weak upgrade stays on the fast path.
    assert_eq!(
        take(&lm, 2, RowShare, Some(TablePath::Fast), nw),
        (Acquired::Held, TablePath::Fast)
    );
    // Nothing in the lock table, yet both are visible (pg_locks).
    assert_eq!(lm.held(), 0);
    assert_eq!(
        lm.table_locks(),
        vec![(1, 7, RowExclusive, true), (2, 7, RowShare, true)]
    );
    let reqs = lm.requests();
    assert_eq!(reqs.len(), 2);
    assert!(reqs
        .iter()
        .all(|r| r.granted && r.key.is_none() && r.table == 7));
    // A conflicting strong request sees them (moved into the lock table).
    assert_eq!(take(&lm, 3, Share, None, nw).0, Acquired::Busy);
    assert_eq!(lm.held(), 1);
    // Given up, it lets weak requests take the fast path again.
    assert_eq!(
        take(&lm, 4, RowExclusive, None, nw),
        (Acquired::New, TablePath::Fast)
    );
    // Moved locks are given back in the lock table.
    give_back(&lm, 1, TablePath::Fast);
    give_back(&lm, 2, TablePath::Fast);
    give_back(&lm, 4, TablePath::Fast);
    assert_eq!(lm.held(), 0);
    assert!(lm.table_locks().is_empty());
    // ACCESS EXCLUSIVE granted: weak requests queue behind it in the
    // lock table until it goes, then the fast path is open again.
    assert_eq!(
        take(&lm, 5, AccessExclusive, None, nw),
        (Acquired::New, TablePath::Main)
    );
    assert_eq!(
        take(&lm, 6, AccessShare, None, nw),
        (Acquired::Busy, TablePath::Main)
    );
    give_back(&lm, 5, TablePath::Main);
    assert_eq!(
        take(&lm, 6, AccessShare, None, nw),
        (Acquired::New, TablePath::Fast)
    );
    give_back(&lm, 6, TablePath::Fast);
    assert_eq!(lm.held(), 0);
}

#[test]
fn a_strong_request_waits_for_fast_path_holders_and_their_deadlocks_are_found() {
    use TableLockMode::*;
    let lm = Arc::new(LockManager::default());
    // 1 writes the table (fast path) and waits for 2's row lock; 2 then
    // asks for ACCESS EXCLUSIVE: a cycle through a fast-path lock.
    assert_eq!(take(&lm, 1, RowExclusive, None, W).1, TablePath::Fast);
    lm.acquire(2, &k(1), X, W, &[], None, &NO).unwrap();
    let lm2 = lm.clone();
    let t = std::thread::spawn(move || lm2.acquire(1, &k(1), X, W, &[], None, &NO).map(|_| ()));
    wait_until_waiting(&lm, 1, 2);
    let e = lm
        .take_table(2, 7, AccessExclusive, None, W, &[], None, &NO)
        .expect_err("deadlock");
    assert!(
        matches!(e, EngineError::Deadlock { victim: 2, .. }),
        "{e:?}"
    );
    lm.release(2, [k(1)]);
    t.join().unwrap().unwrap();
    // A strong request waits for a fast-path holder to end.
    let lm3 = lm.clone();
    let strong = std::thread::spawn(move || {
        lm3.take_table(3, 7, Exclusive, None, W, &[], None, &NO)
            .unwrap()
    });
    wait_until_waiting(&lm, 3, 1);
    lm.release(1, [k(1)]);
    give_back(&lm, 1, TablePath::Fast);
    assert_eq!(strong.join().unwrap(), (Acquired::New, TablePath::Main));
    // Held by 3: a weak request may not slip past through the fast path.
    let nw = WaitPolicy::NoWait;
    assert_eq!(take(&lm, 4, RowShare, None, nw).0, Acquired::Busy);
    // 3's own weak request is covered by what it holds.
    assert_eq!(
        take(&lm, 3, RowShare, Some(TablePath::Main), nw).0,
        Acquired::Held
    );
    give_back(&lm, 3, TablePath::Main);
    assert_eq!(lm.held(), 0);
    assert_eq!(
        take(&lm, 4, RowShare, None, nw),
        (Acquired::New, TablePath::Fast)
    );
    give_back(&lm, 4, TablePath::Fast);
}

#[test]
fn an_own_fast_path_lock_joins_a_stronger_request_of_the_same_transaction() {
    use TableLockMode::*;
    let lm = LockManager::default();
    let nw = WaitPolicy::NoWait;
    assert_eq!(take(&lm, 1, RowExclusive, None, nw).1, TablePath::Fast);
    // SHARE with ROW EXCLUSIVE is held as SHARE ROW EXCLUSIVE, in the lock
    // table: the fast-path lock joins it there.
    assert_eq!(
        take(&lm, 1, Share, Some(TablePath::Fast), nw),
        (Acquired::Held, TablePath::Main)
    );
    assert_eq!(lm.table_locks(), vec![(1, 7, ShareRowExclusive, true)]);
    assert_eq!(take(&lm, 2, RowExclusive, None, nw).0, Acquired::Busy);
    give_back(&lm, 1, TablePath::Main);
    assert_eq!(lm.held(), 0);
    assert!(lm.table_locks().is_empty());
    assert_eq!(
        take(&lm, 2, RowExclusive, None, nw),
        (Acquired::New, TablePath::Fast)
    );
    give_back(&lm, 2, TablePath::Fast);
}
