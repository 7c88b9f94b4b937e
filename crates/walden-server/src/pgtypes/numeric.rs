//! numeric's binary wire format: PostgreSQL's base-10000 digits, weight,
//! sign word and display scale, read and written.

use super::*;

/// Checks a numeric's binary form (digit count, weight, sign, display
/// scale, base-10000 digits) before it is read: digits PostgreSQL
/// refuses, and a weight past numeric's range (the copy_binary fuzz
/// target sends such).
pub(super) fn check_numeric_recv(b: &[u8]) -> Result<(), SqlError> {
    let word = |i: usize| b.get(i..i + 2).map(|w| u16::from_be_bytes([w[0], w[1]]));
    let (Some(ndigits), Some(weight), Some(sign), Some(_dscale)) =
        (word(0), word(2), word(4), word(6))
    else {
        return Err(bad_binary("numeric"));
    };
    if b.len() != 8 + 2 * ndigits as usize {
        return Err(bad_binary("numeric"));
    }
    if !matches!(sign, 0 | 0x4000 | 0xC000 | 0xD000 | 0xF000) {
        return Err(SqlError::new(
            ErrorKind::BadBinaryValue,
            "invalid sign in external \"numeric\" value",
        ));
    }
    if (0..ndigits as usize).any(|i| word(8 + 2 * i).is_none_or(|d| d > 9999)) {
        return Err(SqlError::new(
            ErrorKind::BadBinaryValue,
            "invalid digit in external \"numeric\" value",
        ));
    }
    // numeric's range: 131072 digits before the point (32768 groups).
    if ndigits > 0 && weight as i16 == i16::MAX {
        return Err(SqlError::new(
            ErrorKind::NumericOutOfRange,
            "value overflows numeric format",
        ));
    }
    Ok(())
}

/// A numeric's binary form as PostgreSQL's numeric_send writes it:
/// base-10000 digits without leading or trailing zero groups, the weight
/// of the first, and the display scale (zero is no digits, weight 0, and
/// its scale: `0.00` keeps its two places); NaN and ±Infinity as their
/// sign words alone.
pub(super) fn numeric_send(d: &Numeric, buf: &mut BytesMut) {
    // The display scale PostgreSQL 15 sends with each (its dscale bits
    // of the special value's header: 32 for the infinities).
    let special = match d {
        Numeric::NaN => Some((0xC000, 0)),
        Numeric::PosInf => Some((0xD000, 32)),
        Numeric::NegInf => Some((0xF000, 32)),
        _ => None,
    };
    if let Some((sign, dscale)) = special {
        buf.put_u16(0);
        buf.put_i16(0);
        buf.put_u16(sign);
        buf.put_u16(dscale);
        return;
    }
    let text = d.abs().to_string();
    let (int, frac) = text.split_once('.').unwrap_or((&text, ""));
    let int = int.trim_start_matches('0');
    let pad_int = format!("{}{int}", "0".repeat((4 - int.len() % 4) % 4));
    let pad_frac = format!("{frac}{}", "0".repeat((4 - frac.len() % 4) % 4));
    let group = |s: &str| s.parse::<u16>().unwrap_or(0);
    let mut digits: Vec<u16> = pad_int
        .as_bytes()
        .chunks(4)
        .chain(pad_frac.as_bytes().chunks(4))
        .map(|c| group(std::str::from_utf8(c).unwrap_or("0")))
        .collect();
    let mut weight = (pad_int.len() / 4) as i16 - 1;
    let lead = digits.iter().take_while(|g| **g == 0).count();
    digits.drain(..lead);
    weight -= lead as i16;
    while digits.last() == Some(&0) {
        digits.pop();
    }
    let (weight, sign) = if digits.is_empty() {
        (0, 0)
    } else {
        (weight, if d.is_negative() { 0x4000 } else { 0 })
    };
    buf.put_u16(digits.len() as u16);
    buf.put_i16(weight);
    buf.put_u16(sign);
    buf.put_u16(frac.len() as u16);
    for g in digits {
        buf.put_u16(g);
    }
}

/// A numeric's binary form (checked by `check_numeric_recv`) read
/// exactly: digits past its display scale dropped, as PostgreSQL's
/// numeric_recv truncates them, and the display scale kept.
pub(super) fn numeric_recv(b: &[u8]) -> Result<Numeric, SqlError> {
    let word = |i: usize| u16::from_be_bytes([b[i], b[i + 1]]);
    let (ndigits, weight, sign, dscale) = (word(0) as i32, word(2) as i16 as i32, word(4), word(6));
    match sign {
        0xC000 => return Ok(Numeric::NaN),
        0xD000 => return Ok(Numeric::PosInf),
        0xF000 => return Ok(Numeric::NegInf),
        _ => {}
    }
    if dscale > 0x3FFF {
        return Err(SqlError::new(
            ErrorKind::BadBinaryValue,
            "invalid scale in external \"numeric\" value",
        ));
    }
    // The base-10000 digit of weight k (zero outside the stored ones).
    let digit = |k: i32| {
        let i = weight - k;
        if (0..ndigits).contains(&i) {
            word(8 + 2 * i as usize)
        } else {
            0
        }
    };
    let mut text = String::new();
    if sign == 0x4000 {
        text.push('-');
    }
    let mut int = String::new();
    for k in (0..=weight).rev() {
        int.push_str(&format!("{:04}", digit(k)));
    }
    let int = int.trim_start_matches('0');
    text.push_str(if int.is_empty() { "0" } else { int });
    if dscale > 0 {
        text.push('.');
        let mut frac = String::new();
        for k in 1..=(dscale as i32 + 3) / 4 {
            frac.push_str(&format!("{:04}", digit(-k)));
        }
        frac.truncate(dscale as usize);
        text.push_str(&frac);
    }
    // (A negative zero, or one truncated to zero, reads as zero.)
    walden_engine::types::parse_numeric(&text)?.ok_or_else(|| bad_binary("numeric"))
}
