package io.sparkstream.fluvio.datasource;

import java.util.Map;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The entry point of the JVM connector: Spark finds it by the short name {@code fluvio}
 * through {@code META-INF/services/org.apache.spark.sql.sources.DataSourceRegister} and
 * prefers it to the Python source of the same name whenever this jar is on the classpath.
 *
 * <p>It serves batch reads and streams (see docs/jvm-connector.md); the schema depends on
 * {@code includeHeaders}, and unknown option names fail here, at {@code load()}, as in
 * Python.
 */
public final class FluvioProvider implements TableProvider, DataSourceRegister {

  @Override
  public String shortName() {
    return "fluvio";
  }

  @Override
  public StructType inferSchema(CaseInsensitiveStringMap options) {
    ReaderOptions.checkNames(options);
    String headers = options.getOrDefault("includeHeaders", "false");
    return ReadSchema.of(headers.strip().equalsIgnoreCase("true"));
  }

  @Override
  public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
    return new FluvioTable(schema);
  }
}
