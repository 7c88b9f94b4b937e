//! `THROW` and `RAISERROR`: errors (and, below severity 11, messages) a
//! batch raises itself, with RAISERROR's printf-style message formats.

use super::*;

impl<'h, H: Host> Runner<'h, H> {
    /// The error `THROW` raises: the CATCH block's own without arguments.
    pub(super) fn throw(&mut self, args: Option<&[String; 3]>) -> Result<SqlError> {
        let Some([n, m, s]) = args else {
            return match self.caught.last() {
                Some(c) => {
                    let e = c.error.clone();
                    if e.kind == ErrorKind::RaiseException {
                        self.raised = Some((e.message.clone(), c.number, c.severity, c.state));
                    }
                    Ok(e)
                }
                None => Err(SqlError::syntax(
                    "THROW without parameters should only be used inside a CATCH block.",
                )),
            };
        };
        let number = self.int_arg(n)?;
        if number < 50000 {
            return Err(SqlError::new(
                ErrorKind::InvalidParameter,
                format!(
                    "Error number {number} in the THROW statement is outside the valid range. Specify an error number in the valid range of 50000 to 2147483647."
                ),
            ));
        }
        let message = self.text_arg(m)?;
        let state = self.int_arg(s)?;
        self.raised = Some((message.clone(), number, 16, state));
        Ok(SqlError::new(ErrorKind::RaiseException, message))
    }

    /// `RAISERROR (message, severity, state, args...)`: an error from
    /// severity 11 up, a message (as PRINT's) below.
    pub(super) fn raiserror(&mut self, args: &[String]) -> Result<()> {
        let msg = self.eval(&args[0])?;
        if matches!(msg, Value::Int(_)) {
            return Err(SqlError::unsupported(
                "RAISERROR with a message number (sys.messages)",
            ));
        }
        let format = self.text_of(msg)?;
        let severity = self.int_arg(&args[1])?;
        let state = self.int_arg(&args[2])?;
        let mut values = Vec::new();
        for a in &args[3..] {
            values.push(self.eval(a)?);
        }
        let message = format_message(&format, &values);
        if severity <= 10 {
            self.notices.push(message);
            return Ok(());
        }
        if severity > 18 {
            return Err(SqlError::new(
                ErrorKind::InsufficientPrivilege,
                "Error severity levels greater than 18 can only be specified by members of the sysadmin role, using the WITH LOG option.",
            ));
        }
        self.raised = Some((message.clone(), 50000, severity, state));
        Err(SqlError::new(ErrorKind::RaiseException, message))
    }

    fn int_arg(&mut self, e: &str) -> Result<i64> {
        match crate::functions::cast(self.eval(e)?, &DataType::BigInt)? {
            Value::Null => Ok(0),
            v => Ok(v.as_i64().unwrap_or(0)),
        }
    }

    fn text_arg(&mut self, e: &str) -> Result<String> {
        let v = self.eval(e)?;
        self.text_of(v)
    }

    fn text_of(&self, v: Value) -> Result<String> {
        Ok(match crate::functions::cast(v, &DataType::Text)? {
            Value::Null => String::new(),
            v => v.to_string(),
        })
    }
}

/// RAISERROR's message: `%d %i %u %s %x %X %o` (with flags, width and
/// precision, `*` not supported) take the arguments in turn; `%%` is `%`.
pub(super) fn format_message(f: &str, args: &[Value]) -> String {
    let mut out = String::new();
    let mut it = f.chars().peekable();
    let mut next = args.iter();
    while let Some(c) = it.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        if it.peek() == Some(&'%') {
            it.next();
            out.push('%');
            continue;
        }
        let mut spec = String::new();
        while let Some(&d) = it.peek() {
            if "-+ 0#".contains(d) || d.is_ascii_digit() || d == '.' {
                spec.push(d);
                it.next();
            } else {
                break;
            }
        }
        // Size modifiers (h, l, I64) change nothing here.
        while matches!(it.peek(), Some('h' | 'l' | 'I' | '6' | '4')) {
            it.next();
        }
        let Some(conv) = it.next() else {
            out.push('%');
            out.push_str(&spec);
            break;
        };
        let v = next.next().cloned().unwrap_or(Value::Null);
        let body = match (conv, &v) {
            (_, Value::Null) => "(null)".to_string(),
            ('d' | 'i' | 'u', v) => v
                .as_i64()
                .map(|i| i.to_string())
                .unwrap_or_else(|| v.to_string()),
            ('x', v) => v.as_i64().map(|i| format!("{i:x}")).unwrap_or_default(),
            ('X', v) => v.as_i64().map(|i| format!("{i:X}")).unwrap_or_default(),
            ('o', v) => v.as_i64().map(|i| format!("{i:o}")).unwrap_or_default(),
            ('s', v) => v.to_string(),
            (c, _) => format!("%{spec}{c}"),
        };
        let (left, rest) = match spec.strip_prefix('-') {
            Some(r) => (true, r.to_string()),
            None => (false, spec.clone()),
        };
        let (width, precision) = match rest.split_once('.') {
            Some((w, p)) => (
                w.trim_start_matches(['+', ' ', '#', '0'])
                    .parse()
                    .unwrap_or(0),
                p.parse().ok(),
            ),
            None => (
                rest.trim_start_matches(['+', ' ', '#', '0'])
                    .parse()
                    .unwrap_or(0usize),
                None,
            ),
        };
        let body = match precision {
            Some(p) if conv == 's' => body.chars().take(p).collect(),
            _ => body,
        };
        let pad = width.saturating_sub(body.chars().count());
        if left {
            out.push_str(&body);
            out.push_str(&" ".repeat(pad));
        } else {
            out.push_str(&" ".repeat(pad));
            out.push_str(&body);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raiserror_formats() {
        let a = [Value::Int(5), Value::text("ab")];
        assert_eq!(format_message("n=%d s=%s 100%%", &a), "n=5 s=ab 100%");
        assert_eq!(format_message("[%5d][%-4s]", &a), "[    5][ab  ]");
        assert_eq!(format_message("%d %s", &[]), "(null) (null)");
    }
}
