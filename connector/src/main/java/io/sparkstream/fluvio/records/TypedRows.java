package io.sparkstream.fluvio.records;

import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import java.math.BigDecimal;
import java.util.List;
import org.apache.arrow.vector.BaseLargeVariableWidthVector;
import org.apache.arrow.vector.BaseVariableWidthVector;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.DateDayVector;
import org.apache.arrow.vector.DecimalVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.SmallIntVector;
import org.apache.arrow.vector.TimeStampVector;
import org.apache.arrow.vector.TinyIntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.ArrowType;

/**
 * Typed rows into the user-column vectors of a typed frame's root (the writer's side of
 * {@link FrameEncoder}): one setter per column, chosen once per frame from the vector's
 * class. A null value leaves the slot unset (null); so does a column a row lacks.
 */
final class TypedRows {
  private TypedRows() {}

  /** A column's setter: row {@code i} of the vector gets {@code value} (not null). */
  @FunctionalInterface
  private interface Setter {
    void set(int i, Object value);
  }

  /**
   * Fill the user columns of {@code root} (allocated, of {@code schema}'s latest storage
   * schema) from the records' {@code columns}.
   *
   * @throws FluvioException {@code SCHEMA_MISMATCH}: a value that does not fit its column
   */
  static void fill(VectorSchemaRoot root, TopicSchema schema, List<Record> records) {
    int columns = schema.names().size();
    for (int c = 0; c < columns; c++) {
      FieldVector vector = root.getVector(c);
      Setter setter = setter(vector, schema.typeName(c));
      for (int i = 0; i < records.size(); i++) {
        Object[] row = records.get(i).columns();
        if (row == null) {
          throw new FluvioException(
              ErrorCode.SCHEMA_MISMATCH, "an untyped record among the rows of a typed topic's frame");
        }
        if (c < row.length && row[c] != null) {
          setter.set(i, row[c]);
        }
      }
    }
  }

  private static Setter setter(FieldVector vector, String typeName) {
    String name = vector.getField().getName();
    if (vector instanceof BitVector v) {
      return (i, x) -> v.setSafe(i, ((Boolean) x) ? 1 : 0);
    }
    if (vector instanceof TinyIntVector v) {
      return (i, x) -> v.setSafe(i, ((Number) x).byteValue());
    }
    if (vector instanceof SmallIntVector v) {
      return (i, x) -> v.setSafe(i, ((Number) x).shortValue());
    }
    if (vector instanceof IntVector v) {
      return (i, x) -> v.setSafe(i, ((Number) x).intValue());
    }
    if (vector instanceof BigIntVector v) {
      return (i, x) -> v.setSafe(i, ((Number) x).longValue());
    }
    if (vector instanceof Float4Vector v) {
      return (i, x) -> v.setSafe(i, ((Number) x).floatValue());
    }
    if (vector instanceof Float8Vector v) {
      return (i, x) -> v.setSafe(i, ((Number) x).doubleValue());
    }
    if (vector instanceof DateDayVector v) {
      return (i, x) -> v.setSafe(i, ((Number) x).intValue());
    }
    if (vector instanceof DecimalVector v) {
      int scale = v.getScale();
      return (i, x) -> {
        BigDecimal d = (BigDecimal) x;
        try {
          v.setSafe(i, d.setScale(scale));
        } catch (ArithmeticException | UnsupportedOperationException e) {
          throw misfit(name, "decimal " + d, typeName, e.getMessage());
        }
      };
    }
    if (vector instanceof TimeStampVector v) {
      ArrowType.Timestamp type = (ArrowType.Timestamp) v.getField().getType();
      return switch (type.getUnit()) {
        case MICROSECOND -> (i, x) -> v.setSafe(i, (Long) x);
        case NANOSECOND -> (i, x) -> {
          try {
            v.setSafe(i, Math.multiplyExact((Long) x, 1_000L));
          } catch (ArithmeticException e) {
            throw misfit(name, "timestamp[us]", typeName, "out of range");
          }
        };
        case MILLISECOND -> coarser(v, 1_000L, name, typeName);
        case SECOND -> coarser(v, 1_000_000L, name, typeName);
      };
    }
    if (vector instanceof BaseVariableWidthVector v) { // string, binary
      return (i, x) -> v.setSafe(i, (byte[]) x);
    }
    if (vector instanceof BaseLargeVariableWidthVector v) { // large_string, large_binary
      return (i, x) -> v.setSafe(i, (byte[]) x);
    }
    throw new FluvioException(
        ErrorCode.SCHEMA_MISMATCH,
        "column %s (%s): the JVM connector does not write this type".formatted(quoted(name), typeName));
  }

  /** Microseconds into a coarser unit, refusing values that would lose data (as a safe cast). */
  private static Setter coarser(TimeStampVector v, long per, String name, String typeName) {
    return (i, x) -> {
      long us = (Long) x;
      if (us % per != 0) {
        throw misfit(name, "timestamp[us]", typeName, "would lose data: " + us + " us");
      }
      v.setSafe(i, us / per);
    };
  }

  private static FluvioException misfit(String name, String given, String typeName, String why) {
    return new FluvioException(
        ErrorCode.SCHEMA_MISMATCH,
        "column %s (%s) does not fit %s: %s".formatted(quoted(name), given, typeName, why));
  }

  private static String quoted(String name) {
    return "'" + name.replace("\\", "\\\\").replace("'", "\\'") + "'";
  }
}
