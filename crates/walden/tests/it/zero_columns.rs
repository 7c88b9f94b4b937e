//! Tables without columns (`CREATE TABLE t ()`, as PostgreSQL allows and
//! SQLAlchemy's suite creates), and the DETAIL lines of constraint
//! violations (`Failing row contains (...)` for NOT NULL as for CHECK),
//! against a scratch PostgreSQL 15 with the same SQL.

use crate::pg_diff;

use pg_diff::{compare_script, Field};

const SCRIPT: &[&str] = &[
    "CREATE TABLE z ()",
    "INSERT INTO z DEFAULT VALUES",
    "INSERT INTO z DEFAULT VALUES",
    "INSERT INTO z SELECT FROM generate_series(1, 1)",
    "SELECT * FROM z",
    "SELECT FROM z",
    "SELECT count(*) FROM z",
    "SELECT *, 1 AS one FROM z",
    "SELECT relname, relnatts FROM pg_class WHERE relname = 'z'",
    "SELECT count(*) FROM information_schema.columns WHERE table_name = 'z'",
    "UPDATE z SET a = 1",
    "ALTER TABLE z ADD COLUMN a int DEFAULT 7",
    "SELECT * FROM z",
    "DELETE FROM z",
    "CREATE TABLE z2 ()",
    "ALTER TABLE z2 ADD COLUMN a int",
    "INSERT INTO z2 VALUES (1)",
    "SELECT * FROM z2",
    "DROP TABLE z",
    // Constraint violations' details.
    "CREATE TABLE nn (a int NOT NULL, b text, c int CHECK (c > 0), d int UNIQUE)",
    "INSERT INTO nn VALUES (NULL, 'x', 1, 1)",
    "INSERT INTO nn (b) VALUES ('only b')",
    "INSERT INTO nn VALUES (1, NULL, 1, 1)",
    "UPDATE nn SET a = NULL",
    "INSERT INTO nn VALUES (2, 'y', 0, 2)",
    "INSERT INTO nn VALUES (3, 'z', 1, 1)",
    "CREATE TABLE fk (k int REFERENCES nn (d))",
    "INSERT INTO fk VALUES (9)",
    "ALTER TABLE nn ADD COLUMN e int NOT NULL",
];

#[test]
fn zero_column_tables_and_constraint_details_as_postgresql() {
    compare_script(
        "to compare tables without columns",
        SCRIPT,
        &[Field::Detail],
    );
}
