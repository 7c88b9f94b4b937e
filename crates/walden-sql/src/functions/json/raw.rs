//! Navigation inside `json` values by their text: PostgreSQL's json
//! operators and json_each / json_array_elements return a sub-value's own
//! text (its spacing kept), and an object's pairs in input order with
//! duplicates; jsonb's normalized tree cannot give either.

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use std::fmt;

/// An object's pairs as written.
pub struct Pairs<'a>(pub Vec<(String, &'a RawValue)>);

impl<'de> Deserialize<'de> for Pairs<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Pairs<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut m: M) -> Result<Pairs<'de>, M::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = m.next_entry::<String, &'de RawValue>()? {
                    out.push((k, v));
                }
                Ok(Pairs(out))
            }
        }
        d.deserialize_map(V)
    }
}

/// The pairs of an object (`None` for any other value).
pub fn pairs(s: &str) -> Option<Vec<(String, &str)>> {
    let p: Pairs<'_> = serde_json::from_str(s).ok()?;
    Some(p.0.into_iter().map(|(k, v)| (k, v.get())).collect())
}

/// The elements of an array (`None` for any other value).
pub fn elements(s: &str) -> Option<Vec<&str>> {
    let v: Vec<&RawValue> = serde_json::from_str(s).ok()?;
    Some(v.into_iter().map(RawValue::get).collect())
}

/// A field (the last of equal keys, as PostgreSQL) of an object.
pub fn field<'a>(s: &'a str, key: &str) -> Option<&'a str> {
    pairs(s)?
        .into_iter()
        .rev()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v)
}

/// Element `i` of an array; negative counts from the end.
pub fn element(s: &str, i: i64) -> Option<&str> {
    let e = elements(s)?;
    let i = if i < 0 { e.len() as i64 + i } else { i };
    usize::try_from(i).ok().and_then(|i| e.get(i).copied())
}

/// One step of a path: a key of an object or an index of an array.
pub fn step<'a>(s: &'a str, key: &str) -> Option<&'a str> {
    match s.trim_start().as_bytes().first() {
        Some(b'{') => field(s, key),
        Some(b'[') => element(s, key.trim().parse().ok()?),
        _ => None,
    }
}

/// `->>`'s text of a sub-value: a string unescaped, null as SQL NULL,
/// anything else as written.
pub fn as_text(raw: &str) -> Option<String> {
    match raw.as_bytes().first() {
        Some(b'"') => serde_json::from_str::<String>(raw).ok(),
        _ if raw == "null" => None,
        _ => Some(raw.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sub_values_keep_their_text() {
        // As PostgreSQL 15 returns them.
        let s = r#"{"a": [1,  2], "a": {"b" :  1}, "s": "x\ny", "n": null}"#;
        assert_eq!(field(s, "a"), Some(r#"{"b" :  1}"#));
        assert_eq!(step(r#"[ {"b" :  1} ]"#, "-1"), Some(r#"{"b" :  1}"#));
        assert_eq!(as_text(field(s, "s").unwrap()).as_deref(), Some("x\ny"));
        assert_eq!(as_text(field(s, "n").unwrap()), None);
        assert_eq!(pairs(s).unwrap().len(), 4);
        assert_eq!(elements("[ 1 , {\"a\" :1}]").unwrap(), ["1", "{\"a\" :1}"]);
        assert_eq!(field("[1]", "a"), None);
    }
}
