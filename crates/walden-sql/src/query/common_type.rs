//! The type values of different types resolve to where PostgreSQL picks
//! one for all of them: the branches of a UNION, INTERSECT or EXCEPT, the
//! rows of a VALUES list, the results of a CASE, the arguments of
//! COALESCE, GREATEST and LEAST, the elements of ARRAY[...], and the
//! merged column of a USING or NATURAL join. Its rule over type
//! categories, preferred types and implicit casts, for Walden's types.

use super::*;

/// PostgreSQL's type categories (pg_type.typcategory), as far as the
/// resolution needs them.
#[derive(PartialEq, Eq, Clone, Copy)]
enum Category {
    Numeric,
    String,
    DateTime,
    Timespan,
    Boolean,
    User,
    Array,
    Enum,
    Other,
}

fn category(t: &DataType) -> Category {
    use DataType as T;
    match t {
        T::SmallInt | T::Int | T::BigInt | T::Decimal { .. } | T::Real | T::Double | T::Oid => {
            Category::Numeric
        }
        T::Reg(_) => Category::Numeric,
        T::Text | T::Varchar(_) | T::Char(_) | T::Name => Category::String,
        T::Date | T::Timestamp | T::TimestampTz | T::Time => Category::DateTime,
        T::Interval => Category::Timespan,
        T::Bool => Category::Boolean,
        T::Uuid | T::Bytes | T::Json | T::Jsonb => Category::User,
        T::Array(_) | T::Int2Vector | T::OidVector => Category::Array,
        T::Enum(_) => Category::Enum,
        T::PgChar | T::Record(_) => Category::Other,
    }
}

/// The preferred type of its category (pg_type.typispreferred).
pub(crate) fn preferred(t: &DataType) -> bool {
    use DataType as T;
    matches!(
        t,
        T::Double | T::Oid | T::Text | T::TimestampTz | T::Interval | T::Bool
    )
}

/// Whether PostgreSQL 15 casts `from` to `to` implicitly (its pg_cast
/// entries with context `i`; an array's through its elements').
pub(crate) fn implicit(from: &DataType, to: &DataType) -> bool {
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
        _ if same_type(from, to) && !matches!(from, T::Array(_) | T::Enum(_) | T::Record(_)) => {
            true
        }
        (T::Array(a), T::Array(b)) => a == b || implicit(a, b),
        (T::Enum(a), T::Enum(b)) => a == b,
        (T::SmallInt | T::Int | T::BigInt | T::Oid, T::Reg(_)) | (T::Reg(_), T::Oid) => true,
        (T::SmallInt | T::Int | T::BigInt, T::Oid) => true,
        (T::Text | T::Varchar(_), T::Reg(walden_engine::RegKind::Class)) => true,
        (T::Text | T::Varchar(_) | T::Char(_), T::Text | T::Varchar(_) | T::Char(_) | T::Name) => {
            true
        }
        (T::Name | T::PgChar, T::Text) => true,
        (T::Date, T::Timestamp | T::TimestampTz) | (T::Timestamp, T::TimestampTz) => true,
        (T::Time, T::Interval) => true,
        _ => matches!((rank(from), rank(to)), (Some(a), Some(b)) if a < b),
    }
}

/// Whether two types are of one category (pg_type.typcategory); and
/// whether the first is a string type.
pub(crate) fn same_category(a: &DataType, b: &DataType) -> bool {
    category(a) == category(b)
}

pub(crate) fn string_category(t: &DataType) -> bool {
    category(t) == Category::String
}

pub(crate) fn same_type(a: &DataType, b: &DataType) -> bool {
    match (a, b) {
        (DataType::Array(x), DataType::Array(y)) => same_type(x, y),
        _ => {
            std::mem::discriminant(a) == std::mem::discriminant(b) && {
                !matches!(
                    a,
                    DataType::Enum(_) | DataType::Record(_) | DataType::Reg(_)
                ) || a == b
            }
        }
    }
}

fn name_of(t: &DataType) -> String {
    crate::types::regtype_name(crate::types::type_oid_and_mod(t).0)
}

/// `t` without its type modifier, as a resolved type of inputs whose
/// modifiers differ is (char(n) becomes bpchar, `Char(0)`).
pub(crate) fn unmodified(t: &DataType) -> DataType {
    match t {
        DataType::Varchar(_) => DataType::Varchar(None),
        DataType::Char(_) => DataType::Char(0),
        DataType::Decimal { .. } => DataType::Decimal {
            precision: 0,
            scale: 0,
        },
        DataType::Array(e) => DataType::Array(Box::new(unmodified(e))),
        other => other.clone(),
    }
}

/// The common type of `types` (`None` for PostgreSQL's unknown: a quoted
/// literal, a NULL, an untyped parameter), as PostgreSQL's
/// select_common_type picks it: the first known type, replaced by a later
/// one of its category that it casts to implicitly (and not back) unless
/// it is its category's preferred type. Inputs of different categories
/// are 42804 "`context` types X and Y cannot be matched"; one that does
/// not cast implicitly to the choice is 42846. All unknown is text.
pub(crate) fn select_common(types: &[Option<DataType>], context: &str) -> Result<DataType> {
    let known: Vec<&DataType> = types.iter().flatten().collect();
    let Some(&first) = known.first() else {
        return Ok(DataType::Text);
    };
    // An unknown input has no type modifier, so the result has none
    // either (`COALESCE(v, 'abcdef')` over a varchar(3) is varchar).
    if known.iter().all(|t| *t == first) {
        return Ok(if known.len() < types.len() {
            unmodified(first)
        } else {
            first.clone()
        });
    }
    let mut chosen = first;
    for &next in &known[1..] {
        if same_type(next, chosen) {
            continue;
        }
        if category(next) != category(chosen) {
            return Err(SqlError::new(
                ErrorKind::DatatypeMismatch,
                format!(
                    "{context} types {} and {} cannot be matched",
                    name_of(chosen),
                    name_of(next)
                ),
            ));
        }
        if !preferred(chosen) && implicit(chosen, next) && !implicit(next, chosen) {
            chosen = next;
        }
    }
    let result = unmodified(chosen);
    if let Some(bad) = known.iter().find(|t| !implicit(t, &result)) {
        return Err(SqlError::new(
            ErrorKind::CannotCoerce,
            format!(
                "{context} could not convert type {} to {}",
                name_of(bad),
                name_of(&result)
            ),
        ));
    }
    Ok(result)
}

/// Whether a value of type `from` must be cast to become the resolved
/// type `to` (not when only a type modifier differs: the value fits).
pub(crate) fn needs_cast(from: &DataType, to: &DataType) -> bool {
    !same_type(from, to)
}

/// The merged column's type of a USING join column of types `l` and `r`.
/// Types of one category with no implicit cast between them (date and
/// time) fail on the join's `=` first, 42883, as PostgreSQL's.
pub(super) fn using_type(l: &DataType, r: &DataType) -> Result<DataType> {
    if !same_type(l, r) && category(l) == category(r) && !implicit(l, r) && !implicit(r, l) {
        return Err(SqlError::new(
            ErrorKind::UndefinedFunction,
            format!("operator does not exist: {} = {}", name_of(l), name_of(r)),
        ));
    }
    select_common(&[Some(l.clone()), Some(r.clone())], "JOIN/USING")
}

/// Whether a value of type `from` loses its trailing blanks becoming `to`:
/// char(n) cast to text, varchar or name (PostgreSQL's rtrim casts, so
/// `'ab'::char(4)::text` is `ab`).
pub(crate) fn drops_blanks(from: &DataType, to: &DataType) -> bool {
    matches!(from, DataType::Char(_))
        && matches!(to, DataType::Text | DataType::Varchar(_) | DataType::Name)
}

/// How a set operation's branch column becomes the common type.
#[derive(Debug, Clone)]
pub struct ColumnCast {
    pub to: DataType,
    /// The branch's column is char(n) and the common type a string type
    /// without blank padding: trailing blanks go first.
    pub unpad: bool,
}

impl ColumnCast {
    pub(crate) fn new(from: &DataType, to: &DataType) -> ColumnCast {
        ColumnCast {
            to: to.clone(),
            unpad: drops_blanks(from, to),
        }
    }
}

/// Whether PostgreSQL finds a comparison operator for values of types `a`
/// and `b`: the same type, or a type both cast to implicitly (int8 and
/// numeric meet in numeric, `"char"` and varchar in text). Arrays,
/// records, enums and json have rules of their own and are not judged here.
pub(crate) fn comparable(a: &DataType, b: &DataType) -> bool {
    use DataType as T;
    let own_rules = |t: &DataType| {
        matches!(
            t,
            T::Array(_) | T::Record(_) | T::Enum(_) | T::Json | T::Int2Vector | T::OidVector
        )
    };
    if own_rules(a) || own_rules(b) || same_type(a, b) {
        return true;
    }
    let meeting = [
        a.clone(),
        b.clone(),
        T::Text,
        T::Double,
        T::TimestampTz,
        T::Interval,
        T::Oid,
    ];
    meeting.iter().any(|t| implicit(a, t) && implicit(b, t))
}

/// PostgreSQL's name of a type in messages (`bigint`, `text`).
pub(crate) fn type_name(t: &DataType) -> String {
    name_of(t)
}
