//! Lock modes and their conflicts: PostgreSQL's row-lock modes and
//! table-lock modes, and the lock table's mode (either kind).

/// PostgreSQL's row-lock modes, weakest first. Each conflicts with a superset
/// of what the weaker ones conflict with, so holding two modes is holding the
/// stronger one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LockMode {
    /// `FOR KEY SHARE`: the key must not change or vanish.
    KeyShare,
    /// `FOR SHARE`: the row must not change.
    Share,
    /// `FOR NO KEY UPDATE`, and an UPDATE that keeps the key.
    NoKeyUpdate,
    /// `FOR UPDATE`, DELETE, INSERT and an UPDATE of the key.
    Update,
}

impl LockMode {
    /// PostgreSQL's row-lock conflict table.
    pub fn conflicts(self, other: LockMode) -> bool {
        use LockMode::*;
        match (self.min(other), self.max(other)) {
            (_, Update) => true,
            (KeyShare, _) | (Share, Share) => false,
            _ => true,
        }
    }
}

/// PostgreSQL's table-lock modes, weakest first (`LOCK TABLE ... IN ... MODE`).
/// DML takes `RowExclusive` (writes) or `RowShare` (row locks of locking
/// reads and foreign key checks), plain reads `AccessShare`; DDL and TRUNCATE
/// `AccessExclusive`, CREATE INDEX `Share`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TableLockMode {
    AccessShare,
    RowShare,
    RowExclusive,
    ShareUpdateExclusive,
    Share,
    ShareRowExclusive,
    Exclusive,
    AccessExclusive,
}

impl TableLockMode {
    pub(super) const ALL: [TableLockMode; 8] = [
        TableLockMode::AccessShare,
        TableLockMode::RowShare,
        TableLockMode::RowExclusive,
        TableLockMode::ShareUpdateExclusive,
        TableLockMode::Share,
        TableLockMode::ShareRowExclusive,
        TableLockMode::Exclusive,
        TableLockMode::AccessExclusive,
    ];

    /// The modes this one conflicts with, one bit per mode (PostgreSQL's
    /// table 13.2).
    fn conflict_mask(self) -> u8 {
        use TableLockMode::*;
        let bit = |m: TableLockMode| 1u8 << (m as u8);
        match self {
            AccessShare => bit(AccessExclusive),
            RowShare => bit(Exclusive) | bit(AccessExclusive),
            RowExclusive => {
                bit(Share) | bit(ShareRowExclusive) | bit(Exclusive) | bit(AccessExclusive)
            }
            ShareUpdateExclusive => {
                bit(ShareUpdateExclusive)
                    | bit(Share)
                    | bit(ShareRowExclusive)
                    | bit(Exclusive)
                    | bit(AccessExclusive)
            }
            Share => {
                bit(RowExclusive)
                    | bit(ShareUpdateExclusive)
                    | bit(ShareRowExclusive)
                    | bit(Exclusive)
                    | bit(AccessExclusive)
            }
            ShareRowExclusive => !(bit(AccessShare) | bit(RowShare)),
            Exclusive => !bit(AccessShare),
            AccessExclusive => 0xff,
        }
    }

    pub fn conflicts(self, other: TableLockMode) -> bool {
        self.conflict_mask() & (1 << (other as u8)) != 0
    }

    /// Holding `self` is at least holding `other`.
    pub(crate) fn covers(self, other: TableLockMode) -> bool {
        let (a, b) = (self.conflict_mask(), other.conflict_mask());
        a & b == b
    }

    /// The weakest mode that is holding both (PostgreSQL holds the two
    /// separately; one entry per holder keeps the lock table simple).
    pub(crate) fn combine(self, other: TableLockMode) -> TableLockMode {
        let need = self.conflict_mask() | other.conflict_mask();
        Self::ALL
            .into_iter()
            .find(|m| m.conflict_mask() & need == need)
            .unwrap_or(TableLockMode::AccessExclusive)
    }

    /// The SQL name, as `pg_locks.mode` shows it.
    pub fn name(self) -> &'static str {
        use TableLockMode::*;
        match self {
            AccessShare => "AccessShareLock",
            RowShare => "RowShareLock",
            RowExclusive => "RowExclusiveLock",
            ShareUpdateExclusive => "ShareUpdateExclusiveLock",
            Share => "ShareLock",
            ShareRowExclusive => "ShareRowExclusiveLock",
            Exclusive => "ExclusiveLock",
            AccessExclusive => "AccessExclusiveLock",
        }
    }
}

/// A lock mode in the lock table: a row's or a table's. A key only ever
/// holds one kind (a table lock's key is the table id with an empty key).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Mode {
    Row(LockMode),
    Table(TableLockMode),
}

impl Mode {
    pub(super) fn conflicts(self, other: Mode) -> bool {
        match (self, other) {
            (Mode::Row(a), Mode::Row(b)) => a.conflicts(b),
            (Mode::Table(a), Mode::Table(b)) => a.conflicts(b),
            _ => false,
        }
    }
    pub(super) fn covers(self, other: Mode) -> bool {
        match (self, other) {
            (Mode::Row(a), Mode::Row(b)) => a >= b,
            (Mode::Table(a), Mode::Table(b)) => a.covers(b),
            _ => false,
        }
    }
    pub(super) fn combine(self, other: Mode) -> Mode {
        match (self, other) {
            (Mode::Row(a), Mode::Row(b)) => Mode::Row(a.max(b)),
            (Mode::Table(a), Mode::Table(b)) => Mode::Table(a.combine(b)),
            (_, b) => b,
        }
    }
}
