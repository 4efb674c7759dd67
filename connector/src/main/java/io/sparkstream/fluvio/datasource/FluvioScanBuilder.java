package io.sparkstream.fluvio.datasource;

import java.util.HashMap;
import java.util.Map;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * Builds the scan: options are parsed here (query start, on the driver), and Spark's
 * column pruning is kept, so a query of {@code value} alone never builds the other
 * columns.
 */
final class FluvioScanBuilder implements ScanBuilder, SupportsPushDownRequiredColumns {
  private final Map<String, String> options;
  private StructType required;

  FluvioScanBuilder(StructType schema, CaseInsensitiveStringMap options) {
    this.required = schema;
    this.options = new HashMap<>(options.asCaseSensitiveMap());
  }

  @Override
  public void pruneColumns(StructType requiredSchema) {
    this.required = requiredSchema;
  }

  @Override
  public Scan build() {
    StructType schema = required;
    return new FluvioReadScan(options, schema, () -> new FluvioScan(ReaderOptions.parseBatch(options), schema));
  }
}
