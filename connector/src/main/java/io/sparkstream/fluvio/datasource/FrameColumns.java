package io.sparkstream.fluvio.datasource;

import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ArrowColumnVector;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/**
 * The read schema's columns over one decoded frame: the stored columns as {@link
 * ArrowColumnVector}s, the computed ones ({@code topic}, {@code partition}, {@code
 * offset}, {@code timestampType}) as {@link ValueColumn}s. Shared by the columnar reader
 * and the row readers of continuous and real-time streams (which read rows of it).
 */
final class FrameColumns {
  private FrameColumns() {}

  /**
   * A batch over {@code root}.
   *
   * @param schema the read schema (pruned or not)
   * @param root the frame's records, already trimmed to the range
   * @param topic the topic
   * @param partition the partition
   * @param firstOffset the offset of the root's first row
   * @return the batch (its vectors live as long as {@code root})
   */
  static ColumnarBatch of(StructType schema, VectorSchemaRoot root, String topic, int partition, long firstOffset) {
    StructField[] fields = schema.fields();
    ColumnVector[] vectors = new ColumnVector[fields.length];
    for (int i = 0; i < fields.length; i++) {
      vectors[i] =
          switch (fields[i].name()) {
            case "key", "value", "timestamp", "headers" -> new ArrowColumnVector(root.getVector(fields[i].name()));
            case "topic" -> ValueColumn.constant(topic);
            case "partition" -> ValueColumn.constant(partition);
            case "offset" -> ValueColumn.offsets(firstOffset);
            case "timestampType" -> ValueColumn.constant(ReadSchema.TIMESTAMP_TYPE_CREATE);
            default -> throw new IllegalStateException("no column " + fields[i].name());
          };
    }
    return new ColumnarBatch(vectors, root.getRowCount());
  }
}
