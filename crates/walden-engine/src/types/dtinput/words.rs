//! The words date/time input knows (PostgreSQL's `datetktbl` and the
//! default time zone abbreviations).

/// What a word means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Word {
    Month(i64),
    /// A day of the week: read and ignored.
    Weekday,
    Special(Special),
    /// A zone abbreviation, seconds east of UTC.
    Zone(i32),
    /// An abbreviation whose meaning changed over time (`MSK`): read as
    /// what the named zone meant by it at the time given.
    DynZone(&'static str),
    Am,
    Pm,
    Ad,
    Bc,
    /// `t`: the next field is an ISO time.
    IsoTime,
    /// `j`, `jd`, `julian`: the next field is a Julian day.
    Julian,
    /// `at`, `on`: filler.
    Ignore,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Special {
    Epoch,
    Infinity,
    MinusInfinity,
    Now,
    Today,
    Tomorrow,
    Yesterday,
    /// `allballs`: midnight UTC.
    Allballs,
}

const H: i32 = 3600;

/// Looks up a lower-case word.
pub(super) fn lookup(w: &str) -> Option<Word> {
    use Special as S;
    use Word as W;
    Some(match w {
        "jan" | "january" => W::Month(1),
        "feb" | "february" => W::Month(2),
        "mar" | "march" => W::Month(3),
        "apr" | "april" => W::Month(4),
        "may" => W::Month(5),
        "jun" | "june" => W::Month(6),
        "jul" | "july" => W::Month(7),
        "aug" | "august" => W::Month(8),
        "sep" | "sept" | "september" => W::Month(9),
        "oct" | "october" => W::Month(10),
        "nov" | "november" => W::Month(11),
        "dec" | "december" => W::Month(12),
        "sun" | "sunday" | "mon" | "monday" | "tue" | "tues" | "tuesday" | "wed" | "wednes"
        | "wednesday" | "thu" | "thur" | "thurs" | "thursday" | "fri" | "friday" | "sat"
        | "saturday" => W::Weekday,
        "epoch" => W::Special(S::Epoch),
        "infinity" => W::Special(S::Infinity),
        "-infinity" => W::Special(S::MinusInfinity),
        "now" => W::Special(S::Now),
        "today" => W::Special(S::Today),
        "tomorrow" => W::Special(S::Tomorrow),
        "yesterday" => W::Special(S::Yesterday),
        "allballs" => W::Special(S::Allballs),
        "am" | "a.m." => W::Am,
        "pm" | "p.m." => W::Pm,
        "ad" => W::Ad,
        "bc" => W::Bc,
        "t" => W::IsoTime,
        "j" | "jd" | "julian" => W::Julian,
        "at" | "on" => W::Ignore,
        _ => match dynamic_abbrev(w) {
            Some(zone) => W::DynZone(zone),
            None => W::Zone(zone_abbrev(w)?),
        },
    })
}

/// Whether a word is one of the core keywords (not a zone abbreviation):
/// such a word followed by digits is two fields (`j2451187`), anything
/// else followed by digits may be a zone name (`etc/gmt+8`, `est5edt`).
pub(super) fn is_keyword(w: &str) -> bool {
    !matches!(lookup(w), None | Some(Word::Zone(_) | Word::DynZone(_)))
}

/// The abbreviations PostgreSQL's default set defines by a zone rather
/// than an offset, and that zone.
pub(super) fn dynamic_abbrev(w: &str) -> Option<&'static str> {
    Some(match w {
        "art" | "arst" => "America/Argentina/Buenos_Aires",
        "clt" => "America/Santiago",
        "gyt" => "America/Guyana",
        "pyt" => "America/Asuncion",
        "vet" => "America/Caracas",
        "davt" => "Antarctica/Davis",
        "mawt" => "Antarctica/Mawson",
        "amst" => "Asia/Yerevan",
        "anast" | "anat" => "Asia/Anadyr",
        "azst" | "azt" => "Asia/Baku",
        "gest" | "get" => "Asia/Tbilisi",
        "irkst" | "irkt" => "Asia/Irkutsk",
        "kgt" => "Asia/Bishkek",
        "krast" | "krat" => "Asia/Krasnoyarsk",
        "lkt" => "Asia/Colombo",
        "magst" | "magt" => "Asia/Magadan",
        "novst" | "novt" => "Asia/Novosibirsk",
        "omsst" | "omst" => "Asia/Omsk",
        "petst" | "pett" => "Asia/Kamchatka",
        "sgt" => "Asia/Singapore",
        "tmt" => "Asia/Ashgabat",
        "ulat" => "Asia/Ulaanbaatar",
        "vlast" | "vlat" => "Asia/Vladivostok",
        "yakst" | "yakt" => "Asia/Yakutsk",
        "yekt" => "Asia/Yekaterinburg",
        "fkst" | "fkt" => "Atlantic/Stanley",
        "lhdt" => "Australia/Lord_Howe",
        "msk" => "Europe/Moscow",
        "volt" => "Europe/Volgograd",
        "iot" => "Indian/Chagos",
        "ckt" => "Pacific/Rarotonga",
        "easst" | "east" => "Pacific/Easter",
        "kost" => "Pacific/Kosrae",
        "lint" => "Pacific/Kiritimati",
        "nut" => "Pacific/Niue",
        "tkt" => "Pacific/Fakaofo",
        _ => return None,
    })
}

/// PostgreSQL's default abbreviations (the common ones), seconds east.
pub(super) fn zone_abbrev(w: &str) -> Option<i32> {
    Some(match w {
        "utc" | "ut" | "gmt" | "z" | "zulu" | "wet" => 0,
        "west" | "bst" | "cet" | "met" | "mez" => H,
        "cest" | "mest" | "eet" | "sast" => 2 * H,
        "eest" | "msk" | "eat" => 3 * H,
        "ist" => 2 * H,
        "pkt" => 5 * H,
        "wib" => 7 * H,
        "hkt" | "awst" | "sgt" | "wita" => 8 * H,
        "jst" | "kst" | "wit" => 9 * H,
        "acst" => 9 * H + 1800,
        "acdt" => 10 * H + 1800,
        "aest" => 10 * H,
        "aedt" => 11 * H,
        "nzst" => 12 * H,
        "nzdt" => 13 * H,
        "ast" => -4 * H,
        "adt" => -3 * H,
        "nst" => -(3 * H + 1800),
        "ndt" => -(2 * H + 1800),
        "est" => -5 * H,
        "edt" => -4 * H,
        "cst" => -6 * H,
        "cdt" => -5 * H,
        "mst" => -7 * H,
        "mdt" => -6 * H,
        "pst" => -8 * H,
        "pdt" => -7 * H,
        "akst" => -9 * H,
        "akdt" => -8 * H,
        "hst" => -10 * H,
        _ => return None,
    })
}
