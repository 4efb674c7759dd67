package io.sparkstream.fluvio.datasource;

import org.apache.spark.sql.types.DataType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * A column computed rather than stored, a {@link ComputedColumn}: a
 * constant int ({@code partition}, {@code timestampType}), a constant string ({@code
 * topic}) or a run of offsets ({@code base + row}), since frames store none of these per
 * record.
 */
final class ValueColumn extends ComputedColumn {
  private final int intValue;
  private final UTF8String stringValue;
  private final long base;

  private ValueColumn(DataType type, int intValue, UTF8String stringValue, long base) {
    super(type);
    this.intValue = intValue;
    this.stringValue = stringValue;
    this.base = base;
  }

  /** The same int in every row. */
  static ValueColumn constant(int value) {
    return new ValueColumn(org.apache.spark.sql.types.DataTypes.IntegerType, value, null, 0);
  }

  /** The same string in every row. */
  static ValueColumn constant(String value) {
    return new ValueColumn(
        org.apache.spark.sql.types.DataTypes.StringType, 0, UTF8String.fromString(value), 0);
  }

  /** {@code base + row}. */
  static ValueColumn offsets(long base) {
    return new ValueColumn(org.apache.spark.sql.types.DataTypes.LongType, 0, null, base);
  }

  @Override
  public boolean hasNull() {
    return false;
  }

  @Override
  public int numNulls() {
    return 0;
  }

  @Override
  public boolean isNullAt(int rowId) {
    return false;
  }

  @Override
  public int getInt(int rowId) {
    return intValue;
  }

  @Override
  public long getLong(int rowId) {
    return base + rowId;
  }

  @Override
  public UTF8String getUTF8String(int rowId) {
    return stringValue;
  }
}
