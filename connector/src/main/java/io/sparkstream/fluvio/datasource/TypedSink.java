package io.sparkstream.fluvio.datasource;

import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import io.sparkstream.fluvio.records.TopicSchema;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * A DataFrame written to a typed topic: its user columns checked on the driver before any
 * task runs ({@code typed_sink_columns} of {@code datasource/typed.py}, with its
 * messages), then read from each row as the values of the topic's latest schema version.
 *
 * <p>The record columns ({@code key}, {@code timestamp}, {@code headers}, {@code
 * partition}) follow the untyped sink's rules ({@link SinkColumns}); the user columns
 * stand in for {@code value}. The JVM writer takes scalar user columns (every type of the
 * JSON schema description); a topic with a nested column is refused naming it.
 *
 * @param schema the topic's schema (the latest version is written)
 * @param ordinals each user column's ordinal in the DataFrame, -1 when it has none (a
 *     missing nullable column, written as null)
 * @param types each user column's Spark type
 * @param nullable whether each user column may be null
 */
public record TypedSink(TopicSchema schema, int[] ordinals, DataType[] types, boolean[] nullable)
    implements Serializable {

  /** Columns a written DataFrame may have besides the user columns ({@code _SINK_EXTRA}). */
  static final Set<String> EXTRA = Set.of("key", "timestamp", "headers", "partition", "topic", "offset");

  /**
   * Check a DataFrame for a typed topic.
   *
   * @param df the DataFrame's schema
   * @param schema the topic's schema
   * @param topic the topic
   * @return the mapping of the user columns
   * @throws FluvioException {@code SCHEMA_MISMATCH}: a column the topic does not have, a
   *     user column of another Spark type than the topic's, a non-nullable one missing, or
   *     a column the JVM writer cannot write
   */
  public static TypedSink check(StructType df, TopicSchema schema, String topic) {
    List<String> user = schema.names();
    for (String name : df.fieldNames()) {
      if (!user.contains(name) && !EXTRA.contains(name)) {
        throw mismatch(
            "column %s is not in typed topic %s (columns: %s)"
                .formatted(repr(name), repr(topic), String.join(", ", user)));
      }
    }
    List<Field> fields = schema.userSchema().getFields();
    int[] ordinals = new int[fields.size()];
    DataType[] types = new DataType[fields.size()];
    boolean[] nullable = new boolean[fields.size()];
    List<String> given = List.of(df.fieldNames());
    for (int i = 0; i < fields.size(); i++) {
      Field field = fields.get(i);
      DataType expected = TypedSchema.sparkType(field, true);
      if (expected == null || !scalar(field.getType())) {
        throw mismatch(
            "column %s (%s) of typed topic %s cannot be written by the JVM connector (it writes "
                    .formatted(repr(field.getName()), schema.typeName(i), repr(topic))
                + "scalar columns Spark has a type for)");
      }
      types[i] = expected;
      nullable[i] = field.isNullable();
      ordinals[i] = given.indexOf(field.getName());
      if (ordinals[i] < 0) {
        if (!field.isNullable()) {
          throw mismatch(
              "column %s (%s, not null) of typed topic %s is missing"
                  .formatted(repr(field.getName()), schema.typeName(i), repr(topic)));
        }
        continue;
      }
      DataType actual = df.fields()[ordinals[i]].dataType();
      if (!actual.equals(expected)) {
        throw mismatch(
            "column %s is %s, typed topic %s says %s (%s)"
                .formatted(repr(field.getName()), actual.simpleString(), repr(topic), schema.typeName(i),
                    expected.simpleString()));
      }
    }
    return new TypedSink(schema, ordinals, types, nullable);
  }

  /**
   * The untyped sink's view of a typed write's DataFrame: its record columns, plus a
   * stand-in {@code value}, so {@link SinkColumns} checks them with its rules and messages.
   */
  static StructType recordColumns(StructType df) {
    List<StructField> fields = new ArrayList<>();
    for (StructField f : df.fields()) {
      if (SinkColumns.SINK.contains(f.name()) || SinkColumns.SOURCE.contains(f.name())) {
        fields.add(f);
      }
    }
    fields.add(new StructField("value", DataTypes.BinaryType, false, Metadata.empty()));
    return new StructType(fields.toArray(new StructField[0]));
  }

  /**
   * The user column values of one row, as {@code FrameEncoder} takes them: {@code
   * Boolean}, {@code Byte}..{@code Long}, {@code Float}, {@code Double}, {@code
   * BigDecimal}, {@code byte[]} (UTF-8 strings and binary), {@code Integer} days for dates,
   * {@code Long} microseconds for timestamps; null for a null or missing column.
   *
   * @throws FluvioException {@code SCHEMA_MISMATCH}: a null in a column the topic says is
   *     not null
   */
  Object[] values(InternalRow row) {
    Object[] out = new Object[ordinals.length];
    for (int i = 0; i < ordinals.length; i++) {
      int at = ordinals[i];
      if (at < 0 || row.isNullAt(at)) {
        if (!nullable[i]) {
          throw mismatch(
              "column %s has 1 nulls, the topic's schema version %d says not null"
                  .formatted(repr(schema.names().get(i)), schema.version()));
        }
        continue;
      }
      DataType t = types[i];
      out[i] =
          t instanceof BooleanType ? (Object) row.getBoolean(at)
              : t instanceof ByteType ? (Object) row.getByte(at)
              : t instanceof ShortType ? (Object) row.getShort(at)
              : t instanceof IntegerType || t instanceof DateType ? (Object) row.getInt(at)
              : t instanceof LongType ? (Object) row.getLong(at)
              : t instanceof FloatType ? (Object) row.getFloat(at)
              : t instanceof DoubleType ? (Object) row.getDouble(at)
              : t instanceof DecimalType d ? row.getDecimal(at, d.precision(), d.scale()).toJavaBigDecimal()
              : t instanceof StringType ? row.getUTF8String(at).getBytes()
              : t instanceof BinaryType ? row.getBinary(at)
              : (Object) row.getLong(at); // timestamp, timestamp_ntz: microseconds
    }
    return out;
  }

  private static boolean scalar(ArrowType t) {
    return !(t instanceof ArrowType.List || t instanceof ArrowType.Struct || t instanceof ArrowType.Map);
  }

  private static String repr(String s) {
    return ReaderOptions.pyRepr(s);
  }

  private static FluvioException mismatch(String message) {
    return new FluvioException(ErrorCode.SCHEMA_MISMATCH, message);
  }
}
