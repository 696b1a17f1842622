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
