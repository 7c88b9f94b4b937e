//! `to_char(number, template)` and `to_number(text, template)` with
//! PostgreSQL's numeric template patterns: digit positions `9` and `0`,
//! the decimal point (`.`, `D`), group separators (`,`, `G`), the sign
//! forms (`S`, `MI`, `PL`, `SG`, `PR`, and the default one before the
//! first digit), `FM` fill mode, `L` (the C locale's blank currency
//! symbol), `TH`/`th`, `V`, `EEEE` and `RN`. Text in double quotes and
//! any other character is copied. A number wider than the template's
//! digits is shown as `#`s, as PostgreSQL does.

use crate::error::{ErrorKind, Result, SqlError};
use walden_engine::types::Numeric;
use walden_engine::Value;

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    /// A digit position; `true` for `0`.
    Digit(bool),
    Point,
    Group,
    /// `S`: the sign beside the number.
    LocaleSign,
    Minus,
    Plus,
    SignAlways,
    Bracket,
    Currency,
    Ordinal(bool),
    Multiply,
    Exponent,
    Roman(bool),
    Fill,
    Lit(String),
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Side {
    None,
    Before,
    After,
}

struct Template {
    toks: Vec<Tok>,
    pre: usize,
    post: usize,
    /// Digit positions before the first `0` (leading zeros from there).
    zero_start: Option<usize>,
    /// The 1-based position of the last `0`.
    zero_end: usize,
    fill: bool,
    decimal: bool,
    lsign: Side,
    pre_lsign: usize,
    bracket: bool,
    minus: bool,
    plus: bool,
    multi: usize,
    eeee: bool,
    roman: bool,
}

fn pow10(k: usize) -> Numeric {
    Numeric::from_parts(1.into(), -(k as i64))
}

fn syntax(m: &str) -> SqlError {
    SqlError::new(ErrorKind::Syntax, m.to_string())
}

const KEYWORDS: &[(&str, Tok)] = &[
    ("EEEE", Tok::Exponent),
    ("eeee", Tok::Exponent),
    ("FM", Tok::Fill),
    ("fm", Tok::Fill),
    ("MI", Tok::Minus),
    ("mi", Tok::Minus),
    ("PL", Tok::Plus),
    ("pl", Tok::Plus),
    ("PR", Tok::Bracket),
    ("pr", Tok::Bracket),
    ("SG", Tok::SignAlways),
    ("sg", Tok::SignAlways),
    ("RN", Tok::Roman(true)),
    ("rn", Tok::Roman(false)),
    ("TH", Tok::Ordinal(true)),
    ("th", Tok::Ordinal(false)),
    ("9", Tok::Digit(false)),
    ("0", Tok::Digit(true)),
    (".", Tok::Point),
    ("D", Tok::Point),
    ("d", Tok::Point),
    (",", Tok::Group),
    ("G", Tok::Group),
    ("g", Tok::Group),
    ("S", Tok::LocaleSign),
    ("s", Tok::LocaleSign),
    ("L", Tok::Currency),
    ("l", Tok::Currency),
    ("V", Tok::Multiply),
    ("v", Tok::Multiply),
];

fn parse(fmt: &str) -> Result<Template> {
    let mut t = Template {
        toks: Vec::new(),
        pre: 0,
        post: 0,
        zero_start: None,
        zero_end: 0,
        fill: false,
        decimal: false,
        lsign: Side::None,
        pre_lsign: 0,
        bracket: false,
        minus: false,
        plus: false,
        multi: 0,
        eeee: false,
        roman: false,
    };
    let mut lit = String::new();
    let mut rest = fmt;
    while !rest.is_empty() {
        if let Some((k, tok)) = KEYWORDS.iter().find(|(k, _)| rest.starts_with(k)) {
            if !lit.is_empty() {
                t.toks.push(Tok::Lit(std::mem::take(&mut lit)));
            }
            rest = &rest[k.len()..];
            match tok {
                Tok::Digit(zero) => {
                    if t.decimal {
                        t.post += 1;
                    } else {
                        t.pre += 1;
                    }
                    if t.multi > 0 && !t.decimal {
                        t.multi += 1;
                    }
                    if *zero {
                        if t.zero_start.is_none() {
                            t.zero_start = Some(t.pre + t.post - 1);
                        }
                        t.zero_end = t.pre + t.post;
                    }
                }
                Tok::Point => {
                    if t.decimal {
                        return Err(syntax("multiple decimal points"));
                    }
                    if t.multi > 0 {
                        return Err(syntax("cannot use \"V\" and decimal point together"));
                    }
                    t.decimal = true;
                }
                Tok::Fill => t.fill = true,
                Tok::LocaleSign => {
                    if !t.decimal {
                        t.lsign = Side::Before;
                        t.pre_lsign = t.pre;
                    } else if t.lsign == Side::None {
                        t.lsign = Side::After;
                    }
                }
                Tok::Minus => t.minus = true,
                Tok::Plus => t.plus = true,
                Tok::SignAlways => {
                    t.minus = true;
                    t.plus = true;
                }
                Tok::Bracket => t.bracket = true,
                Tok::Multiply => {
                    if t.decimal {
                        return Err(syntax("cannot use \"V\" and decimal point together"));
                    }
                    t.multi = 1;
                }
                Tok::Exponent => t.eeee = true,
                Tok::Roman(_) => t.roman = true,
                _ => {}
            }
            t.toks.push(tok.clone());
            continue;
        }
        let mut chars = rest.chars();
        let c = chars.next().unwrap_or_default();
        rest = chars.as_str();
        match c {
            // A quoted string: copied, a backslash escaping the next character.
            '"' => {
                let mut chars = rest.chars();
                loop {
                    match chars.next() {
                        None | Some('"') => break,
                        Some('\\') => {
                            if let Some(n) = chars.next() {
                                lit.push(n);
                            }
                        }
                        Some(ch) => lit.push(ch),
                    }
                }
                rest = chars.as_str();
            }
            '\\' if rest.starts_with('"') => {
                lit.push('"');
                rest = &rest[1..];
            }
            c => lit.push(c),
        }
    }
    if !lit.is_empty() {
        t.toks.push(Tok::Lit(lit));
    }
    // V's count is the digits after it.
    if t.multi > 0 {
        t.multi -= 1;
    }
    Ok(t)
}

fn roman(n: i64) -> Option<String> {
    if !(1..=3999).contains(&n) {
        return None;
    }
    const R: &[(i64, &str)] = &[
        (1000, "M"),
        (900, "CM"),
        (500, "D"),
        (400, "CD"),
        (100, "C"),
        (90, "XC"),
        (50, "L"),
        (40, "XL"),
        (10, "X"),
        (9, "IX"),
        (5, "V"),
        (4, "IV"),
        (1, "I"),
    ];
    let (mut n, mut s) = (n, String::new());
    for (v, r) in R {
        while n >= *v {
            s.push_str(r);
            n -= v;
        }
    }
    Some(s)
}

fn ordinal(int_digits: &str, upper: bool) -> &'static str {
    let b = int_digits.as_bytes();
    let last = b.last().copied().unwrap_or(b'0');
    let teen = b.len() >= 2 && b[b.len() - 2] == b'1';
    let s = match last {
        b'1' if !teen => "st",
        b'2' if !teen => "nd",
        b'3' if !teen => "rd",
        _ => "th",
    };
    if upper {
        match s {
            "st" => "ST",
            "nd" => "ND",
            "rd" => "RD",
            _ => "TH",
        }
    } else {
        s
    }
}

/// C's `%.*e` of a finite decimal string's value: `d.ddde±XX`.
fn sci(n: &Numeric, post: usize) -> String {
    if n.is_zero() {
        let frac = if post > 0 {
            format!(".{}", "0".repeat(post))
        } else {
            String::new()
        };
        return format!("0{frac}e+00");
    }
    let (int, scale) = n.abs().parts().unwrap_or_default();
    let digits = int.to_string();
    let mut exp = digits.len() as i64 - 1 - scale;
    // Round to 1 + post significant digits, half away from zero.
    let shifted = Numeric::from_parts(int, digits.len() as i64 - 1).round_at(post as i64);
    let mut m = shifted.to_string();
    if m.starts_with("10") {
        exp += 1;
        let r = Numeric::from_parts(shifted.parts().unwrap_or_default().0, post as i64 + 1);
        m = r.round_at(post as i64).to_string();
    }
    format!(
        "{m}e{}{:02}",
        if exp < 0 { '-' } else { '+' },
        exp.unsigned_abs()
    )
}

/// The sign and unsigned digit string of the value at the template's
/// decimals (floats at most 15 significant digits, as PostgreSQL's float8).
fn digits_of(v: &Value, t: &mut Template) -> Result<(char, String)> {
    let split = |s: String| match s.strip_prefix('-') {
        Some(r) => ('-', r.to_string()),
        None => ('+', s),
    };
    Ok(match v {
        Value::Int(i) => {
            let mut s = if t.multi > 0 {
                Numeric::from(*i).mul(&pow10(t.multi))?.to_string()
            } else {
                i.to_string()
            };
            if t.post > 0 {
                s.push('.');
                s.push_str(&"0".repeat(t.post));
            }
            split(s)
        }
        Value::Decimal(d) => {
            let d = if t.multi > 0 && d.is_finite() {
                d.mul(&pow10(t.multi))?
            } else {
                d.clone()
            };
            split(d.round_at(t.post as i64).to_string())
        }
        Value::Float(x) => {
            let mut x = *x;
            if t.multi > 0 {
                x *= 10f64.powi(t.multi as i32);
            }
            let int_len = if x.is_finite() {
                format!("{:.0}", x.abs()).len()
            } else {
                3
            };
            t.post = if int_len >= 15 {
                0
            } else {
                t.post.min(15 - int_len)
            };
            if !x.is_finite() {
                // C prints "inf" / "nan": always wider than... shown as '#'s below.
                (if x < 0.0 { '-' } else { '+' }, "inf".into())
            } else {
                split(format!("{:.*}", t.post, x))
            }
        }
        other => {
            return Err(SqlError::new(
                ErrorKind::UndefinedFunction,
                format!(
                    "function to_char({}, unknown) does not exist",
                    crate::functions::type_name(other)
                ),
            ))
        }
    })
}

/// to_char(number, template).
pub fn to_char(v: &Value, fmt: &str) -> Result<String> {
    let mut t = parse(fmt)?;
    if t.roman {
        let n = match v {
            Value::Int(i) => Some(*i),
            Value::Decimal(d) => d.round_at(0).to_integer(i64::MIN, i64::MAX, "bigint").ok(),
            Value::Float(x) if x.is_finite() => Some(x.round() as i64),
            _ => None,
        };
        let upper = t.toks.contains(&Tok::Roman(true));
        return Ok(match n.and_then(roman) {
            Some(r) => {
                let r = if upper { r } else { r.to_lowercase() };
                if t.fill {
                    r
                } else {
                    format!("{r:>15}")
                }
            }
            None => "#".repeat(15),
        });
    }
    if t.eeee {
        let n = match v {
            Value::Int(i) => Some(Numeric::from(*i)),
            Value::Decimal(d) if d.is_finite() => Some(d.clone()),
            Value::Float(x) if x.is_finite() => {
                Some(walden_engine::types::float_to_numeric(*x, 17)?)
            }
            _ => None,
        };
        return Ok(match n {
            Some(n) => {
                let sign = if n.is_negative() { '-' } else { ' ' };
                format!("{sign}{}", sci(&n, t.post))
            }
            None => {
                let mut s: Vec<char> = std::iter::repeat_n('#', t.pre + t.post + 6).collect();
                s[0] = ' ';
                if let Some(c) = s.get_mut(t.pre + 1) {
                    *c = '.';
                }
                s.into_iter().collect()
            }
        });
    }
    let (sign, mut num) = digits_of(v, &mut t)?;
    let pre_len = num.find('.').unwrap_or(num.len());
    let mut pre_spaces = 0;
    if pre_len < t.pre {
        pre_spaces = t.pre - pre_len;
    } else if pre_len > t.pre {
        num = format!("{}.{}", "#".repeat(t.pre), "#".repeat(t.post));
    }
    let num: Vec<char> = num.chars().collect();
    Ok(Writer::new(&t, sign, &num, pre_spaces).run())
}

struct Writer<'a> {
    t: &'a Template,
    sign: char,
    num: &'a [char],
    pre_spaces: usize,
    bracket: bool,
    lsign: Side,
    sign_wrote: bool,
    last_relevant: Option<usize>,
    out: String,
    /// Digit and point positions done.
    curr: usize,
    /// The next character of `num`.
    at: usize,
    /// A digit has been written.
    num_in: bool,
}

impl<'a> Writer<'a> {
    fn new(t: &'a Template, sign: char, num: &'a [char], pre_spaces: usize) -> Writer<'a> {
        let mut bracket = t.bracket;
        let mut lsign = t.lsign;
        let sign_wrote = if t.plus || t.minus {
            !t.plus || t.minus
        } else {
            if sign != '-' && t.fill {
                bracket = false;
            }
            if lsign == Side::Before && t.pre == t.pre_lsign {
                lsign = Side::After;
            }
            sign == '+' && t.fill && lsign == Side::None
        };
        let mut last_relevant = None;
        if t.fill && t.decimal {
            if let Some(p) = num.iter().position(|c| *c == '.') {
                let mut r = p;
                for (i, c) in num.iter().enumerate().skip(p + 1) {
                    if *c != '0' {
                        r = i;
                    }
                }
                if t.zero_end > pre_spaces {
                    r = r.max((t.zero_end - pre_spaces).min(num.len() - 1));
                }
                last_relevant = Some(r);
            }
        }
        Writer {
            t,
            sign,
            num,
            pre_spaces,
            bracket,
            lsign,
            sign_wrote,
            last_relevant,
            out: String::new(),
            curr: 0,
            at: 0,
            num_in: false,
        }
    }

    fn relevant_is_point(&self) -> bool {
        self.last_relevant
            .is_some_and(|r| self.num.get(r) == Some(&'.'))
    }

    /// A lone leading zero of a value below one, shown as a blank (`9.9`
    /// of 0.1 is ` .1`).
    fn predec_space(&self) -> bool {
        self.t.zero_start.is_none_or(|z| z > self.curr)
            && self.at == 0
            && self.num.first() == Some(&'0')
            && self.t.post != 0
    }

    fn run(mut self) -> String {
        let positions = self
            .t
            .toks
            .iter()
            .filter(|k| matches!(k, Tok::Digit(_) | Tok::Point))
            .count();
        for tok in &self.t.toks {
            match tok {
                Tok::Digit(zero) => self.digit(*zero, positions),
                Tok::Point => self.digit(false, positions),
                Tok::Group => {
                    if self.num_in {
                        self.out.push(',');
                    } else if !self.t.fill {
                        self.out.push(' ');
                    }
                }
                Tok::Minus => {
                    if self.sign == '-' {
                        self.out.push('-');
                    } else if !self.t.fill {
                        self.out.push(' ');
                    }
                }
                Tok::Plus => {
                    if self.sign == '+' {
                        self.out.push('+');
                    } else if !self.t.fill {
                        self.out.push(' ');
                    }
                }
                Tok::SignAlways => self.out.push(self.sign),
                Tok::Currency => self.out.push(' '),
                Tok::Ordinal(upper)
                    if self.num.first() != Some(&'#') && self.sign != '-' && !self.t.decimal =>
                {
                    let int: String = self.num.iter().take_while(|c| **c != '.').collect();
                    self.out.push_str(ordinal(&int, *upper));
                }
                Tok::Lit(s) => self.out.push_str(s),
                _ => {}
            }
        }
        self.out
    }

    fn digit(&mut self, zero: bool, positions: usize) {
        let t = self.t;
        let zero_here = t.zero_start.is_some_and(|z| z <= self.curr);
        if !self.sign_wrote
            && (self.curr >= self.pre_spaces || t.zero_start == Some(self.curr))
            && (!self.predec_space() || self.relevant_is_point())
        {
            match self.lsign {
                Side::Before => {
                    self.out.push(self.sign);
                    self.sign_wrote = true;
                }
                Side::After => {}
                Side::None if self.bracket => {
                    self.out.push(if self.sign == '+' { ' ' } else { '<' });
                    self.sign_wrote = true;
                }
                Side::None => {
                    if self.sign == '-' {
                        self.out.push('-');
                    } else if !t.fill {
                        self.out.push(' ');
                    }
                    self.sign_wrote = true;
                }
            }
        }
        if self.curr < self.pre_spaces && !zero_here {
            if !t.fill {
                self.out.push(' ');
            }
        } else if self.curr < self.pre_spaces {
            self.out.push('0');
            self.num_in = true;
        } else {
            let c = self.num.get(self.at).copied();
            if c == Some('.') {
                self.out.push('.');
            } else if self.last_relevant.is_some_and(|r| self.at > r) && !zero {
                // A trailing zero fill mode drops.
            } else if self.predec_space() {
                if !t.fill {
                    self.out.push(' ');
                } else if self.relevant_is_point() {
                    self.out.push('0');
                }
            } else if let Some(c) = c {
                self.out.push(c);
                self.num_in = true;
            }
            if self.at < self.num.len() {
                self.at += 1;
            }
        }
        if self.curr + 1 == positions {
            if self.sign_wrote && self.bracket {
                self.out.push(if self.sign == '+' { ' ' } else { '>' });
            } else if self.lsign == Side::After {
                self.out.push(self.sign);
            }
        }
        self.curr += 1;
    }
}

/// to_number(text, template): the digits the template's positions take,
/// the decimal point, and a minus sign (`-` anywhere, or `<...>` with PR).
pub fn to_number(s: &str, fmt: &str) -> Result<Value> {
    let t = parse(fmt)?;
    if t.eeee {
        return Err(SqlError::unsupported("\"EEEE\" not supported for input"));
    }
    let negative = s.contains('-') || (t.bracket && s.trim_start().starts_with('<'));
    let (mut int, mut frac) = (String::new(), String::new());
    let mut after_point = false;
    for c in s.chars() {
        if c.is_ascii_digit() {
            if after_point {
                if frac.len() < t.post {
                    frac.push(c);
                }
            } else if int.len() < t.pre {
                int.push(c);
            } else if !t.decimal {
                // Past the template's digits: the rest is not read.
                break;
            }
        } else if c == '.' && t.decimal && !after_point {
            after_point = true;
        }
    }
    if int.is_empty() && frac.is_empty() {
        return Err(SqlError::new(
            ErrorKind::InvalidText,
            "invalid input syntax for type numeric: \" \"",
        ));
    }
    let text = format!(
        "{}{}{}{}",
        if negative { "-" } else { "" },
        if int.is_empty() { "0" } else { &int },
        if after_point && !frac.is_empty() {
            "."
        } else {
            ""
        },
        frac
    );
    let mut n = walden_engine::types::parse_numeric(&text)
        .ok()
        .flatten()
        .ok_or_else(|| {
            SqlError::new(
                ErrorKind::InvalidText,
                format!("invalid input syntax for type numeric: \"{s}\""),
            )
        })?;
    if t.multi > 0 {
        n = n.div_at(&pow10(t.multi), n.scale() + t.multi as i64)?;
    }
    Ok(Value::Decimal(n))
}
