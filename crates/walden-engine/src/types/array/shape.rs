//! Arrays of any shape, PostgreSQL's model: up to six dimensions, each
//! with a length and a lower bound, and the elements in row-major order.
//! The common array (one dimension numbered from 1, or empty) stays a
//! `Value::Array`; every other shape is a `Value::MdArray`, so each array
//! has exactly one representation and equal arrays are equal values.

use super::super::Value;
use crate::error::{EngineError, Result};
use std::cmp::Ordering;
use std::sync::Arc;

/// PostgreSQL's MAXDIM.
pub const MAX_DIMS: usize = 6;
/// PostgreSQL's MaxArraySize: the most elements an array may hold.
pub const MAX_ITEMS: usize = 134_217_727;

/// One dimension: how many elements along it, and the first subscript.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Dim {
    pub len: i32,
    pub lower: i32,
}

impl Dim {
    /// The last subscript.
    pub fn upper(&self) -> i64 {
        self.lower as i64 + self.len as i64 - 1
    }
}

/// An array that is not one-dimensional from 1: its dimensions (at least
/// one, every length at least 1) and its elements, row-major.
#[derive(Clone, Debug)]
pub struct MdArray {
    pub dims: Box<[Dim]>,
    pub items: Box<[Value]>,
}

/// An array's shape and elements, whichever variant holds it.
pub struct Shaped<'a> {
    pub dims: std::borrow::Cow<'a, [Dim]>,
    pub items: &'a [Value],
}

/// The shape of an array value (`None` for a value that is not one).
pub fn shaped(v: &Value) -> Option<Shaped<'_>> {
    match v {
        Value::Array(items) => Some(Shaped {
            dims: if items.is_empty() {
                std::borrow::Cow::Borrowed(&[])
            } else {
                std::borrow::Cow::Owned(vec![Dim {
                    len: items.len() as i32,
                    lower: 1,
                }])
            },
            items,
        }),
        Value::MdArray(a) => Some(Shaped {
            dims: std::borrow::Cow::Borrowed(&a.dims),
            items: &a.items,
        }),
        _ => None,
    }
}

fn limit(what: String) -> EngineError {
    EngineError::ArrayLimit(what)
}

/// Checks a shape against PostgreSQL's limits and returns its element
/// count: at most six dimensions, at most `MAX_ITEMS` elements, every
/// upper bound within an int4.
pub fn check_dims(dims: &[Dim]) -> Result<usize> {
    if dims.len() > MAX_DIMS {
        return Err(limit(format!(
            "number of array dimensions ({}) exceeds the maximum allowed ({MAX_DIMS})",
            dims.len()
        )));
    }
    let mut n: usize = 1;
    for d in dims {
        if d.len < 0 || d.upper() > i32::MAX as i64 {
            return Err(limit("array upper bound is too large".into()));
        }
        n = n.saturating_mul(d.len as usize);
        if n > MAX_ITEMS {
            return Err(limit(format!(
                "array size exceeds the maximum allowed ({MAX_ITEMS})"
            )));
        }
    }
    Ok(if dims.is_empty() { 0 } else { n })
}

/// The value of an array of this shape: `Value::Array` when it is empty or
/// one-dimensional from 1, `Value::MdArray` otherwise. The caller has
/// checked that the items fill the shape.
pub fn make(dims: Vec<Dim>, items: Vec<Value>) -> Value {
    if items.is_empty() || dims.is_empty() || dims.iter().any(|d| d.len == 0) {
        return Value::Array(Arc::from(Vec::new()));
    }
    if dims.len() == 1 && dims[0].lower == 1 {
        return Value::Array(items.into());
    }
    Value::MdArray(Arc::new(MdArray {
        dims: dims.into(),
        items: items.into(),
    }))
}

/// PostgreSQL's array order: element by element (a NULL element after any
/// value), then more elements after fewer, then fewer dimensions first,
/// then by the dimensions' lengths and lower bounds.
pub fn compare_shaped(a: &Shaped<'_>, b: &Shaped<'_>) -> Ordering {
    super::compare(a.items, b.items)
        .then_with(|| a.dims.len().cmp(&b.dims.len()))
        .then_with(|| {
            let lens = |s: &Shaped<'_>| s.dims.iter().map(|d| d.len).collect::<Vec<_>>();
            lens(a).cmp(&lens(b))
        })
        .then_with(|| {
            let lows = |s: &Shaped<'_>| s.dims.iter().map(|d| d.lower).collect::<Vec<_>>();
            lows(a).cmp(&lows(b))
        })
}

/// The text form of an array of any shape: `[lo:hi]...=` before it when a
/// lower bound is not 1, then the elements in nested braces.
pub fn format_shaped(
    dims: &[Dim],
    items: &[Value],
    mut text: impl FnMut(&Value) -> String,
) -> String {
    let mut out = String::new();
    if dims.is_empty() || items.is_empty() {
        return "{}".into();
    }
    if dims.iter().any(|d| d.lower != 1) {
        for d in dims {
            out.push_str(&format!("[{}:{}]", d.lower, d.upper()));
        }
        out.push('=');
    }
    // How many elements a sub-array at each level holds: a brace opens
    // before element i for each level whose span divides i, and closes
    // after it for each whose span divides i + 1.
    let mut span = vec![dims[dims.len() - 1].len.max(1) as usize; dims.len()];
    for k in (0..dims.len() - 1).rev() {
        span[k] = span[k + 1] * dims[k].len.max(1) as usize;
    }
    for (i, v) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        for s in &span {
            if i % s == 0 {
                out.push('{');
            }
        }
        if v.is_null() {
            out.push_str("NULL");
        } else {
            super::push_element(&mut out, &text(v));
        }
        for s in &span {
            if (i + 1) % s == 0 {
                out.push('}');
            }
        }
    }
    out
}

fn malformed(s: &str, detail: &str) -> EngineError {
    EngineError::MalformedArray {
        text: s.to_string(),
        detail: detail.to_string(),
    }
}

/// Reads an array literal: optional explicit bounds (`[0:1][1:2]=`), then
/// nested braces. Returns the dimensions and each element's text (`None`
/// for an unquoted NULL), row-major.
pub fn parse_literal(s: &str) -> Result<(Vec<Dim>, Vec<Option<String>>)> {
    let chars: Vec<char> = s.chars().collect();
    let mut p = Lexer {
        s,
        c: &chars,
        i: 0,
        leaf: None,
    };
    p.skip_space();
    let mut given: Option<Vec<Dim>> = None;
    if p.peek() == Some('[') {
        let mut dims = Vec::new();
        while p.peek() == Some('[') {
            p.i += 1;
            p.skip_space();
            let a = p.int()?;
            p.skip_space();
            let (lower, upper) = if p.peek() == Some(':') {
                p.i += 1;
                p.skip_space();
                let b = p.int()?;
                p.skip_space();
                (a, b)
            } else {
                (1, a)
            };
            if p.next() != Some(']') {
                return Err(malformed(s, "Missing \"]\" after array dimensions."));
            }
            if upper < lower {
                return Err(EngineError::ArraySubscript(
                    "upper bound cannot be less than lower bound".into(),
                ));
            }
            if dims.len() == MAX_DIMS {
                return Err(limit(format!(
                    "number of array dimensions ({}) exceeds the maximum allowed ({MAX_DIMS})",
                    MAX_DIMS + 1
                )));
            }
            let len = upper - lower + 1;
            let len = i32::try_from(len)
                .map_err(|_| limit("array size exceeds the maximum allowed".into()))?;
            dims.push(Dim {
                len,
                lower: lower as i32,
            });
            p.skip_space();
        }
        if p.next() != Some('=') {
            return Err(malformed(s, "Missing \"=\" after array dimensions."));
        }
        p.skip_space();
        given = Some(dims);
    }
    if p.peek() != Some('{') {
        return Err(malformed(
            s,
            "Array value must start with \"{\" or dimension information.",
        ));
    }
    // The number of sub-arrays or elements seen at each level (fixed by the
    // first sub-array at that level), and the depth elements sit at.
    let mut counts: Vec<Option<usize>> = Vec::new();
    let mut items = Vec::new();
    p.level(0, &mut counts, &mut items)?;
    p.skip_space();
    if p.i < p.c.len() {
        return Err(malformed(s, "Junk after closing right brace."));
    }
    let found: Vec<usize> = counts.iter().map(|c| c.unwrap_or(0)).collect();
    // Several empty sub-arrays (`{{},{}}`) are no array PostgreSQL reads.
    if items.is_empty() && found.len() > 1 && found[0] > 1 {
        return Err(malformed(s, "Unexpected \"}\" character."));
    }
    let dims = if items.is_empty() {
        Vec::new()
    } else {
        found
            .iter()
            .map(|n| Dim {
                len: *n as i32,
                lower: 1,
            })
            .collect()
    };
    match given {
        Some(g) => {
            let lens: Vec<usize> = g.iter().map(|d| d.len as usize).collect();
            if items.is_empty() && found.len() <= 1 {
                // `[1:0]={}` cannot be written (upper < lower); an empty
                // literal with bounds is refused as PostgreSQL does.
                return Err(malformed(
                    s,
                    "Specified array dimensions do not match array contents.",
                ));
            }
            if lens != found {
                return Err(malformed(
                    s,
                    "Specified array dimensions do not match array contents.",
                ));
            }
            check_dims(&g)?;
            Ok((g, items))
        }
        None => {
            check_dims(&dims)?;
            Ok((dims, items))
        }
    }
}

struct Lexer<'a> {
    s: &'a str,
    c: &'a [char],
    i: usize,
    /// The depth elements were found at.
    leaf: Option<usize>,
}

impl Lexer<'_> {
    fn peek(&self) -> Option<char> {
        self.c.get(self.i).copied()
    }
    fn next(&mut self) -> Option<char> {
        let c = self.peek();
        self.i += 1;
        c
    }
    fn skip_space(&mut self) {
        while self.peek().is_some_and(super::is_space) {
            self.i += 1;
        }
    }
    fn int(&mut self) -> Result<i64> {
        let start = self.i;
        if matches!(self.peek(), Some('-' | '+')) {
            self.i += 1;
        }
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.i += 1;
        }
        let t: String = self.c[start..self.i].iter().collect();
        t.parse::<i64>()
            .ok()
            .filter(|v| i32::try_from(*v).is_ok())
            .ok_or_else(|| malformed(self.s, "Array dimensions must be integers."))
    }

    fn unexpected(&self, c: Option<char>) -> EngineError {
        match c {
            Some(c) => malformed(self.s, &format!("Unexpected \"{c}\" character.")),
            None => malformed(self.s, "Unexpected end of input."),
        }
    }

    /// One `{...}` at `depth`: its children are all sub-arrays or all
    /// elements, as many as its siblings have.
    fn level(
        &mut self,
        depth: usize,
        counts: &mut Vec<Option<usize>>,
        items: &mut Vec<Option<String>>,
    ) -> Result<()> {
        if depth >= MAX_DIMS {
            return Err(limit(format!(
                "number of array dimensions ({}) exceeds the maximum allowed ({MAX_DIMS})",
                depth + 1
            )));
        }
        if counts.len() <= depth {
            counts.push(None);
        }
        self.i += 1; // '{'
        self.skip_space();
        let mut n = 0usize;
        if self.peek() == Some('}') {
            self.i += 1;
        } else {
            loop {
                self.skip_space();
                if self.peek() == Some('{') {
                    // Elements all sit at one depth, below every brace.
                    if self.leaf.is_some_and(|l| l <= depth) {
                        return Err(self.unexpected(Some('{')));
                    }
                    self.level(depth + 1, counts, items)?;
                } else {
                    if self.leaf.is_some_and(|l| l != depth) || counts.len() > depth + 1 {
                        return Err(self.unexpected(self.peek()));
                    }
                    self.leaf = Some(depth);
                    items.push(self.element()?);
                }
                n += 1;
                self.skip_space();
                match self.next() {
                    Some(',') => continue,
                    Some('}') => break,
                    c => return Err(self.unexpected(c)),
                }
            }
        }
        match counts[depth] {
            None => counts[depth] = Some(n),
            Some(m) if m == n => {}
            Some(_) => {
                return Err(malformed(
                    self.s,
                    "Multidimensional arrays must have sub-arrays with matching dimensions.",
                ))
            }
        }
        Ok(())
    }

    /// One element: quoted (backslash escapes), or unquoted up to `,` or
    /// `}` with trailing unescaped space dropped; `None` for NULL.
    fn element(&mut self) -> Result<Option<String>> {
        let mut text = String::new();
        let mut quoted = false;
        let mut escaped = false;
        // Length of `text` up to its last character that is not
        // unescaped trailing space.
        let mut keep = 0;
        if self.peek() == Some('"') {
            self.i += 1;
            quoted = true;
            loop {
                match self.next() {
                    Some('"') => break,
                    Some('\\') => match self.next() {
                        Some(c) => text.push(c),
                        None => return Err(self.unexpected(None)),
                    },
                    Some(c) => text.push(c),
                    None => return Err(self.unexpected(None)),
                }
            }
            keep = text.len();
        } else {
            loop {
                match self.peek() {
                    Some(',' | '}') => break,
                    Some(c @ ('"' | '{')) => {
                        self.i += 1;
                        return Err(self.unexpected(Some(c)));
                    }
                    Some('\\') => {
                        self.i += 1;
                        escaped = true;
                        match self.next() {
                            Some(c) => text.push(c),
                            None => return Err(self.unexpected(None)),
                        }
                        keep = text.len();
                    }
                    Some(c) => {
                        self.i += 1;
                        text.push(c);
                        if !super::is_space(c) {
                            keep = text.len();
                        }
                    }
                    None => return Err(self.unexpected(None)),
                }
            }
        }
        text.truncate(keep);
        let null = !quoted && !escaped && text.eq_ignore_ascii_case("null");
        if !quoted && !escaped && text.is_empty() {
            let c = self.peek();
            return Err(self.unexpected(c.or(Some(','))));
        }
        Ok((!null).then_some(text))
    }
}
