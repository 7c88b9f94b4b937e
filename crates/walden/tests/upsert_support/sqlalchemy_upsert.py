"""SQLAlchemy's PostgreSQL upsert (insert().on_conflict_do_update / _do_nothing)
through psycopg 3: python3 sqlalchemy_upsert.py 'host=... port=... user=... dbname=...'

Prints one line per step; the Rust test runs it against PostgreSQL 15 and
Walden and requires the same lines.
"""

import sys

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert

PARTS = dict(p.split("=", 1) for p in sys.argv[1].split())
URL = "postgresql+psycopg://{user}@{host}:{port}/{dbname}".format(**PARTS)

engine = sa.create_engine(URL, connect_args={"connect_timeout": 10})
meta = sa.MetaData()
users = sa.Table(
    "sa_users",
    meta,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("email", sa.Text, nullable=False, unique=True),
    sa.Column("name", sa.Text),
    sa.Column("logins", sa.Integer, nullable=False, server_default="0"),
)

with engine.begin() as c:
    c.exec_driver_sql("DROP TABLE IF EXISTS sa_users")
meta.create_all(engine)


def show(label, rows):
    print(label, sorted(tuple(r) for r in rows))


with engine.begin() as c:
    stmt = insert(users).values(
        [
            {"id": 1, "email": "a@x", "name": "Ann"},
            {"id": 2, "email": "b@x", "name": "Bob"},
        ]
    )
    show("insert", c.execute(stmt.returning(users.c.id, users.c.name)))

# The same statement with parameters, run many times (a prepared statement
# once psycopg decides to prepare it).
for i in range(8):
    with engine.begin() as c:
        ins = insert(users).values(id=1, email="a@x", name="Ann %d" % i)
        up = ins.on_conflict_do_update(
            index_elements=[users.c.id],
            set_={"name": ins.excluded.name, "logins": users.c.logins + 1},
        )
        show("upsert %d" % i, c.execute(up.returning(users.c.id, users.c.name, users.c.logins)))

with engine.begin() as c:
    ins = insert(users).values(id=3, email="b@x", name="Dup")
    up = ins.on_conflict_do_update(
        constraint="sa_users_email_key",
        set_={"name": ins.excluded.name},
        where=users.c.logins == 0,
    )
    show("by constraint", c.execute(up.returning(users.c.id, users.c.name)))
    nothing = insert(users).values(id=2, email="z@x", name="no").on_conflict_do_nothing()
    print("do nothing", c.execute(nothing).rowcount)
    targeted = (
        insert(users)
        .values(id=9, email="a@x", name="no")
        .on_conflict_do_nothing(index_elements=["email"])
    )
    print("do nothing on email", c.execute(targeted).rowcount)

with engine.begin() as c:
    try:
        bad = insert(users).values(id=1, email="q@x").on_conflict_do_update(
            index_elements=[users.c.name], set_={"name": "x"}
        )
        c.execute(bad)
        print("no error")
    except sa.exc.ProgrammingError as e:
        print("error", e.orig.sqlstate)

with engine.connect() as c:
    show("end", c.execute(sa.select(users)))
engine.dispose()
