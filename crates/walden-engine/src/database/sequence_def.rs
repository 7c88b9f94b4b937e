//! A sequence's definition from `CREATE SEQUENCE` options: PostgreSQL's
//! defaults (the bounds follow the type and the direction) and checks, with
//! its messages.

use crate::error::{EngineError, Result};
use crate::schema::{SeqType, SequenceDef, SequenceOptions};

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
            owned_by: None,
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

/// What `ALTER SEQUENCE` changes (`None`: left as it is). `Some(None)` of
/// a bound is `NO MINVALUE` / `NO MAXVALUE`; of `restart`, `RESTART`
/// without a value (from START).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SequenceAlter {
    pub data_type: Option<SeqType>,
    pub increment: Option<i64>,
    pub min: Option<Option<i64>>,
    pub max: Option<Option<i64>>,
    pub start: Option<i64>,
    pub restart: Option<Option<i64>>,
    pub cache: Option<i64>,
    pub cycle: Option<bool>,
}

impl SequenceDef {
    /// This sequence after `a`, with the value it restarts from if it does,
    /// or why PostgreSQL refuses the change (22023), checked in its order.
    /// A bound that was its type's own follows a new type (one chosen
    /// explicitly stays, and must fit).
    pub fn altered(&self, a: &SequenceAlter) -> Result<(SequenceDef, Option<i64>)> {
        let bad = |m: String| Err(EngineError::SequenceDefinition(m));
        let (omin, omax) = self.data_type.range();
        let data_type = a.data_type.unwrap_or(self.data_type);
        let (nmin, nmax) = data_type.range();
        let retyped = data_type != self.data_type;
        let increment = a.increment.unwrap_or(self.increment);
        // A bound that was the old type's own becomes the new type's
        // (whichever the direction), as PostgreSQL resets it.
        let max = match a.max {
            Some(Some(v)) => Some(v),
            Some(None) => None,
            None if retyped && self.max == omax => Some(nmax),
            None => Some(self.max),
        };
        let min = match a.min {
            Some(Some(v)) => Some(v),
            Some(None) => None,
            None if retyped && self.min == omin => Some(nmin),
            None => Some(self.min),
        };
        let opts = SequenceOptions {
            data_type,
            start: Some(a.start.unwrap_or(self.start)),
            increment: Some(increment),
            min,
            max,
            cycle: a.cycle.unwrap_or(self.cycle),
        };
        let mut def = opts.define(self.id, &self.name)?;
        def.owned_by = self.owned_by;
        let restart = a.restart.map(|r| r.unwrap_or(def.start));
        if let Some(r) = restart {
            if r < def.min {
                return bad(format!(
                    "RESTART value ({r}) cannot be less than MINVALUE ({})",
                    def.min
                ));
            }
            if r > def.max {
                return bad(format!(
                    "RESTART value ({r}) cannot be greater than MAXVALUE ({})",
                    def.max
                ));
            }
        }
        if let Some(c) = a.cache {
            if c <= 0 {
                return bad(format!("CACHE ({c}) must be greater than zero"));
            }
        }
        Ok((def, restart))
    }
}
