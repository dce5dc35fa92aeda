package icekeeper.interop;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.spark.SparkCatalog;
import org.apache.spark.sql.SparkSession;

/**
 * The interop driver: one Spark session (local[N], Iceberg's Spark runtime and
 * SQL extensions) and Iceberg Java's core API, driven by icekeeper's Go tests
 * over stdin and stdout, one JSON request per line.
 *
 * <p>Requests: {"op":"catalog","name":..,"props":{..}} registers a Spark
 * catalog (its Iceberg properties, as spark.sql.catalog.NAME.KEY);
 * {"op":"sql","sql":..} runs one statement and answers its rows, each as
 * Spark's JSON of the row; {"op":"eqdelete",..} writes equality delete
 * files with Iceberg Java's API and commits them (see EqualityDeletes), its
 * rows given or read by a Spark SQL query.
 *
 * <p>Each answer is one line on stdout that starts with {@link #ANSWER}:
 * {"ok":true,"rows":[..]} or {"ok":false,"error":..}. Spark's own logging
 * goes to stderr. A failed request never stops the driver.
 */
public final class Driver {
  static final String ANSWER = "ICEKEEPER-INTEROP ";
  private static final ObjectMapper JSON = new ObjectMapper();

  private final SparkSession spark;

  private Driver(SparkSession spark) {
    this.spark = spark;
  }

  public static void main(String[] args) throws Exception {
    // Spark and its libraries print to stdout now and then; answers go to
    // the real stdout, everything else to stderr.
    PrintStream answers = new PrintStream(System.out, true, StandardCharsets.UTF_8);
    System.setOut(System.err);
    // -Dicekeeper.spark.cores=N: local[N] and N partitions (default 2).
    String cores = System.getProperty("icekeeper.spark.cores", "2");
    SparkSession spark =
        SparkSession.builder()
            .master("local[" + cores + "]")
            .appName("icekeeper-interop")
            .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
            .config("spark.ui.enabled", "false")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.sql.shuffle.partitions", cores)
            .config("spark.default.parallelism", cores)
            .config("spark.sql.session.timeZone", "UTC")
            .getOrCreate();
    spark.sparkContext().setLogLevel("WARN");
    Driver d = new Driver(spark);
    answers.println(ANSWER + "{\"ok\":true,\"ready\":true,\"spark\":\"" + spark.version() + "\"}");
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    for (String line; (line = in.readLine()) != null; ) {
      if (line.isBlank()) {
        continue;
      }
      ObjectNode out = JSON.createObjectNode();
      try {
        JsonNode req = JSON.readTree(line);
        out.set("rows", d.handle(req));
        out.put("ok", true);
      } catch (Throwable e) {
        out.put("ok", false);
        out.put("error", describe(e));
      }
      answers.println(ANSWER + JSON.writeValueAsString(out));
    }
    spark.stop();
  }

  private JsonNode handle(JsonNode req) throws Exception {
    String op = req.path("op").asText();
    switch (op) {
      case "catalog":
        return registerCatalog(req.path("name").asText(), req.path("props"));
      case "sql":
        return sql(req.path("sql").asText());
      case "eqdelete":
        return EqualityDeletes.write(spark, icebergCatalog(req.path("catalog").asText()), req);
      default:
        throw new IllegalArgumentException("unknown op " + op);
    }
  }

  private JsonNode registerCatalog(String name, JsonNode props) {
    String prefix = "spark.sql.catalog." + name;
    spark.conf().set(prefix, SparkCatalog.class.getName());
    // icekeeper commits behind Spark's back: never serve a cached table.
    spark.conf().set(prefix + ".cache-enabled", "false");
    for (Iterator<Map.Entry<String, JsonNode>> it = props.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      spark.conf().set(prefix + "." + e.getKey(), e.getValue().asText());
    }
    return JSON.createArrayNode();
  }

  Catalog icebergCatalog(String name) {
    return ((SparkCatalog) spark.sessionState().catalogManager().catalog(name)).icebergCatalog();
  }

  private JsonNode sql(String statement) throws Exception {
    List<String> rows = spark.sql(statement).toJSON().collectAsList();
    ArrayNode out = JSON.createArrayNode();
    for (String r : rows) {
      out.add(JSON.readTree(r));
    }
    return out;
  }

  private static String describe(Throwable e) {
    StringBuilder b = new StringBuilder();
    for (Throwable c = e; c != null && b.length() < 4000; c = c.getCause()) {
      if (b.length() > 0) {
        b.append(" <- ");
      }
      b.append(c.getClass().getSimpleName()).append(": ").append(c.getMessage());
    }
    return b.toString();
  }
}
