package io.sparkstream.fluvio.datasource;

import io.sparkstream.fluvio.client.Endpoint;
import io.sparkstream.fluvio.client.LeaderClient;
import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import io.sparkstream.fluvio.records.TopicSchema;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.vector.types.DateUnit;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.TimeUnit;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * The DataFrame schema of a typed topic read ({@code typed_spark_schema} of {@code
 * datasource/typed.py}): the user columns in Spark's types, then {@code key}, {@code
 * topic}, {@code partition}, {@code offset}, {@code timestamp}, {@code headers} (no {@code
 * value}, no {@code timestampType}; {@code headers} whatever {@code includeHeaders} says).
 *
 * <p>Arrow types map to Spark's as PySpark's {@code from_arrow_type} maps them (a
 * timestamp without a zone is {@code timestamp_ntz}), limited to what the readers serve
 * without copying: every type Spark's {@code ArrowColumnVector} reads, plus top-level
 * timestamps of any unit ({@link TimestampColumn}). Anything else (unsigned integers, as
 * in Python; and on the JVM only, fixed-size binary, large lists, nested non-microsecond
 * timestamps) is refused when the read is planned, naming the column.
 */
public final class TypedSchema {
  private TypedSchema() {}

  /** Columns a typed read adds after the user columns, in order. */
  static final List<String> SYSTEM = List.of("key", "topic", "partition", "offset", "timestamp", "headers");

  /**
   * The read schema of a typed topic.
   *
   * @param schema the topic's schema
   * @return user columns, then the system columns
   * @throws FluvioException {@code DATA_SOURCE_OPTION}: a column Spark has no type for
   */
  public static StructType of(TopicSchema schema) {
    List<StructField> fields = new ArrayList<>();
    List<Field> user = schema.userSchema().getFields();
    for (int i = 0; i < user.size(); i++) {
      Field f = user.get(i);
      DataType type = sparkType(f, true);
      if (type == null) {
        throw new FluvioException(
            ErrorCode.DATA_SOURCE_OPTION,
            "column %s (%s) has no Spark type: the JVM connector cannot read %s"
                .formatted(ReaderOptions.pyRepr(f.getName()), schema.typeName(i), schema.typeName(i)));
      }
      fields.add(new StructField(f.getName(), type, f.isNullable(), Metadata.empty()));
    }
    StructType untyped = ReadSchema.of(true);
    for (String name : SYSTEM) {
      fields.add(untyped.apply(name));
    }
    return new StructType(fields.toArray(new StructField[0]));
  }

  /**
   * The schema of the typed topic a read or write names, null for untyped or unknown
   * topics (which fail later, naming the option): {@code typed_user_schema} of {@code
   * datasource/typed.py}. Asked of the SC on the driver.
   *
   * @param endpoint the SC
   * @param topics the topics named
   * @param token the client token; null: none
   * @return the typed topic's schema, or null
   * @throws FluvioException {@code DATA_SOURCE_OPTION}: a typed topic named together with
   *     other topics (a DataFrame has one schema)
   */
  static TopicSchema lookUp(Endpoint endpoint, List<String> topics, String token) {
    if (topics.isEmpty()) {
      return null;
    }
    try (LeaderClient client = new LeaderClient(endpoint, FluvioScan.TIMEOUT_MS, token)) {
      for (String topic : topics) {
        TopicSchema schema;
        try {
          schema = client.metadata(topic).schema();
        } catch (FluvioException e) {
          if (e.code() == ErrorCode.UNKNOWN_TOPIC) {
            continue;
          }
          throw e;
        }
        if (schema == null) {
          continue;
        }
        if (topics.size() > 1) {
          throw new FluvioException(
              ErrorCode.DATA_SOURCE_OPTION,
              "topic %s is typed: read it alone with the 'topic' option, not with %s"
                  .formatted(ReaderOptions.pyRepr(topic),
                      String.join(", ", topics.stream().filter(t -> !t.equals(topic)).toList())));
        }
        return schema;
      }
    }
    return null;
  }

  /**
   * Spark's type of an Arrow field, or null when the readers cannot serve it.
   *
   * @param field the field
   * @param top whether it is a column (timestamps of any unit) or nested in one (only
   *     microseconds, which {@code ArrowColumnVector} reads)
   */
  static DataType sparkType(Field field, boolean top) {
    ArrowType t = field.getType();
    if (t instanceof ArrowType.Bool) {
      return DataTypes.BooleanType;
    }
    if (t instanceof ArrowType.Int i) {
      if (!i.getIsSigned()) {
        return null;
      }
      return switch (i.getBitWidth()) {
        case 8 -> DataTypes.ByteType;
        case 16 -> DataTypes.ShortType;
        case 32 -> DataTypes.IntegerType;
        case 64 -> DataTypes.LongType;
        default -> null;
      };
    }
    if (t instanceof ArrowType.FloatingPoint f) {
      return f.getPrecision() == FloatingPointPrecision.SINGLE ? DataTypes.FloatType
          : f.getPrecision() == FloatingPointPrecision.DOUBLE ? DataTypes.DoubleType : null;
    }
    if (t instanceof ArrowType.Decimal d) {
      return d.getBitWidth() == 128 && d.getPrecision() <= 38
          ? DataTypes.createDecimalType(d.getPrecision(), d.getScale()) : null;
    }
    if (t instanceof ArrowType.Utf8 || t instanceof ArrowType.LargeUtf8) {
      return DataTypes.StringType;
    }
    if (t instanceof ArrowType.Binary || t instanceof ArrowType.LargeBinary) {
      return DataTypes.BinaryType;
    }
    if (t instanceof ArrowType.Date d) {
      return d.getUnit() == DateUnit.DAY ? DataTypes.DateType : null;
    }
    if (t instanceof ArrowType.Timestamp ts) {
      if (!top && ts.getUnit() != TimeUnit.MICROSECOND) {
        return null;
      }
      return ts.getTimezone() == null ? DataTypes.TimestampNTZType : DataTypes.TimestampType;
    }
    if (t instanceof ArrowType.List) {
      Field item = field.getChildren().get(0);
      DataType element = sparkType(item, false);
      return element == null ? null : new ArrayType(element, item.isNullable());
    }
    if (t instanceof ArrowType.Map) {
      List<Field> entry = field.getChildren().get(0).getChildren();
      DataType key = sparkType(entry.get(0), false);
      DataType value = sparkType(entry.get(1), false);
      return key == null || value == null ? null : new MapType(key, value, entry.get(1).isNullable());
    }
    if (t instanceof ArrowType.Struct) {
      List<StructField> children = new ArrayList<>();
      for (Field c : field.getChildren()) {
        DataType type = sparkType(c, false);
        if (type == null) {
          return null;
        }
        children.add(new StructField(c.getName(), type, c.isNullable(), Metadata.empty()));
      }
      return new StructType(children.toArray(new StructField[0]));
    }
    return null;
  }
}
