//! Text for the report: HTML escaping, compact numbers, dates, wrapping.

/// Escapes text for HTML element content and quoted attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A number in at most ~4 characters plus a suffix: 0.004, 12.5, 940, 56.8k, 3.1M.
pub fn num(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    let a = v.abs();
    let (x, suffix) = if a >= 1e9 {
        (v / 1e9, "G")
    } else if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e4 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    let ax = x.abs();
    let s = if ax == 0.0 {
        "0".to_string()
    } else if ax >= 100.0 {
        format!("{x:.0}")
    } else if ax >= 10.0 {
        format!("{x:.1}")
    } else if ax >= 1.0 {
        format!("{x:.2}")
    } else if ax >= 0.1 {
        format!("{x:.3}")
    } else if ax >= 0.01 {
        format!("{x:.4}")
    } else if ax >= 0.001 {
        format!("{x:.5}")
    } else {
        return format!("{x:.0e}");
    };
    format!("{}{suffix}", trim_zeros(&s))
}

fn trim_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// Bytes with a decimal unit (KB = 10^3 bytes, as the tables print them).
pub fn bytes(v: f64) -> String {
    let a = v.abs();
    if a >= 1e9 {
        format!("{} GB", num(v / 1e9))
    } else if a >= 1e6 {
        format!("{} MB", num(v / 1e6))
    } else if a >= 1e3 {
        format!("{} KB", num(v / 1e3))
    } else {
        format!("{} B", num(v))
    }
}

/// Bytes per second.
pub fn bytes_per_s(v: f64) -> String {
    format!("{}/s", bytes(v))
}

/// Milliseconds.
pub fn ms(v: f64) -> String {
    format!("{} ms", num(v))
}

/// Seconds since the Unix epoch as `YYYY-MM-DD HH:MM:SS UTC`.
pub fn utc(unix: u64) -> String {
    let days = (unix / 86_400) as i64;
    let rem = unix % 86_400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// Splits `s` at spaces into lines of at most `width` characters (longer
/// words stay whole), at most three lines, the last one cut with "...".
pub fn wrap(s: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut cur = String::new();
    for w in s.split_whitespace() {
        if !cur.is_empty() && cur.chars().count() + 1 + w.chars().count() > width {
            lines.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(w);
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    if lines.len() > 3 {
        let rest = lines.split_off(2).join(" ");
        let cut: String = rest.chars().take(width.saturating_sub(3)).collect();
        lines.push(format!("{cut}..."));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(esc("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
        assert_eq!(num(56_762.18), "56.8k");
        assert_eq!(num(940.0), "940");
        assert_eq!(num(12.5), "12.5");
        assert_eq!(num(0.0), "0");
        assert_eq!(num(0.0040), "0.004");
        assert_eq!(num(0.6952), "0.695");
        assert_eq!(num(0.001234), "0.00123");
        assert_eq!(num(2_500_000.0), "2.5M");
        assert_eq!(bytes(532_480.0), "532 KB");
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(1_709_251_199), "2024-02-29 23:59:59 UTC");
        assert_eq!(
            wrap("20,000 inserts in 1 transaction", 12),
            vec!["20,000", "inserts in 1", "transaction"]
        );
        assert_eq!(wrap("a b c d e f g h", 3).len(), 3);
    }
}
