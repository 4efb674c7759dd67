package io.sparkstream.fluvio.datasource;

import io.sparkstream.fluvio.client.Endpoint;
import io.sparkstream.fluvio.client.LeaderClient;
import io.sparkstream.fluvio.client.Metadata;
import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import io.sparkstream.fluvio.records.TopicSchema;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.channels.Channels;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import org.apache.arrow.vector.ipc.WriteChannel;
import org.apache.arrow.vector.ipc.message.MessageSerializer;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.ArrowUtils;

/**
 * {@code mergeSchema}: a write sets its topic's schema from the DataFrame's user columns,
 * once on the driver before any task writes ({@code datasource/merge_schema.py}, with its
 * rules and messages).
 *
 * <p>The user columns are the DataFrame's but {@link TypedSink#EXTRA} ({@code key},
 * {@code timestamp}, {@code headers}, {@code partition}, {@code topic}, {@code offset}), in
 * the Arrow types Spark's {@code ArrowUtils} gives (UTC timestamps), as PySpark's {@code
 * to_arrow_schema} does. An empty untyped topic gets them as version 1 (one that holds
 * records, as its leaders say, is refused); a typed topic gets the ones it lacks appended
 * as its next version through {@code UPDATE_TOPIC_SCHEMA}, after its existing columns are
 * checked as {@link TypedSink} checks them. The SC applies the evolution rules, so their
 * messages are the admin API's.
 */
final class SchemaMerge {
  private SchemaMerge() {}

  /**
   * Set {@code topic}'s schema from the DataFrame.
   *
   * @param endpoint the SC
   * @param topic the topic (the {@code topic} option)
   * @param df the DataFrame's schema
   * @return the topic's schema after
   * @throws FluvioException {@code SINK_SCHEMA} (a {@code value} column), {@code
   *     SCHEMA_MISMATCH} (an existing column of another type; a nested new column, which the
   *     JVM writer cannot write), {@code INVALID_CONFIG} (an untyped topic that holds
   *     records; the evolution rules), {@code UNKNOWN_TOPIC}
   */
  static TopicSchema merge(Endpoint endpoint, String topic, StructType df, String token) {
    StructType user = userColumns(df);
    try (LeaderClient client = new LeaderClient(endpoint, FluvioScan.TIMEOUT_MS, token)) {
      Metadata meta = client.metadata(topic);
      TopicSchema current = meta.schema();
      List<Field> fields = new ArrayList<>();
      List<StructField> kept = new ArrayList<>();
      if (current != null) {
        fields.addAll(current.userSchema().getFields());
        for (StructField f : df.fields()) {
          if (current.names().contains(f.name())) {
            kept.add(f);
          }
        }
        TypedSink.check(new StructType(kept.toArray(new StructField[0])), current, topic);
      }
      Schema arrow = ArrowUtils.toArrowSchema(user, "UTC", true, false);
      boolean added = false;
      for (Field f : arrow.getFields()) {
        if (current == null || !current.names().contains(f.getName())) {
          fields.add(f);
          added = true;
          scalarOnly(user.apply(f.getName()), topic);
        }
      }
      if (current != null && !added) {
        return current;
      }
      if (current == null && holdsRecords(client, meta)) {
        throw new FluvioException(ErrorCode.INVALID_CONFIG, untypedWithRecords(topic));
      }
      return client.updateTopicSchema(topic, encode(new Schema(fields)));
    }
  }

  /**
   * The DataFrame's user columns ({@code user_columns}).
   *
   * @throws FluvioException {@code SINK_SCHEMA}: a {@code value} column
   */
  static StructType userColumns(StructType df) {
    if (List.of(df.fieldNames()).contains("value")) {
      throw new FluvioException(
          ErrorCode.SINK_SCHEMA,
          "option 'mergeSchema' makes the DataFrame's columns the topic's; a 'value' column "
              + "writes untyped records: drop the option, or write columns, not 'value'");
    }
    List<StructField> out = new ArrayList<>();
    for (StructField f : df.fields()) {
      if (!TypedSink.EXTRA.contains(f.name())) {
        out.add(f);
      }
    }
    return new StructType(out.toArray(new StructField[0]));
  }

  /** {@code untyped_with_records} of {@code spark_stream/models/topic_schema.py}. */
  static String untypedWithRecords(String topic) {
    return ("topic %s is untyped and holds records: a schema would make them unreadable (they "
            + "have no columns); write typed rows to a new topic created with a schema, or to an "
            + "empty one")
        .formatted(ReaderOptions.pyRepr(topic));
  }

  private static void scalarOnly(StructField f, String topic) {
    if (f.dataType() instanceof ArrayType || f.dataType() instanceof StructType || f.dataType() instanceof MapType) {
      throw new FluvioException(
          ErrorCode.SCHEMA_MISMATCH,
          "column %s (%s) of typed topic %s cannot be written by the JVM connector (it writes scalar columns Spark has a type for)"
              .formatted(ReaderOptions.pyRepr(f.name()), f.dataType().simpleString(), ReaderOptions.pyRepr(topic)));
    }
  }

  /** Whether any partition ever took a record, as its leader says now. */
  private static boolean holdsRecords(LeaderClient client, Metadata meta) {
    for (int p = 0; p < meta.partitionCount(); p++) {
      if (client.fetchOffsets(meta.topic(), p, null).leo() > 0) {
        return true;
      }
    }
    return false;
  }

  /** The schema as {@code TopicSchema.arrow} holds it: its IPC message, base64. */
  private static String encode(Schema schema) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (WriteChannel out = new WriteChannel(Channels.newChannel(bytes))) {
      MessageSerializer.serialize(out, schema);
    } catch (IOException e) {
      throw new FluvioException(ErrorCode.INVALID_REQUEST, "cannot encode the schema: " + e.getMessage());
    }
    return Base64.getEncoder().encodeToString(bytes.toByteArray());
  }
}
