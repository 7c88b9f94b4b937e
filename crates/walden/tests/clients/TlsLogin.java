// pgjdbc over TLS with sslmode=verify-full (the server's certificate
// checked against a CA and its name) and SCRAM:
//   java -cp OUT:/usr/share/java/postgresql.jar TlsLogin HOST PORT CA USER PASSWORD
// Prints the session's role.

import java.sql.*;
import java.util.Properties;

public class TlsLogin {
    public static void main(String[] args) throws Exception {
        String url = "jdbc:postgresql://" + args[0] + ":" + args[1] + "/walden";
        Properties p = new Properties();
        p.setProperty("user", args[3]);
        p.setProperty("password", args[4]);
        p.setProperty("sslmode", "verify-full");
        p.setProperty("sslrootcert", args[2]);
        p.setProperty("connectTimeout", "10");
        p.setProperty("socketTimeout", "30");
        try (Connection c = DriverManager.getConnection(url, p);
             ResultSet r = c.createStatement().executeQuery("SELECT current_user")) {
            r.next();
            System.out.println(r.getString(1));
        }
    }
}
