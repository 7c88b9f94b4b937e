//! Reading the fields of a `time` (PostgreSQL's `DecodeTimeOnly`): a date
//! may come first and is read and dropped, a zone is read and dropped.

use super::decode::{add, named_zone};
use super::fields::*;
use super::lex::{Field, FieldKind};
use super::words::{self, Special, Word};
use super::{DateOrder, DtErr};

/// Decodes a time of day; returns its fields.
pub(super) fn decode_time_only(
    fields: &[Field],
    order: DateOrder,
    now: &dyn Fn() -> (Tm, i32),
) -> Result<Tm, DtErr> {
    let mut cx = Ctx {
        tm: Tm::default(),
        is2digits: false,
        order,
    };
    let mut fmask = 0u32;
    let mut bc = false;
    let mut text_month = false;
    let mut iso_t = false;
    let mut meridian: Option<bool> = None;
    let nf = fields.len();
    for (i, f) in fields.iter().enumerate() {
        let s = f.text.as_str();
        let tmask = match f.kind {
            FieldKind::Date => {
                let last_is_date = fields[nf - 1].kind == FieldKind::Date;
                let second_is_time = fields.get(1).is_some_and(|f| f.kind == FieldKind::Time);
                if i == 0 && nf >= 2 && (last_is_date || second_is_time) {
                    decode_date(s, fmask, &mut cx)?
                } else if s.as_bytes()[0].is_ascii_digit() {
                    // `040506-08`: a run-together time and a zone.
                    if fmask & TIME_M == TIME_M {
                        return Err(DtErr::BadFormat);
                    }
                    let dash = s.find('-').ok_or(DtErr::BadFormat)?;
                    decode_zone(&s[dash..])?;
                    let (m, _) = decode_number_field(&s[..dash], fmask | DATE_M, &mut cx)?;
                    m | TZ
                } else {
                    named_zone(s)?;
                    TZ
                }
            }
            FieldKind::Time => {
                iso_t = false;
                decode_time(s, &mut cx.tm)?
            }
            FieldKind::Zone => {
                decode_zone(s)?;
                TZ
            }
            FieldKind::Number => {
                iso_t = false;
                let flen = s.len();
                match s.find('.') {
                    Some(_) if i == 0 && nf >= 2 && fields[nf - 1].kind == FieldKind::Date => {
                        decode_date(s, fmask, &mut cx)?
                    }
                    Some(dot) if dot > 2 => decode_number_field(s, fmask | DATE_M, &mut cx)?.0,
                    Some(_) => return Err(DtErr::BadFormat),
                    None if flen > 4 => decode_number_field(s, fmask | DATE_M, &mut cx)?.0,
                    None => decode_number(s, text_month, fmask | DATE_M, &mut cx)?,
                }
            }
            FieldKind::Word | FieldKind::Special => {
                let Some(w) = words::lookup(s) else {
                    if f.kind == FieldKind::Special {
                        return Err(DtErr::BadFormat);
                    }
                    named_zone(s).map_err(|_| DtErr::BadFormat)?;
                    fmask = add(fmask, TZ)?;
                    continue;
                };
                match w {
                    Word::Special(Special::Now) => {
                        let (t, _) = now();
                        cx.tm.hour = t.hour;
                        cx.tm.min = t.min;
                        cx.tm.sec = t.sec;
                        cx.tm.fsec = t.fsec;
                        TIME_M
                    }
                    Word::Special(Special::Allballs) => {
                        cx.tm.hour = 0;
                        cx.tm.min = 0;
                        cx.tm.sec = 0;
                        cx.tm.fsec = 0;
                        TIME_M | TZ
                    }
                    Word::Special(_) | Word::Julian => return Err(DtErr::BadFormat),
                    Word::Month(m) => {
                        text_month = true;
                        cx.tm.mon = m;
                        MONTH
                    }
                    Word::Weekday => DOW,
                    Word::Zone(_) | Word::DynZone(_) => TZ,
                    Word::Am | Word::Pm => {
                        meridian = Some(w == Word::Pm);
                        AMPM
                    }
                    Word::Ad | Word::Bc => {
                        bc = w == Word::Bc;
                        ADBC
                    }
                    Word::IsoTime => {
                        match fields.get(i + 1).map(|f| f.kind) {
                            Some(FieldKind::Number | FieldKind::Time | FieldKind::Date) => {}
                            _ => return Err(DtErr::BadFormat),
                        }
                        iso_t = true;
                        0
                    }
                    Word::Ignore => continue,
                }
            }
        };
        fmask = add(fmask, tmask)?;
    }
    if iso_t {
        return Err(DtErr::BadFormat);
    }
    validate_date(fmask, false, cx.is2digits, bc, &mut cx.tm)?;
    let tm = &mut cx.tm;
    if let Some(pm) = meridian {
        if tm.hour > 12 {
            return Err(DtErr::FieldOverflow);
        }
        if !pm && tm.hour == 12 {
            tm.hour = 0;
        } else if pm && tm.hour != 12 {
            tm.hour += 12;
        }
    }
    if tm.min > 59
        || tm.sec > 60
        || tm.hour > 24
        || (tm.hour == 24 && (tm.min > 0 || tm.sec > 0 || tm.fsec > 0))
        || tm.fsec > US
        || ((tm.hour * 60 + tm.min) * 60 + tm.sec) * US + tm.fsec > 86_400 * US
    {
        return Err(DtErr::FieldOverflow);
    }
    if fmask & TIME_M != TIME_M {
        return Err(DtErr::BadFormat);
    }
    Ok(cx.tm)
}
