package io.sparkstream.fluvio.datasource;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.apache.spark.util.SerializableConfiguration;

/**
 * Makes the columnar readers of a batch read on the executors (serialized: plain values,
 * and the session's Hadoop configuration for the tier, taken on the driver).
 */
final class FluvioReaderFactory implements PartitionReaderFactory {
  private static final long serialVersionUID = 2L;

  private final ReaderOptions options;
  private final StructType readSchema;
  private final SerializableConfiguration hadoopConf;

  FluvioReaderFactory(ReaderOptions options, StructType readSchema, SerializableConfiguration hadoopConf) {
    this.options = options;
    this.readSchema = readSchema;
    this.hadoopConf = hadoopConf;
  }

  @Override
  public boolean supportColumnarReads(InputPartition partition) {
    return true;
  }

  @Override
  public PartitionReader<ColumnarBatch> createColumnarReader(InputPartition partition) {
    return new FluvioColumnarReader(options, readSchema, (FluvioInputPartition) partition, hadoopConf.value());
  }

  @Override
  public PartitionReader<InternalRow> createReader(InputPartition partition) {
    // Spark asks for columnar readers only, since supportColumnarReads is always true.
    throw new UnsupportedOperationException("the fluvio batch read is columnar");
  }
}
