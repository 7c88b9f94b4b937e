//! String functions (`position`, `strpos`, `ascii`, `chr`, `bit_length`,
//! `format`) statement by statement against a scratch PostgreSQL 15: the
//! rows, and for errors the SQLSTATE, message and hint. Multibyte text,
//! NULLs and every `format` specifier form are among the cases.

use crate::pg_diff;

use pg_diff::{assert_same, block_on_within, run_script, Field, Peers};
use std::time::Duration;

const SCRIPT: &[&str] = &[
    "SELECT position('b' IN 'abc'), position('' IN 'abc'), position('x' IN 'abc'), position('lo' IN 'héllo'), position(NULL IN 'a'), position('a' IN NULL)",
    "SELECT strpos('abc', 'c'), strpos('héllo', 'l'), strpos('a', ''), strpos(NULL, 'a'), strpos('', ''), strpos('日本語', '語')",
    "SELECT ascii('A'), ascii('é'), ascii(''), ascii(NULL), ascii('日本'), chr(65), chr(233), chr(26085), chr(NULL)",
    "SELECT chr(0)",
    "SELECT chr(-1)",
    "SELECT chr(1114112)",
    "SELECT chr(55296)",
    "SELECT bit_length('abc'), bit_length('é'), octet_length('é'), bit_length(NULL), bit_length(''), bit_length('\\x0102'::bytea)",
    "SELECT format('%s-%s', 'a', 'b'), format('%I', 'Foo'), format('%I', 'foo'), format('%I', 'select'), format('%L', 'o''k'), format('%L', NULL), format('%s', NULL), format('%1$s %1$s', 'x'), format('%5s|%-5s|', 'a', 'b')",
    "SELECT format(NULL), format(NULL, 1), format('x'), format('%%'), format('100%% %s', 1), format('%2$s %1$s %s', 'a', 'b'), format('%s', 1.50), format('%s', true), format('%s %s', ARRAY[1,2], NULL::int)",
    "SELECT format('|%*s|', 4, 'x'), format('|%*s|', -4, 'x'), format('|%-*s|', 4, 'x'), format('|%*s|', NULL, 'x'), format('|%*2$s|', 'x', 3), format('|%1$*2$s|', 'x', 3), format('|%3I|%-6L|', 'a', 'b'), format('|%3s|', 'héllo'), format('|%6s|', 'héllo'), format('%L', 'a\\b')",
    "SELECT format('%', 1)",
    "SELECT format('%s %s', 1)",
    "SELECT format('%x', 1)",
    "SELECT format('%0$s', 1)",
    "SELECT format('%I', NULL)",
    "SELECT format('%1', 1)",
    "SELECT format('%*1s', 1, 2)",
    "SELECT format('%-', 1)",
    "SELECT format('%3$s', 1)",
    "SELECT format('abc %s')",
    "SELECT format('%99999999999s', 'x')",
    "SELECT format('%s', 'a'), format('%s', 'a', 'b'), format('%2$s', 'a', 'b'), format('%1$s %s', 'a', 'b')",
    "SELECT format('%-5s|', 'ab'), format('%--5s|', 'ab'), format('%0s', 'ab'), format('%05s|', 'ab')",
    "SELECT pg_typeof(format('x')), pg_typeof(strpos('a','a')), pg_typeof(ascii('a')), pg_typeof(chr(65)), pg_typeof(bit_length('a'))",
    "SELECT format('%s', 'x'::varchar(3)), format('%L', 5), format('%I', 5), format('%s', '2024-01-01'::date), format('%L', '{\"a\": 1}'::jsonb)",
];

#[test]
fn string_functions_match_postgres() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(peers) = Peers::start(tmp.path(), "to compare string functions") else {
        return;
    };
    block_on_within(Duration::from_secs(120), async {
        let want = run_script(&peers.pg_conn(), SCRIPT, &[Field::Hint]).await;
        let got = run_script(&peers.walden_conn(), SCRIPT, &[Field::Hint]).await;
        assert_same(&want, &got);
    });
}
