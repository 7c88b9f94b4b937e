//! The `pg_type` rows Walden's types map to, and `format_type`.

use super::oids::{enum_array_oid, enum_oid};
use walden_engine::DataType;

/// A row of `pg_type`.
pub(crate) struct PgType {
    pub(crate) oid: i64,
    pub(crate) name: &'static str,
    pub(crate) len: i64,
    /// `typcategory`.
    pub(crate) category: &'static str,
    pub(crate) collatable: bool,
}

pub(crate) const fn ty(
    oid: i64,
    name: &'static str,
    len: i64,
    category: &'static str,
    collatable: bool,
) -> PgType {
    PgType {
        oid,
        name,
        len,
        category,
        collatable,
    }
}

/// The types Walden's values take, plus the ones catalog columns use.
pub(crate) const TYPES: &[PgType] = &[
    ty(16, "bool", 1, "B", false),
    ty(17, "bytea", -1, "U", false),
    ty(18, "char", 1, "Z", false),
    ty(19, "name", 64, "S", true),
    ty(20, "int8", 8, "N", false),
    ty(21, "int2", 2, "N", false),
    ty(23, "int4", 4, "N", false),
    ty(25, "text", -1, "S", true),
    ty(26, "oid", 4, "N", false),
    ty(700, "float4", 4, "N", false),
    ty(701, "float8", 8, "N", false),
    ty(1042, "bpchar", -1, "S", true),
    ty(1043, "varchar", -1, "S", true),
    ty(1082, "date", 4, "D", false),
    ty(1083, "time", 8, "D", false),
    ty(1114, "timestamp", 8, "D", false),
    ty(1184, "timestamptz", 8, "D", false),
    ty(114, "json", -1, "U", false),
    ty(3802, "jsonb", -1, "U", false),
    ty(1186, "interval", 16, "T", false),
    ty(1700, "numeric", -1, "N", false),
    ty(2205, "regclass", 4, "N", false),
    ty(2206, "regtype", 4, "N", false),
    ty(2950, "uuid", 16, "U", false),
    ty(4089, "regnamespace", 4, "N", false),
];

/// PostgreSQL's pseudo-types that built-in functions' signatures name
/// (`pg_proc.prorettype`, `proargtypes`): `::regtype` and `format_type`
/// name them, as pgcli's function completion reads them. No value has
/// one of these types, and `pg_type` does not list them.
pub(crate) const PSEUDO_TYPES: &[(i64, &str)] = &[
    (2249, "record"),
    (2276, "\"any\""),
    (2277, "anyarray"),
    (2278, "void"),
    (2279, "trigger"),
    (2283, "anyelement"),
];

/// The PostgreSQL type OID and type modifier of a Walden column type (the
/// same mapping the wire server reports in RowDescription).
pub fn type_oid_and_mod(t: &DataType) -> (i64, i64) {
    match t {
        DataType::SmallInt => (21, -1),
        DataType::Int => (23, -1),
        DataType::BigInt => (20, -1),
        DataType::Bool => (16, -1),
        DataType::Real => (700, -1),
        DataType::Double => (701, -1),
        DataType::Decimal { precision, scale } if *precision > 0 => {
            // PostgreSQL's typmod: the scale's low 11 bits (negative
            // scales too).
            (
                1700,
                ((*precision as i64) << 16 | (*scale as i64 & 0x7ff)) + 4,
            )
        }
        DataType::Decimal { .. } => (1700, -1),
        DataType::Varchar(Some(n)) => (1043, *n as i64 + 4),
        DataType::Varchar(None) => (1043, -1),
        DataType::Text => (25, -1),
        DataType::Timestamp => (1114, -1),
        DataType::Date => (1082, -1),
        DataType::Uuid => (2950, -1),
        DataType::Bytes => (17, -1),
        DataType::TimestampTz => (1184, -1),
        DataType::Time => (1083, -1),
        DataType::Interval => (1186, -1),
        DataType::Char(0) => (1042, -1),
        DataType::Char(n) => (1042, *n as i64 + 4),
        DataType::Json => (114, -1),
        DataType::Jsonb => (3802, -1),
        DataType::Enum(e) => (enum_oid(e.id()), -1),
        DataType::Int2Vector => (22, -1),
        DataType::OidVector => (30, -1),
        DataType::Oid => (26, -1),
        DataType::PgChar => (18, -1),
        DataType::Name => (19, -1),
        // PostgreSQL's pseudo-type `record`.
        DataType::Record(_) => (2249, -1),
        DataType::Reg(k) => (reg_type_oid(*k), -1),
        DataType::Array(e) if matches!(**e, DataType::Enum(_)) => match &**e {
            DataType::Enum(e) => (enum_array_oid(e.id()), -1),
            _ => unreachable!(),
        },
        // An array column's typmod is its element's (`varchar(10)[]`: 14).
        DataType::Array(e) => {
            let (oid, typmod) = type_oid_and_mod(e);
            let array = walden_engine::types::array::array_oid_of(oid as u32).unwrap_or(0);
            (array as i64, typmod)
        }
    }
}

/// The type OID of a reg type.
pub fn reg_type_oid(k: walden_engine::RegKind) -> i64 {
    match k {
        walden_engine::RegKind::Class => 2205,
        walden_engine::RegKind::Type => 2206,
        walden_engine::RegKind::Namespace => 4089,
    }
}

/// The `pg_type.typname` of a type OID Walden's values take.
pub fn typname(oid: i64) -> Option<&'static str> {
    TYPES.iter().find(|t| t.oid == oid).map(|t| t.name)
}

/// `format_type(oid, typmod)`: the type's SQL name as PostgreSQL prints it
/// in `\d` (`integer`, `character varying(20)`, `numeric(12,2)`); `None`
/// for an unknown OID (PostgreSQL prints `???`).
pub fn format_type(oid: i64, typmod: Option<i64>) -> Option<String> {
    let m = typmod.filter(|m| *m >= 0);
    Some(match oid {
        16 => "boolean".into(),
        17 => "bytea".into(),
        18 => "\"char\"".into(),
        19 => "name".into(),
        20 => "bigint".into(),
        21 => "smallint".into(),
        23 => "integer".into(),
        25 => "text".into(),
        22 => "int2vector".into(),
        26 => "oid".into(),
        30 => "oidvector".into(),
        700 => "real".into(),
        701 => "double precision".into(),
        1042 => match m {
            Some(m) => format!("character({})", m - 4),
            None => "bpchar".into(),
        },
        1043 => match m {
            Some(m) => format!("character varying({})", m - 4),
            None => "character varying".into(),
        },
        1082 => "date".into(),
        1083 => match m {
            Some(p) => format!("time({p}) without time zone"),
            None => "time without time zone".into(),
        },
        // Fields in the high half (0x7FFF: all of them), precision low.
        1186 => match m {
            Some(m) if m & 0xFFFF != 0xFFFF && m >> 16 == 0x7FFF => {
                format!("interval({})", m & 0xFFFF)
            }
            _ => "interval".into(),
        },
        114 => "json".into(),
        3802 => "jsonb".into(),
        1114 => match m {
            Some(p) => format!("timestamp({p}) without time zone"),
            None => "timestamp without time zone".into(),
        },
        1184 => match m {
            Some(p) => format!("timestamp({p}) with time zone"),
            None => "timestamp with time zone".into(),
        },
        1700 => match m {
            Some(m) => format!("numeric({},{})", (m - 4) >> 16, (m - 4) & 0xffff),
            None => "numeric".into(),
        },
        2205 => "regclass".into(),
        2206 => "regtype".into(),
        2950 => "uuid".into(),
        4089 => "regnamespace".into(),
        other => match walden_engine::types::array::elem_oid_of(other as u32) {
            Some(elem) => format!("{}[]", format_type(elem as i64, typmod)?),
            None => PSEUDO_TYPES
                .iter()
                .find(|(o, _)| *o == other)
                .map(|(_, n)| n.to_string())?,
        },
    })
}

/// `oid::regtype` as text.
pub fn regtype_name(oid: i64) -> String {
    if oid == 0 {
        return "-".into();
    }
    match format_type(oid, None) {
        Some(n) => n,
        None => oid.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_names_match_postgres() {
        assert_eq!(format_type(23, Some(-1)).unwrap(), "integer");
        assert_eq!(
            format_type(1043, Some(24)).unwrap(),
            "character varying(20)"
        );
        assert_eq!(
            format_type(1700, Some((12 << 16 | 2) + 4)).unwrap(),
            "numeric(12,2)"
        );
        assert_eq!(
            format_type(1114, None).unwrap(),
            "timestamp without time zone"
        );
        assert!(format_type(123_456, None).is_none());
        for (t, want) in [
            (DataType::Varchar(Some(20)), "character varying(20)"),
            (
                DataType::Decimal {
                    precision: 12,
                    scale: 2,
                },
                "numeric(12,2)",
            ),
            (DataType::BigInt, "bigint"),
            (DataType::Text, "text"),
        ] {
            let (oid, m) = type_oid_and_mod(&t);
            assert_eq!(format_type(oid, Some(m)).unwrap(), want);
        }
    }
}
