//! PostgreSQL's binary string functions (`encode`, `decode`, the SHA-2
//! digests, `get_bit`/`set_bit`/`get_byte`/`set_byte`, `bit_count`) and the
//! text ones that work character by character (`translate`, `to_hex`,
//! `unistr`, `overlay`), with PostgreSQL 15's errors.

use super::*;
use base64::Engine as _;
use sha2::Digest as _;

/// Which of the functions (`Func::BinaryStr`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryStrFn {
    Encode,
    Decode,
    Sha224,
    Sha256,
    Sha384,
    Sha512,
    GetBit,
    SetBit,
    GetByte,
    SetByte,
    BitCount,
    Translate,
    /// `to_hex` of an int4 (negative numbers in 32-bit two's complement).
    ToHex32,
    /// `to_hex` of an int8.
    ToHex64,
    Unistr,
    /// `overlay(s placing r from start [for count])` of text.
    Overlay,
    /// The same of bytea.
    OverlayBytes,
}

impl BinaryStrFn {
    pub fn by_name(name: &str) -> Option<BinaryStrFn> {
        use BinaryStrFn as B;
        Some(match name {
            "encode" => B::Encode,
            "decode" => B::Decode,
            "sha224" => B::Sha224,
            "sha256" => B::Sha256,
            "sha384" => B::Sha384,
            "sha512" => B::Sha512,
            "get_bit" => B::GetBit,
            "set_bit" => B::SetBit,
            "get_byte" => B::GetByte,
            "set_byte" => B::SetByte,
            "bit_count" => B::BitCount,
            "translate" => B::Translate,
            "to_hex" => B::ToHex32,
            "unistr" => B::Unistr,
            "overlay" => B::Overlay,
            _ => return None,
        })
    }

    /// How many arguments a call takes.
    pub fn arity(self) -> std::ops::RangeInclusive<usize> {
        use BinaryStrFn as B;
        match self {
            B::Sha224 | B::Sha256 | B::Sha384 | B::Sha512 | B::BitCount | B::Unistr => 1..=1,
            B::ToHex32 | B::ToHex64 => 1..=1,
            B::Encode | B::Decode | B::GetBit | B::GetByte => 2..=2,
            B::SetBit | B::SetByte | B::Translate => 3..=3,
            B::Overlay | B::OverlayBytes => 3..=4,
        }
    }

    pub fn result_type(self) -> DataType {
        use BinaryStrFn as B;
        match self {
            B::Decode
            | B::Sha224
            | B::Sha256
            | B::Sha384
            | B::Sha512
            | B::SetBit
            | B::SetByte
            | B::OverlayBytes => DataType::Bytes,
            B::GetBit | B::GetByte => DataType::Int,
            B::BitCount => DataType::BigInt,
            B::Encode | B::Translate | B::ToHex32 | B::ToHex64 | B::Unistr | B::Overlay => {
                DataType::Text
            }
        }
    }
}

fn bytes(v: &Value) -> Result<Arc<[u8]>> {
    match v {
        Value::Bytes(b) => Ok(b.clone()),
        other => match cast(other.clone(), &DataType::Bytes)? {
            Value::Bytes(b) => Ok(b),
            _ => Err(SqlError::internal("bytea argument")),
        },
    }
}

fn invalid(msg: String) -> SqlError {
    SqlError::new(ErrorKind::InvalidParameter, msg)
}

fn out_of_range(index: i64, len: i64) -> SqlError {
    SqlError::new(
        ErrorKind::ArraySubscript,
        format!("index {index} out of valid range, 0..{}", len - 1),
    )
}

/// Calls one of the functions; all are strict.
pub(super) fn call(f: BinaryStrFn, a: &[Value]) -> Result<Value> {
    use BinaryStrFn as B;
    if a.iter().any(Value::is_null) {
        return Ok(Value::Null);
    }
    let int = |i: usize, what: &str| int_arg(&a[i], what);
    Ok(match f {
        B::Encode => Value::text(encode(&bytes(&a[0])?, &text_arg(&a[1]))?),
        B::Decode => Value::Bytes(decode(&text_arg(&a[0]), &text_arg(&a[1]))?.into()),
        B::Sha224 => Value::Bytes(sha2::Sha224::digest(&bytes(&a[0])?[..]).to_vec().into()),
        B::Sha256 => Value::Bytes(sha2::Sha256::digest(&bytes(&a[0])?[..]).to_vec().into()),
        B::Sha384 => Value::Bytes(sha2::Sha384::digest(&bytes(&a[0])?[..]).to_vec().into()),
        B::Sha512 => Value::Bytes(sha2::Sha512::digest(&bytes(&a[0])?[..]).to_vec().into()),
        B::BitCount => Value::Int(
            bytes(&a[0])?
                .iter()
                .map(|b| i64::from(b.count_ones()))
                .sum(),
        ),
        B::GetBit | B::SetBit => {
            let b = bytes(&a[0])?;
            let n = int(1, "get_bit")?;
            let bits = b.len() as i64 * 8;
            if n < 0 || n >= bits {
                return Err(out_of_range(n, bits));
            }
            let (byte, bit) = ((n / 8) as usize, n % 8);
            if f == B::GetBit {
                Value::Int(i64::from((b[byte] >> bit) & 1))
            } else {
                let new = int(2, "set_bit")?;
                if new != 0 && new != 1 {
                    return Err(invalid("new bit must be 0 or 1".into()));
                }
                let mut v = b.to_vec();
                v[byte] = (v[byte] & !(1 << bit)) | ((new as u8) << bit);
                Value::Bytes(v.into())
            }
        }
        B::GetByte | B::SetByte => {
            let b = bytes(&a[0])?;
            let n = int(1, "get_byte")?;
            if n < 0 || n >= b.len() as i64 {
                return Err(out_of_range(n, b.len() as i64));
            }
            if f == B::GetByte {
                Value::Int(i64::from(b[n as usize]))
            } else {
                let mut v = b.to_vec();
                v[n as usize] = int(2, "set_byte")? as u8;
                Value::Bytes(v.into())
            }
        }
        B::Translate => Value::text(translate(
            &text_arg(&a[0]),
            &text_arg(&a[1]),
            &text_arg(&a[2]),
        )),
        B::ToHex32 => Value::text(format!("{:x}", int(0, "to_hex")? as i32)),
        B::ToHex64 => Value::text(format!("{:x}", int(0, "to_hex")?)),
        B::Unistr => Value::text(unistr(&text_arg(&a[0]))?),
        B::Overlay => {
            let s: Vec<char> = text_arg(&a[0]).chars().collect();
            let r: Vec<char> = text_arg(&a[1]).chars().collect();
            let count = match a.get(3) {
                Some(v) => int_arg(v, "overlay")?,
                None => r.len() as i64,
            };
            let out = overlay(&s, &r, int(2, "overlay")?, count)?;
            Value::text(out.into_iter().collect::<String>())
        }
        B::OverlayBytes => {
            let s = bytes(&a[0])?;
            let r = bytes(&a[1])?;
            let count = match a.get(3) {
                Some(v) => int_arg(v, "overlay")?,
                None => r.len() as i64,
            };
            Value::Bytes(overlay(&s, &r, int(2, "overlay")?, count)?.into())
        }
    })
}

/// `overlay`: the part of `s` before `start`, `r`, then `s` from
/// `start + count` (positions from 1).
fn overlay<T: Clone>(s: &[T], r: &[T], start: i64, count: i64) -> Result<Vec<T>> {
    if start < 1 || count < 0 {
        return Err(SqlError::new(
            ErrorKind::SubstringError,
            "negative substring length not allowed",
        ));
    }
    let head = ((start - 1) as usize).min(s.len());
    let tail = (start.saturating_add(count) - 1).clamp(0, s.len() as i64) as usize;
    let mut out = s[..head].to_vec();
    out.extend_from_slice(r);
    out.extend_from_slice(&s[tail.max(head)..]);
    Ok(out)
}

fn translate(s: &str, from: &str, to: &str) -> String {
    let from: Vec<char> = from.chars().collect();
    let to: Vec<char> = to.chars().collect();
    s.chars()
        .filter_map(|c| match from.iter().position(|f| *f == c) {
            Some(i) => to.get(i).copied(),
            None => Some(c),
        })
        .collect()
}

fn encode(b: &[u8], format: &str) -> Result<String> {
    Ok(match format.to_ascii_lowercase().as_str() {
        "hex" => b.iter().map(|x| format!("{x:02x}")).collect(),
        "base64" => {
            let flat = base64::engine::general_purpose::STANDARD.encode(b);
            // PostgreSQL breaks the text into lines of 76 characters.
            let mut out = String::with_capacity(flat.len() + flat.len() / 76);
            for (i, c) in flat.chars().enumerate() {
                if i > 0 && i % 76 == 0 {
                    out.push('\n');
                }
                out.push(c);
            }
            out
        }
        "escape" => {
            let mut out = String::new();
            for &x in b {
                if x == 0 || x >= 0x80 {
                    out.push_str(&format!("\\{x:03o}"));
                } else if x == b'\\' {
                    out.push_str("\\\\");
                } else {
                    out.push(x as char);
                }
            }
            out
        }
        _ => return Err(invalid(format!("unrecognized encoding: \"{format}\""))),
    })
}

fn decode(s: &str, format: &str) -> Result<Vec<u8>> {
    Ok(match format.to_ascii_lowercase().as_str() {
        "hex" => {
            let mut out = Vec::new();
            let mut digits = s.chars().filter(|c| !matches!(c, ' ' | '\n' | '\t' | '\r'));
            while let Some(h) = digits.next() {
                let hi = h
                    .to_digit(16)
                    .ok_or_else(|| invalid(format!("invalid hexadecimal digit: \"{h}\"")))?;
                let l = digits.next().ok_or_else(|| {
                    invalid("invalid hexadecimal data: odd number of digits".into())
                })?;
                let lo = l
                    .to_digit(16)
                    .ok_or_else(|| invalid(format!("invalid hexadecimal digit: \"{l}\"")))?;
                out.push((hi * 16 + lo) as u8);
            }
            out
        }
        "base64" => {
            let flat: String = s.chars().filter(|c| !c.is_ascii_whitespace()).collect();
            base64::engine::general_purpose::STANDARD
                .decode(flat)
                .map_err(|_| invalid("invalid base64 end sequence".into()))?
        }
        "escape" => {
            let b = s.as_bytes();
            let mut out = Vec::new();
            let mut i = 0;
            while i < b.len() {
                if b[i] != b'\\' {
                    out.push(b[i]);
                    i += 1;
                } else if b.get(i + 1) == Some(&b'\\') {
                    out.push(b'\\');
                    i += 2;
                } else if b.len() >= i + 4
                    && b[i + 1..i + 4].iter().all(|d| (b'0'..=b'7').contains(d))
                    && b[i + 1] <= b'3'
                {
                    let v = b[i + 1..i + 4]
                        .iter()
                        .fold(0u32, |acc, d| acc * 8 + u32::from(d - b'0'));
                    out.push(v as u8);
                    i += 4;
                } else {
                    return Err(SqlError::new(
                        ErrorKind::InvalidText,
                        "invalid input syntax for type bytea",
                    ));
                }
            }
            out
        }
        _ => return Err(invalid(format!("unrecognized encoding: \"{format}\""))),
    })
}

/// `unistr`: `\XXXX`, `\+XXXXXX`, `\uXXXX`, `\UXXXXXXXX` are code points
/// (a surrogate pair one character), `\\` a backslash.
fn unistr(s: &str) -> Result<String> {
    // PostgreSQL reports a malformed escape or surrogate pair as a
    // syntax error (42601), a code point past U+10FFFF as 22023.
    let bad = || SqlError::syntax("invalid Unicode escape");
    let bad_pair = || SqlError::syntax("invalid Unicode surrogate pair");
    let chars: Vec<char> = s.chars().collect();
    let hex = |from: usize, n: usize| -> Option<u32> {
        let part: String = chars.get(from..from + n)?.iter().collect();
        if part.chars().all(|c| c.is_ascii_hexdigit()) {
            u32::from_str_radix(&part, 16).ok()
        } else {
            None
        }
    };
    let mut out = String::new();
    let mut pending_high: Option<u32> = None;
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '\\' {
            if pending_high.is_some() {
                return Err(bad_pair());
            }
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let (cp, len) = match chars.get(i + 1) {
            Some('\\') if pending_high.is_none() => {
                out.push('\\');
                i += 2;
                continue;
            }
            Some('+') => (hex(i + 2, 6).ok_or_else(bad)?, 8),
            Some('u') => (hex(i + 2, 4).ok_or_else(bad)?, 6),
            Some('U') => (hex(i + 2, 8).ok_or_else(bad)?, 10),
            _ => (hex(i + 1, 4).ok_or_else(bad)?, 5),
        };
        i += len;
        if cp > 0x10FFFF {
            return Err(SqlError::new(
                ErrorKind::InvalidParameter,
                format!("invalid Unicode code point: {cp:04X}"),
            ));
        }
        match (pending_high.take(), cp) {
            (None, 0xD800..=0xDBFF) => pending_high = Some(cp),
            (Some(hi), 0xDC00..=0xDFFF) => {
                let c = 0x10000 + ((hi - 0xD800) << 10) + (cp - 0xDC00);
                out.push(char::from_u32(c).ok_or_else(bad)?);
            }
            (Some(_), _) | (None, 0xDC00..=0xDFFF) => return Err(bad_pair()),
            (None, c) => out.push(char::from_u32(c).ok_or_else(bad)?),
        }
    }
    if pending_high.is_some() {
        return Err(bad_pair());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Expected values are PostgreSQL 15's.
    #[test]
    fn encodings_round_trip_as_postgresql() {
        let b = [0x12, 0x34, 0x56, 0x78, 0x90, 0xab, 0xcd, 0xef, 0x00];
        assert_eq!(encode(&b, "hex").unwrap(), "1234567890abcdef00");
        assert_eq!(
            encode(&b, "escape").unwrap(),
            "\u{12}4Vx\\220\\253\\315\\357\\000"
        );
        assert_eq!(
            decode("\u{12}4Vx\\220\\253\\315\\357\\000", "escape").unwrap(),
            b
        );
        assert_eq!(decode("12 34", "hex").unwrap(), [0x12, 0x34]);
        assert!(decode("123", "hex").is_err());
        let long: Vec<u8> = b.iter().cycle().take(70).copied().collect();
        let e = encode(&long, "base64").unwrap();
        assert_eq!(e.lines().next().unwrap().len(), 76);
        assert_eq!(decode(&e, "base64").unwrap(), long);
        assert!(encode(&b, "rot13").is_err());
    }

    #[test]
    fn text_helpers() {
        assert_eq!(translate("12345", "14", "ax"), "a23x5");
        assert_eq!(translate("12345", "134", "a"), "a25");
        assert_eq!(unistr("\\0064at\\+0000610").unwrap(), "data0");
        assert_eq!(unistr("d\\u0061t\\U000000610").unwrap(), "data0");
        assert_eq!(unistr("a\\\\b").unwrap(), "a\\b");
        assert!(unistr("wrong: \\db99").is_err());
        assert!(unistr("wrong: \\+2FFFFF").is_err());
        let s: Vec<char> = "abcdef".chars().collect();
        let r: Vec<char> = "45".chars().collect();
        assert_eq!(
            overlay(&s, &r, 4, 2).unwrap().iter().collect::<String>(),
            "abc45f"
        );
        let s: Vec<char> = "yabadoo".chars().collect();
        let r: Vec<char> = "daba".chars().collect();
        assert_eq!(
            overlay(&s, &r, 5, 0).unwrap().iter().collect::<String>(),
            "yabadabadoo"
        );
    }
}
