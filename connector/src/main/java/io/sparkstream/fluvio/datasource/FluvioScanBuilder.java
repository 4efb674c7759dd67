package io.sparkstream.fluvio.datasource;

import java.util.HashMap;
import java.util.Map;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.connector.read.SupportsPushDownV2Filters;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * Builds the scan: options are parsed here (query start, on the driver), and Spark's
 * column pruning is kept, so a query of {@code value} alone never builds the other
 * columns, and predicates on partition, offset and timestamp become the ranges read
 * ({@link RangeFilter}).
 */
final class FluvioScanBuilder
    implements ScanBuilder, SupportsPushDownRequiredColumns, SupportsPushDownV2Filters {
  private final Map<String, String> options;
  private StructType required;
  private RangeFilter.Split pushed = RangeFilter.split(new Predicate[0]);

  FluvioScanBuilder(StructType schema, CaseInsensitiveStringMap options) {
    this.required = schema;
    this.options = new HashMap<>(options.asCaseSensitiveMap());
  }

  @Override
  public void pruneColumns(StructType requiredSchema) {
    this.required = requiredSchema;
  }

  @Override
  public Predicate[] pushPredicates(Predicate[] predicates) {
    pushed = RangeFilter.split(predicates);
    return pushed.residual().toArray(new Predicate[0]);
  }

  @Override
  public Predicate[] pushedPredicates() {
    return pushed.pushed().toArray(new Predicate[0]);
  }

  @Override
  public Scan build() {
    StructType schema = required;
    RangeFilter.Split ranges = pushed;
    return new FluvioReadScan(
        options, schema, ranges, () -> new FluvioScan(ReaderOptions.parseBatch(options), schema, ranges));
  }
}
