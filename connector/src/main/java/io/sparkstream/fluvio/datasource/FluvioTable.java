package io.sparkstream.fluvio.datasource;

import java.util.EnumSet;
import java.util.Set;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/** A topic (or topics) as a Spark table: batch, micro-batch, real-time and continuous reads. */
final class FluvioTable implements SupportsRead {
  private final StructType schema;

  FluvioTable(StructType schema) {
    this.schema = schema;
  }

  @Override
  public String name() {
    return "fluvio";
  }

  // Deprecated in favour of columns(), whose default Spark derives from this.
  @Override
  @SuppressWarnings("deprecation")
  public StructType schema() {
    return schema;
  }

  @Override
  public Set<TableCapability> capabilities() {
    return EnumSet.of(
        TableCapability.BATCH_READ, TableCapability.MICRO_BATCH_READ, TableCapability.CONTINUOUS_READ);
  }

  @Override
  public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
    return new FluvioScanBuilder(schema, options);
  }
}
