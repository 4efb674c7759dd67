package io.sparkstream.fluvio.tier;

import io.sparkstream.fluvio.errors.ErrorCode;
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
import org.apache.arrow.vector.types.pojo.Field;
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
 * One user column of a typed topic's tier file: the Parquet leaf pyarrow writes for the
 * column's Arrow type, read value by value straight into an Arrow vector of that type (the
 * type of the topic's schema, so {@code FrameColumns} serves it as it serves an SPU
 * frame's column). No row objects: a batch's values go from the page to the vector.
 *
 * <p>The mapping is pyarrow's ({@code pq.write_table} with its defaults): signed integers
 * as {@code INT32} (8 and 16 bits annotated) or {@code INT64}, floats as {@code FLOAT} or
 * {@code DOUBLE}, {@code bool} as {@code BOOLEAN}, strings and binaries (large ones too)
 * as {@code BINARY} (strings annotated), {@code date32} as {@code INT32 (Date)},
 * timestamps as {@code INT64 (Timestamp)} in the file's unit (seconds are written as
 * milliseconds) converted to the column's, {@code decimal128} as a big-endian {@code
 * FIXED_LEN_BYTE_ARRAY} (or {@code INT32}/{@code INT64}) annotated with the same precision
 * and scale. Nested columns (lists, maps, structs) are not read from the tier: refused
 * with {@code DATA_SOURCE_OPTION}, naming the column. A leaf of another type is a {@code
 * CORRUPT_FRAME}, as Python's {@code widen} refuses it.
 */
final class TierColumn {
  /** How values go from the leaf to the vector. */
  private enum Kind {
    BOOL, INT, LONG, FLOAT, DOUBLE, BYTES, DATE, TIMESTAMP, DECIMAL_BYTES, DECIMAL_LONG
  }

  final Field field;
  final ColumnDescriptor descriptor;
  private final Kind kind;
  private final long multiply;
  private final long divide;

  private TierColumn(Field field, ColumnDescriptor descriptor, Kind kind, long multiply, long divide) {
    this.field = field;
    this.descriptor = descriptor;
    this.kind = kind;
    this.multiply = multiply;
    this.divide = divide;
  }

  /**
   * The column {@code field} of the file {@code url} whose Parquet schema is {@code schema}
   * (which holds a top-level field of that name).
   *
   * @param typeName the column's type as pyarrow prints it (for messages)
   * @throws FluvioException {@code DATA_SOURCE_OPTION}: a nested column; {@code
   *     CORRUPT_FRAME}: the file's column is not what pyarrow writes for the type
   */
  static TierColumn of(String url, MessageType schema, Field field, String typeName) {
    String name = field.getName();
    ArrowType t = field.getType();
    if (t instanceof ArrowType.List || t instanceof ArrowType.Map || t instanceof ArrowType.Struct
        || t instanceof ArrowType.LargeList || t instanceof ArrowType.FixedSizeList) {
      throw new FluvioException(
          ErrorCode.DATA_SOURCE_OPTION,
          ("column %s (%s) of a typed topic is not read from the tier by the JVM connector: "
                  + "read it through the Python source (a session without the connector jar)")
              .formatted(repr(name), typeName));
    }
    Type held = schema.getType(name);
    if (!held.isPrimitive() || held.getRepetition() == Type.Repetition.REPEATED) {
      throw mismatch(url, name, held.toString(), typeName);
    }
    PrimitiveType p = held.asPrimitiveType();
    PrimitiveTypeName physical = p.getPrimitiveTypeName();
    LogicalTypeAnnotation logical = p.getLogicalTypeAnnotation();
    ColumnDescriptor d = schema.getColumnDescription(new String[] {name});
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
      throw new FluvioException(
          ErrorCode.DATA_SOURCE_OPTION,
          "column %s (%s) of a typed topic is not read from the tier by the JVM connector"
              .formatted(repr(name), typeName));
    }
    if (kind == null) {
      throw mismatch(url, name, p.toString(), typeName);
    }
    return new TierColumn(field, d, kind, multiply, divide);
  }

  /**
   * Read {@code n} values of {@code column} into {@code out} from row 0 (its capacity
   * allocated), nulls where the definition level says so; null {@code out}: skip them.
   */
  void read(ColumnReader column, int n, FieldVector out) {
    int defined = descriptor.getMaxDefinitionLevel();
    for (int i = 0; i < n; i++) {
      if (column.getCurrentDefinitionLevel() < defined) {
        if (out instanceof BaseFixedWidthVector fixed) {
          fixed.setNull(i); // a variable-width vector fills the hole at its next value
        }
      } else if (out == null) {
        column.skip();
      } else {
        put(column, i, out);
      }
      column.consume();
    }
    if (out != null) {
      out.setValueCount(n);
    }
  }

  private void put(ColumnReader column, int i, FieldVector out) {
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

  private static FluvioException mismatch(String url, String name, String held, String typeName) {
    return new FluvioException(
        ErrorCode.CORRUPT_FRAME, "%s: column %s is %s, expected %s".formatted(url, repr(name), held, typeName));
  }

  /** Python's repr of a column name, as the typed read's messages print it. */
  private static String repr(String name) {
    return name.contains("'") && !name.contains("\"") ? "\"" + name + "\"" : "'" + name + "'";
  }
}
