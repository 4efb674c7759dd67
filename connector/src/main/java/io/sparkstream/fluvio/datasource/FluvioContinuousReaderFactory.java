package io.sparkstream.fluvio.datasource;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.streaming.ContinuousPartitionReader;
import org.apache.spark.sql.connector.read.streaming.ContinuousPartitionReaderFactory;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.SerializableConfiguration;

/**
 * Makes the row readers of continuous tasks (serialized: plain values, and the session's
 * Hadoop configuration for the tier, taken on the driver).
 */
final class FluvioContinuousReaderFactory implements ContinuousPartitionReaderFactory {
  private static final long serialVersionUID = 2L;

  private final ReaderOptions options;
  private final StructType readSchema;
  private final SerializableConfiguration hadoopConf;

  FluvioContinuousReaderFactory(ReaderOptions options, StructType readSchema, SerializableConfiguration hadoopConf) {
    this.options = options;
    this.readSchema = readSchema;
    this.hadoopConf = hadoopConf;
  }

  @Override
  public ContinuousPartitionReader<InternalRow> createReader(InputPartition partition) {
    return new FluvioRowStreamReader(options, readSchema, (FluvioStreamPartition) partition, hadoopConf.value());
  }
}
