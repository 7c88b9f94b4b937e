//! Frontend messages checked before pgwire decodes them, and the memory
//! that partly received messages may hold.
//!
//! pgwire's decoders read fields with `bytes`' getters, which panic when a
//! message claims more than it carries (a Bind whose parameter count runs
//! past its end, a Parse with a truncated type list). A panic is caught per
//! connection, but each prints a backtrace (the first symbolization cost
//! 170 MB of memory). So every complete message of the extended protocol is
//! walked here first, field by field, and a malformed one is answered with
//! 08P01 without reaching pgwire.
//!
//! A client may also announce a large message and send it slowly: each
//! connection's read buffer grows towards the announced length. Messages
//! above `LARGE` reserve their length from one process-wide budget while
//! they are incomplete; a message that does not fit is refused (53200)
//! instead of letting a few hundred connections take all memory.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Messages this large or larger count against the budget while partial.
pub const LARGE: usize = 1 << 20;

/// Memory all partly received large messages may hold together.
pub const BUDGET: u64 = 1 << 30;

static RESERVED: AtomicU64 = AtomicU64::new(0);

/// Why a message was refused.
#[derive(Debug, thiserror::Error)]
pub enum FrontendError {
    #[error("malformed {kind} message: {what}")]
    Malformed { kind: char, what: &'static str },
    #[error(
        "out of memory: a {len}-byte message does not fit in what partly received \
         messages may hold ({BUDGET} bytes across all connections)"
    )]
    OverBudget { len: u64 },
}

/// A connection's reservation for the large message it is receiving.
#[derive(Default)]
pub struct Reservation(u64);

impl Reservation {
    /// Called with the connection's read buffer before decoding: reserves
    /// the announced length of a large incomplete message once, releases it
    /// when the message is complete.
    pub fn track(&mut self, buf: &[u8]) -> Result<(), FrontendError> {
        let announced = match buf {
            [_, a, b, c, d, ..] => i32::from_be_bytes([*a, *b, *c, *d]).max(0) as usize + 1,
            _ => 0,
        };
        let incomplete = announced > buf.len();
        if incomplete && announced >= LARGE {
            if self.0 == 0 {
                let len = announced as u64;
                let prev = RESERVED.fetch_add(len, Relaxed);
                if prev + len > BUDGET {
                    RESERVED.fetch_sub(len, Relaxed);
                    return Err(FrontendError::OverBudget { len });
                }
                self.0 = len;
            }
        } else {
            self.release();
        }
        Ok(())
    }

    fn release(&mut self) {
        if self.0 > 0 {
            RESERVED.fetch_sub(self.0, Relaxed);
            self.0 = 0;
        }
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.release();
    }
}

/// Reads the fields of one message body, failing instead of panicking.
struct Body<'a> {
    b: &'a [u8],
    kind: char,
}

impl<'a> Body<'a> {
    fn bad(&self, what: &'static str) -> FrontendError {
        FrontendError::Malformed {
            kind: self.kind,
            what,
        }
    }
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], FrontendError> {
        if self.b.len() < n {
            return Err(self.bad(what));
        }
        let (h, t) = self.b.split_at(n);
        self.b = t;
        Ok(h)
    }
    fn i16(&mut self, what: &'static str) -> Result<i16, FrontendError> {
        let v = self.take(2, what)?;
        Ok(i16::from_be_bytes([v[0], v[1]]))
    }
    fn i32(&mut self, what: &'static str) -> Result<i32, FrontendError> {
        let v = self.take(4, what)?;
        Ok(i32::from_be_bytes([v[0], v[1], v[2], v[3]]))
    }
    fn cstr(&mut self, what: &'static str) -> Result<&'a [u8], FrontendError> {
        let Some(n) = self.b.iter().position(|&c| c == 0) else {
            return Err(self.bad(what));
        };
        let s = &self.b[..n];
        self.b = &self.b[n + 1..];
        std::str::from_utf8(s).map_err(|_| self.bad("a string is not UTF-8"))?;
        Ok(s)
    }
    fn count(&mut self, what: &'static str) -> Result<usize, FrontendError> {
        let n = self.i16(what)?;
        usize::try_from(n).map_err(|_| self.bad("a negative count"))
    }
    fn end(&self) -> Result<(), FrontendError> {
        if self.b.is_empty() {
            Ok(())
        } else {
            Err(self.bad("bytes left over after its last field"))
        }
    }
}

/// Checks the first message in `buf` if it is complete; `Ok` for a message
/// still arriving, for messages not checked here, and for well-formed ones.
pub fn check(buf: &[u8]) -> Result<(), FrontendError> {
    let [tag, a, b, c, d, ..] = buf else {
        return Ok(());
    };
    let len = i32::from_be_bytes([*a, *b, *c, *d]);
    let kind = *tag as char;
    if len < 4 {
        return Err(FrontendError::Malformed {
            kind,
            what: "a length below 4",
        });
    }
    let end = len as usize + 1;
    if buf.len() < end {
        return Ok(());
    }
    let mut m = Body {
        b: &buf[5..end],
        kind,
    };
    match tag {
        b'P' => {
            m.cstr("the statement name")?;
            m.cstr("the query")?;
            let n = m.count("the parameter type count")?;
            m.take(4 * n, "parameter types")?;
            m.end()
        }
        b'B' => {
            m.cstr("the portal name")?;
            m.cstr("the statement name")?;
            let n = m.count("the format code count")?;
            m.take(2 * n, "format codes")?;
            let n = m.count("the parameter count")?;
            for _ in 0..n {
                let l = m.i32("a parameter length")?;
                if l >= 0 {
                    m.take(l as usize, "a parameter value")?;
                } else if l != -1 {
                    return Err(m.bad("a parameter length below -1"));
                }
            }
            let n = m.count("the result format count")?;
            m.take(2 * n, "result format codes")?;
            m.end()
        }
        b'D' | b'C' => {
            match m.take(1, "the kind")?[0] {
                b'S' | b'P' => {}
                _ => return Err(m.bad("the kind is neither S nor P")),
            }
            m.cstr("the name")?;
            m.end()
        }
        b'E' => {
            m.cstr("the portal name")?;
            m.i32("the row limit")?;
            m.end()
        }
        b'Q' => {
            m.cstr("the query")?;
            m.end()
        }
        b'S' | b'H' | b'X' | b'c' => m.end(),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(tag: u8, body: &[u8]) -> Vec<u8> {
        let mut v = vec![tag];
        v.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
        v.extend_from_slice(body);
        v
    }

    #[test]
    fn well_formed_messages_pass_and_malformed_ones_are_named() {
        assert!(check(&msg(b'P', b"s\0SELECT 1\0\0\x01\0\0\0\x17")).is_ok());
        assert!(check(&msg(b'B', b"\0s\0\0\0\0\x01\0\0\0\x011\0\0")).is_ok());
        assert!(check(&msg(b'B', b"\0s\0\0\0\0\x01\xff\xff\xff\xff\0\0")).is_ok());
        assert!(check(&msg(b'E', b"\0\0\0\0\0")).is_ok());
        assert!(check(&msg(b'S', b"")).is_ok());
        // Incomplete: not judged yet.
        assert!(check(&msg(b'P', b"s\0SELECT 1\0\0\x01")[..8]).is_ok());
        for bad in [
            msg(b'P', b"s\0SELECT 1\0\0\x05\0\0\0\x17"), // 5 types, 1 sent
            msg(b'P', b"s\0SELECT 1"),                   // no terminator
            msg(b'B', b"\0s\0\0\0\0\x01\0\0\0\x09x\0\0"), // value shorter than its length
            msg(b'B', b"\0s\0\0\0\0\x01\xff\xff\xff\xfe\0\0"), // length -2
            msg(b'B', b"\0s\0\xff\xff"),                 // negative count
            msg(b'D', b"Xname\0"),
            msg(b'S', b"junk"),
            vec![b'Q', 0, 0, 0, 2, 0],
        ] {
            assert!(check(&bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn large_partial_messages_reserve_from_the_budget_until_complete() {
        let before = RESERVED.load(Relaxed);
        let mut r = Reservation::default();
        let mut head = vec![b'Q'];
        head.extend_from_slice(&(8i32 << 20).to_be_bytes());
        r.track(&head).unwrap();
        assert_eq!(RESERVED.load(Relaxed) - before, (8 << 20) + 1);
        r.track(&head).unwrap(); // once per message
        assert_eq!(RESERVED.load(Relaxed) - before, (8 << 20) + 1);
        // A message larger than the whole budget is refused.
        let mut huge = Reservation::default();
        let mut h = vec![b'Q'];
        h.extend_from_slice(&i32::MAX.to_be_bytes());
        assert!(matches!(
            huge.track(&h),
            Err(FrontendError::OverBudget { .. })
        ));
        drop(r);
        assert_eq!(RESERVED.load(Relaxed), before);
    }
}
