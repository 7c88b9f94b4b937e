"""pgcli's completion metadata against a server:
python3 pgcli_suite.py 'host=... port=...'

pgcli (psycopg 3 underneath) fills its completer through
`pgcli.pgexecute.PGExecute`: schemata, tables, views, columns, functions,
data types, foreign keys and databases, each one catalog query. Every
method is called here and what it returns is checked; then pgcli's own
refreshers fill a completer and the completions of a few statements are
checked, as a user typing in pgcli would get them.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from conformance import check, run  # noqa: E402

from pgcli.pgexecute import PGExecute  # noqa: E402  (missing library: the import fails the run)
from pgcli.completion_refresher import CompletionRefresher  # noqa: E402
from pgcli.pgcompleter import PGCompleter  # noqa: E402
from prompt_toolkit.document import Document  # noqa: E402

DSN = sys.argv[1]

SETUP = [
    "DROP TABLE IF EXISTS pgc_child",
    "DROP TABLE IF EXISTS pgc_parent",
    "DROP TYPE IF EXISTS pgc_mood",
    "CREATE TYPE pgc_mood AS ENUM ('sad', 'ok', 'happy')",
    "CREATE TABLE pgc_parent (id serial PRIMARY KEY, pname text NOT NULL)",
    "CREATE TABLE pgc_child (id int PRIMARY KEY, parent_id int REFERENCES pgc_parent (id), "
    "mood pgc_mood, note varchar(20))",
]


def executor():
    return PGExecute(dsn=DSN, connect_timeout=10)


def setup():
    ex = executor()
    with ex.conn.cursor() as cur:
        for sql in SETUP:
            cur.execute(sql)
    return ex


@check()
def connects_and_reads_server_facts():
    ex = executor()
    assert ex.dbname, ex.dbname
    assert ex.server_version, ex.server_version
    assert not ex.is_virtual_database()
    assert ex.valid_transaction() is False
    ex.conn.close()


@check()
def search_path_and_schemata():
    ex = setup()
    assert ex.search_path() == ["pg_catalog", "public"], ex.search_path()
    schemata = ex.schemata()
    for s in ("public", "pg_catalog", "information_schema"):
        assert s in schemata, schemata


@check()
def tables_and_views():
    ex = setup()
    tables = list(ex.tables())
    for t in ("pgc_parent", "pgc_child"):
        assert ("public", t) in tables, tables
    views = list(ex.views())
    assert all(s != "public" for s, _ in views), views


@check()
def table_columns_with_types_and_defaults():
    ex = setup()
    cols = {(c[1], c[2]): c for c in ex.table_columns() if c[0] == "public"}
    assert cols[("pgc_child", "parent_id")][3:] == ("integer", False, None), cols[
        ("pgc_child", "parent_id")
    ]
    assert cols[("pgc_child", "mood")][3] == "pgc_mood", cols[("pgc_child", "mood")]
    assert cols[("pgc_child", "note")][3] == "character varying", cols[("pgc_child", "note")]
    parent_id = cols[("pgc_parent", "id")]
    assert parent_id[3:] == ("integer", True, "nextval('pgc_parent_id_seq'::regclass)"), parent_id


@check()
def view_columns_of_no_views():
    ex = setup()
    assert [c for c in ex.view_columns() if c[0] == "public"] == []


@check()
def foreign_keys():
    ex = setup()
    fks = [tuple(fk) for fk in ex.foreignkeys()]
    assert ("public", "pgc_parent", "id", "public", "pgc_child", "parent_id") in fks, fks


@check()
def functions_with_signatures():
    ex = setup()
    funcs = {}
    for f in ex.functions():
        funcs.setdefault((f.schema_name, f.func_name), []).append(f)
    for name in ("now", "pg_sleep", "lower", "pg_advisory_lock", "concat"):
        assert ("pg_catalog", name) in funcs, sorted(funcs)[:20]
    (sleep,) = funcs[("pg_catalog", "pg_sleep")]
    assert sleep.return_type == "void", sleep
    assert list(sleep.arg_types) == ["double precision"], sleep
    (now,) = funcs[("pg_catalog", "now")]
    assert now.return_type == "timestamp with time zone", now
    assert not now.is_aggregate and not now.is_window and not now.is_set_returning


@check()
def datatypes_and_databases():
    ex = setup()
    types = list(ex.datatypes())
    assert ("public", "pgc_mood") in types, types
    assert ex.dbname in ex.databases(), ex.databases()
    rows, headers, _ = ex.full_databases()
    assert headers[:3] == ["Name", "Owner", "Encoding"], headers
    assert any(r[0] == ex.dbname for r in rows), rows


def completions(completer, text):
    """The completions at `|` in `text` (at its end without one)."""
    at = text.find("|")
    if at < 0:
        at = len(text)
    doc = Document(text=text.replace("|", ""), cursor_position=at)
    return {c.text for c in completer.get_completions(doc, None)}


@check()
def completer_filled_by_pgcli_refreshers():
    ex = setup()
    completer = PGCompleter(smart_completion=True, settings={})
    for name, refresh in CompletionRefresher.refreshers.items():
        refresh(completer, ex)
    got = completions(completer, "SELECT * FROM pgc_")
    assert {"pgc_parent", "pgc_child"} <= got, got
    got = completions(completer, "SELECT | FROM pgc_child")
    assert {"parent_id", "mood", "note"} <= got, sorted(got)[:40]
    # A join condition from the foreign key.
    got = completions(completer, "SELECT * FROM pgc_child c JOIN pgc_p")
    assert "pgc_parent ON pgc_parent.id = c.parent_id" in got, sorted(got)[:40]
    got = completions(completer, "SELECT * FROM pgc_child c JOIN pgc_parent p ON ")
    assert "p.id = c.parent_id" in got, sorted(got)[:40]
    # Catalog functions, offered when qualified (as pgcli does).
    got = completions(completer, "SELECT pg_catalog.pg_sle")
    assert "pg_sleep()" in got, got
    got = completions(completer, "CREATE TABLE x (m pgc_")
    assert "pgc_mood" in got, got


if __name__ == "__main__":
    run(lambda f: f())
