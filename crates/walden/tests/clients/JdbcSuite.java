// pgjdbc against a server: DatabaseMetaData over a small schema, and the
// statement features applications lean on (typed parameters, batches,
// savepoints, generated keys).
//
//   javac -cp /usr/share/java/postgresql.jar -d OUT JdbcSuite.java
//   java -cp OUT:/usr/share/java/postgresql.jar JdbcSuite HOST PORT USER DBNAME
//
// Every section prints what the driver returned, one line per row, so that
// the output against Walden can be compared line by line with the output
// against PostgreSQL (crates/walden/tests/jdbc.rs does). A section that
// throws prints its SQLSTATE and message instead, and the run goes on.
// Values that legitimately differ between servers (OIDs, the server's
// version) are not printed.

import java.math.BigDecimal;
import java.sql.*;
import java.time.*;
import java.util.*;

public class JdbcSuite {
    static String url;
    static Properties props = new Properties();

    public static void main(String[] args) throws Exception {
        url = "jdbc:postgresql://" + args[0] + ":" + args[1] + "/" + args[3];
        props.setProperty("user", args[2]);
        props.setProperty("connectTimeout", "10");
        // A hang becomes an error in its section, not a stalled run.
        props.setProperty("socketTimeout", "30");
        props.setProperty("ApplicationName", "jdbc-suite");
        try (Connection c = DriverManager.getConnection(url, props)) {
            section("schema", () -> schema(c));
            DatabaseMetaData md = c.getMetaData();
            section("getSchemas", () -> dump(md.getSchemas()));
            section("getSchemas(pattern)", () -> dump(md.getSchemas(null, "pub%")));
            section("getCatalogs", () -> dump(md.getCatalogs()));
            section("getTableTypes", () -> dump(md.getTableTypes()));
            section("getTables", () -> dump(md.getTables(null, "public", "jc_%", null)));
            section("getTables(TABLE)", () -> dump(md.getTables(null, null, "jc_%", new String[] {"TABLE"})));
            section("getTables(VIEW)", () -> dump(md.getTables(null, "public", "%", new String[] {"VIEW"})));
            section("getTables(SEQUENCE)", () -> dump(md.getTables(null, "public", "jc_%", new String[] {"SEQUENCE"})));
            section("getColumns", () -> dump(md.getColumns(null, "public", "jc_%", "%")));
            section("getColumns(one)", () -> dump(md.getColumns(null, null, "jc_child", "uid")));
            for (String t : new String[] {"jc_parent", "jc_child", "jc_pair", "jc_pair_ref"}) {
                section("getPrimaryKeys " + t, () -> dump(md.getPrimaryKeys(null, "public", t)));
                section("getIndexInfo " + t, () -> dump(md.getIndexInfo(null, "public", t, false, false)));
                section("getIndexInfo unique " + t, () -> dump(md.getIndexInfo(null, "public", t, true, true)));
                section("getImportedKeys " + t, () -> dump(md.getImportedKeys(null, "public", t)));
                section("getExportedKeys " + t, () -> dump(md.getExportedKeys(null, "public", t)));
                section("getBestRowIdentifier " + t,
                        () -> dump(md.getBestRowIdentifier(null, "public", t, DatabaseMetaData.bestRowSession, true)));
            }
            section("getCrossReference",
                    () -> dump(md.getCrossReference(null, "public", "jc_parent", null, "public", "jc_child")));
            section("getTypeInfo", () -> typeInfo(md));
            section("getColumnPrivileges", () -> dump(md.getColumnPrivileges(null, "public", "jc_pair", "%")));
            // What ORMs and database tools call beyond tables and keys.
            section("getTablePrivileges", () -> dump(md.getTablePrivileges(null, "public", "jc_pair%")));
            section("getFunctions", () -> dump(md.getFunctions(null, "public", "%")));
            section("getFunctionColumns", () -> dump(md.getFunctionColumns(null, "public", "%", "%")));
            section("getProcedures", () -> dump(md.getProcedures(null, "public", "%")));
            section("getProcedureColumns", () -> dump(md.getProcedureColumns(null, "public", "%", "%")));
            section("getUDTs", () -> dump(md.getUDTs(null, "public", "%", null)));
            section("getSuperTables", () -> dump(md.getSuperTables(null, "public", "%")));
            section("getSuperTypes", () -> dump(md.getSuperTypes(null, "public", "%")));
            section("getVersionColumns", () -> dump(md.getVersionColumns(null, "public", "jc_parent")));
            section("getPseudoColumns", () -> dump(md.getPseudoColumns(null, "public", "%", "%")));
            section("getClientInfoProperties", () -> dump(md.getClientInfoProperties()));
            section("metadata scalars", () -> scalars(md));
            section("ResultSetMetaData", () -> resultSetMetaData(c));
            section("ParameterMetaData", () -> parameterMetaData(c));
            section("prepared round trip", () -> roundTrip(c));
            section("executeBatch", () -> batch(c));
            section("reWriteBatchedInserts", () -> rewrittenBatch());
            section("savepoints", () -> savepoints(c));
            section("getGeneratedKeys", () -> generatedKeys(c));
            section("errors", () -> errors(c));
        }
        System.out.println("done");
    }

    interface Body {
        void run() throws Exception;
    }

    static void section(String name, Body b) {
        System.out.println("== " + name);
        try {
            b.run();
        } catch (SQLException e) {
            System.out.println("ERROR " + e.getSQLState() + " " + e.getMessage().lines().findFirst().orElse(""));
        } catch (Exception e) {
            System.out.println("EXCEPTION " + e);
        }
    }

    static void schema(Connection c) throws SQLException {
        try (Statement s = c.createStatement()) {
            for (String t : new String[] {"jc_pair_ref", "jc_pair", "jc_child", "jc_parent", "jc_types",
                    "jc_batch", "jc_keys"}) {
                s.execute("DROP TABLE IF EXISTS " + t);
            }
            s.execute("CREATE TABLE jc_parent ("
                    + " id serial PRIMARY KEY,"
                    + " code varchar(12) NOT NULL UNIQUE,"
                    + " name text,"
                    + " price numeric(10,2) DEFAULT 0,"
                    + " ratio double precision,"
                    + " born date,"
                    + " created timestamp DEFAULT now(),"
                    + " flag boolean NOT NULL DEFAULT true)");
            s.execute("CREATE TABLE jc_child ("
                    + " id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,"
                    + " parent_id int NOT NULL REFERENCES jc_parent (id) ON DELETE CASCADE,"
                    + " qty smallint CHECK (qty > 0),"
                    + " note varchar(40),"
                    + " uid uuid,"
                    + " at timestamptz,"
                    + " payload bytea,"
                    + " tag char(3),"
                    + " small real)");
            s.execute("CREATE INDEX jc_child_parent_idx ON jc_child (parent_id)");
            s.execute("CREATE UNIQUE INDEX jc_child_note_uq ON jc_child (parent_id, note)");
            s.execute("CREATE TABLE jc_pair (a int, b int, label text, PRIMARY KEY (a, b))");
            s.execute("CREATE TABLE jc_pair_ref (id int PRIMARY KEY, pa int, pb int,"
                    + " CONSTRAINT jc_pair_ref_fk FOREIGN KEY (pa, pb) REFERENCES jc_pair (a, b) ON UPDATE RESTRICT)");
            System.out.println("created");
        }
    }

    /** One line per row: label=value for every column, in order. */
    static void dump(ResultSet rs) throws SQLException {
        dump(rs, Set.of());
    }

    static void dump(ResultSet rs, Set<String> skip) throws SQLException {
        try (rs) {
            ResultSetMetaData m = rs.getMetaData();
            int rows = 0;
            while (rs.next()) {
                StringBuilder line = new StringBuilder();
                for (int i = 1; i <= m.getColumnCount(); i++) {
                    String label = m.getColumnLabel(i);
                    if (skip.contains(label)) {
                        continue;
                    }
                    if (line.length() > 0) {
                        line.append(" | ");
                    }
                    line.append(label).append('=').append(rs.getString(i));
                }
                System.out.println(line);
                rows++;
            }
            System.out.println("(" + rows + " rows)");
        }
    }

    /** getTypeInfo for the types an application uses (PostgreSQL has hundreds). */
    static void typeInfo(DatabaseMetaData md) throws SQLException {
        Set<String> wanted = Set.of("bool", "bytea", "int2", "int4", "int8", "float4", "float8", "numeric",
                "text", "varchar", "bpchar", "date", "time", "timestamp", "timestamptz", "interval", "uuid",
                "json", "jsonb", "oid", "name");
        Map<String, String> rows = new TreeMap<>();
        try (ResultSet rs = md.getTypeInfo()) {
            ResultSetMetaData m = rs.getMetaData();
            while (rs.next()) {
                String name = rs.getString("TYPE_NAME");
                if (!wanted.contains(name)) {
                    continue;
                }
                StringBuilder line = new StringBuilder();
                for (int i = 1; i <= m.getColumnCount(); i++) {
                    line.append(i > 1 ? " | " : "").append(m.getColumnLabel(i)).append('=').append(rs.getString(i));
                }
                rows.put(name, line.toString());
            }
        }
        rows.values().forEach(System.out::println);
        System.out.println("(" + rows.size() + " of " + wanted.size() + " types)");
    }

    static void scalars(DatabaseMetaData md) throws SQLException {
        System.out.println("identifierQuoteString=" + md.getIdentifierQuoteString());
        System.out.println("storesLowerCaseIdentifiers=" + md.storesLowerCaseIdentifiers());
        System.out.println("supportsTransactions=" + md.supportsTransactions());
        System.out.println("supportsSavepoints=" + md.supportsSavepoints());
        System.out.println("supportsGetGeneratedKeys=" + md.supportsGetGeneratedKeys());
        System.out.println("supportsBatchUpdates=" + md.supportsBatchUpdates());
        System.out.println("defaultTransactionIsolation=" + md.getDefaultTransactionIsolation());
        System.out.println("searchStringEscape=" + md.getSearchStringEscape());
        System.out.println("maxColumnNameLength=" + md.getMaxColumnNameLength());
        System.out.println("userName=" + (md.getUserName() != null));
        System.out.println("driverName=" + md.getDriverName());
        System.out.println("databaseProductName=" + md.getDatabaseProductName());
        System.out.println("databaseMajorVersion>=15: " + (md.getDatabaseMajorVersion() >= 15));
        System.out.println("keywords=" + md.getSQLKeywords());
        System.out.println("numericFunctions=" + md.getNumericFunctions());
        System.out.println("stringFunctions=" + md.getStringFunctions());
    }

    static void resultSetMetaData(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(
                "SELECT p.id, p.code, p.price, p.flag, ch.id AS child_id, ch.at, ch.tag, 1 + 1 AS two"
                        + " FROM jc_parent p JOIN jc_child ch ON ch.parent_id = p.id")) {
            ResultSetMetaData m = ps.getMetaData();
            for (int i = 1; i <= m.getColumnCount(); i++) {
                System.out.println(m.getColumnLabel(i) + ": name=" + m.getColumnName(i)
                        + " table=" + m.getTableName(i) + " schema=" + m.getSchemaName(i)
                        + " type=" + m.getColumnTypeName(i) + " sqltype=" + m.getColumnType(i)
                        + " class=" + m.getColumnClassName(i) + " precision=" + m.getPrecision(i)
                        + " scale=" + m.getScale(i) + " nullable=" + m.isNullable(i)
                        + " autoincrement=" + m.isAutoIncrement(i) + " displaySize=" + m.getColumnDisplaySize(i));
            }
        }
    }

    static void parameterMetaData(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(
                "SELECT id FROM jc_parent WHERE code = ? AND price > ? AND born = ?")) {
            ParameterMetaData m = ps.getParameterMetaData();
            for (int i = 1; i <= m.getParameterCount(); i++) {
                System.out.println("$" + i + ": type=" + m.getParameterTypeName(i) + " sqltype="
                        + m.getParameterType(i) + " class=" + m.getParameterClassName(i));
            }
        }
    }

    static void roundTrip(Connection c) throws SQLException {
        try (Statement s = c.createStatement()) {
            s.execute("CREATE TABLE jc_types (id int PRIMARY KEY, i2 smallint, i4 int, i8 bigint,"
                    + " f4 real, f8 double precision, n numeric(12,3), b boolean, t text, v varchar(20),"
                    + " ch char(4), d date, ts timestamp, tz timestamptz, tm time, u uuid, by bytea)");
        }
        // Binary transfer for the prepared statement after a few uses, as
        // pgjdbc switches to a server-side statement on the fifth execution.
        try (PreparedStatement ins = c.prepareStatement(
                "INSERT INTO jc_types VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")) {
            for (int row = 1; row <= 6; row++) {
                ins.setInt(1, row);
                ins.setShort(2, (short) (-7 * row));
                ins.setInt(3, 2_000_000_000 + row);
                ins.setLong(4, 9_000_000_000_000_000_000L + row);
                ins.setFloat(5, 1.5f * row);
                ins.setDouble(6, Math.PI * row);
                ins.setBigDecimal(7, new BigDecimal("12345.678").multiply(BigDecimal.valueOf(row)));
                ins.setBoolean(8, row % 2 == 0);
                ins.setString(9, "text 'quoted' \"and\" ünïcode " + row);
                ins.setString(10, "v" + row);
                ins.setString(11, "ab");
                ins.setObject(12, LocalDate.of(2024, 2, 28).plusDays(row));
                ins.setObject(13, LocalDateTime.of(2024, 3, 10, 1, 2, 3, 456_789_000).plusHours(row));
                ins.setObject(14, OffsetDateTime.of(2024, 3, 10, 12, 0, 0, 0, ZoneOffset.ofHours(-5)).plusMinutes(row));
                ins.setObject(15, LocalTime.of(23, 59, 58).minusMinutes(row));
                ins.setObject(16, new UUID(0x0123456789abcdefL, row));
                ins.setBytes(17, new byte[] {0, 1, (byte) 0xff, (byte) row});
                System.out.println("insert " + row + ": " + ins.executeUpdate());
            }
            ins.setInt(1, 7);
            for (int i = 2; i <= 17; i++) {
                ins.setNull(i, Types.NULL);
            }
            System.out.println("insert nulls: " + ins.executeUpdate());
        }
        try (PreparedStatement q = c.prepareStatement("SELECT * FROM jc_types WHERE id = ?")) {
            for (int row = 1; row <= 7; row++) {
                q.setInt(1, row);
                try (ResultSet rs = q.executeQuery()) {
                    rs.next();
                    StringBuilder line = new StringBuilder("row " + row + ":");
                    line.append(" i2=").append(rs.getObject("i2"));
                    line.append(" i4=").append(rs.getObject("i4"));
                    line.append(" i8=").append(rs.getObject("i8"));
                    line.append(" f4=").append(rs.getObject("f4"));
                    line.append(" f8=").append(rs.getObject("f8"));
                    line.append(" n=").append(rs.getBigDecimal("n"));
                    line.append(" b=").append(rs.getObject("b"));
                    line.append(" t=").append(rs.getString("t"));
                    line.append(" v=").append(rs.getString("v"));
                    line.append(" ch=[").append(rs.getString("ch")).append(']');
                    line.append(" d=").append(rs.getObject("d", LocalDate.class));
                    line.append(" ts=").append(rs.getObject("ts", LocalDateTime.class));
                    OffsetDateTime tz = rs.getObject("tz", OffsetDateTime.class);
                    line.append(" tz=").append(tz == null ? null : tz.toInstant());
                    line.append(" tm=").append(rs.getObject("tm", LocalTime.class));
                    line.append(" u=").append(rs.getObject("u"));
                    byte[] by = rs.getBytes("by");
                    line.append(" by=").append(by == null ? null : Arrays.toString(by));
                    line.append(" classes=").append(rs.getObject("i2") == null ? "-"
                            : rs.getObject("i2").getClass().getSimpleName() + ","
                                    + rs.getObject("n").getClass().getSimpleName() + ","
                                    + rs.getObject("ts").getClass().getSimpleName() + ","
                                    + rs.getObject("u").getClass().getSimpleName());
                    System.out.println(line);
                }
            }
        }
        // Parameters compared on the server side.
        try (PreparedStatement q = c.prepareStatement(
                "SELECT count(*) FROM jc_types WHERE tz > ? AND d >= ? AND n > ? AND u = ?")) {
            q.setObject(1, OffsetDateTime.of(2024, 3, 10, 17, 2, 0, 0, ZoneOffset.UTC));
            q.setObject(2, LocalDate.of(2024, 3, 1));
            q.setBigDecimal(3, new BigDecimal("20000"));
            q.setObject(4, new UUID(0x0123456789abcdefL, 4));
            try (ResultSet rs = q.executeQuery()) {
                rs.next();
                System.out.println("filtered count=" + rs.getLong(1));
            }
        }
    }

    static void batch(Connection c) throws SQLException {
        try (Statement s = c.createStatement()) {
            s.execute("CREATE TABLE jc_batch (id int PRIMARY KEY, name text)");
        }
        c.setAutoCommit(false);
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO jc_batch VALUES (?, ?)")) {
            for (int i = 1; i <= 100; i++) {
                ps.setInt(1, i);
                ps.setString(2, "n" + i);
                ps.addBatch();
            }
            int[] counts = ps.executeBatch();
            System.out.println("batch counts=" + counts.length + " sum=" + Arrays.stream(counts).sum());
        }
        c.commit();
        // A failing batch: the error names the statement; nothing of it commits.
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO jc_batch VALUES (?, ?)")) {
            for (int i : new int[] {101, 102, 5, 103}) {
                ps.setInt(1, i);
                ps.setString(2, "m" + i);
                ps.addBatch();
            }
            ps.executeBatch();
            System.out.println("failing batch: no error");
        } catch (BatchUpdateException e) {
            System.out.println("failing batch: " + e.getSQLState() + " counts=" + e.getUpdateCounts().length);
            c.rollback();
        }
        c.setAutoCommit(true);
        try (Statement s = c.createStatement()) {
            s.addBatch("UPDATE jc_batch SET name = 'x' WHERE id <= 10");
            s.addBatch("DELETE FROM jc_batch WHERE id > 90");
            s.addBatch("INSERT INTO jc_batch VALUES (1000, 'statement batch')");
            System.out.println("statement batch=" + Arrays.toString(s.executeBatch()));
            try (ResultSet rs = s.executeQuery("SELECT count(*), sum(id), count(*) FILTER (WHERE name = 'x') FROM jc_batch")) {
                rs.next();
                System.out.println("after batches: count=" + rs.getLong(1) + " sum=" + rs.getLong(2)
                        + " x=" + rs.getLong(3));
            }
        }
    }

    static void rewrittenBatch() throws SQLException {
        Properties p = new Properties();
        p.putAll(props);
        p.setProperty("reWriteBatchedInserts", "true");
        try (Connection c = DriverManager.getConnection(url, p)) {
            try (Statement s = c.createStatement()) {
                s.execute("DELETE FROM jc_batch WHERE id >= 2000");
            }
            // 300 rows: pgjdbc rewrites them into multi-row VALUES statements
            // (in groups of 128, 64, ...).
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO jc_batch (id, name) VALUES (?, ?)")) {
                for (int i = 0; i < 300; i++) {
                    ps.setInt(1, 2000 + i);
                    ps.setString(2, i % 7 == 0 ? null : "r" + i);
                    ps.addBatch();
                }
                int[] counts = ps.executeBatch();
                System.out.println("rewritten counts=" + counts.length + " first=" + counts[0]);
            }
            try (Statement s = c.createStatement();
                    ResultSet rs = s.executeQuery(
                            "SELECT count(*), count(name), min(id), max(id) FROM jc_batch WHERE id >= 2000")) {
                rs.next();
                System.out.println("rows=" + rs.getLong(1) + " named=" + rs.getLong(2) + " min=" + rs.getLong(3)
                        + " max=" + rs.getLong(4));
            }
        }
    }

    static void savepoints(Connection c) throws SQLException {
        c.setAutoCommit(false);
        try (Statement s = c.createStatement()) {
            s.execute("INSERT INTO jc_batch VALUES (5001, 'before')");
            Savepoint sp = c.setSavepoint();
            s.execute("INSERT INTO jc_batch VALUES (5002, 'undone')");
            c.rollback(sp);
            Savepoint named = c.setSavepoint("named_sp");
            s.execute("INSERT INTO jc_batch VALUES (5003, 'kept')");
            c.releaseSavepoint(named);
            Savepoint failing = c.setSavepoint("failing");
            try {
                s.execute("INSERT INTO jc_batch VALUES (5001, 'duplicate')");
                System.out.println("duplicate: no error");
            } catch (SQLException e) {
                System.out.println("duplicate: " + e.getSQLState());
                c.rollback(failing);
            }
            s.execute("INSERT INTO jc_batch VALUES (5004, 'after')");
            c.commit();
            try (ResultSet rs = s.executeQuery("SELECT id, name FROM jc_batch WHERE id > 5000 ORDER BY id")) {
                while (rs.next()) {
                    System.out.println(rs.getInt(1) + " " + rs.getString(2));
                }
            }
            c.commit();
        } finally {
            c.setAutoCommit(true);
        }
    }

    static void generatedKeys(Connection c) throws SQLException {
        try (Statement s = c.createStatement()) {
            s.execute("CREATE TABLE jc_keys (id serial PRIMARY KEY, name text, made timestamp DEFAULT '2024-01-02 03:04:05')");
            s.executeUpdate("INSERT INTO jc_keys (name) VALUES ('stmt')", Statement.RETURN_GENERATED_KEYS);
            dump(s.getGeneratedKeys());
        }
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO jc_keys (name) VALUES (?)", new String[] {"id"})) {
            ps.setString(1, "by column");
            System.out.println("updated " + ps.executeUpdate());
            dump(ps.getGeneratedKeys());
        }
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO jc_keys (name) VALUES (?)",
                Statement.RETURN_GENERATED_KEYS)) {
            for (String n : new String[] {"b1", "b2", "b3"}) {
                ps.setString(1, n);
                ps.addBatch();
            }
            System.out.println("batch " + Arrays.toString(ps.executeBatch()));
            dump(ps.getGeneratedKeys());
        }
        try (PreparedStatement ps = c.prepareStatement("UPDATE jc_keys SET name = name || '!' WHERE id <= ?",
                new String[] {"id", "name"})) {
            ps.setInt(1, 2);
            System.out.println("updated " + ps.executeUpdate());
            dump(ps.getGeneratedKeys());
        }
    }

    static void errors(Connection c) throws SQLException {
        String[] bad = {
            "SELECT nope FROM jc_parent",
            "SELECT * FROM jc_missing",
            "INSERT INTO jc_parent (code) VALUES (NULL)",
            "INSERT INTO jc_child (parent_id, qty) VALUES (424242, 1)",
        };
        try (Statement s = c.createStatement()) {
            for (String sql : bad) {
                try {
                    s.execute(sql);
                    System.out.println("no error: " + sql);
                } catch (SQLException e) {
                    org.postgresql.util.ServerErrorMessage m =
                            e instanceof org.postgresql.util.PSQLException
                                    ? ((org.postgresql.util.PSQLException) e).getServerErrorMessage()
                                    : null;
                    System.out.println(e.getSQLState() + " " + e.getMessage().lines().findFirst().orElse("")
                            + (m == null ? "" : " position=" + m.getPosition() + " table=" + m.getTable()
                                    + " column=" + m.getColumn() + " constraint=" + m.getConstraint()));
                }
            }
        }
    }
}
