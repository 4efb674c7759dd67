package io.sparkstream.fluvio.records;

import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.Serializable;
import java.nio.channels.Channels;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import org.apache.arrow.vector.ipc.ReadChannel;
import org.apache.arrow.vector.ipc.message.MessageSerializer;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * A typed topic's schema as its spec carries it ({@code spec.topicSchema}): {@code
 * TopicSchema} of {@code spark_stream/models/topic_schema.py}.
 *
 * <p>The Arrow IPC schema message ({@code arrow}, base64) is the one source of truth; the
 * {@code columns} list gives each column's type as pyarrow spells it (for messages that
 * name types as Python's do); {@code history} holds the column count of each version.
 * Evolution only appends nullable columns, so version {@code v}'s user columns are the
 * first {@code history[v - 1]} columns of the latest schema. A typed frame stores the user
 * columns of its version followed by {@code key}, {@code timestamp}, {@code headers} as
 * {@link RecordSchema} has them ({@link #storageSchema}).
 *
 * <p>Serializable (it travels to the executors of a write): only the spec's plain values
 * are kept; the Arrow schema is decoded again where it is used.
 */
public final class TopicSchema implements Serializable {
  private static final long serialVersionUID = 1L;

  /** The system columns stored after the user columns of every typed frame. */
  public static final List<String> SYSTEM = List.of("key", "timestamp", "headers");

  private final int version;
  private final String arrow;
  private final List<String> typeNames;
  private final List<Integer> history;
  private transient Schema schema;

  private TopicSchema(int version, String arrow, List<String> typeNames, List<Integer> history) {
    this.version = version;
    this.arrow = arrow;
    this.typeNames = List.copyOf(typeNames);
    this.history = List.copyOf(history);
  }

  /**
   * Read a topic spec's {@code topicSchema} map.
   *
   * @param spec the map ({@code version}, {@code arrow}, {@code columns}, {@code history})
   * @return the schema
   * @throws FluvioException {@code INVALID_REQUEST}: a field is missing or malformed
   */
  public static TopicSchema fromSpec(Map<?, ?> spec) {
    try {
      int version = ((Number) spec.get("version")).intValue();
      String arrow = (String) spec.get("arrow");
      List<String> types = new ArrayList<>();
      for (Object c : (List<?>) spec.get("columns")) {
        types.add(((Map<?, ?>) c).get("type").toString());
      }
      List<Integer> history = new ArrayList<>();
      for (Object h : (List<?>) spec.get("history")) {
        history.add(((Number) h).intValue());
      }
      TopicSchema out = new TopicSchema(version, arrow, types, history);
      if (history.size() != version || out.userSchema().getFields().size() != types.size()) {
        throw new IllegalArgumentException("history or columns disagree with the schema");
      }
      return out;
    } catch (ClassCastException | NullPointerException | IllegalArgumentException e) {
      throw new FluvioException(
          ErrorCode.INVALID_REQUEST, "topic spec: malformed topicSchema " + spec + ": " + e.getMessage());
    }
  }

  /** The latest version. */
  public int version() {
    return version;
  }

  /** The latest user columns. */
  public Schema userSchema() {
    if (schema == null) {
      schema = decode(arrow);
    }
    return schema;
  }

  /**
   * The user columns of {@code version}.
   *
   * @param version 1 to {@link #version()}
   * @return its columns
   * @throws FluvioException {@code SCHEMA_MISMATCH}: a version this schema never had
   */
  public Schema userSchema(int version) {
    if (version < 1 || version > this.version) {
      throw new FluvioException(
          ErrorCode.SCHEMA_MISMATCH, "schema version %d is not 1..%d".formatted(version, this.version));
    }
    return new Schema(userSchema().getFields().subList(0, history.get(version - 1)));
  }

  /** The schema of a typed frame of {@code version}: its user columns, then the system ones. */
  public Schema storageSchema(int version) {
    List<Field> fields = new ArrayList<>(userSchema(version).getFields());
    for (String name : SYSTEM) {
      fields.add(RecordSchema.SCHEMA.findField(name));
    }
    return new Schema(fields);
  }

  /** The latest user column names, in order. */
  public List<String> names() {
    return userSchema().getFields().stream().map(Field::getName).toList();
  }

  /** Column {@code i}'s type as pyarrow prints it ({@code int64}, {@code timestamp[us, tz=UTC]}). */
  public String typeName(int i) {
    return typeNames.get(i);
  }

  /**
   * The Arrow schema of a base64 IPC schema message.
   *
   * @throws FluvioException {@code INVALID_REQUEST}: not one
   */
  static Schema decode(String base64) {
    try (ReadChannel in =
        new ReadChannel(Channels.newChannel(new ByteArrayInputStream(Base64.getDecoder().decode(base64))))) {
      Schema out = MessageSerializer.deserializeSchema(in);
      if (out == null) {
        throw new IOException("no schema message");
      }
      return out;
    } catch (IOException | RuntimeException e) {
      throw new FluvioException(
          ErrorCode.INVALID_REQUEST, "arrow is not a base64 Arrow IPC schema: " + e.getMessage());
    }
  }
}
