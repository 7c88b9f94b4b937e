//! Splitting a batch into statements.

/// Splits a batch on semicolons outside quotes, comments and dollar quotes.
pub fn split(batch: &str) -> Vec<&str> {
    let b = batch.as_bytes();
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\'' | b'"' => {
                let q = b[i];
                i += 1;
                while i < b.len() {
                    if b[i] == q {
                        if i + 1 < b.len() && b[i + 1] == q {
                            i += 2;
                            continue;
                        }
                        break;
                    }
                    i += 1;
                }
            }
            b'-' if b.get(i + 1) == Some(&b'-') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                    i += 1;
                }
                i += 1;
            }
            b'$' => {
                // $tag$ ... $tag$
                let mut j = i + 1;
                while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
                    j += 1;
                }
                if j < b.len() && b[j] == b'$' && !(j > i + 1 && b[i + 1].is_ascii_digit()) {
                    let tag = &batch[i..=j];
                    if let Some(end) = batch[j + 1..].find(tag) {
                        i = j + 1 + end + tag.len() - 1;
                    } else {
                        i = b.len();
                    }
                }
            }
            b';' => {
                out.push(&batch[start..i]);
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    out.push(&batch[start.min(batch.len())..]);
    out.into_iter().filter(|s| !is_blank(s)).collect()
}

/// Whether a piece of a batch holds only whitespace and comments (checked
/// without tokenizing: this runs for every statement).
pub(super) fn is_blank(s: &str) -> bool {
    let mut rest = s.trim_start();
    loop {
        if rest.is_empty() {
            return true;
        }
        if let Some(r) = rest.strip_prefix("--") {
            rest = r.find('\n').map_or("", |i| &r[i + 1..]).trim_start();
        } else if let Some(r) = rest.strip_prefix("/*") {
            rest = r.find("*/").map_or("", |i| &r[i + 2..]).trim_start();
        } else {
            return false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blank_pieces_are_dropped() {
        assert!(is_blank("  \n -- only a comment\n /* and another */ "));
        assert!(!is_blank(" -- c\n SELECT 1"));
        assert_eq!(split("SELECT 1; -- trailing\n ; /* x */ ;").len(), 1);
    }

    #[test]
    fn splits_batches_outside_quotes() {
        let s = split("BEGIN; INSERT INTO t VALUES ('a;b'); -- c;\n COMMIT;;");
        assert_eq!(s.len(), 3);
        assert!(s[1].contains("'a;b'"));
    }
}
