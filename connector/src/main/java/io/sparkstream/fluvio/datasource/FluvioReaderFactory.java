package io.sparkstream.fluvio.datasource;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/** Makes the columnar readers of a batch read on the executors (serialized: plain values). */
final class FluvioReaderFactory implements PartitionReaderFactory {
  private static final long serialVersionUID = 1L;

  private final ReaderOptions options;
  private final StructType readSchema;

  FluvioReaderFactory(ReaderOptions options, StructType readSchema) {
    this.options = options;
    this.readSchema = readSchema;
  }

  @Override
  public boolean supportColumnarReads(InputPartition partition) {
    return true;
  }

  @Override
  public PartitionReader<ColumnarBatch> createColumnarReader(InputPartition partition) {
    return new FluvioColumnarReader(options, readSchema, (FluvioInputPartition) partition);
  }

  @Override
  public PartitionReader<InternalRow> createReader(InputPartition partition) {
    // Spark asks for columnar readers only, since supportColumnarReads is always true.
    throw new UnsupportedOperationException("the fluvio batch read is columnar");
  }
}
