//! What `walden crash-test` found: the kinds of violation, one record per
//! kill, the `--json` report and the printed lines.

use super::*;

/// What a check found wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum Kind {
    /// (a) An acknowledged durable commit is missing.
    LostDurable,
    /// A commit present after an earlier recovery is missing now.
    LostRecovered,
    /// (b) The survivors are not a prefix of the commit order (including a
    /// gap in a session's sequence, or the recovered end of log not
    /// splitting present from absent commits).
    Prefix,
    /// (c) A transaction is present with some of its rows only.
    Partial,
    /// (c) A session's counter differs from its highest present sequence.
    Counter,
    /// (d) A lost delayed commit lies beyond the exposure bound.
    Bound,
    /// A commit came back durable or delayed against the mode.
    Mode,
    /// (e) Recovery or the state after it is not sane.
    Sanity,
    /// The child failed (exited on its own, never got ready).
    Child,
    /// Churn rows disagree with the counters (a delete or a transaction of
    /// several log records applied in part, or not at all).
    Churn,
    /// The run's DDL tables disagree with its acknowledged statements.
    Ddl,
}

impl Kind {
    pub(super) const ALL: [Kind; 11] = [
        Kind::LostDurable,
        Kind::LostRecovered,
        Kind::Prefix,
        Kind::Partial,
        Kind::Counter,
        Kind::Bound,
        Kind::Mode,
        Kind::Sanity,
        Kind::Child,
        Kind::Churn,
        Kind::Ddl,
    ];

    pub(super) fn name(self) -> &'static str {
        match self {
            Kind::LostDurable => "lost durable commit",
            Kind::LostRecovered => "lost recovered commit",
            Kind::Prefix => "prefix violation",
            Kind::Partial => "partial transaction",
            Kind::Counter => "counter mismatch",
            Kind::Bound => "bound violation",
            Kind::Mode => "durability mode violation",
            Kind::Sanity => "sanity violation",
            Kind::Child => "child failure",
            Kind::Churn => "delete/large-transaction violation",
            Kind::Ddl => "DDL violation",
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub(super) struct Violation {
    pub(super) kind: Kind,
    pub(super) detail: String,
}

/// What one kill did and what its check found.
#[derive(Clone, Debug, Default, Serialize)]
pub(super) struct KillRecord {
    pub(super) run: u32,
    /// Killed without waiting for the child to be ready.
    pub(super) early: bool,
    /// The child reported it was ready (set-up done) before the kill.
    pub(super) ready: bool,
    /// From spawn to kill.
    pub(super) ran_ms: u64,
    pub(super) acks: u64,
    pub(super) durable_acks: u64,
    pub(super) delayed_acks: u64,
    pub(super) lost_delayed: u64,
    /// Largest `lsn - recovered end` of a lost delayed commit.
    pub(super) max_lost_exposure_bytes: u64,
    /// `db.log().end_lsn()` right after the reopen.
    pub(super) recovered_end_lsn: u64,
    /// End of the valid log found by the recovery scan.
    pub(super) scan_end_lsn: u64,
    /// LSN of the checkpoint recovery started from.
    pub(super) checkpoint_lsn: u64,
    /// Recovery started from a checkpoint the child took (not the parent's
    /// clean close).
    pub(super) from_child_checkpoint: bool,
    pub(super) records_replayed: u64,
    pub(super) recovery_ms: f64,
    pub(super) tail_cut: Option<String>,
    /// Transactions present in `crash` after recovery.
    pub(super) transactions_present: u64,
    /// DDL statements the run acknowledged (all checked).
    pub(super) ddl_acked: u64,
    /// The instance came back without its default database: the kill hit
    /// its creation (between writing the empty catalog and creating
    /// `walden`). Not a loss of anything committed; the next child creates it.
    pub(super) default_database_missing: bool,
    pub(super) violations: Vec<Violation>,
}

impl KillRecord {
    pub(super) fn violation(&mut self, kind: Kind, detail: String) {
        self.violations.push(Violation { kind, detail });
    }

    pub(super) fn count(&self, kinds: &[Kind]) -> u64 {
        self.violations
            .iter()
            .filter(|v| kinds.contains(&v.kind))
            .count() as u64
    }
}

/// The `--json` document.
#[derive(Debug, Serialize)]
pub(super) struct Report {
    pub(super) pass: bool,
    pub(super) kills_requested: u32,
    pub(super) kills: u32,
    pub(super) mode: Mode,
    pub(super) sessions: u32,
    pub(super) seed: u64,
    pub(super) max_exposure_bytes: Option<u64>,
    pub(super) dir: String,
    pub(super) acknowledged_commits: u64,
    pub(super) durable_commits: u64,
    pub(super) delayed_commits: u64,
    /// Acknowledged durable commits lost, plus recovered commits lost later.
    pub(super) lost_durable: u64,
    /// Acknowledged delayed commits lost (allowed, within the bound).
    pub(super) lost_delayed: u64,
    pub(super) max_lost_exposure_bytes: u64,
    pub(super) prefix_violations: u64,
    /// Partial transactions plus counter, churn (deletes, transactions of
    /// several log records) and DDL mismatches.
    pub(super) partial_transactions: u64,
    /// DDL statements acknowledged and checked.
    pub(super) ddl_statements: u64,
    pub(super) bound_violations: u64,
    /// Mode, sanity and child failures.
    pub(super) other_violations: u64,
    pub(super) violations_by_kind: BTreeMap<String, u64>,
    pub(super) early_kills: u64,
    pub(super) kills_without_acks: u64,
    pub(super) recoveries_from_child_checkpoint: u64,
    pub(super) tail_cuts: u64,
    pub(super) default_database_missing: u64,
    pub(super) elapsed_s: f64,
    pub(super) per_kill: Vec<KillRecord>,
}

pub(super) fn summary_line(r: &Report) -> String {
    let bound = match r.max_exposure_bytes {
        Some(b) => format!(", bound {b} B"),
        None => String::new(),
    };
    format!(
        "crash-test: {} kills, mode {}, {} acknowledged commits ({} durable, {} delayed), \
         {} lost durable, {} lost delayed (max exposure {} B{bound}), {} prefix violations, \
         {} partial transactions ({} DDL statements checked), {} bound violations, \
         {} other violations: {}",
        r.kills,
        r.mode.as_str(),
        r.acknowledged_commits,
        r.durable_commits,
        r.delayed_commits,
        r.lost_durable,
        r.lost_delayed,
        r.max_lost_exposure_bytes,
        r.prefix_violations,
        r.partial_transactions,
        r.ddl_statements,
        r.bound_violations,
        r.other_violations,
        if r.pass { "PASS" } else { "FAIL" }
    )
}

pub(super) fn print_kill(r: &KillRecord) {
    if r.default_database_missing {
        println!(
            "kill {}: {} after {} ms: the instance came back without its default database \
             (the kill interrupted its creation; nothing was committed yet)",
            r.run,
            if r.early { "early kill" } else { "killed" },
            r.ran_ms
        );
        return;
    }
    println!(
        "kill {}: {} after {} ms{}, {} acks ({} durable, {} delayed), {} lost delayed \
         (max {} B); recovered end {} from checkpoint {}{}, {} records replayed in {:.1} ms{}; \
         {} transactions present{}",
        r.run,
        if r.early { "early kill" } else { "killed" },
        r.ran_ms,
        if r.ready { "" } else { " (before ready)" },
        r.acks,
        r.durable_acks,
        r.delayed_acks,
        r.lost_delayed,
        r.max_lost_exposure_bytes,
        r.recovered_end_lsn,
        r.checkpoint_lsn,
        if r.from_child_checkpoint {
            " (child's)"
        } else {
            ""
        },
        r.records_replayed,
        r.recovery_ms,
        match &r.tail_cut {
            Some(c) => format!(", tail cut: {c}"),
            None => String::new(),
        },
        r.transactions_present,
        if r.violations.is_empty() {
            String::new()
        } else {
            format!(", {} VIOLATIONS", r.violations.len())
        }
    );
}
