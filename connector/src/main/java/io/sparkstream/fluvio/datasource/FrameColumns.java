package io.sparkstream.fluvio.datasource;

import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.TimeStampVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.spark.sql.types.DataType;
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
 *
 * <p>A typed topic's user columns are stored columns too, found by name: a column the
 * frame lacks (added by a later schema version) is a {@link NullColumn}, a timestamp
 * stored in another unit than microseconds a {@link TimestampColumn}. Each user column's
 * type is checked against the read schema once per frame, never per record.
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
            case "key", "value", "timestamp", "headers" -> stored(fields[i].name(), root, topic);
            case "topic" -> ValueColumn.constant(topic);
            case "partition" -> ValueColumn.constant(partition);
            case "offset" -> ValueColumn.offsets(firstOffset);
            case "timestampType" -> ValueColumn.constant(ReadSchema.TIMESTAMP_TYPE_CREATE);
            default -> userColumn(fields[i], root, firstOffset);
          };
    }
    return new ColumnarBatch(vectors, root.getRowCount());
  }

  /**
   * A record column ({@code key}, {@code value}, {@code timestamp}, {@code headers}).
   *
   * @throws FluvioException {@code DATA_SOURCE_OPTION}: an untyped read (a pattern or a
   *     list of topics) met a typed topic's frame, which has no {@code value}
   */
  private static ColumnVector stored(String name, VectorSchemaRoot root, String topic) {
    FieldVector vector = root.getVector(name);
    if (vector == null) {
      throw new FluvioException(
          ErrorCode.DATA_SOURCE_OPTION,
          ("topic %s is typed (its records have columns, not %s): read it alone with the "
                  + "'topic' option, not through 'topics' or 'topicPattern'")
              .formatted(ReaderOptions.pyRepr(topic), ReaderOptions.pyRepr(name)));
    }
    return new ArrowColumnVector(vector);
  }

  /**
   * A typed topic's user column over the frame's vector of that name.
   *
   * @throws FluvioException {@code CORRUPT_FRAME}: the frame's column has another type
   *     than the topic's schema says
   */
  private static ColumnVector userColumn(StructField field, VectorSchemaRoot root, long firstOffset) {
    FieldVector vector = root.getVector(field.name());
    if (vector == null) {
      return new NullColumn(field.dataType(), root.getRowCount());
    }
    DataType stored = TypedSchema.sparkType(vector.getField(), true);
    if (!field.dataType().equals(stored)) {
      throw new FluvioException(
          ErrorCode.CORRUPT_FRAME,
          "payload at offset %d is not a record batch of the schema: column %s is %s, expected %s"
              .formatted(firstOffset, ReaderOptions.pyRepr(field.name()), vector.getField().getType(),
                  field.dataType().simpleString()));
    }
    if (vector instanceof TimeStampVector ts && TimestampColumn.needed(ts)) {
      return new TimestampColumn(field.dataType(), ts);
    }
    return new ArrowColumnVector(vector);
  }
}
