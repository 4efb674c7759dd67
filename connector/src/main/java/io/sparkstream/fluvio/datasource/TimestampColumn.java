package io.sparkstream.fluvio.datasource;

import org.apache.arrow.vector.TimeStampVector;
import org.apache.arrow.vector.types.TimeUnit;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.spark.sql.types.DataType;

/**
 * A typed topic's timestamp column stored in seconds, milliseconds or nanoseconds, read as
 * Spark's microseconds (Spark's {@code ArrowColumnVector} reads only microsecond vectors;
 * the Python source casts such columns to {@code timestamp[us]}). Nanoseconds below a
 * microsecond are dropped (rounded toward negative infinity), where Python's safe cast
 * fails the read. The stored vector is read in place.
 */
final class TimestampColumn extends ComputedColumn {
  private final TimeStampVector vector;
  private final long multiply;
  private final long divide;

  TimestampColumn(DataType type, TimeStampVector vector) {
    super(type);
    this.vector = vector;
    TimeUnit unit = ((ArrowType.Timestamp) vector.getField().getType()).getUnit();
    this.multiply = switch (unit) {
      case SECOND -> 1_000_000L;
      case MILLISECOND -> 1_000L;
      default -> 1L;
    };
    this.divide = unit == TimeUnit.NANOSECOND ? 1_000L : 1L;
  }

  /** Whether {@code vector} needs this column (its unit is not microseconds). */
  static boolean needed(TimeStampVector vector) {
    return ((ArrowType.Timestamp) vector.getField().getType()).getUnit() != TimeUnit.MICROSECOND;
  }

  @Override
  public boolean hasNull() {
    return vector.getNullCount() > 0;
  }

  @Override
  public int numNulls() {
    return vector.getNullCount();
  }

  @Override
  public boolean isNullAt(int rowId) {
    return vector.isNull(rowId);
  }

  @Override
  public long getLong(int rowId) {
    long raw = vector.get(rowId);
    return divide == 1 ? raw * multiply : Math.floorDiv(raw, divide);
  }
}
