//! bytea input: the hex and escape forms PostgreSQL reads.

use crate::error::{EngineError, Result};

/// bytea input as PostgreSQL's byteain: `\x` then hex digit pairs
/// (whitespace between pairs), or the escape form, where `\\` is a
/// backslash, `\ooo` (first digit 0-3) a byte in octal and every other
/// character stands for its own bytes.
pub fn parse_bytea(s: &str) -> Result<Vec<u8>> {
    if let Some(h) = s.strip_prefix("\\x") {
        // Bytes, not string slices: a multi-byte character must be refused
        // as a bad digit, not split (slicing inside one panics).
        let h = h.as_bytes();
        let mut out = Vec::with_capacity(h.len() / 2);
        let mut i = 0;
        let digit = |i: usize| -> Result<u8> {
            let b = h[i];
            (b as char).to_digit(16).map(|d| d as u8).ok_or_else(|| {
                // The whole character, as PostgreSQL names it.
                let text = String::from_utf8_lossy(&h[i..]);
                EngineError::InvalidHex(format!(
                    "invalid hexadecimal digit: \"{}\"",
                    text.chars().next().unwrap_or(' ')
                ))
            })
        };
        while i < h.len() {
            if matches!(h[i], b' ' | b'\t' | b'\n' | b'\r') {
                i += 1;
                continue;
            }
            let hi = digit(i)?;
            if i + 1 >= h.len() {
                return Err(EngineError::InvalidHex(
                    "invalid hexadecimal data: odd number of digits".into(),
                ));
            }
            let lo = digit(i + 1)?;
            out.push(hi << 4 | lo);
            i += 2;
        }
        return Ok(out);
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            out.push(b[i]);
            i += 1;
            continue;
        }
        let oct = |k: usize, max: u8| b.get(i + k).filter(|c| (b'0'..=max).contains(c));
        match (oct(1, b'3'), oct(2, b'7'), oct(3, b'7')) {
            (Some(a), Some(m), Some(z)) => {
                out.push((a - b'0') << 6 | (m - b'0') << 3 | (z - b'0'));
                i += 4;
            }
            _ if b.get(i + 1) == Some(&b'\\') => {
                out.push(b'\\');
                i += 2;
            }
            _ => {
                return Err(EngineError::Data(
                    "invalid input syntax for type bytea".into(),
                ))
            }
        }
    }
    Ok(out)
}
