//! Sequences: CREATE/DROP SEQUENCE and nextval with logged reservations.

use super::{Database, Sequence};
use crate::codec::{encode_redo, Redo};
use crate::error::{EngineError, Result};
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
        // Gate before the sequence lock: a checkpoint takes them in that order.
        let _g = self.gate.read();
        let mut st = seq.state.lock();
        let v = st.next;
        let inc = seq.def.increment;
        let beyond = if inc > 0 {
            v >= st.reserved
        } else {
            v <= st.reserved
        };
        if beyond {
            let upto = v.saturating_add(inc.saturating_mul(SEQ_RESERVE));
            let sinks = session.wait_sinks();
            self.log.append(
                &encode_redo(&Redo::SeqReserve {
                    id: seq.def.id,
                    upto,
                }),
                &sinks,
            )?;
            st.reserved = upto;
        }
        st.next = v
            .checked_add(inc)
            .ok_or_else(|| EngineError::OutOfRange(format!("sequence \"{name}\"")))?;
        Ok(v)
    }
}

impl Database {
    /// The value the sequence's next `nextval` returns (`None`: no such
    /// sequence).
    pub fn sequence_next(&self, name: &str) -> Option<i64> {
        self.sequence(name).ok().map(|s| s.state.lock().next)
    }

    /// `setval('name', value, is_called)`: the next `nextval` returns
    /// `value + increment` (is_called) or `value`. Not transactional, as
    /// in PostgreSQL; logged before it takes effect, so recovery and the
    /// secondaries resume from it (a reservation record names the next
    /// value, and the last one wins).
    pub fn setval(&self, session: &Session, name: &str, value: i64, is_called: bool) -> Result<()> {
        self.check_writable()?;
        let seq = self.sequence(name)?;
        let _g = self.gate.read();
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
        Ok(())
    }
}

/// Values reserved per log record, as PostgreSQL logs 32 at a time.
const SEQ_RESERVE: i64 = 32;
