//! Administration statements in SQL Server's forms: `BACKUP ... TO DISK`
//! and `DBCC CHECKDB`. (The availability-group statements are parsed in
//! `front/availability_group.rs` and run by the session against the
//! replication layer.)

pub(crate) mod backup;
pub(crate) mod checkdb;
