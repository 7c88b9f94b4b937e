//! walden-sql's integration tests, one binary (one link instead of one per
//! file): statements through the SQL layer on an embedded engine. Run one area
//! with `cargo test --release --workspace --test sql_it -- sql_arrays::`.

mod common;

mod hostile_statements;
mod sql_arrays;
mod sql_client_catalogs;
mod sql_cursors;
mod sql_datetime_types;
mod sql_driver_functions;
mod sql_identifier_case;
mod sql_json_types;
mod sql_plan_cache_text;
mod sql_statements;
mod sql_statements_clients;
mod sql_type_resolution;
mod stages;
