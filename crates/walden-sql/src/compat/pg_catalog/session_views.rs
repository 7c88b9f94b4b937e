//! `pg_cursors` and `pg_prepared_statements`: the session's own objects as
//! PostgreSQL shows them. The session hands its cursors and statements in
//! through `SessionInfo`.

use walden_engine::{DataType, Value};

pub use crate::context::CursorRow;

/// `pg_cursors`' columns.
pub fn pg_cursors_columns() -> Vec<(&'static str, walden_engine::DataType)> {
    use walden_engine::DataType as T;
    vec![
        ("name", T::Text),
        ("statement", T::Text),
        ("is_holdable", T::Bool),
        ("is_binary", T::Bool),
        ("is_scrollable", T::Bool),
        ("creation_time", T::TimestampTz),
    ]
}

pub fn pg_cursors_rows(rows: &[CursorRow]) -> Vec<Vec<Value>> {
    rows.iter()
        .map(|c| {
            vec![
                Value::text(&c.name),
                Value::text(&c.statement),
                Value::Bool(c.hold),
                Value::Bool(c.binary),
                Value::Bool(c.scroll),
                Value::TimestampTz(c.created),
            ]
        })
        .collect()
}

/// `pg_prepared_statements` columns.
pub fn prepared_statements_columns() -> Vec<(&'static str, DataType)> {
    vec![
        ("name", DataType::Text),
        ("statement", DataType::Text),
        ("prepare_time", DataType::TimestampTz),
        ("parameter_types", DataType::Text),
        ("from_sql", DataType::Bool),
        ("generic_plans", DataType::BigInt),
        ("custom_plans", DataType::BigInt),
    ]
}
