// Drives `sluice serve` with the PostgreSQL JDBC driver (Debian's
// libpostgresql-jdbc-java) from source with a JDK (the launcher compiles it):
// java -cp postgresql.jar JdbcCheck.java PORT
// Exits non-zero on the first wrong answer.

import java.math.BigDecimal;
import java.sql.*;

public class JdbcCheck {
    static void check(String what, Object expected, Object got) {
        if (expected == null ? got != null : !expected.equals(got)) {
            System.err.printf("clients: jdbc: %s%n  expected: %s%n  got:      %s%n", what, expected, got);
            System.exit(1);
        }
        System.out.println("ok: jdbc: " + what);
    }

    public static void main(String[] args) throws Exception {
        String url = "jdbc:postgresql://127.0.0.1:" + args[0] + "/sluice?user=test";
        try (Connection c = DriverManager.getConnection(url)) {
            check("connects (server_version " + c.getMetaData().getDatabaseProductVersion() + ")",
                    "PostgreSQL", c.getMetaData().getDatabaseProductName());
            // DatabaseMetaData: the driver's own catalog queries (joins of
            // pg_class, pg_namespace, pg_attribute, pg_type, pg_index,
            // row_number() OVER ...), run by the engine over the catalog.
            DatabaseMetaData m = c.getMetaData();
            try (ResultSet r = m.getTables(null, null, "%", new String[] {"TABLE"})) {
                StringBuilder b = new StringBuilder();
                while (r.next()) {
                    b.append(r.getString("TABLE_SCHEM")).append('.').append(r.getString("TABLE_NAME"))
                            .append(' ').append(r.getString("TABLE_TYPE")).append(';');
                }
                check("getTables", "public.ints TABLE;public.people TABLE;", b.toString());
            }
            try (ResultSet r = m.getColumns(null, null, "people", "%")) {
                StringBuilder b = new StringBuilder();
                while (r.next()) {
                    b.append(r.getInt("ORDINAL_POSITION")).append(' ').append(r.getString("COLUMN_NAME"))
                            .append(' ').append(r.getInt("DATA_TYPE")).append(' ').append(r.getString("TYPE_NAME"))
                            .append(' ').append(r.getInt("COLUMN_SIZE")).append(' ').append(r.getInt("DECIMAL_DIGITS"))
                            .append(' ').append(r.getString("IS_NULLABLE")).append(';');
                }
                check("getColumns", "1 id -5 int8 19 0 NO;2 name 12 text 2147483647 0 YES;"
                        + "3 price 2 numeric 10 2 YES;4 d 91 date 13 0 YES;"
                        + "5 ts 93 timestamp 29 6 YES;6 ok -7 bool 1 0 YES;", b.toString());
            }
            try (ResultSet r = m.getPrimaryKeys(null, null, "people")) {
                check("getPrimaryKeys: a row", true, r.next());
                check("getPrimaryKeys: the column", "id", r.getString("COLUMN_NAME"));
                check("getPrimaryKeys: its place", 1, r.getInt("KEY_SEQ"));
                check("getPrimaryKeys: the name", "people_pkey", r.getString("PK_NAME"));
                check("getPrimaryKeys: one row", false, r.next());
            }
            try (ResultSet r = m.getPrimaryKeys(null, null, "ints")) {
                check("getPrimaryKeys of a table without a key", false, r.next());
            }
            try (ResultSet r = m.getIndexInfo(null, null, "people", false, false)) {
                check("getIndexInfo: a row", true, r.next());
                check("getIndexInfo: the index", "people_pkey", r.getString("INDEX_NAME"));
                check("getIndexInfo: the column", "id", r.getString("COLUMN_NAME"));
                check("getIndexInfo: unique", false, r.getBoolean("NON_UNIQUE"));
                check("getIndexInfo: its place", 1, r.getInt("ORDINAL_POSITION"));
                check("getIndexInfo: ascending", "A", r.getString("ASC_OR_DESC"));
                check("getIndexInfo: one row", false, r.next());
            }
            try (ResultSet r = m.getIndexInfo(null, null, "ints", true, false)) {
                check("getIndexInfo of a table without an index", false, r.next());
            }
            try (ResultSet r = m.getSchemas()) {
                StringBuilder b = new StringBuilder();
                while (r.next()) b.append(r.getString("TABLE_SCHEM")).append(';');
                check("getSchemas", "information_schema;pg_catalog;public;", b.toString());
            }
            try (ResultSet r = m.getCatalogs()) {
                check("getCatalogs: a row", true, r.next());
                check("getCatalogs", "sluice", r.getString(1));
            }
            try (Statement s = c.createStatement();
                 ResultSet r = s.executeQuery("SELECT * FROM people WHERE id = 1")) {
                check("a row", true, r.next());
                check("bigint", 1L, r.getLong("id"));
                check("text", "ada", r.getString("name"));
                check("numeric keeps its scale", new BigDecimal("12.50"), r.getBigDecimal("price"));
                check("date", Date.valueOf("2024-01-02"), r.getDate("d"));
                check("timestamp", Timestamp.valueOf("2024-01-02 03:04:05.5"), r.getTimestamp("ts"));
                check("boolean", true, r.getBoolean("ok"));
                check("one row", false, r.next());
            }
            try (Statement s = c.createStatement();
                 ResultSet r = s.executeQuery("SELECT name, d FROM people WHERE id = 2")) {
                r.next();
                check("NULL text", null, r.getString(1));
                check("NULL date", null, r.getDate(2));
            }
            // Past prepareThreshold (5) the driver switches to a named
            // server-side statement and binary results.
            try (PreparedStatement p = c.prepareStatement("SELECT name FROM people WHERE id = ?")) {
                for (int i = 0; i < 12; i++) {
                    p.setLong(1, i % 2 == 0 ? 1 : 3);
                    try (ResultSet r = p.executeQuery()) {
                        r.next();
                        check("prepared, run " + (i + 1), i % 2 == 0 ? "ada" : "o'k", r.getString(1));
                    }
                }
            }
            try (PreparedStatement p = c.prepareStatement("SELECT count(*) FROM ints WHERE c1 < ?")) {
                p.setLong(1, Long.MAX_VALUE);
                try (ResultSet r = p.executeQuery()) {
                    r.next();
                    check("an aggregate with a parameter", 100000L, r.getLong(1));
                }
            }
            // A fetch size inside a transaction: the rows come in portions
            // of a suspended portal.
            c.setAutoCommit(false);
            try (Statement s = c.createStatement()) {
                s.setFetchSize(1000);
                long n = 0;
                try (ResultSet r = s.executeQuery("SELECT c1 FROM ints")) {
                    while (r.next()) n++;
                }
                check("rows fetched 1000 at a time", 100000L, n);
            }
            c.commit();
            c.setAutoCommit(true);
            try (Statement s = c.createStatement()) {
                s.executeQuery("SELECT nope FROM people");
                check("an error", "an exception", "none");
            } catch (SQLException e) {
                check("an error's SQLSTATE", "42703", e.getSQLState());
            }
            try (Statement s = c.createStatement(); ResultSet r = s.executeQuery("SELECT 1")) {
                r.next();
                check("the session goes on after an error", 1, r.getInt(1));
            }
        }
    }
}
