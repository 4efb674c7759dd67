package io.sparkstream.fluvio.datasource;

import java.util.EnumSet;
import java.util.Set;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * A topic (or topics) as a Spark table: batch, micro-batch, continuous and real-time
 * reads; batch and streaming writes.
 */
final class FluvioTable implements SupportsRead, SupportsWrite {
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
    // ACCEPT_ANY_SCHEMA: a write's columns are the DataFrame's, checked by SinkColumns
    // (the table's schema is the read schema). TRUNCATE only so that mode("overwrite")
    // reaches the write builder, which refuses it with the Python writer's message.
    return EnumSet.of(
        TableCapability.BATCH_READ,
        TableCapability.MICRO_BATCH_READ,
        TableCapability.CONTINUOUS_READ,
        TableCapability.BATCH_WRITE,
        TableCapability.STREAMING_WRITE,
        TableCapability.TRUNCATE,
        TableCapability.ACCEPT_ANY_SCHEMA);
  }

  @Override
  public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
    return new FluvioScanBuilder(schema, options);
  }

  @Override
  public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
    return new FluvioWriteBuilder(info);
  }
}
