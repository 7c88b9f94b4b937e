//! `pg_proc`'s rows: the built-in functions Walden implements, with
//! PostgreSQL 15's OIDs, argument and result types, so that psql's `\df`,
//! pgjdbc's `getFunctions` and completion lists find them as in
//! PostgreSQL. Only the overloads Walden evaluates are listed (PostgreSQL's
//! `length(bytea)` or `lower(anyrange)` are not); every row is called by
//! `crates/walden/tests/it/psql_describe.rs`, which fails on a listed function
//! Walden does not run. Walden has no user-defined functions.

use super::rows::{b, i, t, NULL};
use super::{NS_PG_CATALOG, OWNER_OID};
use walden_engine::Value;

/// One built-in function as `pg_proc` shows it.
pub(super) struct BuiltinProc {
    pub oid: i64,
    pub name: &'static str,
    /// `provolatile`: `i`mmutable, `s`table or `v`olatile.
    volatile: u8,
    strict: bool,
    result: i64,
    args: &'static [i64],
    /// What `pg_get_function_result` and `pg_get_function_arguments` show.
    result_text: &'static str,
    args_text: &'static str,
}

// One argument a column of the table below, which reads best positional.
#[allow(clippy::too_many_arguments)]
const fn p(
    oid: i64,
    name: &'static str,
    volatile: u8,
    strict: bool,
    result: i64,
    args: &'static [i64],
    result_text: &'static str,
    args_text: &'static str,
) -> BuiltinProc {
    BuiltinProc {
        oid,
        name,
        volatile,
        strict,
        result,
        args,
        result_text,
        args_text,
    }
}

/// PostgreSQL's `"any"` pseudo-type: the element type of a `VARIADIC "any"`.
const ANY: i64 = 2276;
/// `prolang` of internal functions.
const LANG_INTERNAL: i64 = 12;

/// One line a function (rustfmt would spread each over ten).
#[rustfmt::skip]
pub(super) const BUILTIN_PROCS: &[BuiltinProc] = &[
    p(1394, "abs", b'i', true, 700, &[700], "real", "real"),
    p(1395, "abs", b'i', true, 701, &[701], "double precision", "double precision"),
    p(1396, "abs", b'i', true, 20, &[20], "bigint", "bigint"),
    p(1397, "abs", b'i', true, 23, &[23], "integer", "integer"),
    p(1398, "abs", b'i', true, 21, &[21], "smallint", "smallint"),
    p(1705, "abs", b'i', true, 1700, &[1700], "numeric", "numeric"),
    p(1620, "ascii", b'i', true, 23, &[25], "integer", "text"),
    p(884, "btrim", b'i', true, 25, &[25, 25], "text", "text, text"),
    p(885, "btrim", b'i', true, 25, &[25], "text", "text"),
    p(3179, "cardinality", b'i', true, 23, &[2277], "integer", "anyarray"),
    p(1711, "ceil", b'i', true, 1700, &[1700], "numeric", "numeric"),
    p(2308, "ceil", b'i', true, 701, &[701], "double precision", "double precision"),
    p(1381, "char_length", b'i', true, 23, &[25], "integer", "text"),
    p(1621, "chr", b'i', true, 25, &[23], "text", "integer"),
    p(2649, "clock_timestamp", b'v', true, 1184, &[], "timestamp with time zone", ""),
    p(3058, "concat", b's', false, 25, &[2276], "text", r#"VARIADIC "any""#),
    p(3059, "concat_ws", b's', false, 25, &[25, 2276], "text", r#"text, VARIADIC "any""#),
    p(861, "current_database", b's', true, 19, &[], "name", ""),
    p(1402, "current_schema", b's', true, 19, &[], "name", ""),
    p(1403, "current_schemas", b's', true, 1003, &[16], "name[]", "boolean"),
    p(2077, "current_setting", b's', true, 25, &[25], "text", "text"),
    p(3294, "current_setting", b's', true, 25, &[25, 16], "text", "text, boolean"),
    p(1217, "date_trunc", b's', true, 1184, &[25, 1184], "timestamp with time zone", "text, timestamp with time zone"),
    p(1284, "date_trunc", b's', true, 1184, &[25, 1184, 25], "timestamp with time zone", "text, timestamp with time zone, text"),
    p(2020, "date_trunc", b'i', true, 1114, &[25, 1114], "timestamp without time zone", "text, timestamp without time zone"),
    p(1712, "floor", b'i', true, 1700, &[1700], "numeric", "numeric"),
    p(2309, "floor", b'i', true, 701, &[701], "double precision", "double precision"),
    p(3539, "format", b's', false, 25, &[25, 2276], "text", r#"text, VARIADIC "any""#),
    p(3540, "format", b's', false, 25, &[25], "text", "text"),
    p(1081, "format_type", b's', false, 25, &[26, 23], "text", "oid, integer"),
    p(3432, "gen_random_uuid", b'v', true, 2950, &[], "uuid", ""),
    p(3210, "jsonb_typeof", b'i', true, 25, &[3802], "text", "jsonb"),
    p(3060, "left", b'i', true, 25, &[25, 23], "text", "text, integer"),
    p(1317, "length", b'i', true, 23, &[25], "integer", "text"),
    p(870, "lower", b'i', true, 25, &[25], "text", "text"),
    p(873, "lpad", b'i', true, 25, &[25, 23, 25], "text", "text, integer, text"),
    p(879, "lpad", b'i', true, 25, &[25, 23], "text", "text, integer"),
    p(875, "ltrim", b'i', true, 25, &[25, 25], "text", "text, text"),
    p(881, "ltrim", b'i', true, 25, &[25], "text", "text"),
    p(2311, "md5", b'i', true, 25, &[25], "text", "text"),
    p(2321, "md5", b'i', true, 25, &[17], "text", "bytea"),
    p(6163, "bit_count", b'i', true, 20, &[17], "bigint", "bytea"),
    p(1947, "decode", b'i', true, 17, &[25, 25], "bytea", "text, text"),
    p(1946, "encode", b'i', true, 25, &[17, 25], "text", "bytea, text"),
    p(723, "get_bit", b'i', true, 23, &[17, 20], "integer", "bytea, bigint"),
    p(721, "get_byte", b'i', true, 23, &[17, 23], "integer", "bytea, integer"),
    p(749, "overlay", b'i', true, 17, &[17, 17, 23, 23], "bytea", "bytea, bytea, integer, integer"),
    p(752, "overlay", b'i', true, 17, &[17, 17, 23], "bytea", "bytea, bytea, integer"),
    p(1404, "overlay", b'i', true, 25, &[25, 25, 23, 23], "text", "text, text, integer, integer"),
    p(1405, "overlay", b'i', true, 25, &[25, 25, 23], "text", "text, text, integer"),
    p(724, "set_bit", b'i', true, 17, &[17, 20, 23], "bytea", "bytea, bigint, integer"),
    p(722, "set_byte", b'i', true, 17, &[17, 23, 23], "bytea", "bytea, integer, integer"),
    p(3419, "sha224", b'i', true, 17, &[17], "bytea", "bytea"),
    p(3420, "sha256", b'i', true, 17, &[17], "bytea", "bytea"),
    p(3421, "sha384", b'i', true, 17, &[17], "bytea", "bytea"),
    p(3422, "sha512", b'i', true, 17, &[17], "bytea", "bytea"),
    p(2089, "to_hex", b'i', true, 25, &[23], "text", "integer"),
    p(2090, "to_hex", b'i', true, 25, &[20], "text", "bigint"),
    p(878, "translate", b'i', true, 25, &[25, 25, 25], "text", "text, text, text"),
    p(6198, "unistr", b'i', true, 25, &[25], "text", "text"),
    p(940, "mod", b'i', true, 21, &[21, 21], "smallint", "smallint, smallint"),
    p(941, "mod", b'i', true, 23, &[23, 23], "integer", "integer, integer"),
    p(947, "mod", b'i', true, 20, &[20, 20], "bigint", "bigint, bigint"),
    p(1728, "mod", b'i', true, 1700, &[1700, 1700], "numeric", "numeric, numeric"),
    p(1574, "nextval", b'v', true, 20, &[2205], "bigint", "regclass"),
    p(1575, "currval", b'v', true, 20, &[2205], "bigint", "regclass"),
    p(2559, "lastval", b'v', true, 20, &[], "bigint", ""),
    p(1299, "now", b's', true, 1184, &[], "timestamp with time zone", ""),
    p(720, "octet_length", b'i', true, 23, &[17], "integer", "bytea"),
    p(1374, "octet_length", b'i', true, 23, &[25], "integer", "text"),
    p(2880, "pg_advisory_lock", b'v', true, 2278, &[20], "void", "bigint"),
    p(2886, "pg_advisory_lock", b'v', true, 2278, &[23, 23], "void", "integer, integer"),
    p(2884, "pg_advisory_unlock", b'v', true, 16, &[20], "boolean", "bigint"),
    p(2890, "pg_advisory_unlock", b'v', true, 16, &[23, 23], "boolean", "integer, integer"),
    p(2892, "pg_advisory_unlock_all", b'v', true, 2278, &[], "void", ""),
    p(3036, "pg_notify", b'v', false, 2278, &[25, 25], "void", "text, text"),
    p(3296, "pg_notification_queue_usage", b'v', true, 701, &[], "double precision", ""),
    p(2026, "pg_backend_pid", b's', true, 23, &[], "integer", ""),
    p(2561, "pg_blocking_pids", b'v', true, 1007, &[23], "integer[]", "integer"),
    p(2171, "pg_cancel_backend", b'v', true, 16, &[23], "boolean", "integer"),
    p(2168, "pg_database_size", b'v', true, 20, &[19], "bigint", "name"),
    p(2324, "pg_database_size", b'v', true, 20, &[26], "bigint", "oid"),
    p(1597, "pg_encoding_to_char", b's', true, 19, &[23], "name", "integer"),
    p(1665, "pg_get_serial_sequence", b's', true, 25, &[25, 25], "text", "text, text"),
    p(1642, "pg_get_userbyid", b's', true, 19, &[26], "name", "oid"),
    p(2998, "pg_indexes_size", b'v', true, 20, &[2205], "bigint", "regclass"),
    p(3810, "pg_is_in_recovery", b'v', true, 16, &[], "boolean", ""),
    p(2325, "pg_relation_size", b'v', true, 20, &[2205], "bigint", "regclass"),
    p(2332, "pg_relation_size", b'v', true, 20, &[2205, 25], "bigint", "regclass, text"),
    p(2288, "pg_size_pretty", b'i', true, 25, &[20], "text", "bigint"),
    p(3166, "pg_size_pretty", b'i', true, 25, &[1700], "text", "numeric"),
    p(2626, "pg_sleep", b'v', true, 2278, &[701], "void", "double precision"),
    p(2997, "pg_table_size", b'v', true, 20, &[2205], "bigint", "regclass"),
    p(2096, "pg_terminate_backend", b'v', true, 16, &[23, 20], "boolean", "integer, bigint"),
    p(2286, "pg_total_relation_size", b'v', true, 20, &[2205], "bigint", "regclass"),
    p(2882, "pg_try_advisory_lock", b'v', true, 16, &[20], "boolean", "bigint"),
    p(2888, "pg_try_advisory_lock", b'v', true, 16, &[23, 23], "boolean", "integer, integer"),
    p(1619, "pg_typeof", b's', false, 2206, &[2276], "regtype", r#""any""#),
    p(1368, "power", b'i', true, 701, &[701, 701], "double precision", "double precision, double precision"),
    p(2169, "power", b'i', true, 1700, &[1700, 1700], "numeric", "numeric, numeric"),
    p(1282, "quote_ident", b'i', true, 25, &[25], "text", "text"),
    p(1283, "quote_literal", b'i', true, 25, &[25], "text", "text"),
    p(1598, "random", b'v', true, 701, &[], "double precision", ""),
    p(1622, "repeat", b'i', true, 25, &[25, 23], "text", "text, integer"),
    p(2087, "replace", b'i', true, 25, &[25, 25, 25], "text", "text, text, text"),
    p(3061, "right", b'i', true, 25, &[25, 23], "text", "text, integer"),
    p(1342, "round", b'i', true, 701, &[701], "double precision", "double precision"),
    p(1707, "round", b'i', true, 1700, &[1700, 23], "numeric", "numeric, integer"),
    p(1708, "round", b'i', true, 1700, &[1700], "numeric", "numeric"),
    p(874, "rpad", b'i', true, 25, &[25, 23, 25], "text", "text, integer, text"),
    p(880, "rpad", b'i', true, 25, &[25, 23], "text", "text, integer"),
    p(876, "rtrim", b'i', true, 25, &[25, 25], "text", "text, text"),
    p(882, "rtrim", b'i', true, 25, &[25], "text", "text"),
    p(2078, "set_config", b'v', false, 25, &[25, 25, 16], "text", "text, text, boolean"),
    p(1576, "setval", b'v', true, 20, &[2205, 20], "bigint", "regclass, bigint"),
    p(1765, "setval", b'v', true, 20, &[2205, 20, 16], "bigint", "regclass, bigint, boolean"),
    p(1344, "sqrt", b'i', true, 701, &[701], "double precision", "double precision"),
    p(1730, "sqrt", b'i', true, 1700, &[1700], "numeric", "numeric"),
    p(2648, "statement_timestamp", b's', true, 1184, &[], "timestamp with time zone", ""),
    p(868, "strpos", b'i', true, 23, &[25, 25], "integer", "text, text"),
    p(877, "substr", b'i', true, 25, &[25, 23, 23], "text", "text, integer, integer"),
    p(883, "substr", b'i', true, 25, &[25, 23], "text", "text, integer"),
    p(274, "timeofday", b'v', true, 25, &[], "text", ""),
    p(3495, "to_regclass", b's', true, 2205, &[25], "regclass", "text"),
    p(3493, "to_regtype", b's', true, 2206, &[25], "regtype", "text"),
    p(2647, "transaction_timestamp", b's', true, 1184, &[], "timestamp with time zone", ""),
    p(872, "initcap", b'i', true, 25, &[25], "text", "text"),
    p(871, "upper", b'i', true, 25, &[25], "text", "text"),
    p(89, "version", b's', true, 25, &[], "text", ""),
    p(2466, "acosh", b'i', true, 701, &[701], "double precision", "double precision"),
    p(2465, "asinh", b'i', true, 701, &[701], "double precision", "double precision"),
    p(2467, "atanh", b'i', true, 701, &[701], "double precision", "double precision"),
    p(1345, "cbrt", b'i', true, 701, &[701], "double precision", "double precision"),
    p(2463, "cosh", b'i', true, 701, &[701], "double precision", "double precision"),
    p(1347, "exp", b'i', true, 701, &[701], "double precision", "double precision"),
    p(1732, "exp", b'i', true, 1700, &[1700], "numeric", "numeric"),
    p(1341, "ln", b'i', true, 701, &[701], "double precision", "double precision"),
    p(1734, "ln", b'i', true, 1700, &[1700], "numeric", "numeric"),
    p(1340, "log", b'i', true, 701, &[701], "double precision", "double precision"),
    p(1736, "log", b'i', true, 1700, &[1700, 1700], "numeric", "numeric, numeric"),
    p(1741, "log", b'i', true, 1700, &[1700], "numeric", "numeric"),
    p(1194, "log10", b'i', true, 701, &[701], "double precision", "double precision"),
    p(1481, "log10", b'i', true, 1700, &[1700], "numeric", "numeric"),
    p(2462, "sinh", b'i', true, 701, &[701], "double precision", "double precision"),
    p(2464, "tanh", b'i', true, 701, &[701], "double precision", "double precision"),
    p(1601, "acos", b'i', true, 701, &[701], "double precision", "double precision"),
    p(2732, "acosd", b'i', true, 701, &[701], "double precision", "double precision"),
    p(1600, "asin", b'i', true, 701, &[701], "double precision", "double precision"),
    p(2731, "asind", b'i', true, 701, &[701], "double precision", "double precision"),
    p(1602, "atan", b'i', true, 701, &[701], "double precision", "double precision"),
    p(1603, "atan2", b'i', true, 701, &[701, 701], "double precision", "double precision, double precision"),
    p(2734, "atan2d", b'i', true, 701, &[701, 701], "double precision", "double precision, double precision"),
    p(2733, "atand", b'i', true, 701, &[701], "double precision", "double precision"),
    p(1605, "cos", b'i', true, 701, &[701], "double precision", "double precision"),
    p(2736, "cosd", b'i', true, 701, &[701], "double precision", "double precision"),
    p(1607, "cot", b'i', true, 701, &[701], "double precision", "double precision"),
    p(2738, "cotd", b'i', true, 701, &[701], "double precision", "double precision"),
    p(1608, "degrees", b'i', true, 701, &[701], "double precision", "double precision"),
    p(1610, "pi", b'i', true, 701, &[], "double precision", ""),
    p(1609, "radians", b'i', true, 701, &[701], "double precision", "double precision"),
    p(1604, "sin", b'i', true, 701, &[701], "double precision", "double precision"),
    p(2735, "sind", b'i', true, 701, &[701], "double precision", "double precision"),
    p(1606, "tan", b'i', true, 701, &[701], "double precision", "double precision"),
    p(2737, "tand", b'i', true, 701, &[701], "double precision", "double precision"),
    p(320, "width_bucket", b'i', true, 23, &[701, 701, 701, 23], "integer", "double precision, double precision, double precision, integer"),
    p(2170, "width_bucket", b'i', true, 23, &[1700, 1700, 1700, 23], "integer", "numeric, numeric, numeric, integer"),
];

/// `proparallel`, as PostgreSQL 15 marks them: advisory locks, `random`
/// and `pg_backend_pid` are parallel restricted; the sequence functions,
/// `set_config` and the search path's are unsafe; the rest safe.
fn parallel(oid: i64) -> &'static str {
    const RESTRICTED: &[i64] = &[1598, 2026, 2880, 2882, 2884, 2886, 2888, 2890, 2892];
    const UNSAFE: &[i64] = &[1402, 1403, 1574, 1576, 1765, 2078];
    if RESTRICTED.contains(&oid) {
        "r"
    } else if UNSAFE.contains(&oid) {
        "u"
    } else {
        "s"
    }
}

/// `pg_language`'s one row: `internal`, the language of the functions above
/// (Walden has no procedural languages; `lanispl` is false, so pg_dump
/// dumps nothing of it).
pub(super) fn language_rows() -> Vec<Vec<Value>> {
    /// PostgreSQL's `fmgr_internal_validator`.
    const INTERNAL_VALIDATOR: i64 = 2246;
    vec![vec![
        i(LANG_INTERNAL),
        t("internal"),
        i(OWNER_OID),
        b(false),
        b(false),
        i(0),
        i(0),
        i(INTERNAL_VALIDATOR),
        NULL,
    ]]
}

fn find(oid: i64) -> Option<&'static BuiltinProc> {
    BUILTIN_PROCS.iter().find(|f| f.oid == oid)
}

/// `pg_get_function_result(oid)`: NULL for an OID that is no function.
pub fn function_result(oid: i64) -> Option<&'static str> {
    find(oid).map(|f| f.result_text)
}

/// `pg_get_function_arguments(oid)`: NULL for an OID that is no function.
pub fn function_arguments(oid: i64) -> Option<&'static str> {
    find(oid).map(|f| f.args_text)
}

/// `oid::regproc`: the function's name, when the OID is a listed one.
pub fn function_name(oid: i64) -> Option<&'static str> {
    find(oid).map(|f| f.name)
}

/// The rows of `pg_proc`, in its base columns' order (`views.rs`).
pub(super) fn proc_rows() -> Vec<Vec<Value>> {
    let oids = |xs: &[i64]| Value::Array(xs.iter().map(|&o| Value::Int(o)).collect());
    BUILTIN_PROCS
        .iter()
        .map(|f| {
            // A VARIADIC "any" is the last argument; PostgreSQL then lists
            // every argument's mode (`i` or `v`) and type.
            let variadic = f.args.last() == Some(&ANY);
            let (all, modes) = if variadic {
                let modes = (0..f.args.len())
                    .map(|k| t(if k + 1 == f.args.len() { "v" } else { "i" }))
                    .collect();
                (oids(f.args), Value::Array(modes))
            } else {
                (NULL, NULL)
            };
            vec![
                i(f.oid),
                t(f.name),
                i(NS_PG_CATALOG),
                i(OWNER_OID),
                i(LANG_INTERNAL),
                t("f"),
                b(false),
                i(f.args.len() as i64),
                i(f.result),
                oids(f.args),
                t((f.volatile as char).to_string()),
                b(f.strict),
                all,
                modes,
                NULL,
                t(f.name),
                i(0),
                NULL,
                b(false),
                t(parallel(f.oid)),
            ]
        })
        .collect()
}
