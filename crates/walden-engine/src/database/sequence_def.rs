//! A sequence's definition from `CREATE SEQUENCE` options: PostgreSQL's
//! defaults (the bounds follow the type and the direction) and checks, with
//! its messages.

use crate::error::{EngineError, Result};
use crate::schema::{SequenceDef, SequenceOptions};

impl SequenceOptions {
    /// The definition of sequence `id` named `name`, or why PostgreSQL
    /// refuses these options (22023), checked in its order.
    pub fn define(&self, id: u32, name: &str) -> Result<SequenceDef> {
        let bad = |m: String| Err(EngineError::SequenceDefinition(m));
        let increment = self.increment.unwrap_or(1);
        if increment == 0 {
            return bad("INCREMENT must not be zero".into());
        }
        let (tmin, tmax) = self.data_type.range();
        let ty = self.data_type.name();
        let max = self.max.unwrap_or(if increment > 0 { tmax } else { -1 });
        if !(tmin..=tmax).contains(&max) {
            return bad(format!(
                "MAXVALUE ({max}) is out of range for sequence data type {ty}"
            ));
        }
        let min = self.min.unwrap_or(if increment > 0 { 1 } else { tmin });
        if !(tmin..=tmax).contains(&min) {
            return bad(format!(
                "MINVALUE ({min}) is out of range for sequence data type {ty}"
            ));
        }
        if min >= max {
            return bad(format!(
                "MINVALUE ({min}) must be less than MAXVALUE ({max})"
            ));
        }
        let start = self.start.unwrap_or(if increment > 0 { min } else { max });
        if start < min {
            return bad(format!(
                "START value ({start}) cannot be less than MINVALUE ({min})"
            ));
        }
        if start > max {
            return bad(format!(
                "START value ({start}) cannot be greater than MAXVALUE ({max})"
            ));
        }
        Ok(SequenceDef {
            id,
            name: name.to_string(),
            start,
            increment,
            data_type: self.data_type,
            min,
            max,
            cycle: self.cycle,
        })
    }
}

impl SequenceDef {
    /// The bounds of a sequence recorded before bounds were: PostgreSQL's
    /// defaults, widened to take a START outside them (which was allowed).
    pub fn default_bounds(start: i64, increment: i64) -> (i64, i64) {
        if increment > 0 {
            (start.min(1), i64::MAX)
        } else {
            (i64::MIN, start.max(-1))
        }
    }
}
