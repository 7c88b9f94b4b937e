//! Arrays in PostgreSQL's text form (`{a,"b c",NULL}`), Walden's stand-in for array types.

use walden_engine::types::array;
use walden_engine::Value;

/// Parses a one-dimensional `{a,"b c",NULL}`; `None` if the text is not one.
/// The scan is the engine's, which reads array input as PostgreSQL does.
pub fn array_parse(s: &str) -> Option<Vec<Option<String>>> {
    array::split_literal(s).ok()
}

/// Formats elements as an array literal, quoting where PostgreSQL does.
pub fn array_format<'a>(items: impl IntoIterator<Item = Option<&'a str>>) -> String {
    let mut out = String::from("{");
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        match item {
            None => out.push_str("NULL"),
            Some(s) => array::push_element(&mut out, s),
        }
    }
    out.push('}');
    out
}

/// Elements of an array value (its text form); a scalar is a one-element
/// array, NULL has none.
pub fn array_elements(v: &Value) -> Vec<Option<String>> {
    match v {
        Value::Null => vec![],
        Value::Text(s) => array_parse(s).unwrap_or_else(|| vec![Some(s.to_string())]),
        Value::Array(items) => items
            .iter()
            .map(|v| (!v.is_null()).then(|| v.to_string()))
            .collect(),
        other => vec![Some(other.to_string())],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrays_round_trip_in_text_form() {
        let items = [Some("a"), Some("b c"), None, Some(""), Some("x\"y")];
        let s = array_format(items);
        assert_eq!(s, r#"{a,"b c",NULL,"","x\"y"}"#);
        let back = array_parse(&s).unwrap();
        assert_eq!(
            back,
            items
                .iter()
                .map(|x| x.map(String::from))
                .collect::<Vec<_>>()
        );
        assert_eq!(array_parse("{}").unwrap(), vec![]);
        assert_eq!(
            array_parse("{1, 2}").unwrap(),
            vec![Some("1".into()), Some("2".into())]
        );
        assert!(array_parse("not an array").is_none());
        assert!(array_parse("{\"unterminated}").is_none());
    }
}
