"""pandas (to_sql, read_sql_query, read_sql_table) and Alembic autogenerate
through SQLAlchemy 2 with psycopg 3, against a server:
python3 pandas_alembic_suite.py 'host=... port=...'

Alembic compares a model (a table, an index, a UNIQUE constraint and a
foreign key) with the database: from an empty database it must propose
exactly those objects; after they are created, nothing.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from conformance import check, run  # noqa: E402

import pandas as pd  # noqa: E402  (missing library: the import fails the run)
import sqlalchemy as sa  # noqa: E402
from alembic.autogenerate import compare_metadata, produce_migrations  # noqa: E402
from alembic.migration import MigrationContext  # noqa: E402
from alembic.operations import Operations  # noqa: E402

DSN = sys.argv[1]
PARTS = dict(p.split("=", 1) for p in DSN.split())
URL = "postgresql+psycopg://{user}@{host}:{port}/{dbname}".format(
    user=PARTS.get("user", "walden"),
    host=PARTS.get("host", "127.0.0.1"),
    port=PARTS.get("port", "5432"),
    dbname=PARTS.get("dbname", "walden"),
)


def engine():
    return sa.create_engine(URL, connect_args={"connect_timeout": 10})


def frame():
    return pd.DataFrame(
        {
            "id": [1, 2, 3],
            "name": ["a", "b", None],
            "x": [1.5, 2.5, None],
            "when": pd.to_datetime(
                ["2024-01-01 10:00:00", "2024-02-01 00:00:00", "2024-03-01 00:00:01"]
            ),
            "flag": [True, False, True],
        }
    )


def drop(e, *tables):
    with e.begin() as c:
        for t in tables:
            c.execute(sa.text(f"DROP TABLE IF EXISTS {t}"))


@check()
def to_sql_creates_and_appends_then_read_sql_query():
    e = engine()
    drop(e, "pd_t")
    df = frame()
    df.to_sql("pd_t", e, if_exists="fail", index=False)
    df.to_sql("pd_t", e, if_exists="append", index=False)
    got = pd.read_sql_query("SELECT * FROM pd_t ORDER BY id, name", e)
    want = pd.concat([df, df]).sort_values(["id", "name"]).reset_index(drop=True)
    assert list(got.columns) == list(df.columns), list(got.columns)
    pd.testing.assert_frame_equal(got, want, check_dtype=False)
    assert str(got["when"].dtype).startswith("datetime64"), got.dtypes
    # if_exists='fail' on an existing table raises.
    try:
        df.to_sql("pd_t", e, if_exists="fail", index=False)
        raise AssertionError("no error for an existing table")
    except ValueError:
        pass
    e.dispose()


@check()
def to_sql_replace_and_read_sql_table():
    e = engine()
    drop(e, "pd_r")
    df = frame()
    df.to_sql("pd_r", e, if_exists="replace", index=False)
    df.iloc[:2].to_sql("pd_r", e, if_exists="replace", index=True)
    got = pd.read_sql_table("pd_r", e)
    assert list(got.columns) == ["index", "id", "name", "x", "when", "flag"], list(got.columns)
    assert len(got) == 2
    e.dispose()


def model():
    md = sa.MetaData()
    sa.Table(
        "al_parent",
        md,
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("code", sa.String(20), nullable=False),
        sa.Column("name", sa.Text),
        sa.UniqueConstraint("code", name="al_parent_code_key"),
    )
    sa.Table(
        "al_child",
        md,
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("parent_id", sa.Integer, sa.ForeignKey("al_parent.id"), nullable=False),
        sa.Column("amount", sa.Numeric(10, 2)),
        sa.Index("al_child_parent_idx", "parent_id"),
    )
    return md


def only_al(name, type_, parent_names):
    return type_ != "table" or name.startswith("al_")


def context(c):
    return MigrationContext.configure(c, opts={"include_name": only_al})


@check()
def alembic_autogenerate_from_an_empty_database():
    e = engine()
    drop(e, "al_child", "al_parent")
    md = model()
    with e.connect() as c:
        diff = compare_metadata(context(c), md)
    kinds = sorted(d[0] for d in diff)
    assert kinds == ["add_index", "add_table", "add_table"], diff
    tables = {d[1].name: d[1] for d in diff if d[0] == "add_table"}
    assert set(tables) == {"al_parent", "al_child"}
    assert any(isinstance(x, sa.UniqueConstraint) for x in tables["al_parent"].constraints)
    assert [fk.target_fullname for fk in tables["al_child"].foreign_keys] == ["al_parent.id"]
    # Upgrade: run the proposed operations.
    with e.begin() as c:
        ops = Operations(context(c))
        for op in produce_migrations(context(c), md).upgrade_ops.ops:
            # An index on a new table comes as a ModifyTableOps of its own.
            for leaf in getattr(op, "ops", [op]):
                ops.invoke(leaf)
    with e.connect() as c:
        names = sa.inspect(c).get_table_names()
    assert {"al_parent", "al_child"} <= set(names), names
    e.dispose()


@check()
def alembic_autogenerate_after_upgrade_proposes_nothing():
    e = engine()
    md = model()
    with e.connect() as c:
        if not sa.inspect(c).has_table("al_child"):
            raise AssertionError("the upgrade check did not create the tables")
        diff = compare_metadata(context(c), md)
    assert diff == [], diff
    e.dispose()


if __name__ == "__main__":
    run(lambda f: f(), limit=60)
