"""asyncpg against a server: python3 asyncpg_suite.py 'host=... port=...'"""

import asyncio
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from conformance import check, run  # noqa: E402

import asyncpg  # noqa: E402  (missing driver: the import fails the run)


def dsn():
    """asyncpg takes a URL: built from the libpq key=value string."""
    kv = dict(p.split("=", 1) for p in sys.argv[1].split())
    return "postgresql://{}@{}:{}/{}".format(
        kv.get("user", "walden"), kv["host"], kv["port"], kv.get("dbname", "walden")
    )


async def connect():
    return await asyncpg.connect(dsn(), timeout=10)


async def fresh(c, table, cols):
    await c.execute(f"DROP TABLE IF EXISTS {table}")
    await c.execute(f"CREATE TABLE {table} ({cols})")


@check()
async def queries_with_parameters():
    c = await connect()
    try:
        await fresh(c, "ap_crud", "id int PRIMARY KEY, name text")
        await c.execute("INSERT INTO ap_crud VALUES ($1, $2)", 1, "one")
        await c.executemany("INSERT INTO ap_crud VALUES ($1, $2)", [(i, str(i)) for i in range(2, 50)])
        assert await c.fetchval("SELECT count(*) FROM ap_crud") == 49
        row = await c.fetchrow("SELECT id, name FROM ap_crud WHERE id = $1", 1)
        assert (row["id"], row["name"]) == (1, "one"), row
    finally:
        await c.close()


@check()
async def errors_return_promptly():
    c = await connect()
    try:
        try:
            await c.fetch("SELECT * FROM no_such_table_here")
            raise AssertionError("no error")
        except asyncpg.exceptions.UndefinedTableError:
            pass
        try:
            await c.fetchval("SELECT 1 / $1::int", 0)
            raise AssertionError("no error")
        except asyncpg.exceptions.DivisionByZeroError:
            pass
        try:
            await c.execute("SELEC 1")
            raise AssertionError("no error")
        except asyncpg.exceptions.PostgresSyntaxError:
            pass
        assert await c.fetchval("SELECT 1") == 1
    finally:
        await c.close()


@check()
async def transaction_block_rolls_back():
    c = await connect()
    try:
        await fresh(c, "ap_tx", "id int PRIMARY KEY")
        try:
            async with c.transaction():
                await c.execute("INSERT INTO ap_tx VALUES (1)")
                await c.execute("INSERT INTO ap_tx VALUES (1)")
        except asyncpg.exceptions.UniqueViolationError:
            pass
        assert await c.fetchval("SELECT count(*) FROM ap_tx") == 0
    finally:
        await c.close()


@check()
async def cursor_fetches_in_batches():
    c = await connect()
    try:
        async with c.transaction():
            n = 0
            async for _ in c.cursor("SELECT x FROM generate_series(1, 1000) AS x", prefetch=100):
                n += 1
            assert n == 1000, n
            cur = await c.cursor("SELECT x FROM generate_series(1, 10) AS x")
            assert [r[0] for r in await cur.fetch(3)] == [1, 2, 3]
            assert [r[0] for r in await cur.fetch(3)] == [4, 5, 6]
    finally:
        await c.close()


@check()
async def pool_acquire_and_release():
    # Release runs pg_advisory_unlock_all(), CLOSE ALL, UNLISTEN *, RESET ALL.
    pool = await asyncpg.create_pool(dsn(), min_size=1, max_size=2, timeout=10)
    try:
        for _ in range(3):
            async with pool.acquire() as c:
                await c.execute("SELECT pg_advisory_lock(99)")
                await c.execute("SET application_name = 'pooled'")
        async with pool.acquire() as c:
            # The release unlocked it and reset the setting.
            other = await connect()
            try:
                assert await other.fetchval("SELECT pg_try_advisory_lock(99)") is True
            finally:
                await other.close()
            assert await c.fetchval("SHOW application_name") != "pooled"
    finally:
        await pool.close()


@check()
async def server_version_and_catalog_lookup():
    c = await connect()
    try:
        v = c.get_server_version()
        assert v.major == 15, v
        assert await c.fetchval("SELECT typname FROM pg_type WHERE oid = 23") == "int4"
    finally:
        await c.close()


@check()
async def timestamptz_time_interval_binary():
    # asyncpg sends and reads these in the binary format.
    import datetime as dt

    c = await connect()
    try:
        await fresh(c, "ap_times", "id int PRIMARY KEY, ts timestamptz, t time, i interval")
        ts = dt.datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=dt.timezone(dt.timedelta(hours=-5)))
        await c.execute(
            "INSERT INTO ap_times VALUES (1, $1, $2, $3)",
            ts,
            dt.time(23, 59, 59),
            dt.timedelta(days=-2, hours=5),
        )
        row = await c.fetchrow("SELECT ts, t, i, ts + i AS later FROM ap_times")
        assert row["ts"] == ts, row
        assert row["t"] == dt.time(23, 59, 59), row
        assert row["i"] == dt.timedelta(days=-2, hours=5), row
        assert row["later"] == ts + dt.timedelta(days=-2, hours=5), row
        await c.execute("SET TIME ZONE 'Europe/Paris'")
        assert await c.fetchval("SELECT ts::text FROM ap_times") == "2024-01-02 09:04:05.123456+01"
    finally:
        await c.close()


@check()
async def jsonb_binary_round_trip():
    # asyncpg sends and reads jsonb in the binary format (version byte 1).
    import json

    c = await connect()
    try:
        await fresh(c, "ap_json", "id int PRIMARY KEY, j jsonb")
        await c.execute("INSERT INTO ap_json VALUES (1, $1)", json.dumps({"b": 1, "a": [True, None]}))
        assert await c.fetchval("SELECT j FROM ap_json") == '{"a": [true, null], "b": 1}'
        assert await c.fetchval("SELECT j ->> 'b' FROM ap_json") == "1"
        assert await c.fetchval("SELECT jsonb_typeof($1::jsonb)", "[1]") == "array"
        assert await c.fetchval("SELECT '{\"x\": 1}'::json") == '{"x": 1}'
    finally:
        await c.close()


@check()
async def copy_records_to_table():
    import datetime as dt
    import decimal
    import io

    c = await connect()
    try:
        await fresh(c, "ap_copy", "id int PRIMARY KEY, v text, n numeric(8,2), at timestamptz, ok boolean")
        at = dt.datetime(2021, 5, 6, 7, 8, 9, tzinfo=dt.timezone.utc)
        records = [(i, f"v{i}", decimal.Decimal(i) / 4, at, i % 2 == 0) for i in range(1, 1001)]
        records.append((1001, None, None, None, None))
        r = await c.copy_records_to_table("ap_copy", records=records)
        assert r == "COPY 1001", r
        assert await c.fetchval("SELECT count(*) FROM ap_copy") == 1001
        row = await c.fetchrow("SELECT * FROM ap_copy WHERE id = 3")
        assert tuple(row) == (3, "v3", decimal.Decimal("0.75"), at, False), row
        # Out again in the binary format, and back into a second table.
        buf = io.BytesIO()
        r = await c.copy_from_table("ap_copy", output=buf, format="binary")
        assert r == "COPY 1001", r
        await fresh(c, "ap_copy2", "id int PRIMARY KEY, v text, n numeric(8,2), at timestamptz, ok boolean")
        buf.seek(0)
        await c.copy_to_table("ap_copy2", source=buf, format="binary")
        same = await c.fetchval(
            "SELECT count(*) FROM ap_copy a JOIN ap_copy2 b ON a.id = b.id "
            "WHERE a.v IS NOT DISTINCT FROM b.v AND a.n IS NOT DISTINCT FROM b.n "
            "AND a.at IS NOT DISTINCT FROM b.at AND a.ok IS NOT DISTINCT FROM b.ok"
        )
        assert same == 1001, same
        # A record the column cannot hold fails the copy; the connection goes on.
        try:
            await c.copy_records_to_table("ap_copy", records=[(1, "dup", None, None, None)])
            raise AssertionError("no error")
        except asyncpg.UniqueViolationError:
            pass
        assert await c.fetchval("SELECT 1") == 1
    finally:
        await c.close()


@check()
async def array_parameters_and_results():
    # asyncpg sends lists and reads arrays in the binary format; int4[] is
    # not one of its built-in codecs, so it introspects the type first.
    c = await connect()
    try:
        assert await c.fetchval("SELECT $1::int[]", [1, 2]) == [1, 2]
        assert await c.fetchval("SELECT $1::text[]", ["a", None, "b,c", ""]) == ["a", None, "b,c", ""]
        assert await c.fetchval("SELECT $1::int8[]", []) == []
        await fresh(c, "ap_arr", "id int PRIMARY KEY, xs int[], ts text[]")
        await c.execute("INSERT INTO ap_arr VALUES ($1, $2, $3)", 1, [1, None, 3], ['"q"', "x y"])
        row = await c.fetchrow("SELECT xs, ts, array_length(xs, 1) AS n FROM ap_arr")
        assert tuple(row) == ([1, None, 3], ['"q"', "x y"], 3), row
        ids = await c.fetch("SELECT id FROM ap_arr WHERE id = ANY($1::int[])", [0, 1])
        assert [r["id"] for r in ids] == [1], ids
    finally:
        await c.close()


@check()
async def enum_type_introspection():
    # A non-built-in type: asyncpg looks it up with a WITH RECURSIVE query
    # over pg_type that binds an oid[] and reads oid columns.
    c = await connect()
    try:
        await c.execute("DROP TABLE IF EXISTS ap_enum")
        await c.execute("DROP TYPE IF EXISTS ap_mood")
        await c.execute("CREATE TYPE ap_mood AS ENUM ('sad', 'happy')")
        assert await c.fetchval("SELECT 'happy'::ap_mood") == "happy"
        await fresh(c, "ap_enum", "id int PRIMARY KEY, m ap_mood, ms ap_mood[]")
        await c.execute("INSERT INTO ap_enum VALUES ($1, $2, $3)", 1, "sad", ["happy", None, "sad"])
        row = await c.fetchrow("SELECT m, ms FROM ap_enum WHERE m = $1", "sad")
        assert tuple(row) == ("sad", ["happy", None, "sad"]), row
        try:
            await c.execute("INSERT INTO ap_enum VALUES ($1, $2, NULL)", 2, "angry")
            raise AssertionError("no error")
        except asyncpg.exceptions.InvalidTextRepresentationError:
            pass
    finally:
        await c.close()


def call(f):
    asyncio.run(asyncio.wait_for(f(), 15))


if __name__ == "__main__":
    print(f"asyncpg {asyncpg.__version__}")
    run(call)
