package io.sparkstream.fluvio.datasource;

import org.apache.spark.sql.types.DataType;

/**
 * A typed topic's column that a frame does not hold: the column was added (nullable) by a
 * later schema version than the frame was written in, so every row reads it as null
 * ({@code widen} of {@code spark_stream/records.py}). Nothing is allocated per row.
 */
final class NullColumn extends ComputedColumn {
  private final int rows;

  NullColumn(DataType type, int rows) {
    super(type);
    this.rows = rows;
  }

  @Override
  public boolean hasNull() {
    return rows > 0;
  }

  @Override
  public int numNulls() {
    return rows;
  }

  @Override
  public boolean isNullAt(int rowId) {
    return true;
  }
}
