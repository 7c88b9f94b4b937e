//! Reading the fields of a date, timestamp or timestamptz (PostgreSQL's
//! `DecodeDateTime`).

use super::fields::*;
use super::lex::{Field, FieldKind};
use super::words::{self, Special, Word};
use super::{DateOrder, DtErr, Parsed, What, ZoneSpec};

/// Decodes the fields of a date/time value. `now` gives the current
/// instant's local fields and offset, for `now`/`today`/... .
pub(super) fn decode_date_time(
    fields: &[Field],
    order: DateOrder,
    now: &dyn Fn() -> (Tm, i32),
) -> Result<Parsed, DtErr> {
    let mut cx = Ctx {
        tm: Tm::default(),
        is2digits: false,
        order,
    };
    let mut what = What::Value;
    let mut fmask = 0u32;
    let mut zone = None;
    let mut text_month = false;
    let mut bc = false;
    let mut julian = false;
    // 0: none, else the kind of the field a label promised (`t`, `j`).
    let mut ptype: Option<Word> = None;
    let mut meridian: Option<bool> = None;
    for (i, f) in fields.iter().enumerate() {
        let s = f.text.as_str();
        let tmask: u32 = match f.kind {
            FieldKind::Date => {
                if ptype == Some(Word::Julian) {
                    return Err(DtErr::BadFormat);
                } else if ptype.is_some() || fmask & (MONTH | DAY) == MONTH | DAY {
                    // After a date, a zone name (`america/new_york`).
                    if s.as_bytes()[0].is_ascii_digit() || ptype.is_some() {
                        return Err(DtErr::BadFormat);
                    }
                    zone = Some(ZoneSpec::Named(named_zone(s)?));
                    TZ
                } else {
                    decode_date(s, fmask, &mut cx)?
                }
            }
            FieldKind::Time => {
                if ptype.is_some() {
                    if ptype != Some(Word::IsoTime) {
                        return Err(DtErr::BadFormat);
                    }
                    ptype = None;
                }
                let m = decode_time(s, &mut cx.tm)?;
                if time_overflows(&cx.tm) {
                    return Err(DtErr::FieldOverflow);
                }
                m
            }
            FieldKind::Zone => {
                zone = Some(ZoneSpec::Offset(decode_zone(s)?));
                TZ
            }
            FieldKind::Number => {
                if let Some(p) = ptype.take() {
                    let (value, rest) = leading_int(s)?;
                    if !rest.is_empty() && !rest.starts_with('.') {
                        return Err(DtErr::BadFormat);
                    }
                    match p {
                        Word::Julian => {
                            julian = true;
                            let (y, m, d) =
                                super::super::civil_from_days(value - super::UNIX_JULIAN);
                            cx.tm.year = y;
                            cx.tm.mon = m as i64;
                            cx.tm.mday = d as i64;
                            let mut m = DATE_M;
                            if !rest.is_empty() {
                                let f = fraction(rest)? as f64 / US as f64;
                                let t = (f * 86_400.0 * US as f64).round() as i64;
                                cx.tm.hour = t / (3600 * US);
                                cx.tm.min = t / (60 * US) % 60;
                                cx.tm.sec = t / US % 60;
                                cx.tm.fsec = t % US;
                                m |= TIME_M;
                            }
                            m
                        }
                        Word::IsoTime => {
                            let (m, _) = decode_number_field(s, fmask | DATE_M, &mut cx)?;
                            if m != TIME_M {
                                return Err(DtErr::BadFormat);
                            }
                            m
                        }
                        _ => return Err(DtErr::BadFormat),
                    }
                } else {
                    let flen = s.len();
                    match s.find('.') {
                        Some(_) if fmask & DATE_M == 0 => decode_date(s, fmask, &mut cx)?,
                        Some(dot) if dot > 2 => decode_number_field(s, fmask, &mut cx)?.0,
                        _ if flen >= 6 && (fmask & DATE_M == 0 || fmask & TIME_M == 0) => {
                            decode_number_field(s, fmask, &mut cx)?.0
                        }
                        _ => decode_number(s, text_month, fmask, &mut cx)?,
                    }
                }
            }
            FieldKind::Word | FieldKind::Special => {
                let w = match words::lookup(s) {
                    Some(w) => w,
                    None => {
                        // Any other word may be a zone name (`japan`).
                        if f.kind == FieldKind::Special {
                            return Err(DtErr::BadFormat);
                        }
                        // (unknown, it is bad text, not an unknown zone)
                        let z = named_zone(s).map_err(|_| DtErr::BadFormat)?;
                        zone = Some(ZoneSpec::Named(z));
                        fmask = add(fmask, TZ)?;
                        continue;
                    }
                };
                match w {
                    Word::Special(sp) => {
                        match sp {
                            Special::Now => {
                                let (t, off) = now();
                                cx.tm = t;
                                zone = Some(ZoneSpec::Offset(off));
                                fmask = add(fmask, DATE_M | TIME_M | TZ)?;
                                continue;
                            }
                            Special::Today | Special::Tomorrow | Special::Yesterday => {
                                let (t, _) = now();
                                let delta = match sp {
                                    Special::Tomorrow => 1,
                                    Special::Yesterday => -1,
                                    _ => 0,
                                };
                                let d = super::super::days_from_civil(
                                    t.year,
                                    t.mon as u32,
                                    t.mday as u32,
                                ) + delta;
                                let (y, m, dd) = super::super::civil_from_days(d);
                                cx.tm.year = y;
                                cx.tm.mon = m as i64;
                                cx.tm.mday = dd as i64;
                                // A date from the clock is already a full year.
                                julian = true;
                                fmask = add(fmask, DATE_M)?;
                                continue;
                            }
                            Special::Allballs => {
                                cx.tm.hour = 0;
                                cx.tm.min = 0;
                                cx.tm.sec = 0;
                                cx.tm.fsec = 0;
                                zone = Some(ZoneSpec::Offset(0));
                                fmask = add(fmask, TIME_M | TZ)?;
                                continue;
                            }
                            Special::Epoch => what = What::Epoch,
                            Special::Infinity => what = What::Late,
                            Special::MinusInfinity => what = What::Early,
                        }
                        RESERV
                    }
                    Word::Month(m) => {
                        // `8 january 1999` in MDY order: the number read
                        // as a month was the day.
                        let mut t = MONTH;
                        if fmask & MONTH != 0
                            && !text_month
                            && fmask & DAY == 0
                            && (1..=31).contains(&cx.tm.mon)
                        {
                            cx.tm.mday = cx.tm.mon;
                            t = DAY;
                        }
                        text_month = true;
                        cx.tm.mon = m;
                        t
                    }
                    Word::Weekday => DOW,
                    Word::Zone(off) => {
                        zone = Some(ZoneSpec::Offset(off));
                        TZ
                    }
                    Word::DynZone(name) => {
                        let z = named_zone(name)?;
                        zone = Some(ZoneSpec::Abbrev(z, s.to_ascii_uppercase()));
                        TZ
                    }
                    Word::Am | Word::Pm => {
                        meridian = Some(w == Word::Pm);
                        AMPM
                    }
                    Word::Ad | Word::Bc => {
                        bc = w == Word::Bc;
                        ADBC
                    }
                    Word::IsoTime => {
                        // `t` must follow a date and precede a time.
                        if fmask & DATE_M != DATE_M {
                            return Err(DtErr::BadFormat);
                        }
                        match fields.get(i + 1).map(|f| f.kind) {
                            Some(FieldKind::Number | FieldKind::Time | FieldKind::Date) => {}
                            _ => return Err(DtErr::BadFormat),
                        }
                        ptype = Some(w);
                        0
                    }
                    Word::Julian => {
                        if ptype.is_some() {
                            return Err(DtErr::BadFormat);
                        }
                        ptype = Some(w);
                        0
                    }
                    Word::Ignore => continue,
                }
            }
        };
        fmask = add(fmask, tmask)?;
    }
    if ptype.is_some() {
        return Err(DtErr::BadFormat);
    }
    validate_date(fmask, julian, cx.is2digits, bc, &mut cx.tm)?;
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
    if what == What::Value && fmask & DATE_M != DATE_M {
        return Err(DtErr::BadFormat);
    }
    Ok(Parsed {
        what,
        tm: cx.tm,
        zone,
    })
}

/// Adds a field's mask, refusing a field given twice.
pub(super) fn add(fmask: u32, tmask: u32) -> Result<u32, DtErr> {
    if fmask & tmask != 0 {
        return Err(DtErr::BadFormat);
    }
    Ok(fmask | tmask)
}

/// A zone name from the time zone database (case-insensitive).
pub(super) fn named_zone(s: &str) -> Result<super::super::zone::Zone, DtErr> {
    super::super::zone::Zone::named(s).ok_or_else(|| DtErr::UnknownZone(s.to_string()))
}
