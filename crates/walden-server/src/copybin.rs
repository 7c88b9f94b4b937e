//! PostgreSQL's binary COPY format, both directions: an 11-byte signature,
//! a 32-bit flags word, a header extension (length, then that many bytes,
//! skipped), then per row a 16-bit field count and per field a 32-bit
//! length (-1 for NULL) and the value in its binary send/recv form (the
//! extended protocol's, `pgtypes.rs`); a field count of -1 ends the data.
//!
//! The decoder stands alone (no session, no socket) so it can be fuzzed:
//! `fuzz/fuzz_targets/copy_binary.rs`.

use crate::pgtypes;
use bytes::{BufMut, BytesMut};
use walden_engine::{DataType, Value};
use walden_sql::{ErrorKind, SqlError};

/// `PGCOPY\n\377\r\n\0`.
pub const SIGNATURE: &[u8; 11] = b"PGCOPY\n\xff\r\n\0";

fn bad(message: impl Into<String>) -> SqlError {
    SqlError::new(ErrorKind::BadCopyFormat, message)
}

fn bad_value() -> SqlError {
    SqlError::new(ErrorKind::BadBinaryValue, "incorrect binary data format")
}

/// Appends the header (signature, no flags, an empty extension).
pub fn encode_header(buf: &mut BytesMut) {
    buf.put_slice(SIGNATURE);
    buf.put_i32(0);
    buf.put_i32(0);
}

/// Appends one row: its field count, then each field.
pub fn encode_row(row: &[Value], types: &[DataType], buf: &mut BytesMut) -> Result<(), String> {
    buf.put_i16(row.len() as i16);
    for (i, v) in row.iter().enumerate() {
        let ty = types.get(i).unwrap_or(&DataType::Text);
        pgtypes::encode_field(v, ty, true, buf)?;
    }
    Ok(())
}

/// Appends the trailer.
pub fn encode_trailer(buf: &mut BytesMut) {
    buf.put_i16(-1);
}

/// The bytes a fixed-size type's binary form has (PostgreSQL's recv
/// functions refuse any other length).
fn fixed_len(t: &DataType) -> Option<usize> {
    Some(match t {
        DataType::Bool => 1,
        DataType::SmallInt => 2,
        DataType::Int | DataType::Oid | DataType::Real | DataType::Date => 4,
        DataType::BigInt
        | DataType::Double
        | DataType::Timestamp
        | DataType::TimestampTz
        | DataType::Time => 8,
        DataType::Interval | DataType::Uuid => 16,
        _ => return None,
    })
}

/// Reads binary COPY data for columns of `types`, one row at a time.
pub struct Decoder<'a> {
    data: &'a [u8],
    at: usize,
    types: &'a [DataType],
    oids: Vec<u32>,
    done: bool,
}

impl<'a> Decoder<'a> {
    /// Checks the header; the rows follow through the iterator.
    pub fn new(data: &'a [u8], types: &'a [DataType]) -> Result<Decoder<'a>, SqlError> {
        let mut d = Decoder {
            data,
            at: 0,
            types,
            oids: types.iter().map(pgtypes::type_oid).collect(),
            done: false,
        };
        if d.bytes(SIGNATURE.len()) != Some(&SIGNATURE[..]) {
            return Err(bad("COPY file signature not recognized"));
        }
        let flags = d
            .i32()
            .ok_or_else(|| bad("invalid COPY file header (missing flags)"))?;
        if flags & (1 << 16) != 0 {
            return Err(bad("invalid COPY file header (WITH OIDS)"));
        }
        // Bits 16-31 are critical (a flag this reader does not know changes
        // the format); bits 0-15 may be ignored.
        if (flags & !(1 << 16)) >> 16 != 0 {
            return Err(bad("unrecognized critical flags in COPY file header"));
        }
        let ext = d
            .i32()
            .ok_or_else(|| bad("invalid COPY file header (missing length)"))?;
        if ext < 0 || d.bytes(ext as usize).is_none() {
            return Err(bad("invalid COPY file header (wrong length)"));
        }
        Ok(d)
    }

    /// Rows without the header (checked already).
    fn body(data: &'a [u8], types: &'a [DataType]) -> Decoder<'a> {
        Decoder {
            data,
            at: 0,
            types,
            oids: types.iter().map(pgtypes::type_oid).collect(),
            done: false,
        }
    }

    fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.at.checked_add(n)?;
        let s = self.data.get(self.at..end)?;
        self.at = end;
        Some(s)
    }

    fn i16(&mut self) -> Option<i16> {
        self.bytes(2).map(|b| i16::from_be_bytes([b[0], b[1]]))
    }

    fn i32(&mut self) -> Option<i32> {
        self.bytes(4)
            .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn row(&mut self) -> Result<Option<Vec<Value>>, SqlError> {
        if self.at == self.data.len() {
            // No trailer: PostgreSQL ends at the end of the data too.
            return Ok(None);
        }
        let n = self
            .i16()
            .ok_or_else(|| bad("unexpected EOF in COPY data"))?;
        if n == -1 {
            if self.at < self.data.len() {
                return Err(bad("received copy data after EOF marker"));
            }
            return Ok(None);
        }
        if n as usize != self.types.len() || n < 0 {
            return Err(bad(format!(
                "row field count is {n}, expected {}",
                self.types.len()
            )));
        }
        let mut row = Vec::with_capacity(self.types.len());
        for i in 0..self.types.len() {
            let len = self
                .i32()
                .ok_or_else(|| bad("unexpected EOF in COPY data"))?;
            if len == -1 {
                row.push(Value::Null);
                continue;
            }
            if len < 0 {
                return Err(bad("invalid field size"));
            }
            let bytes = self
                .bytes(len as usize)
                .ok_or_else(|| bad("unexpected EOF in COPY data"))?;
            if fixed_len(&self.types[i]).is_some_and(|l| l != bytes.len()) {
                return Err(bad_value());
            }
            row.push(pgtypes::decode_binary_param(bytes, self.oids[i])?);
        }
        Ok(Some(row))
    }
}

impl Iterator for Decoder<'_> {
    type Item = Result<Vec<Value>, SqlError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.row() {
            Ok(Some(r)) => Some(Ok(r)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

/// Binary COPY data arriving in pieces: the header is checked once whole,
/// then each row is decoded once all its bytes are in, the bytes of a row
/// not yet complete staying with the caller.
pub struct Stream<'a> {
    types: &'a [DataType],
    header: bool,
    /// The trailer (field count -1) was read.
    ended: bool,
}

impl<'a> Stream<'a> {
    pub fn new(types: &'a [DataType]) -> Stream<'a> {
        Stream {
            types,
            header: false,
            ended: false,
        }
    }

    /// Takes the whole rows (each decoded, or the error that stopped the
    /// decoding) from the front of `data`; `last` when no more data comes.
    pub fn take_rows(
        &mut self,
        data: &mut Vec<u8>,
        last: bool,
    ) -> Vec<Result<Vec<Value>, SqlError>> {
        if self.ended {
            if data.is_empty() {
                return Vec::new();
            }
            return vec![Err(bad("received copy data after EOF marker"))];
        }
        let mut at = 0;
        if !self.header {
            match header_len(data) {
                Some(h) => {
                    if let Err(e) = Decoder::new(&data[..h], self.types) {
                        return vec![Err(e)];
                    }
                    at = h;
                    self.header = true;
                }
                None if last => {
                    return match Decoder::new(data, self.types) {
                        Err(e) => vec![Err(e)],
                        Ok(_) => Vec::new(),
                    };
                }
                None => return Vec::new(),
            }
        }
        let end = if last {
            data.len()
        } else {
            let (whole, trailer) = whole_rows(&data[at..], self.types.len());
            self.ended = trailer;
            at + whole
        };
        let rows: Vec<_> = Decoder::body(&data[at..end], self.types).collect();
        if last || rows.last().is_some_and(|r| r.is_err()) {
            self.ended = true;
        }
        data.drain(..end);
        rows
    }
}

/// The header's length, once all of it is in `data`.
fn header_len(data: &[u8]) -> Option<usize> {
    let fixed = SIGNATURE.len() + 8;
    let ext = data.get(fixed - 4..fixed)?;
    let ext = i32::from_be_bytes([ext[0], ext[1], ext[2], ext[3]]);
    let len = fixed.checked_add(usize::try_from(ext).unwrap_or(0))?;
    (data.len() >= len).then_some(len)
}

/// How many bytes at the front of `data` hold whole rows (a malformed row
/// counts as whole: decoding it reports the error), and whether the
/// trailer ends them.
fn whole_rows(data: &[u8], width: usize) -> (usize, bool) {
    let i16_at = |i: usize| data.get(i..i + 2).map(|b| i16::from_be_bytes([b[0], b[1]]));
    let i32_at = |i: usize| {
        data.get(i..i + 4)
            .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    };
    let mut at = 0;
    'rows: loop {
        let Some(n) = i16_at(at) else {
            return (at, false);
        };
        if n == -1 {
            return (at + 2, true);
        }
        if n < 0 || n as usize != width {
            return (data.len(), false);
        }
        let mut i = at + 2;
        for _ in 0..width {
            let Some(len) = i32_at(i) else {
                break 'rows;
            };
            i += 4;
            if len < -1 {
                return (data.len(), false);
            }
            if len > 0 {
                i += len as usize;
            }
        }
        if i > data.len() {
            break;
        }
        at = i;
    }
    (at, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(rows: &[Vec<Value>], types: &[DataType]) -> Vec<u8> {
        let mut b = BytesMut::new();
        encode_header(&mut b);
        for r in rows {
            encode_row(r, types, &mut b).unwrap();
        }
        encode_trailer(&mut b);
        b.to_vec()
    }

    #[test]
    fn rows_round_trip() {
        let types = [
            DataType::Int,
            DataType::Text,
            DataType::Double,
            DataType::Bool,
        ];
        let rows = vec![
            vec![
                Value::Int(1),
                Value::text("a"),
                Value::Float(1.5),
                Value::Bool(true),
            ],
            vec![
                Value::Int(-7),
                Value::Null,
                Value::Float(-0.25),
                Value::Null,
            ],
        ];
        let data = encoded(&rows, &types);
        let back: Vec<_> = Decoder::new(&data, &types)
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(back, rows);
    }

    #[test]
    fn malformed_data_is_refused_with_postgres_messages() {
        let types = [DataType::Int];
        let good = encoded(&[vec![Value::Int(5)]], &types);
        let first_err = |data: &[u8]| -> String {
            match Decoder::new(data, &types) {
                Err(e) => e.message,
                Ok(mut d) => d
                    .find_map(|r| r.err())
                    .map(|e| e.message)
                    .unwrap_or_default(),
            }
        };
        assert_eq!(first_err(b"PGCOPY\n"), "COPY file signature not recognized");
        assert_eq!(
            first_err(&good[..13]),
            "invalid COPY file header (missing flags)"
        );
        let mut oids = good.clone();
        oids[12] = 1;
        assert_eq!(first_err(&oids), "invalid COPY file header (WITH OIDS)");
        assert_eq!(
            first_err(&good[..good.len() - 3]),
            "unexpected EOF in COPY data"
        );
        let mut extra = good.clone();
        extra.push(0);
        assert_eq!(first_err(&extra), "received copy data after EOF marker");
        // Two fields where the table takes one.
        let mut two = good[..19].to_vec();
        two.extend_from_slice(&[0, 2]);
        assert_eq!(first_err(&two), "row field count is 2, expected 1");
        // An int4 of 3 bytes.
        let mut short = good[..19].to_vec();
        short.extend_from_slice(&[0, 1, 0, 0, 0, 3, 1, 2, 3, 0xff, 0xff]);
        assert_eq!(first_err(&short), "incorrect binary data format");
        // Without the trailer the data simply ends.
        assert_eq!(
            Decoder::new(&good[..good.len() - 2], &types)
                .unwrap()
                .count(),
            1
        );
    }
}
