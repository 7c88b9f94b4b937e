//! Sequences: CREATE/DROP SEQUENCE and nextval with logged reservations.

use super::{Database, Sequence};
use crate::codec::{encode_redo, Redo};
use crate::error::{EngineError, Result};
use crate::schema::SequenceDef;
use crate::session::Session;
use std::sync::Arc;

impl Database {
    fn sequence(&self, name: &str) -> Result<Arc<Sequence>> {
        self.catalog
            .read()
            .sequences
            .get(&name.to_ascii_lowercase())
            .cloned()
            .ok_or_else(|| EngineError::UnknownSequence(name.to_string()))
    }

    /// `nextval('name')` / `NEXT VALUE FOR name`. Not transactional; values are
    /// reserved in the log 32 at a time, so a crash never hands out a value a
    /// hardened commit used.
    pub fn nextval(&self, session: &Session, name: &str) -> Result<i64> {
        self.check_writable()?;
        let seq = self.sequence(name)?;
        let def = &seq.def;
        let (inc, min, max) = (def.increment, def.min, def.max);
        // Gate before the sequence lock: a checkpoint takes them in that order.
        let _g = self.txns.gate.read();
        let mut st = seq.state.lock();
        let mut v = st.next;
        // Past a bound: start over at the other one, or fail.
        let wrapped = v > max || v < min;
        if wrapped {
            if !def.cycle {
                return Err(exhausted(def, inc > 0));
            }
            v = if inc > 0 { min } else { max };
        }
        let beyond = if inc > 0 {
            v >= st.reserved
        } else {
            v <= st.reserved
        };
        if beyond || wrapped {
            // Never past one step beyond a bound: after a crash the
            // sequence resumes there, as PostgreSQL's does.
            let ahead = v as i128 + inc as i128 * SEQ_RESERVE as i128;
            let upto = ahead.clamp(min as i128 - 1, max as i128 + 1);
            let upto = upto.clamp(i64::MIN as i128, i64::MAX as i128) as i64;
            let sinks = session.wait_sinks();
            self.log
                .append(&encode_redo(&Redo::SeqReserve { id: def.id, upto }), &sinks)?;
            st.reserved = upto;
        }
        st.next = match v.checked_add(inc) {
            Some(n) => n,
            // Only at the ends of bigint, where one step beyond is not a
            // number: wrap now, or refuse this last value.
            None if def.cycle => {
                if inc > 0 {
                    min
                } else {
                    max
                }
            }
            None => return Err(exhausted(def, inc > 0)),
        };
        st.last = Some(v);
        drop(st);
        let mut mem = session.seq_memory.lock();
        mem.values.insert(def.id, v);
        mem.last = Some(def.id);
        Ok(v)
    }

    /// `currval('name')`: the value this session's last `nextval` of the
    /// sequence returned (55000 before one).
    pub fn currval(&self, session: &Session, name: &str) -> Result<i64> {
        let seq = self.sequence(name)?;
        let v = session.seq_memory.lock().values.get(&seq.def.id).copied();
        v.ok_or_else(|| {
            EngineError::SequenceValueUndefined(format!(
                "currval of sequence \"{}\" is not yet defined in this session",
                seq.def.name
            ))
        })
    }

    /// `lastval()`: the value this session's last `nextval` returned, of
    /// whichever sequence (55000 before one, or once it is dropped).
    pub fn lastval(&self, session: &Session) -> Result<i64> {
        let undefined = || {
            EngineError::SequenceValueUndefined("lastval is not yet defined in this session".into())
        };
        let mem = session.seq_memory.lock();
        let id = mem.last.ok_or_else(undefined)?;
        let exists = self
            .catalog
            .read()
            .sequences
            .values()
            .any(|s| s.def.id == id);
        if !exists {
            return Err(undefined());
        }
        mem.values.get(&id).copied().ok_or_else(undefined)
    }
}

fn exhausted(def: &SequenceDef, up: bool) -> EngineError {
    EngineError::SequenceExhausted {
        name: def.name.clone(),
        which: if up { "maximum" } else { "minimum" },
        limit: if up { def.max } else { def.min },
    }
}

impl Database {
    /// The value the sequence's next `nextval` returns (`None`: no such
    /// sequence).
    pub fn sequence_next(&self, name: &str) -> Option<i64> {
        self.sequence(name).ok().map(|s| s.state.lock().next)
    }

    /// `last_value` and `is_called` of a sequence read as a relation: the
    /// value handed out last, or (not called) the one handed out next.
    pub fn sequence_last(&self, name: &str) -> Option<(i64, bool)> {
        self.sequence_position(name)
            .map(|(v, called, _)| (v, called))
    }

    /// [`Database::sequence_last`] and `log_cnt`: how many values past
    /// `last_value` the log has reserved (PostgreSQL's count of values
    /// fetched ahead).
    pub fn sequence_position(&self, name: &str) -> Option<(i64, bool, i64)> {
        let s = self.sequence(name).ok()?;
        let st = s.state.lock();
        let ahead = match st.last {
            Some(last) if s.def.increment != 0 => {
                ((st.reserved as i128 - last as i128) / s.def.increment as i128)
                    .clamp(0, i64::MAX as i128) as i64
            }
            _ => 0,
        };
        Some(match st.last {
            Some(v) => (v, true, ahead),
            None => (st.next, false, 0),
        })
    }

    /// `setval('name', value, is_called)`: the next `nextval` returns
    /// `value + increment` (is_called) or `value`. Not transactional, as
    /// in PostgreSQL; logged before it takes effect, so recovery and the
    /// secondaries resume from it (a reservation record names the next
    /// value, and the last one wins).
    pub fn setval(&self, session: &Session, name: &str, value: i64, is_called: bool) -> Result<()> {
        self.check_writable()?;
        let seq = self.sequence(name)?;
        let def = &seq.def;
        if value < def.min || value > def.max {
            return Err(EngineError::SequenceOutOfBounds {
                name: def.name.clone(),
                value,
                min: def.min,
                max: def.max,
            });
        }
        let _g = self.txns.gate.read();
        let mut st = seq.state.lock();
        let next = if is_called {
            value
                .checked_add(seq.def.increment)
                .ok_or_else(|| EngineError::OutOfRange(format!("sequence \"{name}\"")))?
        } else {
            value
        };
        let sinks = session.wait_sinks();
        self.log.append(
            &encode_redo(&Redo::SeqReserve {
                id: seq.def.id,
                upto: next,
            }),
            &sinks,
        )?;
        st.next = next;
        st.reserved = next;
        st.last = is_called.then_some(value);
        drop(st);
        if is_called {
            session.seq_memory.lock().values.insert(def.id, value);
        }
        Ok(())
    }
}

impl Database {
    /// `setval` of an identity column's counter (PostgreSQL's identity
    /// sequence): the next value the column takes is `value + increment`
    /// (is_called) or `value`. Bounds are the column type's in the
    /// counter's direction, as PostgreSQL's identity sequence has them.
    /// Logged before it takes effect, as a sequence's setval.
    pub fn set_identity(
        &self,
        session: &Session,
        table: &crate::table::Table,
        value: i64,
        is_called: bool,
    ) -> Result<()> {
        self.check_writable()?;
        let Some((col, ident)) = table.def.identity_column() else {
            return Err(EngineError::UnknownSequence(table.def.name.clone()));
        };
        let top = match table.def.columns[col].data_type {
            crate::types::DataType::SmallInt => i16::MAX as i64,
            crate::types::DataType::Int => i32::MAX as i64,
            _ => i64::MAX,
        };
        let (min, max) = if ident.increment > 0 {
            (1, top)
        } else {
            (-top - 1, -1)
        };
        let name = format!("{}_{}_seq", table.def.name, table.def.columns[col].name);
        if value < min || value > max {
            return Err(EngineError::SequenceOutOfBounds {
                name,
                value,
                min,
                max,
            });
        }
        let next = if is_called {
            value
                .checked_add(ident.increment)
                .ok_or_else(|| EngineError::OutOfRange(format!("sequence \"{name}\"")))?
        } else {
            value
        };
        let _g = self.txns.gate.read();
        let sinks = session.wait_sinks();
        self.log.append(
            &encode_redo(&Redo::IdentitySet {
                table: table.id(),
                next,
            }),
            &sinks,
        )?;
        table
            .next_identity
            .store(next, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }
}

/// Values reserved per log record, as PostgreSQL logs 32 at a time.
const SEQ_RESERVE: i64 = 32;
