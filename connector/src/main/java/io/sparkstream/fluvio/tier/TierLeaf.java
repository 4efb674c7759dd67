package io.sparkstream.fluvio.tier;

import io.sparkstream.fluvio.errors.FluvioException;
import java.nio.ByteBuffer;
import org.apache.arrow.vector.BaseFixedWidthVector;
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
import org.apache.arrow.vector.VariableWidthFieldVector;
import org.apache.arrow.vector.types.DateUnit;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.parquet.column.ColumnDescriptor;
import org.apache.parquet.column.ColumnReader;
import org.apache.parquet.schema.LogicalTypeAnnotation;
import org.apache.parquet.schema.LogicalTypeAnnotation.DecimalLogicalTypeAnnotation;
import org.apache.parquet.schema.LogicalTypeAnnotation.IntLogicalTypeAnnotation;
import org.apache.parquet.schema.LogicalTypeAnnotation.TimestampLogicalTypeAnnotation;
import org.apache.parquet.schema.MessageType;
import org.apache.parquet.schema.PrimitiveType;
import org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName;
import org.apache.parquet.schema.Type;

/**
 * One Parquet leaf of a typed topic's tier file (a top-level column, a list's element or a
 * struct's child) and the Arrow type it is read into, value by value (the type of the
 * topic's schema, so {@code FrameColumns} serves it as it serves an SPU frame's column).
 * {@link TierColumn} walks the levels around it; this class knows the values.
 *
 * <p>The mapping is pyarrow's ({@code pq.write_table} with its defaults): signed integers
 * as {@code INT32} (8 and 16 bits annotated) or {@code INT64}, floats as {@code FLOAT} or
 * {@code DOUBLE}, {@code bool} as {@code BOOLEAN}, strings and binaries (large ones too)
 * as {@code BINARY} (strings annotated), {@code date32} as {@code INT32 (Date)},
 * timestamps as {@code INT64 (Timestamp)} in the file's unit (seconds are written as
 * milliseconds) converted to the column's, {@code decimal128} as a big-endian {@code
 * FIXED_LEN_BYTE_ARRAY} (or {@code INT32}/{@code INT64}) annotated with the same precision
 * and scale. A leaf of another type is a {@code CORRUPT_FRAME}, as Python's {@code widen}
 * refuses it.
 */
final class TierLeaf {
  /** How values go from the leaf to the vector. */
  private enum Kind {
    BOOL, INT, LONG, FLOAT, DOUBLE, BYTES, DATE, TIMESTAMP, DECIMAL_BYTES, DECIMAL_LONG
  }

  final ColumnDescriptor descriptor;
  private final Kind kind;
  private final long multiply;
  private final long divide;

  private TierLeaf(ColumnDescriptor descriptor, Kind kind, long multiply, long divide) {
    this.descriptor = descriptor;
    this.kind = kind;
    this.multiply = multiply;
    this.divide = divide;
  }

  /**
   * The leaf at {@code path} of the file {@code url} whose Parquet schema is {@code schema}
   * (which holds a field at that path), read into the Arrow type {@code t}.
   *
   * @param name the user column it belongs to (for messages)
   * @param typeName the column's type as pyarrow prints it (for messages)
   * @throws FluvioException {@code DATA_SOURCE_OPTION}: a type the tier reader does not
   *     read; {@code CORRUPT_FRAME}: the file's leaf is not what pyarrow writes for the type
   */
  static TierLeaf of(String url, MessageType schema, String[] path, ArrowType t, String name, String typeName) {
    Type held = schema.getType(path);
    if (!held.isPrimitive() || held.getRepetition() == Type.Repetition.REPEATED) {
      throw TierColumn.mismatch(url, name, held.toString(), typeName);
    }
    PrimitiveType p = held.asPrimitiveType();
    PrimitiveTypeName physical = p.getPrimitiveTypeName();
    LogicalTypeAnnotation logical = p.getLogicalTypeAnnotation();
    ColumnDescriptor d = schema.getColumnDescription(path);
    Kind kind = null;
    long multiply = 1;
    long divide = 1;
    if (t instanceof ArrowType.Bool) {
      kind = physical == PrimitiveTypeName.BOOLEAN && logical == null ? Kind.BOOL : null;
    } else if (t instanceof ArrowType.Int i && i.getIsSigned()) {
      boolean annotated = logical instanceof IntLogicalTypeAnnotation a
          && a.isSigned() && a.getBitWidth() == i.getBitWidth();
      boolean plain = logical == null && i.getBitWidth() >= 32;
      if (annotated || plain) {
        kind = i.getBitWidth() == 64
            ? (physical == PrimitiveTypeName.INT64 ? Kind.LONG : null)
            : (physical == PrimitiveTypeName.INT32 ? Kind.INT : null);
      }
    } else if (t instanceof ArrowType.FloatingPoint f && f.getPrecision() != FloatingPointPrecision.HALF) {
      if (logical == null && f.getPrecision() == FloatingPointPrecision.SINGLE
          && physical == PrimitiveTypeName.FLOAT) {
        kind = Kind.FLOAT;
      } else if (logical == null && physical == PrimitiveTypeName.DOUBLE) {
        kind = f.getPrecision() == FloatingPointPrecision.DOUBLE ? Kind.DOUBLE : null;
      }
    } else if (t instanceof ArrowType.Utf8 || t instanceof ArrowType.LargeUtf8) {
      boolean string = logical instanceof LogicalTypeAnnotation.StringLogicalTypeAnnotation;
      kind = physical == PrimitiveTypeName.BINARY && string ? Kind.BYTES : null;
    } else if (t instanceof ArrowType.Binary || t instanceof ArrowType.LargeBinary) {
      kind = physical == PrimitiveTypeName.BINARY && logical == null ? Kind.BYTES : null;
    } else if (t instanceof ArrowType.Date date && date.getUnit() == DateUnit.DAY) {
      boolean dated = logical instanceof LogicalTypeAnnotation.DateLogicalTypeAnnotation;
      kind = physical == PrimitiveTypeName.INT32 && dated ? Kind.DATE : null;
    } else if (t instanceof ArrowType.Timestamp ts) {
      if (physical == PrimitiveTypeName.INT64 && logical instanceof TimestampLogicalTypeAnnotation stored) {
        long file = perSecond(stored.getUnit());
        long column = perSecond(ts.getUnit());
        multiply = Math.max(1, column / file);
        divide = Math.max(1, file / column);
        kind = Kind.TIMESTAMP;
      }
    } else if (t instanceof ArrowType.Decimal dec && dec.getBitWidth() == 128) {
      if (logical instanceof DecimalLogicalTypeAnnotation a
          && a.getPrecision() == dec.getPrecision() && a.getScale() == dec.getScale()) {
        kind = switch (physical) {
          case FIXED_LEN_BYTE_ARRAY, BINARY -> Kind.DECIMAL_BYTES;
          case INT32, INT64 -> Kind.DECIMAL_LONG;
          default -> null;
        };
      }
    } else {
      // what the typed read refuses when it is planned (unsigned integers, ...) never
      // gets here; anything else the tier reader does not know is refused the same way
      throw TierColumn.unread(name, typeName);
    }
    if (kind == null) {
      throw TierColumn.mismatch(url, name, p.toString(), typeName);
    }
    return new TierLeaf(d, kind, multiply, divide);
  }

  /** Whether the current value of {@code column} is there (not null at this leaf). */
  boolean defined(ColumnReader column) {
    return column.getCurrentDefinitionLevel() == descriptor.getMaxDefinitionLevel();
  }

  /**
   * The current value of {@code column} into slot {@code i} of {@code out}, or null there
   * when it is not defined; null {@code out}: skip it. Does not consume the level.
   */
  void put(ColumnReader column, int i, FieldVector out) {
    if (!defined(column)) {
      if (out instanceof BaseFixedWidthVector fixed) {
        fixed.setNull(i); // a variable-width vector fills the hole at its next value
      }
    } else if (out == null) {
      column.skip();
    } else {
      value(column, i, out);
    }
  }

  private void value(ColumnReader column, int i, FieldVector out) {
    switch (kind) {
      case BOOL -> ((BitVector) out).setSafe(i, column.getBoolean() ? 1 : 0);
      case INT -> {
        int v = column.getInteger();
        if (out instanceof TinyIntVector tiny) {
          tiny.setSafe(i, (byte) v);
        } else if (out instanceof SmallIntVector small) {
          small.setSafe(i, (short) v);
        } else {
          ((IntVector) out).setSafe(i, v);
        }
      }
      case LONG -> ((BigIntVector) out).setSafe(i, column.getLong());
      case FLOAT -> ((Float4Vector) out).setSafe(i, column.getFloat());
      case DOUBLE -> ((Float8Vector) out).setSafe(i, column.getDouble());
      case BYTES -> {
        ByteBuffer bytes = column.getBinary().toByteBuffer();
        ((VariableWidthFieldVector) out).setSafe(i, bytes, bytes.position(), bytes.remaining());
      }
      case DATE -> ((DateDayVector) out).setSafe(i, column.getInteger());
      case TIMESTAMP -> ((TimeStampVector) out).setSafe(i, column.getLong() * multiply / divide);
      case DECIMAL_BYTES -> ((DecimalVector) out).setBigEndianSafe(i, column.getBinary().getBytesUnsafe());
      case DECIMAL_LONG -> ((DecimalVector) out).setSafe(i,
          descriptor.getPrimitiveType().getPrimitiveTypeName() == PrimitiveTypeName.INT32
              ? column.getInteger() : column.getLong());
      default -> throw new IllegalStateException(kind.toString());
    }
  }

  private static long perSecond(LogicalTypeAnnotation.TimeUnit unit) {
    return switch (unit) {
      case MILLIS -> 1_000L;
      case MICROS -> 1_000_000L;
      case NANOS -> 1_000_000_000L;
    };
  }

  private static long perSecond(org.apache.arrow.vector.types.TimeUnit unit) {
    return switch (unit) {
      case SECOND -> 1L;
      case MILLISECOND -> 1_000L;
      case MICROSECOND -> 1_000_000L;
      case NANOSECOND -> 1_000_000_000L;
    };
  }
}
