//! Administration statements in SQL Server's forms: availability groups
//! (`CREATE | ALTER AVAILABILITY GROUP`), `BACKUP ... TO DISK` and
//! `DBCC CHECKDB`.

pub(crate) mod availability_group;
pub(crate) mod backup;
pub(crate) mod checkdb;
