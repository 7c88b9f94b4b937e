//! PostgreSQL's system catalogs and catalog functions, derived from Walden's
//! own catalog, so that psql's `\d` family, drivers and tools can read them.
//!
//! Walden has one schema (`public`), tables with an optional primary key,
//! column defaults and sequences. Every relation's OID is computed from the
//! engine's ids, so one object has the same OID in every catalog, in every
//! session and across restarts. The catalogs of features Walden lacks
//! (policies, publications, statistics objects, inheritance, triggers,
//! dependencies) exist and are empty, so the queries tools send
//! about them return no rows instead of failing.
//!
//! Arrays have no type of their own in Walden; catalog columns and functions
//! that PostgreSQL types as arrays use PostgreSQL's text form (`{a,b}`).

use crate::error::{ErrorKind, Result, SqlError};
use crate::functions::Env;
use std::sync::Arc;
use walden_engine::{ColumnDef, DataType, Database, DefaultExpr, SequenceDef, Table, Value};

mod builtin_procs;
pub use builtin_procs::{function_arguments, function_name, function_result};
mod attnums;
pub use attnums::catalog_attnum;
mod deparse;
mod descriptions;
pub use descriptions::{col_description, description_rows, obj_description};
mod dump_catalogs;
mod empty_catalogs;
mod enums;
pub(crate) mod foreign_keys;
mod oids;
mod opclass;
mod regcast;
mod rows;
mod sequence_relations;
mod sequence_views;
pub(crate) mod session_views;
mod settings_view;
mod sizes;
pub(crate) mod triggers;
mod user_procs;
mod user_views;
mod views;

pub use crate::types::oids::*;
pub use crate::types::pg_types::*;
pub use crate::types::quote::*;
pub use deparse::*;
pub use dump_catalogs::{
    acldefault, catalog_relation_oid, ident_of, options_to_table, qualify_for_path,
    search_path_schemas, serial_sequence,
};
pub use enums::{enum_regtype_oid, enum_type_name, format_type_in};
pub use oids::*;
pub use regcast::*;
pub use rows::*;
pub use sequence_relations::{
    sequence_relation, sequence_relation_oid, sequence_relation_rows, SeqRel,
};
pub use sizes::size_of;
pub(crate) use user_procs::{
    function_arguments as user_function_arguments, function_name as user_function_name,
    function_result as user_function_result,
};
pub use user_views::{viewdef_by_name, viewdef_by_oid};
pub use views::*;
