//! Catalog statements: CREATE / ALTER / DROP of each kind of object (tables,
//! sequences, indexes, constraints, enum types, roles, grants, owners), the
//! checks they run, and how names resolve to objects (`search_path`).

pub(crate) mod alter_sequence;
pub(crate) mod alter_table;
pub(crate) mod analyze;
pub(crate) mod comments;
pub(crate) mod constraints;
pub(crate) mod create_as;
pub(crate) mod create_table_clauses;
pub(crate) mod ddl;
pub(crate) mod enums;
pub(crate) mod foreign_keys;
pub(crate) mod index;
pub(crate) mod owner;
pub(crate) mod partitions;
pub(crate) mod privileges;
pub(crate) mod public_schema;
pub(crate) mod roles;
pub mod schemas;
pub(crate) mod views;
