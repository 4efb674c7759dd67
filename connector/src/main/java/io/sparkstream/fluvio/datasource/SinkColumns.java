package io.sparkstream.fluvio.datasource;

import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampType;

/**
 * Which DataFrame columns a write maps to record fields, checked once on the driver:
 * {@code sink_columns} of {@code datasource/sink_schema.py}, with its rules and messages.
 *
 * <p>{@code value} (binary or string) is required; {@code key}, {@code topic}, {@code
 * partition}, {@code timestamp} and {@code headers} are optional; {@code offset} and
 * {@code timestampType} (only a read of a topic has them) are ignored, and so is {@code
 * partition} in such a read unless {@code preservePartitions=true}, and {@code topic}
 * when the option is set. Each field holds the column's ordinal, -1 when unused.
 *
 * @param value ordinal of {@code value}
 * @param key ordinal of {@code key}
 * @param topic ordinal of {@code topic}
 * @param partition ordinal of {@code partition}
 * @param timestamp ordinal of {@code timestamp}
 * @param headers ordinal of {@code headers}
 * @param valueIsString whether {@code value} is a string column
 * @param keyIsString whether {@code key} is a string column
 * @param partitionType the {@code partition} column's type name ({@code int}, {@code
 *     bigint} or {@code smallint}), or null
 * @param typed a write to a typed topic: its user columns (then {@code value} is -1); null
 *     for records
 */
public record SinkColumns(
    int value,
    int key,
    int topic,
    int partition,
    int timestamp,
    int headers,
    boolean valueIsString,
    boolean keyIsString,
    String partitionType,
    TypedSink typed)
    implements Serializable {

  static final List<String> SINK = List.of("key", "value", "topic", "partition", "timestamp", "headers");
  static final List<String> SOURCE = List.of("offset", "timestampType");

  private static final String NO_VALUE_TOPIC_OPTION =
      "the DataFrame needs a 'value' column (binary or string): the topic is untyped (only "
          + "a typed topic takes other columns; option 'mergeSchema' types an empty one)";
  private static final String NO_VALUE_ROUTED =
      "the DataFrame needs a 'value' column (binary or string): rows routed by a 'topic' "
          + "column are untyped records; to write a typed topic's columns, name it with the "
          + "'topic' option";

  /**
   * Why untyped records cannot go to a typed topic, and what to do instead ({@code
   * typed_topic_refused} of {@code datasource/sink_schema.py}).
   *
   * @param topic the typed topic
   * @param columns its user columns
   * @param routed the rows were routed by the {@code topic} column (else the option named
   *     the topic and the DataFrame has a {@code value} column)
   * @return the message
   */
  static String typedTopicRefused(String topic, List<String> columns, boolean routed) {
    String what = "topic %s is typed (columns %s)".formatted(ReaderOptions.pyRepr(topic), String.join(", ", columns));
    if (routed) {
      return what
          + ": rows routed by the 'topic' column are untyped records (key, value); write a "
          + "DataFrame of its columns to it alone with the 'topic' option, or route records "
          + "to untyped topics only";
    }
    return what + ": write a DataFrame of its columns, not 'value' (a 'value' column makes untyped records)";
  }

  /**
   * Check a DataFrame schema for writing to topics.
   *
   * @param schema the DataFrame's schema
   * @param topicOption whether the {@code topic} option is set
   * @param preservePartitions the {@code preservePartitions} option, null when not given
   * @return the columns used
   * @throws FluvioException {@code SINK_SCHEMA}: a missing {@code value}, an unknown
   *     column, a wrong type, no topic, or {@code preservePartitions=true} without a
   *     {@code partition} column
   */
  public static SinkColumns of(StructType schema, boolean topicOption, Boolean preservePartitions) {
    List<String> names = List.of(schema.fieldNames());
    if (!names.contains("value")) { // before the other columns: they may be a typed topic's
      throw error(topicOption ? NO_VALUE_TOPIC_OPTION : NO_VALUE_ROUTED);
    }
    List<String> unknown = new ArrayList<>();
    for (String n : names) {
      if (!SINK.contains(n) && !SOURCE.contains(n)) {
        unknown.add(n);
      }
    }
    if (!unknown.isEmpty()) {
      throw error(
          "cannot write column(s) %s to a topic; the fluvio sink takes %s and ignores %s "
                  .formatted(String.join(", ", unknown), String.join(", ", SINK), String.join(", ", SOURCE))
              + "(select or rename columns first)");
    }
    if (Boolean.TRUE.equals(preservePartitions) && !names.contains("partition")) {
      throw error("option 'preservePartitions' is true but the DataFrame has no 'partition' column");
    }
    if (!topicOption && !names.contains("topic")) {
      throw error("set the 'topic' option or give the DataFrame a 'topic' column");
    }
    boolean readOfTopic = names.stream().anyMatch(SOURCE::contains);
    boolean preserve = preservePartitions == null ? !readOfTopic : preservePartitions;
    Map<String, Boolean> used =
        Map.of(
            "value", true,
            "key", names.contains("key"),
            "topic", names.contains("topic") && !topicOption,
            "partition", names.contains("partition") && preserve,
            "timestamp", names.contains("timestamp"),
            "headers", names.contains("headers"));
    for (StructField f : schema.fields()) {
      if (!used.getOrDefault(f.name(), false)) {
        continue;
      }
      String expected = check(f.name(), f.dataType());
      if (expected != null) {
        throw error("column '%s' must be %s, got %s".formatted(f.name(), expected, f.dataType().simpleString()));
      }
    }
    int partition = used.get("partition") ? schema.fieldIndex("partition") : -1;
    return new SinkColumns(
        schema.fieldIndex("value"),
        used.get("key") ? schema.fieldIndex("key") : -1,
        used.get("topic") ? schema.fieldIndex("topic") : -1,
        partition,
        used.get("timestamp") ? schema.fieldIndex("timestamp") : -1,
        used.get("headers") ? schema.fieldIndex("headers") : -1,
        schema.apply("value").dataType() instanceof StringType,
        names.contains("key") && schema.apply("key").dataType() instanceof StringType,
        partition < 0 ? null : schema.fields()[partition].dataType().simpleString(),
        null);
  }

  /**
   * Check a DataFrame written to a typed topic ({@code _WriterBase} of {@code
   * datasource/writer.py}): its user columns against the topic's ({@link TypedSink}), then
   * its record columns as {@link #of} checks them.
   *
   * @param schema the DataFrame's schema
   * @param topicSchema the topic's schema
   * @param topic the topic (the {@code topic} option)
   * @param preservePartitions the {@code preservePartitions} option, null when not given
   * @return the columns used, ordinals into {@code schema}
   * @throws FluvioException {@code SCHEMA_MISMATCH} for the user columns, {@code
   *     SINK_SCHEMA} for the record columns
   */
  public static SinkColumns typed(
      StructType schema, io.sparkstream.fluvio.records.TopicSchema topicSchema, String topic,
      Boolean preservePartitions) {
    TypedSink typed = TypedSink.check(schema, topicSchema, topic);
    SinkColumns records = of(TypedSink.recordColumns(schema), true, preservePartitions);
    List<String> names = List.of(schema.fieldNames());
    java.util.function.Function<String, Integer> at = n -> names.indexOf(n);
    return new SinkColumns(
        -1,
        records.key() >= 0 ? at.apply("key") : -1,
        -1,
        records.partition() >= 0 ? at.apply("partition") : -1,
        records.timestamp() >= 0 ? at.apply("timestamp") : -1,
        records.headers() >= 0 ? at.apply("headers") : -1,
        false,
        records.keyIsString(),
        records.partitionType(),
        typed);
  }

  /** What the column must be, or null when its type is right. */
  private static String check(String name, DataType dt) {
    return switch (name) {
      case "key", "value" -> bytesLike(dt) ? null : "binary or string";
      case "topic" -> dt instanceof StringType ? null : "string";
      case "partition" ->
          dt instanceof IntegerType || dt instanceof LongType || dt instanceof ShortType ? null : "int";
      case "timestamp" -> dt instanceof TimestampType ? null : "timestamp";
      case "headers" -> headersOk(dt) ? null : "array<struct<key: string, value: binary>>";
      default -> null;
    };
  }

  private static boolean bytesLike(DataType dt) {
    return dt instanceof BinaryType || dt instanceof StringType;
  }

  private static boolean headersOk(DataType dt) {
    if (!(dt instanceof ArrayType a) || !(a.elementType() instanceof StructType s)) {
      return false;
    }
    List<String> fields = List.of(s.fieldNames());
    return fields.size() == 2
        && fields.contains("key")
        && fields.contains("value")
        && s.apply("key").dataType() instanceof StringType
        && bytesLike(s.apply("value").dataType());
  }

  private static FluvioException error(String message) {
    return new FluvioException(ErrorCode.SINK_SCHEMA, message);
  }
}
