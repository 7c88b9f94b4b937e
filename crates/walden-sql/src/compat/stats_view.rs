//! `pg_stats`: the statistics ANALYZE stored (`query/stats.rs`), one row per
//! analysed column, with PostgreSQL 15's columns. The value lists
//! (`anyarray` in PostgreSQL) are text arrays of the values' text forms.

use crate::compat::pg_catalog;
use crate::functions::Env;
use crate::query::stats;
use walden_engine::{DataType, Value};

pub fn pg_stats_columns() -> Vec<(&'static str, DataType)> {
    use DataType as T;
    let name = T::Varchar(None);
    let texts = T::Array(Box::new(T::Text));
    let reals = T::Array(Box::new(T::Real));
    vec![
        ("schemaname", name.clone()),
        ("tablename", name.clone()),
        ("attname", name),
        ("inherited", T::Bool),
        ("null_frac", T::Real),
        ("avg_width", T::Int),
        ("n_distinct", T::Real),
        ("most_common_vals", texts.clone()),
        ("most_common_freqs", reals.clone()),
        ("histogram_bounds", texts.clone()),
        ("correlation", T::Real),
        ("most_common_elems", texts),
        ("most_common_elem_freqs", reals.clone()),
        ("elem_count_histogram", reals),
    ]
}

/// A value's text form, as PostgreSQL's output function gives it.
fn text_of(v: &Value) -> Value {
    match walden_engine::types::coerce(v.clone(), &DataType::Text) {
        Ok(t @ Value::Text(_)) => t,
        _ => Value::text(v.to_string()),
    }
}

/// PostgreSQL keeps statistics as `real` (float4): shown rounded to it.
fn real(x: f64) -> Value {
    Value::Float(x as f32 as f64)
}

pub fn pg_stats_rows(env: &Env<'_>) -> Vec<Vec<Value>> {
    let db = pg_catalog::Seen::of(env);
    let mut out = Vec::new();
    for tb in db.tables() {
        let Some(st) = stats::of(&tb) else {
            continue;
        };
        // A temporary table is shown in its session's pg_temp_N schema.
        let temp = crate::types::temp_names::split_temp(tb.name());
        let temp_schema = temp.map(|(spid, _)| format!("pg_temp_{spid}"));
        let (schema, table) = match (&temp_schema, temp) {
            (Some(s), Some((_, n))) => (s.as_str(), n),
            _ => walden_engine::namespace::split_engine_name(tb.name()),
        };
        for col in &tb.def.columns {
            let Some(c) = st.column(&col.name) else {
                continue;
            };
            let list = |vs: Vec<Value>| {
                if vs.is_empty() {
                    Value::Null
                } else {
                    Value::Array(vs.into())
                }
            };
            out.push(vec![
                Value::text(schema),
                Value::text(table),
                Value::text(&col.name),
                Value::Bool(false),
                real(c.null_frac),
                Value::Int(c.avg_width as i64),
                real(c.n_distinct),
                list(c.mcv.iter().map(|(v, _)| text_of(v)).collect()),
                list(c.mcv.iter().map(|(_, f)| real(*f)).collect()),
                list(c.histogram.iter().map(text_of).collect()),
                c.correlation.map(real).unwrap_or(Value::Null),
                Value::Null,
                Value::Null,
                Value::Null,
            ]);
        }
    }
    out
}
