//! Enum types (`CREATE TYPE name AS ENUM (...)`): their labels and the
//! order between them.
//!
//! Each label has a sort position (PostgreSQL's `pg_enum.enumsortorder`):
//! 1, 2, 3... at creation, the midpoint of its neighbours when a value is
//! added BEFORE or AFTER another. A value carries its label's position, so
//! values compare, and encode as keys, in declaration order without the
//! catalog; positions never change once given, so stored values and index
//! entries stay right when labels are added.

use super::Value;
use crate::error::{EngineError, Result};
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// One label of an enum type.
#[derive(Clone, Debug, PartialEq)]
pub struct EnumLabel {
    pub name: String,
    /// Its position among the type's labels (`enumsortorder`).
    pub sort: f64,
    /// Its number within the type, in the order labels were added (names
    /// the label's OID).
    pub member: u32,
}

/// An enum type's definition.
#[derive(Clone, Debug, PartialEq)]
pub struct EnumType {
    /// From the tables' id space (it names the type's OID).
    pub id: u32,
    pub name: String,
    /// In sort order.
    pub labels: Vec<EnumLabel>,
}

/// Longest label PostgreSQL takes (NAMEDATALEN - 1).
const MAX_LABEL: usize = 63;

fn check_label(l: &str) -> Result<()> {
    if l.is_empty() || l.len() > MAX_LABEL {
        return Err(EngineError::InvalidEnumLabel {
            label: l.to_string(),
        });
    }
    Ok(())
}

impl EnumType {
    /// A new type with these labels in this order.
    pub fn new(name: &str, labels: &[String]) -> Result<EnumType> {
        let mut out = EnumType {
            id: 0,
            name: name.to_string(),
            labels: Vec::with_capacity(labels.len()),
        };
        for (i, l) in labels.iter().enumerate() {
            check_label(l)?;
            if out.label(l).is_some() {
                return Err(EngineError::EnumLabelExists(l.clone()));
            }
            out.labels.push(EnumLabel {
                name: l.clone(),
                sort: (i + 1) as f64,
                member: i as u32,
            });
        }
        Ok(out)
    }

    pub fn label(&self, name: &str) -> Option<&EnumLabel> {
        self.labels.iter().find(|l| l.name == name)
    }

    /// The value of label `s`, or PostgreSQL's 22P02 for text that is none.
    pub fn value_of(&self, s: &str) -> Result<Value> {
        match self.label(s) {
            Some(l) => Ok(Value::Enum(l.sort, Arc::from(s))),
            None => Err(EngineError::Data(format!(
                "invalid input value for enum {}: \"{s}\"",
                self.name
            ))),
        }
    }

    /// The type with label `new` added: last, or just before or after
    /// label `neighbour` (`after` says which). `None`: `new` exists and
    /// `if_not_exists` was given, so nothing changes.
    pub fn with_label(
        &self,
        new: &str,
        neighbour: Option<(&str, bool)>,
        if_not_exists: bool,
    ) -> Result<Option<EnumType>> {
        check_label(new)?;
        if self.label(new).is_some() {
            if if_not_exists {
                return Ok(None);
            }
            return Err(EngineError::EnumLabelExists(new.to_string()));
        }
        let (at, sort) = match neighbour {
            None => (
                self.labels.len(),
                self.labels.last().map_or(1.0, |l| l.sort + 1.0),
            ),
            Some((n, after)) => {
                let i = self
                    .labels
                    .iter()
                    .position(|l| l.name == n)
                    .ok_or_else(|| EngineError::UnknownEnumLabel(n.to_string()))?;
                let (lo, hi, at) = if after {
                    let hi = self.labels.get(i + 1).map(|l| l.sort);
                    (Some(self.labels[i].sort), hi, i + 1)
                } else {
                    let lo = i.checked_sub(1).map(|j| self.labels[j].sort);
                    (lo, Some(self.labels[i].sort), i)
                };
                let sort = match (lo, hi) {
                    (Some(lo), Some(hi)) => (lo + hi) / 2.0,
                    (Some(lo), None) => lo + 1.0,
                    (None, Some(hi)) => hi - 1.0,
                    (None, None) => 1.0,
                };
                // Positions are never renumbered (stored values carry
                // them), so a gap split until no double lies inside it
                // cannot take another label.
                if lo.is_some_and(|lo| sort <= lo) || hi.is_some_and(|hi| sort >= hi) {
                    return Err(EngineError::EnumOrderExhausted(self.name.clone()));
                }
                (at, sort)
            }
        };
        let mut out = self.clone();
        let member = self.labels.iter().map(|l| l.member + 1).max().unwrap_or(0);
        out.labels.insert(
            at,
            EnumLabel {
                name: new.to_string(),
                sort,
                member,
            },
        );
        Ok(Some(out))
    }

    /// The type with label `old` renamed `new`.
    pub fn with_renamed_label(&self, old: &str, new: &str) -> Result<EnumType> {
        check_label(new)?;
        if old != new && self.label(new).is_some() {
            return Err(EngineError::EnumLabelExists(new.to_string()));
        }
        let mut out = self.clone();
        let l = out
            .labels
            .iter_mut()
            .find(|l| l.name == old)
            .ok_or_else(|| EngineError::UnknownEnumLabel(old.to_string()))?;
        l.name = new.to_string();
        Ok(out)
    }
}

/// An enum type as a column's type: the definition as of the column's
/// table definition (replaced in every table using it when the type
/// changes). Two refer to the same type when their ids are equal.
#[derive(Clone, Debug)]
pub struct EnumRef(pub Arc<EnumType>);

impl EnumRef {
    pub fn id(&self) -> u32 {
        self.0.id
    }
}

impl std::ops::Deref for EnumRef {
    type Target = EnumType;
    fn deref(&self) -> &EnumType {
        &self.0
    }
}

impl PartialEq for EnumRef {
    fn eq(&self, other: &Self) -> bool {
        self.0.id == other.0.id
    }
}

impl Eq for EnumRef {}

impl Hash for EnumRef {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.id.hash(state);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mood() -> EnumType {
        EnumType::new("mood", &["sad".into(), "ok".into(), "happy".into()]).unwrap()
    }

    #[test]
    fn labels_added_between_keep_the_order() {
        let t = mood();
        let t = t
            .with_label("meh", Some(("ok", false)), false)
            .unwrap()
            .unwrap();
        let names: Vec<_> = t.labels.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["sad", "meh", "ok", "happy"]);
        assert_eq!(t.label("meh").unwrap().sort, 1.5);
        let t = t
            .with_label("first", Some(("sad", false)), false)
            .unwrap()
            .unwrap();
        assert_eq!(t.label("first").unwrap().sort, 0.0);
        let t = t.with_label("last", None, false).unwrap().unwrap();
        assert_eq!(t.label("last").unwrap().sort, 4.0);
        let vals: Vec<Value> = ["last", "meh", "first", "sad"]
            .iter()
            .map(|l| t.value_of(l).unwrap())
            .collect();
        let mut sorted = vals.clone();
        sorted.sort();
        let shown: Vec<String> = sorted.iter().map(|v| v.to_string()).collect();
        assert_eq!(shown, ["first", "sad", "meh", "last"]);
    }

    #[test]
    fn a_gap_split_too_often_is_refused() {
        let mut t = mood();
        let mut refused = false;
        for i in 0..80 {
            match t.with_label(&format!("x{i}"), Some(("ok", false)), false) {
                Ok(Some(n)) => t = n,
                Err(EngineError::EnumOrderExhausted(_)) => {
                    refused = true;
                    break;
                }
                other => panic!("{other:?}"),
            }
        }
        assert!(refused);
    }

    #[test]
    fn bad_input_and_duplicates() {
        let t = mood();
        let e = t.value_of("x").unwrap_err().to_string();
        assert_eq!(e, "invalid input value for enum mood: \"x\"");
        assert!(matches!(
            t.with_label("ok", None, false),
            Err(EngineError::EnumLabelExists(_))
        ));
        assert!(t.with_label("ok", None, true).unwrap().is_none());
        assert!(matches!(
            t.with_renamed_label("nope", "x"),
            Err(EngineError::UnknownEnumLabel(_))
        ));
    }

    #[test]
    fn keys_and_records_keep_positions_and_labels() {
        use crate::store::keycode::{decode_key, key_bytes};
        let t = mood()
            .with_label("meh", Some(("ok", false)), false)
            .unwrap()
            .unwrap();
        let vals: Vec<Value> = ["happy", "meh", "sad", "ok"]
            .iter()
            .map(|l| t.value_of(l).unwrap())
            .collect();
        let mut by_key = vals.clone();
        by_key.sort_by_key(|v| key_bytes(std::slice::from_ref(v)));
        let mut by_value = vals.clone();
        by_value.sort();
        assert_eq!(by_key, by_value);
        for v in &vals {
            let back = decode_key(&key_bytes(std::slice::from_ref(v))).unwrap();
            assert_eq!(back[0].to_string(), v.to_string());
            let mut rec = Vec::new();
            crate::codec::put_value(&mut rec, v);
            let got = crate::codec::Reader::new(&rec).value().unwrap();
            assert_eq!((got.to_string(), got == *v), (v.to_string(), true));
        }
        let mut rec = Vec::new();
        crate::codec::put_enum(&mut rec, &t);
        assert_eq!(
            crate::codec::get_enum(&mut crate::codec::Reader::new(&rec)).unwrap(),
            t
        );
    }
}
