"""psycopg 3 against a server: python3 psycopg_suite.py 'host=... port=...'"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from conformance import check, run  # noqa: E402

import psycopg  # noqa: E402  (missing driver: the import fails the run)
from psycopg import errors  # noqa: E402

DSN = sys.argv[1]


def connect(**kw):
    return psycopg.connect(DSN, connect_timeout=10, **kw)


def fresh(conn, table, cols):
    conn.execute(f"DROP TABLE IF EXISTS {table}")
    conn.execute(f"CREATE TABLE {table} ({cols})")


@check()
def crud_with_parameters():
    with connect(autocommit=True) as c:
        fresh(c, "pg_crud", "id int PRIMARY KEY, name text, score float8, ok boolean")
        c.execute("INSERT INTO pg_crud VALUES (%s, %s, %s, %s)", (1, "a'b", 1.5, True))
        c.execute("INSERT INTO pg_crud VALUES (%s, %s, %s, %s)", (2, None, None, None))
        c.execute("UPDATE pg_crud SET name = %s WHERE id = %s", ("two", 2))
        rows = c.execute("SELECT id, name, score, ok FROM pg_crud ORDER BY id").fetchall()
        assert rows == [(1, "a'b", 1.5, True), (2, "two", None, None)], rows
        c.execute("DELETE FROM pg_crud WHERE id = %s", (1,))
        assert c.execute("SELECT count(*) FROM pg_crud").fetchone()[0] == 1


@check()
def errors_carry_sqlstate_and_the_connection_survives():
    with connect(autocommit=True) as c:
        try:
            c.execute("SELECT * FROM no_such_table_here")
            raise AssertionError("no error")
        except errors.UndefinedTable:
            pass
        try:
            c.execute("SELECT 1 / %s", (0,))
            raise AssertionError("no error")
        except errors.DivisionByZero:
            pass
        assert c.execute("SELECT 1").fetchone()[0] == 1


@check()
def transaction_rolls_back_after_an_error():
    with connect(autocommit=True) as c:
        fresh(c, "pg_tx", "id int PRIMARY KEY")
    with connect() as c:
        c.execute("INSERT INTO pg_tx VALUES (1)")
        try:
            c.execute("INSERT INTO pg_tx VALUES (1)")
            raise AssertionError("no error")
        except errors.UniqueViolation:
            pass
        try:
            c.execute("SELECT 1")
            raise AssertionError("statement ran in a failed transaction")
        except errors.InFailedSqlTransaction:
            pass
        c.rollback()
        assert c.execute("SELECT count(*) FROM pg_tx").fetchone()[0] == 0


@check()
def pipeline_mode_runs_many_statements():
    with connect(autocommit=True) as c:
        fresh(c, "pg_pipe", "id int PRIMARY KEY, v text")
        with c.pipeline():
            cur = c.cursor()
            for i in range(50):
                cur.execute("INSERT INTO pg_pipe VALUES (%s, %s)", (i, str(i)))
            cur.execute("SELECT count(*) FROM pg_pipe")
        assert cur.fetchone()[0] == 50


@check()
def pipeline_error_is_reported_and_undoes_its_group():
    with connect(autocommit=True) as c:
        fresh(c, "pg_pipe_err", "id int PRIMARY KEY")
        try:
            with c.pipeline():
                c.execute("INSERT INTO pg_pipe_err VALUES (1)")
                c.execute("INSERT INTO no_such_table_here VALUES (2)")
                c.execute("INSERT INTO pg_pipe_err VALUES (3)")
            raise AssertionError("no error")
        except errors.UndefinedTable:
            pass
        # The statements up to the Sync were one implicit transaction.
        n = c.execute("SELECT count(*) FROM pg_pipe_err").fetchone()[0]
        assert n == 0, n
        # The pipeline and the connection work again.
        with c.pipeline():
            c.execute("INSERT INTO pg_pipe_err VALUES (4)")
        assert c.execute("SELECT count(*) FROM pg_pipe_err").fetchone()[0] == 1


@check()
def pipeline_sync_points_keep_earlier_groups():
    with connect(autocommit=True) as c:
        fresh(c, "pg_pipe_sync", "id int PRIMARY KEY")
        try:
            with c.pipeline() as p:
                c.execute("INSERT INTO pg_pipe_sync VALUES (1)")
                p.sync()
                c.execute("INSERT INTO pg_pipe_sync VALUES (1)")
        except errors.UniqueViolation:
            pass
        assert c.execute("SELECT count(*) FROM pg_pipe_sync").fetchone()[0] == 1


@check()
def prepared_statements_and_binary_results():
    with connect(autocommit=True) as c:
        for i in range(8):  # psycopg prepares from the 5th execution
            r = c.execute("SELECT %s::int + 1, %s::text", (i, "x"), prepare=True).fetchone()
            assert r == (i + 1, "x"), r
        cur = c.cursor(binary=True)
        r = cur.execute("SELECT 42::int4, 7::int8, 'b'::text, true, 2.5::float8").fetchone()
        assert r == (42, 7, "b", True, 2.5), r


@check()
def streaming_a_large_result():
    with connect(autocommit=True) as c:
        n = 0
        for (x,) in c.cursor().stream("SELECT x FROM generate_series(1, 20000) AS x"):
            n += 1
        assert n == 20000, n


@check()
def copy_in_and_out_text():
    with connect(autocommit=True) as c:
        fresh(c, "pg_copy", "id int PRIMARY KEY, v text")
        with c.cursor().copy("COPY pg_copy (id, v) FROM STDIN") as cp:
            for i in range(100):
                cp.write_row((i, f"v{i}"))
        assert c.execute("SELECT count(*) FROM pg_copy").fetchone()[0] == 100
        out = []
        with c.cursor().copy("COPY (SELECT id FROM pg_copy ORDER BY id) TO STDOUT") as cp:
            for row in cp.rows():
                out.append(row)
        assert len(out) == 100, len(out)


@check()
def advisory_locks_and_settings():
    with connect(autocommit=True) as a, connect(autocommit=True) as b:
        a.execute("SELECT pg_advisory_lock(%s)", (7,))
        assert b.execute("SELECT pg_try_advisory_lock(7)").fetchone()[0] is False
        assert a.execute("SELECT pg_advisory_unlock(7)").fetchone()[0] is True
        assert b.execute("SELECT pg_try_advisory_lock(7)").fetchone()[0] is True
        b.execute("SELECT pg_advisory_unlock_all()")
        a.execute("SELECT set_config('application_name', 'conformance', false)")
        v = a.execute("SELECT current_setting('application_name')").fetchone()[0]
        assert v == "conformance", v


@check()
def now_is_fixed_within_a_transaction():
    with connect() as c:
        t1 = c.execute("SELECT now()").fetchone()[0]
        c.execute("SELECT pg_sleep(0.05)")
        t2 = c.execute("SELECT now()").fetchone()[0]
        assert t1 == t2, (t1, t2)


@check()
def named_cursor():
    with connect() as c:
        fresh(c, "pg_named", "id int PRIMARY KEY, v text")
        c.execute("INSERT INTO pg_named SELECT x, 'v' || x FROM generate_series(1, 1000) AS x")
        c.commit()
        with c.cursor(name="nc") as cur:
            cur.itersize = 100
            cur.execute("SELECT id, v FROM pg_named WHERE id > %s ORDER BY id", (10,))
            assert [d.name for d in cur.description] == ["id", "v"], cur.description
            assert cur.fetchmany(3) == [(11, "v11"), (12, "v12"), (13, "v13")]
            assert cur.fetchone() == (14, "v14")
            # The rest comes in FETCH FORWARD 100 round trips.
            assert sum(1 for _ in cur) == 986
            listed = c.execute("SELECT name, is_holdable FROM pg_cursors").fetchall()
            assert listed == [("nc", False)], listed
        with c.cursor(name="sc", scrollable=True) as cur:
            cur.execute("SELECT id FROM pg_named ORDER BY id")
            cur.scroll(10, mode="absolute")
            assert cur.fetchone() == (11,)
            cur.scroll(-5)
            assert cur.fetchone() == (7,)
        with c.cursor(name="bc", binary=True) as cur:
            cur.execute("SELECT id, v FROM pg_named ORDER BY id LIMIT 3")
            assert cur.fetchall() == [(1, "v1"), (2, "v2"), (3, "v3")]
        c.commit()
        with c.cursor(name="hc", withhold=True) as cur:
            cur.execute("SELECT id FROM pg_named ORDER BY id LIMIT 5")
            c.commit()
            assert cur.fetchall() == [(1,), (2,), (3,), (4,), (5,)]
        assert c.execute("SELECT count(*) FROM pg_cursors").fetchone()[0] == 0
    # Without a transaction block only WITH HOLD cursors exist, as in PostgreSQL.
    with connect(autocommit=True) as c:
        try:
            with c.cursor(name="x") as cur:
                cur.execute("SELECT 1")
            raise AssertionError("no error")
        except errors.NoActiveSqlTransaction:
            pass
        with c.cursor(name="y", withhold=True) as cur:
            cur.execute("SELECT x FROM generate_series(1, 5) AS x")
            assert cur.fetchall() == [(1,), (2,), (3,), (4,), (5,)]


@check()
def copy_binary():
    import datetime as dt
    import decimal
    import uuid

    types = ["int4", "text", "numeric", "timestamptz", "uuid", "bytea", "bool", "jsonb"]
    at = dt.datetime(2022, 3, 4, 5, 6, 7, 8, tzinfo=dt.timezone.utc)
    rows = [
        (1, "a\tb", decimal.Decimal("1.50"), at, uuid.UUID(int=7), b"\x00\xff", True,
         psycopg.types.json.Jsonb({"k": [1, None]})),
        (2, None, None, None, None, None, None, None),
    ]
    with connect(autocommit=True) as c:
        fresh(c, "pg_copyb", "id int PRIMARY KEY, t text, n numeric(6,2), at timestamptz, "
              "u uuid, b bytea, ok boolean, j jsonb")
        with c.cursor().copy("COPY pg_copyb FROM STDIN (FORMAT BINARY)") as cp:
            cp.set_types(types)
            for r in rows:
                cp.write_row(r)
        assert c.execute("SELECT count(*) FROM pg_copyb").fetchone()[0] == 2
        back = []
        with c.cursor().copy("COPY (SELECT * FROM pg_copyb ORDER BY id) TO STDOUT (FORMAT BINARY)") as cp:
            cp.set_types(types)
            while (r := cp.read_row()) is not None:
                back.append(r)
        want = [rows[0][:7] + ({"k": [1, None]},), rows[1]]
        assert back == want, back
        # Malformed data: 22P04, and the connection goes on.
        try:
            with c.cursor().copy("COPY pg_copyb FROM STDIN (FORMAT BINARY)") as cp:
                cp.write(b"not a binary copy")
            raise AssertionError("no error")
        except psycopg.errors.BadCopyFileFormat as e:
            assert "signature" in str(e), e
        assert c.execute("SELECT count(*) FROM pg_copyb").fetchone()[0] == 2


@check()
def type_info_fetch():
    from psycopg.types import TypeInfo

    with connect() as c:
        t = TypeInfo.fetch(c, "int4")
        assert t is not None and t.oid == 23


@check()
def timestamptz_round_trip():
    import datetime as dt

    with connect(autocommit=True) as c:
        v = dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.timezone(dt.timedelta(hours=-5)))
        r = c.execute("SELECT %s::timestamptz", (v,)).fetchone()[0]
        assert r == v, r
        # Text and binary results follow SET TIME ZONE (the offset shown is
        # the zone's at that instant; psycopg reads TimeZone for binary).
        c.execute("SET TIME ZONE 'America/New_York'")
        for binary in (False, True):
            cur = c.cursor(binary=binary)
            r = cur.execute("SELECT '2024-07-01 12:00:00+00'::timestamptz").fetchone()[0]
            assert r == dt.datetime(2024, 7, 1, 12, tzinfo=dt.timezone.utc), r
            assert r.utcoffset() == dt.timedelta(hours=-4), (binary, r)
        r = c.execute("SELECT '2024-01-15 09:30'::timestamptz::text").fetchone()[0]
        assert r == "2024-01-15 09:30:00-05", r


@check()
def time_interval_char_numeric():
    import datetime as dt
    from decimal import Decimal

    with connect(autocommit=True) as c:
        fresh(c, "pg_types", "id int PRIMARY KEY, t time, i interval, c char(5), n numeric(6,2)")
        c.execute(
            "INSERT INTO pg_types VALUES (1, %s, %s, %s, %s)",
            (dt.time(12, 34, 56, 500000), dt.timedelta(days=3, hours=4), "ab", Decimal("2")),
        )
        for binary in (False, True):
            cur = c.cursor(binary=binary)
            row = cur.execute("SELECT t, i, c, n, n::text FROM pg_types").fetchone()
            assert row == (
                dt.time(12, 34, 56, 500000),
                dt.timedelta(days=3, hours=4),
                "ab   ",
                Decimal("2.00"),
                "2.00",
            ), (binary, row)
        r = c.execute(
            "SELECT date '2024-01-31' + interval '1 month', "
            "timestamp '2024-03-01' - timestamp '2024-02-28 12:00', "
            "date_trunc('month', timestamp '2024-05-17 10:00'), "
            "extract(year from date '2024-05-17'), age(date '2024-03-15', date '2023-01-31')::text, "
            "count(*) FROM pg_types WHERE c = 'ab'"
        ).fetchone()
        assert r == (
            dt.datetime(2024, 2, 29),
            dt.timedelta(days=1, hours=12),
            dt.datetime(2024, 5, 1),
            Decimal("2024"),
            "1 year 1 mon 15 days",
            1,
        ), r


@check()
def json_and_jsonb_round_trip():
    from psycopg.types.json import Json, Jsonb

    with connect(autocommit=True) as c:
        fresh(c, "pg_json", "id int PRIMARY KEY, j jsonb, t json")
        doc = {"b": [1, 2.5, None], "a": {"x": "y\"z"}}
        c.execute("INSERT INTO pg_json VALUES (1, %s, %s)", (Jsonb(doc), Json(doc)))
        for binary in (False, True):
            cur = c.cursor(binary=binary)
            j, t, a, b = cur.execute(
                "SELECT j, t, j -> 'a' ->> 'x', j #> '{b,1}' FROM pg_json"
            ).fetchone()
            # psycopg parses json and jsonb into Python objects.
            assert j == doc and t == doc, (binary, j, t)
            assert a == 'y"z' and b == 2.5, (binary, a, b)
        r = c.execute("SELECT j::text FROM pg_json").fetchone()[0]
        assert r == '{"a": {"x": "y\\"z"}, "b": [1, 2.5, null]}', r
        assert c.execute("SELECT count(*) FROM pg_json WHERE j @> %s", (Jsonb({"b": [2.5]}),)).fetchone()[0] == 1
        try:
            c.execute("SELECT %s::jsonb", ("{bad",))
            raise AssertionError("no error")
        except errors.InvalidTextRepresentation as e:
            assert e.diag.message_primary == "invalid input syntax for type json", e.diag.message_primary
            assert e.diag.message_detail == 'Token "bad" is invalid.', e.diag.message_detail


@check()
def quoted_alias_keeps_its_case():
    with connect(autocommit=True) as c:
        cur = c.execute('SELECT 1 AS "FirstName"')
        assert cur.description[0].name == "FirstName", cur.description[0].name


@check()
def quoted_column_keeps_its_case():
    with connect(autocommit=True) as c:
        fresh(c, "pg_case", '"FirstName" text')
        cur = c.execute("SELECT * FROM pg_case")
        assert cur.description[0].name == "FirstName", cur.description[0].name


@check()
def enum_type_text_and_binary():
    import enum

    from psycopg.types.enum import EnumInfo, register_enum

    with connect(autocommit=True) as c:
        c.execute("DROP TABLE IF EXISTS pg_enumt")
        c.execute("DROP TYPE IF EXISTS pg_mood")
        c.execute("CREATE TYPE pg_mood AS ENUM ('sad', 'ok', 'happy')")
        fresh(c, "pg_enumt", "id int PRIMARY KEY, m pg_mood, ms pg_mood[]")
        c.execute("INSERT INTO pg_enumt VALUES (%s, %s, %s)", (1, "happy", ["sad", "ok"]))
        c.execute("INSERT INTO pg_enumt VALUES (2, 'sad', NULL)")
        cur = c.execute("SELECT m FROM pg_enumt ORDER BY m")
        oid = c.execute("SELECT oid FROM pg_type WHERE typname = 'pg_mood'").fetchone()[0]
        assert cur.description[0].type_code == oid, (cur.description[0].type_code, oid)
        # Unregistered: text results are the labels, binary results their bytes.
        assert [r[0] for r in cur.fetchall()] == ["sad", "happy"]
        r = c.cursor(binary=True).execute("SELECT m FROM pg_enumt WHERE id = 1").fetchone()[0]
        assert bytes(r) == b"happy", r
        try:
            c.execute("INSERT INTO pg_enumt VALUES (3, 'angry', NULL)")
            raise AssertionError("no error")
        except errors.InvalidTextRepresentation as e:
            assert 'invalid input value for enum pg_mood: "angry"' in str(e), e
        # Registered as a Python Enum: parameters and results, both formats.
        info = EnumInfo.fetch(c, "pg_mood")
        assert info.labels == ["sad", "ok", "happy"], info.labels
        Mood = enum.Enum("Mood", ["sad", "ok", "happy"])
        register_enum(info, c, Mood)
        for binary in (False, True):
            cur = c.cursor(binary=binary)
            row = cur.execute("SELECT m, ms FROM pg_enumt WHERE id = %s", (1,)).fetchone()
            assert row == (Mood.happy, [Mood.sad, Mood.ok]), (binary, row)
            n = cur.execute("SELECT count(*) FROM pg_enumt WHERE m < %s", (Mood.happy,))
            assert n.fetchone()[0] == 1
        c.execute("DROP TABLE pg_enumt")
        c.execute("DROP TYPE pg_mood")


@check()
def set_operations_and_casts_resolve_types():
    from decimal import Decimal

    with connect(autocommit=True) as c:
        # The described type and the values agree: numeric for both rows.
        cur = c.execute("SELECT 1 AS x UNION SELECT 2.5 ORDER BY 1")
        assert cur.description[0].type_code == 1700, cur.description[0].type_code
        assert cur.fetchall() == [(Decimal("1"),), (Decimal("2.5"),)]
        cur = c.execute("SELECT COALESCE(%s, 2.5), CASE WHEN true THEN 1 ELSE 2.5 END", (1,))
        assert [d.type_code for d in cur.description] == [1700, 1700], cur.description
        assert cur.fetchone() == (Decimal("1"), Decimal("1"))
        cur = c.execute("VALUES (1), (2.5)", binary=True)
        assert cur.fetchall() == [(Decimal("1"),), (Decimal("2.5"),)]
        try:
            c.execute("SELECT 1 UNION SELECT 'a'::text")
            raise AssertionError("no error")
        except errors.DatatypeMismatch as e:
            assert "UNION types integer and text cannot be matched" in str(e), e
        # An explicit cast cuts; an assignment does not.
        assert c.execute("SELECT 'abcd'::varchar(3), 'abcd'::char(2)").fetchone() == ("abc", "ab")
        fresh(c, "pg_cut", "v varchar(3)")
        try:
            c.execute("INSERT INTO pg_cut VALUES (%s)", ("abcd",))
            raise AssertionError("no error")
        except errors.StringDataRightTruncation:
            pass
        c.execute("DROP TABLE pg_cut")


def _notes(conn, n, timeout=3.0):
    """The next n notifications as (channel, payload, from_self), bounded."""
    got = []
    if n == 0:
        # None should come: wait a moment for one that should not.
        for note in conn.notifies(timeout=0.3, stop_after=1):
            got.append(note)
        return [(x.channel, x.payload, x.pid == conn.info.backend_pid) for x in got]
    for note in conn.notifies(timeout=timeout, stop_after=n):
        got.append(note)
    return [(x.channel, x.payload, x.pid == conn.info.backend_pid) for x in got]


@check()
def listen_notify_across_sessions():
    with connect(autocommit=True) as a, connect(autocommit=True) as b:
        a.execute("LISTEN pg_chan")
        assert a.execute("SELECT pg_listening_channels()").fetchall() == [("pg_chan",)]
        # Delivered at commit to every listener, the notifier included.
        b.execute("LISTEN pg_chan")
        b.execute("NOTIFY pg_chan, 'one'")
        assert _notes(a, 1) == [("pg_chan", "one", False)]
        assert _notes(b, 1) == [("pg_chan", "one", True)]
        # Duplicates within a transaction fold; none on rollback.
        with b.transaction():
            b.execute("NOTIFY pg_chan, 'dup'")
            b.execute("SELECT pg_notify('pg_chan', 'dup')")
            b.execute("SELECT pg_notify(%s, %s)", ("pg_chan", "two"))
        assert _notes(a, 2) == [("pg_chan", "dup", False), ("pg_chan", "two", False)]
        try:
            with b.transaction():
                b.execute("NOTIFY pg_chan, 'gone'")
                raise RuntimeError("roll back")
        except RuntimeError:
            pass
        assert _notes(a, 0) == []
        # The payload limit.
        try:
            b.execute("SELECT pg_notify('pg_chan', repeat('x', 8000))")
            raise AssertionError("no error")
        except errors.InvalidParameterValue as e:
            assert "payload string too long" in str(e), e
        a.execute("UNLISTEN *")
        b.execute("NOTIFY pg_chan, 'unheard'")
        assert _notes(a, 0) == []
        assert a.execute("SELECT count(*) FROM pg_listening_channels()").fetchone()[0] == 0


@check()
def listen_inside_a_transaction_takes_effect_at_commit():
    with connect() as a, connect(autocommit=True) as b:
        a.execute("LISTEN pg_late")
        b.execute("NOTIFY pg_late, 'before commit'")
        assert a.execute("SELECT count(*) FROM pg_listening_channels()").fetchone()[0] == 0
        a.commit()
        assert _notes(a, 0) == []
        b.execute("NOTIFY pg_late, 'after commit'")
        assert _notes(a, 1) == [("pg_late", "after commit", False)]
        a.execute("UNLISTEN pg_late")
        a.commit()



if __name__ == "__main__":
    print(f"psycopg {psycopg.__version__}")
    run(lambda f: f())
