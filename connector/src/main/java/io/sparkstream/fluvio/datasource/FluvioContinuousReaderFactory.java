package io.sparkstream.fluvio.datasource;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.streaming.ContinuousPartitionReader;
import org.apache.spark.sql.connector.read.streaming.ContinuousPartitionReaderFactory;
import org.apache.spark.sql.types.StructType;

/** Makes the row readers of continuous tasks (serialized: plain values). */
final class FluvioContinuousReaderFactory implements ContinuousPartitionReaderFactory {
  private static final long serialVersionUID = 1L;

  private final ReaderOptions options;
  private final StructType readSchema;

  FluvioContinuousReaderFactory(ReaderOptions options, StructType readSchema) {
    this.options = options;
    this.readSchema = readSchema;
  }

  @Override
  public ContinuousPartitionReader<InternalRow> createReader(InputPartition partition) {
    return new FluvioRowStreamReader(options, readSchema, (FluvioStreamPartition) partition);
  }
}
