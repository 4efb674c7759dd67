package io.sparkstream.fluvio.datasource;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.SerializableConfiguration;

/**
 * Makes the readers of micro-batch and real-time tasks (serialized: plain values): the
 * columnar batch reader for ranges, row readers for unbounded partitions. Real-time mode wraps only {@code createReader}, so these partitions report no columnar
 * support; the micro-batch ranges of other partitions go to the columnar batch reader.
 * The session's Hadoop configuration travels along for the tier, as in {@link
 * FluvioReaderFactory}.
 */
final class FluvioStreamReaderFactory implements PartitionReaderFactory {
  private static final long serialVersionUID = 2L;

  private final ReaderOptions options;
  private final StructType readSchema;
  private final SerializableConfiguration hadoopConf;
  private final FluvioReaderFactory columnar;

  FluvioStreamReaderFactory(ReaderOptions options, StructType readSchema, SerializableConfiguration hadoopConf) {
    this.options = options;
    this.readSchema = readSchema;
    this.hadoopConf = hadoopConf;
    this.columnar = new FluvioReaderFactory(options, readSchema, hadoopConf);
  }

  @Override
  public boolean supportColumnarReads(InputPartition partition) {
    return !(partition instanceof FluvioStreamPartition);
  }

  @Override
  public PartitionReader<ColumnarBatch> createColumnarReader(InputPartition partition) {
    return columnar.createColumnarReader(partition);
  }

  @Override
  public PartitionReader<InternalRow> createReader(InputPartition partition) {
    return new FluvioRowStreamReader(options, readSchema, (FluvioStreamPartition) partition, hadoopConf.value());
  }
}
