//! numeric as PostgreSQL 15 has it (issue 32, "Exact values"): NaN and
//! ±Infinity (input, order, arithmetic, casts, aggregates, an index on
//! them), every digit of an unconstrained numeric, numeric(p,s) past 28
//! digits, and PostgreSQL's result scales. Each expected answer was
//! checked on PostgreSQL 15 (`ok N` closes each statement's rows; an
//! error is its SQLSTATE).

use crate::pg_diff;
use crate::server_support;

use pg_diff::{block_on_within, connect, render_messages};
use std::time::Duration;

const CASES: &[(&str, &str)] = &[
    (
        r#"SELECT 'NaN'::numeric, 'Infinity'::numeric, '-inf'::numeric, ' +inf '::numeric, 'nan'::numeric = 'NaN'::numeric"#,
        r#"NaN|Infinity|-Infinity|Infinity|t; ok 1"#,
    ),
    (
        r#"SELECT x FROM (VALUES ('NaN'::numeric), ('inf'), ('-inf'), (0), (1e40), (-1e40), (1.5)) v(x) ORDER BY x"#,
        r#"-Infinity; -10000000000000000000000000000000000000000; 0; 1.5; 10000000000000000000000000000000000000000; Infinity; NaN; ok 7"#,
    ),
    (
        r#"SELECT x FROM (VALUES ('NaN'::numeric), ('inf'), ('-inf'), (0), (1e40)) v(x) ORDER BY x DESC"#,
        r#"NaN; Infinity; 10000000000000000000000000000000000000000; 0; -Infinity; ok 5"#,
    ),
    (
        r#"SELECT 'inf'::numeric + 1, 'inf'::numeric - 'inf', 'inf'::numeric * 0, 'inf'::numeric * -2, 1 / 'inf'::numeric, 'NaN'::numeric / 0, 'inf'::numeric % 3, 5 % 'inf'::numeric"#,
        r#"Infinity|NaN|NaN|-Infinity|0|NaN|NaN|5; ok 1"#,
    ),
    (r#"SELECT 'inf'::numeric / 0"#, r#"ERROR 22012"#),
    (r#"SELECT 1 / 0::numeric"#, r#"ERROR 22012"#),
    (r#"SELECT 'NaN'::numeric::int4"#, r#"ERROR 0A000"#),
    (r#"SELECT 'inf'::numeric::int8"#, r#"ERROR 0A000"#),
    (r#"SELECT 1e20::numeric::int8"#, r#"ERROR 22003"#),
    (
        r#"SELECT 'inf'::numeric::float8, 'nan'::numeric::float8, '-inf'::numeric::float4, 'inf'::float8::numeric, '-inf'::float8::numeric, 'nan'::float4::numeric"#,
        r#"Infinity|NaN|-Infinity|Infinity|-Infinity|NaN; ok 1"#,
    ),
    (r#"SELECT 1e400::numeric::float8"#, r#"ERROR 22003"#),
    (r#"SELECT 'inf'::numeric::numeric(10,2)"#, r#"ERROR 22003"#),
    (r#"SELECT 'nan'::numeric::numeric(10,2)"#, r#"NaN; ok 1"#),
    (
        r#"SELECT sqrt('inf'::numeric), sqrt('nan'::numeric), abs('-inf'::numeric), round('nan'::numeric, 2), ceil('-inf'::numeric), floor('inf'::numeric), sign('-inf'::numeric), sign('nan'::numeric)"#,
        r#"Infinity|NaN|Infinity|NaN|-Infinity|Infinity|-1|NaN; ok 1"#,
    ),
    (r#"SELECT sqrt('-inf'::numeric)"#, r#"ERROR 2201F"#),
    (
        r#"SELECT scale('nan'::numeric), min_scale('inf'::numeric), trim_scale('nan'::numeric), div('inf'::numeric, 2), gcd('nan'::numeric, 4), lcm('inf'::numeric, 2)"#,
        r#"NULL|NULL|NaN|Infinity|NaN|NaN; ok 1"#,
    ),
    (
        r#"SELECT sum(x), avg(x), min(x), max(x) FROM (VALUES (1::numeric), ('inf'), (2)) v(x)"#,
        r#"Infinity|Infinity|1|Infinity; ok 1"#,
    ),
    (
        r#"SELECT sum(x), avg(x) FROM (VALUES (1::numeric), ('inf'), ('-inf')) v(x)"#,
        r#"NaN|NaN; ok 1"#,
    ),
    (
        r#"SELECT sum(x), avg(x), var_pop(x), stddev(x) FROM (VALUES (1::numeric), ('nan')) v(x)"#,
        r#"NaN|NaN|NaN|NaN; ok 1"#,
    ),
    (
        r#"SELECT power('nan'::numeric, 0), power(1::numeric, 'nan'), power('-inf'::numeric, 3), power('-inf'::numeric, 2), power(0.5::numeric, 'inf'), power(2::numeric, '-inf'), power('inf'::numeric, -1)"#,
        r#"1|1|-Infinity|Infinity|0|0|0; ok 1"#,
    ),
    (
        r#"CREATE TABLE nx (id int PRIMARY KEY, x numeric)"#,
        r#"ok 0"#,
    ),
    (
        r#"INSERT INTO nx VALUES (1, 'NaN'), (2, 'inf'), (3, '-inf'), (4, 0), (5, 123456789012345678901234567890.123456789), (6, -1e-40), (7, 'NaN')"#,
        r#"ok 7"#,
    ),
    (r#"CREATE INDEX nx_x ON nx (x)"#, r#"ok 0"#),
    (
        r#"SELECT id, x FROM nx ORDER BY x, id"#,
        r#"3|-Infinity; 6|-0.0000000000000000000000000000000000000001; 4|0; 5|123456789012345678901234567890.123456789; 2|Infinity; 1|NaN; 7|NaN; ok 7"#,
    ),
    (
        r#"SELECT id FROM nx WHERE x = 'NaN' ORDER BY id"#,
        r#"1; 7; ok 2"#,
    ),
    (
        r#"SELECT id FROM nx WHERE x > 1e29 ORDER BY id"#,
        r#"1; 2; 5; 7; ok 4"#,
    ),
    (
        r#"SELECT count(DISTINCT x), count(*) FROM nx"#,
        r#"6|7; ok 1"#,
    ),
    (
        r#"SELECT x, count(*) FROM nx GROUP BY x ORDER BY x"#,
        r#"-Infinity|1; -0.0000000000000000000000000000000000000001|1; 0|1; 123456789012345678901234567890.123456789|1; Infinity|1; NaN|2; ok 6"#,
    ),
    (
        r#"UPDATE nx SET x = x * 1000000000000000000000 WHERE id = 5"#,
        r#"ok 1"#,
    ),
    (
        r#"SELECT x FROM nx WHERE id = 5"#,
        r#"123456789012345678901234567890123456789000000000000.000000000; ok 1"#,
    ),
    (
        r#"SELECT 1.000000000000001::numeric * 1.000000000000001::numeric"#,
        r#"1.000000000000002000000000000001; ok 1"#,
    ),
    (
        r#"SELECT 10000000000000000000000::numeric + 0.0000001::numeric"#,
        r#"10000000000000000000000.0000001; ok 1"#,
    ),
    (
        r#"SELECT 99999999999999.99999999999999::numeric - 0.000000000000001::numeric"#,
        r#"99999999999999.999999999999989; ok 1"#,
    ),
    (
        r#"SELECT 1::numeric / 0.000000000000000000000000000001"#,
        r#"1000000000000000000000000000000.000000000000000000000000000000; ok 1"#,
    ),
    (
        r#"SELECT factorial(30), factorial(40)"#,
        r#"265252859812191058636308480000000|815915283247897734345611269596115894272000000000; ok 1"#,
    ),
    (
        r#"SELECT power(10::numeric, 20)"#,
        r#"100000000000000000000.0000000000000000; ok 1"#,
    ),
    (
        r#"SELECT variance(x) FROM (VALUES (12345678901234.123456::numeric), (1)) v(x)"#,
        r#"76207893766176351232594575.128868691968; ok 1"#,
    ),
    (
        r#"SELECT 0.12345678901234567890123456789012"#,
        r#"0.12345678901234567890123456789012; ok 1"#,
    ),
    (
        r#"SELECT 1e30::numeric, 1e-30::numeric, 1e30, 1.5e30 + 1, 1e-30 * 1"#,
        r#"1000000000000000000000000000000|0.000000000000000000000000000001|1000000000000000000000000000000|1500000000000000000000000000001|0.000000000000000000000000000001; ok 1"#,
    ),
    (
        r#"SELECT 1e30::float8::numeric"#,
        r#"1000000000000000000000000000000; ok 1"#,
    ),
    (
        r#"SELECT 1.0000000000000000000000000001::numeric(40,30), 1.5::numeric(40,30), round(1.5, 30), trunc(1.5, 40)"#,
        r#"1.000000000000000000000000000100|1.500000000000000000000000000000|1.500000000000000000000000000000|1.5000000000000000000000000000000000000000; ok 1"#,
    ),
    (
        r#"SELECT 1.5 + '0.12345678901234567890123456789012', 0.5 = '0.50000000000000000000000000000001'"#,
        r#"1.62345678901234567890123456789012|f; ok 1"#,
    ),
    (
        r#"SELECT sum(x) OVER (ORDER BY x ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM (VALUES (0.1234567890123456789012345678), (1000)) v(x)"#,
        r#"0.1234567890123456789012345678; 1000.1234567890123456789012345678; ok 2"#,
    ),
    (
        r#"SELECT 12345678901234567890123456789012345678901234567890::numeric * 98765432109876543210987654321"#,
        r#"1219326311370217952261850327337448559633744855963362292333223746380111126352690; ok 1"#,
    ),
    (
        r#"SELECT 12345678901234567890123456789012345678901234567890::numeric / 7"#,
        r#"1763668414462081127160493827001763668414462081127; ok 1"#,
    ),
    (
        r#"SELECT 1::numeric / 3, 2::numeric / 3, 10::numeric / 4, sqrt(2::numeric), sqrt(200::numeric), sqrt(0.0002::numeric), sqrt(1e40::numeric)"#,
        r#"0.33333333333333333333|0.66666666666666666667|2.5000000000000000|1.414213562373095|14.142135623730950|0.01414213562373095|100000000000000000000; ok 1"#,
    ),
    (
        r#"SELECT round(123456789012345678901234567890.5), trunc(-123456789012345678901234567890.55, 1), ceil(1e30 + 0.5), floor(-1e30 - 0.5), round(1234.5678, -2), round(-2.5)"#,
        r#"123456789012345678901234567891|-123456789012345678901234567890.5|1000000000000000000000000000001|-1000000000000000000000000000001|1200|-3; ok 1"#,
    ),
    (
        r#"SELECT 123456789012345678901234567890 % 7, mod(-1e30 - 3, 10), div(1e40, 3)"#,
        r#"0|-3|3333333333333333333333333333333333333333; ok 1"#,
    ),
    (
        r#"SELECT 123456789012345678901234567890.5::float8, (-1e-40)::numeric::float8"#,
        r#"1.2345678901234568e+29|-1e-40; ok 1"#,
    ),
    (
        r#"CREATE TABLE big (a numeric(50,20), b numeric(40))"#,
        r#"ok 0"#,
    ),
    (
        r#"INSERT INTO big VALUES (123456789012345678901234567890.123456789012345678904, 1234567890123456789012345678901234567890)"#,
        r#"ok 1"#,
    ),
    (
        r#"SELECT a, b FROM big"#,
        r#"123456789012345678901234567890.12345678901234567890|1234567890123456789012345678901234567890; ok 1"#,
    ),
    (r#"INSERT INTO big VALUES (1e30, 0)"#, r#"ERROR 22003"#),
    (r#"INSERT INTO big (b) VALUES ('nan')"#, r#"ok 1"#),
    (
        r#"SELECT b FROM big ORDER BY b"#,
        r#"1234567890123456789012345678901234567890; NaN; ok 2"#,
    ),
    (
        r#"SELECT avg(x) FROM (VALUES (1e30::numeric), (1)) v(x)"#,
        r#"500000000000000000000000000001; ok 1"#,
    ),
    (
        r#"SELECT 2::numeric ^ 200"#,
        r#"1606938044258990275541962092341162602522202993782792835301376.0000000000000000; ok 1"#,
    ),
];

#[test]
fn numeric_answers_are_postgres_answers() {
    let tmp = tempfile::tempdir().unwrap();
    let walden = server_support::Serve::start(&tmp.path().join("walden"), &[]);
    block_on_within(Duration::from_secs(120), async {
        let c = connect(&walden.conn_str()).await;
        let mut wrong = Vec::new();
        for (sql, want) in CASES {
            let got = match c.simple_query(sql).await {
                Ok(m) => render_messages(&m),
                Err(e) => format!(
                    "ERROR {}",
                    e.as_db_error().map(|d| d.code().code()).unwrap_or("?")
                ),
            };
            if got != *want {
                wrong.push(format!("{sql}\n  want {want}\n  got  {got}"));
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    });
}

/// Values far past 28 digits keep every digit: 2^1000 exactly, a scale
/// of 16383 decimals, and numeric's limits (131072 digits before the
/// point) with PostgreSQL's overflow error.
#[test]
fn numeric_keeps_every_digit_to_postgres_limits() {
    let tmp = tempfile::tempdir().unwrap();
    let walden = server_support::Serve::start(&tmp.path().join("walden"), &[]);
    block_on_within(Duration::from_secs(120), async {
        let c = connect(&walden.conn_str()).await;
        let one = |sql: &'static str| {
            let c = &c;
            async move {
                let m = c.simple_query(sql).await.unwrap();
                let row = m.iter().find_map(|x| match x {
                    tokio_postgres::SimpleQueryMessage::Row(r) => Some(r),
                    _ => None,
                });
                match row {
                    Some(r) => r.get(0).unwrap().to_string(),
                    None => panic!("{sql}: {}", render_messages(&m)),
                }
            }
        };
        // PostgreSQL 15: 2^1000 has 302 digits (then 16 decimals).
        let p = one("SELECT 2::numeric ^ 1000").await;
        assert_eq!(p.len(), 302 + 17, "{p}");
        assert!(p.starts_with("10715086071862673209484250490600018105614048117055336074437503883703510511249361224931983788156958581275946729175531468251871452856923140435984577574698574803934567774824230985421074605062371141877954182153046474983581941267398767559165543946077062914571196477686542167660429831652624386837205668069376.0000000000000000"), "{p}");
        let s = one("SELECT (1::numeric / 3)::numeric(1000, 1000)::text").await;
        assert_eq!(s.len(), 1002);
        let big = one("SELECT length((10::numeric ^ 131071)::text)").await;
        assert_eq!(big, "131089");
        let e = c
            .simple_query("SELECT 10::numeric ^ 131072")
            .await
            .expect_err("past numeric's range");
        assert_eq!(e.as_db_error().map(|d| d.code().code()), Some("22003"));
    });
}
