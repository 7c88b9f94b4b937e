//! The type two columns of different types resolve to where PostgreSQL
//! picks one for both (the merged column of a USING or NATURAL join): its
//! rule over type categories and implicit casts, for Walden's types.

use super::*;

/// PostgreSQL's type categories, as far as the resolution needs them.
#[derive(PartialEq, Eq)]
enum Category {
    Numeric,
    String,
    DateTime,
    Other,
}

fn category(t: &DataType) -> Category {
    match t {
        DataType::SmallInt
        | DataType::Int
        | DataType::BigInt
        | DataType::Decimal { .. }
        | DataType::Real
        | DataType::Double
        | DataType::Oid => Category::Numeric,
        DataType::Text | DataType::Varchar(_) | DataType::Char(_) | DataType::Name => {
            Category::String
        }
        DataType::Date | DataType::Timestamp | DataType::TimestampTz | DataType::Time => {
            Category::DateTime
        }
        _ => Category::Other,
    }
}

/// Whether PostgreSQL 15 casts `from` to `to` implicitly (its pg_cast
/// entries with context `i`, between types of one category).
fn implicit(from: &DataType, to: &DataType) -> bool {
    use DataType as T;
    let rank = |t: &DataType| match t {
        T::SmallInt => Some(0),
        T::Int => Some(1),
        T::BigInt => Some(2),
        T::Decimal { .. } => Some(3),
        T::Real => Some(4),
        T::Double => Some(5),
        _ => None,
    };
    match (from, to) {
        (T::SmallInt | T::Int | T::BigInt, T::Oid) => true,
        (T::Text | T::Varchar(_) | T::Char(_), T::Text | T::Varchar(_) | T::Char(_) | T::Name) => {
            true
        }
        (T::Name, T::Text) => true,
        (T::Date, T::Timestamp | T::TimestampTz) | (T::Timestamp, T::TimestampTz) => true,
        _ => matches!((rank(from), rank(to)), (Some(a), Some(b)) if a < b),
    }
}

fn same_type(a: &DataType, b: &DataType) -> bool {
    std::mem::discriminant(a) == std::mem::discriminant(b)
}

fn name_of(t: &DataType) -> String {
    crate::pg_catalog::regtype_name(crate::pg_catalog::type_oid_and_mod(t).0)
}

/// The merged column's type of a USING join column of types `l` and `r`:
/// the left one unless PostgreSQL casts it implicitly to the right one and
/// not back (a left `text` or `double precision`, the preferred types,
/// stays). Types of different categories are 42804, as there; types of
/// one category with no cast between them (date and time) cannot be
/// compared, 42883.
pub(super) fn using_type(l: &DataType, r: &DataType) -> Result<DataType> {
    if l == r {
        return Ok(l.clone());
    }
    let (lc, rc) = (category(l), category(r));
    let chosen = if same_type(l, r) && lc != Category::Other {
        l
    } else if lc != rc || (lc == Category::Other && !same_type(l, r)) {
        return Err(SqlError::new(
            ErrorKind::DatatypeMismatch,
            format!(
                "JOIN/USING types {} and {} cannot be matched",
                name_of(l),
                name_of(r)
            ),
        ));
    } else if !implicit(l, r) && !implicit(r, l) {
        return Err(SqlError::new(
            ErrorKind::UndefinedFunction,
            format!("operator does not exist: {} = {}", name_of(l), name_of(r)),
        ));
    } else if !matches!(l, DataType::Text | DataType::Double | DataType::TimestampTz)
        && implicit(l, r)
        && !implicit(r, l)
    {
        r
    } else {
        l
    };
    // The two differ, so the result keeps no type modifier, as
    // PostgreSQL's (char(n) keeps its own: Walden has no unsized bpchar).
    Ok(match chosen {
        DataType::Varchar(_) => DataType::Varchar(None),
        DataType::Decimal { .. } => DataType::Decimal {
            precision: 0,
            scale: 0,
        },
        other => other.clone(),
    })
}
