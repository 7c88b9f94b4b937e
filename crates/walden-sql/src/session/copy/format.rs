//! COPY's data formats: the options of `COPY ... FROM STDIN` and
//! `COPY ... TO STDOUT`, PostgreSQL's text format (tab separated, `\N` for
//! NULL, backslash escapes) and CSV, in both directions.
//!
//! The session runs the statement (it reads or writes rows); the wire server
//! moves the data. Values reach [`CopyFormat::encode_row`] already in their
//! text form, the same one query results are sent in.

use crate::error::{ErrorFields, ErrorKind, Result, SqlError};
use sqlparser::ast;

/// How COPY data is laid out.
#[derive(Clone, Debug, PartialEq)]
pub struct CopyFormat {
    pub csv: bool,
    /// PostgreSQL's binary COPY format (laid out by the wire server).
    pub binary: bool,
    pub delimiter: char,
    pub header: bool,
    /// How NULL is written (`\N` in text, the empty string in CSV).
    pub null: String,
    /// CSV only.
    pub quote: char,
    /// CSV only; defaults to the quote character.
    pub escape: char,
    /// CSV output only: columns always quoted (`FORCE_QUOTE`).
    pub force_quote: Vec<String>,
}

impl Default for CopyFormat {
    fn default() -> Self {
        CopyFormat {
            csv: false,
            binary: false,
            delimiter: '\t',
            header: false,
            null: "\\N".into(),
            quote: '"',
            escape: '"',
            force_quote: Vec::new(),
        }
    }
}

fn bad_option(message: impl Into<String>) -> SqlError {
    SqlError::new(ErrorKind::Syntax, message)
}

fn csv_only(what: &str) -> SqlError {
    SqlError::new(
        ErrorKind::FeatureNotSupported,
        format!("COPY {what} available only in CSV mode"),
    )
}

impl CopyFormat {
    /// Reads a COPY statement's options (the `WITH (...)` list and the
    /// pre-9.0 keywords), checking them as PostgreSQL does. `to` is true for
    /// COPY TO.
    pub fn from_options(
        options: &[ast::CopyOption],
        legacy: &[ast::CopyLegacyOption],
        to: bool,
    ) -> Result<CopyFormat> {
        let mut f = CopyFormat::default();
        let (mut delimiter, mut null, mut quote, mut escape) = (None, None, None, None);
        for o in options {
            use ast::CopyOption as O;
            match o {
                O::Format(name) => match name.value.to_ascii_lowercase().as_str() {
                    "text" => (f.csv, f.binary) = (false, false),
                    "csv" => (f.csv, f.binary) = (true, false),
                    "binary" => (f.csv, f.binary) = (false, true),
                    other => {
                        return Err(SqlError::new(
                            ErrorKind::InvalidParameter,
                            format!("COPY format \"{other}\" not recognized"),
                        ))
                    }
                },
                O::Delimiter(c) => delimiter = Some(*c),
                O::Null(s) => null = Some(s.clone()),
                O::Header(h) => f.header = *h,
                O::Quote(c) => quote = Some(*c),
                O::Escape(c) => escape = Some(*c),
                O::ForceQuote(cols) => {
                    f.force_quote = cols.iter().map(|c| c.value.clone()).collect()
                }
                O::Encoding(e) => check_encoding(e)?,
                // FREEZE is a loading hint; FORCE_(NOT_)NULL concern CSV input,
                // where a quoted empty string is already a value, not NULL.
                O::Freeze(_) | O::ForceNotNull(_) | O::ForceNull(_) => {}
            }
        }
        for o in legacy {
            use ast::CopyLegacyOption as L;
            match o {
                L::Binary => f.binary = true,
                L::Csv(csv_opts) => {
                    f.csv = true;
                    for c in csv_opts {
                        use ast::CopyLegacyCsvOption as C;
                        match c {
                            C::Header => f.header = true,
                            C::Quote(q) => quote = Some(*q),
                            C::Escape(e) => escape = Some(*e),
                            C::ForceQuote(cols) => {
                                f.force_quote = cols.iter().map(|c| c.value.clone()).collect()
                            }
                            C::ForceNotNull(_) => {}
                        }
                    }
                }
                L::Delimiter(c) => delimiter = Some(*c),
                L::Null(s) => null = Some(s.clone()),
                L::Header => f.header = true,
                other => {
                    return Err(bad_option(format!(
                        "syntax error: COPY option {other} is not PostgreSQL's"
                    )))
                }
            }
        }
        if f.binary {
            // As PostgreSQL: the text layout options mean nothing here.
            for (given, what) in [(delimiter.is_some(), "DELIMITER"), (null.is_some(), "NULL")] {
                if given {
                    return Err(bad_option(format!("cannot specify {what} in BINARY mode")));
                }
            }
            if f.header {
                return Err(SqlError::new(
                    ErrorKind::FeatureNotSupported,
                    "cannot specify HEADER in BINARY mode",
                ));
            }
        }
        if !f.csv {
            if quote.is_some() {
                return Err(csv_only("quote"));
            }
            if escape.is_some() {
                return Err(csv_only("escape"));
            }
            if !f.force_quote.is_empty() {
                return Err(csv_only("force quote"));
            }
        }
        if !f.force_quote.is_empty() && !to {
            return Err(SqlError::new(
                ErrorKind::FeatureNotSupported,
                "COPY force quote only available using COPY TO",
            ));
        }
        if f.csv {
            f.delimiter = ',';
            f.null = String::new();
        }
        if let Some(d) = delimiter {
            f.delimiter = d;
        }
        if let Some(n) = null {
            f.null = n;
        }
        if let Some(q) = quote {
            f.quote = q;
        }
        f.escape = escape.unwrap_or(f.quote);
        let d = f.delimiter;
        if d == '\n' || d == '\r' {
            return Err(SqlError::new(
                ErrorKind::InvalidParameter,
                "COPY delimiter cannot be newline or carriage return",
            ));
        }
        if !d.is_ascii() || !f.quote.is_ascii() || !f.escape.is_ascii() {
            return Err(SqlError::new(
                ErrorKind::FeatureNotSupported,
                "COPY delimiter, quote and escape must be single one-byte characters",
            ));
        }
        if !f.csv && (d == '\\' || d.is_ascii_alphanumeric() || d == '.') {
            return Err(SqlError::new(
                ErrorKind::InvalidParameter,
                format!("COPY delimiter cannot be \"{d}\""),
            ));
        }
        if f.csv && d == f.quote {
            return Err(SqlError::new(
                ErrorKind::InvalidParameter,
                "COPY delimiter and quote must be different",
            ));
        }
        if f.null.contains(['\n', '\r']) {
            return Err(SqlError::new(
                ErrorKind::InvalidParameter,
                "COPY null representation cannot use newline or carriage return",
            ));
        }
        Ok(f)
    }

    /// Splits COPY input into records (see [`Record`]). Skips the header
    /// line and stops at the `\.` end marker. A CSV record may span lines
    /// inside quotes; it is numbered by the line it ends on, as PostgreSQL
    /// numbers it.
    #[cfg(test)]
    pub(crate) fn parse_input(&self, text: &str) -> Vec<(usize, Vec<Option<String>>)> {
        let mut reader = RecordReader::default();
        let mut out = Vec::new();
        let batch = reader.feed(self, "t", text.as_bytes(), true).unwrap();
        self.records(&batch, &mut |r: &Record<'_>| {
            out.push((r.line, r.fields.clone()));
            Ok(())
        })
        .unwrap();
        out
    }

    /// Calls `each` with the records of a batch [`RecordReader::feed`] cut.
    pub(crate) fn records(
        &self,
        batch: &Batch,
        each: &mut dyn FnMut(&Record<'_>) -> Result<()>,
    ) -> Result<bool> {
        let mut lineno = batch.first_line - 1;
        let mut rest = batch.text.as_str();
        while !rest.is_empty() {
            lineno += 1;
            let first_line = lineno;
            let end = if self.csv {
                self.csv_record_end(rest, &mut lineno)
            } else {
                rest.find('\n').unwrap_or(rest.len())
            };
            let raw = rest[..end].strip_suffix('\r').unwrap_or(&rest[..end]);
            rest = rest.get(end + 1..).unwrap_or("");
            if raw == "\\." {
                return Ok(true);
            }
            if first_line == 1 && self.header {
                continue;
            }
            let fields = if self.csv {
                split_csv(raw, self.delimiter, self.quote, self.escape)
                    .into_iter()
                    .map(|(f, quoted)| (quoted || f != self.null).then_some(f))
                    .collect()
            } else {
                // The NULL marker is matched before unescaping: `\\N` is the
                // text `\N`.
                raw.split(self.delimiter)
                    .map(|f| (f != self.null).then(|| unescape_text(f)))
                    .collect()
            };
            each(&Record {
                line: lineno,
                raw,
                fields,
            })?;
        }
        Ok(false)
    }

    /// Where the CSV record at the start of `s` ends (the newline outside
    /// quotes, or the end), counting the lines it spans.
    fn csv_record_end(&self, s: &str, lineno: &mut usize) -> usize {
        let mut quoted = false;
        let mut it = s.char_indices().peekable();
        while let Some((i, c)) = it.next() {
            if quoted {
                let next = it.peek().map(|&(_, n)| n);
                if c == self.escape && (next == Some(self.quote) || next == Some(self.escape)) {
                    it.next();
                } else if c == self.quote {
                    quoted = false;
                } else if c == '\n' {
                    *lineno += 1;
                }
            } else if c == self.quote {
                quoted = true;
            } else if c == '\n' {
                return i;
            }
        }
        s.len()
    }

    /// Appends one line of COPY output: `fields` are the values' text forms
    /// (`None` for NULL); `forced` marks the FORCE_QUOTE columns.
    pub fn encode_row(&self, fields: &[Option<&str>], forced: &[bool], out: &mut Vec<u8>) {
        let single = fields.len() == 1;
        for (i, f) in fields.iter().enumerate() {
            if i > 0 {
                push_char(out, self.delimiter);
            }
            match f {
                None => out.extend_from_slice(self.null.as_bytes()),
                Some(s) if self.csv => {
                    self.csv_field(s, forced.get(i).copied().unwrap_or(false), single, out)
                }
                Some(s) => self.text_field(s, out),
            }
        }
        out.push(b'\n');
    }

    /// Appends the header line (column names).
    pub fn encode_header(&self, names: &[&str], out: &mut Vec<u8>) {
        let fields: Vec<Option<&str>> = names.iter().map(|n| Some(*n)).collect();
        self.encode_row(&fields, &[], out);
    }

    /// PostgreSQL's text format: backslash escapes for the backslash, the
    /// delimiter and the control characters that would break the line.
    fn text_field(&self, s: &str, out: &mut Vec<u8>) {
        for c in s.chars() {
            let esc = match c {
                '\\' => Some('\\'),
                '\n' => Some('n'),
                '\r' => Some('r'),
                '\t' => Some('t'),
                '\u{8}' => Some('b'),
                '\u{c}' => Some('f'),
                '\u{b}' => Some('v'),
                c if c == self.delimiter => Some(c),
                _ => None,
            };
            match esc {
                Some(e) => {
                    out.push(b'\\');
                    push_char(out, e);
                }
                None => push_char(out, c),
            }
        }
    }

    /// CSV: quote a field that holds the delimiter, the quote, a line break,
    /// or that reads as the NULL marker (or as `\.` alone on its line).
    fn csv_field(&self, s: &str, forced: bool, single: bool, out: &mut Vec<u8>) {
        let quote = forced
            || s == self.null
            || (single && s == "\\.")
            || s.chars()
                .any(|c| c == self.delimiter || c == self.quote || c == '\n' || c == '\r');
        if !quote {
            out.extend_from_slice(s.as_bytes());
            return;
        }
        push_char(out, self.quote);
        for c in s.chars() {
            if c == self.quote || c == self.escape {
                push_char(out, self.escape);
            }
            push_char(out, c);
        }
        push_char(out, self.quote);
    }
}

/// One record of COPY input.
pub(crate) struct Record<'a> {
    /// The line it ends on (PostgreSQL's numbering, the header included).
    pub line: usize,
    /// Its text as it came (for error context).
    pub raw: &'a str,
    /// Its fields, `None` for NULL.
    pub fields: Vec<Option<String>>,
}

/// Whole records of COPY input, cut from the data received so far.
#[derive(Debug, Default)]
pub(crate) struct Batch {
    pub text: String,
    /// The line number of its first line.
    pub first_line: usize,
}

/// Cuts text or CSV COPY input, arriving in pieces of any size, into
/// batches of whole records: only a record not yet complete is held back,
/// so memory stays bounded by the piece plus one record however long the
/// input is.
#[derive(Debug, Default)]
pub(crate) struct RecordReader {
    held: Vec<u8>,
    /// Lines handed out so far.
    lines: usize,
}

impl RecordReader {
    /// Adds `data`; returns the whole records held (all that is held when
    /// `last`: the input ended). `table` names the table in errors.
    pub(crate) fn feed(
        &mut self,
        f: &CopyFormat,
        table: &str,
        data: &[u8],
        last: bool,
    ) -> Result<Batch> {
        let mut batch = Batch {
            text: String::new(),
            first_line: self.lines + 1,
        };
        self.held.extend_from_slice(data);
        // A newline byte is never inside a multi-byte UTF-8 character: the
        // cut is a character boundary.
        let mut cut = if last {
            self.held.len()
        } else {
            match self.held.iter().rposition(|&b| b == b'\n') {
                Some(i) => i + 1,
                None => return Ok(batch),
            }
        };
        let text = std::str::from_utf8(&self.held[..cut]).map_err(|e| {
            let at = e.valid_up_to();
            let line = self.lines + 1 + self.held[..at].iter().filter(|&&b| b == b'\n').count();
            SqlError::new(
                ErrorKind::CharacterNotInRepertoire,
                format!(
                    "invalid byte sequence for encoding \"UTF8\": 0x{:02x}",
                    self.held[at]
                ),
            )
            .with_fields(ErrorFields {
                context: Some(format!("COPY {table}, line {line}")),
                ..Default::default()
            })
        })?;
        if f.csv && !last {
            // A quoted field may hold newlines: keep back a record whose
            // quotes are still open at the cut.
            cut = complete_csv(f, text);
        }
        let text = &text[..cut];
        self.lines += text.matches('\n').count();
        batch.text = text.to_string();
        self.held.drain(..cut);
        Ok(batch)
    }
}

/// The length of the whole CSV records at the start of `text` (which ends
/// with a newline).
fn complete_csv(f: &CopyFormat, text: &str) -> usize {
    let mut at = 0;
    let mut lines = 0;
    while at < text.len() {
        let end = f.csv_record_end(&text[at..], &mut lines);
        if at + end >= text.len() {
            break;
        }
        at += end + 1;
    }
    at
}

fn push_char(out: &mut Vec<u8>, c: char) {
    let mut buf = [0u8; 4];
    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
}

fn check_encoding(e: &str) -> Result<()> {
    let norm: String = e
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect::<String>()
        .to_ascii_lowercase();
    if matches!(norm.as_str(), "utf8" | "unicode" | "sqlascii") {
        Ok(())
    } else {
        Err(SqlError::unsupported(format!(
            "COPY with encoding \"{e}\" (data is UTF8)"
        )))
    }
}

/// A `COPY ... FROM STDIN` in progress.
#[derive(Clone, Debug, PartialEq)]
pub struct CopyIn {
    pub table: String,
    pub columns: Vec<String>,
    pub format: CopyFormat,
    /// The types of the columns the data holds, in its order (what the
    /// binary format's fields are read as).
    pub types: Vec<walden_engine::DataType>,
}

/// A `COPY ... FROM STDIN` under way: its rows are inserted batch by batch
/// as the data arrives (see `session/copy.rs`), so neither the input
/// nor its parsed rows are held whole.
pub struct CopyLoad {
    pub(crate) copy: CopyIn,
    pub(crate) table: std::sync::Arc<walden_engine::Table>,
    /// The table positions of the data's columns.
    pub(crate) cols: Vec<usize>,
    pub(crate) checks: crate::dml::checks::Checks,
    /// The table's expression DEFAULTs, for the columns the data leaves out.
    pub(crate) defaults: crate::dml::defaults::ExprDefaults,
    /// A partitioned table: where each row goes.
    pub(crate) routing: Option<crate::dml::routing::Routing>,
    /// A partition: its bound, which each row must meet.
    pub(crate) bound: Option<crate::query::partition::Constraint>,
    pub(crate) fks: crate::dml::foreign_keys::Pending,
    pub(crate) reader: RecordReader,
    /// Rows inserted so far, and (binary format) rows read.
    pub(crate) rows: u64,
    pub(crate) read: usize,
    /// The `\.` end marker was seen: the rest of the data is ignored.
    pub(crate) ended: bool,
    /// A COPY outside a transaction block runs in its own transaction,
    /// kept here between batches and committed at the end.
    pub(crate) own: Option<walden_engine::Transaction>,
    /// The table's INSERT triggers, loaded (and BEFORE STATEMENT fired)
    /// with the first row or at the end.
    pub(crate) fire: Option<Option<crate::dml::triggers::Firing>>,
}

impl std::fmt::Debug for CopyLoad {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CopyLoad")
            .field("table", &self.copy.table)
            .field("rows", &self.rows)
            .finish_non_exhaustive()
    }
}

/// A `COPY ... TO STDOUT`: the statement's rows are in the
/// [`crate::QueryOutput`]; this says how to lay them out.
#[derive(Clone, Debug, PartialEq)]
pub struct CopyOut {
    pub format: CopyFormat,
    /// Per output column: always quoted (CSV `FORCE_QUOTE`).
    pub forced: Vec<bool>,
}

/// Undoes the text format's backslash escapes.
fn unescape_text(f: &str) -> String {
    if !f.contains('\\') || f == "\\N" {
        return f.to_string();
    }
    let mut out = String::with_capacity(f.len());
    let mut it = f.chars();
    while let Some(c) = it.next() {
        if c == '\\' {
            match it.next() {
                Some('t') => out.push('\t'),
                Some('n') => out.push('\n'),
                Some('r') => out.push('\r'),
                Some('b') => out.push('\u{8}'),
                Some('f') => out.push('\u{c}'),
                Some('v') => out.push('\u{b}'),
                Some('\\') => out.push('\\'),
                Some(o) => out.push(o),
                None => {}
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Splits a CSV line into (field, was quoted).
fn split_csv(line: &str, delim: char, quote: char, escape: char) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut was_quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if quoted {
            // An escape (by default the quote itself) takes the next quote or
            // escape literally; a lone quote ends the quoted part.
            let next = chars.peek().copied();
            if c == escape && (next == Some(quote) || next == Some(escape)) {
                cur.push(next.unwrap_or(quote));
                chars.next();
            } else if c == quote {
                quoted = false;
            } else {
                cur.push(c);
            }
        } else if c == quote {
            quoted = true;
            was_quoted = true;
        } else if c == delim {
            out.push((std::mem::take(&mut cur), was_quoted));
            was_quoted = false;
        } else {
            cur.push(c);
        }
    }
    out.push((cur, was_quoted));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::front::parse_sql;

    fn format_of(sql: &str) -> Result<CopyFormat> {
        match parse_sql(sql).unwrap() {
            ast::Statement::Copy {
                options,
                legacy_options,
                to,
                ..
            } => CopyFormat::from_options(&options, &legacy_options, to),
            other => panic!("{other}"),
        }
    }

    fn line(f: &CopyFormat, fields: &[Option<&str>]) -> String {
        let mut out = Vec::new();
        f.encode_row(fields, &[], &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn text_format_escapes_like_postgres() {
        let f = CopyFormat::default();
        assert_eq!(
            line(
                &f,
                &[Some("a\tb"), None, Some("back\\slash\nnew"), Some("")]
            ),
            "a\\tb\t\\N\tback\\\\slash\\nnew\t\n"
        );
        for s in ["a\tb", "x\\y", "line\r\nbreak", "\\N"] {
            let mut out = Vec::new();
            f.text_field(s, &mut out);
            assert_eq!(unescape_text(std::str::from_utf8(&out).unwrap()), s);
        }
    }

    #[test]
    fn csv_quotes_only_where_needed() {
        let f = format_of("COPY t TO STDOUT WITH (FORMAT csv, HEADER true)").unwrap();
        assert!(f.csv && f.header);
        assert_eq!(
            line(
                &f,
                &[
                    Some("plain"),
                    Some("a,b"),
                    Some("say \"hi\""),
                    Some(""),
                    None
                ]
            ),
            "plain,\"a,b\",\"say \"\"hi\"\"\",\"\",\n"
        );
        let back = split_csv("plain,\"a,b\",\"say \"\"hi\"\"\",\"\",", ',', '"', '"');
        assert_eq!(back[2], ("say \"hi\"".to_string(), true));
        assert_eq!(back[3], (String::new(), true));
        assert_eq!(back[4], (String::new(), false));
    }

    #[test]
    fn input_records_round_trip_output() {
        let text = CopyFormat::default();
        let csv = format_of("COPY t FROM STDIN WITH (FORMAT csv, HEADER)").unwrap();
        let rows: Vec<Vec<Option<&str>>> = vec![
            vec![Some("a\tb"), None, Some("multi\nline")],
            vec![Some("\\N"), Some(""), Some("q\"uote,comma")],
        ];
        for f in [&text, &csv] {
            let mut data = Vec::new();
            if f.header {
                f.encode_header(&["x", "y", "z"], &mut data);
            }
            for r in &rows {
                f.encode_row(r, &[], &mut data);
            }
            data.extend_from_slice(b"\\.\n");
            let back = f.parse_input(std::str::from_utf8(&data).unwrap());
            let back: Vec<Vec<Option<&str>>> = back
                .iter()
                .map(|(_, r)| r.iter().map(|x| x.as_deref()).collect())
                .collect();
            assert_eq!(back, rows, "csv: {}", f.csv);
        }
    }

    #[test]
    fn options_are_checked() {
        assert!(format_of("COPY t TO STDOUT CSV HEADER").unwrap().header);
        assert_eq!(
            format_of("COPY t TO STDOUT WITH (FORMAT csv, DELIMITER ';')")
                .unwrap()
                .delimiter,
            ';'
        );
        assert!(
            format_of("COPY t TO STDOUT WITH (FORMAT binary)")
                .unwrap()
                .binary
        );
        assert_eq!(
            format_of("COPY t TO STDOUT WITH (FORMAT binary, HEADER)")
                .unwrap_err()
                .message,
            "cannot specify HEADER in BINARY mode"
        );
        assert!(format_of("COPY t TO STDOUT BINARY").unwrap().binary);
        assert_eq!(
            format_of("COPY t TO STDOUT WITH (QUOTE '''')")
                .unwrap_err()
                .kind,
            ErrorKind::FeatureNotSupported
        );
        assert!(format_of("COPY t TO STDOUT WITH (FORMAT csv, QUOTE ',')").is_err());
    }
}
