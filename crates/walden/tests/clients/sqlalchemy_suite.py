"""SQLAlchemy 2 with psycopg 3, default settings, against a server:
python3 sqlalchemy_suite.py 'host=... port=...'

SQLAlchemy's psycopg dialect asks the server for its isolation level and
standard_conforming_strings on connect, and `begin_nested()` / psycopg's
`transaction()` inside a transaction are savepoints.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from conformance import check, run  # noqa: E402

import psycopg  # noqa: E402
import sqlalchemy as sa  # noqa: E402  (missing library: the import fails the run)
from sqlalchemy import exc  # noqa: E402

DSN = sys.argv[1]
PARTS = dict(p.split("=", 1) for p in DSN.split())
URL = "postgresql+psycopg://{user}@{host}:{port}/{dbname}".format(
    user=PARTS.get("user", "walden"),
    host=PARTS.get("host", "127.0.0.1"),
    port=PARTS.get("port", "5432"),
    dbname=PARTS.get("dbname", "walden"),
)


def engine(**kw):
    return sa.create_engine(URL, connect_args={"connect_timeout": 10}, **kw)


@check()
def connects_with_default_settings_and_reports_read_committed():
    e = engine()
    with e.connect() as c:
        assert c.execute(sa.text("SELECT 1")).scalar() == 1
        assert c.get_isolation_level() == "READ COMMITTED", c.get_isolation_level()
    e.dispose()


@check()
def begin_nested_rolls_back_to_its_savepoint():
    e = engine()
    with e.begin() as c:
        c.execute(sa.text("DROP TABLE IF EXISTS sa_nested"))
        c.execute(sa.text("CREATE TABLE sa_nested (id int PRIMARY KEY)"))
    with e.connect() as c:
        with c.begin():
            c.execute(sa.text("INSERT INTO sa_nested VALUES (1)"))
            try:
                with c.begin_nested():
                    c.execute(sa.text("INSERT INTO sa_nested VALUES (2)"))
                    c.execute(sa.text("INSERT INTO sa_nested VALUES (1)"))
                raise AssertionError("no error")
            except exc.IntegrityError:
                pass
            # The outer transaction goes on after the savepoint's rollback.
            with c.begin_nested():
                c.execute(sa.text("INSERT INTO sa_nested VALUES (3)"))
    with e.connect() as c:
        ids = [r[0] for r in c.execute(sa.text("SELECT id FROM sa_nested ORDER BY id"))]
        assert ids == [1, 3], ids
    e.dispose()


@check()
def orm_session_with_nested_transactions():
    from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

    class Base(DeclarativeBase):
        pass

    class Item(Base):
        __tablename__ = "sa_items"
        id: Mapped[int] = mapped_column(primary_key=True)
        name: Mapped[str]

    e = engine()
    with e.begin() as c:
        c.execute(sa.text("DROP TABLE IF EXISTS sa_items"))
    Base.metadata.create_all(e)
    with Session(e) as s:
        s.add(Item(id=1, name="kept"))
        s.flush()
        sp = s.begin_nested()
        s.add(Item(id=2, name="dropped"))
        s.flush()
        sp.rollback()
        s.commit()
    with Session(e) as s:
        names = [i.name for i in s.scalars(sa.select(Item).order_by(Item.id))]
        assert names == ["kept"], names
    e.dispose()


@check()
def psycopg_nested_transaction_blocks_are_savepoints():
    with psycopg.connect(DSN, connect_timeout=10) as c:
        c.execute("DROP TABLE IF EXISTS pg_nested")
        c.execute("CREATE TABLE pg_nested (id int PRIMARY KEY)")
        c.commit()
        with c.transaction():
            c.execute("INSERT INTO pg_nested VALUES (1)")
            try:
                with c.transaction():
                    c.execute("INSERT INTO pg_nested VALUES (1)")
            except psycopg.errors.UniqueViolation:
                pass
            c.execute("INSERT INTO pg_nested VALUES (2)")
        rows = c.execute("SELECT id FROM pg_nested ORDER BY id").fetchall()
        assert rows == [(1,), (2,)], rows


@check()
def serializable_isolation_level_runs():
    e = engine(isolation_level="SERIALIZABLE")
    with e.connect() as c:
        assert c.execute(sa.text("SHOW transaction_isolation")).scalar() == "serializable"
        assert c.get_isolation_level() == "SERIALIZABLE", c.get_isolation_level()
    e.dispose()


@check()
def inspector_sees_an_altered_table():
    e = engine()
    with e.begin() as c:
        c.execute(sa.text("DROP TABLE IF EXISTS sa_alter"))
        c.execute(sa.text("DROP TABLE IF EXISTS sa_altered"))
        c.execute(sa.text("CREATE TABLE sa_alter (id int PRIMARY KEY, a int, gone text)"))
        c.execute(sa.text("INSERT INTO sa_alter VALUES (1, 2, 'x')"))
    with e.begin() as c:
        c.execute(
            sa.text(
                "ALTER TABLE sa_alter ADD COLUMN b varchar(20) NOT NULL DEFAULT 'x', "
                "DROP COLUMN gone, ALTER COLUMN a TYPE bigint, ADD CONSTRAINT a_pos CHECK (a > 0)"
            )
        )
        c.execute(sa.text("ALTER TABLE sa_alter RENAME COLUMN a TO aa"))
        c.execute(sa.text("ALTER TABLE sa_alter RENAME TO sa_altered"))
    insp = sa.inspect(e)
    cols = [(c["name"], str(c["type"]), c["nullable"]) for c in insp.get_columns("sa_altered")]
    assert cols == [
        ("id", "INTEGER", False),
        ("aa", "BIGINT", True),
        ("b", "VARCHAR(20)", False),
    ], cols
    defaults = {c["name"]: c["default"] for c in insp.get_columns("sa_altered")}
    assert defaults["b"] is not None and "x" in defaults["b"], defaults
    checks = [(c["name"], c["sqltext"]) for c in insp.get_check_constraints("sa_altered")]
    assert checks == [("a_pos", "aa > 0")], checks
    with e.connect() as c:
        assert c.execute(sa.text("SELECT aa, b FROM sa_altered")).all() == [(2, "x")]


@check()
def inspector_reads_keys_indexes_and_unique_constraints():
    e = engine()
    with e.begin() as c:
        c.execute(sa.text("DROP TABLE IF EXISTS sk_child, sk_parent"))
        c.execute(sa.text("CREATE TABLE sk_parent (a int, b int, u text UNIQUE, PRIMARY KEY (a, b))"))
        c.execute(sa.text("CREATE INDEX sk_parent_ix ON sk_parent (u, b)"))
        c.execute(
            sa.text(
                "CREATE TABLE sk_child (id int PRIMARY KEY, pa int, pb int, "
                "FOREIGN KEY (pa, pb) REFERENCES sk_parent (a, b) ON DELETE CASCADE)"
            )
        )
    insp = sa.inspect(e)
    pk = insp.get_pk_constraint("sk_parent")
    assert (pk["name"], pk["constrained_columns"]) == ("sk_parent_pkey", ["a", "b"]), pk
    ixs = [(i["name"], i["unique"], i["column_names"]) for i in insp.get_indexes("sk_parent")]
    assert ixs == [("sk_parent_ix", False, ["u", "b"]), ("sk_parent_u_key", True, ["u"])], ixs
    uqs = [(u["name"], u["column_names"]) for u in insp.get_unique_constraints("sk_parent")]
    assert uqs == [("sk_parent_u_key", ["u"])], uqs
    fks = [
        (f["name"], f["constrained_columns"], f["referred_table"], f["referred_columns"], f["options"])
        for f in insp.get_foreign_keys("sk_child")
    ]
    assert fks == [
        ("sk_child_pa_pb_fkey", ["pa", "pb"], "sk_parent", ["a", "b"], {"ondelete": "CASCADE"})
    ], fks


@check()
def inspector_reads_foreign_keys():
    e = engine()
    with e.begin() as c:
        c.execute(sa.text("DROP TABLE IF EXISTS sa_child, sa_parent"))
        c.execute(sa.text("CREATE TABLE sa_parent (id int PRIMARY KEY, a int, b int, UNIQUE (a, b))"))
        c.execute(
            sa.text(
                "CREATE TABLE sa_child (id int PRIMARY KEY, "
                "p int REFERENCES sa_parent ON DELETE CASCADE, x int, y int, "
                "CONSTRAINT sa_ab FOREIGN KEY (x, y) REFERENCES sa_parent (a, b) ON UPDATE SET NULL)"
            )
        )
    fks = sorted(sa.inspect(e).get_foreign_keys("sa_child"), key=lambda f: f["name"])
    got = [
        (f["name"], f["constrained_columns"], f["referred_table"], f["referred_columns"], f["options"])
        for f in fks
    ]
    assert got == [
        ("sa_ab", ["x", "y"], "sa_parent", ["a", "b"], {"onupdate": "SET NULL"}),
        ("sa_child_p_fkey", ["p"], "sa_parent", ["id"], {"ondelete": "CASCADE"}),
    ], got
    # The ORM's IntegrityError for a violation carries the constraint.
    with e.connect() as c:
        try:
            c.execute(sa.text("INSERT INTO sa_child VALUES (1, 42, NULL, NULL)"))
            raise AssertionError("orphan accepted")
        except exc.IntegrityError as err:
            assert err.orig.diag.constraint_name == "sa_child_p_fkey", err
            assert err.orig.sqlstate == "23503", err


def stream_results_and_yield_per_use_a_server_side_cursor():
    e = engine()
    with e.connect() as c:
        r = c.execution_options(stream_results=True, yield_per=7).execute(
            sa.text("SELECT x FROM generate_series(1, 50) AS x ORDER BY x")
        )
        first = r.fetchmany(7)
        assert [x for (x,) in first] == list(range(1, 8)), first
        # The rest is still on the server, in a named cursor. (This query runs
        # in one too, as the connection streams: PostgreSQL lists that one.)
        open_cursors = c.execute(
            sa.text(
                "SELECT count(*) FROM pg_cursors WHERE statement NOT LIKE '%pg_cursors%'"
            )
        ).scalar()
        assert open_cursors == 1, open_cursors
        assert sum(x for (x,) in r) == sum(range(8, 51))
        n = sum(
            len(p)
            for p in c.execution_options(stream_results=True)
            .execute(sa.text("SELECT x FROM generate_series(1, 2500) AS x"))
            .partitions(300)
        )
        assert n == 2500, n
    e.dispose()


@check()
def enum_column_with_create_type():
    import enum

    class Size(enum.Enum):
        small = "s"
        large = "l"

    e = engine()
    md = sa.MetaData()
    t = sa.Table(
        "sa_enum",
        md,
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("size", sa.Enum(Size, name="sa_size", create_type=True)),
    )
    md.drop_all(e)
    md.create_all(e)
    with e.begin() as c:
        c.execute(t.insert(), [{"id": 1, "size": Size.large}, {"id": 2, "size": Size.small}])
    with e.connect() as c:
        got = c.execute(sa.select(t.c.id, t.c.size).order_by(t.c.size)).all()
        # Declaration order: small before large.
        assert got == [(2, Size.small), (1, Size.large)], got
        cols = sa.inspect(c).get_columns("sa_enum")
        assert list(cols[1]["type"].enums) == ["small", "large"], cols[1]["type"]
    md.drop_all(e)
    with e.connect() as c:
        n = c.execute(sa.text("SELECT count(*) FROM pg_type WHERE typname = 'sa_size'")).scalar()
        assert n == 0, n
    e.dispose()


@check()
def update_and_delete_joined_with_another_table():
    e = engine()
    md = sa.MetaData()
    acc = sa.Table(
        "sa_acc", md, sa.Column("id", sa.Integer, primary_key=True), sa.Column("bal", sa.Integer)
    )
    adj = sa.Table("sa_adj", md, sa.Column("acc_id", sa.Integer), sa.Column("delta", sa.Integer))
    md.drop_all(e)
    md.create_all(e)
    with e.begin() as c:
        c.execute(acc.insert(), [{"id": 1, "bal": 10}, {"id": 2, "bal": 20}, {"id": 3, "bal": 30}])
        c.execute(adj.insert(), [{"acc_id": 1, "delta": 5}, {"acc_id": 3, "delta": -1}])
        # UPDATE ... FROM, as SQLAlchemy renders a WHERE over another table.
        r = c.execute(
            acc.update()
            .where(acc.c.id == adj.c.acc_id)
            .values(bal=acc.c.bal + adj.c.delta)
            .returning(acc.c.id, acc.c.bal, adj.c.delta)
        )
        assert sorted(r.all()) == [(1, 15, 5), (3, 29, -1)]
        # DELETE ... USING.
        r = c.execute(acc.delete().where(acc.c.id == adj.c.acc_id).where(adj.c.delta < 0))
        assert r.rowcount == 1, r.rowcount
    with e.connect() as c:
        got = c.execute(sa.select(acc.c.id, acc.c.bal).order_by(acc.c.id)).all()
        assert got == [(1, 15), (2, 20)], got
    md.drop_all(e)
    e.dispose()


@check()
def reflection_reads_table_and_column_comments():
    # SQLAlchemy's reflection tests comment their tables; DDL from
    # Table(comment=...) / Column(comment=...) is COMMENT ON.
    e = engine()
    md = sa.MetaData()
    sa.Table(
        "sa_commented",
        md,
        sa.Column("id", sa.Integer, primary_key=True, comment="the key"),
        sa.Column("name", sa.String(20), comment="it's a name"),
        sa.Column("plain", sa.Integer),
        comment="a commented table",
    )
    md.drop_all(e)
    md.create_all(e)
    with e.connect() as c:
        i = sa.inspect(c)
        assert i.get_table_comment("sa_commented") == {"text": "a commented table"}
        cols = {col["name"]: col.get("comment") for col in i.get_columns("sa_commented")}
        assert cols == {"id": "the key", "name": "it's a name", "plain": None}, cols
    md.drop_all(e)
    e.dispose()


@check()
def test_harness_session_queries():
    # What SQLAlchemy's provisioning runs: the sessions idle in a
    # transaction that would block DROP TABLE, and ending a database's
    # other sessions before dropping it.
    e = engine()
    with e.connect() as c:
        rows = c.exec_driver_sql(
            "select pid, state, wait_event_type, query from pg_stat_activity where "
            "usename=current_user and datname=current_database() and "
            "state='idle in transaction' and pid != pg_backend_pid()"
        ).all()
        assert rows == [], rows
        c.execute(
            sa.text(
                "select pg_terminate_backend(pid) from pg_stat_activity "
                "where usename=current_user and pid != pg_backend_pid() "
                "and datname=:dname"
            ),
            dict(dname="no_such_database"),
        ).all()
    e.dispose()


if __name__ == "__main__":
    print(f"sqlalchemy {sa.__version__}, psycopg {psycopg.__version__}")
    run(lambda f: f())
