package io.sparkstream.fluvio.datasource;

import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarArray;
import org.apache.spark.sql.vectorized.ColumnarMap;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * Base of the columns that are not plain {@code ArrowColumnVector}s ({@link ValueColumn},
 * and typed topics' {@link NullColumn}, {@link TimestampColumn}): every getter fails until a
 * subclass gives it, so
 * a column only answers for the type it holds. It owns no memory ({@link #close()} does
 * nothing: the frame's root owns any vector it reads).
 */
abstract class ComputedColumn extends ColumnVector {
  ComputedColumn(DataType type) {
    super(type);
  }

  @Override
  public void close() {}

  @Override
  public boolean getBoolean(int rowId) {
    throw unsupported();
  }

  @Override
  public byte getByte(int rowId) {
    throw unsupported();
  }

  @Override
  public short getShort(int rowId) {
    throw unsupported();
  }

  @Override
  public int getInt(int rowId) {
    throw unsupported();
  }

  @Override
  public long getLong(int rowId) {
    throw unsupported();
  }

  @Override
  public float getFloat(int rowId) {
    throw unsupported();
  }

  @Override
  public double getDouble(int rowId) {
    throw unsupported();
  }

  @Override
  public ColumnarArray getArray(int rowId) {
    throw unsupported();
  }

  @Override
  public ColumnarMap getMap(int ordinal) {
    throw unsupported();
  }

  @Override
  public Decimal getDecimal(int rowId, int precision, int scale) {
    throw unsupported();
  }

  @Override
  public UTF8String getUTF8String(int rowId) {
    throw unsupported();
  }

  @Override
  public byte[] getBinary(int rowId) {
    throw unsupported();
  }

  @Override
  public ColumnVector getChild(int ordinal) {
    throw unsupported();
  }

  private UnsupportedOperationException unsupported() {
    return new UnsupportedOperationException("a " + dataType() + " column");
  }
}
