//! What client tools send, end to end: pgbench's setup, T-SQL forms, psql's
//! `\d` queries and list commands, and COPY TO STDOUT.

use crate::common;
use crate::common::statements;
use common::engine;
use statements::{err, one, rows, tag};
use walden_sql::ErrorKind;

#[test]
fn pgbench_initialisation_statements() {
    let e = engine();
    let mut s = e.connect("walden", "postgres", "pgbench").unwrap();
    for sql in [
        "drop table if exists pgbench_accounts, pgbench_branches, pgbench_history, pgbench_tellers",
        "create table pgbench_history(tid int,bid int,aid    int,delta int,mtime timestamp,filler char(22))",
        "create table pgbench_tellers(tid int not null,bid int,tbalance int,filler char(84)) with (fillfactor=100)",
        "create table pgbench_accounts(aid    int not null,bid int,abalance int,filler char(84)) with (fillfactor=100)",
        "create table pgbench_branches(bid int not null,bbalance int,filler char(88)) with (fillfactor=100)",
        "begin",
        "truncate table pgbench_accounts, pgbench_branches, pgbench_history, pgbench_tellers",
        "insert into pgbench_branches(bid,bbalance) select bid, 0 from generate_series(1, 1) as bid",
        "insert into pgbench_tellers(tid,bid,tbalance) select tid, (tid - 1) / 10 + 1, 0 from generate_series(1, 10) as tid",
        "insert into pgbench_accounts(aid,bid,abalance,filler) select aid, (aid - 1) / 100000 + 1, 0, '' from generate_series(1, 1000) as aid",
        "commit",
        "alter table pgbench_branches add primary key (bid)",
        "alter table pgbench_tellers add primary key (tid)",
        "alter table pgbench_accounts add primary key (aid)",
        "vacuum analyze pgbench_branches",
    ] {
        let r = s.execute_batch(sql).pop().unwrap();
        r.unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    assert_eq!(one(&mut s, "select count(*) from pgbench_branches"), "1");
    let probe = rows(&mut s, "select o.n, p.partstrat, pg_catalog.count(i.inhparent) from pg_catalog.pg_class as c join pg_catalog.pg_namespace as n on (n.oid = c.relnamespace) cross join lateral (select pg_catalog.array_position(pg_catalog.current_schemas(true), n.nspname)) as o(n) left join pg_catalog.pg_partitioned_table as p on (p.partrelid = c.oid) left join pg_catalog.pg_inherits as i on (c.oid = i.inhparent) where c.relname = 'pgbench_accounts' and o.n is not null group by 1, 2 order by 1 asc limit 1");
    assert_eq!(probe, vec![vec!["1", "NULL", "0"]]);
    for sql in [
        "BEGIN;",
        "UPDATE pgbench_accounts SET abalance = abalance + -17 WHERE aid = 42;",
        "SELECT abalance FROM pgbench_accounts WHERE aid = 42;",
        "UPDATE pgbench_tellers SET tbalance = tbalance + -17 WHERE tid = 3;",
        "UPDATE pgbench_branches SET bbalance = bbalance + -17 WHERE bid = 1;",
        "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (3, 1, 42, -17, CURRENT_TIMESTAMP);",
        "END;",
    ] {
        s.execute_batch(sql).pop().unwrap().unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    assert_eq!(
        one(
            &mut s,
            "SELECT abalance FROM pgbench_accounts WHERE aid = 42"
        ),
        "-17"
    );
    assert_eq!(one(&mut s, "SELECT sum(delta) FROM pgbench_history"), "-17");
}

#[test]
fn tsql_forms_sequences_and_catalogs() {
    let e = engine();
    let mut s = e.connect("walden", "u", "test").unwrap();
    tag(&mut s, "CREATE SEQUENCE seq START WITH 5 INCREMENT BY 2");
    // pg_dump's form is accepted; the type's bounds are enforced, and
    // explicit bounds and CYCLE are honoured (compared with PostgreSQL in
    // crates/walden/tests/it/sequences.rs).
    tag(
        &mut s,
        "CREATE SEQUENCE dumped AS integer START WITH 1 INCREMENT BY 1 NO MINVALUE NO MAXVALUE CACHE 1",
    );
    tag(&mut s, "CREATE SEQUENCE b1 MAXVALUE 2 CYCLE");
    assert_eq!(
        rows(&mut s, "SELECT nextval('b1'), nextval('b1'), nextval('b1')"),
        vec![vec!["1", "2", "1"]]
    );
    tag(&mut s, "CREATE SEQUENCE b2 AS smallint START WITH 32767");
    assert_eq!(one(&mut s, "SELECT nextval('b2')"), "32767");
    assert_eq!(
        err(&mut s, "SELECT nextval('b2')"),
        ErrorKind::SequenceLimitExceeded
    );
    assert_eq!(
        err(&mut s, "CREATE SEQUENCE b3 AS smallint MAXVALUE 40000"),
        ErrorKind::InvalidParameter
    );
    assert_eq!(
        rows(&mut s, "SELECT nextval('seq'), NEXT VALUE FOR dbo.seq"),
        vec![vec!["5", "7"]]
    );
    tag(
        &mut s,
        "CREATE TABLE dbo.T4 (id INT IDENTITY(10,5) NOT NULL PRIMARY KEY, name NVARCHAR(50), created DATETIME2 DEFAULT SYSDATETIME(), gid UNIQUEIDENTIFIER DEFAULT NEWID(), n BIGINT DEFAULT nextval('seq'))",
    );
    tag(&mut s, "INSERT dbo.T4 (name) VALUES (N'abc'), ('def')");
    assert_eq!(
        rows(&mut s, "SELECT id, name, n FROM T4 ORDER BY id"),
        vec![vec!["10", "abc", "9"], vec!["15", "def", "11"]]
    );
    assert_eq!(
        one(
            &mut s,
            "SELECT count(*) FROM T4 WHERE created > '2020-01-01' AND gid IS NOT NULL"
        ),
        "2"
    );
    assert_eq!(
        rows(
            &mut s,
            "SELECT CONVERT(INT, '12') + 1, CAST(1.5 AS INT), ISNULL(NULL, 'x')"
        ),
        vec![vec!["13", "2", "x"]]
    );
    tag(
        &mut s,
        "CREATE TABLE pair (a INT, b INT, PRIMARY KEY (a, b))",
    );
    tag(&mut s, "INSERT INTO pair VALUES (1, 2), (1, 3)");
    assert_eq!(
        err(&mut s, "INSERT INTO pair VALUES (1, 3)"),
        ErrorKind::UniqueViolation
    );
    assert_eq!(
        rows(
            &mut s,
            "UPDATE pair SET b = b + 10 WHERE a = 1 AND b = 3 RETURNING a, b"
        ),
        vec![vec!["1", "13"]]
    );
    assert_eq!(
        one(
            &mut s,
            "SELECT count(*) FROM pg_catalog.pg_tables WHERE tablename = 'pair'"
        ),
        "1"
    );
    assert_eq!(
        one(&mut s, "SELECT current_setting('server_version_num')"),
        "150000"
    );
    tag(&mut s, "BEGIN TRANSACTION");
    tag(&mut s, "SET NOCOUNT ON");
    tag(&mut s, "COMMIT TRANSACTION");
    tag(&mut s, "CREATE DATABASE shop");
    tag(&mut s, "USE shop");
    tag(&mut s, "CREATE TABLE x (a INT)");
    assert_eq!(one(&mut s, "SELECT DB_NAME()"), "shop");
    tag(&mut s, "USE walden");
    assert_eq!(one(&mut s, "SELECT count(*) FROM sys.databases"), "2");
    assert_eq!(err(&mut s, "SELECT * FROM x"), ErrorKind::UndefinedTable);
}

#[test]
fn psql_list_commands_work() {
    let e = engine();
    let mut s = e.connect("walden", "walden", "psql").unwrap();
    tag(&mut s, "CREATE TABLE t (id INT PRIMARY KEY)");
    // psql 15's \dt
    let dt = rows(
        &mut s,
        r#"SELECT n.nspname as "Schema",
  c.relname as "Name",
  CASE c.relkind WHEN 'r' THEN 'table' WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' WHEN 'i' THEN 'index' WHEN 'S' THEN 'sequence' WHEN 't' THEN 'TOAST table' WHEN 'f' THEN 'foreign table' WHEN 'p' THEN 'partitioned table' WHEN 'I' THEN 'partitioned index' END as "Type",
  pg_catalog.pg_get_userbyid(c.relowner) as "Owner"
FROM pg_catalog.pg_class c
     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
     LEFT JOIN pg_catalog.pg_am am ON am.oid = c.relam
WHERE c.relkind IN ('r','p','')
      AND n.nspname <> 'pg_catalog'
      AND n.nspname !~ '^pg_toast'
      AND n.nspname <> 'information_schema'
  AND pg_catalog.pg_table_is_visible(c.oid)
ORDER BY 1,2;"#,
    );
    assert_eq!(dt, vec![vec!["public", "t", "table", "walden"]]);
    // psql 15's \l
    let l = rows(
        &mut s,
        r#"SELECT d.datname as "Name",
       pg_catalog.pg_get_userbyid(d.datdba) as "Owner",
       pg_catalog.pg_encoding_to_char(d.encoding) as "Encoding",
       d.datcollate as "Collate",
       d.datctype as "Ctype",
       d.daticulocale as "ICU Locale",
       CASE d.datlocprovider WHEN 'c' THEN 'libc' WHEN 'i' THEN 'icu' END AS "Locale Provider",
       pg_catalog.array_to_string(d.datacl, E'\n') AS "Access privileges"
FROM pg_catalog.pg_database d
ORDER BY 1;"#,
    );
    assert_eq!(l[0][0], "walden");
    assert_eq!(one(&mut s, "SELECT count(*) FROM pg_catalog.pg_class c WHERE c.relname OPERATOR(pg_catalog.~) '^(t)$' COLLATE pg_catalog.default"), "1");
    assert_eq!(one(&mut s, "SELECT 'walden' ~* '^WAL', 'x' !~ 'y'"), "t");
}

/// psql 15's `\d t` queries (captured with `psql -E` against PostgreSQL 15),
/// with the table's OID as psql would substitute it.
fn describe_queries(oid: &str) -> Vec<String> {
    [
        r#"SELECT c.relchecks, c.relkind, c.relhasindex, c.relhasrules, c.relhastriggers, c.relrowsecurity, c.relforcerowsecurity, false AS relhasoids, c.relispartition, pg_catalog.array_to_string(c.reloptions || array(select 'toast.' || x from pg_catalog.unnest(tc.reloptions) x), ', ')
, c.reltablespace, CASE WHEN c.reloftype = 0 THEN '' ELSE c.reloftype::pg_catalog.regtype::pg_catalog.text END, c.relpersistence, c.relreplident, am.amname
FROM pg_catalog.pg_class c
 LEFT JOIN pg_catalog.pg_class tc ON (c.reltoastrelid = tc.oid)
LEFT JOIN pg_catalog.pg_am am ON (c.relam = am.oid)
WHERE c.oid = '@OID';"#,
        r#"SELECT a.attname,
  pg_catalog.format_type(a.atttypid, a.atttypmod),
  (SELECT pg_catalog.pg_get_expr(d.adbin, d.adrelid, true)
   FROM pg_catalog.pg_attrdef d
   WHERE d.adrelid = a.attrelid AND d.adnum = a.attnum AND a.atthasdef),
  a.attnotnull,
  (SELECT c.collname FROM pg_catalog.pg_collation c, pg_catalog.pg_type t
   WHERE c.oid = a.attcollation AND t.oid = a.atttypid AND a.attcollation <> t.typcollation) AS attcollation,
  a.attidentity,
  a.attgenerated,
  a.attstorage,
  a.attcompression AS attcompression,
  CASE WHEN a.attstattarget=-1 THEN NULL ELSE a.attstattarget END AS attstattarget,
  pg_catalog.col_description(a.attrelid, a.attnum)
FROM pg_catalog.pg_attribute a
WHERE a.attrelid = '@OID' AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY a.attnum;"#,
        r#"SELECT c2.relname, i.indisprimary, i.indisunique, i.indisclustered, i.indisvalid, pg_catalog.pg_get_indexdef(i.indexrelid, 0, true),
  pg_catalog.pg_get_constraintdef(con.oid, true), contype, condeferrable, condeferred, i.indisreplident, c2.reltablespace
FROM pg_catalog.pg_class c, pg_catalog.pg_class c2, pg_catalog.pg_index i
  LEFT JOIN pg_catalog.pg_constraint con ON (conrelid = i.indrelid AND conindid = i.indexrelid AND contype IN ('p','u','x'))
WHERE c.oid = '@OID' AND c.oid = i.indrelid AND i.indexrelid = c2.oid
ORDER BY i.indisprimary DESC, c2.relname;"#,
        r#"SELECT pol.polname, pol.polpermissive,
  CASE WHEN pol.polroles = '{0}' THEN NULL ELSE pg_catalog.array_to_string(array(select rolname from pg_catalog.pg_roles where oid = any (pol.polroles) order by 1),',') END,
  pg_catalog.pg_get_expr(pol.polqual, pol.polrelid),
  pg_catalog.pg_get_expr(pol.polwithcheck, pol.polrelid),
  CASE pol.polcmd
    WHEN 'r' THEN 'SELECT'
    WHEN 'a' THEN 'INSERT'
    WHEN 'w' THEN 'UPDATE'
    WHEN 'd' THEN 'DELETE'
    END AS cmd
FROM pg_catalog.pg_policy pol
WHERE pol.polrelid = '@OID' ORDER BY 1;"#,
        r#"SELECT oid, stxrelid::pg_catalog.regclass, stxnamespace::pg_catalog.regnamespace::pg_catalog.text AS nsp, stxname,
pg_catalog.pg_get_statisticsobjdef_columns(oid) AS columns,
  'd' = any(stxkind) AS ndist_enabled,
  'f' = any(stxkind) AS deps_enabled,
  'm' = any(stxkind) AS mcv_enabled,
stxstattarget
FROM pg_catalog.pg_statistic_ext
WHERE stxrelid = '@OID'
ORDER BY nsp, stxname;"#,
        r#"SELECT pubname
     , NULL
     , NULL
FROM pg_catalog.pg_publication p
     JOIN pg_catalog.pg_publication_namespace pn ON p.oid = pn.pnpubid
     JOIN pg_catalog.pg_class pc ON pc.relnamespace = pn.pnnspid
WHERE pc.oid ='@OID' and pg_catalog.pg_relation_is_publishable('@OID')
UNION
SELECT pubname
     , pg_get_expr(pr.prqual, c.oid)
     , (CASE WHEN pr.prattrs IS NOT NULL THEN
         (SELECT string_agg(attname, ', ')
           FROM pg_catalog.generate_series(0, pg_catalog.array_upper(pr.prattrs::pg_catalog.int2[], 1)) s,
                pg_catalog.pg_attribute
          WHERE attrelid = pr.prrelid AND attnum = prattrs[s])
        ELSE NULL END) FROM pg_catalog.pg_publication p
     JOIN pg_catalog.pg_publication_rel pr ON p.oid = pr.prpubid
     JOIN pg_catalog.pg_class c ON c.oid = pr.prrelid
WHERE pr.prrelid = '@OID'
UNION
SELECT pubname
     , NULL
     , NULL
FROM pg_catalog.pg_publication p
WHERE p.puballtables AND pg_catalog.pg_relation_is_publishable('@OID')
ORDER BY 1;"#,
        r#"SELECT c.oid::pg_catalog.regclass
FROM pg_catalog.pg_class c, pg_catalog.pg_inherits i
WHERE c.oid = i.inhparent AND i.inhrelid = '@OID'
  AND c.relkind != 'p' AND c.relkind != 'I'
ORDER BY inhseqno;"#,
        r#"SELECT c.oid::pg_catalog.regclass, c.relkind, inhdetachpending, pg_catalog.pg_get_expr(c.relpartbound, c.oid)
FROM pg_catalog.pg_class c, pg_catalog.pg_inherits i
WHERE c.oid = i.inhrelid AND i.inhparent = '@OID'
ORDER BY pg_catalog.pg_get_expr(c.relpartbound, c.oid) = 'DEFAULT', c.oid::pg_catalog.regclass::pg_catalog.text;"#,
    ]
    .iter()
    .map(|q| q.replace("@OID", oid))
    .collect()
}

#[test]
fn psql_describe_table_queries_work() {
    let e = engine();
    let mut s = e.connect("walden", "walden", "psql").unwrap();
    tag(
        &mut s,
        "CREATE TABLE t (id serial PRIMARY KEY, name varchar(20) NOT NULL, note text DEFAULT 'x', ts timestamp without time zone, amt numeric(12,2), b bigint)",
    );
    tag(&mut s, "CREATE TABLE nokey (a int)");
    tag(&mut s, "CREATE SEQUENCE s1");
    let found = rows(
        &mut s,
        r#"SELECT c.oid,
  n.nspname,
  c.relname
FROM pg_catalog.pg_class c
     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE c.relname OPERATOR(pg_catalog.~) '^(t)$' COLLATE pg_catalog.default
  AND pg_catalog.pg_table_is_visible(c.oid)
ORDER BY 2, 3;"#,
    );
    assert_eq!(found.len(), 1, "{found:?}");
    let oid = found[0][0].clone();
    assert_eq!(one(&mut s, "SELECT 't'::regclass::oid"), oid);
    assert_eq!(one(&mut s, &format!("SELECT {oid}::regclass")), "t");
    let q = describe_queries(&oid);
    let class = rows(&mut s, &q[0]);
    assert_eq!(class.len(), 1);
    assert_eq!(&class[0][1..3], &["r", "t"]);
    assert_eq!(class[0][14], "heap");
    let cols = rows(&mut s, &q[1]);
    let brief: Vec<Vec<&str>> = cols
        .iter()
        .map(|r| vec![r[0].as_str(), &r[1], &r[2], &r[3]])
        .collect();
    assert_eq!(
        brief,
        vec![
            vec!["id", "integer", "nextval('t_id_seq'::regclass)", "t"],
            vec!["name", "character varying(20)", "NULL", "t"],
            vec!["note", "text", "'x'::text", "f"],
            vec!["ts", "timestamp without time zone", "NULL", "f"],
            vec!["amt", "numeric(12,2)", "NULL", "f"],
            vec!["b", "bigint", "NULL", "f"],
        ]
    );
    let idx = rows(&mut s, &q[2]);
    assert_eq!(idx.len(), 1);
    assert_eq!(idx[0][0], "t_pkey");
    assert_eq!(idx[0][1], "t");
    assert_eq!(
        idx[0][5],
        "CREATE UNIQUE INDEX t_pkey ON public.t USING btree (id)"
    );
    assert_eq!(idx[0][6], "PRIMARY KEY (id)");
    assert_eq!(idx[0][7], "p");
    // Policies, statistics, publications and inheritance: none, no error.
    for q in &q[3..] {
        assert!(rows(&mut s, q).is_empty(), "{q}");
    }
    // \d lists tables and sequences (a serial column's too, as
    // PostgreSQL's), \di the primary-key indexes.
    let listed = rows(
        &mut s,
        "SELECT c.relname, c.relkind FROM pg_catalog.pg_class c WHERE c.relkind IN ('r','S','i') ORDER BY 1",
    );
    assert_eq!(
        listed,
        vec![
            vec!["nokey", "r"],
            vec!["s1", "S"],
            vec!["t", "r"],
            vec!["t_id_seq", "S"],
            vec!["t_pkey", "i"]
        ]
    );
    // Every catalog reads without error, with rows as wide as its columns.
    for v in [
        "pg_database",
        "pg_namespace",
        "pg_class",
        "pg_attribute",
        "pg_attrdef",
        "pg_index",
        "pg_constraint",
        "pg_am",
        "pg_collation",
        "pg_type",
        "pg_inherits",
        "pg_partitioned_table",
        "pg_policy",
        "pg_statistic_ext",
        "pg_publication",
        "pg_publication_namespace",
        "pg_publication_rel",
        "pg_roles",
        "pg_sequence",
        "pg_depend",
        "pg_description",
        "pg_trigger",
        "pg_rewrite",
        "pg_auth_members",
        "pg_extension",
        "pg_proc",
        "pg_tablespace",
        "pg_tables",
        "pg_indexes",
    ] {
        rows(&mut s, &format!("SELECT * FROM pg_catalog.{v}"));
    }
    assert_eq!(
        err(&mut s, "SELECT 'nosuch'::regclass"),
        ErrorKind::UndefinedTable
    );
    assert_eq!(
        one(
            &mut s,
            "SELECT 'pg_catalog.pg_class'::pg_catalog.regclass::oid"
        ),
        "1259"
    );
    assert_eq!(
        rows(
            &mut s,
            "SELECT 2 = ANY ('{1,2}'), 3 = ANY ('{1,2}'), array_to_string(ARRAY[1, NULL, 3], '-'), ('{a,b}'::text[])[2]"
        ),
        vec![vec!["t", "f", "1-3", "b"]]
    );
}

#[test]
fn copy_to_stdout_returns_rows_and_format() {
    let e = engine();
    let mut s = e.connect("walden", "walden", "psql").unwrap();
    tag(
        &mut s,
        "CREATE TABLE c (id int PRIMARY KEY, name text, n int)",
    );
    tag(&mut s, "INSERT INTO c VALUES (1, 'a', NULL), (2, 'b', 5)");
    let out = s
        .execute_batch("COPY c (name, id) TO STDOUT WITH (FORMAT csv, HEADER)")
        .pop()
        .unwrap()
        .unwrap();
    assert_eq!(out.tag, "COPY 2");
    let copy = out.copy_out.expect("copy_out");
    assert!(copy.format.csv && copy.format.header);
    let names: Vec<&str> = out
        .columns
        .as_ref()
        .unwrap()
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(names, vec!["name", "id"]);
    assert_eq!(out.rows.len(), 2);
    let out = s
        .execute_batch("COPY (SELECT n FROM c WHERE id = 2) TO STDOUT")
        .pop()
        .unwrap()
        .unwrap();
    assert_eq!(out.tag, "COPY 1");
    assert_eq!(out.rows[0][0].to_string(), "5");
    assert_eq!(
        err(&mut s, "COPY c TO '/tmp/walden-copy-out'"),
        ErrorKind::FeatureNotSupported
    );
    assert_eq!(
        err(&mut s, "COPY c (nosuch) TO STDOUT"),
        ErrorKind::UndefinedColumn
    );
    assert_eq!(
        err(&mut s, "COPY nosuch TO STDOUT"),
        ErrorKind::UndefinedTable
    );
    // The binary format is laid out by the wire server; the session marks it.
    let out = s
        .execute_batch("COPY c TO STDOUT WITH (FORMAT binary)")
        .pop()
        .unwrap()
        .unwrap();
    assert!(out.copy_out.unwrap().format.binary);
    assert_eq!(
        err(&mut s, "COPY c TO STDOUT WITH (FORMAT binary, HEADER)"),
        ErrorKind::FeatureNotSupported
    );
}

/// An identity column's kind (`GENERATED BY DEFAULT AS IDENTITY`, shown as
/// one in the catalogs, against a serial column) survives log replay and a
/// checkpoint image.
#[test]
fn identity_kind_survives_recovery() {
    use std::sync::Arc;
    use walden_engine::{Instance, InstanceConfig, LogConfig, MemVfs};
    use walden_log::CrashMode;
    use walden_sql::SqlEngine;
    let open = |mem: &MemVfs| {
        let inst = Instance::open(InstanceConfig {
            vfs: Arc::new(mem.clone()),
            log: LogConfig {
                segment_size: 4 << 20,
                preallocate_spare: false,
                ..LogConfig::default()
            },
            background_checkpoints: false,
            ..InstanceConfig::new("/sql")
        })
        .unwrap();
        SqlEngine::new(inst)
    };
    let kinds = "SELECT c.relname, a.attidentity, a.atthasdef FROM pg_attribute a \
                 JOIN pg_class c ON c.oid = a.attrelid \
                 WHERE c.relname IN ('gi', 'gs', 'gc') AND a.attname = 'id' ORDER BY 1";
    let want = [["gc", "d", "f"], ["gi", "d", "f"], ["gs", "", "t"]];
    let mem = MemVfs::new();
    let e = open(&mem);
    let mut s = e.connect("walden", "u", "").unwrap();
    // gc is in the checkpoint image; gi and gs only in the log after it.
    tag(
        &mut s,
        "CREATE TABLE gc (id bigint GENERATED BY DEFAULT AS IDENTITY, v text)",
    );
    tag(&mut s, "CHECKPOINT");
    tag(
        &mut s,
        "CREATE TABLE gi (id int GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, v text)",
    );
    tag(&mut s, "CREATE TABLE gs (id serial PRIMARY KEY, v text)");
    assert_eq!(rows(&mut s, kinds), want);
    let crashed = mem.crash(CrashMode::SyncedOnly, 1);
    drop(s);
    drop(e);
    for mem in [crashed.clone(), crashed] {
        let e = open(&mem);
        let mut s = e.connect("walden", "u", "").unwrap();
        assert_eq!(rows(&mut s, kinds), want);
        // Then all of it from a checkpoint image.
        tag(&mut s, "CHECKPOINT");
    }
}
