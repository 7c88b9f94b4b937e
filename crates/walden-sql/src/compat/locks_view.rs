//! `pg_locks` (PostgreSQL 15's columns) and `sys.dm_tran_locks` (SQL
//! Server's) over the engine's lock tables and the advisory locks: who
//! holds what, who waits, and for whom.
//!
//! Each open transaction is found in its session's list (engine
//! `Session::open_transactions`), which gives every lock request its
//! `pid` / `request_session_id`. Transaction ids count per database.
//!
//! `pg_locks` shows what PostgreSQL would: every open transaction's
//! `virtualxid` (`session/txid`); a `transactionid` lock of those that
//! wrote or locked rows or ran DDL (PostgreSQL gives those an xid);
//! `relation` locks held and awaited; for a request waiting on a row, a
//! `ShareLock` awaited on the `transactionid` of the transaction it waits
//! for, as PostgreSQL's row waits are, so the usual "who blocks whom" join
//! on `transactionid` works. Row locks held are not listed (PostgreSQL
//! keeps them in the rows, not in `pg_locks`); `sys.dm_tran_locks` lists
//! them, one `KEY` row each, as SQL Server does.

use crate::compat::pg_catalog;
use crate::functions::Env;
use std::collections::HashMap;
use std::time::{SystemTime, UNIX_EPOCH};
use walden_engine::{
    DataType as T, LockMode, LockRequest, RequestMode, TableLockMode, Value, ROLE_CATALOG_LOCK,
};

/// `pg_authid`'s OID: the role catalog lock stands for a lock on it.
const PG_AUTHID_OID: i64 = 1260;

pub fn pg_locks_columns() -> Vec<(&'static str, T)> {
    vec![
        ("locktype", T::Text),
        ("database", T::Int),
        ("relation", T::Int),
        ("page", T::Int),
        ("tuple", T::SmallInt),
        ("virtualxid", T::Text),
        ("transactionid", T::BigInt),
        ("classid", T::Int),
        ("objid", T::Int),
        ("objsubid", T::SmallInt),
        ("virtualtransaction", T::Text),
        ("pid", T::Int),
        ("mode", T::Text),
        ("granted", T::Bool),
        ("fastpath", T::Bool),
        ("waitstart", T::TimestampTz),
    ]
}

pub fn tran_locks_columns() -> Vec<(&'static str, T)> {
    let text = T::Varchar(None);
    vec![
        ("resource_type", text.clone()),
        ("resource_subtype", text.clone()),
        ("resource_database_id", T::Int),
        ("resource_description", text.clone()),
        ("resource_associated_entity_id", T::BigInt),
        ("resource_lock_partition", T::Int),
        ("request_mode", text.clone()),
        ("request_type", text.clone()),
        ("request_status", text.clone()),
        ("request_reference_count", T::SmallInt),
        ("request_session_id", T::Int),
        ("request_exec_context_id", T::Int),
        ("request_request_id", T::Int),
        ("request_owner_type", text),
        ("request_owner_id", T::BigInt),
    ]
}

/// (database id, txid) -> session id, over every open transaction.
fn owners(env: &Env<'_>) -> HashMap<(u32, u64), u32> {
    let mut m = HashMap::new();
    for s in env.instance.sessions() {
        for t in s.open_transactions() {
            m.insert(t, s.id);
        }
    }
    m
}

fn int(v: i64) -> Value {
    Value::Int(v)
}

fn text(s: impl AsRef<str>) -> Value {
    Value::text(s)
}

fn micros(t: SystemTime) -> Value {
    t.duration_since(UNIX_EPOCH)
        .map(|d| Value::TimestampTz(d.as_micros() as i64))
        .unwrap_or(Value::Null)
}

/// What a lock request's `pid` column shows.
fn pid(owners: &HashMap<(u32, u64), u32>, db: u32, txid: u64) -> Value {
    owners
        .get(&(db, txid))
        .map_or(Value::Null, |s| int(*s as i64))
}

/// A transaction PostgreSQL would have given an xid: it locked or wrote
/// rows, or ran DDL (or a role change).
fn has_xid(r: &LockRequest) -> bool {
    match r.mode {
        RequestMode::Row(_) => true,
        RequestMode::Table(m) => r.granted && m == TableLockMode::AccessExclusive,
    }
}

pub fn pg_locks_rows(env: &Env<'_>) -> Vec<Vec<Value>> {
    let owners = owners(env);
    let null = || Value::Null;
    let vxid = |sid: Option<&u32>, txid: u64| match sid {
        Some(s) => text(format!("{s}/{txid}")),
        None => text(format!("-1/{txid}")),
    };
    #[allow(clippy::too_many_arguments)]
    let row = |locktype: &str,
               database: Value,
               relation: Value,
               virtualxid: Value,
               xid: Value,
               (classid, objid, objsubid): (Value, Value, Value),
               vtx: Value,
               pid: Value,
               mode: &str,
               granted: bool,
               fastpath: bool,
               wait: Value| {
        vec![
            text(locktype),
            database,
            relation,
            null(),
            null(),
            virtualxid,
            xid,
            classid,
            objid,
            objsubid,
            vtx,
            pid,
            text(mode),
            Value::Bool(granted),
            Value::Bool(fastpath),
            wait,
        ]
    };
    let no_obj = || (null(), null(), null());
    let mut out = Vec::new();
    let mut dbs = env.instance.databases();
    dbs.sort_by_key(|d| d.id());
    for db in dbs {
        let id = db.id();
        let requests = db.lock_requests();
        let mut open: Vec<u64> = owners.keys().filter(|k| k.0 == id).map(|k| k.1).collect();
        open.sort_unstable();
        for &txid in &open {
            let sid = owners.get(&(id, txid));
            let me = vxid(sid, txid);
            out.push(row(
                "virtualxid",
                null(),
                null(),
                me.clone(),
                null(),
                no_obj(),
                me.clone(),
                pid(&owners, id, txid),
                "ExclusiveLock",
                true,
                true,
                null(),
            ));
            if requests.iter().any(|r| r.txid == txid && has_xid(r)) {
                out.push(row(
                    "transactionid",
                    null(),
                    null(),
                    null(),
                    int(txid as i64),
                    no_obj(),
                    me,
                    pid(&owners, id, txid),
                    "ExclusiveLock",
                    true,
                    false,
                    null(),
                ));
            }
        }
        for r in &requests {
            let me = vxid(owners.get(&(id, r.txid)), r.txid);
            let wait = r.wait_start.map_or(Value::Null, micros);
            match (r.mode, &r.key) {
                (RequestMode::Table(m), _) => {
                    let (database, relation) = if r.table == ROLE_CATALOG_LOCK {
                        (0, PG_AUTHID_OID)
                    } else {
                        (id as i64, pg_catalog::table_oid(r.table))
                    };
                    out.push(row(
                        "relation",
                        int(database),
                        int(relation),
                        null(),
                        null(),
                        no_obj(),
                        me,
                        pid(&owners, id, r.txid),
                        m.name(),
                        r.granted,
                        false,
                        wait,
                    ));
                }
                // A row wait: on the transaction it waits for first.
                (RequestMode::Row(_), Some(_)) if !r.granted => {
                    let Some(&on) = r.blocked_by.first() else {
                        continue;
                    };
                    out.push(row(
                        "transactionid",
                        null(),
                        null(),
                        null(),
                        int(on as i64),
                        no_obj(),
                        me,
                        pid(&owners, id, r.txid),
                        "ShareLock",
                        false,
                        false,
                        wait,
                    ));
                }
                (RequestMode::Row(_), _) => {}
            }
        }
    }
    // Advisory locks: PostgreSQL's classid/objid halves of the key, and
    // objsubid 1 for one bigint key, 2 for two integers.
    for ((db, key, two), sid, waiting) in env.info.advisory.requests() {
        let vtx = owners
            .iter()
            .find(|(k, s)| k.0 == db && **s == sid)
            .map_or(text(format!("{sid}/0")), |(k, _)| {
                text(format!("{sid}/{}", k.1))
            });
        out.push(row(
            "advisory",
            int(db as i64),
            null(),
            null(),
            null(),
            (
                int((key as u64 >> 32) as i64),
                int((key as u64 & 0xffff_ffff) as i64),
                int(if two { 2 } else { 1 }),
            ),
            vtx,
            int(sid as i64),
            "ExclusiveLock",
            waiting.is_none(),
            false,
            waiting.map_or(Value::Null, micros),
        ));
    }
    out
}

/// SQL Server's nearest mode names: intent locks for PostgreSQL's weak
/// table modes, schema modification for ACCESS EXCLUSIVE; shared row
/// locks are S, writers' and `FOR UPDATE`'s X.
fn sql_server_mode(m: RequestMode) -> &'static str {
    use TableLockMode as M;
    match m {
        RequestMode::Table(m) => match m {
            M::AccessShare => "IS",
            M::RowShare => "IU",
            M::RowExclusive => "IX",
            M::ShareUpdateExclusive => "SIU",
            M::Share => "S",
            M::ShareRowExclusive => "SIX",
            M::Exclusive => "X",
            M::AccessExclusive => "Sch-M",
        },
        RequestMode::Row(LockMode::KeyShare | LockMode::Share) => "S",
        RequestMode::Row(LockMode::NoKeyUpdate | LockMode::Update) => "X",
    }
}

/// A key's resource description: a hash of the key in parentheses, the
/// form SQL Server gives (`(8194443284a0)`), the same for one key in every
/// session.
fn key_hash(key: &[Value]) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    format!("{key:?}").hash(&mut h);
    format!("({:012x})", h.finish() & 0xffff_ffff_ffff)
}

pub fn tran_locks_rows(env: &Env<'_>) -> Vec<Vec<Value>> {
    let owners = owners(env);
    let mut out = Vec::new();
    let row = |rtype: &str,
               db: u32,
               desc: String,
               entity: i64,
               mode: &str,
               granted: bool,
               sid: Value,
               owner: (&str, i64)| {
        vec![
            text(rtype),
            text(""),
            int(db as i64),
            text(desc),
            int(entity),
            int(0),
            text(mode),
            text("LOCK"),
            text(if granted { "GRANT" } else { "WAIT" }),
            int(1),
            sid,
            int(0),
            int(0),
            text(owner.0),
            int(owner.1),
        ]
    };
    let mut dbs = env.instance.databases();
    dbs.sort_by_key(|d| d.id());
    for db in dbs {
        let id = db.id();
        for r in db.lock_requests() {
            let (rtype, desc, entity) = match &r.key {
                _ if r.table == ROLE_CATALOG_LOCK => ("METADATA", "role catalog".into(), 0),
                None => ("OBJECT", String::new(), pg_catalog::table_oid(r.table)),
                // The primary key's index holds the row (SQL Server names
                // the index's hobt).
                Some(k) => ("KEY", key_hash(k), pg_catalog::pkey_oid(r.table)),
            };
            out.push(row(
                rtype,
                id,
                desc,
                entity,
                sql_server_mode(r.mode),
                r.granted,
                pid(&owners, id, r.txid),
                ("TRANSACTION", r.txid as i64),
            ));
        }
    }
    // Advisory locks are SQL Server's application locks (sp_getapplock),
    // owned by the session.
    for ((db, key, _), sid, waiting) in env.info.advisory.requests() {
        out.push(row(
            "APPLICATION",
            db,
            format!("{key}"),
            0,
            "X",
            waiting.is_none(),
            int(sid as i64),
            ("SESSION", 0),
        ));
    }
    out
}

/// `pg_blocking_pids(pid)`: the sessions holding a lock `pid` waits for, or
/// queued ahead of it for a conflicting one (as PostgreSQL's), in order.
pub fn blocking_pids(env: &Env<'_>, pid: i64) -> Vec<u32> {
    let owners = owners(env);
    let mut out: Vec<u32> = Vec::new();
    for db in env.instance.databases() {
        let id = db.id();
        let mine = |txid: u64| owners.get(&(id, txid)).is_some_and(|s| *s as i64 == pid);
        for r in db.lock_requests() {
            if r.granted || !mine(r.txid) {
                continue;
            }
            out.extend(r.blocked_by.iter().filter_map(|t| owners.get(&(id, *t))));
        }
    }
    // An advisory wait: the key's holder.
    let reqs = env.info.advisory.requests();
    for (key, sid, waiting) in &reqs {
        if waiting.is_some() && *sid as i64 == pid {
            out.extend(
                reqs.iter()
                    .filter(|r| r.0 == *key && r.2.is_none())
                    .map(|r| r.1),
            );
        }
    }
    let mut seen = std::collections::HashSet::new();
    out.retain(|s| seen.insert(*s));
    out
}
